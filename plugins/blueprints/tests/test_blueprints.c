/*
 * test_blueprints.c - the blueprints plugin against the fake host table,
 * and the build-log helpers on their own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../build_log.h"
#include "fake_host.h"
#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"

const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(void);

static int setup(void **state)
{
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(),
                             "{\"build_wait_seconds\":1,"
                             "\"poll_interval_ms\":100,"
                             "\"max_progress_bytes\":256}"),
                     RLMCP_OK);
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

#define BPT(st) "{\"id\":\"bpt_1\",\"name\":\"py\",\"status\":\"" st "\"}"

static void registers(void **state)
{
    assert_int_equal(fh_tool_count(), 6);
    assert_non_null(fh_tool("tag_blueprint"));
    assert_non_null(strstr(fh_tool("list_blueprints")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("get_blueprint_logs")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("delete_blueprint")->annotations_json,
                           "\"destructiveHint\":true"));
    assert_non_null(strstr(fh_tool("build_blueprint")->annotations_json,
                           "\"idempotentHint\":false"));
    assert_int_equal(fh_tool("build_blueprint")->timeout_ms, 61000);
}

static void tag_moves_and_reports(void **state)
{
    cJSON *body;

    fh_reset();
    fh_route("POST", "/v1/blueprints/bpt_1/tag", 200,
             "{\"id\":\"bpt_1\",\"name\":\"n\",\"status\":"
             "\"build_complete\",\"tags\":[\"stable\"],\"parameters\":{}}");
    assert_int_equal(fh_call("tag_blueprint", "{\"blueprint_id\":\"bpt_1\","
                                              "\"tag\":\"stable\"}"),
                     RLMCP_OK);
    body = fh_request_json(fh_find_request("POST", "/v1/blueprints/bpt_1/tag"));
    assert_string_equal(cJSON_GetObjectItem(body, "tag")->valuestring,
                        "stable");
    assert_string_equal(
        cJSON_GetArrayItem(cJSON_GetObjectItem(fh_result(), "tags"), 0)
            ->valuestring,
        "stable");
    assert_null(cJSON_GetObjectItem(fh_result(), "parameters"));

    /* The engine's 400 (e.g. a failed build) is the agent's to fix. */
    fh_reset();
    fh_route("POST", "/v1/blueprints/bpt_1/tag", 400,
             "{\"message\":\"blueprint bpt_1 is failed: only a completed "
             "build can be tagged\"}");
    fh_call("tag_blueprint", "{\"blueprint_id\":\"bpt_1\",\"tag\":\"s\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "only a completed build"));

    /* A backend without tags while the blueprint is there. */
    fh_reset();
    fh_route("POST", "/v1/blueprints/bpt_1/tag", 404,
             "{\"message\":\"Not Found\"}");
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("build_complete"));
    fh_call("tag_blueprint", "{\"blueprint_id\":\"bpt_1\",\"tag\":\"s\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "no blueprint tags"));

    /* An unknown blueprint. */
    fh_reset();
    fh_route("POST", "/v1/blueprints/bpt_1/tag", 404,
             "{\"message\":\"blueprint bpt_1 not found\"}");
    fh_route("GET", "/v1/blueprints/bpt_1", 404,
             "{\"message\":\"blueprint bpt_1 not found\"}");
    fh_call("tag_blueprint", "{\"blueprint_id\":\"bpt_1\",\"tag\":\"s\"}");
    assert_string_equal(fh_error_code(), "not_found");
}

static void build_request_body(void **state)
{
    cJSON *body, *lp;

    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, BPT("queued"));
    assert_int_equal(
        fh_call("build_blueprint",
                "{\"name\":\"py\",\"dockerfile\":\"FROM runloop:bpt_0\\nRUN "
                "true\",\"system_setup_commands\":[\"pip install x\"],"
                "\"base_blueprint_name\":\"base\",\"file_mounts\":{\"/a\":"
                "\"1\"},\"build_args\":{\"V\":\"2\"},\"metadata\":{\"m\":"
                "\"3\"},\"launch_commands\":[\"echo hi\"],\"resource_size\":"
                "\"SMALL\",\"architecture\":\"x86_64\",\"wait\":false}"),
        RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("id"), "bpt_1");
    assert_string_equal(rstr("status"), "queued");
    assert_int_equal(fh_request_count(), 1);
    body = fh_request_json(fh_request_at(0));
    assert_string_equal(cJSON_GetObjectItem(body, "name")->valuestring, "py");
    assert_non_null(strstr(cJSON_GetObjectItem(body, "dockerfile")->valuestring,
                           "RUN true"));
    assert_string_equal(
        cJSON_GetArrayItem(cJSON_GetObjectItem(body, "system_setup_commands"),
                           0)
            ->valuestring,
        "pip install x");
    assert_string_equal(
        cJSON_GetObjectItem(body, "base_blueprint_name")->valuestring, "base");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "file_mounts"), "/a")
            ->valuestring,
        "1");
    assert_non_null(cJSON_GetObjectItem(body, "build_args"));
    assert_non_null(cJSON_GetObjectItem(body, "metadata"));
    lp = cJSON_GetObjectItem(body, "launch_parameters");
    assert_string_equal(
        cJSON_GetObjectItem(lp, "resource_size_request")->valuestring, "SMALL");
    assert_string_equal(cJSON_GetObjectItem(lp, "architecture")->valuestring,
                        "x86_64");
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(lp, "launch_commands")), 1);
    assert_null(cJSON_GetObjectItem(body, "wait"));
}

static void build_follows_with_log_progress(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, BPT("provisioning"));
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("building"));
    fh_route("GET", "/v1/blueprints/bpt_1/logs", 200,
             "{\"blueprint_id\":\"bpt_1\",\"logs\":[{\"level\":\"info\","
             "\"message\":\"Step 1/2 : RUN apt-get update\"}]}");
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("building"));
    fh_route("GET", "/v1/blueprints/bpt_1/logs", 200,
             "{\"logs\":[{\"message\":\"Step 1/2 : RUN apt-get update\"},"
             "{\"message\":\"Step 2/2 : RUN pip install x\"},"
             "{\"message\":\"Successfully installed x\"}]}");
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("build_complete"));
    fh_route("GET", "/v1/blueprints/bpt_1/logs", 200,
             "{\"logs\":[{\"message\":\"Step 1/2 : RUN apt-get update\"},"
             "{\"message\":\"Step 2/2 : RUN pip install x\"},"
             "{\"message\":\"Successfully installed x\"}]}");
    assert_int_equal(fh_call("build_blueprint", "{\"name\":\"py\"}"), RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("status"), "build_complete");
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "log_lines")->valueint,
                     3);
    /* one message per new batch of lines or status change */
    assert_int_equal(fh_progress_count(), 3);
    assert_true(fh_progress_value(1) > fh_progress_value(0));
    assert_true(fh_progress_value(2) > fh_progress_value(1));
    assert_non_null(strstr(fh_progress_message(0), "building"));
    assert_non_null(strstr(fh_progress_message(0), "Step 1/2"));
    /* only the new lines, not the ones sent before */
    assert_null(strstr(fh_progress_message(1), "Step 1/2"));
    assert_non_null(strstr(fh_progress_message(1), "Step 2/2"));
    assert_non_null(strstr(fh_progress_message(1), "Successfully"));
    assert_non_null(strstr(fh_progress_message(2), "build_complete"));
}

static void build_failure_names_step(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, BPT("queued"));
    fh_route("GET", "/v1/blueprints/bpt_1", 200,
             "{\"id\":\"bpt_1\",\"name\":\"py\",\"status\":\"failed\","
             "\"failure_reason\":\"build_failed\"}");
    fh_route("GET", "/v1/blueprints/bpt_1/logs", 200,
             "{\"logs\":[{\"level\":\"info\",\"message\":\"step 1/2: RUN "
             "true\"},{\"level\":\"info\",\"message\":\"step 2/2: RUN "
             "false\"},{\"level\":\"info\",\"message\":\"some output\"},"
             "{\"level\":\"error\",\"message\":\"command exited with code 1"
             "\"},{\"level\":\"info\",\"message\":\"cleaning up\"}]}");
    assert_int_equal(fh_call("build_blueprint", "{\"name\":\"py\"}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "bpt_1"));
    assert_non_null(strstr(fh_error_message(), "build_failed"));
    assert_non_null(strstr(fh_error_message(),
                           "step 2/2: RUN false: command exited with code 1"));
    assert_non_null(strstr(fh_error_remedy(), "get_blueprint_logs"));

    /* awaiting_upload is terminal for this tool */
    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, BPT("queued"));
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("awaiting_upload"));
    fh_route("GET", "/v1/blueprints/bpt_1/logs", 200, "{\"logs\":[]}");
    fh_call("build_blueprint", "{\"name\":\"py\"}");
    assert_string_equal(fh_error_code(), "internal");
    assert_int_equal(fh_count_requests("GET", "/v1/blueprints/bpt_1"), 2);
}

#define BPT_W(st)                                                              \
    "{\"id\":\"bpt_1\",\"name\":\"py\",\"status\":\"" st                       \
    "\",\"supports_wait_for_status\":true}"
#define WAIT_PATH "/v1/blueprints/bpt_1/wait_for_status"

/* A backend whose view offers wait_for_status (devboxd): the pauses are
 * held by the engine until the build ends, never slept; without it (the
 * cloud) the route is never asked; a backend refusing it is polled. */
static void build_waits_when_offered(void **state)
{
    const struct fh_request *r = NULL;
    cJSON *body = NULL;

    /* A bound of 10 s: the 408 stands for a whole second held. */
    fh_unload();
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(),
                             "{\"build_wait_seconds\":10,"
                             "\"poll_interval_ms\":100}"),
                     RLMCP_OK);
    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, BPT_W("queued"));
    fh_route_n("GET", "/v1/blueprints/bpt_1/logs", 200, "{\"logs\":[]}", 0);
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_W("building"));
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_W("building"));
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_W("build_complete"));
    fh_route("POST", WAIT_PATH, 408,
             "{\"message\":\"did not reach the requested status\"}");
    fh_route("POST", WAIT_PATH, 200, BPT_W("build_complete"));
    assert_int_equal(fh_call("build_blueprint", "{\"name\":\"py\"}"), RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("status"), "build_complete");
    assert_int_equal(fh_count_requests("POST", WAIT_PATH), 2);
    assert_int_equal(fh_sleep_count(), 0);
    r = fh_find_request("POST", WAIT_PATH);
    assert_non_null(r);
    body = fh_request_json(r);
    /* poll_interval_ms 100: held up to a second, for the terminal ones */
    assert_int_equal(cJSON_GetObjectItem(body, "timeout_seconds")->valueint, 1);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(body, "statuses")),
                     3);

    /* The cloud's view: polled with pauses, the route never asked. */
    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, BPT("queued"));
    fh_route_n("GET", "/v1/blueprints/bpt_1/logs", 200, "{\"logs\":[]}", 0);
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("building"));
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("build_complete"));
    assert_int_equal(fh_call("build_blueprint", "{\"name\":\"py\"}"), RLMCP_OK);
    assert_string_equal(rstr("status"), "build_complete");
    assert_int_equal(fh_count_requests("POST", WAIT_PATH), 0);
    assert_int_equal(fh_sleep_count(), 1);

    /* Offered but refused (404): polled as the cloud is. */
    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, BPT_W("queued"));
    fh_route_n("GET", "/v1/blueprints/bpt_1/logs", 200, "{\"logs\":[]}", 0);
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_W("building"));
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_W("build_complete"));
    fh_route_n("POST", WAIT_PATH, 404, "{\"message\":\"no such route\"}", 0);
    assert_int_equal(fh_call("build_blueprint", "{\"name\":\"py\"}"), RLMCP_OK);
    assert_string_equal(rstr("status"), "build_complete");
    assert_int_equal(fh_count_requests("POST", WAIT_PATH), 1);
    assert_int_equal(fh_sleep_count(), 1);
    fh_unload();
    setup(state);
}

static void build_bound_and_cancel(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, BPT("queued"));
    fh_route_n("GET", "/v1/blueprints/bpt_1/logs", 200, "{\"logs\":[]}", 0);
    fh_route_n("GET", "/v1/blueprints/bpt_1", 200, BPT("building"), 0);
    assert_int_equal(fh_call("build_blueprint", "{\"name\":\"py\"}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "timeout");
    assert_non_null(strstr(fh_error_message(), "blueprint_id=bpt_1"));
    assert_non_null(strstr(fh_error_remedy(), "get_blueprint"));
    /* Pauses of 10, 20, 40, 80 ms, then the 100 ms poll interval until
     * 1 s was slept: 14 polls of the status (and of the logs). */
    assert_int_equal(fh_count_requests("GET", "/v1/blueprints/bpt_1/logs"), 14);
    assert_int_equal(fh_sleep_count(), 13);
    assert_int_equal(fh_sleep_at(0), 10);
    assert_int_equal(fh_sleep_at(1), 20);
    assert_int_equal(fh_sleep_at(2), 40);
    assert_int_equal(fh_sleep_at(3), 80);
    assert_int_equal(fh_sleep_at(4), 100);
    assert_int_equal(fh_sleep_at(12), 100);
    /* the status did not change and no lines came: one message */
    assert_int_equal(fh_progress_count(), 1);

    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, BPT("queued"));
    fh_route_n("GET", "/v1/blueprints/bpt_1/logs", 200, "{\"logs\":[]}", 0);
    fh_route_n("GET", "/v1/blueprints/bpt_1", 200, BPT("building"), 0);
    fh_cancel_after(3);
    assert_int_equal(fh_call("build_blueprint", "{\"name\":\"py\"}"),
                     RLMCP_ECANCELLED);
    assert_null(fh_error_code());
}

static void build_bad_input(void **state)
{
    static const char *const bad[] = {
        "{}",
        "{\"name\":\"\"}",
        "{\"name\":\"a\",\"base_blueprint_id\":\"bpt_1\","
        "\"base_blueprint_name\":\"b\"}",
        "{\"name\":\"a\",\"system_setup_commands\":\"ls\"}",
        "{\"name\":\"a\",\"system_setup_commands\":[1]}",
        "{\"name\":\"a\",\"launch_commands\":[true]}",
        "{\"name\":\"a\",\"file_mounts\":{\"/a\":1}}",
        "{\"name\":\"a\",\"dockerfile\":7}",
        "{\"name\":\"a\",\"nope\":true}",
        "{\"name\":\"a\",\"wait\":\"yes\"}",
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        fh_reset();
        assert_int_equal(fh_call("build_blueprint", bad[i]), RLMCP_OK);
        assert_string_equal(fh_error_code(), "invalid_argument");
        assert_int_equal(fh_request_count(), 0);
    }

    /* the API rejects it */
    fh_reset();
    fh_route("POST", "/v1/blueprints", 400,
             "{\"message\":\"unsupported instruction\"}");
    fh_call("build_blueprint", "{\"name\":\"a\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "unsupported instruction"));
    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, "{\"status\":\"queued\"}");
    fh_call("build_blueprint", "{\"name\":\"a\"}");
    assert_string_equal(fh_error_code(), "internal");
}

static void list_get_logs_delete(void **state)
{
    const cJSON *lines;

    fh_reset();
    fh_route("GET",
             "/v1/blueprints?limit=5&name=runloop%2Fstarter&status="
             "build_complete",
             200,
             "{\"blueprints\":[{\"id\":\"bpt_1\",\"name\":\"runloop/starter"
             "\",\"status\":\"build_complete\",\"parameters\":{}}],"
             "\"has_more\":false}");
    assert_int_equal(fh_call("list_blueprints",
                             "{\"name\":\"runloop/starter\",\"status\":"
                             "\"build_complete\",\"limit\":5}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(fh_result(), "blueprints")), 1);
    assert_null(cJSON_GetObjectItem(
        cJSON_GetArrayItem(cJSON_GetObjectItem(fh_result(), "blueprints"), 0),
        "parameters"));

    fh_reset();
    fh_route("GET", "/v1/blueprints/list_public?limit=20", 200,
             "{\"blueprints\":[],\"has_more\":false}");
    assert_int_equal(fh_call("list_blueprints", "{\"public\":true}"), RLMCP_OK);
    assert_null(fh_error_code());

    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200,
             "{\"id\":\"bpt_1\",\"status\":\"failed\",\"parameters\":{"
             "\"name\":\"py\"}}");
    assert_int_equal(fh_call("get_blueprint", "{\"blueprint_id\":\"bpt_1\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("status"), "failed");
    assert_non_null(cJSON_GetObjectItem(fh_result(), "parameters"));

    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_x", 404,
             "{\"message\":\"blueprint not found\"}");
    fh_call("get_blueprint", "{\"blueprint_id\":\"bpt_x\"}");
    assert_string_equal(fh_error_code(), "not_found");

    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1/logs", 200,
             "{\"logs\":[{\"level\":\"info\",\"message\":\"a\","
             "\"timestamp_ms\":1},{\"level\":\"info\",\"message\":\"b\"},"
             "{\"level\":\"error\",\"message\":\"c\"}]}");
    assert_int_equal(fh_call("get_blueprint_logs",
                             "{\"blueprint_id\":\"bpt_1\",\"tail\":2}"),
                     RLMCP_OK);
    lines = cJSON_GetObjectItem(fh_result(), "lines");
    assert_int_equal(cJSON_GetArraySize(lines), 2);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetArrayItem(lines, 0), "message")
            ->valuestring,
        "b");
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "total_lines")->valueint,
                     3);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "truncated")));

    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1/logs", 200, "{}");
    fh_call("get_blueprint_logs", "{\"blueprint_id\":\"bpt_1\"}");
    assert_string_equal(fh_error_code(), "internal");
    fh_reset();
    fh_call("get_blueprint_logs", "{\"blueprint_id\":\"bpt_1\",\"tail\":0}");
    assert_string_equal(fh_error_code(), "invalid_argument");

    fh_reset();
    fh_route("POST", "/v1/blueprints/bpt_1/delete", 200, "");
    assert_int_equal(
        fh_call("delete_blueprint", "{\"blueprint_id\":\"bpt_1\"}"), RLMCP_OK);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "deleted")));
    fh_reset();
    fh_route("POST", "/v1/blueprints/bpt_1/delete", 400,
             "{\"message\":\"snapshots depend on this blueprint\"}");
    fh_call("delete_blueprint", "{\"blueprint_id\":\"bpt_1\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "snapshots depend"));
    fh_reset();
    fh_call("delete_blueprint", "{\"blueprint_id\":\"a/b\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_int_equal(fh_request_count(), 0);
}

static void bad_config(void **state)
{
    /* Checked by the host against schemas/config.json. */
    static const struct fh_bad_config bad[] = {
        {"{\"build_wait_seconds\":0}",
         "config.build_wait_seconds: must be >= 1"},
        {"{\"poll_interval_ms\":99}",
         "config.poll_interval_ms: must be >= 100"},
        {"{\"max_progress_bytes\":10}", "config.max_progress_bytes"},
        {"{\"build_wait_secs\":10}", "unknown property 'build_wait_secs'"},
        {"\"x\"", "config: expected object"},
    };
    char *why = NULL;

    fh_unload();
    why = fh_init_refusals(rlmcp_plugin_descriptor(), bad,
                           sizeof(bad) / sizeof(bad[0]));
    if (why != NULL)
        fail_msg("%s", why);
    setup(state);
}

/* ---- build_log.c
 * -------------------------------------------------------------- */

static void log_join(void **state)
{
    cJSON *logs = cJSON_Parse("[{\"message\":\"aaaa\"},{\"message\":\"bbbb\"},"
                              "{\"message\":\"cccc\"}]");
    char *s = bp_log_join(logs, 0, 100);

    assert_string_equal(s, "aaaa\nbbbb\ncccc");
    free(s);
    s = bp_log_join(logs, 1, 100);
    assert_string_equal(s, "bbbb\ncccc");
    free(s);
    s = bp_log_join(logs, 3, 100);
    assert_string_equal(s, "");
    free(s);
    /* only the last lines that fit */
    s = bp_log_join(logs, 0, 10);
    assert_string_equal(s, "[1 earlier lines omitted]\nbbbb\ncccc");
    free(s);
    /* one line longer than max is cut */
    s = bp_log_join(logs, 2, 2);
    assert_string_equal(s, "cc");
    free(s);
    cJSON_Delete(logs);
}

static void log_failing_step(void **state)
{
    cJSON *logs;
    char *s;

    assert_null(bp_log_failing_step(NULL));
    logs = cJSON_Parse("[]");
    assert_null(bp_log_failing_step(logs));
    cJSON_Delete(logs);

    /* BuildKit style, error found by message */
    logs = cJSON_Parse("[{\"message\":\"#5 [2/3] RUN make\"},{\"message\":"
                       "\"make: *** [all] Error 2\"},{\"message\":\"done\"}]");
    s = bp_log_failing_step(logs);
    assert_string_equal(s, "#5 [2/3] RUN make: make: *** [all] Error 2");
    free(s);
    cJSON_Delete(logs);

    /* an unsupported instruction named on the error line itself */
    logs = cJSON_Parse("[{\"level\":\"ERROR\",\"message\":\"step 3/3: "
                       "EXPOSE 80 is not supported locally\"}]");
    s = bp_log_failing_step(logs);
    assert_string_equal(s, "step 3/3: EXPOSE 80 is not supported locally");
    free(s);
    cJSON_Delete(logs);

    /* nothing recognisable: the last line */
    logs = cJSON_Parse("[{\"message\":\"x\"},{\"message\":\"y\"}]");
    s = bp_log_failing_step(logs);
    assert_string_equal(s, "y");
    free(s);
    cJSON_Delete(logs);
}

/* ---- build_blueprint as a task (task.c) ---------------------------------- */

#define BPT_DEL(st)                                                            \
    "{\"id\":\"bpt_1\",\"name\":\"py\",\"status\":\"" st                       \
    "\",\"state\":\"deleted\"}"

static void task_start_get_wait(void **state)
{
    assert_non_null(fh_tool("build_blueprint")->task);
    /* start: the build is asked for, the handle names it */
    fh_reset();
    fh_route("POST", "/v1/blueprints", 200, BPT("queued"));
    assert_int_equal(fh_call_op("build_blueprint", "start",
                                "{\"name\":\"py\",\"wait\":true}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("blueprint_id"), "bpt_1");
    assert_int_equal(fh_request_count(), 1);
    /* get while building: the backend's status, for the host to map */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("building"));
    assert_int_equal(
        fh_call_op("build_blueprint", "get", "{\"blueprint_id\":\"bpt_1\"}"),
        RLMCP_OK);
    assert_string_equal(rstr("status"), "building");
    /* wait: polls until built; the result is build_blueprint's */
    fh_reset();
    fh_route_n("GET", "/v1/blueprints/bpt_1", 200, BPT("provisioning"), 2);
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("build_complete"));
    fh_route("GET", "/v1/blueprints/bpt_1/logs", 200,
             "{\"logs\":[{\"message\":\"a\"},{\"message\":\"b\"}]}");
    assert_int_equal(fh_call_op("build_blueprint", "wait",
                                "{\"blueprint_id\":\"bpt_1\","
                                "\"timeout_seconds\":60}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("status"), "build_complete");
    assert_string_equal(rstr("id"), "bpt_1");
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "log_lines")->valueint,
                     2);
    assert_int_equal(fh_count_requests("GET", "/v1/blueprints/bpt_1"), 4);
    assert_int_equal(fh_count_requests("POST", WAIT_PATH), 0);
    /* wait where the engine offers wait_for_status: held there, no pause */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_W("building"));
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_W("build_complete"));
    fh_route("GET", "/v1/blueprints/bpt_1/logs", 200, "{\"logs\":[]}");
    fh_route("POST", WAIT_PATH, 200, BPT_W("build_complete"));
    assert_int_equal(fh_call_op("build_blueprint", "wait",
                                "{\"blueprint_id\":\"bpt_1\","
                                "\"timeout_seconds\":60}"),
                     RLMCP_OK);
    assert_string_equal(rstr("status"), "build_complete");
    assert_int_equal(fh_count_requests("POST", WAIT_PATH), 1);
    assert_int_equal(fh_sleep_count(), 0);
}

static void task_failed_and_deleted(void **state)
{
    /* failed: "failed" with the reason and the failing step */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200,
             "{\"id\":\"bpt_1\",\"name\":\"py\",\"status\":\"failed\","
             "\"failure_reason\":\"build_failed\"}");
    fh_route("GET", "/v1/blueprints/bpt_1/logs", 200,
             "{\"logs\":[{\"message\":\"Step 1/1: RUN exit 3\"},"
             "{\"level\":\"error\",\"message\":\"exit status 3\"}]}");
    assert_int_equal(
        fh_call_op("build_blueprint", "get", "{\"blueprint_id\":\"bpt_1\"}"),
        RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("status"), "failed");
    assert_non_null(strstr(rstr("message"), "failed to build: build_failed"));
    assert_non_null(strstr(rstr("message"), "RUN exit 3"));
    /* deleted before it was built: cancelled */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_DEL("failed"));
    assert_int_equal(
        fh_call_op("build_blueprint", "get", "{\"blueprint_id\":\"bpt_1\"}"),
        RLMCP_OK);
    assert_string_equal(rstr("status"), "cancelled");
    /* gone: not_found (the host fails the task) */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 404,
             "{\"message\":\"no blueprint bpt_1\"}");
    assert_int_equal(
        fh_call_op("build_blueprint", "get", "{\"blueprint_id\":\"bpt_1\"}"),
        RLMCP_OK);
    assert_string_equal(fh_error_code(), "not_found");
    /* a handle without the id */
    fh_reset();
    assert_int_equal(fh_call_op("build_blueprint", "get", "{}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
}

static void task_cancel_deletes(void **state)
{
    /* building: deleted, then confirmed */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("building"));
    fh_route("POST", "/v1/blueprints/bpt_1/delete", 200, "{}");
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_DEL("failed"));
    assert_int_equal(
        fh_call_op("build_blueprint", "cancel", "{\"blueprint_id\":\"bpt_1\"}"),
        RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("status"), "killed");
    assert_int_equal(fh_count_requests("POST", "/v1/blueprints/bpt_1/delete"),
                     1);
    /* just starting (409): deleted again until it reads deleted */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("queued"));
    fh_route("POST", "/v1/blueprints/bpt_1/delete", 409,
             "{\"message\":\"just starting\"}");
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("provisioning"));
    fh_route("POST", "/v1/blueprints/bpt_1/delete", 200, "{}");
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_DEL("failed"));
    assert_int_equal(
        fh_call_op("build_blueprint", "cancel", "{\"blueprint_id\":\"bpt_1\"}"),
        RLMCP_OK);
    assert_string_equal(rstr("status"), "killed");
    assert_int_equal(fh_count_requests("POST", "/v1/blueprints/bpt_1/delete"),
                     2);
    /* built before: nothing deleted */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("build_complete"));
    assert_int_equal(
        fh_call_op("build_blueprint", "cancel", "{\"blueprint_id\":\"bpt_1\"}"),
        RLMCP_OK);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "already_done")));
    assert_int_equal(fh_count_requests("POST", "/v1/blueprints/bpt_1/delete"),
                     0);
}

/* The build ends between the cancel's read and its delete: a blueprint
 * that reads built (deleted or not) is an ended task, and one that is
 * gone is stopped; neither is deleted again nor waited on. */
static void task_cancel_races_the_build(void **state)
{
    /* built as it was deleted */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("building"));
    fh_route("POST", "/v1/blueprints/bpt_1/delete", 200, "{}");
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT_DEL("build_complete"));
    assert_int_equal(
        fh_call_op("build_blueprint", "cancel", "{\"blueprint_id\":\"bpt_1\"}"),
        RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("status"), "build_complete");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "already_done")));
    assert_int_equal(fh_count_requests("GET", "/v1/blueprints/bpt_1"), 2);
    /* built while a delete was refused: not deleted again */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("queued"));
    fh_route("POST", "/v1/blueprints/bpt_1/delete", 409,
             "{\"message\":\"just starting\"}");
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("build_complete"));
    assert_int_equal(
        fh_call_op("build_blueprint", "cancel", "{\"blueprint_id\":\"bpt_1\"}"),
        RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("status"), "build_complete");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "already_done")));
    assert_int_equal(fh_count_requests("POST", "/v1/blueprints/bpt_1/delete"),
                     1);
    /* gone after the delete: stopped */
    fh_reset();
    fh_route("GET", "/v1/blueprints/bpt_1", 200, BPT("building"));
    fh_route("POST", "/v1/blueprints/bpt_1/delete", 200, "{}");
    fh_route("GET", "/v1/blueprints/bpt_1", 404,
             "{\"message\":\"no blueprint bpt_1\"}");
    assert_int_equal(
        fh_call_op("build_blueprint", "cancel", "{\"blueprint_id\":\"bpt_1\"}"),
        RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("status"), "killed");
    assert_int_equal(fh_count_requests("POST", "/v1/blueprints/bpt_1/delete"),
                     1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registers),
        cmocka_unit_test(tag_moves_and_reports),
        cmocka_unit_test(build_request_body),
        cmocka_unit_test(build_follows_with_log_progress),
        cmocka_unit_test(build_failure_names_step),
        cmocka_unit_test(build_waits_when_offered),
        cmocka_unit_test(build_bound_and_cancel),
        cmocka_unit_test(build_bad_input),
        cmocka_unit_test(list_get_logs_delete),
        cmocka_unit_test(task_start_get_wait),
        cmocka_unit_test(task_failed_and_deleted),
        cmocka_unit_test(task_cancel_deletes),
        cmocka_unit_test(task_cancel_races_the_build),
        cmocka_unit_test(bad_config),
        cmocka_unit_test(log_join),
        cmocka_unit_test(log_failing_step),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
