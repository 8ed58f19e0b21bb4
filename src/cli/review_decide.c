/* review_decide.c - `zerg approve` and `zerg redo`: the reviewer's
 * decisions on tasks awaiting review (see review.c for the shape).
 *
 * Each task named must be awaiting review in the saved state; then one
 * request per task is written (zerg/review.h, for the attempt that
 * waits).  A running rush applies them within a quarter of a second: the
 * command watches the files go, waits for the state the rush saves after
 * them and says what became of each task (merged, conflicted and running
 * again, failed).
 * With no rush running, the requests wait for `zerg rush --resume`. */
#include "review_cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zerg/lock.h"
#include "zerg/review.h"

/* A live rush looks every 250 ms; a merge may take a moment more. */
#define TAKE_WAIT_MS 5000
#define TAKE_POLL_MS 50
/* How long to wait for the state saved after the decisions. */
#define SETTLE_WAIT_MS 10000

struct decide {
    struct rv r;
    enum zerg_review_decision decision;
    const char *note;
    size_t *tasks; /* indexes into the graph */
    int *attempts; /* the attempt decided on, of each */
    size_t n;
    char (*paths)[PATH_MAX]; /* the request of each */
};

/* Every task named awaits review: else each refusal said, exit 2. */
static int check(struct decide *d, char **ids, size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        ssize_t t = rv_task(&d->r, ids[i]);
        if (t < 0) {
            bad = 1;
            continue;
        }
        enum zerg_task_status st = d->r.s.tasks[t].status;
        if (st != ZERG_TASK_AWAITING_REVIEW) {
            zerg_cli_error(d->r.cmd, "task %s is %s, not awaiting review%s",
                           ids[i], zerg_task_status_name(st),
                           st == ZERG_TASK_COMPLETE ? " (merged already)" : "");
            bad = 1;
            continue;
        }
        d->tasks[d->n++] = (size_t)t;
    }
    return bad ? ZERG_EXIT_USAGE : 0;
}

/* --all: every task awaiting review. */
static int all_waiting(struct decide *d)
{
    for (size_t t = 0; t < d->r.s.ntasks; t++)
        if (d->r.s.tasks[t].status == ZERG_TASK_AWAITING_REVIEW)
            d->tasks[d->n++] = t;
    if (d->n)
        return 0;
    printf("Nothing waits for review in %s.\n", d->r.feature);
    return ZERG_EXIT_FAIL;
}

static int write_requests(struct decide *d)
{
    for (size_t i = 0; i < d->n; i++) {
        size_t t = d->tasks[i];
        d->attempts[i] = d->r.s.tasks[t].attempt;
        struct zerg_review_request rq = {.attempt = d->attempts[i],
                                         .decision = d->decision,
                                         .note = (char *)d->note};
        snprintf(rq.feature, sizeof rq.feature, "%s", d->r.feature);
        snprintf(rq.task, sizeof rq.task, "%s", d->r.g->tasks[t].id);
        struct zerg_err err = {0};
        if (zerg_review_request_write(d->r.cli->project, &rq, d->paths[i],
                                      sizeof d->paths[i], &err)) {
            zerg_cli_error(d->r.cmd, "%s", err.msg);
            return ZERG_EXIT_FAIL;
        }
    }
    return 0;
}

/* 1 once every request is gone (taken), 0 when the wait ran out or the
 * rush let go of its lock first. */
static int watch(struct decide *d)
{
    struct timespec nap = {0, TAKE_POLL_MS * 1000000L};
    for (int waited = 0; waited < TAKE_WAIT_MS; waited += TAKE_POLL_MS) {
        size_t left = 0;
        for (size_t i = 0; i < d->n; i++)
            left += access(d->paths[i], F_OK) == 0;
        if (!left)
            return 1;
        if (zerg_lock_probe(d->r.lock_path, NULL) == 0)
            return 0;
        nanosleep(&nap, NULL);
    }
    return 0;
}

/* Whether the saved state shows every decision taken: each task moved
 * on from the attempt that waited. */
static int settled(const struct decide *d)
{
    for (size_t i = 0; i < d->n; i++) {
        const struct zerg_task_state *st = &d->r.s.tasks[d->tasks[i]];
        if (st->status == ZERG_TASK_AWAITING_REVIEW &&
            st->attempt <= d->attempts[i])
            return 0;
    }
    return 1;
}

/* Reads the state the rush saves after it took the decisions: at its next
 * checkpoint, after a merge (a loaded machine can put that seconds
 * later), or at its end.  0 once loaded (settled or not), or an exit
 * code. */
static int settle(struct decide *d)
{
    struct timespec nap = {0, TAKE_POLL_MS * 1000000L};
    for (int waited = 0;; waited += TAKE_POLL_MS) {
        int gone = zerg_lock_probe(d->r.lock_path, NULL) == 0;
        int rc = rv_load_state(&d->r);
        if (rc || gone || settled(d) || waited >= SETTLE_WAIT_MS)
            return rc;
        nanosleep(&nap, NULL);
    }
}

/* What became of task t, decided at attempt, read from the state the
 * rush saved. */
static void outcome(const struct decide *d, size_t t, int attempt)
{
    const struct zerg_task_state *st = &d->r.s.tasks[t];
    const char *id = d->r.g->tasks[t].id;
    if (st->attempt > attempt && st->status == ZERG_TASK_AWAITING_REVIEW) {
        printf("  %s ran again (attempt %d) and waits for review again\n", id,
               st->attempt);
        return;
    }
    switch (st->status) {
    case ZERG_TASK_COMPLETE:
        printf("  %s merged as %.12s\n", id, st->commit);
        break;
    case ZERG_TASK_FAILED:
        printf("  %s failed: %s\n", id, st->error ? st->error : "?");
        break;
    case ZERG_TASK_AWAITING_REVIEW:
        printf("  %s still waits (the rush has not saved its state yet)\n", id);
        break;
    default:
        if (st->reason && !strcmp(st->reason, "conflict"))
            printf("  %s conflicted with the integration branch on %s: it "
                   "runs again\n",
                   id, st->conflict_paths ? st->conflict_paths : "?");
        else
            printf("  %s runs again (%s)\n", id,
                   zerg_task_status_name(st->status));
    }
}

static void report(struct decide *d, int rush_pid)
{
    const char *verb =
        d->decision == ZERG_REVIEW_APPROVE ? "Approved" : "Sent back";
    if (!rush_pid) {
        printf("%s %zu task%s of %s; no rush is running: 'zerg rush "
               "--resume' %s first.\n",
               verb, d->n, d->n == 1 ? "" : "s", d->r.feature,
               d->decision == ZERG_REVIEW_APPROVE ? "merges them"
                                                  : "runs them again");
        return;
    }
    if (!watch(d)) {
        printf("%s %zu task%s; the rush (pid %d) has not applied it yet "
               "(see 'zerg status').\n",
               verb, d->n, d->n == 1 ? "" : "s", rush_pid);
        return;
    }
    printf("%s, and taken by the rush (pid %d):\n", verb, rush_pid);
    if (settle(d) == 0)
        for (size_t i = 0; i < d->n; i++)
            outcome(d, d->tasks[i], d->attempts[i]);
}

static int decide(struct zerg_cli *cli, struct decide *d, char **ids, size_t n,
                  int all)
{
    int rc = rv_open(cli, d->r.cmd, &d->r);
    if (rc)
        return rc;
    size_t cap = all ? d->r.s.ntasks : n;
    d->tasks = calloc(cap ? cap : 1, sizeof *d->tasks);
    d->paths = calloc(cap ? cap : 1, sizeof *d->paths);
    d->attempts = calloc(cap ? cap : 1, sizeof *d->attempts);
    if (!d->tasks || !d->paths || !d->attempts) {
        zerg_cli_error(d->r.cmd, "out of memory");
        return ZERG_EXIT_FAIL;
    }
    if ((rc = all ? all_waiting(d) : check(d, ids, n)) ||
        (rc = write_requests(d)))
        return rc;
    pid_t pid = 0;
    report(d, zerg_lock_probe(d->r.lock_path, &pid) > 0 ? (int)pid : 0);
    return ZERG_EXIT_OK;
}

static void decide_free(struct decide *d)
{
    free(d->tasks);
    free(d->paths);
    free(d->attempts);
    rv_close(&d->r);
}

/* ---- zerg approve ----------------------------------------------------- */

static const char approve_usage[] =
    "usage: zerg approve [--feature F] (TASK... | --all)\n"
    "\n"
    "Approves tasks waiting for review: each is merged into the\n"
    "integration branch through the merge queue; its dependents can start.\n"
    "A commit that no longer merges runs again on the new tip (its\n"
    "conflict retry budget, workers.conflict_retry_attempts).  A running\n"
    "rush takes the decision at once and the command says what became of\n"
    "each task; with none running, 'zerg rush --resume' merges them first.\n"
    "\n"
    "Options:\n"
    "  --all        every task waiting for review\n"
    "  --feature F  the feature (default: see 'zerg --help')\n"
    "  -C DIR       run as if started in DIR\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit codes: 0 approved; 1 nothing waits, no run recorded or a write\n"
    "failed; 2 usage error, unknown task or one not awaiting review\n"
    "(nothing written).\n";

int zerg_cmd_approve(struct zerg_cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {{"all", no_argument, NULL, 'a'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c, all = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'a') {
            all = 1;
            continue;
        }
        if (c != 'h')
            return zerg_cli_usage_error("approve", NULL);
        fputs(approve_usage, stdout);
        return ZERG_EXIT_OK;
    }
    size_t n = (size_t)(argc - optind);
    if (!n == !all)
        return zerg_cli_usage_error("approve", "name the tasks to approve, "
                                               "or pass --all (not both)");
    struct decide d = {.r = {.cmd = "approve"},
                       .decision = ZERG_REVIEW_APPROVE};
    int rc = decide(cli, &d, argv + optind, n, all);
    decide_free(&d);
    return rc;
}

/* ---- zerg redo -------------------------------------------------------- */

static const char redo_usage[] =
    "usage: zerg redo [--feature F] [--note TEXT] TASK\n"
    "\n"
    "Sends a task waiting for review back: it runs again on the current\n"
    "integration tip, uncharged, and the note goes in its prompt under\n"
    "\"What the reviewer asked\" ($ZERG_REVIEW_NOTE for a command task).\n"
    "The new attempt waits for review in turn.\n"
    "\n"
    "Options:\n"
    "  --note TEXT  what to change (at most 1000 bytes)\n"
    "  --feature F  the feature (default: see 'zerg --help')\n"
    "  -C DIR       run as if started in DIR\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit codes: 0 sent back; 1 no run recorded or a write failed; 2 usage\n"
    "error, a note too long, an unknown task or one not awaiting review\n"
    "(nothing written).\n";

int zerg_cmd_redo(struct zerg_cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {{"note", required_argument, NULL, 'n'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    const char *note = NULL;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'n') {
            note = optarg;
            continue;
        }
        if (c != 'h')
            return zerg_cli_usage_error("redo", NULL);
        fputs(redo_usage, stdout);
        return ZERG_EXIT_OK;
    }
    if (argc - optind != 1)
        return zerg_cli_usage_error("redo", "name one task");
    if (note && strlen(note) > ZERG_REVIEW_NOTE_MAX)
        return zerg_cli_usage_error("redo",
                                    "the note is %zu bytes; at most %d go in "
                                    "a prompt",
                                    strlen(note), ZERG_REVIEW_NOTE_MAX);
    struct decide d = {
        .r = {.cmd = "redo"}, .decision = ZERG_REVIEW_REDO, .note = note};
    int rc = decide(cli, &d, argv + optind, 1, 0);
    decide_free(&d);
    return rc;
}
