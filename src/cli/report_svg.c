/* report_svg.c - draws the model of report_model.c as an inline SVG: one
 * lane per worker slot, a bar per attempt styled by how it ended,
 * markers for crashes, stale kills, respawns, reassignments and merges,
 * the level boundaries as vertical lines, the time between a stopped rush
 * and its resume as a hatched band, and a time axis.  Every bar and
 * marker carries an SVG <title>, the browser's hover text.
 *
 * Sizes are fixed per lane (32 px: markers on top, the bar under them, so
 * a marker never hides a short attempt) and every attempt is drawn: at
 * least MIN_BAR_W wide and never under the lane's bar before it (a 50 ms
 * failure followed at once by its retry stays visible; the shift is at
 * most a few pixels, the hover text keeps the true times).  The plot grows
 * wider with the busiest lane (8 px per attempt, 1000 to 16000 px) and
 * scrolls sideways inside its box.  Labels (levels, resumes) go to the
 * first of LABEL_ROWS rows where they overlap no other; one that fits in
 * none keeps its line and hover text, not its text. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"

#define LEFT 56  /* lane labels */
#define RIGHT 64 /* room for the last label and tick */
#define LABEL_ROWS 3
#define LABEL_ROW_H 12
#define LABEL_CHAR_W 7.0 /* 11 px sans-serif, wide digits, rounded up */
#define LABEL_PAD 4.0
#define ORCH_Y (LABEL_ROWS * LABEL_ROW_H + 8) /* the orchestrator's marks */
#define TOP (ORCH_Y + 8)
#define LANE_H 32
#define MARK_DY 8 /* a lane's markers: centre below the lane's top */
#define BAR_DY 14 /* a lane's bar: top below the lane's top */
#define BAR_H 15
#define AXIS_H 34
#define MIN_BAR_W 4.0
#define BAR_GAP 1.0 /* drawn between two bars of a lane */
#define PX_PER_ATTEMPT 8
#define MIN_PLOT_W 1000
#define MAX_PLOT_W 16000

/* How each kind of attempt is drawn: one row per kind.  A pattern is
 * defined once in the SVG's <defs> (id "p-" and the class) and used by
 * the bars and the legend alike; kinds that differ by more than colour
 * (a retry against a crash against a failure) differ in shape too. */
enum rp_fill { FILL_SOLID, FILL_STRIPES, FILL_CROSS, FILL_OUTLINE };

static const struct {
    const char *name, *cls, *color;
    enum rp_fill fill;
} outcomes[RP_NOUTCOMES] = {
    [RP_COMPLETE] = {"complete", "complete", "#2ca02c", FILL_SOLID},
    [RP_FAILED] = {"failed", "failed", "#d62728", FILL_SOLID},
    [RP_RETRIED] = {"failed, retried", "retried", "#ff9f1c", FILL_STRIPES},
    [RP_CRASHED] = {"crashed, reassigned", "crashed", "#9467bd", FILL_CROSS},
    [RP_TIMEOUT] = {"timed out", "timeout", "#e377c2", FILL_STRIPES},
    [RP_INTERRUPTED] = {"interrupted", "interrupted", "#8c8c8c", FILL_SOLID},
    [RP_REVIEW] = {"complete, awaiting review", "review", "#2ca02c",
                   FILL_OUTLINE},
    [RP_AWAITING] = {"passed, waiting for review", "awaiting", "#17becf",
                     FILL_OUTLINE},
    [RP_REDONE] = {"sent back at review", "redone", "#17becf", FILL_STRIPES},
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

/* The geometry shared by every element; bx/bw: each attempt's drawn x
 * and width (laid out once, see bar_layout). */
struct geo {
    int64_t t0;
    double span_ns, plot_w, right;
    int lanes;
    double *bx, *bw;
};

static double x_of(const struct geo *g, int64_t t)
{
    return LEFT + (double)(t - g->t0) / g->span_ns * g->plot_w;
}

static double lane_top(int lane)
{
    return TOP + lane * LANE_H;
}

static double mark_y(int lane)
{
    return lane < 0 ? ORCH_Y : lane_top(lane) + MARK_DY;
}

static void put_time(struct zerg_rbuf *b, const struct geo *g, int64_t t)
{
    char ts[ZERG_TS_MAX];
    zerg_rbuf_printf(b, "%s (+%.3f s)", zerg_clock_iso8601(t, ts),
                     (double)(t - g->t0) / 1e9);
}

/* Every attempt at least MIN_BAR_W wide and after the end of the bar
 * before it on its lane (attempts come in start order per lane).  Returns
 * the right end of the last bar. */
static double bar_layout(struct geo *g, const struct rp_model *m)
{
    double *end = calloc((size_t)m->nlanes + 1, sizeof *end), right = 0;
    for (size_t i = 0; end && i < m->natt; i++) {
        const struct rp_attempt *a = &m->att[i];
        double x = x_of(g, a->start_ns), x1 = x_of(g, a->end_ns);
        if (x < end[a->lane])
            x = end[a->lane]; /* the shift ends where the bar would */
        double w = x1 - x;
        if (w < MIN_BAR_W)
            w = MIN_BAR_W;
        g->bx[i] = x, g->bw[i] = w;
        end[a->lane] = x + w + BAR_GAP;
        if (x + w > right)
            right = x + w;
    }
    free(end);
    return right;
}

static const char *bar_fill(enum rp_outcome o, char *buf, size_t size)
{
    if (outcomes[o].fill == FILL_SOLID)
        return outcomes[o].color;
    snprintf(buf, size, "url(#p-%s)", outcomes[o].cls);
    return buf;
}

static void bar(struct zerg_rbuf *b, const struct geo *g,
                const struct rp_attempt *a, size_t i)
{
    char dur[32], fill[48];
    const char *stroke = outcomes[a->outcome].color;
    rp_fmt_duration(dur, sizeof dur, (double)(a->end_ns - a->start_ns) / 1e9);
    zerg_rbuf_printf(
        b,
        "<rect class=\"bar o%d k-%s\" x=\"%.1f\" y=\"%.1f\" "
        "width=\"%.1f\" height=\"%d\" fill=\"%s\" stroke=\"%s\"%s><title>",
        (int)a->outcome, outcomes[a->outcome].cls, g->bx[i],
        lane_top(a->lane) + BAR_DY, g->bw[i], BAR_H,
        bar_fill(a->outcome, fill, sizeof fill), stroke,
        outcomes[a->outcome].fill == FILL_OUTLINE
            ? " stroke-width=\"1.5\" stroke-dasharray=\"3 2\""
            : " stroke-width=\"0.5\"");
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

/* The patterns of the kinds that are not a plain colour. */
static void defs(struct zerg_rbuf *b)
{
    zerg_rbuf_puts(b, "<defs>");
    for (int i = 0; i < RP_NOUTCOMES; i++) {
        const char *c = outcomes[i].color, *k = outcomes[i].cls;
        switch (outcomes[i].fill) {
        case FILL_STRIPES:
            zerg_rbuf_printf(b,
                             "<pattern id=\"p-%s\" width=\"6\" height=\"6\" "
                             "patternUnits=\"userSpaceOnUse\" "
                             "patternTransform=\"rotate(45)\"><rect "
                             "width=\"6\" height=\"6\" fill=\"%s\"/><rect "
                             "width=\"2.5\" height=\"6\" fill=\"#fff\" "
                             "fill-opacity=\"0.6\"/></pattern>",
                             k, c);
            break;
        case FILL_CROSS:
            zerg_rbuf_printf(b,
                             "<pattern id=\"p-%s\" width=\"6\" height=\"6\" "
                             "patternUnits=\"userSpaceOnUse\"><rect "
                             "width=\"6\" height=\"6\" fill=\"%s\"/><path "
                             "d=\"M0 0l6 6M6 0l-6 6\" stroke=\"#fff\" "
                             "stroke-width=\"1.2\"/></pattern>",
                             k, c);
            break;
        case FILL_OUTLINE:
            zerg_rbuf_printf(b,
                             "<pattern id=\"p-%s\" width=\"4\" height=\"4\" "
                             "patternUnits=\"userSpaceOnUse\"><rect "
                             "width=\"4\" height=\"4\" fill=\"#e6f4e6\"/>"
                             "<circle cx=\"2\" cy=\"2\" r=\"0.9\" "
                             "fill=\"%s\"/></pattern>",
                             k, c);
            break;
        default:
            break;
        }
    }
    zerg_rbuf_puts(b, "<pattern id=\"p-gap\" width=\"8\" height=\"8\" "
                      "patternUnits=\"userSpaceOnUse\" "
                      "patternTransform=\"rotate(45)\"><rect width=\"8\" "
                      "height=\"8\" fill=\"#fff\"/><rect width=\"2\" "
                      "height=\"8\" fill=\"#d0d0d0\"/></pattern></defs>\n");
}

/* The marker's shape, centred on (x, y). */
static void mark_shape(struct zerg_rbuf *b, enum rp_mark_kind k, double x,
                       double y)
{
    const char *c = marks[k].color;
    switch (k) {
    case RP_M_CRASH:
        zerg_rbuf_printf(b,
                         "<path d=\"M%.1f %.1fl8 8m0 -8l-8 8\" "
                         "stroke=\"%s\" stroke-width=\"2.5\" fill=\"none\"/>",
                         x - 4, y - 4, c);
        break;
    case RP_M_STALE:
        zerg_rbuf_printf(b,
                         "<path d=\"M%.1f %.1fl5 5l-5 5l-5 -5z\" "
                         "fill=\"%s\"/>",
                         x, y - 5, c);
        break;
    case RP_M_RESPAWN:
        zerg_rbuf_printf(b,
                         "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                         "fill=\"%s\" stroke=\"#fff\"/>",
                         x, y, c);
        break;
    case RP_M_REASSIGN:
        zerg_rbuf_printf(b, "<path d=\"M%.1f %.1fl5 8h-10z\" fill=\"%s\"/>", x,
                         y - 4, c);
        break;
    default:
        zerg_rbuf_printf(b,
                         "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" "
                         "height=\"8\" fill=\"%s\"/>",
                         x - 4, y - 4, c);
    }
}

static void marker(struct zerg_rbuf *b, const struct geo *g,
                   const struct rp_mark *mk)
{
    zerg_rbuf_printf(b, "<g class=\"marker m%d\">", (int)mk->kind);
    mark_shape(b, mk->kind, x_of(g, mk->t_ns), mark_y(mk->lane));
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
        double y = lane_top(l);
        zerg_rbuf_printf(b,
                         "<g class=\"lane\" data-worker=\"%d\"><rect "
                         "x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%d\" "
                         "fill=\"%s\"/><text x=\"8\" y=\"%.0f\">W%d</text>"
                         "</g>\n",
                         l, LEFT, (int)y, g->right - LEFT, LANE_H,
                         l % 2 ? "#f4f4f4" : "#fbfbfb",
                         y + BAR_DY + BAR_H / 2.0 + 4, l);
    }
}

/* The time between one rush's end and the next one's start: nothing ran. */
static void gaps(struct zerg_rbuf *b, const struct geo *g,
                 const struct rp_model *m)
{
    for (size_t i = 1; i < m->nss; i++) {
        double x0 = x_of(g, m->ss[i - 1].end_ns),
               x1 = x_of(g, m->ss[i].start_ns);
        char d[32];
        rp_fmt_duration(d, sizeof d,
                        (double)(m->ss[i].start_ns - m->ss[i - 1].end_ns) /
                            1e9);
        zerg_rbuf_printf(b,
                         "<rect class=\"gap\" x=\"%.1f\" y=\"%d\" "
                         "width=\"%.1f\" height=\"%d\" fill=\"url(#p-gap)\">"
                         "<title>no rush running for %s: ",
                         x0, TOP, x1 > x0 ? x1 - x0 : 0, g->lanes * LANE_H, d);
        zerg_rbuf_puts(b, m->ss[i - 1].ended ? "stopped at " : "died at ");
        put_time(b, g, m->ss[i - 1].end_ns);
        zerg_rbuf_puts(b, ", resumed at ");
        put_time(b, g, m->ss[i].start_ns);
        zerg_rbuf_puts(b, "</title></rect>\n");
    }
}

/* One labelled vertical line: a level boundary or a resume. */
struct label {
    double x;
    char text[32], title[48];
    const char *color, *dash, *cls;
    int64_t t;
};

/* The text spans laid out so far, per row. */
struct spans {
    double (*v)[2];
    int *row;
    size_t n;
};

/* The first row where [x0, x1] overlaps no span laid before, or -1. */
static int label_row(struct spans *sp, double x0, double x1)
{
    for (int r = 0; r < LABEL_ROWS; r++) {
        size_t i = 0;
        while (i < sp->n &&
               !(sp->row[i] == r && x0 < sp->v[i][1] && sp->v[i][0] < x1))
            i++;
        if (i == sp->n) {
            sp->v[sp->n][0] = x0, sp->v[sp->n][1] = x1;
            sp->row[sp->n++] = r;
            return r;
        }
    }
    return -1;
}

static void put_label(struct zerg_rbuf *b, const struct geo *g,
                      const struct label *l, struct spans *sp)
{
    double y1 = TOP + g->lanes * LANE_H;
    double w = (double)strlen(l->text) * LABEL_CHAR_W + LABEL_PAD;
    int row = label_row(sp, l->x + 2, l->x + 2 + w);
    zerg_rbuf_printf(b,
                     "<g class=\"%s\"><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" "
                     "y2=\"%.0f\" stroke=\"%s\" stroke-dasharray=\"%s\"/>",
                     l->cls, l->x, row < 0 ? TOP : row * LABEL_ROW_H + 2, l->x,
                     y1, l->color, l->dash);
    if (row >= 0)
        zerg_rbuf_printf(b,
                         "<text x=\"%.1f\" y=\"%d\" class=\"lvl\" "
                         "fill=\"%s\">%s</text>",
                         l->x + 2, (row + 1) * LABEL_ROW_H - 2, l->color,
                         l->text);
    zerg_rbuf_printf(b, "<title>%s at ", l->title);
    put_time(b, g, l->t);
    zerg_rbuf_puts(b, "</title></g>\n");
}

static void level_label(const struct rp_level_line *lv, struct label *l)
{
    *l = (struct label){.t = lv->t_ns,
                        .color = lv->start ? "#3366cc" : "#888",
                        .dash = lv->start ? "4 2" : "2 3",
                        .cls = "level-line"};
    snprintf(l->text, sizeof l->text, "L%d%s", lv->level,
             lv->start ? "" : " done");
    snprintf(l->title, sizeof l->title, "level %d %s", lv->level,
             lv->start ? "started" : "complete");
}

/* Resumes and level starts first, then level ends where room is left: a
 * level's end is mostly the next one's start. */
static void labels(struct zerg_rbuf *b, const struct geo *g,
                   const struct rp_model *m)
{
    size_t cap = m->nlv + m->nss + 1;
    struct spans sp = {calloc(cap, sizeof *sp.v), calloc(cap, sizeof *sp.row),
                       0};
    if (!sp.v || !sp.row) {
        free(sp.v), free(sp.row);
        b->oom = 1;
        return;
    }
    struct label l;
    for (size_t s = 1; s < m->nss; s++) {
        l = (struct label){.t = m->ss[s].start_ns,
                           .color = "#555",
                           .dash = "1 0",
                           .cls = "resume-line"};
        snprintf(l.text, sizeof l.text, "resumed");
        snprintf(l.title, sizeof l.title, "rush %zu started", s + 1);
        l.x = x_of(g, l.t);
        put_label(b, g, &l, &sp);
    }
    for (int pass = 1; pass >= 0; pass--)
        for (size_t i = 0; i < m->nlv; i++) {
            if (m->lv[i].start != pass)
                continue;
            level_label(&m->lv[i], &l);
            l.x = x_of(g, l.t);
            put_label(b, g, &l, &sp);
        }
    free(sp.v);
    free(sp.row);
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
                     LEFT, y, g->right, y);
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

/* One swatch per kind, drawn as the bars are (the patterns of the
 * timeline's <defs>, which an SVG of the same page may use). */
static void legend(struct zerg_rbuf *b)
{
    char fill[48];
    zerg_rbuf_puts(b, "<div class=\"legend\">");
    for (int i = 0; i < RP_NOUTCOMES; i++)
        zerg_rbuf_printf(
            b,
            "<span class=\"k-%s\"><svg width=\"22\" height=\"12\"><rect "
            "x=\"1\" y=\"1\" width=\"20\" height=\"10\" fill=\"%s\" "
            "stroke=\"%s\"%s/></svg>%s</span>",
            outcomes[i].cls, bar_fill((enum rp_outcome)i, fill, sizeof fill),
            outcomes[i].color,
            outcomes[i].fill == FILL_OUTLINE ? " stroke-dasharray=\"3 2\"" : "",
            outcomes[i].name);
    for (int i = 0; i < RP_M_NKINDS; i++) {
        zerg_rbuf_puts(b, "<span><svg width=\"14\" height=\"12\">");
        mark_shape(b, (enum rp_mark_kind)i, 7, 6);
        zerg_rbuf_printf(b, "</svg>%s</span>", marks[i].name);
    }
    zerg_rbuf_puts(b, "<span><svg width=\"22\" height=\"12\"><rect x=\"1\" "
                      "y=\"1\" width=\"20\" height=\"10\" "
                      "fill=\"url(#p-gap)\" stroke=\"#ccc\"/></svg>no rush "
                      "running</span></div>\n");
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
    g.bx = calloc(m->natt + 1, sizeof *g.bx);
    g.bw = calloc(m->natt + 1, sizeof *g.bw);
    if (!g.bx || !g.bw) {
        free(g.bx), free(g.bw);
        b->oom = 1;
        return;
    }
    double last = bar_layout(&g, m);
    legend(b);
    g.right = LEFT + g.plot_w > last ? LEFT + g.plot_w : last;
    int h = TOP + g.lanes * LANE_H + AXIS_H;
    double w = g.right + RIGHT;
    zerg_rbuf_printf(b,
                     "<div class=\"tl\"><svg class=\"timeline\" width=\"%.0f\" "
                     "height=\"%d\" viewBox=\"0 0 %.0f %d\">\n",
                     w, h, w, h);
    defs(b);
    lanes(b, &g);
    gaps(b, &g, m);
    axis(b, &g);
    for (size_t i = 0; i < m->natt; i++)
        bar(b, &g, &m->att[i], i);
    labels(b, &g, m);
    for (size_t i = 0; i < m->nmk; i++)
        marker(b, &g, &m->mk[i]);
    zerg_rbuf_puts(b, "</svg></div>\n");
    free(g.bx);
    free(g.bw);
}
