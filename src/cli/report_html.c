/* report_html.c - the growing text buffer `zerg report` writes its page
 * into, and the escaping every inserted string goes through.  A task id is
 * validated, but messages and errors carry whatever a task printed, so
 * nothing reaches the page without zerg_report_escape. */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rbuf_reserve(struct zerg_rbuf *b, size_t n)
{
    if (b->oom)
        return -1;
    if (b->len + n + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64u << 10;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

void zerg_rbuf_put(struct zerg_rbuf *b, const char *s, size_t n)
{
    if (rbuf_reserve(b, n))
        return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void zerg_rbuf_puts(struct zerg_rbuf *b, const char *s)
{
    zerg_rbuf_put(b, s, strlen(s));
}

void zerg_rbuf_printf(struct zerg_rbuf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        zerg_rbuf_put(b, small, (size_t)n);
        return;
    }
    if (rbuf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void zerg_rbuf_close(struct zerg_rbuf *b)
{
    free(b->s);
    *b = (struct zerg_rbuf){0};
}

/* The replacement for byte c, or NULL when c stands for itself. */
static const char *entity(unsigned char c)
{
    switch (c) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '"':
        return "&quot;";
    case '\'':
        return "&#39;";
    case '\t':
    case '\n':
        return NULL;
    default:
        return c < 0x20 || c == 0x7f ? "?" : NULL;
    }
}

size_t zerg_report_escape(const char *s, char *out, size_t size)
{
    size_t need = 0, o = 0;
    int full = size == 0;
    for (; s && *s; s++) {
        const char *e = entity((unsigned char)*s);
        size_t n = e ? strlen(e) : 1;
        if (!full && o + n < size) {
            memcpy(out + o, e ? e : s, n);
            o += n;
        } else {
            full = 1;
        }
        need += n;
    }
    if (size)
        out[o] = '\0';
    return need;
}

void zerg_rbuf_esc(struct zerg_rbuf *b, const char *s)
{
    const char *run = s;
    for (; s && *s; s++) {
        const char *e = entity((unsigned char)*s);
        if (!e)
            continue;
        zerg_rbuf_put(b, run, (size_t)(s - run));
        zerg_rbuf_puts(b, e);
        run = s + 1;
    }
    if (run)
        zerg_rbuf_put(b, run, (size_t)(s - run));
}
