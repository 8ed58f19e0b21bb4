/* eta.h - the time a run has left, for the live view of `zerg rush`
 * (view.c) and `zerg status`.
 *
 * Each task not finished is expected to take, first found of:
 *   1. what it took in the run before (prev_duration_ms: the graph
 *      repeats), scaled by actual/earlier of this run's finished tasks
 *      that have both;
 *   2. its estimate_minutes, scaled by actual/estimated of this run's
 *      finished tasks that have an estimate (1 before any finished);
 *   3. the mean measured duration of this run's finished tasks;
 *   4. the mean of what 1-2 expect of the other remaining tasks.
 * A running task counts what is left of it by the clock passed in (never
 * below zero).  The sum is shared by the workers, at most one per task
 * left.  No sleeping, no clock of its own: the tests inject "now". */
#ifndef ZERG_CLI_ETA_H
#define ZERG_CLI_ETA_H

#include <stddef.h>
#include <stdint.h>

struct zerg_graph;
struct zerg_state;

/* ns left, 0 when nothing is, -1 when nothing can tell (no estimate, no
 * earlier run, nothing measured).  now_wall_ns: for running tasks. */
int64_t zerg_eta_ns(const struct zerg_graph *g, const struct zerg_state *s,
                    int workers, int64_t now_wall_ns);

#endif
