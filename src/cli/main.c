/* main.c - zerg's entry point: global options, dispatch to one subcommand,
 * and the helpers every subcommand shares (cli.h): feature selection,
 * project paths, config loading, error lines.
 *
 *   zerg [-C DIR] [--feature F] COMMAND [ARGS]
 *
 * -C and --feature are also accepted anywhere after COMMAND (before `--`),
 * so `zerg status --feature F` and `zerg --feature F status` mean the same;
 * they are taken out of the subcommand's argv before it parses it. */
#include "cli.h"
#include "report.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerg/fsio.h"
#include "zerg/graph.h"
#include "zerg/text.h"

#ifndef ZERG_VERSION
#define ZERG_VERSION "0.1.0"
#endif

/* .gsd/.current-feature holds one name; anything past 4 KiB is not one. */
#define CURRENT_FEATURE_MAX 4096
/* Feature candidates listed in an error before "...". */
#define MAX_LISTED 20

typedef int (*cmd_fn)(struct zerg_cli *cli, int argc, char **argv);

static const struct command {
    const char *name;
    cmd_fn fn;
    const char *summary; /* NULL: internal, not listed */
} commands[] = {
    {"rush", zerg_cmd_rush, "run the task graph on parallel workers"},
    {"status", zerg_cmd_status, "show a run's progress, workers and health"},
    {"stop", zerg_cmd_stop, "stop a running rush (--force: kill it)"},
    {"retry", zerg_cmd_retry, "requeue failed or blocked tasks"},
    {"review", zerg_cmd_review, "list the tasks waiting for review"},
    {"diff", zerg_cmd_diff, "show a task's change against its base"},
    {"approve", zerg_cmd_approve, "merge tasks waiting for review"},
    {"redo", zerg_cmd_redo, "run a task waiting for review again, with a note"},
    {"logs", zerg_cmd_logs, "read, filter and follow the monitor log"},
    {"lua", zerg_cmd_lua, "Lua REPL over state, graph, config, policies"},
    {"report", zerg_cmd_report, "write an HTML timeline and task table"},
    {"cleanup", zerg_cmd_cleanup,
     "remove worktrees, worker branches and leftovers of a feature"},
    {"validate", zerg_cmd_validate,
     "check config, task graph and policy overrides"},
    {"worker", zerg_cmd_worker, NULL},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* ---- shared helpers (cli.h) ------------------------------------------- */

void zerg_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (cmd)
        fprintf(stderr, "zerg %s: ", cmd);
    else
        fputs("zerg: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int zerg_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "zerg %s: ", cmd);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    fprintf(stderr, "Try 'zerg %s --help'.\n", cmd);
    return ZERG_EXIT_USAGE;
}

int zerg_cli_path(const struct zerg_cli *cli, char *out, size_t size,
                  const char *fmt, ...)
{
    char rel[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof rel)
        return -ENAMETOOLONG;
    /* "/" as the project would otherwise give "//.zerg". */
    const char *root = strcmp(cli->project, "/") == 0 ? "" : cli->project;
    return zerg_fsio_path(out, size, "%s/%s", root, rel);
}

static void warn_stderr(void *ud, const char *msg)
{
    (void)ud;
    fprintf(stderr, "zerg: warning: %s\n", msg);
}

int zerg_cli_config(const struct zerg_cli *cli, struct zerg_config *cfg,
                    struct zerg_err *err)
{
    char path[PATH_MAX];
    if (zerg_cli_path(cli, path, sizeof path, ".zerg/config.yaml"))
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "the project path is too long");
    if (zerg_config_load(cfg, path, warn_stderr, NULL, err))
        return ZERG_EINVAL_INPUT;
    return 0;
}

int zerg_cli_graph(const struct zerg_cli *cli, const char *feature,
                   struct zerg_graph **g, struct zerg_err *err)
{
    char path[PATH_MAX];
    *g = NULL;
    if (zerg_cli_path(cli, path, sizeof path, ".gsd/specs/%s/task-graph.json",
                      feature))
        return zerg_err_set(err, -ENAMETOOLONG,
                            "the project path is too "
                            "long");
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return zerg_err_set(err, -ENOENT,
                            "%s: no such file: feature %s has no task graph "
                            "(create it, or pick another feature with "
                            "--feature F)",
                            path, feature);
    return zerg_graph_load(g, path, err);
}

/* ---- feature selection -------------------------------------------------- */

static int feature_set(char *out, size_t size, const char *name,
                       const char *source, struct zerg_err *err)
{
    if (!zerg_id_valid(name))
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "invalid feature name \"%.80s\"%s (from %s): use "
                            "only letters, digits, '.', '_' and '-', not "
                            "starting with '.' or '-', at most %d characters",
                            name, strlen(name) > 80 ? "..." : "", source,
                            ZERG_ID_MAX);
    if (strlen(name) >= size)
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "feature name too long");
    memcpy(out, name, strlen(name) + 1);
    return 0;
}

/* The trimmed first word of .gsd/.current-feature into buf: 1 if found,
 * 0 if the file is missing or blank, negative on a read error. */
static int current_feature_file(const struct zerg_cli *cli, char *buf,
                                size_t size, struct zerg_err *err)
{
    char path[PATH_MAX];
    char *text = NULL;
    size_t len = 0;
    struct zerg_err why = {0};
    if (zerg_cli_path(cli, path, sizeof path, ".gsd/.current-feature"))
        return 0;
    int rc = zerg_fsio_read_all(path, CURRENT_FEATURE_MAX, &text, &len, &why);
    if (rc == -ENOENT)
        return 0;
    if (rc == ZERG_ENOTREG || rc == -EISDIR || rc == ZERG_EOUTSIDE)
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "%s", why.msg);
    if (rc)
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "%s: %s", path,
                            rc == -EFBIG ? "too large to hold a feature name"
                                         : zerg_strerror(rc));
    char *s = text, *e = text + strlen(text);
    while (*s && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    *e = '\0';
    snprintf(buf, size, "%s", s);
    free(text);
    return buf[0] ? 1 : 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Directories under .gsd/specs/ (not hidden), sorted.  Caller frees. */
static size_t spec_dirs(const struct zerg_cli *cli, char ***out)
{
    char path[PATH_MAX];
    *out = NULL;
    if (zerg_cli_path(cli, path, sizeof path, ".gsd/specs"))
        return 0;
    DIR *d = opendir(path);
    if (!d)
        return 0;
    char **v = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, 0) != 0 ||
            !S_ISDIR(st.st_mode))
            continue;
        char **nv = realloc(v, (n + 1) * sizeof *v);
        if (!nv || !(nv[n] = strdup(e->d_name))) {
            v = nv ? nv : v;
            break;
        }
        v = nv;
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

static int feature_ambiguous(char **names, size_t n, struct zerg_err *err)
{
    char list[1024] = "";
    size_t o = 0;
    for (size_t i = 0; i < n && i < MAX_LISTED; i++)
        o += (size_t)snprintf(list + o, o < sizeof list ? sizeof list - o : 0,
                              "%s%s", i ? ", " : "", names[i]);
    if (n > MAX_LISTED && o < sizeof list)
        snprintf(list + o, sizeof list - o, ", ... (%zu in all)", n);
    return zerg_err_set(err, ZERG_EINVAL_INPUT,
                        "which feature? .gsd/specs/ holds %zu: %s; choose one "
                        "with --feature F, $ZERG_FEATURE or "
                        ".gsd/.current-feature",
                        n, list);
}

int zerg_cli_feature(struct zerg_cli *cli, char *out, size_t size,
                     struct zerg_err *err)
{
    char buf[CURRENT_FEATURE_MAX];
    const char *env = getenv("ZERG_FEATURE");
    if (cli->feature_opt)
        return feature_set(out, size, cli->feature_opt, "--feature", err);
    if (env && *env)
        return feature_set(out, size, env, "$ZERG_FEATURE", err);
    int rc = current_feature_file(cli, buf, sizeof buf, err);
    if (rc < 0)
        return ZERG_EINVAL_INPUT;
    if (rc > 0)
        return feature_set(out, size, buf, ".gsd/.current-feature", err);

    char **names = NULL;
    size_t n = spec_dirs(cli, &names);
    if (n == 1)
        rc = feature_set(out, size, names[0], ".gsd/specs/", err);
    else if (n > 1)
        rc = feature_ambiguous(names, n, err);
    else
        rc = zerg_err_set(err, ZERG_EINVAL_INPUT,
                          "no feature found in %s: create "
                          ".gsd/specs/FEATURE/task-graph.json, then run again "
                          "(or pass --feature F)",
                          cli->project);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* ---- help and "did you mean" ------------------------------------------- */

static void usage(FILE *out)
{
    fputs("usage: zerg [-C DIR] [--feature F] COMMAND [ARGS]\n"
          "\n"
          "Runs a feature's task graph on parallel workers (processes or\n"
          "containers), level by level, and keeps the run moving when\n"
          "things fail.\n"
          "\n"
          "Commands:\n",
          out);
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (commands[i].summary)
            fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "Global options (also accepted after COMMAND):\n"
          "  -C DIR         run as if started in DIR\n"
          "  --feature F    the feature to act on; default: $ZERG_FEATURE,\n"
          "                 then .gsd/.current-feature, then the only\n"
          "                 directory under .gsd/specs/\n"
          "  -h, --help     show this help ('zerg COMMAND --help' for one\n"
          "                 command)\n"
          "  -V, --version  print the version\n"
          "\n"
          "Exit codes: 0 ok; 1 the run ended with failed or blocked tasks,\n"
          "or a runtime failure; 2 usage, config, graph, policy or state\n"
          "error, or limits the workers do not fit (nothing was started or\n"
          "written); 3 another rush holds the feature's lock.\n",
          out);
}

/* The listed command closest to word: a prefix of it or within 2 edits. */
static const char *closest_command(const char *word)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (!commands[i].summary)
            continue;
        size_t dist = zerg_edit_distance(word, commands[i].name);
        if (*word && strncmp(commands[i].name, word, strlen(word)) == 0)
            dist = 1;
        if (dist < best_d) {
            best_d = dist;
            best = commands[i].name;
        }
    }
    return best;
}

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* ---- argument handling ------------------------------------------------- */

struct globals {
    const char *dir;     /* -C */
    const char *feature; /* --feature */
    int help, version;
};

/* Options before COMMAND.  Returns the index of COMMAND, or -1 on a usage
 * error (already reported). */
static int parse_leading(int argc, char **argv, struct globals *gl)
{
    static const struct option opts[] = {
        {"feature", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "+C:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'C':
            gl->dir = optarg;
            break;
        case 'f':
            gl->feature = optarg;
            break;
        case 'h':
            gl->help = 1;
            break;
        case 'V':
            gl->version = 1;
            break;
        default:
            fputs("Try 'zerg --help'.\n", stderr);
            return -1;
        }
    }
    return optind;
}

/* Takes -C DIR, -CDIR, --feature F and --feature=F out of a subcommand's
 * arguments (up to `--`), keeping the rest in order.  Returns the new argc,
 * or -1 when an option lacks its value. */
static int strip_globals(int argc, char **argv, struct globals *gl)
{
    int o = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            while (i < argc)
                argv[o++] = argv[i++];
            break;
        }
        const char **slot = NULL;
        const char *val = NULL;
        if (strcmp(a, "-C") == 0 || strcmp(a, "--feature") == 0) {
            if (i + 1 >= argc) {
                zerg_cli_error(NULL, "option '%s' needs a value", a);
                return -1;
            }
            slot = a[1] == 'C' ? &gl->dir : &gl->feature;
            val = argv[++i];
        } else if (strncmp(a, "-C", 2) == 0) {
            slot = &gl->dir;
            val = a + 2;
        } else if (strncmp(a, "--feature=", 10) == 0) {
            slot = &gl->feature;
            val = a + 10;
        }
        if (slot)
            *slot = val;
        else
            argv[o++] = argv[i];
    }
    argv[o] = NULL;
    return o;
}

static int enter_project(struct zerg_cli *cli, const char *dir)
{
    if (dir && chdir(dir) != 0) {
        zerg_cli_error(NULL, "cannot change to directory %s: %s", dir,
                       strerror(errno));
        return -1;
    }
    if (!getcwd(cli->project, sizeof cli->project)) {
        zerg_cli_error(NULL, "cannot read the current directory: %s",
                       strerror(errno));
        return -1;
    }
    return 0;
}

static int unknown_command(const char *name)
{
    const char *near = closest_command(name);
    if (near)
        zerg_cli_error(NULL, "unknown command '%s'; did you mean '%s'?", name,
                       near);
    else
        zerg_cli_error(NULL, "unknown command '%s'", name);
    fputs("Run 'zerg --help' for the list of commands.\n", stderr);
    return ZERG_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    struct zerg_cli cli = {.argv0 = argv[0]};
    struct globals gl = {0};
    const char *no_color = getenv("NO_COLOR");
    cli.color = isatty(STDOUT_FILENO) && !(no_color && *no_color);

    int at = parse_leading(argc, argv, &gl);
    if (at < 0)
        return ZERG_EXIT_USAGE;
    if (gl.version) {
        printf("zerg %s\n", ZERG_VERSION);
        return ZERG_EXIT_OK;
    }
    if (gl.help ||
        (at < argc && strcmp(argv[at], "help") == 0 && at + 1 == argc)) {
        usage(stdout);
        return ZERG_EXIT_OK;
    }
    if (at >= argc) {
        usage(stderr);
        return ZERG_EXIT_USAGE;
    }

    /* `zerg help CMD` is `zerg CMD --help`. */
    char *help_argv[] = {argv[at], "--help", NULL};
    if (strcmp(argv[at], "help") == 0) {
        help_argv[0] = argv[at + 1];
        argv = help_argv;
        argc = 2;
        at = 0;
    }
    const struct command *cmd = find_command(argv[at]);
    if (!cmd)
        return unknown_command(argv[at]);

    /* The subcommand sees "zerg CMD" as argv[0] so getopt's own messages
     * name it. */
    char name[32];
    snprintf(name, sizeof name, "zerg %s", cmd->name);
    char **sub = calloc((size_t)(argc - at) + 1, sizeof *sub);
    if (!sub)
        return ZERG_EXIT_FAIL;
    sub[0] = name;
    for (int i = at + 1; i < argc; i++)
        sub[i - at] = argv[i];
    int sub_argc = strip_globals(argc - at, sub, &gl);
    int rc = ZERG_EXIT_USAGE;
    if (sub_argc >= 0 && enter_project(&cli, gl.dir) == 0) {
        cli.feature_opt = gl.feature;
        optind = 0; /* glibc: fully re-initialise getopt for the command */
        rc = cmd->fn(&cli, sub_argc, sub);
    }
    free(sub);
    return rc;
}
