/* Multipart parsing (multipart.c): the parts of a multipart/form-data
 * body, as the file upload route receives it. */
#ifndef DEVBOXD_MULTIPART_H
#define DEVBOXD_MULTIPART_H

#include <stddef.h>

/* One part: its form field name, its filename and its bytes (pointing into
 * the body). */
struct multipart_part {
    char name[128];
    char filename[256];
    const char *data;
    size_t len;
};

/* The boundary of a multipart/form-data Content-Type into out: 0, or -1
 * when content_type is not one or its boundary is missing or too long. */
int multipart_boundary(const char *content_type, char *out, size_t outlen);
/* Finds the parts of body (at most max_parts, their count in *n_parts).
 * Returns 0 or -1 with a message. */
int multipart_parse(const char *body, size_t len, const char *boundary,
                    struct multipart_part *parts, size_t max_parts,
                    size_t *n_parts, char *err, size_t errlen);

#endif
