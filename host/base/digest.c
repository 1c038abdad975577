/*
 * digest.c - SHA-256 and HMAC-SHA256 helpers (see digest.h).
 */
#define _GNU_SOURCE
#include "digest.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "random.h"

int digest_key_set(struct digest_key *k, const unsigned char *key, size_t len)
{
    unsigned char raw[DIGEST_BYTES];

    if (len == 0) {
        if (random_fill(raw, sizeof(raw)) != 0)
            return -1;
        key = raw;
        len = sizeof(raw);
    }
    pthread_mutex_lock(&k->lock);
    memset(k->key, 0, sizeof(k->key));
    memcpy(k->key, key, len < sizeof(k->key) ? len : sizeof(k->key));
    k->set = true;
    pthread_mutex_unlock(&k->lock);
    explicit_bzero(raw, sizeof(raw));
    return 0;
}

int digest_hmac(struct digest_key *k, const void *data, size_t len,
                unsigned char out[DIGEST_BYTES])
{
    unsigned char raw[DIGEST_BYTES];
    unsigned int n = 0;
    bool set = false;

    pthread_mutex_lock(&k->lock);
    set = k->set;
    pthread_mutex_unlock(&k->lock);
    if (!set && random_fill(raw, sizeof(raw)) != 0)
        return -1;
    pthread_mutex_lock(&k->lock);
    if (!k->set) { /* the first signer's key stays: no re-keying race */
        memcpy(k->key, raw, sizeof(k->key));
        k->set = true;
    }
    if (HMAC(EVP_sha256(), k->key, sizeof(k->key), data, len, out, &n) == NULL)
        n = 0;
    pthread_mutex_unlock(&k->lock);
    explicit_bzero(raw, sizeof(raw));
    return n == DIGEST_BYTES ? 0 : -1;
}

void digest_hex(const unsigned char *in, size_t n, char *out)
{
    size_t i = 0;

    for (i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", in[i]);
    out[2 * n] = '\0';
}

void digest_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    out[0] = '\0';
    if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1 ||
        n != DIGEST_BYTES)
        return;
    digest_hex(md, n, out);
}

void digest_caller(const char *api_key, char out[65])
{
    if (api_key == NULL || api_key[0] == '\0') {
        snprintf(out, 65, "-");
        return;
    }
    digest_sha256_hex(api_key, strlen(api_key), out);
}
