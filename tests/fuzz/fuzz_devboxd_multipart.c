/*
 * fuzz_devboxd_multipart.c - upload_file's multipart/form-data parsing:
 * the boundary from a Content-Type (multipart_boundary) and the parts of a
 * body (multipart_parse). Input: a Content-Type value, a newline, the body.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "multipart.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = NULL;
    char ctype[1024];
    char boundary[256];
    char err[512];
    struct multipart_part parts[8];
    size_t ctlen;
    size_t n = 0;
    size_t i;
    char *body = NULL;
    size_t blen;

    if (data == NULL)
        return 0; /* the replay driver's final call */
    nl = memchr(data, '\n', size);
    if (nl == NULL)
        return 0;
    ctlen = (size_t)(nl - data);
    if (ctlen >= sizeof(ctype))
        return 0;
    memcpy(ctype, data, ctlen);
    ctype[ctlen] = '\0';
    if (multipart_boundary(ctype, boundary, sizeof(boundary)) != 0)
        return 0;
    FUZZ_REQUIRE(boundary[0] != '\0', "empty boundary accepted");
    blen = size - ctlen - 1;
    body = malloc(blen + 1); /* exact size: ASan sees any read past it */
    if (body == NULL)
        return 0;
    memcpy(body, nl + 1, blen);
    err[0] = '\0';
    if (multipart_parse(body, blen, boundary, parts, 8, &n, err, sizeof(err)) ==
        0) {
        FUZZ_REQUIRE(n <= 8, "%zu parts", n);
        for (i = 0; i < n; i++) {
            FUZZ_REQUIRE(parts[i].data >= body &&
                             parts[i].data + parts[i].len <= body + blen,
                         "part %zu outside the body", i);
            FUZZ_REQUIRE(memchr(parts[i].name, '\0', sizeof(parts[i].name)) !=
                                 NULL &&
                             memchr(parts[i].filename, '\0',
                                    sizeof(parts[i].filename)) != NULL,
                         "part %zu name not terminated", i);
        }
    } else {
        FUZZ_REQUIRE(err[0] != '\0', "a refused body has no message");
    }
    free(body);
    return 0;
}
