/* plan.h - the level plan printed by `zerg validate` and `zerg rush
 * --dry-run`: per level, the tasks in the order they can start, their
 * dependencies, which ones are serialized by a shared file, how many can
 * run at once, and the critical path. */
#ifndef ZERG_CLI_PLAN_H
#define ZERG_CLI_PLAN_H

#include <stdio.h>

struct zerg_graph;

/* Prints the plan of g for `workers` workers (<= 0: do not estimate the
 * parallelism).  color adds ANSI emphasis.  0, or -EIO if out failed. */
int zerg_cli_print_plan(FILE *out, const struct zerg_graph *g, int workers,
                        int color);

#endif
