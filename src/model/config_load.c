/* config_load.c - the libyaml loader: reads a config file (bounded in size,
 * depth and anchors before libyaml builds a document), walks its sections
 * and keys through the table (config_value.c turns each value into its
 * field) and checks the rules between keys.
 *
 * Loading is all-or-nothing: keys are applied to a copy that replaces the
 * caller's config only when the whole file is valid.  A NUL byte anywhere
 * is refused with its line, column and byte offset: YAML text cannot
 * contain one. */
#include "zerg/config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "zerg/err.h"
#include "zerg/fsio.h"

#include "config_internal.h"
#include "zerg/pricing.h"

/* A config file is a few KB; 1 MiB bounds parser memory on hostile input. */
#define CONFIG_MAX_BYTES (1024 * 1024)
/* Deeper nesting and more anchors are rejected (see check_shape). */
#define MAX_DEPTH 32
#define MAX_ANCHORS 100

/* ---- table lookups ---------------------------------------------------- */

/* Index of the first key of section name[0..n), or -1. */
static long section_find(const char *name, size_t n)
{
    for (size_t i = 0; i < NKEYS; i++) {
        if (is_section_start(i) && section_len(config_key_rows[i].path) == n &&
            memcmp(config_key_rows[i].path, name, n) == 0)
            return (long)i;
    }
    return -1;
}

/* Index of key leaf[0..n) in the section starting at first, or -1. */
static long key_find_in(size_t first, const char *leaf, size_t n)
{
    for (size_t i = first; i < NKEYS && same_section(first, i); i++) {
        if (strlen(leaf_of(i)) == n && memcmp(leaf_of(i), leaf, n) == 0)
            return (long)i;
    }
    return -1;
}

static long key_find(const char *path)
{
    for (size_t i = 0; i < NKEYS; i++) {
        if (strcmp(config_key_rows[i].path, path) == 0)
            return (long)i;
    }
    return -1;
}

/* ---- the loader ------------------------------------------------------- */

int config_failf(struct loader *L, yaml_mark_t m, const char *fmt, ...)
{
    char msg[ZERG_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return zerg_err_set(L->err, ZERG_EINVAL_INPUT, "%s:%zu:%zu: %s", L->name,
                        m.line + 1, m.column + 1, msg);
}

/* The mark of byte offset off (for reader errors, which carry none). */
static yaml_mark_t mark_at(const struct loader *L, size_t off)
{
    yaml_mark_t m = {off, 0, 0};
    for (size_t k = 0; k < off && k < L->len; k++) {
        if (L->text[k] == '\n') {
            m.line++;
            m.column = 0;
        } else if (((unsigned char)L->text[k] & 0xC0) != 0x80) {
            m.column++; /* count characters, not UTF-8 continuation bytes */
        }
    }
    return m;
}

static int fail_duplicate(struct loader *L, const yaml_node_t *k,
                          const char *what, int wn, yaml_mark_t first)
{
    return config_failf(L, k->start_mark,
                        "%.*s: found a duplicate key, expected each key once "
                        "(first at line %zu, column %zu)",
                        wn, what, first.line + 1, first.column + 1);
}

int config_oom(struct loader *L)
{
    return zerg_err_set(L->err, -ENOMEM, "%s: out of memory", L->name);
}

/* ---- walking the document --------------------------------------------- */

static int load_key(struct loader *L, size_t first, const yaml_node_t *k,
                    const yaml_node_t *v)
{
    const char *sec = config_key_rows[first].path;
    size_t sn = section_len(sec);
    char found[64];
    if (k->type != YAML_SCALAR_NODE)
        return config_failf(L, k->start_mark,
                            "%.*s: found %s, expected a key name", (int)sn, sec,
                            config_describe(k, found, sizeof found));
    long i = key_find_in(first, (const char *)k->data.scalar.value,
                         k->data.scalar.length);
    if (i < 0) {
        config_warn_unknown(L, k, sec, sn);
        return 0;
    }
    if (L->key_seen[i])
        return fail_duplicate(L, k, config_key_rows[i].path,
                              (int)strlen(config_key_rows[i].path),
                              L->key_mark[i]);
    L->key_seen[i] = 1;
    L->key_mark[i] = k->start_mark;
    L->value_mark[i] = v->start_mark;
    return config_apply_value(L, (size_t)i, v);
}

static int load_section(struct loader *L, const yaml_node_t *k,
                        const yaml_node_t *v)
{
    char found[64];
    if (k->type != YAML_SCALAR_NODE)
        return config_failf(L, k->start_mark,
                            "top level: found %s, expected a section name",
                            config_describe(k, found, sizeof found));
    if (k->data.scalar.length == 13 &&
        !memcmp(k->data.scalar.value, "quality_gates", 13))
        return config_load_gates(L, k, v);
    long first =
        section_find((const char *)k->data.scalar.value, k->data.scalar.length);
    if (first < 0) {
        config_warn_unknown(L, k, NULL, 0);
        return 0;
    }
    const char *sec = config_key_rows[first].path;
    int sn = (int)section_len(sec);
    if (L->section_seen[first])
        return fail_duplicate(L, k, sec, sn, L->section_mark[first]);
    L->section_seen[first] = 1;
    L->section_mark[first] = k->start_mark;
    if (config_is_null(v))
        return 0; /* "workers:" with every key commented out */
    if (v->type != YAML_MAPPING_NODE)
        return config_failf(L, v->start_mark,
                            "%.*s: found %s, expected a mapping of keys", sn,
                            sec, config_describe(v, found, sizeof found));
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start;
         p < v->data.mapping.pairs.top; p++) {
        int rc =
            load_key(L, (size_t)first, yaml_document_get_node(L->doc, p->key),
                     yaml_document_get_node(L->doc, p->value));
        if (rc)
            return rc;
    }
    return 0;
}

static int load_root(struct loader *L, const yaml_node_t *root)
{
    if (!root || config_is_null(root))
        return 0; /* empty file or only comments: all defaults */
    if (root->type != YAML_MAPPING_NODE) {
        char found[64], sections[160] = "";
        size_t n = 0;
        for (size_t i = 0; i < NKEYS && n < sizeof sections; i++) {
            if (is_section_start(i))
                n += (size_t)snprintf(sections + n, sizeof sections - n,
                                      "%s%.*s", n ? ", " : "",
                                      (int)section_len(config_key_rows[i].path),
                                      config_key_rows[i].path);
        }
        return config_failf(
            L, root->start_mark,
            "top level: found %s, expected a mapping of sections "
            "(%s)",
            config_describe(root, found, sizeof found), sections);
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         p < root->data.mapping.pairs.top; p++) {
        int rc = load_section(L, yaml_document_get_node(L->doc, p->key),
                              yaml_document_get_node(L->doc, p->value));
        if (rc)
            return rc;
    }
    return 0;
}

/* Pairs of durations where the first must not exceed (or, when strict,
 * must stay below) the second. */
static const struct {
    const char *lo, *hi;
    int strict;
} order_rules[] = {
    {"workers.spawn_backoff_base_seconds", "workers.spawn_backoff_max_seconds",
     0},
    {"workers.backoff_base_seconds", "workers.backoff_max_seconds", 0},
    {"workers.heartbeat_interval_seconds", "workers.heartbeat_stale_threshold",
     1},
};

/* The old workers.executor list names a command: written without
 * executor.kind, it means kind command (upstream configs keep working). */
static void executor_kind_default(struct loader *L)
{
    long ex = key_find("workers.executor"), kind = key_find("executor.kind");
    if (L->key_seen[ex] && !L->key_seen[kind])
        L->cfg.executor_kind = ZERG_EXECUTOR_COMMAND;
}

static int check_order(struct loader *L)
{
    for (size_t r = 0; r < sizeof order_rules / sizeof *order_rules; r++) {
        long a = key_find(order_rules[r].lo), b = key_find(order_rules[r].hi);
        int64_t va = *(const int64_t *)field_of(&L->cfg, (size_t)a);
        int64_t vb = *(const int64_t *)field_of(&L->cfg, (size_t)b);
        if (va < vb || (va == vb && !order_rules[r].strict))
            continue;
        /* Point at the key the user wrote; the first one if both. */
        long at = L->key_seen[a] ? a : b;
        yaml_mark_t m = L->value_mark[at];
        return config_failf(L, m, "%s: found %g, expected %s %s (%g)",
                            config_key_rows[a].path, (double)va / 1e9,
                            order_rules[r].strict ? "less than" : "at most",
                            config_key_rows[b].path, (double)vb / 1e9);
    }
    return 0;
}

/* Every executor.pricing entry must parse: a price that is a typo would
 * silently cost nothing. */
static int check_pricing(struct loader *L)
{
    const struct zerg_argv *l = &L->cfg.executor_pricing;
    long at = key_find("executor.pricing");
    for (size_t i = 0; i < l->n; i++) {
        struct zerg_price p;
        char why[160];
        if (zerg_pricing_parse(l->v[i], NULL, 0, &p, why, sizeof why))
            return config_failf(L, L->value_mark[at],
                                "executor.pricing[%zu]: found \"%s\": %s; "
                                "expected MODEL=IN/OUT/CACHE_READ/CACHE_WRITE "
                                "in US dollars per million tokens, e.g. "
                                "claude-opus-5-5=15/75/1.5/18.75",
                                i, l->v[i], why);
    }
    return 0;
}

static int fail_syntax(struct loader *L, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return config_oom(L);
    yaml_mark_t m = p->error == YAML_READER_ERROR
                        ? mark_at(L, p->problem_offset)
                        : p->problem_mark;
    char ctx[160] = "";
    if (p->context)
        snprintf(ctx, sizeof ctx, " (%s at line %zu, column %zu)", p->context,
                 p->context_mark.line + 1, p->context_mark.column + 1);
    const char *hint = m.index < L->len && L->text[m.index] == '\t'
                           ? "; tabs cannot indent YAML, use spaces"
                           : "";
    return config_failf(L, m, "YAML syntax error: %s%s%s",
                        p->problem ? p->problem : "unreadable input", ctx,
                        hint);
}

/* The anchor a node event defines, or NULL. */
static const yaml_char_t *anchor_of(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return ev->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT:
        return ev->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT:
        return ev->data.mapping_start.anchor;
    default:
        return NULL;
    }
}

/* libyaml slows down faster than quadratically with nesting depth (40,000
 * '[' take 6 s; 1 MiB of them would take hours) and quadratically with the
 * number of anchors (50,000 take 5 s), so a first pass over the events,
 * which stops at the first excess, rejects such input before the document
 * is built.  A config needs 3 levels and no anchors. */
static int check_shape(struct loader *L)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    int depth = 0, anchors = 0, rc = 0;
    if (!yaml_parser_initialize(&parser))
        return config_oom(L);
    yaml_parser_set_input_string(&parser, (const unsigned char *)L->text,
                                 L->len);
    for (;;) {
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = fail_syntax(L, &parser);
            break;
        }
        yaml_event_type_t type = ev.type;
        yaml_mark_t at = ev.start_mark;
        anchors += anchor_of(&ev) != NULL;
        yaml_event_delete(&ev);
        if (anchors > MAX_ANCHORS) {
            rc = config_failf(L, at,
                              "found more than %d YAML anchors, expected "
                              "at most %d",
                              MAX_ANCHORS, MAX_ANCHORS);
            break;
        }
        if (type == YAML_STREAM_END_EVENT)
            break;
        if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT)
            depth--;
        if ((type == YAML_SEQUENCE_START_EVENT ||
             type == YAML_MAPPING_START_EVENT) &&
            ++depth > MAX_DEPTH) {
            rc =
                config_failf(L, at,
                             "found lists or mappings nested %d deep, expected "
                             "at most %d",
                             depth, MAX_DEPTH);
            break;
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

/* Parses the text and applies it to L->cfg. */
static int load_document(struct loader *L)
{
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    int rc = check_shape(L);
    if (rc)
        return rc;
    if (!yaml_parser_initialize(&parser))
        return config_oom(L);
    yaml_parser_set_input_string(&parser, (const unsigned char *)L->text,
                                 L->len);
    if (!yaml_parser_load(&parser, &doc)) {
        rc = fail_syntax(L, &parser);
        goto out_parser;
    }
    L->doc = &doc;
    rc = load_root(L, yaml_document_get_root_node(&doc));
    if (rc == 0 && !yaml_parser_load(&parser, &extra))
        rc = fail_syntax(L, &parser);
    else if (rc == 0) {
        const yaml_node_t *second = yaml_document_get_root_node(&extra);
        if (second)
            rc = config_failf(L, second->start_mark,
                              "found a second YAML document, expected one");
        yaml_document_delete(&extra);
    }
    yaml_document_delete(&doc);
    L->doc = NULL;
out_parser:
    yaml_parser_delete(&parser);
    return rc;
}

int zerg_config_load_string(struct zerg_config *c, const char *name,
                            const char *text, size_t len, zerg_warn_fn warn,
                            void *ud, struct zerg_err *err)
{
    struct loader L = {.name = name ? name : "config",
                       .text = text,
                       .len = len,
                       .warn = warn,
                       .ud = ud,
                       .err = err};
    if (len > CONFIG_MAX_BYTES)
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "%s: found a file of %zu bytes, expected at most "
                            "%d (1 MiB)",
                            L.name, len, CONFIG_MAX_BYTES);
    const char *nul = memchr(text, '\0', len);
    if (nul)
        return config_failf(&L, mark_at(&L, (size_t)(nul - text)),
                            "found a NUL byte, expected UTF-8 text (at byte "
                            "offset %zu)",
                            (size_t)(nul - text));
    if (config_copy(&L.cfg, c) < 0)
        return config_oom(&L);
    int rc = load_document(&L);
    if (rc == 0)
        rc = check_order(&L);
    if (rc == 0)
        rc = check_pricing(&L);
    if (rc == 0)
        executor_kind_default(&L);
    if (rc == 0 && L.warn && L.nwarn > MAX_WARNINGS) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s: %u more unknown keys not shown", L.name,
                 L.nwarn - MAX_WARNINGS);
        L.warn(L.ud, msg);
    }
    if (rc != 0) {
        zerg_config_free(&L.cfg);
        return rc;
    }
    zerg_config_free(c);
    *c = L.cfg;
    return 0;
}

/* The sentence for a config file that could not be read: the reader's own
 * for a file of the wrong kind or a link out of the project. */
static int read_failed(const char *path, int rc, const struct zerg_err *why,
                       struct zerg_err *err)
{
    if (rc == -ENOMEM)
        return zerg_err_set(err, rc, "%s: out of memory", path);
    if (rc == -EFBIG)
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "%s: found a file of more than %d bytes, expected "
                            "at most 1 MiB",
                            path, CONFIG_MAX_BYTES);
    if (rc == ZERG_ENOTREG || rc == ZERG_EOUTSIDE)
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "%s", why->msg);
    return zerg_err_set(err, ZERG_EINVAL_INPUT, "%s: cannot read: %s", path,
                        zerg_strerror(rc));
}

int zerg_config_load(struct zerg_config *c, const char *path, zerg_warn_fn warn,
                     void *ud, struct zerg_err *err)
{
    char *text = NULL;
    size_t len = 0;
    struct zerg_err why = {0};
    /* Never blocks on a FIFO, refuses a device, and a link must stay in
     * the project. */
    int rc = zerg_fsio_read_input(path, CONFIG_MAX_BYTES, &text, &len, &why);
    if (rc == -ENOENT)
        return 0; /* no config file: every key keeps its default */
    if (rc < 0)
        return read_failed(path, rc, &why, err);
    rc = zerg_config_load_string(c, path, text, len, warn, ud, err);
    free(text);
    return rc;
}
