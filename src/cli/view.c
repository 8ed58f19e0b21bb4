/* view.c - the live progress of `zerg rush` (see view.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/view.h"
#include "zerg/graph.h"
#include "zerg/log.h"
#include "zerg/state.h"

struct zerg_view {
    const struct zerg_graph *g;
    const struct zerg_state *s;
    struct zerg_log *log;
    int tty, color;
    int bar_shown;
    int64_t last_draw_ns;
};

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

static void draw_bar(struct zerg_view *v)
{
    size_t c[7] = {0}, busy = 0;
    char bar[32];
    zerg_state_count(v->s, c);
    for (size_t i = 0; i < v->s->nworkers; i++)
        busy += v->s->workers[i].status == ZERG_WORKER_BUSY;
    size_t done =
        c[ZERG_TASK_COMPLETE] + c[ZERG_TASK_FAILED] + c[ZERG_TASK_BLOCKED];
    size_t fill = v->g->ntasks ? done * 20 / v->g->ntasks : 20;
    for (size_t i = 0; i < 20; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[20] = '\0';
    const struct zerg_metrics *m = &v->s->metrics;
    printf("\r\033[K[%s] level %d/%d  %zu/%zu done  %zu failed  %zu busy"
           "  recoveries %lld",
           bar,
           v->s->current_level > v->g->nlevels ? v->g->nlevels
                                               : v->s->current_level,
           v->g->nlevels, c[ZERG_TASK_COMPLETE], v->g->ntasks,
           c[ZERG_TASK_FAILED] + c[ZERG_TASK_BLOCKED], busy,
           (long long)(m->task_reassignments + m->worker_respawns +
                       m->spawn_retries));
    fflush(stdout);
    v->bar_shown = 1;
}

static void observe(void *ud, const struct zerg_log_rec *r)
{
    struct zerg_view *v = ud;
    char ts[ZERG_TS_MAX], who[16];

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
    if (interesting(r)) {
        if (v->bar_shown)
            printf("\r\033[K");
        printf("%s%s [%s] %s%s\n", v->color ? level_color(r->level) : "",
               ts + 11, who, r->msg, v->color ? "\033[0m" : "");
    }
    if (!strcmp(r->event, "rush_complete") || !strcmp(r->event, "rush_failed")) {
        if (v->bar_shown)
            printf("\r\033[K");
        v->bar_shown = 0;
        return;
    }
    /* A terminal is slow: redraw at most 20 times a second. */
    if (interesting(r) || r->wall_ns - v->last_draw_ns >= 50 * ZERG_NS_PER_MS) {
        draw_bar(v);
        v->last_draw_ns = r->wall_ns;
    }
}

struct zerg_view *zerg_view_new(const struct zerg_cli *cli,
                                const struct zerg_graph *g,
                                const struct zerg_state *s,
                                struct zerg_log *log)
{
    struct zerg_view *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->g = g;
    v->s = s;
    v->log = log;
    v->tty = isatty(STDOUT_FILENO);
    v->color = cli->color;
    zerg_log_set_observer(log, observe, v);
    return v;
}

void zerg_view_free(struct zerg_view *v)
{
    if (!v)
        return;
    if (v->tty && v->bar_shown)
        printf("\r\033[K");
    zerg_log_set_observer(v->log, NULL, NULL);
    free(v);
}
