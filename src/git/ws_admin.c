/* ws_admin.c - the workspace seen from the CLI: `zerg cleanup` (the
 * feature's worktrees removed after their uncommitted work is saved as
 * patches -- a worktree git can no longer read is moved under the logs
 * whole instead --, its worker branches deleted, with --all its integration and
 * conflict refs too), `zerg status`'s description, and whether isolation
 * `auto` means worktrees for a directory.
 *
 * Cleanup deletes only what it can tell is zerg's and holds nothing lost
 * (DESIGN §18): a ref the run's state lists in git.refs (by name when the
 * state predates the list), never a branch checked out in a worktree, an
 * integration branch whose commits are on none of the user's branches
 * only with --force, a conflict ref moved since zerg set it likewise.
 * Worker branches are moved by their workers at every attempt, so only
 * the first two rules apply to them. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/state.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct cleanup {
    struct zerg_git g;
    struct zerg_ws_cleanup_opts *o;
    int actions;
    struct ws_wt *wts; /* the worktrees, for what is checked out */
    size_t nwts;
};

__attribute__((format(printf, 2, 3))) static void say(struct cleanup *c,
                                                      const char *fmt, ...)
{
    char line[4 * PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    c->actions++;
    if (c->o->say)
        c->o->say(c->o->ud, line);
}

/* .../.zerg-worktrees/{feature}/ prefix of the feature's worktrees. */
static int feature_dir(const struct cleanup *c, char *buf, size_t n)
{
    return zerg_fsio_path(buf, n, "%s/" WS_DIR "/%s/", c->g.top, c->o->feature);
}

/* A worker's worktree whose .git a task replaced or broke gets it back
 * first (the broken one kept), so that its work can become a patch; the
 * locks a killed git left in the slot go (no rush runs: cleanup refuses
 * while one holds the feature's lock), or the patch and the branch's
 * deletion would fail on them. */
static void heal(struct cleanup *c, const char *path, const char *name)
{
    char branch[PATH_MAX];
    struct ws_heal h = {0};
    struct zerg_err ignored = {0};
    if (strncmp(name, "worker-", 7) ||
        zerg_fsio_path(branch, sizeof branch, "zerg/%s/%s", c->o->feature,
                       name))
        return;
    if (ws_heal_dotgit(&c->g, path, branch, c->o->logs_dir, &h, &ignored) == 1)
        say(c, "Repaired worktree %s: %s", path, h.why);
    struct ws_heal lk = {0};
    if (ws_heal_tree_lock(&c->g, path, branch, &lk) == 1)
        say(c, "Repaired worktree %s: %s", path, lk.why);
}

/* When git cannot read a worktree any more, the whole directory is moved
 * under the logs instead of a patch: nothing unsaved is deleted.  1. */
static int move_tree(struct cleanup *c, const char *path, const char *name,
                     struct zerg_err *err)
{
    char saved[PATH_MAX], why[400];
    snprintf(why, sizeof why, "%.300s", err->msg);
    int rc = ws_move_aside(path, c->o->logs_dir, name, ".tree", saved,
                           sizeof saved, err);
    if (rc)
        return rc;
    char line[PATH_MAX + 400];
    snprintf(line, sizeof line, "%s (git cannot read it: %.300s)", saved, why);
    say(c, "Moved worktree %s to %s", path, line);
    return 1;
}

/* Where the leftovers of the worktree at path go: the place the worker
 * would have put them (the attempt it recorded), unless a patch is there
 * already: then the timestamped one, so no saved patch is overwritten. */
static int patch_file(struct cleanup *c, const char *path, char *rel,
                      size_t reln, char *file, size_t filen)
{
    char gitdir[PATH_MAX], name[128];
    struct zerg_err ignored = {0};
    int have = !ws_git_dir(&c->g, path, gitdir, sizeof gitdir, &ignored);
    for (int pass = 0; pass < 2; pass++) {
        if (ws_leftover_place(pass || !have ? NULL : gitdir, path, rel, reln,
                              name, sizeof name) ||
            zerg_fsio_path(file, filen, "%s/%s/%s", c->o->logs_dir, rel, name))
            return -ENAMETOOLONG;
        if (access(file, F_OK))
            return 0;
    }
    return -EEXIST;
}

/* 0 when saved (or clean), 1 when the tree was moved aside whole. */
static int save_one(struct cleanup *c, const char *path, const char *name,
                    struct zerg_err *err)
{
    char rel[PATH_MAX], file[2 * PATH_MAX], *data = NULL;
    size_t len = 0;
    if (access(path, F_OK) || !c->o->logs_dir)
        return 0;
    heal(c, path, name);
    int rc = ws_patch_make(&c->g, path, NULL, &data, &len, err);
    if (rc || len == 0) {
        free(data);
        return rc < 0 ? move_tree(c, path, name, err) : rc;
    }
    rc = patch_file(c, path, rel, sizeof rel, file, sizeof file);
    if (rc)
        rc = zerg_err_set(err, rc, "no place to save the work of %s: %s", path,
                          strerror(-rc));
    if (!rc)
        rc = zerg_fsio_mkdirs_own(c->o->logs_dir, rel, 0755, err);
    if (!rc)
        rc = zerg_fsio_write_atomic(file, data, len, ZERG_FSIO_DURABLE, err);
    free(data);
    if (!rc)
        say(c, "Saved the uncommitted work of %s to %s", path, file);
    return rc;
}

static int remove_tree(struct cleanup *c, const char *path,
                       struct zerg_err *err)
{
    if (c->o->dry_run) {
        say(c, "Would remove worktree %s%s", path,
            access(path, F_OK) ? "" : " (saving uncommitted work first)");
        return 0;
    }
    if (access(path, F_OK)) {
        say(c, "Forgot worktree %s, whose directory is gone", path);
        return 0; /* the prune below drops its registration */
    }
    int rc = save_one(c, path, strrchr(path, '/') + 1, err);
    if (rc)
        return rc < 0 ? rc : 0; /* moved aside: the prune forgets it */
    const char *args[] = {"worktree", "remove", "-f", "-f", path, NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    rc = zerg_git_run(&c->g, &call, args, NULL, err);
    if (rc < 0)
        return rc;
    say(c, "Removed worktree %s", path);
    return 0;
}

/* A container worker's slot (DESIGN §19), a repository of its own, not a
 * worktree git lists: its uncommitted work saved as a patch when the
 * repository is one zerg made (checked on the files, before any git runs
 * there), else the whole slot moved under the logs; then removed. */
static int remove_own(struct cleanup *c, const char *path, const char *name,
                      struct zerg_err *err)
{
    char objects[PATH_MAX + 16], rel[PATH_MAX], file[2 * PATH_MAX];
    char *data = NULL;
    size_t len = 0;
    struct zerg_git box;
    if (c->o->dry_run) {
        say(c, "Would remove worktree %s (saving uncommitted work first)",
            path);
        return 0;
    }
    snprintf(objects, sizeof objects, "%s/objects", c->g.common_dir);
    int rc = ws_own_sound(path, objects) ? 0 : ZERG_EGIT_NOREPO;
    if (rc)
        zerg_err_set(err, rc, "its .git is not a repository zerg made");
    if (!rc)
        rc = zerg_git_open(&box, path, NULL, err);
    if (!rc)
        rc = ws_patch_make(&box, path, NULL, &data, &len, err);
    if (rc < 0) {
        free(data);
        return (rc = move_tree(c, path, name, err)) < 0 ? rc : 0;
    }
    if (len) {
        char gitdir[PATH_MAX + 8], pname[128];
        snprintf(gitdir, sizeof gitdir, "%s/.git", path);
        /* The recorded attempt's place, else (taken) a timestamped one. */
        for (int pass = 0; !rc && pass < 2; pass++) {
            if (ws_leftover_place(pass ? NULL : gitdir, path, rel, sizeof rel,
                                  pname, sizeof pname) ||
                zerg_fsio_path(file, sizeof file, "%s/%s/%s", c->o->logs_dir,
                               rel, pname))
                rc = zerg_err_set(err, -ENAMETOOLONG, "patch path too long");
            else if (access(file, F_OK))
                break;
        }
        if (!rc)
            rc = zerg_fsio_mkdirs_own(c->o->logs_dir, rel, 0755, err);
        if (!rc)
            rc =
                zerg_fsio_write_atomic(file, data, len, ZERG_FSIO_DURABLE, err);
        if (!rc)
            say(c, "Saved the uncommitted work of %s to %s", path, file);
    }
    free(data);
    if (!rc && (rc = zerg_fsio_remove_tree(path)))
        zerg_err_set(err, rc, "cannot remove %s: %s", path, strerror(-rc));
    if (!rc)
        say(c, "Removed worktree %s", path);
    return rc;
}

/* 1 when dir/name is a container slot's directory (worker-N, holding a
 * .git directory of its own), with its path. */
static int own_slot_path(const char *dir, const char *name, char *path,
                         size_t n)
{
    char dotgit[PATH_MAX + 8];
    struct stat st;
    if (strncmp(name, "worker-", 7) ||
        zerg_fsio_path(path, n, "%s%s", dir, name))
        return 0;
    snprintf(dotgit, sizeof dotgit, "%s/.git", path);
    return !lstat(path, &st) && S_ISDIR(st.st_mode) && !lstat(dotgit, &st) &&
           S_ISDIR(st.st_mode);
}

/* The feature's slots that are no worktree git lists: container slots. */
static int remove_own_slots(struct cleanup *c, const char *dir,
                            struct zerg_err *err)
{
    DIR *d = opendir(dir);
    int rc = 0;
    for (struct dirent *e; d && !rc && (e = readdir(d));) {
        char path[PATH_MAX];
        int listed = 0;
        if (!own_slot_path(dir, e->d_name, path, sizeof path))
            continue;
        for (size_t i = 0; i < c->nwts; i++)
            listed |= !strcmp(c->wts[i].path, path);
        if (!listed)
            rc = remove_own(c, path, e->d_name, err);
    }
    if (d)
        closedir(d);
    return rc;
}

static int remove_trees(struct cleanup *c, struct zerg_err *err)
{
    char dir[PATH_MAX];
    if (feature_dir(c, dir, sizeof dir))
        return zerg_err_set(err, -ENAMETOOLONG, "path too long");
    int rc = ws_list_worktrees(&c->g, &c->wts, &c->nwts, err);
    for (size_t i = 0; !rc && i < c->nwts; i++)
        if (!strncmp(c->wts[i].path, dir, strlen(dir)))
            rc = remove_tree(c, c->wts[i].path, err);
    if (!rc)
        rc = remove_own_slots(c, dir, err);
    if (rc || c->o->dry_run)
        return rc;
    const char *prune[] = {"worktree", "prune", NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    rc = zerg_git_run(&c->g, &call, prune, NULL, err);
    dir[strlen(dir) - 1] = '\0';
    rmdir(dir); /* only when empty: nothing unsaved goes */
    return rc < 0 ? rc : 0;
}

/* ---- refs ---------------------------------------------------------------- */

enum ref_kind { REF_OTHER, REF_WORKER, REF_INTEGRATION, REF_CONFLICT };

static enum ref_kind kind_of(const struct cleanup *c, const char *ref)
{
    char heads[PATH_MAX], own[PATH_MAX];
    snprintf(heads, sizeof heads, "refs/heads/zerg/%s/", c->o->feature);
    snprintf(own, sizeof own, "refs/zerg/%s/", c->o->feature);
    if (!strncmp(ref, own, strlen(own)))
        return REF_CONFLICT;
    if (strncmp(ref, heads, strlen(heads)))
        return REF_OTHER;
    const char *rest = ref + strlen(heads);
    if (!strncmp(rest, "worker-", 7))
        return REF_WORKER;
    if (!strcmp(rest, "integration") || !strncmp(rest, "integration.", 12))
        return REF_INTEGRATION;
    return REF_OTHER;
}

static const struct zerg_state_ref *recorded(const struct cleanup *c,
                                             const char *ref)
{
    for (size_t i = 0; c->o->refs && i < c->o->refs->n; i++)
        if (!strcmp(c->o->refs->v[i].name, ref))
            return &c->o->refs->v[i];
    return NULL;
}

/* The worktree (not one of the feature's, which cleanup removes) that
 * has branch ref checked out, NULL when none. */
static const char *checked_out_in(const struct cleanup *c, const char *ref)
{
    char dir[PATH_MAX];
    if (feature_dir(c, dir, sizeof dir))
        return NULL;
    for (size_t i = 0; i < c->nwts; i++)
        if (!strcmp(c->wts[i].branch, ref) &&
            strncmp(c->wts[i].path, dir, strlen(dir)))
            return c->wts[i].path;
    return NULL;
}

/* Commits of tip on none of the user's branches (local or remote-tracking,
 * the feature's zerg branches not counted) and not in the run's base:
 * the work deleting the branch would lose. */
static int unmerged(struct cleanup *c, const char *tip, long *n,
                    struct zerg_err *err)
{
    char exclude[PATH_MAX], buf[32];
    snprintf(exclude, sizeof exclude, "--exclude=zerg/%s/*", c->o->feature);
    const char *base = c->o->base && *c->o->base ? c->o->base : NULL;
    const char *args[] = {"rev-list",   "--count",   tip,  "--not", exclude,
                          "--branches", "--remotes", base, NULL};
    int rc = git_line(&c->g, NULL, args, buf, sizeof buf, err);
    *n = rc ? 0 : strtol(buf, NULL, 10);
    return rc;
}

/* The task commit at a worker branch's head, and whether the task landed
 * in its run (this attempt or another: a dead attempt's commit whose task
 * landed through a later one holds nothing lost). */
struct head_task {
    char task[256], run[128];
    int attempt, have, landed;
};

static void on_head(void *ud, const struct zerg_ws_found *f)
{
    struct head_task *h = ud;
    snprintf(h->task, sizeof h->task, "%s", f->task_id);
    snprintf(h->run, sizeof h->run, "%s", f->run_id ? f->run_id : "");
    h->attempt = f->attempt, h->have = 1;
}

static void on_landed(void *ud, const struct zerg_ws_found *f)
{
    struct head_task *h = ud;
    h->landed |= !strcmp(f->task_id, h->task) &&
                 !strcmp(f->run_id ? f->run_id : "", h->run);
}

/* 1 with h filled when the head of worker branch ref is the commit of a
 * task attempt whose task is on no branch but the feature's worker
 * branches in its run (no attempt of it landed): it
 * passed and was never merged (its orchestrator died first; --resume
 * merges it), and deleting the branch would lose it.  Merges squash, so
 * the attempt is looked for by its trailers, on the integration branch
 * and the user's branches (which hold it once the work was brought home). */
static int unmerged_task(struct cleanup *c, const char *ref,
                         struct head_task *h, struct zerg_err *err)
{
    const char *head[] = {"-1", "--end-of-options", ref, NULL};
    memset(h, 0, sizeof *h);
    int rc = ws_log_tasks(&c->g, head, on_head, h, err);
    if (rc || !h->have)
        return rc;
    char exclude[PATH_MAX];
    snprintf(exclude, sizeof exclude, "--exclude=zerg/%s/worker-*",
             c->o->feature);
    const char *base = c->o->base && *c->o->base ? c->o->base : NULL;
    const char *range[] = {
        exclude, "--branches", "--remotes", base ? "--not" : NULL, base, NULL};
    rc = ws_log_tasks(&c->g, range, on_landed, h, err);
    return rc ? rc : !h->landed;
}

enum verdict { V_SKIP, V_DELETE, V_KEEP, V_HOLD };

/* What becomes of ref (at tip); why says it for KEEP and HOLD. */
static int judge(struct cleanup *c, const char *ref, const char *tip, char *why,
                 size_t n, struct zerg_err *err)
{
    enum ref_kind k = kind_of(c, ref);
    const char *name = strncmp(ref, "refs/heads/", 11) ? ref : ref + 11;
    if (k == REF_OTHER || (k != REF_WORKER && !c->o->all))
        return V_SKIP;
    const struct zerg_state_ref *rec = recorded(c, ref);
    if (c->o->refs_known && !rec)
        return snprintf(why, n,
                        "the run's state does not list it as made by "
                        "zerg, so it is left as it is"),
               V_KEEP;
    const char *where = k == REF_CONFLICT ? NULL : checked_out_in(c, ref);
    if (where)
        return snprintf(why, n, "it is checked out in %s", where), V_KEEP;
    if (c->o->force)
        return V_DELETE;
    long ahead = 0;
    if (k == REF_INTEGRATION) {
        int rc = unmerged(c, tip, &ahead, err);
        if (rc)
            return rc;
    }
    struct head_task h;
    int lost = k == REF_WORKER ? unmerged_task(c, ref, &h, err) : 0;
    if (lost < 0)
        return lost;
    if (lost)
        return snprintf(why, n,
                        "its head is the commit of task %s (attempt %d), "
                        "which passed but is on no branch: `zerg rush "
                        "--resume` merges it, or delete it anyway with "
                        "--force",
                        h.task, h.attempt),
               V_HOLD;
    if (ahead > 0)
        return snprintf(why, n,
                        "it holds %ld commit%s on none of your branches; "
                        "bring %s home first (git merge %s) or delete it "
                        "anyway with --force",
                        ahead, ahead == 1 ? "" : "s",
                        ahead == 1 ? "it" : "them", name),
               V_HOLD;
    if (k == REF_CONFLICT && rec && rec->oid[0] && strcmp(rec->oid, tip))
        return snprintf(why, n,
                        "it moved since zerg set it (to %.12s, now at "
                        "%.12s); --force deletes it anyway",
                        rec->oid, tip),
               V_HOLD;
    return V_DELETE;
}

static int delete_ref(struct cleanup *c, const char *ref, const char *tip,
                      struct zerg_err *err)
{
    char why[2 * PATH_MAX] = "";
    const char *name = strncmp(ref, "refs/heads/", 11) ? ref : ref + 11;
    int v = judge(c, ref, tip, why, sizeof why, err);
    if (v < 0 || v == V_SKIP)
        return v < 0 ? v : 0;
    if (v != V_DELETE) {
        c->o->held += v == V_HOLD;
        c->o->kept_own += !c->o->refs_known || recorded(c, ref);
        say(c, "%s %s: %s", c->o->dry_run ? "Would keep" : "Kept", name, why);
        return 0;
    }
    if (c->o->dry_run) {
        say(c, "Would delete %s", ref);
        return 0;
    }
    /* With the tip judged: a branch moved meanwhile is not deleted. */
    const char *del[] = {"update-ref", "-d", ref, tip, NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    int rc = zerg_git_run(&c->g, &call, del, NULL, err);
    if (rc < 0)
        return rc;
    say(c, "Deleted %s", ref);
    return 0;
}

static int delete_refs(struct cleanup *c, struct zerg_err *err)
{
    char heads[PATH_MAX], own[PATH_MAX];
    snprintf(heads, sizeof heads, "refs/heads/zerg/%s/", c->o->feature);
    snprintf(own, sizeof own, "refs/zerg/%s/", c->o->feature);
    const char *args[] = {"for-each-ref", "--format=%(objectname) %(refname)",
                          heads, own, NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    char *out = NULL, *save = NULL;
    int rc = zerg_git_run(&c->g, &call, args, &out, err);
    if (rc < 0)
        return rc;
    rc = 0;
    if (!c->o->refs_known && out && *out)
        say(c,
            "The run's state does not list the refs zerg made (it is "
            "gone, or an older zerg wrote it): going by the names "
            "zerg/%s/..., never a checked-out branch",
            c->o->feature);
    for (char *l = strtok_r(out, "\n", &save); l && !rc;
         l = strtok_r(NULL, "\n", &save)) {
        char *sp = strchr(l, ' ');
        if (sp) {
            *sp = '\0';
            rc = delete_ref(c, sp + 1, l, err);
        }
    }
    free(out);
    return rc;
}

int zerg_ws_cleanup(struct zerg_ws_cleanup_opts *o, struct zerg_err *err)
{
    struct cleanup c = {.o = o};
    o->held = o->kept_own = 0;
    int rc = ws_check_name("feature", o->feature, err);
    if (!rc)
        rc = zerg_git_open(&c.g, o->project, NULL, err);
    if (!rc)
        rc = remove_trees(&c, err);
    if (!rc)
        rc = delete_refs(&c, err);
    free(c.wts);
    return rc ? rc : c.actions;
}

/* The feature's worker worktrees: slot, head and whether dirty. */
static int describe_trees(const struct zerg_git *g, const char *feature,
                          struct zerg_ws_info *out, struct zerg_err *err)
{
    char dir[PATH_MAX];
    struct ws_wt *wts;
    size_t n;
    zerg_fsio_path(dir, sizeof dir, "%s/" WS_DIR "/%s/worker-", g->top,
                   feature);
    int rc = ws_list_worktrees(g, &wts, &n, err);
    for (size_t i = 0; !rc && i < n && out->nworktrees < 64; i++) {
        if (strncmp(wts[i].path, dir, strlen(dir)) || wts[i].prunable)
            continue;
        int k = out->nworktrees++;
        out->wt[k].slot = atoi(wts[i].path + strlen(dir));
        snprintf(out->wt[k].path, sizeof out->wt[k].path, "%s", wts[i].path);
        snprintf(out->wt[k].head, sizeof out->wt[k].head, "%s", wts[i].head);
        const char *st[] = {"status", "--porcelain", "--ignore-submodules",
                            NULL};
        struct zerg_git_call call = {.dir = wts[i].path, .retries = 3};
        char *text = NULL;
        rc = zerg_git_run(g, &call, st, &text, err);
        out->wt[k].dirty = rc >= 0 && text && text[0];
        rc = rc < 0 ? rc : 0;
        free(text);
    }
    free(wts);
    return rc;
}

/* A container slot's head read from its files, its repository checked
 * first (zerg's git never runs in it for a status): "" when unknown. */
static void own_head(const struct zerg_git *g, const char *path, char *head,
                     size_t n)
{
    char objects[PATH_MAX + 16], file[PATH_MAX + 64], *text = NULL;
    size_t len = 0;
    struct zerg_err ignored = {0};
    head[0] = '\0';
    snprintf(objects, sizeof objects, "%s/objects", g->common_dir);
    snprintf(file, sizeof file, "%s/.git/HEAD", path);
    if (!ws_own_sound(path, objects) ||
        zerg_fsio_read_file(file, 4096, ZERG_FSIO_NOFOLLOW, &text, &len,
                            &ignored))
        return;
    text[strcspn(text, "\n")] = '\0';
    int ok = !strncmp(text, "ref: refs/heads/zerg/", 21) &&
             !strstr(text, "..") &&
             !zerg_fsio_path(file, sizeof file, "%s/.git/%s", path, text + 5);
    free(text);
    text = NULL;
    if (ok && !zerg_fsio_read_file(file, 4096, ZERG_FSIO_NOFOLLOW, &text, &len,
                                   &ignored))
        snprintf(head, n, "%.*s", (int)strcspn(text, "\n"), text);
    free(text);
}

/* The feature's container slots (no worktree git lists), after the
 * worktrees in out. */
static void describe_own(const struct zerg_git *g, const char *dir,
                         struct zerg_ws_info *out)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && out->nworktrees < 64 && (e = readdir(d));) {
        char path[PATH_MAX];
        int listed = 0;
        if (!own_slot_path(dir, e->d_name, path, sizeof path))
            continue;
        for (int i = 0; i < out->nworktrees; i++)
            listed |= !strcmp(out->wt[i].path, path);
        if (listed)
            continue;
        int k = out->nworktrees++;
        out->wt[k].slot = atoi(e->d_name + 7);
        snprintf(out->wt[k].path, sizeof out->wt[k].path, "%s", path);
        own_head(g, path, out->wt[k].head, sizeof out->wt[k].head);
    }
    if (d)
        closedir(d);
}

int zerg_ws_describe(const char *project, const char *feature, const char *base,
                     struct zerg_ws_info *out, struct zerg_err *err)
{
    struct zerg_git g;
    char ref[PATH_MAX + 16], range[2 * PATH_MAX], count[32];
    memset(out, 0, sizeof *out);
    int rc = ws_check_name("feature", feature, err);
    if (!rc)
        rc = zerg_git_open(&g, project, NULL, err);
    if (rc)
        return rc;
    zerg_ws_integration_branch(out->branch, sizeof out->branch, feature);
    snprintf(ref, sizeof ref, "refs/heads/%s", out->branch);
    rc = zerg_git_resolve(&g, NULL, ref, out->tip, err);
    out->exists = rc == 0;
    if (rc && rc != ZERG_ENOTFOUND)
        return rc;
    if (out->exists) {
        snprintf(range, sizeof range, "%s..%s", base && *base ? base : "HEAD",
                 ref);
        const char *args[] = {"rev-list", "--count", "--end-of-options", range,
                              NULL};
        rc = git_line(&g, NULL, args, count, sizeof count, err);
        if (rc)
            return rc;
        out->commits = atoi(count);
    }
    rc = describe_trees(&g, feature, out, err);
    char dir[PATH_MAX];
    if (!rc &&
        !zerg_fsio_path(dir, sizeof dir, "%s/" WS_DIR "/%s/", g.top, feature))
        describe_own(&g, dir, out);
    return rc;
}

int zerg_ws_auto_applies(const char *dir)
{
    struct zerg_git g;
    struct zerg_err err = {0};
    char oid[ZERG_GIT_OID_MAX];
    if (zerg_git_open(&g, dir, NULL, &err))
        return 0;
    return zerg_git_resolve(&g, NULL, "HEAD", oid, &err) == 0;
}
