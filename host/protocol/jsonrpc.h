/*
 * jsonrpc.h - JSON-RPC 2.0 envelope parsing and message building (cJSON).
 *
 * jsonrpc_parse() checks a message before anything acts on it: UTF-8,
 * nesting depth, JSON syntax, the "jsonrpc" member, the kind of message and
 * the id. Errors come back as a JSON-RPC code and a message that says what
 * to fix.
 */
#ifndef RLMCP_HOST_JSONRPC_H
#define RLMCP_HOST_JSONRPC_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define JSONRPC_PARSE_ERROR (-32700)
#define JSONRPC_INVALID_REQUEST (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS (-32602)
#define JSONRPC_INTERNAL_ERROR (-32603)
#define MCP_RESOURCE_NOT_FOUND (-32002)
/* Implementation-defined server errors: a refusal before handling (a
 * transport's or the revision's), too much work queued. */
#define JSONRPC_SERVER_ERROR (-32000)
#define JSONRPC_SERVER_BUSY (-32000)

/* Deeper JSON is refused before parsing (cJSON's own limit). */
#define JSONRPC_MAX_DEPTH CJSON_NESTING_LIMIT

enum jsonrpc_kind {
    JSONRPC_REQUEST = 1,
    JSONRPC_NOTIFICATION,
    JSONRPC_RESPONSE
};

struct jsonrpc_msg {
    enum jsonrpc_kind kind;
    cJSON *root;         /* owned */
    const cJSON *id;     /* requests and responses; borrowed from root */
    const char *method;  /* requests and notifications */
    const cJSON *params; /* may be NULL; an object when set */
    const cJSON *result; /* responses: exactly one of result/error */
    const cJSON *error;
};

/*
 * Parse and check one message. Returns 0, or a JSONRPC_* code with err
 * filled; then *bad_id is a copy of the id when one could be read (so the
 * error can carry it), else NULL. The caller frees msg and *bad_id.
 */
int jsonrpc_parse(const char *buf, size_t len, struct jsonrpc_msg *msg,
                  cJSON **bad_id, char *err, size_t errlen);
/*
 * The same checks on a message already parsed (jsonrpc_parse's root, an
 * object): msg owns root afterwards, whatever the result.
 */
int jsonrpc_read(cJSON *root, struct jsonrpc_msg *msg, cJSON **bad_id,
                 char *err, size_t errlen);
void jsonrpc_msg_free(struct jsonrpc_msg *msg);

/* Valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF)? */
bool jsonrpc_utf8_valid(const char *buf, size_t len, size_t *bad_offset);

/* Copy of s with every invalid UTF-8 sequence replaced by U+FFFD. */
char *jsonrpc_utf8_sanitize(const char *s, size_t len);

/* Deepest [ / { nesting outside strings, scanning no further than stop. */
size_t jsonrpc_depth(const char *buf, size_t len, size_t stop);

/* A string or integer id? */
bool jsonrpc_id_valid(const cJSON *id);

/* The id as compact JSON text (a map key): "\"abc\"" or "42". malloc'd. */
char *jsonrpc_id_key(const cJSON *id);

/*
 * Whole messages, compact, malloc'd (NULL on allocation failure). id NULL
 * means JSON null. data may be NULL. result is consumed.
 */
char *jsonrpc_error(const cJSON *id, int code, const char *message,
                    const cJSON *data);
char *jsonrpc_result(const cJSON *id, cJSON *result);
/* params is consumed; may be NULL. */
char *jsonrpc_notification(const char *method, cJSON *params);

#endif
