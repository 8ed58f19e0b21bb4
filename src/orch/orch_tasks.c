/* orch_tasks.c - task moves as the orchestrator makes them.
 *
 * Every status change of a live rush passes orch_task_move, which applies
 * the task table (zerg/task_fsm.h), refuses and logs what the table does
 * not allow, and rewinds the level cursor when a task becomes unfinished
 * again; the slot that ran the task hears of it from the dispatch
 * (orch_attempt.c), never from here.  Above it, the three outcomes of a
 * failed attempt asked of retry.decide:
 *
 *   charged, retry granted  -> retry_later   (waiting_retry, backoff)
 *   uncharged (a crash)     -> requeue       (pending, reassigned)
 *   no retry                -> fail          (failed; dependents blocked)
 *
 * Whatever retry.decide answers, two ceilings hold (logged when they
 * bite, as retry_ceiling): a task gets at most ORCH_ATTEMPTS_CEILING
 * attempts in a run, and a failure of the task itself (exit,
 * verification, timeout) waits at least ORCH_RETRY_MIN_DELAY_NS before
 * it runs again.  Without them a policy answering {retry = true,
 * charge = false, delay = 0} runs a failing task thousands of times a
 * second, forever.
 *
 * The leaf of src/orch/: it calls nothing else of the orchestrator but
 * the ready set of rush.schedule dag (orch_dag.c), told of every move. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch_internal.h"
#include "zerg/err.h"

#define ORCH_RETRY_MIN_DELAY_NS (100 * ZERG_NS_PER_MS)

/* Ten times what the retry budget allows, and never fewer than 20: far
 * above any sane policy, low enough that a runaway one ends. */
static int attempts_ceiling(const struct zerg_config *c)
{
    int n = 10 * (c->retry_attempts + 1);
    return n < 20 ? 20 : n;
}

int orch_task_move(struct zerg_orch *o, size_t t, enum zerg_task_event ev,
                   const struct zerg_task_move *m)
{
    struct zerg_task_state *st = orch_ts(o, t);
    int was_terminal = zerg_task_status_terminal(st->status);
    int was_running = orch_task_running(st->status);
    enum zerg_task_status from = st->status;
    char why[160];

    int rc = zerg_task_apply(st, ev, m, why, sizeof why);
    if (rc == ZERG_EINVAL_INPUT) {
        zerg_json *data = zerg_json_obj();
        zerg_json_set_str(data, "move", zerg_task_event_name(ev));
        zerg_json_set_str(data, "status", zerg_task_status_name(st->status));
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_ERROR,
                       "task_move_refused", orch_tid(o, t), data,
                       "Refused to change task %s: %s", orch_tid(o, t), why);
        return rc;
    }
    if (was_running != orch_task_running(st->status))
        orch_wgroups_add(o, t, was_running ? -1 : 1);
    int awaits = st->status == ZERG_TASK_AWAITING_REVIEW;
    if (awaits != (from == ZERG_TASK_AWAITING_REVIEW)) {
        o->awaiting += awaits ? 1 : (size_t)-1;
        o->review_said = 0; /* what waits changed: say it again */
    }
    /* The level cursor skips terminal tasks only: it must look again when
     * one becomes unfinished. */
    if (was_terminal && !zerg_task_status_terminal(st->status))
        orch_level_reopened(o, t);
    /* Under dag: dependents of a task just complete may be ready now. */
    orch_dag_moved(o, t, from);
    orch_mark_dirty(o);
    return rc;
}

void orch_wgroups_add(struct zerg_orch *o, size_t t, int d)
{
    const struct zerg_task *tk = &o->g->tasks[t];
    for (size_t q = 0; q < tk->nwgroups; q++)
        o->wgroup_running[tk->wgroups[q]] += d;
}

void orch_level_reopened(struct zerg_orch *o, size_t t)
{
    size_t lvl = (size_t)o->g->tasks[t].level;
    o->level_cursor[lvl] = 0;
}

void orch_requeue(struct zerg_orch *o, size_t t, const char *why)
{
    struct zerg_task_move m = {.error = why};
    if (orch_task_move(o, t, ZERG_TASK_EV_REQUEUE, &m) == 0)
        o->retry_at_mono_ns[t] = 0;
}

void orch_retry_context(const struct zerg_orch *o, size_t t,
                        struct zerg_assign *a)
{
    const struct zerg_task_state *st = &o->s->tasks[t];
    if (st->attempt < 1)
        return;
    int conflict = st->error && !strcmp(st->error, "conflict");
    snprintf(a->last_class, sizeof a->last_class, "%s",
             conflict     ? "conflict"
             : st->reason ? st->reason
                          : "");
    snprintf(a->last_error, sizeof a->last_error, "%s",
             conflict    ? "its commit conflicted with the integration branch"
             : st->error ? st->error
                         : "");
    if (conflict && st->conflict_paths)
        snprintf(a->last_conflicts, sizeof a->last_conflicts, "%s",
                 st->conflict_paths);
    if (st->review_note)
        snprintf(a->review_note, sizeof a->review_note, "%s", st->review_note);
}

void orch_task_started(struct zerg_orch *o, size_t t, int worker, int pgid)
{
    struct zerg_task_move m = {.now_wall_ns = orch_wall_ns(o)};
    if (orch_task_move(o, t, ZERG_TASK_EV_START, &m) != 0)
        return;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", orch_ts(o, t)->attempt);
    zerg_json_set_num(data, "pgid", pgid);
    zerg_log_event(o->o.log, worker, ZERG_LOG_INFO, "task_started",
                   orch_tid(o, t), data,
                   "Worker %d started task %s (attempt %d)", worker,
                   orch_tid(o, t), orch_ts(o, t)->attempt);
}

/* The first failed or blocked dependency of task t, or -1. */
static ssize_t ended_dep(const struct zerg_orch *o, size_t t)
{
    const struct zerg_task *tk = &o->g->tasks[t];
    for (size_t d = 0; d < tk->deps.n; d++) {
        enum zerg_task_status ds = o->s->tasks[tk->dep_idx[d]].status;
        if (ds == ZERG_TASK_FAILED || ds == ZERG_TASK_BLOCKED)
            return (ssize_t)tk->dep_idx[d];
    }
    return -1;
}

/* One pass in graph order; returns 1 when it blocked something. */
static int block_pass(struct zerg_orch *o)
{
    int changed = 0;
    for (size_t i = 0; i < o->g->ntasks; i++) {
        if (!zerg_task_move_legal(orch_ts(o, i)->status, ZERG_TASK_EV_BLOCK))
            continue;
        ssize_t d = ended_dep(o, i);
        if (d < 0)
            continue;
        char why[160];
        snprintf(why, sizeof why, "dependency %s %s", orch_tid(o, (size_t)d),
                 orch_ts(o, (size_t)d)->status == ZERG_TASK_FAILED
                     ? "failed"
                     : "is blocked");
        struct zerg_task_move m = {.error = why};
        if (orch_task_move(o, i, ZERG_TASK_EV_BLOCK, &m) != 0)
            continue;
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "task_blocked",
                       orch_tid(o, i), NULL, "Task %s blocked: %s",
                       orch_tid(o, i), why);
        changed = 1;
    }
    return changed;
}

void orch_block_dependents(struct zerg_orch *o)
{
    /* Dependents always sit at the same or a higher level; a few passes
     * over the graph reach the transitive closure without recursion. */
    while (block_pass(o))
        ;
    orch_mark_dirty(o);
}

static void fail_permanently(struct zerg_orch *o, size_t t, const char *reason,
                             const char *error)
{
    struct zerg_task_move m = {
        .now_wall_ns = orch_wall_ns(o), .reason = reason, .error = error};
    if (orch_task_move(o, t, ZERG_TASK_EV_FAIL, &m) == 0)
        orch_block_dependents(o);
}

void orch_task_fail_now(struct zerg_orch *o, size_t t, const char *reason,
                        const char *error)
{
    int worker = orch_ts(o, t)->worker_id;
    fail_permanently(o, t, reason, error);
    zerg_log_event(o->o.log, worker, ZERG_LOG_ERROR, "task_failed",
                   orch_tid(o, t), NULL, "Task %s failed permanently (%s): %s",
                   orch_tid(o, t), reason, error);
}

int orch_task_adopt(struct zerg_orch *o, size_t t, int attempt)
{
    struct zerg_task_state *st = orch_ts(o, t);
    /* An attempt newer than the state's was claimed after the last
     * checkpoint: its worker's epoch is not known, and the one recorded
     * belongs to the attempt before it. */
    int newer = attempt > st->attempt;
    struct zerg_task_move m = {.attempt = newer ? attempt : st->attempt,
                               .epoch = newer ? 0 : st->epoch,
                               .now_wall_ns = orch_wall_ns(o)};
    /* Running in the state at that attempt: its record stands.  At an
     * older one (the checkpoint caught the attempt before a crash, not
     * the reassignment after it) the record is the older attempt's. */
    if (orch_task_running(st->status) && !newer)
        return 0;
    return orch_task_move(o, t, ZERG_TASK_EV_ADOPT, &m);
}

void orch_task_adopt_complete(struct zerg_orch *o, size_t t, int attempt,
                              const char *why)
{
    struct zerg_task_move m = {.now_wall_ns = orch_wall_ns(o)};
    if (orch_task_adopt(o, t, attempt) != 0 ||
        orch_task_move(o, t, ZERG_TASK_EV_COMPLETE, &m) != 0)
        return;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", attempt);
    zerg_json_set_bool(data, "replayed", 1);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "task_complete",
                   orch_tid(o, t), data, "Task %s complete: %s", orch_tid(o, t),
                   why);
}

static void retry_charged(struct zerg_orch *o, size_t t, const char *kind,
                          const char *error, const struct zerg_retry_out *out,
                          zerg_json *why, int64_t now)
{
    struct zerg_task_state *st = orch_ts(o, t);
    int worker = st->worker_id;
    struct zerg_task_move m = {
        .retry_at_wall_ns = orch_wall_ns(o) + out->delay_ns,
        .error = error,
        .reason = kind,
    };
    if (orch_task_move(o, t, ZERG_TASK_EV_RETRY_LATER, &m) != 0) {
        zerg_json_free(why);
        return;
    }
    o->s->metrics.task_retries++;
    o->retry_at_mono_ns[t] = now + out->delay_ns;
    zerg_log_event(o->o.log, worker, ZERG_LOG_WARN, "task_failed",
                   orch_tid(o, t), why,
                   "Task %s failed (%s): %s; retry %d of %d in %.1fs",
                   orch_tid(o, t), kind, error, st->retry_count,
                   o->cfg->retry_attempts, ORCH_SEC(out->delay_ns));
}

static void reassign(struct zerg_orch *o, size_t t, const char *kind,
                     const char *error, const struct zerg_retry_out *out,
                     zerg_json *why, int64_t now)
{
    struct zerg_task_state *st = orch_ts(o, t);
    int worker = st->worker_id;
    struct zerg_task_move m = {.error = error, .reason = kind};
    if (orch_task_move(o, t, ZERG_TASK_EV_REQUEUE, &m) != 0) {
        zerg_json_free(why);
        return;
    }
    o->s->metrics.task_reassignments++;
    o->retry_at_mono_ns[t] = now + out->delay_ns;
    o->resume_next[t] = out->resume != 0;
    /* A worker that reported the crash itself (its git was killed) says
     * what happened; a dead worker has nothing to say. */
    if (why && error && *error)
        zerg_json_set_str(why, "error", error);
    zerg_log_event(
        o->o.log, worker, ZERG_LOG_WARN, "task_reassigned", orch_tid(o, t), why,
        "Task %s reassigned after %s of worker %d "
        "(retry_count stays %d, crash %d)%s%.300s",
        orch_tid(o, t), kind, worker, st->retry_count, st->crash_count,
        error && *error ? ": " : "", error ? error : "");
}

/* policy_said: retry.decide refused (else resilience is off). */
static void no_retry(struct zerg_orch *o, size_t t, const char *reason,
                     const char *error, zerg_json *why, int policy_said)
{
    int worker = orch_ts(o, t)->worker_id;
    fail_permanently(o, t, reason, error);
    if (policy_said)
        zerg_log_event(o->o.log, worker, ZERG_LOG_ERROR, "task_failed",
                       orch_tid(o, t), why,
                       "Task %s failed permanently (%s): %s", orch_tid(o, t),
                       reason, error);
    else
        zerg_log_event(o->o.log, worker, ZERG_LOG_ERROR, "task_failed",
                       orch_tid(o, t), why,
                       "Task %s failed (%s): %s; resilience is disabled, "
                       "not retried",
                       orch_tid(o, t), reason, error);
}

static int is_crash(const char *kind)
{
    return !strcmp(kind, "crash") || !strcmp(kind, "heartbeat_stale");
}

static void ceiling_log(struct zerg_orch *o, size_t t, const char *which,
                        double value)
{
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "ceiling", which);
    zerg_json_set_num(data, "value", value);
    zerg_json_set_num(data, "attempt", orch_ts(o, t)->attempt);
    zerg_log_event(o->o.log, orch_ts(o, t)->worker_id, ZERG_LOG_WARN,
                   "retry_ceiling", orch_tid(o, t), data,
                   !strcmp(which, "attempts")
                       ? "Task %s: retry refused, %.0f attempts is the most "
                         "a task gets in a run"
                       : "Task %s: retry delayed to the minimum %.1fs",
                   orch_tid(o, t), value);
}

/* The limits no policy crosses.  Returns 1 when the retry is refused
 * (out->reason says why). */
static int apply_ceilings(struct zerg_orch *o, size_t t, const char *kind,
                          struct zerg_retry_out *out, zerg_json **why)
{
    int max = attempts_ceiling(o->cfg);
    if (orch_ts(o, t)->attempt >= max) {
        ceiling_log(o, t, "attempts", max);
        snprintf(out->reason, sizeof out->reason, "attempt_ceiling");
        if (!*why)
            *why = zerg_json_obj();
        zerg_json_set_num(*why, "attempt_ceiling", max);
        return 1;
    }
    if (!is_crash(kind) && out->delay_ns < ORCH_RETRY_MIN_DELAY_NS) {
        ceiling_log(o, t, "min_delay", ORCH_SEC(ORCH_RETRY_MIN_DELAY_NS));
        out->delay_ns = ORCH_RETRY_MIN_DELAY_NS;
    }
    return 0;
}

void orch_task_failure_cls(struct zerg_orch *o, size_t t, const char *kind,
                           const char *cls, int exit_code, int sig,
                           const char *error, int64_t now)
{
    struct zerg_task_state *st = orch_ts(o, t);
    struct zerg_retry_in in = {
        .task_id = orch_tid(o, t),
        .retry_count = st->retry_count,
        .crash_count = st->crash_count,
        .attempt = st->attempt,
        .failure = kind,
        .failure_class = cls,
        .exit_code = exit_code,
        .signal = sig,
    };
    struct zerg_retry_out out;
    zerg_json *why = NULL;

    if (!o->cfg->resilience_enabled) {
        no_retry(o, t, kind, error, NULL, 0);
        return;
    }
    zerg_policy_retry(o->o.policy, &in, &out, &why);
    /* retry_count counts retries granted; crash_count counts crashes. */
    if (!out.charge)
        st->crash_count++;
    else if (out.retry)
        st->retry_count++;
    if (!out.retry) {
        /* A charged failure keeps its kind ("timeout", "verification",
         * "exit") as the reason; an uncharged one says why the policy
         * stopped it (e.g. "crash_loop"). */
        const char *reason = !out.charge && out.reason[0] ? out.reason : kind;
        no_retry(o, t, reason, error, why, 1);
        return;
    }
    if (apply_ceilings(o, t, kind, &out, &why)) {
        no_retry(o, t, out.reason, error, why, 1);
        return;
    }
    if (out.charge)
        retry_charged(o, t, kind, error, &out, why, now);
    else
        reassign(o, t, kind, error, &out, why, now);
}
