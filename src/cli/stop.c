/* stop.c - `zerg stop`: end a running rush.
 *
 * The rush holding the feature's lock is asked to stop with SIGTERM: it
 * stops its workers gracefully (each running task gets SIGTERM, then
 * workers.stop_grace_seconds before SIGKILL), saves its state and
 * releases the lock, which is what this command waits for (the grace
 * and 10 s more, polled every 100 ms).  --force is for a
 * rush that no longer answers: SIGKILL to it, then to the worker processes
 * and task process groups recorded in the state file and heartbeats, and
 * `RUNTIME rm -f` for recorded containers.  A recorded pid may have been
 * reused by an unrelated process since, so a process is killed only if it
 * still looks like a zerg worker (/proc/PID/cmdline) or a zerg task
 * (ZERG_TASK_ID in /proc/PID/environ).  Last, what left the recorded
 * groups (a task's setsid daemons) goes too: the workers' cgroups and
 * every process with this project's and feature's ZERG_* environment, of
 * any run (zerg_subprocess_kill_leftovers). */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/fsio.h"
#include "zerg/json.h"
#include "zerg/launcher.h"
#include "zerg/lock.h"
#include "zerg/protocol.h"

#define WAIT_MS 10000 /* past the stop grace */
#define POLL_MS 100
#define PID_WAIT_MS 2000 /* a rush writes its pid just after it locks */
#define PID_POLL_MS 20
#define STATE_MAX_BYTES (256u << 20)
#define PROC_MAX_BYTES (1u << 20)

static const char usage[] =
    "usage: zerg stop [--feature F] [--force]\n"
    "\n"
    "Stops the rush running for the feature gracefully: sends it SIGTERM;\n"
    "each running task gets SIGTERM and workers.stop_grace_seconds (10) to\n"
    "end before SIGKILL; the rush saves its state (the stopped tasks are\n"
    "pending again, nothing is charged) and exits.  Waits for that, the\n"
    "grace and 10 s more.  Resume later with 'zerg rush --resume'.\n"
    "\n"
    "Options:\n"
    "  --force      SIGKILL at once: the rush, its worker processes, task\n"
    "               process groups and what their tasks left running, and\n"
    "               remove its recorded containers\n"
    "  --feature F  the feature (default: see 'zerg --help')\n"
    "  -C DIR       run as if started in DIR\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit codes: 0 stopped; 1 no rush running, or it did not stop in time;\n"
    "2 usage error.\n";

struct stop {
    char feature[ZERG_ID_MAX + 1];
    char lock_path[PATH_MAX];
    char state_dir[PATH_MAX]; /* the feature's run directory */
    char state_path[PATH_MAX];
    int force;
    int wait_ms; /* how long a graceful stop may take */
};

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls the lock until it is free; 1 when released within wait_ms. */
static int wait_released(const char *lock_path, int wait_ms)
{
    for (int waited = 0; waited <= wait_ms; waited += POLL_MS) {
        if (zerg_lock_probe(lock_path, NULL) == 0)
            return 1;
        sleep_ms(POLL_MS);
    }
    return 0;
}

/* zerg_lock_probe, where a pid no process has (a rush killed before
 * it could empty the file left it) is no pid. */
static int probe_live(const char *lock_path, pid_t *pid)
{
    int held = zerg_lock_probe(lock_path, pid);
    if (held > 0 && *pid && kill(*pid, 0) != 0 && errno == ESRCH)
        *pid = 0;
    return held;
}

/* The lock's state and its holder's pid.  A rush records its pid just
 * after it takes the lock, so a held lock without a live one is probed
 * again for PID_WAIT_MS (a stop right after a rush started found none,
 * or the pid of the rush before it: a graceful stop gave up and --force
 * killed nothing). */
static int probe_holder(const char *lock_path, pid_t *pid)
{
    int held = probe_live(lock_path, pid);
    for (int waited = 0; held > 0 && !*pid && waited < PID_WAIT_MS;
         waited += PID_POLL_MS) {
        sleep_ms(PID_POLL_MS);
        held = probe_live(lock_path, pid);
    }
    return held;
}

/* ---- --force: what the rush left behind -------------------------------- */

/* 1 if /proc/pid/<what> holds needle among its NUL-separated entries
 * (prefix match when prefix is set). */
static int proc_has(int pid, const char *what, const char *needle, int prefix)
{
    char path[64], *text = NULL;
    size_t len = 0, nl = strlen(needle);
    snprintf(path, sizeof path, "/proc/%d/%s", pid, what);
    if (zerg_fsio_read_all(path, PROC_MAX_BYTES, &text, &len, NULL))
        return 0;
    int found = 0;
    for (size_t i = 0; i < len && !found; i += strlen(text + i) + 1) {
        const char *e = text + i;
        const char *base = strrchr(e, '/');
        found = prefix ? strncmp(e, needle, nl) == 0
                       : strcmp(base ? base + 1 : e, needle) == 0;
    }
    free(text);
    return found;
}

static int is_worker_process(int pid)
{
    return pid > 1 && proc_has(pid, "cmdline", "zerg", 0) &&
           proc_has(pid, "cmdline", "worker", 0);
}

static int is_task_process(int pgid)
{
    return pgid > 1 && proc_has(pgid, "environ", "ZERG_TASK_ID=", 1);
}

static void kill_worker(int pid)
{
    if (!is_worker_process(pid))
        return;
    /* Its own group first (it leads one when spawned), then itself. */
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    printf("Killed worker process %d.\n", pid);
}

static int run_argv(char *const argv[])
{
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The stop grace of the project's configuration plus WAIT_MS, in ms (the
 * default grace when the configuration cannot be read: the rush that is
 * running read it, this is only how long to wait). */
static int graceful_wait_ms(const struct zerg_cli *cli)
{
    struct zerg_config cfg;
    struct zerg_err err = {0};
    zerg_config_defaults(&cfg);
    if (zerg_cli_config(cli, &cfg, &err) != 0) {
        zerg_config_free(&cfg);
        zerg_config_defaults(&cfg);
    }
    int64_t ms = cfg.stop_grace_ns / ZERG_NS_PER_MS + WAIT_MS;
    zerg_config_free(&cfg);
    return (int)ms;
}

/* docker or podman from config (auto: the first found on PATH). */
static const char *runtime(const struct zerg_cli *cli, char *buf, size_t n)
{
    struct zerg_config cfg;
    struct zerg_err err = {0};
    const char *rt = "auto";
    zerg_config_defaults(&cfg);
    if (zerg_cli_config(cli, &cfg, &err) == 0 && cfg.container_runtime) {
        snprintf(buf, n, "%s", cfg.container_runtime);
        rt = buf;
    }
    zerg_config_free(&cfg);
    if (strcmp(rt, "auto") != 0)
        return rt;
    char *const probe[] = {"podman", "--version", NULL};
    return run_argv(probe) == 0 ? "podman" : "docker";
}

static void remove_container(const struct zerg_cli *cli, const char *name)
{
    char buf[PATH_MAX];
    const char *rt = runtime(cli, buf, sizeof buf);
    char *const argv[] = {(char *)rt, "rm", "-f", (char *)name, NULL};
    /* The runtime's own output would interleave with ours. */
    fflush(stdout);
    int rc = run_argv(argv);
    if (rc == 0)
        printf("Removed container %s.\n", name);
    else
        zerg_cli_error("stop", "'%s rm -f %s' failed (exit %d)", rt, name, rc);
}

/* Worker pids and containers from the state file, read as plain JSON so a
 * changed graph does not stand in the way. */
static void kill_recorded_workers(const struct zerg_cli *cli,
                                  const struct stop *st)
{
    char *text = NULL;
    size_t len = 0;
    if (zerg_fsio_read_all(st->state_path, STATE_MAX_BYTES, &text, &len, NULL))
        return;
    zerg_json *doc = zerg_json_parse(text, len, NULL);
    free(text);
    const zerg_json *workers = zerg_json_get(doc, "workers");
    for (size_t i = 0; i < zerg_json_len(workers); i++) {
        const zerg_json *w = zerg_json_at(workers, i);
        double pid = zerg_json_as_num(zerg_json_get(w, "pid"), 0);
        const char *cid = zerg_json_as_str(zerg_json_get(w, "container_id"));
        if (pid > 1 && pid < 1 << 22)
            kill_worker((int)pid);
        if (cid && *cid && zerg_id_valid(cid))
            remove_container(cli, cid);
    }
    zerg_json_free(doc);
}

/* Task process groups from the heartbeats (workers run each task in its
 * own group, which survives its worker). */
static void kill_task_groups(const struct stop *st)
{
    DIR *d = opendir(st->state_dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[PATH_MAX];
        struct zerg_heartbeat hb;
        int slot;
        if (zerg_proto_classify(e->d_name, &slot) != 'h' ||
            zerg_fsio_path(path, sizeof path, "%s/%s", st->state_dir,
                           e->d_name) ||
            zerg_proto_read_heartbeat(path, &hb) ||
            !is_task_process(hb.task_pgid))
            continue;
        kill(-hb.task_pgid, SIGKILL);
        printf("Killed task %s (process group %d).\n", hb.task_id,
               hb.task_pgid);
    }
    if (d)
        closedir(d);
}

/* ---- the command ------------------------------------------------------- */

static int stop_graceful(const struct stop *st, pid_t pid)
{
    if (kill(pid, SIGTERM) != 0) {
        zerg_cli_error("stop", "cannot signal the rush (pid %d): %s", (int)pid,
                       strerror(errno));
        return ZERG_EXIT_FAIL;
    }
    printf("Asked the rush for %s (pid %d) to stop: its running tasks get "
           "SIGTERM and %g s to end before SIGKILL; waiting...\n",
           st->feature, (int)pid, (st->wait_ms - WAIT_MS) / 1000.0);
    fflush(stdout);
    if (!wait_released(st->lock_path, st->wait_ms)) {
        zerg_cli_error("stop",
                       "the rush (pid %d) did not stop within %g s; "
                       "'zerg stop --force' kills it",
                       (int)pid, st->wait_ms / 1000.0);
        return ZERG_EXIT_FAIL;
    }
    printf("Stopped. Resume with 'zerg rush --resume'.\n");
    return ZERG_EXIT_OK;
}

static int stop_force(const struct zerg_cli *cli, const struct stop *st,
                      pid_t pid)
{
    if (pid && kill(pid, SIGKILL) == 0)
        printf("Killed the rush for %s (pid %d).\n", st->feature, (int)pid);
    kill_recorded_workers(cli, st);
    kill_task_groups(st);
    /* "": every run of this feature, the one just killed included. */
    int n = zerg_subprocess_kill_leftovers(cli->project, st->feature, "");
    if (n > 0)
        printf("Killed %d more process%s of %s (left by its tasks).\n", n,
               n == 1 ? "" : "es", st->feature);
    if (!wait_released(st->lock_path, WAIT_MS)) {
        zerg_cli_error("stop", "the lock %s is still held", st->lock_path);
        return ZERG_EXIT_FAIL;
    }
    printf("Stopped. The state file may lag behind; 'zerg rush --resume' "
           "reconciles it.\n");
    return ZERG_EXIT_OK;
}

static int parse(int argc, char **argv, struct stop *st)
{
    static const struct option opts[] = {
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            st->force = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return ZERG_EXIT_OK;
        default:
            return zerg_cli_usage_error("stop", NULL);
        }
    }
    if (optind < argc)
        return zerg_cli_usage_error("stop", "unexpected argument '%s'",
                                    argv[optind]);
    return -1;
}

int zerg_cmd_stop(struct zerg_cli *cli, int argc, char **argv)
{
    struct stop st = {0};
    struct zerg_err err = {0};
    int rc = parse(argc, argv, &st);
    if (rc >= 0)
        return rc;
    if (zerg_cli_feature(cli, st.feature, sizeof st.feature, &err)) {
        zerg_cli_error("stop", "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    if (zerg_cli_path(cli, st.lock_path, sizeof st.lock_path,
                      ".zerg/state/%s.lock", st.feature) ||
        zerg_cli_path(cli, st.state_dir, sizeof st.state_dir, ".zerg/state/%s",
                      st.feature) ||
        zerg_cli_path(cli, st.state_path, sizeof st.state_path,
                      ".zerg/state/%s.json", st.feature)) {
        zerg_cli_error("stop", "the project path is too long");
        return ZERG_EXIT_USAGE;
    }
    pid_t pid = 0;
    if (probe_holder(st.lock_path, &pid) <= 0) {
        zerg_cli_error("stop", "no rush is running for %s", st.feature);
        return ZERG_EXIT_FAIL;
    }
    if (st.force)
        return stop_force(cli, &st, pid);
    st.wait_ms = graceful_wait_ms(cli);
    if (!pid) {
        zerg_cli_error("stop",
                       "a rush holds %s but did not record its pid; "
                       "'zerg stop --force' removes what it left",
                       st.lock_path);
        return ZERG_EXIT_FAIL;
    }
    return stop_graceful(&st, pid);
}
