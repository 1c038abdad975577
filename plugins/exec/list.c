/*
 * list.c - list_executions: a devbox's executions, running and recent.
 *
 * The Runloop API has no list of executions, but a devbox's log
 * (GET /v1/devboxes/{id}/logs, kept 28 days) carries cmd_id, cmd and, once
 * a command ended, its exit_code on every entry of an execution. An
 * execution without an exit code there is looked up for its status.
 * This finds an execution a client lost (its host restarted, its call
 * timed out before the answer named it).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"

#define LIST_CMD_CHARS 200

/* The entry of eid in out, or a new one (newest last). */
static cJSON *entry_for(cJSON *out, const char *eid, const cJSON *log)
{
    cJSON *e = NULL;
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(log, "cmd");
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(log, "timestamp_ms");
    char short_cmd[LIST_CMD_CHARS + 1];

    cJSON_ArrayForEach(e, out)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "execution_id");

        if (strcmp(id->valuestring, eid) == 0)
            return e;
    }
    e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "execution_id", eid);
    snprintf(short_cmd, sizeof(short_cmd), "%s",
             cJSON_IsString(cmd) ? cmd->valuestring : "");
    cJSON_AddStringToObject(e, "command", short_cmd);
    cJSON_AddStringToObject(e, "status", "unknown");
    cJSON_AddNullToObject(e, "exit_code");
    if (cJSON_IsNumber(ts))
        cJSON_AddNumberToObject(e, "started_at_ms", ts->valuedouble);
    cJSON_AddItemToArray(out, e);
    return e;
}

/* Group the log entries by execution, oldest first. */
static cJSON *group_logs(const cJSON *logs)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *l = NULL;

    cJSON_ArrayForEach(l, logs)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(l, "cmd_id");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(l, "exit_code");
        cJSON *e = NULL;

        if (!cJSON_IsString(id) || !rlmcp_h_id_valid(id->valuestring))
            continue;
        e = entry_for(out, id->valuestring, l);
        if (cJSON_IsNumber(code)) {
            cJSON_ReplaceItemInObject(e, "exit_code",
                                      cJSON_CreateNumber(code->valuedouble));
            cJSON_ReplaceItemInObject(e, "status",
                                      cJSON_CreateString("completed"));
        }
    }
    return out;
}

/* Executions with no exit code in the log: ask for their status. */
static void fill_status(const struct rlmcp_h *h, const char *devbox_id,
                        cJSON *e)
{
    const cJSON *eid = cJSON_GetObjectItemCaseSensitive(e, "execution_id");
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s/executions/%s?last_n=0",
                                 devbox_id, eid->valuestring);
    struct rlmcp_h_req_opts o = {0};
    cJSON *view = NULL;
    long status = 0;
    const cJSON *st = NULL;
    const cJSON *code = NULL;

    if (path == NULL)
        return;
    o.transport_unreported = true;
    if (rlmcp_h_request_status(h, "GET", path, NULL, &o, "execution", &status,
                               &view, NULL) == RLMCP_OK &&
        status >= 200 && status <= 299) {
        st = cJSON_GetObjectItemCaseSensitive(view, "status");
        code = cJSON_GetObjectItemCaseSensitive(view, "exit_status");
        if (cJSON_IsString(st))
            cJSON_ReplaceItemInObject(e, "status",
                                      cJSON_CreateString(st->valuestring));
        if (cJSON_IsNumber(code))
            cJSON_ReplaceItemInObject(e, "exit_code",
                                      cJSON_CreateNumber(code->valuedouble));
    }
    cJSON_Delete(view);
    free(path);
}

int list_executions_tool(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    cJSON *args = NULL, *got = NULL, *all = NULL, *res = NULL, *arr = NULL;
    const char *id = NULL;
    char *path = NULL, *what = NULL;
    long long limit = 20;
    int n = 0, i = 0;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "limit", false, 1, 100, &limit);
    if (rc != RLMCP_OK)
        goto out;
    path = rlmcp_h_sprintf("/v1/devboxes/%s/logs", id);
    what = rlmcp_h_sprintf("the log of devbox %s", id);
    rc = rlmcp_h_request(&h, "GET", path, NULL, NULL, what, &got);
    if (rc != RLMCP_OK)
        goto out;
    all = group_logs(cJSON_GetObjectItemCaseSensitive(got, "logs"));
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "devbox_id", id);
    arr = cJSON_AddArrayToObject(res, "executions");
    n = cJSON_GetArraySize(all);
    /* Newest first, at most limit. */
    for (i = n - 1; i >= 0 && n - 1 - i < limit; i--) {
        cJSON *e = cJSON_DetachItemFromArray(all, i);
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(e, "status");

        if (strcmp(st->valuestring, "completed") != 0)
            fill_status(&h, id, e);
        cJSON_AddItemToArray(arr, e);
    }
    rc = rlmcp_h_result_json(&h, res);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(got);
    cJSON_Delete(all);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}
