/* devboxd tunnels: the devbox's tunnel record (enable_tunnel, remove_tunnel,
 * DevboxView.tunnel) and the tunnel listener that serves
 * http://127.0.0.1:<tunnel port>/tunnel/{port}-{tunnel_key}/ and
 * http://{port}-{tunnel_key}.localhost:<tunnel port>/ (on the host and inside
 * every devbox) by relaying each connection to 127.0.0.1:{port} inside the
 * devbox's network namespace. See docs/devboxd.md, "Tunnels". */
#ifndef DEVBOXD_TUNNEL_H
#define DEVBOXD_TUNNEL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#define TUNNEL_KEY_LEN                                                         \
    24 /* lower-case [a-z0-9]: host names are case-insensitive */
#define TUNNEL_TOKEN_LEN 48 /* hex */

/* ---- records (tunnels.c) ---- */

/* Validates a tunnel spec ({auth_mode?, http_keep_alive?, wake_on_http?}, as
 * in enable_tunnel's body and the create body's "tunnel"). where names the
 * object in messages ("" or "tunnel"). Returns 0 or -1 with err. */
int tunnel_check_spec(const cJSON *spec, const char *where, char *err,
                      size_t errlen);

/* A new TunnelView from a checked spec (may be NULL: defaults): fresh
 * tunnel_key, auth_token when authenticated, create_time_ms now. */
cJSON *tunnel_new_view(const cJSON *spec);

/* enable_tunnel with a checked spec: 0 with *view (a TunnelView; the same
 * tunnel again when the devbox has one of this spec), or 400 with err (the
 * devbox ended, or has a tunnel of another spec). */
int tunnel_enable(struct engine *eng, struct devbox *box, const cJSON *spec,
                  cJSON **view, char *err, size_t errlen);
/* remove_tunnel: the devbox's tunnel goes (none is no error). */
void tunnel_remove(struct engine *eng, struct devbox *box);

/* ---- PTY tunnels (create_pty_tunnel) ----
 * Always authenticated, port 13 only (where the devbox's PTY server
 * listens), a fresh key and token per call, the TUNNEL_PTY_MAX most recent
 * per devbox kept (older ones answer 404), memory only (gone after a devboxd
 * restart). Kept across suspend/resume, dead once the devbox is shutdown or
 * failed. Relayed to 127.0.0.1:13 inside the devbox like any tunnel. */
#define TUNNEL_PTY_PORT 13
#define TUNNEL_PTY_MAX 16

/* create_pty_tunnel: 0 with *view, a PtyTunnelView {tunnel_key,
 * auth_token, url_template}, or 400 (the devbox is not running) or 500
 * with err. */
int tunnel_pty_create(struct engine *eng, struct devbox *box, cJSON **view,
                      char *err, size_t errlen);

/* Lock (eng->lock) held. The devbox id of a PTY tunnel key, its token
 * copied into token (TUNNEL_TOKEN_LEN + 1 bytes); NULL if unknown. */
const char *tunnel_pty_find_locked(const char *key, char *token);
/* Frees every PTY tunnel record (at exit). */
void tunnel_pty_clear(void);

/* ---- where tunnels live ----
 * The URL template clients fill to reach a tunnel port, e.g.
 * "http://{port}-{tunnel_key}.localhost:41234". devboxd advertises it as the
 * "url_template" field of every TunnelView and PtyTunnelView, as the
 * X-Devboxd-Tunnel-Url-Template header of every authorised API answer and in
 * devboxd.pid. Set once at start-up, before any thread reads it. */
#define TUNNEL_TEMPLATE_HEADER "x-devboxd-tunnel-url-template"
#define TUNNEL_TEMPLATE_MAX 512

/* tmpl NULL: the listener's own "http://{port}-{tunnel_key}.localhost:P".
 * Else it must be http(s)://{port}-{tunnel_key}.DOMAIN[:PORT] (DOMAIN
 * letters, digits, '-' and '.'; no path): the tunnel listener then also
 * accepts Host names under DOMAIN (for a proxy or a wildcard DNS name in
 * front of it). Returns 0, or -1 with what to fix in err. */
/* listen_host names the listener in the path template by default
 * ("127.0.0.1" for a loopback or wildcard --tunnel-listen). */
int tunnel_set_url_template(const char *tmpl, const char *listen_host,
                            int tunnel_port, char *err, size_t errlen);
/* The advertised template ("" before tunnel_set_url_template). */
const char *tunnel_url_template(void);
/* The DOMAIN of a --tunnel-url-template (lower-case), NULL by default. */
const char *tunnel_template_domain(void);
/* The path form of the same tunnels, "http://127.0.0.1:P/tunnel/{port}-
 * {tunnel_key}" (or the custom template's scheme://DOMAIN[:PORT]/tunnel/…):
 * it needs no *.localhost resolution, so Node fetch, Python and clients
 * inside devboxes (devboxd listens on 127.0.0.1:P in each devbox too) open
 * it. Advertised as "path_url_template" next to "url_template". "" before
 * tunnel_set_url_template. */
const char *tunnel_path_url_template(void);
/* The lower-case host of the path template (its Host is accepted for path
 * routing besides 127.0.0.0/8, [::1] and localhost), NULL before set. */
const char *tunnel_path_host(void);
/* Frees the templates (at exit). */
void tunnel_url_template_clear(void);
/* A copy of a stored TunnelView with "url_template" added, for answers. */
cJSON *tunnel_view_out(const cJSON *tunnel);

/* ---- the tunnel listener (tunnel_proxy.c) ---- */

struct tunnel_server;

/* Binds spec "HOST:PORT" (port 0 = ephemeral); loopback only unless
 * allow_non_loopback. *bound_port receives the port. */
struct tunnel_server *tunnel_server_new(struct engine *eng, const char *spec,
                                        int allow_non_loopback, int *bound_port,
                                        char *err, size_t errlen);
int tunnel_server_start(struct tunnel_server *ts, char *err, size_t errlen);
/* Listens on 127.0.0.1:<tunnel port> inside the devbox's network namespace
 * too (a socket devboxd serves like the main listener; nothing else of the
 * host is reachable from the devbox): the tunnel URLs then work from inside
 * every devbox, a browser devbox included. Called at each sandbox start; a
 * failure is logged to the devbox's logs. NULL ts is a no-op. */
void tunnel_server_boot(struct tunnel_server *ts, struct engine *eng,
                        struct devbox *box, struct sandbox *sb);
/* The devbox's sandbox stopped: its listener goes. */
void tunnel_server_forget(struct tunnel_server *ts, const char *box_id);
/* Closes the listener, ends every relayed connection (bounded) and frees.
 * Must run before engine_fini. NULL is a no-op. */
void tunnel_server_stop(struct tunnel_server *ts);

/* Parses a tunnel Host ("{port}-{key}.localhost[:p]",
 * "{port}-{key}.tunnel.localhost[:p]" or "{port}-{key}.DOMAIN[:p]" for the
 * DOMAIN of a --tunnel-url-template; case-insensitive, trailing dot
 * allowed). Returns 0 with *port and key (lower-cased) or -1. Exposed for
 * unit tests. */
int tunnel_parse_host(const char *host, int *port, char *key, size_t keylen);
/* Parses the path form's request target "/tunnel/{port}-{key}[/...|?...]"
 * (the label case-insensitive). Returns 0 with *port, key (lower-cased)
 * and *prefix_len (bytes of "/tunnel/{port}-{key}") or -1. Exposed for
 * unit tests. */
int tunnel_parse_path(const char *target, int *port, char *key, size_t keylen,
                      size_t *prefix_len);

#endif
