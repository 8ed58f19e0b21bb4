/* test_orch_stdio.c - the workers' stdout event lines (src/orch/orch_stdio.c
 * and the envelope in src/model/protocol.c): the line splitter (partial
 * lines, two lines in one read, an over-long line), the decoder (garbage,
 * bad events), and the lines handed to the intake through a stepped
 * orchestrator: fencing by epoch, a result applied once whichever path
 * comes first, its file kept until the checkpoint, a real pipe read to
 * its end. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orch/orch_fixture.h"
#include "zerg/err.h"

/* ---- the splitter ------------------------------------------------------ */

struct seen {
    char lines[8][64];
    int n, too_long;
    size_t too_long_len;
};

static void see_line(void *ctx, const char *line, size_t len)
{
    struct seen *s = ctx;
    assert_true(s->n < 8);
    snprintf(s->lines[s->n++], sizeof s->lines[0], "%.*s", (int)len, line);
}

static void see_too_long(void *ctx, size_t len)
{
    struct seen *s = ctx;
    s->too_long++;
    s->too_long_len = len;
}

static void feed(struct orch_lines *l, struct seen *s, const char *text)
{
    const struct orch_lines_cb cb = {see_line, see_too_long, s};
    assert_int_equal(orch_lines_feed(l, text, strlen(text), &cb), 0);
}

static void test_lines_partial_and_two_in_one_read(void **state)
{
    (void)state;
    struct orch_lines l = {.max = 64};
    struct seen s = {0};
    feed(&l, &s, "ab");
    assert_int_equal(s.n, 0); /* no line without its end */
    feed(&l, &s, "c\nde");
    assert_int_equal(s.n, 1);
    assert_string_equal(s.lines[0], "abc");
    feed(&l, &s, "f\nx\ny\n");
    assert_int_equal(s.n, 4);
    assert_string_equal(s.lines[1], "def");
    assert_string_equal(s.lines[2], "x");
    assert_string_equal(s.lines[3], "y");
    feed(&l, &s, "\n");
    assert_int_equal(s.n, 5);
    assert_string_equal(s.lines[4], "");
    assert_int_equal(l.len, 0);
    assert_int_equal(s.too_long, 0);
    orch_lines_close(&l);
}

static void test_lines_over_long_dropped(void **state)
{
    (void)state;
    struct orch_lines l = {.max = 16};
    struct seen s = {0};
    feed(&l, &s, "0123456789");
    feed(&l, &s, "0123456789"); /* 20 > 16: dropped, said at once */
    assert_int_equal(s.too_long, 1);
    assert_int_equal(s.too_long_len, 20);
    feed(&l, &s, "more of the same long line");
    assert_int_equal(s.too_long, 1); /* once per line */
    assert_int_equal(s.n, 0);
    feed(&l, &s, "end\nok\n");
    assert_int_equal(s.n, 1); /* nothing of the long one */
    assert_string_equal(s.lines[0], "ok");
    /* Whole in one read, with the next line behind it. */
    feed(&l, &s, "abcdefghijklmnopqrstuvwxyz\nfine\n");
    assert_int_equal(s.too_long, 2);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.lines[1], "fine");
    /* Exactly max is still a line. */
    feed(&l, &s, "0123456789abcdef\n");
    assert_int_equal(s.n, 3);
    assert_string_equal(s.lines[2], "0123456789abcdef");
    orch_lines_close(&l);
}

/* ---- the envelope ------------------------------------------------------ */

static void test_event_round_trip_and_garbage(void **state)
{
    (void)state;
    struct zerg_heartbeat hb = {.worker_id = 3,
                                .epoch = 77,
                                .seq = 5,
                                .attempt = 2,
                                .progress_pct = 40};
    snprintf(hb.task_id, sizeof hb.task_id, "A-L1-001");
    snprintf(hb.step, sizeof hb.step, "command");
    char *line;
    size_t len;
    struct zerg_event ev;
    assert_int_equal(zerg_proto_event_heartbeat(&hb, &line, &len), 0);
    assert_int_equal(line[len - 1], '\n');
    assert_null(memchr(line, '\n', len - 1)); /* one line */
    assert_int_equal(strncmp(line, "{\"zerg\":1,\"kind\":\"heartbeat\"", 28),
                     0);
    assert_int_equal(zerg_proto_event_parse(line, len, &ev), 0);
    assert_int_equal(ev.kind, ZERG_EVENT_HEARTBEAT);
    assert_int_equal(ev.hb.epoch, 77);
    assert_int_equal(ev.hb.seq, 5);
    assert_string_equal(ev.hb.task_id, "A-L1-001");
    free(line);

    struct zerg_result r = {.epoch = 9,
                            .worker_id = 1,
                            .attempt = 1,
                            .exit_code = 1,
                            .outcome = ZERG_OUTCOME_FAILED};
    snprintf(r.task, sizeof r.task, "A-L1-002");
    snprintf(r.stage, sizeof r.stage, "command");
    snprintf(r.error, sizeof r.error, "two\nlines");
    assert_int_equal(zerg_proto_event_result(&r, &line, &len), 0);
    assert_null(memchr(line, '\n', len - 1)); /* the error's is escaped */
    assert_int_equal(zerg_proto_event_parse(line, len - 1, &ev), 0);
    assert_int_equal(ev.kind, ZERG_EVENT_RESULT);
    assert_string_equal(ev.result.task, "A-L1-002");
    assert_string_equal(ev.result.error, "two\nlines");
    assert_int_equal(ev.result.outcome, ZERG_OUTCOME_FAILED);
    /* Cut short: it opens like an event but is none. */
    assert_int_equal(zerg_proto_event_parse(line, len / 2, &ev), ZERG_ECORRUPT);
    free(line);

    static const char *const other[] = {"hello", "", "{\"a\":1}", "[1,2,3]",
                                        "  {\"zerg\":1}"};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++)
        assert_int_equal(
            zerg_proto_event_parse(other[i], strlen(other[i]), &ev), 1);
    static const char *const bad[] = {
        "{\"zerg\":1,\"kind\":\"nope\"}",
        "{\"zerg\":2,\"kind\":\"heartbeat\"}",
        "{\"zerg\":1,\"kind\":\"heartbeat\",\"epoch\":\"x\"}",
        "{\"zerg\":1,\"kind\":\"result\"}",
        "{\"zerg\":1,garbage",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(zerg_proto_event_parse(bad[i], strlen(bad[i]), &ev),
                         ZERG_ECORRUPT);
}

/* ---- lines into a stepped orchestrator --------------------------------- */

/* Seqs far above the fixture's own heartbeat() counter. */
static int result_file_exists(struct fx *x, const char *task, int attempt)
{
    char path[600];
    snprintf(path, sizeof path, "%s/result-%s-%d.json", x->run_dir, task,
             attempt);
    return access(path, F_OK) == 0;
}

static void test_heartbeat_line_fenced_by_epoch(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    tick(x);
    struct slot *sl = &x->o->slots[0];
    assert_int_equal(sl->state, SLOT_STARTING);
    uint64_t epoch = sl->proc.epoch;
    fx_hb_line(x, 0, epoch + 1, NULL, 0, "ready"); /* another incarnation */
    assert_int_equal(sl->state, SLOT_STARTING);
    assert_int_equal(sl->hb_seq, -1);
    fx_hb_line(x, 0, epoch, NULL, 0, "ready");
    assert_int_equal(sl->state, SLOT_READY);
    int64_t seq = sl->hb_seq;
    /* An older beat read after a newer one changes nothing. */
    fx_line_seq -= 5;
    fx_hb_line(x, 0, epoch, NULL, 0, "ready");
    assert_int_equal(sl->hb_seq, seq);
    fx_line_seq += 10;
    fx_free(x);
}

static void test_result_line_applied_once(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    tick(x);
    struct slot *sl = &x->o->slots[0];
    uint64_t epoch = sl->proc.epoch;
    fx_hb_line(x, 0, epoch, NULL, 0, "ready");
    tick(x); /* assigns */
    assert_int_equal(sl->state, SLOT_BUSY);
    const char *id = x->g->tasks[sl->task].id;
    int attempt = task_of(x, id)->attempt;
    fx_hb_line(x, 0, epoch, id, attempt, "command");
    assert_int_equal(status_of(x, id), ZERG_TASK_IN_PROGRESS);
    write_result(x, 0, epoch, id, attempt, 1); /* the worker: file first */
    fx_result_line(x, 0, epoch, id, attempt);
    assert_int_equal(status_of(x, id), ZERG_TASK_COMPLETE);
    assert_int_equal(sl->state, SLOT_READY);
    /* The journal file stays until the checkpoint. */
    assert_true(result_file_exists(x, id, attempt));
    /* The same result again, by file and by line: applied once. */
    char name[128];
    snprintf(name, sizeof name, "result-%s-%d.json", id, attempt);
    zerg_orch_file_changed(x->o, name, x->now);
    fx_result_line(x, 0, epoch, id, attempt);
    assert_int_equal(x->s.metrics.results_fenced, 0);
    assert_int_equal(status_of(x, id), ZERG_TASK_COMPLETE);
    advance(x, 1);
    advance(x, 1);
    assert_false(result_file_exists(x, id, attempt));
    fx_free(x);
}

static void test_stale_result_line_fenced_once(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    start_ready(x);
    struct slot *sl = &x->o->slots[0];
    uint64_t epoch = sl->proc.epoch;
    const char *id = x->g->tasks[sl->task].id;
    int attempt = task_of(x, id)->attempt;
    /* An old incarnation's result for the task: fenced, not applied. */
    write_result(x, 0, epoch - 1, id, attempt, 1);
    fx_result_line(x, 0, epoch - 1, id, attempt);
    assert_int_not_equal(status_of(x, id), ZERG_TASK_COMPLETE);
    /* The line leaves the telling to its file: one fence, not two. */
    assert_int_equal(x->s.metrics.results_fenced, 0);
    char name[128];
    snprintf(name, sizeof name, "result-%s-%d.json", id, attempt);
    zerg_orch_file_changed(x->o, name, x->now);
    assert_int_equal(x->s.metrics.results_fenced, 1);
    assert_int_not_equal(status_of(x, id), ZERG_TASK_COMPLETE);
    fx_free(x);
}

static void test_garbage_and_bad_events(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    tick(x);
    struct slot *sl = &x->o->slots[0];
    uint64_t epoch = sl->proc.epoch;
    const char *noise = "a wrapper says hello";
    orch_stdio_line(x->o, 0, epoch, noise, strlen(noise), x->now);
    const char *bad = "{\"zerg\":1,\"kind\":\"heartbeat\",\"epoch\":true}";
    orch_stdio_line(x->o, 0, epoch, bad, strlen(bad), x->now);
    /* A heartbeat on slot 0's stream naming worker 1. */
    struct zerg_heartbeat hb = {.worker_id = 1, .epoch = epoch, .seq = 1};
    snprintf(hb.step, sizeof hb.step, "ready");
    char *line;
    size_t len;
    assert_int_equal(zerg_proto_event_heartbeat(&hb, &line, &len), 0);
    orch_stdio_line(x->o, 0, epoch, line, len, x->now);
    free(line);
    assert_int_equal(sl->state, SLOT_STARTING);
    char path[600];
    snprintf(path, sizeof path, "%s/.zerg/logs/t/worker-0.log", x->dir);
    char *log = tu_read(path);
    assert_non_null(log);
    assert_true(tu_contains(log, "a wrapper says hello\n"));
    assert_null(strstr(log, "\"zerg\"")); /* a bad event is no output */
    free(log);
    char *events = fx_events(x);
    assert_true(tu_contains(events, "\"worker_event_invalid\""));
    assert_true(tu_contains(events, "not a readable event"));
    assert_true(tu_contains(events, "names another worker"));
    free(events);
    fx_free(x);
}

static void poll_drain(struct orch_stdio *io, struct fx *x)
{
    assert_true(orch_stdio_poll(io, NULL, 0, 0) >= 0);
    orch_stdio_drain(io, x->o, x->now);
}

static void test_pipe_read_to_its_end(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    tick(x);
    struct slot *sl = &x->o->slots[0];
    int p[2];
    assert_int_equal(zerg_worker_events_pipe(p), 0);
    assert_true(p[0] > 0);
    sl->proc.events_fd = p[0];
    struct orch_stdio *io = orch_stdio_new();
    assert_non_null(io);
    orch_stdio_adopt(io, x->o);
    assert_int_equal(sl->proc.events_fd, 0); /* the stream owns it now */
    struct zerg_heartbeat hb = {
        .worker_id = 0, .epoch = sl->proc.epoch, .seq = ++fx_line_seq};
    snprintf(hb.step, sizeof hb.step, "ready");
    char *line;
    size_t len;
    assert_int_equal(zerg_proto_event_heartbeat(&hb, &line, &len), 0);
    assert_int_equal(write(p[1], line, 10), 10);
    poll_drain(io, x);
    assert_int_equal(sl->state, SLOT_STARTING); /* half a line */
    assert_int_equal(write(p[1], line + 10, len - 10), (ssize_t)(len - 10));
    assert_int_equal(write(p[1], "stray output\n", 13), 13);
    poll_drain(io, x);
    assert_int_equal(sl->state, SLOT_READY);
    free(line);
    close(p[1]);
    poll_drain(io, x); /* EOF: the stream is closed */
    assert_int_equal(fcntl(p[0], F_GETFD), -1);
    assert_int_equal(errno, EBADF);
    orch_stdio_free(io, x->o);
    char path[600];
    snprintf(path, sizeof path, "%s/.zerg/logs/t/worker-0.log", x->dir);
    char *log = tu_read(path);
    assert_non_null(log);
    assert_true(tu_contains(log, "stray output\n"));
    free(log);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_partial_and_two_in_one_read),
        cmocka_unit_test(test_lines_over_long_dropped),
        cmocka_unit_test(test_event_round_trip_and_garbage),
        cmocka_unit_test(test_heartbeat_line_fenced_by_epoch),
        cmocka_unit_test(test_result_line_applied_once),
        cmocka_unit_test(test_stale_result_line_fenced_once),
        cmocka_unit_test(test_garbage_and_bad_events),
        cmocka_unit_test(test_pipe_read_to_its_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
