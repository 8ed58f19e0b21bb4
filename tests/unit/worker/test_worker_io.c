/* test_worker_io.c - what the worker does around its tasks' I/O
 * (src/worker/worker_log.c, the SIGPIPE handling of worker.c and
 * worker_run.c, the event lines of worker_wait.c, the result record).
 *
 * Each test runs zerg_worker_run on a temp project with the assignment
 * written beforehand (stop: true makes it return after the task).  Where
 * two tasks are needed, the first one moves the second's assignment into
 * place itself, so nothing waits on timing.  The event-line tests fork
 * before any worker ran in this process: the worker decides once per
 * process whether its stdout carries event lines. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/protocol.h"
#include "zerg/worker.h"

#define EPOCH 7

struct fx {
    char project[PATH_MAX / 4];
    char state[PATH_MAX / 2];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->project, sizeof f->project, "%s", tu_mkdtemp());
    snprintf(f->state, sizeof f->state, "%s/.zerg/state/feat", f->project);
    tu_write(f->state, ".keep", "");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    tu_rmtree(f->project);
    free(f);
    return 0;
}

/* Tasks T1 (command c1) and T2 (command c2, when not NULL); the commands
 * go into JSON as they are (no quotes or backslashes in them). */
static void write_graph(const struct fx *f, const char *c1, const char *c2)
{
    char doc[4096];
    snprintf(doc, sizeof doc,
             "{\"feature\":\"feat\",\"tasks\":["
             "{\"id\":\"T1\",\"level\":1,\"command\":\"%s\"}%s%s%s]}",
             c1, c2 ? ",{\"id\":\"T2\",\"level\":1,\"command\":\"" : "",
             c2 ? c2 : "", c2 ? "\"}" : "");
    tu_write(f->project, ".gsd/specs/feat/task-graph.json", doc);
}

static struct zerg_worker_opts fx_opts(const struct fx *f)
{
    return (struct zerg_worker_opts){
        .project = f->project,
        .feature = "feat",
        .slot = 0,
        .epoch = EPOCH,
        .run_id = "run-1",
        .orch_pid = getpid(),
        .heartbeat_interval_ns = 50 * ZERG_NS_PER_MS,
        .poll_ns = 50 * ZERG_NS_PER_MS,
    };
}

/* The assignment of task attempt 1 in dir's slot 0. */
static void assign_in(const char *dir, const char *task, int stop)
{
    struct zerg_err err = {0};
    struct zerg_assign a = {.epoch = EPOCH, .attempt = 1, .stop = stop};
    snprintf(a.task, sizeof a.task, "%s", task);
    if (zerg_proto_write_assign(dir, 0, &a, &err) < 0)
        fail_msg("%s", err.msg);
}

static char *project_file(const struct fx *f, const char *rel)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", f->project, rel);
    return tu_read(path);
}

static int result_outcome(const struct fx *f, const char *task)
{
    char path[PATH_MAX];
    struct zerg_result r;
    zerg_proto_result_path(path, sizeof path, f->state, task, 1);
    assert_int_equal(zerg_proto_read_result(path, &r), 0);
    return r.outcome;
}

/* Runs T1 in this process; with two, T1 ends by moving T2's assignment
 * (prepared in the project's next/) into place, and T2 is run too. */
static void run_in_process(const struct fx *f, int two)
{
    struct zerg_err err = {0};
    struct zerg_worker_opts o = fx_opts(f);
    char next[PATH_MAX];
    if (two) {
        snprintf(next, sizeof next, "%s/next", f->project);
        assign_in(next, "T2", 1);
    }
    assign_in(f->state, "T1", !two);
    assert_int_equal(zerg_worker_run(&o, &err), ZERG_WORKER_EXIT_OK);
    assert_int_equal(result_outcome(f, "T1"), ZERG_OUTCOME_COMPLETE);
    if (two)
        assert_int_equal(result_outcome(f, "T2"), ZERG_OUTCOME_COMPLETE);
}

/* ---- SIGPIPE -------------------------------------------------------- */

/* `yes` writing into a closed pipe: killed by SIGPIPE (141) where it has
 * its default, "Broken pipe" and 1 where it is ignored. */
#define YES_CMD "{ yes; echo yes-rc=$? >&2; } | head -n 1 >/dev/null"

/* 1 when SIGPIPE's disposition in this process is h. */
static int pipe_handler_is(void (*h)(int))
{
    struct sigaction sa;
    assert_int_equal(sigaction(SIGPIPE, NULL, &sa), 0);
    return sa.sa_handler == h;
}

/* The worker ignores SIGPIPE for itself; its tasks get the default back,
 * even where the worker was started with it ignored, and the caller gets
 * back the disposition it had. */
static void test_task_gets_default_sigpipe(void **state)
{
    struct fx *f = *state;
    void (*was[])(int) = {SIG_IGN, SIG_DFL};
    for (size_t i = 0; i < sizeof was / sizeof *was; i++) {
        write_graph(f, YES_CMD, NULL);
        signal(SIGPIPE, was[i]);
        run_in_process(f, 0);
        assert_true(pipe_handler_is(was[i]));
        char *log = project_file(f, ".zerg/logs/feat/tasks/T1/attempt-1.log");
        assert_non_null(log);
        assert_true(tu_contains(log, "yes-rc=141\n"));
        free(log);
        tu_rmtree(f->project);
        tu_write(f->state, ".keep", "");
    }
    signal(SIGPIPE, SIG_DFL);
}

/* Runs T1 (command cmd, stop: true) on a forked worker with event lines
 * on, its stdout on fd and SIGPIPE at its default; checks it exits 0 with
 * T1 complete. */
static void run_with_events(const struct fx *f, const char *cmd, int fd)
{
    write_graph(f, cmd, NULL);
    assign_in(f->state, "T1", 1);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct zerg_err err = {0};
        struct zerg_worker_opts o = fx_opts(f);
        signal(SIGPIPE, SIG_DFL);
        if (dup2(fd, 1) < 0)
            _exit(98);
        setenv("ZERG_STDIO_EVENTS", "1", 1);
        o.orch_pid = getppid();
        _exit(zerg_worker_run(&o, &err));
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st))
        fail_msg("the worker was killed by signal %d", WTERMSIG(st));
    assert_int_equal(WEXITSTATUS(st), ZERG_WORKER_EXIT_OK);
    assert_int_equal(result_outcome(f, "T1"), ZERG_OUTCOME_COMPLETE);
}

/* With event lines on (ZERG_STDIO_EVENTS=1) and nobody reading its stdout
 * any more, the worker still runs its task, writes the result file and
 * exits 0: the broken pipe turns the lines off, it does not kill it. */
static void test_event_reader_gone(void **state)
{
    struct fx *f = *state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    close(p[0]);
    run_with_events(f, "true", p[1]);
    close(p[1]);
}

/* ---- the beat that names a stage's group ------------------------------ */

/* The task records its group (its shell leads it) and the heartbeat file
 * as it finds it when it runs. */
#define SNAPSHOT_CMD                                                           \
    "echo $$ > pgid.txt; cat .zerg/state/feat/heartbeat-0.json > hb.txt"

/* "task_pgid":N for the group T1 ran in. */
static void group_field(const struct fx *f, char *out, size_t size)
{
    char *pg = project_file(f, "pgid.txt");
    assert_non_null(pg);
    assert_true(atoi(pg) > 1);
    snprintf(out, size, "\"task_pgid\":%d", atoi(pg));
    free(pg);
}

/* With the lines read, the one naming the stage's group is in the pipe
 * before the task's result line (it was written before the exec). */
static void test_group_line_before_the_task(void **state)
{
    struct fx *f = *state;
    int p[2];
    char lines[65536], want[64];
    assert_int_equal(pipe(p), 0);
    run_with_events(f, SNAPSHOT_CMD, p[1]);
    close(p[1]);
    size_t n = 0;
    ssize_t got;
    while (n < sizeof lines - 1 &&
           (got = read(p[0], lines + n, sizeof lines - 1 - n)) > 0)
        n += (size_t)got;
    close(p[0]);
    lines[n] = '\0';
    group_field(f, want, sizeof want);
    char *group = strstr(lines, want);
    char *result = strstr(lines, "\"kind\":\"result\"");
    if (!group || !result || group > result)
        fail_msg("no %s line before the result in:\n%s", want, lines);
}

/* With the pipe full, no line can go: the stage's group is in the
 * heartbeat file before the task runs (the task finds it there). */
static void test_group_in_file_when_no_line_goes(void **state)
{
    struct fx *f = *state;
    int p[2];
    char junk[4096], want[64];
    assert_int_equal(pipe2(p, O_NONBLOCK), 0);
    memset(junk, 'x', sizeof junk);
    while (write(p[1], junk, sizeof junk) > 0)
        ;
    while (write(p[1], junk, 1) > 0)
        ;
    run_with_events(f, SNAPSHOT_CMD, p[1]);
    close(p[0]);
    close(p[1]);
    group_field(f, want, sizeof want);
    char *hb = project_file(f, "hb.txt");
    if (!hb || !tu_contains(hb, want))
        fail_msg("the task found no %s in its heartbeat file: %s", want,
                 hb ? hb : "(none)");
    free(hb);
}

/* ---- the log directory ---------------------------------------------- */

#define NEXT "mv next/slot-0/assign.json .zerg/state/feat/slot-0/assign.json"

/* What T1 does to .zerg/logs/feat/tasks before T2 runs on the same
 * worker, which opened that directory once: T2's log must still land in
 * a real .zerg/logs/feat/tasks/T2/, and nothing in `aside`. */
static const struct {
    const char *what, *t1, *aside;
} log_dir_cases[] = {
    {"the tasks directory moved away",
     "mv .zerg/logs/feat/tasks moved && " NEXT, "moved/T2"},
    {"the tasks directory removed", "rm -rf .zerg/logs/feat/tasks && " NEXT,
     NULL},
    {"the tasks directory replaced by a link",
     "mkdir outside && rm -rf .zerg/logs/feat/tasks && "
     "ln -s ../../../outside .zerg/logs/feat/tasks && " NEXT,
     "outside/T2"},
    {"a link planted as T2's directory",
     "mkdir outside && ln -s ../../../../outside .zerg/logs/feat/tasks/T2 "
     "&& " NEXT,
     "outside/T2"},
};

static void test_log_dir_changed(void **state)
{
    struct fx *f = *state;
    size_t n = sizeof log_dir_cases / sizeof *log_dir_cases;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        struct stat st;
        write_graph(f, log_dir_cases[i].t1, "echo t2-ran");
        run_in_process(f, 1);
        snprintf(path, sizeof path, "%s/.zerg/logs/feat/tasks/T2", f->project);
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            fail_msg("%s: %s is no directory", log_dir_cases[i].what, path);
        char *log = project_file(f, ".zerg/logs/feat/tasks/T2/attempt-1.log");
        if (!log || !tu_contains(log, "\nt2-ran\n"))
            fail_msg("%s: T2's log is %s", log_dir_cases[i].what,
                     log ? log : "missing");
        free(log);
        if (log_dir_cases[i].aside) {
            snprintf(path, sizeof path, "%s/%s", f->project,
                     log_dir_cases[i].aside);
            if (lstat(path, &st) == 0)
                fail_msg("%s: %s exists", log_dir_cases[i].what, path);
        }
        tu_rmtree(f->project);
        tu_write(f->state, ".keep", "");
    }
}

/* The usual case: two attempts of one worker log into their own files,
 * each with its header, command and trailer. */
static void test_logs_of_two_tasks(void **state)
{
    struct fx *f = *state;
    write_graph(f, "echo t1-ran && " NEXT, "echo t2-ran");
    run_in_process(f, 1);
    const char *want[][2] = {{"T1", "t1-ran"}, {"T2", "t2-ran"}};
    for (size_t i = 0; i < 2; i++) {
        char rel[128], line[64];
        snprintf(rel, sizeof rel, ".zerg/logs/feat/tasks/%s/attempt-1.log",
                 want[i][0]);
        char *log = project_file(f, rel);
        assert_non_null(log);
        snprintf(line, sizeof line, "==== zerg: command of task %s,",
                 want[i][0]);
        assert_true(strncmp(log, line, strlen(line)) == 0);
        snprintf(line, sizeof line, "\n%s\n==== zerg: command exited",
                 want[i][1]);
        assert_true(tu_contains(log, line));
        free(log);
    }
}

/* ---- the result record ----------------------------------------------- */

static int stat_rel(const struct fx *f, const char *rel, struct stat *st)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", f->project, rel);
    return lstat(path, st);
}

#define RECORD ".zerg/logs/feat/tasks/T1/attempt-1.result.json"
#define STATE_RESULT ".zerg/state/feat/result-T1-1.json"

/* The result is one file under two names: the attempt's record in its
 * log directory and the state directory's result (until the orchestrator
 * deletes that name).  A link the task planted at the record's name is
 * replaced, not followed. */
static void test_result_record_is_the_result(void **state)
{
    struct fx *f = *state;
    const char *cmds[] = {
        "true",
        "ln -s ../../../../../planted " RECORD,
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        struct stat rec, res;
        write_graph(f, cmds[i], NULL);
        run_in_process(f, 0);
        assert_int_equal(stat_rel(f, RECORD, &rec), 0);
        assert_int_equal(stat_rel(f, STATE_RESULT, &res), 0);
        assert_true(S_ISREG(rec.st_mode));
        assert_true(rec.st_ino == res.st_ino && rec.st_dev == res.st_dev);
        assert_int_equal(rec.st_nlink, 2);
        assert_int_not_equal(stat_rel(f, "planted", &rec), 0);
        tu_rmtree(f->project);
        tu_write(f->state, ".keep", "");
    }
}

/* Where the record cannot be made (the task turned its log directory
 * into a link), the result is a plain file of the state directory, and
 * nothing lands where the link points. */
static void test_result_without_a_record(void **state)
{
    struct fx *f = *state;
    struct stat st;
    write_graph(f,
                "mkdir outside && rm -rf .zerg/logs/feat/tasks/T1 && "
                "ln -s ../../../../outside .zerg/logs/feat/tasks/T1",
                NULL);
    run_in_process(f, 0);
    assert_int_equal(stat_rel(f, STATE_RESULT, &st), 0);
    assert_int_equal(st.st_nlink, 1);
    assert_int_not_equal(stat_rel(f, "outside/attempt-1.result.json", &st), 0);
}

#define FX(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* First: a worker decides on its event lines once per process,
         * and the fork inherits that decision. */
        FX(test_event_reader_gone),
        FX(test_group_line_before_the_task),
        FX(test_group_in_file_when_no_line_goes),
        FX(test_task_gets_default_sigpipe),
        FX(test_log_dir_changed),
        FX(test_logs_of_two_tasks),
        FX(test_result_record_is_the_result),
        FX(test_result_without_a_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
