/*
 * param_headers.h - tool arguments mirrored into Mcp-Param-{Name} HTTP
 * headers (2026-07-28, SEP-2243).
 *
 * A tool's inputSchema may mark a top-level property with
 * "x-mcp-header": "<Name>"; a client calling the tool over HTTP then sends
 * the argument's value as the header Mcp-Param-<Name> too, so that
 * intermediaries can route on it without reading the body. The server
 * checks that the two agree, because an intermediary may have acted on the
 * header while the tool acts on the body: a value wrapped as
 * =?base64?<Base64>?= is decoded first (invalid Base64 is refused), any
 * other value is literal; integers and numbers compare numerically,
 * booleans as true/false. An argument that is absent or null has no header;
 * one with a value must have it.
 */
#ifndef RLMCP_HOST_PARAM_HEADERS_H
#define RLMCP_HOST_PARAM_HEADERS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define PARAM_HEADER_KEYWORD "x-mcp-header"
#define PARAM_HEADER_PREFIX "Mcp-Param-"

/* A request header by name (case-insensitive), or NULL when absent. */
typedef const char *(*param_header_fn)(void *user, const char *name);

/*
 * Check a tool's x-mcp-header declarations at registration: each on a
 * top-level property of type string, integer, number or boolean, a header
 * token (RFC 9110: letters, digits and !#$%&'*+-.^_`|~), names unique
 * without regard to case. Returns the number of declarations (0 for none),
 * or -1 with err filled.
 */
int param_headers_declared(const cJSON *schema, char *err, size_t errlen);

/*
 * A header value as the text it stands for: optional whitespace cut, a
 * =?base64?...?= value decoded. Returns a malloc'd string (*len bytes, NUL
 * terminated), or NULL when the Base64 is invalid (err filled) or memory
 * ran out (err "").
 */
char *param_header_decode(const char *raw, size_t *len, char *err,
                          size_t errlen);

/*
 * The arguments of a tools/call against the Mcp-Param-* headers its
 * schema declares. 0 when they agree, -1 with err filled when not (the
 * caller answers -32020 HeaderMismatch with HTTP 400).
 */
int param_headers_check(const cJSON *schema, const cJSON *args,
                        param_header_fn header, void *user, char *err,
                        size_t errlen);

#endif
