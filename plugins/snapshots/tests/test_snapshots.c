/*
 * test_snapshots.c - the snapshots plugin against the fake host table.
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
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(),
                             "{\"wait_seconds\":1,\"poll_interval_ms\":100}"),
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

static const char snap_view[] =
    "{\"id\":\"snp_1\",\"name\":\"before\",\"source_devbox_id\":\"dbx_1\","
    "\"create_time_ms\":1700000000000,\"metadata\":{\"k\":\"v\"},"
    "\"unrelated\":42}";

static void registers(void **state)
{
    assert_int_equal(fh_tool_count(), 4);
    assert_non_null(strstr(fh_tool("list_snapshots")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("get_snapshot_status")->annotations_json,
                           "\"readOnlyHint\":true"));
    assert_non_null(strstr(fh_tool("delete_snapshot")->annotations_json,
                           "\"destructiveHint\":true"));
    assert_non_null(strstr(fh_tool("create_snapshot")->annotations_json,
                           "\"idempotentHint\":false"));
    /* create waits up to wait_seconds: its timeout leaves room for that */
    assert_true(fh_tool("create_snapshot")->timeout_ms >= 1000);
}

static void create_async_polls_with_progress(void **state)
{
    cJSON *body;

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/snapshot_disk_async", 200, snap_view);
    fh_route_n("GET", "/v1/devboxes/disk_snapshots/snp_1/status", 200,
               "{\"status\":\"in_progress\"}", 2);
    fh_route("GET", "/v1/devboxes/disk_snapshots/snp_1/status", 200,
             "{\"status\":\"complete\",\"snapshot\":{\"id\":\"snp_1\","
             "\"name\":\"before\",\"size_bytes\":1234}}");
    assert_int_equal(fh_call("create_snapshot",
                             "{\"devbox_id\":\"dbx_1\",\"name\":\"before\","
                             "\"commit_message\":\"ok\",\"metadata\":{\"k\":"
                             "\"v\"}}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("id"), "snp_1");
    assert_string_equal(rstr("status"), "complete");
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "size_bytes")->valueint,
                     1234);
    body = fh_request_json(fh_request_at(0));
    assert_string_equal(cJSON_GetObjectItem(body, "name")->valuestring,
                        "before");
    assert_string_equal(
        cJSON_GetObjectItem(body, "commit_message")->valuestring, "ok");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(body, "metadata"), "k")
            ->valuestring,
        "v");
    assert_int_equal(fh_count_requests("GET", "/v1/devboxes/disk_snapshots/"
                                              "snp_1/status"),
                     3);
    /* Short pauses first: done 30 ms after the start, not 200. */
    assert_int_equal(fh_sleep_count(), 2);
    assert_int_equal(fh_sleep_at(0), 10);
    assert_int_equal(fh_sleep_at(1), 20);
    assert_int_equal(fh_progress_count(), 2);
    assert_true(fh_progress_value(1) > fh_progress_value(0));
    assert_non_null(strstr(fh_progress_message(0), "snp_1"));
}

static void create_no_wait_and_bound(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/snapshot_disk_async", 200, snap_view);
    assert_int_equal(fh_call("create_snapshot", "{\"devbox_id\":\"dbx_1\","
                                                "\"wait\":false}"),
                     RLMCP_OK);
    assert_string_equal(rstr("status"), "in_progress");
    assert_string_equal(rstr("id"), "snp_1");
    assert_null(cJSON_GetObjectItem(fh_result(), "unrelated"));
    assert_int_equal(fh_request_count(), 1);

    /* never completes: the bound (1 s slept in pauses of 10, 20, 40, 80,
     * then 100 ms = 14 polls) ends it */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/snapshot_disk_async", 200, snap_view);
    fh_route_n("GET", "/v1/devboxes/disk_snapshots/snp_1/status", 200,
               "{\"status\":\"in_progress\"}", 0);
    assert_int_equal(fh_call("create_snapshot", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "timeout");
    assert_non_null(strstr(fh_error_message(), "snp_1"));
    assert_non_null(strstr(fh_error_remedy(), "get_snapshot_status"));
    assert_int_equal(fh_count_requests("GET", "/v1/devboxes/disk_snapshots/"),
                     14);
    assert_int_equal(fh_sleep_at(0), 10);
    assert_int_equal(fh_sleep_at(3), 80);
    assert_int_equal(fh_sleep_at(4), 100);
}

static void create_errors(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/snapshot_disk_async", 200, snap_view);
    fh_route("GET", "/v1/devboxes/disk_snapshots/snp_1/status", 200,
             "{\"status\":\"error\",\"error_message\":\"disk full\"}");
    fh_call("create_snapshot", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "internal");
    assert_non_null(strstr(fh_error_message(), "disk full"));

    /* a snapshot of a shut down devbox */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_2/snapshot_disk_async", 400,
             "{\"message\":\"devbox is not running\"}");
    fh_route("GET", "/v1/devboxes/dbx_2", 200,
             "{\"id\":\"dbx_2\",\"status\":\"shutdown\"}");
    fh_call("create_snapshot", "{\"devbox_id\":\"dbx_2\"}");
    assert_string_equal(fh_error_code(), "devbox_not_running");

    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_9/snapshot_disk_async", 404,
             "{\"message\":\"no such devbox\"}");
    fh_route("GET", "/v1/devboxes/dbx_9", 404, "{\"message\":\"nope\"}");
    fh_call("create_snapshot", "{\"devbox_id\":\"dbx_9\"}");
    assert_string_equal(fh_error_code(), "not_found");

    fh_reset();
    fh_route_rc("POST", "/v1/devboxes/dbx_1/snapshot_disk_async", RLMCP_EHTTP,
                0);
    fh_call("create_snapshot", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "unavailable");

    /* the answer carries no id */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/snapshot_disk_async", 200, "{}");
    fh_call("create_snapshot", "{\"devbox_id\":\"dbx_1\"}");
    assert_string_equal(fh_error_code(), "internal");
}

static void create_bad_input(void **state)
{
    char args[1200];

    fh_reset();
    fh_call("create_snapshot", "{}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "devbox_id"));
    fh_reset();
    fh_call("create_snapshot", "{\"devbox_id\":\"../x\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    fh_reset();
    fh_call("create_snapshot", "{\"devbox_id\":\"dbx_1\",\"bogus\":1}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "bogus"));
    fh_reset();
    fh_call("create_snapshot", "{\"devbox_id\":\"dbx_1\",\"metadata\":{\"a\""
                               ":1}}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    fh_reset();
    snprintf(args, sizeof(args),
             "{\"devbox_id\":\"dbx_1\",\"commit_message\":\"%01001d\"}", 0);
    fh_call("create_snapshot", args);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "1000"));
    assert_int_equal(fh_request_count(), 0);
}

static void create_sync_mode(void **state)
{
    fh_unload();
    assert_int_equal(fh_load(rlmcp_plugin_descriptor(),
                             "{\"mode\":\"sync\",\"wait_seconds\":5}"),
                     RLMCP_OK);
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/snapshot_disk", 200, snap_view);
    assert_int_equal(fh_call("create_snapshot", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_OK);
    assert_string_equal(rstr("status"), "complete");
    assert_int_equal(fh_request_count(), 1);
    assert_int_equal(fh_request_at(0)->timeout_ms, 5000);

    /* wait=false needs the async endpoint even in sync mode */
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/snapshot_disk_async", 200, snap_view);
    fh_call("create_snapshot", "{\"devbox_id\":\"dbx_1\",\"wait\":false}");
    assert_string_equal(rstr("status"), "in_progress");
    fh_unload();
    setup(state);
}

static void list_paths_and_pages(void **state)
{
    cJSON *arr;

    fh_reset();
    fh_route("GET", "/v1/devboxes/disk_snapshots?limit=2&devbox_id=dbx_1", 200,
             "{\"snapshots\":[{\"id\":\"snp_1\",\"x\":1},{\"id\":\"snp_2\"}],"
             "\"has_more\":true,\"total_count\":5}");
    assert_int_equal(fh_call("list_snapshots", "{\"devbox_id\":\"dbx_1\","
                                               "\"limit\":2}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    arr = cJSON_GetObjectItem(fh_result(), "snapshots");
    assert_int_equal(cJSON_GetArraySize(arr), 2);
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0), "x"));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "has_more")));
    assert_string_equal(rstr("next_starting_after"), "snp_2");
    assert_int_equal(cJSON_GetObjectItem(fh_result(), "total_count")->valueint,
                     5);

    fh_reset();
    fh_route("GET",
             "/v1/devboxes/disk_snapshots?limit=20&source_blueprint_id="
             "bpt_1&starting_after=snp_2",
             200, "{\"snapshots\":[],\"has_more\":true}");
    assert_int_equal(fh_call("list_snapshots",
                             "{\"source_blueprint_id\":\"bpt_1\","
                             "\"starting_after\":\"snp_2\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    /* an empty page ends the listing */
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "has_more")));
    assert_null(rstr("next_starting_after"));

    fh_reset();
    fh_route("GET", "/v1/devboxes/disk_snapshots*", 200, "{\"x\":[]}");
    fh_call("list_snapshots", "{}");
    assert_string_equal(fh_error_code(), "internal");

    fh_reset();
    fh_call("list_snapshots", "{\"limit\":0}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    fh_reset();
    fh_call("list_snapshots", "{\"devbox_id\":\"a&b\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_int_equal(fh_request_count(), 0);

    fh_reset();
    fh_route("GET", "/v1/devboxes/disk_snapshots*", 401,
             "{\"message\":\"bad key\"}");
    fh_call("list_snapshots", "{}");
    assert_string_equal(fh_error_code(), "unauthenticated");
}

static void delete_and_status(void **state)
{
    const cJSON *snap;

    fh_reset();
    fh_route("POST", "/v1/devboxes/disk_snapshots/snp_1/delete", 200, "");
    assert_int_equal(fh_call("delete_snapshot", "{\"snapshot_id\":\"snp_1\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "deleted")));
    assert_null(fh_request_at(0)->body);

    /* deleting a snapshot in use: the API's status is mapped */
    fh_reset();
    fh_route("POST", "/v1/devboxes/disk_snapshots/snp_1/delete", 409,
             "{\"message\":\"snapshot is in use by devbox dbx_3\"}");
    fh_call("delete_snapshot", "{\"snapshot_id\":\"snp_1\"}");
    assert_string_equal(fh_error_code(), "conflict");
    assert_non_null(strstr(fh_error_message(), "in use"));

    fh_reset();
    fh_route("POST", "/v1/devboxes/disk_snapshots/snp_x/delete", 404,
             "{\"message\":\"not found\"}");
    fh_call("delete_snapshot", "{\"snapshot_id\":\"snp_x\"}");
    assert_string_equal(fh_error_code(), "not_found");

    fh_reset();
    fh_route("GET", "/v1/devboxes/disk_snapshots/snp_1/status", 200,
             "{\"status\":\"complete\",\"snapshot\":"
             "{\"id\":\"snp_1\","
             "\"source_devbox_id\":\"dbx_1\"}}");
    assert_int_equal(
        fh_call("get_snapshot_status", "{\"snapshot_id\":\"snp_1\"}"),
        RLMCP_OK);
    assert_string_equal(rstr("status"), "complete");
    snap = cJSON_GetObjectItem(fh_result(), "snapshot");
    assert_string_equal(
        cJSON_GetObjectItem(snap, "source_devbox_id")->valuestring, "dbx_1");

    fh_reset();
    fh_route("GET", "/v1/devboxes/disk_snapshots/snp_1/status", 200,
             "{\"status\":\"error\",\"error_message\":\"boom\"}");
    fh_call("get_snapshot_status", "{\"snapshot_id\":\"snp_1\"}");
    assert_null(fh_error_code());
    assert_string_equal(rstr("error_message"), "boom");

    fh_reset();
    fh_route("GET", "/v1/devboxes/disk_snapshots/snp_1/status", 200, "{}");
    fh_call("get_snapshot_status", "{\"snapshot_id\":\"snp_1\"}");
    assert_string_equal(fh_error_code(), "internal");

    fh_reset();
    fh_call("get_snapshot_status", "{\"snapshot_id\":\"\"}");
    assert_string_equal(fh_error_code(), "invalid_argument");
}

static void cancel_stops_polling(void **state)
{
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/snapshot_disk_async", 200, snap_view);
    fh_route_n("GET", "/v1/devboxes/disk_snapshots/snp_1/status", 200,
               "{\"status\":\"in_progress\"}", 0);
    fh_cancel_after(2);
    assert_int_equal(fh_call("create_snapshot", "{\"devbox_id\":\"dbx_1\"}"),
                     RLMCP_ECANCELLED);
    assert_null(fh_error_code());
}

static void bad_config(void **state)
{
    /* Checked by the host against schemas/config.json. */
    static const struct fh_bad_config bad[] = {
        {"{\"mode\":\"fast\"}", "config.mode: must be one of \"sync\""},
        {"{\"wait_seconds\":0}", "config.wait_seconds: must be >= 1"},
        {"{\"poll_interval_ms\":5}", "config.poll_interval_ms"},
        {"{\"wait_seconds\":\"x\"}", "config.wait_seconds: expected integer"},
        {"{\"wait\":5}", "unknown property 'wait'"},
        {"[1]", "config: expected object"},
    };
    char *why = NULL;

    fh_unload();
    why = fh_init_refusals(rlmcp_plugin_descriptor(), bad,
                           sizeof(bad) / sizeof(bad[0]));
    if (why != NULL)
        fail_msg("%s", why);
    setup(state);
}

static void helper_url_encode_and_pick(void **state)
{
    static const char *const keys[] = {"a", "c", NULL};
    char *e = rlmcp_h_url_encode("runloop/starter x&y=z~._-");
    cJSON *o = cJSON_Parse("{\"a\":1,\"b\":2,\"c\":null}");
    cJSON *p = rlmcp_h_pick(o, keys);

    assert_string_equal(e, "runloop%2Fstarter%20x%26y%3Dz~._-");
    assert_int_equal(cJSON_GetArraySize(p), 1);
    assert_non_null(cJSON_GetObjectItem(p, "a"));
    free(e);
    cJSON_Delete(o);
    cJSON_Delete(p);
}

/* ---- create_snapshot as a task (task.c) ---------------------------------- */

#define SNP_STATUS "/v1/devboxes/disk_snapshots/snp_1/status"

static void task_start_get_wait(void **state)
{
    assert_non_null(fh_tool("create_snapshot")->task);
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/snapshot_disk_async", 200, snap_view);
    assert_int_equal(fh_call_op("create_snapshot", "start",
                                "{\"devbox_id\":\"dbx_1\",\"name\":\"b\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("snapshot_id"), "snp_1");
    assert_int_equal(fh_request_count(), 1);
    /* in progress: the backend's status, for the host to map */
    fh_reset();
    fh_route("GET", SNP_STATUS, 200, "{\"status\":\"in_progress\"}");
    assert_int_equal(
        fh_call_op("create_snapshot", "get", "{\"snapshot_id\":\"snp_1\"}"),
        RLMCP_OK);
    assert_string_equal(rstr("status"), "in_progress");
    /* wait: polls until complete; the result is create_snapshot's */
    fh_reset();
    fh_route_n("GET", SNP_STATUS, 200, "{\"status\":\"in_progress\"}", 2);
    fh_route("GET", SNP_STATUS, 200,
             "{\"status\":\"complete\",\"snapshot\":{\"id\":\"snp_1\","
             "\"name\":\"b\",\"size_bytes\":9}}");
    assert_int_equal(fh_call_op("create_snapshot", "wait",
                                "{\"snapshot_id\":\"snp_1\","
                                "\"timeout_seconds\":60}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(rstr("status"), "complete");
    assert_string_equal(rstr("id"), "snp_1");
    assert_int_equal(fh_count_requests("GET", SNP_STATUS), 3);
    /* The task wait backs off the same way (rlmcp_h_task_wait). */
    assert_int_equal(fh_sleep_count(), 2);
    assert_int_equal(fh_sleep_at(0), 10);
    assert_int_equal(fh_sleep_at(1), 20);
}

static void task_error_deleted_cancel(void **state)
{
    /* error: "failed" with the backend's message */
    fh_reset();
    fh_route("GET", SNP_STATUS, 200,
             "{\"status\":\"error\",\"error_message\":\"disk full\"}");
    assert_int_equal(
        fh_call_op("create_snapshot", "get", "{\"snapshot_id\":\"snp_1\"}"),
        RLMCP_OK);
    assert_string_equal(rstr("status"), "failed");
    assert_non_null(strstr(rstr("message"), "disk full"));
    /* deleted: gone */
    fh_reset();
    fh_route("GET", SNP_STATUS, 200, "{\"status\":\"deleted\"}");
    assert_int_equal(
        fh_call_op("create_snapshot", "get", "{\"snapshot_id\":\"snp_1\"}"),
        RLMCP_OK);
    assert_string_equal(fh_error_code(), "not_found");
    /* cancel in progress: refused (conflict), nothing deleted */
    fh_reset();
    fh_route("GET", SNP_STATUS, 200, "{\"status\":\"in_progress\"}");
    assert_int_equal(
        fh_call_op("create_snapshot", "cancel", "{\"snapshot_id\":\"snp_1\"}"),
        RLMCP_OK);
    assert_string_equal(fh_error_code(), "conflict");
    assert_non_null(strstr(fh_error_message(), "cannot stop"));
    assert_int_equal(fh_count_requests("POST", "/"), 0);
    /* cancel once complete: already done */
    fh_reset();
    fh_route("GET", SNP_STATUS, 200, "{\"status\":\"complete\"}");
    assert_int_equal(
        fh_call_op("create_snapshot", "cancel", "{\"snapshot_id\":\"snp_1\"}"),
        RLMCP_OK);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(fh_result(), "already_done")));
    /* a handle without the id */
    fh_reset();
    assert_int_equal(fh_call_op("create_snapshot", "get", "{}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registers),
        cmocka_unit_test(create_async_polls_with_progress),
        cmocka_unit_test(create_no_wait_and_bound),
        cmocka_unit_test(create_errors),
        cmocka_unit_test(create_bad_input),
        cmocka_unit_test(create_sync_mode),
        cmocka_unit_test(list_paths_and_pages),
        cmocka_unit_test(delete_and_status),
        cmocka_unit_test(cancel_stops_polling),
        cmocka_unit_test(task_start_get_wait),
        cmocka_unit_test(task_error_deleted_cancel),
        cmocka_unit_test(bad_config),
        cmocka_unit_test(helper_url_encode_and_pick),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
