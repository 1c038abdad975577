/* devboxd storage objects: their durable store, the calls the /v1/objects
 * routes (rest/api_objects.c) make, and object mounts of a devbox create.
 * See objects.h. */
#define _GNU_SOURCE
#include "objects.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "util.h"

#define OBJECT_ID_MAX STORE_ID_MAX
#define OBJECT_RECORD_MAX (64 * 1024)
#define TTL_MAX_MS (3650LL * 24 * 3600 * 1000)

static pthread_mutex_t objects_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const content_types[] = {
    "unspecified", "text", "binary", "gzip", "tar", "tgz", NULL};

/* ------------------------------------------------------------- store */

/* obj_ followed by letters and digits: ids become file names. */
int objects_id_valid(const char *id)
{
    return store_id_valid(id, "obj");
}

static void data_file(const char *id, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s.data", id);
}

static int remove_locked(const char *dir, const char *id)
{
    char file[OBJECT_ID_MAX + 16];
    int rc;

    data_file(id, file, sizeof(file));
    rc = store_remove(dir, file);
    snprintf(file, sizeof(file), "%s.json", id);
    if (store_remove(dir, file) != 0)
        rc = -1;
    return rc;
}

static int expired(const cJSON *rec)
{
    const cJSON *t =
        cJSON_GetObjectItemCaseSensitive(rec, "delete_after_time_ms");

    return cJSON_IsNumber(t) && t->valuedouble <= (double)util_now_ms();
}

/* Lock held. The live record of id, or NULL; an expired one is removed. */
static cJSON *load_locked(const char *dir, const char *id)
{
    cJSON *rec = NULL;

    if (!objects_id_valid(id))
        return NULL;
    rec = store_load(dir, id, OBJECT_RECORD_MAX);
    if (rec != NULL && expired(rec)) {
        remove_locked(dir, id);
        cJSON_Delete(rec);
        rec = NULL;
    }
    return rec;
}

static int save_locked(const char *dir, const cJSON *rec)
{
    char file[OBJECT_ID_MAX + 16];
    char *text = cJSON_PrintUnformatted(rec);
    int rc;

    if (text == NULL) {
        errno = ENOMEM;
        return -1;
    }
    snprintf(file, sizeof(file), "%s.json", util_json_str(rec, "id"));
    rc = store_write(dir, file, text, strlen(text));
    free(text);
    return rc;
}

/* Lock held. Every live record, newest first; expired ones are removed. */
static cJSON *load_all_locked(const char *dir)
{
    cJSON *all = store_load_all(dir, OBJECT_RECORD_MAX);
    int i;

    for (i = cJSON_GetArraySize(all) - 1; i >= 0; i--) {
        cJSON *rec = cJSON_GetArrayItem(all, i);
        const char *id = util_json_str(rec, "id");

        if (!objects_id_valid(id)) {
            cJSON_DeleteItemFromArray(all, i);
        } else if (expired(rec)) {
            remove_locked(dir, id);
            cJSON_DeleteItemFromArray(all, i);
        }
    }
    return all;
}

/* --------------------------------------------------------------- views */

cJSON *objects_view(const cJSON *rec)
{
    static const char *const keys[] = {
        "id",       "name",           "content_type",
        "state",    "create_time_ms", "delete_after_time_ms",
        "metadata", "size_bytes",     NULL};
    cJSON *v = cJSON_CreateObject();
    size_t i;

    for (i = 0; keys[i] != NULL; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(rec, keys[i]);

        if (it != NULL)
            cJSON_AddItemToObject(v, keys[i], cJSON_Duplicate(it, 1));
        else
            cJSON_AddNullToObject(v, keys[i]);
    }
    return v;
}

static int not_found(const char *id, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "object %s not found; list the objects to see which exist", id);
    return 404;
}

/* The live record of id, read under the lock. */
static cJSON *load(const char *dir, const char *id)
{
    cJSON *rec = NULL;

    pthread_mutex_lock(&objects_lock);
    rec = load_locked(dir, id);
    pthread_mutex_unlock(&objects_lock);
    return rec;
}

/* The live record of id with the lock taken, for a change; NULL (lock not
 * held) with err when there is none. */
static cJSON *lock_record(const char *dir, const char *id, char *err,
                          size_t errlen)
{
    cJSON *rec = NULL;

    pthread_mutex_lock(&objects_lock);
    rec = load_locked(dir, id);
    if (rec == NULL) {
        pthread_mutex_unlock(&objects_lock);
        not_found(id, err, errlen);
    }
    return rec;
}

/* Lock held: stores rec in dir (NULL: out of memory) and lets go of the
 * lock. 0, or -1 with errno. */
static int save_unlock(const char *dir, const cJSON *rec)
{
    int rc = -1;
    int saved = ENOMEM;

    if (dir != NULL) {
        rc = save_locked(dir, rec);
        saved = errno;
    }
    pthread_mutex_unlock(&objects_lock);
    errno = saved;
    return rc;
}

/* ------------------------------------------------------------ create */

static int check_name(const char *name, char *err, size_t errlen)
{
    size_t i;

    if (name == NULL || name[0] == '\0' || strlen(name) > OBJECT_NAME_MAX) {
        snprintf(err, errlen, "'name' must be a string of 1 to %d bytes",
                 OBJECT_NAME_MAX);
        return -1;
    }
    for (i = 0; name[i] != '\0'; i++) {
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f) {
            snprintf(err, errlen, "'name' must not contain control characters");
            return -1;
        }
    }
    return 0;
}

int objects_check_content_type(const char *ct, const char *field, char *err,
                               size_t errlen)
{
    size_t i;

    for (i = 0; ct != NULL && content_types[i] != NULL; i++) {
        if (strcmp(ct, content_types[i]) == 0)
            return 0;
    }
    snprintf(
        err, errlen,
        "'%s' must be one of unspecified, text, binary, gzip, tar, tgz%s%s%s",
        field, ct != NULL ? " (got \"" : "", ct != NULL ? ct : "",
        ct != NULL ? "\")" : "");
    return -1;
}

/* The new record of a valid create body, or NULL with err. */
static cJSON *new_record(const cJSON *body, char *err, size_t errlen)
{
    static const char *const fields[] = {"name", "content_type", "metadata",
                                         "ttl_ms", NULL};
    const char *name = NULL;
    const char *ct = NULL;
    const cJSON *meta = NULL;
    int64_t ttl = 0;
    int has_ttl = 0;
    int64_t now = util_now_ms();
    char id[OBJECT_ID_MAX];
    cJSON *rec = NULL;

    if (util_check_fields(body, "", fields, err, errlen) != 0 ||
        util_opt_string(body, "name", &name, err, errlen) != 0 ||
        check_name(name, err, errlen) != 0 ||
        util_opt_string(body, "content_type", &ct, err, errlen) != 0 ||
        objects_check_content_type(ct, "content_type", err, errlen) != 0 ||
        util_opt_string_map(body, "metadata", &meta, err, errlen) != 0 ||
        util_opt_int(body, "ttl_ms", 1, TTL_MAX_MS, &ttl, &has_ttl, err,
                     errlen) != 0)
        return NULL;
    util_new_id("obj", id, sizeof(id));
    rec = cJSON_CreateObject();
    cJSON_AddStringToObject(rec, "id", id);
    cJSON_AddStringToObject(rec, "name", name);
    cJSON_AddStringToObject(rec, "content_type", ct);
    cJSON_AddStringToObject(rec, "state", "UPLOADING");
    cJSON_AddNumberToObject(rec, "create_time_ms", (double)now);
    if (has_ttl)
        cJSON_AddNumberToObject(rec, "delete_after_time_ms",
                                (double)(now + ttl));
    if (meta != NULL)
        cJSON_AddItemToObject(rec, "metadata", cJSON_Duplicate(meta, 1));
    cJSON_AddNullToObject(rec, "size_bytes");
    return rec;
}

int objects_create(struct engine *eng, const cJSON *body, cJSON **out,
                   char *err, size_t errlen)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *all = NULL;
    cJSON *rec = NULL;
    int status = 0;
    int saved = 0;

    *out = NULL;
    rec = new_record(body, err, errlen);
    if (rec == NULL) {
        status = 400;
        goto out;
    }
    pthread_mutex_lock(&objects_lock);
    all = load_all_locked(dir);
    if (cJSON_GetArraySize(all) >= OBJECTS_MAX) {
        pthread_mutex_unlock(&objects_lock);
        snprintf(err, errlen,
                 "the local engine keeps at most %d objects; delete some first",
                 OBJECTS_MAX);
        status = 400;
        goto out;
    }
    if (save_unlock(dir, rec) != 0) {
        saved = errno;
        status = -1;
        goto out;
    }
    *out = rec;
    rec = NULL;
out:
    cJSON_Delete(all);
    cJSON_Delete(rec);
    free(dir);
    errno = saved;
    return status;
}

/* ------------------------------------------------- upload and complete */

int objects_upload(struct engine *eng, const char *id, const char *data,
                   size_t len, cJSON **out, char *err, size_t errlen)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *rec = NULL;
    char file[OBJECT_ID_MAX + 16];
    int status = 0;
    int saved = 0;
    int room;

    *out = NULL;
    /* Not into the space promised to devbox disks (admission.h). */
    pthread_mutex_lock(&eng->lock);
    room = engine_state_room_locked(eng, len, "this upload", err, errlen);
    pthread_mutex_unlock(&eng->lock);
    if (room != 0) {
        status = 507;
        goto out;
    }
    rec = lock_record(dir, id, err, errlen);
    if (rec == NULL) {
        status = 404;
        goto out;
    }
    if (strcmp(util_json_str(rec, "state"), "UPLOADING") != 0) {
        pthread_mutex_unlock(&objects_lock);
        snprintf(err, errlen,
                 "object %s is %s: its bytes were set by its upload; create a "
                 "new object for new data",
                 id, util_json_str(rec, "state"));
        status = 409;
        goto out;
    }
    /* Written under the lock: a delete cannot slip between the state
     * check and the data landing, leaving bytes without a record. */
    data_file(id, file, sizeof(file));
    if (store_write(dir, file, data != NULL ? data : "", len) != 0) {
        saved = errno;
        pthread_mutex_unlock(&objects_lock);
        status = -1;
        goto out;
    }
    pthread_mutex_unlock(&objects_lock);
    *out = rec;
    rec = NULL;
out:
    cJSON_Delete(rec);
    free(dir);
    errno = saved;
    return status;
}

int objects_complete(struct engine *eng, const char *id, cJSON **out, char *err,
                     size_t errlen)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *rec = NULL;
    char path[4200];
    struct stat st;
    int status = 0;
    int saved = 0;

    *out = NULL;
    rec = lock_record(dir, id, err, errlen);
    if (rec == NULL) {
        status = 404;
        goto out;
    }
    if (strcmp(util_json_str(rec, "state"), "UPLOADING") != 0) {
        pthread_mutex_unlock(&objects_lock);
        goto done;
    }
    snprintf(path, sizeof(path), "%s/%s.data", dir, id);
    if (stat(path, &st) != 0) {
        pthread_mutex_unlock(&objects_lock);
        snprintf(err, errlen,
                 "nothing was uploaded to object %s: PUT its bytes to the "
                 "upload_url of its view first",
                 id);
        status = 400;
        goto out;
    }
    cJSON_ReplaceItemInObjectCaseSensitive(rec, "state",
                                           cJSON_CreateString("READ_ONLY"));
    cJSON_ReplaceItemInObjectCaseSensitive(
        rec, "size_bytes", cJSON_CreateNumber((double)st.st_size));
    if (save_unlock(dir, rec) != 0) {
        saved = errno;
        status = -1;
        goto out;
    }
done:
    *out = rec;
    rec = NULL;
out:
    cJSON_Delete(rec);
    free(dir);
    errno = saved;
    return status;
}

/* ---------------------------------------------------- delete and read */

int objects_delete(struct engine *eng, const char *id, cJSON **out, char *err,
                   size_t errlen)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *rec = NULL;
    int status = 0;

    *out = NULL;
    rec = lock_record(dir, id, err, errlen);
    if (rec == NULL) {
        status = 404;
        goto out;
    }
    if (remove_locked(dir, id) != 0) {
        pthread_mutex_unlock(&objects_lock);
        snprintf(err, errlen, "cannot delete object %s: %s", id,
                 strerror(errno));
        status = 500;
        goto out;
    }
    pthread_mutex_unlock(&objects_lock);
    cJSON_ReplaceItemInObjectCaseSensitive(rec, "state",
                                           cJSON_CreateString("DELETED"));
    *out = rec;
    rec = NULL;
out:
    cJSON_Delete(rec);
    free(dir);
    return status;
}

int objects_get(struct engine *eng, const char *id, cJSON **out, char *err,
                size_t errlen)
{
    char *dir = store_dir(eng->state_dir, "objects");

    *out = objects_id_valid(id) ? load(dir, id) : NULL;
    free(dir);
    return *out != NULL ? 0 : not_found(id, err, errlen);
}

cJSON *objects_list(struct engine *eng)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *all = NULL;

    pthread_mutex_lock(&objects_lock);
    all = load_all_locked(dir);
    pthread_mutex_unlock(&objects_lock);
    free(dir);
    return all;
}

int objects_open(struct engine *eng, const char *id, char *err, size_t errlen)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *rec = NULL;
    char path[4200];
    int fd = -1;

    pthread_mutex_lock(&objects_lock);
    rec = load_locked(dir, id);
    if (rec == NULL) {
        snprintf(err, errlen, "object %s not found (deleted or expired)", id);
    } else if (strcmp(util_json_str(rec, "state"), "READ_ONLY") != 0) {
        snprintf(err, errlen, "object %s is %s, not READ_ONLY", id,
                 util_json_str(rec, "state"));
    } else {
        snprintf(path, sizeof(path), "%s/%s.data", dir, id);
        /* Opened under the lock: a delete after this leaves the fd valid. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            snprintf(err, errlen, "cannot open object %s: %s", id,
                     strerror(errno));
    }
    pthread_mutex_unlock(&objects_lock);
    cJSON_Delete(rec);
    free(dir);
    return fd;
}

/* ------------------------------------------------------ devbox create */

int objects_check_mount(const cJSON *mount, const char *where, char *err,
                        size_t errlen)
{
    static const char *const fields[] = {"type", "object_id", "object_path",
                                         NULL};
    const char *id = NULL;
    const char *path = NULL;

    if (util_check_fields(mount, where, fields, err, errlen) != 0 ||
        util_opt_string(mount, "object_id", &id, err, errlen) != 0 ||
        util_opt_string(mount, "object_path", &path, err, errlen) != 0)
        return -1;
    if (!objects_id_valid(id)) {
        snprintf(
            err, errlen,
            "%s.object_id must be an object id (obj_…) from creating an object",
            where);
        return -1;
    }
    if (path == NULL || path[0] != '/' || strlen(path) >= 4096 ||
        strcmp(path, "/") == 0) {
        snprintf(err, errlen,
                 "%s.object_path must be an absolute path of a file or "
                 "directory below /",
                 where);
        return -1;
    }
    return 0;
}

int objects_resolve_create(struct engine *eng, const cJSON *body, cJSON *spec,
                           char *err, size_t errlen)
{
    const cJSON *mounts = cJSON_GetObjectItemCaseSensitive(body, "mounts");
    const cJSON *it = NULL;
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *out = cJSON_CreateArray();
    int status = 0;
    int i = 0;

    cJSON_ArrayForEach(it, mounts)
    {
        const char *type = util_json_str(it, "type");
        const char *id = util_json_str(it, "object_id");
        cJSON *rec = NULL;
        cJSON *m = NULL;

        i++;
        if (type == NULL || strcmp(type, "object_mount") != 0)
            continue;
        rec = load(dir, id);
        if (rec == NULL ||
            strcmp(util_json_str(rec, "state"), "READ_ONLY") != 0) {
            snprintf(err, errlen,
                     rec == NULL ? "mounts[%d].object_id %s: no such object "
                                   "(list the objects to "
                                   "see which exist)"
                                 : "mounts[%d].object_id %s is still "
                                   "UPLOADING: complete its "
                                   "upload first",
                     i - 1, id);
            cJSON_Delete(rec);
            status = 400;
            goto out;
        }
        m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "object_id", id);
        cJSON_AddItemToObject(
            m, "object_path",
            cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(it, "object_path"),
                            0));
        cJSON_AddStringToObject(m, "content_type",
                                util_json_str(rec, "content_type"));
        cJSON_AddItemToArray(out, m);
        cJSON_Delete(rec);
    }
    if (cJSON_GetArraySize(out) > 0) {
        cJSON_AddItemToObject(spec, "_object_mounts", out);
        out = NULL;
    }
out:
    cJSON_Delete(out);
    free(dir);
    return status;
}
