/*
 * random.c - bytes from the kernel's random source (see random.h).
 */
#define _GNU_SOURCE
#include "random.h"

#include <errno.h>
#include <sys/random.h>
#include <sys/types.h>

int random_fill(void *buf, size_t len)
{
    unsigned char *p = buf;
    size_t got = 0;

    while (got < len) {
        ssize_t n = getrandom(p + got, len - got, 0);

        if (n < 0 && errno != EINTR)
            return -1;
        if (n > 0)
            got += (size_t)n;
    }
    return 0;
}
