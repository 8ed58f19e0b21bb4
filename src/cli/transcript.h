/* transcript.h - an agent attempt's log as a transcript (transcript.c). */
#ifndef ZERG_CLI_TRANSCRIPT_H
#define ZERG_CLI_TRANSCRIPT_H

#include <stddef.h>

/* 1 when text holds a line of the agent's stream-json events. */
int zerg_transcript_has_events(const char *text, size_t len);
/* The transcript of a log's text: each event one short line (the agent's
 * text, a tool call and its key argument, a tool's result, the result
 * with turns, cost and tokens, the session and model), deltas left out,
 * plain lines kept.  malloc'd (*out_len bytes), NULL on out-of-memory. */
char *zerg_transcript(const char *text, size_t len, size_t *out_len);

#endif
