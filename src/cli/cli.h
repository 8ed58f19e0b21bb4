/* cli.h - what every subcommand shares: the project directory, feature
 * selection (DESIGN.md section 3), standard paths and exit codes.
 * One file per subcommand under src/cli/, each exporting
 * `int zerg_cmd_<name>(struct zerg_cli *cli, int argc, char **argv)`
 * that returns a process exit code (ZERG_EXIT_*). */
#ifndef ZERG_CLI_H
#define ZERG_CLI_H

#include <limits.h>
#include <stdio.h>
#include "zerg/config.h"
#include "zerg/err.h"

struct zerg_cli {
    const char *argv0;
    char project[PATH_MAX];  /* absolute project root (-C DIR or cwd) */
    const char *feature_opt; /* --feature, NULL if absent */
    int color;               /* stdout is a terminal and NO_COLOR unset */
};

/* Resolves the feature: --feature, $ZERG_FEATURE, .gsd/.current-feature,
 * the only directory under .gsd/specs/; else an error listing the
 * candidates.  Validates the name.  Returns 0 or ZERG_EINVAL_INPUT. */
int zerg_cli_feature(struct zerg_cli *cli, char *out, size_t size,
                     struct zerg_err *err);

/* Standard paths under the project: the formatted relative path is
 * appended to cli->project, e.g. zerg_cli_path(cli, buf, n,
 * ".zerg/state/%s.json", feature) gives "/abs/project/.zerg/state/F.json".
 * 0 or -ENAMETOOLONG. */
int zerg_cli_path(const struct zerg_cli *cli, char *out, size_t size,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Loads .zerg/config.yaml over cfg, which must hold the defaults
 * (zerg_config_defaults); warnings go to stderr as "zerg: warning: ...".
 * Like zerg_config_load, a failure leaves cfg as it was: the caller frees
 * it with zerg_config_free either way.  0 or ZERG_EINVAL_INPUT. */
int zerg_cli_config(const struct zerg_cli *cli, struct zerg_config *cfg,
                    struct zerg_err *err);

/* Loads .gsd/specs/{feature}/task-graph.json.  A missing file gets a
 * message saying how to create it.  0 or negative with err set. */
struct zerg_graph;
int zerg_cli_graph(const struct zerg_cli *cli, const char *feature,
                   struct zerg_graph **g, struct zerg_err *err);

/* Prints "zerg CMD: message" to stderr. */
void zerg_cli_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "zerg CMD: message" (when fmt is non-NULL) and "Try 'zerg CMD
 * --help'." to stderr; returns ZERG_EXIT_USAGE. */
int zerg_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* kept.c: removes what is under dir (a feature's logs, or a set-aside
 * tasks directory) but the copies zerg saved: *.patch files and the
 * NAME.git / NAME.tree copies under worktrees/.  With k->dry_run only
 * counts them.  0 (also when dir does not exist) or -errno, with
 * k->patches and k->copies what stays. */
struct zerg_kept {
    int dry_run;
    int patches, copies;
};
int zerg_cli_prune_logs(const char *dir, struct zerg_kept *k);
/* A fresh rush: .zerg/logs/{feature}/tasks becomes tasks.previous; the
 * tasks.previous it replaces keeps its saved copies as tasks.kept-{time}.
 * Problems are warnings on stderr. */
void zerg_cli_set_logs_aside(const struct zerg_cli *cli, const char *feature);

/* The subcommands. */
int zerg_cmd_rush(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_status(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_stop(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_retry(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_review(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_diff(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_approve(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_redo(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_logs(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_lua(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_validate(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_worker(struct zerg_cli *cli, int argc, char **argv);
int zerg_cmd_cleanup(struct zerg_cli *cli, int argc, char **argv);

#endif
