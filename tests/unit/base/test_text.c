/* test_text.c - the small text helpers (src/base/text.c): suggestions'
 * edit distance, the last line, appending into a fixed buffer, the tail,
 * and the UTF-8-safe cut every reason and name shown in zerg goes
 * through. */
#include "testutil.h"

#include <string.h>

#include "zerg/text.h"

static void test_cut_never_splits_utf8(void **state)
{
    (void)state;
    char buf[16];
    /* "é" is 2 bytes, "€" 3: a cut inside either steps back before it. */
    zerg_text_cut(buf, sizeof buf, "abcé", 4);
    assert_string_equal(buf, "abc");
    zerg_text_cut(buf, sizeof buf, "abcé", 5);
    assert_string_equal(buf, "abcé");
    zerg_text_cut(buf, sizeof buf, "a€b", 3);
    assert_string_equal(buf, "a");
    zerg_text_cut(buf, sizeof buf, "a€b", 2);
    assert_string_equal(buf, "a");
    zerg_text_cut(buf, sizeof buf, "€", 2);
    assert_string_equal(buf, "");
    /* The buffer bounds the cut too, with the same care. */
    zerg_text_cut(buf, 5, "abcé and more", 255);
    assert_string_equal(buf, "abc");
    zerg_text_cut(buf, sizeof buf, "short", 255);
    assert_string_equal(buf, "short");
    buf[0] = 'x';
    zerg_text_cut(buf, 0, "anything", 3); /* no room: untouched */
    assert_int_equal(buf[0], 'x');
}

static void test_append_and_tail(void **state)
{
    (void)state;
    char buf[8];
    size_t off = 0;
    zerg_text_append(buf, sizeof buf, &off, "%s", "abcd");
    zerg_text_append(buf, sizeof buf, &off, "%d", 12345);
    assert_string_equal(buf, "abcd123");
    assert_int_equal(off, 9); /* what the whole text needed */
    const char *t = "one\ntwo\nthree\n";
    assert_string_equal(t + zerg_text_tail_start(t, strlen(t), 2),
                        "two\nthree\n");
    char line[16];
    zerg_last_line("first\n  last one  \n\n", line, sizeof line);
    assert_string_equal(line, "last one");
    assert_int_equal(zerg_edit_distance("dealy", "delay"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_never_splits_utf8),
        cmocka_unit_test(test_append_and_tail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
