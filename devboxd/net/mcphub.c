/* devboxd MCP Hub: one HTTP listener per devbox with MCP servers, on
 * 127.0.0.1:MCPHUB_PORT inside the devbox's network namespace (a socket
 * devboxd creates there and serves itself, so only that devbox reaches
 * it). A request's bearer token picks the server; the request goes to the
 * server's endpoint with the real credential and custom headers added, and
 * tools are filtered by the config's allowed_tools. See mcphub.h. */
#define _GNU_SOURCE
#include "mcphub.h"

#include <curl/curl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"
#include "util.h"

#define HUB_MAX_REQUEST (4u << 20)   /* client → hub body */
#define HUB_MAX_RESPONSE (16u << 20) /* upstream → hub body */
/* What one devbox's processes can make devboxd hold (docs/devboxd.md
 * "Limits"): connections (a thread each), requests being served, and
 * request plus answer bytes buffered at once. */
#define HUB_MAX_CONNECTIONS 16u
#define HUB_MAX_REQUESTS 8u
#define HUB_MAX_BUFFERED (32u << 20)
#define HUB_CONNECT_TIMEOUT_S 10L
#define HUB_TIMEOUT_S 300L

struct hub {
    char box_id[40];
    cJSON *servers; /* spec "_mcp" copy: env, token, endpoint, allowed_tools,
                       credential… */
    struct MHD_Daemon *mhd;
    volatile int stopping;
    pthread_mutex_t lock; /* requests, buffered */
    unsigned requests;
    size_t buffered;
    struct hub *next;
};

struct conn {
    const cJSON *srv; /* the server the token picked (hub->servers) */
    char *body;
    size_t len;
    size_t reserved; /* of hub->buffered */
    int counted;     /* in hub->requests */
    int answered;    /* refused at headers time: the body is dropped */
    int too_large;
    int over_budget;
};

struct buf {
    char *data;
    size_t len;
    size_t max;
    int too_large;
};

struct upstream {
    struct hub *hub;
    struct buf body;
    size_t reserved; /* of hub->buffered */
    int over_budget;
    char content_type[128];
    char session_id[256];
};

static pthread_mutex_t hubs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hub *hubs;
static int hubs_stopping;

/* ------------------------------------------------------------ budget */

/* Takes n more bytes of the devbox's buffer budget into *held: 0, or -1
 * when they do not fit. */
static int hub_reserve(struct hub *h, size_t *held, size_t n)
{
    int rc = -1;

    pthread_mutex_lock(&h->lock);
    if (n <= HUB_MAX_BUFFERED - h->buffered) {
        h->buffered += n;
        *held += n;
        rc = 0;
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

static void hub_release(struct hub *h, size_t *held)
{
    pthread_mutex_lock(&h->lock);
    h->buffered -= *held;
    *held = 0;
    pthread_mutex_unlock(&h->lock);
}

/* ------------------------------------------------------------ replies */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status,
                             const char *ctype, const char *body, size_t len,
                             const char *session)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc;

    if (r == NULL)
        return MHD_NO;
    if (ctype != NULL)
        MHD_add_response_header(r, "Content-Type", ctype);
    if (session != NULL && session[0] != '\0')
        MHD_add_response_header(r, "Mcp-Session-Id", session);
    if (status == 405)
        MHD_add_response_header(r, "Allow", "POST, DELETE");
    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

/* A JSON-RPC error object for request id (NULL: null). */
static enum MHD_Result rpc_error(struct MHD_Connection *c, unsigned int status,
                                 const cJSON *id, int code, const char *msg)
{
    cJSON *e = cJSON_CreateObject();
    cJSON *err = cJSON_AddObjectToObject(e, "error");
    char *text = NULL;
    enum MHD_Result rc;

    cJSON_AddStringToObject(e, "jsonrpc", "2.0");
    cJSON_AddItemToObject(
        e, "id", id != NULL ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    cJSON_AddNumberToObject(err, "code", code);
    cJSON_AddStringToObject(err, "message", msg);
    text = cJSON_PrintUnformatted(e);
    rc = reply(c, status, "application/json", text != NULL ? text : "",
               text ? strlen(text) : 0, NULL);
    free(text);
    cJSON_Delete(e);
    return rc;
}

/* ------------------------------------------------------------ upstream */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct upstream *u = ud;
    struct buf *b = &u->body;
    size_t len = size * n;
    char *grown = NULL;

    if (b->len + len > b->max) {
        b->too_large = 1;
        return 0;
    }
    if (hub_reserve(u->hub, &u->reserved, len) != 0) {
        u->over_budget = 1;
        return 0;
    }
    grown = realloc(b->data, b->len + len + 1);
    if (grown == NULL)
        return 0;
    b->data = grown;
    memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
    return len;
}

/* Copies header `name` of a raw header line into out (trimmed). */
static void header_value(const char *line, size_t len, const char *name,
                         char *out, size_t outlen)
{
    size_t nl = strlen(name);
    size_t end = len;
    size_t start = nl + 1;

    if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return;
    while (start < len && (line[start] == ' ' || line[start] == '\t'))
        start++;
    while (end > start && (line[end - 1] == '\r' || line[end - 1] == '\n' ||
                           line[end - 1] == ' '))
        end--;
    if (end - start >= outlen)
        return;
    memcpy(out, line + start, end - start);
    out[end - start] = '\0';
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct upstream *u = ud;
    size_t len = size * n;

    header_value(p, len, "content-type", u->content_type,
                 sizeof(u->content_type));
    header_value(p, len, "mcp-session-id", u->session_id,
                 sizeof(u->session_id));
    return len;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c,
                       curl_off_t d)
{
    struct upstream *u = ud;

    (void)a;
    (void)b;
    (void)c;
    (void)d;
    return u->hub->stopping ? 1 : 0;
}

static const char b64chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Base64 of s (for HTTP Basic), malloc'd. */
static char *b64(const char *s)
{
    size_t len = strlen(s);
    char *out = malloc(4 * ((len + 2) / 3) + 1);
    size_t i;
    size_t o = 0;

    if (out == NULL)
        return NULL;
    for (i = 0; i < len; i += 3) {
        unsigned v = (unsigned char)s[i] << 16;

        if (i + 1 < len)
            v |= (unsigned char)s[i + 1] << 8;
        if (i + 2 < len)
            v |= (unsigned char)s[i + 2];
        out[o++] = b64chars[(v >> 18) & 63];
        out[o++] = b64chars[(v >> 12) & 63];
        out[o++] = i + 1 < len ? b64chars[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? b64chars[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* Appends "Name: value" to list, scrubbing the temporary copy. */
static struct curl_slist *add_header(struct curl_slist *list, const char *name,
                                     const char *value)
{
    struct curl_slist *next = NULL;
    char *line = NULL;

    if (value == NULL || asprintf(&line, "%s: %s", name, value) < 0)
        return list;
    next = curl_slist_append(list, line);
    explicit_bzero(line, strlen(line));
    free(line);
    return next != NULL ? next : list;
}

/* The credential and custom headers of server srv. */
static struct curl_slist *auth_headers(struct curl_slist *list,
                                       const cJSON *srv)
{
    const cJSON *auth = cJSON_GetObjectItemCaseSensitive(srv, "auth_mechanism");
    const char *type = util_json_str(auth, "type");
    const char *key = util_json_str(auth, "key");
    const char *cred = util_json_str(srv, "credential");
    const cJSON *h = NULL;
    char *v = NULL;

    if (type != NULL && strcmp(type, "header") == 0 && key != NULL) {
        list = add_header(list, key, cred);
    } else if (type != NULL && strcmp(type, "basic") == 0) {
        char *enc = b64(cred != NULL ? cred : "");

        if (enc != NULL && asprintf(&v, "Basic %s", enc) >= 0)
            list = add_header(list, "Authorization", v);
        free(enc);
    } else if (asprintf(&v, "Bearer %s", cred != NULL ? cred : "") >= 0) {
        list = add_header(list, "Authorization", v);
    }
    if (v != NULL) {
        explicit_bzero(v, strlen(v));
        free(v);
    }
    cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(srv, "headers"))
    {
        list = add_header(list, util_json_str(h, "name"),
                          util_json_str(h, "value"));
    }
    return list;
}

/* Sends the request upstream; *status receives the HTTP status (0 when
 * the server could not be reached, with err). */
static void forward(struct MHD_Connection *c, const cJSON *srv,
                    const char *method, const struct conn *in,
                    struct upstream *u, long *status, char *err, size_t errlen)
{
    static const char *const passed[] = {"Accept", "Mcp-Session-Id",
                                         "MCP-Protocol-Version",
                                         "Last-Event-ID", NULL};
    CURL *curl = curl_easy_init();
    struct curl_slist *hdrs = NULL;
    CURLcode rc;
    size_t i;

    *status = 0;
    if (curl == NULL) {
        snprintf(err, errlen, "out of memory");
        return;
    }
    for (i = 0; passed[i] != NULL; i++)
        hdrs = add_header(
            hdrs, passed[i],
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, passed[i]));
    if (strcmp(method, "POST") == 0)
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    hdrs = auth_headers(hdrs, srv);
    curl_easy_setopt(curl, CURLOPT_URL, util_json_str(srv, "endpoint"));
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, HUB_CONNECT_TIMEOUT_S);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, HUB_TIMEOUT_S);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, u);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, u);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, u);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS,
                         in->body != NULL ? in->body : "");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)in->len);
    } else {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    }
    rc = curl_easy_perform(curl);
    if (rc == CURLE_OK)
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, status);
    else if (u->over_budget)
        snprintf(err, errlen,
                 "the answer does not fit in the %u MiB this devbox's MCP Hub "
                 "may hold at once (other requests hold the rest); retry",
                 HUB_MAX_BUFFERED >> 20);
    else
        snprintf(err, errlen, "%s",
                 u->body.too_large ? "the answer is over 16 MiB"
                                   : curl_easy_strerror(rc));
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(curl);
}

/* ------------------------------------------------------------ filtering */

/* Drops the tools not allowed from a JSON-RPC message's result.tools. */
static int filter_message(cJSON *msg, const cJSON *allowed)
{
    cJSON *tools = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(msg, "result"), "tools");
    int i;
    int changed = 0;

    if (!cJSON_IsArray(tools))
        return 0;
    for (i = cJSON_GetArraySize(tools) - 1; i >= 0; i--) {
        const cJSON *t = cJSON_GetArrayItem(tools, i);
        const char *name = util_json_str(t, "name");

        if (name == NULL || !mcp_configs_tool_allowed(allowed, name)) {
            cJSON_DeleteItemFromArray(tools, i);
            changed = 1;
        }
    }
    return changed;
}

static void buf_add(struct buf *b, const char *s, size_t len)
{
    char *grown = realloc(b->data, b->len + len + 1);

    if (grown == NULL)
        return;
    b->data = grown;
    memcpy(b->data + b->len, s, len);
    b->len += len;
    b->data[b->len] = '\0';
}

/* One SSE event (lines without the blank separator) into out, its data
 * filtered when it is a tools/list result. */
static void filter_event(const char *ev, size_t len, const cJSON *allowed,
                         struct buf *out)
{
    struct buf data = {0};
    struct buf other = {0};
    const char *p = ev;
    const char *end = ev + len;
    cJSON *msg = NULL;
    char *text = NULL;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
        size_t ll = l > 0 && p[l - 1] == '\r' ? l - 1 : l;

        if (ll >= 5 && strncmp(p, "data:", 5) == 0) {
            size_t skip = ll > 5 && p[5] == ' ' ? 6 : 5;

            if (data.len > 0)
                buf_add(&data, "\n", 1);
            buf_add(&data, p + skip, ll - skip);
        } else {
            buf_add(&other, p, ll);
            buf_add(&other, "\n", 1);
        }
        p += l + 1;
    }
    msg = data.data != NULL ? cJSON_Parse(data.data) : NULL;
    if (msg != NULL && filter_message(msg, allowed))
        text = cJSON_PrintUnformatted(msg);
    if (text != NULL) {
        if (other.len > 0)
            buf_add(out, other.data, other.len);
        buf_add(out, "data: ", 6);
        buf_add(out, text, strlen(text));
        buf_add(out, "\n\n", 2);
    } else {
        buf_add(out, ev, len);
        buf_add(out, "\n\n", 2);
    }
    free(text);
    cJSON_Delete(msg);
    free(data.data);
    free(other.data);
}

/* Filters an upstream tools/list answer in place (JSON or SSE). */
static void filter_answer(struct upstream *u, const cJSON *allowed)
{
    struct buf out = {0};
    const char *p = u->body.data;
    const char *end = p + u->body.len;
    cJSON *msg = NULL;

    if (p == NULL)
        return;
    if (strncasecmp(u->content_type, "application/json", 16) == 0) {
        msg = cJSON_Parse(p);
        if (msg != NULL && filter_message(msg, allowed)) {
            out.data = cJSON_PrintUnformatted(msg);
            out.len = out.data != NULL ? strlen(out.data) : 0;
        }
        cJSON_Delete(msg);
    } else if (strncasecmp(u->content_type, "text/event-stream", 17) == 0) {
        while (p < end) {
            const char *sep = strstr(p, "\n\n");
            const char *sep2 = strstr(p, "\r\n\r\n");
            size_t skip = 2;

            if (sep2 != NULL && (sep == NULL || sep2 < sep)) {
                sep = sep2;
                skip = 4;
            }
            if (sep == NULL)
                sep = end;
            if (sep > p)
                filter_event(p, (size_t)(sep - p), allowed, &out);
            p = sep == end ? end : sep + skip;
        }
    }
    if (out.data != NULL) {
        free(u->body.data);
        u->body = out;
    }
}

/* ------------------------------------------------------------ requests */

/* The server whose token the request carries, or NULL. Constant time in
 * the token's bytes. */
static const cJSON *server_of(struct hub *hub, struct MHD_Connection *c)
{
    const char *h =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const cJSON *srv = NULL;
    const cJSON *found = NULL;

    if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    cJSON_ArrayForEach(srv, hub->servers)
    {
        const char *tok = util_json_str(srv, "token");

        /* Every server is compared: the time does not say which matched. */
        if (util_secret_equal(h, tok))
            found = srv;
    }
    return found;
}

/* Checks a POST body: a tools/call of a tool not allowed is answered
 * here. *is_list is set for tools/list. Returns 1 when answered. */
static int check_post(struct MHD_Connection *c, const cJSON *srv,
                      const cJSON *msg, int *is_list, enum MHD_Result *ret)
{
    const cJSON *allowed =
        cJSON_GetObjectItemCaseSensitive(srv, "allowed_tools");
    const char *method = util_json_str(msg, "method");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *tool = NULL;
    char text[512];

    if (cJSON_IsArray(msg)) {
        *ret = rpc_error(c, 400, NULL, -32600,
                         "JSON-RPC batches are not supported by the "
                         "MCP Hub; send one message per request");
        return 1;
    }
    if (!cJSON_IsObject(msg)) {
        *ret = rpc_error(c, 400, NULL, -32600,
                         "the body must be a JSON-RPC message");
        return 1;
    }
    *is_list = method != NULL && strcmp(method, "tools/list") == 0;
    if (method == NULL || strcmp(method, "tools/call") != 0)
        return 0;
    tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(msg, "params"), "name"));
    if (tool != NULL && mcp_configs_tool_allowed(allowed, tool))
        return 0;
    snprintf(text, sizeof(text),
             "tool \"%.200s\" is not allowed by MCP config %s "
             "(allowed_tools)",
             tool != NULL ? tool : "", util_json_str(srv, "name"));
    *ret = rpc_error(c, 200, id, -32602, text);
    return 1;
}

static enum MHD_Result serve(struct hub *hub, struct MHD_Connection *c,
                             const char *method, struct conn *in)
{
    struct upstream u;
    const cJSON *srv = NULL;
    cJSON *msg = NULL;
    enum MHD_Result ret = MHD_NO;
    int is_list = 0;
    long status = 0;
    char err[256] = "";
    char text[512];

    memset(&u, 0, sizeof(u));
    u.hub = hub;
    u.body.max = HUB_MAX_RESPONSE;
    srv = in->srv;
    if (in->too_large)
        return rpc_error(c, 413, NULL, -32600, "request body over 4 MiB");
    if (in->over_budget) {
        snprintf(text, sizeof(text),
                 "this devbox's MCP Hub holds at most %u MiB of request and "
                 "answer bodies at once, and other requests hold the rest; "
                 "retry when they are done",
                 HUB_MAX_BUFFERED >> 20);
        return rpc_error(c, 429, NULL, -32000, text);
    }
    if (strcmp(method, "POST") == 0) {
        msg = cJSON_ParseWithLength(in->body != NULL ? in->body : "", in->len);
        if (msg == NULL)
            return rpc_error(c, 400, NULL, -32700,
                             "parse error: the body is not JSON");
        if (check_post(c, srv, msg, &is_list, &ret))
            goto out;
    }
    forward(c, srv, method, in, &u, &status, err, sizeof(err));
    if (status == 0) {
        snprintf(text, sizeof(text),
                 "MCP server of config %s is unreachable: %s",
                 util_json_str(srv, "name"), err);
        ret = rpc_error(c, 502, cJSON_GetObjectItemCaseSensitive(msg, "id"),
                        -32603, text);
        goto out;
    }
    if (is_list && status == 200)
        filter_answer(&u,
                      cJSON_GetObjectItemCaseSensitive(srv, "allowed_tools"));
    ret = reply(
        c, (unsigned int)status, u.content_type[0] ? u.content_type : NULL,
        u.body.data != NULL ? u.body.data : "", u.body.len, u.session_id);
out:
    cJSON_Delete(msg);
    free(u.body.data);
    hub_release(hub, &u.reserved);
    return ret;
}

/* The first call, with the headers only: whatever needs no body is decided
 * before a byte of it is read or buffered, so a process without a token
 * (or over its devbox's share) costs devboxd nothing but the answer. */
static enum MHD_Result admit(struct hub *hub, struct MHD_Connection *c,
                             const char *url, const char *method,
                             struct conn *in)
{
    const char *cl_text = MHD_lookup_connection_value(
        c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long cl = 0;
    int busy = 0;
    char text[300];

    /* A response queued now makes libmicrohttpd skip the body and close. */
    in->answered = 1;
    if (strcmp(url, "/mcp") != 0 && strcmp(url, "/mcp/") != 0)
        return reply(c, 404, "text/plain", "the MCP Hub serves /mcp\n", 24,
                     NULL);
    in->srv = server_of(hub, c);
    if (in->srv == NULL)
        return rpc_error(
            c, 401, NULL, -32001,
            "missing or unknown MCP Hub token: send "
            "'Authorization: Bearer $<your server's token variable>'");
    if (strcmp(method, "POST") != 0 && strcmp(method, "DELETE") != 0)
        return reply(c, 405, "text/plain", "", 0, NULL);
    if (cl_text != NULL)
        cl = strtoull(cl_text, NULL, 10);
    if (cl > HUB_MAX_REQUEST)
        return rpc_error(c, 413, NULL, -32600, "request body over 4 MiB");
    pthread_mutex_lock(&hub->lock);
    if (hub->requests >= HUB_MAX_REQUESTS) {
        busy = 1;
    } else if (cl > HUB_MAX_BUFFERED - hub->buffered) {
        busy = 2;
    } else {
        hub->requests++;
        hub->buffered += cl;
        in->reserved = cl;
        in->counted = 1;
    }
    pthread_mutex_unlock(&hub->lock);
    if (busy == 1)
        snprintf(text, sizeof(text),
                 "this devbox's MCP Hub serves %u requests at once and is "
                 "serving %u; retry when one is done",
                 HUB_MAX_REQUESTS, HUB_MAX_REQUESTS);
    else if (busy == 2)
        snprintf(text, sizeof(text),
                 "this devbox's MCP Hub holds at most %u MiB of request and "
                 "answer bodies at once, and other requests hold the rest; "
                 "retry when they are done",
                 HUB_MAX_BUFFERED >> 20);
    if (busy != 0)
        return rpc_error(c, 429, NULL, -32000, text);
    in->answered = 0;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
    struct hub *hub = cls;
    struct conn *in = *con_cls;

    (void)version;
    if (in == NULL) {
        in = calloc(1, sizeof(*in));
        if (in == NULL)
            return MHD_NO;
        *con_cls = in;
        return admit(hub, c, url, method, in);
    }
    if (in->answered) {
        *data_size = 0;
        return MHD_YES;
    }
    if (*data_size > 0) {
        size_t want = in->len + *data_size;

        /* A body without Content-Length (chunked) is reserved as it comes. */
        if (want > HUB_MAX_REQUEST || in->too_large) {
            in->too_large = 1;
        } else if (in->over_budget || (want > in->reserved &&
                                       hub_reserve(hub, &in->reserved,
                                                   want - in->reserved) != 0)) {
            in->over_budget = 1;
        } else {
            char *grown = realloc(in->body, in->len + *data_size + 1);

            if (grown == NULL)
                return MHD_NO;
            in->body = grown;
            memcpy(in->body + in->len, data, *data_size);
            in->len += *data_size;
            in->body[in->len] = '\0';
        }
        *data_size = 0;
        return MHD_YES;
    }
    return serve(hub, c, method, in);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
    struct hub *hub = cls;
    struct conn *in = *con_cls;

    (void)c;
    (void)toe;
    if (in != NULL) {
        hub_release(hub, &in->reserved);
        if (in->counted) {
            pthread_mutex_lock(&hub->lock);
            hub->requests--;
            pthread_mutex_unlock(&hub->lock);
        }
        free(in->body);
        free(in);
    }
    *con_cls = NULL;
}

/* ------------------------------------------------------------ lifecycle */

static void hub_free(struct hub *h)
{
    if (h == NULL)
        return;
    h->stopping = 1;
    if (h->mhd != NULL)
        MHD_stop_daemon(h->mhd);
    cJSON_Delete(h->servers);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

void mcphub_boot(struct engine *eng, struct devbox *box, struct sandbox *sb)
{
    struct hub *h = NULL;
    const cJSON *servers = NULL;
    int lfd = -1;
    char msg[300];

    pthread_mutex_lock(&eng->lock);
    servers = cJSON_GetObjectItemCaseSensitive(box->spec, "_mcp");
    if (cJSON_GetArraySize(servers) > 0)
        h = calloc(1, sizeof(*h));
    if (h != NULL) {
        h->servers = cJSON_Duplicate(servers, 1);
        pthread_mutex_init(&h->lock, NULL);
    }
    pthread_mutex_unlock(&eng->lock);
    if (h == NULL)
        return;
    mcphub_forget(box->id); /* a previous boot's hub */
    snprintf(h->box_id, sizeof(h->box_id), "%s", box->id);
    lfd = sandbox_listen_tcp(sb, MCPHUB_PORT);
    if (lfd < 0) {
        snprintf(msg, sizeof(msg), "MCP Hub not started: port %d inside: %s",
                 MCPHUB_PORT, strerror(-lfd));
        goto fail;
    }
    h->mhd = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
            MHD_USE_ITC | MHD_USE_POLL,
        0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, lfd,
        MHD_OPTION_NOTIFY_COMPLETED, on_done, h, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)HUB_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
        HUB_MAX_CONNECTIONS, MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512 * 1024),
        MHD_OPTION_END);
    if (h->mhd == NULL) {
        close(lfd);
        snprintf(msg, sizeof(msg),
                 "MCP Hub not started: cannot start its HTTP server");
        goto fail;
    }
    pthread_mutex_lock(&hubs_lock);
    if (hubs_stopping) {
        pthread_mutex_unlock(&hubs_lock);
        hub_free(h);
        return;
    }
    h->next = hubs;
    hubs = h;
    pthread_mutex_unlock(&hubs_lock);
    return;
fail:
    hub_free(h);
    pthread_mutex_lock(&eng->lock);
    engine_log_locked(eng, box, "entrypoint", "warn", msg, NULL, 0);
    pthread_mutex_unlock(&eng->lock);
}

void mcphub_forget(const char *box_id)
{
    struct hub **pp;
    struct hub *found = NULL;

    pthread_mutex_lock(&hubs_lock);
    for (pp = &hubs; *pp != NULL; pp = &(*pp)->next) {
        if (strcmp((*pp)->box_id, box_id) == 0) {
            found = *pp;
            *pp = found->next;
            break;
        }
    }
    pthread_mutex_unlock(&hubs_lock);
    hub_free(found);
}

void mcphub_shutdown(void)
{
    struct hub *list = NULL;

    pthread_mutex_lock(&hubs_lock);
    hubs_stopping = 1;
    list = hubs;
    hubs = NULL;
    pthread_mutex_unlock(&hubs_lock);
    while (list != NULL) {
        struct hub *next = list->next;

        hub_free(list);
        list = next;
    }
}
