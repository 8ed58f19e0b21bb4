/* test_state.c - the state document: statuses, JSON round trips, save and
 * load through real files, the corrupt-file table, backups, dropped tasks,
 * level completion, a 10,000-task document and an injected ENOSPC. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/graph.h"
#include "zerg/json.h"
#include "zerg/state.h"

/* 2026-02-03T05:41:55.123Z: timestamps travel with millisecond precision. */
#define T0 (INT64_C(1770097315123) * ZERG_NS_PER_MS)

static const char graph_text[] =
    "{\"feature\":\"demo\",\"tasks\":["
    "{\"id\":\"A-L1-001\",\"title\":\"one\",\"level\":1,\"dependencies\":[]},"
    "{\"id\":\"A-L1-002\",\"title\":\"two\",\"level\":1,\"dependencies\":[]},"
    "{\"id\":\"A-L2-001\",\"title\":\"three\",\"level\":2,"
    "\"dependencies\":[\"A-L1-001\"]}]}";

static struct zerg_graph *small_graph(void)
{
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    int rc = zerg_graph_parse(&g, "demo", graph_text, strlen(graph_text), &err);
    if (rc)
        fail_msg("graph: %s", err.msg);
    assert_int_equal(g->ntasks, 3);
    return g;
}

/* ---- comparing states --------------------------------------------------- */

static void assert_str_eq(const char *a, const char *b)
{
    if (!a || !b)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

static void assert_task_eq(const struct zerg_task_state *a,
                           const struct zerg_task_state *b)
{
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->level, b->level);
    assert_int_equal(a->worker_id, b->worker_id);
    assert_int_equal(a->retry_count, b->retry_count);
    assert_int_equal(a->crash_count, b->crash_count);
    assert_int_equal(a->attempt, b->attempt);
    assert_int_equal(a->epoch, b->epoch);
    assert_int_equal(a->claimed_at_wall_ns, b->claimed_at_wall_ns);
    assert_int_equal(a->started_at_wall_ns, b->started_at_wall_ns);
    assert_int_equal(a->completed_at_wall_ns, b->completed_at_wall_ns);
    assert_int_equal(a->retry_at_wall_ns, b->retry_at_wall_ns);
    assert_int_equal(a->duration_ms, b->duration_ms);
    assert_str_eq(a->error, b->error);
    assert_str_eq(a->reason, b->reason);
}

static void assert_worker_eq(const struct zerg_worker_state *a,
                             const struct zerg_worker_state *b)
{
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->pid, b->pid);
    assert_string_equal(a->container_id, b->container_id);
    assert_int_equal(a->respawn_count, b->respawn_count);
    assert_int_equal(a->spawn_attempt, b->spawn_attempt);
    assert_int_equal(a->epoch, b->epoch);
    assert_int_equal(a->task, b->task);
    assert_int_equal(a->started_at_wall_ns, b->started_at_wall_ns);
    assert_int_equal(a->ready_at_wall_ns, b->ready_at_wall_ns);
}

static void assert_state_eq(const struct zerg_state *a,
                            const struct zerg_state *b)
{
    assert_int_equal(a->version, b->version);
    assert_str_eq(a->feature, b->feature);
    assert_string_equal(a->run_id, b->run_id);
    assert_int_equal(a->started_at_wall_ns, b->started_at_wall_ns);
    assert_int_equal(a->updated_at_wall_ns, b->updated_at_wall_ns);
    assert_int_equal(a->current_level, b->current_level);
    assert_int_equal(a->ntasks, b->ntasks);
    for (size_t i = 0; i < a->ntasks; i++)
        assert_task_eq(&a->tasks[i], &b->tasks[i]);
    assert_int_equal(a->nworkers, b->nworkers);
    for (size_t i = 0; i < a->nworkers; i++)
        assert_worker_eq(&a->workers[i], &b->workers[i]);
    assert_int_equal(a->nlevels, b->nlevels);
    for (int n = 1; n <= a->nlevels; n++) {
        assert_int_equal(a->levels[n].status, b->levels[n].status);
        assert_int_equal(a->levels[n].started_at_wall_ns,
                         b->levels[n].started_at_wall_ns);
        assert_int_equal(a->levels[n].completed_at_wall_ns,
                         b->levels[n].completed_at_wall_ns);
    }
    assert_memory_equal(&a->metrics, &b->metrics, sizeof a->metrics);
    assert_int_equal(a->next_epoch, b->next_epoch);
    assert_int_equal(a->paused, b->paused);
    assert_str_eq(a->error, b->error);
    assert_str_eq(a->status, b->status);
}

/* to_json -> encode -> parse -> from_json, into out. */
static void round_trip(const struct zerg_state *s, const struct zerg_graph *g,
                       struct zerg_state *out)
{
    struct zerg_err err = {0};
    zerg_json *doc = zerg_state_to_json(s, g);
    assert_non_null(doc);
    size_t len = 0;
    char *text = zerg_json_encode(doc, &len, &err);
    assert_non_null(text);
    zerg_json *back = zerg_json_parse(text, len, &err);
    assert_non_null(back);
    size_t dropped = 99;
    int rc = zerg_state_from_json(out, g, back, &dropped, &err);
    if (rc)
        fail_msg("from_json: %s", err.msg);
    assert_int_equal(dropped, 0);
    zerg_json_free(back);
    free(text);
    zerg_json_free(doc);
}

/* Every field set to a distinct value, so a swapped or lost field shows. */
static void fill_state(struct zerg_state *s)
{
    static const enum zerg_task_status st[] = {
        ZERG_TASK_COMPLETE, ZERG_TASK_WAITING_RETRY, ZERG_TASK_IN_PROGRESS};
    for (size_t i = 0; i < s->ntasks; i++) {
        struct zerg_task_state *t = &s->tasks[i];
        int k = (int)i + 1;
        t->status = st[i % 3];
        t->worker_id = (int)(i % 4);
        t->retry_count = k;
        t->crash_count = k + 1;
        t->attempt = k + 2;
        t->epoch = (uint64_t)k * 7;
        t->claimed_at_wall_ns = T0 + k * ZERG_NS_PER_MS;
        t->started_at_wall_ns = T0 + k * 2 * ZERG_NS_PER_MS;
        t->completed_at_wall_ns = T0 + k * 3 * ZERG_NS_PER_MS;
        t->retry_at_wall_ns = T0 + k * 4 * ZERG_NS_PER_MS;
        t->duration_ms = 1000 + k;
        t->error = strdup("exit 1: \"quoted\" \\ and\nnewline");
        t->reason = strdup("verification");
    }
    s->workers = calloc(2, sizeof *s->workers);
    s->nworkers = 2;
    s->workers[0] =
        (struct zerg_worker_state){.id = 0,
                                   .status = ZERG_WORKER_BUSY,
                                   .pid = 4242,
                                   .respawn_count = 1,
                                   .spawn_attempt = 2,
                                   .epoch = 3,
                                   .task = 2,
                                   .started_at_wall_ns = T0,
                                   .ready_at_wall_ns = T0 + 5 * ZERG_NS_PER_MS};
    s->workers[1] = (struct zerg_worker_state){.id = 1,
                                               .status = ZERG_WORKER_BACKOFF,
                                               .respawn_count = 4,
                                               .spawn_attempt = 5,
                                               .epoch = 6,
                                               .task = -1};
    strcpy(s->workers[1].container_id, "zerg-demo-w1-0123456789abcdef");
    s->levels[1] = (struct zerg_level_state){ZERG_LEVEL_COMPLETE, T0,
                                             T0 + 9 * ZERG_NS_PER_MS};
    s->levels[2] = (struct zerg_level_state){ZERG_LEVEL_RUNNING, T0, 0};
    struct zerg_metrics m = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    s->metrics = m;
    s->current_level = 2;
    s->next_epoch = 7;
    s->paused = 1;
    s->error = strdup("policy stale.lua failed");
    s->updated_at_wall_ns = T0 + 60 * ZERG_NS_PER_S;
    free(s->status);
    s->status = strdup("stopped");
}

/* ---- statuses ----------------------------------------------------------- */

static void test_status_names(void **ctx)
{
    (void)ctx;
    for (int i = ZERG_TASK_PENDING; i < ZERG_TASK_NSTATUS; i++) {
        enum zerg_task_status back;
        assert_int_equal(
            zerg_task_status_parse(zerg_task_status_name(i), &back), 0);
        assert_int_equal(back, i);
    }
    /* Every status a slot can be saved in, "stopping" (a slot being
     * killed) included: a checkpoint taken then must load again. */
    for (int i = ZERG_WORKER_STARTING; i <= ZERG_WORKER_STOPPING; i++) {
        enum zerg_worker_status back;
        assert_int_equal(
            zerg_worker_status_parse(zerg_worker_status_name(i), &back), 0);
        assert_int_equal(back, i);
    }
    for (int i = ZERG_LEVEL_PENDING; i <= ZERG_LEVEL_COMPLETE; i++) {
        enum zerg_level_status back;
        assert_int_equal(
            zerg_level_status_parse(zerg_level_status_name(i), &back), 0);
        assert_int_equal(back, i);
    }
    assert_string_equal(zerg_task_status_name(ZERG_TASK_IN_PROGRESS),
                        "in_progress");
    assert_string_equal(zerg_task_status_name(ZERG_TASK_WAITING_RETRY),
                        "waiting_retry");
    assert_string_equal(zerg_worker_status_name(ZERG_WORKER_RETIRED),
                        "retired");
    assert_string_equal(zerg_worker_status_name(ZERG_WORKER_STOPPING),
                        "stopping");
    enum zerg_task_status t;
    assert_int_equal(zerg_task_status_parse("donee", &t), -EINVAL);
    assert_int_equal(zerg_task_status_parse("Complete", &t), -EINVAL);
    assert_int_equal(zerg_task_status_parse(NULL, &t), -EINVAL);
    assert_true(zerg_task_status_terminal(ZERG_TASK_COMPLETE));
    assert_true(zerg_task_status_terminal(ZERG_TASK_FAILED));
    assert_true(zerg_task_status_terminal(ZERG_TASK_BLOCKED));
    assert_false(zerg_task_status_terminal(ZERG_TASK_WAITING_RETRY));
    assert_false(zerg_task_status_terminal(ZERG_TASK_CLAIMED));
}

/* ---- init and round trips ----------------------------------------------- */

static void test_init_from_graph(void **ctx)
{
    (void)ctx;
    struct zerg_graph *g = small_graph();
    struct zerg_state s;
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);
    assert_string_equal(s.feature, "demo");
    assert_int_equal(s.version, ZERG_STATE_VERSION);
    assert_int_equal(s.ntasks, 3);
    assert_int_equal(s.nlevels, 2);
    assert_int_equal(s.started_at_wall_ns, T0);
    assert_int_equal(s.current_level, 0);
    assert_true(s.run_id[0] != '\0');
    assert_true(s.next_epoch > 0);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(s.tasks[i].status, ZERG_TASK_PENDING);
        assert_int_equal(s.tasks[i].level, g->tasks[i].level);
        assert_int_equal(s.tasks[i].worker_id, -1);
        assert_null(s.tasks[i].error);
    }
    size_t counts[ZERG_TASK_NSTATUS];
    zerg_state_count(&s, counts);
    assert_int_equal(counts[ZERG_TASK_PENDING], 3);
    assert_int_equal(counts[ZERG_TASK_COMPLETE], 0);
    zerg_state_close(&s);
    assert_int_equal(zerg_state_init(&s, g, "other", T0), 0);
    assert_string_equal(s.feature, "other");
    zerg_state_close(&s);
    zerg_state_close(NULL);
    zerg_graph_free(g);
}

static void test_round_trip_all_fields(void **ctx)
{
    (void)ctx;
    struct zerg_graph *g = small_graph();
    struct zerg_state s, back;
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);
    fill_state(&s);
    round_trip(&s, g, &back);
    assert_state_eq(&s, &back);
    assert_int_equal(back.workers[0].task, 2);
    zerg_state_close(&back);
    zerg_state_close(&s);
    zerg_graph_free(g);
}

/* A fresh state is mostly "none": every none must come back as none. */
static void test_round_trip_nulls(void **ctx)
{
    (void)ctx;
    struct zerg_graph *g = small_graph();
    struct zerg_state s, back;
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);
    s.tasks[1].level = 0; /* unknown level */
    s.workers = calloc(1, sizeof *s.workers);
    s.nworkers = 1;
    s.workers[0] = (struct zerg_worker_state){
        .id = 3, .status = ZERG_WORKER_STARTING, .task = -1};

    zerg_json *doc = zerg_state_to_json(&s, g);
    assert_non_null(doc);
    const zerg_json *t = zerg_json_get(zerg_json_get(doc, "tasks"), "A-L1-002");
    assert_true(zerg_json_is(zerg_json_get(t, "level"), ZERG_JSON_NULL));
    assert_true(zerg_json_is(zerg_json_get(t, "worker_id"), ZERG_JSON_NULL));
    assert_true(zerg_json_is(zerg_json_get(t, "claimed_at"), ZERG_JSON_NULL));
    assert_true(zerg_json_is(zerg_json_get(t, "error"), ZERG_JSON_NULL));
    const zerg_json *w = zerg_json_get(zerg_json_get(doc, "workers"), "3");
    assert_true(zerg_json_is(zerg_json_get(w, "task"), ZERG_JSON_NULL));
    assert_true(zerg_json_is(zerg_json_get(w, "pid"), ZERG_JSON_NULL));
    assert_true(zerg_json_is(zerg_json_get(w, "container_id"), ZERG_JSON_NULL));
    assert_string_equal(zerg_json_as_str(zerg_json_get(doc, "started_at")),
                        "2026-02-03T05:41:55.123Z");
    assert_true(zerg_json_is(zerg_json_get(doc, "error"), ZERG_JSON_NULL));
    zerg_json_free(doc);

    round_trip(&s, g, &back);
    assert_state_eq(&s, &back);
    assert_int_equal(back.tasks[1].level, 0);
    zerg_state_close(&back);
    zerg_state_close(&s);
    zerg_graph_free(g);
}

/* Workers decode from an object whose key order is lost: they come back
 * sorted by slot (10 after 2, not after 1). */
static void test_workers_sorted_by_slot(void **ctx)
{
    (void)ctx;
    struct zerg_graph *g = small_graph();
    struct zerg_state s, back;
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);
    static const int ids[] = {0, 1, 2, 10};
    s.workers = calloc(4, sizeof *s.workers);
    s.nworkers = 4;
    for (int i = 0; i < 4; i++)
        s.workers[i] = (struct zerg_worker_state){
            .id = ids[i], .status = ZERG_WORKER_READY, .task = -1};
    round_trip(&s, g, &back);
    assert_state_eq(&s, &back);
    zerg_state_close(&back);
    zerg_state_close(&s);
    zerg_graph_free(g);
}

/* ---- from_json: leniency and its limits --------------------------------- */

static int from_text(struct zerg_state *s, const struct zerg_graph *g,
                     const char *text, size_t *dropped, struct zerg_err *err)
{
    zerg_json *doc = zerg_json_parse(text, strlen(text), err);
    assert_non_null(doc);
    int rc = zerg_state_from_json(s, g, doc, dropped, err);
    zerg_json_free(doc);
    return rc;
}

static void test_unknown_tasks_dropped(void **ctx)
{
    (void)ctx;
    struct zerg_graph *g = small_graph();
    struct zerg_state s;
    struct zerg_err err = {0};
    size_t dropped = 0;
    const char *text =
        "{\"version\":1,\"feature\":\"demo\",\"tasks\":{"
        "\"A-L1-001\":{\"status\":\"complete\",\"level\":1},"
        "\"Z-L9-999\":{\"status\":\"failed\",\"level\":9},"
        "\"OLD-1\":{\"status\":\"bogus\"}},"
        "\"workers\":{\"0\":{\"status\":\"busy\",\"task\":\"Z-L9-999\"}}}";
    int rc = from_text(&s, g, text, &dropped, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(dropped, 2);
    assert_int_equal(s.ntasks, 3);
    assert_int_equal(s.tasks[0].status, ZERG_TASK_COMPLETE);
    /* graph tasks the file lacks: pending at their graph level */
    assert_int_equal(s.tasks[1].status, ZERG_TASK_PENDING);
    assert_int_equal(s.tasks[1].level, 1);
    assert_int_equal(s.tasks[2].status, ZERG_TASK_PENDING);
    assert_int_equal(s.tasks[2].level, 2);
    assert_int_equal(s.tasks[2].worker_id, -1);
    /* a worker holding a task the graph lost points nowhere */
    assert_int_equal(s.nworkers, 1);
    assert_int_equal(s.workers[0].task, -1);
    assert_int_equal(s.nlevels, 2);
    assert_int_equal(s.levels[1].status, ZERG_LEVEL_PENDING);
    zerg_state_close(&s);
    zerg_graph_free(g);
}

/* Reading never repairs: null stays 0 and a disagreeing level stays. */
static void test_levels_kept_as_found(void **ctx)
{
    (void)ctx;
    struct zerg_graph *g = small_graph();
    struct zerg_state s;
    struct zerg_err err = {0};
    const char *text = "{\"feature\":\"demo\",\"tasks\":{"
                       "\"A-L1-001\":{\"status\":\"pending\",\"level\":null},"
                       "\"A-L1-002\":{\"status\":\"pending\",\"level\":5},"
                       "\"A-L2-001\":{\"status\":\"pending\"}}}";
    int rc = from_text(&s, g, text, NULL, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(s.tasks[0].level, 0);
    assert_int_equal(s.tasks[1].level, 5);
    assert_int_equal(s.tasks[2].level, 2); /* absent: from the graph */
    /* levels[] covers every task level, so s->levels[5] is valid */
    assert_int_equal(s.nlevels, 5);
    assert_int_equal(s.levels[5].status, ZERG_LEVEL_PENDING);
    /* defaults for everything the file left out */
    assert_int_equal(s.version, ZERG_STATE_VERSION);
    assert_int_equal(s.nworkers, 0);
    assert_int_equal(s.paused, 0);
    assert_null(s.status);
    zerg_state_close(&s);
    zerg_graph_free(g);
}

static void test_level_done(void **ctx)
{
    (void)ctx;
    struct zerg_graph *g = small_graph();
    struct zerg_state s;
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);
    assert_false(zerg_state_level_done(&s, g, 1));
    s.tasks[0].status = ZERG_TASK_COMPLETE;
    assert_false(zerg_state_level_done(&s, g, 1));
    s.tasks[1].status = ZERG_TASK_WAITING_RETRY; /* not terminal */
    assert_false(zerg_state_level_done(&s, g, 1));
    s.tasks[1].status = ZERG_TASK_FAILED;
    assert_true(zerg_state_level_done(&s, g, 1));
    s.tasks[1].status = ZERG_TASK_BLOCKED;
    assert_true(zerg_state_level_done(&s, g, 1));
    assert_false(zerg_state_level_done(&s, g, 2));
    /* the level of the task's state decides, not the graph's */
    s.tasks[2].level = 1;
    assert_false(zerg_state_level_done(&s, g, 1));
    assert_true(zerg_state_level_done(&s, g, 2)); /* now empty */
    s.tasks[2].level = 2;
    /* an unplaced task still holds its graph level open */
    s.tasks[1].level = 0;
    s.tasks[1].status = ZERG_TASK_PENDING;
    assert_false(zerg_state_level_done(&s, g, 1));
    s.tasks[1].status = ZERG_TASK_COMPLETE;
    assert_true(zerg_state_level_done(&s, g, 1));
    assert_true(zerg_state_level_done(&s, g, 7)); /* no tasks */

    size_t counts[ZERG_TASK_NSTATUS];
    s.tasks[2].status = ZERG_TASK_CLAIMED;
    zerg_state_count(&s, counts);
    assert_int_equal(counts[ZERG_TASK_COMPLETE], 2);
    assert_int_equal(counts[ZERG_TASK_CLAIMED], 1);
    assert_int_equal(counts[ZERG_TASK_PENDING], 0);
    zerg_state_close(&s);
    zerg_graph_free(g);
}

/* ---- files -------------------------------------------------------------- */

struct files {
    char dir[256];
    char path[300];
    char bak[310];
};

static void files_init(struct files *f)
{
    snprintf(f->dir, sizeof f->dir, "%s", tu_mkdtemp());
    snprintf(f->path, sizeof f->path, "%s/.zerg/state/demo.json", f->dir);
    snprintf(f->bak, sizeof f->bak, "%s.bak", f->path);
    char sd[PATH_MAX + 16];
    snprintf(sd, sizeof sd, "%s/.zerg/state", f->dir);
    assert_int_equal(zerg_fsio_mkdirs(sd, 0755), 0);
}

static void test_save_load_files(void **ctx)
{
    (void)ctx;
    struct files f;
    files_init(&f);
    struct zerg_graph *g = small_graph();
    struct zerg_state s, back;
    struct zerg_err err = {0};
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);

    assert_int_equal(zerg_state_load(&back, g, f.path, NULL, &err), -ENOENT);
    assert_int_equal(err.code, -ENOENT);
    assert_true(tu_contains(err.msg, f.path));
    assert_null(back.tasks);

    fill_state(&s);
    int rc = zerg_state_save(&s, g, f.path, &err);
    if (rc)
        fail_msg("%s", err.msg);
    size_t dropped = 7;
    rc = zerg_state_load(&back, g, f.path, &dropped, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_int_equal(dropped, 0);
    assert_state_eq(&s, &back);
    zerg_state_close(&back);
    /* only the file and its backup: no temp files left behind */
    char sd[PATH_MAX + 16];
    snprintf(sd, sizeof sd, "%s/.zerg/state", f.dir);
    assert_int_equal(tu_count_entries(sd), 2);

    zerg_state_close(&s);
    zerg_graph_free(g);
    tu_rmtree(f.dir);
}

/* .bak is the last file zerg wrote, in its own inode: damaging the live
 * file in place (as `> F.json` or cp would) leaves the backup whole. */
static void test_backup_kept(void **ctx)
{
    (void)ctx;
    struct files f;
    files_init(&f);
    struct zerg_graph *g = small_graph();
    struct zerg_state s, back;
    struct zerg_err err = {0};
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);
    assert_int_equal(zerg_state_save(&s, g, f.path, &err), 0);
    s.tasks[0].status = ZERG_TASK_COMPLETE;
    s.metrics.worker_respawns = 5;
    assert_int_equal(zerg_state_save(&s, g, f.path, &err), 0);

    char *live = tu_read(f.path), *bak = tu_read(f.bak);
    assert_non_null(bak);
    assert_string_equal(live, bak);
    struct stat a, b;
    assert_int_equal(stat(f.path, &a), 0);
    assert_int_equal(stat(f.bak, &b), 0);
    assert_true(a.st_ino != b.st_ino);

    tu_write(f.dir, ".zerg/state/demo.json", "{\"feature\":\"demo\",\"ta");
    char *after = tu_read(f.bak);
    assert_string_equal(after, bak);
    assert_int_equal(zerg_state_load(&back, g, f.path, NULL, &err),
                     ZERG_ECORRUPT);
    assert_true(tu_contains(err.msg, "The last good copy is"));
    assert_true(tu_contains(err.msg, f.bak));

    /* the advertised way back works */
    tu_write(f.dir, ".zerg/state/demo.json", bak);
    int rc = zerg_state_load(&back, g, f.path, NULL, &err);
    if (rc)
        fail_msg("%s", err.msg);
    assert_state_eq(&s, &back);
    zerg_state_close(&back);
    free(live);
    free(bak);
    free(after);
    zerg_state_close(&s);
    zerg_graph_free(g);
    tu_rmtree(f.dir);
}

/* ---- the corrupt-file table --------------------------------------------- */

#define TASK1 "\"A-L1-001\":"
#define OID_A "1111111111111111111111111111111111111111"
#define OID_B "2222222222222222222222222222222222222222"
#define OID_C "3333333333333333333333333333333333333333"

#define DOC(tasks, rest)                                                       \
    "{\"version\":1,\"feature\":\"demo\",\"tasks\":{" tasks "}" rest "}"
#define OKTASK TASK1 "{\"status\":\"pending\",\"level\":1}"

static const struct {
    const char *text;
    const char *want; /* words the reason must hold */
} corrupt_cases[] = {
    {"{\"version\":1,\"feature\":\"demo\",\"tasks\":{\"A-L1-001\":{\"sta",
     "is corrupt ("},
    {"", "is corrupt ("},
    {"[1,2]", "not a JSON object (got array)"},
    {"{\"version\":1,\"feature\":\"demo\",\"tasks\":[1]}",
     "(tasks: expected an object, got an array)"},
    {"{\"version\":1,\"feature\":\"demo\"}", "(tasks: missing)"},
    {"{\"version\":1,\"tasks\":{}}", "(feature: missing)"},
    {"{\"feature\":7,\"tasks\":{}}", "(feature: expected a string, got 7)"},
    {DOC(TASK1 "{\"status\":\"donee\"}", ""),
     "(tasks.A-L1-001.status: unknown status \"donee\")"},
    {DOC(TASK1 "{\"level\":1}", ""), "(tasks.A-L1-001.status: missing)"},
    {DOC(TASK1 "3", ""), "(tasks.A-L1-001: expected an object, got 3)"},
    {DOC(TASK1 "{\"status\":\"pending\",\"level\":\"2\"}", ""),
     "(tasks.A-L1-001.level: expected an integer >= 1 or null, got \"2\")"},
    {DOC(TASK1 "{\"status\":\"pending\",\"level\":0}", ""),
     "tasks.A-L1-001.level: expected an integer >= 1 or null, got 0"},
    {DOC(TASK1 "{\"status\":\"pending\",\"retry_count\":-1}", ""),
     "(tasks.A-L1-001.retry_count: expected an integer >= 0, got -1)"},
    {DOC(TASK1 "{\"status\":\"pending\",\"retry_count\":\"3\"}", ""),
     "tasks.A-L1-001.retry_count: expected an integer >= 0, got \"3\""},
    {DOC(TASK1 "{\"status\":\"pending\",\"attempt\":1.5}", ""),
     "tasks.A-L1-001.attempt: expected an integer >= 0, got 1.5"},
    {DOC(TASK1 "{\"status\":\"pending\",\"crash_count\":null}", ""),
     "tasks.A-L1-001.crash_count: expected an integer >= 0, got null"},
    {DOC(TASK1 "{\"status\":\"pending\",\"claimed_at\":\"yesterday\"}", ""),
     "tasks.A-L1-001.claimed_at: expected an ISO-8601 time or null, got "
     "\"yesterday\""},
    {DOC(TASK1 "{\"status\":\"pending\",\"error\":[1]}", ""),
     "tasks.A-L1-001.error: expected a string or null, got an array"},
    {DOC(TASK1 "{\"status\":\"pending\",\"epoch\":1e300}", ""),
     "tasks.A-L1-001.epoch: 1e+300 is too large"},
    {DOC(OKTASK, ",\"workers\":{\"w1\":{\"status\":\"ready\"}}"),
     "(workers: key \"w1\" is not a worker number)"},
    {DOC(OKTASK, ",\"workers\":{\"-1\":{\"status\":\"ready\"}}"),
     "workers: key \"-1\" is not a worker number"},
    {DOC(OKTASK, ",\"workers\":{\"0\":{\"status\":\"sleeping\"}}"),
     "(workers.0.status: unknown status \"sleeping\")"},
    {DOC(OKTASK, ",\"workers\":{\"0\":{\"status\":\"busy\",\"task\":5}}"),
     "workers.0.task: expected a string or null, got 5"},
    {DOC(OKTASK, ",\"workers\":[1]"),
     "(workers: expected an object, got an array)"},
    {DOC(OKTASK, ",\"levels\":{\"x\":{\"status\":\"running\"}}"),
     "(levels: key \"x\" is not a level number)"},
    {DOC(OKTASK, ",\"levels\":{\"1\":{\"status\":\"done\"}}"),
     "(levels.1.status: unknown status \"done\")"},
    {DOC(OKTASK, ",\"metrics\":{\"worker_respawns\":\"3\"}"),
     "(metrics.worker_respawns: expected an integer >= 0, got \"3\")"},
    {DOC(OKTASK, ",\"paused\":\"yes\""),
     "(paused: expected true or false, got \"yes\")"},
    {DOC(OKTASK, ",\"current_level\":-2"),
     "(current_level: expected an integer >= 0, got -2)"},
    {"{\"version\":2,\"feature\":\"demo\",\"tasks\":{}}",
     "(version: version 2 is not supported"},
    {DOC(OKTASK, ",\"git\":{\"refs\":{\"zerg/demo/worker-0\":\"" OID_A "\"}}"),
     "git.refs.zerg/demo/worker-0: not a full ref name (refs/...)"},
    {DOC(OKTASK, ",\"git\":{\"refs\":{\"refs/heads/x\":\"main\"}}"),
     "git.refs.refs/heads/x: expected a git object id (hex) or null"},
    {DOC(OKTASK, ",\"git\":{\"refs\":[\"refs/heads/x\"]}"),
     "git.refs: expected an object of ref names and ids"},
    {DOC(OKTASK, ",\"started_at\":1770097315"),
     "(started_at: expected an ISO-8601 time or null, got 1770097315)"},
};

/* ---- git.refs: the refs zerg created (DESIGN §18) ---------------------- */

/* `zerg cleanup` deletes only the refs the state lists: losing one on a
 * checkpoint would leave zerg's branch behind, inventing one would delete
 * the user's.  Every checkpoint writes them all back, updates included. */
static void test_git_refs_round_trip(void **ctx)
{
    (void)ctx;
    struct files f;
    files_init(&f);
    struct zerg_graph *g = small_graph();
    struct zerg_state s, back, git;
    struct zerg_err err = {0};
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);
    assert_int_equal(s.git_refs.known, 1);
    strcpy(s.git_base, OID_A);
    strcpy(s.git_branch, "zerg/demo/integration");
    for (int i = 0; i < 20; i++) { /* past the first growth */
        char ref[64];
        snprintf(ref, sizeof ref, "refs/heads/zerg/demo/worker-%d", i);
        assert_int_equal(zerg_state_ref_set(&s, ref, OID_A), 0);
    }
    assert_int_equal(
        zerg_state_ref_set(&s, "refs/heads/zerg/demo/integration", OID_A), 0);
    assert_int_equal(
        zerg_state_ref_set(&s, "refs/heads/zerg/demo/integration", OID_B), 0);
    assert_int_equal(
        zerg_state_ref_set(&s, "refs/zerg/demo/conflicts/A-L1-001/2", OID_C),
        0);
    assert_int_equal(s.git_refs.n, 22); /* the update added nothing */

    round_trip(&s, g, &back);
    assert_int_equal(back.git_refs.known, 1);
    assert_int_equal(back.git_refs.n, 22);
    assert_string_equal(back.git_base, OID_A);
    const struct zerg_state_ref *r =
        zerg_state_ref_find(&back, "refs/heads/zerg/demo/integration");
    assert_non_null(r);
    assert_string_equal(r->oid, OID_B);
    r = zerg_state_ref_find(&back, "refs/zerg/demo/conflicts/A-L1-001/2");
    assert_non_null(r);
    assert_string_equal(r->oid, OID_C);
    assert_non_null(
        zerg_state_ref_find(&back, "refs/heads/zerg/demo/worker-19"));
    assert_null(zerg_state_ref_find(&back, "refs/heads/zerg/demo/worker-20"));
    zerg_state_close(&back);

    /* The file, and its git object alone (cleanup reads no graph). */
    assert_int_equal(zerg_state_save(&s, g, f.path, &err), 0);
    assert_int_equal(zerg_state_load_git(&git, f.path, &err), 0);
    assert_int_equal(git.git_refs.known, 1);
    assert_int_equal(git.git_refs.n, 22);
    assert_string_equal(git.git_base, OID_A);
    assert_string_equal(git.git_branch, "zerg/demo/integration");
    assert_null(git.tasks);
    zerg_state_close(&git);
    zerg_state_close(&s);
    zerg_graph_free(g);
    tu_rmtree(f.dir);
}

/* A run that made none still says so ("refs": {}), so cleanup does not
 * take the state for an older zerg's and go by the names. */
static void test_git_refs_empty_is_known(void **ctx)
{
    (void)ctx;
    struct zerg_graph *g = small_graph();
    struct zerg_state s, back;
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);
    strcpy(s.git_base, OID_A);
    zerg_json *doc = zerg_state_to_json(&s, g);
    const zerg_json *refs = zerg_json_get(zerg_json_get(doc, "git"), "refs");
    assert_non_null(refs);
    assert_int_equal(zerg_json_len(refs), 0);
    zerg_json_free(doc);
    round_trip(&s, g, &back);
    assert_int_equal(back.git_refs.known, 1);
    assert_int_equal(back.git_refs.n, 0);
    zerg_state_close(&back);
    zerg_state_close(&s);
    zerg_graph_free(g);
}

/* Documents of an older zerg: a git object without refs is unknown (its
 * run made refs nobody listed); git null is a run without isolation,
 * which made none. */
static void test_git_refs_older_documents(void **ctx)
{
    (void)ctx;
    struct zerg_graph *g = small_graph();
    struct zerg_state s;
    struct zerg_err err = {0};
    static const struct {
        const char *text;
        int known;
    } cases[] = {
        {DOC(OKTASK, ",\"git\":{\"base\":\"" OID_A
                     "\",\"branch\":\"zerg/demo/integration\"}"),
         0},
        {DOC(OKTASK, ""), 0},
        {DOC(OKTASK, ",\"git\":null"), 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = from_text(&s, g, cases[i].text, NULL, &err);
        if (rc)
            fail_msg("case %zu: %s", i, err.msg);
        assert_int_equal(s.git_refs.known, cases[i].known);
        assert_int_equal(s.git_refs.n, 0);
        zerg_state_close(&s);
    }
    zerg_graph_free(g);
}

static void test_corrupt_table(void **ctx)
{
    (void)ctx;
    struct zerg_graph *g = small_graph();
    size_t n = sizeof corrupt_cases / sizeof corrupt_cases[0];
    assert_true(n >= 10);
    for (size_t i = 0; i < n; i++) {
        struct files f;
        files_init(&f);
        tu_write(f.dir, ".zerg/state/demo.json", corrupt_cases[i].text);
        struct zerg_state s;
        struct zerg_err err = {0};
        int rc = zerg_state_load(&s, g, f.path, NULL, &err);
        if (rc != ZERG_ECORRUPT)
            fail_msg("case %zu: rc %d (%s)", i, rc, err.msg);
        assert_int_equal(err.code, ZERG_ECORRUPT);
        assert_true(tu_contains(err.msg, f.path));
        assert_true(tu_contains(err.msg, corrupt_cases[i].want));
        assert_true(tu_contains(err.msg, "It was not modified."));
        assert_true(tu_contains(err.msg, "to start over"));
        assert_null(strstr(err.msg, ".bak")); /* there is none */
        assert_null(s.tasks);                 /* nothing to close on failure */
        char *now = tu_read(f.path);
        assert_string_equal(now, corrupt_cases[i].text);
        free(now);
        tu_rmtree(f.dir);
    }
    zerg_graph_free(g);
}

/* The corrupt message names the backup and the exact commands. */
static void test_corrupt_message_with_backup(void **ctx)
{
    (void)ctx;
    struct files f;
    files_init(&f);
    struct zerg_graph *g = small_graph();
    struct zerg_state s;
    struct zerg_err err = {0};
    tu_write(f.dir, ".zerg/state/demo.json", DOC(TASK1 "{\"status\":1}", ""));
    tu_write(f.dir, ".zerg/state/demo.json.bak", DOC(OKTASK, ""));
    assert_int_equal(zerg_state_load(&s, g, f.path, NULL, &err), ZERG_ECORRUPT);
    char want[2048];
    snprintf(want, sizeof want,
             "%s is corrupt (tasks.A-L1-001.status: expected a status "
             "string, got 1). It was not modified. The last good copy is "
             "%s: inspect both, then 'cp %s %s' to resume from it, or "
             "remove %s to start over.",
             f.path, f.bak, f.bak, f.path, f.path);
    assert_string_equal(err.msg, want);
    zerg_graph_free(g);
    tu_rmtree(f.dir);
}

/* ---- size and failure injection ----------------------------------------- */

static ssize_t write_enospc(int fd, const void *buf, size_t len)
{
    (void)fd, (void)buf, (void)len;
    errno = ENOSPC;
    return -1;
}

static void test_enospc_keeps_previous_file(void **ctx)
{
    (void)ctx;
    struct files f;
    files_init(&f);
    struct zerg_graph *g = small_graph();
    struct zerg_state s, back;
    struct zerg_err err = {0};
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);
    assert_int_equal(zerg_state_save(&s, g, f.path, &err), 0);
    char *before = tu_read(f.path), *bak_before = tu_read(f.bak);

    fill_state(&s);
    zerg_fsio_ops.write = write_enospc;
    int rc = zerg_state_save(&s, g, f.path, &err);
    zerg_fsio_ops = zerg_fsio_ops_default;
    assert_int_equal(rc, -ENOSPC);
    assert_true(tu_contains(err.msg, f.path));
    assert_true(tu_contains(err.msg, "No space left on device"));

    char *after = tu_read(f.path), *bak_after = tu_read(f.bak);
    assert_string_equal(after, before);
    assert_string_equal(bak_after, bak_before);
    char sd[PATH_MAX + 16];
    snprintf(sd, sizeof sd, "%s/.zerg/state", f.dir);
    assert_int_equal(tu_count_entries(sd), 2);
    /* and it still loads as the old state */
    assert_int_equal(zerg_state_load(&back, g, f.path, NULL, &err), 0);
    assert_int_equal(back.tasks[0].status, ZERG_TASK_PENDING);
    zerg_state_close(&back);

    free(before);
    free(after);
    free(bak_before);
    free(bak_after);
    zerg_state_close(&s);
    zerg_graph_free(g);
    tu_rmtree(f.dir);
}

static void test_too_large_is_corrupt(void **ctx)
{
    (void)ctx;
    struct files f;
    files_init(&f);
    struct zerg_graph *g = small_graph();
    struct zerg_state s;
    struct zerg_err err = {0};
    tu_write(f.dir, ".zerg/state/demo.json", "{");
    /* sparse: 257 MiB of holes costs no disk */
    assert_int_equal(truncate(f.path, (off_t)257 << 20), 0);
    assert_int_equal(zerg_state_load(&s, g, f.path, NULL, &err), ZERG_ECORRUPT);
    assert_true(tu_contains(err.msg, "larger than 256 MiB"));
    struct stat st;
    assert_int_equal(stat(f.path, &st), 0);
    assert_int_equal(st.st_size, (off_t)257 << 20);
    zerg_graph_free(g);
    tu_rmtree(f.dir);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
           (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* 10,000 tasks over 20 levels, each depending on one task a level down. */
static char *big_graph_text(size_t n)
{
    size_t cap = n * 120 + 64, used = 0;
    char *buf = malloc(cap);
    used += (size_t)snprintf(buf, cap, "{\"feature\":\"big\",\"tasks\":[");
    for (size_t i = 0; i < n; i++) {
        int level = (int)(i % 20) + 1;
        char dep[48] = "";
        if (level > 1)
            snprintf(dep, sizeof dep, "\"T-L%d-%05zu\"", level - 1, i - 1);
        used += (size_t)snprintf(buf + used, cap - used,
                                 "%s{\"id\":\"T-L%d-%05zu\",\"level\":%d,"
                                 "\"dependencies\":[%s]}",
                                 i ? "," : "", level, i, level, dep);
    }
    snprintf(buf + used, cap - used, "]}");
    return buf;
}

static void test_ten_thousand_tasks(void **ctx)
{
    (void)ctx;
    struct files f;
    files_init(&f);
    char *text = big_graph_text(10000);
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    int rc = zerg_graph_parse(&g, "big", text, strlen(text), &err);
    if (rc)
        fail_msg("%s", err.msg);
    struct zerg_state s, back;
    assert_int_equal(zerg_state_init(&s, g, NULL, T0), 0);
    fill_state(&s);

    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = zerg_state_save(&s, g, f.path, &err);
    double save_ms = ms_since(&t0);
    if (rc)
        fail_msg("%s", err.msg);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = zerg_state_load(&back, g, f.path, NULL, &err);
    double load_ms = ms_since(&t0);
    if (rc)
        fail_msg("%s", err.msg);
    struct stat st;
    stat(f.path, &st);
    print_message("10,000 tasks: %lld bytes, save %.1f ms, load %.1f ms\n",
                  (long long)st.st_size, save_ms, load_ms);
    assert_state_eq(&s, &back);
    assert_true(zerg_state_level_done(&back, g, 1) == 0);

    zerg_state_close(&back);
    zerg_state_close(&s);
    zerg_graph_free(g);
    free(text);
    tu_rmtree(f.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_init_from_graph),
        cmocka_unit_test(test_round_trip_all_fields),
        cmocka_unit_test(test_round_trip_nulls),
        cmocka_unit_test(test_workers_sorted_by_slot),
        cmocka_unit_test(test_unknown_tasks_dropped),
        cmocka_unit_test(test_levels_kept_as_found),
        cmocka_unit_test(test_level_done),
        cmocka_unit_test(test_save_load_files),
        cmocka_unit_test(test_git_refs_round_trip),
        cmocka_unit_test(test_git_refs_empty_is_known),
        cmocka_unit_test(test_git_refs_older_documents),
        cmocka_unit_test(test_backup_kept),
        cmocka_unit_test(test_corrupt_table),
        cmocka_unit_test(test_corrupt_message_with_backup),
        cmocka_unit_test(test_enospc_keeps_previous_file),
        cmocka_unit_test(test_too_large_is_corrupt),
        cmocka_unit_test(test_ten_thousand_tasks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
