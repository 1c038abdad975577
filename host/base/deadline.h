/*
 * deadline.h - how long one tools/call may take.
 *
 * A call's deadline starts when its request is read. Its length is the
 * tool's own timeout argument (the def's timeout_arg, else
 * `timeout_seconds` when its schema has it: execute_command,
 * wait_for_execution) plus DEADLINE_CLEANUP_MS when the call passes one,
 * else the tool's timeout from the deployment (tools.timeout_ms, tool def,
 * host default).
 * Every queueing, HTTP request, retry, backoff and clean-up of the call
 * fits inside it (docs/errors.md "Deadlines").
 */
#ifndef RLMCP_HOST_DEADLINE_H
#define RLMCP_HOST_DEADLINE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * What a call whose time comes from its timeout argument gets on top of
 * it: the argument is how long the work itself may run (a command gets
 * all of it), and stopping it, reading its state back and answering
 * happen after (docs/errors.md "Deadlines").
 */
#define DEADLINE_CLEANUP_MS 5000u

/* The call's time limit in ms: argument arg (seconds) of args_json plus
 * DEADLINE_CLEANUP_MS when it is a number from 1 on, else fallback_ms
 * (also when arg is NULL). Args carry the plugin's parameter names
 * (deployment aliases undone). */
uint32_t deadline_call_ms(uint32_t fallback_ms, const char *arg,
                          const char *args_json, size_t len);

/* The monotonic clock (CLOCK_MONOTONIC), the one every timer, deadline
 * and duration of the host reads: nanoseconds and milliseconds. */
uint64_t deadline_now_ns(void);
uint64_t deadline_now_ms(void);

/*
 * Wait on cond (mutex held, a CLOCK_MONOTONIC condvar) until signalled or
 * until deadline_now_ns() reaches until_ns: pthread_cond_timedwait's
 * result (0, ETIMEDOUT). The dispatcher's sleeps, timeouts and timers
 * wait here, so a test clock decides when their time has come.
 */
int deadline_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                       uint64_t until_ns);

/*
 * A clock a test controls: deadline_now_ns() returns now_ns(user), and
 * deadline_cond_wait calls wait(user, ...), which returns once cond is
 * signalled (0) or the clock reached until_ns (ETIMEDOUT). NULL: the
 * system's clock again. The struct must outlive its use; set it before
 * any thread reads the clock.
 */
struct deadline_clock {
    uint64_t (*now_ns)(void *user);
    int (*wait)(void *user, pthread_cond_t *cond, pthread_mutex_t *mutex,
                uint64_t until_ns);
    void *user;
};

void deadline_set_clock(const struct deadline_clock *clock);

/* The time ms from now on clock (CLOCK_MONOTONIC, CLOCK_REALTIME): where a
 * timed wait on that clock (pthread_cond_timedwait) ends. */
struct timespec deadline_after_ms(clockid_t clock, uint32_t ms);

#endif
