/* The layer store: read-only filesystem layers, each a directory tree
 * rooted at "/" under the state dir (<state>/<kind>/<id>/layer) with the
 * host uid that owned its files when it was recorded.  A chain is a list
 * of layers ([{path, owner}], topmost first); a devbox mounts its chain,
 * shared, under its own writable layer (layers_prepare_box).
 *
 * The store is a leaf: it holds content and knows its owners only as
 * registered from above (layers_add_owner: records, devboxes) and its
 * kinds of layer dirs as registered (layers_add_kind: which records exist,
 * what goes with a freed layer).  It knows no record, route or blueprint.
 *
 * Locking: the store has no lock of its own; the functions marked
 * "registry lock held" run under its caller's registry lock
 * (layer_records.h), which may be taken before eng->lock, never after. */
#ifndef DEVBOXD_LAYERS_H
#define DEVBOXD_LAYERS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A kind of layer dirs: <state>/<dir>/<id>/layer, its record <file> next
 * to it. */
struct layers_kind {
    const char *dir;         /* "snapshots" */
    const char *record_file; /* "snapshot.json" */
    /* Registry lock held: whether a record of id is loaded (any state). */
    int (*knows)(const char *id);
    /* Registry lock held, as id's layer is freed: what after_free gets
     * (caller frees), or NULL; may be NULL. */
    cJSON *(*on_free)(const char *id);
    /* Reaper thread, no lock: after the layer dir is removed; may be NULL. */
    void (*after_free)(const char *state_dir, const cJSON *extra);
};

/* An owner of layers (the records of a kind, the live devboxes): refs
 * counts its holders of the layer at path.  Registry lock held. */
struct layers_owner {
    int (*refs)(void *ctx, const char *path);
    void *ctx;
};

/* Registry lock held: (re)starts the store on state_dir with no kinds and
 * no owners; then register them. */
void layers_store_init(const char *state_dir);
int layers_add_kind(const struct layers_kind *k);   /* -1 when full */
int layers_add_owner(const struct layers_owner *o); /* -1 when full */
/* Without the registry lock: ends the background removal (what is left
 * stays as .free dirs for the next start). */
void layers_store_stop(void);
/* Registry lock held, at stop: stops the removal and forgets the state
 * dir, kinds and owners. */
void layers_store_fini(void);

/* Copies the tree src into dst (created; must not exist) preserving modes,
 * xattrs and overlay whiteouts; files owned by from_uid become to_uid's. */
int layers_copy(const char *src, const char *dst, uid_t from_uid, uid_t to_uid,
                char *err, size_t errlen);
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
 * through idmapped views, nothing is copied.  Otherwise (a layer written
 * by a single-uid devbox before runc was the one runtime, still in a
 * snapshot or blueprint, or no image) the chain is copied into
 * <sbdir>/layers/<k> owned by the
 * devbox's host uid (claimed now; the same uid sandbox_start will use),
 * reusing copies made by an earlier boot, and *owners is NULL (free it). */
int layers_prepare_box(const cJSON *spec, const char *sbdir, const char *id,
                       bool image, char ***paths, uid_t **owners, size_t *n,
                       char *err, size_t errlen);
void layers_free_paths(char **paths, size_t n);
/* Whether a chain holds the layer at path (the same <kind>/<id>/layer,
 * whatever state dir either path was recorded under). */
int layers_chain_has(const cJSON *chain, const char *path);
/* A layer is referenced by every holder its owners count; the count is
 * derived from the owners when asked, never stored: a restart or a kill -9
 * cannot leave it wrong.  A layer is freed when its count reaches 0. */
/* Registry lock held: the layer's reference count. */
int layers_refs_locked(const char *path);
/* Registry lock held, once a record stopped holding its chain (deleted,
 * failed, error) and that is saved: takes every layer of chain (and path,
 * when not NULL) that nothing references any more out of the store
 * (renamed to <dir>/layer.free) and returns them for layers_free, or NULL. */
cJSON *layers_release_locked(const cJSON *chain, const char *path);
/* Without the registry lock: removes released layers (then runs their
 * kind's after_free) in the background; deletes the list. */
void layers_free(cJSON *released);
/* Registry lock held, at start: every layer dir of a registered kind that
 * nothing references (a .free dir a kill cut off, a layer whose record is
 * gone, an orphan), released, for layers_free. */
cJSON *layers_unreferenced_locked(void);

#endif
