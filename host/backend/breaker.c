/*
 * breaker.c - the backend circuit breaker (see breaker.h).
 */
#include "breaker.h"

#include <stdio.h>
#include <string.h>

/* A probe that neither succeeded nor failed within this long (a hung
 * connection) no longer blocks the next probe. */
#define PROBE_STALE_MS 5000u

void breaker_init(struct breaker *b)
{
    memset(b, 0, sizeof(*b));
    pthread_mutex_init(&b->lock, NULL);
    b->state = BREAKER_CLOSED;
    b->cooldown_ms = RLMCP_BREAKER_COOLDOWN_MS;
}

void breaker_destroy(struct breaker *b)
{
    pthread_mutex_destroy(&b->lock);
}

bool breaker_allow(struct breaker *b, uint64_t now_ms, char *why, size_t n)
{
    bool ok = false;

    pthread_mutex_lock(&b->lock);
    switch (b->state) {
    case BREAKER_CLOSED:
        ok = true;
        break;
    case BREAKER_OPEN:
        if (now_ms >= b->probe_ms) {
            b->state = BREAKER_HALF_OPEN;
            b->probe_started_ms = now_ms;
            ok = true;
        }
        break;
    case BREAKER_HALF_OPEN:
        if (now_ms - b->probe_started_ms >= PROBE_STALE_MS) {
            b->probe_started_ms = now_ms;
            ok = true;
        }
        break;
    }
    if (!ok && why != NULL) {
        uint64_t next = b->state == BREAKER_OPEN && b->probe_ms > now_ms
                            ? b->probe_ms - now_ms
                            : 0;

        snprintf(why, n,
                 "the backend has been unreachable for %llu ms (%s); "
                 "calls fail at once until a probe gets through (next "
                 "probe in %llu ms)",
                 (unsigned long long)(now_ms - b->opened_ms), b->last,
                 (unsigned long long)next);
    }
    pthread_mutex_unlock(&b->lock);
    return ok;
}

void breaker_success(struct breaker *b)
{
    pthread_mutex_lock(&b->lock);
    b->state = BREAKER_CLOSED;
    b->failures = 0;
    b->cooldown_ms = RLMCP_BREAKER_COOLDOWN_MS;
    pthread_mutex_unlock(&b->lock);
}

void breaker_failure(struct breaker *b, uint64_t now_ms, bool fatal,
                     const char *what)
{
    pthread_mutex_lock(&b->lock);
    snprintf(b->last, sizeof(b->last), "%s", what != NULL ? what : "");
    b->failures++;
    if (b->state == BREAKER_HALF_OPEN) {
        /* The probe failed: wait longer before the next one. */
        b->cooldown_ms *= 2;
        if (b->cooldown_ms > RLMCP_BREAKER_MAX_COOLDOWN_MS)
            b->cooldown_ms = RLMCP_BREAKER_MAX_COOLDOWN_MS;
        b->state = BREAKER_OPEN;
        b->probe_ms = now_ms + b->cooldown_ms;
    } else if (b->state == BREAKER_CLOSED &&
               (fatal || b->failures >= RLMCP_BREAKER_THRESHOLD)) {
        b->state = BREAKER_OPEN;
        b->opened_ms = now_ms;
        b->probe_ms = now_ms + b->cooldown_ms;
    }
    pthread_mutex_unlock(&b->lock);
}

void breaker_abandon(struct breaker *b)
{
    pthread_mutex_lock(&b->lock);
    if (b->state == BREAKER_HALF_OPEN) {
        b->state = BREAKER_OPEN;
        b->probe_ms = 0;
    }
    pthread_mutex_unlock(&b->lock);
}

enum breaker_state breaker_state(struct breaker *b)
{
    enum breaker_state s;

    pthread_mutex_lock(&b->lock);
    s = b->state;
    pthread_mutex_unlock(&b->lock);
    return s;
}
