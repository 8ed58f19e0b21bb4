/* lua/json.c - JSON text <-> zerg_json trees, through lua-cjson.
 *
 * Every JSON token zerg reads or writes goes through lua-cjson 2.1.0 (the
 * Debian package), run in a private lua_State created on first use that
 * holds nothing but the cjson module.  All Lua work happens inside one
 * lua_pcall per request, so a cjson error or an out-of-memory comes back as
 * a zerg_err, never as an abort.  Not thread-safe: zerg is single-threaded.
 *
 * Encoding.  cjson 2.1.0 decides "array or object" from the Lua table and
 * walks tables in hash order, so a whole-document cjson.encode would write
 * empty arrays as {} and shuffle keys from run to run.  Instead the C tree
 * is walked here: cjson.encode turns each string, key and fractional number
 * into its JSON token (all escaping and float formatting are cjson's), the
 * walk adds the brackets, commas and colons from the C type, so arrays stay
 * arrays even when empty and objects keep insertion order.  Integral numbers
 * within +-2^53 are written as Lua integers ("1700000000123"), because
 * cjson's 14-digit "%.14g" would turn a nanosecond timestamp into 1.7e+18.
 *
 * Decoding.  cjson.decode builds Lua tables, which lose two facts:
 * - "[]" and "{}" both decode to an empty table.  Before decoding, each
 *   empty array outside a string is rewritten to ["<sentinel>"], where the
 *   sentinel is a string holding a NUL and a random 64-bit value drawn once
 *   per process; a one-element table holding exactly it becomes an empty
 *   array.  When the rewritten text fails to decode, the original text is
 *   decoded again so cjson's "at character N" refers to the caller's text.
 * - key order.  Objects come out with their keys sorted bytewise, so the
 *   same text always yields the same tree.
 * Object keys holding a NUL byte are rejected: tree keys are C strings. */
#include "zerg/err.h"
#include "zerg/json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua-cjson.h>
#include <lua.h>

#define JSON_MAX_DEPTH 1000
/* After an output this big, release cjson's kept encode buffer. */
#define JSON_TRIM_BYTES (1u << 20)
/* Integral doubles below 2^53 are exact; above, "%.14g" is as good. */
#define JSON_INT_LIMIT 9007199254740992.0

static lua_State *json_L;
static int ref_cjson = LUA_NOREF;
static int ref_encode = LUA_NOREF, ref_decode = LUA_NOREF;
static char sentinel[48]; /* decoded value of the empty-array marker */
static size_t sentinel_len;
static char sentinel_tok[64]; /* the marker as JSON text, with quotes */

/* ---- state ---------------------------------------------------------- */

static void make_sentinel(void)
{
    uint64_t nonce = 0;
    if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != sizeof nonce)
        nonce = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
    sentinel_len = (size_t)snprintf(sentinel, sizeof sentinel,
                                    "%czerg-empty-array-%016" PRIx64, 0, nonce);
    snprintf(sentinel_tok, sizeof sentinel_tok,
             "[\"\\u0000zerg-empty-array-%016" PRIx64 "\"]", nonce);
}

/* cjson.<name>(arg), or cjson.<name>(false) when arg is -1 */
static void cjson_config(lua_State *L, const char *name, int arg)
{
    lua_getfield(L, -1, name); /* cjson fn */
    if (arg < 0)
        lua_pushboolean(L, 0);
    else
        lua_pushinteger(L, arg);
    lua_call(L, 1, 0); /* cjson */
}

/* Protected: opens cjson, configures it, keeps encode/decode in the
 * registry. */
static int state_setup(lua_State *L)
{
    luaL_requiref(L, "cjson", luaopen_cjson, 0); /* cjson */
    cjson_config(L, "encode_number_precision", 14);
    cjson_config(L, "encode_max_depth", JSON_MAX_DEPTH);
    cjson_config(L, "decode_max_depth", JSON_MAX_DEPTH);
    /* Strict JSON: no NaN, Infinity or hex numbers either way. */
    cjson_config(L, "encode_invalid_numbers", -1);
    cjson_config(L, "decode_invalid_numbers", -1);
    lua_getfield(L, -1, "encode"); /* cjson encode */
    ref_encode = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_getfield(L, -1, "decode"); /* cjson decode */
    ref_decode = luaL_ref(L, LUA_REGISTRYINDEX);
    ref_cjson = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* Creates the state on first use; 0 or a negative code with err set. */
static int state_open(struct zerg_err *err)
{
    if (json_L)
        return 0;
    lua_State *L = luaL_newstate();
    if (!L)
        return zerg_err_set(err, -ENOMEM, "JSON: out of memory");
    lua_pushcfunction(L, state_setup);
    int st = lua_pcall(L, 0, 0, 0);
    if (st != LUA_OK) {
        int code = st == LUA_ERRMEM ? -ENOMEM : -EIO;
        const char *m = lua_tostring(L, -1);
        zerg_err_set(err, code, "JSON: cannot load lua-cjson: %s", m ? m : "?");
        lua_close(L);
        return code;
    }
    make_sentinel();
    json_L = L;
    return 0;
}

/* Runs fn(ctx) protected; on failure copies the message into err. */
static int state_call(lua_CFunction fn, void *ctx, int code,
                      struct zerg_err *err)
{
    int rc = state_open(err);
    if (rc < 0)
        return rc;
    lua_State *L = json_L;
    lua_pushcfunction(L, fn);
    lua_pushlightuserdata(L, ctx);
    int st = lua_pcall(L, 1, 1, 0);
    if (st == LUA_OK)
        return 0;
    if (st == LUA_ERRMEM) {
        code = -ENOMEM;
        zerg_err_set(err, code, "JSON: out of memory");
    } else {
        const char *m = lua_tostring(L, -1);
        zerg_err_set(err, code, "%s", m ? m : "JSON error");
    }
    return code;
}

/* Drops the result and what the request allocated, so a multi-megabyte
 * document does not stay resident until the next collection. */
static void state_done(void)
{
    lua_settop(json_L, 0);
    lua_gc(json_L, LUA_GCCOLLECT);
}

/* ---- encode --------------------------------------------------------- */

struct enc_ctx {
    const zerg_json *root;
};

/* Appends the cjson token of the value on top of the stack (popped). */
static void enc_token(lua_State *L, luaL_Buffer *b)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_encode); /* v encode */
    lua_insert(L, -2);                             /* encode v */
    lua_call(L, 1, 1);                             /* text */
    luaL_addvalue(b);
}

static void enc_number(lua_State *L, luaL_Buffer *b, double n)
{
    if (n == floor(n) && fabs(n) < JSON_INT_LIMIT) {
        lua_pushinteger(L, (lua_Integer)n); /* Lua writes it "%lld" */
        luaL_addvalue(b);
        return;
    }
    lua_pushnumber(L, n);
    enc_token(L, b); /* also rejects NaN and Inf with cjson's message */
}

static void enc_value(lua_State *L, luaL_Buffer *b, const zerg_json *v,
                      int depth);

static void enc_array(lua_State *L, luaL_Buffer *b, const zerg_json *v,
                      int depth)
{
    luaL_addchar(b, '[');
    for (size_t i = 0; i < v->u.arr.n; i++) {
        if (i)
            luaL_addchar(b, ',');
        enc_value(L, b, v->u.arr.items[i], depth);
    }
    luaL_addchar(b, ']');
}

static void enc_object(lua_State *L, luaL_Buffer *b, const zerg_json *v,
                       int depth)
{
    luaL_addchar(b, '{');
    for (size_t i = 0; i < v->u.obj.n; i++) {
        if (i)
            luaL_addchar(b, ',');
        lua_pushstring(L, v->u.obj.keys[i]);
        enc_token(L, b);
        luaL_addchar(b, ':');
        enc_value(L, b, v->u.obj.vals[i], depth);
    }
    luaL_addchar(b, '}');
}

static void enc_value(lua_State *L, luaL_Buffer *b, const zerg_json *v,
                      int depth)
{
    if (!v)
        luaL_error(L, "Cannot serialise NULL value");
    switch (v->type) {
    case ZERG_JSON_NULL:
        luaL_addstring(b, "null");
        return;
    case ZERG_JSON_BOOL:
        luaL_addstring(b, v->u.boolean ? "true" : "false");
        return;
    case ZERG_JSON_NUMBER:
        enc_number(L, b, v->u.number);
        return;
    case ZERG_JSON_STRING:
        lua_pushlstring(L, v->u.str.s, v->u.str.len);
        enc_token(L, b);
        return;
    case ZERG_JSON_ARRAY:
    case ZERG_JSON_OBJECT:
        break;
    }
    /* Same limit and wording as cjson's own encoder. */
    if (++depth > JSON_MAX_DEPTH)
        luaL_error(L, "Cannot serialise, excessive nesting (%d)", depth);
    if (v->type == ZERG_JSON_ARRAY)
        enc_array(L, b, v, depth);
    else
        enc_object(L, b, v, depth);
}

/* Protected: arg 1 is the enc_ctx; returns the text. */
static int enc_run(lua_State *L)
{
    struct enc_ctx *ctx = lua_touserdata(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    enc_value(L, &b, ctx->root, 0);
    luaL_pushresult(&b);
    return 1;
}

/* Protected: cjson keeps its encode buffer between calls (it encodes one
 * token at a time here, so that saves a malloc per token), sized to the
 * largest token so far; switching keep_buffer off and on frees it. */
static int enc_trim(lua_State *L)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_cjson); /* cjson */
    cjson_config(L, "encode_keep_buffer", -1);
    lua_getfield(L, -1, "encode_keep_buffer"); /* cjson fn */
    lua_pushboolean(L, 1);
    lua_call(L, 1, 0); /* cjson */
    return 0;
}

char *zerg_json_encode(const zerg_json *v, size_t *len, struct zerg_err *err)
{
    struct enc_ctx ctx = {.root = v};
    char *out = NULL;
    if (state_call(enc_run, &ctx, -EINVAL, err) < 0)
        goto done;
    size_t n;
    const char *text = lua_tolstring(json_L, -1, &n);
    out = malloc(n + 1);
    if (!out) {
        zerg_err_set(err, -ENOMEM, "JSON: out of memory");
        goto done;
    }
    memcpy(out, text, n + 1);
    if (len)
        *len = n;
    if (n > JSON_TRIM_BYTES) {
        state_done();
        state_call(enc_trim, NULL, -ENOMEM, NULL);
    }
done:
    if (json_L)
        state_done();
    return out;
}

/* ---- decode --------------------------------------------------------- */

struct dec_ctx {
    const char *text;
    size_t len;
    int rewrite;     /* mark empty arrays before decoding */
    int rewritten;   /* the text decoded was the marked copy */
    zerg_json *root; /* owns everything built so far */
};

static size_t skip_ws(const char *s, size_t i, size_t len)
{
    while (i < len &&
           (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

/* Position of the next empty array "[ ]" outside strings at or after *pos,
 * or len.  Sets *end past its "]".  Tracks only string boundaries (a quote
 * opens or closes one, a backslash inside escapes the next byte), which is
 * all cjson's lexer needs to agree on for valid text. */
static size_t find_empty_array(const char *s, size_t len, size_t *pos,
                               size_t *end)
{
    int in_str = 0;
    for (size_t i = *pos; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[') {
            size_t j = skip_ws(s, i + 1, len);
            if (j < len && s[j] == ']') {
                *end = j + 1;
                *pos = *end;
                return i;
            }
        }
    }
    *pos = len;
    return len;
}

/* Pushes the text to decode: the caller's, or a copy with each empty array
 * replaced by the sentinel array.  Each scan resumes just past an empty
 * array, which is outside any string, so the in-string state stays right. */
static void dec_push_text(lua_State *L, struct dec_ctx *ctx)
{
    size_t pos = 0, end = 0, at;
    if (!ctx->rewrite ||
        (at = find_empty_array(ctx->text, ctx->len, &pos, &end)) == ctx->len) {
        lua_pushlstring(L, ctx->text, ctx->len);
        return;
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    size_t copied = 0;
    while (at < ctx->len) {
        luaL_addlstring(&b, ctx->text + copied, at - copied);
        luaL_addstring(&b, sentinel_tok);
        copied = end;
        at = find_empty_array(ctx->text, ctx->len, &pos, &end);
    }
    luaL_addlstring(&b, ctx->text + copied, ctx->len - copied);
    luaL_pushresult(&b);
    ctx->rewritten = 1;
}

static int is_sentinel_array(lua_State *L, int idx)
{
    if (lua_rawlen(L, idx) != 1)
        return 0;
    lua_rawgeti(L, idx, 1);
    size_t n;
    const char *s =
        lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
    int hit = s && n == sentinel_len && memcmp(s, sentinel, n) == 0;
    lua_pop(L, 1);
    return hit;
}

static void dec_value(lua_State *L, int idx, zerg_json **slot);

/* Fills node (already owned by the tree) from the array at idx. */
static void dec_array(lua_State *L, int idx, zerg_json *node)
{
    size_t n = lua_rawlen(L, idx);
    node->u.arr.items = calloc(n, sizeof *node->u.arr.items);
    if (!node->u.arr.items)
        luaL_error(L, "JSON: out of memory");
    node->u.arr.cap = n;
    for (size_t i = 0; i < n; i++) {
        node->u.arr.n = i + 1; /* the slot is NULL until filled */
        lua_rawgeti(L, idx, (lua_Integer)i + 1);
        dec_value(L, lua_gettop(L), &node->u.arr.items[i]);
        lua_pop(L, 1);
    }
}

static size_t table_count(lua_State *L, int idx)
{
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        n++;
        lua_pop(L, 1);
    }
    return n;
}

struct kv {
    char *key;
    zerg_json *val;
};

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

/* Sorts the object's keys; runs no Lua, so the scratch array cannot leak. */
static int obj_sort(zerg_json *node)
{
    size_t n = node->u.obj.n;
    if (n < 2)
        return 0;
    struct kv *kv = malloc(n * sizeof *kv);
    if (!kv)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        kv[i] = (struct kv){node->u.obj.keys[i], node->u.obj.vals[i]};
    qsort(kv, n, sizeof *kv, kv_cmp);
    for (size_t i = 0; i < n; i++) {
        node->u.obj.keys[i] = kv[i].key;
        node->u.obj.vals[i] = kv[i].val;
    }
    free(kv);
    return 0;
}

/* Fills node (already owned by the tree) from the object at idx. */
static void dec_object(lua_State *L, int idx, zerg_json *node)
{
    size_t n = table_count(L, idx);
    node->u.obj.keys = calloc(n ? n : 1, sizeof *node->u.obj.keys);
    node->u.obj.vals = calloc(n ? n : 1, sizeof *node->u.obj.vals);
    if (!node->u.obj.keys || !node->u.obj.vals)
        luaL_error(L, "JSON: out of memory");
    node->u.obj.cap = n;
    lua_pushnil(L);            /* ... nil */
    while (lua_next(L, idx)) { /* ... key value */
        size_t klen;
        const char *k = lua_tolstring(L, -2, &klen);
        if (strlen(k) != klen)
            luaL_error(L, "JSON object key contains a NUL character");
        char *key = strdup(k);
        if (!key)
            luaL_error(L, "JSON: out of memory");
        size_t at = node->u.obj.n++;
        node->u.obj.keys[at] = key;
        dec_value(L, lua_gettop(L), &node->u.obj.vals[at]);
        lua_pop(L, 1); /* ... key */
    }
    if (obj_sort(node) < 0)
        luaL_error(L, "JSON: out of memory");
}

static zerg_json *dec_leaf(lua_State *L, int idx)
{
    switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
        return zerg_json_bool(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        return zerg_json_num((double)lua_tonumber(L, idx));
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        return zerg_json_strn(s, n);
    }
    default: /* cjson.null is a NULL light userdata */
        return zerg_json_null();
    }
}

/* Converts the Lua value at idx into *slot.  A container is stored in its
 * slot before it is filled, so after a Lua error mid-way every node built
 * is reachable from ctx->root and freed with it. */
static void dec_value(lua_State *L, int idx, zerg_json **slot)
{
    if (lua_type(L, idx) != LUA_TTABLE) {
        *slot = dec_leaf(L, idx);
        if (!*slot)
            luaL_error(L, "JSON: out of memory");
        return;
    }
    /* cjson gives arrays keys 1..n and objects string keys only. */
    int is_arr = lua_rawlen(L, idx) > 0;
    *slot = is_arr ? zerg_json_arr() : zerg_json_obj();
    if (!*slot)
        luaL_error(L, "JSON: out of memory");
    luaL_checkstack(L, 4, "JSON nesting");
    if (!is_arr)
        dec_object(L, idx, *slot);
    else if (!is_sentinel_array(L, idx))
        dec_array(L, idx, *slot);
}

/* Protected: arg 1 is the dec_ctx; converts into ctx->root. */
static int dec_run(lua_State *L)
{
    struct dec_ctx *ctx = lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_decode); /* ctx decode */
    dec_push_text(L, ctx);                         /* ctx decode text */
    lua_call(L, 1, 1);                             /* ctx value */
    dec_value(L, 2, &ctx->root);
    return 0;
}

zerg_json *zerg_json_parse(const char *text, size_t len, struct zerg_err *err)
{
    struct dec_ctx ctx = {.text = text, .len = len, .rewrite = 1};
    int rc = state_call(dec_run, &ctx, ZERG_ECORRUPT, err);
    if (rc == ZERG_ECORRUPT && ctx.rewritten) {
        /* Report positions in the caller's text, not the marked copy. */
        zerg_json_free(ctx.root);
        ctx = (struct dec_ctx){.text = text, .len = len};
        state_done();
        rc = state_call(dec_run, &ctx, ZERG_ECORRUPT, err);
    }
    if (rc < 0) {
        zerg_json_free(ctx.root);
        ctx.root = NULL;
    }
    if (json_L)
        state_done();
    return ctx.root;
}
