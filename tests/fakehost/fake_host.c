/*
 * fake_host.c - see fake_host.h. Test-only code: it aborts on ENOMEM.
 */
#define _GNU_SOURCE
#include "fake_host.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlmcp_helpers.h"
#include "schema.h"

#define FH_MAX 512

struct fh_route_ent {
    char *method;
    char *path;
    long status;
    char *body;
    size_t body_len;
    int rc;
    int times;
    int used;
    bool sse;
    char **sse_data;
    size_t sse_n;
};

struct rlmcp_plugin {
    int dummy;
};
struct rlmcp_call {
    int dummy;
};

static struct {
    const struct rlmcp_plugin_desc *desc;
    void *state;
    char *config;
    char *init_error;
    struct rlmcp_tool_def tools[64];
    cJSON *in_schema[64]; /* parsed and checked as the host does */
    cJSON *out_schema[64];
    size_t n_tools;
    size_t n_resources; /* registered resources (counted only) */
    struct fh_route_ent routes[FH_MAX];
    size_t n_routes;
    struct fh_request reqs[FH_MAX];
    size_t n_reqs;
    cJSON *parsed[FH_MAX];
    size_t n_parsed;
    cJSON *result;
    char *text;
    cJSON *contents[FH_MAX]; /* result_content blocks */
    size_t n_contents;
    char *err_code, *err_msg, *err_remedy;
    char *prog_msg[FH_MAX];
    double prog_val[FH_MAX];
    size_t n_prog;
    bool cancelled;
    uint32_t sleeps[64]; /* the first sleep_ms pauses asked for */
    size_t n_sleeps;     /* all of them, also past the array */
    int cancel_after;
    bool in_init;
    /* ABI 1.1 */
    struct fh_pty_script pty_script[32];
    size_t n_pty_script, pty_used;
    struct fh_pty_record pty[FH_MAX];
    size_t n_pty;
    bool abi10;
    /* ABI 1.6 */
    bool ws;                      /* offer runloop_ws_* */
    struct rlmcp_ws *ws_open[16]; /* handles not closed yet */
    size_t n_ws_open, ws_left;
    /* ABI 1.3 */
    char *hidden[8];
    size_t n_hidden;
} fh;

static struct rlmcp_plugin fh_self;
static struct rlmcp_call fh_the_call;

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        abort();
    return p;
}

static char *xstrdup(const char *s)
{
    char *p;
    if (s == NULL)
        return NULL;
    p = strdup(s);
    if (p == NULL)
        abort();
    return p;
}

static char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* ---- services -------------------------------------------------------- */

/* One schema parsed and checked by the host's validator; -1 after
 * saying why on stderr. */
static int check_schema(const char *tool, const char *json, bool input,
                        cJSON **out)
{
    char err[512] = "";
    cJSON *s = cJSON_Parse(json);
    int rc;

    if (s == NULL) {
        fprintf(stderr, "fake host: tool %s: %s schema is not JSON\n", tool,
                input ? "input" : "output");
        return -1;
    }
    rc = input ? schema_check_tool_input(s, err, sizeof(err))
               : schema_check_tool_output(s, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "fake host: tool %s: %s schema: %s\n", tool,
                input ? "input" : "output", err);
        cJSON_Delete(s);
        return -1;
    }
    *out = s;
    return 0;
}

static int check_schemas(const struct rlmcp_tool_def *def, cJSON **in,
                         cJSON **out)
{
    *in = NULL;
    *out = NULL;
    if (check_schema(def->name, def->input_schema_json, true, in) != 0)
        return -1;
    if (def->output_schema_json != NULL &&
        check_schema(def->name, def->output_schema_json, false, out) != 0) {
        cJSON_Delete(*in);
        *in = NULL;
        return -1;
    }
    return 0;
}

static int svc_register_tool(rlmcp_plugin *self,
                             const struct rlmcp_tool_def *def)
{
    cJSON *in = NULL;
    cJSON *out = NULL;
    size_t i;

    if (!fh.in_init)
        return RLMCP_ESTATE;
    if (def->name == NULL || def->handler == NULL || def->description == NULL ||
        def->input_schema_json == NULL)
        return RLMCP_EINVAL;
    for (i = 0; i < fh.n_tools; i++) {
        if (strcmp(fh.tools[i].name, def->name) == 0)
            return RLMCP_EEXIST;
    }
    /* Annotations must parse, as the host checks. */
    if (def->annotations_json != NULL) {
        cJSON *a = cJSON_Parse(def->annotations_json);
        bool ok = cJSON_IsObject(a);
        cJSON_Delete(a);
        if (!ok)
            return RLMCP_EINVAL;
    }
    if (fh.n_tools == 64)
        return RLMCP_ENOMEM;
    if (check_schemas(def, &in, &out) != 0)
        return RLMCP_EINVAL;
    fh.in_schema[fh.n_tools] = in;
    fh.out_schema[fh.n_tools] = out;
    fh.tools[fh.n_tools] = *def;
    fh.tools[fh.n_tools].name = xstrdup(def->name);
    fh.tools[fh.n_tools].title = xstrdup(def->title);
    fh.tools[fh.n_tools].description = xstrdup(def->description);
    fh.tools[fh.n_tools].input_schema_json = xstrdup(def->input_schema_json);
    fh.tools[fh.n_tools].output_schema_json = xstrdup(def->output_schema_json);
    fh.tools[fh.n_tools].annotations_json = xstrdup(def->annotations_json);
    fh.n_tools++;
    return RLMCP_OK;
}

static int svc_register_resource(rlmcp_plugin *self,
                                 const struct rlmcp_resource_def *def)
{
    if (!fh.in_init)
        return RLMCP_ESTATE;
    if (def->name == NULL || def->read == NULL ||
        (def->uri == NULL) == (def->uri_template == NULL))
        return RLMCP_EINVAL;
    fh.n_resources++;
    return RLMCP_OK;
}

static int svc_register_prompt(rlmcp_plugin *self,
                               const struct rlmcp_prompt_def *def)
{
    return RLMCP_ENOTSUP;
}

static void svc_set_error(rlmcp_plugin *self, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    free(fh.init_error);
    fh.init_error = s;
}

static const char *svc_config_json(rlmcp_plugin *self, size_t *len_out)
{
    if (len_out != NULL)
        *len_out = strlen(fh.config);
    return fh.config;
}

static void svc_vlog(rlmcp_plugin *self, int level, const char *fmt, va_list ap)
{
    if (getenv("FH_VERBOSE") == NULL)
        return;
    fprintf(stderr, "[fake-host log %d] ", level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void svc_log(rlmcp_plugin *self, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    svc_vlog(self, level, fmt, ap);
    va_end(ap);
}

static void *svc_alloc(size_t n)
{
    return malloc(n);
}
static void *svc_calloc(size_t n, size_t s)
{
    return calloc(n, s);
}
static char *svc_strdup(const char *s)
{
    return strdup(s);
}
static void svc_free(void *p)
{
    free(p);
}

static const char *svc_strerror(int code)
{
    switch (code) {
    case RLMCP_OK:
        return "ok";
    case RLMCP_EINVAL:
        return "invalid argument";
    case RLMCP_ENOMEM:
        return "out of memory";
    case RLMCP_ECANCELLED:
        return "cancelled";
    case RLMCP_ETIMEDOUT:
        return "timed out";
    case RLMCP_EHTTP:
        return "transport failure";
    case RLMCP_ETOOBIG:
        return "message too big";
    default:
        return "error";
    }
}

static void append_text(const char *t)
{
    size_t a = fh.text ? strlen(fh.text) : 0;
    size_t b = strlen(t);
    char *n = xmalloc(a + b + 1);
    if (a)
        memcpy(n, fh.text, a);
    memcpy(n + a, t, b + 1);
    free(fh.text);
    fh.text = n;
}

static int svc_result_text(rlmcp_call *call, const char *text)
{
    append_text(text);
    return RLMCP_OK;
}

static int svc_result_content(rlmcp_call *call, const char *json, size_t len)
{
    cJSON *o = cJSON_ParseWithLength(json, len);
    bool ok =
        cJSON_IsObject(o) && cJSON_IsString(cJSON_GetObjectItem(o, "type"));

    if (ok && fh.n_contents < FH_MAX) {
        fh.contents[fh.n_contents++] = o;
        return RLMCP_OK;
    }
    cJSON_Delete(o);
    return ok ? RLMCP_OK : RLMCP_EINVAL;
}

static int svc_result_json(rlmcp_call *call, const char *json, size_t len)
{
    cJSON *o = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return RLMCP_EINVAL;
    }
    cJSON_Delete(fh.result);
    fh.result = o;
    return RLMCP_OK;
}

static int svc_result_error(rlmcp_call *call, const char *code,
                            const char *remedy, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    free(fh.err_code);
    free(fh.err_msg);
    free(fh.err_remedy);
    fh.err_code = xstrdup(code);
    fh.err_msg = s;
    fh.err_remedy = xstrdup(remedy);
    cJSON_Delete(fh.result);
    fh.result = NULL;
    if (getenv("FH_VERBOSE") != NULL)
        fprintf(stderr, "[fake-host error] %s: %s\n", code, s);
    return RLMCP_OK;
}

static int svc_progress(rlmcp_call *call, double progress, double total,
                        const char *message)
{
    if (fh.n_prog == FH_MAX)
        return RLMCP_OK;
    fh.prog_val[fh.n_prog] = progress;
    fh.prog_msg[fh.n_prog] = xstrdup(message ? message : "");
    fh.n_prog++;
    return RLMCP_OK;
}

static bool svc_is_cancelled(rlmcp_call *call)
{
    return fh.cancelled;
}

/* ---- the simulated clock (fh_use_fake_clock) ---------------------------
 * The real clocks plus g_ahead_ms: the time the plugin's naps, sleeps and
 * timed-out requests would have taken, added at once instead of waited. */
static bool g_fake_clock;
static uint64_t g_ahead_ms;

static uint64_t fake_mono_ms(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u +
           g_ahead_ms;
}

static long long fake_wall_ms(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 +
           (long long)g_ahead_ms;
}

static void fake_nap_ms(void *ctx, uint64_t ms)
{
    (void)ctx;
    g_ahead_ms += ms;
}

void fh_use_fake_clock(bool on)
{
    static const struct rlmcp_h_clock fake = {fake_mono_ms, fake_wall_ms,
                                              fake_nap_ms, NULL};

    g_fake_clock = on;
    g_ahead_ms = 0;
    rlmcp_h_set_clock(on ? &fake : NULL);
}

/* A request answered "timed out" took its whole bound. */
static void timed_out_after(const struct rlmcp_http_req *req, int rc)
{
    if (g_fake_clock && rc == RLMCP_ETIMEDOUT)
        g_ahead_ms += req->timeout_ms;
}

static int svc_sleep_ms(rlmcp_call *call, uint32_t ms)
{
    /* Tests never wait: the pause is recorded, and a simulated clock moves
     * on at once (without one, time is not simulated). */
    (void)call;
    if (fh.n_sleeps < sizeof(fh.sleeps) / sizeof(fh.sleeps[0]))
        fh.sleeps[fh.n_sleeps] = ms;
    fh.n_sleeps++;
    if (fh.cancelled)
        return RLMCP_ECANCELLED;
    if (g_fake_clock)
        g_ahead_ms += ms;
    return RLMCP_OK;
}

static void svc_call_log(rlmcp_call *call, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    svc_vlog(NULL, level, fmt, ap);
    va_end(ap);
}

static bool path_match(const char *pattern, const char *path)
{
    size_t n = strlen(pattern);
    if (n > 0 && pattern[n - 1] == '*')
        return strncmp(pattern, path, n - 1) == 0;
    return strcmp(pattern, path) == 0;
}

static struct fh_route_ent *find_route(const char *method, const char *path,
                                       bool sse)
{
    size_t i;

    for (i = 0; i < fh.n_routes; i++) {
        struct fh_route_ent *r = &fh.routes[i];
        if (r->sse != sse)
            continue;
        if (r->times > 0 && r->used >= r->times)
            continue;
        if (!sse && strcmp(r->method, method) != 0)
            continue;
        if (!path_match(r->path, path))
            continue;
        r->used++;
        return r;
    }
    return NULL;
}

static void record(const struct rlmcp_http_req *req)
{
    struct fh_request *r;
    size_t i;

    if (fh.n_reqs == FH_MAX)
        abort();
    r = &fh.reqs[fh.n_reqs++];
    memset(r, 0, sizeof(*r));
    r->method = xstrdup(req->method);
    r->path = xstrdup(req->path);
    if (req->body != NULL)
        r->body = xstrndup(req->body, req->body_len);
    r->accept = xstrdup(req->accept);
    r->flags = req->flags;
    r->timeout_ms = req->timeout_ms;
    r->max_retries = req->max_retries;
    r->max_body = req->max_body;
    r->cancelled_at_send = fh.cancelled;
    r->n_parts = req->n_parts;
    for (i = 0; i < req->n_parts; i++) {
        const struct rlmcp_http_part *p = &req->parts[i];
        if (p->name != NULL && strcmp(p->name, "path") == 0)
            r->part_path = xstrndup(p->data, p->len);
        if (p->name != NULL && strcmp(p->name, "file") == 0) {
            r->part_file = xmalloc(p->len);
            memcpy(r->part_file, p->data, p->len);
            r->part_file_len = p->len;
        }
    }
}

static void tick_cancel(void)
{
    if (fh.cancel_after > 0 && --fh.cancel_after == 0)
        fh.cancelled = true;
}

static int svc_runloop_request(rlmcp_call *call,
                               const struct rlmcp_http_req *req,
                               struct rlmcp_http_resp **resp_out)
{
    struct fh_route_ent *route;
    struct rlmcp_http_resp *resp;
    char *body;
    size_t len;

    *resp_out = NULL;
    if (req->method == NULL || req->path == NULL)
        return RLMCP_EINVAL;
    record(req);
    if (fh.cancelled && !(req->flags & RLMCP_HTTP_IGNORE_CANCEL))
        return RLMCP_ECANCELLED;
    route = find_route(req->method, req->path, false);
    tick_cancel();
    if (route != NULL && route->rc != 0) {
        timed_out_after(req, route->rc);
        return route->rc;
    }
    resp = xmalloc(sizeof(*resp));
    memset(resp, 0, sizeof(*resp));
    resp->struct_size = sizeof(*resp);
    if (route == NULL) {
        if (getenv("FH_VERBOSE") != NULL)
            fprintf(stderr, "[fake-host] no route for %s %s\n", req->method,
                    req->path);
        resp->status = 599;
        body = xstrdup("{\"message\":\"fake host: no route\"}");
        len = strlen(body);
    } else {
        resp->status = route->status;
        len = route->body_len;
        body = xmalloc(len + 1);
        memcpy(body, route->body, len);
        body[len] = '\0';
    }
    if (req->max_body > 0 && len > req->max_body) {
        len = req->max_body;
        body[len] = '\0';
        resp->truncated = true;
    }
    resp->body = body;
    resp->body_len = len;
    *resp_out = resp;
    return RLMCP_OK;
}

static void svc_http_resp_free(struct rlmcp_http_resp *resp)
{
    if (resp == NULL)
        return;
    free((char *)resp->body);
    free(resp);
}

static int svc_runloop_sse(rlmcp_call *call, const struct rlmcp_http_req *req,
                           rlmcp_sse_fn on_event, void *user, long *status_out)
{
    struct fh_route_ent *route;
    size_t i;

    record(req);
    if (fh.cancelled)
        return RLMCP_ECANCELLED;
    route = find_route("GET", req->path, true);
    if (route == NULL) {
        if (status_out != NULL)
            *status_out = 404;
        return RLMCP_OK;
    }
    if (status_out != NULL)
        *status_out = route->status;
    if (route->status < 200 || route->status > 299)
        return RLMCP_OK;
    for (i = 0; i < route->sse_n; i++) {
        if (fh.cancelled)
            return RLMCP_ECANCELLED;
        if (on_event(user, NULL, NULL, route->sse_data[i],
                     strlen(route->sse_data[i])) != 0)
            break;
    }
    if (route->rc != 0) {
        timed_out_after(req, route->rc);
        return route->rc;
    }
    return fh.cancelled ? RLMCP_ECANCELLED : RLMCP_OK;
}

static int svc_client_request(rlmcp_call *call, const char *method,
                              const char *params_json, uint32_t timeout_ms,
                              char **result_out)
{
    return RLMCP_ENOTSUP;
}

static int svc_resource_contents(rlmcp_call *call, const char *uri,
                                 const char *mime_type, const void *data,
                                 size_t len, bool is_blob)
{
    return RLMCP_ENOTSUP;
}

static int svc_prompt_message(rlmcp_call *call, const char *role,
                              const char *content_json)
{
    return RLMCP_ENOTSUP;
}

static rlmcp_plugin *svc_call_plugin(rlmcp_call *call)
{
    return &fh_self;
}

/* ---- ABI 1.1: tunnels --------------------------------------------------- */

static int svc_runloop_tunnel_request(rlmcp_call *call,
                                      const struct rlmcp_tunnel *t,
                                      const struct rlmcp_http_req *req,
                                      struct rlmcp_http_resp **resp_out)
{
    struct rlmcp_http_req copy;
    struct fh_request *r;
    char *path;
    int rc;

    *resp_out = NULL;
    if (t == NULL || t->struct_size < sizeof(*t) || t->tunnel_key == NULL ||
        t->port == 0 || req->path == NULL)
        return RLMCP_EINVAL;
    if (asprintf(&path, "tunnel/%u%s", (unsigned)t->port, req->path) < 0)
        abort();
    copy = *req;
    copy.path = path;
    rc = svc_runloop_request(call, &copy, resp_out);
    r = &fh.reqs[fh.n_reqs - 1];
    r->tunnel_key = xstrdup(t->tunnel_key);
    r->tunnel_token = xstrdup(t->auth_token);
    free(path);
    return rc;
}

static int svc_runloop_pty_exchange(rlmcp_call *call,
                                    const struct rlmcp_tunnel *t,
                                    struct rlmcp_pty_exchange *x)
{
    struct fh_pty_record *r;
    const struct fh_pty_script *sc;
    size_t i;

    if (t == NULL || x == NULL || x->struct_size < sizeof(*x) ||
        x->connect_url == NULL || x->on_output == NULL ||
        t->tunnel_key == NULL || fh.n_pty == FH_MAX)
        return RLMCP_EINVAL;
    r = &fh.pty[fh.n_pty++];
    memset(r, 0, sizeof(*r));
    r->connect_url = xstrdup(x->connect_url);
    r->input = xstrndup(x->input != NULL ? x->input : "", x->input_len);
    r->input_len = x->input_len;
    r->quiet_ms = x->quiet_ms;
    r->max_wait_ms = x->max_wait_ms;
    r->tunnel_key = xstrdup(t->tunnel_key);
    r->tunnel_token = xstrdup(t->auth_token);
    r->port = t->port;
    x->upgrade_status = 0;
    x->close_code = 0;
    x->quiet = false;
    if (fh.cancelled)
        return RLMCP_ECANCELLED;
    if (fh.n_pty_script == 0)
        return RLMCP_EHTTP;
    sc = &fh.pty_script[fh.pty_used < fh.n_pty_script ? fh.pty_used
                                                      : fh.n_pty_script - 1];
    fh.pty_used++;
    for (i = 0; i < sc->n_chunks; i++) {
        if (x->on_output(x->user, sc->chunks[i], strlen(sc->chunks[i])) != 0)
            break;
    }
    x->upgrade_status = sc->upgrade_status;
    x->close_code = sc->close_code;
    x->quiet = sc->quiet;
    return sc->rc;
}

/* ---- ABI 1.6: WebSockets, played from the PTY script -------------------- */

struct rlmcp_ws {
    struct fh_pty_record *r;
    const struct fh_pty_script *sc;
    size_t next; /* the next chunk to hand out */
    bool ended;  /* the close was reported */
};

static bool ws_path_ok(const char *p)
{
    return p != NULL && p[0] == '/' && strcspn(p, " \t\r\n") == strlen(p);
}

static int svc_runloop_ws_open(rlmcp_call *call, const struct rlmcp_tunnel *t,
                               struct rlmcp_ws_open *o, rlmcp_ws **out)
{
    struct fh_pty_record *r;
    const struct fh_pty_script *sc;
    struct rlmcp_ws *ws;

    (void)call;
    if (out != NULL)
        *out = NULL;
    if (t == NULL || t->struct_size < sizeof(*t) || t->tunnel_key == NULL ||
        t->tunnel_key[0] == '\0' || t->port == 0 || o == NULL ||
        o->struct_size < sizeof(*o) || !ws_path_ok(o->path) || out == NULL ||
        fh.n_pty == FH_MAX || fh.n_ws_open == 16)
        return RLMCP_EINVAL;
    r = &fh.pty[fh.n_pty++];
    memset(r, 0, sizeof(*r));
    r->connect_url = xstrdup(o->path);
    r->input = xstrdup("");
    r->tunnel_key = xstrdup(t->tunnel_key);
    r->tunnel_token = xstrdup(t->auth_token);
    r->port = t->port;
    r->via_ws = true;
    r->max_message = o->max_message;
    o->upgrade_status = 0;
    if (fh.cancelled)
        return RLMCP_ECANCELLED;
    if (fh.n_pty_script == 0)
        return RLMCP_EHTTP;
    sc = &fh.pty_script[fh.pty_used < fh.n_pty_script ? fh.pty_used
                                                      : fh.n_pty_script - 1];
    fh.pty_used++;
    if (sc->rc != RLMCP_OK) {
        o->upgrade_status = sc->upgrade_status;
        return sc->rc;
    }
    ws = xmalloc(sizeof(*ws));
    memset(ws, 0, sizeof(*ws));
    ws->r = r;
    ws->sc = sc;
    fh.ws_open[fh.n_ws_open++] = ws;
    *out = ws;
    return RLMCP_OK;
}

static int svc_runloop_ws_send(rlmcp_ws *ws, const void *data, size_t len,
                               bool text)
{
    char *input;

    (void)text;
    if (ws == NULL || (data == NULL && len > 0))
        return RLMCP_EINVAL;
    if (ws->ended)
        return RLMCP_ESTATE;
    if (fh.cancelled)
        return RLMCP_ECANCELLED;
    input = xmalloc(ws->r->input_len + len + 1);
    memcpy(input, ws->r->input, ws->r->input_len);
    if (len > 0)
        memcpy(input + ws->r->input_len, data, len);
    input[ws->r->input_len + len] = '\0';
    free(ws->r->input);
    ws->r->input = input;
    ws->r->input_len += len;
    return RLMCP_OK;
}

/* The script's chunks as binary messages; then its close_code as the
 * server's close, or (none) timeouts, as quiet output gives. */
static int svc_runloop_ws_recv(rlmcp_ws *ws, uint32_t timeout_ms,
                               struct rlmcp_ws_message *m)
{
    (void)timeout_ms;
    if (ws == NULL || m == NULL || m->struct_size < sizeof(*m))
        return RLMCP_EINVAL;
    if (fh.cancelled)
        return RLMCP_ECANCELLED;
    m->close_code = 0;
    if (ws->next < ws->sc->n_chunks) {
        m->type = RLMCP_WS_BINARY;
        m->data = ws->sc->chunks[ws->next];
        m->len = strlen(ws->sc->chunks[ws->next]);
        ws->next++;
        return RLMCP_OK;
    }
    if (ws->sc->close_code == 0)
        return RLMCP_ETIMEDOUT;
    if (ws->ended)
        return RLMCP_ESTATE;
    ws->ended = true;
    m->type = RLMCP_WS_CLOSED;
    m->data = "";
    m->len = 0;
    m->close_code = ws->sc->close_code;
    return RLMCP_OK;
}

static int svc_runloop_ws_close(rlmcp_ws *ws, int code)
{
    size_t i;

    if (ws == NULL)
        return RLMCP_OK;
    ws->r->ws_close_code = code != 0 ? code : 1000;
    for (i = 0; i < fh.n_ws_open; i++) {
        if (fh.ws_open[i] == ws) {
            fh.ws_open[i] = fh.ws_open[--fh.n_ws_open];
            break;
        }
    }
    free(ws);
    return RLMCP_OK;
}

/* As the host does when a handler returns: close what it left open. */
static void ws_close_left(void)
{
    fh.ws_left = fh.n_ws_open;
    while (fh.n_ws_open > 0)
        svc_runloop_ws_close(fh.ws_open[0], 1001);
}

void fh_use_ws(bool on)
{
    fh.ws = on;
}

size_t fh_ws_left(void)
{
    return fh.ws_left;
}

void fh_pty_script_add(const struct fh_pty_script *sc)
{
    if (fh.n_pty_script == sizeof(fh.pty_script) / sizeof(fh.pty_script[0]))
        abort();
    fh.pty_script[fh.n_pty_script++] = *sc;
}

size_t fh_pty_count(void)
{
    return fh.n_pty;
}

const struct fh_pty_record *fh_pty_at(size_t i)
{
    return i < fh.n_pty ? &fh.pty[i] : NULL;
}

void fh_use_abi_1_0(bool on)
{
    fh.abi10 = on;
}

void fh_hide_tool(const char *tool)
{
    if (fh.n_hidden < sizeof(fh.hidden) / sizeof(fh.hidden[0]))
        fh.hidden[fh.n_hidden++] = xstrdup(tool);
}

/* Every tool is exposed under its own name unless fh_hide_tool hid it. */
static const char *svc_exposed_tool_name(rlmcp_call *call, const char *tool)
{
    size_t i;

    (void)call;
    for (i = 0; i < fh.n_hidden; i++) {
        if (strcmp(fh.hidden[i], tool) == 0)
            return NULL;
    }
    return tool;
}

static const char *svc_exposed_param_name(rlmcp_call *call, const char *tool,
                                          const char *param)
{
    return svc_exposed_tool_name(call, tool) != NULL ? param : NULL;
}

static void pty_reset(void)
{
    size_t i;

    for (i = 0; i < fh.n_pty; i++) {
        free(fh.pty[i].connect_url);
        free(fh.pty[i].input);
        free(fh.pty[i].tunnel_key);
        free(fh.pty[i].tunnel_token);
    }
    fh.n_pty = 0;
    fh.n_pty_script = 0;
    fh.pty_used = 0;
    fh.ws_left = 0;
}

static uint64_t g_deadline_ms;

void fh_set_deadline_ms(uint64_t ms)
{
    g_deadline_ms = ms;
}

static uint64_t svc_call_deadline_ms(rlmcp_call *call)
{
    (void)call;
    return g_deadline_ms;
}

static const char *svc_call_last_error(rlmcp_call *call)
{
    (void)call;
    return "";
}

static const struct rlmcp_host_api fh_table = {
    .size = sizeof(struct rlmcp_host_api),
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_ABI_MINOR,
    .host_version = "fake-host",
    .register_tool = svc_register_tool,
    .register_resource = svc_register_resource,
    .register_prompt = svc_register_prompt,
    .set_error = svc_set_error,
    .config_json = svc_config_json,
    .log = svc_log,
    .vlog = svc_vlog,
    .alloc = svc_alloc,
    .calloc = svc_calloc,
    .strdup = svc_strdup,
    .free = svc_free,
    .strerror = svc_strerror,
    .result_text = svc_result_text,
    .result_content = svc_result_content,
    .result_json = svc_result_json,
    .result_error = svc_result_error,
    .progress = svc_progress,
    .is_cancelled = svc_is_cancelled,
    .sleep_ms = svc_sleep_ms,
    .call_log = svc_call_log,
    .runloop_request = svc_runloop_request,
    .http_resp_free = svc_http_resp_free,
    .runloop_sse = svc_runloop_sse,
    .client_request = svc_client_request,
    .resource_contents = svc_resource_contents,
    .prompt_message = svc_prompt_message,
    .call_plugin = svc_call_plugin,
    .runloop_tunnel_request = svc_runloop_tunnel_request,
    .runloop_pty_exchange = svc_runloop_pty_exchange,
    .call_deadline_ms = svc_call_deadline_ms,
    .call_last_error = svc_call_last_error,
    .exposed_tool_name = svc_exposed_tool_name,
    .exposed_param_name = svc_exposed_param_name,
    .runloop_ws_open = svc_runloop_ws_open,
    .runloop_ws_send = svc_runloop_ws_send,
    .runloop_ws_recv = svc_runloop_ws_recv,
    .runloop_ws_close = svc_runloop_ws_close,
};

/* An ABI 1.0 host: the table ends before the 1.1 services. */
static struct rlmcp_host_api fh_table10;

/* This host without the 1.6 WebSocket services (fh_use_ws(false)). */
static struct rlmcp_host_api fh_table_nows;

static const struct rlmcp_host_api *current_table(void)
{
    if (!fh.abi10 && fh.ws)
        return &fh_table;
    if (!fh.abi10) {
        fh_table_nows = fh_table;
        fh_table_nows.runloop_ws_open = NULL;
        fh_table_nows.runloop_ws_send = NULL;
        fh_table_nows.runloop_ws_recv = NULL;
        fh_table_nows.runloop_ws_close = NULL;
        return &fh_table_nows;
    }
    fh_table10 = fh_table;
    fh_table10.size = offsetof(struct rlmcp_host_api, runloop_tunnel_request);
    fh_table10.abi_minor = 0;
    fh_table10.runloop_tunnel_request = NULL;
    fh_table10.runloop_pty_exchange = NULL;
    fh_table10.exposed_tool_name = NULL;
    fh_table10.exposed_param_name = NULL;
    return &fh_table10;
}

/* ---- test API ---------------------------------------------------------- */

const struct rlmcp_host_api *fh_api(void)
{
    return current_table();
}

rlmcp_call *fh_call_handle(void)
{
    return &fh_the_call;
}

/* As the host does before init (ABI 1.5): the config against the schema
 * the plugin declares; the message is the init error. */
static int check_config(const struct rlmcp_plugin_desc *desc)
{
    size_t end = offsetof(struct rlmcp_plugin_desc, config_schema) +
                 sizeof(desc->config_schema);
    cJSON *schema = NULL;
    cJSON *config = NULL;
    char err[1024] = "";
    int rc = RLMCP_OK;

    if (desc->struct_size < end || desc->config_schema == NULL)
        return RLMCP_OK;
    schema = cJSON_Parse(desc->config_schema);
    config = cJSON_Parse(fh.config);
    if (schema == NULL || schema_check(schema, err, sizeof(err)) != 0) {
        svc_set_error(&fh_self, "config schema invalid: %s", err);
        rc = RLMCP_EINVAL;
    } else if (config == NULL || schema_validate(schema, config, "config", err,
                                                 sizeof(err)) != 0) {
        svc_set_error(&fh_self, "%s", config == NULL ? "config not JSON" : err);
        rc = RLMCP_EINVAL;
    }
    cJSON_Delete(schema);
    cJSON_Delete(config);
    return rc;
}

int fh_load(const struct rlmcp_plugin_desc *desc, const char *config_json)
{
    int rc;

    fh.desc = desc;
    fh.config = xstrdup(config_json != NULL ? config_json : "{}");
    rc = check_config(desc);
    if (rc != RLMCP_OK) {
        fh.desc = NULL;
        return rc;
    }
    fh.in_init = true;
    rc = desc->init(&fh_self, current_table(), &fh.state);
    fh.in_init = false;
    if (rc != RLMCP_OK) {
        size_t i;
        /* Undo like the host does: drop the tools, free their data. */
        for (i = 0; i < fh.n_tools; i++) {
            if (fh.tools[i].user_data_free != NULL)
                fh.tools[i].user_data_free(fh.tools[i].user_data);
        }
        fh.desc = NULL;
    }
    return rc;
}

const char *fh_init_error(void)
{
    return fh.init_error;
}

char *fh_init_refusals(const struct rlmcp_plugin_desc *desc,
                       const struct fh_bad_config *bad, size_t n)
{
    char *why = NULL;
    size_t i;

    for (i = 0; i < n && why == NULL; i++) {
        if (fh_load(desc, bad[i].config) == RLMCP_OK)
            why = rlmcp_h_sprintf("config %s: accepted", bad[i].config);
        else if (fh.init_error == NULL)
            why = rlmcp_h_sprintf("config %s: refused without an init error",
                                  bad[i].config);
        else if (strstr(fh.init_error, bad[i].says) == NULL)
            why = rlmcp_h_sprintf("config %s: '%s' lacks '%s'", bad[i].config,
                                  fh.init_error, bad[i].says);
        fh_unload();
    }
    return why;
}

size_t fh_tool_count(void)
{
    return fh.n_tools;
}

size_t fh_resource_count(void)
{
    return fh.n_resources;
}

const struct rlmcp_tool_def *fh_tool_at(size_t i)
{
    return i < fh.n_tools ? &fh.tools[i] : NULL;
}

const struct rlmcp_tool_def *fh_tool(const char *name)
{
    size_t i;
    for (i = 0; i < fh.n_tools; i++) {
        if (strcmp(fh.tools[i].name, name) == 0)
            return &fh.tools[i];
    }
    return NULL;
}

void fh_reset(void)
{
    size_t i, j;

    g_deadline_ms = 0;
    fh.n_sleeps = 0;
    for (i = 0; i < fh.n_routes; i++) {
        free(fh.routes[i].method);
        free(fh.routes[i].path);
        free(fh.routes[i].body);
        for (j = 0; j < fh.routes[i].sse_n; j++)
            free(fh.routes[i].sse_data[j]);
        free(fh.routes[i].sse_data);
    }
    fh.n_routes = 0;
    for (i = 0; i < fh.n_reqs; i++) {
        struct fh_request *r = &fh.reqs[i];
        free(r->method);
        free(r->path);
        free(r->body);
        free(r->accept);
        free(r->part_path);
        free(r->part_file);
        free(r->tunnel_key);
        free(r->tunnel_token);
    }
    fh.n_reqs = 0;
    for (i = 0; i < fh.n_parsed; i++)
        cJSON_Delete(fh.parsed[i]);
    fh.n_parsed = 0;
    cJSON_Delete(fh.result);
    fh.result = NULL;
    free(fh.text);
    fh.text = NULL;
    for (i = 0; i < fh.n_contents; i++)
        cJSON_Delete(fh.contents[i]);
    fh.n_contents = 0;
    free(fh.err_code);
    free(fh.err_msg);
    free(fh.err_remedy);
    fh.err_code = fh.err_msg = fh.err_remedy = NULL;
    for (i = 0; i < fh.n_prog; i++)
        free(fh.prog_msg[i]);
    fh.n_prog = 0;
    fh.cancelled = false;
    fh.cancel_after = 0;
    pty_reset();
    for (i = 0; i < fh.n_hidden; i++)
        free(fh.hidden[i]);
    fh.n_hidden = 0;
}

void fh_unload(void)
{
    size_t i;

    fh_reset();
    if (fh.desc != NULL && fh.desc->shutdown != NULL)
        fh.desc->shutdown(&fh_self, fh.state);
    for (i = 0; i < fh.n_tools; i++) {
        struct rlmcp_tool_def *t = &fh.tools[i];
        if (fh.desc != NULL && t->user_data_free != NULL)
            t->user_data_free(t->user_data);
        free((char *)t->name);
        free((char *)t->title);
        free((char *)t->description);
        free((char *)t->input_schema_json);
        free((char *)t->output_schema_json);
        free((char *)t->annotations_json);
        cJSON_Delete(fh.in_schema[i]);
        cJSON_Delete(fh.out_schema[i]);
        fh.in_schema[i] = fh.out_schema[i] = NULL;
    }
    fh.n_tools = 0;
    schema_cleanup();
    fh.n_resources = 0;
    free(fh.config);
    fh.config = NULL;
    free(fh.init_error);
    fh.init_error = NULL;
    fh.desc = NULL;
    fh.state = NULL;
    fh.abi10 = false;
    fh.ws = false;
}

static struct fh_route_ent *new_route(const char *method, const char *path)
{
    struct fh_route_ent *r;

    if (fh.n_routes == FH_MAX)
        abort();
    r = &fh.routes[fh.n_routes++];
    memset(r, 0, sizeof(*r));
    r->method = xstrdup(method);
    r->path = xstrdup(path);
    return r;
}

void fh_route_n(const char *method, const char *path, long status,
                const char *body, int times)
{
    struct fh_route_ent *r = new_route(method, path);
    r->status = status;
    r->body = xstrdup(body != NULL ? body : "");
    r->body_len = strlen(r->body);
    r->times = times;
}

void fh_route(const char *method, const char *path, long status,
              const char *body)
{
    fh_route_n(method, path, status, body, 1);
}

void fh_route_rc(const char *method, const char *path, int rc, int times)
{
    struct fh_route_ent *r = new_route(method, path);
    r->rc = rc;
    r->times = times;
    r->body = xstrdup("");
}

void fh_route_bytes(const char *method, const char *path, long status,
                    const void *data, size_t len, int times)
{
    struct fh_route_ent *r = new_route(method, path);
    r->status = status;
    r->body = xmalloc(len + 1);
    memcpy(r->body, data, len);
    r->body_len = len;
    r->times = times;
}

void fh_route_sse(const char *path, const char *const *datas, size_t n,
                  long status, int rc)
{
    struct fh_route_ent *r = new_route("GET", path);
    size_t i;

    r->sse = true;
    r->status = status;
    r->rc = rc;
    r->times = 1;
    r->body = xstrdup("");
    r->sse_data = xmalloc(sizeof(char *) * (n ? n : 1));
    for (i = 0; i < n; i++)
        r->sse_data[i] = xstrdup(datas[i]);
    r->sse_n = n;
}

void fh_cancel_after(int n)
{
    fh.cancel_after = n;
    if (n == 0)
        fh.cancelled = true;
}

/* The tool's index, or -1 after saying so on stderr. */
static int tool_index(const char *tool)
{
    size_t i;

    for (i = 0; i < fh.n_tools; i++) {
        if (strcmp(fh.tools[i].name, tool) == 0)
            return (int)i;
    }
    fprintf(stderr, "fake host: no tool %s\n", tool);
    return -1;
}

/*
 * The arguments as the host hands them over (absent: {}), or NULL after
 * answering the call with the host's invalid_argument error (*rc
 * RLMCP_OK), or NULL with *rc RLMCP_EINVAL for text that is not JSON,
 * which a client cannot send.
 */
static char *host_arguments(size_t ti, const char *args_json, int *rc)
{
    cJSON *args = NULL;
    char err[512] = "";
    char *json = NULL;

    *rc = RLMCP_OK;
    args = cJSON_Parse(args_json != NULL ? args_json : "{}");
    if (args == NULL) {
        fprintf(stderr, "fake host: arguments are not JSON: %s\n", args_json);
        *rc = RLMCP_EINVAL;
        return NULL;
    }
    if (cJSON_IsNull(args)) {
        cJSON_Delete(args);
        args = cJSON_CreateObject();
    }
    if (!cJSON_IsObject(args)) {
        svc_result_error(&fh_the_call, "invalid_argument",
                         "send arguments as a JSON object matching the "
                         "tool's inputSchema (see tools/list)",
                         "arguments must be an object of named parameters");
        goto out;
    }
    if (schema_validate(fh.in_schema[ti], args, "arguments", err,
                        sizeof(err)) != 0) {
        svc_result_error(&fh_the_call, "invalid_argument",
                         "fix the arguments to match the tool's inputSchema "
                         "(see tools/list) and call again",
                         "%s", err);
        goto out;
    }
    json = cJSON_PrintUnformatted(args);
    if (json == NULL)
        abort();
out:
    cJSON_Delete(args);
    return json;
}

/* As the host: a result the tool declares must match its outputSchema. */
static void check_output(size_t ti)
{
    char err[512] = "";

    if (fh.out_schema[ti] == NULL || fh.err_code != NULL)
        return;
    if (fh.result == NULL)
        snprintf(err, sizeof(err), "no structured result");
    else if (schema_validate(fh.out_schema[ti], fh.result, "structuredContent",
                             err, sizeof(err)) == 0)
        return;
    fprintf(stderr,
            "fake host: tool %s: result does not match its "
            "outputSchema: %s\n",
            fh.tools[ti].name, err);
    svc_result_error(&fh_the_call, "internal",
                     "retry; if it fails again, report it to the operator",
                     "the tool failed unexpectedly (%s)", err);
}

int fh_call(const char *tool, const char *args_json)
{
    int ti = tool_index(tool);
    const struct rlmcp_tool_def *t = NULL;
    char *json = NULL;
    int rc;

    if (ti < 0)
        return RLMCP_ENOTFOUND;
    t = &fh.tools[ti];
    json = host_arguments((size_t)ti, args_json, &rc);
    if (json == NULL)
        return rc;
    rc = t->handler(&fh_the_call, json, strlen(json), t->user_data);
    ws_close_left();
    if (rc == RLMCP_OK)
        check_output((size_t)ti);
    free(json);
    return rc;
}

char *fh_call_refusals(const char *tool, const struct fh_bad_call *bad,
                       size_t n)
{
    char *why = NULL;
    size_t i;

    for (i = 0; i < n && why == NULL; i++) {
        fh_reset();
        fh_call(tool, bad[i].args);
        if (fh_error_code() == NULL)
            why = rlmcp_h_sprintf("%s: accepted", bad[i].args);
        else if (strcmp(fh_error_code(), RLMCP_ERR_INVALID_ARGUMENT) != 0)
            why =
                rlmcp_h_sprintf("%s: %s, not invalid_argument: %s", bad[i].args,
                                fh_error_code(), fh_error_message());
        else if (strstr(fh_error_message(), bad[i].says) == NULL)
            why = rlmcp_h_sprintf("%s: message '%s' lacks '%s'", bad[i].args,
                                  fh_error_message(), bad[i].says);
        else if (fh_request_count() != 0)
            why = rlmcp_h_sprintf("%s: refused, but %zu request(s) sent",
                                  bad[i].args, fh_request_count());
    }
    return why;
}

int fh_call_op(const char *tool, const char *op, const char *args_json)
{
    int ti = tool_index(tool);
    const struct rlmcp_task_def *td = NULL;
    rlmcp_tool_fn fn = NULL;
    int rc;

    if (ti < 0 || (td = fh.tools[ti].task) == NULL)
        return RLMCP_ENOTFOUND;
    if (strcmp(op, "start") == 0)
        fn = td->start;
    else if (strcmp(op, "get") == 0)
        fn = td->get;
    else if (strcmp(op, "wait") == 0)
        fn = td->wait;
    else if (strcmp(op, "cancel") == 0)
        fn = td->cancel;
    if (fn == NULL)
        return RLMCP_ENOTFOUND;
    rc = fn(&fh_the_call, args_json, strlen(args_json), fh.tools[ti].user_data);
    ws_close_left();
    return rc;
}

size_t fh_request_count(void)
{
    return fh.n_reqs;
}

const struct fh_request *fh_request_at(size_t i)
{
    return i < fh.n_reqs ? &fh.reqs[i] : NULL;
}

const struct fh_request *fh_find_request(const char *method,
                                         const char *path_prefix)
{
    size_t i;
    for (i = 0; i < fh.n_reqs; i++) {
        if (strcmp(fh.reqs[i].method, method) == 0 &&
            strncmp(fh.reqs[i].path, path_prefix, strlen(path_prefix)) == 0)
            return &fh.reqs[i];
    }
    return NULL;
}

const struct fh_request *fh_find_last_request(const char *method,
                                              const char *path_prefix)
{
    size_t i;
    for (i = fh.n_reqs; i > 0; i--) {
        if (strcmp(fh.reqs[i - 1].method, method) == 0 &&
            strncmp(fh.reqs[i - 1].path, path_prefix, strlen(path_prefix)) == 0)
            return &fh.reqs[i - 1];
    }
    return NULL;
}

size_t fh_sleep_count(void)
{
    return fh.n_sleeps;
}

uint32_t fh_sleep_at(size_t i)
{
    return i < fh.n_sleeps && i < sizeof(fh.sleeps) / sizeof(fh.sleeps[0])
               ? fh.sleeps[i]
               : 0;
}

size_t fh_count_requests(const char *method, const char *path_prefix)
{
    size_t i, n = 0;
    for (i = 0; i < fh.n_reqs; i++) {
        if (strcmp(fh.reqs[i].method, method) == 0 &&
            strncmp(fh.reqs[i].path, path_prefix, strlen(path_prefix)) == 0)
            n++;
    }
    return n;
}

cJSON *fh_request_json(const struct fh_request *r)
{
    cJSON *o;
    if (r == NULL || r->body == NULL)
        return NULL;
    o = cJSON_Parse(r->body);
    if (o != NULL && fh.n_parsed < FH_MAX)
        fh.parsed[fh.n_parsed++] = o;
    return o;
}

cJSON *fh_result(void)
{
    return fh.result;
}

size_t fh_content_count(void)
{
    return fh.n_contents;
}

const cJSON *fh_content_at(size_t i)
{
    return i < fh.n_contents ? fh.contents[i] : NULL;
}

const char *fh_result_text(void)
{
    return fh.text != NULL ? fh.text : "";
}

const char *fh_error_code(void)
{
    return fh.err_code;
}

const char *fh_error_message(void)
{
    return fh.err_msg;
}

const char *fh_error_remedy(void)
{
    return fh.err_remedy;
}

size_t fh_progress_count(void)
{
    return fh.n_prog;
}

const char *fh_progress_message(size_t i)
{
    return i < fh.n_prog ? fh.prog_msg[i] : NULL;
}

double fh_progress_value(size_t i)
{
    return i < fh.n_prog ? fh.prog_val[i] : -1;
}
