/* text.h - small text helpers shared across modules: "did you mean"
 * suggestions, the last line of a command's output or a log, and text
 * built piece by piece into a fixed buffer. */
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

/* Appends to buf at *off like snprintf, never past size (the text is cut,
 * still NUL-terminated); *off grows by what the whole text needed, so
 * *off >= size afterwards means it did not fit. */
void zerg_text_append(char *buf, size_t size, size_t *off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Copies src into dst (size bytes), cut at max bytes and never inside a
 * UTF-8 sequence: a cut name or reason stays valid UTF-8 (and JSON). */
void zerg_text_cut(char *dst, size_t size, const char *src, size_t max);

/* A life cycle table as Markdown, for the docs: "| corner | col... |", its
 * rule, then a row per state.  text(ctx, r, c, out, n) writes a cell: the
 * header of column c when r < 0, the label of row r when c < 0, else the
 * cell.  Returns like snprintf: what the whole table needed. */
typedef void zerg_table_text_fn(const void *ctx, int r, int c, char *out,
                                size_t n);
int zerg_text_table(char *buf, size_t size, const char *corner, int nrows,
                    int ncols, zerg_table_text_fn *text, const void *ctx);

/* Where the last `lines` lines of text[0..len) start (a final newline
 * does not count as a line of its own). */
size_t zerg_text_tail_start(const char *text, size_t len, size_t lines);

#endif
