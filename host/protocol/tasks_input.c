/*
 * tasks_input.c - 2025-11-25 tasks/result on a task that waits for input.
 *
 * That revision has the client call tasks/result when a task is
 * input_required and the server deliver what the task waits for on that
 * request's response stream, as server-to-client requests related to the
 * task (elicitation/create, sampling/createMessage with
 * _meta["io.modelcontextprotocol/related-task"]). So tasks/result runs the
 * tool's wait op; while the result says input_required, each request not
 * asked before is sent to the client, the answers go to the update op,
 * and the wait goes on until the task ends. The task itself stays outside
 * the host: a client that drops the stream asks again with tasks/result.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "call.h"
#include "jsonrpc.h"
#include "log.h"
#include "call_state.h"
#include "registry.h"
#include "tasks.h"

/* A question may wait for a person. */
#define ASK_TIMEOUT_MS (10u * 60u * 1000u)
/* The work asked again what it was answered: let the answer land. */
#define SETTLE_MS 200u

/* The input requests of the op's result, when it waits for input. */
static cJSON *requests_of(struct rlmcp_call *c)
{
    const cJSON *st = NULL, *in = NULL;
    cJSON *out = NULL;

    pthread_mutex_lock(&c->lock);
    st = cJSON_GetObjectItemCaseSensitive(c->structured, "status");
    in = cJSON_GetObjectItemCaseSensitive(c->structured, "input_requests");
    if (!c->is_error && cJSON_IsString(st) &&
        strcmp(st->valuestring, "input_required") == 0 && cJSON_IsObject(in))
        out = cJSON_Duplicate(in, true);
    pthread_mutex_unlock(&c->lock);
    return out;
}

/* Forget the op's result: the next op writes its own. */
static void reset_result(struct rlmcp_call *c)
{
    pthread_mutex_lock(&c->lock);
    cJSON_Delete(c->items);
    c->items = cJSON_CreateArray();
    cJSON_Delete(c->structured);
    c->structured = NULL;
    c->is_error = false;
    c->err_code[0] = '\0';
    pthread_mutex_unlock(&c->lock);
}

/* The request's params with the task named in _meta (spec: MUST). */
static char *related_params(const cJSON *req, const char *task_id)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(req, "params");
    cJSON *p = cJSON_IsObject(params) ? cJSON_Duplicate(params, true)
                                      : cJSON_CreateObject();
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(p, "_meta");
    cJSON *rel = NULL;
    char *json = NULL;

    if (!cJSON_IsObject(meta)) {
        cJSON_DeleteItemFromObjectCaseSensitive(p, "_meta");
        meta = cJSON_AddObjectToObject(p, "_meta");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(meta, TASKS_RELATED_META);
    rel = cJSON_AddObjectToObject(meta, TASKS_RELATED_META);
    if (rel != NULL && cJSON_AddStringToObject(rel, "taskId", task_id) != NULL)
        json = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    return json;
}

enum ask_rc { ASK_OK, ASK_CANNOT, ASK_FAILED };

/*
 * Send each request not asked before; the answers by key into answers and
 * the keys into asked. ASK_CANNOT: the client lacks the capability (the
 * input_required result stays, tasks.c explains). ASK_FAILED: the call was
 * answered with an error, or cancelled.
 */
static enum ask_rc ask_all(struct rlmcp_call *c, const cJSON *requests,
                           cJSON *asked, cJSON *answers)
{
    const cJSON *r = NULL;

    cJSON_ArrayForEach(r, requests)
    {
        const cJSON *method = cJSON_GetObjectItemCaseSensitive(r, "method");
        char *params = NULL, *res = NULL;
        char msg[768];
        int rc;

        if (r->string == NULL ||
            cJSON_GetObjectItemCaseSensitive(asked, r->string) != NULL)
            continue;
        if (!cJSON_IsString(method)) {
            log_msg(RLMCP_LOG_ERROR, c->plugin_name,
                    "tool '%s': input request '%s' of a task has no method",
                    c->what, r->string);
            call_fail(c, JSONRPC_INTERNAL_ERROR,
                      "the task asked for input in a form this server "
                      "cannot send; details are in the server log");
            return ASK_FAILED;
        }
        params = related_params(r, c->task_id);
        rc = params != NULL ? call_client_request(c, method->valuestring,
                                                  params, ASK_TIMEOUT_MS, &res)
                            : RLMCP_ENOMEM;
        free(params);
        if (rc == RLMCP_ENOTSUP)
            return ASK_CANNOT;
        cJSON_AddTrueToObject(asked, r->string);
        if (rc == RLMCP_OK) {
            cJSON_AddItemToObject(answers, r->string, cJSON_Parse(res));
            free(res);
            continue;
        }
        if (rc == RLMCP_EINVAL && res != NULL)
            snprintf(msg, sizeof(msg),
                     "the client answered the task's %s with an error: %.600s",
                     method->valuestring, res);
        else if (rc == RLMCP_ETIMEDOUT)
            snprintf(msg, sizeof(msg),
                     "the client did not answer the task's %s within %u s; "
                     "the task still waits: call tasks/result again",
                     method->valuestring, ASK_TIMEOUT_MS / 1000u);
        else
            snprintf(msg, sizeof(msg), "the task's %s could not be sent (%s)",
                     method->valuestring,
                     rc == RLMCP_ECANCELLED ? "the request was cancelled"
                                            : "out of memory");
        free(res);
        call_fail(c, JSONRPC_INTERNAL_ERROR, msg);
        return ASK_FAILED;
    }
    return ASK_OK;
}

/* Hand the answers to the update op; false after answering the call. */
static bool hand_over(struct rlmcp_call *c, const char *aj, size_t al, void *ud,
                      cJSON *answers)
{
    cJSON *args = cJSON_ParseWithLength(aj, al);
    char *json = NULL;
    bool refused = false;
    int rc = RLMCP_ENOMEM;

    cJSON_DeleteItemFromObjectCaseSensitive(args, "timeout_seconds");
    if (cJSON_IsObject(args) &&
        cJSON_AddItemReferenceToObject(args, "input_responses", answers))
        json = cJSON_PrintUnformatted(args);
    cJSON_Delete(args);
    reset_result(c);
    if (json != NULL)
        rc = c->tool->task.update(c, json, strlen(json), ud);
    free(json);
    pthread_mutex_lock(&c->lock);
    refused = c->is_error;
    pthread_mutex_unlock(&c->lock);
    if (rc == RLMCP_OK && !refused) {
        reset_result(c);
        return true;
    }
    if (rc == RLMCP_ECANCELLED)
        return false;
    call_fail(c, refused ? JSONRPC_INVALID_PARAMS : JSONRPC_INTERNAL_ERROR,
              refused ? "the task refused the client's answer; call "
                        "tasks/result again to be asked again"
                      : "the client's answer could not be handed to the "
                        "task; details are in the server log");
    return false;
}

int tasks_input_result(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    const struct tool_entry *t = call->tool;
    cJSON *asked = cJSON_CreateObject();
    cJSON *requests = NULL, *answers = NULL;
    enum ask_rc asked_rc = ASK_OK;
    int rc = RLMCP_ENOMEM;

    while (asked != NULL) {
        rc = t->task.wait(call, aj, al, ud);
        if (rc != RLMCP_OK || t->task.update == NULL || call->task_id == NULL)
            break;
        requests = requests_of(call);
        if (requests == NULL)
            break; /* ended, or still working after the longest wait */
        answers = cJSON_CreateObject();
        asked_rc = answers != NULL ? ask_all(call, requests, asked, answers)
                                   : ASK_FAILED;
        cJSON_Delete(requests);
        requests = NULL;
        if (asked_rc == ASK_CANNOT)
            break; /* the input_required result says so */
        if (asked_rc == ASK_FAILED || (cJSON_GetArraySize(answers) > 0 &&
                                       !hand_over(call, aj, al, ud, answers)))
            break; /* answered */
        if (cJSON_GetArraySize(answers) == 0) {
            /* Only what was answered: the work has not taken it yet. */
            reset_result(call);
            rc = call_sleep_ms(call, SETTLE_MS);
            if (rc != RLMCP_OK)
                break;
        }
        cJSON_Delete(answers);
        answers = NULL;
    }
    cJSON_Delete(answers);
    cJSON_Delete(asked);
    return rc;
}
