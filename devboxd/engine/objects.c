/* devboxd storage objects: the /v1/objects routes, their signed upload and
 * download URLs, their durable store, and object mounts of a devbox
 * create. See objects.h. */
#define _GNU_SOURCE
#include "objects.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "layer_records.h"
#include "store.h"
#include "util.h"

#define OBJECT_ID_MAX STORE_ID_MAX
#define OBJECT_RECORD_MAX (64 * 1024)
#define DOWNLOAD_DEFAULT_S 3600
#define DOWNLOAD_MAX_S (7 * 24 * 3600)
#define UPLOAD_URL_S (24 * 3600)
#define TTL_MAX_MS (3650LL * 24 * 3600 * 1000)

static pthread_mutex_t objects_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const content_types[] = {
    "unspecified", "text", "binary", "gzip", "tar", "tgz", NULL};

/* ------------------------------------------------------------- store */

/* obj_ followed by letters and digits: ids become file names. */
static int id_valid(const char *id)
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

    if (!id_valid(id))
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

        if (!id_valid(id)) {
            cJSON_DeleteItemFromArray(all, i);
        } else if (expired(rec)) {
            remove_locked(dir, id);
            cJSON_DeleteItemFromArray(all, i);
        }
    }
    return all;
}

/* -------------------------------------------------------- signed URLs */

/* Hex HMAC-SHA256, keyed with the API key, of what a URL allows: rotating
 * the key revokes every URL handed out. */
static void sign(struct engine *eng, const char *method, const char *id,
                 long long expires, char out[2 * EVP_MAX_MD_SIZE + 1])
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    char msg[128];
    unsigned int i;

    snprintf(msg, sizeof(msg), "devboxd-object\n%s\n%s\n%lld", method, id,
             expires);
    if (HMAC(EVP_sha256(), eng->api_key, (int)strlen(eng->api_key),
             (const unsigned char *)msg, strlen(msg), mac, &len) == NULL)
        len = 0;
    for (i = 0; i < len; i++)
        snprintf(out + 2 * i, 3, "%02x", mac[i]);
    out[2 * len] = '\0';
}

/* The authority clients reached this engine by, when it is a plain
 * host[:port]; anything else falls back to the loopback address. */
static const char *url_authority(const struct http_request *req)
{
    const char *h = http_request_header(req, "host");
    size_t i;

    if (h == NULL || h[0] == '\0' || strlen(h) > 255)
        return "127.0.0.1";
    for (i = 0; h[i] != '\0'; i++) {
        char c = h[i];

        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '-' || c == ':' ||
              c == '[' || c == ']'))
            return "127.0.0.1";
    }
    return h;
}

/* A URL for method on /v1/objects/{id}/{what}, valid for seconds. */
static char *signed_url(struct engine *eng, const struct http_request *req,
                        const char *method, const char *id, const char *what,
                        long long seconds)
{
    char mac[2 * EVP_MAX_MD_SIZE + 1];
    long long expires = util_now_ms() / 1000 + seconds;
    char *url = NULL;

    sign(eng, method, id, expires, mac);
    if (asprintf(&url, "http://%s/v1/objects/%s/%s?expires=%lld&signature=%s",
                 url_authority(req), id, what, expires, mac) < 0)
        return NULL;
    return url;
}

/* The id of /v1/objects/{id}/{what} into id (OBJECT_ID_MAX + 1 bytes). */
static int signed_path(const char *path, const char *what, char *id)
{
    const char *p = path;
    const char *slash = NULL;
    size_t len;

    if (strncmp(p, "/v1/objects/", 12) != 0)
        return 0;
    p += 12;
    slash = strchr(p, '/');
    if (slash == NULL || strcmp(slash + 1, what) != 0)
        return 0;
    len = (size_t)(slash - p);
    if (len == 0 || len > OBJECT_ID_MAX)
        return 0;
    memcpy(id, p, len);
    id[len] = '\0';
    return id_valid(id);
}

int objects_signed_request(struct engine *eng, const struct http_request *req)
{
    const char *exp = http_request_query(req, "expires");
    const char *given = http_request_query(req, "signature");
    const char *method = req->method;
    char id[OBJECT_ID_MAX + 1];
    char mac[2 * EVP_MAX_MD_SIZE + 1];
    char *end = NULL;
    long long expires;

    if (exp == NULL || given == NULL)
        return 0;
    if (!(strcmp(method, "PUT") == 0 && signed_path(req->path, "upload", id)) &&
        !(strcmp(method, "GET") == 0 && signed_path(req->path, "content", id)))
        return 0;
    errno = 0;
    expires = strtoll(exp, &end, 10);
    if (errno != 0 || end == exp || *end != '\0' ||
        expires < util_now_ms() / 1000)
        return 0;
    sign(eng, method, id, expires, mac);
    return util_secret_equal(given, mac);
}

/* --------------------------------------------------------------- views */

/* ObjectView, as listed: no URL. */
static cJSON *object_view(const void *item)
{
    static const char *const keys[] = {
        "id",       "name",           "content_type",
        "state",    "create_time_ms", "delete_after_time_ms",
        "metadata", "size_bytes",     NULL};
    const cJSON *rec = item;
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

/* ObjectView of one object: an UPLOADING one carries its upload_url. */
static void reply_object(struct engine *eng, const struct http_request *req,
                         const cJSON *rec, struct http_response *resp)
{
    cJSON *v = object_view(rec);
    char *url = NULL;

    if (strcmp(util_json_str(rec, "state"), "UPLOADING") == 0) {
        url = signed_url(eng, req, "PUT", util_json_str(rec, "id"), "upload",
                         UPLOAD_URL_S);
        if (url == NULL) {
            cJSON_Delete(v);
            http_response_error(resp, 500, "out of memory");
            return;
        }
        cJSON_AddStringToObject(v, "upload_url", url);
        free(url);
    }
    http_response_json(resp, 200, v);
}

/* Lock held: stores rec in dir (NULL: out of memory), lets go of the lock
 * and answers with rec's view, or with why it could not be stored. */
static void save_reply_unlock(struct engine *eng,
                              const struct http_request *req, const char *dir,
                              const cJSON *rec, struct http_response *resp)
{
    int rc = -1;
    int saved = ENOMEM;

    if (dir != NULL) {
        rc = save_locked(dir, rec);
        saved = errno;
    }
    pthread_mutex_unlock(&objects_lock);
    if (rc != 0)
        api_storage_error(resp, saved);
    else
        reply_object(eng, req, rec, resp);
}

static void not_found(struct http_response *resp, const char *id)
{
    http_response_error(
        resp, 404, "object %s not found; list the objects to see which exist",
        id);
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
 * held) after answering 404. */
static cJSON *lock_record(const char *dir, const char *id,
                          struct http_response *resp)
{
    cJSON *rec = NULL;

    pthread_mutex_lock(&objects_lock);
    rec = load_locked(dir, id);
    if (rec == NULL) {
        pthread_mutex_unlock(&objects_lock);
        not_found(resp, id);
    }
    return rec;
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

static int check_content_type(const char *ct, const char *field, char *err,
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
        check_content_type(ct, "content_type", err, errlen) != 0 ||
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

static void handle_create(struct engine *eng, const struct http_request *req,
                          const cJSON *body, struct http_response *resp)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *all = NULL;
    cJSON *rec = NULL;
    char err[320];

    rec = new_record(body, err, sizeof(err));
    if (rec == NULL) {
        http_response_error(resp, 400, "%s", err);
        goto out;
    }
    pthread_mutex_lock(&objects_lock);
    all = load_all_locked(dir);
    if (cJSON_GetArraySize(all) >= OBJECTS_MAX) {
        pthread_mutex_unlock(&objects_lock);
        http_response_error(
            resp, 400,
            "the local engine keeps at most %d objects; delete some first",
            OBJECTS_MAX);
        goto out;
    }
    save_reply_unlock(eng, req, dir, rec, resp);
out:
    cJSON_Delete(all);
    cJSON_Delete(rec);
    free(dir);
}

/* ------------------------------------------------- upload and complete */

static void handle_upload(struct engine *eng, const char *id,
                          const struct http_request *req,
                          struct http_response *resp)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *rec = NULL;
    char file[OBJECT_ID_MAX + 16];
    char err[640];
    int room;

    if (req->body_too_large) {
        http_response_error(
            resp, 413, "an object holds at most %u bytes; split larger data",
            OBJECT_MAX_BYTES);
        goto out;
    }
    /* Not into the space promised to devbox disks (admission.h). */
    pthread_mutex_lock(&eng->lock);
    room = engine_state_room_locked(eng, req->body_len, "this upload", err,
                                    sizeof(err));
    pthread_mutex_unlock(&eng->lock);
    if (room != 0) {
        http_response_error(resp, 507, "%s", err);
        goto out;
    }
    rec = lock_record(dir, id, resp);
    if (rec == NULL)
        goto out;
    if (strcmp(util_json_str(rec, "state"), "UPLOADING") != 0) {
        pthread_mutex_unlock(&objects_lock);
        http_response_error(resp, 409,
                            "object %s is %s: its bytes were set by its "
                            "upload; create a new object "
                            "for new data",
                            id, util_json_str(rec, "state"));
        goto out;
    }
    /* Written under the lock: a delete cannot slip between the state
     * check and the data landing, leaving bytes without a record. */
    data_file(id, file, sizeof(file));
    if (store_write(dir, file, req->body != NULL ? req->body : "",
                    req->body_len) != 0) {
        pthread_mutex_unlock(&objects_lock);
        api_storage_error(resp, errno);
        goto out;
    }
    pthread_mutex_unlock(&objects_lock);
    http_response_json(resp, 200, object_view(rec));
out:
    cJSON_Delete(rec);
    free(dir);
}

static void handle_complete(struct engine *eng, const struct http_request *req,
                            const char *id, struct http_response *resp)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *rec = NULL;
    char path[4200];
    struct stat st;

    rec = lock_record(dir, id, resp);
    if (rec == NULL)
        goto out;
    if (strcmp(util_json_str(rec, "state"), "UPLOADING") == 0) {
        snprintf(path, sizeof(path), "%s/%s.data", dir, id);
        if (stat(path, &st) != 0) {
            pthread_mutex_unlock(&objects_lock);
            http_response_error(resp, 400,
                                "nothing was uploaded to object %s: PUT its "
                                "bytes to the upload_url "
                                "of its view first",
                                id);
            goto out;
        }
        cJSON_ReplaceItemInObjectCaseSensitive(rec, "state",
                                               cJSON_CreateString("READ_ONLY"));
        cJSON_ReplaceItemInObjectCaseSensitive(
            rec, "size_bytes", cJSON_CreateNumber((double)st.st_size));
        save_reply_unlock(eng, req, dir, rec, resp);
        goto out;
    }
    pthread_mutex_unlock(&objects_lock);
    reply_object(eng, req, rec, resp);
out:
    cJSON_Delete(rec);
    free(dir);
}

/* ---------------------------------------------------- delete and read */

static void handle_delete(struct engine *eng, const char *id,
                          struct http_response *resp)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *rec = NULL;

    rec = lock_record(dir, id, resp);
    if (rec == NULL)
        goto out;
    if (remove_locked(dir, id) != 0) {
        pthread_mutex_unlock(&objects_lock);
        http_response_error(resp, 500, "cannot delete object %s: %s", id,
                            strerror(errno));
        goto out;
    }
    pthread_mutex_unlock(&objects_lock);
    cJSON_ReplaceItemInObjectCaseSensitive(rec, "state",
                                           cJSON_CreateString("DELETED"));
    http_response_json(resp, 200, object_view(rec));
out:
    cJSON_Delete(rec);
    free(dir);
}

static void handle_download_url(struct engine *eng, const char *id,
                                const struct http_request *req,
                                struct http_response *resp)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *rec = NULL;
    cJSON *v = NULL;
    char *url = NULL;
    int64_t seconds;

    if (api_query_int(req, resp, "duration_seconds", 1, DOWNLOAD_MAX_S,
                      DOWNLOAD_DEFAULT_S, &seconds) != 0)
        goto out;
    rec = load(dir, id);
    if (rec == NULL) {
        not_found(resp, id);
        goto out;
    }
    if (strcmp(util_json_str(rec, "state"), "READ_ONLY") != 0) {
        http_response_error(resp, 400,
                            "object %s is %s: complete its upload "
                            "before downloading it",
                            id, util_json_str(rec, "state"));
        goto out;
    }
    url = signed_url(eng, req, "GET", id, "content", seconds);
    if (url == NULL) {
        http_response_error(resp, 500, "out of memory");
        goto out;
    }
    v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "download_url", url);
    http_response_json(resp, 200, v);
out:
    free(url);
    cJSON_Delete(rec);
    free(dir);
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

static void handle_content(struct engine *eng, const char *id,
                           struct http_response *resp)
{
    char err[256];
    int fd = objects_open(eng, id, err, sizeof(err));

    if (fd < 0) {
        http_response_error(resp, 404, "%s", err);
        return;
    }
    files_stream_fd(resp, fd);
}

/* ---------------------------------------------------------------- list */

static int list_match(const cJSON *rec, const struct http_request *req)
{
    const char *name = http_request_query(req, "name");
    const char *ct = http_request_query(req, "content_type");
    const char *state = http_request_query(req, "state");
    const char *search = http_request_query(req, "search");

    if (name != NULL && strcmp(name, util_json_str(rec, "name")) != 0)
        return 0;
    if (ct != NULL && strcmp(ct, util_json_str(rec, "content_type")) != 0)
        return 0;
    if (state != NULL && strcmp(state, util_json_str(rec, "state")) != 0)
        return 0;
    if (search != NULL && strstr(util_json_str(rec, "name"), search) == NULL &&
        strstr(util_json_str(rec, "id"), search) == NULL)
        return 0;
    return 1;
}

static int check_list_query(const struct http_request *req,
                            struct http_response *resp)
{
    static const char *const states[] = {"UPLOADING", "READ_ONLY", "DELETED",
                                         "ERROR", NULL};
    const char *ct = http_request_query(req, "content_type");
    const char *state = http_request_query(req, "state");
    char err[200];
    size_t i;

    if (ct != NULL &&
        check_content_type(ct, "content_type", err, sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        return -1;
    }
    for (i = 0; state != NULL && states[i] != NULL; i++) {
        if (strcmp(state, states[i]) == 0)
            return 0;
    }
    if (state != NULL) {
        http_response_error(
            resp, 400,
            "'state' must be one of UPLOADING, READ_ONLY, DELETED, ERROR");
        return -1;
    }
    return 0;
}

static void handle_list(struct engine *eng, const struct http_request *req,
                        int public_only, struct http_response *resp)
{
    char *dir = store_dir(eng->state_dir, "objects");
    cJSON *all = NULL;
    int64_t limit;

    if (api_query_int(req, resp, "limit", 1, 5000, 20, &limit) != 0 ||
        check_list_query(req, resp) != 0)
        goto out;
    pthread_mutex_lock(&objects_lock);
    /* The local engine has no public objects. */
    all = public_only ? cJSON_CreateArray() : load_all_locked(dir);
    pthread_mutex_unlock(&objects_lock);
    api_list_records(resp, req, "objects", all, limit, list_match, object_view);
out:
    cJSON_Delete(all);
    free(dir);
}

/* ------------------------------------------------------------- routing */

static void route_one(struct engine *eng, const char *id, const char *op,
                      const struct http_request *req,
                      struct http_response *resp)
{
    int is_get = strcmp(req->method, "GET") == 0;
    cJSON *rec = NULL;

    if (!id_valid(id)) {
        not_found(resp, id);
        return;
    }
    if (op == NULL && is_get) {
        char *dir = store_dir(eng->state_dir, "objects");

        rec = load(dir, id);
        free(dir);
        if (rec == NULL)
            not_found(resp, id);
        else
            reply_object(eng, req, rec, resp);
        cJSON_Delete(rec);
    } else if (op != NULL && strcmp(op, "complete") == 0 && !is_get) {
        handle_complete(eng, req, id, resp);
    } else if (op != NULL && strcmp(op, "delete") == 0 && !is_get) {
        handle_delete(eng, id, resp);
    } else if (op != NULL && strcmp(op, "download") == 0 && is_get) {
        handle_download_url(eng, id, req, resp);
    } else {
        api_unimplemented(req, resp);
    }
}

void objects_route(struct engine *eng, char **seg, size_t n,
                   const struct http_request *req, struct http_response *resp)
{
    int is_get = strcmp(req->method, "GET") == 0;
    cJSON *body = NULL;

    /* The signed URLs: the signature was checked with the request head
     * (objects_signed_request); a keyed client must use them too. */
    if (n == 4 &&
        (strcmp(seg[3], "upload") == 0 || strcmp(seg[3], "content") == 0)) {
        if (!objects_signed_request(eng, req))
            http_response_error(resp, 403,
                                "this URL needs a valid, unexpired signature: "
                                "use the upload_url "
                                "or download_url the object's API gave");
        else if (seg[3][0] == 'u')
            handle_upload(eng, seg[2], req, resp);
        else
            handle_content(eng, seg[2], resp);
        return;
    }
    if (n == 2 && is_get) {
        handle_list(eng, req, 0, resp);
    } else if (n == 3 && is_get && strcmp(seg[2], "list_public") == 0) {
        handle_list(eng, req, 1, resp);
    } else if (n == 2) {
        if (api_parse_body(req, resp, &body) != 0)
            return;
        handle_create(eng, req, body, resp);
        cJSON_Delete(body);
    } else if (n == 3 || n == 4) {
        route_one(eng, seg[2], n == 4 ? seg[3] : NULL, req, resp);
    } else {
        api_unimplemented(req, resp);
    }
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
    if (!id_valid(id)) {
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
