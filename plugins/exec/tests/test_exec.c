/*
 * test_exec.c - the exec plugin against the fake host table.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec_internal.h"
#include "fake_host.h"

const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(void);

#define CONFIG                                                                 \
    "{\"max_output_bytes\":1024,\"default_timeout_seconds\":30,"               \
    "\"max_timeout_seconds\":120,\"create_wait_seconds\":5,"                   \
    "\"run_code\":{\"purpose\":\"code-testing\",\"keep_alive_seconds\":"       \
    "3600},\"languages\":{\"python\":{\"extension\":\"py\",\"command\":"       \
    "\"python3 {file}\"},\"c\":{\"extension\":\"c\",\"command\":"              \
    "\"gcc -o {stem} {file} && {stem}\",\"blueprint\":\"gcc-bp\","             \
    "\"suspend_after\":false}}}"

#define EXEC_PATH "/v1/devboxes/dbx_1/execute?last_n=1000"
#define DONE(out, code)                                                        \
    "{\"execution_id\":\"exe_1\",\"devbox_id\":\"dbx_1\",\"status\":"          \
    "\"completed\",\"exit_status\":" #code ",\"stdout\":\"" out "\","          \
    "\"stderr\":\"\",\"stdout_truncated\":false,\"stderr_truncated\":"         \
    "false}"
#define RUNNING_EXE                                                            \
    "{\"execution_id\":\"exe_1\",\"devbox_id\":\"dbx_1\",\"status\":"          \
    "\"running\"}"

static int setup(void **state)
{
    /* Timeouts and clean-up times pass in simulated time. */
    fh_use_fake_clock(true);
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(), CONFIG), RLMCP_OK);
    return 0;
}

static int teardown(void **state)
{
    fh_unload();
    fh_use_fake_clock(false);
    return 0;
}

static const char *rstr(const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(fh_result(), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double rnum(const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(fh_result(), key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static bool rbool(const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), key));
}

static void registers_tools(void **state)
{
    static const char *const names[] = {"execute_command",
                                        "execute_command_async",
                                        "list_executions",
                                        "get_execution",
                                        "wait_for_execution",
                                        "get_execution_logs",
                                        "kill_execution",
                                        "send_execution_stdin",
                                        "run_shell",
                                        "run_code",
                                        "run_python",
                                        "run_c",
                                        "create_code_context",
                                        "list_code_contexts",
                                        "restart_code_context",
                                        "delete_code_context"};
    size_t i;

    assert_int_equal(fh_tool_count(), 16);
    for (i = 0; i < 16; i++) {
        const struct rlmcp_tool_def *t = fh_tool(names[i]);
        assert_non_null(t);
        assert_non_null(strstr(t->annotations_json, "\"openWorldHint\":true"));
    }
    assert_true(fh_tool("run_python")->flags & RLMCP_TOOL_SERIAL);
    assert_non_null(strstr(fh_tool("run_python")->description, "python3"));
    /* Only run_python runs code in a context. */
    assert_non_null(
        strstr(fh_tool("run_python")->input_schema_json, "\"context\""));
    assert_null(strstr(fh_tool("run_c")->input_schema_json, "\"context\""));
    assert_non_null(strstr(fh_tool("get_execution")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("execute_command")->output_schema_json,
                           "stdout_truncated"));
    /* long-running tools get a timeout covering max_timeout_seconds */
    assert_true(fh_tool("execute_command")->timeout_ms >= 120000);
}

static void execute_fast_path(void **state)
{
    cJSON *body;
    const cJSON *cid;

    fh_reset();
    fh_route("POST", EXEC_PATH, 200, DONE("hi\\n", 0));
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"echo "
                             "hi\",\"shell_name\":\"s1\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("stdout"), "hi\n");
    assert_string_equal(rstr("stderr"), "");
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "exit_code")->valueint,
                     0);
    assert_string_equal(rstr("execution_id"), "exe_1");
    assert_string_equal(rstr("devbox_id"), "dbx_1");
    assert_false(rbool("stdout_truncated"));
    assert_true(
        cJSON_IsNumber(cJSON_GetObjectItem(fh_result(), "duration_ms")));
    assert_int_equal(fh_request_count(), 1);
    body = fh_request_json(fh_request_at(0));
    assert_string_equal(cJSON_GetObjectItem(body, "command")->valuestring,
                        "echo hi");
    assert_string_equal(cJSON_GetObjectItem(body, "shell_name")->valuestring,
                        "s1");
    cid = cJSON_GetObjectItem(body, "command_id");
    assert_true(cJSON_IsString(cid));
    assert_int_equal(strlen(cid->valuestring), 36);
    assert_int_equal(cid->valuestring[14], '7');
    assert_true(cJSON_GetObjectItem(body, "optimistic_timeout")->valueint <=
                25);
}

static void execute_nonzero_exit_is_result(void **state)
{
    fh_reset();
    fh_route("POST", EXEC_PATH, 200, DONE("", 3));
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"exit "
                             "3\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "exit_code")->valueint,
                     3);
}

static void execute_prefix_working_dir_env(void **state)
{
    cJSON *body;

    fh_reset();
    fh_route("POST", EXEC_PATH, 200, DONE("", 0));
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"ls; "
                             "pwd\",\"working_dir\":\"/tmp/a b\",\"env\":"
                             "{\"A\":\"it's\"}}"),
                     RLMCP_OK);
    body = fh_request_json(fh_request_at(0));
    assert_string_equal(cJSON_GetObjectItem(body, "command")->valuestring,
                        "cd -- '/tmp/a b' && export A='it'\\''s' && "
                        "{ ls; pwd\n}");

    fh_reset();
    fh_call("execute_command", "{\"devbox_id\":\"dbx_1\",\"command\":\"x\","
                               "\"env\":{\"1A\":\"v\"}}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_int_equal(fh_request_count(), 0);
}

/* args is argv: each word quoted, nothing reaches the shell as syntax. */
static void execute_args_quoted(void **state)
{
    cJSON *body;

    fh_reset();
    fh_route("POST", EXEC_PATH, 200, DONE("", 0));
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"args\":[\"printf\","
                             "\"%s\\\\n\",\"$HOME; echo x\",\"it's\"],"
                             "\"timeout_ms\":2500}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    body = fh_request_json(fh_request_at(0));
    assert_string_equal(cJSON_GetObjectItem(body, "command")->valuestring,
                        "'printf' '%s\\n' '$HOME; echo x' 'it'\\''s'");

    /* Both time limits: the error names both. */
    fh_reset();
    fh_call("execute_command", "{\"devbox_id\":\"dbx_1\",\"command\":\"x\","
                               "\"timeout_seconds\":3,\"timeout_ms\":3000}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "timeout_seconds"));
    assert_non_null(strstr(fh_error_message(), "timeout_ms"));
    /* Both forms of the command: the error names both. */
    fh_reset();
    fh_call("execute_command", "{\"devbox_id\":\"dbx_1\",\"command\":\"x\","
                               "\"args\":[\"x\"]}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "give command"));
    assert_non_null(strstr(fh_error_message(), "or args"));
    assert_int_equal(fh_request_count(), 0);
}

static void execute_bad_args(void **state)
{
    static const char *const bad[] = {
        "{\"command\":\"x\"}",
        "{\"devbox_id\":\"dbx_1\"}",
        "{\"devbox_id\":\"dbx_1\",\"command\":42}",
        "{\"devbox_id\":\"dbx_1\",\"command\":\"x\",\"extra\":1}",
        "{\"devbox_id\":\"dbx_1\",\"command\":\"x\",\"timeout_seconds\":0}",
        "{\"devbox_id\":\"dbx_1\",\"command\":\"x\",\"timeout_seconds\":999}",
        "{\"devbox_id\":\"dbx_1\",\"command\":\"x\",\"timeout_seconds\":1.5}",
        "{\"devbox_id\":\"dbx_1\",\"command\":\"x\",\"shell_name\":\"a b\"}",
        "{\"devbox_id\":\"x/y\",\"command\":\"x\"}",
        "{\"devbox_id\":\"dbx_1\",\"command\":\"\"}",
        "{\"devbox_id\":\"dbx_1\",\"command\":\"x\",\"args\":[\"ls\"]}",
        "{\"devbox_id\":\"dbx_1\",\"args\":[]}",
        "{\"devbox_id\":\"dbx_1\",\"args\":[\"\"]}",
        "{\"devbox_id\":\"dbx_1\",\"args\":[\"ls\",1]}",
        "{\"devbox_id\":\"dbx_1\",\"args\":\"ls -l\"}",
        "{\"devbox_id\":\"dbx_1\",\"command\":\"x\",\"timeout_ms\":999}",
        "{\"devbox_id\":\"dbx_1\",\"command\":\"x\",\"timeout_ms\":"
        "2000,\"timeout_seconds\":2}",
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fh_reset();
        assert_int_equal(fh_call("execute_command", bad[i]), RLMCP_OK);
        assert_non_null(fh_error_code());
        if (strcmp(fh_error_code(), "invalid_argument") != 0)
            fail_msg("%s: %s", bad[i], fh_error_message());
        assert_int_equal(fh_request_count(), 0);
    }
}

static void truncation_keeps_head_and_tail(void **state)
{
    size_t n = 100000, i;
    char *out = malloc(n + 1);
    char *resp;
    const char *s;

    for (i = 0; i < n; i++)
        out[i] = (char)('a' + i % 26);
    memcpy(out, "HEAD", 4);
    memcpy(out + n - 4, "TAIL", 4);
    out[n] = '\0';
    assert_true(
        asprintf(&resp,
                 "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
                 "\"exit_status\":0,\"stdout\":\"%s\",\"stderr\":\"e\"}",
                 out) > 0);
    fh_reset();
    fh_route("POST", EXEC_PATH, 200, resp);
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"gen\"}"),
                     RLMCP_OK);
    s = rstr("stdout");
    assert_non_null(s);
    assert_true(rbool("stdout_truncated"));
    assert_false(rbool("stderr_truncated"));
    assert_memory_equal(s, "HEAD", 4);
    assert_string_equal(s + strlen(s) - 4, "TAIL");
    assert_non_null(strstr(s, "[truncated 98976 bytes; full output: "
                              "get_execution_logs execution_id=exe_1]"));
    assert_int_equal((int)rnum("stdout_bytes_dropped"), 98976);
    assert_int_equal((int)rnum("stderr_bytes_dropped"), 0);
    assert_string_equal(rstr("ended_by"), "exit");
    assert_true(strlen(s) < 1024 + 200);
    /* devboxd's ended_by wins over the exit status; unknown ones do not. */
    fh_reset();
    fh_route("POST", EXEC_PATH, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":137,\"ended_by\":\"out_of_memory\","
             "\"stdout\":\"\",\"stderr\":\"\"}");
    fh_call("execute_command", "{\"devbox_id\":\"dbx_1\",\"command\":\"x\"}");
    assert_string_equal(rstr("ended_by"), "out_of_memory");
    fh_reset();
    fh_route("POST", EXEC_PATH, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":137,\"ended_by\":\"bogus\","
             "\"stdout\":\"\",\"stderr\":\"\"}");
    fh_call("execute_command", "{\"devbox_id\":\"dbx_1\",\"command\":\"x\"}");
    assert_string_equal(rstr("ended_by"), "killed");
    /* A deployment hiding get_execution_logs: head, tail and the count. */
    fh_reset();
    fh_hide_tool("get_execution_logs");
    fh_route("POST", EXEC_PATH, 200, resp);
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"gen\"}"),
                     RLMCP_OK);
    s = rstr("stdout");
    assert_non_null(s);
    assert_memory_equal(s, "HEAD", 4);
    assert_string_equal(s + strlen(s) - 4, "TAIL");
    assert_non_null(strstr(s, "[truncated 98976 bytes]"));
    assert_null(strstr(s, "get_execution_logs"));
    free(out);
    free(resp);
}

static void api_truncated_refetches_stream(void **state)
{
    const char *chunks[] = {"{\"output\":\"line1\\n\",\"offset\":0}",
                            "{\"output\":\"line2\\n\",\"offset\":6}"};

    fh_reset();
    fh_route("POST", EXEC_PATH, 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":0,\"stdout\":\"line2\\n\",\"stdout_truncated\""
             ":true,\"stderr\":\"\"}");
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates"
                 "?offset=0",
                 chunks, 2, 200, 0);
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"x\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("stdout"), "line1\nline2\n");
    assert_false(rbool("stdout_truncated"));
    /* the re-read is not forwarded as progress */
    assert_int_equal(fh_progress_count(), 0);
}

static void streaming_progress(void **state)
{
    const char *chunks[] = {"{\"output\":\"1\\n\",\"offset\":0}",
                            "{\"output\":\"2\\n\",\"offset\":2}",
                            "{\"output\":\"3\\n\",\"offset\":4}"};

    fh_reset();
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates"
                 "?offset=0",
                 chunks, 3, 200, 0);
    fh_route("POST",
             "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=1000",
             200, DONE("1\\n2\\n3\\n", 0));
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"for i in "
                             "1 2 3; do echo $i; sleep 1; done\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    /* The first progress names the execution (it is still running). */
    assert_int_equal(fh_progress_count(), 4);
    assert_string_equal(fh_progress_message(0),
                        "execution exe_1 started on devbox dbx_1");
    assert_string_equal(fh_progress_message(1), "1\n");
    assert_string_equal(fh_progress_message(3), "3\n");
    assert_true(fh_progress_value(2) > fh_progress_value(1));
    assert_true(fh_progress_value(1) > fh_progress_value(0));
    assert_string_equal(rstr("stdout"), "1\n2\n3\n");
}

/* A stream cut off after its first chunk: the rest of the output, from
 * the completed view, still arrives as progress before the result. */
static void stream_cut_progress_gets_the_rest(void **state)
{
    const char *chunks[] = {"{\"output\":\"1\\n\",\"offset\":0}"};

    fh_reset();
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates"
                 "?offset=0",
                 chunks, 1, 200, RLMCP_EHTTP);
    fh_route("POST",
             "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=1000",
             200, DONE("1\\n2\\n3\\n", 0));
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"x\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(fh_progress_count(), 3);
    assert_string_equal(fh_progress_message(1), "1\n");
    assert_string_equal(fh_progress_message(2), "2\n3\n");
    assert_true(fh_progress_value(2) > fh_progress_value(1));
    assert_string_equal(rstr("stdout"), "1\n2\n3\n");
}

static void stream_reconnects_after_408(void **state)
{
    const char *chunks[] = {"{\"output\":\"ab\",\"offset\":0}",
                            "{\"output\":\"bcd\",\"offset\":1}",
                            "{\"output\":\"e\",\"offset\":4}"};

    fh_reset();
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    /* the first attempt idles out with 408 before any event */
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates"
                 "?offset=0",
                 NULL, 0, 408, 0);
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates"
                 "?offset=0",
                 chunks, 3, 200, 0);
    fh_route("POST",
             "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=1000",
             200,
             "{\"execution_id\":\"exe_1\",\"status\":\"completed\","
             "\"exit_status\":0,\"stdout\":\"e\",\"stdout_truncated\":true,"
             "\"stderr\":\"\"}");
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"x\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(fh_count_requests("GET", "/v1/devboxes/dbx_1/executions/"
                                              "exe_1/stream_stdout"),
                     2);
    /* the overlap ("b") is not duplicated; the streamed copy is used */
    assert_string_equal(rstr("stdout"), "abcde");
    assert_int_equal(fh_progress_count(), 4);
    assert_string_equal(fh_progress_message(2), "cd");
}

static void wait_loop_without_stream(void **state)
{
    fh_reset();
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    /* no SSE route: the fake answers 404, the plugin falls back */
    fh_route("POST",
             "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=1000",
             408, "{}");
    fh_route("POST",
             "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=1000",
             200, DONE("ok", 0));
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"x\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("stdout"), "ok");
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/executions/"
                                               "exe_1/wait_for_status"),
                     2);
    assert_non_null(strstr(fh_find_request("POST", "/v1/devboxes/dbx_1/"
                                                   "executions/exe_1/wait")
                               ->body,
                           "\"completed\""));
}

static void timeout_kills(void **state)
{
    const struct fh_request *k;

    fh_reset();
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates*",
                 NULL, 0, 200, RLMCP_ETIMEDOUT);
    fh_route("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", 200,
             RUNNING_EXE);
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"sleep "
                             "600\",\"timeout_seconds\":2}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "timeout");
    assert_non_null(strstr(fh_error_message(), "exe_1"));
    assert_non_null(strstr(fh_error_message(), "2 s"));
    /* The stream ran out at the timeout; the kill came then. */
    assert_non_null(strstr(fh_error_message(), "a kill was sent at 2.0 s"));
    /* The output so far: a content block after the error, and the same
     * "result" set with result_json after it (the error's structured
     * content on hosts that merge it). */
    assert_non_null(fh_result());
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(fh_result(), "result"),
                            "ended_by")
            ->valuestring,
        "timeout");
    k = fh_find_request("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill");
    assert_non_null(k);
    assert_true(k->flags & RLMCP_HTTP_IGNORE_CANCEL);
}

/* A kill answered 503 twice is retried within the clean-up time until the
 * status reads completed; only then does the result say "killed". */
static void timeout_kill_retried_and_confirmed(void **state)
{
    fh_reset();
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates*",
                 NULL, 0, 200, RLMCP_ETIMEDOUT);
    fh_route_n("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", 503,
               "{\"message\":\"busy\"}", 2);
    fh_route_n("GET", "/v1/devboxes/dbx_1/executions/exe_1", 200, RUNNING_EXE,
               2);
    fh_route("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", 200,
             DONE("", 137));
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"sleep "
                             "600\",\"timeout_seconds\":2}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "timeout");
    assert_non_null(strstr(fh_error_message(), "did not finish within its "
                                               "timeout of 2 s"));
    assert_non_null(strstr(fh_error_message(), "was killed at "));
    assert_non_null(strstr(fh_error_message(), "(its status reads "
                                               "completed)"));
    assert_int_equal(
        fh_count_requests("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill"),
        3);
}

/* A call whose own limit ends before the command's timeout (plus the
 * clean-up reserve) stops the command early and says so; one with room
 * gives the command all of its timeout. */
static void timeout_cut_by_call_limit(void **state)
{
    fh_reset();
    fh_set_deadline_ms(rlmcp_h_now_ms() + 2500);
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates*",
                 NULL, 0, 200, RLMCP_ETIMEDOUT);
    fh_route("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", 200,
             DONE("", 137));
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"sleep "
                             "600\",\"timeout_seconds\":10}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "timeout");
    assert_non_null(strstr(fh_error_message(),
                           "was stopped before its timeout of 10 s because "
                           "the call's own time limit ends sooner"));

    /* The host's deadline has the clean-up after the timeout: the
     * command's own timeout ends it (its timing: e2e exec_timeouts). */
    fh_reset();
    fh_set_deadline_ms(rlmcp_h_now_ms() + 7000);
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates*",
                 NULL, 0, 200, RLMCP_ETIMEDOUT);
    fh_route("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", 200,
             DONE("", 137));
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"sleep "
                             "600\",\"timeout_seconds\":2}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "timeout");
    assert_non_null(
        strstr(fh_error_message(), "did not finish within its timeout of 2 s"));
    assert_null(strstr(fh_error_message(), "ends sooner"));
}

/* execute_command as a task with a timeout: the end goes into the handle;
 * get past it kills the command and reads ended_by "timeout"; get before
 * it only reads; a kill that cannot be confirmed is a retryable error. */
static void task_timeout(void **state)
{
    const cJSON *at = NULL;
    char args[256];
    long long end = 0;

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/execute_async", 200, RUNNING_EXE);
    assert_int_equal(fh_call_op("execute_command", "start",
                                "{\"devbox_id\":\"dbx_1\",\"command\":"
                                "\"sleep 9\",\"timeout_seconds\":3}"),
                     RLMCP_OK);
    at = cJSON_GetObjectItem(fh_result(), "kill_at_ms");
    assert_true(cJSON_IsString(at));
    end = strtoll(at->valuestring, NULL, 10);
    assert_true(end >= exec_wall_ms() + 2500 && end <= exec_wall_ms() + 3000);
    /* Without a timeout: no end. */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/execute_async", 200, RUNNING_EXE);
    fh_call_op("execute_command", "start",
               "{\"devbox_id\":\"dbx_1\",\"command\":\"sleep 9\"}");
    assert_null(cJSON_GetObjectItem(fh_result(), "kill_at_ms"));

    /* Before its end: read, not killed. */
    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1/executions/exe_1", 200, RUNNING_EXE);
    snprintf(args, sizeof(args),
             "{\"devbox_id\":\"dbx_1\",\"execution_id\":\"exe_1\","
             "\"kill_at_ms\":\"%lld\"}",
             exec_wall_ms() + 60000);
    assert_int_equal(fh_call_op("execute_command", "get", args), RLMCP_OK);
    assert_null(
        fh_find_request("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill"));
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "status")->valuestring,
                        "running");

    /* Past it: killed, and the task completes with ended_by timeout. */
    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1/executions/exe_1", 200, RUNNING_EXE);
    fh_route("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", 200,
             DONE("so far\\n", 137));
    snprintf(args, sizeof(args),
             "{\"devbox_id\":\"dbx_1\",\"execution_id\":\"exe_1\","
             "\"kill_at_ms\":\"%lld\"}",
             exec_wall_ms() - 10);
    assert_int_equal(fh_call_op("execute_command", "get", args), RLMCP_OK);
    assert_null(fh_error_code());
    assert_non_null(
        fh_find_request("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill"));
    assert_string_equal(
        cJSON_GetObjectItem(fh_result(), "ended_by")->valuestring, "timeout");
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "status")->valuestring,
                        "completed");
    assert_string_equal(cJSON_GetObjectItem(fh_result(), "stdout")->valuestring,
                        "so far\n");

    /* Past it, the kill not confirmed: unavailable (get again). */
    fh_reset();
    fh_route_n("GET", "/v1/devboxes/dbx_1/executions/exe_1", 200, RUNNING_EXE,
               0);
    fh_route_rc("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", RLMCP_EHTTP,
                0);
    fh_set_deadline_ms(rlmcp_h_now_ms() + 1500);
    assert_int_equal(fh_call_op("execute_command", "get", args), RLMCP_OK);
    assert_string_equal(fh_error_code(), "unavailable");
    assert_non_null(strstr(fh_error_message(), "ran past its timeout"));
}

/* A kill that never gets through within the call's time is reported as
 * not confirmed, naming the execution. */
static void timeout_kill_unconfirmed(void **state)
{
    uint64_t t0 = 0;

    fh_reset();
    t0 = rlmcp_h_now_ms();
    fh_set_deadline_ms(t0 + 2000);
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates*",
                 NULL, 0, 200, RLMCP_ETIMEDOUT);
    fh_route_rc("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", RLMCP_EHTTP,
                0);
    fh_route_rc("GET", "/v1/devboxes/dbx_1/executions/exe_1", RLMCP_EHTTP, 0);
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"sleep "
                             "600\",\"timeout_seconds\":2}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "timeout");
    assert_non_null(strstr(fh_error_message(), "exe_1"));
    assert_non_null(strstr(fh_error_message(), "NOT be confirmed stopped"));
    assert_non_null(strstr(fh_error_remedy(), "get_execution"));
    /* retried within the clean-up time, not given up after one try */
    assert_true(fh_count_requests(
                    "POST", "/v1/devboxes/dbx_1/executions/exe_1/kill") >= 2);
}

/* list_executions groups the devbox log by execution, newest first; one
 * without an exit code there is looked up for its status. */
static void list_executions_from_log(void **state)
{
    const cJSON *arr = NULL;
    const cJSON *e0 = NULL;
    const cJSON *e1 = NULL;

    fh_reset();
    fh_route_n("GET", "/v1/devboxes/dbx_1/logs", 200,
               "{\"logs\":["
               "{\"level\":\"info\",\"source\":\"exec\",\"timestamp_ms\":1,"
               "\"cmd\":\"echo a\",\"cmd_id\":\"exe_1\"},"
               "{\"level\":\"info\",\"source\":\"exec\",\"timestamp_ms\":2,"
               "\"cmd\":\"sleep 99\",\"cmd_id\":\"exe_2\"},"
               "{\"level\":\"info\",\"source\":\"exec\",\"timestamp_ms\":3,"
               "\"cmd\":\"echo a\",\"cmd_id\":\"exe_1\",\"exit_code\":0},"
               "{\"level\":\"info\",\"source\":\"system\",\"timestamp_ms\":4,"
               "\"message\":\"other\"}]}",
               0);
    fh_route_n("GET", "/v1/devboxes/dbx_1/executions/exe_2?last_n=0", 200,
               "{\"execution_id\":\"exe_2\",\"status\":\"running\"}", 0);
    assert_int_equal(fh_call("list_executions", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    arr = cJSON_GetObjectItem(fh_result(), "executions");
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    e0 = cJSON_GetArrayItem(arr, 0);
    e1 = cJSON_GetArrayItem(arr, 1);
    assert_string_equal(cJSON_GetObjectItem(e0, "execution_id")->valuestring,
                        "exe_2");
    assert_string_equal(cJSON_GetObjectItem(e0, "status")->valuestring,
                        "running");
    assert_string_equal(cJSON_GetObjectItem(e0, "command")->valuestring,
                        "sleep 99");
    assert_string_equal(cJSON_GetObjectItem(e1, "status")->valuestring,
                        "completed");
    assert_int_equal(cJSON_GetObjectItem(e1, "exit_code")->valueint, 0);
    assert_int_equal(
        fh_count_requests("GET", "/v1/devboxes/dbx_1/executions/exe_1"), 0);
    /* limit keeps the newest */
    assert_int_equal(
        fh_call("list_executions", "{\"devbox_id\":\"dbx_1\",\"limit\":1}"),
        RLMCP_OK);
    arr = cJSON_GetObjectItem(fh_result(), "executions");
    assert_int_equal(cJSON_GetArraySize(arr), 1);
    assert_int_equal(fh_call("list_executions", "{\"devbox_id\":\"a/b\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
}

static void cancel_kills(void **state)
{
    const struct fh_request *k;
    uint64_t t0 = rlmcp_h_now_ms();

    fh_reset();
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    fh_route("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", 200,
             RUNNING_EXE);
    fh_cancel_after(1); /* cancelled right after execute answered */
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"sleep "
                             "600\"}"),
                     RLMCP_ECANCELLED);
    assert_null(fh_error_code());
    k = fh_find_request("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill");
    assert_non_null(k);
    assert_true(k->cancelled_at_send);
    assert_true(k->flags & RLMCP_HTTP_IGNORE_CANCEL);
    assert_non_null(strstr(k->body, "\"kill_process_group\":true"));
    /* An unconfirmed kill is retried through the clean-up time (5 s). */
    assert_true(fh_count_requests(
                    "POST", "/v1/devboxes/dbx_1/executions/exe_1/kill") >= 2);
    assert_true(rlmcp_h_now_ms() - t0 >= 4000);
}

static void cancel_during_execute_kills(void **state)
{
    const struct fh_request *x, *k;

    fh_reset();
    fh_route("POST", EXEC_PATH, 200, RUNNING_EXE);
    fh_route("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", 200, "{}");
    fh_cancel_after(0); /* cancelled while execute is in flight */
    assert_int_equal(fh_call("execute_command",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"sleep "
                             "600\"}"),
                     RLMCP_ECANCELLED);
    x = fh_find_request("POST", EXEC_PATH);
    assert_true(x->flags & RLMCP_HTTP_IGNORE_CANCEL);
    k = fh_find_request("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill");
    assert_non_null(k);
    assert_null(fh_find_request("GET", "/v1/devboxes/dbx_1/executions/exe_1/"
                                       "stream"));
}

static void suspended_devbox(void **state)
{
    fh_reset();
    fh_route("POST", EXEC_PATH, 400, "{\"message\":\"devbox is not running\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"suspended\"}");
    fh_call("execute_command", "{\"devbox_id\":\"dbx_1\",\"command\":\"x\"}");
    assert_string_equal(fh_error_code(), "devbox_not_running");
    assert_non_null(strstr(fh_error_message(), "suspended"));
    assert_non_null(strstr(fh_error_remedy(), "resume_devbox"));

    /* A devbox being stopped still reads running: a state change to wait
     * out, not an argument to fix. */
    fh_reset();
    fh_route(
        "POST", EXEC_PATH, 409,
        "{\"message\":\"devbox dbx_1 is being stopped (suspend, shutdown or a "
        "limit)\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
    fh_call("execute_command", "{\"devbox_id\":\"dbx_1\",\"command\":\"x\"}");
    assert_string_equal(fh_error_code(), "conflict");
    assert_non_null(strstr(fh_error_message(), "being stopped"));
    assert_non_null(strstr(fh_error_remedy(), "changing state"));
    assert_null(strstr(fh_error_remedy(), "argument"));

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_x/execute*", 404,
             "{\"message\":\"not found\"}");
    fh_route("GET", "/v1/devboxes/dbx_x", 404, "{\"message\":\"not found\"}");
    fh_call("execute_command", "{\"devbox_id\":\"dbx_x\",\"command\":\"x\"}");
    assert_string_equal(fh_error_code(), "not_found");
    assert_non_null(strstr(fh_error_message(), "dbx_x"));

    fh_reset();
    fh_route("POST", EXEC_PATH, 401, "{\"message\":\"invalid key\"}");
    fh_call("execute_command", "{\"devbox_id\":\"dbx_1\",\"command\":\"x\"}");
    assert_string_equal(fh_error_code(), "unauthenticated");
    /* no devbox lookup for a rejected key */
    assert_int_equal(fh_request_count(), 1);

    fh_reset();
    fh_route_rc("POST", EXEC_PATH, RLMCP_EHTTP, 1);
    fh_call("execute_command", "{\"devbox_id\":\"dbx_1\",\"command\":\"x\"}");
    assert_string_equal(fh_error_code(), "unavailable");
}

static void async_get_wait_kill_stdin(void **state)
{
    cJSON *body;

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/execute_async", 200, RUNNING_EXE);
    assert_int_equal(fh_call("execute_command_async",
                             "{\"devbox_id\":\"dbx_1\",\"command\":\"cat\","
                             "\"attach_stdin\":true}"),
                     RLMCP_OK);
    assert_string_equal(rstr("execution_id"), "exe_1");
    assert_string_equal(rstr("status"), "running");
    body = fh_request_json(fh_request_at(0));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(body, "attach_stdin")));

    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1/executions/exe_1?last_n=1000", 200,
             DONE("done", 1));
    assert_int_equal(fh_call("get_execution", "{\"devbox_id\":\"dbx_1\","
                                              "\"execution_id\":\"exe_1\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("status"), "completed");
    assert_string_equal(rstr("stdout"), "done");

    fh_reset();
    fh_route("POST",
             "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=1000",
             200, DONE("w", 0));
    assert_int_equal(fh_call("wait_for_execution",
                             "{\"devbox_id\":\"dbx_1\",\"execution_id\":"
                             "\"exe_1\",\"timeout_seconds\":5}"),
                     RLMCP_OK);
    assert_string_equal(rstr("stdout"), "w");

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/executions/exe_1/kill", 200,
             DONE("", 137));
    assert_int_equal(fh_call("kill_execution", "{\"devbox_id\":\"dbx_1\","
                                               "\"execution_id\":\"exe_1\"}"),
                     RLMCP_OK);
    body = fh_request_json(fh_request_at(0));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(body, "kill_process_group")));

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/executions/exe_1/send_std_in", 200,
             "{\"success\":true}");
    assert_int_equal(fh_call("send_execution_stdin",
                             "{\"devbox_id\":\"dbx_1\",\"execution_id\":"
                             "\"exe_1\",\"text\":\"hello\\n\"}"),
                     RLMCP_OK);
    assert_true(rbool("success"));
    body = fh_request_json(fh_request_at(0));
    assert_string_equal(cJSON_GetObjectItem(body, "text")->valuestring,
                        "hello\n");

    fh_reset();
    fh_call("send_execution_stdin", "{\"devbox_id\":\"dbx_1\","
                                    "\"execution_id\":\"exe_1\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    fh_reset();
    fh_call("send_execution_stdin", "{\"devbox_id\":\"dbx_1\","
                                    "\"execution_id\":\"exe_1\",\"signal\":"
                                    "\"KILL\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
}

static void logs_pages(void **state)
{
    const char *chunks[] = {"{\"output\":\"abcdef\",\"offset\":2}",
                            "{\"output\":\"ghij\",\"offset\":8}"};

    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1/executions/exe_1?last_n=1000", 200,
             DONE("x", 0));
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates"
                 "?offset=2",
                 chunks, 2, 200, 0);
    assert_int_equal(fh_call("get_execution_logs",
                             "{\"devbox_id\":\"dbx_1\",\"execution_id\":"
                             "\"exe_1\",\"stream\":\"stdout\",\"offset\":2,"
                             "\"max_bytes\":8}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("stdout"), "abcdefgh");
    assert_int_equal(
        cJSON_GetObjectItem(fh_result(), "stdout_next_offset")->valueint, 10);
    assert_true(rbool("stdout_has_more"));
    assert_null(cJSON_GetObjectItem(fh_result(), "stderr"));
}

static void run_shell_and_running_logs(void **state)
{
    const char *so_far[] = {"{\"output\":\"so far\",\"offset\":0}"};
    cJSON *body;

    fh_reset();
    fh_route("POST", EXEC_PATH, 200, DONE("x", 0));
    assert_int_equal(fh_call("run_shell", "{\"devbox_id\":\"dbx_1\","
                                          "\"command\":\"ls\",\"shell_name\":"
                                          "\"srv\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("stdout"), "x");
    body = fh_request_json(fh_request_at(0));
    assert_string_equal(cJSON_GetObjectItem(body, "command")->valuestring,
                        "ls");
    assert_string_equal(cJSON_GetObjectItem(body, "shell_name")->valuestring,
                        "srv");
    fh_reset();
    fh_call("run_shell", "{\"devbox_id\":\"dbx_1\",\"command\":\"ls\","
                         "\"working_dir\":\"/tmp\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");

    /* logs of a running execution: what its streams hold so far (the
     * API's view has no output until it completes); more may come */
    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1/executions/exe_1?last_n=1000", 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"running\"}");
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates"
                 "?offset=0",
                 so_far, 1, 200, RLMCP_ETIMEDOUT);
    assert_int_equal(fh_call("get_execution_logs",
                             "{\"devbox_id\":\"dbx_1\",\"execution_id\":"
                             "\"exe_1\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("status"), "running");
    assert_string_equal(rstr("stdout"), "so far");
    assert_true(rbool("stdout_has_more"));
    assert_int_equal((int)rnum("stdout_next_offset"), 6);
    /* get_execution too */
    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_1/executions/exe_1?last_n=1000", 200,
             "{\"execution_id\":\"exe_1\",\"status\":\"running\"}");
    fh_route_sse("/v1/devboxes/dbx_1/executions/exe_1/stream_stdout_updates"
                 "?offset=0",
                 so_far, 1, 200, RLMCP_ETIMEDOUT);
    assert_int_equal(fh_call("get_execution", "{\"devbox_id\":\"dbx_1\","
                                              "\"execution_id\":\"exe_1\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("stdout"), "so far");
    fh_reset();
    fh_call("get_execution_logs", "{\"devbox_id\":\"dbx_1\","
                                  "\"execution_id\":\"exe_1\",\"stream\":"
                                  "\"both2\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
}

static void run_code_reuses(void **state)
{
    fh_reset();
    fh_route("GET", "/v1/devboxes?limit=100&status=running", 200,
             "{\"devboxes\":[{\"id\":\"dbx_other\",\"status\":\"running\","
             "\"metadata\":{}},{\"id\":\"dbx_1\",\"status\":\"running\","
             "\"metadata\":{\"purpose\":\"code-testing\"}}],"
             "\"has_more\":false}");
    fh_route("POST", "/v1/devboxes/dbx_1/write_file_contents", 200, "{}");
    fh_route("POST", EXEC_PATH, 200, DONE("passed", 0));
    assert_int_equal(fh_call("run_code",
                             "{\"files\":{\"/home/user/t.py\":\"print(1)\"},"
                             "\"command\":\"python3 /home/user/t.py\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_true(rbool("reused"));
    assert_string_equal(rstr("devbox_id"), "dbx_1");
    assert_null(fh_find_request("POST", "/v1/devboxes/dbx_1/shutdown"));
    for (size_t i = 0; i < fh_request_count(); i++)
        assert_string_not_equal(fh_request_at(i)->path, "/v1/devboxes");
}

#define BP_BY_NAME "/v1/blueprints?name=node&status=build_complete&limit=1"

static void run_code_prefers_blueprint(void **state)
{
    cJSON *body;

    /* The name resolves to its latest build; only a box of it is reused. */
    fh_reset();
    fh_route("GET", BP_BY_NAME, 200,
             "{\"blueprints\":[{\"id\":\"bpt_n\",\"name\":\"node\","
             "\"status\":\"build_complete\"}],\"has_more\":false}");
    fh_route("GET", "/v1/devboxes?limit=100&status=running", 200,
             "{\"devboxes\":[{\"id\":\"dbx_a\",\"status\":\"running\","
             "\"metadata\":{\"purpose\":\"code-testing\"}},{\"id\":\"dbx_b\","
             "\"status\":\"running\",\"blueprint_id\":\"bpt_n\",\"metadata\":"
             "{\"purpose\":\"code-testing\",\"blueprint_name\":\"node\"}}],"
             "\"has_more\":false}");
    fh_route("POST", "/v1/devboxes/dbx_b/execute*", 200, DONE("", 0));
    assert_int_equal(fh_call("run_code", "{\"command\":\"node -v\","
                                         "\"blueprint_name\":\"node\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("devbox_id"), "dbx_b");
    assert_string_equal(rstr("blueprint_id"), "bpt_n");
    assert_string_equal(rstr("blueprint_name"), "node");
    assert_non_null(fh_find_request("POST", "/v1/devboxes/dbx_b/execute"));

    /* A box of another image is not reused: a new one from the build. */
    fh_reset();
    fh_route("GET", BP_BY_NAME, 200,
             "{\"blueprints\":[{\"id\":\"bpt_n\",\"name\":\"node\","
             "\"status\":\"build_complete\"}],\"has_more\":false}");
    fh_route("GET", "/v1/devboxes?limit=100&status=running", 200,
             "{\"devboxes\":[{\"id\":\"dbx_a\",\"status\":\"running\","
             "\"metadata\":{\"purpose\":\"code-testing\"}}],"
             "\"has_more\":false}");
    fh_route("POST", "/v1/devboxes", 200,
             "{\"id\":\"dbx_n\",\"status\":\"running\"}");
    fh_route("GET", "/v1/devboxes/dbx_n", 200,
             "{\"id\":\"dbx_n\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_n/execute*", 200, DONE("", 0));
    assert_int_equal(fh_call("run_code", "{\"command\":\"node -v\","
                                         "\"blueprint_name\":\"node\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("devbox_id"), "dbx_n");
    assert_false(rbool("reused"));
    body = fh_request_json(fh_find_request("POST", "/v1/devboxes"));
    assert_string_equal(cJSON_GetObjectItem(body, "blueprint_id")->valuestring,
                        "bpt_n");
    assert_null(cJSON_GetObjectItem(body, "blueprint_name"));

    /* A name without a build is the backend's to resolve (an image name):
     * the create names it, and the sandbox is tagged with it. */
    fh_reset();
    fh_route("GET", BP_BY_NAME, 200, "{\"blueprints\":[],\"has_more\":false}");
    fh_route("GET", "/v1/devboxes?limit=100&status=running", 200,
             "{\"devboxes\":[{\"id\":\"dbx_a\",\"status\":\"running\","
             "\"metadata\":{\"purpose\":\"code-testing\"}}],"
             "\"has_more\":false}");
    fh_route("POST", "/v1/devboxes", 200,
             "{\"id\":\"dbx_i\",\"status\":\"running\"}");
    fh_route("GET", "/v1/devboxes/dbx_i", 200,
             "{\"id\":\"dbx_i\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_i/execute*", 200, DONE("", 0));
    assert_int_equal(fh_call("run_code", "{\"command\":\"node -v\","
                                         "\"blueprint_name\":\"node\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("devbox_id"), "dbx_i");
    assert_string_equal(rstr("blueprint_name"), "node");
    body = fh_request_json(fh_find_request("POST", "/v1/devboxes"));
    assert_string_equal(
        cJSON_GetObjectItem(body, "blueprint_name")->valuestring, "node");
    assert_null(cJSON_GetObjectItem(body, "blueprint_id"));
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "metadata"),
                            "blueprint_name")
            ->valuestring,
        "node");

    /* ... and such a sandbox is reused for that name only. */
    fh_reset();
    fh_route("GET", BP_BY_NAME, 200, "{\"blueprints\":[],\"has_more\":false}");
    fh_route("GET", "/v1/devboxes?limit=100&status=running", 200,
             "{\"devboxes\":[{\"id\":\"dbx_a\",\"status\":\"running\","
             "\"metadata\":{\"purpose\":\"code-testing\"}},{\"id\":\"dbx_i\","
             "\"status\":\"running\",\"metadata\":{\"purpose\":"
             "\"code-testing\",\"blueprint_name\":\"node\"}}],"
             "\"has_more\":false}");
    fh_route("POST", "/v1/devboxes/dbx_i/execute*", 200, DONE("", 0));
    assert_int_equal(fh_call("run_code", "{\"command\":\"node -v\","
                                         "\"blueprint_name\":\"node\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("devbox_id"), "dbx_i");
    assert_true(rbool("reused"));

    /* A name the backend does not know either is not_found, and nothing
     * runs. */
    fh_reset();
    fh_route("GET", BP_BY_NAME, 200, "{\"blueprints\":[],\"has_more\":false}");
    fh_route("GET", "/v1/devboxes?limit=100&status=running", 200,
             "{\"devboxes\":[],\"has_more\":false}");
    fh_route("POST", "/v1/devboxes", 400,
             "{\"message\":\"no successful build of a blueprint named "
             "node\"}");
    fh_call("run_code",
            "{\"command\":\"node -v\",\"blueprint_name\":\"node\"}");
    assert_string_equal(fh_error_code(), "not_found");
    assert_non_null(strstr(fh_error_message(), "'node'"));
    assert_non_null(strstr(fh_error_message(), "no successful build of a "
                                               "blueprint named node"));
    assert_null(fh_find_request("POST", "/v1/devboxes/dbx_i/execute"));
    assert_int_equal(fh_request_count(), 3);
}

static void run_code_creates_and_cleans_up(void **state)
{
    cJSON *body;
    const struct fh_request *sd;

    /* created, execution fails -> shut down */
    fh_reset();
    fh_route("GET", "/v1/devboxes?limit=100&status=running", 200,
             "{\"devboxes\":[],\"has_more\":false}");
    fh_route("POST", "/v1/devboxes", 200,
             "{\"id\":\"dbx_n\",\"status\":\"provisioning\"}");
    fh_route("GET", "/v1/devboxes/dbx_n", 200,
             "{\"id\":\"dbx_n\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_n/execute*", 500,
             "{\"message\":\"boom\"}");
    fh_route("GET", "/v1/devboxes/dbx_n", 200,
             "{\"id\":\"dbx_n\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_n/shutdown?force=true", 200, "{}");
    assert_int_equal(fh_call("run_code", "{\"command\":\"true\"}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "internal");
    assert_non_null(strstr(fh_error_message(), "boom"));
    sd = fh_find_request("POST", "/v1/devboxes/dbx_n/shutdown");
    assert_non_null(sd);
    assert_string_equal(sd->path, "/v1/devboxes/dbx_n/shutdown?force=true");
    body = fh_request_json(fh_find_request("POST", "/v1/devboxes"));
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "metadata"), "purpose")
            ->valuestring,
        "code-testing");
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "launch_parameters"),
                            "keep_alive_time_seconds")
            ->valueint,
        3600);

    /* created, non-zero exit -> kept */
    fh_reset();
    fh_route("GET", "/v1/devboxes?limit=100&status=running", 200,
             "{\"devboxes\":[],\"has_more\":false}");
    fh_route("POST", "/v1/devboxes", 200,
             "{\"id\":\"dbx_n\",\"status\":\"running\"}");
    fh_route("GET", "/v1/devboxes/dbx_n", 200,
             "{\"id\":\"dbx_n\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_n/execute*", 200, DONE("", 1));
    assert_int_equal(fh_call("run_code", "{\"command\":\"false\"}"), RLMCP_OK);
    assert_null(fh_error_code());
    assert_false(rbool("reused"));
    assert_null(fh_find_request("POST", "/v1/devboxes/dbx_n/shutdown"));

    /* created, cancelled -> shut down even though cancelled */
    fh_reset();
    fh_route("GET", "/v1/devboxes?limit=100&status=running", 200,
             "{\"devboxes\":[],\"has_more\":false}");
    fh_route("POST", "/v1/devboxes", 200,
             "{\"id\":\"dbx_n\",\"status\":\"running\"}");
    fh_route("GET", "/v1/devboxes/dbx_n", 200,
             "{\"id\":\"dbx_n\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_n/execute*", 200,
             "{\"execution_id\":\"exe_9\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_n/executions/exe_9/kill", 200, "{}");
    fh_route("POST", "/v1/devboxes/dbx_n/shutdown?force=true", 200, "{}");
    fh_cancel_after(4);
    assert_int_equal(fh_call("run_code", "{\"command\":\"sleep 600\"}"),
                     RLMCP_ECANCELLED);
    assert_non_null(
        fh_find_request("POST", "/v1/devboxes/dbx_n/executions/exe_9/kill"));
    sd = fh_find_request("POST", "/v1/devboxes/dbx_n/shutdown");
    assert_non_null(sd);
    assert_true(sd->cancelled_at_send);
}

static void run_python_resumes_and_suspends(void **state)
{
    cJSON *body;

    fh_reset();
    fh_route("GET", "/v1/devboxes?limit=100", 200,
             "{\"devboxes\":[{\"id\":\"dbx_old\",\"status\":\"shutdown\","
             "\"metadata\":{\"language\":\"python\",\"managed_by\":"
             "\"runloop-mcp.exec\",\"image\":\"default\"}},"
             /* Running but untagged (made before the image tag) or for
              * another image: never reused. */
             "{\"id\":\"dbx_untagged\",\"status\":\"running\","
             "\"metadata\":{\"language\":\"python\",\"managed_by\":"
             "\"runloop-mcp.exec\"}},{\"id\":\"dbx_other\",\"status\":"
             "\"running\",\"metadata\":{\"language\":\"python\","
             "\"managed_by\":\"runloop-mcp.exec\",\"image\":\"gcc-bp\"}},"
             "{\"id\":\"dbx_1\",\"status\":"
             "\"suspended\",\"metadata\":{\"language\":\"python\","
             "\"managed_by\":\"runloop-mcp.exec\",\"image\":\"default\"}},"
             "{\"id\":\"dbx_c\","
             "\"status\":\"running\",\"metadata\":{\"language\":\"c\","
             "\"managed_by\":\"runloop-mcp.exec\"}}],\"has_more\":false}");
    fh_route("POST", "/v1/devboxes/dbx_1/resume", 200, "{}");
    fh_route("GET", "/v1/devboxes/dbx_1", 200,
             "{\"id\":\"dbx_1\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_1/write_file_contents", 200, "{}");
    fh_route("POST", EXEC_PATH, 200, DONE("3\\n", 0));
    fh_route("POST", "/v1/devboxes/dbx_1/suspend", 200, "{}");
    assert_int_equal(fh_call("run_python", "{\"code\":\"print(1+2)\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("stdout"), "3\n");
    assert_string_equal(rstr("language"), "python");
    assert_string_equal(rstr("file_path"), "/home/user/code.py");
    body = fh_request_json(
        fh_find_request("POST", "/v1/devboxes/dbx_1/write_file_contents"));
    assert_string_equal(cJSON_GetObjectItem(body, "contents")->valuestring,
                        "print(1+2)");
    body = fh_request_json(fh_find_request("POST", EXEC_PATH));
    assert_string_equal(cJSON_GetObjectItem(body, "command")->valuestring,
                        "python3 '/home/user/code.py'");
    assert_non_null(fh_find_request("POST", "/v1/devboxes/dbx_1/resume"));
    assert_non_null(fh_find_request("POST", "/v1/devboxes/dbx_1/suspend"));
}

static void run_c_creates_without_suspend(void **state)
{
    cJSON *body;

    fh_reset();
    fh_route("GET", "/v1/devboxes?limit=100", 200,
             "{\"devboxes\":[],\"has_more\":false}");
    fh_route("POST", "/v1/devboxes", 200,
             "{\"id\":\"dbx_2\",\"status\":\"provisioning\"}");
    fh_route("GET", "/v1/devboxes/dbx_2", 200,
             "{\"id\":\"dbx_2\",\"status\":\"running\"}");
    fh_route("POST", "/v1/devboxes/dbx_2/write_file_contents", 200, "{}");
    fh_route("POST", "/v1/devboxes/dbx_2/execute*", 200, DONE("hi", 0));
    assert_int_equal(fh_call("run_c", "{\"code\":\"int main(){}\","
                                      "\"file_path\":\"/tmp/m.c\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    body = fh_request_json(fh_find_request("POST", "/v1/devboxes"));
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "metadata"), "language")
            ->valuestring,
        "c");
    assert_string_equal(
        cJSON_GetObjectItem(body, "blueprint_name")->valuestring, "gcc-bp");
    /* Tagged with its image, for the next call to find it. */
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "metadata"), "image")
            ->valuestring,
        "gcc-bp");
    body =
        fh_request_json(fh_find_request("POST", "/v1/devboxes/dbx_2/execute"));
    assert_string_equal(cJSON_GetObjectItem(body, "command")->valuestring,
                        "gcc -o '/tmp/m' '/tmp/m.c' && '/tmp/m'");
    assert_null(fh_find_request("POST", "/v1/devboxes/dbx_2/suspend"));

    fh_reset();
    fh_call("run_c", "{\"code\":\"x\",\"file_path\":\"rel.c\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    fh_reset();
    fh_call("run_c", "{}");
    assert_string_equal(fh_error_code(), "invalid_argument");
}

static void run_lang_not_ready(void **state)
{
    fh_reset();
    fh_route("GET", "/v1/devboxes?limit=100", 200,
             "{\"devboxes\":[],\"has_more\":false}");
    fh_route("POST", "/v1/devboxes", 200,
             "{\"id\":\"dbx_3\",\"status\":\"provisioning\"}");
    fh_route_n("GET", "/v1/devboxes/dbx_3", 200,
               "{\"id\":\"dbx_3\",\"status\":\"provisioning\"}", 0);
    fh_route_rc("POST", "/v1/devboxes/dbx_3/wait_for_status", RLMCP_ETIMEDOUT,
                0);
    fh_call("run_python", "{\"code\":\"1\"}");
    assert_string_equal(fh_error_code(), "devbox_not_ready");
    assert_non_null(strstr(fh_error_message(), "dbx_3"));
    /* kept for the next call */
    assert_null(fh_find_request("POST", "/v1/devboxes/dbx_3/shutdown"));
}

static void expand_template(void **state)
{
    char *s =
        run_expand("cd {dir} && x {file} {stem} {other}", "/home/user/it's.py");
    assert_string_equal(s, "cd '/home/user' && x '/home/user/it'\\''s.py' "
                           "'/home/user/it'\\''s' {other}");
    free(s);
    s = run_expand("{file}", "/noext");
    assert_string_equal(s, "'/noext'");
    free(s);
}

static void bad_config(void **state)
{
    static const char *const bad[] = {
        "{\"languages\":{\"py\":{\"extension\":\"py\",\"command\":\"python3\"}}"
        "}",
        "{\"languages\":{\"Py\":{\"extension\":\"py\",\"command\":\"{file}\"}}"
        "}",
        "{\"languages\":{\"py\":{\"command\":\"{file}\"}}}",
        "{\"languages\":{\"py\":{\"extension\":\"py\",\"command\":\"{file}\","
        "\"nope\":1}}}",
        "{\"languages\":[]}",
        "{\"max_output_bytes\":10}",
        "{\"default_timeout_seconds\":100,\"max_timeout_seconds\":10}",
        "{\"run_code\":{\"keep_alive_seconds\":5}}",
        "{\"stream_output\":1}",
    };
    size_t i;

    fh_unload();
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_not_equal(fh_load(rlmcp_plugin_descriptor(), bad[i]),
                             RLMCP_OK);
        assert_non_null(fh_init_error());
        fh_unload();
    }
    setup(state);
}

/* ---- code contexts ------------------------------------------------------ */

#define CTX_DEVBOX(id)                                                         \
    "{\"id\":\"" id "\",\"status\":\"running\",\"metadata\":{\"managed_by\":"  \
    "\"runloop-mcp.exec\",\"role\":\"code-contexts\"},\"tunnel\":{"            \
    "\"tunnel_key\":\"k1\",\"auth_token\":\"t1\"}}"
#define CTX_GW "tunnel/49999/contexts/0123abcd/"

static const cJSON *rfield(const char *key)
{
    return cJSON_GetObjectItem(fh_result(), key);
}

static void ctx_cell_streams_and_shows(void **state)
{
    const struct fh_request *r;
    const cJSON *img, *res, *results;
    cJSON *poll;

    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_c1", 200, CTX_DEVBOX("dbx_c1"));
    fh_route("POST", CTX_GW "execute", 200,
             "{\"run\":\"r1\",\"done\":false,\"events\":[{\"type\":\"stream\","
             "\"name\":\"stdout\",\"text\":\"a\\n\"}],\"next\":1,"
             "\"status\":\"running\"}");
    fh_route(
        "POST", CTX_GW "poll", 200,
        "{\"run\":\"r1\",\"done\":true,\"events\":[{\"type\":\"stream\","
        "\"name\":\"stdout\",\"text\":\"b\\n\"},{\"type\":\"display\","
        "\"data\":{\"text/plain\":\"<Figure>\",\"image/png\":\"iVBORw0K\"}},"
        "{\"type\":\"result\",\"data\":{\"text/plain\":\"42\","
        "\"text/html\":\"<b>42</b>\"}}],\"next\":4,\"status\":\"ok\","
        "\"execution_count\":3,\"error\":null}");
    assert_int_equal(fh_call("run_python", "{\"context\":"
                                           "\"ctx_0123abcd_dbx_c1\",\"code\":"
                                           "\"x\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("stdout"), "a\nb\n");
    assert_string_equal(rstr("status"), "ok");
    assert_string_equal(rstr("context_id"), "ctx_0123abcd_dbx_c1");
    assert_true(rnum("execution_count") == 3);
    assert_true(cJSON_IsNull(rfield("error")));
    results = rfield("results");
    assert_int_equal(cJSON_GetArraySize(results), 2);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(results, 1), "text")
            ->valuestring,
        "42");
    /* stdout streamed as it came: one progress per chunk */
    assert_int_equal(fh_progress_count(), 2);
    assert_string_equal(fh_progress_message(0), "a\n");
    assert_string_equal(fh_progress_message(1), "b\n");
    /* the figure as image content, the HTML as an embedded resource */
    assert_int_equal(fh_content_count(), 2);
    img = fh_content_at(0);
    assert_string_equal(cJSON_GetObjectItem(img, "type")->valuestring, "image");
    assert_string_equal(cJSON_GetObjectItem(img, "mimeType")->valuestring,
                        "image/png");
    assert_string_equal(cJSON_GetObjectItem(img, "data")->valuestring,
                        "iVBORw0K");
    res = cJSON_GetObjectItem(fh_content_at(1), "resource");
    assert_string_equal(cJSON_GetObjectItem(res, "mimeType")->valuestring,
                        "text/html");
    assert_string_equal(cJSON_GetObjectItem(res, "text")->valuestring,
                        "<b>42</b>");
    /* the tunnel of the devbox, and the poll picks up after the first event */
    r = fh_find_request("POST", CTX_GW "execute");
    assert_string_equal(r->tunnel_key, "k1");
    assert_string_equal(r->tunnel_token, "t1");
    assert_int_equal(r->max_retries, 0); /* a cell never runs twice */
    poll = fh_request_json(fh_find_request("POST", CTX_GW "poll"));
    assert_string_equal(cJSON_GetObjectItem(poll, "run")->valuestring, "r1");
    assert_true(cJSON_GetObjectItem(poll, "after")->valuedouble == 1);

    /* A second cell uses the tunnel it knows: no devbox read. */
    fh_reset();
    fh_route("POST", CTX_GW "execute", 200,
             "{\"run\":\"r2\",\"done\":true,\"events\":[],\"next\":0,"
             "\"status\":\"error\",\"execution_count\":4,\"error\":{"
             "\"ename\":\"NameError\",\"evalue\":\"name 'y' is not defined\","
             "\"traceback\":[\"NameError: name 'y' is not defined\"]}}");
    assert_int_equal(fh_call("run_code", "{\"context\":"
                                         "\"ctx_0123abcd_dbx_c1\",\"code\":"
                                         "\"y\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(fh_count_requests("GET", "/v1/devboxes/"), 0);
    assert_string_equal(rstr("status"), "error");
    assert_string_equal(
        cJSON_GetObjectItem(rfield("error"), "ename")->valuestring,
        "NameError");
}

static void ctx_bad_ids(void **state)
{
    fh_reset();
    assert_int_equal(fh_call("run_python", "{\"context\":\"c1\",\"code\":"
                                           "\"1\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "not a code context id"));
    assert_non_null(strstr(fh_error_remedy(), "create_code_context"));
    assert_int_equal(fh_request_count(), 0);

    /* a devbox that is not a contexts devbox */
    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_c2", 200,
             "{\"id\":\"dbx_c2\",\"status\":\"running\",\"metadata\":{}}");
    assert_int_equal(fh_call("restart_code_context",
                             "{\"context_id\":\"ctx_0123abcd_dbx_c2\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "holds no code contexts"));

    /* the gateway does not know the context */
    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_c3", 200, CTX_DEVBOX("dbx_c3"));
    fh_route("POST", CTX_GW "delete", 404,
             "{\"code\":\"not_found\",\"message\":\"no context 0123abcd\"}");
    assert_int_equal(fh_call("delete_code_context",
                             "{\"context_id\":\"ctx_0123abcd_dbx_c3\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "not_found");
    assert_non_null(strstr(fh_error_message(), "unknown context_id"));

    /* file_path and a command do not go with a context */
    fh_reset();
    assert_int_equal(fh_call("run_code", "{\"context\":\"ctx_0123abcd_dbx_c3\","
                                         "\"command\":\"ls\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "'command'"));

    /* code without a context is not a command */
    fh_reset();
    assert_int_equal(fh_call("run_code", "{\"code\":\"print(1)\"}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "'context'"));
    assert_int_equal(fh_request_count(), 0);
}

static void assert_interrupt_names_our_run(void)
{
    cJSON *ex = fh_request_json(fh_find_request("POST", CTX_GW "execute"));
    cJSON *in = fh_request_json(fh_find_request("POST", CTX_GW "interrupt"));
    const char *sent = NULL, *named = NULL;

    assert_non_null(ex);
    assert_non_null(in);
    sent = cJSON_GetStringValue(cJSON_GetObjectItem(ex, "run"));
    named = cJSON_GetStringValue(cJSON_GetObjectItem(in, "run"));
    assert_non_null(sent);
    assert_int_equal(strlen(sent), 16);
    assert_int_equal(strspn(sent, "0123456789abcdef"), 16);
    assert_non_null(named);
    assert_string_equal(named, sent);
}

static void ctx_cancel_interrupts(void **state)
{
    const struct fh_request *i;

    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_c4", 200, CTX_DEVBOX("dbx_c4"));
    fh_route("POST", CTX_GW "execute", 200,
             "{\"run\":\"r1\",\"done\":false,\"events\":[],\"next\":0,"
             "\"status\":\"running\"}");
    fh_route("POST", CTX_GW "poll", 200,
             "{\"run\":\"r1\",\"done\":false,\"events\":[],\"next\":0,"
             "\"status\":\"running\"}");
    fh_route("POST", CTX_GW "interrupt", 200, "{}");
    fh_cancel_after(2); /* after the devbox read and the cell's start */
    assert_int_equal(fh_call("run_python", "{\"context\":"
                                           "\"ctx_0123abcd_dbx_c4\",\"code\":"
                                           "\"import time; time.sleep(60)\"}"),
                     RLMCP_ECANCELLED);
    i = fh_find_request("POST", CTX_GW "interrupt");
    assert_non_null(i);
    assert_true(i->cancelled_at_send);
    assert_true(i->flags & RLMCP_HTTP_IGNORE_CANCEL);
    assert_interrupt_names_our_run();
}

/* A cancel that cuts the execute short (the gateway may have started the
 * cell, or answered "busy" for another call's): the interrupt names the
 * run id the execute sent, so the gateway stops only that cell. */
static void ctx_cancel_before_answer_names_run(void **state)
{
    fh_reset();
    fh_route("GET", "/v1/devboxes/dbx_c5", 200, CTX_DEVBOX("dbx_c5"));
    fh_route("POST", CTX_GW "execute", 409,
             "{\"code\":\"busy\",\"message\":\"context 0123abcd is "
             "running another cell\"}");
    fh_route("POST", CTX_GW "interrupt", 200, "{}");
    fh_cancel_after(1); /* after the devbox read: the execute is cut short */
    assert_int_equal(fh_call("run_python", "{\"context\":"
                                           "\"ctx_0123abcd_dbx_c5\",\"code\":"
                                           "\"1\"}"),
                     RLMCP_ECANCELLED);
    assert_interrupt_names_our_run();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registers_tools),
        cmocka_unit_test(execute_fast_path),
        cmocka_unit_test(execute_nonzero_exit_is_result),
        cmocka_unit_test(execute_prefix_working_dir_env),
        cmocka_unit_test(execute_args_quoted),
        cmocka_unit_test(execute_bad_args),
        cmocka_unit_test(truncation_keeps_head_and_tail),
        cmocka_unit_test(api_truncated_refetches_stream),
        cmocka_unit_test(streaming_progress),
        cmocka_unit_test(stream_cut_progress_gets_the_rest),
        cmocka_unit_test(stream_reconnects_after_408),
        cmocka_unit_test(wait_loop_without_stream),
        cmocka_unit_test(timeout_kills),
        cmocka_unit_test(timeout_kill_retried_and_confirmed),
        cmocka_unit_test(timeout_cut_by_call_limit),
        cmocka_unit_test(timeout_kill_unconfirmed),
        cmocka_unit_test(task_timeout),
        cmocka_unit_test(list_executions_from_log),
        cmocka_unit_test(cancel_kills),
        cmocka_unit_test(cancel_during_execute_kills),
        cmocka_unit_test(suspended_devbox),
        cmocka_unit_test(async_get_wait_kill_stdin),
        cmocka_unit_test(logs_pages),
        cmocka_unit_test(run_shell_and_running_logs),
        cmocka_unit_test(run_code_reuses),
        cmocka_unit_test(run_code_prefers_blueprint),
        cmocka_unit_test(run_code_creates_and_cleans_up),
        cmocka_unit_test(run_python_resumes_and_suspends),
        cmocka_unit_test(run_c_creates_without_suspend),
        cmocka_unit_test(run_lang_not_ready),
        cmocka_unit_test(expand_template),
        cmocka_unit_test(bad_config),
        cmocka_unit_test(ctx_cell_streams_and_shows),
        cmocka_unit_test(ctx_bad_ids),
        cmocka_unit_test(ctx_cancel_interrupts),
        cmocka_unit_test(ctx_cancel_before_answer_names_run),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
