/*
 * stdio_stateless.h - MCP 2026-07-28 over stdio.
 *
 * A stdio process serves one 2025-11-25 session; beside it, a request that
 * carries params._meta["io.modelcontextprotocol/protocolVersion"] is a
 * 2026-07-28 request when that version is 2026-07-28 or no initialize came
 * first (an unknown version is then refused, naming those supported). It
 * is served without initialize, on a session of its own that lives as
 * long as the request, with the revision as the dispatcher's per-request
 * input; its final answer gets what 2026-07-28 adds (intake_answer). A
 * notifications/cancelled reaches these requests too. Which lines are
 * such requests, and how their answers go out, protocol/intake.c decides.
 */
#ifndef RLMCP_HOST_STDIO_STATELESS_H
#define RLMCP_HOST_STDIO_STATELESS_H

#include <stdbool.h>
#include <stddef.h>

struct mcp_dispatcher;
struct mcp_sink;
struct stdio_stateless;

struct stdio_stateless *stdio_stateless_new(struct mcp_dispatcher *d);
/* After the dispatcher drained: requests still holding state keep it. */
void stdio_stateless_free(struct stdio_stateless *st);

/*
 * Serve line as a 2026-07-28 request when it is one (see above); answers
 * go to out. False: not such a request, the caller serves it as before.
 */
bool stdio_stateless_handle(struct stdio_stateless *st, const char *line,
                            size_t len, struct mcp_sink *out,
                            bool session_initialized);

/* A notification line: notifications/cancelled also goes to them. */
void stdio_stateless_notify(struct stdio_stateless *st, const char *line,
                            size_t len);

#endif
