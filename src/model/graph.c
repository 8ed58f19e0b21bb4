/* graph.c - loads and validates a task graph (DESIGN.md section 4).
 *
 * The file is parsed into a zerg_json tree (lua-cjson underneath), copied
 * into struct zerg_graph, then checked in passes that each add one fact:
 * ids are unique, dependencies resolve to the same or a lower level, each
 * level gets a dependency order (which also finds cycles: a cycle can only
 * live inside one level), same-level tasks writing one path become
 * conflicts, and the longest dependency chain becomes the critical path.
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
 *   dependencies, files, verification, command) are errors. */
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

/* Levels are array indexes, so a typo like 1e9 must not allocate 16 GB. */
#define GRAPH_MAX_LEVEL 100000
/* A year: anything longer is a typo, and it keeps the ns value in range. */
#define GRAPH_MAX_TIMEOUT_S (365.0 * 24 * 3600)
#define GRAPH_DEFAULT_TIMEOUT_NS (30 * INT64_C(1000000000))
/* One graph with every task writing README.md would otherwise print n^2/2
 * lines; the conflicts themselves are all kept. */
#define GRAPH_MAX_CONFLICT_WARNINGS 200
#define SHOW_MAX 72 /* bytes of a bad value echoed in a message */

struct graph_index {
    size_t mask;  /* capacity - 1; capacity is a power of two */
    size_t *slot; /* task index + 1; 0 = empty */
};

struct parse_ctx {
    const char *name; /* file name for messages */
    struct zerg_err *err;
    struct zerg_graph *g;
    int zero_based;
};

/* ---- messages ---------------------------------------------------------- */

/* s for a message: printable ASCII as is, the rest as \xNN, cut at max
 * bytes; in double quotes when quote is set.  Returns buf. */
static const char *show_raw(char *buf, size_t size, const char *s, size_t len,
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

static const char *show(char *buf, size_t size, const char *s, size_t len)
{
    return show_raw(buf, size, s, len, SHOW_MAX, 1);
}

/* "<file>: task <id>: <what>", or "<file>: tasks[i]: <what>" before the
 * task has a valid id.  Returns ZERG_EINVAL_INPUT. */
static int task_err(struct parse_ctx *c, size_t i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int task_err(struct parse_ctx *c, size_t i, const char *fmt, ...)
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

static int strlist_push(struct zerg_strlist *l, const char *s)
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

static int nomem(struct parse_ctx *c)
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

static void index_free(struct graph_index *ix)
{
    if (ix)
        free(ix->slot);
    free(ix);
}

/* Slot holding id, or the empty slot where it would go. */
static size_t *index_slot(const struct zerg_graph *g, const char *id)
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
    size_t *s = index_slot(g, id);
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
        return task_err(c, i, "has no \"id\"");
    if (v->type != ZERG_JSON_STRING)
        return task_err(c, i, "id must be a string, not %s", type_of(v));
    if (!clean_str(v) || !zerg_id_valid(v->u.str.s))
        return task_err(c, i,
                        "invalid id %s: it %s (an id becomes a file name: "
                        "1 to 64 of [A-Za-z0-9._-], not starting with '.' "
                        "or '-')",
                        show(sb, sizeof sb, v->u.str.s, v->u.str.len),
                        strlen(v->u.str.s) != v->u.str.len
                            ? "contains a NUL byte"
                            : id_problem(v));
    size_t *slot = index_slot(g, v->u.str.s);
    if (*slot)
        return task_err(c, i, "duplicate id \"%s\" (also tasks[%zu])",
                        v->u.str.s, *slot - 1);
    if (!(g->tasks[i].id = strdup(v->u.str.s)))
        return nomem(c);
    *slot = i + 1;
    return 0;
}

static int parse_level(struct parse_ctx *c, size_t i, const zerg_json *t)
{
    struct zerg_task *task = &c->g->tasks[i];
    const zerg_json *v = zerg_json_get(t, "level");
    double lv;
    if (is_absent(v)) {
        lv = zerg_level_from_id(task->id);
        if (lv == 0)
            return task_err(c, i,
                            "no level: give it a \"level\" or an id of the "
                            "form *-L{n}-*");
    } else if (v->type != ZERG_JSON_NUMBER) {
        return task_err(c, i, "level must be an integer >= 1, not %s",
                        type_of(v));
    } else {
        lv = v->u.number;
        if (!isfinite(lv) || floor(lv) != lv)
            return task_err(c, i, "level must be an integer >= 1, not %g", lv);
    }
    if (c->zero_based && lv < 0)
        return task_err(c, i,
                        "level must be an integer >= 0 (this graph numbers "
                        "levels from 0), not %g",
                        lv);
    if (!c->zero_based && lv < 1)
        return task_err(c, i, "level must be an integer >= 1, not %g%s", lv,
                        lv == 0 ? " (a graph numbered from 0 declares level "
                                  "\"0\" in its top-level \"levels\")"
                                : "");
    if (lv > GRAPH_MAX_LEVEL - c->zero_based)
        return task_err(c, i, "level %g is too large (at most %d)", lv,
                        GRAPH_MAX_LEVEL - c->zero_based);
    task->level = (int)lv + c->zero_based;
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
    if (v->type != ZERG_JSON_ARRAY)
        return task_err(c, i, "%s must be an array of strings, not %s", what,
                        type_of(v));
    for (size_t k = 0; k < v->u.arr.n; k++) {
        const zerg_json *e = v->u.arr.items[k];
        if (e->type != ZERG_JSON_STRING)
            return task_err(c, i, "%s[%zu] must be a string, not %s", what, k,
                            type_of(e));
        if (!clean_str(e))
            return task_err(c, i, "%s[%zu] contains a NUL byte", what, k);
        if (strlist_push(out, e->u.str.s) < 0)
            return nomem(c);
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
        return task_err(c, i, "files must be an object, not %s", type_of(f));
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
        return task_err(c, i, "%s must be a string, not %s", what, type_of(v));
    if (!clean_str(v))
        return task_err(c, i, "%s contains a NUL byte", what);
    if (!(*out = strdup(v->u.str.s)))
        return nomem(c);
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
        return task_err(c, i, "verification must be an object, not %s",
                        type_of(vf));
    int rc = parse_cmd(c, i, vf, "command", "verification.command",
                       &task->verify_command);
    if (rc < 0)
        return rc;
    const zerg_json *to = zerg_json_get(vf, "timeout_seconds");
    if (is_absent(to))
        return 0;
    if (to->type != ZERG_JSON_NUMBER)
        return task_err(c, i,
                        "verification.timeout_seconds must be a number > 0, "
                        "not %s",
                        type_of(to));
    double s = to->u.number;
    if (!(s > 0) || !(s <= GRAPH_MAX_TIMEOUT_S))
        return task_err(c, i,
                        "verification.timeout_seconds must be a number > 0 "
                        "and at most a year, not %g",
                        s);
    task->verify_timeout_ns = (int64_t)(s * 1e9);
    return 0;
}

/* Descriptive text: a string, else "" (it only ever gets displayed). */
static int parse_text(struct parse_ctx *c, const zerg_json *t, const char *key,
                      char **out)
{
    const char *s = zerg_json_as_str(zerg_json_get(t, key));
    if (!(*out = strdup(s ? s : "")))
        return nomem(c);
    return 0;
}

static int parse_task(struct parse_ctx *c, size_t i, const zerg_json *t)
{
    struct zerg_task *task = &c->g->tasks[i];
    int rc;
    if (t->type != ZERG_JSON_OBJECT)
        return task_err(c, i, "must be an object, not %s", type_of(t));
    if ((rc = parse_id(c, i, t)) < 0 || (rc = parse_level(c, i, t)) < 0 ||
        (rc = parse_strlist(c, i, t, "dependencies", "dependencies",
                            &task->deps)) < 0 ||
        (rc = parse_files(c, i, t)) < 0 ||
        (rc = parse_verification(c, i, t)) < 0 ||
        (rc = parse_cmd(c, i, t, "command", "command", &task->command)) < 0 ||
        (rc = parse_text(c, t, "title", &task->title)) < 0 ||
        (rc = parse_text(c, t, "description", &task->description)) < 0 ||
        (rc = parse_text(c, t, "context", &task->context)) < 0)
        return rc;
    double est = zerg_json_as_num(zerg_json_get(t, "estimate_minutes"), 0);
    task->estimate_minutes = isfinite(est) && est > 0 ? est : 0;
    return 0;
}

/* ---- dependencies ----------------------------------------------------- */

static int resolve_deps(struct parse_ctx *c)
{
    struct zerg_graph *g = c->g;
    char sb[SHOW_MAX * 4 + 8];
    for (size_t i = 0; i < g->ntasks; i++) {
        struct zerg_task *t = &g->tasks[i];
        if (t->deps.n && !(t->dep_idx = malloc(t->deps.n * sizeof(size_t))))
            return nomem(c);
        for (size_t k = 0; k < t->deps.n; k++) {
            const char *d = t->deps.v[k];
            ssize_t j = zerg_graph_find(g, d);
            if (j < 0)
                return task_err(c, i, "unknown dependency %s",
                                show(sb, sizeof sb, d, strlen(d)));
            if ((size_t)j == i)
                return task_err(c, i, "depends on itself");
            if (g->tasks[j].level > t->level)
                return task_err(c, i,
                                "depends on %s at level %d, a higher level "
                                "than its own (%d); dependencies must be at "
                                "the same or a lower level",
                                d, g->tasks[j].level, t->level);
            t->dep_idx[k] = (size_t)j;
        }
    }
    return 0;
}

/* ---- level order ------------------------------------------------------ */

/* Same-level edges in compressed form: the tasks depending on task i are
 * dep_of[start[i] .. start[i+1]). */
struct edges {
    size_t *start, *dep_of, *indeg;
};

static void edges_free(struct edges *e)
{
    free(e->start);
    free(e->dep_of);
    free(e->indeg);
}

static int same_level(const struct zerg_graph *g, size_t i, size_t k)
{
    return g->tasks[g->tasks[i].dep_idx[k]].level == g->tasks[i].level;
}

static int edges_build(const struct zerg_graph *g, struct edges *e)
{
    size_t n = g->ntasks, m = 0;
    e->start = calloc(n + 1, sizeof(size_t));
    e->indeg = calloc(n, sizeof(size_t));
    if (!e->start || !e->indeg)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < g->tasks[i].deps.n; k++)
            if (same_level(g, i, k)) {
                e->start[g->tasks[i].dep_idx[k] + 1]++;
                e->indeg[i]++;
                m++;
            }
    for (size_t i = 0; i < n; i++)
        e->start[i + 1] += e->start[i];
    if (!(e->dep_of = malloc((m ? m : 1) * sizeof(size_t))))
        return -ENOMEM;
    size_t *fill = malloc((n ? n : 1) * sizeof(size_t));
    if (!fill)
        return -ENOMEM;
    memcpy(fill, e->start, n * sizeof(size_t));
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < g->tasks[i].deps.n; k++)
            if (same_level(g, i, k))
                e->dep_of[fill[g->tasks[i].dep_idx[k]]++] = i;
    free(fill);
    return 0;
}

/* Min-heap of task indexes: the ready task earliest in the file goes
 * first, so a level already in dependency order keeps the file order. */
struct heap {
    size_t *v, n;
};

static void heap_push(struct heap *h, size_t x)
{
    size_t i = h->n++;
    for (; i && h->v[(i - 1) / 2] > x; i = (i - 1) / 2)
        h->v[i] = h->v[(i - 1) / 2];
    h->v[i] = x;
}

static size_t heap_pop(struct heap *h)
{
    size_t top = h->v[0], x = h->v[--h->n], i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= h->n)
            break;
        if (k + 1 < h->n && h->v[k + 1] < h->v[k])
            k++;
        if (h->v[k] >= x)
            break;
        h->v[i] = h->v[k];
        i = k;
    }
    if (h->n)
        h->v[i] = x;
    return top;
}

/* Some tasks of a level were never ready: every one of them waits for
 * another of them, so walking "depends on" edges among them must loop.
 * Names the loop, e.g. "A -> B -> A". */
static int report_cycle(struct parse_ctx *c, const unsigned char *done,
                        size_t start)
{
    struct zerg_graph *g = c->g;
    size_t n = g->ntasks, len = 0, x = start;
    size_t *pos = malloc(n * sizeof *pos); /* place on the walk + 1 */
    size_t *walk = malloc(n * sizeof *walk);
    if (!pos || !walk) {
        free(pos);
        free(walk);
        return nomem(c);
    }
    memset(pos, 0, n * sizeof *pos);
    while (!pos[x]) {
        pos[x] = ++len;
        walk[len - 1] = x;
        const struct zerg_task *t = &g->tasks[x];
        size_t k = 0;
        while (done[t->dep_idx[k]] || !same_level(g, x, k))
            k++;
        x = t->dep_idx[k];
    }
    char path[ZERG_ERR_MSG_MAX / 2];
    size_t o = 0;
    for (size_t p = pos[x] - 1; p <= len; p++) {
        const char *id = g->tasks[p < len ? walk[p] : x].id;
        if (o + strlen(id) + 10 >= sizeof path) {
            snprintf(path + o, sizeof path - o, " -> ...");
            break;
        }
        o += (size_t)snprintf(path + o, sizeof path - o, "%s%s",
                              o ? " -> " : "", id);
    }
    free(pos);
    free(walk);
    return task_err(c, x, "dependency cycle: %s", path);
}

/* Orders one level: Kahn's algorithm over same-level edges.  The heap is
 * filled before L->tasks is rewritten, so the order reuses its array. */
static int order_level(struct parse_ctx *c, struct edges *e, struct heap *h,
                       unsigned char *done, int lv)
{
    struct zerg_graph *g = c->g;
    struct zerg_level *L = &g->levels[lv];
    size_t placed = 0;
    h->n = 0;
    for (size_t k = 0; k < L->n; k++)
        if (e->indeg[L->tasks[k]] == 0)
            heap_push(h, L->tasks[k]);
    while (h->n) {
        size_t x = heap_pop(h);
        L->tasks[placed++] = x;
        done[x] = 1;
        for (size_t k = e->start[x]; k < e->start[x + 1]; k++)
            if (--e->indeg[e->dep_of[k]] == 0)
                heap_push(h, e->dep_of[k]);
    }
    if (placed == L->n)
        return 0;
    size_t first = 0; /* the earliest task in the file left waiting */
    while (g->tasks[first].level != lv || done[first])
        first++;
    return report_cycle(c, done, first);
}

static int build_levels(struct parse_ctx *c)
{
    struct zerg_graph *g = c->g;
    struct edges e = {0};
    struct heap h = {0};
    unsigned char *done = NULL;
    int rc = -ENOMEM;
    for (size_t i = 0; i < g->ntasks; i++)
        if (g->tasks[i].level > g->nlevels)
            g->nlevels = g->tasks[i].level;
    g->levels = calloc((size_t)g->nlevels + 1, sizeof *g->levels);
    h.v = malloc(g->ntasks * sizeof *h.v);
    done = calloc(g->ntasks, 1);
    if (!g->levels || !h.v || !done || edges_build(g, &e) < 0)
        goto out;
    for (size_t i = 0; i < g->ntasks; i++)
        g->levels[g->tasks[i].level].n++;
    for (int lv = 1; lv <= g->nlevels; lv++) {
        struct zerg_level *L = &g->levels[lv];
        if (L->n && !(L->tasks = malloc(L->n * sizeof(size_t))))
            goto out;
        L->n = 0;
    }
    for (size_t i = 0; i < g->ntasks; i++) {
        struct zerg_level *L = &g->levels[g->tasks[i].level];
        L->tasks[L->n++] = i;
    }
    rc = 0;
    for (int lv = 1; lv <= g->nlevels && rc == 0; lv++)
        rc = order_level(c, &e, &h, done, lv);
out:
    edges_free(&e);
    free(h.v);
    free(done);
    return rc == -ENOMEM ? nomem(c) : rc;
}

/* ---- same-file conflicts ---------------------------------------------- */

struct write {
    int level;
    const char *path;
    size_t task;
};

struct pair {
    size_t a, b;
};

static int write_cmp(const void *pa, const void *pb)
{
    const struct write *x = pa, *y = pb;
    if (x->level != y->level)
        return x->level < y->level ? -1 : 1;
    int r = strcmp(x->path, y->path);
    if (r)
        return r;
    return x->task < y->task ? -1 : x->task > y->task;
}

static int pair_cmp(const void *pa, const void *pb)
{
    const struct pair *x = pa, *y = pb;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    return x->b < y->b ? -1 : x->b > y->b;
}

/* Every (level, path, task) a task creates or modifies, sorted. */
static struct write *collect_writes(const struct zerg_graph *g, size_t *nw)
{
    size_t n = 0;
    for (size_t i = 0; i < g->ntasks; i++)
        n += g->tasks[i].files_create.n + g->tasks[i].files_modify.n;
    struct write *w = malloc((n ? n : 1) * sizeof *w);
    if (!w)
        return NULL;
    n = 0;
    for (size_t i = 0; i < g->ntasks; i++) {
        const struct zerg_task *t = &g->tasks[i];
        for (size_t k = 0; k < t->files_create.n; k++)
            w[n++] = (struct write){t->level, t->files_create.v[k], i};
        for (size_t k = 0; k < t->files_modify.n; k++)
            w[n++] = (struct write){t->level, t->files_modify.v[k], i};
    }
    qsort(w, n, sizeof *w, write_cmp);
    *nw = n;
    return w;
}

static int warn_conflict(struct zerg_graph *g, const struct write *x, size_t b,
                         size_t *nwarn)
{
    char line[ZERG_ERR_MSG_MAX], sb[ZERG_ERR_MSG_MAX / 2];
    if (++*nwarn > GRAPH_MAX_CONFLICT_WARNINGS)
        return 0;
    snprintf(line, sizeof line,
             "level %d: %s and %s both write %s; they will not run at the "
             "same time",
             x->level, g->tasks[x->task].id, g->tasks[b].id,
             show_raw(sb, sizeof sb, x->path, strlen(x->path), 256, 0));
    return strlist_push(&g->warnings, line);
}

/* End of the (level, path) group starting at s. */
static size_t group_end(const struct write *w, size_t nw, size_t s)
{
    size_t e = s + 1;
    while (e < nw && w[e].level == w[s].level &&
           strcmp(w[e].path, w[s].path) == 0)
        e++;
    return e;
}

struct pairs {
    struct pair *v;
    size_t n, cap;
};

static int pairs_push(struct pairs *p, size_t a, size_t b)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct pair *v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = (struct pair){a, b};
    return 0;
}

/* Pairs of distinct tasks sharing a (level, path) group, one warning each;
 * past the warning cap, one summary line. */
static int collect_pairs(struct zerg_graph *g, const struct write *w, size_t nw,
                         struct pairs *p)
{
    size_t nwarn = 0;
    for (size_t s = 0, e; s < nw; s = e) {
        e = group_end(w, nw, s);
        for (size_t x = s; x < e; x++)
            for (size_t y = x + 1; y < e; y++) {
                /* A task listing a path twice (create and modify) sorts
                 * next to itself: pair only its first entry. */
                if ((x > s && w[x].task == w[x - 1].task) ||
                    w[y].task == w[y - 1].task)
                    continue;
                if (pairs_push(p, w[x].task, w[y].task) < 0 ||
                    warn_conflict(g, &w[x], w[y].task, &nwarn) < 0)
                    return -ENOMEM;
            }
    }
    if (nwarn <= GRAPH_MAX_CONFLICT_WARNINGS)
        return 0;
    char line[128];
    snprintf(line, sizeof line, "... and %zu more same-file pairs",
             nwarn - GRAPH_MAX_CONFLICT_WARNINGS);
    return strlist_push(&g->warnings, line);
}

/* Writes each unique pair into both tasks' sorted conflict lists. */
static int fill_conflicts(struct zerg_graph *g, struct pair *p, size_t n)
{
    size_t u = 0;
    if (n == 0)
        return 0;
    qsort(p, n, sizeof *p, pair_cmp);
    for (size_t k = 0; k < n; k++)
        if (u == 0 || pair_cmp(&p[u - 1], &p[k]) != 0)
            p[u++] = p[k];
    for (size_t k = 0; k < u; k++) {
        g->tasks[p[k].a].nconflicts++;
        g->tasks[p[k].b].nconflicts++;
    }
    for (size_t i = 0; i < g->ntasks; i++) {
        struct zerg_task *t = &g->tasks[i];
        if (t->nconflicts &&
            !(t->conflicts = malloc(t->nconflicts * sizeof(size_t))))
            return -ENOMEM;
        t->nconflicts = 0;
    }
    /* In (a, b) order, each list receives its lower partners (as b) before
     * its higher ones (as a), both ascending: the lists come out sorted. */
    for (size_t k = 0; k < u; k++) {
        struct zerg_task *a = &g->tasks[p[k].a], *b = &g->tasks[p[k].b];
        a->conflicts[a->nconflicts++] = p[k].b;
        b->conflicts[b->nconflicts++] = p[k].a;
    }
    return 0;
}

static int find_conflicts(struct parse_ctx *c)
{
    size_t nw = 0;
    struct pairs p = {0};
    int rc = -ENOMEM;
    struct write *w = collect_writes(c->g, &nw);
    if (w && collect_pairs(c->g, w, nw, &p) == 0)
        rc = fill_conflicts(c->g, p.v, p.n);
    free(w);
    free(p.v);
    return rc < 0 ? nomem(c) : 0;
}

static int cmp_size(const void *pa, const void *pb)
{
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    return a < b ? -1 : a > b;
}

int zerg_graph_conflicts(const struct zerg_graph *g, size_t a, size_t b)
{
    if (!g || a >= g->ntasks || b >= g->ntasks)
        return 0;
    const struct zerg_task *t = &g->tasks[a];
    if (!t->nconflicts)
        return 0;
    return bsearch(&b, t->conflicts, t->nconflicts, sizeof(size_t), cmp_size) !=
           NULL;
}

/* ---- critical path ---------------------------------------------------- */

/* Longest chain, compared by (minutes, task count) so that a graph with no
 * estimates falls back to the count.  Levels in their computed order are
 * a topological order of the whole graph. */
static int critical_path(struct parse_ctx *c)
{
    struct zerg_graph *g = c->g;
    size_t n = g->ntasks, best = 0;
    double *mins = malloc(n * sizeof *mins);
    size_t *cnt = malloc(n * sizeof *cnt), *prev = malloc(n * sizeof *prev);
    int rc = -ENOMEM;
    if (!mins || !cnt || !prev)
        goto out;
    int first = 1;
    for (int lv = 1; lv <= g->nlevels; lv++)
        for (size_t k = 0; k < g->levels[lv].n; k++) {
            size_t i = g->levels[lv].tasks[k];
            const struct zerg_task *t = &g->tasks[i];
            double m = 0;
            size_t nc = 0;
            prev[i] = SIZE_MAX;
            for (size_t d = 0; d < t->deps.n; d++) {
                size_t j = t->dep_idx[d];
                if (mins[j] > m || (mins[j] == m && cnt[j] > nc)) {
                    m = mins[j];
                    nc = cnt[j];
                    prev[i] = j;
                }
            }
            mins[i] = m + t->estimate_minutes;
            cnt[i] = nc + 1;
            if (first || mins[i] > mins[best] ||
                (mins[i] == mins[best] && cnt[i] > cnt[best]))
                best = i;
            first = 0;
        }
    if (!(g->critical_path = malloc(cnt[best] * sizeof(size_t))))
        goto out;
    g->ncritical = cnt[best];
    g->critical_minutes = mins[best];
    for (size_t k = g->ncritical, x = best; k > 0; x = prev[x])
        g->critical_path[--k] = x;
    rc = 0;
out:
    free(mins);
    free(cnt);
    free(prev);
    return rc < 0 ? nomem(c) : 0;
}

/* ---- top level -------------------------------------------------------- */

/* The "levels" map of a file numbered from 0 has a "0" key. */
static int zero_based(struct parse_ctx *c, const zerg_json *doc)
{
    const zerg_json *lv = zerg_json_get(doc, "levels");
    if (!zerg_json_is(lv, ZERG_JSON_OBJECT) || !zerg_json_get(lv, "0"))
        return 0;
    if (strlist_push(&c->g->warnings,
                     "levels are numbered from 0 in this file; zerg numbers "
                     "them from 1, so every level runs one higher") < 0)
        return nomem(c);
    return 1;
}

static int parse_top(struct parse_ctx *c, const zerg_json *doc,
                     const zerg_json **tasks)
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
        return nomem(c);
    const zerg_json *t = zerg_json_get(doc, "tasks");
    if (is_absent(t))
        return zerg_err_set(c->err, ZERG_EINVAL_INPUT, "%s: no \"tasks\" array",
                            c->name);
    if (t->type != ZERG_JSON_ARRAY)
        return zerg_err_set(c->err, ZERG_EINVAL_INPUT,
                            "%s: \"tasks\" must be an array, not %s", c->name,
                            type_of(t));
    if (t->u.arr.n == 0)
        return zerg_err_set(c->err, ZERG_EINVAL_INPUT,
                            "%s: \"tasks\" is empty; a graph needs at least "
                            "one task",
                            c->name);
    *tasks = t;
    return 0;
}

static int parse_doc(struct parse_ctx *c, const zerg_json *doc)
{
    struct zerg_graph *g = c->g;
    const zerg_json *tasks = NULL;
    int rc = parse_top(c, doc, &tasks);
    if (rc < 0 || (rc = zero_based(c, doc)) < 0)
        return rc;
    c->zero_based = rc;
    size_t n = tasks->u.arr.n;
    if (!(g->tasks = calloc(n, sizeof *g->tasks)) || !(g->index = index_new(n)))
        return nomem(c);
    for (size_t i = 0; i < n; i++) {
        g->ntasks = i + 1; /* so task_err and zerg_graph_free see task i */
        if ((rc = parse_task(c, i, tasks->u.arr.items[i])) < 0)
            return rc;
    }
    if ((rc = resolve_deps(c)) < 0 || (rc = build_levels(c)) < 0 ||
        (rc = find_conflicts(c)) < 0)
        return rc;
    return critical_path(c);
}

int zerg_graph_parse(struct zerg_graph **out, const char *name,
                     const char *text, size_t len, struct zerg_err *err)
{
    struct parse_ctx c = {.name = name ? name : "task graph", .err = err};
    struct zerg_err jerr = {0};
    int rc;
    *out = NULL;
    zerg_json *doc = zerg_json_parse(text, len, &jerr);
    if (!doc)
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "%s: invalid JSON: %s",
                            c.name, jerr.msg[0] ? jerr.msg : "parse error");
    if (!(c.g = calloc(1, sizeof *c.g))) {
        rc = nomem(&c);
        goto out;
    }
    if ((rc = parse_doc(&c, doc)) < 0)
        goto out;
    *out = c.g;
    c.g = NULL;
out:
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
    int rc = zerg_fsio_read_all(path, ZERG_GRAPH_MAX_BYTES, &text, &len, err);
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

static void task_free(struct zerg_task *t)
{
    free(t->id);
    free(t->title);
    strlist_free(&t->deps);
    free(t->dep_idx);
    strlist_free(&t->files_create);
    strlist_free(&t->files_modify);
    strlist_free(&t->files_read);
    free(t->command);
    free(t->verify_command);
    free(t->description);
    free(t->context);
    free(t->conflicts);
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
    strlist_free(&g->warnings);
    free(g->critical_path);
    free(g->feature);
    index_free(g->index);
    free(g);
}
