/* Unit tests for devboxd's tunnels: Host parsing (the routing key of the
 * tunnel listener), spec validation, new TunnelViews and token comparison. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunnels.h"
#include "util.h"

static void parse_ok(const char *host, int want_port, const char *want_key)
{
    char key[64] = "";
    int port = 0;

    if (tunnel_parse_host(host, &port, key, sizeof(key)) != 0)
        fail_msg("rejected %s", host);
    assert_int_equal(port, want_port);
    assert_string_equal(key, want_key);
}

static void parse_bad(const char *host)
{
    char key[64] = "";
    int port = 0;

    if (tunnel_parse_host(host, &port, key, sizeof(key)) == 0)
        fail_msg("accepted %s", host);
}

static void test_parse_host(void **state)
{
    char big[400];

    (void)state;
    parse_ok("8080-abc123.localhost", 8080, "abc123");
    parse_ok("8080-abc123.localhost:4242", 8080, "abc123");
    parse_ok("1-k.localhost.", 1, "k");
    parse_ok("65535-KEY.Tunnel.LocalHost:1", 65535, "key");
    parse_bad("");
    parse_bad("localhost");
    parse_bad("8080-abc.example.com");
    parse_bad("8080-abc.evil.localhost");
    parse_bad("8080abc.localhost");
    parse_bad("-abc.localhost");
    parse_bad("0-abc.localhost");
    parse_bad("08080-abc.localhost");
    parse_bad("65536-abc.localhost");
    parse_bad("999999-abc.localhost");
    parse_bad("80a-abc.localhost");
    parse_bad("8080-.localhost");
    parse_bad("8080-ab_c.localhost");
    parse_bad("8080-ab-c.localhost");
    parse_bad("8080-abc.localhost:");
    parse_bad("8080-abc.localhost:80x");
    parse_bad("8080-abc.localhost\r\nX: y");
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memcpy(big, "80-", 3);
    parse_bad(big);
    {
        /* key longer than the caller's buffer */
        char key[4];
        int port;

        assert_int_not_equal(
            tunnel_parse_host("80-abcdef.localhost", &port, key, sizeof(key)),
            0);
    }
}

static void path_ok(const char *target, int want_port, const char *want_key,
                    size_t want_prefix)
{
    char key[64] = "";
    int port = 0;
    size_t prefix = 0;

    if (tunnel_parse_path(target, &port, key, sizeof(key), &prefix) != 0)
        fail_msg("rejected %s", target);
    assert_int_equal(port, want_port);
    assert_string_equal(key, want_key);
    assert_int_equal(prefix, want_prefix);
}

static void path_bad(const char *target)
{
    char key[64] = "";
    int port = 0;
    size_t prefix = 0;

    if (tunnel_parse_path(target, &port, key, sizeof(key), &prefix) == 0)
        fail_msg("accepted %s", target);
}

static void test_parse_path(void **state)
{
    char big[200];

    (void)state;
    path_ok("/tunnel/8080-abc123", 8080, "abc123", 19);
    path_ok("/tunnel/8080-abc123/", 8080, "abc123", 19);
    path_ok("/tunnel/8080-ABC123/x/y?z=1", 8080, "abc123", 19);
    path_ok("/tunnel/1-k?token=t", 1, "k", 11);
    path_ok("/tunnel/65535-k#f", 65535, "k", 15);
    path_bad("");
    path_bad("/");
    path_bad("/tunnel");
    path_bad("/tunnel/");
    path_bad("/Tunnel/8080-abc");
    path_bad("tunnel/8080-abc");
    path_bad("//tunnel/8080-abc");
    path_bad("http://127.0.0.1/tunnel/8080-abc");
    path_bad("/tunnel/0-abc");
    path_bad("/tunnel/08080-abc");
    path_bad("/tunnel/65536-abc");
    path_bad("/tunnel/8080-");
    path_bad("/tunnel/8080abc/");
    path_bad("/tunnel/8080-a%62c");
    path_bad("/tunnel/8080-ab.c");
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memcpy(big, "/tunnel/80-", 11);
    path_bad(big);
}

static void spec_bad(const char *json, const char *needle)
{
    cJSON *j = cJSON_Parse(json);
    char err[512] = "";

    assert_non_null(j);
    if (tunnel_check_spec(j, "tunnel", err, sizeof(err)) == 0)
        fail_msg("accepted %s", json);
    if (strstr(err, needle) == NULL)
        fail_msg("message for %s lacks '%s': %s", json, needle, err);
    cJSON_Delete(j);
}

static void test_check_spec(void **state)
{
    cJSON *j = cJSON_Parse(
        "{\"auth_mode\":\"authenticated\",\"http_keep_alive\":false,"
        "\"wake_on_http\":true}");
    char err[512] = "";

    (void)state;
    assert_int_equal(tunnel_check_spec(j, "", err, sizeof(err)), 0);
    assert_int_equal(tunnel_check_spec(NULL, "", err, sizeof(err)), 0);
    cJSON_Delete(j);
    spec_bad("{\"auth_mode\":\"public\"}",
             "tunnel.auth_mode \"public\" is not valid");
    spec_bad("{\"auth_mode\":3}", "auth_mode");
    spec_bad("{\"port\":8080}", "unknown field 'tunnel.port'");
    spec_bad("{\"wake_on_http\":\"yes\"}", "wake_on_http");
    spec_bad("[1]", "must be an object");
}

static void test_new_view(void **state)
{
    cJSON *spec = cJSON_Parse("{\"auth_mode\":\"authenticated\"}");
    cJSON *a = tunnel_new_view(spec);
    cJSON *b = tunnel_new_view(NULL);
    const char *ka = cJSON_GetStringValue(cJSON_GetObjectItem(a, "tunnel_key"));
    const char *kb = cJSON_GetStringValue(cJSON_GetObjectItem(b, "tunnel_key"));
    const char *tok =
        cJSON_GetStringValue(cJSON_GetObjectItem(a, "auth_token"));

    (void)state;
    assert_non_null(ka);
    assert_non_null(kb);
    assert_int_equal(strlen(ka), TUNNEL_KEY_LEN);
    assert_int_equal(strspn(ka, "abcdefghijklmnopqrstuvwxyz0123456789"),
                     TUNNEL_KEY_LEN);
    assert_string_not_equal(ka, kb);
    assert_non_null(tok);
    assert_int_equal(strlen(tok), TUNNEL_TOKEN_LEN);
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(b, "auth_mode")), "open");
    assert_null(cJSON_GetObjectItem(b, "auth_token"));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(b, "http_keep_alive")));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(b, "wake_on_http")));
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(b, "create_time_ms")) >
                1.6e12);
    cJSON_Delete(spec);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void test_token_equal(void **state)
{
    (void)state;
    assert_true(util_secret_equal("abc", "abc"));
    assert_false(util_secret_equal("abc", "abd"));
    assert_false(util_secret_equal("abc", "ab"));
    assert_false(util_secret_equal("ab", "abc"));
    assert_false(util_secret_equal("", "a"));
    /* No expected secret means nothing matches, not everything. */
    assert_false(util_secret_equal("", ""));
    assert_false(util_secret_equal("abc", NULL));
    assert_false(util_secret_equal(NULL, "abc"));
}

/* Random text uses only its alphabet, every symbol of it, and two draws
 * differ. */
static void test_random_text(void **state)
{
    char a[4097];
    char b[4097];
    int seen[3] = {0, 0, 0};
    size_t i;

    (void)state;
    util_random_text(a, sizeof(a) - 1, "xyz");
    util_random_text(b, sizeof(b) - 1, "xyz");
    assert_int_equal(strlen(a), sizeof(a) - 1);
    for (i = 0; a[i] != '\0'; i++) {
        assert_non_null(strchr("xyz", a[i]));
        seen[a[i] - 'x']++;
    }
    /* 4096 draws of 3 symbols: each near 1365; 1000 is > 12 sigma away. */
    for (i = 0; i < 3; i++)
        assert_true(seen[i] > 1000 && seen[i] < 1730);
    assert_string_not_equal(a, b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_host),  cmocka_unit_test(test_parse_path),
        cmocka_unit_test(test_check_spec),  cmocka_unit_test(test_new_view),
        cmocka_unit_test(test_token_equal), cmocka_unit_test(test_random_text),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
