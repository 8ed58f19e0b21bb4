/* test_review.c - the request files of `zerg approve` / `zerg redo`
 * (src/model/review.c): a round trip, the names the orchestrator takes,
 * and every bad request refused with nothing written or read. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/review.h"

static struct zerg_review_request req(const char *task, int attempt,
                                      enum zerg_review_decision d,
                                      const char *note)
{
    struct zerg_review_request rq = {
        .attempt = attempt, .decision = d, .note = (char *)note};
    snprintf(rq.feature, sizeof rq.feature, "feat");
    snprintf(rq.task, sizeof rq.task, "%s", task);
    return rq;
}

static void test_review_round_trip(void **st)
{
    (void)st;
    const char *dir = tu_mkdtemp();
    char path[PATH_MAX], want[PATH_MAX];
    struct zerg_err err = {0};
    struct zerg_review_request rq =
        req("T-L1-001", 2, ZERG_REVIEW_REDO, "use \"tabs\"\nplease");
    assert_int_equal(
        zerg_review_request_write(dir, &rq, path, sizeof path, &err), 0);
    snprintf(want, sizeof want, "%s/.zerg/review/feat/T-L1-001.json", dir);
    assert_string_equal(path, want);
    struct zerg_review_request back;
    assert_int_equal(zerg_review_request_read(path, &back, &err), 0);
    assert_string_equal(back.feature, "feat");
    assert_string_equal(back.task, "T-L1-001");
    assert_int_equal(back.attempt, 2);
    assert_int_equal(back.decision, ZERG_REVIEW_REDO);
    assert_string_equal(back.note, "use \"tabs\"\nplease");
    zerg_review_request_close(&back);
    /* A later decision on the task replaces the earlier one. */
    rq = req("T-L1-001", 2, ZERG_REVIEW_APPROVE, NULL);
    assert_int_equal(zerg_review_request_write(dir, &rq, NULL, 0, &err), 0);
    assert_int_equal(zerg_review_request_read(path, &back, &err), 0);
    assert_int_equal(back.decision, ZERG_REVIEW_APPROVE);
    assert_null(back.note);
    zerg_review_request_close(&back);
    char rdir[PATH_MAX];
    snprintf(rdir, sizeof rdir, "%s/.zerg/review/feat", dir);
    assert_int_equal(tu_count_entries(rdir), 1);
    tu_rmtree(dir);
}

static void test_review_names(void **st)
{
    (void)st;
    char task[ZERG_ID_MAX + 1];
    assert_true(zerg_review_request_name("T-L1-001.json", task));
    assert_string_equal(task, "T-L1-001");
    assert_false(zerg_review_request_name(".T.json.tmp.1", task));
    assert_false(zerg_review_request_name("T-L1-001.json.tmp.9", task));
    assert_false(zerg_review_request_name(".json", task));
    assert_false(zerg_review_request_name("a b.json", task));
    assert_false(zerg_review_request_name("T.txt", task));
    assert_false(zerg_review_request_name(NULL, task));
}

static void test_review_bad_writes(void **st)
{
    (void)st;
    const char *dir = tu_mkdtemp();
    struct zerg_err err = {0};
    char big[ZERG_REVIEW_NOTE_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    struct zerg_review_request rq = req("T-1", 1, ZERG_REVIEW_REDO, big);
    assert_int_equal(zerg_review_request_write(dir, &rq, NULL, 0, &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "at most 1000"));
    rq = req("../x", 1, ZERG_REVIEW_APPROVE, NULL);
    assert_int_equal(zerg_review_request_write(dir, &rq, NULL, 0, &err),
                     ZERG_EINVAL_INPUT);
    rq = req("T-1", 0, ZERG_REVIEW_APPROVE, NULL);
    assert_int_equal(zerg_review_request_write(dir, &rq, NULL, 0, &err),
                     ZERG_EINVAL_INPUT);
    /* Nothing was made. */
    char rdir[PATH_MAX];
    snprintf(rdir, sizeof rdir, "%s/.zerg/review", dir);
    assert_int_equal(access(rdir, F_OK), -1);
    /* A link planted where the directory goes is not followed. */
    char zdir[PATH_MAX], target[PATH_MAX];
    snprintf(zdir, sizeof zdir, "%s/.zerg", dir);
    snprintf(target, sizeof target, "%s/elsewhere", dir);
    assert_int_equal(mkdir(zdir, 0755), 0);
    assert_int_equal(mkdir(target, 0755), 0);
    assert_int_equal(symlink(target, rdir), 0);
    rq = req("T-1", 1, ZERG_REVIEW_APPROVE, NULL);
    assert_true(zerg_review_request_write(dir, &rq, NULL, 0, &err) < 0);
    assert_int_equal(tu_count_entries(target), 0);
    tu_rmtree(dir);
}

static void test_review_bad_reads(void **st)
{
    (void)st;
    static const char *const bad[] = {
        "not json",
        "[1]",
        "{\"feature\":\"f\",\"task\":\"T\",\"attempt\":1}",
        "{\"feature\":\"f\",\"task\":\"T\",\"attempt\":1,\"decision\":"
        "\"merge\"}",
        "{\"feature\":\"f\",\"task\":\"T\",\"attempt\":0,\"decision\":"
        "\"redo\"}",
        "{\"feature\":\"f\",\"task\":\"T\",\"attempt\":1.5,\"decision\":"
        "\"redo\"}",
        "{\"feature\":\"f\",\"task\":\"a/"
        "b\",\"attempt\":1,\"decision\":\"redo\"}",
        "{\"feature\":\"f\",\"task\":\"T\",\"attempt\":1,\"decision\":\"redo\","
        "\"note\":3}",
    };
    const char *dir = tu_mkdtemp();
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/T.json", dir);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tu_write(dir, "T.json", bad[i]);
        struct zerg_review_request rq;
        struct zerg_err err = {0};
        assert_int_equal(zerg_review_request_read(path, &rq, &err),
                         ZERG_ECORRUPT);
        assert_true(tu_contains(err.msg, "not a review request"));
        assert_null(rq.note);
    }
    /* A link is refused, a missing file is -ENOENT. */
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s/L.json", dir);
    assert_int_equal(symlink(path, link), 0);
    struct zerg_review_request rq;
    assert_true(zerg_review_request_read(link, &rq, NULL) < 0);
    snprintf(link, sizeof link, "%s/none.json", dir);
    assert_int_equal(zerg_review_request_read(link, &rq, NULL), -ENOENT);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_review_round_trip),
        cmocka_unit_test(test_review_names),
        cmocka_unit_test(test_review_bad_writes),
        cmocka_unit_test(test_review_bad_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
