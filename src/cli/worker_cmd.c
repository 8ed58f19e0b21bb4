/* cli/worker_cmd.c - `zerg worker`: the process the orchestrator spawns for
 * each worker slot (internal; users do not run it by hand).
 *
 *   zerg worker --slot N --epoch E --run-id R [--feature F]
 *
 * Parses the command line, resolves the feature like every other command
 * and hands over to zerg_worker_run (src/worker.c).  $ZERG_ORCH_PID, set by
 * the subprocess launcher, names the orchestrator the worker must not
 * outlive. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "zerg/graph.h"
#include "zerg/worker.h"

static const char usage[] =
    "usage: zerg worker --slot N --epoch E --run-id R [--feature F]\n"
    "                   [--workspace WORKTREE [--workdir DIR] [--objects "
    "DIR]]\n"
    "\n"
    "Runs one worker of a `zerg rush` (started by the orchestrator).\n"
    "With --workspace, each attempt runs in that git worktree (in DIR\n"
    "inside it), reset to the assignment's base first and committed after.\n"
    "With --objects (container mode), WORKTREE holds a repository of its\n"
    "own borrowing the objects in DIR, and each commit is also written as\n"
    "a bundle under the feature's logs for the host to take.\n"
    "Exit codes: 0 stopped, 1 runtime error, 2 usage, 3 config or task\n"
    "graph unreadable, 4 orchestrator gone.\n";

struct worker_args {
    long long slot;
    uint64_t epoch;
    const char *run_id;
    const char *workspace, *workdir, *objects;
    int have_slot, have_epoch;
};

/* Parses a non-negative decimal integer up to max; 0 or -1. */
static int parse_uint(const char *s, unsigned long long max,
                      unsigned long long *out)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

/* The value of option name at argv[*i] ("--x V" or "--x=V"), or NULL
 * when argv[*i] is not that option.  *missing is set when V is absent. */
static const char *opt_value(char **argv, int argc, int *i, const char *name,
                             int *missing)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

static int bad_value(const char *opt, const char *v)
{
    zerg_cli_error("worker",
                   "bad value \"%s\" for %s: expected a non-negative integer",
                   v, opt);
    return ZERG_WORKER_EXIT_USAGE;
}

/* 0, or ZERG_WORKER_EXIT_USAGE after printing why. */
static int parse_args(struct zerg_cli *cli, int argc, char **argv,
                      struct worker_args *wa)
{
    for (int i = 1; i < argc; i++) {
        int missing = 0;
        const char *v;
        unsigned long long n;
        if ((v = opt_value(argv, argc, &i, "--slot", &missing))) {
            if (parse_uint(v, INT_MAX, &n) < 0)
                return bad_value("--slot", v);
            wa->slot = (long long)n, wa->have_slot = 1;
        } else if ((v = opt_value(argv, argc, &i, "--epoch", &missing))) {
            if (parse_uint(v, UINT64_MAX, &n) < 0)
                return bad_value("--epoch", v);
            wa->epoch = n, wa->have_epoch = 1;
        } else if ((v = opt_value(argv, argc, &i, "--run-id", &missing))) {
            wa->run_id = v;
        } else if ((v = opt_value(argv, argc, &i, "--feature", &missing))) {
            cli->feature_opt = v;
        } else if ((v = opt_value(argv, argc, &i, "--workspace", &missing))) {
            wa->workspace = v;
        } else if ((v = opt_value(argv, argc, &i, "--workdir", &missing))) {
            wa->workdir = v;
        } else if ((v = opt_value(argv, argc, &i, "--objects", &missing))) {
            wa->objects = v;
        } else {
            zerg_cli_error("worker",
                           missing ? "%s needs a value\n%s"
                                   : "unknown argument \"%s\"\n%s",
                           argv[i], usage);
            return ZERG_WORKER_EXIT_USAGE;
        }
    }
    if (!wa->have_slot || !wa->have_epoch || !wa->run_id || !*wa->run_id) {
        zerg_cli_error("worker",
                       "--slot, --epoch and --run-id are required\n%s", usage);
        return ZERG_WORKER_EXIT_USAGE;
    }
    if ((wa->workspace && wa->workspace[0] != '/') ||
        (wa->workdir && (wa->workdir[0] != '/' || !wa->workspace)) ||
        (wa->objects && (wa->objects[0] != '/' || !wa->workspace))) {
        zerg_cli_error("worker",
                       "--workspace, --workdir and --objects take absolute "
                       "paths, and --workdir and --objects need "
                       "--workspace\n%s",
                       usage);
        return ZERG_WORKER_EXIT_USAGE;
    }
    if (!zerg_id_valid(wa->run_id)) {
        zerg_cli_error("worker",
                       "bad value \"%s\" for --run-id: expected letters, "
                       "digits, '.', '_' or '-' (at most 64)",
                       wa->run_id);
        return ZERG_WORKER_EXIT_USAGE;
    }
    return 0;
}

/* $ZERG_ORCH_PID as a pid, 0 when unset or unusable. */
static pid_t orch_pid_from_env(void)
{
    unsigned long long n;
    const char *s = getenv("ZERG_ORCH_PID");
    if (!s || parse_uint(s, INT_MAX, &n) < 0 || n < 2)
        return 0;
    return (pid_t)n;
}

int zerg_cmd_worker(struct zerg_cli *cli, int argc, char **argv)
{
    struct worker_args wa = {0};
    struct zerg_err err = {0};
    char feature[ZERG_ID_MAX + 1];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return ZERG_WORKER_EXIT_OK;
        }
    }
    int rc = parse_args(cli, argc, argv, &wa);
    if (rc)
        return rc;
    if (zerg_cli_feature(cli, feature, sizeof feature, &err) < 0) {
        zerg_cli_error("worker", "%s", err.msg);
        return ZERG_WORKER_EXIT_SETUP;
    }
    struct zerg_worker_opts o = {
        .project = cli->project,
        .feature = feature,
        .slot = (int)wa.slot,
        .epoch = wa.epoch,
        .run_id = wa.run_id,
        .workspace = wa.workspace,
        .workdir = wa.workdir,
        .objects = wa.objects,
        .orch_pid = orch_pid_from_env(),
    };
    rc = zerg_worker_run(&o, &err);
    if (rc != ZERG_WORKER_EXIT_OK && err.msg[0])
        zerg_cli_error("worker", "%s", err.msg);
    return rc;
}
