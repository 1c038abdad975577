/* devboxd storage objects (engine side, objects.c).
 *
 * An object is created UPLOADING, its bytes are stored once, and complete
 * makes it READ_ONLY; it may carry an expiry (delete_after_time_ms). Each
 * object is a 0600 record and a data file under <state>/objects/. A devbox
 * create's `mounts: [{type: "object_mount", object_id, object_path}]`
 * writes an object into the devbox at boot (archives unpacked). The REST
 * routes, their signed upload and download URLs, are rest/api_objects.c.
 * Calls returning int give 0, or an HTTP status with a message in err, or
 * -1 with errno when the state directory could not be written (the caller
 * answers that nothing was saved). See docs/devboxd.md. */
#ifndef DEVBOXD_OBJECTS_H
#define DEVBOXD_OBJECTS_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "engine.h"

#define OBJECT_NAME_MAX 512
#define OBJECTS_MAX 10000

/* 1 when id is an object id (obj_ and letters and digits). */
int objects_id_valid(const char *id);
/* 0 when ct is a content type of objects, else -1 with err naming field. */
int objects_check_content_type(const char *ct, const char *field, char *err,
                               size_t errlen);
/* ObjectView of a record, as listed: no URL. */
cJSON *objects_view(const cJSON *rec);

/* Creates an UPLOADING object from a create body {name, content_type,
 * metadata, ttl_ms}: *rec its record (the caller's). 400, or -1. */
int objects_create(struct engine *eng, const cJSON *body, cJSON **rec,
                   char *err, size_t errlen);
/* *rec: a copy of the live record of id; 404. */
int objects_get(struct engine *eng, const char *id, cJSON **rec, char *err,
                size_t errlen);
/* Stores len bytes of data as an UPLOADING object's bytes: *rec its
 * record; 404, 409 (not UPLOADING), 507 (no room beside the devbox disks),
 * or -1. */
int objects_upload(struct engine *eng, const char *id, const char *data,
                   size_t len, cJSON **rec, char *err, size_t errlen);
/* Makes an uploaded object READ_ONLY (one already so stays): *rec its
 * record; 404, 400 (nothing uploaded), or -1. */
int objects_complete(struct engine *eng, const char *id, cJSON **rec, char *err,
                     size_t errlen);
/* Deletes an object: *rec its record as it was, state DELETED; 404, 500. */
int objects_delete(struct engine *eng, const char *id, cJSON **rec, char *err,
                   size_t errlen);
/* Every live record, newest first (the caller's). */
cJSON *objects_list(struct engine *eng);
/* Opens a READ_ONLY object's bytes for reading: an fd, or -1 with err. */
int objects_open(struct engine *eng, const char *id, char *err, size_t errlen);

/* Checks one `mounts[]` entry of type object_mount (where: "mounts[3]").
 * 0 or -1 with err. */
int objects_check_mount(const cJSON *mount, const char *where, char *err,
                        size_t errlen);
/* Every object_mount of a create body must name a READ_ONLY object: 0, or
 * 400 with err. Records each mount's content_type in spec "_object_mounts". */
int objects_resolve_create(struct engine *eng, const cJSON *body, cJSON *spec,
                           char *err, size_t errlen);

#endif
