/* git.h - git run as a program, safely (DESIGN §13).
 *
 * Every call is an argv (never a shell string) run with posix_spawn.  The
 * environment is the caller's minus every GIT_* variable, plus
 * GIT_TERMINAL_PROMPT=0 and LC_ALL=C (the system config is read: it is
 * root's, and may hold the user's LFS).  A worker can write the
 * repository's .git/config (it shares the common dir with its worktree),
 * so before each call zerg takes the effective configuration with scopes
 * (`git config --null --list --show-scope`, which runs nothing) in the
 * directory the call runs in (reused while every file it depends on is
 * unchanged, src/git/git_scan.c), and overrides on the
 * command line every key that makes git run a program: core.fsmonitor,
 * core.hooksPath (an empty directory zerg owns), core.sshCommand,
 * core.editor, core.pager, core.askPass, credential helpers, gpg programs,
 * filter.<driver>.{clean,smudge,process,required}, merge.<driver>.driver,
 * diff.<driver>.{command,textconv}, diff.external and the like.  Nothing a
 * worker planted runs in zerg's own calls; the filter drivers of the
 * user's global and system config (git-crypt, LFS) keep running. */
#ifndef ZERG_GIT_H
#define ZERG_GIT_H

#include <limits.h>
#include <stddef.h>

struct zerg_err;

#define ZERG_GIT_OID_MAX 65 /* 40 (sha1) or 64 (sha256) hex + NUL */
#define ZERG_GIT_MIN_MAJOR 2
#define ZERG_GIT_MIN_MINOR 38 /* merge-tree --write-tree */

/* Error codes of git calls, below the common ones of err.h. */
enum {
    ZERG_EGIT_TRANSIENT = -5100,   /* a locked index or ref: try again */
    ZERG_EGIT_FAILED = -5101,      /* git exited non-zero (err has stderr) */
    ZERG_EGIT_OLD = -5102,         /* git older than 2.38 */
    ZERG_EGIT_MISSING = -5103,     /* no git on PATH */
    ZERG_EGIT_NOREPO = -5104,      /* not a repository / no commit */
    ZERG_EGIT_CHECKED_OUT = -5105, /* a branch zerg would move is checked
                                      out in a worktree (DESIGN §18) */
    ZERG_EGIT_KILLED = -5106,      /* git was killed by a signal (the OOM
                                      killer, an outside kill): not the
                                      task's fault, and what it left (a
                                      lock) is healed by the next attempt */
};

struct zerg_git {
    char bin[PATH_MAX];        /* absolute path of git */
    int major, minor;          /* its version */
    char top[PATH_MAX];        /* top of the work tree holding the project */
    char common_dir[PATH_MAX]; /* absolute common git dir (.git) */
    char prefix[PATH_MAX];     /* project dir relative to top, "" at top */
    char hooks_dir[PATH_MAX];  /* empty dir zerg owns (core.hooksPath) */
    char identity_name[128];   /* used when the config has no user.name */
    char identity_email[128];
};

/* Finds git (PATH), checks its version, and the repository holding dir.
 * hooks_dir is created if missing (mode 0700); NULL or "" means
 * /dev/null, below which no hook file can exist.  ZERG_EGIT_MISSING,
 * ZERG_EGIT_OLD (the message names the version needed) or ZERG_EGIT_NOREPO
 * with err set. */
int zerg_git_open(struct zerg_git *g, const char *dir, const char *hooks_dir,
                  struct zerg_err *err);

/* Options of one call. */
struct zerg_git_call {
    const char *dir;        /* -C dir; NULL = g->top */
    const char *index_file; /* GIT_INDEX_FILE, NULL = default */
    const char *input;      /* written to stdin, NULL = /dev/null */
    size_t input_len;
    int ok_status; /* an exit status that is not an error (e.g. 1
                      for merge-tree conflicts); 0 = none */
    int retries;   /* transient failures retried this often */
};

/* Runs `git -c <safe overrides> args...` (args NULL-terminated, without
 * "git").  *out (malloc'd, NUL-terminated stdout) when out != NULL.
 * Returns the exit status when it is 0 or call->ok_status, else
 * ZERG_EGIT_TRANSIENT or ZERG_EGIT_FAILED with err holding the command and
 * its stderr's last lines; other negatives for spawn errors. */
int zerg_git_run(const struct zerg_git *g, const struct zerg_git_call *call,
                 const char *const *args, char **out, struct zerg_err *err);

/* 1 when stderr text says an index or ref lock was in the way. */
int zerg_git_stderr_transient(const char *stderr_text);

/* The -c overrides for the effective configuration `list` (the NUL-
 * separated output of `git config --null --list`): fills args with
 * alternating "-c", "key=value" pointers into strs (a buffer of strs_size
 * bytes); returns how many entries of args were used, -ENOSPC, or -EINVAL
 * for a key no -c can answer (a '=' in a filter/merge/diff... subsection
 * name: the call must not run).  Pure: unit-tested. */
int zerg_git_safe_overrides(const char *list, size_t list_len,
                            const char *hooks_dir, const char **args,
                            size_t max_args, char *strs, size_t strs_size);

/* The same for a listing with scopes (`git config --null --list
 * --show-scope`: "scope\0key\nvalue\0" records).  A filter driver's
 * clean/smudge/process/required from the "system" or "global" scope is
 * the user's and is kept; the same keys from any other scope are pinned
 * to the user's last value or blanked (see git_safe.c).  The unscoped
 * variant above treats every record as the repository's. */
int zerg_git_safe_overrides_scoped(const char *list, size_t list_len,
                                   const char *hooks_dir, const char **args,
                                   size_t max_args, char *strs,
                                   size_t strs_size);

/* Resolves rev to a commit id (`rev-parse --verify rev^{commit}`).
 * ZERG_ENOTFOUND when there is no such commit. */
int zerg_git_resolve(const struct zerg_git *g, const char *dir, const char *rev,
                     char oid[ZERG_GIT_OID_MAX], struct zerg_err *err);

#endif
