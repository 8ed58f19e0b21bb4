/* worker.c - one worker incarnation: ready, wait for an assignment, run
 * it, report, repeat (DESIGN.md sections 8 and 12).  How a task attempt
 * runs is in worker_run.c; how the worker waits (the poll loop,
 * heartbeats, lease, signals) is in worker_wait.c.
 *
 * The worker never outlives its orchestrator: PR_SET_PDEATHSIG and a
 * check of $ZERG_ORCH_PID here at start, then the same check and the
 * lease at every tick of the wait loop.  Nothing a task started outlives
 * the worker either: it is a child subreaper, so the daemons of its tasks
 * stay its descendants, and it kills them after each stage and when it
 * exits (worker_wait.c).
 *
 * SIGPIPE is ignored while the worker runs, so that writing an event line
 * to a reader that went away fails with EPIPE instead of killing it
 * (worker_wait.c); its stages get the default back (worker_run.c), git
 * gets every default from its posix_spawn, and the disposition the
 * worker found is put back when it returns. */
#include "worker_log.h"
#include "worker_run.h"
#include "worker_wait.h"
#include "worker_ws.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "zerg/fsio.h"

#define WORKER_POLL_NS (500 * ZERG_NS_PER_MS)
#define WORKER_MIN_HEARTBEAT_NS (10 * ZERG_NS_PER_MS)

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
        fprintf(stderr, "zerg worker %d: ignoring unreadable %s\n", w->o->slot,
                w->assign_path);
    if (rc < 0)
        return;
    switch (
        zerg_worker_decide(&a, w->o->epoch, w->last_task, w->last_attempt)) {
    case ZERG_ASSIGN_RUN:
        wk_run_task(w, &a);
        /* It may have changed while we worked: inotify says so, or
         * (across a bind mount) a stat.  Unchanged, it says what it
         * said, so it is not read again: run, it may now mean stop. */
        wk_check_assign(w);
        if (!w->assign_dirty &&
            zerg_worker_decide(&a, w->o->epoch, w->last_task,
                               w->last_attempt) == ZERG_ASSIGN_STOP)
            wk_exit(w, ZERG_WORKER_EXIT_OK, NULL);
        break;
    case ZERG_ASSIGN_STOP:
        wk_exit(w, ZERG_WORKER_EXIT_OK, NULL);
        break;
    case ZERG_ASSIGN_IGNORE:
        if (a.epoch != w->o->epoch && w->log)
            zerg_log_event(w->log, w->o->slot, ZERG_LOG_DEBUG,
                           "assignment_fenced", a.task[0] ? a.task : NULL, NULL,
                           "Worker %d ignored an assignment for epoch %" PRIu64
                           " (its epoch is %" PRIu64 ")",
                           w->o->slot, a.epoch, w->o->epoch);
        break;
    }
}

static void worker_loop(struct worker *w)
{
    w->assign_dirty = 1; /* it may have been written before we were ready */
    while (wk_wait(w, INT64_MAX) == EV_ASSIGN)
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
    /* Orphans of our tasks become our children instead of init's. */
    prctl(PR_GET_CHILD_SUBREAPER, &w->was_subreaper);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    w->pipe_set = sigaction(SIGPIPE, &ign, &w->old_pipe) == 0;
    return 0;
}

/* Exits early when the orchestrator died before PR_SET_PDEATHSIG took
 * effect.  A launch_prefix that forks leaves another parent in between,
 * so a different parent alone is not proof: the pid must be gone too. */
static int check_orphaned(struct worker *w)
{
    if (w->o->orch_pid <= 0 || getppid() == w->o->orch_pid || !wk_orch_gone(w))
        return 0;
    return zerg_err_set(w->err, -ESRCH,
                        "orchestrator gone: process %d no longer exists",
                        (int)w->o->orch_pid);
}

/* `zerg rush --executor CMD` reaches the worker as $ZERG_EXECUTOR and
 * replaces workers.executor, split on whitespace like a string value of
 * that key. */
static int executor_override(struct zerg_argv *ex)
{
    const char *s = getenv("ZERG_EXECUTOR");
    char *copy, *save = NULL;
    size_t n = 0;

    if (!s || !*s)
        return 0;
    if (!(copy = strdup(s)))
        return -ENOMEM;
    char **v = calloc(strlen(s) / 2 + 2, sizeof *v);
    if (!v) {
        free(copy);
        return -ENOMEM;
    }
    for (char *tok = strtok_r(copy, " \t", &save); tok;
         tok = strtok_r(NULL, " \t", &save))
        if (!(v[n++] = strdup(tok)))
            break;
    free(copy);
    for (size_t i = 0; i < ex->n; i++)
        free(ex->v[i]);
    free(ex->v);
    ex->v = v;
    ex->n = n;
    return 0;
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
    int rc =
        zerg_config_load(&w->cfg, o->config_path ? o->config_path : cfg_path,
                         warn_stderr, NULL, &e);
    if (rc < 0)
        return zerg_err_set(w->err, rc, "%s", e.msg);
    if (getenv("ZERG_EXECUTOR") && *getenv("ZERG_EXECUTOR"))
        w->cfg.executor_kind = ZERG_EXECUTOR_COMMAND; /* --executor CMD */
    if (executor_override(&w->cfg.executor) < 0)
        return zerg_err_set(w->err, -ENOMEM, "out of memory");
    const char *gp = o->graph_path ? o->graph_path : graph_path;
    /* Opened, not read: the orchestrator validated it, and each
     * assignment says where its task is (worker_run.c). */
    snprintf(w->graph_path, sizeof w->graph_path, "%s", gp);
    w->graph_fd = rc = zerg_fsio_open_input(gp, &e);
    if (rc < 0)
        return zerg_err_set(w->err, rc, "cannot read task graph %s: %s", gp,
                            rc > -4096 ? strerror(-rc) : e.msg);
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
                            "%s/.zerg/state/%s", o->project, o->feature);
    if (rc == 0)
        rc = zerg_proto_assign_path(w->assign_path, sizeof w->assign_path,
                                    w->state_dir, o->slot);
    char slot_dir[PATH_MAX];
    if (rc == 0)
        rc = zerg_proto_slot_dir(slot_dir, sizeof slot_dir, w->state_dir,
                                 o->slot);
    if (rc == 0)
        rc = zerg_fsio_mkdirs(slot_dir, 0755);
    if (rc < 0)
        return zerg_err_set(w->err, rc, "cannot use state directory %s: %s",
                            w->state_dir, strerror(-rc));
    /* Only our slot's directory: the others' traffic never wakes us. */
    w->inofd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (w->inofd < 0 ||
        inotify_add_watch(w->inofd, slot_dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0)
        return zerg_err_set(w->err, -errno, "cannot watch %s: %s", slot_dir,
                            strerror(errno));
    return 0;
}

static void setup_timing(struct worker *w)
{
    const struct zerg_worker_opts *o = w->o;
    int64_t now = wk_now_ns(w);
    w->hb_interval_ns = o->heartbeat_interval_ns > 0
                            ? o->heartbeat_interval_ns
                            : w->cfg.heartbeat_interval_ns;
    if (w->hb_interval_ns < WORKER_MIN_HEARTBEAT_NS)
        w->hb_interval_ns = WORKER_MIN_HEARTBEAT_NS;
    w->lease_stale_ns =
        o->lease_stale_ns > 0 ? o->lease_stale_ns : w->cfg.lease_stale_ns;
    w->poll_ns = o->poll_ns > 0 && o->poll_ns < WORKER_POLL_NS ? o->poll_ns
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
    if (w->log)
        zerg_log_set_feature(w->log, w->o->feature);
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
    if (wk_ws_setup(w) < 0)
        return ZERG_WORKER_EXIT_SETUP;
    setup_timing(w);
    open_log(w);
    w->hb = (struct zerg_heartbeat){
        .worker_id = w->o->slot,
        .epoch = w->o->epoch,
        .pid = (int)w->self,
    };
    snprintf(w->hb.step, sizeof w->hb.step, "ready");
    snprintf(w->hb.run_id, sizeof w->hb.run_id, "%s",
             w->o->run_id ? w->o->run_id : "");
    if (wk_beat(w) < 0) {
        zerg_err_set(w->err, -EIO, "cannot write the ready heartbeat in %s",
                     w->state_dir);
        return ZERG_WORKER_EXIT_ERROR;
    }
    w->ready = 1;
    return ZERG_WORKER_EXIT_OK;
}

static void worker_close(struct worker *w)
{
    wk_kill_strays(w);
    if (w->was_subreaper >= 0)
        prctl(PR_SET_CHILD_SUBREAPER, w->was_subreaper);
    if (w->ready) {
        w->hb.task_pgid = 0;
        wk_step(w, "exiting", w->hb.progress_pct);
    }
    zerg_log_close(w->log);
    zerg_graph_free(w->graph);
    if (w->graph_fd >= 0)
        close(w->graph_fd);
    zerg_config_free(&w->cfg);
    if (w->inofd >= 0)
        close(w->inofd);
    if (w->sigfd >= 0)
        close(w->sigfd);
    wk_log_dir_close(w);
    if (w->null_fd >= 0)
        close(w->null_fd);
    if (w->pipe_set)
        sigaction(SIGPIPE, &w->old_pipe, NULL);
    sigprocmask(SIG_SETMASK, &w->oldmask, NULL);
}

int zerg_worker_run(const struct zerg_worker_opts *o, struct zerg_err *err)
{
    struct zerg_err local = {0};
    struct worker w = {
        .o = o,
        .clock = o->clock ? o->clock : &zerg_clock_system,
        .err = err ? err : &local,
        .self = getpid(),
        .sigfd = -1,
        .inofd = -1,
        .graph_fd = -1,
        .task_wd = -1,
        .tasks_fd = -1,
        .null_fd = -1,
        .out_fd = -1,
        .exit_code = -1,
        .was_subreaper = -1,
        .progress_last = -1,
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
