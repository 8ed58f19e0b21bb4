/* test_config.c - the config loader (src/model/config.c): defaults, every key,
 * fractional durations, executor splitting, a table of malformed files with
 * the exact words of their messages, unknown-key suggestions, and the
 * example file and reference page checked against zerg_config_keys(). */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/json.h"
#include "zerg/log.h"

#define NS(s) ((int64_t)((s)*1e9 + 0.5))
#define MIB (1024 * 1024)

/* Collected warnings. */
struct warnings {
    int n;
    char msg[64][512];
};

static void collect(void *ud, const char *msg)
{
    struct warnings *w = ud;
    if (w->n < 64)
        snprintf(w->msg[w->n], sizeof w->msg[0], "%s", msg);
    w->n++;
}

static int load(struct zerg_config *c, const char *text, struct warnings *w,
                struct zerg_err *err)
{
    return zerg_config_load_string(c, "t.yaml", text, strlen(text),
                                   w ? collect : NULL, w, err);
}

static int json_equal(const zerg_json *a, const zerg_json *b)
{
    if (!a || !b || a->type != b->type)
        return 0;
    switch (a->type) {
    case ZERG_JSON_NULL:
        return 1;
    case ZERG_JSON_BOOL:
        return !a->u.boolean == !b->u.boolean;
    case ZERG_JSON_NUMBER:
        return a->u.number == b->u.number;
    case ZERG_JSON_STRING:
        return a->u.str.len == b->u.str.len &&
               !memcmp(a->u.str.s, b->u.str.s, a->u.str.len);
    case ZERG_JSON_ARRAY:
    case ZERG_JSON_OBJECT:
        if (zerg_json_len(a) != zerg_json_len(b))
            return 0;
        for (size_t i = 0; i < zerg_json_len(a); i++) {
            if (a->type == ZERG_JSON_OBJECT &&
                strcmp(zerg_json_key_at(a, i), zerg_json_key_at(b, i)))
                return 0;
            if (!json_equal(zerg_json_at(a, i), zerg_json_at(b, i)))
                return 0;
        }
        return 1;
    }
    return 0;
}

/* 1 when c has exactly the default values. */
static int is_default(const struct zerg_config *c)
{
    struct zerg_config d;
    zerg_config_defaults(&d);
    zerg_json *a = zerg_config_to_json(c), *b = zerg_config_to_json(&d);
    int eq = json_equal(a, b);
    zerg_json_free(a);
    zerg_json_free(b);
    zerg_config_free(&d);
    return eq;
}

static void assert_argv(const struct zerg_argv *a, const char *const *want,
                        size_t n)
{
    assert_int_equal(a->n, n);
    assert_non_null(a->v);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(a->v[i], want[i]);
    assert_null(a->v[n]);
}

/* ---- defaults and valid files ----------------------------------------- */

static void test_defaults(void **state)
{
    (void)state;
    struct zerg_config c;
    zerg_config_defaults(&c);
    assert_int_equal(c.resilience_enabled, 1);
    assert_int_equal(c.reconcile_interval_ns, NS(60));
    assert_int_equal(c.workers_max_concurrent, 3);
    assert_int_equal(c.workers_mode, ZERG_MODE_SUBPROCESS);
    assert_int_equal(c.spawn_retry_attempts, 3);
    assert_int_equal(c.spawn_backoff_strategy, ZERG_BACKOFF_EXPONENTIAL);
    assert_int_equal(c.spawn_backoff_base_ns, NS(2));
    assert_int_equal(c.spawn_backoff_max_ns, NS(30));
    assert_int_equal(c.spawn_ready_timeout_ns, NS(30));
    assert_int_equal(c.task_stale_timeout_ns, NS(600));
    assert_int_equal(c.heartbeat_interval_ns, NS(30));
    assert_int_equal(c.heartbeat_stale_threshold_ns, NS(120));
    assert_int_equal(c.lease_stale_ns, NS(10));
    assert_int_equal(c.stop_grace_ns, NS(10));
    assert_int_equal(c.auto_respawn, 1);
    assert_int_equal(c.max_respawn_attempts, 5);
    assert_int_equal(c.retry_attempts, 3);
    assert_int_equal(c.backoff_strategy, ZERG_BACKOFF_EXPONENTIAL);
    assert_int_equal(c.backoff_base_ns, NS(30));
    assert_int_equal(c.backoff_max_ns, NS(300));
    assert_int_equal(c.max_task_crashes, 3);
    assert_argv(&c.launch_prefix, NULL, 0);
    const char *exec[] = {"claude", "--print",
                          "--dangerously-skip-permissions"};
    assert_argv(&c.executor, exec, 3);
    assert_string_equal(c.container_runtime, "auto");
    assert_string_equal(c.container_image, "zerg-worker");
    assert_argv(&c.container_run_args, NULL, 0);
    assert_string_equal(c.container_memory, "");
    assert_true(c.container_cpus == 0.0);
    assert_int_equal(c.container_pids_limit, 0);
    assert_int_equal(c.policy_instruction_budget, 1000000);
    assert_int_equal(c.policy_time_budget_ns, 100 * ZERG_NS_PER_MS);
    assert_int_equal(c.policy_memory_bytes, 32 * MIB);
    assert_int_equal(c.log_level, ZERG_LOG_INFO);
    zerg_config_free(&c);
    zerg_config_free(&c); /* idempotent */
}

static void test_missing_empty_and_comment_files(void **state)
{
    (void)state;
    struct zerg_config c;
    struct zerg_err err = {0};
    struct warnings w = {0};
    zerg_config_defaults(&c);
    assert_int_equal(zerg_config_load(&c, "/nonexistent/zerg/config.yaml",
                                      collect, &w, &err),
                     0);
    const char *texts[] = {"", "# only a comment\n\n   # another\n", "---\n",
                           "~\n"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        assert_int_equal(load(&c, texts[i], &w, &err), 0);
    /* A section with every key commented out is an empty section. */
    assert_int_equal(load(&c, "workers:\n  # max_concurrent: 4\n", &w, &err),
                     0);
    assert_int_equal(w.n, 0);
    assert_true(is_default(&c));
    zerg_config_free(&c);
}

static const char full_file[] =
    "resilience:\n"
    "  enabled: no\n"
    "  reconcile_interval_seconds: 5\n"
    "workers:\n"
    "  max_concurrent: 8\n"
    "  mode: container\n"
    "  spawn_retry_attempts: 0\n"
    "  spawn_backoff_strategy: linear\n"
    "  spawn_backoff_base_seconds: 1\n"
    "  spawn_backoff_max_seconds: 10\n"
    "  spawn_ready_timeout_seconds: 45\n"
    "  task_stale_timeout_seconds: 1_800\n"
    "  heartbeat_interval_seconds: 5\n"
    "  heartbeat_stale_threshold: 20\n"
    "  stop_grace_seconds: 0\n"
    "  auto_respawn: Off\n"
    "  max_respawn_attempts: 10\n"
    "  retry_attempts: 1\n"
    "  backoff_strategy: fixed\n"
    "  backoff_base_seconds: 15\n"
    "  backoff_max_seconds: 15\n"
    "  max_task_crashes: 2\n"
    "  launch_prefix: [nice, -n, \"10\"]\n"
    "  executor:\n"
    "    - my-agent\n"
    "    - --prompt-file\n"
    "    - \"a b\"\n"
    "container:\n"
    "  runtime: /usr/local/bin/nerdctl\n"
    "  image: registry.example.com/zerg-worker:1.2\n"
    "  run_args: [--network, none]\n"
    "  memory: 2g\n"
    "  cpus: 1.5\n"
    "  pids_limit: 512\n"
    "policies:\n"
    "  instruction_budget: 5000000\n"
    "  time_budget_seconds: 0.25\n"
    "  memory_mb: 64\n"
    "logging:\n"
    "  level: debug\n";

static void test_full_valid_file(void **state)
{
    (void)state;
    struct zerg_config c;
    struct zerg_err err = {0};
    struct warnings w = {0};
    zerg_config_defaults(&c);
    assert_int_equal(load(&c, full_file, &w, &err), 0);
    assert_int_equal(w.n, 0);
    assert_int_equal(c.resilience_enabled, 0);
    assert_int_equal(c.reconcile_interval_ns, NS(5));
    assert_int_equal(c.workers_max_concurrent, 8);
    assert_int_equal(c.workers_mode, ZERG_MODE_CONTAINER);
    assert_int_equal(c.spawn_retry_attempts, 0);
    assert_int_equal(c.spawn_backoff_strategy, ZERG_BACKOFF_LINEAR);
    assert_int_equal(c.spawn_backoff_base_ns, NS(1));
    assert_int_equal(c.spawn_backoff_max_ns, NS(10));
    assert_int_equal(c.spawn_ready_timeout_ns, NS(45));
    assert_int_equal(c.task_stale_timeout_ns, NS(1800));
    assert_int_equal(c.heartbeat_interval_ns, NS(5));
    assert_int_equal(c.heartbeat_stale_threshold_ns, NS(20));
    assert_int_equal(c.stop_grace_ns, 0);
    assert_int_equal(c.auto_respawn, 0);
    assert_int_equal(c.max_respawn_attempts, 10);
    assert_int_equal(c.retry_attempts, 1);
    assert_int_equal(c.backoff_strategy, ZERG_BACKOFF_FIXED);
    assert_int_equal(c.backoff_base_ns, NS(15));
    assert_int_equal(c.backoff_max_ns, NS(15));
    assert_int_equal(c.max_task_crashes, 2);
    const char *prefix[] = {"nice", "-n", "10"};
    assert_argv(&c.launch_prefix, prefix, 3);
    const char *exec[] = {"my-agent", "--prompt-file", "a b"};
    assert_argv(&c.executor, exec, 3);
    assert_string_equal(c.container_runtime, "/usr/local/bin/nerdctl");
    assert_string_equal(c.container_image,
                        "registry.example.com/zerg-worker:1.2");
    const char *run[] = {"--network", "none"};
    assert_argv(&c.container_run_args, run, 2);
    assert_string_equal(c.container_memory, "2g");
    assert_true(c.container_cpus == 1.5);
    assert_int_equal(c.container_pids_limit, 512);
    assert_int_equal(c.policy_instruction_budget, 5000000);
    assert_int_equal(c.policy_time_budget_ns, 250 * ZERG_NS_PER_MS);
    assert_int_equal(c.policy_memory_bytes, 64 * MIB);
    assert_int_equal(c.log_level, ZERG_LOG_DEBUG);
    zerg_config_free(&c);
}

/* A file overrides only what it names; later loads stack on earlier. */
static void test_partial_files_stack(void **state)
{
    (void)state;
    struct zerg_config c;
    struct zerg_err err = {0};
    zerg_config_defaults(&c);
    assert_int_equal(load(&c, "workers:\n  retry_attempts: 7\n", NULL, &err),
                     0);
    assert_int_equal(load(&c, "logging: {level: warning}\n", NULL, &err), 0);
    assert_int_equal(c.retry_attempts, 7);
    assert_int_equal(c.log_level, ZERG_LOG_WARN); /* ZERG's spelling */
    assert_int_equal(c.workers_max_concurrent, 3);
    /* A number where a string is due is that string. */
    assert_int_equal(
        load(&c, "container: {image: 42, memory: 2048}\n", NULL, &err), 0);
    assert_string_equal(c.container_image, "42");
    assert_string_equal(c.container_memory, "2048");
    zerg_config_free(&c);
}

static void test_booleans_yaml11(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int want;
    } cases[] = {{"true", 1},  {"True", 1}, {"yes", 1}, {"YES", 1}, {"on", 1},
                 {"false", 0}, {"no", 0},   {"No", 0},  {"off", 0}, {"OFF", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[64];
        struct zerg_config c;
        struct zerg_err err = {0};
        zerg_config_defaults(&c);
        c.auto_respawn = !cases[i].want;
        snprintf(text, sizeof text, "workers:\n  auto_respawn: %s\n",
                 cases[i].text);
        assert_int_equal(load(&c, text, NULL, &err), 0);
        assert_int_equal(c.auto_respawn, cases[i].want);
        zerg_config_free(&c);
    }
}

static void test_fractional_durations(void **state)
{
    (void)state;
    struct zerg_config c;
    struct zerg_err err = {0};
    zerg_config_defaults(&c);
    assert_int_equal(load(&c,
                          "resilience:\n"
                          "  reconcile_interval_seconds: 0.5\n"
                          "workers:\n"
                          "  spawn_backoff_base_seconds: 0.2\n"
                          "  spawn_backoff_max_seconds: 1.5\n"
                          "  heartbeat_interval_seconds: 0.001\n"
                          "  heartbeat_stale_threshold: 0.3\n"
                          "  lease_stale_seconds: 2.5\n"
                          "  task_stale_timeout_seconds: 604800\n"
                          "policies:\n"
                          "  time_budget_seconds: 2.5e-2\n",
                          NULL, &err),
                     0);
    assert_int_equal(c.reconcile_interval_ns, 500 * ZERG_NS_PER_MS);
    assert_int_equal(c.spawn_backoff_base_ns, 200 * ZERG_NS_PER_MS);
    assert_int_equal(c.spawn_backoff_max_ns, 1500 * ZERG_NS_PER_MS);
    assert_int_equal(c.heartbeat_interval_ns, ZERG_NS_PER_MS);
    assert_int_equal(c.heartbeat_stale_threshold_ns, 300 * ZERG_NS_PER_MS);
    assert_int_equal(c.lease_stale_ns, 2500 * ZERG_NS_PER_MS);
    assert_int_equal(c.task_stale_timeout_ns, 7 * 24 * 3600 * ZERG_NS_PER_S);
    assert_int_equal(c.policy_time_budget_ns, 25 * ZERG_NS_PER_MS);
    zerg_config_free(&c);
}

static void test_executor_string_is_split(void **state)
{
    (void)state;
    struct zerg_config c;
    struct zerg_err err = {0};
    zerg_config_defaults(&c);
    assert_int_equal(load(&c,
                          "workers:\n"
                          "  executor: \"  my-agent --fast\\t-q  \"\n",
                          NULL, &err),
                     0);
    const char *want[] = {"my-agent", "--fast", "-q"};
    assert_argv(&c.executor, want, 3);
    assert_int_equal(load(&c, "workers:\n  executor: codex\n", NULL, &err), 0);
    const char *one[] = {"codex"};
    assert_argv(&c.executor, one, 1);
    zerg_config_free(&c);
}

/* ---- malformed input --------------------------------------------------- */

/* Generated inputs: 2 MiB of comments; 101 anchors. */
static char *gen_big(size_t *len)
{
    char *t = malloc(2 * MIB);
    assert_non_null(t);
    for (size_t k = 0; k < 2 * MIB; k++)
        t[k] = k % 64 == 63 ? '\n' : '#';
    *len = 2 * MIB;
    return t;
}

static char *gen_anchors(size_t *len)
{
    size_t cap = 4096, n = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    n += (size_t)snprintf(t, cap, "junk: [");
    for (int i = 0; i < 101; i++)
        n += (size_t)snprintf(t + n, cap - n, "&a%d x, ", i);
    n += (size_t)snprintf(t + n, cap - n, "*a0]\n");
    *len = n;
    return t;
}

struct bad_case {
    const char *what;
    const char *text; /* NULL: made by gen */
    size_t len;       /* 0: strlen(text) */
    const char *needles[5];
    char *(*gen)(size_t *len);
};

static const struct bad_case bad_cases[] = {
    {"flow list never closed",
     "workers:\n  max_concurrent: [1, 2\n",
     0,
     {"t.yaml:", "YAML syntax error", "did not find expected"},
     NULL},
    {"tab indentation",
     "workers:\n\tmax_concurrent: 3\n",
     0,
     {"t.yaml:2:1: YAML syntax error", "tabs cannot indent YAML, use spaces"},
     NULL},
    {"unclosed quote",
     "container:\n  image: \"zerg-worker\n",
     0,
     {"t.yaml:3:1: YAML syntax error", "quoted scalar", "at line 2, column 10"},
     NULL},
    {"bad indentation",
     "workers:\n  max_concurrent: 3\n retry_attempts: 1\n",
     0,
     {"t.yaml:3:", "YAML syntax error"},
     NULL},
    {"string for int",
     "workers:\n  max_concurrent: three\n",
     0,
     {"t.yaml:2:19: workers.max_concurrent: found 'three', expected an "
      "integer in 1..256"},
     NULL},
    {"fraction for int",
     "workers:\n  retry_attempts: 2.5\n",
     0,
     {"t.yaml:2:19: workers.retry_attempts: found '2.5'", "0..100"},
     NULL},
    {"list for scalar",
     "workers:\n  spawn_retry_attempts: [1]\n",
     0,
     {"t.yaml:2:25: workers.spawn_retry_attempts: found a list, expected "
      "an integer in 0..100"},
     NULL},
    {"mapping for bool",
     "resilience:\n  enabled: {a: 1}\n",
     0,
     {"t.yaml:2:12: resilience.enabled: found a mapping, expected true or "
      "false"},
     NULL},
    {"word for bool",
     "workers:\n  auto_respawn: maybe\n",
     0,
     {"workers.auto_respawn: found 'maybe'", "yes/no, on/off"},
     NULL},
    {"null value",
     "workers:\n  max_concurrent:\n",
     0,
     {"t.yaml:2:", "workers.max_concurrent: found nothing (null)"},
     NULL},
    {"zero duration",
     "workers:\n  heartbeat_interval_seconds: 0\n",
     0,
     {"t.yaml:2:31: workers.heartbeat_interval_seconds: found '0', expected "
      "a number of seconds in 0.001..604800"},
     NULL},
    {"negative duration",
     "resilience:\n  reconcile_interval_seconds: -5\n",
     0,
     {"resilience.reconcile_interval_seconds: found '-5'", "0.001..604800"},
     NULL},
    {"absurd duration",
     "workers:\n  task_stale_timeout_seconds: 1e9\n",
     0,
     {"workers.task_stale_timeout_seconds: found '1e9'", "0.001..604800"},
     NULL},
    {"negative stop grace",
     "workers:\n  stop_grace_seconds: -1\n",
     0,
     {"t.yaml:2:23: workers.stop_grace_seconds: found '-1', expected a "
      "number of seconds in 0..3600 (no unit suffix)"},
     NULL},
    {"stop grace over an hour",
     "workers:\n  stop_grace_seconds: 3601\n",
     0,
     {"workers.stop_grace_seconds: found '3601'", "0..3600"},
     NULL},
    {"stop grace with unit",
     "workers:\n  stop_grace_seconds: 10s\n",
     0,
     {"workers.stop_grace_seconds: found '10s'", "no unit suffix"},
     NULL},
    {"stop grace not a number",
     "workers:\n  stop_grace_seconds: [10]\n",
     0,
     {"workers.stop_grace_seconds: found a list"},
     NULL},
    {"duration with unit",
     "workers:\n  backoff_base_seconds: 30s\n",
     0,
     {"workers.backoff_base_seconds: found '30s'", "no unit suffix"},
     NULL},
    {"infinite duration",
     "workers:\n  backoff_max_seconds: .inf\n",
     0,
     {"workers.backoff_max_seconds: found '.inf'"},
     NULL},
    {"policy budget over a minute",
     "policies:\n  time_budget_seconds: 61\n",
     0,
     {"policies.time_budget_seconds: found '61'", "0.001..60"},
     NULL},
    {"unknown strategy",
     "workers:\n  backoff_strategy: quadratic\n",
     0,
     {"t.yaml:2:21: workers.backoff_strategy: found 'quadratic', expected "
      "one of exponential|linear|fixed"},
     NULL},
    {"unknown mode",
     "workers:\n  mode: docker\n",
     0,
     {"workers.mode: found 'docker'", "subprocess|container|auto"},
     NULL},
    {"unknown log level",
     "logging:\n  level: verbose\n",
     0,
     {"logging.level: found 'verbose'", "debug|info|warn|error"},
     NULL},
    {"count above range",
     "workers:\n  spawn_retry_attempts: 101\n",
     0,
     {"workers.spawn_retry_attempts: found '101'", "0..100"},
     NULL},
    {"zero workers",
     "workers:\n  max_concurrent: 0\n",
     0,
     {"workers.max_concurrent: found '0'", "1..256"},
     NULL},
    {"integer overflow",
     "policies:\n  instruction_budget: 99999999999999999999999\n",
     0,
     {"policies.instruction_budget: found", "1000..1000000000"},
     NULL},
    {"lease shorter than two renewals",
     "workers:\n  lease_stale_seconds: 1.5\n",
     0,
     {"workers.lease_stale_seconds: found '1.5', expected a number of "
      "seconds in 2..604800"},
     NULL},
    {"negative cpus",
     "container:\n  cpus: -1\n",
     0,
     {"container.cpus: found '-1', expected a number in 0..1024"},
     NULL},
    {"bad memory size",
     "container:\n  memory: lots\n",
     0,
     {"container.memory: found 'lots'", "512m, 2g"},
     NULL},
    {"image with a space",
     "container:\n  image: \"my image\"\n",
     0,
     {"container.image: found 'my image'", "without spaces"},
     NULL},
    {"empty runtime",
     "container:\n  runtime: \"\"\n",
     0,
     {"container.runtime: found ''", "auto|docker|podman|PATH"},
     NULL},
    {"NUL escape in a string",
     "container:\n  image: \"a\\0b\"\n",
     0,
     {"container.image: found 'a?b'"},
     NULL},
    {"string for argv",
     "workers:\n  launch_prefix: nice\n",
     0,
     {"t.yaml:2:18: workers.launch_prefix: found 'nice', expected a list "
      "of strings"},
     NULL},
    {"mapping inside argv",
     "workers:\n  launch_prefix: [nice, {a: b}]\n",
     0,
     {"t.yaml:2:25: workers.launch_prefix[1]: found a mapping, expected a "
      "string"},
     NULL},
    {"empty executor",
     "workers:\n  executor: []\n",
     0,
     {"workers.executor: found a list", "non-empty list of strings"},
     NULL},
    {"blank executor string",
     "workers:\n  executor: \"   \"\n",
     0,
     {"workers.executor: found '   '", "non-empty"},
     NULL},
    {"spawn base above max",
     "workers:\n  spawn_backoff_base_seconds: 40\n"
     "  spawn_backoff_max_seconds: 30\n",
     0,
     {"t.yaml:2:31: workers.spawn_backoff_base_seconds: found 40, expected "
      "at most workers.spawn_backoff_max_seconds (30)"},
     NULL},
    {"task base above the default max",
     "workers:\n  backoff_base_seconds: 301\n",
     0,
     {"t.yaml:2:25: workers.backoff_base_seconds: found 301, expected at "
      "most workers.backoff_max_seconds (300)"},
     NULL},
    {"interval equal to threshold",
     "workers:\n  heartbeat_interval_seconds: 120\n",
     0,
     {"t.yaml:2:31: workers.heartbeat_interval_seconds: found 120, expected "
      "less than workers.heartbeat_stale_threshold (120)"},
     NULL},
    {"threshold below interval",
     "workers:\n  heartbeat_stale_threshold: 10\n",
     0,
     {"t.yaml:2:30: workers.heartbeat_interval_seconds: found 30",
      "less than workers.heartbeat_stale_threshold (10)"},
     NULL},
    {"duplicate key",
     "workers:\n  retry_attempts: 1\n  retry_attempts: 2\n",
     0,
     {"t.yaml:3:3: workers.retry_attempts: found a duplicate key",
      "first at line 2, column 3"},
     NULL},
    {"duplicate section",
     "workers: {}\nlogging: {}\nworkers: {}\n",
     0,
     {"t.yaml:3:1: workers: found a duplicate key",
      "first at line 1, column 1"},
     NULL},
    {"list at top level",
     "- workers\n- logging\n",
     0,
     {"t.yaml:1:1: top level: found a list, expected a mapping of sections "
      "(resilience, rush, workers, executor, container, gates, slurm, state, "
      "policies, logging)"},
     NULL},
    {"scalar at top level",
     "workers\n",
     0,
     {"t.yaml:1:1: top level: found 'workers'"},
     NULL},
    {"scalar section",
     "workers: 5\n",
     0,
     {"t.yaml:1:10: workers: found '5', expected a mapping of keys"},
     NULL},
    {"list section",
     "logging:\n  - level\n",
     0,
     {"logging: found a list, expected a mapping of keys"},
     NULL},
    {"list as a key",
     "? [a, b]\n: 1\n",
     0,
     {"t.yaml:1:3: top level: found a list, expected a section name"},
     NULL},
    {"two documents",
     "workers: {}\n---\nlogging: {}\n",
     0,
     {"t.yaml:3:1: found a second YAML document"},
     NULL},
    {"NUL byte",
     "workers:\n  max\0_concurrent: 3\n",
     30,
     {"t.yaml:2:6: found a NUL byte, expected UTF-8 text"},
     NULL},
    {"invalid UTF-8",
     "workers:\n  image: \xff\xfe\n",
     0,
     {"t.yaml:2:10: YAML syntax error", "UTF-8"},
     NULL},
    {"deep nesting",
     "x: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
     0,
     {"t.yaml:1:35: found lists or mappings nested 33 deep, expected at "
      "most 32"},
     NULL},
    {"too many anchors",
     NULL,
     0,
     {"t.yaml:1:", "found more than 100 YAML anchors, expected at most 100"},
     gen_anchors},
    {"2 MiB file",
     NULL,
     0,
     {"t.yaml: found a file of 2097152 bytes, expected at most 1048576 (1 "
      "MiB)"},
     gen_big},
};

static void test_malformed_table(void **state)
{
    (void)state;
    assert_true(sizeof bad_cases / sizeof *bad_cases >= 20);
    for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
        const struct bad_case *bc = &bad_cases[i];
        char *made = NULL;
        const char *text = bc->text;
        size_t len = bc->len;
        if (bc->gen)
            text = made = bc->gen(&len);
        else if (!len)
            len = strlen(text);
        struct zerg_config c;
        struct zerg_err err = {0};
        zerg_config_defaults(&c);
        int rc =
            zerg_config_load_string(&c, "t.yaml", text, len, NULL, NULL, &err);
        free(made);
        if (rc != ZERG_EINVAL_INPUT)
            fail_msg("case '%s': rc %d, message '%s'", bc->what, rc, err.msg);
        assert_int_equal(err.code, ZERG_EINVAL_INPUT);
        for (size_t k = 0; k < 5 && bc->needles[k]; k++) {
            if (!tu_contains(err.msg, bc->needles[k]))
                fail_msg("case '%s'", bc->what);
        }
        /* A rejected file changes nothing. */
        if (!is_default(&c))
            fail_msg("case '%s' modified the config", bc->what);
        zerg_config_free(&c);
    }
}

static void test_load_file_errors(void **state)
{
    (void)state;
    char path[4096];
    const char *dir = tu_mkdtemp();
    struct zerg_config c;
    struct zerg_err err = {0};
    zerg_config_defaults(&c);

    tu_write(dir, "ok.yaml", "workers:\n  max_concurrent: 9\n");
    snprintf(path, sizeof path, "%s/ok.yaml", dir);
    assert_int_equal(zerg_config_load(&c, path, NULL, NULL, &err), 0);
    assert_int_equal(c.workers_max_concurrent, 9);

    tu_write(dir, "bad.yaml", "workers:\n  max_concurrent: 900\n");
    snprintf(path, sizeof path, "%s/bad.yaml", dir);
    assert_int_equal(zerg_config_load(&c, path, NULL, NULL, &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "bad.yaml:2:19: workers.max_concurrent"));

    char *big = malloc(2 * MIB + 1);
    assert_non_null(big);
    memset(big, '#', 2 * MIB);
    big[2 * MIB] = '\0';
    tu_write(dir, "big.yaml", big);
    free(big);
    snprintf(path, sizeof path, "%s/big.yaml", dir);
    assert_int_equal(zerg_config_load(&c, path, NULL, NULL, &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "big.yaml: found a file of more than "
                                     "1048576 bytes, expected at most 1 "
                                     "MiB"));

    assert_int_equal(zerg_config_load(&c, dir, NULL, NULL, &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "cannot read: Is a directory"));
    assert_int_equal(c.workers_max_concurrent, 9);
    zerg_config_free(&c);
    tu_rmtree(dir);
}

/* A NUL byte is refused with its line, column and byte offset, from a
 * string or a file, and the config is left as it was. */
static void test_nul_byte_refused(void **state)
{
    (void)state;
    static const char text[] = "workers:\n  retry_attempts: 3\0\nx: 1\n";
    struct zerg_config c;
    struct zerg_err err = {0};
    zerg_config_defaults(&c);
    assert_int_equal(zerg_config_load_string(&c, "t.yaml", text,
                                             sizeof text - 1, NULL, NULL, &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "t.yaml:2:20: found a NUL byte, expected "
                                     "UTF-8 text (at byte offset 28)"));
    assert_true(is_default(&c));

    const char *dir = tu_mkdtemp();
    char path[4096];
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, sizeof text - 1, f), sizeof text - 1);
    fclose(f);
    zerg_err_clear(&err);
    assert_int_equal(zerg_config_load(&c, path, NULL, NULL, &err),
                     ZERG_EINVAL_INPUT);
    char want[4200];
    snprintf(want, sizeof want, "%s:2:20: found a NUL byte", path);
    assert_true(tu_contains(err.msg, want));
    assert_true(tu_contains(err.msg, "(at byte offset 28)"));
    assert_true(is_default(&c));
    zerg_config_free(&c);
    tu_rmtree(dir);
}

/* ---- quality_gates ------------------------------------------------------ */

/* An upstream ZERG config's gates load as is: `timeout` is its name for
 * timeout_seconds, keys zerg does not use are warned about. */
static void test_gates_upstream_form(void **state)
{
    (void)state;
    struct zerg_config c;
    struct zerg_err err = {0};
    struct warnings w = {0};
    zerg_config_defaults(&c);
    assert_int_equal(load(&c,
                          "quality_gates:\n"
                          "  - name: lint\n"
                          "    command: ruff check .\n"
                          "    required: true\n"
                          "    timeout: 300\n"
                          "  - name: typecheck\n"
                          "    command: mypy zerg/\n"
                          "    required: false\n"
                          "    timeout: 1_80\n"
                          "    coverage_threshold: 80\n",
                          &w, &err),
                     0);
    assert_int_equal(c.ngates, 2);
    assert_int_equal(c.gates[0].timeout_ns, INT64_C(300) * 1000000000);
    assert_true(c.gates[0].required);
    assert_int_equal(c.gates[1].timeout_ns, INT64_C(180) * 1000000000);
    assert_false(c.gates[1].required);
    assert_int_equal(w.n, 1);
    assert_non_null(strstr(w.msg[0], "t.yaml:10:5: unknown key"));
    assert_non_null(strstr(w.msg[0], "coverage_threshold"));
    zerg_config_free(&c);
}

/* The gate values read as every other value of the config: no hex, no
 * inf, yes/no accepted; the message names the key as written. */
static void test_gates_values_as_elsewhere(void **state)
{
    (void)state;
    static const struct {
        const char *yaml, *msg;
    } bad[] = {
        {"quality_gates:\n  - {name: a, command: b, timeout_seconds: 0x10}\n",
         "t.yaml:2:44: quality_gates[0].timeout_seconds: found '0x10', "
         "expected seconds in 0.001..604800"},
        {"quality_gates:\n  - {name: a, command: b, timeout: inf}\n",
         "t.yaml:2:36: quality_gates[0].timeout: found 'inf', expected "
         "seconds in 0.001..604800"},
        {"quality_gates:\n  - {name: a, command: b, required: maybe}\n",
         "t.yaml:2:37: quality_gates[0].required: found 'maybe', expected "
         "true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct zerg_config c;
        struct zerg_err err = {0};
        zerg_config_defaults(&c);
        assert_int_equal(load(&c, bad[i].yaml, NULL, &err), ZERG_EINVAL_INPUT);
        assert_string_equal(err.msg, bad[i].msg);
        assert_int_equal(c.ngates, 0); /* nothing half-loaded */
        zerg_config_free(&c);
    }
    struct zerg_config c;
    struct zerg_err err = {0};
    zerg_config_defaults(&c);
    assert_int_equal(load(&c,
                          "quality_gates:\n  - {name: a, command: b, "
                          "required: no, timeout_seconds: 0.5}\n",
                          NULL, &err),
                     0);
    assert_false(c.gates[0].required);
    assert_int_equal(c.gates[0].timeout_ns, 500000000);
    zerg_config_free(&c);
}

/* ---- unknown keys ------------------------------------------------------ */

static void test_unknown_keys_warn_with_suggestion(void **state)
{
    (void)state;
    struct zerg_config c;
    struct zerg_err err = {0};
    struct warnings w = {0};
    zerg_config_defaults(&c);
    assert_int_equal(load(&c,
                          "workers:\n"
                          "  spawn_retry_atempts: 4\n"
                          "  timeout_minutes: 60\n"
                          "  launcher_type: container\n"
                          "  zzzzzz: 1\n"
                          "worker:\n"
                          "  max_concurrent: 2\n"
                          "resilience:\n"
                          "  heartbeat_interval_seconds: 10\n"
                          "max_concurrent: 4\n"
                          "mcp_servers:\n"
                          "  - name: lint\n"
                          "container:\n"
                          "  pids: 10\n",
                          &w, &err),
                     0);
    assert_int_equal(w.n, 9);
    assert_string_equal(w.msg[0], "t.yaml:2:3: unknown key "
                                  "'workers.spawn_retry_atempts' (did you mean "
                                  "'workers.spawn_retry_attempts'?)");
    assert_string_equal(w.msg[1], "t.yaml:3:3: unknown key "
                                  "'workers.timeout_minutes' (a ZERG "
                                  "setting that zerg does not use)");
    assert_string_equal(w.msg[2], "t.yaml:4:3: unknown key "
                                  "'workers.launcher_type' (did you mean "
                                  "'workers.mode'?)");
    assert_string_equal(w.msg[3], "t.yaml:5:3: unknown key "
                                  "'workers.zzzzzz'");
    assert_string_equal(w.msg[4], "t.yaml:6:1: unknown key 'worker' (did "
                                  "you mean 'workers'?)");
    assert_string_equal(w.msg[5],
                        "t.yaml:9:3: unknown key "
                        "'resilience.heartbeat_interval_seconds' (did you "
                        "mean 'workers.heartbeat_interval_seconds'?)");
    assert_string_equal(w.msg[6], "t.yaml:10:1: unknown key "
                                  "'max_concurrent' (did you mean "
                                  "'workers.max_concurrent'?)");
    assert_string_equal(w.msg[7], "t.yaml:11:1: unknown key "
                                  "'mcp_servers' (a ZERG setting that "
                                  "zerg does not use)");
    /* 'cpus' is more than one edit away: too far for a 4-letter name. */
    assert_string_equal(w.msg[8], "t.yaml:14:3: unknown key "
                                  "'container.pids'");
    /* Unknown keys change nothing. */
    assert_true(is_default(&c));
    zerg_config_free(&c);
}

static void test_unknown_key_flood_is_capped(void **state)
{
    (void)state;
    size_t cap = 200 * 32, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    n += (size_t)snprintf(text, cap, "workers:\n");
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(text + n, cap - n, "  junk_%03d: 1\n", i);
    struct zerg_config c;
    struct zerg_err err = {0};
    struct warnings w = {0};
    zerg_config_defaults(&c);
    assert_int_equal(load(&c, text, &w, &err), 0);
    free(text);
    assert_int_equal(w.n, 33);
    assert_true(tu_contains(w.msg[31], "'workers.junk_031'"));
    assert_string_equal(w.msg[32], "t.yaml: 68 more unknown keys not shown");
    zerg_config_free(&c);
}

/* ---- reflection and JSON ---------------------------------------------- */

static void test_keys_table(void **state)
{
    (void)state;
    size_t n = 0;
    const struct zerg_config_key *k = zerg_config_keys(&n);
    assert_int_equal(n, 59);
    const char *types = "|bool|int|duration|enum|string|argv|number|";
    for (size_t i = 0; i < n; i++) {
        char t[32];
        snprintf(t, sizeof t, "|%s|", k[i].type);
        assert_non_null(strstr(types, t));
        assert_non_null(strchr(k[i].path, '.'));
        assert_true(strlen(k[i].help) > 20);
        assert_int_equal(k[i].help[strlen(k[i].help) - 1], '.');
        assert_true(k[i].allowed[0] && k[i].dflt[0]);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(k[i].path, k[j].path);
    }
    assert_string_equal(k[0].path, "resilience.enabled");
    assert_string_equal(k[n - 1].path, "logging.level");
}

/* Every enum name the program prints loads back to the same value. */
static void test_enum_names_round_trip(void **state)
{
    (void)state;
    for (int b = 0; b < 3; b++) {
        char text[128];
        struct zerg_config c;
        struct zerg_err err = {0};
        zerg_config_defaults(&c);
        snprintf(text, sizeof text,
                 "workers:\n  backoff_strategy: %s\n"
                 "  mode: %s\n",
                 zerg_backoff_name((enum zerg_backoff)b),
                 zerg_mode_name((enum zerg_mode)b));
        assert_int_equal(load(&c, text, NULL, &err), 0);
        assert_int_equal(c.backoff_strategy, b);
        assert_int_equal(c.workers_mode, b);
        zerg_config_free(&c);
    }
    enum zerg_mode m;
    assert_int_equal(zerg_mode_parse("container", &m), 0);
    assert_int_equal(m, ZERG_MODE_CONTAINER);
    assert_int_equal(zerg_mode_parse("docker", &m), -EINVAL);
    assert_string_equal(zerg_backoff_name(ZERG_BACKOFF_LINEAR), "linear");
}

static void test_to_json(void **state)
{
    (void)state;
    struct zerg_config c;
    struct zerg_err err = {0};
    zerg_config_defaults(&c);
    assert_int_equal(load(&c,
                          "workers:\n  spawn_backoff_base_seconds: 0.2\n"
                          "policies:\n  memory_mb: 64\n",
                          NULL, &err),
                     0);
    zerg_json *j = zerg_config_to_json(&c);
    assert_non_null(j);
    /* The 10 sections and the top-level quality_gates list. */
    assert_int_equal(zerg_json_len(j), 11);
    assert_string_equal(zerg_json_key_at(j, 0), "resilience");
    assert_int_equal(zerg_json_get(j, "quality_gates")->type, ZERG_JSON_ARRAY);
    const zerg_json *wk = zerg_json_get(j, "workers");
    assert_int_equal(zerg_json_len(wk), 23);
    assert_true(zerg_json_as_num(
                    zerg_json_get(wk, "spawn_backoff_base_seconds"), 0) == 0.2);
    assert_true(zerg_json_as_num(zerg_json_get(wk, "heartbeat_stale_threshold"),
                                 0) == 120);
    assert_string_equal(
        zerg_json_as_str(zerg_json_get(wk, "spawn_backoff_strategy")),
        "exponential");
    const zerg_json *exec = zerg_json_get(wk, "executor");
    assert_true(zerg_json_is(exec, ZERG_JSON_ARRAY));
    assert_int_equal(zerg_json_len(exec), 3);
    assert_string_equal(zerg_json_as_str(zerg_json_at(exec, 2)),
                        "--dangerously-skip-permissions");
    assert_true(
        zerg_json_is(zerg_json_get(wk, "launch_prefix"), ZERG_JSON_ARRAY));
    assert_true(
        zerg_json_is(zerg_json_get(zerg_json_get(j, "resilience"), "enabled"),
                     ZERG_JSON_BOOL));
    const zerg_json *pol = zerg_json_get(j, "policies");
    assert_true(zerg_json_as_num(zerg_json_get(pol, "memory_mb"), 0) == 64);
    assert_true(
        zerg_json_as_num(zerg_json_get(pol, "time_budget_seconds"), 0) == 0.1);
    assert_string_equal(
        zerg_json_as_str(zerg_json_get(zerg_json_get(j, "logging"), "level")),
        "info");
    assert_string_equal(zerg_json_as_str(zerg_json_get(
                            zerg_json_get(j, "container"), "memory")),
                        "");
    /* Every key of the table is in the JSON, under its section. */
    size_t n;
    const struct zerg_config_key *k = zerg_config_keys(&n);
    for (size_t i = 0; i < n; i++) {
        char sec[64];
        const char *dot = strchr(k[i].path, '.');
        snprintf(sec, sizeof sec, "%.*s", (int)(dot - k[i].path), k[i].path);
        assert_non_null(zerg_json_get(zerg_json_get(j, sec), dot + 1));
    }
    zerg_json_free(j);
    zerg_config_free(&c);
}

/* ---- config.example.yaml and the reference page ------------------------ */

/* Key paths ("section.key") of a YAML file, in order, via libyaml. */
static size_t yaml_paths(const char *text, char paths[][96], size_t max)
{
    yaml_parser_t p;
    yaml_document_t doc;
    size_t n = 0;
    assert_true(yaml_parser_initialize(&p));
    yaml_parser_set_input_string(&p, (const unsigned char *)text, strlen(text));
    assert_true(yaml_parser_load(&p, &doc));
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    assert_non_null(root);
    assert_int_equal(root->type, YAML_MAPPING_NODE);
    for (yaml_node_pair_t *s = root->data.mapping.pairs.start;
         s < root->data.mapping.pairs.top; s++) {
        yaml_node_t *sk = yaml_document_get_node(&doc, s->key);
        yaml_node_t *sv = yaml_document_get_node(&doc, s->value);
        /* quality_gates is the one top-level list (config_gates.c). */
        if (!strcmp((const char *)sk->data.scalar.value, "quality_gates")) {
            assert_int_equal(sv->type, YAML_SEQUENCE_NODE);
            continue;
        }
        assert_int_equal(sv->type, YAML_MAPPING_NODE);
        for (yaml_node_pair_t *k = sv->data.mapping.pairs.start;
             k < sv->data.mapping.pairs.top && n < max; k++) {
            yaml_node_t *kk = yaml_document_get_node(&doc, k->key);
            snprintf(paths[n++], 96, "%s.%s",
                     (const char *)sk->data.scalar.value,
                     (const char *)kk->data.scalar.value);
        }
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    return n;
}

static void test_example_file(void **state)
{
    (void)state;
    const char *path = ZERG_TEST_SOURCE_DIR "/config.example.yaml";
    char *text = tu_read(path);
    assert_non_null(text);

    /* Loads with no warning, and every value is the default. */
    struct zerg_config c;
    struct zerg_err err = {0};
    struct warnings w = {0};
    zerg_config_defaults(&c);
    c.workers_max_concurrent = 99; /* proves the file sets it back */
    if (zerg_config_load(&c, path, collect, &w, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(w.n, 0);
    assert_true(is_default(&c));
    zerg_config_free(&c);

    /* Exactly the keys of the table, in its order. */
    size_t n, got;
    const struct zerg_config_key *k = zerg_config_keys(&n);
    char paths[64][96];
    got = yaml_paths(text, paths, 64);
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(paths[i], k[i].path);

    /* Every key line follows a comment line that explains it. */
    for (size_t i = 0; i < n; i++) {
        char needle[96];
        snprintf(needle, sizeof needle, "\n  %s:", strchr(k[i].path, '.') + 1);
        const char *at = strstr(text, needle);
        assert_non_null(at);
        const char *prev = at - 1;
        while (prev > text && prev[-1] != '\n')
            prev--;
        if (strncmp(prev + strspn(prev, " "), "#", 1))
            fail_msg("%s has no comment above it", k[i].path);
    }
    free(text);
}

/* Unescapes "\|" to "|" and strips backticks and spaces. */
static void cell_text(const char *s, size_t n, char *out, size_t size)
{
    size_t o = 0;
    while (n && *s == ' ')
        s++, n--;
    while (n && s[n - 1] == ' ')
        n--;
    for (size_t i = 0; i < n && o + 1 < size; i++) {
        if (s[i] == '`' || (s[i] == '\\' && i + 1 < n && s[i + 1] == '|'))
            continue;
        out[o++] = s[i];
    }
    out[o] = '\0';
}

/* Splits a markdown table row "| a | b |" into cells (\| is no split). */
static size_t row_cells(const char *line, char cells[][256], size_t max)
{
    size_t n = 0;
    const char *p = line + 1, *start = p;
    for (; *p && *p != '\n' && n < max; p++) {
        if (*p == '|' && p[-1] != '\\') {
            cell_text(start, (size_t)(p - start), cells[n++], 256);
            start = p + 1;
        }
    }
    return n;
}

static void test_reference_page(void **state)
{
    (void)state;
    char *text =
        tu_read(ZERG_TEST_SOURCE_DIR "/docs/wiki/Configuration-Reference.md");
    assert_non_null(text);
    size_t n, rows = 0;
    const struct zerg_config_key *k = zerg_config_keys(&n);
    int found[64] = {0};
    /* Each key row: | `path` | type | `default` | allowed | effect | */
    for (const char *line = text; line; line = strchr(line, '\n')) {
        line += *line == '\n';
        if (strncmp(line, "| `", 3))
            continue;
        char cells[8][256];
        size_t nc = row_cells(line, cells, 8);
        if (nc < 5 || !strchr(cells[0], '.') || strchr(cells[0], ' '))
            continue;
        rows++;
        size_t i = 0;
        while (i < n && strcmp(k[i].path, cells[0]))
            i++;
        if (i == n)
            fail_msg("documented key '%s' does not exist", cells[0]);
        assert_int_equal(found[i], 0);
        found[i] = 1;
        assert_string_equal(cells[1], k[i].type);
        assert_string_equal(cells[2], k[i].dflt);
        assert_string_equal(cells[3], k[i].allowed);
    }
    assert_int_equal(rows, n);
    for (size_t i = 0; i < n; i++) {
        if (!found[i])
            fail_msg("key '%s' is not documented", k[i].path);
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_gates_upstream_form),
        cmocka_unit_test(test_gates_values_as_elsewhere),
        cmocka_unit_test(test_missing_empty_and_comment_files),
        cmocka_unit_test(test_full_valid_file),
        cmocka_unit_test(test_partial_files_stack),
        cmocka_unit_test(test_booleans_yaml11),
        cmocka_unit_test(test_fractional_durations),
        cmocka_unit_test(test_executor_string_is_split),
        cmocka_unit_test(test_malformed_table),
        cmocka_unit_test(test_load_file_errors),
        cmocka_unit_test(test_nul_byte_refused),
        cmocka_unit_test(test_unknown_keys_warn_with_suggestion),
        cmocka_unit_test(test_unknown_key_flood_is_capped),
        cmocka_unit_test(test_keys_table),
        cmocka_unit_test(test_enum_names_round_trip),
        cmocka_unit_test(test_to_json),
        cmocka_unit_test(test_example_file),
        cmocka_unit_test(test_reference_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
