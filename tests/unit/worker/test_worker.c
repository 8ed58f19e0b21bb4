/* test_worker.c - the worker (src/worker/).
 *
 * The pure helpers (assignment decision, prompt, executor argv, stage
 * environment, progress format) are tested by passing values.  The rest
 * runs the real thing: zerg_worker_run in a temp project, either in this
 * process (an assignment with stop: true written beforehand makes it run
 * one task and return) or in a forked child that the test talks to through
 * the state directory like an orchestrator would.  Nothing sleeps: the
 * test waits on inotify and pidfds, each wait capped at 10 s. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/lock.h"
#include "zerg/protocol.h"
#include "zerg/worker.h"

#define WAIT_MS 10000
#define EPOCH 7

/* ---- pure helpers --------------------------------------------------- */

static void test_decide(void **state)
{
    struct zerg_assign a = {.epoch = EPOCH, .attempt = 1};
    strcpy(a.task, "T1");
    assert_int_equal(zerg_worker_decide(&a, EPOCH, "", 0), ZERG_ASSIGN_RUN);
    assert_int_equal(zerg_worker_decide(&a, EPOCH + 1, "", 0),
                     ZERG_ASSIGN_IGNORE);
    assert_int_equal(zerg_worker_decide(&a, EPOCH, "T1", 1),
                     ZERG_ASSIGN_IGNORE);
    assert_int_equal(zerg_worker_decide(&a, EPOCH, "T1", 0), ZERG_ASSIGN_RUN);
    assert_int_equal(zerg_worker_decide(&a, EPOCH, "T0", 1), ZERG_ASSIGN_RUN);
    /* stop with a task not yet run: run first, stop on the next look */
    a.stop = 1;
    assert_int_equal(zerg_worker_decide(&a, EPOCH, "", 0), ZERG_ASSIGN_RUN);
    assert_int_equal(zerg_worker_decide(&a, EPOCH, "T1", 1), ZERG_ASSIGN_STOP);
    /* a stop for another incarnation is not ours */
    assert_int_equal(zerg_worker_decide(&a, EPOCH - 1, "T1", 1),
                     ZERG_ASSIGN_IGNORE);
    struct zerg_assign idle = {.epoch = EPOCH};
    assert_int_equal(zerg_worker_decide(&idle, EPOCH, "", 0),
                     ZERG_ASSIGN_IGNORE);
    idle.stop = 1;
    assert_int_equal(zerg_worker_decide(&idle, EPOCH, "", 0), ZERG_ASSIGN_STOP);
}

static struct zerg_graph *parse_graph(const char *tasks)
{
    char *doc = NULL;
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    assert_true(asprintf(&doc, "{\"feature\":\"feat\",\"tasks\":[%s]}", tasks) >
                0);
    if (zerg_graph_parse(&g, "graph", doc, strlen(doc), &err) < 0)
        fail_msg("graph: %s", err.msg);
    free(doc);
    return g;
}

static void test_prompt(void **state)
{
    struct zerg_graph *g = parse_graph(
        "{\"id\":\"F-L1-001\",\"title\":\"Add the "
        "parser\",\"level\":1,\"description\":\"Parse the config "
        "file.\",\"context\":\"Uses "
        "libyaml.\",\"files\":{\"create\":[\"src/p.c\"],\"modify\":[\"src/"
        "m.c\"],\"read\":[\"docs/"
        "spec.md\"]},\"acceptance_criteria\":[\"parses a.yaml\",\"rejects "
        "tabs\"],\"verification\":{\"command\":\"make test-p\"}}");
    char *p = zerg_worker_prompt(&g->tasks[0], "feat", NULL);
    assert_non_null(p);
    assert_true(tu_contains(p, "task F-L1-001 of the feature \"feat\""));
    assert_true(tu_contains(p, "\nUses libyaml.\n\n# Task: Add the parser\n"));
    assert_true(tu_contains(p, "Task F-L1-001: Add the parser"));
    assert_true(tu_contains(p, "## Description\nParse the config file."));
    assert_true(tu_contains(p, "## Files\nCreate:\n  - src/p.c\nModify:\n"
                               "  - src/m.c\nRead (do not change them):\n"
                               "  - docs/spec.md\n"));
    assert_true(tu_contains(p, "## Acceptance criteria\n- parses a.yaml\n"
                               "- rejects tabs\n"));
    assert_true(tu_contains(
        p, "must exit 0 when run from the project root:\n  make test-p"));
    assert_true(tu_contains(p, "## Instructions\n"));
    assert_null(strstr(p, "What went wrong"));
    free(p);

    /* A retry says what went wrong last time. */
    struct zerg_prompt_retry r = {.attempt = 2,
                                  .cls = "task",
                                  .error = "verification exited with code 1",
                                  .conflicts = "src/m.c docs/x.md",
                                  .output_tail = "FAIL: test_p expected 3"};
    p = zerg_worker_prompt(&g->tasks[0], "feat", &r);
    assert_true(tu_contains(p, "## What went wrong last time\nAttempt 2 "
                               "failed (task): verification exited with "
                               "code 1.\n"));
    assert_true(tu_contains(p, "merged meanwhile in: src/m.c docs/x.md"));
    assert_true(tu_contains(p, "The last lines of its output:\nFAIL: test_p "
                               "expected 3\n"));
    assert_null(strstr(p, "reviewer"));
    free(p);

    /* A redo at review: the note, and no "went wrong" for an attempt that
     * passed; a later failure after a redo says both. */
    struct zerg_prompt_retry rv = {.attempt = 1,
                                   .cls = "review",
                                   .error = "redo asked at review",
                                   .review_note = "name it parse_args",
                                   .final_msg = "Done: wrote src/p.c"};
    p = zerg_worker_prompt(&g->tasks[0], "feat", &rv);
    assert_true(tu_contains(p, "## What the reviewer asked\nA reviewer read "
                               "an earlier attempt's change and asked for it "
                               "to be done again:\nname it parse_args\n"));
    assert_null(strstr(p, "What went wrong"));
    free(p);
    rv.cls = "task";
    rv.error = "verification exited with code 1";
    p = zerg_worker_prompt(&g->tasks[0], "feat", &rv);
    assert_true(tu_contains(p, "name it parse_args"));
    assert_true(tu_contains(p, "## What went wrong last time\nAttempt 1 "));
    free(p);
    zerg_graph_free(g);

    /* absent parts leave no empty headings */
    g = parse_graph("{\"id\":\"T\",\"level\":1}");
    p = zerg_worker_prompt(&g->tasks[0], "feat", NULL);
    assert_true(tu_contains(p, "Task T: (untitled)"));
    assert_null(strstr(p, "Description"));
    assert_null(strstr(p, "## Files"));
    assert_null(strstr(p, "Acceptance"));
    assert_null(strstr(p, "Verification"));
    free(p);
    zerg_graph_free(g);
}

static void test_claude_argv(void **state)
{
    (void)state;
    struct zerg_config cfg;
    zerg_config_defaults(&cfg);
    assert_int_equal(cfg.executor_kind, ZERG_EXECUTOR_CLAUDE);
    const struct zerg_agent_adapter *claude =
        zerg_agent_adapter(ZERG_AGENT_CLAUDE);
    char **v = zerg_worker_agent_argv(&cfg, claude, cfg.executor_claude, NULL,
                                      "do it");
    const char *want[] = {"claude",
                          "--print",
                          "--output-format",
                          "stream-json",
                          "--verbose",
                          "--include-partial-messages",
                          "--dangerously-skip-permissions",
                          "do it",
                          NULL};
    for (size_t i = 0; want[i]; i++)
        assert_string_equal(v[i], want[i]);
    assert_null(v[8]);
    zerg_worker_argv_free(v);
    zerg_config_free(&cfg);

    /* executor.args go before the prompt; the old workers.executor list
     * alone means kind command. */
    struct zerg_err err = {0};
    const char *yaml = "executor:\n  claude: /opt/claude\n  args: [--model, "
                       "sonnet]\n";
    zerg_config_defaults(&cfg);
    assert_int_equal(zerg_config_load_string(&cfg, "t", yaml, strlen(yaml),
                                             NULL, NULL, &err),
                     0);
    v = zerg_worker_agent_argv(&cfg, claude, cfg.executor_claude, NULL, "p");
    assert_string_equal(v[0], "/opt/claude");
    assert_string_equal(v[7], "--model");
    assert_string_equal(v[8], "sonnet");
    assert_string_equal(v[9], "p");
    assert_null(v[10]);
    zerg_worker_argv_free(v);
    zerg_config_free(&cfg);
    yaml = "workers:\n  executor: [my-agent, --fast]\n";
    zerg_config_defaults(&cfg);
    assert_int_equal(zerg_config_load_string(&cfg, "t", yaml, strlen(yaml),
                                             NULL, NULL, &err),
                     0);
    assert_int_equal(cfg.executor_kind, ZERG_EXECUTOR_COMMAND);
    zerg_config_free(&cfg);
}

static void test_executor_argv(void **state)
{
    struct zerg_config cfg;
    zerg_config_defaults(&cfg);
    char **v = zerg_worker_executor_argv(&cfg.executor, "do it");
    assert_non_null(v);
    assert_string_equal(v[0], "claude");
    assert_string_equal(v[1], "--print");
    assert_string_equal(v[2], "--dangerously-skip-permissions");
    assert_string_equal(v[3], "do it");
    assert_null(v[4]);
    zerg_worker_argv_free(v);

    struct zerg_argv empty = {.v = (char *[]){NULL}, .n = 0};
    assert_null(zerg_worker_executor_argv(&empty, "x"));
    zerg_worker_argv_free(NULL);
    zerg_config_free(&cfg);
}

static const char *env_get(char **env, const char *name)
{
    const char *found = NULL;
    size_t n = strlen(name);
    for (; *env; env++) {
        if (strncmp(*env, name, n) == 0 && (*env)[n] == '=') {
            if (found)
                fail_msg("%s set twice", name);
            found = *env + n + 1;
        }
    }
    return found;
}

static void test_task_env(void **state)
{
    char *base[] = {"PATH=/bin",        "ZERG_TASK_ID=stale",         "HOME=/h",
                    "ZERG_ORCH_PID=12", "ZERG_REVIEW_NOTE=inherited", NULL};
    struct zerg_task_env e = {
        .task_id = "T1",
        .worker_id = 2,
        .feature = "feat",
        .attempt = 3,
        .epoch = 99,
        .run_id = "run-9",
        .progress_file = "/p/a.progress",
    };
    char **env = zerg_worker_task_env(base, &e);
    assert_non_null(env);
    assert_string_equal(env_get(env, "PATH"), "/bin");
    assert_string_equal(env_get(env, "HOME"), "/h");
    assert_string_equal(env_get(env, "ZERG_ORCH_PID"), "12");
    assert_string_equal(env_get(env, "ZERG_TASK_ID"), "T1");
    assert_string_equal(env_get(env, "ZERG_WORKER_ID"), "2");
    assert_string_equal(env_get(env, "ZERG_FEATURE"), "feat");
    assert_string_equal(env_get(env, "ZERG_ATTEMPT"), "3");
    assert_string_equal(env_get(env, "ZERG_EPOCH"), "99");
    assert_string_equal(env_get(env, "ZERG_RUN_ID"), "run-9");
    assert_string_equal(env_get(env, "ZERG_PROGRESS_FILE"), "/p/a.progress");
    /* Set for every task, empty without a note: never inherited. */
    assert_string_equal(env_get(env, "ZERG_REVIEW_NOTE"), "");
    zerg_worker_argv_free(env);
    e.review_note = "use tabs";
    env = zerg_worker_task_env(base, &e);
    assert_string_equal(env_get(env, "ZERG_REVIEW_NOTE"), "use tabs");
    zerg_worker_argv_free(env);
}

static void test_parse_progress(void **state)
{
    static const struct {
        const char *text;
        int want;
    } rows[] = {
        {"0", 0},     {"42", 42},  {"100", 100}, {" 7\n", 7}, {"55\r\n", 55},
        {"101", -1},  {"-1", -1},  {"", -1},     {"abc", -1}, {"4 2", -1},
        {"0100", -1}, {"12%", -1}, {"\n", -1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if (zerg_worker_parse_progress(rows[i].text) != rows[i].want)
            fail_msg("\"%s\": got %d want %d", rows[i].text,
                     zerg_worker_parse_progress(rows[i].text), rows[i].want);
    assert_int_equal(zerg_worker_parse_progress(NULL), -1);
}

/* ---- a temp project ------------------------------------------------- */

struct fx {
    char project[PATH_MAX / 4];
    char state[PATH_MAX / 2];
    pid_t pid;  /* forked worker, 0 when none */
    int err_fd; /* its error message pipe */
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->project, sizeof f->project, "%s", tu_mkdtemp());
    snprintf(f->state, sizeof f->state, "%s/.zerg/state/feat", f->project);
    tu_write(f->state, ".keep", "");
    f->err_fd = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->pid > 0) {
        kill(f->pid, SIGKILL);
        waitpid(f->pid, NULL, 0);
    }
    if (f->err_fd >= 0)
        close(f->err_fd);
    tu_rmtree(f->project);
    free(f);
    return 0;
}

/* One task T1 (plus more tasks when extra is not NULL). */
static void write_graph(const struct fx *f, const char *command,
                        const char *verify, const char *timeout,
                        const char *extra)
{
    char *doc = NULL;
    char cmd[1024] = "", ver[1024] = "";
    if (command)
        snprintf(cmd, sizeof cmd, ",\"command\":\"%s\"", command);
    if (verify)
        snprintf(
            ver, sizeof ver,
            ",\"verification\":{\"command\":\"%s\",\"timeout_seconds\":%s}",
            verify, timeout ? timeout : "5");
    assert_true(
        asprintf(&doc,
                 "{\"feature\":\"feat\",\"tasks\":[{\"id\":\"T1\",\"title\":"
                 "\"Write the prompt\",\"level\":1,\"description\":\"Echo it "
                 "back.\"%s%s}%s%s]}",
                 cmd, ver, extra ? "," : "", extra ? extra : "") > 0);
    tu_write(f->project, ".gsd/specs/feat/task-graph.json", doc);
    free(doc);
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

static void assign(const struct fx *f, uint64_t epoch, const char *task,
                   int attempt, int stop)
{
    struct zerg_err err = {0};
    struct zerg_assign a = {.epoch = epoch, .attempt = attempt, .stop = stop};
    snprintf(a.task, sizeof a.task, "%s", task ? task : "");
    if (zerg_proto_write_assign(f->state, 0, &a, &err) < 0)
        fail_msg("%s", err.msg);
}

static char *project_file(const struct fx *f, const char *rel)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", f->project, rel);
    return tu_read(path);
}

static int read_result(const struct fx *f, const char *task, int attempt,
                       struct zerg_result *r)
{
    char path[PATH_MAX];
    zerg_proto_result_path(path, sizeof path, f->state, task, attempt);
    return zerg_proto_read_result(path, r);
}

static int read_heartbeat(const struct fx *f, struct zerg_heartbeat *hb)
{
    char path[PATH_MAX];
    zerg_proto_heartbeat_path(path, sizeof path, f->state, 0);
    return zerg_proto_read_heartbeat(path, hb);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until cond(f, arg) holds, re-checking on every change inotify
 * reports in dir; fails the test after WAIT_MS. */
typedef int (*cond_fn)(const struct fx *f, const void *arg);
static void wait_until(const struct fx *f, const char *dir, cond_fn cond,
                       const void *arg, const char *what)
{
    int ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    assert_true(ino >= 0);
    assert_true(inotify_add_watch(
                    ino, dir, IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) >= 0);
    int64_t end = mono_ms() + WAIT_MS;
    char buf[4096];
    while (!cond(f, arg)) {
        int64_t left = end - mono_ms();
        if (left <= 0) {
            close(ino);
            fail_msg("timed out after %d ms waiting for %s", WAIT_MS, what);
        }
        struct pollfd p = {.fd = ino, .events = POLLIN};
        if (poll(&p, 1, (int)left) > 0)
            while (read(ino, buf, sizeof buf) > 0)
                ;
    }
    close(ino);
}

static int has_result(const struct fx *f, const void *arg)
{
    struct zerg_result r;
    const struct zerg_assign *a = arg;
    return read_result(f, a->task, a->attempt, &r) == 0;
}

static void wait_result(const struct fx *f, const char *task, int attempt,
                        struct zerg_result *r)
{
    struct zerg_assign key = {.attempt = attempt};
    snprintf(key.task, sizeof key.task, "%s", task);
    wait_until(f, f->state, has_result, &key, "a result");
    assert_int_equal(read_result(f, task, attempt, r), 0);
}

static int hb_seq_at_least(const struct fx *f, const void *arg)
{
    struct zerg_heartbeat hb;
    return read_heartbeat(f, &hb) == 0 && hb.seq >= *(const int64_t *)arg;
}

static void wait_seq(const struct fx *f, int64_t seq)
{
    wait_until(f, f->state, hb_seq_at_least, &seq, "a heartbeat");
}

static int file_nonempty(const struct fx *f, const void *arg)
{
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", f->project, (const char *)arg);
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* Forks a worker with opts o. */
static void start_worker(struct fx *f, const struct zerg_worker_opts *o)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct zerg_err err = {0};
        close(p[0]);
        int rc = zerg_worker_run(o, &err);
        if (write(p[1], err.msg, strlen(err.msg)) < 0)
            rc = 99;
        _exit(rc);
    }
    close(p[1]);
    f->pid = pid;
    f->err_fd = p[0];
}

/* Waits for the forked worker to exit; returns its exit code and copies
 * its error message into msg. */
static int wait_worker(struct fx *f, char *msg, size_t size)
{
    int pidfd = (int)syscall(SYS_pidfd_open, f->pid, 0);
    assert_true(pidfd >= 0);
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    int n = poll(&p, 1, WAIT_MS);
    close(pidfd);
    if (n != 1)
        fail_msg("worker did not exit within %d ms", WAIT_MS);
    int st;
    assert_int_equal(waitpid(f->pid, &st, 0), f->pid);
    f->pid = 0;
    ssize_t got = read(f->err_fd, msg, size - 1);
    msg[got > 0 ? got : 0] = '\0';
    close(f->err_fd);
    f->err_fd = -1;
    if (!WIFEXITED(st))
        fail_msg("worker killed by signal %d", WTERMSIG(st));
    return WEXITSTATUS(st);
}

/* Live (not zombie) processes whose process group is pgid. */
static int live_in_group(pid_t pgid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d))) {
        char path[300], buf[512], st;
        int ppid, pgrp;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *fp = fopen(path, "r");
        if (!fp)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, fp);
        fclose(fp);
        buf[len] = '\0';
        char *rp = strrchr(buf, ')');
        if (rp && sscanf(rp + 1, " %c %d %d", &st, &ppid, &pgrp) == 3 &&
            pgrp == pgid && st != 'Z' && st != 'X')
            n++;
    }
    closedir(d);
    return n;
}

/* Starts a worker, waits for ready, assigns T1 attempt 1, waits for the
 * result, stops the worker and checks it said "exiting". */
static void run_one(struct fx *f, struct zerg_result *r)
{
    struct zerg_worker_opts o = fx_opts(f);
    struct zerg_heartbeat hb;
    char msg[512];
    start_worker(f, &o);
    wait_seq(f, 1);
    assert_int_equal(read_heartbeat(f, &hb), 0);
    assert_true(hb.epoch == EPOCH);
    assign(f, EPOCH, "T1", 1, 0);
    wait_result(f, "T1", 1, r);
    assign(f, EPOCH, NULL, 0, 1);
    assert_int_equal(wait_worker(f, msg, sizeof msg), 0);
    assert_int_equal(read_heartbeat(f, &hb), 0);
    assert_string_equal(hb.step, "exiting");
    assert_int_equal(hb.task_pgid, 0);
}

/* ---- real processes ------------------------------------------------- */

/* T1's place in the graph file, as the orchestrator puts it in the
 * assignment. */
static struct zerg_assign placed(const struct fx *f, const char *task)
{
    char path[PATH_MAX];
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    snprintf(path, sizeof path, "%s/.gsd/specs/feat/task-graph.json",
             f->project);
    if (zerg_graph_load(&g, path, &err) < 0)
        fail_msg("%s", err.msg);
    ssize_t i = zerg_graph_find(g, task);
    assert_true(i >= 0);
    struct zerg_assign a = {.epoch = EPOCH,
                            .attempt = 1,
                            .task_off = g->tasks[i].src_off,
                            .task_len = g->tasks[i].src_len,
                            .task_hash = g->tasks[i].src_hash};
    snprintf(a.task, sizeof a.task, "%s", task);
    zerg_graph_free(g);
    return a;
}

/* The worker reads the one task its assignment places, not the whole
 * graph: once the orchestrator has read the file, a task after T1 that
 * no longer parses does not stop T1 from running.  The same assignment
 * with bytes that no longer match (the file changed there) reads the
 * whole graph instead, which now fails. */
static void test_reads_one_task(void **state)
{
    struct fx *f = *state;
    struct zerg_worker_opts o = fx_opts(f);
    struct zerg_result r;
    struct zerg_err err = {0};
    char msg[512];
    write_graph(f, "touch ran-T1", NULL, NULL,
                "{\"id\":\"T2\",\"level\":1,\"command\":\"true\"}");
    struct zerg_assign a = placed(f, "T1");
    char *doc = project_file(f, ".gsd/specs/feat/task-graph.json");
    char *t2 = strstr(doc, "{\"id\":\"T2\"");
    assert_non_null(t2);
    strcpy(t2, "{\"id\":\"T2\",\"level\":\"one\"}]}");
    tu_write(f->project, ".gsd/specs/feat/task-graph.json", doc);
    free(doc);

    start_worker(f, &o);
    wait_seq(f, 1);
    assert_int_equal(zerg_proto_write_assign(f->state, 0, &a, &err), 0);
    wait_result(f, "T1", 1, &r);
    assert_int_equal(r.outcome, ZERG_OUTCOME_COMPLETE);
    assert_string_equal(r.error, "");
    char *ran = project_file(f, "ran-T1");
    assert_non_null(ran);
    free(ran);

    a.attempt = 2;
    a.task_hash ^= 1;
    assert_int_equal(zerg_proto_write_assign(f->state, 0, &a, &err), 0);
    wait_result(f, "T1", 2, &r);
    assert_int_equal(r.outcome, ZERG_OUTCOME_FAILED);
    assert_string_equal(r.stage, "setup");
    assert_true(tu_contains(r.error, "cannot read the task graph"));
    assert_true(tu_contains(r.error, "level must be an integer"));
    assign(f, EPOCH, NULL, 0, 1);
    assert_int_equal(wait_worker(f, msg, sizeof msg), 0);
}

static void test_task_completes(void **state)
{
    struct fx *f = *state;
    struct zerg_result r;
    struct zerg_heartbeat hb;
    write_graph(f,
                "echo hi | tee out.txt; echo task=$ZERG_TASK_ID "
                "worker=$ZERG_WORKER_ID feature=$ZERG_FEATURE "
                "attempt=$ZERG_ATTEMPT epoch=$ZERG_EPOCH run=$ZERG_RUN_ID",
                "test -f out.txt", NULL, NULL);
    run_one(f, &r);
    assert_int_equal(r.outcome, ZERG_OUTCOME_COMPLETE);
    assert_string_equal(r.stage, "verification");
    assert_int_equal(r.exit_code, 0);
    assert_int_equal(r.timed_out, 0);
    assert_true(r.epoch == EPOCH);
    assert_string_equal(r.error, "");
    char *out = project_file(f, "out.txt");
    assert_string_equal(out, "hi\n");
    free(out);
    char *log = project_file(f, ".zerg/logs/feat/tasks/T1/attempt-1.log");
    assert_true(tu_contains(log, "\nhi\n"));
    assert_true(tu_contains(
        log, "task=T1 worker=0 feature=feat attempt=1 epoch=7 run=run-1\n"));
    assert_true(tu_contains(log, "==== zerg: command of task T1"));
    assert_true(tu_contains(log, "==== zerg: verification of task T1"));
    assert_true(tu_contains(log, "==== zerg: verification exited with code 0"));
    free(log);
    /* ready, command, verification, idle, exiting at least (none between
     * the last stage and the result: the result says more) */
    assert_int_equal(read_heartbeat(f, &hb), 0);
    assert_true(hb.seq >= 5);
}

static void test_verification_fails(void **state)
{
    struct fx *f = *state;
    struct zerg_result r;
    write_graph(f, "true", "test -f missing.txt", NULL, NULL);
    run_one(f, &r);
    assert_int_equal(r.outcome, ZERG_OUTCOME_FAILED);
    assert_string_equal(r.stage, "verification");
    assert_int_equal(r.exit_code, 1);
    assert_int_equal(r.timed_out, 0);
    assert_string_equal(r.error, "verification exited with code 1");
}

static void test_command_fails(void **state)
{
    struct fx *f = *state;
    struct zerg_result r;
    write_graph(f, "echo partial; exit 3", "touch verified", NULL, NULL);
    run_one(f, &r);
    assert_int_equal(r.outcome, ZERG_OUTCOME_FAILED);
    assert_string_equal(r.stage, "command");
    assert_int_equal(r.exit_code, 3);
    assert_string_equal(r.error, "command exited with code 3");
    char *v = project_file(f, "verified");
    assert_null(v); /* verification never ran */
}

static void test_verification_timeout(void **state)
{
    struct fx *f = *state;
    struct zerg_result r;
    write_graph(f, "true", "echo $$ > vpgid.txt; sleep 30", "0.3", NULL);
    int64_t t0 = mono_ms();
    run_one(f, &r);
    assert_true(mono_ms() - t0 < 5000);
    assert_int_equal(r.outcome, ZERG_OUTCOME_FAILED);
    assert_string_equal(r.stage, "verification");
    assert_int_equal(r.timed_out, 1);
    assert_int_equal(r.exit_code, -1);
    assert_int_equal(r.signal, SIGKILL);
    assert_true(tu_contains(r.error, "verification timed out after 0.3 s"));
    assert_true(r.duration_ms >= 300);
    char *pg = project_file(f, "vpgid.txt");
    assert_non_null(pg);
    pid_t pgid = (pid_t)atoi(pg);
    free(pg);
    assert_true(pgid > 1);
    assert_int_equal(live_in_group(pgid), 0);
}

/* A stray background process of a successful command is killed too. */
static void test_stray_processes_killed(void **state)
{
    struct fx *f = *state;
    struct zerg_result r;
    write_graph(f, "echo $$ > pgid.txt; sleep 30 & true", NULL, NULL, NULL);
    run_one(f, &r);
    assert_int_equal(r.outcome, ZERG_OUTCOME_COMPLETE);
    assert_string_equal(r.stage, "command");
    char *pg = project_file(f, "pgid.txt");
    assert_non_null(pg);
    assert_int_equal(live_in_group((pid_t)atoi(pg)), 0);
    free(pg);
}

/* 1 while pid exists and is not a zombie. */
static int live_pid(pid_t pid)
{
    char path[64], buf[512], st;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    size_t len = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[len] = '\0';
    char *rp = strrchr(buf, ')');
    return rp && sscanf(rp + 1, " %c", &st) == 1 && st != 'Z' && st != 'X';
}

static pid_t pid_in(const struct fx *f, const char *rel)
{
    char *text = project_file(f, rel);
    assert_non_null(text);
    pid_t pid = (pid_t)atoi(text);
    free(text);
    assert_true(pid > 1);
    return pid;
}

/* Left their group: a setsid daemon and a double-forked one. */
#define DAEMONS                                                                \
    "setsid sleep 30 & echo $! > d1.txt; "                                     \
    "setsid sh -c 'sleep 30 & echo $! > d2.txt' & "                            \
    "while [ ! -s d2.txt ]; do sleep 0.01; done"

/* Daemons that left the task's process group die when the stage ends:
 * already when its result is written, while the worker lives on. */
static void test_setsid_daemons_killed(void **state)
{
    struct fx *f = *state;
    struct zerg_result r;
    char msg[512];
    write_graph(f, DAEMONS, NULL, NULL, NULL);
    struct zerg_worker_opts o = fx_opts(f);
    start_worker(f, &o);
    wait_seq(f, 1);
    assign(f, EPOCH, "T1", 1, 0);
    wait_result(f, "T1", 1, &r);
    assert_int_equal(r.outcome, ZERG_OUTCOME_COMPLETE);
    assert_int_equal(live_pid(pid_in(f, "d1.txt")), 0);
    assert_int_equal(live_pid(pid_in(f, "d2.txt")), 0);
    assert_int_equal(waitpid(f->pid, NULL, WNOHANG), 0);
    assign(f, EPOCH, NULL, 0, 1);
    assert_int_equal(wait_worker(f, msg, sizeof msg), 0);
}

/* In this process: the daemons are killed and the process is no child
 * subreaper any more when zerg_worker_run returns. */
static void test_daemons_killed_in_process(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_result r;
    int sub = -1;
    struct zerg_worker_opts o = fx_opts(f);
    write_graph(f, "true", DAEMONS, NULL, NULL);
    assign(f, EPOCH, "T1", 1, 1);
    assert_int_equal(zerg_worker_run(&o, &err), ZERG_WORKER_EXIT_OK);
    assert_int_equal(read_result(f, "T1", 1, &r), 0);
    assert_int_equal(r.outcome, ZERG_OUTCOME_COMPLETE);
    assert_int_equal(live_pid(pid_in(f, "d1.txt")), 0);
    assert_int_equal(live_pid(pid_in(f, "d2.txt")), 0);
    assert_int_equal(prctl(PR_GET_CHILD_SUBREAPER, &sub), 0);
    assert_int_equal(sub, 0);
}

static void test_foreign_epoch_ignored(void **state)
{
    struct fx *f = *state;
    struct zerg_result r;
    char msg[512];
    write_graph(f, "touch t1-ran", NULL, NULL,
                "{\"id\":\"T2\",\"level\":1,\"command\":\"touch t2-ran\"}");
    /* Written before the worker starts: its first look at the assignment
     * happens before its second heartbeat. */
    assign(f, EPOCH + 1, "T1", 1, 0);
    struct zerg_worker_opts o = fx_opts(f);
    start_worker(f, &o);
    wait_seq(f, 2);
    /* A foreign stop does not stop us: two heartbeats later the worker has
     * read it (a due heartbeat may come first, never a second one). */
    struct zerg_heartbeat hb;
    assign(f, EPOCH - 1, NULL, 0, 1);
    assert_int_equal(read_heartbeat(f, &hb), 0);
    wait_seq(f, hb.seq + 2);
    assert_int_equal(waitpid(f->pid, NULL, WNOHANG), 0);
    assign(f, EPOCH, "T2", 1, 1);
    wait_result(f, "T2", 1, &r);
    assert_int_equal(r.outcome, ZERG_OUTCOME_COMPLETE);
    assert_int_equal(wait_worker(f, msg, sizeof msg), 0);
    assert_int_equal(read_result(f, "T1", 1, &r), -ENOENT);
    char *ran = project_file(f, "t1-ran");
    assert_null(ran);
}

static void test_sigterm_kills_task(void **state)
{
    struct fx *f = *state;
    struct zerg_heartbeat hb;
    char msg[512];
    write_graph(f, "echo $$ > pgid.txt; sleep 30", NULL, NULL, NULL);
    struct zerg_worker_opts o = fx_opts(f);
    start_worker(f, &o);
    wait_seq(f, 1);
    assign(f, EPOCH, "T1", 1, 0);
    wait_until(f, f->project, file_nonempty, "pgid.txt", "pgid.txt");
    char *pg = project_file(f, "pgid.txt");
    pid_t pgid = (pid_t)atoi(pg);
    free(pg);
    /* the group was published before the task could run */
    assert_int_equal(read_heartbeat(f, &hb), 0);
    assert_int_equal(hb.task_pgid, pgid);
    assert_string_equal(hb.step, "command");
    assert_string_equal(hb.task_id, "T1");
    assert_int_equal(hb.progress_pct, 10);
    assert_true(live_in_group(pgid) >= 1);

    assert_int_equal(kill(f->pid, SIGTERM), 0);
    assert_int_equal(wait_worker(f, msg, sizeof msg), 0);
    assert_int_equal(live_in_group(pgid), 0);
    assert_int_equal(read_heartbeat(f, &hb), 0);
    assert_string_equal(hb.step, "exiting");
    struct zerg_result r;
    assert_int_equal(read_result(f, "T1", 1, &r), -ENOENT);
}

/* Starts a worker on command, which writes its pid (its group) to
 * pgid.txt; SIGTERMs the worker once the task runs and waits for it:
 * exit 0, no result (the orchestrator requeues the task, uncharged),
 * nothing of the task left.  Returns the attempt's log. */
static char *stop_running_task(struct fx *f, const char *command)
{
    char msg[512];
    struct zerg_result r;
    write_graph(f, command, NULL, NULL, NULL);
    struct zerg_worker_opts o = fx_opts(f);
    start_worker(f, &o);
    wait_seq(f, 1);
    assign(f, EPOCH, "T1", 1, 0);
    wait_until(f, f->project, file_nonempty, "pgid.txt", "pgid.txt");
    char *pg = project_file(f, "pgid.txt");
    pid_t pgid = (pid_t)atoi(pg);
    free(pg);
    assert_int_equal(kill(f->pid, SIGTERM), 0);
    assert_int_equal(wait_worker(f, msg, sizeof msg), 0);
    assert_int_equal(live_in_group(pgid), 0);
    assert_int_equal(read_result(f, "T1", 1, &r), -ENOENT);
    return project_file(f, ".zerg/logs/feat/tasks/T1/attempt-1.log");
}

/* A stop gives the task SIGTERM first: its handler runs to its end. */
static void test_sigterm_lets_the_task_end(void **state)
{
    struct fx *f = *state;
    char *log = stop_running_task(
        f, "trap 'echo ran > marker.txt; exit 0' TERM; echo $$ > pgid.txt; "
           "while :; do sleep 0.05; done");
    char *marker = project_file(f, "marker.txt");
    assert_non_null(marker);
    assert_string_equal(marker, "ran\n");
    assert_true(tu_contains(log, "stopping: SIGTERM to the command"));
    assert_false(tu_contains(log, "did not end within"));
    free(marker);
    free(log);
}

/* A task that ignores SIGTERM is killed once workers.stop_grace_seconds
 * is over. */
static void test_sigterm_ignored_killed_after_grace(void **state)
{
    struct fx *f = *state;
    tu_write(f->project, ".zerg/config.yaml",
             "workers:\n  stop_grace_seconds: 0.3\n");
    char *log = stop_running_task(
        f, "trap '' TERM; echo $$ > pgid.txt; while :; do sleep 0.05; done");
    assert_true(tu_contains(log, "SIGKILL after 0.3 s"));
    assert_true(tu_contains(log, "did not end within 0.3 s of SIGTERM"));
    assert_true(tu_contains(log, "killed by signal 9"));
    free(log);
}

static int hb_progress(const struct fx *f, const void *arg)
{
    struct zerg_heartbeat hb;
    return read_heartbeat(f, &hb) == 0 && hb.progress_pct == *(const int *)arg;
}

static void test_progress_file(void **state)
{
    struct fx *f = *state;
    struct zerg_result r;
    char msg[512];
    int want = 42;
    write_graph(
        f,
        "echo 42 > $ZERG_PROGRESS_FILE; while [ ! -f go ]; do sleep 0.01; done",
        NULL, NULL, NULL);
    struct zerg_worker_opts o = fx_opts(f);
    o.heartbeat_interval_ns = 60 * ZERG_NS_PER_S; /* only events beat */
    start_worker(f, &o);
    wait_seq(f, 1);
    assign(f, EPOCH, "T1", 1, 1);
    wait_until(f, f->state, hb_progress, &want, "progress 42");
    tu_write(f->project, "go", "");
    wait_result(f, "T1", 1, &r);
    assert_int_equal(r.outcome, ZERG_OUTCOME_COMPLETE);
    assert_int_equal(wait_worker(f, msg, sizeof msg), 0);
}

static void test_lease_stale_exits(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    char msg[512];
    write_graph(f, "true", NULL, NULL, NULL);
    assert_int_equal(
        zerg_proto_write_lease(f->state, "feat", 1, "run-1", 1, &err), 0);
    struct zerg_worker_opts o = fx_opts(f);
    o.orch_pid = 0; /* container mode: only the lease tells */
    o.lease_stale_ns = 300 * ZERG_NS_PER_MS;
    int64_t t0 = mono_ms();
    start_worker(f, &o);
    assert_int_equal(wait_worker(f, msg, sizeof msg),
                     ZERG_WORKER_EXIT_ORPHANED);
    assert_true(mono_ms() - t0 >= 300);
    assert_true(tu_contains(msg, "orchestrator gone: lease"));
    assert_true(tu_contains(msg, "lease-feat.json unchanged for"));
}

static int log_has(const struct fx *f, const void *arg)
{
    char *text = project_file(f, ".zerg/monitor.jsonl");
    int found = text && strstr(text, (const char *)arg);
    free(text);
    return found;
}

/* A process of its own holds the rush lock until it is killed (the
 * worker is forked from this test and would share a lock taken here). */
static pid_t hold_lock(const struct fx *f)
{
    int p[2];
    char lock[PATH_MAX], c = 0;
    snprintf(lock, sizeof lock, "%s.lock", f->state);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct zerg_err err = {0};
        struct zerg_lock lk;
        if (zerg_lock_acquire(&lk, lock, &err) == 0 && write(p[1], "k", 1))
            pause();
        _exit(1);
    }
    close(p[1]);
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    return pid;
}

static void end_holder(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* A stopped or overloaded orchestrator stops renewing its lease but keeps
 * the rush lock: the worker waits (orchestrator_slow) instead of leaving,
 * and leaves only once the lock is free. */
static void test_lease_stale_lock_held_waits(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    char msg[512], dir[PATH_MAX];
    write_graph(f, "true", NULL, NULL, NULL);
    pid_t holder = hold_lock(f);
    assert_int_equal(
        zerg_proto_write_lease(f->state, "feat", (int)holder, "run-1", 1, &err),
        0);
    struct zerg_worker_opts o = fx_opts(f);
    o.orch_pid = 0; /* container mode: no pid to check */
    o.lease_stale_ns = 200 * ZERG_NS_PER_MS;
    start_worker(f, &o);
    snprintf(dir, sizeof dir, "%s/.zerg", f->project);
    wait_until(f, dir, log_has, "\"orchestrator_slow\"", "orchestrator_slow");
    assert_int_equal(kill(f->pid, 0), 0); /* still there */
    end_holder(holder);
    assert_int_equal(wait_worker(f, msg, sizeof msg),
                     ZERG_WORKER_EXIT_ORPHANED);
    assert_true(tu_contains(msg, "the rush lock is free"));
}

/* A lock held by some other process (another rush of the feature after
 * ours died) is no sign of life of our orchestrator. */
static void test_lease_stale_lock_of_another(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    char msg[512];
    write_graph(f, "true", NULL, NULL, NULL);
    pid_t holder = hold_lock(f);
    assert_int_equal(
        zerg_proto_write_lease(f->state, "feat", 1, "run-1", 1, &err), 0);
    struct zerg_worker_opts o = fx_opts(f);
    o.orch_pid = 0;
    o.lease_stale_ns = 200 * ZERG_NS_PER_MS;
    start_worker(f, &o);
    int rc = wait_worker(f, msg, sizeof msg);
    end_holder(holder);
    assert_int_equal(rc, ZERG_WORKER_EXIT_ORPHANED);
    assert_true(tu_contains(msg, "orchestrator gone: lease"));
}

static void test_orchestrator_pid_gone(void **state)
{
    struct fx *f = *state;
    char msg[512];
    write_graph(f, "true", NULL, NULL, NULL);
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    struct zerg_worker_opts o = fx_opts(f);
    o.orch_pid = dead;
    start_worker(f, &o);
    assert_int_equal(wait_worker(f, msg, sizeof msg),
                     ZERG_WORKER_EXIT_ORPHANED);
    char want[64];
    snprintf(want, sizeof want, "process %d no longer exists", (int)dead);
    assert_true(tu_contains(msg, "orchestrator gone"));
    assert_true(tu_contains(msg, want));
}

/* ---- in this process ------------------------------------------------ */

static void test_missing_graph(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_worker_opts o = fx_opts(f);
    char want[PATH_MAX];
    snprintf(want, sizeof want,
             "cannot read task graph %s/.gsd/specs/feat/task-graph.json: No "
             "such file or directory",
             f->project);
    assert_int_equal(zerg_worker_run(&o, &err), ZERG_WORKER_EXIT_SETUP);
    assert_string_equal(err.msg, want);
    /* never ready: no heartbeat was written */
    struct zerg_heartbeat hb;
    assert_int_equal(read_heartbeat(f, &hb), -ENOENT);
}

static void test_bad_config(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_worker_opts o = fx_opts(f);
    write_graph(f, "true", NULL, NULL, NULL);
    tu_write(f->project, ".zerg/config.yaml",
             "workers:\n  heartbeat_interval_seconds: soon\n");
    assert_int_equal(zerg_worker_run(&o, &err), ZERG_WORKER_EXIT_SETUP);
    assert_true(tu_contains(err.msg, "config.yaml"));
    assert_true(tu_contains(err.msg, "heartbeat_interval_seconds"));
}

/* No command: the executor runs with the prompt as its last argument. */
static void test_executor_gets_prompt(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_result r;
    struct zerg_worker_opts o = fx_opts(f);
    write_graph(f, NULL, "test -s prompt.txt", NULL, NULL);
    tu_write(f->project, ".zerg/config.yaml",
             "workers:\n  executor: [sh, -c, 'printf \"%s\" \"$1\" > "
             "prompt.txt', sh]\n");
    assign(f, EPOCH, "T1", 1, 1);
    assert_int_equal(zerg_worker_run(&o, &err), ZERG_WORKER_EXIT_OK);
    assert_int_equal(read_result(f, "T1", 1, &r), 0);
    assert_int_equal(r.outcome, ZERG_OUTCOME_COMPLETE);
    char *p = project_file(f, "prompt.txt");
    assert_true(tu_contains(p, "Task T1: Write the prompt"));
    assert_true(tu_contains(p, "## Description\nEcho it back."));
    assert_true(tu_contains(p, "test -s prompt.txt"));
    /* The prompt is kept beside the attempt's log. */
    char *saved = project_file(f, ".zerg/logs/feat/tasks/T1/attempt-1.prompt");
    assert_non_null(saved);
    assert_string_equal(saved, p);
    free(saved);
    free(p);
}

static void test_executor_missing(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_result r;
    struct zerg_worker_opts o = fx_opts(f);
    write_graph(f, NULL, NULL, NULL, NULL);
    tu_write(f->project, ".zerg/config.yaml",
             "workers:\n  executor: [zerg-no-such-executor-x]\n");
    assign(f, EPOCH, "T1", 1, 1);
    assert_int_equal(zerg_worker_run(&o, &err), ZERG_WORKER_EXIT_OK);
    assert_int_equal(read_result(f, "T1", 1, &r), 0);
    assert_int_equal(r.outcome, ZERG_OUTCOME_FAILED);
    assert_string_equal(r.stage, "command");
    assert_int_equal(r.exit_code, 127);
    char *log = project_file(f, ".zerg/logs/feat/tasks/T1/attempt-1.log");
    assert_true(tu_contains(log, "cannot execute zerg-no-such-executor-x"));
    free(log);
}

static void test_task_not_in_graph(void **state)
{
    struct fx *f = *state;
    struct zerg_err err = {0};
    struct zerg_result r;
    struct zerg_heartbeat hb;
    struct zerg_worker_opts o = fx_opts(f);
    write_graph(f, "true", NULL, NULL, NULL);
    assign(f, EPOCH, "T9", 2, 1);
    assert_int_equal(zerg_worker_run(&o, &err), ZERG_WORKER_EXIT_OK);
    assert_int_equal(read_result(f, "T9", 2, &r), 0);
    assert_int_equal(r.outcome, ZERG_OUTCOME_FAILED);
    assert_string_equal(r.stage, "setup");
    assert_string_equal(r.error, "task T9 is not in the task graph");
    assert_int_equal(read_heartbeat(f, &hb), 0);
    assert_string_equal(hb.step, "exiting");
}

#define FX(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decide),
        cmocka_unit_test(test_prompt),
        cmocka_unit_test(test_claude_argv),
        cmocka_unit_test(test_executor_argv),
        cmocka_unit_test(test_task_env),
        cmocka_unit_test(test_parse_progress),
        FX(test_task_completes),
        FX(test_reads_one_task),
        FX(test_verification_fails),
        FX(test_command_fails),
        FX(test_verification_timeout),
        FX(test_stray_processes_killed),
        FX(test_setsid_daemons_killed),
        FX(test_daemons_killed_in_process),
        FX(test_foreign_epoch_ignored),
        FX(test_sigterm_kills_task),
        FX(test_sigterm_lets_the_task_end),
        FX(test_sigterm_ignored_killed_after_grace),
        FX(test_progress_file),
        FX(test_lease_stale_exits),
        FX(test_lease_stale_lock_held_waits),
        FX(test_lease_stale_lock_of_another),
        FX(test_orchestrator_pid_gone),
        FX(test_missing_graph),
        FX(test_bad_config),
        FX(test_executor_gets_prompt),
        FX(test_executor_missing),
        FX(test_task_not_in_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
