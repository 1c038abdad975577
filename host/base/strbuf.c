/*
 * strbuf.c - a growing text buffer (see strbuf.h).
 */
#include "strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int strbuf_add(struct strbuf *b, const void *s, size_t n)
{
    size_t want = b->len + n + 1;
    size_t cap = b->cap != 0 ? b->cap : 64;
    char *np = NULL;

    if (b->oom || want < n || want > SIZE_MAX / 2)
        goto oom;
    if (want > b->cap) {
        while (cap < want)
            cap *= 2;
        np = realloc(b->p, cap);
        if (np == NULL)
            goto oom;
        b->p = np;
        b->cap = cap;
    }
    if (n > 0)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
oom:
    b->oom = true;
    return -1;
}

const char *strbuf_str(const struct strbuf *b)
{
    return b->p != NULL ? b->p : "";
}
