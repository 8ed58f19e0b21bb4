/* convert.h - zerg_json trees <-> Lua values, the one converter for every
 * lua_State zerg runs: the policy VMs and the REPL (vm.c, policy*.c,
 * repl.c).  Private to src/lua/.
 *
 * The rules, the same as the JSON text layer's (src/base/json_text.c):
 * - nesting: at most ZERG_JSON_MAX_DEPTH tables (zerg/json.h), counting
 *   the outermost; one more is an error, in both directions;
 * - numbers: integral values of magnitude below ZERG_JSON_INT_LIMIT (2^53)
 *   go to Lua as integers; everything else as floats; Lua integers beyond
 *   2^53 round to the nearest double, as strtod does for text;
 * - a table whose keys are exactly 1..n (n >= 1) is an array; any other
 *   table, the empty one included, is an object (see zerg/json.h on empty
 *   containers) with its keys sorted bytewise;
 * - nil and a NULL light userdata are JSON null. */
#ifndef ZERG_LUA_CONVERT_H
#define ZERG_LUA_CONVERT_H

#include <stddef.h>

#include <lua.h>

#include "zerg/json.h"

/* Pushes v (NULL and JSON null push nil; null object members are left
 * out; integral numbers below 2^53 become integers).  Raises on
 * out-of-memory and on a tree nested deeper than ZERG_JSON_MAX_DEPTH. */
void zerg_lua_push_json(lua_State *L, const zerg_json *v);

/* Converts the value at idx into a new tree in *out (caller frees); never
 * raises and leaves the stack as it was.  Returns 0, -ENOMEM, or -EINVAL
 * for what JSON cannot hold (functions, userdata, threads, keys that are
 * neither strings nor integers, keys with a NUL byte, two keys that give
 * the same text such as 1 and "1", nesting past the limit or a cycle),
 * with a sentence in errbuf. */
int zerg_lua_to_tree(lua_State *L, int idx, zerg_json **out, char *errbuf,
                     size_t errlen);

/* zerg_lua_to_tree for callers that only need the sentence: the tree, or
 * NULL with errbuf set. */
zerg_json *zerg_lua_to_json(lua_State *L, int idx, char *errbuf, size_t errlen);

/* Replaces the table at idx by a copy in which keys that are decimal
 * integer text ("3") become integers (JSON objects can only have string
 * keys; `levels[3]` reads better in Lua). */
void zerg_lua_intkeys(lua_State *L, int idx);

/* 1 and *out set when s is canonical decimal integer text ("3", "-2", not
 * "03" or "3.0"): the keys zerg_lua_intkeys turns into integers. */
int zerg_lua_int_text(const char *s, lua_Integer *out);

#endif
