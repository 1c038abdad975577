/*
 * test_admin.c - the admin plugin (secrets, MCP configs) against the fake
 * host table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"

const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(void);

static int setup(void **state)
{
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(), "{}"), RLMCP_OK);
    return 0;
}

static int teardown(void **state)
{
    fh_unload();
    return 0;
}

static void registers(void **state)
{
    assert_int_equal(fh_tool_count(), 8);
    assert_non_null(fh_tool("list_secrets"));
    assert_non_null(fh_tool("delete_mcp_config"));
    assert_non_null(strstr(fh_tool("list_secrets")->annotations_json,
                           "\"readOnlyHint\":true"));
}

static void create_secret_sends_value_returns_view(void **state)
{
    cJSON *body;
    char *text;

    fh_reset();
    fh_route("POST", "/v1/secrets", 200,
             "{\"id\":\"sec_1\",\"name\":\"GH_TOKEN\",\"create_time_ms\":1,"
             "\"update_time_ms\":1}");
    assert_int_equal(fh_call("create_secret", "{\"name\":\"GH_TOKEN\","
                                              "\"value\":\"s3cr3t\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    body = fh_request_json(fh_find_request("POST", "/v1/secrets"));
    assert_string_equal(cJSON_GetObjectItem(body, "name")->valuestring,
                        "GH_TOKEN");
    assert_string_equal(cJSON_GetObjectItem(body, "value")->valuestring,
                        "s3cr3t");
    text = cJSON_PrintUnformatted(fh_result());
    assert_null(strstr(text, "s3cr3t"));
    assert_non_null(strstr(text, "\"id\":\"sec_1\""));
    free(text);
}

/* A name taken is a conflict whose remedy fits it: another name, or the
 * update tool; never "busy" or force=true. */
static void duplicate_names_get_a_fitting_remedy(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/secrets", 409,
             "{\"message\":\"a secret named GH_TOKEN already exists\"}");
    assert_int_equal(fh_call("create_secret", "{\"name\":\"GH_TOKEN\","
                                              "\"value\":\"x\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_CONFLICT);
    assert_non_null(strstr(fh_error_message(), "already exists"));
    assert_non_null(strstr(fh_error_remedy(), "another name"));
    assert_non_null(strstr(fh_error_remedy(), "update_secret"));
    assert_null(strstr(fh_error_remedy(), "force"));

    fh_reset();
    fh_route("POST", "/v1/mcp-configs", 409,
             "{\"message\":\"an MCP config named x already exists\"}");
    assert_int_equal(fh_call("create_mcp_config",
                             "{\"name\":\"x\",\"endpoint\":\"https://h/mcp\","
                             "\"allowed_tools\":[\"*\"]}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_CONFLICT);
    assert_non_null(strstr(fh_error_remedy(), "another name"));
    assert_non_null(strstr(fh_error_remedy(), "update_mcp_config"));
    assert_null(strstr(fh_error_remedy(), "force"));
}

static void bad_secret_names_never_reach_the_api(void **state)
{
    static const char *const bad[] = {
        "{\"name\":\"1ABC\",\"value\":\"x\"}",
        "{\"name\":\"a-b\",\"value\":\"x\"}",
        "{\"name\":\"../x\",\"value\":\"x\"}",
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fh_reset();
        assert_int_equal(fh_call("update_secret", bad[i]), RLMCP_OK);
        assert_string_equal(fh_error_code(), RLMCP_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(fh_error_message(), "name: string \""));
        assert_non_null(strstr(fh_error_message(),
                               "does not match pattern "
                               "'^[A-Za-z_][A-Za-z0-9_]*$'"));
        assert_int_equal(fh_request_count(), 0);
    }
    fh_reset();
    assert_int_equal(
        fh_call("create_secret", "{\"name\":\"\",\"value\":\"x\"}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_INVALID_ARGUMENT);
    assert_int_equal(fh_request_count(), 0);
    fh_reset();
    assert_int_equal(fh_call("create_secret", "{\"name\":\"A\"}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_INVALID_ARGUMENT);
    assert_int_equal(fh_request_count(), 0);
}

static void update_and_delete_by_name(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/secrets/GH_TOKEN", 200,
             "{\"id\":\"sec_1\",\"name\":\"GH_TOKEN\"}");
    assert_int_equal(fh_call("update_secret", "{\"name\":\"GH_TOKEN\","
                                              "\"value\":\"v2\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_null(cJSON_GetObjectItem(
        fh_request_json(fh_find_request("POST", "/v1/secrets/GH_TOKEN")),
        "name"));
    fh_reset();
    fh_route("POST", "/v1/secrets/GH_TOKEN/delete", 200,
             "{\"id\":\"sec_1\",\"name\":\"GH_TOKEN\"}");
    assert_int_equal(fh_call("delete_secret", "{\"name\":\"GH_TOKEN\"}"),
                     RLMCP_OK);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "deleted")));
    fh_reset();
    fh_route("POST", "/v1/secrets/NOPE/delete", 404,
             "{\"message\":\"secret NOPE not found\"}");
    assert_int_equal(fh_call("delete_secret", "{\"name\":\"NOPE\"}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_NOT_FOUND);
}

static void list_secrets_page(void **state)
{
    fh_reset();
    fh_route("GET", "/v1/secrets?limit=5", 200,
             "{\"secrets\":[{\"id\":\"sec_1\",\"name\":\"A\"}],"
             "\"has_more\":false,\"total_count\":1}");
    assert_int_equal(fh_call("list_secrets", "{\"limit\":5}"), RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(fh_result(), "secrets")), 1);
}

static void mcp_config_bad_input(void **state)
{
    static const char *const bad[] = {
        "{\"name\":\"n\",\"endpoint\":\"ftp://x\",\"allowed_tools\":[\"*\"]}",
        "{\"name\":\"n\",\"endpoint\":\"file:///etc/passwd\","
        "\"allowed_tools\":[\"*\"]}",
        "{\"name\":\"n\",\"endpoint\":\"http://x\",\"allowed_tools\":[]}",
        "{\"name\":\"n\",\"endpoint\":\"http://x\",\"allowed_tools\":[\"*\"],"
        "\"custom_headers\":[{\"name\":\"X-A\",\"value\":\"1\","
        "\"secret\":\"S\"}]}",
        "{\"name\":\"n\",\"endpoint\":\"http://x\",\"allowed_tools\":[\"*\"],"
        "\"custom_headers\":[{\"name\":\"a\",\"value\":\"1\"},{\"name\":\"b\","
        "\"value\":\"1\"},{\"name\":\"c\",\"value\":\"1\"},{\"name\":\"d\","
        "\"value\":\"1\"},{\"name\":\"e\",\"value\":\"1\"},{\"name\":\"f\","
        "\"value\":\"1\"},{\"name\":\"g\",\"value\":\"1\"},{\"name\":\"h\","
        "\"value\":\"1\"},{\"name\":\"i\",\"value\":\"1\"}]}",
        "{\"name\":\"n\",\"allowed_tools\":[\"*\"]}",
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fh_reset();
        assert_int_equal(fh_call("create_mcp_config", bad[i]), RLMCP_OK);
        assert_string_equal(fh_error_code(), RLMCP_ERR_INVALID_ARGUMENT);
        assert_int_equal(fh_request_count(), 0);
    }
    assert_non_null(strstr(fh_error_message(), "endpoint"));
}

static void mcp_config_create_update_delete(void **state)
{
    cJSON *body;

    fh_reset();
    fh_route("POST", "/v1/mcp-configs", 200,
             "{\"id\":\"mcp_1\",\"name\":\"gh\",\"endpoint\":\"https://x/mcp\","
             "\"allowed_tools\":[\"get_*\"],\"auth_mechanism\":{\"type\":"
             "\"bearer\"},\"create_time_ms\":1}");
    assert_int_equal(fh_call("create_mcp_config",
                             "{\"name\":\"gh\",\"endpoint\":\"https://x/mcp\","
                             "\"allowed_tools\":[\"get_*\"],\"custom_headers\":"
                             "[{\"name\":\"X-Team\",\"value\":\"qa\"}]}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    body = fh_request_json(fh_find_request("POST", "/v1/mcp-configs"));
    assert_string_equal(cJSON_GetObjectItem(body, "endpoint")->valuestring,
                        "https://x/mcp");
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(body, "custom_headers")), 1);
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "id")->valuestring,
                        "mcp_1");
    fh_reset();
    fh_route("POST", "/v1/mcp-configs/mcp_1", 200,
             "{\"id\":\"mcp_1\",\"name\":\"gh\"}");
    assert_int_equal(fh_call("update_mcp_config",
                             "{\"mcp_config_id\":\"mcp_1\",\"description\":"
                             "\"d\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    body = fh_request_json(fh_find_request("POST", "/v1/mcp-configs/mcp_1"));
    assert_int_equal(cJSON_GetArraySize(body), 1);
    fh_reset();
    fh_route("POST", "/v1/mcp-configs/mcp_1/delete", 200, "{}");
    assert_int_equal(fh_call("delete_mcp_config", "{\"mcp_config_id\":"
                                                  "\"mcp_1\"}"),
                     RLMCP_OK);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "deleted")));
    fh_reset();
    assert_int_equal(fh_call("delete_mcp_config", "{\"mcp_config_id\":"
                                                  "\"../x\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_INVALID_ARGUMENT);
    assert_int_equal(fh_request_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registers),
        cmocka_unit_test(create_secret_sends_value_returns_view),
        cmocka_unit_test(duplicate_names_get_a_fitting_remedy),
        cmocka_unit_test(bad_secret_names_never_reach_the_api),
        cmocka_unit_test(update_and_delete_by_name),
        cmocka_unit_test(list_secrets_page),
        cmocka_unit_test(mcp_config_bad_input),
        cmocka_unit_test(mcp_config_create_update_delete),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
