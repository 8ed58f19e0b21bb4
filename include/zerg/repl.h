/* repl.h - `zerg lua`: a Lua session over a project's run data.
 *
 * The session is the policy sandbox (src/lua/vm.c) in REPL mode: globals
 * are writable, there is no instruction, time or memory budget, and Ctrl-C
 * stops the running chunk.  In scope: state, graph, config, heartbeats,
 * policies, feature and the helpers of lua/repl.lua (help() lists them).
 * Results print to opts.out; errors and their tracebacks to opts.err.
 * Tab completes globals, fields and policy hooks; an unknown global's
 * error says which name was probably meant. */
#ifndef ZERG_REPL_H
#define ZERG_REPL_H

#include <stddef.h>
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

/* Keys one completion looks at, at most, however big the tables are. */
#define ZERG_REPL_COMPLETE_SCAN 4096

/* The completions of the word that ends line (the text before the
 * cursor): a global ("tas" -> "task", "tasks"), a field after "name." or
 * a function after "name:" (nested "a.b.c" too, through __index tables;
 * `("x"):` gives the string methods), and under "policies.NAME." the
 * hooks the core calls.  Each is the whole word completed
 * ("policies.retry.decide"), sorted, without duplicates.  Only raw reads:
 * no __index function or other metamethod runs.  Fills out[0..max) with
 * malloc'd strings the caller free()s; returns their count, or a negative
 * errno. */
int zerg_repl_complete(struct zerg_repl *r, const char *line, char **out,
                       size_t max);

/* The interactive loop: line editing and history (libedit) on a terminal,
 * plain lines otherwise, until end of input.  Returns 0, or -1 when input
 * was not a terminal and a chunk failed. */
int zerg_repl_interactive(struct zerg_repl *r);

#endif
