/* rush_ws.h - the workspace side of `zerg rush` (rush_ws.c). */
#ifndef ZERG_RUSH_WS_H
#define ZERG_RUSH_WS_H

#include <stdio.h>

#include "cli.h"

struct zerg_state;
struct zerg_log;
struct zerg_workspace;

/* Decides the isolation and, for worktree, opens the workspace into *out
 * and records git.base/branch in s (NULL and cleared for none);
 * own_repos: container workers, whose slots hold repositories of their
 * own (DESIGN §19).  0, or an exit code after printing why (2 for what
 * the user must fix in the repository or config, 1 for git failing). */
int zerg_rush_ws_open(const struct zerg_cli *cli, const struct zerg_config *cfg,
                      const char *feature, struct zerg_state *s, int resume,
                      int own_repos, struct zerg_log *log,
                      struct zerg_workspace **out);
/* --resume of a complete worktree run: 1 when a complete task's work is
 * no longer on the integration branch (it says so), so the resume must
 * run and its reconciliation reruns those tasks. */
struct zerg_graph;
int zerg_rush_ws_lost_work(const struct zerg_cli *cli,
                           const struct zerg_config *cfg, const char *feature,
                           const struct zerg_graph *graph,
                           const struct zerg_state *s);
/* The summary's lines: where the work is and how to bring it home. */
void zerg_rush_ws_summary(FILE *f, const struct zerg_cli *cli,
                          const struct zerg_workspace *w, const char *feature);
void zerg_rush_ws_close(struct zerg_workspace *w); /* accepts NULL */

#endif
