/*
 * rlmcp_helpers.h - optional helper library for plugin authors.
 *
 * A static library (rlmcp_helpers) linked into plugins. It uses cJSON, which
 * the ABI header deliberately does not: JSON still crosses the ABI as text.
 *
 * Convention for functions that talk to the host on behalf of a call:
 *   0 (RLMCP_OK)       success
 *   RLMCP_H_REPORTED   an error result was already set with result_error();
 *                      the handler returns RLMCP_OK
 *   < 0                RLMCP_* code (ECANCELLED, ENOMEM...) to return as is
 * rlmcp_h_ret() turns such a value into the handler's return value.
 */
#ifndef RLMCP_HELPERS_H
#define RLMCP_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "rlmcp/plugin.h"

#define RLMCP_H_REPORTED 1

static inline int rlmcp_h_ret(int rc)
{
    return rc > 0 ? RLMCP_OK : rc;
}

/* The handler's context: the services table and the current call. */
struct rlmcp_h {
    const struct rlmcp_host_api *api;
    rlmcp_call *call;
};

/* ---- error codes (docs/errors.md) ------------------------------------ */

#define RLMCP_ERR_INVALID_ARGUMENT "invalid_argument"
#define RLMCP_ERR_NOT_FOUND "not_found"
#define RLMCP_ERR_UNAUTHENTICATED "unauthenticated"
#define RLMCP_ERR_PERMISSION_DENIED "permission_denied"
#define RLMCP_ERR_CONFLICT "conflict"
#define RLMCP_ERR_RATE_LIMITED "rate_limited"
#define RLMCP_ERR_UNAVAILABLE "unavailable"
#define RLMCP_ERR_TIMEOUT "timeout"
#define RLMCP_ERR_DEVBOX_NOT_RUNNING "devbox_not_running"
#define RLMCP_ERR_DEVBOX_NOT_READY "devbox_not_ready"
#define RLMCP_ERR_TOO_LARGE "too_large"
#define RLMCP_ERR_STORAGE_FULL "storage_full"
#define RLMCP_ERR_DISK_READ_ONLY "disk_read_only"
#define RLMCP_ERR_CANCELLED "cancelled"
#define RLMCP_ERR_INTERNAL "internal"

/* The error code for an HTTP status from the Runloop API. */
const char *rlmcp_h_code_for_status(long status);
/* The default remedy text for a code; never NULL. */
const char *rlmcp_h_remedy_for_code(const char *code);
/*
 * The default remedy for a code and the error's message: a not_found names
 * the kind of object the message is about (snapshot, execution, blueprint,
 * secret, MCP config, file, devbox, in that order of precedence) and the
 * tool that lists that kind; other codes get rlmcp_h_remedy_for_code().
 * rlmcp_h_fail() uses it. Never NULL.
 */
const char *rlmcp_h_remedy_for(const char *code, const char *message);
/*
 * The message of a Runloop error body: body.message when the body is JSON,
 * else the raw text (cut to 300 bytes). Returns a malloc'd string.
 */
char *rlmcp_h_error_message(const char *body, size_t len);

/* result_error with the default remedy for the code and message
 * (rlmcp_h_remedy_for). Returns RLMCP_H_REPORTED. */
int rlmcp_h_fail(const struct rlmcp_h *h, const char *code, const char *fmt,
                 ...) RLMCP_PRINTF(3, 4);
/* Same with a remedy of the caller's choice. */
int rlmcp_h_fail_remedy(const struct rlmcp_h *h, const char *code,
                        const char *remedy, const char *fmt, ...)
    RLMCP_PRINTF(4, 5);

/*
 * Report a failed Runloop response: maps the status to a code, uses the
 * body's message and names `what` (e.g. "devbox dbx_1"). RLMCP_H_REPORTED.
 */
int rlmcp_h_fail_resp(const struct rlmcp_h *h,
                      const struct rlmcp_http_resp *resp, const char *what);
/*
 * Report a transport-level failure (rc from runloop_request). Returns
 * RLMCP_ECANCELLED for a cancelled call (nothing is reported then), else
 * RLMCP_H_REPORTED. RLMCP_ETOOBIG (a message over its limit) is reported
 * as too_large.
 */
int rlmcp_h_fail_rc(const struct rlmcp_h *h, int rc, const char *what);

/* ---- Runloop requests -------------------------------------------------- */

struct rlmcp_h_req_opts {
    uint32_t timeout_ms; /* 0: host default */
    int32_t max_retries; /* <0: host default */
    uint32_t flags;      /* RLMCP_HTTP_* */
    size_t max_body;     /* 0: host default */
    const char *accept;  /* NULL: application/json */
    /* Return RLMCP_EHTTP / RLMCP_ETIMEDOUT unreported, for a caller that
     * retries or must clean up (e.g. kill an execution) before failing. */
    bool transport_unreported;
    /* The remedy of a 409 reported by rlmcp_h_request (NULL: the default,
     * e.g. "pick another name, or update_secret" for a create). */
    const char *conflict_remedy;
};

/*
 * Send a JSON request (body may be NULL) and parse the 2xx answer into
 * *out (NULL when the body is empty or not JSON; out may be NULL). A non-2xx
 * answer or a transport failure is reported against `what`. A NULL path
 * or what is RLMCP_ENOMEM (nothing sent), so the results of
 * rlmcp_h_sprintf need no check of their own.
 * Returns 0, RLMCP_H_REPORTED or a negative RLMCP code.
 */
int rlmcp_h_request(const struct rlmcp_h *h, const char *method,
                    const char *path, const cJSON *body,
                    const struct rlmcp_h_req_opts *opts, const char *what,
                    cJSON **out);
/*
 * Same, but a non-2xx status is returned in *status_out with *out holding
 * the parsed body (if JSON) instead of being reported; *msg_out (optional)
 * receives the error message (malloc'd). Transport failures are reported.
 */
int rlmcp_h_request_status(const struct rlmcp_h *h, const char *method,
                           const char *path, const cJSON *body,
                           const struct rlmcp_h_req_opts *opts,
                           const char *what, long *status_out, cJSON **out,
                           char **msg_out);
/*
 * GET path and say whether it answered 2xx (*exists), e.g. whether an
 * object is there before saying that a route on it is missing. Transport
 * failures are reported; a NULL path is RLMCP_ENOMEM (nothing sent).
 * Returns 0, RLMCP_H_REPORTED or a negative RLMCP code.
 */
int rlmcp_h_exists(const struct rlmcp_h *h, const char *path, const char *what,
                   bool *exists);

/*
 * Fill req (from RLMCP_HTTP_REQ_INIT) to download the raw bytes of path on
 * devbox id: POST /v1/devboxes/{id}/download_file {path}, accepting
 * application/octet-stream, within timeout_ms, keeping limit + 1 bytes so
 * that rlmcp_h_resp_over tells a larger file from one of exactly limit.
 * *url and *body are the request's path and body (malloc'd; the caller
 * frees them after the request). Returns 0 or RLMCP_ENOMEM (both NULL).
 * Threads: any.
 */
int rlmcp_h_download_req(const char *id, const char *path, long long limit,
                         uint32_t timeout_ms, struct rlmcp_http_req *req,
                         char **url, char **body);
/* True when a download of at most limit bytes got more (resp borrowed). */
bool rlmcp_h_resp_over(const struct rlmcp_http_resp *resp, long long limit);

/*
 * A delete tool over one id: the call's argument id_arg (args_json as the
 * handler got it; checked as rlmcp_h_id_valid), then POST
 * <path_before><id><path_after> reported against "<what> <id>", then the
 * result {<id_arg>: id, "deleted": true}. Returns 0, RLMCP_H_REPORTED or a
 * negative code.
 */
int rlmcp_h_delete_by_id(const struct rlmcp_h *h, const char *args_json,
                         size_t len, const char *id_arg,
                         const char *path_before, const char *path_after,
                         const char *what);

/* ---- arguments ---------------------------------------------------------- */

/* Parse the arguments object; reports invalid_argument when not an object. */
int rlmcp_h_args(const struct rlmcp_h *h, const char *json, size_t len,
                 cJSON **out);
/*
 * Getters: 0 with *out set (left untouched when absent and optional), or
 * RLMCP_H_REPORTED after an invalid_argument error naming the argument.
 */
int rlmcp_h_arg_str(const struct rlmcp_h *h, const cJSON *args,
                    const char *name, bool required, const char **out);
int rlmcp_h_arg_int(const struct rlmcp_h *h, const cJSON *args,
                    const char *name, bool required, long long min,
                    long long max, long long *out);
int rlmcp_h_arg_bool(const struct rlmcp_h *h, const cJSON *args,
                     const char *name, bool *out);
/* An object whose values are all strings; *out borrowed from args. */
int rlmcp_h_arg_str_map(const struct rlmcp_h *h, const cJSON *args,
                        const char *name, const cJSON **out);
/* An id used in a URL path: 1-128 chars of [A-Za-z0-9_.-]. */
int rlmcp_h_arg_id(const struct rlmcp_h *h, const cJSON *args, const char *name,
                   bool required, const char **out);
bool rlmcp_h_id_valid(const char *s);

/*
 * A devbox resource URI, devbox://{devbox_id}/{rest}: the id (checked as
 * rlmcp_h_id_valid) is copied into id (idlen >= 129) and *rest points
 * after its '/'. Reports invalid_argument (the read answers "invalid
 * params") naming what is wrong. Returns 0 or RLMCP_H_REPORTED.
 */
int rlmcp_h_devbox_uri(const struct rlmcp_h *h, const char *uri, char *id,
                       size_t idlen, const char **rest);

/*
 * Parse the arguments and check them against the tool's input schema
 * text: unknown names (when additionalProperties is false) and missing
 * required names are invalid_argument errors. Types are checked by the
 * getters above. The host already validates arguments against the input
 * schema before a handler runs, so rlmcp_h_args() is enough for most
 * tools; this re-parses the schema on every call.
 */
int rlmcp_h_args_schema(const struct rlmcp_h *h, const char *json, size_t len,
                        const char *schema_json, cJSON **out);

/* ---- devboxes ------------------------------------------------------------ */

/*
 * Create a devbox: POST /v1/devboxes with body (retried as the host
 * retries; sent to the end even when the call is cancelled meanwhile, so
 * the caller learns the id of what it made and can shut it down). *id_out
 * receives the checked id (malloc'd). Returns 0, RLMCP_H_REPORTED (named
 * by what) or a negative code.
 */
int rlmcp_h_devbox_create(const struct rlmcp_h *h, const cJSON *body,
                          const char *what, char **id_out);
/*
 * Wait until the devbox's status is one of `statuses` (NULL-terminated) or
 * wait_ms passes, long-polling POST /v1/devboxes/{id}/wait_for_status.
 * *dbx_out receives the last DevboxView seen (caller frees). Returns 0
 * (check the status yourself: the bound may have passed),
 * RLMCP_H_REPORTED or a negative code.
 */
int rlmcp_h_devbox_wait(const struct rlmcp_h *h, const char *id,
                        const char *const *statuses, uint64_t wait_ms,
                        cJSON **dbx_out);
/*
 * When the view of a devbox that is not running yet says what it waits for
 * (the local engine's "status_message" while the devbox's image builds),
 * fails the call with devbox_not_ready: "<message>, call again" and a
 * remedy to call again in a minute, and returns RLMCP_H_REPORTED; else
 * returns 0 and reports nothing. rlmcp_h_devbox_wait() already passes the
 * message on as progress while it waits.
 */
int rlmcp_h_devbox_preparing(const struct rlmcp_h *h, const cJSON *dbx);
/*
 * Shut down a devbox the call made and no longer wants (POST
 * /v1/devboxes/{id}/shutdown, sent even when the call is cancelled, within
 * 10 s and one retry). Reports nothing: a refusal is logged as a warning.
 * Threads: the call's.
 */
void rlmcp_h_devbox_discard(const struct rlmcp_h *h, const char *id);
/*
 * Milliseconds left before the call must answer (the host's
 * call_deadline_ms), less margin_ms for the answer itself; 0 when that has
 * passed, a day when the host set no deadline. Threads: the call's.
 */
uint64_t rlmcp_h_time_left_ms(const struct rlmcp_h *h, uint64_t margin_ms);
/*
 * How rlmcp_h_exec_wait() names its work and explains a refusal. `what`
 * names the work in its messages ("the computer action"): "running <what>",
 * "waiting for <what>", "<what> did not finish in time (execution E in
 * devbox D)". refused (optional) reports a non-2xx answer: to the execute
 * request (waiting false; msg is the body's message or NULL) or to a wait
 * for it (waiting true); it returns what rlmcp_h_exec_wait() then returns
 * (RLMCP_H_REPORTED, a negative code, or 0, after which *view_out is NULL).
 * Without it, rlmcp_h_fail_on_devbox() reports against `what`.
 */
struct rlmcp_h_exec_wait {
    const char *what;
    int (*refused)(const struct rlmcp_h *h, const char *id, long status,
                   const char *msg, bool waiting, void *ud);
    void *ud;
};
/*
 * Run cmd in devbox id and wait until it completes or until_ms (monotonic,
 * rlmcp_h_now_ms()) passes: POST /v1/devboxes/{id}/execute?last_n=20 with
 * an optimistic_timeout of the time left (1 to 25 s), then long-polls
 * POST .../executions/{eid}/wait_for_status?last_n=20 for "completed". A
 * 408 ("not yet") answered before its wait was up (a proxy's) pauses a
 * second instead of asking again at once. *view_out receives the completed
 * ExecutionView (caller frees; NULL on failure). Returns 0,
 * RLMCP_H_REPORTED (timeout after until_ms) or a negative code.
 * Threads: the call's (it uses the call's requests and sleep_ms).
 */
int rlmcp_h_exec_wait(const struct rlmcp_h *h, const char *id, const char *cmd,
                      uint64_t until_ms, const struct rlmcp_h_exec_wait *ew,
                      cJSON **view_out);
/*
 * Report a failed operation on a devbox (HTTP `status`, message `msg`):
 * when the devbox is not running the error is devbox_not_running with a
 * remedy for its state; a missing devbox is not_found; a 409 on a devbox
 * that reads running (changing state, e.g. being stopped) is conflict with
 * a remedy to wait and retry; otherwise the status is mapped as usual. Returns RLMCP_H_REPORTED or ECANCELLED.
 */
int rlmcp_h_fail_on_devbox(const struct rlmcp_h *h, const char *devbox_id,
                           long status, const char *msg, const char *what);

/* The devbox's status string, or "" (borrowed from dbx). */
const char *rlmcp_h_devbox_status(const cJSON *dbx);

/* ---- results ------------------------------------------------------------- */

/* Set structuredContent from obj (not consumed). */
int rlmcp_h_result_json(const struct rlmcp_h *h, const cJSON *obj);

/* ---- list tools (pages.c) ------------------------------------------------ */

/* Percent-encode s for a URL query value (RFC 3986 unreserved kept). */
char *rlmcp_h_url_encode(const char *s);
/*
 * Appends "&name=value" (value URL-encoded) to the malloc'd *path when
 * value is set. RLMCP_OK, or RLMCP_ENOMEM (also when *path is NULL, so a
 * failed rlmcp_h_sprintf needs no check of its own).
 */
int rlmcp_h_add_query(char **path, const char *name, const char *value);
/*
 * A list tool's request and result: GET path (NULL: RLMCP_ENOMEM), the page
 * made into {<key>: [items with `keep`], has_more, next_starting_after?,
 * total_count?} by rlmcp_h_page_result, set as the call's result.
 */
int rlmcp_h_list(const struct rlmcp_h *h, const char *path, const char *key,
                 const char *const *keep, const char *what);
/*
 * A list tool's paging arguments: "starting_after" (optional, checked as
 * rlmcp_h_arg_id; *after untouched when absent) and "limit" (1 to
 * max_limit; *limit keeps its default when absent). Returns 0 or
 * RLMCP_H_REPORTED. Threads: the handler's, during the call.
 */
int rlmcp_h_arg_page(const struct rlmcp_h *h, const cJSON *args,
                     long long max_limit, const char **after, long long *limit);
/* An optional argument of a list tool sent as the query parameter of the
 * same name (URL-encoded) when given. */
struct rlmcp_h_list_filter {
    const char *arg;
    bool id; /* checked as rlmcp_h_arg_id, else any string */
};
/*
 * A list tool from its parsed arguments (args, borrowed): the n filters
 * and the paging (rlmcp_h_arg_page; limit 20 by default) are checked, then
 * GET base?limit=N&<filter>=v...&starting_after=v is answered as
 * rlmcp_h_list does. Returns 0, RLMCP_H_REPORTED or a negative code.
 * Threads: the handler's, during the call.
 */
int rlmcp_h_list_args(const struct rlmcp_h *h, const cJSON *args,
                      const char *base,
                      const struct rlmcp_h_list_filter *filters, size_t n,
                      long long max_limit, const char *key,
                      const char *const *keep, const char *what);
/*
 * A new object with only `keys` (NULL-terminated) of obj, skipping absent
 * and null values; keys NULL copies everything. NULL on ENOMEM.
 */
cJSON *rlmcp_h_pick(const cJSON *obj, const char *const *keys);
/*
 * Set the call's result to the keys of obj (rlmcp_h_pick) and the strings
 * of set (may be NULL): name, value pairs ended by a NULL name, each
 * replacing the picked member in place or added at the end; a pair whose
 * value is NULL is skipped. Nothing is consumed. Returns 0 or
 * RLMCP_ENOMEM. Threads: the handler's, during the call.
 */
int rlmcp_h_result_pick(const struct rlmcp_h *h, const cJSON *obj,
                        const char *const *keys, const char *const *set);
/*
 * Turn a Runloop list page {<key>: [...], has_more, total_count?} into the
 * tool result {<key>: [picked items], has_more, next_starting_after?,
 * total_count?}; next_starting_after is the last item's id when more
 * pages exist. A page without the list is reported (internal) against
 * `what`. Returns 0, RLMCP_H_REPORTED or RLMCP_ENOMEM.
 */
int rlmcp_h_page_result(const struct rlmcp_h *h, const cJSON *page,
                        const char *key, const char *const *keep,
                        const char *what, cJSON **out);

/* ---- tool registration (init time) ------------------------------------- */

/* One tool of a plugin's static table (JSON texts as in rlmcp_tool_def). */
struct rlmcp_h_tool {
    const char *name, *title, *desc, *in, *out, *ann;
    rlmcp_tool_fn fn;
    bool long_running; /* gets long_timeout_ms instead of the host default */
};

/*
 * Fill def (from RLMCP_TOOL_DEF_INIT) from t as the calls below register
 * it, for a plugin that sets more of it (e.g. def.task) before calling
 * api->register_tool itself.
 */
void rlmcp_h_tool_def(const struct rlmcp_h_tool *t, void *user_data,
                      uint32_t long_timeout_ms, bool waiting,
                      struct rlmcp_tool_def *def);
/*
 * api->register_tool(self, def); on failure the plugin error (set_error)
 * names the tool: "registering NAME failed: why". def is copied. Init only.
 */
int rlmcp_h_register_def(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                         const struct rlmcp_tool_def *def);
/*
 * Register t as rlmcp_h_register_tools_waiting does (waiting: with
 * RLMCP_TOOL_LONG), with task ops: it may run as an MCP task (ABI 1.4).
 */
int rlmcp_h_register_task_tool(rlmcp_plugin *self,
                               const struct rlmcp_host_api *api,
                               const struct rlmcp_h_tool *t,
                               const struct rlmcp_task_def *task,
                               void *user_data, uint32_t long_timeout_ms,
                               bool waiting);

/*
 * rlmcp_h_register_tools_waiting() with task ops for the first tool
 * (tools[0] may run as an MCP task, ABI 1.4): the common shape of a plugin
 * whose main tool starts the backend's work.
 */
int rlmcp_h_register_tools_task(rlmcp_plugin *self,
                                const struct rlmcp_host_api *api,
                                const struct rlmcp_h_tool *tools, size_t n,
                                const struct rlmcp_task_def *task,
                                void *user_data, uint32_t long_timeout_ms,
                                const char *const *waiting);

/* ---- task ops over the backend's work (tasks.c) ------------------------ */

/*
 * A task whose handle is one id argument and whose work is the backend's
 * (a build, a snapshot): its get and wait ops read the work's state, tell
 * whether it ended and answer it. The struct is usually static const; the
 * functions run on the op's thread, during the op, and get the op's
 * user_data as user. The state is the caller's (the helper frees it):
 * read creates it, ended and answer only look.
 */
struct rlmcp_h_task_ops {
    const char *id_arg;   /* the handle's argument, e.g. "blueprint_id" */
    long long max_wait_s; /* the largest timeout_seconds wait takes */
    /* Read the work's state into *state (0, RLMCP_H_REPORTED or < 0). */
    int (*read)(const struct rlmcp_h *h, void *user, const char *id,
                cJSON **state);
    /* True when the state is final: wait stops polling. */
    bool (*ended)(const cJSON *state, void *user);
    /* Set the call's result from the state, ended or not. */
    int (*answer)(const struct rlmcp_h *h, void *user, const char *id,
                  const cJSON *state);
    /* Optional: instead of the next pause, wait for the work's end in the
     * backend (a long poll), at most until until_ms (rlmcp_h_now_ms);
     * *held true when it did (the state is read again at once), false to
     * pause as usual. 0, RLMCP_H_REPORTED or < 0. */
    int (*hold)(const struct rlmcp_h *h, void *user, const char *id,
                const cJSON *state, uint64_t until_ms, bool *held);
};

/*
 * The arguments of a task op (args_json as the handler got it) into *args
 * (caller frees), the handle's id into *id (borrowed from *args) and the
 * work's state, read once, into *state (caller frees). Both are NULL on a
 * failure. Returns 0, RLMCP_H_REPORTED or a negative code.
 */
int rlmcp_h_task_read(const struct rlmcp_h *h,
                      const struct rlmcp_h_task_ops *ops, void *user,
                      const char *args_json, size_t len, cJSON **args,
                      const char **id, cJSON **state);
/* The get op: the state read once, answered. */
int rlmcp_h_task_get(const struct rlmcp_h *h,
                     const struct rlmcp_h_task_ops *ops, void *user,
                     const char *args_json, size_t len);
/*
 * Pauses between polls of work the backend does on its own (a snapshot, a
 * build): the first is RLMCP_H_POLL_FIRST_MS, each next one twice the one
 * before, up to cap_ms. Work that ends in a few hundred milliseconds is
 * seen ended within a few tens of them, not a whole cap later; long work
 * costs a request per cap_ms. slept_ms sums the pauses asked for, a bound
 * that holds also where sleeps return early.
 */
#define RLMCP_H_POLL_FIRST_MS 10u
struct rlmcp_h_poll {
    uint32_t next_ms;
    uint32_t cap_ms;
    uint64_t slept_ms;
};
void rlmcp_h_poll_init(struct rlmcp_h_poll *p, uint32_t cap_ms);
/* One pause, through api->sleep_ms (RLMCP_ECANCELLED when the call was
 * cancelled), then the next one doubles. */
int rlmcp_h_poll_pause(const struct rlmcp_h *h, struct rlmcp_h_poll *p);

/*
 * The wait op: reads the state with pauses of rlmcp_h_poll (up to
 * poll_ms, or ops->hold where it holds; sleeping through api->sleep_ms,
 * so a cancelled call returns
 * RLMCP_ECANCELLED) until it ended or the op's "timeout_seconds" (1 to
 * ops->max_wait_s, default 60) passed, then answers the last state read:
 * at the bound a state still working, which the host asks about again.
 */
int rlmcp_h_task_wait(const struct rlmcp_h *h,
                      const struct rlmcp_h_task_ops *ops, void *user,
                      const char *args_json, size_t len, uint32_t poll_ms);

/*
 * The start op's answer: the handle {<ops->id_arg>: id}. The cancel op's
 * answer for work that had ended before: {<ops->id_arg>: id, "status":
 * status, "already_done": true}. Both return 0 or RLMCP_ENOMEM; the op's
 * thread, during the op.
 */
int rlmcp_h_task_handle(const struct rlmcp_h *h,
                        const struct rlmcp_h_task_ops *ops, const char *id);
int rlmcp_h_task_already_done(const struct rlmcp_h *h,
                              const struct rlmcp_h_task_ops *ops,
                              const char *id, const char *status);

/*
 * Register n tools, each with user_data; long-running ones get
 * long_timeout_ms. On failure the plugin error names the tool and the
 * code is returned (the caller's init fails).
 */
int rlmcp_h_register_tools(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                           const struct rlmcp_h_tool *tools, size_t n,
                           void *user_data, uint32_t long_timeout_ms);
/* The same; the tools named in waiting (NULL-terminated, may be NULL) get
 * RLMCP_TOOL_LONG: they may wait long and run on their own threads. */
int rlmcp_h_register_tools_waiting(rlmcp_plugin *self,
                                   const struct rlmcp_host_api *api,
                                   const struct rlmcp_h_tool *tools, size_t n,
                                   void *user_data, uint32_t long_timeout_ms,
                                   const char *const *waiting);

/* ---- plugin init and shutdown ------------------------------------------- */

/*
 * A plugin whose state is one struct on the heap, for rlmcp_h_plugin_init.
 * Usually static const.
 */
struct rlmcp_h_plugin {
    size_t state_size; /* sizeof the state struct */
    /*
     * Fill the zeroed state from the parsed config section (borrowed; freed
     * after setup returns) and register the tools. Returns RLMCP_OK, or a
     * negative code after api->set_error (RLMCP_ENOMEM may skip it). Runs
     * on the main thread, inside init.
     */
    int (*setup)(void *state, rlmcp_plugin *self,
                 const struct rlmcp_host_api *api, const cJSON *cfg);
    /* The plugin's shutdown, which frees the state and what setup put in
     * it; also run on the half-filled state of a failed setup. NULL: the
     * state is freed with free(). */
    rlmcp_shutdown_fn shutdown;
};

/*
 * A plugin's init: allocate the state (calloc of p->state_size), parse the
 * config section (rlmcp_h_config) and run p->setup; on success *state_out
 * is the state (the plugin's, back in shutdown), else the state is freed
 * with p->shutdown and the code returned (RLMCP_ENOMEM, RLMCP_EINVAL for
 * a section that is not JSON, or setup's). Main thread, inside init.
 */
int rlmcp_h_plugin_init(const struct rlmcp_h_plugin *p, rlmcp_plugin *self,
                        const struct rlmcp_host_api *api, void **state_out);
/* A shutdown for a state that free() frees (rlmcp_shutdown_fn). */
void rlmcp_h_shutdown_free(rlmcp_plugin *self, void *state);

/*
 * The descriptor (RLMCP_PLUGIN_DEFINE_CONFIG; config_schema_ may be NULL)
 * of a plugin whose init is rlmcp_h_plugin_init over a state_type_ set up
 * by setup_, and whose shutdown_ (e.g. rlmcp_h_shutdown_free) frees it.
 */
#define RLMCP_H_PLUGIN_DEFINE(name_, version_, description_, state_type_,      \
                              setup_, shutdown_, config_schema_)               \
    static int rlmcp_h_plugin_init_(rlmcp_plugin *self,                        \
                                    const struct rlmcp_host_api *api,          \
                                    void **state_out)                          \
    {                                                                          \
        static const struct rlmcp_h_plugin plugin_ = {sizeof(state_type_),     \
                                                      (setup_), (shutdown_)};  \
                                                                               \
        return rlmcp_h_plugin_init(&plugin_, self, api, state_out);            \
    }                                                                          \
    RLMCP_PLUGIN_DEFINE_CONFIG(name_, version_, description_,                  \
                               rlmcp_h_plugin_init_, shutdown_,                \
                               config_schema_)

/* ---- config helpers (init time, no call) --------------------------------- */

/*
 * The plugin's config: section as JSON ({} when it has none); NULL, with
 * the init error set, when it is not JSON or memory ran out. For init.
 */
cJSON *rlmcp_h_config(rlmcp_plugin *self, const struct rlmcp_host_api *api);
/* Integer from a config object; def when absent; false when wrong type. */
bool rlmcp_h_cfg_int(const cJSON *cfg, const char *name, long long def,
                     long long *out);
bool rlmcp_h_cfg_bool(const cJSON *cfg, const char *name, bool def, bool *out);
/*
 * Integer in [min, max] from a config object (def when absent). On a wrong
 * type or a value out of range it records "config NAME must be an integer
 * MIN-MAX" with api->set_error and returns false. Init only.
 */
bool rlmcp_h_cfg_range(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                       const cJSON *cfg, const char *name, long long def,
                       long long min, long long max, long long *out);

/* One integer setting of a plugin's state struct, for rlmcp_h_cfg_ranges. */
struct rlmcp_h_cfg_key {
    const char *name;
    long long def, min, max;
    size_t off; /* offsetof the long long it sets */
};
/*
 * rlmcp_h_cfg_range for each of n keys, storing into base + off; stops at
 * the first bad one (its error recorded) and returns false. Init only.
 */
bool rlmcp_h_cfg_ranges(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                        const cJSON *cfg, const struct rlmcp_h_cfg_key *keys,
                        size_t n, void *base);

/* An integer setting's default and the long long it sets (offsetof). */
struct rlmcp_h_cfg_default {
    const char *name;
    long long def;
    size_t off;
};
/*
 * Each of n integer settings from cfg, or its default, into base + off:
 * for a section the host has checked against the plugin's config schema
 * (ABI 1.5), whose types and ranges it does not check again.
 */
void rlmcp_h_cfg_defaults(const cJSON *cfg,
                          const struct rlmcp_h_cfg_default *keys, size_t n,
                          void *base);

/* ---- text utilities ------------------------------------------------------ */

/* Base64 (standard alphabet, padded). Return malloc'd buffers or NULL. */
char *rlmcp_h_b64_encode(const void *data, size_t len, size_t *out_len);
/* NULL with *bad set when the input is not valid base64 (whitespace ok). */
unsigned char *rlmcp_h_b64_decode(const char *s, size_t len, size_t *out_len);
/* An upper bound of the decoded size of a base64 text. */
size_t rlmcp_h_b64_decoded_max(size_t len);

/* True when data is valid UTF-8 with no NUL byte. */
bool rlmcp_h_is_text(const void *data, size_t len);
/* A MIME type from the file name's extension, else from magic bytes. */
const char *rlmcp_h_mime_guess(const char *path, const void *data, size_t len);

/* Single-quote s for POSIX sh. malloc'd. */
char *rlmcp_h_shell_quote(const char *s);
/* The last non-empty line of s (NULL: ""), without its line end, e.g. a
 * command's final answer in its output. malloc'd; NULL when out of memory. */
char *rlmcp_h_last_line(const char *s);

/* asprintf that returns NULL on failure. */
char *rlmcp_h_sprintf(const char *fmt, ...) RLMCP_PRINTF(1, 2);

/*
 * The clock the helpers and the bundled plugins read: monotonic ms
 * (CLOCK_MONOTONIC), wall-clock ms (CLOCK_REALTIME) and a nap that no
 * cancel cuts short (clean-up after a cancel). The system's by default; a
 * plugin's unit tests install their own (the fake host's simulated clock)
 * so that timeouts and clean-up times pass without waiting. Install it
 * before any call runs: it is read without a lock.
 */
struct rlmcp_h_clock {
    uint64_t (*mono_ms)(void *ctx);
    long long (*wall_ms)(void *ctx);
    void (*nap_ms)(void *ctx, uint64_t ms);
    void *ctx;
};

/* clock NULL: the system's clock again. The struct is copied. */
void rlmcp_h_set_clock(const struct rlmcp_h_clock *clock);

/* Monotonic milliseconds. */
uint64_t rlmcp_h_now_ms(void);

/* Wall-clock milliseconds since the Unix epoch. */
long long rlmcp_h_wall_ms(void);

/* Sleep ms milliseconds (not cut short by a cancel: api->sleep_ms is). */
void rlmcp_h_nap_ms(uint64_t ms);

/*
 * A bounded output capture: keeps the first head_cap and the last tail_cap
 * bytes of a stream and counts the rest, so any amount of output can pass
 * through in constant memory.
 */
struct rlmcp_h_capture {
    char *head;
    size_t head_len, head_cap;
    char *tail; /* ring buffer */
    size_t tail_len, tail_pos, tail_cap;
    uint64_t total;
};
/* max bytes kept in total (split half/half). false on ENOMEM. */
bool rlmcp_h_capture_init(struct rlmcp_h_capture *c, size_t max);
void rlmcp_h_capture_add(struct rlmcp_h_capture *c, const char *data,
                         size_t len);
void rlmcp_h_capture_reset(struct rlmcp_h_capture *c);
void rlmcp_h_capture_free(struct rlmcp_h_capture *c);
/*
 * The kept text: everything when it fit, else head + marker + tail, cut at
 * UTF-8 boundaries. The marker names the omitted byte count and, when hint
 * is set, adds it (e.g. "full output: get_execution_logs
 * execution_id=exe_1", from rlmcp_h_tool_ref). malloc'd.
 */
char *rlmcp_h_capture_text(const struct rlmcp_h_capture *c, const char *hint,
                           bool *truncated);
/* The same, and *dropped: how many bytes the marker stands for. */
char *rlmcp_h_capture_text_dropped(const struct rlmcp_h_capture *c,
                                   const char *hint, bool *truncated,
                                   uint64_t *dropped);

/*
 * "tool param=value" with the names this deployment exposes (aliases
 * applied), for text that sends the agent to another tool; NULL when the
 * deployment hides the tool (or out of memory). On hosts before ABI 1.3
 * the registered names. malloc'd.
 */
char *rlmcp_h_tool_ref(const struct rlmcp_h *h, const char *tool,
                       const char *param, const char *value);

#endif
