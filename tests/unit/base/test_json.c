/* test_json.c - the JSON tree (src/base/json.c) and its yajl text layer
 * (src/base/json_text.c): round trips, types, empty containers, escapes,
 * unicode, repeated keys, the depth limit, syntax errors, big strings and
 * the streaming writer.  The Lua -> tree rules
 * that decoding shares with the policy VMs are in tests/unit/lua/
 * test_convert.c. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/err.h"
#include "zerg/json.h"

static zerg_json *parse_ok(const char *text)
{
    struct zerg_err err = {0};
    zerg_json *v = zerg_json_parse(text, strlen(text), &err);
    if (!v)
        fail_msg("parse of %s failed: %s", text, err.msg);
    return v;
}

static char *encode_ok(const zerg_json *v)
{
    struct zerg_err err = {0};
    size_t len = 0;
    char *s = zerg_json_encode(v, &len, &err);
    if (!s)
        fail_msg("encode failed: %s", err.msg);
    assert_int_equal(len, strlen(s));
    return s;
}

/* Parses text, encodes it back and compares with want. */
static void assert_roundtrip(const char *text, const char *want)
{
    zerg_json *v = parse_ok(text);
    char *out = encode_ok(v);
    assert_string_equal(out, want);
    free(out);
    zerg_json_free(v);
}

static void assert_parse_error(const char *text, const char *words)
{
    struct zerg_err err = {0};
    zerg_json *v = zerg_json_parse(text, strlen(text), &err);
    assert_null(v);
    assert_int_equal(err.code, ZERG_ECORRUPT);
    assert_true(tu_contains(err.msg, words));
}

static void test_builders_and_accessors(void **state)
{
    zerg_json *o = zerg_json_obj();
    assert_int_equal(zerg_json_set_str(o, "name", "zerg"), 0);
    assert_int_equal(zerg_json_set_num(o, "n", 3), 0);
    assert_int_equal(zerg_json_set_bool(o, "ok", 1), 0);
    assert_int_equal(zerg_json_set_null(o, "none"), 0);
    assert_int_equal(zerg_json_set_str(o, "nul", NULL), 0);
    zerg_json *a = zerg_json_arr();
    assert_int_equal(zerg_json_push(a, zerg_json_num(1)), 0);
    assert_int_equal(zerg_json_push(a, zerg_json_str("x")), 0);
    assert_int_equal(zerg_json_set(o, "list", a), 0);

    assert_int_equal(zerg_json_len(o), 6);
    assert_string_equal(zerg_json_as_str(zerg_json_get(o, "name")), "zerg");
    assert_true(zerg_json_as_num(zerg_json_get(o, "n"), -1) == 3);
    assert_true(zerg_json_is(zerg_json_get(o, "ok"), ZERG_JSON_BOOL));
    assert_true(zerg_json_get(o, "ok")->u.boolean);
    assert_true(zerg_json_is(zerg_json_get(o, "nul"), ZERG_JSON_NULL));
    assert_string_equal(zerg_json_key_at(o, 5), "list");
    assert_int_equal(zerg_json_len(zerg_json_get(o, "list")), 2);
    assert_string_equal(zerg_json_as_str(zerg_json_at(a, 1)), "x");

    /* Wrong types and ranges give the defaults. */
    assert_null(zerg_json_get(o, "missing"));
    assert_null(zerg_json_get(a, "name"));
    assert_null(zerg_json_as_str(zerg_json_get(o, "n")));
    assert_true(zerg_json_as_num(zerg_json_get(o, "name"), 7.5) == 7.5);
    assert_null(zerg_json_at(a, 2));
    assert_null(zerg_json_key_at(a, 0));
    assert_int_equal(zerg_json_len(zerg_json_get(o, "name")), 0);
    assert_int_equal(zerg_json_push(o, zerg_json_null()), -EINVAL);
    assert_int_equal(zerg_json_set(a, "k", zerg_json_null()), -EINVAL);
    assert_string_equal(zerg_json_type_name(ZERG_JSON_STRING), "string");
    assert_string_equal(zerg_json_type_name(ZERG_JSON_OBJECT), "object");
    zerg_json_free(o);
    zerg_json_free(NULL);
}

static void test_set_replaces_and_keeps_order(void **state)
{
    zerg_json *o = zerg_json_obj();
    zerg_json_set_num(o, "z", 1);
    zerg_json_set_num(o, "a", 2);
    zerg_json_set_num(o, "m", 3);
    zerg_json_set_str(o, "a", "two");
    assert_int_equal(zerg_json_len(o), 3);
    char *s = encode_ok(o);
    assert_string_equal(s, "{\"z\":1,\"a\":\"two\",\"m\":3}");
    free(s);
    zerg_json_free(o);
}

static void test_dup_is_deep(void **state)
{
    zerg_json *v = parse_ok("{\"a\":[1,{\"b\":\"c\"},[]],\"d\":null}");
    zerg_json *c = zerg_json_dup(v);
    zerg_json_free(v);
    char *s = encode_ok(c);
    /* A parsed empty container is an empty object (see zerg/json.h). */
    assert_string_equal(s, "{\"a\":[1,{\"b\":\"c\"},{}],\"d\":null}");
    free(s);
    zerg_json_free(c);

    /* A C-built empty array stays an array through the copy. */
    zerg_json *o = zerg_json_obj();
    zerg_json_set(o, "deps", zerg_json_arr());
    c = zerg_json_dup(o);
    zerg_json_free(o);
    s = encode_ok(c);
    assert_string_equal(s, "{\"deps\":[]}");
    free(s);
    zerg_json_free(c);
}

static void test_roundtrip_types(void **state)
{
    assert_roundtrip("null", "null");
    assert_roundtrip("true", "true");
    assert_roundtrip("false", "false");
    assert_roundtrip("\"hi\"", "\"hi\"");
    assert_roundtrip(" [1, 2.5, -3, \"x\", null, true] ",
                     "[1,2.5,-3,\"x\",null,true]");
    /* Parsed objects come out with their keys sorted; both empty
     * containers come out as {}. */
    assert_roundtrip("{\"b\":1,\"a\":{\"d\":[],\"c\":{}}}",
                     "{\"a\":{\"c\":{},\"d\":{}},\"b\":1}");
    /* A repeated key keeps its last value, wherever it sorts. */
    assert_roundtrip("{\"b\":1,\"a\":2,\"b\":3,\"c\":4,\"a\":5}",
                     "{\"a\":5,\"b\":3,\"c\":4}");
}

/* "[]" and "{}" decode alike; the result is an empty object that every
 * accessor and zerg_json_is accept as an empty array too. */
static void assert_empty_both_ways(const zerg_json *v)
{
    assert_non_null(v);
    assert_true(zerg_json_is(v, ZERG_JSON_ARRAY));
    assert_true(zerg_json_is(v, ZERG_JSON_OBJECT));
    assert_int_equal(zerg_json_len(v), 0);
    assert_int_equal(v->u.arr.n, 0); /* a reader that looped to n */
    assert_int_equal(v->u.obj.n, 0);
    assert_null(zerg_json_at(v, 0));
    assert_null(zerg_json_key_at(v, 0));
    assert_null(zerg_json_get(v, "x"));
}

static void test_empty_containers(void **state)
{
    assert_roundtrip("[]", "{}");
    assert_roundtrip("{}", "{}");
    assert_roundtrip("[ [ ], { }, [\n] ]", "[{},{},{}]");
    assert_roundtrip("{\"deps\":[],\"files\":{\"create\":[]}}",
                     "{\"deps\":{},\"files\":{\"create\":{}}}");
    /* Re-decoding the output gives the same tree: a fixed point. */
    assert_roundtrip("{\"deps\":{},\"files\":{\"create\":{}}}",
                     "{\"deps\":{},\"files\":{\"create\":{}}}");

    zerg_json *v = parse_ok("{\"a\":[],\"o\":{},\"n\":[1],\"m\":{\"k\":1}}");
    assert_empty_both_ways(zerg_json_get(v, "a"));
    assert_empty_both_ways(zerg_json_get(v, "o"));
    /* Non-empty containers keep their one kind. */
    assert_true(zerg_json_is(zerg_json_get(v, "n"), ZERG_JSON_ARRAY));
    assert_false(zerg_json_is(zerg_json_get(v, "n"), ZERG_JSON_OBJECT));
    assert_true(zerg_json_is(zerg_json_get(v, "m"), ZERG_JSON_OBJECT));
    assert_false(zerg_json_is(zerg_json_get(v, "m"), ZERG_JSON_ARRAY));
    assert_false(zerg_json_is(zerg_json_get(v, "missing"), ZERG_JSON_ARRAY));
    zerg_json_free(v);

    /* Trees built in C keep their kinds when encoded; reading them, an
     * empty one is still both. */
    zerg_json *a = zerg_json_arr(), *o = zerg_json_obj();
    assert_empty_both_ways(a);
    assert_empty_both_ways(o);
    char *s = encode_ok(a);
    assert_string_equal(s, "[]");
    free(s);
    s = encode_ok(o);
    assert_string_equal(s, "{}");
    free(s);
    /* Builders do not change kinds: pushing onto an object is refused. */
    assert_int_equal(zerg_json_push(o, zerg_json_null()), -EINVAL);
    assert_int_equal(zerg_json_set(a, "k", zerg_json_null()), -EINVAL);
    zerg_json_free(a);
    zerg_json_free(o);
}

static void test_brackets_in_strings_are_text(void **state)
{
    /* "[]" inside strings and keys stays text, escaped quotes included. */
    assert_roundtrip("[\"[]\",\"a\\\"[]\",[]]", "[\"[]\",\"a\\\"[]\",{}]");
    zerg_json *v = parse_ok("{\"[]\":\"[ ]\",\"k\":\"\\\\\\\"[]\\\"\"}");
    assert_int_equal(zerg_json_len(v), 2);
    assert_string_equal(zerg_json_as_str(zerg_json_get(v, "[]")), "[ ]");
    assert_string_equal(zerg_json_as_str(zerg_json_get(v, "k")), "\\\"[]\"");
    zerg_json_free(v);
    v = parse_ok("\"[]\"");
    assert_true(zerg_json_is(v, ZERG_JSON_STRING));
    assert_string_equal(zerg_json_as_str(v), "[]");
    zerg_json_free(v);
}

static void test_numbers(void **state)
{
    zerg_json *a = zerg_json_arr();
    double nums[] = {
        123, 0,   -7,    1700000000123.0,       99999999999999.0,
        0.1, 1.5, 1e300, 1700000000123456789.0, 4503599627370497.0};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        zerg_json_push(a, zerg_json_num(nums[i]));
    char *s = encode_ok(a);
    assert_string_equal(s, "[123,0,-7,1700000000123,99999999999999,0.1,1.5,"
                           "1e+300,1.7000000001235e+18,4503599627370497]");
    free(s);
    zerg_json_free(a);

    zerg_json *v = parse_ok("[1e3, -0.25, 12345678901234]");
    assert_true(zerg_json_as_num(zerg_json_at(v, 0), 0) == 1000);
    assert_true(zerg_json_as_num(zerg_json_at(v, 1), 0) == -0.25);
    assert_true(zerg_json_as_num(zerg_json_at(v, 2), 0) == 12345678901234.0);
    zerg_json_free(v);
}

static void test_nan_is_an_encode_error(void **state)
{
    zerg_json *v = zerg_json_num(NAN);
    struct zerg_err err = {0};
    assert_null(zerg_json_encode(v, NULL, &err));
    assert_int_equal(err.code, -EINVAL);
    assert_true(tu_contains(err.msg, "must not be NaN or Inf"));
    zerg_json_free(v);
    assert_parse_error("[NaN]", "invalid char in json text at character 2");
}

static void test_escapes_and_unicode(void **state)
{
    zerg_json *v =
        parse_ok("\"a\\\"b\\\\c\\n\\t\\u00e9\\u20ac\\ud83d\\ude00\"");
    assert_string_equal(zerg_json_as_str(v),
                        "a\"b\\c\n\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    char *s = encode_ok(v);
    /* UTF-8 passes through; control characters and quotes are escaped. */
    assert_string_equal(s, "\"a\\\"b\\\\c\\n\\t\xc3\xa9\xe2\x82\xac"
                           "\xf0\x9f\x98\x80\"");
    free(s);
    zerg_json_free(v);

    zerg_json *n = zerg_json_strn("a\0b\x01", 4);
    s = encode_ok(n);
    assert_string_equal(s, "\"a\\u0000b\\u0001\"");
    zerg_json *back = parse_ok(s);
    assert_int_equal(back->u.str.len, 4);
    assert_memory_equal(back->u.str.s, "a\0b\x01", 4);
    free(s);
    zerg_json_free(n);
    zerg_json_free(back);

    zerg_json *o = zerg_json_obj();
    zerg_json_set_str(o, "k\"ey", "v");
    s = encode_ok(o);
    assert_string_equal(s, "{\"k\\\"ey\":\"v\"}");
    free(s);
    zerg_json_free(o);
}

/* "[[[...1...]]]" nested depth deep. */
static char *nested(int depth)
{
    char *s = malloc((size_t)depth * 2 + 2);
    memset(s, '[', (size_t)depth);
    s[depth] = '1';
    memset(s + depth + 1, ']', (size_t)depth);
    s[depth * 2 + 1] = '\0';
    return s;
}

/* {"a":{"a":...1...}} nested depth deep. */
static char *nested_obj(int depth)
{
    size_t n = (size_t)depth;
    char *s = malloc(n * 6 + 2);
    for (size_t i = 0; i < n; i++)
        memcpy(s + i * 5, "{\"a\":", 5);
    s[n * 5] = '1';
    memset(s + n * 5 + 1, '}', n);
    s[n * 6 + 1] = '\0';
    return s;
}

static void test_depth_limit(void **state)
{
    assert_int_equal(ZERG_JSON_MAX_DEPTH, 100);
    char *ok = nested(100);
    zerg_json *v = parse_ok(ok);
    char *out = encode_ok(v);
    assert_string_equal(out, ok);
    free(out);

    /* One more level in the tree is refused by the encoder. */
    zerg_json *outer = zerg_json_arr();
    zerg_json_push(outer, v);
    struct zerg_err err = {0};
    assert_null(zerg_json_encode(outer, NULL, &err));
    assert_int_equal(err.code, -EINVAL);
    assert_true(tu_contains(err.msg, "nested too deeply (more than 100"));
    zerg_json_free(outer);
    free(ok);

    char *deep = nested(101);
    assert_parse_error(deep, "nested too deeply (more than 100 levels) at "
                             "character 101");
    free(deep);

    /* Objects count the same way. */
    ok = nested_obj(100);
    v = parse_ok(ok);
    out = encode_ok(v);
    assert_string_equal(out, ok);
    free(out);
    zerg_json_free(v);
    free(ok);
    deep = nested_obj(101);
    assert_parse_error(deep, "nested too deeply (more than 100 levels)");
    free(deep);
}

static void test_syntax_errors(void **state)
{
    assert_parse_error("[1,2", "premature EOF at character 5");
    assert_parse_error("{\"a\":1,}", "invalid object key (must be a string) "
                                     "at character 8");
    assert_parse_error("", "premature EOF at character 1");
    assert_parse_error("[1] x", "trailing garbage at character 5");
    assert_parse_error("{\"a\" 1}", "separated by a colon (':') at "
                                    "character 6");
    assert_parse_error("\"abc", "premature EOF at character 5");
    assert_parse_error("[1,]", "unallowed token at this point in JSON text "
                               "at character 4");
    assert_parse_error("[\"a\x01\"]", "invalid character inside string");
    /* Positions refer to the caller's text, empty arrays and all. */
    assert_parse_error("[[], [], {\"a\":[] x}]",
                       "invalid char in json text at character 18");
}

static void test_truncated_document(void **state)
{
    /* Every prefix is an error saying where, and leaks nothing (ASan). */
    const char *doc = "{\"tasks\":[{\"id\":\"A-L1-001\",\"deps\":[]}]}";
    for (size_t n = 0; n < strlen(doc); n++) {
        struct zerg_err err = {0};
        zerg_json *v = zerg_json_parse(doc, n, &err);
        assert_null(v);
        assert_int_equal(err.code, ZERG_ECORRUPT);
        assert_true(tu_contains(err.msg, "JSON "));
        assert_true(tu_contains(err.msg, "at character"));
    }
}

static void test_big_string(void **state)
{
    size_t n = 5u << 20;
    char *big = malloc(n + 3);
    big[0] = '"';
    for (size_t i = 1; i <= n; i++)
        big[i] = (char)('a' + i % 26);
    big[n + 1] = '"';
    big[n + 2] = '\0';

    struct zerg_err err = {0};
    zerg_json *v = zerg_json_parse(big, n + 2, &err);
    assert_non_null(v);
    assert_int_equal(v->u.str.len, n);
    assert_memory_equal(v->u.str.s, big + 1, n);
    size_t len = 0;
    char *out = zerg_json_encode(v, &len, &err);
    assert_non_null(out);
    assert_int_equal(len, n + 2);
    assert_memory_equal(out, big, n + 2);
    free(out);
    zerg_json_free(v);
    free(big);
}

static void test_key_with_nul_is_rejected(void **state)
{
    assert_parse_error("{\"a\\u0000b\":1}", "key contains a NUL character");
}

static void test_large_object(void **state)
{
    /* A state-sized object: 5000 keys parse, stay sorted, encode back. */
    zerg_json *o = zerg_json_obj();
    char key[32];
    for (int i = 4999; i >= 0; i--) {
        snprintf(key, sizeof key, "T-%05d", i);
        zerg_json *t = zerg_json_obj();
        zerg_json_set_str(t, "status", "pending");
        zerg_json_set_num(t, "level", i % 7);
        zerg_json_set(t, "deps", zerg_json_arr());
        zerg_json_set(o, key, t);
    }
    char *s = encode_ok(o);
    assert_true(strncmp(s,
                        "{\"T-04999\":{\"status\":\"pending\",\"level\":1,"
                        "\"deps\":[]}",
                        47) == 0);
    zerg_json *back = parse_ok(s);
    assert_int_equal(zerg_json_len(back), 5000);
    assert_string_equal(zerg_json_key_at(back, 0), "T-00000");
    assert_string_equal(zerg_json_key_at(back, 4999), "T-04999");
    const zerg_json *t = zerg_json_get(back, "T-01234");
    assert_true(zerg_json_as_num(zerg_json_get(t, "level"), -1) == 1234 % 7);
    assert_true(zerg_json_is(zerg_json_get(t, "deps"), ZERG_JSON_ARRAY));
    free(s);
    zerg_json_free(back);
    zerg_json_free(o);
}

struct sink {
    struct zerg_jw_buf b;
    int calls, fail_at; /* the call that fails (0: none) */
};

static int sink_put(void *ctx, const char *data, size_t len)
{
    struct sink *k = ctx;
    if (++k->calls == k->fail_at)
        return -ENOSPC;
    return zerg_jw_buf_sink(&k->b, data, len);
}

/* {"path":..., "n":[...], "big":[0..1999], "tree":{...}} */
static void write_doc(struct zerg_jw *w)
{
    zerg_jw_obj(w);
    zerg_jw_str(w, "path");
    zerg_jw_str(w, "src/a.c");
    zerg_jw_str(w, "n");
    zerg_jw_arr(w);
    zerg_jw_int(w, INT64_C(1796132808716114));
    zerg_jw_int(w, INT64_C(-42));
    zerg_jw_num(w, 0.25);
    zerg_jw_num(w, -3.0);
    zerg_jw_bool(w, 0);
    zerg_jw_null(w);
    zerg_jw_arr_end(w);
    zerg_jw_str(w, "big");
    zerg_jw_arr(w);
    for (int i = 0; i < 2000; i++)
        zerg_jw_int(w, i);
    zerg_jw_arr_end(w);
    zerg_jw_str(w, "tree");
    zerg_json *t = parse_ok("{\"b\":[1],\"a\":\"x\\ny\"}");
    zerg_jw_value(w, t);
    zerg_json_free(t);
    zerg_jw_obj_end(w);
}

static void test_streaming_writer(void **state)
{
    struct sink k = {0};
    struct zerg_jw *w = zerg_jw_new(sink_put, &k);
    assert_non_null(w);
    write_doc(w);
    struct zerg_err err = {0};
    assert_int_equal(zerg_jw_finish(w, &err), 0);
    /* Written as produced, in pieces, not held to the end. */
    assert_true(k.calls > 1);
    /* Slashes are not escaped; big integers stay exact. */
    const char *head = "{\"path\":\"src/a.c\",\"n\":[1796132808716114,-42,"
                       "0.25,-3,false,null],\"big\":[0,1,2,";
    assert_true(strncmp(k.b.p, head, strlen(head)) == 0);
    assert_true(tu_contains(k.b.p, ",1998,1999],\"tree\":{\"a\":\"x\\ny\","
                                   "\"b\":[1]}}"));
    zerg_json *back = parse_ok(k.b.p);
    assert_int_equal(zerg_json_len(zerg_json_get(back, "big")), 2000);
    zerg_json_free(back);
    free(k.b.p);

    /* A failing sink: the first error sticks and is returned. */
    struct sink bad = {.fail_at = 1};
    w = zerg_jw_new(sink_put, &bad);
    write_doc(w);
    assert_int_equal(zerg_jw_failed(w), -ENOSPC);
    assert_int_equal(zerg_jw_finish(w, &err), -ENOSPC);
    assert_true(tu_contains(err.msg, "cannot write"));
    assert_int_equal(bad.calls, 1); /* nothing more was attempted */
    assert_null(bad.b.p);

    /* A NaN is refused, and nothing after it is written. */
    struct sink k2 = {0};
    w = zerg_jw_new(sink_put, &k2);
    zerg_jw_arr(w);
    zerg_jw_num(w, NAN);
    zerg_jw_num(w, 1);
    zerg_jw_arr_end(w);
    assert_int_equal(zerg_jw_failed(w), -EINVAL);
    assert_int_equal(zerg_jw_finish(w, &err), -EINVAL);
    assert_true(tu_contains(err.msg, "must not be NaN or Inf"));
    assert_int_equal(k2.calls, 0);
    assert_int_equal(zerg_jw_finish(NULL, &err), -ENOMEM);
}

struct items {
    char seen[256];
    size_t calls, stop_at; /* stop_at: the call that stops (0: none) */
    const char *text;      /* when set: each item's span gathers in spans */
    char spans[256];
};

static int on_item(void *ctx, size_t i, const zerg_json *item, size_t off,
                   size_t len)
{
    struct items *it = ctx;
    assert_int_equal(i, it->calls);
    if (++it->calls == it->stop_at)
        return -E2BIG;
    char *s = encode_ok(item);
    strncat(it->seen, s, sizeof it->seen - strlen(it->seen) - 2);
    strcat(it->seen, ";");
    free(s);
    if (it->text) {
        size_t used = strlen(it->spans);
        assert_true(used + len + 2 < sizeof it->spans);
        memcpy(it->spans + used, it->text + off, len);
        strcpy(it->spans + used + len, ";");
    }
    return 0;
}

static void test_parse_items(void **state)
{
    /* The items of the top-level "tasks" array come one by one, each
     * complete (nested containers, sorted keys), and are not kept. */
    const char *doc = "{\"z\":1,\"tasks\":[{\"id\":\"a\",\"deps\":[1,[2]]},"
                      "3,\"s\",{\"b\":{\"y\":1,\"x\":2}}],"
                      "\"in\":{\"tasks\":[4]}}";
    struct items it = {.text = doc};
    size_t n = 99;
    struct zerg_err err = {0};
    zerg_json *v = zerg_json_parse_items(doc, strlen(doc), "tasks", on_item,
                                         &it, &n, &err);
    assert_non_null(v);
    assert_int_equal(n, 4);
    assert_string_equal(it.seen, "{\"deps\":[1,[2]],\"id\":\"a\"};3;\"s\";"
                                 "{\"b\":{\"x\":2,\"y\":1}};");
    /* Each object's own text, as written (a scalar has none). */
    assert_string_equal(it.spans, "{\"id\":\"a\",\"deps\":[1,[2]]};;;"
                                  "{\"b\":{\"y\":1,\"x\":2}};");
    char *rest = encode_ok(v);
    /* Only the top level's array streams; a nested "tasks" stays. */
    assert_string_equal(rest, "{\"in\":{\"tasks\":[4]},\"tasks\":{},\"z\":1}");
    free(rest);
    zerg_json_free(v);

    /* The caller stops it: NULL, the caller's error left alone, nothing
     * leaked (ASan), the item being built included. */
    struct items stop = {.stop_at = 1};
    struct zerg_err none = {0};
    assert_null(zerg_json_parse_items(doc, strlen(doc), "tasks", on_item, &stop,
                                      NULL, &none));
    assert_int_equal(none.code, 0);
    assert_int_equal(stop.calls, 1);

    /* A syntax error inside an item, and a second "tasks" array. */
    const char *bad = "{\"tasks\":[{\"id\":\"a\"},{\"id\": x}]}";
    struct items it2 = {0};
    assert_null(zerg_json_parse_items(bad, strlen(bad), "tasks", on_item, &it2,
                                      NULL, &err));
    assert_int_equal(err.code, ZERG_ECORRUPT);
    assert_true(tu_contains(err.msg, "invalid char in json text"));
    assert_int_equal(it2.calls, 1);
    const char *twice = "{\"tasks\":[1],\"tasks\":[2]}";
    struct items it3 = {0};
    assert_null(zerg_json_parse_items(twice, strlen(twice), "tasks", on_item,
                                      &it3, NULL, &err));
    assert_true(tu_contains(err.msg, "\"tasks\" appears twice"));

    /* An empty array as an item is an item too (read as {}), also when a
     * syntax error follows it: each one delivered or freed (ASan). */
    const char *empty = "{\"tasks\":[[], {\"a\":[]}\n,[ ]]}";
    struct items it5 = {.text = empty};
    v = zerg_json_parse_items(empty, strlen(empty), "tasks", on_item, &it5, &n,
                              &err);
    assert_non_null(v);
    assert_int_equal(n, 3);
    assert_string_equal(it5.seen, "{};{\"a\":{}};{};");
    assert_string_equal(it5.spans, "[];{\"a\":[]};[ ];");
    zerg_json_free(v);
    const char *cut = "{\"tasks\":[[],{\"x\":[]}, {\"y\": x";
    struct items it6 = {0};
    assert_null(zerg_json_parse_items(cut, strlen(cut), "tasks", on_item, &it6,
                                      NULL, &err));
    assert_int_equal(it6.calls, 2);

    /* Without such an array, a plain parse. */
    struct items it4 = {0};
    v = zerg_json_parse_items("[1,2]", 5, "tasks", on_item, &it4, &n, &err);
    assert_non_null(v);
    assert_int_equal(n, 0);
    assert_int_equal(zerg_json_len(v), 2);
    zerg_json_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builders_and_accessors),
        cmocka_unit_test(test_set_replaces_and_keeps_order),
        cmocka_unit_test(test_dup_is_deep),
        cmocka_unit_test(test_roundtrip_types),
        cmocka_unit_test(test_empty_containers),
        cmocka_unit_test(test_brackets_in_strings_are_text),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_nan_is_an_encode_error),
        cmocka_unit_test(test_escapes_and_unicode),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_truncated_document),
        cmocka_unit_test(test_big_string),
        cmocka_unit_test(test_key_with_nul_is_rejected),
        cmocka_unit_test(test_large_object),
        cmocka_unit_test(test_streaming_writer),
        cmocka_unit_test(test_parse_items),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
