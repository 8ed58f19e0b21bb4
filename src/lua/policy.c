/* policy.c - include/zerg/policy.h: the recovery decisions, asked of Lua.
 *
 * Two VMs.  The bundled policies run in a VM that never runs project code,
 * so nothing an override does (a runaway loop, a memory leak kept in a
 * module upvalue, `string.format = nil`) can break the fallback.  The
 * overrides from .zerg/policies/ run in a second VM, rebuilt from their
 * source on every reload so an old version leaves nothing behind.
 *
 * Each decision: build the arguments inside a protected call, call the
 * override's hook if it defines one, validate and clamp the answer; on any
 * failure log policy_error and ask the bundled hook; should that fail too
 * (it cannot, short of a bug) use the same rule written in C.  The answer
 * and its inputs go back to the caller as `why`. */
#include "zerg/policy.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "lua/vm.h"
#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/log.h"

#define NPOLICY 5
#define REG_OVERRIDES "zerg.overrides"
#define OVERRIDE_MAX_BYTES (1u << 20)
#define DELAY_MAX_S 3600.0 /* no policy may park anything longer */
#define REASON_MAX 63

const char *const zerg_policy_names[] = {
    "backoff", "stale", "respawn", "retry", "reconcile", NULL,
};

const char *const zerg_policy_hooks[] = {
    "backoff.delay", "stale.task",   "stale.worker", "respawn.decide",
    "retry.decide",  "reconcile.check", NULL,
};

struct override {
    char path[PATH_MAX];
    char *text;          /* last source that loaded; NULL = none */
    size_t len;
    int seen;            /* the file existed at the last look */
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
};

/* ---- names ----------------------------------------------------------- */

/* Optimal string alignment distance: a swapped pair ("dealy") costs 1. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 63 || m > 63)
        return SIZE_MAX;
    size_t d[64][64];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[n][m];
}

const char *zerg_lua_suggest(const char *word, const char *const *cands)
{
    const char *best = NULL;
    size_t best_d = 3; /* at most two edits away */
    for (; *cands; cands++) {
        size_t d = edit_distance(word, *cands);
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
    while (lua_next(L, idx)) {                 /* ... key value */
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            luaL_error(L, "%s: the module has a %s key; policy modules "
                       "map hook names to functions", c->path,
                       luaL_typename(L, -1));
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
    lua_pushfstring(L, "@%s", c->path);             /* ud chunkname */
    zerg_vm_load(L, lua_tostring(L, -1), c->text, c->len);
    lua_pushstring(L, c->name);
    lua_call(L, 1, 1);                              /* ud cn module */
    int idx = lua_gettop(L);
    if (!lua_istable(L, idx))
        return luaL_error(L, "%s: a policy file must return a table of "
                          "hooks, this one returns %s", c->path,
                          luaL_typename(L, idx));
    lua_pushfstring(L, "policies.%s", c->name);
    zerg_vm_require(L, lua_tostring(L, -1));        /* ud cn module n base */
    check_keys(L, idx, lua_gettop(L), c);
    lua_getfield(L, LUA_REGISTRYINDEX, REG_OVERRIDES);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, REG_OVERRIDES);
    }                                               /* ... overrides */
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
                              const char *path, const char *text,
                              size_t len, struct zerg_err *err)
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
    zerg_vm_require(L, lua_tostring(L, -1));            /* modname module */
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
        if (zerg_policy_load_override(vm, zerg_policy_names[i],
                                      p->ov[i].path, texts[i], lens[i],
                                      err) != 0) {
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
    int seen = stat(o->path, &st) == 0 && S_ISREG(st.st_mode);
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
    int rc = zerg_fsio_read_all(o->path, OVERRIDE_MAX_BYTES, text, len, err);
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
                          "backoff, stale, respawn, retry, reconcile)%s%s%s",
                          dir, e->d_name, name,
                          hint ? "; did you mean '" : "", hint ? hint : "",
                          hint ? ".lua'?" : "");
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
                                    struct zerg_log *log,
                                    struct zerg_err *err)
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
            zerg_err_set(err, -ENAMETOOLONG, "%s: path too long",
                         override_dir);
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

/* ---- policy_error ---------------------------------------------------- */

static void first_line(char *dst, size_t size, const char *msg)
{
    size_t n = strcspn(msg, "\n");
    if (n >= size)
        n = size - 1;
    memcpy(dst, msg, n);
    dst[n] = '\0';
}

static void report_error(struct zerg_policy *p, const char *policy,
                         const char *hook, const char *file,
                         const char *error, const char *used)
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
    zerg_log_event(p->log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "policy_error",
                   NULL, data, "Policy %s failed, using the %s one: %s",
                   hook, used, line);
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
    zerg_log_event(p->log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "policy_reload",
                   NULL, data, "Policy %s %s", zerg_policy_names[i],
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
            report_error(p, zerg_policy_names[i], "load", o->path, e.msg,
                         "last good");
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
            report_error(p, "reload", "load", p->override_dir, e.msg,
                         "last good");
            for (int i = 0; i < NPOLICY; i++)
                if (texts[i] != p->ov[i].text)
                    free(texts[i]);
            return 0;
        }
        report_error(p, zerg_policy_names[failed], "load",
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

enum source { SRC_BUNDLED, SRC_OVERRIDE, SRC_BUILTIN };
static const char *const source_names[] = {"bundled", "override", "builtin"};

/* One decision.  Each hook embeds this as the first member of its own
 * struct with its inputs and outputs; push and read run inside the
 * protected call, read raises on an answer it cannot use. */
struct call {
    struct zerg_policy *p;
    const char *policy, *hook, *full; /* "retry", "decide", "retry.decide" */
    int (*push)(lua_State *L, struct call *c);
    void (*read)(lua_State *L, struct call *c, int first, int nres);
    void (*builtin)(struct call *c);
    int use_override;
    int absent;              /* the override does not define this hook */
    enum source src;
    char override_error[512];
    char file[PATH_MAX];
};

static int call_hook(lua_State *L)
{
    struct call *c = lua_touserdata(L, 1);
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
    }                                              /* ... module */
    int t = lua_getfield(L, -1, c->hook);          /* ... module fn */
    if (t == LUA_TNIL && c->use_override) {
        c->absent = 1;
        return 0;
    }
    if (t != LUA_TFUNCTION)
        return luaL_error(L, "%s is a %s, not a function", c->full,
                          lua_typename(L, t));
    int fn = lua_gettop(L);
    int nargs = c->push(L, c);                     /* ... fn args */
    lua_call(L, nargs, LUA_MULTRET);               /* ... results */
    c->read(L, c, fn, lua_gettop(L) - fn + 1);
    return 0;
}

static void policy_run(struct call *c)
{
    struct zerg_policy *p = c->p;
    struct zerg_err e = {0};
    int i = policy_index(c->policy);
    c->override_error[0] = '\0';
    if (p->user && p->ov[i].text) {
        c->use_override = 1;
        c->absent = 0;
        if (zerg_vm_cpcall(p->user, call_hook, c, &e) == 0 && !c->absent) {
            c->src = SRC_OVERRIDE;
            snprintf(c->file, sizeof c->file, "%s", p->ov[i].path);
            return;
        }
        if (!c->absent) {
            report_error(p, c->policy, c->full, p->ov[i].path, e.msg,
                         "bundled");
            first_line(c->override_error, sizeof c->override_error, e.msg);
        }
    }
    c->use_override = 0;
    snprintf(c->file, sizeof c->file, "policies/%s.lua", c->policy);
    if (zerg_vm_cpcall(p->bundled, call_hook, c, &e) == 0) {
        c->src = SRC_BUNDLED;
        return;
    }
    report_error(p, c->policy, c->full, c->file, e.msg, "builtin");
    c->builtin(c);
    c->src = SRC_BUILTIN;
    snprintf(c->file, sizeof c->file, "(built in)");
}

static zerg_json *why_new(const struct call *c)
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

/* ---- building arguments, reading answers ----------------------------- */

static void set_num(lua_State *L, const char *k, double v)
{
    lua_pushnumber(L, v);
    lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v)
{
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

static void set_bool(lua_State *L, const char *k, int v)
{
    lua_pushboolean(L, v);
    lua_setfield(L, -2, k);
}

static double secs(int64_t ns)
{
    return zerg_ns_to_s(ns);
}

/* Copies a reason, cut at REASON_MAX bytes (never inside a UTF-8
 * sequence). */
static void copy_reason(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src), max = size - 1 < REASON_MAX ? size - 1
                                                        : REASON_MAX;
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
            n--;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static const char *got(lua_State *L, int idx, int nres, int first)
{
    return idx - first >= nres ? "nothing" : luaL_typename(L, idx);
}

/* A `verdict [, reason]` answer (stale, respawn). */
static void read_verdict(lua_State *L, const struct call *c, int first,
                         int nres, int *verdict, char *reason, size_t size)
{
    if (nres < 1 || lua_type(L, first) != LUA_TBOOLEAN)
        luaL_error(L, "%s returned %s, expected true or false", c->full,
                   got(L, first, nres, first));
    *verdict = lua_toboolean(L, first);
    reason[0] = '\0';
    if (nres >= 2 && !lua_isnil(L, first + 1)) {
        if (lua_type(L, first + 1) != LUA_TSTRING)
            luaL_error(L, "%s returned a %s as its reason, expected a "
                       "string", c->full, luaL_typename(L, first + 1));
        copy_reason(reason, size, lua_tostring(L, first + 1));
    }
}

/* A delay in seconds: a number, not NaN, clamped to [0, DELAY_MAX_S]. */
static double check_delay(lua_State *L, const struct call *c, int idx,
                          int *clamped)
{
    double d = lua_tonumber(L, idx);
    if (isnan(d))
        luaL_error(L, "%s returned NaN as a delay", c->full);
    *clamped = d < 0 || d > DELAY_MAX_S;
    return d < 0 ? 0 : d > DELAY_MAX_S ? DELAY_MAX_S : d;
}

/* ---- backoff.delay --------------------------------------------------- */

struct backoff_call {
    struct call c;
    int spawn;               /* kind "spawn", else "task" */
    int attempt;
    enum zerg_backoff strategy;
    double base, max;        /* seconds */
    double delay;            /* answer, seconds */
    int clamped;
};

static void push_backoff_opts(lua_State *L, const struct backoff_call *b)
{
    lua_createtable(L, 0, 4);
    set_str(L, "strategy", zerg_backoff_name(b->strategy));
    set_num(L, "base", b->base);
    set_num(L, "max", b->max);
    set_str(L, "kind", b->spawn ? "spawn" : "task");
}

static int backoff_push(lua_State *L, struct call *c)
{
    struct backoff_call *b = (struct backoff_call *)c;
    lua_pushinteger(L, b->attempt);
    push_backoff_opts(L, b);
    return 2;
}

static void backoff_read(lua_State *L, struct call *c, int first, int nres)
{
    struct backoff_call *b = (struct backoff_call *)c;
    if (nres < 1 || lua_type(L, first) != LUA_TNUMBER)
        luaL_error(L, "%s returned %s, expected a number of seconds",
                   c->full, got(L, first, nres, first));
    b->delay = check_delay(L, c, first, &b->clamped);
}

static double backoff_formula(enum zerg_backoff s, double base, double max,
                              int attempt)
{
    int n = attempt < 1 ? 1 : attempt;
    double d = s == ZERG_BACKOFF_LINEAR  ? base * n
               : s == ZERG_BACKOFF_FIXED ? base
                                         : base * pow(2.0, n - 1);
    return d > max ? max : d;
}

static void backoff_builtin(struct call *c)
{
    struct backoff_call *b = (struct backoff_call *)c;
    double d = backoff_formula(b->strategy, b->base, b->max, b->attempt);
    b->delay = d < 0 ? 0 : d > DELAY_MAX_S ? DELAY_MAX_S : d;
    b->clamped = 0;
}

static void backoff_init(struct backoff_call *b, struct zerg_policy *p,
                         const char *kind, int attempt)
{
    const struct zerg_config *cfg = p->cfg;
    b->c = (struct call){.p = p, .policy = "backoff", .hook = "delay",
                         .full = "backoff.delay", .push = backoff_push,
                         .read = backoff_read, .builtin = backoff_builtin};
    b->spawn = kind && strcmp(kind, "spawn") == 0;
    b->attempt = attempt;
    b->strategy = b->spawn ? cfg->spawn_backoff_strategy
                           : cfg->backoff_strategy;
    b->base = secs(b->spawn ? cfg->spawn_backoff_base_ns
                            : cfg->backoff_base_ns);
    b->max = secs(b->spawn ? cfg->spawn_backoff_max_ns : cfg->backoff_max_ns);
}

int64_t zerg_policy_backoff_ns(struct zerg_policy *p, const char *kind,
                               int attempt, zerg_json **why)
{
    struct backoff_call b;
    backoff_init(&b, p, kind, attempt);
    policy_run(&b.c);
    if (why && (*why = why_new(&b.c))) {
        zerg_json_set_str(*why, "kind", b.spawn ? "spawn" : "task");
        zerg_json_set_num(*why, "attempt", attempt);
        zerg_json_set_str(*why, "strategy", zerg_backoff_name(b.strategy));
        zerg_json_set_num(*why, "base", b.base);
        zerg_json_set_num(*why, "max", b.max);
        zerg_json_set_num(*why, "delay", b.delay);
        if (b.clamped)
            zerg_json_set_bool(*why, "clamped", 1);
    }
    return zerg_s_to_ns(b.delay);
}

/* ---- stale.task / stale.worker --------------------------------------- */

struct stale_call {
    struct call c;
    int is_task;
    const char *task_id;
    int worker;
    int64_t seq;
    double started, last, now; /* seconds; last = progress or change */
    double threshold;
    int stale;
    char reason[REASON_MAX + 1];
};

static void push_stale_opts(lua_State *L, const struct zerg_config *cfg)
{
    lua_createtable(L, 0, 3);
    set_num(L, "task_stale_timeout", secs(cfg->task_stale_timeout_ns));
    set_num(L, "heartbeat_stale_threshold",
            secs(cfg->heartbeat_stale_threshold_ns));
    set_num(L, "heartbeat_interval", secs(cfg->heartbeat_interval_ns));
}

static int stale_push(lua_State *L, struct call *c)
{
    struct stale_call *s = (struct stale_call *)c;
    lua_createtable(L, 0, 4);
    set_int(L, "worker", s->worker);
    if (s->is_task) {
        set_str(L, "id", s->task_id ? s->task_id : "");
        set_num(L, "started", s->started);
        set_num(L, "last_progress", s->last);
    } else {
        set_int(L, "seq", s->seq);
        set_num(L, "last_change", s->last);
    }
    lua_pushnumber(L, s->now);
    push_stale_opts(L, c->p->cfg);
    return 3;
}

static void stale_read(lua_State *L, struct call *c, int first, int nres)
{
    struct stale_call *s = (struct stale_call *)c;
    read_verdict(L, c, first, nres, &s->stale, s->reason, sizeof s->reason);
}

static void stale_builtin(struct call *c)
{
    struct stale_call *s = (struct stale_call *)c;
    s->stale = s->now - s->last >= s->threshold;
    snprintf(s->reason, sizeof s->reason, "%s",
             s->stale ? "age at or over the threshold" : "");
}

static void stale_why(const struct stale_call *s, zerg_json **why)
{
    if (!why || !(*why = why_new(&s->c)))
        return;
    if (s->is_task)
        zerg_json_set_str(*why, "task", s->task_id);
    else
        zerg_json_set_num(*why, "seq", (double)s->seq);
    zerg_json_set_num(*why, "worker", s->worker);
    zerg_json_set_num(*why, "elapsed", s->now - s->last);
    zerg_json_set_num(*why, "threshold", s->threshold);
    zerg_json_set_bool(*why, "stale", s->stale);
    if (s->reason[0])
        zerg_json_set_str(*why, "reason", s->reason);
}

static struct stale_call stale_init(struct zerg_policy *p, int is_task)
{
    return (struct stale_call){
        .c = {.p = p, .policy = "stale",
              .hook = is_task ? "task" : "worker",
              .full = is_task ? "stale.task" : "stale.worker",
              .push = stale_push, .read = stale_read,
              .builtin = stale_builtin},
        .is_task = is_task,
        .threshold = secs(is_task ? p->cfg->task_stale_timeout_ns
                                  : p->cfg->heartbeat_stale_threshold_ns),
    };
}

int zerg_policy_stale_task(struct zerg_policy *p, const char *task_id,
                           int worker, int64_t started_ns,
                           int64_t last_progress_ns, int64_t now_ns,
                           zerg_json **why)
{
    struct stale_call s = stale_init(p, 1);
    s.task_id = task_id;
    s.worker = worker;
    s.started = secs(started_ns);
    s.last = secs(last_progress_ns);
    s.now = secs(now_ns);
    policy_run(&s.c);
    stale_why(&s, why);
    return s.stale;
}

int zerg_policy_stale_worker(struct zerg_policy *p, int worker, int64_t seq,
                             int64_t last_change_ns, int64_t now_ns,
                             zerg_json **why)
{
    struct stale_call s = stale_init(p, 0);
    s.worker = worker;
    s.seq = seq;
    s.last = secs(last_change_ns);
    s.now = secs(now_ns);
    policy_run(&s.c);
    stale_why(&s, why);
    return s.stale;
}

/* ---- respawn.decide -------------------------------------------------- */

struct respawn_call {
    struct call c;
    const struct zerg_respawn_in *in;
    int respawn;
    char reason[REASON_MAX + 1];
};

static int respawn_push(lua_State *L, struct call *c)
{
    const struct zerg_respawn_in *in = ((struct respawn_call *)c)->in;
    const struct zerg_config *cfg = c->p->cfg;
    lua_createtable(L, 0, 7);                      /* slot */
    set_int(L, "id", in->slot);
    set_int(L, "respawn_count", in->respawn_count);
    lua_createtable(L, 0, 2);                      /* slot exit */
    if (in->exit_code >= 0)
        set_int(L, "code", in->exit_code);
    if (in->signal > 0)
        set_int(L, "signal", in->signal);
    lua_setfield(L, -2, "exit");                   /* slot */
    set_num(L, "uptime", secs(in->uptime_ns));
    set_bool(L, "was_ready", in->was_ready);
    set_int(L, "work_left", in->work_left);
    lua_createtable(L, 0, 2);                      /* slot opts */
    set_bool(L, "auto_respawn", cfg->auto_respawn);
    set_int(L, "max_respawn_attempts", cfg->max_respawn_attempts);
    return 2;
}

static void respawn_read(lua_State *L, struct call *c, int first, int nres)
{
    struct respawn_call *r = (struct respawn_call *)c;
    read_verdict(L, c, first, nres, &r->respawn, r->reason,
                 sizeof r->reason);
}

static void respawn_builtin(struct call *c)
{
    struct respawn_call *r = (struct respawn_call *)c;
    const struct zerg_config *cfg = c->p->cfg;
    const char *why = !cfg->auto_respawn ? "auto_respawn disabled"
                      : r->in->respawn_count >= cfg->max_respawn_attempts
                          ? "respawn cap reached"
                      : r->in->work_left <= 0 ? "no work left"
                                              : NULL;
    r->respawn = why == NULL;
    snprintf(r->reason, sizeof r->reason, "%s", why ? why : "work left");
}

int zerg_policy_respawn(struct zerg_policy *p, const struct zerg_respawn_in *in,
                        zerg_json **why)
{
    struct respawn_call r = {
        .c = {.p = p, .policy = "respawn", .hook = "decide",
              .full = "respawn.decide", .push = respawn_push,
              .read = respawn_read, .builtin = respawn_builtin},
        .in = in,
    };
    policy_run(&r.c);
    if (why && (*why = why_new(&r.c))) {
        zerg_json_set_num(*why, "slot", in->slot);
        zerg_json_set_num(*why, "respawn_count", in->respawn_count);
        zerg_json_set_num(*why, "max_respawn_attempts",
                          p->cfg->max_respawn_attempts);
        zerg_json_set_num(*why, "exit_code", in->exit_code);
        zerg_json_set_num(*why, "signal", in->signal);
        zerg_json_set_num(*why, "uptime", secs(in->uptime_ns));
        zerg_json_set_num(*why, "work_left", in->work_left);
        zerg_json_set_bool(*why, "respawn", r.respawn);
        zerg_json_set_str(*why, "reason", r.reason);
    }
    return r.respawn;
}

/* ---- retry.decide ---------------------------------------------------- */

struct retry_call {
    struct call c;
    const struct zerg_retry_in *in;
    struct zerg_retry_out *out;
    int clamped;
};

static int retry_push(lua_State *L, struct call *c)
{
    const struct zerg_retry_in *in = ((struct retry_call *)c)->in;
    const struct zerg_config *cfg = c->p->cfg;
    lua_createtable(L, 0, 4);                      /* task */
    set_str(L, "id", in->task_id ? in->task_id : "");
    set_int(L, "retry_count", in->retry_count);
    set_int(L, "crash_count", in->crash_count);
    set_int(L, "attempt", in->attempt);
    lua_createtable(L, 0, 3);                      /* task failure */
    set_str(L, "kind", in->failure ? in->failure : "exit");
    if (in->exit_code >= 0)
        set_int(L, "exit_code", in->exit_code);
    if (in->signal > 0)
        set_int(L, "signal", in->signal);
    lua_createtable(L, 0, 3);                      /* task failure opts */
    set_int(L, "retry_attempts", cfg->retry_attempts);
    set_int(L, "max_task_crashes", cfg->max_task_crashes);
    struct backoff_call b;
    backoff_init(&b, c->p, "task", 1);
    push_backoff_opts(L, &b);
    lua_setfield(L, -2, "backoff");
    return 3;
}

/* Field k of the table at idx as a boolean; raises when it is not one. */
static int bool_field(lua_State *L, const struct call *c, int idx,
                      const char *k)
{
    int t = lua_getfield(L, idx, k);
    if (t != LUA_TBOOLEAN)
        luaL_error(L, "%s returned %s = %s, expected true or false",
                   c->full, k, lua_typename(L, t));
    int v = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return v;
}

static void retry_read(lua_State *L, struct call *c, int first, int nres)
{
    struct retry_call *r = (struct retry_call *)c;
    struct zerg_retry_out *out = r->out;
    if (nres < 1 || !lua_istable(L, first))
        luaL_error(L, "%s returned %s, expected a table {retry, delay, "
                   "charge}", c->full, got(L, first, nres, first));
    out->retry = bool_field(L, c, first, "retry");
    out->charge = bool_field(L, c, first, "charge");
    int t = lua_getfield(L, first, "delay");
    if (t != LUA_TNIL && t != LUA_TNUMBER)
        luaL_error(L, "%s returned delay = %s, expected a number of seconds",
                   c->full, lua_typename(L, t));
    out->delay_ns = zerg_s_to_ns(t == LUA_TNIL ? 0
                                               : check_delay(L, c, -1,
                                                             &r->clamped));
    t = lua_getfield(L, first, "reason");
    if (t != LUA_TNIL && t != LUA_TSTRING)
        luaL_error(L, "%s returned reason = %s, expected a string", c->full,
                   lua_typename(L, t));
    copy_reason(out->reason, sizeof out->reason,
                t == LUA_TSTRING ? lua_tostring(L, -1) : "");
    lua_pop(L, 2);
}

static void retry_builtin(struct call *c)
{
    struct retry_call *r = (struct retry_call *)c;
    const struct zerg_retry_in *in = r->in;
    const struct zerg_config *cfg = c->p->cfg;
    struct zerg_retry_out *out = r->out;
    const char *kind = in->failure ? in->failure : "exit";
    *out = (struct zerg_retry_out){0};
    if (strcmp(kind, "crash") == 0 || strcmp(kind, "heartbeat_stale") == 0) {
        out->retry = in->crash_count < cfg->max_task_crashes;
        copy_reason(out->reason, sizeof out->reason,
                    out->retry ? kind : "crash_loop");
        return;
    }
    out->charge = 1;
    out->retry = in->retry_count < cfg->retry_attempts;
    copy_reason(out->reason, sizeof out->reason,
                out->retry ? kind : "retries_exhausted");
    if (out->retry)
        out->delay_ns = zerg_s_to_ns(backoff_formula(
            cfg->backoff_strategy, secs(cfg->backoff_base_ns),
            secs(cfg->backoff_max_ns), in->retry_count + 1));
}

static void retry_why(const struct retry_call *r, int delay_override,
                      zerg_json **why)
{
    const struct zerg_retry_in *in = r->in;
    if (!why || !(*why = why_new(&r->c)))
        return;
    zerg_json_set_str(*why, "task", in->task_id);
    zerg_json_set_str(*why, "failure", in->failure ? in->failure : "exit");
    zerg_json_set_num(*why, "exit_code", in->exit_code);
    zerg_json_set_num(*why, "signal", in->signal);
    zerg_json_set_num(*why, "attempt", in->attempt);
    zerg_json_set_num(*why, "retry_count", in->retry_count);
    zerg_json_set_num(*why, "crash_count", in->crash_count);
    zerg_json_set_num(*why, "retry_attempts", r->c.p->cfg->retry_attempts);
    zerg_json_set_num(*why, "max_task_crashes",
                      r->c.p->cfg->max_task_crashes);
    zerg_json_set_bool(*why, "retry", r->out->retry);
    zerg_json_set_bool(*why, "charge", r->out->charge);
    zerg_json_set_num(*why, "delay", secs(r->out->delay_ns));
    if (delay_override)
        zerg_json_set_str(*why, "delay_policy", "override");
    if (r->clamped)
        zerg_json_set_bool(*why, "clamped", 1);
    zerg_json_set_str(*why, "reason", r->out->reason);
}

void zerg_policy_retry(struct zerg_policy *p, const struct zerg_retry_in *in,
                       struct zerg_retry_out *out, zerg_json **why)
{
    struct retry_call r = {
        .c = {.p = p, .policy = "retry", .hook = "decide",
              .full = "retry.decide", .push = retry_push,
              .read = retry_read, .builtin = retry_builtin},
        .in = in,
        .out = out,
    };
    *out = (struct zerg_retry_out){0};
    policy_run(&r.c);
    /* The bundled retry policy asks the bundled backoff for its delay; a
     * project that overrides backoff.delay expects that to govern task
     * retries too, so ask the active backoff policy instead. */
    int delay_override = r.c.src != SRC_OVERRIDE && out->retry &&
                         out->charge && p->user && p->ov[0].text;
    if (delay_override)
        out->delay_ns = zerg_policy_backoff_ns(p, "task",
                                               in->retry_count + 1, NULL);
    retry_why(&r, delay_override, why);
}

/* ---- reconcile.check ------------------------------------------------- */

#define RECONCILE_MAX_FIXES 100000

static const char *const task_fixes[] = {"requeue", "set_level", "block",
                                         NULL};
static const char *const level_fixes[] = {"reopen_level", "complete_level",
                                          NULL};

struct reconcile_call {
    struct call c;
    const zerg_json *snapshot;
    struct zerg_fix *fixes;
    size_t n;
    size_t dropped;
    char drop_msg[256]; /* why the first dropped fix was dropped */
};

static int in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

static int reconcile_push(lua_State *L, struct call *c)
{
    struct reconcile_call *r = (struct reconcile_call *)c;
    const struct zerg_config *cfg = c->p->cfg;
    if (r->snapshot)
        zerg_lua_push_json(L, r->snapshot);
    if (!lua_istable(L, -1)) {
        lua_pop(L, r->snapshot ? 1 : 0);
        lua_newtable(L);
    }                                              /* snap */
    if (lua_getfield(L, -1, "levels") == LUA_TTABLE) {
        zerg_lua_intkeys(L, -1);                   /* levels["2"] -> [2] */
        lua_setfield(L, -2, "levels");
    } else {
        lua_pop(L, 1);
    }
    lua_createtable(L, 0, 3);                      /* snap opts */
    set_num(L, "task_stale_timeout", secs(cfg->task_stale_timeout_ns));
    set_num(L, "heartbeat_stale_threshold",
            secs(cfg->heartbeat_stale_threshold_ns));
    set_num(L, "reconcile_interval", secs(cfg->reconcile_interval_ns));
    return 2;
}

/* Optional string field k of the table at idx into dst; -1 when it is
 * there but not a string that fits. */
static int str_field(lua_State *L, int idx, const char *k, char *dst,
                     size_t size, int truncate)
{
    int t = lua_getfield(L, idx, k);
    dst[0] = '\0';
    int rc = 0;
    if (t == LUA_TSTRING) {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (len < size && !memchr(s, '\0', len))
            memcpy(dst, s, len + 1);
        else if (truncate)
            snprintf(dst, size, "%s", s);
        else
            rc = -1;
    } else if (t != LUA_TNIL) {
        rc = -1;
    }
    lua_pop(L, 1);
    return rc;
}

/* Reads fix #i (the table at idx); 0, or -1 with msg saying why it is
 * dropped. */
static int read_fix(lua_State *L, int idx, size_t i, struct zerg_fix *f,
                    char *msg, size_t size)
{
    if (!lua_istable(L, idx)) {
        snprintf(msg, size, "fix #%zu is a %s, not a table", i,
                 luaL_typename(L, idx));
        return -1;
    }
    if (str_field(L, idx, "fix", f->fix, sizeof f->fix, 0) != 0 ||
        !f->fix[0]) {
        snprintf(msg, size, "fix #%zu has no fix name", i);
        return -1;
    }
    if (str_field(L, idx, "task", f->task, sizeof f->task, 0) != 0) {
        snprintf(msg, size, "fix #%zu: task must be an id string", i);
        return -1;
    }
    str_field(L, idx, "reason", f->reason, sizeof f->reason, 1);
    int t = lua_getfield(L, idx, "level");
    lua_Integer lv = 0;
    int ok = t == LUA_TNIL ||
             (t == LUA_TNUMBER && lua_numbertointeger(lua_tonumber(L, -1),
                                                      &lv) &&
              lv >= 0 && lv <= INT_MAX);
    lua_pop(L, 1);
    if (!ok) {
        snprintf(msg, size, "fix #%zu: level must be a whole number", i);
        return -1;
    }
    f->level = (int)lv;
    int task_fix = in_list(f->fix, task_fixes);
    if (!task_fix && !in_list(f->fix, level_fixes)) {
        snprintf(msg, size, "fix #%zu: unknown fix '%s'", i, f->fix);
        return -1;
    }
    if (task_fix ? !f->task[0] : f->level < 1) {
        snprintf(msg, size, "fix #%zu: %s needs a %s", i, f->fix,
                 task_fix ? "task" : "level");
        return -1;
    }
    if (strcmp(f->fix, "set_level") == 0 && f->level < 1) {
        snprintf(msg, size, "fix #%zu: set_level needs a level >= 1", i);
        return -1;
    }
    return 0;
}

static void reconcile_clear(struct reconcile_call *r)
{
    free(r->fixes);
    r->fixes = NULL;
    r->n = r->dropped = 0;
    r->drop_msg[0] = '\0';
}

static void reconcile_read(lua_State *L, struct call *c, int first, int nres)
{
    struct reconcile_call *r = (struct reconcile_call *)c;
    reconcile_clear(r);
    if (nres < 1 || !lua_istable(L, first))
        luaL_error(L, "%s returned %s, expected a list of fixes", c->full,
                   got(L, first, nres, first));
    size_t n = (size_t)lua_rawlen(L, first);
    if (n > RECONCILE_MAX_FIXES)
        luaL_error(L, "%s returned %zu fixes, more than %d", c->full, n,
                   RECONCILE_MAX_FIXES);
    r->fixes = calloc(n ? n : 1, sizeof *r->fixes);
    if (!r->fixes)
        luaL_error(L, "%s: out of memory for %zu fixes", c->full, n);
    for (size_t i = 1; i <= n; i++) {
        char msg[256];
        lua_rawgeti(L, first, (lua_Integer)i);
        if (read_fix(L, lua_gettop(L), i, &r->fixes[r->n], msg,
                     sizeof msg) == 0) {
            r->n++;
        } else if (r->dropped++ == 0) {
            snprintf(r->drop_msg, sizeof r->drop_msg, "%s", msg);
        }
        lua_pop(L, 1);
    }
}

static void reconcile_builtin(struct call *c)
{
    reconcile_clear((struct reconcile_call *)c); /* no fixes: do no harm */
}

static zerg_json *fix_json(const struct zerg_fix *f)
{
    zerg_json *o = zerg_json_obj();
    if (!o)
        return NULL;
    if (f->task[0])
        zerg_json_set_str(o, "task", f->task);
    if (f->level > 0)
        zerg_json_set_num(o, "level", f->level);
    zerg_json_set_str(o, "fix", f->fix);
    zerg_json_set_str(o, "reason", f->reason);
    return o;
}

static void reconcile_why(const struct reconcile_call *r, zerg_json **why)
{
    if (!why || !(*why = why_new(&r->c)))
        return;
    const zerg_json *s = r->snapshot;
    const zerg_json *thorough = zerg_json_get(s, "thorough");
    zerg_json_set_bool(*why, "thorough",
                       zerg_json_is(thorough, ZERG_JSON_BOOL) &&
                           thorough->u.boolean);
    zerg_json_set_num(*why, "current_level",
                      zerg_json_as_num(zerg_json_get(s, "current_level"),
                                       0));
    zerg_json_set_num(*why, "tasks",
                      (double)zerg_json_len(zerg_json_get(s, "tasks")));
    zerg_json *list = zerg_json_arr();
    for (size_t i = 0; list && i < r->n; i++)
        zerg_json_push(list, fix_json(&r->fixes[i]));
    if (list)
        zerg_json_set(*why, "fixes", list);
    if (r->dropped) {
        zerg_json_set_num(*why, "dropped", (double)r->dropped);
        zerg_json_set_str(*why, "dropped_reason", r->drop_msg);
    }
}

int zerg_policy_reconcile(struct zerg_policy *p, const zerg_json *snapshot,
                          struct zerg_fix **fixes, size_t *nfixes,
                          zerg_json **why)
{
    struct reconcile_call r = {
        .c = {.p = p, .policy = "reconcile", .hook = "check",
              .full = "reconcile.check", .push = reconcile_push,
              .read = reconcile_read, .builtin = reconcile_builtin},
        .snapshot = snapshot,
    };
    policy_run(&r.c);
    if (r.dropped) {
        char msg[400];
        snprintf(msg, sizeof msg, "%zu fix(es) dropped; %s", r.dropped,
                 r.drop_msg);
        report_error(p, "reconcile", r.c.full, r.c.file, msg,
                     "the other fixes");
    }
    reconcile_why(&r, why);
    if (r.n == 0) {
        free(r.fixes);
        r.fixes = NULL;
    }
    *fixes = r.fixes;
    *nfixes = r.n;
    return 0;
}
