/*
 * fake_host.h - a fake host-services table for plugin unit tests.
 *
 * One global fake host: it loads a plugin's descriptor with a config,
 * records the tools it registers (their schemas checked as the host checks
 * them), and runs tool handlers behind the host's argument validation.
 * runloop_request answers from a scripted table of (method, path) -> (status,
 * body) and records every request; runloop_sse replays scripted events.
 * Results, errors and progress are recorded for assertions. Single-threaded.
 */
#ifndef RLMCP_FAKE_HOST_H
#define RLMCP_FAKE_HOST_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "rlmcp/plugin.h"

struct fh_request {
    char *method;
    char *path;
    char *body; /* NUL-terminated copy, or NULL */
    char *accept;
    uint32_t flags;
    uint32_t timeout_ms;
    int32_t max_retries;
    size_t max_body;
    bool cancelled_at_send; /* the call was cancelled when it was sent */
    /* multipart: the "path" field and the "file" part */
    char *part_path;
    unsigned char *part_file;
    size_t part_file_len;
    size_t n_parts;
    /* ABI 1.1 tunnel requests (runloop_tunnel_request): the tunnel used.
     * Their path is recorded and routed as "tunnel/<port><path>". */
    char *tunnel_key;
    char *tunnel_token;
};

/* Load the plugin (descriptor from RLMCP_PLUGIN_DEFINE) with a config. */
int fh_load(const struct rlmcp_plugin_desc *desc, const char *config_json);
/* Shut the plugin down and free everything. */
void fh_unload(void);
/* The last set_error text from init, or NULL. */
const char *fh_init_error(void);
/* A config a plugin must refuse, and what its init error must name. */
struct fh_bad_config {
    const char *config;
    const char *says;
};
/*
 * Load desc with each config it must refuse, its init error naming says,
 * unloading it after each. NULL when all are; else what happened instead
 * for the first that is not (malloc'd), for the test's fail_msg("%s", ...).
 */
char *fh_init_refusals(const struct rlmcp_plugin_desc *desc,
                       const struct fh_bad_config *bad, size_t n);

/* Registered tools. */
size_t fh_tool_count(void);
const struct rlmcp_tool_def *fh_tool(const char *name);
const struct rlmcp_tool_def *fh_tool_at(size_t i);
/* Resources registered (counted; their handlers are not run here). */
size_t fh_resource_count(void);

/* Forget the recorded results, requests and routes of the previous call. */
void fh_reset(void);

/*
 * Script an answer: path is matched exactly (query included), or as a
 * prefix when it ends with '*'. times: how often it answers (0: always).
 * Routes are tried in the order they were added.
 */
void fh_route(const char *method, const char *path, long status,
              const char *body);
void fh_route_n(const char *method, const char *path, long status,
                const char *body, int times);
/* A transport failure (RLMCP_EHTTP, RLMCP_ETIMEDOUT...) instead. */
void fh_route_rc(const char *method, const char *path, int rc, int times);
/* Raw bytes with a content type (e.g. downloads). */
void fh_route_bytes(const char *method, const char *path, long status,
                    const void *data, size_t len, int times);
/* SSE answer: n data strings delivered as events. */
void fh_route_sse(const char *path, const char *const *datas, size_t n,
                  long status, int rc);

/* Cancel the running call once `n` more requests have been answered. */
void fh_cancel_after(int n);
/* ABI 1.2: the call's deadline (monotonic ms; 0: none) that
 * call_deadline_ms returns. Reset by fh_reset. */
void fh_set_deadline_ms(uint64_t ms);

/*
 * A simulated clock (on: from now; off: the system's again) for the
 * helpers (rlmcp_h_now_ms, rlmcp_h_wall_ms, rlmcp_h_nap_ms): time goes on
 * as it really does, and what a nap, api->sleep_ms or a request a route
 * answers RLMCP_ETIMEDOUT (its timeout_ms) would take is added at once, so
 * timeouts and clean-up times pass without a test waiting for them.
 */
void fh_use_fake_clock(bool on);

/* Arguments a tool must refuse, and what its message must name. */
struct fh_bad_call {
    const char *args;
    const char *says;
};
/*
 * Call tool (fh_reset before each) with each of the arguments it must
 * refuse: an invalid_argument error naming says, and no request sent.
 * NULL when all are; else what happened instead for the first that is not
 * (malloc'd), for the test's fail_msg("%s", ...).
 */
char *fh_call_refusals(const char *tool, const struct fh_bad_call *bad,
                       size_t n);

/*
 * Call a tool the way the host does: the arguments (NULL: none) are
 * validated against the tool's input schema by the host's validator
 * (host/tools/schema.c) and a mismatch is answered with the host's
 * invalid_argument error without running the handler; a result of a tool
 * with an outputSchema must match it (else an "internal" error, as the
 * host answers). Returns the handler's return code (RLMCP_OK when the
 * host answered), RLMCP_EINVAL for arguments that are not JSON.
 */
int fh_call(const char *tool, const char *args_json);

/* Recorded requests. */
/*
 * A task op ("start", "get", "wait" or "cancel") of tool's rlmcp_task_def,
 * run as the host runs ops: args as given, no schema checks.
 * RLMCP_ENOTFOUND when the tool has no such op.
 */
int fh_call_op(const char *tool, const char *op, const char *args_json);

size_t fh_request_count(void);
const struct fh_request *fh_request_at(size_t i);
/* The first/last request with this method and path prefix, or NULL. */
const struct fh_request *fh_find_request(const char *method,
                                         const char *path_prefix);
const struct fh_request *fh_find_last_request(const char *method,
                                              const char *path_prefix);
size_t fh_count_requests(const char *method, const char *path_prefix);
/* The sleep_ms pauses the plugin asked for since fh_reset (not slept:
 * time is not simulated); fh_sleep_at(i) is 0 past the first 64. */
size_t fh_sleep_count(void);
uint32_t fh_sleep_at(size_t i);
/* A request's body parsed (owned by the fake host until fh_reset). */
cJSON *fh_request_json(const struct fh_request *r);

/* Recorded result. */
cJSON *fh_result(void);           /* structuredContent, or NULL */
const char *fh_result_text(void); /* concatenated text blocks, or "" */
/* Content blocks added with result_content (images...), in order. */
size_t fh_content_count(void);
const cJSON *fh_content_at(size_t i);
const char *fh_error_code(void); /* NULL when no error was set */
const char *fh_error_message(void);
const char *fh_error_remedy(void);
size_t fh_progress_count(void);
const char *fh_progress_message(size_t i);
double fh_progress_value(size_t i);

/*
 * ABI 1.1 tunnel services. runloop_tunnel_request is routed through the
 * same table with the path "tunnel/<port><path>" (e.g. fh_route("GET",
 * "tunnel/13/pty/s1*", 200, ...)). runloop_pty_exchange answers from a
 * script of exchanges, used in order (the last one repeats): output chunks
 * delivered to on_output, then the result fields and return code.
 */
struct fh_pty_script {
    const char *const *chunks; /* NUL-terminated chunks, n_chunks of them */
    size_t n_chunks;
    int rc;              /* return code (RLMCP_OK, RLMCP_EHTTP...) */
    long upgrade_status; /* set on the exchange */
    int close_code;
    bool quiet;
};
void fh_pty_script_add(const struct fh_pty_script *sc);

/* What the plugin passed to runloop_pty_exchange. */
struct fh_pty_record {
    char *connect_url;
    char *input; /* NUL-terminated copy */
    size_t input_len;
    uint32_t quiet_ms, max_wait_ms;
    char *tunnel_key, *tunnel_token;
    unsigned port;
    /* ABI 1.6 (fh_use_ws): the exchange went through runloop_ws_*; input
     * is everything sent; the code it was closed with (1001: left open,
     * closed by the host); o->max_message. */
    bool via_ws;
    int ws_close_code;
    size_t max_message;
};
size_t fh_pty_count(void);
const struct fh_pty_record *fh_pty_at(size_t i);

/* Before fh_load: present an ABI 1.0 host (table without the 1.1
 * services, abi_minor 0). Reset by fh_unload. */
void fh_use_abi_1_0(bool on);

/*
 * Before fh_load: offer the ABI 1.6 WebSocket services (runloop_ws_*). Off
 * by default, so a plugin that falls back to runloop_pty_exchange (pty)
 * keeps its 1.1 path in tests that do not ask; reset by fh_unload. They
 * play the PTY script too: runloop_ws_open takes the next script (a
 * non-OK rc fails the open with its upgrade_status), runloop_ws_recv hands
 * out its chunks as binary messages, then the server's close with
 * close_code, or, when that is 0, RLMCP_ETIMEDOUT (the output went
 * quiet). Each open adds a record (fh_pty_at) whose input is what was
 * sent. Handles a handler leaves open are closed when it returns.
 */
void fh_use_ws(bool on);
/* How many handles the last fh_call left open (the fake host closed them). */
size_t fh_ws_left(void);

/* exposed_tool_name answers NULL for tool (a deployment hiding it) until
 * fh_reset. */
void fh_hide_tool(const char *tool);

/* The services table (for tests of helpers without a plugin). */
const struct rlmcp_host_api *fh_api(void);
rlmcp_call *fh_call_handle(void);

#endif
