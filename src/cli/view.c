/* view.c - the live progress of `zerg rush` (see view.h).
 *
 * The block (a status line, then one line per worker slot) is written in
 * one go with the cursor left at the end of its last line.  A redraw goes
 * back to the block's first line (up drawn-1 lines), rewrites every line
 * after clearing it and ends with "clear to the end of the screen", which
 * also removes the lines a smaller pool no longer needs.  An event line is
 * printed where the block was and the block drawn again under it, so
 * nothing is ever left behind on the screen.  No line is wider than the
 * terminal minus one column: a line that wraps would move the block's top
 * out of reach of the cursor-up count. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/eta.h"
#include "cli/view.h"
#include "zerg/clock.h"
#include "zerg/graph.h"
#include "zerg/log.h"
#include "zerg/orchestrator.h"
#include "zerg/state.h"
#include "zerg/task_fsm.h"

#define LINE_BYTES 512
#define MAX_SLOTS 256
#define MAX_LINES 512
/* A frame that comes sooner than this after the last redraw is skipped,
 * unless an event changed something (then DIRTY_GAP_NS is enough). */
#define REDRAW_GAP_NS (140 * ZERG_NS_PER_MS)
#define DIRTY_GAP_NS (40 * ZERG_NS_PER_MS)
/* How long a worker line says what just happened to it. */
#define NOTE_NS (2 * ZERG_NS_PER_S)
/* From this width on the status line spells its words out. */
#define WIDE_COLS 100

enum note { NOTE_NONE, NOTE_CRASH, NOTE_RESPAWN };

struct zerg_view {
    const struct zerg_graph *g;
    const struct zerg_state *s;
    struct zerg_log *log;
    int tty, color;
    int cols, rows;
    int drawn;                 /* lines of the block on screen now */
    int over;                  /* the rush ended: no block any more */
    int dirty;                 /* an event arrived since the last draw */
    const struct zerg_orch *o; /* from the last frame */
    int have_start;
    int64_t start_ns, now_ns, last_draw_ns; /* monotonic */
    size_t finished_at_start; /* for the rate: only this run's work */
    int len[MAX_LINES];       /* columns of each line drawn */
    enum note note[MAX_SLOTS];
    int64_t note_until_ns[MAX_SLOTS];
    struct sigaction old_winch;
    int winch_installed;
};

/* Set by the SIGWINCH handler, read by the next draw. */
static volatile sig_atomic_t winch_seen;

static void on_winch(int sig)
{
    (void)sig;
    winch_seen = 1;
}

/* ---- text --------------------------------------------------------- */

static void term_size(struct zerg_view *v)
{
    struct winsize ws;
    v->cols = 80;
    v->rows = 24;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
        if (ws.ws_col > 0)
            v->cols = ws.ws_col;
        if (ws.ws_row > 0)
            v->rows = ws.ws_row;
    }
}

/* After SIGWINCH: the new size, read outside the handler. */
static void refresh_size(struct zerg_view *v)
{
    if (winch_seen) {
        winch_seen = 0;
        term_size(v);
    }
}

/* Cuts s to at most max code points (one column each for what we draw)
 * and replaces control bytes, which would move the cursor.  Returns the
 * code points kept. */
static int fit(char *s, int max)
{
    int n = 0;
    for (char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c & 0xC0) == 0x80)
            continue;
        if (n++ == max) {
            *p = '\0';
            return max;
        }
        if (c < 0x20 || c == 0x7f)
            *p = '?';
    }
    return n;
}

/* Appends to the string in buf (never overflows, truncates). */
static void add(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;
    if (len + 1 >= size)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* m:ss, or h:mm:ss from an hour on. */
static void fmt_dur(char *buf, size_t size, int64_t ns)
{
    long long s = ns > 0 ? (long long)(ns / ZERG_NS_PER_S) : 0;
    if (s >= 3600)
        snprintf(buf, size, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60,
                 s % 60);
    else
        snprintf(buf, size, "%lld:%02lld", s / 60, s % 60);
}

/* ---- the numbers -------------------------------------------------- */

static size_t finished(const size_t c[ZERG_TASK_NSTATUS])
{
    return c[ZERG_TASK_COMPLETE] + c[ZERG_TASK_FAILED] + c[ZERG_TASK_BLOCKED];
}

/* Slots that can still take work (for the ETA). */
static int live_workers(const struct zerg_orch *o)
{
    struct zerg_orch_worker w;
    int n = 0;
    for (int i = 0; o && i < zerg_orch_nworkers(o); i++)
        if (zerg_orch_worker(o, i, &w) == 0 && strcmp(w.state, "retired") &&
            strcmp(w.state, "stopped"))
            n++;
    return n;
}

/* What the status line shows.  The counts come from zerg_task_count over
 * the same state `zerg status` reads, so the two always agree. */
struct figures {
    size_t c[ZERG_TASK_NSTATUS];
    size_t running;
    long long retries, reassigned; /* charged retries; crash requeues */
    int level;
    double rate; /* tasks finished per minute in this run */
    char el[16], eta[16], bar[11];
};

static void figures(const struct zerg_view *v, struct figures *f)
{
    const struct zerg_metrics *m = &v->s->metrics;
    zerg_task_count(v->s->tasks, NULL, v->s->ntasks, f->c);
    size_t fin = finished(f->c);
    int64_t elapsed = v->now_ns - v->start_ns;
    int64_t left = zerg_eta_ns(v->g, v->s, live_workers(v->o),
                               zerg_clock_wall(&zerg_clock_system));
    fmt_dur(f->el, sizeof f->el, elapsed);
    if (left < 0)
        snprintf(f->eta, sizeof f->eta, "?");
    else
        fmt_dur(f->eta, sizeof f->eta, left);
    size_t fill = v->s->ntasks ? fin * 10 / v->s->ntasks : 10;
    for (size_t i = 0; i < 10; i++)
        f->bar[i] = i < fill ? '#' : '.';
    f->bar[10] = '\0';
    double minutes = (double)elapsed / (60.0 * ZERG_NS_PER_S);
    size_t fresh = fin > v->finished_at_start ? fin - v->finished_at_start : 0;
    f->rate = minutes > 0 ? (double)fresh / minutes : 0.0;
    f->retries = (long long)m->task_retries;
    f->reassigned = (long long)m->task_reassignments;
    f->level = v->s->current_level > v->g->nlevels ? v->g->nlevels
                                                   : v->s->current_level;
    f->running = f->c[ZERG_TASK_CLAIMED] + f->c[ZERG_TASK_IN_PROGRESS];
}

/* Adds piece to buf only if the line then still fits max columns: the
 * narrow line drops what matters least instead of being cut. */
static void add_if_fits(char *buf, size_t size, int max, const char *piece)
{
    if ((int)(strlen(buf) + strlen(piece)) <= max)
        add(buf, size, "%s", piece);
}

/* done/total, running, failed, retries, level, elapsed, ETA, rate, and
 * when wide a bar; narrow, short words, the level and the times first,
 * then retries and rate only where they fit (60 columns: never "L1/"). */
static void status_line(const struct zerg_view *v, char *buf, size_t size)
{
    struct figures f;
    figures(v, &f);
    int wide = v->cols >= WIDE_COLS;
    snprintf(buf, size,
             wide ? "%zu/%zu done  %zu running  %zu failed"
                  : "%zu/%zu done %zu run %zu fail",
             f.c[ZERG_TASK_COMPLETE], v->s->ntasks, f.running,
             f.c[ZERG_TASK_FAILED]);
    if (f.c[ZERG_TASK_BLOCKED])
        add(buf, size, wide ? "  %zu blocked" : " %zu blk",
            f.c[ZERG_TASK_BLOCKED]);
    if (f.c[ZERG_TASK_WAITING_RETRY])
        add(buf, size, wide ? "  %zu waiting" : " %zu wait",
            f.c[ZERG_TASK_WAITING_RETRY]);
    if (f.c[ZERG_TASK_AWAITING_REVIEW])
        add(buf, size, wide ? "  %zu to review" : " %zu rev",
            f.c[ZERG_TASK_AWAITING_REVIEW]);
    if (!wide) {
        char piece[64];
        add(buf, size, " L%d/%d | %s ETA %s", f.level, v->g->nlevels, f.el,
            f.eta);
        snprintf(piece, sizeof piece, " %lld retry", f.retries);
        if (f.retries)
            add_if_fits(buf, size, v->cols - 1, piece);
        snprintf(piece, sizeof piece, " %lld moved", f.reassigned);
        if (f.reassigned)
            add_if_fits(buf, size, v->cols - 1, piece);
        snprintf(piece, sizeof piece, " %.1f/min", f.rate);
        add_if_fits(buf, size, v->cols - 1, piece);
        return;
    }
    add(buf, size, "  %lld retries", f.retries);
    if (f.reassigned)
        add(buf, size, "  %lld reassigned", f.reassigned);
    add(buf, size, "  level %d/%d  elapsed %s  ETA %s", f.level, v->g->nlevels,
        f.el, f.eta);
    add(buf, size, "  %.1f/min  [%s]", f.rate, f.bar);
}

/* "W1 busy      T-L1-002 #1  execute  40%  0:03". */
static void worker_line(const struct zerg_view *v,
                        const struct zerg_orch_worker *w, char *buf,
                        size_t size)
{
    snprintf(buf, size, "W%-2d ", w->slot);
    enum note n = w->slot < MAX_SLOTS ? v->note[w->slot] : NOTE_NONE;
    if (n != NOTE_NONE && v->now_ns < v->note_until_ns[w->slot]) {
        add(buf, size, "%s (respawns %d)",
            n == NOTE_CRASH ? "crashed, respawning" : "respawned", w->respawns);
        return;
    }
    add(buf, size, "%-9s", w->state);
    if (w->task) {
        char el[16];
        fmt_dur(el, sizeof el, v->now_ns - w->task_since_mono_ns);
        add(buf, size, " %s #%d", w->task, w->attempt);
        if (w->activity[0] || w->tool_calls) {
            /* An agent: what it does now, not "command 10%". */
            add(buf, size, "  %s  turn %lld",
                w->activity[0] ? w->activity : "thinking",
                (long long)w->tool_calls + 1);
            if (w->cost_usd > 0)
                add(buf, size, "  $%.2f", w->cost_usd);
        } else {
            if (w->step[0])
                add(buf, size, "  %s", w->step);
            if (w->progress_pct >= 0)
                add(buf, size, "  %d%%", w->progress_pct);
        }
        add(buf, size, "  %s", el);
    } else if (!strcmp(w->state, "ready")) {
        add(buf, size, " idle");
    }
    if (w->respawns)
        add(buf, size, "  respawns %d", w->respawns);
}

/* "Waiting for review: T-1, T-2 (zerg review; zerg approve TASK)", or
 * 0 when nothing waits (rush.review). */
static int review_line(const struct zerg_view *v, char *buf, size_t size)
{
    size_t n = 0;
    snprintf(buf, size, "Waiting for review:");
    for (size_t t = 0; t < v->s->ntasks; t++) {
        if (v->s->tasks[t].status != ZERG_TASK_AWAITING_REVIEW)
            continue;
        if (n++ < 4)
            add(buf, size, "%s %s", n > 1 ? "," : "", v->g->tasks[t].id);
    }
    if (n > 4)
        add(buf, size, " +%zu more", n - 4);
    add(buf, size, "  (zerg review; zerg approve TASK; zerg redo TASK)");
    return n > 0;
}

/* ---- drawing ------------------------------------------------------ */

/* Cuts line to the width, adds colour, appends it to out; remembers its
 * width when it is line i of the block (i >= 0). */
static void put_line(struct zerg_view *v, FILE *out, char *line,
                     const char *color, int i)
{
    int n = fit(line, v->cols > 1 ? v->cols - 1 : 1);
    if (i >= 0 && i < MAX_LINES)
        v->len[i] = n;
    if (v->color && color[0])
        fprintf(out, "%s%s\033[0m", color, line);
    else
        fputs(line, out);
}

/* Moves back to the block's first line; out then writes over it.  After
 * the terminal got narrower, a terminal that reflows (most do) has wrapped
 * the lines drawn for the old width: count the rows they take now. */
static void to_block_top(const struct zerg_view *v, FILE *out)
{
    int up = -1;
    for (int i = 0; i < v->drawn; i++) {
        int n = i < MAX_LINES ? v->len[i] : 0;
        up += n > v->cols ? (n + v->cols - 1) / v->cols : 1;
    }
    fputc('\r', out);
    if (up > 0)
        fprintf(out, "\033[%dA", up);
}

/* Rewrites the block in place.  Taller than the screen it cannot be
 * reached again with the cursor, so the slots that do not fit are one
 * "+N more" line. */
static void block(struct zerg_view *v, FILE *out)
{
    char line[LINE_BYTES];
    struct zerg_orch_worker w;
    int n = v->o ? zerg_orch_nworkers(v->o) : 0;
    int room = v->rows > 2 ? v->rows - 2 : 1, shown = 0;
    if (room > MAX_LINES - 1)
        room = MAX_LINES - 1;

    status_line(v, line, sizeof line);
    fputs("\033[2K", out);
    put_line(v, out, line, "\033[1m", 0);
    if (room > 1 && review_line(v, line, sizeof line)) {
        fputs("\n\r\033[2K", out);
        put_line(v, out, line, "\033[33m", 1 + shown++);
    }
    for (int i = 0; i < n; i++) {
        if (zerg_orch_worker(v->o, i, &w) < 0)
            continue;
        fputs("\n\r\033[2K", out);
        if (shown + 1 == room && i + 1 < n) {
            snprintf(line, sizeof line, "+%d more workers", n - i);
            put_line(v, out, line, "\033[2m", shown + 1);
            shown++;
            break;
        }
        worker_line(v, &w, line, sizeof line);
        int crashed = i < MAX_SLOTS && v->note[i] == NOTE_CRASH &&
                      v->now_ns < v->note_until_ns[i];
        put_line(v, out, line,
                 crashed  ? "\033[31m"
                 : w.task ? ""
                          : "\033[2m",
                 shown + 1);
        shown++;
    }
    fputs("\033[J", out); /* lines a larger pool left below */
    v->drawn = 1 + shown;
}

/* Writes what emit puts in a buffer in one piece: a terminal that sees
 * the block half cleared flickers. */
static void paint(struct zerg_view *v, const char *event, const char *color)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        return;
    refresh_size(v);
    to_block_top(v, out);
    if (event) {
        char line[LINE_BYTES];
        snprintf(line, sizeof line, "%s", event);
        fputs("\033[2K", out);
        put_line(v, out, line, color, -1);
        fputs("\033[K\n", out);
        v->drawn = 0;
    }
    if (v->have_start && !v->over)
        block(v, out);
    else
        fputs("\033[J", out);
    fclose(out);
    fwrite(buf, 1, len, stdout);
    fflush(stdout);
    free(buf);
}

/* Removes the block; the cursor ends at column 0 of its first line. */
static void erase(struct zerg_view *v)
{
    if (!v->drawn)
        return;
    refresh_size(v);
    to_block_top(v, stdout);
    fputs("\033[J", stdout);
    fflush(stdout);
    v->drawn = 0;
}

void zerg_view_frame(void *ctx, const struct zerg_orch *o, int64_t now_mono_ns)
{
    struct zerg_view *v = ctx;
    if (!v || !v->tty || v->over)
        return;
    v->o = o;
    v->now_ns = now_mono_ns;
    if (!v->have_start) {
        size_t c[ZERG_TASK_NSTATUS];
        zerg_task_count(v->s->tasks, NULL, v->s->ntasks, c);
        v->finished_at_start = finished(c);
        v->start_ns = now_mono_ns;
        v->have_start = 1;
    }
    int64_t gap = now_mono_ns - v->last_draw_ns;
    if (v->drawn && !winch_seen && gap < REDRAW_GAP_NS &&
        !(v->dirty && gap >= DIRTY_GAP_NS))
        return;
    paint(v, NULL, "");
    v->last_draw_ns = now_mono_ns;
    v->dirty = 0;
}

/* ---- events ------------------------------------------------------- */

static const char *level_color(enum zerg_log_level l)
{
    switch (l) {
    case ZERG_LOG_ERROR:
        return "\033[31m";
    case ZERG_LOG_WARN:
        return "\033[33m";
    case ZERG_LOG_DEBUG:
        return "\033[2m";
    default:
        return "";
    }
}

/* Events worth a line on a terminal: recovery, levels, the run itself. */
static int interesting(const struct zerg_log_rec *r)
{
    return r->level >= ZERG_LOG_WARN || !strncmp(r->event, "level_", 6) ||
           !strncmp(r->event, "rush_", 5) || !strcmp(r->event, "mode_selected");
}

/* A crash or respawn shows on the worker's line for a moment. */
static void take_note(struct zerg_view *v, const struct zerg_log_rec *r)
{
    enum note n = !strcmp(r->event, "worker_crash")     ? NOTE_CRASH
                  : !strcmp(r->event, "worker_respawn") ? NOTE_RESPAWN
                                                        : NOTE_NONE;
    if (n == NOTE_NONE || r->worker < 0 || r->worker >= MAX_SLOTS)
        return;
    v->note[r->worker] = n;
    v->note_until_ns[r->worker] = v->now_ns + NOTE_NS;
}

/* The end of the rush: the block goes, the summary stays, whole. */
static void print_end(struct zerg_view *v, const struct zerg_log_rec *r,
                      const char *ts, const char *who)
{
    erase(v);
    v->over = 1;
    printf("%s%s [%s] %s%s\n", v->color ? level_color(r->level) : "", ts, who,
           r->msg, v->color ? "\033[0m" : "");
    fflush(stdout);
}

static void observe(void *ud, const struct zerg_log_rec *r)
{
    struct zerg_view *v = ud;
    char ts[ZERG_TS_MAX], who[16], line[LINE_BYTES];

    if (r->level < ZERG_LOG_INFO)
        return;
    zerg_clock_iso8601(r->wall_ns, ts);
    if (r->worker == ZERG_LOG_ORCH)
        snprintf(who, sizeof who, "ORCH");
    else
        snprintf(who, sizeof who, "W%d", r->worker);
    if (!v->tty) {
        printf("%s [%s] [%s] %s\n", ts, who, zerg_log_level_name(r->level),
               r->msg);
        fflush(stdout);
        return;
    }
    if (!strcmp(r->event, "rush_complete") ||
        !strcmp(r->event, "rush_failed")) {
        print_end(v, r, ts + 11, who);
        return;
    }
    take_note(v, r);
    v->dirty = 1;
    if (!interesting(r) || v->over)
        return;
    snprintf(line, sizeof line, "%s [%s] %s", ts + 11, who, r->msg);
    paint(v, line, level_color(r->level));
    v->last_draw_ns = v->now_ns;
}

/* ---- life cycle --------------------------------------------------- */

struct zerg_view *zerg_view_new(const struct zerg_cli *cli,
                                const struct zerg_graph *g,
                                const struct zerg_state *s,
                                struct zerg_log *log, int live)
{
    struct zerg_view *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->g = g;
    v->s = s;
    v->log = log;
    v->tty = live && isatty(STDOUT_FILENO);
    v->color = cli->color;
    if (v->tty) {
        struct sigaction sa = {.sa_handler = on_winch, .sa_flags = SA_RESTART};
        sigemptyset(&sa.sa_mask);
        winch_seen = 0;
        v->winch_installed = sigaction(SIGWINCH, &sa, &v->old_winch) == 0;
        term_size(v);
    }
    zerg_log_set_observer(log, observe, v);
    return v;
}

void zerg_view_free(struct zerg_view *v)
{
    if (!v)
        return;
    if (v->tty)
        erase(v);
    if (v->winch_installed)
        sigaction(SIGWINCH, &v->old_winch, NULL);
    zerg_log_set_observer(v->log, NULL, NULL);
    free(v);
}
