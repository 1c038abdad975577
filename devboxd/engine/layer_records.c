/* The snapshot and blueprint records (layer_records.h): the registry, its
 * lock, the records and devboxes as owners of the layer store's layers,
 * and a create's snapshot_id / blueprint_id / blueprint_name. */
#define _GNU_SOURCE
#include "layer_records.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blueprint_buildah.h"
#include "blueprint_builds.h"
#include "disk_snapshots.h"
#include "images.h"
#include "util.h"
#include "warm_pool.h"

static struct {
    pthread_mutex_t lock;
    int loaded;
    char *state_dir;
    cJSON *snaps; /* records, newest first */
    cJSON *bps;
} g = {PTHREAD_MUTEX_INITIALIZER, 0, NULL, NULL, NULL};

/* ------------------------------------------------------------ registry */

static double rec_time(const cJSON *rec)
{
    return cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rec, "create_time_ms"));
}

static int cmp_newest_first(const void *a, const void *b)
{
    double x = rec_time(*(cJSON *const *)a);
    double y = rec_time(*(cJSON *const *)b);

    return x < y ? 1 : x > y ? -1 : 0;
}

/* Appends the records newest first.  (cJSON 1.7.15's InsertItemInArray
 * loses items when inserting in the middle, so sort first, then append.) */
static void add_sorted(cJSON *list, cJSON **recs, size_t n)
{
    size_t i;

    if (n == 0)
        return;
    qsort(recs, n, sizeof(*recs), cmp_newest_first);
    for (i = 0; i < n; i++)
        cJSON_AddItemToArray(list, recs[i]);
}

static void load_kind(const char *kind, const char *file, cJSON *list)
{
    char *dirpath = NULL;
    DIR *d = NULL;
    struct dirent *de;
    cJSON **recs = NULL;
    size_t n = 0, cap = 0;

    if (asprintf(&dirpath, "%s/%s", g.state_dir, kind) < 0)
        return;
    util_mkdirs(dirpath);
    d = opendir(dirpath);
    while (d != NULL && (de = readdir(d)) != NULL) {
        char *path = NULL;
        char *text = NULL;
        cJSON *rec = NULL;

        if (de->d_name[0] == '.')
            continue;
        if (asprintf(&path, "%s/%s/%s", dirpath, de->d_name, file) < 0)
            continue;
        text = util_read_file(path, 4 << 20, NULL);
        rec = text != NULL ? cJSON_Parse(text) : NULL;
        if (rec != NULL &&
            cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rec, "id")) &&
            n == cap) {
            cJSON **more = realloc(recs, (cap * 2 + 16) * sizeof(*recs));

            if (more != NULL) {
                recs = more;
                cap = cap * 2 + 16;
            }
        }
        if (rec != NULL &&
            cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rec, "id")) &&
            n < cap) {
            recs[n++] = rec;
        } else if (rec != NULL || text != NULL) {
            fprintf(stderr, "devboxd: skipping unreadable record %s\n", path);
            cJSON_Delete(rec);
        }
        free(text);
        free(path);
    }
    if (d != NULL)
        closedir(d);
    add_sorted(list, recs, n);
    free(recs);
    free(dirpath);
}

static void register_with_store(struct engine *eng);

void layer_records_lock(struct engine *eng)
{
    pthread_mutex_lock(&g.lock);
    if (g.loaded)
        return;
    g.state_dir = eng->state_dir != NULL ? strdup(eng->state_dir) : NULL;
    g.snaps = cJSON_CreateArray();
    g.bps = cJSON_CreateArray();
    register_with_store(eng);
    if (g.state_dir != NULL) {
        load_kind("snapshots", "snapshot.json", g.snaps);
        load_kind("blueprints", "blueprint.json", g.bps);
        snapshots_load_locked(g.snaps);
        blueprints_load_locked(eng, g.bps);
    }
    g.loaded = 1;
}

void layer_records_fini(void)
{
    snapshots_wait_all();
    blueprints_stop_all();
    layers_store_stop();
    pthread_mutex_lock(&g.lock);
    layers_store_fini();
    cJSON_Delete(g.snaps);
    cJSON_Delete(g.bps);
    free(g.state_dir);
    g.snaps = NULL;
    g.bps = NULL;
    g.state_dir = NULL;
    g.loaded = 0;
    pthread_mutex_unlock(&g.lock);
}

void layer_records_unlock(void)
{
    pthread_mutex_unlock(&g.lock);
}

cJSON *layer_records_snapshots_locked(void)
{
    return g.snaps;
}

cJSON *layer_records_blueprints_locked(void)
{
    return g.bps;
}

const char *layer_records_state_dir(void)
{
    return g.state_dir;
}

int layer_records_save_record(const char *kind, const char *file,
                              const cJSON *rec)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "id");
    char *dir = NULL;
    char *path = NULL;
    char *text = NULL;
    int rc = -1;

    if (!cJSON_IsString(id) || g.state_dir == NULL)
        return -1;
    text = cJSON_Print(rec);
    if (text == NULL ||
        asprintf(&dir, "%s/%s/%s", g.state_dir, kind, id->valuestring) < 0) {
        dir = NULL;
        goto out;
    }
    if (util_mkdirs(dir) != 0 || asprintf(&path, "%s/%s", dir, file) < 0) {
        path = NULL;
        goto out;
    }
    rc = util_write_atomic(path, text, strlen(text), 0600);
out:
    if (rc != 0)
        fprintf(stderr, "devboxd: cannot save %s record %s: %s\n", kind,
                id->valuestring, strerror(errno));
    free(text);
    free(dir);
    free(path);
    return rc;
}

/* ------------------------------------------- the records as layer owners */

/* Whether a record holds its chain: it can boot devboxes, or is being
 * built or copied.  Deleted, failed and error records hold nothing. */
static int rec_holds(const cJSON *rec)
{
    const char *st = util_json_str(rec, "status");
    const char *state = util_json_str(rec, "state");

    if (state != NULL && strcmp(state, "deleted") == 0)
        return 0;
    return st == NULL ||
           (strcmp(st, "deleted") != 0 && strcmp(st, "error") != 0 &&
            strcmp(st, "failed") != 0);
}

static int list_refs(const cJSON *list, const char *path)
{
    const cJSON *rec = NULL;
    int n = 0;

    cJSON_ArrayForEach(rec, list)
    {
        if (rec_holds(rec) &&
            layers_chain_has(cJSON_GetObjectItemCaseSensitive(rec, "layers"),
                             path))
            n++;
    }
    return n;
}

/* Live devboxes (not shut down or failed) and warm pool sandboxes with
 * path in their chain: they mount it. */
static int boxes_refs(void *ctx, const char *path)
{
    struct engine *eng = ctx;
    struct devbox *b;
    int n = 0;

    if (eng == NULL)
        return 0;
    pthread_mutex_lock(&eng->lock);
    for (b = eng->boxes; b != NULL; b = b->next) {
        if (b->status == DBX_SHUTDOWN || b->status == DBX_FAILURE)
            continue;
        if (layers_chain_has(
                cJSON_GetObjectItemCaseSensitive(b->spec, "_layers"), path))
            n++;
    }
    n += warm_pool_refs_locked(eng, path);
    pthread_mutex_unlock(&eng->lock);
    return n;
}

static int snaps_refs(void *ctx, const char *path)
{
    (void)ctx;
    return list_refs(g.snaps, path);
}

static int bps_refs(void *ctx, const char *path)
{
    (void)ctx;
    return list_refs(g.bps, path);
}

/* Whether the loaded list has a record of id (in any state). */
static int list_knows(const cJSON *list, const char *id)
{
    const cJSON *rec = NULL;

    cJSON_ArrayForEach(rec, list)
    {
        const char *rid = util_json_str(rec, "id");

        if (rid != NULL && strcmp(rid, id) == 0)
            return 1;
    }
    return 0;
}

static int snap_knows(const char *id)
{
    return list_knows(g.snaps, id);
}

static int bp_knows(const char *id)
{
    return list_knows(g.bps, id);
}

/* A blueprint's layer freed: its buildah image goes after it. */
static cJSON *bp_on_free(const char *id)
{
    const cJSON *bp = blueprints_record_locked(id);

    if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(bp, "buildah_image")))
        return NULL;
    return cJSON_Duplicate(bp, 1);
}

static void bp_after_free(const char *state_dir, const cJSON *rec)
{
    if (rec != NULL)
        blueprint_buildah_forget(state_dir, rec);
}

/* Registry lock held, at load: the store learns the kinds of layers and
 * who holds them (the records and the live devboxes). */
static void register_with_store(struct engine *eng)
{
    static const struct layers_kind snaps = {"snapshots", "snapshot.json",
                                             snap_knows, NULL, NULL};
    static const struct layers_kind bps = {"blueprints", "blueprint.json",
                                           bp_knows, bp_on_free, bp_after_free};
    struct layers_owner o = {snaps_refs, NULL};

    layers_store_init(g.state_dir);
    layers_add_kind(&snaps);
    layers_add_kind(&bps);
    layers_add_owner(&o);
    o.refs = bps_refs;
    layers_add_owner(&o);
    o.refs = boxes_refs;
    o.ctx = eng;
    layers_add_owner(&o);
}

void layer_records_start(struct engine *eng)
{
    cJSON *out = NULL;
    int n;

    layer_records_lock(eng);
    out = layers_unreferenced_locked();
    layer_records_unlock();
    n = cJSON_GetArraySize(out);
    if (n > 0)
        fprintf(stderr, "devboxd: freeing %d layer dir%s nothing references\n",
                n, n == 1 ? "" : "s");
    layers_free(out);
}

/* ------------------------------------------------------ create from */

static int resolve_snapshot(const char *sid, cJSON *spec, char *err,
                            size_t errlen)
{
    const cJSON *rec = NULL;
    const char *st = NULL;
    const char *bp = NULL;

    cJSON_ArrayForEach(rec, g.snaps)
    {
        const char *id = util_json_str(rec, "id");

        if (id != NULL && strcmp(id, sid) == 0)
            break;
    }
    st = util_json_str(rec, "status");
    if (rec == NULL || st == NULL || strcmp(st, "deleted") == 0) {
        snprintf(err, errlen,
                 "snapshot_id %s not found; list the snapshots to see which "
                 "exist",
                 sid);
        return 404;
    }
    if (strcmp(st, "complete") != 0) {
        snprintf(err, errlen,
                 "snapshot %s is %s; a devbox can start only from a complete "
                 "snapshot (poll the snapshot's status until it is complete)",
                 sid, st);
        return 400;
    }
    cJSON_AddStringToObject(spec, "snapshot_id", sid);
    bp = util_json_str(rec, "source_blueprint_id");
    if (bp != NULL) {
        /* Any state: a deleted blueprint's layers stay while the
         * snapshot holds them, and so does the image they sit on. */
        const cJSON *brec = blueprints_record_locked(bp);
        const char *image = util_json_str(brec, "image");

        cJSON_AddStringToObject(spec, "blueprint_id", bp);
        /* Its layers sit on the blueprint's image (universal for a
         * blueprint FROM universal): restore onto that one. */
        if (image != NULL)
            cJSON_AddStringToObject(spec, "_image", image);
    }
    cJSON_AddItemToObject(
        spec, "_layers",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec, "layers"), 1));
    return 0;
}

/* Blueprint launch_parameters and ENV are defaults under the create body's. */
static void blueprint_defaults(const cJSON *rec, cJSON *spec)
{
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rec, "parameters"),
        "launch_parameters");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(rec, "env");
    cJSON *mine = cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    const cJSON *it = NULL;

    if (mine == NULL)
        mine = cJSON_AddObjectToObject(spec, "launch_parameters");
    it = cJSON_GetObjectItemCaseSensitive(rec, "image");
    if (cJSON_IsString(it) &&
        cJSON_GetObjectItemCaseSensitive(spec, "_image") == NULL)
        cJSON_AddStringToObject(spec, "_image", it->valuestring);
    it = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rec, "image_config"), "WorkingDir");
    if (cJSON_IsString(it) && it->valuestring[0] != '\0' &&
        cJSON_GetObjectItemCaseSensitive(spec, "_workdir") == NULL)
        cJSON_AddStringToObject(spec, "_workdir", it->valuestring);
    cJSON_ArrayForEach(it, lp)
    { /* field by field: the create body's win */
        if (cJSON_GetObjectItemCaseSensitive(mine, it->string) == NULL)
            cJSON_AddItemToObject(mine, it->string, cJSON_Duplicate(it, 1));
    }
    if (!cJSON_IsObject(env) || cJSON_GetArraySize(env) == 0)
        return;
    mine = cJSON_GetObjectItemCaseSensitive(spec, "environment_variables");
    if (mine == NULL)
        mine = cJSON_AddObjectToObject(spec, "environment_variables");
    cJSON_ArrayForEach(it, env)
    {
        if (cJSON_GetObjectItemCaseSensitive(mine, it->string) == NULL)
            cJSON_AddItemToObject(mine, it->string, cJSON_Duplicate(it, 1));
    }
}

int layer_records_resolve_create(struct engine *eng, const cJSON *body,
                                 cJSON *spec, char *err, size_t errlen)
{
    const char *sid = NULL;
    const char *bid = NULL;
    const char *bname = NULL;
    const cJSON *rec = NULL;
    int given = 0;

    (void)eng;
    if (util_opt_string(body, "snapshot_id", &sid, err, errlen) != 0 ||
        util_opt_string(body, "blueprint_id", &bid, err, errlen) != 0 ||
        util_opt_string(body, "blueprint_name", &bname, err, errlen) != 0)
        return 400;
    given = (sid != NULL && sid[0]) + (bid != NULL && bid[0]) +
            (bname != NULL && bname[0]);
    if (given == 0)
        return 0;
    if (given > 1) {
        snprintf(
            err, errlen,
            "set only one of snapshot_id, blueprint_id and blueprint_name");
        return 400;
    }
    if (sid != NULL && sid[0])
        return resolve_snapshot(sid, spec, err, errlen);
    if (bname != NULL && bname[0]) {
        const char *image = NULL;
        int pub = images_public_name(bname, &image, err, errlen);

        if (pub < 0)
            return 400;
        if (pub > 0) { /* Runloop's public images: no layers, only the image */
            cJSON_AddStringToObject(spec, "_image", image);
            return 0;
        }
    }
    rec = blueprints_find_locked(bid != NULL && bid[0] ? bid : NULL,
                                 bname != NULL && bname[0] ? bname : NULL);
    if (rec == NULL && bname != NULL && bname[0]) {
        const char *image = NULL;

        if (images_builtin_name(bname, &image)) {
            cJSON_AddStringToObject(spec, "_image", image);
            return 0;
        }
    }
    if (rec == NULL) {
        if (bid != NULL && bid[0])
            snprintf(err, errlen,
                     "blueprint_id %s not found or not built (status must be "
                     "build_complete); list the blueprints to see which built",
                     bid);
        else
            snprintf(err, errlen,
                     "no successful build of a blueprint named \"%s\"; list "
                     "the blueprints of that name to see their builds",
                     bname);
        return bid != NULL && bid[0] ? 404 : 400;
    }
    cJSON_AddStringToObject(spec, "blueprint_id", util_json_str(rec, "id"));
    cJSON_AddItemToObject(
        spec, "_layers",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec, "layers"), 1));
    blueprint_defaults(rec, spec);
    return 0;
}
