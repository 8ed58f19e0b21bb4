/* state_internal.h - what the state files share (private): the status
 * names (state.c) that state_json.c writes and state_read.c parses, the
 * metrics by name, and the reset of one task to pending. */
#ifndef ZERG_STATE_INTERNAL_H
#define ZERG_STATE_INTERNAL_H

#include <stddef.h>

#include "zerg/state.h"

struct zerg_err;

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Indexed by the status enums; the sizes make a definition with a missing
 * or extra name fail to compile. */
extern const char *const state_task_names[ZERG_TASK_NSTATUS];
extern const char *const state_worker_names[8];
extern const char *const state_level_names[3];

/* Index of s in names[0..n), or -1 (also for s NULL). */
int state_name_lookup(const char *const *names, size_t n, const char *s);

/* The git object of doc (base, branch, refs) into s (state_read.c). */
int state_git_from_json(struct zerg_state *s, const zerg_json *doc,
                        struct zerg_err *err);

/* t as a task of that level that never ran: pending, no worker. */
void state_task_reset(struct zerg_task_state *t, int level);

#endif
