/* orch_save.c - the state checkpoint, written by a child process.
 *
 * At 100,000 tasks the state document is some 29 MB: encoding it, writing
 * it and its backup and the fsync took 400 ms and more, during which the
 * loop applied no result and handed out no task (at a level transition,
 * every worker sat idle that long).  With opts.offload_io (the rush) the
 * loop forks instead and the child writes the document from its
 * copy-on-write image of the state, as it was at the fork, then exits;
 * the loop goes on meanwhile, and reaps the child on its SIGCHLD.
 *
 * What the save promises stays as it was:
 * - the results a checkpoint records are durable before it is written:
 *   the child syncs the batch not yet synced first, as orch_sync_results
 *   does on the loop (a syncfs waits for all the filesystem's dirty data:
 *   tens of ms on a busy disk, which the loop no longer waits for);
 * - an applied result is deleted only once a durable checkpoint holds it:
 *   the child records the first save_unlinks of pending_unlink, and only
 *   those are deleted when it succeeds;
 * - the state is clean only if nothing changed since the fork (dirty_gen);
 * - a level_start is said once the checkpoint holding the transition is
 *   durable: it waits in announce for the child that writes it;
 * - the last checkpoint (ORCH_SAVE_WAIT: the end of the run) is written
 *   by the loop itself, after the child in flight, if any, ended.
 * The child holds the state lock as the orchestrator does (the lock is
 * its open file, shared across fork), so no other rush can take the
 * feature while it writes.  It touches nothing but the state files and
 * leaves with _exit: no log line, no stdio buffer flushed twice. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orch_internal.h"
#include "zerg/clock.h"
#include "zerg/err.h"
#include "zerg/fsio.h"

/* In the child: the batch of results not yet durable (as the loop's own
 * sync does it: one syncfs, else an fsync of each file), the document,
 * then out with its outcome (an errno).  How long the document took goes
 * to the loop through fd, for the checkpoint's spacing (20x its cost):
 * the same measure as a save on the loop, without the sync (a syncfs
 * waits for the whole disk) or the fork and the wait for the reap. */
static void save_child(struct zerg_orch *o, int sync, int fd)
{
    struct zerg_err err = {0};
    int rc = 0;
    if (sync && (rc = zerg_fsio_sync_fs(o->run_dir)) < 0)
        rc = zerg_fsio_sync_files(o->run_dir, o->pending_unlink + o->nsynced,
                                  o->nunlink - o->nsynced);
    int64_t t0 = zerg_clock_mono(o->o.clock);
    if (rc == 0)
        rc = zerg_state_save(o->s, o->g, o->state_path, &err);
    int64_t cost = zerg_clock_mono(o->o.clock) - t0;
    ssize_t sent = write(fd, &cost, sizeof cost);
    (void)sent; /* if not, the loop counts the whole child */
    _exit(rc < 0 ? (-rc & 0x7f ? -rc & 0x7f : EIO) : 0);
}

/* A sanitizer's allocator (AddressSanitizer's) takes no locks around a
 * fork: a child forked while another thread is inside it, at any point of
 * its own bookkeeping, waits for that lock for ever (seen in make check:
 * a rush that never ended, its checkpoint child stuck in malloc).
 * glibc's malloc takes all its locks around fork, so the release build
 * forks safely; the sanitizer build forks only while the loop's thread is
 * the only one (no offload thread), and otherwise saves on the loop, as
 * when a fork fails. */
#if defined(__SANITIZE_ADDRESS__)
#define FORK_SAFE_ALLOCATOR 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FORK_SAFE_ALLOCATOR 0
#endif
#endif
#ifndef FORK_SAFE_ALLOCATOR
#define FORK_SAFE_ALLOCATOR 1
#endif

int orch_save_start(struct zerg_orch *o, int64_t now)
{
    if (!FORK_SAFE_ALLOCATOR && o->offload)
        return -ENOTSUP; /* another thread: the caller saves on the loop */
    int sync = o->cfg->state_durability != ZERG_DURABILITY_FULL &&
               o->nsynced < o->nunlink;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
        return -errno;
    o->save_gen = o->dirty_gen;
    o->save_unlinks = o->nunlink;
    int64_t t0 = zerg_clock_mono(o->o.clock);
    pid_t pid = fork();
    if (pid == 0)
        save_child(o, sync, fds[1]);
    int rc = pid < 0 ? -errno : 0;
    close(fds[1]);
    if (rc < 0) {
        close(fds[0]);
        return rc; /* the caller saves on the loop */
    }
    o->save_pid = pid;
    o->save_fd = fds[0];
    o->save_t0_ns = t0;
    o->save_again = 0;
    o->last_save_mono_ns = now;
    return 0;
}

void orch_save_announced(struct zerg_orch *o, uint64_t gen)
{
    size_t keep = 0;
    for (size_t i = 0; i < o->nannounce; i++) {
        if (o->announce[i].gen <= gen)
            orch_level_log(o, "level_start", o->announce[i].level);
        else
            o->announce[keep++] = o->announce[i];
    }
    o->nannounce = keep;
}

static void save_ended(struct zerg_orch *o, int status)
{
    int64_t cost;
    if (read(o->save_fd, &cost, sizeof cost) != sizeof cost || cost < 0)
        cost = zerg_clock_mono(o->o.clock) - o->save_t0_ns;
    close(o->save_fd);
    o->save_pid = 0;
    o->save_cost_ns = cost;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        /* The old file is intact; the results stay on disk (they are
         * the journal) until a later checkpoint records them. */
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
        zerg_log_event(o->o.log, ZERG_LOG_ORCH, ZERG_LOG_ERROR,
                       "state_write_failed", NULL, NULL,
                       "Cannot write state: %s (will retry)",
                       WIFEXITED(status) ? strerror(code)
                                         : "the writing process was killed");
        o->dirty = 1;
        return;
    }
    if (o->dirty_gen == o->save_gen)
        o->dirty = 0;
    orch_flush_unlinks(o, o->save_unlinks);
    orch_save_announced(o, o->save_gen);
}

void orch_save_reap(struct zerg_orch *o, int wait)
{
    int status;
    if (!o->save_pid)
        return;
    pid_t r;
    do
        r = waitpid(o->save_pid, &status, wait ? 0 : WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == o->save_pid)
        save_ended(o, status);
    else if (r < 0) /* not ours any more: nothing is known to be saved */
        save_ended(o, W_EXITCODE(ECHILD, 0));
}

void orch_save_announce(struct zerg_orch *o, int lvl)
{
    if (!o->save_pid) { /* the checkpoint was written here, and is done */
        orch_level_log(o, "level_start", lvl);
        return;
    }
    struct orch_announce *a =
        realloc(o->announce, (o->nannounce + 1) * sizeof *a);
    if (!a) { /* said early rather than never */
        orch_level_log(o, "level_start", lvl);
        return;
    }
    o->announce = a;
    /* The child in flight holds it if it started after the change. */
    a[o->nannounce].level = lvl;
    a[o->nannounce].gen = o->dirty_gen;
    o->nannounce++;
    if (o->save_gen < o->dirty_gen)
        o->save_again = 1;
}

void orch_save_close(struct zerg_orch *o)
{
    orch_save_reap(o, 1);
    free(o->announce); /* never durable: not said */
    o->announce = NULL;
}
