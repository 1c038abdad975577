/*
 * snapshots.c - disk snapshot tools: create_snapshot, list_snapshots,
 * delete_snapshot, get_snapshot_status.
 *
 * Config (all optional):
 *   mode                   "async" (snapshot_disk_async, then poll the
 *                          status with progress; default) or "sync"
 *                          (one snapshot_disk request)
 *   wait_seconds           how long create_snapshot waits for the snapshot
 *                          to complete (600, 1-86400)
 *   poll_interval_ms       status polling interval in async mode (1000,
 *                          100-60000)
 * A new devbox boots from a snapshot through create_devbox's snapshot_id
 * (lifecycle plugin).
 */
#include <stdlib.h>
#include <string.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"
#include "schemas.h" /* schema_<file>: schemas/<file>.json, built in */

#include "sn_internal.h"

static const char *const snapshot_keys[] = {"id",
                                            "name",
                                            "source_devbox_id",
                                            "source_blueprint_id",
                                            "create_time_ms",
                                            "size_bytes",
                                            "commit_message",
                                            "metadata",
                                            NULL};

/* ---- helpers ----------------------------------------------------------------
 */

static const char *str_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A snapshot result: the picked view plus its status. */
int sn_result(const struct rlmcp_h *h, const cJSON *view, const char *status)
{
    const char *const set[] = {"status", status, NULL};

    return rlmcp_h_result_pick(h, view, snapshot_keys, set);
}

/*
 * A request on a devbox: a failure goes through the devbox-state check so
 * a snapshot of a shut down devbox says devbox_not_running.
 */
static int devbox_post(const struct rlmcp_h *h, const char *id,
                       const char *path, const cJSON *body,
                       const struct rlmcp_h_req_opts *o, const char *what,
                       cJSON **out)
{
    char *msg = NULL;
    long status = 0;
    int rc;

    rc = rlmcp_h_request_status(h, "POST", path, body, o, what, &status, out,
                                &msg);
    if (rc == RLMCP_OK && (status < 200 || status > 299)) {
        rc = rlmcp_h_fail_on_devbox(h, id, status, msg, what);
        cJSON_Delete(*out);
        *out = NULL;
    }
    free(msg);
    return rc;
}

/* ---- create_snapshot --------------------------------------------------------
 */

/* The snapshot body (name, commit_message, metadata) from the arguments. */
static int create_body(const struct rlmcp_h *h, const cJSON *args, cJSON **out)
{
    const char *name = NULL, *msg = NULL;
    const cJSON *md = NULL;
    cJSON *body = NULL;
    int rc;

    *out = NULL;
    rc = rlmcp_h_arg_str(h, args, "name", false, &name);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "commit_message", false, &msg);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str_map(h, args, "metadata", &md);
    if (rc != RLMCP_OK)
        return rc;
    if (msg != NULL && strlen(msg) > 1000)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'commit_message' is longer than 1000 "
                            "characters (%zu)",
                            strlen(msg));
    body = cJSON_CreateObject();
    if (body == NULL)
        return RLMCP_ENOMEM;
    if (name != NULL)
        cJSON_AddStringToObject(body, "name", name);
    if (msg != NULL)
        cJSON_AddStringToObject(body, "commit_message", msg);
    if (md != NULL)
        cJSON_AddItemToObject(body, "metadata", cJSON_Duplicate(md, true));
    *out = body;
    return RLMCP_OK;
}

int sn_start(const struct snap *sn, const struct rlmcp_h *h, const char *aj,
             size_t al, bool *wait, cJSON **view, const char **sid)
{
    struct rlmcp_h_req_opts o = {0};
    cJSON *args = NULL, *body = NULL;
    const char *id = NULL;
    char *path = NULL, *what = NULL;
    bool sync = false;
    int rc;

    *view = NULL;
    *sid = NULL;
    o.max_retries = -1;
    rc = rlmcp_h_args(h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK && wait != NULL)
        rc = rlmcp_h_arg_bool(h, args, "wait", wait);
    if (rc == RLMCP_OK)
        rc = create_body(h, args, &body);
    if (rc != RLMCP_OK)
        goto out;
    /* The sync call can only wait; wait=false needs the async endpoint. */
    sync = sn->sync && wait != NULL && *wait;
    path = rlmcp_h_sprintf("/v1/devboxes/%s/%s", id,
                           sync ? "snapshot_disk" : "snapshot_disk_async");
    what = rlmcp_h_sprintf("snapshot of devbox %s", id);
    rc = RLMCP_ENOMEM;
    if (path == NULL || what == NULL)
        goto out;
    if (sync)
        o.timeout_ms = (uint32_t)sn->wait_s * 1000u;
    rc = devbox_post(h, id, path, body, &o, what, view);
    if (rc != RLMCP_OK)
        goto out;
    *sid = str_of(*view, "id");
    if (*sid == NULL || !rlmcp_h_id_valid(*sid)) {
        *sid = NULL;
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "%s: the Runloop API returned a snapshot without "
                          "a valid id",
                          what);
    }
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(body);
    return rc;
}

/*
 * Poll the status of snapshot `sid` until it leaves in_progress or the
 * bound passes, reporting progress. *st_out: the last status view.
 */
static int poll_status(struct snap *sn, const struct rlmcp_h *h,
                       const char *sid, cJSON **st_out)
{
    uint64_t start = rlmcp_h_now_ms();
    uint64_t deadline = start + (uint64_t)sn->wait_s * 1000u;
    /* Short pauses first: a snapshot takes a few hundred ms. */
    struct rlmcp_h_poll poll;
    char *path = rlmcp_h_sprintf("/v1/devboxes/disk_snapshots/%s/status", sid);
    char *what = rlmcp_h_sprintf("snapshot %s", sid);
    double n = 0;
    int rc = RLMCP_ENOMEM;

    *st_out = NULL;
    rlmcp_h_poll_init(&poll, (uint32_t)sn->poll_ms);
    if (path == NULL || what == NULL)
        goto out;
    for (;;) {
        const char *st = NULL;
        char *note = NULL;
        cJSON_Delete(*st_out);
        *st_out = NULL;
        rc = rlmcp_h_request(h, "GET", path, NULL, NULL, what, st_out);
        if (rc != RLMCP_OK)
            goto out;
        st = str_of(*st_out, "status");
        /* Also bounded in time slept, so the bound holds when sleeps
         * return early. */
        if (st == NULL || strcmp(st, "in_progress") != 0 ||
            rlmcp_h_now_ms() >= deadline ||
            poll.slept_ms >= (uint64_t)sn->wait_s * 1000u)
            break;
        note = rlmcp_h_sprintf(
            "snapshot %s in progress (%llu s)", sid,
            (unsigned long long)((rlmcp_h_now_ms() - start) / 1000u));
        h->api->progress(h->call, ++n, -1, note);
        free(note);
        rc = rlmcp_h_poll_pause(h, &poll);
        if (rc != RLMCP_OK)
            goto out;
    }
out:
    free(path);
    free(what);
    return rc;
}

/* Turn the final status view into the result or an error. */
static int finish_create(struct snap *sn, const struct rlmcp_h *h,
                         const char *sid, const cJSON *view, const cJSON *st)
{
    const char *status = str_of(st, "status");
    const char *err = str_of(st, "error_message");
    const cJSON *final = cJSON_GetObjectItemCaseSensitive(st, "snapshot");

    if (status == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "snapshot %s: the Runloop API answered the "
                            "status query without a status",
                            sid);
    if (strcmp(status, "complete") == 0)
        return sn_result(h, cJSON_IsObject(final) ? final : view, status);
    if (strcmp(status, "in_progress") == 0)
        return rlmcp_h_fail_remedy(
            h, RLMCP_ERR_TIMEOUT,
            "Poll get_snapshot_status with this snapshot_id until it is "
            "complete.",
            "snapshot_id=%s is still in progress after %lld s", sid,
            sn->wait_s);
    if (strcmp(status, "deleted") == 0)
        return rlmcp_h_fail(h, RLMCP_ERR_NOT_FOUND,
                            "snapshot %s was deleted before it completed", sid);
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_INTERNAL,
        "Check the devbox with get_devbox and try create_snapshot again.",
        "snapshot %s failed: %s", sid,
        err != NULL ? err : "no error message given");
}

static int t_create(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct snap *sn = ud;
    struct rlmcp_h h = {sn->api, call};
    cJSON *view = NULL, *st = NULL;
    const char *sid = NULL;
    bool wait = true;
    int rc;

    rc = sn_start(sn, &h, aj, al, &wait, &view, &sid);
    if (rc != RLMCP_OK)
        goto out;
    if (sn->sync && wait) {
        rc = sn_result(&h, view, "complete");
        goto out;
    }
    if (!wait) {
        rc = sn_result(&h, view, "in_progress");
        goto out;
    }
    rc = poll_status(sn, &h, sid, &st);
    if (rc == RLMCP_OK)
        rc = finish_create(sn, &h, sid, view, st);
out:
    cJSON_Delete(view);
    cJSON_Delete(st);
    return rlmcp_h_ret(rc);
}

/* ---- list_snapshots
 * ---------------------------------------------------------- */

static int t_list(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    static const struct rlmcp_h_list_filter filters[] = {
        {"devbox_id", true},
        {"source_blueprint_id", true},
    };
    struct snap *sn = ud;
    struct rlmcp_h h = {sn->api, call};
    cJSON *args = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_list_args(&h, args, "/v1/devboxes/disk_snapshots", filters,
                               sizeof(filters) / sizeof(filters[0]), 100,
                               "snapshots", snapshot_keys, "listing snapshots");
    cJSON_Delete(args);
    return rlmcp_h_ret(rc);
}

/* ---- delete_snapshot / get_snapshot_status
 * ------------------------------------------ */

static int t_delete(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct snap *sn = ud;
    struct rlmcp_h h = {sn->api, call};

    return rlmcp_h_ret(rlmcp_h_delete_by_id(&h, aj, al, "snapshot_id",
                                            "/v1/devboxes/disk_snapshots/",
                                            "/delete", "deleting snapshot"));
}

static int t_status(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct snap *sn = ud;
    struct rlmcp_h h = {sn->api, call};
    cJSON *args = NULL, *st = NULL, *res = NULL;
    const cJSON *view = NULL;
    const char *sid = NULL, *status = NULL, *err = NULL;
    char *path = NULL, *what = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "snapshot_id", true, &sid);
    if (rc != RLMCP_OK)
        goto out;
    path = rlmcp_h_sprintf("/v1/devboxes/disk_snapshots/%s/status", sid);
    what = rlmcp_h_sprintf("snapshot %s", sid);
    rc = rlmcp_h_request(&h, "GET", path, NULL, NULL, what, &st);
    if (rc != RLMCP_OK)
        goto out;
    status = str_of(st, "status");
    if (status == NULL) {
        rc =
            rlmcp_h_fail(&h, RLMCP_ERR_INTERNAL,
                         "%s: the Runloop API answered without a status", what);
        goto out;
    }
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "snapshot_id", sid);
    cJSON_AddStringToObject(res, "status", status);
    err = str_of(st, "error_message");
    if (err != NULL)
        cJSON_AddStringToObject(res, "error_message", err);
    view = cJSON_GetObjectItemCaseSensitive(st, "snapshot");
    if (cJSON_IsObject(view))
        cJSON_AddItemToObject(res, "snapshot",
                              rlmcp_h_pick(view, snapshot_keys));
    rc = rlmcp_h_result_json(&h, res);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(st);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* ---- registration
 * -------------------------------------------------------------- */

#define RO_ANN                                                                 \
    "{\"readOnlyHint\":true,\"destructiveHint\":false,"                        \
    "\"idempotentHint\":true,\"openWorldHint\":true}"

static const struct rlmcp_h_tool specs[] = {
    {"create_snapshot", "Snapshot a devbox's disk",
     "Save the disk of a devbox as a snapshot (files only: no memory or "
     "processes) and wait until it is complete. Start new devboxes from it "
     "with create_devbox snapshot_id=<id> to fan out or roll back. Snapshots "
     "are kept (and billed as storage) until delete_snapshot.",
     schema_create_snapshot, schema_create_snapshot_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":false,\"openWorldHint\":true}",
     t_create, true},
    {"list_snapshots", "List disk snapshots",
     "List disk snapshots (newest first), optionally only those of one "
     "devbox or blueprint. Page with starting_after.",
     schema_list_snapshots, schema_list_snapshots_out, RO_ANN, t_list, false},
    {"delete_snapshot", "Delete a disk snapshot",
     "Delete a disk snapshot permanently. Devboxes already started from it "
     "keep running.",
     schema_delete_snapshot, schema_delete_snapshot_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":true,"
     "\"idempotentHint\":true,\"openWorldHint\":true}",
     t_delete, false},
    {"get_snapshot_status", "Get a snapshot's status",
     "Status of a snapshot: in_progress, complete, error (with "
     "error_message) or deleted, and the snapshot once complete.",
     schema_get_snapshot_status, schema_get_snapshot_status_out, RO_ANN,
     t_status, false},
};

/* The host has checked the section against schemas/config.json (types,
 * ranges, no unknown keys); this fills the defaults. */
static int sn_setup(void *state, rlmcp_plugin *self,
                    const struct rlmcp_host_api *api, const cJSON *cfg)
{
    struct snap *sn = state;
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(cfg, "mode");

    sn->api = api;
    sn->sync = cJSON_IsString(mode) && strcmp(mode->valuestring, "sync") == 0;
    rlmcp_h_cfg_int(cfg, "wait_seconds", 600, &sn->wait_s);
    rlmcp_h_cfg_int(cfg, "poll_interval_ms", 1000, &sn->poll_ms);
    /* create_snapshot may wait wait_seconds, plus slack, and may run as an
     * MCP task (specs[0]). */
    return rlmcp_h_register_tools_task(
        self, api, specs, sizeof(specs) / sizeof(specs[0]), &sn_task_def, sn,
        (uint32_t)(sn->wait_s + 60) * 1000u, NULL);
}

RLMCP_H_PLUGIN_DEFINE("snapshots", "0.1.0",
                      "Disk snapshots: create (with progress), list, "
                      "delete, status",
                      struct snap, sn_setup, rlmcp_h_shutdown_free,
                      schema_config)
