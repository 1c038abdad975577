/* The storage object routes: /v1/objects[/...], their signed upload and
 * download URLs and the download that streams an object's bytes (the
 * engine side is engine/objects.c). The URLs carry an expiry and an HMAC
 * of the engine's API key instead of the key, as presigned URLs do, so
 * clients send them without credentials. */
#define _GNU_SOURCE
#include "api.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "store.h"
#include "util.h"

#define OBJECT_ID_MAX STORE_ID_MAX
/* One object's bytes: one upload request body. */
#define OBJECT_MAX_BYTES HTTP_MAX_UPLOAD_BODY
#define DOWNLOAD_DEFAULT_S 3600
#define DOWNLOAD_MAX_S (7 * 24 * 3600)
#define UPLOAD_URL_S (24 * 3600)
#define ERRLEN 640

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
    return objects_id_valid(id);
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

/* ------------------------------------------------------------ answers */

/* ObjectView of one object: an UPLOADING one carries its upload_url. */
static void reply_object(struct engine *eng, const struct http_request *req,
                         const cJSON *rec, struct http_response *resp)
{
    cJSON *v = objects_view(rec);
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

/* Answers an engine call's failure (status): -1 is a state-disk write
 * error (saved: its errno). */
static void reply_error(struct http_response *resp, int status, int saved,
                        const char *err)
{
    if (status < 0)
        api_storage_error(resp, saved);
    else
        http_response_error(resp, status, "%s", err);
}

/* A path's {id} that is no object id: 404, as for an unknown object. */
static int check_id(const struct api_call *call)
{
    if (objects_id_valid(call->id))
        return 0;
    http_response_error(
        call->resp, 404,
        "object %s not found; list the objects to see which exist", call->id);
    return -1;
}

/* ------------------------------------------------------------- routes */

void api_objects_create(struct engine *eng, const struct api_call *call)
{
    cJSON *body = NULL;
    cJSON *rec = NULL;
    char err[ERRLEN] = "";
    int status;

    if (api_parse_body(call->req, call->resp, &body) != 0)
        return;
    status = objects_create(eng, body, &rec, err, sizeof(err));
    if (status != 0)
        reply_error(call->resp, status, errno, err);
    else
        reply_object(eng, call->req, rec, call->resp);
    cJSON_Delete(rec);
    cJSON_Delete(body);
}

void api_objects_get(struct engine *eng, const struct api_call *call)
{
    cJSON *rec = NULL;
    char err[ERRLEN] = "";

    if (objects_get(eng, call->id, &rec, err, sizeof(err)) != 0)
        http_response_error(call->resp, 404, "%s", err);
    else
        reply_object(eng, call->req, rec, call->resp);
    cJSON_Delete(rec);
}

void api_objects_complete(struct engine *eng, const struct api_call *call)
{
    cJSON *rec = NULL;
    char err[ERRLEN] = "";
    int status;

    if (check_id(call) != 0)
        return;
    status = objects_complete(eng, call->id, &rec, err, sizeof(err));
    if (status != 0)
        reply_error(call->resp, status, errno, err);
    else
        reply_object(eng, call->req, rec, call->resp);
    cJSON_Delete(rec);
}

void api_objects_delete(struct engine *eng, const struct api_call *call)
{
    cJSON *rec = NULL;
    char err[ERRLEN] = "";
    int status;

    if (check_id(call) != 0)
        return;
    status = objects_delete(eng, call->id, &rec, err, sizeof(err));
    if (status != 0)
        http_response_error(call->resp, status, "%s", err);
    else
        http_response_json(call->resp, 200, objects_view(rec));
    cJSON_Delete(rec);
}

void api_objects_download(struct engine *eng, const struct api_call *call)
{
    cJSON *rec = NULL;
    cJSON *v = NULL;
    char *url = NULL;
    char err[ERRLEN] = "";
    int64_t seconds;

    if (check_id(call) != 0 ||
        api_query_int(call->req, call->resp, "duration_seconds", 1,
                      DOWNLOAD_MAX_S, DOWNLOAD_DEFAULT_S, &seconds) != 0)
        goto out;
    if (objects_get(eng, call->id, &rec, err, sizeof(err)) != 0) {
        http_response_error(call->resp, 404, "%s", err);
        goto out;
    }
    if (strcmp(util_json_str(rec, "state"), "READ_ONLY") != 0) {
        http_response_error(call->resp, 400,
                            "object %s is %s: complete its upload before "
                            "downloading it",
                            call->id, util_json_str(rec, "state"));
        goto out;
    }
    url = signed_url(eng, call->req, "GET", call->id, "content", seconds);
    if (url == NULL) {
        http_response_error(call->resp, 500, "out of memory");
        goto out;
    }
    v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "download_url", url);
    http_response_json(call->resp, 200, v);
out:
    free(url);
    cJSON_Delete(rec);
}

/* The signed URLs: the signature was checked with the request head
 * (api_authorized); a keyed client must use them too. */
static int check_signed(struct engine *eng, const struct api_call *call)
{
    if (objects_signed_request(eng, call->req))
        return 0;
    http_response_error(call->resp, 403,
                        "this URL needs a valid, unexpired signature: use the "
                        "upload_url or download_url the object's API gave");
    return -1;
}

void api_objects_upload(struct engine *eng, const struct api_call *call)
{
    const struct http_request *req = call->req;
    cJSON *rec = NULL;
    char err[ERRLEN] = "";
    int status;

    if (check_signed(eng, call) != 0)
        return;
    if (req->body_too_large) {
        http_response_error(
            call->resp, 413,
            "an object holds at most %u bytes; split larger data",
            OBJECT_MAX_BYTES);
        return;
    }
    status = objects_upload(eng, call->id, req->body, req->body_len, &rec, err,
                            sizeof(err));
    if (status != 0)
        reply_error(call->resp, status, errno, err);
    else
        http_response_json(call->resp, 200, objects_view(rec));
    cJSON_Delete(rec);
}

void api_objects_content(struct engine *eng, const struct api_call *call)
{
    char err[256];
    int fd;

    if (check_signed(eng, call) != 0)
        return;
    fd = objects_open(eng, call->id, err, sizeof(err));
    if (fd < 0) {
        http_response_error(call->resp, 404, "%s", err);
        return;
    }
    files_stream_fd(call->resp, fd);
}

/* -------------------------------------------------------------- lists */

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
        objects_check_content_type(ct, "content_type", err, sizeof(err)) != 0) {
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

static cJSON *view_item(const void *rec)
{
    return objects_view(rec);
}

static void list(struct engine *eng, const struct api_call *call,
                 int public_only)
{
    cJSON *all = NULL;
    int64_t limit;

    if (api_query_int(call->req, call->resp, "limit", 1, 5000, 20, &limit) !=
            0 ||
        check_list_query(call->req, call->resp) != 0)
        return;
    /* The local engine has no public objects. */
    all = public_only ? cJSON_CreateArray() : objects_list(eng);
    api_list_records(call->resp, call->req, "objects", all, limit, list_match,
                     view_item);
    cJSON_Delete(all);
}

void api_objects_list(struct engine *eng, const struct api_call *call)
{
    list(eng, call, 0);
}

void api_objects_list_public(struct engine *eng, const struct api_call *call)
{
    list(eng, call, 1);
}

/* Any other path under /v1/objects: an id that is none is a 404, as for
 * an unknown object; the rest this engine does not serve. */
void api_objects_other(struct engine *eng, const struct api_call *call)
{
    (void)eng;
    if (call->n == 3 || call->n == 4) {
        struct api_call c = *call;

        c.id = call->seg[2];
        if (check_id(&c) != 0)
            return;
    }
    api_unimplemented(call->req, call->resp);
}
