/* git_internal.h - what the files of src/git share and nobody else uses:
 * the process runner under zerg_git_run and the variant of it that hands
 * back the length of a binary output (patches, -z listings). */
#ifndef ZERG_GIT_INTERNAL_H
#define ZERG_GIT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <limits.h>

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
    /* The output depends only on where the repository, its git dirs and
     * work tree are, HEAD and the config (rev-parse --show-toplevel,
     * --git-dir, --git-common-dir, --absolute-git-dir): it is reused
     * while the configuration scan of the directory is (git_scan.c). */
    GIT_RUN_LAYOUT = 1 << 1,
};

/* The argv zerg_git_run would spawn for args in dir: git, the global
 * options, the overrides of the config scan (list, kept here), the
 * identity when the config has none, then args; argv points into the
 * struct.  git_argv_build: 0 or negative with err set. */
struct git_argv {
    const char **argv;
    char *strs;
    char *list; /* the config scan the overrides answer */
    size_t list_len;
    char worktree_opt[PATH_MAX + 16];
    char ident[2][160];
};
int git_argv_build(const struct zerg_git *g, const char *dir,
                   const char *const *args, struct git_argv *b,
                   struct zerg_err *err);
void git_argv_free(struct git_argv *b);

/* git_spawn.c: argv started with its stdin and stdout on pipes (our ends,
 * O_CLOEXEC, in *to and *from) and stderr on /dev/null, the same
 * environment and signal set-up as git_spawn.  0 or -errno. */
int git_spawn_piped(const char *const *argv, const char *const *envp,
                    pid_t *pid, int *to, int *from);

/* zerg_git_run with flags and the length of *out (out_len may be NULL). */
int git_run_ex(const struct zerg_git *g, const struct zerg_git_call *call,
               int flags, const char *const *args, char **out, size_t *out_len,
               struct zerg_err *err);

/* Runs git and copies its first output line into buf.  0 or negative. */
int git_line(const struct zerg_git *g, const char *dir, const char *const *args,
             char *buf, size_t n, struct zerg_err *err);
/* The same with git_run_ex flags. */
int git_line_ex(const struct zerg_git *g, const char *dir, int flags,
                const char *const *args, char *buf, size_t n,
                struct zerg_err *err);

/* The effective configuration of dir with scopes ("scope\0key\nvalue\0"
 * records, malloc'd in *list): a fresh `git config --list --show-scope
 * --show-origin`, or the result of the last one while every file that
 * could contribute to it is as it was then (git_scan.c).  0 or negative
 * with err set. */
int git_scan_config(const struct zerg_git *g, const char *dir, char **list,
                    size_t *len, struct zerg_err *err);

/* The cache under git_scan_config, for tests.  git_scan_store keeps the
 * scan `raw` ("scope\0origin\0key\nvalue\0") of dir begun at start_ns
 * (system: the system file's path); 1 when kept, 0 when the scan cannot
 * be cached.  git_scan_lookup copies a kept listing that is still valid:
 * 1, 0 (none or no longer valid), -ENOMEM.  git_scan_forget empties the
 * cache. */
int git_scan_store(const char *dir, const char *system, const char *raw,
                   size_t raw_len, int64_t start_ns);
int git_scan_lookup(const char *dir, char **list, size_t *len);
void git_scan_forget(void);

/* Layout queries (rev-parse --show-toplevel, --git-dir ...: outputs that
 * depend only on what the scan of dir depends on) answered from dir's
 * cache entry.  git_scan_query_get: 1 with *out (malloc'd), *len and
 * *status when the query `key` ran since the entry's scan and the scan
 * of this call was just found valid; 0 otherwise.  git_scan_query_put
 * keeps a query's output when the entry is still valid after it ran
 * (else the entry is dropped). */
int git_scan_query_get(const char *dir, const char *key, char **out,
                       size_t *len, int *status);
void git_scan_query_put(const char *dir, const char *key, const char *out,
                        size_t len, int status);

/* The clock (CLOCK_REALTIME, ns) and stat the cache uses: tests replace
 * them. */
struct git_scan_hooks {
    int64_t (*now_ns)(void);
    int (*stat)(const char *path, struct stat *st);
};
extern struct git_scan_hooks git_scan_hooks;

/* Scans run and scans answered from the cache in this process. */
struct git_scan_stats {
    unsigned long scans, hits, query_hits;
};
extern struct git_scan_stats git_scan_stats;

/* Sleeps a little before retry number `attempt` (0-based): 20, 30, 40 and
 * then 50 ms, long enough for another git to drop its lock. */
void git_pause(int attempt);

#endif
