/*
 * strbuf.h - a growing, NUL-terminated text buffer: the host's one way to
 * build a string piece by piece.
 */
#ifndef RLMCP_HOST_STRBUF_H
#define RLMCP_HOST_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Zero-initialise ({0}); p is the caller's to free. */
struct strbuf {
    char *p;    /* NULL until the first add */
    size_t len; /* bytes in p, without the NUL */
    size_t cap;
    bool oom; /* an add ran out of memory: every later add fails too */
};

/*
 * Append n bytes of s and keep p NUL-terminated (n may be 0: p then
 * exists). 0, or -1 when memory ran out (the text is left as it was).
 */
int strbuf_add(struct strbuf *b, const void *s, size_t n);

/* The text so far; "" before the first add. */
const char *strbuf_str(const struct strbuf *b);

#endif
