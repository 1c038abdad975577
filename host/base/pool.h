/*
 * pool.h - a fixed-size worker pool with a FIFO queue.
 *
 * Threads start on demand up to the limit, so an idle host keeps few.
 * The transport thread only parses and enqueues; handlers run here.
 */
#ifndef RLMCP_HOST_POOL_H
#define RLMCP_HOST_POOL_H

#include <stdbool.h>

struct pool;
typedef void (*pool_job_fn)(void *arg);

/* max_threads 0 means 8. NULL on failure. */
struct pool *pool_create(unsigned max_threads);

/* Queue a job. -1 once pool_stop() was called or on allocation failure. */
int pool_submit(struct pool *p, pool_job_fn fn, void *arg);

/* Refuse new jobs; queued ones still run. */
void pool_stop(struct pool *p);

/* Wait until no job is queued or running, up to ms. True when idle. */
bool pool_wait_idle(struct pool *p, unsigned ms);

/*
 * Stop, run what is queued and join every thread. Only call it when
 * pool_wait_idle() said idle or every job is known to end.
 */
void pool_destroy(struct pool *p);

#endif
