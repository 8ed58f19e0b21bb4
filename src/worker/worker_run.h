/* worker_run.h - one task attempt on a worker (worker_run.c), called by
 * the assignment loop in worker.c. */
#ifndef ZERG_WORKER_RUN_H
#define ZERG_WORKER_RUN_H

#include "worker_state.h"

/* Runs one attempt of a task and writes its result (not when the worker
 * was told to exit meanwhile). */
void wk_run_task(struct worker *w, const struct zerg_assign *a);

#endif
