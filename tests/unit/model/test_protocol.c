/* test_protocol.c - the orchestrator <-> worker files (src/model/protocol.c):
 * every kind round-trips, null task ids stay empty, garbage and truncated
 * files are ZERG_ECORRUPT, missing ones -ENOENT, and state-dir names are
 * classified, temp files of the atomic replace included. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/protocol.h"

struct fx {
    char dir[PATH_MAX / 2];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", tu_mkdtemp());
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    tu_rmtree(f->dir);
    free(f);
    return 0;
}

static void test_paths(void **state)
{
    char buf[PATH_MAX], tiny[8];
    assert_int_equal(zerg_proto_assign_path(buf, sizeof buf, "/s", 3), 0);
    assert_string_equal(buf, "/s/slot-3/assign.json");
    assert_int_equal(zerg_proto_heartbeat_path(buf, sizeof buf, "/s", 12), 0);
    assert_string_equal(buf, "/s/heartbeat-12.json");
    assert_int_equal(zerg_proto_result_path(buf, sizeof buf, "/s", "A-L1-1", 2),
                     0);
    assert_string_equal(buf, "/s/result-A-L1-1-2.json");
    assert_int_equal(zerg_proto_lease_path(buf, sizeof buf, "/s", "feat"), 0);
    assert_string_equal(buf, "/s/lease-feat.json");
    assert_int_equal(zerg_proto_lease_path(tiny, sizeof tiny, "/s", "feat"),
                     -ENAMETOOLONG);
}

static void test_assign_roundtrip(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_assign a = {.epoch = 42, .attempt = 2}, b;
    strcpy(a.task, "A-L1-001");
    assert_int_equal(zerg_proto_write_assign(f->dir, 1, &a, &err), 0);
    memset(&b, 0x55, sizeof b);
    assert_int_equal(zerg_proto_read_assign(f->dir, 1, &b), 0);
    assert_true(b.epoch == 42);
    assert_string_equal(b.task, "A-L1-001");
    assert_int_equal(b.attempt, 2);
    assert_int_equal(b.stop, 0);
    assert_int_equal(b.resume, 0);   /* absent: a fresh start */
    assert_int_equal(b.task_len, 0); /* no place given */
    assert_string_equal(b.base, "");
    assert_string_equal(b.base_tree, ""); /* not said: the worker asks git */
    a.resume = 1;
    assert_int_equal(zerg_proto_write_assign(f->dir, 1, &a, &err), 0);
    assert_int_equal(zerg_proto_read_assign(f->dir, 1, &b), 0);
    assert_int_equal(b.resume, 1);
    a.resume = 0;

    /* The task's place in the graph file, all three or none. */
    a.task_off = 4000000000u;
    a.task_len = 120;
    a.task_hash = 0xdeadbeefu;
    assert_int_equal(zerg_proto_write_assign(f->dir, 1, &a, &err), 0);
    assert_int_equal(zerg_proto_read_assign(f->dir, 1, &b), 0);
    assert_true(b.task_off == 4000000000u);
    assert_int_equal(b.task_len, 120);
    assert_true(b.task_hash == 0xdeadbeefu);

    /* The base and its tree; a tree that is no object id is corrupt. */
    memset(a.base, 'a', 40), a.base[40] = '\0';
    memset(a.base_tree, 'b', 64), a.base_tree[64] = '\0';
    assert_int_equal(zerg_proto_write_assign(f->dir, 1, &a, &err), 0);
    assert_int_equal(zerg_proto_read_assign(f->dir, 1, &b), 0);
    assert_string_equal(b.base, a.base);
    assert_string_equal(b.base_tree, a.base_tree);
    a.base[0] = a.base_tree[0] = '\0';
    tu_write(f->dir, "slot-1/assign.json",
             "{\"epoch\":42,\"run_id\":\"\",\"task\":\"A\",\"attempt\":1,"
             "\"stop\":false,\"base_tree\":\"HEAD\"}");
    assert_int_equal(zerg_proto_read_assign(f->dir, 1, &b), ZERG_ECORRUPT);
    tu_write(f->dir, "slot-1/assign.json",
             "{\"epoch\":42,\"run_id\":\"\",\"task\":\"A\",\"attempt\":1,"
             "\"stop\":false,\"task_length\":5}");
    assert_int_equal(zerg_proto_read_assign(f->dir, 1, &b), ZERG_ECORRUPT);

    /* idle + stop: task is JSON null on disk */
    struct zerg_assign idle = {.epoch = 43, .stop = 1};
    assert_int_equal(zerg_proto_write_assign(f->dir, 1, &idle, &err), 0);
    char path[PATH_MAX];
    zerg_proto_assign_path(path, sizeof path, f->dir, 1);
    char *text = tu_read(path);
    assert_true(tu_contains(text, "\"task\":null"));
    assert_true(tu_contains(text, "\"stop\":true"));
    free(text);
    assert_int_equal(zerg_proto_read_assign(f->dir, 1, &b), 0);
    assert_string_equal(b.task, "");
    assert_int_equal(b.stop, 1);
    assert_true(b.epoch == 43);
}

static void test_assign_rejects_bad_id(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_assign a = {.epoch = 1, .attempt = 1};
    strcpy(a.task, "../evil");
    assert_int_equal(zerg_proto_write_assign(f->dir, 0, &a, &err), -EINVAL);
    assert_true(tu_contains(err.msg, "bad task id"));
}

static void test_heartbeat_roundtrip(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_heartbeat hb =
                              {
                                  .worker_id = 3,
                                  .epoch = 9,
                                  .seq = 17,
                                  .timestamp_ns = INT64_C(1770097315123000000),
                                  .attempt = 1,
                                  .progress_pct = 80,
                                  .pid = 1234,
                                  .task_pgid = 1300,
                              },
                          got;
    strcpy(hb.task_id, "T-1");
    strcpy(hb.step, "verification");
    assert_int_equal(zerg_proto_write_heartbeat(f->dir, &hb, &err), 0);
    char path[PATH_MAX];
    zerg_proto_heartbeat_path(path, sizeof path, f->dir, 3);
    char *text = tu_read(path);
    assert_true(
        tu_contains(text, "\"timestamp\":\"2026-02-03T05:41:55.123Z\""));
    free(text);
    assert_int_equal(zerg_proto_read_heartbeat(path, &got), 0);
    assert_int_equal(got.worker_id, 3);
    assert_true(got.epoch == 9);
    assert_true(got.seq == 17);
    assert_true(got.timestamp_ns == hb.timestamp_ns);
    assert_string_equal(got.task_id, "T-1");
    assert_int_equal(got.attempt, 1);
    assert_string_equal(got.step, "verification");
    assert_int_equal(got.progress_pct, 80);
    assert_int_equal(got.pid, 1234);
    assert_int_equal(got.task_pgid, 1300);

    /* idle: task_id null */
    hb.task_id[0] = '\0';
    strcpy(hb.step, "idle");
    assert_int_equal(zerg_proto_write_heartbeat(f->dir, &hb, &err), 0);
    text = tu_read(path);
    assert_true(tu_contains(text, "\"task_id\":null"));
    free(text);
    assert_int_equal(zerg_proto_read_heartbeat(path, &got), 0);
    assert_string_equal(got.task_id, "");
    assert_string_equal(got.step, "idle");
}

static void test_result_roundtrip(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_result r =
                           {
                               .epoch = 5,
                               .worker_id = 2,
                               .attempt = 3,
                               .outcome = ZERG_OUTCOME_FAILED,
                               .exit_code = -1,
                               .signal = 9,
                               .timed_out = 1,
                               .duration_ms = 30012,
                           },
                       got;
    strcpy(r.task, "B-L2-007");
    strcpy(r.stage, "verification");
    strcpy(r.error, "verification timed out after 30.0 s");
    assert_int_equal(zerg_proto_write_result(f->dir, &r, &err), 0);
    char path[PATH_MAX];
    zerg_proto_result_path(path, sizeof path, f->dir, "B-L2-007", 3);
    char *text = tu_read(path);
    assert_true(tu_contains(text, "\"outcome\":\"failed\""));
    assert_true(tu_contains(text, "\"timed_out\":true"));
    free(text);
    assert_int_equal(zerg_proto_read_result(path, &got), 0);
    assert_true(got.epoch == 5);
    assert_int_equal(got.worker_id, 2);
    assert_string_equal(got.task, "B-L2-007");
    assert_int_equal(got.attempt, 3);
    assert_int_equal(got.outcome, ZERG_OUTCOME_FAILED);
    assert_string_equal(got.stage, "verification");
    assert_int_equal(got.exit_code, -1);
    assert_int_equal(got.signal, 9);
    assert_int_equal(got.timed_out, 1);
    assert_true(got.duration_ms == 30012);
    assert_string_equal(got.error, r.error);

    r.outcome = ZERG_OUTCOME_COMPLETE;
    r.exit_code = 0, r.signal = 0, r.timed_out = 0, r.error[0] = '\0';
    assert_int_equal(zerg_proto_write_result(f->dir, &r, &err), 0);
    assert_int_equal(zerg_proto_read_result(path, &got), 0);
    assert_int_equal(got.outcome, ZERG_OUTCOME_COMPLETE);
    assert_string_equal(got.error, "");
}

/* The class is read once, at the boundary: a known name is its enum, no
 * name is no class, and a name outside the taxonomy (a newer or a broken
 * worker) is a task failure, never one that stops or pauses the pool. */
static void test_result_class_read_once(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_result r = {.epoch = 1,
                            .worker_id = 1,
                            .attempt = 1,
                            .outcome = ZERG_OUTCOME_FAILED},
                       got;
    strcpy(r.task, "C-L1-001");
    strcpy(r.stage, "command");
    strcpy(r.error, "failed");
    char path[PATH_MAX];
    zerg_proto_result_path(path, sizeof path, f->dir, "C-L1-001", 1);
    static const struct {
        const char *written, *read;
        int has;
        enum zerg_failure_class c;
    } rows[] = {
        {"", "", 0, ZERG_FAILURE_TASK},
        {"rate_limit", "rate_limit", 1, ZERG_FAILURE_RATE_LIMIT},
        {"environment", "environment", 1, ZERG_FAILURE_ENVIRONMENT},
        {"crash", "crash", 1, ZERG_FAILURE_CRASH},
        {"Environment", "task", 1, ZERG_FAILURE_TASK},
        {"out_of_space", "task", 1, ZERG_FAILURE_TASK},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        snprintf(r.cls, sizeof r.cls, "%s", rows[i].written);
        assert_int_equal(zerg_proto_write_result(f->dir, &r, &err), 0);
        assert_int_equal(zerg_proto_read_result(path, &got), 0);
        assert_string_equal(got.cls, rows[i].read);
        assert_int_equal(got.has_class, rows[i].has);
        if (rows[i].has)
            assert_int_equal(got.fclass, rows[i].c);
    }
    zerg_result_set_class(&r, ZERG_FAILURE_CONFLICT);
    assert_string_equal(r.cls, "conflict");
    assert_true(r.has_class && r.fclass == ZERG_FAILURE_CONFLICT);
}

/* What an attempt produced beyond its exit status reaches the
 * orchestrator: the missing declared outputs, the ignored files committed
 * anyway and those left out, bounded to 20 paths with the total kept. */
static void test_result_output_lists(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_result r = {.epoch = 5, .attempt = 1}, got;
    strcpy(r.task, "O-L1-001");
    strcpy(r.stage, "verification");
    zerg_path_list_add(&r.missing, "src/a.c");
    zerg_path_list_add(&r.forced, "build/out.bin");
    zerg_path_list_add(&r.forced, "with \"quotes\" and\nnewline");
    char name[64];
    for (int i = 0; i < 57; i++) {
        snprintf(name, sizeof name, "cache/%02d/", i);
        assert_int_equal(zerg_path_list_add(&r.ignored, name), i < 20);
    }
    assert_int_equal(r.ignored.n, 20);
    assert_int_equal(r.ignored.total, 57);
    /* the event line carries them too */
    char *line = NULL;
    size_t len = 0;
    assert_int_equal(zerg_proto_event_result(&r, &line, &len), 0);
    struct zerg_event ev;
    assert_int_equal(zerg_proto_event_parse(line, len, &ev), 0);
    assert_int_equal(ev.result.ignored.total, 57);
    free(line);
    assert_int_equal(zerg_proto_write_result(f->dir, &r, &err), 0);
    char path[PATH_MAX];
    zerg_proto_result_path(path, sizeof path, f->dir, "O-L1-001", 1);
    char *text = tu_read(path);
    assert_true(tu_contains(text, "\"missing\":[\"src/a.c\"]"));
    assert_true(tu_contains(text, "\"ignored_total\":57"));
    free(text);
    assert_int_equal(zerg_proto_read_result(path, &got), 0);
    assert_int_equal(got.missing.total, 1);
    const char *m = zerg_path_list_next(&got.missing, NULL);
    assert_string_equal(m, "src/a.c");
    assert_null(zerg_path_list_next(&got.missing, m));
    assert_int_equal(got.forced.total, 2);
    const char *p = zerg_path_list_next(&got.forced, NULL);
    assert_string_equal(p, "build/out.bin");
    assert_string_equal(zerg_path_list_next(&got.forced, p),
                        "with \"quotes\" and\nnewline");
    assert_int_equal(got.ignored.total, 57);
    assert_int_equal(got.ignored.n, 20);
    p = NULL;
    for (int i = 0; i < 20; i++) {
        p = zerg_path_list_next(&got.ignored, p);
        snprintf(name, sizeof name, "cache/%02d/", i);
        assert_string_equal(p, name);
    }
    /* a result without them (an older worker's) reads as empty lists */
    memset(&r.missing, 0, sizeof r.missing);
    memset(&r.forced, 0, sizeof r.forced);
    memset(&r.ignored, 0, sizeof r.ignored);
    assert_int_equal(zerg_proto_write_result(f->dir, &r, &err), 0);
    text = tu_read(path);
    assert_null(strstr(text, "missing"));
    free(text);
    assert_int_equal(zerg_proto_read_result(path, &got), 0);
    assert_int_equal(got.missing.total + got.forced.total + got.ignored.total,
                     0);
    /* a list that is not one is a corrupt result */
    tu_write(f->dir, "result-O-L1-001-1.json",
             "{\"epoch\":5,\"run_id\":\"\",\"worker_id\":0,\"task\":"
             "\"O-L1-001\",\"attempt\":1,\"outcome\":\"complete\",\"stage\":"
             "\"\",\"exit_code\":0,\"signal\":0,\"timed_out\":false,"
             "\"duration_ms\":0,\"error\":\"\",\"missing\":[1],"
             "\"missing_total\":1}");
    assert_int_equal(zerg_proto_read_result(path, &got), ZERG_ECORRUPT);
}

static void test_result_rejects_bad_id(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_result r = {.attempt = 1};
    strcpy(r.task, "a/b");
    strcpy(r.stage, "command");
    assert_int_equal(zerg_proto_write_result(f->dir, &r, &err), -EINVAL);
    assert_true(tu_contains(err.msg, "bad task id \"a/b\""));
    assert_int_equal(tu_count_entries(f->dir), 0);
}

static void test_lease_roundtrip(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    int pid = 0;
    int64_t seq = 0;
    char run[64];
    assert_int_equal(
        zerg_proto_write_lease(f->dir, "feat", 777, "run-1", 12, &err), 0);
    assert_int_equal(
        zerg_proto_read_lease(f->dir, "feat", &pid, run, sizeof run, &seq), 0);
    assert_int_equal(pid, 777);
    assert_string_equal(run, "run-1");
    assert_true(seq == 12);
    /* NULL outputs are allowed; a too-small run_id buffer is not */
    assert_int_equal(zerg_proto_read_lease(f->dir, "feat", NULL, NULL, 0, &seq),
                     0);
    assert_int_equal(zerg_proto_read_lease(f->dir, "feat", &pid, run, 3, &seq),
                     ZERG_ECORRUPT);
}

static void test_missing_files(void **state)
{
    struct fx *f = *state;
    struct zerg_assign a;
    struct zerg_heartbeat hb;
    struct zerg_result r;
    int64_t seq;
    char path[PATH_MAX];
    assert_int_equal(zerg_proto_read_assign(f->dir, 0, &a), -ENOENT);
    zerg_proto_heartbeat_path(path, sizeof path, f->dir, 0);
    assert_int_equal(zerg_proto_read_heartbeat(path, &hb), -ENOENT);
    zerg_proto_result_path(path, sizeof path, f->dir, "T", 1);
    assert_int_equal(zerg_proto_read_result(path, &r), -ENOENT);
    assert_int_equal(zerg_proto_read_lease(f->dir, "x", NULL, NULL, 0, &seq),
                     -ENOENT);
}

/* Each text must be ZERG_ECORRUPT as every kind of file. */
static void expect_corrupt(const char *dir, const char *text)
{
    struct zerg_assign a;
    struct zerg_heartbeat hb;
    struct zerg_result r;
    int64_t seq;
    char path[PATH_MAX];
    tu_write(dir, "slot-0/assign.json", text);
    assert_int_equal(zerg_proto_read_assign(dir, 0, &a), ZERG_ECORRUPT);
    tu_write(dir, "heartbeat-0.json", text);
    snprintf(path, sizeof path, "%s/heartbeat-0.json", dir);
    assert_int_equal(zerg_proto_read_heartbeat(path, &hb), ZERG_ECORRUPT);
    tu_write(dir, "result-T-1.json", text);
    snprintf(path, sizeof path, "%s/result-T-1.json", dir);
    assert_int_equal(zerg_proto_read_result(path, &r), ZERG_ECORRUPT);
    tu_write(dir, "lease-f.json", text);
    assert_int_equal(zerg_proto_read_lease(dir, "f", NULL, NULL, 0, &seq),
                     ZERG_ECORRUPT);
}

static void test_garbage_is_corrupt(void **state)
{
    struct fx *f = *state;
    expect_corrupt(f->dir, "");
    expect_corrupt(f->dir, "not json at all");
    expect_corrupt(f->dir, "[1,2,3]");
    expect_corrupt(f->dir, "\"string\"");
    expect_corrupt(f->dir, "{}");
    expect_corrupt(f->dir, "{\"epoch\":1,\"task\":");
}

/* A real file cut at every length is never accepted. */
static void test_truncated_is_corrupt(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_result r = {.epoch = 1, .attempt = 1, .duration_ms = 5};
    strcpy(r.task, "T");
    strcpy(r.stage, "command");
    assert_int_equal(zerg_proto_write_result(f->dir, &r, &err), 0);
    char path[PATH_MAX];
    zerg_proto_result_path(path, sizeof path, f->dir, "T", 1);
    char *full = tu_read(path);
    size_t n = strlen(full);
    for (size_t cut = 0; cut < n; cut++) {
        char *part = strndup(full, cut);
        tu_write(f->dir, "result-T-1.json", part);
        assert_int_equal(zerg_proto_read_result(path, &r), ZERG_ECORRUPT);
        free(part);
    }
    free(full);
}

/* Right syntax, wrong types or ranges. */
static void test_wrong_types_are_corrupt(void **state)
{
    struct fx *f = *state;
    struct zerg_assign a;
    struct zerg_heartbeat hb;
    struct zerg_result r;
    char path[PATH_MAX];
    static const char *assigns[] = {
        "{\"epoch\":\"1\",\"task\":\"T\",\"attempt\":1,\"stop\":false}",
        "{\"epoch\":-1,\"task\":\"T\",\"attempt\":1,\"stop\":false}",
        "{\"epoch\":1.5,\"task\":\"T\",\"attempt\":1,\"stop\":false}",
        "{\"epoch\":1,\"task\":7,\"attempt\":1,\"stop\":false}",
        "{\"epoch\":1,\"task\":\"../x\",\"attempt\":1,\"stop\":false}",
        "{\"epoch\":1,\"task\":\"T\",\"attempt\":1,\"stop\":1}",
        "{\"epoch\":1,\"task\":\"T\",\"stop\":false}",
    };
    for (size_t i = 0; i < sizeof assigns / sizeof *assigns; i++) {
        tu_write(f->dir, "slot-0/assign.json", assigns[i]);
        assert_int_equal(zerg_proto_read_assign(f->dir, 0, &a), ZERG_ECORRUPT);
    }
    tu_write(f->dir, "slot-0/assign.json",
             "{\"epoch\":1,\"task\":\"T\",\"attempt\":1,\"stop\":false,"
             "\"extra\":[1]}");
    assert_int_equal(zerg_proto_read_assign(f->dir, 0, &a), 0);

    snprintf(path, sizeof path, "%s/heartbeat-0.json", f->dir);
    tu_write(f->dir, "heartbeat-0.json",
             "{\"worker_id\":0,\"epoch\":1,\"seq\":1,\"timestamp\":\"never\","
             "\"task_id\":null,\"attempt\":0,\"step\":\"idle\",\"progress_"
             "pct\":0,\"pid\":1,\"task_pgid\":0}");
    assert_int_equal(zerg_proto_read_heartbeat(path, &hb), ZERG_ECORRUPT);
    tu_write(f->dir, "heartbeat-0.json",
             "{\"worker_id\":0,\"epoch\":1,\"seq\":1,\"timestamp\":\"2026-02-"
             "03T05:41:55.123Z\",\"task_id\":null,\"attempt\":0,\"step\":"
             "\"idle\",\"progress_pct\":101,\"pid\":1,\"task_pgid\":0}");
    assert_int_equal(zerg_proto_read_heartbeat(path, &hb), ZERG_ECORRUPT);

    snprintf(path, sizeof path, "%s/result-T-1.json", f->dir);
    tu_write(
        f->dir, "result-T-1.json",
        "{\"epoch\":1,\"worker_id\":0,\"task\":\"T\",\"attempt\":1,\"outcome\":"
        "\"maybe\",\"stage\":\"command\",\"exit_code\":0,\"signal\":0,\"timed_"
        "out\":false,\"duration_ms\":1,\"error\":\"\"}");
    assert_int_equal(zerg_proto_read_result(path, &r), ZERG_ECORRUPT);
}

static void test_classify(void **state)
{
    static const struct {
        const char *name;
        int kind, slot;
    } rows[] = {
        {"heartbeat-3.json", 'h', 3},
        {"heartbeat-0.json", 'h', 0},
        {"heartbeat-12.json", 'h', 12},
        {"assign-3.json", 0, -1},
        {"result-A-L1-001-2.json", 'r', -1},
        {"lease-feat.json", 'l', -1},
        {"retry-A-L1-001.json", 'q', -1},
        {"retried-1796.json", 'a', -1},
        {".retried-1796.json.tmp.5", 0, -1},
        {".heartbeat-3.json.tmp.1234", 0, -1},
        {".result-T-1.json.tmp.99", 0, -1},
        {"heartbeat-3.json.tmp.77", 0, -1},
        {"heartbeat-x.json", 0, -1},
        {"heartbeat-.json", 0, -1},
        {"heartbeat-03.json", 0, -1},
        {"heartbeat--1.json", 0, -1},
        {"heartbeat-3.jsonx", 0, -1},
        {"heartbeat-3", 0, -1},
        {"result-.json", 0, -1},
        {"feat.json", 0, -1},
        {"feat.json.bak", 0, -1},
        {"", 0, -1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        int slot = -1;
        int kind = zerg_proto_classify(rows[i].name, &slot);
        if (kind != rows[i].kind || slot != rows[i].slot)
            fail_msg("%s: got %d slot %d, want %d slot %d", rows[i].name, kind,
                     slot, rows[i].kind, rows[i].slot);
    }
    assert_int_equal(zerg_proto_classify("assign-1.json", NULL), 0);
    assert_int_equal(zerg_proto_classify(NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test_setup_teardown(test_assign_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assign_rejects_bad_id, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_roundtrip, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_result_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_result_class_read_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_result_output_lists, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_result_rejects_bad_id, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lease_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_is_corrupt, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_truncated_is_corrupt, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wrong_types_are_corrupt, setup,
                                        teardown),
        cmocka_unit_test(test_classify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
