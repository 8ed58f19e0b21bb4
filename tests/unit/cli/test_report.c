/* test_report.c - the HTML escaping of `zerg report` (src/cli/
 * report_html.c): every string a task or its log can carry reaches the
 * page only as text. The CLI is not a library, so its file is compiled
 * in here. */
#include "testutil.h"

#include <string.h>

#include "cli/report_html.c"

static void escapes_markup(void **state)
{
    (void)state;
    char out[128];
    size_t n = zerg_report_escape("<a href=\"x\">&'</a>", out, sizeof out);
    assert_string_equal(out,
                        "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    assert_int_equal(n, strlen(out));
}

static void replaces_control_characters(void **state)
{
    (void)state;
    char out[32];
    zerg_report_escape("a\x1b[31mb\tc\nd\x7f", out, sizeof out);
    assert_string_equal(out, "a?[31mb\tc\nd?");
}

static void truncates_at_entity_boundary(void **state)
{
    (void)state;
    char out[8];
    size_t n = zerg_report_escape("ab&cd", out, sizeof out);
    assert_int_equal(n, 9); /* "ab&amp;cd" */
    assert_string_equal(out, "ab&amp;");
    n = zerg_report_escape("abc&d", out, 6);
    assert_string_equal(out, "abc"); /* "&amp;" does not fit whole */
    assert_int_equal(zerg_report_escape("x<", NULL, 0), 5);
    assert_int_equal(zerg_report_escape(NULL, out, sizeof out), 0);
    assert_string_equal(out, "");
}

static void buffer_escapes_and_grows(void **state)
{
    (void)state;
    struct zerg_rbuf b = {0};
    zerg_rbuf_puts(&b, "<td>");
    zerg_rbuf_esc(&b, "T-1 \"<script>\"");
    zerg_rbuf_esc(&b, NULL);
    zerg_rbuf_printf(&b, "</td>%d", 42);
    assert_false(b.oom);
    assert_string_equal(b.s, "<td>T-1 &quot;&lt;script&gt;&quot;</td>42");
    for (int i = 0; i < 20000; i++)
        zerg_rbuf_esc(&b, "&");
    assert_int_equal(b.len, strlen(b.s));
    assert_int_equal(b.len, 41 + 20000 * 5);
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    size_t before = b.len;
    zerg_rbuf_printf(&b, "%s", big);
    assert_int_equal(b.len, before + sizeof big - 1);
    zerg_rbuf_close(&b);
    assert_null(b.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(escapes_markup),
        cmocka_unit_test(replaces_control_characters),
        cmocka_unit_test(truncates_at_entity_boundary),
        cmocka_unit_test(buffer_escapes_and_grows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
