/* devboxd PTY sessions, engine side (pty_sessions.c): devboxd-ptyd inside
 * each devbox on port 13, where the tunnel listener relays PTY tunnels. */
#ifndef DEVBOXD_PTY_ENGINE_H
#define DEVBOXD_PTY_ENGINE_H

#define PTY_KEY_LEN 64 /* 256 bits */
/* DEVBOXD_PTY_IDLE_TTL and DEVBOXD_PTY_PING_TIMEOUT (seconds): their
 * defaults and largest values. */
#define PTY_IDLE_TTL_DEFAULT_S 1800
#define PTY_IDLE_TTL_MAX_S (7 * 24 * 3600)
#define PTY_PING_TIMEOUT_DEFAULT_S 60
#define PTY_PING_TIMEOUT_MAX_S 3600

#include <stddef.h>

#include "engine.h"
#include "sandbox.h"

/* Frees the ptyd handles (the processes end with their sandboxes). */
void pty_engine_shutdown(void);
/* Starts ptyd in a devbox whose sandbox just started (boot or resume).
 * Best effort: a failure is logged to the devbox's logs. */
void pty_engine_boot(struct engine *eng, struct devbox *box,
                     struct sandbox *sb);

/* The key devboxd-ptyd of box_id's current boot wants as the first line
 * of every connection (PTY_KEY_LEN hex digits): 0, or -1 when its ptyd was
 * not started. */
int pty_engine_key(const char *box_id, char *out, size_t outlen);

/* Frees the ptyd handle of a devbox whose sandbox stopped. */
void pty_engine_forget(const char *box_id);

#endif
