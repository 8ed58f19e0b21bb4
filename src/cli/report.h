/* report.h - `zerg report`: one self-contained HTML page (inline CSS and
 * SVG, no network) showing a run's timeline and its tasks.
 *
 * The page is built in three steps, one file each:
 *   report_model.c  monitor.jsonl events -> attempts, markers, level lines
 *   report_svg.c    the model -> the SVG timeline
 *   report.c        the command: reading, the header, the task table
 * report_html.c holds the growing buffer and the HTML escaping that every
 * inserted string (task ids, messages, errors) goes through. */
#ifndef ZERG_CLI_REPORT_H
#define ZERG_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "zerg/json.h"

struct zerg_cli;
int zerg_cmd_report(struct zerg_cli *cli, int argc, char **argv);

/* ---- the output buffer (report_html.c) ---------------------------------- */

/* A growing NUL-terminated string; oom is set (and the text stops growing)
 * when memory runs out, so writers need not check every call. */
struct zerg_rbuf {
    char *s;
    size_t len, cap;
    int oom;
};

void zerg_rbuf_put(struct zerg_rbuf *b, const char *s, size_t n);
void zerg_rbuf_puts(struct zerg_rbuf *b, const char *s);
void zerg_rbuf_printf(struct zerg_rbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends s escaped for HTML text, attribute values and SVG (NULL: ""). */
void zerg_rbuf_esc(struct zerg_rbuf *b, const char *s);
void zerg_rbuf_close(struct zerg_rbuf *b); /* frees the text */

/* Escapes s for HTML and SVG: & < > " ' become entities, and control
 * characters other than tab and newline become '?' (a task's stderr can
 * hold anything).  Writes at most size bytes to out, always
 * NUL-terminated when size > 0 and never cutting an entity; returns the
 * length the whole escaped text needs, like snprintf. */
size_t zerg_report_escape(const char *s, char *out, size_t size);

/* ---- the model (report_model.c) ----------------------------------------- */

/* How an attempt ended: the bar's colour. */
enum rp_outcome {
    RP_COMPLETE,
    RP_FAILED,      /* failed permanently */
    RP_RETRIED,     /* failed, another attempt was scheduled */
    RP_CRASHED,     /* its worker crashed or went stale; reassigned */
    RP_TIMEOUT,     /* no progress: task_timeout */
    RP_INTERRUPTED, /* still open when the log ends, or its worker exited */
    RP_REVIEW,      /* complete, but flagged for review (config_change warn) */
    RP_AWAITING,    /* passed, waits for the reviewer (rush.review) */
    RP_REDONE,      /* passed, sent back by the reviewer (zerg redo) */
    RP_NOUTCOMES
};

enum rp_mark_kind {
    RP_M_CRASH,    /* worker_crash */
    RP_M_STALE,    /* heartbeat_stale, task_timeout: a stale kill */
    RP_M_RESPAWN,  /* worker_respawn */
    RP_M_REASSIGN, /* task_reassigned */
    RP_M_MERGE,    /* any event whose name holds "merge" */
    RP_M_NKINDS
};

struct rp_attempt {
    char *task;
    int lane, attempt;
    int64_t start_ns, end_ns;
    enum rp_outcome outcome;
    int timed_out; /* a task_timeout came before the end */
    int review;    /* a config_change warning came before the end */
    char *reason;  /* NULL or why it ended */
};

struct rp_mark {
    enum rp_mark_kind kind;
    int lane; /* -1: the orchestrator */
    int64_t t_ns;
    char *task; /* may be NULL */
    char *text; /* the event's message */
};

struct rp_level_line {
    int level, start; /* start: level_start, else level_complete */
    int64_t t_ns;
};

/* One rush of the run: from its rush_start to its rush_complete or
 * rush_failed, or to its last event when it died without one. */
struct rp_session {
    int64_t start_ns, end_ns;
    int ended; /* an end event was seen */
};

/* The most worker slots drawn: a log naming worker 10^9 is damage. */
#define RP_MAX_LANES 4096

struct rp_model {
    char *feature; /* NULL: every event counts */
    char run_id[64];
    int64_t t0_ns, t1_ns; /* first and last event kept; 0 when none */
    int64_t last_ns;      /* the event before the one being applied */
    double elapsed_s;     /* rush_complete/rush_failed data, -1 if none */
    struct rp_attempt *att;
    size_t natt, capatt;
    struct rp_mark *mk;
    size_t nmk, capmk;
    struct rp_level_line *lv;
    size_t nlv, caplv;
    struct rp_session *ss; /* the rushes of the run, a resume adds one */
    size_t nss, capss;
    int nlanes;
    int *open; /* per lane: index in att of the running attempt, or -1 */
    size_t events, corrupt, other; /* kept, unreadable, not drawn */
};

/* Starts an empty model for feature (NULL: every feature). */
int rp_model_init(struct rp_model *m, const char *feature);
void rp_model_close(struct rp_model *m);
/* Feeds the monitor log's text: one JSON object a line; lines that do not
 * parse are counted in m->corrupt and skipped.  A rush_start that is not a
 * resume starts the model over, so the page shows the latest run (and the
 * resumes of it).  Then closes what is still open as interrupted. */
void rp_model_feed(struct rp_model *m, const char *text, size_t len);
/* How long the run took, over all its rushes: wall is its first start
 * to its last end (what its user waited, the span the timeline draws);
 * running is the sum of its rushes (wall less the time between a stop
 * and the resume).  -1 each when the log holds no event. */
void rp_model_elapsed(const struct rp_model *m, double *wall, double *running);
/* Makes sure lanes 0..n-1 exist (the state's worker slots). */
int rp_model_lanes(struct rp_model *m, int n);

/* ---- rendering ------------------------------------------------------------
 */

const char *rp_outcome_name(enum rp_outcome o);
const char *rp_mark_name(enum rp_mark_kind k);
/* Appends the SVG timeline (report_svg.c). */
void rp_svg_timeline(struct zerg_rbuf *b, const struct rp_model *m);
/* "1.23 s", "4 min 05 s", ... */
void rp_fmt_duration(char *buf, size_t size, double s);

#endif
