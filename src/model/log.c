/* log.c - the monitor log, .zerg/monitor.log and .zerg/monitor.jsonl
 * (see zerg/log.h and DESIGN.md section 11).
 *
 * The orchestrator and its workers append to the same two files.  Each line
 * is built whole in memory and written with one write(2) on an O_APPEND
 * descriptor: the kernel appends it under the inode lock, so lines from
 * several processes interleave but never mix. */
#include "zerg/log.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/graph.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

struct zerg_log {
    int fd_text;  /* monitor.log */
    int fd_jsonl; /* monitor.jsonl */
    struct zerg_clock clock;
    enum zerg_log_level min_level;
    zerg_log_observer observer;
    void *observer_ud;
    int write_failed; /* reported on stderr once */
    char feature[ZERG_ID_MAX + 1]; /* "" until set: not in the events */
};

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

const char *zerg_log_level_name(enum zerg_log_level level)
{
    if ((unsigned)level > ZERG_LOG_ERROR)
        return "INFO";
    return level_names[level];
}

int zerg_log_level_parse(const char *s, enum zerg_log_level *out)
{
    for (int i = ZERG_LOG_DEBUG; s && i <= ZERG_LOG_ERROR; i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum zerg_log_level)i;
            return 0;
        }
    }
    if (s && strcasecmp(s, "warning") == 0) {
        *out = ZERG_LOG_WARN;
        return 0;
    }
    return -EINVAL;
}

static int open_append(const char *dir, const char *name, struct zerg_err *err)
{
    char path[PATH_MAX];
    int rc = zerg_fsio_path(path, sizeof path, "%s/%s", dir, name);
    if (rc < 0)
        return zerg_err_set(err, rc, "cannot open %s/%s: %s", dir, name,
                            zerg_strerror(rc));
    /* Never through a link (a task could point it out of the project) and
     * never a FIFO, whose open would wait for a reader. */
    return zerg_fsio_open_append(path, err);
}

static int debug_from_env(void)
{
    const char *v = getenv("ZERG_DEBUG");
    return v && *v && strcmp(v, "0") != 0;
}

struct zerg_log *zerg_log_open(const char *zerg_dir,
                               const struct zerg_clock *clock,
                               struct zerg_err *err)
{
    struct zerg_log *lg = calloc(1, sizeof *lg);
    if (!lg) {
        zerg_err_set(err, -ENOMEM, "cannot open the monitor log: %s",
                     zerg_strerror(-ENOMEM));
        return NULL;
    }
    lg->fd_text = lg->fd_jsonl = -1;
    lg->clock = clock ? *clock : zerg_clock_system;
    lg->min_level = debug_from_env() ? ZERG_LOG_DEBUG : ZERG_LOG_INFO;
    int rc = zerg_fsio_mkdirs(zerg_dir, 0755);
    if (rc < 0) {
        zerg_err_set(err, rc, "cannot create %s: %s", zerg_dir,
                     zerg_strerror(rc));
        goto fail;
    }
    if ((lg->fd_text = open_append(zerg_dir, "monitor.log", err)) < 0 ||
        (lg->fd_jsonl = open_append(zerg_dir, "monitor.jsonl", err)) < 0)
        goto fail;
    return lg;
fail:
    zerg_log_close(lg);
    return NULL;
}

void zerg_log_close(struct zerg_log *lg)
{
    if (!lg)
        return;
    if (lg->fd_text >= 0)
        close(lg->fd_text);
    if (lg->fd_jsonl >= 0)
        close(lg->fd_jsonl);
    free(lg);
}

void zerg_log_set_level(struct zerg_log *lg, enum zerg_log_level min_level)
{
    lg->min_level = min_level;
}

void zerg_log_set_feature(struct zerg_log *lg, const char *feature)
{
    snprintf(lg->feature, sizeof lg->feature, "%s", feature ? feature : "");
}

void zerg_log_set_observer(struct zerg_log *lg, zerg_log_observer fn, void *ud)
{
    lg->observer = fn;
    lg->observer_ud = ud;
}

/* "2026-02-03T05:41:55.123Z [W0] [INFO] message\n", malloc'd.  Line
 * breaks in the message become spaces so one event stays one line. */
static char *text_line(const struct zerg_log_rec *rec, size_t *len)
{
    char ts[ZERG_TS_MAX], who[24];
    zerg_clock_iso8601(rec->wall_ns, ts);
    if (rec->worker < 0)
        snprintf(who, sizeof who, "ORCH");
    else
        snprintf(who, sizeof who, "W%d", rec->worker);
    char *line = NULL;
    int n = asprintf(&line, "%s [%s] [%s] %s\n", ts, who,
                     zerg_log_level_name(rec->level), rec->msg);
    if (n < 0)
        return NULL;
    char *msg = line + n - 1 - strlen(rec->msg);
    for (char *p = msg; p < line + n - 1; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    *len = (size_t)n;
    return line;
}

static int json_fields(zerg_json *o, const struct zerg_log_rec *rec,
                       const char *feature)
{
    char ts[ZERG_TS_MAX];
    zerg_json *worker =
        rec->worker < 0 ? zerg_json_null() : zerg_json_num(rec->worker);
    if (zerg_json_set_str(o, "ts", zerg_clock_iso8601(rec->wall_ns, ts)) ||
        zerg_json_set(o, "worker", worker) ||
        zerg_json_set_str(o, "level", zerg_log_level_name(rec->level)) ||
        zerg_json_set_str(o, "event", rec->event) ||
        zerg_json_set_str(o, "task", rec->task) ||
        zerg_json_set_str(o, "msg", rec->msg) ||
        (feature[0] && zerg_json_set_str(o, "feature", feature)))
        return -ENOMEM;
    return 0;
}

/* {"ts","worker","level","event","task","msg"[,"feature"],"data"}; takes
 * data. */
static zerg_json *json_record(const struct zerg_log_rec *rec,
                              const char *feature, zerg_json *data)
{
    zerg_json *o = zerg_json_obj();
    if (!o || json_fields(o, rec, feature) < 0) {
        zerg_json_free(o);
        zerg_json_free(data);
        return NULL;
    }
    if (zerg_json_set(o, "data", data ? data : zerg_json_obj()) < 0) {
        zerg_json_free(o); /* set() freed data */
        return NULL;
    }
    return o;
}

/* The JSON line, malloc'd with its "\n".  Data that cannot be encoded (NaN)
 * is replaced by the reason, so the event itself is never lost. */
static char *jsonl_line(const struct zerg_log_rec *rec, const char *feature,
                        zerg_json *data, size_t *len)
{
    struct zerg_err err = {0};
    zerg_json *o = json_record(rec, feature, data);
    char *text = o ? zerg_json_encode(o, len, &err) : NULL;
    zerg_json_free(o);
    if (!text && o) {
        zerg_json *why = zerg_json_obj();
        zerg_json_set_str(why, "encode_error", err.msg);
        o = json_record(rec, feature, why);
        text = o ? zerg_json_encode(o, len, &err) : NULL;
        zerg_json_free(o);
    }
    if (!text)
        return NULL;
    char *line = realloc(text, *len + 2);
    if (!line) {
        free(text);
        return NULL;
    }
    line[(*len)++] = '\n';
    line[*len] = '\0';
    return line;
}

static void report_failure(struct zerg_log *lg, const char *what, int rc)
{
    if (lg->write_failed)
        return;
    lg->write_failed = 1;
    fprintf(stderr, "zerg: cannot write %s: %s (further errors not shown)\n",
            what, zerg_strerror(rc));
}

/* One write(2) for the whole line; a retry only after EINTR, which means
 * nothing was written. */
static void write_line(struct zerg_log *lg, int fd, const char *line,
                       size_t len, const char *what)
{
    ssize_t n;
    do
        n = write(fd, line, len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        report_failure(lg, what, -errno);
    else if ((size_t)n != len)
        report_failure(lg, what, -EIO);
}

static void emit(struct zerg_log *lg, const struct zerg_log_rec *rec,
                 zerg_json *data)
{
    size_t tlen = 0, jlen = 0;
    char *text = text_line(rec, &tlen);
    char *json = jsonl_line(rec, lg->feature, data, &jlen); /* takes data */
    if (text)
        write_line(lg, lg->fd_text, text, tlen, "monitor.log");
    else
        report_failure(lg, "monitor.log", -ENOMEM);
    if (json)
        write_line(lg, lg->fd_jsonl, json, jlen, "monitor.jsonl");
    else
        report_failure(lg, "monitor.jsonl", -ENOMEM);
    free(text);
    free(json);
}

void zerg_log_event(struct zerg_log *lg, int worker, enum zerg_log_level level,
                    const char *event, const char *task, zerg_json *data,
                    const char *fmt, ...)
{
    if (!lg || level < lg->min_level) {
        zerg_json_free(data);
        return;
    }
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);

    struct zerg_log_rec rec = {
        .wall_ns = zerg_clock_wall(&lg->clock),
        .worker = worker < 0 ? ZERG_LOG_ORCH : worker,
        .level = level,
        .event = event ? event : "message",
        .task = task,
        .msg = msg ? msg : fmt,
        .data = data,
    };
    if (lg->observer)
        lg->observer(lg->observer_ud, &rec);
    emit(lg, &rec, data);
    free(msg);
}
