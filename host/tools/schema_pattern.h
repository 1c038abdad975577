/*
 * schema_pattern.h - JSON Schema "pattern" matching: ECMA-262 regular
 * expressions run by PCRE2 in its JavaScript-compatible mode.
 *
 * Patterns are compiled once and kept in a cache shared by all threads,
 * keyed by their text; schema_check() compiles every pattern of a schema,
 * so validation finds them ready. Matching runs under PCRE2's match, depth
 * and heap limits, so a pattern that backtracks catastrophically on some
 * value fails that value instead of hanging the caller. docs/schema.md
 * lists the dialect and the limits.
 */
#ifndef RLMCP_HOST_SCHEMA_PATTERN_H
#define RLMCP_HOST_SCHEMA_PATTERN_H

#include <stddef.h>

enum schema_pattern_result {
    SCHEMA_PATTERN_LIMIT = -2, /* gave up: the match limits were reached */
    SCHEMA_PATTERN_BAD = -1,   /* the pattern is not usable (or no memory) */
    SCHEMA_PATTERN_NO_MATCH = 0,
    SCHEMA_PATTERN_MATCH = 1,
};

/*
 * Compile pattern (and cache it): 0, or -1 with the reason in why (which
 * names the offending part of the pattern). why may be NULL. Threads: any.
 */
int schema_pattern_check(const char *pattern, char *why, size_t whylen);

/*
 * Search subject (NUL-terminated, any bytes: invalid UTF-8 never matches a
 * character) for pattern, unanchored as in ECMA-262. why (may be NULL) says
 * what went wrong for the two negative results. Threads: any.
 */
enum schema_pattern_result schema_pattern_match(const char *pattern,
                                                const char *subject, char *why,
                                                size_t whylen);

/*
 * Free the compiled patterns and the calling thread's match memory. Call
 * when no matching runs; later calls rebuild what they need.
 */
void schema_pattern_cleanup(void);

#endif
