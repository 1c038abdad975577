/* devboxd HTTP front end: one request/response abstraction served over
 * HTTP/1.1 (libmicrohttpd) and cleartext HTTP/2 with prior knowledge
 * (libnghttp2), chosen per connection by peeking at the first bytes. */
#ifndef DEVBOXD_HTTP_H
#define DEVBOXD_HTTP_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <sys/types.h>

#define HTTP_MAX_JSON_BODY (1u << 20)    /* 1 MiB for JSON requests */
#define HTTP_MAX_UPLOAD_BODY (64u << 20) /* 64 MiB for multipart uploads */
#define HTTP_MAX_RESP_HEADERS 8
/* Request body bytes buffered at once over all connections; a body that
 * would pass it is answered 503 (retry) without being buffered further. */
#define HTTP_MAX_BUFFERED (256u << 20)

struct http_kv {
    char *name;
    char *value;
};

struct http_request {
    char *method;
    char *path;            /* without the query string */
    char *target;          /* HTTP/2: the raw :path (query, undecoded) */
    struct http_kv *query; /* decoded query parameters */
    size_t n_query;
    struct http_kv *headers; /* names lower-case */
    size_t n_headers;
    char *body; /* NUL-terminated, may contain NULs */
    size_t body_len;
    size_t body_cap;
    int body_too_large; /* body exceeded the limit; body is truncated */
    int body_busy;      /* HTTP_MAX_BUFFERED reached: answered 503 */
    int trusted;        /* arrived over the unix socket: no key needed */
};

/* A streamed body: called repeatedly on the handler's thread; may block.
 * Returns bytes written (>0), 0 at the end, HTTP_STREAM_AGAIN when nothing
 * is ready yet (the caller checks for a gone client and calls again), or -1
 * to abort the response. */
#define HTTP_STREAM_AGAIN (-2)
typedef ssize_t (*http_stream_fn)(void *ctx, char *buf, size_t max);

struct http_response {
    int status;
    struct http_kv headers[HTTP_MAX_RESP_HEADERS];
    size_t n_headers;
    char *body; /* malloc'd, owned by the response */
    size_t body_len;
    http_stream_fn stream; /* if set, body is ignored */
    void *stream_ctx;
    void (*stream_free)(void *ctx);
};

/* The one request handler (rest/api.c). Runs on a thread that may block. */
typedef void (*http_handler_fn)(void *ud, const struct http_request *req,
                                struct http_response *resp);

struct http_server;

/* Listen specs: "unix:/path" or "HOST:PORT". Returns NULL with a message
 * in err on failure. */
struct http_server *http_server_new(http_handler_fn handler, void *ud,
                                    char *err, size_t errlen);
/* Binds one listen address. *bound_port receives the TCP port (0 for unix). */
int http_server_listen(struct http_server *srv, const char *spec,
                       int allow_non_loopback, int *bound_port, char *err,
                       size_t errlen);
/* fn(ud, req) returns 0 when a request head carries valid credentials:
 * checked before the body is read; a failing request is still answered by
 * the handler (its 401) but its body is never buffered. */
void http_server_set_authorizer(struct http_server *srv,
                                int (*fn)(void *ud,
                                          const struct http_request *req));
int http_server_start(struct http_server *srv, char *err, size_t errlen);
void http_server_stop(struct http_server *srv);
/* Serves fd, a connection whose client sent the HTTP/2 preface (prior
 * knowledge), with srv's handler until it ends, on the calling thread; the
 * caller closes fd. For a server that listens on nothing itself (the tunnel
 * listener's HTTP/2 side): http_server_stop ends such connections too.
 * -1 when srv is stopping or its connection table is full. */
int http_server_serve_h2(struct http_server *srv, int fd);
/* The HTTP/2 connection preface a client with prior knowledge opens with. */
#define HTTP_H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

/* Helpers shared by both transports and the handlers. */
const char *http_request_header(const struct http_request *req,
                                const char *name);
const char *http_request_query(const struct http_request *req,
                               const char *name);
void http_response_set_header(struct http_response *resp, const char *name,
                              const char *value);
void http_response_set_body(struct http_response *resp, int status,
                            const char *content_type, char *body, size_t len);
void http_response_clear(struct http_response *resp);
/* Sends a cJSON value (consumed) as the body with status (http_json.c). */
void http_response_json(struct http_response *resp, int status, cJSON *json);
/* Runloop error shape: {"code": slug, "message": text} with status. */
void http_response_error(struct http_response *resp, int status,
                         const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void http_request_clear(struct http_request *req);
/* Splits "a=b&c=d" into decoded pairs appended to req->query. */
int http_parse_query(struct http_request *req, const char *qs);
/* Runs the handler and turns a streamed body into a copy loop for
 * transports. Internal to the transports. */
void http_dispatch(struct http_server *srv, struct http_request *req,
                   struct http_response *resp);

#endif
