/*
 * mrtr.c - InputRequiredResult rounds for stateless calls (see mrtr.h).
 */
#define _GNU_SOURCE
#include "mrtr.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base64.h"
#include "digest.h"
#include "jsonrpc.h"
#include "log.h"
#include "revision.h"

#define STATE_PREFIX "v1."

struct mrtr {
    pthread_mutex_t lock;
    char *target;
    char caller[65]; /* digest_caller of the credential: in the MAC */
    cJSON *known;    /* key -> the client's result (state + inputResponses) */
    cJSON *used;     /* key -> result: what this round consumed */
    cJSON *pending;  /* key -> {method, params} */
    cJSON *missing;  /* capability -> {} */
    unsigned n_auto; /* "input-N" keys handed out this round */
};

static struct digest_key secret = DIGEST_KEY_INIT;

int mrtr_set_secret(const unsigned char *key, size_t len)
{
    return digest_key_set(&secret, key, len);
}

/*
 * hex(HMAC-SHA256(secret, caller "\n" text)) into out (65 bytes). The
 * caller is signed, not carried: a state holds the user's answers, and
 * another credential must not replay them into its own call.
 */
static int sign(const char *caller, const char *text, size_t len, char out[65])
{
    unsigned char md[DIGEST_BYTES];
    char *buf = NULL;
    size_t clen = strlen(caller);
    int rc = -1;

    buf = malloc(clen + 1 + len);
    if (buf == NULL)
        goto out;
    memcpy(buf, caller, clen);
    buf[clen] = '\n';
    memcpy(buf + clen + 1, text, len);
    if (digest_hmac(&secret, buf, clen + 1 + len, md) != 0)
        goto out;
    digest_hex(md, sizeof(md), out);
    rc = 0;
out:
    free(buf);
    return rc;
}

/* "v1.<base64 payload>.<hmac>" over {"t": target, "r": responses}. */
static char *state_encode(const char *target, const char *caller,
                          const cJSON *responses)
{
    cJSON *payload = cJSON_CreateObject();
    char *json = NULL;
    char *body = NULL;
    char *b64 = NULL;
    char *out = NULL;
    char mac[65];

    cJSON_AddStringToObject(payload, "t", target);
    cJSON_AddItemToObject(payload, "r", cJSON_Duplicate(responses, true));
    json = cJSON_PrintUnformatted(payload);
    if (json == NULL)
        goto out;
    body = base64_encode(json, strlen(json), false);
    if (body == NULL || asprintf(&b64, "%s%s", STATE_PREFIX, body) < 0) {
        b64 = NULL;
        goto out;
    }
    if (sign(caller, b64, strlen(b64), mac) != 0 ||
        asprintf(&out, "%s.%s", b64, mac) < 0)
        out = NULL;
out:
    cJSON_Delete(payload);
    free(json);
    free(body);
    free(b64);
    return out;
}

/* The responses a valid state carries, or NULL (err filled). */
static cJSON *state_decode(const char *state, const char *target,
                           const char *caller, char *err, size_t errlen)
{
    const char *dot = strrchr(state, '.');
    const char *b64 = state + strlen(STATE_PREFIX);
    char mac[65];
    unsigned char *raw = NULL;
    cJSON *payload = NULL;
    cJSON *t = NULL;
    cJSON *r = NULL;
    size_t blen = 0;

    if (strncmp(state, STATE_PREFIX, strlen(STATE_PREFIX)) != 0 ||
        dot == NULL || dot < b64 || strlen(dot + 1) != 64 ||
        sign(caller, state, (size_t)(dot - state), mac) != 0 ||
        CRYPTO_memcmp(mac, dot + 1, 64) != 0) {
        snprintf(err, errlen,
                 "params.requestState failed its integrity check: send the "
                 "requestState of the previous InputRequiredResult "
                 "unchanged and with the same credential, or none to start "
                 "over");
        return NULL;
    }
    /* Signed by us, so it decodes unless memory ran out. */
    raw = base64_decode(b64, (size_t)(dot - b64), false, &blen);
    if (raw == NULL)
        goto nomem;
    if (blen > 0)
        payload = cJSON_ParseWithLength((const char *)raw, blen);
    free(raw);
    t = cJSON_GetObjectItemCaseSensitive(payload, "t");
    r = cJSON_DetachItemFromObjectCaseSensitive(payload, "r");
    if (!cJSON_IsString(t) || strcmp(t->valuestring, target) != 0 ||
        !cJSON_IsObject(r)) {
        snprintf(err, errlen,
                 "params.requestState belongs to another request; send the "
                 "requestState that came with this tool's, prompt's or "
                 "resource's InputRequiredResult");
        cJSON_Delete(r);
        r = NULL;
    }
    cJSON_Delete(payload);
    return r;
nomem:
    err[0] = '\0';
    return NULL;
}

struct mrtr *mrtr_new(const cJSON *params, const char *target,
                      const char *api_key, char *err, size_t errlen)
{
    const cJSON *responses =
        cJSON_GetObjectItemCaseSensitive(params, "inputResponses");
    const cJSON *state =
        cJSON_GetObjectItemCaseSensitive(params, "requestState");
    const cJSON *e = NULL;
    struct mrtr *m = NULL;

    err[0] = '\0';
    if (responses != NULL && !cJSON_IsNull(responses) &&
        !cJSON_IsObject(responses)) {
        snprintf(err, errlen,
                 "params.inputResponses must be an object mapping each "
                 "inputRequests key to the client's result");
        return NULL;
    }
    cJSON_ArrayForEach(e, responses)
    {
        if (!cJSON_IsObject(e)) {
            snprintf(err, errlen,
                     "params.inputResponses[\"%.64s\"] must be an object: "
                     "the result of the request with that key (e.g. "
                     "{\"action\":\"accept\",\"content\":{...}} for "
                     "elicitation/create)",
                     e->string);
            return NULL;
        }
    }
    if (state != NULL && !cJSON_IsNull(state) && !cJSON_IsString(state)) {
        snprintf(err, errlen,
                 "params.requestState must be the string the previous "
                 "InputRequiredResult carried");
        return NULL;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return NULL;
    pthread_mutex_init(&m->lock, NULL);
    m->target = strdup(target);
    digest_caller(api_key, m->caller);
    m->used = cJSON_CreateObject();
    m->pending = cJSON_CreateObject();
    m->missing = cJSON_CreateObject();
    if (cJSON_IsString(state)) {
        m->known =
            state_decode(state->valuestring, target, m->caller, err, errlen);
        if (m->known == NULL)
            goto fail;
    } else {
        m->known = cJSON_CreateObject();
    }
    if (m->target == NULL || m->known == NULL || m->used == NULL ||
        m->pending == NULL || m->missing == NULL)
        goto fail;
    /* This round's answers override what the state carried. */
    cJSON_ArrayForEach(e, responses)
    {
        cJSON_DeleteItemFromObjectCaseSensitive(m->known, e->string);
        cJSON_AddItemToObject(m->known, e->string, cJSON_Duplicate(e, true));
    }
    return m;
fail:
    mrtr_free(m);
    return NULL;
}

void mrtr_free(struct mrtr *m)
{
    if (m == NULL)
        return;
    free(m->target);
    cJSON_Delete(m->known);
    cJSON_Delete(m->used);
    cJSON_Delete(m->pending);
    cJSON_Delete(m->missing);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* The plugin's key, removed from params; else a fresh "input-N". */
static char *take_key(struct mrtr *m, cJSON *params)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
    cJSON *k = cJSON_GetObjectItemCaseSensitive(meta, MRTR_KEY_META);
    char *key = NULL;

    if (cJSON_IsString(k) && k->valuestring[0] != '\0')
        key = strdup(k->valuestring);
    else if (asprintf(&key, "input-%u", ++m->n_auto) < 0)
        key = NULL;
    mrtr_strip_key(params);
    return key;
}

void mrtr_strip_key(cJSON *params)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");

    if (!cJSON_IsObject(meta))
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(meta, MRTR_KEY_META);
    if (cJSON_GetArraySize(meta) == 0)
        cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");
}

int mrtr_request(struct mrtr *m, const char *method, cJSON *params,
                 char **result)
{
    const cJSON *answer = NULL;
    cJSON *entry = NULL;
    char *key = NULL;
    int rc = 1;

    *result = NULL;
    pthread_mutex_lock(&m->lock);
    key = take_key(m, params);
    if (key == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    answer = cJSON_GetObjectItemCaseSensitive(m->known, key);
    if (answer != NULL) {
        *result = cJSON_PrintUnformatted(answer);
        rc = *result != NULL ? 0 : RLMCP_ENOMEM;
        if (rc == 0 && cJSON_GetObjectItemCaseSensitive(m->used, key) == NULL)
            cJSON_AddItemToObject(m->used, key, cJSON_Duplicate(answer, true));
        goto out;
    }
    entry = cJSON_CreateObject();
    cJSON_AddStringToObject(entry, "method", method);
    cJSON_AddItemToObject(entry, "params",
                          params != NULL ? params : cJSON_CreateObject());
    params = NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(m->pending, key);
    cJSON_AddItemToObject(m->pending, key, entry);
out:
    pthread_mutex_unlock(&m->lock);
    cJSON_Delete(params);
    free(key);
    return rc;
}

void mrtr_missing_capability(struct mrtr *m, const char *capability)
{
    pthread_mutex_lock(&m->lock);
    if (cJSON_GetObjectItemCaseSensitive(m->missing, capability) == NULL)
        cJSON_AddObjectToObject(m->missing, capability);
    pthread_mutex_unlock(&m->lock);
}

char *mrtr_final(struct mrtr *m, const cJSON *id, int rc)
{
    cJSON *res = NULL;
    cJSON *data = NULL;
    char *state = NULL;
    char *json = NULL;

    pthread_mutex_lock(&m->lock);
    if (cJSON_GetArraySize(m->pending) > 0) {
        state = state_encode(m->target, m->caller, m->used);
        res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "resultType", "input_required");
        cJSON_AddItemToObject(res, "inputRequests",
                              cJSON_Duplicate(m->pending, true));
        if (state != NULL)
            cJSON_AddStringToObject(res, "requestState", state);
        json = state != NULL ? jsonrpc_result(id, res) : NULL;
        if (state == NULL)
            cJSON_Delete(res);
    } else if (rc < 0 && cJSON_GetArraySize(m->missing) > 0) {
        data = cJSON_CreateObject();
        cJSON_AddItemToObject(data, "requiredCapabilities",
                              cJSON_Duplicate(m->missing, true));
        json = jsonrpc_error(id, MCP_MISSING_CLIENT_CAPABILITY,
                             "this request needs a client capability the "
                             "request did not declare; add it to "
                             "params._meta[\"io.modelcontextprotocol/"
                             "clientCapabilities\"] (see "
                             "error.data.requiredCapabilities)",
                             data);
        cJSON_Delete(data);
    }
    pthread_mutex_unlock(&m->lock);
    free(state);
    return json;
}
