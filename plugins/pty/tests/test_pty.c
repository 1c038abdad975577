/*
 * test_pty.c - the pty plugin against the fake host table, and the
 * terminal-output cleanup on its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../screen.h"
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

static const char *rstr(const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(fh_result(), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* What the host says of a session name outside its schema's pattern. */
#define SESSION_NAME_RULE "does not match pattern '^[A-Za-z0-9_-]+$'"

/* Call and expect invalid_argument mentioning `needle`, with no request. */
static void expect_bad(const char *tool, const char *args, const char *needle)
{
    fh_reset();
    assert_int_equal(fh_call(tool, args), RLMCP_OK);
    if (fh_error_code() == NULL ||
        strcmp(fh_error_code(), "invalid_argument") != 0)
        print_message("%s %s -> %s\n", tool, args,
                      fh_error_code() ? fh_error_code() : "(ok)");
    assert_string_equal(fh_error_code(), "invalid_argument");
    if (needle != NULL && strstr(fh_error_message(), needle) == NULL)
        print_message("message: %s\n", fh_error_message());
    if (needle != NULL)
        assert_non_null(strstr(fh_error_message(), needle));
    assert_int_equal(fh_request_count(), 0);
}

/* Valid arguments: the tool goes on to create a PTY tunnel. */
static void expect_passes(const char *tool, const char *args)
{
    fh_reset();
    assert_int_equal(fh_call(tool, args), RLMCP_OK);
    if (fh_find_request("POST", "/v1/devboxes/dbx_1/create_pty_tunnel") == NULL)
        print_message("%s %s -> %s %s\n", tool, args,
                      fh_error_code() ? fh_error_code() : "(ok)",
                      fh_error_message() ? fh_error_message() : "");
    assert_non_null(
        fh_find_request("POST", "/v1/devboxes/dbx_1/create_pty_tunnel"));
}

static void registers(void **state)
{
    static const char *const names[] = {"pty_connect",   "pty_send_command",
                                        "pty_control",   "create_pty_tunnel",
                                        "enable_tunnel", "get_tunnel_url",
                                        "remove_tunnel"};
    size_t i;

    assert_int_equal(fh_tool_count(), 7);
    for (i = 0; i < 7; i++)
        assert_non_null(fh_tool(names[i]));
    assert_non_null(strstr(fh_tool("get_tunnel_url")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("remove_tunnel")->annotations_json,
                           "\"destructiveHint\":true"));
    assert_non_null(strstr(fh_tool("pty_control")->annotations_json,
                           "\"destructiveHint\":true"));
}

static void session_name_rules(void **state)
{
    char name[300];
    char args[400];

    expect_bad("pty_connect", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"\"}",
               "session_name");
    expect_bad("pty_connect",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"a b\"}",
               SESSION_NAME_RULE);
    expect_bad("pty_connect",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"a/b\"}",
               SESSION_NAME_RULE);
    expect_bad("pty_connect",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"caf\\u00e9\"}",
               SESSION_NAME_RULE);
    memset(name, 'a', 257);
    name[257] = '\0';
    snprintf(args, sizeof(args),
             "{\"devbox_id\":\"dbx_1\",\"session_name\":\"%s\"}", name);
    expect_bad("pty_connect", args, "longer than maxLength 256");
    expect_bad("pty_connect", "{\"session_name\":\"a\"}", "devbox_id");
    expect_bad("pty_connect", "{\"devbox_id\":\"dbx_1\"}", "session_name");

    /* 256 characters of the whole alphabet pass the checks */
    memset(name, 'Z', 256);
    memcpy(name, "az_AZ-09", 8);
    name[256] = '\0';
    snprintf(args, sizeof(args),
             "{\"devbox_id\":\"dbx_1\",\"session_name\":\"%s\"}", name);
    expect_passes("pty_connect", args);
}

static void cols_rows_rules(void **state)
{
    expect_bad("pty_connect",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"cols\":0,"
               "\"rows\":24}",
               "cols");
    expect_bad("pty_connect",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"cols\":80,"
               "\"rows\":1001}",
               "rows");
    expect_bad("pty_connect",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"cols\":80}",
               "both cols and rows");
    expect_bad("pty_connect",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"cols\":"
               "80.5,\"rows\":24}",
               "cols");
    expect_passes("pty_connect", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                                 "\"s\",\"cols\":1000,\"rows\":1}");
}

static void control_rules(void **state)
{
    expect_bad("pty_control",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\"}", "action");
    expect_bad("pty_control",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"action\":"
               "\"explode\"}",
               "must be one of \"resize\", \"signal\", \"close\"");
    expect_bad("pty_control",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"action\":"
               "\"resize\",\"cols\":100}",
               "both cols and rows");
    expect_bad("pty_control",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"action\":"
               "\"resize\",\"cols\":100,\"rows\":0}",
               "rows");
    expect_bad("pty_control",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"action\":"
               "\"signal\"}",
               "signal");
    expect_bad("pty_control",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"action\":"
               "\"signal\",\"signal\":\"SIGFOO\"}",
               "SIGHUP, SIGINT");
    expect_bad("pty_control",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"action\":"
               "\"signal\",\"signal\":\"SIGINT\",\"cols\":3,\"rows\":3}",
               "resize only");
    expect_bad("pty_control",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"action\":"
               "\"close\",\"signal\":\"SIGINT\"}",
               "signal only");
    expect_passes("pty_control", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                                 "\"s\",\"action\":\"signal\",\"signal\":"
                                 "\"INT\"}");
    expect_passes("pty_control", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                                 "\"s\",\"action\":\"resize\",\"cols\":120,"
                                 "\"rows\":40}");
}

static void send_command_rules(void **state)
{
    expect_bad("pty_send_command",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\"}", "command");
    expect_bad("pty_send_command",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"command\":"
               "\"x\",\"max_wait\":0}",
               "max_wait");
    expect_bad("pty_send_command",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"command\":"
               "\"x\",\"max_wait\":601}",
               "max_wait");
    expect_bad("pty_send_command",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\",\"command\":"
               "\"x\",\"quiet_ms\":5}",
               "quiet_ms");
    expect_passes("pty_send_command",
                  "{\"devbox_id\":\"dbx_1\",\"session_name\":\"repl\","
                  "\"command\":\"python3 -i\",\"max_wait\":30.0}");
    /* An empty command only reads what the terminal printed since. */
    expect_passes("pty_send_command",
                  "{\"devbox_id\":\"dbx_1\",\"session_name\":\"repl\","
                  "\"command\":\"\",\"append_newline\":false}");
}

/* ---- ABI 1.1: the session tools through the tunnel services ---------------- */

static void route_tunnel(void)
{
    fh_route("POST", "/v1/devboxes/dbx_1/create_pty_tunnel", 200,
             "{\"tunnel_key\":\"k3y\",\"auth_token\":\"t0k\"}");
}

static void abi10_host_unavailable(void **state)
{
    static const char *const calls[][2] = {
        {"pty_connect", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\"}"},
        {"pty_send_command", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                             "\"s\",\"command\":\"ls\"}"},
        {"pty_control", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\","
                        "\"action\":\"close\"}"}};
    size_t i;

    fh_unload();
    fh_use_abi_1_0(true);
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(), "{}"), RLMCP_OK);
    assert_int_equal(fh_api()->abi_minor, 0);
    for (i = 0; i < 3; i++) {
        fh_reset();
        assert_int_equal(fh_call(calls[i][0], calls[i][1]), RLMCP_OK);
        assert_string_equal(fh_error_code(), "unavailable");
        assert_non_null(strstr(fh_error_message(), "ABI 1.1"));
        assert_non_null(strstr(fh_error_remedy(), "execute_command"));
        assert_int_equal(fh_request_count(), 0);
    }
    /* bad input is still reported as such */
    expect_bad("pty_connect",
               "{\"devbox_id\":\"dbx_1\",\"session_name\":\"a b\"}",
               SESSION_NAME_RULE);
    /* the tunnel tools work on a 1.0 host */
    fh_reset();
    route_tunnel();
    assert_int_equal(fh_call("create_pty_tunnel", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    /* back to a 1.1 host for the other tests */
    fh_unload();
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(), "{}"), RLMCP_OK);
    assert_int_equal(fh_api()->abi_minor, RLMCP_ABI_MINOR);
}

static void connect_flow(void **state)
{
    const struct fh_request *r = NULL;

    fh_reset();
    route_tunnel();
    fh_route("GET", "tunnel/13/pty/s1?cols=100&rows=30", 200,
             "{\"attached\":false,\"created\":true,\"connect_url\":"
             "\"/pty/s1/attach\",\"idle_ttl_seconds\":1800,\"cols\":100,"
             "\"rows\":30,\"session_name\":\"s1\",\"status\":\"running\","
             "\"protocol_version\":\"1\"}");
    assert_int_equal(fh_call("pty_connect",
                             "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s1\","
                             "\"cols\":100,\"rows\":30}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("connect_url"), "/pty/s1/attach");
    assert_string_equal(rstr("session_name"), "s1");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "created")));
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "cols")->valueint, 100);
    assert_null(cJSON_GetObjectItem(fh_result(), "protocol_version"));
    r = fh_find_request("GET", "tunnel/13/pty/s1");
    assert_non_null(r);
    assert_string_equal(r->tunnel_key, "k3y");
    assert_string_equal(r->tunnel_token, "t0k");
    /* the token is not in the result */
    assert_null(strstr(fh_result_text(), "t0k"));

    /* without cols/rows no query */
    fh_reset();
    route_tunnel();
    fh_route("GET", "tunnel/13/pty/s1", 200,
             "{\"attached\":true,\"created\":false,\"connect_url\":"
             "\"/pty/s1/attach\"}");
    fh_call("pty_connect", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s1\"}");
    assert_null(fh_error_code());
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "attached")));
}

static void connect_failures(void **state)
{
    fh_reset();
    route_tunnel();
    fh_route("GET", "tunnel/13/pty/s1", 401,
             "{\"message\":\"wrong tunnel token\"}");
    fh_call("pty_connect", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s1\"}");
    assert_string_equal(fh_error_code(), "internal");
    assert_non_null(strstr(fh_error_message(), "wrong tunnel token"));

    fh_reset();
    route_tunnel();
    fh_route("GET", "tunnel/13/pty/s1", 503, "{\"message\":\"booting\"}");
    fh_call("pty_connect", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s1\"}");
    assert_string_equal(fh_error_code(), "unavailable");

    fh_reset();
    route_tunnel();
    fh_route_rc("GET", "tunnel/13/pty/s1", RLMCP_EHTTP, 0);
    fh_call("pty_connect", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s1\"}");
    assert_string_equal(fh_error_code(), "unavailable");

    /* a PTY tunnel without a token */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/create_pty_tunnel", 200,
             "{\"tunnel_key\":\"k3y\"}");
    fh_call("pty_connect", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s1\"}");
    assert_string_equal(fh_error_code(), "internal");
    assert_int_equal(fh_count_requests("GET", "tunnel/"), 0);
}

static void route_session(void)
{
    route_tunnel();
    fh_route("GET", "tunnel/13/pty/repl", 200,
             "{\"attached\":false,\"created\":false,\"connect_url\":"
             "\"/pty/repl/attach\"}");
}

static void send_flow(void **state)
{
    static const char *const out[] = {"print(6*7)\r\n",
                                      "\x1b[1m42\x1b[0m\r\n>>> "};
    struct fh_pty_script sc = {out, 2, RLMCP_OK, 0, 0, true};
    const struct fh_pty_record *p = NULL;
    const char *text = NULL;

    fh_reset();
    route_session();
    fh_pty_script_add(&sc);
    assert_int_equal(fh_call("pty_send_command",
                             "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                             "\"repl\",\"command\":\"print(6*7)\","
                             "\"quiet_ms\":300,\"max_wait\":2.5}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(fh_pty_count(), 1);
    p = fh_pty_at(0);
    assert_string_equal(p->input, "print(6*7)\n");
    assert_string_equal(p->connect_url, "/pty/repl/attach");
    assert_int_equal(p->quiet_ms, 300);
    assert_int_equal(p->max_wait_ms, 2500);
    assert_int_equal(p->port, 13);
    assert_string_equal(p->tunnel_key, "k3y");
    assert_string_equal(p->tunnel_token, "t0k");
    text = rstr("output");
    assert_non_null(text);
    assert_string_equal(text, "print(6*7)\n42\n>>> ");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "quiet")));
    assert_null(cJSON_GetObjectItem(fh_result(), "session_status"));

    /* no newline; defaults; the shell exited */
    fh_reset();
    route_session();
    sc.n_chunks = 0;
    sc.quiet = false;
    sc.close_code = 4000;
    fh_pty_script_add(&sc);
    fh_call("pty_send_command", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                                "\"repl\",\"command\":\"\\u0003\","
                                "\"append_newline\":false}");
    assert_null(fh_error_code());
    p = fh_pty_at(0);
    assert_int_equal(p->input_len, 1);
    assert_int_equal(p->input[0], 3);
    assert_int_equal(p->quiet_ms, 500);
    assert_int_equal(p->max_wait_ms, 30000);
    assert_string_equal(rstr("output"), "");
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "quiet")));
    assert_non_null(rstr("session_status"));
}

static void send_failures(void **state)
{
    struct fh_pty_script sc = {NULL, 0, RLMCP_EHTTP, 400, 0, false};

    /* second attach refused at the upgrade */
    fh_reset();
    route_session();
    fh_pty_script_add(&sc);
    fh_call("pty_send_command", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                                "\"repl\",\"command\":\"ls\"}");
    assert_string_equal(fh_error_code(), "conflict");
    assert_non_null(strstr(fh_error_message(), "one WebSocket client"));

    /* no connection at all */
    fh_reset();
    route_session();
    sc.upgrade_status = 0;
    fh_pty_script_add(&sc);
    fh_call("pty_send_command", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                                "\"repl\",\"command\":\"ls\"}");
    assert_string_equal(fh_error_code(), "unavailable");

    /* cancelled: nothing is reported */
    fh_reset();
    route_session();
    sc.rc = RLMCP_ECANCELLED;
    fh_pty_script_add(&sc);
    assert_int_equal(fh_call("pty_send_command",
                             "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                             "\"repl\",\"command\":\"ls\"}"),
                     RLMCP_ECANCELLED);
    assert_null(fh_error_code());

    /* a connect view without connect_url */
    fh_reset();
    route_tunnel();
    fh_route("GET", "tunnel/13/pty/repl", 200, "{\"attached\":false}");
    fh_call("pty_send_command", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                                "\"repl\",\"command\":\"ls\"}");
    assert_string_equal(fh_error_code(), "internal");
    assert_int_equal(fh_pty_count(), 0);
}

/* On a host with the ABI 1.6 WebSocket services, pty_send_command runs its
 * exchange on them: the same results, the handle always closed. */
static void send_via_ws(void **state)
{
    static const char *const out[] = {"print(6*7)\r\n",
                                      "\x1b[1m42\x1b[0m\r\n>>> "};
    struct fh_pty_script sc = {out, 2, RLMCP_OK, 0, 0, true};
    const struct fh_pty_record *p = NULL;

    fh_unload();
    fh_use_ws(true);
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(), "{}"), RLMCP_OK);

    fh_reset();
    route_session();
    fh_pty_script_add(&sc);
    assert_int_equal(fh_call("pty_send_command",
                             "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                             "\"repl\",\"command\":\"print(6*7)\","
                             "\"quiet_ms\":300,\"max_wait\":2.5}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(fh_pty_count(), 1);
    p = fh_pty_at(0);
    assert_true(p->via_ws);
    assert_string_equal(p->input, "print(6*7)\n");
    assert_string_equal(p->connect_url, "/pty/repl/attach");
    assert_int_equal(p->port, 13);
    assert_string_equal(p->tunnel_key, "k3y");
    assert_string_equal(p->tunnel_token, "t0k");
    assert_int_equal(p->max_message, 16u * 1024u * 1024u);
    assert_int_equal(p->ws_close_code, 1000);
    assert_int_equal(fh_ws_left(), 0);
    assert_string_equal(rstr("output"), "print(6*7)\n42\n>>> ");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "quiet")));
    assert_null(cJSON_GetObjectItem(fh_result(), "session_status"));

    /* the shell exited: the server's close code */
    fh_reset();
    route_session();
    sc.n_chunks = 0;
    sc.quiet = false;
    sc.close_code = 4000;
    fh_pty_script_add(&sc);
    fh_call("pty_send_command", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                                "\"repl\",\"command\":\"exit\"}");
    assert_null(fh_error_code());
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "quiet")));
    assert_non_null(rstr("session_status"));
    assert_int_equal(fh_ws_left(), 0);

    /* a second client refused at the upgrade; no connection; cancelled */
    fh_reset();
    route_session();
    sc.rc = RLMCP_EHTTP;
    sc.upgrade_status = 400;
    fh_pty_script_add(&sc);
    fh_call("pty_send_command", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                                "\"repl\",\"command\":\"ls\"}");
    assert_string_equal(fh_error_code(), "conflict");
    assert_non_null(strstr(fh_error_message(), "one WebSocket client"));
    fh_reset();
    route_session();
    sc.upgrade_status = 0;
    fh_pty_script_add(&sc);
    fh_call("pty_send_command", "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                                "\"repl\",\"command\":\"ls\"}");
    assert_string_equal(fh_error_code(), "unavailable");
    fh_reset();
    route_session();
    sc.rc = RLMCP_ECANCELLED;
    fh_pty_script_add(&sc);
    assert_int_equal(fh_call("pty_send_command",
                             "{\"devbox_id\":\"dbx_1\",\"session_name\":"
                             "\"repl\",\"command\":\"ls\"}"),
                     RLMCP_ECANCELLED);
    assert_null(fh_error_code());
    assert_int_equal(fh_ws_left(), 0);

    fh_unload();
    setup(state);
}

static void control_flow(void **state)
{
    const struct fh_request *r = NULL;
    cJSON *body = NULL;

    fh_reset();
    route_tunnel();
    fh_route("POST", "tunnel/13/pty/s/control", 200,
             "{\"session_name\":\"s\",\"status\":\"running\"}");
    fh_call("pty_control", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\","
                           "\"action\":\"signal\",\"signal\":\"INT\"}");
    assert_null(fh_error_code());
    assert_string_equal(rstr("status"), "running");
    r = fh_find_request("POST", "tunnel/13/pty/s/control");
    body = fh_request_json(r);
    assert_string_equal(cJSON_GetObjectItem(body, "action")->valuestring,
                        "signal");
    assert_string_equal(cJSON_GetObjectItem(body, "signal")->valuestring,
                        "SIGINT");

    fh_reset();
    route_tunnel();
    fh_route("POST", "tunnel/13/pty/s/control", 200,
             "{\"session_name\":\"s\",\"status\":\"running\"}");
    fh_call("pty_control", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\","
                           "\"action\":\"resize\",\"cols\":120,\"rows\":40}");
    body = fh_request_json(fh_find_request("POST", "tunnel/13/pty/s/control"));
    assert_int_equal(cJSON_GetObjectItem(body, "cols")->valueint, 120);
    assert_int_equal(cJSON_GetObjectItem(body, "rows")->valueint, 40);
    assert_null(cJSON_GetObjectItem(body, "signal"));

    fh_reset();
    route_tunnel();
    fh_route("POST", "tunnel/13/pty/s/control", 404,
             "{\"message\":\"no session named s\"}");
    fh_call("pty_control", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\","
                           "\"action\":\"close\"}");
    assert_string_equal(fh_error_code(), "not_found");
    assert_non_null(strstr(fh_error_remedy(), "pty_connect"));
    body = fh_request_json(fh_find_request("POST", "tunnel/13/pty/s/control"));
    assert_int_equal(cJSON_GetArraySize(body), 1);

    fh_reset();
    route_tunnel();
    fh_route("POST", "tunnel/13/pty/s/control", 400,
             "{\"message\":\"no foreground process group\"}");
    fh_call("pty_control", "{\"devbox_id\":\"dbx_1\",\"session_name\":\"s\","
                           "\"action\":\"signal\",\"signal\":\"SIGTERM\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "no foreground process group"));
}

static void pty_tunnel(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/create_pty_tunnel", 200,
             "{\"tunnel_key\":\"k3y\",\"auth_token\":\"tok\"}");
    assert_int_equal(fh_call("create_pty_tunnel", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("pty_url"), "https://13-k3y.tunnel.runloop.ai");
    assert_string_equal(rstr("auth_token"), "tok");
    assert_null(fh_request_at(0)->body);

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/create_pty_tunnel", 200,
             "{\"tunnel_key\":\"bad.key/x\",\"auth_token\":\"tok\"}");
    fh_call("create_pty_tunnel", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "internal");

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/create_pty_tunnel", 400,
             "{\"message\":\"devbox is suspended\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"suspended\"}");
    fh_call("create_pty_tunnel", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "devbox_not_running");
}

static void enable_get_remove(void **state)
{
    cJSON *body;

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/enable_tunnel", 200,
             "{\"tunnel_key\":\"abc\",\"auth_mode\":\"authenticated\","
             "\"auth_token\":\"t0k\",\"http_keep_alive\":true}");
    assert_int_equal(fh_call("enable_tunnel", "{\"devbox_id\":\"dbx_1\","
                                              "\"port\":8000,"
                                              "\"wake_on_http\":true}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    body = fh_request_json(fh_request_at(0));
    /* authenticated unless asked otherwise */
    assert_string_equal(cJSON_GetObjectItem(body, "auth_mode")->valuestring,
                        "authenticated");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(body, "wake_on_http")));
    assert_null(cJSON_GetObjectItem(body, "http_keep_alive"));
    assert_string_equal(rstr("url"), "https://8000-abc.tunnel.runloop.ai");
    assert_string_equal(rstr("url_template"),
                        "https://{port}-abc.tunnel.runloop.ai");
    assert_string_equal(rstr("auth_token"), "t0k");

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/enable_tunnel", 200,
             "{\"tunnel_key\":\"abc\",\"auth_mode\":\"open\"}");
    fh_call("enable_tunnel", "{\"devbox_id\":\"dbx_1\",\"auth_mode\":"
                             "\"open\"}");
    body = fh_request_json(fh_request_at(0));
    assert_string_equal(cJSON_GetObjectItem(body, "auth_mode")->valuestring,
                        "open");
    assert_null(rstr("url"));
    assert_null(rstr("auth_token"));
    expect_bad("enable_tunnel",
               "{\"devbox_id\":\"dbx_1\",\"auth_mode\":"
               "\"public\"}",
               "auth_mode");
    expect_bad("enable_tunnel", "{\"devbox_id\":\"dbx_1\",\"port\":70000}",
               "port");

    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\",\"tunnel\":{"
             "\"tunnel_key\":\"abc\",\"auth_mode\":\"open\"}}");
    assert_int_equal(fh_call("get_tunnel_url", "{\"devbox_id\":\"dbx_1\","
                                               "\"port\":3000}"),
                     RLMCP_OK);
    assert_string_equal(rstr("url"), "https://3000-abc.tunnel.runloop.ai");
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "port")->valueint, 3000);

    /* devboxd says where its tunnels live; an unusable one is ignored. */
    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\",\"tunnel\":{"
             "\"tunnel_key\":\"abc\",\"auth_mode\":\"open\",\"url_template\":"
             "\"http://{port}-{tunnel_key}.localhost:4321\"}}");
    fh_call("get_tunnel_url", "{\"devbox_id\":\"dbx_1\",\"port\":3000}");
    assert_string_equal(rstr("url"), "http://3000-abc.localhost:4321");
    /* Its path form first: it needs no *.localhost resolution. */
    fh_reset();
    fh_route(
        "GET", "/v1/devboxes/dbx_1", 200,
        "{\"id\":\"dbx_1\",\"status\":\"running\",\"tunnel\":{"
        "\"tunnel_key\":\"abc\",\"auth_mode\":\"open\",\"url_template\":"
        "\"http://{port}-{tunnel_key}.localhost:4321\",\"path_url_template\":"
        "\"http://127.0.0.1:4321/tunnel/{port}-{tunnel_key}\"}}");
    fh_call("get_tunnel_url", "{\"devbox_id\":\"dbx_1\",\"port\":3000}");
    assert_string_equal(rstr("url"), "http://127.0.0.1:4321/tunnel/3000-abc");
    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\",\"tunnel\":{"
             "\"tunnel_key\":\"abc\",\"auth_mode\":\"open\",\"url_template\":"
             "\"ftp://{port}-{tunnel_key}.x\"}}");
    fh_call("get_tunnel_url", "{\"devbox_id\":\"dbx_1\",\"port\":3000}");
    assert_string_equal(rstr("url"), "https://3000-abc.tunnel.runloop.ai");

    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\",\"tunnel\":null}");
    fh_call("get_tunnel_url", "{\"devbox_id\":\"dbx_1\",\"port\":3000}");
    assert_string_equal(fh_error_code(), "not_found");
    assert_non_null(strstr(fh_error_remedy(), "enable_tunnel"));
    expect_bad("get_tunnel_url", "{\"devbox_id\":\"dbx_1\"}", "port");
    expect_bad("get_tunnel_url", "{\"devbox_id\":\"dbx_1\",\"port\":0}",
               "port");

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/remove_tunnel", 200, "{}");
    assert_int_equal(fh_call("remove_tunnel", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "removed")));
    assert_null(fh_request_at(0)->body);
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/remove_tunnel", 404,
             "{\"message\":\"no tunnel\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
    fh_call("remove_tunnel", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "not_found");
}

static void config_template(void **state)
{
    /* Checked by the host against schemas/config.json. */
    static const struct fh_bad_config bad[] = {
        {"{\"tunnel_url_template\":\"https://x.localhost\"}",
         "config.tunnel_url_template"},
        {"{\"tunnel_url_template\":\"ftp://{port}-{tunnel_key}.x\"}",
         "config.tunnel_url_template"},
        {"{\"tunnel_url_template\":\"http://{port}-{tunnel_key}.x/a b\"}",
         "config.tunnel_url_template"},
        {"{\"tunnel_url_template\":5}", "config.tunnel_url_template"},
        {"{\"default_auth_mode\":\"public\"}", "config.default_auth_mode"},
        {"{\"auth_mode\":\"open\"}", "unknown property 'auth_mode'"},
        {"[]", "config: expected object"},
    };
    char *why = NULL;

    fh_unload();
    why = fh_init_refusals(rlmcp_plugin_descriptor(), bad,
                           sizeof(bad) / sizeof(bad[0]));
    if (why != NULL)
        fail_msg("%s", why);
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(),
                             "{\"tunnel_url_template\":\"http://"
                             "{port}-{tunnel_key}.localhost:8080/"
                             "{tunnel_key}\",\"default_auth_mode\":"
                             "\"open\"}"),
                     RLMCP_OK);
    fh_reset();
    /* The operator's template wins over the engine's. */
    fh_route("POST", "/v1/devboxes/dbx_1/enable_tunnel", 200,
             "{\"tunnel_key\":\"kk\",\"auth_mode\":\"open\",\"url_template\":"
             "\"http://{port}-{tunnel_key}.localhost:1\"}");
    fh_call("enable_tunnel", "{\"devbox_id\":\"dbx_1\",\"port\":65535}");
    assert_string_equal(rstr("url"), "http://65535-kk.localhost:8080/kk");
    assert_string_equal(
        cJSON_GetObjectItem(fh_request_json(fh_request_at(0)), "auth_mode")
            ->valuestring,
        "open");
    fh_unload();
    setup(state);
}

/* ---- screen.c ------------------------------------------------------------------- */

static void screen_is(const char *in, size_t len, const char *want)
{
    char *got = pty_screen_text(in, len);

    assert_non_null(got);
    if (strcmp(got, want) != 0)
        print_message("got [%s] want [%s]\n", got, want);
    assert_string_equal(got, want);
    free(got);
}

#define SCREEN(in, want) screen_is(in, sizeof(in) - 1, want)

static void screen_cleanup(void **state)
{
    SCREEN("", "");
    SCREEN("plain\r\ntext\n", "plain\ntext\n");
    /* colours and cursor keys */
    SCREEN("\x1b[1;32mok\x1b[0m done", "ok done");
    SCREEN("\x1b[?2004h$ ls\r\n\x1b[?2004l", "$ ls\n");
    /* OSC title, ended by BEL or ST */
    SCREEN("\x1b]0;user@box: ~\x07$ ", "$ ");
    SCREEN("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link");
    /* DCS string and two-byte escapes */
    SCREEN("a\x1bPq#0;2;0;0;0\x1b\\b\x1b(Bc\x1b=d", "abcd");
    /* \r overwrites: a progress bar keeps its last state */
    SCREEN(" 10%\r 50%\r100%\n", "100%\n");
    SCREEN("abc\rX", "Xbc");
    /* backspace moves left without erasing; erase echo blanks */
    SCREEN("ab\b\bX", "Xb");
    SCREEN("ab\b \b", "a ");
    SCREEN("\b\bx", "x");
    /* erase in line */
    SCREEN("abcdef\r\x1b[Kxy", "xy");
    SCREEN("abcdef\x1b[3D\x1b[0Kz", "abcz");
    SCREEN("abcdef\x1b[2K", "");
    SCREEN("abcdef\x1b[3D\x1b[1K", "   def");
    /* cursor forward pads, column absolute */
    SCREEN("a\x1b[3Cb", "a   b");
    SCREEN("abcdef\x1b[2Gx", "axcdef");
    /* other controls dropped, tab kept */
    SCREEN("a\x07\x00"
           "b\tc\x7f",
           "ab\tc");
    /* UTF-8 moves by characters; invalid bytes become U+FFFD */
    SCREEN("h\xc3\xa9llo\b\b\b\bE", "hEllo");
    SCREEN("a\x9b"
           "b",
           "a\xef\xbf\xbd"
           "b");
    SCREEN("\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    /* sequences cut off at the end are dropped */
    SCREEN("ok\x1b[1;3", "ok");
    SCREEN("ok\x1b]0;tit", "ok");
    SCREEN("ok\x1b", "ok");
    /* a python prompt after bracketed paste */
    SCREEN(">>> 1+1\r\n2\r\n>>> ", ">>> 1+1\n2\n>>> ");
}

static void screen_big_input(void **state)
{
    size_t n = 1 << 20, i;
    char *in = malloc(n);
    char *got = NULL;

    assert_non_null(in);
    for (i = 0; i < n; i++)
        in[i] = (char)(i % 7 == 6 ? '\n' : (i % 13 == 0 ? '\x1b' : 'x'));
    got = pty_screen_text(in, n);
    assert_non_null(got);
    assert_true(strlen(got) < n);
    free(got);
    /* a huge cursor move is bounded */
    got = pty_screen_text("\x1b[99999999Cx", 12);
    assert_non_null(got);
    assert_int_equal(strlen(got), 4097);
    free(got);
    free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registers),
        cmocka_unit_test(session_name_rules),
        cmocka_unit_test(cols_rows_rules),
        cmocka_unit_test(control_rules),
        cmocka_unit_test(send_command_rules),
        cmocka_unit_test(abi10_host_unavailable),
        cmocka_unit_test(connect_flow),
        cmocka_unit_test(connect_failures),
        cmocka_unit_test(send_flow),
        cmocka_unit_test(send_failures),
        cmocka_unit_test(send_via_ws),
        cmocka_unit_test(control_flow),
        cmocka_unit_test(pty_tunnel),
        cmocka_unit_test(enable_get_remove),
        cmocka_unit_test(config_template),
        cmocka_unit_test(screen_cleanup),
        cmocka_unit_test(screen_big_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
