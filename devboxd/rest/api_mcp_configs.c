/* The MCP config routes: /v1/mcp-configs[/{id}[/delete]] (the records are
 * engine/mcp_configs.c). */
#define _GNU_SOURCE
#include "api.h"

#include <string.h>

#include "mcp_configs.h"
#include "util.h"

#define ERRLEN 512

static int list_match(const cJSON *rec, const struct http_request *req)
{
    const char *id = http_request_query(req, "id");
    const char *name = http_request_query(req, "name");
    const char *search = http_request_query(req, "search");
    const char *rid = util_json_str(rec, "id");
    const char *rname = util_json_str(rec, "name");

    if (id != NULL && id[0] != '\0' && strcmp(rid, id) != 0)
        return 0;
    if (name != NULL && strncmp(rname, name, strlen(name)) != 0)
        return 0;
    if (search != NULL && search[0] != '\0' &&
        strcasestr(rname, search) == NULL && strcmp(rid, search) != 0)
        return 0;
    return 1;
}

void api_mcp_configs_list(struct engine *eng, const struct api_call *call)
{
    cJSON *views = NULL;
    int64_t limit;

    if (api_query_int(call->req, call->resp, "limit", 1, 5000, 20, &limit) != 0)
        return;
    views = mcp_configs_list(eng);
    api_list_records(call->resp, call->req, "mcp_configs", views, limit,
                     list_match, api_view_copy);
    cJSON_Delete(views);
}

void api_mcp_configs_get(struct engine *eng, const struct api_call *call)
{
    api_with_id(eng, call, mcp_configs_get);
}

void api_mcp_configs_delete(struct engine *eng, const struct api_call *call)
{
    api_with_id(eng, call, mcp_configs_delete);
}

static int write_config(struct engine *eng, const struct api_call *call,
                        const cJSON *body, cJSON **view, char *err,
                        size_t errlen)
{
    return mcp_configs_write(eng, call->id, body, view, err, errlen);
}

/* Create (no {id}) or update. */
void api_mcp_configs_write(struct engine *eng, const struct api_call *call)
{
    char err[ERRLEN] = "";
    int status =
        call->id != NULL ? mcp_configs_check_id(call->id, err, sizeof(err)) : 0;

    /* An id that cannot be a config's is the answer whatever the body. */
    if (status != 0)
        api_reply(call->resp, status, NULL, err);
    else
        api_with_body(eng, call, write_config);
}
