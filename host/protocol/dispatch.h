/*
 * dispatch.h - what the requests the dispatcher hands over (calls,
 * resources, tasks, listen streams) call back into it (mcp.c): session
 * references, queueing and unlinking calls, answers, the timer. Takes
 * only pointers: the structs behind them are mcp_internal.h's.
 */
#ifndef RLMCP_HOST_DISPATCH_H
#define RLMCP_HOST_DISPATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "mcp.h"

struct rlmcp_call;

/* mcp.c: bookkeeping the calls use. */
void mcp_session_ref(struct mcp_session *s);
void mcp_session_unref(struct mcp_session *s);
/* Remove c from its session's and the dispatcher's lists. */
void mcp_unlink_call(struct rlmcp_call *c);
/* Wake the dispatcher's timer: a call's progress_due_ns was set. */
void mcp_timer_kick(struct mcp_dispatcher *d);
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

/* A call's request to the client (sampling, elicitation, roots): link
 * it into its session's pending list to wait for the answer, and out. */
struct pending_req;
void mcp_session_pending_add(struct mcp_session *s, struct pending_req *p);
void mcp_session_pending_remove(struct mcp_session *s, struct pending_req *p);
/* Wake a call waiting for this answer; false when nobody waits. */
bool mcp_deliver_response(struct mcp_session *s, const char *id_key,
                          cJSON *result, cJSON *error);
/* Did the client declare the capability method needs (sampling/
 * createMessage, elicitation/create, roots/list; others: true)? */
bool mcp_session_client_allows(struct mcp_session *s, const char *method);
/* The lowest level sent to the client as notifications/message. */
int mcp_session_log_level(const struct mcp_session *s);

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

/* The session's audit label ("" on stdio) and the key a call without its
 * own uses (mcp_set_default_api_key; NULL: none). */
const char *mcp_session_label(const struct mcp_session *s);
const char *mcp_default_key(const struct mcp_dispatcher *d);
/* The Runloop API client calls use (NULL: none configured). */
struct rlclient;
struct rlclient *mcp_rlclient(const struct mcp_dispatcher *d);
/* The id of the next request the server sends a client (1, 2, ...). */
unsigned long mcp_next_request_id(struct mcp_dispatcher *d);

/* "debug".."emergency" */
const char *mcp_level_name(int level);

#endif
