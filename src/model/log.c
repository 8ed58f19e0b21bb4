/* log.c - the monitor log, .zerg/monitor.log and .zerg/monitor.jsonl
 * (see zerg/log.h and DESIGN.md section 11).
 *
 * The orchestrator and its workers append to the same two files.  Each line
 * is built whole in memory and written with one write(2) on an O_APPEND
 * descriptor: the kernel appends it under the inode lock, so lines from
 * several processes interleave but never mix.
 *
 * Rotation renames NAME to NAME.1 (NAME.1 to NAME.2 ...).  A writer that
 * does not rotate compares the inode under the name with the one it has
 * open before each line and reopens when they differ, so a subprocess
 * worker follows a rotation done by the orchestrator at its next event.
 * A container cannot follow: its file is a bind mount of the inode, which
 * the rename does not move (the rush rotates only at its start in that
 * mode).
 *
 * The handle that rotates (the orchestrator's, in subprocess mode) is the
 * only one that renames the files while it runs: may_rotate refuses while
 * another rush runs, and a rush that starts meanwhile sees ours and
 * leaves the files alone.  So it need not stat the name before each of
 * its lines (two stats per event, thousands per second on a graph of
 * tiny tasks).  It counts the bytes instead, from one fstat at open plus
 * what it wrote, and looks at the name only when that count may reach
 * the size, after another 1/16 of the size written, or a second after
 * its last look: other writers' lines are counted then, and a file
 * replaced from outside zerg (logrotate, rm) is followed within that
 * second. */
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
#include <sys/stat.h>
#include <unistd.h>

/* A rotating handle looks at the name at least this often (wall clock):
 * how long a file replaced from outside zerg may take another's lines. */
#define LOG_LOOK_NS ZERG_NS_PER_S

/* One of the two files, with the inode it was opened as. */
struct log_file {
    const char *name; /* "monitor.log" */
    int fd;
    dev_t dev;
    ino_t ino;
    int64_t retry_at_bytes; /* a refused rotation is asked again past this */
    /* The size at the last look (stat or fstat) plus this handle's lines
     * since, a lower bound of the real size that a rotating handle goes
     * by between looks; -1 when unknown (look before the next line). */
    int64_t size;
    int64_t unlooked;       /* bytes written since that look */
    int64_t looked_wall_ns; /* when it was */
};

enum { LOG_TEXT, LOG_JSONL, LOG_NFILES };

struct zerg_log {
    struct log_file f[LOG_NFILES];
    char dir[PATH_MAX];
    struct zerg_log_rotation rot; /* max_bytes 0: never while running */
    struct zerg_clock clock;
    enum zerg_log_level min_level;
    zerg_log_observer observer;
    void *observer_ud;
    int write_failed;              /* reported on stderr once */
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

static int file_path(char *buf, size_t size, const char *dir, const char *name,
                     int k)
{
    if (k == 0)
        return zerg_fsio_path(buf, size, "%s/%s", dir, name);
    return zerg_fsio_path(buf, size, "%s/%s.%d", dir, name, k);
}

/* Opens f->name in dir and records its inode; the previous fd (if any) is
 * closed only once the new one is open.  0 or negative with err set. */
static int file_open(struct log_file *f, const char *dir, struct zerg_err *err)
{
    char path[PATH_MAX];
    struct stat st;
    int rc = file_path(path, sizeof path, dir, f->name, 0);
    if (rc < 0)
        return zerg_err_set(err, rc, "cannot open %s/%s: %s", dir, f->name,
                            zerg_strerror(rc));
    /* Never through a link (a task could point it out of the project) and
     * never a FIFO, whose open would wait for a reader. */
    int fd = zerg_fsio_open_append(path, err);
    if (fd < 0)
        return fd;
    f->size = -1;
    if (fstat(fd, &st) == 0) {
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->size = st.st_size;
    }
    if (f->fd >= 0)
        close(f->fd);
    f->fd = fd;
    f->retry_at_bytes = 0;
    f->unlooked = 0;
    return 0;
}

/* Someone rotated the file (the name now holds another inode): write to
 * the new one.  A missing name is the instant between rename and reopen:
 * the old file still takes this line.  Returns the size of the file the
 * line goes to as the stat saw it, or -1 when unknown, so the rotation
 * check after the write needs no second stat. */
static off_t file_follow(struct log_file *f, const char *dir)
{
    char path[PATH_MAX];
    struct stat st;
    if (file_path(path, sizeof path, dir, f->name, 0) < 0 ||
        stat(path, &st) != 0)
        return -1;
    if (st.st_dev == f->dev && st.st_ino == f->ino)
        return st.st_size;
    /* The new file is opened by name: the stat may be of a newer one. */
    return file_open(f, dir, NULL) == 0 && st.st_dev == f->dev &&
                   st.st_ino == f->ino
               ? st.st_size
               : -1;
}

/* NAME.keep-1 -> NAME.keep, ..., NAME -> NAME.1 (the oldest is replaced).
 * rename(2) moves a link itself, never what it points to. */
static int shift_files(const char *dir, const char *name, int keep)
{
    char from[PATH_MAX], to[PATH_MAX];
    for (int k = keep - 1; k >= 0; k--) {
        if (file_path(from, sizeof from, dir, name, k) < 0 ||
            file_path(to, sizeof to, dir, name, k + 1) < 0)
            return -ENAMETOOLONG;
        if (rename(from, to) < 0 && errno != ENOENT)
            return -errno;
    }
    return 0;
}

int zerg_log_rotate_files(const char *zerg_dir,
                          const struct zerg_log_rotation *rot,
                          struct zerg_err *err)
{
    static const char *const names[] = {"monitor.log", "monitor.jsonl"};
    char path[PATH_MAX];
    struct stat st;
    int n = 0;
    if (rot->max_bytes <= 0)
        return 0;
    for (size_t i = 0; i < LOG_NFILES; i++) {
        if (file_path(path, sizeof path, zerg_dir, names[i], 0) < 0 ||
            lstat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
            st.st_size < rot->max_bytes)
            continue;
        int rc = shift_files(zerg_dir, names[i], rot->keep);
        if (rc < 0)
            return zerg_err_set(err, rc, "cannot rotate %s: %s", path,
                                zerg_strerror(rc));
        n++;
    }
    return n;
}

/* After a line: past max_bytes, rotate and reopen, unless may_rotate
 * refuses (then ask again after another 1/16 of the size, not at every
 * line).  f->size: the file's size after the line (the last look plus
 * the lines since; lines other writers added meanwhile count at the next
 * look), or -1 to fstat the fd. */
static void file_maybe_rotate(struct zerg_log *lg, struct log_file *f)
{
    struct stat st;
    const struct zerg_log_rotation *r = &lg->rot;
    if (r->max_bytes <= 0)
        return;
    /* Unknown (the name was missing): this once from the fd, and looked
     * at again before the next line. */
    int64_t size = f->size;
    if (size < 0 && fstat(f->fd, &st) == 0)
        size = st.st_size;
    if (size < 0 || size < r->max_bytes || size < f->retry_at_bytes)
        return;
    if (r->may_rotate && !r->may_rotate(r->ud)) {
        f->retry_at_bytes = size + r->max_bytes / 16 + 1;
        return;
    }
    if (shift_files(lg->dir, f->name, r->keep) == 0)
        file_open(f, lg->dir, NULL);
}

/* 1 when the name is to be looked at before a line of len bytes: always
 * for a handle that does not rotate (another process may rotate at any
 * line); for the rotating one when its count may cross the size (or the
 * size a refused rotation waits for) with this line, after another 1/16
 * of the size, or LOG_LOOK_NS after the last look. */
static int must_look(const struct zerg_log *lg, const struct log_file *f,
                     size_t len, int64_t now_wall_ns)
{
    const struct zerg_log_rotation *r = &lg->rot;
    if (r->max_bytes <= 0 || f->size < 0)
        return 1;
    int64_t due =
        f->retry_at_bytes > r->max_bytes ? f->retry_at_bytes : r->max_bytes;
    return f->size + (int64_t)len >= due || f->unlooked >= r->max_bytes / 16 ||
           now_wall_ns - f->looked_wall_ns >= LOG_LOOK_NS ||
           now_wall_ns < f->looked_wall_ns;
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
    lg->f[LOG_TEXT] = (struct log_file){.name = "monitor.log", .fd = -1};
    lg->f[LOG_JSONL] = (struct log_file){.name = "monitor.jsonl", .fd = -1};
    lg->clock = clock ? *clock : zerg_clock_system;
    lg->min_level = debug_from_env() ? ZERG_LOG_DEBUG : ZERG_LOG_INFO;
    snprintf(lg->dir, sizeof lg->dir, "%s", zerg_dir);
    int rc = zerg_fsio_mkdirs(zerg_dir, 0755);
    if (rc < 0) {
        zerg_err_set(err, rc, "cannot create %s: %s", zerg_dir,
                     zerg_strerror(rc));
        goto fail;
    }
    if (file_open(&lg->f[LOG_TEXT], zerg_dir, err) < 0 ||
        file_open(&lg->f[LOG_JSONL], zerg_dir, err) < 0)
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
    for (size_t i = 0; i < LOG_NFILES; i++)
        if (lg->f[i].fd >= 0)
            close(lg->f[i].fd);
    free(lg);
}

void zerg_log_set_rotation(struct zerg_log *lg,
                           const struct zerg_log_rotation *rot)
{
    lg->rot = *rot;
    if (lg->rot.keep < 1)
        lg->rot.keep = 1;
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
static void write_line(struct zerg_log *lg, struct log_file *f,
                       const char *line, size_t len, int64_t now_wall_ns)
{
    ssize_t n;
    if (must_look(lg, f, len, now_wall_ns)) {
        f->size = file_follow(f, lg->dir);
        f->unlooked = 0;
        f->looked_wall_ns = now_wall_ns;
    }
    do
        n = write(f->fd, line, len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        report_failure(lg, f->name, -errno);
    else if ((size_t)n != len)
        report_failure(lg, f->name, -EIO);
    if (n > 0) {
        f->unlooked += n;
        if (f->size >= 0)
            f->size += n;
    } else {
        f->size = -1; /* nothing known of what happened to the file */
    }
    file_maybe_rotate(lg, f);
}

static void emit(struct zerg_log *lg, const struct zerg_log_rec *rec,
                 zerg_json *data)
{
    size_t tlen = 0, jlen = 0;
    char *text = text_line(rec, &tlen);
    char *json = jsonl_line(rec, lg->feature, data, &jlen); /* takes data */
    if (text)
        write_line(lg, &lg->f[LOG_TEXT], text, tlen, rec->wall_ns);
    else
        report_failure(lg, "monitor.log", -ENOMEM);
    if (json)
        write_line(lg, &lg->f[LOG_JSONL], json, jlen, rec->wall_ns);
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
