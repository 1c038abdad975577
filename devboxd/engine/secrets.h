/* devboxd account secrets (secrets.c).
 *
 * /v1/secrets, keyed by name. Values are write-only: no view,
 * list or log carries them. Each secret is one 0600 record under
 * <state>/secrets/ (devboxd's own directory, outside every devbox).
 * A devbox create's `secrets: {ENV: NAME}` copies the values into the
 * devbox's private spec ("_secret_env"), so deleting or updating a secret
 * later does not change a devbox already created.
 * See docs/devboxd.md. */
#ifndef DEVBOXD_SECRETS_H
#define DEVBOXD_SECRETS_H

#include <cjson/cJSON.h>

#include "engine.h"

#define SECRET_NAME_MAX 128
#define SECRET_VALUE_MAX (32 * 1024)
#define SECRETS_MAX 5000

/* The calls behind /v1/secrets (rest/api_secrets.c): 0, or an HTTP status
 * with a message in err; *view is a SecretView (never the value). */
int secrets_create(struct engine *eng, const cJSON *body, cJSON **view,
                   char *err, size_t errlen);
int secrets_update(struct engine *eng, const char *name, const cJSON *body,
                   cJSON **view, char *err, size_t errlen);
int secrets_delete(struct engine *eng, const char *name, cJSON **view,
                   char *err, size_t errlen);
int secrets_get(struct engine *eng, const char *name, cJSON **view, char *err,
                size_t errlen);
/* Every secret's view, newest first. */
cJSON *secrets_list(struct engine *eng);
/* 0 for a valid secret name, else 400 with err saying what one looks like. */
int secrets_check_name(const char *name, char *err, size_t errlen);
/* Checks the shape of a create body's `secrets` map (keys are variable
 * names, values secret names). 0 or -1 with err. */
int secrets_check_spec(const cJSON *body, char *err, size_t errlen);
/* Resolves a create body's `secrets` into spec "_secret_env" {ENV: value}.
 * 0, or an HTTP status (400 for a missing secret) with err. */
int secrets_resolve_create(struct engine *eng, const cJSON *body, cJSON *spec,
                           char *err, size_t errlen);
/* A secret's value by name or sec_ id (malloc'd), or NULL when missing;
 * *id_out (>= 40 bytes, may be NULL) receives its id. */
char *secrets_value(struct engine *eng, const char *name_or_id, char *id_out);
/* 1 when s is a valid secret name. */
int secrets_name_valid(const char *s);

#endif
