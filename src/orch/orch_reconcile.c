/* orch_reconcile.c - keeping the state document true (FR-4).
 *
 * The orchestrator builds a plain snapshot, asks reconcile.check which
 * divergences it sees, validates each fix against the live state (a policy
 * cannot, say, complete a level that still has running tasks) and applies
 * it.  Light checks run every resilience.reconcile_interval_seconds and
 * look only at what can drift (running tasks, null levels, level marks);
 * thorough ones run before every level transition and on --resume and see
 * every task a fix can concern (in_snapshot says which).  A fix the policy
 * names is parsed into enum zerg_fix_kind by the Lua layer; here it is only
 * checked against the live state.
 *
 * Under worktree isolation a thorough check also reads the integration
 * branch back (DESIGN §13 "Resume"): one merged() call lists the task
 * commits on it, and each complete task says whether the branch still
 * holds its recorded commit.  One that is gone (a reset, a rewrite) is the
 * `rerun` fix: the task runs again.  Its dependents that already ran are
 * left complete: their own commits are on the branch and hold their work
 * (and when they are gone too, the same rule reruns them); the log says
 * they may need a rerun. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch_internal.h"
#include "zerg/err.h"
#include "zerg/workspace.h"

/* ---- what the integration branch holds ------------------------------- */

/* The oids merged() reported, sorted; known is 0 when nothing was read
 * (light check, isolation none, git failed): then no commit is missing. */
struct branch_view {
    char (*oid)[ZERG_GIT_OID_MAX];
    size_t n, cap;
    int known; /* 1 read, 0 not read, -1 out of memory while reading */
};

static void on_commit(void *ud, const struct zerg_ws_found *f)
{
    struct branch_view *b = ud;
    if (b->known < 0 || !f->oid)
        return;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        void *grown = realloc(b->oid, cap * sizeof *b->oid);
        if (!grown) {
            b->known = -1;
            return;
        }
        b->oid = grown, b->cap = cap;
    }
    snprintf(b->oid[b->n++], sizeof *b->oid, "%s", f->oid);
}

static int by_oid(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void branch_read(struct zerg_orch *o, int thorough,
                        struct branch_view *b)
{
    struct zerg_workspace *w = o->o.workspace;
    struct zerg_err err = {0};
    if (!thorough || !w)
        return;
    b->known = 1;
    if (w->ops->merged(w, on_commit, b, &err) < 0 || b->known < 0) {
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN,
                       "reconcile_error", NULL, NULL,
                       "Cannot read %s back (%s): no task is rerun for a "
                       "missing commit this time",
                       w->branch, b->known < 0 ? "out of memory" : err.msg);
        b->known = 0;
        return;
    }
    if (b->n)
        qsort(b->oid, b->n, sizeof *b->oid, by_oid);
}

static int branch_holds(const struct branch_view *b, const char *oid)
{
    return b->n && bsearch(oid, b->oid, b->n, sizeof *b->oid, by_oid);
}

/* ---- the snapshot ----------------------------------------------------- */

static int any_dep_failed(const struct zerg_orch *o, size_t t)
{
    const struct zerg_task *tk = &o->g->tasks[t];
    for (size_t d = 0; d < tk->deps.n; d++) {
        enum zerg_task_status s = o->s->tasks[tk->dep_idx[d]].status;
        if (s == ZERG_TASK_FAILED || s == ZERG_TASK_BLOCKED)
            return 1;
    }
    return 0;
}

/* Which tasks the policy sees.  Light: what can drift (running tasks,
 * tasks without a level).  Thorough adds every task a fix can concern: a
 * pending one with a failed or blocked dependency (block), the failed and
 * blocked ones themselves, and a complete one whose commit is gone from
 * the integration branch (rerun).  The rest -- complete tasks whose work
 * is on the branch, pending ones with nothing failed below them -- have no
 * fix to get; they are counted in each level's `unfinished` instead, and
 * leaving them out keeps a thorough check of 10,000 tasks near the cost
 * of the few that matter. */
static int in_snapshot(const struct zerg_orch *o, size_t t, int thorough,
                       const struct branch_view *b)
{
    const struct zerg_task_state *st = &o->s->tasks[t];
    if (st->level == 0 || st->status == ZERG_TASK_CLAIMED ||
        st->status == ZERG_TASK_IN_PROGRESS)
        return 1;
    if (!thorough)
        return 0;
    switch (st->status) {
    case ZERG_TASK_FAILED:
    case ZERG_TASK_BLOCKED:
        return 1;
    case ZERG_TASK_PENDING:
        return any_dep_failed(o, t);
    case ZERG_TASK_COMPLETE:
        return b->known && st->commit[0] && !branch_holds(b, st->commit);
    default:
        return 0;
    }
}

static zerg_json *task_snapshot(const struct zerg_orch *o, size_t t,
                                const struct branch_view *b)
{
    const struct zerg_task_state *st = &o->s->tasks[t];
    const struct zerg_task *tk = &o->g->tasks[t];
    zerg_json *j = zerg_json_obj();
    zerg_json *deps = zerg_json_arr();

    zerg_json_set_str(j, "status", zerg_task_status_name(st->status));
    zerg_json_set_num(j, "level", st->level);
    zerg_json_set_num(j, "graph_level", tk->level);
    zerg_json_set_num(j, "worker", st->worker_id);
    zerg_json_set_bool(j, "worker_alive", orch_slot_runs(o, st->worker_id, t));
    for (size_t d = 0; d < tk->deps.n; d++)
        zerg_json_push(deps, zerg_json_str(tk->deps.v[d]));
    zerg_json_set(j, "deps", deps);
    if (b->known && st->commit[0]) {
        zerg_json_set_str(j, "commit", st->commit);
        zerg_json_set_bool(j, "merged", branch_holds(b, st->commit));
    }
    return j;
}

static zerg_json *snapshot(const struct zerg_orch *o, int thorough,
                           const struct branch_view *b)
{
    zerg_json *snap = zerg_json_obj(), *tasks = zerg_json_obj();
    zerg_json *levels = zerg_json_arr();

    zerg_json_set_bool(snap, "thorough", thorough);
    zerg_json_set_num(snap, "current_level", o->s->current_level);
    if (o->o.workspace) {
        zerg_json_set_str(snap, "isolation", "worktree");
        zerg_json_set_str(snap, "branch", o->o.workspace->branch);
    }
    for (size_t t = 0; t < o->g->ntasks; t++)
        if (in_snapshot(o, t, thorough, b))
            zerg_json_add(tasks, o->g->tasks[t].id, task_snapshot(o, t, b));
    for (int l = 1; l <= o->g->nlevels; l++) {
        zerg_json *lv = zerg_json_obj();
        size_t unfinished = 0;
        for (size_t i = 0; i < o->g->levels[l].n; i++)
            unfinished += !zerg_task_status_terminal(
                o->s->tasks[o->g->levels[l].tasks[i]].status);
        zerg_json_set_str(lv, "status",
                          zerg_level_status_name(o->s->levels[l].status));
        zerg_json_set_num(lv, "tasks", (double)o->g->levels[l].n);
        zerg_json_set_num(lv, "unfinished", (double)unfinished);
        zerg_json_push(levels, lv);
    }
    zerg_json_set(snap, "tasks", tasks);
    zerg_json_set(snap, "levels", levels);
    return snap;
}

/* ---- applying fixes --------------------------------------------------- */

/* Level lvl has unfinished work again: not complete, current again if the
 * run had moved past it, its cursor and quality gates looked at anew. */
static void level_reopen(struct zerg_orch *o, int lvl)
{
    struct zerg_level_state *ls = &o->s->levels[lvl];
    zerg_level_apply(ls, ZERG_LEVEL_EV_REOPEN, 0);
    if (o->s->current_level > lvl)
        o->s->current_level = lvl;
    o->level_cursor[lvl] = 0;
    if (o->gate_level >= lvl && o->gate_pid <= 0)
        o->gate_level = 0; /* the rebuilt tip is gated again */
}

/* The complete tasks that depend on t, appended to note as "A, B" (cut
 * to fit); how many. */
static int complete_dependents(const struct zerg_orch *o, size_t t, char *note,
                               size_t size)
{
    int n = 0;
    size_t off = strlen(note);
    for (size_t u = 0; u < o->g->ntasks; u++) {
        const struct zerg_task *tk = &o->g->tasks[u];
        if (o->s->tasks[u].status != ZERG_TASK_COMPLETE)
            continue;
        for (size_t d = 0; d < tk->deps.n; d++)
            if (tk->dep_idx[d] == t) {
                n++;
                if (off < size)
                    off += (size_t)snprintf(note + off, size - off, "%s%s",
                                            n > 1 ? ", " : "", tk->id);
                break;
            }
    }
    return n;
}

/* rerun: the task's work is gone from the branch; it runs again. */
static int rerun(struct zerg_orch *o, const struct zerg_fix *f, size_t t,
                 const struct branch_view *b)
{
    struct zerg_task_state *st = &o->s->tasks[t];
    if (st->status != ZERG_TASK_COMPLETE || !st->commit[0] || !b->known ||
        branch_holds(b, st->commit))
        return 0;
    struct zerg_task_move m = {.error = f->reason, .reason = "rerun"};
    if (orch_task_move(o, t, ZERG_TASK_EV_REOPEN, &m) != 0)
        return 0;
    o->retry_at_mono_ns[t] = 0;
    level_reopen(o, o->g->tasks[t].level);
    return 1;
}

/* A task fix if it is valid now; 1 when something changed. */
static int apply_task_fix(struct zerg_orch *o, const struct zerg_fix *f,
                          size_t t, const struct branch_view *b)
{
    struct zerg_task_state *st = &o->s->tasks[t];
    switch (f->kind) {
    case ZERG_FIX_REQUEUE:
        if ((st->status != ZERG_TASK_CLAIMED &&
             st->status != ZERG_TASK_IN_PROGRESS) ||
            orch_slot_runs(o, st->worker_id, t))
            return 0;
        o->s->metrics.task_reassignments++;
        orch_requeue(o, t, "requeued by reconciliation");
        return 1;
    case ZERG_FIX_SET_LEVEL:
        if (f->level < 1 || f->level > o->g->nlevels || st->level == f->level)
            return 0;
        st->level = f->level;
        return 1;
    case ZERG_FIX_BLOCK:
        if (!zerg_task_move_legal(st->status, ZERG_TASK_EV_BLOCK) ||
            !any_dep_failed(o, t))
            return 0;
        orch_block_dependents(o);
        return 1;
    case ZERG_FIX_RERUN:
        return rerun(o, f, t, b);
    default:
        return 0;
    }
}

/* A level fix if it is valid now; 1 when something changed. */
static int apply_level_fix(struct zerg_orch *o, const struct zerg_fix *f)
{
    struct zerg_state *s = o->s;
    if (f->level < 1 || f->level > o->g->nlevels)
        return 0;
    struct zerg_level_state *ls = &s->levels[f->level];
    int done = zerg_state_level_done(s, o->g, f->level);
    switch (f->kind) {
    case ZERG_FIX_REOPEN_LEVEL:
        if (done || ls->status != ZERG_LEVEL_COMPLETE)
            return 0;
        level_reopen(o, f->level);
        return 1;
    case ZERG_FIX_COMPLETE_LEVEL:
        /* The current level is completed by the level transition itself;
         * this fix is for lower levels whose mark was lost. */
        if (!done || f->level >= s->current_level)
            return 0;
        return zerg_level_apply(ls, ZERG_LEVEL_EV_COMPLETE, orch_wall_ns(o));
    default:
        return 0;
    }
}

static int apply_fix(struct zerg_orch *o, const struct zerg_fix *f,
                     const struct branch_view *b)
{
    if (!f->task[0])
        return apply_level_fix(o, f);
    ssize_t t = zerg_graph_find(o->g, f->task);
    return t >= 0 && apply_task_fix(o, f, (size_t)t, b);
}

/* What the log of an applied fix adds, once every fix is applied: for a
 * rerun, the dependents still complete (the ones whose own commits are
 * gone too were rerun by their own fix). */
static void fix_note(const struct zerg_orch *o, const struct zerg_fix *f,
                     char *note, size_t size)
{
    ssize_t t = f->kind == ZERG_FIX_RERUN ? zerg_graph_find(o->g, f->task) : -1;
    note[0] = '\0';
    if (t < 0)
        return;
    snprintf(note, size,
             "dependents that ran on that work are kept and may "
             "need a rerun too: ");
    if (!complete_dependents(o, (size_t)t, note, size))
        note[0] = '\0';
}

static void log_fix(struct zerg_orch *o, const struct zerg_fix *f,
                    const char *kind)
{
    char note[400];
    fix_note(o, f, note, sizeof note);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "fix", f->fix);
    zerg_json_set_str(data, "reason", f->reason);
    zerg_json_set_num(data, "level", f->level);
    zerg_json_set_str(data, "check", kind);
    if (note[0])
        zerg_json_set_str(data, "note", note);
    char what[96];
    if (f->task[0])
        snprintf(what, sizeof what, "task %s", f->task);
    else
        snprintf(what, sizeof what, "level %d", f->level);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN,
                   "state_reconcile_fix", f->task[0] ? f->task : NULL, data,
                   "Reconciliation fixed %s: %s (%s)%s%s", what, f->fix,
                   f->reason, note[0] ? "; " : "", note);
}

int orch_reconcile(struct zerg_orch *o, int thorough, int64_t now)
{
    struct zerg_fix *fixes = NULL;
    size_t nfixes = 0, applied = 0;
    zerg_json *why = NULL;
    enum zerg_log_level lvl = thorough ? ZERG_LOG_INFO : ZERG_LOG_DEBUG;
    const char *kind = thorough ? "thorough" : "light";

    (void)now;
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, lvl, "state_reconcile_start", NULL,
                   NULL, "State reconciliation (%s) started", kind);
    /* How long it took is a measurement, not a decision: the clock the
     * orchestrator was given, read for the log only. */
    int64_t t0 = zerg_clock_mono(o->o.clock);
    struct branch_view b = {0};
    branch_read(o, thorough, &b);
    zerg_json *snap = snapshot(o, thorough, &b);
    size_t checked = zerg_json_len(zerg_json_get(snap, "tasks"));
    zerg_policy_reconcile(o->o.policy, snap, &fixes, &nfixes, &why);
    zerg_json_free(snap);
    zerg_json_free(why);
    for (size_t i = 0; i < nfixes; i++) {
        /* fix[0] marks a fix that did not apply, for the log below */
        if (!apply_fix(o, &fixes[i], &b)) {
            fixes[i].fix[0] = '\0';
            continue;
        }
        applied++;
        o->s->metrics.reconcile_fixes++;
        orch_mark_dirty(o);
    }
    for (size_t i = 0; i < nfixes; i++)
        if (fixes[i].fix[0])
            log_fix(o, &fixes[i], kind);
    free(fixes);
    free(b.oid);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "fixes", (double)applied);
    zerg_json_set_num(data, "duration_ms",
                      ORCH_MS(zerg_clock_mono(o->o.clock) - t0));
    zerg_json_set_num(data, "tasks_checked", (double)checked);
    zerg_json_set_str(data, "check", kind);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, applied ? ZERG_LOG_INFO : lvl,
                   "state_reconcile_complete", NULL, data,
                   "State reconciliation (%s) complete: %zu fix%s", kind,
                   applied, applied == 1 ? "" : "es");
    return (int)applied;
}
