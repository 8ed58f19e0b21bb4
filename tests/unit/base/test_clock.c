/* test_clock.c - the fake clock and ISO-8601 formatting and parsing
 * (src/base/clock.c). */
#include "testutil.h"

#include <errno.h>
#include <string.h>

#include "zerg/clock.h"

/* 2026-02-03T05:41:55.123Z */
#define T_2026 (INT64_C(1770097315) * ZERG_NS_PER_S + 123 * ZERG_NS_PER_MS)

static void test_fake_clock(void **state)
{
    struct zerg_clock_fake fake = {.mono_ns = 5, .wall_ns = T_2026};
    struct zerg_clock c = zerg_clock_fake(&fake);
    assert_int_equal(zerg_clock_mono(&c), 5);
    assert_int_equal(zerg_clock_wall(&c), T_2026);
    fake.mono_ns += 30 * ZERG_NS_PER_S;
    assert_int_equal(zerg_clock_mono(&c), 5 + 30 * ZERG_NS_PER_S);
}

static void test_system_clock(void **state)
{
    int64_t a = zerg_clock_mono(&zerg_clock_system);
    int64_t b = zerg_clock_mono(&zerg_clock_system);
    assert_true(b >= a);
    /* Wall time is after 2024-01-01 on any machine running this. */
    assert_true(zerg_clock_wall(&zerg_clock_system) >
                INT64_C(1704067200) * ZERG_NS_PER_S);
}

static void test_format(void **state)
{
    char buf[ZERG_TS_MAX];
    assert_string_equal(zerg_clock_iso8601(T_2026, buf),
                        "2026-02-03T05:41:55.123Z");
    assert_string_equal(zerg_clock_iso8601(0, buf), "1970-01-01T00:00:00.000Z");
    /* Sub-millisecond parts are truncated, not rounded. */
    assert_string_equal(zerg_clock_iso8601(999999, buf),
                        "1970-01-01T00:00:00.000Z");
    assert_string_equal(zerg_clock_iso8601(-1, buf),
                        "1969-12-31T23:59:59.999Z");
    /* Leap day, end of a leap year, year 2000 (leap), 2100 (not). */
    assert_string_equal(
        zerg_clock_iso8601(INT64_C(951782400) * ZERG_NS_PER_S, buf),
        "2000-02-29T00:00:00.000Z");
    assert_string_equal(
        zerg_clock_iso8601(INT64_C(1735689599999) * ZERG_NS_PER_MS, buf),
        "2024-12-31T23:59:59.999Z");
    assert_string_equal(
        zerg_clock_iso8601(INT64_C(4107542400) * ZERG_NS_PER_S, buf),
        "2100-03-01T00:00:00.000Z");
}

static int64_t parse_ok(const char *s)
{
    int64_t ns = -42;
    if (zerg_clock_parse_iso8601(s, &ns) != 0)
        fail_msg("cannot parse %s", s);
    return ns;
}

static void test_parse(void **state)
{
    assert_int_equal(parse_ok("2026-02-03T05:41:55.123Z"), T_2026);
    assert_int_equal(parse_ok("2026-02-03T05:41:55Z"),
                     T_2026 - 123 * ZERG_NS_PER_MS);
    assert_int_equal(parse_ok("2026-02-03T05:41:55.123+00:00"), T_2026);
    assert_int_equal(parse_ok("2026-02-03T05:41:55.1Z"),
                     T_2026 - 23 * ZERG_NS_PER_MS);
    assert_int_equal(parse_ok("2026-02-03T05:41:55.123456789Z"),
                     T_2026 + 456789);
    assert_int_equal(parse_ok("1970-01-01T00:00:00.000Z"), 0);
    assert_int_equal(parse_ok("1969-12-31T23:59:59.999Z"), -ZERG_NS_PER_MS);
    assert_int_equal(parse_ok("2000-02-29T00:00:00Z"),
                     INT64_C(951782400) * ZERG_NS_PER_S);
}

static void test_roundtrip(void **state)
{
    char buf[ZERG_TS_MAX];
    /* Every millisecond-aligned instant survives format then parse: step
     * through several centuries by an odd stride. */
    for (int64_t ms = -INT64_C(2208988800000); ms < INT64_C(7258118400000);
         ms += INT64_C(86400000) * 37 + 12345) {
        int64_t ns = ms * ZERG_NS_PER_MS;
        assert_int_equal(parse_ok(zerg_clock_iso8601(ns, buf)), ns);
    }
}

static void test_parse_rejects(void **state)
{
    const char *bad[] = {
        "",
        "2026-02-03",
        "2026-02-03 05:41:55Z",      /* space instead of T */
        "2026-02-03T05:41:55",       /* no zone */
        "2026-02-03T05:41:55+01:00", /* not UTC */
        "2026-13-03T05:41:55Z",      /* month 13 */
        "2026-00-03T05:41:55Z",
        "2026-02-29T05:41:55Z", /* 2026 is not a leap year */
        "2100-02-29T00:00:00Z", /* nor is 2100 */
        "2026-04-31T00:00:00Z", /* April has 30 days */
        "2026-02-03T24:00:00Z",
        "2026-02-03T05:60:00Z",
        "2026-12-31T23:59:60Z",            /* no leap seconds */
        "2026-02-03T05:41:55.Z",           /* empty fraction */
        "2026-02-03T05:41:55.1234567891Z", /* more than ns precision */
        "2026-02-03T05:41:55.123Zjunk",
        "26-02-03T05:41:55Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ns = 7;
        if (zerg_clock_parse_iso8601(bad[i], &ns) != -EINVAL)
            fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(ns, 7);
    }
    assert_int_equal(zerg_clock_parse_iso8601(NULL, NULL), -EINVAL);
    /* Past what nanoseconds in an int64_t hold: out of range, no
     * overflow (a hand-edited state file said 2999). */
    int64_t ns = 7;
    assert_int_equal(zerg_clock_parse_iso8601("2999-01-01T00:00:00Z", &ns),
                     -ERANGE);
    assert_int_equal(zerg_clock_parse_iso8601("1600-01-01T00:00:00Z", &ns),
                     -ERANGE);
    assert_int_equal(ns, 7);
    assert_int_equal(zerg_clock_parse_iso8601("2262-01-01T00:00:00Z", &ns), 0);
}

static void test_conversions(void **state)
{
    assert_int_equal(zerg_s_to_ns(0.2), 200 * ZERG_NS_PER_MS);
    assert_true(zerg_ns_to_s(1500 * ZERG_NS_PER_MS) == 1.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fake_clock),
        cmocka_unit_test(test_system_clock),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_conversions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
