/* test_fsio.c - atomic replace under injected failures, read_all's cap,
 * mkdirs, path and keep_copy, and the openers that refuse FIFOs, devices,
 * directories and links (src/base/fsio.c). */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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

/* The default replacement (an exchange and an unlink over an existing
 * file, a rename where there is none): the new bytes under a new inode,
 * nothing else left, again and again; a directory in the way is not
 * replaced, nor lost. */
static void test_default_replace(void **state)
{
    struct stat before, after;
    assert_int_equal(stat(target, &before), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(zerg_fsio_write_atomic(target, NEW, sizeof NEW - 1,
                                                ZERG_FSIO_NOSYNC, NULL),
                         0);
        assert_int_equal(tu_count_entries(dir), 1);
    }
    char *got = tu_read(target);
    assert_string_equal(got, NEW);
    free(got);
    assert_int_equal(stat(target, &after), 0);
    assert_true(after.st_ino != before.st_ino);

    char fresh[PATH_MAX + 32], sub[PATH_MAX + 32];
    snprintf(fresh, sizeof fresh, "%s/fresh.json", dir);
    assert_int_equal(
        zerg_fsio_write_atomic(fresh, "1", 1, ZERG_FSIO_DURABLE, NULL), 0);
    got = tu_read(fresh);
    assert_string_equal(got, "1");
    free(got);

    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    struct zerg_err err = {0};
    assert_true(zerg_fsio_write_atomic(sub, "x", 1, ZERG_FSIO_NOSYNC, &err) <
                0);
    struct stat st;
    assert_int_equal(stat(sub, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(tu_count_entries(dir), 3); /* state, fresh, sub */
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

/* ---- what zerg refuses to open ---------------------------------------- */

/* dir/name as a path, in one of four static buffers used in turn. */
static const char *in_dir(const char *name)
{
    static char paths[4][PATH_MAX + 64];
    static unsigned next;
    char *path = paths[next++ % 4];
    snprintf(path, sizeof paths[0], "%s/%s", dir, name);
    return path;
}

/* A FIFO nobody writes to: a blocking open would never return.  The alarm
 * turns a regression into a failure instead of a hang. */
static void test_read_refuses_fifo(void **state)
{
    const char *fifo = in_dir("heartbeat-0.json");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    alarm(20);
    char *data = (char *)1;
    struct zerg_err err = {0};
    assert_int_equal(zerg_fsio_read_all(fifo, 100, &data, NULL, &err),
                     ZERG_ENOTREG);
    assert_null(data);
    assert_int_equal(err.code, ZERG_ENOTREG);
    assert_true(tu_contains(err.msg, fifo));
    assert_true(tu_contains(err.msg, "is not a regular file (a FIFO)"));
    assert_int_equal(zerg_fsio_open_read(fifo, ZERG_FSIO_NOFOLLOW, NULL),
                     ZERG_ENOTREG);
    assert_int_equal(zerg_fsio_read_input(fifo, 100, &data, NULL, NULL),
                     ZERG_ENOTREG);
    alarm(0);
    assert_string_equal(zerg_strerror(ZERG_ENOTREG), "not a regular file");
}

static void test_read_refuses_directory_and_devices(void **state)
{
    char *data = NULL;
    struct zerg_err err = {0};
    assert_int_equal(zerg_fsio_read_all(dir, 100, &data, NULL, &err), -EISDIR);
    assert_true(tu_contains(err.msg, "is not a regular file (a directory)"));
    assert_int_equal(zerg_fsio_read_all("/dev/null", 100, &data, NULL, &err),
                     ZERG_ENOTREG);
    assert_true(tu_contains(err.msg, "/dev/null is not a regular file (a "
                                     "character device)"));
    /* /dev/zero would stream forever without the check. */
    assert_int_equal(
        zerg_fsio_read_all("/dev/zero", 1 << 20, &data, NULL, NULL),
        ZERG_ENOTREG);
    assert_null(data);
}

static void test_read_refuses_socket(void **state)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", in_dir("result-0.json"));
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(s >= 0);
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
    char *data = NULL;
    struct zerg_err err = {0};
    assert_int_equal(zerg_fsio_read_all(sa.sun_path, 100, &data, NULL, &err),
                     ZERG_ENOTREG);
    assert_true(tu_contains(err.msg, "is not a regular file (a socket)"));
    close(s);
}

static void test_nofollow_refuses_links(void **state)
{
    const char *link = in_dir("assign-0.json");
    assert_int_equal(symlink(target, link), 0);
    char *data = NULL;
    size_t len = 0;
    struct zerg_err err = {0};
    assert_int_equal(
        zerg_fsio_read_file(link, 100, ZERG_FSIO_NOFOLLOW, &data, &len, &err),
        ZERG_ESYMLINK);
    assert_null(data);
    assert_true(tu_contains(err.msg, "is a symbolic link"));
    /* Without the flag a link to a regular file is read. */
    assert_int_equal(zerg_fsio_read_all(link, 100, &data, &len, NULL), 0);
    assert_memory_equal(data, OLD, sizeof OLD);
    free(data);
    int fd = zerg_fsio_open_read(link, 0, NULL);
    assert_true(fd >= 0);
    close(fd);
}

/* A pipe the user named on the command line is read, not refused. */
static void test_any_kind_reads_a_pipe(void **state)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], "x = 1\n", 6), 6);
    close(p[1]);
    char path[64], *data = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "/proc/self/fd/%d", p[0]);
    assert_int_equal(zerg_fsio_read_all(path, 100, &data, &len, NULL),
                     ZERG_ENOTREG);
    assert_int_equal(
        zerg_fsio_read_file(path, 100, ZERG_FSIO_ANY_KIND, &data, &len, NULL),
        0);
    assert_string_equal(data, "x = 1\n");
    free(data);
    close(p[0]);
}

static void test_open_append(void **state)
{
    const char *log = in_dir("monitor.log");
    struct zerg_err err = {0};
    int fd = zerg_fsio_open_append(log, &err);
    assert_true(fd >= 0);
    assert_false(fcntl(fd, F_GETFL) & O_NONBLOCK);
    assert_int_equal(write(fd, "a\n", 2), 2);
    close(fd);
    fd = zerg_fsio_open_append(log, &err); /* appends, does not truncate */
    assert_int_equal(write(fd, "b\n", 2), 2);
    close(fd);
    char *got = tu_read(log);
    assert_string_equal(got, "a\nb\n");
    free(got);
}

static void test_open_append_refuses(void **state)
{
    /* A dangling link: following it would create a file outside. */
    const char *outside = in_dir("outside");
    const char *link = in_dir("monitor.jsonl");
    assert_int_equal(symlink(outside, link), 0);
    struct zerg_err err = {0};
    assert_int_equal(zerg_fsio_open_append(link, &err), ZERG_ESYMLINK);
    assert_true(tu_contains(err.msg, "is a symbolic link"));
    assert_int_equal(access(outside, F_OK), -1);
    /* A FIFO with no reader: refused at once, not waited on. */
    const char *fifo = in_dir("worker-0.log");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    alarm(20);
    assert_int_equal(zerg_fsio_open_append(fifo, &err), ZERG_ENOTREG);
    assert_true(tu_contains(err.msg, "is not a regular file (a FIFO)"));
    /* With a reader the open succeeds; the fstat check still refuses. */
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    assert_int_equal(zerg_fsio_open_append(fifo, &err), ZERG_ENOTREG);
    close(rd);
    alarm(0);
    assert_int_equal(zerg_fsio_open_append("/dev/null", &err), ZERG_ENOTREG);
    assert_int_equal(zerg_fsio_open_append(dir, &err), -EISDIR);
}

static void test_project_of(void **state)
{
    char root[PATH_MAX];
    assert_int_equal(
        zerg_fsio_project_of("/p/.zerg/config.yaml", root, sizeof root), 0);
    assert_string_equal(root, "/p");
    assert_int_equal(zerg_fsio_project_of("/a/.zerg/b/.gsd/specs/f/g.json",
                                          root, sizeof root),
                     0);
    assert_string_equal(root, "/a/.zerg/b");
    assert_int_equal(zerg_fsio_project_of(".zerg/c", root, sizeof root), 0);
    assert_string_equal(root, ".");
    assert_int_equal(zerg_fsio_project_of("/.gsd/x", root, sizeof root), 0);
    assert_string_equal(root, "/");
    assert_int_equal(zerg_fsio_project_of("/p/x.zerg/c", root, sizeof root),
                     -ENOENT);
    assert_int_equal(zerg_fsio_project_of("/p/.zergs/c", root, sizeof root),
                     -ENOENT);
}

static void test_read_input_stays_in_project(void **state)
{
    tu_write(dir, "proj/.zerg/real.yaml", "inside\n");
    const char *cfg = in_dir("proj/.zerg/config.yaml");
    char *data = NULL;
    struct zerg_err err = {0};
    /* A link to a file of the project is fine. */
    assert_int_equal(symlink("real.yaml", cfg), 0);
    assert_int_equal(zerg_fsio_read_input(cfg, 100, &data, NULL, &err), 0);
    assert_string_equal(data, "inside\n");
    free(data);
    /* A link out of it is refused, naming where it leads. */
    unlink(cfg);
    assert_int_equal(symlink(target, cfg), 0);
    assert_int_equal(zerg_fsio_read_input(cfg, 100, &data, NULL, &err),
                     ZERG_EOUTSIDE);
    assert_null(data);
    assert_true(tu_contains(err.msg, "outside the project"));
    assert_true(tu_contains(err.msg, "state.json"));
    /* Outside any project there is nothing to stay inside. */
    assert_int_equal(zerg_fsio_read_input(target, 100, &data, NULL, NULL), 0);
    free(data);
    assert_int_equal(
        zerg_fsio_read_input(in_dir("proj/.zerg/none"), 100, &data, NULL, NULL),
        -ENOENT);
}

static void test_mkdirs_under(void **state)
{
    char root[PATH_MAX + 16];
    snprintf(root, sizeof root, "%s/proj/.zerg", dir);
    struct zerg_err err = {0};
    assert_int_equal(zerg_fsio_mkdirs_under(root, "logs//tasks/", 0755, &err),
                     0);
    assert_int_equal(zerg_fsio_mkdirs_under(root, "logs/tasks", 0755, &err), 0);
    struct stat st;
    assert_int_equal(lstat(in_dir("proj/.zerg/logs/tasks"), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(zerg_fsio_mkdirs_under(root, "", 0755, &err), 0);
}

static void test_mkdirs_under_refuses(void **state)
{
    char root[PATH_MAX + 16];
    snprintf(root, sizeof root, "%s/proj/.zerg", dir);
    tu_write(dir, "proj/.zerg/logs", "a file where a directory is due");
    char elsewhere[PATH_MAX + 16];
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", dir);
    assert_int_equal(mkdir(elsewhere, 0755), 0);
    assert_int_equal(symlink(elsewhere, in_dir("proj/.zerg/state")), 0);
    struct zerg_err err = {0};
    assert_int_equal(zerg_fsio_mkdirs_under(root, "state/f", 0755, &err),
                     ZERG_ESYMLINK);
    assert_true(tu_contains(err.msg, "proj/.zerg/state is a symbolic link"));
    assert_int_equal(tu_count_entries(elsewhere), 0);
    assert_int_equal(zerg_fsio_mkdirs_under(root, "logs/tasks", 0755, &err),
                     -ENOTDIR);
    assert_true(tu_contains(err.msg, "proj/.zerg/logs: Not a directory (it "
                                     "is a regular file)"));
    assert_int_equal(zerg_fsio_mkdirs_under(root, "../out", 0755, &err),
                     -EINVAL);
    /* The root is trusted, but a file in its way is still reported. */
    assert_int_equal(zerg_fsio_mkdirs_under(target, "x", 0755, &err), -ENOTDIR);
    assert_true(tu_contains(err.msg, "Not a directory"));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_replace_works),
        T(test_default_replace),
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
        T(test_read_refuses_fifo),
        T(test_read_refuses_directory_and_devices),
        T(test_read_refuses_socket),
        T(test_nofollow_refuses_links),
        T(test_any_kind_reads_a_pipe),
        T(test_open_append),
        T(test_open_append_refuses),
        T(test_project_of),
        T(test_read_input_stays_in_project),
        T(test_mkdirs_under),
        T(test_mkdirs_under_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
