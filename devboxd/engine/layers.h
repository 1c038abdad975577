/* devboxd snapshots and blueprints: read-only filesystem layers, their
 * records (persisted under the state directory) and the REST routes.
 *
 * A layer is a directory tree rooted at "/" stored under the state dir
 * (<state>/snapshots/<id>/layer, <state>/blueprints/<id>/layer) together with
 * the host uid that owned the files when it was recorded.  A devbox's spec
 * keeps its whole layer chain ("_layers": [{path, owner}], topmost first);
 * each boot mounts the chain in place, read-only, under the devbox's own
 * writable layer (layers_prepare_box).
 * Snapshots and blueprints share the store: a deleted record's layer stays
 * while other records' chains use it (see the layer store below).
 *
 * Locking: one registry lock (layers_lock) guards the snapshot and
 * blueprint records; it may be taken before eng->lock, never after. */
#ifndef DEVBOXD_LAYERS_H
#define DEVBOXD_LAYERS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <sys/types.h>

#include "engine.h"

/* ---- layers.c ---- */
void layers_lock(struct engine *eng);   /* also loads the records on first use */
/* At engine stop, before the devboxes go: waits for snapshot copies, stops
 * builds (they end failed) and frees the registry. */
void layers_fini(void);
void layers_unlock(void);
/* Registry of records (registry lock held): arrays of record objects, newest first. */
cJSON *layers_snapshots_locked(void);
cJSON *layers_blueprints_locked(void);
const char *layers_state_dir(void);
/* Writes a record to <state>/<kind>/<id>/<file>. */
int layers_save_record(const char *kind, const char *file, const cJSON *rec);

/* Copies the tree src into dst (created; must not exist) preserving modes,
 * xattrs and overlay whiteouts; files owned by from_uid become to_uid's. */
int layers_copy(const char *src, const char *dst, uid_t from_uid, uid_t to_uid, char *err,
                size_t errlen);
/* Copies an image layer into dst (created) with every id moved to the
 * layer ids: a layer whose owner is SB_RANGE_BASE.  range is the host id
 * of root in the build that wrote it: ids range + n become SB_RANGE_BASE +
 * n, and so do ids n below SB_RANGE_SIZE (written by buildah's store
 * itself, or by a build without a user namespace when range is 0).  Drops
 * the empty mount points buildah leaves. */
int layers_import(const char *src, const char *dst, uid_t range, char *err,
                  size_t errlen);
/* The reverse: copies a layer of the layer ids (owner SB_RANGE_BASE) into
 * dst (created) with ids from 0, as an image layer has them. */
int layers_export(const char *src, const char *dst, char *err, size_t errlen);
/* Bytes in the regular files of a tree. */
int64_t layers_size(const char *path);
/* Before a sandbox start: the spec's "_layers" chain as lower layers.
 * Under runc (image set, every owner a range) the layers stay where they
 * are and *owners gets each one's owner: the sandbox mounts them shared
 * through idmapped views, nothing is copied.  Otherwise (the bubblewrap
 * runtime) the chain is copied into <sbdir>/layers/<k> owned by the
 * devbox's host uid (claimed now; the same uid sandbox_start will use),
 * reusing copies made by an earlier boot, and *owners is NULL (free it). */
int layers_prepare_box(const cJSON *spec, const char *sbdir, const char *id, bool image,
                       char ***paths, uid_t **owners, size_t *n, char *err,
                       size_t errlen);
void layers_free_paths(char **paths, size_t n);
/* The layer store: a layer is referenced by every live record (a snapshot
 * not deleted or in error, a blueprint not deleted or failed) and every
 * live devbox (not shut down or failed) with it in its chain; its own
 * record is one of them until deleted.  The count is derived from the
 * chains when asked, never stored: a restart or a kill -9 cannot leave it
 * wrong.  A layer is freed when its count reaches 0. */
/* Registry lock held: the layer's reference count. */
int layers_refs_locked(struct engine *eng, const char *path);
/* Registry lock held: 1 with the devbox's id in who when a live devbox has
 * path in its layer chain (a delete is then refused), else 0. */
int layers_used_by_devbox_locked(struct engine *eng, const char *path,
                                 char *who, size_t wholen);
/* Registry lock held, once a record stopped holding its chain (deleted,
 * failed, error) and that is saved: takes every layer of chain (and path,
 * when not NULL) that nothing references any more out of the store
 * (renamed to <dir>/layer.free) and returns them for layers_free, or NULL. */
cJSON *layers_release_locked(struct engine *eng, const cJSON *chain,
                             const char *path);
/* Without the registry lock: removes released layers (and the buildah
 * image of a blueprint whose layer it was); deletes the list. */
void layers_free(struct engine *eng, cJSON *released);
/* At start, once the devboxes are loaded: loads the records (interrupted
 * builds and snapshots fail) and frees the layer dirs nothing references
 * (a delete cut off by a kill, or an orphan). */
void layers_start(struct engine *eng);
/* Registry lock held: resolves snapshot_id / blueprint_id / blueprint_name
 * of a create body into spec (_layers, ids, blueprint defaults). 0 or an
 * HTTP status with err. */
int layers_resolve_create(struct engine *eng, const cJSON *body, cJSON *spec, char *err,
                          size_t errlen);

#endif
