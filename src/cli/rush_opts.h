/* rush_opts.h - the options of `zerg rush` (rush_opts.c). */
#ifndef ZERG_CLI_RUSH_OPTS_H
#define ZERG_CLI_RUSH_OPTS_H

#include <stdint.h>

#include "zerg/config.h"
#include "zerg/orchestrator.h"

struct rush_opts {
    int workers;
    int resume, fresh, dry_run;
    int no_progress;
    int mode_set;
    enum zerg_mode mode;
    const char *executor;
    struct zerg_halt halt;
    int timeout_set;
    int64_t timeout_ns;
    int schedule_set;
    enum zerg_schedule schedule;
    int review; /* --review: rush.review true for this rush */
};

/* Parses argv into ro (zeroed by the caller).  0, ZERG_EXIT_OK after
 * --help, or ZERG_EXIT_USAGE with the error said. */
int zerg_rush_parse_opts(int argc, char **argv, struct rush_opts *ro);

#endif
