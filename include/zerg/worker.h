/* worker.h - `zerg worker`: one worker incarnation, run to completion.
 *
 * A worker reports ready with its first heartbeat, then waits for its
 * assignment file (zerg/protocol.h), runs each task it is given (the
 * task's command or the configured executor, then the verification
 * command, each in its own process group) and writes one durable result
 * per attempt.  It exits when told to stop, on SIGTERM/SIGINT, or as soon
 * as its orchestrator is gone (parent death signal, pid check, stale
 * lease), so a worker never outlives the run that started it.
 *
 * The helpers below are pure: they build the prompt, argv and environment
 * of a task's stages and decide what to do with an assignment. */
#ifndef ZERG_WORKER_H
#define ZERG_WORKER_H

#include <stdint.h>
#include <sys/types.h>
#include "zerg/agent.h"
#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/graph.h"
#include "zerg/protocol.h"

struct zerg_err;

/* Exit codes of `zerg worker` (the orchestrator reads them). */
enum {
    ZERG_WORKER_EXIT_OK = 0,       /* stopped, or SIGTERM/SIGINT */
    ZERG_WORKER_EXIT_ERROR = 1,    /* runtime failure (state dir, fds) */
    ZERG_WORKER_EXIT_USAGE = 2,    /* bad command line */
    ZERG_WORKER_EXIT_SETUP = 3,    /* config or task graph unreadable */
    ZERG_WORKER_EXIT_ORPHANED = 4, /* orchestrator gone */
};

struct zerg_worker_opts {
    const char *project; /* absolute project root: tasks run here */
    const char *feature;
    int slot;       /* worker id */
    uint64_t epoch; /* this incarnation (fencing) */
    const char *run_id;
    /* Worktree isolation (DESIGN §13): the worker's worktree, reset to the
     * assignment's base before each attempt and committed after it
     * passed; NULL = none (tasks run in the project).  workdir: where the
     * stages run (the project's path inside the worktree), NULL = the
     * worktree. */
    const char *workspace;
    const char *workdir;
    /* Container mode (DESIGN §19): the workspace holds a repository of
     * its own borrowing the host's objects in this directory (mounted
     * read-only), and each commit is also written as a bundle; NULL = the
     * workspace is a linked worktree of the host repository. */
    const char *objects;
    /* The orchestrator's pid when it can be checked (the CLI passes
     * $ZERG_ORCH_PID), 0 when not (container mode). */
    pid_t orch_pid;
    /* Overrides; 0 / NULL means the default shown. */
    const char *config_path;        /* {project}/.zerg/config.yaml */
    const char *graph_path;         /* {project}/.gsd/specs/{feature}/
                                       task-graph.json */
    const char *state_dir;          /* the run directory, by default
                                       {project}/.zerg/state/{feature} */
    int64_t lease_stale_ns;         /* workers.lease_stale_seconds */
    int64_t heartbeat_interval_ns;  /* workers.heartbeat_interval_seconds */
    int64_t poll_ns;                /* 500 ms (also the maximum) */
    const struct zerg_clock *clock; /* the system clock */
};

/* Runs the worker until it must exit; returns its exit code
 * (ZERG_WORKER_EXIT_*).  For any code but OK, err says why in one
 * sentence ("cannot read task graph /p/.gsd/specs/F/task-graph.json: No
 * such file or directory").
 *
 * Orchestrator liveness: exits with ZERG_WORKER_EXIT_ORPHANED when
 * orch_pid no longer exists, or when the lease of its run_id has not
 * changed for lease_stale_ns.  With an orch_pid the lease is judged only
 * once it has been seen; without one it must appear within that window.
 *
 * Meant to be the whole life of its process: blocks SIGTERM/SIGINT/SIGHUP
 * (restoring the mask before returning), sets PR_SET_PDEATHSIG, and reaps
 * any child of the process (orphans of tasks reparented to it). */
int zerg_worker_run(const struct zerg_worker_opts *o, struct zerg_err *err);

/* What to do with an assignment read from disk. */
enum zerg_assign_action {
    ZERG_ASSIGN_IGNORE, /* another epoch, idle, or already run */
    ZERG_ASSIGN_RUN,    /* a new (task, attempt) for this epoch */
    ZERG_ASSIGN_STOP,   /* stop: true for this epoch */
};
/* last_task/last_attempt: the attempt this incarnation ran last ("" and 0
 * when none).  A stop with a new task still runs the task first. */
enum zerg_assign_action zerg_worker_decide(const struct zerg_assign *a,
                                           uint64_t epoch,
                                           const char *last_task,
                                           int last_attempt);

/* The prompt handed to the executor for a task without `command`: title,
 * description, context, files to create/modify/read and the verification
 * command.  malloc'd (caller frees), NULL on out-of-memory. */
/* What the prompt of a retry says about the attempt before it. */
struct zerg_prompt_retry {
    int attempt;             /* the failed attempt, 0 = not a retry */
    const char *cls;         /* its failure class, or NULL */
    const char *error;       /* its one-line error, or NULL */
    const char *conflicts;   /* conflicting paths, or NULL */
    const char *output_tail; /* the last lines of its output, or NULL */
    const char *final_msg;   /* the agent's final message, or NULL */
    const char *verify_cmd;  /* the verification that failed, or NULL */
    const char *review_note; /* the reviewer's redo note, or NULL */
};
char *zerg_worker_prompt(const struct zerg_task *t, const char *feature,
                         const struct zerg_prompt_retry *retry);
/* The argv of an agent CLI (executor.kind claude, codex, gemini): BIN,
 * the adapter's arguments, its resume arguments and session when session
 * is not NULL or "" (and the CLI can resume), executor.args, then prompt
 * (prompt NULL: the CLI reads it on stdin, which has no length limit;
 * the adapter's stdin_arg then, if it has one).  E.g. claude --print
 * --output-format stream-json --verbose --include-partial-messages
 * --dangerously-skip-permissions ARGS...; codex exec --json
 * --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox
 * ARGS... -.  Copies, free with zerg_worker_argv_free; NULL on
 * out-of-memory. */
char **zerg_worker_agent_argv(const struct zerg_config *cfg,
                              const struct zerg_agent_adapter *ad,
                              const char *bin, const char *session,
                              const char *prompt);

/* executor argv (NULL-terminated) + prompt as its last argument, as a new
 * NULL-terminated vector of copies (free with zerg_worker_argv_free).
 * NULL on out-of-memory or when the executor is empty. */
char **zerg_worker_executor_argv(const struct zerg_argv *executor,
                                 const char *prompt);
void zerg_worker_argv_free(char **argv); /* accepts NULL */

/* What a stage's environment adds to the worker's own. */
struct zerg_task_env {
    const char *task_id;
    int worker_id;
    const char *feature;
    int attempt;
    uint64_t epoch;
    const char *run_id;
    const char *progress_file; /* ZERG_PROGRESS_FILE */
    const char *review_note;   /* ZERG_REVIEW_NOTE: the reviewer's `zerg
                                  redo --note` ("" or NULL = none) */
    /* NAME=VALUE entries set last (an agent CLI's), replacing the base's;
     * NULL-terminated, or NULL. */
    const char *const *extra;
};
/* base (e.g. environ) with the ZERG_* task variables set, replacing any
 * already there; free with zerg_worker_argv_free.  NULL on OOM. */
char **zerg_worker_task_env(char *const *base, const struct zerg_task_env *e);

/* Parses a progress file's text: an integer 0..100 with optional
 * surrounding whitespace.  Returns it, or -1 when the text is not one. */
int zerg_worker_parse_progress(const char *text);

#endif
