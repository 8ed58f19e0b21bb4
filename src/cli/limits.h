/* limits.h - the machine limits a rush of N workers needs (limits.c). */
#ifndef ZERG_CLI_LIMITS_H
#define ZERG_CLI_LIMITS_H

#include <stddef.h>

/* 0 when N workers fit the user's inotify instances and open files (the
 * soft open-file limit is raised when the hard one allows); -1 with the
 * sentence and the fix in msg otherwise. */
int zerg_cli_check_limits(int workers, char *msg, size_t size);

#endif
