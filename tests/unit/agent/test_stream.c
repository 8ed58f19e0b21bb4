/* test_stream.c - reading Claude Code's stream-json (src/agent/stream.c):
 * every line of the runs captured in tests/fixtures/claude/ (Claude Code
 * 2.1.332 against tests/agent/fake_messages_api.py), folded into a
 * summary, plus hand-made malformed, truncated and over-long lines that
 * must read as "other" and never crash. */
#include "testutil.h"

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

/* Parses every line of a fixture into a summary; returns the number of
 * lines of each type in counts[type]. */
static void summarize(const char *name, struct zerg_agent_summary *s,
                      int counts[6])
{
    char *text = fixture(name);
    zerg_agent_summary_init(s);
    memset(counts, 0, 6 * sizeof counts[0]);
    for (char *line = text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        counts[zerg_agent_summary_feed(s, line, n)]++;
        if (!nl)
            break;
    }
    free(text);
}

static void test_success_run(void **state)
{
    struct zerg_agent_summary s;
    int c[6];
    summarize("success.jsonl", &s, c);
    assert_int_equal(c[ZERG_AGENT_EV_SYSTEM], 1);
    assert_int_equal(c[ZERG_AGENT_EV_ASSISTANT], 2);
    assert_int_equal(c[ZERG_AGENT_EV_USER], 1);
    assert_int_equal(c[ZERG_AGENT_EV_RESULT], 1);
    assert_int_equal(c[ZERG_AGENT_EV_OTHER], 0);
    assert_int_equal(s.events, 5);
    assert_true(s.has_result);
    const struct zerg_agent_event *r = &s.result;
    assert_int_equal(r->type, ZERG_AGENT_EV_RESULT);
    assert_false(r->is_error);
    assert_string_equal(r->subtype, "success");
    assert_string_equal(r->text, "done");
    assert_string_equal(r->session_id, "581d0ad0-c6f8-4518-ba20-c01aed06d6e1");
    assert_string_equal(s.session_id, r->session_id);
    assert_true(r->total_cost_usd > 0.01107 && r->total_cost_usd < 0.01109);
    /* Two turns of the fake server's 1000/50/200/100 tokens each. */
    assert_int_equal(r->usage.input_tokens, 2000);
    assert_int_equal(r->usage.output_tokens, 100);
    assert_int_equal(r->usage.cache_read_tokens, 400);
    assert_int_equal(r->usage.cache_creation_tokens, 200);
    assert_int_equal(r->num_turns, 2);
    assert_int_equal(r->duration_ms, 195);
    assert_string_equal(r->terminal_reason, "completed");
    assert_int_equal(r->api_error_status, 0);
    assert_string_equal(s.agent_error, "");
    assert_int_equal(s.resets_at_s, 0);
    assert_int_equal(s.api_retries, 0);
    zerg_agent_summary_close(&s);
}

static void test_not_logged_in(void **state)
{
    struct zerg_agent_summary s;
    int c[6];
    summarize("not-logged-in.jsonl", &s, c);
    assert_int_equal(c[ZERG_AGENT_EV_RESULT], 1);
    assert_true(s.result.is_error);
    /* A failed run still says subtype "success". */
    assert_string_equal(s.result.subtype, "success");
    assert_string_equal(s.result.text,
                        "Not logged in \xc2\xb7 Please run /login");
    assert_string_equal(s.result.terminal_reason, "api_error");
    assert_string_equal(s.agent_error, "authentication_failed");
    assert_int_equal(s.api_error_status, 0);
    assert_true(s.result.total_cost_usd == 0);
    zerg_agent_summary_close(&s);
}

static void test_rate_limit_given_up(void **state)
{
    struct zerg_agent_summary s;
    int c[6];
    summarize("rate-limit-given-up.jsonl", &s, c);
    assert_int_equal(c[ZERG_AGENT_EV_SYSTEM], 3); /* init + 2 api_retry */
    assert_int_equal(s.api_retries, 2);
    assert_string_equal(s.agent_error, "rate_limit");
    assert_int_equal(s.api_error_status, 429);
    assert_int_equal(s.result.api_error_status, 429);
    assert_true(tu_contains(s.result.text, "Request rejected (429)"));
    assert_int_equal(s.resets_at_s, 0);
    zerg_agent_summary_close(&s);
}

static void test_api_retry_line(void **state)
{
    const char *line =
        "{\"type\":\"system\",\"subtype\":\"api_retry\",\"attempt\":2,"
        "\"max_retries\":10,\"retry_delay_ms\":1247,\"error_status\":529,"
        "\"error\":\"overloaded\",\"session_id\":\"s-1\"}\n";
    struct zerg_agent_event ev;
    assert_int_equal(zerg_agent_event_parse(line, strlen(line), &ev),
                     ZERG_AGENT_EV_SYSTEM);
    assert_string_equal(ev.subtype, "api_retry");
    assert_int_equal(ev.retry_attempt, 2);
    assert_int_equal(ev.retry_max, 10);
    assert_int_equal(ev.retry_delay_ms, 1247);
    assert_int_equal(ev.retry_status, 529);
    assert_string_equal(ev.error, "overloaded");
    assert_string_equal(ev.session_id, "s-1");
    assert_null(ev.text);
    zerg_agent_event_close(&ev);
}

static void test_usage_limit_reset(void **state)
{
    struct zerg_agent_summary s;
    int c[6];
    summarize("usage-limit.jsonl", &s, c);
    assert_int_equal(c[ZERG_AGENT_EV_RATE_LIMIT], 1);
    assert_int_equal(s.resets_at_s, 1796127213);
    assert_string_equal(s.agent_error, "rate_limit");
    assert_true(tu_contains(s.result.text, "resets 12:13pm (UTC)"));
    zerg_agent_summary_close(&s);

    summarize("usage-limit-weekly.jsonl", &s, c);
    assert_int_equal(s.resets_at_s, 1796382825);
    zerg_agent_summary_close(&s);
}

static void test_rate_limit_event_fields(void **state)
{
    const char *allowed = "{\"type\":\"rate_limit_event\",\"rate_limit_info\":"
                          "{\"status\":\"allowed\",\"isUsingOverage\":false}}";
    const char *rejected =
        "{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":"
        "\"rejected\",\"resetsAt\":1796127213,\"rateLimitType\":"
        "\"five_hour\"}}";
    struct zerg_agent_event ev;
    assert_int_equal(zerg_agent_event_parse(rejected, strlen(rejected), &ev),
                     ZERG_AGENT_EV_RATE_LIMIT);
    assert_string_equal(ev.rate_limit_status, "rejected");
    assert_string_equal(ev.rate_limit_type, "five_hour");
    assert_int_equal(ev.resets_at_s, 1796127213);
    zerg_agent_event_close(&ev);
    /* An allowed event (every subscription run has one) sets no reset. */
    struct zerg_agent_summary s;
    zerg_agent_summary_init(&s);
    zerg_agent_summary_feed(&s, allowed, strlen(allowed));
    assert_int_equal(s.resets_at_s, 0);
    assert_int_equal(s.events, 1);
    zerg_agent_summary_close(&s);
}

static void test_overloaded_and_api_error(void **state)
{
    struct zerg_agent_summary s;
    int c[6];
    summarize("overloaded.jsonl", &s, c);
    /* 529 reads "server_error" in the assistant line. */
    assert_string_equal(s.agent_error, "server_error");
    assert_int_equal(s.api_error_status, 529);
    assert_int_equal(s.api_retries, 2);
    zerg_agent_summary_close(&s);
    summarize("api-error.jsonl", &s, c);
    assert_int_equal(s.api_error_status, 500);
    assert_true(tu_contains(s.result.text, "API Error: 500"));
    zerg_agent_summary_close(&s);
}

static void test_root_refusal_is_plain_text(void **state)
{
    struct zerg_agent_summary s;
    char *text = fixture("root-refusal.stderr");
    zerg_agent_summary_init(&s);
    zerg_agent_summary_feed_text(&s, text, strlen(text));
    assert_int_equal(s.events, 0);
    assert_false(s.has_result);
    free(text);
    zerg_agent_summary_close(&s);
}

static void expect_other(const char *line, size_t len)
{
    struct zerg_agent_event ev;
    memset(&ev, 0x5a, sizeof ev); /* parse must not read what was there */
    assert_int_equal(zerg_agent_event_parse(line, len, &ev),
                     ZERG_AGENT_EV_OTHER);
    assert_null(ev.text);
    assert_string_equal(ev.session_id, "");
    zerg_agent_event_close(&ev);
}

static void test_malformed_lines_are_other(void **state)
{
    static const char *const lines[] = {
        "",
        "\n",
        "not json at all",
        "{",
        "{\"type\":\"result\",\"is_error\":tru",
        "{\"type\":\"result\",\"result\":\"unterminated",
        "[1,2,3]",
        "42",
        "\"result\"",
        "{}",
        "{\"type\":42}",
        "{\"type\":\"bogus_event\"}",
        "{\"type\":null}",
        "  {\"type\":\"result\"}", /* events start in column one */
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        expect_other(lines[i], strlen(lines[i]));
    expect_other(NULL, 0);
    /* A NUL inside the line does not make a prefix parse. */
    expect_other("{\"type\":\"result\"}\0junk", 22);
}

static void test_wrong_field_types_are_ignored(void **state)
{
    const char *line =
        "{\"type\":\"result\",\"is_error\":\"yes\",\"result\":[1],"
        "\"total_cost_usd\":\"a lot\",\"usage\":\"none\",\"num_turns\":1e300,"
        "\"session_id\":{\"a\":1},\"subtype\":7}";
    struct zerg_agent_event ev;
    assert_int_equal(zerg_agent_event_parse(line, strlen(line), &ev),
                     ZERG_AGENT_EV_RESULT);
    assert_false(ev.is_error);
    assert_null(ev.text);
    assert_true(ev.total_cost_usd == 0);
    assert_int_equal(ev.num_turns, 0);
    assert_int_equal(ev.usage.input_tokens, 0);
    assert_string_equal(ev.session_id, "");
    assert_string_equal(ev.subtype, "");
    zerg_agent_event_close(&ev);
}

static void test_overlong_line_is_other(void **state)
{
    size_t n = ZERG_AGENT_LINE_MAX + 64;
    char *line = malloc(n + 1);
    assert_non_null(line);
    int head = snprintf(line, n, "{\"type\":\"result\",\"result\":\"");
    memset(line + head, 'x', n - head - 2);
    memcpy(line + n - 2, "\"}", 3);
    expect_other(line, n);
    free(line);
}

static void test_long_fields_are_cut(void **state)
{
    size_t n = 3 * ZERG_AGENT_TEXT_MAX;
    char *line = malloc(n + 1000);
    assert_non_null(line);
    int at = sprintf(line, "{\"type\":\"result\",\"session_id\":\"");
    memset(line + at, 's', 500);
    at += 500;
    at += sprintf(line + at, "\",\"result\":\"");
    memset(line + at, 'r', n);
    at += (int)n;
    sprintf(line + at, "\"}");
    struct zerg_agent_event ev;
    assert_int_equal(zerg_agent_event_parse(line, strlen(line), &ev),
                     ZERG_AGENT_EV_RESULT);
    assert_int_equal(strlen(ev.text), ZERG_AGENT_TEXT_MAX);
    assert_int_equal(strlen(ev.session_id), sizeof ev.session_id - 1);
    zerg_agent_event_close(&ev);
    free(line);
}

static void test_later_result_replaces_earlier(void **state)
{
    const char *a = "{\"type\":\"result\",\"result\":\"first\"}";
    const char *b = "{\"type\":\"result\",\"result\":\"second\","
                    "\"is_error\":true}";
    struct zerg_agent_summary s;
    zerg_agent_summary_init(&s);
    zerg_agent_summary_feed(&s, a, strlen(a));
    zerg_agent_summary_feed(&s, b, strlen(b));
    assert_string_equal(s.result.text, "second");
    assert_true(s.result.is_error);
    zerg_agent_summary_close(&s);
    zerg_agent_summary_close(&s); /* closing twice is harmless */
}

static void test_type_names(void **state)
{
    assert_string_equal(zerg_agent_event_type_name(ZERG_AGENT_EV_RESULT),
                        "result");
    assert_string_equal(zerg_agent_event_type_name(ZERG_AGENT_EV_RATE_LIMIT),
                        "rate_limit_event");
    assert_string_equal(zerg_agent_event_type_name(ZERG_AGENT_EV_OTHER),
                        "other");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success_run),
        cmocka_unit_test(test_not_logged_in),
        cmocka_unit_test(test_rate_limit_given_up),
        cmocka_unit_test(test_api_retry_line),
        cmocka_unit_test(test_usage_limit_reset),
        cmocka_unit_test(test_rate_limit_event_fields),
        cmocka_unit_test(test_overloaded_and_api_error),
        cmocka_unit_test(test_root_refusal_is_plain_text),
        cmocka_unit_test(test_malformed_lines_are_other),
        cmocka_unit_test(test_wrong_field_types_are_ignored),
        cmocka_unit_test(test_overlong_line_is_other),
        cmocka_unit_test(test_long_fields_are_cut),
        cmocka_unit_test(test_later_result_replaces_earlier),
        cmocka_unit_test(test_type_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
