/* orch_gate.c - quality gates (DESIGN §13): after a level is merged, each
 * gate of `quality_gates` runs on the integration tip in a worktree of
 * its own, one after the other.  The loop never blocks on one: a gate is
 * a child process polled from the tick, so leases, heartbeats and signals
 * keep flowing while a 5-minute test suite runs.  A required gate that
 * fails ends the rush with exit 1 and its output's tail; a failing
 * optional one is a warning.  Nothing is persisted: on --resume a level
 * that is done but whose gates did not pass simply runs them again.
 *
 * Where a gate runs (DESIGN §19): a gate runs what the tasks wrote, so it
 * runs where they ran.  A launcher whose workers run elsewhere (container
 * mode) gives the gate's argv (gate_argv) and ends what a timeout leaves
 * (gate_stop); without those, or with gates.on_host, it is /bin/sh on the
 * host.
 *
 * One gate's life: IDLE -> RUNNING -> (pass: next gate | fail | timeout). */
#include "orch_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/launcher.h"
#include "zerg/workspace.h"

#define GATE_POLL_NS (50 * ZERG_NS_PER_MS)

extern char **environ;

static void gate_log_path(const struct zerg_orch *o, int lvl,
                          const struct zerg_gate *g, char *buf, size_t n)
{
    zerg_fsio_path(buf, n, "%s/.zerg/logs/%s/gates/level-%d-%s.log",
                   o->o.project, o->o.feature, lvl, g->name);
}

static int open_gate_log(const struct zerg_orch *o, const char *path,
                         struct zerg_err *err)
{
    char dir[PATH_MAX], rel[PATH_MAX];
    zerg_fsio_path(dir, sizeof dir, "%s/.zerg/logs", o->o.project);
    zerg_fsio_path(rel, sizeof rel, "%s/gates", o->o.feature);
    int rc = zerg_fsio_mkdirs_under(dir, rel, 0755, err);
    if (rc < 0)
        return rc;
    int fd =
        open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return zerg_err_set(err, -errno, "cannot write %s: %s", path,
                            strerror(errno));
    return fd;
}

/* The top of the gate worktree holding dir (a monorepo runs gates in the
 * project's path inside it): the nearest directory with a .git entry. */
static void gate_top(const char *dir, char *top, size_t n)
{
    char probe[PATH_MAX + 8];
    snprintf(top, n, "%s", dir);
    for (;;) {
        struct stat st;
        snprintf(probe, sizeof probe, "%s/.git", top);
        char *slash = strrchr(top, '/');
        if (!lstat(probe, &st) || !slash || slash == top)
            return;
        *slash = '\0';
    }
}

/* The gate's argv: in a container where the launcher runs its workers in
 * one (DESIGN §19), else /bin/sh on the host.  0 or negative. */
static int gate_argv(struct zerg_orch *o, int lvl, const struct zerg_gate *g,
                     const char *dir, char *host[4], struct zerg_argv *argv,
                     struct zerg_err *err)
{
    const struct zerg_launcher_ops *ops = o->o.launcher->ops;
    o->gate_handle[0] = '\0';
    if (!ops->gate_argv || o->cfg->gates_on_host) {
        host[0] = "/bin/sh", host[1] = "-c", host[2] = g->command;
        host[3] = NULL;
        argv->v = host, argv->n = 3;
        return 0;
    }
    char top[PATH_MAX];
    gate_top(dir, top, sizeof top);
    struct zerg_gate_req req = {
        .feature = o->o.feature,
        .run_id = o->s->run_id,
        .project = o->o.project,
        .name = g->name,
        .level = lvl,
        .dir = dir,
        .top = top,
        .git_dir = o->o.workspace->git_dir[0] ? o->o.workspace->git_dir : NULL,
        .command = g->command,
    };
    return ops->gate_argv(o->o.launcher, &req, argv, o->gate_handle,
                          sizeof o->gate_handle, err);
}

static int gate_spawn(struct zerg_orch *o, const char *dir, int fd,
                      char *const *argv)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    posix_spawn_file_actions_addchdir_np(&fa, dir);
    posix_spawnattr_init(&at);
    posix_spawnattr_setpgroup(&at, 0);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at,
                             POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    int rc = posix_spawnp(&o->gate_pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    return rc;
}

static void gate_log_start(struct zerg_orch *o, int lvl,
                           const struct zerg_gate *g)
{
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "gate", g->name);
    zerg_json_set_num(data, "level", lvl);
    zerg_json_set_str(data, "commit", o->ws_tip);
    zerg_json_set_str(data, "where", o->gate_handle[0] ? "container" : "host");
    if (o->gate_handle[0])
        zerg_json_set_str(data, "container", o->gate_handle);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "gate_start", NULL,
                   data, "Gate %s started on %.12s after level %d%s", g->name,
                   o->ws_tip, lvl, o->gate_handle[0] ? " in a container" : "");
}

/* Starts gate o->gate_idx of level lvl; 0 or negative with err set. */
static int gate_start(struct zerg_orch *o, int lvl, int64_t now,
                      struct zerg_err *err)
{
    const struct zerg_gate *g = &o->cfg->gates[o->gate_idx];
    char dir[PATH_MAX], log[PATH_MAX];
    struct zerg_argv argv = {NULL, 0};
    char *host[4];
    int rc =
        o->o.workspace->ops->gate_tree(o->o.workspace, dir, sizeof dir, err);
    if (rc < 0)
        return rc;
    gate_log_path(o, lvl, g, log, sizeof log);
    int fd = open_gate_log(o, log, err);
    if (fd < 0)
        return fd;
    rc = gate_argv(o, lvl, g, dir, host, &argv, err);
    int e = rc == 0 ? gate_spawn(o, dir, fd, argv.v) : 0;
    close(fd);
    if (argv.v != host)
        zerg_container_argv_free(&argv);
    if (e)
        rc = zerg_err_set(err, -e, "cannot start gate %s: %s", g->name,
                          strerror(e));
    if (rc < 0)
        return rc;
    o->gate_deadline_mono_ns = now + g->timeout_ns;
    o->gate_started_mono_ns = now;
    gate_log_start(o, lvl, g);
    return 0;
}

/* The run ends: a required gate failed (or could not run). */
static void gate_stops_run(struct zerg_orch *o, const char *msg, int64_t now)
{
    o->gate_failed = 1;
    orch_run_fail(o, "%s", msg);
    /* Under rush.schedule dag tasks of later levels may be running: the
     * run is closed, they finish and it stops once none is left.  Under
     * levels nothing runs beside a gate. */
    orch_run_event(o, o->dag ? RUN_EV_CLOSE : RUN_EV_STOP, 0, now);
}

static void gate_ended(struct zerg_orch *o, int lvl, int status, int timed_out,
                       int64_t now)
{
    const struct zerg_gate *g = &o->cfg->gates[o->gate_idx];
    int ok = !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    char log[PATH_MAX], tail[1024] = "", msg[512];
    gate_log_path(o, lvl, g, log, sizeof log);
    o->gate_pid = 0;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "gate", g->name);
    zerg_json_set_num(data, "level", lvl);
    zerg_json_set_num(data, "duration",
                      ORCH_SEC(now - o->gate_started_mono_ns));
    zerg_json_set_str(data, "log", log);
    if (ok) {
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "gate_pass",
                       NULL, data, "Gate %s passed after level %d", g->name,
                       lvl);
        o->gate_idx++;
        return;
    }
    zerg_fsio_read_tail(log, 8, tail, sizeof tail);
    if (timed_out)
        snprintf(msg, sizeof msg, "timed out after %gs",
                 (double)g->timeout_ns / 1e9);
    else if (WIFEXITED(status))
        snprintf(msg, sizeof msg, "exited with code %d", WEXITSTATUS(status));
    else
        snprintf(msg, sizeof msg, "was killed by signal %d", WTERMSIG(status));
    zerg_json_set_str(data, "error", msg);
    zerg_json_set_str(data, "output", tail);
    zerg_json_set_bool(data, "required", g->required);
    zerg_log_event(
        o->o.log, ZERG_LOG_ORCH, g->required ? ZERG_LOG_ERROR : ZERG_LOG_WARN,
        "gate_fail", NULL, data, "Gate %s %s after level %d%s; output in %s",
        g->name, msg, lvl, g->required ? "" : " (not required)", log);
    o->gate_idx++;
    if (g->required) {
        char e[512];
        snprintf(e, sizeof e,
                 "quality gate %.60s %.60s after level %d:\n%.300s", g->name,
                 msg, lvl, tail);
        gate_stops_run(o, e, now);
    }
}

/* A killed client leaves its container running: removed by name. */
static void gate_stop_container(struct zerg_orch *o)
{
    const struct zerg_launcher_ops *ops = o->o.launcher->ops;
    if (o->gate_handle[0] && ops->gate_stop)
        ops->gate_stop(o->o.launcher, o->gate_handle);
    o->gate_handle[0] = '\0';
}

/* Polls the running gate; 1 when it ended. */
static int gate_poll(struct zerg_orch *o, int lvl, int64_t now)
{
    int status = 0;
    pid_t r = waitpid(o->gate_pid, &status, WNOHANG);
    if (r == o->gate_pid) {
        gate_ended(o, lvl, status, 0, now);
        return 1;
    }
    if (now < o->gate_deadline_mono_ns)
        return 0;
    kill(-o->gate_pid, SIGKILL);
    waitpid(o->gate_pid, &status, 0);
    gate_stop_container(o);
    gate_ended(o, lvl, status, 1, now);
    return 1;
}

int orch_gates_passed(struct zerg_orch *o, int lvl, int64_t now, int64_t *wake)
{
    if (!o->o.workspace || !o->cfg->ngates || o->gate_failed)
        return !o->gate_failed;
    if (o->gate_level != lvl) {
        o->gate_level = lvl;
        o->gate_idx = 0;
    }
    while (o->gate_idx < o->cfg->ngates && !o->gate_failed) {
        if (o->gate_pid > 0) {
            if (!gate_poll(o, lvl, now)) {
                if (*wake > now + GATE_POLL_NS)
                    *wake = now + GATE_POLL_NS;
                return 0;
            }
            continue;
        }
        struct zerg_err err = {0};
        if (gate_start(o, lvl, now, &err) < 0) {
            char e[512];
            snprintf(e, sizeof e, "quality gate %.60s could not run: %.400s",
                     o->cfg->gates[o->gate_idx].name, err.msg);
            gate_stops_run(o, e, now);
            return 0;
        }
    }
    return !o->gate_failed;
}

void orch_gate_abort(struct zerg_orch *o)
{
    if (o->gate_pid <= 0)
        return;
    int status;
    kill(-o->gate_pid, SIGKILL);
    waitpid(o->gate_pid, &status, 0);
    gate_stop_container(o);
    o->gate_pid = 0;
}
