/* ws_outputs.c - what a passing attempt's commit takes (DESIGN §18).
 *
 * Everything the task wrote is its output, .gsd/ and .zerg/ included,
 * except zerg's own run files (.zerg/state/, .zerg/logs/, .zerg/reports/,
 * the monitor log, .zerg-worktrees/), which never enter a commit, and
 * what is mounted into the worktree (a container's read-only .gsd/ and
 * .zerg/ of the host: the task cannot have written them, and an untracked
 * spec dir must not be swept into its commit).  A declared path
 * (files.create or files.modify) the user's .gitignore ignores is added
 * with -f, declared means intended; undeclared ignored paths are listed
 * for the result, not committed.  Also: which files.create paths do not
 * exist after the attempt (both isolations), for scope.missing. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"
#include "zerg/graph.h"
#include "zerg/protocol.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Relative to the project; the same list as the excludes (ws_branch.c). */
static const char *const run_names[] = {
    ".zerg/state/",      ".zerg/logs/",         ".zerg/reports/",
    ".zerg/monitor.log", ".zerg/monitor.jsonl",
};
#define NRUN (sizeof run_names / sizeof *run_names)

#define MOUNTS_MAX 32

struct outputs {
    const struct zerg_git *g;
    const char *top;
    char prefix[PATH_MAX];    /* the project relative to top, "" or "p/" */
    char *mounts[MOUNTS_MAX]; /* mount points below top, relative */
    size_t nmounts;
};

/* 1 when rel (relative to top) is under base, or is base itself. */
static int under(const char *rel, const char *base)
{
    size_t n = strlen(base);
    if (n && base[n - 1] == '/')
        return !strncmp(rel, base, n) ||
               (strlen(rel) == n - 1 && !strncmp(rel, base, n - 1));
    return !strncmp(rel, base, n) && (!rel[n] || rel[n] == '/');
}

/* 1 for zerg's run files, with or without the project's prefix. */
static int is_run_file(const struct outputs *o, const char *rel)
{
    char full[2 * PATH_MAX];
    if (under(rel, WS_DIR "/"))
        return 1;
    for (size_t i = 0; i < NRUN; i++) {
        snprintf(full, sizeof full, "%s%s", o->prefix, run_names[i]);
        if (under(rel, run_names[i]) || under(rel, full))
            return 1;
    }
    return 0;
}

int zerg_ws_run_file(const char *path)
{
    const struct outputs o = {.prefix = ""};
    while (path && path[0] == '.' && path[1] == '/')
        path += 2;
    return path && is_run_file(&o, path);
}

static int is_mounted(const struct outputs *o, const char *rel)
{
    for (size_t i = 0; i < o->nmounts; i++)
        if (under(rel, o->mounts[i]))
            return 1;
    return 0;
}

/* ---- mounts ------------------------------------------------------------ */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' &&
            r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + r[3] - '0');
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* The mount points strictly below top (field 5 of /proc/self/mountinfo):
 * in a container, the host's .gsd/ and .zerg/ lie over the worktree.
 * No /proc (not Linux): none known. */
static void find_mounts(struct outputs *o)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[3 * PATH_MAX];
    size_t tl = strlen(o->top);
    while (f && o->nmounts < MOUNTS_MAX && fgets(line, sizeof line, f)) {
        char *save = NULL, *field = strtok_r(line, " ", &save);
        for (int i = 0; field && i < 4; i++)
            field = strtok_r(NULL, " ", &save);
        if (!field)
            continue;
        unescape(field);
        if (!strncmp(field, o->top, tl) && field[tl] == '/' && field[tl + 1])
            o->mounts[o->nmounts] = strdup(field + tl + 1);
        o->nmounts += o->mounts[o->nmounts] != NULL;
    }
    if (f)
        fclose(f);
}

/* ---- pathspecs ----------------------------------------------------------- */

static int argv_push(struct ws_args *a, const char *s, int owned)
{
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 32;
        const char **v = realloc(a->v, cap * sizeof *v);
        char **own = v ? realloc(a->own, cap * sizeof *own) : NULL;
        if (v)
            a->v = v;
        if (!own)
            return -ENOMEM;
        a->own = own, a->cap = cap;
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
    if (owned)
        a->own[a->nown++] = (char *)s;
    return 0;
}

/* ":(top,literal[,exclude])rel": rel from the top, no glob. */
static int argv_spec(struct ws_args *a, const char *rel, int exclude)
{
    char *s = NULL;
    if (asprintf(&s, ":(top,literal%s)%s", exclude ? ",exclude" : "", rel) < 0)
        return -ENOMEM;
    int rc = argv_push(a, s, 1);
    if (rc)
        free(s);
    return rc;
}

void ws_args_free(struct ws_args *a)
{
    for (size_t i = 0; i < a->nown; i++)
        free(a->own[i]);
    free(a->own);
    free(a->v);
}

/* fixed, then "-- ." and an exclude of each mount point. */
static int mount_args(const struct outputs *o, const char *const *fixed,
                      struct ws_args *a)
{
    int rc = 0;
    for (size_t i = 0; fixed[i] && !rc; i++)
        rc = argv_push(a, fixed[i], 0);
    if (!rc)
        rc = argv_push(a, "--", 0);
    if (!rc)
        rc = argv_push(a, ".", 0);
    for (size_t i = 0; i < o->nmounts && !rc; i++)
        rc = argv_spec(a, o->mounts[i], 1);
    return rc;
}

int ws_worktree_args(const char *top, const char *const *fixed,
                     struct ws_args *a)
{
    struct outputs o = {.top = top};
    find_mounts(&o);
    int rc = mount_args(&o, fixed, a);
    for (size_t i = 0; i < o.nmounts; i++)
        free(o.mounts[i]);
    return rc;
}

/* A declared path a commit may name: relative, inside the project. */
static int declared_ok(const char *p)
{
    if (!p || !*p || *p == '/')
        return 0;
    for (const char *c = p; c; c = strchr(c, '/'), c = c ? c + 1 : c)
        if (c[0] == '.' && c[1] == '.' && (!c[2] || c[2] == '/'))
            return 0;
    return 1;
}

/* Declared path p relative to top in rel (2 * PATH_MAX bytes): 1, or 0
 * when a commit may not name it. */
static int declared_rel(const struct outputs *o, const char *p, char *rel)
{
    while (p && p[0] == '.' && p[1] == '/')
        p += 2;
    if (!declared_ok(p))
        return 0;
    snprintf(rel, 2 * PATH_MAX, "%s%s", o->prefix, p);
    return 1;
}

static int push_declared(struct ws_args *a, const struct outputs *o,
                         const struct zerg_strlist *l)
{
    char rel[2 * PATH_MAX];
    int rc = 0;
    for (size_t i = 0; i < l->n && !rc; i++)
        if (declared_rel(o, l->v[i], rel))
            rc = argv_spec(a, rel, 0);
    return rc;
}

/* ---- the index's stamp -------------------------------------------------- */

void ws_stamp_index(const char *gitdir, struct zerg_ws_stamp *s)
{
    char path[PATH_MAX + 8];
    struct stat st;
    memset(s, 0, sizeof *s);
    if (snprintf(path, sizeof path, "%s/index", gitdir) >= (int)sizeof path ||
        lstat(path, &st) || !S_ISREG(st.st_mode))
        return;
    s->dev = (unsigned long long)st.st_dev;
    s->ino = (unsigned long long)st.st_ino;
    s->size = (unsigned long long)st.st_size;
    s->mtime_s = st.st_mtim.tv_sec, s->mtime_ns = st.st_mtim.tv_nsec;
    s->ctime_s = st.st_ctim.tv_sec, s->ctime_ns = st.st_ctim.tv_nsec;
    s->set = 1;
}

int ws_stamp_same(const struct zerg_ws_stamp *a, const struct zerg_ws_stamp *b)
{
    return a && b && a->set && b->set && a->dev == b->dev && a->ino == b->ino &&
           a->size == b->size && a->mtime_s == b->mtime_s &&
           a->mtime_ns == b->mtime_ns && a->ctime_s == b->ctime_s &&
           a->ctime_ns == b->ctime_ns;
}

/* ---- the steps ---------------------------------------------------------- */

static int run(const struct outputs *o, const char *const *args, char **out,
               size_t *len, struct zerg_err *err)
{
    struct zerg_git_call call = {.dir = o->top, .retries = WS_RETRIES};
    int rc = git_run_ex(o->g, &call, 0, args, out, len, err);
    return rc < 0 ? rc : 0;
}

/* git add -A of everything but the mounts. */
static int add_all(const struct outputs *o, struct zerg_err *err)
{
    struct ws_args a = {0};
    const char *add[] = {"add", "-A", NULL};
    int rc = mount_args(o, add, &a);
    rc = rc ? zerg_err_set(err, rc, "out of memory")
            : run(o, a.v, NULL, NULL, err);
    ws_args_free(&a);
    return rc;
}

/* Declared paths .gitignore ignores, added with -f (and listed). */
static int add_declared(const struct outputs *o, const struct zerg_task *t,
                        struct zerg_path_list *forced, struct zerg_err *err)
{
    struct ws_args ls = {0}, add = {0};
    const char *lsf[] = {"ls-files",           "-z", "--others", "--ignored",
                         "--exclude-standard", "--"};
    char *out = NULL;
    size_t len = 0, base;
    int rc = 0;
    for (size_t i = 0; i < 6 && !rc; i++)
        rc = argv_push(&ls, lsf[i], 0);
    base = ls.n;
    if (!rc)
        rc = push_declared(&ls, o, &t->files_create);
    if (!rc)
        rc = push_declared(&ls, o, &t->files_modify);
    if (rc || ls.n == base)
        goto out;
    rc = run(o, ls.v, &out, &len, err);
    const char *addf[] = {"add", "-f", "--"};
    for (size_t i = 0; i < 3 && !rc; i++)
        rc = argv_push(&add, addf[i], 0);
    base = add.n;
    for (const char *p = out; !rc && p && p < out + len; p += strlen(p) + 1) {
        if (!*p || is_run_file(o, p) || is_mounted(o, p))
            continue;
        rc = argv_spec(&add, p, 0);
        if (!rc && forced)
            zerg_path_list_add(forced, p);
    }
    if (!rc && add.n > base)
        rc = run(o, add.v, NULL, NULL, err);
out:
    if (rc == -ENOMEM)
        zerg_err_set(err, rc, "out of memory");
    free(out);
    ws_args_free(&ls);
    ws_args_free(&add);
    return rc;
}

/* Whatever a task staged of zerg's run files itself (git add -f) goes
 * back to HEAD: they never enter a commit. */
static int unstage_run_files(const struct outputs *o, struct zerg_err *err)
{
    struct ws_args a = {0};
    char rel[2 * PATH_MAX];
    const char *fixed[] = {"reset", "-q", "--", ":(top,literal)" WS_DIR};
    int rc = 0;
    for (size_t i = 0; i < 4 && !rc; i++)
        rc = argv_push(&a, fixed[i], 0);
    for (size_t i = 0; i < NRUN && !rc; i++) {
        snprintf(rel, sizeof rel, "%s%s", o->prefix, run_names[i]);
        size_t n = strlen(rel);
        if (n && rel[n - 1] == '/')
            rel[n - 1] = '\0';
        rc = argv_spec(&a, rel, 0);
    }
    rc = rc ? zerg_err_set(err, rc, "out of memory")
            : run(o, a.v, NULL, NULL, err);
    ws_args_free(&a);
    return rc;
}

/* When the running attempt started (its record, written by the
 * prepare), so ignored files an earlier task left in this worktree (a
 * build cache: the reset keeps ignored files) are not counted again for
 * this one.  0 when unknown: everything counts. */
static struct timespec attempt_start(const struct outputs *o)
{
    char gitdir[PATH_MAX], path[PATH_MAX + 32];
    struct stat st;
    struct zerg_err ignored = {0};
    if (ws_git_dir(o->g, o->top, gitdir, sizeof gitdir, &ignored))
        return (struct timespec){0};
    snprintf(path, sizeof path, "%s/" WS_ATTEMPT_FILE, gitdir);
    return lstat(path, &st) ? (struct timespec){0} : st.st_mtim;
}

/* 1 when rel was made or changed (at its top, for a directory) since. */
static int newer(const struct outputs *o, const char *rel,
                 struct timespec since)
{
    char path[2 * PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", o->top, rel);
    if (lstat(path, &st))
        return 1;
    return st.st_mtim.tv_sec > since.tv_sec ||
           (st.st_mtim.tv_sec == since.tv_sec &&
            st.st_mtim.tv_nsec >= since.tv_nsec);
}

/* The untracked ignored paths of the worktree, NUL-separated (a
 * directory wholly ignored as one path, "dir/"). */
static int ls_ignored(const struct outputs *o, char **out, size_t *len,
                      struct zerg_err *err)
{
    const char *args[] = {"ls-files",           "-z",
                          "--others",           "--ignored",
                          "--directory",        "--no-empty-directory",
                          "--exclude-standard", NULL};
    return run(o, args, out, len, err);
}

/* Of that listing, the undeclared ignored paths this attempt left out of
 * the commit. */
static void list_ignored(const struct outputs *o, const char *out, size_t len,
                         struct zerg_path_list *l)
{
    struct timespec since = attempt_start(o);
    for (const char *p = out; p && p < out + len; p += strlen(p) + 1)
        if (*p && !is_run_file(o, p) && !is_mounted(o, p) && newer(o, p, since))
            zerg_path_list_add(l, p);
}

/* 1 when a declared path of l is one of the listed ignored paths, lies
 * inside one or holds one: only then can add_declared force anything. */
static int declared_in(const struct outputs *o, const struct zerg_strlist *l,
                       const char *out, size_t len)
{
    char rel[2 * PATH_MAX];
    for (size_t i = 0; i < l->n; i++) {
        if (!declared_rel(o, l->v[i], rel))
            continue;
        for (const char *p = out; p && p < out + len; p += strlen(p) + 1)
            if (*p && (under(rel, p) || under(p, rel)))
                return 1;
    }
    return 0;
}

/* The project's prefix inside the worktree: project_dir below top. */
static void project_prefix(struct outputs *o, const char *project_dir)
{
    char real[PATH_MAX];
    size_t tl = strlen(o->top);
    o->prefix[0] = '\0';
    if (project_dir && realpath(project_dir, real) &&
        !strncmp(real, o->top, tl) && real[tl] == '/' && real[tl + 1])
        snprintf(o->prefix, sizeof o->prefix, "%s/", real + tl + 1);
}

/* 1 when the index is still the file the prepare left (outs->index):
 * the task staged nothing, so none of zerg's run files is staged. */
static int index_untouched(const struct outputs *o,
                           const struct zerg_ws_outputs *outs)
{
    char gitdir[PATH_MAX];
    struct zerg_ws_stamp now;
    struct zerg_err ignored = {0};
    if (!outs || !outs->index || !outs->index->set ||
        ws_git_dir(o->g, o->top, gitdir, sizeof gitdir, &ignored))
        return 0;
    ws_stamp_index(gitdir, &now);
    return ws_stamp_same(outs->index, &now);
}

/* The declared paths forced in and the ignored ones listed: one listing
 * does for both when no declared path is among the ignored (the common
 * case), else the forcing goes first and the listing is taken again. */
static int stage_ignored(const struct outputs *o,
                         const struct zerg_ws_outputs *outs,
                         struct zerg_err *err)
{
    const struct zerg_task *t = outs ? outs->task : NULL;
    struct zerg_path_list *l = outs ? outs->ignored : NULL;
    char *out = NULL;
    size_t len = 0;
    int rc = l ? ls_ignored(o, &out, &len, err) : 0;
    int force = t && (!l || declared_in(o, &t->files_create, out, len) ||
                      declared_in(o, &t->files_modify, out, len));
    if (!rc && force)
        rc = add_declared(o, t, outs->forced, err);
    if (!rc && force && l) {
        free(out), out = NULL, len = 0;
        rc = ls_ignored(o, &out, &len, err);
    }
    if (!rc && l)
        list_ignored(o, out, len, l);
    free(out);
    return rc;
}

int ws_outputs_stage(const struct zerg_git *g, const char *top,
                     const struct zerg_ws_outputs *outs, struct zerg_err *err)
{
    struct outputs o = {.g = g, .top = top};
    project_prefix(&o, outs ? outs->project_dir : NULL);
    find_mounts(&o);
    int keep_index = index_untouched(&o, outs);
    int rc = add_all(&o, err);
    if (!rc)
        rc = stage_ignored(&o, outs, err);
    if (!rc && !keep_index)
        rc = unstage_run_files(&o, err);
    for (size_t i = 0; i < o.nmounts; i++)
        free(o.mounts[i]);
    return rc;
}

/* What makes the full staging needless: no tracked file changed (staged
 * or not), no untracked file but zerg's and the mounts', no ignored path
 * made since the attempt began, and no declared path to force in. */
static int untouched_in(const struct outputs *o, const char *out, size_t len)
{
    struct timespec since = attempt_start(o);
    for (const char *p = out; p && p < out + len; p += strlen(p) + 1) {
        if (strlen(p) < 4)
            continue;
        const char *rel = p + 3;
        int other = !strncmp(p, "?? ", 3), ignored = !strncmp(p, "!! ", 3);
        if ((other || ignored) && (is_run_file(o, rel) || is_mounted(o, rel)))
            continue;
        if (ignored && !newer(o, rel, since))
            continue;
        return 0;
    }
    return 1;
}

int ws_outputs_untouched(const struct zerg_git *g, const char *top,
                         const struct zerg_ws_outputs *outs,
                         struct zerg_err *err)
{
    const struct zerg_task *t = outs ? outs->task : NULL;
    if (t && (t->files_create.n || t->files_modify.n))
        return 0; /* declared paths may need forcing in: ws_outputs_stage */
    struct outputs o = {.g = g, .top = top};
    project_prefix(&o, outs ? outs->project_dir : NULL);
    find_mounts(&o);
    const char *args[] = {"--no-optional-locks",
                          "status",
                          "--porcelain",
                          "-z",
                          "--no-renames",
                          "--untracked-files=all",
                          "--ignored=matching",
                          "--ignore-submodules=none",
                          NULL};
    char *out = NULL;
    size_t len = 0;
    int rc = run(&o, args, &out, &len, err);
    int untouched = rc ? rc : untouched_in(&o, out, len);
    free(out);
    for (size_t i = 0; i < o.nmounts; i++)
        free(o.mounts[i]);
    return untouched;
}

int zerg_ws_outputs_missing(const char *project_dir,
                            const struct zerg_task *task,
                            struct zerg_path_list *missing)
{
    char path[2 * PATH_MAX];
    struct stat st;
    int n = 0;
    for (size_t i = 0; task && i < task->files_create.n; i++) {
        const char *p = task->files_create.v[i];
        if (!p || !*p)
            continue;
        snprintf(path, sizeof path, "%s/%s", project_dir, p);
        /* A link counts: it was made; "dir/" must be a directory. */
        size_t len = strlen(p);
        int ok = p[len - 1] == '/' ? !stat(path, &st) && S_ISDIR(st.st_mode)
                                   : !lstat(path, &st);
        if (!ok) {
            zerg_path_list_add(missing, p);
            n++;
        }
    }
    return n;
}
