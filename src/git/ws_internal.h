/* ws_internal.h - what the workspace files of src/git share: the
 * orchestrator's workspace object behind the ops table, the worktree
 * listing, the trailer reader and the patch maker. */
#ifndef ZERG_WS_INTERNAL_H
#define ZERG_WS_INTERNAL_H

#include <limits.h>
#include <stddef.h>

#include "git/git_coproc.h"
#include "zerg/git.h"
#include "zerg/workspace.h"

struct zerg_err;
struct zerg_log;

#define WS_DIR ".zerg-worktrees"
/* In a worktree's git dir, written by each prepare (ws_worker.c): its
 * mtime is when the running attempt started. */
#define WS_ATTEMPT_FILE "zerg-attempt"
#define WS_FEATURE_MAX 200
#define WS_RETRIES 5     /* transient git errors of one call */
#define WS_CAS_TRIES 100 /* merge rounds lost to a moved tip */

/* The orchestrator's workspace; pub first so the ops cast back. */
struct ws_host {
    struct zerg_workspace pub;
    struct zerg_git g;
    char feature[WS_FEATURE_MAX + 1];
    char run_id[128];
    char ref[PATH_MAX + 16]; /* refs/heads/zerg/{feature}/integration */
    int nslots;
    int own; /* container workers: slots hold repositories of their own */
    char logs[PATH_MAX]; /* <project>/.zerg/logs/{feature}: what is saved */
    struct zerg_log *log;
    void (*on_ref)(void *ud, const char *ref, const char *oid);
    void *ref_ud;
    char **done; /* "task\x1f" "attempt\x1f" "run" merged since base */
    /* Where the integration branch was left by this process's last
     * merge, "" when not known: the next merge starts from it, and the
     * compare-and-swap says if the branch moved meanwhile. */
    char tip[ZERG_GIT_OID_MAX];
    size_t ndone, done_cap;
    /* The merge's questions over a pipe (ws_pipes.c): what a commit
     * changed, and the compare-and-swap of the branch. */
    struct git_coproc diff, refs;
};

/* ws_pipes.c: what commit changed against base (one path a line,
 * malloc'd in *paths), from the running diff-tree: 0, or negative when it
 * could not say (ask git the plain way). */
int ws_pipe_changed(struct ws_host *h, const char *commit, const char *base,
                    char **paths);
/* ref moved from old to new in one transaction of the running
 * update-ref: 0 when done, negative when not (the swap lost, or the pipe
 * broke: ask git the plain way, which says which). */
int ws_pipe_swap(struct ws_host *h, const char *ref, const char *new_oid,
                 const char *old_oid);

/* Called between reading the tip and the compare-and-swap of a merge;
 * tests set it to move the tip behind the merge's back.  NULL normally. */
extern void (*ws_merge_race_hook)(struct ws_host *h);

/* ws_host.c: tells the caller (git.refs) that ref now points at oid;
 * ws_note_ref_at resolves it first (nothing when it does not exist). */
void ws_note_ref(struct ws_host *h, const char *ref, const char *oid);
void ws_note_ref_at(struct ws_host *h, const char *ref);

/* ws_names.c */
int ws_name_valid(const char *s);
int ws_check_name(const char *what, const char *s, struct zerg_err *err);

/* ws_tree.c: `git worktree list --porcelain -z`, one entry each. */
struct ws_wt {
    char path[PATH_MAX];
    char head[ZERG_GIT_OID_MAX];
    char branch[PATH_MAX]; /* refs/heads/..., "" when detached */
    int prunable;
};
int ws_list_worktrees(const struct zerg_git *g, struct ws_wt **wts, size_t *n,
                      struct zerg_err *err);
/* <top>/.zerg-worktrees/{feature}/{name} */
int ws_tree_path(const struct zerg_git *g, const char *feature,
                 const char *name, char *buf, size_t n);
/* Makes path a worktree of g on branch (created at rev when missing) or,
 * branch NULL, detached at rev; reuses a valid one, re-adds one whose
 * directory vanished.  A symbolic link for .zerg-worktrees, the feature's
 * directory or path is removed (never followed); a directory at path git
 * does not know is moved to logs_dir/worktrees/ (with logs_dir NULL it is
 * an error).  1 when made, 0 when reused, negative on error. */
int ws_ensure_worktree(const struct zerg_git *g, const char *feature,
                       const char *path, const char *branch, const char *rev,
                       const char *logs_dir, struct zerg_err *err);
/* 1 when the branch ref (full name) is checked out in a worktree other
 * than the one at except (NULL: any), with its path in where; 0 when
 * not; negative on error.  From `git worktree list --porcelain`. */
int ws_checked_out(const struct zerg_git *g, const char *ref,
                   const char *except, char *where, size_t n,
                   struct zerg_err *err);
/* ZERG_EGIT_CHECKED_OUT with the sentence that says so and the fix; then
 * is what to do after switching ("run zerg again"). */
/* ws_heads.c: ws_checked_out for any worktree, answered from the HEAD
 * files (no process) and from `git worktree list` only when they do not
 * answer plainly; where gets the worktree's path. */
int ws_checked_out_now(const struct zerg_git *g, const char *ref, char *where,
                       size_t n, struct zerg_err *err);
/* The ref a HEAD file's text names ("ref: refs/heads/x"), "" otherwise. */
void ws_head_text_ref(const char *text, size_t len, char *out, size_t n);
/* The commit HEAD of the worktree whose git dir is gitdir names, read
 * from the files (HEAD, then the branch's loose ref under common_dir):
 * 0 with oid set, -1 when they do not say it plainly (a packed ref, a
 * link, a symbolic ref): then git must. */
int ws_head_commit(const char *gitdir, const char *common_dir,
                   char oid[ZERG_GIT_OID_MAX]);
int ws_refuse_checked_out(const char *ref, const char *where, const char *then,
                          struct zerg_err *err);
/* 1 when ref (full name) exists, 0 when not, negative on error. */
int ws_ref_exists(const struct zerg_git *g, const char *ref,
                  struct zerg_err *err);

/* ws_trailers.c: the task commits of `git log args...`, fn per commit
 * with a Task-ID trailer (oldest first when args say --reverse). */
int ws_log_tasks(const struct zerg_git *g, const char *const *range,
                 zerg_ws_found_fn fn, void *ud, struct zerg_err *err);
/* "task\x1fattempt\x1frun", malloc'd. */
char *ws_done_key(const char *task, int attempt, const char *run);
int ws_done_has(const struct ws_host *h, const char *key);
int ws_done_add(struct ws_host *h, char *key); /* takes key */
int ws_done_load(struct ws_host *h, struct zerg_err *err);

/* ws_merge.c: the ops of the merge queue. */
int ws_op_changed(struct zerg_workspace *w, const char *commit,
                  const char *base, char **paths, struct zerg_err *err);
int ws_op_merge(struct zerg_workspace *w, const struct zerg_merge_req *req,
                struct zerg_merge_out *out, struct zerg_err *err);
int ws_op_keep(struct zerg_workspace *w, enum zerg_ws_kept kind,
               const char *task, int attempt, const char *commit,
               struct zerg_err *err);
int ws_op_merged(struct zerg_workspace *w, zerg_ws_found_fn fn, void *ud,
                 struct zerg_err *err);
int ws_op_worker_head(struct zerg_workspace *w, int slot, zerg_ws_found_fn fn,
                      void *ud, struct zerg_err *err);

/* ws_branch.c: the integration branch at open. */
int ws_setup_branch(struct ws_host *h, const struct zerg_ws_opts *o,
                    struct zerg_err *err);
int ws_add_excludes(const struct zerg_git *g, struct zerg_err *err);

/* ws_outputs.c: a git argv for a command that scans a worktree (add -A,
 * clean): fixed (NULL-terminated, "clean", "-ffdq"), then "-- ." and an
 * exclude of each mount point below top, so nothing mounted into the
 * worktree is taken or cleaned (a container's read-only .gsd/ and .zerg/
 * of the host).  a zero-initialised; a->v NULL-terminated; free with
 * ws_args_free.  0 or -ENOMEM. */
struct ws_args {
    const char **v;
    char **own;
    size_t n, nown, cap;
};
int ws_worktree_args(const char *top, const char *const *fixed,
                     struct ws_args *a);
void ws_args_free(struct ws_args *a);

/* ws_outputs.c: stages what the attempt's commit takes in the worktree
 * at top: git add -A of all but zerg's run files and the mount points
 * below top, declared ignored paths with -f (outs may be NULL). */
int ws_outputs_stage(const struct zerg_git *g, const char *top,
                     const struct zerg_ws_outputs *outs, struct zerg_err *err);
/* The stamp of gitdir/index (unset when it cannot be read as a regular
 * file), and whether two stamps name one unchanged file. */
void ws_stamp_index(const char *gitdir, struct zerg_ws_stamp *s);
int ws_stamp_same(const struct zerg_ws_stamp *a, const struct zerg_ws_stamp *b);
/* 1 when the attempt left nothing ws_outputs_stage would stage or report
 * (one `git status`, where staging and its checks take four): no change,
 * no new untracked or ignored path, no declared path.  0 otherwise,
 * negative on error. */
int ws_outputs_untouched(const struct zerg_git *g, const char *top,
                         const struct zerg_ws_outputs *outs,
                         struct zerg_err *err);

/* ws_record.c: the attempt a worktree last ran and where its leftovers
 * go.  The record is <git dir>/WS_ATTEMPT_FILE, "task\nattempt\n". */
#define WS_ATTEMPT_FILE "zerg-attempt"
/* 0 and task/attempt, or ZERG_ENOTFOUND when there is none (gitdir NULL,
 * or not zerg's). */
int ws_read_record(const char *gitdir, char *task, size_t n, int *attempt);
/* rel (under the logs dir) and file name for the leftovers of the
 * worktree at top: tasks/{id} and attempt-{n}.patch of the recorded
 * attempt, else worktrees and {worktree}-{timestamp}.patch.  0 or
 * -ENAMETOOLONG. */
int ws_leftover_place(const char *gitdir, const char *top, char *rel,
                      size_t reln, char *name, size_t namen);

/* ws_patch.c: the uncommitted changes of dir against HEAD as a binary
 * patch (*data malloc'd, *len 0 when clean), through a temporary index
 * so the real one is untouched.  A file over WS_PATCH_FILE_MAX, or past
 * WS_PATCH_TOTAL_MAX in all, is left out, named with its size in the
 * patch's header and in skip (may be NULL). */
#define WS_PATCH_FILE_MAX ((size_t)64 << 20)
#define WS_PATCH_TOTAL_MAX ((size_t)256 << 20)
struct ws_skip {
    int n;                /* files left out */
    char text[1024];      /* "path (N bytes); ..." */
    char first[PATH_MAX]; /* the first of them, and its size */
    long long first_size;
    int clean; /* the tree was found clean: no patch, nothing untracked */
};
int ws_patch_make(const struct zerg_git *g, const char *dir,
                  struct ws_skip *skip, char **data, size_t *len,
                  struct zerg_err *err);
/* The worktree's own git dir (absolute). */
int ws_git_dir(const struct zerg_git *g, const char *dir, char *buf, size_t n,
               struct zerg_err *err);

/* ws_heal.c: a slot that heals (DESIGN §18). */
/* 1 when the small file at path (never through a link) holds exactly
 * want, its trailing newline aside. */
int ws_file_says(const char *path, const char *want);
struct ws_heal {
    char why[200];        /* what was wrong, "" when nothing */
    char saved[PATH_MAX]; /* where the broken .git went, "" when nowhere */
};
/* 0 when path resolves to itself, ZERG_ESYMLINK (err says where it
 * leads) when a component is a symbolic link. */
int ws_path_check(const char *path, struct zerg_err *err);
/* The admin dir (<common>/worktrees/<id>) of the worktree at path on
 * branch, or ZERG_ENOTFOUND. */
int ws_admin_dir(const struct zerg_git *g, const char *path, const char *branch,
                 char *buf, size_t n);
/* Gives the worktree at path on branch its .git file back when a task
 * replaced or broke it; the broken one is moved to
 * logs_dir/worktrees/<name>-<timestamp>.git.  1 when repaired (out set),
 * 0 when it was sound, negative (ZERG_ENOTFOUND: no registration). */
int ws_heal_dotgit(const struct zerg_git *g, const char *path,
                   const char *branch, const char *logs_dir,
                   struct ws_heal *out, struct zerg_err *err);
/* Renames what to logs_dir/worktrees/<base>-<timestamp><suffix>; fills
 * saved. */
int ws_move_aside(const char *what, const char *logs_dir, const char *base,
                  const char *suffix, char *saved, size_t n,
                  struct zerg_err *err);
/* Removes the stale locks of a slot when no git process runs in its
 * worktree: gitdir's index, HEAD and ORIG_HEAD locks and, with common and
 * a zerg/ branch, that branch's ref lock.  1 when any was removed
 * (out->why says which), 0 when none or held, -errno. */
int ws_heal_lock(const char *gitdir, const char *common, const char *branch,
                 const char *worktree, struct ws_heal *out);
/* ws_heal_lock of the worktree's own git directory and the common one;
 * 0 when its git directory cannot be told. */
int ws_heal_tree_lock(const struct zerg_git *g, const char *worktree,
                      const char *branch, struct ws_heal *out);

/* ws_own.c: 1 when top/.git is a repository zerg made for a container
 * slot and still sound (a real directory, no commondir, its alternates
 * exactly objects, no http-alternates), so that zerg's own git may run
 * there (`zerg cleanup`): checked on the files, before any git runs. */
int ws_own_sound(const char *top, const char *objects);
/* ws_own.c: 1 when the worktree at top holds a file git would take, what
 * is mounted into it aside; 0, or negative. */
int ws_own_has_files(const struct zerg_git *g, const char *top,
                     struct zerg_err *err);

/* ws_own_host.c: a container worker's slot (DESIGN §19).  The slot's
 * directory made (1), or kept (0); a worktree of the repository there is
 * moved under the logs first. */
int ws_own_slot(struct ws_host *h, int slot, const char *path,
                struct zerg_err *err);
/* The import op: the attempt's bundle taken in, the worker branch moved
 * to commit.  0 (also without own repositories), ZERG_ENOTFOUND, or
 * negative. */
int ws_op_import(struct zerg_workspace *w, int slot, const char *task,
                 int attempt, const char *commit, struct zerg_err *err);
/* Resume: the bundle of the attempt the slot's repository recorded. */
void ws_own_take_recorded(struct ws_host *h, int slot);

#endif
