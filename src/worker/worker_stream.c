/* worker_stream.c - the agent's events, read as the stage writes them
 * (DESIGN §20).
 *
 * The CLI's stdout and stderr both go to the attempt's log; the worker
 * reads what was appended at every tick, cuts it into lines and folds the
 * lines that are events of the agent's stream (src/agent/stream.c) into a
 * summary.  Three things follow from reading while the stage runs, not
 * after it:
 *   - progress is an event, not a byte: a CLI retrying with noise on
 *     stderr only is not making progress, and goes stale;
 *   - the terminal event (Claude Code's result) is seen when it comes, so
 *     a CLI that prints it and then does not exit is ended after
 *     executor.exit_grace_seconds with its result standing (worker_run.c);
 *   - the ledger is whole: every message's tokens are counted as they
 *     stream, so an attempt killed before its result keeps what it spent,
 *     and a result line of megabytes is read whole, not cut off by the
 *     tail read that served before. */
#include "worker_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK 65536

int wk_stream_open(struct wk_stream *s, enum zerg_agent_cli cli, int log_fd,
                   off_t from)
{
    char self[64];
    wk_stream_reset(s);
    snprintf(self, sizeof self, "/proc/self/fd/%d", log_fd);
    /* The inode the stage writes, whatever the path holds by now. */
    int fd = log_fd < 0 ? -1 : open(self, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    s->fd = fd;
    s->off = from;
    s->on = 1;
    zerg_agent_summary_init_cli(&s->sum, cli);
    return 0;
}

/* One complete line (without its newline): 1 when it was an event that
 * shows the agent working (the CLI's retries of a request do not). */
static int take_line(struct wk_stream *s, const char *line, size_t len,
                     int64_t now)
{
    int progress = 0;
    enum zerg_agent_event_type t =
        zerg_agent_summary_take(&s->sum, line, len, &progress);
    if (t == ZERG_AGENT_EV_RESULT && !s->terminal_ns)
        s->terminal_ns = now > 0 ? now : 1;
    return progress;
}

/* Appends to the partial line; past the limit the line is skipped to its
 * end (it is no event this layer reads). */
static void keep(struct wk_stream *s, const char *p, size_t n)
{
    if (s->skipping)
        return;
    if (s->len + n > ZERG_AGENT_LINE_MAX) {
        s->skipping = 1;
        s->len = 0;
        return;
    }
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n)
            cap *= 2;
        char *grown = realloc(s->line, cap);
        if (!grown) {
            s->skipping = 1;
            s->len = 0;
            return;
        }
        s->line = grown, s->cap = cap;
    }
    memcpy(s->line + s->len, p, n);
    s->len += n;
}

/* Cuts buf into lines; the last piece (no newline yet) is kept. */
static int cut(struct wk_stream *s, const char *buf, size_t n, int64_t now)
{
    int events = 0;
    while (n > 0) {
        const char *nl = memchr(buf, '\n', n);
        size_t piece = nl ? (size_t)(nl - buf) : n;
        if (!nl) {
            keep(s, buf, piece);
            break;
        }
        if (s->len || s->skipping) {
            keep(s, buf, piece);
            if (!s->skipping)
                events += take_line(s, s->line, s->len, now);
            s->len = 0, s->skipping = 0;
        } else {
            events += take_line(s, buf, piece, now);
        }
        buf += piece + 1, n -= piece + 1;
    }
    return events;
}

int wk_stream_read(struct wk_stream *s, int64_t now)
{
    char buf[READ_CHUNK];
    int events = 0;
    while (s->on) {
        ssize_t r = pread(s->fd, buf, sizeof buf, s->off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        s->off += r;
        events += cut(s, buf, (size_t)r, now);
    }
    return events;
}

void wk_stream_finish(struct wk_stream *s, int64_t now)
{
    if (!s->on)
        return;
    wk_stream_read(s, now);
    if (s->len && !s->skipping)
        take_line(s, s->line, s->len, now);
    wk_stream_close(s);
}

void wk_stream_close(struct wk_stream *s)
{
    if (s->on && s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    s->on = 0;
    free(s->line);
    s->line = NULL;
    s->len = s->cap = 0;
    s->skipping = 0;
}

void wk_stream_reset(struct wk_stream *s)
{
    wk_stream_close(s);
    zerg_agent_summary_close(&s->sum);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}
