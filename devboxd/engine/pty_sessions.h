/* devboxd PTY sessions, engine side (pty_sessions.c): devboxd-ptyd inside
 * each devbox on port 13, where the tunnel listener relays PTY tunnels. */
#ifndef DEVBOXD_PTY_ENGINE_H
#define DEVBOXD_PTY_ENGINE_H

#define PTY_KEY_LEN 64 /* 256 bits */

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
