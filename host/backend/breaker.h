/*
 * breaker.h - a circuit breaker for one backend.
 *
 * While the backend answers, every request goes through (closed). After
 * RLMCP_BREAKER_THRESHOLD connection failures in a row (refused, reset,
 * unresolvable, no connect in time) - or one refused connection to the
 * local engine, which never comes back by itself within a call - the
 * breaker opens: requests fail at once instead of paying the retry
 * schedule. After a cool-down (500 ms, doubling to 5 s) the next request
 * is let through as a probe (half-open); any HTTP answer closes the
 * breaker, another connection failure opens it again. See
 * docs/backends.md "Circuit breaker".
 */
#ifndef RLMCP_HOST_BREAKER_H
#define RLMCP_HOST_BREAKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RLMCP_BREAKER_THRESHOLD 3
#define RLMCP_BREAKER_COOLDOWN_MS 500u
#define RLMCP_BREAKER_MAX_COOLDOWN_MS 5000u

enum breaker_state { BREAKER_CLOSED, BREAKER_OPEN, BREAKER_HALF_OPEN };

struct breaker {
    pthread_mutex_t lock;
    enum breaker_state state;
    unsigned failures;    /* connection failures in a row */
    uint64_t opened_ms;   /* monotonic */
    uint64_t probe_ms;    /* OPEN: first moment a probe may go */
    uint32_t cooldown_ms; /* current cool-down */
    uint64_t probe_started_ms;
    char last[256]; /* the last failure, for messages */
};

void breaker_init(struct breaker *b);
void breaker_destroy(struct breaker *b);

/*
 * May a request go now? True when closed, or when this caller becomes the
 * probe. False: why[] says since when the backend is down and when the
 * next probe goes.
 */
bool breaker_allow(struct breaker *b, uint64_t now_ms, char *why, size_t n);

/* An HTTP status arrived (any status): the backend is up. */
void breaker_success(struct breaker *b);

/* A connection failure; open at once when fatal (refused local engine). */
void breaker_failure(struct breaker *b, uint64_t now_ms, bool fatal,
                     const char *what);

/* A request that let through as the probe ended without a verdict
 * (cancelled): let the next one probe. */
void breaker_abandon(struct breaker *b);

enum breaker_state breaker_state(struct breaker *b);

#endif
