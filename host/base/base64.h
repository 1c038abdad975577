/*
 * base64.h - the host's one Base64 codec (RFC 4648): the standard alphabet
 * with padding, or base64url without it. The transforms are libcrypto's
 * (EVP_EncodeBlock/EVP_DecodeBlock, loaded on first use); what this adds is
 * the strict check libcrypto does not make (it skips white space and takes
 * '=' anywhere), so every decoder in the host accepts the same texts.
 */
#ifndef RLMCP_HOST_BASE64_H
#define RLMCP_HOST_BASE64_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* The longest input base64_encode takes: its text must fit an int. */
#define BASE64_MAX_INPUT ((size_t)(INT_MAX / 4) * 3)

/*
 * The text of data[0..len): standard Base64 with '=' padding, or with url
 * base64url without padding. Returns a NUL-terminated string the caller
 * frees, or NULL (len over BASE64_MAX_INPUT, out of memory, or the crypto
 * module missing: logged).
 */
char *base64_encode(const void *data, size_t len, bool url);

/*
 * Decode s[0..n). Standard: whole quads of the standard alphabet, '=' only
 * as the last one or two characters. url: the base64url alphabet, no
 * padding, n % 4 != 1. Returns the bytes, NUL-terminated (not counted in
 * *out_len), which the caller frees; NULL when the text is not valid or on
 * out of memory. An empty text decodes to no bytes.
 */
unsigned char *base64_decode(const char *s, size_t n, bool url,
                             size_t *out_len);

#endif
