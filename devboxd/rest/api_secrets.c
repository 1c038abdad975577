/* The secret routes: /v1/secrets[/{name}[/delete]] (the store is
 * engine/secrets.c). */
#define _GNU_SOURCE
#include "api.h"

#include <string.h>

#include "secrets.h"

#define ERRLEN 512

void api_secrets_list(struct engine *eng, const struct api_call *call)
{
    cJSON *views = NULL;
    int64_t limit;

    if (api_query_int(call->req, call->resp, "limit", 1, 5000, 20, &limit) != 0)
        return;
    views = secrets_list(eng);
    api_list_records(call->resp, call->req, "secrets", views, limit, NULL,
                     api_view_copy);
    cJSON_Delete(views);
}

static int create(struct engine *eng, const struct api_call *call,
                  const cJSON *body, cJSON **view, char *err, size_t errlen)
{
    return secrets_create(eng, body, view, err, errlen);
}

static int update(struct engine *eng, const struct api_call *call,
                  const cJSON *body, cJSON **view, char *err, size_t errlen)
{
    return secrets_update(eng, call->id, body, view, err, errlen);
}

void api_secrets_create(struct engine *eng, const struct api_call *call)
{
    api_with_body(eng, call, create);
}

void api_secrets_get(struct engine *eng, const struct api_call *call)
{
    api_with_id(eng, call, secrets_get);
}

void api_secrets_update(struct engine *eng, const struct api_call *call)
{
    char err[ERRLEN] = "";
    int status = secrets_check_name(call->id, err, sizeof(err));

    /* A bad name is the answer whatever the body. */
    if (status != 0)
        api_reply(call->resp, status, NULL, err);
    else
        api_with_body(eng, call, update);
}

void api_secrets_delete(struct engine *eng, const struct api_call *call)
{
    api_with_id(eng, call, secrets_delete);
}
