/* rush_ws.c - the workspace side of `zerg rush` (DESIGN §13): which
 * isolation applies, opening the workspace (integration branch and
 * worktrees) with its errors said as fixes, the notices a user needs
 * (uncommitted changes are not part of the base), and the lines the
 * summary adds: where the work is and how to bring it home. */
#include "rush_ws.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/git.h"
#include "zerg/graph.h"
#include "zerg/state.h"
#include "zerg/workspace.h"

static int isolation_of(const struct zerg_cli *cli,
                        const struct zerg_config *cfg, int quiet)
{
    if (cfg->rush_isolation != ZERG_ISOLATION_AUTO)
        return cfg->rush_isolation;
    if (zerg_ws_auto_applies(cli->project))
        return ZERG_ISOLATION_WORKTREE;
    if (!quiet)
        printf("No git commit here: rush.isolation: none.\n");
    return ZERG_ISOLATION_NONE;
}

/* Uncommitted changes in the user's tree are not in the base: say so
 * once, so nobody wonders where their edit went. */
static void dirty_notice(const struct zerg_cli *cli,
                         const struct zerg_workspace *w)
{
    struct zerg_err err = {0};
    char *out = NULL;
    const char *args[] = {"status", "--porcelain", "--untracked-files=no",
                          "--ignore-submodules", NULL};
    struct zerg_git_call call = {.dir = cli->project};
    if (zerg_git_run(zerg_ws_git(w), &call, args, &out, &err) == 0 && out &&
        *out)
        printf("Note: uncommitted changes are not in the run;\n"
               "it starts from commit %.12s.\n",
               w->base);
    free(out);
}

/* The exit code for a workspace that cannot be opened. */
static int open_failed(const struct zerg_err *err)
{
    zerg_cli_error("rush", "%s", err->msg);
    switch (err->code) {
    case ZERG_EINVAL_INPUT:
    case ZERG_EGIT_NOREPO:
    case ZERG_EGIT_OLD:
    case ZERG_EGIT_MISSING:
    case ZERG_EGIT_CHECKED_OUT:
        return ZERG_EXIT_USAGE;
    default:
        return ZERG_EXIT_FAIL;
    }
}

/* git.refs: every ref the workspace makes or moves, with its oid, so
 * `zerg cleanup` deletes those and nothing else (DESIGN §18).  The next
 * checkpoint writes it; out of memory only loses the record, and a ref
 * zerg does not know it made is one it leaves alone. */
static void note_ref(void *ud, const char *ref, const char *oid)
{
    struct zerg_state *s = ud;
    if (zerg_state_ref_set(s, ref, oid) < 0)
        fprintf(stderr, "zerg rush: warning: out of memory recording %s\n",
                ref);
}

int zerg_rush_ws_open(const struct zerg_cli *cli, const struct zerg_config *cfg,
                      const char *feature, struct zerg_state *s, int resume,
                      int own_repos, struct zerg_log *log,
                      struct zerg_workspace **out)
{
    *out = NULL;
    if (isolation_of(cli, cfg, resume && !s->git_base[0]) ==
        ZERG_ISOLATION_NONE) {
        if (cfg->rush_review) {
            zerg_cli_error("rush",
                           "rush.review needs worktree isolation: there is no "
                           "commit to review under rush.isolation none (make "
                           "the project a git repository with a commit, or "
                           "set rush.isolation: worktree)");
            return ZERG_EXIT_USAGE;
        }
        if (resume && s->git_base[0])
            printf("Note: this run started with worktree isolation and goes "
                   "on without it (rush.isolation: none).\n");
        s->git_base[0] = s->git_branch[0] = '\0';
        return 0;
    }
    struct zerg_err err = {0};
    struct zerg_ws_opts o = {
        .project = cli->project,
        .feature = feature,
        .run_id = s->run_id,
        .base = cfg->rush_base,
        .recorded_base = resume && s->git_base[0] ? s->git_base : NULL,
        .fresh = !resume,
        .own_repos = own_repos,
        .log = log,
        .on_ref = note_ref,
        .ref_ud = s,
    };
    struct zerg_workspace *w = zerg_ws_open(&o, &err);
    if (!w)
        return open_failed(&err);
    if (w->renamed[0])
        printf("The earlier run's %s holds work outside the base: kept as "
               "%s.\n",
               w->branch, w->renamed);
    snprintf(s->git_base, sizeof s->git_base, "%s", w->base);
    snprintf(s->git_branch, sizeof s->git_branch, "%.95s", w->branch);
    if (!resume)
        dirty_notice(cli, w);
    *out = w;
    return 0;
}

/* 1 when log (lines "oid<TAB>task id") holds the commit, or a commit of
 * the task: a rewrite keeps the Task-ID trailer, and the resume reads the
 * branch back by it (src/orch/orch_merge.c), so that work is not lost. */
static int on_branch(const char *log, const char *commit, const char *id)
{
    size_t nc = strlen(commit), ni = strlen(id);
    for (const char *p = log; p && *p;) {
        const char *tab = strchr(p, '\t'), *nl = strchr(p, '\n');
        const char *end = nl ? nl : p + strlen(p);
        if (tab && tab < end &&
            (((size_t)(tab - p) == nc && !strncmp(p, commit, nc)) ||
             ((size_t)(end - tab - 1) == ni && !strncmp(tab + 1, id, ni))))
            return 1;
        p = nl ? nl + 1 : NULL;
    }
    return 0;
}

/* --resume of a complete worktree run: 1 when a complete task's work is
 * no longer on the integration branch (someone reset or rewrote it), so
 * the resume must run: its thorough reconciliation reruns those tasks
 * (src/orch/orch_reconcile.c decides which); a branch that cannot be
 * listed (deleted) has lost them all.  0 when the branch holds them all,
 * or when there is no git to ask (then nothing is started). */
int zerg_rush_ws_lost_work(const struct zerg_cli *cli,
                           const struct zerg_config *cfg, const char *feature,
                           const struct zerg_graph *graph,
                           const struct zerg_state *s)
{
    struct zerg_git g;
    struct zerg_err err = {0};
    char range[ZERG_GIT_OID_MAX + sizeof s->git_branch + 16], *out = NULL;
    size_t lost = 0;
    if (!s->git_base[0] || !s->git_branch[0] ||
        cfg->rush_isolation == ZERG_ISOLATION_NONE ||
        zerg_git_open(&g, cli->project, NULL, &err) < 0)
        return 0;
    snprintf(range, sizeof range, "%s..refs/heads/%s", s->git_base,
             s->git_branch);
    const char *args[] = {"log",
                          "--format=%H%x09%(trailers:key=Task-ID,valueonly,"
                          "separator=%x2C)",
                          "--end-of-options", range, NULL};
    struct zerg_git_call call = {.dir = cli->project};
    int listed = zerg_git_run(&g, &call, args, &out, &err) == 0;
    for (size_t t = 0; t < s->ntasks && t < graph->ntasks; t++)
        lost +=
            s->tasks[t].status == ZERG_TASK_COMPLETE && s->tasks[t].commit[0] &&
            !(listed && on_branch(out, s->tasks[t].commit, graph->tasks[t].id));
    free(out);
    if (lost)
        printf("%zu complete task%s of %s %s no longer on %s: resuming to "
               "run %s again.\n",
               lost, lost == 1 ? "" : "s", feature,
               lost == 1 ? "has its work" : "have their work", s->git_branch,
               lost == 1 ? "it" : "them");
    return lost > 0;
}

void zerg_rush_ws_summary(FILE *f, const struct zerg_cli *cli,
                          const struct zerg_workspace *w, const char *feature)
{
    struct zerg_ws_info info;
    struct zerg_err err = {0};
    if (!w || zerg_ws_describe(cli->project, feature, w->base, &info, &err) < 0)
        return;
    if (!info.commits) {
        fprintf(f, "Nothing was merged into %s.\n", w->branch);
        return;
    }
    fprintf(f,
            "The work is on branch %s (%d commit%s on %.12s); your branch "
            "and working tree are untouched.\n"
            "Bring it home:  git merge %s   (or: git cherry-pick %.12s..%s)\n",
            w->branch, info.commits, info.commits == 1 ? "" : "s", w->base,
            w->branch, w->base, w->branch);
}

void zerg_rush_ws_close(struct zerg_workspace *w)
{
    if (w)
        w->ops->free(w);
}
