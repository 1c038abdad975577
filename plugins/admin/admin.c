/*
 * admin.c - account administration tools for operators: account secrets
 * (list_secrets, create_secret, update_secret, delete_secret) and MCP Hub
 * configs (list_mcp_configs, create_mcp_config, update_mcp_config,
 * delete_mcp_config).
 *
 * Secret values are write-only: they go to the API and never come back in
 * a result or an error. A devbox uses a secret through create_devbox
 * secrets={ENV_VAR: SECRET_NAME}, and an MCP config through the devbox
 * create's mcp map (see docs/tools.md).
 *
 * Config: none.
 */
#include <stdlib.h>
#include <string.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"
#include "schemas.h" /* schema_<file>: schemas/<file>.json, built in */

#define NAME_MAX_LEN 128
#define MAX_HEADERS 8

struct admin {
    const struct rlmcp_host_api *api;
};

static const char *const secret_keys[] = {"id", "name", "create_time_ms",
                                          "update_time_ms", NULL};
static const char *const mcp_keys[] = {
    "id",          "name",           "endpoint",       "allowed_tools",
    "description", "auth_mechanism", "custom_headers", "create_time_ms",
    NULL};

/* ---- helpers ------------------------------------------------------------ */

static bool secret_name_ok(const char *s)
{
    size_t i;

    if (s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (i = 0; s[i] != '\0'; i++) {
        char c = s[i];

        if (i >= NAME_MAX_LEN)
            return false;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

static int arg_secret_name(const struct rlmcp_h *h, const cJSON *args,
                           const char **out)
{
    int rc = rlmcp_h_arg_str(h, args, "name", true, out);

    if (rc != RLMCP_OK || secret_name_ok(*out))
        return rc;
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "argument 'name' (\"%.140s\") is not a valid secret "
                        "name: use 1 to %d letters, digits and _, not "
                        "starting with a digit (e.g. GITHUB_TOKEN)",
                        *out, NAME_MAX_LEN);
}

/*
 * A create or update: POST body to path, reported against what (either
 * NULL: out of memory), answered with the keys of the view it returns.
 */
static int post_view(const struct rlmcp_h *h, const char *path,
                     const char *what, const cJSON *body,
                     const char *const *keys, const char *conflict_remedy)
{
    struct rlmcp_h_req_opts o = {0};
    cJSON *view = NULL;
    int rc;

    o.max_retries = -1;
    o.conflict_remedy = conflict_remedy;
    rc = rlmcp_h_request(h, "POST", path, body, &o, what, &view);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_pick(h, view, keys, NULL);
    cJSON_Delete(view);
    return rc;
}

/* ---- secrets ------------------------------------------------------------ */

static int t_list_secrets(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct admin *ad = ud;
    struct rlmcp_h h = {ad->api, call};
    cJSON *args = NULL, *page = NULL, *res = NULL;
    long long limit = 20;
    char *path = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "limit", false, 1, 5000, &limit);
    if (rc != RLMCP_OK)
        goto out;
    path = rlmcp_h_sprintf("/v1/secrets?limit=%lld", limit);
    if (path == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = rlmcp_h_request(&h, "GET", path, NULL, NULL, "listing secrets", &page);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_page_result(&h, page, "secrets", secret_keys,
                                 "listing secrets", &res);
    if (rc == RLMCP_OK) {
        /* Secrets page by limit only: no cursor to offer. */
        cJSON_DeleteItemFromObjectCaseSensitive(res, "next_starting_after");
        rc = rlmcp_h_result_json(&h, res);
    }
out:
    free(path);
    cJSON_Delete(args);
    cJSON_Delete(page);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* create_secret and update_secret: {name, value}. */
static int secret_write(rlmcp_call *call, const char *aj, size_t al, void *ud,
                        bool create)
{
    struct admin *ad = ud;
    struct rlmcp_h h = {ad->api, call};
    cJSON *args = NULL, *body = NULL;
    const char *name = NULL, *value = NULL;
    char *path = NULL, *what = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = arg_secret_name(&h, args, &name);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "value", true, &value);
    if (rc != RLMCP_OK)
        goto out;
    body = cJSON_CreateObject();
    if (body == NULL ||
        (create && !cJSON_AddStringToObject(body, "name", name)) ||
        !cJSON_AddStringToObject(body, "value", value)) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    path = create ? rlmcp_h_sprintf("/v1/secrets")
                  : rlmcp_h_sprintf("/v1/secrets/%s", name);
    what =
        rlmcp_h_sprintf("%s secret %s", create ? "creating" : "updating", name);
    /* A create's 409 is the name taken (an update has no other 409). */
    rc = post_view(&h, path, what, body, secret_keys,
                   create ? "A secret with this name already exists: pick "
                            "another name. update_secret changes the value "
                            "of the existing one."
                          : NULL);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(body);
    return rlmcp_h_ret(rc);
}

static int t_create_secret(rlmcp_call *call, const char *aj, size_t al,
                           void *ud)
{
    return secret_write(call, aj, al, ud, true);
}

static int t_update_secret(rlmcp_call *call, const char *aj, size_t al,
                           void *ud)
{
    return secret_write(call, aj, al, ud, false);
}

static int t_delete_secret(rlmcp_call *call, const char *aj, size_t al,
                           void *ud)
{
    struct admin *ad = ud;
    struct rlmcp_h h = {ad->api, call};
    cJSON *args = NULL, *view = NULL, *res = NULL;
    const cJSON *id = NULL;
    const char *name = NULL;
    char *path = NULL, *what = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = arg_secret_name(&h, args, &name);
    if (rc != RLMCP_OK)
        goto out;
    path = rlmcp_h_sprintf("/v1/secrets/%s/delete", name);
    what = rlmcp_h_sprintf("deleting secret %s", name);
    rc = rlmcp_h_request(&h, "POST", path, NULL, NULL, what, &view);
    if (rc != RLMCP_OK)
        goto out;
    res = cJSON_CreateObject();
    id = cJSON_GetObjectItemCaseSensitive(view, "id");
    if (cJSON_IsString(id))
        cJSON_AddStringToObject(res, "id", id->valuestring);
    cJSON_AddStringToObject(res, "name", name);
    cJSON_AddBoolToObject(res, "deleted", true);
    rc = rlmcp_h_result_json(&h, res);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* ---- MCP configs -------------------------------------------------------- */

static int check_endpoint(const struct rlmcp_h *h, const char *ep)
{
    if (strncmp(ep, "http://", 7) == 0 || strncmp(ep, "https://", 8) == 0)
        return RLMCP_OK;
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "argument 'endpoint' (\"%.200s\") must be an http:// "
                        "or https:// URL of an MCP server (Streamable HTTP)",
                        ep);
}

static int check_tools(const struct rlmcp_h *h, const cJSON *tools)
{
    const cJSON *it = NULL;

    if (!cJSON_IsArray(tools) || cJSON_GetArraySize(tools) == 0)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'allowed_tools' must be a non-empty "
                            "array of glob patterns, e.g. [\"*\"]");
    cJSON_ArrayForEach(it, tools)
    {
        if (!cJSON_IsString(it) || it->valuestring[0] == '\0')
            return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                "argument 'allowed_tools' must hold "
                                "non-empty strings (glob patterns)");
    }
    return RLMCP_OK;
}

static int check_headers(const struct rlmcp_h *h, const cJSON *hdrs)
{
    const cJSON *it = NULL;

    if (!cJSON_IsArray(hdrs) || cJSON_GetArraySize(hdrs) > MAX_HEADERS)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'custom_headers' must be an array of "
                            "at most %d {name, secret|value} objects",
                            MAX_HEADERS);
    cJSON_ArrayForEach(it, hdrs)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, "secret");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, "value");

        if (!cJSON_IsString(n) || (cJSON_IsString(s) == cJSON_IsString(v)))
            return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                "each custom_headers entry needs a string "
                                "'name' and exactly one of 'secret' or "
                                "'value'");
    }
    return RLMCP_OK;
}

/* The create/update body from the arguments (all optional on update). */
static int mcp_body(const struct rlmcp_h *h, const cJSON *args, bool create,
                    cJSON **out)
{
    static const char *const strs[] = {"name", "endpoint", "description", NULL};
    static const char *const objs[] = {"allowed_tools", "auth_mechanism",
                                       "custom_headers", NULL};
    const cJSON *tools =
        cJSON_GetObjectItemCaseSensitive(args, "allowed_tools");
    const cJSON *hdrs =
        cJSON_GetObjectItemCaseSensitive(args, "custom_headers");
    const cJSON *auth =
        cJSON_GetObjectItemCaseSensitive(args, "auth_mechanism");
    const char *s = NULL;
    cJSON *body = cJSON_CreateObject();
    size_t i;
    int rc = RLMCP_OK;

    *out = NULL;
    if (body == NULL)
        return RLMCP_ENOMEM;
    for (i = 0; strs[i] != NULL && rc == RLMCP_OK; i++) {
        s = NULL;
        rc = rlmcp_h_arg_str(h, args, strs[i], create && i < 2, &s);
        if (rc == RLMCP_OK && s != NULL && i == 1)
            rc = check_endpoint(h, s);
        if (rc == RLMCP_OK && s != NULL)
            cJSON_AddStringToObject(body, strs[i], s);
    }
    if (rc == RLMCP_OK && (create || tools != NULL))
        rc = check_tools(h, tools);
    if (rc == RLMCP_OK && hdrs != NULL)
        rc = check_headers(h, hdrs);
    if (rc == RLMCP_OK && auth != NULL && !cJSON_IsObject(auth))
        rc = rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'auth_mechanism' must be an object "
                          "{type: bearer|header|basic, key?}");
    for (i = 0; objs[i] != NULL && rc == RLMCP_OK; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, objs[i]);

        if (v != NULL)
            cJSON_AddItemToObject(body, objs[i], cJSON_Duplicate(v, true));
    }
    if (rc != RLMCP_OK) {
        cJSON_Delete(body);
        return rc;
    }
    *out = body;
    return RLMCP_OK;
}

static int t_list_mcp(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    static const struct rlmcp_h_list_filter filters[] = {{"name", false}};
    struct admin *ad = ud;
    struct rlmcp_h h = {ad->api, call};
    cJSON *args = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_list_args(&h, args, "/v1/mcp-configs", filters,
                               sizeof(filters) / sizeof(filters[0]), 5000,
                               "mcp_configs", mcp_keys, "listing MCP configs");
    cJSON_Delete(args);
    return rlmcp_h_ret(rc);
}

static int mcp_write(rlmcp_call *call, const char *aj, size_t al, void *ud,
                     bool create)
{
    struct admin *ad = ud;
    struct rlmcp_h h = {ad->api, call};
    cJSON *args = NULL, *body = NULL;
    const char *id = NULL;
    char *path = NULL, *what = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK && !create)
        rc = rlmcp_h_arg_id(&h, args, "mcp_config_id", true, &id);
    if (rc == RLMCP_OK)
        rc = mcp_body(&h, args, create, &body);
    if (rc != RLMCP_OK)
        goto out;
    path = create ? rlmcp_h_sprintf("/v1/mcp-configs")
                  : rlmcp_h_sprintf("/v1/mcp-configs/%s", id);
    what = create ? rlmcp_h_sprintf("creating MCP config")
                  : rlmcp_h_sprintf("updating MCP config %s", id);
    rc = post_view(&h, path, what, body, mcp_keys,
                   "An MCP config with this name already exists: pick another "
                   "name, or change the existing one. update_mcp_config "
                   "changes it by its id, which list_mcp_configs shows.");
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(body);
    return rlmcp_h_ret(rc);
}

static int t_create_mcp(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return mcp_write(call, aj, al, ud, true);
}

static int t_update_mcp(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return mcp_write(call, aj, al, ud, false);
}

static int t_delete_mcp(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct admin *ad = ud;
    struct rlmcp_h h = {ad->api, call};

    return rlmcp_h_ret(rlmcp_h_delete_by_id(&h, aj, al, "mcp_config_id",
                                            "/v1/mcp-configs/", "/delete",
                                            "deleting MCP config"));
}

/* ---- registration ------------------------------------------------------- */

#define RO_ANN                                                                 \
    "{\"readOnlyHint\":true,\"destructiveHint\":false,"                        \
    "\"idempotentHint\":true,\"openWorldHint\":true}"
#define WRITE_ANN                                                              \
    "{\"readOnlyHint\":false,\"destructiveHint\":false,"                       \
    "\"idempotentHint\":false,\"openWorldHint\":true}"
#define UPDATE_ANN                                                             \
    "{\"readOnlyHint\":false,\"destructiveHint\":true,"                        \
    "\"idempotentHint\":true,\"openWorldHint\":true}"

static const struct rlmcp_h_tool specs[] = {
    {"list_secrets", "List account secrets",
     "List the account's secrets by name (newest first). Values are never "
     "shown.",
     schema_list_secrets, schema_list_secrets_out, RO_ANN, t_list_secrets,
     false},
    {"create_secret", "Create an account secret",
     "Store a secret value under a unique name (an environment variable "
     "name). Devboxes get it with create_devbox "
     "secrets={ENV_VAR: SECRET_NAME}; MCP configs use it as a credential. "
     "The value is write-only.",
     schema_create_secret, schema_secret_out, WRITE_ANN, t_create_secret,
     false},
    {"update_secret", "Change a secret's value",
     "Replace the value of an existing secret. Devboxes created later get "
     "the new value; running ones keep theirs.",
     schema_update_secret, schema_secret_out, UPDATE_ANN, t_update_secret,
     false},
    {"delete_secret", "Delete an account secret",
     "Delete a secret permanently. Devboxes already created with it keep "
     "their copy; new creates naming it fail.",
     schema_delete_secret, schema_delete_secret_out, UPDATE_ANN,
     t_delete_secret, false},
    {"list_mcp_configs", "List MCP Hub configs",
     "List MCP Hub configs (upstream MCP servers and their allowed tools), "
     "optionally by name prefix. Page with starting_after.",
     schema_list_mcp_configs, schema_list_mcp_configs_out, RO_ANN, t_list_mcp,
     false},
    {"create_mcp_config", "Create an MCP Hub config",
     "Register an upstream MCP server (Streamable HTTP endpoint) and the "
     "tools devboxes may use, as glob patterns. A devbox created with "
     "mcp={ENV: {mcp_config, secret}} reaches it through $RL_MCP_URL with "
     "the token in $ENV; the credential secret never enters the devbox.",
     schema_create_mcp_config, schema_mcp_config_out, WRITE_ANN, t_create_mcp,
     false},
    {"update_mcp_config", "Update an MCP Hub config",
     "Change fields of an MCP config; custom_headers replaces the whole "
     "list. Devboxes created later see the change.",
     schema_update_mcp_config, schema_mcp_config_out, UPDATE_ANN, t_update_mcp,
     false},
    {"delete_mcp_config", "Delete an MCP Hub config",
     "Delete an MCP config permanently.", schema_delete_mcp_config,
     schema_delete_mcp_config_out, UPDATE_ANN, t_delete_mcp, false},
};

static int ad_setup(void *state, rlmcp_plugin *self,
                    const struct rlmcp_host_api *api, const cJSON *cfg)
{
    struct admin *ad = state;

    (void)cfg;
    ad->api = api;
    return rlmcp_h_register_tools(self, api, specs,
                                  sizeof(specs) / sizeof(specs[0]), ad, 60000);
}

RLMCP_H_PLUGIN_DEFINE("admin", "0.1.0",
                      "Account secrets and MCP Hub configs (for operators)",
                      struct admin, ad_setup, rlmcp_h_shutdown_free, NULL)
