/*
 * random.h - bytes from the kernel's random source.
 */
#ifndef RLMCP_HOST_RANDOM_H
#define RLMCP_HOST_RANDOM_H

#include <stddef.h>

/*
 * Fill buf with len bytes from getrandom(2), across short reads and
 * EINTR. Returns 0, or -1 (errno set). There is no fallback: ids, keys
 * and salts made from guessable bytes would be guessable, so a caller
 * refuses whatever needed the bytes.
 */
int random_fill(void *buf, size_t len);

#endif
