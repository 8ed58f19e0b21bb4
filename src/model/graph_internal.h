/* graph_internal.h - what the task graph loader's files share (private).
 *
 * graph.c reads the file into struct zerg_graph and runs the passes in
 * order; graph_order.c resolves dependencies, orders each level and finds
 * the critical path; graph_conflict.c turns same-level writes of one path
 * into conflicts.  Each pass reports through the parse context, so every
 * message names the file and the task. */
#ifndef ZERG_GRAPH_INTERNAL_H
#define ZERG_GRAPH_INTERNAL_H

#include <stddef.h>

#include "zerg/graph.h"

struct zerg_err;

#define SHOW_MAX 72 /* bytes of a bad value echoed in a message */

struct parse_ctx {
    const char *name; /* file name for messages */
    const char *text; /* the file's text, for each task's src_hash */
    struct zerg_err *err;
    struct zerg_graph *g;
    int zero_based;
    /* While the tasks stream in: room in g->tasks, each task's level as
     * written (checked once the whole file says how levels are numbered),
     * and the first bad task's error (reported after the top level). */
    size_t cap;
    double *raw_level;
    int task_rc;
};

/* s for a message: printable ASCII as is, the rest as \xNN, cut at max
 * bytes; in double quotes when quote is set.  Returns buf. */
const char *graph_show_raw(char *buf, size_t size, const char *s, size_t len,
                           size_t max, int quote);
/* graph_show_raw quoted, cut at SHOW_MAX. */
const char *graph_show(char *buf, size_t size, const char *s, size_t len);

/* "<file>: task <id>: <what>", or "<file>: tasks[i]: <what>" before the
 * task has a valid id.  Returns ZERG_EINVAL_INPUT. */
int graph_task_err(struct parse_ctx *c, size_t i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "<file>: out of memory"; returns -ENOMEM. */
int graph_nomem(struct parse_ctx *c);

/* Appends a copy of s; 0 or -ENOMEM. */
int graph_strlist_push(struct zerg_strlist *l, const char *s);

/* The passes after parsing, in the order graph.c runs them; each returns
 * 0 or the error it set in c->err. */
int graph_resolve_deps(struct parse_ctx *c);
int graph_build_levels(struct parse_ctx *c);
int graph_find_conflicts(struct parse_ctx *c);
int graph_critical_path(struct parse_ctx *c);

#endif
