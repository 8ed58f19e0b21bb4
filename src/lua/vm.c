/* vm.c - the sandboxed Lua VM: lifecycle, sandbox, require, budgets and the
 * memory cap (see vm.h).
 *
 * Sandbox by allow-list (as Redis does): the standard libraries are opened
 * in the state's real globals, and every chunk runs with the sandbox's
 * _ENV, a table that reads through to the built-ins listed below (kept in
 * a table of their own, so no chunk can replace one for the others).  The
 * real globals are never reachable from a chunk.  Reading a name the sandbox
 * does not hold raises "unknown global 'foo'"; in policy mode writing one
 * raises too.
 *
 * Budgets (as HAProxy does): a count hook runs every ZERG_VM_HOOK_EVERY
 * instructions and checks the instruction count, this thread's CPU time
 * and the interrupt flag.  Once a budget trips, the hook re-arms itself to
 * run on every instruction and raises each time, so a script that catches
 * the error with pcall is stopped again at its next instruction: `while
 * true do pcall(f) end` ends.  The memory cap is a lua_Alloc that refuses
 * to grow past the limit; Lua turns that into a "not enough memory" error
 * that the protected call catches.
 *
 * The hook never runs inside a C function, so work done there is counted
 * too (sandbox.h): the bounded library functions charge their steps with
 * zerg_vm_charge, and every allocation charges one instruction per
 * ZERG_SANDBOX_BYTES_PER_UNIT bytes and, every ZERG_VM_HOOK_EVERY units,
 * makes the hook look at the budgets at the very next instruction.  The
 * library tables the sandbox sees are read-only (sandbox_lib.c). */
#include "lua/vm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lauxlib.h>
#include <lualib.h>

#include "lua/embedded.h"
#include "lua/sandbox.h"
#include "zerg/err.h"

/* Instructions between budget checks: a clock read every 1000 instructions
 * costs well under 1% of the run time. */
#define ZERG_VM_HOOK_EVERY 1000

#define REG_ENV "zerg.env"           /* the sandbox _ENV */
#define REG_DECLARED "zerg.declared" /* globals that may read as nil */
#define REG_LOADED "zerg.loaded"     /* require cache */
#define REG_BASE "zerg.base"         /* the built-ins behind the _ENV */

struct zerg_vm {
    lua_State *L;
    struct zerg_vm_opts o;
    size_t mem_used;
    int hook_every;
    int64_t insns;        /* instructions in the current call */
    int armed;            /* the count the hook runs at now */
    int64_t pending;      /* units charged since the last budget check */
    size_t alloc_bytes;   /* allocated, not yet charged */
    int64_t cpu_start_ns; /* CPU clock at the start of the call */
    int tripped;          /* a budget stopped the current call */
    uint64_t serial;      /* calls so far (require's loading markers) */
    char trip_msg[128];
};

/* ---- memory cap ------------------------------------------------------ */

static void vm_hook(lua_State *L, lua_Debug *ar);
static struct zerg_vm *vm_of(lua_State *L);

static void add_insns(struct zerg_vm *vm, int64_t units)
{
    vm->insns = units > INT64_MAX - vm->insns ? INT64_MAX : vm->insns + units;
}

/* Allocated bytes count as work.  An allocator cannot raise, so once a
 * hook period's worth is spent the hook is armed to run at the next
 * instruction, where it checks the budgets. */
static void charge_alloc(struct zerg_vm *vm, size_t bytes)
{
    vm->alloc_bytes += bytes;
    size_t units = vm->alloc_bytes / ZERG_SANDBOX_BYTES_PER_UNIT;
    if (units < (size_t)vm->hook_every)
        return;
    vm->alloc_bytes %= ZERG_SANDBOX_BYTES_PER_UNIT;
    add_insns(vm, (int64_t)units);
    if (vm->L && !vm->tripped && vm->armed != 1) {
        vm->armed = 1;
        lua_sethook(vm->L, vm_hook, LUA_MASKCOUNT, 1);
    }
}

static void *vm_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct zerg_vm *vm = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        vm->mem_used -= old;
        return NULL;
    }
    size_t cap = (size_t)vm->o.memory_bytes;
    if (cap && nsize > old && vm->mem_used - old + nsize > cap)
        return NULL; /* Lua collects and retries once, then raises */
    void *p = realloc(ptr, nsize);
    if (p)
        vm->mem_used = vm->mem_used - old + nsize;
    if (p && nsize > old)
        charge_alloc(vm, nsize - old);
    return p;
}

size_t zerg_vm_memory(const struct zerg_vm *vm)
{
    return vm->mem_used;
}

int64_t zerg_vm_memory_cap(lua_State *L)
{
    return vm_of(L)->o.memory_bytes;
}

/* ---- budgets --------------------------------------------------------- */

static struct zerg_vm *vm_of(lua_State *L)
{
    return *(struct zerg_vm **)lua_getextraspace(L);
}

static int64_t thread_cpu_ns(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t vm_cpu_ns(const struct zerg_vm *vm)
{
    if (vm->o.cpu_ns)
        return vm->o.cpu_ns(vm->o.cpu_ctx);
    return thread_cpu_ns(NULL);
}

/* The reason the current call must stop, or NULL. */
static const char *vm_over_budget(struct zerg_vm *vm)
{
    if (vm->o.interrupt && *vm->o.interrupt) {
        snprintf(vm->trip_msg, sizeof vm->trip_msg, "interrupted");
        return vm->trip_msg;
    }
    if (vm->o.instruction_budget > 0 && vm->insns >= vm->o.instruction_budget) {
        snprintf(vm->trip_msg, sizeof vm->trip_msg,
                 "instruction budget exceeded (%" PRId64 " instructions)",
                 vm->o.instruction_budget);
        return vm->trip_msg;
    }
    if (vm->o.time_budget_ns > 0) {
        int64_t used = vm_cpu_ns(vm) - vm->cpu_start_ns;
        if (used >= vm->o.time_budget_ns) {
            snprintf(vm->trip_msg, sizeof vm->trip_msg,
                     "time budget exceeded (%.3f ms of CPU)",
                     (double)vm->o.time_budget_ns / 1e6);
            return vm->trip_msg;
        }
    }
    return NULL;
}

static void vm_trip(struct zerg_vm *vm)
{
    vm->tripped = 1;
    vm->armed = 1;
    /* From now on every instruction raises: pcall cannot swallow it. */
    lua_sethook(vm->L, vm_hook, LUA_MASKCOUNT, 1);
}

static int vm_raise(lua_State *L, int level)
{
    luaL_where(L, level);
    lua_pushstring(L, vm_of(L)->trip_msg);
    lua_concat(L, 2);
    return lua_error(L);
}

static void vm_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    struct zerg_vm *vm = vm_of(L);
    if (!vm->tripped) {
        add_insns(vm, vm->armed);
        vm->pending = 0;
        if (vm->armed != vm->hook_every) { /* armed early by charge_alloc */
            vm->armed = vm->hook_every;
            lua_sethook(L, vm_hook, LUA_MASKCOUNT, vm->hook_every);
        }
        if (!vm_over_budget(vm))
            return;
        vm_trip(vm);
    }
    vm_raise(L, 0); /* the running function's current line */
}

void zerg_vm_charge(lua_State *L, int64_t units)
{
    struct zerg_vm *vm = vm_of(L);
    if (!vm->tripped) {
        add_insns(vm, units);
        vm->pending += units;
        if (vm->pending < vm->hook_every)
            return;
        vm->pending = 0;
        if (!vm_over_budget(vm))
            return;
        vm_trip(vm);
    }
    vm_raise(L, 1); /* the line that called the library function */
}

static void vm_budget_start(struct zerg_vm *vm)
{
    vm->serial++;
    vm->insns = 0;
    vm->pending = 0;
    vm->alloc_bytes = 0;
    vm->armed = vm->hook_every;
    vm->tripped = 0;
    vm->cpu_start_ns = vm->o.time_budget_ns > 0 ? vm_cpu_ns(vm) : 0;
    lua_sethook(vm->L, vm_hook, LUA_MASKCOUNT, vm->hook_every);
}

/* ---- sandbox functions ---------------------------------------------- */

static int env_index(lua_State *L)
{
    /* env key */
    lua_getfield(L, LUA_REGISTRYINDEX, REG_DECLARED); /* env key decl */
    lua_pushvalue(L, 2);
    if (lua_rawget(L, -2) != LUA_TNIL)
        return 0; /* declared, currently nil */
    luaL_where(L, 1);
    lua_pushfstring(L, "unknown global '%s'", luaL_tolstring(L, 2, NULL));
    lua_remove(L, -2);
    lua_concat(L, 2);
    return lua_error(L);
}

static int env_newindex_policy(lua_State *L)
{
    luaL_where(L, 1);
    lua_pushfstring(L, "assignment to undeclared global '%s' (use local)",
                    luaL_tolstring(L, 2, NULL));
    lua_remove(L, -2);
    lua_concat(L, 2);
    return lua_error(L);
}

/* 1 when the key at idx names a built-in of the sandbox (print, string,
 * ...): those live in one table behind every chunk's _ENV, and the REPL's
 * own Lua (lua/repl.lua, lua/inspect.lua) uses them too. */
static int is_builtin(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_BASE); /* base */
    lua_pushvalue(L, idx);
    int yes = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 2);
    return yes;
}

static int env_newindex_repl(lua_State *L)
{
    /* env key value */
    if (is_builtin(L, 2)) {
        luaL_where(L, 1);
        lua_pushfstring(L, "cannot replace the built-in '%s' (use local)",
                        luaL_tolstring(L, 2, NULL));
        lua_remove(L, -2);
        lua_concat(L, 2);
        return lua_error(L);
    }
    if (lua_type(L, 2) == LUA_TSTRING)
        zerg_vm_declare(L, lua_tostring(L, 2)); /* `x = nil; x` is nil */
    lua_rawset(L, 1);
    return 0;
}

void zerg_vm_declare(lua_State *L, const char *name)
{
    lua_getfield(L, LUA_REGISTRYINDEX, REG_DECLARED); /* decl */
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

void zerg_vm_push_env(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, REG_ENV);
}

/* Sets the first upvalue (_ENV) of the function on top to the sandbox. */
static void set_env(lua_State *L, int fn)
{
    zerg_vm_push_env(L);
    if (!lua_setupvalue(L, fn, 1))
        lua_pop(L, 1);
}

int zerg_vm_try_load(lua_State *L, const char *chunkname, const char *text,
                     size_t len)
{
    int rc = luaL_loadbufferx(L, text, len, chunkname, "t");
    if (rc == LUA_OK)
        set_env(L, lua_gettop(L));
    return rc;
}

void zerg_vm_load(lua_State *L, const char *chunkname, const char *text,
                  size_t len)
{
    if (zerg_vm_try_load(L, chunkname, text, len) != LUA_OK)
        lua_error(L);
}

/* load(chunk [, chunkname [, mode [, env]]]): text only, _ENV = sandbox
 * unless env is given.  Bytecode could break the VM's invariants. */
static int sb_load(lua_State *L)
{
    size_t len;
    const char *s = lua_tolstring(L, 1, &len);
    if (!s)
        return luaL_error(L, "load: only strings can be loaded here");
    const char *name = luaL_optstring(L, 2, s);
    int rc = luaL_loadbufferx(L, s, len, name, "t");
    if (rc != LUA_OK) {
        lua_pushnil(L); /* ... msg nil */
        lua_insert(L, -2);
        return 2;
    }
    int fn = lua_gettop(L);
    if (!lua_isnone(L, 4)) {
        lua_pushvalue(L, 4);
        if (!lua_setupvalue(L, fn, 1))
            lua_pop(L, 1);
    } else {
        set_env(L, fn);
    }
    return 1;
}

/* A metatable with __gc would run code at collection time, outside any
 * budget; refused. */
static int sb_setmetatable(lua_State *L)
{
    int t = lua_type(L, 2);
    luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
    if (lua_istable(L, 2) && lua_getfield(L, 2, "__gc") != LUA_TNIL)
        return luaL_error(L, "setmetatable: __gc is not allowed here");
    lua_settop(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    if (lua_getmetatable(L, 1) &&
        lua_getfield(L, -1, "__metatable") != LUA_TNIL)
        return luaL_error(L, "cannot change a protected metatable");
    lua_settop(L, 2);
    lua_setmetatable(L, 1);
    return 1;
}

/* rawset, except on a read-only library table or over a built-in of
 * the _ENV: either would change what every other chunk of the VM sees. */
static int sb_rawset(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checkany(L, 2);
    luaL_checkany(L, 3);
    if (zerg_sandbox_is_frozen(L, 1))
        return luaL_error(L, "rawset: a library table is read-only");
    zerg_vm_push_env(L);
    int env = lua_rawequal(L, 1, -1);
    lua_pop(L, 1);
    if (env && is_builtin(L, 2))
        return luaL_error(L, "rawset: cannot replace the built-in '%s'",
                          luaL_tolstring(L, 2, NULL));
    lua_settop(L, 3);
    lua_rawset(L, 1);
    return 1;
}

/* collectgarbage: "count" and a full "collect" only; the other options
 * change the collector for the whole VM. */
static int sb_collectgarbage(lua_State *L)
{
    const char *opt = luaL_optstring(L, 1, "collect");
    if (strcmp(opt, "count") == 0) {
        int kb = lua_gc(L, LUA_GCCOUNT, 0), b = lua_gc(L, LUA_GCCOUNTB, 0);
        lua_pushnumber(L, (lua_Number)kb + (lua_Number)b / 1024);
        return 1;
    }
    if (strcmp(opt, "collect") == 0) {
        lua_gc(L, LUA_GCCOLLECT, 0);
        lua_pushinteger(L, 0);
        return 1;
    }
    return luaL_error(L, "collectgarbage: option '%s' is not allowed here",
                      opt);
}

/* The message handler of a sandboxed xpcall.  An error raised by the
 * budget hook calls the handler from inside the hook, where Lua runs no
 * hooks at all: a handler that loops there could never be stopped.  So
 * once a budget has tripped the user's handler is not called. */
static int sb_msgh(lua_State *L)
{
    if (vm_of(L)->tripped)
        return 1; /* the message as it is */
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static int sb_xpcall(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, sb_msgh, 1);
    lua_replace(L, 2); /* f msgh args */
    lua_pushvalue(L, 1);
    lua_insert(L, 3); /* f msgh f args */
    int ok = lua_pcall(L, n - 2, LUA_MULTRET, 2) == LUA_OK;
    lua_pushboolean(L, ok);
    lua_insert(L, 3); /* f msgh ok results-or-error */
    return lua_gettop(L) - 2;
}

static int sb_print(lua_State *L)
{
    struct zerg_vm *vm = vm_of(L);
    FILE *f =
        vm->o.mode == ZERG_VM_REPL ? (vm->o.out ? vm->o.out : stdout) : stderr;
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        size_t len;
        const char *s = luaL_tolstring(L, i, &len);
        if (i > 1)
            fputc('\t', f);
        fwrite(s, 1, len, f);
        lua_pop(L, 1);
    }
    fputc('\n', f);
    fflush(f);
    return 0;
}

/* ---- require --------------------------------------------------------- */

const struct zerg_embedded *zerg_vm_bundled(const char *path)
{
    for (const struct zerg_embedded *e = zerg_embedded_lua; e->name; e++)
        if (strcmp(e->name, path) == 0)
            return e;
    return NULL;
}

/* "zerg.util" -> "lua/util.lua", "policies.retry" -> "policies/retry.lua";
 * 0 or -1 when the name is in neither namespace. */
static int module_path(const char *name, char *out, size_t size)
{
    const char *rest;
    const char *dir;
    if (strncmp(name, "zerg.", 5) == 0) {
        rest = name + 5, dir = "lua";
    } else if (strncmp(name, "policies.", 9) == 0) {
        rest = name + 9, dir = "policies";
    } else {
        return -1;
    }
    if (!*rest || strchr(rest, '.') || strchr(rest, '/'))
        return -1;
    int n = snprintf(out, size, "%s/%s.lua", dir, rest);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* The bundled module names, for "not found" messages. */
static void push_module_list(lua_State *L)
{
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (const struct zerg_embedded *e = zerg_embedded_lua; e->name; e++) {
        const char *ns =
            strncmp(e->name, "lua/", 4) == 0 ? "zerg." : "policies.";
        const char *base = strchr(e->name, '/') + 1;
        if (e != zerg_embedded_lua)
            luaL_addstring(&b, ", ");
        luaL_addstring(&b, ns);
        luaL_addlstring(&b, base, strlen(base) - 4); /* drop ".lua" */
    }
    luaL_pushresult(&b);
}

static int sb_require(lua_State *L)
{
    struct zerg_vm *vm = vm_of(L);
    const char *name = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_LOADED); /* name loaded */
    /* A "loading" marker is the serial of the call that set it: one left
     * behind by a call that failed half-way is ignored, not a loop. */
    void *marker = (void *)(uintptr_t)vm->serial;
    int t = lua_getfield(L, 2, name);
    if (t == LUA_TLIGHTUSERDATA && lua_touserdata(L, -1) == marker)
        return luaL_error(L, "require: loop while loading '%s'", name);
    if (t != LUA_TNIL && t != LUA_TLIGHTUSERDATA)
        return 1;
    lua_pop(L, 1);
    char path[128];
    const struct zerg_embedded *e = NULL;
    if (module_path(name, path, sizeof path) == 0)
        e = zerg_vm_bundled(path);
    if (!e) {
        push_module_list(L);
        return luaL_error(L, "module '%s' not found (bundled modules: %s)",
                          name, lua_tostring(L, -1));
    }
    lua_pushlightuserdata(L, marker);
    lua_setfield(L, 2, name);
    lua_pushfstring(L, "@%s", path); /* name loaded chunkname */
    zerg_vm_load(L, lua_tostring(L, -1), e->text, e->len);
    lua_pushstring(L, name);
    lua_call(L, 1, 1); /* name loaded cn result */
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, 2, name);
    return 1;
}

void zerg_vm_require(lua_State *L, const char *name)
{
    lua_pushcfunction(L, sb_require);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
}

/* ---- setup ----------------------------------------------------------- */

static const char *const base_allowed[] = {
    "assert",   "error",    "getmetatable", "ipairs", "next",   "pairs",
    "pcall",    "rawequal", "rawget",       "rawlen", "select", "tonumber",
    "tostring", "type",     "_VERSION",     NULL,
};

static const luaL_Reg sandbox_funcs[] = {
    {"load", sb_load},
    {"setmetatable", sb_setmetatable},
    {"collectgarbage", sb_collectgarbage},
    {"print", sb_print},
    {"xpcall", sb_xpcall},
    {"require", sb_require},
    {"rawset", sb_rawset},
    {NULL, NULL},
};

static void open_libs(lua_State *L)
{
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base},        {LUA_TABLIBNAME, luaopen_table},
        {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8},  {NULL, NULL},
    };
    for (const luaL_Reg *l = libs; l->name; l++) {
        luaL_requiref(L, l->name, l->func, 1);
        lua_pop(L, 1);
    }
}

/* Seeds math.random, then removes what the sandbox must not have: reseeding
 * from the time (math.randomseed()) and string.dump (bytecode). */
static void trim_libs(lua_State *L, uint64_t seed)
{
    lua_getglobal(L, LUA_MATHLIBNAME); /* math */
    lua_getfield(L, -1, "randomseed"); /* math randomseed */
    lua_pushinteger(L, (lua_Integer)(seed & 0x7fffffffffffffff));
    lua_call(L, 1, 0); /* math */
    lua_pushnil(L);
    lua_setfield(L, -2, "randomseed");
    lua_pop(L, 1);
    lua_getglobal(L, LUA_STRLIBNAME); /* string */
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_pop(L, 1);
}

/* The built-ins: the allowed base functions, read-only views of the
 * libraries and the sandbox's own functions, in a table of their own
 * (registry REG_BASE) that an unknown name falls through to raise. */
static void build_base(lua_State *L, int env)
{
    lua_newtable(L); /* base */
    for (const char *const *n = base_allowed; *n; n++) {
        lua_getglobal(L, *n);
        lua_setfield(L, -2, *n);
    }
    static const char *const libs[] = {
        LUA_TABLIBNAME, LUA_STRLIBNAME, LUA_MATHLIBNAME, LUA_UTF8LIBNAME, NULL,
    };
    for (const char *const *n = libs; *n; n++) {
        lua_getglobal(L, *n);                /* base lib */
        zerg_sandbox_push_frozen(L, -1, *n); /* base lib view */
        lua_setfield(L, -3, *n);
        lua_pop(L, 1);
    }
    lua_getfield(L, -1, LUA_STRLIBNAME);
    zerg_sandbox_hide_string_mt(L, -1);
    lua_pop(L, 1);
    luaL_setfuncs(L, sandbox_funcs, 0);
    lua_pushvalue(L, env);
    lua_setfield(L, -2, "_G"); /* base._G = env */
    lua_newtable(L);           /* base mt */
    lua_pushcfunction(L, env_index);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_BASE);
}

/* The _ENV of every chunk: empty but for the declared globals (and, in
 * the REPL, the session's own), reading through to the built-ins. */
static void build_env(lua_State *L, enum zerg_vm_mode mode)
{
    lua_newtable(L); /* env */
    int env = lua_gettop(L);
    build_base(L, env);
    lua_newtable(L); /* env mt */
    lua_getfield(L, LUA_REGISTRYINDEX, REG_BASE);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, mode == ZERG_VM_REPL ? env_newindex_repl
                                              : env_newindex_policy);
    lua_setfield(L, -2, "__newindex");
    lua_pushliteral(L, "sandbox");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, env);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_ENV);
}

static int vm_setup(lua_State *L)
{
    struct zerg_vm *vm = lua_touserdata(L, 1);
    open_libs(L);
    trim_libs(L, vm->o.seed ? vm->o.seed : ZERG_VM_SEED);
    zerg_sandbox_bound_libs(L);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_DECLARED);
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_LOADED);
    build_env(L, vm->o.mode);
    return 0;
}

/* ---- calls ----------------------------------------------------------- */

/* Message handler: the error with a traceback of where it was raised. */
static int vm_msgh(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg) {
        /* No user __tostring once a budget tripped: see sb_msgh. */
        if (!vm_of(L)->tripped && luaL_callmeta(L, 1, "__tostring") &&
            lua_type(L, -1) == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        else
            msg = lua_pushfstring(L, "(error object is a %s value)",
                                  luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* A traceback with nothing but C frames ("[C]: in ?") says nothing a
 * policy author can use; drop it. */
static void strip_c_traceback(struct zerg_err *err)
{
    if (!err)
        return;
    char *tb = strstr(err->msg, "\nstack traceback:");
    if (!tb)
        return;
    for (char *nl = strchr(tb + 1, '\n'); nl; nl = strchr(nl + 1, '\n'))
        if (strncmp(nl + 1, "\t[C]", 4) != 0)
            return;
    *tb = '\0';
}

int zerg_vm_cpcall(struct zerg_vm *vm, lua_CFunction fn, void *ud,
                   struct zerg_err *err)
{
    lua_State *L = vm->L;
    int top = lua_gettop(L);
    vm_budget_start(vm);
    lua_pushcfunction(L, vm_msgh); /* msgh */
    lua_pushcfunction(L, fn);      /* msgh fn */
    lua_pushlightuserdata(L, ud);  /* msgh fn ud */
    int rc = lua_pcall(L, 1, 0, top + 1);
    if (rc == LUA_OK) {
        lua_settop(L, top);
        return 0;
    }
    const char *msg = lua_tostring(L, -1);
    if (rc == LUA_ERRMEM && vm->o.memory_bytes > 0)
        zerg_err_set(err, ZERG_EPOLICY,
                     "not enough memory (policy_memory_bytes is %" PRId64 ")",
                     vm->o.memory_bytes);
    else
        zerg_err_set(err, ZERG_EPOLICY, "%s", msg ? msg : "unknown error");
    strip_c_traceback(err);
    lua_settop(L, top);
    if (rc == LUA_ERRMEM)
        lua_gc(L, LUA_GCCOLLECT, 0); /* give the memory back for next call */
    return ZERG_EPOLICY;
}

lua_State *zerg_vm_lua(struct zerg_vm *vm)
{
    return vm->L;
}

struct zerg_vm *zerg_vm_new(const struct zerg_vm_opts *o, struct zerg_err *err)
{
    struct zerg_vm *vm = calloc(1, sizeof *vm);
    if (!vm) {
        zerg_err_set(err, -ENOMEM, "cannot create the Lua VM: %s",
                     strerror(ENOMEM));
        return NULL;
    }
    vm->o = *o;
    vm->hook_every = ZERG_VM_HOOK_EVERY;
    if (o->instruction_budget > 0 && o->instruction_budget < vm->hook_every)
        vm->hook_every = (int)o->instruction_budget;
    vm->L = lua_newstate(vm_alloc, vm);
    if (!vm->L) {
        free(vm);
        zerg_err_set(err, -ENOMEM, "cannot create the Lua VM: %s",
                     strerror(ENOMEM));
        return NULL;
    }
    *(struct zerg_vm **)lua_getextraspace(vm->L) = vm;
    if (zerg_vm_cpcall(vm, vm_setup, vm, err) != 0) {
        zerg_err_prefix(err, "cannot set up the Lua VM");
        zerg_vm_free(vm);
        return NULL;
    }
    return vm;
}

void zerg_vm_free(struct zerg_vm *vm)
{
    if (!vm)
        return;
    lua_close(vm->L);
    free(vm);
}
