/* config_gates.c - the top-level `quality_gates:` list of .zerg/config.yaml
 * (DESIGN §13): a list of {name, command, required, timeout_seconds}.  It
 * is the one key that is not `section.key`, so it is read here rather than
 * through the CONFIG_KEYS table; errors name the file, line and column like
 * every other config error. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zerg/config.h"

#include "config_internal.h"

#define GATE_TIMEOUT_DEFAULT_NS (300 * INT64_C(1000000000))
#define GATE_MAX 64

static const char *scalar(const yaml_node_t *v)
{
    return v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value
                                       : NULL;
}

static int gate_string(struct loader *L, size_t idx, const char *key,
                       const yaml_node_t *v, char **out)
{
    char found[64];
    const char *s = scalar(v);
    if (!s || config_is_null(v) || !*s)
        return config_failf(L, v->start_mark,
                            "quality_gates[%zu].%s: found %s, expected a "
                            "non-empty string",
                            idx, key, config_describe(v, found, sizeof found));
    free(*out);
    *out = strdup(s);
    return *out ? 0 : config_oom(L);
}

static int gate_bool(struct loader *L, size_t idx, const yaml_node_t *v,
                     int *out)
{
    const char *s = scalar(v);
    if (s && !config_parse_bool(s, out))
        return 0;
    char found[64];
    return config_failf(L, v->start_mark,
                        "quality_gates[%zu].required: found %s, expected "
                        "true or false",
                        idx, config_describe(v, found, sizeof found));
}

/* Seconds, as every duration of the config reads them. */
static int gate_timeout(struct loader *L, size_t idx, const char *key,
                        const yaml_node_t *v, int64_t *out)
{
    const char *s = scalar(v);
    double d = NAN;
    if (!s || config_parse_real(s, &d) || d < 0.001 || d > 604800) {
        char found[64];
        return config_failf(L, v->start_mark,
                            "quality_gates[%zu].%s: found %s, expected "
                            "seconds in 0.001..604800",
                            idx, key, config_describe(v, found, sizeof found));
    }
    *out = (int64_t)llround(d * 1e9);
    return 0;
}

/* `timeout` is ZERG's name for timeout_seconds: an upstream config loads
 * as is.  Other keys of an upstream gate are warned about, not refused. */
static int gate_key(struct loader *L, size_t idx, struct zerg_gate *gt,
                    const yaml_node_t *k, const yaml_node_t *v)
{
    const char *key = scalar(k);
    if (key && !strcmp(key, "name"))
        return gate_string(L, idx, "name", v, &gt->name);
    if (key && !strcmp(key, "command"))
        return gate_string(L, idx, "command", v, &gt->command);
    if (key && !strcmp(key, "required"))
        return gate_bool(L, idx, v, &gt->required);
    if (key && (!strcmp(key, "timeout_seconds") || !strcmp(key, "timeout")))
        return gate_timeout(L, idx, key, v, &gt->timeout_ns);
    if (key)
        config_warn_unknown(L, k, "quality_gates[]", strlen("quality_gates[]"));
    else {
        char found[64];
        return config_failf(L, k->start_mark,
                            "quality_gates[%zu]: found a key %s, expected "
                            "name, command, required or timeout_seconds",
                            idx, config_describe(k, found, sizeof found));
    }
    return 0;
}

static int gate_one(struct loader *L, size_t idx, const yaml_node_t *m,
                    struct zerg_gate *gt)
{
    char found[64];
    gt->required = 1;
    gt->timeout_ns = GATE_TIMEOUT_DEFAULT_NS;
    if (m->type != YAML_MAPPING_NODE)
        return config_failf(L, m->start_mark,
                            "quality_gates[%zu]: found %s, expected a mapping "
                            "with name and command",
                            idx, config_describe(m, found, sizeof found));
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
         p < m->data.mapping.pairs.top; p++) {
        int rc = gate_key(L, idx, gt, yaml_document_get_node(L->doc, p->key),
                          yaml_document_get_node(L->doc, p->value));
        if (rc)
            return rc;
    }
    if (!gt->name || !gt->command)
        return config_failf(L, m->start_mark,
                            "quality_gates[%zu]: %s is missing", idx,
                            gt->name ? "command" : "name");
    for (const char *c = gt->name; *c; c++)
        if (!(c[0] == '-' || c[0] == '_' || c[0] == '.' ||
              (c[0] >= '0' && c[0] <= '9') || (c[0] >= 'a' && c[0] <= 'z') ||
              (c[0] >= 'A' && c[0] <= 'Z')))
            return config_failf(L, m->start_mark,
                                "quality_gates[%zu].name: '%s' may hold only "
                                "letters, digits, '-', '_' and '.'",
                                idx, gt->name);
    return 0;
}

static int gates_unique(struct loader *L, const yaml_node_t *v)
{
    const struct zerg_config *c = &L->cfg;
    for (size_t i = 0; i < c->ngates; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->gates[i].name, c->gates[j].name))
                return config_failf(L, v->start_mark,
                                    "quality_gates: the name '%s' is used "
                                    "twice",
                                    c->gates[i].name);
    return 0;
}

int config_load_gates(struct loader *L, const yaml_node_t *k,
                      const yaml_node_t *v)
{
    char found[64];
    if (L->gates_seen)
        return config_failf(L, k->start_mark,
                            "quality_gates: given twice (first at line %zu)",
                            L->gates_mark.line + 1);
    L->gates_seen = 1;
    L->gates_mark = k->start_mark;
    config_gates_free(&L->cfg);
    if (config_is_null(v))
        return 0;
    if (v->type != YAML_SEQUENCE_NODE)
        return config_failf(L, v->start_mark,
                            "quality_gates: found %s, expected a list of "
                            "{name, command, required, timeout_seconds}",
                            config_describe(v, found, sizeof found));
    size_t n =
        (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n > GATE_MAX)
        return config_failf(L, v->start_mark,
                            "quality_gates: %zu gates, at most %d", n,
                            GATE_MAX);
    if (!n)
        return 0;
    L->cfg.gates = calloc(n, sizeof *L->cfg.gates);
    if (!L->cfg.gates)
        return config_oom(L);
    for (size_t i = 0; i < n; i++) {
        L->cfg.ngates = i + 1;
        const yaml_node_t *item =
            yaml_document_get_node(L->doc, v->data.sequence.items.start[i]);
        int rc = gate_one(L, i, item, &L->cfg.gates[i]);
        if (rc)
            return rc;
    }
    return gates_unique(L, v);
}

void config_gates_free(struct zerg_config *c)
{
    for (size_t i = 0; i < c->ngates; i++) {
        free(c->gates[i].name);
        free(c->gates[i].command);
    }
    free(c->gates);
    c->gates = NULL;
    c->ngates = 0;
}

int config_gates_copy(struct zerg_config *dst, const struct zerg_config *src)
{
    dst->gates = NULL;
    dst->ngates = 0;
    if (!src->ngates)
        return 0;
    dst->gates = calloc(src->ngates, sizeof *dst->gates);
    if (!dst->gates)
        return -ENOMEM;
    for (size_t i = 0; i < src->ngates; i++) {
        struct zerg_gate *d = &dst->gates[i];
        const struct zerg_gate *s = &src->gates[i];
        dst->ngates = i + 1;
        *d = *s;
        d->name = strdup(s->name);
        d->command = strdup(s->command);
        if (!d->name || !d->command)
            return -ENOMEM;
    }
    return 0;
}

zerg_json *config_gates_json(const struct zerg_config *c)
{
    zerg_json *arr = zerg_json_arr();
    for (size_t i = 0; arr && i < c->ngates; i++) {
        zerg_json *g = zerg_json_obj();
        if (!g || zerg_json_push(arr, g) < 0) {
            zerg_json_free(arr);
            return NULL;
        }
        zerg_json_set_str(g, "name", c->gates[i].name);
        zerg_json_set_str(g, "command", c->gates[i].command);
        zerg_json_set_bool(g, "required", c->gates[i].required);
        zerg_json_set_num(g, "timeout_seconds",
                          (double)c->gates[i].timeout_ns / 1e9);
    }
    return arr;
}
