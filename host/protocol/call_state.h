/*
 * call_state.h - one call's state (struct rlmcp_call): a tools/call,
 * resources/read or prompts/get the dispatcher queued. Shared by the files
 * that run a call or read it (call.c, call_audit.c, tasks.c,
 * tasks_input.c, resources.c, mcp.c); the session and dispatcher structs
 * stay in mcp_internal.h. Lock order: mcp_internal.h.
 */
#ifndef RLMCP_HOST_CALL_STATE_H
#define RLMCP_HOST_CALL_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "deployment.h"
#include "mcp.h"
#include "registry.h"

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

/* Send the call's held-back progress update if its interval ended (the
 * dispatcher's timer, at progress_due_ns; call.c). */
void call_flush_progress_due(struct rlmcp_call *c);

#endif
