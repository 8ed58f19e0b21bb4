/* task_output.h - a task attempt's output log (task_output.c). */
#ifndef ZERG_CLI_TASK_OUTPUT_H
#define ZERG_CLI_TASK_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

#include "cli/cli.h"

/* The path of the output of task's attempt (attempt <= 0: the last one
 * there is).  0, -ENOENT when there is none, -ENAMETOOLONG. */
int zerg_task_output_path(const struct zerg_cli *cli, const char *feature,
                          const char *task, int attempt, char *buf,
                          size_t size);

/* Prints the log at path (with lines > 0 only its last lines), each line
 * after indent, control characters shown as '?'; an agent attempt's log
 * as its transcript (DESIGN §21).  0 or negative. */
int zerg_task_output_print(FILE *out, const char *path, size_t lines,
                           const char *indent);
/* The same; raw: the file as it is, the agent's events too. */
int zerg_task_output_print_as(FILE *out, const char *path, size_t lines,
                              const char *indent, int raw);

struct zerg_graph;
struct zerg_state;

/* After a rush: each failed task (the first 10) with its reason, error,
 * the last lines of its output and the log path; then how many are
 * blocked.  Prints nothing when nothing failed. */
void zerg_task_output_failures(FILE *out, const struct zerg_cli *cli,
                               const char *feature, const struct zerg_graph *g,
                               const struct zerg_state *s);

#endif
