/* status.c - `zerg status`: where a run stands, read from the files a rush
 * leaves (.zerg/state/{feature}.json, its run directory's heartbeats, the
 * lock), without writing anything.
 *
 * The health verdict, also in the help text:
 *   failing   the run failed, a rush is running with no live worker, or
 *             the run was interrupted (no rush holds the lock, the state
 *             says running: its workers are shown as gone)
 *   degraded  tasks failed permanently, a worker was retired, or a policy
 *             raised an error
 *   ok        none of the above */
#include "status_view.h"
#include "status_ws.h"
#include "cli/task_check.h"
#include "cli/eta.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/fsio.h"
#include "zerg/graph.h"
#include "zerg/json.h"
#include "zerg/lock.h"
#include "zerg/protocol.h"
#include "zerg/state.h"
#include "zerg/task_fsm.h"

static const char usage[] =
    "usage: zerg status [--feature F] [--json] [--watch]\n"
    "\n"
    "Shows where the feature's run stands: whether a rush is running, the\n"
    "current level, tasks by status, each worker with its task, step,\n"
    "progress and heartbeat age, the resilience counters, a health\n"
    "verdict, every unfinished task (status, why, next retry), every\n"
    "failed one, and which check verifies each task (its verification\n"
    "command, or its command's exit code only), tasks grouped by check.\n"
    "Reads .zerg/state/ and the task graph only; never writes.\n"
    "\n"
    "Options:\n"
    "  --feature F  the feature (default: see 'zerg --help')\n"
    "  --json       print one JSON object (summary, heartbeats, health,\n"
    "               checks)\n"
    "  --watch      redraw every second, fitted to the terminal, until\n"
    "               Ctrl-C (off a terminal: until the rush ends)\n"
    "  -C DIR       run as if started in DIR\n"
    "  -h, --help   show this help\n"
    "\n"
    "Health:\n"
    "  failing   the run failed, a rush is running with no live worker, or\n"
    "            the run was interrupted (its rush died; workers it left\n"
    "            recorded as live are shown as gone)\n"
    "  degraded  tasks failed permanently, a worker was retired (respawn\n"
    "            cap or spawn retries exhausted), or a policy error occurred\n"
    "  ok        none of the above\n"
    "\n"
    "Exit codes: 0 shown; 1 no run recorded yet; 2 usage error, bad graph\n"
    "or corrupt state file.\n";

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* ---- text --------------------------------------------------------------- */

/* Prints s with control characters as '?', cut at max bytes: errors come
 * from task output and must not drive the terminal. */
static void put_clean(FILE *out, const char *s, size_t max)
{
    size_t n = 0;
    for (; s && *s && n < max; s++, n++)
        fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
    if (s && *s)
        fputs("...", out);
}

static void fmt_age(char *buf, size_t size, int64_t age_ns)
{
    int64_t s = age_ns / ZERG_NS_PER_S;
    if (age_ns < 0)
        snprintf(buf, size, "in the future");
    else if (s < 120)
        snprintf(buf, size, "%llds ago", (long long)s);
    else if (s < 7200)
        snprintf(buf, size, "%lldm%02llds ago", (long long)(s / 60),
                 (long long)(s % 60));
    else if (s < 172800)
        snprintf(buf, size, "%lldh%02lldm ago", (long long)(s / 3600),
                 (long long)(s % 3600 / 60));
    else
        snprintf(buf, size, "%lldd ago", (long long)(s / 86400));
}

static void print_header(FILE *out, const struct view *v, int color)
{
    const char *word = sv_run_word(v);
    const char *on = "", *off = color ? "\033[0m" : "";
    if (color)
        on = v->running                    ? "\033[32m"
             : strcmp(word, "failed") == 0 ? "\033[31m"
                                           : "\033[1m";
    fprintf(out, "Feature %s: %s%s%s", v->feature, on, word, off);
    if (v->running && v->pid)
        fprintf(out, " (pid %d)", (int)v->pid);
    if (!v->running && sv_status_is(&v->s, "running"))
        fputs(" (interrupted; continue with 'zerg rush --resume')", out);
    fprintf(out, ", level %d of %d\n", sv_shown_level(v), v->g->nlevels);
}

static void print_levels(FILE *out, const struct view *v)
{
    fputs("Levels: ", out);
    for (int lv = 1; lv <= v->g->nlevels; lv++) {
        struct sv_level c;
        sv_level_counts(v, lv, &c);
        fprintf(out, "%s%d: %zu/%zu", lv > 1 ? "  " : "", lv, c.done, c.total);
        if (c.failed && c.blocked)
            fprintf(out, " (%zu failed, %zu blocked)", c.failed, c.blocked);
        else if (c.failed || c.blocked)
            fprintf(out, " (%zu %s)", c.failed + c.blocked,
                    c.failed ? "failed" : "blocked");
    }
    fputc('\n', out);
}

static void print_counts(FILE *out, const struct view *v)
{
    size_t counts[ZERG_TASK_NSTATUS];
    zerg_state_count(&v->s, counts);
    fputs("Tasks:  ", out);
    int first = 1;
    for (int st = 0; st < ZERG_TASK_NSTATUS; st++) {
        if (!counts[st])
            continue;
        fprintf(out, "%s%zu %s", first ? "" : ", ", counts[st],
                zerg_task_status_name((enum zerg_task_status)st));
        first = 0;
    }
    fprintf(out, "%s(%zu in all)\n", first ? "" : " ", v->s.ntasks);
}

/* The time left (eta.h) on the slots that can still work: a running
 * rush's, or what a resume would take on the slots the run had. */
static void print_eta(FILE *out, const struct view *v)
{
    int workers = 0;
    for (size_t i = 0; i < v->s.nworkers; i++)
        workers +=
            !v->running || (v->s.workers[i].status != ZERG_WORKER_RETIRED &&
                            v->s.workers[i].status != ZERG_WORKER_STOPPED);
    int64_t left = zerg_eta_ns(v->g, &v->s, workers, v->now_ns);
    if (left <= 0 || (!v->running && sv_status_is(&v->s, "complete")))
        return;
    long long sec = (long long)(left / ZERG_NS_PER_S);
    char t[32];
    if (sec >= 3600)
        snprintf(t, sizeof t, "%lld:%02lld:%02lld", sec / 3600, sec / 60 % 60,
                 sec % 60);
    else
        snprintf(t, sizeof t, "%lld:%02lld", sec / 60, sec % 60);
    fprintf(out, "ETA:    %s%s on %d worker%s\n", t,
            v->running ? "" : " once resumed", workers ? workers : 1,
            workers == 1 ? "" : "s");
}

/* The run's agent spend (DESIGN §14), when an executor recorded any. */
static void print_cost(FILE *out, const struct view *v)
{
    int64_t in = 0, outt = 0, cr = 0, cw = 0;
    int est = 0;
    for (size_t i = 0; i < v->s.ntasks; i++) {
        est |= v->s.tasks[i].cost_estimated;
        in += v->s.tasks[i].input_tokens;
        outt += v->s.tasks[i].output_tokens;
        cr += v->s.tasks[i].cache_read_tokens;
        cw += v->s.tasks[i].cache_write_tokens;
    }
    double cost = zerg_state_cost_usd(&v->s);
    if (cost <= 0 && in <= 0 && outt <= 0 && cr <= 0 && cw <= 0)
        return;
    fprintf(out, "Cost:   $%.4f%s (%lld in / %lld out tokens", cost,
            est ? " (part estimated from executor.pricing)" : "", (long long)in,
            (long long)outt);
    if (cr || cw)
        fprintf(out, "; cache %lld read / %lld written", (long long)cr,
                (long long)cw);
    fputs(")\n", out);
}

static void print_worker(FILE *out, const struct view *v,
                         const struct zerg_worker_state *w)
{
    char proc[32], age[32] = "-", prog[8] = "-";
    const char *task = w->task >= 0 && (size_t)w->task < v->g->ntasks
                           ? v->g->tasks[w->task].id
                           : "-";
    const struct zerg_heartbeat *hb = sv_hb_for(v, w);
    if (w->container_id[0])
        snprintf(proc, sizeof proc, "%.12s", w->container_id);
    else if (w->pid)
        snprintf(proc, sizeof proc, "%d", w->pid);
    else
        snprintf(proc, sizeof proc, "-");
    if (hb) {
        fmt_age(age, sizeof age, v->now_ns - hb->timestamp_ns);
        snprintf(prog, sizeof prog, "%d%%", hb->progress_pct);
    }
    fprintf(out, "  %-3d %-9s %-14s %-24s %-13s %-9s %s", w->id,
            sv_worker_word(v, w), proc, task,
            hb && hb->step[0] ? hb->step : "-", prog, age);
    /* An agent: its last tool call and its turn (DESIGN §21). */
    if (hb && hb->task_id[0] && (hb->activity[0] || hb->tool_calls))
        fprintf(out, "  %s, turn %lld",
                hb->activity[0] ? hb->activity : "thinking",
                (long long)hb->tool_calls + 1);
    fputc('\n', out);
}

static void print_workers(FILE *out, const struct view *v)
{
    if (!v->s.nworkers)
        return;
    fprintf(out, "Workers:\n  %-3s %-9s %-14s %-24s %-13s %-9s %s\n", "ID",
            "STATUS", "PID/CONTAINER", "TASK", "STEP", "PROGRESS", "HEARTBEAT");
    for (size_t i = 0; i < v->s.nworkers; i++)
        print_worker(out, v, &v->s.workers[i]);
}

static void print_health(FILE *out, const struct view *v,
                         const struct health *h, int color)
{
    const char *on = "";
    if (color)
        on = strcmp(h->verdict, "ok") == 0        ? "\033[32m"
             : strcmp(h->verdict, "failing") == 0 ? "\033[31m"
                                                  : "\033[33m";
    fprintf(out, "Health: %s%s%s", on, h->verdict, color ? "\033[0m" : "");
    for (int i = 0; i < h->n; i++)
        fprintf(out, "%s%s", i ? "; " : " - ", h->reasons[i]);
    fputs("\n ", out);
    for (size_t i = 0; i < zerg_nmetrics; i++)
        fprintf(out, " %s=%lld%s", zerg_metric_fields[i].name,
                (long long)zerg_metric_get(&v->s.metrics, i),
                i == 4 ? "\n " : "");
    fputc('\n', out);
}

static void print_failed(FILE *out, const struct view *v)
{
    size_t nfailed = 0, nblocked = 0;
    for (size_t i = 0; i < v->s.ntasks; i++) {
        const struct zerg_task_state *t = &v->s.tasks[i];
        if (t->status == ZERG_TASK_BLOCKED)
            nblocked++;
        if (t->status != ZERG_TASK_FAILED)
            continue;
        if (!nfailed++)
            fputs("Failed tasks:\n", out);
        fprintf(out, "  %s  [%s] ", v->g->tasks[i].id,
                t->reason ? t->reason : "failed");
        put_clean(out, t->error ? t->error : "", 200);
        fputc('\n', out);
    }
    if (nblocked)
        fprintf(out, "%zu task%s blocked by these failures.\n", nblocked,
                nblocked == 1 ? "" : "s");
    if (nfailed || nblocked)
        fprintf(out, "Next: 'zerg retry --all-failed' (or TASK_ID...), then "
                     "'zerg rush --resume'.\n");
}

/* The unfinished tasks, one group per status (running first), each
 * group on a line or two: how many, the first ids (with the worker of a
 * running one), "+N more", and the distinct reasons the group's tasks
 * carry, each with its count.  A big graph has thousands of pending
 * tasks; a list of them one a line hid what a level is waiting for. */
#define UNFINISHED_IDS 6     /* ids shown per group before "+N more" */
#define UNFINISHED_REASONS 3 /* distinct reasons shown per group */

static const enum zerg_task_status unfinished_order[] = {
    ZERG_TASK_IN_PROGRESS, ZERG_TASK_CLAIMED, ZERG_TASK_WAITING_RETRY,
    ZERG_TASK_PENDING};

/* The soonest retry of the group, "" when none is set. */
static void next_retry(const struct view *v, enum zerg_task_status st,
                       char *buf, size_t size)
{
    int64_t soonest = 0;
    buf[0] = '\0';
    for (size_t i = 0; st == ZERG_TASK_WAITING_RETRY && i < v->s.ntasks; i++) {
        const struct zerg_task_state *t = &v->s.tasks[i];
        if (t->status == st && t->retry_at_wall_ns &&
            (!soonest || t->retry_at_wall_ns < soonest))
            soonest = t->retry_at_wall_ns;
    }
    if (!soonest)
        return;
    int64_t left = (soonest - v->now_ns) / ZERG_NS_PER_S;
    if (!v->running)
        snprintf(buf, size, "  (retried when the run resumes)");
    else
        snprintf(buf, size,
                 left > 0 ? "  (next retry in %llds)" : "  (next retry due)",
                 (long long)left);
}

static int same_reason(const struct zerg_task_state *a,
                       const struct zerg_task_state *b)
{
    return !strcmp(a->reason ? a->reason : "", b->reason ? b->reason : "") &&
           !strcmp(a->error ? a->error : "", b->error ? b->error : "");
}

/* "3x [exit] command failed: ..." for the first distinct reasons. */
static void group_reasons(FILE *out, const struct view *v,
                          enum zerg_task_status st)
{
    size_t shown = 0, other = 0;
    for (size_t i = 0; i < v->s.ntasks; i++) {
        const struct zerg_task_state *t = &v->s.tasks[i];
        if (t->status != st || (!t->reason && !t->error))
            continue;
        size_t first = 0, n = 0;
        while (first < i && !(v->s.tasks[first].status == st &&
                              same_reason(&v->s.tasks[first], t)))
            first++;
        if (first < i)
            continue; /* counted with its first */
        for (size_t j = i; j < v->s.ntasks; j++)
            n += v->s.tasks[j].status == st && same_reason(&v->s.tasks[j], t);
        if (shown++ >= UNFINISHED_REASONS) {
            other += n;
            continue;
        }
        if (t->reason && t->error)
            fprintf(out, "%22s%zux [%s] ", "", n, t->reason);
        else
            fprintf(out, "%22s%zux %s", "", n, t->reason ? t->reason : "");
        put_clean(out, t->error ? t->error : "", 120);
        fputc('\n', out);
    }
    if (other)
        fprintf(out, "%22s+%zu with other reasons\n", "", other);
}

static void print_group(FILE *out, const struct view *v,
                        enum zerg_task_status st, size_t n)
{
    char when[64];
    size_t shown = 0;
    fprintf(out, "  %-14s %3zu  ", zerg_task_status_name(st), n);
    for (size_t i = 0; i < v->s.ntasks && shown < UNFINISHED_IDS; i++) {
        const struct zerg_task_state *t = &v->s.tasks[i];
        if (t->status != st)
            continue;
        fprintf(out, "%s%s", shown++ ? ", " : "", v->g->tasks[i].id);
        if (t->worker_id >= 0 &&
            (st == ZERG_TASK_IN_PROGRESS || st == ZERG_TASK_CLAIMED))
            fprintf(out, " (W%d)", t->worker_id);
    }
    if (n > shown)
        fprintf(out, " +%zu more", n - shown);
    next_retry(v, st, when, sizeof when);
    fprintf(out, "%s\n", when);
    group_reasons(out, v, st);
}

static void print_unfinished(FILE *out, const struct view *v)
{
    size_t c[ZERG_TASK_NSTATUS], all = 0;
    zerg_task_count(v->s.tasks, NULL, v->s.ntasks, c);
    for (size_t k = 0; k < sizeof unfinished_order / sizeof *unfinished_order;
         k++)
        all += c[unfinished_order[k]];
    if (!all)
        return;
    fprintf(out, "Unfinished tasks (%zu):\n", all);
    for (size_t k = 0; k < sizeof unfinished_order / sizeof *unfinished_order;
         k++)
        if (c[unfinished_order[k]])
            print_group(out, v, unfinished_order[k], c[unfinished_order[k]]);
}

#define CHECKS_SHOWN 10 /* groups of tasks by check, then "+N more" */
#define CHECK_IDS_SHOWN 5

/* Which check passes each task: its verification command, or its exit
 * code only, or nothing; tasks grouped by check. */
static void print_checks(FILE *out, const struct view *v)
{
    struct zerg_check_groups gs;
    if (zerg_check_groups(v->g, &gs) < 0 || !gs.n)
        return;
    fputs("Checks:\n", out);
    for (size_t i = 0; i < gs.n && i < CHECKS_SHOWN; i++) {
        const struct zerg_check_group *c = &gs.v[i];
        fputs(c->kind == ZERG_CHECK_VERIFICATION ? "  verification: " : "  ",
              out);
        put_clean(out, c->text, 120);
        fputs(" -- ", out);
        for (size_t k = 0; k < c->n && k < CHECK_IDS_SHOWN; k++)
            fprintf(out, "%s%s", k ? ", " : "", v->g->tasks[c->tasks[k]].id);
        if (c->n > CHECK_IDS_SHOWN)
            fprintf(out, " +%zu more", c->n - CHECK_IDS_SHOWN);
        fputc('\n', out);
    }
    if (gs.n > CHECKS_SHOWN)
        fprintf(out, "  +%zu more checks ('zerg status --json')\n",
                gs.n - CHECKS_SHOWN);
    zerg_check_groups_free(&gs);
}

static void print_text(FILE *out, const struct view *v, int color)
{
    struct health h;
    sv_judge(v, &h);
    print_header(out, v, color);
    print_levels(out, v);
    print_counts(out, v);
    print_eta(out, v);
    print_cost(out, v);
    print_workers(out, v);
    zerg_status_ws_print(out, v->cli, v->feature, &v->s, v->g);
    print_health(out, v, &h, color);
    print_unfinished(out, v);
    print_failed(out, v);
    print_checks(out, v);
}

/* ---- the command -------------------------------------------------------- */

/* ---- --watch on a terminal ------------------------------------------ */

/* One line of text cut to cols - 1 columns: escape sequences (colour)
 * take none, UTF-8 continuation bytes none, everything else one.  A cut
 * line ends its colour. */
static void put_cut(FILE *out, const char *s, size_t len, int cols)
{
    int col = 0, cut = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0x1b) { /* ESC [ ... final byte */
            size_t j = i + 1;
            while (j < len && !(s[j] >= '@' && s[j] <= '~' && j > i + 1))
                j++;
            fwrite(s + i, 1, j < len ? j - i + 1 : len - i, out);
            i = j;
            continue;
        }
        if ((c & 0xC0) != 0x80 && col++ >= cols - 1) {
            cut = 1;
            break;
        }
        fputc(c, out);
    }
    if (cut && memchr(s, 0x1b, len))
        fputs("\033[0m", out);
    fputc('\n', out);
}

/* The whole text fitted to the terminal: at most rows - 1 lines, the last
 * of them saying how many more there are, none wider than the screen, so
 * a redraw never scrolls and never wraps. */
static void put_fitted(FILE *out, const char *text, int rows, int cols)
{
    size_t nlines = 0;
    for (const char *p = text; *p; p++)
        nlines += *p == '\n';
    size_t room = rows > 2 ? (size_t)rows - 1 : 1, shown = 0;
    const char *p = text;
    while (*p && shown < room) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (shown + 1 == room && nlines > room) {
            char more[96];
            snprintf(more, sizeof more,
                     "... %zu more lines (`zerg status` prints them all)",
                     nlines - shown);
            put_cut(out, more, strlen(more), cols);
            return;
        }
        put_cut(out, p, len, cols);
        shown++;
        p = nl ? nl + 1 : p + len;
    }
}

static void term_size(int *rows, int *cols)
{
    struct winsize ws;
    *rows = 24, *cols = 80;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
        ws.ws_col > 0)
        *rows = ws.ws_row, *cols = ws.ws_col;
}

/* A text redraw on a terminal: rendered whole, then fitted. */
static void redraw(const struct view *v, int color)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return;
    /* As watch(1) does: when it was drawn, so a still screen reads as
     * "nothing changed", not as "stuck". */
    char ts[ZERG_TS_MAX];
    zerg_clock_iso8601(v->now_ns, ts);
    fprintf(mem, "Every 1 s (Ctrl-C stops): %.8s UTC\n", ts + 11);
    print_text(mem, v, color);
    fclose(mem);
    int rows, cols;
    term_size(&rows, &cols);
    fputs("\033[H\033[2J", stdout);
    put_fitted(stdout, text, rows, cols);
    free(text);
}

static int show_once(const struct zerg_cli *cli, struct view *v, int json,
                     int clear)
{
    struct zerg_err err = {0};
    int rc = sv_load(cli, v, &err);
    if (rc == -ENOENT) {
        zerg_cli_error("status",
                       "no run recorded for %s yet (run 'zerg "
                       "rush')",
                       v->feature);
        return ZERG_EXIT_FAIL;
    }
    if (rc) {
        zerg_cli_error("status", "%s", err.msg);
        return rc == ZERG_ECORRUPT || rc == ZERG_EINVAL_INPUT ? ZERG_EXIT_USAGE
                                                              : ZERG_EXIT_FAIL;
    }
    if (clear && !json) {
        redraw(v, cli->color);
        rc = ZERG_EXIT_OK;
    } else {
        rc = json ? sv_print_json(stdout, v)
                  : (print_text(stdout, v, cli->color), ZERG_EXIT_OK);
    }
    fflush(stdout);
    return rc;
}

static int watch(const struct zerg_cli *cli, struct view *v, int json)
{
    struct sigaction sa = {.sa_handler = on_sigint};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int tty = isatty(STDOUT_FILENO);
    int rc;
    /* Like watch(1): it goes on until Ctrl-C, across the end of one rush
     * and the start of the next; off a terminal it stops with the rush,
     * so a script's `status --watch` ends. */
    for (;;) {
        rc = show_once(cli, v, json, tty);
        int running = v->running;
        sv_close(v);
        if (rc != ZERG_EXIT_OK || (!running && !tty) || interrupted)
            break;
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL); /* a signal cuts it short */
        if (interrupted)
            break;
    }
    return rc;
}

static int parse(int argc, char **argv, int *json, int *watching)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"watch", no_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            *json = 1;
            break;
        case 'w':
            *watching = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return ZERG_EXIT_OK;
        default:
            return zerg_cli_usage_error("status", NULL);
        }
    }
    if (optind < argc)
        return zerg_cli_usage_error("status", "unexpected argument '%s'",
                                    argv[optind]);
    return -1;
}

int zerg_cmd_status(struct zerg_cli *cli, int argc, char **argv)
{
    int json = 0, watching = 0;
    int rc = parse(argc, argv, &json, &watching);
    if (rc >= 0)
        return rc;

    struct zerg_err err = {0};
    struct view v = {.cli = cli};
    if (zerg_cli_feature(cli, v.feature, sizeof v.feature, &err)) {
        zerg_cli_error("status", "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    if (zerg_cli_graph(cli, v.feature, &v.g, &err)) {
        zerg_cli_error("status", "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    rc = watching ? watch(cli, &v, json) : show_once(cli, &v, json, 0);
    sv_close(&v);
    zerg_graph_free(v.g);
    return rc;
}
