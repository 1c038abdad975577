/*
 * ws.c - one bounded PTY WebSocket exchange with libwebsockets (see ws.h).
 *
 * The exchange runs an lws context of its own on the calling thread: lws
 * contexts are not thread-safe, and a context per call keeps concurrent
 * calls apart without a shared service thread. A 20 ms context timer (sul)
 * wakes the service loop to check the quiet and max-wait bounds and
 * cancellation, also while the connection is still being made.
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

#include "log.h"

#define WS_TICK_US (20 * LWS_US_PER_MS)
#define WS_MAX_INPUT (1024u * 1024u)
#define WS_DEFAULT_QUIET_MS 500u
#define WS_DEFAULT_MAX_WAIT_MS 30000u
#define WS_CLOSE_GRACE_MS 3000 /* for the close handshake after the bound */

enum ws_phase { WS_CONNECTING, WS_OPEN, WS_CLOSING, WS_DONE };

struct ws_state {
    struct rlmcp_pty_exchange *x;
    struct lws_context *ctx;
    struct lws *wsi; /* lws clears it when the connection goes */
    lws_sorted_usec_list_t sul;
    uint32_t quiet_ms, max_wait_ms;
    const char *token;
    ws_cancel_fn cancelled;
    void *cancel_ctx;
    enum ws_phase phase;
    unsigned char *frame; /* LWS_PRE + input */
    bool input_pending;
    long start_ms;
    long last_ms;   /* last output, or when the input went out */
    long closing_ms;
    bool was_cancelled;
    bool failed;
    long status;    /* refused upgrade */
    char err[256];
};

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
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

int ws_target_parse(const char *origin, const char *path,
                    struct ws_target *t, char *err, size_t errlen)
{
    const char *h = NULL;
    size_t hlen = 0;

    memset(t, 0, sizeof(*t));
    if (origin == NULL || path == NULL) {
        snprintf(err, errlen, "no tunnel origin or connect_url");
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
        snprintf(err, errlen, "connect_url must be a server-relative path "
                              "starting with '/', under 2048 bytes, without "
                              "spaces or control characters");
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

    w = snprintf(out, n, "%s://%s:%d%.*s", t->tls ? "wss" : "ws", t->host,
                 t->port,
                 (int)(q != NULL ? (size_t)(q - t->path) : strlen(t->path)),
                 t->path);
    if (w < 0 || (size_t)w >= n || q == NULL)
        return;
    o = (size_t)w;
    while (*q != '\0' && o + 1 < n) {
        const char *name = q + 1;
        size_t nlen = strcspn(name, "=&#");
        size_t plen = strcspn(name, "&#");
        bool redact = name[nlen] == '=' && secret_param(name, nlen);

        w = redact ? snprintf(out + o, n - o, "%c%.*s=REDACTED", *q,
                              (int)nlen, name)
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

static void start_close(struct lws *wsi, struct ws_state *s)
{
    if (s->phase != WS_OPEN)
        return;
    s->phase = WS_CLOSING;
    s->closing_ms = now_ms();
    lws_callback_on_writable(wsi);
}

/* Every tick: bounds, quiet and cancellation. -1 drops the connection. */
static int on_tick(struct lws *wsi, struct ws_state *s)
{
    long now = now_ms();

    if (s->cancelled != NULL && s->cancelled(s->cancel_ctx)) {
        s->was_cancelled = true;
        if (s->phase != WS_OPEN)
            return -1;
        start_close(wsi, s);
    }
    if (s->phase == WS_CONNECTING &&
        now - s->start_ms >= (long)s->max_wait_ms) {
        snprintf(s->err, sizeof(s->err), "no WebSocket connection within "
                                         "max_wait");
        s->failed = true;
        return -1;
    }
    if (s->phase == WS_OPEN && !s->input_pending) {
        if (now - s->last_ms >= (long)s->quiet_ms) {
            s->x->quiet = true;
            start_close(wsi, s);
        } else if (now - s->start_ms >= (long)s->max_wait_ms) {
            start_close(wsi, s);
        }
    }
    if (s->phase == WS_CLOSING && now - s->closing_ms >= WS_CLOSE_GRACE_MS)
        return -1; /* the peer never answered our close */
    return 0;
}

static void tick_cb(lws_sorted_usec_list_t *sul)
{
    struct ws_state *s = lws_container_of(sul, struct ws_state, sul);

    if (s->phase == WS_DONE)
        return;
    if (s->wsi == NULL) { /* gone without a callback we act on */
        s->phase = WS_DONE;
        return;
    }
    if (on_tick(s->wsi, s) != 0)
        lws_set_timeout(s->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    lws_sul_schedule(s->ctx, 0, &s->sul, tick_cb, WS_TICK_US);
}

static int on_writeable(struct lws *wsi, struct ws_state *s)
{
    if (s->phase == WS_CLOSING) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
        return -1;
    }
    if (s->input_pending) {
        size_t len = s->x->input_len;
        int w = lws_write(wsi, s->frame + LWS_PRE, len, LWS_WRITE_BINARY);

        if (w < (int)len) {
            snprintf(s->err, sizeof(s->err), "sending the input failed");
            s->failed = true;
            return -1;
        }
        s->input_pending = false;
        s->last_ms = now_ms();
    }
    return 0;
}

static void on_connect_error(struct lws *wsi, struct ws_state *s,
                             const char *why)
{
    unsigned int st = wsi != NULL ? lws_http_client_http_response(wsi) : 0;

    s->failed = true;
    if (st >= 100 && st != 101)
        s->status = (long)st;
    if (!s->was_cancelled && s->err[0] == '\0')
        snprintf(s->err, sizeof(s->err), "%s",
                 why != NULL ? why : "connection failed");
}

static int ws_callback(struct lws *wsi, enum lws_callback_reasons reason,
                       void *user, void *in, size_t len)
{
    struct ws_state *s = lws_get_opaque_user_data(wsi);
    char auth[600];
    unsigned char **p = NULL;
    int rc = 0;

    (void)user;
    if (s == NULL)
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    switch (reason) {
    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
        if (s->token == NULL)
            break;
        p = (unsigned char **)in;
        snprintf(auth, sizeof(auth), "Bearer %s", s->token);
        rc = lws_add_http_header_by_name(
            wsi, (const unsigned char *)"authorization:",
            (const unsigned char *)auth, (int)strlen(auth), p, *p + len);
        explicit_bzero(auth, sizeof(auth));
        return rc != 0 ? -1 : 0;
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        s->phase = WS_OPEN;
        s->last_ms = now_ms();
        if (s->input_pending)
            lws_callback_on_writable(wsi);
        break;
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        return on_writeable(wsi, s);
    case LWS_CALLBACK_CLIENT_RECEIVE:
        s->last_ms = now_ms();
        if (len > 0 && s->phase == WS_OPEN &&
            s->x->on_output(s->x->user, in, len) != 0)
            start_close(wsi, s);
        break;
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        if (len >= 2) {
            const unsigned char *b = in;

            s->x->close_code = (b[0] << 8) | b[1];
        } else {
            s->x->close_code = LWS_CLOSE_STATUS_NO_STATUS;
        }
        break;
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        on_connect_error(wsi, s, in);
        s->phase = WS_DONE;
        s->wsi = NULL;
        break;
    case LWS_CALLBACK_CLIENT_CLOSED:
    case LWS_CALLBACK_WSI_DESTROY:
        if (s->phase == WS_CONNECTING && !s->failed && !s->was_cancelled)
            on_connect_error(wsi, s, "connection closed during the upgrade");
        s->phase = WS_DONE;
        s->wsi = NULL;
        break;
    default:
        break;
    }
    return 0;
}

static const struct lws_protocols ws_protocols[] = {
    {"rlmcp-pty", ws_callback, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}};

/* lws logs go to ours, at debug level: they may name hosts, never tokens
 * (the header is built by us and not logged by lws). */
static void lws_to_log(int level, const char *line)
{
    (void)level;
    log_msg(RLMCP_LOG_DEBUG, NULL, "websocket: %.*s",
            (int)strcspn(line, "\n"), line);
}

static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_init(void)
{
    lws_set_log_level(LLL_ERR | LLL_WARN, lws_to_log);
}

/* ---------------------------------------------------------------------- */
/* The exchange                                                           */
/* ---------------------------------------------------------------------- */

static int check_exchange(const struct rlmcp_pty_exchange *x, char *err,
                          size_t errlen)
{
    if (x->on_output == NULL) {
        snprintf(err, errlen, "on_output is required");
        return RLMCP_EINVAL;
    }
    if (x->input_len > WS_MAX_INPUT ||
        (x->input_len > 0 && x->input == NULL)) {
        snprintf(err, errlen, "input must be at most 1 MiB (and set when "
                              "input_len is)");
        return RLMCP_EINVAL;
    }
    return RLMCP_OK;
}

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

static int finish(struct ws_state *s, const struct ws_target *t, char *err,
                  size_t errlen)
{
    char shown[2400];

    if (s->was_cancelled)
        return RLMCP_ECANCELLED;
    if (!s->failed)
        return RLMCP_OK;
    ws_shown_url(t, shown, sizeof(shown));
    s->x->upgrade_status = s->status;
    if (s->status > 0)
        snprintf(err, errlen, "%s: the server refused the WebSocket upgrade "
                              "with HTTP %ld",
                 shown, s->status);
    else
        snprintf(err, errlen, "%s: %s", shown, s->err);
    return RLMCP_EHTTP;
}

int ws_pty_exchange(const char *origin, const char *token,
                    struct rlmcp_pty_exchange *x, ws_cancel_fn cancelled,
                    void *cancel_ctx, char *err, size_t errlen)
{
    struct ws_target t;
    struct ws_state s;
    struct lws_client_connect_info ci;
    struct lws_context *ctx = NULL;
    struct lws *wsi = NULL;
    int rc = RLMCP_OK;

    err[0] = '\0';
    x->upgrade_status = 0;
    x->close_code = 0;
    x->quiet = false;
    rc = check_exchange(x, err, errlen);
    if (rc != RLMCP_OK)
        return rc;
    if (ws_target_parse(origin, x->connect_url, &t, err, errlen) != 0)
        return RLMCP_EINVAL;
    pthread_once(&log_once, log_init);
    memset(&s, 0, sizeof(s));
    s.quiet_ms = x->quiet_ms != 0 ? x->quiet_ms : WS_DEFAULT_QUIET_MS;
    s.max_wait_ms = x->max_wait_ms != 0 ? x->max_wait_ms
                                        : WS_DEFAULT_MAX_WAIT_MS;
    s.x = x;
    s.token = token;
    s.cancelled = cancelled;
    s.cancel_ctx = cancel_ctx;
    s.start_ms = now_ms();
    s.frame = malloc(LWS_PRE + x->input_len + 1);
    if (s.frame == NULL)
        return RLMCP_ENOMEM;
    if (x->input_len > 0) {
        memcpy(s.frame + LWS_PRE, x->input, x->input_len);
        s.input_pending = true;
    }
    ctx = make_context(t.tls);
    if (ctx == NULL) {
        snprintf(err, errlen, "cannot create a WebSocket context");
        rc = RLMCP_ENOMEM;
        goto out;
    }
    memset(&ci, 0, sizeof(ci));
    ci.context = ctx;
    ci.address = t.address;
    ci.port = t.port;
    ci.path = t.path;
    ci.host = t.host;
    ci.origin = t.host;
    ci.ssl_connection = t.tls ? LCCSCF_USE_SSL : 0;
    ci.local_protocol_name = ws_protocols[0].name;
    ci.opaque_user_data = &s;
    ci.pwsi = &s.wsi;
    s.ctx = ctx;
    wsi = lws_client_connect_via_info(&ci);
    if (wsi == NULL) {
        if (!s.failed)
            on_connect_error(NULL, &s, "cannot start the connection");
        s.phase = WS_DONE;
    } else {
        lws_sul_schedule(ctx, 0, &s.sul, tick_cb, WS_TICK_US);
    }
    while (s.phase != WS_DONE) {
        /* Backstop: the ticks end every exchange long before this. */
        if (lws_service(ctx, 0) < 0 ||
            now_ms() - s.start_ms > (long)s.max_wait_ms + 60000L) {
            if (!s.failed && s.phase == WS_CONNECTING)
                on_connect_error(NULL, &s, "the WebSocket never finished");
            break;
        }
    }
    rc = finish(&s, &t, err, errlen);
out:
    if (ctx != NULL) {
        lws_sul_cancel(&s.sul);
        lws_context_destroy(ctx);
    }
    if (s.frame != NULL) {
        explicit_bzero(s.frame, LWS_PRE + x->input_len);
        free(s.frame);
    }
    return rc;
}
