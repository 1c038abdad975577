/*
 * ws.c - the host's WebSocket client on libwebsockets (see ws.h).
 *
 * Each connection has an lws context of its own, serviced only on the
 * thread that calls ws_conn_*(): lws contexts are not thread-safe, and a
 * context per connection keeps concurrent calls apart without a shared
 * service thread. A 20 ms context timer (sul) makes every lws_service()
 * return, so each blocking step checks its bound and cancellation at least
 * that often, also while the connection is still being made. Received
 * messages are assembled up to max_message and queued; while one waits for
 * ws_conn_recv() the socket is not read (rx flow control), so memory stays
 * bounded whatever the server sends. The PTY exchange of ABI 1.1
 * (ws_pty_exchange) runs on the same connection code.
 */
#define _GNU_SOURCE
#include "ws.h"

#include <libwebsockets.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "deadline.h"
#include "log.h"

#define WS_TICK_US (20 * LWS_US_PER_MS)
#define WS_MAX_INPUT (1024u * 1024u)
#define WS_DEFAULT_QUIET_MS 500u
#define WS_DEFAULT_MAX_WAIT_MS 30000u
#define WS_CLOSE_GRACE_MS 3000L /* for the server's answer to our close */
#define WS_SEND_MAX_MS 30000L   /* a send's bound when the call has none */
#define WS_DEFAULT_MAX_MESSAGE (1024u * 1024u)
#define WS_MAX_MESSAGE (64u * 1024u * 1024u)
/* PTY output comes in small frames; this only bounds memory. */
#define WS_PTY_MAX_MESSAGE (16u * 1024u * 1024u)

enum ws_phase { WS_CONNECTING, WS_OPEN, WS_CLOSING, WS_DONE };
enum ws_tx { TX_NONE, TX_PENDING, TX_FLUSHING, TX_DONE, TX_FAILED };

/* A received message, NUL-terminated. */
struct ws_qmsg {
    struct ws_qmsg *next;
    int type; /* RLMCP_WS_TEXT or RLMCP_WS_BINARY */
    size_t len;
    unsigned char *data;
};

struct ws_conn {
    struct lws_context *ctx;
    struct lws *wsi; /* lws clears it when the connection goes */
    lws_sorted_usec_list_t sul;
    struct ws_target t;
    const char *token; /* the caller's, during the open only */
    ws_cancel_fn cancelled;
    void *cancel_ctx;
    long deadline_ms; /* monotonic; 0: none */
    size_t max_message;
    enum ws_phase phase;
    long start_ms; /* when the open began */
    bool failed;   /* the connection could not be made */
    long status;   /* a refused upgrade's HTTP status */
    char err[256];
    /* receiving */
    unsigned char *rx; /* the message being assembled */
    size_t rx_len, rx_cap;
    bool rx_binary;
    struct ws_qmsg *q_head, *q_tail;
    size_t q_bytes;
    struct ws_qmsg *cur; /* handed out; freed at the next recv */
    bool paused;         /* the socket is not read */
    bool too_big;
    bool too_big_1009; /* ... and we closed with 1009 */
    bool overrun;      /* more queued than flow control should allow */
    bool end_reported;
    bool peer_closed; /* the server sent a close frame */
    int close_code;   /* the server's; 1005: none given; 1006: broken */
    char close_reason[128];
    size_t close_reason_len;
    /* sending */
    enum ws_tx tx;
    bool write_failed;    /* lws_write failed, not the server closing */
    unsigned char *frame; /* LWS_PRE + payload */
    size_t frame_len;
    bool frame_text;
    int our_close; /* the code we close with */
};

static long now_ms(void)
{
    return (long)deadline_now_ms();
}

/* The earlier of two bounds, 0 meaning none. */
static long earlier(long a, long b)
{
    if (a == 0)
        return b;
    if (b == 0)
        return a;
    return a < b ? a : b;
}

static bool has_ctl(const char *s)
{
    for (; *s != '\0'; s++) {
        if ((unsigned char)*s <= 0x20 || *s == 0x7f)
            return true;
    }
    return false;
}

static bool is_localhost(const char *host)
{
    size_t n = strlen(host);

    return strcasecmp(host, "localhost") == 0 ||
           (n > 10 && strcasecmp(host + n - 10, ".localhost") == 0);
}

int ws_target_parse(const char *origin, const char *path, struct ws_target *t,
                    char *err, size_t errlen)
{
    const char *h = NULL;
    size_t hlen = 0;

    memset(t, 0, sizeof(*t));
    if (origin == NULL || path == NULL) {
        snprintf(err, errlen, "no tunnel origin or WebSocket path");
        return -1;
    }
    if (strncmp(origin, "https://", 8) == 0) {
        t->tls = true;
        h = origin + 8;
        t->port = 443;
    } else if (strncmp(origin, "http://", 7) == 0) {
        h = origin + 7;
        t->port = 80;
    } else {
        snprintf(err, errlen, "tunnel origin must be http:// or https://");
        return -1;
    }
    hlen = strcspn(h, ":/?#");
    if (hlen == 0 || hlen >= sizeof(t->host) || has_ctl(origin)) {
        snprintf(err, errlen, "tunnel origin has no usable host");
        return -1;
    }
    memcpy(t->host, h, hlen);
    if (h[hlen] == ':') {
        char *end = NULL;
        long p = strtol(h + hlen + 1, &end, 10);

        if (end == h + hlen + 1 || p < 1 || p > 65535 ||
            (*end != '\0' && *end != '/')) {
            snprintf(err, errlen, "tunnel origin has a bad port");
            return -1;
        }
        t->port = (int)p;
    }
    snprintf(t->address, sizeof(t->address), "%s",
             is_localhost(t->host) ? "127.0.0.1" : t->host);
    if (path[0] != '/' || strlen(path) >= 2048 || has_ctl(path)) {
        snprintf(err, errlen,
                 "the WebSocket path (connect_url) must be a "
                 "server-relative path starting with '/', under "
                 "2048 bytes, without spaces or control "
                 "characters");
        return -1;
    }
    snprintf(t->path, sizeof(t->path), "%s", path);
    return 0;
}

static bool secret_param(const char *name, size_t n)
{
    static const char *const names[] = {"token", "auth_token", "access_token",
                                        NULL};
    size_t i;

    for (i = 0; names[i] != NULL; i++) {
        if (strlen(names[i]) == n && strncasecmp(name, names[i], n) == 0)
            return true;
    }
    return false;
}

void ws_shown_url(const struct ws_target *t, char *out, size_t n)
{
    const char *q = strchr(t->path, '?');
    size_t o = 0;
    int w = 0;

    w = snprintf(
        out, n, "%s://%s:%d%.*s", t->tls ? "wss" : "ws", t->host, t->port,
        (int)(q != NULL ? (size_t)(q - t->path) : strlen(t->path)), t->path);
    if (w < 0 || (size_t)w >= n || q == NULL)
        return;
    o = (size_t)w;
    while (*q != '\0' && o + 1 < n) {
        const char *name = q + 1;
        size_t nlen = strcspn(name, "=&#");
        size_t plen = strcspn(name, "&#");
        bool redact = name[nlen] == '=' && secret_param(name, nlen);

        w = redact ? snprintf(out + o, n - o, "%c%.*s=REDACTED", *q, (int)nlen,
                              name)
                   : snprintf(out + o, n - o, "%c%.*s", *q, (int)plen, name);
        if (w < 0 || (size_t)w >= n - o)
            break;
        o += (size_t)w;
        q = name + plen;
        if (*q == '#')
            break;
    }
}

/* ---------------------------------------------------------------------- */
/* The lws callback                                                       */
/* ---------------------------------------------------------------------- */

static void on_connect_error(struct lws *wsi, struct ws_conn *c,
                             const char *why)
{
    unsigned int st = wsi != NULL ? lws_http_client_http_response(wsi) : 0;

    c->failed = true;
    if (st >= 100 && st != 101)
        c->status = (long)st;
    if (c->err[0] == '\0')
        snprintf(c->err, sizeof(c->err), "%s",
                 why != NULL ? why : "connection failed");
}

static int grow_rx(struct ws_conn *c, size_t need)
{
    size_t cap = c->rx_cap != 0 ? c->rx_cap : 4096;
    unsigned char *p = NULL;

    if (need <= c->rx_cap)
        return 0;
    while (cap < need)
        cap *= 2;
    if (cap > c->max_message + 1)
        cap = c->max_message + 1;
    p = realloc(c->rx, cap);
    if (p == NULL)
        return -1;
    c->rx = p;
    c->rx_cap = cap;
    return 0;
}

/* A whole message arrived: queue it and stop reading until it is taken. */
static int queue_message(struct lws *wsi, struct ws_conn *c)
{
    struct ws_qmsg *m = calloc(1, sizeof(*m));

    if (m == NULL || grow_rx(c, c->rx_len + 1) != 0) {
        free(m);
        return -1;
    }
    c->rx[c->rx_len] = '\0';
    m->type = c->rx_binary ? RLMCP_WS_BINARY : RLMCP_WS_TEXT;
    m->len = c->rx_len;
    m->data = c->rx;
    c->rx = NULL;
    c->rx_len = 0;
    c->rx_cap = 0;
    if (c->q_tail != NULL)
        c->q_tail->next = m;
    else
        c->q_head = m;
    c->q_tail = m;
    c->q_bytes += m->len;
    if (!c->paused) {
        lws_rx_flow_control(wsi, 0);
        c->paused = true;
    }
    /* Backstop: flow control stops reading after the message that
     * completes; never keep more than a few messages' worth. */
    if (c->q_bytes > 2 * c->max_message + 65536) {
        c->overrun = true;
        return -1;
    }
    return 0;
}

static int on_receive(struct lws *wsi, struct ws_conn *c, const void *in,
                      size_t len)
{
    if (lws_is_first_fragment(wsi)) {
        c->rx_len = 0;
        c->rx_binary = lws_frame_is_binary(wsi) != 0;
    }
    if (len > c->max_message - c->rx_len) {
        c->too_big = true;
        /* lws 4.1.6 writes out of bounds when a close reason is set while
         * the frame still has payload to come: then just drop it. */
        if (lws_remaining_packet_payload(wsi) == 0) {
            c->too_big_1009 = true;
            lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, NULL, 0);
        }
        return -1;
    }
    if (grow_rx(c, c->rx_len + len + 1) != 0)
        return -1;
    if (len > 0)
        memcpy(c->rx + c->rx_len, in, len);
    c->rx_len += len;
    if (!lws_is_final_fragment(wsi))
        return 0;
    return queue_message(wsi, c);
}

static void on_peer_close(struct ws_conn *c, const unsigned char *in,
                          size_t len)
{
    c->peer_closed = true;
    c->close_code = LWS_CLOSE_STATUS_NO_STATUS;
    if (len < 2)
        return;
    c->close_code = (in[0] << 8) | in[1];
    c->close_reason_len = len - 2 < sizeof(c->close_reason) - 1
                              ? len - 2
                              : sizeof(c->close_reason) - 1;
    memcpy(c->close_reason, in + 2, c->close_reason_len);
    c->close_reason[c->close_reason_len] = '\0';
}

static int on_writeable(struct lws *wsi, struct ws_conn *c)
{
    int w = 0;

    if (c->phase == WS_CLOSING) {
        lws_close_reason(wsi, (enum lws_close_status)c->our_close, NULL, 0);
        return -1;
    }
    if (c->tx == TX_FLUSHING) {
        c->tx = TX_DONE; /* lws calls back only once its buffer drained */
        return 0;
    }
    if (c->tx != TX_PENDING)
        return 0;
    w = lws_write(wsi, c->frame + LWS_PRE, c->frame_len,
                  c->frame_text ? LWS_WRITE_TEXT : LWS_WRITE_BINARY);
    if (w < (int)c->frame_len) {
        c->tx = TX_FAILED;
        c->write_failed = true;
        return -1;
    }
    if (lws_partial_buffered(wsi)) {
        c->tx = TX_FLUSHING;
        lws_callback_on_writable(wsi);
    } else {
        c->tx = TX_DONE;
    }
    return 0;
}

static void on_gone(struct lws *wsi, struct ws_conn *c)
{
    if (c->phase == WS_CONNECTING && !c->failed)
        on_connect_error(wsi, c, "connection closed during the upgrade");
    if (c->phase == WS_OPEN && !c->peer_closed)
        c->close_code = LWS_CLOSE_STATUS_ABNORMAL_CLOSE;
    if (c->tx == TX_PENDING || c->tx == TX_FLUSHING)
        c->tx = TX_FAILED;
    c->phase = WS_DONE;
    c->wsi = NULL;
}

static int add_auth(struct lws *wsi, struct ws_conn *c, void *in, size_t len)
{
    unsigned char **p = (unsigned char **)in;
    char auth[600];
    int rc = 0;

    if (c->token == NULL)
        return 0;
    snprintf(auth, sizeof(auth), "Bearer %s", c->token);
    rc = lws_add_http_header_by_name(
        wsi,
        (const unsigned char *)"authorization:", (const unsigned char *)auth,
        (int)strlen(auth), p, *p + len);
    explicit_bzero(auth, sizeof(auth));
    return rc != 0 ? -1 : 0;
}

static int ws_callback(struct lws *wsi, enum lws_callback_reasons reason,
                       void *user, void *in, size_t len)
{
    struct ws_conn *c = lws_get_opaque_user_data(wsi);

    if (c == NULL)
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    switch (reason) {
    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
        return add_auth(wsi, c, in, len);
    case LWS_CALLBACK_CLIENT_HTTP_REDIRECT:
        return -1; /* not followed (see start_connect) */
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        c->phase = WS_OPEN;
        break;
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        return on_writeable(wsi, c);
    case LWS_CALLBACK_CLIENT_RECEIVE:
        if (c->phase != WS_OPEN)
            break;
        return on_receive(wsi, c, in, len);
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        on_peer_close(c, in, len);
        break;
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        on_connect_error(wsi, c, in);
        c->phase = WS_DONE;
        c->wsi = NULL;
        break;
    case LWS_CALLBACK_CLIENT_CLOSED:
    case LWS_CALLBACK_WSI_DESTROY:
        on_gone(wsi, c);
        break;
    default:
        break;
    }
    return 0;
}

static const struct lws_protocols ws_protocols[] = {
    {"rlmcp-ws", ws_callback, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}};

/* lws logs go to ours, at debug level: they may name hosts, never tokens
 * (the header is built by us and not logged by lws). */
static void lws_to_log(int level, const char *line)
{
    (void)level;
    log_msg(RLMCP_LOG_DEBUG, NULL, "websocket: %.*s", (int)strcspn(line, "\n"),
            line);
}

static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_init(void)
{
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_to_log);
}

/* ---------------------------------------------------------------------- */
/* Servicing                                                              */
/* ---------------------------------------------------------------------- */

/* Keeps lws_service() returning every tick while the context lives. */
static void tick_cb(lws_sorted_usec_list_t *sul)
{
    struct ws_conn *c = lws_container_of(sul, struct ws_conn, sul);

    lws_sul_schedule(c->ctx, 0, &c->sul, tick_cb, WS_TICK_US);
}

typedef bool (*ws_done_fn)(const struct ws_conn *c);

/*
 * Service c until done(c), until the monotonic moment until_ms (0: no
 * bound) or, when cancellable, cancellation. RLMCP_OK, RLMCP_ETIMEDOUT,
 * RLMCP_ECANCELLED or RLMCP_EHTTP (the service loop failed).
 */
static int pump(struct ws_conn *c, ws_done_fn done, long until_ms,
                bool cancellable)
{
    for (;;) {
        if (done(c))
            return RLMCP_OK;
        if (cancellable && c->cancelled != NULL && c->cancelled(c->cancel_ctx))
            return RLMCP_ECANCELLED;
        if (until_ms != 0 && now_ms() >= until_ms)
            return RLMCP_ETIMEDOUT;
        if (lws_service(c->ctx, 0) < 0)
            return RLMCP_EHTTP;
    }
}

static bool not_connecting(const struct ws_conn *c)
{
    return c->phase != WS_CONNECTING;
}

static bool tx_settled(const struct ws_conn *c)
{
    return c->tx == TX_DONE || c->tx == TX_FAILED || c->phase == WS_DONE;
}

static bool has_message(const struct ws_conn *c)
{
    return c->q_head != NULL || c->phase == WS_DONE;
}

static bool is_done(const struct ws_conn *c)
{
    return c->phase == WS_DONE;
}

/* ---------------------------------------------------------------------- */
/* Connections                                                            */
/* ---------------------------------------------------------------------- */

static struct lws_context *make_context(bool tls)
{
    struct lws_context_creation_info info;

    memset(&info, 0, sizeof(info));
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = ws_protocols;
    info.gid = (gid_t)-1;
    info.uid = (uid_t)-1;
    info.timeout_secs = 30;
    if (tls)
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    return lws_create_context(&info);
}

static void free_queue(struct ws_conn *c)
{
    struct ws_qmsg *m = c->q_head;

    while (m != NULL) {
        struct ws_qmsg *next = m->next;

        free(m->data);
        free(m);
        m = next;
    }
    c->q_head = NULL;
    c->q_tail = NULL;
    c->q_bytes = 0;
}

static void free_cur(struct ws_conn *c)
{
    if (c->cur == NULL)
        return;
    free(c->cur->data);
    free(c->cur);
    c->cur = NULL;
}

static void conn_free(struct ws_conn *c)
{
    if (c == NULL)
        return;
    if (c->ctx != NULL) {
        lws_sul_cancel(&c->sul);
        lws_context_destroy(c->ctx);
    }
    free_queue(c);
    free_cur(c);
    free(c->rx);
    if (c->frame != NULL) {
        explicit_bzero(c->frame, LWS_PRE + c->frame_len);
        free(c->frame);
    }
    free(c);
}

/* Start connecting c->t; false when it could not even start. */
static bool start_connect(struct ws_conn *c, const char *subprotocol)
{
    struct lws_client_connect_info ci;

    c->ctx = make_context(c->t.tls);
    if (c->ctx == NULL) {
        on_connect_error(NULL, c, "cannot create a WebSocket context");
        return false;
    }
    memset(&ci, 0, sizeof(ci));
    ci.context = c->ctx;
    ci.address = c->t.address;
    ci.port = c->t.port;
    ci.path = c->t.path;
    ci.host = c->t.host;
    ci.origin = c->t.host;
    /* A 3xx is the upgrade's answer, never followed: lws would send the
     * tunnel's token to whatever host Location names. */
    ci.ssl_connection = LCCSCF_HTTP_NO_FOLLOW_REDIRECT;
    if (c->t.tls)
        ci.ssl_connection |= LCCSCF_USE_SSL;
    ci.protocol = subprotocol;
    ci.local_protocol_name = ws_protocols[0].name;
    ci.opaque_user_data = c;
    ci.pwsi = &c->wsi;
    if (lws_client_connect_via_info(&ci) == NULL) {
        on_connect_error(NULL, c, "cannot start the connection");
        c->phase = WS_DONE;
        return false;
    }
    lws_sul_schedule(c->ctx, 0, &c->sul, tick_cb, WS_TICK_US);
    return true;
}

/* Why an open failed, as err; the code to return. */
static int open_failed(struct ws_conn *c, int rc, const struct ws_conn_args *a,
                       long connect_until, char *err, size_t errlen)
{
    char shown[2400];

    ws_shown_url(&c->t, shown, sizeof(shown));
    if (rc == RLMCP_ECANCELLED) {
        snprintf(err, errlen, "%s: cancelled while connecting", shown);
        return rc;
    }
    if (rc == RLMCP_ETIMEDOUT) {
        if (connect_until != 0 && connect_until <= now_ms() &&
            a->connect_name != NULL)
            snprintf(err, errlen, "%s: no WebSocket connection within %s",
                     shown, a->connect_name);
        else if (connect_until != 0 && connect_until <= now_ms())
            snprintf(err, errlen, "%s: no WebSocket connection within %u ms",
                     shown, a->connect_ms);
        else
            snprintf(err, errlen,
                     "%s: no WebSocket connection before the call's "
                     "deadline",
                     shown);
        return rc;
    }
    if (c->status > 0)
        snprintf(err, errlen,
                 "%s: the server refused the WebSocket upgrade with HTTP %ld",
                 shown, c->status);
    else
        snprintf(err, errlen, "%s: %s", shown,
                 c->err[0] != '\0' ? c->err : "the WebSocket never finished");
    return RLMCP_EHTTP;
}

int ws_conn_open(const struct ws_conn_args *a, struct ws_conn **out,
                 long *status, char *err, size_t errlen)
{
    struct ws_conn *c = NULL;
    long connect_until = 0;
    int rc = RLMCP_OK;

    *out = NULL;
    *status = 0;
    err[0] = '\0';
    if (a->max_message > WS_MAX_MESSAGE) {
        snprintf(err, errlen, "max_message must be at most 64 MiB");
        return RLMCP_EINVAL;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return RLMCP_ENOMEM;
    if (ws_target_parse(a->origin, a->path, &c->t, err, errlen) != 0) {
        rc = RLMCP_EINVAL;
        goto out;
    }
    pthread_once(&log_once, log_init);
    c->token = a->token;
    c->cancelled = a->cancelled;
    c->cancel_ctx = a->cancel_ctx;
    c->deadline_ms = (long)a->deadline_ms;
    c->max_message =
        a->max_message != 0 ? a->max_message : WS_DEFAULT_MAX_MESSAGE;
    c->start_ms = now_ms();
    if (a->connect_ms != 0)
        connect_until = c->start_ms + (long)a->connect_ms;
    rc = RLMCP_EHTTP;
    if (start_connect(c, a->subprotocol))
        rc = pump(c, not_connecting, earlier(connect_until, c->deadline_ms),
                  true);
    c->token = NULL;
    if (rc == RLMCP_OK && c->phase == WS_OPEN) {
        *out = c;
        c = NULL;
        goto out;
    }
    if (rc == RLMCP_OK)
        rc = RLMCP_EHTTP;
    rc = open_failed(c, rc, a, connect_until, err, errlen);
    *status = c->status;
out:
    conn_free(c);
    return rc;
}

int ws_conn_send(struct ws_conn *c, const void *data, size_t len, bool text,
                 char *err, size_t errlen)
{
    char shown[2400];
    long until = 0;
    int rc = RLMCP_OK;

    err[0] = '\0';
    if (c == NULL || (data == NULL && len > 0)) {
        snprintf(err, errlen, "no connection or no data");
        return RLMCP_EINVAL;
    }
    ws_shown_url(&c->t, shown, sizeof(shown));
    if (len > c->max_message) {
        snprintf(err, errlen,
                 "%s: a message of %zu bytes is longer than max_message "
                 "(%zu)",
                 shown, len, c->max_message);
        return RLMCP_EINVAL;
    }
    if (c->phase != WS_OPEN || c->wsi == NULL) {
        snprintf(err, errlen, "%s: the connection has ended", shown);
        return RLMCP_ESTATE;
    }
    c->frame = malloc(LWS_PRE + len + 1);
    if (c->frame == NULL)
        return RLMCP_ENOMEM;
    if (len > 0)
        memcpy(c->frame + LWS_PRE, data, len);
    c->frame_len = len;
    c->frame_text = text;
    c->tx = TX_PENDING;
    c->write_failed = false;
    lws_callback_on_writable(c->wsi);
    /* A server that never reads must not hold a call without a deadline
     * (a task, timeout 0) until it is cancelled. */
    until = c->deadline_ms != 0 ? c->deadline_ms : now_ms() + WS_SEND_MAX_MS;
    rc = pump(c, tx_settled, until, true);
    /* The server closing meanwhile is the connection's end (ESTATE; recv
     * says how), only a failed write is EHTTP. */
    if (rc == RLMCP_OK && c->tx != TX_DONE)
        rc = c->write_failed ? RLMCP_EHTTP : RLMCP_ESTATE;
    /* Unless lws still drains its own copy, no frame is pending: a frame
     * never written must not be written after it is freed. */
    if (c->tx != TX_FLUSHING)
        c->tx = TX_NONE;
    explicit_bzero(c->frame, LWS_PRE + len);
    free(c->frame);
    c->frame = NULL;
    c->frame_len = 0;
    if (rc == RLMCP_ETIMEDOUT && c->deadline_ms == 0)
        snprintf(err, errlen, "%s: the message could not be sent within %ld s",
                 shown, WS_SEND_MAX_MS / 1000);
    else if (rc == RLMCP_ETIMEDOUT)
        snprintf(err, errlen,
                 "%s: the message could not be sent before the call's "
                 "deadline",
                 shown);
    else if (rc == RLMCP_ECANCELLED)
        snprintf(err, errlen, "%s: cancelled while sending", shown);
    else if (rc == RLMCP_ESTATE)
        snprintf(err, errlen, "%s: the connection has ended", shown);
    else if (rc != RLMCP_OK)
        snprintf(err, errlen, "%s: sending the message failed", shown);
    return rc;
}

/* Hand the first queued message to the caller as m. */
static void take_message(struct ws_conn *c, struct rlmcp_ws_message *m)
{
    struct ws_qmsg *q = c->q_head;

    c->q_head = q->next;
    if (c->q_head == NULL)
        c->q_tail = NULL;
    c->q_bytes -= q->len;
    q->next = NULL;
    c->cur = q;
    m->type = q->type;
    m->data = q->data;
    m->len = q->len;
    m->close_code = 0;
    if (c->q_head == NULL && c->paused && c->wsi != NULL) {
        lws_rx_flow_control(c->wsi, 1);
        c->paused = false;
    }
}

/* The end of the connection, reported once. */
static int report_end(struct ws_conn *c, struct rlmcp_ws_message *m,
                      const char *shown, char *err, size_t errlen)
{
    if (c->end_reported) {
        snprintf(err, errlen,
                 "%s: the connection has ended (already "
                 "reported)",
                 shown);
        return RLMCP_ESTATE;
    }
    c->end_reported = true;
    if (c->too_big) {
        snprintf(err, errlen,
                 "%s: a message longer than max_message (%zu bytes) "
                 "arrived; the connection was closed%s",
                 shown, c->max_message, c->too_big_1009 ? " with 1009" : "");
        return RLMCP_ETOOBIG;
    }
    if (c->overrun) {
        snprintf(err, errlen,
                 "%s: more than %zu bytes of messages arrived unread; the "
                 "connection was closed",
                 shown, 2 * c->max_message + 65536);
        return RLMCP_ETOOBIG;
    }
    m->type = RLMCP_WS_CLOSED;
    m->close_code =
        c->close_code != 0 ? c->close_code : LWS_CLOSE_STATUS_ABNORMAL_CLOSE;
    m->data = c->close_reason;
    m->len = c->close_reason_len;
    return RLMCP_OK;
}

int ws_conn_recv(struct ws_conn *c, uint32_t timeout_ms,
                 struct rlmcp_ws_message *m, char *err, size_t errlen)
{
    char shown[2400];
    long until = 0;
    int rc = RLMCP_OK;

    err[0] = '\0';
    if (c == NULL || m == NULL) {
        snprintf(err, errlen, "no connection or no message");
        return RLMCP_EINVAL;
    }
    free_cur(c);
    m->type = 0;
    m->data = NULL;
    m->len = 0;
    m->close_code = 0;
    ws_shown_url(&c->t, shown, sizeof(shown));
    if (!has_message(c) && timeout_ms == 0 && lws_service(c->ctx, 0) < 0)
        rc = RLMCP_EHTTP;
    until = earlier(now_ms() + (long)timeout_ms, c->deadline_ms);
    if (rc == RLMCP_OK)
        rc = pump(c, has_message, until, true);
    if (c->q_head != NULL) {
        take_message(c, m);
        return RLMCP_OK;
    }
    if (rc == RLMCP_OK)
        return report_end(c, m, shown, err, errlen);
    if (rc == RLMCP_ETIMEDOUT) {
        if (c->deadline_ms != 0 && now_ms() >= c->deadline_ms)
            snprintf(err, errlen, "%s: no message before the call's deadline",
                     shown);
        else
            snprintf(err, errlen, "%s: no message within %u ms", shown,
                     timeout_ms);
    } else if (rc == RLMCP_ECANCELLED) {
        snprintf(err, errlen, "%s: cancelled while waiting for a message",
                 shown);
    } else {
        snprintf(err, errlen, "%s: the WebSocket service failed", shown);
    }
    return rc;
}

void ws_conn_close(struct ws_conn *c, int code)
{
    long limit = 0;

    if (c == NULL)
        return;
    if (c->phase == WS_OPEN && c->wsi != NULL) {
        c->phase = WS_CLOSING;
        c->our_close = code;
        lws_callback_on_writable(c->wsi);
        limit = earlier(now_ms() + WS_CLOSE_GRACE_MS, c->deadline_ms);
        /* At least one pass, so the close frame goes out. */
        if (lws_service(c->ctx, 0) >= 0)
            (void)pump(c, is_done, limit, false);
    }
    conn_free(c);
}

/* ---------------------------------------------------------------------- */
/* The PTY exchange (ABI 1.1)                                             */
/* ---------------------------------------------------------------------- */

static int check_exchange(const struct rlmcp_pty_exchange *x, char *err,
                          size_t errlen)
{
    if (x->on_output == NULL) {
        snprintf(err, errlen, "on_output is required");
        return RLMCP_EINVAL;
    }
    if (x->input_len > WS_MAX_INPUT || (x->input_len > 0 && x->input == NULL)) {
        snprintf(err, errlen,
                 "input must be at most 1 MiB (and set when "
                 "input_len is)");
        return RLMCP_EINVAL;
    }
    return RLMCP_OK;
}

/*
 * Send the input, then hand output to on_output until it was quiet for
 * quiet_ms, max_wait_ms passed since the open began, the server closed,
 * on_output asked to stop or the call was cancelled.
 */
static int pty_run(struct ws_conn *c, struct rlmcp_pty_exchange *x,
                   uint32_t quiet_ms, uint32_t max_wait_ms, char *err,
                   size_t errlen)
{
    struct rlmcp_ws_message m = RLMCP_WS_MESSAGE_INIT;
    long max_at = c->start_ms + (long)max_wait_ms;
    long last = 0;
    int rc = RLMCP_OK;

    if (x->input_len > 0) {
        rc = ws_conn_send(c, x->input, x->input_len, false, err, errlen);
        if (rc == RLMCP_ECANCELLED || rc == RLMCP_EHTTP)
            return rc;
    }
    last = now_ms();
    for (;;) {
        long now = now_ms();
        long until = earlier(last + (long)quiet_ms, max_at);

        if (now >= until) {
            x->quiet = now >= last + (long)quiet_ms;
            return RLMCP_OK;
        }
        rc = ws_conn_recv(c, (uint32_t)(until - now), &m, err, errlen);
        if (rc == RLMCP_ETIMEDOUT)
            continue;
        if (rc != RLMCP_OK)
            return rc == RLMCP_ETOOBIG ? RLMCP_EHTTP : rc;
        if (m.type == RLMCP_WS_CLOSED) {
            /* 1.1: only a close frame's code; a dropped connection is 0. */
            x->close_code = c->peer_closed ? m.close_code : 0;
            return RLMCP_OK;
        }
        last = now_ms();
        if (m.len > 0 && x->on_output(x->user, m.data, m.len) != 0)
            return RLMCP_OK;
    }
}

int ws_pty_exchange(const char *origin, const char *token,
                    struct rlmcp_pty_exchange *x, ws_cancel_fn cancelled,
                    void *cancel_ctx, char *err, size_t errlen)
{
    struct ws_conn_args a;
    struct ws_conn *c = NULL;
    uint32_t quiet_ms = 0;
    uint32_t max_wait_ms = 0;
    int rc = RLMCP_OK;

    err[0] = '\0';
    x->upgrade_status = 0;
    x->close_code = 0;
    x->quiet = false;
    rc = check_exchange(x, err, errlen);
    if (rc != RLMCP_OK)
        return rc;
    quiet_ms = x->quiet_ms != 0 ? x->quiet_ms : WS_DEFAULT_QUIET_MS;
    max_wait_ms = x->max_wait_ms != 0 ? x->max_wait_ms : WS_DEFAULT_MAX_WAIT_MS;
    memset(&a, 0, sizeof(a));
    a.origin = origin;
    a.token = token;
    a.path = x->connect_url;
    a.max_message = WS_PTY_MAX_MESSAGE;
    a.cancelled = cancelled;
    a.cancel_ctx = cancel_ctx;
    a.connect_ms = max_wait_ms;
    a.connect_name = "max_wait";
    rc = ws_conn_open(&a, &c, &x->upgrade_status, err, errlen);
    if (rc == RLMCP_ETIMEDOUT)
        return RLMCP_EHTTP; /* 1.1: within max_wait, or not at all */
    if (rc != RLMCP_OK)
        return rc;
    rc = pty_run(c, x, quiet_ms, max_wait_ms, err, errlen);
    ws_conn_close(c, LWS_CLOSE_STATUS_NORMAL);
    return rc;
}
