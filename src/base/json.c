/* json.c - the plain C JSON value tree (see zerg/json.h).
 *
 * Only the tree lives here: building, reading, copying, freeing.  Text is
 * parsed and produced by yajl in json_text.c.  Objects are two
 * parallel arrays in insertion order with linear lookup: documents zerg
 * reads key by key are small, and big ones are indexed once by the caller.
 * An empty array or object is read as either kind (zerg_json_is; the rule
 * and why are in zerg/json.h); builders keep the kind they were given. */
#include "zerg/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static zerg_json *json_new(enum zerg_json_type type)
{
    zerg_json *v = calloc(1, sizeof *v);
    if (v)
        v->type = type;
    return v;
}

void zerg_json_free(zerg_json *v)
{
    if (!v)
        return;
    switch (v->type) {
    case ZERG_JSON_STRING:
        free(v->u.str.s);
        break;
    case ZERG_JSON_ARRAY:
        for (size_t i = 0; i < v->u.arr.n; i++)
            zerg_json_free(v->u.arr.items[i]);
        free(v->u.arr.items);
        break;
    case ZERG_JSON_OBJECT:
        for (size_t i = 0; i < v->u.obj.n; i++) {
            free(v->u.obj.keys[i]);
            zerg_json_free(v->u.obj.vals[i]);
        }
        free(v->u.obj.keys);
        free(v->u.obj.vals);
        break;
    default:
        break;
    }
    free(v);
}

zerg_json *zerg_json_null(void)
{
    return json_new(ZERG_JSON_NULL);
}

zerg_json *zerg_json_bool(int b)
{
    zerg_json *v = json_new(ZERG_JSON_BOOL);
    if (v)
        v->u.boolean = b != 0;
    return v;
}

zerg_json *zerg_json_num(double n)
{
    zerg_json *v = json_new(ZERG_JSON_NUMBER);
    if (v)
        v->u.number = n;
    return v;
}

zerg_json *zerg_json_strn(const char *s, size_t len)
{
    zerg_json *v = json_new(ZERG_JSON_STRING);
    if (!v)
        return NULL;
    v->u.str.s = malloc(len + 1);
    if (!v->u.str.s) {
        free(v);
        return NULL;
    }
    if (len)
        memcpy(v->u.str.s, s, len);
    v->u.str.s[len] = '\0';
    v->u.str.len = len;
    return v;
}

zerg_json *zerg_json_str(const char *s)
{
    return s ? zerg_json_strn(s, strlen(s)) : zerg_json_null();
}

zerg_json *zerg_json_arr(void)
{
    return json_new(ZERG_JSON_ARRAY);
}

zerg_json *zerg_json_obj(void)
{
    return json_new(ZERG_JSON_OBJECT);
}

/* Grows *arr (of elem-sized slots) so one more fits; 0 or -ENOMEM. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 4;
    if (ncap > SIZE_MAX / elem)
        return -ENOMEM;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

int zerg_json_push(zerg_json *arr, zerg_json *v)
{
    if (!v || !arr || arr->type != ZERG_JSON_ARRAY) {
        zerg_json_free(v);
        return v ? -EINVAL : -ENOMEM;
    }
    size_t cap = arr->u.arr.cap;
    if (grow((void **)&arr->u.arr.items, &cap, arr->u.arr.n,
             sizeof *arr->u.arr.items) < 0) {
        zerg_json_free(v);
        return -ENOMEM;
    }
    arr->u.arr.cap = cap;
    arr->u.arr.items[arr->u.arr.n++] = v;
    return 0;
}

static long obj_find(const zerg_json *obj, const char *key)
{
    for (size_t i = 0; i < obj->u.obj.n; i++)
        if (strcmp(obj->u.obj.keys[i], key) == 0)
            return (long)i;
    return -1;
}

/* Appends a new key; keys and vals share one capacity. */
static int obj_append(zerg_json *obj, char *key, zerg_json *v)
{
    size_t cap = obj->u.obj.cap;
    if (grow((void **)&obj->u.obj.keys, &cap, obj->u.obj.n,
             sizeof *obj->u.obj.keys) < 0)
        return -ENOMEM;
    cap = obj->u.obj.cap;
    if (grow((void **)&obj->u.obj.vals, &cap, obj->u.obj.n,
             sizeof *obj->u.obj.vals) < 0)
        return -ENOMEM;
    obj->u.obj.cap = cap;
    obj->u.obj.keys[obj->u.obj.n] = key;
    obj->u.obj.vals[obj->u.obj.n++] = v;
    return 0;
}

int zerg_json_set(zerg_json *obj, const char *key, zerg_json *v)
{
    if (!v || !obj || !key || obj->type != ZERG_JSON_OBJECT) {
        zerg_json_free(v);
        return v ? -EINVAL : -ENOMEM;
    }
    long at = obj_find(obj, key);
    if (at >= 0) {
        zerg_json_free(obj->u.obj.vals[at]);
        obj->u.obj.vals[at] = v;
        return 0;
    }
    return zerg_json_add(obj, key, v);
}

int zerg_json_add(zerg_json *obj, const char *key, zerg_json *v)
{
    if (!v || !obj || !key || obj->type != ZERG_JSON_OBJECT) {
        zerg_json_free(v);
        return v ? -EINVAL : -ENOMEM;
    }
    char *k = strdup(key);
    if (!k || obj_append(obj, k, v) < 0) {
        free(k);
        zerg_json_free(v);
        return -ENOMEM;
    }
    return 0;
}

int zerg_json_add_taken(zerg_json *obj, char *key, zerg_json *v)
{
    if (!v || !key || !obj || obj->type != ZERG_JSON_OBJECT ||
        obj_append(obj, key, v) < 0) {
        free(key);
        zerg_json_free(v);
        return -ENOMEM;
    }
    return 0;
}

/* Orders pair indexes by key, then by position, so equal keys stay in
 * document order and the last of them is the one kept. */
static int key_order(const void *a, const void *b, void *ctx)
{
    char *const *keys = ctx;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(keys[i], keys[j]);
    return c ? c : (i > j) - (i < j);
}

static int sorted_unique(const zerg_json *obj)
{
    for (size_t i = 1; i < obj->u.obj.n; i++)
        if (strcmp(obj->u.obj.keys[i - 1], obj->u.obj.keys[i]) >= 0)
            return 0;
    return 1;
}

int zerg_json_sort_keys(zerg_json *obj)
{
    size_t n = obj->u.obj.n;
    if (sorted_unique(obj))
        return 0;
    size_t *ix = malloc(n * sizeof *ix);
    char **keys = malloc(n * sizeof *keys);
    zerg_json **vals = malloc(n * sizeof *vals);
    if (!ix || !keys || !vals) {
        free(ix);
        free(keys);
        free(vals);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        ix[i] = i;
    qsort_r(ix, n, sizeof *ix, key_order, obj->u.obj.keys);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = ix[i];
        if (i + 1 < n &&
            strcmp(obj->u.obj.keys[k], obj->u.obj.keys[ix[i + 1]]) == 0) {
            free(obj->u.obj.keys[k]); /* a later value of this key wins */
            zerg_json_free(obj->u.obj.vals[k]);
            continue;
        }
        keys[m] = obj->u.obj.keys[k];
        vals[m++] = obj->u.obj.vals[k];
    }
    memcpy(obj->u.obj.keys, keys, m * sizeof *keys);
    memcpy(obj->u.obj.vals, vals, m * sizeof *vals);
    obj->u.obj.n = m;
    free(ix);
    free(keys);
    free(vals);
    return 0;
}

int zerg_json_set_str(zerg_json *obj, const char *key, const char *s)
{
    return zerg_json_set(obj, key, zerg_json_str(s));
}

int zerg_json_set_num(zerg_json *obj, const char *key, double n)
{
    return zerg_json_set(obj, key, zerg_json_num(n));
}

int zerg_json_set_bool(zerg_json *obj, const char *key, int b)
{
    return zerg_json_set(obj, key, zerg_json_bool(b));
}

int zerg_json_set_null(zerg_json *obj, const char *key)
{
    return zerg_json_set(obj, key, zerg_json_null());
}

const zerg_json *zerg_json_get(const zerg_json *obj, const char *key)
{
    if (!obj || !key || obj->type != ZERG_JSON_OBJECT)
        return NULL;
    long at = obj_find(obj, key);
    return at >= 0 ? obj->u.obj.vals[at] : NULL;
}

size_t zerg_json_len(const zerg_json *v)
{
    if (!v)
        return 0;
    if (v->type == ZERG_JSON_ARRAY)
        return v->u.arr.n;
    if (v->type == ZERG_JSON_OBJECT)
        return v->u.obj.n;
    return 0;
}

const zerg_json *zerg_json_at(const zerg_json *v, size_t i)
{
    if (!v || i >= zerg_json_len(v))
        return NULL;
    return v->type == ZERG_JSON_ARRAY ? v->u.arr.items[i] : v->u.obj.vals[i];
}

const char *zerg_json_key_at(const zerg_json *obj, size_t i)
{
    if (!obj || obj->type != ZERG_JSON_OBJECT || i >= obj->u.obj.n)
        return NULL;
    return obj->u.obj.keys[i];
}

const char *zerg_json_as_str(const zerg_json *v)
{
    return v && v->type == ZERG_JSON_STRING ? v->u.str.s : NULL;
}

double zerg_json_as_num(const zerg_json *v, double dflt)
{
    return v && v->type == ZERG_JSON_NUMBER ? v->u.number : dflt;
}

static int is_container(enum zerg_json_type t)
{
    return t == ZERG_JSON_ARRAY || t == ZERG_JSON_OBJECT;
}

/* Parsed text leaves "[]" and "{}" alike (see zerg/json.h), so an empty
 * container passes as either kind. */
int zerg_json_is(const zerg_json *v, enum zerg_json_type t)
{
    if (!v)
        return 0;
    if (v->type == t)
        return 1;
    return is_container(t) && is_container(v->type) && zerg_json_len(v) == 0;
}

const char *zerg_json_type_name(enum zerg_json_type t)
{
    switch (t) {
    case ZERG_JSON_NULL:
        return "null";
    case ZERG_JSON_BOOL:
        return "boolean";
    case ZERG_JSON_NUMBER:
        return "number";
    case ZERG_JSON_STRING:
        return "string";
    case ZERG_JSON_ARRAY:
        return "array";
    case ZERG_JSON_OBJECT:
        return "object";
    }
    return "unknown";
}

static zerg_json *dup_array(const zerg_json *v)
{
    zerg_json *out = zerg_json_arr();
    for (size_t i = 0; out && i < v->u.arr.n; i++) {
        if (zerg_json_push(out, zerg_json_dup(v->u.arr.items[i])) < 0) {
            zerg_json_free(out);
            return NULL;
        }
    }
    return out;
}

static zerg_json *dup_object(const zerg_json *v)
{
    zerg_json *out = zerg_json_obj();
    for (size_t i = 0; out && i < v->u.obj.n; i++) {
        zerg_json *val = zerg_json_dup(v->u.obj.vals[i]);
        char *key = val ? strdup(v->u.obj.keys[i]) : NULL;
        /* Keys of a valid tree are unique: append, skip the lookup. */
        if (!key || obj_append(out, key, val) < 0) {
            free(key);
            zerg_json_free(val);
            zerg_json_free(out);
            return NULL;
        }
    }
    return out;
}

zerg_json *zerg_json_dup(const zerg_json *v)
{
    if (!v)
        return NULL;
    switch (v->type) {
    case ZERG_JSON_NULL:
        return zerg_json_null();
    case ZERG_JSON_BOOL:
        return zerg_json_bool(v->u.boolean);
    case ZERG_JSON_NUMBER:
        return zerg_json_num(v->u.number);
    case ZERG_JSON_STRING:
        return zerg_json_strn(v->u.str.s, v->u.str.len);
    case ZERG_JSON_ARRAY:
        return dup_array(v);
    case ZERG_JSON_OBJECT:
        return dup_object(v);
    }
    return NULL;
}
