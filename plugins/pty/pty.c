/*
 * pty.c - PTY sessions and tunnels: pty_connect, pty_send_command,
 * pty_control, create_pty_tunnel, enable_tunnel, get_tunnel_url,
 * remove_tunnel.
 *
 * The tunnel tools use the Runloop API's devbox endpoints. The PTY session
 * tools cannot reach their server with ABI 1.0: the /pty/{session} control
 * plane is served on the devbox's PTY tunnel origin (13-{key}.tunnel.
 * <domain>, authenticated with the tunnel's own token) and the byte stream
 * only over a WebSocket there, while runloop_request reaches the API base
 * URL only. They validate their arguments and then answer `unavailable`
 * saying so (docs/tools-issue6.md). screen.c holds the output cleanup that
 * pty_send_command applies once the host can move PTY bytes.
 *
 * Config (all optional):
 *   tunnel_url_template  URL of a tunnel port, with {port} and {tunnel_key}
 *                        ("https://{port}-{tunnel_key}.tunnel.runloop.ai")
 *   default_auth_mode    enable_tunnel's auth_mode when none is given
 *                        ("authenticated"; or "open")
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"

struct pty {
    const struct rlmcp_host_api *api;
    char *url_template;
    bool default_open;
};

#define PTY_PORT 13 /* the fixed port of the PTY control and data plane */

#define DEVBOX_PROP(what)                                                    \
    "\"devbox_id\":{\"type\":\"string\",\"description\":\"Id of the "      \
    "running devbox " what " (dbx_...).\"}"

#define SESSION_PROP                                                         \
    "\"session_name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" \
    "256,\"pattern\":\"^[A-Za-z0-9_-]+$\",\"description\":\"Your name for " \
    "the terminal session (1-256 of A-Z a-z 0-9 _ -). The same name "      \
    "reconnects to the same shell.\"}"

#define COLS_ROWS_PROPS                                                      \
    "\"cols\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,"        \
    "\"description\":\"Terminal width in columns (1-1000); give rows "      \
    "too.\"},\"rows\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":"     \
    "1000,\"description\":\"Terminal height in rows (1-1000); give cols "   \
    "too.\"}"

static const char *const signals[] = {
    "SIGHUP",  "SIGINT",  "SIGQUIT", "SIGKILL", "SIGTERM",
    "SIGUSR1", "SIGUSR2", "SIGCONT", "SIGSTOP", "SIGTSTP",
    "SIGWINCH", "SIGALRM", "SIGTTIN", "SIGTTOU", "SIGPIPE", NULL};

#define SIGNALS_TEXT                                                         \
    "SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGTERM, SIGUSR1, SIGUSR2, SIGCONT, " \
    "SIGSTOP, SIGTSTP, SIGWINCH, SIGALRM, SIGTTIN, SIGTTOU, SIGPIPE"

/* ---- schemas ---------------------------------------------------------------- */

static const char connect_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    DEVBOX_PROP("to open the terminal on") "," SESSION_PROP ","
    COLS_ROWS_PROPS "},\"required\":[\"devbox_id\",\"session_name\"]}";

static const char connect_out[] =
    "{\"type\":\"object\",\"properties\":{\"session_name\":{\"type\":"
    "\"string\"},\"created\":{\"type\":\"boolean\"},\"attached\":{\"type\":"
    "\"boolean\"},\"connect_url\":{\"type\":\"string\"},\"cols\":{\"type\":"
    "\"integer\"},\"rows\":{\"type\":\"integer\"},\"idle_ttl_seconds\":{"
    "\"type\":\"integer\"}},\"required\":[\"session_name\"]}";

static const char send_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    DEVBOX_PROP("running the session") "," SESSION_PROP ","
    "\"command\":{\"type\":\"string\",\"description\":\"Text to type into "
    "the terminal, e.g. a shell command or a line for a REPL. A newline is "
    "added unless append_newline is false. Control keys as escapes, e.g. "
    "\\\"\\\\u0003\\\" for Ctrl-C.\"},"
    "\"append_newline\":{\"type\":\"boolean\",\"description\":\"Press "
    "Enter after the text (default true).\"},"
    "\"quiet_ms\":{\"type\":\"integer\",\"minimum\":10,\"maximum\":60000,"
    "\"description\":\"Return once the terminal printed nothing for this "
    "many milliseconds (default 500).\"},"
    "\"max_wait\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":"
    "600,\"description\":\"Return after at most this many seconds even if "
    "output continues (default 30).\"}},"
    "\"required\":[\"devbox_id\",\"session_name\",\"command\"]}";

static const char send_out[] =
    "{\"type\":\"object\",\"properties\":{\"session_name\":{\"type\":"
    "\"string\"},\"output\":{\"type\":\"string\"},\"quiet\":{\"type\":"
    "\"boolean\"}},\"required\":[\"session_name\",\"output\"]}";

static const char control_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    DEVBOX_PROP("running the session") "," SESSION_PROP ","
    "\"action\":{\"type\":\"string\",\"enum\":[\"resize\",\"signal\","
    "\"close\"],\"description\":\"resize (needs cols and rows; the program "
    "gets SIGWINCH), signal (needs signal), or close (ends the shell; the "
    "next pty_connect starts a fresh one).\"}," COLS_ROWS_PROPS ","
    "\"signal\":{\"type\":\"string\",\"description\":\"POSIX signal name "
    "for action signal, sent to the foreground process group: " SIGNALS_TEXT
    ".\"}},\"required\":[\"devbox_id\",\"session_name\",\"action\"]}";

static const char control_out[] =
    "{\"type\":\"object\",\"properties\":{\"session_name\":{\"type\":"
    "\"string\"},\"status\":{\"type\":\"string\"}},"
    "\"required\":[\"session_name\"]}";

static const char id_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    DEVBOX_PROP("to use") "},\"required\":[\"devbox_id\"]}";

static const char pty_tunnel_out[] =
    "{\"type\":\"object\",\"properties\":{\"devbox_id\":{\"type\":"
    "\"string\"},\"tunnel_key\":{\"type\":\"string\"},\"auth_token\":{"
    "\"type\":\"string\"},\"pty_url\":{\"type\":\"string\"},"
    "\"auth_header\":{\"type\":\"string\"}},\"required\":[\"devbox_id\","
    "\"tunnel_key\",\"auth_token\",\"pty_url\"]}";

static const char enable_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    DEVBOX_PROP("to expose") ","
    "\"auth_mode\":{\"type\":\"string\",\"enum\":[\"open\","
    "\"authenticated\"],\"description\":\"authenticated (this server's "
    "default): callers must send the returned auth_token; open: anyone "
    "with the URL gets in.\"},"
    "\"http_keep_alive\":{\"type\":\"boolean\",\"description\":\"Tunnel "
    "traffic resets the devbox's idle timer (default true).\"},"
    "\"wake_on_http\":{\"type\":\"boolean\",\"description\":\"A request "
    "to a suspended devbox resumes it (default false).\"},"
    "\"port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535,"
    "\"description\":\"Also return the URL of this port (the service must "
    "listen on 0.0.0.0).\"}},\"required\":[\"devbox_id\"]}";

#define TUNNEL_OUT_PROPS                                                     \
    "\"devbox_id\":{\"type\":\"string\"},\"tunnel_key\":{\"type\":"         \
    "\"string\"},\"auth_mode\":{\"type\":\"string\"},\"auth_token\":{"      \
    "\"type\":\"string\"},\"auth_header\":{\"type\":\"string\"},"           \
    "\"url_template\":{\"type\":\"string\"},\"url\":{\"type\":\"string\"}," \
    "\"port\":{\"type\":\"integer\"}"

static const char tunnel_out[] =
    "{\"type\":\"object\",\"properties\":{" TUNNEL_OUT_PROPS "},"
    "\"required\":[\"devbox_id\",\"tunnel_key\",\"url_template\"]}";

static const char url_schema[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
    DEVBOX_PROP("with a tunnel") ",\"port\":{\"type\":\"integer\","
    "\"minimum\":1,\"maximum\":65535,\"description\":\"Port of the service "
    "inside the devbox, e.g. 8000.\"}},\"required\":[\"devbox_id\","
    "\"port\"]}";

static const char url_out[] =
    "{\"type\":\"object\",\"properties\":{" TUNNEL_OUT_PROPS "},"
    "\"required\":[\"devbox_id\",\"tunnel_key\",\"url\",\"port\"]}";

static const char removed_out[] =
    "{\"type\":\"object\",\"properties\":{\"devbox_id\":{\"type\":"
    "\"string\"},\"removed\":{\"type\":\"boolean\"}},"
    "\"required\":[\"devbox_id\",\"removed\"]}";

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

/* Parse and check the devbox id; *path = "/v1/devboxes/{id}{suffix}". */
static int devbox_prep(const struct rlmcp_h *h, const char *aj, size_t al,
                       const char *schema, const char *suffix, cJSON **args,
                       const char **id, char **path, char **what)
{
    int rc = rlmcp_h_args_schema(h, aj, al, schema, args);

    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, *args, "devbox_id", true, id);
    if (rc != RLMCP_OK)
        return rc;
    *path = rlmcp_h_sprintf("/v1/devboxes/%s%s", *id, suffix);
    *what = rlmcp_h_sprintf("devbox %s", *id);
    return *path != NULL && *what != NULL ? RLMCP_OK : RLMCP_ENOMEM;
}

/* POST on a devbox; failures go through the devbox-state check. */
static int devbox_post(const struct rlmcp_h *h, const char *id,
                       const char *path, const cJSON *body, const char *what,
                       cJSON **out)
{
    char *msg = NULL;
    long status = 0;
    int rc;

    rc = rlmcp_h_request_status(h, "POST", path, body, NULL, what, &status,
                                out, &msg);
    if (rc == RLMCP_OK && (status < 200 || status > 299)) {
        rc = rlmcp_h_fail_on_devbox(h, id, status, msg, what);
        cJSON_Delete(*out);
        *out = NULL;
    }
    free(msg);
    return rc;
}

/* ---- PTY session tools: argument checks, then `unavailable` ---------------------- */

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

    rc = rlmcp_h_arg_str(h, args, "command", true, &cmd);
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

static int pty_unavailable(const struct rlmcp_h *h, const char *tool,
                           bool data_plane)
{
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_UNAVAILABLE,
        data_plane
            ? "Use execute_command (with shell_name for a shell that keeps "
              "its state) for commands, and feed REPLs a script instead "
              "(e.g. python3 - <<'EOF' ... EOF). create_pty_tunnel gives a "
              "tunnel URL and token for a terminal client of your own."
            : "create_pty_tunnel gives the PTY tunnel URL and token for a "
              "terminal client of your own; use execute_command with "
              "shell_name for a shell that keeps its state.",
        "%s is not available on this server: %s",
        tool,
        data_plane
            ? "terminal bytes move only over the PTY session's WebSocket on "
              "the devbox's PTY tunnel, and this server's plugins can send "
              "plain HTTP requests to the Runloop API only"
            : "PTY sessions are served on the devbox's PTY tunnel (port 13, "
              "with the tunnel's own token), and this server's plugins can "
              "send requests to the Runloop API only");
}

static int t_connect(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    cJSON *args = NULL;
    const char *id = NULL, *sess = NULL;
    int rc;

    rc = rlmcp_h_args_schema(&h, aj, al, connect_schema, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK)
        rc = session_arg(&h, args, &sess);
    if (rc == RLMCP_OK)
        rc = cols_rows(&h, args, false, "");
    if (rc == RLMCP_OK)
        rc = pty_unavailable(&h, "pty_connect", false);
    cJSON_Delete(args);
    return rlmcp_h_ret(rc);
}

static int t_send(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    cJSON *args = NULL;
    const char *id = NULL, *sess = NULL;
    int rc;

    rc = rlmcp_h_args_schema(&h, aj, al, send_schema, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK)
        rc = session_arg(&h, args, &sess);
    if (rc == RLMCP_OK)
        rc = send_args(&h, args);
    if (rc == RLMCP_OK)
        rc = pty_unavailable(&h, "pty_send_command", true);
    cJSON_Delete(args);
    return rlmcp_h_ret(rc);
}

static int t_control(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    cJSON *args = NULL;
    const char *id = NULL, *sess = NULL;
    int rc;

    rc = rlmcp_h_args_schema(&h, aj, al, control_schema, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK)
        rc = session_arg(&h, args, &sess);
    if (rc == RLMCP_OK)
        rc = control_args(&h, args);
    if (rc == RLMCP_OK)
        rc = pty_unavailable(&h, "pty_control", false);
    cJSON_Delete(args);
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
    tmpl = expand_url(pt->url_template, key, 0);
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
        url = expand_url(pt->url_template, key, port);
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

static int t_pty_tunnel(rlmcp_call *call, const char *aj, size_t al,
                        void *ud)
{
    struct pty *pt = ud;
    struct rlmcp_h h = {pt->api, call};
    cJSON *args = NULL, *tv = NULL, *res = NULL;
    const char *id = NULL, *key = NULL, *token = NULL;
    char *path = NULL, *what = NULL, *url = NULL;
    int rc;

    rc = devbox_prep(&h, aj, al, id_schema, "/create_pty_tunnel", &args, &id,
                     &path, &what);
    if (rc == RLMCP_OK)
        rc = devbox_post(&h, id, path, NULL, what, &tv);
    if (rc != RLMCP_OK)
        goto out;
    key = str_of(tv, "tunnel_key");
    token = str_of(tv, "auth_token");
    if (key == NULL || !tunnel_key_valid(key) || token == NULL) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INTERNAL,
                          "%s: the Runloop API returned a PTY tunnel without "
                          "a usable tunnel_key and auth_token",
                          what);
        goto out;
    }
    url = expand_url(pt->url_template, key, PTY_PORT);
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

    rc = devbox_prep(&h, aj, al, enable_schema, "/enable_tunnel", &args, &id,
                     &path, &what);
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

    rc = devbox_prep(&h, aj, al, url_schema, "", &args, &id, &path, &what);
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

    rc = devbox_prep(&h, aj, al, id_schema, "/remove_tunnel", &args, &id,
                     &path, &what);
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

#define ANN(ro, destr, idem)                                                 \
    "{\"readOnlyHint\":" ro ",\"destructiveHint\":" destr                   \
    ",\"idempotentHint\":" idem ",\"openWorldHint\":true}"

static const struct rlmcp_h_tool specs[] = {
    {"pty_connect", "Open a terminal session",
     "Create, or reconnect to, a named interactive terminal (bash on a "
     "real PTY) on a devbox, for programs that need a TTY: REPLs, TUIs. "
     "For ordinary commands use execute_command.",
     connect_schema, connect_out, ANN("false", "false", "true"), t_connect, false},
    {"pty_send_command", "Type into a terminal session",
     "Type text into a named terminal session and return what the terminal "
     "printed until it is quiet for quiet_ms or max_wait passes, as plain "
     "text (escape sequences removed, carriage returns and backspaces "
     "applied).",
     send_schema, send_out, ANN("false", "true", "false"), t_send, false},
    {"pty_control", "Control a terminal session",
     "Resize a terminal session (the program gets SIGWINCH), send a POSIX "
     "signal to its foreground process group, or close it.",
     control_schema, control_out, ANN("false", "true", "false"), t_control, false},
    {"create_pty_tunnel", "Create a PTY tunnel",
     "Create a fresh authenticated tunnel to the devbox's terminal service "
     "and return its URL and token, for a terminal client of your own. "
     "Treat the token as a secret.",
     id_schema, pty_tunnel_out, ANN("false", "false", "false"), t_pty_tunnel, false},
    {"enable_tunnel", "Expose devbox ports",
     "Enable the devbox's tunnel: every port gets a URL "
     "(url_template with {port}). The service must listen on 0.0.0.0. "
     "authenticated (default here) needs the auth_token in the "
     "X-Runloop-Tunnel-Authorization: Bearer header.",
     enable_schema, tunnel_out, ANN("false", "false", "false"), t_enable, false},
    {"get_tunnel_url", "Get a tunnel URL",
     "The URL of a port on a devbox whose tunnel is enabled, with the "
     "token to send when the tunnel is authenticated.",
     url_schema, url_out, ANN("true", "false", "true"), t_url, false},
    {"remove_tunnel", "Remove a devbox's tunnel",
     "Remove the devbox's tunnel: its URLs stop working.", id_schema,
     removed_out, ANN("false", "true", "true"), t_remove, false},
};

static void pt_free(struct pty *pt)
{
    if (pt == NULL)
        return;
    free(pt->url_template);
    free(pt);
}

static int pt_config(struct pty *pt, rlmcp_plugin *self,
                     const struct rlmcp_host_api *api)
{
    const char *text = api->config_json(self, NULL);
    cJSON *cfg = cJSON_Parse(text != NULL ? text : "{}");
    const cJSON *t = NULL, *m = NULL;
    const char *tmpl = "https://{port}-{tunnel_key}.tunnel.runloop.ai";
    int rc = RLMCP_EINVAL;

    if (!cJSON_IsObject(cfg)) {
        api->set_error(self, "config must be a mapping");
        goto out;
    }
    t = cJSON_GetObjectItemCaseSensitive(cfg, "tunnel_url_template");
    if (t != NULL) {
        if (!cJSON_IsString(t) || strlen(t->valuestring) > 512 ||
            (strncmp(t->valuestring, "http://", 7) != 0 &&
             strncmp(t->valuestring, "https://", 8) != 0) ||
            strstr(t->valuestring, "{port}") == NULL ||
            strstr(t->valuestring, "{tunnel_key}") == NULL) {
            api->set_error(self, "config tunnel_url_template must be an "
                                 "http:// or https:// URL of at most 512 "
                                 "bytes holding {port} and {tunnel_key}");
            goto out;
        }
        tmpl = t->valuestring;
    }
    m = cJSON_GetObjectItemCaseSensitive(cfg, "default_auth_mode");
    if (m != NULL && (!cJSON_IsString(m) ||
                      (strcmp(m->valuestring, "open") != 0 &&
                       strcmp(m->valuestring, "authenticated") != 0))) {
        api->set_error(self, "config default_auth_mode must be open or "
                             "authenticated");
        goto out;
    }
    pt->default_open = m != NULL && strcmp(m->valuestring, "open") == 0;
    pt->url_template = strdup(tmpl);
    rc = pt->url_template != NULL ? RLMCP_OK : RLMCP_ENOMEM;
out:
    cJSON_Delete(cfg);
    return rc;
}

static int pt_init(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                   void **state_out)
{
    struct pty *pt = calloc(1, sizeof(*pt));
    int rc;

    if (pt == NULL)
        return RLMCP_ENOMEM;
    pt->api = api;
    rc = pt_config(pt, self, api);
    if (rc != RLMCP_OK)
        goto fail;
    rc = rlmcp_h_register_tools(self, api, specs,
                                sizeof(specs) / sizeof(specs[0]), pt, 0);
    if (rc != RLMCP_OK)
        goto fail;
    *state_out = pt;
    return RLMCP_OK;
fail:
    pt_free(pt);
    return rc;
}

static void pt_shutdown(rlmcp_plugin *self, void *state)
{
    pt_free(state);
}

RLMCP_PLUGIN_DEFINE("pty", "0.1.0",
                    "PTY sessions and tunnels: connect, send, control, PTY "
                    "tunnel, enable/get/remove tunnel",
                    pt_init, pt_shutdown)
