/* vm.h - the sandboxed Lua VM behind the policy engine, the REPL and the
 * wiring check.  Private to src/lua/: nothing else includes <lua.h>.
 *
 *   vm.c       lifecycle, sandbox, require, budgets, memory cap
 *   convert.c  zerg_json <-> Lua values (convert.h; also used by json.c)
 *   policy.c   include/zerg/policy.h on top of two VMs (hooks:
 *              policy_hooks.c, policy_reconcile.c, policy_call.h)
 *   repl.c     `zerg lua`
 *   complete.c what Tab and "did you mean" offer in `zerg lua`
 *   sandbox*.c the bounded string/table functions (sandbox.h)
 *   wiring.c   `zerg validate --check-wiring`
 *
 * Every Lua call goes through zerg_vm_cpcall: one protected call with a
 * traceback handler and fresh budgets, so no Lua error can reach the C
 * core as a longjmp or a panic. */
#ifndef ZERG_LUA_VM_H
#define ZERG_LUA_VM_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <lua.h>

#include "lua/convert.h"
#include "zerg/json.h"

struct zerg_err;

enum zerg_vm_mode {
    ZERG_VM_POLICY, /* globals read-only; print() goes to stderr */
    ZERG_VM_REPL,   /* globals writable; print() goes to opts.out */
};

struct zerg_vm_opts {
    enum zerg_vm_mode mode;
    int64_t instruction_budget;   /* VM instructions per call; 0 = none */
    int64_t time_budget_ns;       /* CPU time per call; 0 = none */
    int64_t memory_bytes;         /* cap on the whole VM; 0 = none */
    uint64_t seed;                /* math.random; 0 = ZERG_VM_SEED */
    int64_t (*cpu_ns)(void *ctx); /* NULL: this thread's CPU clock */
    void *cpu_ctx;
    volatile sig_atomic_t *interrupt; /* non-zero stops the call (Ctrl-C) */
    FILE *out;                        /* print() in REPL mode (NULL = stdout) */
};

#define ZERG_VM_SEED UINT64_C(0x5a455247) /* "ZERG": same run, same draws */

struct zerg_vm;

/* Opens a VM with the sandbox set up (inside one protected call).  NULL
 * with err set on failure. */
struct zerg_vm *zerg_vm_new(const struct zerg_vm_opts *o, struct zerg_err *err);
void zerg_vm_free(struct zerg_vm *vm); /* accepts NULL */
lua_State *zerg_vm_lua(struct zerg_vm *vm);

/* Runs fn(L) in protected mode with ud as a light userdata at index 1,
 * under fresh budgets.  Returns 0, or ZERG_EPOLICY with the message and
 * its traceback in err (memory exhaustion says "not enough memory"). */
int zerg_vm_cpcall(struct zerg_vm *vm, lua_CFunction fn, void *ud,
                   struct zerg_err *err);

/* Loads a text chunk into the sandbox (mode "t", _ENV = the sandbox) and
 * pushes it; raises the syntax error.  chunkname as for lua_load
 * ("@policies/stale.lua").  Only inside zerg_vm_cpcall. */
void zerg_vm_load(lua_State *L, const char *chunkname, const char *text,
                  size_t len);
/* Same, but returns the lua_load status (0 or LUA_ERRSYNTAX/LUA_ERRMEM)
 * with the function or the message pushed, for the REPL's "<eof>" test. */
int zerg_vm_try_load(lua_State *L, const char *chunkname, const char *text,
                     size_t len);

/* Pushes the sandbox's require(name) result; raises when unknown.  Only
 * inside zerg_vm_cpcall. */
void zerg_vm_require(lua_State *L, const char *name);

/* Pushes the sandbox environment table. */
void zerg_vm_push_env(lua_State *L);

/* Declares a global that may be nil (the REPL's `state` before a run):
 * reading it gives nil instead of "unknown global". */
void zerg_vm_declare(lua_State *L, const char *name);

/* Runs code as a chunk named name and returns its first result converted
 * to JSON in *result (may be NULL; nil gives JSON null).  For tests and the
 * wiring check. */
int zerg_vm_exec(struct zerg_vm *vm, const char *name, const char *code,
                 zerg_json **result, struct zerg_err *err);

/* Sets the global `name` to v converted (NULL v: declared, nil).  0 or
 * ZERG_EPOLICY (out of memory). */
int zerg_vm_set_global(struct zerg_vm *vm, const char *name, const zerg_json *v,
                       struct zerg_err *err);

/* Bytes the VM holds now. */
size_t zerg_vm_memory(const struct zerg_vm *vm);

/* The bundled file with that path ("policies/retry.lua"), or NULL. */
const struct zerg_embedded *zerg_vm_bundled(const char *path);

/* ---- policy.c (shared with the REPL and the wiring check) ---- */

/* The policy names ("backoff", ..., NULL) and their file names. */
extern const char *const zerg_policy_names[];

/* Loads the override source text of policy `name` into vm (registry
 * "zerg.overrides"[name]) after checking it returns a table whose keys all
 * exist in the bundled module (a typo gets "did you mean").  path names
 * the file in messages and tracebacks.  0 or ZERG_EPOLICY with err set. */
int zerg_policy_load_override(struct zerg_vm *vm, const char *name,
                              const char *path, const char *text, size_t len,
                              struct zerg_err *err);

/* Pushes the module that decides for `name` in vm: the loaded override,
 * else the bundled one.  Only inside zerg_vm_cpcall. */
void zerg_policy_push_module(lua_State *L, const char *name);

/* The closest candidate to word within a small edit distance, or NULL. */
const char *zerg_lua_suggest(const char *word, const char *const *cands);

#endif
