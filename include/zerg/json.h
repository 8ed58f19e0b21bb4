/* json.h - a plain C value tree for JSON documents, its text, and a
 * streaming writer.
 *
 * Text is parsed and produced by yajl (src/base/json_text.c).  Objects keep
 * insertion order and look keys up linearly: callers that need fast lookup
 * over thousands of keys index the tree themselves once.  Parsed objects
 * come out with their keys sorted bytewise (a repeated key keeps its last
 * value), so the same text always gives the same tree.
 *
 * Empty containers.  A Lua table with no keys -- what a policy returns for
 * either "[]" or "{}" -- cannot tell them apart, so parsed text does not
 * either: both become an empty object, and the same data reads the same
 * whether it came from a file or from a policy.  The tree treats an empty
 * container as both kinds when it is read: zerg_json_is(v,
 * ZERG_JSON_ARRAY) and (v, ZERG_JSON_OBJECT) both hold for an empty array
 * or object, and u.arr.n and u.obj.n are the same field (the common
 * initial sequence of the union), so a reader that checked the kind and
 * loops to n sees 0 either way.  Readers therefore check the kind with
 * zerg_json_is, not with v->type.  Builders keep their kinds: a tree built
 * in C encodes arrays as arrays even when empty, and zerg_json_push onto
 * an object (empty or not) is still -EINVAL.  A parsed "[]" is encoded
 * back as "{}". */
#ifndef ZERG_JSON_H
#define ZERG_JSON_H

#include <stddef.h>
#include <stdint.h>

struct zerg_err;

/* Containers nested deeper than this are an error in every conversion:
 * text to tree, tree to text (yajl's generator stops at 128), Lua to tree
 * and tree to Lua (src/lua/convert.c). */
#define ZERG_JSON_MAX_DEPTH 100
/* 2^53: integral doubles of smaller magnitude are exact, so they are
 * written as integers ("1700000000123") and go to Lua as integers; larger
 * ones are floats, written "%.14g". */
#define ZERG_JSON_INT_LIMIT 9007199254740992.0

enum zerg_json_type {
    ZERG_JSON_NULL,
    ZERG_JSON_BOOL,
    ZERG_JSON_NUMBER,
    ZERG_JSON_STRING,
    ZERG_JSON_ARRAY,
    ZERG_JSON_OBJECT,
};

typedef struct zerg_json zerg_json;
struct zerg_json {
    enum zerg_json_type type;
    union {
        int boolean;
        double number;
        struct {
            char *s; /* NUL-terminated; may contain NULs up to len */
            size_t len;
        } str;
        /* n and cap first in both: an empty container reads n == 0 as
         * either kind (see "Empty containers" above). */
        struct {
            size_t n, cap;
            zerg_json **items;
        } arr;
        struct {
            size_t n, cap;
            char **keys;
            zerg_json **vals;
        } obj;
    } u;
};

/* Parses text; returns a new tree (caller frees) or NULL with err set to
 * what is wrong and where ("JSON parse error: premature EOF at character
 * 10"), ZERG_ECORRUPT (-ENOMEM when out of memory).  Nesting deeper than
 * ZERG_JSON_MAX_DEPTH is an error; "[]" and "{}" both give an empty
 * object, keys come out sorted. */
zerg_json *zerg_json_parse(const char *text, size_t len, struct zerg_err *err);

/* zerg_json_parse for a document with one large array: each item of the
 * array under `key` in the top-level object is handed to fn (its index
 * from 0) as soon as it is complete, then freed, so the items are never
 * all in memory.  The array stays in the returned tree, empty; *nitems
 * (may be NULL) gets the number of items handed over.  fn returns 0, or a
 * negative code to stop: the parse then returns NULL and err is left as fn
 * set it.  A second `key` array in the same object is an error.  An item
 * that is an object or an array also comes with where its text lies in
 * `text` (off, len: from its opening bracket to its closing one); a
 * scalar item with 0, 0. */
typedef int zerg_json_item_fn(void *ctx, size_t i, const zerg_json *item,
                              size_t off, size_t len);
zerg_json *zerg_json_parse_items(const char *text, size_t len, const char *key,
                                 zerg_json_item_fn *fn, void *ctx,
                                 size_t *nitems, struct zerg_err *err);

/* Encodes v compactly; returns a malloc'd NUL-terminated string (caller
 * frees) and its length in *len (may be NULL), or NULL with err set. */
char *zerg_json_encode(const zerg_json *v, size_t *len, struct zerg_err *err);

/* Streaming writer: JSON text produced token by token into a sink, for
 * documents too large to build as a tree first (the state checkpoint).
 * Containers are opened and closed explicitly; inside an object, keys and
 * values alternate (a key is written with zerg_jw_str).  Errors are
 * sticky: after the first, calls do nothing, and zerg_jw_finish returns it
 * (0 or negative, err set) and frees the writer.  The sink returns 0 or a
 * negative errno. */
typedef int zerg_jw_sink(void *ctx, const char *data, size_t len);
struct zerg_jw;
struct zerg_jw *zerg_jw_new(zerg_jw_sink *sink, void *ctx);  /* NULL: ENOMEM */
int zerg_jw_finish(struct zerg_jw *w, struct zerg_err *err); /* NULL w ok */
int zerg_jw_failed(const struct zerg_jw *w); /* the first error, or 0 */
void zerg_jw_fail(struct zerg_jw *w, int code, const char *msg);
void zerg_jw_obj(struct zerg_jw *w);
void zerg_jw_obj_end(struct zerg_jw *w);
void zerg_jw_arr(struct zerg_jw *w);
void zerg_jw_arr_end(struct zerg_jw *w);
void zerg_jw_str(struct zerg_jw *w, const char *s); /* NULL writes "" */
void zerg_jw_strn(struct zerg_jw *w, const char *s, size_t len);
void zerg_jw_num(struct zerg_jw *w, double n); /* as zerg_json_encode does */
void zerg_jw_int(struct zerg_jw *w, int64_t n);
void zerg_jw_bool(struct zerg_jw *w, int b);
void zerg_jw_null(struct zerg_jw *w);
void zerg_jw_value(struct zerg_jw *w, const zerg_json *v); /* a whole tree */
/* A sink into memory: p is malloc'd, NUL-terminated, n bytes long. */
struct zerg_jw_buf {
    char *p;
    size_t n, cap;
};
int zerg_jw_buf_sink(void *ctx, const char *data, size_t len);

void zerg_json_free(zerg_json *v); /* accepts NULL */

/* Builders.  All return NULL only on out-of-memory. */
zerg_json *zerg_json_null(void);
zerg_json *zerg_json_bool(int b);
zerg_json *zerg_json_num(double n);
zerg_json *zerg_json_str(const char *s); /* NULL s -> JSON null */
zerg_json *zerg_json_strn(const char *s, size_t len);
zerg_json *zerg_json_arr(void);
zerg_json *zerg_json_obj(void);

/* Append / set; take ownership of v (freed on failure).  Setting an existing
 * key replaces its value.  Return 0 or -ENOMEM/-EINVAL. */
int zerg_json_push(zerg_json *arr, zerg_json *v);
int zerg_json_set(zerg_json *obj, const char *key, zerg_json *v);
/* Appends key without looking for an existing one: O(1) instead of
 * zerg_json_set's O(keys), for building large objects whose keys the
 * caller knows to be unique. */
int zerg_json_add(zerg_json *obj, const char *key, zerg_json *v);
/* zerg_json_add taking a malloc'd key as well (both freed on failure). */
int zerg_json_add_taken(zerg_json *obj, char *key, zerg_json *v);
/* Sorts obj's keys bytewise; of repeated keys the last one stays.  0 or
 * -ENOMEM (obj unchanged). */
int zerg_json_sort_keys(zerg_json *obj);
/* Shorthands for zerg_json_set(obj, key, zerg_json_<type>(...)). */
int zerg_json_set_str(zerg_json *obj, const char *key, const char *s);
int zerg_json_set_num(zerg_json *obj, const char *key, double n);
int zerg_json_set_bool(zerg_json *obj, const char *key, int b);
int zerg_json_set_null(zerg_json *obj, const char *key);

/* Accessors: NULL / 0 / default when the type does not match. */
const zerg_json *zerg_json_get(const zerg_json *obj, const char *key);
size_t zerg_json_len(const zerg_json *v); /* array items or object keys */
const zerg_json *zerg_json_at(const zerg_json *v, size_t i);
const char *zerg_json_key_at(const zerg_json *obj, size_t i);
const char *zerg_json_as_str(const zerg_json *v); /* NULL unless string */
double zerg_json_as_num(const zerg_json *v, double dflt);
/* 1 when v is of type t; an empty array or object is both an ARRAY and an
 * OBJECT here. */
int zerg_json_is(const zerg_json *v, enum zerg_json_type t);
const char *zerg_json_type_name(enum zerg_json_type t); /* "string", ... */

/* Deep copy (NULL on out-of-memory). */
zerg_json *zerg_json_dup(const zerg_json *v);

#endif
