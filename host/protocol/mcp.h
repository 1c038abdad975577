/*
 * mcp.h - the transport-independent MCP dispatcher.
 *
 * A transport (stdio, Streamable HTTP) reads whole JSON-RPC messages and
 * hands each one to mcp_handle() together with a sink: the place where the
 * messages that belong to that inbound message go (its response, and for a
 * tools/call the progress and log notifications and server-to-client
 * requests sent while it runs). Calls run on the dispatcher's worker pool,
 * so mcp_handle() returns quickly and responses may come out of order.
 *
 * Per-session facts (negotiated version, client capabilities, log level)
 * live in struct mcp_session, owned by the transport: stdio has one, HTTP
 * one per Mcp-Session-Id. The dispatcher itself keeps no session state, so
 * a stateless front end could build an mcp_session per request.
 */
#ifndef RLMCP_HOST_MCP_H
#define RLMCP_HOST_MCP_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

struct registry;
struct mcp_dispatcher;
struct mcp_session;

/*
 * Where outgoing messages go. send() is called from any thread, one whole
 * JSON-RPC message per call, no trailing newline. final is true for the
 * response to the inbound request (or, for a cancelled call, with json ==
 * NULL to say that no response will come); after a final send the
 * dispatcher drops its reference with release().
 * Answers made inside mcp_handle() (errors, lists, ping) are sent before it
 * returns, without retain/release. A queued call (tools/call,
 * resources/read, prompts/get) retains the sink in mcp_handle() and
 * releases it once its handler is done, after its final send. Messages of
 * one call never interleave and its progress always precedes its result.
 */
struct mcp_sink {
    void (*send)(struct mcp_sink *sink, const char *json, size_t len,
                 bool final);
    void (*retain)(struct mcp_sink *sink);
    void (*release)(struct mcp_sink *sink);
};

/* Send json as a request's final message and free it; NULL (out of
 * memory building it) sends an internal error instead. */
void mcp_send_final(struct mcp_sink *sink, char *json);

/* Per-request facts from the transport. Strings are copied by mcp_handle. */
struct mcp_request_ctx {
    const char *api_key; /* the caller's Runloop key, or NULL: never logged */
    /*
     * The revision this request speaks. NULL: the session's, negotiated by
     * initialize. "2026-07-28": a stateless request; its version, client
     * capabilities and log level come from its own params._meta and apply
     * to it alone (the transport gives it a session of its own).
     */
    const char *revision;
    /*
     * The request's HTTP header by name (case-insensitive), or NULL when
     * absent; called only inside mcp_handle. NULL for transports without
     * headers (stdio): then no Mcp-Param-* header is expected.
     */
    const char *(*header)(void *user, const char *name);
    void *header_user;
};

struct mcp_options {
    const char *server_name;
    const char *server_version;
    const char *instructions; /* may be NULL */
    unsigned workers;         /* worker threads for calls */
    unsigned default_timeout_ms;
    size_t page_size;         /* tools/list page size; 0: 100 */
    size_t max_message_bytes; /* largest inbound message; 0: 16 MiB */
};

#define MCP_DEFAULT_MAX_MESSAGE (16u * 1024 * 1024)
#define MCP_LATEST_PROTOCOL_VERSION "2025-11-25"

/* A dispatcher of the tools in reg (frozen; borrowed, never reloaded). */
struct mcp_dispatcher *mcp_create(const struct mcp_options *opts,
                                  struct registry *reg);

struct deployment;

/* A dispatcher serving dep (deployment.h); it takes its own reference. */
struct mcp_dispatcher *mcp_create_deployment(const struct mcp_options *opts,
                                             struct deployment *dep);

/* The deployment served now, referenced (deployment_unref when done). */
struct deployment *mcp_deployment_get(struct mcp_dispatcher *d);

/*
 * Serve dep from now on (a reload): requests that arrive later use it,
 * those in progress finish on the one they started on. Takes a reference
 * to dep; *old receives the dispatcher's reference to the previous one.
 * -1 (nothing changed) when out of memory.
 */
int mcp_replace_deployment(struct mcp_dispatcher *d, struct deployment *dep,
                           struct deployment **old);

/*
 * notifications/tools/list_changed to every initialised session that has
 * a channel for messages tied to no request (mcp_session_set_notify).
 * Returns how many sessions it went to.
 */
unsigned mcp_notify_tools_changed(struct mcp_dispatcher *d);

/* The same for notifications/<list>/list_changed ("prompts", "resources"). */
unsigned mcp_notify_list_changed(struct mcp_dispatcher *d, const char *list);
/* Cancels in-flight calls, waits for them, frees. */
void mcp_destroy(struct mcp_dispatcher *d);

struct mcp_session *mcp_session_new(struct mcp_dispatcher *d);
/* Cancels the session's calls; frees once they have finished. */
void mcp_session_free(struct mcp_session *s);
bool mcp_session_initialized(const struct mcp_session *s);
/* A short name for the session in the audit log (at most 15 bytes kept). */
void mcp_session_set_label(struct mcp_session *s, const char *label);
/*
 * Where the session's messages that belong to no request go
 * (notifications/resources/updated, notifications/tools/list_changed):
 * stdio's output, an HTTP session's standalone stream. Retained until the
 * session is freed; set it once, before serving the session.
 */
void mcp_session_set_notify(struct mcp_session *s, struct mcp_sink *sink);

/*
 * Handle one inbound message (request, notification or a response to a
 * server-to-client request). Returns true when it was a request, i.e. a
 * response will be sent to the sink (HTTP answers 202 otherwise).
 * Malformed input never fails: it is answered with a JSON-RPC error (id
 * null when the id could not be read). May be called from several threads
 * at once, also for one session. The sink is retained while a call holds it
 * and receives its final message from any thread, possibly before
 * mcp_handle returns.
 */
bool mcp_handle(struct mcp_dispatcher *d, struct mcp_session *s,
                const char *msg, size_t len, struct mcp_sink *sink,
                const struct mcp_request_ctx *ctx);

/*
 * The same for a message intake_parse read (intake.h): a transport that
 * reads the message itself hands it over without a second parse. msg
 * stays the caller's; handling may take members out of it.
 */
bool mcp_handle_msg(struct mcp_dispatcher *d, struct mcp_session *s,
                    struct cJSON *msg, struct mcp_sink *sink,
                    const struct mcp_request_ctx *ctx);

/* Stop taking calls, cancel the in-flight ones and wait up to ms. */
void mcp_drain(struct mcp_dispatcher *d, unsigned ms);

/* ---- Set-up (main thread, before serving) ----------------------------- */

struct rlclient;

/* The Runloop client calls use; NULL: runloop_request fails (EHTTP). */
void mcp_set_rlclient(struct mcp_dispatcher *d, struct rlclient *c);

/*
 * The key used when a request brings none (mcp_request_ctx.api_key NULL):
 * the deployment's runloop.api_key. Copied; NULL clears. Never logged.
 */
void mcp_set_default_api_key(struct mcp_dispatcher *d, const char *key);

/*
 * The credentials rule (docs/http.md "Credentials"): when required (an HTTP
 * deployment whose backend is an API URL, not the local engine), a
 * tools/call with neither a caller key nor a default key is answered with
 * an "unauthenticated" tool error before anything runs.
 */
void mcp_set_key_required(struct mcp_dispatcher *d, bool required);

/* ---- Facts for transports ----------------------------------------------- */

/* The effective inbound message limit (options.max_message_bytes). */
size_t mcp_max_message(const struct mcp_dispatcher *d);

/* True for a revision this server speaks (2025-11-25, -06-18, -03-26). */
bool mcp_protocol_version_supported(const char *version);

/* The negotiated revision, or NULL before initialize. */
const char *mcp_session_protocol_version(const struct mcp_session *s);

/*
 * A JSON-RPC error message with id null, for a transport that rejects a
 * message before mcp_handle sees it (e.g. over the size limit). malloc'd.
 */
char *mcp_error_message(int code, const char *message);

/* Calls running or queued (all sessions). */
unsigned mcp_inflight(struct mcp_dispatcher *d);

/*
 * Shutdown, before mcp_drain: every subscriptions/listen stream ends with
 * its result while the transport can still write it, and later listen
 * requests are refused. Returns how many ended.
 */
unsigned mcp_listen_end_all(struct mcp_dispatcher *d);

/*
 * The key that signs 2026-07-28 requestState (mrtr.h): the deployment's
 * shared secret, so replicas accept each other's states; len 0: a fresh
 * random one. 0 or -1.
 */
int mcp_set_state_secret(const unsigned char *key, size_t len);

#endif
