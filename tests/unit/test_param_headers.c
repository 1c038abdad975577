/*
 * test_param_headers.c - Mcp-Param-* declarations, value decoding and the
 * check against the arguments (host/tools/param_headers.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "param_headers.h"

/* Headers as "Name: value" lines, looked up without regard to case. */
static const char *lookup(void *user, const char *name)
{
    const char *const *h = user;
    size_t n = strlen(name);

    for (; *h != NULL; h++) {
        if (strncasecmp(*h, name, n) == 0 && (*h)[n] == ':')
            return *h + n + 1;
    }
    return NULL;
}

static const char schema_text[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
    "\"count\":{\"type\":\"integer\",\"x-mcp-header\":\"Count\"},"
    "\"dry\":{\"type\":\"boolean\",\"x-mcp-header\":\"Dry\"},"
    "\"note\":{\"type\":\"string\"}}}";

static int check(const char *args_json, const char *const *headers, char *err,
                 size_t errlen)
{
    cJSON *schema = cJSON_Parse(schema_text);
    cJSON *args = cJSON_Parse(args_json);
    int rc =
        param_headers_check(schema, args, lookup, (void *)headers, err, errlen);

    cJSON_Delete(schema);
    cJSON_Delete(args);
    return rc;
}

static void test_declared(void **state)
{
    static const char *const bad[] = {
        /* not a token */
        "{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":"
        "\"Bad Name\"}}}",
        /* CR/LF: header injection */
        "{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":"
        "\"A\\r\\nX: y\"}}}",
        "{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"\"}}}",
        "{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":7}}}",
        /* not a primitive */
        "{\"properties\":{\"a\":{\"type\":\"object\",\"x-mcp-header\":\"A\"}}}",
        "{\"properties\":{\"a\":{\"x-mcp-header\":\"A\"}}}",
        /* the same name twice, in another case */
        "{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Zone\"}"
        ","
        "\"b\":{\"type\":\"string\",\"x-mcp-header\":\"zone\"}}}",
    };
    char err[512];
    cJSON *s = NULL;
    size_t i;

    (void)state;
    s = cJSON_Parse(schema_text);
    assert_int_equal(param_headers_declared(s, err, sizeof(err)), 3);
    cJSON_Delete(s);
    s = cJSON_Parse("{\"type\":\"object\"}");
    assert_int_equal(param_headers_declared(s, err, sizeof(err)), 0);
    cJSON_Delete(s);
    for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        s = cJSON_Parse(bad[i]);
        assert_non_null(s);
        err[0] = '\0';
        assert_int_equal(param_headers_declared(s, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "x-mcp-header"));
        cJSON_Delete(s);
    }
}

static void test_decode(void **state)
{
    char err[256];
    size_t len = 0;
    char *v = NULL;

    (void)state;
    v = param_header_decode("  Hello \t", &len, err, sizeof(err));
    assert_string_equal(v, "Hello");
    assert_int_equal(len, 5);
    free(v);
    v = param_header_decode("=?base64?SGVsbG8=?=", &len, err, sizeof(err));
    assert_string_equal(v, "Hello");
    free(v);
    /* UTF-8 text travels as Base64. */
    v = param_header_decode("=?base64?w6k=?=", &len, err, sizeof(err));
    assert_string_equal(v, "\xc3\xa9");
    assert_int_equal(len, 2);
    free(v);
    /* A NUL inside counts: the length says so. */
    v = param_header_decode("=?base64?YQBi?=", &len, err, sizeof(err));
    assert_int_equal(len, 3);
    free(v);
    /* Without the exact wrapper: literal. */
    v = param_header_decode("=?base64?SGVsbG8=", &len, err, sizeof(err));
    assert_string_equal(v, "=?base64?SGVsbG8=");
    free(v);
    v = param_header_decode("SGVsbG8=", &len, err, sizeof(err));
    assert_string_equal(v, "SGVsbG8=");
    free(v);
    /* Bad padding, bad characters, padding inside. */
    assert_null(
        param_header_decode("=?base64?SGVsbG8?=", &len, err, sizeof(err)));
    assert_non_null(strstr(err, "Base64"));
    assert_null(
        param_header_decode("=?base64?SGVs!!!bG8=?=", &len, err, sizeof(err)));
    assert_null(
        param_header_decode("=?base64?SG=sbG8=?=", &len, err, sizeof(err)));
    assert_null(param_header_decode("=?base64?S===?=", &len, err, sizeof(err)));
    /* An empty payload is the empty string. */
    v = param_header_decode("=?base64?"
                            "?=",
                            &len, err, sizeof(err));
    assert_string_equal(v, "");
    free(v);
}

static void test_check(void **state)
{
    static const char *const agree[] = {"Mcp-Param-Region: us-west1",
                                        "mcp-param-count:42",
                                        "MCP-PARAM-DRY:true", NULL};
    static const char *const b64[] = {
        "Mcp-Param-Region:=?base64?dXMtd2VzdDE=?=", NULL};
    static const char *const none[] = {NULL};
    static const char *const wrong[] = {"Mcp-Param-Region:eu-west1", NULL};
    static const char *const bad64[] = {
        "Mcp-Param-Region:=?base64?dXMtd2VzdDE?=", NULL};
    static const char *const num[] = {"Mcp-Param-Count:42.0", NULL};
    static const char *const notnum[] = {"Mcp-Param-Count:42x", NULL};
    static const char *const boolcase[] = {"Mcp-Param-Dry:TRUE", NULL};
    char err[512];

    (void)state;
    assert_int_equal(check("{\"region\":\"us-west1\",\"count\":42,\"dry\":true,"
                           "\"note\":\"x\"}",
                           agree, err, sizeof(err)),
                     0);
    assert_int_equal(check("{\"region\":\"us-west1\"}", b64, err, sizeof(err)),
                     0);
    /* Absent or null arguments need no header. */
    assert_int_equal(
        check("{\"note\":\"x\",\"region\":null}", none, err, sizeof(err)), 0);
    assert_int_equal(check("{\"count\":42}", num, err, sizeof(err)), 0);

    assert_int_equal(check("{\"region\":\"us-west1\"}", none, err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "Mcp-Param-Region header is missing"));
    assert_int_equal(
        check("{\"region\":\"us-west1\"}", wrong, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "does not match arguments.region"));
    assert_int_equal(
        check("{\"region\":\"us-west1\"}", bad64, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "Base64"));
    /* A header with no argument behind it disagrees with the body. */
    assert_int_equal(check("{}", wrong, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "absent or null"));
    assert_int_equal(check("{\"count\":42}", notnum, err, sizeof(err)), -1);
    assert_int_equal(check("{\"count\":43}", num, err, sizeof(err)), -1);
    assert_int_equal(check("{\"dry\":true}", boolcase, err, sizeof(err)), -1);
    /* A wrong type is left to the schema check. */
    assert_int_equal(check("{\"region\":{\"a\":1}}", none, err, sizeof(err)),
                     0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_declared),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_check),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
