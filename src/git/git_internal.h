/* git_internal.h - what the files of src/git share and nobody else uses:
 * the process runner under zerg_git_run and the variant of it that hands
 * back the length of a binary output (patches, -z listings). */
#ifndef ZERG_GIT_INTERNAL_H
#define ZERG_GIT_INTERNAL_H

#include <stddef.h>

#include "zerg/git.h"

struct zerg_err;

/* One spawned git process: argv[0] is the absolute git, env complete. */
struct git_proc {
    const char *const *argv;
    const char *const *envp;
    const char *input; /* stdin, NULL = /dev/null */
    size_t input_len;
    char *out; /* malloc'd stdout, NUL-terminated */
    size_t out_len;
    char *errtxt; /* malloc'd stderr tail, NUL-terminated */
    int status;   /* exit status, 128+signal when killed */
    int signal;   /* the signal that killed it, 0 when it exited */
};

/* Spawns p->argv with posix_spawn, feeds stdin and drains stdout and
 * stderr together (poll), then waits.  0 with p->out/errtxt/status set
 * (caller frees out and errtxt), or -errno with err set. */
int git_spawn(struct git_proc *p, struct zerg_err *err);

/* The environment of every git call: the caller's minus GIT_*, plus the
 * fixed variables and GIT_INDEX_FILE=index_file when not NULL.  malloc'd
 * array (NULL-terminated) whose strings are freed with git_env_free. */
char **git_env_new(const char *index_file);
void git_env_free(char **env);

enum {
    /* Never add --work-tree: the call asks where the work tree is. */
    GIT_RUN_NO_WORKTREE = 1 << 0,
};

/* zerg_git_run with flags and the length of *out (out_len may be NULL). */
int git_run_ex(const struct zerg_git *g, const struct zerg_git_call *call,
               int flags, const char *const *args, char **out, size_t *out_len,
               struct zerg_err *err);

/* Runs git and copies its first output line into buf.  0 or negative. */
int git_line(const struct zerg_git *g, const char *dir, const char *const *args,
             char *buf, size_t n, struct zerg_err *err);

/* Sleeps a little before retry number `attempt` (0-based): 20, 30, 40 and
 * then 50 ms, long enough for another git to drop its lock. */
void git_pause(int attempt);

#endif
