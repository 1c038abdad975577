/*
 * intake.h - what a transport asks of an incoming message before it hands
 * it to mcp_handle(): which revision serves it and how its answer travels.
 *
 * stdio and Streamable HTTP read a message the same way here, so method
 * names and revision rules live in the protocol layer; a transport keeps
 * only its wire (bytes, sessions, Origin and token checks, streams).
 */
#ifndef RLMCP_HOST_INTAKE_H
#define RLMCP_HOST_INTAKE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* subscriptions/listen streams one client may hold open at once. */
#define INTAKE_LISTENS_PER_CLIENT 16u

/* Where a message arrives. */
enum intake_session {
    INTAKE_NO_SESSION,    /* no session yet (stdio before initialize, HTTP
                           * without Mcp-Session-Id) */
    INTAKE_SESSION_NAMED, /* HTTP Mcp-Session-Id: the message is the
                           * session's, whatever its _meta says */
    INTAKE_SESSION_OPEN,  /* stdio after initialize: a request naming
                           * 2026-07-28 is served beside the session */
};

/* HTTP's MCP headers; NULL members (or no struct) on stdio. */
struct intake_headers {
    const char *version; /* MCP-Protocol-Version */
    const char *method;  /* Mcp-Method */
    const char *name;    /* Mcp-Name */
};

/* One message as read; pointers into the message. */
struct intake {
    const char *method; /* NULL for a response or no method */
    const cJSON *id;    /* NULL for a notification */
    bool initialize;
    bool stateless; /* a 2026-07-28 request: a session of its own */
    bool streams;   /* a request whose handler may send messages to the
                     * client before it answers (HTTP: an SSE reply) */
    bool listen;    /* a subscriptions/listen stream: open until the
                     * server ends it, counted per client */
    bool cancel;    /* notifications/cancelled */
};

/* Read msg (a parsed JSON-RPC message) arriving in session s. */
void intake_read(const cJSON *msg, const struct intake_headers *h,
                 enum intake_session s, struct intake *in);

/*
 * The checks its revision asks of a message before it is handled:
 * a session-based one's MCP-Protocol-Version; a stateless request's
 * params._meta, then its headers against the body, then its version.
 * Returns 0, or the JSON-RPC error code with err filled (and for
 * MCP_UNSUPPORTED_VERSION *data = {supported, requested}, caller frees).
 * A session-based message's refusal has no id to answer (in->stateless
 * false); a stateless request's answers its id.
 */
int intake_check(const cJSON *msg, const struct intake_headers *h,
                 const struct intake *in, char *err, size_t errlen,
                 cJSON **data);

/*
 * A listen stream's admission: open is how many the client holds. Returns
 * 0, or JSONRPC_SERVER_ERROR with err filled (too many).
 */
int intake_listen_admit(unsigned open, char *err, size_t errlen);

#endif
