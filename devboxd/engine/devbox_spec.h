/* devboxd devbox create bodies (devbox_spec.c). */
#ifndef DEVBOXD_DEVBOX_SPEC_H
#define DEVBOXD_DEVBOX_SPEC_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Validates a create body and returns the normalised spec to keep, or NULL
 * with a message (and the HTTP status in *status). */
cJSON *devbox_spec_validate(const cJSON *body, int *status, char *err,
                            size_t errlen);

#endif
