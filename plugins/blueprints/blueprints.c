/*
 * blueprints.c - blueprint tools: build_blueprint (build, streaming new log
 * lines as progress until a terminal status), list_blueprints,
 * get_blueprint, get_blueprint_logs, delete_blueprint.
 *
 * Config (all optional):
 *   build_wait_seconds   how long build_blueprint follows a build (1800,
 *                        1-86400); past it the error names the blueprint id
 *   poll_interval_ms     status/log polling interval (1000, 100-60000)
 *   max_progress_bytes   log text carried by one progress message (4096,
 *                        256-65536); longer batches keep their last lines
 */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"
#include "schemas.h" /* schema_<file>: schemas/<file>.json, built in */

#include "bp_internal.h"
#include "build_log.h"

const char *const bp_summary_keys[] = {"id",
                                       "name",
                                       "status",
                                       "state",
                                       "create_time_ms",
                                       "build_finish_time_ms",
                                       "base_blueprint_id",
                                       "failure_reason",
                                       "is_public",
                                       "metadata",
                                       "tags",
                                       NULL};

static const char *str_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- build_blueprint: the request body
 * ---------------------------------------- */

static int str_array_arg(const struct rlmcp_h *h, const cJSON *args,
                         const char *name, const cJSON **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
    const cJSON *it = NULL;

    *out = NULL;
    if (v == NULL || cJSON_IsNull(v))
        return RLMCP_OK;
    if (!cJSON_IsArray(v))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument '%s' must be an array of strings", name);
    cJSON_ArrayForEach(it, v)
    {
        if (!cJSON_IsString(it))
            return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                "argument '%s' must be an array of strings",
                                name);
    }
    *out = v;
    return RLMCP_OK;
}

/* Copy the optional string arguments; base id and name exclude each other. */
static int body_strings(const struct rlmcp_h *h, const cJSON *args, cJSON *body)
{
    static const char *const names[] = {
        "name", "dockerfile", "base_blueprint_id", "base_blueprint_name", NULL};
    const char *v = NULL;
    size_t i;
    int rc = RLMCP_OK;

    for (i = 0; names[i] != NULL && rc == RLMCP_OK; i++) {
        v = NULL;
        rc = rlmcp_h_arg_str(h, args, names[i], i == 0, &v);
        if (rc == RLMCP_OK && v != NULL)
            cJSON_AddStringToObject(body, names[i], v);
    }
    if (rc != RLMCP_OK)
        return rc;
    if (str_of(body, "name")[0] == '\0')
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'name' must not be empty");
    if (str_of(body, "base_blueprint_id") != NULL &&
        str_of(body, "base_blueprint_name") != NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "give at most one of base_blueprint_id and "
                            "base_blueprint_name");
    return RLMCP_OK;
}

static int body_launch(const struct rlmcp_h *h, const cJSON *args, cJSON *body)
{
    const cJSON *cmds = NULL;
    const char *size = NULL, *arch = NULL;
    cJSON *lp = NULL;
    int rc;

    rc = str_array_arg(h, args, "launch_commands", &cmds);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "resource_size", false, &size);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "architecture", false, &arch);
    if (rc != RLMCP_OK || (cmds == NULL && size == NULL && arch == NULL))
        return rc;
    lp = cJSON_AddObjectToObject(body, "launch_parameters");
    if (lp == NULL)
        return RLMCP_ENOMEM;
    if (cmds != NULL)
        cJSON_AddItemToObject(lp, "launch_commands",
                              cJSON_Duplicate(cmds, true));
    if (size != NULL)
        cJSON_AddStringToObject(lp, "resource_size_request", size);
    if (arch != NULL)
        cJSON_AddStringToObject(lp, "architecture", arch);
    return RLMCP_OK;
}

/* The POST /v1/blueprints body from build_blueprint's arguments. */
static int build_body(const struct rlmcp_h *h, const cJSON *args, cJSON **out)
{
    static const char *const maps[] = {"file_mounts", "build_args", "metadata",
                                       NULL};
    cJSON *body = cJSON_CreateObject();
    const cJSON *setup = NULL;
    size_t i;
    int rc;

    *out = NULL;
    if (body == NULL)
        return RLMCP_ENOMEM;
    rc = body_strings(h, args, body);
    if (rc == RLMCP_OK)
        rc = str_array_arg(h, args, "system_setup_commands", &setup);
    if (rc == RLMCP_OK && setup != NULL)
        cJSON_AddItemToObject(body, "system_setup_commands",
                              cJSON_Duplicate(setup, true));
    for (i = 0; maps[i] != NULL && rc == RLMCP_OK; i++) {
        const cJSON *m = NULL;
        rc = rlmcp_h_arg_str_map(h, args, maps[i], &m);
        if (rc == RLMCP_OK && m != NULL)
            cJSON_AddItemToObject(body, maps[i], cJSON_Duplicate(m, true));
    }
    if (rc == RLMCP_OK)
        rc = body_launch(h, args, body);
    if (rc != RLMCP_OK) {
        cJSON_Delete(body);
        return rc;
    }
    *out = body;
    return RLMCP_OK;
}

int bp_start_build(const struct rlmcp_h *h, const char *aj, size_t al,
                   bool *wait, cJSON **view, const char **id)
{
    cJSON *args = NULL, *body = NULL;
    int rc;

    *view = NULL;
    *id = NULL;
    rc = rlmcp_h_args(h, aj, al, &args);
    if (rc == RLMCP_OK && wait != NULL)
        rc = rlmcp_h_arg_bool(h, args, "wait", wait);
    if (rc == RLMCP_OK)
        rc = build_body(h, args, &body);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_request(h, "POST", "/v1/blueprints", body, NULL,
                             "building a blueprint", view);
    cJSON_Delete(args);
    cJSON_Delete(body);
    if (rc != RLMCP_OK)
        return rc;
    *id = str_of(*view, "id");
    if (*id == NULL || !rlmcp_h_id_valid(*id)) {
        *id = NULL;
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "building a blueprint: the Runloop API returned "
                            "a blueprint without a valid id");
    }
    return RLMCP_OK;
}

/* ---- build_blueprint: following the build
 * ---------------------------------------- */

struct follow {
    struct bp *bp;
    const struct rlmcp_h *h;
    const char *id;
    char *get_path, *logs_path, *what;
    size_t seen;       /* log lines already sent as progress */
    double progress;   /* last progress value sent */
    char *last_status; /* last status announced */
    cJSON *logs;       /* the last logs array read (owned by logs_doc) */
    cJSON *logs_doc;
};

static bool status_terminal(const char *st)
{
    return strcmp(st, "build_complete") == 0 || strcmp(st, "failed") == 0 ||
           strcmp(st, "awaiting_upload") == 0;
}

/* Read the build log; a failure here is not fatal to the build. */
static int read_logs(struct follow *f)
{
    cJSON *doc = NULL;
    const cJSON *arr = NULL;
    long status = 0;
    int rc;

    rc = rlmcp_h_request_status(f->h, "GET", f->logs_path, NULL, NULL, f->what,
                                &status, &doc, NULL);
    if (rc != RLMCP_OK)
        return rc;
    arr = cJSON_GetObjectItemCaseSensitive(doc, "logs");
    if (status < 200 || status > 299 || !cJSON_IsArray(arr)) {
        cJSON_Delete(doc);
        return RLMCP_OK;
    }
    cJSON_Delete(f->logs_doc);
    f->logs_doc = doc;
    f->logs = (cJSON *)arr;
    return RLMCP_OK;
}

/* Send the new log lines (and a status change) as one progress message. */
static void announce(struct follow *f, const char *status)
{
    size_t total = (size_t)cJSON_GetArraySize(f->logs);
    bool changed =
        f->last_status == NULL || strcmp(f->last_status, status) != 0;
    char *lines = NULL;
    char *msg = NULL;

    if (total < f->seen)
        f->seen = 0; /* the log was replaced: start over */
    if (total == f->seen && !changed)
        return;
    lines = bp_log_join(f->logs, f->seen, (size_t)f->bp->max_progress);
    msg = rlmcp_h_sprintf("blueprint %s %s%s%s", f->id, status,
                          lines != NULL && lines[0] != '\0' ? "\n" : "",
                          lines != NULL ? lines : "");
    f->progress += 1;
    f->h->api->progress(f->h->call, f->progress, -1, msg);
    f->seen = total;
    if (changed) {
        free(f->last_status);
        f->last_status = strdup(status);
    }
    free(lines);
    free(msg);
}

int bp_hold(const struct rlmcp_h *h, const struct bp *bp, const char *id,
            uint64_t deadline, bool *used, uint64_t *waited_ms)
{
    struct rlmcp_h_req_opts opts = {0};
    cJSON *body = NULL;
    cJSON *out = NULL;
    cJSON *st = NULL;
    char *path = NULL;
    char *what = NULL;
    uint64_t now = rlmcp_h_now_ms();
    uint32_t secs = (uint32_t)((bp->poll_ms + 999) / 1000);
    long status = 0;
    int rc = RLMCP_ENOMEM;

    *used = false;
    *waited_ms = 0;
    if (now >= deadline)
        return RLMCP_OK;
    if ((uint64_t)secs * 1000u > deadline - now)
        secs = (uint32_t)((deadline - now) / 1000u);
    if (secs < 1)
        secs = 1;
    if (secs > 30)
        secs = 30; /* the engine's bound */
    path = rlmcp_h_sprintf("/v1/blueprints/%s/wait_for_status", id);
    what = rlmcp_h_sprintf("waiting for blueprint %s", id);
    body = cJSON_CreateObject();
    st = cJSON_AddArrayToObject(body, "statuses");
    if (path == NULL || what == NULL || st == NULL)
        goto out;
    cJSON_AddItemToArray(st, cJSON_CreateString("build_complete"));
    cJSON_AddItemToArray(st, cJSON_CreateString("failed"));
    cJSON_AddItemToArray(st, cJSON_CreateString("awaiting_upload"));
    cJSON_AddNumberToObject(body, "timeout_seconds", secs);
    opts.timeout_ms = (secs + 15) * 1000u;
    opts.max_retries = 0; /* a 408 is the wait's end, not a failure */
    opts.transport_unreported = true;
    rc = rlmcp_h_request_status(h, "POST", path, body, &opts, what, &status,
                                &out, NULL);
    /* 2xx: ended; 408: still building; anything else (or a transport
     * failure): the caller pauses as without the wait, and reads. */
    *used =
        rc == RLMCP_OK && ((status >= 200 && status <= 299) || status == 408);
    *waited_ms =
        status == 408 ? (uint64_t)secs * 1000u : rlmcp_h_now_ms() - now;
    if (rc == RLMCP_EHTTP || rc == RLMCP_ETIMEDOUT)
        rc = RLMCP_OK;
out:
    free(path);
    free(what);
    cJSON_Delete(body);
    cJSON_Delete(out);
    return rc;
}

/* Poll until a terminal status or the bound; *view_out: the last view. */
static int follow_build(struct follow *f, cJSON **view_out)
{
    uint64_t deadline = rlmcp_h_now_ms() + (uint64_t)f->bp->wait_s * 1000u;
    /* Short pauses first: a cached build ends in well under a second. */
    struct rlmcp_h_poll poll;
    int rc;

    *view_out = NULL;
    rlmcp_h_poll_init(&poll, (uint32_t)f->bp->poll_ms);
    for (;;) {
        const char *st = NULL;
        cJSON_Delete(*view_out);
        *view_out = NULL;
        rc = rlmcp_h_request(f->h, "GET", f->get_path, NULL, NULL, f->what,
                             view_out);
        if (rc == RLMCP_OK)
            rc = read_logs(f);
        if (rc != RLMCP_OK)
            return rc;
        st = str_of(*view_out, "status");
        if (st == NULL)
            return rlmcp_h_fail(f->h, RLMCP_ERR_INTERNAL,
                                "%s: the Runloop API answered without a "
                                "build status",
                                f->what);
        announce(f, st);
        /* Also bounded in time slept, for sleeps that return early. */
        if (status_terminal(st) || rlmcp_h_now_ms() >= deadline ||
            poll.slept_ms >= (uint64_t)f->bp->wait_s * 1000u)
            return RLMCP_OK;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
                *view_out, "supports_wait_for_status"))) {
            bool used = false;
            uint64_t waited_ms = 0;

            rc = bp_hold(f->h, f->bp, f->id, deadline, &used, &waited_ms);
            if (rc != RLMCP_OK)
                return rc;
            if (used) {
                poll.slept_ms += waited_ms;
                continue;
            }
        }
        rc = rlmcp_h_poll_pause(f->h, &poll);
        if (rc != RLMCP_OK)
            return rc;
    }
}

char *bp_failure_text(const char *id, const cJSON *view, const cJSON *logs)
{
    const char *reason = str_of(view, "failure_reason");
    const char *name = str_of(view, "name");
    char *step = bp_log_failing_step(logs);
    char *text = NULL;

    text = rlmcp_h_sprintf(
        "blueprint %s (%s) failed to build%s%s; failing step: %s", id,
        name != NULL ? name : "unnamed", reason != NULL ? ": " : "",
        reason != NULL ? reason : "",
        step != NULL ? step : "(the build log is empty)");
    free(step);
    return text;
}

static int report_failed(struct follow *f, const cJSON *view)
{
    char *text = bp_failure_text(f->id, view, f->logs);
    int rc;

    if (text == NULL)
        return RLMCP_ENOMEM;
    rc = rlmcp_h_fail_remedy(f->h, RLMCP_ERR_INVALID_ARGUMENT, BP_FAILED_REMEDY,
                             "%s", text);
    free(text);
    return rc;
}

int bp_built_result(const struct rlmcp_h *h, const cJSON *view,
                    const cJSON *logs)
{
    cJSON *res = rlmcp_h_pick(view, bp_summary_keys);
    int rc;

    if (res == NULL)
        return RLMCP_ENOMEM;
    cJSON_AddNumberToObject(res, "log_lines", (double)cJSON_GetArraySize(logs));
    rc = rlmcp_h_result_json(h, res);
    cJSON_Delete(res);
    return rc;
}

static int finish_build(struct follow *f, const cJSON *view)
{
    const char *st = str_of(view, "status");

    if (strcmp(st, "failed") == 0)
        return report_failed(f, view);
    if (strcmp(st, "awaiting_upload") == 0)
        return rlmcp_h_fail(f->h, RLMCP_ERR_INTERNAL,
                            "blueprint %s is awaiting an upload, which "
                            "build_blueprint does not provide",
                            f->id);
    if (strcmp(st, "build_complete") != 0)
        return rlmcp_h_fail_remedy(
            f->h, RLMCP_ERR_TIMEOUT,
            "Poll get_blueprint with this blueprint_id until status is "
            "build_complete or failed.",
            "blueprint_id=%s is still %s after %lld s", f->id, st,
            f->bp->wait_s);
    return bp_built_result(f->h, view, f->logs);
}

static int follow_and_finish(struct bp *bp, const struct rlmcp_h *h,
                             const char *id)
{
    struct follow f = {0};
    cJSON *view = NULL;
    int rc = RLMCP_ENOMEM;

    f.bp = bp;
    f.h = h;
    f.id = id;
    f.get_path = rlmcp_h_sprintf("/v1/blueprints/%s", id);
    f.logs_path = rlmcp_h_sprintf("/v1/blueprints/%s/logs", id);
    f.what = rlmcp_h_sprintf("blueprint %s", id);
    if (f.get_path == NULL || f.logs_path == NULL || f.what == NULL)
        goto out;
    rc = follow_build(&f, &view);
    if (rc == RLMCP_OK)
        rc = finish_build(&f, view);
out:
    free(f.get_path);
    free(f.logs_path);
    free(f.what);
    free(f.last_status);
    cJSON_Delete(f.logs_doc);
    cJSON_Delete(view);
    return rc;
}

static int t_build(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct bp *bp = ud;
    struct rlmcp_h h = {bp->api, call};
    cJSON *view = NULL, *res = NULL;
    const char *id = NULL;
    bool wait = true;
    int rc;

    rc = bp_start_build(&h, aj, al, &wait, &view, &id);
    if (rc != RLMCP_OK)
        goto out;
    if (wait) {
        rc = follow_and_finish(bp, &h, id);
        goto out;
    }
    res = rlmcp_h_pick(view, bp_summary_keys);
    if (res == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    if (str_of(res, "status") == NULL)
        cJSON_AddStringToObject(res, "status", "queued");
    rc = rlmcp_h_result_json(&h, res);
out:
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* ---- list / get / logs / delete
 * ---------------------------------------------------- */

static int t_list(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    static const struct rlmcp_h_list_filter filters[] = {
        {"name", false},
        {"status", false},
    };
    struct bp *bp = ud;
    struct rlmcp_h h = {bp->api, call};
    cJSON *args = NULL;
    bool pub = false;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(&h, args, "public", &pub);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_list_args(
            &h, args, pub ? "/v1/blueprints/list_public" : "/v1/blueprints",
            filters, sizeof(filters) / sizeof(filters[0]), 100, "blueprints",
            bp_summary_keys, "listing blueprints");
    cJSON_Delete(args);
    return rlmcp_h_ret(rc);
}

/* Parse the arguments, take blueprint_id, build path and what. */
static int id_call_prep(const struct rlmcp_h *h, const char *aj, size_t al,
                        const char *suffix, cJSON **args, const char **id,
                        char **path, char **what)
{
    int rc = rlmcp_h_args(h, aj, al, args);

    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, *args, "blueprint_id", true, id);
    if (rc != RLMCP_OK)
        return rc;
    *path = rlmcp_h_sprintf("/v1/blueprints/%s%s", *id, suffix);
    *what = rlmcp_h_sprintf("blueprint %s", *id);
    return *path != NULL && *what != NULL ? RLMCP_OK : RLMCP_ENOMEM;
}

static int t_get(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct bp *bp = ud;
    struct rlmcp_h h = {bp->api, call};
    cJSON *args = NULL, *view = NULL;
    const char *id = NULL;
    char *path = NULL, *what = NULL;
    int rc;

    rc = id_call_prep(&h, aj, al, "", &args, &id, &path, &what);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_request(&h, "GET", path, NULL, NULL, what, &view);
    if (rc == RLMCP_OK &&
        (!cJSON_IsObject(view) || str_of(view, "id") == NULL ||
         str_of(view, "status") == NULL))
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INTERNAL,
                          "%s: the Runloop API answered without an id and "
                          "status",
                          what);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_json(&h, view);
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(view);
    return rlmcp_h_ret(rc);
}

static int t_logs(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct bp *bp = ud;
    struct rlmcp_h h = {bp->api, call};
    cJSON *args = NULL, *doc = NULL, *res = NULL;
    const cJSON *logs = NULL;
    const char *id = NULL;
    char *path = NULL, *what = NULL;
    long long tail = 200;
    int rc;

    rc = id_call_prep(&h, aj, al, "/logs", &args, &id, &path, &what);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "tail", false, 1, 10000, &tail);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_request(&h, "GET", path, NULL, NULL, what, &doc);
    if (rc != RLMCP_OK)
        goto out;
    logs = cJSON_GetObjectItemCaseSensitive(doc, "logs");
    if (!cJSON_IsArray(logs)) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INTERNAL,
                          "%s: the Runloop API answered without a logs list",
                          what);
        goto out;
    }
    res = bp_log_tail(id, logs, (size_t)tail);
    if (res == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = rlmcp_h_result_json(&h, res);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(doc);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

static int t_delete(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct bp *bp = ud;
    struct rlmcp_h h = {bp->api, call};

    return rlmcp_h_ret(rlmcp_h_delete_by_id(
        &h, aj, al, "blueprint_id", "/v1/blueprints/", "/delete", "blueprint"));
}

/* ---- tag_blueprint ------------------------------------------------------ */

/* A backend without blueprint tags (Runloop's API): said as such when the
 * blueprint itself is there. */
static int tag_unsupported(const struct rlmcp_h *h, const char *id, long status,
                           const char *msg, const char *what)
{
    char *path = rlmcp_h_sprintf("/v1/blueprints/%s", id);
    bool exists = false;
    int rc = rlmcp_h_exists(h, path, what, &exists);

    free(path);
    if (rc != RLMCP_OK)
        return rc;
    if (!exists)
        return rlmcp_h_fail_remedy(
            h, rlmcp_h_code_for_status(status),
            "Check the id: list_blueprints with the name lists its builds.",
            "%s: Runloop API answered HTTP %ld%s%s", what, status,
            msg != NULL && msg[0] ? ": " : "", msg != NULL ? msg : "");
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_INVALID_ARGUMENT,
        "This backend has no blueprint tags (Runloop's API has none; the "
        "local engine has): use the build's id (blueprint_id), or its name "
        "for the latest successful build.",
        "%s: the backend has no blueprint tags (POST /v1/blueprints/%s/tag "
        "answered HTTP %ld)",
        what, id, status);
}

static int t_tag(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct bp *bp = ud;
    struct rlmcp_h h = {bp->api, call};
    cJSON *args = NULL, *body = NULL, *view = NULL, *res = NULL;
    const char *id = NULL, *tag = NULL;
    char *path = NULL, *what = NULL, *msg = NULL;
    long status = 0;
    int rc;

    rc = id_call_prep(&h, aj, al, "/tag", &args, &id, &path, &what);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "tag", true, &tag);
    if (rc != RLMCP_OK)
        goto out;
    body = cJSON_CreateObject();
    if (body == NULL || cJSON_AddStringToObject(body, "tag", tag) == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = rlmcp_h_request_status(&h, "POST", path, body, NULL, what, &status,
                                &view, &msg);
    if (rc != RLMCP_OK)
        goto out;
    if (status == 404 || status == 405 || status == 501) {
        rc = tag_unsupported(&h, id, status, msg, what);
        goto out;
    }
    if (status < 200 || status > 299) {
        rc = rlmcp_h_fail(&h, rlmcp_h_code_for_status(status),
                          "%s: Runloop API answered HTTP %ld%s%s", what, status,
                          msg != NULL && msg[0] ? ": " : "",
                          msg != NULL ? msg : "");
        goto out;
    }
    res = rlmcp_h_pick(view, bp_summary_keys);
    if (res == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = rlmcp_h_result_json(&h, res);
out:
    free(path);
    free(what);
    free(msg);
    cJSON_Delete(args);
    cJSON_Delete(body);
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* ---- registration
 * ------------------------------------------------------------------- */

#define RO_ANN                                                                 \
    "{\"readOnlyHint\":true,\"destructiveHint\":false,"                        \
    "\"idempotentHint\":true,\"openWorldHint\":true}"

static const struct rlmcp_h_tool specs[] = {
    {"build_blueprint", "Build a blueprint",
     "Build a reusable devbox image (blueprint) from a Dockerfile and/or "
     "setup commands and follow the build: new build log lines arrive as "
     "progress notifications until it is build_complete. A failed build is "
     "an error naming the failing step. Then start devboxes from it with "
     "create_devbox blueprint_id=<id> or blueprint_name=<name>.",
     schema_build_blueprint, schema_build_blueprint_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":false,\"openWorldHint\":true}",
     t_build, true},
    {"list_blueprints", "List blueprints",
     "List blueprint builds (newest first), optionally by name or status; "
     "public=true lists the public prebuilt ones. Page with starting_after.",
     schema_list_blueprints, schema_list_blueprints_out, RO_ANN, t_list, false},
    {"tag_blueprint", "Tag a blueprint version",
     "Give one build (version) of a blueprint name a tag such as stable, "
     "moving it from the build that had it; create_devbox (and run_code) "
     "blueprint_name='<name>:<tag>' then starts that build. list_blueprints "
     "with the name lists its versions, newest first, with their tags. "
     "Needs a backend with tags: the local engine has them, Runloop's API "
     "does not.",
     schema_tag_blueprint, schema_tag_blueprint_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":true,\"openWorldHint\":true}",
     t_tag, false},
    {"get_blueprint", "Get a blueprint",
     "Get one blueprint: build status (queued, provisioning, building, "
     "build_complete, failed), failure_reason and its build parameters.",
     schema_get_blueprint, schema_get_blueprint_out, RO_ANN, t_get, false},
    {"get_blueprint_logs", "Get a blueprint's build log",
     "Read the build log of a blueprint (the last `tail` lines), e.g. to see "
     "why a build failed.",
     schema_get_blueprint_logs, schema_get_blueprint_logs_out, RO_ANN, t_logs,
     false},
    {"delete_blueprint", "Delete a blueprint",
     "Delete a blueprint build permanently. The API refuses while snapshots "
     "depend on it (delete those first).",
     schema_delete_blueprint, schema_delete_blueprint_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":true,"
     "\"idempotentHint\":true,\"openWorldHint\":true}",
     t_delete, false},
};

/* The host has checked the section against schemas/config.json (types,
 * ranges, no unknown keys); this fills the defaults. */
static int bp_setup(void *state, rlmcp_plugin *self,
                    const struct rlmcp_host_api *api, const cJSON *cfg)
{
    static const struct rlmcp_h_cfg_default keys[] = {
        {"build_wait_seconds", 1800, offsetof(struct bp, wait_s)},
        {"poll_interval_ms", 1000, offsetof(struct bp, poll_ms)},
        {"max_progress_bytes", 4096, offsetof(struct bp, max_progress)},
    };
    struct bp *bp = state;

    bp->api = api;
    rlmcp_h_cfg_defaults(cfg, keys, sizeof(keys) / sizeof(keys[0]), bp);
    /* build_blueprint may follow a build for build_wait_seconds, and may
     * run as an MCP task (specs[0]). */
    return rlmcp_h_register_tools_task(
        self, api, specs, sizeof(specs) / sizeof(specs[0]), &bp_task_def, bp,
        (uint32_t)(bp->wait_s + 60) * 1000u, NULL);
}

RLMCP_H_PLUGIN_DEFINE("blueprints", "0.1.0",
                      "Blueprints: build (with log progress), list, get, "
                      "logs, delete",
                      struct bp, bp_setup, rlmcp_h_shutdown_free, schema_config)
