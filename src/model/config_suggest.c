/* config_suggest.c - unknown config keys: a warning (never an error, so a
 * config written for upstream ZERG still loads) that says what the key
 * probably was: a ZERG setting zerg does not use, a renamed key, or the
 * closest known key by edit distance ("did you mean"). */
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "zerg/config.h"
#include "zerg/text.h"

#include "config_internal.h"

/* Keys ZERG reads that zerg has no use for: warned about without a
 * misleading "did you mean". */
static const char *const upstream_keys[] = {
    "project",
    "ports",
    "mcp_servers",
    "resources",
    "security",
    "plugins",
    "rules",
    "efficiency",
    "improvement_loops",
    "verification",
    "behavioral_modes",
    "mcp_routing",
    "tdd",
    "error_recovery",
    "workers.timeout_minutes",
    "workers.context_threshold_percent",
    "logging.directory",
    "logging.retain_days",
};

/* ZERG keys with a differently named zerg equivalent. */
static const struct {
    const char *upstream, *zerg;
} renamed_keys[] = {
    {"workers.launcher_type", "workers.mode"},
};

/* ---- unknown keys ----------------------------------------------------- */

/* Typos worth suggesting a fix for: 1 edit in short names, up to 3. */
static size_t typo_limit(const char *s)
{
    size_t n = strlen(s);
    return n <= 4 ? 1 : n <= 8 ? 2 : 3;
}

/* The closest known key or section name to path, or NULL.  A leaf name
 * is matched in every section so a key put in the wrong section is found
 * too; ties go to the section it was written in. */
static const char *suggest(const char *path, char *buf, size_t size)
{
    const char *dot = strchr(path, '.');
    const char *leaf = dot ? dot + 1 : path;
    size_t sn = dot ? (size_t)(dot - path) : 0, limit = typo_limit(leaf);
    size_t bestd = limit + 1;
    const char *best = NULL;
    int best_here = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        size_t d = zerg_edit_distance(leaf, leaf_of(i));
        int here = dot && section_len(config_key_rows[i].path) == sn &&
                   !memcmp(config_key_rows[i].path, path, sn);
        if (d < bestd || (d == bestd && here && !best_here)) {
            bestd = d;
            best = config_key_rows[i].path;
            best_here = here;
        }
    }
    for (size_t i = 0; !dot && i < NKEYS; i++) {
        char name[64];
        if (!is_section_start(i))
            continue;
        snprintf(name, sizeof name, "%.*s",
                 (int)section_len(config_key_rows[i].path),
                 config_key_rows[i].path);
        size_t d = zerg_edit_distance(path, name);
        if (d <= limit && d <= bestd) {
            bestd = d;
            best = buf;
            snprintf(buf, size, "%s", name);
        }
    }
    return best;
}

static void note_for(const char *path, char *note, size_t size)
{
    char buf[64];
    for (size_t k = 0; k < sizeof upstream_keys / sizeof *upstream_keys; k++) {
        if (!strcmp(path, upstream_keys[k])) {
            snprintf(note, size, " (a ZERG setting that zerg does not use)");
            return;
        }
    }
    const char *s = NULL;
    for (size_t k = 0; k < sizeof renamed_keys / sizeof *renamed_keys; k++) {
        if (!strcmp(path, renamed_keys[k].upstream))
            s = renamed_keys[k].zerg;
    }
    if (!s)
        s = suggest(path, buf, sizeof buf);
    if (s)
        snprintf(note, size, " (did you mean '%s'?)", s);
    else
        note[0] = '\0';
}

/* Warns about key (a scalar) at the top level (section NULL) or in
 * section[0..sn). */
void config_warn_unknown(struct loader *L, const yaml_node_t *key,
                         const char *section, size_t sn)
{
    if (!L->warn || L->nwarn++ >= MAX_WARNINGS)
        return;
    char name[48], path[128], note[128], msg[512];
    config_show_scalar(key, name, sizeof name);
    if (section)
        snprintf(path, sizeof path, "%.*s.%s", (int)sn, section, name);
    else
        snprintf(path, sizeof path, "%s", name);
    note_for(path, note, sizeof note);
    snprintf(msg, sizeof msg, "%s:%zu:%zu: unknown key '%s'%s", L->name,
             key->start_mark.line + 1, key->start_mark.column + 1, path, note);
    L->warn(L->ud, msg);
}
