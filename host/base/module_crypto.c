/*
 * module_crypto.c - rlmcp_crypto.so: the libcrypto functions the host
 * calls, as a table (module_crypto.h).
 */
#include "module_crypto.h"

#ifndef RLMCP_VERSION
#define RLMCP_VERSION "0.0.0"
#endif

__attribute__((visibility("default")))
const struct module_crypto rlmcp_module_crypto = {
    .head = {MODULE_ABI, sizeof(struct module_crypto), RLMCP_VERSION},
    .memcmp_ct = CRYPTO_memcmp,
    .encode_block = EVP_EncodeBlock,
    .decode_block = EVP_DecodeBlock,
    .digest = EVP_Digest,
    .sha256_md = EVP_sha256,
    .hmac = HMAC,
    .sha256 = SHA256,
};
