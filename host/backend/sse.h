/*
 * sse.h - an incremental parser for server-sent event streams.
 *
 * Follows the WHATWG "event stream interpretation" rules: lines end with
 * CRLF, LF or CR (also split across chunks); "event:", "data:" (several
 * lines joined with "\n"), "id:" (sticky across events, ignored when it
 * contains NUL), "retry:" (digits only); lines starting with ':' are
 * comments; a leading UTF-8 BOM is skipped; an event is dispatched at a
 * blank line and only when it carries data. An event without an "event:"
 * field is reported with the name "message". Feed bytes in chunks of any
 * size; an unfinished event at end of stream is discarded, as the spec says.
 */
#ifndef RLMCP_HOST_SSE_H
#define RLMCP_HOST_SSE_H

#include <stddef.h>

/* Return 0 to go on, non-zero to stop the stream. Pointers are borrowed. */
typedef int (*sse_event_fn)(void *user, const char *event, const char *id,
                            const char *data, size_t data_len);

enum sse_status {
    SSE_OK = 0,
    SSE_STOPPED = 1,    /* the callback returned non-zero */
    SSE_TOO_LARGE = -1, /* an event or line exceeded max_event bytes */
    SSE_NOMEM = -2,
};

struct sse_parser;

/* max_event bounds one event's data (and any one line); 0 means 1 MiB. */
struct sse_parser *sse_parser_new(size_t max_event, sse_event_fn fn,
                                  void *user);
void sse_parser_free(struct sse_parser *p);

/*
 * Feed bytes. Returns SSE_OK, SSE_STOPPED, SSE_TOO_LARGE or SSE_NOMEM; after
 * anything but SSE_OK the parser refuses further input with the same code.
 */
int sse_parser_feed(struct sse_parser *p, const char *buf, size_t len);

/* The last "retry:" value in ms, or -1 when none was seen. */
long sse_parser_retry_ms(const struct sse_parser *p);

/* The last event id ("" when none). Borrowed until the next feed. */
const char *sse_parser_last_id(const struct sse_parser *p);

/* Number of events dispatched so far. */
size_t sse_parser_events(const struct sse_parser *p);

#endif
