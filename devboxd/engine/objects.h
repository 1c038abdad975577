/* devboxd storage objects (objects.c).
 *
 * /v1/objects: an object is created (UPLOADING, with an upload_url), its
 * bytes are PUT to that URL, and complete makes it READ_ONLY; download
 * hands out a URL that serves the bytes. The URLs carry an expiry and an
 * HMAC of the engine's API key instead of the key, as presigned URLs do,
 * so clients send them without credentials. Each object is a 0600 record
 * and a data file under <state>/objects/. A devbox create's
 * `mounts: [{type: "object_mount", object_id, object_path}]` writes an
 * object into the devbox at boot (archives unpacked). See docs/devboxd.md. */
#ifndef DEVBOXD_OBJECTS_H
#define DEVBOXD_OBJECTS_H

#include <cjson/cJSON.h>

#include "engine.h"
#include "http.h"

#define OBJECT_NAME_MAX 512
#define OBJECTS_MAX 10000
/* One object's bytes: one upload request body. */
#define OBJECT_MAX_BYTES HTTP_MAX_UPLOAD_BODY

/* /v1/objects[...]: seg[1] == "objects". */
void objects_route(struct engine *eng, char **seg, size_t n,
                   const struct http_request *req, struct http_response *resp);
/* 1 when req is an upload (PUT .../upload) or download (GET .../content)
 * of an object carrying a valid, unexpired signature: it needs no key. */
int objects_signed_request(struct engine *eng, const struct http_request *req);
/* Checks one `mounts[]` entry of type object_mount (where: "mounts[3]").
 * 0 or -1 with err. */
int objects_check_mount(const cJSON *mount, const char *where, char *err,
                        size_t errlen);
/* Every object_mount of a create body must name a READ_ONLY object: 0, or
 * 400 with err. Records each mount's content_type in spec "_object_mounts". */
int objects_resolve_create(struct engine *eng, const cJSON *body, cJSON *spec,
                           char *err, size_t errlen);
/* Opens a READ_ONLY object's bytes for reading: an fd, or -1 with err. */
int objects_open(struct engine *eng, const char *id, char *err, size_t errlen);

#endif
