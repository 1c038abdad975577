/*
 * metrics.h - what an operator of the HTTP server watches, as Prometheus
 * text (exposition format 0.0.4) at GET /metrics (docs/operations.md):
 *
 *   rlmcp_tool_calls_total{tool,outcome}          counter
 *   rlmcp_tool_call_duration_seconds{tool}        histogram
 *   rlmcp_tool_errors_total{code}                 counter
 *   rlmcp_calls_in_flight                         gauge
 *   rlmcp_http_sessions                           gauge (from the transport)
 *   rlmcp_backend_requests_total{status}          counter (2xx..5xx, error)
 *   rlmcp_backend_retries_total                   counter
 *   rlmcp_backend_circuit_state                   gauge (0, 1 open, 2 probing)
 *   rlmcp_log_lines_dropped_total                 counter (stderr full)
 *   rlmcp_build_info{version}                     gauge, always 1
 *
 * Process-wide and thread-safe: calls finish on worker threads, backend
 * requests on any thread, renders on the transport's thread.
 */
#ifndef RLMCP_HOST_METRICS_H
#define RLMCP_HOST_METRICS_H

#include <stdbool.h>
#include <stddef.h>

/* A tools/call began (in flight until metrics_call_end). */
void metrics_call_begin(void);

/*
 * A tools/call ended. outcome: "ok", "error" (a tool error result; code is
 * its error code), "cancelled", "timeout", "shutdown" or "internal".
 */
void metrics_call_end(const char *tool, const char *outcome, const char *code,
                      double seconds);

/* One backend attempt: its HTTP status, or 0 when none came (connection
 * failure, timeout). */
void metrics_backend_attempt(long status);
void metrics_backend_retry(void);

/*
 * Where rlmcp_backend_circuit_state comes from (0 closed, 1 open, 2
 * half-open): fn(ctx) at render time; NULL: not shown.
 */
void metrics_set_circuit_source(int (*fn)(void *ctx), void *ctx);

/* The values only the transport knows, at render time. */
struct metrics_gauges {
    long sessions; /* < 0: not shown */
};

/* The exposition text (malloc'd; free it), or NULL when out of memory. */
char *metrics_render(const struct metrics_gauges *g, size_t *len);

/* Forget everything (tests). */
void metrics_reset(void);

#endif
