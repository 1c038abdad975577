/*
 * jsonrpc.c - JSON-RPC 2.0 envelope checks and message building.
 */
#include "jsonrpc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t need = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    size_t i;

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
        cp = c & 0x1F;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        cp = c & 0x0F;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        cp = c & 0x07;
        min = 0x10000;
    } else {
        return 0;
    }
    if (avail < need)
        return 0;
    for (i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return need;
}

bool jsonrpc_utf8_valid(const char *buf, size_t len, size_t *bad_offset)
{
    const unsigned char *s = (const unsigned char *)buf;
    size_t i = 0;

    while (i < len) {
        size_t n;

        /* Fast path: ASCII runs dominate protocol traffic. */
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        n = utf8_seq_len(s + i, len - i);
        if (n == 0) {
            if (bad_offset != NULL)
                *bad_offset = i;
            return false;
        }
        i += n;
    }
    return true;
}

char *jsonrpc_utf8_sanitize(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    /* Worst case: every byte becomes the 3-byte U+FFFD. */
    char *out = NULL;
    size_t o = 0;
    size_t i = 0;

    if (len > (SIZE_MAX - 1) / 3)
        return NULL;
    out = malloc(len * 3 + 1);
    if (out == NULL)
        return NULL;
    while (i < len) {
        size_t n = utf8_seq_len(u + i, len - i);

        if (n == 0 || (n == 1 && u[i] == 0)) {
            /* Invalid byte (or an embedded NUL, which would cut text). */
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
            continue;
        }
        memcpy(out + o, s + i, n);
        o += n;
        i += n;
    }
    out[o] = '\0';
    return out;
}

size_t jsonrpc_depth(const char *buf, size_t len, size_t limit)
{
    size_t depth = 0;
    size_t max = 0;
    bool in_string = false;
    bool escape = false;
    size_t i;

    for (i = 0; i < len; i++) {
        char c = buf[i];

        if (in_string) {
            if (escape)
                escape = false;
            else if (c == '\\')
                escape = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            depth++;
            if (depth > max) {
                max = depth;
                if (max > limit)
                    break;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return max;
}

bool jsonrpc_id_valid(const cJSON *id)
{
    double v;

    if (id == NULL)
        return false;
    if (cJSON_IsString(id))
        return true;
    if (!cJSON_IsNumber(id))
        return false;
    v = id->valuedouble;
    /* Integers only, and exactly representable ones. The range check comes
     * first: converting an out-of-range double to int64_t is undefined. */
    if (!(v >= -9007199254740991.0 && v <= 9007199254740991.0))
        return false;
    return v == (double)(int64_t)v;
}

char *jsonrpc_id_key(const cJSON *id)
{
    return cJSON_PrintUnformatted(id);
}

static bool only_space(const char *p, const char *end)
{
    while (p < end) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            return false;
        p++;
    }
    return true;
}

/* Syntax-level checks: UTF-8, depth, JSON, one object. */
static int parse_root(const char *buf, size_t len, cJSON **root_out, char *err,
                      size_t errlen)
{
    size_t bad = 0;
    const char *end = NULL;
    cJSON *root = NULL;

    if (!jsonrpc_utf8_valid(buf, len, &bad)) {
        errbuf_set(err, errlen,
                   "message is not valid UTF-8 (bad byte at offset %zu); "
                   "encode all text as UTF-8",
                   bad);
        return JSONRPC_PARSE_ERROR;
    }
    if (jsonrpc_depth(buf, len, JSONRPC_MAX_DEPTH) > JSONRPC_MAX_DEPTH) {
        errbuf_set(err, errlen,
                   "message nests arrays/objects deeper than %d levels; "
                   "flatten the JSON",
                   JSONRPC_MAX_DEPTH);
        return JSONRPC_PARSE_ERROR;
    }
    root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
    if (root == NULL) {
        size_t at = (end != NULL && end >= buf) ? (size_t)(end - buf) : 0;

        errbuf_set(err, errlen,
                   "invalid JSON near byte %zu; send one complete JSON-RPC "
                   "object per message",
                   at);
        return JSONRPC_PARSE_ERROR;
    }
    if (end != NULL && !only_space(end, buf + len)) {
        errbuf_set(err, errlen,
                   "unexpected data after the JSON value at byte %zu; send "
                   "exactly one JSON-RPC object per message",
                   (size_t)(end - buf));
        cJSON_Delete(root);
        return JSONRPC_PARSE_ERROR;
    }
    if (cJSON_IsArray(root)) {
        errbuf_set(err, errlen,
                   "batches are not supported since 2025-06-18; send each "
                   "JSON-RPC message on its own");
        cJSON_Delete(root);
        return JSONRPC_INVALID_REQUEST;
    }
    if (!cJSON_IsObject(root)) {
        errbuf_set(err, errlen, "a message must be a JSON-RPC 2.0 object");
        cJSON_Delete(root);
        return JSONRPC_INVALID_REQUEST;
    }
    *root_out = root;
    return 0;
}

static int classify_call(struct jsonrpc_msg *msg, const cJSON *method,
                         const cJSON *id, char *err, size_t errlen)
{
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg->root, "params");

    if (!cJSON_IsString(method)) {
        errbuf_set(err, errlen, "\"method\" must be a string");
        return JSONRPC_INVALID_REQUEST;
    }
    msg->method = method->valuestring;
    if (id == NULL) {
        msg->kind = JSONRPC_NOTIFICATION;
    } else if (cJSON_IsNull(id)) {
        errbuf_set(err, errlen,
                   "\"id\" must not be null; use a string or an integer "
                   "(or leave it out for a notification)");
        return JSONRPC_INVALID_REQUEST;
    } else if (!jsonrpc_id_valid(id)) {
        errbuf_set(err, errlen, "\"id\" must be a string or an integer");
        return JSONRPC_INVALID_REQUEST;
    } else {
        msg->kind = JSONRPC_REQUEST;
        msg->id = id;
    }
    if (params != NULL && !cJSON_IsNull(params)) {
        if (!cJSON_IsObject(params)) {
            errbuf_set(err, errlen, "\"params\" of '%s' must be an object",
                       msg->method);
            return JSONRPC_INVALID_PARAMS;
        }
        msg->params = params;
    }
    return 0;
}

static int classify_response(struct jsonrpc_msg *msg, const cJSON *id,
                             char *err, size_t errlen)
{
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(msg->root, "result");
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(msg->root, "error");

    if (result == NULL && error == NULL) {
        errbuf_set(err, errlen,
                   "a message needs \"method\" (a request or notification) or "
                   "\"result\"/\"error\" (a response)");
        return JSONRPC_INVALID_REQUEST;
    }
    if (result != NULL && error != NULL) {
        errbuf_set(
            err, errlen,
            "a response carries either \"result\" or \"error\", not both");
        return JSONRPC_INVALID_REQUEST;
    }
    if (error != NULL && !cJSON_IsObject(error)) {
        errbuf_set(err, errlen,
                   "\"error\" must be an object with code and "
                   "message");
        return JSONRPC_INVALID_REQUEST;
    }
    if (!jsonrpc_id_valid(id) && !(error != NULL && cJSON_IsNull(id))) {
        errbuf_set(err, errlen,
                   "a response needs the string or integer \"id\" "
                   "of the request it answers");
        return JSONRPC_INVALID_REQUEST;
    }
    msg->kind = JSONRPC_RESPONSE;
    msg->id = id;
    msg->result = result;
    msg->error = error;
    return 0;
}

int jsonrpc_read(cJSON *root, struct jsonrpc_msg *msg, cJSON **bad_id,
                 char *err, size_t errlen)
{
    const cJSON *version = NULL;
    const cJSON *id = NULL;
    const cJSON *method = NULL;
    int rc = 0;

    memset(msg, 0, sizeof(*msg));
    msg->root = root;
    *bad_id = NULL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    id = cJSON_GetObjectItemCaseSensitive(msg->root, "id");
    if (jsonrpc_id_valid(id))
        *bad_id = cJSON_Duplicate(id, false);
    version = cJSON_GetObjectItemCaseSensitive(msg->root, "jsonrpc");
    if (!cJSON_IsString(version) || strcmp(version->valuestring, "2.0") != 0) {
        errbuf_set(err, errlen, "\"jsonrpc\" must be the string \"2.0\"%s",
                   version == NULL ? " (it is missing)" : "");
        return JSONRPC_INVALID_REQUEST;
    }
    method = cJSON_GetObjectItemCaseSensitive(msg->root, "method");
    if (method != NULL)
        rc = classify_call(msg, method, id, err, errlen);
    else
        rc = classify_response(msg, id, err, errlen);
    if (rc == 0) {
        cJSON_Delete(*bad_id);
        *bad_id = NULL;
    }
    return rc;
}

/* The offset of the first \u0000 escape inside a string of valid JSON,
 * else len.  cJSON ends its strings at a NUL, so a string holding one
 * would reach a tool cut short, silently. */
static size_t nul_escape_at(const char *buf, size_t len)
{
    bool in_string = false;
    size_t i;

    for (i = 0; i < len; i++) {
        if (!in_string) {
            in_string = buf[i] == '"';
            continue;
        }
        if (buf[i] == '"') {
            in_string = false;
        } else if (buf[i] == '\\') {
            if (i + 5 < len && memcmp(buf + i + 1, "u0000", 5) == 0)
                return i;
            i++; /* the escaped character */
        }
    }
    return len;
}

int jsonrpc_parse(const char *buf, size_t len, struct jsonrpc_msg *msg,
                  cJSON **bad_id, char *err, size_t errlen)
{
    cJSON *root = NULL;
    size_t nul = 0;
    int rc = 0;

    memset(msg, 0, sizeof(*msg));
    *bad_id = NULL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    rc = parse_root(buf, len, &root, err, errlen);
    if (rc != 0)
        return rc;
    rc = jsonrpc_read(root, msg, bad_id, err, errlen);
    nul = nul_escape_at(buf, len);
    if (rc != 0 || nul == len)
        return rc;
    if (msg->id != NULL)
        *bad_id = cJSON_Duplicate(msg->id, false);
    errbuf_set(err, errlen,
               "a string holds \\u0000 (byte %zu): text may not contain NUL "
               "characters; remove it, or send binary data base64-encoded",
               nul);
    return JSONRPC_INVALID_PARAMS;
}

void jsonrpc_msg_free(struct jsonrpc_msg *msg)
{
    if (msg == NULL)
        return;
    cJSON_Delete(msg->root);
    memset(msg, 0, sizeof(*msg));
}

static cJSON *envelope(const cJSON *id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *idc = NULL;

    if (o == NULL)
        return NULL;
    idc = id != NULL ? cJSON_Duplicate(id, false) : cJSON_CreateNull();
    if (cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL || idc == NULL ||
        !cJSON_AddItemToObject(o, "id", idc)) {
        cJSON_Delete(idc);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static char *print_and_free(cJSON *o)
{
    char *s = NULL;

    if (o == NULL)
        return NULL;
    s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

char *jsonrpc_error(const cJSON *id, int code, const char *message,
                    const cJSON *data)
{
    cJSON *o = envelope(id);
    cJSON *e = NULL;

    if (o == NULL)
        return NULL;
    e = cJSON_AddObjectToObject(o, "error");
    if (e == NULL || cJSON_AddNumberToObject(e, "code", code) == NULL ||
        cJSON_AddStringToObject(e, "message", message) == NULL)
        goto fail;
    if (data != NULL &&
        !cJSON_AddItemToObject(e, "data", cJSON_Duplicate(data, true)))
        goto fail;
    return print_and_free(o);
fail:
    cJSON_Delete(o);
    return NULL;
}

char *jsonrpc_result(const cJSON *id, cJSON *result)
{
    cJSON *o = envelope(id);

    if (o == NULL || result == NULL ||
        !cJSON_AddItemToObject(o, "result", result)) {
        cJSON_Delete(result);
        cJSON_Delete(o);
        return NULL;
    }
    return print_and_free(o);
}

char *jsonrpc_notification(const char *method, cJSON *params)
{
    cJSON *o = cJSON_CreateObject();

    if (o == NULL || cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL ||
        cJSON_AddStringToObject(o, "method", method) == NULL)
        goto fail;
    if (params != NULL && !cJSON_AddItemToObject(o, "params", params)) {
        params = NULL;
        goto fail;
    }
    return print_and_free(o);
fail:
    cJSON_Delete(params);
    cJSON_Delete(o);
    return NULL;
}
