/*
 * pty.c - PTY sessions and tunnels: pty_connect, pty_send_command,
 * pty_control, create_pty_tunnel, enable_tunnel, get_tunnel_url,
 * remove_tunnel.
 *
 * The tunnel tools use the Runloop API's devbox endpoints. The PTY session
 * tools reach the /pty/{session} control plane and its WebSocket data plane
 * on the devbox's PTY tunnel origin (13-{key}.tunnel.<domain>, authenticated
 * with the tunnel's own token) through the host's ABI 1.1 services
 * runloop_tunnel_request and runloop_pty_exchange; on hosts of ABI 1.6 the
 * exchange runs on the generic WebSocket services (runloop_ws_*) instead.
 * The plugin targets ABI 1.0: on a 1.0 host they check their arguments and
 * answer `unavailable`.
 * The host keeps no PTY state between calls: every session call creates a
 * fresh PTY tunnel (create_pty_tunnel) and uses it once
 * (docs/tools.md). screen.c holds the output cleanup.
 *
 * Config (all optional):
 *   tunnel_url_template  URL of a tunnel port, with {port} and {tunnel_key},
 *                        for the URLs the tunnel tools return only. Unset:
 *                        the url_template the engine puts in its tunnel
 *                        views (devboxd), else the cloud's
 *                        "https://{port}-{tunnel_key}.tunnel.runloop.ai"
 *   default_auth_mode    enable_tunnel's auth_mode when none is given
 *                        ("authenticated"; or "open")
 */
#define RLMCP_TARGET_ABI_MINOR 0 /* 1.1 services guarded by RLMCP_API_HAS */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"
#include "schemas.h" /* schema_<file>: schemas/<file>.json, built in */
#include "screen.h"

struct pty {
    const struct rlmcp_host_api *api;
    char *url_template;
    bool default_open;
};

#define PTY_PORT 13 /* the fixed port of the PTY control and data plane */
#define PTY_MAX_OUTPUT (512u * 1024u) /* raw output kept per exchange */
/* The largest output message taken (ABI 1.6): the server streams small
 * frames, so this only bounds memory. */
#define PTY_MAX_MESSAGE (16u * 1024u * 1024u)

static const char *const signals[] = {
    "SIGHUP",  "SIGINT",  "SIGQUIT", "SIGKILL", "SIGTERM",  "SIGUSR1",
    "SIGUSR2", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGWINCH", "SIGALRM",
    "SIGTTIN", "SIGTTOU", "SIGPIPE", NULL};

#define SIGNALS_TEXT                                                           \
    "SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGTERM, SIGUSR1, SIGUSR2, SIGCONT, "   \
    "SIGSTOP, SIGTSTP, SIGWINCH, SIGALRM, SIGTTIN, SIGTTOU, SIGPIPE"

/* ---- shared helpers ------------------------------------------------------------ */

static const char *str_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool session_valid(const char *s)
{
    size_t n = strlen(s);

    return n >= 1 && n <= 256 &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789_-") == n;
}

/* Tunnel keys go into a host name: keep them to URL-safe characters. */
static bool tunnel_key_valid(const char *s)
{
    size_t n = strlen(s);

    return n >= 1 && n <= 512 &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789_-") == n;
}

#define CLOUD_URL_TEMPLATE "https://{port}-{tunnel_key}.tunnel.runloop.ai"

static bool url_template_ok(const char *t)
{
    return strlen(t) <= 512 &&
           (strncmp(t, "http://", 7) == 0 || strncmp(t, "https://", 8) == 0) &&
           strstr(t, "{port}") != NULL && strstr(t, "{tunnel_key}") != NULL &&
           strpbrk(t, " \t\r\n") == NULL;
}

/* Where this tunnel's ports are: the operator's template, else the one the
 * engine put in the tunnel view (devboxd says where its listener is, by
 * socket or by URL; its path form first, which any client opens, on the
 * host and inside devboxes, where *.localhost needs a resolver that knows
 * it), else the cloud's. */
static const char *url_template_for(const struct pty *pt, const cJSON *view)
{
    const cJSON *p =
        cJSON_GetObjectItemCaseSensitive(view, "path_url_template");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(view, "url_template");

    if (pt->url_template != NULL)
        return pt->url_template;
    if (cJSON_IsString(p) && url_template_ok(p->valuestring))
        return p->valuestring;
    if (cJSON_IsString(t) && url_template_ok(t->valuestring))
        return t->valuestring;
    return CLOUD_URL_TEMPLATE;
}

/*
 * The template with {tunnel_key} and {port} filled in; port 0 keeps
 * "{port}" for the caller to fill. malloc'd.
 */
static char *expand_url(const char *tmpl, const char *key, long port)
{
    char portbuf[16] = "{port}";
    size_t n_keys = 0, cap;
    char *out = NULL;
    char *o = NULL;
    const char *p = tmpl;

    while ((p = strstr(p, "{tunnel_key}")) != NULL) {
        n_keys++;
        p += 12;
    }
    /* A {port} never grows (at most 5 digits); each key may. */
    cap = strlen(tmpl) + n_keys * strlen(key) + 1;
    out = malloc(cap);
    if (out == NULL)
        return NULL;
    o = out;
    p = tmpl;
    if (port > 0)
        snprintf(portbuf, sizeof(portbuf), "%ld", port);
    while (*p != '\0') {
        if (strncmp(p, "{port}", 6) == 0) {
            o = stpcpy(o, portbuf);
            p += 6;
        } else if (strncmp(p, "{tunnel_key}", 12) == 0) {
            o = stpcpy(o, key);
            p += 12;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

/* Parse and check the devbox id; *path = "/v1/devboxes/{id}{suffix}".
 * Either string may be NULL (ENOMEM): the request answers that. */
static int devbox_prep(const struct rlmcp_h *h, const char *aj, size_t al,
                       const char *suffix, cJSON **args, const char **id,
                       char **path, char **what)
{
    int rc = rlmcp_h_args(h, aj, al, args);

    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, *args, "devbox_id", true, id);
    if (rc != RLMCP_OK)
        return rc;
    *path = rlmcp_h_sprintf("/v1/devboxes/%s%s", *id, suffix);
    *what = rlmcp_h_sprintf("devbox %s", *id);
    return RLMCP_OK;
}

/* POST on a devbox; failures go through the devbox-state check. */
static int devbox_post(const struct rlmcp_h *h, const char *id,
                       const char *path, const cJSON *body, const char *what,
                       cJSON **out)
{
    char *msg = NULL;
    long status = 0;
    int rc;

    rc = rlmcp_h_request_status(h, "POST", path, body, NULL, what, &status, out,
                                &msg);
    if (rc == RLMCP_OK && (status < 200 || status > 299)) {
        rc = rlmcp_h_fail_on_devbox(h, id, status, msg, what);
        cJSON_Delete(*out);
        *out = NULL;
    }
    free(msg);
    return rc;
}

/* ---- PTY session tools: argument checks ------------------------------------------- */

static int session_arg(const struct rlmcp_h *h, const cJSON *args,
                       const char **out)
{
    int rc = rlmcp_h_arg_str(h, args, "session_name", true, out);

    if (rc == RLMCP_OK && !session_valid(*out))
        rc = rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'session_name' must be 1-256 characters "
                          "of A-Z a-z 0-9 _ -");
    return rc;
}

/* cols and rows: each 1-1000; `need` requires both, else both or neither. */
static int cols_rows(const struct rlmcp_h *h, const cJSON *args, bool need,
                     const char *why)
{
    long long cols = 0, rows = 0;
    int rc;

    rc = rlmcp_h_arg_int(h, args, "cols", false, 1, 1000, &cols);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(h, args, "rows", false, 1, 1000, &rows);
    if (rc != RLMCP_OK)
        return rc;
    if ((need && (cols == 0 || rows == 0)) || ((cols == 0) != (rows == 0)))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "give both cols and rows (each 1-1000)%s", why);
    return RLMCP_OK;
}

/* A signal name from the list; "INT" is taken as SIGINT. */
static int signal_arg(const struct rlmcp_h *h, const cJSON *args)
{
    const char *sig = NULL;
    size_t i;
    int rc = rlmcp_h_arg_str(h, args, "signal", true, &sig);

    if (rc != RLMCP_OK)
        return rc;
    for (i = 0; signals[i] != NULL; i++) {
        if (strcmp(sig, signals[i]) == 0 || strcmp(sig, signals[i] + 3) == 0)
            return RLMCP_OK;
    }
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "unknown signal '%.40s': use one of " SIGNALS_TEXT,
                        sig);
}

static int control_args(const struct rlmcp_h *h, const cJSON *args)
{
    const char *action = NULL;
    bool has_size = cJSON_GetObjectItemCaseSensitive(args, "cols") != NULL ||
                    cJSON_GetObjectItemCaseSensitive(args, "rows") != NULL;
    bool has_sig = cJSON_GetObjectItemCaseSensitive(args, "signal") != NULL;
    int rc = rlmcp_h_arg_str(h, args, "action", true, &action);

    if (rc != RLMCP_OK)
        return rc;
    if (strcmp(action, "resize") == 0) {
        if (has_sig)
            return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                "'signal' goes with action signal only");
        return cols_rows(h, args, true, " for action resize");
    }
    if (strcmp(action, "signal") != 0 && strcmp(action, "close") != 0)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "unknown action '%.40s': use resize, signal or "
                            "close",
                            action);
    if (has_size)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "'cols' and 'rows' go with action resize only");
    if (strcmp(action, "close") == 0) {
        if (has_sig)
            return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                "'signal' goes with action signal only");
        return RLMCP_OK;
    }
    return signal_arg(h, args);
}

static int send_args(const struct rlmcp_h *h, const cJSON *args)
{
    const char *cmd = NULL;
    const cJSON *mw = cJSON_GetObjectItemCaseSensitive(args, "max_wait");
    long long quiet = 500;
    bool nl = true;
    int rc;

    /* Empty is allowed: with append_newline false it only reads output. */
    rc = rlmcp_h_arg_str(h, args, "command", false, &cmd);
    if (rc == RLMCP_OK && cmd == NULL)
        rc = rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                          "missing required argument 'command'");
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(h, args, "append_newline", &nl);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(h, args, "quiet_ms", false, 10, 60000, &quiet);
    if (rc != RLMCP_OK)
        return rc;
    if (strlen(cmd) > 65536)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'command' is longer than 65536 bytes");
    if (mw != NULL && !cJSON_IsNull(mw) &&
        (!cJSON_IsNumber(mw) || !isfinite(mw->valuedouble) ||
         mw->valuedouble <= 0 || mw->valuedouble > 600))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'max_wait' must be a number of "
                            "seconds above 0 and at most 600");
    return RLMCP_OK;
}

/* On a host older than ABI 1.1 the session tools cannot reach their server. */
static int pty_unavailable(const struct rlmcp_h *h, const char *tool)
{
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_UNAVAILABLE,
        "Use execute_command (with shell_name for a shell that keeps its "
        "state) for commands; create_pty_tunnel gives the PTY tunnel URL and "
        "token for a terminal client of your own.",
        "%s is not available on this server: its runloop-mcp host is older "
        "than plugin ABI 1.1 and cannot reach the devbox's PTY tunnel",
        tool);
}

static bool have_tunnels(const struct rlmcp_host_api *api)
{
    return RLMCP_API_HAS(api, runloop_tunnel_request) &&
           RLMCP_API_HAS(api, runloop_pty_exchange);
}

/*
 * POST path (/v1/devboxes/{id}/create_pty_tunnel): a fresh PTY tunnel's
 * view in *tv (the caller's), its key and token in *key and *tok (borrowed
 * from *tv), both checked.
 */
static int create_pty_tunnel(const struct rlmcp_h *h, const char *id,
                             const char *path, const char *what, cJSON **tv,
                             const char **key, const char **tok)
{
    int rc = devbox_post(h, id, path, NULL, what, tv);

    if (rc != RLMCP_OK)
        return rc;
    *key = str_of(*tv, "tunnel_key");
    *tok = str_of(*tv, "auth_token");
    if (*key == NULL || !tunnel_key_valid(*key) || *tok == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "%s: the Runloop API returned a PTY tunnel "
                            "without a usable tunnel_key and auth_token",
                            what);
    return RLMCP_OK;
}

/* A fresh PTY tunnel of the devbox; its key and token are copied out. */
static int open_pty_tunnel(const struct rlmcp_h *h, const char *id, char **key,
                           char **tok)
{
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s/create_pty_tunnel", id);
    char *what = rlmcp_h_sprintf("devbox %s", id);
    cJSON *tv = NULL;
    const char *k = NULL, *t = NULL;
    int rc;

    rc = create_pty_tunnel(h, id, path, what, &tv, &k, &t);
    if (rc != RLMCP_OK)
        goto out;
    *key = strdup(k);
    *tok = strdup(t);
    rc = *key != NULL && *tok != NULL ? RLMCP_OK : RLMCP_ENOMEM;
out:
    free(path);
    free(what);
    cJSON_Delete(tv);
    return rc;
}

/*
 * A request to the PTY server through the tunnel. A 2xx answer is parsed
 * into *out; other statuses are reported (404 with not_found_remedy).
 */
static int pty_request(const struct rlmcp_h *h, const struct rlmcp_tunnel *t,
                       const char *method, const char *path, const cJSON *body,
                       const char *what, const char *not_found_remedy,
                       cJSON **out)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;
    char *text = NULL;
    char *msg = NULL;
    int rc;

    if (body != NULL) {
        text = cJSON_PrintUnformatted(body);
        if (text == NULL)
            return RLMCP_ENOMEM;
    }
    req.method = method;
    req.path = path;
    req.body = text;
    req.body_len = text != NULL ? strlen(text) : 0;
    rc = h->api->runloop_tunnel_request(h->call, t, &req, &resp);
    if (rc != RLMCP_OK) {
        rc = rlmcp_h_fail_rc(h, rc, what);
        goto out;
    }
    if (resp->status >= 200 && resp->status <= 299) {
        *out = cJSON_ParseWithLength(resp->body, resp->body_len);
        if (!cJSON_IsObject(*out))
            rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                              "%s: the PTY server answered %ld without a "
                              "JSON object",
                              what, resp->status);
        goto out;
    }
    msg = rlmcp_h_error_message(resp->body, resp->body_len);
    if (resp->status == 404 && not_found_remedy != NULL)
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_NOT_FOUND, not_found_remedy,
                                 "%s: %s", what, msg != NULL ? msg : "");
    else if (resp->status == 401)
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "%s: the PTY tunnel refused the token it was "
                          "created with (%s)",
                          what, msg != NULL ? msg : "");
    else
        rc = rlmcp_h_fail_resp(h, resp, what);
out:
    free(text);
    free(msg);
    h->api->http_resp_free(resp);
    return rc;
}

/* GET /pty/{session}[?cols&rows]: create or reattach; *view is the
 * PtyConnectView. */
static int pty_open(const struct rlmcp_h *h, const struct rlmcp_tunnel *t,
                    const char *id, const char *sess, long long cols,
                    long long rows, cJSON **view)
{
    char *path = NULL;
    char *what = rlmcp_h_sprintf("PTY session %s on devbox %s", sess, id);
    int rc = RLMCP_ENOMEM;

    if (cols > 0)
        path = rlmcp_h_sprintf("/pty/%s?cols=%lld&rows=%lld", sess, cols, rows);
    else
        path = rlmcp_h_sprintf("/pty/%s", sess);
    if (path != NULL && what != NULL)
        rc = pty_request(h, t, "GET", path, NULL, what, NULL, view);
    free(path);
    free(what);
    return rc;
}

static void tunnel_of(struct rlmcp_tunnel *t, const char *key, const char *tok)
{
    t->tunnel_key = key;
    t->auth_token = tok;
    t->port = PTY_PORT;
}

static void free_secret(char *s)
{
    if (s == NULL)
        return;
    memset(s, 0, strlen(s));
    free(s);
}

/* The session view's keys as the result, naming the session when the
 * engine's answer does not (a name it gives, null aside, is kept). */
static int session_result(const struct rlmcp_h *h, const cJSON *view,
                          const char *const *keys, const char *sess)
{
    const cJSON *named = cJSON_GetObjectItemCaseSensitive(view, "session_name");
    bool unnamed = named == NULL || cJSON_IsNull(named);
    const char *const set[] = {"session_name", unnamed ? sess : NULL, NULL};

    return rlmcp_h_result_pick(h, view, keys, set);
}

/* What a session tool holds from its first steps to its end. */
struct session_call {
    cJSON *args;
    const char *id;   /* devbox_id, in args */
    const char *sess; /* session_name, in args */
    char *key, *tok;  /* the fresh PTY tunnel's, wiped at the end */
    struct rlmcp_tunnel t;
};

/*
 * The first steps of every session tool: its arguments (devbox_id,
 * session_name, then check's), the host's tunnel services (else `tool`
 * is unavailable) and a fresh PTY tunnel in s->t. session_end frees s,
 * whatever this returned.
 */
static int session_begin(const struct rlmcp_h *h, const char *aj, size_t al,
                         const char *tool,
                         int (*check)(const struct rlmcp_h *, const cJSON *),
                         struct session_call *s)
{
    int rc = rlmcp_h_args(h, aj, al, &s->args);

    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, s->args, "devbox_id", true, &s->id);
    if (rc == RLMCP_OK)
        rc = session_arg(h, s->args, &s->sess);
    if (rc == RLMCP_OK)
        rc = check(h, s->args);
    if (rc == RLMCP_OK && !have_tunnels(h->api))
        rc = pty_unavailable(h, tool);
    if (rc == RLMCP_OK)
        rc = open_pty_tunnel(h, s->id, &s->key, &s->tok);
    if (rc == RLMCP_OK)
        tunnel_of(&s->t, s->key, s->tok);
    return rc;
}

static void session_end(struct session_call *s)
{
    free_secret(s->key);
    free_secret(s->tok);
    cJSON_Delete(s->args);
}

static int connect_args(const struct rlmcp_h *h, const cJSON *args)
{
    return cols_rows(h, args, false, "");
}

static int t_connect(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    static const char *const keys[] = {
        "session_name", "created",          "attached", "connect_url", "cols",
        "rows",         "idle_ttl_seconds", "status",   NULL};
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    struct session_call s = {.t = RLMCP_TUNNEL_INIT};
    cJSON *view = NULL;
    long long cols = 0, rows = 0;
    int rc;

    rc = session_begin(&h, aj, al, "pty_connect", connect_args, &s);
    if (rc != RLMCP_OK)
        goto out;
    rlmcp_h_arg_int(&h, s.args, "cols", false, 1, 1000, &cols);
    rlmcp_h_arg_int(&h, s.args, "rows", false, 1, 1000, &rows);
    rc = pty_open(&h, &s.t, s.id, s.sess, cols, rows, &view);
    if (rc != RLMCP_OK)
        goto out;
    rc = session_result(&h, view, keys, s.sess);
out:
    session_end(&s);
    cJSON_Delete(view);
    return rlmcp_h_ret(rc);
}

/* ---- pty_send_command ---------------------------------------------------------------- */

struct send_opts {
    const char *command;
    bool newline;
    long long quiet_ms;
    uint32_t max_wait_ms;
};

static void send_opts_of(const cJSON *args, struct send_opts *o)
{
    const cJSON *mw = cJSON_GetObjectItemCaseSensitive(args, "max_wait");
    const cJSON *nl = cJSON_GetObjectItemCaseSensitive(args, "append_newline");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(args, "quiet_ms");

    o->command = str_of(args, "command");
    o->newline = !cJSON_IsFalse(nl);
    o->quiet_ms = cJSON_IsNumber(q) ? (long long)q->valuedouble : 500;
    o->max_wait_ms = 30000;
    if (cJSON_IsNumber(mw))
        o->max_wait_ms = (uint32_t)ceil(mw->valuedouble * 1000.0);
}

static int on_output(void *user, const void *data, size_t n)
{
    rlmcp_h_capture_add(user, data, n);
    return 0;
}

/* The exchange failed before any output: say why in the model's terms. */
static int exchange_failed(const struct rlmcp_h *h, int rc,
                           const struct rlmcp_pty_exchange *x, const char *sess)
{
    if (rc == RLMCP_EHTTP && x->upgrade_status == 400)
        return rlmcp_h_fail_remedy(
            h, RLMCP_ERR_CONFLICT,
            "Another client is attached to this session; detach it or use "
            "another session_name.",
            "PTY session %s: the server refused to attach (HTTP 400): a "
            "session takes one WebSocket client at a time",
            sess);
    if (rc == RLMCP_EHTTP && x->upgrade_status > 0)
        return rlmcp_h_fail(h, rlmcp_h_code_for_status(x->upgrade_status),
                            "PTY session %s: the server refused the "
                            "WebSocket with HTTP %ld",
                            sess, x->upgrade_status);
    if (rc == RLMCP_EHTTP)
        return rlmcp_h_fail(h, RLMCP_ERR_UNAVAILABLE,
                            "PTY session %s: the terminal's WebSocket could "
                            "not be opened (the server log says why)",
                            sess);
    return rlmcp_h_fail_rc(h, rc, "PTY session");
}

static int send_result(const struct rlmcp_h *h, const char *sess,
                       const struct rlmcp_h_capture *cap,
                       const struct rlmcp_pty_exchange *x)
{
    cJSON *res = cJSON_CreateObject();
    char *raw = NULL, *text = NULL;
    bool truncated = false;
    int rc = RLMCP_ENOMEM;

    raw = rlmcp_h_capture_text(cap, NULL, &truncated);
    text = raw != NULL ? pty_screen_text(raw, strlen(raw)) : NULL;
    if (res == NULL || text == NULL)
        goto out;
    cJSON_AddStringToObject(res, "session_name", sess);
    cJSON_AddStringToObject(res, "output", text);
    cJSON_AddBoolToObject(res, "quiet", x->quiet);
    if (truncated)
        cJSON_AddBoolToObject(res, "output_truncated", true);
    if (x->close_code == 4000)
        cJSON_AddStringToObject(res, "session_status",
                                "exited: the shell ended; the next "
                                "pty_connect starts a fresh one");
    rc = rlmcp_h_result_json(h, res);
out:
    free(raw);
    free(text);
    cJSON_Delete(res);
    return rc;
}

/*
 * Hand the output of an attached session to x->on_output until it was
 * quiet for quiet_ms or max_at (monotonic ms) passed, whichever bound comes
 * first, the server closed or on_output stopped. Sets x->quiet and
 * x->close_code as runloop_pty_exchange does.
 */
static int ws_read_output(const struct rlmcp_h *h, rlmcp_ws *ws,
                          struct rlmcp_pty_exchange *x, uint32_t quiet_ms,
                          uint64_t max_at)
{
    struct rlmcp_ws_message m = RLMCP_WS_MESSAGE_INIT;
    uint64_t deadline = h->api->call_deadline_ms(h->call);
    uint64_t last = rlmcp_h_now_ms();
    int rc = RLMCP_OK;

    for (;;) {
        uint64_t now = rlmcp_h_now_ms();
        bool quiet_first = last + quiet_ms <= max_at;
        uint64_t until = quiet_first ? last + quiet_ms : max_at;

        rc = h->api->runloop_ws_recv(
            ws, until > now ? (uint32_t)(until - now) : 0, &m);
        if (rc == RLMCP_ETIMEDOUT) {
            /* Before our bound, only the call's deadline ends a wait. */
            if (deadline != 0 && rlmcp_h_now_ms() < until)
                return rc;
            x->quiet = quiet_first;
            return RLMCP_OK;
        }
        if (rc != RLMCP_OK)
            return rc;
        if (m.type == RLMCP_WS_CLOSED) {
            /* A close frame's code; a connection that broke without one
             * is 0, as runloop_pty_exchange reports it. */
            x->close_code = m.close_code != 1006 ? m.close_code : 0;
            return RLMCP_OK;
        }
        last = rlmcp_h_now_ms();
        if (m.len > 0 && x->on_output(x->user, m.data, m.len) != 0)
            return RLMCP_OK;
    }
}

/*
 * What runloop_pty_exchange does, on the ABI 1.6 WebSocket services:
 * attach, send x->input as one binary message, read the output, detach
 * with 1000, which keeps the session. Fills x's result fields as the
 * host's exchange does. Runs on the handler's thread.
 */
static int ws_exchange(const struct rlmcp_h *h, const struct rlmcp_tunnel *t,
                       struct rlmcp_pty_exchange *x)
{
    const struct rlmcp_host_api *api = h->api;
    struct rlmcp_ws_open o = RLMCP_WS_OPEN_INIT;
    uint32_t quiet_ms = x->quiet_ms != 0 ? x->quiet_ms : 500;
    uint32_t max_wait_ms = x->max_wait_ms != 0 ? x->max_wait_ms : 30000;
    uint64_t max_at = rlmcp_h_now_ms() + max_wait_ms;
    rlmcp_ws *ws = NULL;
    int rc = RLMCP_OK;

    o.path = x->connect_url;
    o.max_message = PTY_MAX_MESSAGE;
    o.connect_timeout_ms = max_wait_ms;
    rc = api->runloop_ws_open(h->call, t, &o, &ws);
    x->upgrade_status = o.upgrade_status;
    /* No connection within max_wait: as runloop_pty_exchange reports it. */
    if (rc == RLMCP_ETIMEDOUT && rlmcp_h_now_ms() >= max_at)
        rc = RLMCP_EHTTP;
    if (rc != RLMCP_OK)
        return rc;
    if (x->input_len > 0)
        rc = api->runloop_ws_send(ws, x->input, x->input_len, false);
    /* RLMCP_ESTATE: the server closed first; the read reports how. */
    if (rc == RLMCP_OK || rc == RLMCP_ESTATE)
        rc = ws_read_output(h, ws, x, quiet_ms, max_at);
    api->runloop_ws_close(ws, 0);
    return rc;
}

/* Attach, type, read until quiet or max_wait, detach. */
static int send_exchange(const struct rlmcp_h *h, const struct rlmcp_tunnel *t,
                         const char *sess, const char *connect_url,
                         const struct send_opts *o)
{
    struct rlmcp_pty_exchange x = RLMCP_PTY_EXCHANGE_INIT;
    struct rlmcp_h_capture cap;
    size_t n = strlen(o->command);
    char *input = malloc(n + 2);
    int rc = RLMCP_ENOMEM;

    if (input == NULL)
        return RLMCP_ENOMEM;
    if (!rlmcp_h_capture_init(&cap, PTY_MAX_OUTPUT)) {
        free(input);
        return RLMCP_ENOMEM;
    }
    memcpy(input, o->command, n);
    /* A newline ends the line, as the official clients send it; the
     * shell's and python's readline take it like Enter. */
    if (o->newline)
        input[n++] = '\n';
    x.connect_url = connect_url;
    x.input = input;
    x.input_len = n;
    x.quiet_ms = (uint32_t)o->quiet_ms;
    x.max_wait_ms = o->max_wait_ms;
    x.on_output = on_output;
    x.user = &cap;
    if (RLMCP_API_HAS(h->api, runloop_ws_open))
        rc = ws_exchange(h, t, &x);
    else /* hosts of ABI 1.1 to 1.5 */
        rc = h->api->runloop_pty_exchange(h->call, t, &x);
    if (rc == RLMCP_OK)
        rc = send_result(h, sess, &cap, &x);
    else
        rc = exchange_failed(h, rc, &x, sess);
    rlmcp_h_capture_free(&cap);
    free(input);
    return rc;
}

static int t_send(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    struct session_call s = {.t = RLMCP_TUNNEL_INIT};
    struct send_opts o;
    cJSON *view = NULL;
    const char *url = NULL;
    int rc;

    rc = session_begin(&h, aj, al, "pty_send_command", send_args, &s);
    if (rc != RLMCP_OK)
        goto out;
    send_opts_of(s.args, &o);
    rc = pty_open(&h, &s.t, s.id, s.sess, 0, 0, &view);
    if (rc != RLMCP_OK)
        goto out;
    url = str_of(view, "connect_url");
    if (url == NULL || url[0] != '/') {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INTERNAL,
                          "PTY session %s: the server gave no usable "
                          "connect_url",
                          s.sess);
        goto out;
    }
    rc = send_exchange(&h, &s.t, s.sess, url, &o);
out:
    session_end(&s);
    cJSON_Delete(view);
    return rlmcp_h_ret(rc);
}

/* ---- pty_control --------------------------------------------------------------------- */

/* The control body; signal names get their SIG prefix. */
static cJSON *control_body(const cJSON *args)
{
    cJSON *body = cJSON_CreateObject();
    const char *action = str_of(args, "action");
    const char *sig = str_of(args, "signal");
    const cJSON *cols = cJSON_GetObjectItemCaseSensitive(args, "cols");
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(args, "rows");
    char name[16];

    if (body == NULL)
        return NULL;
    cJSON_AddStringToObject(body, "action", action);
    if (strcmp(action, "resize") == 0) {
        cJSON_AddNumberToObject(body, "cols", cols->valuedouble);
        cJSON_AddNumberToObject(body, "rows", rows->valuedouble);
    } else if (strcmp(action, "signal") == 0) {
        snprintf(name, sizeof(name), "%s%s",
                 strncmp(sig, "SIG", 3) == 0 ? "" : "SIG", sig);
        cJSON_AddStringToObject(body, "signal", name);
    }
    return body;
}

static int t_control(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    static const char *const keys[] = {"session_name", "status", NULL};
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    struct session_call s = {.t = RLMCP_TUNNEL_INIT};
    cJSON *body = NULL, *view = NULL;
    char *path = NULL, *what = NULL;
    int rc;

    rc = session_begin(&h, aj, al, "pty_control", control_args, &s);
    if (rc != RLMCP_OK)
        goto out;
    body = control_body(s.args);
    path = rlmcp_h_sprintf("/pty/%s/control", s.sess);
    what = rlmcp_h_sprintf("PTY session %s on devbox %s", s.sess, s.id);
    if (body == NULL || path == NULL || what == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = pty_request(&h, &s.t, "POST", path, body, what,
                     "pty_connect creates the session (a closed session "
                     "is gone).",
                     &view);
    if (rc != RLMCP_OK)
        goto out;
    rc = session_result(&h, view, keys, s.sess);
out:
    session_end(&s);
    free(path);
    free(what);
    cJSON_Delete(body);
    cJSON_Delete(view);
    return rlmcp_h_ret(rc);
}

/* ---- tunnels ----------------------------------------------------------------------- */

/* The tunnel result: key, mode, token, template and (port) URL. */
static int tunnel_result(struct pty *pt, const struct rlmcp_h *h,
                         const char *id, const cJSON *tv, long port)
{
    const char *key = str_of(tv, "tunnel_key");
    const char *mode = str_of(tv, "auth_mode");
    const char *token = str_of(tv, "auth_token");
    cJSON *res = NULL;
    char *tmpl = NULL, *url = NULL;
    int rc = RLMCP_ENOMEM;

    if (key == NULL || !tunnel_key_valid(key))
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "devbox %s: the Runloop API returned a tunnel "
                            "without a usable tunnel_key",
                            id);
    tmpl = expand_url(url_template_for(pt, tv), key, 0);
    res = cJSON_CreateObject();
    if (tmpl == NULL || res == NULL)
        goto out;
    cJSON_AddStringToObject(res, "devbox_id", id);
    cJSON_AddStringToObject(res, "tunnel_key", key);
    if (mode != NULL)
        cJSON_AddStringToObject(res, "auth_mode", mode);
    if (token != NULL) {
        cJSON_AddStringToObject(res, "auth_token", token);
        cJSON_AddStringToObject(res, "auth_header",
                                "X-Runloop-Tunnel-Authorization: Bearer "
                                "<auth_token>");
    }
    cJSON_AddStringToObject(res, "url_template", tmpl);
    if (port > 0) {
        url = expand_url(url_template_for(pt, tv), key, port);
        /* expand_url only fails on ENOMEM */
        if (url == NULL)
            goto out;
        cJSON_AddStringToObject(res, "url", url);
        cJSON_AddNumberToObject(res, "port", (double)port);
    }
    rc = rlmcp_h_result_json(h, res);
out:
    free(tmpl);
    free(url);
    cJSON_Delete(res);
    return rc;
}

static int t_pty_tunnel(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    cJSON *args = NULL, *tv = NULL, *res = NULL;
    const char *id = NULL, *key = NULL, *token = NULL;
    char *path = NULL, *what = NULL, *url = NULL;
    int rc;

    rc =
        devbox_prep(&h, aj, al, "/create_pty_tunnel", &args, &id, &path, &what);
    if (rc == RLMCP_OK)
        rc = create_pty_tunnel(&h, id, path, what, &tv, &key, &token);
    if (rc != RLMCP_OK)
        goto out;
    url = expand_url(url_template_for(pt, tv), key, PTY_PORT);
    res = cJSON_CreateObject();
    if (url == NULL || res == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    cJSON_AddStringToObject(res, "devbox_id", id);
    cJSON_AddStringToObject(res, "tunnel_key", key);
    cJSON_AddStringToObject(res, "auth_token", token);
    cJSON_AddStringToObject(res, "pty_url", url);
    cJSON_AddStringToObject(res, "auth_header",
                            "X-Runloop-Tunnel-Authorization: Bearer "
                            "<auth_token>");
    rc = rlmcp_h_result_json(&h, res);
out:
    free(path);
    free(what);
    free(url);
    cJSON_Delete(args);
    cJSON_Delete(tv);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

static int t_enable(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    cJSON *args = NULL, *body = NULL, *tv = NULL;
    const cJSON *v = NULL;
    const char *id = NULL, *mode = NULL;
    char *path = NULL, *what = NULL;
    bool keep = true, wake = false;
    long long port = 0;
    int rc;

    rc = devbox_prep(&h, aj, al, "/enable_tunnel", &args, &id, &path, &what);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "auth_mode", false, &mode);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(&h, args, "http_keep_alive", &keep);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(&h, args, "wake_on_http", &wake);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "port", false, 1, 65535, &port);
    if (rc != RLMCP_OK)
        goto out;
    if (mode == NULL)
        mode = pt->default_open ? "open" : "authenticated";
    if (strcmp(mode, "open") != 0 && strcmp(mode, "authenticated") != 0) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'auth_mode' must be open or "
                          "authenticated");
        goto out;
    }
    body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "auth_mode", mode);
    v = cJSON_GetObjectItemCaseSensitive(args, "http_keep_alive");
    if (v != NULL)
        cJSON_AddBoolToObject(body, "http_keep_alive", keep);
    v = cJSON_GetObjectItemCaseSensitive(args, "wake_on_http");
    if (v != NULL)
        cJSON_AddBoolToObject(body, "wake_on_http", wake);
    rc = devbox_post(&h, id, path, body, what, &tv);
    if (rc == RLMCP_OK)
        rc = tunnel_result(pt, &h, id, tv, (long)port);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(body);
    cJSON_Delete(tv);
    return rlmcp_h_ret(rc);
}

static int t_url(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    cJSON *args = NULL, *dbx = NULL;
    const cJSON *tv = NULL;
    const char *id = NULL;
    char *path = NULL, *what = NULL;
    long long port = 0;
    int rc;

    rc = devbox_prep(&h, aj, al, "", &args, &id, &path, &what);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "port", true, 1, 65535, &port);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_request(&h, "GET", path, NULL, NULL, what, &dbx);
    if (rc != RLMCP_OK)
        goto out;
    tv = cJSON_GetObjectItemCaseSensitive(dbx, "tunnel");
    if (!cJSON_IsObject(tv)) {
        rc = rlmcp_h_fail_remedy(&h, RLMCP_ERR_NOT_FOUND,
                                 "Call enable_tunnel for this devbox first.",
                                 "devbox %s has no tunnel", id);
        goto out;
    }
    rc = tunnel_result(pt, &h, id, tv, (long)port);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(dbx);
    return rlmcp_h_ret(rc);
}

static int t_remove(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    cJSON *args = NULL, *got = NULL, *res = NULL;
    const char *id = NULL;
    char *path = NULL, *what = NULL;
    int rc;

    rc = devbox_prep(&h, aj, al, "/remove_tunnel", &args, &id, &path, &what);
    if (rc == RLMCP_OK)
        rc = devbox_post(&h, id, path, NULL, what, &got);
    if (rc != RLMCP_OK)
        goto out;
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "devbox_id", id);
    cJSON_AddBoolToObject(res, "removed", true);
    rc = rlmcp_h_result_json(&h, res);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(got);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* ---- registration ------------------------------------------------------------------ */

#define ANN(ro, destr, idem)                                                   \
    "{\"readOnlyHint\":" ro ",\"destructiveHint\":" destr                      \
    ",\"idempotentHint\":" idem ",\"openWorldHint\":true}"

static const struct rlmcp_h_tool specs[] = {
    {"pty_connect", "Open a terminal session",
     "Create, or reconnect to, a named interactive terminal (bash on a "
     "real PTY) on a devbox, for programs that need a TTY: REPLs, TUIs. "
     "For ordinary commands use execute_command.",
     schema_pty_connect, schema_pty_connect_out, ANN("false", "false", "true"),
     t_connect, false},
    {"pty_send_command", "Type into a terminal session",
     "Type text into a named terminal session and return what the terminal "
     "printed until it is quiet for quiet_ms or max_wait passes, as plain "
     "text (escape sequences removed, carriage returns and backspaces "
     "applied).",
     schema_pty_send_command, schema_pty_send_command_out,
     ANN("false", "true", "false"), t_send, false},
    {"pty_control", "Control a terminal session",
     "Resize a terminal session (the program gets SIGWINCH), send a POSIX "
     "signal to its foreground process group, or close it.",
     schema_pty_control, schema_pty_control_out, ANN("false", "true", "false"),
     t_control, false},
    {"create_pty_tunnel", "Create a PTY tunnel",
     "Create a fresh authenticated tunnel to the devbox's terminal service "
     "and return its URL and token, for a terminal client of your own. "
     "Treat the token as a secret.",
     schema_devbox_id, schema_create_pty_tunnel_out,
     ANN("false", "false", "false"), t_pty_tunnel, false},
    {"enable_tunnel", "Expose devbox ports",
     "Enable the devbox's tunnel: every port gets a URL "
     "(url_template with {port}). The service must listen on 0.0.0.0. "
     "authenticated (default here) needs the auth_token in the "
     "X-Runloop-Tunnel-Authorization: Bearer header.",
     schema_enable_tunnel, schema_enable_tunnel_out,
     ANN("false", "false", "false"), t_enable, false},
    {"get_tunnel_url", "Get a tunnel URL",
     "The URL of a port on a devbox whose tunnel is enabled, with the "
     "token to send when the tunnel is authenticated.",
     schema_get_tunnel_url, schema_get_tunnel_url_out,
     ANN("true", "false", "true"), t_url, false},
    {"remove_tunnel", "Remove a devbox's tunnel",
     "Remove the devbox's tunnel: its URLs stop working.", schema_devbox_id,
     schema_remove_tunnel_out, ANN("false", "true", "true"), t_remove, false},
};

/* The shutdown; also frees the state of a failed init. */
static void pt_shutdown(rlmcp_plugin *self, void *state)
{
    struct pty *pt = state;

    if (pt == NULL)
        return;
    free(pt->url_template);
    free(pt);
}

/* The host has checked the section against schemas/config.json (the
 * template's form, the auth mode, no unknown keys); this keeps the values
 * and registers the tools. */
static int pt_setup(void *state, rlmcp_plugin *self,
                    const struct rlmcp_host_api *api, const cJSON *cfg)
{
    struct pty *pt = state;
    const cJSON *t = NULL, *m = NULL;

    pt->api = api;
    m = cJSON_GetObjectItemCaseSensitive(cfg, "default_auth_mode");
    pt->default_open = cJSON_IsString(m) && strcmp(m->valuestring, "open") == 0;
    t = cJSON_GetObjectItemCaseSensitive(cfg, "tunnel_url_template");
    if (cJSON_IsString(t)) {
        pt->url_template = strdup(t->valuestring);
        if (pt->url_template == NULL)
            return RLMCP_ENOMEM;
    }
    return rlmcp_h_register_tools(self, api, specs,
                                  sizeof(specs) / sizeof(specs[0]), pt, 0);
}

RLMCP_H_PLUGIN_DEFINE("pty", "0.1.0",
                      "PTY sessions and tunnels: connect, send, control, "
                      "PTY tunnel, enable/get/remove tunnel",
                      struct pty, pt_setup, pt_shutdown, schema_config)
