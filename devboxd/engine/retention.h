/* Retention of ended devboxes' records (retention.c).
 *
 * A shut-down or failed devbox's record (devboxes/ID: its devbox.json,
 * logs and command output) used to stay for ever, on disk and in devboxd's
 * memory. An ended devbox is forgotten once it ended more than
 * RLMCP_RECORD_RETENTION_DAYS ago (default 7) or when more than
 * RLMCP_RECORD_RETENTION_MAX (default 10000) newer ended devboxes exist;
 * running and suspended ones are never touched. See docs/devboxd.md,
 * "Retention". */
#ifndef DEVBOXD_RETENTION_H
#define DEVBOXD_RETENTION_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#define RETENTION_DAYS_DEFAULT 7
#define RETENTION_MAX_DEFAULT 10000
/* An ended devbox is kept at least this long, whatever the limits: a
 * request that looked it up just before it ended finishes with it. */
#define RETENTION_GRACE_MS 2000

/* The limits are eng->retain_ms and eng->retain_max, set by engine_init
 * from the settings (devboxd/config.c). */
/* Unlinks the ended devboxes past the limits from eng->boxes (lock held)
 * and returns them chained by ->next; nothing may use them any more. */
struct devbox *retention_collect_locked(struct engine *eng, int64_t now);
/* Removes the collected devboxes' records and frees them (lock not held). */
void retention_remove(struct engine *eng, struct devbox *gone);

#endif
