/* ws_record.c - the attempt a worktree last ran, as the worker records it
 * in the worktree's own git dir (<git dir>/zerg-attempt: "task\nattempt\n"),
 * and the place its leftovers are saved under the feature's logs:
 * tasks/{id}/attempt-{n}.patch of that attempt, else
 * worktrees/{worktree}-{timestamp}.patch.  Shared by the worker (before
 * each attempt) and `zerg cleanup` (before it removes a worktree), so a
 * patch lands in one place whoever discards the work (DESIGN §18). */
#include "git/ws_internal.h"
#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ws_read_record(const char *gitdir, char *task, size_t n, int *attempt)
{
    char path[PATH_MAX + 32], *data = NULL;
    size_t len = 0;
    struct zerg_err ignored = {0};
    if (!gitdir)
        return ZERG_ENOTFOUND;
    snprintf(path, sizeof path, "%s/" WS_ATTEMPT_FILE, gitdir);
    if (zerg_fsio_read_file(path, 4096, ZERG_FSIO_NOFOLLOW, &data, &len,
                            &ignored))
        return ZERG_ENOTFOUND;
    char *nl = strchr(data, '\n');
    int ok = nl && (size_t)(nl - data) < n;
    if (ok) {
        *nl = '\0';
        snprintf(task, n, "%s", data);
        *attempt = atoi(nl + 1);
        ok = ws_name_valid(task) && *attempt > 0;
    }
    free(data);
    return ok ? 0 : ZERG_ENOTFOUND;
}

int ws_leftover_place(const char *gitdir, const char *top, char *rel,
                      size_t reln, char *name, size_t namen)
{
    char task[256];
    int attempt = 0;
    if (!ws_read_record(gitdir, task, sizeof task, &attempt)) {
        snprintf(name, namen, "attempt-%d.patch", attempt);
        return zerg_fsio_path(rel, reln, "tasks/%s", task);
    }
    char ts[ZERG_TS_MAX];
    const char *base = strrchr(top, '/');
    zerg_clock_iso8601(zerg_clock_wall(&zerg_clock_system), ts);
    for (char *p = ts; *p; p++)
        *p = *p == ':' ? '-' : *p;
    snprintf(name, namen, "%s-%s.patch", base ? base + 1 : "worktree", ts);
    return zerg_fsio_path(rel, reln, "worktrees");
}
