/* shell_check.c - the pre-flight's shell syntax check (preflight.h).
 *
 * Commands and verifications run with /bin/sh -c (DESIGN §8), which on
 * Debian is dash: bash syntax such as <(...) does not parse there, and a
 * task whose verification does not parse fails every attempt, after its
 * agent ran.  Every distinct text is checked with `sh -n`, which parses
 * without running anything.
 *
 * Cost: the texts are written one after the other into one temporary
 * script and parsed by one `sh -n` (a 10,000-task graph: one process,
 * a few milliseconds), so a rush does not start later for it.  Only when
 * that fails is the set halved, and halved again, down to the texts that
 * fail alone: about 2 k log n processes for k bad texts, at most
 * SHELL_BAD_MAX of them reported. */
#include "preflight.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/graph.h"
#include "zerg/launcher.h"

#define SHELL_BAD_MAX 20
#define SHELL_CHECK_TIMEOUT_NS (10 * ZERG_NS_PER_S)

struct shell_text {
    const char *text, *task, *what;
    size_t order; /* in the graph: warnings keep it */
};

struct bad {
    struct shell_text t;
    char err[200]; /* sh's message */
};

struct check {
    struct shell_text *v;
    struct bad bad[SHELL_BAD_MAX];
    size_t nbad;
};

static int cmp_text(const void *a, const void *b)
{
    return strcmp(((const struct shell_text *)a)->text,
                  ((const struct shell_text *)b)->text);
}

static int cmp_order(const void *a, const void *b)
{
    size_t x = ((const struct bad *)a)->t.order,
           y = ((const struct bad *)b)->t.order;
    return x < y ? -1 : x > y;
}

/* 1 when `sh -n` parses v[lo..hi) as one script, 0 when not (err gets
 * its first line), negative when it could not be asked: then nothing is
 * said about these texts. */
static int parses(const struct shell_text *v, size_t lo, size_t hi, char *err,
                  size_t errn)
{
    /* The user's temporary directory, as sh and git use it; /tmp when it
     * is unset or unusable. */
    const char *tmp = getenv("TMPDIR");
    char path[PATH_MAX];
    int fd = -1;
    if (tmp && *tmp == '/' &&
        snprintf(path, sizeof path, "%s/zerg-sh-XXXXXX", tmp) <
            (int)sizeof path)
        fd = mkstemp(path);
    if (fd < 0) {
        snprintf(path, sizeof path, "/tmp/zerg-sh-XXXXXX");
        fd = mkstemp(path);
    }
    if (fd < 0)
        return -errno;
    FILE *f = fdopen(fd, "w");
    int rc = f ? 0 : -errno;
    for (size_t i = lo; f && i < hi; i++)
        fprintf(f, "%s\n", v[i].text);
    if (f && fclose(f))
        rc = -EIO;
    if (!f)
        close(fd);
    char *argv[] = {"/bin/sh", "-n", path, NULL};
    int st = 0;
    err[0] = '\0';
    if (!rc)
        rc = zerg_container_exec(argv, SHELL_CHECK_TIMEOUT_NS, NULL, 0, err,
                                 errn, &st);
    unlink(path);
    if (rc < 0)
        return rc;
    err[strcspn(err, "\n")] = '\0';
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Finds the texts of [lo, hi) that do not parse alone. */
static void bisect(struct check *c, size_t lo, size_t hi)
{
    char err[200];
    if (lo >= hi || c->nbad >= SHELL_BAD_MAX ||
        parses(c->v, lo, hi, err, sizeof err) != 0)
        return;
    if (hi - lo == 1) {
        struct bad *b = &c->bad[c->nbad++];
        b->t = c->v[lo];
        /* The script's name and line mean nothing to the user. */
        const char *msg = strstr(err, ": Syntax error");
        snprintf(b->err, sizeof b->err, "%s", msg ? msg + 2 : err);
        return;
    }
    size_t mid = lo + (hi - lo) / 2;
    bisect(c, lo, mid);
    bisect(c, mid, hi);
}

static int warn(struct zerg_preflight *pf, const struct bad *b)
{
    char line[512];
    snprintf(line, sizeof line,
             "task %s: its %s cannot run under /bin/sh (%s)%s; every attempt "
             "would fail: rewrite it for sh, or wrap it as bash -c '...'",
             b->t.task, b->t.what, b->err[0] ? b->err : "sh -n failed",
             strstr(b->t.text, "<(") ? ": <(...) is bash syntax" : "");
    return zerg_preflight_warn(pf, line);
}

int zerg_preflight_shell_warnings(const struct zerg_graph *g,
                                  struct zerg_preflight *pf)
{
    struct check c = {.v = calloc(2 * g->ntasks + 1, sizeof *c.v)};
    size_t n = 0, distinct = 0;
    int rc = 0;
    if (!c.v)
        return -ENOMEM;
    for (size_t i = 0; i < g->ntasks; i++) {
        const struct zerg_task *t = &g->tasks[i];
        if (t->command && *t->command)
            c.v[n++] = (struct shell_text){t->command, t->id, "command", n};
        if (t->verify_command && *t->verify_command)
            c.v[n++] = (struct shell_text){t->verify_command, t->id,
                                           "verification command", n};
    }
    /* Each distinct text once: the first task that has it is named. */
    qsort(c.v, n, sizeof *c.v, cmp_text);
    for (size_t i = 0; i < n; i++)
        if (!distinct || strcmp(c.v[i].text, c.v[distinct - 1].text))
            c.v[distinct++] = c.v[i];
    bisect(&c, 0, distinct);
    qsort(c.bad, c.nbad, sizeof *c.bad, cmp_order);
    for (size_t i = 0; i < c.nbad && rc == 0; i++)
        rc = warn(pf, &c.bad[i]);
    free(c.v);
    return rc;
}
