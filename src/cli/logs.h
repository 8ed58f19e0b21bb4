/* logs.h - what `zerg logs` (logs.c) shares with its --joblog
 * (logs_joblog.c): the reading of the monitor log, rotated files
 * included, and the joblog itself. */
#ifndef ZERG_CLI_LOGS_H
#define ZERG_CLI_LOGS_H

#include "cli/cli.h"
#include "zerg/json.h"

/* Called with each event in log order; rec is borrowed for the call. */
typedef void zerg_logs_each_fn(void *ctx, const zerg_json *rec);

/* Calls fn with every event of feature (NULL: any) in .zerg/monitor.jsonl,
 * the rotated files first, oldest first; unparsable lines are skipped
 * and counted on stderr.  0, or an exit code (ZERG_EXIT_*) with the
 * error said. */
int zerg_logs_each(struct zerg_cli *cli, const char *feature,
                   zerg_logs_each_fn *fn, void *ctx);

/* `zerg logs --joblog [--task ID] [--json]`: an exit code. */
int zerg_logs_joblog(struct zerg_cli *cli, const char *task, int json);

#endif
