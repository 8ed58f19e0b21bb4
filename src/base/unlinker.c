/* unlinker.c - files deleted off the caller's thread (see
 * zerg/unlinker.h).  A queue of paths under one mutex: the caller appends,
 * the thread takes the whole queue at once, unlinks and frees each path
 * outside the lock, and says when it is idle so that a drain can wait.
 * The thread touches nothing but the queue, unlink(2) and free(3). */
#include "zerg/unlinker.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

struct zerg_unlinker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    char **q;
    size_t n, cap;
    int busy, stop;
};

static void unlink_all(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unlink(paths[i]);
        free(paths[i]);
    }
}

static void *run(void *arg)
{
    struct zerg_unlinker *u = arg;
    char **batch = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&u->mu);
    for (;;) {
        while (u->n == 0 && !u->stop)
            pthread_cond_wait(&u->work, &u->mu);
        if (u->n == 0)
            break; /* stopping with nothing left */
        /* Swap the queue with the drained batch buffer: no copy. */
        char **take = u->q;
        size_t n = u->n, take_cap = u->cap;
        u->q = batch;
        u->cap = cap;
        u->n = 0;
        batch = take;
        cap = take_cap;
        u->busy = 1;
        pthread_mutex_unlock(&u->mu);
        unlink_all(batch, n);
        pthread_mutex_lock(&u->mu);
        u->busy = 0;
        if (u->n == 0)
            pthread_cond_broadcast(&u->idle);
    }
    pthread_mutex_unlock(&u->mu);
    free(batch);
    return NULL;
}

struct zerg_unlinker *zerg_unlinker_new(void)
{
    struct zerg_unlinker *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->work, NULL);
    pthread_cond_init(&u->idle, NULL);
    /* The thread starts with every signal blocked: the loop reads its
     * signals from a signalfd, and one delivered to this thread instead
     * would take its default action. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&u->thread, NULL, run, u);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&u->idle);
        pthread_cond_destroy(&u->work);
        pthread_mutex_destroy(&u->mu);
        free(u);
        return NULL;
    }
    return u;
}

void zerg_unlinker_add(struct zerg_unlinker *u, char *path)
{
    pthread_mutex_lock(&u->mu);
    if (u->n == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 64;
        char **q = realloc(u->q, cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&u->mu);
            unlink_all(&path, 1); /* out of memory: inline, not lost */
            return;
        }
        u->q = q;
        u->cap = cap;
    }
    u->q[u->n++] = path;
    pthread_cond_signal(&u->work);
    pthread_mutex_unlock(&u->mu);
}

void zerg_unlinker_drain(struct zerg_unlinker *u)
{
    if (!u)
        return;
    pthread_mutex_lock(&u->mu);
    while (u->n > 0 || u->busy)
        pthread_cond_wait(&u->idle, &u->mu);
    pthread_mutex_unlock(&u->mu);
}

void zerg_unlinker_free(struct zerg_unlinker *u)
{
    if (!u)
        return;
    pthread_mutex_lock(&u->mu);
    u->stop = 1;
    pthread_cond_signal(&u->work);
    pthread_mutex_unlock(&u->mu);
    pthread_join(u->thread, NULL); /* it empties the queue first */
    free(u->q);
    pthread_cond_destroy(&u->idle);
    pthread_cond_destroy(&u->work);
    pthread_mutex_destroy(&u->mu);
    free(u);
}
