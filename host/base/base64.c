/*
 * base64.c - see base64.h.
 */
#include "base64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

char *base64_encode(const void *data, size_t len, bool url)
{
    char *out = NULL;
    size_t n = 0;
    size_t i = 0;

    /* libcrypto counts in int: a longer input would be cut short. */
    if (len > BASE64_MAX_INPUT)
        return NULL;
    out = malloc(4 * ((len + 2) / 3) + 1);
    if (out == NULL)
        return NULL;
    if (EVP_EncodeBlock((unsigned char *)out, data, (int)len) < 0) {
        free(out);
        return NULL;
    }
    if (!url)
        return out;
    n = strlen(out);
    while (n > 0 && out[n - 1] == '=')
        out[--n] = '\0';
    for (i = 0; i < n; i++) {
        if (out[i] == '+')
            out[i] = '-';
        else if (out[i] == '/')
            out[i] = '_';
    }
    return out;
}

static bool alnum(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
           (ch >= '0' && ch <= '9');
}

/*
 * Copy s[0..n) into tmp as standard Base64 with its padding; *pad gets the
 * number of '='. False when s is not valid in its alphabet.
 */
static bool normalise(const char *s, size_t n, bool url, char *tmp, size_t *pad)
{
    size_t body = n;
    size_t i = 0;

    *pad = 0;
    if (url) {
        *pad = (4 - n % 4) % 4;
        if (*pad == 3)
            return false;
    } else {
        if (n % 4 != 0)
            return false;
        while (body > 0 && *pad < 2 && s[body - 1] == '=') {
            body--;
            (*pad)++;
        }
    }
    for (i = 0; i < body; i++) {
        char ch = s[i];

        if (url && ch == '-')
            ch = '+';
        else if (url && ch == '_')
            ch = '/';
        else if (!alnum(ch) && (url || (ch != '+' && ch != '/')))
            return false;
        tmp[i] = ch;
    }
    memset(tmp + body, '=', *pad);
    tmp[body + *pad] = '\0';
    return true;
}

unsigned char *base64_decode(const char *s, size_t n, bool url, size_t *out_len)
{
    char *tmp = NULL;
    unsigned char *out = NULL;
    size_t pad = 0;
    size_t full = 0;
    int got = 0;

    if (n > (size_t)INT32_MAX - 4)
        return NULL;
    tmp = malloc(n + 4);
    if (tmp == NULL || !normalise(s, n, url, tmp, &pad))
        goto fail;
    full = strlen(tmp);
    out = malloc(full / 4 * 3 + 1);
    if (out == NULL)
        goto fail;
    if (full > 0)
        got = EVP_DecodeBlock(out, (unsigned char *)tmp, (int)full);
    /* EVP_DecodeBlock counts the '=' padding as zero bytes. */
    if (got < 0 || (size_t)got < pad)
        goto fail;
    *out_len = (size_t)got - pad;
    out[*out_len] = '\0';
    free(tmp);
    return out;
fail:
    free(tmp);
    free(out);
    return NULL;
}
