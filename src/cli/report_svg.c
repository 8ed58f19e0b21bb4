/* report_svg.c - draws the model of report_model.c as an inline SVG: one
 * lane per worker slot, a bar per attempt coloured by how it ended,
 * markers for crashes, stale kills, respawns, reassignments and merges,
 * the level boundaries as vertical lines, and a time axis.  Every bar and
 * marker carries an SVG <title>, the browser's hover text.
 *
 * Sizes are fixed per lane (24 px) and bars are at least 2 px wide, so
 * ten tasks and two thousand give the same readable rows; the plot grows
 * wider with the busiest lane (8 px per attempt, 1000 to 16000 px) and
 * scrolls sideways inside its box. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"

#define LEFT 56 /* lane labels */
#define RIGHT 24
#define TOP 40 /* level labels and the orchestrator's markers */
#define LANE_H 24
#define BAR_H 16
#define AXIS_H 34
#define MIN_BAR_W 2.0
#define PX_PER_ATTEMPT 8
#define MIN_PLOT_W 1000
#define MAX_PLOT_W 16000

static const struct {
    const char *name, *color;
} outcomes[RP_NOUTCOMES] = {
    [RP_COMPLETE] = {"complete", "#2ca02c"},
    [RP_FAILED] = {"failed", "#d62728"},
    [RP_RETRIED] = {"retried", "#ff9f1c"},
    [RP_CRASHED] = {"crashed/reassigned", "#9467bd"},
    [RP_TIMEOUT] = {"timed out", "#e377c2"},
    [RP_INTERRUPTED] = {"interrupted", "#8c8c8c"},
};

static const struct {
    const char *name, *color;
} marks[RP_M_NKINDS] = {
    [RP_M_CRASH] = {"worker crash", "#b00020"},
    [RP_M_STALE] = {"stale kill", "#111111"},
    [RP_M_RESPAWN] = {"respawn", "#1f77b4"},
    [RP_M_REASSIGN] = {"reassignment", "#6a3d9a"},
    [RP_M_MERGE] = {"merge", "#17becf"},
};

const char *rp_outcome_name(enum rp_outcome o)
{
    return o < RP_NOUTCOMES ? outcomes[o].name : "?";
}

const char *rp_mark_name(enum rp_mark_kind k)
{
    return k < RP_M_NKINDS ? marks[k].name : "?";
}

void rp_fmt_duration(char *buf, size_t size, double s)
{
    if (s < 0)
        snprintf(buf, size, "—");
    else if (s < 60)
        snprintf(buf, size, "%.2f s", s);
    else if (s < 3600)
        snprintf(buf, size, "%d min %02d s", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, size, "%d h %02d min", (int)(s / 3600),
                 (int)fmod(s / 60, 60));
}

/* The geometry shared by every element. */
struct geo {
    int64_t t0;
    double span_ns, plot_w;
    int lanes;
};

static double x_of(const struct geo *g, int64_t t)
{
    return LEFT + (double)(t - g->t0) / g->span_ns * g->plot_w;
}

static double lane_y(int lane)
{
    return lane < 0 ? TOP - 14 : TOP + lane * LANE_H + LANE_H / 2.0;
}

static void put_time(struct zerg_rbuf *b, const struct geo *g, int64_t t)
{
    char ts[ZERG_TS_MAX];
    zerg_rbuf_printf(b, "%s (+%.3f s)", zerg_clock_iso8601(t, ts),
                     (double)(t - g->t0) / 1e9);
}

static void bar(struct zerg_rbuf *b, const struct geo *g,
                const struct rp_attempt *a)
{
    double x = x_of(g, a->start_ns), w = x_of(g, a->end_ns) - x;
    char dur[32];
    rp_fmt_duration(dur, sizeof dur, (double)(a->end_ns - a->start_ns) / 1e9);
    zerg_rbuf_printf(b,
                     "<rect class=\"bar o%d\" x=\"%.1f\" y=\"%.1f\" "
                     "width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>",
                     (int)a->outcome, x, lane_y(a->lane) - BAR_H / 2.0,
                     w < MIN_BAR_W ? MIN_BAR_W : w, BAR_H,
                     outcomes[a->outcome].color);
    zerg_rbuf_esc(b, a->task);
    zerg_rbuf_printf(b, "\nattempt %d\nworker %d\nstart ", a->attempt, a->lane);
    put_time(b, g, a->start_ns);
    zerg_rbuf_printf(b, "\nduration %s\noutcome %s", dur,
                     outcomes[a->outcome].name);
    if (a->reason) {
        zerg_rbuf_puts(b, "\nreason ");
        zerg_rbuf_esc(b, a->reason);
    }
    zerg_rbuf_puts(b, "</title></rect>\n");
}

/* The marker's shape, centred on (x, y). */
static void mark_shape(struct zerg_rbuf *b, enum rp_mark_kind k, double x,
                       double y)
{
    const char *c = marks[k].color;
    switch (k) {
    case RP_M_CRASH:
        zerg_rbuf_printf(b,
                         "<path d=\"M%.1f %.1fl10 10m0 -10l-10 10\" "
                         "stroke=\"%s\" stroke-width=\"3\" fill=\"none\"/>",
                         x - 5, y - 5, c);
        break;
    case RP_M_STALE:
        zerg_rbuf_printf(b,
                         "<path d=\"M%.1f %.1fl6 6l-6 6l-6 -6z\" "
                         "fill=\"%s\"/>",
                         x, y - 6, c);
        break;
    case RP_M_RESPAWN:
        zerg_rbuf_printf(b,
                         "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
                         "fill=\"%s\" stroke=\"#fff\"/>",
                         x, y, c);
        break;
    case RP_M_REASSIGN:
        zerg_rbuf_printf(b, "<path d=\"M%.1f %.1fl6 10h-12z\" fill=\"%s\"/>", x,
                         y - 5, c);
        break;
    default:
        zerg_rbuf_printf(b,
                         "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" "
                         "height=\"9\" fill=\"%s\"/>",
                         x - 4.5, y - 4.5, c);
    }
}

static void marker(struct zerg_rbuf *b, const struct geo *g,
                   const struct rp_mark *mk)
{
    zerg_rbuf_printf(b, "<g class=\"marker m%d\">", (int)mk->kind);
    mark_shape(b, mk->kind, x_of(g, mk->t_ns), lane_y(mk->lane));
    zerg_rbuf_printf(b, "<title>%s", marks[mk->kind].name);
    if (mk->task) {
        zerg_rbuf_puts(b, "\ntask ");
        zerg_rbuf_esc(b, mk->task);
    }
    if (mk->lane >= 0)
        zerg_rbuf_printf(b, "\nworker %d", mk->lane);
    else
        zerg_rbuf_puts(b, "\norchestrator");
    zerg_rbuf_puts(b, "\nat ");
    put_time(b, g, mk->t_ns);
    if (mk->text) {
        zerg_rbuf_puts(b, "\n");
        zerg_rbuf_esc(b, mk->text);
    }
    zerg_rbuf_puts(b, "</title></g>\n");
}

static void lanes(struct zerg_rbuf *b, const struct geo *g)
{
    for (int l = 0; l < g->lanes; l++) {
        double y = TOP + l * LANE_H;
        zerg_rbuf_printf(b,
                         "<g class=\"lane\" data-worker=\"%d\"><rect "
                         "x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" "
                         "fill=\"%s\"/><text x=\"8\" y=\"%.0f\">W%d</text>"
                         "</g>\n",
                         l, LEFT, (int)y, g->plot_w, LANE_H,
                         l % 2 ? "#f4f4f4" : "#fbfbfb", y + LANE_H / 2.0 + 4,
                         l);
    }
}

static void level_lines(struct zerg_rbuf *b, const struct geo *g,
                        const struct rp_model *m)
{
    double y1 = TOP + g->lanes * LANE_H;
    for (size_t i = 0; i < m->nlv; i++) {
        const struct rp_level_line *lv = &m->lv[i];
        double x = x_of(g, lv->t_ns);
        zerg_rbuf_printf(b,
                         "<g class=\"level-line\"><line x1=\"%.1f\" "
                         "y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"%s\" "
                         "stroke-dasharray=\"%s\"/><text x=\"%.1f\" "
                         "y=\"%d\" class=\"lvl\">L%d%s</text><title>level "
                         "%d %s at ",
                         x, 4, x, y1, lv->start ? "#3366cc" : "#999",
                         lv->start ? "4 2" : "2 3", x + 2, lv->start ? 12 : 22,
                         lv->level, lv->start ? "" : " done", lv->level,
                         lv->start ? "started" : "complete");
        put_time(b, g, lv->t_ns);
        zerg_rbuf_puts(b, "</title></g>\n");
    }
}

/* Ticks every 1, 2 or 5 x 10^k seconds, about one per 100 px. */
static void axis(struct zerg_rbuf *b, const struct geo *g)
{
    double span_s = g->span_ns / 1e9, want = span_s / (g->plot_w / 100.0);
    double step = pow(10, floor(log10(want > 0 ? want : 1e-3)));
    if (step * 5 < want)
        step *= 10;
    else if (step * 2 < want)
        step *= 5;
    else if (step < want)
        step *= 2;
    double y = TOP + g->lanes * LANE_H;
    zerg_rbuf_printf(b,
                     "<g class=\"axis\"><line x1=\"%d\" y1=\"%.0f\" "
                     "x2=\"%.0f\" y2=\"%.0f\" stroke=\"#333\"/>",
                     LEFT, y, LEFT + g->plot_w, y);
    for (double s = 0; s <= span_s + step / 2 && step > 0; s += step) {
        double x = LEFT + s / span_s * g->plot_w;
        zerg_rbuf_printf(b,
                         "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" "
                         "y2=\"%.0f\" stroke=\"#333\"/><text x=\"%.1f\" "
                         "y=\"%.0f\" text-anchor=\"middle\">",
                         x, y, x, y + 5, x, y + 18);
        if (span_s < 120)
            zerg_rbuf_printf(b, "%gs", round(s * 1000) / 1000);
        else
            zerg_rbuf_printf(b, "%d:%02d", (int)(s / 60), (int)fmod(s, 60));
        zerg_rbuf_puts(b, "</text>");
    }
    zerg_rbuf_puts(b, "</g>\n");
}

static void legend(struct zerg_rbuf *b)
{
    zerg_rbuf_puts(b, "<div class=\"legend\">");
    for (int i = 0; i < RP_NOUTCOMES; i++)
        zerg_rbuf_printf(b, "<span><i style=\"background:%s\"></i>%s</span>",
                         outcomes[i].color, outcomes[i].name);
    for (int i = 0; i < RP_M_NKINDS; i++)
        zerg_rbuf_printf(b,
                         "<span><i class=\"mk\" style=\"background:%s\">"
                         "</i>%s</span>",
                         marks[i].color, marks[i].name);
    zerg_rbuf_puts(b, "</div>\n");
}

static double plot_width(const struct rp_model *m)
{
    size_t busiest = 0;
    size_t *n = calloc((size_t)m->nlanes + 1, sizeof *n);
    for (size_t i = 0; n && i < m->natt; i++)
        if (++n[m->att[i].lane] > busiest)
            busiest = n[m->att[i].lane];
    free(n);
    double w = (double)busiest * PX_PER_ATTEMPT;
    return w < MIN_PLOT_W ? MIN_PLOT_W : w > MAX_PLOT_W ? MAX_PLOT_W : w;
}

void rp_svg_timeline(struct zerg_rbuf *b, const struct rp_model *m)
{
    struct geo g = {.t0 = m->t0_ns,
                    .span_ns = (double)(m->t1_ns - m->t0_ns),
                    .plot_w = plot_width(m),
                    .lanes = m->nlanes};
    if (g.span_ns < 1e6)
        g.span_ns = 1e6; /* at least 1 ms, so x_of never divides by 0 */
    legend(b);
    int h = TOP + g.lanes * LANE_H + AXIS_H;
    zerg_rbuf_printf(b,
                     "<div class=\"tl\"><svg class=\"timeline\" width=\"%.0f\" "
                     "height=\"%d\" viewBox=\"0 0 %.0f %d\">\n",
                     LEFT + g.plot_w + RIGHT, h, LEFT + g.plot_w + RIGHT, h);
    lanes(b, &g);
    axis(b, &g);
    for (size_t i = 0; i < m->natt; i++)
        bar(b, &g, &m->att[i]);
    level_lines(b, &g, m);
    for (size_t i = 0; i < m->nmk; i++)
        marker(b, &g, &m->mk[i]);
    zerg_rbuf_puts(b, "</svg></div>\n");
}
