/*
 * complete.c - completion/complete values from the Runloop API.
 */
#define _GNU_SOURCE
#include "complete.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "pool.h"
#include "rlclient.h"
#include "secret.h"

/* A completion lists one page (200), quickly: it is typed as we go. */
#define COMPLETE_TIMEOUT_MS 5000u

struct complete_job {
    struct rlclient *rl;
    struct mcp_sink *sink;
    cJSON *id;
    enum complete_kind kind;
    char *prefix;
    char *api_key; /* never logged */
};

enum complete_kind complete_kind_of(const char *name)
{
    bool id = false;
    size_t n = strlen(name);

    if (strcmp(name, "devbox_id") == 0 || strcmp(name, "devbox") == 0)
        return COMPLETE_DEVBOX_ID;
    id = n > 3 && strcmp(name + n - 3, "_id") == 0;
    if (strstr(name, "snapshot") != NULL)
        return id ? COMPLETE_SNAPSHOT_ID : COMPLETE_SNAPSHOT_NAME;
    if (strstr(name, "blueprint") != NULL)
        return id ? COMPLETE_BLUEPRINT_ID : COMPLETE_BLUEPRINT_NAME;
    return COMPLETE_NONE;
}

static const char *list_path(enum complete_kind kind)
{
    switch (kind) {
    case COMPLETE_DEVBOX_ID:
        return "/v1/devboxes?limit=200";
    case COMPLETE_SNAPSHOT_NAME:
    case COMPLETE_SNAPSHOT_ID:
        return "/v1/devboxes/disk_snapshots?limit=200";
    case COMPLETE_BLUEPRINT_NAME:
    case COMPLETE_BLUEPRINT_ID:
        return "/v1/blueprints?limit=200";
    case COMPLETE_NONE:
        break;
    }
    return NULL;
}

/* Devboxes that are gone are no use to complete to. */
static bool devbox_alive(const cJSON *item)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(item, "status");

    return !cJSON_IsString(st) || (strcmp(st->valuestring, "shutdown") != 0 &&
                                   strcmp(st->valuestring, "failure") != 0);
}

static bool already(const cJSON *values, const char *v)
{
    const cJSON *e = NULL;

    cJSON_ArrayForEach(e, values)
    {
        if (strcmp(e->valuestring, v) == 0)
            return true;
    }
    return false;
}

cJSON *complete_from_page(enum complete_kind kind, const cJSON *page,
                          const char *prefix)
{
    const char *key =
        kind == COMPLETE_DEVBOX_ID ? "devboxes"
        : kind == COMPLETE_SNAPSHOT_NAME || kind == COMPLETE_SNAPSHOT_ID
            ? "snapshots"
            : "blueprints";
    const char *field =
        kind == COMPLETE_SNAPSHOT_NAME || kind == COMPLETE_BLUEPRINT_NAME
            ? "name"
            : "id";
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(page, key);
    const cJSON *item = NULL;
    cJSON *res = cJSON_CreateObject();
    cJSON *comp = cJSON_AddObjectToObject(res, "completion");
    cJSON *values = cJSON_AddArrayToObject(comp, "values");
    size_t plen = strlen(prefix);
    int total = 0;

    if (values == NULL) {
        cJSON_Delete(res);
        return NULL;
    }
    cJSON_ArrayForEach(item, items)
    {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(item, field);

        if (!cJSON_IsString(v) || v->valuestring[0] == '\0' ||
            strncmp(v->valuestring, prefix, plen) != 0 ||
            (kind == COMPLETE_DEVBOX_ID && !devbox_alive(item)) ||
            already(values, v->valuestring))
            continue;
        total++;
        if (cJSON_GetArraySize(values) < COMPLETE_MAX_VALUES)
            cJSON_AddItemToArray(values, cJSON_CreateString(v->valuestring));
    }
    cJSON_AddNumberToObject(comp, "total", total);
    cJSON_AddBoolToObject(
        comp, "hasMore",
        total > COMPLETE_MAX_VALUES ||
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(page, "has_more")));
    return res;
}

static cJSON *empty_result(void)
{
    return complete_from_page(COMPLETE_DEVBOX_ID, NULL, "");
}

static void job_free(struct complete_job *j)
{
    if (j == NULL)
        return;
    cJSON_Delete(j->id);
    free(j->prefix);
    secret_free(j->api_key);
    free(j);
}

/* The list the completion draws from; NULL (logged) when it failed. */
static cJSON *fetch_page(struct complete_job *j)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;
    cJSON *page = NULL;
    int rc;

    req.method = "GET";
    req.path = list_path(j->kind);
    req.timeout_ms = COMPLETE_TIMEOUT_MS;
    req.max_retries = 0;
    if (j->rl == NULL)
        return NULL;
    rc = rlclient_request(j->rl, j->api_key, &req, &resp, NULL, NULL);
    if (rc == RLMCP_OK && resp->status >= 200 && resp->status <= 299)
        page = cJSON_ParseWithLength(resp->body, resp->body_len);
    else
        log_msg(RLMCP_LOG_INFO, NULL,
                "completion: listing %s failed (%s); answering no values",
                req.path,
                rc != RLMCP_OK ? rlclient_last_error() : "an HTTP error");
    rlclient_resp_free(resp);
    return page;
}

static void job_run(void *arg)
{
    struct complete_job *j = arg;
    cJSON *page = fetch_page(j);
    cJSON *res = complete_from_page(j->kind, page, j->prefix);

    cJSON_Delete(page);
    mcp_send_final(j->sink, res != NULL ? jsonrpc_result(j->id, res) : NULL);
    j->sink->release(j->sink);
    job_free(j);
}

void complete_answer(struct pool *pool, struct rlclient *rl,
                     struct mcp_sink *sink, const cJSON *id,
                     enum complete_kind kind, const char *prefix,
                     const char *api_key)
{
    struct complete_job *j = NULL;
    const char *key = api_key;

    if (kind != COMPLETE_NONE)
        j = calloc(1, sizeof(*j));
    if (j != NULL) {
        j->rl = rl;
        j->sink = sink;
        j->kind = kind;
        j->id = cJSON_Duplicate(id, false);
        j->prefix = strdup(prefix);
        j->api_key = key != NULL ? strdup(key) : NULL;
        if (j->id == NULL || j->prefix == NULL ||
            (key != NULL && j->api_key == NULL)) {
            job_free(j);
            j = NULL;
        }
    }
    if (j == NULL) {
        mcp_send_final(sink, jsonrpc_result(id, empty_result()));
        return;
    }
    sink->retain(sink);
    if (pool_submit(pool, job_run, j) == 0)
        return;
    job_free(j);
    mcp_send_final(sink, jsonrpc_result(id, empty_result()));
    sink->release(sink);
}
