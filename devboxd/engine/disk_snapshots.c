/* Disk snapshots: a read-only layer copied from a running devbox's writable
 * upper dir, plus the layers the devbox itself booted on. */
#define _GNU_SOURCE
#include "disk_snapshots.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "layer_records.h"
#include "sandbox.h"
#include "store.h"
#include "util.h"
#include "warm_pool.h"

#define ERRLEN 512
#define COMMIT_MAX 1000
#define FREEZE_TIMEOUT_MS 10000

static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t workers_cond = PTHREAD_COND_INITIALIZER;
static int workers; /* async snapshot threads alive */
static pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;

void snapshots_wait_all(void)
{
    pthread_mutex_lock(&workers_lock);
    while (workers > 0)
        pthread_cond_wait(&workers_cond, &workers_lock);
    pthread_mutex_unlock(&workers_lock);
}

static void add_str_or_null(cJSON *v, const cJSON *rec, const char *name)
{
    const char *s = util_json_str(rec, name);

    if (s != NULL)
        cJSON_AddStringToObject(v, name, s);
    else
        cJSON_AddNullToObject(v, name);
}

/* DevboxSnapshotView of a record. */
static cJSON *snap_view(const cJSON *rec)
{
    cJSON *v = cJSON_CreateObject();
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(rec, "metadata");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(rec, "size_bytes");

    cJSON_AddStringToObject(v, "id", util_json_str(rec, "id"));
    cJSON_AddNumberToObject(
        v, "create_time_ms",
        cJSON_GetNumberValue(
            cJSON_GetObjectItemCaseSensitive(rec, "create_time_ms")));
    cJSON_AddItemToObject(v, "metadata",
                          meta != NULL ? cJSON_Duplicate(meta, 1)
                                       : cJSON_CreateObject());
    cJSON_AddStringToObject(v, "source_devbox_id",
                            util_json_str(rec, "source_devbox_id"));
    add_str_or_null(v, rec, "name");
    add_str_or_null(v, rec, "commit_message");
    if (cJSON_IsNumber(size))
        cJSON_AddNumberToObject(v, "size_bytes", size->valuedouble);
    else
        cJSON_AddNullToObject(v, "size_bytes");
    add_str_or_null(v, rec, "source_blueprint_id");
    return v;
}

static cJSON *find_locked(const char *sid)
{
    cJSON *rec = NULL;

    cJSON_ArrayForEach(rec, layer_records_snapshots_locked())
    {
        const char *id = util_json_str(rec, "id");

        if (id != NULL && strcmp(id, sid) == 0)
            return rec;
    }
    return NULL;
}

static void set_str(cJSON *rec, const char *name, const char *value)
{
    cJSON_DeleteItemFromObjectCaseSensitive(rec, name);
    if (value != NULL)
        cJSON_AddStringToObject(rec, name, value);
}

/* The copy a killed devboxd left half done: nothing can use it. */
static void remove_partial(const char *sid)
{
    char *layer = NULL;

    if (sid == NULL || !store_id_valid(sid, "snp"))
        return;
    if (asprintf(&layer, "%s/snapshots/%s/layer", layer_records_state_dir(),
                 sid) < 0)
        return;
    util_rmtree(layer);
    free(layer);
}

void snapshots_load_locked(cJSON *list)
{
    cJSON *rec = NULL;

    cJSON_ArrayForEach(rec, list)
    {
        const char *st = util_json_str(rec, "status");

        if (st == NULL || strcmp(st, "in_progress") == 0) {
            set_str(rec, "status", "error");
            set_str(rec, "error_message",
                    "devboxd restarted while the snapshot was taken; "
                    "take it again");
            layer_records_save_record("snapshots", "snapshot.json", rec);
            remove_partial(util_json_str(rec, "id"));
        }
    }
}

int snapshots_in_progress(struct engine *eng, const char *box_id)
{
    const cJSON *rec = NULL;
    int n = 0;

    layer_records_lock(eng);
    cJSON_ArrayForEach(rec, layer_records_snapshots_locked())
    {
        const char *src = util_json_str(rec, "source_devbox_id");
        const char *st = util_json_str(rec, "status");

        if (src != NULL && st != NULL && strcmp(src, box_id) == 0 &&
            strcmp(st, "in_progress") == 0)
            n++;
    }
    layer_records_unlock();
    return n;
}

/* --------------------------------------------------------------- create */

struct snap_job {
    struct engine *eng;
    struct devbox *box;
    char id[40];
    char *upper;
    char *layer;
    uid_t uid;
};

static void job_free(struct snap_job *job)
{
    free(job->upper);
    free(job->layer);
    free(job);
}

/* Copies the upper dir while the devbox is frozen, so the snapshot is its
 * files at one moment and not a mix of before and after a write. The I/O
 * reference held on the devbox keeps its sandbox alive meanwhile. */
static int capture(struct snap_job *job, char *err, size_t errlen)
{
    struct sandbox *sb = job->box->sb;
    int frz;
    int rc;

    /* One capture at a time: a second snapshot of the same devbox must not
     * thaw it while the first still copies. */
    pthread_mutex_lock(&capture_lock);
    frz = sandbox_freeze(sb, true, FREEZE_TIMEOUT_MS);
    if (frz == -ETIMEDOUT) {
        snprintf(err, errlen,
                 "the devbox's processes did not stop within %d ms (one "
                 "waits on I/O); take the snapshot again",
                 FREEZE_TIMEOUT_MS);
        rc = -1;
        goto out;
    }
    if (frz != 0 && frz != -ENOTSUP) {
        snprintf(err, errlen, "cannot freeze the devbox: %s", strerror(-frz));
        rc = -1;
        goto out;
    }
    rc = layers_copy(job->upper, job->layer, job->uid, job->uid, err, errlen);
    /* A stop thaws too (sandbox_stop), so a failed thaw cannot hang it. */
    if (frz == 0 && sandbox_freeze(sb, false, FREEZE_TIMEOUT_MS) != 0 &&
        sandbox_freeze(sb, false, FREEZE_TIMEOUT_MS) != 0)
        fprintf(stderr,
                "devboxd: devbox %s did not thaw after snapshot %s; "
                "shut it down or suspend it\n",
                job->box->id, job->id);
out:
    pthread_mutex_unlock(&capture_lock);
    return rc;
}

/* Copies the upper dir and records the result; releases the devbox. */
static int snap_run(struct snap_job *job, char *err, size_t errlen)
{
    cJSON *rec = NULL;
    cJSON *freed = NULL;
    int64_t size = 0;
    int rc;

    util_rmtree(job->layer);
    rc = capture(job, err, errlen);
    if (rc == 0)
        size = layers_size(job->layer);
    else
        util_rmtree(job->layer);
    layer_records_lock(job->eng);
    rec = find_locked(job->id);
    if (rec != NULL) {
        set_str(rec, "status", rc == 0 ? "complete" : "error");
        if (rc == 0)
            cJSON_AddNumberToObject(rec, "size_bytes", (double)size);
        else
            set_str(rec, "error_message", err);
        if (layer_records_save_record("snapshots", "snapshot.json", rec) == 0 &&
            rc != 0)
            freed = layers_release_locked(
                cJSON_GetObjectItemCaseSensitive(rec, "layers"), NULL);
    }
    layer_records_unlock();
    layers_free(freed);
    pthread_mutex_lock(&job->eng->lock);
    job->box->io_refs--;
    pthread_cond_broadcast(&job->eng->changed);
    pthread_mutex_unlock(&job->eng->lock);
    return rc;
}

static void *snap_thread(void *arg)
{
    struct snap_job *job = arg;
    char err[ERRLEN] = "";

    if (snap_run(job, err, sizeof(err)) != 0)
        fprintf(stderr, "devboxd: snapshot %s failed: %s\n", job->id, err);
    job_free(job);
    pthread_mutex_lock(&workers_lock);
    workers--;
    pthread_cond_broadcast(&workers_cond);
    pthread_mutex_unlock(&workers_lock);
    return NULL;
}

static int check_body(const cJSON *body, const char **name, const cJSON **meta,
                      const char **commit, char *err, size_t errlen)
{
    static const char *const fields[] = {"name", "metadata", "commit_message",
                                         NULL};

    if (util_check_fields(body, "", fields, err, errlen) != 0 ||
        util_opt_string(body, "name", name, err, errlen) != 0 ||
        util_opt_string_map(body, "metadata", meta, err, errlen) != 0 ||
        util_opt_string(body, "commit_message", commit, err, errlen) != 0)
        return -1;
    if (*commit != NULL && strlen(*commit) > COMMIT_MAX) {
        snprintf(err, errlen,
                 "commit_message is %zu characters; send at most %d",
                 strlen(*commit), COMMIT_MAX);
        return -1;
    }
    return 0;
}

/* Lock held: takes an I/O reference on a running devbox (a stop waits for
 * it) and fills the job; or 400 with err. */
/* Lock held.  A snapshot copies what the devbox wrote (at most what its
 * disk holds) onto the state filesystem: not into what devbox disks were
 * promised (admission.h).  0, or 507 with err saying so. */
static int snap_room_locked(struct engine *eng, struct devbox *box, char *err,
                            size_t errlen)
{
    char *dir = engine_sandbox_dir(eng, box->id);
    uint64_t size = 0;
    uint64_t alloc = 0;
    int rc = 0;

    if (dir != NULL && sandbox_disk_usage(dir, &size, &alloc) == 0 &&
        engine_state_room_locked(eng, alloc, "this snapshot", err, errlen) != 0)
        rc = 507;
    free(dir);
    return rc;
}

/* The status of a snapshot that failed: 423 when the devbox's disk is
 * read-only, 507 when the state filesystem is (nearly) full, else 500. */
static int snap_failed_status(struct engine *eng, struct devbox *box)
{
    char why[512];
    int st = engine_disk_trouble(eng, box, 0, 0, why, sizeof(why));
    struct statvfs vfs;

    if (st == 423)
        return 423;
    if (statvfs(eng->state_dir, &vfs) == 0 &&
        (unsigned long long)vfs.f_bavail * vfs.f_frsize < (16ULL << 20))
        return 507;
    return 500;
}

static int claim_box_locked(struct devbox *box, struct snap_job *job,
                            cJSON **chain, const char **bp, char *err,
                            size_t errlen)
{
    if (box->status != DBX_RUNNING || box->sb == NULL) {
        snprintf(err, errlen,
                 "devbox %s is %s; only a running devbox can be snapshotted "
                 "(resume a suspended one first)",
                 box->id, dbx_status_name(box->status));
        return 400;
    }
    job->uid = sandbox_owner_uid(box->sb);
    *chain = cJSON_Duplicate(
        cJSON_GetObjectItemCaseSensitive(box->spec, "_layers"), 1);
    *bp = util_json_str(box->spec, "blueprint_id");
    box->io_refs++;
    engine_touch_locked(box);
    return 0;
}

static cJSON *new_record(struct snap_job *job, const cJSON *body,
                         const char *box_id, const char *bp, cJSON *chain)
{
    cJSON *rec = cJSON_CreateObject();
    cJSON *layers = cJSON_AddArrayToObject(rec, "layers");
    cJSON *own = cJSON_CreateObject();
    const cJSON *it = NULL;
    static const char *const copy[] = {"name", "commit_message", NULL};
    size_t i;

    cJSON_AddStringToObject(rec, "id", job->id);
    cJSON_AddNumberToObject(rec, "create_time_ms", (double)util_now_ms());
    cJSON_AddStringToObject(rec, "source_devbox_id", box_id);
    for (i = 0; copy[i] != NULL; i++) {
        it = cJSON_GetObjectItemCaseSensitive(body, copy[i]);
        if (cJSON_IsString(it))
            cJSON_AddStringToObject(rec, copy[i], it->valuestring);
    }
    it = cJSON_GetObjectItemCaseSensitive(body, "metadata");
    cJSON_AddItemToObject(rec, "metadata",
                          cJSON_IsObject(it) ? cJSON_Duplicate(it, 1)
                                             : cJSON_CreateObject());
    if (bp != NULL)
        cJSON_AddStringToObject(rec, "source_blueprint_id", bp);
    cJSON_AddStringToObject(rec, "status", "in_progress");
    cJSON_AddStringToObject(own, "path", job->layer);
    cJSON_AddNumberToObject(own, "owner", (double)job->uid);
    cJSON_AddItemToArray(layers, own);
    while (cJSON_GetArraySize(chain) > 0)
        cJSON_AddItemToArray(layers, cJSON_DetachItemFromArray(chain, 0));
    return rec;
}

static void start_worker(struct snap_job *job)
{
    pthread_mutex_lock(&workers_lock);
    workers++;
    pthread_mutex_unlock(&workers_lock);
    if (util_thread_detached(snap_thread, job, 0) != 0)
        snap_thread(job);
}

int snapshots_create(struct engine *eng, struct devbox *box, const cJSON *body,
                     int async, cJSON **view, char *err, size_t errlen)
{
    struct snap_job *job = NULL;
    cJSON *chain = NULL;
    cJSON *rec = NULL;
    const char *name = NULL;
    const cJSON *meta = NULL;
    const char *commit = NULL;
    const char *bp = NULL;
    char cause[ERRLEN] = "";
    int status = 0;

    *view = NULL;
    if (check_body(body, &name, &meta, &commit, err, errlen) != 0)
        return 400;
    job = calloc(1, sizeof(*job));
    if (job == NULL)
        goto oom;
    job->eng = eng;
    job->box = box;
    util_new_id("snp", job->id, sizeof(job->id));
    layer_records_lock(eng);
    if (asprintf(&job->upper, "%s/devboxes/%s/sandbox/upper", eng->state_dir,
                 box->id) < 0 ||
        asprintf(&job->layer, "%s/snapshots/%s/layer", eng->state_dir,
                 job->id) < 0) {
        layer_records_unlock();
        goto oom;
    }
    pthread_mutex_lock(&eng->lock);
    status = snap_room_locked(eng, box, err, errlen);
    if (status == 0)
        status = claim_box_locked(box, job, &chain, &bp, err, errlen);
    rec = status == 0 ? new_record(job, body, box->id, bp, chain) : NULL;
    pthread_mutex_unlock(&eng->lock);
    if (status != 0) {
        layer_records_unlock();
        goto out;
    }
    cJSON_InsertItemInArray(layer_records_snapshots_locked(), 0,
                            rec); /* newest first */
    layer_records_save_record("snapshots", "snapshot.json", rec);
    if (async)
        *view = snap_view(rec);
    layer_records_unlock();
    if (async) {
        start_worker(job);
        job = NULL;
        goto out;
    }
    if (snap_run(job, cause, sizeof(cause)) != 0) {
        status = snap_failed_status(eng, box);
        snprintf(err, errlen, "snapshot %s failed: %s%s", job->id, cause,
                 status == 507 ? " (" ADMISSION_DISK_FULL
                                 ": free space on devboxd's state "
                                 "filesystem: shut down or delete devboxes, "
                                 "snapshots and storage objects)"
                 : status == 423 ? " (the devbox's disk is read-only after a "
                                   "storage error)"
                                 : "");
        goto out;
    }
    layer_records_lock(eng);
    rec = find_locked(job->id);
    *view = rec != NULL ? snap_view(rec) : cJSON_CreateObject();
    layer_records_unlock();
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
    status = 500;
out:
    if (job != NULL)
        job_free(job);
    cJSON_Delete(chain);
    return status;
}

/* --------------------------------------------------------------- records */

static int not_found(const char *sid, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "snapshot %s not found; list the snapshots to see which exist",
             sid);
    return 404;
}

cJSON *snapshots_view(const cJSON *rec)
{
    return snap_view(rec);
}

int snapshots_listed(const cJSON *rec, const char *devbox_id,
                     const char *blueprint_id)
{
    const char *st = util_json_str(rec, "status");
    const char *src = util_json_str(rec, "source_devbox_id");
    const char *sbp = util_json_str(rec, "source_blueprint_id");

    if (st != NULL && (strcmp(st, "deleted") == 0))
        return 0;
    if (devbox_id != NULL && devbox_id[0] &&
        (src == NULL || strcmp(src, devbox_id) != 0))
        return 0;
    if (blueprint_id != NULL && blueprint_id[0] &&
        (sbp == NULL || strcmp(sbp, blueprint_id) != 0))
        return 0;
    return 1;
}

int snapshots_update(struct engine *eng, const char *sid, const cJSON *body,
                     cJSON **view, char *err, size_t errlen)
{
    cJSON *rec = NULL;
    const char *name = NULL;
    const cJSON *meta = NULL;
    const char *commit = NULL;
    int status = 0;

    *view = NULL;
    if (check_body(body, &name, &meta, &commit, err, errlen) != 0)
        return 400;
    layer_records_lock(eng);
    rec = find_locked(sid);
    if (rec == NULL || strcmp(util_json_str(rec, "status"), "deleted") == 0) {
        status = not_found(sid, err, errlen);
        goto out;
    }
    if (name != NULL)
        set_str(rec, "name", name);
    if (commit != NULL)
        set_str(rec, "commit_message", commit);
    if (meta != NULL) { /* full replace, as the API does */
        cJSON_DeleteItemFromObjectCaseSensitive(rec, "metadata");
        cJSON_AddItemToObject(rec, "metadata", cJSON_Duplicate(meta, 1));
    }
    layer_records_save_record("snapshots", "snapshot.json", rec);
    *view = snap_view(rec);
out:
    layer_records_unlock();
    return status;
}

int snapshots_delete(struct engine *eng, const char *sid, char *err,
                     size_t errlen)
{
    cJSON *rec = NULL;
    cJSON *freed = NULL;
    const char *st = NULL;
    const cJSON *chain = NULL;
    char *was = NULL;
    int status = 0;

    layer_records_lock(eng);
    rec = find_locked(sid);
    if (rec == NULL) {
        status = not_found(sid, err, errlen);
        goto out;
    }
    st = util_json_str(rec, "status");
    if (strcmp(st, "deleted") == 0)
        goto out;
    if (strcmp(st, "in_progress") == 0) {
        snprintf(err, errlen,
                 "snapshot %s is still in progress; delete it once its status "
                 "is complete or error",
                 sid);
        status = 400;
        goto out;
    }
    /* Devboxes running on its files keep its layer (they mount it) until
     * they end; then the last one frees it (engine_release_layers). */
    chain = cJSON_GetObjectItemCaseSensitive(rec, "layers");
    /* The tombstone is on disk before any file goes: a kill in between
     * leaves a layer nothing references, which the next start frees. */
    was = strdup(st);
    set_str(rec, "status", "deleted");
    if (was == NULL ||
        layer_records_save_record("snapshots", "snapshot.json", rec) != 0) {
        set_str(rec, "status", was != NULL ? was : "complete");
        snprintf(err, errlen,
                 "cannot record the delete of snapshot %s (writing the state "
                 "dir failed); try again",
                 sid);
        status = 500;
        goto out;
    }
    /* No more sandboxes ahead on its chain. */
    pthread_mutex_lock(&eng->lock);
    warm_pool_forget_locked(eng, chain);
    pthread_mutex_unlock(&eng->lock);
    /* Its layer (and deleted ones under it) go unless other snapshots or
     * blueprints are built on them. */
    freed = layers_release_locked(chain, NULL);
out:
    layer_records_unlock();
    layers_free(freed);
    free(was);
    return status;
}

int snapshots_status(struct engine *eng, const char *sid, cJSON **out,
                     char *err, size_t errlen)
{
    cJSON *rec = NULL;
    cJSON *v = NULL;
    const char *st = NULL;
    const char *msg = NULL;
    int status = 0;

    *out = NULL;
    layer_records_lock(eng);
    rec = find_locked(sid);
    if (rec == NULL) {
        status = not_found(sid, err, errlen);
        goto done;
    }
    st = util_json_str(rec, "status");
    msg = util_json_str(rec, "error_message");
    v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "status", st);
    if (msg != NULL)
        cJSON_AddStringToObject(v, "error_message", msg);
    else
        cJSON_AddNullToObject(v, "error_message");
    if (strcmp(st, "deleted") != 0)
        cJSON_AddItemToObject(v, "snapshot", snap_view(rec));
    *out = v;
done:
    layer_records_unlock();
    return status;
}
