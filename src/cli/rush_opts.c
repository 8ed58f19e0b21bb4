/* rush_opts.c - the command line of `zerg rush`: its usage text and
 * the options into struct rush_opts, each checked (exit 2 with the
 * reason) before anything is read or written. */
#include "rush_opts.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: zerg rush [--feature F] [--workers N] [--mode MODE] [--resume]\n"
    "                 [--fresh] [--dry-run] [--executor CMD] [--no-progress]\n"
    "                 [--halt now|soon,fail=N|N%] [--timeout SECONDS]\n"
    "                 [--schedule levels|dag] [--review]\n"
    "\n"
    "Runs the feature's task graph level by level on N workers, recovering\n"
    "from spawn failures, crashes, hung tasks and stale workers on its own.\n"
    "\n"
    "Options:\n"
    "  --feature F      feature to run (default: see `zerg --help`)\n"
    "  -w, --workers N  worker count (default: workers.max_concurrent)\n"
    "  --mode MODE      subprocess | container | slurm | auto (default:\n"
    "                   workers.mode); auto picks container when a runtime\n"
    "                   really works (never slurm)\n"
    "  --resume         continue the last run: completed tasks are kept,\n"
    "                   results finished meanwhile are applied\n"
    "  --fresh          start over even if an unfinished run exists\n"
    "  --dry-run        print the level plan and exit; starts nothing\n"
    "  --executor CMD   command that performs tasks without `command`\n"
    "                   (overrides workers.executor; the prompt is appended)\n"
    "  --no-progress    plain event lines even on a terminal (no live view)\n"
    "  --halt WHEN,fail=N\n"
    "                   end the rush once N tasks (or N% of them) failed for\n"
    "                   good: soon lets running tasks finish and starts no\n"
    "                   new one, now stops them (SIGTERM, then SIGKILL after\n"
    "                   workers.stop_grace_seconds); exit 1 (default: never)\n"
    "  --timeout SECONDS  wall budget of this rush (overrides\n"
    "                   rush.timeout_seconds; 0 = none); past it the running\n"
    "                   tasks are stopped and --resume continues\n"
    "  --schedule levels|dag\n"
    "                   levels: a level starts once the previous one is\n"
    "                   complete; dag: a task starts once its own\n"
    "                   dependencies are (default: rush.schedule)\n"
    "  --review         a passing task waits for `zerg approve` before it is\n"
    "                   merged (rush.review; needs worktree isolation)\n"
    "\n"
    "Exit codes: 0 all tasks complete; 1 failed/blocked tasks or a runtime\n"
    "failure; 2 usage, config, graph, policy or state error (nothing\n"
    "started); 3 another rush holds this feature's lock.\n";

/* ---- options -------------------------------------------------------- */

/* --timeout SECONDS: fractions allowed, 0 = none, at most 7 days. */
static int take_timeout(struct rush_opts *ro)
{
    char *end;
    double v = strtod(optarg, &end);
    if (end == optarg || *end || !(v >= 0 && v <= 604800)) {
        zerg_cli_error("rush",
                       "--timeout takes a number of seconds in 0..604800 "
                       "(0 = no limit), not '%s'",
                       optarg);
        return ZERG_EXIT_USAGE;
    }
    ro->timeout_set = 1;
    ro->timeout_ns = (int64_t)(v * 1e9 + 0.5);
    return 0;
}

/* --schedule levels|dag. */
static int take_schedule(struct rush_opts *ro)
{
    if (!strcmp(optarg, "levels"))
        ro->schedule = ZERG_SCHEDULE_LEVELS;
    else if (!strcmp(optarg, "dag"))
        ro->schedule = ZERG_SCHEDULE_DAG;
    else {
        zerg_cli_error("rush", "--schedule takes levels or dag, not '%s'",
                       optarg);
        return ZERG_EXIT_USAGE;
    }
    ro->schedule_set = 1;
    return 0;
}

/* Applies one option.  0, -1 after --help, or an exit code. */
static int take_opt(int c, struct rush_opts *ro)
{
    char *end;
    switch (c) {
    case 'w':
        ro->workers = (int)strtol(optarg, &end, 10);
        if (*end || ro->workers < 1 || ro->workers > 256) {
            zerg_cli_error("rush", "--workers takes 1..256, not '%s'", optarg);
            return ZERG_EXIT_USAGE;
        }
        return 0;
    case 'm':
        if (zerg_mode_parse(optarg, &ro->mode) < 0) {
            zerg_cli_error("rush",
                           "--mode takes subprocess, container, "
                           "slurm or auto, not '%s'",
                           optarg);
            return ZERG_EXIT_USAGE;
        }
        ro->mode_set = 1;
        return 0;
    case 'r':
        ro->resume = 1;
        return 0;
    case 'F':
        ro->fresh = 1;
        return 0;
    case 'n':
        ro->dry_run = 1;
        return 0;
    case 'e':
        ro->executor = optarg;
        return 0;
    case 'P':
        ro->no_progress = 1;
        return 0;
    case 'H':
        if (zerg_halt_parse(optarg, &ro->halt) < 0) {
            zerg_cli_error("rush",
                           "--halt takes never, now,fail=N, soon,fail=N, "
                           "now,fail=N%% or soon,fail=N%% (N >= 1, a "
                           "percentage up to 100), not '%s'",
                           optarg);
            return ZERG_EXIT_USAGE;
        }
        return 0;
    case 'T':
        return take_timeout(ro);
    case 'S':
        return take_schedule(ro);
    case 'R':
        ro->review = 1;
        return 0;
    case 'h':
        fputs(usage, stdout);
        return -1;
    default:
        fputs(usage, stderr);
        return ZERG_EXIT_USAGE;
    }
}

int zerg_rush_parse_opts(int argc, char **argv, struct rush_opts *ro)
{
    static const struct option longopts[] = {
        {"workers", required_argument, NULL, 'w'},
        {"mode", required_argument, NULL, 'm'},
        {"resume", no_argument, NULL, 'r'},
        {"fresh", no_argument, NULL, 'F'},
        {"dry-run", no_argument, NULL, 'n'},
        {"executor", required_argument, NULL, 'e'},
        {"no-progress", no_argument, NULL, 'P'},
        {"halt", required_argument, NULL, 'H'},
        {"timeout", required_argument, NULL, 'T'},
        {"schedule", required_argument, NULL, 'S'},
        {"review", no_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "w:h", longopts, NULL)) != -1)
        if ((rc = take_opt(c, ro)))
            return rc;
    if (optind < argc) {
        zerg_cli_error("rush", "unexpected argument '%s'", argv[optind]);
        return ZERG_EXIT_USAGE;
    }
    if (ro->resume && ro->fresh) {
        zerg_cli_error("rush", "--resume and --fresh exclude each other");
        return ZERG_EXIT_USAGE;
    }
    return 0;
}
