/* test_orch_slot.c - the worker-slot table (src/orch/orch_slot.c).
 *
 * The life cycle itself is stepped in test_orchestrator.c; here: the
 * table in docs/wiki/Resilience-Architecture.md is the one the code
 * renders (ZERG_UPDATE_DOCS=1 rewrites it), the persisted status is a
 * function of the state, and an event the table refuses changes nothing
 * and is logged with the event, the state and what came with it. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch/orch_internal.h"
#include "orch_fixture.h"

static void test_slot_table_in_docs(void **state)
{
    (void)state;
    char buf[16384];
    int n = orch_slot_table_markdown(buf, sizeof buf);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    tu_check_doc_table("docs/wiki/Resilience-Architecture.md", "slot", buf);
}

/* Every state has a name, and the helpers agree with the states: ready
 * is a fact of the live incarnation, not a state it was killed from. */
static void test_slot_state_predicates(void **state)
{
    (void)state;
    struct slot sl = {0};
    for (int s = 0; s < SLOT_NSTATES; s++) {
        sl.state = (enum slot_state)s;
        assert_string_not_equal(orch_slot_state_name(sl.state), "?");
        int going = s == SLOT_STOPPING || s == SLOT_KILLING_UNREADY ||
                    s == SLOT_KILLING_STALE || s == SLOT_KILLING_TIMEOUT;
        int alive =
            s == SLOT_STARTING || s == SLOT_READY || s == SLOT_BUSY || going;
        assert_int_equal(slot_alive(&sl), alive);
        assert_int_equal(slot_going(&sl), going);
        assert_int_equal(slot_in_pool(&sl), alive || s == SLOT_BACKOFF);
        sl.ready = 1;
        assert_int_equal(slot_ready(&sl), alive);
        sl.ready = 0;
        assert_false(slot_ready(&sl));
    }
}

static void test_refused_event_logged_whole(void **state)
{
    (void)state;
    struct fx *x = fx_new(graph3, 1, 0);
    struct slot *sl = &x->o->slots[0];
    /* Not yet spawned, or starting: no task can be assigned in either. */
    enum slot_state before = sl->state;
    assert_true(before == SLOT_BACKOFF || before == SLOT_STARTING);
    struct slot_ev_arg arg = {.task = 1};
    orch_slot_event(x->o, sl, SLOT_EV_ASSIGN, &arg, x->now);
    assert_int_equal(sl->state, before);
    assert_int_equal(sl->task, -1);
    char *ev = fx_events(x);
    char want[160];
    snprintf(want, sizeof want,
             "\"event\":\"ASSIGN\",\"state\":\"%s\",\"task\":\"%s\"",
             orch_slot_state_name(before), orch_tid(x->o, 1));
    assert_non_null(strstr(ev, "\"event\":\"slot_event_refused\""));
    if (!strstr(ev, want))
        fail_msg("no %s in the log:\n%s", want, ev);
    free(ev);
    fx_free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_table_in_docs),
        cmocka_unit_test(test_slot_state_predicates),
        cmocka_unit_test(test_refused_event_logged_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
