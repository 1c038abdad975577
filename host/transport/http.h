/*
 * http.h - the Streamable HTTP transport (MCP 2025-11-25), on libmicrohttpd.
 *
 * One endpoint, /mcp: POST carries one JSON-RPC message (requests answer
 * with application/json or text/event-stream, notifications and responses
 * with 202), GET with Last-Event-ID resumes an SSE reply stream, DELETE
 * ends the session. /health and / are informational. Sessions, the event
 * store and the security checks (Host, Origin, bearer token, limits) live
 * here; JSON-RPC semantics stay in the dispatcher (mcp.h). See docs/http.md.
 */
#ifndef RLMCP_HOST_HTTP_H
#define RLMCP_HOST_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mcp_dispatcher;
struct host_config;
struct http_server;

/* Everything the transport needs, independent of the config file. */
struct http_options {
    const char *listen; /* "HOST:PORT"; port 0 picks a free one */
    const char *const *allowed_origins; /* NULL-terminated, may be NULL */
    const char *auth_token;             /* the endpoint's own bearer token */
    bool allow_query_key;               /* accept ?api_key= (older clients) */
    size_t max_body_bytes;              /* 413 above */
    unsigned max_sessions;            /* idle ones reclaimed (LRU), else 429 */
    unsigned max_sessions_per_client; /* per address; 0: max_sessions on a
                                         loopback bind, else a quarter */
    unsigned max_connections;         /* 503 above */
    unsigned session_idle_seconds;    /* sessions unused this long expire */
    unsigned connection_timeout_s;    /* idle keep-alive connections close */
    const char *server_name;          /* for GET / */
    const char *server_version;
    unsigned event_store_events; /* per session; 0: 4096 */
    size_t event_store_bytes;    /* per session; 0: 1 MiB */
    unsigned mhd_threads;        /* 0: 2 */
    int metrics; /* enum host_metrics: GET /metrics private, public, off */
};

/* Fill opts from the deployment (pointers borrow from cfg). */
void http_options_from_config(struct http_options *opts,
                              const struct host_config *cfg);

/*
 * Check the options and start serving on background threads. Returns NULL
 * with a message in err (what to fix) when they are unsafe or invalid or
 * the address cannot be bound.
 */
struct http_server *http_server_start(struct mcp_dispatcher *d,
                                      const struct http_options *opts,
                                      char *err, size_t errlen);
/* The bound port (useful with port 0). */
uint16_t http_server_port(const struct http_server *srv);
/* "http://127.0.0.1:8000/mcp" */
void http_server_url(const struct http_server *srv, char *buf, size_t len);
/* Stop accepting, end the streams, free every session, free srv. */
void http_server_stop(struct http_server *srv);

/*
 * Serve until SIGINT/SIGTERM: what `runloop-mcp --transport http` runs.
 * Prints the URL to stderr once listening. Returns 0 on a clean stop, 1 when
 * the server could not start (the reason is logged).
 */
int http_serve(struct mcp_dispatcher *d, const struct host_config *cfg);

/* ---- checks, exposed for unit tests (http_check.c) --------------------- */

/*
 * Every setting of opts that would refuse the start (listen address, token
 * beyond loopback, limits), checked before anything starts (the local
 * engine among them). 0, or -1 with what to fix in err.
 */
int http_options_check(const struct http_options *o, char *err, size_t errlen);
/* The same checks but the address, for a bind known to be loopback or not. */
int http_limits_check(const struct http_options *o, bool loopback, char *err,
                      size_t errlen);

/* "127.0.0.1:8000", "[::1]:8000", "localhost:80", "0.0.0.0:9" -> parts. */
int http_parse_listen(const char *listen, char *host, size_t hostlen,
                      uint16_t *port);
/* True for 127.0.0.0/8, ::1 and "localhost". */
bool http_host_is_loopback(const char *host);
/*
 * DNS-rebinding rule: a Host header is fine when its name is a loopback
 * name (localhost, 127.0.0.1, [::1]) or the host of an allowed origin, and
 * its port, when given, is ours.
 */
bool http_host_header_ok(const char *host_header, uint16_t port,
                         const char *const *allowed_origins);
/* Origin rule: in the allowed list, or a loopback origin when loopback. */
bool http_origin_ok(const char *origin, const char *const *allowed_origins,
                    bool loopback_bind);
/* Accept lists application/json and text/event-stream (wildcards count). */
bool http_accept_ok(const char *accept, bool need_json, bool need_sse);
/* Content-Type is application/json, parameters allowed. */
bool http_content_type_json(const char *ctype);
/* Constant-time string comparison for tokens. */
bool http_token_equal(const char *a, const char *b);
/* "Bearer xyz" -> "xyz" (pointer into the header), NULL otherwise. */
const char *http_bearer(const char *authorization);
/*
 * Copy url to out with the value of every api_key / key / token query
 * parameter replaced by "[redacted]", for access logs.
 */
void http_redact_url(const char *url, char *out, size_t outlen);
/* Event ids are "<stream>-<seq>": parse one; false when malformed. */
bool http_parse_event_id(const char *id, uint64_t *stream, uint64_t *seq);

#endif
