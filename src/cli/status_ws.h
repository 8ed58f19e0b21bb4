/* status_ws.h - what `zerg status` shows of worktree isolation
 * (status_ws.c). */
#ifndef ZERG_STATUS_WS_H
#define ZERG_STATUS_WS_H

#include <stdio.h>

#include "cli.h"
#include "zerg/json.h"

struct zerg_state;
struct zerg_graph;

/* The integration branch, merged/unmerged counts and each worktree; prints
 * nothing for a run without isolation. */
void zerg_status_ws_print(FILE *out, const struct zerg_cli *cli,
                          const char *feature, const struct zerg_state *s,
                          const struct zerg_graph *g);
/* The same as JSON, or null. */
zerg_json *zerg_status_ws_json(const struct zerg_cli *cli, const char *feature,
                               const struct zerg_state *s,
                               const struct zerg_graph *g);

#endif
