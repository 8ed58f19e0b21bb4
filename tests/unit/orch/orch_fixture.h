/* orch_fixture.h - an orchestrator stepped by hand, for the orch tests.
 *
 * A fake launcher (no processes), an injected clock whose time moves only
 * when a test says so, results and heartbeats written as the files a
 * worker would write into a temp project, and optionally a fake workspace
 * (worktree isolation, DESIGN §13) that keeps the integration branch in
 * memory: a counter for its tip, scripted merge outcomes per task, and a
 * record of every call the orchestrator made.  merged() reports the
 * scripted findings, then the merges that landed (clear a merge's
 * `landed` to drop it from the branch, as a reset would). */
#ifndef ZERG_TEST_ORCH_FIXTURE_H
#define ZERG_TEST_ORCH_FIXTURE_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "orch/orch_internal.h"
#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/graph.h"
#include "zerg/launcher.h"
#include "zerg/log.h"
#include "zerg/policy.h"
#include "zerg/protocol.h"
#include "zerg/state.h"
#include "zerg/workspace.h"

#define S(x) ((int64_t)((x)*1e9))

/* Two level-1 tasks and a level-2 task depending on the first. */
extern const char graph3[];

/* ---- fake launcher ---- */
struct fake {
    struct zerg_launcher base;
    int spawns, kills, last_sig;
    int fail_spawns; /* next N spawns fail at once */
    int permanent;
    pid_t next_pid;
    int64_t spawn_times[64];
    int64_t *now;
    char last_workspace[PATH_MAX]; /* req->workspace of the last spawn */
};

/* ---- fake workspace ---- */
enum fake_merge_kind {
    FAKE_MERGE_DONE,
    FAKE_MERGE_CONFLICT, /* text: the conflicting paths, one a line */
    FAKE_MERGE_ALREADY,
    FAKE_MERGE_ERROR, /* text: the message of a permanent failure */
};

#define FAKE_WS_MAX 32

struct fake_merge_step {
    char task[ZERG_ID_MAX + 1];
    enum fake_merge_kind kind;
    char text[256];
    int used;
};

/* What the orchestrator asked to merge. */
struct fake_merge_call {
    char task[ZERG_ID_MAX + 1];
    int attempt;
    int worker;
    char run_id[ZERG_RUN_ID_MAX];
    char commit[ZERG_OID_MAX];
    char title[128];
    enum zerg_task_status status; /* the task's, while it was merged */
    char landed[ZERG_OID_MAX];    /* the commit it made on the branch, ""
                                     when none; merged() reports it */
};

struct fake_keep_call {
    enum zerg_ws_kept kind;
    char task[ZERG_ID_MAX + 1];
    int attempt;
    char commit[ZERG_OID_MAX];
};

/* A scripted finding for merged() (slot < 0) or worker_head(slot). */
struct fake_found {
    int slot;
    char task[ZERG_ID_MAX + 1];
    int attempt;
    char run_id[ZERG_RUN_ID_MAX];
    char oid[ZERG_OID_MAX];
};

struct fake_ws {
    struct zerg_workspace base;
    char root[PATH_MAX]; /* the project: worktrees are made up below it */
    int tip_n;           /* the integration tip is fake_ws_oid(tip_n) */
    struct fake_merge_step steps[FAKE_WS_MAX];
    int nsteps;
    struct fake_merge_call merges[FAKE_WS_MAX];
    int nmerges;
    struct fake_keep_call keeps[FAKE_WS_MAX];
    int nkeeps;
    int worktree_slots[FAKE_WS_MAX];
    int nworktrees;
    struct fake_found found[FAKE_WS_MAX];
    int nfound;
    char changed[512]; /* what changed() answers, one path a line */
    int nchanged;      /* changed() calls */
    char changed_commit[ZERG_OID_MAX], changed_base[ZERG_OID_MAX];
    int ntips, ngates;
    const struct zerg_state *state; /* read at each merge call */
    const struct zerg_graph *graph;
};

/* The fake oid of tip n: 40 hex digits. */
void fake_ws_oid(char buf[ZERG_OID_MAX], int n);
/* The tree of the tip fake_ws_oid(n) a merge made. */
void fake_ws_tree(char buf[ZERG_OID_MAX], int n);
/* The fake commit a worker made for (task, attempt): 40 hex digits. */
void fake_commit_oid(char buf[ZERG_OID_MAX], const char *task, int attempt);
/* The current tip. */
const char *fake_ws_tip(const struct fake_ws *w);
/* The next merge of task has this outcome (one step each, in order; a
 * task without a step left merges DONE). */
void fake_ws_script(struct fake_ws *w, const char *task,
                    enum fake_merge_kind kind, const char *text);
/* A task commit merged() reports (slot -1) or worker_head(slot) does. */
void fake_ws_found(struct fake_ws *w, int slot, const char *task, int attempt,
                   const char *run_id, const char *oid);
/* Merge calls for task (all of them when task is NULL). */
int fake_ws_merges_of(const struct fake_ws *w, const char *task);

/* ---- fixture ---- */
struct fx {
    char dir[256];
    char state_dir[300];
    char run_dir[320]; /* the feature's run files */
    struct zerg_config cfg;
    struct zerg_graph *g;
    struct zerg_state s;
    struct zerg_log *log;
    struct zerg_policy *pol;
    struct fake fake;
    struct fake_ws *ws; /* NULL: isolation none */
    char prev_run_id[ZERG_RUN_ID_MAX];
    struct zerg_orch *o;
    struct zerg_clock clock;
    int64_t now;
};

struct fx *fx_new(const char *graph, int workers, int resume);
/* The same with the fake workspace passed as zerg_orch_opts.workspace. */
struct fx *fx_new_ws(const char *graph, int workers, int resume);
void fx_start(struct fx *x, int workers, int resume);
/* What happens after the orchestrator dies: a new one on the same
 * directory, over the state document as it is on disk. */
void fx_restart(struct fx *x, int workers);
/* The same as the CLI's --resume does it: a new run id, the state's old
 * one passed as prev_run_id. */
void fx_restart_run(struct fx *x, int workers, const char *run_id);
void fx_free(struct fx *x);
/* Replaces the fixture's policies with ones that load override_dir
 * (.zerg/policies/FILE = text) and starts a new orchestrator (1 worker). */
void fx_policies(struct fx *x, const char *file, const char *text);

void tick(struct fx *x);
void advance(struct fx *x, double seconds);
void heartbeat(struct fx *x, int slot, const char *task, int attempt,
               const char *step, int pct);
/* A running attempt's beat carrying its spend so far (DESIGN §20). */
void heartbeat_spend(struct fx *x, int slot, const char *task, int attempt,
                     int64_t input_tokens, double cost_usd);
/* A worker's result file, as it lands on disk ... */
void write_result(struct fx *x, int slot, uint64_t epoch, const char *task,
                  int attempt, int ok);
/* ... and the orchestrator told about it. */
void result(struct fx *x, int slot, uint64_t epoch, const char *task,
            int attempt, int ok);
/* A passing result with a commit made from base (either may be ""). */
void result_commit(struct fx *x, int slot, uint64_t epoch, const char *task,
                   int attempt, const char *base, const char *commit);
/* A passing result from slot's current epoch that spent cost_usd (what an
 * agent executor reports). */
void result_cost(struct fx *x, int slot, const char *task, int attempt,
                 double cost_usd);
void exited(struct fx *x, int slot, int wstatus);
enum zerg_task_status status_of(struct fx *x, const char *id);
struct zerg_task_state *task_of(struct fx *x, const char *id);
/* Spawns all slots and makes them ready. */
void start_ready(struct fx *x);
/* Runs the assigned task of slot to completion. */
void complete_slot(struct fx *x, int slot);
/* Runs the assigned task of slot and passes it with a commit made from
 * the assignment's base (fake_commit_oid); returns the task's index. */
int commit_slot(struct fx *x, int slot);
void finish_workers(struct fx *x);
/* The slot's assignment as the worker reads it. */
struct zerg_assign assign_of(struct fx *x, int slot);
/* .zerg/monitor.jsonl of the fixture's project (caller frees). */
char *fx_events(struct fx *x);
/* How many events named event the log holds. */
int fx_count_events(struct fx *x, const char *event);

/* Event lines on the slot's stdout, as a worker sends them: a heartbeat
 * (seq from fx_line_seq, which a test may move) and a complete result. */
extern int64_t fx_line_seq;
void fx_hb_line(struct fx *x, int slot, uint64_t epoch, const char *task,
                int attempt, const char *step);
/* The same, naming the stage's process group. */
void fx_hb_line_group(struct fx *x, int slot, uint64_t epoch, const char *task,
                      int attempt, const char *step, int task_pgid);
void fx_result_line(struct fx *x, int slot, uint64_t epoch, const char *task,
                    int attempt);

#endif
