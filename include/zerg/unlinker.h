/* unlinker.h - files deleted off the caller's thread.
 *
 * The orchestrator deletes each applied result once a durable checkpoint
 * holds it.  On ext4 an unlink of a file whose blocks were allocated (the
 * batch sync allocates them) costs about 57 us against 4 us for one never
 * written back; done inline, those unlinks were a tenth of a 2,000-task
 * rush's wall time, all of it on the loop's critical path.  The unlinker
 * is one thread that takes paths and unlinks them; the caller only
 * queues.  Nothing depends on when a file goes: a result still on disk is
 * the same result seen twice (fenced), and a crash before the unlink
 * leaves one that --resume applies again, idempotently. */
#ifndef ZERG_UNLINKER_H
#define ZERG_UNLINKER_H

struct zerg_unlinker;

/* Starts the thread (every signal blocked in it); NULL when it cannot,
 * and the caller unlinks inline. */
struct zerg_unlinker *zerg_unlinker_new(void);
/* Queues path (malloc'd; the unlinker frees it).  Never blocks on the
 * disk; if the queue cannot grow, the file is unlinked here. */
void zerg_unlinker_add(struct zerg_unlinker *u, char *path);
/* Returns once every path queued so far is unlinked. */
void zerg_unlinker_drain(struct zerg_unlinker *u);
/* Drains, stops the thread and frees u (NULL is fine). */
void zerg_unlinker_free(struct zerg_unlinker *u);

#endif
