/* test_transcript.c - `zerg logs --task` reads an agent attempt as a
 * transcript (src/cli/transcript.c) for each CLI: Claude Code's events,
 * and Codex's and Gemini's measured streams (tests/fixtures/), each event
 * one short line, zerg's own lines kept, nothing raw. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/transcript.c"

static char *fixture(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ZERG_TEST_FIXTURES, name);
    char *t = tu_read(path);
    assert_non_null(t);
    *len = strlen(t);
    return t;
}

static char *render(const char *text, size_t len)
{
    size_t n = 0;
    assert_true(zerg_transcript_has_events(text, len));
    char *out = zerg_transcript(text, len, &n);
    assert_non_null(out);
    assert_int_equal(strlen(out), n);
    assert_null(strstr(out, "{\"type\""));
    return out;
}

static void test_transcript_claude(void **st)
{
    (void)st;
    const char log[] =
        "==== zerg: command of task T-1 ====\n"
        "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s-1\","
        "\"model\":\"claude-x\"}\n"
        "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":"
        "\"tool_use\",\"name\":\"Write\",\"input\":{\"file_path\":\"a.c\"}}]}}"
        "\n"
        "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_"
        "result\","
        "\"content\":\"File created\"}]}}\n"
        "{\"type\":\"stream_event\",\"event\":{}}\n"
        "{\"type\":\"result\",\"is_error\":false,\"num_turns\":2,"
        "\"total_cost_usd\":0.25,\"usage\":{\"input_tokens\":10,"
        "\"output_tokens\":5},\"result\":\"wrote a.c\"}\n";
    char *out = render(log, sizeof log - 1);
    assert_true(tu_contains(out, "==== zerg: command of task T-1 ====\n"
                                 "session s-1, model claude-x\n"
                                 "tool:  Write a.c\n"
                                 "  -> File created\n"
                                 "result: success, 2 turns, $0.2500"));
    assert_true(tu_contains(out, "final: wrote a.c\n"));
    free(out);
}

static void test_transcript_codex(void **st)
{
    (void)st;
    size_t len;
    char *log = fixture("codex/success.jsonl", &len);
    char *out = render(log, len);
    assert_true(tu_contains(out,
                            "session 01a23745-baf3-75b1-9411-71084ca9f6dd\n"
                            "tool:  shell /bin/bash -lc 'echo hi > "
                            "made.txt'\n"
                            "agent: done\n"
                            "result: success, 1 turn, 120 in / 14 out "
                            "tokens (cache 80 read)\n"));
    free(out);
    free(log);
    log = fixture("codex/unauthorized.jsonl", &len);
    out = render(log, len);
    assert_true(tu_contains(out, "result: error"));
    assert_true(tu_contains(out, "error: unexpected status 401"));
    free(out);
    free(log);
}

static void test_transcript_gemini(void **st)
{
    (void)st;
    size_t len;
    char *log = fixture("gemini/success.jsonl", &len);
    char *out = render(log, len);
    assert_true(tu_contains(out, "session "));
    assert_true(tu_contains(out, "tool:  write_file"));
    assert_true(tu_contains(out, "result: success"));
    /* The message's pieces make one line, the user's prompt none. */
    assert_true(tu_contains(out, "agent: I will write the file.\n"
                                 "tool:  write_file gem.txt\n"));
    assert_true(tu_contains(out, "agent: Wrote gem.txt as asked.\n"
                                 "result: success"));
    assert_null(strstr(out, "You are implementing"));
    free(out);
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transcript_claude),
        cmocka_unit_test(test_transcript_codex),
        cmocka_unit_test(test_transcript_gemini),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
