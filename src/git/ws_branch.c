/* ws_branch.c - the integration branch at open and the excludes.
 *
 * zerg/{feature}/integration is created at the base, reused on resume,
 * reset to the base on a fresh run when it holds nothing else, and
 * renamed to zerg/{feature}/integration.{old_run_id} on a fresh run when
 * it holds commits outside the base: zerg never deletes work it made.
 * None of it happens while the integration branch or a worker branch is
 * checked out in a worktree other than zerg's own (DESIGN §18).
 * zerg's run files (.zerg/state/, .zerg/logs/, .zerg/reports/, the
 * monitor log) and .zerg-worktrees/ go to $COMMON_DIR/info/exclude (never
 * the user's .gitignore) so `git add -A` in a worktree never commits
 * them; everything else a task writes, under .gsd/ and .zerg/ too, is its
 * output (DESIGN §18). */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/json.h"
#include "zerg/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int is_clash(const char *ref, const char *feature)
{
    char own[PATH_MAX], ns[PATH_MAX], integ[PATH_MAX];
    snprintf(own, sizeof own, "refs/heads/zerg/%s", feature);
    snprintf(ns, sizeof ns, "refs/zerg/%s", feature);
    snprintf(integ, sizeof integ, "refs/heads/zerg/%s/integration/", feature);
    return !strcmp(ref, "refs/heads/zerg") || !strcmp(ref, own) ||
           !strcmp(ref, "refs/zerg") || !strcmp(ref, ns) ||
           !strncmp(ref, integ, strlen(integ));
}

/* A branch `zerg` or `zerg/{feature}` would block the namespace zerg's
 * branches live in (git stores refs as paths). */
static int check_clash(struct ws_host *h, struct zerg_err *err)
{
    const char *args[] = {"for-each-ref", "--format=%(refname)",
                          "refs/heads/zerg", "refs/zerg", NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    char *out = NULL, *save = NULL;
    int rc = zerg_git_run(&h->g, &call, args, &out, err);
    if (rc < 0)
        return rc;
    for (char *l = strtok_r(out, "\n", &save); l && !rc;
         l = strtok_r(NULL, "\n", &save))
        if (is_clash(l, h->feature))
            rc = zerg_err_set(err, ZERG_EINVAL_INPUT,
                              "the ref %s is in the way of zerg's branches "
                              "zerg/%s/...: rename it (git branch -m) or "
                              "use another feature name",
                              l, h->feature);
    free(out);
    return rc;
}

static int count_ahead(struct ws_host *h, long *ahead, struct zerg_err *err)
{
    char range[2 * PATH_MAX], buf[32];
    snprintf(range, sizeof range, "%s..%s", h->pub.base, h->ref);
    const char *args[] = {"rev-list", "--count", "--end-of-options", range,
                          NULL};
    int rc = git_line(&h->g, NULL, args, buf, sizeof buf, err);
    *ahead = rc ? 0 : strtol(buf, NULL, 10);
    return rc;
}

static int update_ref(struct ws_host *h, const char *ref, const char *new_oid,
                      const char *old_oid, struct zerg_err *err)
{
    const char *set[] = {"update-ref", ref, new_oid, old_oid, NULL};
    const char *del[] = {"update-ref", "-d", ref, old_oid, NULL};
    struct zerg_git_call call = {.retries = WS_RETRIES};
    int rc = zerg_git_run(&h->g, &call, new_oid ? set : del, NULL, err);
    return rc < 0 ? rc : 0;
}

/* The old run's id from its newest commit, else a timestamp. */
static void old_run_id(struct ws_host *h, char *buf, size_t n)
{
    const char *args[] = {
        "log",
        "-1",
        "--no-show-signature",
        "--format=%(trailers:key=Zerg-Run,valueonly,separator=%x2c)",
        h->ref,
        NULL};
    struct zerg_err ignored = {0};
    if (!git_line(&h->g, NULL, args, buf, n, &ignored)) {
        buf[strcspn(buf, ",")] = '\0';
        if (ws_name_valid(buf))
            return;
    }
    time_t now = time(NULL);
    struct tm tm;
    strftime(buf, n, "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
}

static void log_renamed(struct ws_host *h, const char *to)
{
    zerg_json *data = zerg_json_obj();
    if (data) {
        zerg_json_set_str(data, "from", h->pub.branch);
        zerg_json_set_str(data, "to", to);
    }
    zerg_log_event(h->log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "integration_renamed",
                   NULL, data, "%s held commits of an earlier run: kept as %s",
                   h->pub.branch, to);
}

static int rename_old(struct ws_host *h, const char *tip, struct zerg_err *err)
{
    char id[96], name[PATH_MAX], ref[PATH_MAX + 16];
    old_run_id(h, id, sizeof id);
    snprintf(name, sizeof name, "%.3000s.%s", h->pub.branch, id);
    snprintf(ref, sizeof ref, "refs/heads/%s", name);
    int rc = ws_ref_exists(&h->g, ref, err);
    if (rc > 0) {
        time_t now = time(NULL);
        snprintf(name, sizeof name, "%.3000s.%s-%lld", h->pub.branch, id,
                 (long long)now);
        snprintf(ref, sizeof ref, "refs/heads/%s", name);
    }
    if (rc >= 0)
        rc = update_ref(h, ref, tip, "", err);
    if (!rc)
        rc = update_ref(h, h->ref, NULL, tip, err);
    if (rc)
        return rc;
    snprintf(h->pub.renamed, sizeof h->pub.renamed, "%s", name);
    ws_note_ref(h, ref, tip);
    log_renamed(h, name);
    return 0;
}

/* A fresh run over an existing branch: moved aside if it holds work,
 * else set back to the base. */
static int fresh_over(struct ws_host *h, struct zerg_err *err)
{
    char tip[ZERG_GIT_OID_MAX];
    long ahead = 0;
    int rc = zerg_git_resolve(&h->g, NULL, h->ref, tip, err);
    if (!rc)
        rc = count_ahead(h, &ahead, err);
    if (rc)
        return rc;
    if (ahead > 0) {
        rc = rename_old(h, tip, err);
        return rc ? rc : update_ref(h, h->ref, h->pub.base, "", err);
    }
    if (strcmp(tip, h->pub.base))
        return update_ref(h, h->ref, h->pub.base, tip, err);
    return 0;
}

/* 1 when wt is the worktree zerg made for the worker branch ref. */
static int own_worker_tree(struct ws_host *h, const struct ws_wt *wt,
                           const char *ref)
{
    char prefix[PATH_MAX], path[PATH_MAX];
    snprintf(prefix, sizeof prefix, "refs/heads/zerg/%s/", h->feature);
    const char *name = ref + strlen(prefix);
    return !strncmp(name, "worker-", 7) &&
           !ws_tree_path(&h->g, h->feature, name, path, sizeof path) &&
           !strcmp(wt->path, path);
}

/* The run moves the integration branch at every merge and each worker
 * branch at every attempt: none of them may be checked out in a worktree
 * that is not zerg's own (DESIGN §18), or the user's HEAD would move
 * under their tree.  Refused before anything is made. */
static int check_not_checked_out(struct ws_host *h, struct zerg_err *err)
{
    char prefix[PATH_MAX];
    struct ws_wt *wts;
    size_t n;
    snprintf(prefix, sizeof prefix, "refs/heads/zerg/%s/", h->feature);
    int rc = ws_list_worktrees(&h->g, &wts, &n, err);
    for (size_t i = 0; !rc && i < n; i++) {
        const char *b = wts[i].branch;
        if (strncmp(b, prefix, strlen(prefix)))
            continue;
        if (!strcmp(b, h->ref) || (!strncmp(b + strlen(prefix), "worker-", 7) &&
                                   !own_worker_tree(h, &wts[i], b)))
            rc = ws_refuse_checked_out(b, wts[i].path, "run zerg again", err);
    }
    free(wts);
    return rc;
}

int ws_setup_branch(struct ws_host *h, const struct zerg_ws_opts *o,
                    struct zerg_err *err)
{
    int rc = check_clash(h, err);
    if (!rc)
        rc = check_not_checked_out(h, err);
    if (rc)
        return rc;
    int exists = ws_ref_exists(&h->g, h->ref, err);
    if (exists < 0)
        return exists;
    if (!exists)
        rc = update_ref(h, h->ref, h->pub.base, "", err);
    else if (o->fresh)
        rc = fresh_over(h, err);
    if (!rc)
        ws_note_ref_at(h, h->ref); /* git.refs: created, reset or reused */
    return rc;
}

/* "/<prefix>/<name>" with the glob characters of gitignore escaped;
 * no prefix: "/<name>". */
static void prefixed_line(const char *prefix, const char *name, char *buf,
                          size_t n)
{
    size_t off = 0;
    buf[off++] = '/';
    for (const char *p = prefix; *p && off + 10 < n; p++) {
        if (strchr("*?[\\", *p))
            buf[off++] = '\\';
        buf[off++] = *p;
    }
    snprintf(buf + off, n - off, "%s%s", prefix[0] ? "/" : "", name);
}

/* The length of the line at p, without its '\n'. */
static size_t line_len(const char *p)
{
    return strcspn(p, "\n");
}

static int is_line(const char *p, size_t len, const char *const *set)
{
    for (size_t i = 0; set[i]; i++)
        if (set[i][0] && strlen(set[i]) == len && !strncmp(p, set[i], len))
            return 1;
    return 0;
}

/* old without the lines of drop, with each line of want not there yet
 * appended: malloc'd in *text, *changed 1 when it differs from old. */
static int merge_excludes(const char *old, const char *const *drop,
                          const char *const *want, char **text, int *changed)
{
    size_t cap = strlen(old) + 16 * PATH_MAX + 64, off = 0;
    char *t = malloc(cap);
    if (!t)
        return -ENOMEM;
    *changed = 0;
    for (const char *p = old; *p;) {
        size_t len = line_len(p);
        if (is_line(p, len, drop)) {
            *changed = 1;
        } else {
            memcpy(t + off, p, len);
            off += len;
            t[off++] = '\n';
        }
        p += len + (p[len] == '\n');
    }
    for (size_t i = 0; want[i]; i++) {
        size_t len = strlen(want[i]);
        int have = 0;
        for (const char *p = t; p < t + off; p += line_len(p) + 1)
            have |= line_len(p) == len && !strncmp(p, want[i], len);
        if (!have && len) {
            memcpy(t + off, want[i], len);
            off += len;
            t[off++] = '\n';
            *changed = 1;
        }
    }
    t[off] = '\0';
    *text = t;
    return 0;
}

/* zerg's own run files, the only paths that never enter a commit (DESIGN
 * §18): state, logs, reports and the monitor log (a container mounts the
 * two monitor files into the worktree), the worktrees themselves.  Lines
 * older zerg wrote, /.zerg/ and /.gsd/ (with the project's prefix too),
 * kept every output under them out of the commits: they go, the user's
 * own lines stay. */
static const char *const run_names[] = {
    ".zerg/state/",      ".zerg/logs/",         ".zerg/reports/",
    ".zerg/monitor.log", ".zerg/monitor.jsonl",
};
#define NRUN (sizeof run_names / sizeof *run_names)

int ws_add_excludes(const struct zerg_git *g, struct zerg_err *err)
{
    char path[PATH_MAX + 16];
    struct stat st;
    int rc = zerg_fsio_mkdirs_under(g->common_dir, "info", 0755, err);
    if (rc)
        return rc;
    snprintf(path, sizeof path, "%s/info/exclude", g->common_dir);
    if (!lstat(path, &st) && !S_ISREG(st.st_mode))
        return zerg_err_set(err, ZERG_ESYMLINK,
                            "%s is %s, not a file: zerg writes no file "
                            "through a link; replace it with a plain file",
                            path, zerg_fsio_kind(st.st_mode));
    char *old = NULL, *text = NULL;
    size_t len = 0;
    rc =
        zerg_fsio_read_file(path, 1 << 20, ZERG_FSIO_NOFOLLOW, &old, &len, err);
    if (rc == -ENOENT)
        old = strdup(""), rc = old ? 0 : -ENOMEM;
    if (rc)
        return rc;
    /* Unprefixed and, in a monorepo, prefixed too, as before. */
    char lines[NRUN + 2][2 * PATH_MAX];
    const char *want[2 * NRUN + 2], *drop[5];
    size_t nw = 0;
    for (size_t i = 0; i < NRUN; i++) {
        snprintf(lines[i], sizeof lines[i], "/%s", run_names[i]);
        want[nw++] = lines[i];
    }
    want[nw++] = "/" WS_DIR "/";
    char pre[NRUN][2 * PATH_MAX];
    for (size_t i = 0; g->prefix[0] && i < NRUN; i++) {
        prefixed_line(g->prefix, run_names[i], pre[i], sizeof pre[i]);
        want[nw++] = pre[i];
    }
    want[nw] = NULL;
    prefixed_line(g->prefix, ".zerg/", lines[NRUN], sizeof lines[0]);
    prefixed_line(g->prefix, ".gsd/", lines[NRUN + 1], sizeof lines[0]);
    drop[0] = "/.zerg/", drop[1] = "/.gsd/", drop[2] = lines[NRUN];
    drop[3] = lines[NRUN + 1], drop[4] = NULL;
    int changed = 0;
    rc = merge_excludes(old, drop, want, &text, &changed);
    if (rc)
        rc = zerg_err_set(err, rc, "out of memory");
    else if (changed)
        rc = zerg_fsio_write_atomic(path, text, strlen(text), ZERG_FSIO_DURABLE,
                                    err);
    free(text);
    free(old);
    return rc;
}
