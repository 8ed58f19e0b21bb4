/* logs_runs.c - the runs of the monitor log (see logs_runs.h). */
#include "cli/logs_runs.h"

#include <stdlib.h>
#include <string.h>

#include "zerg/clock.h"

static const char *str(const zerg_json *o, const char *k)
{
    return zerg_json_as_str(zerg_json_get(o, k));
}

static int is_resume(const zerg_json *rec)
{
    const zerg_json *r = zerg_json_get(zerg_json_get(rec, "data"), "resume");
    return zerg_json_is(r, ZERG_JSON_BOOL) && r->u.boolean;
}

static struct zerg_logs_run *find(struct zerg_logs_runs *rs, const char *feat)
{
    for (size_t i = 0; feat && i < rs->n; i++)
        if (!strcmp(rs->v[i].feature, feat))
            return &rs->v[i];
    return NULL;
}

static struct zerg_logs_run *add(struct zerg_logs_runs *rs, const char *feat)
{
    if (!feat || strlen(feat) > ZERG_ID_MAX)
        return NULL;
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 8;
        struct zerg_logs_run *v = realloc(rs->v, cap * sizeof *v);
        if (!v)
            return NULL;
        rs->v = v, rs->cap = cap;
    }
    struct zerg_logs_run *r = &rs->v[rs->n++];
    *r = (struct zerg_logs_run){0};
    snprintf(r->feature, sizeof r->feature, "%s", feat);
    return r;
}

void zerg_logs_runs_scan(void *runs, const zerg_json *rec)
{
    struct zerg_logs_runs *rs = runs;
    const char *ev = str(rec, "event"), *feat = str(rec, "feature");
    int64_t t;
    if (!ev || strcmp(ev, "rush_start") || is_resume(rec) ||
        zerg_clock_parse_iso8601(str(rec, "ts") ? str(rec, "ts") : "", &t))
        return;
    struct zerg_logs_run *r = find(rs, feat);
    if (!r && !(r = add(rs, feat)))
        return;
    const char *id = str(zerg_json_get(rec, "data"), "run_id");
    snprintf(r->run_id, sizeof r->run_id, "%s", id ? id : "?");
    r->start_ns = t;
}

int zerg_logs_runs_earlier(struct zerg_logs_runs *rs, const zerg_json *rec)
{
    struct zerg_logs_run *r = find(rs, str(rec, "feature"));
    int64_t t;
    if (!r ||
        zerg_clock_parse_iso8601(str(rec, "ts") ? str(rec, "ts") : "", &t) ||
        t >= r->start_ns)
        return 0;
    rs->hidden++;
    return 1;
}

void zerg_logs_runs_header(struct zerg_logs_runs *rs, FILE *out,
                           const zerg_json *rec)
{
    const char *ev = str(rec, "event"), *feat = str(rec, "feature");
    const char *ts = str(rec, "ts"),
               *id = str(zerg_json_get(rec, "data"), "run_id");
    struct zerg_logs_run *r = find(rs, feat);
    int start = ev && !strcmp(ev, "rush_start");
    if (!r)
        return; /* no fresh rush_start of a named feature: no runs to tell */
    if (start && is_resume(rec)) {
        fprintf(out, "--- %s resumed: rush %s, %s ---\n", feat ? feat : "?",
                id ? id : "?", ts ? ts : "?");
        r->headed = 1;
        return;
    }
    if (start) {
        fprintf(out, "=== run %s of %s, started %s ===\n", id ? id : "?",
                feat ? feat : "?", ts ? ts : "?");
        r->headed = 1;
        return;
    }
    if (!r->headed) {
        char at[ZERG_TS_MAX];
        r->headed = 1;
        fprintf(out,
                "=== run %s of %s, started %s (its earlier events not "
                "shown) ===\n",
                r->run_id, r->feature, zerg_clock_iso8601(r->start_ns, at));
    }
}

void zerg_logs_runs_tail_header(const struct zerg_logs_runs *rs, FILE *out)
{
    char at[ZERG_TS_MAX];
    for (size_t i = 0; i < rs->n; i++)
        fprintf(out, "=== run %s of %s, started %s: its last events ===\n",
                rs->v[i].run_id, rs->v[i].feature,
                zerg_clock_iso8601(rs->v[i].start_ns, at));
}

int64_t zerg_logs_runs_first(const struct zerg_logs_runs *rs)
{
    int64_t first = 0;
    for (size_t i = 0; i < rs->n; i++)
        if (!first || rs->v[i].start_ns < first)
            first = rs->v[i].start_ns;
    return first;
}

void zerg_logs_runs_free(struct zerg_logs_runs *rs)
{
    free(rs->v);
    *rs = (struct zerg_logs_runs){0};
}
