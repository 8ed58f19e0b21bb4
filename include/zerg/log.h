/* log.h - the monitor log: .zerg/monitor.log and .zerg/monitor.jsonl.
 *
 * Every event goes to both files as one line each, written with a single
 * write(2) on an O_APPEND descriptor so several processes can share them:
 *
 *   2026-02-03T05:41:55.123Z [W0] [INFO] Worker 0 claimed task A-L1-002
 *   {"ts":"...","worker":0,"level":"INFO","event":"task_claimed",
 *    "task":"A-L1-002","msg":"Worker 0 claimed task A-L1-002","data":{...}}
 *
 * worker is the slot number, or ZERG_LOG_ORCH for the orchestrator ("worker"
 * is null in JSON then). */
#ifndef ZERG_LOG_H
#define ZERG_LOG_H

#include <stdint.h>
#include "zerg/clock.h"
#include "zerg/json.h"

struct zerg_err;

enum zerg_log_level {
    ZERG_LOG_DEBUG,
    ZERG_LOG_INFO,
    ZERG_LOG_WARN,
    ZERG_LOG_ERROR,
};
#define ZERG_LOG_ORCH (-1)

/* One event as passed to an observer (the rush's terminal view). */
struct zerg_log_rec {
    int64_t wall_ns;
    int worker;
    enum zerg_log_level level;
    const char *event;
    const char *task; /* may be NULL */
    const char *msg;
    const zerg_json *data; /* may be NULL */
};
typedef void (*zerg_log_observer)(void *ud, const struct zerg_log_rec *rec);

struct zerg_log;

/* Opens (creating) monitor.log and monitor.jsonl in zerg_dir (".zerg").
 * clock may be NULL for the system clock.  Returns NULL with err set. */
struct zerg_log *zerg_log_open(const char *zerg_dir,
                               const struct zerg_clock *clock,
                               struct zerg_err *err);
void zerg_log_close(struct zerg_log *lg); /* accepts NULL */

/* Events below min_level are dropped (default INFO; DEBUG with
 * ZERG_DEBUG=1). */
void zerg_log_set_level(struct zerg_log *lg, enum zerg_log_level min_level);
void zerg_log_set_observer(struct zerg_log *lg, zerg_log_observer fn, void *ud);
/* Every JSON event names this feature from now on ("feature"), so one
 * project's monitor.jsonl can be read per feature (`zerg logs --feature`).
 * NULL or "" leaves it out. */
void zerg_log_set_feature(struct zerg_log *lg, const char *feature);

/* Writes one event.  data (may be NULL) is owned and freed by the call.
 * Never fails the caller: a write error is reported once on stderr. */
void zerg_log_event(struct zerg_log *lg, int worker, enum zerg_log_level level,
                    const char *event, const char *task, zerg_json *data,
                    const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Size-based rotation (logging.max_size_mb, logging.keep): a file of at
 * least max_bytes becomes NAME.1, NAME.1 becomes NAME.2 ... up to
 * NAME.keep (the oldest is dropped).  max_bytes 0: never. */
struct zerg_log_rotation {
    int64_t max_bytes;
    int keep; /* at least 1 */
    /* Optional: asked right before a rotation while running; 0 refuses
     * it (another rush's containers write the file) and it is asked again
     * once the file has grown by another 1/16 of max_bytes. */
    int (*may_rotate)(void *ud);
    void *ud;
};

/* Rotates each of monitor.log and monitor.jsonl in zerg_dir that is at
 * least rot->max_bytes, before anything has it open for writing.  Returns
 * how many were rotated, or negative with err set. */
int zerg_log_rotate_files(const char *zerg_dir,
                          const struct zerg_log_rotation *rot,
                          struct zerg_err *err);
/* From now on, a file this handle wrote past rot->max_bytes is rotated
 * and reopened right after the line that crossed it.  Without this call
 * a handle never rotates, but follows a rotation that another process
 * did (it reopens the name before its next line).  A rotating handle is
 * taken to be the only rotator while it runs (may_rotate refuses while
 * another rush runs): it counts its bytes and looks at the name only when
 * that count may cross the size, after another 1/16 of it, or a second
 * after its last look (other writers' lines and a file replaced from
 * outside zerg are seen then). */
void zerg_log_set_rotation(struct zerg_log *lg,
                           const struct zerg_log_rotation *rot);

const char *zerg_log_level_name(enum zerg_log_level level); /* "INFO" */
int zerg_log_level_parse(const char *s, enum zerg_log_level *out);

#endif
