/* ws_pipes.c - the merge queue's two questions over running git
 * processes (git_coproc.c) instead of a process each:
 *
 *  - what a task's commit changed (the scope and config checks):
 *    `git diff-tree --stdin --always -r --raw -z --no-renames`, asked
 *    "<commit> <base>" and then "<s> <s>" for a sentinel s (the run's
 *    base): the answer is the commit's id, a status record and a path for
 *    each change, then s.  A status record starts with ':' and is always
 *    followed by its path, so no path (however a task named its files)
 *    can pass for the sentinel; anything else is a broken answer.
 *  - the compare-and-swap of the integration branch: `git update-ref
 *    --stdin`, one transaction "start", "update <ref> <new> <old>",
 *    "prepare", "commit", each answered "<verb>: ok".  A swap that loses
 *    (the branch moved) makes update-ref fail and leave.
 *
 * Either way a wrong or missing answer stops the process and the caller
 * asks git the plain way (ws_merge.c), whose error says what happened. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const DIFF_ARGS[] = {"diff-tree",    "--stdin", "--always",
                                        "-r",           "--raw",   "-z",
                                        "--no-renames", NULL};
static const char *const REFS_ARGS[] = {"update-ref", "--stdin", NULL};

struct paths {
    char *v;
    size_t len, cap;
};

static int paths_add(struct paths *p, const char *s, size_t n)
{
    if (p->len + n + 2 > p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        while (cap < p->len + n + 2)
            cap *= 2;
        char *v = realloc(p->v, cap);
        if (!v)
            return -ENOMEM;
        p->v = v, p->cap = cap;
    }
    memcpy(p->v + p->len, s, n);
    p->len += n;
    p->v[p->len++] = '\n';
    p->v[p->len] = '\0';
    return 0;
}

/* The records after the commit's id, up to the sentinel. */
static int read_changes(struct git_coproc *c, const char *sentinel,
                        struct paths *out)
{
    const char *rec;
    size_t len;
    int rc;
    while (!(rc = git_coproc_record(c, '\0', &rec, &len))) {
        if (!strcmp(rec, sentinel))
            return 0;
        if (rec[0] != ':')
            return -EPROTO;
        if ((rc = git_coproc_record(c, '\0', &rec, &len)) ||
            (rc = paths_add(out, rec, len)))
            return rc;
    }
    return rc;
}

int ws_pipe_changed(struct ws_host *h, const char *commit, const char *base,
                    char **paths)
{
    const char *s = h->pub.base;
    struct git_coproc *c = &h->diff;
    struct zerg_err ignored = {0};
    char ask[4 * ZERG_GIT_OID_MAX + 8];
    struct paths out = {0};
    const char *rec;
    size_t len;
    if (!s[0] || !strcmp(commit, s) || strchr(commit, ' ') ||
        strchr(base, ' ') ||
        snprintf(ask, sizeof ask, "%s %s\n%s %s\n", commit, base, s, s) >=
            (int)sizeof ask)
        return -EINVAL;
    int rc = git_coproc_ensure(&h->g, c, h->g.top, DIFF_ARGS, &ignored);
    if (!rc)
        rc = git_coproc_send(c, ask, strlen(ask));
    if (!rc)
        rc = git_coproc_record(c, '\0', &rec, &len);
    if (!rc && strcmp(rec, commit))
        rc = -EPROTO; /* not a commit git knows: the plain call says */
    if (!rc)
        rc = read_changes(c, s, &out);
    if (!rc && !out.v && !(out.v = calloc(1, 1)))
        rc = -ENOMEM;
    if (rc) {
        git_coproc_stop(c);
        free(out.v);
        return rc;
    }
    *paths = out.v;
    return 0;
}

static int expect(struct git_coproc *c, const char *answer)
{
    const char *rec;
    size_t len;
    int rc = git_coproc_record(c, '\n', &rec, &len);
    return rc ? rc : strcmp(rec, answer) ? -EPROTO : 0;
}

int ws_pipe_swap(struct ws_host *h, const char *ref, const char *new_oid,
                 const char *old_oid)
{
    struct git_coproc *c = &h->refs;
    struct zerg_err ignored = {0};
    char tx[PATH_MAX + 3 * ZERG_GIT_OID_MAX + 64];
    if (strpbrk(ref, " \n") ||
        snprintf(tx, sizeof tx, "start\nupdate %s %s %s\nprepare\ncommit\n",
                 ref, new_oid, old_oid) >= (int)sizeof tx)
        return -EINVAL;
    int rc = git_coproc_ensure(&h->g, c, h->g.top, REFS_ARGS, &ignored);
    if (!rc)
        rc = git_coproc_send(c, tx, strlen(tx));
    if (!rc)
        rc = expect(c, "start: ok");
    if (!rc)
        rc = expect(c, "prepare: ok");
    if (!rc)
        rc = expect(c, "commit: ok");
    if (rc)
        git_coproc_stop(c);
    return rc;
}
