/* json_text.c - JSON text <-> zerg_json trees, and a streaming writer,
 * through yajl 2.1 (the Debian package).
 *
 * Decoding.  yajl's callback parser builds the tree directly: no
 * intermediate document, no second lexer.  Strings are taken as bytes
 * (yajl_dont_validate_strings), as zerg never interprets them; escapes,
 * surrogate pairs included, are yajl's.  Numbers come as their text and
 * are read with strtod, so every number is a double (exact up to 2^53).
 * Objects come out with their keys sorted bytewise, a repeated key keeping
 * its last value: the same text always yields the same tree, whatever the
 * writer's key order.  zerg_json_parse_items hands the items of one
 * top-level array to the caller one at a time and keeps none of them, so
 * a 100,000-task graph never exists as a tree.  "[]" becomes an empty object,
 * as an empty Lua table does, so a document reads the same from a file and from
 * a policy (the rule for readers is in zerg/json.h).  Nesting deeper than
 * ZERG_JSON_MAX_DEPTH and keys holding a NUL byte (tree keys are C strings) are
 * errors.
 *
 * Encoding.  struct zerg_jw wraps a yajl generator whose output goes to a
 * sink (a memory buffer for zerg_json_encode, a file for the state
 * checkpoint), so a large document is written as it is produced and never
 * held whole.  Errors are sticky: calls after the first failure do nothing
 * and zerg_jw_finish reports the first one.  Integral numbers within
 * +-2^53 (ZERG_JSON_INT_LIMIT) are written as integers ("1700000000123"),
 * others as "%.14g"; NaN and infinities are refused. */
#include "zerg/err.h"
#include "zerg/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>

/* ---- decode --------------------------------------------------------- */

enum { DEC_OK, DEC_NOMEM, DEC_DEEP, DEC_NULKEY, DEC_TWICE, DEC_STOPPED };

struct dec {
    zerg_json *root;
    zerg_json *stack[ZERG_JSON_MAX_DEPTH];
    int depth;
    char *key; /* the pending object key */
    int why;
    /* zerg_json_parse_items: the streamed array, the item being built
     * (owned here until handed over) and the caller's function. */
    const char *items_key;
    zerg_json_item_fn *fn;
    void *ctx;
    zerg_json *stream, *item;
    size_t nitems;
    int fn_rc;
    /* Where the item being built starts in the text: yajl has consumed
     * its opening bracket when the callback runs. */
    yajl_handle h;
    size_t item_off;
};

/* Hands a finished item of the streamed array to the caller; takes v. */
static int dec_deliver(struct dec *d, zerg_json *v, size_t off, size_t len)
{
    int rc = d->fn(d->ctx, d->nitems++, v, off, len);
    zerg_json_free(v);
    if (rc < 0) {
        d->why = DEC_STOPPED;
        d->fn_rc = rc;
        return 0;
    }
    return 1;
}

/* Adds v under the innermost container (or as the root); takes v. */
static int dec_add(struct dec *d, zerg_json *v)
{
    if (!v) {
        d->why = DEC_NOMEM;
        return 0;
    }
    if (d->stream && d->depth > 0 && d->stack[d->depth - 1] == d->stream) {
        if (v->type != ZERG_JSON_ARRAY && v->type != ZERG_JSON_OBJECT)
            return dec_deliver(d, v, 0, 0);
        d->item = v; /* delivered when it closes */
        d->item_off = yajl_get_bytes_consumed(d->h) - 1;
        return 1;
    }
    if (d->depth == 0) {
        d->root = v;
        return 1;
    }
    zerg_json *top = d->stack[d->depth - 1];
    int rc;
    if (top->type == ZERG_JSON_ARRAY) {
        rc = zerg_json_push(top, v);
    } else {
        rc = zerg_json_add_taken(top, d->key, v);
        d->key = NULL;
    }
    if (rc < 0) {
        d->why = DEC_NOMEM;
        return 0;
    }
    return 1;
}

static int dec_null(void *ctx)
{
    return dec_add(ctx, zerg_json_null());
}

static int dec_bool(void *ctx, int b)
{
    return dec_add(ctx, zerg_json_bool(b));
}

static int dec_number(void *ctx, const char *s, size_t len)
{
    char buf[64];
    char *text = len < sizeof buf ? buf : malloc(len + 1);
    if (!text) {
        ((struct dec *)ctx)->why = DEC_NOMEM;
        return 0;
    }
    memcpy(text, s, len);
    text[len] = '\0';
    double n = strtod(text, NULL);
    if (text != buf)
        free(text);
    return dec_add(ctx, zerg_json_num(n));
}

static int dec_string(void *ctx, const unsigned char *s, size_t len)
{
    return dec_add(ctx, zerg_json_strn((const char *)s, len));
}

static int dec_key(void *ctx, const unsigned char *s, size_t len)
{
    struct dec *d = ctx;
    if (memchr(s, '\0', len)) {
        d->why = DEC_NULKEY;
        return 0;
    }
    free(d->key);
    if (!(d->key = strndup((const char *)s, len))) {
        d->why = DEC_NOMEM;
        return 0;
    }
    return 1;
}

/* The array under items_key of the root object is the streamed one. */
static int dec_streams(struct dec *d, const zerg_json *v)
{
    if (!d->items_key || v->type != ZERG_JSON_ARRAY || d->depth != 1 ||
        !d->key || strcmp(d->key, d->items_key) != 0)
        return 0;
    if (d->stream) {
        d->why = DEC_TWICE;
        return -1;
    }
    return 1;
}

static int dec_open(struct dec *d, zerg_json *v)
{
    if (d->depth >= ZERG_JSON_MAX_DEPTH) {
        zerg_json_free(v);
        d->why = DEC_DEEP;
        return 0;
    }
    int streams = v ? dec_streams(d, v) : 0;
    if (streams < 0) {
        zerg_json_free(v);
        return 0;
    }
    if (!dec_add(d, v))
        return 0;
    if (streams)
        d->stream = v;
    d->stack[d->depth++] = v;
    return 1;
}

static int dec_map_open(void *ctx)
{
    return dec_open(ctx, zerg_json_obj());
}

static int dec_array_open(void *ctx)
{
    return dec_open(ctx, zerg_json_arr());
}

static int dec_close(void *ctx)
{
    struct dec *d = ctx;
    zerg_json *top = d->stack[--d->depth];
    if (top->type == ZERG_JSON_ARRAY && top->u.arr.n == 0) {
        /* "[]" reads as "{}" does (zerg/json.h, "Empty containers"). */
        free(top->u.arr.items);
        top->type = ZERG_JSON_OBJECT;
        top->u.obj.n = top->u.obj.cap = 0;
        top->u.obj.keys = NULL;
        top->u.obj.vals = NULL;
    } else if (top->type == ZERG_JSON_OBJECT && zerg_json_sort_keys(top) < 0) {
        d->why = DEC_NOMEM;
        return 0;
    }
    if (top == d->item) {
        d->item = NULL;
        size_t end = yajl_get_bytes_consumed(d->h);
        return dec_deliver(d, top, d->item_off, end - d->item_off);
    }
    return 1;
}

static const yajl_callbacks dec_callbacks = {
    .yajl_null = dec_null,
    .yajl_boolean = dec_bool,
    .yajl_number = dec_number,
    .yajl_string = dec_string,
    .yajl_start_map = dec_map_open,
    .yajl_map_key = dec_key,
    .yajl_end_map = dec_close,
    .yajl_start_array = dec_array_open,
    .yajl_end_array = dec_close,
};

/* err gets what stopped the parse and where (1-based, as editors count). */
static void dec_error(yajl_handle h, const struct dec *d, const char *text,
                      size_t len, size_t at, struct zerg_err *err)
{
    if (d->why == DEC_NOMEM) {
        zerg_err_set(err, -ENOMEM, "JSON: out of memory");
        return;
    }
    if (d->why == DEC_DEEP) {
        zerg_err_set(err, ZERG_ECORRUPT,
                     "JSON nested too deeply (more than %d levels) at "
                     "character %zu",
                     ZERG_JSON_MAX_DEPTH, at);
        return;
    }
    if (d->why == DEC_TWICE) {
        zerg_err_set(err, ZERG_ECORRUPT,
                     "JSON object key \"%s\" appears twice at character %zu",
                     d->items_key, at);
        return;
    }
    if (d->why == DEC_NULKEY) {
        zerg_err_set(err, ZERG_ECORRUPT,
                     "JSON object key contains a NUL character at character "
                     "%zu",
                     at);
        return;
    }
    unsigned char *m = yajl_get_error(h, 0, (const unsigned char *)text, len);
    size_t n = m ? strcspn((const char *)m, ".\n") : 0;
    zerg_err_set(err, ZERG_ECORRUPT, "JSON %.*s at character %zu", (int)n,
                 m ? (const char *)m : "", at);
    if (m)
        yajl_free_error(h, m);
}

static void dec_unwind(struct dec *d)
{
    /* Every open container hangs off the root, so freeing it frees all. */
    zerg_json_free(d->root);
    zerg_json_free(d->item); /* an item being built is not in the root */
    free(d->key);
}

static zerg_json *dec_run(struct dec *d, const char *text, size_t len,
                          struct zerg_err *err)
{
    yajl_handle h = yajl_alloc(&dec_callbacks, NULL, d);
    if (!h) {
        zerg_err_set(err, -ENOMEM, "JSON: out of memory");
        return NULL;
    }
    yajl_config(h, yajl_dont_validate_strings, 1);
    d->h = h;
    yajl_status st = yajl_parse(h, (const unsigned char *)text, len);
    size_t at = yajl_get_bytes_consumed(h);
    if (st == yajl_status_ok) {
        st = yajl_complete_parse(h);
        at = len + 1; /* only an unfinished document fails here */
    }
    if (st != yajl_status_ok) {
        if (d->why != DEC_STOPPED) /* else err is as the caller's fn left it */
            dec_error(h, d, text, len, at ? at : 1, err);
        dec_unwind(d);
        d->root = NULL;
    } else {
        free(d->key);
    }
    yajl_free(h);
    return d->root;
}

zerg_json *zerg_json_parse(const char *text, size_t len, struct zerg_err *err)
{
    struct dec d = {0};
    return dec_run(&d, text, len, err);
}

zerg_json *zerg_json_parse_items(const char *text, size_t len, const char *key,
                                 zerg_json_item_fn *fn, void *ctx,
                                 size_t *nitems, struct zerg_err *err)
{
    struct dec d = {.items_key = key, .fn = fn, .ctx = ctx};
    zerg_json *root = dec_run(&d, text, len, err);
    if (nitems)
        *nitems = d.nitems;
    return root;
}

/* ---- the streaming writer -------------------------------------------- */

/* yajl prints a token in several pieces (separator, quotes, runs of
 * plain characters); they gather in buf and reach the sink 4 KiB at a
 * time. */
#define JW_BUF 4096

struct zerg_jw {
    yajl_gen g;
    zerg_jw_sink *sink;
    void *ctx;
    int rc; /* first error, negative */
    size_t n;
    char buf[JW_BUF];
    char msg[ZERG_ERR_MSG_MAX];
};

static void jw_send(struct zerg_jw *w, const char *s, size_t len)
{
    int rc;
    if (w->rc == 0 && len > 0 && (rc = w->sink(w->ctx, s, len)) < 0) {
        w->rc = rc;
        snprintf(w->msg, sizeof w->msg, "JSON: cannot write: %s",
                 strerror(-rc));
    }
}

static void jw_flush(struct zerg_jw *w)
{
    jw_send(w, w->buf, w->n);
    w->n = 0;
}

static void jw_print(void *ctx, const char *s, size_t len)
{
    struct zerg_jw *w = ctx;
    if (w->n + len > JW_BUF) {
        jw_flush(w);
        if (len > JW_BUF) { /* a long string goes straight through */
            jw_send(w, s, len);
            return;
        }
    }
    memcpy(w->buf + w->n, s, len);
    w->n += len;
}

struct zerg_jw *zerg_jw_new(zerg_jw_sink *sink, void *ctx)
{
    struct zerg_jw *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->sink = sink;
    w->ctx = ctx;
    if (!(w->g = yajl_gen_alloc(NULL)) ||
        !yajl_gen_config(w->g, yajl_gen_print_callback, jw_print, w)) {
        if (w->g)
            yajl_gen_free(w->g);
        free(w);
        return NULL;
    }
    return w;
}

int zerg_jw_finish(struct zerg_jw *w, struct zerg_err *err)
{
    if (!w)
        return zerg_err_set(err, -ENOMEM, "JSON: out of memory");
    if (w->rc == 0)
        jw_flush(w);
    int rc = w->rc;
    if (rc < 0)
        zerg_err_set(err, rc, "%s", w->msg);
    yajl_gen_free(w->g);
    free(w);
    return rc;
}

/* Records the first failure of a generator call. */
static void jw_check(struct zerg_jw *w, yajl_gen_status st)
{
    if (st == yajl_gen_status_ok || w->rc < 0)
        return;
    w->rc = -EINVAL;
    snprintf(w->msg, sizeof w->msg,
             st == yajl_max_depth_exceeded
                 ? "JSON: cannot encode: nested too deeply"
                 : "JSON: cannot encode: generator error %d",
             (int)st);
}

void zerg_jw_fail(struct zerg_jw *w, int code, const char *msg)
{
    if (w->rc < 0)
        return;
    w->rc = code;
    snprintf(w->msg, sizeof w->msg, "%s", msg);
}

int zerg_jw_failed(const struct zerg_jw *w)
{
    return w->rc;
}

void zerg_jw_obj(struct zerg_jw *w)
{
    if (w->rc == 0)
        jw_check(w, yajl_gen_map_open(w->g));
}

void zerg_jw_obj_end(struct zerg_jw *w)
{
    if (w->rc == 0)
        jw_check(w, yajl_gen_map_close(w->g));
}

void zerg_jw_arr(struct zerg_jw *w)
{
    if (w->rc == 0)
        jw_check(w, yajl_gen_array_open(w->g));
}

void zerg_jw_arr_end(struct zerg_jw *w)
{
    if (w->rc == 0)
        jw_check(w, yajl_gen_array_close(w->g));
}

void zerg_jw_strn(struct zerg_jw *w, const char *s, size_t len)
{
    if (w->rc == 0)
        jw_check(w, yajl_gen_string(w->g, (const unsigned char *)s, len));
}

void zerg_jw_str(struct zerg_jw *w, const char *s)
{
    zerg_jw_strn(w, s ? s : "", s ? strlen(s) : 0);
}

void zerg_jw_num(struct zerg_jw *w, double n)
{
    if (w->rc < 0)
        return;
    if (!isfinite(n)) {
        zerg_jw_fail(w, -EINVAL,
                     "JSON: cannot encode a number: must not be NaN or Inf");
        return;
    }
    if (n == floor(n) && fabs(n) < ZERG_JSON_INT_LIMIT) {
        zerg_jw_int(w, (int64_t)n);
        return;
    }
    char buf[32];
    int k = snprintf(buf, sizeof buf, "%.14g", n);
    jw_check(w, yajl_gen_number(w->g, buf, (size_t)k));
}

/* Digits by hand: yajl_gen_integer goes through sprintf, and a
 * checkpoint writes a dozen integers per task. */
void zerg_jw_int(struct zerg_jw *w, int64_t n)
{
    char buf[24], *p = buf + sizeof buf;
    uint64_t u = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
    do
        *--p = (char)('0' + u % 10);
    while ((u /= 10) > 0);
    if (n < 0)
        *--p = '-';
    if (w->rc == 0)
        jw_check(w, yajl_gen_number(w->g, p, (size_t)(buf + sizeof buf - p)));
}

void zerg_jw_bool(struct zerg_jw *w, int b)
{
    if (w->rc == 0)
        jw_check(w, yajl_gen_bool(w->g, b != 0));
}

void zerg_jw_null(struct zerg_jw *w)
{
    if (w->rc == 0)
        jw_check(w, yajl_gen_null(w->g));
}

static void jw_tree(struct zerg_jw *w, const zerg_json *v, int depth)
{
    if (w->rc < 0)
        return;
    if (!v) {
        zerg_jw_fail(w, -EINVAL, "JSON: cannot encode a missing value");
        return;
    }
    int box = v->type == ZERG_JSON_ARRAY || v->type == ZERG_JSON_OBJECT;
    if (box && depth >= ZERG_JSON_MAX_DEPTH) {
        char m[96];
        snprintf(m, sizeof m,
                 "JSON: cannot encode, nested too deeply (more than %d "
                 "levels)",
                 ZERG_JSON_MAX_DEPTH);
        zerg_jw_fail(w, -EINVAL, m);
        return;
    }
    switch (v->type) {
    case ZERG_JSON_NULL:
        zerg_jw_null(w);
        break;
    case ZERG_JSON_BOOL:
        zerg_jw_bool(w, v->u.boolean);
        break;
    case ZERG_JSON_NUMBER:
        zerg_jw_num(w, v->u.number);
        break;
    case ZERG_JSON_STRING:
        zerg_jw_strn(w, v->u.str.s, v->u.str.len);
        break;
    case ZERG_JSON_ARRAY:
        zerg_jw_arr(w);
        for (size_t i = 0; i < v->u.arr.n; i++)
            jw_tree(w, v->u.arr.items[i], depth + 1);
        zerg_jw_arr_end(w);
        break;
    case ZERG_JSON_OBJECT:
        zerg_jw_obj(w);
        for (size_t i = 0; i < v->u.obj.n; i++) {
            zerg_jw_str(w, v->u.obj.keys[i]);
            jw_tree(w, v->u.obj.vals[i], depth + 1);
        }
        zerg_jw_obj_end(w);
        break;
    }
}

void zerg_jw_value(struct zerg_jw *w, const zerg_json *v)
{
    jw_tree(w, v, 0);
}

/* ---- encode to memory ------------------------------------------------ */

int zerg_jw_buf_sink(void *ctx, const char *s, size_t len)
{
    struct zerg_jw_buf *b = ctx;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + len + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
    return 0;
}

char *zerg_json_encode(const zerg_json *v, size_t *len, struct zerg_err *err)
{
    struct zerg_jw_buf b = {0};
    struct zerg_jw *w = zerg_jw_new(zerg_jw_buf_sink, &b);
    if (w)
        zerg_jw_value(w, v);
    if (zerg_jw_finish(w, err) < 0 || zerg_jw_buf_sink(&b, "", 0) < 0) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.n;
    return b.p;
}
