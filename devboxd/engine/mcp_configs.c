/* devboxd MCP configs: the /v1/mcp-configs routes, their durable store,
 * and the `mcp` map of a devbox create (the hub: net/mcphub.h). */
#define _GNU_SOURCE
#include "mcp_configs.h"

#include <curl/curl.h>
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "layer_records.h"
#include "secrets.h"
#include "store.h"
#include "util.h"

#define ERRLEN 512
#define NAME_MAX_LEN 128
#define ENDPOINT_MAX 2048
#define TOOLS_MAX 100
#define PATTERN_MAX 256
#define DESC_MAX 1000
#define HEADER_VALUE_MAX 4096

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const cfg_fields[] = {"name",
                                         "endpoint",
                                         "allowed_tools",
                                         "auth_mechanism",
                                         "custom_headers",
                                         "description",
                                         NULL};

/* Headers the hub sets itself or that shape the HTTP exchange. */
static const char *const reserved_headers[] = {
    "authorization",
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "proxy-authorization",
    "proxy-connection",
    "last-event-id",
    NULL,
};

/* ------------------------------------------------------------- store */

/* Lock held. Every record, newest first. */
static cJSON *load_all_locked(struct engine *eng)
{
    char *dir = store_dir(eng->state_dir, "mcp-configs");
    cJSON *all = store_load_all(dir, 1 << 20);

    free(dir);
    return all;
}

/* A borrowed record of all by id or name (either may be NULL). */
static cJSON *find_in(cJSON *all, const char *id, const char *name)
{
    cJSON *it = NULL;

    cJSON_ArrayForEach(it, all)
    {
        const char *rid = util_json_str(it, "id");
        const char *rname = util_json_str(it, "name");

        if ((id != NULL && rid != NULL && strcmp(rid, id) == 0) ||
            (name != NULL && rname != NULL && strcmp(rname, name) == 0))
            return it;
    }
    return NULL;
}

static int save_locked(struct engine *eng, const cJSON *rec)
{
    char *dir = store_dir(eng->state_dir, "mcp-configs");
    char *text = cJSON_PrintUnformatted(rec);
    char file[64];
    int rc = -1;

    if (dir != NULL && text != NULL) {
        snprintf(file, sizeof(file), "%s.json", util_json_str(rec, "id"));
        rc = store_write(dir, file, text, strlen(text));
    }
    free(text);
    free(dir);
    return rc;
}

/* -------------------------------------------------------- validation */

static int token_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int name_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/* 1 when s is 1 to max characters that ok allows. */
static int all_chars(const char *s, size_t max, int (*ok)(char c))
{
    size_t i;

    for (i = 0; s[i] != '\0' && i < max; i++) {
        if (!ok(s[i]))
            return 0;
    }
    return i > 0 && s[i] == '\0';
}

/* 0 when name is an HTTP header token the hub may send; else a message. */
static int check_header_name(const char *name, const char *where, char *err,
                             size_t errlen)
{
    size_t i;

    if (!all_chars(name, 128, token_char)) {
        snprintf(err, errlen,
                 "%s \"%.100s\" is not a valid HTTP header name (1 to 128 "
                 "letters, digits and !#$%%&'*+-.^_`|~)",
                 where, name);
        return -1;
    }
    for (i = 0; reserved_headers[i] != NULL; i++) {
        if (strcasecmp(name, reserved_headers[i]) == 0 ||
            strncasecmp(name, "proxy-", 6) == 0) {
            snprintf(err, errlen,
                     "%s \"%s\" is reserved: the hub sets it itself (the "
                     "credential goes in Authorization, the MCP protocol "
                     "headers come "
                     "from the client)",
                     where, name);
            return -1;
        }
    }
    return 0;
}

static int check_endpoint(const char *ep, char *err, size_t errlen)
{
    CURLU *u = curl_url();
    char *scheme = NULL;
    char *host = NULL;
    int rc = -1;

    if (strlen(ep) > ENDPOINT_MAX) {
        snprintf(err, errlen, "'endpoint' is longer than %d characters",
                 ENDPOINT_MAX);
        goto out;
    }
    if (u == NULL || curl_url_set(u, CURLUPART_URL, ep, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
        snprintf(
            err, errlen,
            "'endpoint' \"%.200s\" must be an http:// or https:// URL of an "
            "MCP server (Streamable HTTP), e.g. https://mcp.example.com/mcp",
            ep);
        goto out;
    }
    rc = 0;
out:
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

static int check_tools(const cJSON *tools, char *err, size_t errlen)
{
    const cJSON *it = NULL;

    if (!cJSON_IsArray(tools) || cJSON_GetArraySize(tools) == 0 ||
        cJSON_GetArraySize(tools) > TOOLS_MAX) {
        snprintf(err, errlen,
                 "'allowed_tools' must be an array of 1 to %d glob patterns, "
                 "e.g. [\"*\"] or [\"search_*\", \"get_issue\"]",
                 TOOLS_MAX);
        return -1;
    }
    cJSON_ArrayForEach(it, tools)
    {
        if (!cJSON_IsString(it) || it->valuestring[0] == '\0' ||
            strlen(it->valuestring) > PATTERN_MAX) {
            snprintf(err, errlen,
                     "'allowed_tools' entries must be non-empty strings of at "
                     "most %d characters (glob patterns)",
                     PATTERN_MAX);
            return -1;
        }
    }
    return 0;
}

/* The auth mechanism to store ({type, key?}) or NULL with err. */
static cJSON *check_auth(const cJSON *auth, char *err, size_t errlen)
{
    static const char *const fields[] = {"type", "key", NULL};
    const char *type = NULL;
    const char *key = NULL;
    cJSON *out = NULL;

    if (auth == NULL || cJSON_IsNull(auth)) {
        out = cJSON_CreateObject();
        cJSON_AddStringToObject(out, "type", "bearer");
        return out;
    }
    if (!cJSON_IsObject(auth) ||
        util_check_fields(auth, "auth_mechanism", fields, err, errlen) != 0 ||
        util_opt_string(auth, "type", &type, err, errlen) != 0 ||
        util_opt_string(auth, "key", &key, err, errlen) != 0 || type == NULL ||
        (strcmp(type, "bearer") != 0 && strcmp(type, "header") != 0 &&
         strcmp(type, "basic") != 0)) {
        snprintf(
            err, errlen,
            "'auth_mechanism' must be {type: \"bearer\"|\"header\"|\"basic\", "
            "key?} (key: the header name, for type header only)");
        return NULL;
    }
    if (strcmp(type, "header") == 0) {
        if (key == NULL) {
            snprintf(err, errlen,
                     "auth_mechanism type \"header\" needs 'key', the header "
                     "name, e.g. \"X-Api-Key\"");
            return NULL;
        }
        if (check_header_name(key, "auth_mechanism.key", err, errlen) != 0)
            return NULL;
    } else if (key != NULL) {
        snprintf(err, errlen,
                 "auth_mechanism.key is only for type \"header\"; remove it");
        return NULL;
    }
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "type", type);
    if (key != NULL)
        cJSON_AddStringToObject(out, "key", key);
    return out;
}

/* One custom header entry to store ({name, secret: sec_id} or {name,
 * value}), or NULL with err and *status. */
static cJSON *check_header(struct engine *eng, const cJSON *h, int i,
                           const char *auth_key, int *status, char *err,
                           size_t errlen)
{
    static const char *const fields[] = {"name", "secret", "value", NULL};
    const char *name = NULL;
    const char *secret = NULL;
    const char *value = NULL;
    char where[48];
    char sid[40];
    char *sv = NULL;
    cJSON *out = NULL;

    *status = 400;
    snprintf(where, sizeof(where), "custom_headers[%d]", i);
    if (!cJSON_IsObject(h) ||
        util_check_fields(h, where, fields, err, errlen) != 0 ||
        util_opt_string(h, "name", &name, err, errlen) != 0 ||
        util_opt_string(h, "secret", &secret, err, errlen) != 0 ||
        util_opt_string(h, "value", &value, err, errlen) != 0 || name == NULL ||
        (secret == NULL) == (value == NULL)) {
        snprintf(err, errlen,
                 "%s must be {name, secret} or {name, value}: exactly one of "
                 "secret (an account secret) or value (a literal)",
                 where);
        return NULL;
    }
    if (check_header_name(name, where, err, errlen) != 0)
        return NULL;
    if (auth_key != NULL && strcasecmp(name, auth_key) == 0) {
        snprintf(err, errlen, "%s \"%s\" collides with auth_mechanism.key",
                 where, name);
        return NULL;
    }
    if (value != NULL &&
        (strlen(value) > HEADER_VALUE_MAX || strpbrk(value, "\r\n") != NULL)) {
        snprintf(err, errlen, "%s.value must be at most %d bytes on one line",
                 where, HEADER_VALUE_MAX);
        return NULL;
    }
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "name", name);
    if (value != NULL) {
        cJSON_AddStringToObject(out, "value", value);
        return out;
    }
    sv = secrets_value(eng, secret, sid);
    if (sv == NULL) {
        snprintf(err, errlen,
                 "%s.secret \"%.140s\" is not an account secret; create the "
                 "secret first",
                 where, secret);
        cJSON_Delete(out);
        return NULL;
    }
    explicit_bzero(sv, strlen(sv));
    free(sv);
    cJSON_AddStringToObject(out, "secret", sid);
    return out;
}

static cJSON *check_headers(struct engine *eng, const cJSON *hdrs,
                            const cJSON *auth, int *status, char *err,
                            size_t errlen)
{
    const char *key = util_json_str(auth, "key");
    const cJSON *it = NULL;
    cJSON *out = cJSON_CreateArray();
    int i = 0;

    *status = 400;
    if (hdrs == NULL || cJSON_IsNull(hdrs))
        return out;
    if (!cJSON_IsArray(hdrs) || cJSON_GetArraySize(hdrs) > MCP_MAX_HEADERS) {
        snprintf(err, errlen,
                 "'custom_headers' must be an array of at most %d {name, "
                 "secret|value} objects",
                 MCP_MAX_HEADERS);
        goto fail;
    }
    cJSON_ArrayForEach(it, hdrs)
    {
        cJSON *h = check_header(eng, it, i, key, status, err, errlen);
        const cJSON *prev = NULL;

        if (h == NULL)
            goto fail;
        cJSON_ArrayForEach(prev, out)
        {
            if (strcasecmp(
                    cJSON_GetObjectItemCaseSensitive(prev, "name")->valuestring,
                    cJSON_GetObjectItemCaseSensitive(h, "name")->valuestring) ==
                0) {
                snprintf(
                    err, errlen,
                    "custom_headers names must be unique (case-insensitive): "
                    "\"%s\" repeats",
                    cJSON_GetObjectItemCaseSensitive(h, "name")->valuestring);
                cJSON_Delete(h);
                goto fail;
            }
        }
        cJSON_AddItemToArray(out, h);
        i++;
    }
    return out;
fail:
    cJSON_Delete(out);
    return NULL;
}

static int check_name(const char *name, char *err, size_t errlen)
{
    if (!all_chars(name, NAME_MAX_LEN, name_char)) {
        snprintf(err, errlen,
                 "'name' \"%.140s\" is not valid: use 1 to %d letters, digits, "
                 "'-', '_' and '.', e.g. github-readonly",
                 name, NAME_MAX_LEN);
        return -1;
    }
    return 0;
}

/* Sets rec[key] = v (consumed), replacing any earlier value. */
static void set_item(cJSON *rec, const char *key, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(rec, key);
    cJSON_AddItemToObject(rec, key, v);
}

/* Applies the fields of body onto rec (a new record when create). 0 or an
 * HTTP status with err. Lock held (names must stay unique). */
static int apply_body(struct engine *eng, cJSON *all, cJSON *rec,
                      const cJSON *body, int create, char *err, size_t errlen)
{
    const char *name = NULL;
    const char *ep = NULL;
    const char *desc = NULL;
    const cJSON *tools =
        cJSON_GetObjectItemCaseSensitive(body, "allowed_tools");
    const cJSON *auth_in =
        cJSON_GetObjectItemCaseSensitive(body, "auth_mechanism");
    const cJSON *hdrs_in =
        cJSON_GetObjectItemCaseSensitive(body, "custom_headers");
    cJSON *auth = NULL;
    cJSON *hdrs = NULL;
    cJSON *other = NULL;
    int status = 400;

    if (util_check_fields(body, "", cfg_fields, err, errlen) != 0 ||
        util_opt_string(body, "name", &name, err, errlen) != 0 ||
        util_opt_string(body, "endpoint", &ep, err, errlen) != 0 ||
        util_opt_string(body, "description", &desc, err, errlen) != 0)
        return 400;
    if (create && (name == NULL || ep == NULL || tools == NULL)) {
        snprintf(err, errlen,
                 "an MCP config needs 'name', 'endpoint' and 'allowed_tools'");
        return 400;
    }
    if ((name != NULL && check_name(name, err, errlen) != 0) ||
        (ep != NULL && check_endpoint(ep, err, errlen) != 0) ||
        (tools != NULL && !cJSON_IsNull(tools) &&
         check_tools(tools, err, errlen) != 0))
        return 400;
    if (desc != NULL && strlen(desc) > DESC_MAX) {
        snprintf(err, errlen, "'description' is longer than %d characters",
                 DESC_MAX);
        return 400;
    }
    other = name != NULL ? find_in(all, NULL, name) : NULL;
    if (other != NULL && other != rec) {
        snprintf(
            err, errlen,
            "an MCP config named %s already exists (%s); pick another name",
            name, util_json_str(other, "id"));
        return 409;
    }
    if (create || auth_in != NULL)
        auth = check_auth(auth_in, err, errlen);
    else
        auth = cJSON_Duplicate(
            cJSON_GetObjectItemCaseSensitive(rec, "auth_mechanism"), 1);
    if (auth == NULL)
        return 400;
    /* Omitted custom_headers keep the list (re-checked against a new key). */
    if (hdrs_in == NULL && !create)
        hdrs_in = cJSON_GetObjectItemCaseSensitive(rec, "custom_headers");
    hdrs = check_headers(eng, hdrs_in, auth, &status, err, errlen);
    if (hdrs == NULL) {
        cJSON_Delete(auth);
        return status;
    }
    if (name != NULL)
        set_item(rec, "name", cJSON_CreateString(name));
    if (ep != NULL)
        set_item(rec, "endpoint", cJSON_CreateString(ep));
    if (tools != NULL && !cJSON_IsNull(tools))
        set_item(rec, "allowed_tools", cJSON_Duplicate(tools, 1));
    if (desc != NULL)
        set_item(rec, "description", cJSON_CreateString(desc));
    set_item(rec, "auth_mechanism", auth);
    set_item(rec, "custom_headers", hdrs);
    return 0;
}

/* ------------------------------------------------------------ calls */

static cJSON *cfg_view(const void *item)
{
    const cJSON *rec = item;
    cJSON *v = cJSON_Duplicate(rec, 1);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(rec, "description");

    if (d == NULL)
        cJSON_AddNullToObject(v, "description");
    return v;
}

static cJSON *new_record(void)
{
    cJSON *rec = cJSON_CreateObject();
    char id[40];

    util_new_id("mcp", id, sizeof(id));
    cJSON_AddStringToObject(rec, "id", id);
    cJSON_AddStringToObject(rec, "name", "");
    cJSON_AddStringToObject(rec, "endpoint", "");
    cJSON_AddItemToObject(rec, "allowed_tools", cJSON_CreateArray());
    cJSON_AddItemToObject(rec, "auth_mechanism", cJSON_CreateObject());
    cJSON_AddItemToObject(rec, "custom_headers", cJSON_CreateArray());
    cJSON_AddNumberToObject(rec, "create_time_ms", (double)util_now_ms());
    return rec;
}

int mcp_configs_check_id(const char *id, char *err, size_t errlen)
{
    if (store_id_valid(id, "mcp"))
        return 0;
    snprintf(err, errlen, "MCP config %.60s not found: ids look like mcp_…",
             id);
    return 404;
}

static int not_found(const char *id, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "MCP config %s not found; list the MCP configs to see which exist",
             id);
    return 404;
}

int mcp_configs_write(struct engine *eng, const char *id, const cJSON *body,
                      cJSON **view, char *err, size_t errlen)
{
    cJSON *all = NULL;
    cJSON *rec = NULL;
    cJSON *fresh = NULL;
    int status = 0;

    *view = NULL;
    if (id != NULL && (status = mcp_configs_check_id(id, err, errlen)) != 0)
        return status;
    pthread_mutex_lock(&cfg_lock);
    all = load_all_locked(eng);
    if (id != NULL) {
        rec = find_in(all, id, NULL);
        if (rec == NULL) {
            status = not_found(id, err, errlen);
            goto out;
        }
    } else if (cJSON_GetArraySize(all) >= 5000) {
        snprintf(err, errlen,
                 "the account already holds 5000 MCP configs; delete unused "
                 "ones first");
        status = 400;
        goto out;
    } else {
        rec = fresh = new_record();
    }
    status = apply_body(eng, all, rec, body, id == NULL, err, errlen);
    if (status != 0)
        goto out;
    status =
        store_result(save_locked(eng, rec), cfg_view, rec, view, err, errlen,
                     "cannot store the MCP config under %s", eng->state_dir);
out:
    pthread_mutex_unlock(&cfg_lock);
    cJSON_Delete(fresh);
    cJSON_Delete(all);
    return status;
}

/* The record of config id with the lock held and *all (the caller's) the
 * list it is in, or NULL with *status and err (the id is not valid or no
 * config has it) without the lock. */
static cJSON *lock_find(struct engine *eng, const char *id, cJSON **all,
                        int *status, char *err, size_t errlen)
{
    cJSON *rec = NULL;

    *all = NULL;
    *status = mcp_configs_check_id(id, err, errlen);
    if (*status != 0)
        return NULL;
    pthread_mutex_lock(&cfg_lock);
    *all = load_all_locked(eng);
    rec = find_in(*all, id, NULL);
    if (rec == NULL) {
        pthread_mutex_unlock(&cfg_lock);
        cJSON_Delete(*all);
        *all = NULL;
        *status = not_found(id, err, errlen);
    }
    return rec;
}

int mcp_configs_delete(struct engine *eng, const char *id, cJSON **view,
                       char *err, size_t errlen)
{
    cJSON *all = NULL;
    cJSON *rec = NULL;
    int status;

    *view = NULL;
    rec = lock_find(eng, id, &all, &status, err, errlen);
    if (rec == NULL)
        return status;
    status =
        store_result(store_delete(eng->state_dir, "mcp-configs", id), cfg_view,
                     rec, view, err, errlen, "cannot delete MCP config %s", id);
    pthread_mutex_unlock(&cfg_lock);
    cJSON_Delete(all);
    if (status == 0)
        engine_forget_ended_secrets(eng);
    return status;
}

int mcp_configs_get(struct engine *eng, const char *id, cJSON **view, char *err,
                    size_t errlen)
{
    cJSON *all = NULL;
    const cJSON *rec = NULL;
    int status;

    *view = NULL;
    rec = lock_find(eng, id, &all, &status, err, errlen);
    if (rec == NULL)
        return status;
    pthread_mutex_unlock(&cfg_lock);
    *view = cfg_view(rec);
    cJSON_Delete(all);
    return 0;
}

cJSON *mcp_configs_list(struct engine *eng)
{
    cJSON *all = NULL;
    cJSON *views = cJSON_CreateArray();
    const cJSON *it = NULL;

    pthread_mutex_lock(&cfg_lock);
    all = load_all_locked(eng);
    pthread_mutex_unlock(&cfg_lock);
    cJSON_ArrayForEach(it, all)
    {
        cJSON_AddItemToArray(views, cfg_view(it));
    }
    cJSON_Delete(all);
    return views;
}

int mcp_configs_tool_allowed(const cJSON *allowed, const char *name)
{
    const cJSON *it = NULL;

    cJSON_ArrayForEach(it, allowed)
    {
        if (cJSON_IsString(it) && fnmatch(it->valuestring, name, 0) == 0)
            return 1;
    }
    return 0;
}

int mcp_configs_check_spec(const cJSON *body, char *err, size_t errlen)
{
    static const char *const fields[] = {"mcp_config", "secret", NULL};
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(body, "mcp");
    const cJSON *env =
        cJSON_GetObjectItemCaseSensitive(body, "environment_variables");
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(body, "secrets");
    const cJSON *it = NULL;

    if (map == NULL || cJSON_IsNull(map))
        return 0;
    if (!cJSON_IsObject(map) || cJSON_GetArraySize(map) > MCP_MAX_SERVERS) {
        snprintf(
            err, errlen,
            "'mcp' must be an object {ENV_VAR: {mcp_config, secret}} with at "
            "most %d servers",
            MCP_MAX_SERVERS);
        return -1;
    }
    cJSON_ArrayForEach(it, map)
    {
        char where[200];
        const char *cfg = NULL;
        const char *secret = NULL;

        snprintf(where, sizeof(where), "mcp.%.140s", it->string);
        if (!secrets_name_valid(it->string) ||
            strcmp(it->string, "RL_MCP_URL") == 0) {
            snprintf(
                err, errlen,
                "mcp key \"%.140s\" must be a variable name (letters, digits "
                "and _, not RL_MCP_URL): it receives the server's token",
                it->string);
            return -1;
        }
        if (cJSON_GetObjectItemCaseSensitive(env, it->string) != NULL ||
            cJSON_GetObjectItemCaseSensitive(sec, it->string) != NULL) {
            snprintf(
                err, errlen,
                "%s is also set by environment_variables or secrets; keep one",
                it->string);
            return -1;
        }
        if (!cJSON_IsObject(it) ||
            util_check_fields(it, where, fields, err, errlen) != 0 ||
            util_opt_string(it, "mcp_config", &cfg, err, errlen) != 0 ||
            util_opt_string(it, "secret", &secret, err, errlen) != 0 ||
            cfg == NULL || secret == NULL) {
            snprintf(
                err, errlen,
                "%s must be {mcp_config: <id or name>, secret: <secret name>}",
                where);
            return -1;
        }
    }
    return 0;
}

/* The resolved custom headers [{name, value}] of a config, or NULL with err. */
static cJSON *resolve_headers(struct engine *eng, const cJSON *cfg, char *err,
                              size_t errlen)
{
    const cJSON *it = NULL;
    cJSON *out = cJSON_CreateArray();

    cJSON_ArrayForEach(it,
                       cJSON_GetObjectItemCaseSensitive(cfg, "custom_headers"))
    {
        const char *name = util_json_str(it, "name");
        const char *lit = util_json_str(it, "value");
        const char *sid = util_json_str(it, "secret");
        char *v = lit != NULL   ? strdup(lit)
                  : sid != NULL ? secrets_value(eng, sid, NULL)
                                : NULL;
        cJSON *h = NULL;

        if (v == NULL || strpbrk(v, "\r\n") != NULL) {
            snprintf(err, errlen,
                     "MCP config %s: the secret of custom header %s %s",
                     util_json_str(cfg, "name"), name,
                     v == NULL
                         ? "no longer exists; update the config"
                         : "holds a line break and cannot be sent as a header");
            free(v);
            cJSON_Delete(out);
            return NULL;
        }
        h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "name", name);
        cJSON_AddStringToObject(h, "value", v);
        cJSON_AddItemToArray(out, h);
        explicit_bzero(v, strlen(v));
        free(v);
    }
    return out;
}

/* One server entry of spec "_mcp", or NULL with err and *status. */
static cJSON *resolve_server(struct engine *eng, cJSON *all, const cJSON *item,
                             int *status, char *err, size_t errlen)
{
    const char *ref = util_json_str(item, "mcp_config");
    const char *sname = util_json_str(item, "secret");
    const cJSON *cfg = find_in(all, ref, ref);
    cJSON *hdrs = NULL;
    cJSON *e = NULL;
    char *cred = NULL;
    char token[80];

    *status = 400;
    if (cfg == NULL) {
        snprintf(
            err, errlen,
            "mcp.%s.mcp_config \"%.100s\" is not an MCP config id or name; "
            "list the MCP configs to see which exist",
            item->string, ref);
        return NULL;
    }
    cred = secrets_value(eng, sname, NULL);
    if (cred == NULL || strpbrk(cred, "\r\n") != NULL) {
        snprintf(err, errlen, "mcp.%s.secret \"%.100s\" %s", item->string,
                 sname,
                 cred == NULL
                     ? "is not an account secret; create the secret first"
                     : "holds a line break and cannot be sent as a credential");
        goto out;
    }
    hdrs = resolve_headers(eng, cfg, err, errlen);
    if (hdrs == NULL)
        goto out;
    util_random_text(token, 64, "0123456789abcdef"); /* 256 bits */
    e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "env", item->string);
    cJSON_AddStringToObject(e, "token", token);
    cJSON_AddItemToObject(
        e, "config_id",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cfg, "id"), 0));
    cJSON_AddItemToObject(
        e, "name",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cfg, "name"), 0));
    cJSON_AddItemToObject(
        e, "endpoint",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cfg, "endpoint"), 0));
    cJSON_AddItemToObject(
        e, "allowed_tools",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cfg, "allowed_tools"),
                        1));
    cJSON_AddItemToObject(
        e, "auth_mechanism",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cfg, "auth_mechanism"),
                        1));
    cJSON_AddStringToObject(e, "credential", cred);
    cJSON_AddItemToObject(e, "headers", hdrs);
out:
    if (cred != NULL) {
        explicit_bzero(cred, strlen(cred));
        free(cred);
    }
    return e;
}

int mcp_configs_resolve_create(struct engine *eng, const cJSON *body,
                               cJSON *spec, char *err, size_t errlen)
{
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(body, "mcp");
    const cJSON *it = NULL;
    cJSON *all = NULL;
    cJSON *servers = NULL;
    cJSON *env = NULL;
    int status = 0;

    if (!cJSON_IsObject(map) || cJSON_GetArraySize(map) == 0)
        return 0;
    pthread_mutex_lock(&cfg_lock);
    all = load_all_locked(eng);
    pthread_mutex_unlock(&cfg_lock);
    servers = cJSON_CreateArray();
    cJSON_ArrayForEach(it, map)
    {
        cJSON *e = resolve_server(eng, all, it, &status, err, errlen);

        if (e == NULL)
            goto out;
        cJSON_AddItemToArray(servers, e);
    }
    env = cJSON_GetObjectItemCaseSensitive(spec, "_secret_env");
    if (env == NULL)
        env = cJSON_AddObjectToObject(spec, "_secret_env");
    cJSON_AddStringToObject(env, "RL_MCP_URL", MCPHUB_URL);
    cJSON_ArrayForEach(it, servers)
    {
        cJSON_AddStringToObject(
            env, cJSON_GetObjectItemCaseSensitive(it, "env")->valuestring,
            cJSON_GetObjectItemCaseSensitive(it, "token")->valuestring);
    }
    cJSON_AddItemToObject(spec, "_mcp", servers);
    servers = NULL;
    status = 0;
out:
    cJSON_Delete(servers);
    cJSON_Delete(all);
    return status;
}
