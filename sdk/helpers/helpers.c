/*
 * helpers.c - argument getters, error mapping, Runloop request wrappers and
 * text utilities shared by the bundled plugins. See rlmcp_helpers.h.
 */
#define _GNU_SOURCE
#include "rlmcp_helpers.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- error mapping ------------------------------------------------------- */

/* The HTTP statuses that have a code of their own; any other is internal. */
static const struct {
    long status;
    const char *code;
} status_codes[] = {
    {400, RLMCP_ERR_INVALID_ARGUMENT}, {422, RLMCP_ERR_INVALID_ARGUMENT},
    {401, RLMCP_ERR_UNAUTHENTICATED},  {403, RLMCP_ERR_PERMISSION_DENIED},
    {404, RLMCP_ERR_NOT_FOUND},        {408, RLMCP_ERR_TIMEOUT},
    {504, RLMCP_ERR_TIMEOUT},          {409, RLMCP_ERR_CONFLICT},
    {413, RLMCP_ERR_TOO_LARGE},        {429, RLMCP_ERR_RATE_LIMITED},
    {502, RLMCP_ERR_UNAVAILABLE},      {503, RLMCP_ERR_UNAVAILABLE},
    {507, RLMCP_ERR_STORAGE_FULL},     {423, RLMCP_ERR_DISK_READ_ONLY},
};

const char *rlmcp_h_code_for_status(long status)
{
    size_t i;

    for (i = 0; i < sizeof(status_codes) / sizeof(status_codes[0]); i++) {
        if (status_codes[i].status == status)
            return status_codes[i].code;
    }
    return RLMCP_ERR_INTERNAL;
}

struct remedy {
    const char *code;
    const char *text;
};

static const struct remedy remedies[] = {
    {RLMCP_ERR_INVALID_ARGUMENT,
     "Fix the argument named in the message (see the tool's input schema) "
     "and call the tool again."},
    {RLMCP_ERR_NOT_FOUND,
     "Check the id or name in the message. The tool that lists objects of "
     "its kind shows the ones that exist."},
    {RLMCP_ERR_UNAUTHENTICATED,
     "Set RUNLOOP_API_KEY to a valid Runloop API key (stdio) or send it as "
     "Authorization: Bearer <key> (HTTP), then retry."},
    {RLMCP_ERR_PERMISSION_DENIED,
     "The API key is valid but not allowed to do this (restricted key or "
     "plan limit); use a key with the needed permissions."},
    {RLMCP_ERR_CONFLICT,
     "The request conflicts with the object's current state (see the "
     "message). If a name is taken, pick another name or update the "
     "existing object instead; if the object is busy with another "
     "operation, wait until it ends and call the tool again."},
    {RLMCP_ERR_RATE_LIMITED,
     "Too many requests; wait a few seconds before retrying."},
    {RLMCP_ERR_UNAVAILABLE,
     "The Runloop backend could not be reached or is temporarily down; "
     "retry in a few seconds, and check the server's base URL if it "
     "persists."},
    {RLMCP_ERR_TIMEOUT,
     "The operation took longer than its limit; raise timeout_seconds, or "
     "use execute_command_async and poll with get_execution."},
    {RLMCP_ERR_DEVBOX_NOT_RUNNING,
     "Resume the devbox with resume_devbox (if suspended) or create a new "
     "one with create_devbox, then retry."},
    {RLMCP_ERR_DEVBOX_NOT_READY,
     "The devbox is still starting; poll get_devbox until status is "
     "running, or shut it down with shutdown_devbox."},
    {RLMCP_ERR_TOO_LARGE,
     "The data exceeds the configured size limit; split it, compress it, "
     "or move it with execute_command (e.g. curl inside the devbox)."},
    {RLMCP_ERR_STORAGE_FULL,
     "A disk is full; the message says whose. The devbox's disk: delete "
     "files inside it (execute_command) or use a devbox with a larger "
     "custom_disk_size. The engine's disk: shut down devboxes you no longer "
     "need and delete snapshots and storage objects, then call the tool "
     "again. Calling again without freeing space fails the same way."},
    {RLMCP_ERR_DISK_READ_ONLY,
     "The devbox's disk went read-only after a storage error: nothing can "
     "be written and no command can run. Read or download the files you "
     "need (read_file, download_file), then shut the devbox down and create "
     "a new one. Calling again fails the same way."},
    {RLMCP_ERR_CANCELLED, "The call was cancelled; call the tool again."},
    {RLMCP_ERR_INTERNAL,
     "An unexpected server-side error; retry once, and report it if it "
     "persists."},
};

const char *rlmcp_h_remedy_for_code(const char *code)
{
    size_t i;

    for (i = 0; i < sizeof(remedies) / sizeof(remedies[0]); i++) {
        if (strcmp(remedies[i].code, code) == 0)
            return remedies[i].text;
    }
    return remedies[sizeof(remedies) / sizeof(remedies[0]) - 1].text;
}

/*
 * Each sentence naming a tool stands alone: a deployment that hides the
 * tool drops that sentence and keeps the rest (the host's textmap).
 */
static const struct {
    const char *const keys[4]; /* any of these in the message, any case */
    const char *remedy;
} not_found_kinds[] = {
    {{"snapshot", NULL},
     "Check the snapshot id. list_snapshots shows the snapshots that exist; "
     "a deleted snapshot cannot be used again."},
    {{"execution", NULL},
     "Check the devbox and execution ids. list_executions shows a devbox's "
     "running and recent executions."},
    {{"blueprint", NULL},
     "Check the blueprint id or name. list_blueprints shows the blueprints "
     "that exist."},
    {{"secret", NULL},
     "Check the secret name. list_secrets shows the secrets that exist."},
    {{"mcp config", "mcp_config", "mcp-config", NULL},
     "Check the MCP config id. list_mcp_configs shows the MCP configs that "
     "exist."},
    {{"no such file", "not a directory", "file not found", NULL},
     "Check the path: absolute, or relative to /home/user. list_files shows "
     "what a directory holds."},
    {{"devbox", NULL},
     "Check the devbox id; a shut down devbox cannot be used again, create "
     "a new one. list_devboxes shows the devboxes that exist."},
};

const char *rlmcp_h_remedy_for(const char *code, const char *message)
{
    size_t i;
    size_t k;

    if (code == NULL || strcmp(code, RLMCP_ERR_NOT_FOUND) != 0 ||
        message == NULL)
        return rlmcp_h_remedy_for_code(code != NULL ? code : "");
    for (i = 0; i < sizeof(not_found_kinds) / sizeof(not_found_kinds[0]); i++) {
        for (k = 0; not_found_kinds[i].keys[k] != NULL; k++) {
            if (strcasestr(message, not_found_kinds[i].keys[k]) != NULL)
                return not_found_kinds[i].remedy;
        }
    }
    return rlmcp_h_remedy_for_code(code);
}

char *rlmcp_h_error_message(const char *body, size_t len)
{
    cJSON *doc = NULL;
    const cJSON *msg = NULL;
    char *out = NULL;
    size_t cut = len;

    if (body == NULL || len == 0)
        return strdup("");
    doc = cJSON_ParseWithLength(body, len);
    if (doc != NULL) {
        msg = cJSON_GetObjectItemCaseSensitive(doc, "message");
        if (cJSON_IsString(msg))
            out = strdup(msg->valuestring);
        else if (msg != NULL)
            out = cJSON_PrintUnformatted(msg);
        if (out != NULL)
            goto out;
    }
    if (cut > 300)
        cut = 300;
    out = strndup(body, cut);
out:
    cJSON_Delete(doc);
    return out;
}

/* remedy NULL: the default for the code and the message. */
static int fail_v(const struct rlmcp_h *h, const char *code, const char *remedy,
                  const char *fmt, va_list ap)
{
    char *msg = NULL;

    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    if (remedy == NULL)
        remedy = rlmcp_h_remedy_for(code, msg);
    h->api->result_error(h->call, code, remedy, "%s", msg != NULL ? msg : code);
    free(msg);
    return RLMCP_H_REPORTED;
}

int rlmcp_h_fail(const struct rlmcp_h *h, const char *code, const char *fmt,
                 ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = fail_v(h, code, NULL, fmt, ap);
    va_end(ap);
    return rc;
}

int rlmcp_h_fail_remedy(const struct rlmcp_h *h, const char *code,
                        const char *remedy, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = fail_v(h, code, remedy, fmt, ap);
    va_end(ap);
    return rc;
}

int rlmcp_h_fail_resp(const struct rlmcp_h *h,
                      const struct rlmcp_http_resp *resp, const char *what)
{
    const char *code = rlmcp_h_code_for_status(resp->status);
    char *msg = rlmcp_h_error_message(resp->body, resp->body_len);

    rlmcp_h_fail(h, code, "%s: Runloop API answered HTTP %ld%s%s", what,
                 resp->status, msg != NULL && msg[0] ? ": " : "",
                 msg != NULL ? msg : "");
    free(msg);
    return RLMCP_H_REPORTED;
}

/* The host's reason for the last failed request (ABI 1.2), or "". */
static const char *last_error(const struct rlmcp_h *h)
{
    const char *why = NULL;

    if (RLMCP_API_HAS(h->api, call_last_error))
        why = h->api->call_last_error(h->call);
    return why != NULL ? why : "";
}

/* A transport failure as code: "<what>: <phrase>: <the host's reason>",
 * or "<what>: <phrase><fallback>" when the host gave none. */
static int fail_transport(const struct rlmcp_h *h, const char *code,
                          const char *what, const char *phrase,
                          const char *fallback)
{
    const char *why = last_error(h);

    if (why[0] != '\0')
        return rlmcp_h_fail(h, code, "%s: %s: %s", what, phrase, why);
    return rlmcp_h_fail(h, code, "%s: %s%s", what, phrase, fallback);
}

/* A message over its limit (ABI 1.6) is the input's size, not a fault of
 * the server: too_large, saying how to get under the limit. */
static int fail_too_big(const struct rlmcp_h *h, const char *what)
{
    const char *why = last_error(h);

    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_TOO_LARGE,
        "Ask for less at a time (a smaller range, page or output), or move "
        "the data with execute_command (e.g. curl inside the devbox).",
        "%s: a message was larger than this server's limit%s%s", what,
        why[0] != '\0' ? ": " : "", why);
}

int rlmcp_h_fail_rc(const struct rlmcp_h *h, int rc, const char *what)
{
    switch (rc) {
    case RLMCP_ECANCELLED:
        return RLMCP_ECANCELLED;
    case RLMCP_EHTTP:
        return fail_transport(h, RLMCP_ERR_UNAVAILABLE, what,
                              "the Runloop API could not be reached",
                              " (the server log names the URL)");
    case RLMCP_ETIMEDOUT:
        return fail_transport(h, RLMCP_ERR_TIMEOUT, what,
                              "the Runloop API did not answer in time", "");
    case RLMCP_ENOMEM:
        return RLMCP_ENOMEM;
    case RLMCP_ETOOBIG:
        return fail_too_big(h, what);
    default:
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL, "%s: request failed: %s",
                            what, h->api->strerror(rc));
    }
}

/* ---- requests -------------------------------------------------------------
 */

static int do_request(const struct rlmcp_h *h, const char *method,
                      const char *path, const cJSON *body,
                      const struct rlmcp_h_req_opts *opts,
                      struct rlmcp_http_resp **resp_out)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    char *text = NULL;
    int rc;

    if (body != NULL) {
        text = cJSON_PrintUnformatted(body);
        if (text == NULL)
            return RLMCP_ENOMEM;
    }
    req.method = method;
    req.path = path;
    req.body = text;
    req.body_len = text != NULL ? strlen(text) : 0;
    if (opts != NULL) {
        req.timeout_ms = opts->timeout_ms;
        req.max_retries = opts->max_retries;
        req.flags = opts->flags;
        req.max_body = opts->max_body;
        req.accept = opts->accept;
    }
    rc = h->api->runloop_request(h->call, &req, resp_out);
    free(text);
    return rc;
}

int rlmcp_h_request_status(const struct rlmcp_h *h, const char *method,
                           const char *path, const cJSON *body,
                           const struct rlmcp_h_req_opts *opts,
                           const char *what, long *status_out, cJSON **out,
                           char **msg_out)
{
    struct rlmcp_http_resp *resp = NULL;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (msg_out != NULL)
        *msg_out = NULL;
    if (path == NULL || what == NULL)
        return RLMCP_ENOMEM;
    rc = do_request(h, method, path, body, opts, &resp);
    if (rc != RLMCP_OK) {
        if (opts == NULL || !opts->transport_unreported ||
            (rc != RLMCP_EHTTP && rc != RLMCP_ETIMEDOUT))
            rc = rlmcp_h_fail_rc(h, rc, what);
        goto out;
    }
    *status_out = resp->status;
    if (out != NULL && resp->body_len > 0)
        *out = cJSON_ParseWithLength(resp->body, resp->body_len);
    if (msg_out != NULL && (resp->status < 200 || resp->status > 299))
        *msg_out = rlmcp_h_error_message(resp->body, resp->body_len);
out:
    h->api->http_resp_free(resp);
    return rc;
}

int rlmcp_h_exists(const struct rlmcp_h *h, const char *path, const char *what,
                   bool *exists)
{
    long status = 0;
    int rc;

    *exists = false;
    if (path == NULL)
        return RLMCP_ENOMEM;
    rc = rlmcp_h_request_status(h, "GET", path, NULL, NULL, what, &status, NULL,
                                NULL);
    if (rc != RLMCP_OK)
        return rc;
    *exists = status >= 200 && status <= 299;
    return RLMCP_OK;
}

int rlmcp_h_request(const struct rlmcp_h *h, const char *method,
                    const char *path, const cJSON *body,
                    const struct rlmcp_h_req_opts *opts, const char *what,
                    cJSON **out)
{
    struct rlmcp_http_resp *resp = NULL;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (path == NULL || what == NULL)
        return RLMCP_ENOMEM;
    rc = do_request(h, method, path, body, opts, &resp);
    if (rc != RLMCP_OK) {
        rc = rlmcp_h_fail_rc(h, rc, what);
        goto out;
    }
    if (resp->status == 409 && opts != NULL && opts->conflict_remedy != NULL) {
        char *msg = rlmcp_h_error_message(resp->body, resp->body_len);

        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_CONFLICT, opts->conflict_remedy,
                                 "%s: Runloop API answered HTTP 409%s%s", what,
                                 msg != NULL && msg[0] ? ": " : "",
                                 msg != NULL ? msg : "");
        free(msg);
        goto out;
    }
    if (resp->status < 200 || resp->status > 299) {
        rc = rlmcp_h_fail_resp(h, resp, what);
        goto out;
    }
    if (out != NULL && resp->body_len > 0)
        *out = cJSON_ParseWithLength(resp->body, resp->body_len);
out:
    h->api->http_resp_free(resp);
    return rc;
}

int rlmcp_h_download_req(const char *id, const char *path, long long limit,
                         uint32_t timeout_ms, struct rlmcp_http_req *req,
                         char **url, char **body)
{
    cJSON *obj = cJSON_CreateObject();

    *url = rlmcp_h_sprintf("/v1/devboxes/%s/download_file", id);
    *body = NULL;
    if (obj != NULL && cJSON_AddStringToObject(obj, "path", path) != NULL)
        *body = cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    if (*url == NULL || *body == NULL) {
        free(*url);
        free(*body);
        *url = NULL;
        *body = NULL;
        return RLMCP_ENOMEM;
    }
    req->method = "POST";
    req->path = *url;
    req->body = *body;
    req->body_len = strlen(*body);
    req->accept = "application/octet-stream";
    /* One byte more than allowed tells "too large" from "exactly". */
    req->max_body = (size_t)limit + 1;
    req->timeout_ms = timeout_ms;
    return RLMCP_OK;
}

bool rlmcp_h_resp_over(const struct rlmcp_http_resp *resp, long long limit)
{
    return resp->truncated || (long long)resp->body_len > limit;
}

int rlmcp_h_delete_by_id(const struct rlmcp_h *h, const char *args_json,
                         size_t len, const char *id_arg,
                         const char *path_before, const char *path_after,
                         const char *what)
{
    cJSON *args = NULL, *res = NULL;
    const char *id = NULL;
    char *path = NULL, *subject = NULL;
    int rc;

    rc = rlmcp_h_args(h, args_json, len, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, args, id_arg, true, &id);
    if (rc != RLMCP_OK)
        goto out;
    path = rlmcp_h_sprintf("%s%s%s", path_before, id, path_after);
    subject = rlmcp_h_sprintf("%s %s", what, id);
    rc = RLMCP_ENOMEM;
    if (path != NULL && subject != NULL)
        rc = rlmcp_h_request(h, "POST", path, NULL, NULL, subject, NULL);
    if (rc != RLMCP_OK)
        goto out;
    res = cJSON_CreateObject();
    rc = RLMCP_ENOMEM;
    if (res != NULL && cJSON_AddStringToObject(res, id_arg, id) != NULL &&
        cJSON_AddBoolToObject(res, "deleted", true) != NULL)
        rc = rlmcp_h_result_json(h, res);
out:
    free(path);
    free(subject);
    cJSON_Delete(args);
    cJSON_Delete(res);
    return rc;
}

/* ---- arguments ------------------------------------------------------------
 */

int rlmcp_h_args(const struct rlmcp_h *h, const char *json, size_t len,
                 cJSON **out)
{
    cJSON *doc = NULL;

    *out = NULL;
    if (json == NULL || len == 0) {
        *out = cJSON_CreateObject();
        return *out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
    }
    doc = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "arguments must be a JSON object");
    }
    *out = doc;
    return RLMCP_OK;
}

static int missing(const struct rlmcp_h *h, const char *name)
{
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "missing required argument '%s'", name);
}

int rlmcp_h_arg_str(const struct rlmcp_h *h, const cJSON *args,
                    const char *name, bool required, const char **out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(args, name);

    if (it == NULL || cJSON_IsNull(it))
        return required ? missing(h, name) : RLMCP_OK;
    if (!cJSON_IsString(it))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument '%s' must be a string", name);
    if (required && it->valuestring[0] == '\0')
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument '%s' must not be empty", name);
    *out = it->valuestring;
    return RLMCP_OK;
}

int rlmcp_h_arg_int(const struct rlmcp_h *h, const cJSON *args,
                    const char *name, bool required, long long min,
                    long long max, long long *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(args, name);
    double v;

    if (it == NULL || cJSON_IsNull(it))
        return required ? missing(h, name) : RLMCP_OK;
    if (!cJSON_IsNumber(it))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument '%s' must be an integer", name);
    v = it->valuedouble;
    /* The range first: converting a double beyond long long's range (or
     * NaN) is undefined, so the integer test below may only see a value
     * inside it.  2^63 is exact in a double; LLONG_MAX is not. */
    if (!(v > -9223372036854775808.0 && v < 9223372036854775808.0) ||
        v < (double)min || v > (double)max)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument '%s' must be between %lld and %lld "
                            "(got %.15g)",
                            name, min, max, v);
    if (v != (double)(long long)v)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument '%s' must be an integer", name);
    *out = (long long)v;
    return RLMCP_OK;
}

int rlmcp_h_arg_bool(const struct rlmcp_h *h, const cJSON *args,
                     const char *name, bool *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(args, name);

    if (it == NULL || cJSON_IsNull(it))
        return RLMCP_OK;
    if (!cJSON_IsBool(it))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument '%s' must be true or false", name);
    *out = cJSON_IsTrue(it);
    return RLMCP_OK;
}

int rlmcp_h_arg_str_map(const struct rlmcp_h *h, const cJSON *args,
                        const char *name, const cJSON **out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(args, name);
    const cJSON *v = NULL;

    if (it == NULL || cJSON_IsNull(it))
        return RLMCP_OK;
    if (!cJSON_IsObject(it))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument '%s' must be an object of strings", name);
    cJSON_ArrayForEach(v, it)
    {
        if (!cJSON_IsString(v))
            return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                "argument '%s': value of '%s' must be a "
                                "string",
                                name, v->string);
    }
    *out = it;
    return RLMCP_OK;
}

bool rlmcp_h_id_valid(const char *s)
{
    size_t n = 0;

    if (s == NULL)
        return false;
    for (; s[n] != '\0'; n++) {
        unsigned char c = (unsigned char)s[n];
        if (!isalnum(c) && c != '_' && c != '-' && c != '.')
            return false;
    }
    return n > 0 && n <= 128 && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int rlmcp_h_devbox_uri(const struct rlmcp_h *h, const char *uri, char *id,
                       size_t idlen, const char **rest)
{
    static const char scheme[] = "devbox://";
    const char *start = NULL;
    const char *slash = NULL;
    size_t n;

    if (strncmp(uri, scheme, sizeof(scheme) - 1) != 0)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "'%.256s' is not a devbox:// URI", uri);
    start = uri + sizeof(scheme) - 1;
    slash = strchr(start, '/');
    n = slash != NULL ? (size_t)(slash - start) : strlen(start);
    if (n == 0 || n >= idlen || n > 128) {
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "'%.256s' names no devbox: write "
                            "devbox://{devbox_id}/... with an id such as "
                            "dbx_... (see list_devboxes)",
                            uri);
    }
    memcpy(id, start, n);
    id[n] = '\0';
    if (!rlmcp_h_id_valid(id))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "'%.256s': '%.128s' is not a devbox id (letters, "
                            "digits, '_', '-', '.'; use the id exactly as "
                            "list_devboxes returns it)",
                            uri, id);
    if (slash == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "'%.256s' names a devbox but nothing in it: add "
                            "a file path or executions/{execution_id}/stdout",
                            uri);
    *rest = slash + 1;
    return RLMCP_OK;
}

int rlmcp_h_arg_id(const struct rlmcp_h *h, const cJSON *args, const char *name,
                   bool required, const char **out)
{
    const char *v = NULL;
    int rc = rlmcp_h_arg_str(h, args, name, required, &v);

    if (rc != RLMCP_OK || v == NULL)
        return rc;
    if (!rlmcp_h_id_valid(v))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument '%s' is not a valid id: use the id "
                            "exactly as returned (letters, digits, '_', "
                            "'-', '.'; at most 128)",
                            name);
    *out = v;
    return RLMCP_OK;
}

/* ---- results ---------------------------------------------------------------
 */

int rlmcp_h_result_json(const struct rlmcp_h *h, const cJSON *obj)
{
    char *text = cJSON_PrintUnformatted(obj);
    int rc;

    if (text == NULL)
        return RLMCP_ENOMEM;
    rc = h->api->result_json(h->call, text, strlen(text));
    free(text);
    return rc;
}

/* ---- config
 * ------------------------------------------------------------------ */

/* ---- tool registration ----------------------------------------------------
 */

static bool name_in(const char *const *names, const char *name)
{
    size_t i;

    for (i = 0; names != NULL && names[i] != NULL; i++) {
        if (strcmp(names[i], name) == 0)
            return true;
    }
    return false;
}

void rlmcp_h_tool_def(const struct rlmcp_h_tool *t, void *user_data,
                      uint32_t long_timeout_ms, bool waiting,
                      struct rlmcp_tool_def *def)
{
    def->name = t->name;
    def->title = t->title;
    def->description = t->desc;
    def->input_schema_json = t->in;
    def->output_schema_json = t->out;
    def->annotations_json = t->ann;
    def->handler = t->fn;
    def->user_data = user_data;
    def->timeout_ms = t->long_running ? long_timeout_ms : 0;
    def->flags = waiting ? RLMCP_TOOL_LONG : 0;
}

int rlmcp_h_register_def(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                         const struct rlmcp_tool_def *def)
{
    int rc = api->register_tool(self, def);

    if (rc != RLMCP_OK)
        api->set_error(self, "registering %s failed: %s", def->name,
                       api->strerror(rc));
    return rc;
}

int rlmcp_h_register_task_tool(rlmcp_plugin *self,
                               const struct rlmcp_host_api *api,
                               const struct rlmcp_h_tool *t,
                               const struct rlmcp_task_def *task,
                               void *user_data, uint32_t long_timeout_ms,
                               bool waiting)
{
    struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;

    rlmcp_h_tool_def(t, user_data, long_timeout_ms, waiting, &def);
    def.task = task;
    return rlmcp_h_register_def(self, api, &def);
}

int rlmcp_h_register_tools_task(rlmcp_plugin *self,
                                const struct rlmcp_host_api *api,
                                const struct rlmcp_h_tool *tools, size_t n,
                                const struct rlmcp_task_def *task,
                                void *user_data, uint32_t long_timeout_ms,
                                const char *const *waiting)
{
    int rc;

    if (n == 0)
        return RLMCP_EINVAL;
    rc = rlmcp_h_register_task_tool(self, api, &tools[0], task, user_data,
                                    long_timeout_ms,
                                    name_in(waiting, tools[0].name));
    if (rc == RLMCP_OK)
        rc = rlmcp_h_register_tools_waiting(
            self, api, tools + 1, n - 1, user_data, long_timeout_ms, waiting);
    return rc;
}

int rlmcp_h_register_tools(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                           const struct rlmcp_h_tool *tools, size_t n,
                           void *user_data, uint32_t long_timeout_ms)
{
    return rlmcp_h_register_tools_waiting(self, api, tools, n, user_data,
                                          long_timeout_ms, NULL);
}

int rlmcp_h_register_tools_waiting(rlmcp_plugin *self,
                                   const struct rlmcp_host_api *api,
                                   const struct rlmcp_h_tool *tools, size_t n,
                                   void *user_data, uint32_t long_timeout_ms,
                                   const char *const *waiting)
{
    size_t i;
    int rc = RLMCP_OK;

    for (i = 0; i < n && rc == RLMCP_OK; i++)
        rc = rlmcp_h_register_task_tool(self, api, &tools[i], NULL, user_data,
                                        long_timeout_ms,
                                        name_in(waiting, tools[i].name));
    return rc;
}

cJSON *rlmcp_h_config(rlmcp_plugin *self, const struct rlmcp_host_api *api)
{
    const char *text = api->config_json(self, NULL);
    cJSON *cfg = cJSON_Parse(text != NULL ? text : "{}");

    if (cfg == NULL)
        api->set_error(self, "config is not JSON");
    return cfg;
}

int rlmcp_h_plugin_init(const struct rlmcp_h_plugin *p, rlmcp_plugin *self,
                        const struct rlmcp_host_api *api, void **state_out)
{
    void *state = calloc(1, p->state_size);
    cJSON *cfg = NULL;
    int rc = RLMCP_EINVAL;

    if (state == NULL)
        return RLMCP_ENOMEM;
    cfg = rlmcp_h_config(self, api);
    if (cfg == NULL)
        goto out;
    rc = p->setup(state, self, api, cfg);
out:
    cJSON_Delete(cfg);
    if (rc != RLMCP_OK) {
        if (p->shutdown != NULL)
            p->shutdown(self, state);
        else
            free(state);
        return rc;
    }
    *state_out = state;
    return RLMCP_OK;
}

void rlmcp_h_shutdown_free(rlmcp_plugin *self, void *state)
{
    (void)self;
    free(state);
}

bool rlmcp_h_cfg_int(const cJSON *cfg, const char *name, long long def,
                     long long *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(cfg, name);

    *out = def;
    if (it == NULL)
        return true;
    if (!cJSON_IsNumber(it) ||
        it->valuedouble != (double)(long long)it->valuedouble)
        return false;
    *out = (long long)it->valuedouble;
    return true;
}

bool rlmcp_h_cfg_range(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                       const cJSON *cfg, const char *name, long long def,
                       long long min, long long max, long long *out)
{
    if (rlmcp_h_cfg_int(cfg, name, def, out) && *out >= min && *out <= max)
        return true;
    api->set_error(self, "config %s must be an integer %lld-%lld", name, min,
                   max);
    return false;
}

bool rlmcp_h_cfg_ranges(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                        const cJSON *cfg, const struct rlmcp_h_cfg_key *keys,
                        size_t n, void *base)
{
    size_t i;

    for (i = 0; i < n; i++) {
        long long *dst = (long long *)((char *)base + keys[i].off);

        if (!rlmcp_h_cfg_range(self, api, cfg, keys[i].name, keys[i].def,
                               keys[i].min, keys[i].max, dst))
            return false;
    }
    return true;
}

void rlmcp_h_cfg_defaults(const cJSON *cfg,
                          const struct rlmcp_h_cfg_default *keys, size_t n,
                          void *base)
{
    size_t i;

    for (i = 0; i < n; i++)
        rlmcp_h_cfg_int(cfg, keys[i].name, keys[i].def,
                        (long long *)((char *)base + keys[i].off));
}

bool rlmcp_h_cfg_bool(const cJSON *cfg, const char *name, bool def, bool *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(cfg, name);

    *out = def;
    if (it == NULL)
        return true;
    if (!cJSON_IsBool(it))
        return false;
    *out = cJSON_IsTrue(it);
    return true;
}

/* ---- base64
 * ------------------------------------------------------------------ */

static const char b64chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *rlmcp_h_b64_encode(const void *data, size_t len, size_t *out_len)
{
    const unsigned char *in = data;
    size_t n = 4 * ((len + 2) / 3);
    char *out = malloc(n + 1);
    size_t i, o = 0;

    if (out == NULL)
        return NULL;
    for (i = 0; i + 2 < len; i += 3) {
        uint32_t v =
            (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64chars[v >> 18 & 63];
        out[o++] = b64chars[v >> 12 & 63];
        out[o++] = b64chars[v >> 6 & 63];
        out[o++] = b64chars[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)in[i + 1] << 8;
        out[o++] = b64chars[v >> 18 & 63];
        out[o++] = b64chars[v >> 12 & 63];
        out[o++] = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    if (out_len != NULL)
        *out_len = o;
    return out;
}

size_t rlmcp_h_b64_decoded_max(size_t len)
{
    return len / 4 * 3 + 3;
}

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

unsigned char *rlmcp_h_b64_decode(const char *s, size_t len, size_t *out_len)
{
    unsigned char *out = malloc(rlmcp_h_b64_decoded_max(len) + 1);
    uint32_t acc = 0;
    size_t i, o = 0, nq = 0, pad = 0;

    if (out == NULL)
        return NULL;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int v;
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        v = b64val(c);
        if (v < 0 || pad > 0)
            goto bad;
        acc = acc << 6 | (uint32_t)v;
        if (++nq == 4) {
            out[o++] = (unsigned char)(acc >> 16);
            out[o++] = (unsigned char)(acc >> 8);
            out[o++] = (unsigned char)acc;
            nq = 0;
            acc = 0;
        }
    }
    if (nq == 1 || pad > 2)
        goto bad;
    if (nq == 2) {
        out[o++] = (unsigned char)(acc >> 4);
    } else if (nq == 3) {
        out[o++] = (unsigned char)(acc >> 10);
        out[o++] = (unsigned char)(acc >> 2);
    }
    *out_len = o;
    return out;
bad:
    free(out);
    return NULL;
}

/* ---- text
 * ------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at p (max n bytes), 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    size_t need, i;

    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xC2 && p[0] <= 0xDF)
        need = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF)
        need = 3;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4)
        need = 4;
    else
        return 0;
    if (need > n)
        return 0;
    for (i = 1; i < need; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    }
    if (need == 3 && p[0] == 0xE0 && p[1] < 0xA0)
        return 0;
    if (need == 3 && p[0] == 0xED && p[1] >= 0xA0)
        return 0;
    if (need == 4 && p[0] == 0xF0 && p[1] < 0x90)
        return 0;
    if (need == 4 && p[0] == 0xF4 && p[1] >= 0x90)
        return 0;
    return need;
}

bool rlmcp_h_is_text(const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t i = 0;

    while (i < len) {
        size_t n;
        if (p[i] == 0)
            return false;
        n = utf8_seq(p + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

struct mime_ext {
    const char *ext;
    const char *mime;
};

static const struct mime_ext mime_exts[] = {
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"svg", "image/svg+xml"},
    {"pdf", "application/pdf"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"tgz", "application/gzip"},
    {"tar", "application/x-tar"},
    {"json", "application/json"},
    {"xml", "application/xml"},
    {"html", "text/html"},
    {"htm", "text/html"},
    {"css", "text/css"},
    {"js", "text/javascript"},
    {"txt", "text/plain"},
    {"md", "text/markdown"},
    {"csv", "text/csv"},
    {"py", "text/x-python"},
    {"c", "text/x-c"},
    {"h", "text/x-c"},
    {"sh", "application/x-sh"},
    {"wasm", "application/wasm"},
    {"mp3", "audio/mpeg"},
    {"wav", "audio/wav"},
    {"mp4", "video/mp4"},
};

const char *rlmcp_h_mime_guess(const char *path, const void *data, size_t len)
{
    const unsigned char *p = data;
    const char *dot = path != NULL ? strrchr(path, '.') : NULL;
    const char *slash = path != NULL ? strrchr(path, '/') : NULL;
    size_t i;

    if (dot != NULL && (slash == NULL || dot > slash)) {
        for (i = 0; i < sizeof(mime_exts) / sizeof(mime_exts[0]); i++) {
            if (strcasecmp(dot + 1, mime_exts[i].ext) == 0)
                return mime_exts[i].mime;
        }
    }
    if (len >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0)
        return "image/png";
    if (len >= 3 && memcmp(p, "\xff\xd8\xff", 3) == 0)
        return "image/jpeg";
    if (len >= 6 &&
        (memcmp(p, "GIF87a", 6) == 0 || memcmp(p, "GIF89a", 6) == 0))
        return "image/gif";
    if (len >= 5 && memcmp(p, "%PDF-", 5) == 0)
        return "application/pdf";
    if (len >= 4 && memcmp(p, "PK\x03\x04", 4) == 0)
        return "application/zip";
    if (len >= 2 && memcmp(p, "\x1f\x8b", 2) == 0)
        return "application/gzip";
    if (len >= 4 && memcmp(p,
                           "\x7f"
                           "ELF",
                           4) == 0)
        return "application/x-executable";
    if (rlmcp_h_is_text(data, len))
        return "text/plain";
    return "application/octet-stream";
}

char *rlmcp_h_last_line(const char *s)
{
    char *copy = strdup(s != NULL ? s : "");
    char *end = NULL;
    char *nl = NULL;

    if (copy == NULL)
        return NULL;
    end = copy + strlen(copy);
    while (end > copy && (end[-1] == '\n' || end[-1] == '\r'))
        *--end = '\0';
    nl = strrchr(copy, '\n');
    if (nl != NULL)
        memmove(copy, nl + 1, strlen(nl + 1) + 1);
    return copy;
}

char *rlmcp_h_shell_quote(const char *s)
{
    size_t n = 2, i, o = 0;
    char *out;

    for (i = 0; s[i] != '\0'; i++)
        n += s[i] == '\'' ? 4 : 1;
    out = malloc(n + 1);
    if (out == NULL)
        return NULL;
    out[o++] = '\'';
    for (i = 0; s[i] != '\0'; i++) {
        if (s[i] == '\'') {
            memcpy(out + o, "'\\''", 4);
            o += 4;
        } else {
            out[o++] = s[i];
        }
    }
    out[o++] = '\'';
    out[o] = '\0';
    return out;
}

char *rlmcp_h_sprintf(const char *fmt, ...)
{
    va_list ap;
    char *out = NULL;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&out, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : out;
}

static uint64_t sys_mono_ms(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static long long sys_wall_ms(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sys_nap_ms(void *ctx, uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    (void)ctx;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static const struct rlmcp_h_clock sys_clock = {sys_mono_ms, sys_wall_ms,
                                               sys_nap_ms, NULL};
static struct rlmcp_h_clock g_clock = {sys_mono_ms, sys_wall_ms, sys_nap_ms,
                                       NULL};

void rlmcp_h_set_clock(const struct rlmcp_h_clock *clock)
{
    g_clock = clock != NULL ? *clock : sys_clock;
}

uint64_t rlmcp_h_now_ms(void)
{
    return g_clock.mono_ms(g_clock.ctx);
}

long long rlmcp_h_wall_ms(void)
{
    return g_clock.wall_ms(g_clock.ctx);
}

void rlmcp_h_nap_ms(uint64_t ms)
{
    g_clock.nap_ms(g_clock.ctx, ms);
}

/* ---- capture
 * ------------------------------------------------------------------------ */

bool rlmcp_h_capture_init(struct rlmcp_h_capture *c, size_t max)
{
    memset(c, 0, sizeof(*c));
    if (max < 2)
        max = 2;
    c->head_cap = max / 2;
    c->tail_cap = max - c->head_cap;
    c->head = malloc(c->head_cap);
    c->tail = malloc(c->tail_cap);
    if (c->head == NULL || c->tail == NULL) {
        rlmcp_h_capture_free(c);
        return false;
    }
    return true;
}

void rlmcp_h_capture_add(struct rlmcp_h_capture *c, const char *data,
                         size_t len)
{
    size_t take;

    c->total += len;
    take = c->head_cap - c->head_len;
    if (take > len)
        take = len;
    memcpy(c->head + c->head_len, data, take);
    c->head_len += take;
    data += take;
    len -= take;
    if (len >= c->tail_cap) {
        /* Only the last tail_cap bytes can survive. */
        data += len - c->tail_cap;
        len = c->tail_cap;
    }
    while (len > 0) {
        size_t room = c->tail_cap - c->tail_pos;
        size_t n = len < room ? len : room;
        memcpy(c->tail + c->tail_pos, data, n);
        c->tail_pos = (c->tail_pos + n) % c->tail_cap;
        c->tail_len += n;
        if (c->tail_len > c->tail_cap)
            c->tail_len = c->tail_cap;
        data += n;
        len -= n;
    }
}

void rlmcp_h_capture_reset(struct rlmcp_h_capture *c)
{
    c->head_len = 0;
    c->tail_len = 0;
    c->tail_pos = 0;
    c->total = 0;
}

void rlmcp_h_capture_free(struct rlmcp_h_capture *c)
{
    free(c->head);
    free(c->tail);
    c->head = NULL;
    c->tail = NULL;
}

/* Copy the ring's contents in order into out; returns the length. */
static size_t ring_linear(const struct rlmcp_h_capture *c, char *out)
{
    size_t start;
    size_t first;

    if (c->tail_len < c->tail_cap) {
        start = (c->tail_pos + c->tail_cap - c->tail_len) % c->tail_cap;
    } else {
        start = c->tail_pos;
    }
    first = c->tail_cap - start;
    if (first > c->tail_len)
        first = c->tail_len;
    memcpy(out, c->tail + start, first);
    memcpy(out + first, c->tail, c->tail_len - first);
    return c->tail_len;
}

/* Bytes to drop at the end of p[0..n) so it does not end mid-character. */
static size_t utf8_tail_trim(const char *p, size_t n)
{
    size_t back = 0;

    while (back < 4 && back < n &&
           ((unsigned char)p[n - 1 - back] & 0xC0) == 0x80)
        back++;
    if (back < n) {
        size_t need =
            utf8_seq((const unsigned char *)p + n - 1 - back, back + 1);
        if (need == 0 && (unsigned char)p[n - 1 - back] >= 0xC0)
            return back + 1;
    }
    return 0;
}

/* Bytes to skip at the start of p so it begins on a character. */
static size_t utf8_head_skip(const char *p, size_t n)
{
    size_t i = 0;

    while (i < 3 && i < n && ((unsigned char)p[i] & 0xC0) == 0x80)
        i++;
    return i;
}

char *rlmcp_h_tool_ref(const struct rlmcp_h *h, const char *tool,
                       const char *param, const char *value)
{
    const char *t = tool;
    const char *p = param;

    if (RLMCP_API_HAS(h->api, exposed_tool_name) &&
        RLMCP_API_HAS(h->api, exposed_param_name)) {
        t = h->api->exposed_tool_name(h->call, tool);
        p = h->api->exposed_param_name(h->call, tool, param);
    }
    if (t == NULL || p == NULL)
        return NULL;
    return rlmcp_h_sprintf("%s %s=%s", t, p, value);
}

char *rlmcp_h_capture_text(const struct rlmcp_h_capture *c, const char *hint,
                           bool *truncated)
{
    uint64_t dropped = 0;

    return rlmcp_h_capture_text_dropped(c, hint, truncated, &dropped);
}

char *rlmcp_h_capture_text_dropped(const struct rlmcp_h_capture *c,
                                   const char *hint, bool *truncated,
                                   uint64_t *dropped)
{
    char *tail = NULL;
    char *marker = NULL;
    char *out = NULL;
    size_t tail_len, head_len, skip, omitted;

    tail = malloc(c->tail_cap + 1);
    if (tail == NULL)
        goto out;
    tail_len = ring_linear(c, tail);
    *dropped = 0;
    if (c->total <= c->head_cap + c->tail_cap) {
        *truncated = false;
        out = malloc(c->head_len + tail_len + 1);
        if (out == NULL)
            goto out;
        memcpy(out, c->head, c->head_len);
        memcpy(out + c->head_len, tail, tail_len);
        out[c->head_len + tail_len] = '\0';
        goto out;
    }
    *truncated = true;
    head_len = c->head_len - utf8_tail_trim(c->head, c->head_len);
    skip = utf8_head_skip(tail, tail_len);
    omitted = (size_t)(c->total - head_len - (tail_len - skip));
    *dropped = omitted;
    if (hint != NULL)
        marker = rlmcp_h_sprintf("\n\u2026[truncated %zu bytes; %s]\u2026\n",
                                 omitted, hint);
    else
        marker =
            rlmcp_h_sprintf("\n\u2026[truncated %zu bytes]\u2026\n", omitted);
    if (marker == NULL)
        goto out;
    out = rlmcp_h_sprintf("%.*s%s%.*s", (int)head_len, c->head, marker,
                          (int)(tail_len - skip), tail + skip);
out:
    free(tail);
    free(marker);
    return out;
}

/* ---- schema-driven argument check
 * ---------------------------------------------- */

int rlmcp_h_args_schema(const struct rlmcp_h *h, const char *json, size_t len,
                        const char *schema_json, cJSON **out)
{
    cJSON *schema = NULL;
    cJSON *args = NULL;
    const cJSON *props = NULL;
    const cJSON *req = NULL;
    const cJSON *addl = NULL;
    const cJSON *it = NULL;
    int rc;

    *out = NULL;
    rc = rlmcp_h_args(h, json, len, &args);
    if (rc != RLMCP_OK)
        goto out;
    schema = cJSON_Parse(schema_json);
    if (schema == NULL) {
        rc = RLMCP_EINTERNAL;
        goto out;
    }
    props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    addl = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");
    if (cJSON_IsFalse(addl)) {
        cJSON_ArrayForEach(it, args)
        {
            if (cJSON_GetObjectItemCaseSensitive(props, it->string) != NULL)
                continue;
            rc = rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                              "unknown argument '%s' (see the tool's input "
                              "schema for the accepted names)",
                              it->string);
            goto out;
        }
    }
    req = cJSON_GetObjectItemCaseSensitive(schema, "required");
    cJSON_ArrayForEach(it, req)
    {
        if (!cJSON_IsString(it))
            continue;
        if (cJSON_GetObjectItemCaseSensitive(args, it->valuestring) == NULL) {
            rc = missing(h, it->valuestring);
            goto out;
        }
    }
    *out = args;
    args = NULL;
out:
    cJSON_Delete(args);
    cJSON_Delete(schema);
    return rc;
}

/* ---- devboxes
 * ------------------------------------------------------------------- */

const char *rlmcp_h_devbox_status(const cJSON *dbx)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(dbx, "status");

    return cJSON_IsString(st) ? st->valuestring : "";
}

static bool status_in(const char *st, const char *const *statuses)
{
    size_t i;

    for (i = 0; statuses[i] != NULL; i++) {
        if (strcmp(st, statuses[i]) == 0)
            return true;
    }
    return false;
}

/*
 * One long-poll of wait_for_status, bounded by the deadline. *got: the view
 * when the server answered 2xx; *status: the HTTP status, 0 when our own
 * bound passed first. Returns 0, RLMCP_H_REPORTED or a negative code.
 */
static int devbox_poll_once(const struct rlmcp_h *h, const char *path,
                            const cJSON *body, const char *what,
                            uint64_t deadline, long *status, cJSON **got)
{
    struct rlmcp_h_req_opts o = {0};
    struct rlmcp_http_resp *resp = NULL;
    uint64_t now = rlmcp_h_now_ms();
    int rc;

    *status = 0;
    *got = NULL;
    o.max_retries = 0;
    o.timeout_ms = (uint32_t)(deadline - now < 1000 ? 1000 : deadline - now);
    rc = do_request(h, "POST", path, body, &o, &resp);
    if (rc == RLMCP_ETIMEDOUT)
        return RLMCP_OK;
    if (rc != RLMCP_OK)
        return rlmcp_h_fail_rc(h, rc, what);
    *status = resp->status;
    if (resp->status == 404 || resp->status == 401 || resp->status == 403) {
        rc = rlmcp_h_fail_resp(h, resp, what);
    } else if (resp->status >= 200 && resp->status <= 299 &&
               resp->body_len > 0) {
        *got = cJSON_ParseWithLength(resp->body, resp->body_len);
    }
    h->api->http_resp_free(resp);
    return rc;
}

/* What a starting devbox waits for, when its engine says (the local
 * engine's "status_message" while its image builds), else NULL. */
static const char *devbox_status_message(const cJSON *dbx)
{
    return cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(dbx, "status_message"));
}

/* One step of a wait the engine explains (minutes of an image build): the
 * client hears the message as progress, then the view is read again after
 * a short sleep; *dbx_io is replaced by the new view. */
static int devbox_wait_step(const struct rlmcp_h *h, const char *get_path,
                            const char *what, uint64_t start, uint64_t deadline,
                            cJSON **dbx_io)
{
    uint64_t now = rlmcp_h_now_ms();
    uint64_t nap = deadline - now < 2000 ? deadline - now : 2000;
    cJSON *got = NULL;
    int rc;

    /* Elapsed seconds: a progress value that grows. */
    h->api->progress(h->call, (double)(now - start) / 1000.0 + 1.0, -1.0,
                     devbox_status_message(*dbx_io));
    rc = h->api->sleep_ms(h->call, (uint32_t)nap);
    if (rc != RLMCP_OK)
        return rc;
    rc = rlmcp_h_request(h, "GET", get_path, NULL, NULL, what, &got);
    if (rc == RLMCP_OK) {
        cJSON_Delete(*dbx_io);
        *dbx_io = got;
    }
    return rc;
}

int rlmcp_h_devbox_preparing(const struct rlmcp_h *h, const cJSON *dbx)
{
    const char *msg = devbox_status_message(dbx);

    if (msg == NULL)
        return RLMCP_OK;
    /* An image builds once per machine, for minutes, and goes on without
     * this call: say how far it is rather than "not running yet". */
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_DEVBOX_NOT_READY,
        "The image is built once per machine and its build goes on in the "
        "background; call the tool again in a minute.",
        "%.200s, call again", msg);
}

int rlmcp_h_devbox_create(const struct rlmcp_h *h, const cJSON *body,
                          const char *what, char **id_out)
{
    struct rlmcp_h_req_opts o = {0};
    cJSON *dbx = NULL;
    const char *id = NULL;
    int rc;

    *id_out = NULL;
    /* Not abandoned on cancellation: the caller shuts down what it made. */
    o.flags = RLMCP_HTTP_IGNORE_CANCEL;
    o.max_retries = -1;
    rc = rlmcp_h_request(h, "POST", "/v1/devboxes", body, &o, what, &dbx);
    if (rc != RLMCP_OK)
        goto out;
    id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(dbx, "id"));
    if (id == NULL || !rlmcp_h_id_valid(id)) {
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "the Runloop API returned a devbox without an id");
        goto out;
    }
    *id_out = strdup(id);
    rc = *id_out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
out:
    cJSON_Delete(dbx);
    return rc;
}

int rlmcp_h_devbox_wait(const struct rlmcp_h *h, const char *id,
                        const char *const *statuses, uint64_t wait_ms,
                        cJSON **dbx_out)
{
    uint64_t start = rlmcp_h_now_ms();
    uint64_t deadline = start + wait_ms;
    char *path = NULL;
    char *get_path = NULL;
    char *what = NULL;
    cJSON *body = NULL;
    cJSON *arr = NULL;
    cJSON *dbx = NULL;
    size_t i;
    int rc = RLMCP_ENOMEM;

    *dbx_out = NULL;
    path = rlmcp_h_sprintf("/v1/devboxes/%s/wait_for_status", id);
    get_path = rlmcp_h_sprintf("/v1/devboxes/%s", id);
    what = rlmcp_h_sprintf("devbox %s", id);
    body = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(body, "statuses");
    if (path == NULL || get_path == NULL || what == NULL || arr == NULL)
        goto out;
    for (i = 0; statuses[i] != NULL; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(statuses[i]));
    /* Look first: the common case is already there, or nearly. */
    rc = rlmcp_h_request(h, "GET", get_path, NULL, NULL, what, &dbx);
    while (rc == RLMCP_OK && !status_in(rlmcp_h_devbox_status(dbx), statuses) &&
           rlmcp_h_now_ms() < deadline) {
        long status = 0;
        cJSON *got = NULL;

        if (devbox_status_message(dbx) != NULL) {
            rc = devbox_wait_step(h, get_path, what, start, deadline, &dbx);
            continue;
        }
        rc = devbox_poll_once(h, path, body, what, deadline, &status, &got);
        if (rc != RLMCP_OK || status == 0) {
            cJSON_Delete(got);
            break; /* reported, or our bound passed: report the last view */
        }
        if (cJSON_IsObject(got)) {
            cJSON_Delete(dbx);
            dbx = got;
            continue;
        }
        cJSON_Delete(got);
        if (status == 408)
            continue;
        /* Another status: fall back to a plain GET poll. */
        cJSON_Delete(dbx);
        dbx = NULL;
        rc = rlmcp_h_request(h, "GET", get_path, NULL, NULL, what, &dbx);
        if (rc == RLMCP_OK && !status_in(rlmcp_h_devbox_status(dbx), statuses))
            rc = h->api->sleep_ms(h->call, 500);
    }
    if (rc == RLMCP_OK) {
        *dbx_out = dbx;
        dbx = NULL;
    }
out:
    free(path);
    free(get_path);
    free(what);
    cJSON_Delete(body);
    cJSON_Delete(dbx);
    return rc;
}

int rlmcp_h_fail_on_devbox(const struct rlmcp_h *h, const char *devbox_id,
                           long status, const char *msg, const char *what)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;
    char *path = NULL;
    cJSON *dbx = NULL;
    const char *st = NULL;
    int rc;

    if (status == 401 || status == 403 || status == 429)
        goto plain;
    /* Was it the devbox's state? Ask, without reporting failures. */
    path = rlmcp_h_sprintf("/v1/devboxes/%s", devbox_id);
    if (path == NULL)
        return RLMCP_ENOMEM;
    req.method = "GET";
    req.path = path;
    rc = h->api->runloop_request(h->call, &req, &resp);
    free(path);
    if (rc == RLMCP_ECANCELLED)
        return rc;
    if (rc == RLMCP_OK && resp->status == 404) {
        h->api->http_resp_free(resp);
        return rlmcp_h_fail(h, RLMCP_ERR_NOT_FOUND, "devbox %s does not exist",
                            devbox_id);
    }
    if (rc == RLMCP_OK && resp->status >= 200 && resp->status <= 299)
        dbx = cJSON_ParseWithLength(resp->body, resp->body_len);
    h->api->http_resp_free(resp);
    st = rlmcp_h_devbox_status(dbx);
    if (dbx != NULL && strcmp(st, "running") != 0) {
        const char *remedy =
            strcmp(st, "suspended") == 0 || strcmp(st, "suspending") == 0
                ? "Resume it with resume_devbox, then retry."
            : strcmp(st, "shutdown") == 0
                ? "This devbox is gone; create a new one with create_devbox."
            : strcmp(st, "failure") == 0
                ? "This devbox failed (get_devbox shows failure_message); "
                  "create a new one with create_devbox. When the message "
                  "says its disk is kept, read_file and download_file still "
                  "read its files."
                : "It is still starting; poll get_devbox until status is "
                  "running, then retry.";
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_DEVBOX_NOT_RUNNING, remedy,
                                 "%s: devbox %s is %s, not running", what,
                                 devbox_id, st);
        cJSON_Delete(dbx);
        return rc;
    }
    /* The devbox is there: a 404 is about something in it (an execution,
     * a file), never the devbox, whatever `what` names. */
    if (dbx != NULL && status == 404) {
        const char *remedy = rlmcp_h_remedy_for(RLMCP_ERR_NOT_FOUND, msg);

        if (remedy == rlmcp_h_remedy_for(RLMCP_ERR_NOT_FOUND, "devbox"))
            remedy = rlmcp_h_remedy_for_code(RLMCP_ERR_NOT_FOUND);
        cJSON_Delete(dbx);
        return rlmcp_h_fail_remedy(h, RLMCP_ERR_NOT_FOUND, remedy,
                                   "%s: Runloop API answered HTTP 404%s%s",
                                   what, msg != NULL && msg[0] ? ": " : "",
                                   msg != NULL ? msg : "");
    }
    cJSON_Delete(dbx);
    if (status == 409)
        /* The devbox still reads running but is changing state (a stop
         * under way, or another operation): nothing to fix in the call. */
        return rlmcp_h_fail_remedy(
            h, RLMCP_ERR_CONFLICT,
            "The devbox is changing state: wait a few seconds and retry. If it "
            "keeps failing, get_devbox shows its status (suspended: "
            "resume_devbox; shutdown or failure: create a new devbox).",
            "%s: Runloop API answered HTTP %ld%s%s", what, status,
            msg != NULL && msg[0] ? ": " : "", msg != NULL ? msg : "");
plain:
    return rlmcp_h_fail(h, rlmcp_h_code_for_status(status),
                        "%s: Runloop API answered HTTP %ld%s%s", what, status,
                        msg != NULL && msg[0] ? ": " : "",
                        msg != NULL ? msg : "");
}

/* ---- exec and wait ------------------------------------------------------- */

void rlmcp_h_devbox_discard(const struct rlmcp_h *h, const char *id)
{
    struct rlmcp_h_req_opts o = {0};
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s/shutdown", id);
    long status = 0;

    o.flags = RLMCP_HTTP_IGNORE_CANCEL;
    o.timeout_ms = 10000;
    o.max_retries = 1;
    if (path != NULL &&
        rlmcp_h_request_status(h, "POST", path, NULL, &o, "discarding", &status,
                               NULL, NULL) == RLMCP_OK &&
        (status < 200 || status > 299))
        h->api->log(h->api->call_plugin(h->call), RLMCP_LOG_WARNING,
                    "shutting down devbox %s answered HTTP %ld", id, status);
    free(path);
}

uint64_t rlmcp_h_time_left_ms(const struct rlmcp_h *h, uint64_t margin_ms)
{
    uint64_t deadline = 0;
    uint64_t now = rlmcp_h_now_ms();

    if (RLMCP_API_HAS(h->api, call_deadline_ms))
        deadline = h->api->call_deadline_ms(h->call);
    if (deadline == 0)
        return 86400000u;
    return deadline > now + margin_ms ? deadline - now - margin_ms : 0;
}

/* The seconds left until until_ms, as a wait of 1 to 25 s. */
static long long exec_wait_s(uint64_t until_ms, uint64_t now)
{
    long long s = until_ms > now ? (long long)((until_ms - now) / 1000) : 1;

    if (s < 1)
        s = 1;
    if (s > 25)
        s = 25;
    return s;
}

static int exec_refused(const struct rlmcp_h *h, const char *id, long status,
                        const char *msg, bool waiting,
                        const struct rlmcp_h_exec_wait *ew, const char *doing)
{
    if (ew->refused != NULL)
        return ew->refused(h, id, status, msg, waiting, ew->ud);
    return rlmcp_h_fail_on_devbox(h, id, status, msg, doing);
}

static const char *exec_str(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

int rlmcp_h_exec_wait(const struct rlmcp_h *h, const char *id, const char *cmd,
                      uint64_t until_ms, const struct rlmcp_h_exec_wait *ew,
                      cJSON **view_out)
{
    struct rlmcp_h_req_opts o = {0};
    cJSON *body = cJSON_CreateObject();
    cJSON *view = NULL;
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s/execute?last_n=20", id);
    char *running = rlmcp_h_sprintf("running %s", ew->what);
    char *waiting = rlmcp_h_sprintf("waiting for %s", ew->what);
    char *msg = NULL;
    char *eid = NULL; /* a copy: it outlives the view it came from */
    const char *st = NULL;
    long status = 0;
    uint64_t now = rlmcp_h_now_ms();
    long long wait_s = exec_wait_s(until_ms, now);
    int rc = RLMCP_ENOMEM;

    *view_out = NULL;
    if (body == NULL || path == NULL || running == NULL || waiting == NULL)
        goto out;
    cJSON_AddStringToObject(body, "command", cmd);
    cJSON_AddNumberToObject(body, "optimistic_timeout", (double)wait_s);
    o.timeout_ms = (uint32_t)(wait_s + 15) * 1000u;
    rc = rlmcp_h_request_status(h, "POST", path, body, &o, running, &status,
                                &view, &msg);
    if (rc != RLMCP_OK)
        goto out;
    if (status < 200 || status > 299) {
        rc = exec_refused(h, id, status, msg, false, ew, running);
        goto out;
    }
    if (exec_str(view, "execution_id") != NULL) {
        eid = strdup(exec_str(view, "execution_id"));
        if (eid == NULL) {
            rc = RLMCP_ENOMEM;
            goto out;
        }
    }
    st = exec_str(view, "status");
    while (st == NULL || strcmp(st, "completed") != 0) {
        cJSON *next = NULL;
        char *wpath = NULL;

        now = rlmcp_h_now_ms();
        if (eid == NULL || !rlmcp_h_id_valid(eid) || now >= until_ms) {
            rc = rlmcp_h_fail(h, RLMCP_ERR_TIMEOUT,
                              "%s did not finish in time "
                              "(execution %s in devbox %s)",
                              ew->what, eid != NULL ? eid : "?", id);
            goto out;
        }
        wait_s = exec_wait_s(until_ms, now);
        cJSON_Delete(body);
        body = cJSON_CreateObject();
        if (body == NULL) {
            rc = RLMCP_ENOMEM;
            goto out;
        }
        cJSON_AddItemToObject(
            body, "statuses",
            cJSON_CreateStringArray((const char *[]){"completed"}, 1));
        cJSON_AddNumberToObject(body, "timeout_seconds", (double)wait_s);
        wpath = rlmcp_h_sprintf("/v1/devboxes/%s/executions/%s/"
                                "wait_for_status?last_n=20",
                                id, eid);
        o.timeout_ms = (uint32_t)(wait_s + 15) * 1000u;
        free(msg);
        msg = NULL;
        rc = rlmcp_h_request_status(h, "POST", wpath, body, &o, waiting,
                                    &status, &next, &msg);
        free(wpath);
        if (rc != RLMCP_OK) {
            cJSON_Delete(next);
            goto out;
        }
        if (status == 408) { /* not yet */
            cJSON_Delete(next);
            /* Answered before its wait was up (a proxy's 408): a pause,
             * not a loop of requests until the deadline. */
            if (rlmcp_h_now_ms() < now + 1000u) {
                rc = h->api->sleep_ms(h->call, 1000);
                if (rc != RLMCP_OK)
                    goto out;
            }
            continue;
        }
        if (status < 200 || status > 299) {
            cJSON_Delete(next);
            rc = exec_refused(h, id, status, msg, true, ew, waiting);
            goto out;
        }
        cJSON_Delete(view);
        view = next;
        st = exec_str(view, "status");
    }
    *view_out = view;
    view = NULL;
out:
    free(path);
    free(eid);
    free(running);
    free(waiting);
    free(msg);
    cJSON_Delete(body);
    cJSON_Delete(view);
    return rc;
}
