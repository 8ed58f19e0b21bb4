/* plan.c - prints a task graph as the run will go through it (see plan.h).
 *
 *   Level 2: 3 tasks, up to 2 at once
 *     B-L2-001   Parse the config            after A-L1-001
 *   * B-L2-002   Write the README            serialized with B-L2-003
 *
 * Text from the graph (titles) is printed with control characters replaced,
 * so a task graph cannot move the cursor or recolour the terminal. */
#include "plan.h"

#include <errno.h>
#include <string.h>

#include "zerg/graph.h"

#define TITLE_COLS 40
#define LIST_MAX 6 /* ids listed after "after" before "+N more" */

static const char *em(int color, const char *code)
{
    return color ? code : "";
}

/* Title cut to TITLE_COLS bytes at a UTF-8 boundary, controls as '?'. */
static void clean_title(char *buf, size_t size, const char *s)
{
    size_t o = 0, lim = size - 4 < TITLE_COLS ? size - 4 : TITLE_COLS;
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (o >= lim && (c & 0xC0) != 0x80) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        buf[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    buf[o] = '\0';
}

static void print_list(FILE *out, const char *label, const struct zerg_graph *g,
                       const size_t *idx, size_t n)
{
    if (!n)
        return;
    fprintf(out, "  %s ", label);
    for (size_t i = 0; i < n && i < LIST_MAX; i++)
        fprintf(out, "%s%s", i ? ", " : "", g->tasks[idx[i]].id);
    if (n > LIST_MAX)
        fprintf(out, " +%zu more", n - LIST_MAX);
}

static int id_width(const struct zerg_graph *g)
{
    size_t w = 8;
    for (size_t i = 0; i < g->ntasks; i++)
        if (strlen(g->tasks[i].id) > w)
            w = strlen(g->tasks[i].id);
    return (int)w;
}

static void print_task(FILE *out, const struct zerg_graph *g, size_t i,
                       int width, int color)
{
    const struct zerg_task *t = &g->tasks[i];
    char title[TITLE_COLS * 4 + 8];
    clean_title(title, sizeof title, t->title ? t->title : "");
    size_t partners[LIST_MAX];
    size_t np = zerg_graph_partners(g, i, partners, LIST_MAX);
    int more = t->estimate_minutes > 0 || t->deps.n || np;
    fprintf(out, "  %s%c%s %-*s  %-*s", em(color, "\033[33m"), np ? '*' : ' ',
            em(color, "\033[0m"), width, t->id, more ? TITLE_COLS + 3 : 0,
            title);
    if (t->estimate_minutes > 0)
        fprintf(out, "  %4.0f min", t->estimate_minutes);
    print_list(out, "after", g, t->dep_idx, t->deps.n);
    print_list(out, "serialized with", g, partners, np);
    fputc('\n', out);
}

static void print_level(FILE *out, const struct zerg_graph *g, int lv,
                        int workers, int width, int color)
{
    const struct zerg_level *L = &g->levels[lv];
    fprintf(out, "%sLevel %d%s: %zu task%s", em(color, "\033[1m"), lv,
            em(color, "\033[0m"), L->n, L->n == 1 ? "" : "s");
    if (workers > 0 && L->n)
        fprintf(out, ", up to %zu at once",
                L->n < (size_t)workers ? L->n : (size_t)workers);
    fputc('\n', out);
    for (size_t k = 0; k < L->n; k++)
        print_task(out, g, L->tasks[k], width, color);
}

static void print_critical(FILE *out, const struct zerg_graph *g)
{
    if (!g->ncritical)
        return;
    fputs("Critical path: ", out);
    for (size_t i = 0; i < g->ncritical; i++)
        fprintf(out, "%s%s", i ? " -> " : "", g->tasks[g->critical_path[i]].id);
    fprintf(out, " (%zu task%s", g->ncritical, g->ncritical == 1 ? "" : "s");
    if (g->critical_minutes > 0)
        fprintf(out, ", %.0f min", g->critical_minutes);
    fputs(")\n", out);
}

int zerg_cli_print_plan(FILE *out, const struct zerg_graph *g, int workers,
                        int color)
{
    int width = id_width(g);
    int serialized = 0;
    for (int lv = 1; lv <= g->nlevels; lv++)
        print_level(out, g, lv, workers, width, color);
    for (size_t i = 0; i < g->ntasks; i++)
        serialized |= g->tasks[i].nwgroups > 0;
    if (serialized)
        fputs("  * serialized: shares a file with a task of its level; "
              "they never run at the same time\n",
              out);
    print_critical(out, g);
    return ferror(out) ? -EIO : 0;
}
