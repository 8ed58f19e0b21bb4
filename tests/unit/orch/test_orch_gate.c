/* test_orch_gate.c - where quality gates run (DESIGN §19): through the
 * launcher's gate_argv when it has one (container mode: a gate runs what
 * tasks wrote, so it runs where they ran), on the host only when the
 * launcher has none or gates.on_host opts out; a gate that times out has
 * its process group killed and its container stopped by the handle the
 * launcher gave.  The fake launcher records the request; the gate itself
 * is a real `sleep` the fake clock times out, so nothing waits. */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch/orch_internal.h"
#include "orch_fixture.h"

static const char one[] = "{\"feature\":\"t\",\"tasks\":["
                          "{\"id\":\"A\",\"level\":1,\"command\":\"true\"}]}";

static struct zerg_gate_req seen;
static char seen_dir[PATH_MAX], seen_top[PATH_MAX], stopped[64];
static int argv_calls, stop_calls;

static int g_argv(struct zerg_launcher *l, const struct zerg_gate_req *req,
                  struct zerg_argv *out, char *handle, size_t handle_n,
                  struct zerg_err *err)
{
    (void)l, (void)err;
    argv_calls++;
    seen = *req;
    snprintf(seen_dir, sizeof seen_dir, "%s", req->dir);
    snprintf(seen_top, sizeof seen_top, "%s", req->top);
    out->n = 3;
    out->v = calloc(4, sizeof *out->v);
    out->v[0] = strdup("sh");
    out->v[1] = strdup("-c");
    out->v[2] = strdup("exec sleep 100");
    snprintf(handle, handle_n, "fake-gate-%d", argv_calls);
    return 0;
}

static void g_stop(struct zerg_launcher *l, const char *handle)
{
    (void)l;
    stop_calls++;
    snprintf(stopped, sizeof stopped, "%s", handle);
}

static struct zerg_launcher_ops gate_ops;

/* One task, one required gate that sleeps past its 1 s timeout; the
 * fixture's launcher given gate ops when with_ops. */
static struct fx *gate_fx(int with_ops, int on_host)
{
    struct fx *x = fx_new_ws(one, 1, 0);
    zerg_orch_free(x->o);
    gate_ops = *x->fake.base.ops;
    gate_ops.gate_argv = with_ops ? g_argv : NULL;
    gate_ops.gate_stop = with_ops ? g_stop : NULL;
    x->fake.base.ops = &gate_ops;
    x->cfg.gates_on_host = on_host;
    x->cfg.gates = calloc(1, sizeof *x->cfg.gates);
    x->cfg.ngates = 1;
    x->cfg.gates[0] = (struct zerg_gate){.name = strdup("unit"),
                                         .command = strdup("sleep 100"),
                                         .required = 1,
                                         .timeout_ns = S(1)};
    argv_calls = stop_calls = 0;
    stopped[0] = '\0';
    fx_start(x, 1, 0);
    start_ready(x);
    commit_slot(x, 0);
    tick(x); /* level 1 closes: its gate starts */
    assert_true(x->o->gate_pid > 0);
    return x;
}

/* The gate timed out: killed, a required failure. */
static void time_out(struct fx *x)
{
    pid_t pid = x->o->gate_pid;
    advance(x, 2);
    assert_true(x->o->gate_failed);
    assert_int_equal(x->o->gate_pid, 0);
    assert_int_equal(kill(pid, 0), -1);
}

static void test_gate_runs_through_launcher(void **st)
{
    (void)st;
    struct fx *x = gate_fx(1, 0);
    assert_int_equal(argv_calls, 1);
    assert_string_equal(seen.name, "unit");
    assert_string_equal(seen.command, "sleep 100");
    assert_int_equal(seen.level, 1);
    assert_string_equal(seen.feature, "t");
    assert_string_equal(seen_dir, x->dir); /* the fake's gate tree */
    assert_int_equal(strncmp(seen_dir, seen_top, strlen(seen_top)), 0);
    char *log = fx_events(x);
    assert_non_null(strstr(log, "\"where\":\"container\""));
    assert_non_null(strstr(log, "\"container\":\"fake-gate-1\""));
    free(log);
    time_out(x);
    assert_int_equal(stop_calls, 1);
    assert_string_equal(stopped, "fake-gate-1");
    fx_free(x);
}

static void test_gate_on_host_opts_out(void **st)
{
    (void)st;
    struct fx *x = gate_fx(1, 1);
    assert_int_equal(argv_calls, 0);
    char *log = fx_events(x);
    assert_non_null(strstr(log, "\"where\":\"host\""));
    free(log);
    time_out(x);
    assert_int_equal(stop_calls, 0);
    fx_free(x);
}

static void test_gate_host_without_ops(void **st)
{
    (void)st;
    struct fx *x = gate_fx(0, 0);
    char *log = fx_events(x);
    assert_non_null(strstr(log, "\"where\":\"host\""));
    free(log);
    time_out(x);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate_runs_through_launcher),
        cmocka_unit_test(test_gate_on_host_opts_out),
        cmocka_unit_test(test_gate_host_without_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
