/* task_check.h - which check verifies a task (task_check.c), as `zerg
 * status`, `zerg status --json` and `zerg report` show it. */
#ifndef ZERG_CLI_TASK_CHECK_H
#define ZERG_CLI_TASK_CHECK_H

#include <stddef.h>

#include "zerg/graph.h"

enum zerg_check_kind {
    ZERG_CHECK_VERIFICATION, /* its verification command */
    ZERG_CHECK_EXIT_CODE,    /* none: its command's exit code only */
    ZERG_CHECK_NONE,         /* none, and no command (an agent task) */
};

/* The kind of t's check and, in *text, what to show: the verification
 * command, "command exit code only" or "no verification" (borrowed from
 * t or static). */
enum zerg_check_kind zerg_task_check(const struct zerg_task *t,
                                     const char **text);

/* "verification", "exit_code" or "none". */
const char *zerg_check_kind_name(enum zerg_check_kind kind);

/* The tasks of a graph grouped by their check: verification commands
 * first (by text), then exit code only, then none; the tasks of a group
 * in graph order. */
struct zerg_check_group {
    enum zerg_check_kind kind;
    const char *text;    /* borrowed from the graph or static */
    const size_t *tasks; /* indexes into g->tasks */
    size_t n;
};
struct zerg_check_groups {
    struct zerg_check_group *v;
    size_t n;
    size_t *order; /* what the groups' tasks point into */
};
/* 0, or -ENOMEM (gs left empty).  _free accepts an empty one. */
int zerg_check_groups(const struct zerg_graph *g, struct zerg_check_groups *gs);
void zerg_check_groups_free(struct zerg_check_groups *gs);

#endif
