/* text.c - small text helpers (see text.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "zerg/text.h"

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

size_t zerg_edit_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na >= ZERG_EDIT_MAX || nb >= ZERG_EDIT_MAX)
        return SIZE_MAX;
    size_t d[ZERG_EDIT_MAX + 1][ZERG_EDIT_MAX + 1];
    for (size_t x = 0; x <= na; x++)
        d[x][0] = x;
    for (size_t y = 0; y <= nb; y++)
        d[0][y] = y;
    for (size_t x = 1; x <= na; x++) {
        for (size_t y = 1; y <= nb; y++) {
            size_t best = min3(d[x - 1][y - 1] + (a[x - 1] != b[y - 1]),
                               d[x - 1][y] + 1, d[x][y - 1] + 1);
            if (x > 1 && y > 1 && a[x - 1] == b[y - 2] &&
                a[x - 2] == b[y - 1] && d[x - 2][y - 2] + 1 < best)
                best = d[x - 2][y - 2] + 1;
            d[x][y] = best;
        }
    }
    return d[na][nb];
}

void zerg_last_line(const char *text, char *buf, size_t size)
{
    const char *end = text ? text + strlen(text) : NULL;
    buf[0] = '\0';
    if (!end)
        return;
    while (end > text && isspace((unsigned char)end[-1]))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    while (start < end && isspace((unsigned char)*start))
        start++;
    snprintf(buf, size, "%.*s", (int)(end - start), start);
}

void zerg_text_append(char *buf, size_t size, size_t *off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + (*off < size ? *off : size),
                      *off < size ? size - *off : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        *off += (size_t)n;
}

size_t zerg_text_tail_start(const char *text, size_t len, size_t lines)
{
    size_t i = len;
    if (i > 0 && text[i - 1] == '\n')
        i--;
    while (i > 0 && !(text[i - 1] == '\n' && --lines == 0))
        i--;
    return i;
}

void zerg_text_cut(char *dst, size_t size, const char *src, size_t max)
{
    if (size == 0)
        return;
    size_t n = strlen(src);
    if (max > size - 1)
        max = size - 1;
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
            n--;
    }
    memmove(dst, src, n);
    dst[n] = '\0';
}

int zerg_text_table(char *buf, size_t size, const char *corner, int nrows,
                    int ncols, zerg_table_text_fn *text, const void *ctx)
{
    size_t off = 0;
    char cell[256];
    zerg_text_append(buf, size, &off, "| %s |", corner);
    for (int c = 0; c < ncols; c++) {
        text(ctx, -1, c, cell, sizeof cell);
        zerg_text_append(buf, size, &off, " %s |", cell);
    }
    zerg_text_append(buf, size, &off, "\n|---|");
    for (int c = 0; c < ncols; c++)
        zerg_text_append(buf, size, &off, "---|");
    zerg_text_append(buf, size, &off, "\n");
    for (int r = 0; r < nrows; r++) {
        text(ctx, r, -1, cell, sizeof cell);
        zerg_text_append(buf, size, &off, "| %s |", cell);
        for (int c = 0; c < ncols; c++) {
            text(ctx, r, c, cell, sizeof cell);
            zerg_text_append(buf, size, &off, " %s |", cell);
        }
        zerg_text_append(buf, size, &off, "\n");
    }
    return (int)off;
}
