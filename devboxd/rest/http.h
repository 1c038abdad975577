/* devboxd's request model: one request/response abstraction that the
 * front ends (net/http_server.h: HTTP/1.1 and cleartext HTTP/2) fill and
 * the REST handlers (api.h) answer. */
#ifndef DEVBOXD_HTTP_H
#define DEVBOXD_HTTP_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <sys/types.h>

#define HTTP_MAX_JSON_BODY (1u << 20)    /* 1 MiB for JSON requests */
#define HTTP_MAX_UPLOAD_BODY (64u << 20) /* 64 MiB for multipart uploads */
#define HTTP_MAX_RESP_HEADERS 8

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

/* Helpers shared by the front ends and the handlers (http.c). */
const char *http_request_header(const struct http_request *req,
                                const char *name);
const char *http_request_query(const struct http_request *req,
                               const char *name);
void http_response_set_header(struct http_response *resp, const char *name,
                              const char *value);
void http_response_set_body(struct http_response *resp, int status,
                            const char *content_type, char *body, size_t len);
void http_response_clear(struct http_response *resp);
/* Sends a cJSON value (consumed) as the body with status. */
void http_response_json(struct http_response *resp, int status, cJSON *json);
/* Runloop error shape: {"code": slug, "message": text} with status. */
void http_response_error(struct http_response *resp, int status,
                         const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
