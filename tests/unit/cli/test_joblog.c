/* test_joblog.c - the rows of `zerg logs --joblog` (src/cli/joblog.c):
 * monitor events and result records in, one TSV / JSON row per attempt
 * out.  The CLI is not a library, so its file is compiled in here. */
#include "testutil.h"

#include <string.h>

#include "cli/joblog.c"

/* Feeds one event line. */
static void ev(struct zerg_joblog *jl, const char *line)
{
    zerg_json *rec = zerg_json_parse(line, strlen(line), NULL);
    assert_non_null(rec);
    zerg_joblog_event(jl, rec);
    zerg_json_free(rec);
}

#define T(sec) "\"ts\":\"2026-02-03T05:41:" sec "Z\""
#define START(resume, run)                                                     \
    "{" T("00.000") ",\"event\":\"rush_start\",\"worker\":null,"               \
                    "\"data\":{\"resume\":" resume ",\"run_id\":\"" run "\"}}"
#define CLAIM(sec, w, task, n)                                                 \
    "{" T(sec) ",\"event\":\"task_claimed\",\"worker\":" w ",\"task\":\"" task \
               "\",\"data\":{\"attempt\":" n "}}"
#define STARTED(sec, w, task, n)                                               \
    "{" T(sec) ",\"event\":\"task_started\",\"worker\":" w ",\"task\":\"" task \
               "\",\"data\":{\"attempt\":" n "}}"

static const char *tsv(const struct zerg_jl_row *row)
{
    static char buf[512];
    assert_true(zerg_jl_format_tsv(row, buf, sizeof buf) < (int)sizeof buf);
    return buf;
}

static struct zerg_result result(const char *task, int attempt, int ok)
{
    struct zerg_result r = {.attempt = attempt,
                            .worker_id = 0,
                            .outcome = ok ? ZERG_OUTCOME_COMPLETE
                                          : ZERG_OUTCOME_FAILED,
                            .exit_code = ok ? 0 : 3,
                            .duration_ms = 1234};
    snprintf(r.task, sizeof r.task, "%s", task);
    snprintf(r.run_id, sizeof r.run_id, "run1");
    if (ok)
        snprintf(r.commit, sizeof r.commit, "%s",
                 "0123456789abcdef0123456789abcdef01234567");
    else
        snprintf(r.cls, sizeof r.cls, "task");
    return r;
}

static void retry_then_complete(void **state)
{
    (void)state;
    struct zerg_joblog jl = {0};
    ev(&jl, START("false", "run1"));
    ev(&jl, CLAIM("01.000", "1", "A-1", "1"));
    ev(&jl, STARTED("01.500", "1", "A-1", "1"));
    ev(&jl, "{" T("02.000") ",\"event\":\"task_failed\",\"worker\":1,"
                            "\"task\":\"A-1\",\"data\":{\"failure\":\"exit\","
                            "\"exit_code\":3,"
                            "\"signal\":0,\"attempt\":1}}");
    ev(&jl, CLAIM("03.000", "0", "A-1", "2"));
    ev(&jl, "{" T("04.000") ",\"event\":\"task_complete\",\"worker\":0,"
                            "\"task\":\"A-1\",\"data\":{\"attempt\":2}}");
    struct zerg_result r1 = result("A-1", 1, 0), r2 = result("A-1", 2, 1);
    assert_int_equal(zerg_joblog_result(&jl, &r1), 1);
    assert_int_equal(zerg_joblog_result(&jl, &r2), 1);
    zerg_joblog_sort(&jl);
    assert_int_equal(jl.n, 2);
    assert_string_equal(tsv(&jl.rows[0]), "A-1\t1\t1\t2026-02-03T05:41:01.500Z"
                                          "\t1.234\t3\tfailed\ttask\t-\t-\n");
    /* Claimed but never seen started: the claim is its start. */
    assert_string_equal(tsv(&jl.rows[1]),
                        "A-1\t2\t0\t2026-02-03T05:41:03.000Z\t1.234\t0\t"
                        "complete\t-\t-\t0123456789ab\n");
    zerg_joblog_close(&jl);
}

/* kill -9 of the worker: no record, the events give the row. */
static void killed_worker_without_record(void **state)
{
    (void)state;
    struct zerg_joblog jl = {0};
    ev(&jl, START("false", "run1"));
    ev(&jl, STARTED("01.000", "2", "K-1", "1"));
    ev(&jl,
       "{" T("03.250") ",\"event\":\"worker_crash\",\"worker\":2,"
                       "\"task\":null,\"data\":{\"exit_code\":-1,\"signal\":9,"
                       "\"task\":\"K-1\"}}");
    ev(&jl, "{" T("03.250") ",\"event\":\"task_reassigned\",\"worker\":2,"
                            "\"task\":\"K-1\",\"data\":{\"failure\":\"crash\","
                            "\"exit_code\":-1,\"signal\":9,\"attempt\":1}}");
    ev(&jl, STARTED("04.000", "0", "K-1", "2"));
    assert_int_equal(jl.n, 2);
    assert_string_equal(tsv(&jl.rows[0]),
                        "K-1\t1\t2\t2026-02-03T05:41:01.000Z"
                        "\t2.250\tsig9\tcrashed\tcrash\t-\t-\n");
    assert_string_equal(tsv(&jl.rows[1]), "K-1\t2\t0\t2026-02-03T05:41:04.000Z"
                                          "\t-\t-\trunning\t-\t-\t-\n");
    zerg_json *j = zerg_jl_to_json(&jl.rows[0]);
    char *text = zerg_json_encode(j, NULL, NULL);
    assert_string_equal(
        text, "{\"task\":\"K-1\",\"attempt\":1,\"worker\":2,\"start\":"
              "\"2026-02-03T05:41:01.000Z\",\"runtime\":2.25,\"exit\":null,"
              "\"signal\":9,\"outcome\":\"crashed\",\"class\":\"crash\","
              "\"cost\":null,\"commit\":null}");
    free(text);
    zerg_json_free(j);
    zerg_joblog_close(&jl);
}

/* A new run drops the last one's rows; a resume keeps them; a record
 * of another run is not this attempt's. */
static void runs_and_records(void **state)
{
    (void)state;
    struct zerg_joblog jl = {0};
    ev(&jl, START("false", "old"));
    ev(&jl, STARTED("01.000", "0", "OLD-1", "1"));
    ev(&jl, START("false", "run1"));
    ev(&jl, STARTED("02.000", "0", "B-1", "1"));
    ev(&jl, START("true", "run2"));
    ev(&jl, STARTED("03.000", "1", "B-1", "2"));
    assert_int_equal(jl.n, 2);
    struct zerg_result stale = result("B-1", 1, 1);
    snprintf(stale.run_id, sizeof stale.run_id, "old");
    assert_int_equal(zerg_joblog_result(&jl, &stale), 0);
    struct zerg_result resumed = result("B-1", 2, 1);
    snprintf(resumed.run_id, sizeof resumed.run_id, "run2");
    assert_int_equal(zerg_joblog_result(&jl, &resumed), 1);
    assert_string_equal(zerg_jl_outcome(&jl.rows[0]), "running");
    assert_string_equal(zerg_jl_outcome(&jl.rows[1]), "complete");
    zerg_joblog_close(&jl);
}

/* Events without data.attempt are about the task's latest attempt. */
static void conflict_pause_fenced_and_order(void **state)
{
    (void)state;
    struct zerg_joblog jl = {0};
    ev(&jl, START("false", "run1"));
    ev(&jl, STARTED("05.000", "0", "C-1", "1"));
    ev(&jl, STARTED("02.000", "1", "R-1", "1"));
    ev(&jl, STARTED("01.000", "2", "F-1", "1"));
    ev(&jl, "{" T("06.000") ",\"event\":\"merge_conflict\",\"worker\":0,"
                            "\"task\":\"C-1\",\"data\":{\"paths\":\"x\"}}");
    ev(&jl, "{" T("06.000") ",\"event\":\"pool_pause\",\"worker\":1,"
                            "\"task\":\"R-1\",\"data\":{\"wait\":60}}");
    ev(&jl, "{" T("06.000") ",\"event\":\"result_fenced\",\"worker\":2,"
                            "\"task\":\"F-1\",\"data\":{\"attempt\":1,\"why\":"
                            "\"epoch\"}}");
    zerg_joblog_sort(&jl);
    assert_string_equal(jl.rows[0].task, "F-1");
    assert_string_equal(zerg_jl_outcome(&jl.rows[0]), "fenced");
    assert_string_equal(jl.rows[1].task, "R-1");
    assert_string_equal(tsv(&jl.rows[1]), "R-1\t1\t1\t2026-02-03T05:41:02.000Z"
                                          "\t4.000\t-\treassigned\trate_limit"
                                          "\t-\t-\n");
    assert_string_equal(tsv(&jl.rows[2]), "C-1\t1\t0\t2026-02-03T05:41:05.000Z"
                                          "\t1.000\t-\treassigned\tconflict"
                                          "\t-\t-\n");
    zerg_joblog_close(&jl);
}

/* An agent's cost with 4 decimals; a record's class with a tab or a
 * newline in it cannot break the table. */
static void cost_and_sanitized_class(void **state)
{
    (void)state;
    struct zerg_joblog jl = {0};
    ev(&jl, START("false", "run1"));
    ev(&jl, STARTED("01.000", "3", "G-1", "1"));
    struct zerg_result r = result("G-1", 1, 0);
    snprintf(r.cls, sizeof r.cls, "a\tb\nc");
    snprintf(r.session_id, sizeof r.session_id, "s1");
    r.cost_usd = 0.12346;
    r.signal = 15;
    assert_int_equal(zerg_joblog_result(&jl, &r), 1);
    assert_string_equal(tsv(&jl.rows[0]), "G-1\t1\t3\t2026-02-03T05:41:01.000Z"
                                          "\t1.234\tsig15\tfailed\ta b c\t"
                                          "0.1235\t-\n");
    zerg_joblog_close(&jl);
}

/* Thousands of tasks: each event still finds its own attempt. */
static void many_tasks(void **state)
{
    (void)state;
    struct zerg_joblog jl = {0};
    char line[256];
    ev(&jl, START("false", "run1"));
    for (int a = 1; a <= 2; a++)
        for (int i = 0; i < 3000; i++) {
            snprintf(line, sizeof line,
                     "{" T("01.000") ",\"event\":\"task_started\","
                                     "\"worker\":%d,\"task\":\"T-%d\",\"data\":"
                                     "{\"attempt\":%d}}",
                     a, i, a);
            ev(&jl, line);
        }
    snprintf(line, sizeof line,
             "{" T("02.000") ",\"event\":\"task_complete\",\"worker\":2,"
                             "\"task\":\"T-2999\",\"data\":{}}");
    ev(&jl, line);
    assert_int_equal(jl.n, 6000);
    struct zerg_jl_row *r = find(&jl, "T-2999", 0);
    assert_int_equal(r->attempt, 2);
    assert_string_equal(zerg_jl_outcome(r), "complete");
    assert_int_equal(find(&jl, "T-17", 1)->worker, 1);
    assert_null(find(&jl, "T-3000", 0));
    zerg_joblog_close(&jl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(retry_then_complete),
        cmocka_unit_test(killed_worker_without_record),
        cmocka_unit_test(runs_and_records),
        cmocka_unit_test(conflict_pause_fenced_and_order),
        cmocka_unit_test(cost_and_sanitized_class),
        cmocka_unit_test(many_tasks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
