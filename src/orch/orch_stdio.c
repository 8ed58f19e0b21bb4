/* orch_stdio.c - the workers' event lines on stdout (DESIGN §15).
 *
 * Where the launcher relays a worker's stdout (zerg_proc.events_fd:
 * subprocess through a pipe, slurm through srun --unbuffered into one),
 * the worker writes each heartbeat and each result there as one JSON line,
 * after its file (zerg/protocol.h).  This file reads those pipes in the
 * loop's poll, cuts them into lines of at most ZERG_EVENT_LINE_MAX bytes
 * (a longer one is dropped and logged), decodes them, and hands each to
 * the intake the files go through (orch_intake.c): a heartbeat line is a
 * heartbeat of its slot, a result line is applied as its file would be,
 * fenced by the same (epoch, attempt) check.
 *
 * Two paths, one journal: the files of §12 stay the durable record.  A
 * result applied from its line is deleted from disk only after the
 * checkpoint, like any applied result; the inotify event of its file,
 * which follows, is skipped unread, and a scan that reads it finds "the
 * same result seen twice".  Either path may come first; with the line, a
 * worker on another node is seen at once, without inotify.
 *
 * Each stream belongs to one worker incarnation (slot, epoch) and is read
 * to its end (EOF: the worker, and srun, are gone), whatever the slot
 * does meanwhile.  A line that is not an event at all (a launch_prefix
 * wrapper's output, say) is appended to the worker log, where it would
 * have gone without the pipe. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "orch_internal.h"
#include "zerg/fsio.h"

#define READ_CHUNK 65536
/* Reads per stream per loop iteration (1 MiB): a chatty worker cannot
 * starve the others, what is left waits for the next poll. */
#define READS_PER_DRAIN 16
/* How much of a bad line the log event quotes. */
#define QUOTE_BYTES 120

/* ---- lines ------------------------------------------------------------ */

static int lines_grow(struct orch_lines *l, size_t need)
{
    if (need <= l->cap)
        return 0;
    size_t cap = l->cap ? l->cap : 512;
    while (cap < need)
        cap *= 2;
    char *b = realloc(l->buf, cap);
    if (!b)
        return -ENOMEM;
    l->buf = b;
    l->cap = cap;
    return 0;
}

/* The piece of a line up to (not including) its '\n', or the end of the
 * data when nl is 0. */
static int lines_piece(struct orch_lines *l, const char *data, size_t take,
                       int nl, const struct orch_lines_cb *cb)
{
    size_t max = l->max ? l->max : ZERG_EVENT_LINE_MAX;
    if (!l->skipping && l->len + take > max) {
        l->skipping = 1; /* said once, at once: its end may never come */
        cb->too_long(cb->ctx, l->len + take);
        l->len = 0;
    }
    if (l->skipping) {
        l->skipping = !nl;
        return 0;
    }
    if (nl && l->len == 0) {
        cb->line(cb->ctx, data, take); /* whole in this read: no copy */
        return 0;
    }
    if (lines_grow(l, l->len + take) < 0) {
        l->len = 0;
        l->skipping = !nl;
        return -ENOMEM;
    }
    memcpy(l->buf + l->len, data, take);
    l->len += take;
    if (nl) {
        size_t len = l->len;
        l->len = 0;
        cb->line(cb->ctx, l->buf, len);
    }
    return 0;
}

int orch_lines_feed(struct orch_lines *l, const char *data, size_t n,
                    const struct orch_lines_cb *cb)
{
    int rc = 0;
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (lines_piece(l, data, take, nl != NULL, cb) < 0)
            rc = -ENOMEM;
        if (!nl)
            break;
        data = nl + 1;
        n -= take + 1;
    }
    return rc;
}

void orch_lines_close(struct orch_lines *l)
{
    free(l->buf);
    *l = (struct orch_lines){0};
}

/* ---- one line --------------------------------------------------------- */

/* Output that is not an event: into the worker log, as without the pipe. */
static void to_worker_log(struct zerg_orch *o, int slot, const char *line,
                          size_t len)
{
    char path[PATH_MAX];
    if (!o->o.project || !o->o.feature ||
        zerg_worker_log_path(path, sizeof path, o->o.project, o->o.feature,
                             slot, NULL) < 0)
        return;
    int fd = zerg_fsio_open_append(path, NULL);
    if (fd < 0)
        return;
    struct iovec iov[2] = {{(void *)line, len}, {"\n", 1}};
    if (writev(fd, iov, 2) < 0)
        (void)0; /* the log is best effort, like the worker's own stderr */
    close(fd);
}

static void invalid(struct zerg_orch *o, int slot, uint64_t epoch,
                    const char *why, const char *line, size_t len)
{
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "epoch", (double)epoch);
    zerg_json_set_str(data, "why", why);
    zerg_json_set_num(data, "bytes", (double)len);
    int quote = len > QUOTE_BYTES ? QUOTE_BYTES : (int)len;
    zerg_log_event(o->o.log, slot, ZERG_LOG_WARN, "worker_event_invalid", NULL,
                   data, "Worker %d: dropped a stdout event line (%s): %.*s%s",
                   slot, why, line ? quote : 0, line ? line : "",
                   line && len > QUOTE_BYTES ? "..." : "");
}

void orch_stdio_line(struct zerg_orch *o, int slot, uint64_t epoch,
                     const char *line, size_t len, int64_t now)
{
    struct zerg_event ev;
    if (len == 0)
        return;
    int rc = zerg_proto_event_parse(line, len, &ev);
    if (rc == 1) {
        to_worker_log(o, slot, line, len);
        return;
    }
    const char *why = rc < 0 ? "not a readable event" : NULL;
    int from =
        ev.kind == ZERG_EVENT_HEARTBEAT ? ev.hb.worker_id : ev.result.worker_id;
    if (!why && from != slot)
        why = "it names another worker"; /* a stream speaks for its slot */
    if (why) {
        invalid(o, slot, epoch, why, line, len);
        return;
    }
    /* The intake fences both: a heartbeat by the slot's live epoch, a
     * result by its task's (epoch, attempt). */
    if (ev.kind == ZERG_EVENT_HEARTBEAT) {
        orch_heartbeat_apply(o, slot, &ev.hb, now);
        /* This incarnation's heartbeats come by line: its heartbeat file
         * need not be read on every write (the periodic scan still
         * does, should a line be dropped). */
        if (slot >= 0 && slot < o->nslots && o->slots[slot].proc.epoch == epoch)
            o->slots[slot].hb_lines_epoch = epoch;
    } else
        orch_apply_result_event(o, &ev.result, now);
}

/* ---- streams ---------------------------------------------------------- */

struct stream {
    int slot;
    uint64_t epoch;
    int fd;
    short revents; /* from the last orch_stdio_poll */
    struct orch_lines lines;
};

struct orch_stdio {
    struct stream *v;
    size_t n, cap;
    struct pollfd *pfd; /* the caller's head, then one per stream */
    size_t pfd_cap;
    char chunk[READ_CHUNK];
};

struct orch_stdio *orch_stdio_new(void)
{
    return calloc(1, sizeof(struct orch_stdio));
}

static void stream_close(struct orch_stdio *io, size_t i)
{
    close(io->v[i].fd);
    orch_lines_close(&io->v[i].lines);
    io->v[i] = io->v[--io->n];
}

void orch_stdio_free(struct orch_stdio *io, struct zerg_orch *o)
{
    if (io) {
        while (io->n)
            stream_close(io, 0);
        free(io->v);
        free(io->pfd);
        free(io);
    }
    for (int i = 0; o && i < o->nslots; i++)
        if (o->slots[i].proc.events_fd > 0) {
            close(o->slots[i].proc.events_fd);
            o->slots[i].proc.events_fd = 0;
        }
}

static int streams_grow(struct orch_stdio *io)
{
    if (io->n < io->cap)
        return 0;
    size_t cap = io->cap ? io->cap * 2 : 8;
    struct stream *v = realloc(io->v, cap * sizeof *v);
    if (!v)
        return -ENOMEM;
    io->v = v;
    io->cap = cap;
    return 0;
}

void orch_stdio_adopt(struct orch_stdio *io, struct zerg_orch *o)
{
    for (int i = 0; i < o->nslots; i++) {
        struct zerg_proc *p = &o->slots[i].proc;
        int fd = p->events_fd;
        if (fd <= 0)
            continue;
        p->events_fd = 0;
        /* Without memory for it the pipe is closed: the worker's next
         * line fails (EPIPE) and it keeps to the files. */
        if (!io || streams_grow(io) < 0) {
            close(fd);
            continue;
        }
        io->v[io->n++] = (struct stream){
            .slot = i,
            .epoch = p->epoch,
            .fd = fd,
            .lines = {.max = ZERG_EVENT_LINE_MAX},
        };
    }
}

int orch_stdio_poll(struct orch_stdio *io, struct pollfd *head, size_t nhead,
                    int timeout_ms)
{
    size_t total = nhead + (io ? io->n : 0);
    if (io && total > io->pfd_cap) {
        struct pollfd *p = realloc(io->pfd, total * sizeof *p);
        if (p) {
            io->pfd = p;
            io->pfd_cap = total;
        }
    }
    if (!io || !io->n || total > io->pfd_cap)
        return poll(head, nhead, timeout_ms);
    if (nhead)
        memcpy(io->pfd, head, nhead * sizeof *head);
    for (size_t i = 0; i < io->n; i++)
        io->pfd[nhead + i] =
            (struct pollfd){.fd = io->v[i].fd, .events = POLLIN};
    int rc = poll(io->pfd, total, timeout_ms);
    int e = errno;
    for (size_t i = 0; i < total; i++) {
        short rev = rc > 0 ? io->pfd[i].revents : 0;
        if (i < nhead)
            head[i].revents = rev;
        else
            io->v[i - nhead].revents = rev;
    }
    errno = e;
    return rc;
}

struct line_ctx {
    struct zerg_orch *o;
    const struct stream *st;
    int64_t now;
};

static void on_line(void *ctx, const char *line, size_t len)
{
    struct line_ctx *c = ctx;
    orch_stdio_line(c->o, c->st->slot, c->st->epoch, line, len, c->now);
}

static void on_too_long(void *ctx, size_t len)
{
    struct line_ctx *c = ctx;
    char why[64];
    snprintf(why, sizeof why, "longer than %d bytes", ZERG_EVENT_LINE_MAX);
    invalid(c->o, c->st->slot, c->st->epoch, why, NULL, len);
}

/* Reads what the stream holds: 1 while it stays open, 0 at its end.
 * A read that did not fill the chunk emptied the pipe: no second read
 * just to be told EAGAIN (poll says when there is more, or its end). */
static int stream_read(struct orch_stdio *io, struct stream *st,
                       struct zerg_orch *o, int64_t now)
{
    struct line_ctx c = {o, st, now};
    const struct orch_lines_cb cb = {on_line, on_too_long, &c};
    st->revents = 0;
    for (int k = 0; k < READS_PER_DRAIN; k++) {
        ssize_t n = read(st->fd, io->chunk, sizeof io->chunk);
        if (n > 0) {
            orch_lines_feed(&st->lines, io->chunk, (size_t)n, &cb);
            if ((size_t)n < sizeof io->chunk)
                return 1;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    return 1;
}

void orch_stdio_drain(struct orch_stdio *io, struct zerg_orch *o, int64_t now)
{
    for (size_t i = 0; io && i < io->n;) {
        struct stream *st = &io->v[i];
        if (!st->revents || stream_read(io, st, o, now)) {
            i++;
            continue;
        }
        /* The end: what is left without its '\n' is a line too (it may
         * still be someone's output); an event cut short is logged. */
        if (st->lines.len && !st->lines.skipping)
            orch_stdio_line(o, st->slot, st->epoch, st->lines.buf,
                            st->lines.len, now);
        if (st->slot >= 0 && st->slot < o->nslots &&
            o->slots[st->slot].hb_lines_epoch == st->epoch)
            o->slots[st->slot].hb_lines_epoch = 0; /* back to the files */
        stream_close(io, i); /* the last stream moves to i */
    }
}
