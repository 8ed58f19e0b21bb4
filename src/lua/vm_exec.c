/* vm_exec.c - running a chunk for its result and setting a global from
 * C (vm.h): the small entry points the tests and `zerg validate
 * --check-wiring` use, on top of zerg_vm_cpcall. */
#include <string.h>

#include <lauxlib.h>

#include "lua/vm.h"

struct exec_ctx {
    const char *name, *code;
    zerg_json **result;
    char errbuf[256];
};

static int exec_chunk(lua_State *L)
{
    struct exec_ctx *c = lua_touserdata(L, 1);
    lua_pushfstring(L, "=%s", c->name);
    zerg_vm_load(L, lua_tostring(L, -1), c->code, strlen(c->code));
    lua_call(L, 0, 1);
    if (!c->result)
        return 0;
    *c->result = zerg_lua_to_json(L, -1, c->errbuf, sizeof c->errbuf);
    if (!*c->result)
        return luaL_error(L, "result: %s", c->errbuf);
    return 0;
}

int zerg_vm_exec(struct zerg_vm *vm, const char *name, const char *code,
                 zerg_json **result, struct zerg_err *err)
{
    struct exec_ctx c = {.name = name, .code = code, .result = result};
    if (result)
        *result = NULL;
    return zerg_vm_cpcall(vm, exec_chunk, &c, err);
}

struct global_ctx {
    const char *name;
    const zerg_json *v;
};

static int set_global(lua_State *L)
{
    struct global_ctx *c = lua_touserdata(L, 1);
    zerg_vm_declare(L, c->name);
    zerg_vm_push_env(L);         /* ud env */
    lua_pushstring(L, c->name);  /* ud env name */
    zerg_lua_push_json(L, c->v); /* ud env name value */
    lua_rawset(L, -3);           /* ud env */
    return 0;
}

int zerg_vm_set_global(struct zerg_vm *vm, const char *name, const zerg_json *v,
                       struct zerg_err *err)
{
    struct global_ctx c = {name, v};
    return zerg_vm_cpcall(vm, set_global, &c, err);
}
