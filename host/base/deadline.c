/*
 * deadline.c - a call's time limit from its arguments, and the end of a
 * timed wait (see deadline.h).
 */
#include "deadline.h"

#include <stdatomic.h>

#include <cjson/cJSON.h>

/* Far beyond any tool's maximum, and it keeps the ms value in 32 bits. */
#define MAX_TIMEOUT_S (7 * 24 * 3600.0)

uint32_t deadline_call_ms(uint32_t fallback_ms, const char *arg,
                          const char *args_json, size_t len)
{
    cJSON *args = NULL;
    const cJSON *t = NULL;
    uint32_t ms = fallback_ms;

    if (arg == NULL || args_json == NULL || len == 0)
        return fallback_ms;
    args = cJSON_ParseWithLength(args_json, len);
    t = cJSON_GetObjectItemCaseSensitive(args, arg);
    /* The argument is the work's own time; its clean-up comes after. */
    if (cJSON_IsNumber(t) && t->valuedouble >= 1 &&
        t->valuedouble <= MAX_TIMEOUT_S)
        ms = (uint32_t)(t->valuedouble * 1000.0) + DEADLINE_CLEANUP_MS;
    cJSON_Delete(args);
    return ms;
}

/* A test's clock (deadline_set_clock), NULL: the system's. */
static _Atomic(const struct deadline_clock *) test_clock;

void deadline_set_clock(const struct deadline_clock *clock)
{
    atomic_store(&test_clock, clock);
}

uint64_t deadline_now_ns(void)
{
    const struct deadline_clock *c = atomic_load(&test_clock);
    struct timespec ts;

    if (c != NULL)
        return c->now_ns(c->user);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t deadline_now_ms(void)
{
    return deadline_now_ns() / 1000000ull;
}

struct timespec deadline_after_ms(clockid_t clock, uint32_t ms)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int deadline_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex,
                       uint64_t until_ns)
{
    const struct deadline_clock *c = atomic_load(&test_clock);
    struct timespec ts;

    if (c != NULL)
        return c->wait(c->user, cond, mutex, until_ns);
    ts.tv_sec = (time_t)(until_ns / 1000000000ull);
    ts.tv_nsec = (long)(until_ns % 1000000000ull);
    return pthread_cond_timedwait(cond, mutex, &ts);
}
