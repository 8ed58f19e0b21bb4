/* launcher_container.c - workers as docker/podman containers.
 *
 * Each worker incarnation is one attached `RUNTIME run` child process:
 *
 *   RUNTIME run --init --name zerg-F-{run hash}-wN-eE
 *     --label zerg.feature=F --label zerg.run=R --label zerg.worker=N
 *     --label zerg.epoch=E --label zerg.project=P
 *     --user UID:GID [--userns=keep-id]
 *     -v P:/workspace -v P/.zerg:/workspace/.zerg:ro
 *     -v P/.zerg/state/F:/workspace/.zerg/state/F:rw
 *     -v P/.zerg/logs:/workspace/.zerg/logs:rw
 *     -v P/.zerg/monitor.log:/workspace/.zerg/monitor.log:rw (and .jsonl)
 *     -v P/.gsd:/workspace/.gsd:ro [-v P/.git:/workspace/.git:ro] -w /workspace
 *     -e ZERG_FEATURE=F -e ZERG_WORKER_ID=N -e ZERG_EPOCH=E -e ZERG_RUN_ID=R
 *     [--memory M] [--cpus C] [--pids-limit P] [container.run_args...]
 *     IMAGE zerg worker -C /workspace --feature F --slot N --epoch E
 *     --run-id R
 *
 * Under worktree isolation /workspace is the slot's worktree, which holds
 * a repository of its own (src/git/ws_own.c): of the host's git dir G only
 * G/objects is mounted, read-only, and the worker gets --workspace
 * /workspace --objects G/objects; without worktrees the project's .git is
 * mounted read-only (DESIGN §19).
 *
 * Attached, the client's exit is the container's exit, so the orchestrator
 * sees a worker end as a child exit in both modes and never polls the
 * runtime.  No --rm: `reaped` makes one `inspect` for OOMKilled (gone with
 * --rm), then removes the container.  No --restart: zerg decides restarts.
 * --init gives the worker a real PID 1 (catatonit / tini) that forwards
 * signals and reaps orphaned task processes; as PID 1 itself the worker
 * would ignore any signal it has no handler for.
 *
 * The runtime's own failures (missing image, bad mount, name in use) end
 * the client with 125 before the worker is ready, which the orchestrator
 * treats as a failed spawn; the one certain permanent cause, a missing
 * image, is checked once up front so it fails fast instead of burning the
 * spawn retries.
 *
 * A task must not change how zerg runs: what decides that (.zerg/ with the
 * config and policies, .gsd/ with the graph) is mounted read-only, and
 * run_args that widen the container need the user's opt-in; see
 * container_guard.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/graph.h"
#include "zerg/launcher.h"
#include "zerg/text.h"

#include "container_internal.h"

void zerg_container_name(char *buf, size_t size,
                         const struct zerg_spawn_req *req)
{
    char tail[64];
    snprintf(tail, sizeof tail, "-%08" PRIx32 "-w%d-e%" PRIu64,
             ct_run_hash(req->run_id), req->slot, req->epoch);
    /* "zerg-" + feature + tail; the feature part gives way if needed. */
    int room = (int)size - 1 - 5 - (int)strlen(tail);
    snprintf(buf, size, "zerg-%.*s%s", room > 0 ? room : 0, req->feature, tail);
}

/* `-v SRC:DST[:MODE]` splits on ':', so a path holding one cannot be
 * expressed; say so rather than mount the wrong thing. */
static int check_paths(const struct zerg_spawn_req *req, struct zerg_err *err)
{
    if (req->project[0] != '/')
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "project path '%s' is not absolute", req->project);
    if (strchr(req->project, ':'))
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "project path '%s' contains ':', which a "
                            "container bind mount (-v) cannot express; move "
                            "the project or use --mode subprocess",
                            req->project);
    if (strlen(req->project) + strlen(req->feature) + 64 > PATH_MAX)
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "project path '%s' is too long", req->project);
    return 0;
}

static void push_identity(struct argv_buf *b, const struct zerg_spawn_req *r,
                          const char *name, const struct zerg_container_rt *rt,
                          uid_t uid, gid_t gid)
{
    ct_push_pair(b, "--name", name);
    ct_pushf(b, "--label=zerg.feature=%s", r->feature);
    ct_pushf(b, "--label=zerg.run=%s", r->run_id);
    ct_pushf(b, "--label=zerg.worker=%d", r->slot);
    ct_pushf(b, "--label=zerg.epoch=%" PRIu64, r->epoch);
    ct_pushf(b, "--label=zerg.project=%s", r->project);
    ct_push_user(b, rt, uid, gid);
}

/* Where the project is inside the container: /workspace, or under
 * worktree isolation the project's path inside the worktree mounted
 * there (a monorepo's subdirectory). */
static void inner_project(const struct zerg_spawn_req *r, char *buf, size_t n)
{
    size_t wn = r->workspace ? strlen(r->workspace) : 0;
    const char *sub = "";
    if (wn && r->workdir && !strncmp(r->workdir, r->workspace, wn) &&
        r->workdir[wn] == '/')
        sub = r->workdir + wn;
    snprintf(buf, n, "/workspace%s", sub);
}

/* Without worktrees the project's own .git is in /workspace: read-only,
 * so a task can read history but not plant config, hooks or refs. */
static void push_dotgit(struct argv_buf *b, const char *project)
{
    char dotgit[PATH_MAX];
    struct stat st;
    if (!zerg_fsio_path(dotgit, sizeof dotgit, "%s/.git", project) &&
        !lstat(dotgit, &st) && S_ISDIR(st.st_mode))
        ct_pushf(b, "--volume=%s:/workspace/.git:ro", dotgit);
}

static void push_mounts(struct argv_buf *b, const struct zerg_spawn_req *r)
{
    const char *p = r->project, *f = r->feature;
    char in[PATH_MAX];
    inner_project(r, in, sizeof in);
    /* The runtimes mount parents first, so each later mount lies over the
     * earlier one: the project (or the slot's worktree) writable, zerg's
     * control files read-only, and inside those only what the worker
     * itself writes. */
    ct_pushf(b, "--volume=%s:/workspace", r->workspace ? r->workspace : p);
    /* The worktree holds a repository of its own (src/git/ws_own.c)
     * that borrows the host's objects, mounted read-only at the path its
     * alternates names: nothing the container writes reaches the host's
     * config, hooks or refs.  The host found the path, not the task: a
     * rewritten /workspace/.git chooses no mount (DESIGN §19). */
    if (r->workspace && r->git_dir && r->git_dir[0] == '/')
        ct_pushf(b, "--volume=%s/objects:%s/objects:ro", r->git_dir,
                 r->git_dir);
    else if (!r->workspace)
        push_dotgit(b, p);
    ct_pushf(b, "--volume=%s/.zerg:%s/.zerg:ro", p, in);
    ct_pushf(b, "--volume=%s/.zerg/state/%s:%s/.zerg/state/%s:rw", p, f, in, f);
    ct_pushf(b, "--volume=%s/.zerg/logs:%s/.zerg/logs:rw", p, in);
    ct_pushf(b, "--volume=%s/.zerg/monitor.log:%s/.zerg/monitor.log:rw", p, in);
    ct_pushf(b, "--volume=%s/.zerg/monitor.jsonl:%s/.zerg/monitor.jsonl:rw", p,
             in);
    ct_pushf(b, "--volume=%s/.gsd:%s/.gsd:ro", p, in);
    ct_push_pair(b, "--workdir", in);
    if (r->workspace) {
        /* The agent's own git calls in a worktree owned by the host user:
         * never refused as "dubious ownership". */
        ct_push(b, "--env=GIT_CONFIG_COUNT=1");
        ct_push(b, "--env=GIT_CONFIG_KEY_0=safe.directory");
        ct_push(b, "--env=GIT_CONFIG_VALUE_0=*");
    }
    /* Claude Code refuses --dangerously-skip-permissions as root (the
     * default user of most images) unless it is told it is sandboxed. */
    ct_push(b, "--env=IS_SANDBOX=1");
    ct_pushf(b, "--env=ZERG_FEATURE=%s", f);
    ct_pushf(b, "--env=ZERG_WORKER_ID=%d", r->slot);
    ct_pushf(b, "--env=ZERG_EPOCH=%" PRIu64, r->epoch);
    ct_pushf(b, "--env=ZERG_RUN_ID=%s", r->run_id);
    /* `zerg rush --executor CMD` travels as the environment. */
    const char *ex = getenv("ZERG_EXECUTOR");
    if (ex && *ex)
        ct_pushf(b, "--env=ZERG_EXECUTOR=%s", ex);
}

static void push_command(struct argv_buf *b, const struct zerg_config *cfg,
                         const struct zerg_spawn_req *r)
{
    char in[PATH_MAX];
    inner_project(r, in, sizeof in);
    ct_push(b, ct_image_of(cfg));
    const char *fixed[] = {"zerg",      "worker",   "-C",    in,
                           "--feature", r->feature, "--slot"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        ct_push(b, fixed[i]);
    ct_pushf(b, "%d", r->slot);
    ct_push(b, "--epoch");
    ct_pushf(b, "%" PRIu64, r->epoch);
    ct_push_pair(b, "--run-id", r->run_id);
    if (r->workspace) {
        ct_push_pair(b, "--workspace", "/workspace");
        ct_push_pair(b, "--workdir", in);
        if (r->git_dir && r->git_dir[0] == '/') {
            ct_push(b, "--objects");
            ct_pushf(b, "%s/objects", r->git_dir);
        }
    }
}

int zerg_container_run_argv(const struct zerg_config *cfg,
                            const struct zerg_container_rt *rt,
                            const struct zerg_spawn_req *req, uid_t uid,
                            gid_t gid, struct zerg_argv *out,
                            struct zerg_err *err)
{
    struct argv_buf b = {{NULL, 0}, 0, 0};
    char name[sizeof((struct zerg_proc *)0)->name];

    out->v = NULL;
    out->n = 0;
    int rc = check_paths(req, err);
    if (rc < 0)
        return rc;
    zerg_container_name(name, sizeof name, req);
    ct_push(&b, rt->path);
    ct_push_pair(&b, "run", "--init");
    push_identity(&b, req, name, rt, uid, gid);
    push_mounts(&b, req);
    ct_push_limits(&b, cfg);
    push_command(&b, cfg, req);
    if (b.oom) {
        zerg_container_argv_free(&b.a);
        return zerg_err_set(err, -ENOMEM,
                            "out of memory building the "
                            "container command");
    }
    *out = b.a;
    return 0;
}

/* ---- exit classification ---- */

/* detail is one log line: cut, never overflowed. */
static void set_detail(struct zerg_exit_info *info, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_detail(struct zerg_exit_info *info, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(info->detail, sizeof info->detail, fmt, ap);
    va_end(ap);
}

static void runtime_failure(int code, const char *line,
                            struct zerg_exit_info *info)
{
    static const char *const what[] = {
        "the container runtime failed",
        "the worker command cannot be run in the image",
        "the worker command was not found in the image",
    };
    info->runtime_error = 1;
    set_detail(info, "%s (exit %d)%s%s", what[code - 125], code,
               line[0] ? ": " : "", line);
}

/* The last line of the log that says something: docker ends its errors
 * with "Run 'docker run --help' for more information", below the cause. */
static void error_line(const char *tail, char *line, size_t size)
{
    const char *hint = tail ? strstr(tail, "Run '") : NULL;
    for (const char *h = hint; h; h = strstr(h + 1, "Run '"))
        hint = h;
    zerg_last_line(tail, line, size);
    if (!hint || strncmp(line, "Run '", 5) != 0 || !strstr(line, "--help'"))
        return;
    size_t n = (size_t)(hint - tail);
    char *head = strndup(tail, n);
    if (head)
        zerg_last_line(head, line, size);
    free(head);
}

void zerg_container_exit_info(int wstatus, int oom_killed, const char *memory,
                              const char *log_tail, struct zerg_exit_info *info)
{
    char line[sizeof info->detail];

    zerg_exit_info_from_status(wstatus, info);
    error_line(log_tail, line, sizeof line);
    int code = info->exit_code;
    if (info->signal == 0 && code >= 125 && code <= 127) {
        runtime_failure(code, line, info);
    } else if (info->signal == 0 && code > 128 && code <= 128 + 64) {
        /* The runtime reports a container killed by signal n as 128+n. */
        info->exit_code = -1;
        info->signal = code - 128;
        set_detail(info, "container killed by signal %d (%s)", info->signal,
                   strsignal(info->signal));
    } else if (info->signal == 0 && code != 0 && line[0]) {
        set_detail(info, "exited with code %d: %s", code, line);
    }
    int limited = memory && memory[0];
    if (oom_killed) {
        info->oom_killed = 1;
        set_detail(info,
                   "killed by the kernel OOM killer "
                   "(container.memory %s)",
                   limited ? memory : "unset");
    } else if (info->signal == SIGKILL && limited) {
        /* Some runtime/cgroup combinations never report OOMKilled. */
        char was[sizeof info->detail];
        memcpy(was, info->detail, sizeof was);
        set_detail(info, "%s; memory limit %s: possibly out of memory", was,
                   memory);
    }
}

/* ---- the launcher ---- */

void zerg_container_set_project(struct zerg_launcher *l, const char *project)
{
    if (l && project)
        snprintf(ct(l)->project, sizeof ct(l)->project, "%s", project);
}

const char *zerg_container_runtime_name(const struct zerg_launcher *l)
{
    return ((const struct container *)l)->rt.name;
}

/* The image is checked by the first spawn only: it cannot appear or vanish
 * in a way worth a call per spawn, and a missing one is a permanent error
 * with a fix (make image). */
static int check_image(struct container *c, int *cls, struct zerg_err *err)
{
    const char *image = ct_image_of(c->base.cfg);
    if (c->image_state == IMAGE_UNKNOWN) {
        int r = zerg_container_image_exists(&c->rt, image, c->image_why,
                                            sizeof c->image_why);
        if (r < 0) {
            *cls = ZERG_SPAWN_TRANSIENT;
            return zerg_err_set(err, r, "%s", c->image_why);
        }
        c->image_state = r ? IMAGE_PRESENT : IMAGE_MISSING;
    }
    if (c->image_state == IMAGE_MISSING) {
        *cls = ZERG_SPAWN_PERMANENT;
        return zerg_err_set(err, ZERG_ENOTFOUND, "%s", c->image_why);
    }
    return 0;
}

static int open_log(const struct zerg_spawn_req *req, const char *name,
                    const char *rt_name, struct zerg_err *err)
{
    char what[256];
    snprintf(what, sizeof what, "container %s via %s", name, rt_name);
    return zerg_worker_log_open(req, what, err);
}

/* In the child: own process group (a stop reaches the client, not the
 * orchestrator), die with the orchestrator (the client forwards the
 * SIGTERM into the container), output to the worker log. */
static void child_exec(char **argv, int logfd, int report, pid_t parent)
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
    dup2(logfd, 1);
    dup2(logfd, 2);
    execvp(argv[0], argv);
    int e = errno;
    dprintf(2, "zerg: cannot run %s: %s\n", argv[0], strerror(e));
    if (write(report, &e, sizeof e) < 0)
        _exit(127);
    _exit(127);
}

/* Forks the attached run; 0 or -errno (exec errors come back through the
 * close-on-exec report pipe). */
static int start_child(char **argv, int logfd, pid_t *pid_out)
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
        child_exec(argv, logfd, px[1], parent);
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
    *pid_out = pid;
    return 0;
}

static int ct_spawn(struct zerg_launcher *l, const struct zerg_spawn_req *req,
                    struct zerg_proc *out, int *cls, struct zerg_err *err)
{
    struct container *c = ct(l);
    struct zerg_argv argv = {NULL, 0};
    char name[sizeof out->name];
    int logfd = -1;
    pid_t pid = -1;

    *cls = ZERG_SPAWN_TRANSIENT;
    zerg_container_set_project(l, req->project);
    snprintf(c->feature, sizeof c->feature, "%s", req->feature);
    int rc = check_image(c, cls, err);
    if (rc < 0)
        goto out;
    rc = zerg_container_prepare_mounts(req->project, req->feature, err);
    if (rc < 0) {
        *cls =
            rc == ZERG_EINVAL_INPUT || rc == ZERG_ESYMLINK || rc == ZERG_ENOTREG
                ? ZERG_SPAWN_PERMANENT
                : ZERG_SPAWN_TRANSIENT;
        goto out;
    }
    rc = zerg_container_run_argv(l->cfg, &c->rt, req, getuid(), getgid(), &argv,
                                 err);
    if (rc < 0) {
        *cls = rc == ZERG_EINVAL_INPUT ? ZERG_SPAWN_PERMANENT : *cls;
        goto out;
    }
    zerg_container_name(name, sizeof name, req);
    rc = logfd = open_log(req, name, c->rt.name, err);
    if (rc < 0)
        goto out;
    rc = start_child(argv.v, logfd, &pid);
    if (rc < 0) {
        *cls = rc == -ENOENT || rc == -EACCES ? ZERG_SPAWN_PERMANENT
                                              : ZERG_SPAWN_TRANSIENT;
        zerg_err_set(err, rc, "cannot start %s: %s", c->rt.path, strerror(-rc));
        goto out;
    }
    memset(out, 0, sizeof *out);
    out->pid = pid;
    out->slot = req->slot;
    out->epoch = req->epoch;
    snprintf(out->name, sizeof out->name, "%s", name);
out:
    if (logfd >= 0)
        close(logfd);
    zerg_container_argv_free(&argv);
    return rc < 0 ? rc : 0;
}

/* Delivers sig through the runtime (the container's PID 1 forwards it to
 * the worker).  The client is signalled only when that failed, or for
 * SIGKILL: it forwards signals itself, and one delivery is enough. */
static int ct_cancel(struct zerg_launcher *l, const struct zerg_proc *p,
                     int sig)
{
    char signame[32];
    const char *abbrev = sigabbrev_np(sig);
    int rc = -ESRCH;

    if (abbrev)
        snprintf(signame, sizeof signame, "SIG%s", abbrev);
    else
        snprintf(signame, sizeof signame, "%d", sig);
    if (p->name[0]) {
        const char *args[] = {"kill", "--signal", signame, p->name, NULL};
        rc = ct_rt_call(ct(l), args, KILL_TIMEOUT_NS, NULL, 0);
    }
    if ((rc < 0 || sig == SIGKILL) && p->pid > 0) {
        kill(-p->pid, sig);
        rc = kill(p->pid, sig) < 0 ? -errno : 0;
    }
    return rc;
}

/* One inspect per exit: did the kernel OOM killer end it? */
static int oom_killed(struct container *c, const char *name)
{
    char out[64];
    const char *args[] = {
        "container", "inspect", "--format", "{{.State.OOMKilled}}", name, NULL};
    if (ct_rt_call(c, args, INSPECT_TIMEOUT_NS, out, sizeof out) < 0)
        return 0;
    return strncmp(out, "true", 4) == 0;
}

static void remove_container(struct container *c, const char *name)
{
    const char *args[] = {"rm", "--force", name, NULL};
    ct_rt_call(c, args, RM_TIMEOUT_NS, NULL, 0);
}

static void ct_reaped(struct zerg_launcher *l, const struct zerg_proc *p,
                      int wstatus, struct zerg_exit_info *info)
{
    struct container *c = ct(l);
    int oom = 0;

    if (p->name[0]) {
        oom = oom_killed(c, p->name);
        /* Also stops it if only the client died (kill -9 of the client
         * leaves the container running). */
        remove_container(c, p->name);
    }
    char *tail = c->project[0] ? zerg_worker_log_since(c->project, c->feature,
                                                       p->slot, p->epoch)
                               : NULL;
    zerg_container_exit_info(wstatus, oom, l->cfg->container_memory, tail,
                             info);
    free(tail);
}

/* Names printed by `ps -a` with the given label filters, one a line. */
static int list_names(struct container *c, const char *feature,
                      const char *run_id, char *out, size_t size)
{
    char f_feat[128], f_proj[PATH_MAX + 32], f_run[256];
    const char *args[12];
    size_t n = 0;

    snprintf(f_feat, sizeof f_feat, "label=zerg.feature=%s", feature);
    args[n++] = "ps";
    args[n++] = "--all";
    args[n++] = "--filter";
    args[n++] = f_feat;
    /* A '=' in the value is read differently by docker and podman. */
    if (c->project[0] && !strchr(c->project, '=')) {
        snprintf(f_proj, sizeof f_proj, "label=zerg.project=%s", c->project);
        args[n++] = "--filter";
        args[n++] = f_proj;
    }
    if (run_id) {
        snprintf(f_run, sizeof f_run, "label=zerg.run=%s", run_id);
        args[n++] = "--filter";
        args[n++] = f_run;
    }
    args[n++] = "--format";
    args[n++] = "{{.Names}}";
    args[n] = NULL;
    return ct_rt_call(c, args, PS_TIMEOUT_NS, out, size);
}

static int listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *s = list; (s = strstr(s, name)); s += len)
        if ((s == list || s[-1] == '\n') && (s[len] == '\n' || !s[len]))
            return 1;
    return 0;
}

/* Removes the feature's containers whose zerg.run is not run_id (all of
 * them when run_id is NULL or ""), one `rm` each: podman 4 removes nothing
 * at all when one name of a batch has vanished meanwhile. */
static int ct_cleanup(struct zerg_launcher *l, const char *feature,
                      const char *run_id)
{
    struct container *c = ct(l);
    enum { LIST = 65536 };
    char *all = malloc(LIST), *mine = malloc(LIST);
    int removed = 0;

    /* The CLI runs from the project root: without set_project, that is
     * the project whose leftovers are ours to remove. */
    if (!c->project[0] && !getcwd(c->project, sizeof c->project))
        c->project[0] = '\0';
    if (!all || !mine || list_names(c, feature, NULL, all, LIST) < 0)
        goto out;
    mine[0] = '\0';
    if (run_id && run_id[0] && list_names(c, feature, run_id, mine, LIST) < 0)
        goto out;
    for (char *s = strtok(all, "\n"); s; s = strtok(NULL, "\n")) {
        if (!s[0] || listed(mine, s))
            continue;
        char out[256];
        const char *args[] = {"rm", "--force", s, NULL};
        if (ct_rt_call(c, args, RM_TIMEOUT_NS, out, sizeof out) == 0 && out[0])
            removed++;
    }
out:
    free(all);
    free(mine);
    return removed;
}

static void ct_free(struct zerg_launcher *l)
{
    free(l);
}

static const struct zerg_launcher_ops container_ops = {
    .name = "container",
    .spawn = ct_spawn,
    .cancel = ct_cancel,
    .reaped = ct_reaped,
    .cleanup = ct_cleanup,
    .free = ct_free,
    /* The attached client is our child; the worker's pids are the
     * container's; a bind-mounted log keeps its inode when renamed. */
    .caps = {0},
    .gate_argv = ct_gate_argv,
    .gate_stop = ct_gate_stop,
};

struct zerg_launcher *zerg_launcher_container_new(const struct zerg_config *cfg,
                                                  struct zerg_log *log,
                                                  struct zerg_err *err)
{
    char why[1024];
    /* Again for any caller (the CLI checks before it writes anything). */
    if (zerg_container_run_args_ok(cfg, log, err) < 0)
        return NULL;
    struct container *c = calloc(1, sizeof *c);

    if (!c) {
        zerg_err_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    if (zerg_container_resolve(cfg->container_runtime, &c->rt, why,
                               sizeof why) < 0) {
        zerg_err_set(err, ZERG_ENOTFOUND,
                     "container mode needs a working docker or podman: %s",
                     why);
        free(c);
        return NULL;
    }
    c->base.ops = &container_ops;
    c->base.cfg = cfg;
    c->base.log = log;
    return &c->base;
}
