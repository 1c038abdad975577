/*
 * run.c - run_code (reusable code-testing sandboxes) and the
 * run_<language> tools (one devbox per language).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"

#define MANAGED_BY "runloop-mcp.exec"

static const char *const running_set[] = {"running", "failure", "shutdown",
                                          NULL};
static const char *const suspended_set[] = {"suspended", "failure", "shutdown",
                                            NULL};

static const char *md_get(const cJSON *dbx, const char *key)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(dbx, "metadata");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(md, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *str_field(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool eq(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

int exec_find_devbox(const struct rlmcp_h *h, const char *status,
                     exec_score_fn score, const void *ctx, cJSON **out)
{
    char *after = NULL;
    int best_score = -1;
    int page_no;
    int rc = RLMCP_OK;

    *out = NULL;
    for (page_no = 0; page_no < 5; page_no++) {
        cJSON *page = NULL;
        const cJSON *it = NULL, *last = NULL;
        char *path = rlmcp_h_sprintf(
            "/v1/devboxes?limit=100%s%s%s%s", status ? "&status=" : "",
            status ? status : "", after ? "&starting_after=" : "",
            after ? after : "");

        if (path == NULL) {
            rc = RLMCP_ENOMEM;
            break;
        }
        rc = rlmcp_h_request(h, "GET", path, NULL, NULL, "listing devboxes",
                             &page);
        free(path);
        if (rc != RLMCP_OK) {
            cJSON_Delete(page);
            break;
        }
        cJSON_ArrayForEach(it,
                           cJSON_GetObjectItemCaseSensitive(page, "devboxes"))
        {
            int s = score(it, ctx);
            last = it;
            if (s > best_score && str_field(it, "id") != NULL &&
                rlmcp_h_id_valid(str_field(it, "id"))) {
                best_score = s;
                cJSON_Delete(*out);
                *out = cJSON_Duplicate(it, true);
            }
        }
        free(after);
        after = NULL;
        if (last != NULL && str_field(last, "id") != NULL &&
            rlmcp_h_id_valid(str_field(last, "id")) &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(page, "has_more")))
            after = strdup(str_field(last, "id"));
        cJSON_Delete(page);
        if (after == NULL)
            break;
    }
    free(after);
    if (rc != RLMCP_OK) {
        cJSON_Delete(*out);
        *out = NULL;
    }
    return rc;
}

/*
 * POST /v1/devboxes for a blueprint_name the account has no build of: the
 * backend resolves it (Runloop's public images, e.g.
 * runloop/universal-ubuntu-24.04-x86_64; the local engine maps them to its
 * own), and a name it does not know is not_found, not a bad request.
 */
static int create_by_name(const struct rlmcp_h *h, const cJSON *body,
                          const char *bp_name, char **id_out)
{
    struct rlmcp_h_req_opts o = {0};
    cJSON *dbx = NULL;
    char *msg = NULL;
    const char *id = NULL;
    long status = 0;
    int rc;

    /* Not abandoned on cancellation: the caller shuts down what it made. */
    o.flags = RLMCP_HTTP_IGNORE_CANCEL;
    o.max_retries = -1;
    rc = rlmcp_h_request_status(h, "POST", "/v1/devboxes", body, &o,
                                "creating a devbox", &status, &dbx, &msg);
    if (rc != RLMCP_OK)
        goto out;
    if (status == 400 || status == 404) {
        rc = rlmcp_h_fail_remedy(
            h, RLMCP_ERR_NOT_FOUND,
            "Build it first with build_blueprint, check the name with "
            "list_blueprints, or name one of the backend's images (e.g. "
            "runloop/universal-ubuntu-24.04-x86_64).",
            "no successful build of a blueprint or image named '%s'%s%.600s",
            bp_name, msg != NULL && msg[0] ? ": " : "", msg != NULL ? msg : "");
        goto out;
    }
    if (status < 200 || status > 299) {
        rc = rlmcp_h_fail(h, rlmcp_h_code_for_status(status),
                          "creating a devbox: Runloop API answered HTTP "
                          "%ld%s%.600s",
                          status, msg != NULL && msg[0] ? ": " : "",
                          msg != NULL ? msg : "");
        goto out;
    }
    id = str_field(dbx, "id");
    if (id == NULL || !rlmcp_h_id_valid(id)) {
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "the Runloop API returned a devbox without an id");
        goto out;
    }
    *id_out = strdup(id);
    rc = *id_out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
out:
    free(msg);
    cJSON_Delete(dbx);
    return rc;
}

/*
 * Create a devbox and wait until it runs; *dbx_out is its last view.
 * by_name: bp_name is not a build of the account (see create_by_name).
 */
static int create_devbox(struct ex *ex, const struct rlmcp_h *h,
                         cJSON *metadata, const char *bp_name,
                         const char *bp_id, bool by_name, char **id_out,
                         cJSON **dbx_out)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *lp = NULL;
    int rc = RLMCP_ENOMEM;

    *id_out = NULL;
    *dbx_out = NULL;
    if (body == NULL)
        goto out;
    if (bp_name != NULL)
        cJSON_AddStringToObject(body, "blueprint_name", bp_name);
    if (bp_id != NULL)
        cJSON_AddStringToObject(body, "blueprint_id", bp_id);
    cJSON_AddItemToObject(body, "metadata", cJSON_Duplicate(metadata, true));
    lp = cJSON_AddObjectToObject(body, "launch_parameters");
    cJSON_AddNumberToObject(lp, "keep_alive_time_seconds",
                            (double)ex->keep_alive_s);
    if (by_name && bp_name != NULL)
        rc = create_by_name(h, body, bp_name, id_out);
    else
        rc = rlmcp_h_devbox_create(h, body, "creating a devbox", id_out);
    if (rc != RLMCP_OK)
        goto out;
    if (h->api->is_cancelled(h->call)) {
        rc = RLMCP_ECANCELLED;
        goto out;
    }
    rc = rlmcp_h_devbox_wait(h, *id_out, running_set,
                             (uint64_t)ex->create_wait_s * 1000u, dbx_out);
out:
    cJSON_Delete(body);
    return rc;
}

static int not_ready(const struct rlmcp_h *h, const char *id, const cJSON *dbx,
                     long long waited_s)
{
    const char *st = rlmcp_h_devbox_status(dbx);
    /* The local engine says why in words. */
    const cJSON *fm = cJSON_GetObjectItemCaseSensitive(dbx, "failure_message");

    if (eq(st, "failure") || eq(st, "shutdown"))
        return rlmcp_h_fail_remedy(h, RLMCP_ERR_DEVBOX_NOT_RUNNING,
                                   "Call the tool again to get a new devbox.",
                                   "devbox %s stopped while starting "
                                   "(status %s)%s%.600s",
                                   id, st, cJSON_IsString(fm) ? ": " : "",
                                   cJSON_IsString(fm) ? fm->valuestring : "");
    if (rlmcp_h_devbox_preparing(h, dbx) != RLMCP_OK)
        return RLMCP_H_REPORTED;
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_DEVBOX_NOT_READY,
        "The sandbox is still starting (e.g. pulling its image); call the "
        "tool again in a few seconds, or poll get_devbox.",
        "devbox_id=%s is not running yet after %lld s (status %s)", id,
        waited_s, st);
}

static void shutdown_devbox(const struct rlmcp_h *h, const char *id)
{
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s/shutdown?force=true", id);

    if (path != NULL)
        exec_cleanup_request(h, "POST", path, NULL);
    free(path);
}

static int write_files(const struct rlmcp_h *h, const char *id,
                       const cJSON *files)
{
    const cJSON *it = NULL;
    int rc = RLMCP_OK;

    cJSON_ArrayForEach(it, files)
    {
        rc = exec_write_file(h, id, it->string, it->valuestring);
        if (rc != RLMCP_OK)
            break;
    }
    return rc;
}

/* ---- run_code ------------------------------------------------------------ */

struct code_ctx {
    const char *purpose;
    const char *bp_name;
    const char *bp_id;
};

/*
 * A blueprint asked for: only a sandbox of that very build is reused (the
 * name was resolved to its latest successful build first). None asked:
 * a sandbox from the default image is preferred.
 */
static int score_code(const cJSON *dbx, const void *vctx)
{
    const struct code_ctx *c = vctx;

    if (!eq(rlmcp_h_devbox_status(dbx), "running") ||
        !eq(md_get(dbx, "purpose"), c->purpose))
        return -1;
    if (c->bp_id != NULL)
        return eq(str_field(dbx, "blueprint_id"), c->bp_id) ? 2 : -1;
    /* An image name (no build of the account): the sandboxes made for it. */
    if (c->bp_name != NULL)
        return eq(md_get(dbx, "blueprint_name"), c->bp_name) ? 2 : -1;
    /* No blueprint asked: prefer a sandbox from the default image. */
    return str_field(dbx, "blueprint_id") == NULL &&
                   md_get(dbx, "blueprint_name") == NULL
               ? 2
               : 1;
}

/*
 * The blueprint run_code was asked for, checked: blueprint_id must exist
 * and be built; blueprint_name becomes its latest successful build's id
 * (*id_out, malloc'd). Unknown ids are not_found; a name without a build
 * leaves *id_out NULL: the backend resolves it as an image name at create.
 */
static int resolve_blueprint(const struct rlmcp_h *h, const char *name,
                             const char *id, char **id_out)
{
    char *q = NULL, *path = NULL;
    cJSON *got = NULL;
    const cJSON *it = NULL;
    long status = 0;
    int rc = RLMCP_ENOMEM;

    *id_out = NULL;
    if (id != NULL) {
        path = rlmcp_h_sprintf("/v1/blueprints/%s", id);
        if (path == NULL)
            goto out;
        rc = rlmcp_h_request_status(h, "GET", path, NULL, NULL, "blueprint",
                                    &status, &got, NULL);
        if (rc == RLMCP_OK && status == 404)
            rc = rlmcp_h_fail(h, RLMCP_ERR_NOT_FOUND,
                              "blueprint_id %s does not exist", id);
        else if (rc == RLMCP_OK && (status < 200 || status > 299))
            rc = rlmcp_h_fail(h, rlmcp_h_code_for_status(status),
                              "blueprint %s: Runloop API answered HTTP %ld", id,
                              status);
        else if (rc == RLMCP_OK &&
                 !eq(str_field(got, "status"), "build_complete"))
            rc = rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                              "blueprint %s is %s, not build_complete", id,
                              str_field(got, "status") != NULL
                                  ? str_field(got, "status")
                                  : "unknown");
        if (rc == RLMCP_OK && (*id_out = strdup(id)) == NULL)
            rc = RLMCP_ENOMEM;
        goto out;
    }
    q = rlmcp_h_url_encode(name);
    path = q != NULL ? rlmcp_h_sprintf("/v1/blueprints?name=%s&status="
                                       "build_complete&limit=1",
                                       q)
                     : NULL;
    if (path == NULL)
        goto out;
    rc =
        rlmcp_h_request(h, "GET", path, NULL, NULL, "listing blueprints", &got);
    if (rc != RLMCP_OK)
        goto out;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(got, "blueprints"))
    {
        if (eq(str_field(it, "name"), name) &&
            eq(str_field(it, "status"), "build_complete")) {
            *id_out = strdup(str_field(it, "id"));
            rc = *id_out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
            goto out;
        }
    }
    rc = RLMCP_OK;
out:
    free(q);
    free(path);
    cJSON_Delete(got);
    return rc;
}

/*
 * A running sandbox for run_code: *found (reused, a copy of its view) or
 * *created (its id; the caller shuts it down on failure, also when this
 * returns an error after creating it).
 */
static int code_devbox(struct ex *ex, const struct rlmcp_h *h,
                       const struct code_ctx *ctx, cJSON **found,
                       char **created)
{
    cJSON *md = NULL, *ready = NULL;
    int rc;

    rc = exec_find_devbox(h, "running", score_code, ctx, found);
    if (rc != RLMCP_OK || *found != NULL)
        return rc;
    md = cJSON_CreateObject();
    if (md == NULL)
        return RLMCP_ENOMEM;
    cJSON_AddStringToObject(md, "purpose", ex->purpose);
    if (ctx->bp_name != NULL)
        cJSON_AddStringToObject(md, "blueprint_name", ctx->bp_name);
    /* The resolved id when there is one: the very build chosen above. */
    rc = create_devbox(ex, h, md, ctx->bp_id != NULL ? NULL : ctx->bp_name,
                       ctx->bp_id, ctx->bp_id == NULL, created, &ready);
    if (rc == RLMCP_OK && !eq(rlmcp_h_devbox_status(ready), "running"))
        rc = not_ready(h, *created, ready, ex->create_wait_s);
    cJSON_Delete(md);
    cJSON_Delete(ready);
    return rc;
}

/*
 * run_code with `context`: its `code` (Python) runs in that code context;
 * what only a command run takes is refused, by name.
 */
static int run_code_in_context(struct ex *ex, const struct rlmcp_h *h,
                               const cJSON *args)
{
    static const char *const not_with[] = {"command",
                                           "args",
                                           "files",
                                           "blueprint_name",
                                           "blueprint_id",
                                           "environment_variables",
                                           NULL};
    const char *cid = NULL, *code = NULL;
    long long timeout_ms = 0;
    size_t i;
    int rc;

    rc = rlmcp_h_arg_str(h, args, "context", true, &cid);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "code", false, &code);
    if (rc == RLMCP_OK)
        rc = exec_arg_timeout(ex, h, args, &timeout_ms);
    if (rc != RLMCP_OK)
        return rc;
    for (i = 0; not_with[i] != NULL; i++)
        if (cJSON_GetObjectItemCaseSensitive(args, not_with[i]) != NULL)
            return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                "'%s' does not go with 'context': a context "
                                "runs Python code, given as 'code'",
                                not_with[i]);
    if (code == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "with 'context', give the Python code to run "
                            "as 'code', e.g. {\"context\": \"%s\", "
                            "\"code\": \"x = 1\"}",
                            cid);
    return ctx_run_cell(ex, h, cid, code, timeout_ms, "python");
}

int run_code_tool(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    struct code_ctx ctx = {ex->purpose, NULL, NULL};
    struct exec_params p = {0};
    cJSON *args = NULL, *found = NULL, *result = NULL;
    const cJSON *files = NULL, *env = NULL, *it = NULL;
    char *command = NULL;
    char *created = NULL, *cmd = NULL, *bp_id = NULL;
    const char *id = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK &&
        cJSON_GetObjectItemCaseSensitive(args, "context") != NULL) {
        rc = run_code_in_context(ex, &h, args);
        goto out;
    }
    if (rc == RLMCP_OK &&
        cJSON_GetObjectItemCaseSensitive(args, "code") != NULL) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "'code' runs in a code context: give its id as "
                          "'context' too (create_code_context makes one), or "
                          "run a 'command' instead");
        goto out;
    }
    if (rc == RLMCP_OK)
        rc = exec_arg_command(&h, args, &command);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str_map(&h, args, "files", &files);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str_map(&h, args, "environment_variables", &env);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "blueprint_name", false, &ctx.bp_name);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "blueprint_id", false, &ctx.bp_id);
    if (rc == RLMCP_OK)
        rc = exec_arg_timeout(ex, &h, args, &p.timeout_ms);
    if (rc != RLMCP_OK)
        goto out;
    if (ctx.bp_name != NULL && ctx.bp_id != NULL) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "give blueprint_name or blueprint_id, not both");
        goto out;
    }
    if (ctx.bp_name == NULL && ctx.bp_id == NULL)
        ctx.bp_name = ex->default_blueprint;
    if (ctx.bp_name != NULL || ctx.bp_id != NULL) {
        rc = resolve_blueprint(&h, ctx.bp_name, ctx.bp_id, &bp_id);
        if (rc != RLMCP_OK)
            goto out;
        ctx.bp_id = bp_id;
    }
    cJSON_ArrayForEach(it, files)
    {
        if (it->string[0] == '\0') {
            rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                              "files: a file path must not be empty");
            goto out;
        }
    }
    rc = exec_prefix(&h, command, NULL, env, &cmd);
    if (rc != RLMCP_OK)
        goto out;
    rc = code_devbox(ex, &h, &ctx, &found, &created);
    if (rc != RLMCP_OK)
        goto fail;
    id = found != NULL ? str_field(found, "id") : created;
    rc = write_files(&h, id, files);
    if (rc != RLMCP_OK)
        goto fail;
    p.devbox_id = id;
    p.command = cmd;
    rc = exec_run(ex, &h, &p, &result);
    if (rc != RLMCP_OK)
        goto fail;
    cJSON_AddBoolToObject(result, "reused", found != NULL);
    /* Which sandbox and image ran it. */
    if (bp_id != NULL)
        cJSON_AddStringToObject(result, "blueprint_id", bp_id);
    else
        cJSON_AddNullToObject(result, "blueprint_id");
    if (ctx.bp_name != NULL)
        cJSON_AddStringToObject(result, "blueprint_name", ctx.bp_name);
    else
        cJSON_AddNullToObject(result, "blueprint_name");
    rc = rlmcp_h_result_json(&h, result);
    goto out;
fail:
    /* A sandbox made for this call does not outlive its failure. */
    if (created != NULL)
        shutdown_devbox(&h, created);
out:
    free(created);
    free(command);
    free(cmd);
    free(bp_id);
    cJSON_Delete(args);
    cJSON_Delete(found);
    cJSON_Delete(result);
    return rlmcp_h_ret(rc);
}

/* ---- run_<language>
 * ---------------------------------------------------------- */

/*
 * What a language devbox was made from, kept in its metadata: the tool's
 * blueprint, or "default" (the engine's default image).  A devbox made
 * for another blueprint, or before devboxes were tagged (possibly without
 * the tool's runtime), is never reused for the tool.
 */
#define LANG_IMAGE_KEY "image"

static const char *lang_image(const struct lang *l)
{
    return l->blueprint != NULL ? l->blueprint : "default";
}

static int score_lang(const cJSON *dbx, const void *vctx)
{
    const struct lang *l = vctx;
    const char *st = rlmcp_h_devbox_status(dbx);

    if (!eq(md_get(dbx, "language"), l->name) ||
        !eq(md_get(dbx, "managed_by"), MANAGED_BY) ||
        !eq(md_get(dbx, LANG_IMAGE_KEY), lang_image(l)))
        return -1;
    if (eq(st, "shutdown") || eq(st, "failure") || eq(st, ""))
        return -1;
    if (eq(st, "running"))
        return 3;
    if (eq(st, "suspended") || eq(st, "suspending") || eq(st, "resuming"))
        return 2;
    return 1;
}

/*
 * Expand {file}, {dir} and {stem} (the path without its extension), each
 * shell-quoted.
 */
char *run_expand(const char *tmpl, const char *file)
{
    const char *slash = strrchr(file, '/');
    const char *dot = strrchr(file, '.');
    char *dir = slash != NULL && slash != file
                    ? strndup(file, (size_t)(slash - file))
                    : strdup("/");
    char *stem = dot != NULL && (slash == NULL || dot > slash)
                     ? strndup(file, (size_t)(dot - file))
                     : strdup(file);
    char *qf = rlmcp_h_shell_quote(file);
    char *qd = dir != NULL ? rlmcp_h_shell_quote(dir) : NULL;
    char *qs = stem != NULL ? rlmcp_h_shell_quote(stem) : NULL;
    char *out = NULL;
    size_t cap = strlen(tmpl) + 1, n = 0;
    const char *p;

    if (qf == NULL || qd == NULL || qs == NULL)
        goto out;
    for (p = tmpl; *p != '\0'; p++) {
        if (strncmp(p, "{file}", 6) == 0)
            cap += strlen(qf);
        else if (strncmp(p, "{dir}", 5) == 0)
            cap += strlen(qd);
        else if (strncmp(p, "{stem}", 6) == 0)
            cap += strlen(qs);
    }
    out = malloc(cap);
    if (out == NULL)
        goto out;
    for (p = tmpl; *p != '\0';) {
        const char *sub = NULL;
        size_t skip = 1;
        if (strncmp(p, "{file}", 6) == 0) {
            sub = qf;
            skip = 6;
        } else if (strncmp(p, "{dir}", 5) == 0) {
            sub = qd;
            skip = 5;
        } else if (strncmp(p, "{stem}", 6) == 0) {
            sub = qs;
            skip = 6;
        }
        if (sub != NULL) {
            memcpy(out + n, sub, strlen(sub));
            n += strlen(sub);
        } else {
            out[n++] = *p;
        }
        p += skip;
    }
    out[n] = '\0';
out:
    free(dir);
    free(stem);
    free(qf);
    free(qd);
    free(qs);
    return out;
}

static bool abs_path_ok(const char *p)
{
    return p[0] == '/' && strchr(p, '\n') == NULL && strlen(p) < 4096 &&
           strstr(p, "/../") == NULL;
}

/* Bring the found language devbox to running; creates when none. */
static int lang_devbox(struct lang *l, const struct rlmcp_h *h, cJSON *found,
                       char **id_out)
{
    struct ex *ex = l->ex;
    cJSON *view = NULL, *md = NULL;
    const char *st = rlmcp_h_devbox_status(found);
    const char *id = str_field(found, "id");
    char *created = NULL, *path = NULL;
    int rc = RLMCP_OK;

    *id_out = NULL;
    if (found == NULL) {
        md = cJSON_CreateObject();
        cJSON_AddStringToObject(md, "language", l->name);
        cJSON_AddStringToObject(md, "managed_by", MANAGED_BY);
        cJSON_AddStringToObject(md, LANG_IMAGE_KEY, lang_image(l));
        rc = create_devbox(ex, h, md, l->blueprint, NULL, false, &created,
                           &view);
        cJSON_Delete(md);
        if (rc != RLMCP_OK)
            goto out;
        id = created;
    } else if (eq(st, "running")) {
        *id_out = strdup(id);
        return *id_out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
    } else {
        if (eq(st, "suspending")) {
            rc =
                rlmcp_h_devbox_wait(h, id, suspended_set,
                                    (uint64_t)ex->create_wait_s * 1000u, &view);
            if (rc != RLMCP_OK)
                goto out;
            st = rlmcp_h_devbox_status(view);
        }
        if (eq(st, "suspended")) {
            char *what = rlmcp_h_sprintf("resuming devbox %s", id);
            path = rlmcp_h_sprintf("/v1/devboxes/%s/resume", id);
            rc = path != NULL && what != NULL
                     ? rlmcp_h_request(h, "POST", path, NULL, NULL, what, NULL)
                     : RLMCP_ENOMEM;
            free(what);
            if (rc != RLMCP_OK)
                goto out;
        }
        cJSON_Delete(view);
        view = NULL;
        rc = rlmcp_h_devbox_wait(h, id, running_set,
                                 (uint64_t)ex->create_wait_s * 1000u, &view);
        if (rc != RLMCP_OK)
            goto out;
    }
    if (!eq(rlmcp_h_devbox_status(view), "running")) {
        rc = not_ready(h, id, view, ex->create_wait_s);
        goto out;
    }
    *id_out = strdup(id);
    if (*id_out == NULL)
        rc = RLMCP_ENOMEM;
out:
    free(created);
    free(path);
    cJSON_Delete(view);
    return rc;
}

int run_lang_tool(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct lang *l = ud;
    struct ex *ex = l->ex;
    struct rlmcp_h h = {ex->api, call};
    struct exec_params p = {0};
    cJSON *args = NULL, *found = NULL, *result = NULL;
    const char *code = NULL, *file = NULL, *cid = NULL;
    char *def_file = NULL, *cmd = NULL, *id = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "code", false, &code);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "file_path", false, &file);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "context", false, &cid);
    if (rc == RLMCP_OK)
        rc = exec_arg_timeout(ex, &h, args, &p.timeout_ms);
    if (rc != RLMCP_OK)
        goto out;
    if (code == NULL) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "missing required argument 'code'");
        goto out;
    }
    if (cid != NULL && file != NULL) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "'file_path' does not go with 'context': a context "
                          "runs the code as a cell, not from a file");
        goto out;
    }
    if (cid != NULL) {
        rc = ctx_run_cell(ex, &h, cid, code, p.timeout_ms, l->name);
        goto out;
    }
    if (file == NULL) {
        def_file = rlmcp_h_sprintf("/home/user/code.%s", l->extension);
        file = def_file;
    } else if (!abs_path_ok(file)) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'file_path' must be an absolute path "
                          "without '..' or newlines, e.g. /home/user/main.%s",
                          l->extension);
        goto out;
    }
    cmd = file != NULL ? run_expand(l->command, file) : NULL;
    if (cmd == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = exec_find_devbox(&h, NULL, score_lang, l, &found);
    if (rc == RLMCP_OK)
        rc = lang_devbox(l, &h, found, &id);
    if (rc == RLMCP_OK)
        rc = exec_write_file(&h, id, file, code);
    if (rc != RLMCP_OK)
        goto out;
    p.devbox_id = id;
    p.command = cmd;
    rc = exec_run(ex, &h, &p, &result);
    if (l->suspend_after) {
        char *path = rlmcp_h_sprintf("/v1/devboxes/%s/suspend", id);
        if (path != NULL)
            exec_cleanup_request(&h, "POST", path, NULL);
        free(path);
    }
    if (rc != RLMCP_OK)
        goto out;
    cJSON_AddStringToObject(result, "language", l->name);
    cJSON_AddStringToObject(result, "file_path", file);
    rc = rlmcp_h_result_json(&h, result);
out:
    free(def_file);
    free(cmd);
    free(id);
    cJSON_Delete(args);
    cJSON_Delete(found);
    cJSON_Delete(result);
    return rlmcp_h_ret(rc);
}
