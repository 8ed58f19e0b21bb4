/* orch_intake.c - files that reach the orchestrator: heartbeats and
 * results from workers, retry requests from `zerg retry`.
 *
 * A heartbeat turns into slot events (FIRST_HB, TASK_DONE for a result
 * that was lost) and task progress.  A result is applied only if it is
 * the live assignment: its (epoch, attempt) must be the task's own
 * (fencing), so a worker presumed dead cannot complete or fail a task that
 * was reassigned.  Applied results stay on disk until the checkpoint that
 * records them is durable: they are the journal that --resume replays.
 * Under state.durability: batch workers write them without fsync and the
 * orchestrator makes them durable here, one sync per batch.  A result
 * applied from its stdout line is not read again from its file when that
 * file's event follows (line_file_event): the worker wrote the file
 * first, and the batch sync covers it without opening it. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orch_internal.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/offload.h"
#include "zerg/retry.h"

/* ---- the journal: applied results deleted after the next checkpoint -- */

static void defer_unlink(struct zerg_orch *o, const char *path)
{
    char *copy = strdup(path);
    if (copy && o->nunlink == o->unlink_cap) {
        size_t cap = o->unlink_cap ? o->unlink_cap * 2 : 16;
        void *p = realloc(o->pending_unlink, cap * sizeof *o->pending_unlink);
        if (p) {
            o->pending_unlink = p;
            o->unlink_cap = cap;
        }
    }
    if (!copy || o->nunlink == o->unlink_cap) {
        unlink(path); /* out of memory: lose the journal, not the run */
        free(copy);
        return;
    }
    o->pending_unlink[o->nunlink++] = copy;
}

void orch_flush_unlinks(struct zerg_orch *o, size_t n)
{
    if (n > o->nunlink)
        n = o->nunlink;
    for (size_t i = 0; i < n; i++) {
        if (o->offload) {
            zerg_offload_unlink(o->offload, o->pending_unlink[i]);
            continue;
        }
        unlink(o->pending_unlink[i]);
        free(o->pending_unlink[i]);
    }
    /* Those applied after the save began wait for the next one. */
    if (n && n < o->nunlink)
        memmove(o->pending_unlink, o->pending_unlink + n,
                (o->nunlink - n) * sizeof *o->pending_unlink);
    o->nunlink -= n;
    o->nsynced = o->nsynced > n ? o->nsynced - n : 0;
    /* what a sync in flight covered is deleted, or moved down */
    o->sync_upto = o->sync_upto > n ? o->sync_upto - n : 0;
}

/* ---- group commit (state.durability: batch, DESIGN §16) --------------- */

/* The batch window: 10 ms, or 4x what the last sync cost, so that syncs
 * take at most ~20 % of the disk's time, or of the loop's where it syncs
 * inline, however slow the disk (a syncfs also waits for whatever else
 * is dirty on the filesystem). */
static int64_t sync_gap(const struct zerg_orch *o)
{
    int64_t gap = 4 * o->sync_cost_ns;
    return gap > 10 * ZERG_NS_PER_MS ? gap : 10 * ZERG_NS_PER_MS;
}

/* ZERG_TEST_POWER_LOSS_AT_SYNC=N (integration tests only): the N-th batch
 * sync is a power cut instead: the batch's results, written without fsync
 * and never synced, are deleted as the lost page cache would lose them,
 * and the orchestrator dies at once. */
static void power_loss_hook(struct zerg_orch *o)
{
    const char *at = getenv("ZERG_TEST_POWER_LOSS_AT_SYNC");
    if (!at || atoi(at) != o->syncs)
        return;
    /* The cut stops a checkpoint child too; one that had ended had made
     * the results it recorded durable, and its state is on disk. */
    size_t from = o->nsynced;
    int status = 0;
    if (o->save_pid > 0 && kill(o->save_pid, SIGKILL) == 0 &&
        waitpid(o->save_pid, &status, 0) == o->save_pid && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0 && o->save_unlinks > from)
        from = o->save_unlinks;
    for (size_t i = from; i < o->nunlink; i++)
        unlink(o->pending_unlink[i]);
    fprintf(stderr, "zerg: test power loss: %zu unsynced results dropped\n",
            o->nunlink - from);
    _exit(137);
}

static void sync_failed(struct zerg_orch *o, int rc)
{
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "results", (double)(o->nunlink - o->nsynced));
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_ERROR,
                   "results_sync_failed", NULL, data,
                   "Cannot make %zu results durable in %s: %s (they stay "
                   "on disk until a checkpoint records them)",
                   o->nunlink - o->nsynced, o->run_dir, zerg_strerror(rc));
}

/* The sync of [nsynced..nunlink) on the loop: one syncfs for the batch,
 * on ext4 a flat ~2 ms where an fsync per file commits the journal once
 * per file (~0.7 ms each).  If it fails, the batch's own files tell
 * whether the error is ours. */
static int sync_inline(struct zerg_orch *o, int64_t now)
{
    int64_t t0 = zerg_clock_mono(o->o.clock);
    int rc = zerg_fsio_sync_fs(o->run_dir);
    if (rc < 0)
        rc = zerg_fsio_sync_files(o->run_dir, o->pending_unlink + o->nsynced,
                                  o->nunlink - o->nsynced);
    o->sync_cost_ns = zerg_clock_mono(o->o.clock) - t0;
    o->last_sync_mono_ns = now;
    if (rc < 0) {
        sync_failed(o, rc);
        return rc;
    }
    o->nsynced = o->nunlink;
    return 0;
}

/* The offloaded sync in flight, if it is done (wait: once it is): its
 * batch is durable, or it failed and the batch waits, unsaid, for the
 * checkpoint's sync, which tries the batch's files too and says so if
 * that fails as well. */
static void sync_collect(struct zerg_orch *o, int wait)
{
    int rc;
    int64_t cost;
    if (!o->sync_ticket ||
        !zerg_offload_synced(o->offload, o->sync_ticket, wait, &rc, &cost))
        return;
    o->sync_ticket = 0;
    o->sync_cost_ns = cost;
    if (rc == 0 && o->sync_upto > o->nsynced)
        o->nsynced = o->sync_upto;
}

int orch_sync_results(struct zerg_orch *o, int64_t now, int force)
{
    if (o->offload)
        sync_collect(o, force);
    if (o->nsynced == o->nunlink)
        return 0;
    if (o->cfg->state_durability == ZERG_DURABILITY_FULL) {
        o->nsynced = o->nunlink; /* each worker fsynced its own */
        return 0;
    }
    if (o->sync_ticket || (!force && now - o->last_sync_mono_ns < sync_gap(o)))
        return 0;
    o->syncs++;
    power_loss_hook(o);
    /* Between checkpoints, off the loop: it goes on applying results and
     * handing out tasks while the disk works.  A checkpoint (force) must
     * not record a result before it is durable, so it syncs here. */
    if (!force && o->offload) {
        o->sync_ticket = zerg_offload_sync(o->offload, o->run_dir);
        o->sync_upto = o->nunlink;
        o->last_sync_mono_ns = now;
        if (o->sync_ticket)
            return 0;
    }
    return sync_inline(o, now);
}

/* ---- heartbeats ------------------------------------------------------- */

/* The worker ran our task and went idle, yet no result was applied: the
 * result is on disk but not seen yet (apply it), or the worker could not
 * write it (a full disk): then the outcome is unknown and the task runs
 * again, uncharged. */
static void lost_result(struct zerg_orch *o, struct slot *sl, int64_t now)
{
    size_t t = (size_t)sl->task;
    char path[PATH_MAX];

    if (zerg_proto_result_path(path, sizeof path, o->run_dir, orch_tid(o, t),
                               orch_ts(o, t)->attempt) == 0 &&
        access(path, F_OK) == 0 && orch_apply_result(o, path, now))
        return;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "attempt", orch_ts(o, t)->attempt);
    zerg_json_set_str(data, "why", "result_lost");
    o->s->metrics.task_reassignments++;
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_WARN, "task_reassigned",
                   orch_tid(o, t), data,
                   "Task %s reassigned: worker %d finished it but its result "
                   "never arrived (see .zerg/logs/%s/worker-%d.log)",
                   orch_tid(o, t), sl->id, o->o.feature, sl->id);
    struct verdict v;
    orch_verdict_requeue(&v, "result lost");
    orch_attempt_end(o, t, &v, NULL, sl, now);
}

static void hb_recovered(struct zerg_orch *o, struct slot *sl, int64_t gap)
{
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "gap", ORCH_SEC(gap));
    zerg_json_set_num(data, "threshold",
                      ORCH_SEC(o->cfg->heartbeat_stale_threshold_ns));
    zerg_log_event(o->o.log, sl->id, ZERG_LOG_INFO, "heartbeat_recovered", NULL,
                   data, "Worker %d heartbeat resumed after %.1fs", sl->id,
                   ORCH_SEC(gap));
}

/* What the heartbeat says of the slot's task. */
static void hb_task(struct zerg_orch *o, struct slot *sl,
                    const struct zerg_heartbeat *hb, int64_t now)
{
    size_t t = (size_t)sl->task;
    enum zerg_task_status st = orch_ts(o, t)->status;
    if (st == ZERG_TASK_IN_PROGRESS && !hb->task_id[0]) {
        lost_result(o, sl, now);
        return;
    }
    if (strcmp(hb->task_id, orch_tid(o, t)) ||
        hb->attempt != orch_ts(o, t)->attempt)
        return;
    sl->spend.attempt = hb->attempt;
    sl->spend.input_tokens = hb->input_tokens;
    sl->spend.output_tokens = hb->output_tokens;
    sl->spend.cache_read_tokens = hb->cache_read_tokens;
    sl->spend.cache_write_tokens = hb->cache_write_tokens;
    sl->spend.cost_usd = hb->cost_usd;
    memcpy(sl->hb_activity, hb->activity, sizeof sl->hb_activity);
    sl->hb_tool_calls = hb->tool_calls;
    if (hb->cost_usd > 0)
        orch_pool_check_cap(o, now);
    if (strcmp(hb->step, sl->hb_step) || hb->progress_pct != sl->hb_pct ||
        hb->progress_seq != sl->hb_progress_seq) {
        sl->progress_at_mono_ns = now;
        sl->hb_progress_seq = hb->progress_seq;
        snprintf(sl->hb_step, sizeof sl->hb_step, "%s", hb->step);
        sl->hb_pct = hb->progress_pct;
    }
    if (st == ZERG_TASK_CLAIMED)
        orch_task_started(o, t, sl->id, sl->hb_task_pgid);
}

void orch_on_heartbeat(struct zerg_orch *o, int slot, int64_t now)
{
    struct zerg_heartbeat hb;
    char path[PATH_MAX];

    if (slot < 0 || slot >= o->nslots || !slot_alive(&o->slots[slot]))
        return;
    zerg_proto_heartbeat_path(path, sizeof path, o->run_dir, slot);
    if (zerg_proto_read_heartbeat(path, &hb) == 0)
        orch_heartbeat_apply(o, slot, &hb, now);
}

/* Fenced by epoch; and by seq, which only grows within an incarnation:
 * the file and the stdout line of one beat arrive in either order, and an
 * older line read after a newer file must not undo what it said. */
void orch_heartbeat_apply(struct zerg_orch *o, int slot,
                          const struct zerg_heartbeat *in, int64_t now)
{
    if (slot < 0 || slot >= o->nslots || !slot_alive(&o->slots[slot]))
        return;
    struct slot *sl = &o->slots[slot];
    const struct zerg_heartbeat hb = *in;
    if (hb.epoch != sl->proc.epoch || hb.seq <= sl->hb_seq)
        return;
    int64_t gap = now - sl->hb_change_at_mono_ns;
    if (slot_ready(sl) && gap > o->cfg->heartbeat_stale_threshold_ns / 2)
        hb_recovered(o, sl, gap);
    sl->hb_seq = hb.seq;
    sl->hb_change_at_mono_ns = now;
    sl->hb_task_pgid = hb.task_pgid;
    orch_slot_event(o, sl, SLOT_EV_FIRST_HB, NULL, now);
    if (sl->task >= 0 && sl->state == SLOT_BUSY)
        hb_task(o, sl, &hb, now);
}

/* One now stamps a whole intake: the lines and files read after a SIGSTOP
 * or a slow merge in the middle of it are newer than it says.  Left so,
 * the next tick would find those workers silent for as long as we were
 * away and kill them as stale. */
void orch_intake_took(struct zerg_orch *o, int64_t at, int64_t until)
{
    for (int i = 0; until > at && i < o->nslots; i++) {
        struct slot *sl = &o->slots[i];
        if (sl->hb_change_at_mono_ns == at)
            sl->hb_change_at_mono_ns = until;
        if (sl->progress_at_mono_ns == at)
            sl->progress_at_mono_ns = until;
    }
}

/* ---- results ---------------------------------------------------------- */

static void fenced(struct zerg_orch *o, const struct zerg_result *r,
                   const char *path, const char *why)
{
    o->s->metrics.results_fenced++;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "epoch", (double)r->epoch);
    zerg_json_set_num(data, "attempt", r->attempt);
    zerg_json_set_str(data, "why", why);
    zerg_log_event(o->o.log, r->worker_id, ZERG_LOG_WARN, "result_fenced",
                   r->task[0] ? r->task : NULL, data,
                   "Dropped a result for %s attempt %d from worker %d "
                   "(epoch %" PRIu64 "): %s",
                   r->task, r->attempt, r->worker_id, r->epoch, why);
    defer_unlink(o, path);
    orch_mark_dirty(o);
}

/* A result file that cannot be read as one (workers write them whole,
 * with a rename, so this is someone else's file): said once, then moved
 * aside as .invalid-NAME, which nothing reads again. */
static void drop_invalid(struct zerg_orch *o, const char *path, int rc)
{
    char aside[PATH_MAX];
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    zerg_json *data = zerg_json_obj();
    zerg_json_set_str(data, "file", name);
    zerg_log_event(
        o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "result_invalid", NULL, data,
        "Ignored %s: %s; moved aside as .invalid-%s", path,
        rc == ZERG_ECORRUPT ? "not a result file" : zerg_strerror(rc), name);
    if (zerg_fsio_path(aside, sizeof aside, "%s/.invalid-%s", o->run_dir,
                       name) != 0 ||
        rename(path, aside) < 0)
        unlink(path);
}

/* Replaying the journal on --resume: a task completed by a worker of the
 * dead orchestrator counts even when the claim itself never reached a
 * checkpoint (the state still says pending, or an older attempt).
 * Running it again would run it twice. */
static void adopt_replayed(struct zerg_orch *o, size_t t,
                           const struct zerg_result *r)
{
    const struct zerg_task_state *st = orch_ts(o, t);
    if (!o->replaying || r->outcome != ZERG_OUTCOME_COMPLETE ||
        zerg_task_status_terminal(st->status) || r->attempt < st->attempt)
        return;
    struct zerg_task_move m = {.attempt = r->attempt, .epoch = r->epoch};
    orch_task_move(o, t, ZERG_TASK_EV_ADOPT, &m);
}

/* The fence: 1 when r is the live attempt of task t. */
static int live_attempt(struct zerg_orch *o, size_t t,
                        const struct zerg_result *r)
{
    const struct zerg_task_state *st = orch_ts(o, t);
    return (st->status == ZERG_TASK_CLAIMED ||
            st->status == ZERG_TASK_IN_PROGRESS) &&
           st->epoch == r->epoch && st->attempt == r->attempt;
}

/* ---- results that came by line first --------------------------------- */

/* A worker renames its result file into place before it writes the line
 * (the journal first), so when the line is applied the file is there and
 * its inotify event already queued: reading the file when that event is
 * handled (open, fstat, two reads, close, a parse) would only find the
 * result seen twice.  The slot remembers the one result its line applied
 * last; the first event naming that file is skipped.  Any later event for
 * the name (a rewrite by someone else) is read as before, and fenced. */
static void line_applied(struct zerg_orch *o, int worker, size_t t, int attempt)
{
    if (worker < 0 || worker >= o->nslots)
        return;
    o->slots[worker].line_task = t;
    o->slots[worker].line_attempt = attempt;
}

/* 1 when name is the file of a result its line applied (forgotten now). */
static int line_file_event(struct zerg_orch *o, const char *name)
{
    char want[PATH_MAX];
    for (int i = 0; i < o->nslots; i++) {
        struct slot *sl = &o->slots[i];
        if (!sl->line_attempt ||
            zerg_proto_result_path(want, sizeof want, ".",
                                   orch_tid(o, sl->line_task),
                                   sl->line_attempt) < 0 ||
            strcmp(want + 2, name) != 0)
            continue;
        sl->line_attempt = 0;
        return 1;
    }
    return 0;
}

/* Applies result r, whose journal file is path, if it belongs to the
 * live assignment; 1 when applied.  A fenced result is logged and its file
 * dropped, unless quiet (r came from a stdout line): then its file, which
 * the worker wrote first, is fenced when it is read, so once. */
static int apply_result(struct zerg_orch *o, const struct zerg_result *rp,
                        const char *path, int quiet, int64_t now)
{
    const struct zerg_result r = *rp;
    ssize_t found = zerg_graph_find(o->g, r.task);
    if (found < 0) {
        if (!quiet)
            fenced(o, &r, path, "unknown task");
        return 0;
    }
    size_t t = (size_t)found;
    /* The same result seen twice (an event for a file already applied
     * through another path, or its stdout line) is not a stale one. */
    if (o->applied_attempt[t] == r.attempt && orch_ts(o, t)->epoch == r.epoch)
        return 0;
    adopt_replayed(o, t, &r);
    if (!live_attempt(o, t, &r)) {
        if (!quiet)
            fenced(o, &r, path, "not the live assignment");
        return 0;
    }
    struct slot *sl =
        orch_slot_runs(o, r.worker_id, t) ? &o->slots[r.worker_id] : NULL;
    /* A task that ended before any heartbeat named it still ran: its
     * result is the worker's word that it started (not when it failed in
     * setup, before anything ran). */
    if (sl && orch_ts(o, t)->status == ZERG_TASK_CLAIMED &&
        strcmp(r.stage, "setup") != 0)
        orch_task_started(o, t, sl->id, sl->hb_task_pgid);
    /* A worker writes the result once the task's group is killed and
     * reaped: its id may be reused, and the idle beat that says so may
     * come later (worker_run.c). */
    if (sl) {
        sl->hb_task_pgid = 0;
        memset(&sl->spend, 0, sizeof sl->spend); /* the result has it all */
    }
    orch_ts(o, t)->duration_ms = r.duration_ms;
    o->applied_attempt[t] = r.attempt;
    orch_pool_add_cost(o, t, &r);
    defer_unlink(o, path);
    if (quiet)
        line_applied(o, r.worker_id, t, r.attempt);
    return orch_attempt_result(o, t, &r, sl, now);
}

/* Also used on resume, when no worker is alive: then the task's own
 * (epoch, attempt) is the fence. */
int orch_apply_result(struct zerg_orch *o, const char *path, int64_t now)
{
    struct zerg_result r;

    int rc = zerg_proto_read_result(path, &r);
    if (rc == -ENOENT)
        return 0; /* applied and removed through another event */
    if (rc < 0) {
        drop_invalid(o, path, rc);
        return 0;
    }
    return apply_result(o, &r, path, 0, now);
}

int orch_apply_result_event(struct zerg_orch *o, const struct zerg_result *r,
                            int64_t now)
{
    char path[PATH_MAX];
    if (!zerg_id_valid(r->task) ||
        zerg_proto_result_path(path, sizeof path, o->run_dir, r->task,
                               r->attempt) < 0)
        return 0;
    return apply_result(o, r, path, 1, now);
}

void zerg_orch_file_changed(struct zerg_orch *o, const char *name, int64_t now)
{
    char path[PATH_MAX];
    int slot = -1;
    int kind = zerg_proto_classify(name, &slot);

    if (kind == 'h') {
        /* A slot whose heartbeats come by line skips the file (the
         * periodic scan still reads it): half the parsing per beat. */
        if (slot < 0 || slot >= o->nslots || !o->slots[slot].hb_lines_epoch ||
            o->slots[slot].hb_lines_epoch != o->slots[slot].proc.epoch)
            orch_on_heartbeat(o, slot, now);
        return;
    }
    if ((kind != 'r' && kind != 'q') ||
        zerg_fsio_path(path, sizeof path, "%s/%s", o->run_dir, name))
        return;
    /* A missing file (applied and removed meanwhile) is -ENOENT to the
     * read itself: no access(2) first. */
    if (kind == 'q')
        orch_apply_retry_request(o, path, now);
    else if (!line_file_event(o, name))
        orch_apply_result(o, path, now);
}

int orch_scan_results(struct zerg_orch *o, int64_t now)
{
    DIR *d = opendir(o->run_dir);
    struct dirent *e;
    char path[PATH_MAX];
    int n = 0, slot;

    if (!d)
        return 0;
    while ((e = readdir(d)))
        if (zerg_proto_classify(e->d_name, &slot) == 'r' &&
            !zerg_fsio_path(path, sizeof path, "%s/%s", o->run_dir, e->d_name))
            n += orch_apply_result(o, path, now);
    closedir(d);
    return n;
}

/* After a restart: apply the results the last orchestrator did not (they
 * are the journal), then requeue what was running on workers that are
 * gone -- uncharged -- through a thorough reconciliation. */
void orch_resume_results(struct zerg_orch *o, int64_t now)
{
    orch_merge_resume(o, now); /* what git holds is never done twice */
    o->replaying = 1;
    int n = orch_scan_results(o, now);
    o->replaying = 0;
    if (n > 0)
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO,
                       "results_recovered", NULL, NULL,
                       "Applied %d result%s finished while the orchestrator "
                       "was down",
                       n, n == 1 ? "" : "s");
    orch_reconcile(o, 1, now);
}

/* The run directory exists and is a real directory of ours: a symlink
 * planted there (by a task, say) would send every file of the run, and
 * the deletions of the journal, out of the project. */
static int make_run_dir(struct zerg_orch *o, struct zerg_err *err)
{
    struct stat st;
    if (mkdir(o->run_dir, 0755) < 0 && errno != EEXIST)
        return zerg_err_set(err, -errno, "cannot create %s: %s", o->run_dir,
                            strerror(errno));
    if (lstat(o->run_dir, &st) < 0)
        return zerg_err_set(err, -errno, "cannot read %s: %s", o->run_dir,
                            strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "%s is not a directory (%s); remove it and run "
                            "again",
                            o->run_dir,
                            S_ISLNK(st.st_mode) ? "a symbolic link" : "a file");
    return 0;
}

/* The highest epoch in a heartbeat or result file of the run dir; a fresh
 * run also removes the previous run's results.  Answers to retry requests
 * no sender stayed to read go too. */
static uint64_t scan_epochs(struct zerg_orch *o, DIR *d)
{
    struct dirent *e;
    char path[PATH_MAX];
    uint64_t max_epoch = 0;
    int slot;
    while ((e = readdir(d))) {
        int kind = zerg_proto_classify(e->d_name, &slot);
        if ((kind != 'r' && kind != 'h' && kind != 'a') ||
            zerg_fsio_path(path, sizeof path, "%s/%s", o->run_dir, e->d_name))
            continue;
        if (kind == 'a') {
            unlink(path);
            continue;
        }
        if (kind == 'h') {
            struct zerg_heartbeat hb;
            if (zerg_proto_read_heartbeat(path, &hb) == 0 &&
                hb.epoch > max_epoch)
                max_epoch = hb.epoch;
            continue;
        }
        struct zerg_result r;
        if (zerg_proto_read_result(path, &r) == 0 && r.epoch > max_epoch)
            max_epoch = r.epoch;
        if (!o->o.resume)
            unlink(path);
    }
    return max_epoch;
}

/* Before the first spawn: no epoch the previous orchestrator may have used
 * after its last checkpoint is handed out again (fencing depends on it),
 * and epochs start above the wall clock in microseconds, so a run started
 * afresh does not reuse the numbers of an earlier one either. */
int orch_prepare_dir(struct zerg_orch *o, struct zerg_err *err)
{
    int rc = make_run_dir(o, err);
    if (rc < 0)
        return rc;
    DIR *d = opendir(o->run_dir);
    uint64_t max_epoch = d ? scan_epochs(o, d) : 0;
    if (d)
        closedir(d);
    uint64_t floor_us = (uint64_t)(orch_wall_ns(o) / 1000);
    if (max_epoch < floor_us)
        max_epoch = floor_us;
    if (o->s->next_epoch <= max_epoch)
        o->s->next_epoch = max_epoch + 1;
    return 0;
}

/* ---- `zerg retry` sent to a live rush --------------------------------- */

static void retry_applied(struct zerg_orch *o,
                          const struct zerg_retry_request *req, int n,
                          int64_t now)
{
    for (size_t t = 0; t < o->g->ntasks; t++)
        if (o->s->tasks[t].status == ZERG_TASK_PENDING)
            o->retry_at_mono_ns[t] = 0;
    memset(o->level_cursor, 0,
           ((size_t)o->g->nlevels + 2) * sizeof *o->level_cursor);
    orch_dag_rescan(o); /* the statuses changed outside orch_task_move */
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "requeued", n);
    zerg_json_set_bool(data, "all_failed", req->all_failed);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_INFO,
                   "task_retry_requested", req->n == 1 ? req->ids[0] : NULL,
                   data, "Retry requested: %d task%s requeued", n,
                   n == 1 ? "" : "s");
    orch_mark_dirty(o);
    orch_reconcile(o, 1, now);
    /* Accepted while the rush was stopping its workers because everything
     * had ended: it goes on instead, with its pool (the run table). */
    orch_run_event(o, RUN_EV_REOPEN, n, now);
}

/* Left before the request is deleted, so a sender that finds the request
 * gone finds the answer.  A lost answer costs the sender its report only:
 * the state holds what was done, and the log says it. */
static void answer(const char *path, const struct zerg_retry_answer *ans)
{
    char apath[PATH_MAX];
    if (zerg_retry_answer_path(apath, sizeof apath, path) == 0)
        zerg_retry_answer_write(apath, ans, NULL);
}

/* why: the one reason, or NULL when ans holds the refusals. */
static void refused(struct zerg_orch *o, const char *path, const char *why,
                    struct zerg_retry_answer *ans)
{
    if (why) {
        snprintf(ans->refused[0], sizeof ans->refused[0], "%s", why);
        ans->nrefused = 1;
    }
    answer(path, ans);
    unlink(path);
    zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_WARN,
                   "retry_request_invalid", NULL, NULL,
                   "Retry request refused: %s", ans->refused[0]);
}

void orch_apply_retry_request(struct zerg_orch *o, const char *path,
                              int64_t now)
{
    struct zerg_retry_request req = {0};
    struct zerg_retry_answer ans = {0};
    struct zerg_err err = {0};

    if (zerg_retry_request_read(path, &req, &err) < 0) {
        if (access(path, F_OK) == 0)
            refused(o, path, err.msg, &ans);
        return;
    }
    if (strcmp(req.feature, o->o.feature)) {
        refused(o, path, "the request names another feature", &ans);
    } else {
        int n = zerg_retry_request_apply(o->s, o->g, &req, &ans);
        if (n < 0)
            refused(o, path, zerg_strerror(n), &ans);
        else if (ans.nrefused)
            refused(o, path, NULL, &ans);
        else {
            answer(path, &ans);
            unlink(path);
            retry_applied(o, &req, n, now);
        }
    }
    zerg_retry_request_close(&req);
}
