/* Shared between http_server.c (accept loop, HTTP/1.1) and h2c.c (HTTP/2). */
#ifndef DEVBOXD_HTTP_INTERNAL_H
#define DEVBOXD_HTTP_INTERNAL_H

#include "http_server.h"

#include <pthread.h>

#define HTTP_MAX_LISTEN 8
/* Connections served at once: HTTP/2 and still-sniffing ones (a thread
 * each, counted in conns) and, separately, HTTP/1.1 ones (libmicrohttpd's
 * thread per connection, its own limit). Beyond this a new connection is
 * closed at once rather than costing another thread. */
#define HTTP_MAX_CONNS 1024
/* HTTP/1.1 connections handed to libmicrohttpd, counted by devboxd before
 * MHD_add_connection so the library's own limit (HTTP_MHD_LIMIT, above
 * ours) is never reached: reaching it through MHD_add_connection wedged
 * the library. When HTTP_MAX_H1 are open, the oldest connection that has
 * not yet sent an authenticated request head is dropped for the newcomer;
 * the table has HTTP_H1_SPARE extra slots for those still closing. */
#define HTTP_MAX_H1 1024
#define HTTP_H1_SPARE 64
#define HTTP_H1_SLOTS (HTTP_MAX_H1 + HTTP_H1_SPARE)
#define HTTP_MHD_LIMIT (HTTP_H1_SLOTS + 64)

/* Sniffing/HTTP/2 connections get HTTP_CONN_SPARE extra slots the same way. */
#define HTTP_CONN_SPARE 64
#define HTTP_CONN_SLOTS (HTTP_MAX_CONNS + HTTP_CONN_SPARE)

/* One connection slot; guarded by conn_lock. */
struct conn_slot {
    int fd;            /* -1: free */
    int started;       /* the fd may be shut down (owner took it) */
    int trusted;       /* sent an authenticated request head */
    int evicted;       /* shut down to make room; closing */
    unsigned long seq; /* admission order, for oldest-first eviction */
};

/* A table of connection slots with at most max live (not evicted) ones. */
struct conn_table {
    struct conn_slot *slots;
    int n_slots;
    int max_active;
    int active;
};

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
    struct conn_slot conn_slots[HTTP_CONN_SLOTS];
    struct conn_table conn_tab; /* sniffing and HTTP/2 connections */
    struct conn_slot h1_slots[HTTP_H1_SLOTS];
    struct conn_table h1_tab; /* HTTP/1.1 connections inside libmicrohttpd */
    unsigned long conn_seq;
    /* Checks a request's credentials as soon as its head arrives (before
     * any body is read); NULL: every request goes to the handler. */
    int (*authorize)(void *ud, const struct http_request *req);
};

/* Serves one HTTP/2 connection on fd (in slot of srv->conn_tab) until it
 * ends; the caller closes fd. */
void h2_serve_connection(struct http_server *srv, int fd, int slot,
                         int is_unix);

/* The connection in slot of tab sent an authenticated request head: it is
 * no longer dropped to make room for new connections. */
void http_conn_trust(struct http_server *srv, struct conn_table *tab, int slot);
/* Whether req may proceed to have its body read (srv->authorize). */
int http_authorized(struct http_server *srv, const struct http_request *req);

/* An HTTP/2 request worker holds the server while it runs. hold fails
 * (-1) once the server is stopping. */
int http_server_hold(struct http_server *srv);
void http_server_release(struct http_server *srv);

/* Request body accumulation shared by both transports. */
size_t http_body_limit(const struct http_request *req);
int http_body_append(struct http_request *req, size_t limit, const char *data,
                     size_t len);
/* Bytes of request bodies buffered now, over all connections. */
size_t http_body_buffered(void);
int http_kv_append(struct http_kv **arr, size_t *n, const char *name,
                   const char *value);

/* Decodes %XX and '+' in place. */
void http_url_decode(char *s, int plus_is_space);

#endif
