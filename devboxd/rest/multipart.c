/* A small multipart/form-data parser over a buffered body (RFC 7578).
 * Both transports buffer the upload (bounded), so one parser serves
 * HTTP/1.1 and HTTP/2 alike; Debian ships no multipart library. Parts point
 * into the body; nothing is copied. Fuzzed by tests/unit/test_multipart. */
#define _GNU_SOURCE
#include "multipart.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int multipart_boundary(const char *content_type, char *out, size_t outlen)
{
    const char *p = NULL;
    size_t len = 0;

    if (content_type == NULL ||
        strncasecmp(content_type, "multipart/form-data", 19) != 0)
        return -1;
    p = strcasestr(content_type, "boundary=");
    if (p == NULL)
        return -1;
    p += 9;
    if (*p == '"') {
        const char *end = strchr(p + 1, '"');

        if (end == NULL)
            return -1;
        p++;
        len = (size_t)(end - p);
    } else {
        len = strcspn(p, "; \t");
    }
    if (len == 0 || len > 70 || len + 1 > outlen)
        return -1;
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}

/* Copies the value of param (name= or filename=) from a Content-Disposition
 * header line into out. */
static void disposition_param(const char *line, size_t linelen,
                              const char *param, char *out, size_t outlen)
{
    size_t plen = strlen(param);
    size_t i;

    out[0] = '\0';
    for (i = 0; i + plen + 1 < linelen; i++) {
        size_t j = 0;

        if (strncasecmp(line + i, param, plen) != 0 || line[i + plen] != '=')
            continue;
        if (i > 0 && line[i - 1] != ' ' && line[i - 1] != ';' &&
            line[i - 1] != '\t')
            continue;
        i += plen + 1;
        if (i < linelen && line[i] == '"') {
            i++;
            while (i < linelen && line[i] != '"' && j + 1 < outlen) {
                if (line[i] == '\\' && i + 1 < linelen)
                    i++;
                out[j++] = line[i++];
            }
        } else {
            while (i < linelen && line[i] != ';' && j + 1 < outlen)
                out[j++] = line[i++];
        }
        out[j] = '\0';
        return;
    }
}

static int parse_headers(const char *h, size_t hlen,
                         struct multipart_part *part, char *err, size_t errlen)
{
    size_t pos = 0;
    int have_disposition = 0;

    while (pos < hlen) {
        const char *eol = memmem(h + pos, hlen - pos, "\r\n", 2);
        size_t linelen = eol != NULL ? (size_t)(eol - (h + pos)) : hlen - pos;
        const char *line = h + pos;

        if (linelen > 20 &&
            strncasecmp(line, "content-disposition:", 20) == 0) {
            disposition_param(line + 20, linelen - 20, "name", part->name,
                              sizeof(part->name));
            disposition_param(line + 20, linelen - 20, "filename",
                              part->filename, sizeof(part->filename));
            have_disposition = 1;
        }
        pos += linelen + 2;
    }
    if (!have_disposition || part->name[0] == '\0') {
        snprintf(err, errlen,
                 "a multipart part has no Content-Disposition name");
        return -1;
    }
    return 0;
}

int multipart_parse(const char *body, size_t len, const char *boundary,
                    struct multipart_part *parts, size_t max_parts,
                    size_t *n_parts, char *err, size_t errlen)
{
    char delim[80];
    size_t dlen;
    const char *p = NULL;
    const char *end = body + len;

    *n_parts = 0;
    dlen = (size_t)snprintf(delim, sizeof(delim), "--%s", boundary);
    if (dlen >= sizeof(delim)) {
        snprintf(err, errlen, "multipart boundary too long");
        return -1;
    }
    p = memmem(body, len, delim, dlen);
    if (p == NULL) {
        snprintf(err, errlen, "multipart body does not contain its boundary");
        return -1;
    }
    p += dlen;
    for (;;) {
        const char *hdr_end = NULL;
        const char *next = NULL;
        struct multipart_part *part = NULL;

        if (end - p >= 2 && p[0] == '-' && p[1] == '-')
            return 0; /* closing delimiter */
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n') {
            snprintf(err, errlen, "malformed multipart body after a boundary");
            return -1;
        }
        p += 2;
        hdr_end = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
        if (hdr_end == NULL) {
            snprintf(err, errlen, "multipart part headers are not terminated");
            return -1;
        }
        if (*n_parts == max_parts) {
            snprintf(err, errlen, "too many multipart parts (at most %zu)",
                     max_parts);
            return -1;
        }
        part = &parts[*n_parts];
        memset(part, 0, sizeof(*part));
        if (parse_headers(p, (size_t)(hdr_end - p) + 2, part, err, errlen) != 0)
            return -1;
        p = hdr_end + 4;
        /* The part ends at CRLF followed by the delimiter. */
        next = p;
        for (;;) {
            next = memmem(next, (size_t)(end - next), delim, dlen);
            if (next == NULL) {
                snprintf(
                    err, errlen,
                    "multipart part '%s' is not terminated by the boundary",
                    part->name);
                return -1;
            }
            if (next - p >= 2 && next[-2] == '\r' && next[-1] == '\n')
                break;
            next += 1;
        }
        part->data = p;
        part->len = (size_t)(next - 2 - p);
        (*n_parts)++;
        p = next + dlen;
    }
}
