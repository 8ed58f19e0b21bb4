/* preflight.c - the executor pre-flight of `zerg validate` and `zerg rush`
 * (DESIGN §14; the contract is in preflight.h).  Without it a missing or
 * broken executor shows up only when the first worker has claimed a task:
 * the rush then stops with the same fix, but after spawning workers.
 * Here it costs one `EXE --version` (a few milliseconds for a binary that
 * is not there, about 0.3 s for the Claude Code CLI) before anything is
 * written. */
#include "preflight.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/agent.h"
#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/graph.h"
#include "zerg/launcher.h"
#include "zerg/text.h"

#define FIX_COMMAND                                                            \
    "install it, or set workers.executor to a command that exists and "        \
    "answers --version"
#define FIX_IMAGE                                                              \
    "build an image that has it (docker/Containerfile installs git, Node "     \
    "and the Claude Code CLI) and set container.image to it, or set "          \
    "%s to its path inside the image"

/* What to run: argv[0] as the workers will see it. */
struct target {
    char exe[PATH_MAX];
    const struct zerg_agent_adapter *ad; /* an agent kind: its fixes */
};

/* ---- warnings ----------------------------------------------------------- */

int zerg_preflight_warn(struct zerg_preflight *pf, const char *line)
{
    char **v = realloc(pf->warnings, (pf->nwarnings + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    pf->warnings = v;
    if (!(v[pf->nwarnings] = strdup(line)))
        return -ENOMEM;
    pf->nwarnings++;
    return 0;
}

int zerg_preflight_stale_warnings(const struct zerg_graph *g,
                                  const struct zerg_config *cfg,
                                  struct zerg_preflight *pf)
{
    double stale_s = zerg_ns_to_s(cfg->task_stale_timeout_ns);
    size_t over = 0;
    int agent = 0, rc = 0;
    char line[512];
    for (size_t i = 0; stale_s > 0 && i < g->ntasks && rc == 0; i++) {
        const struct zerg_task *t = &g->tasks[i];
        if (t->estimate_minutes * 60 <= stale_s)
            continue;
        agent |= t->command == NULL;
        if (over++ >= ZERG_PREFLIGHT_WARN_MAX)
            continue;
        snprintf(line, sizeof line,
                 "task %s is estimated at %g min, longer than "
                 "workers.task_stale_timeout_seconds (%g s): raise the "
                 "timeout if it can go that long without progress",
                 t->id, t->estimate_minutes, stale_s);
        rc = zerg_preflight_warn(pf, line);
    }
    if (rc == 0 && over > ZERG_PREFLIGHT_WARN_MAX) {
        snprintf(line, sizeof line, "... and %zu more task%s like that",
                 over - ZERG_PREFLIGHT_WARN_MAX,
                 over - ZERG_PREFLIGHT_WARN_MAX == 1 ? "" : "s");
        rc = zerg_preflight_warn(pf, line);
    }
    if (rc == 0 && over)
        rc = zerg_preflight_warn(
            pf, agent ? "(the stale check is about progress, not length: with "
                        "executor.kind claude every stream event of the agent "
                        "counts, so only a silent agent goes stale)"
                      : "(the stale check is about progress, not length: a "
                        "command's output counts while "
                        "workers.output_is_progress is true)");
    return rc;
}

/* ---- shell syntax ---------------------------------------------------------
 */

/* ---- which executor ----------------------------------------------------- */

/* Fills pf->exe / exe_key and t; 0, or -1 with pf->error set. */
static int pick_executor(const char *project, const struct zerg_config *cfg,
                         const char *override, struct zerg_preflight *pf,
                         struct target *t)
{
    const char *exe = NULL;
    size_t len;
    if (override && override[strspn(override, " \t")]) {
        override += strspn(override, " \t");
        pf->exe = override, pf->exe_key = "--executor";
        len = strcspn(override, " \t");
    } else if ((t->ad = zerg_agent_for(cfg))) {
        exe = zerg_agent_bin(cfg, t->ad);
        pf->exe = exe, pf->exe_key = zerg_agent_bin_key(t->ad);
        len = strlen(exe);
    } else if (cfg->executor.n && cfg->executor.v[0][0]) {
        pf->exe = cfg->executor.v[0], pf->exe_key = "workers.executor";
        len = strlen(pf->exe);
    } else {
        snprintf(pf->error, sizeof pf->error,
                 "%zu task%s ha%s no `command` and workers.executor is "
                 "empty. Fix: set executor.kind: claude, or workers.executor",
                 pf->agent_tasks, pf->agent_tasks == 1 ? "" : "s",
                 pf->agent_tasks == 1 ? "s" : "ve");
        return -1;
    }
    /* A relative path is the project's, as the workers start there. */
    int rel = memchr(pf->exe, '/', len) && pf->exe[0] != '/';
    snprintf(t->exe, sizeof t->exe, "%s%s%.*s", rel ? project : "",
             rel ? "/" : "", (int)len, pf->exe);
    return 0;
}

/* ---- running it --------------------------------------------------------- */

/* Says why argv failed (rc and wstatus of zerg_container_exec) in pf->error,
 * with fix; 0 when it exited 0. */
static int judge(struct zerg_preflight *pf, const struct target *t,
                 const char *shown, int rc, int st, const char *out,
                 const char *errout, int64_t timeout_ns, const char *fix)
{
    char last[300] = "", what[400];
    zerg_last_line(errout, last, sizeof last);
    if (rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        zerg_last_line(out, pf->version, sizeof pf->version);
        pf->ok = 1;
        return 0;
    }
    if (rc == -ENOENT)
        snprintf(what, sizeof what, "is not found %s",
                 strchr(t->exe, '/') ? "(no such file)" : pf->where);
    else if (rc == -EACCES)
        snprintf(what, sizeof what, "is not executable");
    else if (rc == -ETIMEDOUT)
        snprintf(what, sizeof what, "did not answer `%s` within %g s", shown,
                 zerg_ns_to_s(timeout_ns));
    else if (rc < 0)
        snprintf(what, sizeof what, "cannot be run: %s", strerror(-rc));
    else if (WIFEXITED(st) &&
             (WEXITSTATUS(st) == 127 || WEXITSTATUS(st) == 126))
        snprintf(what, sizeof what, "is not found %s (`%s` exited %d%s%.200s)",
                 pf->where, shown, WEXITSTATUS(st), last[0] ? ": " : "", last);
    else if (WIFEXITED(st))
        snprintf(what, sizeof what, "fails: `%s` exited %d%s%.200s", shown,
                 WEXITSTATUS(st), last[0] ? ": " : "", last);
    else
        snprintf(what, sizeof what, "fails: `%s` was killed by signal %d",
                 shown, WTERMSIG(st));
    snprintf(pf->error, sizeof pf->error,
             "the executor `%.300s` (%s) %s, and %zu task%s no `command`. "
             "Fix: %s",
             t->exe, pf->exe_key, what, pf->agent_tasks,
             pf->agent_tasks == 1 ? " has" : "s have", fix);
    return -1;
}

/* 1 when one of the CLI's key variables is set (and not empty). */
static int key_given(const struct zerg_agent_adapter *ad)
{
    for (size_t i = 0; ad->key_env && ad->key_env[i]; i++)
        if (getenv(ad->key_env[i]) && *getenv(ad->key_env[i]))
            return 1;
    return 0;
}

/* The CLI's credentials where the workers run (subprocess mode): a key
 * in the environment, else its own login check (`codex login status`),
 * else a logged-in settings file (Gemini's ~/.gemini/settings.json).
 * Without them every attempt would fail the same way, one environment
 * failure per worker. */
static void check_login(struct zerg_preflight *pf, const struct target *t)
{
    const struct zerg_agent_adapter *ad = t->ad;
    char out[512], errout[1024], shown[PATH_MAX + 32], path[PATH_MAX];
    int st = 0;
    if (key_given(ad))
        return;
    if (ad->login) {
        char *argv[8] = {(char *)t->exe};
        size_t n = 1;
        for (size_t i = 0; ad->login[i] && n < 7; i++)
            argv[n++] = (char *)ad->login[i];
        snprintf(shown, sizeof shown, "%s login status", t->exe);
        int rc =
            zerg_container_exec(argv, ZERG_PREFLIGHT_VERSION_TIMEOUT_NS, out,
                                sizeof out, errout, sizeof errout, &st);
        if (rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            return;
        pf->ok = 0;
        snprintf(pf->error, sizeof pf->error,
                 "%s is not logged in (`%.300s` says: %.200s), and %zu task%s "
                 "no `command`. Fix: %s",
                 ad->product, shown, out[0] ? out : errout, pf->agent_tasks,
                 pf->agent_tasks == 1 ? " has" : "s have", ad->fix_login);
        for (char *p = pf->error; *p; p++)
            if (*p == '\n')
                *p = ' ';
        return;
    }
    const char *home = getenv("HOME");
    if (ad->cli != ZERG_AGENT_GEMINI || !home ||
        (snprintf(path, sizeof path, "%s/.gemini/settings.json", home),
         access(path, F_OK) == 0))
        return;
    pf->ok = 0;
    snprintf(pf->error, sizeof pf->error,
             "%s has no credentials (none of its key variables is set and "
             "there is no %.300s), and %zu task%s no `command`. Fix: %s",
             ad->product, path, pf->agent_tasks,
             pf->agent_tasks == 1 ? " has" : "s have", ad->fix_login);
}

static void check_here(struct zerg_preflight *pf, const struct target *t)
{
    char out[512], errout[1024], shown[PATH_MAX + 16];
    int st = 0;
    char *argv[] = {(char *)t->exe, "--version", NULL};
    snprintf(pf->where, sizeof pf->where, "on PATH");
    snprintf(shown, sizeof shown, "%s --version", t->exe);
    pf->checked = 1;
    int rc = zerg_container_exec(argv, ZERG_PREFLIGHT_VERSION_TIMEOUT_NS, out,
                                 sizeof out, errout, sizeof errout, &st);
    char fix[400];
    snprintf(fix, sizeof fix, "%s%s%s%s",
             t->ad ? t->ad->fix_install : FIX_COMMAND, t->ad ? ", or set " : "",
             t->ad ? pf->exe_key : "", t->ad ? " to its path" : "");
    if (judge(pf, t, shown, rc, st, out, errout,
              ZERG_PREFLIGHT_VERSION_TIMEOUT_NS, fix) == 0 &&
        t->ad)
        check_login(pf, t);
}

static const char *image_name(const struct zerg_config *cfg)
{
    return cfg->container_image && cfg->container_image[0]
               ? cfg->container_image
               : "zerg-worker";
}

/* `RUNTIME run --rm IMAGE EXE --version`: the image's PATH, not ours. */
static void check_image(struct zerg_preflight *pf, const struct target *t,
                        const struct zerg_config *cfg)
{
    struct zerg_container_rt rt;
    char why[1024], out[512], errout[1024], shown[PATH_MAX + 200];
    const char *image = image_name(cfg);
    int st = 0;
    snprintf(pf->where, sizeof pf->where, "in the image");
    if (zerg_container_resolve(cfg->container_runtime, &rt, why, sizeof why) <
            0 ||
        zerg_container_image_exists(&rt, image, why, sizeof why) != 1) {
        snprintf(pf->error, sizeof pf->error,
                 "cannot check the executor `%.300s` (%s) in container mode: "
                 "%.500s",
                 t->exe, pf->exe_key, why);
        return;
    }
    char *argv[] = {rt.path,          "run",         "--rm",
                    "--network=none", (char *)image, (char *)t->exe,
                    "--version",      NULL};
    snprintf(shown, sizeof shown, "%s run --rm %s %s --version", rt.name, image,
             t->exe);
    pf->checked = 1;
    int rc = zerg_container_exec(argv, ZERG_PREFLIGHT_CONTAINER_TIMEOUT_NS, out,
                                 sizeof out, errout, sizeof errout, &st);
    char fix[400];
    if (t->ad)
        snprintf(fix, sizeof fix, FIX_IMAGE, pf->exe_key);
    else
        snprintf(fix, sizeof fix, "install it in the image (container.image)");
    judge(pf, t, shown, rc, st, out, errout,
          ZERG_PREFLIGHT_CONTAINER_TIMEOUT_NS, fix);
}

int zerg_preflight_run(const char *project, const struct zerg_config *cfg,
                       const struct zerg_graph *g, enum zerg_mode mode,
                       const char *override, struct zerg_preflight *pf)
{
    struct target t = {0};
    char why[512];
    memset(pf, 0, sizeof *pf);
    if (zerg_preflight_stale_warnings(g, cfg, pf) < 0 ||
        zerg_preflight_shell_warnings(g, pf) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < g->ntasks; i++)
        pf->agent_tasks += g->tasks[i].command == NULL;
    pf->ok = pf->agent_tasks == 0;
    if (pf->ok)
        return 0;
    if (!override || !*override)
        override = getenv("ZERG_EXECUTOR"); /* it reaches the workers */
    if (pick_executor(project, cfg, override, pf, &t) < 0)
        return 0;
    if (mode == ZERG_MODE_AUTO)
        mode = zerg_container_available(cfg, why, sizeof why)
                   ? ZERG_MODE_CONTAINER
                   : ZERG_MODE_SUBPROCESS;
    if (mode == ZERG_MODE_CONTAINER)
        check_image(pf, &t, cfg);
    else
        check_here(pf, &t);
    return 0;
}

void zerg_preflight_close(struct zerg_preflight *pf)
{
    for (size_t i = 0; i < pf->nwarnings; i++)
        free(pf->warnings[i]);
    free(pf->warnings);
    memset(pf, 0, sizeof *pf);
}

int zerg_preflight_rush(const char *project, const struct zerg_config *cfg,
                        const struct zerg_graph *g, enum zerg_mode mode,
                        const char *override)
{
    struct zerg_preflight pf;
    int rc = zerg_preflight_run(project, cfg, g, mode, override, &pf);
    for (size_t i = 0; rc == 0 && i < pf.nwarnings; i++)
        fprintf(stderr, "zerg rush: warning: %s\n", pf.warnings[i]);
    if (rc < 0)
        fprintf(stderr, "zerg rush: pre-flight: out of memory\n");
    else if (!pf.ok)
        fprintf(stderr, "zerg rush: pre-flight failed: %s\n", pf.error);
    int exit_code = rc < 0 || !pf.ok ? ZERG_EXIT_FAIL : ZERG_EXIT_OK;
    zerg_preflight_close(&pf);
    return exit_code;
}
