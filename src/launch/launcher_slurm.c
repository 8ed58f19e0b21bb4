/* launcher_slurm.c - workers as Slurm job steps started with srun.
 *
 * Each worker incarnation is one `srun` child process (argv, never a
 * shell):
 *
 *   srun --unbuffered --job-name zerg-F-wN
 *        --comment "zerg-run=R zerg-project=H zerg-epoch=E"
 *        [--partition P] [--account A] [--time T] [slurm.extra_args...]
 *        -N1 -n1 ZERG worker -C PROJECT --feature F --slot N --epoch E
 *        --run-id R
 *
 * srun stays attached, so its exit is the worker's end: node failure,
 * `scancel`, preemption and the time limit all end srun and take the
 * crash path like any worker exit (FR-5).  srun relays the worker's
 * stdout (--unbuffered) to a pipe of ours: the worker's event lines, read
 * by the orchestrator without inotify from any node (DESIGN §15).  srun's
 * own messages and the worker's stderr go to
 * .zerg/logs/{feature}/worker-N.log, where reaped reads back why it
 * ended.  The project must be on a filesystem every
 * node sees: the worker reads the graph and writes heartbeats and
 * results there (docs/wiki/Cluster-Mode.md).
 *
 * The worker gets no ZERG_ORCH_PID (a pid of ours means nothing on
 * another node): it follows the lease.  srun itself gets
 * PR_SET_PDEATHSIG(SIGTERM), on which it cancels its step, so an
 * orchestrator killed with -9 takes its workers along on its own host;
 * a job that survives anyway (the orchestrator's host died) is found by
 * name and comment by the next rush (cleanup) and cancelled.
 *
 * The first spawn asks `srun --test-only` with the same options: a
 * partition or account that does not exist, or a bad option, is a
 * permanent spawn failure with srun's own message, not a retry storm. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/launcher.h"
#include "zerg/text.h"

#define PROBE_TIMEOUT_NS (20 * ZERG_NS_PER_S)
#define CALL_TIMEOUT_NS (10 * ZERG_NS_PER_S)
#define SQUEUE_BYTES 65536

enum { PROBE_UNKNOWN, PROBE_OK, PROBE_BAD };

struct slurm {
    struct zerg_launcher base;
    char project[PATH_MAX];
    char feature[128]; /* of the first spawn, for reaped */
    int probe;
    char probe_why[512];
};

static struct slurm *sm(struct zerg_launcher *l)
{
    return (struct slurm *)l;
}

/* ---- names ----------------------------------------------------------- */

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; s && *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

void zerg_slurm_job_name(char *buf, size_t size, const char *feature, int slot)
{
    char tail[24];
    snprintf(tail, sizeof tail, "-w%d", slot);
    int room = (int)size - 1 - 5 - (int)strlen(tail);
    snprintf(buf, size, "zerg-%.*s%s", room > 0 ? room : 0, feature, tail);
}

void zerg_slurm_comment(char *buf, size_t size, const char *project,
                        const char *run_id, uint64_t epoch)
{
    snprintf(buf, size,
             "zerg-run=%s zerg-project=%08" PRIx32 " zerg-epoch=%" PRIu64,
             run_id, fnv1a(project), epoch);
}

/* The value of "key=" in a comment, copied to out ("" when absent). */
static void comment_field(const char *comment, const char *key, char *out,
                          size_t size)
{
    size_t klen = strlen(key);
    out[0] = '\0';
    for (const char *s = comment; s && (s = strstr(s, key)); s += klen)
        if (s == comment || s[-1] == ' ') {
            size_t n = strcspn(s + klen, " \n");
            snprintf(out, size, "%.*s", (int)n, s + klen);
            return;
        }
}

int zerg_slurm_leftover(const char *line, const char *project,
                        const char *feature, const char *run_id, long *jobid)
{
    char name[160], want[160], run[128], proj[16], mine[16];
    const char *bar1 = strchr(line, '|');
    const char *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
    if (!bar2)
        return 0;
    snprintf(name, sizeof name, "%.*s", (int)(bar2 - bar1 - 1), bar1 + 1);
    /* zerg-{feature}-w{digits}, exactly */
    zerg_slurm_job_name(want, sizeof want, feature, 0);
    size_t plen = strlen(want) - 1;
    if (strncmp(name, want, plen) || !name[plen] ||
        strspn(name + plen, "0123456789") != strlen(name + plen))
        return 0;
    comment_field(bar2 + 1, "zerg-run=", run, sizeof run);
    comment_field(bar2 + 1, "zerg-project=", proj, sizeof proj);
    snprintf(mine, sizeof mine, "%08" PRIx32, fnv1a(project));
    if (!run[0] || strcmp(proj, mine))
        return 0; /* not zerg's, or another project's */
    if (run_id && run_id[0] && !strcmp(run, run_id))
        return 0;
    char *end;
    long id = strtol(line, &end, 10);
    if (end == line || *end != '|' || id <= 0)
        return 0;
    *jobid = id;
    return 1;
}

/* ---- the srun argv --------------------------------------------------- */

static int dup_into(struct zerg_argv *a, const char *s)
{
    if (!(a->v[a->n] = strdup(s)))
        return -ENOMEM;
    a->n++;
    return 0;
}

/* Options shared by the probe and the real run: name, comment, the
 * slurm.* settings, -N1 -n1. */
static int push_options(const struct zerg_config *cfg,
                        const struct zerg_spawn_req *req, struct zerg_argv *a)
{
    char name[sizeof((struct zerg_proc *)0)->name], comment[512];
    zerg_slurm_job_name(name, sizeof name, req->feature, req->slot);
    zerg_slurm_comment(comment, sizeof comment, req->project, req->run_id,
                       req->epoch);
    const char *fixed[] = {"--job-name", name, "--comment", comment};
    int rc = 0;
    for (size_t i = 0; i < 4 && rc == 0; i++)
        rc = dup_into(a, fixed[i]);
    const char *opt[][2] = {{"--partition", cfg->slurm_partition},
                            {"--account", cfg->slurm_account},
                            {"--time", cfg->slurm_time_limit}};
    for (size_t i = 0; i < 3 && rc == 0; i++)
        if (opt[i][1] && opt[i][1][0] && (rc = dup_into(a, opt[i][0])) == 0)
            rc = dup_into(a, opt[i][1]);
    for (size_t i = 0; i < cfg->slurm_extra_args.n && rc == 0; i++)
        rc = dup_into(a, cfg->slurm_extra_args.v[i]);
    if (rc == 0 && (rc = dup_into(a, "-N1")) == 0)
        rc = dup_into(a, "-n1");
    return rc;
}

/* srun [first] options tail...: malloc'd like zerg_container_run_argv. */
static int build(const struct zerg_config *cfg,
                 const struct zerg_spawn_req *req, const char *first,
                 char *const *tail, struct zerg_argv *out)
{
    size_t ntail = 0;
    while (tail[ntail])
        ntail++;
    out->n = 0;
    out->v = calloc(16 + cfg->slurm_extra_args.n + ntail, sizeof *out->v);
    if (!out->v)
        return -ENOMEM;
    int rc = dup_into(out, "srun");
    if (rc == 0)
        rc = dup_into(out, first);
    if (rc == 0)
        rc = push_options(cfg, req, out);
    for (size_t i = 0; i < ntail && rc == 0; i++)
        rc = dup_into(out, tail[i]);
    if (rc < 0)
        zerg_container_argv_free(out);
    return rc;
}

int zerg_slurm_srun_argv(const struct zerg_config *cfg,
                         const struct zerg_spawn_req *req,
                         struct zerg_argv *out)
{
    struct zerg_worker_cmd cmd;
    zerg_worker_cmd_init(&cmd, req);
    return build(cfg, req, "--unbuffered", cmd.argv, out);
}

/* ---- the probe ------------------------------------------------------- */

int zerg_slurm_probe_permanent(int wstatus, const char *errout)
{
    if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 255)
        return 1; /* srun refused its command line */
    static const char *const wrong[] = {"nvalid",
                                        "not exist",
                                        "unrecognized",
                                        "not valid",
                                        "Requested time limit",
                                        "not permitted",
                                        "specification"};
    for (size_t i = 0; errout && i < sizeof wrong / sizeof *wrong; i++)
        if (strstr(errout, wrong[i]))
            return 1;
    return 0; /* the controller did not answer, or was busy */
}

/* The first line of text that says "error", else its last line. */
static void error_line(const char *text, char *out, size_t size)
{
    const char *e = strstr(text, "error: ");
    if (e) {
        size_t n = strcspn(e, "\n");
        snprintf(out, size, "%.*s", (int)n, e);
        return;
    }
    zerg_last_line(text, out, size);
}

/* `srun --test-only` with the worker's options, once per launcher. */
static int probe(struct slurm *s, const struct zerg_spawn_req *req, int *cls,
                 struct zerg_err *err)
{
    char *const tail[] = {"true", NULL};
    struct zerg_argv a = {NULL, 0};
    char errout[2048] = "", line[400];
    int st = 0;

    if (s->probe == PROBE_OK)
        return 0;
    if (s->probe == PROBE_UNKNOWN) {
        if (build(s->base.cfg, req, "--test-only", tail, &a) < 0) {
            *cls = ZERG_SPAWN_TRANSIENT;
            return zerg_err_set(err, -ENOMEM, "out of memory");
        }
        int rc = zerg_container_exec(a.v, PROBE_TIMEOUT_NS, NULL, 0, errout,
                                     sizeof errout, &st);
        zerg_container_argv_free(&a);
        if (rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            s->probe = PROBE_OK;
            return 0;
        }
        error_line(errout, line, sizeof line);
        snprintf(s->probe_why, sizeof s->probe_why,
                 "srun refuses the worker job: %s (check slurm.partition, "
                 "slurm.account, slurm.time_limit, slurm.extra_args)",
                 rc < 0 ? strerror(-rc) : line);
        if (rc < 0 || !zerg_slurm_probe_permanent(st, errout)) {
            *cls = ZERG_SPAWN_TRANSIENT; /* asked again at the next spawn */
            return zerg_err_set(err, rc < 0 ? rc : -EIO, "%s", s->probe_why);
        }
        s->probe = PROBE_BAD;
    }
    *cls = ZERG_SPAWN_PERMANENT;
    return zerg_err_set(err, ZERG_EINVAL_INPUT, "%s", s->probe_why);
}

/* ---- spawning -------------------------------------------------------- */

/* In the child: own process group, srun dies with the orchestrator (and
 * cancels its step), stdout to the events pipe (evfd), stderr to the
 * worker log, the worker's environment without an orchestrator pid
 * (srun passes our environment on to the step). */
static void child_exec(const struct zerg_spawn_req *req, char **argv, int logfd,
                       int evfd, int report, pid_t parent)
{
    sigset_t none;
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(127);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0)
        dup2(null, 0);
    dup2(evfd, 1);
    dup2(logfd, 2);
    zerg_worker_setenv(req, 0);
    setenv("ZERG_STDIO_EVENTS", "1", 1);
    execvp(argv[0], argv);
    int e = errno;
    dprintf(2, "zerg: cannot run %s: %s\n", argv[0], strerror(e));
    if (write(report, &e, sizeof e) < 0)
        _exit(127);
    _exit(127);
}

/* fork + exec of srun; its pid, or -errno (exec errors come back through
 * the close-on-exec report pipe). */
static pid_t start_srun(const struct zerg_spawn_req *req, char **argv,
                        int logfd, int evfd)
{
    int px[2];
    pid_t parent = getpid();
    if (pipe2(px, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(px[0]);
        close(px[1]);
        return -e;
    }
    if (pid == 0) {
        close(px[0]);
        child_exec(req, argv, logfd, evfd, px[1], parent);
    }
    close(px[1]);
    setpgid(pid, pid); /* also in the child: whichever runs first wins */
    int e = 0;
    ssize_t got;
    do
        got = read(px[0], &e, sizeof e);
    while (got < 0 && errno == EINTR);
    close(px[0]);
    if (got == (ssize_t)sizeof e) {
        waitpid(pid, NULL, 0);
        return -e;
    }
    return pid;
}

static int sl_spawn(struct zerg_launcher *l, const struct zerg_spawn_req *req,
                    struct zerg_proc *out, int *cls, struct zerg_err *err)
{
    struct slurm *s = sm(l);
    struct zerg_argv argv = {NULL, 0};
    char name[sizeof out->name], what[256];
    int logfd = -1, ev[2] = {-1, -1};

    *cls = ZERG_SPAWN_TRANSIENT;
    snprintf(s->feature, sizeof s->feature, "%s", req->feature);
    int rc = probe(s, req, cls, err);
    if (rc < 0)
        return rc;
    if ((rc = zerg_slurm_srun_argv(l->cfg, req, &argv)) < 0)
        return zerg_err_set(err, rc, "out of memory building the srun command");
    zerg_slurm_job_name(name, sizeof name, req->feature, req->slot);
    snprintf(what, sizeof what, "slurm job %s", name);
    rc = logfd = zerg_worker_log_open(req, what, err);
    if (rc >= 0 && (rc = zerg_worker_events_pipe(ev)) < 0)
        zerg_err_set(err, rc, "pipe: %s", strerror(-rc));
    if (rc >= 0) {
        pid_t pid = start_srun(req, argv.v, logfd, ev[1]);
        rc = pid < 0 ? (int)pid : 0;
        if (pid < 0) {
            *cls = pid == -ENOENT || pid == -EACCES ? ZERG_SPAWN_PERMANENT
                                                    : ZERG_SPAWN_TRANSIENT;
            zerg_err_set(err, rc, "cannot start srun: %s", strerror(-rc));
        } else {
            memset(out, 0, sizeof *out);
            out->pid = pid;
            out->slot = req->slot;
            out->epoch = req->epoch;
            snprintf(out->name, sizeof out->name, "%s", name);
            out->events_fd = ev[0];
            ev[0] = -1;
        }
    }
    if (ev[0] >= 0)
        close(ev[0]);
    if (ev[1] >= 0)
        close(ev[1]);
    if (logfd >= 0)
        close(logfd);
    zerg_container_argv_free(&argv);
    return rc < 0 ? rc : 0;
}

/* ---- finding and cancelling jobs ------------------------------------- */

/* Runs a Slurm client command; 0 when it exited 0. */
static int call(char *const *argv, char *out, size_t size)
{
    int st = 0;
    int rc =
        zerg_container_exec(argv, CALL_TIMEOUT_NS, out, size, NULL, 0, &st);
    if (rc < 0)
        return rc;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* Our jobs as "ID|NAME|COMMENT" lines (malloc'd), or NULL. */
static char *list_jobs(const char *name)
{
    char *out = malloc(SQUEUE_BYTES);
    char *argv[] = {"squeue", "-h", "-o", "%i|%j|%k", NULL, NULL, NULL};
    if (name) {
        argv[4] = "--name";
        argv[5] = (char *)name;
    }
    if (out && call(argv, out, SQUEUE_BYTES) == 0)
        return out;
    free(out);
    return NULL;
}

/* The job id of incarnation p, 0 when Slurm no longer lists it. */
static long job_of(struct slurm *s, const struct zerg_proc *p)
{
    char want[64], epoch[32];
    long id = 0;
    char *list = list_jobs(p->name);
    snprintf(want, sizeof want, "%" PRIu64, p->epoch);
    for (char *save = NULL, *line = list ? strtok_r(list, "\n", &save) : NULL;
         line && !id; line = strtok_r(NULL, "\n", &save)) {
        const char *c = strrchr(line, '|');
        long jid = 0;
        comment_field(c ? c + 1 : "", "zerg-epoch=", epoch, sizeof epoch);
        if (!strcmp(epoch, want) &&
            zerg_slurm_leftover(line, s->project, s->feature, NULL, &jid))
            id = jid;
    }
    free(list);
    return id;
}

static int scancel(long id, const char *signal)
{
    char ids[32];
    snprintf(ids, sizeof ids, "%ld", id);
    char *with[] = {"scancel", "--signal", (char *)signal, ids, NULL};
    char *plain[] = {"scancel", ids, NULL};
    return call(signal ? with : plain, NULL, 0);
}

/* GRACEFUL: SIGTERM to the worker itself through Slurm (a SIGTERM to
 * srun would make it kill the step at once).  NOW: SIGKILL to the step
 * and the job cancelled; srun then exits by itself. */
static int sl_cancel(struct zerg_launcher *l, const struct zerg_proc *p,
                     int how)
{
    long id = p->name[0] ? job_of(sm(l), p) : 0;
    if (id > 0 && how == ZERG_CANCEL_GRACEFUL)
        return scancel(id, "TERM");
    if (id > 0) {
        scancel(id, "KILL");
        return scancel(id, NULL);
    }
    /* Not (or no longer) known to Slurm: srun still waiting for its
     * allocation, or already ending. */
    if (p->pid <= 0)
        return -ESRCH;
    return kill(p->pid, how == ZERG_CANCEL_NOW ? SIGKILL : SIGTERM) < 0 ? -errno
                                                                        : 0;
}

/* ---- exits ----------------------------------------------------------- */

/* Slurm's words for why a step ended, as they appear in srun's output. */
static const char *slurm_cause(const char *tail)
{
    static const char *const causes[][2] = {
        {"Node failure", "node failure"},
        {"PREEMPTED", "preempted"},
        {"DUE TO TIME LIMIT", "time limit reached"},
        {"CANCELLED", "cancelled (scancel)"},
        {"Unable to allocate resources", "allocation refused"},
    };
    for (size_t i = 0; tail && i < sizeof causes / sizeof *causes; i++)
        if (strstr(tail, causes[i][0]))
            return causes[i][1];
    return NULL;
}

void zerg_slurm_exit_info(int wstatus, const char *log_tail,
                          struct zerg_exit_info *info)
{
    char line[sizeof info->detail];
    zerg_exit_info_from_status(wstatus, info);
    const char *cause = slurm_cause(log_tail);
    int code = info->exit_code;
    if (info->signal == 0 && code > 128 && code <= 128 + 64) {
        /* srun reports a step killed by signal n as 128+n. */
        info->exit_code = -1;
        info->signal = code - 128;
    } else if (cause && !strcmp(cause, "node failure")) {
        /* srun may exit 0 when the node is lost: the worker was killed. */
        info->exit_code = -1;
        info->signal = SIGKILL;
    }
    if (cause) {
        snprintf(info->detail, sizeof info->detail, "slurm: %s (srun %s %d)",
                 cause, WIFSIGNALED(wstatus) ? "signal" : "exit",
                 WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : code);
    } else if (info->signal && !WIFSIGNALED(wstatus)) {
        snprintf(info->detail, sizeof info->detail,
                 "job step killed by signal %d (%s)", info->signal,
                 strsignal(info->signal));
    } else if (code != 0 && info->signal == 0 && log_tail) {
        error_line(log_tail, line, sizeof line - 32);
        if (line[0])
            snprintf(info->detail, sizeof info->detail,
                     "exited with code %d: %.120s", code, line);
    }
}

static void sl_reaped(struct zerg_launcher *l, const struct zerg_proc *p,
                      int wstatus, struct zerg_exit_info *info)
{
    struct slurm *s = sm(l);
    char *tail =
        s->project[0] && s->feature[0]
            ? zerg_worker_log_since(s->project, s->feature, p->slot, p->epoch)
            : NULL;
    zerg_slurm_exit_info(wstatus, tail, info);
    free(tail);
    /* srun gone, job still listed (srun was killed, or the node is being
     * declared dead): it must not run on unwatched. */
    long id = p->name[0] ? job_of(s, p) : 0;
    if (id > 0)
        scancel(id, NULL);
}

static int on_path(const char *prog);

int zerg_slurm_leftover_ids(const char *project, const char *feature,
                            const char *run_id, long *ids, int max)
{
    int n = 0;
    char *list = on_path("squeue") ? list_jobs(NULL) : NULL;
    for (char *save = NULL, *line = list ? strtok_r(list, "\n", &save) : NULL;
         line && n < max; line = strtok_r(NULL, "\n", &save))
        if (zerg_slurm_leftover(line, project, feature, run_id, &ids[n]))
            n++;
    free(list);
    return n;
}

/* Cancels the feature's jobs of this project whose run is not run_id
 * (all of them when it is NULL or ""): one scancel for all. */
static int sl_cleanup(struct zerg_launcher *l, const char *feature,
                      const char *run_id)
{
    struct slurm *s = sm(l);
    char *argv[66] = {"scancel"}, ids[64][24];
    long id[64];
    int n = zerg_slurm_leftover_ids(s->project, feature, run_id, id, 64);
    for (int i = 0; i < n; i++) {
        snprintf(ids[i], sizeof ids[i], "%ld", id[i]);
        argv[1 + i] = ids[i];
    }
    argv[1 + n] = NULL;
    if (n > 0 && call(argv, NULL, 0) < 0)
        return 0;
    return n;
}

static void sl_free(struct zerg_launcher *l)
{
    free(l);
}

static const struct zerg_launcher_ops slurm_ops = {
    .name = "slurm",
    .spawn = sl_spawn,
    .cancel = sl_cancel,
    .reaped = sl_reaped,
    .cleanup = sl_cleanup,
    .free = sl_free,
    /* srun is our child, reaped by pid; the worker's pids live on the
     * nodes; logs rotate at rush start only, as a node may hold them open
     * across the shared filesystem. */
    .caps = {0},
};

/* 1 when prog is an executable on PATH. */
static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0 && n + strlen(prog) + 2 < sizeof buf) {
            snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        p += n + (p[n] == ':');
    }
    return 0;
}

struct zerg_launcher *zerg_launcher_slurm_new(const struct zerg_config *cfg,
                                              struct zerg_log *log,
                                              const char *project,
                                              struct zerg_err *err)
{
    static const char *const tools[] = {"srun", "squeue", "scancel"};
    for (size_t i = 0; i < 3; i++)
        if (!on_path(tools[i])) {
            zerg_err_set(err, ZERG_ENOTFOUND,
                         "%s not found on PATH: slurm mode needs the Slurm "
                         "client commands (srun, squeue, scancel)",
                         tools[i]);
            return NULL;
        }
    struct slurm *s = calloc(1, sizeof *s);
    if (!s) {
        zerg_err_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    snprintf(s->project, sizeof s->project, "%s", project ? project : "");
    s->base.ops = &slurm_ops;
    s->base.cfg = cfg;
    s->base.log = log;
    return &s->base;
}
