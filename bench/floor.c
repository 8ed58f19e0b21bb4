/* floor.c - the least a run of zerg's shape can cost on this machine, with
 * no orchestrator at all: the work DESIGN.md says each task leaves behind,
 * done by P processes that take tasks from a shared counter.  bench/floor.py
 * builds it and runs it beside zerg and xargs; the figures say how far a
 * target is from what the disk and git themselves allow.
 *
 *   floor spawn   DIR N P     `sh -c true` N times, P at once, level by level
 *   floor files   DIR N P     the same, each task leaving zerg's files
 *   floor merge   REPO N P    N one-file tasks committed and merged by git
 *   floor commit  REPO N P    the same without the reset to the new tip
 *   floor guarded REPO N P    merge with the two looks zerg's worker adds
 *
 * files: per task an assignment written beside the old one and renamed over
 * it, the task's log directory and log (a header before the command, its
 * output, a footer), its result record linked into a results directory and
 * that link read and removed (as the orchestrator does), and one syncfs of
 * the filesystem every 10 ms while tasks run (the batch window of DESIGN
 * section 16).  No event log, no state document, no heartbeats: the figure
 * is a floor, not a rival.
 *
 * merge: REPO holds a branch `main` and worktrees wt0..wt{P-1} made by the
 * caller.  Per task a worker resets its worktree to main (`git reset --hard
 * main`), runs `sh -c 'echo i > m{i}.txt'`, then `git add -A`, `git
 * write-tree`, `git commit-tree` and `git update-ref HEAD`, and passes the
 * commit to the parent, which squashes it onto main one at a time (`git
 * merge-tree --write-tree`, `git commit-tree -p <tip>`, and the swap of
 * main over one running `git update-ref --stdin`, as zerg's merge queue
 * does).  Five git processes a task in the worker and two in the merger,
 * the fewest that make a commit per task from the integrated tip and
 * merge it with git run as a program; commit drops the reset (each worker
 * builds on its own branch, the merge stays three-way).  guarded adds the
 * two git processes zerg's worker runs for its guarantees (DESIGN section
 * 18): `git status --porcelain` before the reset (is there work of an
 * earlier attempt to save?) and `git ls-files --others --ignored` after
 * the add (which ignored files did the task leave out?).
 *
 * Prints one line: the mode, N, P and the wall time in seconds; the merge
 * modes add the merged tasks per second from the first merge to the last,
 * the figure bench/worktree.py reads from zerg's merge_complete events. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LEVELS 4

extern char **environ;

struct shared {
    atomic_long next; /* the next task to take */
    atomic_int running;
};

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs argv with stdout on out_fd (-1: /dev/null) in cwd (NULL: here);
 * with buf, its stdout is read into buf (a line, newline dropped).
 * Returns the exit status. */
static int run(char *const argv[], const char *cwd, int out_fd, char *buf,
               size_t cap)
{
    int pfd[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (cwd)
        posix_spawn_file_actions_addchdir_np(&fa, cwd);
    if (buf) {
        if (pipe2(pfd, O_CLOEXEC) < 0)
            die("pipe");
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    } else if (out_fd >= 0) {
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
        posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
    } else {
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    }
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0)
        die(argv[0]);
    posix_spawn_file_actions_destroy(&fa);
    if (buf) {
        close(pfd[1]);
        size_t len = 0;
        ssize_t n;
        while (len + 1 < cap &&
               (n = read(pfd[0], buf + len, cap - 1 - len)) > 0)
            len += (size_t)n;
        close(pfd[0]);
        buf[len] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            die("waitpid");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void write_all(int fd, const char *text)
{
    size_t len = strlen(text);
    if (write(fd, text, len) != (ssize_t)len)
        die("write");
}

/* What zerg's worker and orchestrator write for task i of worker w. */
static void task_with_files(int dfd, long i, int w)
{
    char id[32], path[96], text[256];
    snprintf(id, sizeof id, "T-%05ld", i);
    snprintf(path, sizeof path, "workers/%d/assign.json.new", w);
    int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        die("assignment");
    snprintf(text, sizeof text,
             "{\"task\":\"%s\",\"attempt\":1,\"worker_id\":%d,"
             "\"command\":\"true\",\"run_id\":\"0123456789ab\"}\n",
             id, w);
    write_all(fd, text);
    close(fd);
    char final[96];
    snprintf(final, sizeof final, "workers/%d/assign.json", w);
    if (renameat(dfd, path, dfd, final) < 0)
        die("rename");
    snprintf(path, sizeof path, "tasks/%s", id);
    if (mkdirat(dfd, path, 0755) < 0)
        die("mkdir");
    snprintf(path, sizeof path, "tasks/%s/attempt-1.log", id);
    int log = openat(dfd, path,
                     O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (log < 0)
        die("log");
    snprintf(text, sizeof text, "==== command of task %s, attempt 1\n$ true\n",
             id);
    write_all(log, text);
    char *argv[] = {"sh", "-c", "true", NULL};
    int rc = run(argv, NULL, log, NULL, 0);
    snprintf(text, sizeof text, "==== command exited with code %d\n", rc);
    write_all(log, text);
    close(log);
    snprintf(path, sizeof path, "tasks/%s/attempt-1.result.json", id);
    fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        die("result");
    snprintf(text, sizeof text,
             "{\"task\":\"%s\",\"attempt\":1,\"worker_id\":%d,"
             "\"outcome\":\"complete\",\"exit_code\":%d}\n",
             id, w, rc);
    write_all(fd, text);
    close(fd);
    snprintf(final, sizeof final, "results/%s.json", id);
    if (linkat(dfd, path, dfd, final, 0) < 0)
        die("link");
    fd = openat(dfd, final, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, text, sizeof text) <= 0)
        die("read result");
    close(fd);
    if (unlinkat(dfd, final, 0) < 0)
        die("unlink");
}

static void dispatch_worker(struct shared *sh, int dfd, long end, int w,
                            int files)
{
    char *argv[] = {"sh", "-c", "true", NULL};
    long i;
    while ((i = atomic_fetch_add(&sh->next, 1)) < end) {
        if (files)
            task_with_files(dfd, i, w);
        else
            run(argv, NULL, -1, NULL, 0);
    }
}

/* Every 10 ms one syncfs while any worker runs. */
static pid_t start_syncer(struct shared *sh, int dfd)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    struct timespec tick = {0, 10 * 1000 * 1000};
    while (atomic_load(&sh->running)) {
        nanosleep(&tick, NULL);
        syncfs(dfd);
    }
    _exit(0);
}

static void wait_all(int n)
{
    for (int k = 0; k < n; k++) {
        int st;
        if (wait(&st) < 0)
            die("wait");
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "floor: a worker failed\n");
            exit(1);
        }
    }
}

static void dispatch(struct shared *sh, const char *dir, long n, int p,
                     int files)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        die(dir);
    if (files) {
        mkdirat(dfd, "tasks", 0755);
        mkdirat(dfd, "results", 0755);
        mkdirat(dfd, "workers", 0755);
        for (int w = 0; w < p; w++) {
            char path[64];
            snprintf(path, sizeof path, "workers/%d", w);
            mkdirat(dfd, path, 0755);
        }
    }
    atomic_store(&sh->running, 1);
    pid_t syncer = files ? start_syncer(sh, dfd) : -1;
    for (int level = 1; level <= LEVELS; level++) {
        long end = n * level / LEVELS;
        for (int w = 0; w < p; w++)
            if (fork() == 0) {
                dispatch_worker(sh, dfd, end, w, files);
                _exit(0);
            }
        wait_all(p);
        atomic_store(&sh->next, end);
    }
    atomic_store(&sh->running, 0);
    if (syncer > 0)
        waitpid(syncer, NULL, 0);
    close(dfd);
}

enum { COMMIT, MERGE, GUARDED }; /* the merge modes */

/* One task of a merge-mode worker: its commit's id in oid. */
static void commit_task(const char *wt, long i, int mode, char *oid)
{
    char cmd[64], tree[128];
    snprintf(cmd, sizeof cmd, "echo %ld > m%05ld.txt", i, i);
    char *st[] = {"git", "status", "--porcelain", "-z", "--untracked-files=all",
                  NULL};
    char *rst[] = {"git", "reset", "-q", "--hard", "main", NULL};
    char *task[] = {"sh", "-c", cmd, NULL};
    char *add[] = {"git", "add", "-A", NULL};
    char *ls[] = {
        "git",         "ls-files",           "-z", "--others", "--ignored",
        "--directory", "--exclude-standard", NULL};
    char *wtree[] = {"git", "write-tree", NULL};
    char *ct[] = {"git", "commit-tree", tree, "-p", "HEAD", "-m", "task", NULL};
    char *ur[] = {"git", "update-ref", "HEAD", oid, NULL};
    if (mode == GUARDED && run(st, wt, -1, NULL, 0) != 0)
        die("git status");
    if (mode != COMMIT && run(rst, wt, -1, NULL, 0) != 0)
        die("git reset");
    if (run(task, wt, -1, NULL, 0) != 0 || run(add, wt, -1, NULL, 0) != 0 ||
        (mode == GUARDED && run(ls, wt, -1, NULL, 0) != 0) ||
        run(wtree, wt, -1, tree, sizeof tree) != 0 ||
        run(ct, wt, -1, oid, 128) != 0 || run(ur, wt, -1, NULL, 0) != 0)
        die("task");
}

static void merge_worker(struct shared *sh, const char *repo, long n, int w,
                         int mode, int out)
{
    char wt[4096], oid[128], line[160];
    snprintf(wt, sizeof wt, "%s/wt%d", repo, w);
    long i;
    while ((i = atomic_fetch_add(&sh->next, 1)) < n) {
        commit_task(wt, i, mode, oid);
        snprintf(line, sizeof line, "%s\n", oid);
        write_all(out, line);
    }
}

/* A running `git update-ref --stdin` in repo: its stdin and stdout. */
struct refs {
    FILE *in, *out;
    pid_t pid;
};

static void refs_start(struct refs *r, const char *repo)
{
    int to[2], from[2];
    if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
        die("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, repo);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    char *argv[] = {"git", "update-ref", "--stdin", NULL};
    if (posix_spawnp(&r->pid, "git", &fa, NULL, argv, environ) != 0)
        die("git update-ref --stdin");
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]), close(from[1]);
    r->in = fdopen(to[1], "w"), r->out = fdopen(from[0], "r");
    if (!r->in || !r->out)
        die("fdopen");
}

/* One transaction moving main from old to new; each verb answers ok. */
static void refs_swap(struct refs *r, const char *new, const char *old)
{
    char line[256];
    fprintf(r->in, "start\nupdate refs/heads/main %s %s\nprepare\ncommit\n",
            new, old);
    fflush(r->in);
    for (int k = 0; k < 3; k++)
        if (!fgets(line, sizeof line, r->out) || !strstr(line, ": ok")) {
            fprintf(stderr, "floor: update-ref --stdin: %s\n", line);
            exit(1);
        }
}

static void refs_stop(struct refs *r)
{
    fclose(r->in), fclose(r->out);
    waitpid(r->pid, NULL, 0);
}

/* Squashes one commit onto main (DESIGN section 13: the merge queue's
 * commit has the tip as its one parent); the new tip in tip. */
static void merge_one(const char *repo, struct refs *r, const char *commit,
                      char *tip)
{
    char tree[128], merged[128];
    char *mt[] = {"git", "merge-tree",   "--write-tree",
                  tip,   (char *)commit, NULL};
    if (run(mt, repo, -1, tree, sizeof tree) != 0)
        die("merge-tree");
    char *ct[] = {"git", "commit-tree", tree, "-p", tip, "-m", "merge", NULL};
    if (run(ct, repo, -1, merged, sizeof merged) != 0)
        die("commit-tree");
    refs_swap(r, merged, tip);
    snprintf(tip, 128, "%s", merged);
}

/* Returns the merged tasks per second, first merge to last. */
static double merge(struct shared *sh, const char *repo, long n, int p,
                    int mode)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        die("pipe");
    char tip[128];
    char *rp[] = {"git", "rev-parse", "main", NULL};
    if (run(rp, repo, -1, tip, sizeof tip) != 0)
        die("rev-parse main");
    for (int w = 0; w < p; w++)
        if (fork() == 0) {
            close(pfd[0]);
            merge_worker(sh, repo, n, w, mode, pfd[1]);
            _exit(0);
        }
    close(pfd[1]);
    struct refs refs;
    refs_start(&refs, repo);
    FILE *in = fdopen(pfd[0], "r");
    char line[160];
    long merged = 0;
    double first = 0, last = 0;
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = '\0';
        merge_one(repo, &refs, line, tip);
        last = now();
        if (merged++ == 0)
            first = last;
    }
    fclose(in);
    refs_stop(&refs);
    wait_all(p);
    if (merged != n) {
        fprintf(stderr, "floor: %ld merges for %ld tasks\n", merged, n);
        exit(1);
    }
    return last > first ? (double)(n - 1) / (last - first) : 0.0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr,
                "usage: floor spawn|files|merge|commit|guarded DIR N P\n");
        return 2;
    }
    const char *mode = argv[1];
    long n = atol(argv[3]);
    int p = atoi(argv[4]);
    if (n < 1 || p < 1)
        return 2;
    struct shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        die("mmap");
    double t0 = now(), rate = -1;
    if (!strcmp(mode, "spawn") || !strcmp(mode, "files"))
        dispatch(sh, argv[2], n, p, !strcmp(mode, "files"));
    else if (!strcmp(mode, "commit"))
        rate = merge(sh, argv[2], n, p, COMMIT);
    else if (!strcmp(mode, "merge"))
        rate = merge(sh, argv[2], n, p, MERGE);
    else if (!strcmp(mode, "guarded"))
        rate = merge(sh, argv[2], n, p, GUARDED);
    else
        return 2;
    printf("%s %ld %d %.3f", mode, n, p, now() - t0);
    if (rate >= 0)
        printf(" %.1f", rate);
    printf("\n");
    return 0;
}
