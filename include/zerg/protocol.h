/* protocol.h - the files the orchestrator and its workers talk through.
 *
 * All live in the run directory of their feature, .zerg/state/{feature}/
 * (zerg_proto_run_dir), so two features rushed at once in one project
 * never read each other's files, and are written with the atomic replace,
 * so they work the same across a container bind mount.  The orchestrator
 * is the only writer of the state document (.zerg/state/{feature}.json,
 * beside the run directory); workers never touch it.
 *
 *   slot-{slot}/assign.json  orchestrator -> worker: what to run now
 *   heartbeat-{slot}.json  worker -> orchestrator: alive, progress
 *   result-{task}-{attempt}.json  worker -> orchestrator: how it ended
 *   lease-{feature}.json   orchestrator -> workers: "I am alive"
 *   retry-{wall_ns}.json   `zerg retry` -> orchestrator (zerg/retry.h)
 *
 * Each file carries the run id of the rush that wrote it (or whose worker
 * did); epochs come from the feature's state and start above the wall
 * clock in microseconds, so they are not reused across runs either.
 *
 * Fencing: `epoch` is unique per spawned worker incarnation.  A result is
 * applied only if (epoch, task, attempt) matches the live assignment;
 * anything else is logged and dropped.  Results are made durable before
 * the orchestrator deletes them, which it does only after a state write
 * that includes them: by the worker's fsync (state.durability: full) or
 * by the orchestrator's sync of each batch it applied (batch). */
#ifndef ZERG_PROTOCOL_H
#define ZERG_PROTOCOL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include "zerg/failure.h"
#include "zerg/graph.h"

struct zerg_err;

#define ZERG_RUN_ID_MAX 40 /* with its NUL, as zerg_state.run_id */

/* Run ids.  Every rush (invocation) has an id of its own, so a worker of
 * an earlier rush never takes the lease, a heartbeat or an assignment of
 * a later one for its own.  A resume's id is the feature run's id, a dot
 * and its own part ("0d43303bddd4.5e1a09c2b7f3"); a fresh run's has no
 * dot.  The feature run's id, the same for every rush of the run, is what
 * commits carry (Zerg-Run trailer) and what the resume matches them by.
 * The length of id's feature run part (all of it without a dot). */
size_t zerg_run_origin_len(const char *id);

/* A git object id in hex (sha1 or sha256) plus NUL. */
#define ZERG_OID_MAX 65

struct zerg_assign {
    uint64_t epoch;
    char run_id[ZERG_RUN_ID_MAX];
    char task[ZERG_ID_MAX + 1]; /* "" = stay idle */
    int attempt;
    int stop;                     /* 1 = finish and exit */
    char base[ZERG_OID_MAX];      /* worktree isolation: the integration tip
                                     the attempt starts from, "" = none */
    char base_tree[ZERG_OID_MAX]; /* its tree when the orchestrator knows
                                     it, "" = not said (git is asked) */
    /* A retry: what went wrong last time, for the prompt ("" = first
     * attempt or nothing known). */
    char last_class[16];      /* failure class of the last attempt */
    char last_error[256];     /* its one-line error */
    char last_conflicts[400]; /* conflicting paths, space-separated */
    /* The reviewer's `zerg redo --note` (rush.review): what to change,
     * for the prompt or $ZERG_REVIEW_NOTE ("" = none). */
    char review_note[1024];
    int resume; /* continue the last attempt's agent session (DESIGN §21) */
    /* Where the task's object lies in the graph file and its hash
     * (zerg_task.src_*), so the worker reads that one task, not the whole
     * graph; task_len 0 = not given (the worker reads the whole file). */
    uint32_t task_off, task_len, task_hash;
};

struct zerg_heartbeat {
    int worker_id;
    uint64_t epoch;
    char run_id[ZERG_RUN_ID_MAX];
    int64_t seq;                   /* +1 per write */
    int64_t timestamp_ns;          /* wall, informational only */
    char task_id[ZERG_ID_MAX + 1]; /* "" when idle */
    int attempt;
    char step[24];        /* "ready" | "idle" | "command" |
                             "verification" | "done" | "exiting" */
    int progress_pct;     /* 0..100 */
    int pid;              /* worker pid in its pid namespace */
    int task_pgid;        /* process group of the running task, 0 */
    int64_t progress_seq; /* +1 whenever the task's output grew (with
                             workers.output_is_progress) */
    /* An agent attempt's spend so far, as its events streamed (DESIGN
     * §20): what a killed attempt is charged, its result never coming. */
    int64_t input_tokens, output_tokens, cache_read_tokens, cache_write_tokens;
    double cost_usd;
    /* What the agent does now (DESIGN §21): its last tool call ("Write
     * src/a.c") and how many it made; "" and 0 for a command task. */
    char activity[80];
    int64_t tool_calls;
};

/* A bounded list of paths (DESIGN §18): the first ZERG_PATHS_LISTED, as
 * many as fit in text, each NUL-terminated, and how many there were in
 * all.  Zero-initialised = empty. */
#define ZERG_PATHS_LISTED 20
struct zerg_path_list {
    int total;  /* paths there were, listed or not */
    int n;      /* paths in text */
    size_t len; /* bytes of text used */
    char text[1024];
};
/* Counts path and lists it while there is room: 1 listed, 0 counted only
 * (and "" is never listed). */
int zerg_path_list_add(struct zerg_path_list *l, const char *path);
/* The listed path after prev (NULL: the first); NULL after the last. */
const char *zerg_path_list_next(const struct zerg_path_list *l,
                                const char *prev);

enum zerg_outcome {
    ZERG_OUTCOME_COMPLETE,
    ZERG_OUTCOME_FAILED,
};

struct zerg_result {
    uint64_t epoch;
    char run_id[ZERG_RUN_ID_MAX];
    int worker_id;
    char task[ZERG_ID_MAX + 1];
    int attempt;
    enum zerg_outcome outcome;
    char stage[16]; /* "command" | "verification" | "setup" */
    int exit_code;  /* -1 when killed by a signal */
    int signal;
    int timed_out; /* verification hit its timeout */
    int64_t duration_ms;
    char error[256];           /* one line, "" when complete */
    char base[ZERG_OID_MAX];   /* worktree isolation: the tip it started
                                  from, "" = none */
    char commit[ZERG_OID_MAX]; /* its commit, "" = it changed nothing */
    char patch[160];           /* leftovers of an earlier attempt saved
                                  here (relative to the project), "" */
    /* Failed: the failure class (DESIGN §14) and, for environment, the
     * fix; rate_limit: when the limit resets (wall s, 0 = unknown). */
    char cls[16]; /* "" = let the orchestrator decide */
    /* cls read once, at the boundary: has_class 0 for "", and a name
     * outside the taxonomy reads as task (DESIGN §20: unknown -> task). */
    int has_class;
    enum zerg_failure_class fclass;
    char fix[256];
    int64_t reset_at_s;
    /* An agent executor's run (claude): "" / 0 when none. */
    char session_id[64];
    double cost_usd;
    int64_t input_tokens, output_tokens;
    int64_t cache_read_tokens, cache_write_tokens; /* prompt cache */
    int cost_estimated; /* cost_usd from executor.pricing, not the CLI */
    char model[64];
    int64_t num_turns;
    /* What the attempt produced beyond its exit status (DESIGN §18), for
     * the orchestrator to judge: files.create paths that did not exist
     * after it passed (scope.missing decides), declared paths .gitignore
     * ignores that were committed anyway, undeclared ignored paths left
     * out of the commit (directories as one path). */
    struct zerg_path_list missing;
    struct zerg_path_list forced;
    struct zerg_path_list ignored;
};

/* A failed result's class, in both its forms. */
static inline void zerg_result_set_class(struct zerg_result *r,
                                         enum zerg_failure_class c)
{
    const char *name = zerg_failure_class_name(c);
    r->has_class = name != NULL;
    r->fclass = name ? c : ZERG_FAILURE_TASK;
    snprintf(r->cls, sizeof r->cls, "%s", name ? name : "");
}

/* The run directory of feature under state_dir (.zerg/state).  0 or
 * -ENAMETOOLONG. */
int zerg_proto_run_dir(char *buf, size_t n, const char *state_dir,
                       const char *feature);

/* Paths: dir is the run directory.  0 or -ENAMETOOLONG. */
int zerg_proto_slot_dir(char *buf, size_t n, const char *dir, int slot);
int zerg_proto_assign_path(char *buf, size_t n, const char *dir, int slot);
int zerg_proto_heartbeat_path(char *buf, size_t n, const char *dir, int slot);
int zerg_proto_result_path(char *buf, size_t n, const char *dir,
                           const char *task, int attempt);
int zerg_proto_lease_path(char *buf, size_t n, const char *dir,
                          const char *feature);

/* Writers (atomic replace; results durable, the rest not) and readers.
 * Readers return -ENOENT when missing, ZERG_ECORRUPT when unparsable. */
int zerg_proto_write_assign(const char *dir, int slot,
                            const struct zerg_assign *a, struct zerg_err *err);
int zerg_proto_read_assign(const char *dir, int slot, struct zerg_assign *a);
int zerg_proto_write_heartbeat(const char *dir, const struct zerg_heartbeat *hb,
                               struct zerg_err *err);
int zerg_proto_read_heartbeat(const char *path, struct zerg_heartbeat *hb);
int zerg_proto_write_result(const char *dir, const struct zerg_result *r,
                            struct zerg_err *err);
/* The same with the zerg_fsio_write_atomic flags: ZERG_FSIO_NOSYNC under
 * state.durability: batch, where the orchestrator syncs the batch. */
int zerg_proto_write_result_flags(const char *dir, const struct zerg_result *r,
                                  int flags, struct zerg_err *err);
/* The text of r's file (malloc'd in *text), for a caller that writes it
 * itself.  0 or negative with err set. */
int zerg_proto_encode_result(const struct zerg_result *r, char **text,
                             size_t *len, struct zerg_err *err);
int zerg_proto_read_result(const char *path, struct zerg_result *r);

/* The lease: {pid, run_id, seq}.  Workers exit when its seq stops changing
 * for workers.lease_stale_seconds (ZERG_LEASE_STALE_NS by default) on their
 * own monotonic clock and the rush lock is no longer held by its pid. */
#define ZERG_LEASE_INTERVAL_NS (1 * INT64_C(1000000000))
#define ZERG_LEASE_STALE_NS (10 * INT64_C(1000000000))
int zerg_proto_write_lease(const char *dir, const char *feature, int pid,
                           const char *run_id, int64_t seq,
                           struct zerg_err *err);
int zerg_proto_read_lease(const char *dir, const char *feature, int *pid,
                          char *run_id, size_t run_id_size, int64_t *seq);

/* Classifies a state-dir file name: returns 'h' (heartbeat, *slot set),
 * 'r' (result), 'l' (lease), 'q' (retry request), 'a' (the rush's answer
 * to one, zerg/retry.h), or 0.  Assignments live
 * in slot-{n}/ directories and are not state-dir entries. */
int zerg_proto_classify(const char *name, int *slot);

/* ---- event lines on a worker's stdout (DESIGN §15) ------------------
 * Where the launcher relays the worker's stdout (zerg_proc.events_fd),
 * the worker also writes each heartbeat and each result
 * there, after the file, as one line:
 *   {"zerg":1,"kind":"heartbeat", ...the heartbeat file's fields...}
 *   {"zerg":1,"kind":"result", ...the result file's fields...}
 * The files stay the journal; a line only gets there sooner (and from
 * another node without inotify).  A heartbeat line is about 250 bytes, a
 * result line under 2 KiB plus its path lists (at most 3 KiB more). */
#define ZERG_EVENT_VERSION 1
#define ZERG_EVENT_LINE_MAX (64 * 1024) /* longer lines are not events */

enum zerg_event_kind {
    ZERG_EVENT_NONE,
    ZERG_EVENT_HEARTBEAT,
    ZERG_EVENT_RESULT,
};

struct zerg_event {
    enum zerg_event_kind kind;
    union {
        struct zerg_heartbeat hb;  /* ZERG_EVENT_HEARTBEAT */
        struct zerg_result result; /* ZERG_EVENT_RESULT */
    };
};

/* One event line, '\n' included, malloc'd into *line (caller frees) with
 * its length in *len.  0 or -ENOMEM. */
int zerg_proto_event_heartbeat(const struct zerg_heartbeat *hb, char **line,
                               size_t *len);
int zerg_proto_event_result(const struct zerg_result *r, char **line,
                            size_t *len);
/* Decodes one line (its '\n' optional): 0 with ev filled; 1 when the line
 * does not open like an event (other output); ZERG_ECORRUPT when it does
 * but is not one we can read (bad JSON, fields, version or kind). */
int zerg_proto_event_parse(const char *line, size_t len, struct zerg_event *ev);

#endif
