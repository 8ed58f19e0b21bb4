/* policy.h - the recovery decisions, asked of Lua policies.
 *
 * The core calls these at each decision point with plain numbers; the
 * bridge (src/lua/policy.c) builds a snapshot, calls the bundled policy or
 * the project's override in .zerg/policies/, validates and clamps the answer
 * and returns it.  Any policy failure (syntax, runtime error, budget, memory,
 * wrong type) falls back to the bundled policy for that call, logs
 * `policy_error` and counts it; these functions never fail the caller.
 *
 * Every decision also returns `why`: a JSON object with the inputs, the
 * answer, the policy that decided ("bundled" or the override's path) and
 * its reason -- the `data` of the log event the caller writes.  The caller
 * owns *why (pass NULL to skip it). */
#ifndef ZERG_POLICY_H
#define ZERG_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include "zerg/json.h"

struct zerg_err;
struct zerg_config;
struct zerg_log;

struct zerg_policy;

/* Creates the VM, loads the bundled policies and the overrides found in
 * override_dir (may be NULL or missing).  A broken override at start is a
 * load error: returns NULL with err set (the CLI exits 2).  cfg and log must
 * outlive the policy; log may be NULL. */
struct zerg_policy *zerg_policy_new(const char *override_dir,
                                    const struct zerg_config *cfg,
                                    struct zerg_log *log, struct zerg_err *err);
void zerg_policy_free(struct zerg_policy *p); /* accepts NULL */

/* Re-reads override files whose mtime/size changed.  A new version that
 * fails to load keeps the last good one and logs policy_error.  Returns the
 * number of policies reloaded. */
int zerg_policy_reload(struct zerg_policy *p);

/* Policy failures so far (for metrics). */
int64_t zerg_policy_error_count(const struct zerg_policy *p);

/* For tests only: while on is non-zero every decision skips the override
 * and the bundled Lua and takes the fixed safe answer, the one a decision
 * falls back to when both fail (why.policy is "builtin", file "(built
 * in)").  Nothing is counted or logged as a
 * policy_error.  Off after zerg_policy_new; the core never turns it on. */
void zerg_policy_force_builtin(struct zerg_policy *p, int on);

/* backoff.delay(attempt, {strategy, base, max, kind}).  kind is "spawn" or
 * "task" and selects the config keys.  attempt >= 1.  Clamped to
 * [0, 1 h]. */
int64_t zerg_policy_backoff_ns(struct zerg_policy *p, const char *kind,
                               int attempt, zerg_json **why);

/* respawn.decide(slot, opts) */
struct zerg_respawn_in {
    int slot;
    int respawn_count; /* respawns of this slot so far */
    int exit_code;     /* -1 when killed by a signal */
    int signal;        /* 0 when exited */
    int64_t uptime_ns;
    int was_ready; /* reached its first heartbeat */
    int work_left; /* tasks still to run */
};
int zerg_policy_respawn(struct zerg_policy *p, const struct zerg_respawn_in *in,
                        zerg_json **why);

/* stale.task(task, now, opts): task = {id, worker, started, last_progress,
 * step, progress_pct}; times are monotonic seconds. */
int zerg_policy_stale_task(struct zerg_policy *p, const char *task_id,
                           int worker, int64_t started_ns,
                           int64_t last_progress_ns, int64_t now_ns,
                           zerg_json **why);

/* stale.worker(hb, now, opts): hb = {worker, seq, last_change}. */
int zerg_policy_stale_worker(struct zerg_policy *p, int worker, int64_t seq,
                             int64_t last_change_ns, int64_t now_ns,
                             zerg_json **why);

/* retry.decide(task, failure, opts) -> {retry, delay, charge} */
struct zerg_retry_in {
    const char *task_id;
    int retry_count;
    int crash_count;
    int attempt;
    const char *failure;       /* "exit" | "verification" | "timeout" |
                                  "crash" | "heartbeat_stale" | "scope" */
    const char *failure_class; /* DESIGN §14: "task" | "timeout" | "crash"
                                  | "conflict"; NULL = from the kind */
    int exit_code;             /* -1 when none */
    int signal;                /* 0 when none */
};
struct zerg_retry_out {
    int retry;        /* requeue the task */
    int64_t delay_ns; /* before it may run again (clamped to [0, 1 h]) */
    int charge;       /* counts against retry_attempts */
    int resume;       /* the next attempt continues the agent's session
                         (DESIGN §21), when its CLI can */
    char reason[64];  /* reason when not retried, e.g. "crash_loop" */
};
void zerg_policy_retry(struct zerg_policy *p, const struct zerg_retry_in *in,
                       struct zerg_retry_out *out, zerg_json **why);

/* reconcile.check(snapshot, opts) -> list of fixes.  snapshot is built by
 * the caller: {thorough, current_level, isolation ("worktree" or absent),
 * branch, tasks = {id = {status, level, graph_level, worker, worker_alive,
 * deps = [ids], commit, merged}}, levels = [{status, tasks, unfinished}]
 * (an array indexed by level - 1, or an object keyed "n"; Lua sees
 * levels[n] either way)}; commit and merged only on a thorough check under
 * worktree isolation.  Each fix names a task or a level, the fix and the
 * reason; fixes the C side does not know, and a rerun of a task the
 * snapshot does not show complete, are dropped and logged.  *fixes is
 * malloc'd (NULL when there are none): the caller free()s it.  Returns
 * 0. */
enum zerg_fix_kind {
    ZERG_FIX_REQUEUE,        /* task: claimed/in_progress on a dead worker */
    ZERG_FIX_SET_LEVEL,      /* task: its level is missing or wrong */
    ZERG_FIX_BLOCK,          /* task: queued behind a failed dependency */
    ZERG_FIX_REOPEN_LEVEL,   /* level: marked complete, work unfinished */
    ZERG_FIX_COMPLETE_LEVEL, /* level: all terminal, mark lost */
    ZERG_FIX_RERUN,          /* task: complete, its commit is no longer on
                                the integration branch */
};
struct zerg_fix {
    char task[72]; /* "" when it is a level fix */
    int level;     /* level fixed, or the new level for set_level */
    enum zerg_fix_kind kind;
    char fix[32]; /* the kind's name, as the policy spelled it */
    char reason[160];
};
int zerg_policy_reconcile(struct zerg_policy *p, const zerg_json *snapshot,
                          struct zerg_fix **fixes, size_t *nfixes,
                          zerg_json **why);

/* scope.decide(task, paths, opts) -> "allow" | "warn" | "fail", reason
 * (DESIGN §13): a task under worktree isolation changed paths outside its
 * files.create and files.modify.  task = {id, title, level, files =
 * {create, modify, read}}; paths = the out-of-scope paths (a list, sorted).
 * The bundled policy says "warn".  An unknown answer or a failed policy
 * falls back to the bundled decision.  *why as for the other hooks. */
enum zerg_scope_verdict {
    ZERG_SCOPE_ALLOW,
    ZERG_SCOPE_WARN,
    ZERG_SCOPE_FAIL,
};
struct zerg_task;
enum zerg_scope_verdict zerg_policy_scope(struct zerg_policy *p,
                                          const struct zerg_task *task,
                                          const char *const *paths,
                                          size_t npaths, char *reason,
                                          size_t reason_size, zerg_json **why);
const char *zerg_scope_verdict_name(enum zerg_scope_verdict v);

/* The other hooks of scope.lua, same arguments and answer (DESIGN §18):
 *   scope.config: paths of zerg's own configuration (.zerg/config.yaml,
 *   .zerg/policies/) the task's commit changed; bundled "warn" with
 *   "changes zerg's own configuration: review before merging (paths)".
 *   scope.missing: files.create paths that do not exist after a passing
 *   attempt; bundled "fail" with "missing_output: files.create not made:
 *   paths".
 * An override without the hook leaves it to the bundled policy. */
enum zerg_scope_hook {
    ZERG_SCOPE_DECIDE,
    ZERG_SCOPE_CONFIG,
    ZERG_SCOPE_MISSING,
};
enum zerg_scope_verdict
zerg_policy_scope_hook(struct zerg_policy *p, enum zerg_scope_hook hook,
                       const struct zerg_task *task, const char *const *paths,
                       size_t npaths, char *reason, size_t reason_size,
                       zerg_json **why);

/* The hooks the core calls, "backoff.delay", ... (NULL-terminated); the
 * wiring check compares them with what the policies define. */
extern const char *const zerg_policy_hooks[];

#endif
