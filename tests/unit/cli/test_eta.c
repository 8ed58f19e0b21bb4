/* test_eta.c - the time a run has left (src/cli/eta.c), with the clock
 * injected: estimates scaled by what this run measured, the durations of
 * the run before when the graph repeats, and running tasks counting what
 * is left of them. */
#include "testutil.h"

#include <string.h>

#include "cli/eta.c"
#include "zerg/graph.h"
#include "zerg/err.h"
#include "zerg/state.h"
#include "zerg/task_fsm.h"

#define S ZERG_NS_PER_S
#define T0 ((int64_t)1800000000 * S) /* a wall time */

static const char graph_text[] =
    "{\"feature\":\"f\",\"tasks\":["
    "{\"id\":\"A-L1-001\",\"level\":1,\"command\":\"true\","
    "\"estimate_minutes\":1},"
    "{\"id\":\"A-L1-002\",\"level\":1,\"command\":\"true\","
    "\"estimate_minutes\":2},"
    "{\"id\":\"A-L1-003\",\"level\":1,\"command\":\"true\","
    "\"estimate_minutes\":4},"
    "{\"id\":\"A-L1-004\",\"level\":1,\"command\":\"true\"}]}";

struct fx {
    struct zerg_graph *g;
    struct zerg_state s;
};

static int setup(void **state)
{
    static struct fx f;
    struct zerg_err err = {0};
    memset(&f, 0, sizeof f);
    assert_int_equal(
        zerg_graph_parse(&f.g, "g.json", graph_text, strlen(graph_text), &err),
        0);
    assert_int_equal(zerg_state_init(&f.s, f.g, "f", T0), 0);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    zerg_state_close(&f->s);
    zerg_graph_free(f->g);
    return 0;
}

static void done(struct zerg_task_state *t, int64_t ms)
{
    zerg_task_set_initial(t, ZERG_TASK_COMPLETE);
    t->duration_ms = ms;
}

/* Before anything finished the estimates count as they are (7 min of
 * estimated work, and the task without one the mean of the others). */
static void estimates_before_anything_ran(void **state)
{
    struct fx *f = *state;
    int64_t eta = zerg_eta_ns(f->g, &f->s, 1, T0);
    assert_int_equal(eta, (420 + 140) * S); /* 140: 420 s / 3 */
}

/* A task estimated at 1 min took 30 s: the others are expected at half
 * their estimate; the unestimated one at the mean measured (30 s). */
static void estimates_scaled_by_what_was_measured(void **state)
{
    struct fx *f = *state;
    done(&f->s.tasks[0], 30000);
    int64_t eta = zerg_eta_ns(f->g, &f->s, 1, T0);
    assert_int_equal(eta, (60 + 120 + 30) * S);
    /* Two workers share it. */
    assert_int_equal(zerg_eta_ns(f->g, &f->s, 2, T0), (60 + 120 + 30) * S / 2);
}

/* A running task counts what is left of it by the injected clock. */
static void running_task_counts_what_is_left(void **state)
{
    struct fx *f = *state;
    done(&f->s.tasks[0], 30000);
    zerg_task_set_initial(&f->s.tasks[2], ZERG_TASK_IN_PROGRESS);
    f->s.tasks[2].started_at_wall_ns = T0;
    int64_t at0 = zerg_eta_ns(f->g, &f->s, 1, T0);
    int64_t at90 = zerg_eta_ns(f->g, &f->s, 1, T0 + 90 * S);
    assert_int_equal(at0 - at90, 90 * S);
    /* Past its expected 2 min it counts nothing, never less. */
    int64_t late = zerg_eta_ns(f->g, &f->s, 1, T0 + 600 * S);
    assert_int_equal(late, (60 + 30) * S);
}

/* The graph repeats: the run before's durations count first, scaled by
 * how this run compares on the tasks that have both. */
static void durations_of_the_run_before(void **state)
{
    struct fx *f = *state;
    for (int i = 0; i < 4; i++)
        f->s.tasks[i].prev_duration_ms = 10000 * (i + 1);
    /* Nothing finished yet: 20 + 30 + 40 s + 10 s. */
    assert_int_equal(zerg_eta_ns(f->g, &f->s, 1, T0), 100 * S);
    done(&f->s.tasks[0], 20000); /* twice as slow as the run before */
    assert_int_equal(zerg_eta_ns(f->g, &f->s, 1, T0), 2 * (20 + 30 + 40) * S);
}

static void nothing_to_tell(void **state)
{
    static const char plain[] = "{\"feature\":\"f\",\"tasks\":[{\"id\":"
                                "\"B-L1-001\",\"level\":1,\"command\":"
                                "\"true\"}]}";
    (void)state;
    struct zerg_graph *g = NULL;
    struct zerg_state s;
    struct zerg_err err = {0};
    assert_int_equal(zerg_graph_parse(&g, "g.json", plain, strlen(plain), &err),
                     0);
    assert_int_equal(zerg_state_init(&s, g, "f", T0), 0);
    assert_int_equal(zerg_eta_ns(g, &s, 1, T0), -1);
    done(&s.tasks[0], 1000);
    assert_int_equal(zerg_eta_ns(g, &s, 1, T0), 0);
    zerg_state_close(&s);
    zerg_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(estimates_before_anything_ran, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(estimates_scaled_by_what_was_measured,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(running_task_counts_what_is_left, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(durations_of_the_run_before, setup,
                                        teardown),
        cmocka_unit_test(nothing_to_tell),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
