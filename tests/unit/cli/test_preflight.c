/* test_preflight.c - the executor pre-flight (src/cli/preflight.c): which
 * executor it checks, what a missing, failing or working one gives, and
 * the stale-estimate warnings with their cap.  The executors are real
 * programs (`true`, `false`, a path that does not exist), run in
 * subprocess mode; nothing here sleeps.  The CLI is not a library, so its
 * file is compiled in here. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/preflight.c"
#include "cli/shell_check.c"
#include "zerg/err.h"

static struct zerg_graph *graph_of(const char *json)
{
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    assert_int_equal(zerg_graph_parse(&g, "g.json", json, strlen(json), &err),
                     0);
    return g;
}

#define AGENT_GRAPH                                                            \
    "{\"feature\":\"f\",\"tasks\":["                                           \
    "{\"id\":\"A-1\",\"level\":1},"                                            \
    "{\"id\":\"A-2\",\"level\":1,\"command\":\"true\"}]}"

/* Runs the pre-flight with executor.claude = exe (kind claude). */
static void run_claude(const char *exe, const char *json,
                       struct zerg_preflight *pf)
{
    struct zerg_config cfg;
    zerg_config_defaults(&cfg);
    free(cfg.executor_claude);
    cfg.executor_claude = strdup(exe);
    struct zerg_graph *g = graph_of(json);
    unsetenv("ZERG_EXECUTOR");
    assert_int_equal(
        zerg_preflight_run("/proj", &cfg, g, ZERG_MODE_SUBPROCESS, NULL, pf),
        0);
    zerg_graph_free(g);
    zerg_config_free(&cfg);
}

static void no_agent_task_runs_nothing(void **state)
{
    (void)state;
    struct zerg_preflight pf;
    run_claude("/nonexistent/claude",
               "{\"feature\":\"f\",\"tasks\":[{\"id\":\"A-1\",\"level\":1,"
               "\"command\":\"true\"}]}",
               &pf);
    assert_true(pf.ok);
    assert_false(pf.checked);
    assert_int_equal(pf.agent_tasks, 0);
    zerg_preflight_close(&pf);
}

static void missing_on_path_says_install(void **state)
{
    (void)state;
    struct zerg_preflight pf;
    run_claude("zerg-no-such-claude", AGENT_GRAPH, &pf);
    assert_false(pf.ok);
    assert_int_equal(pf.agent_tasks, 1);
    assert_true(tu_contains(pf.error, "`zerg-no-such-claude` "
                                      "(executor.claude) is not found on "
                                      "PATH"));
    assert_true(tu_contains(pf.error, "1 task has no `command`"));
    assert_true(tu_contains(pf.error, "Fix: install the Claude Code CLI"));
    assert_true(tu_contains(pf.error, "set executor.claude"));
    zerg_preflight_close(&pf);
}

static void missing_path_says_no_such_file(void **state)
{
    (void)state;
    struct zerg_preflight pf;
    run_claude("/nonexistent/claude", AGENT_GRAPH, &pf);
    assert_false(pf.ok);
    assert_true(tu_contains(pf.error, "(no such file)"));
    zerg_preflight_close(&pf);
}

static void relative_path_is_the_projects(void **state)
{
    (void)state;
    struct zerg_preflight pf;
    run_claude("bin/claude", AGENT_GRAPH, &pf);
    assert_false(pf.ok);
    assert_true(tu_contains(pf.error, "`/proj/bin/claude`"));
    zerg_preflight_close(&pf);
}

static void failing_version_gives_exit_code(void **state)
{
    (void)state;
    struct zerg_preflight pf;
    run_claude("false", AGENT_GRAPH, &pf);
    assert_false(pf.ok);
    assert_true(pf.checked);
    assert_true(tu_contains(pf.error, "`false --version` exited 1"));
    zerg_preflight_close(&pf);
}

static void answering_executor_passes(void **state)
{
    (void)state;
    struct zerg_preflight pf;
    run_claude("true", AGENT_GRAPH, &pf); /* coreutils: prints a version */
    assert_true(pf.ok);
    assert_true(pf.checked);
    assert_string_equal(pf.exe_key, "executor.claude");
    assert_string_equal(pf.where, "on PATH");
    zerg_preflight_close(&pf);
}

static void kind_command_checks_its_first_word(void **state)
{
    (void)state;
    struct zerg_config cfg;
    struct zerg_preflight pf;
    zerg_config_defaults(&cfg);
    cfg.executor_kind = ZERG_EXECUTOR_COMMAND;
    for (size_t i = 0; i < cfg.executor.n; i++)
        free(cfg.executor.v[i]);
    free(cfg.executor.v);
    cfg.executor.v = calloc(3, sizeof *cfg.executor.v);
    cfg.executor.v[0] = strdup("zerg-no-such-agent");
    cfg.executor.v[1] = strdup("--go");
    cfg.executor.n = 2;
    struct zerg_graph *g = graph_of(AGENT_GRAPH);
    unsetenv("ZERG_EXECUTOR");
    zerg_preflight_run("/proj", &cfg, g, ZERG_MODE_SUBPROCESS, NULL, &pf);
    assert_false(pf.ok);
    assert_true(tu_contains(pf.error, "`zerg-no-such-agent` "
                                      "(workers.executor)"));
    zerg_preflight_close(&pf);
    /* `zerg rush --executor CMD` replaces it: its first word is run. */
    zerg_preflight_run("/proj", &cfg, g, ZERG_MODE_SUBPROCESS, "  true -x y",
                       &pf);
    assert_true(pf.ok);
    assert_string_equal(pf.exe_key, "--executor");
    zerg_preflight_close(&pf);
    zerg_graph_free(g);
    zerg_config_free(&cfg);
}

static void long_estimates_warn_capped(void **state)
{
    (void)state;
    char json[4096];
    size_t n =
        (size_t)snprintf(json, sizeof json, "{\"feature\":\"f\",\"tasks\":[");
    for (int i = 1; i <= 8; i++)
        n += (size_t)snprintf(json + n, sizeof json - n,
                              "%s{\"id\":\"T-%d\",\"level\":1,\"command\":"
                              "\"true\",\"estimate_minutes\":%d}",
                              i > 1 ? "," : "", i, i <= 7 ? 20 : 5);
    snprintf(json + n, sizeof json - n, "]}");
    struct zerg_config cfg;
    zerg_config_defaults(&cfg); /* 600 s: 20 min is over, 5 min is not */
    struct zerg_graph *g = graph_of(json);
    struct zerg_preflight pf = {0};
    assert_int_equal(zerg_preflight_stale_warnings(g, &cfg, &pf), 0);
    /* 5 tasks, "... and 2 more", the note on progress. */
    assert_int_equal(pf.nwarnings, ZERG_PREFLIGHT_WARN_MAX + 2);
    assert_true(tu_contains(pf.warnings[0], "task T-1 is estimated at 20 min"));
    assert_true(tu_contains(pf.warnings[0],
                            "workers.task_stale_timeout_seconds (600 s)"));
    assert_true(tu_contains(pf.warnings[0], "raise the timeout"));
    assert_string_equal(pf.warnings[5], "... and 2 more tasks like that");
    assert_true(tu_contains(pf.warnings[6], "output_is_progress"));
    zerg_preflight_close(&pf);
    zerg_graph_free(g);
    zerg_config_free(&cfg);
}

static void agent_estimates_mention_stream_events(void **state)
{
    (void)state;
    struct zerg_config cfg;
    zerg_config_defaults(&cfg);
    cfg.task_stale_timeout_ns = 60 * ZERG_NS_PER_S;
    struct zerg_graph *g =
        graph_of("{\"feature\":\"f\",\"tasks\":[{\"id\":\"A-1\",\"level\":1,"
                 "\"estimate_minutes\":2},{\"id\":\"A-2\",\"level\":1,"
                 "\"estimate_minutes\":1}]}");
    struct zerg_preflight pf = {0};
    assert_int_equal(zerg_preflight_stale_warnings(g, &cfg, &pf), 0);
    assert_int_equal(pf.nwarnings, 2); /* 1 min is not over 60 s */
    assert_true(tu_contains(pf.warnings[0], "task A-1"));
    assert_true(tu_contains(pf.warnings[1], "every stream event"));
    zerg_preflight_close(&pf);
    zerg_graph_free(g);
    zerg_config_free(&cfg);
}

/* 60 commands of which 3 do not parse alone (one of them only because
 * of bash syntax), one repeated by a second task: exactly the first task
 * of each bad text is named, in graph order, and the good ones are not
 * (they are parsed together, so one bad text must not hide another). */
static void shell_check_names_each_bad_text(void **state)
{
    (void)state;
    char *json = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&json, &len);
    fputs("{\"feature\":\"f\",\"tasks\":[", f);
    for (int i = 0; i < 60; i++) {
        const char *cmd = i == 7    ? "diff <(echo a) <(echo b)"
                          : i == 31 ? "if true; then echo x"
                          : i == 44 ? "echo \\\"unclosed"
                          : i == 50 ? "if true; then echo x"
                                    : "echo task && test -n ok | cat";
        fprintf(f, "%s{\"id\":\"T-%02d\",\"level\":1,\"command\":\"%s\"}",
                i ? "," : "", i, cmd);
    }
    fputs("]}", f);
    fclose(f);
    struct zerg_graph *g = graph_of(json);
    struct zerg_preflight pf = {0};
    assert_int_equal(zerg_preflight_shell_warnings(g, &pf), 0);
    assert_int_equal(pf.nwarnings, 3);
    assert_non_null(strstr(pf.warnings[0], "task T-07: its command cannot"));
    assert_non_null(strstr(pf.warnings[0], "<(...) is bash syntax"));
    assert_non_null(strstr(pf.warnings[1], "task T-31: its command cannot"));
    assert_non_null(strstr(pf.warnings[2], "task T-44: its command cannot"));
    assert_null(strstr(pf.warnings[2], "bash syntax"));
    zerg_preflight_close(&pf);
    zerg_graph_free(g);
    free(json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_agent_task_runs_nothing),
        cmocka_unit_test(shell_check_names_each_bad_text),
        cmocka_unit_test(missing_on_path_says_install),
        cmocka_unit_test(missing_path_says_no_such_file),
        cmocka_unit_test(relative_path_is_the_projects),
        cmocka_unit_test(failing_version_gives_exit_code),
        cmocka_unit_test(answering_executor_passes),
        cmocka_unit_test(kind_command_checks_its_first_word),
        cmocka_unit_test(long_estimates_warn_capped),
        cmocka_unit_test(agent_estimates_mention_stream_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
