/* worker.c - one worker incarnation: ready, wait for an assignment, run
 * it, report, repeat (DESIGN.md sections 8 and 12).
 *
 * Single-threaded around one poll(2) over:
 *   - a signalfd for SIGTERM/SIGINT/SIGHUP (kill the task, say "exiting");
 *   - inotify on the state directory (our assignment arrives as a rename)
 *     and on the running task's log directory (its progress file);
 *   - the pidfd of the running stage;
 *   - a tick of at most 500 ms that also re-stats the assignment (inotify
 *     can miss events across a container bind mount), reads the lease and
 *     the progress file, and a heartbeat timer.
 *
 * Every stage runs in its own process group.  The child creates the group
 * and then blocks on a pipe until the parent has published the group in a
 * heartbeat (task_pgid), so there is no instant at which the orchestrator
 * could not kill the whole task.  After a stage ends -- success, failure or
 * timeout -- the group is SIGKILLed before the leader is reaped: its pid,
 * and so the group id, cannot be reused until then, and nothing the task
 * started in the background survives it. */
#include "zerg/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/log.h"

extern char **environ;

#define WORKER_POLL_NS (500 * ZERG_NS_PER_MS)
/* Without a pidfd (kernels before 5.3) a running stage is polled. */
#define WORKER_CHILD_POLL_NS (20 * ZERG_NS_PER_MS)
#define WORKER_MIN_HEARTBEAT_NS (10 * ZERG_NS_PER_MS)
#define PROGRESS_MAX_BYTES 64

enum { EV_EXIT, EV_ASSIGN, EV_CHILD, EV_DEADLINE };

struct stage {
    const char *name;   /* "command" | "verification" */
    pid_t pid;
    int pidfd;          /* -1 when pidfd_open is unavailable */
    int64_t deadline_ns;/* INT64_MAX: none */
    int status;         /* wait status */
    int timed_out;
};

struct worker {
    const struct zerg_worker_opts *o;
    const struct zerg_clock *clock;
    struct zerg_err *err;
    struct zerg_config cfg;
    struct zerg_graph *graph;
    struct zerg_log *log;
    char state_dir[PATH_MAX], assign_path[PATH_MAX];
    int64_t hb_interval_ns, lease_stale_ns, poll_ns;

    int sigfd, inofd, task_wd;
    sigset_t oldmask;
    int exit_code;              /* -1 while running */

    struct zerg_heartbeat hb;
    int64_t next_hb_ns, next_tick_ns;
    int ready, hb_failed;

    struct stat assign_st;      /* identity of the last file we read */
    int assign_dirty;
    char last_task[ZERG_ID_MAX + 1];
    int last_attempt;

    int lease_seen;
    int64_t lease_seq, lease_changed_ns;

    struct stage *stage;        /* the running stage, NULL when idle */
    char progress_path[PATH_MAX];
    int progress_last;
};

static int64_t now_ns(const struct worker *w)
{
    return zerg_clock_mono(w->clock);
}

/* ---- heartbeat ------------------------------------------------------ */

/* Writes the next heartbeat; a failure is reported once on stderr (the
 * orchestrator will call us stale, which is the truth). */
static int worker_beat(struct worker *w)
{
    struct zerg_err e = {0};
    int64_t now = now_ns(w);
    w->hb.seq++;
    w->hb.timestamp_ns = zerg_clock_wall(w->clock);
    w->next_hb_ns = now + w->hb_interval_ns;
    int rc = zerg_proto_write_heartbeat(w->state_dir, &w->hb, &e);
    if (rc < 0 && !w->hb_failed) {
        fprintf(stderr, "zerg worker %d: %s\n", w->o->slot, e.msg);
        w->hb_failed = 1;
    } else if (rc == 0) {
        w->hb_failed = 0;
    }
    return rc;
}

static void worker_step(struct worker *w, const char *step, int progress)
{
    snprintf(w->hb.step, sizeof w->hb.step, "%s", step);
    w->hb.progress_pct = progress;
    worker_beat(w);
}

/* ---- leaving -------------------------------------------------------- */

static void worker_exit(struct worker *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records the exit code and, for a failure, why. */
static void worker_exit(struct worker *w, int code, const char *fmt, ...)
{
    if (w->exit_code >= 0)
        return;
    w->exit_code = code;
    if (!fmt)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err->msg, sizeof w->err->msg, fmt, ap);
    va_end(ap);
    w->err->code = code;
    if (w->log)
        zerg_log_event(w->log, w->o->slot, ZERG_LOG_WARN, "worker_exit",
                       w->hb.task_id[0] ? w->hb.task_id : NULL, NULL,
                       "Worker %d exits: %s", w->o->slot, w->err->msg);
}

/* ---- orchestrator liveness ------------------------------------------ */

static int orch_gone(const struct worker *w)
{
    return w->o->orch_pid > 0 && kill(w->o->orch_pid, 0) < 0 &&
           errno == ESRCH;
}

/* The lease must keep changing.  Before it was ever seen it is only
 * required when no orchestrator pid can be checked (container mode). */
static void check_lease(struct worker *w, int64_t now)
{
    int64_t seq;
    char run_id[128];
    if (orch_gone(w)) {
        worker_exit(w, ZERG_WORKER_EXIT_ORPHANED, "orchestrator gone: "
                    "process %d no longer exists", (int)w->o->orch_pid);
        return;
    }
    int rc = zerg_proto_read_lease(w->state_dir, w->o->feature, NULL, run_id,
                                   sizeof run_id, &seq);
    /* A lease of another run is not a sign of life of ours. */
    if (rc == 0 && strcmp(run_id, w->o->run_id) == 0 &&
        (!w->lease_seen || seq != w->lease_seq)) {
        w->lease_seen = 1;
        w->lease_seq = seq;
        w->lease_changed_ns = now;
    }
    if ((w->lease_seen || w->o->orch_pid <= 0) &&
        now - w->lease_changed_ns >= w->lease_stale_ns)
        worker_exit(w, ZERG_WORKER_EXIT_ORPHANED, "orchestrator gone: lease "
                    "%s/lease-%s.json unchanged for %.1f s", w->state_dir,
                    w->o->feature, zerg_ns_to_s(now - w->lease_changed_ns));
}

/* ---- assignment and progress watching ------------------------------- */

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
           a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_size == b->st_size;
}

/* The inotify-independent path: notice a replaced assignment by stat. */
static void check_assign_stat(struct worker *w)
{
    struct stat st;
    if (stat(w->assign_path, &st) == 0 && !same_file(&st, &w->assign_st))
        w->assign_dirty = 1;
}

static void check_progress(struct worker *w)
{
    char *text = NULL;
    size_t len;
    if (!w->stage || !w->progress_path[0])
        return;
    if (zerg_fsio_read_all(w->progress_path, PROGRESS_MAX_BYTES, &text, &len,
                           NULL) < 0)
        return;
    int pct = zerg_worker_parse_progress(text);
    free(text);
    if (pct < 0 || pct == w->progress_last)
        return;
    w->progress_last = pct;
    w->hb.progress_pct = pct;
    worker_beat(w);
}

/* Drains inotify; flags what changed. */
static void read_inotify(struct worker *w)
{
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    const char *assign_name = strrchr(w->assign_path, '/') + 1;
    ssize_t n;
    while ((n = read(w->inofd, buf, sizeof buf)) > 0) {
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;
            p += sizeof *ev + ev->len;
            if (ev->mask & IN_Q_OVERFLOW)
                w->assign_dirty = 1;
            else if (ev->len && ev->wd == w->task_wd)
                check_progress(w);
            else if (ev->len && strcmp(ev->name, assign_name) == 0)
                w->assign_dirty = 1;
        }
    }
}

static void read_signal(struct worker *w)
{
    struct signalfd_siginfo si;
    if (read(w->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
        worker_exit(w, ZERG_WORKER_EXIT_OK, NULL);
}

/* Collects children the task left behind that became ours (a worker can be
 * pid 1 of its container): only while no stage is waiting to be reaped. */
static void reap_strays(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

static int stage_exited(const struct stage *st)
{
    siginfo_t si = {0};
    return waitid(P_PID, (id_t)st->pid, &si, WEXITED | WNOHANG | WNOWAIT) ==
               0 && si.si_pid == st->pid;
}

/* Periodic work: heartbeat when due; at each tick the assignment stat,
 * the lease and the progress file. */
static void housekeeping(struct worker *w, int64_t now)
{
    if (now >= w->next_tick_ns) {
        w->next_tick_ns = now + w->poll_ns;
        check_lease(w, now);
        if (w->exit_code >= 0)
            return;
        check_assign_stat(w);
        check_progress(w);
        if (!w->stage)
            reap_strays();
    }
    if (now >= w->next_hb_ns)
        worker_beat(w);
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Waits for the next event that matters to the caller: a request to exit,
 * a changed assignment (only when idle), the stage's exit, or deadline. */
static int worker_wait(struct worker *w, int64_t deadline_ns)
{
    struct stage *st = w->stage;
    for (;;) {
        int64_t now = now_ns(w);
        housekeeping(w, now);
        if (w->exit_code >= 0)
            return EV_EXIT;
        if (st && st->pidfd < 0 && stage_exited(st))
            return EV_CHILD;
        if (!st && w->assign_dirty)
            return EV_ASSIGN;
        if (now >= deadline_ns)
            return EV_DEADLINE;
        int64_t until = min64(min64(w->next_tick_ns, w->next_hb_ns),
                              deadline_ns);
        if (st && st->pidfd < 0)
            until = min64(until, now + WORKER_CHILD_POLL_NS);
        int64_t wait_ns = until - now;
        int timeout_ms = (int)((wait_ns + ZERG_NS_PER_MS - 1) / ZERG_NS_PER_MS);
        struct pollfd pfd[3] = {
            {.fd = w->sigfd, .events = POLLIN},
            {.fd = w->inofd, .events = POLLIN},
            {.fd = st ? st->pidfd : -1, .events = POLLIN},
        };
        int n = poll(pfd, 3, timeout_ms);
        if (n < 0 && errno != EINTR) {
            worker_exit(w, ZERG_WORKER_EXIT_ERROR, "poll: %s",
                        strerror(errno));
            return EV_EXIT;
        }
        if (n <= 0)
            continue;
        if (pfd[0].revents & POLLIN)
            read_signal(w);
        if (pfd[1].revents & POLLIN)
            read_inotify(w);
        if (w->exit_code < 0 && (pfd[2].revents & (POLLIN | POLLHUP)))
            return EV_CHILD;
    }
}

/* ---- stages --------------------------------------------------------- */

/* What one attempt of a task needs while it runs. */
struct task_run {
    const struct zerg_task *task;
    int attempt;
    int log_fd;
    char log_dir[PATH_MAX];
    char **envp;
};

/* In the forked child: own group, die with the worker, wait for the
 * parent to publish the group, then exec.  Never returns. */
static void stage_child(const struct worker *w, int sync_fd, int log_fd,
                        char **argv, char **envp, int search_path,
                        pid_t parent)
{
    sigset_t none;
    char c;
    ssize_t n;
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 ||
        dup2(log_fd, 2) < 0)
        _exit(127);
    do
        n = read(sync_fd, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        _exit(127);
    if (chdir(w->o->project) < 0) {
        dprintf(2, "zerg: cannot enter %s: %s\n", w->o->project,
                strerror(errno));
        _exit(127);
    }
    if (search_path)
        execvpe(argv[0], argv, envp);
    else
        execve(argv[0], argv, envp);
    dprintf(2, "zerg: cannot execute %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static void log_line(int fd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void log_line(int fd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdprintf(fd, fmt, ap);
    va_end(ap);
}

/* Starts argv as the stage st; 0 or -errno (nothing left running). */
static int stage_start(struct worker *w, struct stage *st,
                       struct task_run *run, char **argv, int search_path,
                       int progress)
{
    int sync[2];
    char ts[ZERG_TS_MAX];
    zerg_clock_iso8601(zerg_clock_wall(w->clock), ts);
    log_line(run->log_fd, "==== zerg: %s of task %s, attempt %d, worker %d, "
             "%s\n", st->name, run->task->id, run->attempt, w->o->slot, ts);
    for (char **a = argv; *a; a++)
        log_line(run->log_fd, "%s%s", a == argv ? "$ " : " ", *a);
    log_line(run->log_fd, "\n");
    if (pipe2(sync, O_CLOEXEC) < 0)
        return -errno;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(sync[0]);
        close(sync[1]);
        return e;
    }
    if (pid == 0) {
        close(sync[1]);
        stage_child(w, sync[0], run->log_fd, argv, run->envp, search_path,
                    parent);
    }
    close(sync[0]);
    setpgid(pid, pid); /* also in the child: whichever runs first */
    st->pid = pid;
    st->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    w->stage = st;
    w->hb.task_pgid = pid;
    worker_step(w, st->name, progress);
    if (write(sync[1], "x", 1) != 1)
        kill(-pid, SIGKILL); /* the child exits 127 on its own too */
    close(sync[1]);
    return 0;
}

/* Waits for the stage (heartbeats go on), kills its group, reaps it. */
static void stage_wait(struct worker *w, struct stage *st)
{
    for (;;) {
        int ev = worker_wait(w, st->deadline_ns);
        if (ev == EV_DEADLINE)
            st->timed_out = 1;
        if (ev != EV_ASSIGN)
            break;
    }
    kill(-st->pid, SIGKILL);
    while (waitpid(st->pid, &st->status, 0) < 0 && errno == EINTR)
        ;
    if (st->pidfd >= 0)
        close(st->pidfd);
    st->pidfd = -1;
    w->stage = NULL;
    w->hb.task_pgid = 0;
    reap_strays();
}

/* Runs one stage to its end; fills r on failure.  0 when it exited 0. */
static int stage_run(struct worker *w, struct task_run *run,
                     const char *name, char **argv, int search_path,
                     int progress, int64_t timeout_ns, struct zerg_result *r)
{
    struct stage st = {.name = name, .pidfd = -1, .deadline_ns = INT64_MAX};
    int64_t start = now_ns(w);
    if (timeout_ns > 0)
        st.deadline_ns = start + timeout_ns;
    snprintf(r->stage, sizeof r->stage, "%s", name);
    int rc = stage_start(w, &st, run, argv, search_path, progress);
    if (rc < 0) {
        r->exit_code = -1;
        snprintf(r->error, sizeof r->error, "cannot start %s: %s", name,
                 strerror(-rc));
        return -1;
    }
    stage_wait(w, &st);
    char what[96] = "exited with code 0";
    if (st.timed_out) {
        r->exit_code = -1, r->signal = SIGKILL, r->timed_out = 1;
        snprintf(what, sizeof what, "timed out after %.1f s",
                 zerg_ns_to_s(timeout_ns));
    } else if (WIFEXITED(st.status)) {
        r->exit_code = WEXITSTATUS(st.status), r->signal = 0;
        if (r->exit_code != 0)
            snprintf(what, sizeof what, "exited with code %d", r->exit_code);
    } else {
        r->exit_code = -1, r->signal = WTERMSIG(st.status);
        snprintf(what, sizeof what, "killed by signal %d (%s)", r->signal,
                 strsignal(r->signal));
    }
    log_line(run->log_fd, "==== zerg: %s %s after %.3f s\n", name, what,
             zerg_ns_to_s(now_ns(w) - start));
    if (r->exit_code == 0)
        return 0;
    snprintf(r->error, sizeof r->error, "%s %s", name, what);
    return -1;
}

/* ---- one task attempt ----------------------------------------------- */

/* Opens the attempt's log and builds its environment. */
static int run_open(struct worker *w, struct task_run *run,
                    struct zerg_result *r)
{
    char path[PATH_MAX];
    const char *id = run->task->id;
    int rc = zerg_fsio_path(run->log_dir, sizeof run->log_dir,
                            "%s/.zerg/logs/tasks/%s", w->o->project, id);
    if (rc == 0)
        rc = zerg_fsio_mkdirs(run->log_dir, 0755);
    if (rc == 0)
        rc = zerg_fsio_path(path, sizeof path, "%s/attempt-%d.log",
                            run->log_dir, run->attempt);
    if (rc == 0)
        rc = zerg_fsio_path(w->progress_path, sizeof w->progress_path,
                            "%s/attempt-%d.progress", run->log_dir,
                            run->attempt);
    if (rc == 0 && (run->log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND |
                                               O_CLOEXEC, 0644)) < 0)
        rc = -errno;
    if (rc < 0) {
        snprintf(r->error, sizeof r->error, "cannot open the task log in "
                 "%s: %s", run->log_dir, strerror(-rc));
        return rc;
    }
    unlink(w->progress_path); /* a rerun must not inherit old progress */
    w->progress_last = -1;
    struct zerg_task_env e = {
        .task_id = id, .worker_id = w->o->slot, .feature = w->o->feature,
        .attempt = run->attempt, .epoch = w->o->epoch,
        .run_id = w->o->run_id, .progress_file = w->progress_path,
    };
    run->envp = zerg_worker_task_env(environ, &e);
    w->task_wd = inotify_add_watch(w->inofd, run->log_dir,
                                   IN_CLOSE_WRITE | IN_MOVED_TO);
    if (!run->envp) {
        snprintf(r->error, sizeof r->error, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

static void run_close(struct worker *w, struct task_run *run)
{
    if (w->task_wd >= 0)
        inotify_rm_watch(w->inofd, w->task_wd);
    w->task_wd = -1;
    w->progress_path[0] = '\0';
    if (run->log_fd >= 0)
        close(run->log_fd);
    zerg_worker_argv_free(run->envp);
}

/* Stage 1: the task's command, else the executor with the prompt. */
static int run_command(struct worker *w, struct task_run *run,
                       struct zerg_result *r)
{
    const struct zerg_task *t = run->task;
    if (t->command) {
        char *argv[] = {"/bin/sh", "-c", t->command, NULL};
        return stage_run(w, run, "command", argv, 0, 10, 0, r);
    }
    char *prompt = zerg_worker_prompt(t, w->o->feature);
    char **argv = zerg_worker_executor_argv(&w->cfg.executor, prompt);
    int rc = -1;
    if (argv)
        rc = stage_run(w, run, "command", argv, 1, 10, 0, r);
    else
        snprintf(r->error, sizeof r->error, "task has no command and "
                 "workers.executor is empty");
    zerg_worker_argv_free(argv);
    free(prompt);
    return rc;
}

static int run_verification(struct worker *w, struct task_run *run,
                            struct zerg_result *r)
{
    const struct zerg_task *t = run->task;
    char *argv[] = {"/bin/sh", "-c", t->verify_command, NULL};
    return stage_run(w, run, "verification", argv, 0, 80,
                     t->verify_timeout_ns, r);
}

/* Runs both stages of one attempt and fills r. */
static void run_stages(struct worker *w, const struct zerg_task *t,
                       int attempt, struct zerg_result *r)
{
    struct task_run run = {.task = t, .attempt = attempt, .log_fd = -1};
    snprintf(r->stage, sizeof r->stage, "setup");
    if (run_open(w, &run, r) < 0)
        goto out;
    if (run_command(w, &run, r) < 0 || w->exit_code >= 0)
        goto out;
    if (t->verify_command && *t->verify_command &&
        run_verification(w, &run, r) < 0)
        goto out;
    r->outcome = ZERG_OUTCOME_COMPLETE;
out:
    run_close(w, &run);
}

static void run_task(struct worker *w, const struct zerg_assign *a)
{
    int64_t start = now_ns(w);
    struct zerg_result r = {
        .epoch = w->o->epoch, .worker_id = w->o->slot,
        .attempt = a->attempt, .outcome = ZERG_OUTCOME_FAILED,
    };
    struct zerg_err e = {0};
    snprintf(r.task, sizeof r.task, "%s", a->task);
    snprintf(w->last_task, sizeof w->last_task, "%s", a->task);
    w->last_attempt = a->attempt;
    snprintf(w->hb.task_id, sizeof w->hb.task_id, "%s", a->task);
    w->hb.attempt = a->attempt;
    ssize_t idx = zerg_graph_find(w->graph, a->task);
    if (idx < 0) {
        snprintf(r.stage, sizeof r.stage, "setup");
        snprintf(r.error, sizeof r.error, "task %s is not in the task graph",
                 a->task);
    } else {
        run_stages(w, &w->graph->tasks[idx], a->attempt, &r);
    }
    if (w->exit_code >= 0)
        return; /* interrupted: the orchestrator sees the worker exit */
    if (r.outcome == ZERG_OUTCOME_COMPLETE)
        worker_step(w, "done", 100);
    r.duration_ms = (now_ns(w) - start) / ZERG_NS_PER_MS;
    if (zerg_proto_write_result(w->state_dir, &r, &e) < 0)
        fprintf(stderr, "zerg worker %d: %s\n", w->o->slot, e.msg);
    w->hb.task_id[0] = '\0';
    w->hb.attempt = 0;
    worker_step(w, "idle", 0);
}

/* ---- the loop ------------------------------------------------------- */

static void handle_assignment(struct worker *w)
{
    struct zerg_assign a;
    struct stat st;
    w->assign_dirty = 0;
    if (stat(w->assign_path, &st) == 0)
        w->assign_st = st;
    int rc = zerg_proto_read_assign(w->state_dir, w->o->slot, &a);
    if (rc == ZERG_ECORRUPT)
        fprintf(stderr, "zerg worker %d: ignoring unreadable %s\n",
                w->o->slot, w->assign_path);
    if (rc < 0)
        return;
    switch (zerg_worker_decide(&a, w->o->epoch, w->last_task,
                               w->last_attempt)) {
    case ZERG_ASSIGN_RUN:
        run_task(w, &a);
        w->assign_dirty = 1; /* it may have changed while we worked */
        break;
    case ZERG_ASSIGN_STOP:
        worker_exit(w, ZERG_WORKER_EXIT_OK, NULL);
        break;
    case ZERG_ASSIGN_IGNORE:
        if (a.epoch != w->o->epoch && w->log)
            zerg_log_event(w->log, w->o->slot, ZERG_LOG_DEBUG,
                           "assignment_fenced", a.task[0] ? a.task : NULL,
                           NULL, "Worker %d ignored an assignment for epoch "
                           "%" PRIu64 " (its epoch is %" PRIu64 ")",
                           w->o->slot, a.epoch, w->o->epoch);
        break;
    }
}

static void worker_loop(struct worker *w)
{
    w->assign_dirty = 1; /* it may have been written before we were ready */
    while (worker_wait(w, INT64_MAX) == EV_ASSIGN)
        handle_assignment(w);
}

/* ---- setup ---------------------------------------------------------- */

static void warn_stderr(void *ud, const char *msg)
{
    fprintf(stderr, "zerg worker: %s\n", msg);
}

static int setup_signals(struct worker *w)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &w->oldmask);
    w->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (w->sigfd < 0)
        return zerg_err_set(w->err, -errno, "signalfd: %s", strerror(errno));
    /* A parent death now arrives as SIGTERM on the signalfd. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    return 0;
}

/* Exits early when the orchestrator died before PR_SET_PDEATHSIG took
 * effect.  A launch_prefix that forks leaves another parent in between,
 * so a different parent alone is not proof: the pid must be gone too. */
static int check_orphaned(struct worker *w)
{
    if (w->o->orch_pid <= 0 || getppid() == w->o->orch_pid || !orch_gone(w))
        return 0;
    return zerg_err_set(w->err, -ESRCH, "orchestrator gone: process %d no "
                        "longer exists", (int)w->o->orch_pid);
}

static int load_inputs(struct worker *w)
{
    const struct zerg_worker_opts *o = w->o;
    char cfg_path[PATH_MAX], graph_path[PATH_MAX];
    struct zerg_err e = {0};
    zerg_fsio_path(cfg_path, sizeof cfg_path, "%s/.zerg/config.yaml",
                   o->project);
    zerg_fsio_path(graph_path, sizeof graph_path,
                   "%s/.gsd/specs/%s/task-graph.json", o->project, o->feature);
    int rc = zerg_config_load(&w->cfg, o->config_path ? o->config_path
                                                       : cfg_path,
                              warn_stderr, NULL, &e);
    if (rc < 0)
        return zerg_err_set(w->err, rc, "%s", e.msg);
    const char *gp = o->graph_path ? o->graph_path : graph_path;
    rc = zerg_graph_load(&w->graph, gp, &e);
    if (rc < 0)
        return zerg_err_set(w->err, rc, "cannot read task graph %s: %s", gp,
                            rc > -4096 && rc != -EFBIG ? strerror(-rc)
                                                       : e.msg);
    return 0;
}

static int setup_state(struct worker *w)
{
    const struct zerg_worker_opts *o = w->o;
    int rc = 0;
    if (o->state_dir)
        rc = zerg_fsio_path(w->state_dir, sizeof w->state_dir, "%s",
                            o->state_dir);
    else
        rc = zerg_fsio_path(w->state_dir, sizeof w->state_dir,
                            "%s/.zerg/state", o->project);
    if (rc == 0)
        rc = zerg_proto_assign_path(w->assign_path, sizeof w->assign_path,
                                    w->state_dir, o->slot);
    if (rc == 0)
        rc = zerg_fsio_mkdirs(w->state_dir, 0755);
    if (rc < 0)
        return zerg_err_set(w->err, rc, "cannot use state directory %s: %s",
                            w->state_dir, strerror(-rc));
    w->inofd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (w->inofd < 0 ||
        inotify_add_watch(w->inofd, w->state_dir,
                          IN_MOVED_TO | IN_CLOSE_WRITE) < 0)
        return zerg_err_set(w->err, -errno, "cannot watch %s: %s",
                            w->state_dir, strerror(errno));
    return 0;
}

static void setup_timing(struct worker *w)
{
    const struct zerg_worker_opts *o = w->o;
    int64_t now = now_ns(w);
    w->hb_interval_ns = o->heartbeat_interval_ns > 0
                            ? o->heartbeat_interval_ns
                            : w->cfg.heartbeat_interval_ns;
    if (w->hb_interval_ns < WORKER_MIN_HEARTBEAT_NS)
        w->hb_interval_ns = WORKER_MIN_HEARTBEAT_NS;
    w->lease_stale_ns = o->lease_stale_ns > 0 ? o->lease_stale_ns
                                              : ZERG_LEASE_STALE_NS;
    w->poll_ns = o->poll_ns > 0 ? min64(o->poll_ns, WORKER_POLL_NS)
                                : WORKER_POLL_NS;
    w->lease_changed_ns = now;
    w->next_tick_ns = now;
}

static void open_log(struct worker *w)
{
    char dir[PATH_MAX];
    struct zerg_err e = {0};
    if (zerg_fsio_path(dir, sizeof dir, "%s/.zerg", w->o->project) < 0)
        return;
    w->log = zerg_log_open(dir, w->clock, &e);
    /* The default level leaves ZERG_DEBUG=1 in charge. */
    if (w->log && w->cfg.log_level != ZERG_LOG_INFO)
        zerg_log_set_level(w->log, (enum zerg_log_level)w->cfg.log_level);
}

/* Everything before "ready"; returns an exit code. */
static int worker_setup(struct worker *w)
{
    if (setup_signals(w) < 0)
        return ZERG_WORKER_EXIT_ERROR;
    if (check_orphaned(w) < 0)
        return ZERG_WORKER_EXIT_ORPHANED;
    if (load_inputs(w) < 0)
        return ZERG_WORKER_EXIT_SETUP;
    if (setup_state(w) < 0)
        return ZERG_WORKER_EXIT_ERROR;
    setup_timing(w);
    open_log(w);
    w->hb = (struct zerg_heartbeat){
        .worker_id = w->o->slot, .epoch = w->o->epoch, .pid = (int)getpid(),
    };
    snprintf(w->hb.step, sizeof w->hb.step, "ready");
    if (worker_beat(w) < 0) {
        zerg_err_set(w->err, -EIO, "cannot write the ready heartbeat in %s",
                     w->state_dir);
        return ZERG_WORKER_EXIT_ERROR;
    }
    w->ready = 1;
    return ZERG_WORKER_EXIT_OK;
}

static void worker_close(struct worker *w)
{
    if (w->ready) {
        w->hb.task_pgid = 0;
        worker_step(w, "exiting", w->hb.progress_pct);
    }
    zerg_log_close(w->log);
    zerg_graph_free(w->graph);
    zerg_config_free(&w->cfg);
    if (w->inofd >= 0)
        close(w->inofd);
    if (w->sigfd >= 0)
        close(w->sigfd);
    sigprocmask(SIG_SETMASK, &w->oldmask, NULL);
}

int zerg_worker_run(const struct zerg_worker_opts *o, struct zerg_err *err)
{
    struct zerg_err local = {0};
    struct worker w = {
        .o = o, .clock = o->clock ? o->clock : &zerg_clock_system,
        .err = err ? err : &local, .sigfd = -1, .inofd = -1, .task_wd = -1,
        .exit_code = -1, .progress_last = -1,
    };
    sigprocmask(SIG_BLOCK, NULL, &w.oldmask);
    zerg_config_defaults(&w.cfg);
    int rc = worker_setup(&w);
    if (rc == ZERG_WORKER_EXIT_OK) {
        worker_loop(&w);
        rc = w.exit_code;
    }
    worker_close(&w);
    return rc;
}
