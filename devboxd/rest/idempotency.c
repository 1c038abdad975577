/* Request idempotency by x-request-id; see idempotency.h. */
#define _GNU_SOURCE
#include "idempotency.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* One x-request-id: running (done == 0) or its kept answer. */
struct idempotency_claim {
    char *id;
    uint64_t id_hash;  /* names its file */
    uint64_t req_hash; /* method, path, query and body */
    int64_t time_ms;
    int done;
    int persisted;
    int status;
    char *ctype;
    char *body;
    size_t body_len;
    struct idempotency_claim *prev, *next; /* oldest first */
};

struct idempotency_store {
    pthread_mutex_t lock;
    char *dir;
    struct idempotency_claim *head, *tail;
    size_t n;
    size_t bytes;
};

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#define FNV_OFFSET 0xcbf29ce484222325ULL

static uint64_t hash_str(uint64_t h, const char *s)
{
    return fnv1a(h, s, strlen(s) + 1); /* with the NUL: fields stay apart */
}

static uint64_t request_hash(const struct http_request *req)
{
    uint64_t h = FNV_OFFSET;
    size_t i;

    h = hash_str(h, req->method);
    h = hash_str(h, req->path);
    for (i = 0; i < req->n_query; i++) {
        h = hash_str(h, req->query[i].name);
        h = hash_str(h, req->query[i].value);
    }
    return fnv1a(h, req->body != NULL ? req->body : "", req->body_len);
}

static void claim_free(struct idempotency_claim *c)
{
    if (c == NULL)
        return;
    free(c->id);
    free(c->ctype);
    free(c->body);
    free(c);
}

static void file_path(const struct idempotency_store *st, uint64_t id_hash,
                      char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/%016" PRIx64 ".json", st->dir, id_hash);
}

/* Lock held. */
static void list_append(struct idempotency_store *st,
                        struct idempotency_claim *c)
{
    c->prev = st->tail;
    c->next = NULL;
    if (st->tail != NULL)
        st->tail->next = c;
    else
        st->head = c;
    st->tail = c;
    st->n++;
    st->bytes += c->body_len;
}

/* Lock held. */
static void list_remove(struct idempotency_store *st,
                        struct idempotency_claim *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        st->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    else
        st->tail = c->prev;
    st->n--;
    st->bytes -= c->body_len;
}

/* Lock held. Drops a kept answer, its file too. */
static void drop_locked(struct idempotency_store *st,
                        struct idempotency_claim *c)
{
    char path[4200];

    list_remove(st, c);
    if (c->persisted) {
        file_path(st, c->id_hash, path, sizeof(path));
        unlink(path);
    }
    claim_free(c);
}

/* Lock held. Forgets answers past the window and the oldest ones beyond
 * the count and size bounds (running requests are never dropped). */
static void prune_locked(struct idempotency_store *st, int64_t now)
{
    struct idempotency_claim *c = st->head;

    while (c != NULL) {
        struct idempotency_claim *next = c->next;
        int over = st->n > IDEM_MAX_ENTRIES || st->bytes > IDEM_MAX_BYTES;

        if (c->done && (over || c->time_ms < now - IDEM_WINDOW_MS))
            drop_locked(st, c);
        else if (!over)
            break; /* oldest first: the rest is younger */
        c = next;
    }
}

static struct idempotency_claim *find_locked(struct idempotency_store *st,
                                             const char *id)
{
    struct idempotency_claim *c;

    for (c = st->tail; c != NULL; c = c->prev) {
        if (strcmp(c->id, id) == 0)
            return c;
    }
    return NULL;
}

/* ------------------------------------------------------------ on disk */

static cJSON *claim_json(const struct idempotency_claim *c)
{
    cJSON *o = cJSON_CreateObject();
    char hex[24];

    snprintf(hex, sizeof(hex), "%016" PRIx64, c->req_hash);
    cJSON_AddStringToObject(o, "id", c->id);
    cJSON_AddStringToObject(o, "request_hash", hex);
    cJSON_AddNumberToObject(o, "time_ms", (double)c->time_ms);
    cJSON_AddNumberToObject(o, "status", c->status);
    cJSON_AddStringToObject(o, "content_type",
                            c->ctype != NULL ? c->ctype : "");
    cJSON_AddStringToObject(o, "body", c->body != NULL ? c->body : "");
    return o;
}

static struct idempotency_claim *claim_from_json(const cJSON *o)
{
    struct idempotency_claim *c = NULL;
    const char *id = util_json_str(o, "id");
    const char *rh = util_json_str(o, "request_hash");
    const char *ct = util_json_str(o, "content_type");
    const char *body = util_json_str(o, "body");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "time_ms");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "status");

    if (id == NULL || rh == NULL || ct == NULL || body == NULL ||
        !cJSON_IsNumber(t) || !cJSON_IsNumber(s))
        return NULL;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->id = strdup(id);
    c->ctype = strdup(ct);
    c->body = strdup(body);
    if (c->id == NULL || c->ctype == NULL || c->body == NULL) {
        claim_free(c);
        return NULL;
    }
    c->body_len = strlen(body);
    c->req_hash = strtoull(rh, NULL, 16);
    c->id_hash = hash_str(FNV_OFFSET, id);
    c->time_ms = (int64_t)t->valuedouble;
    c->status = s->valueint;
    c->done = 1;
    c->persisted = 1;
    return c;
}

/* Lock held. Inserts a loaded answer in time order. */
static void insert_sorted_locked(struct idempotency_store *st,
                                 struct idempotency_claim *c)
{
    struct idempotency_claim *after = st->tail;

    while (after != NULL && after->time_ms > c->time_ms)
        after = after->prev;
    if (after == st->tail) {
        list_append(st, c);
        return;
    }
    c->prev = after;
    c->next = after != NULL ? after->next : st->head;
    c->next->prev = c;
    if (after != NULL)
        after->next = c;
    else
        st->head = c;
    st->n++;
    st->bytes += c->body_len;
}

static void load_one(struct idempotency_store *st, const char *name,
                     int64_t now)
{
    char path[4200];
    cJSON *o = NULL;
    struct idempotency_claim *c = NULL;

    snprintf(path, sizeof(path), "%s/%s", st->dir, name);
    o = util_read_json(path, IDEM_MAX_BYTES + 65536);
    c = o != NULL ? claim_from_json(o) : NULL;
    if (c == NULL || c->time_ms < now - IDEM_WINDOW_MS) {
        unlink(path); /* expired, or a torn leftover */
        claim_free(c);
    } else {
        insert_sorted_locked(st, c);
    }
    cJSON_Delete(o);
}

static void load_all(struct idempotency_store *st)
{
    DIR *d = NULL;
    struct dirent *de = NULL;
    int64_t now = util_now_ms();

    d = opendir(st->dir);
    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);

        if (de->d_name[0] == '.')
            continue;
        if (len > 4 && strcmp(de->d_name + len - 4, ".tmp") == 0) {
            char path[4200];

            snprintf(path, sizeof(path), "%s/%s", st->dir, de->d_name);
            unlink(path);
            continue;
        }
        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0)
            load_one(st, de->d_name, now);
    }
    closedir(d);
    prune_locked(st, now);
}

struct idempotency_store *idempotency_open(const char *state_dir, char *err,
                                           size_t errlen)
{
    struct idempotency_store *st = NULL;

    st = calloc(1, sizeof(*st));
    if (st == NULL || asprintf(&st->dir, "%s/requests", state_dir) < 0) {
        free(st);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (util_mkdirs(st->dir) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", st->dir, strerror(errno));
        free(st->dir);
        free(st);
        return NULL;
    }
    pthread_mutex_init(&st->lock, NULL);
    load_all(st);
    return st;
}

void idempotency_close(struct idempotency_store *st)
{
    if (st == NULL)
        return;
    while (st->head != NULL) {
        struct idempotency_claim *c = st->head;

        list_remove(st, c);
        claim_free(c);
    }
    pthread_mutex_destroy(&st->lock);
    free(st->dir);
    free(st);
}

/* ------------------------------------------------------------- requests */

int idempotency_applies(const char *method, const char *path)
{
    static const char *const reads[] = {
        "/wait_for_status", "/read_file_contents", "/download_file", NULL};
    size_t plen = strlen(path);
    size_t i;

    if (strcmp(method, "POST") != 0)
        return 0;
    for (i = 0; reads[i] != NULL; i++) {
        size_t n = strlen(reads[i]);

        if (plen >= n && strcmp(path + plen - n, reads[i]) == 0)
            return 0;
    }
    return 1;
}

static int valid_id(const char *id)
{
    size_t i;

    for (i = 0; id[i] != '\0'; i++) {
        if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e)
            return 0;
    }
    return i >= 1 && i <= IDEM_MAX_ID_LEN;
}

static void replay(const struct idempotency_claim *c,
                   struct http_response *resp)
{
    char *body = NULL;

    body = malloc(c->body_len + 1);
    if (body == NULL) {
        http_response_error(resp, 500, "out of memory");
        return;
    }
    memcpy(body, c->body, c->body_len + 1);
    http_response_set_body(resp, c->status,
                           c->ctype[0] != '\0' ? c->ctype : NULL, body,
                           c->body_len);
    http_response_set_header(resp, "x-idempotent-replayed", "true");
}

int idempotency_begin(struct idempotency_store *st,
                      const struct http_request *req,
                      struct idempotency_claim **claim,
                      struct http_response *resp)
{
    const char *id = http_request_header(req, "x-request-id");
    struct idempotency_claim *c = NULL;
    uint64_t h;
    int rc = 1;

    *claim = NULL;
    if (st == NULL || id == NULL ||
        !idempotency_applies(req->method, req->path))
        return 0;
    if (!valid_id(id)) {
        http_response_error(
            resp, 400,
            "x-request-id must be 1 to %d printable ASCII characters "
            "without spaces",
            IDEM_MAX_ID_LEN);
        return 1;
    }
    h = request_hash(req);
    pthread_mutex_lock(&st->lock);
    prune_locked(st, util_now_ms());
    c = find_locked(st, id);
    if (c != NULL && c->req_hash != h) {
        http_response_error(
            resp, 409,
            "x-request-id '%s' was already used for another request; "
            "send a new x-request-id for a new request (the same id is "
            "only for "
            "retrying the same request)",
            id);
    } else if (c != NULL && !c->done) {
        http_response_error(
            resp, 409,
            "the request with x-request-id '%s' is still running; retry "
            "it shortly to get its answer",
            id);
        http_response_set_header(resp, "x-should-retry", "true");
    } else if (c != NULL) {
        replay(c, resp);
    } else {
        c = calloc(1, sizeof(*c));
        if (c == NULL || (c->id = strdup(id)) == NULL) {
            free(c);
            http_response_error(resp, 500, "out of memory");
            goto out;
        }
        c->id_hash = hash_str(FNV_OFFSET, id);
        c->req_hash = h;
        c->time_ms = util_now_ms();
        list_append(st, c);
        *claim = c;
        rc = 0;
    }
out:
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* Whether an answer is one the SDK retries: then the retry must run again. */
static int retryable(const struct http_response *resp)
{
    return resp->stream != NULL || resp->status >= 500 || resp->status == 408 ||
           resp->status == 409 || resp->status == 429;
}

static const char *resp_ctype(const struct http_response *resp)
{
    size_t i;

    for (i = 0; i < resp->n_headers; i++) {
        if (strcasecmp(resp->headers[i].name, "content-type") == 0)
            return resp->headers[i].value;
    }
    return "";
}

/* Lock held. Another kept id whose file name is the same (64-bit hash of
 * the id): then this answer stays in memory only. */
static int file_taken_locked(struct idempotency_store *st,
                             const struct idempotency_claim *c)
{
    struct idempotency_claim *o;

    for (o = st->head; o != NULL; o = o->next) {
        if (o != c && o->id_hash == c->id_hash && o->persisted)
            return 1;
    }
    return 0;
}

void idempotency_finish(struct idempotency_store *st,
                        struct idempotency_claim *claim,
                        const struct http_response *resp)
{
    char path[4200];
    char *text = NULL;
    int persist = 0;

    if (st == NULL || claim == NULL)
        return;
    pthread_mutex_lock(&st->lock);
    if (retryable(resp) || (claim->ctype = strdup(resp_ctype(resp))) == NULL ||
        (claim->body = malloc(resp->body_len + 1)) == NULL) {
        list_remove(st, claim);
        claim_free(claim);
        pthread_mutex_unlock(&st->lock);
        return;
    }
    if (resp->body_len > 0)
        memcpy(claim->body, resp->body, resp->body_len);
    claim->body[resp->body_len] = '\0';
    claim->body_len = resp->body_len;
    st->bytes += resp->body_len;
    claim->status = resp->status;
    claim->time_ms = util_now_ms();
    claim->done = 1;
    if (!file_taken_locked(st, claim)) {
        cJSON *o = claim_json(claim);

        text = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        claim->persisted = text != NULL;
        persist = text != NULL;
        file_path(st, claim->id_hash, path, sizeof(path));
    }
    prune_locked(st, claim->time_ms);
    pthread_mutex_unlock(&st->lock);
    /* Durable before the answer leaves: a retry after a restart finds it. */
    if (persist && util_write_atomic(path, text, strlen(text), 0600) != 0)
        fprintf(
            stderr,
            "devboxd: cannot keep the answer for an x-request-id in %s: %s\n",
            path, strerror(errno));
    free(text);
}
