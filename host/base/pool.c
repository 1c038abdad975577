/*
 * pool.c - worker threads and a FIFO job queue.
 */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "deadline.h"
#include "log.h"

struct job {
    struct job *next;
    pool_job_fn fn;
    void *arg;
};

struct pool {
    pthread_mutex_t lock;
    pthread_cond_t work; /* a job was queued, or stop */
    pthread_cond_t idle; /* queue empty and nothing running */
    struct job *head;
    struct job *tail;
    pthread_t *threads;
    unsigned max_threads;
    unsigned n_threads;
    unsigned n_idle;    /* threads waiting for work */
    unsigned n_queued;  /* jobs not yet picked up */
    unsigned n_running; /* jobs being run */
    bool stopping;
};

static void *worker_main(void *arg)
{
    struct pool *p = arg;
    struct job *j = NULL;

    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->head == NULL && !p->stopping) {
            p->n_idle++;
            pthread_cond_wait(&p->work, &p->lock);
            p->n_idle--;
        }
        if (p->head == NULL)
            break; /* stopping and nothing left */
        j = p->head;
        p->head = j->next;
        if (p->head == NULL)
            p->tail = NULL;
        p->n_queued--;
        p->n_running++;
        pthread_mutex_unlock(&p->lock);

        j->fn(j->arg);
        free(j);

        pthread_mutex_lock(&p->lock);
        p->n_running--;
        if (p->n_running == 0 && p->head == NULL)
            pthread_cond_broadcast(&p->idle);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

struct pool *pool_create(unsigned max_threads)
{
    struct pool *p = calloc(1, sizeof(*p));
    pthread_condattr_t attr;

    if (p == NULL)
        return NULL;
    p->max_threads = max_threads != 0 ? max_threads : 8;
    p->threads = calloc(p->max_threads, sizeof(*p->threads));
    if (p->threads == NULL) {
        free(p);
        return NULL;
    }
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->idle, &attr);
    pthread_condattr_destroy(&attr);
    return p;
}

/*
 * Start one more thread unless an idle one is left for this job (idle
 * threads that were signalled but did not run yet count as taken).
 * Called locked.
 */
static void maybe_grow(struct pool *p)
{
    pthread_attr_t attr;
    int rc;

    if (p->n_queued < p->n_idle || p->n_threads >= p->max_threads)
        return;
    pthread_attr_init(&attr);
    /* Handlers are plain C; 1 MiB of stack keeps idle RSS and VSZ small. */
    pthread_attr_setstacksize(&attr, 1024 * 1024);
    rc = pthread_create(&p->threads[p->n_threads], &attr, worker_main, p);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        log_msg(RLMCP_LOG_WARNING, NULL,
                "worker pool: cannot start thread %u (error %d); %u keep "
                "serving",
                p->n_threads + 1, rc, p->n_threads);
        return;
    }
    p->n_threads++;
}

int pool_submit(struct pool *p, pool_job_fn fn, void *arg)
{
    struct job *j = malloc(sizeof(*j));
    int rc = -1;

    if (j == NULL)
        return -1;
    j->next = NULL;
    j->fn = fn;
    j->arg = arg;
    pthread_mutex_lock(&p->lock);
    if (p->stopping)
        goto out;
    maybe_grow(p);
    if (p->n_threads == 0)
        goto out; /* not even one thread could start */
    if (p->tail != NULL)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    p->n_queued++;
    j = NULL;
    pthread_cond_signal(&p->work);
    rc = 0;
out:
    pthread_mutex_unlock(&p->lock);
    free(j);
    return rc;
}

void pool_stop(struct pool *p)
{
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
}

bool pool_wait_idle(struct pool *p, unsigned ms)
{
    struct timespec until = deadline_after_ms(CLOCK_MONOTONIC, ms);
    bool idle;

    pthread_mutex_lock(&p->lock);
    while (p->n_running > 0 || p->head != NULL) {
        if (pthread_cond_timedwait(&p->idle, &p->lock, &until) == ETIMEDOUT)
            break;
    }
    idle = p->n_running == 0 && p->head == NULL;
    pthread_mutex_unlock(&p->lock);
    return idle;
}

void pool_destroy(struct pool *p)
{
    unsigned i;

    if (p == NULL)
        return;
    pool_stop(p);
    for (i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->idle);
    free(p->threads);
    free(p);
}
