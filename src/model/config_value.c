/* config_value.c - one config value: the YAML node found under a known key
 * becomes its field (booleans, integers and durations range-checked from
 * the table's `allowed` column, enums, strings, argvs), or a message that
 * names the key, what was found and what the key accepts. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "zerg/config.h"

#include "config_internal.h"

/* Accepted spellings outside an enum's allowed list. */
static const struct {
    const char *path, *alias, *canonical;
} enum_aliases[] = {
    {"logging.level", "warning", "warn"}, /* ZERG's spelling */
};

/* ---- table lookups ---------------------------------------------------- */

/* Reads "lo..hi" from an allowed column. */
static void range_of(size_t i, double *lo, double *hi)
{
    char buf[64];
    const char *a = config_key_rows[i].allowed, *dots = strstr(a, "..");
    size_t n = dots ? (size_t)(dots - a) : 0;
    if (!dots || n >= sizeof buf)
        abort(); /* a malformed table row; the defaults test catches it */
    memcpy(buf, a, n);
    buf[n] = '\0';
    *lo = strtod(buf, NULL);
    *hi = strtod(dots + 2, NULL);
}

/* Position of s[0..n) in the allowed list "a|b|c", or -1. */
static int enum_index(const char *allowed, const char *s, size_t n)
{
    const char *p = allowed;
    for (int idx = 0;; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && memcmp(p, s, n) == 0)
            return idx;
        if (!bar)
            return -1;
        p = bar + 1;
    }
}

/* ---- messages ---------------------------------------------------------- */

int config_is_null(const yaml_node_t *v)
{
    if (v->type != YAML_SCALAR_NODE ||
        v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *s = (const char *)v->data.scalar.value;
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
           !strcmp(s, "NULL");
}

/* Copies a scalar for display: at most ~40 bytes, control bytes as '?'. */
void config_show_scalar(const yaml_node_t *v, char *buf, size_t size)
{
    const unsigned char *s = v->data.scalar.value;
    size_t n = v->data.scalar.length, max = size < 44 ? size - 4 : 40, k;
    for (k = 0; k < n && k < max; k++)
        buf[k] = s[k] < 0x20 || s[k] == 0x7f ? '?' : (char)s[k];
    if (k < n) {
        memcpy(buf + k, "...", 3);
        k += 3;
    }
    buf[k] = '\0';
}

/* "'text'", "a list", "a mapping" or "nothing (null)". */
const char *config_describe(const yaml_node_t *v, char *buf, size_t size)
{
    if (v->type == YAML_SEQUENCE_NODE)
        return "a list";
    if (v->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (config_is_null(v))
        return "nothing (null)";
    char text[48];
    config_show_scalar(v, text, sizeof text);
    snprintf(buf, size, "'%s'", text);
    return buf;
}

/* What a key accepts, for "expected ..." (built from the table). */
static const char *expected(size_t i, char *buf, size_t size)
{
    const char *allowed = config_key_rows[i].allowed;
    unsigned flags = config_key_binds[i].flags;
    switch (config_key_binds[i].kind) {
    case K_BOOL:
        return "true or false (also yes/no, on/off)";
    case K_INT:
    case K_INT64:
    case K_MIB:
        snprintf(buf, size, "an integer in %s", allowed);
        return buf;
    case K_DURATION:
        snprintf(buf, size, "a number of seconds in %s (no unit suffix)",
                 allowed);
        return buf;
    case K_NUMBER:
        snprintf(buf, size, "a number in %s", allowed);
        return buf;
    case K_ENUM:
        snprintf(buf, size, "one of %s", allowed);
        return buf;
    case K_ARGV:
        snprintf(buf, size, "a %s", allowed);
        return buf;
    case K_STRING:
        if (flags & F_SIZE)
            snprintf(buf, size, "%s", allowed);
        else if (flags & F_NOSPACE)
            snprintf(buf, size, "a non-empty string without spaces (%s)",
                     allowed);
        else
            snprintf(buf, size, "a non-empty string (%s)", allowed);
        return buf;
    }
    return "?";
}

static int bad_value(struct loader *L, size_t i, const yaml_node_t *v)
{
    char found[64], want[256];
    return config_failf(L, v->start_mark, "%s: found %s, expected %s",
                        config_key_rows[i].path,
                        config_describe(v, found, sizeof found),
                        expected(i, want, sizeof want));
}

/* ---- scalars ---------------------------------------------------------- */

/* Copies s without YAML 1.1 digit separators ("1_000"); -1 if too long. */
static int strip_underscores(const char *s, char *buf, size_t size)
{
    size_t n = 0;
    for (; *s; s++) {
        if (*s == '_')
            continue;
        if (n + 1 >= size)
            return -1;
        buf[n++] = *s;
    }
    buf[n] = '\0';
    return 0;
}

static int parse_int(const char *s, long long *out)
{
    char buf[32];
    if (strip_underscores(s, buf, sizeof buf) < 0)
        return -1;
    const char *d = buf + (buf[0] == '+' || buf[0] == '-');
    if (!*d || strspn(d, "0123456789") != strlen(d))
        return -1;
    errno = 0;
    *out = strtoll(buf, NULL, 10);
    return errno ? -1 : 0;
}

/* A finite decimal number ("0.2", "1e3"); no hex, inf or nan. */
int config_parse_real(const char *s, double *out)
{
    char buf[64], *end;
    if (strip_underscores(s, buf, sizeof buf) < 0)
        return -1;
    if (!buf[0] || strspn(buf, "0123456789+-.eE") != strlen(buf) ||
        !strpbrk(buf, "0123456789"))
        return -1;
    *out = strtod(buf, &end);
    return *end || !isfinite(*out) ? -1 : 0;
}

int config_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"true", "yes", "on"};
    static const char *const no[] = {"false", "no", "off"};
    for (int k = 0; k < 3; k++) {
        if (!strcasecmp(s, yes[k]) || !strcasecmp(s, no[k])) {
            *out = !strcasecmp(s, yes[k]);
            return 0;
        }
    }
    return -1;
}

/* Docker's --memory syntax: digits, optional fraction, optional unit. */
static int is_size(const char *s)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0)
        return 0;
    if (s[n] == '.') {
        size_t f = strspn(s + n + 1, "0123456789");
        if (f == 0)
            return 0;
        n += 1 + f;
    }
    if (s[n] && strchr("bkmgBKMG", s[n]))
        n++;
    return s[n] == '\0';
}

static int string_ok(unsigned flags, const char *s)
{
    if ((flags & F_NONEMPTY) && !*s)
        return 0;
    if ((flags & F_NOSPACE) && strpbrk(s, " \t\r\n"))
        return 0;
    if ((flags & F_SIZE) && *s && !is_size(s))
        return 0;
    return 1;
}

static int enum_lookup(size_t i, const char *s, size_t n)
{
    int idx = enum_index(config_key_rows[i].allowed, s, n);
    for (size_t k = 0;
         idx < 0 && k < sizeof enum_aliases / sizeof enum_aliases[0]; k++) {
        if (!strcmp(enum_aliases[k].path, config_key_rows[i].path) &&
            !strcmp(enum_aliases[k].alias, s))
            idx = enum_index(config_key_rows[i].allowed,
                             enum_aliases[k].canonical,
                             strlen(enum_aliases[k].canonical));
    }
    return idx;
}

/* Numeric kinds: parse, range-check, store. */
static int apply_number(struct loader *L, size_t i, const yaml_node_t *v)
{
    const char *s = (const char *)v->data.scalar.value;
    void *f = field_of(&L->cfg, i);
    double lo, hi, x;
    long long n = 0;
    range_of(i, &lo, &hi);
    enum kind kind = config_key_binds[i].kind;
    int is_int = kind == K_INT || kind == K_INT64 || kind == K_MIB;
    if (is_int ? parse_int(s, &n) : config_parse_real(s, &x))
        return bad_value(L, i, v);
    if (is_int)
        x = (double)n;
    if (x < lo || x > hi)
        return bad_value(L, i, v);
    if (kind == K_INT)
        *(int *)f = (int)n;
    else if (kind == K_INT64)
        *(int64_t *)f = n;
    else if (kind == K_MIB)
        *(int64_t *)f = n * 1024 * 1024;
    else if (kind == K_DURATION)
        *(int64_t *)f = llround(x * 1e9);
    else
        *(double *)f = x;
    return 0;
}

static int apply_scalar(struct loader *L, size_t i, const yaml_node_t *v)
{
    const char *s = (const char *)v->data.scalar.value;
    size_t n = v->data.scalar.length;
    void *f = field_of(&L->cfg, i);
    int b, idx;
    switch (config_key_binds[i].kind) {
    case K_BOOL:
        if (config_parse_bool(s, &b))
            return bad_value(L, i, v);
        *(int *)f = b;
        return 0;
    case K_ENUM:
        idx = enum_lookup(i, s, n);
        if (idx < 0)
            return bad_value(L, i, v);
        memcpy(f, &idx, sizeof idx);
        return 0;
    case K_STRING: {
        if (!string_ok(config_key_binds[i].flags, s))
            return bad_value(L, i, v);
        char *copy = strdup(s);
        if (!copy)
            return config_oom(L);
        free(*(char **)f);
        *(char **)f = copy;
        return 0;
    }
    default:
        return apply_number(L, i, v);
    }
}

/* ---- argv values ------------------------------------------------------ */

static int argv_from_list(struct loader *L, size_t i, const yaml_node_t *v,
                          struct zerg_argv *a)
{
    yaml_node_item_t *it = v->data.sequence.items.start;
    size_t count = (size_t)(v->data.sequence.items.top - it);
    if (config_argv_alloc(a, count) < 0)
        return config_oom(L);
    for (; a->n < count; a->n++) {
        const yaml_node_t *item = yaml_document_get_node(L->doc, it[a->n]);
        char found[64];
        if (item->type != YAML_SCALAR_NODE || config_is_null(item) ||
            memchr(item->data.scalar.value, '\0', item->data.scalar.length))
            return config_failf(L, item->start_mark,
                                "%s[%zu]: found %s, expected a string",
                                config_key_rows[i].path, a->n,
                                config_describe(item, found, sizeof found));
        a->v[a->n] = strdup((const char *)item->data.scalar.value);
        if (!a->v[a->n])
            return config_oom(L);
    }
    return 0;
}

/* "claude --print" -> [claude, --print]; no quoting, by design: a list is
 * the way to pass an argument that contains spaces. */
static int argv_split(struct loader *L, const char *s, struct zerg_argv *a)
{
    static const char ws[] = " \t\r\n";
    size_t count = 0;
    for (const char *p = s + strspn(s, ws); *p; p += strspn(p, ws)) {
        count++;
        p += strcspn(p, ws);
    }
    if (config_argv_alloc(a, count) < 0)
        return config_oom(L);
    for (const char *p = s + strspn(s, ws); *p; p += strspn(p, ws)) {
        size_t len = strcspn(p, ws);
        a->v[a->n] = strndup(p, len);
        if (!a->v[a->n])
            return config_oom(L);
        a->n++;
        p += len;
    }
    return 0;
}

static int apply_argv(struct loader *L, size_t i, const yaml_node_t *v)
{
    unsigned flags = config_key_binds[i].flags;
    struct zerg_argv a = {0};
    int rc;
    if (v->type == YAML_SEQUENCE_NODE)
        rc = argv_from_list(L, i, v, &a);
    else if ((flags & F_SPLIT) && v->type == YAML_SCALAR_NODE &&
             !config_is_null(v) &&
             !memchr(v->data.scalar.value, '\0', v->data.scalar.length))
        rc = argv_split(L, (const char *)v->data.scalar.value, &a);
    else
        return bad_value(L, i, v);
    if (rc == 0 && a.n == 0 && (flags & F_NONEMPTY))
        rc = bad_value(L, i, v);
    if (rc < 0) {
        config_argv_free(&a);
        return rc;
    }
    config_argv_free(field_of(&L->cfg, i));
    *(struct zerg_argv *)field_of(&L->cfg, i) = a;
    return 0;
}

int config_apply_value(struct loader *L, size_t i, const yaml_node_t *v)
{
    if (config_key_binds[i].kind == K_ARGV)
        return apply_argv(L, i, v);
    if (v->type != YAML_SCALAR_NODE || config_is_null(v) ||
        memchr(v->data.scalar.value, '\0', v->data.scalar.length))
        return bad_value(L, i, v); /* "\0" escapes would cut C strings */
    return apply_scalar(L, i, v);
}
