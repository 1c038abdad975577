/*
 * log.h - the host's log: one line per message, stderr only (stdout belongs
 * to the MCP protocol on stdio).
 *
 *   runloop-mcp: <level>: <plugin>: message
 *   runloop-mcp: <level>: message            (host messages)
 *
 * Thread-safe: lines never interleave and none is ever written in half
 * (a stream socket that takes part of a line gets the rest before the next
 * one). Never log secrets.
 *
 * Waits at most a short grace (tens of milliseconds) per line, never for
 * a reader: a pipe or terminal is written through a non-blocking file
 * description of our own; a socket with MSG_DONTWAIT; where stderr cannot
 * be reopened (no /proc) the shared descriptor is written only after
 * poll() says it has room, and a warning says so once. A line that finds
 * no room is given the grace once (not while lines are being dropped),
 * then dropped and counted; the count is logged as a warning line once
 * stderr takes lines again, and is rlmcp_log_lines_dropped_total in
 * /metrics. A regular file is written as is (it does not fill).
 */
#ifndef RLMCP_HOST_LOG_H
#define RLMCP_HOST_LOG_H

#include <stdarg.h>
#include <stdint.h>

#include "rlmcp/plugin.h" /* enum rlmcp_log_level */

/* Messages below this level are dropped. Default RLMCP_LOG_INFO. */
void log_set_level(int level);
int log_get_level(void);

/* "debug", "info", "notice", "warning", "error", "critical", "alert",
 * "emergency" -> level, or -1 when unknown. */
int log_level_parse(const char *name);
/* The reverse; "unknown" for out-of-range levels. */
const char *log_level_name(int level);

/* who: a plugin name, or NULL for the host itself. */
void log_msg(int level, const char *who, const char *fmt, ...)
    RLMCP_PRINTF(3, 4);
void log_vmsg(int level, const char *who, const char *fmt, va_list ap)
    RLMCP_PRINTF(3, 0);

/* Lines dropped so far because stderr was full. */
uint64_t log_dropped_lines(void);
/* How long a line may wait for room before it is dropped (default 50 ms);
 * for tests, which must not depend on a thread waking within 50 ms. */
void log_set_grace_ms(int ms);

/*
 * Redirect finished lines (without the trailing newline) to fn instead of
 * stderr; NULL restores stderr. For tests that check log text.
 */
/* Tests: reopen stderr from path instead of /proc/self/fd/2 (NULL: the
 * default) and choose the way of writing again on the next line. */
void log_test_set_reopen_path(const char *path);

typedef void (*log_sink_fn)(void *user, int level, const char *line);
void log_set_sink(log_sink_fn fn, void *user);

#endif
