/* cleanup.c - `zerg cleanup`: what a feature's runs leave behind (DESIGN
 * §13, §17, §18).  By default the worktrees (uncommitted work in them
 * saved first as .zerg/logs/{feature}/tasks/{id}/attempt-{n}.patch of the
 * attempt the worktree last ran, else worktrees/{name}-{ts}.patch), the
 * worker branches, leftover worker processes and containers, and the
 * feature's leftover Slurm jobs (where the Slurm client commands are on
 * PATH); with --all also the integration and conflict refs, the state and
 * the logs, except every saved *.patch: those stay where they are.  Only
 * refs the run's state lists as zerg's (git.refs) go, never a checked-out
 * branch; work on none of the user's branches only with --force (exit 1
 * when something was kept for want of it).  --dry-run says what would go
 * and changes nothing.  It refuses (exit 3) while a rush holds the
 * feature's lock: that rush owns all of it. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerg/fsio.h"
#include "zerg/launcher.h"
#include "zerg/lock.h"
#include "zerg/protocol.h"
#include "zerg/state.h"
#include "zerg/workspace.h"

static const char usage[] =
    "usage: zerg cleanup [--feature F] [--dry-run] [--all] [--force]\n"
    "\n"
    "Removes what the feature's runs left: its worktrees (saving uncommitted\n"
    "work first as .zerg/logs/FEATURE/tasks/ID/attempt-N.patch of the\n"
    "attempt the worktree last ran, else .zerg/logs/FEATURE/worktrees/\n"
    "NAME-TIME.patch), its worker branches zerg/FEATURE/worker-*, leftover\n"
    "worker processes and containers, and leftover Slurm jobs of the\n"
    "feature (when squeue is on PATH).  The integration branch\n"
    "zerg/FEATURE/integration stays.\n"
    "\n"
    "Only refs the run's state records as made by zerg are deleted (a state\n"
    "of an older zerg: those named zerg/FEATURE/...), never a branch that is\n"
    "checked out in a worktree.  Saved patches are never deleted.\n"
    "\n"
    "Options:\n"
    "  --all        also the integration branches, the conflict refs, the\n"
    "               state (kept while it lists a ref of zerg's that stayed)\n"
    "               and the logs of the feature; every *.patch under\n"
    "               .zerg/logs/FEATURE/ stays where it is\n"
    "  --force      also a worker branch whose head is a passed task's\n"
    "               commit that never landed (zerg rush --resume merges\n"
    "               it); with --all also an integration branch holding\n"
    "               commits on none of your branches (merge it first:\n"
    "               git merge zerg/FEATURE/integration) and a conflict ref\n"
    "               moved since zerg set it\n"
    "  --dry-run    say what would be removed and kept; change nothing\n"
    "  --feature F  the feature (default: see 'zerg --help')\n"
    "  -C DIR       run as if started in DIR\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit codes: 0 done; 1 something could not be removed, or was kept\n"
    "because only --force deletes it; 2 usage error; 3 a rush is running\n"
    "for the feature.\n";

struct cleanup {
    struct zerg_cli *cli;
    char feature[ZERG_ID_MAX + 1];
    int all, dry_run, force, actions;
    int patches;  /* saved patches --all kept */
    int kept_own; /* refs zerg made that stayed: the state still lists
                     them for the next cleanup */
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
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "hn", opts, NULL)) != -1) {
        if (o == 'a')
            c->all = 1;
        else if (o == 'n')
            c->dry_run = 1;
        else if (o == 'f')
            c->force = 1;
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
    zerg_cli_path(c->cli, path, sizeof path, ".zerg/state/%s.lock", c->feature);
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

static int remove_logs(struct cleanup *c, const char *dir)
{
    struct zerg_kept k = {.dry_run = c->dry_run};
    int rc = zerg_cli_prune_logs(dir, &k);
    c->patches = k.patches;
    if (rc < 0) {
        zerg_cli_error("cleanup", "cannot remove %s: %s", dir, strerror(-rc));
        return 1;
    }
    if (k.patches)
        printf("%s %d saved patch%s under %s/ (tasks/ID/attempt-N.patch, "
               "worktrees/*.patch): they stay until you delete them\n",
               c->dry_run ? "would: keep" : "Kept", k.patches,
               k.patches == 1 ? "" : "es", dir);
    if (k.copies)
        printf("%s %d copie%s of broken worktrees under %s/worktrees/ "
               "(*.git, *.tree): they stay until you delete them\n",
               c->dry_run ? "would: keep" : "Kept", k.copies,
               k.copies == 1 ? "" : "s", dir);
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
        char path[PATH_MAX], line[PATH_MAX + 48];
        int logs = i == sizeof rel / sizeof *rel - 1;
        zerg_cli_path(c->cli, path, sizeof path, rel[i], c->feature);
        if (access(path, F_OK) != 0)
            continue;
        if (c->kept_own && (i == 1 || i == 2)) {
            printf("%s %s: it lists the refs kept above, so that the next "
                   "cleanup knows them for zerg's\n",
                   c->dry_run ? "would: keep" : "Kept", path);
            continue;
        }
        snprintf(line, sizeof line, "remove %s%s", path,
                 logs ? " (but the saved patches)" : "");
        say(c, line);
        if (logs) {
            failed |= remove_logs(c, path);
        } else if (!c->dry_run && zerg_fsio_remove_tree(path) < 0) {
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

/* The worktrees and refs.  The run's state says which refs zerg made
 * (git.refs); a state that cannot be read leaves cleanup going by the
 * names, said as such.  1 when something failed or was held. */
static int clean_workspace(struct cleanup *c)
{
    char logs[PATH_MAX], path[PATH_MAX];
    struct zerg_state s;
    struct zerg_err err = {0};
    zerg_cli_path(c->cli, logs, sizeof logs, ".zerg/logs/%s", c->feature);
    zerg_cli_path(c->cli, path, sizeof path, ".zerg/state/%s.json", c->feature);
    int rc = zerg_state_load_git(&s, path, &err);
    if (rc && rc != -ENOENT)
        fprintf(stderr, "zerg cleanup: warning: %s\n", err.msg);
    struct zerg_ws_cleanup_opts o = {
        .project = c->cli->project,
        .feature = c->feature,
        .logs_dir = logs,
        .base = rc ? NULL : s.git_base,
        .refs = rc ? NULL : &s.git_refs,
        .refs_known = !rc && s.git_refs.known,
        .all = c->all,
        .force = c->force,
        .dry_run = c->dry_run,
        .say = say,
        .ud = c,
    };
    int failed = 0;
    if (zerg_ws_cleanup(&o, &err) < 0) {
        zerg_cli_error("cleanup", "%s", err.msg);
        failed = 1;
    }
    if (!rc)
        zerg_state_close(&s);
    c->kept_own = o.kept_own;
    return failed || o.held;
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
    if (zerg_ws_auto_applies(cli->project))
        failed = clean_workspace(&c);
    kill_leftovers(&c);
    cancel_slurm_jobs(&c);
    if (c.all)
        failed |= remove_run_files(&c);
    if (!c.actions)
        printf("Nothing to clean up for %s.\n", c.feature);
    return failed ? ZERG_EXIT_FAIL : ZERG_EXIT_OK;
}
