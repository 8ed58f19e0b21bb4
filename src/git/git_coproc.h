/* git_coproc.h - a git process kept running for many requests over its
 * stdin and stdout (git_coproc.c). */
#ifndef ZERG_GIT_COPROC_H
#define ZERG_GIT_COPROC_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "zerg/git.h"

struct zerg_err;

struct git_coproc {
    pid_t pid; /* 0 when not running */
    int to, from;
    char dir[PATH_MAX];
    char *list; /* the configuration scan it was started under */
    size_t list_len;
    char *buf; /* its output not yet handed out, from off */
    size_t len, cap, off;
};
#define GIT_COPROC_INIT                                                        \
    {                                                                          \
        .to = -1, .from = -1                                                   \
    }

/* Running in dir as `git <overrides> args`, started under the overrides
 * of dir's configuration as it is now (restarted when it changed).  0 or
 * negative with err set. */
int git_coproc_ensure(const struct zerg_git *g, struct git_coproc *c,
                      const char *dir, const char *const *args,
                      struct zerg_err *err);
/* Writes data to its stdin: 0, or negative (it is stopped). */
int git_coproc_send(struct git_coproc *c, const char *data, size_t len);
/* The next record of its output up to term (not included; NUL put in
 * its place), valid until the next call: 0, or negative (it is stopped:
 * gone, or silent for a minute). */
int git_coproc_record(struct git_coproc *c, char term, const char **rec,
                      size_t *len);
/* Ends it (EOF on its stdin, SIGKILL if it does not leave within 5 s). */
void git_coproc_stop(struct git_coproc *c);
void git_coproc_free(struct git_coproc *c);

#endif
