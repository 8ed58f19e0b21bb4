/* lua/json.c - JSON text <-> zerg_json trees, through lua-cjson.
 *
 * Every JSON token zerg reads or writes goes through lua-cjson 2.1.0 (the
 * Debian package), run in a private lua_State created on first use that
 * holds nothing but the cjson module.  All Lua work that can raise happens
 * inside one lua_pcall per request, so a cjson error or an out-of-memory
 * comes back as a zerg_err, never as an abort.  Not thread-safe: zerg is
 * single-threaded.
 *
 * Encoding.  cjson 2.1.0 decides "array or object" from the Lua table and
 * walks tables in hash order, so a whole-document cjson.encode would write
 * empty arrays as {} and shuffle keys from run to run.  Instead the C tree
 * is walked here: cjson.encode turns each string, key and fractional number
 * into its JSON token (all escaping and float formatting are cjson's), the
 * walk adds the brackets, commas and colons from the C type, so arrays stay
 * arrays even when empty and objects keep insertion order.  Integral numbers
 * within +-2^53 (ZERG_JSON_INT_LIMIT) are written as Lua integers
 * ("1700000000123"), because cjson's 14-digit "%.14g" would turn a
 * nanosecond timestamp into 1.7e+18.
 *
 * Decoding.  cjson.decode builds a Lua value and the one Lua -> tree
 * converter (convert.c, the same that reads policy results) turns it into
 * the tree, outside the pcall since it never raises.  Two facts are lost
 * on the way, and the converter's rules settle them:
 * - "[]" and "{}" both decode to an empty table (2.1.0 has neither
 *   decode_array_with_array_mt nor empty_array), which becomes an empty
 *   object that readers accept as an empty array too (zerg_json_is, see
 *   zerg/json.h).  The text is handed to cjson untouched: no second lexer
 *   that could disagree with cjson's about where strings end.
 * - key order.  A Lua table keeps none, and its lua_next order changes with
 *   the per-state string hash seed, so objects come out with their keys
 *   sorted bytewise: the same text always yields the same tree and
 *   re-encodes to the same bytes.
 * Both directions share one nesting limit, ZERG_JSON_MAX_DEPTH: cjson's
 * decode_max_depth and encode_max_depth, this file's tree walk and the
 * converter.  Object keys holding a NUL byte are rejected: tree keys are C
 * strings. */
#include "zerg/err.h"
#include "zerg/json.h"

#include "lua/convert.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua-cjson.h>
#include <lua.h>

/* After an output this big, release cjson's kept encode buffer. */
#define JSON_TRIM_BYTES (1u << 20)

static lua_State *json_L;
static int ref_cjson = LUA_NOREF;
static int ref_encode = LUA_NOREF, ref_decode = LUA_NOREF;

/* ---- state ---------------------------------------------------------- */

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
    cjson_config(L, "encode_max_depth", ZERG_JSON_MAX_DEPTH);
    cjson_config(L, "decode_max_depth", ZERG_JSON_MAX_DEPTH);
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
    if (n == floor(n) && fabs(n) < ZERG_JSON_INT_LIMIT) {
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
    if (++depth > ZERG_JSON_MAX_DEPTH)
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
};

/* Protected: arg 1 is the dec_ctx; returns cjson.decode(text). */
static int dec_run(lua_State *L)
{
    struct dec_ctx *ctx = lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_decode); /* ctx decode */
    lua_pushlstring(L, ctx->text, ctx->len);       /* ctx decode text */
    lua_call(L, 1, 1);                             /* ctx value */
    return 1;
}

zerg_json *zerg_json_parse(const char *text, size_t len, struct zerg_err *err)
{
    struct dec_ctx ctx = {.text = text, .len = len};
    zerg_json *root = NULL;
    char why[ZERG_ERR_MSG_MAX];
    if (state_call(dec_run, &ctx, ZERG_ECORRUPT, err) == 0) {
        int rc = zerg_lua_to_tree(json_L, -1, &root, why, sizeof why);
        if (rc == -ENOMEM)
            zerg_err_set(err, -ENOMEM, "JSON: out of memory");
        else if (rc < 0)
            zerg_err_set(err, ZERG_ECORRUPT, "%s", why);
    }
    if (json_L)
        state_done();
    return root;
}
