/* report_model.c - turns .zerg/monitor.jsonl into what `zerg report`
 * draws: one bar per attempt (task_claimed or task_started to the event
 * that ended it), markers for crashes, stale kills, respawns,
 * reassignments and merges, and the level boundaries.
 *
 * Events are read in file order, which is the order they happened: the
 * log is appended by one orchestrator per feature.  An event this file
 * does not know is counted and otherwise ignored, so a newer zerg's log
 * still gives a page. */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"

/* One event, with the fields every handler reads. */
struct ev {
    const zerg_json *rec, *data;
    const char *name, *task, *msg;
    int lane; /* -1: the orchestrator, or a worker past RP_MAX_LANES */
    int64_t t_ns;
};

typedef void (*ev_fn)(struct rp_model *m, const struct ev *e);

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64;
    void *nv = realloc(*v, c * size);
    if (!nv)
        return -1;
    *v = nv;
    *cap = c;
    return 0;
}

int rp_model_lanes(struct rp_model *m, int n)
{
    if (n <= m->nlanes)
        return 0;
    if (n > RP_MAX_LANES)
        return -1;
    int *o = realloc(m->open, (size_t)n * sizeof *o);
    if (!o)
        return -1;
    for (int i = m->nlanes; i < n; i++)
        o[i] = -1;
    m->open = o;
    m->nlanes = n;
    return 0;
}

static double data_num(const struct ev *e, const char *key, double dflt)
{
    return zerg_json_as_num(zerg_json_get(e->data, key), dflt);
}

static const char *data_str(const struct ev *e, const char *key)
{
    return zerg_json_as_str(zerg_json_get(e->data, key));
}

/* ---- attempts ------------------------------------------------------------ */

static void close_attempt(struct rp_model *m, int idx, int64_t t_ns,
                          enum rp_outcome o, const char *reason)
{
    struct rp_attempt *a = &m->att[idx];
    a->end_ns = t_ns;
    a->outcome = a->timed_out && o != RP_COMPLETE ? RP_TIMEOUT : o;
    if (a->review && o == RP_COMPLETE)
        a->outcome = RP_REVIEW;
    if (reason) {
        free(a->reason);
        a->reason = strdup(reason);
    }
    m->open[a->lane] = -1;
}

static int open_attempt(struct rp_model *m, const struct ev *e)
{
    if (e->lane < 0 || !e->task)
        return -1;
    if (m->open[e->lane] >= 0)
        close_attempt(m, m->open[e->lane], e->t_ns, RP_INTERRUPTED,
                      "its worker took another task");
    if (grow((void **)&m->att, &m->capatt, m->natt, sizeof *m->att))
        return -1;
    struct rp_attempt *a = &m->att[m->natt];
    *a = (struct rp_attempt){.lane = e->lane,
                             .attempt = (int)data_num(e, "attempt", 0),
                             .start_ns = e->t_ns,
                             .end_ns = e->t_ns,
                             .outcome = RP_INTERRUPTED};
    if (!(a->task = strdup(e->task)))
        return -1;
    m->open[e->lane] = (int)m->natt;
    return (int)m->natt++;
}

/* The running attempt of the event's task: on its own lane first, then on
 * any lane (an orchestrator event about a task has no worker). */
static int find_open(const struct rp_model *m, const struct ev *e)
{
    if (!e->task)
        return e->lane >= 0 ? m->open[e->lane] : -1;
    if (e->lane >= 0 && m->open[e->lane] >= 0 &&
        strcmp(m->att[m->open[e->lane]].task, e->task) == 0)
        return m->open[e->lane];
    for (int l = 0; l < m->nlanes; l++)
        if (m->open[l] >= 0 && strcmp(m->att[m->open[l]].task, e->task) == 0)
            return m->open[l];
    return -1;
}

/* The last attempt of the event's task, open or not (-1 if none). */
static int find_last(const struct rp_model *m, const char *task)
{
    for (size_t i = m->natt; task && i-- > 0;)
        if (strcmp(m->att[i].task, task) == 0)
            return (int)i;
    return -1;
}

static void add_mark(struct rp_model *m, const struct ev *e,
                     enum rp_mark_kind k)
{
    if (grow((void **)&m->mk, &m->capmk, m->nmk, sizeof *m->mk))
        return;
    struct rp_mark *mk = &m->mk[m->nmk];
    *mk = (struct rp_mark){.kind = k, .lane = e->lane, .t_ns = e->t_ns};
    mk->task = dup_or_null(e->task);
    mk->text = dup_or_null(e->msg);
    m->nmk++;
}

/* ---- handlers ------------------------------------------------------------ */

static void on_claimed(struct rp_model *m, const struct ev *e)
{
    open_attempt(m, e);
}

static void on_started(struct rp_model *m, const struct ev *e)
{
    int i = find_open(m, e);
    if (i < 0 || m->att[i].lane != e->lane)
        i = open_attempt(m, e);
    if (i >= 0 && !m->att[i].attempt)
        m->att[i].attempt = (int)data_num(e, "attempt", 0);
}

static void on_complete(struct rp_model *m, const struct ev *e)
{
    int i = find_open(m, e);
    if (i >= 0)
        close_attempt(m, i, e->t_ns, RP_COMPLETE, NULL);
}

/* rush.review: the attempt ends waiting; approve or redo says how it
 * ended (its bar does not grow while the reviewer reads). */
static void on_awaiting(struct rp_model *m, const struct ev *e)
{
    int i = find_open(m, e);
    if (i >= 0)
        close_attempt(m, i, e->t_ns, RP_AWAITING, NULL);
}

static void on_reviewed(struct rp_model *m, const struct ev *e)
{
    int i = find_last(m, e->task);
    if (i < 0 || m->att[i].outcome != RP_AWAITING)
        return;
    int approved = !strcmp(e->name, "task_approved");
    m->att[i].outcome = !approved          ? RP_REDONE
                        : m->att[i].review ? RP_REVIEW
                                           : RP_COMPLETE;
    if (!approved) {
        free(m->att[i].reason);
        m->att[i].reason = dup_or_null(e->msg);
    }
}

static void on_failed(struct rp_model *m, const struct ev *e)
{
    int i = find_open(m, e);
    const zerg_json *retry = zerg_json_get(e->data, "retry");
    int again = zerg_json_is(retry, ZERG_JSON_BOOL) && retry->u.boolean;
    if (i >= 0)
        close_attempt(m, i, e->t_ns, again ? RP_RETRIED : RP_FAILED, e->msg);
}

static void on_timeout(struct rp_model *m, const struct ev *e)
{
    int i = find_open(m, e);
    if (i >= 0)
        m->att[i].timed_out = 1;
    add_mark(m, e, RP_M_STALE);
}

static void on_stale(struct rp_model *m, const struct ev *e)
{
    add_mark(m, e, RP_M_STALE);
}

static void on_crash(struct rp_model *m, const struct ev *e)
{
    struct ev w = *e;
    w.task = NULL; /* the crash ends whatever ran on the lane */
    int i = find_open(m, &w);
    if (i >= 0)
        close_attempt(m, i, e->t_ns, RP_CRASHED, e->msg);
    add_mark(m, e, RP_M_CRASH);
}

static void on_reassigned(struct rp_model *m, const struct ev *e)
{
    int i = find_open(m, e);
    if (i >= 0)
        close_attempt(m, i, e->t_ns, RP_CRASHED, e->msg);
    else if ((i = find_last(m, e->task)) >= 0 && !m->att[i].reason)
        m->att[i].reason = dup_or_null(e->msg);
    add_mark(m, e, RP_M_REASSIGN);
}

static void on_respawn(struct rp_model *m, const struct ev *e)
{
    add_mark(m, e, RP_M_RESPAWN);
}

static void on_worker_exit(struct rp_model *m, const struct ev *e)
{
    struct ev w = *e;
    w.task = NULL;
    int i = find_open(m, &w);
    if (i >= 0)
        close_attempt(m, i, e->t_ns, RP_INTERRUPTED, e->msg);
}

/* A commit that changes zerg's own configuration: at WARN it is merged
 * and flagged for review (at ERROR the attempt fails, task_failed says). */
static void on_config_change(struct rp_model *m, const struct ev *e)
{
    const char *lvl = zerg_json_as_str(zerg_json_get(e->rec, "level"));
    int i = find_open(m, e);
    if (i < 0)
        i = find_last(m, e->task);
    if (i < 0 || !lvl || strcmp(lvl, "WARN"))
        return;
    m->att[i].review = 1;
    if (m->att[i].outcome == RP_COMPLETE && m->open[m->att[i].lane] != i)
        m->att[i].outcome = RP_REVIEW; /* the merge came after complete */
    if (!m->att[i].reason)
        m->att[i].reason = dup_or_null(e->msg);
}

static void add_level(struct rp_model *m, const struct ev *e, int start)
{
    if (grow((void **)&m->lv, &m->caplv, m->nlv, sizeof *m->lv))
        return;
    m->lv[m->nlv++] = (struct rp_level_line){
        .level = (int)data_num(e, "level", 0), .start = start, .t_ns = e->t_ns};
}

static void on_level_start(struct rp_model *m, const struct ev *e)
{
    add_level(m, e, 1);
}

static void on_level_complete(struct rp_model *m, const struct ev *e)
{
    add_level(m, e, 0);
}

static void on_rush_end(struct rp_model *m, const struct ev *e)
{
    m->elapsed_s = data_num(e, "elapsed", -1);
    if (m->nss && !m->ss[m->nss - 1].ended) {
        m->ss[m->nss - 1].end_ns = e->t_ns;
        m->ss[m->nss - 1].ended = 1;
    }
}

static void model_reset(struct rp_model *m);

/* What the last rush left open ended with it, at its last event: a rush
 * killed without a word (kill -9) is not drawn running until the resume. */
static void end_session(struct rp_model *m, int64_t last_ns)
{
    for (int l = 0; l < m->nlanes; l++)
        if (m->open[l] >= 0)
            close_attempt(m, m->open[l], last_ns, RP_INTERRUPTED,
                          "its rush ended");
    if (m->nss && !m->ss[m->nss - 1].ended)
        m->ss[m->nss - 1].end_ns = last_ns;
}

static void on_rush_start(struct rp_model *m, const struct ev *e)
{
    const zerg_json *resume = zerg_json_get(e->data, "resume");
    if (!(zerg_json_is(resume, ZERG_JSON_BOOL) && resume->u.boolean)) {
        model_reset(m);
        m->t0_ns = m->t1_ns = e->t_ns;
        m->events = 1;
    } else {
        end_session(m, m->last_ns);
    }
    if (!grow((void **)&m->ss, &m->capss, m->nss, sizeof *m->ss))
        m->ss[m->nss++] =
            (struct rp_session){.start_ns = e->t_ns, .end_ns = e->t_ns};
    const char *run = data_str(e, "run_id");
    if (run)
        snprintf(m->run_id, sizeof m->run_id, "%s", run);
}

/* What each event does to the picture; an event not named here only
 * counts (m->other). */
static const struct {
    const char *name;
    ev_fn fn;
} handlers[] = {
    {"task_claimed", on_claimed},
    {"task_started", on_started},
    {"task_complete", on_complete},
    {"task_failed", on_failed},
    {"task_timeout", on_timeout},
    {"task_reassigned", on_reassigned},
    {"heartbeat_stale", on_stale},
    {"worker_crash", on_crash},
    {"worker_respawn", on_respawn},
    {"worker_exit", on_worker_exit},
    {"level_start", on_level_start},
    {"level_complete", on_level_complete},
    {"rush_start", on_rush_start},
    {"rush_complete", on_rush_end},
    {"rush_failed", on_rush_end},
    {"config_change", on_config_change},
    {"task_awaiting_review", on_awaiting},
    {"task_approved", on_reviewed},
    {"task_redo", on_reviewed},
};

static ev_fn handler_of(const char *name)
{
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
        if (strcmp(handlers[i].name, name) == 0)
            return handlers[i].fn;
    return NULL;
}

/* ---- reading ------------------------------------------------------------- */

/* Fills e from rec; 0, or -1 when the line is not an event (no ts or
 * event name), 1 when it belongs to another feature. */
static int ev_read(const struct rp_model *m, const zerg_json *rec, struct ev *e)
{
    *e = (struct ev){.rec = rec, .lane = -1};
    const char *ts = zerg_json_as_str(zerg_json_get(rec, "ts"));
    e->name = zerg_json_as_str(zerg_json_get(rec, "event"));
    if (!ts || !e->name || zerg_clock_parse_iso8601(ts, &e->t_ns))
        return -1;
    const char *feat = zerg_json_as_str(zerg_json_get(rec, "feature"));
    if (m->feature && feat && strcmp(feat, m->feature) != 0)
        return 1;
    e->task = zerg_json_as_str(zerg_json_get(rec, "task"));
    e->msg = zerg_json_as_str(zerg_json_get(rec, "msg"));
    e->data = zerg_json_get(rec, "data");
    const zerg_json *w = zerg_json_get(rec, "worker");
    double wn = zerg_json_as_num(w, -1);
    if (zerg_json_is(w, ZERG_JSON_NUMBER) && wn >= 0 && wn < RP_MAX_LANES)
        e->lane = (int)wn;
    return 0;
}

static void apply(struct rp_model *m, const struct ev *e)
{
    if (e->lane >= 0 && rp_model_lanes(m, e->lane + 1))
        return;
    if (!m->events++ || e->t_ns < m->t0_ns)
        m->t0_ns = e->t_ns;
    if (e->t_ns > m->t1_ns)
        m->t1_ns = e->t_ns;
    ev_fn fn = handler_of(e->name);
    if (fn)
        fn(m, e);
    else if (strstr(e->name, "merge"))
        add_mark(m, e, RP_M_MERGE);
    else
        m->other++;
    m->last_ns = e->t_ns;
}

static void feed_line(struct rp_model *m, const char *line, size_t len)
{
    struct ev e;
    if (len == 0)
        return;
    zerg_json *rec = zerg_json_parse(line, len, NULL);
    int rc =
        rec && zerg_json_is(rec, ZERG_JSON_OBJECT) ? ev_read(m, rec, &e) : -1;
    if (rc < 0)
        m->corrupt++;
    else if (rc == 0)
        apply(m, &e);
    zerg_json_free(rec);
}

void rp_model_feed(struct rp_model *m, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        feed_line(m, p, n);
        p += n + 1;
    }
    /* Still running when the log ends: drawn up to the last event. */
    if (m->nss && !m->ss[m->nss - 1].ended)
        m->ss[m->nss - 1].end_ns = m->t1_ns;
    for (int l = 0; l < m->nlanes; l++)
        if (m->open[l] >= 0)
            close_attempt(m, m->open[l], m->t1_ns, RP_INTERRUPTED,
                          "still running when the log ends");
}

void rp_model_elapsed(const struct rp_model *m, double *wall, double *running)
{
    *wall = *running = -1;
    if (!m->events)
        return;
    *wall = (double)(m->t1_ns - m->t0_ns) / 1e9;
    if (!m->nss) { /* a log without rush_start (cut by rotation) */
        *running = m->elapsed_s >= 0 ? m->elapsed_s : *wall;
        return;
    }
    int64_t sum = 0;
    for (size_t i = 0; i < m->nss; i++)
        sum += m->ss[i].end_ns - m->ss[i].start_ns;
    *running = (double)sum / 1e9;
    /* A rush times itself from its process start, a little before its
     * rush_start: a one-rush run says what its last line said. */
    if (m->nss == 1 && m->elapsed_s > *running)
        *running = m->elapsed_s;
    if (*running > *wall)
        *wall = *running;
}

/* ---- life cycle ---------------------------------------------------------- */

static void model_reset(struct rp_model *m)
{
    for (size_t i = 0; i < m->natt; i++) {
        free(m->att[i].task);
        free(m->att[i].reason);
    }
    for (size_t i = 0; i < m->nmk; i++) {
        free(m->mk[i].task);
        free(m->mk[i].text);
    }
    m->natt = m->nmk = m->nlv = m->nss = 0;
    for (int l = 0; l < m->nlanes; l++)
        m->open[l] = -1;
    m->events = m->other = 0;
    m->t0_ns = m->t1_ns = m->last_ns = 0;
    m->elapsed_s = -1;
    m->run_id[0] = '\0';
}

int rp_model_init(struct rp_model *m, const char *feature)
{
    *m = (struct rp_model){.elapsed_s = -1};
    if (feature && !(m->feature = strdup(feature)))
        return -1;
    return 0;
}

void rp_model_close(struct rp_model *m)
{
    model_reset(m);
    free(m->att);
    free(m->mk);
    free(m->lv);
    free(m->ss);
    free(m->open);
    free(m->feature);
    *m = (struct rp_model){0};
}
