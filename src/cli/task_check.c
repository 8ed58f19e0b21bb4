/* task_check.c - which check verifies a task: its verification command,
 * else its command's exit code alone, else nothing (an agent task with no
 * verification is taken at its word).  A task "complete" says little
 * until one can see which of these it passed; status and report show it
 * per task, grouped by check so that a graph of thousands of tasks with a
 * handful of checks stays a handful of lines. */
#include "cli/task_check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum zerg_check_kind zerg_task_check(const struct zerg_task *t,
                                     const char **text)
{
    if (t->verify_command && t->verify_command[0]) {
        *text = t->verify_command;
        return ZERG_CHECK_VERIFICATION;
    }
    if (t->command && t->command[0]) {
        *text = "command exit code only";
        return ZERG_CHECK_EXIT_CODE;
    }
    *text = "no verification";
    return ZERG_CHECK_NONE;
}

const char *zerg_check_kind_name(enum zerg_check_kind kind)
{
    return kind == ZERG_CHECK_VERIFICATION ? "verification"
           : kind == ZERG_CHECK_EXIT_CODE  ? "exit_code"
                                           : "none";
}

/* qsort has no context argument: the graph being sorted. */
static const struct zerg_graph *sorting;

static int by_check(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    const char *tx, *ty;
    enum zerg_check_kind kx = zerg_task_check(&sorting->tasks[x], &tx);
    enum zerg_check_kind ky = zerg_task_check(&sorting->tasks[y], &ty);
    int c = kx != ky ? (kx < ky ? -1 : 1) : strcmp(tx, ty);
    return c ? c : x < y ? -1 : x > y;
}

int zerg_check_groups(const struct zerg_graph *g, struct zerg_check_groups *gs)
{
    *gs = (struct zerg_check_groups){0};
    if (!g->ntasks)
        return 0;
    gs->order = malloc(g->ntasks * sizeof *gs->order);
    gs->v = malloc(g->ntasks * sizeof *gs->v);
    if (!gs->order || !gs->v) {
        zerg_check_groups_free(gs);
        return -ENOMEM;
    }
    for (size_t i = 0; i < g->ntasks; i++)
        gs->order[i] = i;
    sorting = g;
    qsort(gs->order, g->ntasks, sizeof *gs->order, by_check);
    for (size_t i = 0; i < g->ntasks; i++) {
        const char *text;
        enum zerg_check_kind k =
            zerg_task_check(&g->tasks[gs->order[i]], &text);
        struct zerg_check_group *last = gs->n ? &gs->v[gs->n - 1] : NULL;
        if (last && last->kind == k && !strcmp(last->text, text)) {
            last->n++;
            continue;
        }
        gs->v[gs->n++] = (struct zerg_check_group){
            .kind = k, .text = text, .tasks = &gs->order[i], .n = 1};
    }
    return 0;
}

void zerg_check_groups_free(struct zerg_check_groups *gs)
{
    free(gs->v);
    free(gs->order);
    *gs = (struct zerg_check_groups){0};
}
