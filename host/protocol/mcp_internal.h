/*
 * mcp_internal.h - the dispatcher's and the session's structs, for the
 * files that read their fields: mcp.c, listen.c and resources.c (a
 * session's notify sink and subscriptions); cmake/check_host_layers.cmake
 * keeps that list. A call's state is call_state.h's, what a request calls
 * back into the dispatcher (a session's pending client requests among
 * them) dispatch.h's. Not for transports: they use mcp.h.
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

struct rlmcp_call;
struct pending_req;
struct listen_sink;
struct res_watch;
struct pool;
struct rlclient;

/* Threads for calls of RLMCP_TOOL_LONG tools (started on demand). */
#define MCP_LONG_WORKERS 256u

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

#endif
