/* testutil.h - helpers shared by the cmocka unit tests: temp dirs, file
 * helpers, and the includes cmocka needs in the right order. */
#ifndef ZERG_TESTUTIL_H
#define ZERG_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Creates a fresh temp directory (removed by tu_rmtree); returns a static
 * buffer valid until the next call. */
const char *tu_mkdtemp(void);
void tu_rmtree(const char *path);

/* Writes text to dir/rel (creating parent directories); aborts the test on
 * failure. */
void tu_write(const char *dir, const char *rel, const char *text);

/* Reads a whole file (caller frees) or NULL if missing. */
char *tu_read(const char *path);

/* Number of entries in a directory (0 if missing), excluding . and .. */
int tu_count_entries(const char *dir);

/* 1 if haystack contains needle; on failure prints both. */
int tu_contains(const char *haystack, const char *needle);

/* Fails unless the doc (relative to the source tree) holds `want` between
 * "<!-- begin NAME table -->\n" and "<!-- end NAME table -->"; with
 * ZERG_UPDATE_DOCS=1 in the environment it rewrites that part instead. */
void tu_check_doc_table(const char *doc, const char *name, const char *want);

#endif
