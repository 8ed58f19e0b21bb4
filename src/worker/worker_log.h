/* worker_log.h - the log file of a task attempt (worker_log.c), used by
 * worker_run.c: opened below .zerg/logs/{feature}/tasks/ without following
 * a link, written one whole line per write(2). */
#ifndef ZERG_WORKER_LOG_H
#define ZERG_WORKER_LOG_H

#include <stddef.h>
#include <sys/types.h>

#include "worker_state.h"

/* An attempt's log as the worker writes it: the fd (O_APPEND) and its
 * size, -1 when unknown (a stage wrote to it too). */
struct wk_log {
    int fd;
    off_t size;
};

/* Opens (creating what is missing) .zerg/logs/{feature}/tasks/{id}/
 * attempt-{attempt}.log for appending; dir gets the attempt's directory.
 * 0, or negative with err set. */
int wk_log_open(struct worker *w, const char *id, int attempt, char *dir,
                size_t dir_size, struct wk_log *log, struct zerg_err *err);
/* Appends len bytes in one write(2) when the kernel takes them whole. */
void wk_log_write(struct wk_log *log, const char *s, size_t len);
/* Appends the formatted text the same way. */
void wk_log_printf(struct wk_log *log, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Writes the attempt's result r: as .zerg/logs/{feature}/tasks/{id}/
 * attempt-{attempt}.result.json, which becomes the state directory's
 * result file too (zerg_fsio_write_linked), or, where that cannot be
 * done, as that file alone.  flags: zerg_fsio_write_atomic's.  0, or
 * negative with err set (the result file is not written). */
int wk_log_result(struct worker *w, const struct zerg_result *r, int flags,
                  struct zerg_err *err);
/* Closes what the worker kept open for the logs (worker_close). */
void wk_log_dir_close(struct worker *w);

#endif
