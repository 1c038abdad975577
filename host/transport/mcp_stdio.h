/*
 * mcp_stdio.h - the MCP stdio transport (not "stdio.h": host/ is on the
 * include path and would shadow the C library header): one session over
 * stdin/stdout.
 *
 * Newline-delimited JSON-RPC on stdin (a trailing \r is stripped); each
 * outgoing message is written to stdout with one '\n' under a lock. stdout
 * carries protocol messages only; logs go to stderr.
 */
#ifndef RLMCP_HOST_MCP_STDIO_H
#define RLMCP_HOST_MCP_STDIO_H

struct mcp_dispatcher;

/*
 * Serve until stdin reaches EOF or stdio_request_stop() is called, then
 * cancel and drain the in-flight calls (bounded) and return 0 (-1 when
 * reading or writing failed). Ignores SIGPIPE so a vanished client is an
 * EPIPE, not a crash.
 */
int stdio_serve(struct mcp_dispatcher *d);

/* Same on explicit file descriptors (tests). */
int stdio_serve_fds(struct mcp_dispatcher *d, int in_fd, int out_fd);

/* Ask stdio_serve to return. Async-signal-safe: call it from a handler. */
void stdio_request_stop(void);

#endif
