/*
 * revision.c - the 2026-07-28 wire beside the session-based revisions:
 * per-request _meta, header checks and the result fields it adds.
 */
#define _GNU_SOURCE
#include "revision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "log.h"

const char *const rev_supported[] = {
    MCP_REV_STATELESS,
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
};
const size_t rev_n_supported = sizeof(rev_supported) / sizeof(*rev_supported);

bool rev_is_stateless(const char *version)
{
    return version != NULL && strcmp(version, MCP_REV_STATELESS) == 0;
}

static const cJSON *meta_of(const cJSON *params)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");

    return cJSON_IsObject(meta) ? meta : NULL;
}

const char *rev_meta_version(const cJSON *params)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(meta_of(params), REV_META_VERSION);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool has_object(const cJSON *caps, const char *name)
{
    return cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, name));
}

static cJSON *unsupported_data(const char *requested)
{
    cJSON *data = cJSON_CreateObject();
    cJSON *list = cJSON_AddArrayToObject(data, "supported");
    size_t i;

    for (i = 0; i < rev_n_supported; i++)
        cJSON_AddItemToArray(list, cJSON_CreateString(rev_supported[i]));
    cJSON_AddStringToObject(data, "requested", requested);
    return data;
}

int rev_meta_check(const cJSON *params, struct rev_meta *out, char *err,
                   size_t errlen, cJSON **data)
{
    const cJSON *meta = meta_of(params);
    const cJSON *caps = NULL;
    const cJSON *level = NULL;
    const char *version = rev_meta_version(params);

    *data = NULL;
    memset(out, 0, sizeof(*out));
    out->log_level = RLMCP_LOG_EMERGENCY + 1;
    if (meta == NULL) {
        snprintf(err, errlen,
                 "params._meta is required in %s: send {\"%s\": \"%s\", "
                 "\"%s\": {...}} with every request",
                 MCP_REV_STATELESS, REV_META_VERSION, MCP_REV_STATELESS,
                 REV_META_CAPS);
        return JSONRPC_INVALID_PARAMS;
    }
    if (version == NULL) {
        snprintf(err, errlen,
                 "params._meta[\"%s\"] is required and must be a string "
                 "such as \"%s\"",
                 REV_META_VERSION, MCP_REV_STATELESS);
        return JSONRPC_INVALID_PARAMS;
    }
    caps = cJSON_GetObjectItemCaseSensitive(meta, REV_META_CAPS);
    if (!cJSON_IsObject(caps)) {
        snprintf(err, errlen,
                 "params._meta[\"%s\"] is required and must be an object "
                 "(use {} when the client offers none)",
                 REV_META_CAPS);
        return JSONRPC_INVALID_PARAMS;
    }
    level = cJSON_GetObjectItemCaseSensitive(meta, REV_META_LOG_LEVEL);
    if (level != NULL) {
        int v =
            cJSON_IsString(level) ? log_level_parse(level->valuestring) : -1;
        if (v < 0) {
            snprintf(err, errlen,
                     "params._meta[\"%s\"] must be one of debug, info, "
                     "notice, warning, error, critical, alert, emergency",
                     REV_META_LOG_LEVEL);
            return JSONRPC_INVALID_PARAMS;
        }
        out->log_level = v;
    }
    if (!rev_is_stateless(version)) {
        snprintf(err, errlen,
                 "unsupported protocol version '%.40s' in params._meta; "
                 "this server speaks %s per request, or 2025-11-25, "
                 "2025-06-18 and 2025-03-26 after initialize",
                 version, MCP_REV_STATELESS);
        *data = unsupported_data(version);
        return MCP_UNSUPPORTED_VERSION;
    }
    out->cap_sampling = has_object(caps, "sampling");
    out->cap_elicitation = has_object(caps, "elicitation");
    out->cap_roots = has_object(caps, "roots");
    out->cap_tasks =
        has_object(cJSON_GetObjectItemCaseSensitive(caps, "extensions"),
                   "io.modelcontextprotocol/tasks");
    return 0;
}

/* The body field Mcp-Name mirrors, or NULL for methods without one. */
static const char *name_field(const char *method)
{
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        return "name";
    if (strcmp(method, "resources/read") == 0)
        return "uri";
    /* SEP-2663 routing headers; tasks/result and tasks/list are gone in
     * this revision and answer -32601 whatever the headers say. */
    if (strcmp(method, "tasks/get") == 0 ||
        strcmp(method, "tasks/update") == 0 ||
        strcmp(method, "tasks/cancel") == 0)
        return "taskId";
    return NULL;
}

/* A header value equals v once optional whitespace is cut (RFC 9110 5.5). */
static bool hdr_equal(const char *h, const char *v)
{
    size_t n = 0;

    if (h == NULL || v == NULL)
        return false;
    while (*h == ' ' || *h == '\t')
        h++;
    n = strlen(h);
    while (n > 0 && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    return n == strlen(v) && memcmp(h, v, n) == 0;
}

int rev_header_check(const char *method, const cJSON *params,
                     const char *h_version, const char *h_method,
                     const char *h_name, char *err, size_t errlen)
{
    const char *version = rev_meta_version(params);
    const char *field = name_field(method);
    const cJSON *name = NULL;

    if (!hdr_equal(h_version, version)) {
        snprintf(err, errlen,
                 "the MCP-Protocol-Version header (%.40s) must equal "
                 "params._meta[\"%s\"] (%.40s)",
                 h_version != NULL ? h_version : "missing", REV_META_VERSION,
                 version != NULL ? version : "missing");
        return MCP_HEADER_MISMATCH;
    }
    if (!hdr_equal(h_method, method)) {
        snprintf(err, errlen,
                 "the Mcp-Method header (%.64s) must equal the body's "
                 "method (%.64s)",
                 h_method != NULL ? h_method : "missing", method);
        return MCP_HEADER_MISMATCH;
    }
    if (field == NULL)
        return 0;
    name = cJSON_GetObjectItemCaseSensitive(params, field);
    if (!cJSON_IsString(name))
        return 0; /* the dispatcher reports the missing field */
    if (!hdr_equal(h_name, name->valuestring)) {
        snprintf(err, errlen,
                 "the Mcp-Name header (%.128s) must equal params.%s "
                 "(%.128s)",
                 h_name != NULL ? h_name : "missing", field, name->valuestring);
        return MCP_HEADER_MISMATCH;
    }
    return 0;
}

static bool cacheable(const char *method)
{
    return strcmp(method, "tools/list") == 0 ||
           strcmp(method, "prompts/list") == 0 ||
           strcmp(method, "resources/list") == 0 ||
           strcmp(method, "resources/templates/list") == 0 ||
           strcmp(method, "resources/read") == 0 ||
           strcmp(method, "server/discover") == 0;
}

static void add_result_fields(cJSON *result, const char *method)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(result, "resultType");

    if (type == NULL)
        cJSON_AddStringToObject(result, "resultType", "complete");
    else if (!cJSON_IsString(type) ||
             strcmp(type->valuestring, "complete") != 0)
        return; /* input_required: not a cacheable answer */
    if (method == NULL || !cacheable(method))
        return;
    if (cJSON_GetObjectItemCaseSensitive(result, "ttlMs") == NULL)
        cJSON_AddNumberToObject(result, "ttlMs",
                                strcmp(method, "resources/read") == 0
                                    ? REV_READ_TTL_MS
                                    : REV_LIST_TTL_MS);
    if (cJSON_GetObjectItemCaseSensitive(result, "cacheScope") == NULL)
        cJSON_AddStringToObject(result, "cacheScope", "private");
}

char *rev_adapt_final(const char *json, size_t len, const char *method)
{
    static const char done[] = ",\"resultType\":\"complete\"}}";
    cJSON *msg = NULL;
    cJSON *result = NULL;
    cJSON *error = NULL;
    cJSON *code = NULL;
    char *out = NULL;

    /* Compact JSON ending so has resultType last in its top-level result
     * (a nested object would end in a third brace): already adapted. */
    if (len >= sizeof(done) - 1 &&
        memcmp(json + len - (sizeof(done) - 1), done, sizeof(done) - 1) == 0)
        return NULL;
    msg = cJSON_ParseWithLength(json, len);
    if (msg == NULL)
        goto out;
    result = cJSON_GetObjectItemCaseSensitive(msg, "result");
    error = cJSON_GetObjectItemCaseSensitive(msg, "error");
    if (cJSON_IsObject(result)) {
        add_result_fields(result, method);
    } else if (cJSON_IsObject(error)) {
        code = cJSON_GetObjectItemCaseSensitive(error, "code");
        /* SEP-2164: an unknown resource is an invalid parameter. */
        if (cJSON_IsNumber(code) && code->valueint == MCP_RESOURCE_NOT_FOUND)
            cJSON_SetNumberValue(code, JSONRPC_INVALID_PARAMS);
    } else {
        goto out;
    }
    out = cJSON_PrintUnformatted(msg);
out:
    cJSON_Delete(msg);
    return out;
}

int rev_error_code(const char *json, size_t len)
{
    cJSON *msg = NULL;
    const cJSON *code = NULL;
    int v = 0;

    /* Results are the common case: skip the parse when no error is in. */
    if (memmem(json, len, "\"error\"", 7) == NULL)
        return 0;
    msg = cJSON_ParseWithLength(json, len);
    code = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(msg, "error"), "code");
    if (cJSON_IsNumber(code))
        v = code->valueint;
    cJSON_Delete(msg);
    return v;
}
