/*
 * crypto_stub.c - the libcrypto functions the host calls, each forwarding
 * to rlmcp_crypto.so (module_crypto.h), which the first of them loads: an
 * idle deployment never maps libcrypto. As in curl_stub.c, these stay out
 * of the dynamic symbol table. When the module is missing (a broken
 * install), each fails as libcrypto fails (NULL, 0, -1) and the reason is
 * logged once; the callers already handle those failures, and a
 * comparison that cannot run never says equal.
 */
#include <string.h>

#include "log.h"
/* Hidden: never exported, so a library linked beside the host (the
 * tests link libcurl and libssl) can never bind to these. */
#include "modules.h"
#pragma GCC visibility push(hidden)
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#pragma GCC visibility pop
#include "module_crypto.h"
#include "random.h"

static const struct module_crypto *fns(void)
{
    static int logged;
    char err[768] = "";
    const struct module_crypto *f =
        modules_get(MODULE_CRYPTO, err, sizeof(err));

    if (f == NULL && __atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED) == 0)
        log_msg(RLMCP_LOG_ERROR, NULL, "%s", err);
    return f;
}

int CRYPTO_memcmp(const void *a, const void *b, size_t len)
{
    const struct module_crypto *f = fns();

    return f != NULL ? f->memcmp_ct(a, b, len) : 1;
}

int EVP_EncodeBlock(unsigned char *t, const unsigned char *from, int n)
{
    const struct module_crypto *f = fns();

    if (f == NULL) {
        t[0] = '\0'; /* a caller that reads the text finds it empty */
        return -1;
    }
    return f->encode_block(t, from, n);
}

int EVP_DecodeBlock(unsigned char *t, const unsigned char *from, int n)
{
    const struct module_crypto *f = fns();

    return f != NULL ? f->decode_block(t, from, n) : -1;
}

int EVP_Digest(const void *data, size_t count, unsigned char *md,
               unsigned int *size, const EVP_MD *type, ENGINE *impl)
{
    const struct module_crypto *f = fns();

    return f != NULL ? f->digest(data, count, md, size, type, impl) : 0;
}

const EVP_MD *EVP_sha256(void)
{
    const struct module_crypto *f = fns();

    return f != NULL ? f->sha256_md() : NULL;
}

unsigned char *HMAC(const EVP_MD *evp_md, const void *key, int key_len,
                    const unsigned char *data, size_t data_len,
                    unsigned char *md, unsigned int *md_len)
{
    const struct module_crypto *f = fns();

    if (f == NULL)
        return NULL;
    return f->hmac(evp_md, key, key_len, data, data_len, md, md_len);
}

/* A caller that ignores the NULL still gets no predictable key: md is
 * filled from the random source (or with 0xff when that fails too). */
unsigned char *SHA256(const unsigned char *d, size_t n, unsigned char *md)
{
    const struct module_crypto *f = fns();

    if (f != NULL)
        return f->sha256(d, n, md);
    if (md != NULL && random_fill(md, SHA256_DIGEST_LENGTH) != 0)
        memset(md, 0xff, SHA256_DIGEST_LENGTH);
    return NULL;
}
