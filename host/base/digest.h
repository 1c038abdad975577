/*
 * digest.h - SHA-256 and HMAC-SHA256 as the host uses them: a keyed
 * signature (request state, task ids, session credential binding) and an
 * unkeyed fingerprint (audit, task caller).
 */
#ifndef RLMCP_HOST_DIGEST_H
#define RLMCP_HOST_DIGEST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define DIGEST_BYTES 32

/* A process's HMAC key; a key shorter than DIGEST_BYTES is zero-padded,
 * which HMAC does anyway, a longer one is cut. */
struct digest_key {
    pthread_mutex_t lock;
    unsigned char key[DIGEST_BYTES];
    bool set;
};

#define DIGEST_KEY_INIT                                                        \
    {                                                                          \
        PTHREAD_MUTEX_INITIALIZER, {0}, false                                  \
    }

/* Set k to key[0..len), or to random bytes when len is 0. Returns 0, or
 * -1 when the random source failed (k unchanged). */
int digest_key_set(struct digest_key *k, const unsigned char *key, size_t len);

/* out = HMAC-SHA256(k, data); a k never set gets a random key first.
 * Returns 0, or -1 (out not filled). */
int digest_hmac(struct digest_key *k, const void *data, size_t len,
                unsigned char out[DIGEST_BYTES]);

/* Lower-case hex of in[0..n) into out (2n + 1 bytes). */
void digest_hex(const unsigned char *in, size_t n, char *out);

/* Lower-case hex SHA-256 of data into out (65 bytes); "" on failure. */
void digest_sha256_hex(const void *data, size_t len, char out[65]);

/* Who is calling, for binding task ids and input-round states to the caller:
 * hex SHA-256 of the credential into out (65 bytes), "-" without one. */
void digest_caller(const char *api_key, char out[65]);

#endif
