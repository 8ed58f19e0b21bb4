/* orch_fixture.c - the orchestrator tests' fixture (orch_fixture.h): a
 * fake launcher, an injected clock, worker files written by hand and an
 * in-memory workspace standing in for git. */
#include "orch_fixture.h"

#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/orchestrator.h"

const char graph3[] =
    "{\"feature\":\"t\",\"tasks\":["
    "{\"id\":\"A-L1-001\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"A-L1-002\",\"level\":1,\"command\":\"true\"},"
    "{\"id\":\"A-L2-001\",\"level\":2,\"dependencies\":[\"A-L1-001\"],"
    "\"command\":\"true\"}]}";

/* ---- fake launcher ---- */

static int f_spawn(struct zerg_launcher *l, const struct zerg_spawn_req *req,
                   struct zerg_proc *out, int *cls, struct zerg_err *err)
{
    struct fake *f = (struct fake *)l;
    if (f->spawns < 64)
        f->spawn_times[f->spawns] = *f->now;
    f->spawns++;
    snprintf(f->last_workspace, sizeof f->last_workspace, "%s",
             req->workspace ? req->workspace : "");
    if (f->fail_spawns > 0) {
        f->fail_spawns--;
        *cls = f->permanent ? ZERG_SPAWN_PERMANENT : ZERG_SPAWN_TRANSIENT;
        return zerg_err_set(err, -EAGAIN, "fake spawn failure");
    }
    memset(out, 0, sizeof *out);
    out->pid = f->next_pid++;
    out->slot = req->slot;
    out->epoch = req->epoch;
    return 0;
}

static int f_kill(struct zerg_launcher *l, const struct zerg_proc *p, int sig)
{
    struct fake *f = (struct fake *)l;
    (void)p;
    f->kills++;
    f->last_sig = sig;
    return 0;
}

static void f_reaped(struct zerg_launcher *l, const struct zerg_proc *p,
                     int wstatus, struct zerg_exit_info *info)
{
    (void)l, (void)p;
    zerg_exit_info_from_status(wstatus, info);
}

static int f_cleanup(struct zerg_launcher *l, const char *f, const char *r)
{
    (void)l, (void)f, (void)r;
    return 0;
}

static void f_free(struct zerg_launcher *l)
{
    (void)l;
}

static const struct zerg_launcher_ops fake_ops = {
    .name = "fake",
    .spawn = f_spawn,
    .cancel = f_kill,
    .reaped = f_reaped,
    .cleanup = f_cleanup,
    .free = f_free,
};

/* ---- fake workspace ---- */

void fake_ws_oid(char buf[ZERG_OID_MAX], int n)
{
    snprintf(buf, ZERG_OID_MAX, "%040x", (unsigned)n);
}

void fake_commit_oid(char buf[ZERG_OID_MAX], const char *task, int attempt)
{
    uint32_t h = 2166136261u; /* FNV-1a: distinct per task, stable */
    for (const char *c = task; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    snprintf(buf, ZERG_OID_MAX, "c0c0%028x%08x", (unsigned)attempt,
             (unsigned)h);
}

void fake_ws_tree(char buf[ZERG_OID_MAX], int n)
{
    snprintf(buf, ZERG_OID_MAX, "7ee%037x", (unsigned)n);
}

const char *fake_ws_tip(const struct fake_ws *w)
{
    static char buf[ZERG_OID_MAX];
    fake_ws_oid(buf, w->tip_n);
    return buf;
}

void fake_ws_script(struct fake_ws *w, const char *task,
                    enum fake_merge_kind kind, const char *text)
{
    assert_true(w->nsteps < FAKE_WS_MAX);
    struct fake_merge_step *s = &w->steps[w->nsteps++];
    snprintf(s->task, sizeof s->task, "%s", task);
    s->kind = kind;
    snprintf(s->text, sizeof s->text, "%s", text ? text : "");
    s->used = 0;
}

void fake_ws_found(struct fake_ws *w, int slot, const char *task, int attempt,
                   const char *run_id, const char *oid)
{
    assert_true(w->nfound < FAKE_WS_MAX);
    struct fake_found *f = &w->found[w->nfound++];
    f->slot = slot;
    snprintf(f->task, sizeof f->task, "%s", task);
    f->attempt = attempt;
    snprintf(f->run_id, sizeof f->run_id, "%s", run_id);
    snprintf(f->oid, sizeof f->oid, "%s", oid);
}

int fake_ws_merges_of(const struct fake_ws *w, const char *task)
{
    int n = 0;
    for (int i = 0; i < w->nmerges; i++)
        n += !task || !strcmp(w->merges[i].task, task);
    return n;
}

static int w_tip(struct zerg_workspace *zw, char oid[ZERG_GIT_OID_MAX],
                 struct zerg_err *err)
{
    struct fake_ws *w = (struct fake_ws *)zw;
    (void)err;
    w->ntips++;
    fake_ws_oid(oid, w->tip_n);
    return 0;
}

static int w_worktree(struct zerg_workspace *zw, int slot, char *buf, size_t n,
                      char *cwd, size_t cwd_n, struct zerg_err *err)
{
    struct fake_ws *w = (struct fake_ws *)zw;
    (void)err;
    if (w->nworktrees < FAKE_WS_MAX)
        w->worktree_slots[w->nworktrees] = slot;
    w->nworktrees++;
    snprintf(buf, n, "%s/.zerg-worktrees/t/worker-%d", w->root, slot);
    if (cwd)
        snprintf(cwd, cwd_n, "%s", buf);
    return 0;
}

static int w_changed(struct zerg_workspace *zw, const char *commit,
                     const char *base, char **paths, struct zerg_err *err)
{
    struct fake_ws *w = (struct fake_ws *)zw;
    w->nchanged++;
    snprintf(w->changed_commit, sizeof w->changed_commit, "%s", commit);
    snprintf(w->changed_base, sizeof w->changed_base, "%s", base);
    *paths = strdup(w->changed);
    return *paths ? 0 : zerg_err_set(err, -ENOMEM, "out of memory");
}

static struct fake_merge_step *next_step(struct fake_ws *w, const char *task)
{
    for (int i = 0; i < w->nsteps; i++)
        if (!w->steps[i].used && !strcmp(w->steps[i].task, task))
            return &w->steps[i];
    return NULL;
}

static void record_merge(struct fake_ws *w, const struct zerg_merge_req *req)
{
    if (w->nmerges >= FAKE_WS_MAX) {
        w->nmerges++;
        return;
    }
    struct fake_merge_call *c = &w->merges[w->nmerges++];
    snprintf(c->task, sizeof c->task, "%s", req->task_id);
    c->attempt = req->attempt;
    c->worker = req->worker;
    snprintf(c->run_id, sizeof c->run_id, "%s", req->run_id);
    snprintf(c->commit, sizeof c->commit, "%s", req->commit);
    snprintf(c->title, sizeof c->title, "%s", req->title);
    ssize_t t = w->graph ? zerg_graph_find(w->graph, req->task_id) : -1;
    c->status = t >= 0 ? w->state->tasks[t].status : ZERG_TASK_PENDING;
}

static int w_merge(struct zerg_workspace *zw, const struct zerg_merge_req *req,
                   struct zerg_merge_out *out, struct zerg_err *err)
{
    struct fake_ws *w = (struct fake_ws *)zw;
    struct fake_merge_step *s = next_step(w, req->task_id);
    enum fake_merge_kind kind = s ? s->kind : FAKE_MERGE_DONE;
    record_merge(w, req);
    if (s)
        s->used = 1;
    memset(out, 0, sizeof *out);
    switch (kind) {
    case FAKE_MERGE_ERROR:
        return zerg_err_set(err, -EIO, "%s", s->text);
    case FAKE_MERGE_CONFLICT:
        out->status = ZERG_MERGE_CONFLICT;
        out->conflicts = strdup(s->text);
        break;
    case FAKE_MERGE_ALREADY:
        out->status = ZERG_MERGE_ALREADY;
        break;
    case FAKE_MERGE_DONE:
        out->status = ZERG_MERGE_DONE;
        w->tip_n++;
        break;
    }
    fake_ws_oid(out->tip, w->tip_n);
    if (kind == FAKE_MERGE_DONE)
        fake_ws_tree(out->tree, w->tip_n);
    if (kind == FAKE_MERGE_DONE && w->nmerges <= FAKE_WS_MAX)
        snprintf(w->merges[w->nmerges - 1].landed, sizeof w->merges[0].landed,
                 "%s", out->tip);
    return 0;
}

static int w_keep(struct zerg_workspace *zw, enum zerg_ws_kept kind,
                  const char *task, int attempt, const char *commit,
                  struct zerg_err *err)
{
    struct fake_ws *w = (struct fake_ws *)zw;
    (void)err;
    if (w->nkeeps < FAKE_WS_MAX) {
        struct fake_keep_call *k = &w->keeps[w->nkeeps];
        k->kind = kind;
        snprintf(k->task, sizeof k->task, "%s", task);
        k->attempt = attempt;
        snprintf(k->commit, sizeof k->commit, "%s", commit);
    }
    w->nkeeps++;
    return 0;
}

/* Calls fn for the findings of slot (-1: the integration branch). */
static int report(struct fake_ws *w, int slot, zerg_ws_found_fn fn, void *ud)
{
    int n = 0;
    for (int i = 0; i < w->nfound; i++) {
        const struct fake_found *f = &w->found[i];
        if (f->slot != slot)
            continue;
        struct zerg_ws_found out = {.task_id = f->task,
                                    .attempt = f->attempt,
                                    .run_id = f->run_id,
                                    .oid = f->oid};
        fn(ud, &out);
        n++;
    }
    return n;
}

static int w_merged(struct zerg_workspace *zw, zerg_ws_found_fn fn, void *ud,
                    struct zerg_err *err)
{
    struct fake_ws *w = (struct fake_ws *)zw;
    (void)err;
    report(w, -1, fn, ud);
    for (int i = 0; i < w->nmerges && i < FAKE_WS_MAX; i++) {
        const struct fake_merge_call *m = &w->merges[i];
        struct zerg_ws_found out = {.task_id = m->task,
                                    .attempt = m->attempt,
                                    .run_id = m->run_id,
                                    .oid = m->landed};
        if (m->landed[0])
            fn(ud, &out);
    }
    return 0;
}

static int w_worker_head(struct zerg_workspace *zw, int slot,
                         zerg_ws_found_fn fn, void *ud, struct zerg_err *err)
{
    (void)err;
    return report((struct fake_ws *)zw, slot, fn, ud) ? 0 : ZERG_ENOTFOUND;
}

static int w_gate_tree(struct zerg_workspace *zw, char *buf, size_t n,
                       struct zerg_err *err)
{
    struct fake_ws *w = (struct fake_ws *)zw;
    (void)err;
    w->ngates++;
    snprintf(buf, n, "%s", w->root);
    return 0;
}

static void w_free(struct zerg_workspace *zw)
{
    (void)zw; /* the fixture owns it */
}

static const struct zerg_workspace_ops fake_ws_ops = {
    .tip = w_tip,
    .worktree = w_worktree,
    .changed = w_changed,
    .merge = w_merge,
    .keep = w_keep,
    .merged = w_merged,
    .worker_head = w_worker_head,
    .gate_tree = w_gate_tree,
    .free = w_free,
};

static struct fake_ws *fake_ws_new(const char *root)
{
    struct fake_ws *w = calloc(1, sizeof *w);
    assert_non_null(w);
    w->base.ops = &fake_ws_ops;
    w->tip_n = 1;
    fake_ws_oid(w->base.base, w->tip_n);
    snprintf(w->base.branch, sizeof w->base.branch, "zerg/t/integration");
    snprintf(w->root, sizeof w->root, "%s", root);
    return w;
}

/* ---- fixture ---- */

/* The orchestrator's clock reads the fixture's time: monotonic `now`,
 * and a wall clock that moves with it. */
static int64_t fx_mono(void *ctx)
{
    return ((struct fx *)ctx)->now;
}
static int64_t fx_wall(void *ctx)
{
    return 1700000000 * (int64_t)1000000000 + ((struct fx *)ctx)->now;
}

void fx_start(struct fx *x, int workers, int resume)
{
    struct zerg_err err = {0};
    x->clock = (struct zerg_clock){fx_mono, fx_wall, x};
    struct zerg_orch_opts oo = {
        .project = x->dir,
        .feature = "t",
        .zerg_bin = "zerg",
        .cfg = &x->cfg,
        .graph = x->g,
        .state = &x->s,
        .policy = x->pol,
        .launcher = &x->fake.base,
        .workspace = x->ws ? &x->ws->base : NULL,
        .prev_run_id = x->prev_run_id[0] ? x->prev_run_id : NULL,
        .log = x->log,
        .clock = &x->clock,
        .workers = workers,
        .resume = resume,
        .checkpoint_ns = 1,
    };
    x->o = zerg_orch_new(&oo, x->now, &err);
    if (!x->o)
        fail_msg("zerg_orch_new: %s", err.msg);
}

static struct fx *fx_make(const char *graph, int workers, int resume,
                          int with_ws)
{
    struct fx *x = calloc(1, sizeof *x);
    struct zerg_err err = {0};
    char path[400];

    assert_non_null(x);
    snprintf(x->dir, sizeof x->dir, "%s", tu_mkdtemp());
    snprintf(x->state_dir, sizeof x->state_dir, "%s/.zerg/state", x->dir);
    snprintf(x->run_dir, sizeof x->run_dir, "%s/t", x->state_dir);
    zerg_fsio_mkdirs(x->state_dir, 0755);
    zerg_config_defaults(&x->cfg);
    x->cfg.heartbeat_interval_ns = S(1);
    x->cfg.heartbeat_stale_threshold_ns = S(5);
    x->cfg.task_stale_timeout_ns = S(20);
    x->cfg.spawn_ready_timeout_ns = S(10);
    x->cfg.reconcile_interval_ns = S(60);
    assert_int_equal(
        zerg_graph_parse(&x->g, "graph", graph, strlen(graph), &err), 0);
    snprintf(path, sizeof path, "%s/.zerg", x->dir);
    x->log = zerg_log_open(path, NULL, &err);
    assert_non_null(x->log);
    x->pol = zerg_policy_new(NULL, &x->cfg, x->log, &err);
    assert_non_null(x->pol);
    snprintf(path, sizeof path, "%s/t.json", x->state_dir);
    if (resume) {
        assert_int_equal(zerg_state_load(&x->s, x->g, path, NULL, &err), 0);
    } else {
        assert_int_equal(zerg_state_init(&x->s, x->g, "t", 0), 0);
        snprintf(x->s.run_id, sizeof x->s.run_id, "run1");
    }
    if (with_ws) {
        x->ws = fake_ws_new(x->dir);
        x->ws->state = &x->s;
        x->ws->graph = x->g;
    }
    x->fake.base.ops = &fake_ops;
    x->fake.base.cfg = &x->cfg;
    x->fake.next_pid = 1000;
    x->fake.now = &x->now;
    x->now = S(100);
    fx_start(x, workers, resume);
    return x;
}

struct fx *fx_new(const char *graph, int workers, int resume)
{
    return fx_make(graph, workers, resume, 0);
}

struct fx *fx_new_ws(const char *graph, int workers, int resume)
{
    return fx_make(graph, workers, resume, 1);
}

static void reload(struct fx *x)
{
    char path[400];
    struct zerg_err err = {0};

    zerg_orch_free(x->o);
    x->o = NULL;
    zerg_state_close(&x->s);
    snprintf(path, sizeof path, "%s/t.json", x->state_dir);
    assert_int_equal(zerg_state_load(&x->s, x->g, path, NULL, &err), 0);
}

void fx_restart(struct fx *x, int workers)
{
    reload(x);
    fx_start(x, workers, 1);
}

void fx_restart_run(struct fx *x, int workers, const char *run_id)
{
    reload(x);
    snprintf(x->prev_run_id, sizeof x->prev_run_id, "%s", x->s.run_id);
    snprintf(x->s.run_id, sizeof x->s.run_id, "%s", run_id);
    fx_start(x, workers, 1);
}

void fx_free(struct fx *x)
{
    zerg_orch_free(x->o);
    zerg_policy_free(x->pol);
    zerg_log_close(x->log);
    zerg_state_close(&x->s);
    zerg_graph_free(x->g);
    zerg_config_free(&x->cfg);
    tu_rmtree(x->dir);
    free(x->ws);
    free(x);
}

void fx_policies(struct fx *x, const char *file, const char *text)
{
    struct zerg_err err = {0};
    char dir[400];
    snprintf(dir, sizeof dir, "%s/.zerg/policies", x->dir);
    zerg_fsio_mkdirs(dir, 0755);
    tu_write(dir, file, text);
    zerg_orch_free(x->o);
    zerg_policy_free(x->pol);
    x->pol = zerg_policy_new(dir, &x->cfg, x->log, &err);
    assert_non_null(x->pol);
    fx_start(x, 1, 0);
}

/* ---- driving it ---- */

void tick(struct fx *x)
{
    zerg_orch_tick(x->o, x->now);
}

void advance(struct fx *x, double seconds)
{
    x->now += S(seconds);
    tick(x);
}

static int64_t hb_seq[16];

void heartbeat_full(struct fx *x, int slot, const char *task, int attempt,
                    const char *step, int pct, int64_t input_tokens,
                    double cost_usd);

void heartbeat(struct fx *x, int slot, const char *task, int attempt,
               const char *step, int pct)
{
    heartbeat_full(x, slot, task, attempt, step, pct, 0, 0);
}

void heartbeat_spend(struct fx *x, int slot, const char *task, int attempt,
                     int64_t input_tokens, double cost_usd)
{
    heartbeat_full(x, slot, task, attempt, "command", 10, input_tokens,
                   cost_usd);
}

void heartbeat_full(struct fx *x, int slot, const char *task, int attempt,
                    const char *step, int pct, int64_t input_tokens,
                    double cost_usd)
{
    struct zerg_heartbeat hb = {0};
    hb.input_tokens = input_tokens;
    hb.cost_usd = cost_usd;
    char name[64];
    hb.worker_id = slot;
    hb.epoch = x->o->slots[slot].proc.epoch;
    hb.seq = ++hb_seq[slot];
    snprintf(hb.task_id, sizeof hb.task_id, "%s", task ? task : "");
    hb.attempt = attempt;
    snprintf(hb.step, sizeof hb.step, "%s", step);
    hb.progress_pct = pct;
    assert_int_equal(zerg_proto_write_heartbeat(x->run_dir, &hb, NULL), 0);
    snprintf(name, sizeof name, "heartbeat-%d.json", slot);
    zerg_orch_file_changed(x->o, name, x->now);
}

static void put_result_cost(struct fx *x, int slot, uint64_t epoch,
                            const char *task, int attempt, int ok,
                            const char *base, const char *commit, double cost)
{
    struct zerg_result r = {0};
    r.cost_usd = cost;
    r.epoch = epoch;
    r.worker_id = slot;
    snprintf(r.task, sizeof r.task, "%s", task);
    r.attempt = attempt;
    r.outcome = ok ? ZERG_OUTCOME_COMPLETE : ZERG_OUTCOME_FAILED;
    snprintf(r.stage, sizeof r.stage, "%s", "command");
    r.exit_code = ok ? 0 : 1;
    snprintf(r.base, sizeof r.base, "%s", base);
    snprintf(r.commit, sizeof r.commit, "%s", commit);
    assert_int_equal(zerg_proto_write_result(x->run_dir, &r, NULL), 0);
}

static void put_result(struct fx *x, int slot, uint64_t epoch, const char *task,
                       int attempt, int ok, const char *base,
                       const char *commit)
{
    put_result_cost(x, slot, epoch, task, attempt, ok, base, commit, 0);
}

void write_result(struct fx *x, int slot, uint64_t epoch, const char *task,
                  int attempt, int ok)
{
    put_result(x, slot, epoch, task, attempt, ok, "", "");
}

static void tell_result(struct fx *x, const char *task, int attempt)
{
    char name[128];
    snprintf(name, sizeof name, "result-%s-%d.json", task, attempt);
    zerg_orch_file_changed(x->o, name, x->now);
}

void result(struct fx *x, int slot, uint64_t epoch, const char *task,
            int attempt, int ok)
{
    write_result(x, slot, epoch, task, attempt, ok);
    tell_result(x, task, attempt);
}

void result_commit(struct fx *x, int slot, uint64_t epoch, const char *task,
                   int attempt, const char *base, const char *commit)
{
    put_result(x, slot, epoch, task, attempt, 1, base, commit);
    tell_result(x, task, attempt);
}

void result_cost(struct fx *x, int slot, const char *task, int attempt,
                 double cost_usd)
{
    put_result_cost(x, slot, x->o->slots[slot].proc.epoch, task, attempt, 1, "",
                    "", cost_usd);
    tell_result(x, task, attempt);
}

void exited(struct fx *x, int slot, int wstatus)
{
    zerg_orch_child_exited(x->o, x->o->slots[slot].proc.pid, wstatus, x->now);
}

enum zerg_task_status status_of(struct fx *x, const char *id)
{
    return x->s.tasks[zerg_graph_find(x->g, id)].status;
}

struct zerg_task_state *task_of(struct fx *x, const char *id)
{
    return &x->s.tasks[zerg_graph_find(x->g, id)];
}

void start_ready(struct fx *x)
{
    tick(x);
    for (int i = 0; i < x->o->nslots; i++) {
        assert_true(slot_alive(&x->o->slots[i]));
        heartbeat(x, i, NULL, 0, "ready", 0);
        assert_true(slot_ready(&x->o->slots[i]));
    }
    tick(x);
}

void complete_slot(struct fx *x, int slot)
{
    int t = x->o->slots[slot].task;
    assert_true(t >= 0);
    const char *id = x->g->tasks[t].id;
    int attempt = x->s.tasks[t].attempt;
    heartbeat(x, slot, id, attempt, "command", 10);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_IN_PROGRESS);
    result(x, slot, x->o->slots[slot].proc.epoch, id, attempt, 1);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_COMPLETE);
}

int commit_slot(struct fx *x, int slot)
{
    int t = x->o->slots[slot].task;
    assert_true(t >= 0);
    const char *id = x->g->tasks[t].id;
    int attempt = x->s.tasks[t].attempt;
    struct zerg_assign a = assign_of(x, slot);
    char commit[ZERG_OID_MAX];
    assert_string_equal(a.task, id);
    fake_commit_oid(commit, id, attempt);
    heartbeat(x, slot, id, attempt, "command", 10);
    assert_int_equal(x->s.tasks[t].status, ZERG_TASK_IN_PROGRESS);
    result_commit(x, slot, x->o->slots[slot].proc.epoch, id, attempt, a.base,
                  commit);
    return t;
}

void finish_workers(struct fx *x)
{
    for (int i = 0; i < x->o->nslots; i++)
        if (slot_alive(&x->o->slots[i]))
            exited(x, i, 0);
    tick(x);
}

struct zerg_assign assign_of(struct fx *x, int slot)
{
    struct zerg_assign a;
    memset(&a, 0, sizeof a);
    assert_int_equal(zerg_proto_read_assign(x->run_dir, slot, &a), 0);
    return a;
}

char *fx_events(struct fx *x)
{
    char path[512];
    snprintf(path, sizeof path, "%s/.zerg/monitor.jsonl", x->dir);
    char *log = tu_read(path);
    assert_non_null(log);
    return log;
}

/* ---- event lines, as a worker would send them ---- */

int64_t fx_line_seq = 1000000;

void fx_hb_line(struct fx *x, int slot, uint64_t epoch, const char *task,
                int attempt, const char *step)
{
    fx_hb_line_group(x, slot, epoch, task, attempt, step, 0);
}

void fx_hb_line_group(struct fx *x, int slot, uint64_t epoch, const char *task,
                      int attempt, const char *step, int task_pgid)
{
    struct zerg_heartbeat hb = {.worker_id = slot,
                                .epoch = epoch,
                                .seq = ++fx_line_seq,
                                .attempt = attempt,
                                .task_pgid = task_pgid};
    snprintf(hb.task_id, sizeof hb.task_id, "%s", task ? task : "");
    snprintf(hb.step, sizeof hb.step, "%s", step);
    char *line;
    size_t len;
    assert_int_equal(zerg_proto_event_heartbeat(&hb, &line, &len), 0);
    orch_stdio_line(x->o, slot, epoch, line, len - 1, x->now);
    free(line);
}

void fx_result_line(struct fx *x, int slot, uint64_t epoch, const char *task,
                    int attempt)
{
    struct zerg_result r = {.epoch = epoch,
                            .worker_id = slot,
                            .attempt = attempt,
                            .outcome = ZERG_OUTCOME_COMPLETE};
    snprintf(r.task, sizeof r.task, "%s", task);
    snprintf(r.stage, sizeof r.stage, "command");
    char *line;
    size_t len;
    assert_int_equal(zerg_proto_event_result(&r, &line, &len), 0);
    orch_stdio_line(x->o, slot, epoch, line, len - 1, x->now);
    free(line);
}

int fx_count_events(struct fx *x, const char *event)
{
    char *log = fx_events(x), want[96];
    snprintf(want, sizeof want, "\"event\":\"%s\"", event);
    int n = 0;
    for (const char *p = log; p && (p = strstr(p, want)); p += strlen(want))
        n++;
    free(log);
    return n;
}
