/* Disk snapshots: a read-only layer copied from a running devbox's writable
 * upper dir, plus the layers the devbox itself booted on. */
#define _GNU_SOURCE
#include "layers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "sandbox.h"
#include "store.h"
#include "util.h"

#define ERRLEN 512
#define COMMIT_MAX 1000
#define FREEZE_TIMEOUT_MS 10000

static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t workers_cond = PTHREAD_COND_INITIALIZER;
static int workers; /* async snapshot threads alive */

void snapshots_wait_all(void)
{
    pthread_mutex_lock(&workers_lock);
    while (workers > 0)
        pthread_cond_wait(&workers_cond, &workers_lock);
    pthread_mutex_unlock(&workers_lock);
}

static const char *rec_str(const cJSON *rec, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, name));
}

static void add_str_or_null(cJSON *v, const cJSON *rec, const char *name)
{
    const char *s = rec_str(rec, name);

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

    cJSON_AddStringToObject(v, "id", rec_str(rec, "id"));
    cJSON_AddNumberToObject(v, "create_time_ms", cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rec, "create_time_ms")));
    cJSON_AddItemToObject(v, "metadata", meta != NULL ? cJSON_Duplicate(meta, 1)
                                                      : cJSON_CreateObject());
    cJSON_AddStringToObject(v, "source_devbox_id", rec_str(rec, "source_devbox_id"));
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

    cJSON_ArrayForEach(rec, layers_snapshots_locked()) {
        const char *id = rec_str(rec, "id");

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
    if (asprintf(&layer, "%s/snapshots/%s/layer", layers_state_dir(), sid) < 0)
        return;
    util_rmtree(layer);
    free(layer);
}

void snapshots_load_locked(cJSON *list)
{
    cJSON *rec = NULL;

    cJSON_ArrayForEach(rec, list) {
        const char *st = rec_str(rec, "status");

        if (st == NULL || strcmp(st, "in_progress") == 0) {
            set_str(rec, "status", "error");
            set_str(rec, "error_message", "devboxd restarted while the snapshot was taken; "
                    "take it again");
            layers_save_record("snapshots", "snapshot.json", rec);
            remove_partial(rec_str(rec, "id"));
        }
    }
}

int snapshots_in_progress(struct engine *eng, const char *box_id)
{
    const cJSON *rec = NULL;
    int n = 0;

    layers_lock(eng);
    cJSON_ArrayForEach(rec, layers_snapshots_locked()) {
        const char *src = rec_str(rec, "source_devbox_id");
        const char *st = rec_str(rec, "status");

        if (src != NULL && st != NULL && strcmp(src, box_id) == 0 &&
            strcmp(st, "in_progress") == 0)
            n++;
    }
    layers_unlock();
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

    frz = sandbox_freeze(sb, true, FREEZE_TIMEOUT_MS);
    if (frz == -ETIMEDOUT) {
        snprintf(err, errlen,
                 "the devbox's processes did not stop within %d ms (one "
                 "waits on I/O); take the snapshot again",
                 FREEZE_TIMEOUT_MS);
        return -1;
    }
    if (frz != 0 && frz != -ENOTSUP) {
        snprintf(err, errlen, "cannot freeze the devbox: %s", strerror(-frz));
        return -1;
    }
    rc = layers_copy(job->upper, job->layer, job->uid, job->uid, err, errlen);
    if (frz == 0 && sandbox_freeze(sb, false, FREEZE_TIMEOUT_MS) != 0)
        fprintf(stderr, "devboxd: devbox %s did not thaw after snapshot %s\n",
                job->box->id, job->id);
    return rc;
}

/* Copies the upper dir and records the result; releases the devbox. */
static int snap_run(struct snap_job *job, char *err, size_t errlen)
{
    cJSON *rec = NULL;
    int64_t size = 0;
    int rc;

    util_rmtree(job->layer);
    rc = capture(job, err, errlen);
    if (rc == 0)
        size = layers_size(job->layer);
    else
        util_rmtree(job->layer);
    layers_lock(job->eng);
    rec = find_locked(job->id);
    if (rec != NULL) {
        set_str(rec, "status", rc == 0 ? "complete" : "error");
        if (rc == 0)
            cJSON_AddNumberToObject(rec, "size_bytes", (double)size);
        else
            set_str(rec, "error_message", err);
        layers_save_record("snapshots", "snapshot.json", rec);
    }
    layers_unlock();
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
    static const char *const fields[] = {"name", "metadata", "commit_message", NULL};

    if (util_check_fields(body, "", fields, err, errlen) != 0 ||
        util_opt_string(body, "name", name, err, errlen) != 0 ||
        util_opt_string_map(body, "metadata", meta, err, errlen) != 0 ||
        util_opt_string(body, "commit_message", commit, err, errlen) != 0)
        return -1;
    if (*commit != NULL && strlen(*commit) > COMMIT_MAX) {
        snprintf(err, errlen, "commit_message is %zu characters; send at most %d",
                 strlen(*commit), COMMIT_MAX);
        return -1;
    }
    return 0;
}

/* Lock held: takes an I/O reference on a running devbox (a stop waits for
 * it) and fills the job; or answers the error. */
static int claim_box_locked(struct engine *eng, struct devbox *box, struct snap_job *job,
                            cJSON **chain, const char **bp, struct http_response *resp)
{
    if (box->status != DBX_RUNNING || box->sb == NULL) {
        util_error(resp, 400, "devbox %s is %s; only a running devbox can be snapshotted "
                   "(resume a suspended one first)", box->id, dbx_status_name(box->status));
        return -1;
    }
    job->uid = sandbox_owner_uid(box->sb);
    *chain = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(box->spec, "_layers"), 1);
    *bp = rec_str(box->spec, "blueprint_id");
    box->io_refs++;
    engine_touch_locked(box);
    (void)eng;
    return 0;
}

static cJSON *new_record(struct snap_job *job, const cJSON *body, const char *box_id,
                         const char *bp, cJSON *chain)
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
    cJSON_AddItemToObject(rec, "metadata", cJSON_IsObject(it) ? cJSON_Duplicate(it, 1)
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

void snapshots_create(struct engine *eng, struct devbox *box, const struct http_request *req,
                      struct http_response *resp, int async)
{
    struct snap_job *job = NULL;
    cJSON *body = NULL;
    cJSON *chain = NULL;
    cJSON *rec = NULL;
    cJSON *view = NULL;
    const char *name = NULL;
    const cJSON *meta = NULL;
    const char *commit = NULL;
    const char *bp = NULL;
    char err[ERRLEN] = "";
    int claimed = 0;

    if (layers_parse_body(req, resp, &body) != 0)
        return;
    if (check_body(body, &name, &meta, &commit, err, sizeof(err)) != 0) {
        util_error(resp, 400, "%s", err);
        goto out;
    }
    job = calloc(1, sizeof(*job));
    if (job == NULL)
        goto oom;
    job->eng = eng;
    job->box = box;
    util_new_id("snp", job->id, sizeof(job->id));
    layers_lock(eng);
    if (asprintf(&job->upper, "%s/devboxes/%s/sandbox/upper", eng->state_dir, box->id) < 0 ||
        asprintf(&job->layer, "%s/snapshots/%s/layer", eng->state_dir, job->id) < 0) {
        layers_unlock();
        goto oom;
    }
    pthread_mutex_lock(&eng->lock);
    claimed = claim_box_locked(eng, box, job, &chain, &bp, resp) == 0;
    rec = claimed ? new_record(job, body, box->id, bp, chain) : NULL;
    pthread_mutex_unlock(&eng->lock);
    if (!claimed) {
        layers_unlock();
        goto out;
    }
    cJSON_InsertItemInArray(layers_snapshots_locked(), 0, rec); /* newest first */
    layers_save_record("snapshots", "snapshot.json", rec);
    view = snap_view(rec);
    layers_unlock();
    if (async) {
        pthread_t tid;
        pthread_attr_t attr;
        int rc;

        pthread_mutex_lock(&workers_lock);
        workers++;
        pthread_mutex_unlock(&workers_lock);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&tid, &attr, snap_thread, job);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            snap_thread(job);
        job = NULL;
        util_json(resp, 200, view);
        view = NULL;
        goto out;
    }
    if (snap_run(job, err, sizeof(err)) != 0) {
        util_error(resp, 500, "snapshot %s failed: %s", job->id, err);
        goto out;
    }
    layers_lock(eng);
    rec = find_locked(job->id);
    util_json(resp, 200, rec != NULL ? snap_view(rec) : cJSON_CreateObject());
    layers_unlock();
    goto out;
oom:
    util_error(resp, 500, "out of memory");
out:
    if (job != NULL)
        job_free(job);
    cJSON_Delete(view);
    cJSON_Delete(chain);
    cJSON_Delete(body);
}

/* ------------------------------------------------------------- routes */

static int rec_matches(const cJSON *rec, const char *dbx, const char *bp)
{
    const char *st = rec_str(rec, "status");
    const char *src = rec_str(rec, "source_devbox_id");
    const char *sbp = rec_str(rec, "source_blueprint_id");

    if (st != NULL && (strcmp(st, "deleted") == 0))
        return 0;
    if (dbx != NULL && dbx[0] && (src == NULL || strcmp(src, dbx) != 0))
        return 0;
    if (bp != NULL && bp[0] && (sbp == NULL || strcmp(sbp, bp) != 0))
        return 0;
    return 1;
}

/* Does value v appear in the comma-separated list? */
static int in_csv(const char *list, const char *v)
{
    size_t vl = strlen(v);
    const char *p = list;

    while (p != NULL) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);

        if (len == vl && strncmp(p, v, vl) == 0)
            return 1;
        p = comma != NULL ? comma + 1 : NULL;
    }
    return 0;
}

/* metadata[<key>]=<v> and metadata[<key>][in]=<v1,v2> query filters.
 * Returns 1 if rec passes them all, 0 if not, -1 with err on a bad filter. */
static int metadata_matches(const struct http_request *req, const cJSON *rec, char *err,
                            size_t errlen)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(rec, "metadata");
    size_t i;

    for (i = 0; i < req->n_query; i++) {
        const char *name = req->query[i].name;
        const char *close = NULL;
        const char *have = NULL;
        char key[256];
        size_t klen;
        int is_in;

        if (strncmp(name, "metadata[", 9) != 0)
            continue;
        close = strchr(name + 9, ']');
        klen = close != NULL ? (size_t)(close - name - 9) : 0;
        is_in = close != NULL && strcmp(close + 1, "[in]") == 0;
        if (close == NULL || klen == 0 || klen >= sizeof(key) ||
            (close[1] != '\0' && !is_in)) {
            snprintf(err, errlen, "query parameter '%s' is not a metadata filter; use "
                     "metadata[<key>]=<value> or metadata[<key>][in]=<v1>,<v2>", name);
            return -1;
        }
        memcpy(key, name + 9, klen);
        key[klen] = '\0';
        have = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, key));
        if (have == NULL)
            return 0;
        if (is_in ? !in_csv(req->query[i].value, have) : strcmp(have, req->query[i].value) != 0)
            return 0;
    }
    return 1;
}

static cJSON *snap_view_item(const void *rec)
{
    return snap_view(rec);
}

static void handle_list(struct engine *eng, const struct http_request *req,
                        struct http_response *resp, int public_only)
{
    const char *dbx = http_request_query(req, "devbox_id");
    const char *bp = http_request_query(req, "source_blueprint_id");
    const char *after = http_request_query(req, "starting_after");
    const char *itc = http_request_query(req, "include_total_count");
    const char **ids = NULL;
    const cJSON **recs = NULL;
    const cJSON *rec = NULL;
    char err[ERRLEN];
    int64_t limit;
    size_t n = 0, cap;

    if (layers_query_int(req, resp, "limit", 1, 5000, 20, &limit) != 0)
        return;
    layers_lock(eng);
    cap = (size_t)cJSON_GetArraySize(layers_snapshots_locked()) + 1;
    ids = calloc(cap, sizeof(*ids));
    recs = calloc(cap, sizeof(*recs));
    if (ids == NULL || recs == NULL) {
        util_error(resp, 500, "out of memory");
        goto out;
    }
    cJSON_ArrayForEach(rec, layers_snapshots_locked()) {
        int m;

        if (public_only || !rec_matches(rec, dbx, bp))
            continue;
        m = metadata_matches(req, rec, err, sizeof(err));
        if (m < 0) {
            util_error(resp, 400, "%s", err);
            goto out;
        }
        if (m == 0)
            continue;
        ids[n] = rec_str(rec, "id");
        recs[n++] = rec;
    }
    /* An unknown starting_after on an empty list is an empty page here. */
    api_list_reply(resp, "snapshots", ids, (const void *const *)recs, n, n > 0 ? after : NULL, limit,
                   itc, snap_view_item);
out:
    layers_unlock();
    free(ids);
    free(recs);
}

static void handle_update(struct engine *eng, const char *sid, const struct http_request *req,
                          struct http_response *resp)
{
    cJSON *body = NULL;
    cJSON *rec = NULL;
    const char *name = NULL;
    const cJSON *meta = NULL;
    const char *commit = NULL;
    char err[ERRLEN];

    if (layers_parse_body(req, resp, &body) != 0)
        return;
    if (check_body(body, &name, &meta, &commit, err, sizeof(err)) != 0) {
        util_error(resp, 400, "%s", err);
        goto out_nolock;
    }
    layers_lock(eng);
    rec = find_locked(sid);
    if (rec == NULL || strcmp(rec_str(rec, "status"), "deleted") == 0) {
        util_error(resp, 404, "snapshot %s not found; list snapshots with GET "
                   "/v1/devboxes/disk_snapshots", sid);
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
    layers_save_record("snapshots", "snapshot.json", rec);
    util_json(resp, 200, snap_view(rec));
out:
    layers_unlock();
out_nolock:
    cJSON_Delete(body);
}

static void handle_delete(struct engine *eng, const char *sid, struct http_response *resp)
{
    cJSON *rec = NULL;
    const char *st = NULL;
    const cJSON *own = NULL;
    const char *path = NULL;
    char who[64] = "";

    layers_lock(eng);
    rec = find_locked(sid);
    if (rec == NULL) {
        util_error(resp, 404, "snapshot %s not found; list snapshots with GET "
                   "/v1/devboxes/disk_snapshots", sid);
        goto out;
    }
    st = rec_str(rec, "status");
    if (strcmp(st, "deleted") == 0) {
        util_json(resp, 200, cJSON_CreateObject());
        goto out;
    }
    if (strcmp(st, "in_progress") == 0) {
        util_error(resp, 400, "snapshot %s is still in progress; delete it once its status "
                   "is complete or error", sid);
        goto out;
    }
    own = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(rec, "layers"), 0);
    path = rec_str(own, "path");
    if (path != NULL && layers_in_use_locked(eng, path, sid, who, sizeof(who))) {
        util_error(resp, 400, "snapshot %s is in use by %s; shut that devbox down (or delete "
                   "that snapshot or blueprint) first", sid, who);
        goto out;
    }
    if (path != NULL)
        util_rmtree(path);
    set_str(rec, "status", "deleted");
    layers_save_record("snapshots", "snapshot.json", rec);
    util_json(resp, 200, cJSON_CreateObject());
out:
    layers_unlock();
}

static void handle_status(struct engine *eng, const char *sid, struct http_response *resp)
{
    cJSON *rec = NULL;
    cJSON *v = NULL;
    const char *st = NULL;
    const char *msg = NULL;

    layers_lock(eng);
    rec = find_locked(sid);
    if (rec == NULL) {
        util_error(resp, 404, "snapshot %s not found; list snapshots with GET "
                   "/v1/devboxes/disk_snapshots", sid);
        goto out;
    }
    st = rec_str(rec, "status");
    msg = rec_str(rec, "error_message");
    v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "status", st);
    if (msg != NULL)
        cJSON_AddStringToObject(v, "error_message", msg);
    else
        cJSON_AddNullToObject(v, "error_message");
    if (strcmp(st, "deleted") != 0)
        cJSON_AddItemToObject(v, "snapshot", snap_view(rec));
    util_json(resp, 200, v);
out:
    layers_unlock();
}

void snapshots_route(struct engine *eng, char **seg, size_t n, const struct http_request *req,
                     struct http_response *resp)
{
    int is_get = strcmp(req->method, "GET") == 0;

    if (n == 3 && is_get) {
        handle_list(eng, req, resp, 0);
    } else if (n == 4 && is_get && strcmp(seg[3], "list_public") == 0) {
        handle_list(eng, req, resp, 1);
    } else if (n == 4 && !is_get) {
        handle_update(eng, seg[3], req, resp);
    } else if (n == 5 && !is_get && strcmp(seg[4], "delete") == 0) {
        handle_delete(eng, seg[3], resp);
    } else if (n == 5 && is_get && strcmp(seg[4], "status") == 0) {
        handle_status(eng, seg[3], resp);
    } else {
        api_unimplemented(req, resp);
    }
}
