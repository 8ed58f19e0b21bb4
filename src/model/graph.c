/* graph.c - loads and validates a task graph (DESIGN.md section 4).
 *
 * The file is parsed with yajl; each task is copied into struct zerg_graph
 * as soon as its object is complete (zerg_json_parse_items), so the tasks
 * never exist as one JSON tree (a 100,000-task file would need ~60 MB).
 * Then the graph is checked in passes that each add one fact:
 * ids are unique, dependencies resolve to the same or a lower level, each
 * level gets a dependency order (which also finds cycles: a cycle can only
 * live inside one level), same-level tasks writing one path become
 * conflicts, and the longest dependency chain becomes the critical path.
 * This file holds the reading and the per-task checks; the passes over the
 * whole graph are in graph_order.c and graph_conflict.c.
 *
 * Choices the contract leaves open:
 * - A level comes from `level` (an integral number, so 2.0 is 2), else from
 *   an id containing `-L{n}-` or starting with `L{n}-`.
 * - Two real graphs number levels from 0 and say so with a "0" entry in
 *   their top-level `levels` map.  Every level of such a file (from
 *   `level` or from an id) is shifted up by one, with a warning: its level
 *   0 runs as level 1.  Without that entry, level 0 is an error.
 * - The id pattern is case-sensitive (`-l2-` is not a level) and its n
 *   must be >= 1; `X-L0-Y-L4-1` gives 4 (the first usable match).
 * - Descriptive fields (title, description, context, estimate_minutes) of
 *   the wrong type are ignored; fields zerg acts on (id, level,
 *   dependencies, files, verification, command) are errors.
 * - A NUL byte anywhere in the file is refused with its offset: JSON text
 *   cannot contain one, and a reader that stops at it would silently drop
 *   the tasks after it. */
#include "zerg/graph.h"

#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph_internal.h"

/* Levels are array indexes, so a typo like 1e9 must not allocate 16 GB. */
#define GRAPH_MAX_LEVEL 100000
/* A year: anything longer is a typo, and it keeps the ns value in range. */
#define GRAPH_MAX_TIMEOUT_S (365.0 * 24 * 3600)
#define GRAPH_DEFAULT_TIMEOUT_NS (30 * INT64_C(1000000000))

struct graph_index {
    size_t mask;    /* capacity - 1; capacity is a power of two */
    uint32_t *slot; /* task index + 1; 0 = empty (4 bytes: half the
                       memory, and a graph file of 64 MB holds fewer) */
};

/* ---- messages ---------------------------------------------------------- */

const char *graph_show_raw(char *buf, size_t size, const char *s, size_t len,
                           size_t max, int quote)
{
    size_t o = 0;
    if (quote)
        buf[o++] = '"';
    for (size_t i = 0; i < len && i < max && o + 8 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (quote && (c == '"' || c == '\\'))
            o += (size_t)snprintf(buf + o, size - o, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
    }
    if (len > max && o + 4 < size) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    if (quote)
        buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

const char *graph_show(char *buf, size_t size, const char *s, size_t len)
{
    return graph_show_raw(buf, size, s, len, SHOW_MAX, 1);
}

int graph_task_err(struct parse_ctx *c, size_t i, const char *fmt, ...)
{
    char what[ZERG_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *id = c->g && i < c->g->ntasks ? c->g->tasks[i].id : NULL;
    if (id)
        return zerg_err_set(c->err, ZERG_EINVAL_INPUT, "%s: task %s: %s",
                            c->name, id, what);
    return zerg_err_set(c->err, ZERG_EINVAL_INPUT, "%s: tasks[%zu]: %s",
                        c->name, i, what);
}

static const char *type_of(const zerg_json *v)
{
    return zerg_json_type_name(v->type);
}

/* ---- small containers ------------------------------------------------- */

static void strlist_free(struct zerg_strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

int graph_strlist_push(struct zerg_strlist *l, const char *s)
{
    /* Grows by doubling: the count doubles as the capacity's witness. */
    if ((l->n & (l->n - 1)) == 0) {
        size_t cap = l->n ? l->n * 2 : 1;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        l->v = v;
    }
    if (!(l->v[l->n] = strdup(s)))
        return -ENOMEM;
    l->n++;
    return 0;
}

int graph_nomem(struct parse_ctx *c)
{
    return zerg_err_set(c->err, -ENOMEM, "%s: out of memory", c->name);
}

/* The string of v if it is a JSON string with no NUL inside (a NUL would
 * silently cut an id or a command short), else NULL. */
static const char *clean_str(const zerg_json *v)
{
    if (!v || v->type != ZERG_JSON_STRING)
        return NULL;
    if (strlen(v->u.str.s) != v->u.str.len)
        return NULL;
    return v->u.str.s;
}

static int is_absent(const zerg_json *v)
{
    return !v || v->type == ZERG_JSON_NULL;
}
/* ---- id index --------------------------------------------------------- */

static size_t hash_id(const char *s)
{
    uint64_t h = UINT64_C(14695981039346656037); /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return (size_t)(h ^ (h >> 29));
}

static struct graph_index *index_new(size_t n)
{
    struct graph_index *ix = malloc(sizeof *ix);
    size_t cap = 16;
    while (cap < n * 2) /* load factor <= 1/2 keeps probes short */
        cap *= 2;
    if (!ix || !(ix->slot = calloc(cap, sizeof *ix->slot))) {
        free(ix);
        return NULL;
    }
    ix->mask = cap - 1;
    return ix;
}

/* Doubles the index once n tasks would fill it past half. */
static int index_fit(struct zerg_graph *g, size_t n)
{
    struct graph_index *ix = g->index;
    if (n * 2 <= ix->mask + 1)
        return 0;
    size_t cap = (ix->mask + 1) * 2;
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return -ENOMEM;
    for (size_t h = 0; h <= ix->mask; h++) {
        if (!ix->slot[h])
            continue;
        size_t k = hash_id(g->tasks[ix->slot[h] - 1].id) & (cap - 1);
        while (slot[k])
            k = (k + 1) & (cap - 1);
        slot[k] = ix->slot[h];
    }
    free(ix->slot);
    ix->slot = slot;
    ix->mask = cap - 1;
    return 0;
}

static void index_free(struct graph_index *ix)
{
    if (ix)
        free(ix->slot);
    free(ix);
}

/* Slot holding id, or the empty slot where it would go. */
static uint32_t *index_slot(const struct zerg_graph *g, const char *id)
{
    const struct graph_index *ix = g->index;
    size_t h = hash_id(id) & ix->mask;
    while (ix->slot[h] && strcmp(g->tasks[ix->slot[h] - 1].id, id) != 0)
        h = (h + 1) & ix->mask;
    return &ix->slot[h];
}

ssize_t zerg_graph_find(const struct zerg_graph *g, const char *id)
{
    if (!g || !g->index || !id)
        return -1;
    uint32_t *s = index_slot(g, id);
    return *s ? (ssize_t)(*s - 1) : -1;
}

/* ---- ids and levels --------------------------------------------------- */

static int id_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int zerg_id_valid(const char *s)
{
    if (!s || !*s || *s == '.' || *s == '-')
        return 0;
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= ZERG_ID_MAX || !id_char(s[n]))
            return 0;
    return 1;
}

/* Why v is not a valid id, for the message. */
static const char *id_problem(const zerg_json *v)
{
    const char *s = v->u.str.s;
    size_t len = v->u.str.len;
    if (len == 0)
        return "is empty";
    if (len > ZERG_ID_MAX)
        return "is longer than 64 characters";
    if (s[0] == '.' || s[0] == '-')
        return "starts with '.' or '-'";
    return "has characters outside [A-Za-z0-9._-]";
}

/* Level n >= 1 from "L{n}-" at p; 0 if p does not start one. */
static int level_at(const char *p)
{
    if (*p++ != 'L' || *p < '0' || *p > '9')
        return 0;
    long n = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((n = n * 10 + (*p - '0')) > GRAPH_MAX_LEVEL)
            return 0;
    return *p == '-' ? (int)n : 0;
}

int zerg_level_from_id(const char *id)
{
    if (!id)
        return 0;
    int n = level_at(id);
    for (const char *p = id; !n && (p = strchr(p, '-')); p++)
        n = level_at(p + 1);
    return n;
}

/* ---- one task --------------------------------------------------------- */

static int parse_id(struct parse_ctx *c, size_t i, const zerg_json *t)
{
    struct zerg_graph *g = c->g;
    const zerg_json *v = zerg_json_get(t, "id");
    char sb[SHOW_MAX * 4 + 8];
    if (is_absent(v))
        return graph_task_err(c, i, "has no \"id\"");
    if (v->type != ZERG_JSON_STRING)
        return graph_task_err(c, i, "id must be a string, not %s", type_of(v));
    if (!clean_str(v) || !zerg_id_valid(v->u.str.s))
        return graph_task_err(
            c, i,
            "invalid id %s: it %s (an id becomes a file name: "
            "1 to 64 of [A-Za-z0-9._-], not starting with '.' "
            "or '-')",
            graph_show(sb, sizeof sb, v->u.str.s, v->u.str.len),
            strlen(v->u.str.s) != v->u.str.len ? "contains a NUL byte"
                                               : id_problem(v));
    uint32_t *slot = index_slot(g, v->u.str.s);
    if (*slot)
        return graph_task_err(c, i, "duplicate id \"%s\" (also tasks[%zu])",
                              v->u.str.s, (size_t)*slot - 1);
    if (!(g->tasks[i].id = strdup(v->u.str.s)))
        return graph_nomem(c);
    *slot = (uint32_t)(i + 1);
    return 0;
}

/* The level as written: from `level`, else from the id; checked against
 * the numbering once the whole file is read (level_check). */
static int parse_level(struct parse_ctx *c, size_t i, const zerg_json *t)
{
    struct zerg_task *task = &c->g->tasks[i];
    const zerg_json *v = zerg_json_get(t, "level");
    double lv;
    if (is_absent(v)) {
        lv = zerg_level_from_id(task->id);
        if (lv == 0)
            return graph_task_err(
                c, i,
                "no level: give it a \"level\" or an id of the "
                "form *-L{n}-*");
    } else if (v->type != ZERG_JSON_NUMBER) {
        return graph_task_err(c, i, "level must be an integer >= 1, not %s",
                              type_of(v));
    } else {
        lv = v->u.number;
        if (!isfinite(lv) || floor(lv) != lv)
            return graph_task_err(c, i, "level must be an integer >= 1, not %g",
                                  lv);
    }
    c->raw_level[i] = lv;
    return 0;
}

static int level_check(struct parse_ctx *c, size_t i)
{
    double lv = c->raw_level[i];
    if (c->zero_based && lv < 0)
        return graph_task_err(
            c, i,
            "level must be an integer >= 0 (this graph numbers "
            "levels from 0), not %g",
            lv);
    if (!c->zero_based && lv < 1)
        return graph_task_err(
            c, i, "level must be an integer >= 1, not %g%s", lv,
            lv == 0 ? " (a graph numbered from 0 declares level "
                      "\"0\" in its top-level \"levels\")"
                    : "");
    if (lv > GRAPH_MAX_LEVEL - c->zero_based)
        return graph_task_err(c, i, "level %g is too large (at most %d)", lv,
                              GRAPH_MAX_LEVEL - c->zero_based);
    c->g->tasks[i].level = (int)lv + c->zero_based;
    return 0;
}

/* The strings under obj[key] (absent/null = none); `what` names the field
 * in messages. */
static int parse_strlist(struct parse_ctx *c, size_t i, const zerg_json *obj,
                         const char *key, const char *what,
                         struct zerg_strlist *out)
{
    const zerg_json *v = zerg_json_get(obj, key);
    if (is_absent(v))
        return 0;
    if (!zerg_json_is(v, ZERG_JSON_ARRAY))
        return graph_task_err(c, i, "%s must be an array of strings, not %s",
                              what, type_of(v));
    for (size_t k = 0; k < v->u.arr.n; k++) {
        const zerg_json *e = v->u.arr.items[k];
        if (e->type != ZERG_JSON_STRING)
            return graph_task_err(c, i, "%s[%zu] must be a string, not %s",
                                  what, k, type_of(e));
        if (!clean_str(e))
            return graph_task_err(c, i, "%s[%zu] contains a NUL byte", what, k);
        if (graph_strlist_push(out, e->u.str.s) < 0)
            return graph_nomem(c);
    }
    return 0;
}

/* files {create, modify, read}; other keys (delete, move) are ignored. */
static int parse_files(struct parse_ctx *c, size_t i, const zerg_json *t)
{
    struct zerg_task *task = &c->g->tasks[i];
    const zerg_json *f = zerg_json_get(t, "files");
    int rc;
    if (is_absent(f))
        return 0;
    if (f->type != ZERG_JSON_OBJECT)
        return graph_task_err(c, i, "files must be an object, not %s",
                              type_of(f));
    if ((rc = parse_strlist(c, i, f, "create", "files.create",
                            &task->files_create)) < 0 ||
        (rc = parse_strlist(c, i, f, "modify", "files.modify",
                            &task->files_modify)) < 0)
        return rc;
    return parse_strlist(c, i, f, "read", "files.read", &task->files_read);
}

/* A string field zerg acts on: absent/null -> NULL, else a clean string. */
static int parse_cmd(struct parse_ctx *c, size_t i, const zerg_json *obj,
                     const char *key, const char *what, char **out)
{
    const zerg_json *v = zerg_json_get(obj, key);
    if (is_absent(v))
        return 0;
    if (v->type != ZERG_JSON_STRING)
        return graph_task_err(c, i, "%s must be a string, not %s", what,
                              type_of(v));
    if (!clean_str(v))
        return graph_task_err(c, i, "%s contains a NUL byte", what);
    if (!(*out = strdup(v->u.str.s)))
        return graph_nomem(c);
    return 0;
}

static int parse_verification(struct parse_ctx *c, size_t i, const zerg_json *t)
{
    struct zerg_task *task = &c->g->tasks[i];
    const zerg_json *vf = zerg_json_get(t, "verification");
    task->verify_timeout_ns = GRAPH_DEFAULT_TIMEOUT_NS;
    if (is_absent(vf))
        return 0;
    if (vf->type != ZERG_JSON_OBJECT)
        return graph_task_err(c, i, "verification must be an object, not %s",
                              type_of(vf));
    int rc = parse_cmd(c, i, vf, "command", "verification.command",
                       &task->verify_command);
    if (rc < 0)
        return rc;
    const zerg_json *to = zerg_json_get(vf, "timeout_seconds");
    if (is_absent(to))
        return 0;
    if (to->type != ZERG_JSON_NUMBER)
        return graph_task_err(
            c, i,
            "verification.timeout_seconds must be a number > 0, "
            "not %s",
            type_of(to));
    double s = to->u.number;
    if (!(s > 0) || !(s <= GRAPH_MAX_TIMEOUT_S))
        return graph_task_err(
            c, i,
            "verification.timeout_seconds must be a number > 0 "
            "and at most a year, not %g",
            s);
    task->verify_timeout_ns = (int64_t)(s * 1e9);
    return 0;
}

/* Descriptive text: a string, else "" (it only ever gets displayed). */
/* The one "" every absent or empty descriptive field points to: a
 * strdup("") is a 32-byte allocation, and at 100,000 tasks without a
 * description or context those were 6 MB of the orchestrator's memory. */
static char no_text[1];

static int parse_text(struct parse_ctx *c, const zerg_json *t, const char *key,
                      char **out)
{
    const char *s = zerg_json_as_str(zerg_json_get(t, key));
    if (!s || !*s) {
        *out = no_text;
        return 0;
    }
    if (!(*out = strdup(s)))
        return graph_nomem(c);
    return 0;
}

static void text_free(char *s)
{
    if (s != no_text)
        free(s);
}

static int parse_task(struct parse_ctx *c, size_t i, const zerg_json *t)
{
    struct zerg_task *task = &c->g->tasks[i];
    int rc;
    if (t->type != ZERG_JSON_OBJECT)
        return graph_task_err(c, i, "must be an object, not %s", type_of(t));
    if ((rc = parse_id(c, i, t)) < 0 || (rc = parse_level(c, i, t)) < 0 ||
        (rc = parse_strlist(c, i, t, "dependencies", "dependencies",
                            &task->deps)) < 0 ||
        (rc = parse_files(c, i, t)) < 0 ||
        (rc = parse_verification(c, i, t)) < 0 ||
        (rc = parse_cmd(c, i, t, "command", "command", &task->command)) < 0 ||
        (rc = parse_text(c, t, "title", &task->title)) < 0 ||
        (rc = parse_text(c, t, "description", &task->description)) < 0 ||
        (rc = parse_text(c, t, "context", &task->context)) < 0 ||
        (rc = parse_strlist(c, i, t, "acceptance_criteria",
                            "acceptance_criteria", &task->acceptance)) < 0)
        return rc;
    double est = zerg_json_as_num(zerg_json_get(t, "estimate_minutes"), 0);
    task->estimate_minutes = isfinite(est) && est > 0 ? est : 0;
    return 0;
}

/* ---- top level -------------------------------------------------------- */

/* The "levels" map of a file numbered from 0 has a "0" key. */
static int zero_based(struct parse_ctx *c, const zerg_json *doc)
{
    const zerg_json *lv = zerg_json_get(doc, "levels");
    if (!zerg_json_is(lv, ZERG_JSON_OBJECT) || !zerg_json_get(lv, "0"))
        return 0;
    if (graph_strlist_push(
            &c->g->warnings,
            "levels are numbered from 0 in this file; zerg numbers "
            "them from 1, so every level runs one higher") < 0)
        return graph_nomem(c);
    return 1;
}

static int parse_top(struct parse_ctx *c, const zerg_json *doc, size_t n)
{
    struct zerg_graph *g = c->g;
    if (doc->type != ZERG_JSON_OBJECT)
        return zerg_err_set(c->err, ZERG_EINVAL_INPUT,
                            "%s: the top level must be an object with a "
                            "\"tasks\" array, not %s",
                            c->name, type_of(doc));
    const zerg_json *f = zerg_json_get(doc, "feature");
    if (!is_absent(f) && f->type != ZERG_JSON_STRING)
        return zerg_err_set(c->err, ZERG_EINVAL_INPUT,
                            "%s: feature must be a string, not %s", c->name,
                            type_of(f));
    const char *fs = zerg_json_as_str(f);
    if (!(g->feature = strdup(fs ? fs : "")))
        return graph_nomem(c);
    const zerg_json *t = zerg_json_get(doc, "tasks");
    if (is_absent(t))
        return zerg_err_set(c->err, ZERG_EINVAL_INPUT, "%s: no \"tasks\" array",
                            c->name);
    if (!zerg_json_is(t, ZERG_JSON_ARRAY))
        return zerg_err_set(c->err, ZERG_EINVAL_INPUT,
                            "%s: \"tasks\" must be an array, not %s", c->name,
                            type_of(t));
    if (n == 0)
        return zerg_err_set(c->err, ZERG_EINVAL_INPUT,
                            "%s: \"tasks\" is empty; a graph needs at least "
                            "one task",
                            c->name);
    return 0;
}

/* Room for task i in g->tasks, raw_level and the index. */
static int task_room(struct parse_ctx *c, size_t i)
{
    struct zerg_graph *g = c->g;
    if (i >= c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct zerg_task *t = realloc(g->tasks, cap * sizeof *t);
        if (t)
            g->tasks = t;
        double *lv = t ? realloc(c->raw_level, cap * sizeof *lv) : NULL;
        if (lv)
            c->raw_level = lv;
        if (!t || !lv)
            return graph_nomem(c);
        memset(t + c->cap, 0, (cap - c->cap) * sizeof *t);
        c->cap = cap;
    }
    if ((!g->index && !(g->index = index_new(64))) || index_fit(g, i + 1) < 0)
        return graph_nomem(c);
    return 0;
}

/* One task object of the stream (zerg_json_parse_items).  The first bad
 * task is kept in c->err and the rest of the file is only parsed, not
 * read: a JSON syntax error anywhere, or a bad top level, is still the
 * error reported, as when the whole file was parsed first.  Only running
 * out of memory stops the parse. */
static int on_task(void *ctx, size_t i, const zerg_json *t, size_t off,
                   size_t len)
{
    struct parse_ctx *c = ctx;
    if (c->task_rc < 0)
        return 0;
    int rc = task_room(c, i);
    if (rc < 0)
        return rc;
    c->g->ntasks = i + 1; /* so task_err and zerg_graph_free see it */
    if ((rc = parse_task(c, i, t)) == -ENOMEM)
        return rc;
    c->task_rc = rc;
    struct zerg_task *task = &c->g->tasks[i];
    if (len) { /* the file is at most ZERG_GRAPH_MAX_BYTES */
        task->src_off = (uint32_t)off;
        task->src_len = (uint32_t)len;
        task->src_hash = zerg_graph_text_hash(c->text + off, len);
    }
    return 0;
}

static int parse_doc(struct parse_ctx *c, const zerg_json *doc, size_t n)
{
    struct zerg_graph *g = c->g;
    int rc = parse_top(c, doc, n);
    if (rc < 0 || (rc = c->task_rc) < 0 || (rc = zero_based(c, doc)) < 0)
        return rc;
    c->zero_based = rc;
    struct zerg_task *fit = realloc(g->tasks, n * sizeof *fit);
    if (fit)
        g->tasks = fit; /* the stream's slack back */
    for (size_t i = 0; i < n; i++)
        if ((rc = level_check(c, i)) < 0)
            return rc;
    if ((rc = graph_resolve_deps(c)) < 0 || (rc = graph_build_levels(c)) < 0 ||
        (rc = graph_find_conflicts(c)) < 0)
        return rc;
    return graph_critical_path(c);
}

int zerg_graph_parse(struct zerg_graph **out, const char *name,
                     const char *text, size_t len, struct zerg_err *err)
{
    struct parse_ctx c = {
        .name = name ? name : "task graph", .err = err, .text = text};
    struct zerg_err jerr = {0};
    zerg_json *doc = NULL;
    size_t n = 0;
    int rc;
    *out = NULL;
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    if (nul)
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "%s: contains a NUL byte at byte offset %zu; "
                            "a task graph is JSON text, which cannot hold one",
                            c.name, (size_t)(nul - text));
    if (!(c.g = calloc(1, sizeof *c.g))) {
        rc = graph_nomem(&c);
        goto out;
    }
    doc = zerg_json_parse_items(text, len, "tasks", on_task, &c, &n, &jerr);
    if (!doc) {
        rc = jerr.code == 0
                 ? -ENOMEM /* on_task stopped it, err is set */
                 : zerg_err_set(err, ZERG_EINVAL_INPUT, "%s: invalid JSON: %s",
                                c.name, jerr.msg[0] ? jerr.msg : "parse error");
        goto out;
    }
    if ((rc = parse_doc(&c, doc, n)) < 0)
        goto out;
    *out = c.g;
    c.g = NULL;
out:
    free(c.raw_level);
    zerg_json_free(doc);
    zerg_graph_free(c.g);
    return rc;
}

int zerg_graph_load(struct zerg_graph **out, const char *path,
                    struct zerg_err *err)
{
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    /* A FIFO is refused; a link must stay inside the project. */
    int rc = zerg_fsio_read_input(path, ZERG_GRAPH_MAX_BYTES, &text, &len, err);
    if (rc == -EFBIG)
        return zerg_err_set(err, rc,
                            "%s: larger than the %u MB a task graph "
                            "may be",
                            path, ZERG_GRAPH_MAX_BYTES >> 20);
    if (rc < 0)
        return rc;
    rc = zerg_graph_parse(out, path, text, len, err);
    free(text);
    return rc;
}

/* ---- one task, for a worker ------------------------------------------ */

uint32_t zerg_graph_text_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* The task's text from the file, if it still hashes as it did. */
static char *task_text(int fd, uint32_t off, uint32_t len, uint32_t hash)
{
    char *text = len && len <= ZERG_GRAPH_MAX_BYTES ? malloc(len) : NULL;
    if (text &&
        (pread(fd, text, len, off) != (ssize_t)len || memchr(text, '\0', len) ||
         zerg_graph_text_hash(text, len) != hash)) {
        free(text);
        text = NULL;
    }
    return text;
}

int zerg_graph_read_task(struct zerg_graph **out, int fd, const char *name,
                         const char *id, uint32_t off, uint32_t len,
                         uint32_t hash, struct zerg_err *err)
{
    struct parse_ctx c = {.name = name ? name : "task graph", .err = err};
    struct zerg_err jerr = {0};
    zerg_json *doc = NULL;
    int rc = -ESTALE;
    *out = NULL;
    char *text = task_text(fd, off, len, hash);
    if (!text || !(doc = zerg_json_parse(text, len, &jerr)) ||
        !zerg_json_is(doc, ZERG_JSON_OBJECT) ||
        !zerg_json_as_str(zerg_json_get(doc, "id")) ||
        strcmp(zerg_json_as_str(zerg_json_get(doc, "id")), id) != 0)
        goto out;
    if (!(c.g = calloc(1, sizeof *c.g)) || task_room(&c, 0) < 0) {
        rc = graph_nomem(&c);
        goto out;
    }
    c.g->ntasks = 1;
    if ((rc = parse_task(&c, 0, doc)) < 0)
        goto out;
    c.g->tasks[0].level = (int)c.raw_level[0];
    c.g->tasks[0].src_off = off;
    c.g->tasks[0].src_len = len;
    c.g->tasks[0].src_hash = hash;
    *out = c.g;
    c.g = NULL;
out:
    free(c.raw_level);
    free(text);
    zerg_json_free(doc);
    zerg_graph_free(c.g);
    return rc;
}

static void task_free(struct zerg_task *t)
{
    free(t->id);
    text_free(t->title);
    strlist_free(&t->deps);
    free(t->dep_idx);
    strlist_free(&t->files_create);
    strlist_free(&t->files_modify);
    strlist_free(&t->files_read);
    strlist_free(&t->acceptance);
    free(t->command);
    free(t->verify_command);
    text_free(t->description);
    text_free(t->context);
    free(t->wgroups);
}

void zerg_graph_free(struct zerg_graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->ntasks; i++)
        task_free(&g->tasks[i]);
    free(g->tasks);
    if (g->levels)
        for (int lv = 0; lv <= g->nlevels; lv++)
            free(g->levels[lv].tasks);
    free(g->levels);
    free(g->wgroup_start);
    free(g->wgroup_tasks);
    strlist_free(&g->warnings);
    free(g->critical_path);
    free(g->feature);
    index_free(g->index);
    free(g);
}
