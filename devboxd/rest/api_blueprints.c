/* The blueprint routes: /v1/blueprints[/...] (the builds themselves are
 * engine/blueprint_builds.c). */
#define _GNU_SOURCE
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blueprint_builds.h"
#include "layer_records.h"
#include "util.h"

#define ERRLEN 512

static int create(struct engine *eng, const struct api_call *call,
                  const cJSON *body, cJSON **view, char *err, size_t errlen)
{
    return blueprints_create(eng, body, view, err, errlen);
}

void api_blueprints_create(struct engine *eng, const struct api_call *call)
{
    api_with_body(eng, call, create);
}

/* POST /v1/blueprints/{id}/tag {tag}: devboxd's extension. */
static int tag(struct engine *eng, const struct api_call *call,
               const cJSON *body, cJSON **view, char *err, size_t errlen)
{
    static const char *const fields[] = {"tag", NULL};
    const char *t = NULL;

    if (util_check_fields(body, "", fields, err, errlen) != 0 ||
        util_opt_string(body, "tag", &t, err, errlen) != 0)
        return 400;
    if (t == NULL) {
        snprintf(err, errlen,
                 "tag is required: the name this build gets "
                 "among the builds of its name (e.g. stable)");
        return 400;
    }
    return blueprints_tag(eng, call->id, t, view, err, errlen);
}

void api_blueprints_tag(struct engine *eng, const struct api_call *call)
{
    api_with_body(eng, call, tag);
}

/* POST /v1/blueprints/{id}/wait_for_status {statuses, timeout_seconds}:
 * devboxd's extension, shaped as the API's devbox wait_for_status.  The
 * record is read every WAIT_STEP_MS: a waiter learns of the build's end
 * within that of the engine. */
#define WAIT_STEP_MS 10
#define WAIT_DEFAULT_S 25
#define WAIT_MAX_S 30

static int wait_status(struct engine *eng, const struct api_call *call,
                       const cJSON *body, cJSON **view, char *err,
                       size_t errlen)
{
    static const char *const fields[] = {"statuses", "timeout_seconds", NULL};
    static const char *const known[] = {
        "queued", "provisioning",   "building", "awaiting_upload",
        "failed", "build_complete", NULL};
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(body, "statuses");
    const cJSON *it = NULL;
    int64_t secs = WAIT_DEFAULT_S;
    int64_t deadline;
    size_t i;
    int status;

    if (util_check_fields(body, "", fields, err, errlen) != 0 ||
        util_opt_int(body, "timeout_seconds", 1, WAIT_MAX_S, &secs, NULL, err,
                     errlen) != 0)
        return 400;
    if (!cJSON_IsArray(want) || cJSON_GetArraySize(want) == 0) {
        snprintf(err, errlen,
                 "statuses is required: a non-empty list of blueprint "
                 "statuses to wait for (e.g. [\"build_complete\", "
                 "\"failed\"])");
        return 400;
    }
    cJSON_ArrayForEach(it, want)
    {
        for (i = 0; known[i] != NULL; i++) {
            if (cJSON_IsString(it) && strcmp(it->valuestring, known[i]) == 0)
                break;
        }
        if (known[i] == NULL) {
            snprintf(err, errlen,
                     "statuses: each is one of queued, provisioning, "
                     "building, awaiting_upload, failed, build_complete");
            return 400;
        }
    }
    deadline = util_now_ms() + secs * 1000;
    for (;;) {
        const char *now = NULL;
        struct timespec ts = {0, WAIT_STEP_MS * 1000000L};

        status = blueprints_get(eng, call->id, view, err, errlen);
        if (status != 0)
            return status;
        now = util_json_str(*view, "status");
        cJSON_ArrayForEach(it, want)
        {
            if (now != NULL && strcmp(it->valuestring, now) == 0)
                return 0;
        }
        if (now == NULL || strcmp(now, "failed") == 0 ||
            strcmp(now, "build_complete") == 0) {
            snprintf(err, errlen,
                     "blueprint %s is %s (final) and will never reach the "
                     "requested statuses",
                     call->id, now != NULL ? now : "without a status");
            status = 422;
            break;
        }
        if (util_now_ms() >= deadline) {
            snprintf(err, errlen,
                     "the blueprint did not reach the requested status in "
                     "time; repeat the request to keep waiting");
            status = 408;
            break;
        }
        cJSON_Delete(*view);
        *view = NULL;
        nanosleep(&ts, NULL);
    }
    cJSON_Delete(*view);
    *view = NULL;
    return status;
}

void api_blueprints_wait(struct engine *eng, const struct api_call *call)
{
    api_with_body(eng, call, wait_status);
    if (call->resp->status == 408)
        http_response_set_header(call->resp, "x-should-retry", "true");
}

static cJSON *view_item(const void *rec)
{
    return blueprints_view(rec);
}

/* 0 when the status filter names a blueprint status (or is absent), else
 * -1 after answering 400. */
static int check_status(const char *want, struct http_response *resp)
{
    static const char *const statuses[] = {
        "queued", "provisioning",   "building", "awaiting_upload",
        "failed", "build_complete", NULL};
    size_t i;

    if (want == NULL || want[0] == '\0')
        return 0;
    for (i = 0; statuses[i] != NULL; i++) {
        if (strcmp(statuses[i], want) == 0)
            return 0;
    }
    http_response_error(
        resp, 400,
        "status \"%s\" is not a blueprint status; use one of queued, "
        "provisioning, building, awaiting_upload, failed, "
        "build_complete",
        want);
    return -1;
}

static int keep(const cJSON *rec, const struct http_request *req, char *err,
                size_t errlen)
{
    return blueprints_listed(rec, http_request_query(req, "name"),
                             http_request_query(req, "status"));
}

static void list(struct engine *eng, const struct http_request *req,
                 struct http_response *resp, int public_only)
{
    int64_t limit;

    if (api_query_int(req, resp, "limit", 1, 5000, 20, &limit) != 0 ||
        check_status(http_request_query(req, "status"), resp) != 0)
        return;
    layer_records_lock(eng);
    api_list_selected(resp, req, "blueprints",
                      public_only ? NULL : layer_records_blueprints_locked(),
                      limit, keep, view_item);
    layer_records_unlock();
}

void api_blueprints_list(struct engine *eng, const struct api_call *call)
{
    list(eng, call->req, call->resp, 0);
}

void api_blueprints_list_public(struct engine *eng, const struct api_call *call)
{
    list(eng, call->req, call->resp, 1);
}

void api_blueprints_get(struct engine *eng, const struct api_call *call)
{
    api_with_id(eng, call, blueprints_get);
}

void api_blueprints_delete(struct engine *eng, const struct api_call *call)
{
    char err[ERRLEN] = "";
    int status = blueprints_delete(eng, call->id, err, sizeof(err));

    api_reply(call->resp, status, NULL, err);
    /* Its only 409: a build just starting, deletable in a moment. */
    if (status == 409)
        http_response_set_header(call->resp, "x-should-retry", "true");
}

/* GET …/logs streams {"blueprint_id", "logs": [...]} from logs.jsonl a line
 * at a time, so a long build log costs a line of memory per reader, not
 * the file and its JSON tree (16 readers of a 1.3 MB log held 159 MiB). */
#define LOGS_READ_LINE_MAX (1u << 20) /* longer lines are skipped */

struct log_stream {
    FILE *f;
    char *line; /* getline buffer */
    size_t line_cap;
    char *out; /* the piece being sent */
    size_t out_len;
    size_t out_off;
    int started;
    int first;
    int done;
    char head[128];
};

/* The next piece of the reply into ls->out; 0 when nothing is left. */
static int log_next_piece(struct log_stream *ls)
{
    ssize_t n;

    ls->out_off = 0;
    if (!ls->started) {
        ls->started = 1;
        ls->out = ls->head;
        ls->out_len = strlen(ls->head);
        return 1;
    }
    while (ls->f != NULL &&
           (n = getline(&ls->line, &ls->line_cap, ls->f)) > 0) {
        cJSON *e = NULL;

        if (ls->line[n - 1] == '\n')
            ls->line[--n] = '\0';
        if (n == 0 || (size_t)n > LOGS_READ_LINE_MAX)
            continue;
        e = cJSON_ParseWithLength(ls->line, (size_t)n);
        if (!cJSON_IsObject(e)) {
            cJSON_Delete(e); /* a line being written */
            continue;
        }
        cJSON_Delete(e);
        /* The line itself goes out after a comma: getline's buffer holds
         * n + 1 bytes at least (the newline or NUL it read past). */
        memmove(ls->line + 1, ls->line, (size_t)n);
        ls->line[0] = ',';
        ls->out = ls->first ? ls->line + 1 : ls->line;
        ls->out_len = ls->first ? (size_t)n : (size_t)n + 1;
        ls->first = 0;
        return 1;
    }
    if (ls->done)
        return 0;
    ls->done = 1;
    ls->out = (char *)"]}";
    ls->out_len = 2;
    return 1;
}

static ssize_t log_stream_read(void *ctx, char *buf, size_t max)
{
    struct log_stream *ls = ctx;
    size_t k;

    if (ls->out_off == ls->out_len && !log_next_piece(ls))
        return 0;
    k = ls->out_len - ls->out_off < max ? ls->out_len - ls->out_off : max;
    memcpy(buf, ls->out + ls->out_off, k);
    ls->out_off += k;
    return (ssize_t)k;
}

static void log_stream_free(void *ctx)
{
    struct log_stream *ls = ctx;

    if (ls->f != NULL)
        fclose(ls->f);
    free(ls->line);
    free(ls);
}

void api_blueprints_logs(struct engine *eng, const struct api_call *call)
{
    struct http_response *resp = call->resp;
    struct log_stream *ls = NULL;
    FILE *log = NULL;
    char err[ERRLEN] = "";
    int status;

    status = blueprints_log_open(eng, call->id, &log, err, sizeof(err));
    if (status != 0) {
        http_response_error(resp, status, "%s", err);
        return;
    }
    ls = calloc(1, sizeof(*ls));
    if (ls == NULL) {
        if (log != NULL)
            fclose(log);
        http_response_error(resp, 500, "out of memory");
        return;
    }
    ls->f = log;
    ls->first = 1;
    snprintf(ls->head, sizeof(ls->head), "{\"blueprint_id\":\"%s\",\"logs\":[",
             call->id);
    resp->status = 200;
    http_response_set_header(resp, "content-type", "application/json");
    resp->stream = log_stream_read;
    resp->stream_ctx = ls;
    resp->stream_free = log_stream_free;
}
