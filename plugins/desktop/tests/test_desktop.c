/*
 * test_desktop.c - the computer tool against the fake host table: what
 * each action needs (bad input never reaches a devbox), the command a call
 * runs, how the script's failures are named, screenshots as image content
 * and the viewer's URL through the devbox's tunnel.
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

#define EXEC "/v1/devboxes/dbx_1/execute?last_n=20"

static int setup(void **state)
{
    (void)state;
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(), "{}"), RLMCP_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fh_unload();
    return 0;
}

/* An execute answer: the script exited with code, printing out and err. */
static void route_exec(int code, const char *out, const char *err)
{
    cJSON *v = cJSON_CreateObject();
    char *text = NULL;

    cJSON_AddStringToObject(v, "execution_id", "exe_1");
    cJSON_AddStringToObject(v, "status", "completed");
    cJSON_AddNumberToObject(v, "exit_status", code);
    cJSON_AddStringToObject(v, "stdout", out);
    cJSON_AddStringToObject(v, "stderr", err);
    text = cJSON_PrintUnformatted(v);
    fh_route("POST", EXEC, 200, text);
    free(text);
    cJSON_Delete(v);
}

static const char *last_command(void)
{
    const struct fh_request *r = fh_find_last_request("POST", EXEC);
    cJSON *body = r != NULL ? fh_request_json(r) : NULL;

    assert_non_null(body);
    return cJSON_GetStringValue(cJSON_GetObjectItem(body, "command"));
}

#define OK_LINE                                                                \
    "{\"ok\":true,\"display_width\":1024,\"display_height\":768,\"x\":5,"      \
    "\"y\":6}\n"

#define VIEWER_LINE                                                            \
    "{\"ok\":true,\"display_width\":1024,\"display_height\":768,\"x\":5,"      \
    "\"y\":6,\"viewer_password\":\"Ab3dE6gH\"}\n"

static void registers_one_long_tool(void **state)
{
    const struct rlmcp_tool_def *t = fh_tool("computer");

    (void)state;
    assert_int_equal(fh_tool_count(), 1);
    assert_non_null(t);
    assert_true(t->flags & RLMCP_TOOL_LONG);
    assert_non_null(strstr(t->input_schema_json, "\"left_click_drag\""));
}

static void config_errors_fail_init(void **state)
{
    /* The host checks schemas/config.json; the plugin the VNC port. */
    static const struct fh_bad_config bad[] = {
        {"{\"display_width\":100}", "config.display_width"},
        {"{\"viewer_port\":5900}", "5900"},
        {"{\"x\":1}", "unknown property 'x'"},
    };
    char *why = NULL;

    (void)state;
    fh_unload();
    why = fh_init_refusals(rlmcp_plugin_descriptor(), bad,
                           sizeof(bad) / sizeof(bad[0]));
    if (why != NULL)
        fail_msg("%s", why);
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(), "{}"), RLMCP_OK);
}

/* Each bad call is refused with its message and sends nothing. */
static void bad_input_reaches_no_devbox(void **state)
{
    static const struct fh_bad_call bad[] = {
        {"{\"action\":\"fly\"}", "action"},
        {"{\"action\":\"left_click\",\"coordinate\":[1024,10]}",
         "outside the display (1024x768): x must be 0-1023"},
        {"{\"action\":\"mouse_move\",\"coordinate\":[-1,10]}",
         "outside the display"},
        {"{\"action\":\"mouse_move\"}", "needs argument 'coordinate'"},
        {"{\"action\":\"type\"}", "needs argument 'text' (the text to type)"},
        {"{\"action\":\"type\",\"text\":\"\"}", "needs argument 'text'"},
        {"{\"action\":\"key\"}", "needs argument 'text' (key names"},
        {"{\"action\":\"key\",\"text\":\"ctrl+a; rm\"}", "must be key names"},
        {"{\"action\":\"type\",\"text\":\"a\\u0007b\"}", "control characters"},
        {"{\"action\":\"left_click_drag\",\"coordinate\":[1,1]}",
         "needs argument 'start_coordinate'"},
        {"{\"action\":\"screenshot\",\"coordinate\":[1,1]}",
         "'coordinate' is not used by action screenshot"},
        {"{\"action\":\"wait\",\"text\":\"x\"}", "'text' is not used"},
        {"{\"action\":\"scroll\"}", "needs argument 'scroll_direction'"},
        {"{\"action\":\"hold_key\",\"text\":\"shift\"}",
         "needs argument 'duration'"},
        {"{\"action\":\"left_click\",\"duration\":2}",
         "'duration' is not used"},
        {"{\"action\":\"screenshot\",\"screenshot_width\":2000}",
         "screenshot_width"},
        {"{\"action\":\"screenshot\",\"url\":\"javascript:alert(1)\"}",
         "argument 'url' must be"},
        {"{\"action\":\"screenshot\",\"devbox_id\":\"../x\"}", "devbox_id"},
    };
    char *why = NULL;

    (void)state;
    why = fh_call_refusals("computer", bad, sizeof(bad) / sizeof(bad[0]));
    if (why != NULL)
        fail_msg("%s", why);
}

/* No devbox_id: a desktop devbox is created, then the action runs there. */
static void first_call_creates_a_desktop_devbox(void **state)
{
    const struct fh_request *r = NULL;
    cJSON *body = NULL;
    cJSON *res = NULL;
    const char *cmd = NULL;

    (void)state;
    fh_reset();
    fh_route("POST", "/v1/devboxes", 200, "{\"id\":\"dbx_1\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
    route_exec(0, OK_LINE, "");
    assert_int_equal(fh_call("computer", "{\"action\":\"left_click\","
                                         "\"coordinate\":[5,6],"
                                         "\"text\":\"shift\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    r = fh_find_request("POST", "/v1/devboxes");
    body = fh_request_json(r);
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(body, "blueprint_name")),
        "runloop-mcp-desktop");
    cmd = last_command();
    assert_non_null(strstr(cmd, "ACT=left_click\n"));
    assert_non_null(strstr(cmd, "X=5\nY=6\n"));
    assert_non_null(strstr(cmd, "TEXT='shift'\n"));
    assert_non_null(strstr(cmd, "W=1024\nH=768\n"));
    assert_non_null(strstr(cmd, "xdotool"));
    res = fh_result();
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(res, "devbox_id")), "dbx_1");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(res, "new_devbox")));
    assert_int_equal(cJSON_GetObjectItem(res, "x")->valueint, 5);
}

/* A new devbox whose first action fails is shut down again. */
static void failed_first_call_discards_its_devbox(void **state)
{
    (void)state;
    fh_reset();
    fh_route("POST", "/v1/devboxes", 200, "{\"id\":\"dbx_1\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 200, "{}");
    route_exec(81, "", "the display did not start in 30 s: no screens\n");
    fh_call("computer", "{\"action\":\"screenshot\"}");
    assert_string_equal(fh_error_code(), "unavailable");
    assert_non_null(strstr(fh_error_message(), "no screens"));
    assert_non_null(strstr(fh_error_remedy(), "/tmp/rlmcp-desktop"));
    assert_non_null(fh_find_request("POST", "/v1/devboxes/dbx_1/shutdown"));
}

/* Texts reach the script shell-quoted: no word of them runs. */
static void text_is_quoted(void **state)
{
    (void)state;
    fh_reset();
    route_exec(0, OK_LINE, "");
    fh_call("computer", "{\"action\":\"type\",\"devbox_id\":\"dbx_1\","
                        "\"text\":\"it's $(reboot)\\nnext\"}");
    assert_null(fh_error_code());
    assert_non_null(
        strstr(last_command(), "TEXT='it'\\''s $(reboot)\nnext'\n"));
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/"), 1);
}

/* devboxd runs commands of up to 32 KiB: a text whose quoted form would
 * pass that is refused before any devbox is made, one below it is sent. */
static void text_too_long_for_a_command_is_refused(void **state)
{
    char *args = NULL;
    char *text = malloc(20001);

    (void)state;
    assert_non_null(text);
    memset(text, '\'', 9000);
    text[9000] = '\0';
    args = rlmcp_h_sprintf("{\"action\":\"type\",\"text\":\"%s\"}", text);
    fh_reset();
    fh_call("computer", args);
    assert_string_equal(fh_error_code(), "too_large");
    assert_non_null(strstr(fh_error_message(), "'text' or 'url' is too long"));
    assert_non_null(strstr(fh_error_remedy(), "several type calls"));
    assert_int_equal(fh_request_count(), 0);
    free(args);

    memset(text, 'a', 20000);
    text[20000] = '\0';
    args = rlmcp_h_sprintf(
        "{\"action\":\"type\",\"devbox_id\":\"dbx_1\",\"text\":\"%s\"}", text);
    fh_reset();
    route_exec(0, OK_LINE, "");
    fh_call("computer", args);
    assert_null(fh_error_code());
    assert_true(strlen(last_command()) > 20000);
    free(args);
    free(text);
}

/* Each failure after the command: named, and (under valgrind) nothing
 * kept. */
static void failures_on_the_way_are_named(void **state)
{
    static const unsigned char big[5000] = {0x89, 'P', 'N', 'G'};

    (void)state;
    /* Still running after the optimistic wait: waited for, 408 meaning
     * not yet, then its result. */
    fh_reset();
    fh_use_fake_clock(true);
    fh_route("POST", EXEC, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"running\"}");
    fh_route_n("POST",
               "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=20",
               408, "{\"message\":\"not yet\"}", 1);
    fh_route("POST",
             "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=20",
             200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":0,\"stdout\":\"{\\\"ok\\\":true,\\\"x\\\":1,"
             "\\\"y\\\":2}\\n\",\"stderr\":\"\"}");
    fh_call("computer",
            "{\"action\":\"wait\",\"devbox_id\":\"dbx_1\",\"duration\":30}");
    assert_null(fh_error_code());
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "y")->valueint, 2);

    /* Never completing before the deadline: timeout. */
    fh_reset();
    fh_set_deadline_ms(rlmcp_h_now_ms() + 20000);
    fh_route("POST", EXEC, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"running\"}");
    fh_route_n("POST",
               "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=20",
               408, "{\"message\":\"not yet\"}", 0);
    fh_call("computer",
            "{\"action\":\"wait\",\"devbox_id\":\"dbx_1\",\"duration\":60}");
    assert_string_equal(fh_error_code(), "timeout");
    fh_use_fake_clock(false);

    /* An answer that is not JSON. */
    fh_reset();
    route_exec(0, "garbage\n", "");
    fh_call("computer", "{\"action\":\"cursor_position\","
                        "\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "internal");
    assert_non_null(strstr(fh_error_message(), "not JSON: garbage"));

    /* The screenshot gone, then one over max_screenshot_bytes. */
    fh_reset();
    route_exec(0, "{\"ok\":true,\"shot\":\"/tmp/rlmcp-desktop/shot-a.png\"}\n",
               "");
    fh_route("POST", "/v1/devboxes/dbx_1/download_file", 404,
             "{\"message\":\"no such file\"}");
    fh_call("computer", "{\"action\":\"screenshot\",\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "not_found");
    fh_unload();
    assert_int_equal(
        fh_load(rlmcp_plugin_descriptor(), "{\"max_screenshot_bytes\":4096}"),
        RLMCP_OK);
    fh_reset();
    route_exec(0, "{\"ok\":true,\"shot\":\"/tmp/rlmcp-desktop/shot-a.png\"}\n",
               "");
    fh_route_bytes("POST", "/v1/devboxes/dbx_1/download_file", 200, big,
                   sizeof(big), 0);
    fh_call("computer", "{\"action\":\"screenshot\",\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "too_large");
    assert_non_null(strstr(fh_error_remedy(), "screenshot_width"));

    /* The viewer's tunnel refused. */
    fh_reset();
    route_exec(0, VIEWER_LINE, "");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_1/enable_tunnel", 500,
             "{\"message\":\"no tunnels today\"}");
    fh_call("computer", "{\"action\":\"viewer\",\"devbox_id\":\"dbx_1\"}");
    assert_non_null(fh_error_code());
    assert_non_null(strstr(fh_error_message(), "no tunnels today"));

    /* A new devbox that fails to start is shut down, nothing run. */
    fh_reset();
    fh_route("POST", "/v1/devboxes", 200, "{\"id\":\"dbx_1\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"failure\","
             "\"failure_message\":\"no image\"}");
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 200, "{}");
    fh_call("computer", "{\"action\":\"screenshot\"}");
    assert_string_equal(fh_error_code(), "devbox_not_running");
    assert_non_null(strstr(fh_error_message(), "no image"));
    assert_non_null(fh_find_request("POST", "/v1/devboxes/dbx_1/shutdown"));
    assert_null(fh_find_request("POST", EXEC));
}

static void script_failures_are_named(void **state)
{
    (void)state;
    fh_reset();
    route_exec(80, "", "this devbox has no Xvfb: it is not a desktop devbox\n");
    fh_call("computer", "{\"action\":\"screenshot\",\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "no Xvfb"));
    assert_non_null(strstr(fh_error_remedy(), "runloop-mcp-desktop"));

    fh_reset();
    route_exec(82, "", "unknown key in 'foo': (symbol) No such key name\n");
    fh_call("computer",
            "{\"action\":\"key\",\"devbox_id\":\"dbx_1\",\"text\":\"foo\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "unknown key in 'foo'"));

    fh_reset();
    route_exec(81, "", "the display did not start in 30 s: boom\n");
    fh_call("computer", "{\"action\":\"screenshot\",\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "unavailable");

    fh_reset();
    fh_route("POST", EXEC, 404, "{\"message\":\"no devbox dbx_1\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 404, "{\"message\":\"no\"}");
    fh_call("computer", "{\"action\":\"screenshot\",\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "not_found");
}

static void screenshot_is_image_content(void **state)
{
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', 1, 2, 3};
    const cJSON *img = NULL;
    cJSON *res = NULL;

    (void)state;
    fh_reset();
    route_exec(0,
               "{\"ok\":true,\"display_width\":1024,\"display_height\":768,"
               "\"x\":0,\"y\":0,\"shot\":\"/tmp/rlmcp-desktop/shot-a.png\","
               "\"image_width\":512,\"image_height\":384}\n",
               "");
    fh_route_bytes("POST", "/v1/devboxes/dbx_1/download_file", 200, png,
                   sizeof(png), 0);
    fh_call("computer", "{\"action\":\"screenshot\",\"devbox_id\":\"dbx_1\","
                        "\"screenshot_width\":512}");
    assert_null(fh_error_code());
    assert_non_null(strstr(last_command(), "IW=512\nIH=384\n"));
    img = fh_content_at(0);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(img, "type")),
                        "image");
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(img, "mimeType")),
        "image/png");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(img, "data")),
                        "iVBORwECAw==");
    res = fh_result();
    assert_int_equal(cJSON_GetObjectItem(res, "image_width")->valueint, 512);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(res, "new_devbox")));
}

static void viewer_opens_a_tunnel(void **state)
{
    const struct fh_request *r = NULL;
    cJSON *res = NULL;

    (void)state;
    fh_reset();
    route_exec(0, VIEWER_LINE, "");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_1/enable_tunnel", 200,
             "{\"tunnel_key\":\"k1\",\"auth_mode\":\"open\","
             "\"path_url_template\":"
             "\"http://127.0.0.1:9/tunnel/{port}-{tunnel_key}\"}");
    fh_call("computer", "{\"action\":\"viewer\",\"devbox_id\":\"dbx_1\"}");
    assert_null(fh_error_code());
    r = fh_find_request("POST", "/v1/devboxes/dbx_1/enable_tunnel");
    assert_non_null(r);
    assert_non_null(strstr(r->body, "\"open\""));
    res = fh_result();
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(res, "viewer_url")),
        "http://127.0.0.1:9/tunnel/6080-k1/vnc.html?autoconnect=1&"
        "resize=scale&reconnect=1&view_only=1&path=tunnel%2F6080-k1%2F"
        "websockify#password=Ab3dE6gH");

    /* A viewer without its VNC password is not handed out. */
    fh_reset();
    route_exec(0, OK_LINE, "");
    fh_call("computer", "{\"action\":\"viewer\",\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "internal");
    assert_non_null(strstr(fh_error_message(), "without a usable password"));

    /* An authenticated tunnel stays; the call says why it cannot serve. */
    fh_reset();
    route_exec(0, VIEWER_LINE, "");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\",\"tunnel\":"
             "{\"tunnel_key\":\"k1\",\"auth_mode\":\"authenticated\"}}");
    fh_call("computer", "{\"action\":\"viewer\",\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "conflict");
    assert_non_null(strstr(fh_error_remedy(), "remove_tunnel"));
    assert_null(fh_find_request("POST", "/v1/devboxes/dbx_1/enable_tunnel"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(registers_one_long_tool, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(config_errors_fail_init, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(bad_input_reaches_no_devbox, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(first_call_creates_a_desktop_devbox,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(failed_first_call_discards_its_devbox,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(text_is_quoted, setup, teardown),
        cmocka_unit_test_setup_teardown(text_too_long_for_a_command_is_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(failures_on_the_way_are_named, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(script_failures_are_named, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(screenshot_is_image_content, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(viewer_opens_a_tunnel, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
