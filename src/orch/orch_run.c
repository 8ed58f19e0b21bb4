/* orch_run.c - how a rush ends: the run life cycle as a table.
 *
 * Like the slot's (orch_slot.c), every (state, event) pair has an entry:
 * an action, `nop` where the event means nothing in that state (a second
 * graceful stop while stopping), `bad` where it cannot happen unless zerg
 * itself is wrong (logged as run_event_refused, nothing changes).
 *
 *   ACTIVE     claiming and running tasks
 *   CLOSED     no new claim (spend cap with cost_cap_action finish, a
 *              failed gate under dag, --halt soon): the running tasks
 *              finish, then the run stops
 *   FINISHING  every task ended: the idle workers are asked to leave,
 *              SIGKILL to what is left after 3 s
 *   STOPPING   a stop: SIGTERM, workers.stop_grace_seconds, then KILLING
 *   KILLING    forced, or the grace is over: SIGKILL each second
 *   SAVING     no worker alive: the last checkpoint, tried each second
 *              for FINAL_SAVE_NS
 *   DONE       the final state is written (or could not be)
 *
 * What the run was asked and what went wrong are facts beside the state,
 * each written in one place: stop_asked (1 graceful, 2 forced) by the
 * stop actions, failed_run and run_error by orch_run_fail. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch_internal.h"
#include "zerg/err.h"
#include "zerg/offload.h"
#include "zerg/text.h"

typedef void run_fn(struct zerg_orch *o, int arg, int64_t now);

struct run_action {
    const char *name;
    run_fn *fn;
    const char *to; /* where it leads, for the docs */
};

static const char *const state_names[RUN_NSTATES] = {
    "ACTIVE", "CLOSED", "FINISHING", "STOPPING", "KILLING", "SAVING", "DONE",
};
static const char *const event_names[RUN_NEVENTS] = {
    "CLOSE", "IDLE",     "ALL_ENDED", "REOPEN", "STOP",
    "FORCE", "DEADLINE", "GONE",      "SAVED",
};

const char *orch_run_state_name(enum run_state s)
{
    return (unsigned)s < RUN_NSTATES ? state_names[s] : "?";
}

void orch_run_fail(struct zerg_orch *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->run_error, sizeof o->run_error, fmt, ap);
    va_end(ap);
    o->failed_run = 1;
}

void orch_run_status(struct zerg_orch *o, const char *status)
{
    char *copy = strdup(status);
    if (!copy)
        return;
    free(o->s->status);
    o->s->status = copy;
    orch_mark_dirty(o);
}

static void enter(struct zerg_orch *o, enum run_state to)
{
    o->run_state = to;
}

/* ---- the actions -------------------------------------------------------- */

static void nop(struct zerg_orch *o, int arg, int64_t now)
{
    (void)o, (void)arg, (void)now;
}

static void bad(struct zerg_orch *o, int arg, int64_t now)
{
    (void)o, (void)arg, (void)now;
}

static void close_pool(struct zerg_orch *o, int arg, int64_t now)
{
    (void)arg, (void)now;
    enter(o, RUN_CLOSED);
}

/* Graceful: each worker is asked to end (SIGTERM through the launcher),
 * and ends its running task the same way: SIGTERM to the task's process
 * group, SIGKILL after workers.stop_grace_seconds.  The deadline holds
 * that grace and ORCH_STOP_MARGIN_NS more (the worker's own SIGKILL, its
 * sweep and exit come first): what is still alive then is killed
 * (DEADLINE), so a worker that does not answer cannot keep the rush. */
static void stop(struct zerg_orch *o, int arg, int64_t now)
{
    (void)arg;
    int64_t grace = o->cfg->stop_grace_ns;
    o->stop_asked = 1;
    o->stop_deadline_mono_ns = now + grace + ORCH_STOP_MARGIN_NS;
    enter(o, RUN_STOPPING);
    orch_gate_abort(o);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_bool(data, "forced", 0);
    zerg_json_set_num(data, "grace", ORCH_SEC(grace));
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "rush_stop", NULL,
                   data,
                   "Stop requested: the running tasks get SIGTERM and %gs to "
                   "end before SIGKILL (Ctrl-C again or `zerg stop --force` "
                   "kills them now)",
                   ORCH_SEC(grace));
    orch_stop_workers(o, SIGTERM, now);
    orch_run_status(o, "stopped");
}

/* Forced: SIGKILL now, and again each second until the workers are
 * reaped (DEADLINE in KILLING). */
static void force(struct zerg_orch *o, int arg, int64_t now)
{
    (void)arg;
    o->stop_asked = 2;
    o->stop_deadline_mono_ns = now + ZERG_NS_PER_S;
    enter(o, RUN_KILLING);
    orch_gate_abort(o);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_bool(data, "forced", 1);
    zerg_json_set_num(data, "grace", 0);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "rush_stop", NULL,
                   data,
                   "Stop requested (forced): killing the workers and their "
                   "tasks now");
    orch_stop_workers(o, SIGKILL, now);
    orch_run_status(o, "stopped");
}

/* CLOSED and nothing runs any more: the reason that closed it says why
 * the run ends (the spend cap's sentence is written here, with what was
 * spent in the end), then the ordinary graceful stop. */
static void stop_idle(struct zerg_orch *o, int arg, int64_t now)
{
    if (o->budget_exhausted && !o->failed_run)
        orch_run_fail(o,
                      "rush.max_cost_usd ($%.2f) reached: $%.2f spent; raise "
                      "it and continue with `zerg rush --resume`",
                      o->cfg->rush_max_cost_usd, zerg_state_cost_usd(o->s));
    stop(o, arg, now);
}

static void finishing(struct zerg_orch *o, int arg, int64_t now)
{
    (void)arg;
    enter(o, RUN_FINISHING);
    o->stop_deadline_mono_ns = now + 3 * ZERG_NS_PER_S;
    orch_stop_workers(o, 0, now);
    orch_checkpoint(o, now, ORCH_SAVE_NOW);
}

/* `zerg retry` requeued `arg` tasks while the idle workers were leaving:
 * the rush goes on, with its pool (not after a failure: that run ends). */
static void reopen(struct zerg_orch *o, int arg, int64_t now)
{
    if (arg <= 0 || o->failed_run)
        return;
    enter(o, RUN_ACTIVE);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "rush_continues",
                   NULL, NULL, "The rush goes on: %d task%s to run again", arg,
                   arg == 1 ? "" : "s");
    orch_revive_workers(o, now);
}

static void kill_all(struct zerg_orch *o, int arg, int64_t now)
{
    (void)arg;
    orch_stop_workers(o, SIGKILL, now);
    o->stop_deadline_mono_ns = now + ZERG_NS_PER_S;
}

/* A graceful stop's grace is over: what is still alive is killed. */
static void grace_over(struct zerg_orch *o, int arg, int64_t now)
{
    int alive = 0;
    for (int i = 0; i < o->nslots; i++)
        alive += slot_alive(&o->slots[i]);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "grace", ORCH_SEC(o->cfg->stop_grace_ns));
    zerg_json_set_num(data, "workers", alive);
    zerg_log_event(
        o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "stop_grace_over", NULL, data,
        "%d worker%s still alive %gs after the stop grace of %gs: killing "
        "them and their tasks (SIGKILL)",
        alive, alive == 1 ? "" : "s", ORCH_SEC(ORCH_STOP_MARGIN_NS),
        ORCH_SEC(o->cfg->stop_grace_ns));
    enter(o, RUN_KILLING);
    kill_all(o, arg, now);
}

static void saving(struct zerg_orch *o, int arg, int64_t now)
{
    (void)arg, (void)now;
    enter(o, RUN_SAVING);
}

static void done(struct zerg_orch *o, int arg, int64_t now)
{
    (void)arg, (void)now;
    enter(o, RUN_DONE);
}

/* ---- the table ---------------------------------------------------------- */

/* clang-format off */
static const struct run_action
    NOP    = {"nop", nop, NULL},
    BAD    = {"bad", bad, NULL},
    CLOSE  = {"close", close_pool, "CLOSED"},
    SIDLE  = {"stop", stop_idle, "STOPPING"},
    FINISH = {"finish", finishing, "FINISHING"},
    REOPEN = {"reopen", reopen, "ACTIVE"},
    STOP   = {"stop", stop, "STOPPING"},
    FORCE  = {"force", force, "KILLING"},
    KILL   = {"kill", kill_all, NULL},
    GRACE  = {"grace_over", grace_over, "KILLING"},
    SAVE   = {"save", saving, "SAVING"},
    DONE   = {"done", done, "DONE"};

/* Every (state, event) pair; docs/wiki/Resilience-Architecture.md shows
 * it rendered with the names and targets above. */
static const struct run_action *const run_table[RUN_NSTATES][RUN_NEVENTS] = {
/*                 CLOSE   IDLE    ALL_ENDED REOPEN   STOP   FORCE   DEADLINE GONE   SAVED */
[RUN_ACTIVE]    = {&CLOSE, &NOP,   &FINISH,  &NOP,    &STOP, &FORCE, &NOP,    &BAD,  &BAD},
[RUN_CLOSED]    = {&NOP,   &SIDLE, &FINISH,  &NOP,    &STOP, &FORCE, &NOP,    &BAD,  &BAD},
[RUN_FINISHING] = {&NOP,   &NOP,   &NOP,     &REOPEN, &STOP, &FORCE, &KILL,   &SAVE, &BAD},
[RUN_STOPPING]  = {&NOP,   &NOP,   &NOP,     &NOP,    &NOP,  &FORCE, &GRACE,  &SAVE, &BAD},
[RUN_KILLING]   = {&NOP,   &NOP,   &NOP,     &NOP,    &NOP,  &NOP,   &KILL,   &SAVE, &BAD},
[RUN_SAVING]    = {&NOP,   &NOP,   &NOP,     &NOP,    &NOP,  &NOP,   &NOP,    &NOP,  &DONE},
[RUN_DONE]      = {&NOP,   &NOP,   &NOP,     &NOP,    &NOP,  &NOP,   &NOP,    &NOP,  &NOP},
};
/* clang-format on */

void orch_run_event(struct zerg_orch *o, enum run_event ev, int arg,
                    int64_t now)
{
    const struct run_action *act = run_table[o->run_state][ev];
    if (act->fn == bad) {
        zerg_json *data = zerg_json_obj();
        zerg_json_set_str(data, "event", event_names[ev]);
        zerg_json_set_str(data, "state", state_names[o->run_state]);
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_ERROR,
                       "run_event_refused", NULL, data,
                       "Run: event %s refused in state %s", event_names[ev],
                       state_names[o->run_state]);
    }
    act->fn(o, arg, now);
}

static void run_cell(const void *ctx, int s, int e, char *out, size_t n)
{
    (void)ctx;
    const struct run_action *a = s >= 0 && e >= 0 ? run_table[s][e] : NULL;
    if (s < 0)
        snprintf(out, n, "%s", event_names[e]);
    else if (e < 0)
        snprintf(out, n, "%s", state_names[s]);
    else
        snprintf(out, n, "%s%s%s", a->name, a->to ? " → " : "",
                 a->to ? a->to : "");
}

int orch_run_table_markdown(char *buf, size_t size)
{
    return zerg_text_table(buf, size, "state \\ event", RUN_NSTATES,
                           RUN_NEVENTS, run_cell, NULL);
}

/* ---- the ending ticks --------------------------------------------------- */

static int all_complete(const struct zerg_orch *o)
{
    size_t c[ZERG_TASK_NSTATUS];
    zerg_task_count(o->s->tasks, NULL, o->g->ntasks, c);
    return c[ZERG_TASK_COMPLETE] == o->g->ntasks;
}

static void log_end(struct zerg_orch *o, int ok, int64_t now)
{
    size_t c[ZERG_TASK_NSTATUS];
    char summary[1024];
    zerg_task_count(o->s->tasks, NULL, o->g->ntasks, c);
    zerg_orch_summary(o, summary, sizeof summary);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "complete", (double)c[ZERG_TASK_COMPLETE]);
    zerg_json_set_num(data, "failed", (double)c[ZERG_TASK_FAILED]);
    zerg_json_set_num(data, "blocked", (double)c[ZERG_TASK_BLOCKED]);
    zerg_json_set_num(data, "tasks", (double)o->g->ntasks);
    zerg_json_set_num(data, "elapsed", ORCH_SEC(now - o->started_mono_ns));
    zerg_json_set_num(data, "worker_crashes",
                      (double)o->s->metrics.worker_crashes);
    zerg_json_set_num(data, "task_reassignments",
                      (double)o->s->metrics.task_reassignments);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ok ? ZERG_LOG_INFO : ZERG_LOG_ERROR,
                   ok ? "rush_complete" : "rush_failed", NULL, data,
                   "Rush %s in %.1fs: %s",
                   o->stop_asked ? "stopped"
                   : ok          ? "complete"
                                 : "failed",
                   ORCH_SEC(now - o->started_mono_ns), summary);
}

/* SAVING: the run's last checkpoint.  When it fails (a full disk, say)
 * the rush does not end on a state file that says less than it did: it
 * tries again every second for FINAL_SAVE_NS, then ends failed, the
 * results kept on disk for --resume. */
#define FINAL_SAVE_NS (60 * ZERG_NS_PER_S)
static int64_t tick_saving(struct zerg_orch *o, int64_t now, int64_t wake)
{
    int ok = all_complete(o) && !o->failed_run;
    orch_run_status(o, o->stop_asked && !o->failed_run ? "stopped"
                       : ok                            ? "complete"
                                                       : "failed");
    if (o->run_error[0]) {
        free(o->s->error);
        o->s->error = strdup(o->run_error);
    }
    if (orch_checkpoint(o, now, ORCH_SAVE_WAIT) != 0) {
        if (!o->final_save_since_mono_ns)
            o->final_save_since_mono_ns = now;
        if (now - o->final_save_since_mono_ns < FINAL_SAVE_NS)
            return now + ZERG_NS_PER_S < wake ? now + ZERG_NS_PER_S : wake;
        orch_run_fail(o,
                      "the final state could not be written for %.0fs; the "
                      "results are kept: run zerg rush --resume",
                      ORCH_SEC(FINAL_SAVE_NS));
        ok = 0;
    }
    zerg_offload_drain(o->offload); /* the run's results are gone now */
    orch_run_event(o, RUN_EV_SAVED, 0, now);
    log_end(o, ok, now);
    return wake;
}

/* FINISHING, STOPPING, KILLING: wait for every worker, the deadline a
 * timer of the loop (nothing here waits), then SAVING. */
int64_t orch_run_tick_ending(struct zerg_orch *o, int64_t now, int64_t wake)
{
    if (o->run_state == RUN_DONE)
        return wake;
    if (o->run_state != RUN_SAVING && !orch_any_alive(o))
        orch_run_event(o, RUN_EV_GONE, 0, now);
    if (o->run_state == RUN_SAVING)
        return tick_saving(o, now, wake);
    if (now >= o->stop_deadline_mono_ns)
        orch_run_event(o, RUN_EV_DEADLINE, 0, now);
    orch_checkpoint(o, now, ORCH_SAVE_DUE);
    return o->stop_deadline_mono_ns < wake ? o->stop_deadline_mono_ns : wake;
}

int orch_run_ending(const struct zerg_orch *o)
{
    return o->run_state >= RUN_FINISHING;
}

/* ---- the public face ---------------------------------------------------- */

void zerg_orch_request_stop(struct zerg_orch *o, int force_it, int64_t now)
{
    orch_run_event(o, force_it ? RUN_EV_FORCE : RUN_EV_STOP, 0, now);
}

int zerg_orch_done(const struct zerg_orch *o)
{
    return o->run_state == RUN_DONE;
}

int zerg_orch_exit_code(const struct zerg_orch *o)
{
    if (o->stop_asked && o->stop_signal)
        return 128 + o->stop_signal;
    return all_complete(o) && !o->failed_run && !o->stop_asked ? ZERG_EXIT_OK
                                                               : ZERG_EXIT_FAIL;
}
