/*
 * context.c - code contexts: run_code and run_python with `context` run
 * their code in a live IPython kernel that keeps variables, imports and
 * data between calls, plus create/list/restart/delete_code_context.
 *
 * Every context lives in one contexts devbox (the universal image, tagged
 * in its metadata) whose entrypoint is ctxgw.py, a gateway that keeps one
 * kernel per context and answers JSON on port CTX_PORT inside the devbox.
 * The plugin reaches it through the devbox's authenticated tunnel
 * (runloop_tunnel_request): a warm cell is one devbox read and one HTTP
 * round trip, no process start. The plugin keeps no state: a context id
 * names its devbox ("ctx_<name>_<devbox_id>"), so contexts outlive the
 * host and end with their devbox.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "exec_internal.h"

#define CTX_PORT 49999
#define CTX_DIR "/tmp/rlmcp-contexts"
#define CTX_EOF "RLMCP_CTXGW_EOF"
#define CTX_MANAGED_BY "runloop-mcp.exec"
#define CTX_ROLE "code-contexts"
#define CTX_PREFIX "ctx_"
#define CTX_NAME_LEN 8
#define CTX_RUN_LEN 16 /* hex digits of a cell's run id */
/* How long one gateway request waits for the cell: the stream of a
 * running cell reaches the agent at this pace. */
#define CTX_POLL_MS 1000
/* What a cancelled or timed-out call still spends reading the cell's end
 * after interrupting it. */
#define CTX_STOP_MS 5000

static const char *const running_set[] = {"running", "failure", "shutdown",
                                          NULL};

static const char remedy_new[] =
    "Create one with create_code_context and pass its context_id; "
    "list_code_contexts shows the live ones.";

/* The gateway of the contexts devbox: its id and tunnel. */
struct gw {
    char *devbox_id;
    char *key;
    char *token;
};

static void gw_free(struct gw *g)
{
    free(g->devbox_id);
    free(g->key);
    free(g->token);
    memset(g, 0, sizeof(*g));
}

static const char *str_field(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static bool eq(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static bool is_contexts_devbox(const cJSON *dbx)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(dbx, "metadata");

    return eq(str_field(md, "managed_by"), CTX_MANAGED_BY) &&
           eq(str_field(md, "role"), CTX_ROLE);
}

static int score_contexts(const cJSON *dbx, const void *unused)
{
    (void)unused;
    if (!is_contexts_devbox(dbx))
        return -1;
    return eq(rlmcp_h_devbox_status(dbx), "running") ? 1 : -1;
}

/* The image of the contexts devbox: the python tool's, else universal. */
static const char *ctx_image(const struct ex *ex)
{
    size_t i;

    for (i = 0; i < ex->n_langs; i++)
        if (eq(ex->langs[i].name, "python") && ex->langs[i].blueprint != NULL)
            return ex->langs[i].blueprint;
    return "runloop/universal-ubuntu-24.04-x86_64";
}

/* ---- context ids --------------------------------------------------------- */

/*
 * Split "ctx_<8 hex>_<devbox_id>" into its devbox id and its name in the
 * gateway (name must hold CTX_NAME_LEN + 1). Reports a bad id.
 */
static int ctx_parse_id(const struct rlmcp_h *h, const char *cid,
                        char **devbox_out, char *name)
{
    size_t plen = strlen(CTX_PREFIX);
    size_t i;

    *devbox_out = NULL;
    if (strncmp(cid, CTX_PREFIX, plen) != 0 ||
        strlen(cid) < plen + CTX_NAME_LEN + 2 ||
        cid[plen + CTX_NAME_LEN] != '_')
        goto bad;
    for (i = 0; i < CTX_NAME_LEN; i++) {
        char c = cid[plen + i];
        if (!isdigit((unsigned char)c) && (c < 'a' || c > 'f'))
            goto bad;
        name[i] = c;
    }
    name[CTX_NAME_LEN] = '\0';
    if (!rlmcp_h_id_valid(cid + plen + CTX_NAME_LEN + 1))
        goto bad;
    *devbox_out = strdup(cid + plen + CTX_NAME_LEN + 1);
    return *devbox_out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
bad:
    return rlmcp_h_fail_remedy(h, RLMCP_ERR_INVALID_ARGUMENT, remedy_new,
                               "context_id '%.200s' is not a code context id "
                               "(they read ctx_<8 hex digits>_<devbox id>, "
                               "as create_code_context returns them)",
                               cid);
}

static char *ctx_make_id(const char *name, const char *devbox_id)
{
    return rlmcp_h_sprintf(CTX_PREFIX "%s_%s", name, devbox_id);
}

/* ---- the gateway --------------------------------------------------------- */

/*
 * The tunnel of the contexts devbox last used, so that a warm cell is one
 * round trip to the gateway with no devbox read. A devbox's tunnel lasts
 * as long as the devbox: an entry goes stale only when its devbox ended,
 * and then the gateway request fails and the cell reads the devbox after
 * all, which names the real cause.
 */
static pthread_mutex_t gw_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gw gw_cache;

static bool gw_cache_get(const char *id, struct gw *g)
{
    bool hit = false;

    pthread_mutex_lock(&gw_cache_lock);
    if (eq(gw_cache.devbox_id, id)) {
        g->devbox_id = strdup(gw_cache.devbox_id);
        g->key = strdup(gw_cache.key);
        g->token = strdup(gw_cache.token);
        hit = g->devbox_id != NULL && g->key != NULL && g->token != NULL;
        if (!hit)
            gw_free(g);
    }
    pthread_mutex_unlock(&gw_cache_lock);
    return hit;
}

static void gw_cache_put(const struct gw *g)
{
    struct gw copy = {strdup(g->devbox_id), strdup(g->key), strdup(g->token)};
    struct gw old = {0};

    if (copy.devbox_id == NULL || copy.key == NULL || copy.token == NULL) {
        gw_free(&copy);
        return;
    }
    pthread_mutex_lock(&gw_cache_lock);
    old = gw_cache;
    gw_cache = copy;
    pthread_mutex_unlock(&gw_cache_lock);
    gw_free(&old);
}

static void gw_cache_drop(const char *id)
{
    struct gw old = {0};

    pthread_mutex_lock(&gw_cache_lock);
    if (eq(gw_cache.devbox_id, id)) {
        old = gw_cache;
        memset(&gw_cache, 0, sizeof(gw_cache));
    }
    pthread_mutex_unlock(&gw_cache_lock);
    gw_free(&old);
}

void ctx_shutdown(void)
{
    struct gw old = {0};

    pthread_mutex_lock(&gw_cache_lock);
    old = gw_cache;
    memset(&gw_cache, 0, sizeof(gw_cache));
    pthread_mutex_unlock(&gw_cache_lock);
    gw_free(&old);
}

/* Take the tunnel of a contexts devbox view. */
static int gw_from_view(const struct rlmcp_h *h, const cJSON *dbx, struct gw *g)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(dbx, "tunnel");
    const char *key = str_field(t, "tunnel_key");
    const char *tok = str_field(t, "auth_token");

    if (key == NULL || tok == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "the contexts devbox %s has no authenticated "
                            "tunnel",
                            str_field(dbx, "id"));
    g->devbox_id = strdup(str_field(dbx, "id"));
    g->key = strdup(key);
    g->token = strdup(tok);
    if (g->devbox_id == NULL || g->key == NULL || g->token == NULL)
        return RLMCP_ENOMEM;
    return RLMCP_OK;
}

/*
 * The gateway of devbox id for context cid: reports an unknown devbox, one
 * that is not a contexts devbox, and one that no longer runs.
 */
static int gw_of_context(const struct rlmcp_h *h, const char *cid,
                         const char *id, struct gw *g)
{
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s", id);
    cJSON *dbx = NULL;
    long status = 0;
    const char *st = NULL;
    int rc;

    if (path == NULL)
        return RLMCP_ENOMEM;
    rc = rlmcp_h_request_status(h, "GET", path, NULL, NULL,
                                "looking up the context's devbox", &status,
                                &dbx, NULL);
    free(path);
    if (rc != RLMCP_OK)
        goto out;
    st = rlmcp_h_devbox_status(dbx);
    if (status == 404)
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_NOT_FOUND, remedy_new,
                                 "unknown context_id '%s': its devbox %s "
                                 "does not exist",
                                 cid, id);
    else if (status < 200 || status > 299)
        rc = rlmcp_h_fail(h, rlmcp_h_code_for_status(status),
                          "context %s: looking up devbox %s answered HTTP %ld",
                          cid, id, status);
    else if (!is_contexts_devbox(dbx))
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_INVALID_ARGUMENT, remedy_new,
                                 "context_id '%s' names devbox %s, which "
                                 "holds no code contexts",
                                 cid, id);
    else if (!eq(st, "running"))
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_NOT_FOUND, remedy_new,
                                 "context %s has ended: its devbox %s is %s "
                                 "(a context ends with its devbox)",
                                 cid, id, st);
    else
        rc = gw_from_view(h, dbx, g);
out:
    cJSON_Delete(dbx);
    return rc;
}

/*
 * One request to the gateway. *status_out the HTTP status, *json_out the
 * parsed answer (may be NULL). flags: RLMCP_HTTP_*; retries 0 for requests
 * that must not run twice (execute).
 */
static int gw_request(const struct rlmcp_h *h, const struct gw *g,
                      const char *method, const char *path, const cJSON *body,
                      uint32_t timeout_ms, int32_t retries, uint32_t flags,
                      long *status_out, cJSON **json_out)
{
    struct rlmcp_tunnel t = RLMCP_TUNNEL_INIT;
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;
    char *text = NULL;
    int rc;

    *status_out = 0;
    *json_out = NULL;
    if (!RLMCP_API_HAS(h->api, runloop_tunnel_request))
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "this host is older than plugin ABI 1.1 and "
                            "cannot reach a devbox's tunnel");
    t.tunnel_key = g->key;
    t.auth_token = g->token;
    t.port = CTX_PORT;
    if (body != NULL) {
        text = cJSON_PrintUnformatted(body);
        if (text == NULL)
            return RLMCP_ENOMEM;
        req.body = text;
        req.body_len = strlen(text);
    }
    req.method = method;
    req.path = path;
    req.timeout_ms = timeout_ms;
    req.max_retries = retries;
    req.flags = flags;
    req.max_body = 64u << 20;
    rc = h->api->runloop_tunnel_request(h->call, &t, &req, &resp);
    free(text);
    if (rc != RLMCP_OK)
        return rc;
    *status_out = resp->status;
    if (resp->body != NULL && resp->body_len > 0)
        *json_out = cJSON_ParseWithLength(resp->body, resp->body_len);
    h->api->http_resp_free(resp);
    return RLMCP_OK;
}

/* Report a gateway answer that is not a success, by its code. */
static int gw_fail(const struct rlmcp_h *h, const char *cid, const char *what,
                   long status, const cJSON *ans)
{
    const char *msg = str_field(ans, "message");
    const char *code = str_field(ans, "code");

    if (status == 404 && eq(code, "not_found"))
        return rlmcp_h_fail_remedy(h, RLMCP_ERR_NOT_FOUND, remedy_new,
                                   "unknown context_id '%s': %s (deleted, or "
                                   "its devbox restarted)",
                                   cid, msg != NULL ? msg : "no such context");
    if (status == 409)
        return rlmcp_h_fail_remedy(
            h, RLMCP_ERR_CONFLICT,
            "Wait for the running call to finish, or cancel it; a context "
            "runs one cell at a time.",
            "context %s is busy: %s", cid, msg != NULL ? msg : "busy");
    if (status == 400)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT, "%s: %s", what,
                            msg != NULL ? msg : "bad request");
    if (status == 501)
        return rlmcp_h_fail_remedy(
            h, RLMCP_ERR_UNAVAILABLE,
            "Give the deployment's python language a blueprint whose image "
            "has them (the local engine's "
            "runloop/universal-ubuntu-24.04-x86_64 does).",
            "%s: %s", what, msg != NULL ? msg : "unsupported");
    return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                        "%s: the contexts gateway answered HTTP %ld%s%.600s",
                        what, status, msg != NULL ? ": " : "",
                        msg != NULL ? msg : "");
}

/* The entrypoint of a contexts devbox: write the gateway, run it. */
static char *gw_entrypoint(void)
{
    return rlmcp_h_sprintf("mkdir -p -m 700 " CTX_DIR " && cat > " CTX_DIR
                           "/ctxgw.py <<'" CTX_EOF "'\n%.*s" CTX_EOF "\n"
                           "exec python3 " CTX_DIR "/ctxgw.py --port %d\n",
                           (int)ex_ctxgw_py_len, (const char *)ex_ctxgw_py,
                           CTX_PORT);
}

/* Report a contexts devbox that stopped while its gateway started. */
static int gw_ended(const struct rlmcp_h *h, const char *id)
{
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s", id);
    cJSON *dbx = NULL;
    const char *fm = NULL;
    int rc;

    if (path == NULL)
        return RLMCP_ENOMEM;
    rc = rlmcp_h_request(h, "GET", path, NULL, NULL, "the contexts devbox",
                         &dbx);
    free(path);
    if (rc != RLMCP_OK)
        goto out;
    fm = str_field(dbx, "failure_message");
    rc = rlmcp_h_fail_remedy(
        h, RLMCP_ERR_DEVBOX_NOT_RUNNING,
        "The devbox's log has the gateway's error; the image needs "
        "python3 with python3-ipykernel and python3-jupyter-client.",
        "the code contexts devbox %s stopped while its gateway started "
        "(status %s)%s%.600s",
        id, rlmcp_h_devbox_status(dbx), fm != NULL ? ": " : "",
        fm != NULL ? fm : "");
out:
    cJSON_Delete(dbx);
    return rc;
}

/* Wait until the gateway answers /health (it imports jupyter_client and
 * starts a spare kernel as the devbox comes up). */
static int gw_wait_ready(const struct ex *ex, const struct rlmcp_h *h,
                         const struct gw *g)
{
    uint64_t until = rlmcp_h_now_ms() + (uint64_t)ex->create_wait_s * 1000u;
    long status = 0;
    cJSON *ans = NULL;
    int rc;

    for (;;) {
        rc =
            gw_request(h, g, "GET", "/health", NULL, 5000, 0, 0, &status, &ans);
        cJSON_Delete(ans);
        ans = NULL;
        if (rc == RLMCP_OK && status == 200)
            return RLMCP_OK;
        if (rc == RLMCP_ECANCELLED || rc == RLMCP_H_REPORTED)
            return rc;
        /* The tunnel is gone: the devbox ended (its gateway exited). */
        if (rc == RLMCP_OK && status == 404)
            return gw_ended(h, g->devbox_id);
        if (rlmcp_h_now_ms() >= until)
            break;
        rc = h->api->sleep_ms(h->call, 50);
        if (rc != RLMCP_OK)
            return rc;
    }
    return rlmcp_h_fail_remedy(h, RLMCP_ERR_DEVBOX_NOT_READY,
                               "The contexts devbox may lack python3-ipykernel "
                               "(use the universal image); call again.",
                               "the code contexts gateway in devbox %s did not "
                               "answer within %lld s (last HTTP status %ld)",
                               g->devbox_id, ex->create_wait_s, status);
}

/*
 * The running contexts devbox: found, or created (create set) with its
 * gateway up. *g empty and RLMCP_OK when none runs and create is false.
 */
static int gw_devbox(struct ex *ex, const struct rlmcp_h *h, bool create,
                     struct gw *g, bool *created_out)
{
    cJSON *found = NULL, *body = NULL, *md = NULL, *lp = NULL, *view = NULL;
    cJSON *tun = NULL;
    char *cmd = NULL, *id = NULL;
    int rc;

    *created_out = false;
    rc = exec_find_devbox(h, "running", score_contexts, NULL, &found);
    if (rc != RLMCP_OK)
        goto out;
    if (found != NULL) {
        rc = gw_from_view(h, found, g);
        goto out;
    }
    if (!create)
        goto out;
    body = cJSON_CreateObject();
    cmd = gw_entrypoint();
    rc = RLMCP_ENOMEM;
    if (body == NULL || cmd == NULL)
        goto out;
    cJSON_AddStringToObject(body, "name", "code-contexts");
    cJSON_AddStringToObject(body, "entrypoint", cmd);
    cJSON_AddStringToObject(body, "blueprint_name", ctx_image(ex));
    md = cJSON_AddObjectToObject(body, "metadata");
    cJSON_AddStringToObject(md, "managed_by", CTX_MANAGED_BY);
    cJSON_AddStringToObject(md, "role", CTX_ROLE);
    tun = cJSON_AddObjectToObject(body, "tunnel");
    cJSON_AddStringToObject(tun, "auth_mode", "authenticated");
    lp = cJSON_AddObjectToObject(body, "launch_parameters");
    cJSON_AddNumberToObject(lp, "keep_alive_time_seconds",
                            (double)ex->keep_alive_s);
    rc = rlmcp_h_devbox_create(h, body, "creating the code contexts devbox",
                               &id);
    if (rc != RLMCP_OK)
        goto out;
    *created_out = true;
    rc = rlmcp_h_devbox_wait(h, id, running_set,
                             (uint64_t)ex->create_wait_s * 1000u, &view);
    if (rc != RLMCP_OK)
        goto fail;
    if (!eq(rlmcp_h_devbox_status(view), "running")) {
        const char *fm = str_field(view, "failure_message");
        rc = rlmcp_h_devbox_preparing(h, view);
        if (rc == RLMCP_OK)
            rc = rlmcp_h_fail_remedy(
                h, RLMCP_ERR_DEVBOX_NOT_READY,
                "The universal image may still be building on first use; "
                "call again in a minute.",
                "the code contexts devbox %s is not running after %lld s "
                "(status %s)%s%.600s",
                id, ex->create_wait_s, rlmcp_h_devbox_status(view),
                fm != NULL ? ": " : "", fm != NULL ? fm : "");
        goto fail;
    }
    rc = gw_from_view(h, view, g);
    if (rc == RLMCP_OK)
        rc = gw_wait_ready(ex, h, g);
    if (rc == RLMCP_OK)
        goto out;
fail:
    if (id != NULL) {
        char *p = rlmcp_h_sprintf("/v1/devboxes/%s/shutdown", id);
        if (p != NULL)
            exec_cleanup_request(h, "POST", p, NULL);
        free(p);
    }
out:
    free(cmd);
    free(id);
    cJSON_Delete(body);
    cJSON_Delete(found);
    cJSON_Delete(view);
    return rc;
}

/* A gateway context view as the tools answer it. */
static cJSON *ctx_view(const struct gw *g, const cJSON *v)
{
    cJSON *out = cJSON_CreateObject();
    char *cid = ctx_make_id(str_field(v, "id"), g->devbox_id);
    const cJSON *n = NULL;

    if (out == NULL || cid == NULL) {
        free(cid);
        cJSON_Delete(out);
        return NULL;
    }
    cJSON_AddStringToObject(out, "context_id", cid);
    cJSON_AddStringToObject(out, "devbox_id", g->devbox_id);
    cJSON_AddStringToObject(out, "language", "python");
    if (str_field(v, "cwd") != NULL)
        cJSON_AddStringToObject(out, "cwd", str_field(v, "cwd"));
    n = cJSON_GetObjectItemCaseSensitive(v, "created_ms");
    if (cJSON_IsNumber(n))
        cJSON_AddNumberToObject(out, "created_ms", n->valuedouble);
    n = cJSON_GetObjectItemCaseSensitive(v, "last_used_ms");
    if (cJSON_IsNumber(n))
        cJSON_AddNumberToObject(out, "last_used_ms", n->valuedouble);
    cJSON_AddBoolToObject(
        out, "busy", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "busy")));
    free(cid);
    return out;
}

/* ---- the context tools ----------------------------------------------------
 */

int ctx_create_tool(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    struct gw g = {0};
    cJSON *args = NULL, *body = NULL, *ans = NULL, *out = NULL;
    const char *cwd = NULL;
    bool created = false;
    long status = 0;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "cwd", false, &cwd);
    if (rc != RLMCP_OK)
        goto out;
    if (cwd != NULL && cwd[0] != '/') {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "cwd must be an absolute path, e.g. /home/user");
        goto out;
    }
    rc = gw_devbox(ex, &h, true, &g, &created);
    if (rc != RLMCP_OK)
        goto out;
    body = cJSON_CreateObject();
    if (body == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    if (cwd != NULL)
        cJSON_AddStringToObject(body, "cwd", cwd);
    /* Starting a kernel takes seconds when no spare one is ready. */
    rc = gw_request(&h, &g, "POST", "/contexts", body, 120000, 0, 0, &status,
                    &ans);
    if (rc != RLMCP_OK)
        goto out;
    if (status != 200) {
        rc = gw_fail(&h, "(new)", "creating a context", status, ans);
        goto out;
    }
    out = ctx_view(&g, ans);
    if (out == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    cJSON_AddBoolToObject(out, "new_devbox", created);
    rc = rlmcp_h_result_json(&h, out);
out:
    gw_free(&g);
    cJSON_Delete(args);
    cJSON_Delete(body);
    cJSON_Delete(ans);
    cJSON_Delete(out);
    return rlmcp_h_ret(rc);
}

int ctx_list_tool(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    struct gw g = {0};
    cJSON *args = NULL, *ans = NULL, *out = NULL, *arr = NULL;
    const cJSON *it = NULL;
    bool created = false;
    long status = 0;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = gw_devbox(ex, &h, false, &g, &created);
    if (rc != RLMCP_OK)
        goto out;
    out = cJSON_CreateObject();
    arr = out != NULL ? cJSON_AddArrayToObject(out, "contexts") : NULL;
    if (arr == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    if (g.devbox_id != NULL) {
        rc = gw_request(&h, &g, "GET", "/contexts", NULL, 10000, -1, 0, &status,
                        &ans);
        if (rc != RLMCP_OK)
            goto out;
        if (status != 200) {
            rc = gw_fail(&h, "(list)", "listing contexts", status, ans);
            goto out;
        }
        cJSON_ArrayForEach(it,
                           cJSON_GetObjectItemCaseSensitive(ans, "contexts"))
        {
            cJSON *v = ctx_view(&g, it);
            if (v == NULL) {
                rc = RLMCP_ENOMEM;
                goto out;
            }
            cJSON_AddItemToArray(arr, v);
        }
        cJSON_AddStringToObject(out, "devbox_id", g.devbox_id);
    }
    rc = rlmcp_h_result_json(&h, out);
out:
    gw_free(&g);
    cJSON_Delete(args);
    cJSON_Delete(ans);
    cJSON_Delete(out);
    return rlmcp_h_ret(rc);
}

/* restart_code_context and delete_code_context: one gateway action. */
static int ctx_action_tool(rlmcp_call *call, const char *aj, size_t al,
                           struct ex *ex, const char *action)
{
    struct rlmcp_h h = {ex->api, call};
    struct gw g = {0};
    cJSON *args = NULL, *ans = NULL, *out = NULL;
    const char *cid = NULL;
    char *id = NULL, *path = NULL, *what = NULL;
    char name[CTX_NAME_LEN + 1];
    long status = 0;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "context_id", true, &cid);
    if (rc == RLMCP_OK)
        rc = ctx_parse_id(&h, cid, &id, name);
    if (rc == RLMCP_OK)
        rc = gw_of_context(&h, cid, id, &g);
    if (rc != RLMCP_OK)
        goto out;
    path = rlmcp_h_sprintf("/contexts/%s/%s", name, action);
    what = rlmcp_h_sprintf("%s context %s", action, cid);
    if (path == NULL || what == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = gw_request(&h, &g, "POST", path, NULL, 120000, 0, 0, &status, &ans);
    if (rc != RLMCP_OK)
        goto out;
    if (status != 200) {
        rc = gw_fail(&h, cid, what, status, ans);
        goto out;
    }
    if (eq(action, "delete")) {
        out = cJSON_CreateObject();
        if (out != NULL) {
            cJSON_AddStringToObject(out, "context_id", cid);
            cJSON_AddBoolToObject(out, "deleted", true);
        }
    } else {
        out = ctx_view(&g, ans);
    }
    rc = out != NULL ? rlmcp_h_result_json(&h, out) : RLMCP_ENOMEM;
out:
    gw_free(&g);
    free(id);
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(ans);
    cJSON_Delete(out);
    return rlmcp_h_ret(rc);
}

int ctx_restart_tool(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return ctx_action_tool(call, aj, al, ud, "restart");
}

int ctx_delete_tool(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return ctx_action_tool(call, aj, al, ud, "delete");
}

/* ---- running a cell ------------------------------------------------------ */

/* What a cell produced so far, gathered from the gateway's events. */
struct cell {
    struct rlmcp_h_capture out, err;
    cJSON *results; /* [{kind, text?, formats}] */
    cJSON *blocks;  /* MCP content blocks: images, HTML */
    long long streamed;
    int n_shown;
};

static void cell_display(struct cell *c, const char *cid, const char *kind,
                         const cJSON *data)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *formats = NULL;
    const cJSON *it = NULL;
    const char *text = str_field(data, "text/plain");

    if (r == NULL)
        return;
    cJSON_AddStringToObject(r, "kind", kind);
    if (text != NULL)
        cJSON_AddStringToObject(r, "text", text);
    formats = cJSON_AddArrayToObject(r, "formats");
    cJSON_ArrayForEach(it, data)
    {
        cJSON *b = NULL;
        cJSON_AddItemToArray(formats, cJSON_CreateString(it->string));
        if (!cJSON_IsString(it))
            continue;
        if (strncmp(it->string, "image/", 6) == 0 &&
            !eq(it->string, "image/svg+xml")) {
            /* Jupyter sends binary formats base64-encoded already. */
            b = cJSON_CreateObject();
            cJSON_AddStringToObject(b, "type", "image");
            cJSON_AddStringToObject(b, "data", it->valuestring);
            cJSON_AddStringToObject(b, "mimeType", it->string);
        } else if (eq(it->string, "text/html") ||
                   eq(it->string, "image/svg+xml")) {
            char *uri =
                rlmcp_h_sprintf("context://%s/output/%d%s", cid, c->n_shown,
                                eq(it->string, "text/html") ? ".html" : ".svg");
            cJSON *res = NULL;
            b = cJSON_CreateObject();
            cJSON_AddStringToObject(b, "type", "resource");
            res = cJSON_AddObjectToObject(b, "resource");
            cJSON_AddStringToObject(res, "uri", uri != NULL ? uri : "");
            cJSON_AddStringToObject(res, "mimeType", it->string);
            cJSON_AddStringToObject(res, "text", it->valuestring);
            free(uri);
        }
        if (b != NULL)
            cJSON_AddItemToArray(c->blocks, b);
    }
    c->n_shown++;
    cJSON_AddItemToArray(c->results, r);
}

static void cell_events(const struct rlmcp_h *h, struct ex *ex, struct cell *c,
                        const char *cid, const cJSON *events)
{
    const cJSON *ev = NULL;

    cJSON_ArrayForEach(ev, events)
    {
        const char *type = str_field(ev, "type");
        const char *text = str_field(ev, "text");

        if (eq(type, "stream") && text != NULL) {
            bool is_err = eq(str_field(ev, "name"), "stderr");
            rlmcp_h_capture_add(is_err ? &c->err : &c->out, text, strlen(text));
            c->streamed += (long long)strlen(text);
            if (ex->stream && text[0] != '\0')
                h->api->progress(h->call, (double)c->streamed, -1, text);
        } else if (eq(type, "result") || eq(type, "display")) {
            cell_display(c, cid, type,
                         cJSON_GetObjectItemCaseSensitive(ev, "data"));
        }
    }
}

/* The structured result and content blocks of a finished (or stopped)
 * cell. */
static int cell_answer(const struct rlmcp_h *h, struct cell *c,
                       const struct gw *g, const char *cid, const cJSON *ans,
                       const char *status, long long duration_ms,
                       const char *language)
{
    cJSON *res = cJSON_CreateObject();
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(ans, "error");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(ans, "execution_count");
    const cJSON *b = NULL;
    char *out = NULL, *errs = NULL, *text = NULL;
    bool out_cut = false, err_cut = false;
    int rc = RLMCP_ENOMEM;

    out = rlmcp_h_capture_text(&c->out, NULL, &out_cut);
    errs = rlmcp_h_capture_text(&c->err, NULL, &err_cut);
    if (res == NULL || out == NULL || errs == NULL)
        goto out;
    cJSON_AddStringToObject(res, "context_id", cid);
    cJSON_AddStringToObject(res, "devbox_id", g->devbox_id);
    if (language != NULL)
        cJSON_AddStringToObject(res, "language", language);
    cJSON_AddStringToObject(res, "status", status);
    if (cJSON_IsNumber(n))
        cJSON_AddNumberToObject(res, "execution_count", n->valuedouble);
    else
        cJSON_AddNullToObject(res, "execution_count");
    cJSON_AddStringToObject(res, "stdout", out);
    cJSON_AddStringToObject(res, "stderr", errs);
    cJSON_AddBoolToObject(res, "stdout_truncated", out_cut);
    cJSON_AddBoolToObject(res, "stderr_truncated", err_cut);
    cJSON_AddItemReferenceToObject(res, "results", c->results);
    if (cJSON_IsObject(err))
        cJSON_AddItemToObject(res, "error", cJSON_Duplicate(err, true));
    else
        cJSON_AddNullToObject(res, "error");
    cJSON_AddNumberToObject(res, "duration_ms", (double)duration_ms);
    /* The text block first (clients that show only content see it all),
     * then figures as images and HTML as embedded resources. */
    text = cJSON_PrintUnformatted(res);
    if (text == NULL)
        goto out;
    rc = h->api->result_text(h->call, text);
    cJSON_ArrayForEach(b, c->blocks)
    {
        char *bj = NULL;
        if (rc != RLMCP_OK)
            break;
        bj = cJSON_PrintUnformatted(b);
        rc = bj != NULL ? h->api->result_content(h->call, bj, strlen(bj))
                        : RLMCP_ENOMEM;
        free(bj);
    }
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_json(h, res);
out:
    free(out);
    free(errs);
    free(text);
    cJSON_Delete(res);
    return rc;
}

/* A cell's run id, ours rather than the gateway's: an interrupt names it,
 * so one sent before the execute answer (or after a "busy" one) cannot stop
 * another call's cell. Random from the kernel, or no cell starts. */
static int cell_run_id(char out[CTX_RUN_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[CTX_RUN_LEN / 2];
    ssize_t n = -1;
    size_t i;

    do {
        n = getrandom(b, sizeof(b), 0);
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(b))
        return -1;
    for (i = 0; i < sizeof(b); i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 0x0F];
    }
    out[CTX_RUN_LEN] = '\0';
    return 0;
}

/* Interrupt the context's cell of run `run_id` (the gateway leaves any
 * other run alone): a clean-up that outlives a cancel. */
static void cell_interrupt(const struct rlmcp_h *h, const struct gw *g,
                           const char *name, const char *run_id)
{
    char *path = rlmcp_h_sprintf("/contexts/%s/interrupt", name);
    cJSON *body = cJSON_CreateObject();
    cJSON *ans = NULL;
    long status = 0;

    if (path == NULL || body == NULL ||
        cJSON_AddStringToObject(body, "run", run_id) == NULL)
        goto out;
    if (gw_request(h, g, "POST", path, body, CTX_STOP_MS, 1,
                   RLMCP_HTTP_IGNORE_CANCEL, &status, &ans) == RLMCP_OK &&
        status != 200)
        h->api->log(h->api->call_plugin(h->call), RLMCP_LOG_WARNING,
                    "interrupting context %s answered HTTP %ld", name, status);
out:
    free(path);
    cJSON_Delete(body);
    cJSON_Delete(ans);
}

int ctx_run_cell(struct ex *ex, const struct rlmcp_h *h, const char *cid,
                 const char *code, long long timeout_ms, const char *language)
{
    struct cell c = {0};
    struct gw g = {0};
    struct exec_limits lim = {0};
    cJSON *body = NULL, *ans = NULL;
    char *id = NULL, *exec_path = NULL, *poll_path = NULL;
    char name[CTX_NAME_LEN + 1];
    char run_id[CTX_RUN_LEN + 1];
    const char *status = NULL;
    char *run = NULL;
    uint64_t start = rlmcp_h_now_ms();
    uint64_t stop_until = 0;
    long long next = 0;
    long http = 0;
    bool stopped = false;
    bool cached = false;
    int rc;

    rc = ctx_parse_id(h, cid, &id, name);
    if (rc != RLMCP_OK)
        goto out;
    cached = gw_cache_get(id, &g);
    if (!cached) {
        rc = gw_of_context(h, cid, id, &g);
        if (rc != RLMCP_OK)
            goto out;
        gw_cache_put(&g);
    }
    rc = RLMCP_ENOMEM;
    c.results = cJSON_CreateArray();
    c.blocks = cJSON_CreateArray();
    body = cJSON_CreateObject();
    exec_path = rlmcp_h_sprintf("/contexts/%s/execute", name);
    poll_path = rlmcp_h_sprintf("/contexts/%s/poll", name);
    if (c.results == NULL || c.blocks == NULL || body == NULL ||
        exec_path == NULL || poll_path == NULL ||
        !rlmcp_h_capture_init(&c.out, (size_t)ex->max_output) ||
        !rlmcp_h_capture_init(&c.err, (size_t)ex->max_output))
        goto out;
    if (cell_run_id(run_id) != 0) {
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "the host's random source (getrandom) failed: no "
                          "run id, so no cell was started");
        goto out;
    }
    exec_limits(h, timeout_ms, EXEC_RESERVE_KILL, &lim);
    cJSON_AddStringToObject(body, "code", code);
    cJSON_AddStringToObject(body, "run", run_id);
    /* The gateway stops the cell itself at its time limit. */
    cJSON_AddNumberToObject(
        body, "timeout_ms",
        lim.work_until > start ? (double)(lim.work_until - start) : 1.0);
    cJSON_AddNumberToObject(body, "wait_ms", CTX_POLL_MS);
    rc = gw_request(h, &g, "POST", exec_path, body, CTX_POLL_MS + 10000, 0, 0,
                    &http, &ans);
    if (cached && rc != RLMCP_ECANCELLED && (rc != RLMCP_OK || http != 200)) {
        /* Its devbox may have ended: read it, for the error that says so
         * (the gateway started no cell: it answers 200 when it does). */
        int vrc;
        gw_cache_drop(id);
        gw_free(&g);
        vrc = gw_of_context(h, cid, id, &g);
        if (vrc != RLMCP_OK) {
            rc = vrc;
            goto out;
        }
    }
    for (;;) {
        const cJSON *done = NULL;
        uint64_t now = rlmcp_h_now_ms();
        if (rc == RLMCP_ECANCELLED) {
            /* Cancelled: stop the cell (also one whose start the cancel
             * cut short), keep the kernel; nobody reads the answer. */
            cell_interrupt(h, &g, name, run_id);
            goto out;
        }
        if (rc == RLMCP_OK && http == 200 && lim.answer_by != 0 &&
            now >= lim.answer_by && !stopped) {
            /* The call's own time is up: stop the cell, keep the kernel,
             * and read how it ended. */
            cell_interrupt(h, &g, name, run_id);
            stopped = true;
            stop_until = rlmcp_h_now_ms() + CTX_STOP_MS;
        }
        if (rc != RLMCP_OK)
            goto out;
        if (http != 200) {
            rc = gw_fail(h, cid, "running the cell", http, ans);
            goto out;
        }
        if (run == NULL && str_field(ans, "run") != NULL)
            run = strdup(str_field(ans, "run"));
        cell_events(h, ex, &c, cid,
                    cJSON_GetObjectItemCaseSensitive(ans, "events"));
        done = cJSON_GetObjectItemCaseSensitive(ans, "done");
        if (cJSON_IsTrue(done) || run == NULL)
            break;
        if (stopped && rlmcp_h_now_ms() > stop_until)
            break;
        next = (long long)cJSON_GetNumberValue(
            cJSON_GetObjectItemCaseSensitive(ans, "next"));
        cJSON_Delete(ans);
        ans = NULL;
        cJSON_Delete(body);
        body = cJSON_CreateObject();
        if (body == NULL) {
            rc = RLMCP_ENOMEM;
            goto out;
        }
        cJSON_AddStringToObject(body, "run", run);
        cJSON_AddNumberToObject(body, "after", (double)next);
        cJSON_AddNumberToObject(body, "wait_ms", CTX_POLL_MS);
        rc = gw_request(h, &g, "POST", poll_path, body, CTX_POLL_MS + 10000, -1,
                        stopped ? RLMCP_HTTP_IGNORE_CANCEL : 0, &http, &ans);
    }
    status = str_field(ans, "status");
    if (stopped && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "done")))
        status = "interrupted";
    if (h->api->is_cancelled(h->call)) {
        rc = RLMCP_ECANCELLED;
        goto out;
    }
    rc = cell_answer(h, &c, &g, cid, ans, status != NULL ? status : "ok",
                     (long long)(rlmcp_h_now_ms() - start), language);
out:
    gw_free(&g);
    free(id);
    free(exec_path);
    free(poll_path);
    free(run);
    cJSON_Delete(body);
    cJSON_Delete(ans);
    cJSON_Delete(c.results);
    cJSON_Delete(c.blocks);
    rlmcp_h_capture_free(&c.out);
    rlmcp_h_capture_free(&c.err);
    return rc;
}
