/*
 * browser.c - run_browser: Playwright-style browser automation in a devbox
 * (the Python runloop-mcp's contract: action, value, session_id).
 *
 * A session is a devbox from the browser image (local engine) or blueprint
 * (cloud) with a long-lived driver (driver.cjs: Node, playwright-core and
 * the system Chromium, the devbox's entrypoint) keeping one page alive; the
 * devbox stays up between actions and is shut down on close, or when the
 * driver ends after idle_seconds without an action. See session.c and
 * docs/tools.md.
 *
 * Config: blueprint_name, executable, action_timeout_ms,
 * max_action_timeout_ms, create_wait_seconds, keep_alive_seconds, idle_seconds,
 * max_text_bytes, max_screenshot_bytes, viewport_width, viewport_height.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "browser_internal.h"
#include "schemas.h" /* schema_<file>: schemas/<file>.json, built in */

#define DEFAULT_BLUEPRINT "runloop-mcp-browser"

/* ---- results --------------------------------------------------------------
 */

/* The driver's failure as a tool error: which kind, and the session. */
static int fail_action(const struct rlmcp_h *h, const char *id,
                       bool new_session, const cJSON *reply)
{
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(reply, "error");
    const char *kind =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "kind"));
    const char *msg =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(err, "message"));
    const char *code = RLMCP_ERR_INVALID_ARGUMENT;
    const char *remedy = "Check the value and selector, then try again in "
                         "the same session.";
    char *more = rlmcp_h_sprintf(" (session_id %s stays open: pass it to "
                                 "continue, or close it)",
                                 id);
    int rc;

    if (kind != NULL && strcmp(kind, "no_match") == 0) {
        code = RLMCP_ERR_NOT_FOUND;
        remedy = "Check the selector against the page (get_text, or a "
                 "screenshot), or wait for it with wait_for_selector and a "
                 "larger timeout_ms.";
    } else if (kind != NULL && strcmp(kind, "timeout") == 0) {
        code = RLMCP_ERR_TIMEOUT;
        remedy = "Raise timeout_ms, or check that the page can do this.";
    }
    rc = rlmcp_h_fail_remedy(h, code, remedy, "%s%s",
                             msg != NULL ? msg : "the browser action failed",
                             new_session && more != NULL ? more : "");
    free(more);
    return rc;
}

/* A screenshot: the image itself, then the result as text. */
static int add_image(const struct br *br, const struct rlmcp_h *h,
                     const char *id, const cJSON *result)
{
    struct rlmcp_http_resp *resp = NULL;
    const char *path =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(result, "path"));
    const char *mime = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(result, "mime_type"));
    cJSON *img = NULL;
    char *b64 = NULL, *text = NULL, *summary = NULL;
    int rc;

    if (path == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "the browser driver saved no screenshot");
    rc = br_session_fetch(br, h, id, path, &resp);
    if (rc != RLMCP_OK)
        return rc;
    rc = RLMCP_ENOMEM;
    b64 = rlmcp_h_b64_encode(resp->body, resp->body_len, NULL);
    img = cJSON_CreateObject();
    if (b64 == NULL || img == NULL)
        goto out;
    cJSON_AddStringToObject(img, "type", "image");
    cJSON_AddStringToObject(img, "data", b64);
    cJSON_AddStringToObject(img, "mimeType", mime != NULL ? mime : "image/png");
    text = cJSON_PrintUnformatted(img);
    summary = cJSON_PrintUnformatted(result);
    if (text == NULL || summary == NULL)
        goto out;
    rc = h->api->result_content(h->call, text, strlen(text));
    if (rc == RLMCP_OK)
        rc = h->api->result_text(h->call, summary);
out:
    h->api->http_resp_free(resp);
    cJSON_Delete(img);
    free(b64);
    free(text);
    free(summary);
    return rc;
}

/* The tool's result from the driver's reply (whose fields it keeps). */
static cJSON *make_result(const struct br_call *c, const char *id,
                          bool new_session, cJSON *reply)
{
    cJSON *res = cJSON_CreateObject();
    cJSON *it = NULL;

    if (res == NULL)
        return NULL;
    cJSON_AddStringToObject(res, "session_id", id);
    cJSON_AddStringToObject(res, "action", br_action_names[c->action]);
    cJSON_AddBoolToObject(res, "new_session", new_session);
    cJSON_DeleteItemFromObjectCaseSensitive(reply, "ok");
    while ((it = reply->child) != NULL) {
        cJSON_DetachItemViaPointer(reply, it);
        if (cJSON_GetObjectItemCaseSensitive(res, it->string) != NULL)
            cJSON_Delete(it);
        else
            cJSON_AddItemToObject(res, it->string, it);
    }
    return res;
}

/* ---- the tool --------------------------------------------------------------
 */

static int finish(const struct br *br, const struct rlmcp_h *h,
                  const struct br_call *c, const char *id, bool new_session,
                  cJSON *reply)
{
    cJSON *res = NULL;
    int rc = RLMCP_OK;

    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")))
        return fail_action(h, id, new_session, reply);
    res = make_result(c, id, new_session, reply);
    if (res == NULL)
        return RLMCP_ENOMEM;
    if (c->action == BR_CLOSE) {
        rc = br_session_end(h, id);
        cJSON_AddBoolToObject(res, "closed", rc == RLMCP_OK);
        cJSON_AddStringToObject(res, "devbox_status", "shutdown");
    }
    if (rc == RLMCP_OK && c->action == BR_SCREENSHOT)
        rc = add_image(br, h, id, res);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_json(h, res);
    cJSON_Delete(res);
    return rc;
}

static int run_browser(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    const struct br *br = ud;
    struct rlmcp_h h = {br->api, call};
    struct br_call c;
    cJSON *args = NULL, *reply = NULL;
    char *started = NULL;
    const char *id = NULL;
    bool gone = false;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = br_parse_call(br, &h, args, &c);
    if (rc != RLMCP_OK)
        goto out;
    id = c.session_id;
    if (id == NULL) {
        rc = br_session_start(br, &h, &started);
        if (rc != RLMCP_OK)
            goto out;
        id = started;
    }
    rc = br_session_send(br, &h, id, &c, started != NULL,
                         c.action == BR_CLOSE ? &gone : NULL, &reply);
    /* A new session whose browser never answered (or whose call was
     * cancelled meanwhile) is not left running. */
    if (rc != RLMCP_OK && started != NULL)
        rlmcp_h_devbox_discard(&h, started);
    if (rc == RLMCP_OK && gone) /* close: the devbox goes all the same */
        reply = cJSON_Parse("{\"ok\":true,\"browser_had_exited\":true}");
    if (rc == RLMCP_OK)
        rc = reply != NULL ? finish(br, &h, &c, id, started != NULL, reply)
                           : RLMCP_ENOMEM;
out:
    free(started);
    cJSON_Delete(args);
    cJSON_Delete(reply);
    return rlmcp_h_ret(rc);
}

/* ---- configuration and registration -------------------------------------- */

static char *cfg_string(const cJSON *cfg, const char *key, const char *def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);

    if (cJSON_IsString(v) && v->valuestring[0] != '\0')
        return strdup(v->valuestring);
    return def != NULL ? strdup(def) : NULL;
}

/* The host has checked the section against schemas/config.json (types,
 * ranges, the executable's form, no unknown keys); this fills the defaults
 * and checks the rule between two fields. */
static int br_config(struct br *br, rlmcp_plugin *self, const cJSON *cfg)
{
    static const struct rlmcp_h_cfg_default keys[] = {
        {"action_timeout_ms", 10000, offsetof(struct br, action_timeout_ms)},
        {"max_action_timeout_ms", 120000, offsetof(struct br, max_timeout_ms)},
        {"create_wait_seconds", 180, offsetof(struct br, create_wait_s)},
        {"keep_alive_seconds", 3600, offsetof(struct br, keep_alive_s)},
        {"idle_seconds", 600, offsetof(struct br, idle_s)},
        {"max_text_bytes", 65536, offsetof(struct br, max_text_bytes)},
        {"max_screenshot_bytes", 8 << 20,
         offsetof(struct br, max_screenshot_bytes)},
        {"viewport_width", 1280, offsetof(struct br, width)},
        {"viewport_height", 720, offsetof(struct br, height)},
    };
    const struct rlmcp_host_api *api = br->api;

    rlmcp_h_cfg_defaults(cfg, keys, sizeof(keys) / sizeof(keys[0]), br);
    if (br->action_timeout_ms > br->max_timeout_ms) {
        api->set_error(self, "config action_timeout_ms must not exceed "
                             "max_action_timeout_ms");
        return RLMCP_EINVAL;
    }
    br->blueprint_name = cfg_string(cfg, "blueprint_name", DEFAULT_BLUEPRINT);
    br->executable = cfg_string(cfg, "executable", NULL);
    return br->blueprint_name != NULL ? RLMCP_OK : RLMCP_ENOMEM;
}

static const struct rlmcp_h_tool specs[] = {
    {"run_browser", "Drive a web browser (Playwright)",
     "Drive a headless Chromium in a devbox, one action per call: navigate, "
     "click, type, fill, screenshot, get_text, get_attribute, "
     "wait_for_selector, wait_for_navigation, press, hover, scroll, check, "
     "uncheck, select_option, close. The first call (no session_id) starts "
     "a session and returns its session_id; pass it to later calls, which "
     "act on the same page. Screenshots come back as images. close ends the "
     "session and shuts its devbox down. Pages served inside the devbox "
     "(http://localhost:PORT, file:///...) and data: URLs work offline.",
     schema_run_browser, schema_run_browser_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":false,\"openWorldHint\":true}",
     run_browser, true},
};

static const char *const waiting[] = {"run_browser", NULL};

/* The shutdown; also frees the state of a failed init. */
static void br_shutdown(rlmcp_plugin *self, void *state)
{
    struct br *br = state;

    if (br == NULL)
        return;
    free(br->blueprint_name);
    free(br->executable);
    free(br);
}

static int br_setup(void *state, rlmcp_plugin *self,
                    const struct rlmcp_host_api *api, const cJSON *cfg)
{
    struct br *br = state;
    uint64_t long_ms;
    int rc;

    br->api = api;
    rc = br_config(br, self, cfg);
    if (rc != RLMCP_OK)
        return rc;
    /* A first action creates the devbox and starts the browser. */
    long_ms = (uint64_t)br->create_wait_s * 1000u +
              (uint64_t)br->max_timeout_ms + 180000u;
    return rlmcp_h_register_tools_waiting(self, api, specs,
                                          sizeof(specs) / sizeof(specs[0]), br,
                                          (uint32_t)long_ms, waiting);
}

RLMCP_H_PLUGIN_DEFINE("browser", "0.1.0",
                      "run_browser: a headless Chromium in a devbox", struct br,
                      br_setup, br_shutdown, schema_config)
