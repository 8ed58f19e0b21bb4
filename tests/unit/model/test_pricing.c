/* test_pricing.c - executor.pricing (src/model/pricing.c): entries parse,
 * a prefix pattern matches, the first match wins, costs add up, and every
 * malformed entry is refused with the reason; the config loader names a
 * bad entry. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/pricing.h"

static void test_parse_and_cost(void **st)
{
    (void)st;
    struct zerg_price p;
    char model[64], why[160];
    assert_int_equal(zerg_pricing_parse("claude-opus-5-5=15/75/1.5/18.75",
                                        model, sizeof model, &p, why,
                                        sizeof why),
                     0);
    assert_string_equal(model, "claude-opus-5-5");
    double c = zerg_pricing_cost(&p, 1000000, 100000, 2000000, 0);
    assert_true(c > 15 + 7.5 + 3 - 1e-9 && c < 15 + 7.5 + 3 + 1e-9);
}

static void test_bad_entries(void **st)
{
    (void)st;
    static const char *const bad[] = {
        "",          "=1/2/3/4", "m",          "m=1/2/3",     "m=1/2/3/4/5",
        "m=a/2/3/4", "m=1//3/4", "m=-1/2/3/4", "m=1/2/3/1e9", "m=1/2/3/nan"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct zerg_price p;
        char why[160] = "";
        assert_int_equal(
            zerg_pricing_parse(bad[i], NULL, 0, &p, why, sizeof why), -1);
        assert_true(why[0] != '\0');
    }
}

static void test_find(void **st)
{
    (void)st;
    char *v[] = {"claude-sonnet-*=3/15/0.3/3.75", "claude-sonnet-5=9/9/9/9",
                 "gpt-5=1/8/0.1/0"};
    struct zerg_argv l = {v, 3};
    struct zerg_price p;
    assert_int_equal(zerg_pricing_find(&l, "claude-sonnet-5", &p), 1);
    assert_true(p.in == 3); /* the first match wins */
    assert_int_equal(zerg_pricing_find(&l, "gpt-5", &p), 1);
    assert_true(p.out == 8);
    assert_int_equal(zerg_pricing_find(&l, "gpt-5-mini", &p), 0);
    assert_int_equal(zerg_pricing_find(&l, "", &p), 0);
    /* A CLI that names no model (Codex, Gemini before its stats): only a
     * catch-all "*" prices it. */
    char *any[] = {"gpt-5=1/8/0.1/0", "*=2/4/0.2/0"};
    struct zerg_argv l2 = {any, 2};
    assert_int_equal(zerg_pricing_find(&l2, "", &p), 1);
    assert_true(p.in == 2);
    assert_int_equal(zerg_pricing_find(&l2, "gpt-5", &p), 1);
    assert_true(p.in == 1);
}

static void test_config_names_bad_entry(void **st)
{
    (void)st;
    const char *dir = tu_mkdtemp();
    tu_write(dir, "config.yaml",
             "executor:\n  pricing: [\"m=1/2/3/4\", \"opus=15/75/x/18\"]\n");
    char path[4096];
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    struct zerg_config c;
    struct zerg_err err = {0};
    zerg_config_defaults(&c);
    assert_true(zerg_config_load(&c, path, NULL, NULL, &err) < 0);
    assert_non_null(strstr(err.msg, "executor.pricing[1]"));
    assert_non_null(strstr(err.msg, "'x' is not a number"));
    zerg_config_free(&c);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_cost),
        cmocka_unit_test(test_bad_entries),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_config_names_bad_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
