/* view.h - what `zerg rush` shows while it runs.
 *
 * On a terminal (and unless --no-progress): the interesting events
 * (recovery, levels, the run itself) scroll by above a live block that is
 * redrawn in place several times a second even while nothing happens:
 *
 *   5/8 done  3 running  0 failed  0 retries  level 2/3  elapsed 0:07
 *       ETA 0:04  2.1/min  [######....]
 *   W0 busy      T-L2-001 #1  execute  40%  0:01
 *   W1 crashed, respawning (respawns 1)
 *
 * Every line is cut to the terminal width (updated on SIGWINCH), so the
 * block never wraps and never leaves copies behind.  Colour unless
 * NO_COLOR.  Otherwise: the plain monitor.log lines, one per event, with
 * no escape sequence. */
#ifndef ZERG_CLI_VIEW_H
#define ZERG_CLI_VIEW_H

#include <stdint.h>

struct zerg_cli;
struct zerg_graph;
struct zerg_state;
struct zerg_log;
struct zerg_orch;
struct zerg_view;

/* Observes log; g and s must outlive the view.  live = 0 forces the plain
 * lines even on a terminal (--no-progress). */
struct zerg_view *zerg_view_new(const struct zerg_cli *cli,
                                const struct zerg_graph *g,
                                const struct zerg_state *s,
                                struct zerg_log *log, int live);
/* Erases the block, detaches, restores SIGWINCH; accepts NULL. */
void zerg_view_free(struct zerg_view *v);

/* The orchestrator's on_frame hook (ctx is the view): redraws the block
 * when a frame is due.  o must stay valid until the rush ends. */
void zerg_view_frame(void *ctx, const struct zerg_orch *o, int64_t now_mono_ns);

/* How often rush asks for a frame: about 6-7 redraws a second. */
#define ZERG_VIEW_FRAME_NS (150 * INT64_C(1000000))

#endif
