/* offload.c - the journal's disk work off the caller's thread (see
 * zerg/offload.h).  A queue of jobs under one mutex: the caller appends,
 * the thread takes the whole queue at once and does each job outside the
 * lock, in order; a sync job records its ticket and outcome when done,
 * and the thread says when it is idle so that a drain can wait.
 *
 * The orchestrator forks while the thread runs (its checkpoint child,
 * orch_save.c), and the child allocates.  A fork copies the locks the
 * thread holds at that instant, held and with no owner left to free them:
 * the thread's one allocator call, free(3), is made under fork_mu, which
 * a pthread_atfork handler takes around every fork, so the child never
 * starts while the thread is inside the allocator (an allocator without
 * fork handlers of its own, as a sanitizer's, would otherwise deadlock the
 * child).  free(3) is quick: a fork waits microseconds, never for a
 * syncfs. */
#include "zerg/offload.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zerg/fsio.h"

/* One job: delete path (ticket 0), or sync the filesystem of the
 * directory path (its ticket). */
struct job {
    char *path;
    uint64_t ticket;
};

struct zerg_offload {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, idle, synced;
    struct job *q;
    size_t n, cap;
    int busy, stop;
    uint64_t next_ticket, done_ticket; /* sync tickets given, done */
    int done_rc;
    int64_t done_cost_ns;
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static pthread_mutex_t fork_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
    pthread_mutex_lock(&fork_mu);
}

static void fork_after(void)
{
    pthread_mutex_unlock(&fork_mu);
}

static void fork_guard_install(void)
{
    pthread_atfork(fork_prepare, fork_after, fork_after);
}

void (*zerg_offload_free_hook)(void);

/* free(3) on the thread: never while a fork copies the process. */
static void thread_free(void *p)
{
    pthread_mutex_lock(&fork_mu);
    if (zerg_offload_free_hook)
        zerg_offload_free_hook();
    free(p);
    pthread_mutex_unlock(&fork_mu);
}

/* Runs a sync job and publishes its outcome. */
static void do_sync(struct zerg_offload *q, const struct job *j)
{
    int64_t t0 = mono_ns();
    int rc = zerg_fsio_sync_fs(j->path);
    int64_t cost = mono_ns() - t0;
    pthread_mutex_lock(&q->mu);
    q->done_ticket = j->ticket;
    q->done_rc = rc;
    q->done_cost_ns = cost;
    pthread_cond_broadcast(&q->synced);
    pthread_mutex_unlock(&q->mu);
}

static void run_jobs(struct zerg_offload *q, struct job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].ticket)
            do_sync(q, &jobs[i]);
        else
            unlink(jobs[i].path);
        thread_free(jobs[i].path);
    }
}

static void *run(void *arg)
{
    struct zerg_offload *q = arg;
    struct job *batch = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->n == 0 && !q->stop)
            pthread_cond_wait(&q->work, &q->mu);
        if (q->n == 0)
            break; /* stopping with nothing left */
        /* Swap the queue with the drained batch buffer: no copy. */
        struct job *take = q->q;
        size_t n = q->n, take_cap = q->cap;
        q->q = batch;
        q->cap = cap;
        q->n = 0;
        batch = take;
        cap = take_cap;
        q->busy = 1;
        pthread_mutex_unlock(&q->mu);
        run_jobs(q, batch, n);
        pthread_mutex_lock(&q->mu);
        q->busy = 0;
        if (q->n == 0)
            pthread_cond_broadcast(&q->idle);
    }
    pthread_mutex_unlock(&q->mu);
    thread_free(batch);
    return NULL;
}

static void destroy(struct zerg_offload *q)
{
    pthread_cond_destroy(&q->synced);
    pthread_cond_destroy(&q->idle);
    pthread_cond_destroy(&q->work);
    pthread_mutex_destroy(&q->mu);
    free(q->q);
    free(q);
}

struct zerg_offload *zerg_offload_new(void)
{
    if (pthread_once(&fork_once, fork_guard_install) != 0)
        return NULL;
    struct zerg_offload *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work, NULL);
    pthread_cond_init(&q->idle, NULL);
    pthread_cond_init(&q->synced, NULL);
    /* The thread starts with every signal blocked: the loop reads its
     * signals from a signalfd, and one delivered to this thread instead
     * would take its default action. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&q->thread, NULL, run, q);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        destroy(q);
        return NULL;
    }
    return q;
}

/* Appends a job (q->mu held); 0, or -ENOMEM when the queue cannot grow. */
static int push(struct zerg_offload *q, char *path, uint64_t ticket)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64;
        struct job *jobs = realloc(q->q, cap * sizeof *jobs);
        if (!jobs)
            return -ENOMEM;
        q->q = jobs;
        q->cap = cap;
    }
    q->q[q->n++] = (struct job){.path = path, .ticket = ticket};
    pthread_cond_signal(&q->work);
    return 0;
}

void zerg_offload_unlink(struct zerg_offload *q, char *path)
{
    pthread_mutex_lock(&q->mu);
    int rc = push(q, path, 0);
    pthread_mutex_unlock(&q->mu);
    if (rc < 0) { /* out of memory: inline, not lost */
        unlink(path);
        free(path);
    }
}

uint64_t zerg_offload_sync(struct zerg_offload *q, const char *dir)
{
    char *copy = strdup(dir);
    if (!copy)
        return 0;
    pthread_mutex_lock(&q->mu);
    uint64_t ticket = q->next_ticket + 1;
    int rc = push(q, copy, ticket);
    if (rc == 0)
        q->next_ticket = ticket;
    pthread_mutex_unlock(&q->mu);
    if (rc < 0) {
        free(copy);
        return 0;
    }
    return ticket;
}

int zerg_offload_synced(struct zerg_offload *q, uint64_t ticket, int wait,
                        int *rc, int64_t *cost_ns)
{
    pthread_mutex_lock(&q->mu);
    while (wait && q->done_ticket < ticket)
        pthread_cond_wait(&q->synced, &q->mu);
    int done = q->done_ticket >= ticket;
    if (done) {
        *rc = q->done_rc;
        *cost_ns = q->done_cost_ns;
    }
    pthread_mutex_unlock(&q->mu);
    return done;
}

void zerg_offload_drain(struct zerg_offload *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    while (q->n > 0 || q->busy)
        pthread_cond_wait(&q->idle, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

void zerg_offload_free(struct zerg_offload *q)
{
    if (!q)
        return;
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL); /* it empties the queue first */
    destroy(q);
}
