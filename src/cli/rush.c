/* rush.c - `zerg rush`: run the feature's task graph on N workers.
 *
 * Order matters and is the contract of exit code 2 ("nothing was started
 * or written"): options, config, graph, policies and the state file are
 * all checked before the lock is taken and anything is spawned.  Then:
 * lock (exit 3 if held), clean up leftovers of an earlier orchestrator,
 * and hand over to the orchestrator's event loop. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/limits.h"
#include "cli/plan.h"
#include "cli/preflight.h"
#include "cli/task_output.h"
#include "cli/view.h"
#include "zerg/protocol.h"
#include "zerg/clock.h"
#include "zerg/fsio.h"
#include "zerg/graph.h"
#include "zerg/launcher.h"
#include "rush_opts.h"
#include "rush_ws.h"
#include "zerg/lock.h"
#include "zerg/log.h"
#include "zerg/orchestrator.h"
#include "zerg/policy.h"
#include "zerg/state.h"
#include "zerg/task_fsm.h"

/* Everything one rush holds, released at the end of zerg_cmd_rush.  The
 * clock is chosen here, once, for the state, the log and the loop. */
struct rush {
    struct zerg_cli *cli;
    const struct zerg_clock *clock;
    struct rush_opts ro;
    char feature[ZERG_ID_MAX + 1];
    struct zerg_config cfg;
    struct zerg_graph *g;
    struct zerg_state s;
    struct zerg_lock lk;
    struct zerg_log *log;
    struct zerg_policy *pol;
    int replaced_run; /* a finished or --fresh run's state is replaced */
    struct zerg_workspace *ws; /* worktree isolation, NULL = none */
    char prev_run_id[40];      /* the state's run id before this one */
    enum zerg_mode mode;       /* workers.mode with auto decided */
};

/* prepare_state: every task is complete, nothing runs (exit 0). */
#define RUSH_NOTHING_TO_DO (-100)

/* ---- checks before anything is written (exit 2) --------------------- */

/* Feature, config, graph and policies.  0 or an exit code. */
static int load_inputs(struct rush *r)
{
    struct zerg_cli *cli = r->cli;
    struct zerg_err err = {0};
    char path[PATH_MAX];

    if (zerg_cli_feature(cli, r->feature, sizeof r->feature, &err) < 0 ||
        zerg_cli_config(cli, &r->cfg, &err) < 0)
        goto fail;
    zerg_cli_path(cli, path, sizeof path, ".gsd/specs/%s/task-graph.json",
                  r->feature);
    if (zerg_graph_load(&r->g, path, &err) < 0)
        goto fail;
    zerg_cli_path(cli, path, sizeof path, ".zerg/policies");
    if (!(r->pol = zerg_policy_new(path, &r->cfg, NULL, &err)))
        goto fail;
    return 0;
fail:
    zerg_cli_error("rush", "%s", err.msg);
    return ZERG_EXIT_USAGE;
}

/* Prints the level plan; the exit code of --dry-run. */
static int dry_run(const struct rush *r)
{
    int w = r->ro.workers ? r->ro.workers : r->cfg.workers_max_concurrent;
    return zerg_cli_print_plan(stdout, r->g, w, r->cli->color) < 0
               ? ZERG_EXIT_FAIL
               : ZERG_EXIT_OK;
}

/* Exit 2 when the machine cannot give N workers what they need. */
static int check_limits(const struct rush *r)
{
    char msg[512];
    int w = r->ro.workers ? r->ro.workers : r->cfg.workers_max_concurrent;
    if (zerg_cli_check_limits(w, msg, sizeof msg) == 0)
        return 0;
    zerg_cli_error("rush", "%s", msg);
    return ZERG_EXIT_USAGE;
}

/* Exit 2 when container.run_args would widen the worker containers without
 * the user's opt-in from outside the project (ZERG_ALLOW_RUN_ARGS); a
 * warning when it let some through (the log gets one from the launcher). */
static int check_run_args(const struct rush *r)
{
    struct zerg_err err = {0};
    char allowed[256];
    enum zerg_mode mode = r->ro.mode_set ? r->ro.mode : r->cfg.workers_mode;
    if (mode == ZERG_MODE_SUBPROCESS || mode == ZERG_MODE_SLURM)
        return 0;
    if (zerg_container_check_run_args(&r->cfg.container_run_args,
                                      getenv("ZERG_ALLOW_RUN_ARGS"), allowed,
                                      sizeof allowed, &err) < 0) {
        zerg_cli_error("rush", "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    if (allowed[0])
        fprintf(stderr,
                "zerg rush: warning: container.run_args passes %s, allowed "
                "by ZERG_ALLOW_RUN_ARGS\n",
                allowed);
    return 0;
}

/* Exit 3 before the state is touched when another rush holds the lock. */
static int check_unlocked(struct rush *r)
{
    struct zerg_err err = {0};
    char path[PATH_MAX];

    zerg_cli_path(r->cli, path, sizeof path, ".zerg/state/%s.lock", r->feature);
    if (zerg_lock_probe(path, NULL) != 1)
        return 0;
    zerg_lock_acquire(&r->lk, path, &err); /* for the message */
    zerg_cli_error("rush", "%s",
                   err.msg[0] ? err.msg : "another rush is running");
    return ZERG_EXIT_LOCKED;
}

static void make_run_id(char *buf, size_t size)
{
    unsigned char r[6] = {0};
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, r, sizeof r) != (ssize_t)sizeof r) {
        uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
        memcpy(r, &x, sizeof r);
    }
    if (fd >= 0)
        close(fd);
    snprintf(buf, size, "%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
             r[4], r[5]);
}

/* A new run's state.  0, or ZERG_EXIT_FAIL. */
static int new_state(struct rush *r)
{
    return zerg_state_init(&r->s, r->g, r->feature, zerg_clock_wall(r->clock)) <
                   0
               ? ZERG_EXIT_FAIL
               : 0;
}

/* What --resume picks up, said before anything runs. */
static void say_resuming(const struct rush *r,
                         const size_t c[ZERG_TASK_NSTATUS])
{
    size_t ended =
        c[ZERG_TASK_COMPLETE] + c[ZERG_TASK_FAILED] + c[ZERG_TASK_BLOCKED];
    size_t left = r->g->ntasks - c[ZERG_TASK_COMPLETE];
    printf("Resuming %s (run %s, level %d of %d): %zu/%zu task%s complete, "
           "%zu failed, %zu blocked; %zu to run%s.\n",
           r->feature, r->s.run_id[0] ? r->s.run_id : "?",
           r->s.current_level > r->g->nlevels ? r->g->nlevels
                                              : r->s.current_level,
           r->g->nlevels, c[ZERG_TASK_COMPLETE], r->g->ntasks,
           r->g->ntasks == 1 ? "" : "s", c[ZERG_TASK_FAILED],
           c[ZERG_TASK_BLOCKED], r->g->ntasks - ended,
           left > r->g->ntasks - ended
               ? " (failed and blocked ones need `zerg retry`)"
               : "");
}

/* What each task of the state being replaced took (the ETA of the next
 * run of the same graph starts from it): its duration when it completed,
 * else what the run before it measured.  NULL when out of memory. */
static int64_t *prev_durations(const struct zerg_state *s)
{
    int64_t *v = calloc(s->ntasks + 1, sizeof *v);
    for (size_t i = 0; v && i < s->ntasks; i++) {
        const struct zerg_task_state *t = &s->tasks[i];
        v[i] = t->status == ZERG_TASK_COMPLETE && t->duration_ms > 0
                   ? t->duration_ms
                   : t->prev_duration_ms;
    }
    return v;
}

/* Loads or creates the state.  Returns 0, RUSH_NOTHING_TO_DO, or an exit
 * code. */
static int prepare_state(struct rush *r)
{
    char path[PATH_MAX];
    struct zerg_err err = {0};
    size_t dropped = 0;
    const char *feature = r->feature;
    struct zerg_state *s = &r->s;

    zerg_cli_path(r->cli, path, sizeof path, ".zerg/state/%s.json", feature);
    int rc = zerg_state_load(s, r->g, path, &dropped, &err);
    if (rc == -ENOENT) {
        if (r->ro.resume)
            fprintf(stderr,
                    "zerg rush: nothing to resume for %s; starting "
                    "a new run\n",
                    feature);
        return new_state(r);
    }
    if (rc < 0) {
        zerg_cli_error("rush", "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    if (dropped)
        fprintf(stderr,
                "zerg rush: warning: %zu task%s in the state file "
                "are no longer in the graph; ignored\n",
                dropped, dropped == 1 ? "" : "s");
    size_t c[ZERG_TASK_NSTATUS];
    zerg_task_count(s->tasks, NULL, s->ntasks, c);
    int unfinished = !s->status || strcmp(s->status, "complete");
    /* Every task complete, yet the run itself did not end (killed after
     * its last task, before its last checkpoint): --resume ends it. */
    if (c[ZERG_TASK_COMPLETE] == r->g->ntasks && !r->ro.fresh &&
        !(r->ro.resume &&
          (unfinished ||
           zerg_rush_ws_lost_work(r->cli, &r->cfg, r->feature, r->g, &r->s)))) {
        printf("Nothing to do: all %zu task%s of %s %s complete; `zerg rush "
               "--fresh` runs %s again.\n",
               r->g->ntasks, r->g->ntasks == 1 ? "" : "s", feature,
               r->g->ntasks == 1 ? "is" : "are",
               r->g->ntasks == 1 ? "it" : "them");
        zerg_state_close(s);
        return RUSH_NOTHING_TO_DO;
    }
    if (r->ro.resume) {
        say_resuming(r, c);
        return 0;
    }
    if (unfinished && !r->ro.fresh) {
        zerg_cli_error("rush",
                       "an unfinished run of %s exists (%zu/%zu tasks "
                       "complete, status %s). Continue it with `zerg rush "
                       "--resume`, or start over with `zerg rush --fresh`.",
                       feature, c[ZERG_TASK_COMPLETE], r->g->ntasks,
                       s->status ? s->status : "unknown");
        zerg_state_close(s);
        return ZERG_EXIT_USAGE;
    }
    /* The refs the replaced run made are still zerg's to clean up. */
    struct zerg_state_refs refs = s->git_refs;
    memset(&s->git_refs, 0, sizeof s->git_refs);
    int64_t *prev = prev_durations(s);
    zerg_state_close(s);
    r->replaced_run = 1;
    rc = new_state(r);
    if (!rc) {
        for (size_t i = 0; i < refs.n; i++)
            zerg_state_ref_set(s, refs.v[i].name, refs.v[i].oid);
        for (size_t i = 0; prev && i < s->ntasks; i++)
            s->tasks[i].prev_duration_ms = prev[i];
    }
    free(prev);
    zerg_state_refs_free(&refs);
    return rc;
}

/* ---- from here on we write: directories, lock, logs ----------------- */

/* A new run starts new attempt logs: the replaced run's task logs move to
 * .zerg/logs/{feature}/tasks.previous (the one before is dropped), so an
 * attempt-1.log never mixes two runs. */
/* 1 when a rush of another feature of this project holds its lock: its
 * workers write the same monitor files, and in container mode they write
 * through bind mounts of the files' inodes, which a rotation would leave
 * them writing into after the rename (monitor.log.1, no longer followed). */
static int other_rush_running(const struct rush *r)
{
    char dir[PATH_MAX], path[PATH_MAX], own[ZERG_ID_MAX + 8];
    struct dirent *e;
    int found = 0;
    if (zerg_cli_path(r->cli, dir, sizeof dir, ".zerg/state"))
        return 1;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    snprintf(own, sizeof own, "%s.lock", r->feature);
    while (!found && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".lock") ||
            !strcmp(e->d_name, own) ||
            zerg_fsio_path(path, sizeof path, "%s/%s", dir, e->d_name))
            continue;
        found = zerg_lock_probe(path, NULL) == 1;
    }
    closedir(d);
    return found;
}

static int may_rotate(void *ud)
{
    return !other_rush_running(ud);
}

static struct zerg_log_rotation log_rotation(struct rush *r)
{
    return (struct zerg_log_rotation){.max_bytes = r->cfg.log_max_size_bytes,
                                      .keep = r->cfg.log_keep,
                                      .may_rotate = may_rotate,
                                      .ud = r};
}

/* logging.max_size_mb at the start, before anything has the files open
 * (nothing of ours runs yet: the lock is held). */
static void rotate_at_start(struct rush *r, const char *zerg_dir)
{
    struct zerg_err err = {0};
    struct zerg_log_rotation rot = log_rotation(r);
    if (rot.max_bytes <= 0 || other_rush_running(r))
        return;
    if (zerg_log_rotate_files(zerg_dir, &rot, &err) < 0)
        fprintf(stderr, "zerg rush: warning: %s\n", err.msg);
}

/* While running, only where workers reopen a rotated file at their next
 * line (capability reopens_logs); elsewhere the files rotate at rush start
 * only. */
static void rotate_while_running(struct rush *r, const struct zerg_launcher *l)
{
    struct zerg_log_rotation rot = log_rotation(r);
    if (l->ops->caps.reopens_logs)
        zerg_log_set_rotation(r->log, &rot);
}

/* Takes the lock, opens the log and reloads the policies so that their
 * errors reach it.  0 or an exit code. */
static int open_run(struct rush *r)
{
    struct zerg_cli *cli = r->cli;
    struct zerg_err err = {0};
    char path[PATH_MAX];

    /* zerg's own directories: created without following a link out of the
     * project, and the real reason said when that fails (a read-only
     * .zerg is not "No such file or directory"). */
    zerg_cli_path(cli, path, sizeof path, ".zerg");
    if (zerg_fsio_mkdirs_under(path, "state", 0755, &err) < 0 ||
        zerg_fsio_mkdirs_under(path, "logs", 0755, &err) < 0) {
        zerg_cli_error("rush", "%s", err.msg);
        return ZERG_EXIT_FAIL;
    }
    zerg_cli_path(cli, path, sizeof path, ".zerg/state/%s.lock", r->feature);
    if (zerg_lock_acquire(&r->lk, path, &err) < 0) {
        zerg_cli_error("rush", "%s", err.msg);
        return err.code == ZERG_ELOCKED ? ZERG_EXIT_LOCKED : ZERG_EXIT_FAIL;
    }
    if (r->replaced_run)
        zerg_cli_set_logs_aside(r->cli, r->feature);
    zerg_cli_path(cli, path, sizeof path, ".zerg");
    rotate_at_start(r, path);
    if (!(r->log = zerg_log_open(path, r->clock, &err))) {
        zerg_cli_error("rush", "%s", err.msg);
        return ZERG_EXIT_FAIL;
    }
    zerg_log_set_level(r->log, (enum zerg_log_level)r->cfg.log_level);
    zerg_log_set_feature(r->log, r->feature);
    zerg_policy_free(r->pol);
    zerg_cli_path(cli, path, sizeof path, ".zerg/policies");
    if (!(r->pol = zerg_policy_new(path, &r->cfg, r->log, &err))) {
        zerg_cli_error("rush", "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    return 0;
}

/* workers.mode (or --mode) with auto decided once, before the workspace
 * opens: container workers get repositories of their own there. */
static int pick_mode(struct rush *r)
{
    char why[512];
    r->mode = r->ro.mode_set ? r->ro.mode : r->cfg.workers_mode;
    if (r->mode == ZERG_MODE_AUTO) {
        int ok = zerg_container_available(&r->cfg, why, sizeof why);
        zerg_log_event(r->log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "mode_selected",
                       NULL, NULL, "Mode auto: using %s (%s)",
                       ok ? "container" : "subprocess", why);
        r->mode = ok ? ZERG_MODE_CONTAINER : ZERG_MODE_SUBPROCESS;
    }
    return 0;
}

static struct zerg_launcher *make_launcher(const struct zerg_config *cfg,
                                           enum zerg_mode mode,
                                           struct zerg_log *log,
                                           const char *project)
{
    struct zerg_err err = {0};
    if (mode == ZERG_MODE_SUBPROCESS)
        return zerg_launcher_subprocess_new(cfg, log);
    if (mode == ZERG_MODE_SLURM) {
        struct zerg_launcher *sl =
            zerg_launcher_slurm_new(cfg, log, project, &err);
        if (!sl)
            zerg_cli_error("rush", "slurm mode unavailable: %s", err.msg);
        return sl;
    }
    struct zerg_launcher *l = zerg_launcher_container_new(cfg, log, &err);
    if (!l)
        zerg_cli_error("rush", "container mode unavailable: %s", err.msg);
    else /* its cleanup finds this project's containers by label */
        zerg_container_set_project(l, project);
    return l;
}

static void cleanup_leftovers(struct zerg_cli *cli, const char *feature,
                              const struct zerg_state *s,
                              struct zerg_launcher *l, struct zerg_log *log)
{
    int n = zerg_subprocess_kill_leftovers(cli->project, feature, s->run_id);
    n += l->ops->cleanup(l, feature, s->run_id);
    if (n > 0)
        zerg_log_event(log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "leftovers_removed",
                       NULL, NULL,
                       "Removed %d worker process%s/container%s left by an "
                       "earlier orchestrator",
                       n, n == 1 ? "" : "es", n == 1 ? "" : "s");
}

/* The graph's warnings, then rush_start with what this run is. */
static void log_start(const struct rush *r, const struct zerg_launcher *l,
                      int workers)
{
    const struct zerg_graph *g = r->g;
    for (size_t i = 0; i < g->warnings.n; i++)
        zerg_log_event(r->log, ZERG_LOG_ORCH, ZERG_LOG_WARN, "graph_warning",
                       NULL, NULL, "%s", g->warnings.v[i]);
    zerg_json *data = zerg_json_obj();
    zerg_json_set_num(data, "tasks", (double)g->ntasks);
    zerg_json_set_num(data, "levels", g->nlevels);
    zerg_json_set_num(data, "workers", workers);
    zerg_json_set_str(data, "mode", l->ops->name);
    zerg_json_set_str(data, "run_id", r->s.run_id);
    zerg_json_set_bool(data, "resume", r->ro.resume);
    zerg_json_set_bool(data, "resilience", r->cfg.resilience_enabled);
    zerg_log_event(
        r->log, ZERG_LOG_ORCH, ZERG_LOG_INFO, "rush_start", NULL, data,
        "Rush %s%s: %zu task%s in %d level%s on %d %s worker%s", r->feature,
        r->ro.resume ? " resumed" : " started", g->ntasks,
        g->ntasks == 1 ? "" : "s", g->nlevels, g->nlevels == 1 ? "" : "s",
        workers, l->ops->name, workers == 1 ? "" : "s");
}

/* Runs the orchestrator's loop with the live view; its exit code. */
static int orchestrate(struct rush *r, struct zerg_launcher *l, int workers,
                       const char *self)
{
    char summary[1024];
    struct zerg_err err = {0};
    struct zerg_view *view =
        zerg_view_new(r->cli, r->g, &r->s, r->log, !r->ro.no_progress);
    struct zerg_orch_opts oo = {
        .project = r->cli->project,
        .feature = r->feature,
        .zerg_bin = self,
        .cfg = &r->cfg,
        .graph = r->g,
        .state = &r->s,
        .policy = r->pol,
        .launcher = l,
        .workspace = r->ws,
        .prev_run_id = r->prev_run_id,
        .log = r->log,
        .clock = r->clock,
        .workers = workers,
        .resume = r->ro.resume,
        .on_frame = view ? zerg_view_frame : NULL,
        .frame_ctx = view,
        .frame_ns = ZERG_VIEW_FRAME_NS,
        .halt = r->ro.halt,
        .timeout_ns =
            r->ro.timeout_set ? r->ro.timeout_ns : r->cfg.rush_timeout_ns,
        .schedule =
            r->ro.schedule_set ? (int)r->ro.schedule : r->cfg.rush_schedule,
        .offload_io = 1,
        .checkpoint_fork = 1,
    };
    struct zerg_orch *o = zerg_orch_new(&oo, zerg_clock_mono(r->clock), &err);
    if (!o) {
        zerg_view_free(view);
        zerg_cli_error("rush", "%s", err.msg);
        return ZERG_EXIT_FAIL;
    }
    /* What reading the graph and the state freed goes back to the system
     * before the run: malloc keeps it otherwise (2.3 MB of the heap at
     * 100,000 tasks, in the orchestrator for the whole rush). */
    malloc_trim(0);
    int rc = zerg_orch_run(o, r->clock);
    zerg_orch_summary(o, summary, sizeof summary);
    int viewed = view != NULL;
    zerg_view_free(view);
    if (!viewed) /* otherwise the view printed the rush_complete event */
        printf("%s %s\n",
               rc == ZERG_EXIT_OK ? "Rush complete:" : "Rush failed:", summary);
    zerg_rush_ws_summary(stdout, r->cli, r->ws, r->feature);
    zerg_orch_notes(o, stdout);
    /* The real error where people look: each failed task's last output. */
    zerg_task_output_failures(stdout, r->cli, r->feature, r->g, &r->s);
    l->ops->cleanup(l, r->feature, "");
    zerg_orch_free(o);
    return rc;
}

/* No more workers than a level can use: the most unfinished tasks any
 * level has (levels run one at a time). */
static int useful_workers(const struct rush *r, int asked)
{
    size_t widest = 0;
    for (int lv = 1; lv <= r->g->nlevels; lv++) {
        const struct zerg_level *L = &r->g->levels[lv];
        size_t open = 0;
        for (size_t i = 0; i < L->n; i++)
            open += !zerg_task_status_terminal(r->s.tasks[L->tasks[i]].status);
        if (open > widest)
            widest = open;
    }
    if (widest == 0 || (size_t)asked <= widest)
        return asked;
    printf("Starting %zu worker%s, not %d: no level has more than %zu task%s "
           "to run.\n",
           widest, widest == 1 ? "" : "s", asked, widest,
           widest == 1 ? "" : "s");
    return (int)widest;
}

/* This rush's id (protocol.h): a resume keeps the feature run's part of
 * the one before and adds its own, so every commit of the run carries one
 * Zerg-Run across resumes; a fresh run, or an id too long to extend,
 * starts a feature run of its own. */
static void new_run_id(struct rush *r)
{
    char own[16];
    size_t n = zerg_run_origin_len(r->prev_run_id);
    make_run_id(own, sizeof own);
    if (r->ro.resume && n && zerg_id_valid(r->prev_run_id) &&
        n + 1 + strlen(own) < sizeof r->s.run_id)
        snprintf(r->s.run_id, sizeof r->s.run_id, "%.*s.%s", (int)n,
                 r->prev_run_id, own);
    else
        snprintf(r->s.run_id, sizeof r->s.run_id, "%s", own);
}

/* Everything that can fail with exit 2 has been checked; run it. */
static int run(struct rush *r)
{
    char self[PATH_MAX] = "zerg";
    int workers = useful_workers(
        r, r->ro.workers ? r->ro.workers : r->cfg.workers_max_concurrent);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0)
        self[n] = '\0';
    snprintf(r->prev_run_id, sizeof r->prev_run_id, "%s", r->s.run_id);
    new_run_id(r);
    if (r->ro.executor)
        setenv("ZERG_EXECUTOR", r->ro.executor, 1);
    struct zerg_launcher *l =
        make_launcher(&r->cfg, r->mode, r->log, r->cli->project);
    if (!l)
        return ZERG_EXIT_FAIL;
    cleanup_leftovers(r->cli, r->feature, &r->s, l, r->log);
    rotate_while_running(r, l);
    log_start(r, l, workers);
    int rc = orchestrate(r, l, workers, self);
    l->ops->free(l);
    return rc;
}

/* The steps in the order the exit codes promise (see the top). */
static int rush(struct rush *r)
{
    int rc = load_inputs(r);
    if (rc)
        return rc;
    if (r->ro.review)
        r->cfg.rush_review = 1;
    if (r->ro.dry_run)
        return dry_run(r);
    if ((rc = check_limits(r)) || (rc = check_run_args(r)) ||
        (rc = check_unlocked(r)) || (rc = prepare_state(r)) ||
        (rc = zerg_preflight_rush(r->cli->project, &r->cfg, r->g,
                                  r->ro.mode_set ? r->ro.mode
                                                 : r->cfg.workers_mode,
                                  r->ro.executor)) ||
        (rc = open_run(r)) || (rc = pick_mode(r)) ||
        (rc =
             zerg_rush_ws_open(r->cli, &r->cfg, r->feature, &r->s, r->ro.resume,
                               r->mode == ZERG_MODE_CONTAINER, r->log, &r->ws)))
        return rc == RUSH_NOTHING_TO_DO ? ZERG_EXIT_OK : rc;
    return run(r);
}

int zerg_cmd_rush(struct zerg_cli *cli, int argc, char **argv)
{
    struct rush r = {
        .cli = cli,
        .clock = &zerg_clock_system,
        .lk = {.fd = -1},
    };
    int rc = zerg_rush_parse_opts(argc, argv, &r.ro);

    if (rc)
        return rc < 0 ? ZERG_EXIT_OK : rc;
    zerg_config_defaults(&r.cfg);
    rc = rush(&r);
    zerg_rush_ws_close(r.ws);
    zerg_policy_free(r.pol);
    zerg_log_close(r.log);
    zerg_lock_release(&r.lk);
    zerg_state_close(&r.s);
    zerg_graph_free(r.g);
    zerg_config_free(&r.cfg);
    return rc;
}
