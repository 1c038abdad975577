/* devboxd HTTP front end: accept loop, protocol sniffing, HTTP/1.1 through
 * libmicrohttpd (MHD_USE_NO_LISTEN_SOCKET + MHD_add_connection), and the
 * helpers shared with the HTTP/2 transport (h2c.c). */
#define _GNU_SOURCE
#include "http_internal.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char h2_preface[] = HTTP_H2_PREFACE;
#define H2_PREFACE_LEN 24
#define SNIFF_TIMEOUT_MS 10000

static size_t body_buffered; /* request body bytes over all requests (atomic) */

/* ---------------------------------------------------------------- helpers */

static void kv_free(struct http_kv *kv, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(kv[i].name);
        free(kv[i].value);
    }
    free(kv);
}

void http_request_clear(struct http_request *req)
{
    free(req->method);
    free(req->path);
    free(req->target);
    kv_free(req->query, req->n_query);
    kv_free(req->headers, req->n_headers);
    free(req->body);
    if (req->body_cap > 0)
        __atomic_sub_fetch(&body_buffered, req->body_cap, __ATOMIC_RELAXED);
    memset(req, 0, sizeof(*req));
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

void http_url_decode(char *s, int plus_is_space)
{
    char *out = s;

    while (*s != '\0') {
        if (*s == '%' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
            *out++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
            s += 3;
        } else if (*s == '+' && plus_is_space) {
            *out++ = ' ';
            s++;
        } else {
            *out++ = *s++;
        }
    }
    *out = '\0';
}

int http_kv_append(struct http_kv **arr, size_t *n, const char *name,
                   const char *value)
{
    struct http_kv *grown = NULL;

    grown = realloc(*arr, (*n + 1) * sizeof(**arr));
    if (grown == NULL)
        return -1;
    *arr = grown;
    grown[*n].name = strdup(name);
    grown[*n].value = strdup(value != NULL ? value : "");
    if (grown[*n].name == NULL || grown[*n].value == NULL) {
        free(grown[*n].name);
        free(grown[*n].value);
        return -1;
    }
    (*n)++;
    return 0;
}

int http_parse_query(struct http_request *req, const char *qs)
{
    char *copy = NULL;
    char *save = NULL;
    char *pair = NULL;
    int rc = -1;

    copy = strdup(qs);
    if (copy == NULL)
        goto out;
    for (pair = strtok_r(copy, "&", &save); pair != NULL;
         pair = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(pair, '=');
        char *value =
            pair + strlen(pair); /* "" inside copy: decoded in place */

        if (eq != NULL) {
            *eq = '\0';
            value = eq + 1;
        }
        http_url_decode(pair, 1);
        http_url_decode(value, 1);
        if (http_kv_append(&req->query, &req->n_query, pair, value) != 0)
            goto out;
    }
    rc = 0;
out:
    free(copy);
    return rc;
}

void http_dispatch(struct http_server *srv, struct http_request *req,
                   struct http_response *resp)
{
    if (req->body_busy && http_authorized(srv, req)) {
        http_response_error(
            resp, 503,
            "devboxd is receiving too many request bodies at once "
            "(%u MiB buffered); retry shortly",
            HTTP_MAX_BUFFERED >> 20);
        http_response_set_header(resp, "x-should-retry", "true");
        http_response_set_header(resp, "retry-after", "1");
        return;
    }
    srv->handler(srv->ud, req, resp);
    if (resp->status == 0)
        resp->status = 500;
}

/* ------------------------------------------------------ connection slots */

/* Lock held. Makes room by shutting down the oldest connection that has
 * not sent an authenticated request head; its owner frees the slot once it
 * notices. Returns whether one was found. */
static int conn_evict_locked(struct conn_table *tab)
{
    struct conn_slot *oldest = NULL;
    int i;

    for (i = 0; i < tab->n_slots; i++) {
        struct conn_slot *sl = &tab->slots[i];

        if (sl->fd < 0 || !sl->started || sl->trusted || sl->evicted)
            continue;
        if (oldest == NULL || sl->seq < oldest->seq)
            oldest = sl;
    }
    if (oldest == NULL)
        return 0;
    shutdown(oldest->fd, SHUT_RDWR);
    oldest->evicted = 1;
    tab->active--;
    return 1;
}

/* Takes a slot of tab for fd, dropping an unauthenticated connection when
 * full; -1 when none is left (the caller closes fd) or the server stops. */
static int conn_slot_take(struct http_server *srv, struct conn_table *tab,
                          int fd, int started)
{
    int slot = -1;
    int i;

    pthread_mutex_lock(&srv->conn_lock);
    if (srv->stopping)
        goto out;
    if (tab->active >= tab->max_active && !conn_evict_locked(tab))
        goto out;
    for (i = 0; i < tab->n_slots; i++) {
        struct conn_slot *sl = &tab->slots[i];

        if (sl->fd >= 0)
            continue;
        memset(sl, 0, sizeof(*sl));
        sl->fd = fd;
        sl->started = started;
        sl->seq = ++srv->conn_seq;
        tab->active++;
        slot = i;
        break;
    }
out:
    pthread_mutex_unlock(&srv->conn_lock);
    return slot;
}

static void conn_slot_free(struct http_server *srv, struct conn_table *tab,
                           int slot)
{
    struct conn_slot *sl = &tab->slots[slot];

    pthread_mutex_lock(&srv->conn_lock);
    if (sl->fd >= 0 && !sl->evicted)
        tab->active--;
    sl->fd = -1;
    pthread_mutex_unlock(&srv->conn_lock);
}

void http_conn_trust(struct http_server *srv, struct conn_table *tab, int slot)
{
    if (slot < 0 || slot >= tab->n_slots)
        return;
    pthread_mutex_lock(&srv->conn_lock);
    tab->slots[slot].trusted = 1;
    pthread_mutex_unlock(&srv->conn_lock);
}

void http_server_set_authorizer(struct http_server *srv,
                                int (*fn)(void *ud,
                                          const struct http_request *req))
{
    srv->authorize = fn;
}

int http_authorized(struct http_server *srv, const struct http_request *req)
{
    return srv->authorize == NULL || srv->authorize(srv->ud, req) == 0;
}

/* ----------------------------------------------------------- HTTP/1.1 */

struct mhd_req {
    struct http_request req;
    size_t limit;
};

/* Connections whose head has not authenticated yet are closed after this
 * long without traffic; authenticated ones (kept-alive SDK pools) after
 * HTTP_IDLE_TIMEOUT_S. */
#define HTTP_HEAD_TIMEOUT_S 30
#define HTTP_IDLE_TIMEOUT_S 120

struct mhd_stream {
    struct http_response resp;
    int fd; /* the client socket, to notice a client that went away */
};

static int client_gone(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLRDHUP};

    if (fd < 0)
        return 0;
    return poll(&pfd, 1, 0) > 0 &&
           (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

static ssize_t mhd_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct mhd_stream *st = cls;
    ssize_t n;

    (void)pos;
    /* Thread-per-connection: blocking here only holds this connection. */
    for (;;) {
        n = st->resp.stream(st->resp.stream_ctx, buf, max);
        if (n != HTTP_STREAM_AGAIN)
            break;
        if (client_gone(st->fd))
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void mhd_stream_free(void *cls)
{
    struct mhd_stream *st = cls;

    http_response_clear(&st->resp);
    free(st);
}

static enum MHD_Result mhd_collect_header(void *cls, enum MHD_ValueKind kind,
                                          const char *key, const char *value)
{
    struct http_request *req = cls;
    char *lower = NULL;
    size_t i;

    lower = strdup(key);
    if (lower == NULL)
        return MHD_NO;
    for (i = 0; lower[i] != '\0'; i++)
        lower[i] = (char)tolower((unsigned char)lower[i]);
    if (kind == MHD_HEADER_KIND)
        http_kv_append(&req->headers, &req->n_headers, lower, value);
    else
        http_kv_append(&req->query, &req->n_query, key, value);
    free(lower);
    return MHD_YES;
}

size_t http_body_limit(const struct http_request *req)
{
    const char *content_type = http_request_header(req, "content-type");

    /* Uploads: multipart file bodies and PUTs of raw bytes (objects). */
    if (content_type != NULL &&
        strncasecmp(content_type, "multipart/", 10) == 0)
        return HTTP_MAX_UPLOAD_BODY;
    if (req->method != NULL && strcmp(req->method, "PUT") == 0)
        return HTTP_MAX_UPLOAD_BODY;
    return HTTP_MAX_JSON_BODY;
}

size_t http_body_buffered(void)
{
    return __atomic_load_n(&body_buffered, __ATOMIC_RELAXED);
}

/* Takes more bytes from the global body budget; 0 when it is spent. */
static int body_reserve(size_t more)
{
    size_t now = __atomic_add_fetch(&body_buffered, more, __ATOMIC_RELAXED);

    if (now <= HTTP_MAX_BUFFERED)
        return 1;
    __atomic_sub_fetch(&body_buffered, more, __ATOMIC_RELAXED);
    return 0;
}

/* The next buffer size: the announced length when known, else doubling,
 * never past limit (+1 for the NUL). */
static size_t body_next_cap(const struct http_request *req, size_t limit,
                            size_t need)
{
    const char *cl = http_request_header(req, "content-length");
    size_t cap = req->body_cap ? req->body_cap : 16384;
    unsigned long long announced = cl != NULL ? strtoull(cl, NULL, 10) : 0;

    if (announced >= need && announced <= limit && req->body_cap == 0)
        return (size_t)announced + 1;
    while (cap < need)
        cap *= 2; /* geometric: large uploads stay linear */
    return cap > limit + 1 ? limit + 1 : cap;
}

int http_body_append(struct http_request *req, size_t limit, const char *data,
                     size_t len)
{
    char *grown = NULL;

    if (req->body_too_large || req->body_busy)
        return 0;
    if (req->body_len + len > limit) {
        req->body_too_large = 1;
        return 0;
    }
    if (req->body_len + len + 1 > req->body_cap) {
        size_t cap = body_next_cap(req, limit, req->body_len + len + 1);

        if (!body_reserve(cap - req->body_cap)) {
            req->body_busy = 1;
            return 0;
        }
        grown = realloc(req->body, cap);
        if (grown == NULL) {
            __atomic_sub_fetch(&body_buffered, cap - req->body_cap,
                               __ATOMIC_RELAXED);
            return -1;
        }
        req->body = grown;
        req->body_cap = cap;
    }
    memcpy(req->body + req->body_len, data, len);
    req->body_len += len;
    req->body[req->body_len] = '\0';
    return 0;
}

static int mhd_is_unix(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = NULL;

    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci == NULL || ci->client_addr == NULL)
        return 0;
    return ci->client_addr->sa_family == AF_UNIX;
}

static enum MHD_Result mhd_queue(struct MHD_Connection *conn,
                                 struct http_response *resp)
{
    struct MHD_Response *mr = NULL;
    struct mhd_stream *st = NULL;
    const union MHD_ConnectionInfo *ci = NULL;
    enum MHD_Result ret;
    size_t i;

    if (resp->stream != NULL) {
        st = calloc(1, sizeof(*st));
        if (st == NULL)
            return MHD_NO;
        st->resp = *resp;
        memset(resp, 0, sizeof(*resp));
        ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        st->fd = ci != NULL ? ci->connect_fd : -1;
        mr = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, 64 * 1024, mhd_stream_read, st, mhd_stream_free);
        if (mr == NULL) {
            mhd_stream_free(st);
            return MHD_NO;
        }
        resp = &st->resp;
    } else {
        mr = MHD_create_response_from_buffer(resp->body_len, resp->body,
                                             MHD_RESPMEM_MUST_FREE);
        if (mr == NULL)
            return MHD_NO;
        resp->body = NULL;
    }
    for (i = 0; i < resp->n_headers; i++)
        MHD_add_response_header(mr, resp->headers[i].name,
                                resp->headers[i].value);
    ret = MHD_queue_response(conn, (unsigned int)resp->status, mr);
    MHD_destroy_response(mr);
    return ret;
}

static void mhd_trust(struct http_server *srv, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = NULL;
    struct conn_slot *slot = NULL;

    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    slot = ci != NULL ? ci->socket_context : NULL;
    if (slot == NULL || slot->trusted)
        return;
    http_conn_trust(srv, &srv->h1_tab, (int)(slot - srv->h1_slots));
    MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                              (unsigned int)HTTP_IDLE_TIMEOUT_S);
}

/* Ties libmicrohttpd's connection to the slot devboxd reserved for its fd,
 * and frees the slot when the library is done with it: the library calls
 * CLOSED before it closes the fd, so a slot's fd is always still open while
 * conn_lock is held. */
static void mhd_notify(void *cls, struct MHD_Connection *conn,
                       void **socket_context,
                       enum MHD_ConnectionNotificationCode toe)
{
    struct http_server *srv = cls;
    const union MHD_ConnectionInfo *ci = NULL;
    struct conn_slot *slot = *socket_context;
    int fd;
    int i;

    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (slot != NULL)
            conn_slot_free(srv, &srv->h1_tab, (int)(slot - srv->h1_slots));
        *socket_context = NULL;
        return;
    }
    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    fd = ci != NULL ? ci->connect_fd : -1;
    pthread_mutex_lock(&srv->conn_lock);
    for (i = 0; i < srv->h1_tab.n_slots; i++) {
        if (srv->h1_slots[i].fd == fd && fd >= 0 && !srv->h1_slots[i].started) {
            srv->h1_slots[i].started = 1;
            *socket_context = &srv->h1_slots[i];
            break;
        }
    }
    pthread_mutex_unlock(&srv->conn_lock);
}

static enum MHD_Result mhd_access(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct http_server *srv = cls;
    struct mhd_req *mr = *con_cls;
    struct http_response resp;
    enum MHD_Result ret;

    (void)version;
    if (mr == NULL) {
        mr = calloc(1, sizeof(*mr));
        if (mr == NULL)
            return MHD_NO;
        mr->req.method = strdup(method);
        mr->req.path = strdup(url);
        MHD_get_connection_values(conn, MHD_HEADER_KIND, mhd_collect_header,
                                  &mr->req);
        MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND,
                                  mhd_collect_header, &mr->req);
        mr->limit = http_body_limit(&mr->req);
        mr->req.trusted = mhd_is_unix(conn);
        *con_cls = mr;
        if (!http_authorized(srv, &mr->req)) {
            /* Answered (401) before any body byte is read or buffered. */
            memset(&resp, 0, sizeof(resp));
            http_dispatch(srv, &mr->req, &resp);
            ret = mhd_queue(conn, &resp);
            http_response_clear(&resp);
            return ret;
        }
        mhd_trust(srv, conn);
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        if (http_body_append(&mr->req, mr->limit, upload_data,
                             *upload_data_size) != 0)
            return MHD_NO;
        *upload_data_size = 0;
        return MHD_YES;
    }
    memset(&resp, 0, sizeof(resp));
    http_dispatch(srv, &mr->req, &resp);
    ret = mhd_queue(conn, &resp);
    http_response_clear(&resp);
    return ret;
}

static void mhd_completed(void *cls, struct MHD_Connection *conn,
                          void **con_cls, enum MHD_RequestTerminationCode toe)
{
    struct mhd_req *mr = *con_cls;

    (void)cls;
    (void)conn;
    (void)toe;
    if (mr == NULL)
        return;
    http_request_clear(&mr->req);
    free(mr);
    *con_cls = NULL;
}

/* --------------------------------------------------------- listen/accept */

struct http_server *http_server_new(http_handler_fn handler, void *ud,
                                    char *err, size_t errlen)
{
    struct http_server *srv = NULL;

    srv = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    srv->handler = handler;
    srv->ud = ud;
    pthread_mutex_init(&srv->conn_lock, NULL);
    pthread_cond_init(&srv->conn_cond, NULL);
    srv->conn_tab.slots = srv->conn_slots;
    srv->conn_tab.n_slots = HTTP_CONN_SLOTS;
    srv->conn_tab.max_active = HTTP_MAX_CONNS;
    for (size_t i = 0; i < HTTP_CONN_SLOTS; i++)
        srv->conn_slots[i].fd = -1;
    srv->h1_tab.slots = srv->h1_slots;
    srv->h1_tab.n_slots = HTTP_H1_SLOTS;
    srv->h1_tab.max_active = HTTP_MAX_H1;
    for (size_t i = 0; i < HTTP_H1_SLOTS; i++)
        srv->h1_slots[i].fd = -1;
    if (pipe2(srv->stop_pipe, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        free(srv);
        return NULL;
    }
    return srv;
}

static int listen_unix(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sun;
    int fd = -1;
    mode_t old_umask;

    if (strlen(path) >= sizeof(sun.sun_path)) {
        snprintf(err, errlen,
                 "unix socket path '%s' is too long (max %zu bytes)", path,
                 sizeof(sun.sun_path) - 1);
        return -1;
    }
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    strcpy(sun.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    unlink(
        path); /* stale socket of a previous run; the state-dir lock is held */
    old_umask =
        umask(077); /* the socket is born 0600: it is the access control */
    if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
        umask(old_umask);
        snprintf(err, errlen, "cannot bind unix socket '%s': %s", path,
                 strerror(errno));
        close(fd);
        return -1;
    }
    umask(old_umask);
    chmod(path, 0600);
    /* The kernel's largest backlog: on a unix socket a full backlog fails
     * connect() with EAGAIN at once (TCP retries), so a flood that devboxd
     * has not yet accepted must not refuse a client that comes after it. */
    if (listen(fd, SOMAXCONN) != 0) {
        snprintf(err, errlen, "listen on '%s': %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static const struct util_listen_words listen_words = {
    .option = "--listen",
    .form = "unix:PATH or HOST:PORT (e.g. 127.0.0.1:0)",
    .exposes = "devboxd serves sandboxes with command execution",
    .purpose = "",
};

int http_server_listen(struct http_server *srv, const char *spec,
                       int allow_non_loopback, int *bound_port, char *err,
                       size_t errlen)
{
    int fd;
    int is_unix = strncmp(spec, "unix:", 5) == 0;

    *bound_port = 0;
    if (srv->n_listen >= HTTP_MAX_LISTEN) {
        snprintf(err, errlen, "at most %d --listen addresses", HTTP_MAX_LISTEN);
        return -1;
    }
    if (is_unix)
        fd = listen_unix(spec + 5, err, errlen);
    else
        fd = util_listen_tcp(spec, &listen_words, allow_non_loopback,
                             bound_port, err, errlen);
    if (fd < 0)
        return -1;
    srv->listen_fds[srv->n_listen] = fd;
    srv->listen_unix[srv->n_listen] = is_unix;
    srv->n_listen++;
    return 0;
}

struct conn_job {
    struct http_server *srv;
    int slot; /* index in srv->conn_tab */
    int fd;
    int is_unix;
    struct sockaddr_storage addr;
    socklen_t addrlen;
};

/* Reads the first bytes without consuming them: the HTTP/2 preface means
 * prior-knowledge h2c, anything else is HTTP/1.1. */
static int sniff_h2(int fd)
{
    char buf[H2_PREFACE_LEN];
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int waited = 0;

    for (;;) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK);

        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        if (n == 0)
            return -1;
        if (n > 0 && memcmp(buf, h2_preface, (size_t)n) != 0)
            return 0;
        if (n == H2_PREFACE_LEN)
            return 1;
        if (waited >= SNIFF_TIMEOUT_MS)
            return -1;
        /* Partial match: wait for more bytes (poll returns at once while
         * any byte is unread, so nap briefly between peeks). */
        if (n > 0)
            usleep(2000), waited += 2;
        else if (poll(&pfd, 1, 100) >= 0)
            waited += 100;
    }
}

/* Gives an HTTP/1.1 connection to libmicrohttpd within devboxd's own
 * limit, so the library's limit is never what refuses it. */
static void hand_to_mhd(struct conn_job *job)
{
    struct http_server *srv = job->srv;
    int slot;

    slot = conn_slot_take(srv, &srv->h1_tab, job->fd, 0);
    if (slot < 0) {
        close(job->fd);
        return;
    }
    if (MHD_add_connection(srv->mhd, job->fd, (struct sockaddr *)&job->addr,
                           job->addrlen) == MHD_YES)
        return;
    /* The library closed the fd already (it always does on failure). */
    pthread_mutex_lock(&srv->conn_lock);
    if (!srv->h1_slots[slot].started) {
        if (!srv->h1_slots[slot].evicted)
            srv->h1_tab.active--;
        srv->h1_slots[slot].fd = -1;
    }
    pthread_mutex_unlock(&srv->conn_lock);
}

static void *conn_thread(void *arg)
{
    struct conn_job *job = arg;
    int kind;
    int flags;

    flags = fcntl(job->fd, F_GETFL);
    fcntl(job->fd, F_SETFL, flags | O_NONBLOCK);
    kind = sniff_h2(job->fd);
    if (kind == 1)
        h2_serve_connection(job->srv, job->fd, job->slot, job->is_unix);
    /* Out of the table before the fd is closed or handed to libmicrohttpd,
     * so neither eviction nor http_server_stop shuts down a reused fd. */
    conn_slot_free(job->srv, &job->srv->conn_tab, job->slot);
    if (kind == 0)
        hand_to_mhd(job);
    else
        close(job->fd);
    http_server_release(job->srv);
    free(job);
    return NULL;
}

int http_server_hold(struct http_server *srv)
{
    int rc = -1;

    pthread_mutex_lock(&srv->conn_lock);
    if (!srv->stopping) {
        srv->conns++;
        rc = 0;
    }
    pthread_mutex_unlock(&srv->conn_lock);
    return rc;
}

void http_server_release(struct http_server *srv)
{
    pthread_mutex_lock(&srv->conn_lock);
    srv->conns--;
    pthread_cond_broadcast(&srv->conn_cond);
    pthread_mutex_unlock(&srv->conn_lock);
}

/* Takes a connection slot (and a hold) for fd; -1 when no slot is left or
 * the server is stopping. */
static int conn_register(struct http_server *srv, int fd)
{
    int slot;

    if (http_server_hold(srv) != 0)
        return -1;
    slot = conn_slot_take(srv, &srv->conn_tab, fd, 1);
    if (slot < 0)
        http_server_release(srv);
    return slot;
}

int http_server_serve_h2(struct http_server *srv, int fd)
{
    int slot = conn_register(srv, fd);

    if (slot < 0)
        return -1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    h2_serve_connection(srv, fd, slot, 0);
    conn_slot_free(srv, &srv->conn_tab, slot);
    http_server_release(srv);
    return 0;
}

static void spawn_conn(struct http_server *srv, int lfd, int is_unix)
{
    struct conn_job *job = NULL;

    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return;
    job->addrlen = sizeof(job->addr);
    job->fd = accept4(lfd, (struct sockaddr *)&job->addr, &job->addrlen,
                      SOCK_CLOEXEC);
    if (job->fd < 0) {
        free(job);
        if (errno == EMFILE || errno == ENFILE)
            usleep(10000); /* let connections drain rather than spin */
        return;
    }
    if (is_unix) {
        /* MHD wants a non-empty address; an AF_UNIX family marks trust. */
        job->addr.ss_family = AF_UNIX;
        job->addrlen = sizeof(sa_family_t) + 1;
    }
    job->slot = conn_register(srv, job->fd);
    if (job->slot < 0) {
        close(job->fd);
        free(job);
        return;
    }
    job->srv = srv;
    job->is_unix = is_unix;
    if (util_thread_detached(conn_thread, job, 256 * 1024) != 0) {
        conn_slot_free(srv, &srv->conn_tab, job->slot);
        http_server_release(srv);
        close(job->fd);
        free(job);
    }
}

static void *accept_loop(void *arg)
{
    struct http_server *srv = arg;
    struct pollfd pfds[HTTP_MAX_LISTEN + 1];
    size_t i;

    for (;;) {
        for (i = 0; i < srv->n_listen; i++) {
            pfds[i].fd = srv->listen_fds[i];
            pfds[i].events = POLLIN;
            pfds[i].revents = 0;
        }
        pfds[srv->n_listen].fd = srv->stop_pipe[0];
        pfds[srv->n_listen].events = POLLIN;
        pfds[srv->n_listen].revents = 0;
        if (poll(pfds, srv->n_listen + 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pfds[srv->n_listen].revents != 0)
            break;
        for (i = 0; i < srv->n_listen; i++) {
            if (pfds[i].revents & POLLIN)
                spawn_conn(srv, srv->listen_fds[i], srv->listen_unix[i]);
        }
    }
    return NULL;
}

int http_server_start(struct http_server *srv, char *err, size_t errlen)
{
    srv->mhd = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
            MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | MHD_USE_POLL,
        0, NULL, NULL, mhd_access, srv, MHD_OPTION_NOTIFY_COMPLETED,
        mhd_completed, srv, MHD_OPTION_NOTIFY_CONNECTION, mhd_notify, srv,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTP_HEAD_TIMEOUT_S,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_MHD_LIMIT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 * 1024),
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024), MHD_OPTION_END);
    if (srv->mhd == NULL) {
        snprintf(err, errlen,
                 "cannot start the HTTP/1.1 engine (libmicrohttpd)");
        return -1;
    }
    if (pthread_create(&srv->accept_thread, NULL, accept_loop, srv) != 0) {
        snprintf(err, errlen, "cannot start the accept thread");
        return -1;
    }
    srv->accept_started = 1;
    return 0;
}

/* Ends the sniffing and HTTP/2 connections and waits (bounded) for them
 * and their request workers; returns whether all ended. */
static int stop_connections(struct http_server *srv)
{
    struct timespec deadline;
    int i;
    int all;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&srv->conn_lock);
    srv->stopping = 1;
    for (i = 0; i < HTTP_CONN_SLOTS; i++) {
        if (srv->conn_slots[i].fd >= 0)
            shutdown(srv->conn_slots[i].fd, SHUT_RDWR);
    }
    while (srv->conns > 0) {
        if (pthread_cond_timedwait(&srv->conn_cond, &srv->conn_lock,
                                   &deadline) != 0)
            break;
    }
    all = srv->conns == 0;
    pthread_mutex_unlock(&srv->conn_lock);
    return all;
}

void http_server_stop(struct http_server *srv)
{
    size_t i;
    int all;

    if (srv == NULL)
        return;
    if (srv->accept_started) {
        if (write(srv->stop_pipe[1], "x", 1) < 0) {
            /* the accept thread then only stops at exit */
        }
        pthread_join(srv->accept_thread, NULL);
    }
    for (i = 0; i < srv->n_listen; i++)
        close(srv->listen_fds[i]);
    all = stop_connections(srv);
    if (srv->mhd != NULL)
        MHD_stop_daemon(srv->mhd);
    close(srv->stop_pipe[0]);
    close(srv->stop_pipe[1]);
    if (!all) {
        /* A thread still uses srv: leave it allocated (process exit). */
        fprintf(stderr, "devboxd: HTTP/2 connections still busy at shutdown\n");
        return;
    }
    pthread_mutex_destroy(&srv->conn_lock);
    pthread_cond_destroy(&srv->conn_cond);
    free(srv);
}
