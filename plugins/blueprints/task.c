/*
 * task.c - build_blueprint as an MCP task (ABI 1.4 rlmcp_task_def).
 *
 * The task's handle is {blueprint_id}: the work is the backend's build, so
 * the host keeps nothing and the task outlives it. get reads the
 * blueprint: queued, provisioning and building are still working (the
 * host knows these statuses); build_complete is the result build_blueprint
 * itself gives; failed (and awaiting_upload, which this tool never
 * provides) is "failed" with why; a blueprint deleted before it was built
 * is "cancelled". wait polls the same way, cancel deletes the blueprint
 * (the engine stops its build) and confirms it reads deleted or is gone;
 * a build that completed first is an ended task, never deleted again.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bp_internal.h"

/* How long cancel may take to delete and confirm. */
#define TASK_CANCEL_MS 30000u
/* Waits of tasks/result may last as long as a build: up to a day. */
#define TASK_MAX_WAIT_S 86400

static const char *str_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool is(const char *s, const char *want)
{
    return s != NULL && strcmp(s, want) == 0;
}

/* Deleted before it was built: a cancel (or delete_blueprint) stopped it. */
static bool stopped(const cJSON *view)
{
    return is(str_of(view, "state"), "deleted") &&
           !is(str_of(view, "status"), "build_complete");
}

static bool ended(const cJSON *view, void *user)
{
    const char *st = str_of(view, "status");

    return stopped(view) || is(st, "build_complete") || is(st, "failed") ||
           is(st, "awaiting_upload");
}

static int read_view(const struct rlmcp_h *h, void *user, const char *id,
                     cJSON **view)
{
    char *path = rlmcp_h_sprintf("/v1/blueprints/%s", id);
    char *what = rlmcp_h_sprintf("blueprint %s", id);
    int rc;

    rc = rlmcp_h_request(h, "GET", path, NULL, NULL, what, view);
    if (rc == RLMCP_OK && str_of(*view, "status") == NULL)
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "%s: the Runloop API answered without a build "
                          "status",
                          what);
    free(path);
    free(what);
    return rc;
}

/* The build log into *doc (NULL when the API has none to give); a
 * transport failure is reported. */
static int read_logs(const struct rlmcp_h *h, const char *id, cJSON **doc)
{
    char *path = rlmcp_h_sprintf("/v1/blueprints/%s/logs", id);
    char *what = rlmcp_h_sprintf("the build log of blueprint %s", id);
    long status = 0;
    int rc;

    *doc = NULL;
    rc = rlmcp_h_request_status(h, "GET", path, NULL, NULL, what, &status, doc,
                                NULL);
    if (rc == RLMCP_OK &&
        (status < 200 || status > 299 ||
         !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(*doc, "logs")))) {
        cJSON_Delete(*doc);
        *doc = NULL;
    }
    free(path);
    free(what);
    return rc;
}

/* A status for the host with the blueprint's summary and, failed, why. */
static int answer_status(const struct rlmcp_h *h, const cJSON *view,
                         const char *status, const char *message)
{
    const char *const set[] = {"status", status, "message", message, NULL};

    return rlmcp_h_result_pick(h, view, bp_summary_keys, set);
}

/* The blueprint as the task's state (file comment). */
static int answer_view(const struct rlmcp_h *h, void *user, const char *id,
                       const cJSON *view)
{
    const char *st = str_of(view, "status");
    cJSON *logs = NULL;
    char *why = NULL;
    int rc = RLMCP_ENOMEM;

    if (stopped(view))
        return answer_status(h, view, "cancelled", NULL);
    if (!is(st, "build_complete") && !is(st, "failed") &&
        !is(st, "awaiting_upload"))
        return answer_status(h, view, st, NULL); /* still working */
    rc = read_logs(h, id, &logs);
    if (rc != RLMCP_OK)
        goto out;
    rc = RLMCP_ENOMEM;
    if (is(st, "build_complete")) {
        rc = bp_built_result(h, view,
                             cJSON_GetObjectItemCaseSensitive(logs, "logs"));
        goto out;
    }
    if (is(st, "failed"))
        why = bp_failure_text(id, view,
                              cJSON_GetObjectItemCaseSensitive(logs, "logs"));
    else
        why = rlmcp_h_sprintf("blueprint %s is awaiting an upload, which "
                              "build_blueprint does not provide",
                              id);
    if (why != NULL)
        rc = answer_status(h, view, "failed", why);
out:
    free(why);
    cJSON_Delete(logs);
    return rc;
}

/* tasks/result's pauses held in the engine where it offers that (see
 * bp_hold). */
static int hold(const struct rlmcp_h *h, void *user, const char *id,
                const cJSON *view, uint64_t until_ms, bool *held)
{
    uint64_t waited_ms = 0;

    *held = false;
    if (!cJSON_IsTrue(
            cJSON_GetObjectItemCaseSensitive(view, "supports_wait_for_status")))
        return RLMCP_OK;
    return bp_hold(h, user, id, until_ms, held, &waited_ms);
}

static const struct rlmcp_h_task_ops task_ops = {
    .id_arg = "blueprint_id",
    .max_wait_s = TASK_MAX_WAIT_S,
    .read = read_view,
    .ended = ended,
    .answer = answer_view,
    .hold = hold,
};

static int task_start(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct bp *bp = ud;
    struct rlmcp_h h = {bp->api, call};
    cJSON *view = NULL;
    const char *id = NULL;
    int rc;

    /* As build_blueprint, but never following the build: "wait" is moot. */
    rc = bp_start_build(&h, aj, al, NULL, &view, &id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_task_handle(&h, &task_ops, id);
    cJSON_Delete(view);
    return rlmcp_h_ret(rc);
}

static int task_get(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct bp *bp = ud;
    struct rlmcp_h h = {bp->api, call};

    return rlmcp_h_ret(rlmcp_h_task_get(&h, &task_ops, bp, aj, al));
}

static int task_wait(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct bp *bp = ud;
    struct rlmcp_h h = {bp->api, call};

    return rlmcp_h_ret(
        rlmcp_h_task_wait(&h, &task_ops, bp, aj, al, (uint32_t)bp->poll_ms));
}

/* What a delete left: the build stopped, ended built, or not yet. */
enum bp_deleted { BP_DEL_STOPPED, BP_DEL_BUILT, BP_DEL_NOT_YET };

/* The blueprint read back after a delete: gone (404) or deleted is the
 * end whatever its build status; built but not deleted is the end too
 * (never deleted again). */
static int read_back(const struct rlmcp_h *h, const char *id, const char *what,
                     enum bp_deleted *left)
{
    char *path = rlmcp_h_sprintf("/v1/blueprints/%s", id);
    cJSON *view = NULL;
    long status = 0;
    bool deleted = false, built = false;
    int rc = RLMCP_ENOMEM;

    if (path != NULL)
        rc = rlmcp_h_request_status(h, "GET", path, NULL, NULL, what, &status,
                                    &view, NULL);
    if (rc != RLMCP_OK)
        goto out;
    *left = BP_DEL_NOT_YET;
    if (status == 404) {
        *left = BP_DEL_STOPPED;
        goto out;
    }
    if (status < 200 || status > 299)
        goto out; /* asked again on the next round */
    deleted = is(str_of(view, "state"), "deleted");
    built = is(str_of(view, "status"), "build_complete");
    if (built)
        *left = BP_DEL_BUILT;
    else if (deleted)
        *left = BP_DEL_STOPPED;
out:
    free(path);
    cJSON_Delete(view);
    return rc;
}

/* One delete request, then the blueprint read back into *left; why says
 * what the API answered to the delete. */
static int delete_once(const struct rlmcp_h *h, const char *id,
                       const char *path, const char *what, char *why,
                       size_t whylen, enum bp_deleted *left)
{
    cJSON *out = NULL;
    char *msg = NULL;
    long status = 0;
    int rc;

    rc = rlmcp_h_request_status(h, "POST", path, NULL, NULL, what, &status,
                                &out, &msg);
    if (rc == RLMCP_OK && (status < 200 || status > 299))
        snprintf(why, whylen, "HTTP %ld: %s", status,
                 msg != NULL ? msg : "no message");
    cJSON_Delete(out);
    free(msg);
    if (rc == RLMCP_OK)
        rc = read_back(h, id, what, left);
    return rc;
}

/* Delete the blueprint (the engine stops its build) until it reads
 * deleted or built; RLMCP_ETIMEDOUT with why filled when neither. */
static int delete_build(struct bp *bp, const struct rlmcp_h *h, const char *id,
                        char *why, size_t whylen, enum bp_deleted *left)
{
    uint64_t until = rlmcp_h_now_ms() + TASK_CANCEL_MS;
    char *path = rlmcp_h_sprintf("/v1/blueprints/%s/delete", id);
    char *what = rlmcp_h_sprintf("deleting blueprint %s", id);
    int rc = RLMCP_ENOMEM;

    snprintf(why, whylen, "it still builds");
    while (path != NULL && what != NULL) {
        rc = delete_once(h, id, path, what, why, whylen, left);
        if (rc != RLMCP_OK || *left != BP_DEL_NOT_YET)
            break;
        rc = RLMCP_ETIMEDOUT;
        if (rlmcp_h_now_ms() >= until)
            break;
        /* E.g. 409: its build was just starting; delete it again. */
        rc = bp->api->sleep_ms(h->call, (uint32_t)bp->poll_ms);
        if (rc != RLMCP_OK)
            break;
    }
    free(path);
    free(what);
    return rc;
}

static int task_cancel(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct bp *bp = ud;
    struct rlmcp_h h = {bp->api, call};
    cJSON *args = NULL, *view = NULL, *res = NULL;
    const char *id = NULL;
    char why[300];
    enum bp_deleted left = BP_DEL_NOT_YET;
    int rc;

    rc = rlmcp_h_task_read(&h, &task_ops, bp, aj, al, &args, &id, &view);
    if (rc != RLMCP_OK)
        goto out;
    if (ended(view, bp)) {
        /* Built, failed or deleted before: nothing to stop. */
        rc = rlmcp_h_task_already_done(&h, &task_ops, id,
                                       stopped(view) ? "cancelled"
                                                     : str_of(view, "status"));
        goto out;
    }
    res = cJSON_CreateObject();
    if (res == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    cJSON_AddStringToObject(res, "blueprint_id", id);
    rc = delete_build(bp, &h, id, why, sizeof(why), &left);
    if (rc == RLMCP_ETIMEDOUT) {
        rc = rlmcp_h_fail_remedy(
            &h, RLMCP_ERR_UNAVAILABLE,
            "Cancel again, or delete it with delete_blueprint once the "
            "backend answers.",
            "could not confirm that the build of blueprint %s stopped (%s)", id,
            why);
        goto out;
    }
    if (rc != RLMCP_OK)
        goto out;
    /* Built before the delete took: the task had ended. */
    if (left == BP_DEL_BUILT)
        cJSON_AddBoolToObject(res, "already_done", true);
    cJSON_AddStringToObject(res, "status",
                            left == BP_DEL_BUILT ? "build_complete" : "killed");
    rc = rlmcp_h_result_json(&h, res);
out:
    cJSON_Delete(args);
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

const struct rlmcp_task_def bp_task_def = {
    .struct_size = sizeof(struct rlmcp_task_def),
    .start = task_start,
    .get = task_get,
    .wait = task_wait,
    .cancel = task_cancel,
};
