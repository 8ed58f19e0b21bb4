/* limits.c - what N workers need of the machine, checked before a rush.
 *
 * Each worker and the orchestrator hold one inotify instance, and the
 * kernel allows a user fs.inotify.max_user_instances of them (128 by
 * default), shared with every other program of that user.  Past it a
 * worker cannot start, and the rush used to go on quietly with fewer
 * workers than asked.  So the need is checked up front against what is
 * left, counted from /proc, and a rush that cannot have its workers says
 * so (exit 2) with the sysctl that fixes it.  The open-file limit is
 * raised to what the workers need when the hard limit allows. */
#include "cli/limits.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define INOTIFY_MAX_PATH "/proc/sys/fs/inotify/max_user_instances"
/* Descriptors the orchestrator may hold per worker (log, pipes, runtime
 * CLI children) and for itself. */
#define FDS_PER_WORKER 8
#define FDS_BASE 64

static long read_long(const char *path)
{
    FILE *f = fopen(path, "re");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

/* Inotify instances open in process pid (a /proc entry name). */
static long inotify_fds(const char *pid)
{
    char dir[300], link[PATH_MAX], target[64];
    snprintf(dir, sizeof dir, "/proc/%s/fd", pid);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' ||
            snprintf(link, sizeof link, "%s/%s", dir, e->d_name) < 0)
            continue;
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len > 0) {
            target[len] = '\0';
            n += strcmp(target, "anon_inode:inotify") == 0;
        }
    }
    closedir(d);
    return n;
}

/* Instances held by processes of our user (those we can see). */
static long inotify_in_use(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    long n = 0;
    uid_t me = getuid();
    struct dirent *e;
    struct stat st;
    char path[300];
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s", e->d_name);
        if (stat(path, &st) == 0 && st.st_uid == me)
            n += inotify_fds(e->d_name);
    }
    closedir(d);
    return n;
}

static int check_inotify(int workers, char *msg, size_t size)
{
    long max = read_long(INOTIFY_MAX_PATH);
    if (max < 0)
        return 0; /* not Linux /proc as we know it: let the rush find out */
    long used = inotify_in_use(), need = workers + 1;
    if (need <= max - used)
        return 0;
    snprintf(msg, size,
             "%d workers need %ld inotify instances (one each and one for "
             "the orchestrator), but this user may open %ld "
             "(fs.inotify.max_user_instances) and %ld %s in use: use "
             "--workers %ld or fewer, or raise the limit (sysctl "
             "fs.inotify.max_user_instances=%ld)",
             workers, need, max, used, used == 1 ? "is" : "are",
             max - used - 1 > 0 ? max - used - 1 : 0, used + need + 64);
    return -1;
}

static int check_nofile(int workers, char *msg, size_t size)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)FDS_BASE + (rlim_t)workers * FDS_PER_WORKER;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return 0;
    if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) {
        rl.rlim_cur = need;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            return 0;
    }
    snprintf(msg, size,
             "%d workers need about %lu open files, but the limit is %lu "
             "(hard %lu): use fewer workers or raise it (ulimit -n)",
             workers, (unsigned long)need, (unsigned long)rl.rlim_cur,
             (unsigned long)rl.rlim_max);
    return -1;
}

int zerg_cli_check_limits(int workers, char *msg, size_t size)
{
    if (check_inotify(workers, msg, size) < 0 ||
        check_nofile(workers, msg, size) < 0)
        return -1;
    return 0;
}
