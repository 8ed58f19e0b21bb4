/* protocol_paths.c - struct zerg_path_list (include/zerg/protocol.h): the
 * bounded lists of paths a result carries (DESIGN §18: declared outputs
 * missing, declared ignored files committed anyway, undeclared ignored
 * files left out), and their JSON, an array of the listed paths plus the
 * total, written only when there is any:
 *   "missing": ["src/a.c"], "missing_total": 1
 * A list never grows past ZERG_PATHS_LISTED paths or its buffer, so a
 * result stays one small file however many paths a task left behind. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "protocol_internal.h"
#include "zerg/protocol.h"

int zerg_path_list_add(struct zerg_path_list *l, const char *path)
{
    size_t n = strlen(path);
    if (l->total < INT_MAX)
        l->total++;
    if (!n || l->n >= ZERG_PATHS_LISTED || l->len + n + 1 > sizeof l->text)
        return 0;
    memcpy(l->text + l->len, path, n + 1);
    l->len += n + 1;
    l->n++;
    return 1;
}

const char *zerg_path_list_next(const struct zerg_path_list *l,
                                const char *prev)
{
    const char *p = prev ? prev + strlen(prev) + 1 : l->text;
    return p < l->text + l->len ? p : NULL;
}

int proto_paths_put(zerg_json *o, const char *key,
                    const struct zerg_path_list *l)
{
    char total[64];
    if (!l->total)
        return 0;
    zerg_json *arr = zerg_json_arr();
    if (!arr || zerg_json_set(o, key, arr)) {
        zerg_json_free(arr);
        return -1;
    }
    for (const char *p = NULL; (p = zerg_path_list_next(l, p));)
        if (zerg_json_push(arr, zerg_json_str(p)))
            return -1;
    snprintf(total, sizeof total, "%s_total", key);
    return zerg_json_set_num(o, total, l->total) ? -1 : 0;
}

int proto_paths_get(const zerg_json *o, const char *key,
                    struct zerg_path_list *l)
{
    char total[64];
    memset(l, 0, sizeof *l);
    const zerg_json *arr = zerg_json_get(o, key);
    snprintf(total, sizeof total, "%s_total", key);
    const zerg_json *t = zerg_json_get(o, total);
    if (!arr && !t)
        return 0;
    double d = zerg_json_as_num(t, -1);
    if (!zerg_json_is(arr, ZERG_JSON_ARRAY) ||
        zerg_json_len(arr) > ZERG_PATHS_LISTED || d < 0 || d > INT_MAX ||
        d != (double)(int)d)
        return -1;
    for (size_t i = 0; i < zerg_json_len(arr); i++) {
        const char *s = zerg_json_as_str(zerg_json_at(arr, i));
        if (!s || !zerg_path_list_add(l, s))
            return -1;
    }
    if ((int)d < l->n)
        return -1;
    l->total = (int)d;
    return 0;
}
