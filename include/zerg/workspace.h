/* workspace.h - isolation of workers in git worktrees (DESIGN §13).
 *
 * The model: an integration branch zerg/{feature}/integration that only
 * the orchestrator moves (compare-and-swap update-ref), a worktree per
 * worker slot at .zerg-worktrees/{feature}/worker-{n} on branch
 * zerg/{feature}/worker-{n}, a commit per passing task made by the worker
 * in its worktree, and a squashed merge of that commit into the
 * integration branch by the orchestrator, without a checkout.
 *
 * Two halves:
 *   - the orchestrator's, an ops table (struct zerg_workspace) so the
 *     orchestrator knows no git and its unit tests can fake it;
 *   - the worker's, plain functions run in the worktree before and after
 *     each attempt. */
#ifndef ZERG_WORKSPACE_H
#define ZERG_WORKSPACE_H

#include <limits.h>
#include <stddef.h>

#include "zerg/git.h"

struct zerg_err;
struct zerg_log;
struct zerg_state_refs;

/* ---- names ------------------------------------------------------------ */

/* "zerg/{feature}/integration", "zerg/{feature}/worker-{n}",
 * ".zerg-worktrees/{feature}" (relative to the repository top),
 * "refs/zerg/{feature}/conflicts/{id}/{attempt}".  0 or -ENAMETOOLONG. */
int zerg_ws_integration_branch(char *buf, size_t n, const char *feature);
int zerg_ws_worker_branch(char *buf, size_t n, const char *feature, int slot);
int zerg_ws_conflict_ref(char *buf, size_t n, const char *feature,
                         const char *task, int attempt);
/* Where a commit is kept for a task's attempt: a conflict's
 * (refs/zerg/{feature}/conflicts/{id}/{attempt}) or one that waits for
 * review (refs/zerg/{feature}/review/{id}/{attempt}, rush.review). */
enum zerg_ws_kept { ZERG_WS_KEPT_CONFLICT, ZERG_WS_KEPT_REVIEW };
int zerg_ws_kept_ref(char *buf, size_t n, const char *feature,
                     enum zerg_ws_kept kind, const char *task, int attempt);

/* The commit message of a task: "ZERG [W{n}]: {title}\n\nTask-ID: {id}\n
 * Attempt: {a}\nZerg-Run: {run}\n".  malloc'd, NULL on ENOMEM. */
char *zerg_ws_commit_message(int worker, const char *title, const char *task,
                             int attempt, const char *run_id);

/* ---- the orchestrator's half ------------------------------------------ */

struct zerg_merge_req {
    const char *task_id;
    int attempt;
    int worker;
    const char *title;
    const char *run_id;
    const char *commit; /* the attempt's commit on its worker branch */
};

enum zerg_merge_status {
    ZERG_MERGE_DONE,     /* squashed onto the integration branch */
    ZERG_MERGE_ALREADY,  /* this task's attempt is already on it (resume) */
    ZERG_MERGE_CONFLICT, /* nothing merged; conflicts lists the paths */
};

struct zerg_merge_out {
    enum zerg_merge_status status;
    char tip[ZERG_GIT_OID_MAX];  /* the integration tip after */
    char tree[ZERG_GIT_OID_MAX]; /* DONE: the tip's tree ("" otherwise) */
    char *conflicts;             /* CONFLICT: malloc'd, one path a line */
};

/* One task commit found on the integration branch or a worker branch. */
struct zerg_ws_found {
    const char *task_id;
    int attempt;
    const char *run_id;
    const char *oid;
};
typedef void (*zerg_ws_found_fn)(void *ud, const struct zerg_ws_found *f);

struct zerg_workspace;
struct zerg_workspace_ops {
    /* The integration tip. */
    int (*tip)(struct zerg_workspace *w, char oid[ZERG_GIT_OID_MAX],
               struct zerg_err *err);
    /* The worktree of slot (host path), created or repaired if missing:
     * fills buf.  Also the directory tasks run in (the project's path
     * inside it for a monorepo) in cwd when cwd != NULL. */
    int (*worktree)(struct zerg_workspace *w, int slot, char *buf, size_t n,
                    char *cwd, size_t cwd_n, struct zerg_err *err);
    /* Paths the commit changed against its first-parent base (one a line,
     * malloc'd). */
    int (*changed)(struct zerg_workspace *w, const char *commit,
                   const char *base, char **paths, struct zerg_err *err);
    /* Squashes commit onto the integration branch.  Transient git errors
     * are retried inside; a negative return is permanent. */
    int (*merge)(struct zerg_workspace *w, const struct zerg_merge_req *req,
                 struct zerg_merge_out *out, struct zerg_err *err);
    /* Keeps a commit at its conflict or review ref (zerg_ws_kept_ref). */
    int (*keep)(struct zerg_workspace *w, enum zerg_ws_kept kind,
                const char *task, int attempt, const char *commit,
                struct zerg_err *err);
    /* Calls fn for every task commit on the integration branch since the
     * base (resume: what is merged already). */
    int (*merged)(struct zerg_workspace *w, zerg_ws_found_fn fn, void *ud,
                  struct zerg_err *err);
    /* The task commit at the tip of slot's worker branch, if its head is
     * one (resume: committed but not merged).  0 found, ZERG_ENOTFOUND. */
    int (*worker_head)(struct zerg_workspace *w, int slot, zerg_ws_found_fn fn,
                       void *ud, struct zerg_err *err);
    /* A worktree of its own at the integration tip for the quality gates
     * (detached); fills buf with the directory to run them in. */
    int (*gate_tree)(struct zerg_workspace *w, char *buf, size_t n,
                     struct zerg_err *err);
    /* Container workers (DESIGN §19): takes the attempt's commit in from
     * the bundle its worker wrote and moves the slot's worker branch
     * there.  NULL, or 0 at once, when workers share the repository. */
    int (*import)(struct zerg_workspace *w, int slot, const char *task,
                  int attempt, const char *commit, struct zerg_err *err);
    void (*free)(struct zerg_workspace *w);
};

struct zerg_workspace {
    const struct zerg_workspace_ops *ops;
    char base[ZERG_GIT_OID_MAX]; /* git.base of the run */
    char branch[PATH_MAX];       /* zerg/{feature}/integration */
    char renamed[PATH_MAX];      /* the old integration branch was moved
                                    here at open, "" when not */
    char git_dir[PATH_MAX];      /* the repository's common git dir, as
                                    found by the host at open ("" in
                                    fakes): what a container mounts, never
                                    what a worktree's .git file says */
};

struct zerg_ws_opts {
    const char *project; /* absolute project root */
    const char *feature;
    const char *run_id;
    const char *base;          /* rush.base; NULL or "" = HEAD */
    const char *recorded_base; /* state's git.base on resume, else NULL */
    int fresh;                 /* a new run (not --resume) */
    int nslots;                /* worktrees made up front */
    /* Container workers: each slot holds a repository of its own that
     * its worker makes (borrowing the objects), not a worktree of this
     * repository; commits come in as bundles (DESIGN §19). */
    int own_repos;
    struct zerg_log *log; /* worktree_ready, ... ; may be NULL */
    /* Called with every ref the workspace creates, moves or takes into
     * use (full name, the oid it points at after), for git.refs in the
     * run's state: `zerg cleanup` deletes only those.  May be NULL. */
    void (*on_ref)(void *ud, const char *ref, const char *oid);
    void *ref_ud;
};

/* Opens the workspace of a rush: checks git, the repository and base,
 * creates or reuses the integration branch (renaming one that holds
 * commits outside the base on a fresh run), adds zerg's run files
 * (.zerg/state/, .zerg/logs/, .zerg/reports/, the monitor log) and
 * .zerg-worktrees/ to .git/info/exclude (removing the /.zerg/ and /.gsd/
 * lines an older zerg wrote) and makes the worktrees.  NULL
 * with err set: ZERG_EGIT_* or ZERG_EINVAL_INPUT (a base that does not
 * exist, a branch name clash), ZERG_EGIT_CHECKED_OUT (the integration or
 * a worker branch is checked out in a worktree not zerg's), the fix in
 * the message.  Merges fail with ZERG_EGIT_CHECKED_OUT too when the
 * integration branch got checked out meanwhile: nothing is moved. */
struct zerg_workspace *zerg_ws_open(const struct zerg_ws_opts *o,
                                    struct zerg_err *err);

/* The git the workspace opened (found, version-checked, its repository
 * known), for the caller's own calls on the same repository. */
const struct zerg_git *zerg_ws_git(const struct zerg_workspace *w);

/* 1 when isolation `auto` means worktree for dir: a git repository with
 * at least one commit (and a usable git). */
int zerg_ws_auto_applies(const char *dir);

/* ---- cleanup and status (CLI) ------------------------------------------ */

typedef void (*zerg_ws_say_fn)(void *ud, const char *line);

struct zerg_ws_cleanup_opts {
    const char *project;
    const char *feature;
    const char *logs_dir; /* .zerg/logs/{feature}: where patches go */
    const char *base;     /* git.base of the run, NULL when unknown */
    /* git.refs of the run: only these are deleted.  refs_known 0 (a state
     * of an older zerg, or none): the feature's refs by their names. */
    const struct zerg_state_refs *refs;
    int refs_known;
    int all;     /* also the integration branches and conflict refs */
    int force;   /* also refs holding work not merged, or moved by hand */
    int dry_run; /* only say what would be done */
    zerg_ws_say_fn say;
    void *ud;
    int held;     /* out: refs kept that --force would delete */
    int kept_own; /* out: refs of zerg's kept (held or checked out) */
};

/* Removes the feature's worktrees (saving uncommitted work first where
 * the worker would have: tasks/{id}/attempt-{n}.patch of the attempt the
 * worktree last ran, else worktrees/{name}-{ts}.patch, under logs_dir)
 * and worker branches; with all, also its integration branches and
 * conflict refs.  Never a ref zerg did not record creating (when
 * refs_known), never a branch checked out in a worktree; an integration
 * branch holding commits on no other branch and a conflict ref moved
 * since zerg set it only with force (counted in held otherwise).  Each
 * action is reported through say.  The number of actions or negative. */
int zerg_ws_cleanup(struct zerg_ws_cleanup_opts *o, struct zerg_err *err);

struct zerg_ws_info {
    int exists; /* the integration branch exists */
    char branch[PATH_MAX];
    char tip[ZERG_GIT_OID_MAX];
    int commits; /* on the branch since base */
    int nworktrees;
    struct {
        int slot;
        char path[PATH_MAX];
        char head[ZERG_GIT_OID_MAX];
        int dirty;
    } wt[64];
};
int zerg_ws_describe(const char *project, const char *feature, const char *base,
                     struct zerg_ws_info *out, struct zerg_err *err);

/* ---- the worker's half ------------------------------------------------- */

/* Before an attempt: if the worktree holds uncommitted changes (tracked or
 * untracked, not ignored), saves them as a patch under logs_dir
 * (tasks/{id}/attempt-{n}.patch of the attempt that left them, recorded
 * in the worktree's git dir) and fills patch (else ""); then resets the
 * worktree and its branch to base, removes untracked files and records
 * task/attempt as the running attempt. */
int zerg_ws_attempt_prepare(const struct zerg_git *g, const char *worktree,
                            const char *base, const char *logs_dir,
                            const char *task, int attempt, char *patch,
                            size_t patch_n, struct zerg_err *err);

/* What zerg_ws_slot_prepare did besides the reset (all "" when nothing). */
/* A file's identity and last change, as lstat saw them: git replaces
 * its index whole (a lock file renamed over it), so an index whose stamp
 * is still the one taken after the reset was not written since, and its
 * entries are still the base's.  set 0: not taken. */
struct zerg_ws_stamp {
    unsigned long long dev, ino, size;
    long long mtime_s, mtime_ns, ctime_s, ctime_ns;
    int set;
};

struct zerg_ws_prepared {
    char patch[PATH_MAX]; /* the leftovers saved, "" when clean */
    char repaired[200];   /* what was wrong with the slot's .git */
    char saved[PATH_MAX]; /* where the broken .git was moved */
    char lock[200];       /* a stale index.lock removed */
    int nskipped;         /* leftover files too large to save */
    char skipped[1024];   /* "path (N bytes); ...", also in the patch */
    char first[PATH_MAX]; /* the first of them, and its size */
    long long first_size;
    struct zerg_ws_stamp index; /* the index as the reset left it */
};

/* zerg_ws_attempt_prepare for the worktree of a slot on branch
 * (zerg/{feature}/worker-{n}), healing it first (DESIGN §18): a path
 * through a symbolic link is refused (ZERG_ESYMLINK) and a worktree that
 * is not a linked worktree of g's repository on branch is refused
 * (ZERG_EGIT_FAILED), both before anything is touched; a .git a task
 * replaced or broke is moved to logs_dir/worktrees/ and rewritten; a
 * stale index.lock is removed; leftover files over 64 MiB (or past
 * 256 MiB in all) are left out of the patch and named in its header.
 * out says what was done.  branch NULL: no healing, and any zerg/
 * branch will do. */
int zerg_ws_slot_prepare(const struct zerg_git *g, const char *worktree,
                         const char *branch, const char *base,
                         const char *logs_dir, const char *task, int attempt,
                         struct zerg_ws_prepared *out, struct zerg_err *err);

/* ---- a container worker's own repository (DESIGN §19) ---------------
 * In container mode a slot's worktree holds a repository of its own that
 * borrows the host's objects (objects: their directory, mounted read-only
 * at the same path) instead of a worktree of the host repository; the
 * host takes each commit from the attempt's bundle.  src/git/ws_own.c. */

/* Makes worktree/.git that repository, HEAD on branch, or mends it: a
 * .git that is a link, a file or another repository's (commondir) is
 * made again, the broken one kept inside as .git/replaced-{timestamp}
 * (the worktree is a mount of its own: nothing crosses file systems), a
 * rewritten alternates or HEAD is put back (out->repaired, out->saved say
 * so).  A link on the path itself is refused (ZERG_ESYMLINK).  1 when
 * made or mended, 0 when sound, negative on error. */
int zerg_ws_own_ensure(const char *worktree, const char *objects,
                       const char *branch, struct zerg_ws_prepared *out,
                       struct zerg_err *err);
/* zerg_ws_slot_prepare for such a slot: the repository ensured first. */
int zerg_ws_own_prepare(const struct zerg_git *g, const char *worktree,
                        const char *objects, const char *branch,
                        const char *base, const char *logs_dir,
                        const char *task, int attempt,
                        struct zerg_ws_prepared *out, struct zerg_err *err);
/* After the attempt's commit: writes branch's commits since base as
 * logs_dir/tasks/{task}/attempt-{n}.bundle (an older one of the same
 * attempt is kept as attempt-{n}-{k}.bundle), once branch's tip is
 * checked to be commit. */
int zerg_ws_own_bundle(const struct zerg_git *g, const char *worktree,
                       const char *branch, const char *base, const char *commit,
                       const char *logs_dir, const char *task, int attempt,
                       struct zerg_err *err);

/* What an attempt's commit takes (DESIGN §18, src/git/ws_outputs.c):
 * the task's declared files (files.create and files.modify, relative to
 * project_dir, the project's directory in the worktree) are committed
 * even when .gitignore ignores them, each listed in forced; undeclared
 * ignored paths are listed in ignored (relative to the worktree's top;
 * a directory as one path).  Either list may be NULL.  index: the
 * stamp of the prepare (NULL or unset: unknown); an index still that
 * file holds none of zerg's run files the task staged itself, and the
 * unstaging (a `git reset` of them) is spared. */
struct zerg_task;
struct zerg_path_list;
struct zerg_ws_outputs {
    const struct zerg_task *task;
    const char *project_dir;
    struct zerg_path_list *forced;
    struct zerg_path_list *ignored;
    const struct zerg_ws_stamp *index;
    /* The base's tree as the assignment gives it (NULL or "": git is
     * asked when HEAD is still the base). */
    const char *base_tree;
};

/* After an attempt passed: commits everything changed (git add -A, but
 * never zerg's run files nor what is mounted into the worktree; outs
 * NULL: nothing declared) with message on top of whatever the agent
 * committed itself.  oid = the branch head when it differs from base,
 * "" when the task changed nothing. */
int zerg_ws_attempt_commit(const struct zerg_git *g, const char *worktree,
                           const char *base, const char *message,
                           const struct zerg_ws_outputs *outs,
                           char oid[ZERG_GIT_OID_MAX], struct zerg_err *err);

/* 1 when path (relative to the project) is one of zerg's run files
 * (.zerg/state/, .zerg/logs/, .zerg/reports/, the monitor log,
 * .zerg-worktrees/), which never enter a commit, declared or not. */
int zerg_ws_run_file(const char *path);

/* After an attempt passed, in either isolation: adds to missing each
 * files.create path of task that does not exist under project_dir (a
 * path ending in '/' must be a directory); returns how many. */
int zerg_ws_outputs_missing(const char *project_dir,
                            const struct zerg_task *task,
                            struct zerg_path_list *missing);

/* Saves uncommitted changes of dir as a patch file (tracked and untracked
 * files, binary-safe) without touching the worktree or its index.  1 when
 * written, 0 when there was nothing to save. */
int zerg_ws_save_patch(const struct zerg_git *g, const char *dir,
                       const char *path, struct zerg_err *err);

#endif
