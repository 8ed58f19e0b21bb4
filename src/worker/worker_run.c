/* worker_run.c - one attempt of a task on a worker (DESIGN.md section 8):
 * stage 1 is the task's command (or the executor with the prompt), stage 2
 * its verification command with its timeout; output goes to
 * .zerg/logs/{feature}/tasks/{id}/attempt-{n}.log; the result file is written
 * durably at the end.  The task is complete only if both stages exit 0.
 *
 * Every stage runs in its own process group.  The child creates the group
 * and publishes it in a heartbeat (task_pgid) before it execs the task,
 * so there is no instant at which the orchestrator could not kill the
 * whole task.  Where the launcher relays event lines that beat is a line
 * in the pipe, which the orchestrator reads before it handles the
 * worker's exit, and its file follows within 50 ms (a short stage has
 * ended by then and the file is never written: one file fewer per
 * task); where the line cannot go (no relay, a full pipe), the file is
 * written at once.  After a stage ends -- success, failure, timeout, or
 * a stop (SIGTERM, then workers.stop_grace_seconds for the task to end by
 * itself) -- the group is SIGKILLed before the leader is reaped: until
 * then its pid, and so the group id, cannot be reused, and nothing the
 * task started in the background survives it.  What left the group
 * (setsid, a double fork) was re-parented to the worker, a child
 * subreaper, and is killed next (wk_kill_strays), before the next stage.
 * The child also sets PR_SET_PDEATHSIG (SIGKILL), so a stage never
 * outlives its worker, and undoes what the worker set for itself: it
 * clears the signal mask and gives SIGPIPE its default disposition back.
 *
 * That child is a vfork(2) child.  A fork of the worker cost about 160 us
 * per stage here (its page tables copied, then torn down by the exec);
 * posix_spawn is as cheap but cannot set PR_SET_PDEATHSIG nor write the
 * heartbeat.  A vfork child runs in the worker's memory while the worker
 * is held until the exec, so it can do what the worker would have done
 * after a fork -- write the heartbeat naming its own group, with the
 * worker's own code and state (the sequence number it advances is the
 * worker's) -- and the worker resumes with everything as if it had
 * written it itself.  That is sound because the worker is one thread, is
 * held, and the child keeps every signal blocked until the exec (the
 * worker's dispositions are defaults or ignored, and its own are the
 * child's copy: no CLONE_SIGHAND), and it never returns from
 * stage_child.  What the child opens or closes is in its own fd table:
 * the event fd is set up before (wk_events_start); if the child finds
 * the event pipe gone it only turns events off for the worker.
 *
 * Heartbeats of an attempt: one when each stage starts (it publishes the
 * group, see above) and one after the result ("idle": no task, no group,
 * which the orchestrator's lost-result path relies on).  None just before
 * the result: the result says more, and tells the orchestrator that the
 * group is gone.  The idle beat, too, is a line whose file follows
 * within 50 ms when the result was written (the file then says nothing
 * the result did not), at once when it was not.  In a stream of short
 * tasks a worker so writes a heartbeat file every 50 ms, not two per
 * task.
 *
 * While a stage runs the worker waits in worker_wait.c (heartbeats and the
 * lease go on); nothing here calls back into worker.c. */
#include "worker_run.h"
#include "worker_agent.h"
#include "worker_log.h"
#include "worker_ws.h"
#include "worker_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zerg/fsio.h"

extern char **environ;

/* After TERM for a CLI that did not exit after its terminal event. */
#define SETTLE_KILL_NS (2 * ZERG_NS_PER_S)

/* ---- stages --------------------------------------------------------- */

/* What one attempt of a task needs while it runs. */
struct task_run {
    const struct zerg_task *task;
    int attempt;
    const char *review_note; /* the assignment's, "" = none */
    struct wk_log log;
    char log_dir[PATH_MAX];
    char **envp;
    int in_fd; /* the next stage's stdin (the prompt), -1: /dev/null */
};

/* What the vfork child needs. */
struct vchild {
    struct worker *w;
    struct stage *st;
    int log_fd, in_fd, is_executor, progress;
    char **argv, **envp;
};

/* In the vfork child: own group, die with the worker, publish the group
 * (an event line, else the heartbeat file), then exec.  Never returns. */
static void stage_child(struct vchild *c)
{
    struct worker *w = c->w;
    sigset_t none;
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != w->self)
        _exit(127);
    c->st->pid = getpid();
    w->stage = c->st;
    w->hb.task_pgid = c->st->pid;
    wk_step_line(w, c->st->name, c->progress);
    int null_fd = c->in_fd >= 0     ? c->in_fd
                  : w->null_fd >= 0 ? w->null_fd
                                    : open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(c->log_fd, 1) < 0 ||
        dup2(c->log_fd, 2) < 0)
        _exit(127);
    if (null_fd != w->null_fd && null_fd != c->in_fd && null_fd > 2)
        close(null_fd); /* the worker's own are O_CLOEXEC */
    if (chdir(w->workdir) < 0) {
        dprintf(2, "zerg: cannot enter %s: %s\n", w->workdir, strerror(errno));
        _exit(127);
    }
    signal(SIGPIPE, SIG_DFL); /* ignored by the worker only */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (c->is_executor)
        execvpe(c->argv[0], c->argv, c->envp);
    else
        execve(c->argv[0], c->argv, c->envp);
    dprintf(2, "zerg: cannot execute %s: %s\n", c->argv[0], strerror(errno));
    _exit(127);
}

/* /dev/null for the stages' stdin, opened once, above fd 2 so that the
 * child's dup2 onto 0 always makes a copy without O_CLOEXEC. */
static void open_null(struct worker *w)
{
    if (w->null_fd >= 0)
        return;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && fd <= 2) {
        w->null_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        close(fd);
    } else {
        w->null_fd = fd;
    }
}

/* The stage's header in the log, one write: what runs, when, and the
 * command (/bin/sh -c CMD: CMD as written; an executor: its argv). */
static void log_header(struct worker *w, const struct stage *st,
                       struct task_run *run, char **argv, int is_executor)
{
    char ts[ZERG_TS_MAX], *text = NULL;
    size_t len = 0;
    zerg_clock_iso8601(zerg_clock_wall(w->clock), ts);
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    fprintf(f, "==== zerg: %s of task %s, attempt %d, worker %d, %s\n",
            st->name, run->task->id, run->attempt, w->o->slot, ts);
    if (!is_executor)
        fprintf(f, "$ %s\n", argv[2]);
    for (char **a = argv; is_executor && *a; a++)
        fprintf(f, "%s%s%s", a == argv ? "$ " : " ", *a, a[1] ? "" : "\n");
    if (fclose(f) == 0)
        wk_log_write(&run->log, text, len);
    free(text);
}

/* Starts argv as the stage st (stdin: in_fd, -1 for /dev/null); 0 or
 * -errno (nothing left running). */
static int stage_start(struct worker *w, struct stage *st, struct task_run *run,
                       char **argv, int is_executor, int progress)
{
    struct vchild c = {.w = w,
                       .st = st,
                       .log_fd = run->log.fd,
                       .in_fd = run->in_fd,
                       .is_executor = is_executor,
                       .progress = progress,
                       .argv = argv,
                       .envp = run->envp};
    sigset_t all, old;
    log_header(w, st, run, argv, is_executor);
    open_null(w);
    wk_events_start();
    /* Blocked in the child until its exec (see the top of this file). */
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    pid_t pid = vfork();
    if (pid == 0)
        stage_child(&c);
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        w->stage = NULL;
        w->hb.task_pgid = 0;
        return -e;
    }
    /* The child published the group and set st->pid and w->stage, unless
     * it died first; either way the group is pid's. */
    st->pid = pid;
    w->stage = st;
    w->hb.task_pgid = pid;
    st->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    return 0;
}

/* The agent's terminal event came and the CLI did not exit within the
 * grace (DESIGN §20): TERM to its group now, KILL when this returns 1
 * again 2 s later.  0 when the deadline was the stage's own. */
static int settle(struct worker *w, struct stage *st)
{
    int64_t now = wk_now_ns(w);
    if (now < st->settle_ns || st->settle_ns == INT64_MAX)
        return 0;
    if (st->settled)
        return 1;
    kill(-st->pid, SIGTERM);
    st->settled = 1;
    st->settle_ns = now + SETTLE_KILL_NS;
    return 2;
}

/* The worker is leaving (a stop signal, its orchestrator gone) while the
 * stage runs: SIGTERM to the stage's group, which gets
 * workers.stop_grace_seconds to end by itself (a handler can finish its
 * write) before the caller's SIGKILL. */
static void stage_stop(struct worker *w, struct stage *st, struct task_run *run)
{
    int64_t grace = w->cfg.stop_grace_ns;
    if (grace <= 0 || wk_wait_stage_end(w, 0)) /* 1: it ended already */
        return;
    wk_log_printf(&run->log,
                  "==== zerg: stopping: SIGTERM to the %s, SIGKILL after "
                  "%.1f s\n",
                  st->name, zerg_ns_to_s(grace));
    kill(-st->pid, SIGTERM);
    if (wk_wait_stage_end(w, wk_now_ns(w) + grace))
        return;
    wk_log_printf(&run->log,
                  "==== zerg: the %s did not end within %.1f s of SIGTERM: "
                  "SIGKILL\n",
                  st->name, zerg_ns_to_s(grace));
    if (!w->log)
        return;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "grace", zerg_ns_to_s(grace));
    zerg_log_event(w->log, w->o->slot, ZERG_LOG_WARN, "stop_grace_over",
                   run->task->id, data,
                   "Worker %d: task %s did not end within %gs of SIGTERM: "
                   "SIGKILL",
                   w->o->slot, run->task->id, zerg_ns_to_s(grace));
}

/* Waits for the stage (heartbeats go on), kills its group, reaps it. */
static void stage_wait(struct worker *w, struct stage *st, struct task_run *run)
{
    for (;;) {
        int ev = wk_wait(w, st->deadline_ns);
        int s = ev == EV_DEADLINE ? settle(w, st) : 0;
        if (s == 2)
            continue; /* TERM sent: the CLI may still exit on its own */
        if (ev == EV_DEADLINE && !s)
            st->timed_out = 1;
        if (ev == EV_EXIT)
            stage_stop(w, st, run);
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
    wk_kill_strays(w);
}

/* Runs one stage to its end; fills r on failure.  0 when it exited 0. */
static int stage_run(struct worker *w, struct task_run *run, const char *name,
                     char **argv, int is_executor, int progress,
                     int64_t timeout_ns, struct zerg_result *r)
{
    struct stage st = {.name = name,
                       .pidfd = -1,
                       .deadline_ns = INT64_MAX,
                       .settle_ns = INT64_MAX};
    int64_t start = wk_now_ns(w);
    if (timeout_ns > 0)
        st.deadline_ns = start + timeout_ns;
    snprintf(r->stage, sizeof r->stage, "%s", name);
    int rc = stage_start(w, &st, run, argv, is_executor, progress);
    if (rc < 0) {
        r->exit_code = -1;
        snprintf(r->error, sizeof r->error, "cannot start %s: %s", name,
                 strerror(-rc));
        return -1;
    }
    stage_wait(w, &st, run);
    run->log.size = -1; /* the stage wrote to it too */
    char what[160] = "exited with code 0";
    if (st.settled) {
        /* Ended by zerg after its terminal event: the result stands. */
        int ok = w->stream.sum.has_result && !w->stream.sum.result.is_error;
        r->exit_code = ok ? 0 : 1, r->signal = 0;
        snprintf(what, sizeof what,
                 "did not exit %.1f s after its result and was ended; the "
                 "result stands (%s)",
                 zerg_ns_to_s(w->cfg.executor_exit_grace_ns),
                 ok ? "success" : "an error");
    } else if (st.timed_out) {
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
    wk_log_printf(&run->log, "==== zerg: %s %s after %.3f s\n", name, what,
                  zerg_ns_to_s(wk_now_ns(w) - start));
    if (r->exit_code == 0)
        return 0;
    snprintf(r->error, sizeof r->error, "%s %s", name, what);
    return -1;
}

/* ---- one task attempt ----------------------------------------------- */

/* The attempt's log (worker_log.c) and the path of its progress file. */
static int open_task_log(struct worker *w, struct task_run *run,
                         struct zerg_err *err)
{
    int rc = wk_log_open(w, run->task->id, run->attempt, run->log_dir,
                         sizeof run->log_dir, &run->log, err);
    if (rc == 0)
        rc = zerg_fsio_path(w->progress_path, sizeof w->progress_path,
                            "%s/attempt-%d.progress", run->log_dir,
                            run->attempt);
    return rc;
}

/* Opens the attempt's log and builds its environment. */
static int run_open(struct worker *w, struct task_run *run,
                    struct zerg_result *r)
{
    struct zerg_err err = {0};
    const char *id = run->task->id;
    int rc = open_task_log(w, run, &err);
    if (rc < 0) {
        snprintf(r->error, sizeof r->error,
                 "cannot open the task log of %s: %.180s", id,
                 err.msg[0] ? err.msg : zerg_strerror(rc));
        return rc;
    }
    unlink(w->progress_path); /* a rerun must not inherit old progress */
    w->progress_last = -1;
    struct zerg_task_env e = {
        .task_id = id,
        .worker_id = w->o->slot,
        .feature = w->o->feature,
        .attempt = run->attempt,
        .epoch = w->o->epoch,
        .run_id = w->o->run_id,
        .progress_file = w->progress_path,
        .review_note = run->review_note,
    };
    /* What the agent CLI needs around it (Gemini: a trusted worktree);
     * a task's own command runs in the worker's environment. */
    if (!run->task->command && zerg_agent_for(&w->cfg))
        e.extra = zerg_agent_for(&w->cfg)->env;
    run->envp = zerg_worker_task_env(environ, &e);
    w->task_wd =
        inotify_add_watch(w->inofd, run->log_dir, IN_CLOSE_WRITE | IN_MOVED_TO);
    if (!run->envp) {
        snprintf(r->error, sizeof r->error, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

static void run_close(struct worker *w, struct task_run *run)
{
    w->out_fd = -1;
    wk_unwatch_task(w);
    w->progress_path[0] = '\0';
    if (run->log.fd >= 0)
        close(run->log.fd);
    zerg_worker_argv_free(run->envp);
}

/* Output counts as progress from here (every event of an agent): growth
 * past the size the log has now, known unless a stage wrote to it. */
static void watch_output(struct worker *w, const struct task_run *run,
                         int agent)
{
    struct stat st;
    w->out_fd = agent || w->cfg.output_is_progress ? run->log.fd : -1;
    if (w->out_fd < 0)
        w->out_size = 0;
    else if (run->log.size >= 0)
        w->out_size = run->log.size;
    else
        w->out_size = fstat(w->out_fd, &st) == 0 ? st.st_size : 0;
}

/* Stage 1: the task's command, else the executor with the prompt. */
static int run_command(struct worker *w, struct task_run *run,
                       const struct zerg_assign *a, struct zerg_result *r)
{
    const struct zerg_task *t = run->task;
    int rc = -1;
    if (t->command) {
        char *argv[] = {"/bin/sh", "-c", t->command, NULL};
        watch_output(w, run, 0);
        rc = stage_run(w, run, "command", argv, 0, 10, 0, r);
        wk_agent_finish(w, run->log.fd, 0, rc < 0, r);
        return rc;
    }
    /* A resume continues the dead attempt's session, as its CLI saw it:
     * from the same directory, by its real path. */
    char sid[64] = "", cwd[PATH_MAX];
    if (a->resume && realpath(w->workdir, cwd))
        wk_agent_session(w, run->log_dir, run->attempt, cwd, sid, sizeof sid);
    char *prompt = sid[0] ? wk_agent_resume_prompt(w, t, a, run->log_dir)
                          : wk_agent_prompt(w, t, a, run->log_dir);
    if (prompt)
        wk_agent_save_prompt(run->log_dir, run->attempt, prompt);
    /* An agent CLI reads the prompt on stdin (no argv limit); a command
     * executor gets it as its last argument. */
    if (prompt && zerg_agent_for(&w->cfg))
        run->in_fd = wk_agent_prompt_fd(run->log_dir, run->attempt);
    char **argv =
        prompt ? wk_agent_argv(w, prompt, run->in_fd >= 0, sid) : NULL;
    watch_output(w, run, 1);
    if (argv && wk_agent_too_long(w, prompt, run->in_fd >= 0, r)) {
        zerg_worker_argv_free(argv);
        argv = NULL;
    } else if (!argv) {
        snprintf(r->error, sizeof r->error,
                 "task has no command and workers.executor is empty");
    }
    if (argv) {
        wk_agent_stream_start(w, run->log.fd, w->out_size);
        rc = stage_run(w, run, "command", argv, 1, 10, 0, r);
        wk_stream_finish(&w->stream, wk_now_ns(w));
        wk_agent_finish(w, run->log.fd, 1, rc < 0, r);
        wk_stream_reset(&w->stream);
    }
    if (run->in_fd >= 0)
        close(run->in_fd);
    run->in_fd = -1;
    zerg_worker_argv_free(argv);
    free(prompt);
    return rc;
}

static int run_verification(struct worker *w, struct task_run *run,
                            struct zerg_result *r)
{
    const struct zerg_task *t = run->task;
    char *argv[] = {"/bin/sh", "-c", t->verify_command, NULL};
    watch_output(w, run, 0);
    int rc =
        stage_run(w, run, "verification", argv, 0, 80, t->verify_timeout_ns, r);
    if (rc < 0)
        wk_agent_finish(w, run->log.fd, 0, 1, r);
    return rc;
}

/* An agent costs money and minutes: a verification /bin/sh cannot even
 * parse (bash's <(...) under dash) would fail the attempt after the agent
 * ran, every attempt.  It is parsed first (`sh -n`, about 1 ms) and such
 * an attempt fails before the agent starts.  Command tasks are cheap and
 * need no such check. */
static int check_verification(struct worker *w, struct task_run *run,
                              struct zerg_result *r)
{
    const struct zerg_task *t = run->task;
    if (t->command || !t->verify_command || !*t->verify_command)
        return 0;
    char *argv[] = {"/bin/sh", "-nc", t->verify_command, NULL};
    if (stage_run(w, run, "verification", argv, 0, 5, 10 * ZERG_NS_PER_S, r) ==
        0)
        return 0;
    snprintf(r->error, sizeof r->error,
             "the verification command cannot be parsed by /bin/sh (sh -n "
             "exited %d; bash syntax such as <(...)? wrap it as bash -c "
             "'...'): the agent was not run",
             r->exit_code);
    return -1;
}

/* Runs both stages of one attempt (in its worktree, set up before and
 * committed after, under worktree isolation) and fills r. */
static void run_stages(struct worker *w, const struct zerg_task *t,
                       const struct zerg_assign *a, struct zerg_result *r)
{
    struct task_run run = {.task = t,
                           .attempt = a->attempt,
                           .review_note = a->review_note,
                           .log = {.fd = -1, .size = -1},
                           .in_fd = -1};
    snprintf(r->stage, sizeof r->stage, "setup");
    if (wk_ws_before(w, a, r) < 0 || run_open(w, &run, r) < 0 ||
        check_verification(w, &run, r) < 0)
        goto out;
    if (run_command(w, &run, a, r) < 0 || w->exit_code >= 0)
        goto out;
    if (t->verify_command && *t->verify_command &&
        run_verification(w, &run, r) < 0)
        goto out;
    if (wk_ws_after(w, t, a->attempt, r) < 0)
        goto out;
    r->outcome = ZERG_OUTCOME_COMPLETE;
out:
    run_close(w, &run);
}

/* The heartbeat's spend belongs to one attempt (worker_wait.c fills it
 * from the stream). */
static void hb_spend_clear(struct worker *w)
{
    w->hb.input_tokens = w->hb.output_tokens = 0;
    w->hb.cache_read_tokens = w->hb.cache_write_tokens = 0;
    w->hb.cost_usd = 0;
    w->hb.activity[0] = '\0';
    w->hb.tool_calls = 0;
}

/* The whole graph, read once, for assignments that do not say where
 * their task is. */
static const struct zerg_task *task_in_graph(struct worker *w,
                                             const struct zerg_assign *a,
                                             struct zerg_result *r)
{
    struct zerg_err e = {0};
    int rc = w->graph ? 0 : zerg_graph_load(&w->graph, w->graph_path, &e);
    ssize_t idx = rc < 0 ? -1 : zerg_graph_find(w->graph, a->task);
    if (idx >= 0)
        return &w->graph->tasks[idx];
    if (rc < 0)
        snprintf(r->error, sizeof r->error,
                 "cannot read the task graph: %.180s", e.msg);
    else
        snprintf(r->error, sizeof r->error, "task %s is not in the task graph",
                 a->task);
    return NULL;
}

/* The assigned task: read alone from where the assignment says it is in
 * the graph file (*one gets it, the caller frees it), so that the
 * worker's memory does not grow with the graph; else from the whole
 * graph.  NULL with r->error set when there is none. */
static const struct zerg_task *task_of(struct worker *w,
                                       const struct zerg_assign *a,
                                       struct zerg_graph **one,
                                       struct zerg_result *r)
{
    struct zerg_err e = {0};
    *one = NULL;
    if (!a->task_len)
        return task_in_graph(w, a, r);
    int rc = zerg_graph_read_task(one, w->graph_fd, w->graph_path, a->task,
                                  a->task_off, a->task_len, a->task_hash, &e);
    if (rc == 0)
        return &(*one)->tasks[0];
    if (rc != -ESTALE) {
        snprintf(r->error, sizeof r->error, "cannot read task %s: %.150s",
                 a->task, e.msg[0] ? e.msg : strerror(-rc));
        return NULL;
    }
    if (!w->graph_changed_said++)
        fprintf(stderr,
                "zerg worker %d: %s changed since the rush read it: "
                "reading it whole\n",
                w->o->slot, w->graph_path);
    return task_in_graph(w, a, r);
}

void wk_run_task(struct worker *w, const struct zerg_assign *a)
{
    int64_t start = wk_now_ns(w);
    struct zerg_result r = {
        .epoch = w->o->epoch,
        .worker_id = w->o->slot,
        .attempt = a->attempt,
        .outcome = ZERG_OUTCOME_FAILED,
    };
    struct zerg_err e = {0};
    snprintf(r.task, sizeof r.task, "%s", a->task);
    snprintf(r.run_id, sizeof r.run_id, "%s", w->o->run_id ? w->o->run_id : "");
    snprintf(w->last_task, sizeof w->last_task, "%s", a->task);
    w->last_attempt = a->attempt;
    snprintf(w->hb.task_id, sizeof w->hb.task_id, "%s", a->task);
    w->hb.attempt = a->attempt;
    hb_spend_clear(w);
    struct zerg_graph *one;
    const struct zerg_task *t = task_of(w, a, &one, &r);
    if (!t)
        snprintf(r.stage, sizeof r.stage, "setup");
    else
        run_stages(w, t, a, &r);
    zerg_graph_free(one);
    if (w->exit_code >= 0)
        return; /* interrupted: the orchestrator sees the worker exit */
    r.duration_ms = (wk_now_ns(w) - start) / ZERG_NS_PER_MS;
    /* A full disk is often momentary (logs rotated, a build's temp files
     * removed): try for about two seconds before giving up.  A result that
     * never arrives is requeued, uncharged, by the orchestrator when it
     * sees this worker idle. */
    int lost = 0;
    /* Under state.durability: batch the orchestrator syncs the results it
     * applied, one sync per batch instead of two fsyncs per task here. */
    int flags = w->cfg.state_durability == ZERG_DURABILITY_FULL
                    ? ZERG_FSIO_DURABLE
                    : ZERG_FSIO_NOSYNC;
    for (int tries = 0; wk_log_result(w, &r, flags, &e) < 0; tries++) {
        if (tries == 20) {
            fprintf(stderr, "zerg worker %d: %s\n", w->o->slot, e.msg);
            lost = 1;
            break;
        }
        nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
    }
    if (!lost)
        wk_event_result(&r); /* the journal file first, then the line */
    /* The one beat after the result: no task (a lost result is requeued
     * on seeing it) and no group (it is reaped: its id may be reused).
     * A result on disk says both to the orchestrator, so then the file
     * of this beat may wait (see the top of this file). */
    w->hb.task_id[0] = '\0';
    w->hb.attempt = 0;
    hb_spend_clear(w);
    if (lost)
        wk_step(w, "idle", 0);
    else
        wk_step_line(w, "idle", 0);
}
