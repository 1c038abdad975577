/*
 * test_browser.c - run_browser's argument handling and session protocol
 * against the fake host table: which action needs what, what never reaches
 * a devbox, what a new session sends, and how each failure is named.
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

/* An execute answer: the command exited with code, printing out. */
static void route_exec(int code, const char *out)
{
    cJSON *v = cJSON_CreateObject();
    char *text = NULL;

    cJSON_AddStringToObject(v, "execution_id", "exe_1");
    cJSON_AddStringToObject(v, "status", "completed");
    cJSON_AddNumberToObject(v, "exit_status", code);
    cJSON_AddStringToObject(v, "stdout", out);
    cJSON_AddStringToObject(v, "stderr", "");
    text = cJSON_PrintUnformatted(v);
    fh_route("POST", EXEC, 200, text);
    free(text);
    cJSON_Delete(v);
}

/* A new session: its devbox is created with the driver as its entrypoint,
 * and runs. */
static void route_new_session(void)
{
    fh_route("POST", "/v1/devboxes", 200, "{\"id\":\"dbx_1\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
}

/* The devbox view explain_session reads. */
static void route_devbox(const char *status, const char *managed_by)
{
    char body[512];

    snprintf(body, sizeof(body),
             "{\"id\":\"dbx_1\",\"status\":\"%s\",\"metadata\":{%s%s%s}}",
             status, managed_by ? "\"managed_by\":\"" : "",
             managed_by ? managed_by : "", managed_by ? "\"" : "");
    fh_route("GET", "/v1/devboxes/dbx_1", 200, body);
}

/* The command of the last action (the driver request is inside it). */
static const char *last_command(void)
{
    const struct fh_request *r = fh_find_last_request("POST", EXEC);
    cJSON *body = r != NULL ? fh_request_json(r) : NULL;

    assert_non_null(body);
    return cJSON_GetStringValue(cJSON_GetObjectItem(body, "command"));
}

static void registers_one_long_tool(void **state)
{
    const struct rlmcp_tool_def *t = fh_tool("run_browser");

    (void)state;
    assert_int_equal(fh_tool_count(), 1);
    assert_non_null(t);
    assert_true(t->flags & RLMCP_TOOL_LONG);
    assert_non_null(strstr(t->input_schema_json, "\"select_option\""));
    assert_non_null(strstr(t->input_schema_json, "\"session_id\""));
}

static void config_errors_fail_init(void **state)
{
    /* The host checks schemas/config.json; the plugin the rule between
     * the two timeouts. */
    static const struct fh_bad_config bad[] = {
        {"{\"blueprint_name\":\"\"}", "config.blueprint_name"},
        {"{\"blueprint_name\":7}", "config.blueprint_name: expected string"},
        {"{\"executable\":\"chromium\"}", "config.executable"},
        {"{\"action_timeout_ms\":50}", "config.action_timeout_ms"},
        {"{\"action_timeout_ms\":200000,\"max_action_timeout_ms\":1000}",
         "must not exceed max_action_timeout_ms"},
        {"{\"viewport_width\":10}", "config.viewport_width: must be >= 200"},
        {"{\"headless\":false}", "unknown property 'headless'"},
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

static void bad_input_never_reaches_a_devbox(void **state)
{
    static const struct fh_bad_call bad[] = {
        {"{\"action\":\"teleport\"}",
         "action: must be one of \"navigate\", \"click\""},
        {"{}", "action"},
        {"{\"action\":\"click\",\"session_id\":\"dbx_1\"}", "missing selector"},
        {"{\"action\":\"hover\",\"session_id\":\"dbx_1\"}", "missing selector"},
        {"{\"action\":\"fill\",\"session_id\":\"dbx_1\",\"value\":\"x\"}",
         "missing selector"},
        {"{\"action\":\"fill\",\"session_id\":\"dbx_1\",\"selector\":\"#a\"}",
         "missing value"},
        {"{\"action\":\"get_attribute\",\"session_id\":\"dbx_1\","
         "\"selector\":\"#a\"}",
         "missing value"},
        {"{\"action\":\"get_attribute\",\"session_id\":\"dbx_1\","
         "\"selector\":\"#a\",\"value\":\"\"}",
         "must not be empty"},
        {"{\"action\":\"navigate\"}", "missing value"},
        {"{\"action\":\"navigate\",\"value\":\"javascript:alert(1)\"}", "URL"},
        {"{\"action\":\"navigate\",\"value\":\"ftp://x\"}", "URL"},
        {"{\"action\":\"navigate\",\"value\":\"http://x\",\"selector\":"
         "\"#a\"}",
         "takes no selector"},
        {"{\"action\":\"click\",\"selector\":\"#a\",\"value\":\"b\"}",
         "takes no value"},
        {"{\"action\":\"close\"}", "missing session_id"},
        {"{\"action\":\"close\",\"session_id\":\"dbx_1\",\"value\":\"x\"}",
         "takes no value"},
        {"{\"action\":\"get_text\",\"session_id\":\"../x\"}", "session_id"},
        {"{\"action\":\"scroll\",\"value\":\"down a bit\"}", "pixels"},
        {"{\"action\":\"scroll\",\"value\":\"10\",\"selector\":\"#a\"}",
         "not both"},
        {"{\"action\":\"wait_for_selector\",\"selector\":\"#a\","
         "\"value\":\"shiny\"}",
         "visible (default)"},
        {"{\"action\":\"click\",\"selector\":\"\"}", "selector must be"},
        {"{\"action\":\"click\",\"selector\":\"#a\",\"full_page\":true}",
         "full_page"},
        {"{\"action\":\"click\",\"selector\":\"#a\",\"timeout_ms\":5}",
         "timeout_ms"},
        {"{\"action\":\"click\",\"selector\":\"#a\",\"timeout_ms\":"
         "9999999}",
         "timeout_ms"},
        {"{\"action\":\"click\",\"selector\":\"#a\",\"extra\":1}", "extra"},
    };
    char *why = NULL;

    (void)state;
    why = fh_call_refusals("run_browser", bad, sizeof(bad) / sizeof(bad[0]));
    if (why != NULL)
        fail_msg("%s", why);
}

static void screenshot_paths_stay_inside_the_devbox(void **state)
{
    static const char *const bad[] = {
        "shot.png",
        "../shot.png",
        "~/shot.png",
        "/home/user/../../x.png",
        "/home/..",
        "/",
        "/.",
        "/proc/self/x.png",
        "/sys/x.png",
        "/dev/shm/x.png",
        "file:///tmp/x.png",
        "/tmp/x.gif",
        "/tmp/x",
        "/tmp/x.png/",
        "/tmp/a\nb.png",
    };
    char args[256];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *o = cJSON_CreateObject();
        char *text = NULL;

        cJSON_AddStringToObject(o, "action", "screenshot");
        cJSON_AddStringToObject(o, "session_id", "dbx_1");
        cJSON_AddStringToObject(o, "value", bad[i]);
        text = cJSON_PrintUnformatted(o);
        snprintf(args, sizeof(args), "%s", text);
        free(text);
        cJSON_Delete(o);
        fh_reset();
        assert_int_equal(fh_call("run_browser", args), RLMCP_OK);
        if (fh_error_code() == NULL)
            fail_msg("accepted screenshot path %s", bad[i]);
        assert_string_equal(fh_error_code(), RLMCP_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(fh_error_message(), "cannot save"));
        assert_int_equal(fh_request_count(), 0);
    }
}

static void first_action_starts_a_session(void **state)
{
    cJSON *body = NULL;
    const char *cmd = NULL;

    (void)state;
    fh_reset();
    route_new_session();
    route_exec(0, "{\"ok\":true,\"url\":\"http://x/\",\"title\":\"X\","
                  "\"status\":200}\n");
    assert_int_equal(fh_call("run_browser",
                             "{\"action\":\"navigate\",\"value\":"
                             "\"http://x/\"}"),
                     RLMCP_OK);
    if (fh_error_code() != NULL)
        fail_msg("%s: %s", fh_error_code(), fh_error_message());
    body = fh_request_json(fh_find_request("POST", "/v1/devboxes"));
    assert_string_equal(
        cJSON_GetObjectItem(body, "blueprint_name")->valuestring,
        "runloop-mcp-browser");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "metadata"), "managed_by")
            ->valuestring,
        "runloop-mcp.browser");
    /* The driver goes in and starts with the devbox: its entrypoint, so
     * the devbox ends when the driver does (idle_seconds, default 600). */
    cmd = cJSON_GetStringValue(cJSON_GetObjectItem(body, "entrypoint"));
    assert_non_null(cmd);
    assert_non_null(strstr(cmd, "playwright-core"));
    assert_non_null(strstr(cmd, "exec node /tmp/rlmcp-browser/driver.cjs"));
    assert_non_null(
        strstr(cmd, "--width 1280 --height 720 --idle-seconds 600"));
    assert_int_equal(
        fh_count_requests("POST", "/v1/devboxes/dbx_1/execute_async"), 0);
    /* The action: a new session waits for the driver's socket. */
    cmd = last_command();
    assert_non_null(strstr(cmd, "\"action\":\"navigate\""));
    assert_non_null(strstr(cmd, "\"value\":\"http://x/\""));
    assert_null(strstr(cmd, "-lt 0 ]"));
    assert_string_equal(
        cJSON_GetObjectItem(fh_result(), "session_id")->valuestring, "dbx_1");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "new_session")));
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "title")->valuestring,
                        "X");
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/shutdown"),
                     0);
}

static void later_actions_reuse_the_session(void **state)
{
    const char *cmd = NULL;

    (void)state;
    fh_reset();
    route_exec(0, "{\"ok\":true,\"url\":\"u\",\"title\":\"t\"}");
    /* The Python runloop-mcp passes the selector of click as value. */
    assert_int_equal(fh_call("run_browser", "{\"action\":\"click\",\"value\":"
                                            "\"#b\",\"session_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes"), 1);
    cmd = last_command();
    assert_non_null(strstr(cmd, "\"selector\":\"#b\""));
    assert_null(strstr(cmd, "\"value\""));
    /* An existing session does not wait for a socket that is missing. */
    assert_non_null(strstr(cmd, "-lt 0 ]"));
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "new_session")));
}

/* An action still running after the optimistic wait is waited for; an
 * early 408 (a proxy's) pauses a second instead of asking again at once,
 * and one that never completes is a timeout, not a busy loop. */
static void running_actions_are_waited_for(void **state)
{
    static const char wait[] =
        "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=20";

    (void)state;
    fh_reset();
    fh_use_fake_clock(true);
    fh_route("POST", EXEC, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"running\"}");
    fh_route_n("POST", wait, 408, "{\"message\":\"not yet\"}", 1);
    fh_route("POST", wait, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":0,\"stdout\":\"{\\\"ok\\\":true,\\\"url\\\":"
             "\\\"u\\\",\\\"title\\\":\\\"t\\\"}\\n\",\"stderr\":\"\"}");
    assert_int_equal(fh_call("run_browser", "{\"action\":\"click\",\"value\":"
                                            "\"#b\",\"session_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(fh_result(), "title")), "t");
    assert_int_equal(fh_count_requests("POST", wait), 2);
    assert_int_equal(fh_sleep_count(), 1);
    assert_int_equal(fh_sleep_at(0), 1000);

    fh_reset();
    fh_set_deadline_ms(rlmcp_h_now_ms() + 20000);
    fh_route("POST", EXEC, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"running\"}");
    fh_route_n("POST", wait, 408, "{\"message\":\"not yet\"}", 0);
    assert_int_equal(fh_call("run_browser", "{\"action\":\"click\",\"value\":"
                                            "\"#b\",\"session_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "timeout");
    assert_non_null(strstr(fh_error_message(),
                           "the browser action did not finish in time"));
    assert_true(fh_count_requests("POST", wait) <= 25);
    fh_use_fake_clock(false);
}

static void request_text_cannot_end_the_here_document(void **state)
{
    const char *cmd = NULL;
    const char *body = NULL;

    (void)state;
    fh_reset();
    route_exec(0, "{\"ok\":true}");
    assert_int_equal(
        fh_call(
            "run_browser",
            "{\"action\":\"fill\",\"session_id\":\"dbx_1\",\"selector\":"
            "\"#q\",\"value\":\"a\\nRLMCP_BROWSER_EOF\\nrm -rf /\\n'$(x)\"}"),
        RLMCP_OK);
    assert_null(fh_error_code());
    cmd = last_command();
    /* The request is one line; the only end marker is the real one. */
    body = strstr(cmd, "<<'RLMCP_BROWSER_EOF'\n");
    assert_non_null(body);
    body = strchr(body, '\n') + 1;
    assert_non_null(strstr(body, "a\\nRLMCP_BROWSER_EOF\\nrm -rf /\\n'$(x)"));
    assert_string_equal(strchr(body, '\n'), "\nRLMCP_BROWSER_EOF\n");
}

static void driver_errors_are_named(void **state)
{
    (void)state;
    fh_reset();
    route_exec(0, "{\"ok\":false,\"error\":{\"kind\":\"no_match\",\"message\":"
                  "\"no element matches selector \\\"#nope\\\" (waited 1500 "
                  "ms)\"}}");
    assert_int_equal(fh_call("run_browser",
                             "{\"action\":\"click\",\"selector\":\"#nope\","
                             "\"session_id\":\"dbx_1\",\"timeout_ms\":1500}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_NOT_FOUND);
    assert_non_null(strstr(fh_error_message(), "no element matches"));
    assert_non_null(strstr(fh_error_remedy(), "wait_for_selector"));
    assert_non_null(strstr(last_command(), "\"timeout_ms\":1500"));
    fh_reset();
    route_exec(0, "{\"ok\":false,\"error\":{\"kind\":\"timeout\",\"message\":"
                  "\"locator.click: Timeout 10000ms exceeded.\"}}");
    assert_int_equal(fh_call("run_browser",
                             "{\"action\":\"click\",\"selector\":\"#covered\","
                             "\"session_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_TIMEOUT);
    fh_reset();
    route_exec(0, "not json at all");
    assert_int_equal(fh_call("run_browser", "{\"action\":\"get_text\","
                                            "\"session_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_INTERNAL);
}

static void sessions_are_explained(void **state)
{
    static const char get_text[] =
        "{\"action\":\"get_text\",\"session_id\":\"dbx_1\"}";

    (void)state;
    /* Unknown: the devbox does not exist. */
    fh_reset();
    fh_route("POST", EXEC, 404, "{\"message\":\"devbox not found\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 404, "{\"message\":\"nope\"}");
    assert_int_equal(fh_call("run_browser", get_text), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_NOT_FOUND);
    assert_non_null(strstr(fh_error_message(), "unknown session_id"));
    /* Closed: the devbox is shut down (or was left suspended). */
    fh_reset();
    fh_route("POST", EXEC, 400, "{\"message\":\"devbox is suspended\"}");
    route_devbox("suspended", "runloop-mcp.browser");
    assert_int_equal(fh_call("run_browser", get_text), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_DEVBOX_NOT_RUNNING);
    assert_non_null(strstr(fh_error_message(), "is closed"));
    assert_non_null(strstr(fh_error_remedy(), "without session_id"));
    /* Ended by itself: the driver (its entrypoint) exited after
     * idle_seconds without an action, and the devbox with it. */
    fh_reset();
    fh_route("POST", EXEC, 400, "{\"message\":\"devbox is shutdown\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"shutdown\",\"shutdown_reason\":"
             "\"entrypoint_exit\",\"metadata\":{\"managed_by\":"
             "\"runloop-mcp.browser\"}}");
    assert_int_equal(fh_call("run_browser", get_text), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_DEVBOX_NOT_RUNNING);
    assert_non_null(strstr(fh_error_message(), "ended by itself"));
    assert_non_null(strstr(fh_error_message(), "idle_seconds"));
    assert_non_null(strstr(fh_error_remedy(), "without session_id"));
    /* Not a browser session: no driver socket in another devbox. */
    fh_reset();
    route_exec(91, "");
    route_devbox("running", NULL);
    assert_int_equal(fh_call("run_browser", get_text), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fh_error_message(), "not a browser session"));
    /* Running, but the browser is gone (curl could not connect). */
    fh_reset();
    route_exec(7, "");
    route_devbox("running", "runloop-mcp.browser");
    assert_int_equal(fh_call("run_browser", get_text), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_DEVBOX_NOT_RUNNING);
    assert_non_null(strstr(fh_error_message(), "no longer running"));
    /* Chromium died in a session that worked: the driver said why. */
    fh_reset();
    route_exec(90, "Chromium exited\n");
    route_devbox("running", "runloop-mcp.browser");
    assert_int_equal(fh_call("run_browser", get_text), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_DEVBOX_NOT_RUNNING);
    assert_non_null(strstr(fh_error_message(), "(Chromium exited)"));
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/shutdown"),
                     0);
}

static void a_session_whose_browser_fails_is_shut_down(void **state)
{
    (void)state;
    fh_reset();
    route_new_session();
    route_exec(90, "no Chromium found (looked for /usr/bin/chromium)\n");
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 200, "{}");
    assert_int_equal(fh_call("run_browser",
                             "{\"action\":\"navigate\",\"value\":"
                             "\"about:blank\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_UNAVAILABLE);
    assert_non_null(strstr(fh_error_message(), "no Chromium found"));
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/shutdown"),
                     1);
    /* A devbox that never runs is not kept either. */
    fh_reset();
    fh_route("POST", "/v1/devboxes", 200, "{\"id\":\"dbx_1\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"failure\",\"failure_message\":"
             "\"unknown image\"}");
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 200, "{}");
    assert_int_equal(fh_call("run_browser",
                             "{\"action\":\"navigate\",\"value\":"
                             "\"about:blank\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_DEVBOX_NOT_RUNNING);
    assert_non_null(strstr(fh_error_message(), "unknown image"));
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/shutdown"),
                     1);
    assert_int_equal(fh_count_requests("POST", EXEC), 0);
    /* Cancelled during the first action: the new devbox goes too. */
    fh_reset();
    route_new_session();
    route_exec(0, "{\"ok\":true}");
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 200, "{}");
    fh_cancel_after(2);
    assert_int_equal(fh_call("run_browser",
                             "{\"action\":\"navigate\",\"value\":"
                             "\"about:blank\"}"),
                     RLMCP_ECANCELLED);
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/shutdown"),
                     1);
}

static void screenshot_is_an_image(void **state)
{
    static const unsigned char png[] = {0x89, 'P',  'N',  'G', '\r',
                                        '\n', 0x1a, '\n', 0,   0};
    const cJSON *img = NULL;
    cJSON *dl = NULL;

    (void)state;
    fh_reset();
    route_exec(0, "{\"ok\":true,\"path\":\"/home/user/s.png\",\"bytes\":10,"
                  "\"mime_type\":\"image/png\",\"url\":\"u\",\"title\":\"t\"}");
    fh_route_bytes("POST", "/v1/devboxes/dbx_1/download_file", 200, png,
                   sizeof(png), 0);
    assert_int_equal(fh_call("run_browser", "{\"action\":\"screenshot\","
                                            "\"session_id\":\"dbx_1\","
                                            "\"value\":\"/home/user/s.png\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_non_null(strstr(last_command(), "\"path\":\"/home/user/s.png\""));
    dl = fh_request_json(
        fh_find_request("POST", "/v1/devboxes/dbx_1/download_file"));
    assert_string_equal(cJSON_GetObjectItem(dl, "path")->valuestring,
                        "/home/user/s.png");
    assert_int_equal(fh_content_count(), 1);
    img = fh_content_at(0);
    assert_string_equal(cJSON_GetObjectItem(img, "type")->valuestring, "image");
    assert_string_equal(cJSON_GetObjectItem(img, "mimeType")->valuestring,
                        "image/png");
    assert_string_equal(cJSON_GetObjectItem(img, "data")->valuestring,
                        "iVBORw0KGgoAAA==");
    assert_non_null(strstr(fh_result_text(), "\"session_id\":\"dbx_1\""));
    /* Without a path it goes to the session's own directory. */
    fh_reset();
    route_exec(0, "{\"ok\":true,\"path\":\"/tmp/rlmcp-browser/screenshot.png\","
                  "\"mime_type\":\"image/png\"}");
    fh_route_bytes("POST", "/v1/devboxes/dbx_1/download_file", 200, png,
                   sizeof(png), 0);
    assert_int_equal(fh_call("run_browser", "{\"action\":\"screenshot\","
                                            "\"session_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_non_null(strstr(last_command(),
                           "\"path\":\"/tmp/rlmcp-browser/screenshot.png\""));
}

static void screenshot_over_the_limit_is_too_large(void **state)
{
    unsigned char big[8192];

    (void)state;
    fh_unload();
    assert_int_equal(
        fh_load(rlmcp_plugin_descriptor(), "{\"max_screenshot_bytes\":4096}"),
        RLMCP_OK);
    memset(big, 0xab, sizeof(big));
    route_exec(0, "{\"ok\":true,\"path\":\"/tmp/a.png\"}");
    fh_route_bytes("POST", "/v1/devboxes/dbx_1/download_file", 200, big,
                   sizeof(big), 0);
    assert_int_equal(fh_call("run_browser", "{\"action\":\"screenshot\","
                                            "\"session_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_TOO_LARGE);
    assert_int_equal(fh_content_count(), 0);
}

static void close_shuts_down(void **state)
{
    static const char close[] = "{\"action\":\"close\","
                                "\"session_id\":\"dbx_1\"}";

    (void)state;
    fh_reset();
    route_exec(0, "{\"ok\":true,\"url\":\"u\",\"title\":\"\"}");
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 200, "{}");
    assert_int_equal(fh_call("run_browser", close), RLMCP_OK);
    assert_null(fh_error_code());
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "closed")));
    assert_string_equal(
        cJSON_GetObjectItem(fh_result(), "devbox_status")->valuestring,
        "shutdown");
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/shutdown"),
                     1);
    /* A closed session is never left suspended. */
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/suspend"),
                     0);
    /* A session whose browser died is shut down all the same. */
    fh_reset();
    route_exec(7, "");
    route_devbox("running", "runloop-mcp.browser");
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 200, "{}");
    assert_int_equal(fh_call("run_browser", close), RLMCP_OK);
    assert_null(fh_error_code());
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "closed")));
    assert_true(
        cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "browser_had_exited")));
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/shutdown"),
                     1);
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/suspend"),
                     0);
    /* A session left suspended (by hand, or closed by an older version):
     * close shuts it down. */
    fh_reset();
    fh_route("POST", EXEC, 400, "{\"message\":\"devbox is suspended\"}");
    route_devbox("suspended", "runloop-mcp.browser");
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 200, "{}");
    assert_int_equal(fh_call("run_browser", close), RLMCP_OK);
    assert_null(fh_error_code());
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "closed")));
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/shutdown"),
                     1);
    /* A shutdown the backend refuses: not closed, and said so. */
    fh_reset();
    route_exec(0, "{\"ok\":true}");
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 409,
             "{\"message\":\"snapshot in progress\"}");
    assert_int_equal(fh_call("run_browser", close), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_CONFLICT);
    assert_non_null(strstr(fh_error_message(), "shutting down"));
    /* Already shut down: closed before, nothing to do but say so. */
    fh_reset();
    fh_route("POST", EXEC, 400, "{\"message\":\"devbox is shutdown\"}");
    route_devbox("shutdown", "runloop-mcp.browser");
    assert_int_equal(fh_call("run_browser", close), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_DEVBOX_NOT_RUNNING);
    assert_non_null(strstr(fh_error_message(), "is closed"));
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/shutdown"),
                     0);
}

static void configured_blueprint_and_executable(void **state)
{
    const char *cmd = NULL;

    (void)state;
    fh_unload();
    assert_int_equal(
        fh_load(rlmcp_plugin_descriptor(),
                "{\"blueprint_name\":\"my-browser\",\"executable\":"
                "\"/opt/chrome/chrome\",\"action_timeout_ms\":2500,"
                "\"idle_seconds\":30}"),
        RLMCP_OK);
    route_new_session();
    route_exec(0, "{\"ok\":true}");
    assert_int_equal(fh_call("run_browser", "{\"action\":\"get_text\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(cJSON_GetObjectItem(fh_request_json(fh_find_request(
                                                "POST", "/v1/devboxes")),
                                            "blueprint_name")
                            ->valuestring,
                        "my-browser");
    cmd = cJSON_GetStringValue(cJSON_GetObjectItem(
        fh_request_json(fh_find_request("POST", "/v1/devboxes")),
        "entrypoint"));
    assert_non_null(
        strstr(cmd, "--idle-seconds 30 --executable '/opt/chrome/chrome'"));
    assert_non_null(strstr(last_command(), "\"timeout_ms\":2500"));
    /* get_text without a selector reads the whole page. */
    assert_non_null(strstr(last_command(), "\"selector\":\"body\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(registers_one_long_tool, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(config_errors_fail_init, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(bad_input_never_reaches_a_devbox, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(screenshot_paths_stay_inside_the_devbox,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(first_action_starts_a_session, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(running_actions_are_waited_for, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(later_actions_reuse_the_session, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            request_text_cannot_end_the_here_document, setup, teardown),
        cmocka_unit_test_setup_teardown(driver_errors_are_named, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(sessions_are_explained, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_session_whose_browser_fails_is_shut_down, setup, teardown),
        cmocka_unit_test_setup_teardown(screenshot_is_an_image, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(screenshot_over_the_limit_is_too_large,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(close_shuts_down, setup, teardown),
        cmocka_unit_test_setup_teardown(configured_blueprint_and_executable,
                                        setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
