/* launcher.c - what both launchers share: turning a wait status into the
 * exit_info the orchestrator logs and hands to the respawn policy. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

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
