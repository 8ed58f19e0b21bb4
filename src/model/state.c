/* state.c - the run's state document, .zerg/state/{feature}.json.
 *
 * The in-memory model: the status vocabularies, a fresh state for a graph,
 * whole-file save/load and the queries over it.  The conversion between
 * struct zerg_state and upstream's JSON shape is in state_json.c (writing)
 * and state_read.c (reading).
 *
 * Backups: every save writes the same bytes, as they are produced, to a
 * second temp file that replaces path.bak (atomically, without fsync) once
 * the live file is in place, so .bak is always a complete
 * file written by zerg and never a file damaged by someone else.  Two
 * cheaper schemes were rejected:
 *  - hard-linking path.bak to the file just written (zerg_fsio_keep_copy):
 *    both names share one inode, so anything that damages the live file in
 *    place (`> F.json`, cp over it, an editor that keeps hard links) damages
 *    the backup with it;
 *  - linking the previous file to path.bak before replacing it: a file
 *    damaged during the run would become the backup unless every save
 *    re-parsed it first (tens of ms at 10,000 tasks).
 * The second write costs about 1 ms per MB (page cache, no fsync).  If the
 * machine dies before the kernel flushes it, the rename leaves the old .bak
 * or the new one, and the live file is durable anyway. */
#include "zerg/state.h"
#include "zerg/task_fsm.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/graph.h"
#include "zerg/json.h"
#include "zerg/text.h"

#include "state_internal.h"

/* A state file of 10,000 tasks is about 4 MB; anything past 256 MiB is
 * not a state file zerg wrote. */
#define STATE_MAX_BYTES (256u << 20)

/* ---- status vocabularies ---------------------------------------------- */

const char *const state_task_names[] = {
    "pending", "claimed",       "in_progress", "complete",
    "failed",  "waiting_retry", "blocked",     "awaiting_review",
};
_Static_assert(sizeof state_task_names / sizeof *state_task_names ==
                   ZERG_TASK_AWAITING_REVIEW + 1,
               "a name for every enum zerg_task_status");
const char *const state_worker_names[] = {
    "starting", "ready",   "busy",    "backoff",
    "stopped",  "crashed", "retired", "stopping",
};
_Static_assert(sizeof state_worker_names / sizeof *state_worker_names ==
                   ZERG_WORKER_STOPPING + 1,
               "a name for every enum zerg_worker_status");
const char *const state_level_names[] = {"pending", "running", "complete"};

int state_name_lookup(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; i++)
        if (strcmp(names[i], s) == 0)
            return (int)i;
    return -1;
}

const char *zerg_task_status_name(enum zerg_task_status s)
{
    return (unsigned)s < NELEM(state_task_names) ? state_task_names[s]
                                                 : "unknown";
}

int zerg_task_status_parse(const char *s, enum zerg_task_status *out)
{
    int i = state_name_lookup(state_task_names, NELEM(state_task_names), s);
    if (i < 0)
        return -EINVAL;
    *out = (enum zerg_task_status)i;
    return 0;
}

int zerg_task_status_terminal(enum zerg_task_status s)
{
    return s == ZERG_TASK_COMPLETE || s == ZERG_TASK_FAILED ||
           s == ZERG_TASK_BLOCKED;
}

const char *zerg_worker_status_name(enum zerg_worker_status s)
{
    return (unsigned)s < NELEM(state_worker_names) ? state_worker_names[s]
                                                   : "unknown";
}

int zerg_worker_status_parse(const char *s, enum zerg_worker_status *out)
{
    int i = state_name_lookup(state_worker_names, NELEM(state_worker_names), s);
    if (i < 0)
        return -EINVAL;
    *out = (enum zerg_worker_status)i;
    return 0;
}

const char *zerg_level_status_name(enum zerg_level_status s)
{
    return (unsigned)s < NELEM(state_level_names) ? state_level_names[s]
                                                  : "unknown";
}

int zerg_level_status_parse(const char *s, enum zerg_level_status *out)
{
    int i = state_name_lookup(state_level_names, NELEM(state_level_names), s);
    if (i < 0)
        return -EINVAL;
    *out = (enum zerg_level_status)i;
    return 0;
}

/* The metrics, by name, so writing, reading and showing them cannot drift
 * apart (ZERG_METRICS in zerg/state.h). */
const struct zerg_metric_field zerg_metric_fields[] = {
#define ZERG_METRIC_ROW(f) {#f, offsetof(struct zerg_metrics, f)},
    ZERG_METRICS(ZERG_METRIC_ROW)
#undef ZERG_METRIC_ROW
};
const size_t zerg_nmetrics =
    sizeof zerg_metric_fields / sizeof zerg_metric_fields[0];

/* ---- lifecycle ---------------------------------------------------------- */

void state_task_reset(struct zerg_task_state *t, int level)
{
    memset(t, 0, sizeof *t);
    zerg_task_set_initial(t, ZERG_TASK_PENDING);
    t->level = level;
    t->worker_id = -1;
}

int zerg_state_init(struct zerg_state *s, const struct zerg_graph *g,
                    const char *feature, int64_t now_wall_ns)
{
    memset(s, 0, sizeof *s);
    s->version = ZERG_STATE_VERSION;
    s->feature = strdup(feature ? feature : g->feature);
    s->status = strdup("running");
    s->tasks = calloc(g->ntasks ? g->ntasks : 1, sizeof *s->tasks);
    s->levels = calloc((size_t)g->nlevels + 1, sizeof *s->levels);
    if (!s->feature || !s->status || !s->tasks || !s->levels) {
        zerg_state_close(s);
        return -ENOMEM;
    }
    s->ntasks = g->ntasks;
    for (size_t i = 0; i < g->ntasks; i++)
        state_task_reset(&s->tasks[i], g->tasks[i].level);
    s->nlevels = g->nlevels;
    /* Wall ms in hex plus the pid: unique per rush on one machine. */
    snprintf(s->run_id, sizeof s->run_id, "%llx-%x",
             (unsigned long long)(now_wall_ns / ZERG_NS_PER_MS),
             (unsigned)getpid());
    s->started_at_wall_ns = now_wall_ns;
    s->updated_at_wall_ns = now_wall_ns;
    s->next_epoch = 1;     /* 0 means "no incarnation" in task and worker */
    s->git_refs.known = 1; /* a run of this zerg records its refs */
    return 0;
}

/* ---- the refs zerg created (git.refs) ------------------------------------ */

const struct zerg_state_ref *zerg_state_ref_find(const struct zerg_state *s,
                                                 const char *ref)
{
    for (size_t i = 0; i < s->git_refs.n; i++)
        if (!strcmp(s->git_refs.v[i].name, ref))
            return &s->git_refs.v[i];
    return NULL;
}

int zerg_state_ref_set(struct zerg_state *s, const char *ref, const char *oid)
{
    struct zerg_state_refs *r = &s->git_refs;
    struct zerg_state_ref *e =
        (struct zerg_state_ref *)zerg_state_ref_find(s, ref);
    if (!e) {
        if (r->n == r->cap) {
            size_t cap = r->cap ? 2 * r->cap : 8;
            struct zerg_state_ref *v = realloc(r->v, cap * sizeof *v);
            if (!v)
                return -ENOMEM;
            r->v = v, r->cap = cap;
        }
        char *name = strdup(ref);
        if (!name)
            return -ENOMEM;
        e = &r->v[r->n++];
        e->name = name;
    }
    snprintf(e->oid, sizeof e->oid, "%s", oid ? oid : "");
    return 0;
}

void zerg_state_refs_free(struct zerg_state_refs *r)
{
    for (size_t i = 0; r && i < r->n; i++)
        free(r->v[i].name);
    if (r) {
        free(r->v);
        memset(r, 0, sizeof *r);
    }
}

void zerg_state_close(struct zerg_state *s)
{
    if (!s)
        return;
    for (size_t i = 0; s->tasks && i < s->ntasks; i++) {
        free(s->tasks[i].error);
        free(s->tasks[i].reason);
        free(s->tasks[i].conflict_paths);
        free(s->tasks[i].review_note);
    }
    free(s->tasks);
    free(s->workers);
    free(s->levels);
    free(s->feature);
    free(s->error);
    free(s->status);
    zerg_state_refs_free(&s->git_refs);
    memset(s, 0, sizeof *s);
}

/* ---- files -------------------------------------------------------------- */

/* The corrupt-file sentence: what, that nothing was touched, the way
 * back. */
static int corrupt(struct zerg_err *err, const char *path, const char *why)
{
    char bak[PATH_MAX];
    int have_bak = zerg_fsio_path(bak, sizeof bak, "%s.bak", path) == 0 &&
                   access(bak, F_OK) == 0;
    if (have_bak)
        return zerg_err_set(
            err, ZERG_ECORRUPT,
            "%s is corrupt (%s). It was not modified. The last good copy is "
            "%s: inspect both, then 'cp %s %s' to resume from it, or remove "
            "%s to start over.",
            path, why, bak, bak, path, path);
    return zerg_err_set(err, ZERG_ECORRUPT,
                        "%s is corrupt (%s). It was not modified. Inspect it, "
                        "then remove %s to start over.",
                        path, why, path);
}

/* The document at path, parsed: 0 with *doc (caller frees), or the
 * error of zerg_state_load. */
static int load_doc(const char *path, zerg_json **doc, struct zerg_err *err)
{
    struct zerg_err why = {0};
    char *text = NULL;
    size_t len = 0;
    *doc = NULL;
    /* zerg's own file: a link or a FIFO planted there is refused. */
    int rc = zerg_fsio_read_file(path, STATE_MAX_BYTES, ZERG_FSIO_NOFOLLOW,
                                 &text, &len, &why);
    if (rc == -EFBIG)
        rc = corrupt(err, path, "larger than 256 MiB");
    else if (rc)
        zerg_err_set(err, rc, "%s", why.msg);
    else if (!(*doc = zerg_json_parse(text, len, &why)))
        rc = corrupt(err, path, why.msg[0] ? why.msg : "not JSON");
    free(text);
    return rc;
}

/* A reader's failure said as zerg_state_load says it. */
static int load_failed(int rc, const char *path, const struct zerg_err *why,
                       struct zerg_err *err)
{
    if (rc == ZERG_ECORRUPT)
        return corrupt(err, path, why->msg);
    return zerg_err_set(err, rc, "cannot load %s: %s", path, why->msg);
}

int zerg_state_load(struct zerg_state *s, const struct zerg_graph *g,
                    const char *path, size_t *dropped, struct zerg_err *err)
{
    struct zerg_err why = {0};
    zerg_json *doc = NULL;
    memset(s, 0, sizeof *s);
    int rc = load_doc(path, &doc, err);
    if (!rc && (rc = zerg_state_from_json(s, g, doc, dropped, &why)))
        load_failed(rc, path, &why, err);
    zerg_json_free(doc);
    return rc;
}

int zerg_state_load_git(struct zerg_state *s, const char *path,
                        struct zerg_err *err)
{
    struct zerg_err why = {0};
    zerg_json *doc = NULL;
    memset(s, 0, sizeof *s);
    int rc = load_doc(path, &doc, err);
    if (!rc && (rc = state_git_from_json(s, doc, &why))) {
        load_failed(rc, path, &why, err);
        zerg_state_close(s);
    }
    zerg_json_free(doc);
    return rc;
}

/* The live file and its backup, filled with the same bytes at once. */
struct save_pair {
    struct zerg_fsio_atomic live, bak;
    int have_bak;
};

static int save_sink(void *ctx, const char *data, size_t len)
{
    struct save_pair *p = ctx;
    int rc = zerg_fsio_atomic_write(&p->live, data, len);
    if (rc == 0 && p->have_bak && zerg_fsio_atomic_write(&p->bak, data, len))
        p->have_bak = 0; /* the backup is not worth failing the save */
    return rc;
}

int zerg_state_save(const struct zerg_state *s, const struct zerg_graph *g,
                    const char *path, struct zerg_err *err)
{
    char bak[PATH_MAX];
    struct save_pair p;
    if (zerg_fsio_path(bak, sizeof bak, "%s.bak", path))
        return zerg_err_set(err, -ENAMETOOLONG, "cannot save %s: path too long",
                            path);
    if (s->ntasks != g->ntasks)
        return zerg_err_set(err, -EINVAL,
                            "cannot save %s: the state has %zu "
                            "tasks but the graph %zu",
                            path, s->ntasks, g->ntasks);
    int rc = zerg_fsio_atomic_open(&p.live, path, ZERG_FSIO_DURABLE);
    if (rc < 0)
        return zerg_err_set(err, rc, "cannot write %s: %s", path,
                            zerg_strerror(rc));
    p.have_bak = zerg_fsio_atomic_open(&p.bak, bak, ZERG_FSIO_NOSYNC) == 0;
    struct zerg_jw *w = zerg_jw_new(save_sink, &p);
    if (w)
        zerg_state_write_json(s, g, w);
    struct zerg_err why = {0};
    if ((rc = zerg_jw_finish(w, &why)) < 0) {
        zerg_fsio_atomic_abort(&p.live);
        zerg_fsio_atomic_abort(&p.bak);
        return zerg_err_set(err, rc, "cannot save %s: %s", path, why.msg);
    }
    rc = zerg_fsio_atomic_commit(&p.live, err);
    /* A failed backup write leaves the previous .bak, still a complete
     * file written by zerg; the save itself succeeded and the run goes on. */
    if (rc == 0 && p.have_bak)
        (void)zerg_fsio_atomic_commit(&p.bak, NULL);
    else
        zerg_fsio_atomic_abort(&p.bak);
    return rc;
}

/* ---- queries ------------------------------------------------------------ */

int zerg_state_level_done(const struct zerg_state *s,
                          const struct zerg_graph *g, int level)
{
    for (size_t i = 0; i < s->ntasks; i++) {
        /* An unplaced task (level null in the file) counts in its graph
         * level until reconciliation places it, so no level is declared
         * done while one of its tasks is unaccounted for. */
        int at = s->tasks[i].level;
        if (at == 0 && i < g->ntasks)
            at = g->tasks[i].level;
        if (at == level && !zerg_task_status_terminal(s->tasks[i].status))
            return 0;
    }
    return 1;
}

void zerg_state_count(const struct zerg_state *s,
                      size_t counts[ZERG_TASK_NSTATUS])
{
    zerg_task_count(s->tasks, NULL, s->ntasks, counts);
}

double zerg_state_cost_usd(const struct zerg_state *s)
{
    double sum = 0;
    for (size_t i = 0; s && i < s->ntasks; i++)
        sum += s->tasks[i].cost_usd;
    return sum;
}
