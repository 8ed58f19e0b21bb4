/* text.h - small text helpers shared by the CLI, the config loader and the
 * policy loader: "did you mean" suggestions. */
#ifndef ZERG_TEXT_H
#define ZERG_TEXT_H

#include <stddef.h>

#define ZERG_EDIT_MAX 64 /* longer strings are "far" (SIZE_MAX) */

/* Edit distance with adjacent transpositions ("dealy" is 1 from "delay");
 * SIZE_MAX when either string is ZERG_EDIT_MAX bytes or longer. */
size_t zerg_edit_distance(const char *a, const char *b);

#endif
