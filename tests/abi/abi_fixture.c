/*
 * The ABI compatibility fixture: one source, built once per minor against
 * that minor's frozen header (tests/abi/include-1.N, 1.0 from
 * tests/fixtures/abi-1.0). FX_MINOR names the minor; the header must agree.
 *
 * Every sized struct the plugin hands to the host (the descriptor, the
 * definitions, requests, tunnels, exchanges, WebSocket structs) carries the
 * struct_size of its minor and ends exactly at a PROT_NONE page: a host
 * that reads one byte past what this minor's struct holds crashes, and
 * abi_compat.test.mjs fails. The probe tool uses every service its minor
 * offers that has a sized struct, through the real host and a fake backend
 * started by the test, and reports what it saw as structuredContent.
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define FX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FX_ASAN 1
#endif
#endif
#ifndef FX_ASAN
#define FX_ASAN 0
#endif
#if FX_ASAN
#include <sanitizer/asan_interface.h>
#endif

#include <rlmcp/plugin.h>

#ifndef FX_MINOR
#error "build with -DFX_MINOR=N"
#endif
#if RLMCP_ABI_MAJOR != 1 || RLMCP_ABI_MINOR != FX_MINOR
#error "the fixture must build against the frozen header of its minor"
#endif

#define FX_STR2(x) #x
#define FX_STR(x) FX_STR2(x)
#define FX_NAME "abi_v1" FX_STR(FX_MINOR)
#define FX_TOOL FX_NAME "_probe"

static const struct rlmcp_host_api *g_api;

/* ---- structs that end at an unreadable page ----------------------------- */

static size_t page_size(void)
{
    long n = sysconf(_SC_PAGESIZE);

    return n > 0 ? (size_t)n : 4096;
}

/* size bytes, zeroed, whose last byte is the last readable one. */
static void *guard_alloc(size_t size)
{
    size_t page = page_size();
    size_t span = (size + page - 1) / page * page;
    unsigned char *base = NULL;

    base = mmap(NULL, span + page, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    if (mprotect(base + span, page, PROT_NONE) != 0) {
        munmap(base, span + page);
        return NULL;
    }
    return base + span - size;
}

static void guard_free(void *p, size_t size)
{
    size_t page = page_size();
    size_t span = (size + page - 1) / page * page;

    if (p != NULL)
        munmap((unsigned char *)p + size - span, span + page);
}

/* A guarded copy of the struct at src (its _INIT value, filled in). */
static void *guard_dup(const void *src, size_t size)
{
    void *p = guard_alloc(size);

    if (p != NULL)
        memcpy(p, src, size);
    return p;
}

/* ---- the result ---------------------------------------------------------- */

struct out {
    char buf[8192];
    size_t len;
};

static void out_add(struct out *o, const char *fmt, ...) RLMCP_PRINTF(2, 3);

static void out_add(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n = 0;

    if (o->len >= sizeof(o->buf))
        return;
    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->len, sizeof(o->buf) - o->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

/* A JSON string of n bytes of s (ASCII expected; others as \u00XX). */
static void out_str(struct out *o, const char *s, size_t n)
{
    size_t i = 0;

    out_add(o, "\"");
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\')
            out_add(o, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            out_add(o, "\\u%04x", c);
        else
            out_add(o, "%c", c);
    }
    out_add(o, "\"");
}

/* A response body (JSON from the test's backend) or null. */
static void out_resp(struct out *o, const char *key, int rc,
                     const struct rlmcp_http_resp *r)
{
    out_add(o, ",\"%s\":", key);
    if (rc != RLMCP_OK || r == NULL) {
        out_add(o, "{\"rc\":%d}", rc);
        return;
    }
    out_add(
        o, "{\"rc\":0,\"status\":%ld,\"resp_size_ok\":%s,\"body\":", r->status,
        r->struct_size >= sizeof(struct rlmcp_http_resp) ? "true" : "false");
    if (r->body_len > 0 && r->body[0] == '{')
        out_add(o, "%s}", r->body);
    else {
        out_str(o, r->body != NULL ? r->body : "", r->body_len);
        out_add(o, "}");
    }
}

/* ---- 1.0: the Runloop API ------------------------------------------------ */

static void probe_http(rlmcp_call *call, struct out *o)
{
    struct rlmcp_http_req init = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_part part_init = {.struct_size =
                                            sizeof(struct rlmcp_http_part)};
    struct rlmcp_http_req *req = NULL;
    struct rlmcp_http_part *part = NULL;
    struct rlmcp_http_resp *resp = NULL;
    int rc = RLMCP_ENOMEM;

    init.method = "GET";
    init.path = "/v1/abi/ping?minor=" FX_STR(FX_MINOR);
    req = guard_dup(&init, sizeof(init));
    if (req != NULL)
        rc = g_api->runloop_request(call, req, &resp);
    out_resp(o, "http", rc, resp);
    g_api->http_resp_free(resp);
    resp = NULL;
    guard_free(req, sizeof(init));

    /* A multipart upload: the parts array ends at the page too. */
    part_init.name = "file";
    part_init.filename = "abi.txt";
    part_init.content_type = "text/plain";
    part_init.data = "minor " FX_STR(FX_MINOR);
    part_init.len = strlen(part_init.data);
    part = guard_dup(&part_init, sizeof(part_init));
    init.method = "POST";
    init.path = "/v1/abi/upload";
    init.parts = part;
    init.n_parts = 1;
    req = guard_dup(&init, sizeof(init));
    rc = RLMCP_ENOMEM;
    if (req != NULL && part != NULL)
        rc = g_api->runloop_request(call, req, &resp);
    out_resp(o, "upload", rc, resp);
    g_api->http_resp_free(resp);
    guard_free(req, sizeof(init));
    guard_free(part, sizeof(part_init));
}

#if RLMCP_ABI_MINOR >= 1
/* ---- 1.1: tunnels and the PTY exchange ------------------------------------
 */

static int on_output(void *user, const void *data, size_t n)
{
    struct out *o = user;

    if (o->len + n < sizeof(o->buf)) {
        memcpy(o->buf + o->len, data, n);
        o->len += n;
    }
    return 0;
}

static struct rlmcp_tunnel *new_tunnel(void)
{
    struct rlmcp_tunnel init = RLMCP_TUNNEL_INIT;

    init.tunnel_key = "abikey" FX_STR(FX_MINOR);
    init.auth_token = "abi-token-" FX_STR(FX_MINOR);
    init.port = 8000 + FX_MINOR;
    return guard_dup(&init, sizeof(init));
}

static void probe_tunnel(rlmcp_call *call, struct out *o)
{
    struct rlmcp_http_req init = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_pty_exchange xinit = RLMCP_PTY_EXCHANGE_INIT;
    struct rlmcp_tunnel *t = new_tunnel();
    struct rlmcp_http_req *req = NULL;
    struct rlmcp_pty_exchange *x = NULL;
    struct rlmcp_http_resp *resp = NULL;
    struct out pty = {.len = 0};
    int rc = RLMCP_ENOMEM;

    init.method = "GET";
    init.path = "/tunnel?minor=" FX_STR(FX_MINOR);
    req = guard_dup(&init, sizeof(init));
    if (req != NULL && t != NULL)
        rc = g_api->runloop_tunnel_request(call, t, req, &resp);
    out_resp(o, "tunnel", rc, resp);
    g_api->http_resp_free(resp);
    guard_free(req, sizeof(init));

    xinit.connect_url = "/pty/abi" FX_STR(FX_MINOR) "/connect";
    xinit.input = "typed " FX_STR(FX_MINOR);
    xinit.input_len = strlen(xinit.input);
    xinit.quiet_ms = 300;
    xinit.max_wait_ms = 20000;
    xinit.on_output = on_output;
    xinit.user = &pty;
    x = guard_dup(&xinit, sizeof(xinit));
    rc = RLMCP_ENOMEM;
    if (x != NULL && t != NULL)
        rc = g_api->runloop_pty_exchange(call, t, x);
    out_add(o, ",\"pty\":{\"rc\":%d", rc);
    if (x != NULL)
        out_add(o, ",\"upgrade_status\":%ld,\"close_code\":%d,\"quiet\":%s",
                x->upgrade_status, x->close_code, x->quiet ? "true" : "false");
    out_add(o, ",\"output\":");
    out_str(o, pty.buf, pty.len);
    out_add(o, "}");
    guard_free(x, sizeof(xinit));
    guard_free(t, sizeof(struct rlmcp_tunnel));
}
#endif

#if RLMCP_ABI_MINOR >= 6
/* ---- 1.6: WebSockets ------------------------------------------------------
 */

static void probe_ws(rlmcp_call *call, struct out *o)
{
    struct rlmcp_ws_open oinit = RLMCP_WS_OPEN_INIT;
    struct rlmcp_ws_message minit = RLMCP_WS_MESSAGE_INIT;
    struct rlmcp_tunnel *t = new_tunnel();
    struct rlmcp_ws_open *op = NULL;
    struct rlmcp_ws_message *m = NULL;
    rlmcp_ws *ws = NULL;
    int rc = RLMCP_ENOMEM;

    oinit.path = "/echo?minor=" FX_STR(FX_MINOR);
    oinit.connect_timeout_ms = 20000;
    op = guard_dup(&oinit, sizeof(oinit));
    m = guard_dup(&minit, sizeof(minit));
    if (t != NULL && op != NULL && m != NULL)
        rc = g_api->runloop_ws_open(call, t, op, &ws);
    if (rc == RLMCP_OK)
        rc = g_api->runloop_ws_send(ws, "ws hello", 8, true);
    if (rc == RLMCP_OK)
        rc = g_api->runloop_ws_recv(ws, 20000, m);
    out_add(o, ",\"ws\":{\"rc\":%d", rc);
    if (op != NULL)
        out_add(o, ",\"upgrade_status\":%ld", op->upgrade_status);
    if (rc == RLMCP_OK) {
        out_add(o, ",\"type\":%d,\"data\":", m->type);
        out_str(o, m->data, m->len);
    }
    if (ws != NULL)
        out_add(o, ",\"close_rc\":%d", g_api->runloop_ws_close(ws, 1000));
    out_add(o, "}");
    guard_free(m, sizeof(minit));
    guard_free(op, sizeof(oinit));
    guard_free(t, sizeof(struct rlmcp_tunnel));
}
#endif

/* ---- the tool ------------------------------------------------------------ */

static int probe(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    struct out o = {.len = 0};
    size_t cfg_len = 0;
    const char *cfg = g_api->config_json(g_api->call_plugin(call), &cfg_len);

    (void)args;
    (void)len;
    (void)ud;
    out_add(
        &o, "{\"minor\":%d,\"host_minor\":%u,\"api_size_ok\":%s,\"config\":%s",
        FX_MINOR, g_api->abi_minor,
        g_api->size >= sizeof(struct rlmcp_host_api) ? "true" : "false", cfg);
    probe_http(call, &o);
#if RLMCP_ABI_MINOR >= 1
    probe_tunnel(call, &o);
#endif
#if RLMCP_ABI_MINOR >= 2
    out_add(&o, ",\"deadline_set\":%s,\"last_error\":",
            g_api->call_deadline_ms(call) > 0 ? "true" : "false");
    out_str(&o, g_api->call_last_error(call),
            strlen(g_api->call_last_error(call)));
#endif
#if RLMCP_ABI_MINOR >= 3
    {
        const char *exposed = g_api->exposed_tool_name(call, FX_TOOL);

        out_add(&o, ",\"exposed\":");
        out_str(&o, exposed != NULL ? exposed : "",
                exposed ? strlen(exposed) : 0);
    }
#endif
#if RLMCP_ABI_MINOR >= 6
    probe_ws(call, &o);
#endif
    out_add(&o, "}");
    if (o.len >= sizeof(o.buf))
        return g_api->result_error(call, "internal", NULL,
                                   "the probe's result did not fit");
    return g_api->result_json(call, o.buf, o.len);
}

#if RLMCP_ABI_MINOR >= 4
/* Task ops: registered so the host reads the task def at this minor's
 * size; tools/list then shows the tool with taskSupport. */
static int task_op(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    (void)args;
    (void)len;
    (void)ud;
    return g_api->result_error(call, "unavailable", NULL,
                               "the ABI fixture runs no tasks");
}
#endif

static int read_info(rlmcp_call *call, const char *uri, void *ud)
{
    static const char text[] = "resource of " FX_NAME;

    (void)ud;
    return g_api->resource_contents(call, uri, "text/plain", text,
                                    sizeof(text) - 1, false);
}

static int get_prompt(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    (void)args;
    (void)len;
    (void)ud;
    return g_api->prompt_message(
        call, "user", "{\"type\":\"text\",\"text\":\"prompt of " FX_NAME "\"}");
}

static int register_all(rlmcp_plugin *self)
{
    struct rlmcp_tool_def tinit = RLMCP_TOOL_DEF_INIT;
    struct rlmcp_resource_def rinit = RLMCP_RESOURCE_DEF_INIT;
    struct rlmcp_prompt_def pinit = RLMCP_PROMPT_DEF_INIT;
    struct rlmcp_tool_def *tool = NULL;
    struct rlmcp_resource_def *res = NULL;
    struct rlmcp_prompt_def *prompt = NULL;
#if RLMCP_ABI_MINOR >= 4
    struct rlmcp_task_def kinit = RLMCP_TASK_DEF_INIT;
    struct rlmcp_task_def *task = NULL;
#endif
    int rc = RLMCP_ENOMEM;

    tinit.name = FX_TOOL;
    tinit.description = "Uses every sized struct of ABI 1." FX_STR(
        FX_MINOR) " through the host and reports what it saw.";
    tinit.input_schema_json = "{\"type\":\"object\"}";
    tinit.annotations_json = "{\"readOnlyHint\":true}";
    tinit.handler = probe;
#if RLMCP_ABI_MINOR >= 4
    kinit.start = task_op;
    kinit.get = task_op;
    kinit.wait = task_op;
    kinit.cancel = task_op;
    task = guard_dup(&kinit, sizeof(kinit));
    if (task == NULL)
        goto out;
    tinit.task = task;
#endif
    tool = guard_dup(&tinit, sizeof(tinit));
    if (tool == NULL)
        goto out;
    rc = g_api->register_tool(self, tool);
    if (rc != RLMCP_OK)
        goto out;

    rinit.uri = "abi://" FX_NAME "/info";
    rinit.name = FX_NAME "_info";
    rinit.mime_type = "text/plain";
    rinit.read = read_info;
    rc = RLMCP_ENOMEM;
    res = guard_dup(&rinit, sizeof(rinit));
    if (res == NULL)
        goto out;
    rc = g_api->register_resource(self, res);
    if (rc != RLMCP_OK)
        goto out;

    pinit.name = FX_NAME "_prompt";
    pinit.description = "A prompt registered at ABI 1." FX_STR(FX_MINOR);
    pinit.get = get_prompt;
    rc = RLMCP_ENOMEM;
    prompt = guard_dup(&pinit, sizeof(pinit));
    if (prompt == NULL)
        goto out;
    rc = g_api->register_prompt(self, prompt);
out:
    guard_free(prompt, sizeof(pinit));
    guard_free(res, sizeof(rinit));
    guard_free(tool, sizeof(tinit));
#if RLMCP_ABI_MINOR >= 4
    guard_free(task, sizeof(kinit));
#endif
    return rc;
}

#if RLMCP_ABI_MINOR >= 6
/* ---- 1.6: the least sizes the host takes, and one byte less --------------
 * Every struct here says in struct_size the least the host documents
 * (sdk/ABI.md, "today's host"), or one byte less, and holds only that
 * many bytes: it starts aligned and ends within 7 bytes of the unreadable
 * page (at it when the size is a multiple of 8); least_dup fills and, with
 * AddressSanitizer, poisons the bytes in between.
 */

#define FX_ALIGN8(n) (((n) + 7) / 8 * 8)
#define FX_HTTP_REQ_LEAST                                                      \
    (offsetof(struct rlmcp_http_req, max_body) + sizeof(size_t))
#define FX_TOOL_DEF_LEAST                                                      \
    (offsetof(struct rlmcp_tool_def, user_data_free) + sizeof(void *))

/*
 * The bytes between the least size and the page are not the struct's: they
 * hold FX_PAD_POISON (a host that copies them would see it) and, in an
 * AddressSanitizer build, are poisoned, so that a read of them fails there
 * as a read of the page does.
 */
#define FX_PAD_POISON 0xA5
static void *least_dup(const void *src, size_t size)
{
    unsigned char *p = guard_alloc(FX_ALIGN8(size));

    if (p == NULL)
        return NULL;
    memcpy(p, src, size);
    memcpy(p, &size, sizeof(size)); /* struct_size */
    memset(p + size, FX_PAD_POISON, FX_ALIGN8(size) - size);
#if FX_ASAN
    ASAN_POISON_MEMORY_REGION(p + size, FX_ALIGN8(size) - size);
#endif
    return p;
}

static void least_free(void *p, size_t size)
{
#if FX_ASAN
    /* The shadow outlives munmap: a later mapping here must not inherit it. */
    if (p != NULL)
        ASAN_UNPOISON_MEMORY_REGION((unsigned char *)p + size,
                                    FX_ALIGN8(size) - size);
#endif
    guard_free(p, FX_ALIGN8(size));
}

/* register_tool's answers at init to a def one byte short. */
static int g_tool_below = 1;
static int g_task_below = 1;

static int edge_http(rlmcp_call *call, size_t size)
{
    struct rlmcp_http_req init = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_req *req = NULL;
    struct rlmcp_http_resp *resp = NULL;
    int rc = RLMCP_ENOMEM;

    init.method = "GET";
    init.path = "/v1/abi/least";
    req = least_dup(&init, size);
    if (req != NULL)
        rc = g_api->runloop_request(call, req, &resp);
    if (rc == RLMCP_OK && resp->status != 200)
        rc = (int)resp->status;
    g_api->http_resp_free(resp);
    least_free(req, size);
    return rc;
}

static int edge_tunnel(rlmcp_call *call, size_t size)
{
    struct rlmcp_http_req init = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_tunnel tinit = RLMCP_TUNNEL_INIT;
    struct rlmcp_tunnel *t = NULL;
    struct rlmcp_http_resp *resp = NULL;
    int rc = RLMCP_ENOMEM;

    init.method = "GET";
    init.path = "/tunnel/least";
    tinit.tunnel_key = "abikeyleast";
    tinit.auth_token = "abi-token-least";
    tinit.port = 8100;
    t = least_dup(&tinit, size);
    if (t != NULL)
        rc = g_api->runloop_tunnel_request(call, t, &init, &resp);
    if (rc == RLMCP_OK && resp->status != 200)
        rc = (int)resp->status;
    g_api->http_resp_free(resp);
    least_free(t, size);
    return rc;
}

static int edge_pty(rlmcp_call *call, size_t size)
{
    struct rlmcp_pty_exchange init = RLMCP_PTY_EXCHANGE_INIT;
    struct rlmcp_pty_exchange *x = NULL;
    struct rlmcp_tunnel *t = new_tunnel();
    struct out sink = {.len = 0};
    int rc = RLMCP_ENOMEM;

    init.connect_url = "/pty/least/connect";
    init.quiet_ms = 300;
    init.max_wait_ms = 20000;
    init.on_output = on_output;
    init.user = &sink;
    x = least_dup(&init, size);
    if (x != NULL && t != NULL)
        rc = g_api->runloop_pty_exchange(call, t, x);
    if (rc == RLMCP_OK && sink.len == 0)
        rc = RLMCP_ENOTFOUND; /* no output: the exchange did not happen */
    least_free(x, size);
    guard_free(t, sizeof(struct rlmcp_tunnel));
    return rc;
}

/* Open with ws_open of open_size; then, when open, send and receive one
 * message into a ws_message of msg_size. */
static int edge_ws(rlmcp_call *call, size_t open_size, size_t msg_size)
{
    struct rlmcp_ws_open oinit = RLMCP_WS_OPEN_INIT;
    struct rlmcp_ws_message minit = RLMCP_WS_MESSAGE_INIT;
    struct rlmcp_tunnel *t = new_tunnel();
    struct rlmcp_ws_open *op = NULL;
    struct rlmcp_ws_message *m = NULL;
    rlmcp_ws *ws = NULL;
    int rc = RLMCP_ENOMEM;

    oinit.path = "/echo?least";
    oinit.connect_timeout_ms = 20000;
    op = least_dup(&oinit, open_size);
    m = least_dup(&minit, msg_size);
    if (t != NULL && op != NULL && m != NULL)
        rc = g_api->runloop_ws_open(call, t, op, &ws);
    if (rc == RLMCP_OK)
        rc = g_api->runloop_ws_send(ws, "least", 5, true);
    if (rc == RLMCP_OK)
        rc = g_api->runloop_ws_recv(ws, 20000, m);
    if (rc == RLMCP_OK && (m->type != RLMCP_WS_TEXT || m->len != 5))
        rc = RLMCP_EINTERNAL;
    if (ws != NULL)
        g_api->runloop_ws_close(ws, 1000);
    least_free(m, msg_size);
    least_free(op, open_size);
    guard_free(t, sizeof(struct rlmcp_tunnel));
    return rc;
}

static int least(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    struct out o = {.len = 0};
    size_t http = FX_HTTP_REQ_LEAST;
    size_t tun = RLMCP_TUNNEL_SIZE_1_1;
    size_t pty = RLMCP_PTY_EXCHANGE_SIZE_1_1;
    size_t wso = RLMCP_WS_OPEN_SIZE_1_6;
    size_t wsm = RLMCP_WS_MESSAGE_SIZE_1_6;

    (void)args;
    (void)len;
    (void)ud;
    out_add(&o, "{\"tool_def_below\":%d,\"task_def_below\":%d", g_tool_below,
            g_task_below);
    out_add(&o, ",\"http_req\":[%zu,%d,%d]", http, edge_http(call, http),
            edge_http(call, http - 1));
    out_add(&o, ",\"tunnel\":[%zu,%d,%d]", tun, edge_tunnel(call, tun),
            edge_tunnel(call, tun - 1));
    out_add(&o, ",\"pty_exchange\":[%zu,%d,%d]", pty, edge_pty(call, pty),
            edge_pty(call, pty - 1));
    out_add(&o, ",\"ws_open\":[%zu,%d,%d]", wso, edge_ws(call, wso, wsm),
            edge_ws(call, wso - 1, wsm));
    out_add(&o, ",\"ws_message\":[%zu,%d,%d]}", wsm, edge_ws(call, wso, wsm),
            edge_ws(call, wso, wsm - 1));
    return g_api->result_json(call, o.buf, o.len);
}

/* Tools whose definitions have the least sizes, and ones a byte short. */
static int register_least(rlmcp_plugin *self)
{
    struct rlmcp_tool_def tinit = RLMCP_TOOL_DEF_INIT;
    struct rlmcp_task_def kinit = RLMCP_TASK_DEF_INIT;
    size_t tool_least = FX_TOOL_DEF_LEAST;
    size_t tool_task = offsetof(struct rlmcp_tool_def, task) + sizeof(void *);
    size_t task_least = RLMCP_TASK_DEF_SIZE_1_4;
    struct rlmcp_tool_def *tool = NULL;
    struct rlmcp_task_def *task = NULL;
    size_t task_size = 0;
    int rc = RLMCP_ENOMEM;

    tinit.name = FX_NAME "_least";
    tinit.description = "Passes the least struct sizes the host takes, and "
                        "one byte less.";
    tinit.input_schema_json = "{\"type\":\"object\"}";
    tinit.handler = least;
    tool = least_dup(&tinit, tool_least);
    if (tool == NULL)
        goto out;
    rc = g_api->register_tool(self, tool);
    least_free(tool, tool_least);
    tool = NULL;
    if (rc != RLMCP_OK)
        goto out;
    tinit.name = FX_NAME "_below";
    rc = RLMCP_ENOMEM;
    tool = least_dup(&tinit, tool_least - 1);
    if (tool == NULL)
        goto out;
    g_tool_below = g_api->register_tool(self, tool);
    least_free(tool, tool_least - 1);
    tool = NULL;

    /* The task def at its 1.4 size, in a def of 1.4's size. */
    kinit.start = task_op;
    kinit.get = task_op;
    kinit.wait = task_op;
    kinit.cancel = task_op;
    task_size = task_least;
    task = least_dup(&kinit, task_size);
    if (task == NULL)
        goto out;
    tinit.name = FX_NAME "_task_least";
    tinit.task = task;
    tool = least_dup(&tinit, tool_task);
    if (tool == NULL)
        goto out;
    rc = g_api->register_tool(self, tool);
    least_free(tool, tool_task);
    tool = NULL;
    least_free(task, task_size);
    task = NULL;
    if (rc != RLMCP_OK)
        goto out;
    rc = RLMCP_ENOMEM;
    task_size = task_least - 1;
    task = least_dup(&kinit, task_size);
    if (task == NULL)
        goto out;
    tinit.name = FX_NAME "_task_below";
    tinit.task = task;
    tool = least_dup(&tinit, tool_task);
    if (tool == NULL)
        goto out;
    g_task_below = g_api->register_tool(self, tool);
    rc = RLMCP_OK;
out:
    least_free(tool, tool_task);
    least_free(task, task_size);
    return rc;
}
#endif

static int fx_init(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                   void **state_out)
{
    int rc = RLMCP_OK;
    unsigned minor = FX_MINOR;

    g_api = api;
    *state_out = NULL;
    if (api->abi_major != 1 || api->abi_minor < minor ||
        api->size < sizeof(struct rlmcp_host_api)) {
        api->set_error(self,
                       "host ABI %u.%u with a %zu-byte table is older than "
                       "this fixture's 1.%d (%zu bytes)",
                       api->abi_major, api->abi_minor, api->size, FX_MINOR,
                       sizeof(struct rlmcp_host_api));
        return RLMCP_EVERSION;
    }
    rc = register_all(self);
#if RLMCP_ABI_MINOR >= 6
    if (rc == RLMCP_OK)
        rc = register_least(self);
#endif
    if (rc != RLMCP_OK)
        api->set_error(self, "registering at ABI 1.%d failed: %s", FX_MINOR,
                       api->strerror(rc));
    return rc;
}

/* ---- the descriptor, also ending at the page ------------------------------
 */

static struct rlmcp_plugin_desc *g_desc;

__attribute__((constructor)) static void fx_load(void)
{
    struct rlmcp_plugin_desc d = {
        .abi_major = RLMCP_ABI_MAJOR,
        .abi_minor = RLMCP_ABI_MINOR,
        .struct_size = sizeof(struct rlmcp_plugin_desc),
        .name = FX_NAME,
        .version = "1." FX_STR(FX_MINOR),
        .description = "ABI 1." FX_STR(FX_MINOR) " compatibility fixture",
        .init = fx_init,
#if RLMCP_ABI_MINOR >= 5
        /* The deployment's config must carry this minor as "minor". */
        .config_schema =
            "{\"type\":\"object\",\"required\":[\"minor\"],"
            "\"properties\":{\"minor\":{\"const\":" FX_STR(FX_MINOR) "}}}",
#endif
    };

    g_desc = guard_dup(&d, sizeof(d));
}

__attribute__((destructor)) static void fx_unload(void)
{
    guard_free(g_desc, sizeof(struct rlmcp_plugin_desc));
    g_desc = NULL;
}

RLMCP_EXPORT const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(void);
const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(void)
{
    return g_desc;
}
