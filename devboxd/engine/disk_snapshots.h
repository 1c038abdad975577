/* devboxd disk snapshots (engine side): a read-only layer copied from a
 * running devbox's writable upper dir, plus the layers the devbox booted
 * on. Records live in the layer registry (layers.h); the REST routes are
 * rest/api_snapshots.c. Calls returning int give 0, or an HTTP status with
 * a message in err. */
#ifndef DEVBOXD_DISK_SNAPSHOTS_H
#define DEVBOXD_DISK_SNAPSHOTS_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "engine.h"

/* Snapshots a running devbox. body: {name, metadata, commit_message}, all
 * optional. *view: the record's view, complete unless async (then in
 * progress, the copy running on a worker thread). */
int snapshots_create(struct engine *eng, struct devbox *box, const cJSON *body,
                     int async, cJSON **view, char *err, size_t errlen);
/* Replaces the fields body names (as for a create); *view: the result. */
int snapshots_update(struct engine *eng, const char *sid, const cJSON *body,
                     cJSON **view, char *err, size_t errlen);
/* Deletes a snapshot no devbox, snapshot or blueprint builds on. */
int snapshots_delete(struct engine *eng, const char *sid, char *err,
                     size_t errlen);
/* *out: {status, error_message, snapshot} (no snapshot once deleted). */
int snapshots_status(struct engine *eng, const char *sid, cJSON **out,
                     char *err, size_t errlen);
/* Registry lock held: a record's DevboxSnapshotView, and whether a list
 * shows it (not deleted; from devbox_id / blueprint_id when not empty). */
cJSON *snapshots_view(const cJSON *rec);
int snapshots_listed(const cJSON *rec, const char *devbox_id,
                     const char *blueprint_id);

int snapshots_in_progress(struct engine *eng, const char *box_id);
void snapshots_load_locked(cJSON *list); /* fixes up records after a restart */
void snapshots_wait_all(void);           /* waits for async snapshot workers */

#endif
