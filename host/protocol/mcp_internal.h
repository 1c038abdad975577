/*
 * mcp_internal.h - what the dispatcher (mcp.c) and the requests it hands
 * over share: the dispatcher, session and call structs. Included by mcp.c,
 * call.c (and call_audit.c, tasks_input.c, which read a call), listen.c,
 * resources.c and tasks.c; cmake/check_host_layers.cmake keeps that list.
 * Not for transports: they use mcp.h.
 *
 * Lock order: dispatcher lock and session lock are never held together;
 * dep_lock and sess_lock are leaves (nothing is taken while holding one);
 * session lock before a call's lock; a call's send_lock is taken with no
 * other lock held (sinks may block on I/O).
 */
#ifndef RLMCP_HOST_MCP_INTERNAL_H
#define RLMCP_HOST_MCP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "deployment.h"
#include "mcp.h"
#include "registry.h"

/* Threads for calls of RLMCP_TOOL_LONG tools (started on demand). */
#define MCP_LONG_WORKERS 256u

/* Requests one session may have in progress (queued or running). */
#define MCP_MAX_SESSION_CALLS 4096u

enum call_kind { CALL_TOOL = 1, CALL_RESOURCE, CALL_PROMPT };

/* Why a call was cancelled: it decides what, if anything, is answered. */
enum cancel_reason {
    CANCEL_NONE = 0,
    CANCEL_CLIENT,  /* notifications/cancelled or session end: no answer */
    CANCEL_TIMEOUT, /* the timer answers with a timeout error */
    CANCEL_SHUTDOWN /* drain: answered with a shutdown error if it ends */
};

/* A server-to-client request waiting for the client's answer. */
struct pending_req {
    struct pending_req *next;
    char *id_key;
    struct rlmcp_call *call;
    bool done; /* under call->lock */
    cJSON *result;
    cJSON *error;
};

struct rlmcp_call {
    atomic_int refs;
    struct mcp_dispatcher *d;
    struct deployment *dep; /* referenced: tool/resource/prompt live in it */
    struct mcp_session *s;
    struct mcp_sink *sink;
    enum call_kind kind;
    cJSON *id;
    char *id_key;
    cJSON *progress_token; /* NULL: the client wants no progress */
    const struct tool_entry *tool;
    const struct resource_entry *resource;
    const struct prompt_entry *prompt;
    char *args_json; /* tool and prompt calls */
    size_t args_len;
    char *uri;        /* resource reads */
    char *api_key;    /* never logged */
    const char *what; /* tool/prompt name or uri, for logs */
    struct loaded_plugin *plugin;
    const char *plugin_name;
    uint32_t timeout_ms;
    uint64_t deadline_ns; /* monotonic; 0: none */
    char last_error[768]; /* why the last runloop_* request failed */
    struct mrtr *mrtr;    /* stateless calls: client requests (mrtr.h) */
    rlmcp_tool_fn op;     /* a task op (tasks.c) run instead of the handler */
    bool op_unchecked;    /* its result is not the tool's: no outputSchema */
    const char *task_id;  /* a task op's task (the sink's), else NULL */
    struct rlmcp_ws *ws_open; /* WebSockets not yet closed (under lock) */

    pthread_mutex_t lock; /* everything below up to send_lock */
    pthread_cond_t cond;  /* sleep_ms and client_request waits */
    atomic_bool cancelled;
    enum cancel_reason reason;
    cJSON *items; /* content / contents / messages */
    cJSON *structured;
    cJSON *err_obj; /* an error result's {code, message, remedy} */
    bool is_error;
    double last_progress;
    bool progress_any;
    uint64_t progress_sent_ns;
    bool progress_pending;
    double pend_progress;
    double pend_total;
    char *pend_message;
    /* When the held-back update is due (monotonic ns, 0: none): the
     * dispatcher's timer sends it then (mcp.c). */
    _Atomic uint64_t progress_due_ns;

    bool in_session;    /* linked in s->calls (session lock) */
    bool in_dispatcher; /* linked in d->inflight (dispatcher lock) */
    bool timer_fired;   /* the timer took it (dispatcher lock) */

    pthread_mutex_t send_lock; /* orders this call's outgoing messages */
    bool responded;            /* the final message went out */

    /* For metrics and the audit log (call_audit.c); under lock. */
    char err_code[32];  /* the code of an error result */
    char devbox_id[64]; /* the devbox the result names */

    /* The session's calls (session lock), the dispatcher's (its lock). */
    struct rlmcp_call *s_next, *s_prev;
    struct rlmcp_call *d_next, *d_prev;
};

struct mcp_session {
    struct mcp_dispatcher *d;
    atomic_int refs;
    pthread_mutex_t lock;
    bool initialized;
    bool closed;
    char version[16];
    bool cap_sampling;
    bool cap_elicitation;
    bool cap_roots;
    bool cap_tasks;       /* 2026-07-28: the tasks extension (tasks.h) */
    atomic_int log_level; /* lowest level sent as notifications/message */
    char label[16]; /* for the audit log: a short session id, "" on stdio */
    char client_name[128]; /* initialize's clientInfo.name, "" if none */
    /* The toolsets enable_toolset turned on (toolsets.h), by name so a
     * reload keeps them; under lock. */
    char **toolsets_on;
    size_t n_toolsets_on;
    struct rlmcp_call *calls;
    struct pending_req *pending;
    char **subs; /* resources/subscribe URIs */
    size_t n_subs;
    /* Messages tied to no request (resources/updated); retained; NULL:
     * the transport has nowhere to send them. */
    struct mcp_sink *notify;
    /* The dispatcher's sessions with a notify sink (its sess_lock). */
    bool in_notify_list;
    struct mcp_session *n_next, *n_prev;
    /* Its subscriptions/listen stream (listen.c), also its notify sink. */
    struct listen_sink *listen;
};

struct mcp_dispatcher {
    char *server_name;
    char *server_version;
    char *instructions;
    unsigned workers;
    unsigned default_timeout_ms;
    size_t page_size;
    size_t max_message;
    pthread_mutex_t dep_lock;  /* guards dep, the pointer; a leaf lock */
    struct deployment *dep;    /* the current one (deployment.h) */
    pthread_mutex_t sess_lock; /* guards notify_sessions; a leaf lock */
    struct mcp_session *notify_sessions;
    unsigned n_listens;  /* open subscriptions/listen streams (sess_lock) */
    bool listens_closed; /* shutting down: none taken (sess_lock) */
    struct pool *pool;
    struct pool *long_pool; /* RLMCP_TOOL_LONG calls: their own threads */
    struct rlclient *rl;
    char *default_key;
    bool key_required; /* mcp_set_key_required */

    pthread_mutex_t lock;
    pthread_cond_t timer_cond; /* the timer's wake-up */
    pthread_cond_t idle_cond;  /* n_inflight reached 0 */
    pthread_t timer;
    bool timer_running;
    bool stopping; /* the timer exits */
    bool draining; /* no new calls */
    struct rlmcp_call *inflight;
    unsigned n_inflight;
    atomic_ulong next_request_id;

    struct res_watch *watch; /* resources/subscribe (resources.h) */
};

/* A deadline_now_ns() time as the timespec a CLOCK_MONOTONIC condvar waits to.
 */
struct timespec mcp_ns_timespec(uint64_t ns);

/* call.c: the dispatcher's side of a call. dep is the deployment its
 * tool, resource or prompt belongs to: the call holds a reference. */
struct rlmcp_call *call_new(struct mcp_dispatcher *d, struct deployment *dep,
                            struct mcp_session *s, struct mcp_sink *sink,
                            enum call_kind kind, const cJSON *id,
                            const char *api_key);
/* A tools/call of t: args (len bytes of JSON) and mr (may be NULL) pass
 * to the call, which frees them. */
void call_set_tool(struct rlmcp_call *c, const struct tool_entry *t, char *args,
                   size_t len, struct mrtr *mr);
void call_ref(struct rlmcp_call *c);
void call_unref(struct rlmcp_call *c);
/* The pool job: run the handler, answer, unlink, drop the job's ref. */
void call_job(void *arg);
/* Cancel; CANCEL_CLIENT sends the sink its final NULL at once. */
void call_cancel(struct rlmcp_call *c, enum cancel_reason reason);
/* Send one message; final ones only once. False when already answered. */
bool call_send(struct rlmcp_call *c, const char *json, bool final);
/* A final JSON-RPC error, e.g. when the call could not be queued. */
void call_fail(struct rlmcp_call *c, int code, const char *message);

/* A whole isError tools/call answer {"error":{code,message,remedy}}. */
char *call_tool_error_json(const cJSON *id, const struct tool_entry *tool,
                           const char *code, const char *message,
                           const char *remedy);

/* mcp.c: bookkeeping the calls use. */
void mcp_session_ref(struct mcp_session *s);
void mcp_session_unref(struct mcp_session *s);
/* Remove c from its session's and the dispatcher's lists. */
void mcp_unlink_call(struct rlmcp_call *c);
/* Wake the dispatcher's timer: a call's progress_due_ns was set. */
void mcp_timer_kick(struct mcp_dispatcher *d);
/* Send the call's held-back progress update if its interval ended (the
 * dispatcher's timer, at progress_due_ns; call.c). */
void call_flush_progress_due(struct rlmcp_call *c);
/* Remove c from its session's list only (its id is free again). */
void mcp_unlink_call_session(struct rlmcp_call *c);

/* Link a call into its session and the dispatcher and queue it on the
 * pool; always consumes c (answers it with an error when refused). */
void mcp_enqueue_call(struct mcp_dispatcher *d, struct mcp_session *s,
                      struct rlmcp_call *c);

/* mcp_send_final of a JSON-RPC error answering id, its message formatted. */
void mcp_send_error(struct mcp_sink *sink, const cJSON *id, int code,
                    const cJSON *data, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Wake a call waiting for this answer; false when nobody waits. */
bool mcp_deliver_response(struct mcp_session *s, const char *id_key,
                          cJSON *result, cJSON *error);

struct listen_sink;

/*
 * Make sink (ls's) the notify sink of s, a listen stream. 0, or -1 the
 * server is shutting down, -2 too many streams, -3 s already listens.
 */
int mcp_listen_register(struct mcp_session *s, struct listen_sink *ls,
                        struct mcp_sink *sink);
/* A listen stream ended. */
void mcp_listen_count_down(struct mcp_dispatcher *d);
/* Refuse new listen streams; the sessions to end (as notify_targets). */
struct mcp_session **mcp_listen_close(struct mcp_dispatcher *d);

/* "debug".."emergency" */
const char *mcp_level_name(int level);

#endif
