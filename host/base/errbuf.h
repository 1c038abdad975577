/*
 * errbuf.h - filling a caller's error buffer: the (char *err, size_t
 * errlen) pair the host's functions take to say why they failed.
 */
#ifndef RLMCP_HOST_ERRBUF_H
#define RLMCP_HOST_ERRBUF_H

#include <stddef.h>

#include "rlmcp/plugin.h" /* RLMCP_PRINTF */

/*
 * Format into err (errlen bytes, cut to fit and always NUL-terminated).
 * err may be NULL or errlen 0: then nothing is written. Thread-safe.
 */
void errbuf_set(char *err, size_t errlen, const char *fmt, ...)
    RLMCP_PRINTF(3, 4);

#endif
