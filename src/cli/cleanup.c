/* cleanup.c - `zerg cleanup`: what a feature's runs leave behind (DESIGN
 * §13, §17).  By default the worktrees (uncommitted work in them saved as
 * patches under .zerg/logs/{feature}/worktrees/ first), the worker
 * branches, leftover worker processes and containers, and the feature's
 * leftover Slurm jobs (where the Slurm client commands are on PATH); with
 * --all also
 * the integration and conflict refs, the state and the logs.  --dry-run
 * says what would go and changes nothing.  It refuses (exit 3) while a
 * rush holds the feature's lock: that rush owns all of it. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zerg/fsio.h"
#include "zerg/launcher.h"
#include "zerg/lock.h"
#include "zerg/protocol.h"
#include "zerg/workspace.h"

static const char usage[] =
    "usage: zerg cleanup [--feature F] [--dry-run] [--all]\n"
    "\n"
    "Removes what the feature's runs left: its worktrees (saving uncommitted\n"
    "work as patches under .zerg/logs/FEATURE/worktrees/), its worker\n"
    "branches zerg/FEATURE/worker-*, leftover worker processes and\n"
    "containers, and leftover Slurm jobs of the feature (when squeue is on\n"
    "PATH).  The integration branch zerg/FEATURE/integration stays.\n"
    "\n"
    "Options:\n"
    "  --all        also the integration branch, the conflict refs, the\n"
    "               state and the logs of the feature\n"
    "  --dry-run    say what would be removed; change nothing\n"
    "  --feature F  the feature (default: see 'zerg --help')\n"
    "  -C DIR       run as if started in DIR\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit codes: 0 done; 1 something could not be removed; 2 usage error;\n"
    "3 a rush is running for the feature.\n";

struct cleanup {
    struct zerg_cli *cli;
    char feature[ZERG_ID_MAX + 1];
    int all, dry_run, actions;
};

static void say(void *ud, const char *line)
{
    struct cleanup *c = ud;
    c->actions++;
    printf("%s%s\n", c->dry_run ? "would: " : "", line);
}

static int parse(struct cleanup *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"all", no_argument, NULL, 'a'},
        {"dry-run", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "hn", opts, NULL)) != -1) {
        if (o == 'a')
            c->all = 1;
        else if (o == 'n')
            c->dry_run = 1;
        else if (o == 'h')
            return fputs(usage, stdout), -1;
        else
            return zerg_cli_usage_error("cleanup", NULL);
    }
    if (optind < argc)
        return zerg_cli_usage_error("cleanup", "unexpected argument '%s'",
                                    argv[optind]);
    return 0;
}

/* 0 when no rush holds the lock, else the exit code after saying so. */
static int check_unlocked(struct cleanup *c)
{
    char path[PATH_MAX];
    pid_t holder = 0;
    zerg_cli_path(c->cli, path, sizeof path, ".zerg/state/%s.lock",
                  c->feature);
    int rc = zerg_lock_probe(path, &holder);
    if (rc == ZERG_ELOCKED || rc > 0) {
        zerg_cli_error("cleanup",
                       "a rush (pid %d) is running for %s; stop it first "
                       "(`zerg stop`)",
                       (int)holder, c->feature);
        return ZERG_EXIT_LOCKED;
    }
    return 0;
}

/* The feature's state and logs (--all). */
static int remove_run_files(struct cleanup *c)
{
    static const char *const rel[] = {".zerg/state/%s", ".zerg/state/%s.json",
                                      ".zerg/state/%s.json.bak",
                                      ".zerg/logs/%s"};
    int failed = 0;
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        char path[PATH_MAX], line[PATH_MAX + 16];
        zerg_cli_path(c->cli, path, sizeof path, rel[i], c->feature);
        if (access(path, F_OK) != 0)
            continue;
        snprintf(line, sizeof line, "remove %s", path);
        say(c, line);
        if (!c->dry_run && zerg_fsio_remove_tree(path) < 0) {
            zerg_cli_error("cleanup", "cannot remove %s: %s", path,
                           strerror(errno));
            failed = 1;
        }
    }
    return failed;
}

static void kill_leftovers(struct cleanup *c)
{
    if (c->dry_run)
        return;
    int n = zerg_subprocess_kill_leftovers(c->cli->project, c->feature, "");
    if (n > 0)
        printf("stopped %d leftover worker process%s\n", n, n == 1 ? "" : "es");
}

/* --dry-run: the jobs that would be cancelled, one line each. */
static void list_slurm_jobs(struct cleanup *c)
{
    long ids[64];
    char line[96];
    int n = zerg_slurm_leftover_ids(c->cli->project, c->feature, "", ids, 64);
    for (int i = 0; i < n; i++) {
        snprintf(line, sizeof line, "cancel leftover Slurm job %ld", ids[i]);
        say(c, line);
    }
}

/* Slurm jobs of the feature left by runs whose orchestrator died with its
 * host: cancelled by the slurm launcher's own cleanup (the jobs' name and
 * comment say whose they are), listed under --dry-run.  Without the Slurm
 * client commands on PATH there can be none of ours. */
static void cancel_slurm_jobs(struct cleanup *c)
{
    struct zerg_config cfg;
    struct zerg_err err = {0};
    char line[96];
    if (c->dry_run) {
        list_slurm_jobs(c);
        return;
    }
    zerg_config_defaults(&cfg);
    struct zerg_launcher *l =
        zerg_launcher_slurm_new(&cfg, NULL, c->cli->project, &err);
    if (l) {
        int n = l->ops->cleanup(l, c->feature, "");
        l->ops->free(l);
        snprintf(line, sizeof line, "cancelled %d leftover Slurm job%s", n,
                 n == 1 ? "" : "s");
        if (n > 0)
            say(c, line);
    }
    zerg_config_free(&cfg);
}

int zerg_cmd_cleanup(struct zerg_cli *cli, int argc, char **argv)
{
    struct cleanup c = {.cli = cli};
    struct zerg_err err = {0};
    int rc = parse(&c, argc, argv);
    if (rc)
        return rc < 0 ? ZERG_EXIT_OK : rc;
    if (zerg_cli_feature(cli, c.feature, sizeof c.feature, &err) < 0) {
        zerg_cli_error("cleanup", "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    if ((rc = check_unlocked(&c)))
        return rc;
    int failed = 0;
    if (zerg_ws_auto_applies(cli->project)) {
        char logs[PATH_MAX];
        zerg_cli_path(cli, logs, sizeof logs, ".zerg/logs/%s", c.feature);
        if (zerg_ws_cleanup(cli->project, c.feature, logs, c.all, c.dry_run,
                            say, &c, &err) < 0) {
            zerg_cli_error("cleanup", "%s", err.msg);
            failed = 1;
        }
    }
    kill_leftovers(&c);
    cancel_slurm_jobs(&c);
    if (c.all)
        failed |= remove_run_files(&c);
    if (!c.actions)
        printf("Nothing to clean up for %s.\n", c.feature);
    return failed ? ZERG_EXIT_FAIL : ZERG_EXIT_OK;
}
