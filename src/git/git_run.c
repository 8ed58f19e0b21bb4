/* git_run.c - git as a program, safely (see zerg/git.h): finding it and
 * its version, finding the repository, and every call made with the
 * overrides of git_safe.c in front of its subcommand.
 *
 * Each call takes the effective configuration of its directory first
 * (`git config --null --list --show-scope` runs nothing; git_scan.c
 * reuses the last one while no file it depends on changed), because a
 * worker may have changed it since the last call and an includeIf
 * ("gitdir:", "onbranch:") may match there only; the overrides answer
 * what it holds, scope by scope. */
#include "git/git_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define IDENTITY_NAME "zerg"
#define IDENTITY_EMAIL "zerg@localhost"

void git_pause(int attempt)
{
    long ms = 20 + 10L * (attempt > 3 ? 3 : attempt);
    struct timespec ts = {0, ms * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int zerg_git_stderr_transient(const char *s)
{
    if (!s)
        return 0;
    return strstr(s, "index.lock") || strstr(s, "cannot lock ref") ||
           (strstr(s, "Unable to create '") && strstr(s, ".lock'"));
}

/* Runs argv (absolute git first) with the plain environment. */
static int spawn_plain(const char *const *argv, const char *index_file,
                       const struct zerg_git_call *call, struct git_proc *p,
                       struct zerg_err *err)
{
    char **env = git_env_new(index_file);
    if (!env)
        return zerg_err_set(err, -ENOMEM, "out of memory");
    memset(p, 0, sizeof *p);
    p->argv = argv;
    p->envp = (const char *const *)env;
    if (call && call->input)
        p->input = call->input, p->input_len = call->input_len;
    int rc = git_spawn(p, err);
    git_env_free(env);
    return rc;
}

/* 1 when the listing holds key (a record starting "key\n" or "key"; a
 * scope record never looks like a key with a dot). */
static int has_key(const char *list, size_t len, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = list; p < list + len; p += strlen(p) + 1)
        if (!strncasecmp(p, key, kl) && (p[kl] == '\n' || p[kl] == '\0'))
            return 1;
    return 0;
}

static size_t count_records(const char *list, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += list[i] == '\0';
    return n;
}

/* The full argv: git, the global options, the overrides, the identity
 * when the config has none, then args (struct git_argv). */

static int add_identity(const struct zerg_git *g, const char *list, size_t len,
                        struct git_argv *b, size_t *n)
{
    if (!has_key(list, len, "user.name")) {
        snprintf(b->ident[0], sizeof b->ident[0], "user.name=%s",
                 g->identity_name[0] ? g->identity_name : IDENTITY_NAME);
        b->argv[(*n)++] = "-c", b->argv[(*n)++] = b->ident[0];
    }
    if (!has_key(list, len, "user.email")) {
        snprintf(b->ident[1], sizeof b->ident[1], "user.email=%s",
                 g->identity_email[0] ? g->identity_email : IDENTITY_EMAIL);
        b->argv[(*n)++] = "-c", b->argv[(*n)++] = b->ident[1];
    }
    return 0;
}

static int build_argv(const struct zerg_git *g, const char *dir, int flags,
                      const char *list, size_t len, const char *const *args,
                      struct git_argv *b)
{
    size_t nrec = count_records(list, len), nargs = 0, n = 0;
    while (args[nargs])
        nargs++;
    size_t max_ov = 64 + 8 * nrec,
           strs_size = 8192 + 4 * len + 96 * nrec + strlen(g->hooks_dir);
    b->argv = calloc(max_ov + nargs + 16, sizeof *b->argv);
    b->strs = malloc(strs_size);
    if (!b->argv || !b->strs)
        return -ENOMEM;
    b->argv[n++] = g->bin, b->argv[n++] = "--no-pager";
    b->argv[n++] = "-C", b->argv[n++] = dir;
    if (!(flags & GIT_RUN_NO_WORKTREE) && has_key(list, len, "core.worktree")) {
        snprintf(b->worktree_opt, sizeof b->worktree_opt, "--work-tree=%s",
                 dir);
        b->argv[n++] = b->worktree_opt;
    }
    int used = zerg_git_safe_overrides_scoped(
        list, len, g->hooks_dir, b->argv + n, max_ov, b->strs, strs_size);
    if (used < 0)
        return used;
    n += (size_t)used;
    add_identity(g, list, len, b, &n);
    for (size_t i = 0; i < nargs; i++)
        b->argv[n++] = args[i];
    b->argv[n] = NULL;
    return 0;
}

int git_argv_build(const struct zerg_git *g, const char *dir,
                   const char *const *args, struct git_argv *b,
                   struct zerg_err *err)
{
    memset(b, 0, sizeof *b);
    int rc = git_scan_config(g, dir, &b->list, &b->list_len, err);
    if (rc)
        return rc;
    rc = build_argv(g, dir, 0, b->list, b->list_len, args, b);
    if (rc)
        git_argv_free(b);
    return rc ? zerg_err_set(err, rc == -EINVAL ? ZERG_EGIT_FAILED : rc,
                             "cannot build a git command in %s", dir)
              : 0;
}

void git_argv_free(struct git_argv *b)
{
    free(b->argv), free(b->strs), free(b->list);
    b->argv = NULL, b->strs = b->list = NULL;
}

/* "git rev-parse --verify ..." for messages, at most ~300 bytes. */
static void describe_args(const char *const *args, char *buf, size_t n)
{
    size_t off = 0;
    zerg_text_append(buf, n > 320 ? 320 : n, &off, "git");
    for (size_t i = 0; args[i]; i++)
        zerg_text_append(buf, n > 320 ? 320 : n, &off, " %s", args[i]);
}

/* The last lines of stderr, joined with " | ". */
static void last_lines(const char *text, char *buf, size_t n)
{
    const char *start = text + strlen(text);
    int lines = 0;
    while (start > text && lines < 4) {
        start--;
        if (*start == '\n' && start[1] != '\0')
            lines++;
    }
    if (*start == '\n')
        start++;
    size_t off = 0;
    buf[0] = '\0';
    for (const char *p = start; *p && off + 4 < n; p++) {
        if (*p != '\n')
            buf[off++] = *p;
        else if (p[1])
            off += (size_t)snprintf(buf + off, n - off, " | ");
    }
    buf[off < n ? off : n - 1] = '\0';
}

/* The cause first: git's own "fatal:" (or "error:") line, which advice
 * lines after it push out of the last four (a held index.lock is said in
 * the first line, "another git process seems to be running" in the
 * last), then the last lines. */
static void cause_and_tail(const char *text, char *buf, size_t n)
{
    const char *c = NULL;
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l)
        if (!strncmp(l, "fatal: ", 7) || !strncmp(l, "error: ", 7)) {
            c = l;
            break;
        }
    char tail[1200], cause[420] = "";
    last_lines(text, tail, sizeof tail);
    if (c) {
        size_t cl = strcspn(c, "\n");
        snprintf(cause, sizeof cause, "%.*s", (int)(cl > 400 ? 400 : cl), c);
    }
    if (!cause[0] || strstr(tail, cause))
        snprintf(buf, n, "%s", tail);
    else
        snprintf(buf, n, "%s | %s", cause, tail);
}

static int classify(const struct git_proc *p, const struct zerg_git_call *c,
                    const char *const *args, struct zerg_err *err)
{
    if (p->status == 0 || (c && c->ok_status && p->status == c->ok_status))
        return p->status;
    char what[400], tail[1200];
    describe_args(args, what, sizeof what);
    if (p->signal)
        return zerg_err_set(err, ZERG_EGIT_KILLED,
                            "%s was killed by signal %d (%s)", what, p->signal,
                            strsignal(p->signal));
    cause_and_tail(p->errtxt ? p->errtxt : "", tail, sizeof tail);
    int code = zerg_git_stderr_transient(p->errtxt) ? ZERG_EGIT_TRANSIENT
                                                    : ZERG_EGIT_FAILED;
    return zerg_err_set(err, code, "%s failed (exit %d): %s", what, p->status,
                        tail[0] ? tail : "no message");
}

/* The key of a layout query: its flags and args; "" when the call
 * cannot be one (stdin, another index). */
static void query_key(const struct zerg_git_call *c, int flags,
                      const char *const *args, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    if (!(flags & GIT_RUN_LAYOUT) || (c && (c->input || c->index_file)))
        return;
    zerg_text_append(buf, n, &off, "%d", flags);
    for (size_t i = 0; args[i]; i++)
        zerg_text_append(buf, n, &off, "\n%s", args[i]);
    if (off >= n)
        buf[0] = '\0';
}

/* A layout query answered from the cache: 1 with *out and the status. */
static int cached_query(const char *dir, const char *key,
                        const struct zerg_git_call *c, char **out,
                        size_t *out_len, int *status)
{
    char *o = NULL;
    size_t len = 0;
    if (!key[0] || git_scan_query_get(dir, key, &o, &len, status) != 1)
        return 0;
    if (*status != 0 && !(c && c->ok_status && *status == c->ok_status)) {
        free(o);
        return 0;
    }
    if (out) {
        *out = o;
        if (out_len)
            *out_len = len;
    } else {
        free(o);
    }
    return 1;
}

static int run_once(const struct zerg_git *g, const struct zerg_git_call *c,
                    int flags, const char *dir, const char *const *args,
                    char **out, size_t *out_len, struct zerg_err *err)
{
    char *list = NULL, key[1024];
    size_t len = 0;
    struct git_argv b = {0};
    struct git_proc p = {0};
    int rc = git_scan_config(g, dir, &list, &len, err), status;
    if (rc)
        return rc;
    query_key(c, flags, args, key, sizeof key);
    if (cached_query(dir, key, c, out, out_len, &status)) {
        free(list);
        return status;
    }
    rc = build_argv(g, dir, flags, list, len, args, &b);
    if (rc == -EINVAL)
        rc = zerg_err_set(err, ZERG_EGIT_FAILED,
                          "the git configuration of %s has a section name "
                          "with '=' that zerg cannot override; remove it",
                          dir);
    else if (rc)
        rc = zerg_err_set(err, rc, "cannot build a git command: %s",
                          strerror(-rc));
    if (!rc)
        rc = spawn_plain(b.argv, c ? c->index_file : NULL, c, &p, err);
    if (!rc)
        rc = classify(&p, c, args, err);
    if (rc >= 0 && key[0])
        git_scan_query_put(dir, key, p.out, p.out_len, rc);
    if (rc >= 0 && out) {
        *out = p.out, p.out = NULL;
        if (out_len)
            *out_len = p.out_len;
    }
    free(p.out), free(p.errtxt), free(list), free(b.argv), free(b.strs);
    return rc;
}

int git_run_ex(const struct zerg_git *g, const struct zerg_git_call *call,
               int flags, const char *const *args, char **out, size_t *out_len,
               struct zerg_err *err)
{
    const char *dir = call && call->dir ? call->dir : g->top;
    int retries = call ? call->retries : 0, rc;
    if (out)
        *out = NULL;
    for (int attempt = 0;; attempt++) {
        rc = run_once(g, call, flags, dir, args, out, out_len, err);
        if (rc != ZERG_EGIT_TRANSIENT || attempt >= retries)
            return rc;
        git_pause(attempt);
    }
}

int zerg_git_run(const struct zerg_git *g, const struct zerg_git_call *call,
                 const char *const *args, char **out, struct zerg_err *err)
{
    return git_run_ex(g, call, 0, args, out, NULL, err);
}

int git_line_ex(const struct zerg_git *g, const char *dir, int flags,
                const char *const *args, char *buf, size_t n,
                struct zerg_err *err)
{
    struct zerg_git_call call = {.dir = dir, .retries = 3};
    char *out = NULL;
    int rc = git_run_ex(g, &call, flags, args, &out, NULL, err);
    if (rc < 0)
        return rc;
    size_t len = strcspn(out, "\n");
    if (len >= n) {
        free(out);
        return zerg_err_set(err, -ENAMETOOLONG, "git output too long");
    }
    memcpy(buf, out, len);
    buf[len] = '\0';
    free(out);
    return 0;
}

int git_line(const struct zerg_git *g, const char *dir, const char *const *args,
             char *buf, size_t n, struct zerg_err *err)
{
    return git_line_ex(g, dir, 0, args, buf, n, err);
}

int zerg_git_resolve(const struct zerg_git *g, const char *dir, const char *rev,
                     char oid[ZERG_GIT_OID_MAX], struct zerg_err *err)
{
    char spec[PATH_MAX];
    if (snprintf(spec, sizeof spec, "%s^{commit}", rev) >= (int)sizeof spec)
        return zerg_err_set(err, ZERG_ENOTFOUND, "no commit %.64s...", rev);
    const char *args[] = {"rev-parse",        "--verify", "-q",
                          "--end-of-options", spec,       NULL};
    struct zerg_git_call call = {.dir = dir, .ok_status = 1, .retries = 3};
    char *out = NULL;
    int rc = zerg_git_run(g, &call, args, &out, err);
    if (rc < 0)
        return rc;
    size_t len = strcspn(out, "\n");
    if (rc == 1 || len == 0 || len >= ZERG_GIT_OID_MAX) {
        free(out);
        return zerg_err_set(err, ZERG_ENOTFOUND, "no commit %s", rev);
    }
    memcpy(oid, out, len);
    oid[len] = '\0';
    free(out);
    return 0;
}
