/* status_view.h - what the files of `zerg status` share: the view of a
 * run read from the files a rush leaves (status_view.c reads and judges
 * it), printed as text (status.c) or as one JSON object (status_json.c). */
#ifndef ZERG_STATUS_VIEW_H
#define ZERG_STATUS_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"
#include "zerg/graph.h"
#include "zerg/protocol.h"
#include "zerg/state.h"

#define MAX_REASONS 6
#define MAX_HEARTBEATS 1024

/* Everything status shows, read once per redraw. */
struct view {
    const struct zerg_cli *cli;
    char feature[ZERG_ID_MAX + 1];
    struct zerg_graph *g;
    struct zerg_state s;
    int have_state;
    int running; /* a rush holds the lock */
    pid_t pid;
    struct zerg_heartbeat *hb;
    size_t nhb;
    int64_t now_ns; /* wall */
};

struct health {
    const char *verdict;
    char reasons[MAX_REASONS][160];
    int n;
};

/* Reads state, lock and heartbeats.  0, -ENOENT when no run was
 * recorded, another negative code with err set. */
int sv_load(const struct zerg_cli *cli, struct view *v, struct zerg_err *err);
void sv_close(struct view *v);

/* The health verdict (ok, degraded, failing) and its reasons. */
void sv_judge(const struct view *v, struct health *h);
/* "running", the run's recorded end, or "not running". */
const char *sv_run_word(const struct view *v);
/* A worker's status as it is now: "gone" for one the state records as
 * live when no rush holds the lock. */
const char *sv_worker_word(const struct view *v,
                           const struct zerg_worker_state *w);
/* 1 when the state says "running" but no rush holds the lock. */
int sv_interrupted(const struct view *v);
int sv_status_is(const struct zerg_state *s, const char *what);
int sv_is_live(enum zerg_worker_status st);
int sv_unfinished(enum zerg_task_status st);
/* The current level, never past the last one. */
int sv_shown_level(const struct view *v);
/* How far level lv got: complete tasks (done), failed and blocked ones
 * counted apart, so a level that failed never reads "3/3". */
struct sv_level {
    size_t done, failed, blocked, total;
};
void sv_level_counts(const struct view *v, int lv, struct sv_level *c);
const struct zerg_heartbeat *sv_hb_for(const struct view *v,
                                       const struct zerg_worker_state *w);

/* status_json.c: the view as one JSON object on out.  An exit code. */
int sv_print_json(FILE *out, const struct view *v);

#endif
