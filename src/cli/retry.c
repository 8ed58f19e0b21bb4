/* retry.c - `zerg retry`: put failed or blocked tasks back in the queue.
 *
 * With no rush running, the state file is changed directly under the
 * feature's lock (so no rush can start halfway through).  While a rush
 * runs, only it may write the state, and only it knows its live state
 * (the saved one can be a checkpoint behind): a request file is left in
 * the feature's run directory for it to apply (see zerg/retry.h), and the
 * command waits a moment for its answer.  Should the rush end before it
 * reads the request, the command applies it to the saved state itself, so
 * an accepted retry is never lost.  Either way every id is checked, and
 * nothing changes if one is wrong. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zerg/graph.h"
#include "zerg/lock.h"
#include "zerg/retry.h"
#include "zerg/state.h"

/* How long to watch a queued request: a live rush takes it within a
 * loop iteration (well under a second). */
#define TAKE_WAIT_MS 3000
#define TAKE_POLL_MS 50

static const char usage[] =
    "usage: zerg retry [--feature F] (TASK_ID... | --all-failed)\n"
    "\n"
    "Requeues failed or blocked tasks (a task waiting for its retry runs\n"
    "now): each goes back to pending with its\n"
    "retry and crash counts reset, and every task blocked only because of\n"
    "it comes back too.  With no rush running the state file is updated\n"
    "(then run 'zerg rush --resume'); while a rush runs, the request is\n"
    "handed to it and the command prints its answer (what it requeued, or\n"
    "why not); if the rush ends first, the saved state is updated instead.\n"
    "\n"
    "Options:\n"
    "  --all-failed  requeue every failed task (and what it blocked)\n"
    "  --feature F   the feature (default: see 'zerg --help')\n"
    "  -C DIR        run as if started in DIR\n"
    "  -h, --help    show this help\n"
    "\n"
    "Exit codes: 0 requeued or queued; 1 nothing to retry, no run recorded\n"
    "or a write failed; 2 usage error, unknown or non-retryable task,\n"
    "bad graph or corrupt state file.\n";

struct req {
    char feature[ZERG_ID_MAX + 1];
    char **ids;
    size_t n;
    int all_failed;
    struct zerg_graph *g;
    char state_dir[PATH_MAX];
    char state_path[PATH_MAX];
    char lock_path[PATH_MAX];
};

static int parse(int argc, char **argv, struct req *r)
{
    static const struct option opts[] = {
        {"all-failed", no_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            r->all_failed = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return ZERG_EXIT_OK;
        default:
            return zerg_cli_usage_error("retry", NULL);
        }
    }
    r->ids = argv + optind;
    r->n = (size_t)(argc - optind);
    if (!r->n && !r->all_failed)
        return zerg_cli_usage_error("retry", "name the tasks to retry, or "
                                             "pass --all-failed");
    if (r->n && r->all_failed)
        return zerg_cli_usage_error("retry", "give task ids or "
                                             "--all-failed, not both");
    return -1;
}

/* Every id must be a task of the graph: checked before anything is
 * written. */
static int check_ids(const struct req *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (zerg_graph_find(r->g, r->ids[i]) >= 0)
            continue;
        zerg_cli_error("retry", "unknown task '%.80s' in feature %s", r->ids[i],
                       r->feature);
        return ZERG_EXIT_USAGE;
    }
    return 0;
}

enum take { TAKEN, RUSH_ENDED, NOT_YET };

/* Watches the request file: taken (gone, its answer beside it), or the
 * rush let go of the lock with the file still there (then it is withdrawn
 * here), or neither within TAKE_WAIT_MS. */
static enum take watch_request(const struct req *r, const char *path)
{
    struct timespec nap = {0, TAKE_POLL_MS * 1000000L};
    for (int waited = 0; waited < TAKE_WAIT_MS; waited += TAKE_POLL_MS) {
        if (access(path, F_OK) != 0)
            return TAKEN;
        if (zerg_lock_probe(r->lock_path, NULL) == 0) {
            /* The rush is gone.  If it took the file at its very end, the
             * unlink fails and the retry is already in its state. */
            return unlink(path) == 0 ? RUSH_ENDED : TAKEN;
        }
        nanosleep(&nap, NULL);
    }
    return NOT_YET;
}

/* The errors of a refusal (exit 2, as for a wrong id), or "nothing to
 * retry" (1); 0 when tasks were requeued. */
static int verdict(const struct req *r, const struct zerg_retry_answer *a)
{
    for (size_t i = 0; i < a->nrefused; i++)
        zerg_cli_error("retry", "%s", a->refused[i]);
    if (a->nrefused)
        return ZERG_EXIT_USAGE;
    if (a->requeued)
        return ZERG_EXIT_OK;
    printf("No failed tasks in %s; nothing to retry.\n", r->feature);
    return ZERG_EXIT_FAIL;
}

/* "Requeued 3 tasks of F<where>: A B C" (+N more past the answer's list). */
static void requeued(const struct req *r, const struct zerg_retry_answer *a,
                     const char *where)
{
    printf("Requeued %d task%s of %s%s:", a->requeued,
           a->requeued == 1 ? "" : "s", r->feature, where);
    for (size_t i = 0; i < a->ntasks; i++)
        printf(" %s", a->tasks[i]);
    if (a->requeued > (int)a->ntasks)
        printf(" +%d more", a->requeued - (int)a->ntasks);
    printf("\n");
}

/* What the rush answered. */
static int report_answer(const struct req *r, const char *path, pid_t pid)
{
    char apath[PATH_MAX], where[64];
    struct zerg_retry_answer a;
    struct zerg_err err = {0};
    int bad = zerg_retry_answer_path(apath, sizeof apath, path) != 0;
    if (!bad) {
        bad = zerg_retry_answer_read(apath, &a, &err) != 0;
        unlink(apath);
    }
    if (bad) {
        printf("Retry taken by the running rush (pid %d); it left no "
               "answer: see 'zerg logs'.\n",
               (int)pid);
        return ZERG_EXIT_OK;
    }
    int rc = verdict(r, &a);
    if (rc)
        return rc;
    snprintf(where, sizeof where, " in the running rush (pid %d)", (int)pid);
    requeued(r, &a, where);
    printf("Follow them with 'zerg status --watch' or 'zerg logs "
           "--follow'.\n");
    return ZERG_EXIT_OK;
}

static int retry_offline(const struct req *r);

/* Only the rush knows its live state (the saved one can be a checkpoint
 * behind: a task its log shows failed may still read "claimed" there),
 * so the request goes to it unchecked and its answer is the verdict. */
static int queue_for_rush(const struct req *r, pid_t pid)
{
    struct zerg_err err = {0};
    char path[PATH_MAX];
    if (zerg_retry_request_send(r->state_dir, r->feature,
                                (const char *const *)r->ids, r->n,
                                r->all_failed, path, sizeof path, &err)) {
        zerg_cli_error("retry", "%s", err.msg);
        return ZERG_EXIT_FAIL;
    }
    switch (watch_request(r, path)) {
    case TAKEN:
        return report_answer(r, path, pid);
    case RUSH_ENDED:
        printf("The rush ended before it read the request; applying it to "
               "the saved state.\n");
        return retry_offline(r);
    default:
        printf("Retry queued for the running rush (pid %d); it has not "
               "read it yet.\n"
               "Follow it with 'zerg status --watch' or 'zerg logs "
               "--follow'.\n",
               (int)pid);
        return ZERG_EXIT_OK;
    }
}

/* No rush running: change the state file under the lock. */
static int retry_offline(const struct req *r)
{
    struct zerg_err err = {0};
    struct zerg_lock lk = {-1};
    struct zerg_state s;
    int loaded = 0, rc;

    if (zerg_lock_acquire(&lk, r->lock_path, &err)) {
        if (err.code == ZERG_ELOCKED) {
            /* A rush started in the meantime: hand it the request. */
            pid_t pid = 0;
            zerg_lock_probe(r->lock_path, &pid);
            return queue_for_rush(r, pid);
        }
        zerg_cli_error("retry", "%s", err.msg);
        return ZERG_EXIT_FAIL;
    }
    if ((rc = zerg_state_load(&s, r->g, r->state_path, NULL, &err))) {
        zerg_cli_error("retry", "%s", err.msg);
        rc = rc == -ENOENT ? ZERG_EXIT_FAIL : ZERG_EXIT_USAGE;
        goto cleanup;
    }
    loaded = 1;
    struct zerg_retry_request q = {
        .ids = r->ids, .n = r->n, .all_failed = r->all_failed};
    struct zerg_retry_answer a;
    if ((rc = zerg_retry_request_apply(&s, r->g, &q, &a)) < 0) {
        zerg_cli_error("retry", "cannot requeue: %s", zerg_strerror(rc));
        rc = ZERG_EXIT_FAIL;
        goto cleanup;
    }
    if ((rc = verdict(r, &a)))
        goto cleanup;
    if (zerg_state_save(&s, r->g, r->state_path, &err)) {
        zerg_cli_error("retry", "%s", err.msg);
        rc = ZERG_EXIT_FAIL;
        goto cleanup;
    }
    requeued(r, &a, "");
    printf("Run 'zerg rush --resume' to run them.\n");
    rc = ZERG_EXIT_OK;
cleanup:
    if (loaded)
        zerg_state_close(&s);
    zerg_lock_release(&lk);
    return rc;
}

static int paths(const struct zerg_cli *cli, struct req *r)
{
    if (zerg_cli_path(cli, r->state_dir, sizeof r->state_dir, ".zerg/state") ||
        zerg_cli_path(cli, r->state_path, sizeof r->state_path,
                      ".zerg/state/%s.json", r->feature) ||
        zerg_cli_path(cli, r->lock_path, sizeof r->lock_path,
                      ".zerg/state/%s.lock", r->feature)) {
        zerg_cli_error("retry", "the project path is too long");
        return ZERG_EXIT_USAGE;
    }
    return 0;
}

static int run(struct zerg_cli *cli, struct req *r)
{
    struct zerg_err err = {0};
    int rc;
    if (zerg_cli_feature(cli, r->feature, sizeof r->feature, &err) ||
        zerg_cli_graph(cli, r->feature, &r->g, &err)) {
        zerg_cli_error("retry", "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    if ((rc = paths(cli, r)) || (rc = check_ids(r)))
        return rc;
    pid_t pid = 0;
    if (zerg_lock_probe(r->lock_path, &pid) > 0)
        return queue_for_rush(r, pid);
    if (access(r->state_path, F_OK) != 0) {
        zerg_cli_error("retry",
                       "no run recorded for %s yet (run 'zerg "
                       "rush')",
                       r->feature);
        return ZERG_EXIT_FAIL;
    }
    return retry_offline(r);
}

int zerg_cmd_retry(struct zerg_cli *cli, int argc, char **argv)
{
    struct req r = {0};
    int rc = parse(argc, argv, &r);
    if (rc >= 0)
        return rc;
    rc = run(cli, &r);
    zerg_graph_free(r.g);
    return rc;
}
