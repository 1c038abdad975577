/*
 * task.c - execute_command as an MCP task (ABI 1.4 rlmcp_task_def).
 *
 * The task's handle is {devbox_id, execution_id}: the work is the Runloop
 * execution, so the host keeps nothing and a task outlives it. get reads the
 * execution, wait long-polls it, cancel kills it and confirms the kill by
 * reading the status back (exec_stop). An execution that a kill ended says
 * status "killed", so the host reports the task cancelled.
 *
 * A task started with timeout_seconds / timeout_ms keeps its end in the
 * handle (kill_at_ms, wall clock). wait waits no longer than that; get or
 * wait past it kills a command still running, and a command a kill ended
 * then reads ended_by "timeout", status completed: the task completes, as
 * the plain call does when the timeout ends its command. (A task cancelled
 * before its timeout and read after it reads so too: the handle is all
 * there is.)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"

/* Waits of tasks/result may last as long as the command: up to a day. */
#define TASK_MAX_WAIT_S 86400

static int task_get(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return exec_get_tool(ud, call, aj, al, 0, -1, EXEC_ANSWER_TASK);
}

/* Still running at the bound: said so; the host asks again. */
static int task_wait(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return exec_get_tool(ud, call, aj, al, TASK_MAX_WAIT_S, -1,
                         EXEC_ANSWER_TASK);
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
        rc = exec_answer_view(ex, &h, view, id,
                              EXEC_ANSWER_TASK | EXEC_ANSWER_DONE);
        goto out;
    }
    if (!exec_stop(&h, id, eid, rlmcp_h_now_ms() + EXEC_TASK_STOP_MS, why,
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
