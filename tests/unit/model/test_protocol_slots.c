/* test_protocol_slots.c - assignments written through the slot directory
 * kept open (src/model/protocol_slots.c): the directory is made on the
 * first write; a link planted in its place afterwards is never written
 * through, within an incarnation (the kept directory takes the writes)
 * or at the next one (refused as a link); a directory removed under the
 * writer is made again; another run directory gets its own; no temp file
 * is left behind. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/protocol.h"

struct fx {
    char dir[PATH_MAX / 4];     /* the run directory */
    char outside[PATH_MAX / 4]; /* where a planted link points */
    char path[PATH_MAX / 2];    /* slot-1 */
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", tu_mkdtemp());
    snprintf(f->outside, sizeof f->outside, "%s", tu_mkdtemp());
    snprintf(f->path, sizeof f->path, "%s/slot-1", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    tu_rmtree(f->dir);
    tu_rmtree(f->outside);
    free(f);
    return 0;
}

static int put(struct fx *f, int slot, uint64_t epoch, const char *task,
               struct zerg_err *err)
{
    struct zerg_assign a = {.epoch = epoch, .attempt = 1};
    snprintf(a.task, sizeof a.task, "%s", task);
    return zerg_proto_write_assign(f->dir, slot, &a, err);
}

static struct zerg_assign got(struct fx *f, int slot)
{
    struct zerg_assign a = {0};
    assert_int_equal(zerg_proto_read_assign(f->dir, slot, &a), 0);
    return a;
}

static void test_made_then_rewritten(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    assert_int_equal(put(f, 1, 7, "", &err), 0);
    struct stat st;
    assert_int_equal(lstat(f->path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    for (int i = 0; i < 5; i++) {
        char id[16];
        snprintf(id, sizeof id, "T-%d", i);
        assert_int_equal(put(f, 1, 7, id, &err), 0);
        assert_string_equal(got(f, 1).task, id);
    }
    /* Only assign.json: every temp file was renamed into place. */
    assert_int_equal(tu_count_entries(f->path), 1);
}

/* The name replaced by a link while the incarnation lives: the writes go
 * on into the directory that was checked, never through the link. */
static void test_link_planted_within_an_epoch(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    char moved[PATH_MAX];
    assert_int_equal(put(f, 1, 7, "", &err), 0);
    snprintf(moved, sizeof moved, "%s/moved", f->dir);
    assert_int_equal(rename(f->path, moved), 0);
    assert_int_equal(symlink(f->outside, f->path), 0);
    assert_int_equal(put(f, 1, 7, "T-1", &err), 0);
    assert_int_equal(tu_count_entries(f->outside), 0);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/assign.json", moved);
    char *text = tu_read(path);
    assert_non_null(text);
    assert_true(tu_contains(text, "\"task\":\"T-1\""));
    free(text);
}

/* The next incarnation checks the name again: a link is refused. */
static void test_link_refused_at_the_next_epoch(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    char moved[PATH_MAX];
    assert_int_equal(put(f, 1, 7, "", &err), 0);
    snprintf(moved, sizeof moved, "%s/moved", f->dir);
    assert_int_equal(rename(f->path, moved), 0);
    assert_int_equal(symlink(f->outside, f->path), 0);
    assert_true(put(f, 1, 8, "", &err) < 0);
    assert_true(tu_contains(err.msg, "symbolic link"));
    assert_int_equal(tu_count_entries(f->outside), 0);
    /* Removed, the name is a directory again. */
    assert_int_equal(unlink(f->path), 0);
    assert_int_equal(put(f, 1, 9, "T-2", &err), 0);
    assert_string_equal(got(f, 1).task, "T-2");
}

static void test_removed_directory_made_again(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    assert_int_equal(put(f, 1, 7, "", &err), 0);
    tu_rmtree(f->path);
    assert_int_equal(put(f, 1, 7, "T-3", &err), 0);
    assert_string_equal(got(f, 1).task, "T-3");
}

/* Two run directories in turn, and a slot past the kept table: each
 * write lands where it was asked to. */
static void test_other_dirs_and_slots(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct fx g = *f;
    snprintf(g.dir, sizeof g.dir, "%s", tu_mkdtemp());
    assert_int_equal(put(f, 1, 7, "A-1", &err), 0);
    assert_int_equal(put(&g, 1, 7, "B-1", &err), 0);
    assert_int_equal(put(f, 1, 7, "A-2", &err), 0);
    assert_string_equal(got(f, 1).task, "A-2");
    assert_string_equal(got(&g, 1).task, "B-1");
    assert_int_equal(put(f, 5000, 7, "A-3", &err), 0);
    assert_string_equal(got(f, 5000).task, "A-3");
    assert_int_equal(put(f, 0, 7, "A-4", &err), 0);
    assert_string_equal(got(f, 0).task, "A-4");
    tu_rmtree(g.dir);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_made_then_rewritten),
        T(test_link_planted_within_an_epoch),
        T(test_link_refused_at_the_next_epoch),
        T(test_removed_directory_made_again),
        T(test_other_dirs_and_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
