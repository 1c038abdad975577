/* devboxd REST API: routes the Runloop paths to the engine, checks the
 * bearer key, validates bodies with messages that say what to fix, and
 * builds the JSON views the official SDK expects. */
#define _GNU_SOURCE
#include "api.h"
#include "devbox_spec.h"
#include "disk_snapshots.h"
#include "idempotency.h"
#include "layer_records.h"
#include "mcp_configs.h"
#include "sandbox.h"
#include "objects.h"
#include "secrets.h"
#include "tunnels.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ERRLEN 512
#define LONGPOLL_DEFAULT_S 25
#define LONGPOLL_MAX_S 30
#define OPTIMISTIC_MAX_S 25
#define LIST_LIMIT_DEFAULT 20
#define LIST_LIMIT_MAX 5000
#define LAST_N_DEFAULT 100

/* Long-poll wait that gives up once the engine is stopping. */
static int client_wait(struct engine *eng, int64_t deadline_ms)
{
    if (eng->stopping)
        return -1;
    return engine_wait_locked(eng, deadline_ms) != 0 || eng->stopping ? -1 : 0;
}

/* ------------------------------------------------------------ helpers */

int api_page(const char *const *ids, size_t n, const char *starting_after,
             int64_t limit, size_t *first, size_t *count, int *has_more,
             char *err, size_t errlen)
{
    size_t start = 0;
    size_t i;

    if (starting_after != NULL && starting_after[0] != '\0') {
        for (i = 0; i < n; i++) {
            if (strcmp(ids[i], starting_after) == 0)
                break;
        }
        if (i == n) {
            snprintf(
                err, errlen,
                "starting_after \"%s\" is not an id in this list; pass the "
                "id of the last item of the previous page",
                starting_after);
            return -1;
        }
        start = i + 1;
    }
    *first = start;
    *count = n - start < (size_t)limit ? n - start : (size_t)limit;
    *has_more = start + *count < n;
    return 0;
}

void api_list_reply(struct http_response *resp, const char *key,
                    const char *const *ids, const void *const *items, size_t n,
                    const char *starting_after, int64_t limit,
                    const char *include_total_count, api_view_fn view)
{
    cJSON *out = NULL;
    cJSON *arr = NULL;
    char err[ERRLEN];
    size_t first, count, i;
    int has_more;

    if (api_page(ids, n, starting_after, limit, &first, &count, &has_more, err,
                 sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        return;
    }
    out = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(out, key);
    for (i = first; i < first + count; i++)
        cJSON_AddItemToArray(arr, view(items[i]));
    cJSON_AddBoolToObject(out, "has_more", has_more);
    if (include_total_count == NULL ||
        strcmp(include_total_count, "false") != 0)
        cJSON_AddNumberToObject(out, "total_count", (double)n);
    else
        cJSON_AddNullToObject(out, "total_count");
    cJSON_AddNumberToObject(out, "remaining_count",
                            (double)(n - first - count));
    http_response_json(resp, 200, out);
}

/* The page of all's records that match (0/1) or keep (1, 0, or -1 with
 * err: answered 400) accept; lenient: an unknown starting_after on an empty
 * selection is an empty page. */
static void
list_page(struct http_response *resp, const struct http_request *req,
          const char *key, const cJSON *all, int64_t limit,
          int (*match)(const cJSON *rec, const struct http_request *req),
          api_keep_fn keep, int lenient, api_view_fn view)
{
    size_t cap = (size_t)cJSON_GetArraySize(all) + 1;
    const char **ids = calloc(cap, sizeof(*ids));
    const void **items = calloc(cap, sizeof(*items));
    const char *after = http_request_query(req, "starting_after");
    const cJSON *it = NULL;
    char err[ERRLEN];
    size_t n = 0;

    if (ids == NULL || items == NULL) {
        http_response_error(resp, 500, "out of memory");
        goto out;
    }
    cJSON_ArrayForEach(it, all)
    {
        int k = 1;

        if (match != NULL)
            k = match(it, req);
        else if (keep != NULL)
            k = keep(it, req, err, sizeof(err));
        if (k < 0) {
            http_response_error(resp, 400, "%s", err);
            goto out;
        }
        if (k == 0)
            continue;
        ids[n] = util_json_str(it, "id");
        items[n++] = it;
    }
    api_list_reply(resp, key, ids, items, n, lenient && n == 0 ? NULL : after,
                   limit, http_request_query(req, "include_total_count"), view);
out:
    free(ids);
    free(items);
}

void api_list_records(struct http_response *resp,
                      const struct http_request *req, const char *key,
                      const cJSON *all, int64_t limit,
                      int (*match)(const cJSON *rec,
                                   const struct http_request *req),
                      api_view_fn view)
{
    list_page(resp, req, key, all, limit, match, NULL, 0, view);
}

void api_list_selected(struct http_response *resp,
                       const struct http_request *req, const char *key,
                       const cJSON *all, int64_t limit, api_keep_fn keep,
                       api_view_fn view)
{
    list_page(resp, req, key, all, limit, NULL, keep, 1, view);
}

size_t api_sse_chunk(char *buf, size_t cap, const char *data, size_t len,
                     int64_t offset)
{
    cJSON *obj = cJSON_CreateObject();
    char *tmp = NULL;
    char *text = NULL;
    int n;

    tmp = malloc(len + 1);
    if (tmp == NULL) {
        cJSON_Delete(obj);
        return 0;
    }
    memcpy(tmp, data, len);
    tmp[len] = '\0';
    cJSON_AddStringToObject(obj, "output", tmp);
    cJSON_AddNumberToObject(obj, "offset", (double)offset);
    text = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    free(tmp);
    if (text == NULL)
        return 0;
    n = snprintf(buf, cap, "data: %s\n\n", text);
    free(text);
    if (n < 0 || (size_t)n >= cap)
        return 0;
    return (size_t)n;
}

int api_parse_body(const struct http_request *req, struct http_response *resp,
                   cJSON **out)
{
    const char *end = NULL;
    cJSON *body = NULL;
    size_t nul = 0;

    *out = NULL;
    if (req->body_too_large) {
        http_response_error(
            resp, 413,
            "request body too large: JSON bodies are limited to %u bytes "
            "(use upload_file for large files)",
            HTTP_MAX_JSON_BODY);
        return -1;
    }
    if (req->body_len == 0) {
        *out = cJSON_CreateObject();
        return 0;
    }
    body = cJSON_ParseWithLengthOpts(req->body, req->body_len, &end, 0);
    if (body == NULL) {
        size_t at =
            end != NULL && end >= req->body ? (size_t)(end - req->body) : 0;

        http_response_error(
            resp, 400,
            "malformed JSON in the request body near byte %zu; send a "
            "JSON object",
            at);
        return -1;
    }
    if (!cJSON_IsObject(body)) {
        cJSON_Delete(body);
        http_response_error(resp, 400,
                            "the request body must be a JSON object");
        return -1;
    }
    nul = util_json_nul_at(req->body, req->body_len);
    if (nul < req->body_len) {
        cJSON_Delete(body);
        http_response_error(
            resp, 400,
            "a string in the request body holds \\u0000 (byte %zu), which "
            "would be cut short here; send binary data with upload_file",
            nul);
        return -1;
    }
    *out = body;
    return 0;
}

int api_query_int(const struct http_request *req, struct http_response *resp,
                  const char *name, int64_t lo, int64_t hi, int64_t def,
                  int64_t *out)
{
    const char *v = http_request_query(req, name);
    char *end = NULL;
    long long n;

    *out = def;
    if (v == NULL || v[0] == '\0')
        return 0;
    errno = 0;
    n = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || n < lo || n > hi) {
        http_response_error(
            resp, 400,
            "query parameter '%s' must be an integer from %lld to %lld, "
            "got \"%s\"",
            name, (long long)lo, (long long)hi, v);
        return -1;
    }
    *out = n;
    return 0;
}

void api_storage_error(struct http_response *resp, int err)
{
    if (err == ENOSPC || err == EDQUOT)
        http_response_error(
            resp, 507,
            "the engine's disk is full: devboxd could not save this "
            "change (nothing was acknowledged); free space on the disk of "
            "devboxd's state directory, then retry");
    else
        http_response_error(
            resp, 507,
            "devboxd could not save this change to its state "
            "directory (%s); nothing was acknowledged, retry once the state "
            "disk is writable",
            strerror(err));
}

int api_authorized(void *ud, const struct http_request *req)
{
    struct engine *eng = ud;
    const char *h = NULL;

    if (req->trusted || objects_signed_request(eng, req))
        return 0;
    h = http_request_header(req, "authorization");
    if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
        return -1;
    return util_secret_equal(h + 7, eng->api_key) ? 0 : -1;
}

/* Splits "/v1/devboxes/a/b" into at most max segments (pointers into buf). */
static size_t split_path(char *buf, char **seg, size_t max)
{
    size_t n = 0;
    char *save = NULL;
    char *tok = NULL;

    for (tok = strtok_r(buf, "/", &save); tok != NULL;
         tok = strtok_r(NULL, "/", &save)) {
        if (n == max)
            return max + 1;
        seg[n++] = tok;
    }
    return n;
}

/* ----------------------------------------------------------- devboxes */

static void handle_create(struct engine *eng, const struct http_request *req,
                          struct http_response *resp, int await_running)
{
    cJSON *body = NULL;
    cJSON *spec = NULL;
    struct devbox *box = NULL;
    cJSON *view = NULL;
    int64_t deadline;
    char err[ERRLEN];
    int status;

    if (api_parse_body(req, resp, &body) != 0)
        return;
    spec = devbox_spec_validate(body, &status, err, sizeof(err));
    if (spec == NULL) {
        cJSON_Delete(body);
        http_response_error(resp, status, "%s", err);
        return;
    }
    /* Secret values, MCP servers and objects are resolved now: nothing is created
     * when one is missing. */
    status = secrets_resolve_create(eng, body, spec, err, sizeof(err));
    if (status == 0)
        status = mcp_configs_resolve_create(eng, body, spec, err, sizeof(err));
    if (status == 0)
        status = objects_resolve_create(eng, body, spec, err, sizeof(err));
    if (status != 0) {
        cJSON_Delete(body);
        cJSON_Delete(spec);
        http_response_error(resp, status, "%s", err);
        return;
    }
    /* snapshot_id / blueprint_*: the layer chain goes into the spec; the
     * registry lock keeps the layers from being deleted until the box exists. */
    layer_records_lock(eng);
    status = layer_records_resolve_create(eng, body, spec, err, sizeof(err));
    cJSON_Delete(body);
    if (status != 0) {
        layer_records_unlock();
        cJSON_Delete(spec);
        http_response_error(resp, status, "%s", err);
        return;
    }
    box = engine_create(eng, spec, &view, err, sizeof(err));
    layer_records_unlock();
    if (box == NULL && err[0] != '\0') { /* an admission cap refused it */
        http_response_error(
            resp,
            strncmp(err, ADMISSION_DISK_FULL, strlen(ADMISSION_DISK_FULL)) == 0
                ? 507
                : 400,
            "%s", err);
        return;
    }
    if (box == NULL && util_write_error() != 0) {
        api_storage_error(resp, util_write_error());
        return;
    }
    if (box == NULL) {
        http_response_error(resp, 500, "cannot create the devbox record");
        return;
    }
    if (!await_running) {
        http_response_json(resp, 200, view);
        return;
    }
    cJSON_Delete(view);
    pthread_mutex_lock(&eng->lock);
    deadline = util_now_ms() + LONGPOLL_DEFAULT_S * 1000;
    while (box->status != DBX_RUNNING && box->status != DBX_FAILURE &&
           box->status != DBX_SHUTDOWN && client_wait(eng, deadline) == 0)
        ;
    http_response_json(resp, 200, engine_box_view_locked(box));
    pthread_mutex_unlock(&eng->lock);
}

struct box_ref {
    char id[40];
    int64_t t;
};

/* Query parameters metadata[KEY]=VALUE filter the list (all must match). */
static int metadata_matches(const struct http_request *req,
                            const struct devbox *b)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(b->spec, "metadata");
    size_t i;

    for (i = 0; i < req->n_query; i++) {
        const char *name = req->query[i].name;
        size_t len = strlen(name);
        const cJSON *v = NULL;
        char key[256];

        if (strncmp(name, "metadata[", 9) != 0 || len < 11 ||
            name[len - 1] != ']' || len - 10 >= sizeof(key))
            continue;
        memcpy(key, name + 9, len - 10);
        key[len - 10] = '\0';
        v = cJSON_GetObjectItemCaseSensitive(meta, key);
        if (!cJSON_IsString(v) ||
            strcmp(v->valuestring, req->query[i].value) != 0)
            return 0;
    }
    return 1;
}

/* The engine lock is held while api_list_reply builds the views. */
static cJSON *box_item_view(const void *box)
{
    return engine_box_view_locked((struct devbox *)box);
}

static void handle_list(struct engine *eng, const struct http_request *req,
                        struct http_response *resp)
{
    const char *st = http_request_query(req, "status");
    const char *after = http_request_query(req, "starting_after");
    const char *itc = http_request_query(req, "include_total_count");
    const char **ids = NULL;
    struct devbox **boxes = NULL;
    struct devbox *b;
    int64_t limit;
    size_t n = 0, cap = 0;
    int want = -1;

    if (api_query_int(req, resp, "limit", 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT,
                      &limit) != 0)
        return;
    if (st != NULL && st[0] != '\0') {
        want = dbx_status_parse(st);
        /* Runloop's scheduling state: no devbox here waits in it. */
        if (strcmp(st, "scheduled") == 0)
            want = DBX_N_STATUS;
        if (want < 0) {
            http_response_error(
                resp, 400,
                "status \"%s\" is not a devbox status; use one of "
                "provisioning, initializing, running, suspending, suspended, "
                "resuming, failure, shutdown, queued, scheduled",
                st);
            return;
        }
    }
    if (itc != NULL && strcmp(itc, "true") != 0 && strcmp(itc, "false") != 0) {
        http_response_error(resp, 400,
                            "include_total_count must be true or false");
        return;
    }
    pthread_mutex_lock(&eng->lock);
    for (b = eng->boxes; b != NULL; b = b->next)
        cap++;
    ids = calloc(cap + 1, sizeof(*ids));
    boxes = calloc(cap + 1, sizeof(*boxes));
    for (b = eng->boxes; b != NULL && ids != NULL && boxes != NULL;
         b = b->next) {
        if (want >= 0 && b->status != want)
            continue;
        if (!metadata_matches(req, b))
            continue;
        ids[n] = b->id;
        boxes[n] = b;
        n++;
    }
    if (ids == NULL || boxes == NULL) {
        http_response_error(resp, 500, "out of memory");
        goto out;
    }
    api_list_reply(resp, "devboxes", ids, (const void *const *)boxes, n, after,
                   limit, itc, box_item_view);
out:
    pthread_mutex_unlock(&eng->lock);
    free(ids);
    free(boxes);
}

static void handle_update(struct engine *eng, struct devbox *box,
                          const struct http_request *req,
                          struct http_response *resp)
{
    static const char *const fields[] = {"name", "metadata", NULL};
    cJSON *body = NULL;
    cJSON *old = NULL;
    const char *name = NULL;
    const cJSON *meta = NULL;
    char err[ERRLEN];

    if (api_parse_body(req, resp, &body) != 0)
        return;
    if (util_check_fields(body, "", fields, err, sizeof(err)) != 0 ||
        util_opt_string(body, "name", &name, err, sizeof(err)) != 0 ||
        util_opt_string_map(body, "metadata", &meta, err, sizeof(err)) != 0) {
        http_response_error(resp, 400,
                            "%s (only name and metadata can be updated)", err);
        goto out;
    }
    pthread_mutex_lock(&eng->lock);
    old = cJSON_Duplicate(box->spec, 1);
    if (name != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(box->spec, "name");
        if (name[0] != '\0')
            cJSON_AddStringToObject(box->spec, "name", name);
    }
    if (meta != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(box->spec, "metadata");
        cJSON_AddItemToObject(box->spec, "metadata", cJSON_Duplicate(meta, 1));
    }
    if (engine_save_locked(eng, box) != 0 && old != NULL) {
        /* Not saved, so not changed: the caller gets the error. */
        cJSON_Delete(box->spec);
        box->spec = old;
        old = NULL;
        api_storage_error(resp,
                          util_write_error() != 0 ? util_write_error() : EIO);
    } else {
        http_response_json(resp, 200, engine_box_view_locked(box));
    }
    pthread_mutex_unlock(&eng->lock);
out:
    cJSON_Delete(old);
    cJSON_Delete(body);
}

static int parse_statuses(const cJSON *body, int (*parse)(const char *),
                          int *set, int nset, struct http_response *resp,
                          const char *valid)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(body, "statuses");
    const cJSON *it = NULL;
    int any = 0;

    memset(set, 0, sizeof(int) * (size_t)nset);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
        http_response_error(resp, 400,
                            "'statuses' is required: a non-empty array of %s",
                            valid);
        return -1;
    }
    cJSON_ArrayForEach(it, arr)
    {
        int s = cJSON_IsString(it) ? parse(it->valuestring) : -1;

        if (s < 0 || s >= nset) {
            http_response_error(
                resp, 400, "'statuses' holds \"%s\", which is not one of %s",
                cJSON_IsString(it) ? it->valuestring : "(not a string)", valid);
            return -1;
        }
        set[s] = 1;
        any = 1;
    }
    return any ? 0 : -1;
}

static int body_timeout(const cJSON *body, struct http_response *resp,
                        int64_t *secs)
{
    char err[ERRLEN];

    if (util_opt_int(body, "timeout_seconds", 1, LONGPOLL_MAX_S, secs, NULL,
                     err, sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        return -1;
    }
    return 0;
}

static void timeout_408(struct http_response *resp, const char *what)
{
    http_response_error(
        resp, 408,
        "%s did not reach the requested status in time; repeat the "
        "request to keep waiting",
        what);
    http_response_set_header(resp, "x-should-retry", "true");
}

static void handle_box_wait(struct engine *eng, struct devbox *box,
                            const struct http_request *req,
                            struct http_response *resp)
{
    static const char *const fields[] = {"statuses", "timeout_seconds", NULL};
    int set[DBX_N_STATUS];
    cJSON *body = NULL;
    int64_t secs = LONGPOLL_DEFAULT_S;
    int64_t deadline;
    char err[ERRLEN];

    if (api_parse_body(req, resp, &body) != 0)
        return;
    if (util_check_fields(body, "", fields, err, sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        goto out;
    }
    if (parse_statuses(
            body, dbx_status_parse, set, DBX_N_STATUS, resp,
            "provisioning, initializing, running, suspending, suspended, "
            "resuming, failure, shutdown") != 0 ||
        body_timeout(body, resp, &secs) != 0)
        goto out;
    deadline = util_now_ms() + secs * 1000;
    pthread_mutex_lock(&eng->lock);
    for (;;) {
        if (set[box->status]) {
            http_response_json(resp, 200, engine_box_view_locked(box));
            break;
        }
        if (box->status == DBX_FAILURE || box->status == DBX_SHUTDOWN) {
            http_response_error(
                resp, 422,
                "devbox %s is %s (final) and will never reach the "
                "requested statuses",
                box->id, dbx_status_name(box->status));
            break;
        }
        if (client_wait(eng, deadline) != 0 && !set[box->status]) {
            timeout_408(resp, "the devbox");
            break;
        }
    }
    pthread_mutex_unlock(&eng->lock);
out:
    cJSON_Delete(body);
}

static int query_true(const struct http_request *req, const char *name)
{
    const char *v = http_request_query(req, name);

    return v != NULL && strcmp(v, "true") == 0;
}

static void handle_lifecycle(struct engine *eng, struct devbox *box,
                             const char *action, const struct http_request *req,
                             struct http_response *resp)
{
    char err[ERRLEN] = "";
    bool snapshot_busy = false;
    int rc = 0;

    if (strcmp(action, "suspend") == 0)
        rc = engine_suspend(eng, box, err, sizeof(err));
    else if (strcmp(action, "resume") == 0)
        rc = engine_resume(eng, box, err, sizeof(err));
    else if (strcmp(action, "shutdown") == 0 && !query_true(req, "force") &&
             snapshots_in_progress(eng, box->id) > 0) {
        rc = 409;
        snapshot_busy = true;
        snprintf(err, sizeof(err),
                 "devbox %s has a snapshot in progress; wait until the "
                 "snapshot's status is complete, or shut down with force=true",
                 box->id);
    } else if (strcmp(action, "shutdown") == 0)
        rc = engine_shutdown(eng, box, "api_shutdown", err, sizeof(err));
    if (rc != 0) {
        http_response_error(resp, rc, "%s", err);
        /* The engine's own 409 is a state change still under way (a retry
         * gets through); a snapshot in progress stays (mark_final). */
        if (rc == 409 && !snapshot_busy)
            http_response_set_header(resp, "x-should-retry", "true");
        return;
    }
    pthread_mutex_lock(&eng->lock);
    http_response_json(resp, 200, engine_box_view_locked(box));
    pthread_mutex_unlock(&eng->lock);
}

static void handle_keep_alive(struct engine *eng, struct devbox *box,
                              struct http_response *resp)
{
    pthread_mutex_lock(&eng->lock);
    if (box->status == DBX_SHUTDOWN || box->status == DBX_FAILURE) {
        http_response_error(resp, 400,
                            "devbox %s is %s; keep_alive needs a live devbox",
                            box->id, dbx_status_name(box->status));
    } else {
        engine_touch_locked(box);
        http_response_json(resp, 200, cJSON_CreateObject());
    }
    pthread_mutex_unlock(&eng->lock);
}

/*
 * devboxd's extension to the usage view: the running sandbox's current
 * figures from its cgroups (null when it is not running). CPU is
 * cumulative; two reads give the rate.
 */
static void add_current_usage_locked(struct devbox *box, cJSON *v, int64_t now)
{
    struct sb_usage u;
    cJSON *cur = NULL;

    if (box->sb == NULL || box->busy || box->status != DBX_RUNNING ||
        sandbox_usage(box->sb, &u) != 0) {
        cJSON_AddNullToObject(v, "current");
        return;
    }
    cur = cJSON_AddObjectToObject(v, "current");
    cJSON_AddNumberToObject(cur, "sampled_at_ms", (double)now);
    cJSON_AddNumberToObject(cur, "cpu_seconds", (double)u.cpu_nanos / 1e9);
    cJSON_AddNumberToObject(cur, "memory_bytes", (double)u.memory_bytes);
    cJSON_AddNumberToObject(cur, "memory_peak_bytes",
                            (double)u.memory_peak_bytes);
    cJSON_AddNumberToObject(cur, "processes", (double)u.pids);
    cJSON_AddNumberToObject(cur, "oom_kills", (double)u.oom_kills);
}

static void handle_usage(struct engine *eng, struct devbox *box,
                         struct http_response *resp)
{
    cJSON *v = cJSON_CreateObject();
    int64_t now = util_now_ms();
    int64_t end;
    double active, elapsed;
    struct sb_limits_view {
        double cpus, mem, disk;
    } lim = {1, 2, 4};
    const cJSON *lp = NULL;
    const cJSON *size = NULL;
    static const struct {
        const char *n;
        double c, m, d;
    } rows[] = {{"X_SMALL", 0.5, 1, 4}, {"SMALL", 1, 2, 4},
                {"MEDIUM", 2, 4, 8},    {"LARGE", 2, 8, 16},
                {"X_LARGE", 4, 16, 16}, {"XX_LARGE", 8, 32, 16}};
    size_t i;

    pthread_mutex_lock(&eng->lock);
    lp = cJSON_GetObjectItemCaseSensitive(box->spec, "launch_parameters");
    size = cJSON_GetObjectItemCaseSensitive(lp, "resource_size_request");
    for (i = 0; cJSON_IsString(size) && i < sizeof(rows) / sizeof(rows[0]);
         i++) {
        if (strcmp(rows[i].n, size->valuestring) == 0) {
            lim.cpus = rows[i].c;
            lim.mem = rows[i].m;
            lim.disk = rows[i].d;
        }
    }
    if (cJSON_IsNumber(
            cJSON_GetObjectItemCaseSensitive(lp, "custom_cpu_cores"))) {
        lim.cpus = cJSON_GetObjectItemCaseSensitive(lp, "custom_cpu_cores")
                       ->valuedouble;
        lim.mem = cJSON_GetObjectItemCaseSensitive(lp, "custom_gb_memory")
                      ->valuedouble;
        lim.disk = 16;
    }
    if (cJSON_IsNumber(
            cJSON_GetObjectItemCaseSensitive(lp, "custom_disk_size")))
        lim.disk = cJSON_GetObjectItemCaseSensitive(lp, "custom_disk_size")
                       ->valuedouble;
    end = box->end_time_ms > 0 ? box->end_time_ms : now;
    elapsed = (double)(end - box->create_time_ms) / 1000.0;
    active =
        (double)(box->active_ms +
                 (box->active_since_ms > 0 ? now - box->active_since_ms : 0)) /
        1000.0;
    cJSON_AddStringToObject(v, "id", box->id);
    cJSON_AddStringToObject(v, "status", dbx_status_name(box->status));
    cJSON_AddNumberToObject(v, "start_time_ms", (double)box->create_time_ms);
    if (box->end_time_ms > 0)
        cJSON_AddNumberToObject(v, "end_time_ms", (double)box->end_time_ms);
    else
        cJSON_AddNullToObject(v, "end_time_ms");
    cJSON_AddNumberToObject(v, "total_elapsed_seconds", elapsed);
    cJSON_AddNumberToObject(v, "total_active_seconds", active);
    cJSON_AddNumberToObject(v, "vcpu_seconds", active * lim.cpus);
    cJSON_AddNumberToObject(v, "memory_gb_seconds", active * lim.mem);
    cJSON_AddNumberToObject(v, "disk_gb_seconds", elapsed * lim.disk);
    add_current_usage_locked(box, v, now);
    pthread_mutex_unlock(&eng->lock);
    http_response_json(resp, 200, v);
}

static void handle_logs(struct engine *eng, struct devbox *box,
                        const struct http_request *req,
                        struct http_response *resp)
{
    const char *eid = http_request_query(req, "execution_id");
    const char *shell = http_request_query(req, "shell_name");
    char path[4200];
    char *text = NULL;
    char *line = NULL;
    char *save = NULL;
    cJSON *out = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(out, "logs");

    snprintf(path, sizeof(path), "%s/devboxes/%s/logs.jsonl", eng->state_dir,
             box->id);
    pthread_mutex_lock(&eng->lock);
    text = util_read_file(path, 64 << 20, NULL);
    pthread_mutex_unlock(&eng->lock);
    for (line = text != NULL ? strtok_r(text, "\n", &save) : NULL; line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        cJSON *e = cJSON_Parse(line);
        const cJSON *v = NULL;

        if (e == NULL)
            continue;
        v = cJSON_GetObjectItemCaseSensitive(e, "cmd_id");
        if (eid != NULL && eid[0] &&
            (!cJSON_IsString(v) || strcmp(v->valuestring, eid))) {
            cJSON_Delete(e);
            continue;
        }
        v = cJSON_GetObjectItemCaseSensitive(e, "shell_name");
        if (shell != NULL && shell[0] &&
            (!cJSON_IsString(v) || strcmp(v->valuestring, shell))) {
            cJSON_Delete(e);
            continue;
        }
        cJSON_AddItemToArray(arr, e);
    }
    free(text);
    http_response_json(resp, 200, out);
}

/* --------------------------------------------------------- executions */

static int valid_shell_name(const char *s)
{
    size_t i;

    for (i = 0; s[i] != '\0'; i++) {
        char c = s[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return i > 0 && i <= 64;
}

static int require_running_locked(struct devbox *box,
                                  struct http_response *resp, const char *what)
{
    if (box->status == DBX_RUNNING && box->sb != NULL)
        return 0;
    if (box->status == DBX_SUSPENDED || box->status == DBX_SUSPENDING)
        http_response_error(resp, 400, "devbox %s is %s; resume it before %s",
                            box->id, dbx_status_name(box->status), what);
    else if (box->status == DBX_RUNNING)
        /* Nothing is wrong with the request: the devbox is changing state
         * (409, like any other call that meets a busy devbox). */
        http_response_error(
            resp, 409,
            "devbox %s is being stopped (suspend, shutdown or a limit); "
            "wait for its status and resume it or create a new devbox "
            "before %s",
            box->id, what);
    else if (box->status == DBX_SHUTDOWN || box->status == DBX_FAILURE)
        http_response_error(
            resp, 400,
            "devbox %s is %s and cannot run commands or serve files; "
            "create a new devbox",
            box->id, dbx_status_name(box->status));
    else
        http_response_error(
            resp, 400,
            "devbox %s is %s, not running yet; wait for status running "
            "before %s",
            box->id, dbx_status_name(box->status), what);
    return -1;
}

static void wait_exec_locked(struct engine *eng, struct execution *ex,
                             int64_t deadline_ms)
{
    while (ex->status != EXEC_COMPLETED && client_wait(eng, deadline_ms) == 0)
        ;
}

struct exec_args {
    const char *command;
    const char *command_id;
    const char *shell;
    int attach;
    int64_t optimistic;
    int64_t last_n;
};

/* Validates an execute/execute_async/execute_sync request (body borrowed
 * into a). Returns 0, or -1 with the error response set. */
static int parse_exec_args(const struct http_request *req, const cJSON *body,
                           int async, int sync, struct exec_args *a,
                           struct http_response *resp)
{
    static const char *const f_exec[] = {
        "command", "command_id", "optimistic_timeout", "shell_name", NULL};
    static const char *const f_async[] = {"command", "shell_name",
                                          "attach_stdin", NULL};
    static const char *const f_sync[] = {"command", "shell_name", NULL};
    char err[ERRLEN];

    memset(a, 0, sizeof(*a));
    a->optimistic = OPTIMISTIC_MAX_S;
    if (api_query_int(req, resp, "last_n", 0, 1000000, LAST_N_DEFAULT,
                      &a->last_n) != 0)
        return -1;
    if (util_check_fields(body, "",
                          async  ? f_async
                          : sync ? f_sync
                                 : f_exec,
                          err, sizeof(err)) != 0 ||
        util_opt_string(body, "command", &a->command, err, sizeof(err)) != 0 ||
        util_opt_string(body, "command_id", &a->command_id, err, sizeof(err)) !=
            0 ||
        util_opt_string(body, "shell_name", &a->shell, err, sizeof(err)) != 0 ||
        util_opt_bool(body, "attach_stdin", &a->attach, err, sizeof(err)) !=
            0 ||
        util_opt_int(body, "optimistic_timeout", 0, OPTIMISTIC_MAX_S,
                     &a->optimistic, NULL, err, sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        return -1;
    }
    if (a->command == NULL || a->command[0] == '\0') {
        http_response_error(
            resp, 400, "'command' is required: the shell command line to run");
        return -1;
    }
    /* The client's to fix, not a server error. */
    if (strlen(a->command) > SANDBOX_COMMAND_MAX) {
        http_response_error(resp, 400,
                            "'command' is %zu bytes, longer than %d: write a "
                            "long script to a file in the devbox and run "
                            "that",
                            strlen(a->command), SANDBOX_COMMAND_MAX);
        return -1;
    }
    if (a->shell != NULL && !valid_shell_name(a->shell)) {
        http_response_error(
            resp, 400,
            "shell_name \"%s\" is invalid; use 1-64 characters from "
            "A-Z a-z 0-9 _ - .",
            a->shell);
        return -1;
    }
    if (a->command_id != NULL &&
        (a->command_id[0] == '\0' || strlen(a->command_id) > 128)) {
        http_response_error(
            resp, 400,
            "command_id must be 1-128 characters (a UUIDv7 is typical)");
        return -1;
    }
    return 0;
}

/* Lock held. The execution for a command_id already seen (an idempotent
 * retry, never a second run) or a new one; NULL with the response set. */
static struct execution *exec_find_or_start_locked(struct engine *eng,
                                                   struct devbox *box,
                                                   const struct exec_args *a,
                                                   struct http_response *resp)
{
    struct execution *ex = NULL;
    char err[ERRLEN];
    int status;

    if (a->command_id != NULL)
        ex = engine_exec_by_command_id_locked(box, a->command_id);
    if (ex != NULL) {
        ex->refs++;
        return ex;
    }
    if (require_running_locked(box, resp, "running commands") != 0)
        return NULL;
    /* On a read-only disk a command cannot even keep its output. */
    status = engine_disk_trouble(eng, box, 0, 0, err, sizeof(err));
    if (status != 0) {
        http_response_error(resp, status, "cannot run the command: %s", err);
        return NULL;
    }
    ex = engine_exec_start(eng, box, a->command, a->shell, a->command_id,
                           a->attach, "exec", err, sizeof(err));
    if (ex == NULL)
        http_response_error(resp, 500, "cannot start the command: %s", err);
    return ex;
}

static void handle_execute(struct engine *eng, struct devbox *box,
                           const struct http_request *req,
                           struct http_response *resp, int async, int sync)
{
    struct exec_args a;
    struct execution *ex = NULL;
    cJSON *body = NULL;
    cJSON *v = NULL;

    if (api_parse_body(req, resp, &body) != 0)
        return;
    if (parse_exec_args(req, body, async, sync, &a, resp) != 0)
        goto out;
    pthread_mutex_lock(&eng->lock);
    ex = exec_find_or_start_locked(eng, box, &a, resp);
    if (ex == NULL) {
        pthread_mutex_unlock(&eng->lock);
        goto out;
    }
    if (sync)
        wait_exec_locked(eng, ex, INT64_MAX);
    else if (!async)
        wait_exec_locked(eng, ex, util_now_ms() + a.optimistic * 1000);
    v = engine_exec_view_locked(eng, ex, (int)a.last_n);
    if (sync) {
        /* DevboxExecutionDetailView: no status, id or truncation flags. */
        cJSON_DeleteItemFromObject(v, "status");
        cJSON_DeleteItemFromObject(v, "execution_id");
        cJSON_DeleteItemFromObject(v, "stdout_truncated");
        cJSON_DeleteItemFromObject(v, "stderr_truncated");
    }
    http_response_json(resp, 200, v);
    engine_exec_unref_locked(ex);
    pthread_mutex_unlock(&eng->lock);
out:
    cJSON_Delete(body);
}

static void handle_exec_wait(struct engine *eng, struct execution *ex,
                             const struct http_request *req,
                             struct http_response *resp)
{
    static const char *const fields[] = {"statuses", "timeout_seconds", NULL};
    int set[3];
    cJSON *body = NULL;
    int64_t secs = LONGPOLL_DEFAULT_S;
    int64_t last_n;
    int64_t deadline;
    char err[ERRLEN];

    if (api_query_int(req, resp, "last_n", 0, 1000000, LAST_N_DEFAULT,
                      &last_n) != 0 ||
        api_parse_body(req, resp, &body) != 0)
        return;
    if (util_check_fields(body, "", fields, err, sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        goto out;
    }
    if (parse_statuses(body, exec_status_parse, set, 3, resp,
                       "queued, running, completed") != 0 ||
        body_timeout(body, resp, &secs) != 0)
        goto out;
    deadline = util_now_ms() + secs * 1000;
    pthread_mutex_lock(&eng->lock);
    while (!set[ex->status] && client_wait(eng, deadline) == 0)
        ;
    if (set[ex->status])
        http_response_json(resp, 200,
                           engine_exec_view_locked(eng, ex, (int)last_n));
    else
        timeout_408(resp, "the execution");
    pthread_mutex_unlock(&eng->lock);
out:
    cJSON_Delete(body);
}

static void handle_exec_kill(struct engine *eng, struct execution *ex,
                             const struct http_request *req,
                             struct http_response *resp)
{
    static const char *const fields[] = {"kill_process_group", NULL};
    cJSON *body = NULL;
    char err[ERRLEN];
    int group = 0;

    if (api_parse_body(req, resp, &body) != 0)
        return;
    if (util_check_fields(body, "", fields, err, sizeof(err)) != 0 ||
        util_opt_bool(body, "kill_process_group", &group, err, sizeof(err)) !=
            0) {
        http_response_error(resp, 400, "%s", err);
        goto out;
    }
    /* The sandbox signals the command's whole process group either way. */
    engine_exec_kill(eng, ex);
    pthread_mutex_lock(&eng->lock);
    wait_exec_locked(eng, ex, util_now_ms() + 10000);
    http_response_json(resp, 200,
                       engine_exec_view_locked(eng, ex, LAST_N_DEFAULT));
    pthread_mutex_unlock(&eng->lock);
out:
    cJSON_Delete(body);
}

static void handle_exec_stdin(struct engine *eng, struct execution *ex,
                              const struct http_request *req,
                              struct http_response *resp)
{
    static const char *const fields[] = {"text", "signal", NULL};
    cJSON *body = NULL;
    const char *text = NULL;
    const char *sig = NULL;
    cJSON *out = NULL;
    char err[ERRLEN];
    int rc;

    if (api_parse_body(req, resp, &body) != 0)
        return;
    if (util_check_fields(body, "", fields, err, sizeof(err)) != 0 ||
        util_opt_string(body, "text", &text, err, sizeof(err)) != 0 ||
        util_opt_string(body, "signal", &sig, err, sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        goto out;
    }
    if (sig != NULL && strcmp(sig, "EOF") != 0 &&
        strcmp(sig, "INTERRUPT") != 0) {
        http_response_error(
            resp, 400,
            "signal \"%s\" is not valid; use \"EOF\" or \"INTERRUPT\"", sig);
        goto out;
    }
    if (text == NULL && sig == NULL) {
        http_response_error(resp, 400,
                            "send 'text' and/or 'signal' (EOF or INTERRUPT)");
        goto out;
    }
    if (!ex->attach_stdin) {
        http_response_error(
            resp, 400,
            "execution %s was not started with attach_stdin: true "
            "(execute_async), so it takes no stdin",
            ex->id);
        goto out;
    }
    rc = engine_exec_stdin(eng, ex, text, text != NULL ? strlen(text) : 0,
                           sig != NULL && strcmp(sig, "EOF") == 0,
                           sig != NULL && strcmp(sig, "INTERRUPT") == 0, err,
                           sizeof(err));
    if (rc != 0) {
        http_response_error(resp, rc, "%s", err);
        goto out;
    }
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "devbox_id", ex->box->id);
    cJSON_AddStringToObject(out, "execution_id", ex->id);
    cJSON_AddBoolToObject(out, "success", 1);
    http_response_json(resp, 200, out);
out:
    cJSON_Delete(body);
}

/* SSE output stream: reads the execution's output file from an offset and
 * ends once the execution completed and every byte was sent. */
struct sse_ctx {
    struct engine *eng;
    struct execution *ex;
    int fd;
    int64_t offset;
};

static ssize_t sse_read(void *arg, char *buf, size_t max)
{
    struct sse_ctx *c = arg;
    char raw[16384];
    struct stat st;
    int done;
    size_t want;
    ssize_t n;
    size_t len;
    size_t keep;

    pthread_mutex_lock(&c->eng->lock);
    done = c->ex->status == EXEC_COMPLETED;
    pthread_mutex_unlock(&c->eng->lock);
    if (fstat(c->fd, &st) != 0)
        return -1;
    if (st.st_size <= c->offset) {
        if (done)
            return 0;
        pthread_mutex_lock(&c->eng->lock);
        if (c->ex->status != EXEC_COMPLETED &&
            client_wait(c->eng, util_now_ms() + 100) != 0 && c->eng->stopping) {
            pthread_mutex_unlock(&c->eng->lock);
            return -1;
        }
        pthread_mutex_unlock(&c->eng->lock);
        return HTTP_STREAM_AGAIN;
    }
    /* JSON escaping can grow bytes up to 6x; keep the event within max. */
    want = (max - 64) / 6;
    if (want > sizeof(raw))
        want = sizeof(raw);
    n = pread(c->fd, raw, want, c->offset);
    if (n <= 0)
        return n == 0 ? HTTP_STREAM_AGAIN : -1;
    len = (size_t)n;
    /* Do not split a UTF-8 sequence unless the output ends there for good. */
    keep = len;
    while (keep > 0 && ((unsigned char)raw[keep - 1] & 0xC0) == 0x80)
        keep--;
    if (keep > 0 && ((unsigned char)raw[keep - 1] & 0x80) != 0) {
        unsigned char lead = (unsigned char)raw[keep - 1];
        size_t need = lead >= 0xF0   ? 4
                      : lead >= 0xE0 ? 3
                      : lead >= 0xC0 ? 2
                                     : 1;

        if (len - (keep - 1) >= need)
            keep = len;
        else
            keep--;
    } else {
        keep = len;
    }
    if (keep == 0) {
        if (!(done && c->offset + (int64_t)len >= st.st_size))
            return HTTP_STREAM_AGAIN;
        keep = len;
    }
    n = (ssize_t)api_sse_chunk(buf, max, raw, keep, c->offset);
    if (n <= 0)
        return -1;
    c->offset += (int64_t)keep;
    return n;
}

static void sse_free(void *arg)
{
    struct sse_ctx *c = arg;

    close(c->fd);
    pthread_mutex_lock(&c->eng->lock);
    engine_exec_unref_locked(c->ex);
    pthread_mutex_unlock(&c->eng->lock);
    free(c);
}

static void handle_exec_stream(struct engine *eng, struct execution *ex,
                               const char *which,
                               const struct http_request *req,
                               struct http_response *resp)
{
    struct sse_ctx *c = NULL;
    char path[4200];
    int64_t offset;

    if (api_query_int(req, resp, "offset", 0, INT64_MAX, 0, &offset) != 0)
        return;
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        http_response_error(resp, 500, "out of memory");
        return;
    }
    engine_exec_output_path(eng, ex, which, path, sizeof(path));
    c->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (c->fd < 0) {
        free(c);
        http_response_error(resp, 404,
                            "the output of execution %s is no longer stored",
                            ex->id);
        return;
    }
    c->eng = eng;
    c->ex = ex;
    c->offset = offset;
    pthread_mutex_lock(&eng->lock);
    ex->refs++;
    pthread_mutex_unlock(&eng->lock);
    resp->status = 200;
    http_response_set_header(resp, "content-type", "text/event-stream");
    http_response_set_header(resp, "cache-control", "no-cache");
    resp->stream = sse_read;
    resp->stream_ctx = c;
    resp->stream_free = sse_free;
}

/* ---------------------------------------------------- lease and evictions */

#define RENEW_MIN_S 60
/* RENEW_MAX_S and EVICTION_NOTICE_DEFAULT_S: api.h. */

/*
 * POST /v1/devboxes/{id}/renew {keep_alive_time_seconds}: devboxd's
 * extension (Runloop's API cannot extend a lifetime): the devbox's
 * lifetime now ends that many seconds from now. Answers the DevboxView,
 * whose lifetime_end_ms is the new end.
 */
static void handle_renew(struct engine *eng, struct devbox *box,
                         const struct http_request *req,
                         struct http_response *resp)
{
    static const char *const fields[] = {"keep_alive_time_seconds", NULL};
    cJSON *body = NULL;
    char err[ERRLEN] = "";
    int64_t secs = 0;
    int present = 0;
    int rc;

    if (api_parse_body(req, resp, &body) != 0)
        return;
    if (util_check_fields(body, "", fields, err, sizeof(err)) != 0 ||
        util_opt_int(body, "keep_alive_time_seconds", RENEW_MIN_S, RENEW_MAX_S,
                     &secs, &present, err, sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        goto out;
    }
    if (!present) {
        http_response_error(resp, 400,
                            "keep_alive_time_seconds is required: the new "
                            "lifetime in seconds from now (%d-%d)",
                            RENEW_MIN_S, RENEW_MAX_S);
        goto out;
    }
    pthread_mutex_lock(&eng->lock);
    rc = engine_renew_locked(eng, box, secs, err, sizeof(err));
    if (rc == 507)
        api_storage_error(resp,
                          util_write_error() != 0 ? util_write_error() : EIO);
    else if (rc != 0)
        http_response_error(resp, rc, "%s", err);
    else
        http_response_json(resp, 200, engine_box_view_locked(box));
    pthread_mutex_unlock(&eng->lock);
out:
    cJSON_Delete(body);
}

/*
 * GET /v1/devboxes/evictions/watch: Runloop's advisory eviction feed as
 * SSE, one DevboxEvictionEventView {devbox_id, eviction_deadline_ms} per
 * event. On the local engine a devbox is evicted when its lifetime
 * (keep_alive_time_seconds, or a renewal) ends: it is pending once that
 * end is within the notice (RLMCP_EVICTION_NOTICE_S, default 300 s). On
 * connect every pending eviction is sent, then each new one; a renewal
 * that moves the end makes it a new eviction once it is pending again.
 */
struct evict_ctx {
    struct engine *eng;
    int64_t notice_ms;
    cJSON *sent; /* devbox id -> the deadline announced on this stream */
};

/* Lock held: the next eviction not yet announced, as an SSE event in buf;
 * its length, or 0 when there is none. */
static size_t next_eviction_locked(struct evict_ctx *c, char *buf, size_t max)
{
    int64_t now = util_now_ms();
    struct devbox *b;
    int n;

    for (b = c->eng->boxes; b != NULL; b = b->next) {
        int64_t end = engine_lifetime_end_locked(b);
        const cJSON *had = cJSON_GetObjectItemCaseSensitive(c->sent, b->id);

        if (end <= 0 || end - now > c->notice_ms)
            continue;
        if (cJSON_IsNumber(had) && (int64_t)had->valuedouble == end)
            continue;
        n = snprintf(buf, max,
                     "data: {\"devbox_id\":\"%s\",\"eviction_deadline_ms\":"
                     "%lld}\n\n",
                     b->id, (long long)end);
        if (n < 0 || (size_t)n >= max)
            return 0;
        cJSON_DeleteItemFromObjectCaseSensitive(c->sent, b->id);
        cJSON_AddNumberToObject(c->sent, b->id, (double)end);
        return (size_t)n;
    }
    return 0;
}

static ssize_t evict_read(void *arg, char *buf, size_t max)
{
    struct evict_ctx *c = arg;
    size_t n;
    ssize_t rc = HTTP_STREAM_AGAIN;

    pthread_mutex_lock(&c->eng->lock);
    n = next_eviction_locked(c, buf, max);
    if (n > 0)
        rc = (ssize_t)n;
    else if (c->eng->stopping)
        rc = 0; /* a clean end: the SDK's monitor reconnects */
    else
        (void)client_wait(c->eng, util_now_ms() + 500);
    pthread_mutex_unlock(&c->eng->lock);
    return rc;
}

static void evict_free(void *arg)
{
    struct evict_ctx *c = arg;

    cJSON_Delete(c->sent);
    free(c);
}

static void evictions_watch(struct engine *eng, const struct api_call *call)
{
    struct evict_ctx *c = calloc(1, sizeof(*c));

    if (c == NULL || (c->sent = cJSON_CreateObject()) == NULL) {
        free(c);
        http_response_error(call->resp, 500, "out of memory");
        return;
    }
    c->eng = eng;
    c->notice_ms = (int64_t)eng->settings.eviction_notice_s * 1000;
    call->resp->status = 200;
    http_response_set_header(call->resp, "content-type", "text/event-stream");
    http_response_set_header(call->resp, "cache-control", "no-cache");
    call->resp->stream = evict_read;
    call->resp->stream_ctx = c;
    call->resp->stream_free = evict_free;
}

static void exec_view(struct engine *eng, const struct api_call *c)
{
    int64_t last_n;

    if (api_query_int(c->req, c->resp, "last_n", 0, 1000000, LAST_N_DEFAULT,
                      &last_n) != 0)
        return;
    pthread_mutex_lock(&eng->lock);
    http_response_json(c->resp, 200,
                       engine_exec_view_locked(eng, c->ex, (int)last_n));
    pthread_mutex_unlock(&eng->lock);
}

static void exec_stdout(struct engine *eng, const struct api_call *c)
{
    handle_exec_stream(eng, c->ex, "stdout", c->req, c->resp);
}

static void exec_stderr(struct engine *eng, const struct api_call *c)
{
    handle_exec_stream(eng, c->ex, "stderr", c->req, c->resp);
}

static void exec_wait(struct engine *eng, const struct api_call *c)
{
    handle_exec_wait(eng, c->ex, c->req, c->resp);
}

static void exec_kill(struct engine *eng, const struct api_call *c)
{
    handle_exec_kill(eng, c->ex, c->req, c->resp);
}

static void exec_stdin(struct engine *eng, const struct api_call *c)
{
    handle_exec_stdin(eng, c->ex, c->req, c->resp);
}

/* ---------------------------------------------------------------- router */

static void route_files(struct engine *eng, struct devbox *box,
                        const char *action, const struct http_request *req,
                        struct http_response *resp)
{
    cJSON *body = NULL;

    char why[1024];
    int reading = strcmp(action, "read_file_contents") == 0 ||
                  strcmp(action, "download_file") == 0;
    int status;

    pthread_mutex_lock(&eng->lock);
    /* A failed devbox's kept disk serves its files, read-only. */
    if (!(reading && box->status == DBX_FAILURE && box->disk_kept &&
          !box->busy) &&
        require_running_locked(box, resp, "using the files API") != 0) {
        pthread_mutex_unlock(&eng->lock);
        return;
    }
    /* A read-only disk refuses writes at once, saying why. */
    status =
        reading ? 0 : engine_disk_trouble(eng, box, 0, 0, why, sizeof(why));
    if (status != 0) {
        pthread_mutex_unlock(&eng->lock);
        http_response_error(resp, status, "%s", why);
        return;
    }
    box->io_refs++;
    engine_touch_locked(box);
    pthread_mutex_unlock(&eng->lock);
    if (strcmp(action, "upload_file") == 0) {
        files_upload(eng, box, req, resp);
    } else if (api_parse_body(req, resp, &body) == 0) {
        if (strcmp(action, "read_file_contents") == 0)
            files_read_contents(eng, box, body, resp);
        else if (strcmp(action, "write_file_contents") == 0)
            files_write_contents(eng, box, body, resp);
        else
            files_download(eng, box, body, resp);
    }
    cJSON_Delete(body);
    pthread_mutex_lock(&eng->lock);
    box->io_refs--;
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
}

/*
 * When the local account began: the state directory's API key file was
 * written (its modification time); with --api-key-file there is none, so
 * the state directory's birth, else its status change. Always a time: the
 * SDK's AccountView has created_at as a string.
 */
static time_t account_created(const struct engine *eng)
{
    char path[4200];
    struct stat st;
    struct statx stx;

    snprintf(path, sizeof(path), "%s/api-key", eng->state_dir);
    if (stat(path, &st) == 0)
        return st.st_mtime;
    if (statx(AT_FDCWD, eng->state_dir, 0, STATX_BTIME, &stx) == 0 &&
        (stx.stx_mask & STATX_BTIME) != 0)
        return (time_t)stx.stx_btime.tv_sec;
    if (stat(eng->state_dir, &st) == 0)
        return st.st_ctime;
    return time(NULL);
}

/* The local account, billed by nobody. */
static void handle_account(struct engine *eng, const struct api_call *c)
{
    cJSON *v = cJSON_CreateObject();
    cJSON *billing = NULL;
    char when[32] = "1970-01-01T00:00:00Z";
    time_t created = account_created(eng);
    struct tm tm;

    if (gmtime_r(&created, &tm) != NULL)
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_AddStringToObject(v, "id", "local");
    cJSON_AddStringToObject(v, "name", "devboxd local engine");
    cJSON_AddStringToObject(v, "created_at", when);
    cJSON_AddStringToObject(v, "tier", "ACCOUNT_TIER_PRO");
    cJSON_AddStringToObject(v, "account_status", "ACCOUNT_STATUS_ENABLED");
    billing = cJSON_AddObjectToObject(v, "billing");
    cJSON_AddStringToObject(billing, "account_billing_type", "UNRECOGNIZED");
    cJSON_AddNullToObject(billing, "stripe");
    cJSON_AddNullToObject(billing, "aws");
    http_response_json(c->resp, 200, v);
}

/* ---------------------------------------------------------------- routes */

static void box_list(struct engine *eng, const struct api_call *c)
{
    handle_list(eng, c->req, c->resp);
}

static void box_create(struct engine *eng, const struct api_call *c)
{
    handle_create(eng, c->req, c->resp, 0);
}

static void box_create_running(struct engine *eng, const struct api_call *c)
{
    handle_create(eng, c->req, c->resp, 1);
}

static void box_view(struct engine *eng, const struct api_call *c)
{
    pthread_mutex_lock(&eng->lock);
    http_response_json(c->resp, 200, engine_box_view_locked(c->box));
    pthread_mutex_unlock(&eng->lock);
}

static void box_update(struct engine *eng, const struct api_call *c)
{
    handle_update(eng, c->box, c->req, c->resp);
}

static void box_usage(struct engine *eng, const struct api_call *c)
{
    handle_usage(eng, c->box, c->resp);
}

static void box_logs(struct engine *eng, const struct api_call *c)
{
    handle_logs(eng, c->box, c->req, c->resp);
}

/* suspend, resume and shutdown: the action is the path's last segment. */
static void box_lifecycle(struct engine *eng, const struct api_call *c)
{
    handle_lifecycle(eng, c->box, c->seg[c->n - 1], c->req, c->resp);
}

static void box_keep_alive(struct engine *eng, const struct api_call *c)
{
    handle_keep_alive(eng, c->box, c->resp);
}

static void box_renew(struct engine *eng, const struct api_call *c)
{
    handle_renew(eng, c->box, c->req, c->resp);
}

static void box_wait(struct engine *eng, const struct api_call *c)
{
    handle_box_wait(eng, c->box, c->req, c->resp);
}

static void box_execute(struct engine *eng, const struct api_call *c)
{
    handle_execute(eng, c->box, c->req, c->resp, 0, 0);
}

static void box_execute_async(struct engine *eng, const struct api_call *c)
{
    handle_execute(eng, c->box, c->req, c->resp, 1, 0);
}

static void box_execute_sync(struct engine *eng, const struct api_call *c)
{
    handle_execute(eng, c->box, c->req, c->resp, 0, 1);
}

/* The files API: the action is the path's last segment. */
static void box_files(struct engine *eng, const struct api_call *c)
{
    route_files(eng, c->box, c->seg[c->n - 1], c->req, c->resp);
}

/*
 * Every route devboxd serves. A pattern's segments are literals, {devbox}
 * (a devbox id: 404 when unknown), {execution} (an execution of that
 * devbox), {id} (any other id, checked by its handler), or a final "*" for
 * the rest of the path (method "*": any). The first match wins, so literal
 * segments come before a parameter in the same place. The last column says
 * whether the handler reads the request body (api.h).
 */
static const struct api_route routes[] = {
    {"GET", "/v1/accounts/me", handle_account, API_NO_BODY},
    {"GET", "/v1/devboxes", box_list, API_NO_BODY},
    {"POST", "/v1/devboxes", box_create, API_BODY},
    {"POST", "/v1/devboxes/create_and_await_running", box_create_running,
     API_BODY},
    {"GET", "/v1/devboxes/evictions/watch", evictions_watch, API_NO_BODY},
    {"GET", "/v1/devboxes/disk_snapshots", api_snapshots_list, API_NO_BODY},
    {"GET", "/v1/devboxes/disk_snapshots/list_public",
     api_snapshots_list_public, API_NO_BODY},
    {"POST", "/v1/devboxes/disk_snapshots/{id}", api_snapshots_update,
     API_BODY},
    {"POST", "/v1/devboxes/disk_snapshots/{id}/delete", api_snapshots_delete,
     API_NO_BODY},
    {"GET", "/v1/devboxes/disk_snapshots/{id}/status", api_snapshots_status,
     API_NO_BODY},
    {"GET", "/v1/devboxes/{devbox}", box_view, API_NO_BODY},
    {"POST", "/v1/devboxes/{devbox}", box_update, API_BODY},
    {"GET", "/v1/devboxes/{devbox}/usage", box_usage, API_NO_BODY},
    {"GET", "/v1/devboxes/{devbox}/logs", box_logs, API_NO_BODY},
    {"POST", "/v1/devboxes/{devbox}/suspend", box_lifecycle, API_NO_BODY},
    {"POST", "/v1/devboxes/{devbox}/resume", box_lifecycle, API_NO_BODY},
    {"POST", "/v1/devboxes/{devbox}/shutdown", box_lifecycle, API_NO_BODY},
    {"POST", "/v1/devboxes/{devbox}/keep_alive", box_keep_alive, API_NO_BODY},
    {"POST", "/v1/devboxes/{devbox}/renew", box_renew, API_BODY},
    {"POST", "/v1/devboxes/{devbox}/wait_for_status", box_wait, API_BODY},
    {"POST", "/v1/devboxes/{devbox}/execute", box_execute, API_BODY},
    {"POST", "/v1/devboxes/{devbox}/execute_async", box_execute_async,
     API_BODY},
    {"POST", "/v1/devboxes/{devbox}/execute_sync", box_execute_sync, API_BODY},
    {"GET", "/v1/devboxes/{devbox}/executions/{execution}", exec_view,
     API_NO_BODY},
    {"GET",
     "/v1/devboxes/{devbox}/executions/{execution}/stream_stdout_updates",
     exec_stdout, API_NO_BODY},
    {"GET",
     "/v1/devboxes/{devbox}/executions/{execution}/stream_stderr_updates",
     exec_stderr, API_NO_BODY},
    {"POST", "/v1/devboxes/{devbox}/executions/{execution}/wait_for_status",
     exec_wait, API_BODY},
    {"POST", "/v1/devboxes/{devbox}/executions/{execution}/kill", exec_kill,
     API_BODY},
    {"POST", "/v1/devboxes/{devbox}/executions/{execution}/send_std_in",
     exec_stdin, API_BODY},
    {"POST", "/v1/devboxes/{devbox}/read_file_contents", box_files, API_BODY},
    {"POST", "/v1/devboxes/{devbox}/write_file_contents", box_files, API_BODY},
    {"POST", "/v1/devboxes/{devbox}/upload_file", box_files, API_BODY},
    {"POST", "/v1/devboxes/{devbox}/download_file", box_files, API_BODY},
    {"POST", "/v1/devboxes/{devbox}/enable_tunnel", api_tunnel_enable,
     API_BODY},
    {"POST", "/v1/devboxes/{devbox}/remove_tunnel", api_tunnel_remove,
     API_NO_BODY},
    {"POST", "/v1/devboxes/{devbox}/create_pty_tunnel", api_tunnel_pty,
     API_NO_BODY},
    {"POST", "/v1/devboxes/{devbox}/create_ssh_key", api_ssh_key, API_NO_BODY},
    {"POST", "/v1/devboxes/{devbox}/snapshot_disk", api_snapshots_create,
     API_BODY},
    {"POST", "/v1/devboxes/{devbox}/snapshot_disk_async",
     api_snapshots_create_async, API_BODY},
    {"GET", "/v1/blueprints", api_blueprints_list, API_NO_BODY},
    {"POST", "/v1/blueprints", api_blueprints_create, API_BODY},
    {"GET", "/v1/blueprints/list_public", api_blueprints_list_public,
     API_NO_BODY},
    {"GET", "/v1/blueprints/{id}", api_blueprints_get, API_NO_BODY},
    {"POST", "/v1/blueprints/{id}/delete", api_blueprints_delete, API_NO_BODY},
    {"POST", "/v1/blueprints/{id}/tag", api_blueprints_tag, API_BODY},
    {"POST", "/v1/blueprints/{id}/wait_for_status", api_blueprints_wait,
     API_BODY},
    {"GET", "/v1/blueprints/{id}/logs", api_blueprints_logs, API_NO_BODY},
    {"GET", "/v1/secrets", api_secrets_list, API_NO_BODY},
    {"POST", "/v1/secrets", api_secrets_create, API_BODY},
    {"GET", "/v1/secrets/{id}", api_secrets_get, API_NO_BODY},
    {"POST", "/v1/secrets/{id}", api_secrets_update, API_BODY},
    {"POST", "/v1/secrets/{id}/delete", api_secrets_delete, API_NO_BODY},
    {"GET", "/v1/objects", api_objects_list, API_NO_BODY},
    {"POST", "/v1/objects", api_objects_create, API_BODY},
    {"GET", "/v1/objects/list_public", api_objects_list_public, API_NO_BODY},
    {"GET", "/v1/objects/{id}", api_objects_get, API_NO_BODY},
    {"POST", "/v1/objects/{id}/complete", api_objects_complete, API_NO_BODY},
    {"POST", "/v1/objects/{id}/delete", api_objects_delete, API_NO_BODY},
    {"GET", "/v1/objects/{id}/download", api_objects_download, API_NO_BODY},
    {"*", "/v1/objects/{id}/upload", api_objects_upload, API_BODY},
    {"*", "/v1/objects/{id}/content", api_objects_content, API_BODY},
    {"*", "/v1/objects/*", api_objects_other, API_BODY},
    {"GET", "/v1/mcp-configs", api_mcp_configs_list, API_NO_BODY},
    {"POST", "/v1/mcp-configs", api_mcp_configs_write, API_BODY},
    {"GET", "/v1/mcp-configs/{id}", api_mcp_configs_get, API_NO_BODY},
    {"POST", "/v1/mcp-configs/{id}", api_mcp_configs_write, API_BODY},
    {"POST", "/v1/mcp-configs/{id}/delete", api_mcp_configs_delete,
     API_NO_BODY},
};

/* 1 when the path's segments fit pattern; records where its {devbox},
 * {execution} and {id} stand (-1: absent). */
static int route_matches(const char *pattern, char **seg, size_t n, int *box_at,
                         int *ex_at, int *id_at)
{
    const char *p = pattern + 1; /* past the leading '/' */
    size_t i = 0;

    *box_at = *ex_at = *id_at = -1;
    while (*p != '\0') {
        const char *end = strchrnul(p, '/');
        size_t len = (size_t)(end - p);

        if (len == 1 && *p == '*')
            return 1;
        if (i == n)
            return 0;
        if (strncmp(p, "{devbox}", len) == 0 && len == 8)
            *box_at = (int)i;
        else if (strncmp(p, "{execution}", len) == 0 && len == 11)
            *ex_at = (int)i;
        else if (strncmp(p, "{id}", len) == 0 && len == 4)
            *id_at = (int)i;
        else if (strlen(seg[i]) != len || strncmp(seg[i], p, len) != 0)
            return 0;
        i++;
        p = *end == '/' ? end + 1 : end;
    }
    return i == n;
}

static const struct api_route *route_find(const char *method, char **seg,
                                          size_t n, int *box_at, int *ex_at,
                                          int *id_at)
{
    size_t i;

    for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const struct api_route *r = &routes[i];

        if ((strcmp(r->method, "*") == 0 || strcmp(r->method, method) == 0) &&
            route_matches(r->pattern, seg, n, box_at, ex_at, id_at))
            return r;
    }
    return NULL;
}

/* A path naming a devbox devboxd does not have: 404, except for the
 * Runloop paths under /v1/devboxes this engine does not serve. */
static void devbox_missing(const struct http_request *req,
                           struct http_response *resp, const char *id)
{
    if (strcmp(id, "evictions") == 0 || strcmp(id, "metadata") == 0 ||
        strcmp(id, "disk_snapshots") == 0)
        api_unimplemented(req, resp);
    else
        http_response_error(
            resp, 404,
            "devbox %s not found; list the devboxes to see which exist", id);
}

static int route_is_devbox(struct engine *eng, const char *id)
{
    int found;

    pthread_mutex_lock(&eng->lock);
    found = engine_find_locked(eng, id) != NULL;
    pthread_mutex_unlock(&eng->lock);
    return found;
}

/* Fills c's devbox and execution; 0, or -1 after answering 404. */
static int route_bind(struct engine *eng, struct api_call *c, int box_at,
                      int ex_at, int id_at)
{
    if (id_at >= 0)
        c->id = c->seg[id_at];
    if (box_at < 0)
        return 0;
    pthread_mutex_lock(&eng->lock);
    c->box = engine_find_locked(eng, c->seg[box_at]);
    if (c->box != NULL)
        c->box->refs++; /* route_request gives it back */
    if (c->box != NULL && ex_at >= 0)
        c->ex = engine_exec_find_locked(c->box, c->seg[ex_at]);
    pthread_mutex_unlock(&eng->lock);
    if (c->box == NULL) {
        devbox_missing(c->req, c->resp, c->seg[box_at]);
        return -1;
    }
    if (ex_at >= 0 && c->ex == NULL) {
        http_response_error(c->resp, 404, "execution %s not found on devbox %s",
                            c->seg[ex_at], c->box->id);
        return -1;
    }
    return 0;
}

static void route_request(struct engine *eng, const struct http_request *req,
                          struct http_response *resp)
{
    struct api_call c = {.req = req, .resp = resp};
    const struct api_route *r = NULL;
    char *path = NULL;
    char *seg[8];
    int box_at, ex_at, id_at;

    path = strdup(req->path);
    if (path == NULL) {
        http_response_error(resp, 500, "out of memory");
        return;
    }
    c.seg = seg;
    c.n = split_path(path, seg, 7);
    r = c.n >= 2 && c.n <= 7
            ? route_find(req->method, seg, c.n, &box_at, &ex_at, &id_at)
            : NULL;
    if (r != NULL) {
        if (route_bind(eng, &c, box_at, ex_at, id_at) == 0) {
            /* Once here for every route that reads no body; the others
             * answer theirs with their own limit (api_parse_body). */
            if (req->body_too_large && r->body == API_NO_BODY)
                http_response_error(resp, 413, "request body too large");
            else
                r->handler(eng, &c);
        }
        if (c.box != NULL) {
            pthread_mutex_lock(&eng->lock);
            engine_box_unref_locked(eng, c.box);
            pthread_mutex_unlock(&eng->lock);
        }
    } else if (c.n >= 3 && strcmp(seg[0], "v1") == 0 &&
               strcmp(seg[1], "devboxes") == 0 &&
               !route_is_devbox(eng, seg[2])) {
        devbox_missing(req, resp, seg[2]);
    } else {
        api_unimplemented(req, resp);
    }
    free(path);
}

void api_reply(struct http_response *resp, int status, cJSON *view,
               const char *err)
{
    if (status != 0) {
        cJSON_Delete(view);
        http_response_error(resp, status, "%s", err);
    } else {
        http_response_json(resp, 200,
                           view != NULL ? view : cJSON_CreateObject());
    }
}

void api_with_body(struct engine *eng, const struct api_call *call,
                   api_body_fn fn)
{
    cJSON *body = NULL;
    cJSON *view = NULL;
    char err[ERRLEN] = "";
    int status;

    if (api_parse_body(call->req, call->resp, &body) != 0)
        return;
    status = fn(eng, call, body, &view, err, sizeof(err));
    api_reply(call->resp, status, view, err);
    cJSON_Delete(body);
}

void api_with_id(struct engine *eng, const struct api_call *call, api_id_fn fn)
{
    cJSON *view = NULL;
    char err[ERRLEN] = "";
    int status = fn(eng, call->id, &view, err, sizeof(err));

    api_reply(call->resp, status, view, err);
}

cJSON *api_view_copy(const void *item)
{
    return cJSON_Duplicate(item, 1);
}

void api_unimplemented(const struct http_request *req,
                       struct http_response *resp)
{
    /* SDK users have no docs/ tree: say what serves the call instead. */
    http_response_error(
        resp, 501,
        "%s %s is not implemented by devboxd, the local engine; "
        "the Runloop cloud API serves it: point the client at "
        "https://api.runloop.ai with a Runloop API key (SDKs: "
        "baseURL and RUNLOOP_API_KEY; runloop-mcp: set "
        "RUNLOOP_API_KEY, or runloop.backend: cloud in its "
        "deployment)",
        req->method, req->path);
    /* Asking again does not help: clients must not retry it as a 5xx. */
    http_response_set_header(resp, "x-should-retry", "false");
}

/* x-request-deadline (runloop-mcp sends it on each attempt): the Unix
 * time in ms when the client stops waiting. Work nobody waits for is not
 * started: a request that sat in a frozen engine's queue must not run its
 * command after the caller was told it timed out. */
static int request_expired(const struct http_request *req,
                           struct http_response *resp)
{
    const char *v = http_request_header(req, "x-request-deadline");
    char *end = NULL;
    long long at;
    int64_t now;

    if (v == NULL)
        return 0;
    errno = 0;
    at = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || at <= 0) {
        http_response_error(resp, 400,
                            "x-request-deadline: expected the Unix time in "
                            "milliseconds when the client stops waiting "
                            "(e.g. 1765000000000), got \"%.40s\"",
                            v);
        return -1;
    }
    /* At the deadline's millisecond itself the client may already be gone
     * (the header's time is truncated, and a thawed engine reads a queued
     * request in the very millisecond its client gave up): not started. */
    now = util_now_ms();
    if (now < at)
        return 0;
    http_response_error(resp, 408,
                        "the request's deadline (x-request-deadline) passed "
                        "%lld ms before devboxd read it; nothing was done",
                        (long long)(now - at));
    /* The same request is as late again: a new attempt brings a new one. */
    http_response_set_header(resp, "x-should-retry", "false");
    return -1;
}

/* The statuses a repeat of the same request may turn into another answer
 * (a timeout, a rate limit, a passing fault): the Runloop SDKs retry them
 * (and 409, which here is a lasting conflict unless marked otherwise). */
static int status_transient(int status)
{
    return status == 408 || status == 429 || status == 500 || status == 502 ||
           status == 503 || status == 504;
}

static int has_header(const struct http_response *resp, const char *name)
{
    size_t i;

    for (i = 0; i < resp->n_headers; i++) {
        if (strcasecmp(resp->headers[i].name, name) == 0)
            return 1;
    }
    return 0;
}

/*
 * Every error a retry cannot change says so (x-should-retry: false): the
 * Runloop SDKs and the host's client otherwise repeat a 409 or a 501 three
 * times with backoff before the caller learns of it. A handler that knows
 * better (a 409 "busy, retry") sets the header itself.
 */
static void mark_final(struct http_response *resp)
{
    if (resp->status < 400 || status_transient(resp->status) ||
        has_header(resp, "x-should-retry"))
        return;
    http_response_set_header(resp, "x-should-retry", "false");
}

void api_handle(void *ud, const struct http_request *req,
                struct http_response *resp)
{
    struct engine *eng = ud;
    struct idempotency_claim *claim = NULL;

    if (api_authorized(eng, req) != 0) {
        /* Never echo or log the key that was sent. */
        http_response_error(
            resp, 401,
            "missing or invalid API key: send 'Authorization: Bearer "
            "<key>' with the key from the state directory's api-key "
            "file (or the "
            "--api-key-file given to devboxd)");
        mark_final(resp);
        return; /* names nothing of this engine, not even its tunnels */
    }
    /* PUT only to an object's signed upload URL. */
    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "POST") != 0 &&
        !(strcmp(req->method, "PUT") == 0 &&
          objects_signed_request(eng, req))) {
        api_unimplemented(req, resp);
        http_response_set_header(resp, "allow", "GET, POST");
        goto out;
    }
    if (request_expired(req, resp) != 0)
        goto out;
    /* A retry of a request already answered gets that answer again. */
    if (idempotency_begin(eng->idem, req, &claim, resp) != 0)
        goto out;
    util_write_error_reset();
    route_request(eng, req, resp);
    /* A change is acknowledged only once saved: a record this request
     * failed to write turns its answer into the storage error. */
    if (util_write_error() != 0 &&
        (resp->status < 300 || resp->status >= 500)) {
        http_response_clear(resp);
        api_storage_error(resp, util_write_error());
    }
    mark_final(resp); /* before idempotency_finish keeps a copy to replay */
    idempotency_finish(eng->idem, claim, resp);
out:
    mark_final(resp);
    /* Where this engine's tunnels live (clients on TCP have no pid file). */
    if (tunnel_url_template()[0] != '\0')
        http_response_set_header(resp, TUNNEL_TEMPLATE_HEADER,
                                 tunnel_url_template());
}
