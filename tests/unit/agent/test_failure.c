/* test_failure.c - the failure classes (src/agent/failure.c): each class
 * from the exit status alone, and the agent's own account read from the
 * runs captured in tests/fixtures/claude/ (Claude Code 2.1.332), both
 * from a summary the worker built and from the raw output tail. */
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/agent.h"

#define FIXTURES ZERG_TEST_FIXTURES "/claude/"

static char *fixture(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, FIXTURES "%s", name);
    char *t = tu_read(path);
    if (!t)
        fail_msg("missing fixture %s", path);
    return t;
}

/* Classifies a failed executor run (exit 1) whose output is the fixture,
 * once from the tail and once from a summary; both must agree. */
static struct zerg_failure_out agent_run(const char *name)
{
    char *tail = fixture(name);
    struct zerg_failure_in in = {.stage = ZERG_STAGE_COMMAND,
                                 .exit_code = 1,
                                 .is_executor = 1,
                                 .executor = "claude",
                                 .output_tail = tail};
    struct zerg_failure_out from_tail, from_summary;
    zerg_failure_classify(&in, &from_tail);
    struct zerg_agent_summary s;
    zerg_agent_summary_init(&s);
    zerg_agent_summary_feed_text(&s, tail, strlen(tail));
    in.agent = &s;
    zerg_failure_classify(&in, &from_summary);
    zerg_agent_summary_close(&s);
    free(tail);
    assert_int_equal(from_tail.cls, from_summary.cls);
    assert_string_equal(from_tail.reason, from_summary.reason);
    assert_int_equal(from_tail.reset_at_s, from_summary.reset_at_s);
    return from_tail;
}

static void test_names_round_trip(void **state)
{
    for (int i = 0; i < ZERG_FAILURE_CLASS_COUNT; i++) {
        const char *name = zerg_failure_class_name(i);
        assert_non_null(name);
        enum zerg_failure_class c = ZERG_FAILURE_TASK;
        assert_int_equal(zerg_failure_class_parse(name, &c), 0);
        assert_int_equal(c, i);
    }
    assert_string_equal(zerg_failure_class_name(ZERG_FAILURE_RATE_LIMIT),
                        "rate_limit");
    assert_null(zerg_failure_class_name(ZERG_FAILURE_CLASS_COUNT));
    enum zerg_failure_class c = ZERG_FAILURE_CRASH;
    assert_int_equal(zerg_failure_class_parse("ratelimit", &c), -EINVAL);
    assert_int_equal(zerg_failure_class_parse(NULL, &c), -EINVAL);
    assert_int_equal(c, ZERG_FAILURE_CRASH);
    enum zerg_failure_stage st;
    assert_int_equal(zerg_failure_stage_parse("verification", &st), 0);
    assert_int_equal(st, ZERG_STAGE_VERIFICATION);
    assert_string_equal(zerg_failure_stage_name(ZERG_STAGE_SETUP), "setup");
    assert_int_equal(zerg_failure_stage_parse("build", &st), -EINVAL);
}

static void test_agent_success_fixture_exit_nonzero_is_task(void **state)
{
    /* Not an agent failure at all: exit 1 after a good run (the CLI does
     * not do that, a wrapper might) is the task's. */
    struct zerg_failure_out out = agent_run("success.jsonl");
    assert_int_equal(out.cls, ZERG_FAILURE_TASK);
    assert_true(tu_contains(out.reason, "done"));
    assert_string_equal(out.fix, "");
}

static void test_not_logged_in(void **state)
{
    struct zerg_failure_out out = agent_run("not-logged-in.jsonl");
    assert_int_equal(out.cls, ZERG_FAILURE_ENVIRONMENT);
    assert_true(tu_contains(out.reason, "Not logged in"));
    assert_true(tu_contains(out.fix, "ANTHROPIC_API_KEY"));
    assert_true(tu_contains(out.fix, "~/.claude"));
    assert_true(tu_contains(out.fix, "docs/wiki/Agents.md"));
}

static void test_invalid_api_key(void **state)
{
    struct zerg_failure_out out = agent_run("invalid-api-key.jsonl");
    assert_int_equal(out.cls, ZERG_FAILURE_ENVIRONMENT);
    assert_true(tu_contains(out.reason, "Invalid API key"));
    assert_true(tu_contains(out.fix, "valid key"));
}

static void test_root_refusal(void **state)
{
    struct zerg_failure_out out = agent_run("root-refusal.stderr");
    assert_int_equal(out.cls, ZERG_FAILURE_ENVIRONMENT);
    assert_true(tu_contains(out.reason, "root"));
    assert_true(tu_contains(out.fix, "IS_SANDBOX=1"));
}

static void test_rate_limit_given_up(void **state)
{
    struct zerg_failure_out out = agent_run("rate-limit-given-up.jsonl");
    assert_int_equal(out.cls, ZERG_FAILURE_RATE_LIMIT);
    assert_true(tu_contains(out.reason, "429"));
    /* An API-key 429 gives no reset time: the pool backs off. */
    assert_int_equal(out.reset_at_s, 0);
    assert_string_equal(out.fix, "");
}

static void test_usage_limit_has_reset_time(void **state)
{
    struct zerg_failure_out out = agent_run("usage-limit.jsonl");
    assert_int_equal(out.cls, ZERG_FAILURE_RATE_LIMIT);
    assert_int_equal(out.reset_at_s, 1796127213);
    assert_true(tu_contains(out.reason, "5-hour limit"));
    out = agent_run("usage-limit-weekly.jsonl");
    assert_int_equal(out.cls, ZERG_FAILURE_RATE_LIMIT);
    assert_int_equal(out.reset_at_s, 1796382825);
}

static void test_overloaded_is_rate_limit(void **state)
{
    struct zerg_failure_out out = agent_run("overloaded.jsonl");
    assert_int_equal(out.cls, ZERG_FAILURE_RATE_LIMIT);
    assert_true(tu_contains(out.reason, "529"));
    assert_int_equal(out.reset_at_s, 0);
}

static void test_other_api_errors_are_task(void **state)
{
    struct zerg_failure_out out = agent_run("api-error.jsonl");
    assert_int_equal(out.cls, ZERG_FAILURE_TASK);
    assert_true(tu_contains(out.reason, "API Error: 500"));
    out = agent_run("timeout.jsonl");
    assert_int_equal(out.cls, ZERG_FAILURE_TASK);
    assert_true(tu_contains(out.reason, "Request timed out"));
}

static void test_reason_is_one_line(void **state)
{
    struct zerg_failure_in in = {.stage = ZERG_STAGE_COMMAND,
                                 .exit_code = 2,
                                 .output_tail = "make: ***\nline two\n\n"};
    struct zerg_failure_out out;
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_TASK);
    assert_string_equal(out.reason, "command exited 2: line two");
    assert_null(strchr(out.reason, '\n'));
}

static void test_verification_failure_is_task(void **state)
{
    /* Agent-like words in a test's output do not make it rate_limit. */
    const char *tail = "{\"type\":\"assistant\",\"error\":\"rate_limit\"}\n"
                       "FAIL: You've hit your limit\n";
    struct zerg_failure_in in = {.stage = ZERG_STAGE_VERIFICATION,
                                 .exit_code = 1,
                                 .is_executor = 1,
                                 .output_tail = tail};
    struct zerg_failure_out out;
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_TASK);
    assert_true(tu_contains(out.reason, "verification exited 1"));
}

static void test_task_command_is_not_read_as_agent(void **state)
{
    /* A task's own command (not the executor) that prints the root
     * refusal, or exits 127, failed as a task. */
    struct zerg_failure_in in = {
        .stage = ZERG_STAGE_COMMAND,
        .exit_code = 127,
        .output_tail = "--dangerously-skip-permissions cannot be used with "
                       "root/sudo privileges for security reasons\n"};
    struct zerg_failure_out out;
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_TASK);
}

static void test_executor_missing(void **state)
{
    struct zerg_failure_in in = {.stage = ZERG_STAGE_COMMAND,
                                 .exit_code = 127,
                                 .is_executor = 1,
                                 .executor = "claude",
                                 .output_tail = "sh: 1: claude: not found\n"};
    struct zerg_failure_out out;
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_ENVIRONMENT);
    assert_true(tu_contains(out.reason, "\"claude\""));
    assert_true(tu_contains(out.fix, "install the Claude Code CLI"));
    in.exit_code = 126;
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_ENVIRONMENT);
    /* A spawn that failed with ENOENT, whatever the exit code says. */
    struct zerg_failure_in spawn = {
        .stage = ZERG_STAGE_COMMAND, .exit_code = -1, .exec_failed = 1};
    zerg_failure_classify(&spawn, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_ENVIRONMENT);
    assert_true(tu_contains(out.reason, "the executor could not be run"));
}

static void test_timeout_crash_conflict_setup(void **state)
{
    struct zerg_failure_out out;
    struct zerg_failure_in in = {
        .stage = ZERG_STAGE_VERIFICATION, .signal = SIGKILL, .timed_out = 1};
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_TIMEOUT);
    assert_string_equal(out.reason, "verification timed out");

    in = (struct zerg_failure_in){
        .stage = ZERG_STAGE_COMMAND, .signal = SIGSEGV, .is_executor = 1};
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_CRASH);
    assert_true(tu_contains(out.reason, "signal 11"));

    in = (struct zerg_failure_in){
        .stage = ZERG_STAGE_COMMAND, .conflict = 1, .timed_out = 1};
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_CONFLICT);

    in = (struct zerg_failure_in){
        .stage = ZERG_STAGE_SETUP,
        .exit_code = 128,
        .output_tail = "fatal: 'zerg/f/T-1' is already checked out\n"};
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_ENVIRONMENT);
    assert_true(tu_contains(out.reason, "already checked out"));
    assert_true(out.fix[0] != '\0');
}

static void test_agent_without_output_is_task(void **state)
{
    struct zerg_failure_in in = {
        .stage = ZERG_STAGE_COMMAND, .exit_code = 1, .is_executor = 1};
    struct zerg_failure_out out;
    zerg_failure_classify(&in, &out);
    assert_int_equal(out.cls, ZERG_FAILURE_TASK);
    assert_string_equal(out.reason, "command exited 1");
    assert_int_equal(out.reset_at_s, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_agent_success_fixture_exit_nonzero_is_task),
        cmocka_unit_test(test_not_logged_in),
        cmocka_unit_test(test_invalid_api_key),
        cmocka_unit_test(test_root_refusal),
        cmocka_unit_test(test_rate_limit_given_up),
        cmocka_unit_test(test_usage_limit_has_reset_time),
        cmocka_unit_test(test_overloaded_is_rate_limit),
        cmocka_unit_test(test_other_api_errors_are_task),
        cmocka_unit_test(test_reason_is_one_line),
        cmocka_unit_test(test_verification_failure_is_task),
        cmocka_unit_test(test_task_command_is_not_read_as_agent),
        cmocka_unit_test(test_executor_missing),
        cmocka_unit_test(test_timeout_crash_conflict_setup),
        cmocka_unit_test(test_agent_without_output_is_task),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
