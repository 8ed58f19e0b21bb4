/* wiring.c - include/zerg/wiring.h: hooks the core calls vs hooks the
 * policies define, project overrides, and source files vs the build.
 *
 * Every check reports and carries on, so one run lists every problem. */
#include "zerg/wiring.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "lua/embedded.h"
#include "lua/vm.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/policy.h"

#define MAX_HOOKS 64

struct wiring {
    FILE *out;
    int problems;
};

static void problem(struct wiring *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void problem(struct wiring *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(w->out, fmt, ap);
    va_end(ap);
    fputc('\n', w->out);
    w->problems++;
}

static int in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

/* ---- bundled policies ------------------------------------------------ */

struct hooks_ctx {
    const struct zerg_embedded *e; /* the policy's source */
    char policy[64];               /* "backoff" */
    char names[MAX_HOOKS][80];     /* "backoff.delay", ... */
    int n;
};

/* Collects the function-valued keys of a bundled policy module, run from
 * the very source being checked (require would find the binary's copy). */
static int list_hooks(lua_State *L)
{
    struct hooks_ctx *c = lua_touserdata(L, 1);
    lua_pushfstring(L, "@%s", c->e->name);
    zerg_vm_load(L, lua_tostring(L, -1), c->e->text, c->e->len);
    lua_pushfstring(L, "policies.%s", c->policy);
    lua_call(L, 1, 1); /* ud chunkname module */
    if (!lua_istable(L, -1))
        return luaL_error(L, "policies/%s.lua returns a %s, not a table",
                          c->policy, luaL_typename(L, -1));
    lua_pushnil(L);
    while (lua_next(L, -2)) { /* ... module key value */
        if (lua_type(L, -2) == LUA_TSTRING && lua_isfunction(L, -1) &&
            c->n < MAX_HOOKS) {
            char name[sizeof c->names[0]];
            snprintf(name, sizeof name, "%s.%s", c->policy,
                     lua_tostring(L, -2));
            memcpy(c->names[c->n++], name, sizeof name);
        }
        lua_pop(L, 1);
    }
    return 0;
}

struct compile_ctx {
    const struct zerg_embedded *e;
};

static int compile_bundled(lua_State *L)
{
    struct compile_ctx *c = lua_touserdata(L, 1);
    lua_pushfstring(L, "@%s", c->e->name);
    zerg_vm_load(L, lua_tostring(L, -1), c->e->text, c->e->len);
    return 0;
}

/* The policy name of "policies/retry.lua" into buf, or NULL. */
static const char *policy_of(const char *path, char *buf, size_t size)
{
    size_t n = strlen(path);
    if (strncmp(path, "policies/", 9) != 0 || n < 14 ||
        strcmp(path + n - 4, ".lua") != 0)
        return NULL;
    snprintf(buf, size, "%.*s", (int)(n - 13), path + 9);
    return buf;
}

/* Every hook the core calls must be defined; returns 1 if it is. */
static int hook_defined(const char *hook, struct hooks_ctx *defs, int ndefs)
{
    for (int i = 0; i < ndefs; i++)
        for (int j = 0; j < defs[i].n; j++)
            if (strcmp(defs[i].names[j], hook) == 0)
                return 1;
    return 0;
}

static void check_bundled(struct wiring *w, struct zerg_vm *vm,
                          const struct zerg_embedded *lua)
{
    static struct hooks_ctx defs[16];
    int ndefs = 0;
    for (const struct zerg_embedded *e = lua; e->name; e++) {
        struct zerg_err err = {0};
        struct compile_ctx cc = {e};
        if (zerg_vm_cpcall(vm, compile_bundled, &cc, &err) != 0) {
            problem(w, "%s does not compile: %s", e->name, err.msg);
            continue;
        }
        char name[64];
        if (!policy_of(e->name, name, sizeof name))
            continue;
        if (!in_list(name, zerg_policy_names)) {
            problem(w, "%s: the core never asks a policy called '%s'", e->name,
                    name);
            continue;
        }
        if (ndefs == 16)
            continue;
        struct hooks_ctx *c = &defs[ndefs];
        memset(c, 0, sizeof *c);
        c->e = e;
        snprintf(c->policy, sizeof c->policy, "%s", name);
        if (zerg_vm_cpcall(vm, list_hooks, c, &err) != 0) {
            problem(w, "%s does not load: %s", e->name, err.msg);
            continue;
        }
        for (int j = 0; j < c->n; j++)
            if (!in_list(c->names[j], zerg_policy_hooks))
                problem(w,
                        "%s defines hook '%s', which the core never "
                        "calls",
                        e->name, c->names[j]);
        ndefs++;
    }
    for (const char *const *h = zerg_policy_hooks; *h; h++)
        if (!hook_defined(*h, defs, ndefs))
            problem(w,
                    "the core calls '%s', which no bundled policy "
                    "defines",
                    *h);
}

/* ---- overrides ------------------------------------------------------- */

static void check_override(struct wiring *w, struct zerg_vm *vm,
                           const char *dir, const char *file)
{
    char name[256], path[PATH_MAX];
    snprintf(name, sizeof name, "%.*s", (int)(strlen(file) - 4), file);
    if (zerg_fsio_path(path, sizeof path, "%s/%s", dir, file) != 0) {
        problem(w, "%s/%s: path too long", dir, file);
        return;
    }
    if (!in_list(name, zerg_policy_names)) {
        const char *hint = zerg_lua_suggest(name, zerg_policy_names);
        problem(w,
                "%s: no policy is called '%s' (policies: backoff, "
                "stale, respawn, retry, reconcile, scope)%s%s%s",
                path, name, hint ? "; did you mean '" : "", hint ? hint : "",
                hint ? ".lua'?" : "");
        return;
    }
    char *text = NULL;
    size_t len = 0;
    struct zerg_err err = {0};
    if (zerg_fsio_read_input(path, 1u << 20, &text, &len, &err) != 0 ||
        zerg_policy_load_override(vm, name, path, text, len, &err) != 0)
        problem(w, "%s", err.msg);
    free(text);
}

static void check_overrides(struct wiring *w, struct zerg_vm *vm,
                            const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (errno != ENOENT)
            problem(w, "cannot read %s: %s", dir, strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] != '.' && n > 4 &&
            strcmp(e->d_name + n - 4, ".lua") == 0)
            check_override(w, vm, dir, e->d_name);
    }
    closedir(d);
}

/* ---- sources vs the build -------------------------------------------- */

/* rel is "src/...": walks it under root. */
static void walk_sources(struct wiring *w, const char *root, char *rel,
                         size_t size)
{
    char path[PATH_MAX];
    if (zerg_fsio_path(path, sizeof path, "%s/%s", root, rel) != 0)
        return;
    DIR *d = opendir(path);
    if (!d)
        return;
    size_t base = strlen(rel);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        int n = snprintf(rel + base, size - base, "/%s", e->d_name);
        if (n < 0 || (size_t)n >= size - base)
            continue;
        struct stat st;
        char full[PATH_MAX];
        if (zerg_fsio_path(full, sizeof full, "%s/%s", root, rel) != 0 ||
            stat(full, &st) != 0)
            continue;
        size_t len = strlen(rel);
        if (S_ISDIR(st.st_mode))
            walk_sources(w, root, rel, size);
        else if (len > 2 && strcmp(rel + len - 2, ".c") == 0 &&
                 !in_list(rel, zerg_built_sources))
            problem(w,
                    "%s is not in the build (re-run cmake to pick it "
                    "up)",
                    rel);
        rel[base] = '\0';
    }
    closedir(d);
}

static void check_sources(struct wiring *w, const char *root)
{
    char src[PATH_MAX];
    struct stat st;
    if (zerg_fsio_path(src, sizeof src, "%s/src", root) != 0 ||
        stat(src, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(w->out,
                "note: source tree %s is absent; the built-sources "
                "check was skipped\n",
                root);
        return;
    }
    char rel[PATH_MAX] = "src";
    walk_sources(w, root, rel, sizeof rel);
    for (const char *const *f = zerg_built_sources; *f; f++) {
        char path[PATH_MAX];
        if (zerg_fsio_path(path, sizeof path, "%s/%s", root, *f) == 0 &&
            stat(path, &st) != 0)
            problem(w, "%s is built but missing from %s", *f, root);
    }
}

int zerg_wiring_check(const char *override_dir, FILE *out, struct zerg_err *err)
{
    return zerg_wiring_check_tree(override_dir, NULL, out, err);
}

static struct zerg_vm *wiring_vm(struct zerg_err *err)
{
    struct zerg_vm_opts o = {
        .mode = ZERG_VM_POLICY,
        .instruction_budget = 10 * 1000 * 1000, /* loading only */
        .memory_bytes = 64 << 20,
    };
    return zerg_vm_new(&o, err);
}

static int finish(struct wiring *w)
{
    if (w->problems == 0)
        fprintf(w->out, "All modules properly wired\n");
    return w->problems;
}

int zerg_wiring_check_tree(const char *override_dir, const char *source_dir,
                           FILE *out, struct zerg_err *err)
{
    struct zerg_vm *vm = wiring_vm(err);
    if (!vm)
        return err ? err->code : ZERG_EPOLICY;
    struct wiring w = {.out = out};
    check_bundled(&w, vm, zerg_embedded_lua);
    if (override_dir)
        check_overrides(&w, vm, override_dir);
    check_sources(&w, source_dir ? source_dir : zerg_source_dir);
    zerg_vm_free(vm);
    return finish(&w);
}

int zerg_wiring_check_bundled(const struct zerg_embedded *lua, FILE *out,
                              struct zerg_err *err)
{
    struct zerg_vm *vm = wiring_vm(err);
    if (!vm)
        return err ? err->code : ZERG_EPOLICY;
    struct wiring w = {.out = out};
    check_bundled(&w, vm, lua);
    zerg_vm_free(vm);
    return finish(&w);
}
