/* level_fsm.h - the level life cycle: the one table of level moves.
 *
 * A level's status in the state document (DESIGN §5: pending, running,
 * complete) changes only through zerg_level_apply, whose table says for
 * each event the statuses it moves and where to, and which timestamps
 * the move sets:
 *
 *   start     pending             -> running   (started_at)
 *   complete  pending, running    -> complete  (completed_at)
 *   reopen    complete            -> running   (a live run has work in it
 *                                               again: a reconciliation fix)
 *   reset     complete            -> pending   (`zerg retry` outside a run:
 *                                               the next rush announces it)
 *
 * Any other (status, event) pair is no move: the level stays as it is and
 * zerg_level_apply says 0, which is how a caller learns whether it is the
 * first to start or complete a level (the one that logs it).
 * (docs/wiki/Resilience-Architecture.md carries the table rendered by
 * zerg_level_fsm_markdown; a unit test keeps them equal.) */
#ifndef ZERG_LEVEL_FSM_H
#define ZERG_LEVEL_FSM_H

#include <stddef.h>
#include <stdint.h>

#include "zerg/state.h"

enum zerg_level_event {
    ZERG_LEVEL_EV_START,
    ZERG_LEVEL_EV_COMPLETE,
    ZERG_LEVEL_EV_REOPEN,
    ZERG_LEVEL_EV_RESET,
    ZERG_LEVEL_NEVENTS
};

/* 1 when the level moved, 0 when the event is no move in its status. */
int zerg_level_apply(struct zerg_level_state *ls, enum zerg_level_event ev,
                     int64_t now_wall_ns);
/* The table as Markdown, for the docs (like snprintf). */
int zerg_level_fsm_markdown(char *buf, size_t size);

#endif
