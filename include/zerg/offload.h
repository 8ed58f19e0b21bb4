/* offload.h - the journal's disk work off the orchestrator's loop.
 *
 * Two kinds of work, done by one thread in the order they were queued:
 *
 *  - deletions.  The orchestrator deletes each applied result once a
 *    durable checkpoint holds it.  On ext4 an unlink of a file whose
 *    blocks were allocated (the batch sync allocates them) costs about
 *    57 us against 4 us for one never written back; done inline, those
 *    unlinks were a tenth of a 2,000-task rush's wall time, all of it on
 *    the loop's critical path.  Nothing depends on when a file goes: a
 *    result still on disk is the same result seen twice (fenced), and a
 *    crash before the unlink leaves one that --resume applies again,
 *    idempotently.
 *  - batch syncs (state.durability: batch).  One syncfs makes a batch of
 *    results durable; it waits for the disk, 1-2 ms on ext4, during which
 *    a loop that made it itself could neither apply results nor hand out
 *    tasks.  Here the loop asks for the sync and goes on; it learns that
 *    the sync is done (a ticket) when it next looks.  A batch counts as
 *    durable only then: nothing that needs it durable (a checkpoint that
 *    records its results) waits on less.
 *
 * The thread touches nothing but its queue, unlink(2), syncfs(2) and
 * free(3), keeps every signal blocked, and is never inside the allocator
 * when the process forks (the checkpoint's child allocates). */
#ifndef ZERG_OFFLOAD_H
#define ZERG_OFFLOAD_H

#include <stdint.h>

struct zerg_offload;

/* Called by the thread inside its free(3) guard; tests set it to hold the
 * thread there.  NULL normally. */
extern void (*zerg_offload_free_hook)(void);

/* Starts the thread; NULL when it cannot, and the caller does the work
 * inline. */
struct zerg_offload *zerg_offload_new(void);
/* Queues the deletion of path (malloc'd; the offload frees it).  Never
 * blocks on the disk; if the queue cannot grow, the file is deleted
 * here. */
void zerg_offload_unlink(struct zerg_offload *q, char *path);
/* Queues a syncfs of the filesystem that holds dir, after everything
 * queued before it; returns its ticket (> 0), or 0 when it could not be
 * queued (out of memory: the caller syncs inline). */
uint64_t zerg_offload_sync(struct zerg_offload *q, const char *dir);
/* 1 once the sync of ticket (and every one before it) is done, with the
 * outcome of the last sync done: *rc 0 or -errno, *cost_ns how long it
 * took; 0 while it is pending.  wait: block until it is done. */
int zerg_offload_synced(struct zerg_offload *q, uint64_t ticket, int wait,
                        int *rc, int64_t *cost_ns);
/* Returns once everything queued so far is done. */
void zerg_offload_drain(struct zerg_offload *q);
/* Drains, stops the thread and frees q (NULL is fine). */
void zerg_offload_free(struct zerg_offload *q);

#endif
