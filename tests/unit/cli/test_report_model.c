/* test_report_model.c - what `zerg report` reads out of a run's log and
 * draws (src/cli/report_model.c, report_svg.c): the elapsed time of a run
 * stopped and resumed covers every rush, every attempt gets a bar that
 * no other bar of its lane covers, and the kinds of attempt (retried,
 * crashed, awaiting review) are told apart. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report_html.c"
#include "cli/report_model.c"
#include "cli/report_svg.c"

/* A log line at ms after 2026-01-01T00:00:00Z. */
static void ev(char *buf, size_t size, int ms, const char *worker,
               const char *event, const char *task, const char *data,
               const char *level)
{
    size_t n = strlen(buf);
    snprintf(buf + n, size - n,
             "{\"ts\":\"2026-01-01T00:%02d:%02d.%03dZ\",\"worker\":%s,"
             "\"level\":\"%s\",\"event\":\"%s\",\"task\":%s%s%s,"
             "\"msg\":\"m\",\"feature\":\"f\",\"data\":%s}\n",
             ms / 60000, ms / 1000 % 60, ms % 1000, worker, level, event,
             task ? "\"" : "", task ? task : "null", task ? "\"" : "",
             data ? data : "{}");
}

/* A 3-minute run: one rush stopped after 60 s, the resume 4.7 s long. */
static char *resumed_log(void)
{
    size_t size = 8192;
    char *b = calloc(1, size);
    ev(b, size, 0, "null", "rush_start", NULL, "{\"resume\":false}", "INFO");
    ev(b, size, 10, "0", "task_claimed", "A-L1-001", "{\"attempt\":1}", "INFO");
    ev(b, size, 60, "0", "task_failed", "A-L1-001", "{\"retry\":true}", "WARN");
    ev(b, size, 61, "0", "task_claimed", "A-L1-001", "{\"attempt\":2}", "INFO");
    ev(b, size, 20000, "0", "task_complete", "A-L1-001", NULL, "INFO");
    ev(b, size, 10, "1", "task_claimed", "B-L1-002", "{\"attempt\":1}", "INFO");
    ev(b, size, 3000, "1", "worker_crash", NULL, NULL, "ERROR");
    ev(b, size, 3100, "1", "task_claimed", "B-L1-002", "{\"attempt\":2}",
       "INFO");
    ev(b, size, 5000, "1", "config_change", "B-L1-002", NULL, "WARN");
    ev(b, size, 5001, "1", "task_complete", "B-L1-002", NULL, "INFO");
    ev(b, size, 20001, "0", "task_claimed", "C-L1-003", "{\"attempt\":1}",
       "INFO");
    ev(b, size, 60000, "null", "rush_failed", NULL, "{\"elapsed\":60.1}",
       "ERROR");
    ev(b, size, 175300, "null", "rush_start", NULL, "{\"resume\":true}",
       "INFO");
    ev(b, size, 175310, "0", "task_claimed", "C-L1-003", "{\"attempt\":2}",
       "INFO");
    ev(b, size, 180000, "0", "task_complete", "C-L1-003", NULL, "INFO");
    ev(b, size, 180000, "null", "rush_complete", NULL, "{\"elapsed\":4.7}",
       "INFO");
    return b;
}

static void elapsed_covers_every_rush(void **state)
{
    (void)state;
    struct rp_model m;
    char *log = resumed_log();
    assert_int_equal(rp_model_init(&m, "f"), 0);
    rp_model_feed(&m, log, strlen(log));
    double wall, running;
    rp_model_elapsed(&m, &wall, &running);
    assert_int_equal(m.nss, 2);
    assert_true(wall > 179.99 && wall < 180.01);           /* not 4.7 s */
    assert_true(running > 64.69 && running < 64.71);       /* 60 + 4.7 */
    assert_true(m.elapsed_s > 4.69 && m.elapsed_s < 4.71); /* the last */
    rp_model_close(&m);
    free(log);
}

static void a_single_rush_keeps_its_own_time(void **state)
{
    (void)state;
    struct rp_model m;
    char b[1024] = "";
    ev(b, sizeof b, 100, "null", "rush_start", NULL, "{}", "INFO");
    ev(b, sizeof b, 2100, "null", "rush_complete", NULL, "{\"elapsed\":2.3}",
       "INFO");
    assert_int_equal(rp_model_init(&m, "f"), 0);
    rp_model_feed(&m, b, strlen(b));
    double wall, running;
    rp_model_elapsed(&m, &wall, &running);
    assert_true(running > 2.29 && running < 2.31);
    assert_true(wall > 2.29 && wall < 2.31);
    rp_model_close(&m);
}

static void kinds_of_attempt(void **state)
{
    (void)state;
    struct rp_model m;
    char *log = resumed_log();
    assert_int_equal(rp_model_init(&m, "f"), 0);
    rp_model_feed(&m, log, strlen(log));
    assert_int_equal(m.natt, 6);
    assert_int_equal(m.att[0].outcome, RP_RETRIED);
    assert_int_equal(m.att[1].outcome, RP_COMPLETE);
    assert_int_equal(m.att[2].outcome, RP_CRASHED);
    assert_int_equal(m.att[3].outcome, RP_REVIEW);
    /* The stopped rush's attempt ends with it, not at the resume. */
    assert_int_equal(m.att[4].outcome, RP_INTERRUPTED);
    assert_int_equal(m.att[4].end_ns - m.att[4].start_ns,
                     (int64_t)(60000 - 20001) * 1000000);
    rp_model_close(&m);
    free(log);
}

/* The x and width of every bar of the SVG, in order. */
static size_t bars(const char *svg, double *x, double *w, double *y, size_t max)
{
    size_t n = 0;
    for (const char *p = svg; n < max && (p = strstr(p, "<rect class=\"bar"));
         p++) {
        const char *q = strstr(p, " x=\"");
        assert_non_null(q);
        assert_int_equal(sscanf(q, " x=\"%lf\" y=\"%lf\" width=\"%lf\"", &x[n],
                                &y[n], &w[n]),
                         3);
        n++;
    }
    return n;
}

static void every_attempt_is_drawn_apart(void **state)
{
    (void)state;
    struct rp_model m;
    struct zerg_rbuf b = {0};
    char *log = resumed_log();
    assert_int_equal(rp_model_init(&m, "f"), 0);
    rp_model_feed(&m, log, strlen(log));
    rp_svg_timeline(&b, &m);
    assert_false(b.oom);
    double x[16], w[16], y[16];
    size_t n = bars(b.s, x, w, y, 16);
    assert_int_equal(n, m.natt);
    for (size_t i = 0; i < n; i++) {
        assert_true(w[i] >= MIN_BAR_W); /* the 50 ms failure too */
        for (size_t j = 0; j < i; j++)
            if (y[i] == y[j])
                assert_true(x[i] >= x[j] + w[j] || x[j] >= x[i] + w[i]);
    }
    assert_non_null(strstr(b.s, "k-retried"));
    assert_non_null(strstr(b.s, "k-crashed"));
    assert_non_null(strstr(b.s, "k-review"));
    assert_non_null(strstr(b.s, "class=\"gap\""));
    zerg_rbuf_close(&b);
    rp_model_close(&m);
    free(log);
}

/* Ten levels inside 50 ms: the labels drawn (text x, row y, estimated
 * width) never overlap in a row. */
static void level_labels_never_overlap(void **state)
{
    (void)state;
    struct rp_model m;
    struct zerg_rbuf b = {0};
    char log[8192] = "";
    ev(log, sizeof log, 0, "null", "rush_start", NULL, "{}", "INFO");
    for (int l = 1; l <= 10; l++) {
        char d[32];
        snprintf(d, sizeof d, "{\"level\":%d}", l);
        ev(log, sizeof log, l * 5, "null", "level_start", NULL, d, "INFO");
        ev(log, sizeof log, l * 5 + 4, "null", "level_complete", NULL, d,
           "INFO");
    }
    ev(log, sizeof log, 60000, "null", "rush_complete", NULL, NULL, "INFO");
    assert_int_equal(rp_model_init(&m, "f"), 0);
    rp_model_feed(&m, log, strlen(log));
    rp_svg_timeline(&b, &m);
    double lx[64], ly[64], lw[64];
    size_t n = 0;
    for (const char *p = b.s; n < 64 && (p = strstr(p, "<text x=\"")); p++) {
        char text[32];
        if (sscanf(p,
                   "<text x=\"%lf\" y=\"%lf\" class=\"lvl\" fill=\"%*[^\"]\">"
                   "%31[^<]",
                   &lx[n], &ly[n], text) != 3)
            continue;
        lw[n] = (double)strlen(text) * LABEL_CHAR_W;
        for (size_t j = 0; j < n; j++)
            if (ly[j] == ly[n])
                assert_true(lx[n] >= lx[j] + lw[j] || lx[j] >= lx[n] + lw[n]);
        n++;
    }
    assert_true(n >= 2 && n <= LABEL_ROWS * 2);
    zerg_rbuf_close(&b);
    rp_model_close(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(elapsed_covers_every_rush),
        cmocka_unit_test(a_single_rush_keeps_its_own_time),
        cmocka_unit_test(kinds_of_attempt),
        cmocka_unit_test(every_attempt_is_drawn_apart),
        cmocka_unit_test(level_labels_never_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
