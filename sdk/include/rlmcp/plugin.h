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
 * built against 1.N loads in every host 1.M with M >= N. A superseded
 * service is marked "Deprecated in ABI 1.N" and keeps working. See
 * sdk/ABI.md (sizes of every sized struct per minor, rules for the next).
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
 *    the handler returns. (A WebSocket handle, runloop_ws_*, is used on the
 *    thread that opened it.)
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
#define RLMCP_ABI_MINOR 6

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
#define RLMCP_PRINTF(fmt_idx, arg_idx)                                         \
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
    RLMCP_EINTERNAL = -11, /* anything else; the host logged details */
    RLMCP_ETOOBIG = -12    /* 1.6: a message exceeds its limit */
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
    uint32_t abi_major;         /* RLMCP_ABI_MAJOR when the plugin was built */
    uint32_t abi_minor;         /* RLMCP_TARGET_ABI_MINOR */
    size_t struct_size;         /* sizeof(struct rlmcp_plugin_desc) */
    const char *name;           /* [a-z0-9_]+, equals the deployment's name */
    const char *version;        /* the plugin's own version, informational */
    const char *description;    /* one line */
    rlmcp_init_fn init;         /* required */
    rlmcp_shutdown_fn shutdown; /* optional */
    /* 1.5: the JSON Schema (2020-12 subset of docs/schema.md) of the
     * plugin's config: section, or NULL. The host checks the deployment's
     * section against it before init and refuses the plugin with the
     * file:line:col of the offending value, so init sees only valid config
     * (defaults still apply: the schema does not fill them in). Static text
     * owned by the plugin, read by the host on the loading thread while the
     * plugin is loaded; a schema that is not valid fails the load. */
    const char *config_schema;
    /* 1.x: append only */
};

/* The one exported symbol. Returns static const data; never NULL. */
typedef const struct rlmcp_plugin_desc *(*rlmcp_descriptor_fn)(void);
#define RLMCP_DESCRIPTOR_SYMBOL "rlmcp_plugin_descriptor"

/* The descriptor of a plugin without a config schema. */
#define RLMCP_PLUGIN_DEFINE(name_, version_, description_, init_, shutdown_)   \
    RLMCP_PLUGIN_DEFINE_CONFIG(name_, version_, description_, init_,           \
                               shutdown_, NULL)

/* The descriptor, with the config section's JSON Schema (ABI 1.5). */
#define RLMCP_PLUGIN_DEFINE_CONFIG(name_, version_, description_, init_,       \
                                   shutdown_, config_schema_)                  \
    RLMCP_EXPORT const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(      \
        void);                                                                 \
    const struct rlmcp_plugin_desc *rlmcp_plugin_descriptor(void)              \
    {                                                                          \
        static const struct rlmcp_plugin_desc desc = {                         \
            .abi_major = RLMCP_ABI_MAJOR,                                      \
            .abi_minor = RLMCP_TARGET_ABI_MINOR,                               \
            .struct_size = sizeof(struct rlmcp_plugin_desc),                   \
            .name = (name_),                                                   \
            .version = (version_),                                             \
            .description = (description_),                                     \
            .init = (init_),                                                   \
            .shutdown = (shutdown_),                                           \
            .config_schema = (config_schema_),                                 \
        };                                                                     \
        return &desc;                                                          \
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
 *          "queued" or "running" while the work goes on (hosts after
 *          ABI 1.5 also take the backend's "in_progress", "provisioning"
 *          and "building"), "killed" or "cancelled" once stopped by
 *          cancel, anything else when done. Only a done state must match
 *          the tool's output schema (hosts after 1.5; before, every get
 *          result had to).
 *          Added after ABI 1.4 (older hosts report them as done):
 *          "input_required" with "input_requests": {key: {method,
 *          params}} while the work waits for the client (an elicitation,
 *          a sampling; the client answers through update), and "failed"
 *          with "message" when the work itself broke (not a tool error:
 *          the task then fails with a JSON-RPC error inside).
 *          result_error with code not_found: the work can no longer be
 *          found (the task failed); with unavailable, timeout,
 *          rate_limited, unauthenticated, permission_denied or internal
 *          (also a negative return): the state could not be read now (the
 *          client's tasks/get fails and may be retried); with any other
 *          code: the work ended with that tool error (task completed, its
 *          result an error).
 *  wait    args: the handle plus "timeout_seconds" (integer). Like get,
 *          after waiting up to that long for the work to end or to need
 *          input.
 *  cancel  args: the handle. Stop the work and confirm that it stopped:
 *          result_json {"status":"killed"}, or {"status":<final status>,
 *          "already_done":true} when it had ended before; result_error
 *          when the stop cannot be confirmed. After ABI 1.5: result_error
 *          with code conflict when the work cannot be stopped at all (it
 *          runs to its end; 2025-11-25 refuses the cancel with -32602,
 *          2026-07-28 acknowledges it).
 *  (tasks/result in 2025-11-25, hosts after 1.5: while wait answers
 *          input_required, the host sends the input requests to the
 *          client itself and hands the answers to update, as tasks/update
 *          would in 2026-07-28.)
 *  update  (added after ABI 1.4; optional) args: the handle plus
 *          "input_responses": {key: the client's answer}. Hand the answers
 *          to the work; ignore keys it did not ask for (or no longer
 *          waits on). result_json of anything: accepted; result_error:
 *          refused (the client's tasks/update fails with the message).
 *          Without update, a task's tasks/update is accepted and ignored.
 */
struct rlmcp_task_def {
    size_t struct_size; /* sizeof; use RLMCP_TASK_DEF_INIT */
    rlmcp_tool_fn start;
    rlmcp_tool_fn get;
    rlmcp_tool_fn wait;
    rlmcp_tool_fn cancel;
    /* Added after ABI 1.4 (hosts before it refuse a def that sets them). */
    rlmcp_tool_fn update;
    uint32_t flags; /* RLMCP_TASK_* */
    /* 1.x: append only */
};
#define RLMCP_TASK_DEF_SIZE_1_4 (offsetof(struct rlmcp_task_def, update))
/* The tool runs only as a task: a call that cannot be one is refused
 * (2025-11-25 without params.task: -32601; 2026-07-28 without the tasks
 * extension: -32021). */
#define RLMCP_TASK_REQUIRED (1u << 0)
#define RLMCP_TASK_DEF_INIT                                                    \
    {                                                                          \
        .struct_size = sizeof(struct rlmcp_task_def)                           \
    }

struct rlmcp_tool_def {
    size_t struct_size;            /* sizeof; use RLMCP_TOOL_DEF_INIT */
    const char *name;              /* [A-Za-z0-9_.-]{1,128}, unique host-wide */
    const char *title;             /* optional display name */
    const char *description;       /* required */
    const char *input_schema_json; /* required; a JSON Schema object */
    const char *output_schema_json; /* optional; then result_json is due */
    const char *annotations_json;   /* optional ToolAnnotations object */
    uint32_t flags;                 /* RLMCP_TOOL_* */
    uint32_t timeout_ms;            /* 0: the deployment's default */
    rlmcp_tool_fn handler;          /* required */
    void *user_data;                /* handed to every call */
    void (*user_data_free)(void *user_data); /* optional, after shutdown */
    /* Added in ABI 1.4: optional; the tool may run as an MCP task. The
     * struct is copied at registration. */
    const struct rlmcp_task_def *task;
    /*
     * Added after ABI 1.4 (hosts before it refuse a def that sets it): the
     * argument, a number of seconds, that sets a call's time limit when the
     * call passes it (plus 5 s for clean-up after it, on hosts after this
     * note); an "integer" or "number" property of input_schema.
     * NULL: "timeout_seconds" when the schema has such a property (what
     * every host did before), else none. "": none.
     */
    const char *timeout_arg;
    /* 1.x: append only */
};
#define RLMCP_TOOL_DEF_INIT                                                    \
    {                                                                          \
        .struct_size = sizeof(struct rlmcp_tool_def)                           \
    }

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
    size_t struct_size;       /* sizeof; use RLMCP_RESOURCE_DEF_INIT */
    const char *uri;          /* a fixed URI, or NULL when uri_template set */
    const char *uri_template; /* RFC 6570 level 1, e.g. devbox://{id}/log */
    const char *name;         /* required */
    const char *title;        /* optional */
    const char *description;  /* optional */
    const char *mime_type;    /* optional */
    uint32_t flags;           /* RLMCP_RESOURCE_* */
    rlmcp_resource_fn read;   /* required */
    void *user_data;
    void (*user_data_free)(void *user_data);
    /* 1.x: append only */
};
#define RLMCP_RESOURCE_DEF_INIT                                                \
    {                                                                          \
        .struct_size = sizeof(struct rlmcp_resource_def)                       \
    }

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
#define RLMCP_PROMPT_DEF_INIT                                                  \
    {                                                                          \
        .struct_size = sizeof(struct rlmcp_prompt_def)                         \
    }

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
    size_t struct_size; /* sizeof; use RLMCP_HTTP_REQ_INIT */
    const char *method; /* "GET" or "POST" */
    const char *path;   /* e.g. "/v1/devboxes?limit=10", URL-encoded */
    const char *body;   /* optional JSON body */
    size_t body_len;
    const char *accept; /* optional Accept; default application/json */
    const struct rlmcp_http_part *parts; /* optional multipart body */
    size_t n_parts;
    uint32_t timeout_ms; /* per attempt; 0: the host default (30 s) */
    int32_t max_retries; /* <0: host default (5); 0: never retry */
    size_t max_body;     /* response bytes to keep; 0: host default */
    uint32_t flags;      /* RLMCP_HTTP_* */
    /* 1.x: append only */
};

/*
 * A clean-up request (e.g. killing the remote execution of a cancelled
 * call): it is sent even when the call is already cancelled, bounded by its
 * own timeout, and not retried past that.
 */
#define RLMCP_HTTP_IGNORE_CANCEL (1u << 0)

#define RLMCP_HTTP_REQ_INIT                                                    \
    {                                                                          \
        .struct_size = sizeof(struct rlmcp_http_req), .max_retries = -1        \
    }

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
#define RLMCP_TUNNEL_INIT                                                      \
    {                                                                          \
        .struct_size = sizeof(struct rlmcp_tunnel)                             \
    }
/* The smallest struct_size the host takes (a 1.1 plugin's): fields appended
 * later are read only when struct_size covers them. */
#define RLMCP_TUNNEL_SIZE_1_1                                                  \
    (offsetof(struct rlmcp_tunnel, port) + sizeof(uint16_t))

/*
 * Added in ABI 1.1: one PTY WebSocket exchange (runloop_pty_exchange).
 * Output bytes are raw terminal output; return non-zero to stop reading.
 * Deprecated in ABI 1.6, with runloop_pty_exchange: use runloop_ws_*.
 */
typedef int (*rlmcp_output_fn)(void *user, const void *data, size_t n);

struct rlmcp_pty_exchange {
    size_t struct_size;        /* sizeof; use RLMCP_PTY_EXCHANGE_INIT */
    const char *connect_url;   /* server-relative WebSocket path, as
                                PtyConnectView.connect_url gives it */
    const void *input;         /* bytes to type; may be NULL when len is 0 */
    size_t input_len;          /* at most 1 MiB */
    uint32_t quiet_ms;         /* end after this much silence; 0: 500 */
    uint32_t max_wait_ms;      /* end at the latest; 0: 30000 */
    rlmcp_output_fn on_output; /* required */
    void *user;
    /* Set by the host: */
    long upgrade_status; /* HTTP status of a refused upgrade, else 0 */
    int close_code;      /* the server's close code (4000: the shell
                                exited, 4001: ping timeout), 0 if we closed */
    bool quiet;          /* ended because the output was quiet */
    /* 1.x: append only */
};
#define RLMCP_PTY_EXCHANGE_INIT                                                \
    {                                                                          \
        .struct_size = sizeof(struct rlmcp_pty_exchange)                       \
    }
/* The smallest struct_size the host takes (a 1.1 plugin's). */
#define RLMCP_PTY_EXCHANGE_SIZE_1_1                                            \
    (offsetof(struct rlmcp_pty_exchange, quiet) + sizeof(bool))

/*
 * Added in ABI 1.6: a WebSocket to any port of a devbox's tunnel
 * (runloop_ws_open). The handle is the host's; runloop_ws_close frees it.
 */
typedef struct rlmcp_ws rlmcp_ws;

/* What runloop_ws_open connects to, and its bounds. */
struct rlmcp_ws_open {
    size_t struct_size;      /* sizeof; use RLMCP_WS_OPEN_INIT */
    const char *path;        /* server-relative, query included, e.g.
                                "/echo?room=1": starts with '/', < 2048
                                bytes, no spaces or control characters.
                                Never put a token here: the host sends the
                                tunnel's token as Authorization */
    const char *subprotocol; /* Sec-WebSocket-Protocol to ask for, or NULL */
    size_t max_message;      /* largest message either way; 0: 1 MiB; at
                                most 64 MiB */
    uint32_t connect_timeout_ms; /* the open's own bound (each attempt);
                                    0: only the call's deadline */
    /* Set by the host: */
    long upgrade_status; /* HTTP status of a refused upgrade, else 0 */
    /* 1.x: append only */
};
#define RLMCP_WS_OPEN_INIT                                                     \
    {                                                                          \
        .struct_size = sizeof(struct rlmcp_ws_open)                            \
    }
/* The smallest struct_size the host takes (a 1.6 plugin's). */
#define RLMCP_WS_OPEN_SIZE_1_6                                                 \
    (offsetof(struct rlmcp_ws_open, upgrade_status) + sizeof(long))

/* The kind of a received message (rlmcp_ws_message.type). */
#define RLMCP_WS_TEXT 1   /* a text message (UTF-8 as the server sent it) */
#define RLMCP_WS_BINARY 2 /* a binary message */
#define RLMCP_WS_CLOSED 3 /* the connection ended; see close_code */

/* One message from runloop_ws_recv, filled by the host. */
struct rlmcp_ws_message {
    size_t struct_size; /* sizeof; use RLMCP_WS_MESSAGE_INIT */
    int type;           /* RLMCP_WS_TEXT, _BINARY or _CLOSED */
    const void *data;   /* the payload (RLMCP_WS_CLOSED: the close reason),
                           NUL-terminated for convenience; borrowed until
                           the next recv or close of the handle */
    size_t len;         /* bytes, without the NUL */
    int close_code;     /* RLMCP_WS_CLOSED: the server's close code, 1005
                           when it sent none, 1006 when the connection broke
                           without a close */
    /* 1.x: append only */
};
#define RLMCP_WS_MESSAGE_INIT                                                  \
    {                                                                          \
        .struct_size = sizeof(struct rlmcp_ws_message)                         \
    }
/* The smallest struct_size the host takes (a 1.6 plugin's). */
#define RLMCP_WS_MESSAGE_SIZE_1_6                                              \
    (offsetof(struct rlmcp_ws_message, close_code) + sizeof(int))

/* ------------------------------------------------------------------------ */
/* The host services table                                                  */
/* ------------------------------------------------------------------------ */

struct rlmcp_host_api {
    size_t size; /* sizeof as built into the host */
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
     * the host mirrors it as a text block. After result_error (hosts after
     * ABI 1.6; older ones drop it): its members join the error's
     * structuredContent {"error": {...}} instead, unchecked (sdk/ABI.md).
     * Ownership: copied. Threads: any, while the handler runs.
     */
    int (*result_json)(rlmcp_call *call, const char *json, size_t len);

    /*
     * Make the result an error the model sees: isError true and the text
     * {"error":{"code":code,"message":...,"remedy":remedy}}. code is one of
     * the documented error codes (docs/errors.md), e.g. "not_found";
     * remedy tells the agent what to do next and may be NULL. The same
     * object is the result's structuredContent (hosts after ABI 1.6).
     * Drops any structuredContent and content set before; content blocks a tool
     * adds after it follow the error block (e.g. exec's {"result": …} with the
     * output of a command that timed out; hosts before this change refuse
     * them with RLMCP_ESTATE).
     * Ownership: copied. Threads: any, while the handler runs.
     */
    int (*result_error)(rlmcp_call *call, const char *code, const char *remedy,
                        const char *fmt, ...) RLMCP_PRINTF(4, 5);

    /*
     * Report progress. A no-op (RLMCP_OK) when the client sent no
     * progressToken. progress must grow; total < 0 means unknown; message
     * may be NULL. The host may coalesce bursts (messages joined in
     * order, docs/protocol.md "Progress").
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
     * Deprecated in ABI 1.6: use runloop_ws_open on x->connect_url (tunnel
     * port 13), runloop_ws_send, runloop_ws_recv until the output is quiet
     * and runloop_ws_close, which do the same and more. Kept, unchanged,
     * for every 1.x host (sdk/ABI.md, "Deprecated").
     *
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

    /*
     * Added in ABI 1.6: a WebSocket client for any port of a devbox's
     * tunnel (runloop_pty_exchange is one fixed exchange on port 13).
     *
     * A handle belongs to the call that opened it and to the thread that
     * opened it: the host runs each connection on the calling thread
     * (libwebsockets contexts are single-threaded), and services it only
     * inside these four functions; send, recv and close from another
     * thread return RLMCP_ESTATE (a refused close leaves the handle open).
     * Every blocking step ends by the call's
     * deadline (call_deadline_ms, less the host's margin to answer) and at
     * once when the call is cancelled. Pings are answered. A handle the
     * plugin did not close is closed by the host (code 1001) when the
     * handler returns, with a warning in the host's log. After a failure,
     * call_last_error says what went wrong (the URL shown without the
     * token).
     *
     * runloop_ws_open: connect to o->path on port t->port of the tunnel,
     * origin and Authorization as for runloop_tunnel_request (ws:// or
     * wss:// as the origin is http or https; the token never goes into a
     * URL, a log line or a message). An upgrade refused with 502/503/504
     * (tunnel not routed yet) is retried like runloop_tunnel_request does.
     * Returns RLMCP_OK with *out set; RLMCP_EHTTP when the upgrade was
     * refused (o->upgrade_status holds the status, e.g. 404; a 3xx is
     * not followed) or the connection failed; RLMCP_ETIMEDOUT when
     * o->connect_timeout_ms or the deadline passed first;
     * RLMCP_ECANCELLED; RLMCP_EINVAL (bad path, port 0, no tunnel key, bad
     * struct sizes); RLMCP_EINTERNAL (the WebSocket module is missing).
     * Ownership: t and o are read during the call only, the host writes
     * o->upgrade_status; *out is the plugin's until runloop_ws_close.
     * Threads: any, while the handler runs (the handle then belongs to
     * the calling thread); blocks.
     */
    int (*runloop_ws_open)(rlmcp_call *call, const struct rlmcp_tunnel *t,
                           struct rlmcp_ws_open *o, rlmcp_ws **out);

    /*
     * Send one message: text (UTF-8, not checked) when text is true, else
     * binary; len at most the handle's max_message. Returns once the
     * message is handed to the socket: RLMCP_OK; RLMCP_EINVAL (NULL, too
     * long); RLMCP_ESTATE (the connection ended, also while sending:
     * recv reports how); RLMCP_EHTTP (the write failed); RLMCP_ETIMEDOUT
     * (the deadline, or 30 s when the call has none, e.g. a task or
     * timeout 0, and the server does not read); RLMCP_ECANCELLED.
     * Ownership: data is copied. Threads: the opening thread, while the
     * handler runs; blocks.
     */
    int (*runloop_ws_send)(rlmcp_ws *ws, const void *data, size_t len,
                           bool text);

    /*
     * Wait up to timeout_ms (0: only what already arrived) for the next
     * message. Returns RLMCP_OK with m filled: a text or binary message, or
     * RLMCP_WS_CLOSED once the server closed (m->close_code, reason in
     * m->data) or the connection broke (1006); RLMCP_ETIMEDOUT when
     * timeout_ms or the call's deadline passed with nothing (the
     * connection stays usable); RLMCP_ETOOBIG when a message was longer
     * than max_message (the host closed the connection: with 1009 when
     * the whole frame had arrived, else at once);
     * RLMCP_ESTATE after the end was already reported; RLMCP_ECANCELLED;
     * RLMCP_EINVAL. Ownership: m stays the plugin's; m->data is the host's,
     * borrowed until the next recv or close of this handle. Threads: the
     * opening thread, while the handler runs; blocks.
     */
    int (*runloop_ws_recv)(rlmcp_ws *ws, uint32_t timeout_ms,
                           struct rlmcp_ws_message *m);

    /*
     * Close with code (0: 1000), waiting briefly (at most 3 s, never past
     * the deadline) for the server's answer, and free the handle. NULL is
     * fine. Returns RLMCP_OK, or RLMCP_EINVAL for a code a client may not
     * send (the handle is freed all the same); RLMCP_ESTATE from another
     * thread than the opening one (nothing is closed or freed: the owner
     * may be using it; the host closes it when the handler returns).
     * Ownership: ws is invalid afterwards, unless RLMCP_ESTATE. Threads:
     * the opening thread, while the handler runs.
     */
    int (*runloop_ws_close)(rlmcp_ws *ws, int code);

    /* 1.x: append only, each with an "Added in ABI 1.N" comment and that
     * minor's bump (one per issue; sdk/ABI.md, "Rules for the next
     * minor"). */
};

/*
 * True when the host's table has service fn and it is set. Use it for every
 * service newer than the plugin's RLMCP_TARGET_ABI_MINOR.
 */
#define RLMCP_API_HAS(api, fn)                                                 \
    (offsetof(struct rlmcp_host_api, fn) + sizeof((api)->fn) <= (api)->size && \
     (api)->fn != NULL)

#ifdef __cplusplus
}
#endif

#endif /* RLMCP_PLUGIN_H */
