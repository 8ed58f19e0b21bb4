/* wiring.h - `zerg validate --check-wiring`: proves that what the core
 * calls, what the policies define and what the build compiles agree, so a
 * hook or a source file cannot be left behind unnoticed. */
#ifndef ZERG_WIRING_H
#define ZERG_WIRING_H

#include <stdio.h>

struct zerg_err;

/* Checks that
 *  - every hook a bundled policy defines is one the core calls
 *    (zerg_policy_hooks) and every hook the core calls is defined;
 *  - every bundled Lua file compiles;
 *  - every *.lua in override_dir (may be NULL or missing) is named after a
 *    policy, loads, and defines only that policy's hooks (a typo gets "did
 *    you mean");
 *  - every *.c under zerg_source_dir/src/ is in the build and every built
 *    file exists (skipped, saying so, when the source tree is absent, as
 *    for an installed binary).
 * Prints one line per problem to out, or "All modules properly wired".
 * Returns the number of problems, or a negative error with err set when
 * the check itself could not run. */
int zerg_wiring_check(const char *override_dir, FILE *out,
                      struct zerg_err *err);

/* The same against another source tree (NULL = zerg_source_dir). */
int zerg_wiring_check_tree(const char *override_dir, const char *source_dir,
                           FILE *out, struct zerg_err *err);

/* Only the bundled-policy checks, against another table of Lua sources
 * (src/lua/embedded.h, ending with a NULL name): how a test shows that a
 * policy file missing a hook the core calls is caught. */
struct zerg_embedded;
int zerg_wiring_check_bundled(const struct zerg_embedded *lua, FILE *out,
                              struct zerg_err *err);

#endif
