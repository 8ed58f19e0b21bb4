/* orch_halt.c - ending a rush early: `zerg rush --halt` and the run's wall
 * budget (rush.timeout_seconds / --timeout).
 *
 * The decision is a pure function of numbers (failed tasks, graph size,
 * elapsed time), so unit tests call it without an orchestrator; the tick
 * applies it through the ordinary stop path (zerg_orch_request_stop), so a
 * halted or timed-out rush leaves the same resumable state as `zerg stop`.
 *
 * Only failures of this rush count: tasks that were already failed when it
 * began (a --resume without `zerg retry`) are the baseline, and a task that
 * `zerg retry` puts back lowers the count again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch_internal.h"

/* ---- the spec --------------------------------------------------------- */

static const char *const when_names[] = {"never", "soon", "now"};

/* "N" or "N%" after "fail=": 0 or -EINVAL. */
static int parse_count(const char *s, struct zerg_halt *h)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -EINVAL;
    long n = strtol(s, &end, 10);
    h->percent = *end == '%';
    if (h->percent)
        end++;
    if (*end || n < 1 || n > (h->percent ? 100 : 1000000))
        return -EINVAL;
    h->fail = (int)n;
    return 0;
}

int zerg_halt_parse(const char *s, struct zerg_halt *out)
{
    struct zerg_halt h = {0};
    if (!s)
        return -EINVAL;
    if (!strcmp(s, "never")) {
        *out = h;
        return 0;
    }
    for (int w = ZERG_HALT_SOON; w <= ZERG_HALT_NOW; w++) {
        size_t n = strlen(when_names[w]);
        if (strncmp(s, when_names[w], n) || strncmp(s + n, ",fail=", 6))
            continue;
        h.when = (enum zerg_halt_when)w;
        if (parse_count(s + n + 6, &h) < 0)
            return -EINVAL;
        *out = h;
        return 0;
    }
    return -EINVAL;
}

int zerg_halt_format(const struct zerg_halt *h, char *buf, size_t size)
{
    if (h->when == ZERG_HALT_NEVER || (unsigned)h->when > ZERG_HALT_NOW)
        return snprintf(buf, size, "never");
    return snprintf(buf, size, "%s,fail=%d%s", when_names[h->when], h->fail,
                    h->percent ? "%" : "");
}

/* ---- the decision ----------------------------------------------------- */

size_t orch_halt_threshold(const struct zerg_halt *h, size_t ntasks)
{
    if (h->when == ZERG_HALT_NEVER || h->fail < 1)
        return 0;
    if (!h->percent)
        return (size_t)h->fail;
    size_t n = ((size_t)h->fail * ntasks + 99) / 100; /* rounded up */
    return n ? n : 1;
}

enum orch_halt_verdict orch_halt_decide(const struct zerg_halt *h,
                                        size_t failed, size_t ntasks,
                                        int64_t elapsed_ns, int64_t timeout_ns)
{
    if (timeout_ns > 0 && elapsed_ns >= timeout_ns)
        return ORCH_HALT_TIMEOUT;
    size_t threshold = orch_halt_threshold(h, ntasks);
    if (!threshold || failed < threshold)
        return ORCH_HALT_GO;
    return h->when == ZERG_HALT_NOW ? ORCH_HALT_NOW : ORCH_HALT_SOON;
}

/* ---- applying it ------------------------------------------------------ */

/* O(tasks), and only with --halt set: the tick stays O(1) without it. */
static size_t failed_tasks(const struct zerg_orch *o)
{
    size_t n = 0;
    for (size_t t = 0; t < o->g->ntasks; t++)
        n += o->s->tasks[t].status == ZERG_TASK_FAILED;
    return n;
}

static size_t failed_in_run(struct zerg_orch *o)
{
    if (o->o.halt.when == ZERG_HALT_NEVER)
        return 0;
    size_t n = failed_tasks(o);
    if (!o->halt_armed) {
        o->halt_armed = 1;
        o->halt_failed_base = n;
    }
    return n > o->halt_failed_base ? n - o->halt_failed_base : 0;
}

static void log_verdict(struct zerg_orch *o, enum orch_halt_verdict v,
                        int64_t elapsed_ns)
{
    char spec[48];
    zerg_json *data = zerg_json_obj();
    if (v == ORCH_HALT_TIMEOUT) {
        zerg_json_set_num(data, "timeout", ORCH_SEC(o->o.timeout_ns));
        zerg_json_set_num(data, "elapsed", ORCH_SEC(elapsed_ns));
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "rush_timeout",
                       NULL, data,
                       "Rush timed out after %gs: stopping the running "
                       "tasks; resume with `zerg rush --resume`",
                       ORCH_SEC(o->o.timeout_ns));
        return;
    }
    size_t threshold = orch_halt_threshold(&o->o.halt, o->g->ntasks);
    zerg_halt_format(&o->o.halt, spec, sizeof spec);
    zerg_json_set_str(data, "policy", spec);
    zerg_json_set_num(data, "failed", (double)o->halt_failed);
    zerg_json_set_num(data, "threshold", (double)threshold);
    zerg_log_event(
        o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "rush_halt", NULL, data,
        "Halting (--halt %s): %zu task%s failed, threshold "
        "%zu; %s",
        spec, o->halt_failed, o->halt_failed == 1 ? "" : "s", threshold,
        v == ORCH_HALT_NOW ? "stopping the running tasks"
                           : "no new task starts, running ones "
                             "finish");
}

int orch_halt_tick(struct zerg_orch *o, int64_t now, int64_t *wake)
{
    int64_t elapsed = now - o->started_mono_ns;
    if (o->o.halt.when == ZERG_HALT_NEVER && o->o.timeout_ns <= 0)
        return 0;
    enum orch_halt_verdict v = orch_halt_decide(
        &o->o.halt, failed_in_run(o), o->g->ntasks, elapsed, o->o.timeout_ns);
    if (v > (enum orch_halt_verdict)o->halt_verdict) {
        if (v != ORCH_HALT_TIMEOUT)
            o->halt_failed = failed_in_run(o);
        o->halt_verdict = v;
        log_verdict(o, v, elapsed);
        /* Through the graceful stop: SIGTERM, the stop grace, SIGKILL;
         * SOON closes the run, which stops once nothing runs. */
        orch_run_event(o, v == ORCH_HALT_SOON ? RUN_EV_CLOSE : RUN_EV_STOP, 0,
                       now);
    }
    if (o->halt_verdict == ORCH_HALT_GO) {
        if (o->o.timeout_ns > 0 && o->started_mono_ns + o->o.timeout_ns < *wake)
            *wake = o->started_mono_ns + o->o.timeout_ns;
        return 0;
    }
    return 1;
}

int orch_halt_summary(const struct zerg_orch *o, char *buf, size_t size)
{
    char spec[48];
    switch ((enum orch_halt_verdict)o->halt_verdict) {
    case ORCH_HALT_GO:
        return 0;
    case ORCH_HALT_TIMEOUT:
        snprintf(buf, size,
                 " Timed out after %gs; resume with `zerg rush --resume`.",
                 ORCH_SEC(o->o.timeout_ns));
        return 1;
    case ORCH_HALT_SOON:
    case ORCH_HALT_NOW:
        break;
    }
    zerg_halt_format(&o->o.halt, spec, sizeof spec);
    snprintf(buf, size,
             " Halted by --halt %s: %zu task%s failed (threshold %zu); the "
             "running tasks were %s. Next: `zerg logs --task ID` shows why a "
             "task failed; after a fix `zerg retry --all-failed && zerg rush "
             "--resume`.",
             spec, o->halt_failed, o->halt_failed == 1 ? "" : "s",
             orch_halt_threshold(&o->o.halt, o->g->ntasks),
             o->halt_verdict == ORCH_HALT_NOW ? "stopped"
                                              : "let finish, no new one "
                                                "started");
    return 1;
}
