/*
 * listen.h - subscriptions/listen (MCP 2026-07-28): the stream that
 * replaces 2025-11-25's GET stream and resources/subscribe.
 *
 * A listen request is answered first with
 * notifications/subscriptions/acknowledged (the part of its filter this
 * server honours: toolsListChanged, resourceSubscriptions), then stays
 * open: the request's session gets a notify sink (mcp.h) that passes on
 * only the notification types the filter asked for, each tagged with
 * params._meta["io.modelcontextprotocol/subscriptionId"] = the listen
 * request's id. It ends with the result {resultType: "complete"} when the
 * server shuts down (listen_end_all), and without an answer when the
 * client goes (its session is freed) or, on stdio, cancels it with
 * notifications/cancelled naming its id.
 */
#ifndef RLMCP_HOST_LISTEN_H
#define RLMCP_HOST_LISTEN_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct deployment;
struct mcp_dispatcher;
struct mcp_session;
struct mcp_sink;

/* Listen streams open at once on one dispatcher. */
#define LISTEN_MAX_STREAMS 1024u

/*
 * Serve subscriptions/listen for session s (a 2026-07-28 request's own):
 * checks params.notifications, answers errors on sink (final), or sends
 * the acknowledgement and keeps sink until the stream ends.
 */
void listen_open(struct mcp_dispatcher *d, struct mcp_session *s,
                 struct deployment *dep, struct mcp_sink *sink, const cJSON *id,
                 const cJSON *params, const char *api_key);

/* notifications/cancelled for id_key: true when it ended s's listen. */
bool listen_cancel(struct mcp_session *s, const char *id_key);

/* The session goes: its listen ends without an answer. */
void listen_session_end(struct mcp_session *s);

/*
 * Shutdown: every listen stream ends with its result, and later listen
 * requests are refused. Returns how many ended.
 */
unsigned listen_end_all(struct mcp_dispatcher *d);

#endif
