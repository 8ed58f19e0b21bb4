/* launcher.c - what both launchers share: turning a wait status into the
 * exit_info the orchestrator logs and hands to the respawn policy, and
 * where a worker's own log lives. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

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
