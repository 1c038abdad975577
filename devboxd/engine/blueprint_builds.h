/* devboxd blueprints (engine side): builds run in a build sandbox on the
 * base layers (worker threads, bounded concurrency); the build's writable
 * layer becomes the blueprint's layer. Records live in the layer registry
 * (layers.h); the REST routes are rest/api_blueprints.c. Calls returning
 * int give 0, or an HTTP status with a message in err. */
#ifndef DEVBOXD_BLUEPRINT_BUILDS_H
#define DEVBOXD_BLUEPRINT_BUILDS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

#include "blueprint_buildah.h"
#include "engine.h"

/* Starts a build from a create body; *view: the new record's view. */
int blueprints_create(struct engine *eng, const cJSON *body, cJSON **view,
                      char *err, size_t errlen);
int blueprints_get(struct engine *eng, const char *id, cJSON **view, char *err,
                   size_t errlen);
/* Deletes a finished blueprint no live devbox runs on; its layer stays
 * while snapshots or blueprints built on it do (layers.h). */
int blueprints_delete(struct engine *eng, const char *id, char *err,
                      size_t errlen);
/* devboxd's extension: tag names this build among the builds of its name
 * (moved from the one that had it); the build must be complete. *view:
 * its view. A "NAME:TAG" blueprint name then resolves to it. */
int blueprints_tag(struct engine *eng, const char *id, const char *tag,
                   cJSON **view, char *err, size_t errlen);
/* Opens the build log (JSON lines) of a known blueprint: *log is NULL when
 * it has none yet. */
int blueprints_log_open(struct engine *eng, const char *id, FILE **log,
                        char *err, size_t errlen);
/* Registry lock held: a record's BlueprintView, and whether a list shows
 * it (not deleted; named name, in status, when those are not empty). */
cJSON *blueprints_view(const cJSON *rec);
int blueprints_listed(const cJSON *rec, const char *name, const char *status);

void blueprints_load_locked(struct engine *eng, cJSON *list);
void blueprints_stop_all(
    void); /* kills running build steps, waits for the workers */
/* Registry lock held: the record of id in any status (NULL if none). */
cJSON *blueprints_record_locked(const char *id);
/* Registry lock held: blueprint id builds on base from now on: its record
 * names the base and holds the base's chain, which keeps those layers
 * while it builds (and saves the record). */
void blueprints_depend_locked(const char *id, const cJSON *base);
/* Registry lock held: the newest build_complete record named name, or by id. */
cJSON *blueprints_find_locked(const char *id, const char *name);
/* The records a build FROM another blueprint reads (devboxd's start hands
 * them to the builder). */
extern const struct blueprint_buildah_records blueprints_records;

#endif
