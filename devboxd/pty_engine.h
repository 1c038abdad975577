/* devboxd PTY sessions, engine side (pty_engine.c): devboxd-ptyd inside
 * each devbox, and the relay of PTY-tunnel connections to it. */
#ifndef DEVBOXD_PTY_ENGINE_H
#define DEVBOXD_PTY_ENGINE_H

#include "engine.h"
#include "sandbox.h"

/* Registers the PTY-tunnel handler with the tunnel listener. */
void pty_engine_init(void);
/* Ends relayed PTY connections (within 250 ms) and frees ptyd handles;
 * call before tunnel_server_stop. */
void pty_engine_shutdown(void);
/* Starts ptyd in a devbox whose sandbox just started (boot or resume).
 * Best effort: a failure is logged to the devbox's logs. */
void pty_engine_boot(struct engine *eng, struct devbox *box, struct sandbox *sb);

#endif
