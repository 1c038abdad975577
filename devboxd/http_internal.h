/* Shared between http.c (accept loop, HTTP/1.1) and h2.c (HTTP/2). */
#ifndef DEVBOXD_HTTP_INTERNAL_H
#define DEVBOXD_HTTP_INTERNAL_H

#include "http.h"

#include <pthread.h>

#define HTTP_MAX_LISTEN 8
/* Connections served at once: HTTP/2 and still-sniffing ones (a thread
 * each, counted in conns) and, separately, HTTP/1.1 ones (libmicrohttpd's
 * thread per connection, its own limit). Beyond this a new connection is
 * closed at once rather than costing another thread. */
#define HTTP_MAX_CONNS 1024

struct http_server {
    http_handler_fn handler;
    void *ud;
    int listen_fds[HTTP_MAX_LISTEN];
    int listen_unix[HTTP_MAX_LISTEN];
    size_t n_listen;
    int stop_pipe[2];
    pthread_t accept_thread;
    int accept_started;
    struct MHD_Daemon *mhd;
    /* Sniffing and HTTP/2 connections (their fds, -1 when free) plus HTTP/2
     * request workers: http_server_stop ends the connections and waits for
     * all of them before freeing the server they use. */
    pthread_mutex_t conn_lock;
    pthread_cond_t conn_cond;
    int conns;
    int stopping;
    int conn_fds[HTTP_MAX_CONNS];
};

/* Serves one HTTP/2 connection on fd until it ends; the caller closes fd. */
void h2_serve_connection(struct http_server *srv, int fd, int trusted);

/* An HTTP/2 request worker holds the server while it runs. hold fails
 * (-1) once the server is stopping. */
int http_server_hold(struct http_server *srv);
void http_server_release(struct http_server *srv);

/* Request body accumulation shared by both transports. */
size_t http_body_limit(const char *content_type);
int http_body_append(struct http_request *req, size_t limit, const char *data,
                     size_t len);
int http_kv_append(struct http_kv **arr, size_t *n, const char *name,
                   const char *value);

/* Decodes %XX and '+' in place. */
void http_url_decode(char *s, int plus_is_space);

#endif
