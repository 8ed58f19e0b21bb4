/* test_fsio.c - atomic replace under injected failures, read_all's cap,
 * mkdirs, path and keep_copy (src/base/fsio.c). */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/fsio.h"

static char dir[PATH_MAX];
static char target[PATH_MAX + 32];
static const char OLD[] = "{\"old\":true,\"bytes\":\"\x01\x02\xff\"}\n";
static const char NEW[] = "{\"new\":true,\"padding\":\"0123456789abcdef\"}\n";

/* Counters and knobs for the fake ops. */
static int write_calls, fsync_calls, rename_calls;
static char renamed_from[PATH_MAX];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    snprintf(target, sizeof target, "%s/state.json", dir);
    FILE *f = fopen(target, "wb");
    fwrite(OLD, 1, sizeof OLD - 1, f);
    fclose(f);
    write_calls = fsync_calls = rename_calls = 0;
    renamed_from[0] = '\0';
    zerg_fsio_ops = zerg_fsio_ops_default;
    return 0;
}

static int teardown(void **state)
{
    zerg_fsio_ops = zerg_fsio_ops_default;
    tu_rmtree(dir);
    return 0;
}

/* The old file is intact byte for byte and is the only entry left. */
static void assert_old_survives(void)
{
    char *got = tu_read(target);
    assert_non_null(got);
    assert_memory_equal(got, OLD, sizeof OLD);
    free(got);
    assert_int_equal(tu_count_entries(dir), 1);
}

static void assert_failure(int rc, int want, const struct zerg_err *err,
                           const char *errno_text)
{
    assert_int_equal(rc, want);
    assert_int_equal(err->code, want);
    assert_true(tu_contains(err->msg, "cannot write"));
    assert_true(tu_contains(err->msg, target));
    assert_true(tu_contains(err->msg, errno_text));
    assert_old_survives();
}

static ssize_t write_enospc(int fd, const void *buf, size_t len)
{
    write_calls++;
    errno = ENOSPC;
    return -1;
}

/* Writes half the first time, then fails with EIO. */
static ssize_t write_short_then_eio(int fd, const void *buf, size_t len)
{
    if (write_calls++ == 0)
        return write(fd, buf, len / 2);
    errno = EIO;
    return -1;
}

/* EINTR first, then one byte per call. */
static ssize_t write_trickle(int fd, const void *buf, size_t len)
{
    if (write_calls++ == 0) {
        errno = EINTR;
        return -1;
    }
    return write(fd, buf, 1);
}

static ssize_t write_zero(int fd, const void *buf, size_t len)
{
    write_calls++;
    return 0;
}

static int fsync_eio(int fd)
{
    fsync_calls++;
    errno = EIO;
    return -1;
}

static int fsync_count(int fd)
{
    fsync_calls++;
    return 0;
}

/* The file fsync succeeds, the directory fsync (the second) fails. */
static int fsync_dir_fails(int fd)
{
    if (fsync_calls++ == 0)
        return 0;
    errno = EIO;
    return -1;
}

static int rename_exdev(const char *from, const char *to)
{
    rename_calls++;
    snprintf(renamed_from, sizeof renamed_from, "%s", from);
    errno = EXDEV;
    return -1;
}

static int rename_record(const char *from, const char *to)
{
    rename_calls++;
    snprintf(renamed_from, sizeof renamed_from, "%s", from);
    return rename(from, to);
}

static int write_new(struct zerg_err *err)
{
    return zerg_fsio_write_atomic(target, NEW, sizeof NEW - 1,
                                  ZERG_FSIO_DURABLE, err);
}

static void test_replace_works(void **state)
{
    zerg_fsio_ops.rename = rename_record;
    zerg_fsio_ops.fsync = fsync_count;
    struct zerg_err err = {0};
    assert_int_equal(write_new(&err), 0);
    char *got = tu_read(target);
    assert_string_equal(got, NEW);
    free(got);
    assert_int_equal(tu_count_entries(dir), 1);
    /* File and directory were synced; the temp sat beside the target. */
    assert_int_equal(fsync_calls, 2);
    char prefix[PATH_MAX + 32];
    snprintf(prefix, sizeof prefix, "%s/.state.json.tmp.%ld.", dir,
             (long)getpid());
    assert_true(tu_contains(renamed_from, prefix));
    assert_int_equal(strlen(renamed_from), strlen(prefix) + 8);
}

static void test_nosync_skips_fsync(void **state)
{
    zerg_fsio_ops.fsync = fsync_count;
    assert_int_equal(
        zerg_fsio_write_atomic(target, "x", 1, ZERG_FSIO_NOSYNC, NULL), 0);
    assert_int_equal(fsync_calls, 0);
    char *got = tu_read(target);
    assert_string_equal(got, "x");
    free(got);
}

static void test_creates_missing_file_and_empty_data(void **state)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/new.json", dir);
    assert_int_equal(zerg_fsio_write_atomic(path, "", 0, 0, NULL), 0);
    char *got = tu_read(path);
    assert_string_equal(got, "");
    free(got);
    assert_int_equal(tu_count_entries(dir), 2);
}

static void test_enospc_on_write(void **state)
{
    zerg_fsio_ops.write = write_enospc;
    struct zerg_err err = {0};
    assert_failure(write_new(&err), -ENOSPC, &err, "No space left on device");
    assert_int_equal(write_calls, 1);
}

static void test_short_write_then_eio(void **state)
{
    zerg_fsio_ops.write = write_short_then_eio;
    struct zerg_err err = {0};
    assert_failure(write_new(&err), -EIO, &err, "Input/output error");
    assert_int_equal(write_calls, 2);
}

static void test_write_without_progress(void **state)
{
    zerg_fsio_ops.write = write_zero;
    struct zerg_err err = {0};
    assert_failure(write_new(&err), -EIO, &err, "Input/output error");
}

static void test_eintr_and_short_writes_complete(void **state)
{
    zerg_fsio_ops.write = write_trickle;
    assert_int_equal(write_new(NULL), 0);
    assert_int_equal(write_calls, (int)sizeof NEW); /* EINTR + 1 per byte */
    char *got = tu_read(target);
    assert_string_equal(got, NEW);
    free(got);
}

static void test_eio_on_fsync(void **state)
{
    zerg_fsio_ops.fsync = fsync_eio;
    struct zerg_err err = {0};
    assert_failure(write_new(&err), -EIO, &err, "Input/output error");
    assert_int_equal(fsync_calls, 1);
}

static void test_rename_fails(void **state)
{
    zerg_fsio_ops.rename = rename_exdev;
    struct zerg_err err = {0};
    assert_failure(write_new(&err), -EXDEV, &err, "Invalid cross-device link");
    assert_int_equal(rename_calls, 1);
    /* The temp file that would have been renamed is gone. */
    assert_int_equal(access(renamed_from, F_OK), -1);
}

static void test_dir_sync_failure_is_reported(void **state)
{
    zerg_fsio_ops.fsync = fsync_dir_fails;
    struct zerg_err err = {0};
    assert_int_equal(write_new(&err), -EIO);
    assert_true(tu_contains(err.msg, "cannot sync directory of"));
    assert_true(tu_contains(err.msg, target));
    /* The rename had happened: the new content is in place, whole. */
    char *got = tu_read(target);
    assert_string_equal(got, NEW);
    free(got);
    assert_int_equal(tu_count_entries(dir), 1);
}

static void test_missing_directory(void **state)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/nope/state.json", dir);
    struct zerg_err err = {0};
    assert_int_equal(zerg_fsio_write_atomic(path, "x", 1, 0, &err), -ENOENT);
    assert_true(tu_contains(err.msg, "cannot write"));
    assert_true(tu_contains(err.msg, "nope/state.json"));
    assert_true(tu_contains(err.msg, "No such file or directory"));
}

static void test_read_all_cap(void **state)
{
    char *data = NULL;
    size_t len = 0;
    size_t n = sizeof OLD - 1;
    struct zerg_err err = {0};
    assert_int_equal(zerg_fsio_read_all(target, n, &data, &len, &err), 0);
    assert_int_equal(len, n);
    assert_memory_equal(data, OLD, n + 1); /* NUL-terminated */
    free(data);

    assert_int_equal(zerg_fsio_read_all(target, n - 1, &data, &len, &err),
                     -EFBIG);
    assert_null(data);
    assert_true(tu_contains(err.msg, "cannot read"));
    assert_true(tu_contains(err.msg, target));
    assert_true(tu_contains(err.msg, "larger than"));
}

static void test_read_all_unsized_files(void **state)
{
    /* /proc files report size 0: the read loop still gets everything and
     * the cap still applies. */
    char *data = NULL;
    size_t len = 0;
    assert_int_equal(
        zerg_fsio_read_all("/proc/self/status", 1 << 20, &data, &len, NULL), 0);
    assert_true(tu_contains(data, "Pid:"));
    assert_int_equal(len, strlen(data));
    free(data);
    assert_int_equal(
        zerg_fsio_read_all("/proc/self/status", 16, &data, &len, NULL), -EFBIG);
    assert_null(data);
}

static void test_read_all_missing(void **state)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/missing.json", dir);
    char *data = NULL;
    struct zerg_err err = {0};
    assert_int_equal(zerg_fsio_read_all(path, 100, &data, NULL, &err), -ENOENT);
    assert_int_equal(err.code, -ENOENT);
    assert_true(tu_contains(err.msg, "cannot read"));
    assert_true(tu_contains(err.msg, "missing.json"));
    assert_true(tu_contains(err.msg, "No such file or directory"));
}

static void test_mkdirs(void **state)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/a/b//c/", dir);
    assert_int_equal(zerg_fsio_mkdirs(path, 0755), 0);
    assert_int_equal(zerg_fsio_mkdirs(path, 0755), 0); /* exists: fine */
    struct stat st;
    snprintf(path, sizeof path, "%s/a/b/c", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* A file in the way. */
    snprintf(path, sizeof path, "%s/state.json/sub", dir);
    assert_int_equal(zerg_fsio_mkdirs(path, 0755), -ENOTDIR);
    assert_int_equal(zerg_fsio_mkdirs(target, 0755), -ENOTDIR);
}

static void test_path(void **state)
{
    char buf[16];
    assert_int_equal(zerg_fsio_path(buf, sizeof buf, "%s/%d", "ab", 12), 0);
    assert_string_equal(buf, "ab/12");
    assert_int_equal(zerg_fsio_path(buf, sizeof buf, "%s", "0123456789abcdef"),
                     -ENAMETOOLONG);
    assert_int_equal(zerg_fsio_path(buf, sizeof buf, "%s", "0123456789abcde"),
                     0);
}

static void test_keep_copy(void **state)
{
    char backup[PATH_MAX + 16];
    snprintf(backup, sizeof backup, "%s/state.json.bak", dir);
    tu_write(dir, "state.json.bak", "stale backup");
    assert_int_equal(zerg_fsio_keep_copy(target, backup), 0);
    char *got = tu_read(backup);
    assert_memory_equal(got, OLD, sizeof OLD);
    free(got);
    struct stat a, b;
    stat(target, &a);
    stat(backup, &b);
    assert_int_equal(a.st_ino, b.st_ino); /* a hard link, not a copy */
    assert_int_equal(tu_count_entries(dir), 2);

    /* The live file is replaced atomically; the backup keeps the old one. */
    assert_int_equal(write_new(NULL), 0);
    got = tu_read(backup);
    assert_memory_equal(got, OLD, sizeof OLD);
    free(got);
}

static void test_keep_copy_failures(void **state)
{
    char backup[PATH_MAX + 16], missing[PATH_MAX + 16];
    snprintf(backup, sizeof backup, "%s/state.json.bak", dir);
    snprintf(missing, sizeof missing, "%s/missing.json", dir);
    assert_int_equal(zerg_fsio_keep_copy(missing, backup), -ENOENT);
    zerg_fsio_ops.rename = rename_exdev;
    assert_int_equal(zerg_fsio_keep_copy(target, backup), -EXDEV);
    assert_int_equal(tu_count_entries(dir), 1); /* temp link removed */
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_replace_works),
        T(test_nosync_skips_fsync),
        T(test_creates_missing_file_and_empty_data),
        T(test_enospc_on_write),
        T(test_short_write_then_eio),
        T(test_write_without_progress),
        T(test_eintr_and_short_writes_complete),
        T(test_eio_on_fsync),
        T(test_rename_fails),
        T(test_dir_sync_failure_is_reported),
        T(test_missing_directory),
        T(test_read_all_cap),
        T(test_read_all_unsized_files),
        T(test_read_all_missing),
        T(test_mkdirs),
        T(test_path),
        T(test_keep_copy),
        T(test_keep_copy_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
