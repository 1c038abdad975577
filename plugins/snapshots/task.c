/*
 * task.c - create_snapshot as an MCP task (ABI 1.4 rlmcp_task_def).
 *
 * The task's handle is {snapshot_id}: the work is the backend's
 * asynchronous snapshot (snapshot_disk_async), so the host keeps nothing
 * and the task outlives it. get reads the snapshot's status: in_progress
 * is still working (the host knows the status); complete is the result
 * create_snapshot itself gives; error is "failed" with the backend's
 * message; a snapshot deleted meanwhile is gone (not_found: the task
 * failed). The backend cannot stop a snapshot in progress, so cancel
 * refuses with code conflict (plugin.h): the snapshot runs to its end.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sn_internal.h"

/* Waits of tasks/result may last as long as a snapshot: up to a day. */
#define TASK_MAX_WAIT_S 86400

static const char *str_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool in_progress(const cJSON *st)
{
    const char *s = str_of(st, "status");

    return s != NULL && strcmp(s, "in_progress") == 0;
}

static bool ended(const cJSON *st, void *user)
{
    return !in_progress(st);
}

/* The snapshot's status view ({status, error_message, snapshot}). */
static int read_status(const struct rlmcp_h *h, void *user, const char *sid,
                       cJSON **st)
{
    char *path = rlmcp_h_sprintf("/v1/devboxes/disk_snapshots/%s/status", sid);
    char *what = rlmcp_h_sprintf("snapshot %s", sid);
    int rc;

    rc = rlmcp_h_request(h, "GET", path, NULL, NULL, what, st);
    if (rc == RLMCP_OK && str_of(*st, "status") == NULL)
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "%s: the Runloop API answered the status query "
                          "without a status",
                          what);
    free(path);
    free(what);
    return rc;
}

/* {id, status[, message]}: a state that is not create_snapshot's result. */
static int answer_state(const struct rlmcp_h *h, const char *sid,
                        const char *status, const char *message)
{
    cJSON *res = cJSON_CreateObject();
    int rc = RLMCP_ENOMEM;

    if (res != NULL && cJSON_AddStringToObject(res, "id", sid) != NULL &&
        cJSON_AddStringToObject(res, "status", status) != NULL &&
        (message == NULL ||
         cJSON_AddStringToObject(res, "message", message) != NULL))
        rc = rlmcp_h_result_json(h, res);
    cJSON_Delete(res);
    return rc;
}

/* The status view as the task's state (file comment). */
static int answer_status(const struct rlmcp_h *h, void *user, const char *sid,
                         const cJSON *st)
{
    const char *status = str_of(st, "status");
    const char *err = str_of(st, "error_message");
    const cJSON *view = cJSON_GetObjectItemCaseSensitive(st, "snapshot");
    char *why = NULL;
    int rc;

    if (strcmp(status, "in_progress") == 0)
        return answer_state(h, sid, status, NULL);
    if (strcmp(status, "complete") == 0 && cJSON_IsObject(view))
        return sn_result(h, view, status);
    if (strcmp(status, "deleted") == 0)
        return rlmcp_h_fail(h, RLMCP_ERR_NOT_FOUND, "snapshot %s was deleted",
                            sid);
    if (strcmp(status, "error") != 0)
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "snapshot %s: the Runloop API answered status "
                            "'%s'%s",
                            sid, status,
                            strcmp(status, "complete") == 0
                                ? " without the snapshot"
                                : ", which this server does not know");
    why = rlmcp_h_sprintf("snapshot %s failed: %s", sid,
                          err != NULL ? err : "no error message given");
    rc = why != NULL ? answer_state(h, sid, "failed", why) : RLMCP_ENOMEM;
    free(why);
    return rc;
}

static const struct rlmcp_h_task_ops task_ops = {
    .id_arg = "snapshot_id",
    .max_wait_s = TASK_MAX_WAIT_S,
    .read = read_status,
    .ended = ended,
    .answer = answer_status,
};

static int task_start(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct snap *sn = ud;
    struct rlmcp_h h = {sn->api, call};
    cJSON *view = NULL;
    const char *sid = NULL;
    int rc;

    /* As create_snapshot, always on the asynchronous endpoint. */
    rc = sn_start(sn, &h, aj, al, NULL, &view, &sid);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_task_handle(&h, &task_ops, sid);
    cJSON_Delete(view);
    return rlmcp_h_ret(rc);
}

static int task_get(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct snap *sn = ud;
    struct rlmcp_h h = {sn->api, call};

    return rlmcp_h_ret(rlmcp_h_task_get(&h, &task_ops, sn, aj, al));
}

static int task_wait(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct snap *sn = ud;
    struct rlmcp_h h = {sn->api, call};

    return rlmcp_h_ret(
        rlmcp_h_task_wait(&h, &task_ops, sn, aj, al, (uint32_t)sn->poll_ms));
}

static int task_cancel(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct snap *sn = ud;
    struct rlmcp_h h = {sn->api, call};
    cJSON *args = NULL, *st = NULL;
    const char *sid = NULL;
    int rc;

    rc = rlmcp_h_task_read(&h, &task_ops, sn, aj, al, &args, &sid, &st);
    if (rc != RLMCP_OK)
        goto out;
    if (in_progress(st)) {
        rc = rlmcp_h_fail_remedy(
            &h, RLMCP_ERR_CONFLICT,
            "Wait for the task to end (tasks/get), then delete_snapshot "
            "if the snapshot is not wanted.",
            "snapshot %s is in progress and the backend cannot stop a "
            "snapshot; it completes or fails on its own",
            sid);
        goto out;
    }
    /* Complete, failed or deleted before: nothing to stop. */
    rc = rlmcp_h_task_already_done(&h, &task_ops, sid, str_of(st, "status"));
out:
    cJSON_Delete(args);
    cJSON_Delete(st);
    return rlmcp_h_ret(rc);
}

const struct rlmcp_task_def sn_task_def = {
    .struct_size = sizeof(struct rlmcp_task_def),
    .start = task_start,
    .get = task_get,
    .wait = task_wait,
    .cancel = task_cancel,
};
