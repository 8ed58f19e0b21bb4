/* review.c - review before merge (rush.review, DESIGN §21) from the
 * command line: `zerg review` lists what waits, `zerg diff` shows one
 * task's change, `zerg approve` and `zerg redo` decide.
 *
 * All four read the saved state (never write it: only the rush does).
 * A decision is a request file (zerg/review.h) the running rush applies
 * within a quarter of a second; the command watches it go and says what
 * became of the task.  With no rush running the request waits for the
 * next `zerg rush --resume`, which applies it before anything else runs.
 * Every task named is checked first (a task of the graph, awaiting review
 * in the saved state), and nothing is written if one is wrong. */
#include "review_cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/task_check.h"
#include "zerg/fsio.h"
#include "zerg/git.h"
#include "zerg/graph.h"
#include "zerg/lock.h"
#include "zerg/review.h"
#include "zerg/state.h"

void rv_close(struct rv *r)
{
    if (r->loaded)
        zerg_state_close(&r->s);
    r->loaded = 0;
    zerg_graph_free(r->g);
}

int rv_load_state(struct rv *r)
{
    struct zerg_err err = {0};
    if (r->loaded)
        zerg_state_close(&r->s);
    r->loaded = 0;
    int rc = zerg_state_load(&r->s, r->g, r->state_path, NULL, &err);
    if (rc == -ENOENT) {
        zerg_cli_error(r->cmd, "no run recorded for %s yet (run 'zerg rush'",
                       r->feature);
        return ZERG_EXIT_FAIL;
    }
    if (rc) {
        zerg_cli_error(r->cmd, "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    r->loaded = 1;
    return 0;
}

int rv_open(struct zerg_cli *cli, const char *cmd, struct rv *r)
{
    struct zerg_err err = {0};
    r->cmd = cmd;
    r->cli = cli;
    if (zerg_cli_feature(cli, r->feature, sizeof r->feature, &err) ||
        zerg_cli_graph(cli, r->feature, &r->g, &err)) {
        zerg_cli_error(cmd, "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    if (zerg_cli_path(cli, r->state_path, sizeof r->state_path,
                      ".zerg/state/%s.json", r->feature) ||
        zerg_cli_path(cli, r->lock_path, sizeof r->lock_path,
                      ".zerg/state/%s.lock", r->feature)) {
        zerg_cli_error(cmd, "the project path is too long");
        return ZERG_EXIT_USAGE;
    }
    return rv_load_state(r);
}

/* The task named id, or -1 with the error said. */
ssize_t rv_task(const struct rv *r, const char *id)
{
    ssize_t i = zerg_graph_find(r->g, id);
    if (i < 0)
        zerg_cli_error(r->cmd, "unknown task '%.80s' in feature %s", id,
                       r->feature);
    return i;
}

/* ---- the change ------------------------------------------------------- */

/* What t's change is measured against: the tip its commit was made on,
 * else its first parent.  commit: the one under review, else the squash
 * on the integration branch. */
static int change_of(const struct zerg_task_state *st, char *from, size_t fn,
                     char *to, size_t tn)
{
    const char *c = st->status == ZERG_TASK_AWAITING_REVIEW ? st->review_commit
                                                            : st->commit;
    if (!c[0])
        return -1;
    snprintf(to, tn, "%s", c);
    if (st->status == ZERG_TASK_AWAITING_REVIEW && st->review_base[0])
        snprintf(from, fn, "%s", st->review_base);
    else
        snprintf(from, fn, "%s^", c);
    return 0;
}

/* git diff of the change: the patch, --stat or --shortstat (mode).  The
 * output is malloc'd in *out. */
static int git_change(const struct rv *r, const struct zerg_task_state *st,
                      const char *mode, int color, char **out,
                      struct zerg_err *err)
{
    struct zerg_git g;
    char from[80], to[80];
    if (change_of(st, from, sizeof from, to, sizeof to) < 0)
        return zerg_err_set(err, ZERG_ENOTFOUND, "it has no commit");
    int rc = zerg_git_open(&g, r->cli->project, NULL, err);
    if (rc < 0)
        return rc;
    const char *args[] = {"diff",
                          "--no-ext-diff",
                          "--no-textconv",
                          color ? "--color=always" : "--no-color",
                          mode ? mode : "--patch",
                          "--end-of-options",
                          from,
                          to,
                          "--",
                          NULL};
    struct zerg_git_call call = {.dir = r->cli->project};
    return zerg_git_run(&g, &call, args, out, err);
}

/* ---- zerg review ------------------------------------------------------ */

static const char review_usage[] =
    "usage: zerg review [--feature F]\n"
    "\n"
    "Lists the tasks waiting for review (rush.review or zerg rush\n"
    "--review): each with its title, attempt, diff stat, spend and the\n"
    "check it passed, and a decision already made that the rush has not\n"
    "applied yet.  Then: 'zerg diff TASK' to read a change, 'zerg approve\n"
    "TASK...' (or --all) to merge, 'zerg redo TASK --note TEXT' to run it\n"
    "again with the note in its prompt.  Reads only.\n"
    "\n"
    "Options:\n"
    "  --feature F  the feature (default: see 'zerg --help')\n"
    "  -C DIR       run as if started in DIR\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit codes: 0 listed (also when nothing waits); 1 no run recorded;\n"
    "2 usage error, bad graph or corrupt state file.\n";

/* A decision left for the rush: "approved", "redo asked", or NULL. */
static const char *pending_decision(const struct rv *r, const char *id,
                                    int attempt)
{
    char dir[PATH_MAX], path[PATH_MAX + ZERG_ID_MAX + 8];
    struct zerg_review_request rq;
    if (zerg_review_dir(dir, sizeof dir, r->cli->project, r->feature) ||
        zerg_fsio_path(path, sizeof path, "%s/%s.json", dir, id) ||
        zerg_review_request_read(path, &rq, NULL) < 0)
        return NULL;
    const char *what = rq.attempt != attempt                ? NULL
                       : rq.decision == ZERG_REVIEW_APPROVE ? "approved"
                                                            : "redo asked";
    zerg_review_request_close(&rq);
    return what;
}

static void review_one(const struct rv *r, size_t t)
{
    const struct zerg_task *tk = &r->g->tasks[t];
    const struct zerg_task_state *st = &r->s.tasks[t];
    struct zerg_err err = {0};
    char *stat = NULL;
    const char *check = NULL;
    zerg_task_check(tk, &check);
    printf("  %s  %s\n", tk->id, tk->title ? tk->title : "(untitled)");
    printf("      attempt %d, commit %.12s", st->attempt, st->review_commit);
    if (st->cost_usd > 0)
        printf(", $%.2f%s", st->cost_usd, st->cost_estimated ? " (est.)" : "");
    printf("\n      passed: %s\n", check);
    if (git_change(r, st, "--shortstat", 0, &stat, &err) >= 0) {
        char *p = stat ? stat + strspn(stat, " ") : NULL;
        if (p)
            p[strcspn(p, "\n")] = '\0';
        printf("      %s\n", p && *p ? p : "no change to files");
    } else {
        printf("      (diff stat unavailable: %s)\n", err.msg);
    }
    free(stat);
    if (st->review_note)
        printf("      redone after the note: %s\n", st->review_note);
    const char *d = pending_decision(r, tk->id, st->attempt);
    if (d)
        printf("      %s: the rush applies it when it runs\n", d);
}

int zerg_cmd_review(struct zerg_cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c != 'h')
            return zerg_cli_usage_error("review", NULL);
        fputs(review_usage, stdout);
        return ZERG_EXIT_OK;
    }
    if (optind < argc)
        return zerg_cli_usage_error("review", "unexpected argument '%s'",
                                    argv[optind]);
    struct rv r = {0};
    int rc = rv_open(cli, "review", &r);
    size_t n = 0;
    for (size_t t = 0; !rc && t < r.s.ntasks; t++)
        n += r.s.tasks[t].status == ZERG_TASK_AWAITING_REVIEW;
    if (!rc && !n)
        printf("Nothing waits for review in %s.\n", r.feature);
    else if (!rc)
        printf("Waiting for review in %s: %zu task%s\n\n", r.feature, n,
               n == 1 ? "" : "s");
    for (size_t t = 0; !rc && n && t < r.s.ntasks; t++)
        if (r.s.tasks[t].status == ZERG_TASK_AWAITING_REVIEW)
            review_one(&r, t);
    if (!rc && n)
        printf("\nzerg diff TASK; zerg approve TASK... (or --all); zerg redo "
               "TASK --note TEXT\n");
    rv_close(&r);
    return rc;
}

/* ---- zerg diff -------------------------------------------------------- */

static const char diff_usage[] =
    "usage: zerg diff [--feature F] [--stat] TASK\n"
    "\n"
    "Shows a task's change against its base: the commit waiting for\n"
    "review against the tip it was made on, or a merged task's commit on\n"
    "the integration branch against the one before.  No external diff or\n"
    "textconv program of the repository's config runs.\n"
    "\n"
    "Options:\n"
    "  --stat       the diff stat only\n"
    "  --feature F  the feature (default: see 'zerg --help')\n"
    "  -C DIR       run as if started in DIR\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit codes: 0 shown; 1 the task has no commit, no run recorded or git\n"
    "failed; 2 usage error, unknown task, bad graph or corrupt state.\n";

int zerg_cmd_diff(struct zerg_cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {{"stat", no_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c, stat = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 's') {
            stat = 1;
            continue;
        }
        if (c != 'h')
            return zerg_cli_usage_error("diff", NULL);
        fputs(diff_usage, stdout);
        return ZERG_EXIT_OK;
    }
    if (argc - optind != 1)
        return zerg_cli_usage_error("diff", "name one task");
    struct rv r = {0};
    int rc = rv_open(cli, "diff", &r);
    ssize_t t = rc ? -1 : rv_task(&r, argv[optind]);
    if (!rc && t < 0)
        rc = ZERG_EXIT_USAGE;
    char *out = NULL;
    struct zerg_err err = {0};
    if (!rc && git_change(&r, &r.s.tasks[t], stat ? "--stat" : NULL,
                          isatty(STDOUT_FILENO), &out, &err) < 0) {
        zerg_cli_error("diff", "task %s (%s): %s", argv[optind],
                       zerg_task_status_name(r.s.tasks[t].status), err.msg);
        rc = ZERG_EXIT_FAIL;
    }
    if (!rc && out)
        fputs(out, stdout);
    free(out);
    rv_close(&r);
    return rc;
}
