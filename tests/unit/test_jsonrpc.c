/*
 * test_jsonrpc.c - JSON-RPC envelope checks, UTF-8 handling, depth limit
 * and message builders (host/protocol/jsonrpc.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "jsonrpc.h"

static void test_utf8(void **state)
{
    size_t bad = 0;

    assert_true(jsonrpc_utf8_valid("plain", 5, NULL));
    assert_true(jsonrpc_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                                   14, NULL));
    assert_false(jsonrpc_utf8_valid("ab\xff", 3, &bad));
    assert_int_equal(bad, 2);
    assert_false(jsonrpc_utf8_valid("\xc0\xaf", 2, NULL));     /* overlong */
    assert_false(jsonrpc_utf8_valid("\xe0\x80\xaf", 3, NULL)); /* overlong */
    assert_false(jsonrpc_utf8_valid("\xed\xa0\x80", 3, NULL)); /* surrogate */
    assert_false(jsonrpc_utf8_valid("\xf4\x90\x80\x80", 4, NULL)); /* >10FFFF */
    assert_false(jsonrpc_utf8_valid("\xe2\x82", 2, &bad)); /* truncated */
    assert_int_equal(bad, 0);
    assert_false(jsonrpc_utf8_valid("\x80", 1, NULL)); /* lone continuation */
}

static void test_sanitize(void **state)
{
    char *s = jsonrpc_utf8_sanitize("a\xff"
                                    "b\xc3\xa9",
                                    5);

    assert_string_equal(s, "a\xef\xbf\xbd"
                           "b\xc3\xa9");
    free(s);
    s = jsonrpc_utf8_sanitize("x\0y", 3); /* NUL would cut the text */
    assert_string_equal(s, "x\xef\xbf\xbdy");
    free(s);
}

static void test_depth(void **state)
{
    static const char s1[] = "{\"a\":[[1]],\"b\":\"[[[[[[\"}";
    char *deep = malloc(20001);
    size_t i;

    assert_int_equal(jsonrpc_depth(s1, strlen(s1), 100), 3);
    assert_int_equal(jsonrpc_depth("\"\\\"[[\"", 6, 100), 0);
    for (i = 0; i < 10000; i++)
        deep[i] = '{';
    /* The scan stops just past the limit. */
    assert_int_equal(jsonrpc_depth(deep, 10000, 1000), 1001);
    free(deep);
}

static void test_ids(void **state)
{
    cJSON *v = cJSON_CreateNumber(42);
    char *key = NULL;

    assert_true(jsonrpc_id_valid(v));
    key = jsonrpc_id_key(v);
    assert_string_equal(key, "42");
    free(key);
    cJSON_SetNumberValue(v, 1.5);
    assert_false(jsonrpc_id_valid(v));
    /* Far outside int64_t: rejected without an undefined conversion. */
    cJSON_SetNumberValue(v, 7.7e61);
    assert_false(jsonrpc_id_valid(v));
    cJSON_SetNumberValue(v, -7.7e61);
    assert_false(jsonrpc_id_valid(v));
    cJSON_Delete(v);
    v = cJSON_CreateString("a\"b");
    assert_true(jsonrpc_id_valid(v));
    key = jsonrpc_id_key(v);
    assert_string_equal(key, "\"a\\\"b\"");
    free(key);
    cJSON_Delete(v);
    v = cJSON_CreateNull();
    assert_false(jsonrpc_id_valid(v));
    cJSON_Delete(v);
    assert_false(jsonrpc_id_valid(NULL));
}

static int parse(const char *s, struct jsonrpc_msg *m, cJSON **bad_id,
                 char *err)
{
    return jsonrpc_parse(s, strlen(s), m, bad_id, err, 256);
}

static void test_kinds(void **state)
{
    struct jsonrpc_msg m;
    cJSON *bad_id = NULL;
    char err[256];

    assert_int_equal(parse("{\"method\":\"initialize\",\"params\":{},"
                           "\"jsonrpc\":\"2.0\",\"id\":0}",
                           &m, &bad_id, err),
                     0);
    assert_int_equal(m.kind, JSONRPC_REQUEST);
    assert_string_equal(m.method, "initialize");
    assert_int_equal(m.id->valueint, 0);
    assert_non_null(m.params);
    jsonrpc_msg_free(&m);

    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"method\":\"n\","
                           "\"params\":null}",
                           &m, &bad_id, err),
                     0);
    assert_int_equal(m.kind, JSONRPC_NOTIFICATION);
    assert_null(m.params);
    jsonrpc_msg_free(&m);

    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{}}",
                           &m, &bad_id, err),
                     0);
    assert_int_equal(m.kind, JSONRPC_RESPONSE);
    assert_non_null(m.result);
    jsonrpc_msg_free(&m);

    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{"
                           "\"code\":1,\"message\":\"x\"}}",
                           &m, &bad_id, err),
                     0);
    assert_int_equal(m.kind, JSONRPC_RESPONSE);
    jsonrpc_msg_free(&m);

    /* A backslash, then the text "u0000": no NUL, accepted as sent. */
    assert_int_equal(parse("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\","
                           "\"params\":{\"t\":\"\\\\u0000\"}}",
                           &m, &bad_id, err),
                     0);
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(m.params, "t")->valuestring,
        "\\u0000");
    jsonrpc_msg_free(&m);
}

struct bad_case {
    const char *msg;
    int code;
    const char *text;
    bool has_id;
};

static void test_bad_inputs(void **state)
{
    static const struct bad_case cases[] = {
        {"", -32700, "invalid JSON", false},
        {"{\"a\":", -32700, "invalid JSON", false},
        {"{} {}", -32700, "after the JSON value", false},
        {"[]", -32600, "batches are not supported since 2025-06-18", false},
        {"42", -32600, "JSON-RPC 2.0 object", false},
        {"{\"id\":1,\"method\":\"ping\"}", -32600, "\"jsonrpc\"", true},
        {"{\"jsonrpc\":2,\"id\":1,\"method\":\"ping\"}", -32600, "\"2.0\"",
         true},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", -32600,
         "must not be null", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", -32600,
         "string or an integer", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":{}}", -32600,
         "\"method\" must be a string", true},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1]}",
         -32602, "must be an object", true},
        {"{\"jsonrpc\":\"2.0\",\"id\":1}", -32600, "needs \"method\"", true},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}", -32600,
         "not both", true},
        {"{\"jsonrpc\":\"2.0\",\"result\":{}}", -32600, "\"id\"", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc3\x28\"}", -32700,
         "UTF-8", false},
        /* cJSON would end the string at the NUL: refused, not cut short. */
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
         "\"params\":{\"text\":\"a\\u0000b\"}}",
         -32602, "holds \\u0000 (byte 65)", true},
        {"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"k\":\"\\u0000\"}"
         "}",
         -32602, "NUL", false},
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        struct jsonrpc_msg m;
        cJSON *bad_id = NULL;
        char err[256];
        int rc = parse(cases[i].msg, &m, &bad_id, err);

        if (rc != cases[i].code || strstr(err, cases[i].text) == NULL ||
            (bad_id != NULL) != cases[i].has_id)
            fail_msg("case %zu (%s): rc %d, err '%s', id %s", i, cases[i].msg,
                     rc, err, bad_id ? "set" : "unset");
        cJSON_Delete(bad_id);
        jsonrpc_msg_free(&m);
    }
}

static void test_deep_nesting(void **state)
{
    char *deep = malloc(20001);
    struct jsonrpc_msg m;
    cJSON *bad_id = NULL;
    char err[256];
    size_t i;

    for (i = 0; i < 10000; i++) {
        deep[i] = '[';
        deep[10000 + i] = ']';
    }
    assert_int_equal(jsonrpc_parse(deep, 20000, &m, &bad_id, err, sizeof(err)),
                     -32700);
    assert_non_null(strstr(err, "deeper than 1000"));
    free(deep);
}

static void test_builders(void **state)
{
    cJSON *id = cJSON_CreateString("x");
    cJSON *data = cJSON_CreateObject();
    char *s = NULL;

    cJSON_AddStringToObject(data, "uri", "a://b");
    s = jsonrpc_error(id, -32002, "not found", data);
    assert_string_equal(s, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{"
                           "\"code\":-32002,\"message\":\"not found\","
                           "\"data\":{\"uri\":\"a://b\"}}}");
    free(s);
    s = jsonrpc_error(NULL, -32700, "bad", NULL);
    assert_string_equal(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{"
                           "\"code\":-32700,\"message\":\"bad\"}}");
    free(s);
    s = jsonrpc_result(id, cJSON_CreateObject());
    assert_string_equal(s, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}");
    free(s);
    s = jsonrpc_notification("notifications/x", NULL);
    assert_string_equal(s,
                        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}");
    free(s);
    cJSON_Delete(data);
    cJSON_Delete(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8),         cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_depth),        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_kinds),        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_deep_nesting), cmocka_unit_test(test_builders),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
