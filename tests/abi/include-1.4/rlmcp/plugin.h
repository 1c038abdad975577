/*
 * rlmcp/plugin.h - the runloop-mcp plugin ABI.
 *
 * A plugin is a shared object that exports exactly one symbol,
 * rlmcp_plugin_descriptor(), written by RLMCP_PLUGIN_DEFINE(). The host reads
 * the descriptor's version fields before it runs any plugin code, then calls
 * init() with the host services table. Everything a plugin does with the
 * outside world (registering tools, logging, reporting progress, talking to
 * the Runloop API) goes through that table: plugins link against nothing of
 * the host, never see API keys and never touch libcurl, threads or signals.
 *
 * Stability: within major version 1 every struct in this file only grows at
 * its end, and the services table only gains entries at its end. A plugin
 * built against 1.N loads in every host 1.M with M >= N. See sdk/ABI.md.
 *
 * General ownership rules (each function repeats the part that applies):
 *  1. Everything a plugin passes to the host is copied before the call
 *     returns; the plugin may free or reuse its buffers at once.
 *  2. Everything the host passes to a plugin is borrowed, for the lifetime
 *     stated on the function. Copy it to keep it longer.
 *  3. Host objects handed out to keep have a named free function in the
 *     services table (http_resp_free, free). Never free host memory with
 *     the C library's free(), and never hand plugin memory to api->free().
 *
 * General threading rules:
 *  - init() and shutdown() run on the host's main thread, one plugin at a
 *    time, in deployment order (shutdown in reverse), never while a handler
 *    runs.
 *  - Handlers run on host worker threads and may run concurrently, also for
 *    the same tool, unless the tool sets RLMCP_TOOL_SERIAL.
 *  - Call-scope services may be used from any thread, but only while the
 *    handler for that call is running. A rlmcp_call pointer is invalid once
 *    the handler returns.
 *
 * JSON crosses the boundary as UTF-8 text, never as parser objects.
 */
#ifndef RLMCP_PLUGIN_H
#define RLMCP_PLUGIN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RLMCP_ABI_MAJOR 1
#define RLMCP_ABI_MINOR 4

/*
 * A plugin that wants to load in older 1.x hosts defines
 * RLMCP_TARGET_ABI_MINOR to the oldest minor it supports and guards newer
 * services with RLMCP_API_HAS().
 */
#ifndef RLMCP_TARGET_ABI_MINOR
#define RLMCP_TARGET_ABI_MINOR RLMCP_ABI_MINOR
#endif

#if defined(__GNUC__)
#define RLMCP_EXPORT __attribute__((visibility("default")))
#define RLMCP_PRINTF(fmt_idx, arg_idx) \
    __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define RLMCP_EXPORT
#define RLMCP_PRINTF(fmt_idx, arg_idx)
#endif

/* Return codes: 0 is success, failures are negative. */
enum rlmcp_status {
    RLMCP_OK = 0,
    RLMCP_EINVAL = -1,     /* an argument is invalid */
    RLMCP_ENOMEM = -2,     /* out of memory */
    RLMCP_ESTATE = -3,     /* wrong phase, e.g. register_tool after init */
    RLMCP_ENOTFOUND = -4,  /* no such item */
    RLMCP_ECANCELLED = -5, /* the call was cancelled by the client */
    RLMCP_ETIMEDOUT = -6,  /* a time limit was hit */
    RLMCP_EHTTP = -7,      /* transport failure: no HTTP status received */
    RLMCP_EVERSION = -8,   /* struct or ABI version not understood */
    RLMCP_ENOTSUP = -9,    /* the host or client does not offer this */
    RLMCP_EEXIST = -10,    /* the name is already taken */
    RLMCP_EINTERNAL = -11  /* anything else; the host logged details */
};

enum rlmcp_log_level {
    RLMCP_LOG_DEBUG = 0,
    RLMCP_LOG_INFO = 1,
    RLMCP_LOG_NOTICE = 2,
    RLMCP_LOG_WARNING = 3,
    RLMCP_LOG_ERROR = 4,
    RLMCP_LOG_CRITICAL = 5,
    RLMCP_LOG_ALERT = 6,
    RLMCP_LOG_EMERGENCY = 7
};

/* Opaque handles. */
typedef struct rlmcp_plugin rlmcp_plugin; /* valid from init to shutdown */
typedef struct rlmcp_call rlmcp_call;     /* valid while its handler runs */

struct rlmcp_host_api;

/* ------------------------------------------------------------------------ */
/* The descriptor                                                           */
/* ------------------------------------------------------------------------ */

/*
 * init: called once on the main thread after the version checks.
 *   Register tools, resources and prompts here, read config, allocate state.
 *   Return RLMCP_OK, or a negative code after api->set_error() explaining
 *   why; the host then unregisters everything the plugin registered and
 *   unloads it without calling shutdown.
 *   Ownership: api is borrowed until shutdown returns. *state_out is the
 *   plugin's own; it comes back in shutdown.
 * shutdown: called once on the main thread after the last handler returned.
 *   Free the state. May be NULL when there is nothing to free.
 */
typedef int (*rlmcp_init_fn)(rlmcp_plugin *self,
                             const struct rlmcp_host_api *api,
                             void **state_out);
typedef void (*rlmcp_shutdown_fn)(rlmcp_plugin *self, void *state);

struct rlmcp_plugin_desc {
    uint32_t abi_major;      /* RLMCP_ABI_MAJOR when the plugin was built */
    uint32_t abi_minor;      /* RLMCP_TARGET_ABI_MINOR */
    size_t struct_size;      /* sizeof(struct rlmcp_plugin_desc) */
    const char *name;        /* [a-z0-9_]+, equals the deployment's name */
    const char *version;     /* the plugin's own version, informational */
    const char *description; /* one line */
    rlmcp_init_fn init;      /* required */
    rlmcp_shutdown_fn shutdown; /* optional */
    /* 1.x: append only */
};

/* The one exported symbol. Returns static const data; never NULL. */
typedef const struct rlmcp_plugin_desc *(*rlmcp_descriptor_fn)(void);
#define RLMCP_DESCRIPTOR_SYMBOL "rlmcp_plugin_descriptor"

#define RLMCP_PLUGIN_DEFINE(name_, version_, description_, init_, shutdown_) \
    RLMCP_EXPORT const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(  \
        void);                                                              \
    const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(void)          \
    {                                                                       \
        static const struct rlmcp_plugin_desc desc = {                     \
            .abi_major = RLMCP_ABI_MAJOR,                                   \
            .abi_minor = RLMCP_TARGET_ABI_MINOR,                            \
            .struct_size = sizeof(struct rlmcp_plugin_desc),                \
            .name = (name_),                                                \
            .version = (version_),                                          \
            .description = (description_),                                  \
            .init = (init_),                                                \
            .shutdown = (shutdown_),                                        \
        };                                                                  \
        return &desc;                                                       \
    }

/* ------------------------------------------------------------------------ */
/* Tools, resources, prompts                                                */
/* ------------------------------------------------------------------------ */

/*
 * A tool handler. args_json is the call's arguments object, already
 * validated against the tool's input schema (parameter aliases already
 * mapped back to the names the plugin registered). Build the result with
 * the result_* services, then return RLMCP_OK. A business failure the model
 * should see is api->result_error() followed by RLMCP_OK. A negative return
 * means a bug or resource failure: the host logs it and answers with a
 * generic internal error. After cancellation return RLMCP_ECANCELLED; the
 * host then sends nothing.
 * Ownership: args_json is borrowed until the handler returns.
 * Threads: any worker thread; concurrently unless RLMCP_TOOL_SERIAL.
 */
typedef int (*rlmcp_tool_fn)(rlmcp_call *call, const char *args_json,
                             size_t args_len, void *user_data);

/* Tool flags: things the host acts on. */
#define RLMCP_TOOL_SERIAL (1u << 0) /* never run two calls of it at once */
/* Added after ABI 1.3 (older hosts ignore it): a call may wait long
 * (executions, builds, PTY exchanges). The host runs such calls on their
 * own threads, so short calls never queue behind them. */
#define RLMCP_TOOL_LONG (1u << 1)

/*
 * Added in ABI 1.4: how a tool runs as an MCP task, when the client asks
 * for one (2025-11-25 tools/call params.task; the 2026-07-28 tasks
 * extension). The work must live outside the host process (e.g. a Runloop
 * execution): start returns a small handle naming it, and get, wait and
 * cancel find the work again from that handle alone. The host signs the
 * handle into the task id, so a task outlives the client's connection and
 * the host process, and no task state is kept in host memory.
 *
 * Each op is an ordinary tool handler, run as a call of the tool with the
 * caller's credential, its own deadline and the tool's user_data:
 *  start   args: the tool's arguments (validated). Start the work and
 *          return at once with result_json(handle): an object of string
 *          members, at most 512 bytes serialised (e.g. {"devbox_id":...,
 *          "execution_id":...}). result_error fails the call as the tool
 *          itself would; no task is created.
 *  get     args: the handle. The work's state without waiting, as the
 *          result the tool itself returns. Its structured "status" is
 *          "queued" or "running" while the work goes on, "killed" or
 *          "cancelled" once stopped by cancel, anything else when done.
 *          result_error: the work can no longer be found (task failed).
 *  wait    args: the handle plus "timeout_seconds" (integer). Like get,
 *          after waiting up to that long for the work to end.
 *  cancel  args: the handle. Stop the work and confirm that it stopped:
 *          result_json {"status":"killed"}, or {"status":<final status>,
 *          "already_done":true} when it had ended before; result_error
 *          when the stop cannot be confirmed.
 */
struct rlmcp_task_def {
    size_t struct_size; /* sizeof; use RLMCP_TASK_DEF_INIT */
    rlmcp_tool_fn start;
    rlmcp_tool_fn get;
    rlmcp_tool_fn wait;
    rlmcp_tool_fn cancel;
    /* 1.x: append only */
};
#define RLMCP_TASK_DEF_INIT {.struct_size = sizeof(struct rlmcp_task_def)}

struct rlmcp_tool_def {
    size_t struct_size;         /* sizeof; use RLMCP_TOOL_DEF_INIT */
    const char *name;           /* [A-Za-z0-9_.-]{1,128}, unique host-wide */
    const char *title;          /* optional display name */
    const char *description;    /* required */
    const char *input_schema_json;  /* required; a JSON Schema object */
    const char *output_schema_json; /* optional; then result_json is due */
    const char *annotations_json;   /* optional ToolAnnotations object */
    uint32_t flags;             /* RLMCP_TOOL_* */
    uint32_t timeout_ms;        /* 0: the deployment's default */
    rlmcp_tool_fn handler;      /* required */
    void *user_data;            /* handed to every call */
    void (*user_data_free)(void *user_data); /* optional, after shutdown */
    /* Added in ABI 1.4: optional; the tool may run as an MCP task. The
     * struct is copied at registration. */
    const struct rlmcp_task_def *task;
    /* 1.x: append only */
};
#define RLMCP_TOOL_DEF_INIT {.struct_size = sizeof(struct rlmcp_tool_def)}

/*
 * A resource read handler: add one or more contents with
 * api->resource_contents(), then return RLMCP_OK. Return RLMCP_ENOTFOUND for
 * an unknown URI (the client gets "resource not found").
 * Hosts after ABI 1.3 also take, in a read handler: api->result_error(),
 * answered as a JSON-RPC error (code not_found: resource not found;
 * invalid_argument or too_large: invalid params; else internal error) with
 * the message, and the code and remedy in its data; and api->result_json(),
 * which sets the read result's _meta. Older hosts answer RLMCP_ESTATE.
 * Ownership: uri is borrowed until the handler returns.
 * Threads: any worker thread, concurrently.
 */
typedef int (*rlmcp_resource_fn)(rlmcp_call *call, const char *uri,
                                 void *user_data);

/* The host re-reads a subscribed resource and sends
 * notifications/resources/updated when the result (contents and _meta)
 * changed. */
#define RLMCP_RESOURCE_SUBSCRIBABLE (1u << 0)

struct rlmcp_resource_def {
    size_t struct_size;      /* sizeof; use RLMCP_RESOURCE_DEF_INIT */
    const char *uri;         /* a fixed URI, or NULL when uri_template set */
    const char *uri_template; /* RFC 6570 level 1, e.g. devbox://{id}/log */
    const char *name;        /* required */
    const char *title;       /* optional */
    const char *description; /* optional */
    const char *mime_type;   /* optional */
    uint32_t flags;          /* RLMCP_RESOURCE_* */
    rlmcp_resource_fn read;  /* required */
    void *user_data;
    void (*user_data_free)(void *user_data);
    /* 1.x: append only */
};
#define RLMCP_RESOURCE_DEF_INIT \
    {.struct_size = sizeof(struct rlmcp_resource_def)}

/*
 * A prompt handler: add messages with api->prompt_message(), return
 * RLMCP_OK. args_json is an object of string values.
 * Ownership: args_json is borrowed until the handler returns.
 * Threads: any worker thread, concurrently.
 */
typedef int (*rlmcp_prompt_fn)(rlmcp_call *call, const char *args_json,
                               size_t args_len, void *user_data);

struct rlmcp_prompt_def {
    size_t struct_size;         /* sizeof; use RLMCP_PROMPT_DEF_INIT */
    const char *name;           /* unique host-wide */
    const char *title;          /* optional */
    const char *description;    /* required */
    const char *arguments_json; /* optional: [{name,description,required}] */
    rlmcp_prompt_fn get;        /* required */
    void *user_data;
    void (*user_data_free)(void *user_data);
    /* 1.x: append only */
};
#define RLMCP_PROMPT_DEF_INIT {.struct_size = sizeof(struct rlmcp_prompt_def)}

/* ------------------------------------------------------------------------ */
/* The Runloop HTTP client                                                  */
/* ------------------------------------------------------------------------ */

/* One part of a multipart/form-data body. */
struct rlmcp_http_part {
    size_t struct_size;       /* sizeof(struct rlmcp_http_part) */
    const char *name;         /* form field name, e.g. "file" */
    const char *filename;     /* optional; makes it a file part */
    const char *content_type; /* optional */
    const void *data;
    size_t len;
};

/*
 * A request to the Runloop API. The host adds the base URL, the caller's
 * key, User-Agent, Content-Type (application/json when body is set),
 * retries with backoff (for methods and statuses the Runloop SDK retries),
 * the timeout and cancellation.
 */
struct rlmcp_http_req {
    size_t struct_size;    /* sizeof; use RLMCP_HTTP_REQ_INIT */
    const char *method;    /* "GET" or "POST" */
    const char *path;      /* e.g. "/v1/devboxes?limit=10", URL-encoded */
    const char *body;      /* optional JSON body */
    size_t body_len;
    const char *accept;    /* optional Accept; default application/json */
    const struct rlmcp_http_part *parts; /* optional multipart body */
    size_t n_parts;
    uint32_t timeout_ms;   /* per attempt; 0: the host default (30 s) */
    int32_t max_retries;   /* <0: host default (5); 0: never retry */
    size_t max_body;       /* response bytes to keep; 0: host default */
    uint32_t flags;        /* RLMCP_HTTP_* */
    /* 1.x: append only */
};

/*
 * A clean-up request (e.g. killing the remote execution of a cancelled
 * call): it is sent even when the call is already cancelled, bounded by its
 * own timeout, and not retried past that.
 */
#define RLMCP_HTTP_IGNORE_CANCEL (1u << 0)

#define RLMCP_HTTP_REQ_INIT \
    {.struct_size = sizeof(struct rlmcp_http_req), .max_retries = -1}

/* A response. Freed only with api->http_resp_free(). */
struct rlmcp_http_resp {
    size_t struct_size;       /* sizeof as the host built it */
    long status;              /* HTTP status */
    const char *content_type; /* may be NULL */
    const char *body;         /* NUL-terminated for convenience */
    size_t body_len;          /* bytes, without the NUL */
    bool truncated;           /* body exceeded max_body */
    /* 1.x: append only */
};

/*
 * One server-sent event. Return 0 to keep reading, non-zero to stop.
 * Ownership: every pointer is borrowed until the callback returns.
 */
typedef int (*rlmcp_sse_fn)(void *user, const char *event, const char *id,
                            const char *data, size_t data_len);

/*
 * Added in ABI 1.1: a devbox's tunnel, as the API returns it
 * (create_pty_tunnel's PtyTunnelView, or DevboxView.tunnel), plus the port
 * to reach. For runloop_tunnel_request and runloop_pty_exchange.
 */
struct rlmcp_tunnel {
    size_t struct_size;     /* sizeof; use RLMCP_TUNNEL_INIT */
    const char *tunnel_key; /* [A-Za-z0-9_-]{1,512} */
    const char *auth_token; /* the tunnel's token; NULL for open tunnels */
    uint16_t port;          /* port inside the devbox, 1-65535; PTY: 13 */
    /* 1.x: append only */
};
#define RLMCP_TUNNEL_INIT {.struct_size = sizeof(struct rlmcp_tunnel)}

/*
 * Added in ABI 1.1: one PTY WebSocket exchange (runloop_pty_exchange).
 * Output bytes are raw terminal output; return non-zero to stop reading.
 */
typedef int (*rlmcp_output_fn)(void *user, const void *data, size_t n);

struct rlmcp_pty_exchange {
    size_t struct_size;      /* sizeof; use RLMCP_PTY_EXCHANGE_INIT */
    const char *connect_url; /* server-relative WebSocket path, as
                                PtyConnectView.connect_url gives it */
    const void *input;       /* bytes to type; may be NULL when len is 0 */
    size_t input_len;        /* at most 1 MiB */
    uint32_t quiet_ms;       /* end after this much silence; 0: 500 */
    uint32_t max_wait_ms;    /* end at the latest; 0: 30000 */
    rlmcp_output_fn on_output; /* required */
    void *user;
    /* Set by the host: */
    long upgrade_status;     /* HTTP status of a refused upgrade, else 0 */
    int close_code;          /* the server's close code (4000: the shell
                                exited, 4001: ping timeout), 0 if we closed */
    bool quiet;              /* ended because the output was quiet */
    /* 1.x: append only */
};
#define RLMCP_PTY_EXCHANGE_INIT \
    {.struct_size = sizeof(struct rlmcp_pty_exchange)}

/* ------------------------------------------------------------------------ */
/* The host services table                                                  */
/* ------------------------------------------------------------------------ */

struct rlmcp_host_api {
    size_t size;            /* sizeof as built into the host */
    uint32_t abi_major;
    uint32_t abi_minor;
    const char *host_version;

    /* --- plugin scope: init only -------------------------------------- */

    /*
     * Register a tool. The host validates the name, both schemas and the
     * annotations and fails with RLMCP_EINVAL (and a log line saying what
     * is wrong) or RLMCP_EEXIST.
     * Ownership: def and its strings are copied. user_data passes to the
     * host only on RLMCP_OK; it is then freed with user_data_free after
     * shutdown. Threads: main thread, inside init only (else RLMCP_ESTATE).
     */
    int (*register_tool)(rlmcp_plugin *self, const struct rlmcp_tool_def *def);

    /* Same rules as register_tool, for resources and prompts. */
    int (*register_resource)(rlmcp_plugin *self,
                             const struct rlmcp_resource_def *def);
    int (*register_prompt)(rlmcp_plugin *self,
                           const struct rlmcp_prompt_def *def);

    /*
     * Record why init is failing; the host logs it with the plugin's path.
     * Ownership: the text is copied. Threads: main thread, inside init.
     */
    void (*set_error)(rlmcp_plugin *self, const char *fmt, ...)
        RLMCP_PRINTF(2, 3);

    /* --- plugin scope: init to shutdown, any thread ------------------- */

    /*
     * The plugin's own `config:` section of the deployment as a JSON object
     * ("{}" when absent). *len_out may be NULL.
     * Ownership: borrowed until shutdown returns. Threads: any.
     */
    const char *(*config_json)(rlmcp_plugin *self, size_t *len_out);

    /*
     * Log to the host's log (stderr), prefixed with the plugin's name. Never
     * log secrets. Ownership: the text is copied. Threads: any.
     */
    void (*log)(rlmcp_plugin *self, int level, const char *fmt, ...)
        RLMCP_PRINTF(3, 4);
    void (*vlog)(rlmcp_plugin *self, int level, const char *fmt, va_list ap);

    /* --- memory: any thread, any time --------------------------------- */

    /* Ownership: the caller owns the result; free it with api->free. */
    void *(*alloc)(size_t n);
    void *(*calloc)(size_t n, size_t size);
    char *(*strdup)(const char *s);
    void (*free)(void *p);

    /* Text for a RLMCP_* code; static, never NULL. Threads: any. */
    const char *(*strerror)(int code);

    /* --- call scope: while the handler runs, any thread --------------- */

    /*
     * Append a text content block to the result.
     * Ownership: copied. Threads: any, while the handler runs.
     */
    int (*result_text)(rlmcp_call *call, const char *text);

    /*
     * Append any MCP content block given as a JSON object (image, audio,
     * resource, resource_link, text with annotations). RLMCP_EINVAL when it
     * is not an object with a string "type".
     * Ownership: copied. Threads: any, while the handler runs.
     */
    int (*result_content)(rlmcp_call *call, const char *json, size_t len);

    /*
     * Set structuredContent (a JSON object). When the tool declared an
     * output schema the host checks it; when the handler added no content
     * the host mirrors it as a text block.
     * Ownership: copied. Threads: any, while the handler runs.
     */
    int (*result_json)(rlmcp_call *call, const char *json, size_t len);

    /*
     * Make the result an error the model sees: isError true and the text
     * {"error":{"code":code,"message":...,"remedy":remedy}}. code is one of
     * the documented error codes (docs/errors.md), e.g. "not_found";
     * remedy tells the agent what to do next and may be NULL. Drops any
     * structuredContent and content set before; content blocks a tool adds
     * after it follow the error block (e.g. exec's {"result": …} with the
     * output of a command that timed out; hosts before this change refuse
     * them with RLMCP_ESTATE).
     * Ownership: copied. Threads: any, while the handler runs.
     */
    int (*result_error)(rlmcp_call *call, const char *code, const char *remedy,
                        const char *fmt, ...) RLMCP_PRINTF(4, 5);

    /*
     * Report progress. A no-op (RLMCP_OK) when the client sent no
     * progressToken. progress must grow; total < 0 means unknown; message
     * may be NULL. The host may coalesce bursts.
     * Ownership: copied. Threads: any, while the handler runs.
     */
    int (*progress)(rlmcp_call *call, double progress, double total,
                    const char *message);

    /* True once the client cancelled the call or its timeout passed. */
    bool (*is_cancelled)(rlmcp_call *call);

    /*
     * Sleep up to ms milliseconds; returns RLMCP_ECANCELLED early when the
     * call is cancelled, else RLMCP_OK. Use it for polling loops.
     */
    int (*sleep_ms)(rlmcp_call *call, uint32_t ms);

    /*
     * Send a log message to the client (notifications/message) if the
     * client's log level lets it through; also logged on the host.
     * Ownership: copied. Threads: any, while the handler runs.
     */
    void (*call_log)(rlmcp_call *call, int level, const char *fmt, ...)
        RLMCP_PRINTF(3, 4);

    /*
     * Call the Runloop API. Returns RLMCP_OK with *resp_out set whenever an
     * HTTP status arrived (also 4xx/5xx: check resp->status), or
     * RLMCP_EHTTP (unreachable; a message was logged), RLMCP_ECANCELLED,
     * RLMCP_ETIMEDOUT, RLMCP_EINVAL.
     * Ownership: req is copied; *resp_out is the plugin's, freed with
     * api->http_resp_free. Threads: any, while the handler runs; blocks.
     */
    int (*runloop_request)(rlmcp_call *call, const struct rlmcp_http_req *req,
                           struct rlmcp_http_resp **resp_out);

    /* Free a response. NULL is fine. Threads: any. */
    void (*http_resp_free)(struct rlmcp_http_resp *resp);

    /*
     * Read a Runloop server-sent-event stream (req->accept defaults to
     * text/event-stream), calling on_event for each event until the stream
     * ends, on_event returns non-zero, the call is cancelled or the timeout
     * passes. A non-2xx status returns RLMCP_OK with *status_out set and no
     * events. status_out may be NULL.
     * Ownership: req is copied. Threads: any, while the handler runs; blocks.
     */
    int (*runloop_sse)(rlmcp_call *call, const struct rlmcp_http_req *req,
                       rlmcp_sse_fn on_event, void *user, long *status_out);

    /*
     * Send a request to the client (e.g. "sampling/createMessage",
     * "elicitation/create") and wait for its answer. Returns RLMCP_OK with
     * the JSON result in *result_out, RLMCP_ENOTSUP when the client did not
     * declare the capability, RLMCP_EINVAL with the JSON-RPC error object in
     * *result_out when the client answered with an error, or
     * RLMCP_ECANCELLED / RLMCP_ETIMEDOUT.
     * In a 2026-07-28 (stateless) call the client is not asked at once: a
     * request it answered in an earlier round returns its answer; any other
     * returns RLMCP_ECANCELLED and the call ends with an InputRequiredResult
     * asking for it, after which the client calls again and the handler
     * runs again from the start. So make every request before acting on
     * any answer, and name each with params._meta["rlmcp/input-key"] (the
     * key the client answers under; default "input-N"; never sent to the
     * client). A handler that fails after RLMCP_ENOTSUP answers -32021.
     * Ownership: params copied; *result_out is the plugin's, freed with
     * api->free. Threads: any, while the handler runs; blocks.
     */
    int (*client_request)(rlmcp_call *call, const char *method,
                          const char *params_json, uint32_t timeout_ms,
                          char **result_out);

    /*
     * In a resource read handler: add one contents item. Exactly one of
     * text (UTF-8) or blob (bytes, base64-encoded by the host) is used:
     * is_blob selects. mime_type may be NULL.
     * Ownership: copied. Threads: any, while the handler runs.
     */
    int (*resource_contents)(rlmcp_call *call, const char *uri,
                             const char *mime_type, const void *data,
                             size_t len, bool is_blob);

    /*
     * In a prompt handler: add one message. role is "user" or "assistant";
     * content_json is one MCP content block object.
     * Ownership: copied. Threads: any, while the handler runs.
     */
    int (*prompt_message)(rlmcp_call *call, const char *role,
                          const char *content_json);

    /*
     * The plugin a call belongs to, e.g. for api->log from a handler.
     * Threads: any, while the handler runs.
     */
    rlmcp_plugin *(*call_plugin)(rlmcp_call *call);

    /*
     * Added in ABI 1.1. Send a request to a port of a devbox's tunnel
     * instead of the API base URL: the host builds the tunnel origin for
     * its backend (cloud: https://{port}-{tunnel_key}.tunnel.{domain},
     * {domain} being the API host without a leading "api."; local engine:
     * devboxd's tunnel listener) and sends `Authorization: Bearer
     * <auth_token>` (none when auth_token is NULL). The API key never goes
     * to a tunnel. req is used as for runloop_request (path, body, accept,
     * timeout, max_body, flags), except retries: only connection failures
     * and 502/503/504 are retried (req->max_retries < 0: 4 retries, backoff
     * min(250 ms * 2^n, 2 s)), as the official clients do for tunnels that
     * are still being routed. Same return codes as runloop_request.
     * Ownership: t and req are copied; *resp_out is the plugin's, freed
     * with api->http_resp_free. Threads: any, while the handler runs;
     * blocks.
     */
    int (*runloop_tunnel_request)(rlmcp_call *call,
                                  const struct rlmcp_tunnel *t,
                                  const struct rlmcp_http_req *req,
                                  struct rlmcp_http_resp **resp_out);

    /*
     * Added in ABI 1.1. One bounded exchange on a PTY session's WebSocket
     * (the data plane at x->connect_url on the tunnel of t, ws:// or wss://
     * as the origin is http or https, same Authorization as above): connect,
     * send x->input as one binary frame (nothing when input_len is 0), then
     * hand every output frame to x->on_output until the output was quiet
     * for x->quiet_ms, x->max_wait_ms passed since the connect, the server
     * closed, on_output returned non-zero or the call was cancelled; then
     * close normally (1000), which keeps the session alive on the server.
     * Pings are answered. An upgrade refused with 502/503/504 (tunnel not
     * routed yet) is retried like runloop_tunnel_request does. Returns
     * RLMCP_OK when connected (also when the server closed: see
     * x->close_code), RLMCP_EHTTP when the upgrade was refused
     * (x->upgrade_status holds the status, e.g. 400 when another client is
     * attached) or the connection failed, RLMCP_ECANCELLED, RLMCP_EINVAL
     * (bad fields; a message was logged).
     * Ownership: t and the input are copied or used only during the call;
     * output bytes are borrowed until on_output returns; x stays the
     * plugin's and the host writes its result fields. Threads: any, while
     * the handler runs; blocks; on_output runs on the calling thread.
     */
    int (*runloop_pty_exchange)(rlmcp_call *call, const struct rlmcp_tunnel *t,
                                struct rlmcp_pty_exchange *x);

    /*
     * Added in ABI 1.2. The moment the call must have answered by, in
     * CLOCK_MONOTONIC milliseconds (clock_gettime(CLOCK_MONOTONIC) in ms,
     * as rlmcp_h_now_ms gives it); 0 when it has none. It starts when the
     * request was read and lasts the tool's timeout_seconds argument when
     * the call passed one, else the tool's timeout. The host already cuts
     * every runloop_* request, retry and backoff to it (clean-up requests
     * flagged RLMCP_HTTP_IGNORE_CANCEL excepted) and answers with a
     * timeout error when it passes; a tool that must stop remote work
     * keeps time for that before it. Threads: any, while the handler runs.
     */
    uint64_t (*call_deadline_ms)(rlmcp_call *call);

    /*
     * Added in ABI 1.2. Why this call's last runloop_* request failed
     * (RLMCP_EHTTP, RLMCP_ETIMEDOUT): one line naming the method and URL
     * and the cause, e.g. that the backend is down (circuit breaker) or
     * that a Retry-After did not fit the deadline; never a key. "" after
     * a success. Ownership: borrowed until the call's next request.
     * Threads: the handler's thread.
     */
    const char *(*call_last_error)(rlmcp_call *call);

    /*
     * Added in ABI 1.3. The name under which this deployment exposes the
     * tool registered as `tool` (by any plugin), after aliases; NULL when
     * the deployment hides it (not selected, or its plugin not loaded).
     * Text a tool returns that names another tool (a marker saying where
     * the rest of an output is, a hint in a result) asks here first, so it
     * never sends the agent to a tool it cannot call. Errors need not:
     * the host rewrites result_error's message and remedy itself, and
     * tool descriptions when it applies the deployment's selection.
     * Ownership: the string is the host's, valid until shutdown.
     * Threads: any, while the handler runs.
     */
    const char *(*exposed_tool_name)(rlmcp_call *call, const char *tool);

    /*
     * Added in ABI 1.3. The exposed name of parameter `param` of the tool
     * registered as `tool` (param itself when not renamed); NULL when the
     * tool is hidden. Ownership and threads as exposed_tool_name.
     */
    const char *(*exposed_param_name)(rlmcp_call *call, const char *tool,
                                      const char *param);

    /* 1.x: append only, each with an "Added in ABI 1.N" comment. */
};

/*
 * True when the host's table has service fn and it is set. Use it for every
 * service newer than the plugin's RLMCP_TARGET_ABI_MINOR.
 */
#define RLMCP_API_HAS(api, fn)                                              \
    (offsetof(struct rlmcp_host_api, fn) + sizeof((api)->fn) <=            \
         (api)->size &&                                                     \
     (api)->fn != NULL)

#ifdef __cplusplus
}
#endif

#endif /* RLMCP_PLUGIN_H */
