/* worker_stream.h - an agent's event stream read while its stage runs
 * (worker_stream.c, DESIGN §20). */
#ifndef ZERG_WORKER_STREAM_H
#define ZERG_WORKER_STREAM_H

#include <stdint.h>
#include <sys/types.h>

#include "zerg/agent.h"

/* What the stage's output has said so far.  Zeroed = off. */
struct wk_stream {
    int on;
    int fd;     /* a read-only open of the attempt's log */
    off_t off;  /* read up to here */
    char *line; /* a line not ended yet */
    size_t len, cap;
    int skipping; /* in a line longer than ZERG_AGENT_LINE_MAX */
    struct zerg_agent_summary sum;
    int64_t terminal_ns; /* when the terminal event was read; 0 = not yet */
};

/* Starts reading the log open on log_fd for writing, from offset from
 * (the stage's first byte), as the stream of cli.  0, or -errno (the stream
 * stays off: output is then read after the stage, as before). */
int wk_stream_open(struct wk_stream *s, enum zerg_agent_cli cli, int log_fd,
                   off_t from);
/* Reads what the stage wrote since the last call; returns how many
 * events of the agent's stream it held (stderr and plain lines are not
 * events), and sets terminal_ns (to now) at the terminal event. */
int wk_stream_read(struct wk_stream *s, int64_t now);
/* After the stage: reads what is left, takes a last line that has no
 * newline, and stops reading (the summary stays until wk_stream_reset). */
void wk_stream_finish(struct wk_stream *s, int64_t now);
/* Stops reading (the summary stays until wk_stream_reset). */
void wk_stream_close(struct wk_stream *s);
/* Frees everything, the summary too; back to off. */
void wk_stream_reset(struct wk_stream *s);

#endif
