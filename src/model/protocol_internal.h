/* protocol_internal.h - what protocol.c shares with protocol_slots.c: the
 * encoding of a file's document, the slot directories assignments are
 * written into, kept open, and the path lists of a result
 * (protocol_paths.c). */
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

/* A path list into o as key (array) and key_total; nothing when empty.
 * 0 or -1 (out of memory).  Read back whole or not at all: 0, or -1 for
 * a list that is not one (too long, not strings, a total below it). */
struct zerg_path_list;
int proto_paths_put(zerg_json *o, const char *key,
                    const struct zerg_path_list *l);
int proto_paths_get(const zerg_json *o, const char *key,
                    struct zerg_path_list *l);

#endif
