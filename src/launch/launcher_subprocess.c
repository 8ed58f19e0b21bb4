/* launcher_subprocess.c - workers as plain child processes.
 *
 * argv = [workers.launch_prefix...] zerg worker -C PROJECT --feature F
 *        --slot N --epoch E --run-id R
 * Each worker gets its own process group (so a stop or a kill reaches the
 * worker without touching the orchestrator) and PR_SET_PDEATHSIG(SIGTERM),
 * so it dies with the orchestrator even after kill -9.  Output goes to
 * .zerg/logs/worker-{slot}.log.  An exec failure is reported back through
 * a close-on-exec pipe, so "binary not found" is a permanent spawn failure
 * at once instead of a mysterious early exit. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/launcher.h"

#define MAX_ARGS 64

struct subprocess {
    struct zerg_launcher base;
};

static void child_exec(const struct zerg_spawn_req *req, char **argv,
                       const char *logpath, int errfd)
{
    char buf[32];
    sigset_t none;

    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (null >= 0)
        dup2(null, 0);
    if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
    }
    snprintf(buf, sizeof buf, "%d", (int)getppid());
    setenv("ZERG_ORCH_PID", buf, 1);
    setenv("ZERG_PROJECT", req->project, 1);
    setenv("ZERG_RUN_ID", req->run_id, 1);
    execvp(argv[0], argv);
    int e = errno;
    if (write(errfd, &e, sizeof e) < 0)
        _exit(127);
    _exit(127);
}

static int build_argv(const struct zerg_launcher *l,
                      const struct zerg_spawn_req *req, char **argv,
                      char bufs[3][32])
{
    size_t n = 0;
    const struct zerg_argv *pre = &l->cfg->launch_prefix;

    for (size_t i = 0; i < pre->n && n < MAX_ARGS - 16; i++)
        argv[n++] = pre->v[i];
    snprintf(bufs[0], 32, "%d", req->slot);
    snprintf(bufs[1], 32, "%" PRIu64, req->epoch);
    snprintf(bufs[2], 32, "%s", req->run_id);
    const char *tail[] = {req->zerg_bin, "worker",     "-C",       req->project,
                          "--feature",   req->feature, "--slot",   bufs[0],
                          "--epoch",     bufs[1],      "--run-id", bufs[2]};
    for (size_t i = 0; i < sizeof tail / sizeof *tail; i++)
        argv[n++] = (char *)tail[i];
    argv[n] = NULL;
    return (int)n;
}

static int sp_spawn(struct zerg_launcher *l, const struct zerg_spawn_req *req,
                    struct zerg_proc *out, int *cls, struct zerg_err *err)
{
    char *argv[MAX_ARGS], bufs[3][32], logdir[4096], logpath[4200];
    int fds[2];

    build_argv(l, req, argv, bufs);
    if (zerg_fsio_path(logdir, sizeof logdir, "%s/.zerg/logs", req->project))
        return zerg_err_set(err, -ENAMETOOLONG, "project path too long");
    zerg_fsio_mkdirs(logdir, 0755);
    snprintf(logpath, sizeof logpath, "%s/worker-%d.log", logdir, req->slot);
    if (pipe2(fds, O_CLOEXEC) < 0) {
        *cls = ZERG_SPAWN_TRANSIENT;
        return zerg_err_set(err, -errno, "pipe: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        *cls = ZERG_SPAWN_TRANSIENT;
        return zerg_err_set(err, -e, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        close(fds[0]);
        child_exec(req, argv, logpath, fds[1]);
    }
    close(fds[1]);
    setpgid(pid, pid); /* also in the child: whichever runs first wins */
    int e = 0;
    ssize_t got;
    do
        got = read(fds[0], &e, sizeof e);
    while (got < 0 && errno == EINTR);
    close(fds[0]);
    if (got == (ssize_t)sizeof e) {
        waitpid(pid, NULL, 0);
        *cls = (e == ENOENT || e == EACCES || e == ENOEXEC)
                   ? ZERG_SPAWN_PERMANENT
                   : ZERG_SPAWN_TRANSIENT;
        return zerg_err_set(
            err, -e, "cannot run %s: %s%s", argv[0], strerror(e),
            l->cfg->launch_prefix.n ? " (check workers.launch_prefix)" : "");
    }
    memset(out, 0, sizeof *out);
    out->pid = pid;
    out->slot = req->slot;
    out->epoch = req->epoch;
    return 0;
}

static int sp_kill(struct zerg_launcher *l, const struct zerg_proc *p, int sig)
{
    (void)l;
    if (p->pid <= 0)
        return -ESRCH;
    kill(-p->pid, sig);
    return kill(p->pid, sig) < 0 ? -errno : 0;
}

static void sp_reaped(struct zerg_launcher *l, const struct zerg_proc *p,
                      int wstatus, struct zerg_exit_info *info)
{
    (void)l;
    zerg_exit_info_from_status(wstatus, info);
    /* Whatever the worker left in its own group goes with it. */
    if (p->pid > 0)
        kill(-p->pid, SIGKILL);
}

/* 1 if /proc/PID/environ has ZERG_PROJECT=project, ZERG_FEATURE=feature and
 * a ZERG_RUN_ID other than run_id: a leftover of an earlier rush. */
static int is_leftover(const char *pid, const char *project,
                       const char *feature, const char *run_id)
{
    char path[64], *data = NULL, want[4200];
    size_t len = 0;
    int proj = 0, feat = 0, other_run = 0;

    snprintf(path, sizeof path, "/proc/%s/environ", pid);
    if (zerg_fsio_read_all(path, 1 << 20, &data, &len, NULL) < 0)
        return 0;
    for (size_t i = 0; i < len; i += strlen(data + i) + 1) {
        const char *kv = data + i;
        snprintf(want, sizeof want, "ZERG_PROJECT=%s", project);
        proj |= !strcmp(kv, want);
        snprintf(want, sizeof want, "ZERG_FEATURE=%s", feature);
        feat |= !strcmp(kv, want);
        if (!strncmp(kv, "ZERG_RUN_ID=", 12) && strcmp(kv + 12, run_id))
            other_run = 1;
    }
    free(data);
    return proj && feat && other_run;
}

int zerg_subprocess_kill_leftovers(const char *project, const char *feature,
                                   const char *run_id)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid == getpid())
            continue;
        if (is_leftover(e->d_name, project, feature, run_id) &&
            kill(pid, SIGKILL) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static int sp_cleanup(struct zerg_launcher *l, const char *feature,
                      const char *run_id)
{
    (void)l, (void)feature, (void)run_id;
    return 0; /* the rush calls zerg_subprocess_kill_leftovers itself */
}

static void sp_free(struct zerg_launcher *l)
{
    free(l);
}

static const struct zerg_launcher_ops subprocess_ops = {
    .name = "subprocess",
    .spawn = sp_spawn,
    .kill = sp_kill,
    .reaped = sp_reaped,
    .cleanup = sp_cleanup,
    .free = sp_free,
};

struct zerg_launcher *
zerg_launcher_subprocess_new(const struct zerg_config *cfg,
                             struct zerg_log *log)
{
    struct subprocess *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->base.ops = &subprocess_ops;
    s->base.cfg = cfg;
    s->base.log = log;
    return &s->base;
}
