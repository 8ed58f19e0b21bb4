/* status_ws.c - what `zerg status` shows of worktree isolation (DESIGN
 * §13): the integration branch with its tip and commits since the base,
 * how many complete tasks are merged and how many are not (a complete
 * task that changed nothing has no commit and counts as merged), and each
 * worker's worktree with its head and whether it holds uncommitted
 * changes. */
#include "status_ws.h"

#include <string.h>

#include "zerg/state.h"
#include "zerg/workspace.h"

struct counts {
    size_t merged, unmerged;
};

static struct counts count(const struct zerg_state *s)
{
    struct counts c = {0, 0};
    for (size_t i = 0; i < s->ntasks; i++) {
        /* Complete means merged under isolation (a task with no commit
         * changed nothing); unmerged ones wait to run again after a
         * conflict. */
        if (s->tasks[i].status == ZERG_TASK_COMPLETE)
            c.merged++;
        else if (s->tasks[i].conflict_count > 0)
            c.unmerged++;
    }
    return c;
}

static int describe(const struct zerg_cli *cli, const char *feature,
                    const struct zerg_state *s, struct zerg_ws_info *info)
{
    struct zerg_err err = {0};
    if (!s->git_base[0])
        return -1;
    return zerg_ws_describe(cli->project, feature, s->git_base, info, &err);
}

void zerg_status_ws_print(FILE *out, const struct zerg_cli *cli,
                          const char *feature, const struct zerg_state *s,
                          const struct zerg_graph *g)
{
    static struct zerg_ws_info info;
    (void)g;
    if (describe(cli, feature, s, &info) < 0)
        return;
    struct counts c = count(s);
    fprintf(out,
            "\nIntegration: %s at %.12s (%d commit%s on %.12s); %zu "
            "task%s merged, %zu waiting after a conflict\n",
            info.branch, info.exists ? info.tip : "-", info.commits,
            info.commits == 1 ? "" : "s", s->git_base, c.merged,
            c.merged == 1 ? "" : "s", c.unmerged);
    for (int i = 0; i < info.nworktrees; i++)
        fprintf(out, "  worker %d  %s  %.12s%s\n", info.wt[i].slot,
                info.wt[i].path, info.wt[i].head,
                info.wt[i].dirty ? "  (uncommitted changes)" : "");
}

zerg_json *zerg_status_ws_json(const struct zerg_cli *cli, const char *feature,
                               const struct zerg_state *s,
                               const struct zerg_graph *g)
{
    static struct zerg_ws_info info;
    (void)g;
    if (describe(cli, feature, s, &info) < 0)
        return zerg_json_null();
    struct counts c = count(s);
    zerg_json *o = zerg_json_obj(), *wts = zerg_json_arr();
    if (!o || !wts) {
        zerg_json_free(o);
        zerg_json_free(wts);
        return NULL;
    }
    zerg_json_set_str(o, "branch", info.branch);
    zerg_json_set_str(o, "base", s->git_base);
    if (info.exists)
        zerg_json_set_str(o, "tip", info.tip);
    zerg_json_set_num(o, "commits", info.commits);
    zerg_json_set_num(o, "merged", (double)c.merged);
    zerg_json_set_num(o, "unmerged", (double)c.unmerged);
    for (int i = 0; i < info.nworktrees; i++) {
        zerg_json *w = zerg_json_obj();
        zerg_json_set_num(w, "slot", info.wt[i].slot);
        zerg_json_set_str(w, "path", info.wt[i].path);
        zerg_json_set_str(w, "head", info.wt[i].head);
        zerg_json_set_bool(w, "dirty", info.wt[i].dirty);
        zerg_json_push(wts, w);
    }
    zerg_json_set(o, "worktrees", wts);
    return o;
}
