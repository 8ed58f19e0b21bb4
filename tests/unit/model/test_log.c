/* test_log.c - the monitor log (src/model/log.c): exact line formats, the JSON
 * record, level filtering, the observer, whole lines when several
 * processes append at once, and rotation: at rush start, while running
 * (the crossing line, a refusal, links), followed by other handles, and
 * the rotating handle's byte count (when it looks at the name again). */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/log.h"

/* 2026-02-03T05:41:55.123Z */
#define T_2026 (INT64_C(1770097315) * ZERG_NS_PER_S + 123 * ZERG_NS_PER_MS)
#define CHILD_TIMEOUT_S 60

/* DESIGN.md section 11, with \d spelled for POSIX regex. */
#define LINE_RE                                                                \
    "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "      \
    "\\[(W[0-9]+|ORCH)\\] \\[(DEBUG|INFO|WARN|ERROR)\\] .+$"

static char dir[PATH_MAX];
static char log_path[PATH_MAX + 32], jsonl_path[PATH_MAX + 32];
static struct zerg_clock_fake fake;
static struct zerg_clock clock_;

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "%s", tu_mkdtemp());
    snprintf(log_path, sizeof log_path, "%s/.zerg/monitor.log", dir);
    snprintf(jsonl_path, sizeof jsonl_path, "%s/.zerg/monitor.jsonl", dir);
    fake = (struct zerg_clock_fake){.mono_ns = 0, .wall_ns = T_2026};
    clock_ = zerg_clock_fake(&fake);
    unsetenv("ZERG_DEBUG");
    return 0;
}

static int teardown(void **state)
{
    tu_rmtree(dir);
    return 0;
}

static struct zerg_log *open_log(void)
{
    char zdir[PATH_MAX + 8];
    snprintf(zdir, sizeof zdir, "%s/.zerg", dir);
    struct zerg_err err = {0};
    struct zerg_log *lg = zerg_log_open(zdir, &clock_, &err);
    if (!lg)
        fail_msg("zerg_log_open: %s", err.msg);
    return lg;
}

static int matches(const char *line)
{
    regex_t re;
    assert_int_equal(regcomp(&re, LINE_RE, REG_EXTENDED | REG_NOSUB), 0);
    int ok = regexec(&re, line, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* Splits text into lines (modifies it); returns the count. */
static size_t split_lines(char *text, char **lines, size_t max)
{
    size_t n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        if (n < max)
            lines[n] = l;
        n++;
    }
    return n;
}

static zerg_json *parse_line(const char *line)
{
    struct zerg_err err = {0};
    zerg_json *v = zerg_json_parse(line, strlen(line), &err);
    if (!v)
        fail_msg("bad JSON line (%s): %s", err.msg, line);
    return v;
}

static void test_exact_text_lines(void **state)
{
    struct zerg_log *lg = open_log();
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", "A-L1-002", NULL,
                   "Worker %d claimed task %s", 0, "A-L1-002");
    fake.wall_ns += 1877 * ZERG_NS_PER_MS;
    zerg_log_event(lg, ZERG_LOG_ORCH, ZERG_LOG_WARN, "heartbeat_stale", NULL,
                   NULL, "Worker 12 heartbeat stale");
    zerg_log_event(lg, 12, ZERG_LOG_ERROR, "worker_crash", NULL, NULL,
                   "two\nlines\r");
    zerg_log_close(lg);

    char *text = tu_read(log_path);
    assert_string_equal(text,
                        "2026-02-03T05:41:55.123Z [W0] [INFO] Worker 0 "
                        "claimed task A-L1-002\n"
                        "2026-02-03T05:41:57.000Z [ORCH] [WARN] Worker 12 "
                        "heartbeat stale\n"
                        "2026-02-03T05:41:57.000Z [W12] [ERROR] two lines \n");
    char *lines[4];
    assert_int_equal(split_lines(text, lines, 4), 3);
    for (int i = 0; i < 3; i++)
        assert_true(matches(lines[i]));
    free(text);
}

static void test_jsonl_record(void **state)
{
    struct zerg_log *lg = open_log();
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", 2);
    zerg_json_set_num(data, "delay", 4.5);
    zerg_json_set_str(data, "policy", "backoff");
    zerg_log_event(lg, 3, ZERG_LOG_INFO, "worker_spawn_retry", "A-L1-002", data,
                   "Retrying spawn of worker %d", 3);
    zerg_log_event(lg, ZERG_LOG_ORCH, ZERG_LOG_INFO, "rush_start", NULL, NULL,
                   "Rush started \"quoted\"\nnext");
    zerg_log_close(lg);

    char *text = tu_read(jsonl_path);
    char *lines[3];
    assert_int_equal(split_lines(text, lines, 3), 2);
    assert_string_equal(lines[0],
                        "{\"ts\":\"2026-02-03T05:41:55.123Z\",\"worker\":3,"
                        "\"level\":\"INFO\",\"event\":\"worker_spawn_retry\","
                        "\"task\":\"A-L1-002\",\"msg\":\"Retrying spawn of "
                        "worker 3\",\"data\":{\"attempt\":2,\"delay\":4.5,"
                        "\"policy\":\"backoff\"}}");

    zerg_json *v = parse_line(lines[1]);
    const char *keys[] = {"ts",   "worker", "level", "event",
                          "task", "msg",    "data"};
    assert_int_equal(zerg_json_len(v), 7);
    for (size_t i = 0; i < 7; i++)
        assert_non_null(zerg_json_get(v, keys[i]));
    assert_true(zerg_json_is(zerg_json_get(v, "worker"), ZERG_JSON_NULL));
    assert_true(zerg_json_is(zerg_json_get(v, "task"), ZERG_JSON_NULL));
    assert_true(zerg_json_is(zerg_json_get(v, "data"), ZERG_JSON_OBJECT));
    assert_int_equal(zerg_json_len(zerg_json_get(v, "data")), 0);
    assert_string_equal(zerg_json_as_str(zerg_json_get(v, "event")),
                        "rush_start");
    assert_string_equal(zerg_json_as_str(zerg_json_get(v, "msg")),
                        "Rush started \"quoted\"\nnext");
    zerg_json_free(v);
    free(text);
}

/* A rush names its feature in every JSON event; the text line is the
 * same. */
static void test_feature_in_events(void **state)
{
    struct zerg_log *lg = open_log();
    zerg_log_set_feature(lg, "auth");
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", "A-L1-001", NULL,
                   "Worker 0 claimed task %s", "A-L1-001");
    zerg_log_close(lg);
    char *text = tu_read(jsonl_path);
    zerg_json *v = parse_line(text);
    assert_string_equal(zerg_json_as_str(zerg_json_get(v, "feature")), "auth");
    zerg_json_free(v);
    free(text);
    text = tu_read(log_path);
    assert_null(strstr(text, "auth"));
    free(text);
}

static void test_unencodable_data_keeps_event(void **state)
{
    struct zerg_log *lg = open_log();
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "elapsed", NAN);
    zerg_log_event(lg, 1, ZERG_LOG_WARN, "task_timeout", "T1", data,
                   "Task T1 timed out");
    zerg_log_close(lg);

    char *text = tu_read(jsonl_path);
    zerg_json *v = parse_line(text);
    assert_string_equal(zerg_json_as_str(zerg_json_get(v, "event")),
                        "task_timeout");
    const zerg_json *why =
        zerg_json_get(zerg_json_get(v, "data"), "encode_error");
    assert_true(tu_contains(zerg_json_as_str(why), "NaN or Inf"));
    zerg_json_free(v);
    free(text);
}

static int count_lines(const char *path)
{
    char *text = tu_read(path);
    int n = 0;
    for (char *p = text; p && *p; p++)
        n += *p == '\n';
    free(text);
    return n;
}

static void test_level_filter(void **state)
{
    struct zerg_log *lg = open_log();
    zerg_log_event(lg, 0, ZERG_LOG_DEBUG, "level_check", NULL, NULL, "hidden");
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "level_check", NULL, NULL, "shown");
    assert_int_equal(count_lines(log_path), 1);
    zerg_log_set_level(lg, ZERG_LOG_DEBUG);
    zerg_log_event(lg, 0, ZERG_LOG_DEBUG, "level_check", NULL, zerg_json_obj(),
                   "now shown");
    zerg_log_set_level(lg, ZERG_LOG_ERROR);
    zerg_log_event(lg, 0, ZERG_LOG_WARN, "level_check", NULL, zerg_json_obj(),
                   "dropped (data freed)");
    zerg_log_close(lg);
    assert_int_equal(count_lines(log_path), 2);
    assert_int_equal(count_lines(jsonl_path), 2);
    char *text = tu_read(log_path);
    assert_true(tu_contains(text, "[W0] [DEBUG] now shown\n"));
    free(text);
}

static void test_zerg_debug_env(void **state)
{
    setenv("ZERG_DEBUG", "1", 1);
    struct zerg_log *lg = open_log();
    unsetenv("ZERG_DEBUG");
    zerg_log_event(lg, 0, ZERG_LOG_DEBUG, "level_check", NULL, NULL, "dbg");
    zerg_log_close(lg);
    assert_int_equal(count_lines(log_path), 1);
}

static void test_level_names(void **state)
{
    enum zerg_log_level lv;
    assert_int_equal(zerg_log_level_parse("warn", &lv), 0);
    assert_int_equal(lv, ZERG_LOG_WARN);
    assert_int_equal(zerg_log_level_parse("DEBUG", &lv), 0);
    assert_int_equal(lv, ZERG_LOG_DEBUG);
    assert_int_equal(zerg_log_level_parse("verbose", &lv), -EINVAL);
    assert_string_equal(zerg_log_level_name(ZERG_LOG_ERROR), "ERROR");
}

struct seen {
    int calls;
    int64_t wall_ns;
    int worker;
    char event[32], task[32], msg[64];
    double attempt;
};

static void observer(void *ud, const struct zerg_log_rec *rec)
{
    struct seen *s = ud;
    s->calls++;
    s->wall_ns = rec->wall_ns;
    s->worker = rec->worker;
    snprintf(s->event, sizeof s->event, "%s", rec->event);
    snprintf(s->task, sizeof s->task, "%s", rec->task ? rec->task : "-");
    snprintf(s->msg, sizeof s->msg, "%s", rec->msg);
    s->attempt = zerg_json_as_num(zerg_json_get(rec->data, "attempt"), -1);
}

static void test_observer(void **state)
{
    struct zerg_log *lg = open_log();
    struct seen s = {0};
    zerg_log_set_observer(lg, observer, &s);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", 3);
    zerg_log_event(lg, 2, ZERG_LOG_INFO, "task_failed", "B-L2-001", data,
                   "Task %s failed", "B-L2-001");
    assert_int_equal(s.calls, 1);
    assert_int_equal(s.wall_ns, T_2026);
    assert_int_equal(s.worker, 2);
    assert_string_equal(s.event, "task_failed");
    assert_string_equal(s.task, "B-L2-001");
    assert_string_equal(s.msg, "Task B-L2-001 failed");
    assert_true(s.attempt == 3);
    /* Filtered events do not reach the observer. */
    zerg_log_event(lg, 2, ZERG_LOG_DEBUG, "task_failed", NULL, NULL, "x");
    assert_int_equal(s.calls, 1);
    zerg_log_close(lg);
}

static void test_open_failure(void **state)
{
    char bad[PATH_MAX + 32];
    snprintf(bad, sizeof bad, "%s/file", dir);
    tu_write(dir, "file", "not a directory");
    struct zerg_err err = {0};
    assert_null(zerg_log_open(bad, NULL, &err));
    assert_true(tu_contains(err.msg, "cannot create"));
    assert_true(tu_contains(err.msg, "Not a directory"));
    zerg_log_close(NULL);
    zerg_log_event(NULL, 0, ZERG_LOG_INFO, "x", NULL, zerg_json_obj(), "y");
}

#define WRITERS 4
#define LINES_EACH 500

/* Each writer opens its own descriptors, like separate zerg processes. */
static void writer(int id)
{
    alarm(CHILD_TIMEOUT_S);
    struct zerg_log *lg = open_log();
    char pad[400];
    memset(pad, 'a' + id, sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    for (int i = 0; i < LINES_EACH; i++) {
        zerg_json *data = zerg_json_obj();
        zerg_json_set_num(data, "seq", i);
        zerg_json_set_str(data, "pad", pad);
        zerg_log_event(lg, id, ZERG_LOG_INFO, "task_started", "T", data,
                       "w%d seq %d %s", id, i, pad);
    }
    zerg_log_close(lg);
    _exit(0);
}

/* Checks every line of both files is whole and every (writer, seq) pair
 * appears exactly once. */
static void check_concurrent_files(void)
{
    static char seen[WRITERS][LINES_EACH];
    memset(seen, 0, sizeof seen);
    char *text = tu_read(log_path);
    char **lines = malloc(sizeof *lines * WRITERS * LINES_EACH);
    assert_int_equal(split_lines(text, lines, WRITERS * LINES_EACH),
                     WRITERS * LINES_EACH);
    for (int i = 0; i < WRITERS * LINES_EACH; i++) {
        int w, seq;
        assert_true(matches(lines[i]));
        char *m = strstr(lines[i], "] w");
        assert_non_null(m);
        assert_int_equal(sscanf(m, "] w%d seq %d", &w, &seq), 2);
        assert_true(strlen(m) == strlen("] w0 seq  ") + 399 +
                                     (seq >= 100  ? 3
                                      : seq >= 10 ? 2
                                                  : 1));
        seen[w][seq]++;
    }
    for (int w = 0; w < WRITERS; w++)
        for (int s = 0; s < LINES_EACH; s++)
            assert_int_equal(seen[w][s], 1);
    free(text);

    text = tu_read(jsonl_path);
    assert_int_equal(split_lines(text, lines, WRITERS * LINES_EACH),
                     WRITERS * LINES_EACH);
    for (int i = 0; i < WRITERS * LINES_EACH; i++) {
        zerg_json *v = parse_line(lines[i]);
        assert_int_equal(zerg_json_len(v), 7);
        const zerg_json *d = zerg_json_get(v, "data");
        int w = (int)zerg_json_as_num(zerg_json_get(v, "worker"), -1);
        int s = (int)zerg_json_as_num(zerg_json_get(d, "seq"), -1);
        assert_in_range(w, 0, WRITERS - 1);
        assert_in_range(s, 0, LINES_EACH - 1);
        assert_int_equal(strlen(zerg_json_as_str(zerg_json_get(d, "pad"))),
                         399);
        seen[w][s]++;
        zerg_json_free(v);
    }
    for (int w = 0; w < WRITERS; w++)
        for (int s = 0; s < LINES_EACH; s++)
            assert_int_equal(seen[w][s], 2);
    free(lines);
    free(text);
}

static void test_concurrent_writers(void **state)
{
    pid_t pids[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0)
            writer(i);
    }
    for (int i = 0; i < WRITERS; i++) {
        int st;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    check_concurrent_files();
}

/* ---- rotation (logging.max_size_mb, logging.keep) ---------------------- */

static char *zerg_dir_path(void)
{
    static char zdir[PATH_MAX + 8];
    snprintf(zdir, sizeof zdir, "%s/.zerg", dir);
    return zdir;
}

static char *path_k(const char *base, int k)
{
    static char buf[4][PATH_MAX + 48];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s.%d", base, k);
    return p;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void assert_file(const char *path, const char *want)
{
    char *got = tu_read(path);
    if (!got)
        fail_msg("%s is missing", path);
    assert_string_equal(got, want);
    free(got);
}

/* At rush start: only a file at or past the size moves; older copies
 * shift up and the one past `keep` is dropped. */
static void test_rotate_files_at_start(void **state)
{
    struct zerg_err err = {0};
    struct zerg_log_rotation rot = {.max_bytes = 10, .keep = 2};
    tu_write(dir, ".zerg/monitor.log", "0123456789 current\n");
    tu_write(dir, ".zerg/monitor.log.1", "previous\n");
    tu_write(dir, ".zerg/monitor.log.2", "oldest\n");
    tu_write(dir, ".zerg/monitor.jsonl", "{}\n"); /* under the size */
    assert_int_equal(zerg_log_rotate_files(zerg_dir_path(), &rot, &err), 1);
    assert_null(tu_read(log_path));
    assert_file(path_k(log_path, 1), "0123456789 current\n");
    assert_file(path_k(log_path, 2), "previous\n");
    assert_null(tu_read(path_k(log_path, 3)));
    assert_file(jsonl_path, "{}\n");
    assert_null(tu_read(path_k(jsonl_path, 1)));

    /* The new file starts empty; max_bytes 0 never rotates. */
    struct zerg_log *lg = open_log();
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "new");
    zerg_log_close(lg);
    assert_int_equal(count_lines(log_path), 1);
    rot.max_bytes = 0;
    assert_int_equal(zerg_log_rotate_files(zerg_dir_path(), &rot, &err), 0);
    assert_int_equal(count_lines(log_path), 1);
}

/* While running: the line that crosses the size is the last one of the
 * old file, the next one starts monitor.log again. */
static void test_rotate_while_running(void **state)
{
    struct zerg_log *lg = open_log();
    /* Each text line is 37 + 3 + 1 = 41 bytes ("... [W0] [INFO] abc"). */
    struct zerg_log_rotation rot = {.max_bytes = 100, .keep = 3};
    zerg_log_set_rotation(lg, &rot);
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "one");
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "two");
    assert_null(tu_read(path_k(log_path, 1)));
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "thr");
    assert_int_equal(count_lines(path_k(log_path, 1)), 3);
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "fou");
    zerg_log_close(lg);
    char *text = tu_read(log_path);
    assert_true(tu_contains(text, "[W0] [INFO] fou\n"));
    assert_int_equal(count_lines(log_path), 1);
    free(text);
    /* Every JSON line is over 100 bytes, so each one rotated its file:
     * .1 is the newest, .3 the oldest kept, the first line is gone. */
    assert_int_equal(count_lines(jsonl_path), 0);
    text = tu_read(path_k(jsonl_path, 1));
    assert_true(tu_contains(text, "\"msg\":\"fou\""));
    free(text);
    text = tu_read(path_k(jsonl_path, 3));
    assert_true(tu_contains(text, "\"msg\":\"two\""));
    free(text);
    assert_null(tu_read(path_k(jsonl_path, 4)));
}

/* A handle that does not rotate (a worker) writes its next line to the
 * new file, not to the renamed one. */
static void test_other_writer_follows_rotation(void **state)
{
    struct zerg_log *orch = open_log(), *worker = open_log();
    zerg_log_event(worker, 1, ZERG_LOG_INFO, "task_started", NULL, NULL,
                   "before");
    struct zerg_log_rotation rot = {.max_bytes = 1, .keep = 1};
    zerg_log_set_rotation(orch, &rot);
    zerg_log_event(orch, ZERG_LOG_ORCH, ZERG_LOG_INFO, "level_start", NULL,
                   NULL, "rotates");
    assert_int_equal(count_lines(path_k(log_path, 1)), 2);
    zerg_log_event(worker, 1, ZERG_LOG_INFO, "task_complete", NULL, NULL,
                   "after");
    zerg_log_close(worker);
    zerg_log_close(orch);
    assert_int_equal(count_lines(path_k(log_path, 1)), 2);
    char *text = tu_read(log_path);
    assert_true(tu_contains(text, "[W1] [INFO] after\n"));
    free(text);
    assert_int_equal(count_lines(jsonl_path), 1);
}

static int refusals;
static int refuse(void *ud)
{
    (void)ud;
    refusals++;
    return 0;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* may_rotate refusing keeps the file, and is asked again only after the
 * file grew by another 1/16 of the size, not at every line.  Measured on
 * monitor.jsonl, whose lines are the longer ones (it crosses first). */
static void test_refused_rotation(void **state)
{
    struct zerg_log *lg = open_log();
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "abc");
    long j = file_size(jsonl_path); /* one JSON line */
    assert_true(j > 2 * 41);
    struct zerg_log_rotation rot = {
        .max_bytes = 32 * j, .keep = 3, .may_rotate = refuse};
    zerg_log_set_rotation(lg, &rot);
    refusals = 0;
    for (int i = 1; i < 32; i++)
        zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "abc");
    assert_int_equal(refusals, 1); /* line 32 reached the size */
    for (int i = 32; i < 34; i++)
        zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "abc");
    assert_int_equal(refusals, 1); /* 34 lines < 32 + 2 + 1 byte */
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "abc");
    assert_int_equal(refusals, 2);
    zerg_log_close(lg);
    assert_int_equal(count_lines(jsonl_path), 35);
    assert_null(tu_read(path_k(jsonl_path, 1)));
}

/* A link planted where monitor.log.1 goes is moved, never written
 * through; a link planted as monitor.log is never followed on reopen. */
static void test_rotation_never_writes_through_links(void **state)
{
    char target[PATH_MAX + 16];
    snprintf(target, sizeof target, "%s/outside", dir);
    put(target, "keep\n");
    tu_write(dir, ".zerg/monitor.log", "0123456789\n");
    assert_int_equal(symlink(target, path_k(log_path, 1)), 0);
    struct zerg_err err = {0};
    struct zerg_log_rotation rot = {.max_bytes = 5, .keep = 2};
    assert_int_equal(zerg_log_rotate_files(zerg_dir_path(), &rot, &err), 1);
    assert_file(target, "keep\n");
    assert_file(path_k(log_path, 1), "0123456789\n");

    struct zerg_log *lg = open_log();
    unlink(log_path);
    assert_int_equal(symlink(target, log_path), 0);
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "x");
    zerg_log_close(lg);
    assert_file(target, "keep\n");
}

/* The rotating handle counts its bytes instead of looking at the name
 * before each line: a file replaced from outside zerg (logrotate's
 * create, say) takes its lines until a second has passed, then the name
 * is followed. */
static void test_rotating_handle_looks_each_second(void **state)
{
    struct zerg_log *lg = open_log();
    struct zerg_log_rotation rot = {.max_bytes = 1 << 20, .keep = 2};
    zerg_log_set_rotation(lg, &rot);
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "one");
    char moved[PATH_MAX + 48];
    snprintf(moved, sizeof moved, "%s.moved", log_path);
    assert_int_equal(rename(log_path, moved), 0);
    put(log_path, "");
    fake.wall_ns += ZERG_NS_PER_S / 2;
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "two");
    assert_int_equal(count_lines(moved), 2);
    fake.wall_ns += ZERG_NS_PER_S / 2;
    zerg_log_event(lg, 0, ZERG_LOG_INFO, "task_claimed", NULL, NULL, "thr");
    zerg_log_close(lg);
    assert_int_equal(count_lines(moved), 2);
    char *text = tu_read(log_path);
    assert_true(tu_contains(text, "[W0] [INFO] thr\n"));
    assert_int_equal(count_lines(log_path), 1);
    free(text);
}

/* Other writers' lines are not in the rotating handle's count until it
 * looks: it does after another 1/16 of the size of its own, so the file
 * rotates at most that much past the size. */
static void test_rotation_sees_other_writers(void **state)
{
    struct zerg_log *orch = open_log(), *worker = open_log();
    const int line = 41, max_lines = 32;
    struct zerg_log_rotation rot = {.max_bytes = max_lines * line, .keep = 1};
    zerg_log_set_rotation(orch, &rot);
    zerg_log_event(orch, ZERG_LOG_ORCH, ZERG_LOG_INFO, "x", NULL, NULL, "o");
    assert_int_equal(file_size(log_path), line); /* "[ORCH] [INFO] o" */
    for (int i = 0; i < max_lines - 2; i++)
        zerg_log_event(worker, 1, ZERG_LOG_INFO, "x", NULL, NULL, "wkr");
    int n = 0;
    while (access(path_k(log_path, 1), F_OK) != 0 && n < max_lines) {
        zerg_log_event(orch, 0, ZERG_LOG_INFO, "x", NULL, NULL, "abc");
        n++;
    }
    /* The first of these lines crosses the size; 1/16 of it is 2 lines,
     * after which the handle has looked. */
    assert_in_range(n, 1, 3);
    int rotated = count_lines(path_k(log_path, 1));
    assert_int_equal(rotated, 1 + max_lines - 2 + n);
    assert_true(file_size(path_k(log_path, 1)) <=
                rot.max_bytes + rot.max_bytes / 16 + 2 * line);
    /* The worker follows the rotation at its next line, as before. */
    zerg_log_event(worker, 1, ZERG_LOG_INFO, "x", NULL, NULL, "new");
    zerg_log_close(worker);
    zerg_log_close(orch);
    assert_int_equal(count_lines(path_k(log_path, 1)), rotated);
    assert_int_equal(count_lines(log_path), 1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_exact_text_lines),
        T(test_jsonl_record),
        T(test_feature_in_events),
        T(test_unencodable_data_keeps_event),
        T(test_level_filter),
        T(test_zerg_debug_env),
        T(test_level_names),
        T(test_observer),
        T(test_open_failure),
        T(test_concurrent_writers),
        T(test_rotate_files_at_start),
        T(test_rotate_while_running),
        T(test_other_writer_follows_rotation),
        T(test_refused_rotation),
        T(test_rotation_never_writes_through_links),
        T(test_rotating_handle_looks_each_second),
        T(test_rotation_sees_other_writers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
