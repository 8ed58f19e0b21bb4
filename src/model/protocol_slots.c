/* protocol_slots.c - the slot directories assignments go to, kept open
 * (protocol_internal.h).
 *
 * The orchestrator writes an assignment per task into
 * .zerg/state/{feature}/slot-{n}/.  Making and checking that directory
 * each time (mkdir, stat, two opens, mkdirat, two closes) cost seven
 * calls more than the write itself, on graphs of thousands of tasks that
 * take a millisecond each.  So it is made and checked once per worker
 * incarnation - the first assignment of a new epoch, written at the
 * spawn - and kept open; an assignment is then openat + write + close +
 * the replace on that descriptor (zerg_fsio_write_atomic_at).
 *
 * Nothing is resolved through the name slot-{n} between those checks, so
 * a link planted there meanwhile is never followed: the assignments go
 * on into the directory that was checked.  One that was removed fails
 * the openat with ENOENT and is made again at once.  The check at the
 * next epoch sees the name no longer holds that directory and goes
 * through zerg_fsio_mkdirs_under again, which refuses the link.
 *
 * One table for the process, for one run directory (the last one written
 * to; another one closes the table first).  Its only writer is the
 * orchestrator's loop, a single thread. */
#include "protocol_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/protocol.h"

/* Slots past this are written without a kept descriptor (the table would
 * grow past what any pool uses). */
#define KEPT_SLOTS_MAX 4096

struct kept {
    int fd;         /* -1: not open */
    uint64_t epoch; /* the incarnation it was last checked for */
    dev_t dev;
    ino_t ino;
};

static struct {
    char dir[PATH_MAX];
    struct kept *v;
    int n;
} kept;

static void forget_all(void)
{
    for (int i = 0; i < kept.n; i++)
        if (kept.v[i].fd >= 0)
            close(kept.v[i].fd);
    free(kept.v);
    kept.v = NULL;
    kept.n = 0;
    kept.dir[0] = '\0';
}

/* The table row of (dir, slot), or NULL when it cannot have one. */
static struct kept *row(const char *dir, int slot)
{
    if (slot < 0 || slot >= KEPT_SLOTS_MAX)
        return NULL;
    if (strcmp(kept.dir, dir) != 0) {
        forget_all();
        if (zerg_fsio_path(kept.dir, sizeof kept.dir, "%s", dir) < 0) {
            kept.dir[0] = '\0';
            return NULL;
        }
    }
    if (slot >= kept.n) {
        int n = kept.n ? kept.n : 8;
        while (n <= slot)
            n *= 2;
        struct kept *v = realloc(kept.v, (size_t)n * sizeof *v);
        if (!v)
            return NULL;
        for (int i = kept.n; i < n; i++)
            v[i] = (struct kept){.fd = -1};
        kept.v = v;
        kept.n = n;
    }
    return &kept.v[slot];
}

static void forget(struct kept *k)
{
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
}

/* Makes dir/slot-{slot} (refusing a link in the way) and opens it
 * without following one: the fd, or negative with err set. */
static int slot_open(const char *dir, int slot, struct kept *k,
                     struct zerg_err *err)
{
    char rel[32], path[PATH_MAX];
    struct stat st;
    snprintf(rel, sizeof rel, "slot-%d", slot);
    int rc = zerg_fsio_mkdirs_under(dir, rel, 0755, err);
    if (rc < 0)
        return rc;
    rc = zerg_proto_slot_dir(path, sizeof path, dir, slot);
    if (rc < 0)
        return zerg_err_set(err, rc, "cannot open %s/%s: %s", dir, rel,
                            zerg_strerror(rc));
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        rc = -errno;
        if (fd >= 0)
            close(fd);
        return zerg_err_set(err, rc, "cannot open %s: %s", path,
                            zerg_strerror(rc));
    }
    if (k) {
        k->fd = fd;
        k->dev = st.st_dev;
        k->ino = st.st_ino;
    }
    return fd;
}

/* 1 while the name slot-{slot} still holds the kept directory. */
static int still_there(const char *dir, int slot, const struct kept *k)
{
    char path[PATH_MAX];
    struct stat st;
    return zerg_proto_slot_dir(path, sizeof path, dir, slot) == 0 &&
           lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_dev == k->dev && st.st_ino == k->ino;
}

/* The directory to write into: the kept one (checked again for a new
 * epoch), else opened now.  k NULL: opened for this write only. */
static int slot_fd(const char *dir, int slot, uint64_t epoch, struct kept *k,
                   struct zerg_err *err)
{
    if (!k)
        return slot_open(dir, slot, NULL, err);
    if (k->fd >= 0 && k->epoch != epoch && !still_there(dir, slot, k))
        forget(k);
    if (k->fd < 0) {
        int rc = slot_open(dir, slot, k, err);
        if (rc < 0)
            return rc;
    }
    k->epoch = epoch;
    return k->fd;
}

/* The atomic replace of dfd/assign.json, without fsync (a lost
 * assignment costs nothing: the next one replaces it). */
static int replace_at(int dfd, const char *text, size_t len)
{
    return zerg_fsio_write_atomic_at(dfd, "assign.json", text, len);
}

static int write_text(const char *dir, int slot, uint64_t epoch,
                      const char *path, const char *text, size_t len,
                      struct zerg_err *err)
{
    struct kept *k = row(dir, slot);
    int dfd = slot_fd(dir, slot, epoch, k, err);
    if (dfd < 0)
        return dfd;
    int rc = replace_at(dfd, text, len);
    if (rc == -ENOENT && k) {
        /* The directory was removed under us: made again, once. */
        forget(k);
        dfd = slot_fd(dir, slot, epoch, k, err);
        if (dfd < 0)
            return dfd;
        rc = replace_at(dfd, text, len);
    }
    if (!k)
        close(dfd);
    if (rc < 0)
        return zerg_err_set(err, rc, "cannot write %s: %s", path,
                            zerg_strerror(rc));
    return 0;
}

int proto_slot_write_assign(const char *dir, int slot, uint64_t epoch,
                            const char *path, zerg_json *doc, int build_rc,
                            struct zerg_err *err)
{
    char *text;
    size_t len = 0;
    int rc = proto_encode(path, doc, build_rc, &text, &len, err);
    if (rc == 0)
        rc = write_text(dir, slot, epoch, path, text, len, err);
    free(text);
    return rc;
}
