/* Cleartext HTTP/2 (prior knowledge) with libnghttp2. One thread per
 * connection runs the nghttp2 session over a poll loop; each request runs
 * on its own worker thread so a long-poll on one stream never blocks the
 * others. Workers hand response bytes to the connection through a per-stream
 * buffer and wake the loop through an eventfd; deferred data providers are
 * resumed there. */
#define _GNU_SOURCE
#include "http_internal.h"
#include "util.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define H2_STREAM_BUF_MAX (256 * 1024) /* back-pressure for streamed bodies */
#define H2_OUT_HIGH (256 * 1024)
/* Request handlers running for one connection. A stream reset by the client
 * closes at once for nghttp2 (and no longer counts against
 * MAX_CONCURRENT_STREAMS) while its handler may still be blocked in a
 * long-poll: without this cap, open-and-reset loops pile up threads. */
#define H2_MAX_WORKERS 256
/* Request header bytes (names + values) and fields kept per stream; a
 * request over either is answered 431 without reaching the handler. */
#define H2_MAX_HEADER_BYTES (64 * 1024)
#define H2_MAX_HEADERS 128
/* Request body bytes one connection may have buffered for requests still
 * arriving (beyond: 503), and how long such a request may stall: a stream
 * whose body gets no byte for that long is answered 408 and reset (its
 * bytes freed, the connection's other streams go on); a connection stuck
 * in an incomplete request head that long is closed. */
#define H2_CONN_BODY_MAX ((size_t)HTTP_MAX_UPLOAD_BODY + HTTP_MAX_JSON_BODY)
#define H2_BODY_STALL_MS 30000

struct h2_conn;

struct h2_stream {
    struct h2_conn *conn;
    int32_t id;
    int refs;
    size_t limit;
    struct http_request req;
    size_t header_bytes;
    int headers_too_large;
    int refused;   /* failed authorization: answered at once, body ignored */
    int head_done; /* the request head is complete */
    int stalled;   /* body stalled: answered 408, then reset */
    int64_t last_recv_ms; /* last byte of this stream's head or body */
    size_t counted;       /* body bytes counted in conn->receiving */
    int dispatched;
    /* Response side, guarded by conn->lock. */
    int resp_ready;
    int submitted;
    int deferred;
    int eof;
    int aborted;
    int peer_closed;
    int status;
    struct http_kv headers[HTTP_MAX_RESP_HEADERS];
    size_t n_headers;
    char *buf;
    size_t buf_len;
    size_t buf_off;
    pthread_cond_t space;
    struct h2_stream *next; /* live streams, owned by the connection thread */
};

struct h2_conn {
    pthread_mutex_t lock;
    int refs;
    int workers; /* stream_worker threads alive, guarded by lock */
    int fd;
    int evfd;
    int trusted;
    int slot; /* in srv->conn_tab */
    struct http_server *srv;
    nghttp2_session *session;
    struct h2_stream *streams;
    size_t receiving; /* body bytes of requests still arriving */
    int64_t last_recv_ms;
    char *out;
    size_t out_len;
    size_t out_off;
};

static void conn_unref(struct h2_conn *c)
{
    int last;

    pthread_mutex_lock(&c->lock);
    last = --c->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (!last)
        return;
    close(c->evfd);
    free(c->out);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void stream_unref(struct h2_stream *st)
{
    struct h2_conn *c = st->conn;
    int last;
    size_t i;

    pthread_mutex_lock(&c->lock);
    last = --st->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (!last)
        return;
    http_request_clear(&st->req);
    for (i = 0; i < st->n_headers; i++) {
        free(st->headers[i].name);
        free(st->headers[i].value);
    }
    free(st->buf);
    pthread_cond_destroy(&st->space);
    free(st);
    conn_unref(c);
}

static void conn_wake(struct h2_conn *c)
{
    uint64_t one = 1;

    if (write(c->evfd, &one, sizeof(one)) < 0) {
        /* counter saturated: the loop is awake anyway */
    }
}

/* Appends bytes for the connection thread to send; blocks while the
 * stream's buffer is full. Returns -1 once the peer has gone. */
static int stream_push(struct h2_stream *st, const char *data, size_t len)
{
    struct h2_conn *c = st->conn;
    char *grown = NULL;
    int rc = -1;

    pthread_mutex_lock(&c->lock);
    while (!st->peer_closed && st->buf_len - st->buf_off > H2_STREAM_BUF_MAX)
        pthread_cond_wait(&st->space, &c->lock);
    if (st->peer_closed)
        goto out;
    /* Sent bytes leave the front once drained or once there are many: a
     * reader that never quite catches up would otherwise grow the buffer
     * to the whole body (40 MiB for a 40 MiB build log). */
    if (st->buf_off > 0 &&
        (st->buf_off == st->buf_len || st->buf_off >= H2_STREAM_BUF_MAX)) {
        memmove(st->buf, st->buf + st->buf_off, st->buf_len - st->buf_off);
        st->buf_len -= st->buf_off;
        st->buf_off = 0;
    }
    grown = realloc(st->buf, st->buf_len + len);
    if (grown == NULL)
        goto out;
    st->buf = grown;
    memcpy(st->buf + st->buf_len, data, len);
    st->buf_len += len;
    rc = 0;
out:
    pthread_mutex_unlock(&c->lock);
    conn_wake(c);
    return rc;
}

static void stream_finish(struct h2_stream *st, int aborted)
{
    pthread_mutex_lock(&st->conn->lock);
    st->eof = 1;
    st->aborted = aborted;
    pthread_mutex_unlock(&st->conn->lock);
    conn_wake(st->conn);
}

static int stream_gone(struct h2_stream *st)
{
    int gone;

    pthread_mutex_lock(&st->conn->lock);
    gone = st->peer_closed;
    pthread_mutex_unlock(&st->conn->lock);
    return gone;
}

static void stream_pump(struct h2_stream *st, struct http_response *resp)
{
    char *chunk = NULL;
    int aborted = 0;

    chunk = malloc(64 * 1024);
    if (chunk == NULL) {
        stream_finish(st, 1);
        return;
    }
    for (;;) {
        ssize_t n = resp->stream(resp->stream_ctx, chunk, 64 * 1024);

        if (n == HTTP_STREAM_AGAIN) {
            if (stream_gone(st))
                break;
            continue;
        }
        if (n <= 0) {
            aborted = n < 0;
            break;
        }
        if (stream_push(st, chunk, (size_t)n) != 0)
            break;
    }
    free(chunk);
    stream_finish(st, aborted);
}

static void headers_too_large(struct http_response *resp)
{
    http_response_error(
        resp, 431,
        "request headers are too large: send at most %d header fields "
        "and %d KiB of header data",
        H2_MAX_HEADERS, H2_MAX_HEADER_BYTES / 1024);
}

/* Hands resp's status, headers and (unless streamed) body to the
 * connection thread, which submits them. */
static void stream_take_response(struct h2_stream *st,
                                 struct http_response *resp)
{
    struct h2_conn *c = st->conn;
    size_t i;

    pthread_mutex_lock(&c->lock);
    st->status = resp->status;
    for (i = 0; i < resp->n_headers; i++) {
        st->headers[i] = resp->headers[i];
        resp->headers[i].name = NULL;
        resp->headers[i].value = NULL;
    }
    st->n_headers = resp->n_headers;
    resp->n_headers = 0;
    if (resp->stream == NULL) {
        st->buf = resp->body;
        st->buf_len = resp->body_len;
        resp->body = NULL;
        st->eof = 1;
    }
    st->resp_ready = 1;
    pthread_mutex_unlock(&c->lock);
    conn_wake(c);
}

static void *stream_worker(void *arg)
{
    struct h2_stream *st = arg;
    struct h2_conn *c = st->conn;
    struct http_server *srv = c->srv;
    struct http_response resp;

    memset(&resp, 0, sizeof(resp));
    if (st->headers_too_large)
        headers_too_large(&resp);
    else
        http_dispatch(srv, &st->req, &resp);
    stream_take_response(st, &resp);
    if (resp.stream != NULL)
        stream_pump(st, &resp);
    http_response_clear(&resp);
    pthread_mutex_lock(&c->lock);
    c->workers--;
    pthread_mutex_unlock(&c->lock);
    stream_unref(st);
    http_server_release(srv); /* last: srv may be freed once released */
    return NULL;
}

static void stream_dispatch(struct h2_stream *st)
{
    if (st->dispatched)
        return;
    st->dispatched = 1;
    st->conn->receiving -= st->counted;
    st->counted = 0;
    pthread_mutex_lock(&st->conn->lock);
    if (st->conn->workers >= H2_MAX_WORKERS ||
        http_server_hold(st->conn->srv) != 0) {
        pthread_mutex_unlock(&st->conn->lock);
        nghttp2_submit_rst_stream(st->conn->session, NGHTTP2_FLAG_NONE, st->id,
                                  NGHTTP2_REFUSED_STREAM);
        return;
    }
    st->conn->workers++;
    st->refs++;
    pthread_mutex_unlock(&st->conn->lock);
    if (util_thread_detached(stream_worker, st, 512 * 1024) != 0) {
        nghttp2_submit_rst_stream(st->conn->session, NGHTTP2_FLAG_NONE, st->id,
                                  NGHTTP2_REFUSED_STREAM);
        pthread_mutex_lock(&st->conn->lock);
        st->conn->workers--;
        pthread_mutex_unlock(&st->conn->lock);
        http_server_release(st->conn->srv);
        stream_unref(st);
    }
}

/* ------------------------------------------------------ nghttp2 callbacks */

static ssize_t data_read_cb(nghttp2_session *session, int32_t stream_id,
                            uint8_t *buf, size_t length, uint32_t *data_flags,
                            nghttp2_data_source *source, void *user_data)
{
    struct h2_stream *st = source->ptr;
    struct h2_conn *c = user_data;
    size_t avail;
    size_t n;
    ssize_t rc;

    (void)session;
    (void)stream_id;
    pthread_mutex_lock(&c->lock);
    avail = st->buf_len - st->buf_off;
    if (avail == 0) {
        if (st->aborted) {
            rc = NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        } else if (st->eof) {
            *data_flags |= NGHTTP2_DATA_FLAG_EOF;
            rc = 0;
        } else {
            st->deferred = 1;
            rc = NGHTTP2_ERR_DEFERRED;
        }
        goto out;
    }
    n = avail < length ? avail : length;
    memcpy(buf, st->buf + st->buf_off, n);
    st->buf_off += n;
    if (st->buf_off == st->buf_len && st->eof && !st->aborted)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    pthread_cond_signal(&st->space);
    rc = (ssize_t)n;
out:
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static int submit_response(struct h2_conn *c, struct h2_stream *st)
{
    nghttp2_nv nva[HTTP_MAX_RESP_HEADERS + 1];
    nghttp2_data_provider prd;
    char status[8];
    size_t i;
    size_t n = 0;
    int has_body;

    snprintf(status, sizeof(status), "%d", st->status);
    nva[n].name = (uint8_t *)":status";
    nva[n].namelen = 7;
    nva[n].value = (uint8_t *)status;
    nva[n].valuelen = strlen(status);
    nva[n].flags = NGHTTP2_NV_FLAG_NONE;
    n++;
    for (i = 0; i < st->n_headers; i++, n++) {
        nva[n].name = (uint8_t *)st->headers[i].name;
        nva[n].namelen = strlen(st->headers[i].name);
        nva[n].value = (uint8_t *)st->headers[i].value;
        nva[n].valuelen = strlen(st->headers[i].value);
        nva[n].flags = NGHTTP2_NV_FLAG_NONE;
    }
    pthread_mutex_lock(&c->lock);
    has_body = !(st->eof && st->buf_len == 0);
    pthread_mutex_unlock(&c->lock);
    prd.source.ptr = st;
    prd.read_callback = data_read_cb;
    return nghttp2_submit_response(c->session, st->id, nva, n,
                                   has_body ? &prd : NULL);
}

/* Runs on the connection thread after an eventfd wake-up. */
static void conn_service_streams(struct h2_conn *c)
{
    struct h2_stream *st;

    for (st = c->streams; st != NULL; st = st->next) {
        int do_submit = 0;
        int do_resume = 0;

        pthread_mutex_lock(&c->lock);
        if (st->resp_ready && !st->submitted) {
            st->submitted = 1;
            do_submit = 1;
        } else if (st->submitted && st->deferred &&
                   (st->buf_len > st->buf_off || st->eof)) {
            st->deferred = 0;
            do_resume = 1;
        }
        pthread_mutex_unlock(&c->lock);
        if (do_submit && submit_response(c, st) != 0)
            nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, st->id,
                                      NGHTTP2_INTERNAL_ERROR);
        if (do_resume)
            nghttp2_session_resume_data(c->session, st->id);
    }
}

static int on_begin_headers(nghttp2_session *session,
                            const nghttp2_frame *frame, void *user_data)
{
    struct h2_conn *c = user_data;
    struct h2_stream *st = NULL;

    if (frame->hd.type != NGHTTP2_HEADERS ||
        frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->conn = c;
    st->id = frame->hd.stream_id;
    st->refs = 1;
    st->req.trusted = c->trusted;
    st->last_recv_ms = util_now_ms();
    pthread_cond_init(&st->space, NULL);
    pthread_mutex_lock(&c->lock);
    c->refs++;
    pthread_mutex_unlock(&c->lock);
    st->next = c->streams;
    c->streams = st;
    nghttp2_session_set_stream_user_data(session, st->id, st);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame,
                     const uint8_t *name, size_t namelen, const uint8_t *value,
                     size_t valuelen, uint8_t flags, void *user_data)
{
    struct h2_stream *st = NULL;
    char *q = NULL;

    (void)flags;
    (void)user_data;
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (st == NULL || st->headers_too_large)
        return 0;
    st->header_bytes += namelen + valuelen;
    if (st->header_bytes > H2_MAX_HEADER_BYTES ||
        st->req.n_headers >= H2_MAX_HEADERS) {
        st->headers_too_large = 1; /* answered 431 once the request ends */
        return 0;
    }
    if (strcmp((const char *)name, ":method") == 0) {
        free(st->req.method);
        st->req.method = strdup((const char *)value);
    } else if (strcmp((const char *)name, ":path") == 0) {
        free(st->req.path);
        free(st->req.target);
        st->req.path = strdup((const char *)value);
        st->req.target = strdup((const char *)value);
        if (st->req.path == NULL || st->req.target == NULL)
            return NGHTTP2_ERR_CALLBACK_FAILURE;
        q = strchr(st->req.path, '?');
        if (q != NULL) {
            *q = '\0';
            http_parse_query(&st->req, q + 1);
        }
        http_url_decode(st->req.path, 0);
    } else if (strcmp((const char *)name, ":authority") == 0) {
        /* HTTP/2's Host (RFC 9113 8.3.1): handlers read "host". */
        http_kv_append(&st->req.headers, &st->req.n_headers, "host",
                       (const char *)value);
    } else if (name[0] != ':') {
        http_kv_append(&st->req.headers, &st->req.n_headers, (const char *)name,
                       (const char *)value);
    }
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags,
                         int32_t stream_id, const uint8_t *data, size_t len,
                         void *user_data)
{
    struct h2_stream *st = NULL;

    (void)flags;
    (void)user_data;
    st = nghttp2_session_get_stream_user_data(session, stream_id);
    if (st == NULL || st->refused || st->dispatched)
        return 0;
    st->last_recv_ms = util_now_ms();
    if (st->limit == 0)
        st->limit = http_body_limit(&st->req);
    /* Past its own limit a body is a 413 (nothing more buffered); else it
     * counts against the connection's share. */
    if (st->req.body_len + len <= st->limit && !st->req.body_too_large) {
        if (st->conn->receiving + len > H2_CONN_BODY_MAX)
            st->req.body_busy = 1; /* answered 503; nothing more buffered */
        if (!st->req.body_busy) {
            st->conn->receiving += len;
            st->counted += len;
        }
    }
    if (http_body_append(&st->req, st->limit, (const char *)data, len) != 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    return 0;
}

/* A complete request head: credentials are checked before any body is
 * read, and a failing request is answered (401) at once. */
static void on_request_head(struct h2_conn *c, struct h2_stream *st)
{
    st->head_done = 1;
    st->last_recv_ms = util_now_ms();
    if (st->headers_too_large || st->req.method == NULL || st->req.path == NULL)
        return;
    if (http_authorized(c->srv, &st->req)) {
        http_conn_trust(c->srv, &c->srv->conn_tab, c->slot);
        return;
    }
    st->refused = 1;
    stream_dispatch(st);
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame,
                         void *user_data)
{
    struct h2_stream *st = NULL;

    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (st == NULL)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS &&
        frame->headers.cat == NGHTTP2_HCAT_REQUEST)
        on_request_head(user_data, st);
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    if (!st->headers_too_large &&
        (st->req.method == NULL || st->req.path == NULL))
        return 0;
    stream_dispatch(st);
    return 0;
}

static void stream_detach(struct h2_conn *c, struct h2_stream *st)
{
    struct h2_stream **pp;

    for (pp = &c->streams; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == st) {
            *pp = st->next;
            break;
        }
    }
    c->receiving -= st->counted;
    st->counted = 0;
    pthread_mutex_lock(&c->lock);
    st->peer_closed = 1;
    pthread_cond_broadcast(&st->space);
    pthread_mutex_unlock(&c->lock);
    stream_unref(st);
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id,
                           uint32_t error_code, void *user_data)
{
    struct h2_conn *c = user_data;
    struct h2_stream *st = NULL;

    (void)error_code;
    st = nghttp2_session_get_stream_user_data(session, stream_id);
    if (st == NULL)
        return 0;
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    stream_detach(c, st);
    return 0;
}

/* A stalled stream's 408 went out whole: ask the client to stop sending
 * its body (RFC 9113 8.1: RST_STREAM with NO_ERROR after a complete
 * response), which also frees the stream. */
static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame,
                         void *user_data)
{
    struct h2_stream *st = NULL;

    (void)user_data;
    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
        (frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS))
        return 0;
    st = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (st != NULL && st->stalled)
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, st->id,
                                  NGHTTP2_NO_ERROR);
    return 0;
}

/* ------------------------------------------------------------ the loop */

static int conn_fill_out(struct h2_conn *c)
{
    while (c->out_len - c->out_off < H2_OUT_HIGH) {
        const uint8_t *data = NULL;
        ssize_t n = nghttp2_session_mem_send(c->session, &data);
        char *grown = NULL;

        if (n < 0)
            return -1;
        if (n == 0)
            break;
        if (c->out_off > 0) {
            memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
            c->out_len -= c->out_off;
            c->out_off = 0;
        }
        grown = realloc(c->out, c->out_len + (size_t)n);
        if (grown == NULL)
            return -1;
        c->out = grown;
        memcpy(c->out + c->out_len, data, (size_t)n);
        c->out_len += (size_t)n;
    }
    return 0;
}

static int conn_write(struct h2_conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL);

        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return 0;
            return -1;
        }
        c->out_off += (size_t)n;
    }
    c->out_off = 0;
    c->out_len = 0;
    return 0;
}

static int conn_read(struct h2_conn *c)
{
    uint8_t buf[16384];

    for (;;) {
        ssize_t n = recv(c->fd, buf, sizeof(buf), 0);

        if (n == 0)
            return -1;
        if (n < 0)
            return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
        c->last_recv_ms = util_now_ms();
        if (nghttp2_session_mem_recv(c->session, buf, (size_t)n) < 0)
            return -1;
    }
}

/* A connection with no open stream is closed after this long idle. */
#define H2_IDLE_MS (10 * 60 * 1000)

/* Answers a stream whose body stopped arriving 408 without running the
 * handler, and frees what it buffered; on_frame_send resets it once the
 * answer is out. Connection thread. */
static void stream_stall(struct h2_conn *c, struct h2_stream *st)
{
    struct http_response resp;

    st->stalled = 1;
    st->dispatched = 1;
    c->receiving -= st->counted;
    st->counted = 0;
    http_request_clear(&st->req);
    memset(&resp, 0, sizeof(resp));
    http_response_error(&resp, 408,
                        "the request body stopped arriving: no byte for %d s; "
                        "the request was not run, send it again",
                        H2_BODY_STALL_MS / 1000);
    stream_take_response(st, &resp);
    http_response_clear(&resp);
}

/* Requests whose head or body stopped arriving for H2_BODY_STALL_MS: their
 * buffered bytes would otherwise be held for good. A stalled body is its
 * stream's alone (answered 408); a stalled head stops the whole connection
 * (HTTP/2 allows no other frame inside a header block), which is then
 * closed: returns -1. */
static int conn_reap_stalled(struct h2_conn *c)
{
    struct h2_stream *st;
    int64_t now = util_now_ms();
    int stalled = 0;

    for (st = c->streams; st != NULL; st = st->next) {
        if (st->dispatched || now - st->last_recv_ms < H2_BODY_STALL_MS)
            continue;
        if (!st->head_done) {
            if (now - c->last_recv_ms >= H2_BODY_STALL_MS)
                return -1;
            continue;
        }
        stream_stall(c, st);
        stalled = 1;
    }
    if (stalled)
        conn_service_streams(c);
    return 0;
}

static void conn_loop(struct h2_conn *c)
{
    int idle_ms = 0;

    for (;;) {
        struct pollfd pfd[2];
        int pending;
        int n;

        if (conn_fill_out(c) != 0 || conn_write(c) != 0)
            break;
        /* The out buffer is capped: nghttp2 may have more to send right
         * away, so wait for writability rather than only for input. */
        pending =
            c->out_len > c->out_off || nghttp2_session_want_write(c->session);
        if (!pending && !nghttp2_session_want_read(c->session))
            break;
        pfd[0].fd = c->fd;
        pfd[0].events = (short)(POLLIN | (pending ? POLLOUT : 0));
        pfd[0].revents = 0;
        pfd[1].fd = c->evfd;
        pfd[1].events = POLLIN;
        pfd[1].revents = 0;
        n = poll(pfd, 2, 1000);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (conn_reap_stalled(c) != 0)
            break;
        if (n == 0) {
            idle_ms = c->streams == NULL ? idle_ms + 1000 : 0;
            if (idle_ms >= H2_IDLE_MS) {
                /* GOAWAY first: the client's pool then reconnects cleanly. */
                nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
                idle_ms = INT32_MIN;
            }
            continue;
        }
        idle_ms = 0;
        if (pfd[1].revents & POLLIN) {
            uint64_t v;

            if (read(c->evfd, &v, sizeof(v)) < 0) {
                /* spurious wake-up */
            }
            conn_service_streams(c);
        }
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (conn_read(c) != 0)
                break;
        }
    }
}

void h2_serve_connection(struct http_server *srv, int fd, int slot, int is_unix)
{
    nghttp2_session_callbacks *cbs = NULL;
    nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 256},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, H2_MAX_HEADER_BYTES},
    };
    struct h2_conn *c = NULL;

    c = calloc(1, sizeof(*c));
    if (c == NULL)
        goto out;
    pthread_mutex_init(&c->lock, NULL);
    c->refs = 1;
    c->fd = fd;
    c->srv = srv;
    c->trusted = is_unix;
    c->slot = slot;
    c->last_recv_ms = util_now_ms();
    c->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->evfd < 0)
        goto out;
    if (nghttp2_session_callbacks_new(&cbs) != 0)
        goto out;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs,
                                                            on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs,
                                                              on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs,
                                                           on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
    if (nghttp2_session_server_new(&c->session, cbs, c) != 0)
        goto out;
    nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings,
                            sizeof(settings) / sizeof(settings[0]));
    nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0,
                                          16 << 20);
    conn_loop(c);
out:
    if (cbs != NULL)
        nghttp2_session_callbacks_del(cbs);
    if (c != NULL) {
        while (c->streams != NULL) {
            if (c->session != NULL)
                nghttp2_session_set_stream_user_data(c->session, c->streams->id,
                                                     NULL);
            stream_detach(c, c->streams);
        }
        if (c->session != NULL)
            nghttp2_session_del(c->session);
        if (c->evfd < 0) {
            pthread_mutex_destroy(&c->lock);
            free(c);
        } else {
            conn_unref(c);
        }
    }
}
