/* lua.c - `zerg lua [-e CODE | FILE [ARGS...]]`: a Lua session over the
 * feature's state, graph, config, heartbeats and policies (zerg/repl.h).
 *
 * With -e or FILE it runs non-interactively, prints what the code returns
 * and exits 1 on an error (message and traceback on stderr); otherwise it
 * is a REPL.  A project with no feature (or no run yet) still gets a
 * session: state and graph are nil, config and policies are there. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/repl.h"

static const char usage[] =
    "usage: zerg lua [--feature F] [-e CODE | FILE [ARGS...]]\n"
    "\n"
    "Opens a Lua 5.4 session with the feature's run data in scope:\n"
    "  state       the state document (nil before the first run)\n"
    "  graph       the task graph\n"
    "  config      the effective configuration (durations in seconds)\n"
    "  heartbeats  the workers' heartbeats, by worker id\n"
    "  policies    the policy modules in force, overrides included\n"
    "and helpers: tasks([status]), task(id), levels(), history(id),\n"
    "inspect(v), help().  An expression prints its value.\n"
    "\n"
    "  -e, --execute CODE  run CODE, print what it returns, exit\n"
    "  FILE [ARGS...]      run a Lua file (ARGS as ... and arg[1..])\n"
    "  -h, --help          show this help\n"
    "\n"
    "The session is sandboxed like the policies (no io, os, debug);\n"
    "Ctrl-C stops the running chunk, Ctrl-D leaves.\n"
    "\n"
    "Exit codes: 0 ok; 1 the code raised an error; 2 usage or config\n"
    "error.\n";

/* Parses the options; returns -1 to go on, or an exit code. */
static int parse(int argc, char **argv, const char **code)
{
    static const struct option opts[] = {
        {"execute", required_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    /* "+": stop at FILE so the script's own options reach the script */
    while ((c = getopt_long(argc, argv, "+e:h", opts, NULL)) != -1) {
        switch (c) {
        case 'e':
            *code = optarg;
            break;
        case 'h':
            fputs(usage, stdout);
            return ZERG_EXIT_OK;
        default:
            return zerg_cli_usage_error("lua", NULL);
        }
    }
    if (*code && optind < argc)
        return zerg_cli_usage_error("lua", "give -e CODE or FILE, not both");
    return -1;
}

int zerg_cmd_lua(struct zerg_cli *cli, int argc, char **argv)
{
    const char *code = NULL;
    int rc = parse(argc, argv, &code);
    if (rc >= 0)
        return rc;
    int interactive = !code && optind >= argc;

    struct zerg_err err = {0};
    char feature[128];
    const char *feat = feature;
    if (zerg_cli_feature(cli, feature, sizeof feature, &err) != 0) {
        if (cli->feature_opt) { /* asked for explicitly: must be valid */
            zerg_cli_error("lua", "%s", err.msg);
            return ZERG_EXIT_USAGE;
        }
        if (interactive)
            fprintf(stderr, "zerg lua: state and graph are nil: %s\n", err.msg);
        feat = NULL;
    }
    struct zerg_config cfg;
    zerg_config_defaults(&cfg);
    if (zerg_cli_config(cli, &cfg, &err) != 0) {
        zerg_cli_error("lua", "%s", err.msg);
        zerg_config_free(&cfg);
        return ZERG_EXIT_USAGE;
    }
    struct zerg_repl_opts o = {
        .project = cli->project, .feature = feat, .cfg = &cfg};
    struct zerg_repl *r = zerg_repl_new(&o, &err);
    if (!r) {
        zerg_cli_error("lua", "%s", err.msg);
        zerg_config_free(&cfg);
        return ZERG_EXIT_FAIL;
    }
    if (code)
        rc = zerg_repl_run_string(r, code);
    else if (!interactive)
        rc = zerg_repl_run_file(r, argv[optind], argc - optind - 1,
                                argv + optind + 1);
    else
        rc = zerg_repl_interactive(r);
    zerg_repl_free(r);
    zerg_config_free(&cfg);
    return rc == 0 ? ZERG_EXIT_OK : ZERG_EXIT_FAIL;
}
