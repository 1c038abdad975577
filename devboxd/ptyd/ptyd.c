/* devboxd-ptyd: GET /pty/{name}, POST /pty/{name}/control and the
 * WebSocket data plane at /pty/{name}/attach, served with libwebsockets
 * on a listening socket devboxd created in the devbox's network namespace
 * (inherited as fd 3, or --port for a loopback listener when run alone).
 * With --key-fd every connection must first send devboxd's key for this
 * devbox on a line of its own (ptyd.h says what that protects). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ptyd.h"

#define BODY_MAX (64 * 1024)
#define KEY_MIN 32
#define KEY_MAX 128
#define GATE_TIMEOUT_S 10 /* for the key line of a new connection */

struct ptyd_config ptyd_cfg = {1800, 20, 60};

static struct lws_context *ctx;
static struct lws_vhost *vhost;
static volatile sig_atomic_t stopping;
static lws_sorted_usec_list_t tick_sul;
/* devboxd's key for this devbox (--key-fd); empty: every connection is
 * taken (run alone with --port, as the unit tests do). */
static char ptyd_key[KEY_MAX + 1];

/* A new connection until its first line (the key) arrived. */
struct gate {
    char buf[KEY_MAX + 2];
    size_t len;
};

/* Per connection: an HTTP request, or an attached WebSocket. */
struct pss {
    char name[PTYD_NAME_MAX + 1];
    int is_control;
    char *body;
    size_t body_len;
    int body_too_big;
    int status;
    char *resp;             /* JSON to send */
    struct ptyd_session *s; /* WebSocket: the attached session */
};

/* ------------------------------------------------------------ responses */

static int send_json(struct lws *wsi, int status, const char *json)
{
    size_t blen = strlen(json);
    size_t cap = LWS_PRE + 1024 + blen;
    unsigned char *buf = malloc(cap);
    unsigned char *start = NULL;
    unsigned char *p = NULL;
    unsigned char *end = NULL;
    int rc = -1;

    if (buf == NULL)
        return -1;
    start = buf + LWS_PRE;
    p = start;
    end = buf + cap - blen - 1;
    if (lws_add_http_common_headers(wsi, (unsigned int)status,
                                    "application/json", blen, &p, end) ||
        lws_finalize_http_header(wsi, &p, end))
        goto out;
    memcpy(p, json, blen);
    p += blen;
    if (lws_write(wsi, start, (size_t)(p - start), LWS_WRITE_HTTP_FINAL) < 0)
        goto out;
    rc = 0;
out:
    free(buf);
    return rc;
}

static int send_error(struct lws *wsi, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int send_error(struct lws *wsi, int status, const char *fmt, ...)
{
    char msg[1024];
    cJSON *o = cJSON_CreateObject();
    char *txt = NULL;
    va_list ap;
    int rc = -1;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cJSON_AddStringToObject(o, "message", msg);
    txt = cJSON_PrintUnformatted(o);
    if (txt != NULL)
        rc = send_json(wsi, status, txt);
    free(txt);
    cJSON_Delete(o);
    return rc;
}

/* Ends one HTTP transaction after a complete response. */
static int finish(struct lws *wsi, int rc)
{
    if (rc != 0)
        return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* ---------------------------------------------------------------- paths */

enum route { R_NONE, R_CONNECT, R_CONTROL, R_ATTACH };

/* "/pty/{name}[/control|/attach]" → route and name (unvalidated, may be
 * too long: *name_bad is set then). */
static enum route parse_path(const char *path, char *name, size_t namelen,
                             int *name_bad)
{
    const char *rest = NULL;
    const char *slash = NULL;
    size_t n;
    enum route r = R_CONNECT;

    *name_bad = 0;
    if (strncmp(path, "/pty/", 5) != 0)
        return R_NONE;
    rest = path + 5;
    slash = strchr(rest, '/');
    if (slash != NULL) {
        if (strcmp(slash, "/control") == 0)
            r = R_CONTROL;
        else if (strcmp(slash, "/attach") == 0)
            r = R_ATTACH;
        else
            return R_NONE;
        n = (size_t)(slash - rest);
    } else {
        n = strlen(rest);
    }
    if (n >= namelen) {
        *name_bad = 1;
        n = namelen - 1;
    }
    memcpy(name, rest, n);
    name[n] = '\0';
    if (!ptyd_name_valid(name))
        *name_bad = 1;
    return r;
}

static const char *name_rule =
    "session names are 1-256 characters of [A-Za-z0-9_-]";

/* --------------------------------------------------------------- views */

static char *connect_view(const struct ptyd_session *s, int created)
{
    cJSON *o = cJSON_CreateObject();
    char url[PTYD_NAME_MAX + 32];
    char *txt = NULL;

    snprintf(url, sizeof(url), "/pty/%s/attach", s->name);
    cJSON_AddBoolToObject(o, "attached", s->ws != NULL);
    cJSON_AddBoolToObject(o, "created", created);
    cJSON_AddStringToObject(o, "connect_url", url);
    cJSON_AddNumberToObject(o, "idle_ttl_seconds", ptyd_cfg.idle_ttl);
    cJSON_AddNumberToObject(o, "cols", s->cols);
    cJSON_AddNumberToObject(o, "rows", s->rows);
    cJSON_AddStringToObject(o, "session_name", s->name);
    cJSON_AddStringToObject(o, "status", "running");
    cJSON_AddStringToObject(o, "protocol_version", "1");
    txt = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return txt;
}

static int send_control_result(struct lws *wsi, const char *name,
                               const char *status)
{
    cJSON *o = cJSON_CreateObject();
    char *txt = NULL;
    int rc = -1;

    cJSON_AddStringToObject(o, "session_name", name);
    cJSON_AddStringToObject(o, "status", status);
    txt = cJSON_PrintUnformatted(o);
    if (txt != NULL)
        rc = send_json(wsi, 200, txt);
    free(txt);
    cJSON_Delete(o);
    return rc;
}

/* ------------------------------------------------------------- connect */

/* cols/rows from the query: both or neither. 0 = given, 1 = absent, -1 bad. */
static int query_dims(struct lws *wsi, int *cols, int *rows, char *err,
                      size_t errlen)
{
    char cbuf[64];
    char rbuf[64];
    const char *c = lws_get_urlarg_by_name(wsi, "cols=", cbuf, sizeof(cbuf));
    const char *r = lws_get_urlarg_by_name(wsi, "rows=", rbuf, sizeof(rbuf));

    if (c == NULL && r == NULL)
        return 1;
    if (c == NULL || r == NULL) {
        snprintf(err, errlen, "give both cols and rows (1-1000) or neither");
        return -1;
    }
    *cols = ptyd_parse_dim(c);
    *rows = ptyd_parse_dim(r);
    if (*cols < 0 || *rows < 0) {
        snprintf(
            err, errlen,
            "cols and rows must be integers from 1 to 1000 (got cols=%.20s, "
            "rows=%.20s)",
            c, r);
        return -1;
    }
    return 0;
}

static int serve_connect(struct lws *wsi, const char *name)
{
    struct ptyd_session *s = ptyd_session_find(name);
    char err[256];
    int cols = 80;
    int rows = 24;
    int dims = query_dims(wsi, &cols, &rows, err, sizeof(err));
    int created = 0;
    char *view = NULL;
    int rc;

    if (dims < 0)
        return finish(wsi, send_error(wsi, 400, "%s", err));
    if (s == NULL) {
        s = ptyd_session_create(vhost, name, cols, rows, err, sizeof(err));
        if (s == NULL)
            return finish(wsi, send_error(wsi, 500, "%s", err));
        created = 1;
    } else if (dims == 0 && ptyd_session_resize(s, cols, rows) != 0) {
        return finish(
            wsi, send_error(wsi, 500, "resize failed: %s", strerror(errno)));
    }
    view = connect_view(s, created);
    rc = view ? send_json(wsi, 200, view) : -1;
    free(view);
    return finish(wsi, rc);
}

/* ------------------------------------------------------------- control */

static int control_resize(struct lws *wsi, struct ptyd_session *s,
                          const cJSON *body)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(body, "cols");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(body, "rows");
    int ok = cJSON_IsNumber(c) && cJSON_IsNumber(r) &&
             c->valuedouble == (int)c->valuedouble &&
             r->valuedouble == (int)r->valuedouble && c->valueint >= 1 &&
             c->valueint <= PTYD_DIM_MAX && r->valueint >= 1 &&
             r->valueint <= PTYD_DIM_MAX;

    if (!ok)
        return send_error(wsi, 400,
                          "resize needs integer cols and rows, each 1-1000");
    if (ptyd_session_resize(s, c->valueint, r->valueint) != 0)
        return send_error(wsi, 500, "resize failed: %s", strerror(errno));
    return send_control_result(wsi, s->name, "running");
}

static int control_signal(struct lws *wsi, struct ptyd_session *s,
                          const cJSON *body)
{
    const char *name =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "signal"));
    char err[256];
    int sig = name ? ptyd_signal_number(name) : -1;

    if (name == NULL)
        return send_error(
            wsi, 400,
            "signal needs \"signal\": a POSIX name such as \"SIGINT\"");
    if (sig < 0)
        return send_error(
            wsi, 400,
            "unknown signal name \"%.64s\": use a POSIX name such as "
            "SIGINT, SIGTERM, SIGHUP, SIGKILL, SIGUSR1",
            name);
    if (ptyd_session_signal(s, sig, err, sizeof(err)) != 0)
        return send_error(wsi, 400, "%s", err);
    return send_control_result(wsi, s->name, "running");
}

static int serve_control(struct lws *wsi, struct pss *p)
{
    struct ptyd_session *s = ptyd_session_find(p->name);
    cJSON *body = NULL;
    const char *action = NULL;
    char name[PTYD_NAME_MAX + 1];
    int rc;

    if (p->body_too_big)
        return finish(wsi,
                      send_error(wsi, 413, "control body larger than 64 KiB"));
    body = p->body ? cJSON_ParseWithLength(p->body, p->body_len) : NULL;
    if (!cJSON_IsObject(body)) {
        rc = send_error(wsi, 400,
                        "control body must be a JSON object {\"action\": "
                        "\"resize\"|\"signal\"|\"close\", \"cols\"?, "
                        "\"rows\"?, \"signal\"?}");
        goto out;
    }
    action =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "action"));
    if (action == NULL ||
        (strcmp(action, "resize") != 0 && strcmp(action, "signal") != 0 &&
         strcmp(action, "close") != 0)) {
        rc = send_error(wsi, 400,
                        "action must be \"resize\", \"signal\" or \"close\"");
        goto out;
    }
    if (s == NULL) {
        rc = send_error(wsi, 404, "no PTY session %s: connect to it first",
                        p->name);
        goto out;
    }
    if (strcmp(action, "resize") == 0) {
        rc = control_resize(wsi, s, body);
    } else if (strcmp(action, "signal") == 0) {
        rc = control_signal(wsi, s, body);
    } else {
        snprintf(name, sizeof(name), "%s", s->name);
        ptyd_session_close(s);
        rc = send_control_result(wsi, name, "closed");
    }
out:
    cJSON_Delete(body);
    return finish(wsi, rc);
}

/* ----------------------------------------------------------------- http */

/* lws 4.1 reads request bodies by Content-Length only: without one the body
 * is empty (HTTP/1.1), and a chunked body is refused (connection closed, so
 * its bytes are never taken for a request). */
static int start_control(struct lws *wsi, struct pss *p)
{
    p->is_control = 1;
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0) {
        send_error(
            wsi, 411,
            "send the control body with a Content-Length header (chunked "
            "bodies are not supported)");
        return -1;
    }
    if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) <= 0)
        return serve_control(wsi, p);
    return 0; /* the body follows */
}

static int on_http(struct lws *wsi, struct pss *p, const char *path)
{
    int is_get = lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0;
    int is_post = lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0;
    int bad = 0;
    enum route r = parse_path(path, p->name, sizeof(p->name), &bad);

    if (r == R_NONE)
        return finish(
            wsi,
            send_error(wsi, 404,
                       "no such path: the PTY API serves GET "
                       "/pty/{session}, POST /pty/{session}/control and the "
                       "WebSocket at the connect_url"));
    if (bad)
        return finish(
            wsi, send_error(wsi, 400, "invalid session name: %s", name_rule));
    if (r == R_CONNECT && is_get)
        return serve_connect(wsi, p->name);
    if (r == R_CONTROL && is_post)
        return start_control(wsi, p);
    if (r == R_ATTACH)
        return finish(wsi,
                      send_error(wsi, 400,
                                 "%s is the WebSocket data plane: connect with "
                                 "a WebSocket upgrade",
                                 path));
    return finish(wsi,
                  send_error(wsi, 405,
                             "method not allowed: GET /pty/{session}, POST "
                             "/pty/{session}/control"));
}

static int on_body(struct pss *p, const void *in, size_t len)
{
    char *nb = NULL;

    if (p->body_too_big || p->body_len + len > BODY_MAX) {
        p->body_too_big = 1;
        return 0;
    }
    nb = realloc(p->body, p->body_len + len + 1);
    if (nb == NULL)
        return -1;
    p->body = nb;
    memcpy(p->body + p->body_len, in, len);
    p->body_len += len;
    p->body[p->body_len] = '\0';
    return 0;
}

/* Single attach, decided before the upgrade so the refusal is HTTP 400. */
static int confirm_upgrade(struct lws *wsi)
{
    char path[PTYD_NAME_MAX + 64];
    char name[PTYD_NAME_MAX + 1];
    struct ptyd_session *s = NULL;
    int bad = 0;

    if (lws_hdr_copy(wsi, path, sizeof(path), WSI_TOKEN_GET_URI) < 0)
        path[0] = '\0';
    if (parse_path(path, name, sizeof(name), &bad) != R_ATTACH) {
        send_error(
            wsi, 404,
            "WebSocket upgrades are served at /pty/{session}/attach (the "
            "connect_url)");
        return 1;
    }
    if (bad) {
        send_error(wsi, 400, "invalid session name: %s", name_rule);
        return 1;
    }
    s = ptyd_session_find(name);
    if (s == NULL || s->dead) {
        send_error(wsi, 404, "no PTY session %s: connect to it first", name);
        return 1;
    }
    if (s->ws != NULL) {
        send_error(
            wsi, 400,
            "PTY session %s already has a client attached (single attach)",
            name);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ websocket */

static int ws_established(struct lws *wsi, struct pss *p)
{
    char path[PTYD_NAME_MAX + 64];
    int bad = 0;
    struct ptyd_session *s = NULL;

    if (lws_hdr_copy(wsi, path, sizeof(path), WSI_TOKEN_GET_URI) < 0 ||
        parse_path(path, p->name, sizeof(p->name), &bad) != R_ATTACH || bad)
        return -1;
    s = ptyd_session_find(p->name);
    if (s == NULL || s->dead || s->ws != NULL)
        return -1; /* raced with another attach or a close */
    s->ws = wsi;
    s->last_rx = time(NULL);
    s->last_ping = s->last_rx;
    s->close_code = 0;
    p->s = s;
    if (s->out.len > 0)
        lws_callback_on_writable(wsi);
    return 0;
}

static int ws_writable(struct lws *wsi, struct pss *p)
{
    struct ptyd_session *s = p->s;
    unsigned char buf[LWS_PRE + 16384];
    size_t n;

    if (s == NULL)
        return -1;
    if (s->close_code != 0) {
        const char *why =
            s->close_code == 4000 ? "shell exited" : "ping timeout";

        lws_close_reason(wsi, (enum lws_close_status)s->close_code,
                         (unsigned char *)why, strlen(why));
        return -1;
    }
    if (s->want_ping) {
        s->want_ping = 0;
        /* A payload: lws 4.1 drops zero-length pongs before the callback. */
        memcpy(buf + LWS_PRE, "ptyd", 4);
        if (lws_write(wsi, buf + LWS_PRE, 4, LWS_WRITE_PING) < 0)
            return -1;
        lws_callback_on_writable(wsi);
        return 0;
    }
    if (s->out.len == 0)
        return 0;
    n = s->out.len < 16384 ? s->out.len : 16384;
    memcpy(buf + LWS_PRE, s->out.data, n);
    if (lws_write(wsi, buf + LWS_PRE, n, LWS_WRITE_BINARY) < (int)n)
        return -1;
    ptyd_buf_consume(&s->out, n);
    if (s->out.len > 0)
        lws_callback_on_writable(wsi);
    ptyd_session_kick_pty(s);
    return 0;
}

static int ws_receive(struct lws *wsi, struct pss *p, const void *in,
                      size_t len)
{
    struct ptyd_session *s = p->s;

    if (s == NULL)
        return -1;
    s->last_rx = time(NULL);
    if (s->dead || len == 0)
        return 0;
    if (ptyd_buf_append(&s->in, in, len) != 0)
        return -1;
    if (s->in.len > PTYD_IN_HIGH)
        lws_rx_flow_control(wsi, 0);
    if (s->pty_wsi != NULL)
        lws_callback_on_writable(s->pty_wsi);
    return 0;
}

static void ws_closed(struct pss *p)
{
    struct ptyd_session *s = p->s;

    if (s == NULL)
        return;
    p->s = NULL;
    s->ws = NULL;
    s->detached_at = time(NULL);
    s->close_code = 0;
    if (s->dead && s->pty_wsi == NULL)
        ptyd_session_free(s);
}

/* ------------------------------------------------------------- protocol */

static int main_callback(struct lws *wsi, enum lws_callback_reasons reason,
                         void *user, void *in, size_t len)
{
    struct pss *p = user;

    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return on_http(wsi, p, in);
    case LWS_CALLBACK_HTTP_BODY:
        return p->is_control ? on_body(p, in, len) : 0;
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        return p->is_control ? serve_control(wsi, p) : 0;
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return confirm_upgrade(wsi);
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
        if (p != NULL) {
            free(p->body);
            p->body = NULL;
            p->body_len = 0;
            p->is_control = 0;
            p->body_too_big = 0;
        }
        return 0;
    case LWS_CALLBACK_ESTABLISHED:
        return ws_established(wsi, p);
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return ws_writable(wsi, p);
    case LWS_CALLBACK_RECEIVE:
        return ws_receive(wsi, p, in, len);
    case LWS_CALLBACK_RECEIVE_PONG:
        if (p->s != NULL)
            p->s->last_rx = time(NULL);
        return 0;
    case LWS_CALLBACK_CLOSED:
        ws_closed(p);
        return 0;
    default:
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}

/* ----------------------------------------------------------------- key */

static int key_matches(const char *line, size_t len)
{
    size_t klen = strlen(ptyd_key);
    unsigned char diff = 0;
    size_t i;

    if (len != klen)
        return 0;
    for (i = 0; i < len; i++) /* constant time */
        diff |= (unsigned char)(line[i] ^ ptyd_key[i]);
    return diff == 0;
}

static void gate_refuse(int fd)
{
    static const char body[] =
        "{\"message\":\"the PTY server of this devbox takes connections from "
        "devboxd only: "
        "use a PTY tunnel (create_pty_tunnel) and its auth_token\"}";
    char msg[512];
    int n =
        snprintf(msg, sizeof(msg),
                 "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 sizeof(body) - 1, body);

    if (n > 0 && write(fd, msg, (size_t)n) < 0) {
        /* the connection is closed next anyway */
    }
}

/* Reads a new connection's first line: devboxd's key, then the connection
 * goes to lws as HTTP with whatever followed the line. Anything else is
 * answered 403 and closed. -1 closes the gate (its fd; a passed connection
 * lives on in a duplicate). */
static int gate_read(struct lws *wsi, struct gate *g)
{
    int fd = lws_get_socket_fd(wsi);
    char *nl = NULL;
    size_t line;
    size_t rest;
    ssize_t n;
    int c;

    if (g == NULL)
        return -1;
    n = read(fd, g->buf + g->len, sizeof(g->buf) - 1 - g->len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0)
        return -1;
    g->len += (size_t)n;
    nl = memchr(g->buf, '\n', g->len);
    if (nl == NULL) {
        if (g->len < sizeof(g->buf) - 1)
            return 0;
        gate_refuse(fd);
        return -1;
    }
    line = (size_t)(nl - g->buf);
    if (!key_matches(g->buf, line)) {
        gate_refuse(fd);
        return -1;
    }
    rest = g->len - line - 1;
    c = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (c >= 0 &&
        lws_adopt_socket_vhost_readbuf(vhost, c, nl + 1, rest) == NULL)
        return -1; /* lws closed c */
    return -1;
}

static int gate_callback(struct lws *wsi, enum lws_callback_reasons reason,
                         void *user, void *in, size_t len)
{
    struct gate *g = lws_get_opaque_user_data(wsi);

    (void)user;
    (void)in;
    (void)len;
    switch (reason) {
    case LWS_CALLBACK_RAW_RX_FILE:
        return gate_read(wsi, g);
    case LWS_CALLBACK_RAW_CLOSE_FILE:
        free(g);
        lws_set_opaque_user_data(wsi, NULL);
        return 0;
    default:
        return 0;
    }
}

/* A new connection: straight to lws as HTTP, or first through the gate. */
static void take_connection(int c)
{
    lws_sock_file_fd_type fd;
    lws_adopt_desc_t ad;
    struct lws *wsi = NULL;
    struct gate *g = NULL;

    fd.sockfd = c;
    if (ptyd_key[0] == '\0') {
        lws_adopt_descriptor_vhost(vhost, LWS_ADOPT_SOCKET | LWS_ADOPT_HTTP, fd,
                                   NULL, NULL);
        return;
    }
    g = calloc(1, sizeof(*g));
    if (g == NULL) {
        close(c);
        return;
    }
    memset(&ad, 0, sizeof(ad));
    ad.vh = vhost;
    ad.type = LWS_ADOPT_RAW_FILE_DESC;
    ad.fd.filefd = c;
    ad.vh_prot_name = "ptyd-gate";
    ad.opaque = g;
    wsi = lws_adopt_descriptor_vhost_via_info(&ad);
    if (wsi == NULL) {
        free(g); /* lws closed c */
        return;
    }
    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, GATE_TIMEOUT_S);
}

/* The key from fd (devboxd writes it to ptyd's stdin and closes it): one
 * line of KEY_MIN..KEY_MAX hex digits. 0, or -1 with a message. */
static int read_key(int fd)
{
    char buf[KEY_MAX + 2];
    size_t len = 0;
    ssize_t n;
    int devnull;

    while (len < sizeof(buf) - 1 &&
           (n = read(fd, buf + len, sizeof(buf) - 1 - len)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        len += (size_t)n;
        if (memchr(buf, '\n', len) != NULL)
            break;
    }
    buf[len] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    len = strlen(buf);
    /* Nothing else reads that pipe later. */
    devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull >= 0) {
        dup2(devnull, fd);
        close(devnull);
    }
    if (len < KEY_MIN || len > KEY_MAX ||
        strspn(buf, "0123456789abcdef") != len) {
        fprintf(stderr,
                "devboxd-ptyd: --key-fd %d gave no key (a line of %d to %d hex "
                "digits)\n",
                fd, KEY_MIN, KEY_MAX);
        return -1;
    }
    memcpy(ptyd_key, buf, len + 1);
    explicit_bzero(buf, sizeof(buf));
    return 0;
}

/* The inherited listening socket, watched as a raw fd: accept and hand
 * each connection to lws as an HTTP connection (through the gate when a
 * key is set). */
static int listen_callback(struct lws *wsi, enum lws_callback_reasons reason,
                           void *user, void *in, size_t len)
{
    int lfd;
    int c;

    (void)user;
    (void)in;
    (void)len;
    if (reason != LWS_CALLBACK_RAW_RX_FILE)
        return 0;
    lfd = lws_get_socket_fd(wsi);
    while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        int one = 1;

        setsockopt(c, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof(one));
        take_connection(c);
    }
    return 0;
}

static struct lws_protocols protocols[] = {
    {"ptyd", main_callback, sizeof(struct pss), 16384, 0, NULL, 0},
    {"ptyd-listen", listen_callback, 0, 0, 0, NULL, 0},
    {"ptyd-gate", gate_callback, 0, 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0}, /* ptyd-pty, filled in main */
    {NULL, NULL, 0, 0, 0, NULL, 0}};

static void tick(lws_sorted_usec_list_t *sul)
{
    ptyd_housekeeping();
    lws_sul_schedule(ctx, 0, sul, tick, LWS_US_PER_SEC);
}

static void on_term(int sig)
{
    (void)sig;
    stopping = 1;
    if (ctx != NULL)
        lws_cancel_service(ctx);
}

static int open_loopback(int port)
{
    struct sockaddr_in a;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(fd, 64) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int int_arg(const char *s, int lo, int hi)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);

    return (*s == '\0' || *end != '\0' || v < lo || v > hi) ? -1 : (int)v;
}

static int parse_args(int argc, char **argv, int *listen_fd, int *key_fd)
{
    int i;

    for (i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i];
        int v = int_arg(argv[i + 1], 0, 1000000);

        if (v < 0)
            goto bad;
        if (strcmp(k, "--listen-fd") == 0)
            *listen_fd = v;
        else if (strcmp(k, "--port") == 0 && v >= 1 && v <= 65535)
            *listen_fd = open_loopback(v);
        else if (strcmp(k, "--idle-ttl") == 0 && v >= 1)
            ptyd_cfg.idle_ttl = v;
        else if (strcmp(k, "--ping-interval") == 0 && v >= 1)
            ptyd_cfg.ping_interval = v;
        else if (strcmp(k, "--ping-timeout") == 0 && v >= 1)
            ptyd_cfg.ping_timeout = v;
        else if (strcmp(k, "--key-fd") == 0)
            *key_fd = v;
        else
            goto bad;
    }
    if (i == argc && *listen_fd >= 0)
        return 0;
bad:
    fprintf(stderr,
            "usage: devboxd-ptyd [--listen-fd FD (default 3) | --port PORT] "
            "[--key-fd FD] [--idle-ttl S] [--ping-interval S] [--ping-timeout "
            "S]\n");
    return -1;
}

int main(int argc, char **argv)
{
    struct lws_context_creation_info info;
    lws_sock_file_fd_type fd;
    int listen_fd = 3;
    int key_fd = -1;
    int rc = 1;

    /* First: other processes of the devbox's user may not ptrace us or
     * read our memory, fds or environment in /proc (the key). Shells are
     * dumpable again after their execve. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (parse_args(argc, argv, &listen_fd, &key_fd) != 0)
        return 2;
    if (key_fd >= 0 && read_key(key_fd) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    lws_set_log_level(LLL_ERR, NULL);
    protocols[3] = *ptyd_pty_protocol;
    memset(&info, 0, sizeof(info));
    info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
    info.protocols = protocols;
    info.max_http_header_data = 4096;
    info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
    ctx = lws_create_context(&info);
    if (ctx == NULL) {
        fprintf(stderr,
                "devboxd-ptyd: cannot create the libwebsockets context\n");
        goto out;
    }
    vhost = lws_get_vhost_by_name(ctx, "default");
    fd.filefd = listen_fd;
    if (vhost == NULL ||
        lws_adopt_descriptor_vhost(vhost, LWS_ADOPT_RAW_FILE_DESC, fd,
                                   "ptyd-listen", NULL) == NULL) {
        fprintf(stderr, "devboxd-ptyd: cannot watch listening fd %d\n",
                listen_fd);
        goto out;
    }
    lws_sul_schedule(ctx, 0, &tick_sul, tick, LWS_US_PER_SEC);
    while (!stopping)
        if (lws_service(ctx, 0) < 0)
            break;
    rc = 0;
out:
    if (ctx != NULL)
        lws_context_destroy(ctx);
    return rc;
}
