/* fsio.h - file I/O that never leaves a torn file behind.
 *
 * zerg_fsio_write_atomic is the only way zerg replaces a file: write a temp
 * file in the same directory, fsync it, rename it over the target, fsync the
 * directory.  On any failure the old file is untouched and the temp file is
 * removed.  The syscalls go through zerg_fsio_ops so tests can inject ENOSPC
 * or EIO at any step.
 *
 * Every file zerg opens goes through here too, because task code can plant
 * anything in the project: a FIFO would block a plain open(2) forever, a
 * device would stream without end, and a symbolic link under .zerg/ would
 * send zerg's writes out of the project.  So readers open non-blocking and
 * refuse what is not a regular file, zerg's own files are opened without
 * following links, and user inputs must resolve inside the project. */
#ifndef ZERG_FSIO_H
#define ZERG_FSIO_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

struct zerg_err;

struct zerg_fsio_ops {
    ssize_t (*write)(int fd, const void *buf, size_t len);
    int (*fsync)(int fd);
    int (*rename)(const char *from, const char *to);
    int (*syncfs)(int fd);
};
/* The ops in force; tests replace members and restore them after. */
extern struct zerg_fsio_ops zerg_fsio_ops;
extern const struct zerg_fsio_ops zerg_fsio_ops_default;

enum {
    ZERG_FSIO_DURABLE = 0, /* fsync file and directory (state, results) */
    ZERG_FSIO_NOSYNC = 1,  /* atomic but not durable (heartbeats) */
};

/* Atomically replaces path with data.  Returns 0 or -errno with err set
 * ("cannot write .zerg/state/f.json: No space left on device"). */
int zerg_fsio_write_atomic(const char *path, const void *data, size_t len,
                           int flags, struct zerg_err *err);

/* zerg_fsio_write_atomic(..., ZERG_FSIO_NOSYNC) of name in the directory
 * open at dfd, so a caller that keeps a checked directory open resolves
 * no path (and follows no link planted in it).  0 or -errno. */
int zerg_fsio_write_atomic_at(int dfd, const char *name, const void *data,
                              size_t len);

/* The same replacement of path, with data written to fd, a new empty
 * file of the caller's on the same filesystem, which then becomes path
 * too (a hard link, made under a temp name and renamed over path): the
 * file stays where the caller made it, and deleting path later frees no
 * inode.  Needs /proc; -errno (EXDEV: another filesystem) with err set,
 * path untouched, when it cannot, and the caller writes path the plain
 * way. */
int zerg_fsio_write_linked(int fd, const char *path, const void *data,
                           size_t len, int flags, struct zerg_err *err);

/* The same replacement for a file written piece by piece as it is
 * produced (a large document never held whole): open creates the temp
 * file beside path, write buffers (64 KiB) and writes, commit flushes,
 * syncs (unless ZERG_FSIO_NOSYNC), renames over path and syncs the
 * directory; abort removes the temp file.  A failed write is sticky and
 * reported by commit, which then leaves path untouched.  Each returns 0 or
 * -errno; after commit or abort the struct holds nothing. */
struct zerg_fsio_atomic {
    int fd, flags, rc;
    char *buf;
    size_t n;
    char path[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX];
};
int zerg_fsio_atomic_open(struct zerg_fsio_atomic *a, const char *path,
                          int flags);
int zerg_fsio_atomic_write(struct zerg_fsio_atomic *a, const void *data,
                           size_t len);
int zerg_fsio_atomic_commit(struct zerg_fsio_atomic *a, struct zerg_err *err);
void zerg_fsio_atomic_abort(struct zerg_fsio_atomic *a);

/* Makes everything written on the filesystem holding dir durable: one
 * syncfs(2), whose cost hardly grows with the number of files written
 * (on ext4 one journal commit, where an fsync per file commits once per
 * file).  0 or -errno (a writeback error since the last sync included). */
int zerg_fsio_sync_fs(const char *dir);

/* The same for n files of dir (each opened without following a link; one
 * already gone is skipped), then dir itself: fsync of each and of dir.
 * 0 or the first -errno. */
int zerg_fsio_sync_files(const char *dir, char *const *paths, size_t n);

/* Reads a whole file into a malloc'd NUL-terminated buffer (caller frees).
 * Files larger than max bytes fail with -EFBIG.  A missing file returns
 * -ENOENT (err set too).  Same as zerg_fsio_read_file(..., 0, ...): a FIFO,
 * socket, device or directory is refused without blocking. */
int zerg_fsio_read_all(const char *path, size_t max, char **data, size_t *len,
                       struct zerg_err *err);

/* Flags of zerg_fsio_open_read and zerg_fsio_read_file. */
enum {
    /* zerg's own file (under .zerg/): a symbolic link is refused. */
    ZERG_FSIO_NOFOLLOW = 1 << 0,
    /* Named by the user on the command line: a pipe such as <(cmd) is
     * what they meant, so any kind is read and the open may block. */
    ZERG_FSIO_ANY_KIND = 1 << 1,
};

/* "a FIFO", "a directory", "a symbolic link", ... for a st_mode. */
const char *zerg_fsio_kind(mode_t mode);

/* Opens path for reading, O_CLOEXEC and (unless ZERG_FSIO_ANY_KIND)
 * O_NONBLOCK, and checks with fstat that it is a regular file.  Returns
 * the fd (caller closes) or, with err set to "PATH is not a regular file
 * (a FIFO)" and the like: -errno from open, -EISDIR for a directory,
 * ZERG_ENOTREG for a FIFO, socket or device, ZERG_ESYMLINK for a link
 * refused under ZERG_FSIO_NOFOLLOW. */
int zerg_fsio_open_read(const char *path, int flags, struct zerg_err *err);

/* The last `max` bytes of the readable open file fd (its whole content
 * when smaller), malloc'd and NUL-terminated in *text.  0 or -errno. */
int zerg_fsio_read_end(int fd, size_t max, char **text, size_t *len);

/* The last `lines` lines of zerg's own file path (no link followed, at
 * most the last 64 KiB read) into buf, control bytes but newline and tab
 * shown as '?', cut to size.  0, or negative (buf "") when unreadable. */
int zerg_fsio_read_tail(const char *path, size_t lines, char *buf, size_t size);

/* zerg_fsio_read_all with flags (ZERG_FSIO_NOFOLLOW, ZERG_FSIO_ANY_KIND). */
int zerg_fsio_read_file(const char *path, size_t max, int flags, char **data,
                        size_t *len, struct zerg_err *err);

/* Opens zerg's own log file for appending, creating it 0644: never through
 * a symbolic link (ZERG_ESYMLINK), never a FIFO or device (ZERG_ENOTREG;
 * a FIFO without a reader does not block).  The fd (blocking, O_CLOEXEC)
 * or negative with err set. */
int zerg_fsio_open_append(const char *path, struct zerg_err *err);

/* The project a user input belongs to: path up to (not including) its last
 * ".zerg" or ".gsd" component, e.g. "/p/.zerg/config.yaml" -> "/p".
 * 0, -ENOENT when path has no such component, or -ENAMETOOLONG. */
int zerg_fsio_project_of(const char *path, char *root, size_t size);

/* Reads a user input (config, task graph, policy): like zerg_fsio_read_all,
 * and when path is in a project (zerg_fsio_project_of) the file opened,
 * symbolic links resolved, must lie inside that project: a link to
 * /etc/... is refused with ZERG_EOUTSIDE and err naming where it leads. */
int zerg_fsio_read_input(const char *path, size_t max, char **data, size_t *len,
                         struct zerg_err *err);
/* Opens a user input for reading with the checks of zerg_fsio_read_input
 * (a regular file, inside its project); the fd (caller closes) or
 * negative with err set. */
int zerg_fsio_open_input(const char *path, struct zerg_err *err);

/* mkdir -p; returns 0 or -errno. */
int zerg_fsio_mkdirs(const char *path, mode_t mode);

/* mkdir -p of root/rel where root is trusted (created like mkdirs) and no
 * component of rel may be a symbolic link (ZERG_ESYMLINK) or anything but
 * a directory (-ENOTDIR): zerg's own directories under .zerg/ never lead
 * out of the project.  rel must not hold "..".  0, or negative with err
 * set to "cannot create ROOT/REL: ROOT/logs is a symbolic link ...",
 * "...: ROOT/logs: Not a directory (it is a regular file) ..." or the real
 * errno ("cannot create ROOT/state: Read-only file system"). */
int zerg_fsio_mkdirs_under(const char *root, const char *rel, mode_t mode,
                           struct zerg_err *err);

/* The same for directories that only zerg makes (the task logs under
 * .zerg/logs/): a symbolic link in the way was planted by someone else,
 * so it is removed -- the link, never what it points to -- and a real
 * directory takes its place.  A file in the way is still an error. */
int zerg_fsio_mkdirs_own(const char *root, const char *rel, mode_t mode,
                         struct zerg_err *err);

/* rm -rf path: links are removed, never followed (nftw FTW_PHYS).  0 (also
 * when path is missing) or -errno. */
int zerg_fsio_remove_tree(const char *path);

/* snprintf into buf; returns 0 or -ENAMETOOLONG when it does not fit. */
int zerg_fsio_path(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Hard-links path to `backup` atomically (link to a temp name, rename);
 * used to keep the last good state beside the live one.  0 or -errno. */
int zerg_fsio_keep_copy(const char *path, const char *backup);

#endif
