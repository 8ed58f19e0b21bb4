/* policy.c - include/zerg/policy.h: the recovery decisions, asked of Lua.
 *
 * Two VMs.  The bundled policies run in a VM that never runs project code,
 * so nothing an override does (a runaway loop, a memory leak kept in a
 * module upvalue, `string.format = nil`) can break the fallback.  The
 * overrides from .zerg/policies/ run in a second VM, rebuilt from their
 * source on every reload so an old version leaves nothing behind.
 *
 * Each decision (zerg_policy_run): build the arguments inside a protected
 * call, call the override's hook if it defines one, validate and clamp the
 * answer; on any failure log policy_error and ask the bundled hook; should
 * that fail too (it cannot, short of a bug) use the same rule written in
 * C.  The answer and its inputs go back to the caller as `why`.  The
 * hooks themselves: policy_hooks.c, policy_reconcile.c and
 * policy_scope.c. */
#include "zerg/text.h"
#include "zerg/policy.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "lua/policy_call.h"
#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/log.h"

#define NPOLICY 6
#define REG_OVERRIDES "zerg.overrides"
#define OVERRIDE_MAX_BYTES (1u << 20)

const char *const zerg_policy_names[] = {
    "backoff", "stale", "respawn", "retry", "reconcile", "scope", NULL,
};
_Static_assert(sizeof zerg_policy_names / sizeof *zerg_policy_names ==
                   NPOLICY + 1,
               "NPOLICY counts zerg_policy_names");

const char *const zerg_policy_hooks[] = {
    "backoff.delay", "stale.task",
    "stale.worker",  "respawn.decide",
    "retry.decide",  "reconcile.check",
    "scope.decide",  "scope.config",
    "scope.missing", NULL,
};

struct override {
    char path[PATH_MAX];
    char *text; /* last source that loaded; NULL = none */
    size_t len;
    int seen; /* the file existed at the last look */
    struct timespec mtime;
    off_t size;
};

struct zerg_policy {
    const struct zerg_config *cfg;
    struct zerg_log *log;
    struct zerg_vm *bundled;
    struct zerg_vm *user; /* NULL while no override is active */
    char *override_dir;
    struct override ov[NPOLICY];
    int64_t errors;
    int force_builtin; /* zerg_policy_force_builtin */
};

/* ---- names ----------------------------------------------------------- */

const char *zerg_lua_suggest(const char *word, const char *const *cands)
{
    const char *best = NULL;
    size_t best_d = 3; /* at most two edits away */
    for (; *cands; cands++) {
        size_t d = zerg_edit_distance(word, *cands);
        if (d < best_d && d < strlen(*cands)) {
            best = *cands;
            best_d = d;
        }
    }
    return best;
}

static int policy_index(const char *name)
{
    for (int i = 0; zerg_policy_names[i]; i++)
        if (strcmp(zerg_policy_names[i], name) == 0)
            return i;
    return -1;
}

/* The hooks of one policy without the "name." prefix, NULL-terminated. */
static void hooks_of(const char *policy, const char *out[8])
{
    size_t n = 0, plen = strlen(policy);
    for (const char *const *h = zerg_policy_hooks; *h && n < 7; h++)
        if (strncmp(*h, policy, plen) == 0 && (*h)[plen] == '.')
            out[n++] = *h + plen + 1;
    out[n] = NULL;
}

/* ---- loading overrides ----------------------------------------------- */

struct load_ctx {
    const char *name, *path, *text;
    size_t len;
};

/* Raises unless every key of the override (at idx) exists in the bundled
 * module (at bidx).  Reports the alphabetically first stray key so the
 * message does not depend on hash order. */
static void check_keys(lua_State *L, int idx, int bidx,
                       const struct load_ctx *c)
{
    const char *bad = NULL;
    lua_pushnil(L);
    while (lua_next(L, idx)) { /* ... key value */
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            luaL_error(L,
                       "%s: the module has a %s key; policy modules "
                       "map hook names to functions",
                       c->path, luaL_typename(L, -1));
        }
        const char *k = lua_tostring(L, -1);
        lua_pushvalue(L, -1);
        if (lua_rawget(L, bidx) == LUA_TNIL && (!bad || strcmp(k, bad) < 0))
            bad = k; /* k stays alive: it is a key of the module */
        lua_pop(L, 1);
    }
    if (!bad)
        return;
    const char *hooks[8];
    hooks_of(c->name, hooks);
    const char *hint = zerg_lua_suggest(bad, hooks);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (const char *const *h = hooks; *h; h++) {
        luaL_addstring(&b, h == hooks ? "" : ", ");
        luaL_addstring(&b, *h);
    }
    luaL_pushresult(&b);
    luaL_error(L, "%s: '%s' is not a hook of the %s policy (hooks: %s)%s%s%s",
               c->path, bad, c->name, lua_tostring(L, -1),
               hint ? "; did you mean '" : "", hint ? hint : "",
               hint ? "'?" : "");
}

static int load_override(lua_State *L)
{
    struct load_ctx *c = lua_touserdata(L, 1);
    lua_pushfstring(L, "@%s", c->path); /* ud chunkname */
    zerg_vm_load(L, lua_tostring(L, -1), c->text, c->len);
    lua_pushstring(L, c->name);
    lua_call(L, 1, 1); /* ud cn module */
    int idx = lua_gettop(L);
    if (!lua_istable(L, idx))
        return luaL_error(L,
                          "%s: a policy file must return a table of "
                          "hooks, this one returns %s",
                          c->path, luaL_typename(L, idx));
    lua_pushfstring(L, "policies.%s", c->name);
    zerg_vm_require(L, lua_tostring(L, -1)); /* ud cn module n base */
    check_keys(L, idx, lua_gettop(L), c);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_OVERRIDES);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, REG_OVERRIDES);
    } /* ... overrides */
    lua_pushvalue(L, idx);
    lua_setfield(L, -2, c->name);
    return 0;
}

/* A load error for a person: the message without the traceback, which at
 * load time only shows C frames. */
static void strip_traceback(struct zerg_err *err)
{
    char *tb = strstr(err->msg, "\nstack traceback:");
    if (tb)
        *tb = '\0';
}

int zerg_policy_load_override(struct zerg_vm *vm, const char *name,
                              const char *path, const char *text, size_t len,
                              struct zerg_err *err)
{
    struct load_ctx c = {name, path, text, len};
    if (zerg_vm_cpcall(vm, load_override, &c, err) != 0) {
        strip_traceback(err);
        return ZERG_EPOLICY;
    }
    return 0;
}

void zerg_policy_push_module(lua_State *L, const char *name)
{
    lua_getfield(L, LUA_REGISTRYINDEX, REG_OVERRIDES); /* ovs */
    if (lua_istable(L, -1)) {
        if (lua_getfield(L, -1, name) == LUA_TTABLE) { /* ovs module */
            lua_remove(L, -2);
            return;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_pushfstring(L, "policies.%s", name);
    zerg_vm_require(L, lua_tostring(L, -1)); /* modname module */
    lua_remove(L, -2);
}

static int preload_bundled(lua_State *L)
{
    for (const char *const *n = zerg_policy_names; *n; n++) {
        lua_pushfstring(L, "policies.%s", *n);
        zerg_vm_require(L, lua_tostring(L, -1));
        lua_pop(L, 2);
    }
    return 0;
}

static struct zerg_vm *policy_vm(const struct zerg_config *cfg,
                                 struct zerg_err *err)
{
    struct zerg_vm_opts o = {
        .mode = ZERG_VM_POLICY,
        .instruction_budget = cfg->policy_instruction_budget,
        .time_budget_ns = cfg->policy_time_budget_ns,
        .memory_bytes = cfg->policy_memory_bytes,
        .seed = ZERG_VM_SEED,
    };
    struct zerg_vm *vm = zerg_vm_new(&o, err);
    if (vm && zerg_vm_cpcall(vm, preload_bundled, NULL, err) != 0) {
        zerg_err_prefix(err, "bundled policies");
        zerg_vm_free(vm);
        vm = NULL;
    }
    return vm;
}

/* Builds a VM holding texts[i] (NULL = no override for policy i).  On a
 * failure *failed is the policy that failed and err says why. */
static struct zerg_vm *user_vm(struct zerg_policy *p, char *const texts[],
                               const size_t lens[], int *failed,
                               struct zerg_err *err)
{
    struct zerg_vm *vm = policy_vm(p->cfg, err);
    *failed = -1;
    for (int i = 0; vm && i < NPOLICY; i++) {
        if (!texts[i])
            continue;
        if (zerg_policy_load_override(vm, zerg_policy_names[i], p->ov[i].path,
                                      texts[i], lens[i], err) != 0) {
            *failed = i;
            zerg_vm_free(vm);
            vm = NULL;
        }
    }
    return vm;
}

/* Records what stat says about override i; 1 if it changed since the last
 * look. */
static int ov_stat(struct override *o)
{
    struct stat st;
    /* Anything by that name counts, so a FIFO or a directory is reported
     * by ov_read instead of silently leaving the bundled policy on. */
    int seen = stat(o->path, &st) == 0;
    int changed = seen != o->seen;
    if (seen)
        changed |= st.st_mtim.tv_sec != o->mtime.tv_sec ||
                   st.st_mtim.tv_nsec != o->mtime.tv_nsec ||
                   st.st_size != o->size;
    o->seen = seen;
    o->mtime = seen ? st.st_mtim : (struct timespec){0, 0};
    o->size = seen ? st.st_size : 0;
    return changed;
}

static int ov_read(const struct override *o, char **text, size_t *len,
                   struct zerg_err *err)
{
    /* Never blocks on a FIFO; a link must stay inside the project. */
    int rc = zerg_fsio_read_input(o->path, OVERRIDE_MAX_BYTES, text, len, err);
    if (rc == -EFBIG)
        zerg_err_set(err, rc, "%s: larger than %u bytes", o->path,
                     OVERRIDE_MAX_BYTES);
    return rc;
}

/* Every *.lua in the override directory must be named after a policy:
 * a misnamed file would otherwise be silently ignored. */
static int scan_override_dir(const char *dir, struct zerg_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT || errno == ENOTDIR
                   ? 0
                   : zerg_err_set(err, -errno, "cannot read %s: %s", dir,
                                  strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || n < 5 ||
            strcmp(e->d_name + n - 4, ".lua") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 4), e->d_name);
        if (policy_index(name) >= 0)
            continue;
        const char *hint = zerg_lua_suggest(name, zerg_policy_names);
        rc = zerg_err_set(err, ZERG_EPOLICY,
                          "%s/%s: no policy is called '%s' (policies: "
                          "backoff, stale, respawn, retry, reconcile, "
                          "scope)%s%s%s",
                          dir, e->d_name, name, hint ? "; did you mean '" : "",
                          hint ? hint : "", hint ? ".lua'?" : "");
    }
    closedir(d);
    return rc;
}

static int load_overrides(struct zerg_policy *p, struct zerg_err *err)
{
    char *texts[NPOLICY] = {0};
    size_t lens[NPOLICY] = {0};
    int rc = scan_override_dir(p->override_dir, err), any = 0;
    for (int i = 0; rc == 0 && i < NPOLICY; i++) {
        struct override *o = &p->ov[i];
        ov_stat(o);
        if (o->seen && (rc = ov_read(o, &texts[i], &lens[i], err)) == 0)
            any = 1;
    }
    if (rc == 0 && any) {
        int failed;
        p->user = user_vm(p, texts, lens, &failed, err);
        rc = p->user ? 0 : ZERG_EPOLICY;
    }
    for (int i = 0; i < NPOLICY; i++) {
        if (rc == 0) {
            p->ov[i].text = texts[i], p->ov[i].len = lens[i];
        } else {
            free(texts[i]);
        }
    }
    return rc;
}

struct zerg_policy *zerg_policy_new(const char *override_dir,
                                    const struct zerg_config *cfg,
                                    struct zerg_log *log, struct zerg_err *err)
{
    struct zerg_policy *p = calloc(1, sizeof *p);
    if (!p) {
        zerg_err_set(err, -ENOMEM, "policies: %s", strerror(ENOMEM));
        return NULL;
    }
    p->cfg = cfg;
    p->log = log;
    p->bundled = policy_vm(cfg, err);
    if (!p->bundled)
        goto fail;
    if (!override_dir)
        return p;
    p->override_dir = strdup(override_dir);
    if (!p->override_dir) {
        zerg_err_set(err, -ENOMEM, "policies: %s", strerror(ENOMEM));
        goto fail;
    }
    for (int i = 0; i < NPOLICY; i++) {
        if (zerg_fsio_path(p->ov[i].path, sizeof p->ov[i].path, "%s/%s.lua",
                           override_dir, zerg_policy_names[i]) != 0) {
            zerg_err_set(err, -ENAMETOOLONG, "%s: path too long", override_dir);
            goto fail;
        }
    }
    if (load_overrides(p, err) != 0)
        goto fail;
    return p;
fail:
    zerg_policy_free(p);
    return NULL;
}

void zerg_policy_free(struct zerg_policy *p)
{
    if (!p)
        return;
    zerg_vm_free(p->bundled);
    zerg_vm_free(p->user);
    for (int i = 0; i < NPOLICY; i++)
        free(p->ov[i].text);
    free(p->override_dir);
    free(p);
}

int64_t zerg_policy_error_count(const struct zerg_policy *p)
{
    return p->errors;
}

void zerg_policy_force_builtin(struct zerg_policy *p, int on)
{
    p->force_builtin = on != 0;
}

/* ---- policy_error ---------------------------------------------------- */

static void first_line(char *dst, size_t size, const char *msg)
{
    size_t n = strcspn(msg, "\n");
    if (n >= size)
        n = size - 1;
    memcpy(dst, msg, n);
    dst[n] = '\0';
}

/* What the caller does instead, for the log line: data.used is the key. */
static const char *used_text(const char *used)
{
    if (strcmp(used, "bundled") == 0)
        return "used the bundled policy";
    if (strcmp(used, "builtin") == 0)
        return "used the built-in rule";
    if (strcmp(used, "last good") == 0)
        return "kept the last good version";
    return "dropped those fixes";
}

/* Counts a failure and logs policy_error.  used: "bundled" (the override
 * failed), "builtin" (the bundled one failed too), "last good" (a reload
 * failed), "dropped" (some reconcile fixes were unusable). */
void zerg_policy_report(struct zerg_policy *p, const char *policy,
                        const char *hook, const char *file, const char *error,
                        const char *used)
{
    p->errors++;
    if (!p->log)
        return;
    zerg_json *data = zerg_json_obj();
    if (data) {
        zerg_json_set_str(data, "policy", policy);
        zerg_json_set_str(data, "file", file);
        zerg_json_set_str(data, "hook", hook);
        zerg_json_set_str(data, "error", error);
        zerg_json_set_str(data, "used", used);
    }
    char line[256];
    first_line(line, sizeof line, error);
    zerg_log_event(p->log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "policy_error", NULL,
                   data, "Policy %s (%s) failed: %s; %s", hook, file, line,
                   used_text(used));
}

/* ---- reload ---------------------------------------------------------- */

static void report_reload(struct zerg_policy *p, int i)
{
    if (!p->log)
        return;
    zerg_json *data = zerg_json_obj();
    if (data) {
        zerg_json_set_str(data, "policy", zerg_policy_names[i]);
        zerg_json_set_str(data, "file", p->ov[i].path);
        zerg_json_set_bool(data, "active", p->ov[i].text != NULL);
    }
    zerg_log_event(p->log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "policy_reload", NULL,
                   data, "Policy %s %s", zerg_policy_names[i],
                   p->ov[i].text ? "reloaded from its override"
                                 : "back to the bundled one");
}

/* Reads the changed overrides into texts[] (unchanged ones keep their last
 * good text); a file that cannot be read counts as broken. */
static void reload_read(struct zerg_policy *p, const int changed[],
                        char *texts[], size_t lens[])
{
    for (int i = 0; i < NPOLICY; i++) {
        struct override *o = &p->ov[i];
        texts[i] = o->text, lens[i] = o->len;
        if (!changed[i] || !o->seen) {
            if (changed[i])
                texts[i] = NULL; /* removed: back to the bundled one */
            continue;
        }
        struct zerg_err e = {0};
        if (ov_read(o, &texts[i], &lens[i], &e) != 0) {
            zerg_policy_report(p, zerg_policy_names[i], "reload", o->path,
                               e.msg, "last good");
            texts[i] = o->text, lens[i] = o->len;
        }
    }
}

int zerg_policy_reload(struct zerg_policy *p)
{
    if (!p->override_dir)
        return 0;
    int changed[NPOLICY] = {0}, any = 0;
    for (int i = 0; i < NPOLICY; i++)
        any |= changed[i] = ov_stat(&p->ov[i]);
    if (!any)
        return 0;
    char *texts[NPOLICY];
    size_t lens[NPOLICY];
    reload_read(p, changed, texts, lens);
    struct zerg_vm *vm = NULL;
    int active = 0, failed;
    for (;;) {
        active = 0;
        for (int i = 0; i < NPOLICY; i++)
            active |= texts[i] != NULL;
        struct zerg_err e = {0};
        if (!active || (vm = user_vm(p, texts, lens, &failed, &e)))
            break;
        if (failed < 0 || texts[failed] == p->ov[failed].text) {
            /* A last good text no longer loads: keep the old VM whole. */
            zerg_policy_report(p, "reload", "reload", p->override_dir, e.msg,
                               "last good");
            for (int i = 0; i < NPOLICY; i++)
                if (texts[i] != p->ov[i].text)
                    free(texts[i]);
            return 0;
        }
        zerg_policy_report(p, zerg_policy_names[failed], "reload",
                           p->ov[failed].path, e.msg,
                           p->ov[failed].text ? "last good" : "bundled");
        free(texts[failed]);
        texts[failed] = p->ov[failed].text, lens[failed] = p->ov[failed].len;
    }
    int reloaded = 0;
    for (int i = 0; i < NPOLICY; i++) {
        if (texts[i] == p->ov[i].text)
            continue;
        free(p->ov[i].text);
        p->ov[i].text = texts[i], p->ov[i].len = lens[i];
        reloaded++;
        report_reload(p, i);
    }
    zerg_vm_free(p->user);
    p->user = vm;
    return reloaded;
}

/* ---- calling a hook -------------------------------------------------- */

static const char *const source_names[] = {"bundled", "override", "builtin"};

const struct zerg_config *zerg_policy_config(const struct zerg_policy *p)
{
    return p->cfg;
}

int zerg_policy_override_active(const struct zerg_policy *p, const char *name)
{
    int i = policy_index(name);
    return p->user && i >= 0 && p->ov[i].text;
}

static int call_hook(lua_State *L)
{
    struct zerg_policy_call *c = lua_touserdata(L, 1);
    if (c->use_override) {
        lua_getfield(L, LUA_REGISTRYINDEX, REG_OVERRIDES);
        if (!lua_istable(L, -1) ||
            lua_getfield(L, -1, c->policy) != LUA_TTABLE) {
            c->absent = 1;
            return 0;
        }
    } else {
        lua_pushfstring(L, "policies.%s", c->policy);
        zerg_vm_require(L, lua_tostring(L, -1));
    }                                     /* ... module */
    int t = lua_getfield(L, -1, c->hook); /* ... module fn */
    if (t == LUA_TNIL && c->use_override) {
        c->absent = 1;
        return 0;
    }
    if (t != LUA_TFUNCTION)
        return luaL_error(L, "%s is a %s, not a function", c->full,
                          lua_typename(L, t));
    int fn = lua_gettop(L);
    int nargs = c->push(L, c);       /* ... fn args */
    lua_call(L, nargs, LUA_MULTRET); /* ... results */
    c->read(L, c, fn, lua_gettop(L) - fn + 1);
    return 0;
}

static void use_builtin(struct zerg_policy_call *c)
{
    c->builtin(c);
    c->src = ZERG_POLICY_BUILTIN;
    snprintf(c->file, sizeof c->file, "(built in)");
}

void zerg_policy_run(struct zerg_policy_call *c)
{
    struct zerg_policy *p = c->p;
    struct zerg_err e = {0};
    int i = policy_index(c->policy);
    c->override_error[0] = '\0';
    if (p->force_builtin) {
        use_builtin(c);
        return;
    }
    if (p->user && p->ov[i].text) {
        c->use_override = 1;
        c->absent = 0;
        if (zerg_vm_cpcall(p->user, call_hook, c, &e) == 0 && !c->absent) {
            c->src = ZERG_POLICY_OVERRIDE;
            snprintf(c->file, sizeof c->file, "%s", p->ov[i].path);
            return;
        }
        if (!c->absent) {
            zerg_policy_report(p, c->policy, c->full, p->ov[i].path, e.msg,
                               "bundled");
            first_line(c->override_error, sizeof c->override_error, e.msg);
        }
    }
    c->use_override = 0;
    snprintf(c->file, sizeof c->file, "policies/%s.lua", c->policy);
    if (zerg_vm_cpcall(p->bundled, call_hook, c, &e) == 0) {
        c->src = ZERG_POLICY_BUNDLED;
        return;
    }
    zerg_policy_report(p, c->policy, c->full, c->file, e.msg, "builtin");
    use_builtin(c);
}

zerg_json *zerg_policy_why(const struct zerg_policy_call *c)
{
    zerg_json *w = zerg_json_obj();
    if (!w)
        return NULL;
    zerg_json_set_str(w, "policy", source_names[c->src]);
    zerg_json_set_str(w, "file", c->file);
    zerg_json_set_str(w, "hook", c->full);
    if (c->override_error[0])
        zerg_json_set_str(w, "override_error", c->override_error);
    return w;
}
