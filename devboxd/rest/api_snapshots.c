/* The disk snapshot routes: /v1/devboxes/disk_snapshots[/...] and a
 * devbox's snapshot_disk[_async] (the engine side is engine/disk_snapshots.c).
 */
#define _GNU_SOURCE
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_snapshots.h"
#include "layers.h"

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
        have =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, key));
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

static void list(struct engine *eng, const struct http_request *req,
                 struct http_response *resp, int public_only)
{
    const char *dbx = http_request_query(req, "devbox_id");
    const char *bp = http_request_query(req, "source_blueprint_id");
    const char *after = http_request_query(req, "starting_after");
    const char *itc = http_request_query(req, "include_total_count");
    const char **ids = NULL;
    const cJSON **recs = NULL;
    const cJSON *rec = NULL;
    char err[ERRLEN];
    int64_t limit;
    size_t n = 0, cap;

    if (api_query_int(req, resp, "limit", 1, 5000, 20, &limit) != 0)
        return;
    layers_lock(eng);
    cap = (size_t)cJSON_GetArraySize(layers_snapshots_locked()) + 1;
    ids = calloc(cap, sizeof(*ids));
    recs = calloc(cap, sizeof(*recs));
    if (ids == NULL || recs == NULL) {
        http_response_error(resp, 500, "out of memory");
        goto out;
    }
    cJSON_ArrayForEach(rec, layers_snapshots_locked())
    {
        int m;

        if (public_only || !snapshots_listed(rec, dbx, bp))
            continue;
        m = metadata_matches(req, rec, err, sizeof(err));
        if (m < 0) {
            http_response_error(resp, 400, "%s", err);
            goto out;
        }
        if (m == 0)
            continue;
        ids[n] =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, "id"));
        recs[n++] = rec;
    }
    /* An unknown starting_after on an empty list is an empty page here. */
    api_list_reply(resp, "snapshots", ids, (const void *const *)recs, n,
                   n > 0 ? after : NULL, limit, itc, view_item);
out:
    layers_unlock();
    free(ids);
    free(recs);
}

void api_snapshots_list(struct engine *eng, const struct api_call *call)
{
    list(eng, call->req, call->resp, 0);
}

void api_snapshots_list_public(struct engine *eng, const struct api_call *call)
{
    list(eng, call->req, call->resp, 1);
}

static void reply(struct http_response *resp, int status, cJSON *view,
                  const char *err)
{
    if (status != 0)
        http_response_error(resp, status, "%s", err);
    else
        http_response_json(resp, 200,
                           view != NULL ? view : cJSON_CreateObject());
}

/* An engine call on the request's JSON body. */
typedef int (*body_fn)(struct engine *eng, const struct api_call *call,
                       const cJSON *body, cJSON **view, char *err,
                       size_t errlen);

static void with_body(struct engine *eng, const struct api_call *call,
                      body_fn fn)
{
    cJSON *body = NULL;
    cJSON *view = NULL;
    char err[ERRLEN] = "";
    int status;

    if (api_parse_body(call->req, call->resp, &body) != 0)
        return;
    status = fn(eng, call, body, &view, err, sizeof(err));
    reply(call->resp, status, view, err);
    cJSON_Delete(body);
}

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
    with_body(eng, call, create);
}

void api_snapshots_create_async(struct engine *eng, const struct api_call *call)
{
    with_body(eng, call, create_async);
}

void api_snapshots_update(struct engine *eng, const struct api_call *call)
{
    with_body(eng, call, update);
}

void api_snapshots_delete(struct engine *eng, const struct api_call *call)
{
    char err[ERRLEN] = "";
    int status = snapshots_delete(eng, call->id, err, sizeof(err));

    reply(call->resp, status, NULL, err);
}

void api_snapshots_status(struct engine *eng, const struct api_call *call)
{
    cJSON *out = NULL;
    char err[ERRLEN] = "";
    int status = snapshots_status(eng, call->id, &out, err, sizeof(err));

    reply(call->resp, status, out, err);
}
