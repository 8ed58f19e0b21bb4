/* git_scan.c - the configuration scan under every git call (git_run.c),
 * run once per directory and reused while nothing it depends on changed.
 *
 * A scan is `git config --null --list --show-scope --show-origin`.  Its
 * result is a function of: the repository git finds from the directory
 * (dir/.git: a gitfile's text or the directory; the git dir, its HEAD,
 * commondir, objects/ and refs/), HOME and XDG_CONFIG_HOME, and the
 * contents of every file that can contribute: the system file, both
 * global files, the common config, config.worktree, every file the
 * listing names as an origin and every include.path / includeIf.*.path
 * target, whether it exists yet or not.  includeIf conditions depend on
 * the git dir (gitdir:, its real path is kept), HEAD (onbranch:) and the
 * config itself (hasconfig:), all of them in that set.  Each of these
 * paths is kept with its stat (dev, ino, mode, size, mtime and ctime in
 * ns) and, for a regular file, its whole content; before each use every
 * one is taken again and compared byte for byte, so a change of the
 * same size and mtime is seen as well.  Anything the model cannot
 * follow (no dir/.git, core.worktree, an include of "~user/" or
 * "%(prefix)/", an origin that is not a file, a local origin other than
 * the common config, a file over 1 MiB) is not cached: such a directory
 * is scanned before every call, as it always was.
 *
 * A file that changed shortly before the scan began is not trusted: git
 * may have read it half-way through a change, or a worker may have
 * changed it and back within one tick of the coarse file clock (same
 * stat, same content, different listing).  "Shortly" is SETTLE_NS, far
 * above a kernel tick (1-10 ms) and the 10 ms of exFAT, or
 * SETTLE_COARSE_NS for a time stamp in whole seconds (a file system
 * that keeps 1 or 2 s).  The result is used for its call and the next
 * call scans again.  One thread: the git calls of a
 * process are made from its main loop. */
#include "git/git_internal.h"
#include "zerg/err.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SETTLE_NS 100000000LL
#define SETTLE_COARSE_NS 3000000000LL
#define CONTENT_MAX (1 << 20)
#define NENTRIES 16
#define NQUERIES 8

struct watch {
    char *path;
    int err; /* errno of stat, 0 when the path is there */
    dev_t dev;
    ino_t ino;
    mode_t mode;
    off_t size;
    int64_t mtime_ns, ctime_ns;
    char *data; /* content of a regular file */
    size_t len;
};

/* The output of a layout query (git_scan_query_put). */
struct query {
    char *key, *out;
    size_t len;
    int status;
};

struct entry {
    char *dir;
    char *env[2]; /* HOME, XDG_CONFIG_HOME at the scan (NULL: unset) */
    char *gitdir;
    char *path[3], *real[3]; /* the git dir, dir, the common dir */
    struct watch *w;
    size_t nw, cap;
    char *list; /* "scope\0key\nvalue\0" records */
    size_t len;
    uint64_t used;
    struct query q[NQUERIES];
    size_t nq;
};

static int64_t real_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct git_scan_hooks git_scan_hooks = {real_now_ns, stat};
struct git_scan_stats git_scan_stats;

static struct {
    struct entry e[NENTRIES];
    uint64_t tick;
    char system[PATH_MAX]; /* the system config's path, "" unknown */
    int probed;            /* git was asked for it (once) */
} cache;

static const char *const ENV_NAMES[2] = {"HOME", "XDG_CONFIG_HOME"};

/* ---- one path ------------------------------------------------------ */

static void watch_free(struct watch *w)
{
    free(w->path), free(w->data);
    memset(w, 0, sizeof *w);
}

static int64_t ns_of(struct timespec ts)
{
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The content of a regular file, opened without blocking (a FIFO
 * swapped in after the stat) and checked to be the file stat saw. */
static int read_content(struct watch *w)
{
    int fd = open(w->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) || st.st_dev != w->dev || st.st_ino != w->ino ||
        !S_ISREG(st.st_mode) || st.st_size > CONTENT_MAX) {
        close(fd);
        return -1;
    }
    w->data = malloc((size_t)st.st_size + 1);
    ssize_t r = 0;
    size_t got = 0;
    while (w->data && got <= (size_t)st.st_size &&
           (r = read(fd, w->data + got, (size_t)st.st_size + 1 - got)) > 0)
        got += (size_t)r;
    close(fd);
    if (!w->data || r < 0 || got != (size_t)st.st_size)
        return -1;
    w->len = got;
    return 0;
}

/* Takes path as it is now: 0, or -1 when it cannot be followed (a file
 * too large or unreadable, a FIFO, a device). */
static int watch_take(struct watch *w, const char *path)
{
    struct stat st;
    memset(w, 0, sizeof *w);
    if (!(w->path = strdup(path)))
        return -1;
    if (git_scan_hooks.stat(path, &st)) {
        w->err = errno;
        return 0;
    }
    w->dev = st.st_dev, w->ino = st.st_ino, w->mode = st.st_mode;
    if (S_ISDIR(st.st_mode))
        return 0; /* identity only: git writes locks below */
    if (!S_ISREG(st.st_mode))
        return -1;
    w->size = st.st_size;
    w->mtime_ns = ns_of(st.st_mtim), w->ctime_ns = ns_of(st.st_ctim);
    return read_content(w);
}

static int watch_same(const struct watch *old)
{
    struct watch now;
    int same = !watch_take(&now, old->path) && now.err == old->err &&
               now.dev == old->dev && now.ino == old->ino &&
               now.mode == old->mode && now.size == old->size &&
               now.mtime_ns == old->mtime_ns && now.ctime_ns == old->ctime_ns &&
               now.len == old->len &&
               (!now.len || !memcmp(now.data, old->data, now.len));
    watch_free(&now);
    return same;
}

/* ---- an entry ------------------------------------------------------ */

static void entry_free(struct entry *e)
{
    for (size_t i = 0; i < e->nw; i++)
        watch_free(&e->w[i]);
    free(e->w), free(e->dir), free(e->env[0]), free(e->env[1]);
    for (int i = 0; i < 3; i++)
        free(e->path[i]), free(e->real[i]);
    for (size_t i = 0; i < e->nq; i++)
        free(e->q[i].key), free(e->q[i].out);
    free(e->gitdir), free(e->list);
    memset(e, 0, sizeof *e);
}

/* Adds a path to watch (once); the watch itself when p != NULL. */
static int watch_add(struct entry *e, const char *path, const struct watch **p)
{
    for (size_t i = 0; i < e->nw; i++)
        if (!strcmp(e->w[i].path, path)) {
            if (p)
                *p = &e->w[i];
            return 0;
        }
    if (e->nw == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 16;
        struct watch *w = realloc(e->w, cap * sizeof *w);
        if (!w)
            return -1;
        e->w = w, e->cap = cap;
    }
    if (watch_take(&e->w[e->nw], path)) {
        watch_free(&e->w[e->nw]);
        return -1;
    }
    if (p)
        *p = &e->w[e->nw];
    e->nw++;
    return 0;
}

static int watch_addf(struct entry *e, const struct watch **p, const char *fmt,
                      const char *a, const char *b)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, fmt, a, b);
    if (n < 0 || (size_t)n >= sizeof path)
        return -1;
    return watch_add(e, path, p);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* 1 while every watched path, the environment and the real paths of
 * the git dir, dir and the common dir are as they were at the scan. */
static int entry_valid(const struct entry *e)
{
    for (int i = 0; i < 2; i++)
        if (!same_str(e->env[i], getenv(ENV_NAMES[i])))
            return 0;
    char real[PATH_MAX];
    for (int i = 0; i < 3; i++)
        if (!realpath(e->path[i], real) || strcmp(real, e->real[i]))
            return 0;
    for (size_t i = 0; i < e->nw; i++)
        if (!watch_same(&e->w[i]))
            return 0;
    return 1;
}

/* ---- the repository and its files -------------------------------- */

/* "gitdir: <path>" with git's rule: trailing CR/LF stripped, a relative
 * path taken from the gitfile's directory. */
static int gitfile_target(const struct watch *dotgit, const char *dir,
                          char *out, size_t n)
{
    size_t len = dotgit->len;
    const char *t = dotgit->data;
    while (len && (t[len - 1] == '\n' || t[len - 1] == '\r'))
        len--;
    if (len < 9 || strncmp(t, "gitdir: ", 8) || memchr(t, '\0', len))
        return -1;
    int r = t[8] == '/' ? snprintf(out, n, "%.*s", (int)len - 8, t + 8)
                        : snprintf(out, n, "%s/%.*s", dir, (int)len - 8, t + 8);
    return r < 0 || (size_t)r >= n ? -1 : 0;
}

/* The common dir named by gitdir/commondir, else the git dir itself. */
static int common_dir(const struct watch *cd, const char *gitdir, char *out,
                      size_t n)
{
    if (cd->err)
        return snprintf(out, n, "%s", gitdir) < (int)n ? 0 : -1;
    size_t len = cd->len;
    while (len && (cd->data[len - 1] == '\n' || cd->data[len - 1] == '\r'))
        len--;
    if (!len || memchr(cd->data, '\0', len))
        return -1;
    int r = cd->data[0] == '/'
                ? snprintf(out, n, "%.*s", (int)len, cd->data)
                : snprintf(out, n, "%s/%.*s", gitdir, (int)len, cd->data);
    return r < 0 || (size_t)r >= n ? -1 : 0;
}

/* What finds the repository and what makes it one (dir/.git, the git
 * dir, its HEAD and commondir, the common objects/ and refs/).  *common
 * is set. */
static int discover(struct entry *e, const char *dir, char *common, size_t n)
{
    const struct watch *dotgit, *cd;
    char gitdir[PATH_MAX], real[PATH_MAX];
    if (watch_addf(e, &dotgit, "%s/.git%s", dir, "") || dotgit->err)
        return -1;
    if (S_ISDIR(dotgit->mode))
        snprintf(gitdir, sizeof gitdir, "%s", dotgit->path);
    else if (gitfile_target(dotgit, dir, gitdir, sizeof gitdir))
        return -1;
    if (watch_add(e, gitdir, NULL) || !(e->gitdir = strdup(gitdir)))
        return -1;
    if (watch_addf(e, NULL, "%s/HEAD%s", gitdir, "") ||
        watch_addf(e, &cd, "%s/commondir%s", gitdir, "") ||
        common_dir(cd, gitdir, common, n))
        return -1;
    const char *paths[3] = {gitdir, dir, common};
    for (int i = 0; i < 3; i++)
        if (!realpath(paths[i], real) || !(e->path[i] = strdup(paths[i])) ||
            !(e->real[i] = strdup(real)))
            return -1;
    return watch_addf(e, NULL, "%s/objects%s", common, "") ||
           watch_addf(e, NULL, "%s/refs%s", common, "") ||
           watch_addf(e, NULL, "%s/config.worktree%s", gitdir, "");
}

/* The system file and both global ones, there or not. */
static int user_files(struct entry *e, const char *system)
{
    const char *home = getenv("HOME"), *xdg = getenv("XDG_CONFIG_HOME");
    for (int i = 0; i < 2; i++)
        if (getenv(ENV_NAMES[i]) &&
            !(e->env[i] = dup_or_null(getenv(ENV_NAMES[i]))))
            return -1;
    if (!system[0] || watch_add(e, system, NULL) || (home && home[0] != '/') ||
        (xdg && *xdg && xdg[0] != '/'))
        return -1; /* a relative HOME would be git's, after its chdir */
    if (xdg && *xdg && watch_addf(e, NULL, "%s/git/config%s", xdg, ""))
        return -1;
    if ((!xdg || !*xdg) && home &&
        watch_addf(e, NULL, "%s/.config/git/config%s", home, ""))
        return -1;
    return home ? watch_addf(e, NULL, "%s/.gitconfig%s", home, "") : 0;
}

/* ---- the listing --------------------------------------------------- */

/* One record of a scan: "scope\0origin\0key\nvalue\0". */
struct raw_rec {
    const char *scope, *origin, *kv;
};

/* 1 and the next record, 0 at the end, -1 when the listing is cut. */
static int raw_next(const char **p, const char *end, struct raw_rec *r)
{
    const char *f[3];
    for (int i = 0; i < 3; i++) {
        const char *z = *p < end ? memchr(*p, '\0', (size_t)(end - *p)) : NULL;
        if (!z)
            return *p >= end && i == 0 ? 0 : -1;
        f[i] = *p, *p = z + 1;
    }
    r->scope = f[0], r->origin = f[1], r->kv = f[2];
    return 1;
}

/* The origin's absolute path ("file:" only; relative to dir, the top of
 * the work tree, where git runs once it has found the repository). */
static int origin_path(const char *origin, const char *dir, char *out, size_t n)
{
    if (strncmp(origin, "file:", 5) || !origin[5])
        return -1;
    const char *p = origin + 5;
    int r = p[0] == '/' ? snprintf(out, n, "%s", p)
                        : snprintf(out, n, "%s/%s", dir, p);
    return r < 0 || (size_t)r >= n ? -1 : 0;
}

static int key_is(const char *kv, const char *key)
{
    size_t n = strlen(key);
    return !strncasecmp(kv, key, n) && (kv[n] == '\n' || kv[n] == '\0');
}

/* 1 for include.path and includeIf.<condition>.path. */
static int is_include(const char *kv)
{
    size_t klen = strcspn(kv, "\n");
    return key_is(kv, "include.path") ||
           (klen > 15 && !strncasecmp(kv, "includeif.", 10) &&
            !strncasecmp(kv + klen - 5, ".path", 5));
}

/* Where git looks for an include of `v` written in file `from`. */
static int include_target(const char *from, const char *v, char *out, size_t n)
{
    const char *home = getenv("HOME"), *slash = strrchr(from, '/');
    int r;
    if (!strncmp(v, "~/", 2) && home)
        r = snprintf(out, n, "%s/%s", home, v + 2);
    else if (!v[0] || v[0] == '~' || !strncmp(v, "%(", 2))
        return -1; /* ~user/, %(prefix)/: not followed, never cached */
    else if (v[0] == '/')
        r = snprintf(out, n, "%s", v);
    else
        r = snprintf(out, n, "%.*s/%s", (int)(slash - from), from, v);
    return r < 0 || (size_t)r >= n ? -1 : 0;
}

/* Every origin and include target of the listing watched; -1 when a
 * record needs what the model does not follow (core.worktree, an origin
 * that is not a file, an include it cannot place). */
static int listing_files(struct entry *e, const char *dir, const char *raw,
                         size_t raw_len)
{
    const char *p = raw, *end = raw + raw_len;
    struct raw_rec r;
    int rc;
    while ((rc = raw_next(&p, end, &r)) > 0) {
        char from[PATH_MAX], target[PATH_MAX];
        const char *nl = strchr(r.kv, '\n');
        if (origin_path(r.origin, dir, from, sizeof from) ||
            watch_add(e, from, NULL) || key_is(r.kv, "core.worktree"))
            return -1;
        if (is_include(r.kv) &&
            (!nl || include_target(from, nl + 1, target, sizeof target) ||
             watch_add(e, target, NULL)))
            return -1;
    }
    return rc;
}

/* The watch of path, NULL when there is none. */
static const struct watch *watch_of(const struct entry *e, const char *path)
{
    for (size_t i = 0; i < e->nw; i++)
        if (!strcmp(e->w[i].path, path))
            return &e->w[i];
    return NULL;
}

/* git found the repository the model describes: the first record of
 * scope `scope` comes from file `want` (the file read first in that
 * scope holds it, or the include that brings the rest).  required:
 * the scope must have records. */
static int scope_from(const struct entry *e, const char *dir, const char *raw,
                      size_t raw_len, const char *scope, const char *want,
                      int required)
{
    const char *p = raw, *end = raw + raw_len;
    struct raw_rec r;
    char from[PATH_MAX];
    while (raw_next(&p, end, &r) > 0) {
        if (strcmp(r.scope, scope))
            continue;
        const struct watch *a, *b = watch_of(e, want);
        if (origin_path(r.origin, dir, from, sizeof from) ||
            !(a = watch_of(e, from)) || !b || a->err || b->err)
            return -1;
        return a->dev == b->dev && a->ino == b->ino ? 0 : -1;
    }
    return required ? -1 : 0;
}

/* "scope\0key\nvalue\0" records: the scan without its origins. */
static int strip_origins(const char *raw, size_t raw_len, char **list,
                         size_t *len)
{
    const char *p = raw, *end = raw + raw_len;
    struct raw_rec r;
    size_t n = 0;
    char *out = malloc(raw_len + 1);
    int rc = 0;
    while (out && (rc = raw_next(&p, end, &r)) > 0) {
        size_t sl = strlen(r.scope) + 1, kl = strlen(r.kv) + 1;
        memcpy(out + n, r.scope, sl), n += sl;
        memcpy(out + n, r.kv, kl), n += kl;
    }
    if (!out || rc < 0) {
        free(out);
        return out ? -EINVAL : -ENOMEM;
    }
    out[n] = '\0';
    *list = out, *len = n;
    return 0;
}

/* A time stamp at least the settling time before start. */
static int old_enough(int64_t t_ns, int64_t start_ns)
{
    int64_t settle = t_ns % 1000000000LL ? SETTLE_NS : SETTLE_COARSE_NS;
    return t_ns < start_ns - settle;
}

/* No watched file changed shortly before the scan's start (or since). */
static int settled(const struct entry *e, int64_t start_ns)
{
    for (size_t i = 0; i < e->nw; i++) {
        const struct watch *w = &e->w[i];
        if (!w->err && S_ISREG(w->mode) &&
            (!old_enough(w->ctime_ns, start_ns) ||
             !old_enough(w->mtime_ns, start_ns)))
            return 0;
    }
    return 1;
}

/* Everything the scan of dir depended on, or -1 when the model cannot
 * follow it. */
static int entry_build(struct entry *e, const char *dir, const char *system,
                       const char *raw, size_t raw_len)
{
    char common[PATH_MAX], cfg[PATH_MAX + 16], wcfg[PATH_MAX + 24];
    if (dir[0] != '/' || !(e->dir = strdup(dir)) ||
        discover(e, dir, common, sizeof common) || user_files(e, system) ||
        watch_addf(e, NULL, "%s/config%s", common, "") ||
        listing_files(e, dir, raw, raw_len))
        return -1;
    snprintf(cfg, sizeof cfg, "%s/config", common);
    snprintf(wcfg, sizeof wcfg, "%s/config.worktree", e->gitdir);
    if (scope_from(e, dir, raw, raw_len, "local", cfg, 1) ||
        scope_from(e, dir, raw, raw_len, "worktree", wcfg, 0) ||
        scope_from(e, dir, raw, raw_len, "system", system, 0))
        return -1;
    return strip_origins(raw, raw_len, &e->list, &e->len);
}

static struct entry *entry_find(const char *dir)
{
    for (size_t i = 0; i < NENTRIES; i++)
        if (cache.e[i].dir && !strcmp(cache.e[i].dir, dir))
            return &cache.e[i];
    return NULL;
}

/* The entry of dir, or the slot used longest ago, emptied. */
static struct entry *entry_slot(const char *dir)
{
    struct entry *e = entry_find(dir), *old = &cache.e[0];
    for (size_t i = 0; !e && i < NENTRIES; i++)
        if (cache.e[i].used < old->used)
            old = &cache.e[i];
    e = e ? e : old;
    entry_free(e);
    return e;
}

int git_scan_store(const char *dir, const char *system, const char *raw,
                   size_t raw_len, int64_t start_ns)
{
    struct entry e = {0};
    if (entry_build(&e, dir, system, raw, raw_len) || !settled(&e, start_ns)) {
        entry_free(&e);
        struct entry *stale = entry_find(dir);
        if (stale)
            entry_free(stale);
        return 0;
    }
    struct entry *slot = entry_slot(dir);
    *slot = e;
    slot->used = ++cache.tick;
    return 1;
}

int git_scan_lookup(const char *dir, char **list, size_t *len)
{
    struct entry *e = entry_find(dir);
    if (!e)
        return 0;
    if (!entry_valid(e)) {
        entry_free(e);
        return 0;
    }
    if (!(*list = malloc(e->len + 1)))
        return -ENOMEM;
    memcpy(*list, e->list, e->len + 1);
    *len = e->len;
    git_scan_stats.hits++;
    e->used = ++cache.tick;
    return 1;
}

/* The entry the last lookup found valid, else NULL: a query is only
 * answered right after the scan of its call was. */
static struct entry *entry_checked(const char *dir)
{
    struct entry *e = entry_find(dir);
    return e && e->used == cache.tick ? e : NULL;
}

int git_scan_query_get(const char *dir, const char *key, char **out,
                       size_t *len, int *status)
{
    struct entry *e = entry_checked(dir);
    for (size_t i = 0; e && i < e->nq; i++)
        if (!strcmp(e->q[i].key, key)) {
            if (!(*out = malloc(e->q[i].len + 1)))
                return -ENOMEM;
            memcpy(*out, e->q[i].out, e->q[i].len + 1);
            *len = e->q[i].len, *status = e->q[i].status;
            git_scan_stats.query_hits++;
            return 1;
        }
    return 0;
}

void git_scan_query_put(const char *dir, const char *key, const char *out,
                        size_t len, int status)
{
    struct entry *e = entry_checked(dir);
    if (!e || e->nq == NQUERIES)
        return;
    if (!entry_valid(e)) { /* changed while the query ran */
        entry_free(e);
        return;
    }
    struct query *q = &e->q[e->nq];
    q->key = strdup(key), q->out = malloc(len + 1);
    if (!q->key || !q->out) {
        free(q->key), free(q->out);
        memset(q, 0, sizeof *q);
        return;
    }
    memcpy(q->out, out, len), q->out[len] = '\0';
    q->len = len, q->status = status;
    e->nq++;
}

void git_scan_forget(void)
{
    for (size_t i = 0; i < NENTRIES; i++)
        entry_free(&cache.e[i]);
    cache.system[0] = '\0';
    cache.probed = 0;
}

/* ---- running the scan -------------------------------------------- */

static int spawn_config(const char *const *argv, struct git_proc *p,
                        struct zerg_err *err)
{
    char **env = git_env_new(NULL);
    if (!env)
        return zerg_err_set(err, -ENOMEM, "out of memory");
    memset(p, 0, sizeof *p);
    p->argv = argv, p->envp = (const char *const *)env;
    int rc = git_spawn(p, err);
    git_env_free(env);
    return rc;
}

/* The scan of dir: "scope\0origin\0key\nvalue\0" records (malloc'd). */
static int read_scan(const struct zerg_git *g, const char *dir, char **raw,
                     size_t *len, struct zerg_err *err)
{
    const char *argv[] = {g->bin,   "--no-pager",   "-C",
                          dir,      "config",       "--null",
                          "--list", "--show-scope", "--show-origin",
                          NULL};
    struct git_proc p;
    int rc = spawn_config(argv, &p, err);
    if (rc)
        return rc;
    free(p.errtxt);
    git_scan_stats.scans++;
    if (p.signal || p.status) {
        free(p.out);
        return p.signal ? zerg_err_set(err, ZERG_EGIT_KILLED,
                                       "git config --list in %s was killed "
                                       "by signal %d",
                                       dir, p.signal)
                        : zerg_err_set(err, ZERG_EGIT_FAILED,
                                       "git config --list failed in %s (exit "
                                       "%d)",
                                       dir, p.status);
    }
    *raw = p.out, *len = p.out_len;
    return 0;
}

/* The system file's path, once per process: the origin of its first
 * record, else what `git config --system --list` says it could not
 * read.  An existing file without keys leaves it unknown (never
 * cached). */
static void learn_system(const struct zerg_git *g, const char *raw, size_t len)
{
    const char *p = raw, *end = raw + len;
    struct raw_rec r;
    while (!cache.system[0] && raw_next(&p, end, &r) > 0)
        if (!strcmp(r.scope, "system") && !strncmp(r.origin, "file:/", 6))
            snprintf(cache.system, sizeof cache.system, "%s", r.origin + 5);
    if (cache.system[0] || cache.probed)
        return;
    cache.probed = 1;
    const char *argv[] = {g->bin,   "--no-pager", "config", "--system",
                          "--null", "--list",     NULL};
    struct git_proc pr;
    struct zerg_err ignored = {0};
    if (spawn_config(argv, &pr, &ignored))
        return;
    static const char said[] = "unable to read config file '";
    const char *q = pr.status ? strstr(pr.errtxt, said) : NULL;
    q = q ? q + sizeof said - 1 : NULL;
    const char *qe = q && *q == '/' ? strchr(q, '\'') : NULL;
    if (qe && qe - q < PATH_MAX)
        snprintf(cache.system, sizeof cache.system, "%.*s", (int)(qe - q), q);
    free(pr.out), free(pr.errtxt);
}

int git_scan_config(const struct zerg_git *g, const char *dir, char **list,
                    size_t *len, struct zerg_err *err)
{
    int rc = git_scan_lookup(dir, list, len);
    if (rc)
        return rc < 0 ? zerg_err_set(err, rc, "out of memory") : 0;
    char *raw = NULL;
    size_t raw_len = 0;
    int64_t start = git_scan_hooks.now_ns();
    if ((rc = read_scan(g, dir, &raw, &raw_len, err)))
        return rc;
    learn_system(g, raw, raw_len);
    rc = strip_origins(raw, raw_len, list, len);
    if (!rc)
        git_scan_store(dir, cache.system, raw, raw_len, start);
    free(raw);
    if (rc)
        return zerg_err_set(err, rc == -ENOMEM ? rc : ZERG_EGIT_FAILED,
                            "git config --list in %s gave a listing zerg "
                            "cannot read",
                            dir);
    return 0;
}
