/* text.h - small text helpers shared across modules: "did you mean"
 * suggestions and the last line of a command's output or a log. */
#ifndef ZERG_TEXT_H
#define ZERG_TEXT_H

#include <stddef.h>

#define ZERG_EDIT_MAX 64 /* longer strings are "far" (SIZE_MAX) */

/* Edit distance with adjacent transpositions ("dealy" is 1 from "delay");
 * SIZE_MAX when either string is ZERG_EDIT_MAX bytes or longer. */
size_t zerg_edit_distance(const char *a, const char *b);

/* The last non-empty line of text, trimmed of surrounding white space,
 * into buf ("" if none; text may be NULL). */
void zerg_last_line(const char *text, char *buf, size_t size);

#endif
