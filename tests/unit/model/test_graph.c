/* test_graph.c - unit tests for src/model/graph.c: every real upstream graph
 * loads, malformed graphs are rejected with a message naming the file, the
 * task and the problem, and levels, conflicts and the critical path come
 * out right (also for a generated 10,000-task graph, and for 20,000 tasks
 * that all write one path). */
#include "testutil.h"

#include "zerg/err.h"
#include "zerg/graph.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FIXTURE_DIR ZERG_TEST_FIXTURES "/upstream-task-graphs"

static int parse(struct zerg_graph **g, const char *text, struct zerg_err *err)
{
    zerg_err_clear(err);
    return zerg_graph_parse(g, "bad.json", text, strlen(text), err);
}

/* Parses text that must be valid; fails the test with the message if not. */
static struct zerg_graph *parse_ok(const char *text)
{
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    int rc = zerg_graph_parse(&g, "ok.json", text, strlen(text), &err);
    if (rc != 0)
        fail_msg("parse failed (%d): %s", rc, err.msg);
    assert_non_null(g);
    return g;
}

static size_t idx(const struct zerg_graph *g, const char *id)
{
    ssize_t i = zerg_graph_find(g, id);
    if (i < 0)
        fail_msg("no task %s", id);
    return (size_t)i;
}

static const char *id_at(const struct zerg_graph *g, int lv, size_t k)
{
    assert_true(lv >= 1 && lv <= g->nlevels);
    assert_true(k < g->levels[lv].n);
    return g->tasks[g->levels[lv].tasks[k]].id;
}

/* Task i's partners through the public call: a malloc'd array (free it)
 * and *n their count. */
static size_t *partners_of(const struct zerg_graph *g, size_t i, size_t *n)
{
    *n = zerg_graph_partners(g, i, NULL, 0);
    size_t *v = calloc(*n + 1, sizeof *v);
    assert_non_null(v);
    assert_int_equal(zerg_graph_partners(g, i, v, *n), *n);
    return v;
}

/* Properties every loaded graph has: each task sits in exactly the level
 * it names, after its same-level dependencies; deps are at the same or a
 * lower level; conflicts are same-level and symmetric; the critical path
 * is a dependency chain. */
static void check_invariants(const struct zerg_graph *g)
{
    size_t seen = 0;
    size_t *pos = calloc(g->ntasks, sizeof *pos);
    assert_non_null(pos);
    for (int lv = 1; lv <= g->nlevels; lv++)
        for (size_t k = 0; k < g->levels[lv].n; k++) {
            size_t i = g->levels[lv].tasks[k];
            assert_int_equal(g->tasks[i].level, lv);
            assert_int_equal(pos[i], 0);
            pos[i] = k + 1;
            seen++;
        }
    assert_int_equal(seen, g->ntasks);
    for (size_t i = 0; i < g->ntasks; i++) {
        const struct zerg_task *t = &g->tasks[i];
        assert_int_equal(zerg_graph_find(g, t->id), (ssize_t)i);
        assert_true(t->level >= 1);
        for (size_t d = 0; d < t->deps.n; d++) {
            const struct zerg_task *u = &g->tasks[t->dep_idx[d]];
            assert_string_equal(u->id, t->deps.v[d]);
            assert_true(u->level <= t->level);
            if (u->level == t->level)
                assert_true(pos[t->dep_idx[d]] < pos[i]);
        }
        size_t np, *part = partners_of(g, i, &np);
        for (size_t k = 0; k < np; k++) {
            size_t j = part[k];
            assert_int_equal(g->tasks[j].level, t->level);
            assert_true(zerg_graph_conflicts(g, j, i));
            assert_true(zerg_graph_conflicts(g, i, j));
        }
        free(part);
    }
    assert_true(g->ncritical >= 1);
    for (size_t k = 1; k < g->ncritical; k++) {
        const struct zerg_task *t = &g->tasks[g->critical_path[k]];
        int linked = 0;
        for (size_t d = 0; d < t->deps.n; d++)
            linked |= t->dep_idx[d] == g->critical_path[k - 1];
        assert_true(linked);
    }
    free(pos);
}

/* ---- (a) the real graphs ---------------------------------------------- */

static int has_same_level_dep(const struct zerg_graph *g)
{
    for (size_t i = 0; i < g->ntasks; i++)
        for (size_t d = 0; d < g->tasks[i].deps.n; d++)
            if (g->tasks[g->tasks[i].dep_idx[d]].level == g->tasks[i].level)
                return 1;
    return 0;
}

static int has_conflict(const struct zerg_graph *g)
{
    int warned = 0, listed = 0;
    for (size_t i = 0; i < g->warnings.n; i++)
        warned |= strstr(g->warnings.v[i], "both write") != NULL;
    for (size_t i = 0; i < g->ntasks; i++)
        listed |= zerg_graph_partners(g, i, NULL, 0) > 0;
    assert_int_equal(warned, listed);
    return listed;
}

static void test_fixtures_all_load(void **state)
{
    (void)state;
    DIR *d = opendir(FIXTURE_DIR);
    if (!d)
        fail_msg("fixture directory %s is missing: %s", FIXTURE_DIR,
                 strerror(errno));
    int files = 0, same_level = 0, conflicting = 0, zero_based = 0;
    size_t tasks = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".json") != 0)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", FIXTURE_DIR, e->d_name);
        struct zerg_graph *g = NULL;
        struct zerg_err err = {0};
        if (zerg_graph_load(&g, path, &err) != 0)
            fail_msg("%s does not load: %s", e->d_name, err.msg);
        check_invariants(g);
        assert_true(g->feature[0] != '\0');
        files++;
        tasks += g->ntasks;
        same_level += has_same_level_dep(g);
        conflicting += has_conflict(g);
        for (size_t i = 0; i < g->warnings.n; i++)
            zero_based += strstr(g->warnings.v[i], "numbered from 0") != NULL;
        zerg_graph_free(g);
    }
    closedir(d);
    assert_int_equal(files, 70);
    assert_int_equal(tasks, 678);
    /* Counted from the data (the fixture README says 10 and 8; with
     * create+modify overlaps it is 11 and 13, 10 of which have a pair that
     * no dependency orders). */
    assert_int_equal(same_level, 11);
    assert_int_equal(conflicting, 13);
    /* fix-issues-78-91 and git-cleanup-issues-docs number levels from 0. */
    assert_int_equal(zero_based, 2);
}

static struct zerg_graph *load_fixture(const char *name)
{
    char path[PATH_MAX];
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    snprintf(path, sizeof path, "%s/%s", FIXTURE_DIR, name);
    if (zerg_graph_load(&g, path, &err) != 0)
        fail_msg("%s does not load: %s", name, err.msg);
    return g;
}

static void test_fixture_details(void **state)
{
    (void)state;
    struct zerg_graph *g = load_fixture("root-specs-task-graph.json");
    /* Longest chain by estimate_minutes, computed independently. */
    assert_true(g->critical_minutes == 295);
    assert_int_equal(g->ncritical, 9);
    assert_string_equal(g->tasks[g->critical_path[0]].id, "ZERG-L1-001");
    assert_string_equal(g->tasks[g->critical_path[8]].id, "ZERG-L5-005");
    /* ZERG-L1-002 depends on -001, -003 on -002: dependency order. */
    assert_string_equal(id_at(g, 1, 0), "ZERG-L1-001");
    assert_true(
        zerg_graph_conflicts(g, idx(g, "ZERG-L3-004"), idx(g, "ZERG-L3-009")));
    zerg_graph_free(g);

    g = load_fixture("fix-issues-78-91.json");
    assert_int_equal(g->tasks[idx(g, "T-001")].level, 1); /* file says 0 */
    assert_int_equal(g->nlevels, 4);
    zerg_graph_free(g);

    g = load_fixture("test-suite-cleanup.json"); /* files.move objects */
    assert_true(g->ntasks > 0);
    zerg_graph_free(g);
}

/* ---- (b) malformed input ---------------------------------------------- */

#define T1(extra) "{\"tasks\": [{\"id\": \"A\", \"level\": 1" extra "}]}"

struct bad_case {
    const char *what;
    const char *json;
    const char *words[3]; /* all must appear in the message */
};

static const struct bad_case bad_cases[] = {
    {"syntax error", "{\"tasks\": [}", {"bad.json", "invalid JSON"}},
    {"unquoted key", "{tasks: []}", {"bad.json", "invalid JSON"}},
    {"truncated",
     "{\"tasks\": [{\"id\": \"A\", \"level\": 1",
     {"bad.json", "invalid JSON"}},
    {"empty file", "", {"bad.json", "invalid JSON"}},
    {"top-level array",
     "[{\"id\": \"A\", \"level\": 1}]",
     {"bad.json", "top level must be an object", "not array"}},
    {"top-level string",
     "\"tasks\"",
     {"top level must be an object", "not string"}},
    {"missing tasks", "{\"feature\": \"f\"}", {"bad.json", "no \"tasks\""}},
    {"tasks not array",
     "{\"tasks\": {\"A\": {}}}",
     {"\"tasks\" must be an array", "not object"}},
    {"empty tasks", "{\"tasks\": []}", {"bad.json", "\"tasks\" is empty"}},
    {"feature not string",
     "{\"feature\": 3, \"tasks\": [{\"id\": \"A\"}]}",
     {"feature must be a string", "not number"}},
    {"non-object task",
     "{\"tasks\": [{\"id\": \"A\", \"level\": 1}, 42]}",
     {"bad.json", "tasks[1]", "must be an object, not number"}},
    {"missing id",
     "{\"tasks\": [{\"level\": 1}]}",
     {"bad.json", "tasks[0]", "has no \"id\""}},
    {"id not string",
     "{\"tasks\": [{\"id\": 7, \"level\": 1}]}",
     {"tasks[0]", "id must be a string", "not number"}},
    {"id with ../",
     "{\"tasks\": [{\"id\": \"../etc\", \"level\": 1}]}",
     {"tasks[0]", "invalid id \"../etc\"", "starts with '.'"}},
    {"id with slash",
     "{\"tasks\": [{\"id\": \"a/../b\", \"level\": 1}]}",
     {"invalid id \"a/../b\"", "outside [A-Za-z0-9._-]"}},
    {"id with spaces",
     "{\"tasks\": [{\"id\": \"my task\", \"level\": 1}]}",
     {"tasks[0]", "invalid id \"my task\"", "outside"}},
    {"id with shell",
     "{\"tasks\": [{\"id\": \"a;rm -rf /\", \"level\": 1}]}",
     {"invalid id \"a;rm -rf /\"", "outside"}},
    {"id of 65 chars",
     "{\"tasks\": [{\"level\": 1, \"id\": \"" /* 65 x 'a' */
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}]}",
     {"tasks[0]", "invalid id", "longer than 64"}},
    {"id leading dash",
     "{\"tasks\": [{\"id\": \"-rf\", \"level\": 1}]}",
     {"invalid id \"-rf\"", "starts with '.' or '-'"}},
    {"empty id",
     "{\"tasks\": [{\"id\": \"\", \"level\": 1}]}",
     {"invalid id \"\"", "is empty"}},
    {"id control char",
     "{\"tasks\": [{\"id\": \"a\\u0001\\u00e9\"}]}",
     {"invalid id \"a\\x01\\xc3\\xa9\""}},
    {"id with NUL",
     "{\"tasks\": [{\"id\": \"A\\u0000B\", \"level\": 1}]}",
     {"invalid id \"A\\x00B\"", "NUL byte"}},
    {"duplicate ids",
     "{\"tasks\": [{\"id\": \"A\", \"level\": 1}, {\"id\": \"B\", \"level\": "
     "1},"
     " {\"id\": \"A\", \"level\": 2}]}",
     {"tasks[2]", "duplicate id \"A\"", "also tasks[0]"}},
    {"unknown dependency",
     "{\"tasks\": [{\"id\": \"A\", \"level\": 1, \"dependencies\": [\"Z\"]}]}",
     {"bad.json", "task A", "unknown dependency \"Z\""}},
    {"unknown dependency escaped",
     "{\"tasks\": [{\"id\": \"A\", \"level\": 1, "
     "\"dependencies\": [\"\\u001b[31m\"]}]}",
     {"task A", "unknown dependency \"\\x1b[31m\""}},
    {"non-string dependency",
     T1(", \"dependencies\": [\"B\", 3]"),
     {"task A", "dependencies[1] must be a string", "not number"}},
    {"dependencies not array",
     T1(", \"dependencies\": \"B\""),
     {"task A", "dependencies must be an array", "not string"}},
    {"self dependency",
     T1(", \"dependencies\": [\"A\"]"),
     {"task A", "depends on itself"}},
    {"cycle of 2",
     "{\"tasks\": [{\"id\": \"A\", \"level\": 1, \"dependencies\": [\"B\"]},"
     " {\"id\": \"B\", \"level\": 1, \"dependencies\": [\"A\"]}]}",
     {"bad.json", "dependency cycle", "A -> B -> A"}},
    {"cycle of 3",
     "{\"tasks\": [{\"id\": \"X\", \"level\": 2},"
     " {\"id\": \"A\", \"level\": 2, \"dependencies\": [\"X\", \"B\"]},"
     " {\"id\": \"B\", \"level\": 2, \"dependencies\": [\"C\"]},"
     " {\"id\": \"C\", \"level\": 2, \"dependencies\": [\"A\"]},"
     " {\"id\": \"L\", \"level\": 1}]}",
     {"task A", "dependency cycle", "A -> B -> C -> A"}},
    {"dependency at a higher level",
     "{\"tasks\": [{\"id\": \"A\", \"level\": 1, \"dependencies\": [\"B\"]},"
     " {\"id\": \"B\", \"level\": 2}]}",
     {"task A", "depends on B at level 2", "higher level"}},
    {"level 0",
     T1(", \"x\": 0}, {\"id\": \"B\", \"level\": 0"),
     {"task B", "level must be an integer >= 1, not 0"}},
    {"negative level",
     "{\"tasks\": [{\"id\": \"A\", \"level\": -1}]}",
     {"task A", "level must be an integer >= 1, not -1"}},
    {"string level",
     "{\"tasks\": [{\"id\": \"A\", \"level\": \"2\"}]}",
     {"task A", "level must be an integer >= 1, not string"}},
    {"bool level",
     "{\"tasks\": [{\"id\": \"A\", \"level\": true}]}",
     {"task A", "not boolean"}},
    {"fractional level",
     "{\"tasks\": [{\"id\": \"A\", \"level\": 2.5}]}",
     {"task A", "level must be an integer >= 1, not 2.5"}},
    {"huge level",
     "{\"tasks\": [{\"id\": \"A\", \"level\": 1e9}]}",
     {"task A", "level 1e+09 is too large"}},
    {"no level, no -L{n}- id",
     "{\"tasks\": [{\"id\": \"TASK-001\"}]}",
     {"task TASK-001", "no level", "*-L{n}-*"}},
    {"null level, L0 id",
     "{\"tasks\": [{\"id\": \"F-L0-1\", \"level\": null}]}",
     {"task F-L0-1", "no level"}},
    {"verification timeout 0",
     T1(", \"verification\": {\"command\": \"true\", \"timeout_seconds\": 0}"),
     {"task A", "timeout_seconds must be a number > 0", "not 0"}},
    {"verification timeout negative",
     T1(", \"verification\": {\"timeout_seconds\": -5}"),
     {"task A", "timeout_seconds", "not -5"}},
    {"verification timeout string",
     T1(", \"verification\": {\"timeout_seconds\": \"30\"}"),
     {"task A", "timeout_seconds", "not string"}},
    {"verification not object",
     T1(", \"verification\": \"pytest\""),
     {"task A", "verification must be an object", "not string"}},
    {"verification command not string",
     T1(", \"verification\": {\"command\": [\"pytest\"]}"),
     {"task A", "verification.command must be a string", "not array"}},
    {"command not string",
     T1(", \"command\": 1"),
     {"task A", "command must be a string", "not number"}},
    {"command with NUL",
     T1(", \"command\": \"rm\\u0000x\""),
     {"task A", "command contains a NUL byte"}},
    {"files not object",
     T1(", \"files\": [\"a.py\"]"),
     {"task A", "files must be an object", "not array"}},
    {"files.create non-string",
     T1(", \"files\": {\"create\": [\"a\", {}]}"),
     {"task A", "files.create[1] must be a string", "not object"}},
    {"files.modify not array",
     T1(", \"files\": {\"modify\": \"a.py\"}"),
     {"task A", "files.modify must be an array"}},
};

static void test_malformed_table(void **state)
{
    (void)state;
    size_t n = sizeof bad_cases / sizeof bad_cases[0];
    assert_true(n >= 20);
    for (size_t k = 0; k < n; k++) {
        const struct bad_case *c = &bad_cases[k];
        struct zerg_graph *g = (struct zerg_graph *)1;
        struct zerg_err err = {0};
        int rc = parse(&g, c->json, &err);
        if (rc != ZERG_EINVAL_INPUT)
            fail_msg("case \"%s\": rc %d, message \"%s\"", c->what, rc,
                     err.msg);
        assert_null(g);
        assert_int_equal(err.code, ZERG_EINVAL_INPUT);
        for (int w = 0; w < 3 && c->words[w]; w++)
            if (!tu_contains(err.msg, c->words[w]))
                fail_msg("case \"%s\"", c->what);
    }
}

static void test_truncated_fixture(void **state)
{
    (void)state;
    char *text = tu_read(FIXTURE_DIR "/core-refactoring.json");
    assert_non_null(text);
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    size_t len = strlen(text);
    for (size_t cut = 1; cut < len; cut += len / 7) {
        assert_int_equal(zerg_graph_parse(&g, "cut.json", text, cut, &err),
                         ZERG_EINVAL_INPUT);
        assert_null(g);
        assert_true(tu_contains(err.msg, "cut.json: invalid JSON"));
    }
    free(text);
}

/* A multi-megabyte description is data, not a reason to refuse. */
static void test_huge_description_loads(void **state)
{
    (void)state;
    size_t big = 5u << 20;
    char *text = malloc(big + 256);
    assert_non_null(text);
    int o =
        sprintf(text, "{\"tasks\": [{\"id\": \"A-L1-1\", \"description\": \"");
    memset(text + o, 'x', big);
    strcpy(text + o + big, "\"}]}");
    const char *dir = tu_mkdtemp();
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/task-graph.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    if (zerg_graph_load(&g, path, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(strlen(g->tasks[0].description), big);
    assert_int_equal(g->tasks[0].level, 1);
    zerg_graph_free(g);
    free(text);
    tu_rmtree(dir);
}

static void test_load_errors(void **state)
{
    (void)state;
    const char *dir = tu_mkdtemp();
    char path[PATH_MAX];
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    snprintf(path, sizeof path, "%s/missing.json", dir);
    assert_int_equal(zerg_graph_load(&g, path, &err), -ENOENT);
    assert_null(g);

    /* Over the cap: a sparse file, so the test writes nothing real. */
    snprintf(path, sizeof path, "%s/huge.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), (off_t)ZERG_GRAPH_MAX_BYTES + 1), 0);
    fclose(f);
    assert_int_equal(zerg_graph_load(&g, path, &err), -EFBIG);
    assert_null(g);
    assert_true(tu_contains(err.msg, "huge.json"));

    tu_write(dir, "bad.json", "{\"tasks\": [{\"id\": \"A\"}]}");
    snprintf(path, sizeof path, "%s/bad.json", dir);
    assert_int_equal(zerg_graph_load(&g, path, &err), ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, path));
    assert_true(tu_contains(err.msg, "task A: no level"));
    tu_rmtree(dir);
}

/* ---- (c) behaviour ---------------------------------------------------- */

/* Each task's text in the file, and a worker's read of that one task:
 * the same fields as the whole load, and -ESTALE once the bytes there
 * are not that task any more. */
static void test_read_one_task(void **state)
{
    (void)state;
    const char *dir = tu_mkdtemp();
    char path[PATH_MAX];
    struct zerg_err err = {0};
    struct zerg_graph *g = NULL, *one = NULL;
    const char *doc =
        "{\"tasks\": [{\"id\": \"A-L1-x\", \"command\": \"true\"},\n"
        "  {\"id\":\"B\",\"level\":2,\"dependencies\":[\"A-L1-x\"],"
        "\"files\":{\"create\":[\"b.txt\"]},\"title\":\"Bee\","
        "\"verification\":{\"command\":\"test -f b.txt\","
        "\"timeout_seconds\":7}}]}";
    tu_write(dir, "g.json", doc);
    snprintf(path, sizeof path, "%s/g.json", dir);
    assert_int_equal(zerg_graph_load(&g, path, &err), 0);
    const struct zerg_task *b = &g->tasks[1];
    assert_int_equal(b->src_off, strstr(doc, "{\"id\":\"B\"") - doc);
    assert_int_equal(b->src_off + b->src_len, strlen(doc) - 2);
    assert_true(b->src_hash ==
                zerg_graph_text_hash(doc + b->src_off, b->src_len));

    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(zerg_graph_read_task(&one, fd, path, "B", b->src_off,
                                          b->src_len, b->src_hash, &err),
                     0);
    assert_int_equal(one->ntasks, 1);
    const struct zerg_task *t = &one->tasks[0];
    assert_string_equal(t->id, "B");
    assert_string_equal(t->title, "Bee");
    assert_int_equal(t->level, 2);
    assert_int_equal(t->deps.n, 1);
    assert_string_equal(t->files_create.v[0], "b.txt");
    assert_string_equal(t->verify_command, "test -f b.txt");
    assert_true(t->verify_timeout_ns == 7 * INT64_C(1000000000));
    zerg_graph_free(one);
    /* The level of an id, as written. */
    const struct zerg_task *a = &g->tasks[0];
    assert_int_equal(zerg_graph_read_task(&one, fd, path, "A-L1-x", a->src_off,
                                          a->src_len, a->src_hash, &err),
                     0);
    assert_int_equal(one->tasks[0].level, 1);
    assert_string_equal(one->tasks[0].command, "true");
    zerg_graph_free(one);

    /* Another id, other bytes, a place past the end: stale. */
    assert_int_equal(zerg_graph_read_task(&one, fd, path, "A-L1-x", b->src_off,
                                          b->src_len, b->src_hash, &err),
                     -ESTALE);
    assert_int_equal(zerg_graph_read_task(&one, fd, path, "B", b->src_off,
                                          b->src_len, b->src_hash ^ 1, &err),
                     -ESTALE);
    assert_int_equal(zerg_graph_read_task(&one, fd, path, "B", 1u << 20,
                                          b->src_len, b->src_hash, &err),
                     -ESTALE);
    assert_null(one);
    close(fd);
    zerg_graph_free(g);
    tu_rmtree(dir);
}

static void test_same_level_order(void **state)
{
    (void)state;
    /* File order C, A, B with C -> B: the earliest ready task goes first. */
    struct zerg_graph *g = parse_ok(
        "{\"feature\": \"f\", \"tasks\": ["
        " {\"id\": \"C\", \"level\": 1, \"dependencies\": [\"B\", \"B\"]},"
        " {\"id\": \"A\", \"level\": 1},"
        " {\"id\": \"B\", \"level\": 1},"
        " {\"id\": \"D\", \"level\": 2, \"dependencies\": [\"C\"]},"
        " {\"id\": \"E\", \"level\": 2}]}");
    assert_string_equal(g->feature, "f");
    assert_int_equal(g->nlevels, 2);
    assert_int_equal(g->levels[1].n, 3);
    assert_string_equal(id_at(g, 1, 0), "A");
    assert_string_equal(id_at(g, 1, 1), "B");
    assert_string_equal(id_at(g, 1, 2), "C");
    /* Level 2 has no inner dependencies: file order stays. */
    assert_string_equal(id_at(g, 2, 0), "D");
    assert_string_equal(id_at(g, 2, 1), "E");
    assert_int_equal(g->tasks[0].dep_idx[0], 2);
    check_invariants(g);
    zerg_graph_free(g);
}

static void test_levels_gaps_and_ids(void **state)
{
    (void)state;
    struct zerg_graph *g =
        parse_ok("{\"tasks\": [{\"id\": \"RES-L3-001\"},"
                 " {\"id\": \"L1-001\", \"level\": null},"
                 " {\"id\": \"X\", \"level\": 2.0, \"dependencies\": null}]}");
    assert_string_equal(g->feature, "");
    assert_int_equal(g->nlevels, 3);
    assert_int_equal(g->tasks[0].level, 3);
    assert_int_equal(g->tasks[1].level, 1);
    assert_int_equal(g->tasks[2].level, 2);
    zerg_graph_free(g);

    /* An explicit level wins over the id; level 2 may stay empty. */
    g = parse_ok("{\"tasks\": [{\"id\": \"A-L1-1\", \"level\": 3},"
                 " {\"id\": \"B\", \"level\": 1}]}");
    assert_int_equal(g->tasks[0].level, 3);
    assert_int_equal(g->nlevels, 3);
    assert_int_equal(g->levels[2].n, 0);
    assert_int_equal(g->levels[3].n, 1);
    check_invariants(g);
    zerg_graph_free(g);
}

static void test_zero_based_graph(void **state)
{
    (void)state;
    struct zerg_graph *g = parse_ok(
        "{\"levels\": {\"0\": {\"name\": \"first\"}, \"1\": {}}, \"tasks\": ["
        " {\"id\": \"A\", \"level\": 0},"
        " {\"id\": \"B\", \"level\": 1, \"dependencies\": [\"A\"]}]}");
    assert_int_equal(g->tasks[0].level, 1);
    assert_int_equal(g->tasks[1].level, 2);
    assert_int_equal(g->warnings.n, 1);
    assert_true(tu_contains(g->warnings.v[0], "numbered from 0"));
    zerg_graph_free(g);

    struct zerg_err err = {0};
    assert_int_equal(parse(&g,
                           "{\"levels\": {\"0\": {}}, \"tasks\": ["
                           "{\"id\": \"A\", \"level\": -1}]}",
                           &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "not -1"));
}

static void test_task_fields(void **state)
{
    (void)state;
    struct zerg_graph *g = parse_ok(
        "{\"tasks\": [{\"id\": \"A\", \"level\": 1, \"title\": \"T\","
        " \"description\": \"D\", \"context\": 5, \"estimate_minutes\": 12.5,"
        " \"command\": \"make && make test\", \"phase\": \"x\","
        " \"files\": {\"create\": [\"a\"], \"modify\": [\"b\", \"c\"],"
        "   \"read\": [\"d\"], \"delete\": [\"e\"],"
        "   \"move\": [{\"from\": \"f\", \"to\": \"g\"}]},"
        " \"verification\": {\"command\": \"pytest -q | tail -1\","
        "   \"timeout_seconds\": 1.5, \"expected\": \"ok\"}},"
        " {\"id\": \"B\", \"level\": 1, \"title\": [1],"
        "  \"estimate_minutes\": \"soon\", \"verification\": {}}]}");
    const struct zerg_task *a = &g->tasks[0], *b = &g->tasks[1];
    assert_string_equal(a->title, "T");
    assert_string_equal(a->description, "D");
    assert_string_equal(a->context, ""); /* wrong type: ignored */
    assert_true(a->estimate_minutes == 12.5);
    assert_string_equal(a->command, "make && make test");
    assert_int_equal(a->files_create.n, 1);
    assert_int_equal(a->files_modify.n, 2);
    assert_string_equal(a->files_modify.v[1], "c");
    assert_int_equal(a->files_read.n, 1);
    assert_string_equal(a->verify_command, "pytest -q | tail -1");
    assert_int_equal(a->verify_timeout_ns, 1500000000);
    assert_string_equal(b->title, "");
    assert_true(b->estimate_minutes == 0);
    assert_null(b->command);
    assert_null(b->verify_command);
    assert_int_equal(b->verify_timeout_ns, INT64_C(30000000000));
    assert_int_equal(b->deps.n, 0);
    assert_null(b->dep_idx);
    zerg_graph_free(g);
}

static void test_conflicts(void **state)
{
    (void)state;
    struct zerg_graph *g = parse_ok(
        "{\"tasks\": ["
        " {\"id\": \"A\", \"level\": 1, \"files\": {\"create\": [\"x\", \"y\"],"
        "   \"modify\": [\"x\"]}},"
        " {\"id\": \"B\", \"level\": 1, \"files\": {\"modify\": [\"y\", \"x\"],"
        "   \"read\": [\"z\"]}},"
        " {\"id\": \"C\", \"level\": 1, \"files\": {\"read\": [\"x\"],"
        "   \"create\": [\"z\"]}},"
        " {\"id\": \"D\", \"level\": 1, \"files\": {\"modify\": [\"y\"]}},"
        " {\"id\": \"E\", \"level\": 2, \"files\": {\"modify\": [\"x\"]}}]}");
    size_t a = 0, b = 1, c = 2, d = 3, e = 4;
    assert_true(zerg_graph_conflicts(g, a, b));
    assert_true(zerg_graph_conflicts(g, b, a));
    assert_true(zerg_graph_conflicts(g, a, d));
    assert_true(zerg_graph_conflicts(g, b, d));
    assert_false(zerg_graph_conflicts(g, a, c)); /* C only reads x */
    assert_false(zerg_graph_conflicts(g, a, e)); /* other level */
    assert_false(zerg_graph_conflicts(g, a, a));
    assert_false(zerg_graph_conflicts(g, a, 99));
    assert_false(zerg_graph_conflicts(NULL, a, b));
    /* A-B share two paths but conflict once; lists are sorted. */
    size_t n, *pa = partners_of(g, a, &n);
    assert_int_equal(n, 2);
    assert_int_equal(pa[0], b);
    assert_int_equal(pa[1], d);
    size_t *pb = partners_of(g, b, &n);
    assert_int_equal(n, 2);
    assert_int_equal(pb[0], a);
    assert_int_equal(pb[1], d);
    free(pa);
    free(pb);
    assert_int_equal(zerg_graph_partners(g, c, NULL, 0), 0);
    assert_int_equal(zerg_graph_partners(g, e, NULL, 0), 0);
    /* One warning per pair and path: A-B x, A-B y, A-D y, B-D y. */
    assert_int_equal(g->warnings.n, 4);
    assert_string_equal(g->warnings.v[0],
                        "level 1: A and B both write x; they will not run at "
                        "the same time");
    assert_string_equal(g->warnings.v[3],
                        "level 1: B and D both write y; they will not run at "
                        "the same time");
    check_invariants(g);
    zerg_graph_free(g);
}

/* Warnings come group by group, (level, path) sorted, pairs in task order;
 * past 200 pairs a count of the rest.  A task listing a path twice
 * (create and modify) pairs once. */
static void test_conflict_warning_order(void **state)
{
    (void)state;
    struct zerg_graph *g = parse_ok(
        "{\"tasks\": ["
        " {\"id\": \"A\", \"level\": 1, \"files\": {\"modify\": [\"y\", "
        "\"x\"]}},"
        " {\"id\": \"B\", \"level\": 1, \"files\": {\"modify\": [\"x\", "
        "\"y\"]}},"
        " {\"id\": \"C\", \"level\": 1, \"files\": {\"create\": [\"x\"],"
        "   \"modify\": [\"x\"]}},"
        " {\"id\": \"D\", \"level\": 2, \"files\": {\"modify\": [\"x\"]}}]}");
    static const char *const want[] = {
        "level 1: A and B both write x; they will not run at the same time",
        "level 1: A and C both write x; they will not run at the same time",
        "level 1: B and C both write x; they will not run at the same time",
        "level 1: A and B both write y; they will not run at the same time",
    };
    assert_int_equal(g->warnings.n, 4);
    for (size_t k = 0; k < 4; k++)
        assert_string_equal(g->warnings.v[k], want[k]);
    size_t n2, *p2 = partners_of(g, 2, &n2);
    assert_int_equal(n2, 2);
    assert_int_equal(p2[0], 0);
    assert_int_equal(p2[1], 1);
    free(p2);
    assert_int_equal(zerg_graph_partners(g, 3, NULL, 0), 0);
    check_invariants(g);
    zerg_graph_free(g);

    /* 30 tasks on one path: 435 pairs, 200 shown. */
    char *text = malloc(30 * 80 + 32);
    assert_non_null(text);
    size_t o = (size_t)sprintf(text, "{\"tasks\": [");
    for (int k = 0; k < 30; k++)
        o += (size_t)sprintf(text + o,
                             "%s{\"id\": \"T%02d\", \"level\": 1, \"files\": "
                             "{\"modify\": [\"f\"]}}",
                             k ? ", " : "", k);
    sprintf(text + o, "]}");
    g = parse_ok(text);
    assert_int_equal(g->warnings.n, 201);
    assert_string_equal(g->warnings.v[0], "level 1: T00 and T01 both write f; "
                                          "they will not run at the same time");
    /* T00 has 29 partners, T01 28, ... : pair 200 is T07-T25. */
    assert_string_equal(g->warnings.v[199],
                        "level 1: T07 and T25 both write f; they will not run "
                        "at the same time");
    assert_string_equal(g->warnings.v[200], "... and 235 more same-file pairs");
    zerg_graph_free(g);
    free(text);
}

/* 20,000 tasks writing one path: the listing stops at 200 pairs plus a
 * count, and every task conflicts with every other.  A pair list sorted
 * through qsort made this take about 40 s; it must stay proportional to
 * the conflict lists themselves. */
static void test_twenty_thousand_share_a_path(void **state)
{
    (void)state;
    enum { N = 20000 };
    size_t cap = (size_t)N * 72 + 64, o = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    o += (size_t)snprintf(text, cap, "{\"feature\": \"f\", \"tasks\": [");
    for (int k = 0; k < N; k++)
        o += (size_t)snprintf(text + o, cap - o,
                              "%s{\"id\": \"S-L1-%05d\", \"files\": "
                              "{\"modify\": [\"README.md\"]}}",
                              k ? "," : "", k);
    snprintf(text + o, cap - o, "]}");
    struct zerg_graph *g = parse_ok(text);
    free(text);
    assert_int_equal(g->ntasks, N);
    assert_int_equal(g->nlevels, 1);
    assert_int_equal(g->levels[1].n, N);
    assert_int_equal(g->warnings.n, 201);
    assert_string_equal(g->warnings.v[0],
                        "level 1: S-L1-00000 and S-L1-00001 both write "
                        "README.md; they will not run at the same time");
    assert_string_equal(g->warnings.v[199],
                        "level 1: S-L1-00000 and S-L1-00200 both write "
                        "README.md; they will not run at the same time");
    char last[64];
    snprintf(last, sizeof last, "... and %zu more same-file pairs",
             (size_t)N * (N - 1) / 2 - 200);
    assert_string_equal(g->warnings.v[200], last);
    size_t probe[] = {0, 1, 12345, N - 1};
    for (size_t p = 0; p < sizeof probe / sizeof *probe; p++) {
        size_t np, *part = partners_of(g, probe[p], &np);
        assert_int_equal(np, N - 1);
        for (size_t k = 0; k < np; k++)
            assert_int_equal(part[k], k < probe[p] ? k : k + 1);
        free(part);
        assert_int_equal(g->tasks[probe[p]].nwgroups, 1);
    }
    assert_true(zerg_graph_conflicts(g, 7, 19999));
    assert_true(zerg_graph_conflicts(g, 19999, 7));
    assert_false(zerg_graph_conflicts(g, 7, 7));
    assert_int_equal(g->ncritical, 1);
    zerg_graph_free(g);
}

/* A NUL byte anywhere, even after a complete document, is refused with its
 * offset: bytes after it were silently ignored before. */
static void test_nul_byte_refused(void **state)
{
    (void)state;
    static const char doc[] = "{\"tasks\": [{\"id\": \"A\", \"level\": 1}]}";
    char text[sizeof doc + 16];
    size_t n = sizeof doc - 1;
    memcpy(text, doc, n);
    memcpy(text + n, "\0{\"x\": 1}", 9);
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    assert_int_equal(zerg_graph_parse(&g, "bad.json", text, n + 9, &err),
                     ZERG_EINVAL_INPUT);
    assert_null(g);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want,
             "bad.json: contains a NUL byte at byte offset %zu", n);
    assert_true(tu_contains(err.msg, want));
    /* The same text without the NUL and what follows is fine. */
    g = parse_ok(doc);
    zerg_graph_free(g);
    /* Inside a string too, and through the file loader. */
    const char *dir = tu_mkdtemp();
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/task-graph.json", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(
        fwrite("{\"tasks\": [{\"id\": \"A\0B\", \"level\": 1}]}", 1, 38, f),
        38);
    fclose(f);
    zerg_err_clear(&err);
    assert_int_equal(zerg_graph_load(&g, path, &err), ZERG_EINVAL_INPUT);
    assert_null(g);
    snprintf(want, sizeof want, "%s: contains a NUL byte at byte offset 20",
             path);
    assert_true(tu_contains(err.msg, want));
    tu_rmtree(dir);
}

static void test_critical_path(void **state)
{
    (void)state;
    /* A(10) -> B(5), A -> C(20), D(50) alone: D alone outweighs the
     * longer chain A -> C (30 minutes). */
    struct zerg_graph *g =
        parse_ok("{\"tasks\": ["
                 " {\"id\": \"A\", \"level\": 1, \"estimate_minutes\": 10},"
                 " {\"id\": \"B\", \"level\": 2, \"estimate_minutes\": 5,"
                 "  \"dependencies\": [\"A\"]},"
                 " {\"id\": \"C\", \"level\": 2, \"estimate_minutes\": 20,"
                 "  \"dependencies\": [\"A\"]},"
                 " {\"id\": \"D\", \"level\": 1, \"estimate_minutes\": 50}]}");
    assert_int_equal(g->ncritical, 1);
    assert_string_equal(g->tasks[g->critical_path[0]].id, "D");
    assert_true(g->critical_minutes == 50);
    zerg_graph_free(g);

    g = parse_ok("{\"tasks\": ["
                 " {\"id\": \"A\", \"level\": 1, \"estimate_minutes\": 10},"
                 " {\"id\": \"B\", \"level\": 1, \"estimate_minutes\": 5,"
                 "  \"dependencies\": [\"A\"]},"
                 " {\"id\": \"C\", \"level\": 2, \"estimate_minutes\": 20,"
                 "  \"dependencies\": [\"A\"]},"
                 " {\"id\": \"D\", \"level\": 1, \"estimate_minutes\": 25}]}");
    assert_int_equal(g->ncritical, 2);
    assert_string_equal(g->tasks[g->critical_path[0]].id, "A");
    assert_string_equal(g->tasks[g->critical_path[1]].id, "C");
    assert_true(g->critical_minutes == 30);
    zerg_graph_free(g);

    /* No estimates: the longest chain by count. */
    g = parse_ok("{\"tasks\": [{\"id\": \"A\", \"level\": 1},"
                 " {\"id\": \"B\", \"level\": 1},"
                 " {\"id\": \"C\", \"level\": 2, \"dependencies\": [\"B\"]},"
                 " {\"id\": \"D\", \"level\": 2, \"dependencies\": [\"C\"]},"
                 " {\"id\": \"E\", \"level\": 3, \"dependencies\": [\"A\"]}]}");
    assert_int_equal(g->ncritical, 3);
    assert_string_equal(g->tasks[g->critical_path[0]].id, "B");
    assert_string_equal(g->tasks[g->critical_path[1]].id, "C");
    assert_string_equal(g->tasks[g->critical_path[2]].id, "D");
    assert_true(g->critical_minutes == 0);
    check_invariants(g);
    zerg_graph_free(g);
}

static void test_level_from_id(void **state)
{
    (void)state;
    static const struct {
        const char *id;
        int level;
    } cases[] = {
        {"RES-L2-005", 2},
        {"L3-001", 3},
        {"A-L12-x", 12},
        {"OCF-L1-", 1},
        {"X-L0-Y-L4-1", 4},
        {"A-L007-1", 7},
        {"TASK-001", 0},
        {"A-L0-1", 0},
        {"AL2-1", 0},
        {"A-L2", 0},
        {"A-Lx-1", 0},
        {"A-L-1", 0},
        {"a-l2-1", 0},
        {"L0-1", 0},
        {"", 0},
        {"A-L99999999999999999999-1", 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        if (zerg_level_from_id(cases[k].id) != cases[k].level)
            fail_msg("%s: got %d, want %d", cases[k].id,
                     zerg_level_from_id(cases[k].id), cases[k].level);
    assert_int_equal(zerg_level_from_id(NULL), 0);
}

static void test_id_valid(void **state)
{
    (void)state;
    char id64[65], id65[66];
    memset(id64, 'a', 64);
    id64[64] = '\0';
    memset(id65, 'a', 65);
    id65[65] = '\0';
    assert_true(zerg_id_valid("TASK-001"));
    assert_true(zerg_id_valid("a.b_c-D9"));
    assert_true(zerg_id_valid("_x"));
    assert_true(zerg_id_valid("9"));
    assert_true(zerg_id_valid(id64));
    assert_false(zerg_id_valid(id65));
    assert_false(zerg_id_valid(""));
    assert_false(zerg_id_valid(NULL));
    assert_false(zerg_id_valid(".hidden"));
    assert_false(zerg_id_valid("-rf"));
    assert_false(zerg_id_valid("a/b"));
    assert_false(zerg_id_valid("a b"));
    assert_false(zerg_id_valid("a;b"));
    assert_false(zerg_id_valid("caf\xc3\xa9"));
    assert_false(zerg_id_valid("a\n"));
}

/* 100 levels x 100 tasks: each depends on two tasks of the level below and
 * odd ones on their even neighbour in the same level. */
static char *gen_graph(int levels, int width)
{
    size_t cap = (size_t)levels * (size_t)width * 200 + 64, o = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    o += (size_t)snprintf(s, cap, "{\"feature\": \"big\", \"tasks\": [");
    for (int lv = 1; lv <= levels; lv++)
        for (int k = 0; k < width; k++) {
            o +=
                (size_t)snprintf(s + o, cap - o,
                                 "%s{\"id\": \"G-L%d-%d\", "
                                 "\"estimate_minutes\": 1, \"dependencies\": [",
                                 lv > 1 || k > 0 ? ", " : "", lv, k);
            const char *sep = "";
            if (lv > 1) {
                o += (size_t)snprintf(s + o, cap - o,
                                      "\"G-L%d-%d\", \"G-L%d-%d\"", lv - 1, k,
                                      lv - 1, (k + 7) % width);
                sep = ", ";
            }
            if (k % 2)
                o += (size_t)snprintf(s + o, cap - o, "%s\"G-L%d-%d\"", sep, lv,
                                      k - 1);
            o += (size_t)snprintf(s + o, cap - o,
                                  "], \"files\": {\"modify\": [\"f%d\"]}}",
                                  k % 50);
        }
    snprintf(s + o, cap - o, "]}");
    return s;
}

static void test_ten_thousand_tasks(void **state)
{
    (void)state;
    char *text = gen_graph(100, 100);
    /* How long it takes is the benchmarks' business (bench/), never a
     * test's: these machines are shared. */
    struct zerg_graph *g = parse_ok(text);
    assert_int_equal(g->ntasks, 10000);
    assert_int_equal(g->nlevels, 100);
    char id[32];
    for (int lv = 1; lv <= 100; lv++)
        for (int k = 0; k < 100; k++) {
            snprintf(id, sizeof id, "G-L%d-%d", lv, k);
            assert_int_equal(zerg_graph_find(g, id), (lv - 1) * 100 + k);
        }
    assert_int_equal(zerg_graph_find(g, "G-L101-0"), -1);
    assert_int_equal(zerg_graph_find(g, ""), -1);
    /* Each even/odd pair writes one file with the pair 50 apart. */
    assert_true(zerg_graph_conflicts(g, 0, 50));
    assert_int_equal(zerg_graph_partners(g, 0, NULL, 0), 1);
    /* Two tasks per level at most (an even one, then its odd neighbour),
     * and (lv-1, k+1) leads to (lv, k-6), even again: 200 in all. */
    assert_int_equal(g->ncritical, 200);
    assert_true(g->critical_minutes == 200);
    check_invariants(g);
    zerg_graph_free(g);
    free(text);
}

static void test_find_edges(void **state)
{
    (void)state;
    struct zerg_graph *g = parse_ok("{\"tasks\": [{\"id\": \"A-L1-1\"}]}");
    assert_int_equal(zerg_graph_find(g, "A-L1-1"), 0);
    assert_int_equal(zerg_graph_find(g, "a-l1-1"), -1);
    assert_int_equal(zerg_graph_find(g, NULL), -1);
    assert_int_equal(zerg_graph_find(NULL, "A-L1-1"), -1);
    zerg_graph_free(g);
    zerg_graph_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures_all_load),
        cmocka_unit_test(test_fixture_details),
        cmocka_unit_test(test_malformed_table),
        cmocka_unit_test(test_truncated_fixture),
        cmocka_unit_test(test_huge_description_loads),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_read_one_task),
        cmocka_unit_test(test_same_level_order),
        cmocka_unit_test(test_levels_gaps_and_ids),
        cmocka_unit_test(test_zero_based_graph),
        cmocka_unit_test(test_task_fields),
        cmocka_unit_test(test_conflicts),
        cmocka_unit_test(test_conflict_warning_order),
        cmocka_unit_test(test_nul_byte_refused),
        cmocka_unit_test(test_critical_path),
        cmocka_unit_test(test_level_from_id),
        cmocka_unit_test(test_id_valid),
        cmocka_unit_test(test_ten_thousand_tasks),
        cmocka_unit_test(test_twenty_thousand_share_a_path),
        cmocka_unit_test(test_find_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
