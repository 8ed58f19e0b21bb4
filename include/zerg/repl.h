/* repl.h - `zerg lua`: a Lua session over a project's run data.
 *
 * The session is the policy sandbox (src/lua/vm.c) in REPL mode: globals
 * are writable, there is no instruction, time or memory budget, and Ctrl-C
 * stops the running chunk.  In scope: state, graph, config, heartbeats,
 * policies, feature and the helpers of lua/repl.lua (help() lists them).
 * Results print to opts.out; errors and their tracebacks to opts.err. */
#ifndef ZERG_REPL_H
#define ZERG_REPL_H

#include <stdio.h>

struct zerg_err;
struct zerg_config;

struct zerg_repl_opts {
    const char *project;           /* absolute project root */
    const char *feature;           /* NULL when none could be chosen */
    const struct zerg_config *cfg; /* the effective config (not NULL) */
    FILE *out, *err;               /* NULL: stdout, stderr */
};

struct zerg_repl;

/* Opens a session and loads the project's data; missing files leave their
 * global nil, unreadable ones also print a warning to opts.err.  A broken
 * policy override is reported there too and the bundled policy is shown.
 * NULL with err set only when the VM cannot be created. */
struct zerg_repl *zerg_repl_new(const struct zerg_repl_opts *o,
                                struct zerg_err *err);
void zerg_repl_free(struct zerg_repl *r); /* accepts NULL */

/* Runs code (an expression or statements; "=expr" is "return expr") and
 * prints what it returns.  0, or -1 after printing the error. */
int zerg_repl_run_string(struct zerg_repl *r, const char *code);

/* Runs a file (a leading "#!" line is skipped) with args as `...` and in
 * `arg` (arg[0] is the path); prints what it returns.  0 or -1. */
int zerg_repl_run_file(struct zerg_repl *r, const char *path, int argc,
                       char **argv);

/* The interactive loop: line editing and history (libedit) on a terminal,
 * plain lines otherwise, until end of input.  Returns 0, or -1 when input
 * was not a terminal and a chunk failed. */
int zerg_repl_interactive(struct zerg_repl *r);

#endif
