/* The disk snapshot routes: /v1/devboxes/disk_snapshots[/...] and a
 * devbox's snapshot_disk[_async] (the engine side is engine/disk_snapshots.c).
 */
#define _GNU_SOURCE
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_snapshots.h"
#include "layer_records.h"
#include "util.h"

#define ERRLEN 512

/* Does value v appear in the comma-separated list? */
static int in_csv(const char *list, const char *v)
{
    size_t vl = strlen(v);
    const char *p = list;

    while (p != NULL) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);

        if (len == vl && strncmp(p, v, vl) == 0)
            return 1;
        p = comma != NULL ? comma + 1 : NULL;
    }
    return 0;
}

/* metadata[<key>]=<v> and metadata[<key>][in]=<v1,v2> query filters.
 * Returns 1 if rec passes them all, 0 if not, -1 with err on a bad filter. */
static int metadata_matches(const struct http_request *req, const cJSON *rec,
                            char *err, size_t errlen)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(rec, "metadata");
    size_t i;

    for (i = 0; i < req->n_query; i++) {
        const char *name = req->query[i].name;
        const char *close = NULL;
        const char *have = NULL;
        char key[256];
        size_t klen;
        int is_in;

        if (strncmp(name, "metadata[", 9) != 0)
            continue;
        close = strchr(name + 9, ']');
        klen = close != NULL ? (size_t)(close - name - 9) : 0;
        is_in = close != NULL && strcmp(close + 1, "[in]") == 0;
        if (close == NULL || klen == 0 || klen >= sizeof(key) ||
            (close[1] != '\0' && !is_in)) {
            snprintf(err, errlen,
                     "query parameter '%s' is not a metadata filter; use "
                     "metadata[<key>]=<value> or metadata[<key>][in]=<v1>,<v2>",
                     name);
            return -1;
        }
        memcpy(key, name + 9, klen);
        key[klen] = '\0';
        have = util_json_str(meta, key);
        if (have == NULL)
            return 0;
        if (is_in ? !in_csv(req->query[i].value, have)
                  : strcmp(have, req->query[i].value) != 0)
            return 0;
    }
    return 1;
}

static cJSON *view_item(const void *rec)
{
    return snapshots_view(rec);
}

static int keep(const cJSON *rec, const struct http_request *req, char *err,
                size_t errlen)
{
    if (!snapshots_listed(rec, http_request_query(req, "devbox_id"),
                          http_request_query(req, "source_blueprint_id")))
        return 0;
    return metadata_matches(req, rec, err, errlen);
}

static void list(struct engine *eng, const struct http_request *req,
                 struct http_response *resp, int public_only)
{
    int64_t limit;

    if (api_query_int(req, resp, "limit", 1, 5000, 20, &limit) != 0)
        return;
    layer_records_lock(eng);
    api_list_selected(resp, req, "snapshots",
                      public_only ? NULL : layer_records_snapshots_locked(),
                      limit, keep, view_item);
    layer_records_unlock();
}

void api_snapshots_list(struct engine *eng, const struct api_call *call)
{
    list(eng, call->req, call->resp, 0);
}

void api_snapshots_list_public(struct engine *eng, const struct api_call *call)
{
    list(eng, call->req, call->resp, 1);
}

/* An engine call on the request's JSON body. */
typedef int (*body_fn)(struct engine *eng, const struct api_call *call,
                       const cJSON *body, cJSON **view, char *err,
                       size_t errlen);

static int create(struct engine *eng, const struct api_call *call,
                  const cJSON *body, cJSON **view, char *err, size_t errlen)
{
    return snapshots_create(eng, call->box, body, 0, view, err, errlen);
}

static int create_async(struct engine *eng, const struct api_call *call,
                        const cJSON *body, cJSON **view, char *err,
                        size_t errlen)
{
    return snapshots_create(eng, call->box, body, 1, view, err, errlen);
}

static int update(struct engine *eng, const struct api_call *call,
                  const cJSON *body, cJSON **view, char *err, size_t errlen)
{
    return snapshots_update(eng, call->id, body, view, err, errlen);
}

void api_snapshots_create(struct engine *eng, const struct api_call *call)
{
    api_with_body(eng, call, create);
}

void api_snapshots_create_async(struct engine *eng, const struct api_call *call)
{
    api_with_body(eng, call, create_async);
}

void api_snapshots_update(struct engine *eng, const struct api_call *call)
{
    api_with_body(eng, call, update);
}

void api_snapshots_delete(struct engine *eng, const struct api_call *call)
{
    char err[ERRLEN] = "";
    int status = snapshots_delete(eng, call->id, err, sizeof(err));

    api_reply(call->resp, status, NULL, err);
}

void api_snapshots_status(struct engine *eng, const struct api_call *call)
{
    api_with_id(eng, call, snapshots_status);
}
