/* orch_outputs.c - what a passing attempt produced, judged before its
 * task completes (DESIGN §18), and the lines the run's summary adds.
 *
 * The worker reports (struct zerg_result): the files.create paths that
 * did not exist (scope.missing decides: by default the attempt fails as
 * missing_output, class task, charged and retried like any task
 * failure), the declared ignored files it committed anyway and the
 * undeclared ignored paths it left out.  The merge queue hands over the
 * paths a commit changed: a change to zerg's own configuration
 * (.zerg/config.yaml, .zerg/policies/) goes to scope.config (by default
 * it is merged and flagged for review).  The summary says which tasks
 * changed the configuration and how many files were forced or left out. */
#include "orch_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/policy.h"

#define PATHS_ASKED 64 /* paths a policy is shown (counts stay exact) */

/* The listed paths of l into v (at most max); how many. */
static size_t list_paths(const struct zerg_path_list *l, const char **v,
                         size_t max)
{
    size_t n = 0;
    for (const char *p = NULL; n < max && (p = zerg_path_list_next(l, p));)
        v[n++] = p;
    return n;
}

static zerg_json *paths_json(const char *const *v, size_t n)
{
    zerg_json *a = zerg_json_arr();
    for (size_t i = 0; a && i < n; i++)
        zerg_json_push(a, zerg_json_str(v[i]));
    return a;
}

/* The verdict logged as event (with the policy's why and the paths);
 * returns it. */
static enum zerg_scope_verdict judge(struct zerg_orch *o, size_t t,
                                     const struct zerg_result *r,
                                     enum zerg_scope_hook hook,
                                     const char *event, const char **v,
                                     size_t n, char *reason, size_t size)
{
    zerg_json *why = NULL;
    enum zerg_scope_verdict verdict = zerg_policy_scope_hook(
        o->o.policy, hook, &o->g->tasks[t], v, n, reason, size, &why);
    if (verdict == ZERG_SCOPE_ALLOW) {
        zerg_json_free(why);
        return verdict;
    }
    if (why) {
        zerg_json_set(why, "files", paths_json(v, n));
        zerg_json_set_num(why, "attempt", r->attempt);
    }
    zerg_log_event(o->o.log, r->worker_id,
                   verdict == ZERG_SCOPE_FAIL ? ZERG_LOG_ERROR : ZERG_LOG_WARN,
                   event, r->task, why, "Task %s: %s", r->task, reason);
    return verdict;
}

int orch_outputs_check(struct zerg_orch *o, size_t t,
                       const struct zerg_result *r, struct verdict *vd)
{
    const char *v[PATHS_ASKED];
    char reason[256];
    size_t n = list_paths(&r->missing, v, PATHS_ASKED);
    if (!n)
        return 1;
    if (judge(o, t, r, ZERG_SCOPE_MISSING, "missing_output", v, n, reason,
              sizeof reason) != ZERG_SCOPE_FAIL)
        return 1;
    return orch_verdict_failed(vd, "missing_output", "task", -1, 0, "%s",
                               reason);
}

/* 1 for zerg's own configuration: .zerg/config.yaml or .zerg/policies/
 * (at the top or, in a monorepo, below a project's directory). */
static int is_config(const char *p)
{
    for (const char *c = p; c; c = strchr(c, '/'), c = c ? c + 1 : c)
        if (!strcmp(c, ".zerg/config.yaml") ||
            !strncmp(c, ".zerg/policies/", 15))
            return 1;
    return 0;
}

/* Remembers the flag for the summary: one per task, the last reason. */
static void note_config(struct zerg_orch *o, size_t t, const char *reason)
{
    size_t i = 0;
    while (i < o->nconfig_notes && o->config_notes[i].task != t)
        i++;
    if (i == ORCH_CONFIG_NOTES) {
        o->config_notes_dropped++;
        return;
    }
    o->config_notes[i].task = t;
    snprintf(o->config_notes[i].reason, sizeof o->config_notes[i].reason, "%s",
             reason);
    if (i == o->nconfig_notes)
        o->nconfig_notes++;
}

int orch_outputs_config(struct zerg_orch *o, size_t t,
                        const struct zerg_result *r, const char *paths,
                        struct verdict *vd)
{
    const char *v[PATHS_ASKED];
    char *copy = paths ? strdup(paths) : NULL, reason[256];
    size_t n = 0;
    for (char *p = copy, *nl; p && *p && n < PATHS_ASKED; p = nl) {
        nl = strchr(p, '\n');
        if (nl)
            *nl++ = '\0';
        if (is_config(p))
            v[n++] = p;
    }
    enum zerg_scope_verdict verdict =
        n ? judge(o, t, r, ZERG_SCOPE_CONFIG, "config_change", v, n, reason,
                  sizeof reason)
          : ZERG_SCOPE_ALLOW;
    free(copy);
    if (verdict == ZERG_SCOPE_WARN)
        note_config(o, t, reason);
    if (verdict != ZERG_SCOPE_FAIL)
        return 1;
    return orch_verdict_failed(vd, "config_change", "task", -1, 0, "%s",
                               reason);
}

/* One event for a list the worker sent: what was forced or left out. */
static void landed_event(struct zerg_orch *o, const struct zerg_result *r,
                         const struct zerg_path_list *l, const char *event,
                         const char *what)
{
    const char *v[ZERG_PATHS_LISTED];
    size_t n = list_paths(l, v, ZERG_PATHS_LISTED);
    zerg_json *data = zerg_json_obj();
    zerg_json_set(data, "files", paths_json(v, n));
    zerg_json_set_num(data, "total", l->total);
    zerg_json_set_num(data, "attempt", r->attempt);
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_INFO, event, r->task, data,
                   "Task %s: %d %s %s: %s%s", r->task, l->total,
                   l->total == 1 ? "path" : "paths", what, n ? v[0] : "",
                   l->total > 1 ? ", ..." : "");
}

void orch_outputs_landed(struct zerg_orch *o, const struct zerg_result *r)
{
    if (r->forced.total) {
        landed_event(o, r, &r->forced, "output_forced",
                     "ignored by .gitignore but declared, committed anyway");
        o->forced_files += r->forced.total;
        if (!o->forced_first[0])
            snprintf(o->forced_first, sizeof o->forced_first, "%s",
                     zerg_path_list_next(&r->forced, NULL));
    }
    if (r->ignored.total) {
        landed_event(o, r, &r->ignored, "output_ignored",
                     "ignored by .gitignore and not declared, not committed");
        o->ignored_files += r->ignored.total;
        o->ignored_tasks++;
        if (!o->ignored_first[0])
            snprintf(o->ignored_first, sizeof o->ignored_first, "%s",
                     zerg_path_list_next(&r->ignored, NULL));
    }
}

void zerg_orch_notes(const struct zerg_orch *o, FILE *f)
{
    for (size_t i = 0; i < o->nconfig_notes; i++)
        if (o->s->tasks[o->config_notes[i].task].status == ZERG_TASK_COMPLETE)
            fprintf(f, "Task %s: %s.\n", orch_tid(o, o->config_notes[i].task),
                    o->config_notes[i].reason);
    if (o->config_notes_dropped)
        fprintf(f,
                "%zu more tasks change zerg's own configuration: `zerg logs "
                "--event config_change` lists them.\n",
                o->config_notes_dropped);
    if (o->forced_files)
        fprintf(f,
                "%ld declared file%s ignored by .gitignore %s committed "
                "anyway (%s%s): `zerg logs --event output_forced`.\n",
                o->forced_files, o->forced_files == 1 ? "" : "s",
                o->forced_files == 1 ? "was" : "were", o->forced_first,
                o->forced_files > 1 ? ", ..." : "");
    if (o->ignored_files)
        fprintf(f,
                "%ld ignored path%s left out of the commits of %ld task%s, "
                "not declared (%s%s): `zerg logs --event output_ignored`.\n",
                o->ignored_files, o->ignored_files == 1 ? " was" : "s were",
                o->ignored_tasks, o->ignored_tasks == 1 ? "" : "s",
                o->ignored_first, o->ignored_files > 1 ? ", ..." : "");
}
