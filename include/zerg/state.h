/* state.h - the run's state document: .zerg/state/{feature}.json.
 *
 * Written only by the orchestrator, only whole: zerg_state_save goes through
 * zerg_fsio_write_atomic (durable) and then writes the same bytes to
 * {feature}.json.bak, a separate file, so damage done to the live file by
 * hand never reaches the last good copy.  A corrupt or truncated file is never
 * overwritten: loading it fails with a message naming the file and the way
 * back.
 *
 * The in-memory form is indexed like the graph: s->tasks[i] is the state of
 * graph->tasks[i].  The JSON keeps upstream's shape (tasks keyed by id). */
#ifndef ZERG_STATE_H
#define ZERG_STATE_H

#include <stddef.h>
#include <stdint.h>
#include "zerg/json.h"

struct zerg_err;
struct zerg_graph;

#define ZERG_STATE_VERSION 1

enum zerg_task_status {
    ZERG_TASK_PENDING,
    ZERG_TASK_CLAIMED,
    ZERG_TASK_IN_PROGRESS,
    ZERG_TASK_COMPLETE,
    ZERG_TASK_FAILED, /* permanent */
    ZERG_TASK_WAITING_RETRY,
    ZERG_TASK_BLOCKED,         /* a dependency failed permanently */
    ZERG_TASK_AWAITING_REVIEW, /* passed and committed, merged only once
                                  approved (rush.review, DESIGN §21) */
};
#define ZERG_TASK_NSTATUS 8
const char *zerg_task_status_name(enum zerg_task_status s);
int zerg_task_status_parse(const char *s, enum zerg_task_status *out);
int zerg_task_status_terminal(enum zerg_task_status s);

enum zerg_level_status {
    ZERG_LEVEL_PENDING,
    ZERG_LEVEL_RUNNING,
    ZERG_LEVEL_COMPLETE,
};
const char *zerg_level_status_name(enum zerg_level_status s);
int zerg_level_status_parse(const char *s, enum zerg_level_status *out);

struct zerg_task_state {
    enum zerg_task_status status;
    int level;       /* 0 = null in the file (reconcile fixes it) */
    int worker_id;   /* -1 when none */
    int retry_count; /* charged failures */
    int crash_count; /* uncharged worker crashes while running it */
    int attempt;     /* assignments so far (fencing key with epoch) */
    uint64_t epoch;  /* incarnation of the worker it is assigned to */
    int64_t claimed_at_wall_ns; /* wall ns, 0 = never */
    int64_t started_at_wall_ns;
    int64_t completed_at_wall_ns;
    int64_t retry_at_wall_ns; /* wall ns when waiting_retry ends */
    int64_t duration_ms;
    int64_t prev_duration_ms; /* its duration in the run before (a run
                                 replaced with --fresh), for the ETA; 0 =
                                 none */
    char *error;              /* last error sentence, NULL = none */
    char *reason;             /* "exit" | "verification" | "timeout" |
                                 "crash_loop" | "blocked" | ..., NULL = none */
    /* Worktree isolation (DESIGN §13): */
    char commit[65];      /* its squashed commit on the integration
                             branch, "" = not merged (or changed nothing) */
    int conflict_count;   /* merge conflicts so far (own budget) */
    char *conflict_paths; /* the last conflict's paths, space-separated */
    /* Review before merge (rush.review, DESIGN §21): */
    char review_commit[65]; /* awaiting_review: the attempt's commit, kept
                               at its review ref; "" otherwise */
    char review_base[65];   /* the tip that commit was made on */
    int review_worker;      /* the slot that made it (its commit says so
                               once merged); -1 = unknown */
    char *review_note;      /* the reviewer's last `zerg redo --note`, for
                               the next attempt's prompt; NULL = none */
    /* Agent executors (DESIGN §14), summed over its attempts: */
    double cost_usd;
    int64_t input_tokens, output_tokens;
    int64_t cache_read_tokens, cache_write_tokens; /* prompt cache */
    int cost_estimated;  /* some of cost_usd is from executor.pricing */
    char session_id[64]; /* the last attempt's Claude Code session */
    char model[64];      /* the last attempt's model */
};

enum zerg_worker_status {
    ZERG_WORKER_STARTING, /* spawned, not ready */
    ZERG_WORKER_READY,    /* idle */
    ZERG_WORKER_BUSY,
    ZERG_WORKER_BACKOFF, /* waiting to (re)spawn */
    ZERG_WORKER_STOPPED,
    ZERG_WORKER_CRASHED,
    ZERG_WORKER_RETIRED,  /* respawn cap or spawn retries exhausted */
    ZERG_WORKER_STOPPING, /* asked or forced to go, not reaped yet */
};
const char *zerg_worker_status_name(enum zerg_worker_status s);
int zerg_worker_status_parse(const char *s, enum zerg_worker_status *out);

struct zerg_worker_state {
    int id; /* slot number */
    enum zerg_worker_status status;
    int pid;               /* 0 when none */
    char container_id[96]; /* "" in subprocess mode */
    int respawn_count;
    int spawn_attempt; /* failed spawns in the current series */
    uint64_t epoch;
    int task;                   /* index into graph->tasks, -1 when idle */
    int64_t started_at_wall_ns; /* wall ns */
    int64_t ready_at_wall_ns;
};

struct zerg_level_state {
    enum zerg_level_status status;
    int64_t started_at_wall_ns;
    int64_t completed_at_wall_ns;
};

/* The run's counters, one table: the struct, the state document's
 * `metrics` (written and read by name) and `zerg status` (in this order)
 * all come from it.  stale_detections counts tasks and workers found
 * stale, task_reassignments crashes whose task was requeued uncharged,
 * task_retries charged retries, results_fenced stale results rejected. */
#define ZERG_METRICS(X)                                                        \
    X(stale_detections)                                                        \
    X(task_reassignments)                                                      \
    X(worker_respawns)                                                         \
    X(spawn_retries)                                                           \
    X(policy_errors)                                                           \
    X(worker_crashes)                                                          \
    X(task_timeouts)                                                           \
    X(task_retries)                                                            \
    X(results_fenced)                                                          \
    X(reconcile_fixes)

struct zerg_metrics {
#define ZERG_METRIC_FIELD(f) int64_t f;
    ZERG_METRICS(ZERG_METRIC_FIELD)
#undef ZERG_METRIC_FIELD
};

/* The metrics by name, in the table's order. */
struct zerg_metric_field {
    const char *name;
    size_t off; /* of an int64_t in struct zerg_metrics */
};
extern const struct zerg_metric_field zerg_metric_fields[];
extern const size_t zerg_nmetrics;
static inline int64_t *zerg_metric_at(struct zerg_metrics *m, size_t i)
{
    return (int64_t *)((char *)m + zerg_metric_fields[i].off);
}
static inline int64_t zerg_metric_get(const struct zerg_metrics *m, size_t i)
{
    return *(const int64_t *)((const char *)m + zerg_metric_fields[i].off);
}

/* A ref zerg created (DESIGN §18): its full name and the oid zerg last set
 * it to.  `zerg cleanup` deletes only these. */
struct zerg_state_ref {
    char *name; /* "refs/heads/zerg/{feature}/integration", ... */
    char oid[65];
};
struct zerg_state_refs {
    struct zerg_state_ref *v;
    size_t n, cap;
    int known; /* 0: the document predates git.refs (an older zerg) */
};

struct zerg_state {
    int version;
    char *feature;
    char run_id[40];            /* unique per rush invocation */
    int64_t started_at_wall_ns; /* wall ns */
    int64_t updated_at_wall_ns;
    int current_level; /* 0 before start */
    struct zerg_task_state *tasks;
    size_t ntasks;
    struct zerg_worker_state *workers;
    size_t nworkers;
    struct zerg_level_state *levels; /* [1..nlevels] */
    int nlevels;
    struct zerg_metrics metrics;
    uint64_t next_epoch; /* epochs are never reused */
    int paused;
    char git_base[65];   /* worktree isolation: the integration branch's
                            base commit, "" = isolation none */
    char git_branch[96]; /* zerg/{feature}/integration, "" = none */
    struct zerg_state_refs git_refs; /* git.refs: what zerg created */
    char *error;                     /* run-level error, NULL = none */
    char *status;                    /* "running" | "complete" | "failed" |
                                        "stopped" */
};

/* The run's agent spend: the sum of every task's cost_usd. */
double zerg_state_cost_usd(const struct zerg_state *s);

/* Records that zerg created ref (full name) or set it to oid: added, or
 * its oid updated.  0 or -ENOMEM. */
int zerg_state_ref_set(struct zerg_state *s, const char *ref, const char *oid);
/* The record of ref, NULL when zerg did not record creating it. */
const struct zerg_state_ref *zerg_state_ref_find(const struct zerg_state *s,
                                                 const char *ref);
void zerg_state_refs_free(struct zerg_state_refs *r);

/* Fresh state for graph g: every task pending with its level. */
int zerg_state_init(struct zerg_state *s, const struct zerg_graph *g,
                    const char *feature, int64_t now_wall_ns);
void zerg_state_close(struct zerg_state *s);

/* Reads path for graph g.  -ENOENT if missing; ZERG_ECORRUPT with err
 * naming the file and the .bak copy if it cannot be parsed.  Tasks in the
 * file that the graph lacks are dropped (counted in *dropped if non-NULL);
 * graph tasks the file lacks start pending. */
int zerg_state_load(struct zerg_state *s, const struct zerg_graph *g,
                    const char *path, size_t *dropped, struct zerg_err *err);

/* Reads only the git object of the document at path (git.base, branch and
 * refs) into s, for commands without the graph (`zerg cleanup`).  Errors
 * as zerg_state_load; zerg_state_close frees. */
int zerg_state_load_git(struct zerg_state *s, const char *path,
                        struct zerg_err *err);

/* Atomically replaces path (durable), then refreshes path.bak. */
int zerg_state_save(const struct zerg_state *s, const struct zerg_graph *g,
                    const char *path, struct zerg_err *err);

/* The document written into w (errors are w's, zerg/json.h). */
struct zerg_jw;
void zerg_state_write_json(const struct zerg_state *s,
                           const struct zerg_graph *g, struct zerg_jw *w);
/* The same document as a tree (status --json, tests); NULL on failure. */
zerg_json *zerg_state_to_json(const struct zerg_state *s,
                              const struct zerg_graph *g);
int zerg_state_from_json(struct zerg_state *s, const struct zerg_graph *g,
                         const zerg_json *doc, size_t *dropped,
                         struct zerg_err *err);

/* 1 when every task of level is terminal (computed, never counted). */
int zerg_state_level_done(const struct zerg_state *s,
                          const struct zerg_graph *g, int level);

/* Counts of tasks by status into counts[7]. */
void zerg_state_count(const struct zerg_state *s,
                      size_t counts[ZERG_TASK_NSTATUS]);

#endif
