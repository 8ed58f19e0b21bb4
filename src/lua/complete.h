/* complete.h - what Tab offers in `zerg lua`, and the "did you mean" of an
 * unknown global (private to src/lua/; the REPL's public face is
 * zerg_repl_complete in include/zerg/repl.h).
 *
 * Both walk the session's tables with raw access only, so neither can run
 * user code (see complete.c). */
#ifndef ZERG_LUA_COMPLETE_H
#define ZERG_LUA_COMPLETE_H

#include <stddef.h>

struct zerg_vm;

/* Offset in line of the word completion replaces: the trailing run of
 * letters, digits, '_', '.' and ':' ("policies.retry.de", ":fo"). */
size_t zerg_complete_word_start(const char *line);

/* The completions of the word ending line, each the whole word completed,
 * sorted, without duplicates: out[0..max) get malloc'd strings the caller
 * free()s.  Returns their count, or a negative errno. */
int zerg_complete(struct zerg_vm *vm, const char *line, char **out, size_t max);

/* The global closest to name (within two edits, or one name starts with
 * it) into buf.  0, or -1 when there is none. */
int zerg_complete_suggest(struct zerg_vm *vm, const char *name, char *buf,
                          size_t size);

#endif
