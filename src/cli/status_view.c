/* status_view.c - `zerg status` reads a run: the state document, the
 * rush lock and the run directory's heartbeats, and judges it (the health
 * verdict, what each worker is now, how far each level got).  Nothing is
 * written. */
#include "status_view.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"
#include "zerg/fsio.h"
#include "zerg/lock.h"

/* ---- reading ------------------------------------------------------------ */

void sv_close(struct view *v)
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
int sv_load(const struct zerg_cli *cli, struct view *v, struct zerg_err *err)
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

int sv_is_live(enum zerg_worker_status st)
{
    return st == ZERG_WORKER_STARTING || st == ZERG_WORKER_READY ||
           st == ZERG_WORKER_BUSY;
}

int sv_status_is(const struct zerg_state *s, const char *what)
{
    return s->status && strcmp(s->status, what) == 0;
}

/* What a worker is now.  The state records the last word of a rush; when
 * no rush holds the lock any more, a worker it recorded as live is gone
 * (workers die with their orchestrator), whatever it last said. */
const char *sv_worker_word(const struct view *v,
                           const struct zerg_worker_state *w)
{
    if (!v->running &&
        (sv_is_live(w->status) || w->status == ZERG_WORKER_STOPPING))
        return "gone";
    return zerg_worker_status_name(w->status);
}

/* The rush died without ending its run (kill -9, a power loss). */
int sv_interrupted(const struct view *v)
{
    return !v->running && sv_status_is(&v->s, "running");
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

void sv_judge(const struct view *v, struct health *h)
{
    const struct zerg_state *s = &v->s;
    size_t counts[ZERG_TASK_NSTATUS], live = 0, retired = 0;
    zerg_state_count(s, counts);
    for (size_t i = 0; i < s->nworkers; i++) {
        live += sv_is_live(s->workers[i].status);
        retired += s->workers[i].status == ZERG_WORKER_RETIRED;
    }
    memset(h, 0, sizeof *h);
    h->verdict = "ok";
    if (sv_status_is(s, "failed"))
        reason(h, "the run failed%s%.120s", s->error ? ": " : "",
               s->error ? s->error : "");
    if (v->running && s->nworkers && !live)
        reason(h, "no live worker while the rush runs");
    if (sv_interrupted(v))
        reason(h, "interrupted: no rush holds the lock, its workers are "
                  "gone and nothing runs; `zerg rush --resume` continues");
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

const char *sv_run_word(const struct view *v)
{
    if (v->running)
        return "running";
    if (sv_status_is(&v->s, "complete") || sv_status_is(&v->s, "failed") ||
        sv_status_is(&v->s, "stopped"))
        return v->s.status;
    return "not running";
}

/* done counts complete tasks only; failed and blocked ones are counted
 * apart, so a level that failed never reads "10/10". */
void sv_level_counts(const struct view *v, int lv, struct sv_level *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < v->s.ntasks; i++) {
        int at =
            v->s.tasks[i].level ? v->s.tasks[i].level : v->g->tasks[i].level;
        if (at != lv)
            continue;
        enum zerg_task_status st = v->s.tasks[i].status;
        c->total++;
        c->done += st == ZERG_TASK_COMPLETE;
        c->failed += st == ZERG_TASK_FAILED;
        c->blocked += st == ZERG_TASK_BLOCKED;
    }
}

const struct zerg_heartbeat *sv_hb_for(const struct view *v,
                                       const struct zerg_worker_state *w)
{
    for (size_t i = 0; i < v->nhb; i++)
        if (v->hb[i].worker_id == w->id &&
            (!w->epoch || v->hb[i].epoch == w->epoch))
            return &v->hb[i];
    return NULL;
}

/* Past the last level once everything is done: "3 of 3", never "4 of 3"
 * (the state's cursor moves one past the end). */
int sv_shown_level(const struct view *v)
{
    return v->s.current_level > v->g->nlevels ? v->g->nlevels
                                              : v->s.current_level;
}

int sv_unfinished(enum zerg_task_status st)
{
    return !zerg_task_status_terminal(st);
}
