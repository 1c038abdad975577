/* devboxd REST API: routing, authentication, validation and JSON views. */
#ifndef DEVBOXD_API_H
#define DEVBOXD_API_H

#include <cjson/cJSON.h>

#include "engine.h"
#include "http.h"

/* Runloop's longest keep_alive_time_seconds; the longest eviction notice. */
#define RENEW_MAX_S 172800
/* RLMCP_EVICTION_NOTICE_S when unset: an eviction is announced this long
 * before the devbox's lifetime ends. */
#define EVICTION_NOTICE_DEFAULT_S 300

/* One request as a route's handler sees it: the path's segments and the
 * devbox and execution its {devbox} and {execution} named (found, not
 * referenced: records live as long as the engine), {id} as sent. */
struct api_call {
    const struct http_request *req;
    struct http_response *resp;
    char **seg;
    size_t n;
    struct devbox *box;
    struct execution *ex;
    const char *id;
};
typedef void (*api_handler_fn)(struct engine *eng, const struct api_call *call);
/* Whether a route's handler reads the request body. On an API_NO_BODY
 * route the router answers an oversized body with 413 before the handler;
 * an API_BODY handler answers its own (its limit, its message). */
enum api_body { API_BODY, API_NO_BODY };
/* A row of the route table (api.c): method, pattern, handler, body. */
struct api_route {
    const char *method;
    const char *pattern;
    api_handler_fn handler;
    enum api_body body;
};

/* Answers an engine call: 200 with view (consumed; {} when NULL) when
 * status is 0, else status with the message err. */
void api_reply(struct http_response *resp, int status, cJSON *view,
               const char *err);
/* An engine call on the request's JSON object body: 0 or an HTTP status
 * with err, *view the answer. */
typedef int (*api_body_fn)(struct engine *eng, const struct api_call *call,
                           const cJSON *body, cJSON **view, char *err,
                           size_t errlen);
/* Parses the request's body, runs fn on it and answers (api_reply). */
void api_with_body(struct engine *eng, const struct api_call *call,
                   api_body_fn fn);
/* An engine call on the {id} of the path: 0 or an HTTP status with err,
 * *view the answer. */
typedef int (*api_id_fn)(struct engine *eng, const char *id, cJSON **view,
                         char *err, size_t errlen);
/* Runs fn on the call's id and answers (api_reply). */
void api_with_id(struct engine *eng, const struct api_call *call, api_id_fn fn);
/* An api_view_fn for records that are views already: a copy. */
cJSON *api_view_copy(const void *item);

/* POST /v1/devboxes/{devbox}/enable_tunnel, …/remove_tunnel,
 * …/create_pty_tunnel and …/create_ssh_key (api_tunnels.c). */
void api_tunnel_enable(struct engine *eng, const struct api_call *call);
void api_tunnel_remove(struct engine *eng, const struct api_call *call);
void api_tunnel_pty(struct engine *eng, const struct api_call *call);
void api_ssh_key(struct engine *eng, const struct api_call *call);

/* The http_handler_fn for the server; ud is the struct engine. */
void api_handle(void *ud, const struct http_request *req,
                struct http_response *resp);

/* An endpoint this engine does not serve: 501 in the Runloop error shape,
 * naming the method and path (never a 404, which reads as "no such id"). */
void api_unimplemented(const struct http_request *req,
                       struct http_response *resp);
/* 0 when req carries the API key (or came over the unix socket); ud is the
 * struct engine. The server checks it as soon as a request head arrives. */
int api_authorized(void *ud, const struct http_request *req);

/* Pagination over a newest-first list of ids: the slice after starting_after.
 * Returns 0, or -1 with err when starting_after is unknown. */
int api_page(const char *const *ids, size_t n, const char *starting_after,
             int64_t limit, size_t *first, size_t *count, int *has_more,
             char *err, size_t errlen);

/* One list item's view; the caller of api_list_reply owns what it points to. */
typedef cJSON *(*api_view_fn)(const void *item);

/* Answers one page of a filtered, newest-first list: {KEY: [views],
 * has_more, total_count (null when include_total_count is "false"),
 * remaining_count}, or 400 when starting_after is not in ids. */
void api_list_reply(struct http_response *resp, const char *key,
                    const char *const *ids, const void *const *items, size_t n,
                    const char *starting_after, int64_t limit,
                    const char *include_total_count, api_view_fn view);

/* api_list_reply over records (objects with a string "id", newest first):
 * those match accepts (all when match is NULL), with req's starting_after
 * and include_total_count. */
void api_list_records(struct http_response *resp,
                      const struct http_request *req, const char *key,
                      const cJSON *all, int64_t limit,
                      int (*match)(const cJSON *rec,
                                   const struct http_request *req),
                      api_view_fn view);
/* The request's JSON object body (an empty body is {}): 0 with *out set,
 * or -1 after answering 413 or 400 naming what to send. */
int api_parse_body(const struct http_request *req, struct http_response *resp,
                   cJSON **out);
/* Query parameter name as an integer in lo..hi (def when absent): 0, or -1
 * after answering 400 naming the range. */
int api_query_int(const struct http_request *req, struct http_response *resp,
                  const char *name, int64_t lo, int64_t hi, int64_t def,
                  int64_t *out);
/* Answers 507 for a state-disk write error (err: an errno), saying the
 * engine's disk is full when it is. */
void api_storage_error(struct http_response *resp, int err);
/* A list filter that can refuse the request: 1 keep, 0 skip, -1 with err
 * (a bad filter, answered 400). */
typedef int (*api_keep_fn)(const cJSON *rec, const struct http_request *req,
                           char *err, size_t errlen);
/* As api_list_records with keep, but an unknown starting_after on an empty
 * selection is an empty page (the snapshot and blueprint lists). */
void api_list_selected(struct http_response *resp,
                       const struct http_request *req, const char *key,
                       const cJSON *all, int64_t limit, api_keep_fn keep,
                       api_view_fn view);
/* Formats one SSE event for an output chunk; returns the length written,
 * or 0 if buf is too small. */
size_t api_sse_chunk(char *buf, size_t cap, const char *data, size_t len,
                     int64_t offset);

/* Files API (api_files.c). */
void files_read_contents(struct engine *eng, struct devbox *box,
                         const cJSON *body, struct http_response *resp);
void files_write_contents(struct engine *eng, struct devbox *box,
                          const cJSON *body, struct http_response *resp);
void files_download(struct engine *eng, struct devbox *box, const cJSON *body,
                    struct http_response *resp);
/* Answers 200 with fd's bytes (consumed), streamed as application/octet-stream
 * with x-file-size. */
void files_stream_fd(struct http_response *resp, int fd);
void files_upload(struct engine *eng, struct devbox *box,
                  const struct http_request *req, struct http_response *resp);

/* Blueprints (api_blueprints.c). */
void api_blueprints_list(struct engine *eng, const struct api_call *call);
void api_blueprints_list_public(struct engine *eng,
                                const struct api_call *call);
void api_blueprints_create(struct engine *eng, const struct api_call *call);
void api_blueprints_get(struct engine *eng, const struct api_call *call);
void api_blueprints_delete(struct engine *eng, const struct api_call *call);
void api_blueprints_tag(struct engine *eng, const struct api_call *call);
void api_blueprints_wait(struct engine *eng, const struct api_call *call);
void api_blueprints_logs(struct engine *eng, const struct api_call *call);
/* MCP configs (api_mcp_configs.c). */
void api_mcp_configs_list(struct engine *eng, const struct api_call *call);
void api_mcp_configs_get(struct engine *eng, const struct api_call *call);
void api_mcp_configs_delete(struct engine *eng, const struct api_call *call);
void api_mcp_configs_write(struct engine *eng, const struct api_call *call);
/* Secrets (api_secrets.c). */
void api_secrets_list(struct engine *eng, const struct api_call *call);
void api_secrets_create(struct engine *eng, const struct api_call *call);
void api_secrets_get(struct engine *eng, const struct api_call *call);
void api_secrets_update(struct engine *eng, const struct api_call *call);
void api_secrets_delete(struct engine *eng, const struct api_call *call);
/* Disk snapshots (api_snapshots.c). */
void api_snapshots_list(struct engine *eng, const struct api_call *call);
void api_snapshots_list_public(struct engine *eng, const struct api_call *call);
void api_snapshots_create(struct engine *eng, const struct api_call *call);
void api_snapshots_create_async(struct engine *eng,
                                const struct api_call *call);
void api_snapshots_update(struct engine *eng, const struct api_call *call);
void api_snapshots_delete(struct engine *eng, const struct api_call *call);
void api_snapshots_status(struct engine *eng, const struct api_call *call);
/* Storage objects (api_objects.c). */
void api_objects_list(struct engine *eng, const struct api_call *call);
void api_objects_list_public(struct engine *eng, const struct api_call *call);
void api_objects_create(struct engine *eng, const struct api_call *call);
void api_objects_get(struct engine *eng, const struct api_call *call);
void api_objects_complete(struct engine *eng, const struct api_call *call);
void api_objects_delete(struct engine *eng, const struct api_call *call);
void api_objects_download(struct engine *eng, const struct api_call *call);
void api_objects_upload(struct engine *eng, const struct api_call *call);
void api_objects_content(struct engine *eng, const struct api_call *call);
void api_objects_other(struct engine *eng, const struct api_call *call);
/* 1 when req is an upload (PUT .../upload) or download (GET .../content)
 * of an object carrying a valid, unexpired signature: it needs no key. */
int objects_signed_request(struct engine *eng, const struct http_request *req);

#endif
