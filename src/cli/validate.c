/* validate.c - `zerg validate`: everything a rush would check before it
 * starts, without starting: the config, the task graph and the policy
 * overrides, and the executor pre-flight (preflight.h).  Prints a summary
 * a person can check the plan against, or the first error as "zerg
 * validate: <file>: <what>" (exit 2).  Writes nothing. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "preflight.h"
#include "zerg/clock.h"
#include "zerg/graph.h"
#include "zerg/json.h"
#include "zerg/policy.h"
#include "zerg/wiring.h"

#define MAX_NOTES 200 /* same-level orderings listed */

static const char usage[] =
    "usage: zerg validate [--feature F] [--check-wiring] [--json]\n"
    "\n"
    "Checks .zerg/config.yaml, the feature's task graph\n"
    "(.gsd/specs/F/task-graph.json) and the policy overrides in\n"
    ".zerg/policies/, then prints the plan: tasks per level in run order,\n"
    "dependencies, serialized same-file tasks, the critical path, and any\n"
    "warnings.  When a task has no `command`, checks that the executor\n"
    "answers `--version` where the workers run (inside the image in\n"
    "container mode).  Writes nothing.\n"
    "\n"
    "Options:\n"
    "  --check-wiring  also check that every policy hook the core calls is\n"
    "                  defined and every source file is built in\n"
    "  --json          print the summary as one JSON object\n"
    "  --feature F     the feature (default: see 'zerg --help')\n"
    "  -C DIR          run as if started in DIR\n"
    "  -h, --help      show this help\n"
    "\n"
    "Exit codes: 0 valid; 1 the executor pre-flight failed or\n"
    "--check-wiring found problems; 2 the config,\n"
    "graph or a policy override is invalid (the first line says which file\n"
    "and what).\n";

struct strs {
    char **v;
    size_t n;
};

struct check {
    char feature[ZERG_ID_MAX + 1];
    char graph_path[PATH_MAX];
    char policy_dir[PATH_MAX];
    struct zerg_config cfg;
    int have_cfg;
    struct zerg_graph *g;
    struct strs config_warnings;
    struct strs notes;     /* same-level orderings */
    struct strs overrides; /* the *.lua in .zerg/policies */
    int wiring_problems;
    int json, wiring;
    struct zerg_preflight pf;
};

static int strs_push(struct strs *l, const char *s)
{
    char **v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    l->v = v;
    if (!(v[l->n] = strdup(s)))
        return -ENOMEM;
    l->n++;
    return 0;
}

static void strs_free(struct strs *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static void collect_warning(void *ud, const char *msg)
{
    strs_push(ud, msg);
}

/* ---- the checks --------------------------------------------------------- */

static int load_config(const struct zerg_cli *cli, struct check *c,
                       struct zerg_err *err)
{
    char path[PATH_MAX];
    if (zerg_cli_path(cli, path, sizeof path, ".zerg/config.yaml"))
        return zerg_err_set(err, -ENAMETOOLONG, "path too long");
    zerg_config_defaults(&c->cfg);
    c->have_cfg = 1;
    return zerg_config_load(&c->cfg, path, collect_warning, &c->config_warnings,
                            err);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_overrides(struct check *c)
{
    DIR *d = opendir(c->policy_dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] != '.' && n > 4 &&
            strcmp(e->d_name + n - 4, ".lua") == 0)
            strs_push(&c->overrides, e->d_name);
    }
    if (d)
        closedir(d);
    if (c->overrides.n)
        qsort(c->overrides.v, c->overrides.n, sizeof *c->overrides.v, cmp_str);
}

/* Loading the policies is the check: a broken override fails here exactly
 * as it would fail a rush. */
static int load_policies(struct check *c, struct zerg_err *err)
{
    struct zerg_policy *p = zerg_policy_new(c->policy_dir, &c->cfg, NULL, err);
    if (!p)
        return err->code ? err->code : ZERG_EPOLICY;
    zerg_policy_free(p);
    list_overrides(c);
    return 0;
}

static void collect_notes(struct check *c)
{
    const struct zerg_graph *g = c->g;
    size_t n = 0;
    for (size_t i = 0; i < g->ntasks; i++) {
        const struct zerg_task *t = &g->tasks[i];
        for (size_t d = 0; d < t->deps.n; d++) {
            const struct zerg_task *dep = &g->tasks[t->dep_idx[d]];
            if (dep->level != t->level || n++ >= MAX_NOTES)
                continue;
            char line[256];
            snprintf(line, sizeof line,
                     "level %d: %s runs after %s "
                     "(same-level dependency)",
                     t->level, t->id, dep->id);
            strs_push(&c->notes, line);
        }
    }
    if (n > MAX_NOTES) {
        char line[96];
        snprintf(line, sizeof line,
                 "... and %zu more same-level "
                 "dependencies",
                 n - MAX_NOTES);
        strs_push(&c->notes, line);
    }
}

/* Returns an exit code; prints the error line itself. */
static int run_checks(const struct zerg_cli *cli, struct check *c)
{
    struct zerg_err err = {0};
    if (zerg_cli_feature((struct zerg_cli *)cli, c->feature, sizeof c->feature,
                         &err) ||
        zerg_cli_path(cli, c->graph_path, sizeof c->graph_path,
                      ".gsd/specs/%s/task-graph.json", c->feature) ||
        zerg_cli_path(cli, c->policy_dir, sizeof c->policy_dir,
                      ".zerg/policies") ||
        load_config(cli, c, &err) ||
        zerg_cli_graph(cli, c->feature, &c->g, &err) ||
        load_policies(c, &err)) {
        zerg_cli_error("validate", "%s",
                       err.msg[0] ? err.msg : "the project path is too long");
        if (c->json)
            printf("{\"ok\":false}\n");
        return ZERG_EXIT_USAGE;
    }
    collect_notes(c);
    if (c->g->feature[0] && strcmp(c->g->feature, c->feature) != 0) {
        char line[256];
        snprintf(line, sizeof line,
                 "the graph says feature \"%.64s\" but "
                 "lives in .gsd/specs/%s/; zerg uses %s",
                 c->g->feature, c->feature, c->feature);
        strs_push(&c->notes, line);
    }
    return ZERG_EXIT_OK;
}

/* The executor pre-flight, for workers.mode.  ZERG_EXIT_FAIL when it
 * failed (the summary still prints, with the reason). */
static int check_preflight(const struct zerg_cli *cli, struct check *c)
{
    if (zerg_preflight_run(cli->project, &c->cfg, c->g, c->cfg.workers_mode,
                           NULL, &c->pf) < 0) {
        zerg_cli_error("validate", "pre-flight: out of memory");
        return ZERG_EXIT_FAIL;
    }
    if (c->pf.ok)
        return ZERG_EXIT_OK;
    zerg_cli_error("validate", "pre-flight failed: %s", c->pf.error);
    return ZERG_EXIT_FAIL;
}

static int check_wiring(struct check *c, FILE *out)
{
    struct zerg_err err = {0};
    int n = zerg_wiring_check(c->policy_dir, out, &err);
    if (n < 0) {
        zerg_cli_error("validate", "wiring check failed: %s", err.msg);
        return ZERG_EXIT_USAGE;
    }
    c->wiring_problems = n;
    return n ? ZERG_EXIT_FAIL : ZERG_EXIT_OK;
}

/* ---- output ------------------------------------------------------------- */

static void print_list(FILE *out, const char *title, const struct strs *l)
{
    if (!l->n)
        return;
    fprintf(out, "%s:\n", title);
    for (size_t i = 0; i < l->n; i++)
        fprintf(out, "  %s\n", l->v[i]);
}

static void print_executor(FILE *out, const struct zerg_preflight *pf)
{
    if (!pf->agent_tasks)
        fputs("Executor: not needed (every task has a command)\n", out);
    else if (pf->ok)
        fprintf(out, "Executor: %s (%s) answers %s: %s\n", pf->exe, pf->exe_key,
                pf->where, pf->version);
    else
        fprintf(out, "Executor: FAILED: %s\n", pf->error);
}

/* Where the gates run: in a container in container mode (DESIGN §19)
 * unless gates.on_host, else on the host. */
static const char *gates_where(const struct zerg_config *cfg)
{
    return cfg->workers_mode == ZERG_MODE_CONTAINER && !cfg->gates_on_host
               ? "in a container of the workers' image"
               : "on the host";
}

/* The quality gates of the config, one line each. */
static void print_gates(FILE *out, const struct zerg_config *cfg)
{
    if (!cfg->ngates)
        return;
    fprintf(out, "Gates (after each level, under worktree isolation, %s):\n",
            gates_where(cfg));
    for (size_t i = 0; i < cfg->ngates; i++) {
        const struct zerg_gate *g = &cfg->gates[i];
        fprintf(out, "  %-16s %s, %g s: %s\n", g->name,
                g->required ? "required" : "optional",
                zerg_ns_to_s(g->timeout_ns), g->command);
    }
    fputc('\n', out);
}

static zerg_json *json_gates(const struct zerg_config *cfg)
{
    zerg_json *a = zerg_json_arr();
    for (size_t i = 0; a && i < cfg->ngates; i++) {
        const struct zerg_gate *g = &cfg->gates[i];
        zerg_json *o = zerg_json_obj();
        if (!o || zerg_json_set_str(o, "name", g->name) ||
            zerg_json_set_str(o, "command", g->command) ||
            zerg_json_set_bool(o, "required", g->required) ||
            zerg_json_set_num(o, "timeout_seconds",
                              zerg_ns_to_s(g->timeout_ns)) ||
            zerg_json_set_str(o, "where", gates_where(cfg)) ||
            zerg_json_push(a, o)) {
            zerg_json_free(a);
            return NULL;
        }
    }
    return a;
}

static void print_text(FILE *out, const struct zerg_cli *cli,
                       const struct check *c)
{
    const struct zerg_graph *g = c->g;
    fprintf(out, "Feature:  %s\n", c->feature);
    fprintf(out, "Graph:    %s\n", c->graph_path);
    fprintf(out, "Tasks:    %zu in %d level%s\n", g->ntasks, g->nlevels,
            g->nlevels == 1 ? "" : "s");
    fprintf(out, "Policies: ");
    if (!c->overrides.n)
        fputs("bundled (no overrides)", out);
    for (size_t i = 0; i < c->overrides.n; i++)
        fprintf(out, "%s.zerg/policies/%s",
                i ? ", " : "overrides: ", c->overrides.v[i]);
    fputs("\n\n", out);
    zerg_cli_print_plan(out, g, c->cfg.workers_max_concurrent, cli->color);
    struct strs gw = {g->warnings.v, g->warnings.n};
    fputc('\n', out);
    print_gates(out, &c->cfg);
    print_list(out, "Ordering", &c->notes);
    print_list(out, "Warnings", &gw);
    print_list(out, "Config warnings", &c->config_warnings);
    struct strs pw = {c->pf.warnings, c->pf.nwarnings};
    print_list(out, "Pre-flight warnings", &pw);
    print_executor(out, &c->pf);
    if (!c->pf.ok)
        fprintf(out,
                "%s is valid, but the executor pre-flight failed "
                "(above).\n",
                c->feature);
    else if (c->wiring_problems)
        fprintf(out,
                "%s is valid, but the wiring check found %d "
                "problem%s (above).\n",
                c->feature, c->wiring_problems,
                c->wiring_problems == 1 ? "" : "s");
    else
        fprintf(out, "OK: %s is valid (%zu task%s, %d level%s).\n", c->feature,
                g->ntasks, g->ntasks == 1 ? "" : "s", g->nlevels,
                g->nlevels == 1 ? "" : "s");
}

static zerg_json *json_strs(const struct strs *l)
{
    zerg_json *a = zerg_json_arr();
    for (size_t i = 0; a && i < l->n; i++)
        if (zerg_json_push(a, zerg_json_str(l->v[i]))) {
            zerg_json_free(a);
            return NULL;
        }
    return a;
}

static zerg_json *json_ids(const struct zerg_graph *g, const size_t *idx,
                           size_t n)
{
    zerg_json *a = zerg_json_arr();
    for (size_t i = 0; a && i < n; i++)
        if (zerg_json_push(a, zerg_json_str(g->tasks[idx[i]].id))) {
            zerg_json_free(a);
            return NULL;
        }
    return a;
}

static zerg_json *json_levels(const struct zerg_graph *g, int workers)
{
    zerg_json *a = zerg_json_arr();
    for (int lv = 1; a && lv <= g->nlevels; lv++) {
        const struct zerg_level *L = &g->levels[lv];
        size_t par = L->n < (size_t)workers ? L->n : (size_t)workers;
        zerg_json *o = zerg_json_obj();
        if (!o || zerg_json_set_num(o, "level", lv) ||
            zerg_json_set(o, "tasks", json_ids(g, L->tasks, L->n)) ||
            zerg_json_set_num(o, "parallelism", (double)par) ||
            zerg_json_push(a, o)) {
            zerg_json_free(a);
            return NULL;
        }
    }
    return a;
}

static zerg_json *json_critical(const struct zerg_graph *g)
{
    zerg_json *cp = zerg_json_obj();
    if (!cp ||
        zerg_json_set(cp, "tasks",
                      json_ids(g, g->critical_path, g->ncritical)) ||
        zerg_json_set_num(cp, "minutes", g->critical_minutes)) {
        zerg_json_free(cp);
        return NULL;
    }
    return cp;
}

static zerg_json *json_preflight(const struct zerg_preflight *pf)
{
    struct strs pw = {pf->warnings, pf->nwarnings};
    zerg_json *o = zerg_json_obj();
    if (!o || zerg_json_set_bool(o, "ok", pf->ok) ||
        zerg_json_set_num(o, "agent_tasks", (double)pf->agent_tasks) ||
        (pf->exe ? zerg_json_set_str(o, "executor", pf->exe)
                 : zerg_json_set_null(o, "executor")) ||
        zerg_json_set_str(o, "version", pf->version) ||
        zerg_json_set_str(o, "error", pf->error) ||
        zerg_json_set(o, "warnings", json_strs(&pw))) {
        zerg_json_free(o);
        return NULL;
    }
    return o;
}

static int print_json(FILE *out, const struct check *c)
{
    const struct zerg_graph *g = c->g;
    struct strs gw = {g->warnings.v, g->warnings.n};
    struct zerg_err err = {0};
    char *text = NULL;
    /* Each set takes its value, also on failure: nothing to free here. */
    zerg_json *o = zerg_json_obj();
    if (!o ||
        zerg_json_set_bool(o, "ok", c->wiring_problems == 0 && c->pf.ok) ||
        zerg_json_set_str(o, "feature", c->feature) ||
        zerg_json_set_str(o, "graph", c->graph_path) ||
        zerg_json_set_num(o, "tasks", (double)g->ntasks) ||
        zerg_json_set(o, "levels",
                      json_levels(g, c->cfg.workers_max_concurrent)) ||
        zerg_json_set(o, "critical_path", json_critical(g)) ||
        zerg_json_set(o, "gates", json_gates(&c->cfg)) ||
        zerg_json_set(o, "ordering", json_strs(&c->notes)) ||
        zerg_json_set(o, "warnings", json_strs(&gw)) ||
        zerg_json_set(o, "config_warnings", json_strs(&c->config_warnings)) ||
        zerg_json_set(o, "policy_overrides", json_strs(&c->overrides)) ||
        zerg_json_set(o, "preflight", json_preflight(&c->pf)) ||
        (c->wiring &&
         zerg_json_set_num(o, "wiring_problems", c->wiring_problems)))
        goto cleanup;
    text = zerg_json_encode(o, NULL, &err);
cleanup:
    zerg_json_free(o);
    if (!text) {
        zerg_cli_error("validate", "cannot encode the summary: %s",
                       err.msg[0] ? err.msg : "out of memory");
        return ZERG_EXIT_FAIL;
    }
    fprintf(out, "%s\n", text);
    free(text);
    return ZERG_EXIT_OK;
}

/* ---- the command -------------------------------------------------------- */

static int parse(int argc, char **argv, struct check *c)
{
    static const struct option opts[] = {
        {"check-wiring", no_argument, NULL, 'w'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'w':
            c->wiring = 1;
            break;
        case 'j':
            c->json = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return ZERG_EXIT_OK;
        default:
            return zerg_cli_usage_error("validate", NULL);
        }
    }
    if (optind < argc)
        return zerg_cli_usage_error("validate", "unexpected argument '%s'",
                                    argv[optind]);
    return -1;
}

int zerg_cmd_validate(struct zerg_cli *cli, int argc, char **argv)
{
    struct check c = {0};
    int rc = parse(argc, argv, &c);
    if (rc >= 0)
        return rc;
    rc = run_checks(cli, &c);
    int prc = rc == ZERG_EXIT_OK ? check_preflight(cli, &c) : ZERG_EXIT_OK;
    /* The wiring report goes to stderr under --json so stdout stays one
     * JSON object. */
    int wrc = rc == ZERG_EXIT_OK && c.wiring
                  ? check_wiring(&c, c.json ? stderr : stdout)
                  : ZERG_EXIT_OK;
    if (rc == ZERG_EXIT_OK && wrc != ZERG_EXIT_USAGE) {
        rc = c.json ? print_json(stdout, &c)
                    : (print_text(stdout, cli, &c), ZERG_EXIT_OK);
        if (rc == ZERG_EXIT_OK)
            rc = wrc != ZERG_EXIT_OK ? wrc : prc;
    } else if (rc == ZERG_EXIT_OK) {
        rc = wrc;
    }
    strs_free(&c.config_warnings);
    strs_free(&c.notes);
    strs_free(&c.overrides);
    zerg_preflight_close(&c.pf);
    zerg_graph_free(c.g);
    if (c.have_cfg)
        zerg_config_free(&c.cfg);
    return rc;
}
