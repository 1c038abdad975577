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

struct mcp_request_ctx;

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
 * Tell mcp_handle that the request in ctx is a stateless one (in->stateless,
 * intake_line_stateless): its revision, not its session's, serves it.
 */
void intake_mark_stateless(struct mcp_request_ctx *ctx);

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

/*
 * A session-based revision's MCP-Protocol-Version header (NULL: absent),
 * on any message or stream of a session (HTTP POST, GET). Returns 0, or
 * JSONRPC_SERVER_ERROR with err filled (a version this server does not
 * speak, naming those it does).
 */
int intake_check_version(const char *version, char *err, size_t errlen);

/* ---- Refusals before the dispatcher ------------------------------------ */

/* Why a transport refuses a message itself; the protocol picks the code. */
enum intake_refusal {
    INTAKE_REFUSE_SERVER,     /* a rule of the transport: its headers,
                               * access, limits, shutdown (-32000) */
    INTAKE_REFUSE_NO_SESSION, /* the session named is unknown (-32001) */
    INTAKE_REFUSE_PARSE,      /* not JSON (-32700) */
    INTAKE_REFUSE_INVALID,    /* not one JSON-RPC 2.0 message, too big */
    INTAKE_REFUSE_PARAMS,     /* "params" is not an object (-32602) */
    INTAKE_REFUSE_INTERNAL,   /* the server failed (out of memory) */
};

/* ---- Reading bytes ---------------------------------------------------- */

/*
 * One message read from a transport's bytes, or why it is refused: not
 * UTF-8 or not JSON, nested too deep, a batch, not an object, data after
 * it, no "jsonrpc":"2.0", a bad "id", "method" or "params". stdio (each
 * line, in mcp_handle) and HTTP (each POST body) read with it, so a
 * message is refused with the same code and message on both.
 */
struct intake_parsed {
    cJSON *msg; /* the message (owned); NULL when refused */
    /* When refused: */
    enum intake_refusal why; /* INTAKE_REFUSE_PARSE, _INVALID or _PARAMS */
    cJSON *id;               /* the message's id when one could be read
                              * (owned), NULL: answer with id null */
    bool notification;       /* a notification: on a stream nobody is
                              * answered (HTTP still refuses its POST) */
    char err[512];           /* what is wrong and what to fix */
};

/* Read buf; false when refused (p->why, p->err). Free with
 * intake_parsed_free either way. */
bool intake_parse(const char *buf, size_t len, struct intake_parsed *p);

/* The refusal of a message intake_parse refused, as a JSON-RPC error
 * message; malloc'd, NULL when out of memory. */
char *intake_parsed_refusal(const struct intake_parsed *p);

void intake_parsed_free(struct intake_parsed *p);

/* The JSON-RPC error message refusing a message (id as given, NULL: id
 * null). malloc'd; NULL when out of memory. */
char *intake_refusal(enum intake_refusal why, const cJSON *id,
                     const char *message);

/* The same with a code intake_check or intake_listen_admit returned, and
 * its data (may be NULL). */
char *intake_refusal_code(int code, const cJSON *id, const char *message,
                          const cJSON *data);

/* ---- Answers ----------------------------------------------------------- */

/*
 * What a transport keeps of a request to send its final answer; a copy,
 * as the message is gone when the answer comes.
 */
struct intake_reply {
    bool initialize;
    bool stateless;
    char method[64];
};

void intake_reply_init(struct intake_reply *r, const struct intake *in);

/*
 * A request's final answer as it goes out: a stateless request's gets what
 * its revision adds (resultType, caching hints, error codes it renames).
 * malloc'd; NULL: send json as it is.
 */
char *intake_answer(const struct intake_reply *r, const char *json, size_t len);

/* How a transport carries a final answer (HTTP: its status). */
enum intake_status {
    INTAKE_STATUS_OK,        /* a result or an error of the call */
    INTAKE_STATUS_MALFORMED, /* the request was refused as malformed */
    INTAKE_STATUS_UNKNOWN,   /* the method does not exist */
};

struct intake_outcome {
    bool session_created; /* an initialize answered with a result */
    bool session_refused; /* an initialize that failed: its session ends */
    enum intake_status status;
};

/* What the final answer json (as sent, intake_answer) means. */
void intake_outcome(const struct intake_reply *r, const char *json, size_t len,
                    struct intake_outcome *out);

/* ---- stdio lines --------------------------------------------------------- */

/*
 * Is line a stateless request (with an id) arriving in session s? Looks
 * for the version's key before parsing, as most lines are not. r filled
 * when true.
 */
bool intake_line_stateless(const char *line, size_t len, enum intake_session s,
                           struct intake_reply *r);

/* Is line a notifications/cancelled notification? */
bool intake_line_cancel(const char *line, size_t len);

#endif
