/* logs_joblog.c - `zerg logs --joblog`: a table of the feature's last run
 * for a spreadsheet, one tab-separated row per task attempt (as GNU
 * parallel's --joblog), or with --json the same rows as JSON lines.
 *
 * The rows come from the monitor log (read by logs.c, rotated files
 * included) and each attempt's result record, .zerg/logs/{feature}/
 * tasks/{id}/attempt-{n}.result.json; joblog.c combines them.  A record
 * that is missing (its worker was killed) or unreadable leaves its row
 * to the events. */
#include "cli/logs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/joblog.h"
#include "zerg/protocol.h"

static void on_event(void *ctx, const zerg_json *rec)
{
    zerg_joblog_event(ctx, rec);
}

static void read_results(struct zerg_cli *cli, const char *feature,
                         struct zerg_joblog *jl)
{
    char path[PATH_MAX];
    for (size_t i = 0; i < jl->n; i++) {
        const struct zerg_jl_row *row = &jl->rows[i];
        struct zerg_result res;
        if (zerg_cli_path(cli, path, sizeof path,
                          ".zerg/logs/%s/tasks/%s/attempt-%d.result.json",
                          feature, row->task, row->attempt) == 0 &&
            zerg_proto_read_result(path, &res) == 0)
            zerg_joblog_result(jl, &res);
    }
}

static int print_json(const struct zerg_jl_row *row)
{
    zerg_json *o = zerg_jl_to_json(row);
    char *text = o ? zerg_json_encode(o, NULL, NULL) : NULL;
    zerg_json_free(o);
    if (!text)
        return -1;
    printf("%s\n", text);
    free(text);
    return 0;
}

static int print_rows(const struct zerg_joblog *jl, const char *task, int json)
{
    char line[512];
    if (!json)
        fputs(ZERG_JL_HEADER, stdout);
    for (size_t i = 0; i < jl->n; i++) {
        const struct zerg_jl_row *row = &jl->rows[i];
        if (task && strcmp(row->task, task) != 0)
            continue;
        if (json ? print_json(row) < 0
                 : zerg_jl_format_tsv(row, line, sizeof line) >=
                       (int)sizeof line)
            return -1;
        if (!json)
            fputs(line, stdout);
    }
    return fflush(stdout) == 0 ? 0 : -1;
}

int zerg_logs_joblog(struct zerg_cli *cli, const char *task, int json)
{
    char feature[ZERG_ID_MAX + 1];
    struct zerg_err err = {0};
    if (zerg_cli_feature(cli, feature, sizeof feature, &err)) {
        zerg_cli_error("logs", "%s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    struct zerg_joblog jl = {0};
    int rc = zerg_logs_each(cli, feature, on_event, &jl);
    if (rc == 0 && !jl.oom) {
        read_results(cli, feature, &jl);
        zerg_joblog_sort(&jl);
        if (print_rows(&jl, task, json) < 0) {
            zerg_cli_error("logs", "cannot write the joblog");
            rc = ZERG_EXIT_FAIL;
        }
    } else if (rc == 0) {
        zerg_cli_error("logs", "out of memory");
        rc = ZERG_EXIT_FAIL;
    }
    zerg_joblog_close(&jl);
    return rc;
}
