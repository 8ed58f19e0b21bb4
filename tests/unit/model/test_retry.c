/* test_retry.c - requeueing failed tasks (src/model/retry.c): what comes back,
 * what stays blocked, what is refused, and the request file a running rush
 * picks up. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/graph.h"
#include "zerg/retry.h"
#include "zerg/state.h"

/* A (L1) and E (L1) feed the rest:
 *   B (L2) <- A      C (L3) <- B      D (L2) <- A, E
 *   F (L1) <- A      (same-level dependency) */
static const char graph_json[] =
    "{\"feature\":\"demo\",\"tasks\":["
    "{\"id\":\"A\",\"level\":1,\"dependencies\":[]},"
    "{\"id\":\"E\",\"level\":1,\"dependencies\":[]},"
    "{\"id\":\"F\",\"level\":1,\"dependencies\":[\"A\"]},"
    "{\"id\":\"B\",\"level\":2,\"dependencies\":[\"A\"]},"
    "{\"id\":\"D\",\"level\":2,\"dependencies\":[\"A\",\"E\"]},"
    "{\"id\":\"C\",\"level\":3,\"dependencies\":[\"B\"]}]}";

struct fx {
    struct zerg_graph *g;
    struct zerg_state s;
};

static size_t idx(const struct fx *f, const char *id)
{
    ssize_t i = zerg_graph_find(f->g, id);
    assert_true(i >= 0);
    return (size_t)i;
}

static struct zerg_task_state *task(struct fx *f, const char *id)
{
    return &f->s.tasks[idx(f, id)];
}

static void set_status(struct fx *f, const char *id, enum zerg_task_status st,
                       const char *reason)
{
    struct zerg_task_state *t = task(f, id);
    t->status = st;
    free(t->reason);
    t->reason = reason ? strdup(reason) : NULL;
    free(t->error);
    t->error = reason ? strdup("exit code 1") : NULL;
}

/* The state of a run that ended badly: A and E failed, everything
 * downstream blocked, level 1..3 complete, run failed. */
static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    struct zerg_err err = {0};
    assert_int_equal(zerg_graph_parse(&f->g, "graph.json", graph_json,
                                      strlen(graph_json), &err),
                     0);
    assert_int_equal(zerg_state_init(&f->s, f->g, "demo", 1000), 0);
    set_status(f, "A", ZERG_TASK_FAILED, "verification");
    set_status(f, "E", ZERG_TASK_FAILED, "exit");
    set_status(f, "F", ZERG_TASK_BLOCKED, "blocked");
    set_status(f, "B", ZERG_TASK_BLOCKED, "blocked");
    set_status(f, "D", ZERG_TASK_BLOCKED, "blocked");
    set_status(f, "C", ZERG_TASK_BLOCKED, "blocked");
    struct zerg_task_state *a = task(f, "A");
    a->retry_count = 3;
    a->crash_count = 2;
    a->attempt = 5;
    a->epoch = 9;
    a->worker_id = 1;
    a->retry_at_wall_ns = 12345;
    a->completed_at_wall_ns = 777;
    for (int lv = 1; lv <= f->s.nlevels; lv++)
        f->s.levels[lv].status = ZERG_LEVEL_COMPLETE;
    f->s.current_level = 3;
    free(f->s.status);
    f->s.status = strdup("failed");
    f->s.error = strdup("2 tasks failed");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    zerg_state_close(&f->s);
    zerg_graph_free(f->g);
    free(f);
    return 0;
}

static void test_failed_task_is_reset(void **state)
{
    struct fx *f = *state;
    assert_true(zerg_state_retry_task(&f->s, f->g, idx(f, "A")) >= 1);
    struct zerg_task_state *a = task(f, "A");
    assert_int_equal(a->status, ZERG_TASK_PENDING);
    assert_int_equal(a->retry_count, 0);
    assert_int_equal(a->crash_count, 0);
    assert_int_equal(a->retry_at_wall_ns, 0);
    assert_int_equal(a->completed_at_wall_ns, 0);
    assert_int_equal(a->worker_id, -1);
    assert_int_equal(a->epoch, 0);
    assert_null(a->error);
    assert_null(a->reason);
    /* The attempt number fences results of earlier attempts: kept. */
    assert_int_equal(a->attempt, 5);
}

static void test_unblocks_transitively(void **state)
{
    struct fx *f = *state;
    /* A, then F (same level), B, and C through B; D still waits on E. */
    assert_int_equal(zerg_state_retry_task(&f->s, f->g, idx(f, "A")), 4);
    assert_int_equal(task(f, "F")->status, ZERG_TASK_PENDING);
    assert_int_equal(task(f, "B")->status, ZERG_TASK_PENDING);
    assert_int_equal(task(f, "C")->status, ZERG_TASK_PENDING);
    assert_null(task(f, "C")->reason);
    assert_int_equal(task(f, "D")->status, ZERG_TASK_BLOCKED);
    assert_string_equal(task(f, "D")->reason, "blocked");
    assert_int_equal(task(f, "E")->status, ZERG_TASK_FAILED);
}

static void test_second_failure_frees_the_rest(void **state)
{
    struct fx *f = *state;
    assert_int_equal(zerg_state_retry_task(&f->s, f->g, idx(f, "A")), 4);
    /* E was the last thing holding D. */
    assert_int_equal(zerg_state_retry_task(&f->s, f->g, idx(f, "E")), 2);
    assert_int_equal(task(f, "D")->status, ZERG_TASK_PENDING);
}

static void test_other_failure_keeps_blocked(void **state)
{
    struct fx *f = *state;
    /* Retrying E alone: D still has a failed dependency (A). */
    assert_int_equal(zerg_state_retry_task(&f->s, f->g, idx(f, "E")), 1);
    assert_int_equal(task(f, "D")->status, ZERG_TASK_BLOCKED);
    assert_int_equal(task(f, "B")->status, ZERG_TASK_BLOCKED);
}

static void test_blocked_task_directly(void **state)
{
    struct fx *f = *state;
    assert_int_equal(zerg_state_retry_task(&f->s, f->g, idx(f, "B")), 2);
    assert_int_equal(task(f, "B")->status, ZERG_TASK_PENDING);
    assert_int_equal(task(f, "C")->status, ZERG_TASK_PENDING);
    assert_int_equal(task(f, "A")->status, ZERG_TASK_FAILED);
}

/* `zerg retry` of a task waiting for its retry runs it now, with a fresh
 * budget. */
static void test_waiting_retry_runs_now(void **state)
{
    struct fx *f = *state;
    set_status(f, "A", ZERG_TASK_WAITING_RETRY, NULL);
    task(f, "A")->retry_count = 2;
    task(f, "A")->retry_at_wall_ns = 123;
    assert_true(zerg_state_retry_task(&f->s, f->g, idx(f, "A")) >= 1);
    assert_int_equal(task(f, "A")->status, ZERG_TASK_PENDING);
    assert_int_equal(task(f, "A")->retry_count, 0);
    assert_int_equal(task(f, "A")->retry_at_wall_ns, 0);
}

static void test_refuses_other_statuses(void **state)
{
    struct fx *f = *state;
    static const enum zerg_task_status no[] = {
        ZERG_TASK_COMPLETE, ZERG_TASK_PENDING, ZERG_TASK_IN_PROGRESS,
        ZERG_TASK_CLAIMED};
    char buf[160];
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++) {
        set_status(f, "A", no[k], NULL);
        assert_int_equal(zerg_state_retry_task(&f->s, f->g, idx(f, "A")),
                         ZERG_EINVAL_INPUT);
        assert_int_equal(task(f, "A")->status, no[k]);
        assert_int_equal(task(f, "B")->status, ZERG_TASK_BLOCKED);
    }
    set_status(f, "A", ZERG_TASK_COMPLETE, NULL);
    assert_non_null(
        zerg_state_retry_refusal(&f->s, f->g, idx(f, "A"), buf, sizeof buf));
    assert_string_equal(buf, "task A is complete; nothing to retry");
    assert_null(
        zerg_state_retry_refusal(&f->s, f->g, idx(f, "E"), buf, sizeof buf));
    /* Nothing changed anywhere in the run either. */
    assert_string_equal(f->s.status, "failed");
    assert_int_equal(f->s.current_level, 3);
}

static void test_reopens_levels_and_run(void **state)
{
    struct fx *f = *state;
    assert_int_equal(zerg_state_retry_task(&f->s, f->g, idx(f, "B")), 2);
    assert_int_equal(f->s.levels[1].status, ZERG_LEVEL_COMPLETE);
    assert_int_equal(f->s.levels[2].status, ZERG_LEVEL_PENDING);
    assert_int_equal(f->s.levels[3].status, ZERG_LEVEL_PENDING);
    assert_int_equal(f->s.current_level, 2);
    assert_string_equal(f->s.status, "stopped");
    assert_null(f->s.error);
}

static void test_all_failed(void **state)
{
    struct fx *f = *state;
    assert_int_equal(zerg_state_retry_all_failed(&f->s, f->g), 6);
    size_t counts[ZERG_TASK_NSTATUS];
    zerg_state_count(&f->s, counts);
    assert_int_equal(counts[ZERG_TASK_PENDING], 6);
    assert_int_equal(f->s.current_level, 1);
    /* Nothing failed any more: a second call is a no-op. */
    assert_int_equal(zerg_state_retry_all_failed(&f->s, f->g), 0);
}

static void test_all_failed_leaves_foreign_blocks(void **state)
{
    struct fx *f = *state;
    /* A completed; only E failed.  B and C are blocked with no failed
     * dependency upstream: all_failed does not touch what it did not
     * unblock. */
    set_status(f, "A", ZERG_TASK_COMPLETE, NULL);
    set_status(f, "F", ZERG_TASK_COMPLETE, NULL);
    assert_int_equal(zerg_state_retry_all_failed(&f->s, f->g), 2);
    assert_int_equal(task(f, "D")->status, ZERG_TASK_PENDING);
    assert_int_equal(task(f, "B")->status, ZERG_TASK_BLOCKED);
}

/* ---- request file --------------------------------------------------- */

/* Requests land in the feature's run directory, dir/demo. */
static int find_request(const char *dir, char *path, size_t size)
{
    char run[PATH_MAX];
    snprintf(run, sizeof run, "%s/demo", dir);
    DIR *d = opendir(run);
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "retry-", 6) == 0 &&
            strstr(e->d_name, ".json")) {
            snprintf(path, size, "%s/%s", run, e->d_name);
            found++;
        }
    }
    if (d)
        closedir(d);
    return found;
}

static void test_request_round_trip(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    struct zerg_err err = {0};
    const char *ids[] = {"A", "B-L2-001"};
    assert_int_equal(zerg_retry_request_write(dir, "demo", ids, 2, 0, &err), 0);
    assert_int_equal(find_request(dir, path, sizeof path), 1);
    char *text = tu_read(path);
    assert_true(tu_contains(text, "\"feature\":\"demo\""));
    assert_true(tu_contains(text, "\"all_failed\":false"));
    free(text);

    struct zerg_retry_request req;
    assert_int_equal(zerg_retry_request_read(path, &req, &err), 0);
    assert_string_equal(req.feature, "demo");
    assert_int_equal(req.n, 2);
    assert_string_equal(req.ids[0], "A");
    assert_string_equal(req.ids[1], "B-L2-001");
    assert_int_equal(req.all_failed, 0);
    zerg_retry_request_close(&req);

    /* A second request never replaces the first. */
    assert_int_equal(zerg_retry_request_write(dir, "demo", NULL, 0, 1, &err),
                     0);
    assert_int_equal(find_request(dir, path, sizeof path), 2);
    tu_rmtree(dir);
}

static void test_request_rejects_bad_names(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    struct zerg_err err = {0};
    const char *bad[] = {"../x"};
    assert_int_equal(zerg_retry_request_write(dir, "demo", bad, 1, 0, &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "invalid task id \"../x\""));
    assert_int_equal(zerg_retry_request_write(dir, "a b", NULL, 0, 1, &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "invalid feature name"));
    assert_int_equal(tu_count_entries(dir), 0);
    tu_rmtree(dir);
}

static void test_request_corrupt(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    static const char *const bodies[] = {
        "{\"feature\":\"demo\",\"tasks\":[\"A\"",
        "[1,2]",
        "{\"feature\":\"../x\",\"tasks\":[]}",
        "{\"feature\":\"demo\",\"tasks\":[\"a b\"]}",
        "{\"feature\":\"demo\",\"tasks\":{\"A\":1}}",
        "{\"feature\":\"demo\",\"all_failed\":\"yes\"}",
    };
    struct zerg_err err = {0};
    struct zerg_retry_request req;
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        tu_write(dir, "retry-demo-1.json", bodies[i]);
        snprintf(path, sizeof path, "%s/retry-demo-1.json", dir);
        assert_int_equal(zerg_retry_request_read(path, &req, &err),
                         ZERG_ECORRUPT);
        assert_true(tu_contains(err.msg, path));
        assert_true(tu_contains(err.msg, "not a retry request"));
        assert_null(req.ids);
    }
    snprintf(path, sizeof path, "%s/missing.json", dir);
    assert_int_equal(zerg_retry_request_read(path, &req, &err), -ENOENT);
    tu_rmtree(dir);
}

static void test_request_apply(void **state)
{
    struct fx *f = *state;
    struct zerg_retry_answer ans;
    char *ids[] = {"E", "nope", "A"};
    struct zerg_retry_request req = {.ids = ids, .n = 3};
    snprintf(req.feature, sizeof req.feature, "demo");
    set_status(f, "A", ZERG_TASK_COMPLETE, NULL);
    set_status(f, "F", ZERG_TASK_COMPLETE, NULL);
    /* Two ids refused: nothing changes, as without a rush. */
    assert_int_equal(zerg_retry_request_apply(&f->s, f->g, &req, &ans), 0);
    assert_int_equal(ans.requeued, 0);
    assert_int_equal(ans.nrefused, 2);
    assert_string_equal(ans.refused[0], "unknown task nope");
    assert_string_equal(ans.refused[1], "task A is complete; nothing to retry");
    assert_int_equal(task(f, "E")->status, ZERG_TASK_FAILED);
    assert_int_equal(task(f, "D")->status, ZERG_TASK_BLOCKED);

    /* E alone: it and D (its other dependency is complete) come back. */
    struct zerg_retry_request one = {.ids = ids, .n = 1};
    assert_int_equal(zerg_retry_request_apply(&f->s, f->g, &one, &ans), 2);
    assert_int_equal(ans.requeued, 2);
    assert_int_equal(ans.nrefused, 0);
    assert_int_equal(ans.ntasks, 2);
    assert_string_equal(ans.tasks[0], "E");
    assert_string_equal(ans.tasks[1], "D");
    assert_int_equal(task(f, "D")->status, ZERG_TASK_PENDING);

    /* Again: E is pending now, which the live state says. */
    assert_int_equal(zerg_retry_request_apply(&f->s, f->g, &one, &ans), 0);
    assert_int_equal(ans.nrefused, 1);
    assert_string_equal(ans.refused[0], "task E is pending; nothing to retry");
}

static void test_request_apply_all_failed(void **state)
{
    struct fx *f = *state;
    struct zerg_retry_answer ans;
    char *ids[] = {"A", "A"};
    /* A is requeued by all_failed first; naming it (twice) is no error. */
    struct zerg_retry_request req = {.ids = ids, .n = 2, .all_failed = 1};
    assert_int_equal(zerg_retry_request_apply(&f->s, f->g, &req, &ans), 6);
    assert_int_equal(ans.requeued, 6);
    assert_int_equal(ans.nrefused, 0);
    assert_int_equal(ans.ntasks, 6);
    /* Nothing failed any more: nothing requeued, nothing refused. */
    struct zerg_retry_request all = {.all_failed = 1};
    assert_int_equal(zerg_retry_request_apply(&f->s, f->g, &all, &ans), 0);
    assert_int_equal(ans.requeued + (int)ans.nrefused + (int)ans.ntasks, 0);
}

static void test_answer_round_trip(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 64], req[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    snprintf(req, sizeof req, "%s/retry-1796.json", dir);
    assert_int_equal(zerg_retry_answer_path(path, sizeof path, req), 0);
    assert_true(tu_contains(path, "/retried-1796.json"));
    assert_int_equal(zerg_retry_answer_path(path, sizeof path, "/x/result-1"),
                     -EINVAL);
    assert_int_equal(zerg_retry_answer_path(path, sizeof path, req), 0);

    struct zerg_retry_answer a = {.requeued = 30, .ntasks = 2, .nrefused = 1};
    snprintf(a.tasks[0], sizeof a.tasks[0], "A-L1-001");
    snprintf(a.tasks[1], sizeof a.tasks[1], "B-L2-001");
    snprintf(a.refused[0], sizeof a.refused[0], "task \"q\" is odd");
    struct zerg_err err = {0};
    assert_int_equal(zerg_retry_answer_write(path, &a, &err), 0);
    struct zerg_retry_answer b;
    assert_int_equal(zerg_retry_answer_read(path, &b, &err), 0);
    assert_int_equal(b.requeued, 30);
    assert_int_equal(b.ntasks, 2);
    assert_string_equal(b.tasks[1], "B-L2-001");
    assert_int_equal(b.nrefused, 1);
    assert_string_equal(b.refused[0], "task \"q\" is odd");
    /* Only the answer is there: the atomic replace left no temp file. */
    assert_int_equal(tu_count_entries(dir), 1);
    tu_rmtree(dir);
}

static void test_answer_corrupt(void **state)
{
    (void)state;
    char dir[PATH_MAX], path[PATH_MAX + 64], link[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    snprintf(path, sizeof path, "%s/retried-1.json", dir);
    static const char *const bodies[] = {
        "{\"requeued\":1,\"tasks\":[\"A\"]",
        "[1]",
        "{\"requeued\":-1,\"tasks\":[],\"refused\":[]}",
        "{\"requeued\":1e12,\"tasks\":[],\"refused\":[]}",
        "{\"requeued\":\"1\",\"tasks\":[],\"refused\":[]}",
        "{\"requeued\":1,\"tasks\":[7],\"refused\":[]}",
        "{\"requeued\":1,\"tasks\":[]}",
    };
    struct zerg_err err = {0};
    struct zerg_retry_answer a;
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        tu_write(dir, "retried-1.json", bodies[i]);
        assert_int_equal(zerg_retry_answer_read(path, &a, &err), ZERG_ECORRUPT);
        assert_true(tu_contains(err.msg, "not a retry answer"));
        assert_int_equal(a.requeued, 0);
    }
    /* zerg's own file: a link planted in its place is not followed. */
    snprintf(link, sizeof link, "%s/retried-2.json", dir);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(zerg_retry_answer_read(link, &a, &err), ZERG_ESYMLINK);
    snprintf(path, sizeof path, "%s/retried-3.json", dir);
    assert_int_equal(zerg_retry_answer_read(path, &a, &err), -ENOENT);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_failed_task_is_reset),
        T(test_unblocks_transitively),
        T(test_second_failure_frees_the_rest),
        T(test_other_failure_keeps_blocked),
        T(test_blocked_task_directly),
        T(test_waiting_retry_runs_now),
        T(test_refuses_other_statuses),
        T(test_reopens_levels_and_run),
        T(test_all_failed),
        T(test_all_failed_leaves_foreign_blocks),
        cmocka_unit_test(test_request_round_trip),
        cmocka_unit_test(test_request_rejects_bad_names),
        cmocka_unit_test(test_request_corrupt),
        T(test_request_apply),
        T(test_request_apply_all_failed),
        cmocka_unit_test(test_answer_round_trip),
        cmocka_unit_test(test_answer_corrupt),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
