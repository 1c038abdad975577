/*
 * fuzz_util.h - checks shared by the harnesses. A failed check aborts, so
 * libFuzzer (or the replay driver) reports the input.
 */
#ifndef RLMCP_FUZZ_UTIL_H
#define RLMCP_FUZZ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_REQUIRE(cond, ...)                                                \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz check failed: %s: ", #cond);                 \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* Strict UTF-8 (no overlongs, surrogates or values past U+10FFFF). */
static inline bool fuzz_valid_utf8(const unsigned char *p, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned c = p[i];
        size_t len = c < 0x80                   ? 1
                     : (c >= 0xC2 && c <= 0xDF) ? 2
                     : (c >= 0xE0 && c <= 0xEF) ? 3
                     : (c >= 0xF0 && c <= 0xF4) ? 4
                                                : 0;
        unsigned cp = 0;
        size_t k;

        if (len == 0 || i + len > n) {
            return false;
        }
        cp = len == 1 ? c : c & (0xFF >> (len + 1));
        for (k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
            return false;
        }
        i += len;
    }
    return true;
}

#endif
