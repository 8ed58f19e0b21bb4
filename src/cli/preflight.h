/* preflight.h - what `zerg validate` and the start of every `zerg rush`
 * check about the executor before any worker exists (DESIGN §14):
 *
 *   - when the graph has a task without `command`, the executor
 *     (executor.claude for kind claude, workers.executor[0] for kind
 *     command, `--executor CMD`'s first word) must resolve and answer
 *     `EXE --version` with exit 0 within 10 s where the workers run: on
 *     PATH for subprocess mode, inside the image for container mode
 *     (`RUNTIME run --rm IMAGE EXE --version`).  Every worker would fail
 *     the same way otherwise, minutes later, one environment failure each;
 *   - a task whose estimate_minutes exceeds
 *     workers.task_stale_timeout_seconds gets a warning: the stale check
 *     is about progress, and the estimate suggests long silent stretches.
 *
 * Argv only, never a shell.  The functions take the project directory
 * rather than the CLI context so that tests/unit/cli/test_preflight.c can
 * compile this file in on its own. */
#ifndef ZERG_CLI_PREFLIGHT_H
#define ZERG_CLI_PREFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "zerg/config.h"

struct zerg_graph;

/* At most this many stale-estimate warnings are listed one by one; the
 * rest become one "... and N more" line. */
#define ZERG_PREFLIGHT_WARN_MAX 5

/* The executor's `--version` must answer within this. */
#define ZERG_PREFLIGHT_VERSION_TIMEOUT_NS (10 * 1000000000LL)
/* In container mode the same, plus a container start. */
#define ZERG_PREFLIGHT_CONTAINER_TIMEOUT_NS (30 * 1000000000LL)

struct zerg_preflight {
    size_t agent_tasks;  /* tasks without `command` */
    const char *exe;     /* the executor's argv[0] as configured (points
                            into the config or the override), NULL when
                            no agent task needs one */
    const char *exe_key; /* the key that names it: "executor.claude", ... */
    char where[32];      /* "on PATH", "in image 'zerg-worker'", ... */
    int checked;         /* the executor was run */
    int ok;              /* 1: nothing to check, or it answered */
    char version[128];   /* its `--version` line when ok && checked */
    char error[1024];    /* when !ok: what failed, then "Fix: ..." */
    char **warnings;     /* one line each, owned */
    size_t nwarnings;
};

/* Appends one warning line per task whose estimate_minutes exceeds the
 * stale timeout (ZERG_PREFLIGHT_WARN_MAX of them, then "... and N more").
 * Pure.  0 or -ENOMEM. */
int zerg_preflight_stale_warnings(const struct zerg_graph *g,
                                  const struct zerg_config *cfg,
                                  struct zerg_preflight *pf);

/* Appends a copy of line to pf's warnings.  0 or -ENOMEM. */
int zerg_preflight_warn(struct zerg_preflight *pf, const char *line);

/* shell_check.c: appends one warning line per task command or
 * verification command that
 * `/bin/sh -n` cannot parse (each distinct text checked once), naming the
 * task, sh's message and, for <(...), that it is bash syntax.  0 or
 * -ENOMEM. */
int zerg_preflight_shell_warnings(const struct zerg_graph *g,
                                  struct zerg_preflight *pf);

/* Runs the whole pre-flight for mode (auto: container when a runtime and
 * the image answer, as `--mode auto` picks; slurm: on this machine, the
 * nodes are expected to match it).  override is `zerg rush --executor
 * CMD` or NULL.  pf is filled (zeroed first); 0, or -ENOMEM. */
int zerg_preflight_run(const char *project, const struct zerg_config *cfg,
                       const struct zerg_graph *g, enum zerg_mode mode,
                       const char *override, struct zerg_preflight *pf);

void zerg_preflight_close(struct zerg_preflight *pf);

/* For `zerg rush`: runs the pre-flight, prints the warnings and, on a
 * failure, the error with its fix to stderr as "zerg rush: ...".
 * 0 when the rush may go on, else the exit code (1). */
int zerg_preflight_rush(const char *project, const struct zerg_config *cfg,
                        const struct zerg_graph *g, enum zerg_mode mode,
                        const char *override);

#endif
