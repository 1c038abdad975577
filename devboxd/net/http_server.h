/* devboxd HTTP front end: the request model (rest/http.h) served over
 * HTTP/1.1 (libmicrohttpd) and cleartext HTTP/2 with prior knowledge
 * (libnghttp2), chosen per connection by peeking at the first bytes
 * (http_server.c, h2c.c). */
#ifndef DEVBOXD_HTTP_SERVER_H
#define DEVBOXD_HTTP_SERVER_H

#include "http.h"

/* Request body bytes buffered at once over all connections; a body that
 * would pass it is answered 503 (retry) without being buffered further. */
#define HTTP_MAX_BUFFERED (256u << 20)

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

/* Frees what req holds; its buffered body leaves HTTP_MAX_BUFFERED's count. */
void http_request_clear(struct http_request *req);
/* Splits "a=b&c=d" into decoded pairs appended to req->query. */
int http_parse_query(struct http_request *req, const char *qs);
/* Runs the handler and turns a streamed body into a copy loop for
 * transports. Internal to the transports. */
void http_dispatch(struct http_server *srv, struct http_request *req,
                   struct http_response *resp);

#endif
