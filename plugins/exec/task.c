/*
 * task.c - execute_command as an MCP task (ABI 1.4 rlmcp_task_def).
 *
 * The task's handle is {devbox_id, execution_id}: the work is the Runloop
 * execution, so the host keeps nothing and a task outlives it. get reads the
 * execution, wait long-polls it, cancel kills it and confirms the kill by
 * reading the status back (exec_stop). An execution that a kill ended says
 * status "killed", so the host reports the task cancelled.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"

/* Waits of tasks/result may last as long as the command: up to a day. */
#define TASK_MAX_WAIT_S 86400
/* How long cancel may take to kill and confirm. */
#define TASK_CANCEL_MS 15000u

/* An execution that a kill ended reads "killed": the task was cancelled. */
static void mark_killed(cJSON *res)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(res, "ended_by");

    if (cJSON_IsString(st) && strcmp(st->valuestring, "completed") == 0 &&
        cJSON_IsString(by) && strcmp(by->valuestring, "killed") == 0)
        cJSON_ReplaceItemInObjectCaseSensitive(res, "status",
                                               cJSON_CreateString("killed"));
}

/* The execution as the tool's result; already_done: a cancel found it
 * ended. */
static int answer_view(struct ex *ex, const struct rlmcp_h *h,
                       const cJSON *view, const char *id, bool already_done)
{
    cJSON *res = exec_view_result(ex, h, view, id);
    int rc = RLMCP_ENOMEM;

    if (res != NULL) {
        mark_killed(res);
        if (already_done)
            cJSON_AddBoolToObject(res, "already_done", true);
        rc = rlmcp_h_result_json(h, res);
    }
    cJSON_Delete(res);
    return rc;
}

static int task_get(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    cJSON *args = NULL, *view = NULL;
    const char *id = NULL, *eid = NULL;
    int rc;

    rc = exec_ids(&h, aj, al, &args, &id, &eid);
    if (rc == RLMCP_OK)
        rc = exec_read_view(&h, id, eid, -1, &view);
    if (rc == RLMCP_OK)
        rc = answer_view(ex, &h, view, id, false);
    cJSON_Delete(args);
    cJSON_Delete(view);
    return rlmcp_h_ret(rc);
}

static int task_wait(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    cJSON *args = NULL, *view = NULL;
    const char *id = NULL, *eid = NULL;
    long long timeout_s = 60;
    int rc;

    rc = exec_ids(&h, aj, al, &args, &id, &eid);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "timeout_seconds", false, 1,
                             TASK_MAX_WAIT_S, &timeout_s);
    if (rc != RLMCP_OK)
        goto out;
    /* Still running at the bound: say so; the host asks again. */
    rc = exec_wait_view(ex, &h, id, eid, timeout_s, -1, &view);
    if (rc == RLMCP_OK)
        rc = answer_view(ex, &h, view, id, false);
out:
    cJSON_Delete(args);
    cJSON_Delete(view);
    return rlmcp_h_ret(rc);
}

static int task_cancel(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    cJSON *args = NULL, *view = NULL, *res = NULL;
    const char *id = NULL, *eid = NULL;
    const cJSON *st = NULL;
    char why[200];
    int rc;

    rc = exec_ids(&h, aj, al, &args, &id, &eid);
    if (rc == RLMCP_OK)
        rc = exec_read_view(&h, id, eid, -1, &view);
    if (rc != RLMCP_OK)
        goto out;
    st = cJSON_GetObjectItemCaseSensitive(view, "status");
    if (cJSON_IsString(st) && strcmp(st->valuestring, "completed") == 0) {
        /* It ended before: nothing to stop. */
        rc = answer_view(ex, &h, view, id, true);
        goto out;
    }
    if (!exec_stop(&h, id, eid, rlmcp_h_now_ms() + TASK_CANCEL_MS, why,
                   sizeof(why), NULL)) {
        rc = rlmcp_h_fail_remedy(
            &h, RLMCP_ERR_UNAVAILABLE,
            "Cancel again once the backend answers, or check the execution "
            "with get_execution.",
            "could not confirm that execution %s on devbox %s stopped (%s)",
            eid, id, why);
        goto out;
    }
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "status", "killed");
    cJSON_AddStringToObject(res, "devbox_id", id);
    cJSON_AddStringToObject(res, "execution_id", eid);
    rc = rlmcp_h_result_json(&h, res);
out:
    cJSON_Delete(args);
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

const struct rlmcp_task_def exec_task_def = {
    .struct_size = sizeof(struct rlmcp_task_def),
    .start = exec_task_start,
    .get = task_get,
    .wait = task_wait,
    .cancel = task_cancel,
};
