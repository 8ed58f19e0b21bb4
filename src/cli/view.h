/* view.h - what `zerg rush` shows while it runs.
 * On a terminal: recovery events and level changes as they happen, under
 * a one-line progress bar redrawn in place (colour unless NO_COLOR).
 * Otherwise: the plain monitor.log lines, one per event. */
#ifndef ZERG_CLI_VIEW_H
#define ZERG_CLI_VIEW_H

struct zerg_cli;
struct zerg_graph;
struct zerg_state;
struct zerg_log;
struct zerg_view;

/* Observes log; g and s must outlive the view. */
struct zerg_view *zerg_view_new(const struct zerg_cli *cli,
                                const struct zerg_graph *g,
                                const struct zerg_state *s,
                                struct zerg_log *log);
void zerg_view_free(struct zerg_view *v); /* detaches; accepts NULL */

#endif
