/* launcher.c - what the launchers share: the worker command and its
 * environment, turning a wait status into the exit_info the orchestrator
 * logs and hands to the respawn policy, and where a worker's own log
 * lives. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/launcher.h"

void zerg_exit_info_from_status(int wstatus, struct zerg_exit_info *info)
{
    memset(info, 0, sizeof *info);
    if (WIFSIGNALED(wstatus)) {
        info->exit_code = -1;
        info->signal = WTERMSIG(wstatus);
        snprintf(info->detail, sizeof info->detail, "killed by signal %d (%s)",
                 info->signal, strsignal(info->signal));
        return;
    }
    if (WIFEXITED(wstatus)) {
        info->exit_code = WEXITSTATUS(wstatus);
        if (info->exit_code != 0)
            snprintf(info->detail, sizeof info->detail, "exited with code %d",
                     info->exit_code);
        return;
    }
    /* Stopped/continued statuses are not exits; say so rather than guess. */
    info->exit_code = -1;
    snprintf(info->detail, sizeof info->detail, "unexpected wait status 0x%x",
             (unsigned)wstatus);
}

int zerg_worker_log_path(char *buf, size_t size, const char *project,
                         const char *feature, int slot, struct zerg_err *err)
{
    char zdir[PATH_MAX], rel[PATH_MAX];
    int rc = zerg_fsio_path(zdir, sizeof zdir, "%s/.zerg", project);
    if (rc == 0)
        rc = zerg_fsio_path(rel, sizeof rel, "logs/%s", feature);
    if (rc == 0)
        rc = zerg_fsio_path(buf, size, "%s/%s/worker-%d.log", zdir, rel, slot);
    if (rc < 0)
        return zerg_err_set(err, rc, "project path too long");
    return zerg_fsio_mkdirs_own(zdir, rel, 0755, err);
}

void zerg_worker_cmd_init(struct zerg_worker_cmd *c,
                          const struct zerg_spawn_req *req)
{
    snprintf(c->slot, sizeof c->slot, "%d", req->slot);
    snprintf(c->epoch, sizeof c->epoch, "%" PRIu64, req->epoch);
    const char *v[ZERG_WORKER_ARGC] = {req->zerg_bin, "worker",    "-C",
                                       req->project,  "--feature", req->feature,
                                       "--slot",      c->slot,     "--epoch",
                                       c->epoch,      "--run-id",  req->run_id};
    size_t n = 12;
    if (req->workspace) {
        v[n++] = "--workspace";
        v[n++] = req->workspace;
        v[n++] = "--workdir";
        v[n++] = req->workdir ? req->workdir : req->workspace;
    }
    for (size_t i = 0; i < ZERG_WORKER_ARGC; i++)
        c->argv[i] = (char *)v[i];
    c->argv[ZERG_WORKER_ARGC] = NULL;
}

void zerg_worker_setenv(const struct zerg_spawn_req *req, pid_t orch_pid)
{
    char buf[32];
    if (orch_pid > 0) {
        snprintf(buf, sizeof buf, "%d", (int)orch_pid);
        setenv("ZERG_ORCH_PID", buf, 1);
    } else {
        unsetenv("ZERG_ORCH_PID");
    }
    setenv("ZERG_PROJECT", req->project, 1);
    setenv("ZERG_RUN_ID", req->run_id, 1);
    setenv("ZERG_FEATURE", req->feature, 1);
    snprintf(buf, sizeof buf, "%d", req->slot);
    setenv("ZERG_WORKER_ID", buf, 1);
    snprintf(buf, sizeof buf, "%" PRIu64, req->epoch);
    setenv("ZERG_EPOCH", buf, 1);
}

/* How much of a worker log is read back to explain an exit. */
#define LOG_TAIL_BYTES 16384

static int log_marker(char *buf, size_t size, int slot, uint64_t epoch)
{
    return snprintf(buf, size, "=== zerg: worker %d epoch %" PRIu64 " ", slot,
                    epoch);
}

int zerg_worker_log_open(const struct zerg_spawn_req *req, const char *what,
                         struct zerg_err *err)
{
    char path[PATH_MAX], line[512];
    int rc = zerg_worker_log_path(path, sizeof path, req->project, req->feature,
                                  req->slot, err);
    if (rc < 0)
        return rc;
    /* Never through a link: the logs directory is writable by tasks. */
    int fd = zerg_fsio_open_append(path, err);
    if (fd < 0)
        return fd;
    int n = log_marker(line, sizeof line, req->slot, req->epoch);
    n += snprintf(line + n, sizeof line - (size_t)n, "%s ===\n", what);
    if (write(fd, line, strlen(line)) < 0) {
        /* The log is for people; a worker still runs without it. */
    }
    (void)n;
    return fd;
}

/* The last LOG_TAIL_BYTES of the log at path (malloc'd), or NULL. */
static char *log_tail(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *buf = malloc(LOG_TAIL_BYTES + 1);
    ssize_t n = -1;
    if (buf && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        off_t from =
            st.st_size > LOG_TAIL_BYTES ? st.st_size - LOG_TAIL_BYTES : 0;
        n = pread(fd, buf, LOG_TAIL_BYTES, from);
    }
    close(fd);
    if (n < 0) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

char *zerg_worker_log_since(const char *project, const char *feature, int slot,
                            uint64_t epoch)
{
    char path[PATH_MAX], mark[96];
    if (zerg_worker_log_path(path, sizeof path, project, feature, slot, NULL) <
        0)
        return NULL;
    char *buf = log_tail(path);
    if (!buf)
        return NULL;
    log_marker(mark, sizeof mark, slot, epoch);
    char *at = NULL;
    for (char *s = strstr(buf, mark); s; s = strstr(s + 1, mark))
        at = s;
    if (at) {
        char *eol = strchr(at, '\n');
        char *from = eol ? eol + 1 : at + strlen(at);
        memmove(buf, from, strlen(from) + 1);
    }
    return buf;
}
