/* test_stream_cli.c - the Codex and Gemini streams (src/agent/stream_codex.c,
 * stream_gemini.c), the adapter table (adapter.c) and what their failures
 * mean (failure.c).
 *
 * The Codex lines are what the real CLI printed (tests/fixtures/codex/);
 * the Gemini ones follow its own formatter (tests/fixtures/gemini/, see
 * its README).  Each stream folds into the summary the worker records:
 * session, tokens with the cache apart, the model, the final message; a
 * CLI's retries of a request are no progress; a failed turn's status and
 * Gemini's exit codes give the class and the CLI's own fix. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/agent.h"
#include "zerg/err.h"
#include "zerg/json.h"

static void fold_file(struct zerg_agent_summary *s, enum zerg_agent_cli cli,
                      const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ZERG_TEST_FIXTURES, name);
    char *t = tu_read(path);
    assert_non_null(t);
    zerg_agent_summary_init_cli(s, cli);
    zerg_agent_summary_feed_text(s, t, strlen(t));
    free(t);
}

static void test_codex_success(void **state)
{
    (void)state;
    struct zerg_agent_summary s;
    struct zerg_agent_usage u;
    fold_file(&s, ZERG_AGENT_CODEX, "codex/success.jsonl");
    assert_int_equal(s.events, 6);
    assert_string_equal(s.session_id, "01a23745-baf3-75b1-9411-71084ca9f6dd");
    assert_true(s.has_result);
    assert_false(s.result.is_error);
    assert_string_equal(s.result.text, "done"); /* the last agent_message */
    zerg_agent_summary_usage(&s, &u);
    assert_int_equal(u.input_tokens, 120); /* 200, 80 of them cached */
    assert_int_equal(u.cache_read_tokens, 80);
    assert_int_equal(u.output_tokens, 14);
    /* One tool call, counted when it started. */
    assert_string_equal(s.tool, "shell /bin/bash -lc 'echo hi > made.txt'");
    assert_int_equal(s.tool_calls, 1);
    zerg_agent_summary_close(&s);
}

static void classify_codex(const char *file, enum zerg_failure_class want,
                           const char *fix_has)
{
    struct zerg_agent_summary s;
    struct zerg_failure_out out;
    fold_file(&s, ZERG_AGENT_CODEX, file);
    struct zerg_failure_in in = {.stage = ZERG_STAGE_COMMAND,
                                 .exit_code = 1,
                                 .is_executor = 1,
                                 .cli = ZERG_AGENT_CODEX,
                                 .agent = &s};
    zerg_failure_classify(&in, &out);
    if (out.cls != want)
        fail_msg("%s: class %s (%s)", file, zerg_failure_class_name(out.cls),
                 out.reason);
    if (fix_has && !strstr(out.fix, fix_has))
        fail_msg("%s: fix '%s'", file, out.fix);
    zerg_agent_summary_close(&s);
}

/* 401: environment, Codex's key fix; 429: rate_limit; 500 (no status in
 * its message): the task's. */
static void test_codex_failures(void **state)
{
    (void)state;
    classify_codex("codex/unauthorized.jsonl", ZERG_FAILURE_ENVIRONMENT,
                   "CODEX_API_KEY");
    classify_codex("codex/rate-limited.jsonl", ZERG_FAILURE_RATE_LIMIT, NULL);
    classify_codex("codex/server-error.jsonl", ZERG_FAILURE_TASK, NULL);
}

/* "Reconnecting..." is the CLI waiting: no progress. */
static void test_codex_retries_are_no_progress(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/codex/offline.jsonl", ZERG_TEST_FIXTURES);
    char *t = tu_read(path);
    assert_non_null(t);
    struct zerg_agent_summary s;
    zerg_agent_summary_init_cli(&s, ZERG_AGENT_CODEX);
    int progress[8] = {0}, n = 0;
    for (char *l = t, *nl; l && *l && n < 8; l = nl ? nl + 1 : NULL, n++) {
        nl = strchr(l, '\n');
        zerg_agent_summary_take(&s, l, nl ? (size_t)(nl - l) : strlen(l),
                                &progress[n]);
    }
    assert_int_equal(n, 5);
    assert_true(progress[0] && progress[1]); /* thread.started, turn.started */
    for (int i = 2; i < n; i++)
        assert_false(progress[i]);
    assert_int_equal(s.api_retries, 3);
    assert_false(s.has_result);
    zerg_agent_summary_close(&s);
    free(t);
}

static void test_gemini_success(void **state)
{
    (void)state;
    struct zerg_agent_summary s;
    struct zerg_agent_usage u;
    fold_file(&s, ZERG_AGENT_GEMINI, "gemini/success.jsonl");
    assert_int_equal(s.events, 9);
    assert_string_equal(s.session_id, "afad6d15-47f2-4016-af3d-4696404ae787");
    assert_string_equal(s.model, "gemini-2.5-pro"); /* init said "auto" */
    assert_false(s.result.is_error);
    /* The deltas after the tool's result, put together. */
    assert_string_equal(s.result.text, "Wrote gem.txt as asked.");
    zerg_agent_summary_usage(&s, &u);
    assert_int_equal(u.input_tokens, 2200);
    assert_int_equal(u.cache_read_tokens, 3000);
    assert_int_equal(u.output_tokens, 150);
    assert_string_equal(s.tool, "write_file gem.txt");
    assert_int_equal(s.tool_calls, 1);
    zerg_agent_summary_close(&s);
}

/* Claude's tool_use block; a label is one line, cut to fit, never inside
 * a UTF-8 sequence. */
static void test_tool_labels(void **state)
{
    (void)state;
    struct zerg_agent_summary s;
    fold_file(&s, ZERG_AGENT_CLAUDE, "claude/success.jsonl");
    assert_string_equal(s.tool, "Write /tmp/ccr/ok/cwd/hello.txt");
    assert_int_equal(s.tool_calls, 1);
    zerg_agent_summary_close(&s);
    struct zerg_err err = {0};
    static const char in[] = "{\"command\":\"make test\\nand more\"}";
    zerg_json *j = zerg_json_parse(in, sizeof in - 1, &err);
    char buf[80];
    zerg_agent_tool_label("Bash", j, buf, sizeof buf);
    assert_string_equal(buf, "Bash make test");
    zerg_json_free(j);
    static const char lng[] =
        "{\"file_path\":\"éééééééééééééééééééééééééééééééééééééééééééééééé."
        "c\"}";
    j = zerg_json_parse(lng, sizeof lng - 1, &err);
    zerg_agent_tool_label("Write", j, buf, sizeof buf);
    assert_true(strlen(buf) < sizeof buf);
    assert_non_null(strstr(buf, "..."));
    assert_true(((unsigned char)buf[strlen(buf) - 4] & 0xc0) != 0xc0);
    zerg_json_free(j);
    zerg_agent_tool_label(NULL, NULL, buf, sizeof buf);
    assert_string_equal(buf, "tool");
}

/* An error result: the task's, with the CLI's words; exit 41 and 55
 * before any stream: environment with Gemini's own fixes. */
static void test_gemini_failures(void **state)
{
    (void)state;
    struct zerg_agent_summary s;
    struct zerg_failure_out out;
    fold_file(&s, ZERG_AGENT_GEMINI, "gemini/api-error.jsonl");
    struct zerg_failure_in in = {.stage = ZERG_STAGE_COMMAND,
                                 .exit_code = 1,
                                 .is_executor = 1,
                                 .cli = ZERG_AGENT_GEMINI,
                                 .agent = &s};
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_TASK);
    assert_non_null(strstr(out.reason, "Reached max session turns"));
    zerg_agent_summary_close(&s);
    struct zerg_failure_in bare = {.stage = ZERG_STAGE_COMMAND,
                                   .exit_code = 41,
                                   .is_executor = 1,
                                   .cli = ZERG_AGENT_GEMINI};
    zerg_failure_classify(&bare, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_ENVIRONMENT);
    assert_non_null(strstr(out.fix, "GEMINI_API_KEY"));
    bare.exit_code = 55;
    zerg_failure_classify(&bare, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_ENVIRONMENT);
    assert_non_null(strstr(out.fix, "GEMINI_CLI_TRUST_WORKSPACE"));
    /* The same exit of another CLI means nothing. */
    bare.cli = ZERG_AGENT_CODEX;
    zerg_failure_classify(&bare, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_TASK);
}

/* Every row has what the worker and the pre-flight need. */
static void test_adapter_rows(void **state)
{
    (void)state;
    for (int i = 0; i < ZERG_AGENT_NCLIS; i++) {
        const struct zerg_agent_adapter *ad = zerg_agent_adapter(i);
        assert_non_null(ad);
        assert_int_equal(ad->cli, i);
        assert_ptr_equal(zerg_agent_adapter_named(ad->name), ad);
        assert_non_null(ad->args);
        assert_non_null(ad->env);
        assert_non_null(ad->key_env);
        assert_true(ad->fix_login && ad->fix_key && ad->fix_install);
        assert_non_null(zerg_agent_bin_key(ad));
    }
    assert_null(zerg_agent_adapter_named("aider"));
    assert_null(zerg_agent_adapter(ZERG_AGENT_NCLIS));
    /* Gemini trusts the worktree; Codex reads the prompt from "-". */
    assert_string_equal(zerg_agent_adapter(ZERG_AGENT_GEMINI)->env[0],
                        "GEMINI_CLI_TRUST_WORKSPACE=true");
    assert_string_equal(zerg_agent_adapter(ZERG_AGENT_CODEX)->stdin_arg, "-");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codex_success),
        cmocka_unit_test(test_codex_failures),
        cmocka_unit_test(test_codex_retries_are_no_progress),
        cmocka_unit_test(test_gemini_success),
        cmocka_unit_test(test_gemini_failures),
        cmocka_unit_test(test_adapter_rows),
        cmocka_unit_test(test_tool_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
