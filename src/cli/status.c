/* status.c - `zerg status`: where a run stands, read from the files a rush
 * leaves (.zerg/state/{feature}.json, its run directory's heartbeats, the
 * lock), without writing anything.
 *
 * The health verdict, also in the help text:
 *   failing   the run failed, or a rush is running with no live worker
 *   degraded  tasks failed permanently, a worker was retired, or a policy
 *             raised an error
 *   ok        none of the above */
#include "cli.h"
#include "status_ws.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/fsio.h"
#include "zerg/graph.h"
#include "zerg/json.h"
#include "zerg/lock.h"
#include "zerg/protocol.h"
#include "zerg/state.h"

#define MAX_REASONS 6
#define MAX_HEARTBEATS 1024

static const char usage[] =
    "usage: zerg status [--feature F] [--json] [--watch]\n"
    "\n"
    "Shows where the feature's run stands: whether a rush is running, the\n"
    "current level, tasks by status, each worker with its task, step,\n"
    "progress and heartbeat age, the resilience counters, a health\n"
    "verdict, every unfinished task (status, why, next retry) and every\n"
    "failed one.  Reads .zerg/state/ only; never writes.\n"
    "\n"
    "Options:\n"
    "  --feature F  the feature (default: see 'zerg --help')\n"
    "  --json       print one JSON object (summary, heartbeats, health)\n"
    "  --watch      redraw every second until the rush ends or Ctrl-C\n"
    "  -C DIR       run as if started in DIR\n"
    "  -h, --help   show this help\n"
    "\n"
    "Health:\n"
    "  failing   the run failed, or a rush is running with no live worker\n"
    "  degraded  tasks failed permanently, a worker was retired (respawn\n"
    "            cap or spawn retries exhausted), or a policy error occurred\n"
    "  ok        none of the above\n"
    "\n"
    "Exit codes: 0 shown; 1 no run recorded yet; 2 usage error, bad graph\n"
    "or corrupt state file.\n";

/* Everything status shows, read once per redraw. */
struct view {
    const struct zerg_cli *cli;
    char feature[ZERG_ID_MAX + 1];
    struct zerg_graph *g;
    struct zerg_state s;
    int have_state;
    int running; /* a rush holds the lock */
    pid_t pid;
    struct zerg_heartbeat *hb;
    size_t nhb;
    int64_t now_ns; /* wall */
};

struct health {
    const char *verdict;
    char reasons[MAX_REASONS][160];
    int n;
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* ---- reading ------------------------------------------------------------ */

static void view_close(struct view *v)
{
    if (v->have_state)
        zerg_state_close(&v->s);
    free(v->hb);
    v->hb = NULL;
    v->nhb = 0;
    v->have_state = 0;
}

static int hb_cmp(const void *a, const void *b)
{
    const struct zerg_heartbeat *x = a, *y = b;
    return (x->worker_id > y->worker_id) - (x->worker_id < y->worker_id);
}

/* Every readable heartbeat-*.json in dir; unreadable ones are skipped (a
 * worker may be replacing its file right now). */
static void read_heartbeats(struct view *v, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) && v->nhb < MAX_HEARTBEATS) {
        char path[PATH_MAX];
        int slot = -1;
        if (zerg_proto_classify(e->d_name, &slot) != 'h' ||
            zerg_fsio_path(path, sizeof path, "%s/%s", dir, e->d_name))
            continue;
        struct zerg_heartbeat hb;
        if (zerg_proto_read_heartbeat(path, &hb) != 0)
            continue;
        struct zerg_heartbeat *n = realloc(v->hb, (v->nhb + 1) * sizeof *v->hb);
        if (!n)
            break;
        v->hb = n;
        v->hb[v->nhb++] = hb;
    }
    if (d)
        closedir(d);
    if (v->nhb)
        qsort(v->hb, v->nhb, sizeof *v->hb, hb_cmp);
}

/* Reads state, lock and heartbeats.  0, -ENOENT when no run was recorded,
 * another negative code with err set. */
static int view_load(const struct zerg_cli *cli, struct view *v,
                     struct zerg_err *err)
{
    char dir[PATH_MAX], path[PATH_MAX], lock[PATH_MAX];
    if (zerg_cli_path(cli, dir, sizeof dir, ".zerg/state/%s", v->feature) ||
        zerg_cli_path(cli, path, sizeof path, ".zerg/state/%s.json",
                      v->feature) ||
        zerg_cli_path(cli, lock, sizeof lock, ".zerg/state/%s.lock",
                      v->feature))
        return zerg_err_set(err, -ENAMETOOLONG,
                            "the project path is too "
                            "long");
    int held = zerg_lock_probe(lock, &v->pid);
    v->running = held > 0;
    int rc = zerg_state_load(&v->s, v->g, path, NULL, err);
    if (rc)
        return rc;
    v->have_state = 1;
    read_heartbeats(v, dir);
    v->now_ns = zerg_clock_wall(&zerg_clock_system);
    return 0;
}

/* ---- judging ------------------------------------------------------------ */

static int is_live(enum zerg_worker_status st)
{
    return st == ZERG_WORKER_STARTING || st == ZERG_WORKER_READY ||
           st == ZERG_WORKER_BUSY;
}

static int status_is(const struct zerg_state *s, const char *what)
{
    return s->status && strcmp(s->status, what) == 0;
}

static void reason(struct health *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void reason(struct health *h, const char *fmt, ...)
{
    if (h->n >= MAX_REASONS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->reasons[h->n++], sizeof h->reasons[0], fmt, ap);
    va_end(ap);
}

static void judge(const struct view *v, struct health *h)
{
    const struct zerg_state *s = &v->s;
    size_t counts[7], live = 0, retired = 0;
    zerg_state_count(s, counts);
    for (size_t i = 0; i < s->nworkers; i++) {
        live += is_live(s->workers[i].status);
        retired += s->workers[i].status == ZERG_WORKER_RETIRED;
    }
    memset(h, 0, sizeof *h);
    h->verdict = "ok";
    if (status_is(s, "failed"))
        reason(h, "the run failed%s%.120s", s->error ? ": " : "",
               s->error ? s->error : "");
    if (v->running && s->nworkers && !live)
        reason(h, "no live worker while the rush runs");
    if (h->n)
        h->verdict = "failing";
    int failing = h->n;
    if (counts[ZERG_TASK_FAILED])
        reason(h, "%zu task%s failed permanently", counts[ZERG_TASK_FAILED],
               counts[ZERG_TASK_FAILED] == 1 ? "" : "s");
    if (retired)
        reason(h, "%zu worker%s retired", retired, retired == 1 ? "" : "s");
    if (s->metrics.policy_errors)
        reason(h, "%lld policy error%s (bundled policy used instead)",
               (long long)s->metrics.policy_errors,
               s->metrics.policy_errors == 1 ? "" : "s");
    if (!failing && h->n)
        h->verdict = "degraded";
}

static const char *run_word(const struct view *v)
{
    if (v->running)
        return "running";
    if (status_is(&v->s, "complete") || status_is(&v->s, "failed") ||
        status_is(&v->s, "stopped"))
        return v->s.status;
    return "not running";
}

static void level_counts(const struct view *v, int lv, size_t *done,
                         size_t *total)
{
    *done = *total = 0;
    for (size_t i = 0; i < v->s.ntasks; i++) {
        int at =
            v->s.tasks[i].level ? v->s.tasks[i].level : v->g->tasks[i].level;
        if (at != lv)
            continue;
        (*total)++;
        *done += zerg_task_status_terminal(v->s.tasks[i].status) != 0;
    }
}

static const struct zerg_heartbeat *hb_for(const struct view *v,
                                           const struct zerg_worker_state *w)
{
    for (size_t i = 0; i < v->nhb; i++)
        if (v->hb[i].worker_id == w->id &&
            (!w->epoch || v->hb[i].epoch == w->epoch))
            return &v->hb[i];
    return NULL;
}

/* The metrics by name, in the order they are shown. */
/* clang-format off */
static const struct metric {
    const char *name;
    size_t off;
} metrics[] = {
#define M(f) {#f, offsetof(struct zerg_metrics, f)}
    M(stale_detections), M(task_reassignments), M(worker_respawns),
    M(spawn_retries),    M(policy_errors),      M(worker_crashes),
    M(task_timeouts),    M(task_retries),       M(results_fenced),
    M(reconcile_fixes),
#undef M
};
/* clang-format on */
#define NMETRICS (sizeof metrics / sizeof metrics[0])

static int64_t metric(const struct zerg_metrics *m, size_t i)
{
    return *(const int64_t *)((const char *)m + metrics[i].off);
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
    const char *word = run_word(v);
    const char *on = "", *off = color ? "\033[0m" : "";
    if (color)
        on = v->running                    ? "\033[32m"
             : strcmp(word, "failed") == 0 ? "\033[31m"
                                           : "\033[1m";
    fprintf(out, "Feature %s: %s%s%s", v->feature, on, word, off);
    if (v->running && v->pid)
        fprintf(out, " (pid %d)", (int)v->pid);
    if (!v->running && status_is(&v->s, "running"))
        fputs(" (interrupted; continue with 'zerg rush --resume')", out);
    /* Past the last level once everything is done: show "3 of 3". */
    int lvl =
        v->s.current_level > v->g->nlevels ? v->g->nlevels : v->s.current_level;
    fprintf(out, ", level %d of %d\n", lvl, v->g->nlevels);
}

static void print_levels(FILE *out, const struct view *v)
{
    fputs("Levels: ", out);
    for (int lv = 1; lv <= v->g->nlevels; lv++) {
        size_t done, total;
        level_counts(v, lv, &done, &total);
        fprintf(out, "%s%d: %zu/%zu", lv > 1 ? "  " : "", lv, done, total);
    }
    fputc('\n', out);
}

static void print_counts(FILE *out, const struct view *v)
{
    size_t counts[7];
    zerg_state_count(&v->s, counts);
    fputs("Tasks:  ", out);
    int first = 1;
    for (int st = 0; st < 7; st++) {
        if (!counts[st])
            continue;
        fprintf(out, "%s%zu %s", first ? "" : ", ", counts[st],
                zerg_task_status_name((enum zerg_task_status)st));
        first = 0;
    }
    fprintf(out, "%s(%zu in all)\n", first ? "" : " ", v->s.ntasks);
}

/* The run's agent spend (DESIGN §14), when an executor recorded any. */
static void print_cost(FILE *out, const struct view *v)
{
    int64_t in = 0, outt = 0;
    for (size_t i = 0; i < v->s.ntasks; i++) {
        in += v->s.tasks[i].input_tokens;
        outt += v->s.tasks[i].output_tokens;
    }
    double cost = zerg_state_cost_usd(&v->s);
    if (cost > 0 || in > 0 || outt > 0)
        fprintf(out, "Cost:   $%.4f (%lld in / %lld out tokens)\n", cost,
                (long long)in, (long long)outt);
}

static void print_worker(FILE *out, const struct view *v,
                         const struct zerg_worker_state *w)
{
    char proc[32], age[32] = "-", prog[8] = "-";
    const char *task = w->task >= 0 && (size_t)w->task < v->g->ntasks
                           ? v->g->tasks[w->task].id
                           : "-";
    const struct zerg_heartbeat *hb = hb_for(v, w);
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
    fprintf(out, "  %-3d %-9s %-14s %-24s %-13s %-9s %s\n", w->id,
            zerg_worker_status_name(w->status), proc, task,
            hb && hb->step[0] ? hb->step : "-", prog, age);
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
    for (size_t i = 0; i < NMETRICS; i++)
        fprintf(out, " %s=%lld%s", metrics[i].name,
                (long long)metric(&v->s.metrics, i), i == 4 ? "\n " : "");
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

/* Unfinished tasks shown before "+N more": a big graph has thousands. */
#define UNFINISHED_MAX 20

static int unfinished(enum zerg_task_status st)
{
    return !zerg_task_status_terminal(st);
}

/* "retry in 12s" for a task waiting for its retry, "" otherwise. */
static void next_retry(const struct view *v, const struct zerg_task_state *t,
                       char *buf, size_t size)
{
    buf[0] = '\0';
    if (t->status != ZERG_TASK_WAITING_RETRY || !t->retry_at_wall_ns)
        return;
    int64_t left = (t->retry_at_wall_ns - v->now_ns) / ZERG_NS_PER_S;
    snprintf(buf, size, left > 0 ? "  retry in %llds" : "  retry due",
             (long long)left);
}

/* Every task not finished yet, with its status, why, and when it retries:
 * what a level is waiting for. */
static void print_unfinished(FILE *out, const struct view *v)
{
    size_t n = 0;
    for (size_t i = 0; i < v->s.ntasks; i++) {
        const struct zerg_task_state *t = &v->s.tasks[i];
        if (!unfinished(t->status) || n++ >= UNFINISHED_MAX)
            continue;
        if (n == 1)
            fputs("Unfinished tasks:\n", out);
        char when[48];
        next_retry(v, t, when, sizeof when);
        fprintf(out, "  %s  %s%s", v->g->tasks[i].id,
                zerg_task_status_name(t->status), when);
        if (t->worker_id >= 0 && unfinished(t->status) &&
            t->status != ZERG_TASK_PENDING &&
            t->status != ZERG_TASK_WAITING_RETRY)
            fprintf(out, " on worker %d", t->worker_id);
        if (t->reason || t->error) {
            fprintf(out, "  [%s] ", t->reason ? t->reason : "-");
            put_clean(out, t->error ? t->error : "", 160);
        }
        fputc('\n', out);
    }
    if (n > UNFINISHED_MAX)
        fprintf(out, "  +%zu more\n", n - UNFINISHED_MAX);
}

static void print_text(FILE *out, const struct view *v, int color)
{
    struct health h;
    judge(v, &h);
    print_header(out, v, color);
    print_levels(out, v);
    print_counts(out, v);
    print_cost(out, v);
    print_workers(out, v);
    zerg_status_ws_print(out, v->cli, v->feature, &v->s, v->g);
    print_health(out, v, &h, color);
    print_unfinished(out, v);
    print_failed(out, v);
}

/* ---- JSON --------------------------------------------------------------- */

static zerg_json *json_levels(const struct view *v)
{
    zerg_json *arr = zerg_json_arr();
    for (int lv = 1; arr && lv <= v->g->nlevels; lv++) {
        size_t done, total;
        level_counts(v, lv, &done, &total);
        zerg_json *o = zerg_json_obj();
        const char *st = lv <= v->s.nlevels
                             ? zerg_level_status_name(v->s.levels[lv].status)
                             : "pending";
        if (!o || zerg_json_set_num(o, "level", lv) ||
            zerg_json_set_str(o, "status", st) ||
            zerg_json_set_num(o, "done", (double)done) ||
            zerg_json_set_num(o, "total", (double)total) ||
            zerg_json_push(arr, o)) {
            zerg_json_free(arr);
            return NULL;
        }
    }
    return arr;
}

static zerg_json *json_counts(const struct view *v)
{
    size_t counts[7];
    zerg_state_count(&v->s, counts);
    zerg_json *o = zerg_json_obj();
    for (int st = 0; o && st < 7; st++)
        if (zerg_json_set_num(o,
                              zerg_task_status_name((enum zerg_task_status)st),
                              (double)counts[st])) {
            zerg_json_free(o);
            return NULL;
        }
    return o;
}

static zerg_json *json_heartbeats(const struct view *v)
{
    zerg_json *arr = zerg_json_arr();
    for (size_t i = 0; arr && i < v->nhb; i++) {
        const struct zerg_heartbeat *hb = &v->hb[i];
        char ts[ZERG_TS_MAX];
        zerg_json *o = zerg_json_obj();
        if (!o || zerg_json_set_num(o, "worker_id", hb->worker_id) ||
            zerg_json_set_num(o, "epoch", (double)hb->epoch) ||
            zerg_json_set_num(o, "seq", (double)hb->seq) ||
            zerg_json_set_str(o, "timestamp",
                              zerg_clock_iso8601(hb->timestamp_ns, ts)) ||
            zerg_json_set_num(o, "age_seconds",
                              zerg_ns_to_s(v->now_ns - hb->timestamp_ns)) ||
            zerg_json_set_str(o, "task_id",
                              hb->task_id[0] ? hb->task_id : NULL) ||
            zerg_json_set_str(o, "step", hb->step) ||
            zerg_json_set_num(o, "progress_pct", hb->progress_pct) ||
            zerg_json_set_num(o, "pid", hb->pid) || zerg_json_push(arr, o)) {
            zerg_json_free(arr);
            return NULL;
        }
    }
    return arr;
}

static zerg_json *json_health(const struct view *v)
{
    struct health h;
    judge(v, &h);
    zerg_json *o = zerg_json_obj();
    zerg_json *why = zerg_json_arr();
    zerg_json *m = zerg_json_obj();
    int bad = !o || !why || !m;
    for (int i = 0; !bad && i < h.n; i++)
        bad = zerg_json_push(why, zerg_json_str(h.reasons[i])) != 0;
    for (size_t i = 0; !bad && i < NMETRICS; i++)
        bad = zerg_json_set_num(m, metrics[i].name,
                                (double)metric(&v->s.metrics, i)) != 0;
    if (!bad && !zerg_json_set_str(o, "verdict", h.verdict)) {
        bad = zerg_json_set(o, "reasons", why);
        why = NULL;
        bad = bad || zerg_json_set(o, "metrics", m);
        m = NULL;
    } else {
        bad = 1;
    }
    zerg_json_free(why);
    zerg_json_free(m);
    if (bad) {
        zerg_json_free(o);
        return NULL;
    }
    return o;
}

static zerg_json *json_failed(const struct view *v)
{
    zerg_json *arr = zerg_json_arr();
    for (size_t i = 0; arr && i < v->s.ntasks; i++) {
        const struct zerg_task_state *t = &v->s.tasks[i];
        if (t->status != ZERG_TASK_FAILED)
            continue;
        zerg_json *o = zerg_json_obj();
        if (!o || zerg_json_set_str(o, "id", v->g->tasks[i].id) ||
            zerg_json_set_str(o, "reason", t->reason) ||
            zerg_json_set_str(o, "error", t->error) ||
            zerg_json_set_num(o, "retry_count", t->retry_count) ||
            zerg_json_push(arr, o)) {
            zerg_json_free(arr);
            return NULL;
        }
    }
    return arr;
}

/* Every unfinished task: id, status, worker, reason, error, retry_at. */
static zerg_json *json_unfinished(const struct view *v)
{
    zerg_json *arr = zerg_json_arr();
    char ts[ZERG_TS_MAX];
    for (size_t i = 0; arr && i < v->s.ntasks; i++) {
        const struct zerg_task_state *t = &v->s.tasks[i];
        if (!unfinished(t->status))
            continue;
        zerg_json *o = zerg_json_obj();
        int waiting =
            t->status == ZERG_TASK_WAITING_RETRY && t->retry_at_wall_ns;
        if (!o || zerg_json_set_str(o, "id", v->g->tasks[i].id) ||
            zerg_json_set_str(o, "status", zerg_task_status_name(t->status)) ||
            zerg_json_set_num(o, "worker", t->worker_id) ||
            zerg_json_set_str(o, "reason", t->reason) ||
            zerg_json_set_str(o, "error", t->error) ||
            zerg_json_set_str(
                o, "retry_at",
                waiting ? zerg_clock_iso8601(t->retry_at_wall_ns, ts) : NULL) ||
            zerg_json_push(arr, o)) {
            zerg_json_free(arr);
            return NULL;
        }
    }
    return arr;
}

static zerg_json *json_view(const struct view *v)
{
    zerg_json *o = zerg_json_obj();
    zerg_json *state = zerg_state_to_json(&v->s, v->g);
    if (!o || !state)
        goto fail;
    /* The full document's workers, metrics and levels are reused; its
     * per-task map is left out (it can be thousands of entries). */
    if (zerg_json_set_str(o, "feature", v->feature) ||
        zerg_json_set_str(o, "run", run_word(v)) ||
        zerg_json_set_bool(o, "running", v->running) ||
        (v->running && v->pid ? zerg_json_set_num(o, "pid", v->pid)
                              : zerg_json_set_null(o, "pid")) ||
        zerg_json_set_str(o, "run_id", v->s.run_id) ||
        zerg_json_set_str(o, "status", v->s.status) ||
        zerg_json_set_str(o, "error", v->s.error) ||
        zerg_json_set_num(o, "current_level", v->s.current_level) ||
        zerg_json_set_num(o, "nlevels", v->g->nlevels) ||
        zerg_json_set_num(o, "cost_usd", zerg_state_cost_usd(&v->s)) ||
        zerg_json_set(o, "levels", json_levels(v)) ||
        zerg_json_set(o, "tasks", json_counts(v)) ||
        zerg_json_set(o, "failed", json_failed(v)) ||
        zerg_json_set(o, "unfinished", json_unfinished(v)) ||
        zerg_json_set(o, "workers",
                      zerg_json_dup(zerg_json_get(state, "workers"))) ||
        zerg_json_set(o, "heartbeats", json_heartbeats(v)) ||
        zerg_json_set(o, "git",
                      zerg_status_ws_json(v->cli, v->feature, &v->s, v->g)) ||
        zerg_json_set(o, "health", json_health(v)))
        goto fail;
    zerg_json_free(state);
    return o;
fail:
    zerg_json_free(state);
    zerg_json_free(o);
    return NULL;
}

static int print_json(FILE *out, const struct view *v)
{
    struct zerg_err err = {0};
    zerg_json *doc = json_view(v);
    char *text = doc ? zerg_json_encode(doc, NULL, &err) : NULL;
    zerg_json_free(doc);
    if (!text) {
        zerg_cli_error("status", "cannot encode the summary: %s",
                       err.msg[0] ? err.msg : "out of memory");
        return ZERG_EXIT_FAIL;
    }
    fprintf(out, "%s\n", text);
    free(text);
    return ZERG_EXIT_OK;
}

/* ---- the command -------------------------------------------------------- */

static int show_once(const struct zerg_cli *cli, struct view *v, int json,
                     int clear)
{
    struct zerg_err err = {0};
    int rc = view_load(cli, v, &err);
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
    if (clear)
        fputs("\033[H\033[2J", stdout);
    rc = json ? print_json(stdout, v)
              : (print_text(stdout, v, cli->color), ZERG_EXIT_OK);
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
    for (;;) {
        rc = show_once(cli, v, json, tty);
        int running = v->running;
        view_close(v);
        if (rc != ZERG_EXIT_OK || !running || interrupted)
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
    view_close(&v);
    zerg_graph_free(v.g);
    return rc;
}
