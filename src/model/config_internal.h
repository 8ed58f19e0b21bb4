/* config_internal.h - what the config files share (private): the kinds and
 * flags of the CONFIG_KEYS table (config.c), its rows, the lookups every
 * file makes in it, and the loader state that config_load.c walks the
 * document with and config_value.c / config_suggest.c report through. */
#ifndef ZERG_CONFIG_INTERNAL_H
#define ZERG_CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <yaml.h>

#include "zerg/config.h"

struct zerg_err;

/* Past this many unknown-key warnings only a count is reported. */
#define MAX_WARNINGS 32

/* How a key's YAML value becomes its field. */
enum kind {
    K_BOOL,     /* int: YAML 1.1 true/false/yes/no/on/off */
    K_INT,      /* int within the allowed range */
    K_INT64,    /* int64_t within the allowed range */
    K_MIB,      /* int64_t bytes, written in MiB */
    K_DURATION, /* int64_t ns, written in seconds (fractions allowed) */
    K_ENUM,     /* int: index of the value in the allowed "a|b|c" list */
    K_STRING,   /* char * */
    K_ARGV,     /* struct zerg_argv */
    K_NUMBER,   /* double within the allowed range */
};

/* Extra checks for strings and argvs. */
enum {
    F_NONEMPTY = 1, /* "" or [] is rejected */
    F_NOSPACE = 2,  /* no whitespace (image references) */
    F_SIZE = 4,     /* "" or a container size such as 512m or 2g */
    F_SPLIT = 8,    /* argv: a string is split on whitespace */
};

struct key_bind {
    enum kind kind;
    size_t off;
    unsigned flags;
};

/* The rows of CONFIG_KEYS; the declarations below fix the count, so a row
 * added to the table without this number fails to compile. */
#define NKEYS 59
extern const struct zerg_config_key config_key_rows[NKEYS];
extern const struct key_bind config_key_binds[NKEYS];

/* ---- table lookups ---------------------------------------------------- */

static inline size_t section_len(const char *path)
{
    return (size_t)(strchr(path, '.') - path);
}

static inline const char *leaf_of(size_t i)
{
    return config_key_rows[i].path + section_len(config_key_rows[i].path) + 1;
}

static inline int same_section(size_t a, size_t b)
{
    size_t n = section_len(config_key_rows[a].path);
    return n == section_len(config_key_rows[b].path) &&
           memcmp(config_key_rows[a].path, config_key_rows[b].path, n) == 0;
}

static inline int is_section_start(size_t i)
{
    return i == 0 || !same_section(i - 1, i);
}

static inline void *field_of(struct zerg_config *c, size_t i)
{
    return (char *)c + config_key_binds[i].off;
}

static inline const void *cfield_of(const struct zerg_config *c, size_t i)
{
    return (const char *)c + config_key_binds[i].off;
}

/* ---- owned values (config.c) ------------------------------------------ */

void config_argv_free(struct zerg_argv *a);
/* An argv of n empty slots (v[n] == NULL), or -ENOMEM. */
int config_argv_alloc(struct zerg_argv *a, size_t n);
/* Deep copy; on failure dst holds nothing that needs freeing. */
int config_copy(struct zerg_config *dst, const struct zerg_config *src);

/* ---- the loader (config_load.c) --------------------------------------- */

struct loader {
    const char *name; /* file name for messages */
    const char *text;
    size_t len;
    zerg_warn_fn warn;
    void *ud;
    struct zerg_err *err;
    yaml_document_t *doc;
    struct zerg_config cfg; /* the candidate */
    /* Per row: was the key set, and where (for duplicate and cross-key
     * messages); sections are tracked at their first row. */
    unsigned char key_seen[NKEYS], section_seen[NKEYS];
    yaml_mark_t key_mark[NKEYS], value_mark[NKEYS], section_mark[NKEYS];
    unsigned nwarn;
    int gates_seen;
    yaml_mark_t gates_mark;
};

/* Appends "FILE:LINE:COL: " (1-based) and the message to err; returns
 * ZERG_EINVAL_INPUT. */
int config_failf(struct loader *L, yaml_mark_t m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "FILE: out of memory"; returns -ENOMEM. */
int config_oom(struct loader *L);

/* ---- values (config_value.c) ------------------------------------------ */

/* 1 if v is a plain null scalar ("", ~, null). */
int config_is_null(const yaml_node_t *v);
/* Copies a scalar for display: at most ~40 bytes, control bytes as '?'. */
void config_show_scalar(const yaml_node_t *v, char *buf, size_t size);
/* "'text'", "a list", "a mapping" or "nothing (null)". */
const char *config_describe(const yaml_node_t *v, char *buf, size_t size);
/* The scalar grammars every value shares: a finite decimal number (no
 * hex, inf or nan; YAML's "1_000" separators allowed) and true/yes/on,
 * false/no/off.  0 or -1. */
int config_parse_real(const char *s, double *out);
int config_parse_bool(const char *s, int *out);
/* Checks v against row i and stores it in L->cfg. */
int config_apply_value(struct loader *L, size_t i, const yaml_node_t *v);

/* ---- quality gates (config_gates.c) ------------------------------------ */

/* The top-level `quality_gates:` list into L->cfg. */
int config_load_gates(struct loader *L, const yaml_node_t *k,
                      const yaml_node_t *v);
void config_gates_free(struct zerg_config *c);
int config_gates_copy(struct zerg_config *dst, const struct zerg_config *src);
zerg_json *config_gates_json(const struct zerg_config *c);

/* ---- unknown keys (config_suggest.c) ---------------------------------- */

/* Warns about key (a scalar) at the top level (section NULL) or in
 * section[0..sn). */
void config_warn_unknown(struct loader *L, const yaml_node_t *key,
                         const char *section, size_t sn);

#endif
