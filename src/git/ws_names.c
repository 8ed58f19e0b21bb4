/* ws_names.c - the names of a workspace (branches, refs, paths) and the
 * commit message of a task, exactly as DESIGN §13 spells them, and the
 * check that a feature or task id makes a valid ref component without
 * asking git (git check-ref-format's rules, applied to one component). */
#include "git/ws_internal.h"
#include "zerg/protocol.h"
#include "zerg/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fmt(char *buf, size_t n, int len)
{
    return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

int zerg_ws_integration_branch(char *buf, size_t n, const char *feature)
{
    return fmt(buf, n, snprintf(buf, n, "zerg/%s/integration", feature));
}

int zerg_ws_worker_branch(char *buf, size_t n, const char *feature, int slot)
{
    return fmt(buf, n, snprintf(buf, n, "zerg/%s/worker-%d", feature, slot));
}

int zerg_ws_kept_ref(char *buf, size_t n, const char *feature,
                     enum zerg_ws_kept kind, const char *task, int attempt)
{
    return fmt(buf, n,
               snprintf(buf, n, "refs/zerg/%s/%s/%s/%d", feature,
                        kind == ZERG_WS_KEPT_REVIEW ? "review" : "conflicts",
                        task, attempt));
}

int zerg_ws_conflict_ref(char *buf, size_t n, const char *feature,
                         const char *task, int attempt)
{
    return zerg_ws_kept_ref(buf, n, feature, ZERG_WS_KEPT_CONFLICT, task,
                            attempt);
}

char *zerg_ws_commit_message(int worker, const char *title, const char *task,
                             int attempt, const char *run_id)
{
    char *msg = NULL;
    /* A title is one line: a newline in it would start the body early
     * and could forge a trailer. */
    char *line = strdup(title && *title ? title : task);
    if (!line)
        return NULL;
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (asprintf(&msg,
                 "ZERG [W%d]: %s\n\nTask-ID: %s\nAttempt: %d\nZerg-Run: %.*s\n",
                 worker, line, task, attempt, (int)zerg_run_origin_len(run_id),
                 run_id ? run_id : "") < 0)
        msg = NULL;
    free(line);
    return msg;
}

/* One ref component: not empty, no leading '.', no "..", no "@{", no
 * control character, space or any of ~^:?*[\, not ending in '.' or
 * ".lock", not "@".  '/' is refused too: the name is also a directory
 * name under .zerg-worktrees and a file name under .zerg. */
int ws_name_valid(const char *s)
{
    size_t len = s ? strlen(s) : 0;
    if (!len || len > 200 || s[0] == '.' || s[len - 1] == '.' ||
        !strcmp(s, "@") || strstr(s, "..") || strstr(s, "@{"))
        return 0;
    if (len >= 5 && !strcmp(s + len - 5, ".lock"))
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f || strchr(" ~^:?*[\\/", *p))
            return 0;
    return 1;
}

int ws_check_name(const char *what, const char *s, struct zerg_err *err)
{
    if (ws_name_valid(s))
        return 0;
    return zerg_err_set(err, ZERG_EINVAL_INPUT,
                        "%s \"%s\" cannot be used in a git branch name: use "
                        "letters, digits, '-', '_' and '.' (not first or "
                        "last), no \"..\" and no \".lock\" ending",
                        what, s ? s : "");
}
