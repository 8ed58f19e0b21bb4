/* worker_ws.h - an attempt's worktree (worker_ws.c), used by worker.c at
 * setup and by worker_run.c around each attempt. */
#ifndef ZERG_WORKER_WS_H
#define ZERG_WORKER_WS_H

#include "worker_state.h"

/* Sets w->workdir and, with a workspace, opens its git.  0 or negative
 * with w->err set. */
int wk_ws_setup(struct worker *w);
/* Before an attempt: the worktree at a->base, leftovers saved (r->patch)
 * and r->base set.  0, or negative with r->error set.  No-op without a
 * workspace. */
int wk_ws_before(struct worker *w, const struct zerg_assign *a,
                 struct zerg_result *r);
/* After a passing attempt: its commit in r->commit ("" = no change).  0,
 * or negative with r->stage "commit" and r->error set. */
int wk_ws_after(struct worker *w, const struct zerg_task *t, int attempt,
                struct zerg_result *r);

#endif
