/* Unit tests for devboxd's API layer: create validation, pagination, SSE
 * framing, multipart parsing (with a mutation fuzz), output tails, query
 * parsing and the router's auth/404/list paths. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "devbox_spec.h"
#include "engine.h"
#include "http_server.h"
#include "multipart.h"
#include "util.h"

static cJSON *validate(const char *json, int *status, char *err, size_t errlen)
{
    cJSON *body = cJSON_Parse(json);
    cJSON *spec = NULL;

    assert_non_null(body);
    spec = devbox_spec_validate(body, status, err, errlen);
    cJSON_Delete(body);
    return spec;
}

static void expect_reject(const char *json, const char *needle)
{
    char err[512] = "";
    int status = 0;
    cJSON *spec = validate(json, &status, err, sizeof(err));

    if (spec != NULL)
        fail_msg("accepted %s", json);
    assert_int_equal(status, 400);
    if (strstr(err, needle) == NULL)
        fail_msg("message for %s was '%s', wanted '%s'", json, err, needle);
}

static void test_create_valid(void **state)
{
    char err[512] = "";
    int status = 0;
    cJSON *spec = NULL;

    (void)state;
    spec = validate(
        "{\"name\":\"a\",\"metadata\":{\"k\":\"v\"},"
        "\"environment_variables\":{\"A_1\":\"x\"},"
        "\"launch_parameters\":{\"resource_size_request\":\"CUSTOM_SIZE\","
        "\"custom_cpu_cores\":2,\"custom_gb_memory\":8,\"custom_disk_size\":10,"
        "\"launch_commands\":[\"true\"],\"keep_alive_time_seconds\":60,"
        "\"lifecycle\":{\"after_idle\":{\"idle_time_seconds\":30,\"on_idle\":"
        "\"suspend\"}}},"
        "\"mounts\":[{\"type\":\"file_mount\",\"target\":\"/"
        "x\",\"content\":\"y\"}],"
        "\"blueprint_id\":null,\"secrets\":{}}",
        &status, err, sizeof(err));
    if (spec == NULL)
        fail_msg("rejected: %s", err);
    assert_int_equal(status, 200);
    /* Only what the engine keeps is in the spec. */
    assert_null(cJSON_GetObjectItem(spec, "blueprint_id"));
    assert_null(cJSON_GetObjectItem(spec, "secrets"));
    assert_non_null(cJSON_GetObjectItem(spec, "mounts"));
    cJSON_Delete(spec);
    spec = validate("{}", &status, err, sizeof(err));
    assert_non_null(spec);
    assert_non_null(cJSON_GetObjectItem(spec, "launch_parameters"));
    cJSON_Delete(spec);
}

static void test_create_invalid(void **state)
{
    (void)state;
    expect_reject("[]", "JSON object");
    expect_reject("{\"nmae\":1}", "unknown field 'nmae'");
    expect_reject("{\"name\":1}", "'name' must be a string");
    expect_reject("{\"metadata\":[]}", "'metadata' must be an object");
    expect_reject("{\"metadata\":{\"a\":true}}",
                  "'metadata.a' must be a string");
    expect_reject("{\"environment_variables\":{\"A-B\":\"x\"}}",
                  "not a valid variable name");
    expect_reject(
        "{\"launch_parameters\":{\"resource_size_request\":\"small\"}}",
        "upper case");
    expect_reject(
        "{\"launch_parameters\":{\"resource_size_request\":\"CUSTOM_SIZE\","
        "\"custom_cpu_cores\":3,\"custom_gb_memory\":8}}",
        "custom_cpu_cores must be");
    expect_reject(
        "{\"launch_parameters\":{\"resource_size_request\":\"CUSTOM_SIZE\","
        "\"custom_cpu_cores\":2,\"custom_gb_memory\":3}}",
        "custom_gb_memory must be 1 or");
    expect_reject(
        "{\"launch_parameters\":{\"resource_size_request\":\"CUSTOM_SIZE\","
        "\"custom_cpu_cores\":4,\"custom_gb_memory\":4}}",
        "2 to 8 GiB per CPU");
    expect_reject("{\"launch_parameters\":{\"custom_disk_size\":3}}",
                  "even number");
    expect_reject("{\"launch_parameters\":{\"keep_alive_time_seconds\":1.5}}",
                  "whole number");
    expect_reject("{\"launch_parameters\":{\"keep_alive_time_seconds\":0}}",
                  "between 1 and 172800");
    expect_reject("{\"launch_parameters\":{\"launch_commands\":\"ls\"}}",
                  "array of strings");
    expect_reject("{\"launch_parameters\":{\"launch_commands\":[1]}}",
                  "'launch_commands[0]'");
    expect_reject("{\"launch_parameters\":{\"architecture\":\"arm64\"}}",
                  "x86_64");
    expect_reject(
        "{\"launch_parameters\":{\"after_idle\":{\"idle_time_seconds\":5}}}",
        "needs both");
    expect_reject("{\"launch_parameters\":{\"lifecycle\":{\"after_idle\":{"
                  "\"idle_time_seconds\":5,"
                  "\"on_idle\":\"nap\"}}}}",
                  "on_idle");
    expect_reject("{\"launch_parameters\":{\"network_policy_id\":\"npol_x\"}}",
                  "npol_local_deny_all");
    /* Root is a devbox user under runc (uid 0 inside); a root that is not
     * uid 0 is refused. */
    expect_reject("{\"launch_parameters\":{\"user_parameters\":{\"username\":"
                  "\"root\",\"uid\":5}}}",
                  "uid 0 is the user");
    expect_reject("{\"blueprint_id\":5}", "blueprint_id");
    expect_reject("{\"snapshot_id\":[]}", "snapshot_id");
    expect_reject("{\"mcp\":{\"A\":{}}}", "must be {mcp_config");
    expect_reject("{\"gateways\":{\"A\":{}}}",
                  "not supported by the local engine");
    expect_reject("{\"secrets\":{\"A\":5}}", "secrets");
    expect_reject("{\"secrets\":{\"1A\":\"B\"}}", "not a valid variable name");
    expect_reject("{\"secrets\":{\"A\":\"b-c\"}}", "not a valid secret name");
    expect_reject(
        "{\"secrets\":{\"A\":\"B\"},\"environment_variables\":{\"A\":\"x\"}}",
        "both environment_variables and secrets");
    expect_reject("{\"mounts\":[{\"type\":\"object_mount\"}]}",
                  "mounts[0].object_id");
    expect_reject(
        "{\"mounts\":[{\"type\":\"object_mount\",\"object_id\":\"obj_a\","
        "\"object_path\":\"rel\"}]}",
        "mounts[0].object_path must be an absolute path");
    expect_reject("{\"mounts\":[{\"type\":\"code_mount\"}]}", "file_mount");
    expect_reject("{\"mounts\":[{\"type\":\"file_mount\",\"target\":\"rel\","
                  "\"content\":\"x\"}]}",
                  "absolute");
    expect_reject("{\"mounts\":{}}", "must be an array");
    expect_reject("{\"file_mounts\":{\"rel\":\"x\"}}", "absolute path");
}

static void test_page(void **state)
{
    const char *ids[] = {"e", "d", "c", "b", "a"};
    size_t first, count;
    int more;
    char err[256];

    (void)state;
    assert_int_equal(
        api_page(ids, 5, NULL, 2, &first, &count, &more, err, sizeof(err)), 0);
    assert_int_equal(first, 0);
    assert_int_equal(count, 2);
    assert_true(more);
    assert_int_equal(
        api_page(ids, 5, "d", 2, &first, &count, &more, err, sizeof(err)), 0);
    assert_int_equal(first, 2);
    assert_int_equal(count, 2);
    assert_true(more);
    assert_int_equal(
        api_page(ids, 5, "b", 2, &first, &count, &more, err, sizeof(err)), 0);
    assert_int_equal(first, 4);
    assert_int_equal(count, 1);
    assert_false(more);
    assert_int_equal(
        api_page(ids, 5, "a", 2, &first, &count, &more, err, sizeof(err)), 0);
    assert_int_equal(count, 0);
    assert_false(more);
    assert_int_equal(
        api_page(ids, 0, NULL, 20, &first, &count, &more, err, sizeof(err)), 0);
    assert_int_equal(count, 0);
    assert_int_equal(
        api_page(ids, 5, "zz", 2, &first, &count, &more, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "starting_after"));
}

static void test_sse_chunk(void **state)
{
    char buf[256];
    size_t n;

    (void)state;
    n = api_sse_chunk(buf, sizeof(buf), "a\"b\nc", 5, 42);
    assert_true(n > 0);
    assert_string_equal(buf,
                        "data: {\"output\":\"a\\\"b\\nc\",\"offset\":42}\n\n");
    /* An event that does not fit is refused, not cut. */
    assert_int_equal(api_sse_chunk(buf, 20, "0123456789012345678901234", 25, 0),
                     0);
}

static const char mp_body[] =
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"path\"\r\n\r\n"
    "dir/f.bin\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"f.bin\"\r\n"
    "Content-Type: application/octet-stream\r\n\r\n"
    "\x00\x01\r\n--Xy\xff\r\n"
    "--XyZ--\r\n";

static void test_multipart(void **state)
{
    struct multipart_part parts[4];
    char boundary[80];
    char err[256];
    size_t n = 0;

    (void)state;
    assert_int_equal(multipart_boundary("multipart/form-data; boundary=XyZ",
                                        boundary, sizeof(boundary)),
                     0);
    assert_string_equal(boundary, "XyZ");
    assert_int_equal(multipart_boundary("multipart/form-data; boundary=\"q r\"",
                                        boundary, sizeof(boundary)),
                     0);
    assert_string_equal(boundary, "q r");
    assert_int_equal(
        multipart_boundary("application/json", boundary, sizeof(boundary)), -1);
    assert_int_equal(
        multipart_boundary("multipart/form-data", boundary, sizeof(boundary)),
        -1);
    assert_int_equal(multipart_parse(mp_body, sizeof(mp_body) - 1, "XyZ", parts,
                                     4, &n, err, sizeof(err)),
                     0);
    assert_int_equal(n, 2);
    assert_string_equal(parts[0].name, "path");
    assert_int_equal(parts[0].len, 9);
    assert_memory_equal(parts[0].data, "dir/f.bin", 9);
    assert_string_equal(parts[1].name, "file");
    assert_string_equal(parts[1].filename, "f.bin");
    assert_int_equal(parts[1].len, 9);
    assert_memory_equal(parts[1].data, "\x00\x01\r\n--Xy\xff", 9);
    /* Truncated and malformed bodies fail with a message. */
    assert_int_equal(
        multipart_parse(mp_body, 40, "XyZ", parts, 4, &n, err, sizeof(err)),
        -1);
    assert_int_equal(
        multipart_parse("nothing", 7, "XyZ", parts, 4, &n, err, sizeof(err)),
        -1);
    assert_int_equal(multipart_parse(mp_body, sizeof(mp_body) - 1, "XyZ", parts,
                                     1, &n, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "too many"));
}

/* Mutation fuzz: random byte flips, truncations and insertions of the
 * boundary never crash or read out of bounds (run under ASan). */
static void test_multipart_fuzz(void **state)
{
    const size_t len = sizeof(mp_body) - 1;
    struct multipart_part parts[4];
    char err[256];
    unsigned seed = 12345;
    int round;

    (void)state;
    for (round = 0; round < 20000; round++) {
        size_t cut = (size_t)rand_r(&seed) % (len + 1);
        char *buf = malloc(len + 8);
        size_t n = 0;
        int flips = rand_r(&seed) % 4;
        int i;

        assert_non_null(buf);
        memcpy(buf, mp_body, len);
        for (i = 0; i < flips && cut > 0; i++)
            buf[(size_t)rand_r(&seed) % cut] = (char)rand_r(&seed);
        if (rand_r(&seed) % 5 == 0 && cut > 6)
            memcpy(buf + (size_t)rand_r(&seed) % (cut - 5), "--XyZ", 5);
        /* Exactly cut bytes are valid: copy to a tight buffer for ASan. */
        {
            char *tight = malloc(cut ? cut : 1);

            memcpy(tight, buf, cut);
            if (multipart_parse(tight, cut, "XyZ", parts, 4, &n, err,
                                sizeof(err)) == 0) {
                size_t k;

                for (k = 0; k < n; k++)
                    assert_true(parts[k].data >= tight &&
                                parts[k].data + parts[k].len <= tight + cut);
            }
            free(tight);
        }
        free(buf);
    }
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_tail(void **state)
{
    char path[] = "/tmp/devboxd-tail-XXXXXX";
    int fd = mkstemp(path);
    char *t = NULL;
    int trunc = 0;

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    write_file(path, "1\n2\n3\n4\n");
    t = engine_tail(path, 2, &trunc);
    assert_string_equal(t, "3\n4\n");
    assert_true(trunc);
    free(t);
    t = engine_tail(path, 4, &trunc);
    assert_string_equal(t, "1\n2\n3\n4\n");
    assert_false(trunc);
    free(t);
    t = engine_tail(path, 100, &trunc);
    assert_string_equal(t, "1\n2\n3\n4\n");
    assert_false(trunc);
    free(t);
    write_file(path, "a\nno newline");
    t = engine_tail(path, 1, &trunc);
    assert_string_equal(t, "no newline");
    assert_true(trunc);
    free(t);
    write_file(path, "");
    t = engine_tail(path, 5, &trunc);
    assert_string_equal(t, "");
    assert_false(trunc);
    free(t);
    unlink(path);
    t = engine_tail(path, 5, &trunc);
    assert_string_equal(t, "");
    free(t);
}

static void test_query(void **state)
{
    struct http_request req;

    (void)state;
    memset(&req, 0, sizeof(req));
    assert_int_equal(
        http_parse_query(&req, "offset=12&status=running&m%5Bk%5D=a+b%21&flag"),
        0);
    assert_string_equal(http_request_query(&req, "offset"), "12");
    assert_string_equal(http_request_query(&req, "status"), "running");
    assert_string_equal(http_request_query(&req, "m[k]"), "a b!");
    assert_string_equal(http_request_query(&req, "flag"), "");
    assert_null(http_request_query(&req, "none"));
    http_request_clear(&req);
}

static void call(struct engine *eng, const char *method, const char *path,
                 const char *auth, int trusted, struct http_response *resp)
{
    struct http_request req;

    memset(&req, 0, sizeof(req));
    memset(resp, 0, sizeof(*resp));
    req.method = strdup(method);
    req.path = strdup(path);
    req.trusted = trusted;
    if (auth != NULL) {
        req.headers = calloc(1, sizeof(*req.headers));
        req.headers[0].name = strdup("authorization");
        req.headers[0].value = strdup(auth);
        req.n_headers = 1;
    }
    api_handle(eng, &req, resp);
    http_request_clear(&req);
}

/* A devbox whose stop worker took its sandbox while its status still reads
 * running: a command or a file call meets a state change (409), not a bad
 * argument (400). */
static void test_being_stopped(void **state)
{
    struct engine eng;
    struct devbox box;
    struct http_request req;
    struct http_response resp;
    static const char *const calls[][2] = {
        {"/v1/devboxes/dbx_stopping/execute_async", "{\"command\":\"true\"}"},
        {"/v1/devboxes/dbx_stopping/write_file_contents",
         "{\"file_path\":\"/tmp/x\",\"contents\":\"x\"}"},
        {NULL, NULL}};
    size_t i;

    (void)state;
    memset(&eng, 0, sizeof(eng));
    memset(&box, 0, sizeof(box));
    pthread_mutex_init(&eng.lock, NULL);
    pthread_cond_init(&eng.changed, NULL);
    snprintf(box.id, sizeof(box.id), "dbx_stopping");
    box.status = DBX_RUNNING;
    box.busy = 1;
    box.refs = 1;
    box.spec = cJSON_CreateObject();
    eng.boxes = &box;
    for (i = 0; calls[i][0] != NULL; i++) {
        memset(&req, 0, sizeof(req));
        memset(&resp, 0, sizeof(resp));
        req.method = strdup("POST");
        req.path = strdup(calls[i][0]);
        req.trusted = 1;
        req.body = strdup(calls[i][1]);
        req.body_len = strlen(req.body);
        api_handle(&eng, &req, &resp);
        if (resp.status != 409 || strstr(resp.body, "is being stopped") == NULL)
            fail_msg("%s: %d %s", calls[i][0], resp.status, resp.body);
        http_response_clear(&resp);
        http_request_clear(&req);
    }
    cJSON_Delete(box.spec);
    pthread_mutex_destroy(&eng.lock);
    pthread_cond_destroy(&eng.changed);
}

static void test_router(void **state)
{
    struct engine eng;
    struct http_response resp;

    (void)state;
    memset(&eng, 0, sizeof(eng));
    pthread_mutex_init(&eng.lock, NULL);
    pthread_cond_init(&eng.changed, NULL);
    eng.api_key = strdup("ak_test");
    call(&eng, "GET", "/v1/devboxes", NULL, 0, &resp);
    assert_int_equal(resp.status, 401);
    assert_non_null(strstr(resp.body, "\"message\""));
    assert_null(strstr(resp.body, "ak_test"));
    http_response_clear(&resp);
    call(&eng, "GET", "/v1/devboxes", "Bearer ak_tesT", 0, &resp);
    assert_int_equal(resp.status, 401);
    http_response_clear(&resp);
    call(&eng, "GET", "/v1/devboxes", "Bearer ak_test", 0, &resp);
    assert_int_equal(resp.status, 200);
    assert_non_null(strstr(resp.body, "\"devboxes\":[]"));
    assert_non_null(strstr(resp.body, "\"has_more\":false"));
    http_response_clear(&resp);
    call(&eng, "GET", "/v1/devboxes", NULL, 1,
         &resp); /* unix socket: trusted */
    assert_int_equal(resp.status, 200);
    http_response_clear(&resp);
    call(&eng, "GET", "/v1/devboxes/dbx_none", NULL, 1, &resp);
    assert_int_equal(resp.status, 404);
    assert_non_null(strstr(resp.body, "dbx_none not found"));
    http_response_clear(&resp);
    call(&eng, "GET", "/v1/devboxes/dbx_none/executions/exn_1", NULL, 1, &resp);
    assert_int_equal(resp.status, 404);
    http_response_clear(&resp);
    call(&eng, "PUT", "/v1/devboxes", NULL, 1, &resp);
    assert_int_equal(resp.status, 501);
    http_response_clear(&resp);
    call(&eng, "GET", "/v2/x", NULL, 1, &resp);
    assert_int_equal(resp.status, 501);
    assert_non_null(strstr(resp.body, "GET /v2/x is not implemented"));
    http_response_clear(&resp);
    call(&eng, "GET", "/v1/agents", NULL, 1, &resp);
    assert_int_equal(resp.status, 501);
    assert_non_null(strstr(resp.body, "\"code\":\"not_implemented\""));
    http_response_clear(&resp);
    call(&eng, "GET", "/v1/devboxes?x=1", NULL, 1, &resp);
    http_response_clear(&resp);
    free(eng.api_key);
    pthread_mutex_destroy(&eng.lock);
    pthread_cond_destroy(&eng.changed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_valid),
        cmocka_unit_test(test_create_invalid),
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_sse_chunk),
        cmocka_unit_test(test_multipart),
        cmocka_unit_test(test_multipart_fuzz),
        cmocka_unit_test(test_tail),
        cmocka_unit_test(test_query),
        cmocka_unit_test(test_router),
        cmocka_unit_test(test_being_stopped),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
