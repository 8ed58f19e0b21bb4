/* launcher_subprocess.c - workers as plain child processes.
 *
 * argv = [workers.launch_prefix...] zerg worker -C PROJECT --feature F
 *        --slot N --epoch E --run-id R
 * Each worker gets its own process group (so a stop or a kill reaches the
 * worker without touching the orchestrator) and PR_SET_PDEATHSIG(SIGTERM),
 * so it dies with the orchestrator even after kill -9.  Its stdout is a
 * pipe back to the orchestrator, which reads the worker's event lines
 * there (zerg_proc.events_fd, DESIGN §15); its stderr goes to
 * .zerg/logs/{feature}/worker-{slot}.log.  An exec failure is reported back
 * through a close-on-exec pipe, so "binary not found" is a permanent spawn
 * failure at once instead of a mysterious early exit.
 *
 * Containment (what a worker started dies with it), in three layers:
 *   - where the cgroup v2 hierarchy is writable, each worker runs in its
 *     own cgroup, {our cgroup}/zerg-{project+feature hash}-{run}/w{slot}-
 *     e{epoch}, joined before exec; a SIGKILL of the worker and its reaping
 *     kill the whole cgroup (cgroup.kill) and remove it, whatever the
 *     processes in it did to their session, parent or environment;
 *   - the worker itself is a child subreaper and kills what its tasks
 *     left after every stage (src/worker/worker_wait.c);
 *   - by environment: when a worker is reaped, processes still carrying
 *     its ZERG_RUN_ID/ZERG_WORKER_ID/ZERG_EPOCH are killed, and the next
 *     rush (or `zerg stop --force`) kills those of earlier runs and removes
 *     their cgroups (zerg_subprocess_kill_leftovers). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <mntent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/launcher.h"
#include "zerg/log.h"

#define MAX_ARGS 64
/* A killed cgroup empties within microseconds; rmdir is retried every
 * millisecond for at most this long before it is left to the next rush. */
#define CG_RMDIR_TRIES 200
#define CG_KILL_ROUNDS 16 /* without cgroup.kill (kernels before 5.14) */
#define CG_STALE_S 60     /* another project's empty run cgroup is garbage */

struct subprocess {
    struct zerg_launcher base;
    int cg;                 /* 1: workers get cgroups; 0: not tried; -1: no */
    char cg_run[PATH_MAX];  /* this run's cgroup directory */
    char project[PATH_MAX]; /* of the first spawn (one rush, one project) */
    char run_id[128];
};

/* ---- a cgroup per worker --------------------------------------------- */

/* Our own cgroup's directory in the cgroup v2 hierarchy; -ENOENT when
 * there is none (a cgroup v1 only system). */
static int cg_self_dir(char *buf, size_t n)
{
    char mnt[PATH_MAX] = "", *text = NULL, *rel = NULL;
    size_t len = 0;
    FILE *f = setmntent("/proc/self/mounts", "r");
    struct mntent *m;
    while (f && !mnt[0] && (m = getmntent(f)))
        if (!strcmp(m->mnt_type, "cgroup2"))
            snprintf(mnt, sizeof mnt, "%s", m->mnt_dir);
    if (f)
        endmntent(f);
    if (!mnt[0] ||
        zerg_fsio_read_all("/proc/self/cgroup", 1 << 16, &text, &len, NULL) < 0)
        return -ENOENT;
    for (char *line = strtok_r(text, "\n", &rel); line;
         line = strtok_r(NULL, "\n", &rel))
        if (!strncmp(line, "0::", 3)) {
            int rc = zerg_fsio_path(buf, n, "%s%s", mnt,
                                    strcmp(line + 3, "/") ? line + 3 : "");
            free(text);
            return rc;
        }
    free(text);
    return -ENOENT;
}

/* zerg-{hash}-: the prefix of every run's cgroup of (project, feature),
 * FNV-1a over both, so cleanup finds only its own runs. */
static void cg_prefix(char *buf, size_t n, const char *project,
                      const char *feature)
{
    uint32_t h = 2166136261u;
    for (const char *p = project; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h *= 16777619u; /* a NUL between them: ("ab", "c") != ("a", "bc") */
    for (const char *p = feature; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    snprintf(buf, n, "zerg-%08" PRIx32 "-", h);
}

static int cg_write(const char *dir, const char *file, const char *text)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, text, strlen(text));
    int e = n < 0 ? -errno : 0;
    close(fd);
    return e;
}

/* SIGKILLs the pids listed in a cgroup.procs file; how many. */
static int kill_listed(const char *procs)
{
    char *text = NULL, *save = NULL;
    size_t len = 0;
    int n = 0;
    if (zerg_fsio_read_all(procs, 1 << 20, &text, &len, NULL) < 0)
        return 0;
    for (char *p = strtok_r(text, "\n", &save); p;
         p = strtok_r(NULL, "\n", &save))
        if (atoi(p) > 0 && kill((pid_t)atoi(p), SIGKILL) == 0)
            n++;
    free(text);
    return n;
}

/* SIGKILLs every process in the cgroup dir; how many there were. */
static int cg_kill(const char *dir)
{
    char path[PATH_MAX + 32], *text = NULL;
    size_t len = 0;
    int n = 0;
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    if (zerg_fsio_read_all(path, 1 << 20, &text, &len, NULL) < 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    free(text);
    if (n == 0 || cg_write(dir, "cgroup.kill", "1") == 0)
        return n;
    /* No cgroup.kill: frozen, nothing forks while we kill what is listed
     * (SIGKILL reaches frozen processes in cgroup v2). */
    cg_write(dir, "cgroup.freeze", "1");
    for (int round = 0; round < CG_KILL_ROUNDS && kill_listed(path); round++)
        ;
    cg_write(dir, "cgroup.freeze", "0");
    return n;
}

/* rmdir, retried while the killed processes finish exiting. */
static int cg_remove(const char *dir)
{
    struct timespec ms = {0, 1000 * 1000};
    for (int i = 0; i < CG_RMDIR_TRIES; i++) {
        if (rmdir(dir) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return -errno;
        nanosleep(&ms, NULL);
    }
    return -EBUSY;
}

/* Kills and removes the cgroup dir and the cgroups below it (one level:
 * a run's directory holds its workers'); how many processes were in. */
static int cg_destroy(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        char sub[PATH_MAX];
        if (e->d_type != DT_DIR || e->d_name[0] == '.' ||
            zerg_fsio_path(sub, sizeof sub, "%s/%s", dir, e->d_name) < 0)
            continue;
        n += cg_kill(sub);
        cg_remove(sub);
    }
    if (d)
        closedir(d);
    n += cg_kill(dir);
    cg_remove(dir);
    return n;
}

/* Creates this run's cgroup at the first spawn; 1 when workers get one. */
static int cg_ready(struct subprocess *s, const struct zerg_spawn_req *req)
{
    char self[PATH_MAX], prefix[32];
    if (s->cg)
        return s->cg > 0;
    cg_prefix(prefix, sizeof prefix, req->project, req->feature);
    int rc = cg_self_dir(self, sizeof self);
    if (rc == 0)
        rc = zerg_fsio_path(s->cg_run, sizeof s->cg_run, "%s/%s%s", self,
                            prefix, req->run_id);
    if (rc == 0 && mkdir(s->cg_run, 0755) < 0 && errno != EEXIST)
        rc = -errno;
    /* Without one the worker is still contained by the other layers. */
    s->cg = rc == 0 ? 1 : -1;
    return s->cg > 0;
}

static int cg_worker_dir(const struct subprocess *s, int slot, uint64_t epoch,
                         char *buf, size_t n)
{
    return zerg_fsio_path(buf, n, "%s/w%d-e%" PRIu64, s->cg_run, slot, epoch);
}

/* The worker's cgroup.procs, opened for the child to join before exec;
 * -1 when it gets no cgroup (it runs contained by the other layers). */
static int cg_open_procs(struct subprocess *s, const struct zerg_spawn_req *req)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    if (!cg_ready(s, req) ||
        cg_worker_dir(s, req->slot, req->epoch, dir, sizeof dir) < 0 ||
        (mkdir(dir, 0755) < 0 && errno != EEXIST))
        return -1;
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    return open(path, O_WRONLY | O_CLOEXEC);
}

/* Kills and removes worker (slot, epoch)'s cgroup; how many processes
 * were in it. */
static int cg_release(struct subprocess *s, int slot, uint64_t epoch)
{
    char dir[PATH_MAX];
    if (s->cg <= 0 || cg_worker_dir(s, slot, epoch, dir, sizeof dir) < 0)
        return 0;
    int n = cg_kill(dir);
    cg_remove(dir);
    return n;
}

/* ---- spawning -------------------------------------------------------- */

/* The pipe a worker's stdout goes through: [0] for the orchestrator
 * (non-blocking: the loop reads what is there), [1] for the child's fd 1.
 * Both close-on-exec; [0] is never fd 0 (0 means "none" in zerg_proc). */
int zerg_worker_events_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    if (fds[0] == 0) {
        int moved = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
        int e = errno;
        close(fds[0]);
        if (moved < 0) {
            close(fds[1]);
            return -e;
        }
        fds[0] = moved;
    }
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    return 0;
}

static void child_exec(const struct zerg_spawn_req *req, char **argv,
                       const char *logpath, int errfd, int cgfd, int evfd)
{
    sigset_t none;

    /* First, so that everything the worker starts is in its cgroup (the
     * parent writes our pid too; if both fail, the other layers remain). */
    if (cgfd >= 0 && write(cgfd, "0", 1) < 0)
        close(cgfd);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = zerg_fsio_open_append(logpath, NULL); /* never through a link */
    if (null >= 0)
        dup2(null, 0);
    if (out >= 0)
        dup2(out, 2);
    dup2(evfd, 1);
    zerg_worker_setenv(req, getppid());
    setenv("ZERG_STDIO_EVENTS", "1", 1); /* the worker writes its events */
    execvp(argv[0], argv);
    int e = errno;
    if (write(errfd, &e, sizeof e) < 0)
        _exit(127);
    _exit(127);
}

/* [launch_prefix...] and the worker command; argv has MAX_ARGS slots. */
static void build_argv(const struct zerg_launcher *l,
                       const struct zerg_worker_cmd *cmd, char **argv)
{
    size_t n = 0;
    const struct zerg_argv *pre = &l->cfg->launch_prefix;

    for (size_t i = 0; i < pre->n && n < MAX_ARGS - ZERG_WORKER_ARGC - 1; i++)
        argv[n++] = pre->v[i];
    for (size_t i = 0; i <= ZERG_WORKER_ARGC; i++)
        argv[n++] = cmd->argv[i];
}

/* Remembers what the reap-time sweep needs (one rush per launcher). */
static void note_run(struct subprocess *s, const struct zerg_spawn_req *req)
{
    snprintf(s->project, sizeof s->project, "%s", req->project);
    snprintf(s->run_id, sizeof s->run_id, "%s", req->run_id);
}

/* fork + exec; the parent also moves the child into its cgroup (whichever
 * runs first wins, as with setpgid).  The child's pid, or -errno. */
static pid_t fork_worker(struct subprocess *s, const struct zerg_spawn_req *req,
                         char **argv, const char *logpath, int fds[2], int evfd)
{
    int cgfd = cg_open_procs(s, req);
    pid_t pid = fork();
    int e = errno;
    if (pid == 0) {
        close(fds[0]);
        child_exec(req, argv, logpath, fds[1], cgfd, evfd);
    }
    if (pid > 0 && cgfd >= 0)
        dprintf(cgfd, "%d", (int)pid);
    if (cgfd >= 0)
        close(cgfd);
    return pid < 0 ? -e : pid;
}

static int sp_spawn(struct zerg_launcher *l, const struct zerg_spawn_req *req,
                    struct zerg_proc *out, int *cls, struct zerg_err *err)
{
    struct subprocess *s = (struct subprocess *)l;
    char *argv[MAX_ARGS], logpath[PATH_MAX];
    struct zerg_worker_cmd cmd;
    int fds[2], ev[2];

    zerg_worker_cmd_init(&cmd, req);
    build_argv(l, &cmd, argv);
    if (zerg_worker_log_path(logpath, sizeof logpath, req->project,
                             req->feature, req->slot, err) < 0) {
        *cls = ZERG_SPAWN_PERMANENT;
        return err->code;
    }
    int rc = zerg_worker_events_pipe(ev);
    if (rc < 0) {
        *cls = ZERG_SPAWN_TRANSIENT;
        return zerg_err_set(err, rc, "pipe: %s", strerror(-rc));
    }
    if (pipe2(fds, O_CLOEXEC) < 0) {
        int e = errno;
        close(ev[0]);
        close(ev[1]);
        *cls = ZERG_SPAWN_TRANSIENT;
        return zerg_err_set(err, -e, "pipe: %s", strerror(e));
    }
    note_run(s, req);
    pid_t pid = fork_worker(s, req, argv, logpath, fds, ev[1]);
    close(ev[1]);
    if (pid < 0) {
        close(ev[0]);
        close(fds[0]);
        close(fds[1]);
        *cls = ZERG_SPAWN_TRANSIENT;
        return zerg_err_set(err, (int)pid, "fork: %s", strerror((int)-pid));
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
        close(ev[0]);
        waitpid(pid, NULL, 0);
        cg_release(s, req->slot, req->epoch);
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
    out->events_fd = ev[0];
    return 0;
}

/* ---- killing --------------------------------------------------------- */

/* how is the signal itself (enum zerg_cancel). */
static int sp_cancel(struct zerg_launcher *l, const struct zerg_proc *p,
                     int sig)
{
    struct subprocess *s = (struct subprocess *)l;
    if (p->pid <= 0)
        return -ESRCH;
    /* A SIGKILL takes everything the worker started along; a SIGTERM lets
     * the worker end its task, the cgroup goes when it is reaped. */
    if (sig == SIGKILL)
        cg_release(s, p->slot, p->epoch);
    kill(-p->pid, sig);
    return kill(p->pid, sig) < 0 ? -errno : 0;
}

/* What marks a process as ours in /proc/PID/environ. */
struct marks {
    const char *need[4]; /* "NAME=value" entries, all required */
    size_t n;
    const char *other_run; /* when set: also a ZERG_RUN_ID other than it */
};

static int has_marks(const char *pid, const struct marks *m)
{
    char path[300], *data = NULL;
    size_t len = 0, found = 0;
    int other_run = !m->other_run;

    snprintf(path, sizeof path, "/proc/%s/environ", pid);
    if (zerg_fsio_read_all(path, 1 << 20, &data, &len, NULL) < 0)
        return 0;
    for (size_t i = 0; i < len; i += strlen(data + i) + 1) {
        const char *kv = data + i;
        for (size_t k = 0; k < m->n; k++)
            found += !strcmp(kv, m->need[k]);
        if (m->other_run && !strncmp(kv, "ZERG_RUN_ID=", 12) &&
            strcmp(kv + 12, m->other_run))
            other_run = 1;
    }
    free(data);
    return found >= m->n && other_run;
}

/* SIGKILLs every process (but us) whose environment has the marks. */
static int kill_marked(const struct marks *m)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid != getpid() && has_marks(e->d_name, m) &&
            kill(pid, SIGKILL) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static void sp_reaped(struct zerg_launcher *l, const struct zerg_proc *p,
                      int wstatus, struct zerg_exit_info *info)
{
    struct subprocess *s = (struct subprocess *)l;
    char want[4][PATH_MAX + 32];
    zerg_exit_info_from_status(wstatus, info);
    /* Whatever the worker left in its own group goes with it. */
    if (p->pid > 0)
        kill(-p->pid, SIGKILL);
    cg_release(s, p->slot, p->epoch);
    /* Without a cgroup, or for what left it: this incarnation's task
     * environment (a worker killed by SIGKILL could not sweep). */
    snprintf(want[0], sizeof want[0], "ZERG_PROJECT=%s", s->project);
    snprintf(want[1], sizeof want[1], "ZERG_RUN_ID=%s", s->run_id);
    snprintf(want[2], sizeof want[2], "ZERG_WORKER_ID=%d", p->slot);
    snprintf(want[3], sizeof want[3], "ZERG_EPOCH=%" PRIu64, p->epoch);
    struct marks m = {{want[0], want[1], want[2], want[3]}, 4, NULL};
    if (s->run_id[0])
        kill_marked(&m);
}

/* Removes the empty cgroup dir and the empty ones below it, never killing:
 * what a rush left of another project after its orchestrator died.  Only
 * when older than CG_STALE_S, not to race a run that is starting. */
static void cg_remove_empty(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) < 0 || time(NULL) - st.st_mtime < CG_STALE_S)
        return;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char sub[PATH_MAX];
        if (e->d_type == DT_DIR && e->d_name[0] != '.' &&
            zerg_fsio_path(sub, sizeof sub, "%s/%s", dir, e->d_name) == 0)
            rmdir(sub);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Kills and removes the cgroups of (project, feature)'s runs other than
 * run_id under our cgroup, and removes other runs' empty ones; how many
 * processes were in them. */
static int kill_leftover_cgroups(const char *project, const char *feature,
                                 const char *run_id)
{
    char self[PATH_MAX], prefix[32];
    int n = 0;
    if (cg_self_dir(self, sizeof self) < 0)
        return 0;
    cg_prefix(prefix, sizeof prefix, project, feature);
    size_t plen = strlen(prefix);
    DIR *d = opendir(self);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char dir[PATH_MAX];
        if (e->d_type != DT_DIR || strncmp(e->d_name, "zerg-", 5) ||
            zerg_fsio_path(dir, sizeof dir, "%s/%s", self, e->d_name) < 0)
            continue;
        if (strncmp(e->d_name, prefix, plen))
            cg_remove_empty(dir);
        else if (strcmp(e->d_name + plen, run_id))
            n += cg_destroy(dir);
    }
    if (d)
        closedir(d);
    return n;
}

/* Processes of earlier rushes: in their cgroups, or with ZERG_PROJECT,
 * ZERG_FEATURE and a ZERG_RUN_ID other than run_id ("" matches every run:
 * `zerg stop --force`). */
int zerg_subprocess_kill_leftovers(const char *project, const char *feature,
                                   const char *run_id)
{
    char want[2][PATH_MAX + 32];
    int n = kill_leftover_cgroups(project, feature, run_id);
    snprintf(want[0], sizeof want[0], "ZERG_PROJECT=%s", project);
    snprintf(want[1], sizeof want[1], "ZERG_FEATURE=%s", feature);
    struct marks m = {{want[0], want[1]}, 2, run_id};
    return n + kill_marked(&m);
}

static int sp_cleanup(struct zerg_launcher *l, const char *feature,
                      const char *run_id)
{
    (void)l, (void)feature, (void)run_id;
    /* The rush calls zerg_subprocess_kill_leftovers itself, whatever the
     * mode: an earlier run may have used another one. */
    return 0;
}

/* The rush is over: its workers' cgroups (normally removed already, one
 * by one, as they were reaped) and its own go. */
static void sp_free(struct zerg_launcher *l)
{
    struct subprocess *s = (struct subprocess *)l;
    if (s && s->cg > 0)
        cg_destroy(s->cg_run);
    free(l);
}

static const struct zerg_launcher_ops subprocess_ops = {
    .name = "subprocess",
    .spawn = sp_spawn,
    .cancel = sp_cancel,
    .reaped = sp_reaped,
    .cleanup = sp_cleanup,
    .free = sp_free,
    /* The worker is our child, reaped by pid, and opens its logs by path. */
    .caps = {.local_pids = 1, .reopens_logs = 1},
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
