/*
 * test_http.c - the HTTP transport's checks (http_check.c) and its start-up
 * refusals, plus a served /health and pre-dispatch refusals over a real
 * socket (libcurl). The dispatcher is not needed for any of these.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "http.h"
#include "mcp.h"

static void test_parse_listen(void **state)
{
    char host[64];
    uint16_t port = 0;

    (void)state;
    assert_int_equal(
        http_parse_listen("127.0.0.1:8000", host, sizeof(host), &port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8000);
    assert_int_equal(http_parse_listen("[::1]:0", host, sizeof(host), &port),
                     0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 0);
    assert_int_equal(
        http_parse_listen("localhost:65535", host, sizeof(host), &port), 0);
    assert_int_equal(
        http_parse_listen("localhost:65536", host, sizeof(host), &port), -1);
    assert_int_equal(http_parse_listen("localhost", host, sizeof(host), &port),
                     -1);
    assert_int_equal(http_parse_listen(":80", host, sizeof(host), &port), -1);
    assert_int_equal(http_parse_listen("::1:80", host, sizeof(host), &port),
                     -1);
    assert_int_equal(http_parse_listen("[::1]80", host, sizeof(host), &port),
                     -1);
    assert_int_equal(http_parse_listen("a:8x", host, sizeof(host), &port), -1);
    assert_int_equal(http_parse_listen("a:-1", host, sizeof(host), &port), -1);
    assert_int_equal(http_parse_listen("", host, sizeof(host), &port), -1);
    assert_int_equal(http_parse_listen(NULL, host, sizeof(host), &port), -1);
}

static void test_loopback(void **state)
{
    (void)state;
    assert_true(http_host_is_loopback("127.0.0.1"));
    assert_true(http_host_is_loopback("127.1.2.3"));
    assert_true(http_host_is_loopback("::1"));
    assert_true(http_host_is_loopback("LOCALHOST"));
    assert_false(http_host_is_loopback("0.0.0.0"));
    assert_false(http_host_is_loopback("10.0.0.1"));
    assert_false(http_host_is_loopback("::"));
    assert_false(http_host_is_loopback("localhost.evil.com"));
    assert_false(http_host_is_loopback(NULL));
}

static void test_host_header(void **state)
{
    const char *const origins[] = {"https://mcp.example.com", NULL};

    (void)state;
    assert_true(http_host_header_ok("127.0.0.1:8000", 8000, NULL));
    assert_true(http_host_header_ok("localhost:8000", 8000, NULL));
    assert_true(http_host_header_ok("[::1]:8000", 8000, NULL));
    assert_true(http_host_header_ok("localhost", 8000, NULL));
    assert_false(http_host_header_ok("localhost:8001", 8000, NULL));
    assert_false(http_host_header_ok("evil.example.com", 8000, NULL));
    assert_false(http_host_header_ok("evil.example.com:8000", 8000, NULL));
    assert_false(http_host_header_ok("127.0.0.1.evil.com", 8000, NULL));
    assert_false(http_host_header_ok("[::1", 8000, NULL));
    assert_false(http_host_header_ok("localhost:80x", 8000, NULL));
    assert_false(http_host_header_ok("", 8000, NULL));
    assert_false(http_host_header_ok(NULL, 8000, NULL));
    assert_true(http_host_header_ok("mcp.example.com", 8000, origins));
    assert_false(http_host_header_ok("other.example.com", 8000, origins));
}

static void test_origin(void **state)
{
    const char *const origins[] = {"https://app.example.com", NULL};

    (void)state;
    assert_true(http_origin_ok(NULL, NULL, true));
    assert_true(http_origin_ok("http://localhost:3000", NULL, true));
    assert_true(http_origin_ok("http://127.0.0.1", NULL, true));
    assert_true(http_origin_ok("https://[::1]:9", NULL, true));
    assert_false(http_origin_ok("http://localhost:3000", NULL, false));
    assert_false(http_origin_ok("https://evil.example.com", NULL, true));
    assert_false(http_origin_ok("null", NULL, true));
    assert_false(http_origin_ok("file://localhost", NULL, true));
    assert_false(http_origin_ok("http://localhost/path", NULL, true));
    assert_true(http_origin_ok("https://app.example.com", origins, false));
    assert_false(
        http_origin_ok("https://app.example.com.evil", origins, false));
}

static void test_accept_and_ctype(void **state)
{
    (void)state;
    assert_true(
        http_accept_ok("application/json, text/event-stream", true, true));
    assert_true(
        http_accept_ok("text/event-stream;q=0.9,application/json", true, true));
    assert_true(http_accept_ok("*/*", true, true));
    assert_true(http_accept_ok("application/*, text/*", true, true));
    assert_false(http_accept_ok("application/json", true, true));
    assert_false(http_accept_ok("text/html", true, true));
    assert_false(
        http_accept_ok("application/jsonx, text/event-stream", true, true));
    assert_false(http_accept_ok(NULL, true, true));
    assert_true(http_accept_ok("text/event-stream", false, true));
    assert_true(http_content_type_json("application/json"));
    assert_true(http_content_type_json("Application/JSON; charset=utf-8"));
    assert_false(http_content_type_json("application/json-seq"));
    assert_false(http_content_type_json("text/plain"));
    assert_false(http_content_type_json(NULL));
}

static void test_versions_tokens(void **state)
{
    (void)state;
    assert_true(mcp_protocol_version_supported("2025-11-25"));
    assert_true(mcp_protocol_version_supported("2025-06-18"));
    assert_true(mcp_protocol_version_supported("2025-03-26"));
    assert_false(mcp_protocol_version_supported("2024-01-01"));
    assert_false(mcp_protocol_version_supported(""));
    assert_false(mcp_protocol_version_supported(NULL));
    assert_true(http_token_equal("abc", "abc"));
    assert_false(http_token_equal("abd", "abc"));
    assert_false(http_token_equal("ab", "abc"));
    assert_false(http_token_equal("abcd", "abc"));
    assert_false(http_token_equal(NULL, "abc"));
    assert_string_equal(http_bearer("Bearer xyz"), "xyz");
    assert_string_equal(http_bearer("bearer   xyz"), "xyz");
    assert_null(http_bearer("Basic xyz"));
    assert_null(http_bearer("Bearer"));
    assert_null(http_bearer("Bearerxyz"));
    assert_null(http_bearer(NULL));
}

static void test_redact_and_ids(void **state)
{
    char out[128];
    uint64_t s = 0;
    uint64_t e = 0;

    (void)state;
    http_redact_url("/mcp?api_key=sk_123&x=1", out, sizeof(out));
    assert_string_equal(out, "/mcp?api_key=[redacted]&x=1");
    http_redact_url("/mcp?a=1&token=t&key=k", out, sizeof(out));
    assert_string_equal(out, "/mcp?a=1&token=[redacted]&key=[redacted]");
    http_redact_url("/mcp", out, sizeof(out));
    assert_string_equal(out, "/mcp");
    http_redact_url("/mcp?api_key=secretsecretsecret", out, 12);
    assert_null(strstr(out, "secret"));
    assert_true(http_parse_event_id("3-0", &s, &e));
    assert_int_equal(s, 3);
    assert_int_equal(e, 0);
    assert_true(http_parse_event_id("12-345", &s, &e));
    assert_false(http_parse_event_id("12", &s, &e));
    assert_false(http_parse_event_id("a-1", &s, &e));
    assert_false(http_parse_event_id("1-", &s, &e));
    assert_false(http_parse_event_id("1-2x", &s, &e));
    assert_false(http_parse_event_id("-1-2", &s, &e));
    assert_false(http_parse_event_id(NULL, &s, &e));
}

static struct http_options base_opts(const char *listen)
{
    struct http_options o;

    memset(&o, 0, sizeof(o));
    o.listen = listen;
    o.max_body_bytes = 4096;
    o.max_sessions = 4;
    o.max_connections = 16;
    o.session_idle_seconds = 60;
    o.server_name = "unit";
    o.server_version = "1";
    return o;
}

static void test_start_refusals(void **state)
{
    char err[512];
    struct http_options o = base_opts("0.0.0.0:0");
    struct http_server *srv = NULL;

    (void)state;
    srv = http_server_start(NULL, &o, err, sizeof(err));
    assert_null(srv);
    assert_non_null(strstr(err, "auth_token"));
    o.auth_token = "short";
    srv = http_server_start(NULL, &o, err, sizeof(err));
    assert_null(srv);
    assert_non_null(strstr(err, "16 characters"));
    o = base_opts("nonsense");
    srv = http_server_start(NULL, &o, err, sizeof(err));
    assert_null(srv);
    assert_non_null(strstr(err, "HOST:PORT"));
    o = base_opts("127.0.0.1:0");
    o.max_body_bytes = 10;
    srv = http_server_start(NULL, &o, err, sizeof(err));
    assert_null(srv);
    assert_non_null(strstr(err, "max_body_bytes"));
}

/* The same refusals before anything starts, from the options alone. */
static void test_options_check(void **state)
{
    char err[512];
    struct http_options o = base_opts("0.0.0.0:8000");

    (void)state;
    err[0] = '\0';
    assert_int_equal(http_options_check(&o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "refusing to listen on 0.0.0.0:8000"));
    o.auth_token = ""; /* an unset ${VAR} is no token */
    assert_int_equal(http_options_check(&o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "without an access token"));
    o.auth_token = "short";
    assert_int_equal(http_options_check(&o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "16 characters"));
    o.auth_token = "0123456789abcdef";
    assert_int_equal(http_options_check(&o, err, sizeof(err)), 0);
    /* Loopback, by address or by name, needs no token. */
    o = base_opts("127.0.0.1:8000");
    assert_int_equal(http_options_check(&o, err, sizeof(err)), 0);
    o = base_opts("localhost:8000");
    assert_int_equal(http_options_check(&o, err, sizeof(err)), 0);
    o = base_opts("[::1]:0");
    assert_int_equal(http_options_check(&o, err, sizeof(err)), 0);
    o = base_opts("[::]:8000");
    assert_int_equal(http_options_check(&o, err, sizeof(err)), -1);
    o = base_opts("nonsense");
    assert_int_equal(http_options_check(&o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "HOST:PORT"));
    /* A typo in the host is reported as one, not as a missing token. */
    o = base_opts("locahost.invalid:8000");
    assert_int_equal(http_options_check(&o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "cannot resolve 'locahost.invalid'"));
    assert_null(strstr(err, "access token"));
    o = base_opts("127.0.0.1:0");
    o.max_sessions = 0;
    assert_int_equal(http_options_check(&o, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "max_sessions"));
}

struct buf {
    char data[4096];
    size_t len;
};

static size_t on_body(char *p, size_t size, size_t n, void *user)
{
    struct buf *b = user;
    size_t len = size * n;

    if (len > sizeof(b->data) - 1 - b->len)
        len = sizeof(b->data) - 1 - b->len;
    memcpy(b->data + b->len, p, len);
    b->len += len;
    b->data[b->len] = '\0';
    return size * n;
}

static long fetch(const char *url, const char *method,
                  const char *const *headers, const char *body, struct buf *out)
{
    CURL *c = curl_easy_init();
    struct curl_slist *hl = NULL;
    long status = 0;

    out->len = 0;
    out->data[0] = '\0';
    for (size_t i = 0; headers != NULL && headers[i] != NULL; i++)
        hl = curl_slist_append(hl, headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    if (body != NULL)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    return status;
}

static void test_served_checks(void **state)
{
    char err[512];
    char url[128];
    char base[96];
    char want[128];
    struct http_options o = base_opts("127.0.0.1:0");
    struct http_server *srv = NULL;
    struct buf b;
    const char *const bad_accept[] = {"Content-Type: application/json",
                                      "Accept: text/html", NULL};
    const char *const evil_host[] = {"Host: evil.example.com", NULL};
    const char *const no_session[] = {
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream", NULL};
    const char *const unknown_session[] = {
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        "Mcp-Session-Id: 0123456789abcdef0123456789abcdef", NULL};
    const char *const old_version_get[] = {
        "Accept: text/event-stream", "MCP-Protocol-Version: 1999-01-01",
        "Mcp-Session-Id: 0123456789abcdef0123456789abcdef", NULL};

    (void)state;
    srv = http_server_start(NULL, &o, err, sizeof(err));
    assert_non_null(srv);
    assert_true(http_server_port(srv) > 0);
    http_server_url(srv, url, sizeof(url));
    snprintf(base, sizeof(base), "http://127.0.0.1:%u",
             (unsigned)http_server_port(srv));
    snprintf(want, sizeof(want), "%s/mcp", base);
    assert_string_equal(url, want);

    snprintf(url, sizeof(url), "%s/health", base);
    assert_int_equal(fetch(url, "GET", NULL, NULL, &b), 200);
    assert_string_equal(b.data, "{\"status\":\"ok\"}");
    snprintf(url, sizeof(url), "%s/mcp", base);
    assert_int_equal(fetch(url, "POST", bad_accept, "{}", &b), 406);
    assert_non_null(strstr(b.data, "\"id\":null"));
    assert_int_equal(fetch(url, "POST", evil_host, "{}", &b), 403);
    assert_int_equal(fetch(url, "POST", no_session,
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
                           &b),
                     400);
    assert_non_null(strstr(b.data, "Mcp-Session-Id"));
    assert_non_null(strstr(b.data, "\"code\":-32000"));
    /* The protocol words each refusal (intake_refusal): its code. */
    assert_int_equal(fetch(url, "POST", no_session, "{nope", &b), 400);
    assert_non_null(strstr(b.data, "\"code\":-32700"));
    assert_int_equal(fetch(url, "POST", no_session, "[]", &b), 400);
    assert_non_null(strstr(b.data, "\"code\":-32600"));
    assert_non_null(strstr(b.data, "batches are not supported"));
    assert_int_equal(fetch(url, "POST", unknown_session,
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
                           &b),
                     404);
    assert_non_null(strstr(b.data, "\"code\":-32001"));
    /* A GET stream's MCP-Protocol-Version: the rule a POST has. */
    assert_int_equal(fetch(url, "GET", old_version_get, NULL, &b), 400);
    assert_non_null(strstr(b.data, "\"code\":-32000"));
    assert_non_null(strstr(b.data, "unsupported MCP-Protocol-Version "
                                   "'1999-01-01'; this server speaks "
                                   "2025-11-25, 2025-06-18 and 2025-03-26"));
    assert_int_equal(fetch(url, "PUT", NULL, NULL, &b), 405);
    snprintf(url, sizeof(url), "%s/other", base);
    assert_int_equal(fetch(url, "GET", NULL, NULL, &b), 404);
    http_server_stop(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_listen),
        cmocka_unit_test(test_loopback),
        cmocka_unit_test(test_host_header),
        cmocka_unit_test(test_origin),
        cmocka_unit_test(test_accept_and_ctype),
        cmocka_unit_test(test_versions_tokens),
        cmocka_unit_test(test_redact_and_ids),
        cmocka_unit_test(test_start_refusals),
        cmocka_unit_test(test_options_check),
        cmocka_unit_test(test_served_checks),
    };
    int rc = 0;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
