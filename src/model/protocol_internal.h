/* protocol_internal.h - what protocol.c shares with protocol_slots.c: the
 * encoding of a file's document, and the slot directories assignments are
 * written into, kept open. */
#ifndef ZERG_PROTOCOL_INTERNAL_H
#define ZERG_PROTOCOL_INTERNAL_H

#include <stdint.h>

#include "zerg/json.h"

struct zerg_err;

/* The text of doc (freed here; build_rc < 0: building it ran out of
 * memory), malloc'd in *text; 0, or negative with err set and *text
 * NULL.  path names the file in the messages. */
int proto_encode(const char *path, zerg_json *doc, int build_rc, char **text,
                 size_t *len, struct zerg_err *err);

/* Encodes doc (freed here; build_rc < 0: building it ran out of memory)
 * and atomically replaces dir/slot-{slot}/assign.json with it, without
 * fsync.  The directory is made and checked (never a link) the first
 * time, and again for each new epoch (a new worker incarnation); between
 * those it is written through a descriptor kept open.  0 or negative
 * with err set; path names the file in the messages. */
int proto_slot_write_assign(const char *dir, int slot, uint64_t epoch,
                            const char *path, zerg_json *doc, int build_rc,
                            struct zerg_err *err);

#endif
