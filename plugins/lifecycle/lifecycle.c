/*
 * lifecycle.c - devbox lifecycle tools: create, list, get, update, suspend,
 * resume, shutdown, keep alive, renew (lease), resource usage.
 *
 * Config (all optional):
 *   create_wait_seconds      how long create/resume wait for `running` (120)
 *   min_keep_alive_seconds   lowest accepted keep_alive_time_seconds (60)
 *   max_keep_alive_seconds   highest accepted keep_alive_time_seconds (172800)
 *   default_keep_alive_seconds  sent when the caller gives none (unset)
 *   default_metadata         {k: v} merged under the caller's metadata
 *   default_blueprint_name   used when no blueprint/snapshot is given
 *   hide_shutdown            list_devboxes hides shutdown devboxes (true)
 *   account_secrets          create_devbox offers `secrets` and `mcp`
 *                            (true; false for surfaces without them)
 * Out-of-range keep-alive values are rejected (not clamped) so the agent
 * learns the limit instead of getting a silently shorter devbox.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"
#include "schemas.h" /* schema_<file>: schemas/<file>.json, built in */

struct lc {
    const struct rlmcp_host_api *api;
    long long wait_s;
    long long min_keep, max_keep, default_keep;
    char *create_schema; /* schema_create_devbox for this config */
    char *renew_schema;  /* schema_renew_devbox for this config */
    cJSON *default_metadata;
    char *default_blueprint;
    bool hide_shutdown;
    bool secrets; /* create_devbox offers secrets and mcp */
};

#define RO_ANN                                                                 \
    "{\"readOnlyHint\":true,\"destructiveHint\":false,"                        \
    "\"idempotentHint\":true,\"openWorldHint\":true}"

/* ---------------------------------------------------------------------- */

static const char *const running_set[] = {"running", "failure", "shutdown",
                                          NULL};
static const char *const suspended_set[] = {"suspended", "failure", "shutdown",
                                            NULL};

static char *what_devbox(const char *id)
{
    return rlmcp_h_sprintf("devbox %s", id);
}

/* Report a devbox that did not reach `running` in time, or failed. */
static int not_ready(const struct rlmcp_h *h, const cJSON *dbx, const char *id,
                     long long waited_s)
{
    const char *st = rlmcp_h_devbox_status(dbx);
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(dbx, "failure_reason");
    /* The local engine says why in words, too. */
    const cJSON *fm = cJSON_GetObjectItemCaseSensitive(dbx, "failure_message");

    if (strcmp(st, "failure") == 0 || strcmp(st, "shutdown") == 0)
        return rlmcp_h_fail_remedy(
            h, RLMCP_ERR_DEVBOX_NOT_RUNNING,
            "Create a new devbox; check blueprint and launch_commands if it "
            "fails again.",
            "devbox %s stopped while starting: status %s%s%s%s%.600s", id, st,
            cJSON_IsString(fr) ? ", failure_reason " : "",
            cJSON_IsString(fr) ? fr->valuestring : "",
            cJSON_IsString(fm) ? ": " : "",
            cJSON_IsString(fm) ? fm->valuestring : "");
    if (rlmcp_h_devbox_preparing(h, dbx) != RLMCP_OK)
        return RLMCP_H_REPORTED;
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_DEVBOX_NOT_READY,
        "Poll get_devbox with this devbox_id until status is running, or "
        "shut it down with shutdown_devbox.",
        "devbox_id=%s is not running yet after %lld s (status %s)", id,
        waited_s, st);
}

/* A compact view of a devbox for lists: what an agent decides on. */
static cJSON *devbox_summary(const cJSON *dbx)
{
    static const char *const keys[] = {"id",
                                       "name",
                                       "status",
                                       "blueprint_id",
                                       "snapshot_id",
                                       "create_time_ms",
                                       "end_time_ms",
                                       "metadata",
                                       "failure_reason",
                                       "shutdown_reason",
                                       NULL};
    cJSON *out = cJSON_CreateObject();
    size_t i;

    for (i = 0; out != NULL && keys[i] != NULL; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(dbx, keys[i]);
        if (v == NULL || cJSON_IsNull(v))
            continue;
        cJSON_AddItemToObject(out, keys[i], cJSON_Duplicate(v, true));
    }
    return out;
}

/* ---- create_devbox ------------------------------------------------------ */

static int keep_alive_ok(const struct lc *lc, const struct rlmcp_h *h,
                         long long v)
{
    if (v < lc->min_keep || v > lc->max_keep)
        return rlmcp_h_fail_remedy(
            h, RLMCP_ERR_INVALID_ARGUMENT,
            "Pick a keep_alive_time_seconds inside the range this server "
            "allows.",
            "keep_alive_time_seconds=%lld is outside the allowed range "
            "%lld-%lld seconds",
            v, lc->min_keep, lc->max_keep);
    return RLMCP_OK;
}

/* Copy optional string args into the create body. */
static int add_strings(const struct rlmcp_h *h, const cJSON *args, cJSON *body,
                       int *n_sources)
{
    static const char *const names[] = {"name", "blueprint_id",
                                        "blueprint_name", "snapshot_id", NULL};
    size_t i;

    for (i = 0; names[i] != NULL; i++) {
        const char *v = NULL;
        int rc = rlmcp_h_arg_str(h, args, names[i], false, &v);
        if (rc != RLMCP_OK)
            return rc;
        if (v == NULL)
            continue;
        if (i > 0)
            (*n_sources)++;
        cJSON_AddStringToObject(body, names[i], v);
    }
    if (*n_sources > 1)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "give at most one of blueprint_id, "
                            "blueprint_name and snapshot_id");
    return RLMCP_OK;
}

static int build_launch(const struct lc *lc, const struct rlmcp_h *h,
                        const cJSON *args, cJSON *body)
{
    cJSON *lp = cJSON_CreateObject();
    const cJSON *cmds =
        cJSON_GetObjectItemCaseSensitive(args, "launch_commands");
    const cJSON *it = NULL;
    const char *size = NULL, *arch = NULL, *on_idle = NULL;
    long long keep = lc->default_keep, idle = 0;
    int rc;

    if (lp == NULL)
        return RLMCP_ENOMEM;
    cJSON_AddItemToObject(body, "launch_parameters", lp);
    rc = rlmcp_h_arg_str(h, args, "resource_size", false, &size);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "architecture", false, &arch);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "on_idle", false, &on_idle);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(h, args, "keep_alive_time_seconds", false, 1,
                             10000000, &keep);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(h, args, "idle_time_seconds", false, 1, 10000000,
                             &idle);
    if (rc != RLMCP_OK)
        return rc;
    if (keep > 0) {
        rc = keep_alive_ok(lc, h, keep);
        if (rc != RLMCP_OK)
            return rc;
        cJSON_AddNumberToObject(lp, "keep_alive_time_seconds", (double)keep);
    }
    if (size != NULL)
        cJSON_AddStringToObject(lp, "resource_size_request", size);
    if (arch != NULL)
        cJSON_AddStringToObject(lp, "architecture", arch);
    if ((idle > 0) != (on_idle != NULL))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "idle_time_seconds and on_idle go together: "
                            "give both or neither");
    if (idle > 0) {
        cJSON *lcfg = cJSON_AddObjectToObject(lp, "lifecycle");
        cJSON *ai = cJSON_AddObjectToObject(lcfg, "after_idle");
        cJSON_AddNumberToObject(ai, "idle_time_seconds", (double)idle);
        cJSON_AddStringToObject(ai, "on_idle", on_idle);
    }
    if (cmds != NULL && !cJSON_IsNull(cmds)) {
        if (!cJSON_IsArray(cmds))
            return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                "argument 'launch_commands' must be an "
                                "array of strings");
        cJSON_ArrayForEach(it, cmds)
        {
            if (!cJSON_IsString(it))
                return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                    "argument 'launch_commands' must be an "
                                    "array of strings");
        }
        cJSON_AddItemToObject(lp, "launch_commands",
                              cJSON_Duplicate(cmds, true));
    }
    return RLMCP_OK;
}

static int build_metadata(const struct lc *lc, const struct rlmcp_h *h,
                          const cJSON *args, cJSON *body)
{
    const cJSON *user = NULL;
    const cJSON *it = NULL;
    cJSON *md = NULL;
    int rc = rlmcp_h_arg_str_map(h, args, "metadata", &user);

    if (rc != RLMCP_OK)
        return rc;
    if (user == NULL && lc->default_metadata == NULL)
        return RLMCP_OK;
    md = lc->default_metadata != NULL
             ? cJSON_Duplicate(lc->default_metadata, true)
             : cJSON_CreateObject();
    if (md == NULL)
        return RLMCP_ENOMEM;
    cJSON_ArrayForEach(it, user)
    {
        cJSON_DeleteItemFromObjectCaseSensitive(md, it->string);
        cJSON_AddStringToObject(md, it->string, it->valuestring);
    }
    cJSON_AddItemToObject(body, "metadata", md);
    return RLMCP_OK;
}

/* Write {path: contents} with write_file_contents. */
static int write_files(const struct rlmcp_h *h, const char *id,
                       const cJSON *files)
{
    const cJSON *it = NULL;
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s/write_file_contents", id);
    int rc = RLMCP_OK;

    if (path == NULL)
        return RLMCP_ENOMEM;
    cJSON_ArrayForEach(it, files)
    {
        cJSON *body = cJSON_CreateObject();
        char *what = rlmcp_h_sprintf("writing %s on devbox %s", it->string, id);
        cJSON_AddStringToObject(body, "file_path", it->string);
        cJSON_AddStringToObject(body, "contents", it->valuestring);
        rc = rlmcp_h_request(h, "POST", path, body, NULL,
                             what != NULL ? what : "write", NULL);
        cJSON_Delete(body);
        free(what);
        if (rc != RLMCP_OK)
            break;
    }
    free(path);
    return rc;
}

/* mcp: {ENV_VAR: {mcp_config, secret}}, both strings; *out borrowed. */
static int arg_mcp(const struct rlmcp_h *h, const cJSON *args,
                   const cJSON **out)
{
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(args, "mcp");
    const cJSON *it = NULL;

    if (map == NULL || cJSON_IsNull(map))
        return RLMCP_OK;
    if (!cJSON_IsObject(map))
        goto bad;
    cJSON_ArrayForEach(it, map)
    {
        if (!cJSON_IsString(
                cJSON_GetObjectItemCaseSensitive(it, "mcp_config")) ||
            !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, "secret")) ||
            cJSON_GetArraySize(it) != 2)
            goto bad;
    }
    *out = map;
    return RLMCP_OK;
bad:
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "argument 'mcp' must be {ENV_VAR: {mcp_config: <id or "
                        "name>, secret: <secret name>}}");
}

/* The POST /v1/devboxes body from the arguments; files and wait too. */
static int create_body(struct lc *lc, const struct rlmcp_h *h,
                       const cJSON *args, cJSON *body, const cJSON **files,
                       bool *wait)
{
    const cJSON *env = NULL;
    const cJSON *secrets = NULL;
    const cJSON *mcp = NULL;
    int n_sources = 0;
    int rc = add_strings(h, args, body, &n_sources);

    if (rc == RLMCP_OK && n_sources == 0 && lc->default_blueprint != NULL)
        cJSON_AddStringToObject(body, "blueprint_name", lc->default_blueprint);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str_map(h, args, "environment_variables", &env);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str_map(h, args, "secrets", &secrets);
    if (rc == RLMCP_OK)
        rc = arg_mcp(h, args, &mcp);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str_map(h, args, "files", files);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(h, args, "wait", wait);
    if (rc == RLMCP_OK)
        rc = build_launch(lc, h, args, body);
    if (rc == RLMCP_OK)
        rc = build_metadata(lc, h, args, body);
    if (rc != RLMCP_OK)
        return rc;
    if (*files != NULL && !*wait)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "files need the devbox running: drop wait=false "
                            "or write them later with write_file");
    if (env != NULL)
        cJSON_AddItemToObject(body, "environment_variables",
                              cJSON_Duplicate(env, true));
    if (secrets != NULL)
        cJSON_AddItemToObject(body, "secrets", cJSON_Duplicate(secrets, true));
    if (mcp != NULL)
        cJSON_AddItemToObject(body, "mcp", cJSON_Duplicate(mcp, true));
    return RLMCP_OK;
}

/* Wait until the new devbox runs, then write the files into it. */
static int await_running(struct lc *lc, const struct rlmcp_h *h, const char *id,
                         const cJSON *files, cJSON **ready)
{
    int rc = rlmcp_h_devbox_wait(h, id, running_set,
                                 (uint64_t)lc->wait_s * 1000u, ready);

    if (rc != RLMCP_OK)
        return rc;
    if (strcmp(rlmcp_h_devbox_status(*ready), "running") != 0)
        return not_ready(h, *ready, id, lc->wait_s);
    if (files != NULL)
        return write_files(h, id, files);
    return RLMCP_OK;
}

static int t_create(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct lc *lc = ud;
    struct rlmcp_h h = {lc->api, call};
    cJSON *args = NULL, *body = NULL, *dbx = NULL, *ready = NULL;
    const cJSON *files = NULL;
    const cJSON *idj = NULL;
    bool wait = true;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc != RLMCP_OK)
        goto out;
    body = cJSON_CreateObject();
    if (body == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = create_body(lc, &h, args, body, &files, &wait);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_request(&h, "POST", "/v1/devboxes", body, NULL,
                             "creating a devbox", &dbx);
    if (rc != RLMCP_OK)
        goto out;
    idj = cJSON_GetObjectItemCaseSensitive(dbx, "id");
    if (!cJSON_IsString(idj) || !rlmcp_h_id_valid(idj->valuestring)) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INTERNAL,
                          "the Runloop API returned a devbox without an id");
        goto out;
    }
    if (wait)
        rc = await_running(lc, &h, idj->valuestring, files, &ready);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_json(&h, ready != NULL ? ready : dbx);
out:
    cJSON_Delete(args);
    cJSON_Delete(body);
    cJSON_Delete(dbx);
    cJSON_Delete(ready);
    return rlmcp_h_ret(rc);
}

/* ---- list_devboxes --------------------------------------------------------
 */

static int t_list(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct lc *lc = ud;
    struct rlmcp_h h = {lc->api, call};
    cJSON *args = NULL, *page = NULL, *out = NULL, *arr = NULL;
    const cJSON *items = NULL, *it = NULL, *last = NULL;
    const char *status = NULL, *after = NULL;
    long long limit = 20;
    char *path = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "status", false, &status);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_page(&h, args, 100, &after, &limit);
    if (rc != RLMCP_OK)
        goto out;
    if (status != NULL && !rlmcp_h_id_valid(status)) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'status' is not a devbox status");
        goto out;
    }
    path = rlmcp_h_sprintf("/v1/devboxes?limit=%lld%s%s%s%s", limit,
                           status ? "&status=" : "", status ? status : "",
                           after ? "&starting_after=" : "", after ? after : "");
    if (path == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc =
        rlmcp_h_request(&h, "GET", path, NULL, NULL, "listing devboxes", &page);
    if (rc != RLMCP_OK)
        goto out;
    items = cJSON_GetObjectItemCaseSensitive(page, "devboxes");
    if (!cJSON_IsArray(items)) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INTERNAL,
                          "listing devboxes: the Runloop API answered "
                          "without a devboxes list");
        goto out;
    }
    out = cJSON_CreateObject();
    arr = cJSON_AddArrayToObject(out, "devboxes");
    cJSON_ArrayForEach(it, items)
    {
        last = it;
        if (status == NULL && lc->hide_shutdown &&
            strcmp(rlmcp_h_devbox_status(it), "shutdown") == 0)
            continue;
        cJSON_AddItemToArray(arr, devbox_summary(it));
    }
    cJSON_AddBoolToObject(
        out, "has_more",
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(page, "has_more")));
    if (last != NULL &&
        cJSON_IsString(cJSON_GetObjectItemCaseSensitive(last, "id")) &&
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(page, "has_more")))
        cJSON_AddStringToObject(
            out, "next_starting_after",
            cJSON_GetObjectItemCaseSensitive(last, "id")->valuestring);
    rc = rlmcp_h_result_json(&h, out);
out:
    free(path);
    cJSON_Delete(args);
    cJSON_Delete(page);
    cJSON_Delete(out);
    return rlmcp_h_ret(rc);
}

/* ---- simple per-devbox calls ------------------------------------------------
 */

/*
 * One request on one devbox: method + "/v1/devboxes/{id}" + suffix. The
 * answer (an object) is the result; empty answers become `empty`.
 */
static int devbox_call(struct lc *lc, rlmcp_call *call, const char *aj,
                       size_t al, const char *method, const char *suffix,
                       bool shutdown)
{
    struct rlmcp_h h = {lc->api, call};
    struct rlmcp_h_req_opts o = {0};
    cJSON *args = NULL, *got = NULL, *res = NULL;
    const char *id = NULL;
    bool force = false;
    char *path = NULL, *what = NULL;
    int rc;

    o.max_retries = -1;
    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK && shutdown)
        rc = rlmcp_h_arg_bool(&h, args, "force", &force);
    if (rc != RLMCP_OK)
        goto out;
    /* A shutdown's 409 (snapshot in progress) must not be retried. */
    if (shutdown) {
        o.max_retries = 0;
        o.conflict_remedy =
            "The devbox is busy: a snapshot of it is in progress, or it is "
            "changing state (see the message). Wait a little and call "
            "shutdown_devbox again, or pass force=true to shut it down "
            "without waiting for the snapshot.";
    }
    path = rlmcp_h_sprintf("/v1/devboxes/%s%s%s", id, suffix,
                           force ? "?force=true" : "");
    what = what_devbox(id);
    rc = rlmcp_h_request(&h, method, path, NULL, &o, what, &got);
    if (rc != RLMCP_OK)
        goto out;
    /* An empty answer (keep_alive's {}) becomes {devbox_id, ok}. */
    if (cJSON_IsObject(got) && got->child != NULL) {
        rc = rlmcp_h_result_json(&h, got);
        goto out;
    }
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "devbox_id", id);
    cJSON_AddBoolToObject(res, "ok", true);
    rc = rlmcp_h_result_json(&h, res);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(got);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

static int t_get(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return devbox_call(ud, call, aj, al, "GET", "", false);
}

static int t_shutdown(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return devbox_call(ud, call, aj, al, "POST", "/shutdown", true);
}

static int t_keep_alive(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return devbox_call(ud, call, aj, al, "POST", "/keep_alive", false);
}

/* ---- renew_devbox ------------------------------------------------------ */

/* A backend without the renew route (Runloop's API cannot extend a
 * lifetime): said as such when the devbox itself is there. */
static int renew_unsupported(const struct rlmcp_h *h, const char *id,
                             long status, const char *msg, const char *what)
{
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s", id);
    bool exists = false;
    int rc = rlmcp_h_exists(h, path, what, &exists);

    free(path);
    if (rc != RLMCP_OK)
        return rc;
    if (!exists)
        return rlmcp_h_fail_on_devbox(h, id, status, msg, what);
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_INVALID_ARGUMENT,
        "This backend cannot extend a devbox's lifetime (Runloop's API has "
        "no renewal; the local engine has): create the devbox with a "
        "longer keep_alive_time_seconds, or snapshot it and create a new one "
        "from the snapshot.",
        "%s: the backend has no lease renewal (POST "
        "/v1/devboxes/%s/renew answered HTTP %ld)",
        what, id, status);
}

/* {devbox_id, status, keep_alive_time_seconds, expires_at, expires_at_ms}
 * from the renewed DevboxView (its lifetime_end_ms). */
static int renew_result(const struct rlmcp_h *h, const char *id,
                        const cJSON *view, long long secs)
{
    const cJSON *end =
        cJSON_GetObjectItemCaseSensitive(view, "lifetime_end_ms");
    cJSON *res = NULL;
    char when[40] = "";
    struct tm tm;
    time_t t;
    int rc;

    if (!cJSON_IsNumber(end))
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "devbox %s: the renewal's answer has no "
                            "lifetime_end_ms",
                            id);
    t = (time_t)(end->valuedouble / 1000);
    if (gmtime_r(&t, &tm) == NULL ||
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "devbox %s: lifetime_end_ms is not a time", id);
    res = cJSON_CreateObject();
    if (res == NULL)
        return RLMCP_ENOMEM;
    cJSON_AddStringToObject(res, "devbox_id", id);
    if (rlmcp_h_devbox_status(view)[0] != '\0')
        cJSON_AddStringToObject(res, "status", rlmcp_h_devbox_status(view));
    cJSON_AddNumberToObject(res, "keep_alive_time_seconds", (double)secs);
    snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03dZ",
             (int)((long long)end->valuedouble % 1000));
    cJSON_AddStringToObject(res, "expires_at", when);
    cJSON_AddNumberToObject(res, "expires_at_ms", end->valuedouble);
    rc = rlmcp_h_result_json(h, res);
    cJSON_Delete(res);
    return rc;
}

static int t_renew(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct lc *lc = ud;
    struct rlmcp_h h = {lc->api, call};
    cJSON *args = NULL, *body = NULL, *got = NULL;
    const char *id = NULL;
    char *path = NULL, *what = NULL, *msg = NULL;
    long long secs = 0;
    long status = 0;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "keep_alive_time_seconds", true, 1,
                             10000000, &secs);
    if (rc == RLMCP_OK)
        rc = keep_alive_ok(lc, &h, secs);
    if (rc != RLMCP_OK)
        goto out;
    body = cJSON_CreateObject();
    path = rlmcp_h_sprintf("/v1/devboxes/%s/renew", id);
    what = rlmcp_h_sprintf("renewing devbox %s", id);
    if (body == NULL || path == NULL || what == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    cJSON_AddNumberToObject(body, "keep_alive_time_seconds", (double)secs);
    rc = rlmcp_h_request_status(&h, "POST", path, body, NULL, what, &status,
                                &got, &msg);
    if (rc != RLMCP_OK)
        goto out;
    if (status == 404 || status == 405 || status == 501)
        rc = renew_unsupported(&h, id, status, msg, what);
    else if (status < 200 || status > 299)
        rc = rlmcp_h_fail_on_devbox(&h, id, status, msg, what);
    else
        rc = renew_result(&h, id, got, secs);
out:
    free(path);
    free(what);
    free(msg);
    cJSON_Delete(args);
    cJSON_Delete(body);
    cJSON_Delete(got);
    return rlmcp_h_ret(rc);
}

/* A number of obj's object `o`, or -1. */
static double num_in(const cJSON *obj, const char *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, o), key);

    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/*
 * The accumulated usage, and when the backend reports the running
 * devbox's current figures (devboxd's `current`), the CPU rate from two
 * reads USAGE_SAMPLE_MS apart.
 */
#define USAGE_SAMPLE_MS 500

static int t_usage(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct lc *lc = ud;
    struct rlmcp_h h = {lc->api, call};
    cJSON *args = NULL, *first = NULL, *got = NULL;
    const char *id = NULL;
    char *path = NULL, *what = NULL;
    double c0, c1, t0, t1;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc != RLMCP_OK)
        goto out;
    path = rlmcp_h_sprintf("/v1/devboxes/%s/usage", id);
    what = what_devbox(id);
    rc = rlmcp_h_request(&h, "GET", path, NULL, NULL, what, &first);
    if (rc != RLMCP_OK || num_in(first, "current", "cpu_seconds") < 0) {
        got = first;
        first = NULL;
        goto answer;
    }
    rc = lc->api->sleep_ms(call, USAGE_SAMPLE_MS);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_request(&h, "GET", path, NULL, NULL, what, &got);
    if (rc != RLMCP_OK)
        goto out;
    c0 = num_in(first, "current", "cpu_seconds");
    c1 = num_in(got, "current", "cpu_seconds");
    t0 = num_in(first, "current", "sampled_at_ms");
    t1 = num_in(got, "current", "sampled_at_ms");
    if (c1 >= c0 && c0 >= 0 && t1 > t0)
        cJSON_AddNumberToObject(
            cJSON_GetObjectItemCaseSensitive(got, "current"), "cpu_cores_used",
            (c1 - c0) / ((t1 - t0) / 1000.0));
answer:
    if (rc == RLMCP_OK)
        rc = cJSON_IsObject(got) ? rlmcp_h_result_json(&h, got)
                                 : rlmcp_h_fail(&h, RLMCP_ERR_INTERNAL,
                                                "%s: the usage answer is not "
                                                "an object",
                                                what);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(first);
    cJSON_Delete(got);
    return rlmcp_h_ret(rc);
}

/* ---- suspend / resume: act, then wait for the target state
 * -------------------- */

static int transition(struct lc *lc, rlmcp_call *call, const char *aj,
                      size_t al, const char *suffix, const char *const *target,
                      bool resume)
{
    struct rlmcp_h h = {lc->api, call};
    cJSON *args = NULL, *got = NULL, *ready = NULL;
    const char *id = NULL;
    char *path = NULL, *what = NULL;
    bool wait = true;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(&h, args, "wait", &wait);
    if (rc != RLMCP_OK)
        goto out;
    path = rlmcp_h_sprintf("/v1/devboxes/%s%s", id, suffix);
    what = what_devbox(id);
    rc = rlmcp_h_request(&h, "POST", path, NULL, NULL, what, &got);
    if (rc != RLMCP_OK || !wait)
        goto done;
    rc = rlmcp_h_devbox_wait(&h, id, target, (uint64_t)lc->wait_s * 1000u,
                             &ready);
    if (rc != RLMCP_OK)
        goto out;
    if (resume && strcmp(rlmcp_h_devbox_status(ready), "running") != 0) {
        rc = not_ready(&h, ready, id, lc->wait_s);
        goto out;
    }
done:
    if (rc != RLMCP_OK)
        goto out;
    if (ready != NULL || cJSON_IsObject(got)) {
        rc = rlmcp_h_result_json(&h, ready != NULL ? ready : got);
    } else {
        cJSON *res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "id", id);
        cJSON_AddStringToObject(res, "status",
                                resume ? "resuming" : "suspending");
        rc = rlmcp_h_result_json(&h, res);
        cJSON_Delete(res);
    }
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(got);
    cJSON_Delete(ready);
    return rlmcp_h_ret(rc);
}

static int t_suspend(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return transition(ud, call, aj, al, "/suspend", suspended_set, false);
}

static int t_resume(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return transition(ud, call, aj, al, "/resume", running_set, true);
}

/* ---- update_devbox
 * ------------------------------------------------------------ */

static int t_update(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct lc *lc = ud;
    struct rlmcp_h h = {lc->api, call};
    cJSON *args = NULL, *body = NULL, *got = NULL;
    const cJSON *md = NULL;
    const char *id = NULL, *name = NULL;
    char *path = NULL, *what = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "name", false, &name);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str_map(&h, args, "metadata", &md);
    if (rc != RLMCP_OK)
        goto out;
    if (name == NULL && md == NULL) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "nothing to update: give name and/or metadata");
        goto out;
    }
    body = cJSON_CreateObject();
    if (name != NULL)
        cJSON_AddStringToObject(body, "name", name);
    if (md != NULL)
        cJSON_AddItemToObject(body, "metadata", cJSON_Duplicate(md, true));
    path = rlmcp_h_sprintf("/v1/devboxes/%s", id);
    what = what_devbox(id);
    rc = rlmcp_h_request(&h, "POST", path, body, NULL, what, &got);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_json(&h, got);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(body);
    cJSON_Delete(got);
    return rlmcp_h_ret(rc);
}

/* ---- registration
 * -------------------------------------------------------------- */

/* Only the tools that wait for a status (create, suspend, resume) take
 * create_wait_seconds plus slack; the others are single requests bounded by
 * the deployment's limit (host.call_timeout_ms, tools.timeout_ms). */
static const struct rlmcp_h_tool specs[] = {
    {"create_devbox", "Create a devbox",
     "Create a fresh isolated Linux sandbox (devbox) and wait until it is "
     "running. Returns the devbox; use its id with execute_command, "
     "write_file, etc. If it is not running within the server's wait bound "
     "the error names the devbox id so you can poll get_devbox or shut it "
     "down. Shut it down with shutdown_devbox when done.",
     schema_create_devbox, schema_devbox_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":false,\"openWorldHint\":true}",
     t_create, true},
    {"list_devboxes", "List devboxes",
     "List devboxes (newest first), optionally only those in one status. "
     "Shut down devboxes are hidden unless you ask for status=shutdown.",
     schema_list_devboxes, schema_list_devboxes_out, RO_ANN, t_list, false},
    {"get_devbox", "Get a devbox",
     "Get one devbox: status, name, metadata, launch parameters.",
     schema_devbox_id, schema_devbox_out, RO_ANN, t_get, false},
    {"update_devbox", "Update a devbox",
     "Change a devbox's name and/or replace its metadata.",
     schema_update_devbox, schema_devbox_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":true,\"openWorldHint\":true}",
     t_update, false},
    {"suspend_devbox", "Suspend a devbox",
     "Suspend a running devbox: its disk is kept, memory and processes are "
     "lost, compute billing stops. Resume it with resume_devbox.",
     schema_devbox_id_wait, schema_devbox_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":true,\"openWorldHint\":true}",
     t_suspend, true},
    {"resume_devbox", "Resume a devbox",
     "Resume a suspended devbox (same id and disk; processes restart) and "
     "wait until it is running.",
     schema_devbox_id_wait, schema_devbox_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":true,\"openWorldHint\":true}",
     t_resume, true},
    {"shutdown_devbox", "Shut down a devbox",
     "Permanently shut down a devbox and delete its data. This cannot be "
     "undone.",
     schema_shutdown_devbox, schema_devbox_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":true,"
     "\"idempotentHint\":true,\"openWorldHint\":true}",
     t_shutdown, false},
    {"keep_devbox_alive", "Keep a devbox alive",
     "Reset a devbox's idle timer so an idle policy does not suspend or "
     "shut it down. It does not extend the maximum lifetime.",
     schema_devbox_id, schema_keep_devbox_alive_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":true,\"openWorldHint\":true}",
     t_keep_alive, false},
    {"renew_devbox", "Renew a devbox's lease",
     "Extend (or shorten) a running devbox's lifetime: it now ends "
     "keep_alive_time_seconds from now, instead of when its create (or "
     "last renewal) said. Returns the new end as expires_at. Needs a "
     "backend that can renew: the local engine can, Runloop's API cannot.",
     schema_renew_devbox, schema_renew_devbox_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":false,\"openWorldHint\":true}",
     t_renew, false},
    {"get_resource_usage", "Get devbox resource usage",
     "Usage of a devbox: accumulated elapsed and active seconds, vCPU, "
     "memory and disk GB-seconds; where the backend reports them, its "
     "current CPU (cores used over half a second) and memory use in "
     "current (null when it is not running).",
     schema_devbox_id, schema_get_resource_usage_out, RO_ANN, t_usage, false},
};

/* The shutdown; also frees the state of a failed init. */
static void lc_shutdown(rlmcp_plugin *self, void *state)
{
    struct lc *lc = state;

    if (lc == NULL)
        return;
    cJSON_Delete(lc->default_metadata);
    free(lc->create_schema);
    free(lc->renew_schema);
    free(lc->default_blueprint);
    free(lc);
}

/*
 * The host has checked the section against schemas/config.json (types,
 * ranges, no unknown keys); what is left is defaults and the rules between
 * fields.
 */
static int lc_config(struct lc *lc, rlmcp_plugin *self,
                     const struct rlmcp_host_api *api, const cJSON *cfg)
{
    const cJSON *md = NULL, *bp = NULL;

    rlmcp_h_cfg_int(cfg, "create_wait_seconds", 120, &lc->wait_s);
    rlmcp_h_cfg_int(cfg, "min_keep_alive_seconds", 60, &lc->min_keep);
    rlmcp_h_cfg_int(cfg, "max_keep_alive_seconds", 172800, &lc->max_keep);
    rlmcp_h_cfg_int(cfg, "default_keep_alive_seconds", 0, &lc->default_keep);
    rlmcp_h_cfg_bool(cfg, "hide_shutdown", true, &lc->hide_shutdown);
    rlmcp_h_cfg_bool(cfg, "account_secrets", true, &lc->secrets);
    if (lc->max_keep < lc->min_keep) {
        api->set_error(self, "config max_keep_alive_seconds must be at least "
                             "min_keep_alive_seconds");
        return RLMCP_EINVAL;
    }
    if (lc->default_keep != 0 &&
        (lc->default_keep < lc->min_keep || lc->default_keep > lc->max_keep)) {
        api->set_error(self, "config default_keep_alive_seconds must be "
                             "between min_keep_alive_seconds and "
                             "max_keep_alive_seconds");
        return RLMCP_EINVAL;
    }
    md = cJSON_GetObjectItemCaseSensitive(cfg, "default_metadata");
    if (md != NULL) {
        lc->default_metadata = cJSON_Duplicate(md, true);
        if (lc->default_metadata == NULL)
            return RLMCP_ENOMEM;
    }
    bp = cJSON_GetObjectItemCaseSensitive(cfg, "default_blueprint_name");
    if (cJSON_IsString(bp)) {
        lc->default_blueprint = strdup(bp->valuestring);
        if (lc->default_blueprint == NULL)
            return RLMCP_ENOMEM;
    }
    return RLMCP_OK;
}

/*
 * A tool's input schema for this config: the server's lifetime range as
 * minimum and maximum of keep_alive_time_seconds, so clients see it before
 * a call; create_devbox's without secrets and mcp when account_secrets is
 * false.
 */
static int lifetime_schema(const struct lc *lc, const char *text,
                           bool drop_secrets, char **out)
{
    cJSON *schema = cJSON_Parse(text);
    cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    cJSON *keep =
        cJSON_GetObjectItemCaseSensitive(props, "keep_alive_time_seconds");
    int rc = RLMCP_ENOMEM;

    if (!cJSON_IsObject(keep)) {
        rc = RLMCP_EINTERNAL;
        goto out;
    }
    if (drop_secrets) {
        cJSON_DeleteItemFromObjectCaseSensitive(props, "secrets");
        cJSON_DeleteItemFromObjectCaseSensitive(props, "mcp");
    }
    if (cJSON_AddNumberToObject(keep, "minimum", (double)lc->min_keep) ==
            NULL ||
        cJSON_AddNumberToObject(keep, "maximum", (double)lc->max_keep) == NULL)
        goto out;
    *out = cJSON_PrintUnformatted(schema);
    if (*out != NULL)
        rc = RLMCP_OK;
out:
    cJSON_Delete(schema);
    return rc;
}

static int lc_setup(void *state, rlmcp_plugin *self,
                    const struct rlmcp_host_api *api, const cJSON *cfg)
{
    struct lc *lc = state;
    struct rlmcp_h_tool tools[sizeof(specs) / sizeof(specs[0])];
    size_t i;
    int rc;

    lc->api = api;
    rc = lc_config(lc, self, api, cfg);
    if (rc == RLMCP_OK)
        rc = lifetime_schema(lc, schema_create_devbox, !lc->secrets,
                             &lc->create_schema);
    if (rc == RLMCP_OK)
        rc = lifetime_schema(lc, schema_renew_devbox, false, &lc->renew_schema);
    if (rc != RLMCP_OK)
        return rc;
    memcpy(tools, specs, sizeof(specs));
    for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
        if (tools[i].in == schema_create_devbox)
            tools[i].in = lc->create_schema;
        else if (tools[i].in == schema_renew_devbox)
            tools[i].in = lc->renew_schema;
    }
    /* create/suspend/resume may wait create_wait_seconds, plus slack. */
    return rlmcp_h_register_tools(self, api, tools,
                                  sizeof(tools) / sizeof(tools[0]), lc,
                                  (uint32_t)(lc->wait_s + 120) * 1000u);
}

RLMCP_H_PLUGIN_DEFINE("lifecycle", "0.1.0",
                      "Devbox lifecycle: create, list, get, update, "
                      "suspend, resume, shutdown, keep alive, renew, usage",
                      struct lc, lc_setup, lc_shutdown, schema_config)
