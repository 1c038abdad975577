/*
 * test_lifecycle.c - the lifecycle plugin against the fake host table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "rlmcp/plugin.h"

const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(void);

#define RUNNING                                                                \
    "{\"id\":\"dbx_1\",\"status\":\"running\",\"name\":null,"                  \
    "\"metadata\":{}}"

static int setup(void **state)
{
    int rc = fh_load(rlmcp_plugin_descriptor(),
                     "{\"create_wait_seconds\":5,\"min_keep_alive_seconds\":60,"
                     "\"max_keep_alive_seconds\":3600,"
                     "\"default_keep_alive_seconds\":600,"
                     "\"default_metadata\":{\"team\":\"qa\"}}");
    assert_int_equal(rc, RLMCP_OK);
    return 0;
}

static int teardown(void **state)
{
    fh_unload();
    return 0;
}

static void registers_all_tools(void **state)
{
    static const char *const names[] = {
        "create_devbox",   "list_devboxes",     "get_devbox",
        "update_devbox",   "suspend_devbox",    "resume_devbox",
        "shutdown_devbox", "keep_devbox_alive", "get_resource_usage",
        "renew_devbox"};
    size_t i;

    assert_int_equal(fh_tool_count(), 10);
    for (i = 0; i < 10; i++) {
        const struct rlmcp_tool_def *t = fh_tool(names[i]);
        assert_non_null(t);
        assert_non_null(t->output_schema_json);
        assert_non_null(strstr(t->annotations_json, "\"openWorldHint\":true"));
    }
    assert_non_null(strstr(fh_tool("get_devbox")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("list_devboxes")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("get_resource_usage")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("shutdown_devbox")->annotations_json,
                           "\"destructiveHint\":true"));
    assert_non_null(strstr(fh_tool("create_devbox")->annotations_json,
                           "\"readOnlyHint\":false"));
}

static void create_waits_and_sends_body(void **state)
{
    cJSON *body;
    const cJSON *lp;

    fh_reset();
    fh_route("POST", "/v1/devboxes", 200,
             "{\"id\":\"dbx_1\",\"status\":\"provisioning\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"provisioning\"}");
    fh_route("POST", "/v1/devboxes/dbx_1/wait_for_status", 408, "{}");
    fh_route("POST", "/v1/devboxes/dbx_1/wait_for_status", 200, RUNNING);
    fh_route("POST", "/v1/devboxes/dbx_1/write_file_contents", 200,
             "{\"exit_status\":0}");
    assert_int_equal(fh_call("create_devbox",
                             "{\"name\":\"box\",\"blueprint_name\":\"bp\","
                             "\"environment_variables\":{\"A\":\"1\"},"
                             "\"secrets\":{\"TOKEN\":\"GH_TOKEN\"},"
                             "\"mcp\":{\"GH_MCP\":{\"mcp_config\":\"gh\","
                             "\"secret\":\"GH_TOKEN\"}},"
                             "\"resource_size\":\"SMALL\","
                             "\"idle_time_seconds\":300,\"on_idle\":"
                             "\"suspend\",\"metadata\":{\"x\":\"y\"},"
                             "\"files\":{\"/home/user/a.txt\":\"hi\"}}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "status")->valuestring,
                        "running");
    body = fh_request_json(fh_find_request("POST", "/v1/devboxes"));
    assert_string_equal(cJSON_GetObjectItem(body, "name")->valuestring, "box");
    assert_string_equal(
        cJSON_GetObjectItem(body, "blueprint_name")->valuestring, "bp");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "secrets"), "TOKEN")
            ->valuestring,
        "GH_TOKEN");
    assert_string_equal(
        cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(body, "mcp"), "GH_MCP"),
            "mcp_config")
            ->valuestring,
        "gh");
    lp = cJSON_GetObjectItem(body, "launch_parameters");
    assert_int_equal(
        cJSON_GetObjectItem(lp, "keep_alive_time_seconds")->valueint, 600);
    assert_string_equal(
        cJSON_GetObjectItem(lp, "resource_size_request")->valuestring, "SMALL");
    assert_string_equal(
        cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(lp, "lifecycle"),
                                "after_idle"),
            "on_idle")
            ->valuestring,
        "suspend");
    /* default metadata merged under the caller's */
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "metadata"), "team")
            ->valuestring,
        "qa");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "metadata"), "x")
            ->valuestring,
        "y");
    assert_int_equal(
        fh_count_requests("POST", "/v1/devboxes/dbx_1/wait_for_status"), 2);
    body = fh_request_json(
        fh_find_request("POST", "/v1/devboxes/dbx_1/write_file_contents"));
    assert_string_equal(cJSON_GetObjectItem(body, "file_path")->valuestring,
                        "/home/user/a.txt");
}

static void create_not_ready_carries_id(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/devboxes", 200,
             "{\"id\":\"dbx_9\",\"status\":\"provisioning\"}");
    fh_route_n("GET", "/v1/devboxes/dbx_9", 200,
               "{\"id\":\"dbx_9\",\"status\":\"provisioning\"}", 0);
    /* The long poll keeps timing out; the bound is 5 s of real time, so
     * answer with our own ETIMEDOUT to end it like the host would. */
    fh_route_rc("POST", "/v1/devboxes/dbx_9/wait_for_status", RLMCP_ETIMEDOUT,
                0);
    assert_int_equal(fh_call("create_devbox", "{}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "devbox_not_ready");
    assert_non_null(strstr(fh_error_message(), "dbx_9"));
    assert_non_null(strstr(fh_error_message(), "provisioning"));
    assert_non_null(strstr(fh_error_remedy(), "get_devbox"));
}

static void create_failure_is_not_running(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/devboxes", 200,
             "{\"id\":\"dbx_f\",\"status\":\"provisioning\"}");
    fh_route("GET", "/v1/devboxes/dbx_f", 200,
             "{\"id\":\"dbx_f\",\"status\":\"failure\",\"failure_reason\":"
             "\"out_of_memory\"}");
    assert_int_equal(fh_call("create_devbox", "{}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "devbox_not_running");
    assert_non_null(strstr(fh_error_message(), "out_of_memory"));
}

static void create_rejects_bad_input(void **state)
{
    static const char *const bad[] = {
        "{\"keep_alive_time_seconds\":10}",
        "{\"keep_alive_time_seconds\":7200}",
        "{\"keep_alive_time_seconds\":\"60\"}",
        "{\"blueprint_id\":\"a\",\"snapshot_id\":\"b\"}",
        "{\"idle_time_seconds\":30}",
        "{\"bogus\":1}",
        "{\"metadata\":{\"a\":1}}",
        "{\"launch_commands\":\"echo\"}",
        "{\"wait\":\"yes\"}",
        "{\"secrets\":{\"A\":1}}",
        "{\"mcp\":{\"A\":\"cfg\"}}",
        "{\"mcp\":{\"A\":{\"mcp_config\":\"c\"}}}",
        "{\"mcp\":[1]}",
        "[1,2]",
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fh_reset();
        assert_int_equal(fh_call("create_devbox", bad[i]), RLMCP_OK);
        assert_non_null(fh_error_code());
        assert_string_equal(fh_error_code(), "invalid_argument");
        assert_int_equal(fh_request_count(), 0);
    }
    fh_reset();
    fh_call("create_devbox", "{\"keep_alive_time_seconds\":7200}");
    assert_non_null(
        strstr(fh_error_message(), "keep_alive_time_seconds: must be <= 3600"));
}

static void list_hides_shutdown_and_pages(void **state)
{
    const cJSON *arr;

    fh_reset();
    fh_route("GET", "/v1/devboxes?limit=2", 200,
             "{\"devboxes\":[{\"id\":\"dbx_a\",\"status\":\"running\","
             "\"launch_parameters\":{\"x\":1}},{\"id\":\"dbx_b\","
             "\"status\":\"shutdown\"}],\"has_more\":true}");
    assert_int_equal(fh_call("list_devboxes", "{\"limit\":2}"), RLMCP_OK);
    arr = cJSON_GetObjectItem(fh_result(), "devboxes");
    assert_int_equal(cJSON_GetArraySize(arr), 1);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "id")->valuestring,
        "dbx_a");
    /* summaries, not the whole view */
    assert_null(
        cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "launch_parameters"));
    assert_string_equal(
        cJSON_GetObjectItem(fh_result(), "next_starting_after")->valuestring,
        "dbx_b");

    fh_reset();
    fh_route("GET",
             "/v1/devboxes?limit=20&status=shutdown&starting_after=dbx_b", 200,
             "{\"devboxes\":[{\"id\":\"dbx_c\",\"status\":\"shutdown\"}],"
             "\"has_more\":false}");
    assert_int_equal(fh_call("list_devboxes",
                             "{\"status\":\"shutdown\",\"starting_after\":"
                             "\"dbx_b\"}"),
                     RLMCP_OK);
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(fh_result(), "devboxes")), 1);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(fh_result(), "has_more")));

    fh_reset();
    fh_route("GET", "/v1/devboxes?limit=20", 200, "{\"ok\":true}");
    assert_int_equal(fh_call("list_devboxes", "{}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "internal");
}

static void get_maps_errors(void **state)
{
    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_nope", 404,
             "{\"message\":\"devbox not found\"}");
    assert_int_equal(fh_call("get_devbox", "{\"devbox_id\":\"dbx_nope\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "not_found");
    assert_non_null(strstr(fh_error_message(), "devbox not found"));
    assert_non_null(strstr(fh_error_message(), "dbx_nope"));

    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1", 401, "{\"message\":\"bad key\"}");
    fh_call("get_devbox", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "unauthenticated");
    assert_non_null(strstr(fh_error_remedy(), "RUNLOOP_API_KEY"));

    fh_reset();
    fh_route_rc("GET", "/v1/devboxes/dbx_1", RLMCP_EHTTP, 1);
    fh_call("get_devbox", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "unavailable");

    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1", 429, "slow down");
    fh_call("get_devbox", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "rate_limited");
    assert_non_null(strstr(fh_error_message(), "slow down"));

    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1", 503, "");
    fh_call("get_devbox", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "unavailable");

    fh_reset();
    fh_route_rc("GET", "/v1/devboxes/dbx_1", RLMCP_ECANCELLED, 1);
    assert_int_equal(fh_call("get_devbox", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_ECANCELLED);
    assert_null(fh_error_code());

    /* ids that would escape the path */
    fh_reset();
    fh_call("get_devbox", "{\"devbox_id\":\"../secrets\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    fh_reset();
    fh_call("get_devbox", "{\"devbox_id\":\"a?b=c\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    fh_reset();
    fh_call("get_devbox", "{}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "devbox_id"));
    fh_reset();
    fh_call("get_devbox", "{\"devbox_id\":5}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_int_equal(fh_request_count(), 0);
}

static void shutdown_force_and_no_retry(void **state)
{
    const struct fh_request *r;

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown?force=true", 200,
             "{\"id\":\"dbx_1\",\"status\":\"shutdown\"}");
    assert_int_equal(
        fh_call("shutdown_devbox", "{\"devbox_id\":\"dbx_1\",\"force\":true}"),
        RLMCP_OK);
    r = fh_find_request("POST", "/v1/devboxes/dbx_1/shutdown");
    assert_non_null(r);
    assert_int_equal(r->max_retries, 0);
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "status")->valuestring,
                        "shutdown");

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 409,
             "{\"message\":\"snapshot in progress\"}");
    fh_call("shutdown_devbox", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "conflict");
    assert_non_null(strstr(fh_error_remedy(), "force"));
}

static void suspend_resume_wait(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/suspend", 200,
             "{\"id\":\"dbx_1\",\"status\":\"suspending\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"suspending\"}");
    fh_route("POST", "/v1/devboxes/dbx_1/wait_for_status", 200,
             "{\"id\":\"dbx_1\",\"status\":\"suspended\"}");
    assert_int_equal(fh_call("suspend_devbox", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "status")->valuestring,
                        "suspended");
    assert_non_null(strstr(
        fh_find_request("POST", "/v1/devboxes/dbx_1/wait_for_status")->body,
        "\"suspended\""));

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/resume", 200,
             "{\"id\":\"dbx_1\",\"status\":\"resuming\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200, RUNNING);
    assert_int_equal(fh_call("resume_devbox", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "status")->valuestring,
                        "running");

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/suspend", 200, "");
    assert_int_equal(
        fh_call("suspend_devbox", "{\"devbox_id\":\"dbx_1\",\"wait\":false}"),
        RLMCP_OK);
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "status")->valuestring,
                        "suspending");
    assert_int_equal(fh_request_count(), 1);
}

static void update_keep_alive_usage(void **state)
{
    cJSON *body;

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1", 200, RUNNING);
    assert_int_equal(fh_call("update_devbox",
                             "{\"devbox_id\":\"dbx_1\",\"name\":\"n\","
                             "\"metadata\":{}}"),
                     RLMCP_OK);
    body = fh_request_json(fh_find_request("POST", "/v1/devboxes/dbx_1"));
    assert_string_equal(cJSON_GetObjectItem(body, "name")->valuestring, "n");
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(body, "metadata")));

    fh_reset();
    fh_call("update_devbox", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/keep_alive", 200, "");
    assert_int_equal(fh_call("keep_devbox_alive", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "ok")));

    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1/usage", 200,
             "{\"id\":\"dbx_1\",\"vcpu_seconds\":12.5}");
    assert_int_equal(fh_call("get_resource_usage", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_true(cJSON_GetObjectItem(fh_result(), "vcpu_seconds")->valuedouble ==
                12.5);
}

static void renew_sends_and_reports_expiry(void **state)
{
    cJSON *body;

    /* The engine's answer: lifetime_end_ms becomes expires_at(_ms). */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/renew", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\","
             "\"lifetime_end_ms\":1800000000123}");
    assert_int_equal(fh_call("renew_devbox",
                             "{\"devbox_id\":\"dbx_1\","
                             "\"keep_alive_time_seconds\":600}"),
                     RLMCP_OK);
    body = fh_request_json(fh_find_request("POST", "/v1/devboxes/dbx_1/renew"));
    assert_int_equal(
        cJSON_GetObjectItem(body, "keep_alive_time_seconds")->valueint, 600);
    assert_string_equal(
        cJSON_GetObjectItem(fh_result(), "expires_at")->valuestring,
        "2027-01-15T08:00:00.123Z");
    assert_true(
        cJSON_GetObjectItem(fh_result(), "expires_at_ms")->valuedouble ==
        1800000000123.0);
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "status")->valuestring,
                        "running");

    /* Outside the deployment's range: nothing is sent. */
    fh_reset();
    fh_call("renew_devbox",
            "{\"devbox_id\":\"dbx_1\",\"keep_alive_time_seconds\":7200}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_int_equal(fh_request_count(), 0);

    /* A backend without the route (Runloop's API) while the devbox is
     * there: said as such, with what to do instead. */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/renew", 404,
             "{\"message\":\"Not Found\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200, RUNNING);
    fh_call("renew_devbox",
            "{\"devbox_id\":\"dbx_1\",\"keep_alive_time_seconds\":600}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "no lease renewal"));
    assert_non_null(
        strstr(fh_error_remedy(), "longer keep_alive_time_seconds"));

    /* No such devbox: not_found. */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/renew", 404,
             "{\"message\":\"devbox dbx_1 not found\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 404,
             "{\"message\":\"devbox dbx_1 not found\"}");
    fh_call("renew_devbox",
            "{\"devbox_id\":\"dbx_1\",\"keep_alive_time_seconds\":600}");
    assert_string_equal(fh_error_code(), "not_found");
}

static void bad_config_fails_init(void **state)
{
    static const char *const bad[] = {
        "{\"create_wait_seconds\":0}",
        "{\"min_keep_alive_seconds\":100,\"max_keep_alive_seconds\":50}",
        "{\"default_metadata\":{\"a\":1}}",
        "{\"hide_shutdown\":\"no\"}",
        "{\"account_secrets\":1}",
        "{\"default_keep_alive_seconds\":10}",
        "[]",
    };
    size_t i;

    fh_unload();
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_not_equal(fh_load(rlmcp_plugin_descriptor(), bad[i]),
                             RLMCP_OK);
        assert_non_null(fh_init_error());
        assert_int_equal(fh_tool_count(), 0);
        fh_unload();
    }
    setup(state);
}

/* account_secrets: false drops secrets and mcp from create_devbox. */
static void secrets_can_be_left_out(void **state)
{
    assert_non_null(
        strstr(fh_tool("create_devbox")->input_schema_json, "\"secrets\""));
    fh_unload();
    assert_int_equal(
        fh_load(rlmcp_plugin_descriptor(), "{\"account_secrets\":false}"),
        RLMCP_OK);
    assert_null(
        strstr(fh_tool("create_devbox")->input_schema_json, "\"secrets\""));
    assert_null(strstr(fh_tool("create_devbox")->input_schema_json, "\"mcp\""));
    fh_reset();
    assert_int_equal(fh_call("create_devbox", "{\"secrets\":{\"A\":\"B\"}}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_int_equal(fh_request_count(), 0);
    fh_unload();
    setup(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registers_all_tools),
        cmocka_unit_test(create_waits_and_sends_body),
        cmocka_unit_test(create_not_ready_carries_id),
        cmocka_unit_test(create_failure_is_not_running),
        cmocka_unit_test(create_rejects_bad_input),
        cmocka_unit_test(list_hides_shutdown_and_pages),
        cmocka_unit_test(get_maps_errors),
        cmocka_unit_test(shutdown_force_and_no_retry),
        cmocka_unit_test(suspend_resume_wait),
        cmocka_unit_test(update_keep_alive_usage),
        cmocka_unit_test(renew_sends_and_reports_expiry),
        cmocka_unit_test(bad_config_fails_init),
        cmocka_unit_test(secrets_can_be_left_out),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
