/* level_fsm.c - the level life cycle as one table (see zerg/level_fsm.h).
 *
 * Nothing else in zerg writes a level's status; a grep for
 * "status = ZERG_LEVEL_" outside this file finds only comparisons. */
#include "zerg/level_fsm.h"

#include <stdio.h>

#include "zerg/text.h"

#define BIT(s) (1u << (s))
#define NSTATUS 3

enum stamp { STAMP_STARTED, STAMP_COMPLETED, STAMP_CLEAR_DONE };

static const struct level_move {
    const char *name;
    unsigned from; /* bit mask of the statuses it moves */
    enum zerg_level_status to;
    enum stamp stamp;
} moves[ZERG_LEVEL_NEVENTS] = {
    [ZERG_LEVEL_EV_START] = {"start", BIT(ZERG_LEVEL_PENDING),
                             ZERG_LEVEL_RUNNING, STAMP_STARTED},
    [ZERG_LEVEL_EV_COMPLETE] = {"complete",
                                BIT(ZERG_LEVEL_PENDING) |
                                    BIT(ZERG_LEVEL_RUNNING),
                                ZERG_LEVEL_COMPLETE, STAMP_COMPLETED},
    [ZERG_LEVEL_EV_REOPEN] = {"reopen", BIT(ZERG_LEVEL_COMPLETE),
                              ZERG_LEVEL_RUNNING, STAMP_CLEAR_DONE},
    [ZERG_LEVEL_EV_RESET] = {"reset", BIT(ZERG_LEVEL_COMPLETE),
                             ZERG_LEVEL_PENDING, STAMP_CLEAR_DONE},
};

int zerg_level_apply(struct zerg_level_state *ls, enum zerg_level_event ev,
                     int64_t now_wall_ns)
{
    if ((unsigned)ev >= ZERG_LEVEL_NEVENTS || (unsigned)ls->status >= NSTATUS ||
        !(moves[ev].from & BIT(ls->status)))
        return 0;
    ls->status = moves[ev].to;
    switch (moves[ev].stamp) {
    case STAMP_STARTED:
        ls->started_at_wall_ns = now_wall_ns;
        break;
    case STAMP_COMPLETED:
        ls->completed_at_wall_ns = now_wall_ns;
        break;
    case STAMP_CLEAR_DONE:
        ls->completed_at_wall_ns = 0;
        break;
    }
    return 1;
}

static void level_cell(const void *ctx, int s, int e, char *out, size_t n)
{
    (void)ctx;
    if (s < 0)
        snprintf(out, n, "%s", moves[e].name);
    else if (e < 0)
        snprintf(out, n, "%s",
                 zerg_level_status_name((enum zerg_level_status)s));
    else if (moves[e].from & BIT(s))
        snprintf(out, n, "→ %s", zerg_level_status_name(moves[e].to));
    else
        snprintf(out, n, "stays");
}

int zerg_level_fsm_markdown(char *buf, size_t size)
{
    return zerg_text_table(buf, size, "status \\ event", NSTATUS,
                           ZERG_LEVEL_NEVENTS, level_cell, NULL);
}
