/* The secret routes: /v1/secrets[/{name}[/delete]] (the store is
 * engine/secrets.c). */
#define _GNU_SOURCE
#include "api.h"

#include <string.h>

#include "secrets.h"

#define ERRLEN 512

static void reply(struct http_response *resp, int status, cJSON *view,
                  const char *err)
{
    if (status != 0)
        http_response_error(resp, status, "%s", err);
    else
        http_response_json(resp, 200, view);
}

static cJSON *view_copy(const void *item)
{
    return cJSON_Duplicate(item, 1);
}

void api_secrets_list(struct engine *eng, const struct api_call *call)
{
    cJSON *views = NULL;
    int64_t limit;

    if (api_query_int(call->req, call->resp, "limit", 1, 5000, 20, &limit) != 0)
        return;
    views = secrets_list(eng);
    api_list_records(call->resp, call->req, "secrets", views, limit, NULL,
                     view_copy);
    cJSON_Delete(views);
}

void api_secrets_create(struct engine *eng, const struct api_call *call)
{
    cJSON *body = NULL;
    cJSON *view = NULL;
    char err[ERRLEN] = "";
    int status;

    if (api_parse_body(call->req, call->resp, &body) != 0)
        return;
    status = secrets_create(eng, body, &view, err, sizeof(err));
    reply(call->resp, status, view, err);
    cJSON_Delete(body);
}

void api_secrets_get(struct engine *eng, const struct api_call *call)
{
    cJSON *view = NULL;
    char err[ERRLEN] = "";
    int status = secrets_get(eng, call->id, &view, err, sizeof(err));

    reply(call->resp, status, view, err);
}

void api_secrets_update(struct engine *eng, const struct api_call *call)
{
    cJSON *body = NULL;
    cJSON *view = NULL;
    char err[ERRLEN] = "";
    int status;

    /* A bad name is the answer whatever the body. */
    status = secrets_check_name(call->id, err, sizeof(err));
    if (status != 0) {
        reply(call->resp, status, NULL, err);
        return;
    }
    if (api_parse_body(call->req, call->resp, &body) != 0)
        return;
    status = secrets_update(eng, call->id, body, &view, err, sizeof(err));
    reply(call->resp, status, view, err);
    cJSON_Delete(body);
}

void api_secrets_delete(struct engine *eng, const struct api_call *call)
{
    cJSON *view = NULL;
    char err[ERRLEN] = "";
    int status = secrets_delete(eng, call->id, &view, err, sizeof(err));

    reply(call->resp, status, view, err);
}
