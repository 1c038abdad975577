/* The tunnel listener: its own TCP socket (loopback by default), plus one
 * on 127.0.0.1:<same port> inside every devbox, one thread per connection.
 * The first request's Host header ({port}-{tunnel_key}.localhost) or, for
 * clients that cannot resolve that, its path (/tunnel/{port}-{tunnel_key}/
 * ..., cut before forwarding) picks the devbox and port; the connection is
 * then relayed byte for byte to 127.0.0.1:{port} inside the devbox's
 * network namespace (sandbox_connect_tcp: a socket made in the devbox's
 * netns), so HTTP, SSE and WebSocket upgrades all pass. Client bytes keep
 * going through http_parser until an upgrade, so every later request on the
 * connection is checked too (same tunnel and port, token when
 * authenticated). A client opening with the HTTP/2 preface is served by
 * h2c.c, each request forwarded as its own HTTP/1.1 request. */
#define _GNU_SOURCE
#include "tunnels.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http_server.h"
#include "mcphub.h"
#include "pty_sessions.h"
#include "ssh_keys.h"
#include "sandbox.h"
#include "util.h"

#define HEAD_MAX (64 * 1024)    /* first request head, bytes */
#define RELAY_BUF (64 * 1024)   /* per direction */
#define HEAD_TIMEOUT_MS 30000   /* first request head must arrive within */
#define CONNECT_TIMEOUT_MS 5000 /* connect inside the devbox */
#define CHECK_MS 250            /* tunnel/devbox still valid? */
#define HVAL_MAX 512            /* longest header value we look at */
#define URL_MAX 2048            /* request target kept (PTY ?token=) */
#define MAX_CONNS 1024 /* relayed connections at once (a thread each) */
/* Slots beyond MAX_CONNS for connections dropped to make room and still
 * closing: when all are open, the oldest connection whose first request
 * has not been routed yet (no complete head, or refused) is shut down for
 * the newcomer, so head-less clients cannot keep others out. */
#define CONN_SPARE 64

struct tconn;

/* The tunnel listener's socket inside one devbox (127.0.0.1:P there), so
 * the URLs the API hands out work from inside devboxes too. Closed by the
 * accept thread only (it may be polling it), once marked dead. */
struct box_listener {
    char box_id[40];
    int fd; /* -1 once closed */
    int dead;
    int conns; /* connections accepted from it and still open */
    struct box_listener *next;
};
/* Connections from inside one devbox at once: a devbox cannot take the
 * listener's whole table from the host and the other devboxes. Guarded by
 * the server lock; a listener's struct lives until its last connection. */
#define BOX_MAX_CONNS 128

struct tunnel_server {
    struct engine *eng;
    int lfd;
    int port;
    int wake_fd; /* eventfd: the box listener list changed */
    /* HTTP/2 with prior knowledge (the Runloop SDK's default on Node):
     * h2c.c serves those connections, tunnel_h2_handle forwards each
     * request. Listens on nothing itself. */
    struct http_server *h2;
    struct box_listener *boxes; /* guarded by lock */
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stopping;
    int conns;  /* threads alive */
    int active; /* live[] entries not dropped */
    unsigned long seq;
    struct tconn *live[MAX_CONNS + CONN_SPARE]; /* guarded by lock */
};

/* Headers the tunnel reads; other headers pass untouched. */
enum { H_HOST, H_XHOST, H_AUTH, H_TAUTH, H_REFERER, H_N };
static const char *const hnames[H_N] = {
    "host", "x-runloop-host", "authorization", "x-runloop-tunnel-authorization",
    "referer"};

struct tconn {
    struct tunnel_server *ts;
    int cfd;
    int ufd;
    http_parser parser;
    http_parser_settings settings;
    /* header accumulation for the current request */
    char field[40];
    size_t field_len;
    int field_long;
    int in_value;
    int cur; /* H_* of the value being read, or -1 */
    char hval[H_N][HVAL_MAX];
    size_t hlen[H_N];
    int hbad[H_N];     /* too long or repeated */
    char url[URL_MAX]; /* request target, "" when longer than URL_MAX */
    size_t url_len;
    int url_long;
    int heads; /* request heads completed */
    int routed;
    int violation;
    /* the route of the first request */
    char box_id[40];
    char key[TUNNEL_KEY_LEN + 8];
    int port;
    int keep_alive;
    int by_path;       /* routed by /tunnel/{port}-{key}: one request only */
    size_t prefix_len; /* of that prefix in the first request target */
    int ssh;           /* the devbox's SSH route (ssh_keys.h) */
    char *ssh_cmd;     /* its sshd command (may hold secret values) */
    /* guarded by ts->lock */
    int64_t ssh_start_ms; /* when its sshd started, 0 before */
    int slot;
    int relaying;
    int evicted;
    unsigned long seq;
    struct box_listener *from; /* accepted inside this devbox, or NULL */
};

/* ------------------------------------------------------------ responses */

static const char *reason_phrase(int status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 408:
        return "Request Timeout";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    default:
        return "Error";
    }
}

static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};

            if (poll(&p, 1, 5000) <= 0)
                return;
            continue;
        }
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* A JSON error in the API's shape, then the connection closes. */
static void send_error(int fd, int status, const char *retry_after,
                       const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void send_error(int fd, int status, const char *retry_after,
                       const char *fmt, ...)
{
    static const char *const codes[] = {"bad_request",         "unauthorized",
                                        "not_found",           "bad_gateway",
                                        "service_unavailable", "error",
                                        "too_many_requests"};
    char msg[768];
    char head[512];
    char *body = NULL;
    cJSON *j = cJSON_CreateObject();
    const char *code = codes[5];
    va_list ap;
    int hl;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (status == 400 || status == 408 || status == 431)
        code = codes[0];
    else if (status == 401)
        code = codes[1];
    else if (status == 404)
        code = codes[2];
    else if (status == 502)
        code = codes[3];
    else if (status == 503)
        code = codes[4];
    else if (status == 429)
        code = codes[6];
    cJSON_AddStringToObject(j, "code", code);
    cJSON_AddStringToObject(j, "message", msg);
    body = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (body == NULL)
        return;
    hl = snprintf(head, sizeof(head),
                  "HTTP/1.1 %d %s\r\ncontent-type: application/json\r\n"
                  "content-length: %zu\r\nconnection: close\r\n%s%s%s\r\n",
                  status, reason_phrase(status), strlen(body),
                  retry_after ? "retry-after: " : "",
                  retry_after ? retry_after : "", retry_after ? "\r\n" : "");
    write_all(fd, head, (size_t)hl);
    write_all(fd, body, strlen(body));
    free(body);
}

/* 307 to location (a path on this origin), then the connection closes. */
static void send_redirect(int fd, const char *location)
{
    char head[URL_MAX + 256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 307 Temporary Redirect\r\nlocation: %s\r\n"
                     "content-length: 0\r\nconnection: close\r\n\r\n",
                     location);

    if (n > 0 && (size_t)n < sizeof(head))
        write_all(fd, head, (size_t)n);
}

/* --------------------------------------------------------- host parsing */

/* "{port}-{key}" (lower-case already, n bytes): port 1-65535 without a
 * leading 0, key [a-z0-9] shorter than keylen. 0 with *port and key, or -1. */
static int parse_label(const char *s, size_t n, int *port, char *key,
                       size_t keylen)
{
    const char *dash = memchr(s, '-', n);
    size_t plen = dash != NULL ? (size_t)(dash - s) : 0;
    size_t klen = dash != NULL ? n - plen - 1 : 0;
    long p = 0;
    size_t i;

    if (dash == NULL || plen == 0 || plen > 5 || s[0] == '0' || klen == 0 ||
        klen >= keylen)
        return -1;
    for (i = 0; i < plen; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        p = p * 10 + (s[i] - '0');
    }
    if (p < 1 || p > 65535)
        return -1;
    for (i = 0; i < klen; i++) {
        char ch = dash[1 + i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
            return -1;
    }
    *port = (int)p;
    memcpy(key, dash + 1, klen);
    key[klen] = '\0';
    return 0;
}

int tunnel_parse_host(const char *host, int *port, char *key, size_t keylen)
{
    char h[256];
    size_t len = strlen(host);
    char *dot = NULL;
    char *colon = NULL;
    const char *domain = NULL;
    size_t i;

    if (len == 0 || len >= sizeof(h))
        return -1;
    for (i = 0; i <= len; i++)
        h[i] = (char)tolower((unsigned char)host[i]);
    colon = strrchr(h, ':');
    if (colon != NULL) {
        if (colon[1] == '\0' ||
            strspn(colon + 1, "0123456789") != strlen(colon + 1))
            return -1;
        *colon = '\0';
    }
    len = strlen(h);
    if (len > 0 && h[len - 1] == '.')
        h[--len] = '\0';
    dot = strchr(h, '.');
    domain = tunnel_template_domain();
    if (dot == NULL || (strcmp(dot + 1, "localhost") != 0 &&
                        strcmp(dot + 1, "tunnel.localhost") != 0 &&
                        (domain == NULL || strcmp(dot + 1, domain) != 0)))
        return -1;
    return parse_label(h, (size_t)(dot - h), port, key, keylen);
}

int tunnel_parse_path(const char *target, int *port, char *key, size_t keylen,
                      size_t *prefix_len)
{
    static const char prefix[] = "/tunnel/";
    char seg[64];
    size_t n;
    size_t i;

    if (strncmp(target, prefix, sizeof(prefix) - 1) != 0)
        return -1;
    target += sizeof(prefix) - 1;
    n = strcspn(target, "/?#");
    if (n >= sizeof(seg))
        return -1;
    for (i = 0; i < n; i++)
        seg[i] = (char)tolower((unsigned char)target[i]);
    if (parse_label(seg, n, port, key, keylen) != 0)
        return -1;
    *prefix_len = sizeof(prefix) - 1 + n;
    return 0;
}

/* Whether a request with this Host may be routed by its path: loopback
 * literals, localhost, and the host the path template names. Any other name
 * is refused, so a page that rebinds its own DNS name to 127.0.0.1 cannot
 * reach tunnels through the browser (the subdomain form has the same rule). */
static int path_host_ok(const char *host)
{
    char h[256];
    char *colon = NULL;
    const char *mine = tunnel_path_host();
    const char *domain = tunnel_template_domain();
    struct in_addr a4;
    size_t len = strlen(host);
    size_t i;

    if (len == 0 || len >= sizeof(h))
        return 0;
    for (i = 0; i <= len; i++)
        h[i] = (char)tolower((unsigned char)host[i]);
    if (h[0] == '[') {
        char *end = strchr(h, ']');

        if (end == NULL || (end[1] != '\0' && end[1] != ':'))
            return 0;
        end[1] = '\0';
        return strcmp(h, "[::1]") == 0 ||
               (mine != NULL && strncmp(h + 1, mine, strlen(mine)) == 0 &&
                strlen(mine) == (size_t)(end - h - 1));
    }
    colon = strchr(h, ':');
    if (colon != NULL)
        *colon = '\0';
    len = strlen(h);
    if (len > 0 && h[len - 1] == '.')
        h[--len] = '\0';
    if (strcmp(h, "localhost") == 0)
        return 1;
    if (inet_pton(AF_INET, h, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127)
        return 1;
    return (mine != NULL && strcmp(h, mine) == 0) ||
           (domain != NULL && strcmp(h, domain) == 0);
}

/* ------------------------------------------------------- header capture */

static void end_header(struct tconn *c)
{
    c->in_value = 0;
    c->cur = -1;
    c->field_len = 0;
    c->field_long = 0;
}

static int on_message_begin(http_parser *p)
{
    struct tconn *c = p->data;

    memset(c->hlen, 0, sizeof(c->hlen));
    memset(c->hbad, 0, sizeof(c->hbad));
    c->url_len = 0;
    c->url_long = 0;
    c->url[0] = '\0';
    end_header(c);
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    struct tconn *c = p->data;

    if (c->url_long || c->url_len + len >= URL_MAX) {
        c->url_long = 1;
        c->url[0] = '\0';
        return 0;
    }
    memcpy(c->url + c->url_len, at, len);
    c->url_len += len;
    c->url[c->url_len] = '\0';
    return 0;
}

/* The value of ?token= in the request target (rl-cli sends the PTY token
 * there), copied into out; NULL when absent. */
static const char *query_token(const struct tconn *c, char *out, size_t outlen)
{
    const char *q = strchr(c->url, '?');

    while (q != NULL) {
        size_t n;

        q++;
        n = strcspn(q, "&#");
        if (n > 6 && strncmp(q, "token=", 6) == 0 && n - 6 < outlen) {
            memcpy(out, q + 6, n - 6);
            out[n - 6] = '\0';
            return out;
        }
        q = q[n] == '&' ? q + n : NULL;
    }
    return NULL;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    struct tconn *c = p->data;
    size_t i;

    if (c->in_value)
        end_header(c);
    for (i = 0; i < len; i++) {
        if (c->field_len + 1 >= sizeof(c->field)) {
            c->field_long = 1;
            break;
        }
        c->field[c->field_len++] = (char)tolower((unsigned char)at[i]);
    }
    c->field[c->field_len] = '\0';
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    struct tconn *c = p->data;
    int i;

    if (!c->in_value) {
        c->in_value = 1;
        c->cur = -1;
        for (i = 0; i < H_N && !c->field_long; i++) {
            if (strcmp(c->field, hnames[i]) == 0)
                c->cur = i;
        }
        if (c->cur >= 0 && c->hlen[c->cur] > 0)
            c->hbad[c->cur] = 1; /* repeated: ambiguous routing or auth */
        if (c->cur >= 0)
            c->hlen[c->cur] = 0;
    }
    if (c->cur < 0)
        return 0;
    if (c->hlen[c->cur] + len >= HVAL_MAX) {
        c->hbad[c->cur] = 1;
        return 0;
    }
    memcpy(c->hval[c->cur] + c->hlen[c->cur], at, len);
    c->hlen[c->cur] += len;
    c->hval[c->cur][c->hlen[c->cur]] = '\0';
    return 0;
}

static const char *hget(const struct tconn *c, int which)
{
    return c->hlen[which] > 0 && !c->hbad[which] ? c->hval[which] : NULL;
}

/* The token sent with a request: X-Runloop-Tunnel-Authorization first (so
 * the app's own Authorization passes through), else Authorization. */
static const char *bearer_of(const struct tconn *c)
{
    const char *v = hget(c, H_TAUTH);

    if (v == NULL)
        v = hget(c, H_AUTH);
    if (v == NULL || strncasecmp(v, "Bearer ", 7) != 0)
        return NULL;
    v += 7;
    while (*v == ' ')
        v++;
    return v;
}

/* ---------------------------------------------------------------- route */

struct route {
    int status; /* 0 = go; else the error to answer */
    char msg[512];
    const char *retry_after;
    char location[URL_MAX + 128]; /* status 307: where the request belongs */
    struct devbox *box;           /* when status is 0: holds an io_refs count */
    int wake;                     /* resume the devbox (wake on HTTP) */
};

/* Sets r to answer status with fmt's message: -1. */
static int refuse(struct route *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(struct route *r, int status, const char *fmt, ...)
{
    va_list ap;

    r->status = status;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
    va_end(ap);
    return -1;
}

/* What a tunnel key leads to: the devbox's tunnel or one of its PTY
 * tunnels. Filled under eng->lock. */
struct target {
    struct devbox *box;
    int pty;
    int ssh;
    char ssh_pub[512];
    int authenticated;
    char token[TUNNEL_TOKEN_LEN + 1];
    int keep_alive;
    int wake;
};

static int lifecycle_wakes(const struct devbox *box)
{
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(box->spec, "launch_parameters");
    const cJSON *life = cJSON_GetObjectItemCaseSensitive(lp, "lifecycle");
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(life, "resume_triggers");

    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rt, "http"));
}

/* Lock held. 0 with *t filled, or -1 when no live tunnel has the key. */
static int lookup_locked(struct engine *eng, const char *key, struct target *t)
{
    struct devbox *b;
    const char *id = NULL;

    memset(t, 0, sizeof(*t));
    for (b = eng->boxes; b != NULL; b = b->next) {
        const cJSON *k =
            cJSON_GetObjectItemCaseSensitive(b->tunnel, "tunnel_key");
        const char *mode = NULL;
        const char *tok = NULL;

        if (!cJSON_IsString(k) || strcmp(k->valuestring, key) != 0)
            continue;
        mode = util_json_str(b->tunnel, "auth_mode");
        tok = util_json_str(b->tunnel, "auth_token");
        t->box = b;
        t->authenticated = mode != NULL && strcmp(mode, "authenticated") == 0;
        snprintf(t->token, sizeof(t->token), "%s", tok != NULL ? tok : "");
        t->keep_alive = !cJSON_IsFalse(
            cJSON_GetObjectItemCaseSensitive(b->tunnel, "http_keep_alive"));
        t->wake = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
                      b->tunnel, "wake_on_http")) ||
                  lifecycle_wakes(b);
        return 0;
    }
    id = tunnel_pty_find_locked(key, t->token);
    if (id == NULL) {
        /* The SSH route: the SSH key authenticates, not a token. */
        id = ssh_keys_find_locked(key, t->ssh_pub, sizeof(t->ssh_pub));
        t->ssh = id != NULL;
        t->keep_alive = t->ssh; /* an SSH session is activity */
    }
    b = id != NULL ? engine_find_locked(eng, id) : NULL;
    /* PTY tunnels and SSH keys end with their devbox (kept across
     * suspend/resume). */
    if (b == NULL || b->status == DBX_SHUTDOWN || b->status == DBX_FAILURE)
        return -1;
    t->box = b;
    t->pty = !t->ssh;
    t->authenticated = !t->ssh;
    return 0;
}

/* The token of a request: a Bearer header, or ?token= on PTY tunnels (the
 * form rl-cli uses for the WebSocket). */
static const char *token_of(const struct tconn *c, const struct target *t,
                            char *qbuf, size_t qlen)
{
    const char *got = bearer_of(c);

    if (got == NULL && t->pty)
        got = query_token(c, qbuf, qlen);
    return got;
}

/* Lock held. The port and authentication rules of a tunnel. */
static int check_auth(const struct tconn *c, const struct target *t,
                      struct route *r)
{
    char qtok[TUNNEL_TOKEN_LEN + 8];
    const char *got = NULL;

    if (t->pty && c->port != TUNNEL_PTY_PORT)
        return refuse(r, 404, "a PTY tunnel serves port %d only",
                      TUNNEL_PTY_PORT);
    if (t->ssh && c->port != SSH_TUNNEL_PORT)
        return refuse(r, 404, "an SSH route serves port %d only",
                      SSH_TUNNEL_PORT);
    /* The SSH route carries SSH, not HTTP: the client asks for it with
     * "Connection: Upgrade" and "Upgrade: ssh" (runloop-mcp ssh --proxy). */
    if (t->ssh && !c->parser.upgrade)
        return refuse(r, 400,
                      "this is a devbox's SSH route: connect with "
                      "'runloop-mcp ssh DEVBOX' (or as its ssh ProxyCommand, "
                      "'runloop-mcp ssh --proxy URL')");
    /* Port 13 is the devbox's PTY server (a shell as the devbox user): only
     * a PTY tunnel's own key and token reach it, never an app tunnel's. */
    if (!t->pty && c->port == TUNNEL_PTY_PORT)
        return refuse(
            r, 404,
            "port %d is the devbox's PTY server: reach it "
            "through the tunnel_key and auth_token from create_pty_tunnel",
            TUNNEL_PTY_PORT);
    /* Port 14 is the devbox's MCP Hub: it forwards a token's requests with
     * the real upstream credential added, and serves the devbox only. */
    if (c->port == MCPHUB_PORT)
        return refuse(
            r, 404,
            "port %d is the devbox's MCP Hub, reachable from inside the "
            "devbox only ($RL_MCP_URL); no tunnel serves it",
            MCPHUB_PORT);
    if (hget(c, H_XHOST) != NULL && !t->authenticated)
        return refuse(r, 401,
                      "X-Runloop-Host routing is only allowed for "
                      "authenticated tunnels; send the request to the tunnel "
                      "host itself");
    if (!t->authenticated)
        return 0;
    got = token_of(c, t, qtok, sizeof(qtok));
    if (got == NULL)
        return refuse(
            r, 401,
            "this tunnel is authenticated: send "
            "'X-Runloop-Tunnel-Authorization: Bearer <auth_token>' (%s)",
            t->pty ? "the auth_token create_pty_tunnel returned"
                   : "the tunnel.auth_token of the devbox's view");
    if (!util_secret_equal(got, t->token)) {
        /* Names no devbox: the caller has not proved it may know which. */
        return refuse(r, 401,
                      "wrong tunnel token: use the current "
                      "auth_token of this tunnel (a new one comes with each "
                      "enable_tunnel / create_pty_tunnel)");
    }
    return 0;
}

/* Lock held. Routing state by devbox status. */
static void check_status_locked(const struct target *t, struct route *r)
{
    struct devbox *box = t->box;

    if (box->status == DBX_RUNNING && box->sb != NULL) {
        /* Keeps box->sb from being stopped until the connect is done. */
        box->io_refs++;
        r->box = box;
        return;
    }
    r->status = 503;
    if (box->status == DBX_SUSPENDED && t->wake && !t->pty) {
        r->wake = 1;
        r->retry_after = "5";
        snprintf(r->msg, sizeof(r->msg),
                 "devbox %s was suspended and is resuming (wake on "
                 "HTTP); retry in a few seconds",
                 box->id);
    } else if (box->status == DBX_SUSPENDED) {
        snprintf(r->msg, sizeof(r->msg), "devbox %s is suspended: resume it%s",
                 box->id,
                 t->pty ? "" : " or enable the tunnel with wake_on_http");
    } else {
        r->retry_after = "1";
        snprintf(r->msg, sizeof(r->msg),
                 "devbox %s is %s; retry once it is running", box->id,
                 dbx_status_name(box->status));
    }
}

/* A browser page opened by the path form asks for its absolute links
 * ("/static/app.js", "/next.html") without the prefix; its Referer (same
 * origin: the full URL by default) still names the tunnel. Such a request
 * is redirected (307, method and body kept) under the Referer's prefix; it
 * is not forwarded, so the redirected request passes every check itself.
 * 0 with r set to the 307, -1 when the Referer names no tunnel. */
static int referer_redirect(struct tconn *c, struct route *r)
{
    const char *ref = hget(c, H_REFERER);
    const char *host = hget(c, H_HOST);
    const char *auth = NULL;
    const char *path = NULL;
    char key[TUNNEL_KEY_LEN + 8];
    size_t prefix = 0;
    int port = 0;

    if (ref == NULL || host == NULL || c->url_long || c->url[0] != '/')
        return -1;
    if (strncasecmp(ref, "http://", 7) == 0)
        auth = ref + 7;
    else if (strncasecmp(ref, "https://", 8) == 0)
        auth = ref + 8;
    else
        return -1;
    path = strchr(auth, '/');
    /* Same origin only: the page's own host and port. */
    if (path == NULL || (size_t)(path - auth) != strlen(host) ||
        strncasecmp(auth, host, strlen(host)) != 0 ||
        tunnel_parse_path(path, &port, key, sizeof(key), &prefix) != 0)
        return -1;
    r->status = 307;
    snprintf(r->location, sizeof(r->location), "%.*s%s", (int)prefix, path,
             c->url);
    snprintf(r->msg, sizeof(r->msg), "this page's tunnel is at %.*s/",
             (int)prefix, path);
    return 0;
}

/* Picks the tunnel and port of the first request: X-Runloop-Host, else a
 * tunnel Host ({port}-{key}.localhost), else the path form
 * (/tunnel/{port}-{key}/... under a loopback or the listener's Host). 0, or
 * -1 with r set to the 400. */
static int route_target(struct tconn *c, struct route *r)
{
    const char *xhost = hget(c, H_XHOST);
    const char *host = hget(c, H_HOST);

    if (xhost != NULL ||
        (host != NULL &&
         tunnel_parse_host(host, &c->port, c->key, sizeof(c->key)) == 0)) {
        if (xhost == NULL ||
            tunnel_parse_host(xhost, &c->port, c->key, sizeof(c->key)) == 0)
            return 0;
    } else if (host != NULL && path_host_ok(host) && !c->url_long &&
               tunnel_parse_path(c->url, &c->port, c->key, sizeof(c->key),
                                 &c->prefix_len) == 0) {
        c->by_path = 1;
        return 0;
    } else if (host != NULL && path_host_ok(host) &&
               referer_redirect(c, r) == 0) {
        return -1;
    }
    return refuse(
        r, 400,
        "this is devboxd's tunnel listener: send the request to %s/... or "
        "http://{port}-{tunnel_key}.localhost:<tunnel port>/... (the "
        "path_url_template and url_template of the tunnel view)",
        tunnel_path_url_template());
}

static void route_first(struct tconn *c, struct route *r)
{
    struct engine *eng = c->ts->eng;
    struct target t;

    memset(r, 0, sizeof(*r));
    if (route_target(c, r) != 0)
        return;
    pthread_mutex_lock(&eng->lock);
    if (lookup_locked(eng, c->key, &t) != 0) {
        refuse(r, 404,
               "no tunnel has key %s: it was removed or its devbox "
               "shut down (enable_tunnel / create_pty_tunnel give a new key)",
               c->key);
    } else if (check_auth(c, &t, r) == 0) {
        snprintf(c->box_id, sizeof(c->box_id), "%s", t.box->id);
        c->keep_alive = t.keep_alive;
        c->ssh = t.ssh;
        if (t.ssh) {
            /* Built under the lock: it reads the devbox's spec. */
            c->ssh_cmd = ssh_keys_sshd_command(t.ssh_pub, t.box->spec);
        }
        check_status_locked(&t, r);
        if (r->status == 0 && c->keep_alive)
            engine_touch_locked(t.box);
    }
    pthread_mutex_unlock(&eng->lock);
    if (r->wake) {
        char err[448];

        /* The wake passes the admission caps like any resume; when they
         * refuse it the client learns why instead of waiting for nothing. */
        if (engine_resume(eng, t.box, err, sizeof(err)) != 0) {
            r->retry_after = NULL;
            snprintf(r->msg, sizeof(r->msg), "wake on HTTP refused: %s", err);
        }
    }
}

/* A later request on a routed connection: same tunnel and port, and the
 * token again when authenticated. */
static int check_next(struct tconn *c)
{
    struct engine *eng = c->ts->eng;
    struct target t;
    struct route r;
    const char *host = hget(c, H_XHOST) ? hget(c, H_XHOST) : hget(c, H_HOST);
    char key[sizeof(c->key)];
    int port = 0;
    int rc = -1;

    memset(&r, 0, sizeof(r));
    /* A path-routed connection carries one request: it was forwarded with
     * "connection: close" (the next request may name another tunnel on the
     * same origin, and its target would need rewriting again). */
    if (c->by_path)
        return -1;
    if (host == NULL || tunnel_parse_host(host, &port, key, sizeof(key)) != 0 ||
        port != c->port || strcmp(key, c->key) != 0)
        return -1;
    pthread_mutex_lock(&eng->lock);
    if (lookup_locked(eng, key, &t) == 0 && strcmp(t.box->id, c->box_id) == 0 &&
        check_auth(c, &t, &r) == 0) {
        if (c->keep_alive)
            engine_touch_locked(t.box);
        rc = 0;
    }
    pthread_mutex_unlock(&eng->lock);
    return rc;
}

static int on_headers_complete(http_parser *p)
{
    struct tconn *c = p->data;

    c->heads++;
    if (!c->routed) {
        http_parser_pause(p, 1); /* the caller routes before anything more */
        return 0;
    }
    if (check_next(c) != 0) {
        c->violation = 1;
        return -1;
    }
    return 0;
}

/* -------------------------------------------------------------- connect */

/* Drops the io ref route_first took. */
static void connect_release(struct engine *eng, struct devbox *box)
{
    pthread_mutex_lock(&eng->lock);
    box->io_refs--;
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
}

/* A TCP socket to 127.0.0.1:port inside the devbox (the sandbox runtime
 * creates it in the devbox's network namespace), then the io ref taken by
 * route_first is dropped. -1 with err on failure. */
static int connect_inside(struct tconn *c, struct devbox *box, char *err,
                          size_t errlen)
{
    struct engine *eng = c->ts->eng;
    int fd =
        sandbox_connect_tcp(box->sb, (uint16_t)c->port, CONNECT_TIMEOUT_MS);
    char key[PTY_KEY_LEN + 2];

    connect_release(eng, box);
    if (fd >= 0 && c->port == TUNNEL_PTY_PORT) {
        /* devboxd-ptyd takes a connection only after its key, which no
         * account inside the devbox is given (pty_sessions.c). */
        if (pty_engine_key(c->box_id, key, sizeof(key)) != 0) {
            close(fd);
            snprintf(err, errlen,
                     "the PTY server of devbox %s is not running; see the "
                     "devbox's logs",
                     c->box_id);
            return -1;
        }
        strcat(key, "\n");
        write_all(fd, key, strlen(key));
        explicit_bzero(key, sizeof(key));
    }
    if (fd >= 0)
        return fd;
    if (fd == -ESRCH)
        snprintf(err, errlen, "devbox %s stopped while connecting; retry",
                 c->box_id);
    else
        snprintf(err, errlen,
                 "nothing answers on port %d inside devbox %s (%s): start the "
                 "service there, bound to 0.0.0.0 or 127.0.0.1",
                 c->port, c->box_id, strerror(-fd));
    return -1;
}

/* The sshd command may carry the devbox's secret values. */
static void ssh_cmd_free(struct tconn *c)
{
    if (c->ssh_cmd == NULL)
        return;
    explicit_bzero(c->ssh_cmd, strlen(c->ssh_cmd));
    free(c->ssh_cmd);
    c->ssh_cmd = NULL;
}

/* Takes a place for c among the SSH connections of its route that may
 * still be authenticating (started within sshd's LoginGraceTime, plus a
 * margin: after it sshd has ended an unauthenticated one). 0, or -1 when
 * SSH_PENDING_MAX hold places: each is an sshd and a thread, and nothing
 * else bounds how many a client may open without a key. */
static int ssh_pending_take(struct tconn *c)
{
    struct tunnel_server *ts = c->ts;
    int64_t now = util_now_ms();
    int64_t grace_ms = (SSH_LOGIN_GRACE_S + 5) * (int64_t)1000;
    int pending = 0;
    int rc = -1;
    size_t i;

    pthread_mutex_lock(&ts->lock);
    for (i = 0; i < sizeof(ts->live) / sizeof(ts->live[0]); i++) {
        const struct tconn *o = ts->live[i];

        if (o != NULL && o != c && o->ssh && o->ssh_start_ms > 0 &&
            now - o->ssh_start_ms < grace_ms && strcmp(o->key, c->key) == 0)
            pending++;
    }
    if (pending < SSH_PENDING_MAX) {
        c->ssh_start_ms = now;
        rc = 0;
    }
    pthread_mutex_unlock(&ts->lock);
    return rc;
}

/* The SSH route's other end: sshd -i started inside the devbox for this
 * connection, on one end of a socket pair (no port is listened on), then
 * the io ref taken by route_first is dropped. -1 with err and *status
 * (the HTTP status to answer) on failure. */
static int start_sshd(struct tconn *c, struct devbox *box, int *status,
                      char *err, size_t errlen)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    int sv[2] = {-1, -1};
    int fd = -1;

    *status = 502;
    if (ssh_pending_take(c) != 0) {
        *status = 429;
        snprintf(err, errlen,
                 "devbox %s already has %d SSH connections that have not "
                 "logged in yet (each may take up to %d s): wait for them "
                 "to log in or end, then retry",
                 c->box_id, SSH_PENDING_MAX, SSH_LOGIN_GRACE_S);
        goto out;
    }
    if (c->ssh_cmd == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(err, errlen, "cannot make a socket pair: %s", strerror(errno));
        goto out;
    }
    memset(&req, 0, sizeof(req));
    req.command = c->ssh_cmd;
    req.stdout_fd = sv[1];
    req.stderr_fd = -1;
    if (sandbox_exec(box->sb, &req, &p, err, errlen) != 0)
        goto out;
    sandbox_exec_free(p); /* sshd ends with the connection */
    fd = sv[0];
    sv[0] = -1;
out:
    connect_release(c->ts->eng, box);
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    return fd;
}

/* ---------------------------------------------------------------- relay */

struct pipe_buf {
    char *data;
    size_t len;
    size_t off;
};

/* Feeds client bytes to the parser until an upgrade turns the connection
 * into an opaque stream. -1 when a request must not go through. */
static int inspect(struct tconn *c, const char *buf, size_t len)
{
    size_t n;

    if (c->parser.upgrade)
        return 0;
    n = http_parser_execute(&c->parser, &c->settings, buf, len);
    if (c->violation || HTTP_PARSER_ERRNO(&c->parser) != HPE_OK)
        return -1;
    (void)n; /* n < len only after an upgrade: the rest is the new protocol */
    return 0;
}

/* Lock taken: is the tunnel still there and its devbox running? Also
 * counts traffic as activity when the tunnel keeps the devbox alive. */
static int still_valid(struct tconn *c, int moved)
{
    struct engine *eng = c->ts->eng;
    struct devbox *box = NULL;
    struct target t;
    int ok = 0;

    pthread_mutex_lock(&c->ts->lock);
    ok = !c->ts->stopping;
    pthread_mutex_unlock(&c->ts->lock);
    if (!ok)
        return 0;
    pthread_mutex_lock(&eng->lock);
    ok = lookup_locked(eng, c->key, &t) == 0;
    box = ok ? t.box : NULL;
    ok = ok && strcmp(box->id, c->box_id) == 0 && box->status == DBX_RUNNING &&
         !eng->stopping;
    if (ok && moved && c->keep_alive)
        engine_touch_locked(box);
    pthread_mutex_unlock(&eng->lock);
    return ok;
}

/* Moves bytes from fd into b (empty). 1 read, 0 EOF, -1 error/again. */
static int fill(int fd, struct pipe_buf *b)
{
    ssize_t n = recv(fd, b->data, RELAY_BUF, 0);
    int one = 1;

    /* ACK at once: a service writing head and body separately (Nagle)
     * would otherwise wait for the delayed ACK (~40 ms) per response. */
    setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));

    if (n > 0) {
        b->len = (size_t)n;
        b->off = 0;
        return 1;
    }
    if (n == 0)
        return 0;
    return errno == EAGAIN || errno == EINTR ? 2 : -1;
}

static int drain(int fd, struct pipe_buf *b)
{
    ssize_t n = send(fd, b->data + b->off, b->len - b->off, MSG_NOSIGNAL);

    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    b->off += (size_t)n;
    if (b->off == b->len)
        b->len = b->off = 0;
    return 0;
}

struct relay_state {
    struct pipe_buf up;   /* client → devbox */
    struct pipe_buf down; /* devbox → client */
    int c_eof;
    int u_eof;
    int up_shut;
    int moved;
};

/* One poll round; 1 to go on, 0 when done. */
static int relay_step(struct tconn *c, struct relay_state *s)
{
    struct pollfd pfd[2];
    int r;

    pfd[0].fd = c->cfd;
    pfd[0].events = (short)((s->up.len == 0 && !s->c_eof ? POLLIN : 0) |
                            (s->down.len > 0 ? POLLOUT : 0));
    pfd[1].fd = c->ufd;
    pfd[1].events = (short)((s->down.len == 0 && !s->u_eof ? POLLIN : 0) |
                            (s->up.len > 0 ? POLLOUT : 0));
    pfd[0].revents = pfd[1].revents = 0;
    if (poll(pfd, 2, CHECK_MS) < 0 && errno != EINTR)
        return 0;
    /* Hang-ups are reported even for fds polled for nothing: a side that
     * is gone for good ends the relay instead of spinning. */
    if (((pfd[0].revents & (POLLHUP | POLLERR)) && s->c_eof &&
         s->up.len == 0) ||
        ((pfd[1].revents & (POLLHUP | POLLERR)) && s->u_eof &&
         s->down.len == 0) ||
        (pfd[0].revents & POLLNVAL) || (pfd[1].revents & POLLNVAL))
        return 0;
    if ((pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) && s->up.len == 0 &&
        !s->c_eof) {
        r = fill(c->cfd, &s->up);
        if (r < 0)
            return 0;
        if (r == 0)
            s->c_eof = 1;
        if (r == 1 && inspect(c, s->up.data, s->up.len) != 0)
            return 0; /* a later request failed its checks: drop the connection */
        s->moved |= r == 1;
    }
    if ((pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) && s->down.len == 0 &&
        !s->u_eof) {
        r = fill(c->ufd, &s->down);
        if (r < 0)
            return 0;
        if (r == 0)
            s->u_eof = 1;
        s->moved |= r == 1;
    }
    if (s->up.len > 0 && drain(c->ufd, &s->up) != 0)
        return 0;
    if (s->down.len > 0 && drain(c->cfd, &s->down) != 0)
        return 0;
    if (s->c_eof && s->up.len == 0 && !s->up_shut) {
        shutdown(c->ufd, SHUT_WR); /* half-close: the service still answers */
        s->up_shut = 1;
    }
    /* The service closed and everything it sent reached the client. */
    return !(s->u_eof && s->down.len == 0);
}

static void relay(struct tconn *c, const char *first, size_t first_len)
{
    struct relay_state s;
    int64_t next_check = util_now_ms() + CHECK_MS;
    int one = 1;

    memset(&s, 0, sizeof(s));
    s.up.data = malloc(RELAY_BUF > first_len ? RELAY_BUF : first_len);
    s.down.data = malloc(RELAY_BUF);
    if (s.up.data == NULL || s.down.data == NULL)
        goto out;
    memcpy(s.up.data, first, first_len);
    s.up.len = first_len;
    fcntl(c->cfd, F_SETFL, fcntl(c->cfd, F_GETFL) | O_NONBLOCK);
    fcntl(c->ufd, F_SETFL, fcntl(c->ufd, F_GETFL) | O_NONBLOCK);
    /* Relayed bytes go out as they come: no coalescing delay of our own. */
    setsockopt(c->cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    while (relay_step(c, &s)) {
        if (util_now_ms() >= next_check) {
            if (!still_valid(c, s.moved))
                break;
            s.moved = 0;
            next_check = util_now_ms() + CHECK_MS;
        }
    }
out:
    free(s.up.data);
    free(s.down.data);
}

/* ------------------------------------------------------------- HTTP/2 */

/* Hop-by-hop and framing headers: never forwarded between HTTP/2 and the
 * devbox's HTTP/1.1 (RFC 9113 8.2.2). */
static int hop_by_hop(const char *name)
{
    static const char *const names[] = {"connection",
                                        "keep-alive",
                                        "proxy-connection",
                                        "transfer-encoding",
                                        "upgrade",
                                        "te",
                                        "host",
                                        "content-length",
                                        "expect",
                                        "http2-settings"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(name, names[i]) == 0)
            return 1;
    }
    return 0;
}

/* The headers the tunnel reads, from an HTTP/2 request, as the HTTP/1.1
 * parser would have captured them (a repeated one is unusable). */
static void h2_capture(struct tconn *c, const struct http_request *req)
{
    size_t i;
    int h;

    for (i = 0; i < req->n_headers; i++) {
        for (h = 0; h < H_N; h++) {
            size_t n = strlen(req->headers[i].value);

            if (strcasecmp(req->headers[i].name, hnames[h]) != 0)
                continue;
            if (c->hlen[h] > 0 || n == 0 || n >= HVAL_MAX)
                c->hbad[h] = 1;
            else
                memcpy(c->hval[h], req->headers[i].value, n + 1);
            c->hlen[h] = n;
        }
    }
    if (req->target != NULL && strlen(req->target) < URL_MAX) {
        snprintf(c->url, sizeof(c->url), "%s", req->target);
        c->url_len = strlen(c->url);
    } else {
        c->url_long = 1;
    }
}

/* The HTTP/1.1 request sent into the devbox for an HTTP/2 one: its target
 * (without the path form's prefix), its end-to-end headers, the body with
 * its length, and "connection: close" (one request per upstream
 * connection). malloc'd in *out. */
static int h2_request_bytes(const struct tconn *c,
                            const struct http_request *req, char **out,
                            size_t *out_len)
{
    const char *target = c->url + c->prefix_len;
    const char *host = hget(c, H_HOST);
    size_t cap = strlen(req->method) + strlen(target) + 128 + req->body_len;
    char *b = NULL;
    size_t n = 0;
    size_t i;

    for (i = 0; i < req->n_headers; i++)
        cap += strlen(req->headers[i].name) + strlen(req->headers[i].value) + 4;
    if (host != NULL)
        cap += strlen(host);
    b = malloc(cap);
    if (b == NULL)
        return -1;
    n += (size_t)snprintf(b + n, cap - n, "%s %s%s HTTP/1.1\r\nhost: %s\r\n",
                          req->method, target[0] == '/' ? "" : "/", target,
                          host != NULL ? host : "");
    for (i = 0; i < req->n_headers; i++) {
        if (hop_by_hop(req->headers[i].name))
            continue;
        n += (size_t)snprintf(b + n, cap - n, "%s: %s\r\n",
                              req->headers[i].name, req->headers[i].value);
    }
    if (req->body_len > 0 || strcmp(req->method, "POST") == 0 ||
        strcmp(req->method, "PUT") == 0 || strcmp(req->method, "PATCH") == 0)
        n += (size_t)snprintf(b + n, cap - n, "content-length: %zu\r\n",
                              req->body_len);
    n += (size_t)snprintf(b + n, cap - n, "connection: close\r\n\r\n");
    if (req->body_len > 0)
        memcpy(b + n, req->body, req->body_len);
    *out = b;
    *out_len = n + req->body_len;
    return 0;
}

#define H2_RESP_MAX_FIELDS 64

/* The devbox's HTTP/1.1 answer, parsed as it streams back. */
struct h2_upstream {
    int fd;
    int head_method; /* answer to HEAD: no body */
    http_parser parser;
    http_parser_settings settings;
    struct http_kv fields[H2_RESP_MAX_FIELDS];
    size_t n_fields;
    int in_value;
    int head_done;
    int done;
    char *pending; /* body bytes not yet handed to the stream */
    size_t pending_len;
    size_t pending_off;
    size_t pending_cap;
};

static int append_str(char **dst, const char *at, size_t len)
{
    size_t old = *dst != NULL ? strlen(*dst) : 0;
    char *grown = NULL;

    if (old + len > HVAL_MAX * 16)
        return -1; /* one field of a response head: bounded */
    grown = realloc(*dst, old + len + 1);
    if (grown == NULL)
        return -1;
    memcpy(grown + old, at, len);
    grown[old + len] = '\0';
    *dst = grown;
    return 0;
}

static int up_on_field(http_parser *p, const char *at, size_t len)
{
    struct h2_upstream *u = p->data;

    if (u->in_value || u->n_fields == 0) {
        if (u->n_fields == H2_RESP_MAX_FIELDS)
            return -1;
        u->n_fields++;
        u->in_value = 0;
    }
    return append_str(&u->fields[u->n_fields - 1].name, at, len);
}

static int up_on_value(http_parser *p, const char *at, size_t len)
{
    struct h2_upstream *u = p->data;

    if (u->n_fields == 0)
        return -1;
    u->in_value = 1;
    return append_str(&u->fields[u->n_fields - 1].value, at, len);
}

static int up_on_headers_complete(http_parser *p)
{
    struct h2_upstream *u = p->data;

    if (p->status_code < 200) {
        /* An interim answer (100 Continue): its fields are dropped. */
        return 0;
    }
    u->head_done = 1;
    return u->head_method ? 1 : 0; /* 1: no body follows */
}

static int up_on_body(http_parser *p, const char *at, size_t len)
{
    struct h2_upstream *u = p->data;

    if (u->pending_len + len > u->pending_cap) {
        size_t cap = u->pending_len + len + RELAY_BUF;
        char *grown = realloc(u->pending, cap);

        if (grown == NULL)
            return -1;
        u->pending = grown;
        u->pending_cap = cap;
    }
    memcpy(u->pending + u->pending_len, at, len);
    u->pending_len += len;
    return 0;
}

static int up_on_message_complete(http_parser *p)
{
    struct h2_upstream *u = p->data;

    if (p->status_code >= 200)
        u->done = 1;
    else {
        /* the fields of an interim answer are not the final answer's */
        for (size_t i = 0; i < u->n_fields; i++) {
            free(u->fields[i].name);
            free(u->fields[i].value);
            u->fields[i].name = u->fields[i].value = NULL;
        }
        u->n_fields = 0;
        u->in_value = 0;
    }
    return 0;
}

static void upstream_free(void *ctx)
{
    struct h2_upstream *u = ctx;
    size_t i;

    if (u == NULL)
        return;
    if (u->fd >= 0)
        close(u->fd);
    for (i = 0; i < u->n_fields; i++) {
        free(u->fields[i].name);
        free(u->fields[i].value);
    }
    free(u->pending);
    free(u);
}

/* Reads and parses what the devbox sent: 1 progress, 0 nothing within
 * CHECK_MS, -1 error or a bad answer. EOF ends a read-until-close body. */
static int upstream_read(struct h2_upstream *u)
{
    char buf[16 * 1024];
    struct pollfd pfd = {.fd = u->fd, .events = POLLIN};
    ssize_t n;

    if (poll(&pfd, 1, CHECK_MS) <= 0)
        return 0;
    n = recv(u->fd, buf, sizeof(buf), 0);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -1;
    http_parser_execute(&u->parser, &u->settings, buf, (size_t)n);
    if (HTTP_PARSER_ERRNO(&u->parser) != HPE_OK)
        return -1;
    if (n == 0 && !u->done)
        return -1; /* closed before a complete answer */
    return 1;
}

static ssize_t upstream_stream(void *ctx, char *buf, size_t max)
{
    struct h2_upstream *u = ctx;
    int rc;

    if (u->pending_off == u->pending_len && !u->done) {
        u->pending_off = u->pending_len = 0;
        rc = upstream_read(u);
        if (rc < 0)
            return -1;
        if (rc == 0)
            return HTTP_STREAM_AGAIN;
    }
    if (u->pending_off < u->pending_len) {
        size_t n = u->pending_len - u->pending_off;

        if (n > max)
            n = max;
        memcpy(buf, u->pending + u->pending_off, n);
        u->pending_off += n;
        return (ssize_t)n;
    }
    return u->done ? 0 : HTTP_STREAM_AGAIN;
}

/* Hands the parsed answer head to resp: status, content-type first, then
 * other end-to-end fields while they fit (HTTP_MAX_RESP_HEADERS). */
static void upstream_head(struct h2_upstream *u, struct http_response *resp)
{
    size_t i;

    resp->status = (int)u->parser.status_code;
    for (i = 0; i < u->n_fields; i++) {
        if (u->fields[i].value != NULL &&
            strcasecmp(u->fields[i].name, "content-type") == 0)
            http_response_set_header(resp, "content-type", u->fields[i].value);
    }
    for (i = 0; i < u->n_fields; i++) {
        char *name = u->fields[i].name;

        if (u->fields[i].value == NULL || hop_by_hop(name))
            continue;
        for (char *q = name; *q != '\0'; q++)
            *q = (char)tolower((unsigned char)*q);
        http_response_set_header(resp, name, u->fields[i].value);
    }
}

/* One HTTP/2 request on the tunnel listener: routed and checked exactly as
 * the first request of an HTTP/1.1 connection (route_first), then sent to
 * the devbox port as an HTTP/1.1 request of its own; the answer streams
 * back. Upgrades (WebSocket) need HTTP/1.1. */
static void tunnel_h2_handle(void *ud, const struct http_request *req,
                             struct http_response *resp)
{
    struct tunnel_server *ts = ud;
    struct tconn *c = calloc(1, sizeof(*c));
    struct h2_upstream *u = NULL;
    struct route r;
    char err[512];
    char *bytes = NULL;
    size_t len = 0;
    int64_t deadline;

    if (c == NULL) {
        http_response_error(resp, 503, "out of memory");
        goto out;
    }
    c->ts = ts;
    c->cfd = c->ufd = -1;
    h2_capture(c, req);
    if (req->body_too_large) {
        http_response_error(
            resp, 413,
            "request body too large for a tunnel request over "
            "HTTP/2 (at most %u MiB, %u MiB for PUT and multipart; use "
            "HTTP/1.1 for more)",
            HTTP_MAX_JSON_BODY >> 20, HTTP_MAX_UPLOAD_BODY >> 20);
        goto out;
    }
    route_first(c, &r);
    if (r.status == 307) {
        resp->status = 307;
        http_response_set_header(resp, "location", r.location);
        goto out;
    }
    if (r.status != 0) {
        http_response_error(resp, r.status, "%s", r.msg);
        if (r.retry_after != NULL)
            http_response_set_header(resp, "retry-after", r.retry_after);
        goto out;
    }
    c->ufd = connect_inside(c, r.box, err, sizeof(err));
    if (c->ufd < 0) {
        http_response_error(resp, 502, "%s", err);
        goto out;
    }
    u = calloc(1, sizeof(*u));
    if (u == NULL || h2_request_bytes(c, req, &bytes, &len) != 0) {
        http_response_error(resp, 503, "out of memory");
        goto out;
    }
    u->fd = c->ufd;
    c->ufd = -1;
    u->head_method = strcmp(req->method, "HEAD") == 0;
    http_parser_settings_init(&u->settings);
    u->settings.on_header_field = up_on_field;
    u->settings.on_header_value = up_on_value;
    u->settings.on_headers_complete = up_on_headers_complete;
    u->settings.on_body = up_on_body;
    u->settings.on_message_complete = up_on_message_complete;
    http_parser_init(&u->parser, HTTP_RESPONSE);
    u->parser.data = u;
    write_all(u->fd, bytes, len);
    deadline = util_now_ms() + HEAD_TIMEOUT_MS * 4;
    while (!u->head_done) {
        int rc = upstream_read(u);
        int stopping;

        pthread_mutex_lock(&ts->lock);
        stopping = ts->stopping;
        pthread_mutex_unlock(&ts->lock);
        if (stopping) {
            http_response_error(resp, 503, "devboxd is shutting down");
            goto out;
        }
        if (rc < 0 || util_now_ms() >= deadline) {
            http_response_error(resp, 502,
                                "the service on port %d inside devbox %s sent "
                                "no valid HTTP/1.1 answer%s",
                                c->port, c->box_id, rc < 0 ? "" : " in time");
            goto out;
        }
    }
    upstream_head(u, resp);
    resp->stream = upstream_stream;
    resp->stream_ctx = u;
    resp->stream_free = upstream_free;
    u = NULL;
out:
    upstream_free(u);
    free(bytes);
    if (c != NULL && c->ufd >= 0)
        close(c->ufd);
    if (c != NULL)
        ssh_cmd_free(c);
    free(c);
}

/* One wait of a client's first bytes: 1 readable, 0 nothing yet (ask
 * again), -1 devboxd is stopping. */
static int client_readable(struct tconn *c, struct pollfd *pfd)
{
    int stopping;

    if (poll(pfd, 1, CHECK_MS) > 0)
        return 1;
    pthread_mutex_lock(&c->ts->lock);
    stopping = c->ts->stopping;
    pthread_mutex_unlock(&c->ts->lock);
    return stopping ? -1 : 0;
}

/* Whether the client opened with the HTTP/2 preface: 1 yes, 0 no (HTTP/1.x
 * or anything else, left unread), -1 it went away or sent nothing in time. */
static int sniff_h2(struct tconn *c)
{
    static const char preface[] = HTTP_H2_PREFACE;
    char buf[sizeof(preface) - 1];
    int64_t deadline = util_now_ms() + HEAD_TIMEOUT_MS;

    for (;;) {
        struct pollfd pfd = {.fd = c->cfd, .events = POLLIN};
        ssize_t n;
        int rc;

        if (util_now_ms() >= deadline)
            return -1;
        rc = client_readable(c, &pfd);
        if (rc < 0)
            return -1;
        if (rc == 0)
            continue;
        n = recv(c->cfd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return -1;
        if (memcmp(buf, preface, (size_t)n) != 0)
            return 0;
        if ((size_t)n == sizeof(buf))
            return 1;
        usleep(2000); /* part of the preface: wait for the rest */
    }
}

/* ----------------------------------------------------- first request */

/* Reads until the first request head is complete. Returns the bytes read
 * (all of them are forwarded later) with *rest_off where the parser paused,
 * or -1 after answering an error. */
static ssize_t read_first_head(struct tconn *c, char *buf, size_t *rest_off)
{
    size_t len = 0;
    int64_t deadline = util_now_ms() + HEAD_TIMEOUT_MS;

    while (c->heads == 0) {
        struct pollfd pfd = {.fd = c->cfd, .events = POLLIN};
        enum http_errno e;
        ssize_t n;
        int rc;
        size_t parsed;

        if (len == HEAD_MAX) {
            send_error(c->cfd, 431, NULL,
                       "the request head is larger than %d bytes", HEAD_MAX);
            return -1;
        }
        if (util_now_ms() >= deadline) {
            send_error(c->cfd, 408, NULL,
                       "no complete request head within %d s",
                       HEAD_TIMEOUT_MS / 1000);
            return -1;
        }
        rc = client_readable(c, &pfd);
        if (rc < 0)
            return -1;
        if (rc == 0)
            continue;
        n = recv(c->cfd, buf + len, HEAD_MAX - len, 0);
        if (n <= 0)
            return -1; /* the client went away before a full request */
        parsed =
            http_parser_execute(&c->parser, &c->settings, buf + len, (size_t)n);
        *rest_off = len + parsed;
        len += (size_t)n;
        e = HTTP_PARSER_ERRNO(&c->parser);
        if (e != HPE_OK && e != HPE_PAUSED) {
            send_error(c->cfd, 400, NULL,
                       "not an HTTP/1.x request (%s); tunnels serve "
                       "HTTP/1.1, SSE and WebSocket",
                       http_errno_description(e));
            return -1;
        }
    }
    return (ssize_t)len;
}

/* Whether the header line at line (len bytes, no line end) is named name. */
static int header_is(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);

    return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

/* The first request of a path-routed connection as it is forwarded: the
 * /tunnel/{port}-{key} prefix cut from its target ("/" when nothing is
 * left) and, unless it is an upgrade, its Connection headers replaced by
 * "connection: close" (see check_next); then the bytes after the head.
 * malloc'd, NULL when out of memory. */
static char *rewrite_first(const struct tconn *c, const char *buf,
                           size_t head_len, size_t len, size_t *out_len)
{
    const char *p = buf;
    const char *end = buf + head_len;
    const char *sp = memchr(buf, ' ', head_len);
    char *out = malloc(len + 64);
    char *o = out;
    int skipping = 0;
    int closed = 0;

    if (out == NULL || sp == NULL || (size_t)(end - sp - 1) < c->prefix_len ||
        memcmp(sp + 1, c->url, c->prefix_len) != 0) {
        free(out);
        return NULL;
    }
    /* Method and space, then the target without the prefix. */
    memcpy(o, p, (size_t)(sp - p) + 1);
    o += sp - p + 1;
    p = sp + 1 + c->prefix_len;
    if (*p != '/')
        *o++ = '/';
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t line_len = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
        size_t body_len =
            line_len > 0 && p[line_len - 1] == '\r' ? line_len - 1 : line_len;
        int last = body_len == 0 && o > out && o[-1] == '\n';
        /* A folded line continues the header before it. */
        int folded = !last && (p[0] == ' ' || p[0] == '\t');

        if (last && !c->parser.upgrade && !closed) {
            o = stpcpy(o, "connection: close\r\n");
            closed = 1;
        }
        if (!folded)
            skipping = !last && header_is(p, body_len, "connection") &&
                       !c->parser.upgrade;
        if (!skipping) {
            memcpy(o, p, line_len + (nl != NULL));
            o += line_len + (nl != NULL);
        }
        p += line_len + (nl != NULL);
    }
    /* The parser stops before the head's final LF: with bare-LF line ends
     * the empty line is not in [buf, end) at all. */
    if (!c->parser.upgrade && !closed)
        o = stpcpy(o, "connection: close\r\n");
    memcpy(o, end, len - head_len);
    o += len - head_len;
    *out_len = (size_t)(o - out);
    return out;
}

static void serve(struct tconn *c)
{
    char *buf = malloc(HEAD_MAX);
    char *fwd = NULL;
    struct route r;
    char err[512];
    ssize_t len;
    size_t rest_off = 0;
    int status = 502;

    if (buf == NULL)
        return;
    switch (sniff_h2(c)) {
    case 1:
        http_server_serve_h2(c->ts->h2, c->cfd);
        goto out;
    case 0:
        break;
    default:
        goto out;
    }
    len = read_first_head(c, buf, &rest_off);
    if (len < 0)
        goto out;
    route_first(c, &r);
    if (r.status == 307) {
        send_redirect(c->cfd, r.location);
        goto out;
    }
    if (r.status != 0) {
        send_error(c->cfd, r.status, r.retry_after, "%s", r.msg);
        goto out;
    }
    if (c->ssh)
        c->ufd = start_sshd(c, r.box, &status, err, sizeof(err));
    else
        c->ufd = connect_inside(c, r.box, err, sizeof(err));
    if (c->ufd < 0) {
        send_error(c->cfd, status, status == 429 ? "5" : NULL, "%s", err);
        goto out;
    }
    if (c->ssh) {
        static const char ok[] = "HTTP/1.1 101 Switching Protocols\r\n"
                                 "Connection: Upgrade\r\nUpgrade: ssh\r\n\r\n";

        c->routed = 1;
        pthread_mutex_lock(&c->ts->lock);
        c->relaying = 1;
        pthread_mutex_unlock(&c->ts->lock);
        write_all(c->cfd, ok, sizeof(ok) - 1);
        /* What follows the head is already SSH; the parser paused before
         * the head's final LF. */
        if (rest_off < (size_t)len && buf[rest_off] == '\n')
            rest_off++;
        relay(c, buf + rest_off, (size_t)len - rest_off);
        goto out;
    }
    /* Bytes after the first head (pipelined requests) are checked like any
     * later request before anything is forwarded. */
    http_parser_pause(&c->parser, 0);
    c->routed = 1;
    pthread_mutex_lock(&c->ts->lock);
    c->relaying = 1; /* no longer dropped to make room */
    pthread_mutex_unlock(&c->ts->lock);
    if (rest_off < (size_t)len &&
        inspect(c, buf + rest_off, (size_t)len - rest_off) != 0)
        goto out;
    if (c->by_path) {
        size_t n = 0;

        fwd = rewrite_first(c, buf, rest_off, (size_t)len, &n);
        if (fwd == NULL)
            goto out;
        relay(c, fwd, n);
    } else {
        relay(c, buf, (size_t)len);
    }
out:
    free(fwd);
    free(buf);
}

/* ------------------------------------------------------------- threads */

/* Lock held. A connection from inside a devbox ended. */
static void box_conn_done_locked(struct box_listener *b)
{
    if (b == NULL)
        return;
    b->conns--;
    if (b->fd < 0 && b->conns == 0)
        free(b); /* unlinked and closed already */
}

static void *conn_thread(void *arg)
{
    struct tconn *c = arg;
    struct tunnel_server *ts = c->ts;

    http_parser_settings_init(&c->settings);
    c->settings.on_message_begin = on_message_begin;
    c->settings.on_url = on_url;
    c->settings.on_header_field = on_header_field;
    c->settings.on_header_value = on_header_value;
    c->settings.on_headers_complete = on_headers_complete;
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    c->cur = -1;
    serve(c);
    /* Out of the table before the fd closes: eviction never shuts down a
     * reused descriptor. */
    pthread_mutex_lock(&ts->lock);
    ts->live[c->slot] = NULL;
    if (!c->evicted)
        ts->active--;
    box_conn_done_locked(c->from);
    pthread_mutex_unlock(&ts->lock);
    if (c->cfd >= 0)
        close(c->cfd);
    if (c->ufd >= 0)
        close(c->ufd);
    ssh_cmd_free(c);
    free(c);
    pthread_mutex_lock(&ts->lock);
    ts->conns--;
    pthread_cond_broadcast(&ts->cond);
    pthread_mutex_unlock(&ts->lock);
    return NULL;
}

/* Lock held. Takes a slot for c, dropping the oldest connection that is
 * not relaying yet when MAX_CONNS are open; 0 when none can be dropped. */
static int conn_admit_locked(struct tunnel_server *ts, struct tconn *c)
{
    struct tconn *oldest = NULL;
    int free_slot = -1;
    int i;

    for (i = 0; i < MAX_CONNS + CONN_SPARE; i++) {
        struct tconn *o = ts->live[i];

        if (o == NULL) {
            if (free_slot < 0)
                free_slot = i;
        } else if (!o->relaying && !o->evicted &&
                   (oldest == NULL || o->seq < oldest->seq)) {
            oldest = o;
        }
    }
    if (free_slot < 0)
        return 0;
    if (ts->active >= MAX_CONNS) {
        if (oldest == NULL)
            return 0;
        shutdown(oldest->cfd, SHUT_RDWR);
        oldest->evicted = 1;
        ts->active--;
    }
    c->slot = free_slot;
    c->seq = ++ts->seq;
    ts->live[free_slot] = c;
    ts->active++;
    ts->conns++;
    return 1;
}

static void start_conn(struct tunnel_server *ts, int fd,
                       struct box_listener *from)
{
    struct tconn *c = calloc(1, sizeof(*c));
    int rc;

    if (c == NULL) {
        close(fd);
        return;
    }
    c->ts = ts;
    c->cfd = fd;
    c->ufd = -1;
    pthread_mutex_lock(&ts->lock);
    if (from != NULL && from->conns >= BOX_MAX_CONNS) {
        pthread_mutex_unlock(&ts->lock);
        send_error(fd, 503, "1",
                   "this devbox has %d connections open to devboxd's tunnel "
                   "listener; close some and retry",
                   BOX_MAX_CONNS);
        close(fd);
        free(c);
        return;
    }
    rc = conn_admit_locked(ts, c);
    if (rc && from != NULL) {
        from->conns++;
        c->from = from;
    }
    pthread_mutex_unlock(&ts->lock);
    if (!rc) {
        send_error(fd, 503, "1",
                   "devboxd's tunnel listener has %d connections open; retry",
                   MAX_CONNS);
        close(fd);
        free(c);
        return;
    }
    rc = util_thread_detached(conn_thread, c, 256 * 1024);
    if (rc != 0) {
        pthread_mutex_lock(&ts->lock);
        ts->live[c->slot] = NULL;
        if (!c->evicted)
            ts->active--;
        box_conn_done_locked(c->from);
        pthread_mutex_unlock(&ts->lock);
        close(fd);
        free(c);
        pthread_mutex_lock(&ts->lock);
        ts->conns--;
        pthread_cond_broadcast(&ts->cond);
        pthread_mutex_unlock(&ts->lock);
    }
}

/* Lock held. Closes the box listeners marked dead (their structs go with
 * their last connection) and fills pfds and owners (grown as needed) with
 * the main listener, the wake fd and the live box listeners. Only the
 * accept thread unlinks listeners, so owners stay valid until its next
 * call. */
static size_t poll_set_locked(struct tunnel_server *ts, struct pollfd **pfds,
                              struct box_listener ***owners, size_t *cap)
{
    struct box_listener **pp = &ts->boxes;
    size_t n = 2;

    while (*pp != NULL) {
        struct box_listener *b = *pp;

        if (b->dead) {
            *pp = b->next;
            close(b->fd);
            b->fd = -1;
            if (b->conns == 0)
                free(b);
            continue;
        }
        n++;
        pp = &b->next;
    }
    if (n > *cap) {
        struct pollfd *grown = realloc(*pfds, n * 2 * sizeof(**pfds));
        struct box_listener **grown_o = NULL;

        if (grown != NULL)
            *pfds = grown;
        grown_o =
            grown != NULL ? realloc(*owners, n * 2 * sizeof(**owners)) : NULL;
        if (grown_o != NULL) {
            *owners = grown_o;
            *cap = n * 2;
        }
        /* else: serve what fits; the rest waits for memory */
    }
    if (*cap < 2)
        return 0;
    (*pfds)[0] = (struct pollfd){.fd = ts->lfd, .events = POLLIN};
    (*pfds)[1] = (struct pollfd){.fd = ts->wake_fd, .events = POLLIN};
    (*owners)[0] = (*owners)[1] = NULL;
    n = 2;
    for (struct box_listener *b = ts->boxes; b != NULL && n < *cap;
         b = b->next) {
        (*owners)[n] = b;
        (*pfds)[n++] = (struct pollfd){.fd = b->fd, .events = POLLIN};
    }
    return n;
}

static void *accept_thread(void *arg)
{
    struct tunnel_server *ts = arg;
    struct pollfd *pfds = NULL;
    struct box_listener **owners = NULL;
    size_t cap = 0;

    for (;;) {
        int stopping;
        size_t n;
        size_t i;

        pthread_mutex_lock(&ts->lock);
        stopping = ts->stopping;
        n = stopping ? 0 : poll_set_locked(ts, &pfds, &owners, &cap);
        pthread_mutex_unlock(&ts->lock);
        if (stopping || n == 0)
            break;
        if (poll(pfds, n, CHECK_MS) <= 0)
            continue;
        if (pfds[1].revents & POLLIN) {
            uint64_t v;

            if (read(ts->wake_fd, &v, sizeof(v)) < 0) {
                /* reset by another read: nothing to do */
            }
        }
        for (i = 0; i < n; i++) {
            int fd;

            if (i == 1 || !(pfds[i].revents & POLLIN))
                continue;
            fd = accept4(pfds[i].fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0)
                start_conn(ts, fd, owners[i]);
        }
    }
    free(pfds);
    free(owners);
    return NULL;
}

static void wake_accept(struct tunnel_server *ts)
{
    uint64_t one = 1;

    if (write(ts->wake_fd, &one, sizeof(one)) < 0) {
        /* counter saturated: the thread wakes anyway */
    }
}

/* Marks box_id's listeners dead (lock held). */
static void forget_locked(struct tunnel_server *ts, const char *box_id)
{
    for (struct box_listener *b = ts->boxes; b != NULL; b = b->next) {
        if (strcmp(b->box_id, box_id) == 0)
            b->dead = 1;
    }
}

void tunnel_server_boot(struct tunnel_server *ts, struct engine *eng,
                        struct devbox *box, struct sandbox *sb)
{
    struct box_listener *b = NULL;
    char msg[300];
    int net;
    int fd;

    if (ts == NULL)
        return;
    /* A devbox without network (deny-all policy) gets no way to other
     * devboxes' services either. */
    pthread_mutex_lock(&eng->lock);
    net = engine_spec_network(box->spec);
    pthread_mutex_unlock(&eng->lock);
    if (net == SB_NET_NONE)
        return;
    fd = sandbox_listen_tcp(sb, (uint16_t)ts->port);
    if (fd < 0) {
        snprintf(msg, sizeof(msg),
                 "tunnel URLs do not work inside this devbox: port %d "
                 "inside: %s",
                 ts->port, strerror(-fd));
        goto fail;
    }
    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        close(fd);
        snprintf(msg, sizeof(msg),
                 "tunnel URLs do not work inside this devbox: out of memory");
        goto fail;
    }
    snprintf(b->box_id, sizeof(b->box_id), "%s", box->id);
    b->fd = fd;
    pthread_mutex_lock(&ts->lock);
    forget_locked(ts, box->id); /* a previous boot's socket */
    b->next = ts->boxes;
    ts->boxes = b;
    pthread_mutex_unlock(&ts->lock);
    wake_accept(ts);
    return;
fail:
    pthread_mutex_lock(&eng->lock);
    engine_log_locked(eng, box, "entrypoint", "warn", msg, NULL, 0);
    pthread_mutex_unlock(&eng->lock);
}

void tunnel_server_forget(struct tunnel_server *ts, const char *box_id)
{
    if (ts == NULL)
        return;
    pthread_mutex_lock(&ts->lock);
    forget_locked(ts, box_id);
    pthread_mutex_unlock(&ts->lock);
    wake_accept(ts);
}

/* -------------------------------------------------------------- server */

static const struct util_listen_words listen_words = {
    .option = "--tunnel-listen",
    .form = "HOST:PORT (e.g. 127.0.0.1:0 for a free port)",
    .exposes = "tunnels expose devbox ports",
    .purpose = " for tunnels",
};

struct tunnel_server *tunnel_server_new(struct engine *eng, const char *spec,
                                        int allow_non_loopback, int *bound_port,
                                        char *err, size_t errlen)
{
    struct tunnel_server *ts = calloc(1, sizeof(*ts));

    if (ts == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ts->eng = eng;
    ts->lfd = -1;
    pthread_mutex_init(&ts->lock, NULL);
    pthread_cond_init(&ts->cond, NULL);
    ts->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ts->wake_fd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        goto fail;
    }
    ts->h2 = http_server_new(tunnel_h2_handle, ts, err, errlen);
    if (ts->h2 == NULL)
        goto fail;
    ts->lfd = util_listen_tcp(spec, &listen_words, allow_non_loopback,
                              bound_port, err, errlen);
    if (ts->lfd < 0)
        goto fail;
    ts->port = *bound_port;
    return ts;
fail:
    tunnel_server_stop(ts);
    return NULL;
}

int tunnel_server_start(struct tunnel_server *ts, char *err, size_t errlen)
{
    int rc = pthread_create(&ts->thread, NULL, accept_thread, ts);

    if (rc != 0) {
        snprintf(err, errlen, "cannot start the tunnel listener: %s",
                 strerror(rc));
        return -1;
    }
    ts->started = 1;
    return 0;
}

void tunnel_server_stop(struct tunnel_server *ts)
{
    int64_t deadline;

    if (ts == NULL)
        return;
    pthread_mutex_lock(&ts->lock);
    ts->stopping = 1;
    pthread_mutex_unlock(&ts->lock);
    if (ts->started)
        pthread_join(ts->thread, NULL);
    if (ts->lfd >= 0)
        close(ts->lfd);
    /* HTTP/2 connections end (their threads then leave below). */
    http_server_stop(ts->h2);
    ts->h2 = NULL;
    /* The accept thread has ended: the box listeners are ours to close; a
     * struct still used by a connection goes with its last one. */
    pthread_mutex_lock(&ts->lock);
    while (ts->boxes != NULL) {
        struct box_listener *b = ts->boxes;

        ts->boxes = b->next;
        close(b->fd);
        b->fd = -1;
        if (b->conns == 0)
            free(b);
    }
    pthread_mutex_unlock(&ts->lock);
    if (ts->wake_fd >= 0)
        close(ts->wake_fd);
    /* Connection threads notice within CHECK_MS; a peer stuck in a write
     * is bounded by write_all's timeout. */
    deadline = util_now_ms() + 10000;
    pthread_mutex_lock(&ts->lock);
    while (ts->conns > 0 && util_now_ms() < deadline) {
        struct timespec t;

        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += 100 * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&ts->cond, &ts->lock, &t);
    }
    pthread_mutex_unlock(&ts->lock);
    if (ts->conns > 0) {
        /* Leaking beats freeing under live threads. */
        fprintf(stderr, "devboxd: %d tunnel connections did not end in time\n",
                ts->conns);
        return;
    }
    tunnel_pty_clear();
    ssh_keys_clear();
    pthread_mutex_destroy(&ts->lock);
    pthread_cond_destroy(&ts->cond);
    free(ts);
}
