/* test_policy_parity.c - the rules written in C (the `*_builtin` of
 * src/lua/policy_hooks.c and src/lua/policy_reconcile.c, used when even
 * the bundled Lua fails) decide exactly like the bundled policies.
 *
 * Every row runs twice through include/zerg/policy.h on one policy: once
 * as the core does (the bundled Lua decides) and once with
 * zerg_policy_force_builtin on.  The two answers must agree in every
 * output field and in the whole `why` except who decided; a row that
 * does not is printed with both answers, and the test fails once all
 * rows ran.  The Lua is the reference: a change to either side that
 * alters a decision fails here.  Rows are generated over the config
 * and inputs the core passes (src/orch/), with their edges: attempt
 * 0/1/huge, ages a nanosecond either side of a threshold, counts under,
 * at and over a cap, each failure kind, each reconcile divergence, scope
 * path lists around the number a reason names and its cut. */
#include "testutil.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/graph.h"
#include "zerg/json.h"
#include "zerg/policy.h"

#define S ZERG_NS_PER_S
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct zerg_config cfg;
static struct zerg_policy *pol;
static int rows, mismatches;
static size_t fixes_made, fixes_dropped; /* by the Lua: rows not vacuous */
static size_t reruns_made;               /* of fixes_made, the reruns */
static char row[256];                    /* the row being run, for messages */

static int setup(void **state)
{
    (void)state;
    struct zerg_err err = {0};
    zerg_config_defaults(&cfg);
    pol = zerg_policy_new(NULL, &cfg, NULL, &err);
    if (!pol)
        fail_msg("zerg_policy_new: %s", err.msg);
    rows = mismatches = 0;
    fixes_made = fixes_dropped = reruns_made = 0;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    zerg_policy_free(pol);
    zerg_config_free(&cfg);
    return 0;
}

/* Asserts enough rows ran and none disagreed. */
static void assert_parity(int min_rows)
{
    print_message("%d rows, %d mismatches\n", rows, mismatches);
    assert_int_equal(mismatches, 0);
    assert_true(rows >= min_rows);
}

static void mismatch(const char *what, const char *lua, const char *c)
{
    if (mismatches++ < 20)
        print_message("MISMATCH %s: %s\n  lua: %s\n  C:   %s\n", row, what, lua,
                      c);
}

static void same_int(const char *what, long long lua, long long c)
{
    char a[32], b[32];
    if (lua == c)
        return;
    snprintf(a, sizeof a, "%lld", lua);
    snprintf(b, sizeof b, "%lld", c);
    mismatch(what, a, b);
}

static void same_str(const char *what, const char *lua, const char *c)
{
    if (strcmp(lua, c) != 0)
        mismatch(what, lua, c);
}

/* The why of one decision with who decided blanked out, encoded (caller
 * frees); frees why.  Fails the test when src did not decide: a row
 * the bundled Lua could not answer compares the C rule with itself. */
static char *why_text(zerg_json *why, const char *src)
{
    if (!why)
        fail_msg("%s: no why", row);
    const char *who = zerg_json_as_str(zerg_json_get(why, "policy"));
    if (!who || strcmp(who, src) != 0)
        fail_msg("%s: decided by %s, expected %s", row, who ? who : "?", src);
    zerg_json_set_str(why, "policy", "-");
    zerg_json_set_str(why, "file", "-");
    char *text = zerg_json_encode(why, NULL, NULL);
    zerg_json_free(why);
    if (!text)
        fail_msg("%s: cannot encode why", row);
    return text;
}

static void same_why(zerg_json *lua, zerg_json *c)
{
    char *a = why_text(lua, "bundled"), *b = why_text(c, "builtin");
    same_str("why", a, b);
    free(a);
    free(b);
    rows++;
}

/* ---- backoff.delay --------------------------------------------------- */

static const enum zerg_backoff strategies[] = {
    ZERG_BACKOFF_EXPONENTIAL, ZERG_BACKOFF_LINEAR, ZERG_BACKOFF_FIXED};

static const struct {
    double base, max;
} delays[] = {
    {2, 30},          /* spawn defaults */
    {30, 300},        /* task defaults */
    {0.5, 0.75},      /* fractions */
    {0.001, 0.001},   /* the smallest duration */
    {30, 20},         /* base over max: max */
    {100, 604800},    /* max past the 1 h clamp */
    {604800, 604800}, /* every delay clamped */
};

static const int attempts[] = {
    INT_MIN, -1, 0,    1,    2,    3,    4,    5,      10,          31,
    63,      64, 1023, 1024, 1025, 1100, 5000, 100000, INT_MAX - 1, INT_MAX};

static void set_backoff(int spawn, enum zerg_backoff s, double base, double max)
{
    /* The other kind gets different keys: picking the wrong ones shows. */
    enum zerg_backoff other =
        s == ZERG_BACKOFF_FIXED ? ZERG_BACKOFF_LINEAR : ZERG_BACKOFF_FIXED;
    cfg.spawn_backoff_strategy = spawn ? s : other;
    cfg.spawn_backoff_base_ns = zerg_s_to_ns(spawn ? base : 7);
    cfg.spawn_backoff_max_ns = zerg_s_to_ns(spawn ? max : 9);
    cfg.backoff_strategy = spawn ? other : s;
    cfg.backoff_base_ns = zerg_s_to_ns(spawn ? 7 : base);
    cfg.backoff_max_ns = zerg_s_to_ns(spawn ? 9 : max);
}

static void backoff_row(const char *kind, int attempt)
{
    zerg_json *wl = NULL, *wc = NULL;
    zerg_policy_force_builtin(pol, 0);
    int64_t lua = zerg_policy_backoff_ns(pol, kind, attempt, &wl);
    zerg_policy_force_builtin(pol, 1);
    int64_t c = zerg_policy_backoff_ns(pol, kind, attempt, &wc);
    zerg_policy_force_builtin(pol, 0);
    same_int("delay_ns", lua, c);
    same_why(wl, wc);
}

static void test_backoff(void **state)
{
    (void)state;
    for (int spawn = 0; spawn <= 1; spawn++)
        for (size_t s = 0; s < N(strategies); s++)
            for (size_t d = 0; d < N(delays); d++) {
                set_backoff(spawn, strategies[s], delays[d].base,
                            delays[d].max);
                for (size_t a = 0; a < N(attempts); a++) {
                    snprintf(row, sizeof row,
                             "backoff %s %s base %g max %g attempt %d",
                             spawn ? "spawn" : "task",
                             zerg_backoff_name(strategies[s]), delays[d].base,
                             delays[d].max, attempts[a]);
                    backoff_row(spawn ? "spawn" : "task", attempts[a]);
                }
            }
    assert_int_equal(zerg_policy_error_count(pol), 0);
    assert_parity(2 * 3 * 7 * 20);
}

/* ---- stale.task / stale.worker --------------------------------------- */

static const double thresholds[] = {0.001, 2.5, 120, 600, 604800};

/* Clock readings the last progress or change can have: the start of the
 * monotonic clock, a few seconds in, and a clock so far on that a
 * nanosecond is lost when it becomes seconds. */
static const int64_t lasts[] = {0, 7 * S + 123, INT64_C(1000000000000000000)};

/* Ages relative to the threshold t (ns). */
static int64_t age_at(int i, int64_t t)
{
    const int64_t ages[] = {-5 * S, 0, t - S, t - 1, t, t + 1, t + S, 10 * t};
    return ages[i];
}

#define NAGES 8

static void stale_task_row(int worker, int64_t started, int64_t last,
                           int64_t now)
{
    zerg_json *wl = NULL, *wc = NULL;
    const char *id = "T-L1-001";
    zerg_policy_force_builtin(pol, 0);
    int lua = zerg_policy_stale_task(pol, id, worker, started, last, now, &wl);
    zerg_policy_force_builtin(pol, 1);
    int c = zerg_policy_stale_task(pol, id, worker, started, last, now, &wc);
    zerg_policy_force_builtin(pol, 0);
    same_int("stale", lua, c);
    same_why(wl, wc);
}

static void stale_worker_row(int worker, int64_t seq, int64_t last, int64_t now)
{
    zerg_json *wl = NULL, *wc = NULL;
    zerg_policy_force_builtin(pol, 0);
    int lua = zerg_policy_stale_worker(pol, worker, seq, last, now, &wl);
    zerg_policy_force_builtin(pol, 1);
    int c = zerg_policy_stale_worker(pol, worker, seq, last, now, &wc);
    zerg_policy_force_builtin(pol, 0);
    same_int("stale", lua, c);
    same_why(wl, wc);
}

static void test_stale(void **state)
{
    (void)state;
    for (size_t t = 0; t < N(thresholds); t++) {
        int64_t thr = zerg_s_to_ns(thresholds[t]);
        /* The other threshold differs: using the wrong one shows. */
        cfg.task_stale_timeout_ns = thr;
        cfg.heartbeat_stale_threshold_ns = thr * 3 + S;
        for (size_t l = 0; l < N(lasts); l++)
            for (int a = 0; a < NAGES; a++) {
                int64_t now = lasts[l] + age_at(a, thr);
                snprintf(row, sizeof row,
                         "stale.task timeout %g last %lld now %lld",
                         thresholds[t], (long long)lasts[l], (long long)now);
                stale_task_row(a % 3, lasts[l] - a * S, lasts[l], now);
            }
        cfg.heartbeat_stale_threshold_ns = thr;
        cfg.task_stale_timeout_ns = thr * 3 + S;
        for (size_t l = 0; l < N(lasts); l++)
            for (int a = 0; a < NAGES; a++) {
                int64_t now = lasts[l] + age_at(a, thr);
                snprintf(row, sizeof row,
                         "stale.worker threshold %g last %lld now %lld",
                         thresholds[t], (long long)lasts[l], (long long)now);
                stale_worker_row(a % 3, a * 17, lasts[l], now);
            }
    }
    assert_int_equal(zerg_policy_error_count(pol), 0);
    assert_parity(2 * 5 * 3 * NAGES);
}

/* ---- respawn.decide -------------------------------------------------- */

static const struct {
    int code, sig;
} exits[] = {{0, 0}, {1, 0}, {137, 0}, {-1, SIGKILL}, {-1, SIGSEGV}};

static void respawn_row(const struct zerg_respawn_in *in)
{
    zerg_json *wl = NULL, *wc = NULL;
    zerg_policy_force_builtin(pol, 0);
    int lua = zerg_policy_respawn(pol, in, &wl);
    zerg_policy_force_builtin(pol, 1);
    int c = zerg_policy_respawn(pol, in, &wc);
    zerg_policy_force_builtin(pol, 0);
    same_int("respawn", lua, c);
    same_why(wl, wc);
}

static void test_respawn(void **state)
{
    (void)state;
    static const int caps[] = {0, 1, 5, 1000};
    static const int lefts[] = {-1, 0, 1, 7};
    for (int on = 0; on <= 1; on++)
        for (size_t k = 0; k < N(caps); k++)
            for (int d = -1; d <= 1; d++) { /* under, at, over the cap */
                int count = caps[k] + d < 0 ? 0 : caps[k] + d;
                for (size_t l = 0; l < N(lefts); l++) {
                    size_t e = (k + l + (size_t)(d + 1)) % N(exits);
                    struct zerg_respawn_in in = {
                        .slot = (int)l,
                        .respawn_count = count,
                        .exit_code = exits[e].code,
                        .signal = exits[e].sig,
                        .uptime_ns = (int64_t)e * 3 * S + 5,
                        .was_ready = (int)(e & 1),
                        .work_left = lefts[l],
                    };
                    cfg.auto_respawn = on;
                    cfg.max_respawn_attempts = caps[k];
                    snprintf(row, sizeof row,
                             "respawn auto %d cap %d count %d work_left %d "
                             "exit %d/%d",
                             on, caps[k], count, lefts[l], exits[e].code,
                             exits[e].sig);
                    respawn_row(&in);
                }
            }
    assert_int_equal(zerg_policy_error_count(pol), 0);
    assert_parity(2 * 4 * 3 * 4);
}

/* ---- retry.decide ---------------------------------------------------- */

/* The kinds src/orch/orchestrator.c and orch_workers.c pass, with the
 * exit codes and signals that come with them; NULL reads as "exit". */
static const struct {
    const char *kind;
    int code, sig;
} failures[] = {
    {"exit", 1, 0},
    {"exit", -1, SIGTERM},
    {"verification", 2, 0},
    {"timeout", -1, SIGKILL},
    {"crash", -1, SIGSEGV},
    {"crash", 139, 0},
    {"heartbeat_stale", -1, SIGKILL},
    {NULL, 3, 0},
};

static const struct {
    int retries, crashes;
    enum zerg_backoff strategy;
    double base, max;
} budgets[] = {
    {3, 3, ZERG_BACKOFF_EXPONENTIAL, 30, 300}, /* defaults */
    {0, 1, ZERG_BACKOFF_LINEAR, 2, 10},        /* no retries at all */
    {100, 100, ZERG_BACKOFF_FIXED, 0.25, 0.25},
    {100, 1, ZERG_BACKOFF_EXPONENTIAL, 1000, 604800}, /* past 1 h */
    {5, 2, ZERG_BACKOFF_LINEAR, 5000, 604800},        /* all past 1 h */
};

static void retry_row(const struct zerg_retry_in *in)
{
    zerg_json *wl = NULL, *wc = NULL;
    struct zerg_retry_out lua, c;
    zerg_policy_force_builtin(pol, 0);
    zerg_policy_retry(pol, in, &lua, &wl);
    zerg_policy_force_builtin(pol, 1);
    zerg_policy_retry(pol, in, &c, &wc);
    zerg_policy_force_builtin(pol, 0);
    same_int("retry", lua.retry, c.retry);
    same_int("charge", lua.charge, c.charge);
    same_int("delay_ns", lua.delay_ns, c.delay_ns);
    same_str("reason", lua.reason, c.reason);
    same_why(wl, wc);
}

/* Counts under, at and over a budget b (never below 0). */
static int around(int b, int i)
{
    return b + i - 1 < 0 ? 0 : b + i - 1;
}

static void retry_budget(size_t b)
{
    cfg.retry_attempts = budgets[b].retries;
    cfg.max_task_crashes = budgets[b].crashes;
    cfg.backoff_strategy = budgets[b].strategy;
    cfg.backoff_base_ns = zerg_s_to_ns(budgets[b].base);
    cfg.backoff_max_ns = zerg_s_to_ns(budgets[b].max);
    for (size_t f = 0; f < N(failures); f++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) {
                struct zerg_retry_in in = {
                    .task_id = "T-L2-007",
                    .retry_count = around(budgets[b].retries, r),
                    .crash_count = around(budgets[b].crashes, k),
                    .attempt = r + k + 1,
                    .failure = failures[f].kind,
                    .exit_code = failures[f].code,
                    .signal = failures[f].sig,
                };
                snprintf(row, sizeof row,
                         "retry %s %d/%d budget %d retries %d crashes %d "
                         "(%s %g..%g)",
                         failures[f].kind ? failures[f].kind : "(null)",
                         failures[f].code, failures[f].sig, budgets[b].retries,
                         in.retry_count, in.crash_count,
                         zerg_backoff_name(budgets[b].strategy),
                         budgets[b].base, budgets[b].max);
                retry_row(&in);
            }
}

static void test_retry(void **state)
{
    (void)state;
    for (size_t b = 0; b < N(budgets); b++)
        retry_budget(b);
    assert_int_equal(zerg_policy_error_count(pol), 0);
    assert_parity(5 * 8 * 9);
}

/* ---- reconcile.check ------------------------------------------------- */

static void same_fix(size_t i, const struct zerg_fix *a,
                     const struct zerg_fix *b)
{
    char what[32];
    snprintf(what, sizeof what, "fix #%zu task", i + 1);
    same_str(what, a->task, b->task);
    snprintf(what, sizeof what, "fix #%zu level", i + 1);
    same_int(what, a->level, b->level);
    snprintf(what, sizeof what, "fix #%zu fix", i + 1);
    same_str(what, a->fix, b->fix);
    snprintf(what, sizeof what, "fix #%zu kind", i + 1);
    same_int(what, a->kind, b->kind);
    snprintf(what, sizeof what, "fix #%zu reason", i + 1);
    same_str(what, a->reason, b->reason);
}

/* Checks snap both ways; the dropped fixes count as errors on both. */
static void reconcile_row(const zerg_json *snap)
{
    zerg_json *wl = NULL, *wc = NULL;
    struct zerg_fix *fl = NULL, *fc = NULL;
    size_t nl = 0, nc = 0;
    int64_t e0 = zerg_policy_error_count(pol);
    zerg_policy_force_builtin(pol, 0);
    assert_int_equal(zerg_policy_reconcile(pol, snap, &fl, &nl, &wl), 0);
    int64_t e1 = zerg_policy_error_count(pol);
    zerg_policy_force_builtin(pol, 1);
    assert_int_equal(zerg_policy_reconcile(pol, snap, &fc, &nc, &wc), 0);
    zerg_policy_force_builtin(pol, 0);
    same_int("errors (dropped fixes)", e1 - e0,
             zerg_policy_error_count(pol) - e1);
    fixes_made += nl;
    fixes_dropped += (size_t)(e1 - e0);
    same_int("fixes", (long long)nl, (long long)nc);
    for (size_t i = 0; i < nl && i < nc; i++)
        same_fix(i, &fl[i], &fc[i]);
    for (size_t i = 0; i < nl; i++)
        reruns_made += fl[i].kind == ZERG_FIX_RERUN;
    free(fl);
    free(fc);
    same_why(wl, wc);
}

static zerg_json *parse(const char *text)
{
    zerg_json *j = zerg_json_parse(text, strlen(text), NULL);
    if (!j)
        fail_msg("bad snapshot in the test: %s", text);
    return j;
}

#define LONG_ID                                                                \
    "A-L1-"                                                                    \
    "0123456789012345678901234567890123456789012345678901234567890123456789"

/* One snapshot per divergence and per edge of it; each runs light and
 * thorough. */
static const char *const snapshots[] = {
    /* nothing to look at */
    "{}",
    "{\"tasks\": {}, \"levels\": []}",
    "{\"thorough\": true, \"current_level\": 1, \"tasks\": {"
    " \"A-L1-001\": {\"status\": \"complete\", \"level\": 1,"
    "  \"graph_level\": 1, \"worker\": -1, \"worker_alive\": false,"
    "  \"deps\": []}},"
    " \"levels\": [{\"status\": \"complete\", \"tasks\": 1,"
    "  \"unfinished\": 0}]}",
    /* requeue: dead worker, no worker, worker unknown, alive, not running */
    "{\"tasks\": {"
    " \"A-L1-001\": {\"status\": \"in_progress\", \"level\": 1,"
    "  \"worker\": 0, \"worker_alive\": false},"
    " \"A-L1-002\": {\"status\": \"claimed\", \"level\": 1,"
    "  \"worker\": 1, \"worker_alive\": true},"
    " \"A-L1-003\": {\"status\": \"claimed\", \"level\": 1},"
    " \"A-L1-004\": {\"status\": \"in_progress\", \"level\": 1,"
    "  \"worker\": -1, \"worker_alive\": false},"
    " \"A-L1-005\": {\"status\": \"claimed\", \"level\": 1, \"worker\": 12,"
    "  \"worker_alive\": null},"
    " \"A-L1-006\": {\"status\": \"pending\", \"level\": 1, \"worker\": 3,"
    "  \"worker_alive\": false},"
    " \"A-L1-007\": {\"status\": \"waiting_retry\", \"level\": 1}},"
    " \"levels\": [{\"status\": \"running\", \"tasks\": 7,"
    "  \"unfinished\": 7}]}",
    /* set_level: from graph_level, from the id, neither; with a requeue */
    "{\"tasks\": {"
    " \"B-L2-001\": {\"status\": \"pending\", \"level\": 0,"
    "  \"graph_level\": 3},"
    " \"B-L2-002\": {\"status\": \"pending\", \"level\": 0,"
    "  \"graph_level\": 0},"
    " \"B-L007-003\": {\"status\": \"complete\"},"
    " \"B-L0-004\": {\"status\": \"pending\", \"level\": null},"
    " \"plain\": {\"status\": \"pending\", \"level\": -1},"
    " \"x-Ly-L4-z\": {\"status\": \"failed\", \"level\": 0},"
    " \"B-L5\": {\"status\": \"pending\"},"
    " \"B-L2-006\": {\"status\": \"in_progress\", \"level\": 0,"
    "  \"graph_level\": 2, \"worker\": 2, \"worker_alive\": false},"
    " \"N-L3-007\": {\"status\": \"claimed\", \"level\": 0}}}",
    /* a level from the id too large for an int: the fixes are dropped */
    "{\"thorough\": true, \"tasks\": {"
    " \"C-L99999999999-001\": {\"status\": \"complete\", \"level\": 0},"
    " \"C-L99999999999999999999-002\": {\"status\": \"complete\"},"
    " \"C-L9223372036854775807-003\": {\"status\": \"in_progress\"}}}",
    /* block: failed dep, blocked dep, fine deps, unknown dep, not pending */
    "{\"thorough\": true, \"tasks\": {"
    " \"D-L1-001\": {\"status\": \"failed\", \"level\": 1},"
    " \"D-L1-002\": {\"status\": \"blocked\", \"level\": 1},"
    " \"D-L1-003\": {\"status\": \"complete\", \"level\": 1},"
    " \"D-L2-001\": {\"status\": \"pending\", \"level\": 2,"
    "  \"deps\": [\"D-L1-003\", \"D-L1-002\", \"D-L1-001\"]},"
    " \"D-L2-002\": {\"status\": \"pending\", \"level\": 2,"
    "  \"deps\": [\"D-L1-001\"]},"
    " \"D-L2-003\": {\"status\": \"pending\", \"level\": 2,"
    "  \"deps\": [\"D-L1-003\", \"gone\"]},"
    " \"D-L2-004\": {\"status\": \"waiting_retry\", \"level\": 2,"
    "  \"deps\": [\"D-L1-001\"]},"
    " \"D-L2-005\": {\"status\": \"pending\", \"level\": 0,"
    "  \"deps\": [\"D-L1-002\"]},"
    " \"D-L2-006\": {\"status\": \"pending\", \"level\": 2,"
    "  \"deps\": [\"D-L1-003\", null, \"D-L1-001\"]},"
    " \"D-L2-007\": {\"status\": \"pending\", \"level\": 2,"
    "  \"deps\": [7, \"D-L1-001\"]}},"
    " \"levels\": [{\"status\": \"complete\", \"tasks\": 3,"
    "  \"unfinished\": 0}, {\"status\": \"running\", \"tasks\": 7,"
    "  \"unfinished\": 7}]}",
    /* reopen_level: from the unfinished count, from a listed task */
    "{\"current_level\": 3, \"tasks\": {"
    " \"E-L2-002\": {\"status\": \"claimed\", \"level\": 2,"
    "  \"worker\": 0, \"worker_alive\": true},"
    " \"E-L2-001\": {\"status\": \"in_progress\", \"level\": 2,"
    "  \"worker\": 1, \"worker_alive\": true}},"
    " \"levels\": [{\"status\": \"complete\", \"tasks\": 4,"
    "  \"unfinished\": 2}, {\"status\": \"complete\", \"tasks\": 2,"
    "  \"unfinished\": 0}, {\"status\": \"running\", \"tasks\": 1,"
    "  \"unfinished\": 1}, {\"status\": \"complete\", \"tasks\": 1,"
    "  \"unfinished\": 0}]}",
    /* a listed task without a status keeps its level open */
    "{\"tasks\": {\"F-L1-001\": {\"level\": 1}},"
    " \"levels\": [{\"status\": \"complete\", \"tasks\": 1}]}",
    /* complete_level: thorough only; a zero count; counts from tasks */
    "{\"current_level\": 3, \"tasks\": {"
    " \"G-L1-001\": {\"status\": \"complete\", \"level\": 1},"
    " \"G-L1-002\": {\"status\": \"failed\", \"level\": 1},"
    " \"G-L2-001\": {\"status\": \"blocked\", \"level\": 2},"
    " \"G-L3-001\": {\"status\": \"complete\", \"level\": 3},"
    " \"G-L4-001\": {\"status\": \"complete\", \"level\": 4},"
    " \"G-L5-001\": {\"status\": \"pending\", \"level\": 5}},"
    " \"levels\": [{\"status\": \"running\", \"tasks\": 2,"
    "  \"unfinished\": 0}, {\"status\": \"pending\"},"
    " {\"status\": \"pending\", \"tasks\": 0, \"unfinished\": 0},"
    " null, {\"status\": \"pending\", \"tasks\": 1, \"unfinished\": 0},"
    " {\"status\": \"complete\", \"tasks\": 0, \"unfinished\": 3}]}",
    /* levels keyed "n"; keys that are not level numbers */
    "{\"tasks\": {\"H-L2-001\": {\"status\": \"pending\", \"level\": 2}},"
    " \"levels\": {\"3\": {\"status\": \"complete\", \"tasks\": 2,"
    "  \"unfinished\": 1}, \"1\": {\"status\": \"pending\", \"tasks\": 1,"
    "  \"unfinished\": 0}, \"2\": {\"status\": \"complete\"},"
    "  \"x\": {\"status\": \"pending\"}, \"4\": null}}",
    /* the order of the fixes: ids sorted, several fixes per task */
    "{\"thorough\": true, \"tasks\": {"
    " \"Z-L1-9\": {\"status\": \"in_progress\", \"level\": 0,"
    "  \"graph_level\": 1, \"worker\": 4, \"worker_alive\": false},"
    " \"A-L2-1\": {\"status\": \"pending\", \"level\": 0,"
    "  \"deps\": [\"M-L1-5\"]},"
    " \"M-L1-5\": {\"status\": \"failed\", \"level\": 1},"
    " \"M-L1-10\": {\"status\": \"complete\", \"level\": 1},"
    " \"a-L1-1\": {\"status\": \"complete\", \"level\": 1},"
    " \"-L1-\": {\"status\": \"complete\"},"
    " \"\": {\"status\": \"claimed\", \"level\": 1}},"
    " \"levels\": [{\"status\": \"complete\", \"tasks\": 6,"
    "  \"unfinished\": 2}, {\"status\": \"pending\", \"tasks\": 1,"
    "  \"unfinished\": 1}]}",
    /* rerun: a commit gone from the branch, kept, unknown, none, empty,
     * short; on a task that is not complete; with another fix */
    "{\"isolation\": \"worktree\", \"branch\": \"zerg/f/integration\","
    " \"current_level\": 3, \"tasks\": {"
    " \"R-L1-001\": {\"status\": \"complete\", \"level\": 1,"
    "  \"commit\": \"0123456789abcdef0123456789abcdef01234567\","
    "  \"merged\": false},"
    " \"R-L1-002\": {\"status\": \"complete\", \"level\": 1,"
    "  \"commit\": \"89abcdef0123456789abcdef0123456789abcdef\","
    "  \"merged\": true},"
    " \"R-L1-003\": {\"status\": \"complete\", \"level\": 1,"
    "  \"commit\": \"fedcba9876543210fedcba9876543210fedcba98\"},"
    " \"R-L1-004\": {\"status\": \"complete\", \"level\": 1},"
    " \"R-L2-001\": {\"status\": \"complete\", \"level\": 0,"
    "  \"commit\": \"abc\", \"merged\": false},"
    " \"R-L2-002\": {\"status\": \"complete\", \"level\": 2,"
    "  \"commit\": \"\", \"merged\": false},"
    " \"R-L2-003\": {\"status\": \"failed\", \"level\": 2,"
    "  \"commit\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "  \"merged\": false},"
    " \"R-L2-004\": {\"status\": \"complete\", \"level\": 2,"
    "  \"commit\": 7, \"merged\": false},"
    " \"R-L2-005\": {\"status\": \"complete\", \"level\": 2,"
    "  \"commit\": \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\","
    "  \"merged\": 0}},"
    " \"levels\": [{\"status\": \"complete\", \"tasks\": 4,"
    "  \"unfinished\": 0}, {\"status\": \"running\", \"tasks\": 5,"
    "  \"unfinished\": 0}]}",
    /* rerun: no branch name, a branch that is not a string, a branch long
     * enough to cut the reason; not worktree */
    "{\"isolation\": \"worktree\", \"tasks\": {"
    " \"S-L1-001\": {\"status\": \"complete\", \"level\": 1,"
    "  \"commit\": \"0123456789abcdef\", \"merged\": false}}}",
    "{\"isolation\": \"worktree\", \"branch\": 12, \"tasks\": {"
    " \"S-L1-001\": {\"status\": \"complete\", \"level\": 1,"
    "  \"commit\": \"0123456789abcdef\", \"merged\": false}}}",
    "{\"isolation\": \"worktree\", \"branch\": \"zerg/" LONG_ID LONG_ID
    "/integration\", \"tasks\": {"
    " \"S-L1-001\": {\"status\": \"complete\", \"level\": 1,"
    "  \"commit\": \"0123456789abcdef\", \"merged\": false}}}",
    "{\"isolation\": \"none\", \"branch\": \"b\", \"tasks\": {"
    " \"S-L1-001\": {\"status\": \"complete\", \"level\": 1,"
    "  \"commit\": \"0123456789abcdef\", \"merged\": false}}}",
    /* an id too long for a fix is dropped; a long reason is cut */
    "{\"tasks\": {"
    " \"" LONG_ID "\": {\"status\": \"in_progress\", \"level\": 1,"
    "  \"worker\": 1, \"worker_alive\": false},"
    " \"A-L1-short\": {\"status\": \"pending\", \"level\": 1,"
    "  \"deps\": [\"" LONG_ID LONG_ID "\"]},"
    " \"" LONG_ID LONG_ID "\": {\"status\": \"failed\", \"level\": 1}}}",
};

static void run_snapshot(zerg_json *snap, const char *label)
{
    for (int thorough = 0; thorough <= 1; thorough++) {
        zerg_json_set_bool(snap, "thorough", thorough);
        snprintf(row, sizeof row, "reconcile %s %s", label,
                 thorough ? "thorough" : "light");
        reconcile_row(snap);
    }
}

static void test_reconcile_divergences(void **state)
{
    (void)state;
    snprintf(row, sizeof row, "reconcile (no snapshot)");
    reconcile_row(NULL);
    for (size_t i = 0; i < N(snapshots); i++) {
        zerg_json *snap = parse(snapshots[i]);
        char label[32];
        snprintf(label, sizeof label, "snapshot #%zu", i);
        run_snapshot(snap, label);
        zerg_json_free(snap);
    }
    assert_parity(1 + 2 * (int)N(snapshots));
    print_message("%zu fixes, %zu rows with fixes dropped\n", fixes_made,
                  fixes_dropped);
    assert_true(fixes_made >= 50);
    assert_true(fixes_dropped >= 4);
    /* R-L1-001, R-L2-001 and S-L1-001 in the three worktree rows with a
     * branch of any kind, thorough only */
    assert_int_equal(reruns_made, 5);
}

/* ---- reconcile, generated: one task, its dependency, two levels ------ */

static const char *const statuses[] = {
    "pending", "claimed",       "in_progress", "complete",
    "failed",  "waiting_retry", "blocked",
};
static const char *const level_statuses[] = {"pending", "running", "complete"};

struct gen {
    size_t status, alive, level, dep, mark, unfinished;
};

/* The task T-L1-002 as one row says; alive 0 false, 1 true, 2 absent;
 * level 0 none, 1 level 0, 2 level 1; dep 0 none, 1 missing, else the
 * status of D-L1-001 (a task of the same level). */
static zerg_json *gen_snapshot(const struct gen *g)
{
    zerg_json *snap = zerg_json_obj(), *tasks = zerg_json_obj();
    zerg_json *t = zerg_json_obj(), *levels = zerg_json_arr();
    zerg_json_set_str(t, "status", statuses[g->status]);
    zerg_json_set_num(t, "worker", g->alive == 2 ? -1 : 2);
    if (g->alive < 2)
        zerg_json_set_bool(t, "worker_alive", (int)g->alive);
    if (g->level)
        zerg_json_set_num(t, "level", (double)g->level - 1);
    zerg_json_set_num(t, "graph_level", g->level == 1 ? 0 : 1);
    zerg_json *deps = zerg_json_arr();
    if (g->dep)
        zerg_json_push(deps, zerg_json_str("D-L1-001"));
    zerg_json_set(t, "deps", deps);
    zerg_json_add(tasks, "T-L1-002", t);
    if (g->dep >= 2) {
        zerg_json *d = zerg_json_obj();
        zerg_json_set_str(d, "status", statuses[g->dep - 2]);
        zerg_json_set_num(d, "level", 1);
        zerg_json_add(tasks, "D-L1-001", d);
    }
    zerg_json *l1 = zerg_json_obj(), *l2 = zerg_json_obj();
    zerg_json_set_str(l1, "status", level_statuses[g->mark]);
    zerg_json_set_num(l1, "tasks", 2);
    zerg_json_set_num(l1, "unfinished", (double)g->unfinished);
    zerg_json_set_str(l2, "status", "pending");
    zerg_json_set_num(l2, "tasks", 1);
    zerg_json_set_num(l2, "unfinished", 0);
    zerg_json_push(levels, l1);
    zerg_json_push(levels, l2);
    zerg_json_set(snap, "current_level", zerg_json_num(2));
    zerg_json_set(snap, "tasks", tasks);
    zerg_json_set(snap, "levels", levels);
    return snap;
}

static void test_reconcile_generated(void **state)
{
    (void)state;
    struct gen g;
    for (g.status = 0; g.status < N(statuses); g.status++)
        for (g.alive = 0; g.alive < 3; g.alive++)
            for (g.level = 0; g.level < 3; g.level++)
                for (g.dep = 0; g.dep < 2 + N(statuses); g.dep++)
                    for (g.mark = 0; g.mark < 3; g.mark++)
                        for (g.unfinished = 0; g.unfinished < 2;
                             g.unfinished++) {
                            zerg_json *snap = gen_snapshot(&g);
                            char label[96];
                            snprintf(label, sizeof label,
                                     "%s alive %zu level %zu dep %zu "
                                     "L1 %s unfinished %zu",
                                     statuses[g.status], g.alive, g.level,
                                     g.dep, level_statuses[g.mark],
                                     g.unfinished);
                            run_snapshot(snap, label);
                            zerg_json_free(snap);
                        }
    assert_parity(2 * 7 * 3 * 3 * 9 * 3 * 2);
    print_message("%zu fixes\n", fixes_made);
    assert_true(fixes_made >= 1000);
}

/* ---- reconcile, generated: the branch read back (rerun) -------------- */

static const char *const commits[] = {NULL, "", "c0ffee", LONG_ID};
static const char *const isolations[] = {NULL, "worktree", "none"};

struct gen_branch {
    size_t status, commit, merged, isolation, branch;
};

/* merged 0 absent, 1 false, 2 true, 3 the number 0; branch 0 absent,
 * 1 a name, 2 a number. */
static zerg_json *gen_branch_snapshot(const struct gen_branch *g)
{
    zerg_json *snap = zerg_json_obj(), *tasks = zerg_json_obj();
    zerg_json *t = zerg_json_obj();
    zerg_json_set_str(t, "status", statuses[g->status]);
    zerg_json_set_num(t, "level", 1);
    if (commits[g->commit])
        zerg_json_set_str(t, "commit", commits[g->commit]);
    if (g->merged == 1 || g->merged == 2)
        zerg_json_set_bool(t, "merged", g->merged == 2);
    else if (g->merged == 3)
        zerg_json_set_num(t, "merged", 0);
    zerg_json_add(tasks, "T-L1-001", t);
    if (isolations[g->isolation])
        zerg_json_set_str(snap, "isolation", isolations[g->isolation]);
    if (g->branch == 1)
        zerg_json_set_str(snap, "branch", "zerg/f/integration");
    else if (g->branch == 2)
        zerg_json_set_num(snap, "branch", 3);
    zerg_json_set(snap, "tasks", tasks);
    return snap;
}

static void test_reconcile_branch_generated(void **state)
{
    (void)state;
    struct gen_branch g;
    for (g.status = 0; g.status < N(statuses); g.status++)
        for (g.commit = 0; g.commit < N(commits); g.commit++)
            for (g.merged = 0; g.merged < 4; g.merged++)
                for (g.isolation = 0; g.isolation < N(isolations);
                     g.isolation++)
                    for (g.branch = 0; g.branch < 3; g.branch++) {
                        zerg_json *snap = gen_branch_snapshot(&g);
                        char label[96];
                        snprintf(label, sizeof label,
                                 "%s commit %zu merged %zu isolation %zu "
                                 "branch %zu",
                                 statuses[g.status], g.commit, g.merged,
                                 g.isolation, g.branch);
                        run_snapshot(snap, label);
                        zerg_json_free(snap);
                    }
    assert_parity(2 * 7 * 4 * 4 * 3 * 3);
    print_message("%zu fixes, %zu reruns\n", fixes_made, reruns_made);
    /* complete, two non-empty commits, merged false, worktree, thorough:
     * one rerun per branch kind */
    assert_int_equal(reruns_made, 2 * 3);
}

/* ---- scope.decide ---------------------------------------------------- */

#define SCOPE_ROWS 10

/* Path i of a list of kind k: plain, long enough to cut the reason, and
 * multi-byte at every offset the cut can fall on. */
static void scope_path(char *buf, size_t size, int k, size_t i)
{
    static const char *const plain[] = {"Makefile", "a b, c", "", "x/y.c"};
    if (k == 0) {
        snprintf(buf, size, "%s", plain[i % N(plain)]);
    } else if (k == 1) {
        memset(buf, 'a' + (int)i, size - 1);
        buf[size - 1] = '\0';
    } else {
        int n =
            snprintf(buf, size, "%.*s", (int)(i + (size_t)k) % 7, "zzzzzzz");
        for (; n + 4 < (int)size; n += 3)
            memcpy(buf + n, "\xe2\x82\xac", 4); /* the euro sign */
    }
}

static void scope_row(enum zerg_scope_hook h, const struct zerg_task *t,
                      const char *const *paths, size_t n, size_t reason_size)
{
    zerg_json *wl = NULL, *wc = NULL;
    char rl[256], rc[256];
    zerg_policy_force_builtin(pol, 0);
    int lua = zerg_policy_scope_hook(pol, h, t, paths, n, rl, reason_size, &wl);
    zerg_policy_force_builtin(pol, 1);
    int c = zerg_policy_scope_hook(pol, h, t, paths, n, rc, reason_size, &wc);
    zerg_policy_force_builtin(pol, 0);
    same_int("verdict", lua, c);
    same_str("reason", rl, rc);
    same_why(wl, wc);
}

static void test_scope(void **state)
{
    (void)state;
    static char *files[] = {"src/a.c", "src/b.c"};
    static char buf[SCOPE_ROWS][300];
    const struct zerg_task task = {.id = "S-L1-001",
                                   .title = "scope",
                                   .level = 1,
                                   .files_create = {files, 2},
                                   .files_modify = {files, 1}};
    const char *paths[SCOPE_ROWS];
    static const size_t sizes[] = {256, 64, 23, 1};
    for (int h = ZERG_SCOPE_DECIDE; h <= ZERG_SCOPE_MISSING; h++)
        for (int k = 0; k < 2 + 7; k++)
            for (size_t n = h == ZERG_SCOPE_DECIDE ? 0 : 1; n <= SCOPE_ROWS;
                 n++)
                for (size_t z = 0; z < N(sizes); z++) {
                    for (size_t i = 0; i < n; i++) {
                        scope_path(buf[i], k == 1 ? 100 + 20 * i : 120, k, i);
                        paths[i] = buf[i];
                    }
                    snprintf(row, sizeof row,
                             "scope hook %d kind %d paths %zu size %zu", h, k,
                             n, sizes[z]);
                    scope_row((enum zerg_scope_hook)h, k == 2 ? NULL : &task,
                              paths, n, sizes[z]);
                }
    assert_int_equal(zerg_policy_error_count(pol), 0);
    assert_parity(9 * 11 * 4 + 2 * 9 * 10 * 4);
}

/* ---- the seam itself ------------------------------------------------- */

/* Forcing the C rule is visible, counts no error, and turns off again. */
static void test_force_builtin(void **state)
{
    (void)state;
    zerg_json *why = NULL;
    zerg_policy_force_builtin(pol, 1);
    zerg_policy_backoff_ns(pol, "spawn", 1, &why);
    assert_string_equal(zerg_json_as_str(zerg_json_get(why, "policy")),
                        "builtin");
    assert_string_equal(zerg_json_as_str(zerg_json_get(why, "file")),
                        "(built in)");
    zerg_json_free(why);
    zerg_policy_force_builtin(pol, 0);
    zerg_policy_backoff_ns(pol, "spawn", 1, &why);
    assert_string_equal(zerg_json_as_str(zerg_json_get(why, "policy")),
                        "bundled");
    zerg_json_free(why);
    assert_int_equal(zerg_policy_error_count(pol), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_force_builtin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_respawn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconcile_divergences, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reconcile_generated, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reconcile_branch_generated, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_scope, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
