/*
 * backend.h - which Runloop backend the host talks to, and why.
 *
 * runloop.backend (deployment) is auto, cloud or local:
 *  - cloud: the Runloop API at RUNLOOP_BASE_URL, else runloop.base_url, else
 *    https://api.runloop.ai; the default key is runloop.api_key, else
 *    RUNLOOP_API_KEY. Without a key it is an error on stdio; on HTTP each
 *    caller brings its own key.
 *  - local: devboxd's unix socket <state>/devboxd.sock, where <state> is
 *    runloop.state_dir, else $RLMCP_STATE_DIR, else $XDG_STATE_HOME/devboxd,
 *    else ~/.local/state/devboxd. When nothing answers there, the host
 *    starts devboxd in the background (runloop.devboxd, else devboxd next
 *    to the runloop-mcp binary, else PATH), detached, stderr to
 *    <state>/devboxd.log, and waits for it. One engine per state dir.
 *  - auto: cloud when a key is configured (runloop.api_key or
 *    RUNLOOP_API_KEY) or RUNLOOP_BASE_URL is set; local otherwise. Empty
 *    variables count as unset.
 * The choice is made once; a call never falls back to the other backend.
 * See docs/backends.md.
 *
 * Use from main.c:
 *
 *     struct backend *b = NULL;
 *     char *err = NULL;
 *     if (backend_open(cfg, &b, &err) != 0) { print err; free(err); exit 1 }
 *     log_msg(RLMCP_LOG_INFO, NULL, "%s", backend_description(b));
 *     mcp_set_rlclient(d, backend_client(b));
 *     mcp_set_default_api_key(d, backend_api_key(b));  // may be NULL
 *     ... serve ...
 *     backend_free(b);   // after the dispatcher is gone
 *
 * and for --check-config (decides, starts nothing):
 *
 *     char line[512];
 *     printf("backend:    %s\n", backend_describe(cfg, line, sizeof(line)));
 */
#ifndef RLMCP_HOST_BACKEND_H
#define RLMCP_HOST_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

struct backend;
struct rlclient;

/*
 * Decide the backend from the deployment and the environment, without
 * touching the network or starting anything. Returns 0, or -1 with a
 * malloc'd message in *err (free() it) that says what to fix.
 */
int backend_resolve(const struct host_config *cfg, struct backend **out,
                    char **err);

/*
 * Make the backend usable: local → make sure a devboxd answers on the
 * state dir's socket (starting one if needed); then create the client.
 * Returns 0, or -1 with *err as above.
 */
int backend_connect(struct backend *b, char **err);

/*
 * Like backend_connect, but never starts an engine: -1 with *err when no
 * local engine answers (for `runloop-mcp engine status`).
 */
int backend_attach(struct backend *b, char **err);

/*
 * Local only: the pid in <state>/devboxd.pid when that process lives and
 * some devboxd holds the state dir's lock; else 0. Starts nothing.
 */
int backend_engine_pid(const struct backend *b);

/*
 * Whether a configured key looks like an example's placeholder ("ak_...",
 * "<your key>", "ak_xxxx", an unexpanded "${VAR}") rather than
 * a key. Such a key is refused when the backend is chosen: copied verbatim
 * it would select the cloud and fail every call with "unauthenticated".
 */
bool backend_key_is_placeholder(const char *key);

/* Whether pid is gone (or a zombie nobody reaped yet). */
bool backend_pid_gone(int pid);

/* backend_resolve + backend_connect. *out is NULL on failure. */
int backend_open(const struct host_config *cfg, struct backend **out,
                 char **err);

/*
 * One line: "backend: local engine at unix:/root/.local/state/devboxd/
 * devboxd.sock (auto: no RUNLOOP_API_KEY and no RUNLOOP_BASE_URL)".
 * Never contains a key. Borrowed from b.
 */
const char *backend_description(const struct backend *b);

/*
 * For --check-config: decide from cfg and the environment (starting
 * nothing) and write the same line without its "backend: " prefix into
 * buf, e.g. "local engine at unix:/s/devboxd.sock (auto: ...)", or
 * "error: <what to fix>" when no backend can be chosen. Returns buf.
 */
const char *backend_describe(const struct host_config *cfg, char *buf,
                             size_t len);

/* The client (after backend_connect); owned by b. */
struct rlclient *backend_client(const struct backend *b);

/* The key calls use when the caller brings none: NULL for local. Owned by
 * b; never log it. */
const char *backend_api_key(const struct backend *b);

bool backend_is_local(const struct backend *b);
/* Local only (else NULL): the state dir and the socket path. */
const char *backend_state_dir(const struct backend *b);
const char *backend_socket(const struct backend *b);
/* The base URL requests go to (cloud), or "http://localhost" (local). */
const char *backend_base_url(const struct backend *b);
/* Pid of the devboxd this host started, or 0 when one was running. */
int backend_started_pid(const struct backend *b);
/*
 * Whether the devboxd this host started may be stopped because the start
 * failed: it is still the state dir's engine and no devbox was created on
 * it since it started. False says why in why. A client that attached
 * meanwhile but created nothing yet cannot be seen.
 */
bool backend_started_engine_unused(const struct backend *b, char *why,
                                   size_t len);

/* Frees the client too; does not stop a devboxd (it is shared). */
void backend_free(struct backend *b);

/* p made absolute against the working directory (malloc'd; NULL when out
 * of memory or the working directory is unknown): how the local engine's
 * paths and a client's deployment path are written down. */
char *backend_absolute_path(const char *p);

#endif
