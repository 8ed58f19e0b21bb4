/* report.c - `zerg report`: writes one self-contained HTML page about a
 * feature's run: a header (feature, run id, start, elapsed, counts,
 * recovery metrics), the SVG timeline of report_svg.c and a table of the
 * tasks, with the check that verified each (task_check.h, from the task
 * graph).  Inline CSS and SVG only: no script, font or style is fetched,
 * so the page opens the same offline, attached to a bug report. */
#include "cli.h"
#include "report.h"
#include "cli/task_check.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zerg/fsio.h"
#include "zerg/graph.h"

/* The state of 2,000 tasks is about 1 MB and their log a few MB. */
#define STATE_MAX (256u << 20)
#define LOG_MAX (1024u << 20)

static const char usage[] =
    "usage: zerg report [--feature F] [-o FILE]\n"
    "\n"
    "Writes one self-contained HTML page (no network needed) about the\n"
    "feature's latest run: a timeline with one lane per worker slot and a\n"
    "bar per task attempt coloured by outcome, markers for crashes, stale\n"
    "kills, respawns and reassignments, level boundaries, and a table of\n"
    "the tasks with their status, attempts, duration, cost, the check\n"
    "that verified each (its verification command, or its command's exit\n"
    "code only) and error.\n"
    "\n"
    "Options:\n"
    "  -o FILE     write to FILE ('-' for stdout); default\n"
    "              .zerg/reports/FEATURE.html\n"
    "  -C DIR      run as if started in DIR\n"
    "  -h, --help  show this help\n"
    "\n"
    "Exit codes: 0 written; 1 no state and no log, or a write error;\n"
    "2 usage error.\n";

static const char css[] =
    "body{font:14px/1.4 sans-serif;margin:16px;color:#222}"
    "h1{font-size:20px;margin:0 0 8px}table{border-collapse:collapse}"
    "td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;"
    "vertical-align:top}th{background:#eee}"
    ".hdr td:first-child{font-weight:bold}"
    ".tl{overflow-x:auto;border:1px solid #ccc;margin:8px 0}"
    ".timeline text{font:11px sans-serif}.lvl{fill:#3366cc}"
    ".bar:hover{stroke:#000;stroke-width:1.5}"
    ".legend span{margin-right:12px;white-space:nowrap;display:inline-block}"
    ".legend svg{vertical-align:-1px;margin-right:4px}"
    ".wide{overflow-x:auto}.tasks td:not(.err){white-space:nowrap}"
    ".s-failed,.s-blocked{color:#b00020}.s-complete{color:#1a7f1a}"
    ".err{min-width:16em;max-width:60em;white-space:pre-wrap;"
    "word-break:break-word}";

static const char *jstr(const zerg_json *o, const char *k)
{
    return zerg_json_as_str(zerg_json_get(o, k));
}

static void header_row(struct zerg_rbuf *b, const char *name, const char *v)
{
    zerg_rbuf_printf(b, "<tr><td>%s</td><td>", name);
    zerg_rbuf_esc(b, v && *v ? v : "—");
    zerg_rbuf_puts(b, "</td></tr>\n");
}

/* "12 tasks: 10 complete, 1 failed, 1 blocked". */
static void counts(struct zerg_rbuf *b, const zerg_json *tasks)
{
    static const char *const st[] = {"complete",    "failed",  "blocked",
                                     "in_progress", "claimed", "waiting_retry",
                                     "pending"};
    size_t n = zerg_json_len(tasks);
    zerg_rbuf_printf(b, "<tr><td>tasks</td><td>%zu", n);
    for (size_t s = 0; s < sizeof st / sizeof st[0]; s++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            const char *v = jstr(zerg_json_at(tasks, i), "status");
            k += v && strcmp(v, st[s]) == 0;
        }
        if (k)
            zerg_rbuf_printf(b, ", %zu %s", k, st[s]);
    }
    zerg_rbuf_puts(b, "</td></tr>\n");
}

static void metrics(struct zerg_rbuf *b, const zerg_json *mt)
{
    zerg_rbuf_puts(b, "<tr><td>recovery</td><td>");
    for (size_t i = 0; i < zerg_json_len(mt); i++) {
        const zerg_json *v = zerg_json_at(mt, i);
        if (!zerg_json_is(v, ZERG_JSON_NUMBER))
            continue;
        zerg_rbuf_puts(b, i ? ", " : "");
        zerg_rbuf_esc(b, zerg_json_key_at(mt, i));
        zerg_rbuf_printf(b, " %g", zerg_json_as_num(v, 0));
    }
    zerg_rbuf_puts(b, "</td></tr>\n");
}

/* The run's elapsed time over all its rushes: from its first start to
 * its last end, the time its user waited and the span the timeline
 * draws, and after a stop and a resume also how long rushes ran. */
static void elapsed_row(struct zerg_rbuf *b, const struct rp_model *m)
{
    char wall[32], run[32];
    double w, r;
    rp_model_elapsed(m, &w, &r);
    rp_fmt_duration(wall, sizeof wall, w);
    zerg_rbuf_printf(b, "<tr><td>elapsed</td><td class=\"elapsed\">%s", wall);
    if (m->nss > 1) {
        rp_fmt_duration(run, sizeof run, r);
        zerg_rbuf_printf(b,
                         " from the first start to the last end, over %zu "
                         "rushes (resumed %zu time%s); rushes running %s",
                         m->nss, m->nss - 1, m->nss == 2 ? "" : "s", run);
    }
    zerg_rbuf_puts(b, "</td></tr>\n");
}

static void header(struct zerg_rbuf *b, const char *feature,
                   const zerg_json *st, const struct rp_model *m)
{
    const char *run = jstr(st, "run_id");
    zerg_rbuf_puts(b, "<h1>zerg report: ");
    zerg_rbuf_esc(b, feature);
    zerg_rbuf_puts(b, "</h1>\n<table class=\"hdr\">\n");
    header_row(b, "feature", feature);
    header_row(b, "run id", run ? run : m->run_id);
    header_row(b, "started", jstr(st, "started_at"));
    elapsed_row(b, m);
    header_row(b, "status", jstr(st, "status"));
    counts(b, zerg_json_get(st, "tasks"));
    metrics(b, zerg_json_get(st, "metrics"));
    zerg_rbuf_printf(b,
                     "<tr><td>log</td><td>%zu events, %zu unreadable "
                     "lines skipped, %zu not drawn</td></tr>\n</table>\n",
                     m->events, m->corrupt, m->other);
}

/* The task's recorded spend, under whichever name the state uses. */
static void cost_cell(struct zerg_rbuf *b, const zerg_json *t)
{
    static const char *const keys[] = {"cost_usd", "total_cost_usd", "cost"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const zerg_json *v = zerg_json_get(t, keys[i]);
        if (zerg_json_is(v, ZERG_JSON_NUMBER)) {
            zerg_rbuf_printf(b, "<td>$%.4f</td>", zerg_json_as_num(v, 0));
            return;
        }
    }
    zerg_rbuf_puts(b, "<td>—</td>");
}

/* Which check passes the task (task_check.h); "—" without the graph. */
static void check_cell(struct zerg_rbuf *b, const struct zerg_graph *g,
                       const char *id)
{
    ssize_t i = g && id ? zerg_graph_find(g, id) : -1;
    const char *text = "—";
    enum zerg_check_kind k =
        i >= 0 ? zerg_task_check(&g->tasks[i], &text) : ZERG_CHECK_NONE;
    zerg_rbuf_puts(b, k == ZERG_CHECK_VERIFICATION ? "<td><code>" : "<td>");
    zerg_rbuf_esc(b, text);
    zerg_rbuf_puts(b, k == ZERG_CHECK_VERIFICATION ? "</code></td>" : "</td>");
}

static void task_row(struct zerg_rbuf *b, const struct zerg_graph *g,
                     const char *id, const zerg_json *t)
{
    const char *status = jstr(t, "status"), *err = jstr(t, "error");
    const char *reason = jstr(t, "reason");
    const zerg_json *d = zerg_json_get(t, "duration_ms");
    char dur[32];
    rp_fmt_duration(dur, sizeof dur,
                    zerg_json_is(d, ZERG_JSON_NUMBER)
                        ? zerg_json_as_num(d, 0) / 1000.0
                        : -1);
    zerg_rbuf_puts(b, "<tr class=\"task\"><td>");
    zerg_rbuf_esc(b, id);
    zerg_rbuf_printf(b, "</td><td>%g</td><td class=\"s-",
                     zerg_json_as_num(zerg_json_get(t, "level"), 0));
    zerg_rbuf_esc(b, status);
    zerg_rbuf_puts(b, "\">");
    zerg_rbuf_esc(b, status ? status : "?");
    zerg_rbuf_printf(b, "</td><td>%g</td><td>%g</td><td>%g</td><td>%s</td>",
                     zerg_json_as_num(zerg_json_get(t, "attempt"), 0),
                     zerg_json_as_num(zerg_json_get(t, "retry_count"), 0),
                     zerg_json_as_num(zerg_json_get(t, "crash_count"), 0), dur);
    cost_cell(b, t);
    check_cell(b, g, id);
    zerg_rbuf_puts(b, "<td class=\"err\">");
    if (reason) {
        zerg_rbuf_esc(b, reason);
        zerg_rbuf_puts(b, err ? ": " : "");
    }
    zerg_rbuf_esc(b, err);
    zerg_rbuf_puts(b, "</td></tr>\n");
}

static void task_table(struct zerg_rbuf *b, const struct zerg_graph *g,
                       const zerg_json *tasks)
{
    zerg_rbuf_printf(b,
                     "<h2>Tasks (%zu)</h2>\n<div class=\"wide\">"
                     "<table class=\"tasks\"><tr>"
                     "<th>id</th><th>level</th><th>status</th>"
                     "<th>attempts</th><th>retries</th><th>crashes</th>"
                     "<th>duration</th><th>cost</th><th>verified by</th>"
                     "<th>failure reason / error</th></tr>\n",
                     zerg_json_len(tasks));
    for (size_t i = 0; i < zerg_json_len(tasks); i++)
        task_row(b, g, zerg_json_key_at(tasks, i), zerg_json_at(tasks, i));
    zerg_rbuf_puts(b, "</table></div>\n");
}

static void page(struct zerg_rbuf *b, const char *feature, const zerg_json *st,
                 const struct zerg_graph *g, const struct rp_model *m)
{
    zerg_rbuf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head>"
                      "<meta charset=\"utf-8\"><title>zerg report: ");
    zerg_rbuf_esc(b, feature);
    zerg_rbuf_printf(b, "</title><style>%s</style></head><body>\n", css);
    header(b, feature, st, m);
    zerg_rbuf_puts(b, "<h2>Timeline</h2>\n");
    rp_svg_timeline(b, m);
    task_table(b, g, zerg_json_get(st, "tasks"));
    zerg_rbuf_puts(b, "</body></html>\n");
}

/* ---- reading and writing ------------------------------------------------- */

static zerg_json *load_state(const struct zerg_cli *cli, const char *feature)
{
    char path[PATH_MAX], *text = NULL;
    size_t len = 0;
    struct zerg_err err = {0};
    if (zerg_cli_path(cli, path, sizeof path, ".zerg/state/%s.json", feature))
        return NULL;
    int rc = zerg_fsio_read_file(path, STATE_MAX, ZERG_FSIO_NOFOLLOW, &text,
                                 &len, &err);
    if (rc) {
        if (rc != -ENOENT)
            zerg_cli_error("report", "%s", err.msg);
        return NULL;
    }
    zerg_json *st = zerg_json_parse(text, len, &err);
    if (!st)
        zerg_cli_error("report", "%s: %s", path, err.msg);
    free(text);
    return st;
}

/* Feeds the log into m; 1 when it was read, 0 when there is none. */
static int load_log(const struct zerg_cli *cli, struct rp_model *m)
{
    char path[PATH_MAX], *text = NULL;
    size_t len = 0;
    struct zerg_err err = {0};
    if (zerg_cli_path(cli, path, sizeof path, ".zerg/monitor.jsonl"))
        return 0;
    int rc = zerg_fsio_read_file(path, LOG_MAX, ZERG_FSIO_NOFOLLOW, &text, &len,
                                 &err);
    if (rc) {
        if (rc != -ENOENT)
            zerg_cli_error("report", "%s", err.msg);
        return 0;
    }
    rp_model_feed(m, text, len);
    free(text);
    return 1;
}

static int write_out(const struct zerg_cli *cli, const char *feature,
                     const char *out, const struct zerg_rbuf *b)
{
    char path[PATH_MAX];
    struct zerg_err err = {0};
    if (out && strcmp(out, "-") == 0)
        return fwrite(b->s, 1, b->len, stdout) == b->len ? 0 : -EIO;
    if (!out) {
        if (zerg_fsio_mkdirs_under(cli->project, ".zerg/reports", 0755, &err)) {
            zerg_cli_error("report", "%s", err.msg);
            return -1;
        }
        if (zerg_cli_path(cli, path, sizeof path, ".zerg/reports/%s.html",
                          feature))
            return -ENAMETOOLONG;
        out = path;
    }
    if (zerg_fsio_write_atomic(out, b->s, b->len, ZERG_FSIO_NOSYNC, &err)) {
        zerg_cli_error("report", "%s", err.msg);
        return -1;
    }
    printf("%s\n", out);
    return 0;
}

/* The worker slots the state names, so an idle slot still gets a lane. */
static void state_lanes(struct rp_model *m, const zerg_json *st)
{
    const zerg_json *w = zerg_json_get(st, "workers");
    for (size_t i = 0; i < zerg_json_len(w); i++) {
        char *end;
        long n = strtol(zerg_json_key_at(w, i), &end, 10);
        if (*end == '\0' && n >= 0 && n < RP_MAX_LANES)
            rp_model_lanes(m, (int)n + 1);
    }
}

static int run(struct zerg_cli *cli, const char *out)
{
    char feature[256];
    struct zerg_err err = {0};
    if (zerg_cli_feature(cli, feature, sizeof feature, &err)) {
        zerg_cli_error("report", "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    struct rp_model m;
    struct zerg_rbuf b = {0};
    struct zerg_graph *g = NULL;
    int rc = ZERG_EXIT_FAIL;
    if (rp_model_init(&m, feature))
        return ZERG_EXIT_FAIL;
    zerg_json *st = load_state(cli, feature);
    int have_log = load_log(cli, &m);
    if (!st && !have_log) {
        zerg_cli_error("report",
                       "feature %s has no state and no log yet: "
                       "run `zerg rush` first",
                       feature);
        goto done;
    }
    state_lanes(&m, st);
    /* The graph says which check verifies each task; without it (moved,
     * broken) the page is still written, with "—" there. */
    struct zerg_err gerr = {0};
    if (zerg_cli_graph(cli, feature, &g, &gerr) < 0)
        g = NULL;
    page(&b, feature, st, g, &m);
    if (b.oom)
        zerg_cli_error("report", "out of memory");
    else if (write_out(cli, feature, out, &b) == 0)
        rc = ZERG_EXIT_OK;
done:
    zerg_graph_free(g);
    zerg_json_free(st);
    zerg_rbuf_close(&b);
    rp_model_close(&m);
    return rc;
}

int zerg_cmd_report(struct zerg_cli *cli, int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'o')
            out = optarg;
        else if (c == 'h') {
            fputs(usage, stdout);
            return ZERG_EXIT_OK;
        } else
            return zerg_cli_usage_error("report", NULL);
    }
    if (optind < argc)
        return zerg_cli_usage_error("report", "unexpected argument '%s'",
                                    argv[optind]);
    return run(cli, out);
}
