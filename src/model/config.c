/* config.c - .zerg/config.yaml: the key table, the libyaml loader, the
 * reflection rows and the JSON view of the effective configuration.
 *
 * One table (CONFIG_KEYS) is the single source of truth.  The loader finds
 * keys in it, reads ranges ("1..256") and enum names ("a|b|c") from its
 * `allowed` column, and the defaults are produced by loading its `dflt`
 * column as a YAML document through that same loader - so a default that
 * the loader would reject cannot ship, and the docs tests that read
 * zerg_config_keys() see exactly what the loader enforces.
 *
 * Loading is all-or-nothing: keys are applied to a copy that replaces the
 * caller's config only when the whole file is valid. */
#include "zerg/config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "zerg/err.h"
#include "zerg/text.h"
#include "zerg/log.h"

/* A config file is a few KB; 1 MiB bounds parser memory on hostile input. */
#define CONFIG_MAX_BYTES (1024 * 1024)
/* Deeper nesting and more anchors are rejected (see check_shape). */
#define MAX_DEPTH 32
#define MAX_ANCHORS 100
/* Past this many unknown-key warnings only a count is reported. */
#define MAX_WARNINGS 32

/* How a key's YAML value becomes its field. */
enum kind {
    K_BOOL,     /* int: YAML 1.1 true/false/yes/no/on/off */
    K_INT,      /* int within the allowed range */
    K_INT64,    /* int64_t within the allowed range */
    K_MIB,      /* int64_t bytes, written in MiB */
    K_DURATION, /* int64_t ns, written in seconds (fractions allowed) */
    K_ENUM,     /* int: index of the value in the allowed "a|b|c" list */
    K_STRING,   /* char * */
    K_ARGV,     /* struct zerg_argv */
    K_NUMBER,   /* double within the allowed range */
};

/* Extra checks for strings and argvs. */
enum {
    F_NONEMPTY = 1, /* "" or [] is rejected */
    F_NOSPACE = 2,  /* no whitespace (image references) */
    F_SIZE = 4,     /* "" or a container size such as 512m or 2g */
    F_SPLIT = 8,    /* argv: a string is split on whitespace */
};

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
    X("workers.max_concurrent", INT, workers_max_concurrent, 0, "3", "1..256", \
      "Workers to run when zerg rush is given no --workers.")                  \
    X("workers.mode", ENUM, workers_mode, 0, "subprocess",                     \
      "subprocess|container|auto",                                             \
      "Where workers run when zerg rush is given no --mode; auto uses "        \
      "containers when a runtime answers and the image exists.")               \
    X("workers.spawn_retry_attempts", INT, spawn_retry_attempts, 0, "3",       \
      "0..100",                                                                \
      "Retries after a failed worker spawn before the run fails "              \
      "(attempts = retries + 1).")                                             \
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
      "An in_progress task without progress for this long is stale and is "    \
      "reassigned.")                                                           \
    X("workers.heartbeat_interval_seconds", DURATION, heartbeat_interval_ns,   \
      0, "30", DURATION_RANGE,                                                 \
      "How often a worker writes its heartbeat; must be less than "            \
      "heartbeat_stale_threshold.")                                            \
    X("workers.heartbeat_stale_threshold", DURATION,                           \
      heartbeat_stale_threshold_ns, 0, "120", DURATION_RANGE,                  \
      "Seconds (despite the name) a worker's heartbeat may stay unchanged "    \
      "before the worker is stale.")                                           \
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
      "Worker crashes while running one task before that task fails as a "     \
      "crash loop.")                                                           \
    X("workers.launch_prefix", ARGV, launch_prefix, 0, "[]",                   \
      "list of strings",                                                       \
      "Argv put in front of the worker command in subprocess mode, e.g. "      \
      "[nice, -n, \"10\"].")                                                   \
    X("workers.executor", ARGV, executor, F_NONEMPTY | F_SPLIT,                \
      "[claude, --print, --dangerously-skip-permissions]",                     \
      "non-empty list of strings, or a string split on whitespace",            \
      "Command run for a task without a command field; the task prompt is "    \
      "appended as its last argument.")                                        \
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
static const struct zerg_config_key key_rows[] = {CONFIG_KEYS(PUBLIC_ROW)};

struct key_bind {
    enum kind kind;
    size_t off;
    unsigned flags;
};
#define BIND_ROW(path, kind, field, flags, dflt, allowed, help)                \
    {K_##kind, offsetof(struct zerg_config, field), flags},
static const struct key_bind key_binds[] = {CONFIG_KEYS(BIND_ROW)};

#define NKEYS (sizeof key_rows / sizeof key_rows[0])

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

/* Keys ZERG reads that zerg has no use for: warned about without a
 * misleading "did you mean". */
static const char *const upstream_keys[] = {
    "project",
    "ports",
    "quality_gates",
    "mcp_servers",
    "resources",
    "security",
    "plugins",
    "rules",
    "efficiency",
    "improvement_loops",
    "verification",
    "behavioral_modes",
    "mcp_routing",
    "tdd",
    "error_recovery",
    "workers.timeout_minutes",
    "workers.context_threshold_percent",
    "logging.directory",
    "logging.retain_days",
};

/* ZERG keys with a differently named zerg equivalent. */
static const struct {
    const char *upstream, *zerg;
} renamed_keys[] = {
    {"workers.launcher_type", "workers.mode"},
};

/* Accepted spellings outside an enum's allowed list. */
static const struct {
    const char *path, *alias, *canonical;
} enum_aliases[] = {
    {"logging.level", "warning", "warn"}, /* ZERG's spelling */
};

static const char *const backoff_names[] = {"exponential", "linear", "fixed"};
static const char *const mode_names[] = {"subprocess", "container", "auto"};

const char *zerg_backoff_name(enum zerg_backoff b)
{
    return (unsigned)b < 3 ? backoff_names[b] : "?";
}

const char *zerg_mode_name(enum zerg_mode m)
{
    return (unsigned)m < 3 ? mode_names[m] : "?";
}

int zerg_mode_parse(const char *s, enum zerg_mode *out)
{
    for (int i = 0; i < 3; i++) {
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
    return key_rows;
}

/* ---- table lookups ---------------------------------------------------- */

static size_t section_len(const char *path)
{
    return (size_t)(strchr(path, '.') - path);
}

static const char *leaf_of(size_t i)
{
    return key_rows[i].path + section_len(key_rows[i].path) + 1;
}

static int same_section(size_t a, size_t b)
{
    size_t n = section_len(key_rows[a].path);
    return n == section_len(key_rows[b].path) &&
           memcmp(key_rows[a].path, key_rows[b].path, n) == 0;
}

static int is_section_start(size_t i)
{
    return i == 0 || !same_section(i - 1, i);
}

/* Index of the first key of section name[0..n), or -1. */
static long section_find(const char *name, size_t n)
{
    for (size_t i = 0; i < NKEYS; i++) {
        if (is_section_start(i) && section_len(key_rows[i].path) == n &&
            memcmp(key_rows[i].path, name, n) == 0)
            return (long)i;
    }
    return -1;
}

/* Index of key leaf[0..n) in the section starting at first, or -1. */
static long key_find_in(size_t first, const char *leaf, size_t n)
{
    for (size_t i = first; i < NKEYS && same_section(first, i); i++) {
        if (strlen(leaf_of(i)) == n && memcmp(leaf_of(i), leaf, n) == 0)
            return (long)i;
    }
    return -1;
}

static long key_find(const char *path)
{
    for (size_t i = 0; i < NKEYS; i++) {
        if (strcmp(key_rows[i].path, path) == 0)
            return (long)i;
    }
    return -1;
}

static void *field_of(struct zerg_config *c, size_t i)
{
    return (char *)c + key_binds[i].off;
}

static const void *cfield_of(const struct zerg_config *c, size_t i)
{
    return (const char *)c + key_binds[i].off;
}

/* Reads "lo..hi" from an allowed column. */
static void range_of(size_t i, double *lo, double *hi)
{
    char buf[64];
    const char *a = key_rows[i].allowed, *dots = strstr(a, "..");
    size_t n = dots ? (size_t)(dots - a) : 0;
    if (!dots || n >= sizeof buf)
        abort(); /* a malformed table row; the defaults test catches it */
    memcpy(buf, a, n);
    buf[n] = '\0';
    *lo = strtod(buf, NULL);
    *hi = strtod(dots + 2, NULL);
}

/* Position of s[0..n) in the allowed list "a|b|c", or -1. */
static int enum_index(const char *allowed, const char *s, size_t n)
{
    const char *p = allowed;
    for (int idx = 0;; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && memcmp(p, s, n) == 0)
            return idx;
        if (!bar)
            return -1;
        p = bar + 1;
    }
}

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

/* ---- owned values ----------------------------------------------------- */

static void argv_free(struct zerg_argv *a)
{
    for (size_t k = 0; a->v && k < a->n; k++)
        free(a->v[k]);
    free(a->v);
    a->v = NULL;
    a->n = 0;
}

/* An argv of n empty slots (v[n] == NULL), or -ENOMEM. */
static int argv_alloc(struct zerg_argv *a, size_t n)
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
    if (argv_alloc(dst, src->n) < 0)
        return -ENOMEM;
    for (; dst->n < src->n; dst->n++) {
        dst->v[dst->n] = strdup(src->v[dst->n]);
        if (!dst->v[dst->n]) {
            argv_free(dst);
            return -ENOMEM;
        }
    }
    return 0;
}

void zerg_config_free(struct zerg_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < NKEYS; i++) {
        if (key_binds[i].kind == K_STRING) {
            char **s = field_of(c, i);
            free(*s);
            *s = NULL;
        } else if (key_binds[i].kind == K_ARGV) {
            argv_free(field_of(c, i));
        }
    }
}

/* Deep copy; on failure dst holds nothing that needs freeing. */
static int config_copy(struct zerg_config *dst, const struct zerg_config *src)
{
    *dst = *src;
    for (size_t i = 0; i < NKEYS; i++) {
        if (key_binds[i].kind == K_STRING)
            *(char **)field_of(dst, i) = NULL;
        else if (key_binds[i].kind == K_ARGV)
            *(struct zerg_argv *)field_of(dst, i) = (struct zerg_argv){0};
    }
    for (size_t i = 0; i < NKEYS; i++) {
        int rc = 0;
        if (key_binds[i].kind == K_STRING) {
            const char *s = *(char *const *)cfield_of(src, i);
            char **d = field_of(dst, i);
            *d = s ? strdup(s) : NULL;
            rc = s && !*d ? -ENOMEM : 0;
        } else if (key_binds[i].kind == K_ARGV) {
            rc = argv_dup(field_of(dst, i), cfield_of(src, i));
        }
        if (rc < 0) {
            zerg_config_free(dst);
            return rc;
        }
    }
    return 0;
}

/* ---- the loader ------------------------------------------------------- */

struct loader {
    const char *name; /* file name for messages */
    const char *text;
    size_t len;
    zerg_warn_fn warn;
    void *ud;
    struct zerg_err *err;
    yaml_document_t *doc;
    struct zerg_config cfg; /* the candidate */
    /* Per row: was the key set, and where (for duplicate and cross-key
     * messages); sections are tracked at their first row. */
    unsigned char key_seen[NKEYS], section_seen[NKEYS];
    yaml_mark_t key_mark[NKEYS], value_mark[NKEYS], section_mark[NKEYS];
    unsigned nwarn;
};

/* Appends "FILE:LINE:COL: " (1-based) and the message to err. */
static int failf(struct loader *L, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int failf(struct loader *L, yaml_mark_t m, const char *fmt, ...)
{
    char msg[ZERG_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return zerg_err_set(L->err, ZERG_EINVAL_INPUT, "%s:%zu:%zu: %s", L->name,
                        m.line + 1, m.column + 1, msg);
}

/* The mark of byte offset off (for reader errors, which carry none). */
static yaml_mark_t mark_at(const struct loader *L, size_t off)
{
    yaml_mark_t m = {off, 0, 0};
    for (size_t k = 0; k < off && k < L->len; k++) {
        if (L->text[k] == '\n') {
            m.line++;
            m.column = 0;
        } else if (((unsigned char)L->text[k] & 0xC0) != 0x80) {
            m.column++; /* count characters, not UTF-8 continuation bytes */
        }
    }
    return m;
}

static int is_null(const yaml_node_t *v)
{
    if (v->type != YAML_SCALAR_NODE ||
        v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *s = (const char *)v->data.scalar.value;
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") ||
           !strcmp(s, "NULL");
}

/* Copies a scalar for display: at most ~40 bytes, control bytes as '?'. */
static void show_scalar(const yaml_node_t *v, char *buf, size_t size)
{
    const unsigned char *s = v->data.scalar.value;
    size_t n = v->data.scalar.length, max = size < 44 ? size - 4 : 40, k;
    for (k = 0; k < n && k < max; k++)
        buf[k] = s[k] < 0x20 || s[k] == 0x7f ? '?' : (char)s[k];
    if (k < n) {
        memcpy(buf + k, "...", 3);
        k += 3;
    }
    buf[k] = '\0';
}

/* "'text'", "a list", "a mapping" or "nothing (null)". */
static const char *describe(const yaml_node_t *v, char *buf, size_t size)
{
    if (v->type == YAML_SEQUENCE_NODE)
        return "a list";
    if (v->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (is_null(v))
        return "nothing (null)";
    char text[48];
    show_scalar(v, text, sizeof text);
    snprintf(buf, size, "'%s'", text);
    return buf;
}

/* What a key accepts, for "expected ..." (built from the table). */
static const char *expected(size_t i, char *buf, size_t size)
{
    const char *allowed = key_rows[i].allowed;
    unsigned flags = key_binds[i].flags;
    switch (key_binds[i].kind) {
    case K_BOOL:
        return "true or false (also yes/no, on/off)";
    case K_INT:
    case K_INT64:
    case K_MIB:
        snprintf(buf, size, "an integer in %s", allowed);
        return buf;
    case K_DURATION:
        snprintf(buf, size, "a number of seconds in %s (no unit suffix)",
                 allowed);
        return buf;
    case K_NUMBER:
        snprintf(buf, size, "a number in %s", allowed);
        return buf;
    case K_ENUM:
        snprintf(buf, size, "one of %s", allowed);
        return buf;
    case K_ARGV:
        snprintf(buf, size, "a %s", allowed);
        return buf;
    case K_STRING:
        if (flags & F_SIZE)
            snprintf(buf, size, "%s", allowed);
        else if (flags & F_NOSPACE)
            snprintf(buf, size, "a non-empty string without spaces (%s)",
                     allowed);
        else
            snprintf(buf, size, "a non-empty string (%s)", allowed);
        return buf;
    }
    return "?";
}

static int bad_value(struct loader *L, size_t i, const yaml_node_t *v)
{
    char found[64], want[256];
    return failf(L, v->start_mark, "%s: found %s, expected %s",
                 key_rows[i].path, describe(v, found, sizeof found),
                 expected(i, want, sizeof want));
}

static int fail_duplicate(struct loader *L, const yaml_node_t *k,
                          const char *what, int wn, yaml_mark_t first)
{
    return failf(L, k->start_mark,
                 "%.*s: found a duplicate key, expected each key once "
                 "(first at line %zu, column %zu)",
                 wn, what, first.line + 1, first.column + 1);
}

static int oom(struct loader *L)
{
    return zerg_err_set(L->err, -ENOMEM, "%s: out of memory", L->name);
}

/* ---- scalars ---------------------------------------------------------- */

/* Copies s without YAML 1.1 digit separators ("1_000"); -1 if too long. */
static int strip_underscores(const char *s, char *buf, size_t size)
{
    size_t n = 0;
    for (; *s; s++) {
        if (*s == '_')
            continue;
        if (n + 1 >= size)
            return -1;
        buf[n++] = *s;
    }
    buf[n] = '\0';
    return 0;
}

static int parse_int(const char *s, long long *out)
{
    char buf[32];
    if (strip_underscores(s, buf, sizeof buf) < 0)
        return -1;
    const char *d = buf + (buf[0] == '+' || buf[0] == '-');
    if (!*d || strspn(d, "0123456789") != strlen(d))
        return -1;
    errno = 0;
    *out = strtoll(buf, NULL, 10);
    return errno ? -1 : 0;
}

/* A finite decimal number ("0.2", "1e3"); no hex, inf or nan. */
static int parse_real(const char *s, double *out)
{
    char buf[64], *end;
    if (strip_underscores(s, buf, sizeof buf) < 0)
        return -1;
    if (!buf[0] || strspn(buf, "0123456789+-.eE") != strlen(buf) ||
        !strpbrk(buf, "0123456789"))
        return -1;
    *out = strtod(buf, &end);
    return *end || !isfinite(*out) ? -1 : 0;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"true", "yes", "on"};
    static const char *const no[] = {"false", "no", "off"};
    for (int k = 0; k < 3; k++) {
        if (!strcasecmp(s, yes[k]) || !strcasecmp(s, no[k])) {
            *out = !strcasecmp(s, yes[k]);
            return 0;
        }
    }
    return -1;
}

/* Docker's --memory syntax: digits, optional fraction, optional unit. */
static int is_size(const char *s)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0)
        return 0;
    if (s[n] == '.') {
        size_t f = strspn(s + n + 1, "0123456789");
        if (f == 0)
            return 0;
        n += 1 + f;
    }
    if (s[n] && strchr("bkmgBKMG", s[n]))
        n++;
    return s[n] == '\0';
}

static int string_ok(unsigned flags, const char *s)
{
    if ((flags & F_NONEMPTY) && !*s)
        return 0;
    if ((flags & F_NOSPACE) && strpbrk(s, " \t\r\n"))
        return 0;
    if ((flags & F_SIZE) && *s && !is_size(s))
        return 0;
    return 1;
}

static int enum_lookup(size_t i, const char *s, size_t n)
{
    int idx = enum_index(key_rows[i].allowed, s, n);
    for (size_t k = 0;
         idx < 0 && k < sizeof enum_aliases / sizeof enum_aliases[0]; k++) {
        if (!strcmp(enum_aliases[k].path, key_rows[i].path) &&
            !strcmp(enum_aliases[k].alias, s))
            idx = enum_index(key_rows[i].allowed, enum_aliases[k].canonical,
                             strlen(enum_aliases[k].canonical));
    }
    return idx;
}

/* Numeric kinds: parse, range-check, store. */
static int apply_number(struct loader *L, size_t i, const yaml_node_t *v)
{
    const char *s = (const char *)v->data.scalar.value;
    void *f = field_of(&L->cfg, i);
    double lo, hi, x;
    long long n = 0;
    range_of(i, &lo, &hi);
    enum kind kind = key_binds[i].kind;
    int is_int = kind == K_INT || kind == K_INT64 || kind == K_MIB;
    if (is_int ? parse_int(s, &n) : parse_real(s, &x))
        return bad_value(L, i, v);
    if (is_int)
        x = (double)n;
    if (x < lo || x > hi)
        return bad_value(L, i, v);
    if (kind == K_INT)
        *(int *)f = (int)n;
    else if (kind == K_INT64)
        *(int64_t *)f = n;
    else if (kind == K_MIB)
        *(int64_t *)f = n * 1024 * 1024;
    else if (kind == K_DURATION)
        *(int64_t *)f = llround(x * 1e9);
    else
        *(double *)f = x;
    return 0;
}

static int apply_scalar(struct loader *L, size_t i, const yaml_node_t *v)
{
    const char *s = (const char *)v->data.scalar.value;
    size_t n = v->data.scalar.length;
    void *f = field_of(&L->cfg, i);
    int b, idx;
    switch (key_binds[i].kind) {
    case K_BOOL:
        if (parse_bool(s, &b))
            return bad_value(L, i, v);
        *(int *)f = b;
        return 0;
    case K_ENUM:
        idx = enum_lookup(i, s, n);
        if (idx < 0)
            return bad_value(L, i, v);
        memcpy(f, &idx, sizeof idx);
        return 0;
    case K_STRING: {
        if (!string_ok(key_binds[i].flags, s))
            return bad_value(L, i, v);
        char *copy = strdup(s);
        if (!copy)
            return oom(L);
        free(*(char **)f);
        *(char **)f = copy;
        return 0;
    }
    default:
        return apply_number(L, i, v);
    }
}

/* ---- argv values ------------------------------------------------------ */

static int argv_from_list(struct loader *L, size_t i, const yaml_node_t *v,
                          struct zerg_argv *a)
{
    yaml_node_item_t *it = v->data.sequence.items.start;
    size_t count = (size_t)(v->data.sequence.items.top - it);
    if (argv_alloc(a, count) < 0)
        return oom(L);
    for (; a->n < count; a->n++) {
        const yaml_node_t *item = yaml_document_get_node(L->doc, it[a->n]);
        char found[64];
        if (item->type != YAML_SCALAR_NODE || is_null(item) ||
            memchr(item->data.scalar.value, '\0', item->data.scalar.length))
            return failf(
                L, item->start_mark, "%s[%zu]: found %s, expected a string",
                key_rows[i].path, a->n, describe(item, found, sizeof found));
        a->v[a->n] = strdup((const char *)item->data.scalar.value);
        if (!a->v[a->n])
            return oom(L);
    }
    return 0;
}

/* "claude --print" -> [claude, --print]; no quoting, by design: a list is
 * the way to pass an argument that contains spaces. */
static int argv_split(struct loader *L, const char *s, struct zerg_argv *a)
{
    static const char ws[] = " \t\r\n";
    size_t count = 0;
    for (const char *p = s + strspn(s, ws); *p; p += strspn(p, ws)) {
        count++;
        p += strcspn(p, ws);
    }
    if (argv_alloc(a, count) < 0)
        return oom(L);
    for (const char *p = s + strspn(s, ws); *p; p += strspn(p, ws)) {
        size_t len = strcspn(p, ws);
        a->v[a->n] = strndup(p, len);
        if (!a->v[a->n])
            return oom(L);
        a->n++;
        p += len;
    }
    return 0;
}

static int apply_argv(struct loader *L, size_t i, const yaml_node_t *v)
{
    unsigned flags = key_binds[i].flags;
    struct zerg_argv a = {0};
    int rc;
    if (v->type == YAML_SEQUENCE_NODE)
        rc = argv_from_list(L, i, v, &a);
    else if ((flags & F_SPLIT) && v->type == YAML_SCALAR_NODE && !is_null(v) &&
             !memchr(v->data.scalar.value, '\0', v->data.scalar.length))
        rc = argv_split(L, (const char *)v->data.scalar.value, &a);
    else
        return bad_value(L, i, v);
    if (rc == 0 && a.n == 0 && (flags & F_NONEMPTY))
        rc = bad_value(L, i, v);
    if (rc < 0) {
        argv_free(&a);
        return rc;
    }
    argv_free(field_of(&L->cfg, i));
    *(struct zerg_argv *)field_of(&L->cfg, i) = a;
    return 0;
}

static int apply_value(struct loader *L, size_t i, const yaml_node_t *v)
{
    if (key_binds[i].kind == K_ARGV)
        return apply_argv(L, i, v);
    if (v->type != YAML_SCALAR_NODE || is_null(v) ||
        memchr(v->data.scalar.value, '\0', v->data.scalar.length))
        return bad_value(L, i, v); /* "\0" escapes would cut C strings */
    return apply_scalar(L, i, v);
}

/* ---- unknown keys ----------------------------------------------------- */

/* Typos worth suggesting a fix for: 1 edit in short names, up to 3. */
static size_t typo_limit(const char *s)
{
    size_t n = strlen(s);
    return n <= 4 ? 1 : n <= 8 ? 2 : 3;
}

/* The closest known key or section name to path, or NULL.  A leaf name
 * is matched in every section so a key put in the wrong section is found
 * too; ties go to the section it was written in. */
static const char *suggest(const char *path, char *buf, size_t size)
{
    const char *dot = strchr(path, '.');
    const char *leaf = dot ? dot + 1 : path;
    size_t sn = dot ? (size_t)(dot - path) : 0, limit = typo_limit(leaf);
    size_t bestd = limit + 1;
    const char *best = NULL;
    int best_here = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        size_t d = zerg_edit_distance(leaf, leaf_of(i));
        int here = dot && section_len(key_rows[i].path) == sn &&
                   !memcmp(key_rows[i].path, path, sn);
        if (d < bestd || (d == bestd && here && !best_here)) {
            bestd = d;
            best = key_rows[i].path;
            best_here = here;
        }
    }
    for (size_t i = 0; !dot && i < NKEYS; i++) {
        char name[64];
        if (!is_section_start(i))
            continue;
        snprintf(name, sizeof name, "%.*s", (int)section_len(key_rows[i].path),
                 key_rows[i].path);
        size_t d = zerg_edit_distance(path, name);
        if (d <= limit && d <= bestd) {
            bestd = d;
            best = buf;
            snprintf(buf, size, "%s", name);
        }
    }
    return best;
}

static void note_for(const char *path, char *note, size_t size)
{
    char buf[64];
    for (size_t k = 0; k < sizeof upstream_keys / sizeof *upstream_keys; k++) {
        if (!strcmp(path, upstream_keys[k])) {
            snprintf(note, size, " (a ZERG setting that zerg does not use)");
            return;
        }
    }
    const char *s = NULL;
    for (size_t k = 0; k < sizeof renamed_keys / sizeof *renamed_keys; k++) {
        if (!strcmp(path, renamed_keys[k].upstream))
            s = renamed_keys[k].zerg;
    }
    if (!s)
        s = suggest(path, buf, sizeof buf);
    if (s)
        snprintf(note, size, " (did you mean '%s'?)", s);
    else
        note[0] = '\0';
}

/* Warns about key (a scalar) at the top level (section NULL) or in
 * section[0..sn). */
static void warn_unknown(struct loader *L, const yaml_node_t *key,
                         const char *section, size_t sn)
{
    if (!L->warn || L->nwarn++ >= MAX_WARNINGS)
        return;
    char name[48], path[128], note[128], msg[512];
    show_scalar(key, name, sizeof name);
    if (section)
        snprintf(path, sizeof path, "%.*s.%s", (int)sn, section, name);
    else
        snprintf(path, sizeof path, "%s", name);
    note_for(path, note, sizeof note);
    snprintf(msg, sizeof msg, "%s:%zu:%zu: unknown key '%s'%s", L->name,
             key->start_mark.line + 1, key->start_mark.column + 1, path, note);
    L->warn(L->ud, msg);
}

/* ---- walking the document --------------------------------------------- */

static int load_key(struct loader *L, size_t first, const yaml_node_t *k,
                    const yaml_node_t *v)
{
    const char *sec = key_rows[first].path;
    size_t sn = section_len(sec);
    char found[64];
    if (k->type != YAML_SCALAR_NODE)
        return failf(L, k->start_mark, "%.*s: found %s, expected a key name",
                     (int)sn, sec, describe(k, found, sizeof found));
    long i = key_find_in(first, (const char *)k->data.scalar.value,
                         k->data.scalar.length);
    if (i < 0) {
        warn_unknown(L, k, sec, sn);
        return 0;
    }
    if (L->key_seen[i])
        return fail_duplicate(L, k, key_rows[i].path,
                              (int)strlen(key_rows[i].path), L->key_mark[i]);
    L->key_seen[i] = 1;
    L->key_mark[i] = k->start_mark;
    L->value_mark[i] = v->start_mark;
    return apply_value(L, (size_t)i, v);
}

static int load_section(struct loader *L, const yaml_node_t *k,
                        const yaml_node_t *v)
{
    char found[64];
    if (k->type != YAML_SCALAR_NODE)
        return failf(L, k->start_mark,
                     "top level: found %s, expected a section name",
                     describe(k, found, sizeof found));
    long first =
        section_find((const char *)k->data.scalar.value, k->data.scalar.length);
    if (first < 0) {
        warn_unknown(L, k, NULL, 0);
        return 0;
    }
    const char *sec = key_rows[first].path;
    int sn = (int)section_len(sec);
    if (L->section_seen[first])
        return fail_duplicate(L, k, sec, sn, L->section_mark[first]);
    L->section_seen[first] = 1;
    L->section_mark[first] = k->start_mark;
    if (is_null(v))
        return 0; /* "workers:" with every key commented out */
    if (v->type != YAML_MAPPING_NODE)
        return failf(L, v->start_mark,
                     "%.*s: found %s, expected a mapping of keys", sn, sec,
                     describe(v, found, sizeof found));
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start;
         p < v->data.mapping.pairs.top; p++) {
        int rc =
            load_key(L, (size_t)first, yaml_document_get_node(L->doc, p->key),
                     yaml_document_get_node(L->doc, p->value));
        if (rc)
            return rc;
    }
    return 0;
}

static int load_root(struct loader *L, const yaml_node_t *root)
{
    if (!root || is_null(root))
        return 0; /* empty file or only comments: all defaults */
    if (root->type != YAML_MAPPING_NODE) {
        char found[64], sections[160] = "";
        size_t n = 0;
        for (size_t i = 0; i < NKEYS && n < sizeof sections; i++) {
            if (is_section_start(i))
                n += (size_t)snprintf(
                    sections + n, sizeof sections - n, "%s%.*s", n ? ", " : "",
                    (int)section_len(key_rows[i].path), key_rows[i].path);
        }
        return failf(L, root->start_mark,
                     "top level: found %s, expected a mapping of sections "
                     "(%s)",
                     describe(root, found, sizeof found), sections);
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++) {
        int rc = load_section(L, yaml_document_get_node(L->doc, p->key),
                              yaml_document_get_node(L->doc, p->value));
        if (rc)
            return rc;
    }
    return 0;
}

/* Pairs of durations where the first must not exceed (or, when strict,
 * must stay below) the second. */
static const struct {
    const char *lo, *hi;
    int strict;
} order_rules[] = {
    {"workers.spawn_backoff_base_seconds", "workers.spawn_backoff_max_seconds",
     0},
    {"workers.backoff_base_seconds", "workers.backoff_max_seconds", 0},
    {"workers.heartbeat_interval_seconds", "workers.heartbeat_stale_threshold",
     1},
};

static int check_order(struct loader *L)
{
    for (size_t r = 0; r < sizeof order_rules / sizeof *order_rules; r++) {
        long a = key_find(order_rules[r].lo), b = key_find(order_rules[r].hi);
        int64_t va = *(const int64_t *)field_of(&L->cfg, (size_t)a);
        int64_t vb = *(const int64_t *)field_of(&L->cfg, (size_t)b);
        if (va < vb || (va == vb && !order_rules[r].strict))
            continue;
        /* Point at the key the user wrote; the first one if both. */
        long at = L->key_seen[a] ? a : b;
        yaml_mark_t m = L->value_mark[at];
        return failf(L, m, "%s: found %g, expected %s %s (%g)",
                     key_rows[a].path, (double)va / 1e9,
                     order_rules[r].strict ? "less than" : "at most",
                     key_rows[b].path, (double)vb / 1e9);
    }
    return 0;
}

static int fail_syntax(struct loader *L, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return oom(L);
    yaml_mark_t m = p->error == YAML_READER_ERROR
                        ? mark_at(L, p->problem_offset)
                        : p->problem_mark;
    char ctx[160] = "";
    if (p->context)
        snprintf(ctx, sizeof ctx, " (%s at line %zu, column %zu)", p->context,
                 p->context_mark.line + 1, p->context_mark.column + 1);
    const char *hint = m.index < L->len && L->text[m.index] == '\t'
                           ? "; tabs cannot indent YAML, use spaces"
                           : "";
    return failf(L, m, "YAML syntax error: %s%s%s",
                 p->problem ? p->problem : "unreadable input", ctx, hint);
}

/* The anchor a node event defines, or NULL. */
static const yaml_char_t *anchor_of(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return ev->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT:
        return ev->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT:
        return ev->data.mapping_start.anchor;
    default:
        return NULL;
    }
}

/* libyaml slows down faster than quadratically with nesting depth (40,000
 * '[' take 6 s; 1 MiB of them would take hours) and quadratically with the
 * number of anchors (50,000 take 5 s), so a first pass over the events,
 * which stops at the first excess, rejects such input before the document
 * is built.  A config needs 3 levels and no anchors. */
static int check_shape(struct loader *L)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    int depth = 0, anchors = 0, rc = 0;
    if (!yaml_parser_initialize(&parser))
        return oom(L);
    yaml_parser_set_input_string(&parser, (const unsigned char *)L->text,
                                 L->len);
    for (;;) {
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = fail_syntax(L, &parser);
            break;
        }
        yaml_event_type_t type = ev.type;
        yaml_mark_t at = ev.start_mark;
        anchors += anchor_of(&ev) != NULL;
        yaml_event_delete(&ev);
        if (anchors > MAX_ANCHORS) {
            rc = failf(L, at,
                       "found more than %d YAML anchors, expected "
                       "at most %d",
                       MAX_ANCHORS, MAX_ANCHORS);
            break;
        }
        if (type == YAML_STREAM_END_EVENT)
            break;
        if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT)
            depth--;
        if ((type == YAML_SEQUENCE_START_EVENT ||
             type == YAML_MAPPING_START_EVENT) &&
            ++depth > MAX_DEPTH) {
            rc = failf(L, at,
                       "found lists or mappings nested %d deep, expected "
                       "at most %d",
                       depth, MAX_DEPTH);
            break;
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

/* Parses the text and applies it to L->cfg. */
static int load_document(struct loader *L)
{
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    int rc = check_shape(L);
    if (rc)
        return rc;
    if (!yaml_parser_initialize(&parser))
        return oom(L);
    yaml_parser_set_input_string(&parser, (const unsigned char *)L->text,
                                 L->len);
    if (!yaml_parser_load(&parser, &doc)) {
        rc = fail_syntax(L, &parser);
        goto out_parser;
    }
    L->doc = &doc;
    rc = load_root(L, yaml_document_get_root_node(&doc));
    if (rc == 0 && !yaml_parser_load(&parser, &extra))
        rc = fail_syntax(L, &parser);
    else if (rc == 0) {
        const yaml_node_t *second = yaml_document_get_root_node(&extra);
        if (second)
            rc = failf(L, second->start_mark,
                       "found a second YAML document, expected one");
        yaml_document_delete(&extra);
    }
    yaml_document_delete(&doc);
    L->doc = NULL;
out_parser:
    yaml_parser_delete(&parser);
    return rc;
}

int zerg_config_load_string(struct zerg_config *c, const char *name,
                            const char *text, size_t len, zerg_warn_fn warn,
                            void *ud, struct zerg_err *err)
{
    struct loader L = {.name = name ? name : "config",
                       .text = text,
                       .len = len,
                       .warn = warn,
                       .ud = ud,
                       .err = err};
    if (len > CONFIG_MAX_BYTES)
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "%s: found a file of %zu bytes, expected at most "
                            "%d (1 MiB)",
                            L.name, len, CONFIG_MAX_BYTES);
    const char *nul = memchr(text, '\0', len);
    if (nul)
        return failf(&L, mark_at(&L, (size_t)(nul - text)),
                     "found a NUL byte, expected UTF-8 text");
    if (config_copy(&L.cfg, c) < 0)
        return oom(&L);
    int rc = load_document(&L);
    if (rc == 0)
        rc = check_order(&L);
    if (rc == 0 && L.warn && L.nwarn > MAX_WARNINGS) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s: %u more unknown keys not shown", L.name,
                 L.nwarn - MAX_WARNINGS);
        L.warn(L.ud, msg);
    }
    if (rc != 0) {
        zerg_config_free(&L.cfg);
        return rc;
    }
    zerg_config_free(c);
    *c = L.cfg;
    return 0;
}

/* Reads at most CONFIG_MAX_BYTES + 1 bytes: enough to know it is too big. */
static int read_limited(int fd, char **out, size_t *len)
{
    size_t cap = CONFIG_MAX_BYTES + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    while (n < cap) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = -errno;
            free(buf);
            return e;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    *out = buf;
    *len = n;
    return 0;
}

int zerg_config_load(struct zerg_config *c, const char *path, zerg_warn_fn warn,
                     void *ud, struct zerg_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0; /* no config file: every key keeps its default */
    if (fd < 0)
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "%s: cannot open: %s", path,
                            strerror(errno));
    char *text = NULL;
    size_t len = 0;
    int rc = read_limited(fd, &text, &len);
    close(fd);
    if (rc == -ENOMEM)
        return zerg_err_set(err, rc, "%s: out of memory", path);
    if (rc < 0)
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "%s: cannot read: %s", path,
                            strerror(-rc));
    if (len > CONFIG_MAX_BYTES)
        rc = zerg_err_set(err, ZERG_EINVAL_INPUT,
                          "%s: found a file of more than %d bytes, expected "
                          "at most 1 MiB",
                          path, CONFIG_MAX_BYTES);
    else
        rc = zerg_config_load_string(c, path, text, len, warn, ud, err);
    free(text);
    return rc;
}

/* The defaults are the table's dflt column, loaded as YAML. */
void zerg_config_defaults(struct zerg_config *c)
{
    char text[8192];
    size_t n = 0;
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NKEYS && n < sizeof text; i++) {
        const char *p = key_rows[i].path;
        int sn = (int)section_len(p);
        if (is_section_start(i))
            n += (size_t)snprintf(text + n, sizeof text - n, "%.*s:\n", sn, p);
        if (n < sizeof text)
            n += (size_t)snprintf(text + n, sizeof text - n, "  %s: %s\n",
                                  leaf_of(i), key_rows[i].dflt);
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

/* ---- JSON view -------------------------------------------------------- */

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
    switch (key_binds[i].kind) {
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
        name = enum_name(key_rows[i].allowed, e, &len);
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
                     (int)section_len(key_rows[i].path), key_rows[i].path);
            sec = zerg_json_obj();
            if (zerg_json_set(root, name, sec) < 0)
                goto fail;
        }
        zerg_json *v = value_json(c, i);
        if (!v || zerg_json_set(sec, leaf_of(i), v) < 0)
            goto fail;
    }
    return root;
fail:
    zerg_json_free(root);
    return NULL;
}
