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
static void dirty_notice(const struct zerg_cli *cli, const char *base)
{
    struct zerg_git g;
    struct zerg_err err = {0};
    char *out = NULL;
    if (zerg_git_open(&g, cli->project, NULL, &err) < 0)
        return;
    const char *args[] = {"status", "--porcelain", "--untracked-files=no",
                          "--ignore-submodules", NULL};
    struct zerg_git_call call = {.dir = cli->project};
    if (zerg_git_run(&g, &call, args, &out, &err) == 0 && out && *out)
        printf("Note: uncommitted changes are not in the run;\n"
               "it starts from commit %.12s.\n",
               base);
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
        return ZERG_EXIT_USAGE;
    default:
        return ZERG_EXIT_FAIL;
    }
}

int zerg_rush_ws_open(const struct zerg_cli *cli, const struct zerg_config *cfg,
                      const char *feature, struct zerg_state *s, int resume,
                      struct zerg_log *log, struct zerg_workspace **out)
{
    *out = NULL;
    if (isolation_of(cli, cfg, resume && !s->git_base[0]) ==
        ZERG_ISOLATION_NONE) {
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
        .log = log,
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
        dirty_notice(cli, w->base);
    *out = w;
    return 0;
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
