/* orch_review.c - review before merge (rush.review, DESIGN §21).
 *
 * Under rush.review a passing attempt is checked as always (its commit
 * taken, its outputs, scope.config, scope.decide) and then, instead of
 * being merged, its commit is kept at refs/zerg/{feature}/review/{id}/{n}
 * and the task waits as awaiting_review: not terminal, so its level does
 * not close and its dependents do not start, while independent work goes
 * on and its worker takes the next task.
 *
 * The reviewer answers with `zerg approve` or `zerg redo`, which leave a
 * request file per task in .zerg/review/{feature}/ (zerg/review.h).
 * While a task waits the directory is read every REVIEW_LOOK_NS (the
 * rush's watch covers the run directory only, which workers write):
 *
 *   approve, its attempt waiting   merged through the queue -> complete;
 *                                  a conflict -> redo (conflict retry
 *                                  budget) or failed; a held branch ->
 *                                  nothing moves, the request stays, the
 *                                  run stops (--resume merges it)
 *   redo, its attempt waiting      -> pending, uncharged, with the note
 *                                  for the next prompt ($ZERG_REVIEW_NOTE
 *                                  for a command task)
 *   another attempt, another task  dropped (review_request_invalid)
 *
 * Once nothing runs and tasks wait, the run says so (review_waiting),
 * once per change of what waits. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "orch_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/review.h"
#include "zerg/workspace.h"

#define REVIEW_LOOK_NS (250 * ZERG_NS_PER_MS)
#define WAITING_LISTED 5 /* tasks review_waiting names */

int orch_review_applies(const struct zerg_orch *o)
{
    return o->cfg->rush_review && o->o.workspace;
}

void orch_review_count(struct zerg_orch *o)
{
    size_t c[ZERG_TASK_NSTATUS];
    zerg_task_count(o->s->tasks, NULL, o->g->ntasks, c);
    o->awaiting = c[ZERG_TASK_AWAITING_REVIEW];
    o->review_said = 0;
}

int orch_review_hold(struct zerg_orch *o, const struct zerg_result *r,
                     struct verdict *v)
{
    struct zerg_workspace *w = o->o.workspace;
    struct zerg_err err = {0};
    if (w->ops->keep(w, ZERG_WS_KEPT_REVIEW, r->task, r->attempt, r->commit,
                     &err) < 0)
        return orch_verdict_failed(v, "commit", NULL, 0, 0,
                                   "its commit cannot be kept for review: "
                                   "%.340s",
                                   err.msg);
    *v = (struct verdict){.kind = VERDICT_REVIEW};
    return 0;
}

void orch_review_await(struct zerg_orch *o, size_t t,
                       const struct zerg_result *r, int64_t now)
{
    struct zerg_task_move m = {.now_wall_ns = orch_wall_ns(o),
                               .worker_id = r->worker_id,
                               .commit = r->commit,
                               .base = r->base};
    if (orch_task_move(o, t, ZERG_TASK_EV_AWAIT, &m) != 0)
        return;
    char ref[PATH_MAX] = "";
    zerg_ws_kept_ref(ref, sizeof ref, o->o.feature, ZERG_WS_KEPT_REVIEW,
                     r->task, r->attempt);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", r->attempt);
    zerg_json_set_str(data, "commit", r->commit);
    zerg_json_set_str(data, "ref", ref);
    zerg_json_set_num(data, "duration_ms", (double)r->duration_ms);
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_INFO,
                   "task_awaiting_review", r->task, data,
                   "Task %s passed and waits for review (commit %.12s): "
                   "zerg diff %s, then zerg approve %s or zerg redo %s "
                   "--note TEXT",
                   r->task, r->commit, r->task, r->task, r->task);
    o->next_review_mono_ns = 0; /* look at once: a decision may be there */
    /* `zerg approve` reads the saved state: what waits is saved now, not
     * a checkpoint gap later. */
    orch_checkpoint(o, now, ORCH_SAVE_NOW);
}

/* ---- the reviewer's decisions ------------------------------------------ */

static void invalid(struct zerg_orch *o, const char *task, const char *fmt,
                    const char *what)
{
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN,
                   "review_request_invalid", task, NULL, fmt, what);
}

/* Approved: merged through the queue.  1 when the request must stay (the
 * branch is held: nothing moved, --resume merges it). */
static int approve(struct zerg_orch *o, size_t t, int64_t now)
{
    const struct zerg_task_state *st = orch_ts(o, t);
    struct zerg_result r = {.worker_id = st->review_worker,
                            .attempt = st->attempt,
                            .outcome = ZERG_OUTCOME_COMPLETE,
                            .duration_ms = st->duration_ms};
    snprintf(r.task, sizeof r.task, "%s", orch_tid(o, t));
    snprintf(r.commit, sizeof r.commit, "%s", st->review_commit);
    snprintf(r.base, sizeof r.base, "%s", st->review_base);
    struct verdict v;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", r.attempt);
    zerg_json_set_str(data, "commit", r.commit);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "task_approved",
                   r.task, data, "Task %s approved: merging %.12s", r.task,
                   r.commit);
    if (orch_merge_commit(o, t, &r, &v, zerg_clock_mono(o->o.clock)) == 1) {
        orch_attempt_completed(o, t, &r, ZERG_TASK_EV_APPROVE);
        return 0;
    }
    int held = v.kind == VERDICT_REQUEUE && v.stop_run;
    if (v.kind == VERDICT_REQUEUE && !held) {
        struct zerg_task_move m = {.error = "conflict", .reason = "conflict"};
        if (orch_task_move(o, t, ZERG_TASK_EV_REDO, &m) == 0)
            o->retry_at_mono_ns[t] = 0;
    } else if (v.kind != VERDICT_REQUEUE) {
        orch_task_fail_now(o, t, v.failure ? v.failure : "merge", v.error);
    }
    if (v.stop_run)
        orch_run_event(o, RUN_EV_STOP, 0, now);
    return held;
}

static void redo(struct zerg_orch *o, size_t t, const char *note)
{
    struct zerg_task_move m = {.error = "redo asked at review",
                               .reason = "review",
                               .note = note ? note : ""};
    int attempt = orch_ts(o, t)->attempt;
    if (orch_task_move(o, t, ZERG_TASK_EV_REDO, &m) != 0)
        return;
    o->retry_at_mono_ns[t] = 0;
    o->resume_next[t] = 0; /* a new attempt on the tip, not the old one */
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", attempt);
    zerg_json_set_str(data, "note", note ? note : "");
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "task_redo",
                   orch_tid(o, t), data,
                   "Task %s runs again at the reviewer's request%s%.200s",
                   orch_tid(o, t), note && *note ? ": " : "", note ? note : "");
}

/* Reads and applies the request at path; deletes it unless it must stay.
 * 1 when a task moved. */
static int apply(struct zerg_orch *o, const char *path, int64_t now)
{
    struct zerg_review_request rq;
    struct zerg_err err = {0};
    if (zerg_review_request_read(path, &rq, &err) < 0) {
        if (err.code != -ENOENT) {
            invalid(o, NULL, "Ignored review request: %s", err.msg);
            unlink(path);
        }
        return 0;
    }
    ssize_t i = zerg_graph_find(o->g, rq.task);
    const struct zerg_task_state *st = i >= 0 ? orch_ts(o, (size_t)i) : NULL;
    char why[200];
    int stay = 0, moved = 0;
    if (strcmp(rq.feature, o->o.feature) || !st)
        invalid(o, rq.task,
                "Ignored review request for %s: not a task of "
                "this feature",
                rq.task);
    else if (st->status != ZERG_TASK_AWAITING_REVIEW ||
             st->attempt != rq.attempt) {
        snprintf(why, sizeof why,
                 "Ignored review request for %s (attempt %d): the task is "
                 "%s at attempt %d",
                 rq.task, rq.attempt, zerg_task_status_name(st->status),
                 st->attempt);
        invalid(o, rq.task, "%s", why);
    } else if (rq.decision == ZERG_REVIEW_APPROVE) {
        stay = approve(o, (size_t)i, now);
        moved = !stay;
    } else {
        redo(o, (size_t)i, rq.note);
        moved = 1;
    }
    if (!stay)
        unlink(path);
    zerg_review_request_close(&rq);
    return moved;
}

/* The requests in review_dir applied; how many moved a task. */
static int look(struct zerg_orch *o, int64_t now)
{
    DIR *d = opendir(o->review_dir);
    struct dirent *e;
    char path[PATH_MAX];
    int moved = 0;
    if (!d)
        return 0;
    while (o->awaiting && o->run_state <= RUN_CLOSED && (e = readdir(d)))
        if (zerg_review_request_name(e->d_name, NULL) &&
            !zerg_fsio_path(path, sizeof path, "%s/%s", o->review_dir,
                            e->d_name))
            moved += apply(o, path, now);
    closedir(d);
    return moved;
}

/* Nothing runs and tasks wait: say which, once per change. */
static void say_waiting(struct zerg_orch *o)
{
    char list[WAITING_LISTED * (ZERG_ID_MAX + 2) + 16] = "";
    size_t off = 0, named = 0;
    zerg_json *tasks = zerg_json_arr();
    for (size_t t = 0; t < o->g->ntasks; t++) {
        if (orch_ts(o, t)->status != ZERG_TASK_AWAITING_REVIEW)
            continue;
        zerg_json_push(tasks, zerg_json_str(orch_tid(o, t)));
        if (named++ < WAITING_LISTED && off < sizeof list)
            off += (size_t)snprintf(list + off, sizeof list - off, "%s%s",
                                    off ? ", " : "", orch_tid(o, t));
    }
    if (named > WAITING_LISTED && off < sizeof list)
        snprintf(list + off, sizeof list - off, ", +%zu more",
                 named - WAITING_LISTED);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "tasks", (double)o->awaiting);
    zerg_json_set(data, "waiting", tasks);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "review_waiting",
                   NULL, data,
                   "Waiting for review: %zu task%s (%s); see zerg review, "
                   "then zerg approve or zerg redo",
                   o->awaiting, o->awaiting == 1 ? "" : "s", list);
    o->review_said = 1;
}

int64_t orch_review_tick(struct zerg_orch *o, int64_t now, int64_t wake)
{
    if (!o->awaiting || o->run_state > RUN_CLOSED)
        return wake;
    if (now >= o->next_review_mono_ns) {
        o->next_review_mono_ns = now + REVIEW_LOOK_NS;
        if (look(o, now))
            return now; /* a task moved: claim or close at once */
    }
    if (o->awaiting && !o->review_said && !orch_running_tasks(o))
        say_waiting(o);
    return o->awaiting && o->next_review_mono_ns < wake ? o->next_review_mono_ns
                                                        : wake;
}
