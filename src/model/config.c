/* config.c - .zerg/config.yaml: the key table and what is derived from it
 * (the reflection rows, the defaults, freeing and copying, and the JSON view
 * of the effective configuration).
 *
 * One table (CONFIG_KEYS) is the single source of truth.  The loader
 * (config_load.c, config_value.c) finds keys in it, reads ranges ("1..256")
 * and enum names ("a|b|c") from its `allowed` column, and the defaults are
 * produced by loading its `dflt` column as a YAML document through that
 * same loader - so a default that the loader would reject cannot ship, and
 * the docs tests that read zerg_config_keys() see exactly what the loader
 * enforces. */
#include "zerg/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/err.h"
#include "zerg/log.h"

#include "config_internal.h"

#define DURATION_RANGE "0.001..604800" /* 1 ms to 7 days */

/* X(path, kind, field, flags, default as YAML, allowed, help).  Rows of one
 * section stay together; their order is the order of the docs and JSON. */
#define CONFIG_KEYS(X)                                                         \
    X("resilience.enabled", BOOL, resilience_enabled, 0, "true", "true|false", \
      "Master switch for spawn retries, stale detection, worker respawn "      \
      "and state reconciliation.")                                             \
    X("resilience.reconcile_interval_seconds", DURATION,                       \
      reconcile_interval_ns, 0, "60", DURATION_RANGE,                          \
      "How often the state document is checked against the tasks and "         \
      "workers and divergences are repaired.")                                 \
    X("rush.isolation", ENUM, rush_isolation, 0, "auto", "auto|worktree|none", \
      "worktree: each worker in its own git worktree, a commit per task, "     \
      "merged into zerg/{feature}/integration; none: every worker in the "     \
      "project tree; auto: worktree in a git repository with a commit.")       \
    X("rush.base", STRING, rush_base, 0, "\"\"", "\"\" or a git revision",     \
      "Where the integration branch starts on a fresh run; empty means HEAD "  \
      "when the rush starts.")                                                 \
    X("rush.max_cost_usd", NUMBER, rush_max_cost_usd, 0, "0", "0..1000000",    \
      "Stop claiming new tasks once the run's recorded agent spend reaches "   \
      "this many US dollars (running tasks finish); 0 means no cap.")          \
    X("rush.cost_cap_action", ENUM, rush_cost_cap_action, 0, "finish",         \
      "finish|stop",                                                           \
      "What reaching rush.max_cost_usd does (spend in flight included): "      \
      "finish lets running attempts end and claims nothing new; stop stops "   \
      "them too, gracefully (they are pending again for --resume).")           \
    X("rush.timeout_seconds", DURATION, rush_timeout_ns, 0, "0", "0..604800",  \
      "Wall-clock budget of one zerg rush: when it runs out the running "      \
      "tasks are stopped, the state is saved and the rush exits 1 (finish "    \
      "with zerg rush --resume); 0 means no limit.")                           \
    X("rush.schedule", ENUM, rush_schedule, 0, "levels", "levels|dag",         \
      "levels: a level starts once the previous one is complete; dag: a "      \
      "task starts as soon as its own dependencies are complete (merged "      \
      "under worktree isolation); levels stay the unit of reconciliation, "    \
      "gates and status.")                                                     \
    X("rush.review", BOOL, rush_review, 0, "false", "true|false",              \
      "true: a passing, committed task waits as awaiting_review and is "       \
      "merged only once `zerg approve` says so (`zerg redo --note` runs it "   \
      "again); needs worktree isolation.")                                     \
    X("workers.max_concurrent", INT, workers_max_concurrent, 0, "3", "1..256", \
      "Workers to run when zerg rush is given no --workers.")                  \
    X("workers.mode", ENUM, workers_mode, 0, "subprocess",                     \
      "subprocess|container|auto|slurm",                                       \
      "Where workers run when zerg rush is given no --mode; auto uses "        \
      "containers when a runtime answers and the image exists (never "         \
      "slurm).")                                                               \
    X("workers.spawn_retry_attempts", INT, spawn_retry_attempts, 0, "3",       \
      "0..100",                                                                \
      "Retries after a failed worker spawn before the slot is retired "        \
      "(attempts = retries + 1); the rush fails only when no worker is "       \
      "left.")                                                                 \
    X("workers.spawn_backoff_strategy", ENUM, spawn_backoff_strategy, 0,       \
      "exponential", "exponential|linear|fixed",                               \
      "How the delay before spawn retry n grows: base*2^(n-1), base*n or "     \
      "base, capped at the max.")                                              \
    X("workers.spawn_backoff_base_seconds", DURATION, spawn_backoff_base_ns,   \
      0, "2", DURATION_RANGE, "Delay before the first spawn retry.")           \
    X("workers.spawn_backoff_max_seconds", DURATION, spawn_backoff_max_ns, 0,  \
      "30", DURATION_RANGE,                                                    \
      "Upper bound on any spawn retry delay; must be at least the base.")      \
    X("workers.spawn_ready_timeout_seconds", DURATION, spawn_ready_timeout_ns, \
      0, "30", DURATION_RANGE,                                                 \
      "Time a started worker has to write its first heartbeat before the "     \
      "spawn counts as failed.")                                               \
    X("workers.task_stale_timeout_seconds", DURATION, task_stale_timeout_ns,   \
      0, "600", DURATION_RANGE,                                                \
      "An in_progress task without progress for this long is stale: its "      \
      "worker is killed and the failure (a timeout) is charged to the "        \
      "task's retries.")                                                       \
    X("workers.heartbeat_interval_seconds", DURATION, heartbeat_interval_ns,   \
      0, "30", DURATION_RANGE,                                                 \
      "How often a worker writes its heartbeat; must be less than "            \
      "heartbeat_stale_threshold.")                                            \
    X("workers.heartbeat_stale_threshold", DURATION,                           \
      heartbeat_stale_threshold_ns, 0, "120", DURATION_RANGE,                  \
      "Seconds (despite the name) a worker's heartbeat may stay unchanged "    \
      "before the worker is stale.")                                           \
    X("workers.lease_stale_seconds", DURATION, lease_stale_ns, 0, "10",        \
      "2..604800",                                                             \
      "How long the orchestrator's lease (renewed every second) may stay "     \
      "unchanged before a worker checks that its orchestrator still holds "    \
      "the rush lock; a stopped or slow one does and keeps its workers.")      \
    X("workers.stop_grace_seconds", DURATION, stop_grace_ns, 0, "10",          \
      "0..3600",                                                               \
      "When a rush is stopped (zerg stop, Ctrl-C, --halt now, a timeout), "    \
      "how long each running task has between SIGTERM to its process group "   \
      "and SIGKILL; 0 kills at once.")                                         \
    X("workers.auto_respawn", BOOL, auto_respawn, 0, "true", "true|false",     \
      "Replace a worker that exits or goes stale while tasks remain.")         \
    X("workers.max_respawn_attempts", INT, max_respawn_attempts, 0, "5",       \
      "0..1000", "Respawns allowed per worker slot before it is retired.")     \
    X("workers.retry_attempts", INT, retry_attempts, 0, "3", "0..100",         \
      "Retries of a failed task before it is failed permanently.")             \
    X("workers.backoff_strategy", ENUM, backoff_strategy, 0, "exponential",    \
      "exponential|linear|fixed",                                              \
      "How the delay before task retry n grows (same formulas as "             \
      "spawn_backoff_strategy).")                                              \
    X("workers.backoff_base_seconds", DURATION, backoff_base_ns, 0, "30",      \
      DURATION_RANGE, "Delay before a failed task's first retry.")             \
    X("workers.backoff_max_seconds", DURATION, backoff_max_ns, 0, "300",       \
      DURATION_RANGE,                                                          \
      "Upper bound on any task retry delay; must be at least the base.")       \
    X("workers.max_task_crashes", INT, max_task_crashes, 0, "3", "1..100",     \
      "Worker crashes under one task that are retried, uncharged; the next "   \
      "one fails the task as a crash loop (with 2, the third crash).")         \
    X("workers.conflict_retry_attempts", INT, conflict_retry_attempts, 0, "2", \
      "0..100",                                                                \
      "Retries of a task whose commit conflicts with the integration branch "  \
      "(worktree isolation), counted apart from retry_attempts.")              \
    X("workers.output_is_progress", BOOL, output_is_progress, 0, "true",       \
      "true|false",                                                            \
      "A task that keeps writing output is making progress: it is not "        \
      "stale while its output grows.")                                         \
    X("workers.launch_prefix", ARGV, launch_prefix, 0, "[]",                   \
      "list of strings",                                                       \
      "Argv put in front of the worker command in subprocess mode, e.g. "      \
      "[nice, -n, \"10\"].")                                                   \
    X("workers.executor", ARGV, executor, F_NONEMPTY | F_SPLIT,                \
      "[claude, --print, --dangerously-skip-permissions]",                     \
      "non-empty list of strings, or a string split on whitespace",            \
      "Command run for a task without a command field; the task prompt is "    \
      "appended as its last argument.")                                        \
    X("executor.kind", ENUM, executor_kind, 0, "claude",                       \
      "claude|command|codex|gemini",                                           \
      "How a task without a command runs: claude, codex and gemini drive "     \
      "that agent CLI (its stream's progress, tokens and cost, failure "       \
      "classes, the prompt on stdin); command runs workers.executor with "     \
      "the prompt appended.")                                                  \
    X("executor.claude", STRING, executor_claude, F_NONEMPTY, "claude",        \
      "command name or path",                                                  \
      "The Claude Code CLI to run (executor.kind: "                            \
      "claude).")                                                              \
    X("executor.codex", STRING, executor_codex, F_NONEMPTY, "codex",           \
      "command name or path", "The Codex CLI to run (executor.kind: codex).")  \
    X("executor.gemini", STRING, executor_gemini, F_NONEMPTY, "gemini",        \
      "command name or path",                                                  \
      "The Gemini CLI to run (executor.kind: gemini).")                        \
    X("executor.args", ARGV, executor_args, 0, "[]", "list of strings",        \
      "Extra arguments for the agent CLI, after zerg's own, e.g. [--model, "   \
      "sonnet].")                                                              \
    X("executor.pricing", ARGV, executor_pricing, 0, "[]",                     \
      "list of MODEL=IN/OUT/CACHE_READ/CACHE_WRITE",                           \
      "US dollars per million tokens by model (a trailing * matches a "        \
      "prefix), e.g. [\"claude-opus-5-5=15/75/1.5/18.75\"]: prices an "        \
      "attempt whose CLI reported no cost (killed before its result) and "     \
      "the spend of running attempts for rush.max_cost_usd; such costs are "   \
      "marked estimated.")                                                     \
    X("executor.exit_grace_seconds", DURATION, executor_exit_grace_ns, 0, "5", \
      "0.001..3600",                                                           \
      "After the agent's terminal event (Claude Code's result) the CLI has "   \
      "this long to exit; then it is sent TERM and, 2 s later, KILL, and "     \
      "the result stands (a CLI that hangs after its answer is not stale).")   \
    X("container.runtime", STRING, container_runtime, F_NONEMPTY, "auto",      \
      "auto|docker|podman|PATH",                                               \
      "Container CLI: docker, podman, the path of a compatible CLI, or auto "  \
      "for the first of podman and docker that answers.")                      \
    X("container.image", STRING, container_image, F_NONEMPTY | F_NOSPACE,      \
      "zerg-worker", "image reference", "Image each worker container runs.")   \
    X("container.run_args", ARGV, container_run_args, 0, "[]",                 \
      "list of strings",                                                       \
      "Extra arguments for the runtime's run command, placed before the "      \
      "image.")                                                                \
    X("container.memory", STRING, container_memory, F_SIZE, "\"\"",            \
      "\"\" or a size: 512m, 2g (units b, k, m, g)",                           \
      "Memory limit per worker container (--memory); empty means no "          \
      "limit.")                                                                \
    X("container.cpus", NUMBER, container_cpus, 0, "0", "0..1024",             \
      "CPU limit per worker container (--cpus), fractions allowed; 0 means "   \
      "no limit.")                                                             \
    X("container.pids_limit", INT, container_pids_limit, 0, "0", "0..4194304", \
      "Process limit per worker container (--pids-limit); 0 means no "         \
      "limit.")                                                                \
    X("gates.on_host", BOOL, gates_on_host, 0, "false", "true|false",          \
      "Run quality gates on the host in container mode too. Unsafe: a gate "   \
      "runs what tasks wrote (a Makefile, a test script) with your rights "    \
      "on the host; by default container mode runs each gate in a "            \
      "container of the workers' image and runtime.")                          \
    X("slurm.partition", STRING, slurm_partition, 0, "\"\"",                   \
      "\"\" or a partition name",                                              \
      "Partition of the worker jobs in slurm mode (srun --partition); "        \
      "empty means the cluster's default.")                                    \
    X("slurm.account", STRING, slurm_account, 0, "\"\"",                       \
      "\"\" or an account name",                                               \
      "Account the worker jobs are charged to (srun --account); empty "        \
      "means the user's default.")                                             \
    X("slurm.time_limit", STRING, slurm_time_limit, F_NOSPACE, "\"\"",         \
      "\"\" or a Slurm time: MM, HH:MM:SS, D-HH",                              \
      "Time limit of each worker job (srun --time); a worker that reaches "    \
      "it is ended by Slurm and replaced like a crashed one.")                 \
    X("slurm.extra_args", ARGV, slurm_extra_args, 0, "[]", "list of strings",  \
      "Extra srun arguments, placed before -N1 -n1 and the worker command, "   \
      "e.g. [--qos, high, --mem, 4G].")                                        \
    X("state.watch", ENUM, state_watch, 0, "auto", "auto|inotify|poll",        \
      "How the orchestrator notices workers' files: inotify, polling the "     \
      "state directory, or auto (polling where statfs says it is on NFS, "     \
      "CIFS, FUSE or another filesystem inotify cannot see remote writes "     \
      "on).")                                                                  \
    X("state.poll_interval_ms", INT, state_poll_interval_ms, 0, "100",         \
      "10..5000", "How often the state directory is scanned when polling.")    \
    X("state.durability", ENUM, state_durability, 0, "batch", "batch|full",    \
      "batch: workers write results without fsync and the orchestrator "       \
      "makes each batch durable with one sync (at most every 10 ms) "          \
      "before deleting them; a power loss can lose the last batch, which "     \
      "--resume runs again. full: every result is fsynced as it is "           \
      "written.")                                                              \
    X("policies.instruction_budget", INT64, policy_instruction_budget, 0,      \
      "1000000", "1000..1000000000",                                           \
      "Lua VM instructions one policy call may run before it is stopped "      \
      "and the bundled decision is used.")                                     \
    X("policies.time_budget_seconds", DURATION, policy_time_budget_ns, 0,      \
      "0.1", "0.001..60",                                                      \
      "CPU time one policy call may use before it is stopped and the "         \
      "bundled decision is used.")                                             \
    X("policies.memory_mb", MIB, policy_memory_bytes, 0, "32", "1..4096",      \
      "Memory cap of each policy Lua VM, in MiB.")                             \
    X("logging.max_size_mb", MIB, log_max_size_bytes, 0, "50", "0..1048576",   \
      "monitor.log or monitor.jsonl past this size is renamed to NAME.1 and "  \
      "started again (at rush start, and while a subprocess-mode rush "        \
      "runs); 0 means never.")                                                 \
    X("logging.keep", INT, log_keep, 0, "3", "1..100",                         \
      "Rotated files kept per log (NAME.1 newest ... NAME.keep oldest).")      \
    X("logging.level", ENUM, log_level, 0, "info", "debug|info|warn|error",    \
      "Lowest level written to monitor.log and monitor.jsonl (warning is "     \
      "accepted for warn).")

#define TYPE_BOOL "bool"
#define TYPE_INT "int"
#define TYPE_INT64 "int"
#define TYPE_MIB "int"
#define TYPE_DURATION "duration"
#define TYPE_ENUM "enum"
#define TYPE_STRING "string"
#define TYPE_ARGV "argv"
#define TYPE_NUMBER "number"

#define PUBLIC_ROW(path, kind, field, flags, dflt, allowed, help)              \
    {path, TYPE_##kind, dflt, allowed, help},
const struct zerg_config_key config_key_rows[NKEYS] = {CONFIG_KEYS(PUBLIC_ROW)};

#define BIND_ROW(path, kind, field, flags, dflt, allowed, help)                \
    {K_##kind, offsetof(struct zerg_config, field), flags},
const struct key_bind config_key_binds[NKEYS] = {CONFIG_KEYS(BIND_ROW)};
_Static_assert(sizeof config_key_rows / sizeof config_key_rows[0] == NKEYS,
               "NKEYS in config_internal.h counts the rows of CONFIG_KEYS");

/* Each field has the size its kind writes (enums are stored as int). */
#define SIZE_BOOL sizeof(int)
#define SIZE_INT sizeof(int)
#define SIZE_INT64 sizeof(int64_t)
#define SIZE_MIB sizeof(int64_t)
#define SIZE_DURATION sizeof(int64_t)
#define SIZE_ENUM sizeof(int)
#define SIZE_STRING sizeof(char *)
#define SIZE_ARGV sizeof(struct zerg_argv)
#define SIZE_NUMBER sizeof(double)
#define CHECK_ROW(path, kind, field, flags, dflt, allowed, help)               \
    _Static_assert(sizeof(((struct zerg_config *)0)->field) == SIZE_##kind,    \
                   path);
CONFIG_KEYS(CHECK_ROW)

static const char *const backoff_names[] = {"exponential", "linear", "fixed"};
static const char *const mode_names[] = {"subprocess", "container", "auto",
                                         "slurm"};

const char *zerg_backoff_name(enum zerg_backoff b)
{
    return (unsigned)b < 3 ? backoff_names[b] : "?";
}

const char *zerg_mode_name(enum zerg_mode m)
{
    return (unsigned)m < 4 ? mode_names[m] : "?";
}

int zerg_mode_parse(const char *s, enum zerg_mode *out)
{
    for (int i = 0; i < 4; i++) {
        if (s && strcmp(s, mode_names[i]) == 0) {
            *out = (enum zerg_mode)i;
            return 0;
        }
    }
    return -EINVAL;
}

const struct zerg_config_key *zerg_config_keys(size_t *n)
{
    if (n)
        *n = NKEYS;
    return config_key_rows;
}

/* ---- table lookups ----------------------------------------------------
 */

/* The idx-th name of an allowed list; its length goes to *len. */
static const char *enum_name(const char *allowed, int idx, size_t *len)
{
    const char *p = allowed;
    for (int k = 0; k < idx && p; k++) {
        p = strchr(p, '|');
        p = p ? p + 1 : NULL;
    }
    if (!p) {
        *len = 1;
        return "?";
    }
    const char *bar = strchr(p, '|');
    *len = bar ? (size_t)(bar - p) : strlen(p);
    return p;
}

/* ---- owned values -----------------------------------------------------
 */

void config_argv_free(struct zerg_argv *a)
{
    for (size_t k = 0; a->v && k < a->n; k++)
        free(a->v[k]);
    free(a->v);
    a->v = NULL;
    a->n = 0;
}

/* An argv of n empty slots (v[n] == NULL), or -ENOMEM. */
int config_argv_alloc(struct zerg_argv *a, size_t n)
{
    a->v = calloc(n + 1, sizeof *a->v);
    a->n = 0;
    return a->v ? 0 : -ENOMEM;
}

static int argv_dup(struct zerg_argv *dst, const struct zerg_argv *src)
{
    if (!src->v) {
        *dst = (struct zerg_argv){0};
        return 0;
    }
    if (config_argv_alloc(dst, src->n) < 0)
        return -ENOMEM;
    for (; dst->n < src->n; dst->n++) {
        dst->v[dst->n] = strdup(src->v[dst->n]);
        if (!dst->v[dst->n]) {
            config_argv_free(dst);
            return -ENOMEM;
        }
    }
    return 0;
}

void zerg_config_free(struct zerg_config *c)
{
    if (!c)
        return;
    config_gates_free(c);
    for (size_t i = 0; i < NKEYS; i++) {
        if (config_key_binds[i].kind == K_STRING) {
            char **s = field_of(c, i);
            free(*s);
            *s = NULL;
        } else if (config_key_binds[i].kind == K_ARGV) {
            config_argv_free(field_of(c, i));
        }
    }
}

int config_copy(struct zerg_config *dst, const struct zerg_config *src)
{
    *dst = *src;
    dst->gates = NULL;
    dst->ngates = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        if (config_key_binds[i].kind == K_STRING)
            *(char **)field_of(dst, i) = NULL;
        else if (config_key_binds[i].kind == K_ARGV)
            *(struct zerg_argv *)field_of(dst, i) = (struct zerg_argv){0};
    }
    for (size_t i = 0; i < NKEYS; i++) {
        int rc = 0;
        if (config_key_binds[i].kind == K_STRING) {
            const char *s = *(char *const *)cfield_of(src, i);
            char **d = field_of(dst, i);
            *d = s ? strdup(s) : NULL;
            rc = s && !*d ? -ENOMEM : 0;
        } else if (config_key_binds[i].kind == K_ARGV) {
            rc = argv_dup(field_of(dst, i), cfield_of(src, i));
        }
        if (rc < 0) {
            zerg_config_free(dst);
            return rc;
        }
    }
    if (config_gates_copy(dst, src) < 0) {
        zerg_config_free(dst);
        return -ENOMEM;
    }
    return 0;
}

/* The defaults are the table's dflt column, loaded as YAML. */
void zerg_config_defaults(struct zerg_config *c)
{
    char text[8192];
    size_t n = 0;
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NKEYS && n < sizeof text; i++) {
        const char *p = config_key_rows[i].path;
        int sn = (int)section_len(p);
        if (is_section_start(i))
            n += (size_t)snprintf(text + n, sizeof text - n, "%.*s:\n", sn, p);
        if (n < sizeof text)
            n += (size_t)snprintf(text + n, sizeof text - n, "  %s: %s\n",
                                  leaf_of(i), config_key_rows[i].dflt);
    }
    struct zerg_err err = {0};
    if (n >= sizeof text ||
        zerg_config_load_string(c, "built-in defaults", text, n, NULL, NULL,
                                &err) != 0) {
        /* Only a broken table row or out-of-memory gets here. */
        fprintf(stderr, "zerg: cannot set config defaults: %s\n", err.msg);
        abort();
    }
}

/* ---- JSON view --------------------------------------------------------
 */

static zerg_json *argv_json(const struct zerg_argv *a)
{
    zerg_json *arr = zerg_json_arr();
    for (size_t k = 0; arr && a->v && k < a->n; k++) {
        if (zerg_json_push(arr, zerg_json_str(a->v[k])) < 0) {
            zerg_json_free(arr);
            return NULL;
        }
    }
    return arr;
}

static zerg_json *value_json(const struct zerg_config *c, size_t i)
{
    const void *f = cfield_of(c, i);
    int e;
    size_t len;
    const char *name;
    switch (config_key_binds[i].kind) {
    case K_BOOL:
        return zerg_json_bool(*(const int *)f);
    case K_INT:
        return zerg_json_num(*(const int *)f);
    case K_INT64:
        return zerg_json_num((double)*(const int64_t *)f);
    case K_MIB:
        return zerg_json_num((double)*(const int64_t *)f / (1024 * 1024));
    case K_DURATION:
        return zerg_json_num((double)*(const int64_t *)f / 1e9);
    case K_NUMBER:
        return zerg_json_num(*(const double *)f);
    case K_ENUM:
        memcpy(&e, f, sizeof e);
        name = enum_name(config_key_rows[i].allowed, e, &len);
        return zerg_json_strn(name, len);
    case K_STRING:
        return zerg_json_str(*(char *const *)f);
    case K_ARGV:
        return argv_json(f);
    }
    return NULL;
}

zerg_json *zerg_config_to_json(const struct zerg_config *c)
{
    zerg_json *root = zerg_json_obj(), *sec = NULL;
    for (size_t i = 0; root && i < NKEYS; i++) {
        if (is_section_start(i)) {
            char name[64];
            snprintf(name, sizeof name, "%.*s",
                     (int)section_len(config_key_rows[i].path),
                     config_key_rows[i].path);
            sec = zerg_json_obj();
            if (zerg_json_set(root, name, sec) < 0)
                goto fail;
        }
        zerg_json *v = value_json(c, i);
        if (!v || zerg_json_set(sec, leaf_of(i), v) < 0)
            goto fail;
    }
    zerg_json *gates = config_gates_json(c);
    if (!root || !gates || zerg_json_set(root, "quality_gates", gates) < 0)
        goto fail;
    return root;
fail:
    zerg_json_free(root);
    return NULL;
}
