/*
 * test_host_tunnel.c - the host side of plugin ABI 1.1: tunnel origins for
 * each backend, tunnel requests (token not key, TCP not the unix socket,
 * retries on 502/503/504 only) against the fault server, the WebSocket
 * target parsing, and that tokens never reach an error text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rlclient.h"
#include "ws.h"

#define TOKEN "tok_SECRET_9a8b7c6d5e"
#define KEY "ak_SECRET_1234567890"

static pid_t g_fs_pid = -1;
static int g_port;
static char g_base[64];

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* ---- fault server ------------------------------------------------------ */

static int start_faultserver(void)
{
    const char *bin = RLMCP_BINARY_DIR "/bin/faultserver";
    char line[128] = "";
    size_t used = 0;
    double deadline = now_ms() + 15000;
    int fds[2];

    if (access(bin, X_OK) != 0 || pipe(fds) != 0) {
        fprintf(stderr, "faultserver not built at %s\n", bin);
        return -1;
    }
    g_fs_pid = fork();
    if (g_fs_pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(bin, "faultserver", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    while (strchr(line, '\n') == NULL && now_ms() < deadline) {
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        ssize_t n = 0;

        if (poll(&pfd, 1, 200) <= 0)
            continue;
        n = read(fds[0], line + used, sizeof(line) - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
        line[used] = '\0';
    }
    close(fds[0]);
    if (sscanf(line, "listening on 127.0.0.1:%d", &g_port) != 1) {
        fprintf(stderr, "faultserver did not start: '%s'\n", line);
        return -1;
    }
    snprintf(g_base, sizeof(g_base), "http://127.0.0.1:%d", g_port);
    return 0;
}

static int group_setup(void **state)
{
    rlclient_global_init();
    return start_faultserver();
}

static int group_teardown(void **state)
{
    if (g_fs_pid > 0) {
        kill(g_fs_pid, SIGTERM);
        waitpid(g_fs_pid, NULL, 0);
    }
    return 0;
}

struct membuf {
    char *p;
    size_t n;
};

static size_t mem_write(char *ptr, size_t size, size_t nmemb, void *user)
{
    struct membuf *m = user;
    size_t n = size * nmemb;
    char *np = realloc(m->p, m->n + n + 1);

    if (np == NULL)
        return 0;
    m->p = np;
    memcpy(m->p + m->n, ptr, n);
    m->n += n;
    m->p[m->n] = '\0';
    return n;
}

static char *control(const char *method, const char *path, const char *body)
{
    CURL *e = curl_easy_init();
    struct membuf m = {0};
    char url[256];

    snprintf(url, sizeof(url), "%s%s", g_base, path);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, mem_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &m);
    if (strcmp(method, "POST") == 0)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body ? body : "");
    assert_int_equal(curl_easy_perform(e), CURLE_OK);
    curl_easy_cleanup(e);
    return m.p;
}

static void script(const char *json)
{
    free(control("POST", "/__reset", NULL));
    if (json != NULL)
        free(control("POST", "/__script", json));
}

static cJSON *server_log(void)
{
    char *text = control("GET", "/__log", NULL);
    cJSON *log = cJSON_Parse(text);

    free(text);
    assert_non_null(log);
    return log;
}

/* ---- origins ------------------------------------------------------------ */

static void expect_origin(const char *base, const char *tmpl, const char *key,
                          unsigned port, const char *want)
{
    char out[1200];
    char err[256] = "";
    int rc = rlclient_tunnel_origin_build(base, tmpl, key, port, out,
                                          sizeof(out), err, sizeof(err));

    if (rc != 0)
        print_message("%s / %s: %s\n", base, tmpl ? tmpl : "-", err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, want);
}

static void expect_origin_fails(const char *base, const char *tmpl,
                                const char *key, unsigned port,
                                const char *needle)
{
    char out[1200];
    char err[256] = "";

    assert_int_equal(rlclient_tunnel_origin_build(base, tmpl, key, port, out,
                                                  sizeof(out), err,
                                                  sizeof(err)),
                     -1);
    if (strstr(err, needle) == NULL)
        print_message("err: %s\n", err);
    assert_non_null(strstr(err, needle));
}

static void t_origin_cloud(void **state)
{
    expect_origin("https://api.runloop.ai", NULL, "k3y", 13,
                  "https://13-k3y.tunnel.runloop.ai");
    expect_origin("https://API.example.com:8443/v1/", NULL, "a_b-C", 8080,
                  "https://8080-a_b-C.tunnel.example.com");
    expect_origin("http://user:pw@api.corp.test/x", NULL, "k", 1,
                  "http://1-k.tunnel.corp.test");
    expect_origin("http://localhost:4000", NULL, "k", 65535,
                  "http://65535-k.tunnel.localhost");
    /* "api." only as a leading label */
    expect_origin("https://myapi.example.com", NULL, "k", 13,
                  "https://13-k.tunnel.myapi.example.com");
}

static void t_origin_template(void **state)
{
    expect_origin("http://localhost",
                  "http://{port}-{tunnel_key}.localhost:41234", "k3y", 13,
                  "http://13-k3y.localhost:41234");
    /* a path in the template is cut: requests add their own */
    expect_origin(NULL, "https://{port}-{tunnel_key}.t.example/ignored", "k",
                  22, "https://22-k.t.example");
}

static void t_origin_bad_input(void **state)
{
    char big[600];

    expect_origin_fails("https://api.runloop.ai", NULL, "", 13, "tunnel_key");
    expect_origin_fails("https://api.runloop.ai", NULL, "a.b", 13,
                        "tunnel_key");
    expect_origin_fails("https://api.runloop.ai", NULL, "a/b", 13,
                        "tunnel_key");
    expect_origin_fails("https://api.runloop.ai", NULL, "a@evil", 13,
                        "tunnel_key");
    memset(big, 'k', 513);
    big[513] = '\0';
    expect_origin_fails("https://api.runloop.ai", NULL, big, 13, "tunnel_key");
    expect_origin_fails("https://api.runloop.ai", NULL, "k", 0, "port");
    expect_origin_fails("https://api.runloop.ai", NULL, "k", 65536, "port");
    expect_origin_fails("no-scheme", NULL, "k", 13, "base URL");
    expect_origin_fails(NULL, "{port}-{tunnel_key}.localhost", "k", 13,
                        "scheme");
}

/* The local engine: the template comes from devboxd.pid, re-read per call. */
static void t_origin_local_pidfile(void **state)
{
    char dir[] = "/tmp/rlmcp-tunnel-XXXXXX";
    char pidfile[128];
    struct rlclient_options o = {0};
    struct rlclient *c = NULL;
    char *origin = NULL;
    FILE *f = NULL;

    assert_non_null(mkdtemp(dir));
    snprintf(pidfile, sizeof(pidfile), "%s/devboxd.pid", dir);
    o.unix_socket = "/nonexistent/devboxd.sock";
    o.tunnel_info_file = pidfile;
    o.quiet = true;
    c = rlclient_create(&o);
    assert_non_null(c);

    /* no pid file: says so */
    assert_null(rlclient_tunnel_origin(c, "k", 13));
    assert_non_null(strstr(rlclient_last_error(), "devboxd"));

    f = fopen(pidfile, "w");
    fputs("pid 1\nport 0\n", f);
    fclose(f);
    assert_null(rlclient_tunnel_origin(c, "k", 13));
    assert_non_null(strstr(rlclient_last_error(), "tunnel_url_template"));

    f = fopen(pidfile, "w");
    fputs("pid 1\ntunnel_port 5555\ntunnel_url_template "
          "http://{port}-{tunnel_key}.localhost:5555\n",
          f);
    fclose(f);
    origin = rlclient_tunnel_origin(c, "abc", 13);
    assert_string_equal(origin, "http://13-abc.localhost:5555");
    free(origin);

    /* devboxd restarted on another port */
    f = fopen(pidfile, "w");
    fputs("pid 2\ntunnel_port 6666\ntunnel_url_template "
          "http://{port}-{tunnel_key}.localhost:6666\n",
          f);
    fclose(f);
    origin = rlclient_tunnel_origin(c, "abc", 13);
    assert_string_equal(origin, "http://13-abc.localhost:6666");
    free(origin);
    assert_null(rlclient_tunnel_origin(c, "bad key", 13));

    rlclient_destroy(c);
    unlink(pidfile);
    rmdir(dir);
}

/* ---- tunnel requests ---------------------------------------------------- */

static struct rlclient *unix_client(void)
{
    struct rlclient_options o = {0};

    /* A unix socket that does not exist: tunnel requests must not use it. */
    o.unix_socket = "/nonexistent/devboxd.sock";
    o.default_max_retries = -1;
    o.retry_base_ms = 40; /* tunnel steps 10, 20, 40, 80 ms */
    o.quiet = true;
    return rlclient_create(&o);
}

static const char *header_of(cJSON *log, int i, const char *name)
{
    cJSON *h = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(log, i), "headers"), name);

    return cJSON_IsString(h) ? h->valuestring : NULL;
}

static void t_request_token_and_retries(void **state)
{
    struct rlclient *c = unix_client();
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;
    cJSON *log = NULL;

    req.method = "GET";
    req.path = "/pty/s1?cols=80&rows=24";
    script("[{\"status\":502},{\"status\":503},{\"status\":200,"
           "\"body\":\"{\\\"created\\\":true}\"}]");
    assert_int_equal(
        rlclient_tunnel_request(c, g_base, TOKEN, &req, &resp, NULL, NULL),
        RLMCP_OK);
    assert_int_equal(resp->status, 200);
    assert_non_null(strstr(resp->body, "created"));
    rlclient_resp_free(resp);
    log = server_log();
    assert_int_equal(cJSON_GetArraySize(log), 3);
    assert_string_equal(header_of(log, 0, "authorization"), "Bearer " TOKEN);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(log, 2), "url")->valuestring,
        "/pty/s1?cols=80&rows=24");
    cJSON_Delete(log);

    /* the service's own errors are answers, not retried */
    script("[{\"status\":500},{\"status\":200}]");
    assert_int_equal(
        rlclient_tunnel_request(c, g_base, TOKEN, &req, &resp, NULL, NULL),
        RLMCP_OK);
    assert_int_equal(resp->status, 500);
    rlclient_resp_free(resp);
    script("[{\"status\":409},{\"status\":200}]");
    assert_int_equal(
        rlclient_tunnel_request(c, g_base, TOKEN, &req, &resp, NULL, NULL),
        RLMCP_OK);
    assert_int_equal(resp->status, 409);
    rlclient_resp_free(resp);
    log = server_log();
    assert_int_equal(cJSON_GetArraySize(log), 1);
    cJSON_Delete(log);

    /* bounded: 4 retries by default, then the status stands */
    script("[{\"status\":503},{\"status\":503},{\"status\":503},"
           "{\"status\":503},{\"status\":503},{\"status\":503},"
           "{\"status\":200}]");
    assert_int_equal(
        rlclient_tunnel_request(c, g_base, TOKEN, &req, &resp, NULL, NULL),
        RLMCP_OK);
    assert_int_equal(resp->status, 503);
    rlclient_resp_free(resp);
    log = server_log();
    assert_int_equal(cJSON_GetArraySize(log), 5);
    cJSON_Delete(log);

    /* no token: no Authorization at all */
    script(NULL);
    assert_int_equal(
        rlclient_tunnel_request(c, g_base, NULL, &req, &resp, NULL, NULL),
        RLMCP_OK);
    rlclient_resp_free(resp);
    log = server_log();
    assert_null(header_of(log, 0, "authorization"));
    cJSON_Delete(log);
    rlclient_destroy(c);
}

static void t_request_bad_input_and_redaction(void **state)
{
    struct rlclient *c = unix_client();
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;

    req.method = "GET";
    req.path = "/pty/s1";
    assert_int_equal(
        rlclient_tunnel_request(c, "ftp://x", TOKEN, &req, &resp, NULL, NULL),
        RLMCP_EINVAL);
    assert_int_equal(rlclient_tunnel_request(c, g_base, "two words", &req,
                                             &resp, NULL, NULL),
                     RLMCP_EINVAL);
    assert_null(strstr(rlclient_last_error(), "two words"));
    req.path = "pty/s1";
    assert_int_equal(
        rlclient_tunnel_request(c, g_base, TOKEN, &req, &resp, NULL, NULL),
        RLMCP_EINVAL);
    /* a closed port: the error names the URL, never the token */
    req.path = "/pty/s1";
    req.max_retries = 0;
    assert_int_equal(rlclient_tunnel_request(c, "http://127.0.0.1:1", TOKEN,
                                             &req, &resp, NULL, NULL),
                     RLMCP_EHTTP);
    assert_non_null(strstr(rlclient_last_error(), "127.0.0.1:1/pty/s1"));
    assert_null(strstr(rlclient_last_error(), "unix:"));
    assert_null(strstr(rlclient_last_error(), TOKEN));
    rlclient_destroy(c);
}

/* ---- WebSocket targets -------------------------------------------------- */

static void t_ws_target(void **state)
{
    struct ws_target t;
    char err[256];
    char shown[2400];

    assert_int_equal(ws_target_parse("http://13-k.localhost:5555",
                                     "/pty/s/attach", &t, err, sizeof(err)),
                     0);
    assert_false(t.tls);
    assert_string_equal(t.host, "13-k.localhost");
    assert_string_equal(t.address, "127.0.0.1");
    assert_int_equal(t.port, 5555);
    assert_string_equal(t.path, "/pty/s/attach");

    assert_int_equal(ws_target_parse("https://13-k.tunnel.runloop.ai",
                                     "/pty/s/attach?token=" TOKEN "&x=1", &t,
                                     err, sizeof(err)),
                     0);
    assert_true(t.tls);
    assert_int_equal(t.port, 443);
    assert_string_equal(t.address, "13-k.tunnel.runloop.ai");
    ws_shown_url(&t, shown, sizeof(shown));
    assert_string_equal(shown, "wss://13-k.tunnel.runloop.ai:443/pty/s/attach"
                               "?token=REDACTED&x=1");
    assert_null(strstr(shown, TOKEN));

    assert_int_equal(ws_target_parse("http://x:80", "/a?auth_token=" TOKEN, &t,
                                     err, sizeof(err)),
                     0);
    ws_shown_url(&t, shown, sizeof(shown));
    assert_null(strstr(shown, TOKEN));

    assert_int_equal(ws_target_parse("ftp://x", "/a", &t, err, sizeof(err)),
                     -1);
    assert_int_equal(ws_target_parse("http://x:0", "/a", &t, err, sizeof(err)),
                     -1);
    assert_int_equal(
        ws_target_parse("http://x:99999", "/a", &t, err, sizeof(err)), -1);
    assert_int_equal(ws_target_parse("http://", "/a", &t, err, sizeof(err)),
                     -1);
    assert_int_equal(ws_target_parse("http://x", "a", &t, err, sizeof(err)),
                     -1);
    assert_int_equal(ws_target_parse("http://x", "/a b", &t, err, sizeof(err)),
                     -1);
    assert_int_equal(
        ws_target_parse("http://x", "/a\r\nX: y", &t, err, sizeof(err)), -1);
}

/* ---- exchanges that fail ------------------------------------------------ */

static int no_output(void *user, const void *data, size_t n)
{
    return 0;
}

static atomic_bool g_cancel;

static bool cancel_probe(void *ctx)
{
    return atomic_load(&g_cancel);
}

static void *cancel_later(void *arg)
{
    struct timespec ts = {0, 200 * 1000000L};

    nanosleep(&ts, NULL);
    atomic_store(&g_cancel, true);
    return NULL;
}

static void t_ws_failures(void **state)
{
    struct rlmcp_pty_exchange x = RLMCP_PTY_EXCHANGE_INIT;
    char err[2600];
    pthread_t th;
    double t0 = 0;

    x.connect_url = "/pty/s/attach";
    x.on_output = no_output;
    x.input = "ls\n";
    x.input_len = 3;
    /* bad fields */
    x.on_output = NULL;
    assert_int_equal(
        ws_pty_exchange(g_base, TOKEN, &x, NULL, NULL, err, sizeof(err)),
        RLMCP_EINVAL);
    x.on_output = no_output;
    x.connect_url = "relative";
    assert_int_equal(
        ws_pty_exchange(g_base, TOKEN, &x, NULL, NULL, err, sizeof(err)),
        RLMCP_EINVAL);
    x.connect_url = "/pty/s/attach";

    /* nothing listens */
    assert_int_equal(ws_pty_exchange("http://127.0.0.1:1", TOKEN, &x, NULL,
                                     NULL, err, sizeof(err)),
                     RLMCP_EHTTP);
    assert_null(strstr(err, TOKEN));
    assert_non_null(strstr(err, "ws://127.0.0.1:1/pty/s/attach"));

    /* a plain HTTP server refuses the upgrade: its status is reported */
    script(
        "[{\"status\":400,\"body\":\"{\\\"message\\\":\\\"attached\\\"}\"}]");
    assert_int_equal(
        ws_pty_exchange(g_base, TOKEN, &x, NULL, NULL, err, sizeof(err)),
        RLMCP_EHTTP);
    assert_int_equal(x.upgrade_status, 400);
    assert_null(strstr(err, TOKEN));
    {
        cJSON *log = server_log();

        assert_string_equal(header_of(log, 0, "authorization"),
                            "Bearer " TOKEN);
        assert_non_null(header_of(log, 0, "sec-websocket-key"));
        cJSON_Delete(log);
    }

    /* a server that never answers: max_wait bounds the wait */
    script("[{\"delay_ms\":10000}]");
    x.max_wait_ms = 300;
    t0 = now_ms();
    assert_int_equal(
        ws_pty_exchange(g_base, TOKEN, &x, NULL, NULL, err, sizeof(err)),
        RLMCP_EHTTP);
    assert_true(now_ms() - t0 < 5000);
    assert_non_null(strstr(err, "max_wait"));

    /* ... and cancellation ends it early */
    script("[{\"delay_ms\":10000}]");
    x.max_wait_ms = 20000;
    atomic_store(&g_cancel, false);
    assert_int_equal(pthread_create(&th, NULL, cancel_later, NULL), 0);
    t0 = now_ms();
    assert_int_equal(ws_pty_exchange(g_base, TOKEN, &x, cancel_probe, NULL, err,
                                     sizeof(err)),
                     RLMCP_ECANCELLED);
    assert_true(now_ms() - t0 < 5000);
    pthread_join(th, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_origin_cloud),
        cmocka_unit_test(t_origin_template),
        cmocka_unit_test(t_origin_bad_input),
        cmocka_unit_test(t_origin_local_pidfile),
        cmocka_unit_test(t_request_token_and_retries),
        cmocka_unit_test(t_request_bad_input_and_redaction),
        cmocka_unit_test(t_ws_target),
        cmocka_unit_test(t_ws_failures),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
