/* config.h - .zerg/config.yaml: every key with its default and range.
 *
 * Parsed with libyaml.  A missing file means all defaults.  Errors name the
 * file, line and column, the key, what was found and what is allowed; an
 * unknown key is a warning with a "did you mean" suggestion.  Durations
 * accept fractions ("0.2") and are stored as nanoseconds. */
#ifndef ZERG_CONFIG_H
#define ZERG_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include "zerg/json.h"

struct zerg_err;

enum zerg_backoff {
    ZERG_BACKOFF_EXPONENTIAL,
    ZERG_BACKOFF_LINEAR,
    ZERG_BACKOFF_FIXED,
};
const char *zerg_backoff_name(enum zerg_backoff b); /* "exponential" */

enum zerg_mode {
    ZERG_MODE_SUBPROCESS,
    ZERG_MODE_CONTAINER,
    ZERG_MODE_AUTO,
    ZERG_MODE_SLURM, /* never chosen by auto */
};
/* state.watch: how the orchestrator notices the workers' files. */
enum zerg_state_watch {
    ZERG_WATCH_AUTO, /* poll on network/FUSE filesystems, else inotify */
    ZERG_WATCH_INOTIFY,
    ZERG_WATCH_POLL,
};
/* state.durability: when a result reaches the disk (DESIGN §16). */
enum zerg_durability {
    ZERG_DURABILITY_BATCH, /* the orchestrator syncs applied results in groups
                            */
    ZERG_DURABILITY_FULL,  /* each worker fsyncs its result */
};

const char *zerg_mode_name(enum zerg_mode m);
int zerg_mode_parse(const char *s, enum zerg_mode *out); /* 0 or -EINVAL */

enum zerg_cost_cap_action {
    ZERG_COST_CAP_FINISH, /* running attempts end, nothing new claimed */
    ZERG_COST_CAP_STOP,   /* running attempts are stopped too */
};

enum zerg_executor_kind {
    ZERG_EXECUTOR_CLAUDE,
    ZERG_EXECUTOR_COMMAND,
    ZERG_EXECUTOR_CODEX,
    ZERG_EXECUTOR_GEMINI,
};

enum zerg_isolation {
    ZERG_ISOLATION_AUTO,
    ZERG_ISOLATION_WORKTREE,
    ZERG_ISOLATION_NONE,
};

/* rush.schedule (DESIGN §16): when a task may be claimed. */
enum zerg_schedule {
    ZERG_SCHEDULE_LEVELS, /* once every task of the lower levels is done */
    ZERG_SCHEDULE_DAG,    /* once its own dependencies are complete */
};

/* A NULL-terminated argv owned by the config. */
struct zerg_argv {
    char **v; /* v[n] == NULL */
    size_t n;
};

/* One quality gate (DESIGN §13): run on the integration tip after each
 * level is merged. */
struct zerg_gate {
    char *name;
    char *command;      /* run with /bin/sh -c in the gate worktree */
    int required;       /* true: a failure ends the rush */
    int64_t timeout_ns; /* 300 s */
};

struct zerg_config {
    /* quality_gates: (a top-level list, not a section) */
    struct zerg_gate *gates;
    size_t ngates;

    /* resilience: */
    int resilience_enabled;        /* true */
    int64_t reconcile_interval_ns; /* 60 s */

    /* rush: */
    int rush_isolation;       /* enum zerg_isolation, AUTO */
    char *rush_base;          /* "" = HEAD at rush start */
    double rush_max_cost_usd; /* 0 = no cap */
    int64_t rush_timeout_ns;  /* 0 = no wall budget */
    int rush_schedule;        /* enum zerg_schedule, LEVELS */
    int rush_review;          /* bool, false: merge only once approved */

    /* workers: */
    int workers_max_concurrent;  /* 3: workers when --workers absent */
    enum zerg_mode workers_mode; /* subprocess */
    int spawn_retry_attempts;    /* 3 (0..100) */
    enum zerg_backoff spawn_backoff_strategy; /* exponential */
    int64_t spawn_backoff_base_ns;            /* 2 s */
    int64_t spawn_backoff_max_ns;             /* 30 s */
    int64_t spawn_ready_timeout_ns;       /* 30 s: start -> first heartbeat */
    int64_t task_stale_timeout_ns;        /* 600 s */
    int64_t heartbeat_interval_ns;        /* 30 s */
    int64_t heartbeat_stale_threshold_ns; /* 120 s */
    int64_t lease_stale_ns;               /* 10 s: then the rush lock decides */
    int64_t stop_grace_ns;                /* 10 s: SIGTERM -> SIGKILL */
    int auto_respawn;                     /* true */
    int max_respawn_attempts;             /* 5 */
    int retry_attempts;                   /* 3: task retries on failure */
    enum zerg_backoff backoff_strategy;   /* exponential */
    int64_t backoff_base_ns;              /* 30 s */
    int64_t backoff_max_ns;               /* 300 s */
    int max_task_crashes;                 /* 3: crashes before crash_loop */
    int conflict_retry_attempts;          /* 2: merge-conflict retries */
    int output_is_progress;               /* true */
    struct zerg_argv launch_prefix;       /* [] */
    struct zerg_argv executor;            /* claude --print
                                             --dangerously-skip-permissions */

    /* executor: */
    int executor_kind;                 /* enum zerg_executor_kind, CLAUDE */
    char *executor_claude;             /* "claude" */
    char *executor_codex;              /* "codex" */
    char *executor_gemini;             /* "gemini" */
    int64_t executor_exit_grace_ns;    /* 5 s: after the terminal event */
    struct zerg_argv executor_pricing; /* [] MODEL=IN/OUT/CR/CW */
    int rush_cost_cap_action;          /* enum zerg_cost_cap_action */
    struct zerg_argv executor_args;    /* [] */

    /* container: */
    char *container_runtime;             /* "auto" | docker | podman | PATH */
    char *container_image;               /* "zerg-worker" */
    struct zerg_argv container_run_args; /* [] */
    char *container_memory;              /* "" = no limit, e.g. "2g" */
    double container_cpus;               /* 0 = no limit */
    int container_pids_limit;            /* 0 = no limit */
    int gates_on_host;                   /* false: gates run where workers do */

    /* slurm: */
    char *slurm_partition;             /* "" = the cluster's default */
    char *slurm_account;               /* "" = the user's default */
    char *slurm_time_limit;            /* "" = the partition's limit */
    struct zerg_argv slurm_extra_args; /* [] */

    /* state: */
    int state_watch;            /* enum zerg_state_watch, auto */
    int state_poll_interval_ms; /* 100 (10..5000) */
    int state_durability;       /* enum zerg_durability, batch */

    /* policies: */
    int64_t policy_instruction_budget; /* 1,000,000 VM instructions/call */
    int64_t policy_time_budget_ns;     /* 100 ms CPU per call */
    int64_t policy_memory_bytes;       /* 32 MiB per VM */

    /* logging: */
    int log_level;              /* enum zerg_log_level, INFO */
    int64_t log_max_size_bytes; /* 50 MiB; 0 = never rotate */
    int log_keep;               /* 3 rotated files per log */
};

/* Fills every field with its default (allocates the default argvs). */
void zerg_config_defaults(struct zerg_config *c);
void zerg_config_free(struct zerg_config *c); /* frees owned strings */

typedef void (*zerg_warn_fn)(void *ud, const char *msg);

/* Loads path over the defaults.  A missing file is not an error (returns
 * 0, all defaults).  Returns ZERG_EINVAL_INPUT with err set on a bad file;
 * warnings (unknown keys) go to warn (may be NULL). */
int zerg_config_load(struct zerg_config *c, const char *path, zerg_warn_fn warn,
                     void *ud, struct zerg_err *err);
/* Same for text in memory; name is used in messages. */
int zerg_config_load_string(struct zerg_config *c, const char *name,
                            const char *text, size_t len, zerg_warn_fn warn,
                            void *ud, struct zerg_err *err);

/* Reflection: one row per key, used by docs tests and `zerg lua`. */
struct zerg_config_key {
    const char *path;    /* "workers.spawn_retry_attempts" */
    const char *type;    /* "bool" | "int" | "duration" | "enum" |
                            "string" | "argv" | "number" */
    const char *dflt;    /* default as YAML text */
    const char *allowed; /* "0..100", "exponential|linear|fixed", ... */
    const char *help;    /* one sentence */
};
const struct zerg_config_key *zerg_config_keys(size_t *n);

/* The effective config as a JSON object of sections (durations in
 * seconds), for `zerg lua` and policy opts.  Caller frees. */
zerg_json *zerg_config_to_json(const struct zerg_config *c);

#endif
