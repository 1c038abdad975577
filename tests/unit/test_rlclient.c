/*
 * test_rlclient.c - the Runloop HTTP client against the fault server
 * (tests/fixtures/faultserver): retries and their delays, idempotency
 * header, timeouts, cancellation, multipart, binary bodies, SSE, bad input
 * and that the key never reaches a log line or an error text.
 *
 * Delays are checked as lower bounds on the gaps between request arrivals
 * the server recorded; upper bounds only where the point is speed
 * (cancellation), and generously. The clients run on a simulated clock: a
 * backoff or Retry-After wait passes at once, and the arrivals are placed
 * on that clock (their real time plus the waits skipped before them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rlclient.h"

#define KEY "ak_test_SECRET_4f9c2e7d1b"

static pid_t g_fs_pid = -1;
static int g_port;
static char g_base[64];

/* ---------------------------------------------------------------------- */
/* Helpers                                                                */
/* ---------------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* ---- the simulated clock: CLOCK_MONOTONIC plus the naps skipped ------- */

#define SIM_MARKS 8192

/* After real time at_ms, the simulated clock is ahead by ahead_ms. */
static struct {
    double at_ms;
    double ahead_ms;
} g_marks[SIM_MARKS];
static size_t g_n_marks;
static uint64_t g_ahead_ns;

static uint64_t sim_now_ns(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
           g_ahead_ns;
}

static void sim_nap_ns(void *ctx, uint64_t ns)
{
    (void)ctx;
    g_ahead_ns += ns;
    assert_true(g_n_marks < SIM_MARKS); /* a test naps far fewer times */
    g_marks[g_n_marks].at_ms = now_ms();
    g_marks[g_n_marks].ahead_ms = (double)g_ahead_ns / 1e6;
    g_n_marks++;
}

static const struct rlclient_clock g_sim = {sim_now_ns, sim_nap_ns, NULL};

static double sim_ms(void)
{
    return (double)sim_now_ns(NULL) / 1e6;
}

/* Where real time t (CLOCK_MONOTONIC ms, as the server stamps arrivals)
 * lies on the simulated clock. */
static double sim_at(double t)
{
    double ahead = 0;
    size_t i;

    for (i = 0; i < g_n_marks && g_marks[i].at_ms <= t; i++)
        ahead = g_marks[i].ahead_ms;
    return t + ahead;
}

/* Forget the marks, keeping how far ahead the clock is. */
static void sim_restart(void)
{
    g_marks[0].at_ms = now_ms();
    g_marks[0].ahead_ms = (double)g_ahead_ns / 1e6;
    g_n_marks = 1;
}

/* Start faultserver with extra args; returns its pid, fills line. */
static pid_t spawn_faultserver(const char *arg1, const char *arg2, char *line,
                               size_t linesz)
{
    const char *bin = RLMCP_BINARY_DIR "/bin/faultserver";
    int fds[2];
    size_t used = 0;
    double deadline = now_ms() + 15000;
    pid_t pid = -1;

    line[0] = '\0';
    if (access(bin, X_OK) != 0) {
        fprintf(stderr, "faultserver not built at %s\n", bin);
        return -1;
    }
    if (pipe(fds) != 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(bin, "faultserver", arg1, arg2, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    while (strchr(line, '\n') == NULL && now_ms() < deadline) {
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        ssize_t n = 0;

        if (poll(&pfd, 1, 200) <= 0)
            continue;
        n = read(fds[0], line + used, linesz - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
        line[used] = '\0';
    }
    close(fds[0]);
    return pid;
}

static void stop_pid(pid_t pid)
{
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
}

static int start_faultserver(void)
{
    char line[128];

    g_fs_pid = spawn_faultserver(NULL, NULL, line, sizeof(line));
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
    stop_pid(g_fs_pid);
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

/* Talk to the control endpoints with plain libcurl, not the client. */
static char *control(const char *method, const char *path, const char *body)
{
    CURL *e = curl_easy_init();
    struct membuf m = {0};
    char url[256];
    long status = 0;

    snprintf(url, sizeof(url), "%s%s", g_base, path);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, mem_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &m);
    if (strcmp(method, "POST") == 0)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body ? body : "");
    assert_int_equal(curl_easy_perform(e), CURLE_OK);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    assert_int_equal(status, 200);
    curl_easy_cleanup(e);
    return m.p;
}

static void script(const char *json)
{
    sim_restart(); /* the arrivals logged from here on */
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

static int arrivals(void)
{
    cJSON *log = server_log();
    int n = cJSON_GetArraySize(log);

    cJSON_Delete(log);
    return n;
}

/* Arrival i on the clients' (simulated) clock. */
static double t_of(cJSON *log, int i)
{
    return sim_at(
        cJSON_GetObjectItem(cJSON_GetArrayItem(log, i), "t_ms")->valuedouble);
}

static const char *hdr(cJSON *log, int i, const char *name)
{
    cJSON *h = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(log, i), "headers"), name);

    return cJSON_IsString(h) ? h->valuestring : NULL;
}

static struct rlclient *client_with(const char *base, unsigned retry_base)
{
    struct rlclient_options o = {
        .base_url = base,
        .default_max_retries = -1,
        .retry_base_ms = retry_base,
        .clock = &g_sim,
    };
    struct rlclient *c = rlclient_create(&o);

    assert_non_null(c);
    return c;
}

/* Fast backoff so that counting attempts takes milliseconds. */
static struct rlclient *client(void)
{
    return client_with(g_base, 50);
}

static int do_req(struct rlclient *c, const char *key, const char *method,
                  const char *path, const char *body, int max_retries,
                  struct rlmcp_http_resp **resp)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;

    req.method = method;
    req.path = path;
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    req.max_retries = max_retries;
    return rlclient_request(c, key, &req, resp, NULL, NULL);
}

/* Cancels after_ms after start; the latency measured is from that moment
 * (not from the first poll that noticed) to the call's return. */
struct probe {
    double start;
    double after_ms;
    double fired_at;
};

static bool probe_fn(void *ctx)
{
    struct probe *p = ctx;
    double t = sim_ms();

    if (t - p->start < p->after_ms)
        return false;
    if (p->fired_at == 0)
        p->fired_at = t;
    return true;
}

static uint8_t pattern(size_t i)
{
    return (uint8_t)(((uint32_t)i * 2654435761u) >> 24);
}

/* ---------------------------------------------------------------------- */
/* Requests and headers                                                   */
/* ---------------------------------------------------------------------- */

static void t_get_headers(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;
    cJSON *log = NULL;

    script(NULL);
    assert_int_equal(
        do_req(c, KEY, "GET", "/v1/devboxes?limit=1", NULL, -1, &r), RLMCP_OK);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->body, "{\"ok\":true}");
    assert_int_equal(r->body_len, 11);
    assert_false(r->truncated);
    assert_string_equal(r->content_type, "application/json");
    rlclient_resp_free(r);
    log = server_log();
    assert_int_equal(cJSON_GetArraySize(log), 1);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(log, 0), "url")->valuestring,
        "/v1/devboxes?limit=1");
    assert_string_equal(hdr(log, 0, "authorization"), "Bearer " KEY);
    assert_string_equal(hdr(log, 0, "accept"), "application/json");
    assert_string_equal(hdr(log, 0, "user-agent"),
                        "runloop-mcp/" RLMCP_VERSION);
    assert_null(hdr(log, 0, "x-request-id")); /* GETs carry none */
    assert_null(hdr(log, 0, "content-type"));
    cJSON_Delete(log);

    /* No key: no Authorization header at all. */
    script(NULL);
    assert_int_equal(do_req(c, NULL, "GET", "/v1/x", NULL, -1, &r), RLMCP_OK);
    rlclient_resp_free(r);
    assert_int_equal(do_req(c, "", "GET", "/v1/x", NULL, -1, &r), RLMCP_OK);
    rlclient_resp_free(r);
    log = server_log();
    assert_null(hdr(log, 0, "authorization"));
    assert_null(hdr(log, 1, "authorization"));
    cJSON_Delete(log);
    rlclient_destroy(c);
}

static void t_post_json_and_empty(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;
    cJSON *log = NULL;
    const char *body = "{\"name\":\"x\"}";

    script(NULL);
    assert_int_equal(do_req(c, KEY, "POST", "/v1/devboxes", body, -1, &r),
                     RLMCP_OK);
    rlclient_resp_free(r);
    assert_int_equal(
        do_req(c, KEY, "POST", "/v1/devboxes/d/suspend", NULL, -1, &r),
        RLMCP_OK);
    rlclient_resp_free(r);
    log = server_log();
    assert_string_equal(hdr(log, 0, "content-type"), "application/json");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(log, 0), "body_hex")
            ->valuestring,
        "7b226e616d65223a2278227d");
    assert_string_equal(hdr(log, 1, "content-type"), "application/json");
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(log, 1), "body_len")->valueint,
        0);
    assert_null(hdr(log, 1, "expect"));
    cJSON_Delete(log);
    rlclient_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Retries                                                                */
/* ---------------------------------------------------------------------- */

static void t_retry_statuses(void **state)
{
    /* 409 only when the server says a retry may help. */
    static const int statuses[] = {500, 502, 503, 429, 408, 409};
    struct rlclient *c = client();
    size_t i;

    for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
        char js[256];
        const char *hint = statuses[i] == 409
                               ? ",\"headers\":{\"x-should-retry\":\"true\"}"
                               : "";
        struct rlmcp_http_resp *r = NULL;
        cJSON *log = NULL;

        snprintf(js, sizeof(js),
                 "[{\"status\":%d%s},{\"status\":%d%s},{\"status\":200,"
                 "\"body\":\"done\"}]",
                 statuses[i], hint, statuses[i], hint);
        script(js);
        assert_int_equal(
            do_req(c, KEY, "POST", "/v1/devboxes/d/resume", NULL, -1, &r),
            RLMCP_OK);
        assert_int_equal(r->status, 200);
        assert_string_equal(r->body, "done");
        rlclient_resp_free(r);
        log = server_log();
        assert_int_equal(cJSON_GetArraySize(log), 3);
        /* Backoff 50 ms then 100 ms, less at most 25 % jitter. */
        assert_true(t_of(log, 1) - t_of(log, 0) >= 37.0);
        assert_true(t_of(log, 2) - t_of(log, 1) >= 75.0);
        cJSON_Delete(log);
    }
    rlclient_destroy(c);
}

/* 4xx, and 507 (a full disk stays full until someone frees space). */
static void t_no_retry_4xx(void **state)
{
    /* 409: a conflict (a name taken) stays; answered at once. */
    static const int statuses[] = {400, 401, 403, 404, 409, 422, 423, 507};
    struct rlclient *c = client();
    size_t i;

    for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
        char js[128];
        struct rlmcp_http_resp *r = NULL;

        snprintf(js, sizeof(js),
                 "[{\"status\":%d,\"body\":\"{\\\"message\\\":\\\"no\\\"}\"},"
                 "{\"status\":200}]",
                 statuses[i]);
        script(js);
        assert_int_equal(do_req(c, KEY, "GET", "/v1/devboxes/x", NULL, -1, &r),
                         RLMCP_OK);
        assert_int_equal(r->status, statuses[i]);
        assert_string_equal(r->body, "{\"message\":\"no\"}");
        rlclient_resp_free(r);
        assert_int_equal(arrivals(), 1);
    }
    rlclient_destroy(c);
}

static void t_shutdown_409_never_retried(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;

    script("[{\"status\":409},{\"status\":200}]");
    assert_int_equal(
        do_req(c, KEY, "POST", "/v1/devboxes/d/shutdown", NULL, -1, &r),
        RLMCP_OK);
    assert_int_equal(r->status, 409);
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 1);

    /* Not even when the server says it may be retried, nor with a query. */
    script("[{\"status\":409,\"headers\":{\"x-should-retry\":\"true\"}},"
           "{\"status\":200}]");
    assert_int_equal(do_req(c, KEY, "POST",
                            "/v1/devboxes/d/shutdown?force=false", NULL, -1,
                            &r),
                     RLMCP_OK);
    assert_int_equal(r->status, 409);
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 1);

    /* A shutdown's 503 is still retried; so is a 409 elsewhere that the
     * server marks retryable (a devbox busy changing state). */
    script("[{\"status\":503},{\"status\":200}]");
    assert_int_equal(
        do_req(c, KEY, "POST", "/v1/devboxes/d/shutdown", NULL, -1, &r),
        RLMCP_OK);
    assert_int_equal(r->status, 200);
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 2);
    script("[{\"status\":409,\"headers\":{\"x-should-retry\":\"true\"}},"
           "{\"status\":200}]");
    assert_int_equal(
        do_req(c, KEY, "POST", "/v1/devboxes/d/shutdown_x", NULL, -1, &r),
        RLMCP_OK);
    assert_int_equal(r->status, 200);
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 2);
    rlclient_destroy(c);
}

static void t_should_retry_header(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;

    script("[{\"status\":503,\"headers\":{\"x-should-retry\":\"false\"}},"
           "{\"status\":200}]");
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a", NULL, -1, &r), RLMCP_OK);
    assert_int_equal(r->status, 503);
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 1);

    script("[{\"status\":400,\"headers\":{\"x-should-retry\":\"true\"}},"
           "{\"status\":200}]");
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a", NULL, -1, &r), RLMCP_OK);
    assert_int_equal(r->status, 200);
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 2);
    rlclient_destroy(c);
}

static void check_gap(const char *js, double min_gap)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;
    cJSON *log = NULL;
    double gap = 0;

    script(js);
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a", NULL, -1, &r), RLMCP_OK);
    assert_int_equal(r->status, 200);
    rlclient_resp_free(r);
    log = server_log();
    assert_int_equal(cJSON_GetArraySize(log), 2);
    gap = t_of(log, 1) - t_of(log, 0);
    if (gap < min_gap)
        fail_msg("%s: gap %.1f ms < %.1f ms", js, gap, min_gap);
    cJSON_Delete(log);
    rlclient_destroy(c);
}

static void t_retry_after(void **state)
{
    char js[256];
    char date[64];
    time_t when = 0;
    struct tm tm;

    /* The client's own backoff here is 50 ms: longer gaps are the hints. */
    check_gap("[{\"status\":429,\"headers\":{\"retry-after-ms\":\"400\"}},"
              "{\"status\":200}]",
              390.0);
    check_gap("[{\"status\":503,\"headers\":{\"Retry-After\":\"1\"}},"
              "{\"status\":200}]",
              990.0);
    /* retry-after-ms wins over Retry-After. */
    check_gap("[{\"status\":503,\"headers\":{\"retry-after-ms\":\"300\","
              "\"Retry-After\":\"0\"}},{\"status\":200}]",
              290.0);
    when = time(NULL) + 3;
    gmtime_r(&when, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    snprintf(js, sizeof(js),
             "[{\"status\":503,\"headers\":{\"Retry-After\":\"%s\"}},"
             "{\"status\":200}]",
             date);
    /* Whole seconds: at least 2 s of the 3 remain. */
    check_gap(js, 1900.0);
}

static void t_default_backoff(void **state)
{
    struct rlclient *c = client_with(g_base, 0); /* the SDK's 1 s base */
    struct rlmcp_http_resp *r = NULL;
    cJSON *log = NULL;

    script("[{\"status\":500},{\"status\":500},{\"status\":200}]");
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a", NULL, -1, &r), RLMCP_OK);
    assert_int_equal(r->status, 200);
    rlclient_resp_free(r);
    log = server_log();
    assert_int_equal(cJSON_GetArraySize(log), 3);
    /* 1 s and 2 s, each less at most 25 % jitter. */
    assert_true(t_of(log, 1) - t_of(log, 0) >= 745.0);
    assert_true(t_of(log, 2) - t_of(log, 1) >= 1495.0);
    cJSON_Delete(log);
    rlclient_destroy(c);
}

static void t_max_retries(void **state)
{
    static const char many[] =
        "[{\"status\":503,\"body\":\"a\"},{\"status\":503,\"body\":\"b\"},"
        "{\"status\":503,\"body\":\"c\"},{\"status\":503,\"body\":\"d\"},"
        "{\"status\":503,\"body\":\"e\"},{\"status\":503,\"body\":\"f\"},"
        "{\"status\":503,\"body\":\"g\"},{\"status\":503,\"body\":\"h\"}]";
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;

    script(many);
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a", NULL, 2, &r), RLMCP_OK);
    assert_int_equal(r->status, 503);
    assert_string_equal(r->body, "c"); /* the last attempt's answer */
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 3);

    script(many);
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a", NULL, -1, &r), RLMCP_OK);
    assert_int_equal(r->status, 503);
    assert_string_equal(r->body, "f");
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 6); /* default 5 retries */

    script(many);
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a", NULL, 0, &r), RLMCP_OK);
    assert_int_equal(r->status, 503);
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 1);
    rlclient_destroy(c);
}

static void t_idempotency_header(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;
    cJSON *log = NULL;
    const char *id0 = NULL;

    script("[{\"status\":503},{\"drop\":true},{\"status\":200},"
           "{\"status\":200}]");
    assert_int_equal(do_req(c, KEY, "POST", "/v1/devboxes", "{}", -1, &r),
                     RLMCP_OK);
    assert_int_equal(r->status, 200);
    rlclient_resp_free(r);
    assert_int_equal(do_req(c, KEY, "POST", "/v1/devboxes", "{}", -1, &r),
                     RLMCP_OK);
    rlclient_resp_free(r);
    log = server_log();
    assert_int_equal(cJSON_GetArraySize(log), 4);
    id0 = hdr(log, 0, "x-request-id");
    assert_non_null(id0);
    assert_int_equal(strncmp(id0, "rlmcp-retry-", 12), 0);
    assert_int_equal(strlen(id0), 12 + 36);
    assert_string_equal(hdr(log, 1, "x-request-id"), id0);
    assert_string_equal(hdr(log, 2, "x-request-id"), id0);
    assert_string_not_equal(hdr(log, 3, "x-request-id"), id0);
    cJSON_Delete(log);
    rlclient_destroy(c);
}

static void t_dropped_connection(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;

    script("[{\"drop\":true},{\"delay_ms\":50,\"drop\":true},"
           "{\"status\":200,\"body\":\"ok\"}]");
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a", NULL, -1, &r), RLMCP_OK);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->body, "ok");
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 3);
    rlclient_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Timeouts and cancellation                                              */
/* ---------------------------------------------------------------------- */

static void t_attempt_timeout(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    double t0 = sim_ms();
    double took = 0;

    script("[{\"delay_ms\":10000},{\"delay_ms\":10000},{\"status\":200}]");
    req.method = "GET";
    req.path = "/v1/slow";
    req.timeout_ms = 300;
    req.max_retries = 1;
    assert_int_equal(rlclient_request(c, KEY, &req, &r, NULL, NULL),
                     RLMCP_ETIMEDOUT);
    took = sim_ms() - t0;
    assert_null(r);
    assert_true(took >= 550.0); /* two attempts of 300 ms */
    /* Neither waited for the 10 s answer; generous for a loaded machine. */
    assert_true(took < 8000.0);
    assert_non_null(strstr(rlclient_last_error(), "/v1/slow"));
    assert_int_equal(arrivals(), 2);
    rlclient_destroy(c);
}

static void t_cancel_slow_response(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    struct probe p = {.after_ms = 300};
    double late = 0;

    script("[{\"delay_ms\":20000}]");
    req.method = "POST";
    req.path = "/v1/devboxes/d/execute";
    req.body = "{}";
    req.body_len = 2;
    p.start = sim_ms();
    assert_int_equal(rlclient_request(c, KEY, &req, &r, probe_fn, &p),
                     RLMCP_ECANCELLED);
    late = sim_ms() - (p.start + p.after_ms);
    assert_null(r);
    print_message("cancel of a slow response took %.1f ms\n", late);
    assert_true(p.fired_at > 0);
    /* Far below the 20 s answer or 30 s backoff it would otherwise wait
     * for; the typical figure is printed above. */
    assert_true(late < 5000.0);
    rlclient_destroy(c);
}

static void t_cancel_during_backoff(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    struct probe p = {.after_ms = 300};
    double late = 0;

    script("[{\"status\":503,\"headers\":{\"Retry-After\":\"30\"}},"
           "{\"status\":200}]");
    req.method = "GET";
    req.path = "/v1/a";
    p.start = sim_ms();
    assert_int_equal(rlclient_request(c, KEY, &req, &r, probe_fn, &p),
                     RLMCP_ECANCELLED);
    late = sim_ms() - (p.start + p.after_ms);
    print_message("cancel during backoff took %.1f ms\n", late);
    /* Far below the 20 s answer or 30 s backoff it would otherwise wait
     * for; the typical figure is printed above. */
    assert_true(late < 5000.0);
    assert_int_equal(arrivals(), 1);
    rlclient_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Bodies                                                                 */
/* ---------------------------------------------------------------------- */

static void t_multipart(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    struct rlmcp_http_part parts[2];
    unsigned char bin[3000];
    char expect_hex[6001];
    cJSON *log = NULL;
    cJSON *ps = NULL;
    cJSON *p0 = NULL;
    cJSON *p1 = NULL;
    size_t i;

    for (i = 0; i < sizeof(bin); i++) {
        bin[i] = (unsigned char)(i * 7);
        snprintf(expect_hex + 2 * i, 3, "%02x", bin[i]);
    }
    memset(parts, 0, sizeof(parts));
    parts[0].struct_size = sizeof(parts[0]);
    parts[0].name = "path";
    parts[0].data = "/home/user/x.bin";
    parts[0].len = strlen("/home/user/x.bin");
    parts[1].struct_size = sizeof(parts[1]);
    parts[1].name = "file";
    parts[1].filename = "x.bin";
    parts[1].content_type = "application/octet-stream";
    parts[1].data = bin;
    parts[1].len = sizeof(bin);
    script(NULL);
    req.method = "POST";
    req.path = "/v1/devboxes/d/upload_file";
    req.parts = parts;
    req.n_parts = 2;
    assert_int_equal(rlclient_request(c, KEY, &req, &r, NULL, NULL), RLMCP_OK);
    assert_int_equal(r->status, 200);
    rlclient_resp_free(r);
    log = server_log();
    assert_int_equal(strncmp(hdr(log, 0, "content-type"),
                             "multipart/form-data; boundary=", 30),
                     0);
    assert_non_null(hdr(log, 0, "x-request-id"));
    ps = cJSON_GetObjectItem(cJSON_GetArrayItem(log, 0), "parts");
    assert_int_equal(cJSON_GetArraySize(ps), 2);
    p0 = cJSON_GetArrayItem(ps, 0);
    p1 = cJSON_GetArrayItem(ps, 1);
    assert_string_equal(cJSON_GetObjectItem(p0, "name")->valuestring, "path");
    assert_string_equal(cJSON_GetObjectItem(p0, "hex")->valuestring,
                        "2f686f6d652f757365722f782e62696e");
    assert_string_equal(cJSON_GetObjectItem(p1, "name")->valuestring, "file");
    assert_string_equal(cJSON_GetObjectItem(p1, "filename")->valuestring,
                        "x.bin");
    assert_string_equal(cJSON_GetObjectItem(p1, "content_type")->valuestring,
                        "application/octet-stream");
    assert_string_equal(cJSON_GetObjectItem(p1, "hex")->valuestring,
                        expect_hex);
    cJSON_Delete(log);
    rlclient_destroy(c);
}

static void t_binary_download(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    const size_t n = 3u * 1024u * 1024u + 17u;
    char js[128];
    size_t i;
    size_t bad = 0;

    snprintf(js, sizeof(js),
             "[{\"bytes\":%zu,\"content_type\":\"application/octet-stream\"},"
             "{\"bytes\":%zu}]",
             n, n);
    script(js);
    req.method = "POST";
    req.path = "/v1/devboxes/d/download_file";
    req.body = "{\"path\":\"x\"}";
    req.body_len = strlen(req.body);
    req.accept = "application/octet-stream";
    assert_int_equal(rlclient_request(c, KEY, &req, &r, NULL, NULL), RLMCP_OK);
    assert_int_equal(r->body_len, n);
    assert_false(r->truncated);
    assert_string_equal(r->content_type, "application/octet-stream");
    for (i = 0; i < n; i++)
        bad += (uint8_t)r->body[i] != pattern(i);
    assert_int_equal(bad, 0);
    assert_int_equal(r->body[n], '\0');
    rlclient_resp_free(r);
    {
        cJSON *log = server_log();

        assert_string_equal(hdr(log, 0, "accept"), "application/octet-stream");
        cJSON_Delete(log);
    }
    /* max_body keeps the head and says so. */
    req.max_body = 1000;
    assert_int_equal(rlclient_request(c, KEY, &req, &r, NULL, NULL), RLMCP_OK);
    assert_int_equal(r->status, 200);
    assert_int_equal(r->body_len, 1000);
    assert_true(r->truncated);
    for (i = 0; i < 1000; i++)
        bad += (uint8_t)r->body[i] != pattern(i);
    assert_int_equal(bad, 0);
    rlclient_resp_free(r);
    rlclient_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Failures, bad input, secrets                                           */
/* ---------------------------------------------------------------------- */

static int closed_port(void)
{
    struct sockaddr_in sin;
    socklen_t sl = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int port = 0;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    getsockname(fd, (struct sockaddr *)&sin, &sl);
    port = ntohs(sin.sin_port);
    close(fd); /* bound but never listening: connections are refused */
    return port;
}

static void t_unreachable(void **state)
{
    char base[64];
    char url[128];
    struct rlclient *c = NULL;
    struct rlmcp_http_resp *r = NULL;

    snprintf(base, sizeof(base), "http://127.0.0.1:%d", closed_port());
    snprintf(url, sizeof(url), "%s/v1/devboxes", base);
    c = client_with(base, 20);
    assert_int_equal(do_req(c, KEY, "GET", "/v1/devboxes", NULL, 2, &r),
                     RLMCP_EHTTP);
    assert_null(r);
    assert_non_null(strstr(rlclient_last_error(), url));
    assert_non_null(strstr(rlclient_last_error(), "3 attempts"));
    assert_string_equal(rlclient_target(c), base);
    rlclient_destroy(c);
}

static char g_unix_dir[32];
static pid_t g_unix_fs = -1;

/* Whatever t_unix_socket left running or on disk, also after a failure. */
static int unix_teardown(void **state)
{
    char sock[128];

    stop_pid(g_unix_fs);
    g_unix_fs = -1;
    if (g_unix_dir[0] != '\0') {
        snprintf(sock, sizeof(sock), "%s/devboxd.sock", g_unix_dir);
        unlink(sock);
        rmdir(g_unix_dir);
    }
    return 0;
}

/* The same client over a unix socket (how the local engine is reached). */
static void t_unix_socket(void **state)
{
    char *dir = g_unix_dir;
    char sock[128];
    char line[256];
    char want[160];
    struct rlclient_options o = {
        .default_max_retries = -1, .retry_base_ms = 20, .clock = &g_sim};
    struct rlclient *c = NULL;
    struct rlmcp_http_resp *r = NULL;
    pid_t pid = -1;
    CURL *e = NULL;

    snprintf(g_unix_dir, sizeof(g_unix_dir), "/tmp/rlc-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(sock, sizeof(sock), "%s/devboxd.sock", dir);
    pid = spawn_faultserver("--unix", sock, line, sizeof(line));
    g_unix_fs = pid;
    snprintf(want, sizeof(want), "listening on unix:%s\n", sock);
    assert_string_equal(line, want);
    o.unix_socket = sock;
    c = rlclient_create(&o);
    assert_non_null(c);
    snprintf(want, sizeof(want), "unix:%s", sock);
    assert_string_equal(rlclient_target(c), want);
    /* Script through the socket with plain libcurl. */
    e = curl_easy_init();
    curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, sock);
    curl_easy_setopt(e, CURLOPT_URL, "http://localhost/__script");
    curl_easy_setopt(e, CURLOPT_POSTFIELDS,
                     "[{\"status\":503},{\"status\":200,\"body\":\"u\"}]");
    assert_int_equal(curl_easy_perform(e), CURLE_OK);
    curl_easy_cleanup(e);
    assert_int_equal(
        do_req(c, NULL, "GET", "/v1/devboxes?limit=1", NULL, -1, &r), RLMCP_OK);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->body, "u"); /* after one retry */
    rlclient_resp_free(r);
    stop_pid(pid);
    g_unix_fs = -1;
    /* Nothing listening: EHTTP naming the URL and the socket. */
    assert_int_equal(do_req(c, NULL, "GET", "/v1/devboxes", NULL, 1, &r),
                     RLMCP_EHTTP);
    snprintf(want, sizeof(want),
             "GET http://localhost/v1/devboxes via "
             "unix:%s",
             sock);
    if (strstr(rlclient_last_error(), want) == NULL)
        fail_msg("'%s' lacks '%s'", rlclient_last_error(), want);
    /* What an agent reads says why without the route it cannot call. */
    assert_non_null(strstr(rlclient_last_reason(), "(1 attempt)"));
    assert_null(strstr(rlclient_last_reason(), "/v1/"));
    assert_null(strstr(rlclient_last_reason(), "GET "));
    rlclient_destroy(c);
}

struct captured {
    char lines[16384];
};

static void sink(void *user, int level, const char *line)
{
    struct captured *cap = user;
    size_t used = strlen(cap->lines);

    (void)level;
    snprintf(cap->lines + used, sizeof(cap->lines) - used, "%s\n", line);
}

static void t_key_never_logged(void **state)
{
    char base[64];
    char path[] = "/tmp/rlclient-stderr-XXXXXX";
    struct captured cap = {0};
    struct rlclient *bad = NULL;
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;
    char text[65536] = "";
    int fd = mkstemp(path);
    int saved = dup(2);
    ssize_t n = 0;

    assert_true(fd >= 0);
    snprintf(base, sizeof(base), "http://user:pw@127.0.0.1:%d", closed_port());
    log_set_level(RLMCP_LOG_DEBUG);
    /* First through stderr itself, then through the sink. */
    dup2(fd, 2);
    bad = client_with(base, 10);
    assert_int_equal(do_req(bad, KEY, "POST", "/v1/devboxes", "{}", 1, &r),
                     RLMCP_EHTTP);
    assert_null(strstr(rlclient_last_error(), KEY));
    assert_null(strstr(rlclient_last_error(), "pw@"));
    script("[{\"status\":503},{\"status\":401}]");
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a", NULL, -1, &r), RLMCP_OK);
    rlclient_resp_free(r);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    log_set_sink(sink, &cap);
    assert_int_equal(do_req(bad, KEY, "GET", "/v1/devboxes", NULL, 1, &r),
                     RLMCP_EHTTP);
    log_set_sink(NULL, NULL);
    log_set_level(RLMCP_LOG_INFO);
    n = pread(fd, text, sizeof(text) - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    text[n] = '\0';
    /* The capture works: the failure was logged, naming the URL... */
    assert_non_null(strstr(text, "/v1/devboxes"));
    assert_non_null(strstr(text, "retry"));
    assert_non_null(strstr(cap.lines, "/v1/devboxes"));
    /* ...and neither the key nor URL credentials appear anywhere. */
    assert_null(strstr(text, KEY));
    assert_null(strstr(text, "pw@"));
    assert_null(strstr(cap.lines, KEY));
    assert_null(strstr(cap.lines, "pw@"));
    rlclient_destroy(bad);
    rlclient_destroy(c);
}

static void t_bad_input(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    struct rlclient_options o = {.base_url = "ftp://example.com"};
    struct rlmcp_http_part part = {.struct_size = sizeof(part)};

    script(NULL);
    assert_null(rlclient_create(&o));
    o.base_url = "http://exa mple.com";
    assert_null(rlclient_create(&o));
    assert_int_equal(do_req(c, KEY, "PUT", "/v1/a", NULL, -1, &r),
                     RLMCP_EINVAL);
    assert_non_null(strstr(rlclient_last_error(), "GET"));
    assert_int_equal(do_req(c, KEY, "GET", "v1/a", NULL, -1, &r), RLMCP_EINVAL);
    assert_non_null(strstr(rlclient_last_error(), "start with '/'"));
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a b", NULL, -1, &r),
                     RLMCP_EINVAL);
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a\r\nX: y", NULL, -1, &r),
                     RLMCP_EINVAL);
    assert_int_equal(do_req(c, KEY, "GET", "/v1/a", "{}", -1, &r),
                     RLMCP_EINVAL);
    assert_int_equal(do_req(c, KEY, "GET", NULL, NULL, -1, &r), RLMCP_EINVAL);
    assert_int_equal(
        do_req(c, "ak_x\r\nX-Evil: 1", "GET", "/v1/a", NULL, -1, &r),
        RLMCP_EINVAL);
    assert_null(strstr(rlclient_last_error(), "ak_x"));
    req.method = "POST";
    req.path = "/v1/a";
    req.body = "{}";
    req.body_len = 2;
    req.parts = &part;
    req.n_parts = 1;
    assert_int_equal(rlclient_request(c, KEY, &req, &r, NULL, NULL),
                     RLMCP_EINVAL);
    req.body = NULL;
    assert_int_equal(rlclient_request(c, KEY, &req, &r, NULL, NULL),
                     RLMCP_EINVAL); /* a part without a name */
    assert_int_equal(rlclient_request(c, KEY, &req, NULL, NULL, NULL),
                     RLMCP_EINVAL);
    assert_int_equal(rlclient_request(c, KEY, NULL, &r, NULL, NULL),
                     RLMCP_EINVAL);
    assert_null(r);
    assert_int_equal(arrivals(), 0);
    rlclient_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Connection reuse and threads                                           */
/* ---------------------------------------------------------------------- */

static void t_connection_reuse(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;
    cJSON *log = NULL;
    int i;
    int port0 = 0;

    script(NULL);
    for (i = 0; i < 5; i++) {
        assert_int_equal(
            do_req(c, KEY, i % 2 ? "POST" : "GET", "/v1/a", NULL, -1, &r),
            RLMCP_OK);
        rlclient_resp_free(r);
    }
    log = server_log();
    port0 =
        cJSON_GetObjectItem(cJSON_GetArrayItem(log, 0), "peer_port")->valueint;
    for (i = 1; i < 5; i++)
        assert_int_equal(
            cJSON_GetObjectItem(cJSON_GetArrayItem(log, i), "peer_port")
                ->valueint,
            port0);
    cJSON_Delete(log);
    rlclient_destroy(c);
}

#define N_THREADS 4
#define N_PER_THREAD 25

static void *hammer(void *arg)
{
    struct rlclient *c = arg;
    long ok = 0;
    int i;

    for (i = 0; i < N_PER_THREAD; i++) {
        struct rlmcp_http_resp *r = NULL;

        if (do_req(c, KEY, "GET", "/v1/devboxes", NULL, -1, &r) == RLMCP_OK &&
            r->status == 200)
            ok++;
        rlclient_resp_free(r);
    }
    return (void *)ok;
}

static void t_threads(void **state)
{
    struct rlclient *c = client();
    pthread_t th[N_THREADS];
    long total = 0;
    int i;

    script(NULL);
    for (i = 0; i < N_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hammer, c), 0);
    for (i = 0; i < N_THREADS; i++) {
        void *ret = NULL;

        pthread_join(th[i], &ret);
        total += (long)ret;
    }
    assert_int_equal(total, N_THREADS * N_PER_THREAD);
    assert_int_equal(arrivals(), N_THREADS * N_PER_THREAD);
    rlclient_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Server-sent events                                                     */
/* ---------------------------------------------------------------------- */

struct events {
    char log[4096];
    int n;
    int stop_after;
};

static int on_ev(void *user, const char *event, const char *id,
                 const char *data, size_t len)
{
    struct events *e = user;
    size_t used = strlen(e->log);

    snprintf(e->log + used, sizeof(e->log) - used, "[%s|%s|%.*s]", event, id,
             (int)len, data);
    e->n++;
    return e->stop_after > 0 && e->n >= e->stop_after;
}

static int do_sse(struct rlclient *c, struct events *e, long *status,
                  rlclient_cancel_fn fn, void *ctx)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;

    req.method = "GET";
    req.path = "/v1/devboxes/d/executions/e/stream_stdout_updates?offset=0";
    return rlclient_sse(c, KEY, &req, on_ev, e, status, fn, ctx);
}

static void t_sse_stream(void **state)
{
    struct rlclient *c = client();
    struct events e = {0};
    long status = 0;
    cJSON *log = NULL;

    /* Events split mid-line across chunks, CRLF, a comment, a retry first. */
    script("[{\"status\":503},{\"content_type\":\"text/event-stream\","
           "\"chunk_delay_ms\":30,\"chunks\":[\": hi\\r\\nda\","
           "\"ta: {\\\"output\\\":\\\"a\\\",\\\"offset\\\":0}\\r\\n\","
           "\"\\r\\nid: 2\\nevent: error\\ndata: {\\\"code\\\":1}\\n\\n\"]}]");
    assert_int_equal(do_sse(c, &e, &status, NULL, NULL), RLMCP_OK);
    assert_int_equal(status, 200);
    assert_string_equal(e.log, "[message||{\"output\":\"a\",\"offset\":0}]"
                               "[error|2|{\"code\":1}]");
    log = server_log();
    assert_int_equal(cJSON_GetArraySize(log), 2);
    assert_string_equal(hdr(log, 1, "accept"), "text/event-stream");
    cJSON_Delete(log);
    rlclient_destroy(c);
}

static void t_sse_status_stop_drop(void **state)
{
    struct rlclient *c = client();
    struct events e = {0};
    long status = 0;

    script("[{\"status\":404,\"body\":\"data: not an event\\n\\n\"}]");
    assert_int_equal(do_sse(c, &e, &status, NULL, NULL), RLMCP_OK);
    assert_int_equal(status, 404);
    assert_int_equal(e.n, 0);

    memset(&e, 0, sizeof(e));
    e.stop_after = 1;
    script(
        "[{\"content_type\":\"text/event-stream\",\"chunk_delay_ms\":20,"
        "\"chunks\":[\"data: 1\\n\\n\",\"data: 2\\n\\n\",\"data: 3\\n\\n\"]}]");
    assert_int_equal(do_sse(c, &e, &status, NULL, NULL), RLMCP_OK);
    assert_int_equal(e.n, 1);

    /* Broken after an event: no replay, the caller resumes by offset. */
    memset(&e, 0, sizeof(e));
    script("[{\"content_type\":\"text/event-stream\",\"chunks\":"
           "[\"data: 1\\n\\n\"],\"drop_after_chunks\":true},{\"status\":200}]");
    assert_int_equal(do_sse(c, &e, &status, NULL, NULL), RLMCP_EHTTP);
    assert_int_equal(e.n, 1);
    assert_int_equal(arrivals(), 1);
    rlclient_destroy(c);
}

static void t_sse_cancel_and_oversize(void **state)
{
    struct rlclient *c = client();
    struct events e = {0};
    struct probe p = {.after_ms = 300};
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    long status = 0;
    double late = 0;

    script("[{\"content_type\":\"text/event-stream\",\"chunk_delay_ms\":10000,"
           "\"chunks\":[\"data: 1\\n\\n\",\"data: 2\\n\\n\"]}]");
    p.start = sim_ms();
    assert_int_equal(do_sse(c, &e, &status, probe_fn, &p), RLMCP_ECANCELLED);
    late = sim_ms() - (p.start + p.after_ms);
    print_message("cancel of a quiet SSE stream took %.1f ms\n", late);
    /* Far below the 20 s answer or 30 s backoff it would otherwise wait
     * for; the typical figure is printed above. */
    assert_true(late < 5000.0);
    assert_int_equal(e.n, 1);

    memset(&e, 0, sizeof(e));
    script("[{\"content_type\":\"text/event-stream\",\"chunks\":"
           "[\"data: 0123456789abcdef0123456789\\n\\n\"]}]");
    req.method = "GET";
    req.path = "/v1/s";
    req.max_body = 16;
    assert_int_equal(rlclient_sse(c, KEY, &req, on_ev, &e, &status, NULL, NULL),
                     RLMCP_EINTERNAL);
    assert_int_equal(e.n, 0);
    assert_non_null(strstr(rlclient_last_error(), "16 bytes"));
    rlclient_destroy(c);
}

/* ---------------------------------------------------------------------- */
/* Deadlines and the circuit breaker                                      */
/* ---------------------------------------------------------------------- */

/* Deadlines are on the clients' (simulated) clock. */
static uint64_t mono_now_ms(void)
{
    return (uint64_t)sim_ms();
}

static int req_until(struct rlclient *c, const char *method, const char *path,
                     uint64_t deadline_ms, struct rlmcp_http_resp **resp)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlclient_bound b = {NULL, NULL, deadline_ms};

    req.method = method;
    req.path = path;
    return rlclient_request_bound(c, KEY, &req, resp, &b);
}

/* A backend that answers after the deadline: the call ends at the deadline
 * (the attempt is cut, not the 30 s default), with no answer. */
static void t_deadline_cuts_attempt(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;

    script("[{\"status\":200,\"delay_ms\":20000}]");
    assert_int_equal(req_until(c, "GET", "/v1/slow", mono_now_ms() + 300, &r),
                     RLMCP_ETIMEDOUT);
    assert_null(r);
    assert_non_null(strstr(rlclient_last_error(), "time limit"));
    assert_int_equal(arrivals(), 1);
    rlclient_destroy(c);
}

/* Retry-After beyond the time left ends the request at once with an error
 * that says so; never a late success after the wait. */
static void t_retry_after_beyond_deadline(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;

    script("[{\"status\":429,\"headers\":{\"Retry-After\":\"30\"}},"
           "{\"status\":200}]");
    assert_int_equal(req_until(c, "POST", "/v1/x", mono_now_ms() + 5000, &r),
                     RLMCP_ETIMEDOUT);
    assert_null(r);
    assert_non_null(strstr(rlclient_last_error(), "HTTP 429"));
    assert_non_null(strstr(rlclient_last_error(), "30000 ms"));
    assert_non_null(strstr(rlclient_last_error(), "not retried"));
    assert_int_equal(arrivals(), 1);
    /* A hint that fits is followed, as before. */
    script("[{\"status\":503,\"headers\":{\"retry-after-ms\":\"100\"}},"
           "{\"status\":200}]");
    assert_int_equal(req_until(c, "POST", "/v1/x", mono_now_ms() + 5000, &r),
                     RLMCP_OK);
    assert_int_equal(r->status, 200);
    rlclient_resp_free(r);
    assert_int_equal(arrivals(), 2);
    rlclient_destroy(c);
}

/* A deadline already passed sends nothing. */
static void t_deadline_passed(void **state)
{
    struct rlclient *c = client();
    struct rlmcp_http_resp *r = NULL;

    script(NULL);
    assert_int_equal(req_until(c, "GET", "/v1/a", mono_now_ms() - 1, &r),
                     RLMCP_ETIMEDOUT);
    assert_int_equal(arrivals(), 0);
    rlclient_destroy(c);
}

static char g_brk_dir[32];
static pid_t g_brk_fs = -1;
static int g_down_calls;

static void on_down(void *ctx)
{
    (void)ctx;
    g_down_calls++;
}

static int breaker_teardown(void **state)
{
    char sock[128];

    stop_pid(g_brk_fs);
    g_brk_fs = -1;
    if (g_brk_dir[0] != '\0') {
        snprintf(sock, sizeof(sock), "%s/devboxd.sock", g_brk_dir);
        unlink(sock);
        rmdir(g_brk_dir);
    }
    return 0;
}

/*
 * The local engine's socket with nothing behind it: one attempt, no retry
 * schedule; the down hook runs (the host restarts an engine it started);
 * later calls fail at once with a message saying the backend is down and
 * send nothing; once an engine answers, a probe closes the breaker.
 */
static void t_breaker_local_engine(void **state)
{
    struct rlclient_options o = {
        .default_max_retries = -1, .retry_base_ms = 1000, .clock = &g_sim};
    struct rlclient *c = NULL;
    struct rlmcp_http_resp *r = NULL;
    char sock[128];
    char line[256];
    double until = 0;
    int rc = 0;

    snprintf(g_brk_dir, sizeof(g_brk_dir), "/tmp/rlb-XXXXXX");
    assert_non_null(mkdtemp(g_brk_dir));
    snprintf(sock, sizeof(sock), "%s/devboxd.sock", g_brk_dir);
    o.unix_socket = sock;
    c = rlclient_create(&o);
    assert_non_null(c);
    rlclient_set_down_hook(c, on_down, NULL);
    g_down_calls = 0;

    assert_int_equal(do_req(c, NULL, "GET", "/v1/devboxes", NULL, -1, &r),
                     RLMCP_EHTTP);
    assert_non_null(strstr(rlclient_last_error(), "(1 attempt)"));
    assert_int_equal(g_down_calls, 1);
    assert_true(rlclient_backend_down(c));

    assert_int_equal(do_req(c, NULL, "GET", "/v1/devboxes", NULL, -1, &r),
                     RLMCP_EHTTP);
    assert_non_null(strstr(rlclient_last_error(), "unreachable for"));
    assert_non_null(strstr(rlclient_last_error(), "next probe in"));

    g_brk_fs = spawn_faultserver("--unix", sock, line, sizeof(line));
    assert_true(g_brk_fs > 0);
    /* Probes go after a cool-down of at least 500 ms: wait for one. */
    until = now_ms() + 20000;
    do {
        rc = do_req(c, NULL, "GET", "/v1/devboxes", NULL, 0, &r);
        if (rc != RLMCP_OK)
            g_sim.nap_ns(NULL, 50 * 1000000ull); /* the cool-down */
    } while (rc != RLMCP_OK && now_ms() < until);
    assert_int_equal(rc, RLMCP_OK);
    assert_int_equal(r->status, 200);
    rlclient_resp_free(r);
    assert_false(rlclient_backend_down(c));
    rlclient_destroy(c);
}

/* A closed TCP port: a few short retries (not the 1 s schedule), then the
 * breaker is open and the next call sends nothing. */
static void t_breaker_refused_tcp(void **state)
{
    char base[64];
    struct rlclient *c = NULL;
    struct rlmcp_http_resp *r = NULL;

    snprintf(base, sizeof(base), "http://127.0.0.1:%d", closed_port());
    c = client_with(base, 1000);
    assert_int_equal(do_req(c, KEY, "GET", "/v1/devboxes", NULL, -1, &r),
                     RLMCP_EHTTP);
    assert_non_null(strstr(rlclient_last_error(), "3 attempts"));
    assert_true(rlclient_backend_down(c));
    assert_int_equal(do_req(c, KEY, "GET", "/v1/devboxes", NULL, -1, &r),
                     RLMCP_EHTTP);
    assert_non_null(strstr(rlclient_last_error(), "unreachable for"));
    assert_null(strstr(rlclient_last_error(), KEY));
    rlclient_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_get_headers),
        cmocka_unit_test(t_post_json_and_empty),
        cmocka_unit_test(t_retry_statuses),
        cmocka_unit_test(t_no_retry_4xx),
        cmocka_unit_test(t_shutdown_409_never_retried),
        cmocka_unit_test(t_should_retry_header),
        cmocka_unit_test(t_retry_after),
        cmocka_unit_test(t_default_backoff),
        cmocka_unit_test(t_max_retries),
        cmocka_unit_test(t_idempotency_header),
        cmocka_unit_test(t_dropped_connection),
        cmocka_unit_test(t_attempt_timeout),
        cmocka_unit_test(t_cancel_slow_response),
        cmocka_unit_test(t_cancel_during_backoff),
        cmocka_unit_test(t_multipart),
        cmocka_unit_test(t_binary_download),
        cmocka_unit_test(t_unreachable),
        cmocka_unit_test_teardown(t_unix_socket, unix_teardown),
        cmocka_unit_test(t_key_never_logged),
        cmocka_unit_test(t_bad_input),
        cmocka_unit_test(t_connection_reuse),
        cmocka_unit_test(t_threads),
        cmocka_unit_test(t_sse_stream),
        cmocka_unit_test(t_sse_status_stop_drop),
        cmocka_unit_test(t_sse_cancel_and_oversize),
        cmocka_unit_test(t_deadline_cuts_attempt),
        cmocka_unit_test(t_retry_after_beyond_deadline),
        cmocka_unit_test(t_deadline_passed),
        cmocka_unit_test_teardown(t_breaker_local_engine, breaker_teardown),
        cmocka_unit_test(t_breaker_refused_tcp),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
