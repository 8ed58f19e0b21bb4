/* test_orch_slot.c - the worker-slot table (src/orch/orch_slot.c).
 *
 * The life cycle itself is stepped in test_orchestrator.c; here: the
 * table in docs/wiki/Resilience-Architecture.md is the one the code
 * renders (ZERG_UPDATE_DOCS=1 rewrites it), and the persisted status is a
 * function of the state. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orch/orch_internal.h"

static void test_slot_table_in_docs(void **state)
{
    (void)state;
    char buf[16384];
    int n = orch_slot_table_markdown(buf, sizeof buf);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    tu_check_doc_table("docs/wiki/Resilience-Architecture.md", "slot", buf);
}

/* Every state has a name, and the helpers agree with the states. */
static void test_slot_state_predicates(void **state)
{
    (void)state;
    struct slot sl = {0};
    for (int s = 0; s < SLOT_NSTATES; s++) {
        sl.state = (enum slot_state)s;
        assert_string_not_equal(orch_slot_state_name(sl.state), "?");
        int alive = s == SLOT_STARTING || s == SLOT_READY || s == SLOT_BUSY ||
                    s == SLOT_KILLING;
        assert_int_equal(slot_alive(&sl), alive);
        assert_int_equal(slot_in_pool(&sl), alive || s == SLOT_BACKOFF);
    }
    sl.state = SLOT_KILLING;
    sl.killed_from = SLOT_BUSY;
    assert_true(slot_ready(&sl));
    sl.killed_from = SLOT_STARTING;
    assert_false(slot_ready(&sl));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_table_in_docs),
        cmocka_unit_test(test_slot_state_predicates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
