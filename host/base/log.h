/*
 * log.h - the host's log: one line per message, stderr only (stdout belongs
 * to the MCP protocol on stdio).
 *
 *   runloop-mcp: <level>: <plugin>: message
 *   runloop-mcp: <level>: message            (host messages)
 *
 * Thread-safe: each line goes out in one write. Never log secrets.
 * Never blocks: when stderr is a pipe nobody reads and it is full, a line
 * is dropped and counted; the count is logged as a warning line once
 * stderr takes lines again, and is rlmcp_log_lines_dropped_total in
 * /metrics.
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

/*
 * Redirect finished lines (without the trailing newline) to fn instead of
 * stderr; NULL restores stderr. For tests that check log text.
 */
typedef void (*log_sink_fn)(void *user, int level, const char *line);
void log_set_sink(log_sink_fn fn, void *user);

#endif
