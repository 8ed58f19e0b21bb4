/* review_cli.h - what `zerg review`, `zerg diff` (review.c), `zerg
 * approve` and `zerg redo` (review_decide.c) share: the feature, its
 * graph and its saved state, read only. */
#ifndef ZERG_CLI_REVIEW_CLI_H
#define ZERG_CLI_REVIEW_CLI_H

#include <sys/types.h>

#include "cli.h"
#include "zerg/graph.h"
#include "zerg/state.h"

struct rv {
    const char *cmd; /* for the error lines */
    struct zerg_cli *cli;
    char feature[ZERG_ID_MAX + 1];
    struct zerg_graph *g;
    struct zerg_state s;
    int loaded;
    char state_path[PATH_MAX], lock_path[PATH_MAX];
};

/* The feature, its graph and its saved state: 0, or the exit code with
 * the error said (1 no run recorded, 2 bad graph or state). */
int rv_open(struct zerg_cli *cli, const char *cmd, struct rv *r);
/* Reads the saved state again (0 or an exit code). */
int rv_load_state(struct rv *r);
void rv_close(struct rv *r);
/* The index of task id, or -1 with "unknown task" said. */
ssize_t rv_task(const struct rv *r, const char *id);

#endif
