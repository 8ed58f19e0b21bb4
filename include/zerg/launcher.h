/* launcher.h - how a worker comes to exist: one ops table, three launchers.
 *
 * A launcher is an ops table (DESIGN §15): spawn, cancel, reaped,
 * cleanup and free, the gate ops, plus what it can do (capabilities).
 * Every op and capability here has a caller.  Everything above
 * this interface is shared; the orchestrator never asks which launcher it
 * drives, only what it can do.
 *
 * The three launchers here all start one local child process per worker
 * incarnation: the `zerg worker` process itself (subprocess, wrapped by
 * workers.launch_prefix), the container runtime's attached `run`
 * (container) or `srun` (slurm), whose exit is the worker's end: the
 * orchestrator reaps the child and calls reaped.  A launcher whose worker
 * is not a child of ours (a Kubernetes Job: docs/wiki/Cluster-Mode.md)
 * would add a poll op, and the orchestrator's loop a caller for it. */
#ifndef ZERG_LAUNCHER_H
#define ZERG_LAUNCHER_H

#include <stdint.h>
#include <sys/types.h>

struct zerg_err;
struct zerg_config;
struct zerg_log;
struct zerg_argv;

struct zerg_spawn_req {
    int slot;
    uint64_t epoch;
    const char *feature;
    const char *run_id;
    const char *project;  /* absolute project root */
    const char *zerg_bin; /* absolute path of the zerg binary */
    /* Worktree isolation (DESIGN §13): the slot's worktree and the
     * directory tasks run in inside it; NULL = none (the project). */
    const char *workspace;
    const char *workdir;
    /* The repository's common git dir as the host found it (container
     * mode mounts it so git works inside); NULL = none.  Never read from
     * the worktree, whose .git file a task can rewrite. */
    const char *git_dir;
};

/* One quality gate run (orch_gate.c). */
struct zerg_gate_req {
    const char *feature;
    const char *run_id;
    const char *project; /* absolute project root */
    const char *name;    /* the gate's name from quality_gates */
    int level;
    const char *dir;     /* the gate worktree's directory to run in */
    const char *top;     /* the top of that worktree (dir or a parent) */
    const char *git_dir; /* the repository's common git dir, NULL = none */
    const char *command; /* run with /bin/sh -c */
};

struct zerg_proc {
    pid_t pid;     /* the child we wait for */
    char name[96]; /* container or Slurm job name, "" in
                      subprocess mode */
    int slot;
    uint64_t epoch;
    /* The read end (non-blocking, close-on-exec) of the pipe
     * that carries the worker's stdout, its event lines (zerg/protocol.h);
     * whoever runs the event loop reads and closes it.  0 = none, so a
     * zeroed zerg_proc has none (the launcher never hands out fd 0). */
    int events_fd;
};

/* How a worker ended, as far as the launcher can tell. */
struct zerg_exit_info {
    int exit_code;     /* -1 when killed by a signal */
    int signal;        /* 0 when it exited */
    int oom_killed;    /* container mode: the kernel OOM killer */
    int runtime_error; /* the runtime itself failed (exit 125..127) */
    char detail[160];  /* one line for the log, "" when none */
};

/* Spawn failure classes: a transient failure goes through spawn retry with
 * backoff (FR-1); a permanent one (missing image, bad mount, binary not
 * found) fails fast with the fix in err. */
enum { ZERG_SPAWN_TRANSIENT = 1, ZERG_SPAWN_PERMANENT = 2 };

/* How much time cancel leaves the worker.  The values are the signals a
 * local worker gets, so a launcher that signals a child passes them on. */
enum zerg_cancel {
    ZERG_CANCEL_GRACEFUL = 15, /* SIGTERM: end the task and exit; the
                                  orchestrator cancels NOW after its
                                  stop grace if it is still there */
    ZERG_CANCEL_NOW = 9,       /* SIGKILL: gone at once, task included */
};

/* What a launcher can do; the orchestrator decides by these, never by
 * name. */
struct zerg_launcher_caps {
    int local_pids;   /* the worker's processes are in our pid namespace:
                         a task's process group can be killed from here */
    int reopens_logs; /* the worker reopens a log by its path at each line,
                         so the log can rotate while it runs (a container
                         keeps writing a renamed file through its bind
                         mount: rotation waits for the next rush) */
};

struct zerg_launcher;
/* The first six members keep their order: tables written positionally
 * (the tests' fake launchers) stay valid; caps follow, zero when omitted
 * (no capabilities). */
struct zerg_launcher_ops {
    const char *name; /* "subprocess" | "container" | "slurm" */
    /* Starts a worker.  0, or a negative code with err set and *class
     * set to ZERG_SPAWN_TRANSIENT or ZERG_SPAWN_PERMANENT. */
    int (*spawn)(struct zerg_launcher *l, const struct zerg_spawn_req *req,
                 struct zerg_proc *out, int *cls, struct zerg_err *err);
    /* Ends the worker, with grace (enum zerg_cancel: its value is the
     * signal a local worker gets).  Never blocks for long. */
    int (*cancel)(struct zerg_launcher *l, const struct zerg_proc *p, int how);
    /* Called once after the worker ended with its wait status (from the
     * reaped child, or from poll): fills info and releases what the
     * worker held (removes the container, its cgroup, its job). */
    void (*reaped)(struct zerg_launcher *l, const struct zerg_proc *p,
                   int wstatus, struct zerg_exit_info *info);
    /* Removes workers left by earlier runs of feature (all of them when
     * run_id is NULL or ""); returns how many were removed. */
    int (*cleanup)(struct zerg_launcher *l, const char *feature,
                   const char *run_id);
    void (*free)(struct zerg_launcher *l);
    struct zerg_launcher_caps caps;
    /* Quality gates where the workers' code runs (DESIGN §19): fills out
     * with the argv that runs req->command there (argv[0] is found on
     * PATH: posix_spawnp) and handle with what gate_stop needs to end it.
     * 0, or negative with err set.  NULL: workers run on this host's
     * filesystem as the user, and so does the gate (/bin/sh -c). */
    int (*gate_argv)(struct zerg_launcher *l, const struct zerg_gate_req *req,
                     struct zerg_argv *out, char *handle, size_t handle_n,
                     struct zerg_err *err);
    /* Ends a gate started from gate_argv whose client was killed (its
     * timeout) or that ended: nothing of it stays.  Blocks at most a few
     * seconds. */
    void (*gate_stop)(struct zerg_launcher *l, const char *handle);
};

struct zerg_launcher {
    const struct zerg_launcher_ops *ops;
    const struct zerg_config *cfg;
    struct zerg_log *log;
};

/* Subprocess mode: fork + exec of [launch_prefix...] zerg_bin worker ...,
 * in its own process group, PR_SET_PDEATHSIG(SIGTERM). */
struct zerg_launcher *
zerg_launcher_subprocess_new(const struct zerg_config *cfg,
                             struct zerg_log *log);

/* The pipe a local launcher (subprocess, slurm) makes the worker's stdout:
 * fds[0] for zerg_proc.events_fd (non-blocking, never fd 0), fds[1] for
 * the child's fd 1; both close-on-exec.  The child also gets
 * ZERG_STDIO_EVENTS=1, which tells the worker to write its event lines
 * there.  0 or -errno. */
int zerg_worker_events_pipe(int fds[2]);

/* Kills processes left by an earlier rush of feature in project (found by
 * their ZERG_PROJECT/ZERG_FEATURE/ZERG_RUN_ID environment, any run other
 * than run_id); returns how many were killed. */
int zerg_subprocess_kill_leftovers(const char *project, const char *feature,
                                   const char *run_id);

/* Container mode through the docker/podman CLI (argv, never a shell).
 * Probes the runtime; NULL with err set if none works. */
struct zerg_launcher *zerg_launcher_container_new(const struct zerg_config *cfg,
                                                  struct zerg_log *log,
                                                  struct zerg_err *err);

/* For --mode auto: 1 when a container runtime really works (probed, not
 * just found on PATH); why gets a sentence either way. */
int zerg_container_available(const struct zerg_config *cfg, char *why,
                             size_t why_size);

/* Slurm mode: each worker is `srun --unbuffered --job-name
 * zerg-{feature}-w{n} --comment "zerg-run=R zerg-project=H zerg-epoch=E"
 * [slurm.* settings] -N1 -n1 zerg worker ...`, a child of ours, so srun's
 * exit is the worker's end.  project is the absolute project root (its
 * hash tells this project's jobs from another's in cleanup).  NULL with
 * err set when srun is not on PATH. */
struct zerg_launcher *zerg_launcher_slurm_new(const struct zerg_config *cfg,
                                              struct zerg_log *log,
                                              const char *project,
                                              struct zerg_err *err);

/* The worker command every local launcher runs (subprocess and slurm):
 * zerg_bin worker -C PROJECT --feature F --slot N --epoch E --run-id R
 * [--workspace W --workdir D].  argv points into req and the struct's own
 * buffers; ZERG_WORKER_ARGC is the most it holds, NULLs after the end. */
#define ZERG_WORKER_ARGC 16
struct zerg_worker_cmd {
    char *argv[ZERG_WORKER_ARGC + 1]; /* NULL-terminated */
    char slot[16], epoch[24];
};
void zerg_worker_cmd_init(struct zerg_worker_cmd *c,
                          const struct zerg_spawn_req *req);

/* Environment every worker gets (both modes): ZERG_FEATURE, ZERG_WORKER_ID,
 * ZERG_EPOCH, ZERG_RUN_ID, ZERG_PROJECT; ZERG_ORCH_PID set to orch_pid when
 * positive, removed otherwise (a worker on another node cannot check a
 * pid of ours).  For the forked child, before exec. */
void zerg_worker_setenv(const struct zerg_spawn_req *req, pid_t orch_pid);

/* Slurm building blocks (src/launch/launcher_slurm.c), for tests. */

/* The srun argv of one worker (malloc'd, free with
 * zerg_container_argv_free): srun --unbuffered --job-name ... --comment
 * ... [--partition P] [--account A] [--time T] [extra...] -N1 -n1 and the
 * worker command.  0 or -ENOMEM. */
int zerg_slurm_srun_argv(const struct zerg_config *cfg,
                         const struct zerg_spawn_req *req,
                         struct zerg_argv *out);
/* zerg-{feature}-w{slot}, cut to size. */
void zerg_slurm_job_name(char *buf, size_t size, const char *feature, int slot);
/* The job comment: "zerg-run=R zerg-project=HASH zerg-epoch=E". */
void zerg_slurm_comment(char *buf, size_t size, const char *project,
                        const char *run_id, uint64_t epoch);
/* 1 when a `squeue -h -o "%i|%j|%k"` line is a job of (project, feature)
 * whose run is not run_id (any run when run_id is NULL or ""), with its
 * job id in *jobid; 0 otherwise. */
int zerg_slurm_leftover(const char *line, const char *project,
                        const char *feature, const char *run_id, long *jobid);
/* The ids of such jobs that squeue lists now, at most max; how many (0
 * when squeue cannot be run). */
int zerg_slurm_leftover_ids(const char *project, const char *feature,
                            const char *run_id, long *ids, int max);
/* Classifies srun's end (wait status, and the worker log since this
 * incarnation started, may be NULL): 128+n is the step killed by signal
 * n; "Node failure" / "CANCELLED" / "PREEMPTED" / "TIME LIMIT" lines name
 * the cause in detail.  All of these go the crash path (FR-5). */
void zerg_slurm_exit_info(int wstatus, const char *log_tail,
                          struct zerg_exit_info *info);
/* Whether srun's answer to the --test-only probe (exit status and its
 * stderr) means the request itself is wrong (no such partition or
 * account, bad option or time limit): 1 permanent, 0 transient. */
int zerg_slurm_probe_permanent(int wstatus, const char *errout);

/* Fills an exit_info from a wait status (shared by both launchers). */
void zerg_exit_info_from_status(int wstatus, struct zerg_exit_info *info);

/* A worker's own log, .zerg/logs/{feature}/worker-{slot}.log, into buf;
 * its directory is made without following links (zerg_fsio_mkdirs_own).
 * 0 or negative with err set. */
int zerg_worker_log_path(char *buf, size_t size, const char *project,
                         const char *feature, int slot, struct zerg_err *err);

/* Opens the worker log for appending (never through a link) and writes
 * the line that starts this incarnation's output in it, "=== zerg: worker
 * N epoch E WHAT ===", so an exit can be explained from what followed.
 * The fd, or negative with err set. */
int zerg_worker_log_open(const struct zerg_spawn_req *req, const char *what,
                         struct zerg_err *err);
/* What the worker log holds since incarnation (slot, epoch)'s marker, at
 * most its last 16 KiB (malloc'd, or NULL): the launcher's or the
 * runtime's error for a failed start is its last line. */
char *zerg_worker_log_since(const char *project, const char *feature, int slot,
                            uint64_t epoch);

/* ---- Container mode building blocks (src/container_probe.c,
 * src/launcher_container.c), exposed for tests and diagnostics. ---- */

struct zerg_argv;

/* A container runtime whose engine answered its probe. */
struct zerg_container_rt {
    char path[4096];  /* argv[0]: a name looked up on PATH, or a path */
    char name[64];    /* "podman", "docker" or the path's basename */
    char version[64]; /* its `--version` line, for messages */
    int podman;       /* podman flavour: rootless needs --userns=keep-id */
};

/* Runs argv (execvp, never a shell) with stdin from /dev/null and a
 * timeout; stdout keeps its head, stderr its tail (both NUL-terminated;
 * either buffer may be NULL).  0 with *wstatus when the command ran,
 * -ETIMEDOUT when it was killed at the deadline, -errno when it could not
 * be started (-ENOENT: not found). */
int zerg_container_exec(char *const argv[], int64_t timeout_ns, char *out,
                        size_t out_size, char *errout, size_t err_size,
                        int *wstatus);

/* Resolves container.runtime ("auto" or NULL tries podman then docker;
 * "docker", "podman" or a path tries that one) to a runtime whose `info`
 * answers within 20 s.  0 (why says which), or ZERG_ENOTFOUND with why
 * saying what each candidate lacked ("docker: client found but no daemon
 * (Cannot connect to the Docker daemon ...)"). */
int zerg_container_resolve(const char *setting, struct zerg_container_rt *rt,
                           char *why, size_t why_size);

/* 1 if image exists for rt, 0 if not ("image 'zerg-worker' not found for
 * podman: build it with `make image` (or set container.image)"), negative
 * when the runtime did not answer; why gets a sentence either way. */
int zerg_container_image_exists(const struct zerg_container_rt *rt,
                                const char *image, char *why, size_t why_size);

/* The container name zerg-{feature}-{run hash}-w{slot}-e{epoch}, cut to
 * fit struct zerg_proc.name (the feature part is shortened if needed). */
void zerg_container_name(char *buf, size_t size,
                         const struct zerg_spawn_req *req);

/* The whole attached `run` argv of one worker: labels, --user uid:gid,
 * the FR-7 mounts, limits, container.run_args, image and the worker
 * command.  out->v and its strings are malloc'd (free with
 * zerg_container_argv_free).  0, ZERG_EINVAL_INPUT (a project path `-v`
 * cannot express) or -ENOMEM, with err set. */
int zerg_container_run_argv(const struct zerg_config *cfg,
                            const struct zerg_container_rt *rt,
                            const struct zerg_spawn_req *req, uid_t uid,
                            gid_t gid, struct zerg_argv *out,
                            struct zerg_err *err);
void zerg_container_argv_free(struct zerg_argv *a);

/* Classifies a container worker's end from the wait status of its
 * attached `run`: 125 runtime failure, 126/127 worker command cannot run
 * (runtime_error, detail from the last line of log_tail, the worker log
 * since this incarnation started; may be NULL), 128+n killed by signal n,
 * oom_killed as the runtime reported it (memory: container.memory, for the
 * hint when a SIGKILL may have been the OOM killer). */
void zerg_container_exit_info(int wstatus, int oom_killed, const char *memory,
                              const char *log_tail,
                              struct zerg_exit_info *info);

/* The project whose containers cleanup may remove (label zerg.project):
 * call before cleanup so two projects with the same feature name never
 * remove each other's workers.  spawn sets it too; until then cleanup
 * takes the working directory (the CLI runs from the project root). */
void zerg_container_set_project(struct zerg_launcher *l, const char *project);

/* Refuses container.run_args that would give tasks power over the host
 * (--privileged, --cap-add, --device, --security-opt, -v/--volume,
 * --mount, --volumes-from, --group-add, a host or container: namespace for
 * --network/--net/--pid/--ipc/--uts/--userns/--cgroupns, --user root or 0)
 * unless allow (ZERG_ALLOW_RUN_ARGS: flag names separated by spaces or
 * commas, e.g. "--privileged --cap-add") names the flag.  0, with allowed
 * (may be NULL) listing the risky flags that were let through ("" when
 * none); or ZERG_EINVAL_INPUT with err naming the argument and how to
 * allow it. */
int zerg_container_check_run_args(const struct zerg_argv *args,
                                  const char *allow, char *allowed,
                                  size_t allowed_size, struct zerg_err *err);

/* zerg_container_check_run_args of cfg's run_args against the environment's
 * ZERG_ALLOW_RUN_ARGS; when risky ones were allowed, logs the warning
 * container_run_args_allowed naming them.  0 or ZERG_EINVAL_INPUT. */
int zerg_container_run_args_ok(const struct zerg_config *cfg,
                               struct zerg_log *log, struct zerg_err *err);

/* Makes the sources of a worker container's read-write mounts exist
 * (.zerg/state/{feature}, .zerg/logs, .zerg/monitor.log and .jsonl) and
 * checks that they, .zerg and .gsd are the project's own paths, reached
 * through no symbolic link.  0, or negative with err set (ZERG_EINVAL_INPUT
 * for a link: a permanent spawn failure). */
int zerg_container_prepare_mounts(const char *project, const char *feature,
                                  struct zerg_err *err);

/* The runtime a container launcher drives ("podman"), for messages. */
const char *zerg_container_runtime_name(const struct zerg_launcher *l);

#endif
