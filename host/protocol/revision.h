/*
 * revision.h - what differs between the MCP revisions this host speaks.
 *
 * 2025-11-25 (and 2025-06-18, 2025-03-26) are session based: initialize
 * negotiates the version and the client's capabilities once. 2026-07-28 is
 * stateless: every request carries its version, client capabilities and
 * log level in params._meta, results carry resultType, list results carry
 * caching hints, and on HTTP the Mcp-Method / Mcp-Name headers must agree
 * with the body. The revision of a request is decided per request (see
 * mcp_request_ctx.revision); nothing here keeps state.
 */
#ifndef RLMCP_HOST_REVISION_H
#define RLMCP_HOST_REVISION_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define MCP_REV_STATELESS "2026-07-28"

#define REV_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define REV_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define REV_META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define REV_META_SERVER_INFO "io.modelcontextprotocol/serverInfo"
#define REV_META_SUBSCRIPTION "io.modelcontextprotocol/subscriptionId"

/* Error codes the 2026-07-28 revision defines. */
#define MCP_HEADER_MISMATCH (-32020)
#define MCP_MISSING_CLIENT_CAPABILITY (-32021)
#define MCP_UNSUPPORTED_VERSION (-32022)

/* Cache hints on list results: the deployment is fixed between reloads. */
#define REV_LIST_TTL_MS 60000
#define REV_READ_TTL_MS 0
/* What a list result gains, as text; "resultType" last (rev_adapt_final). */
#define REV_LIST_FIELDS                                                        \
    ",\"ttlMs\":60000,\"cacheScope\":\"private\",\"resultType\":\"complete\""

/* Per-request facts of a stateless request. */
struct rev_meta {
    bool cap_sampling;
    bool cap_elicitation;
    bool cap_roots;
    bool cap_tasks; /* extensions["io.modelcontextprotocol/tasks"] */
    int log_level;  /* lowest level sent; above emergency: none asked */
};

/* Every revision this host speaks, newest first. */
extern const char *const rev_supported[];
extern const size_t rev_n_supported;

/* True for the stateless revision (2026-07-28). */
bool rev_is_stateless(const char *version);

/* params._meta["io.modelcontextprotocol/protocolVersion"], or NULL. */
const char *rev_meta_version(const cJSON *params);

/*
 * Check a stateless request's _meta and read it into *out. Returns 0, or
 * JSONRPC_INVALID_PARAMS (missing or malformed _meta) or
 * MCP_UNSUPPORTED_VERSION with err filled; for the latter *data is the
 * error's {supported, requested} (caller frees).
 */
int rev_meta_check(const cJSON *params, struct rev_meta *out, char *err,
                   size_t errlen, cJSON **data);

/*
 * HTTP: the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers against
 * the body of a stateless request. Returns 0 or MCP_HEADER_MISMATCH.
 */
int rev_header_check(const char *method, const cJSON *params,
                     const char *h_version, const char *h_method,
                     const char *h_name, char *err, size_t errlen);

/*
 * The final message of a stateless request as 2026-07-28 wants it:
 * resultType on results, ttlMs/cacheScope on cacheable ones, -32602 for a
 * resource that does not exist. malloc'd; NULL on allocation failure or
 * when json is not a JSON-RPC response (then send it unchanged).
 */
char *rev_adapt_final(const char *json, size_t len, const char *method);

/* The JSON-RPC error code of a response message, 0 for a result. */
int rev_error_code(const char *json, size_t len);

#endif
