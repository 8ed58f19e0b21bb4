/* sandbox.h - what the sandbox's bounded library functions need from the
 * VM (vm.c) and what vm.c needs from them.  Private to src/lua/.
 *
 *   sandbox_lib.c    string.rep and the table functions, bounded;
 *                    read-only library tables
 *   sandbox_match.c  string.find, match, gmatch and gsub with a matcher
 *                    that charges every step
 *
 * The count hook never runs inside a C function, so a library function
 * whose work is not bounded by its arguments' size (a pattern that
 * backtracks, string.rep of an empty string, a table whose __len lies)
 * charges its work here as it goes: one unit is one VM instruction. */
#ifndef ZERG_LUA_SANDBOX_H
#define ZERG_LUA_SANDBOX_H

#include <stdint.h>

#include <lua.h>

/* Counts units of work done inside a C function against the running
 * call's budgets; raises the budget error (as the hook does, so pcall
 * cannot swallow it) once a budget is spent.  The clock and the
 * interrupt flag are read every ZERG_VM_HOOK_EVERY units. */
void zerg_vm_charge(lua_State *L, int64_t units);

/* The VM's memory cap in bytes; 0 = none. */
int64_t zerg_vm_memory_cap(lua_State *L);

/* Bytes of string work that count as one instruction (memcpy of 256
 * bytes costs about what one VM instruction does). */
#define ZERG_SANDBOX_BYTES_PER_UNIT 256

/* Replaces the unbounded functions of the string and table libraries
 * (in the state's real library tables, so the method form
 * ("x"):rep(n) gets them too).  Inside the setup's protected call. */
void zerg_sandbox_bound_libs(lua_State *L);
void zerg_sandbox_bound_patterns(lua_State *L); /* sandbox_match.c */

/* Pushes a read-only view of the table at idx: reads, pairs and # see
 * the table, writes raise "the library table 'name' is read-only". */
void zerg_sandbox_push_frozen(lua_State *L, int idx, const char *name);

/* 1 when the value at idx is such a view. */
int zerg_sandbox_is_frozen(lua_State *L, int idx);

/* Hides the string metatable: getmetatable("") gives a read-only table
 * whose __index is the string view at idx, so ("").rep is reachable and
 * the real metatable and string table are not. */
void zerg_sandbox_hide_string_mt(lua_State *L, int view);

#endif
