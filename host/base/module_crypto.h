/*
 * module_crypto.h - the table rlmcp_crypto.so exports: the few OpenSSL
 * libcrypto functions the host calls (SHA-256, HMAC-SHA256, base64, a
 * constant-time comparison), so that libcrypto is mapped when a digest is
 * first needed rather than at start (modules.h). crypto_stub.c defines the
 * functions the host links against; each forwards through this table.
 */
#ifndef RLMCP_HOST_MODULE_CRYPTO_H
#define RLMCP_HOST_MODULE_CRYPTO_H

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "modules.h"

struct module_crypto {
    struct module_head head;
    int (*memcmp_ct)(const void *a, const void *b, size_t len);
    int (*encode_block)(unsigned char *t, const unsigned char *f, int n);
    int (*decode_block)(unsigned char *t, const unsigned char *f, int n);
    int (*digest)(const void *data, size_t count, unsigned char *md,
                  unsigned int *size, const EVP_MD *type, ENGINE *impl);
    const EVP_MD *(*sha256_md)(void);
    unsigned char *(*hmac)(const EVP_MD *evp_md, const void *key, int key_len,
                           const unsigned char *data, size_t data_len,
                           unsigned char *md, unsigned int *md_len);
    unsigned char *(*sha256)(const unsigned char *d, size_t n,
                             unsigned char *md);
};

#endif
