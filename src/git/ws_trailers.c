/* ws_trailers.c - reading task commits back from history: the Task-ID,
 * Attempt and Zerg-Run trailers of `git log` over a range, and the set
 * of task attempts already on the integration branch, loaded once at
 * open and grown by every merge, so a repeated merge (resume) is
 * recognised without walking history again. */
#include "git/git_internal.h"
#include "git/ws_internal.h"
#include "zerg/protocol.h"
#include "zerg/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fields split by 0x1f, records ended by 0x1e: neither occurs in an oid
 * and git keeps them out of trailer values. */
#define LOG_FORMAT                                                             \
    "--format=%H%x1f%(trailers:key=Task-ID,valueonly,separator=%x2c)%x1f"      \
    "%(trailers:key=Attempt,valueonly,separator=%x2c)%x1f"                     \
    "%(trailers:key=Zerg-Run,valueonly,separator=%x2c)%x1e"

/* One record "oid\x1ftask\x1fattempt\x1frun": fn when it has a task. */
static void one_record(char *rec, zerg_ws_found_fn fn, void *ud)
{
    char *f[4] = {rec, NULL, NULL, NULL};
    for (int i = 1; i < 4; i++) {
        char *sep = f[i - 1] ? strchr(f[i - 1], '\x1f') : NULL;
        if (!sep)
            return;
        *sep = '\0';
        f[i] = sep + 1;
    }
    /* A repeated trailer lists its values with ',': the first counts. */
    for (int i = 1; i < 4; i++)
        f[i][strcspn(f[i], ",\n")] = '\0';
    if (!f[1][0])
        return;
    struct zerg_ws_found found = {f[1], atoi(f[2]), f[3], f[0]};
    fn(ud, &found);
}

int ws_log_tasks(const struct zerg_git *g, const char *const *range,
                 zerg_ws_found_fn fn, void *ud, struct zerg_err *err)
{
    const char *args[16] = {"log", "--no-decorate", "--no-notes",
                            "--no-show-signature", LOG_FORMAT};
    size_t n = 5;
    for (size_t i = 0; range[i] && n < 15; i++)
        args[n++] = range[i];
    args[n] = NULL;
    struct zerg_git_call call = {.retries = WS_RETRIES};
    char *out = NULL;
    int rc = zerg_git_run(g, &call, args, &out, err);
    if (rc < 0)
        return rc;
    char *save = NULL;
    for (char *rec = strtok_r(out, "\x1e", &save); rec;
         rec = strtok_r(NULL, "\x1e", &save)) {
        rec += strspn(rec, "\n");
        if (*rec)
            one_record(rec, fn, ud);
    }
    free(out);
    return 0;
}

char *ws_done_key(const char *task, int attempt, const char *run)
{
    char *key = NULL;
    /* By the feature run (protocol.h): a commit of an earlier rush of the
     * run and the same attempt merged by a later one are one. */
    if (asprintf(&key, "%s\x1f%d\x1f%.*s", task, attempt,
                 (int)zerg_run_origin_len(run), run ? run : "") < 0)
        return NULL;
    return key;
}

int ws_done_has(const struct ws_host *h, const char *key)
{
    for (size_t i = 0; i < h->ndone; i++)
        if (!strcmp(h->done[i], key))
            return 1;
    return 0;
}

int ws_done_add(struct ws_host *h, char *key)
{
    if (!key)
        return -ENOMEM;
    if (h->ndone == h->done_cap) {
        size_t cap = h->done_cap ? h->done_cap * 2 : 32;
        char **grown = realloc(h->done, cap * sizeof *grown);
        if (!grown) {
            free(key);
            return -ENOMEM;
        }
        h->done = grown, h->done_cap = cap;
    }
    h->done[h->ndone++] = key;
    return 0;
}

struct load_ctx {
    struct ws_host *h;
    int rc;
};

static void load_one(void *ud, const struct zerg_ws_found *f)
{
    struct load_ctx *c = ud;
    if (!c->rc)
        c->rc =
            ws_done_add(c->h, ws_done_key(f->task_id, f->attempt, f->run_id));
}

int ws_done_load(struct ws_host *h, struct zerg_err *err)
{
    char range[2 * PATH_MAX];
    snprintf(range, sizeof range, "%s..%s", h->pub.base, h->ref);
    const char *args[] = {"--end-of-options", range, NULL};
    struct load_ctx c = {h, 0};
    int rc = ws_log_tasks(&h->g, args, load_one, &c, err);
    if (!rc && c.rc)
        rc = zerg_err_set(err, c.rc, "out of memory");
    return rc;
}
