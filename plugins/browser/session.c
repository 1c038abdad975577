/*
 * session.c - a browser session is a devbox from the browser image (or
 * blueprint) running driver.cjs; every action is one exec that hands the
 * driver a JSON request over its unix socket with curl. The plugin keeps no
 * state: the session id is the devbox id, and everything else is asked of
 * the devbox.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "browser_internal.h"

#define EOF_MARK "RLMCP_BROWSER_EOF"
/* Exit statuses of the action command (besides curl's own). */
#define EXIT_DRIVER_FAILED 90
#define EXIT_NO_DRIVER 91
#define CURL_CONNECT_FAILED 7
#define CURL_TIMED_OUT 28
#define CURL_EMPTY_REPLY 52

static const char *const running_set[] = {"running", "failure", "shutdown",
                                          NULL};

static const char *str_field(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static bool eq(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* ---- what a session is --------------------------------------------------- */

/*
 * Why an action could not reach the session's driver: the session (devbox)
 * does not exist, is not a browser session, is closed, or its browser is
 * gone. Reports (RLMCP_H_REPORTED) or returns a negative code; except that
 * with gone set (close), a browser session whose browser is gone, running
 * or suspended, is RLMCP_OK with *gone true (close still shuts it down).
 */
static int explain_session(const struct rlmcp_h *h, const char *id,
                           const char *detail, bool *gone)
{
    static const char remedy[] =
        "Start a new session: call run_browser without session_id (e.g. "
        "action navigate); it returns the new session_id.";
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s", id);
    cJSON *dbx = NULL;
    long status = 0;
    const char *st = NULL;
    const cJSON *md = NULL;
    int rc;

    if (path == NULL)
        return RLMCP_ENOMEM;
    rc = rlmcp_h_request_status(h, "GET", path, NULL, NULL,
                                "looking up the session", &status, &dbx, NULL);
    free(path);
    if (rc != RLMCP_OK)
        goto out;
    if (status == 404) {
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_NOT_FOUND, remedy,
                                 "unknown session_id '%s': no such browser "
                                 "session (or devbox)",
                                 id);
        goto out;
    }
    if (status < 200 || status > 299) {
        rc = rlmcp_h_fail(h, rlmcp_h_code_for_status(status),
                          "session %s: looking it up answered HTTP %ld", id,
                          status);
        goto out;
    }
    md = cJSON_GetObjectItemCaseSensitive(dbx, "metadata");
    st = rlmcp_h_devbox_status(dbx);
    if (!eq(str_field(md, "managed_by"), BR_MANAGED_BY))
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_INVALID_ARGUMENT, remedy,
                                 "session_id '%s' is a devbox but not a "
                                 "browser session",
                                 id);
    else if (gone != NULL && (eq(st, "suspended") || eq(st, "suspending")))
        *gone = true; /* close: a session left suspended is shut down */
    else if (eq(str_field(dbx, "shutdown_reason"), "entrypoint_exit"))
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_DEVBOX_NOT_RUNNING, remedy,
                                 "browser session %s is closed: it ended by "
                                 "itself (no action for the deployment's "
                                 "idle_seconds, or its browser exited) and "
                                 "its devbox is %s",
                                 id, st);
    else if (!eq(st, "running"))
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_DEVBOX_NOT_RUNNING, remedy,
                                 "browser session %s is closed (its devbox "
                                 "is %s)",
                                 id, st);
    else if (gone != NULL)
        *gone = true;
    else
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_DEVBOX_NOT_RUNNING, remedy,
                                 "the browser of session %s is no longer "
                                 "running (%s); its devbox %s is, but the "
                                 "page is lost",
                                 id, detail, id);
out:
    cJSON_Delete(dbx);
    return rc;
}

/* ---- starting a session -------------------------------------------------- */

static char *start_command(const struct br *br)
{
    char *exe = NULL;
    char *cmd = NULL;

    if (br->executable != NULL) {
        char *q = rlmcp_h_shell_quote(br->executable);
        exe = q != NULL ? rlmcp_h_sprintf(" --executable %s", q) : NULL;
        free(q);
        if (exe == NULL)
            return NULL;
    }
    /* The driver goes in through a here-document of the devbox's
     * entrypoint: the create both writes and starts it, and the devbox ends
     * when it does. Its output is the entrypoint's log. */
    cmd = rlmcp_h_sprintf("mkdir -p -m 700 " BR_DIR " && cat > " BR_DIR
                          "/driver.cjs <<'" EOF_MARK "'\n%.*s" EOF_MARK "\n"
                          "exec node " BR_DIR "/driver.cjs --dir " BR_DIR
                          " --width %lld --height %lld --idle-seconds %lld%s\n",
                          (int)br_driver_js_len, (const char *)br_driver_js,
                          br->width, br->height, br->idle_s,
                          exe != NULL ? exe : "");
    free(exe);
    return cmd;
}

static int create_devbox(const struct br *br, const struct rlmcp_h *h,
                         char **id_out)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *md = NULL, *lp = NULL;
    char *cmd = start_command(br);
    int rc = RLMCP_ENOMEM;

    if (body == NULL || cmd == NULL)
        goto out;
    cJSON_AddStringToObject(body, "name", "browser-session");
    cJSON_AddStringToObject(body, "entrypoint", cmd);
    cJSON_AddStringToObject(body, "blueprint_name", br->blueprint_name);
    md = cJSON_AddObjectToObject(body, "metadata");
    cJSON_AddStringToObject(md, "managed_by", BR_MANAGED_BY);
    lp = cJSON_AddObjectToObject(body, "launch_parameters");
    cJSON_AddNumberToObject(lp, "keep_alive_time_seconds",
                            (double)br->keep_alive_s);
    rc = rlmcp_h_devbox_create(h, body, "creating the browser session's devbox",
                               id_out);
out:
    free(cmd);
    cJSON_Delete(body);
    return rc;
}

/* A devbox that did not run in time; the engine may say why (its image
 * still building). */
static int not_ready(const struct br *br, const struct rlmcp_h *h,
                     const char *id, const cJSON *view)
{
    int rc = rlmcp_h_devbox_preparing(h, view);

    if (rc != RLMCP_OK)
        return rc;
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_DEVBOX_NOT_READY,
        "The browser image may still be building on its first use; "
        "call run_browser again in a minute.",
        "the browser session's devbox %s is not running after %lld s "
        "(status %s); it was shut down",
        id, br->create_wait_s, rlmcp_h_devbox_status(view));
}

static int wait_running(const struct br *br, const struct rlmcp_h *h,
                        const char *id)
{
    cJSON *view = NULL;
    const char *st = NULL;
    const char *fm = NULL;
    int rc;

    rc = rlmcp_h_devbox_wait(h, id, running_set,
                             (uint64_t)br->create_wait_s * 1000u, &view);
    if (rc != RLMCP_OK)
        goto out;
    st = rlmcp_h_devbox_status(view);
    fm = str_field(view, "failure_message");
    if (eq(st, "failure") || eq(st, "shutdown"))
        rc = rlmcp_h_fail_remedy(
            h, RLMCP_ERR_DEVBOX_NOT_RUNNING,
            "Check the deployment's browser blueprint_name, then call "
            "run_browser again.",
            "the browser session's devbox %s stopped while starting "
            "(status %s)%s%.600s",
            id, st, fm != NULL ? ": " : "", fm != NULL ? fm : "");
    else if (!eq(st, "running"))
        rc = not_ready(br, h, id, view);
out:
    cJSON_Delete(view);
    return rc;
}

int br_session_start(const struct br *br, const struct rlmcp_h *h,
                     char **id_out)
{
    char *id = NULL;
    int rc;

    *id_out = NULL;
    rc = create_devbox(br, h, &id);
    if (rc != RLMCP_OK)
        goto out;
    if (h->api->is_cancelled(h->call))
        rc = RLMCP_ECANCELLED;
    if (rc == RLMCP_OK)
        rc = wait_running(br, h, id);
out:
    if (rc == RLMCP_OK) {
        *id_out = id;
        id = NULL;
    } else if (id != NULL) {
        rlmcp_h_devbox_discard(h, id);
    }
    free(id);
    return rc;
}

/* ---- one action ------------------------------------------------------------
 */

/*
 * The command of one action: wait for the driver's socket (only a new
 * session waits: its browser may still be starting), then hand the request
 * to the driver. The request is one JSON line, so the here-document's end
 * marker cannot occur in it.
 */
static char *action_command(const char *request, long long wait_tenths,
                            long long max_s)
{
    return rlmcp_h_sprintf(
        "d=" BR_DIR "; n=0\n"
        "while [ ! -S \"$d/driver.sock\" ] && [ ! -e \"$d/driver.failed\" ] "
        "&& [ \"$n\" -lt %lld ]; do sleep 0.1; n=$((n+1)); done\n"
        "if [ -e \"$d/driver.failed\" ]; then cat \"$d/driver.failed\"; "
        "exit %d; fi\n"
        "[ -S \"$d/driver.sock\" ] || exit %d\n"
        "exec curl -sS --max-time %lld --unix-socket \"$d/driver.sock\" "
        "-H 'content-type: application/json' --data-binary @- "
        "http://driver/action <<'" EOF_MARK "'\n%s\n" EOF_MARK "\n",
        wait_tenths, EXIT_DRIVER_FAILED, EXIT_NO_DRIVER, max_s, request);
}

/*
 * A request about the action the devbox refused is explained as a session
 * problem (ud: close's bool *gone).
 */
static int exec_refused(const struct rlmcp_h *h, const char *id, long status,
                        const char *msg, bool waiting, void *ud)
{
    (void)status;
    if (waiting)
        return explain_session(h, id, "the action's execution was lost", ud);
    return explain_session(h, id, msg != NULL ? msg : "exec refused", ud);
}

/* Run cmd in the devbox until it completes or until_ms (monotonic) passes;
 * *view_out is the completed execution. */
static int exec_wait(const struct rlmcp_h *h, const char *id, const char *cmd,
                     uint64_t until_ms, bool *gone, cJSON **view_out)
{
    const struct rlmcp_h_exec_wait ew = {"the browser action", exec_refused,
                                         gone};

    return rlmcp_h_exec_wait(h, id, cmd, until_ms, &ew, view_out);
}

/* Turn the action command's outcome into the driver's reply. */
static int read_reply(const struct rlmcp_h *h, const char *id,
                      const cJSON *view, bool new_session, bool *gone,
                      cJSON **reply_out)
{
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(view, "exit_status");
    const char *out = str_field(view, "stdout");
    const char *err = str_field(view, "stderr");
    int code = cJSON_IsNumber(ex) ? ex->valueint : -1;
    char *line = NULL;
    int rc = RLMCP_OK;

    switch (code) {
    case 0:
        line = rlmcp_h_last_line(out);
        *reply_out = line != NULL ? cJSON_Parse(line) : NULL;
        if (!cJSON_IsObject(*reply_out))
            rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                              "session %s: the browser driver's answer is not "
                              "JSON: %.200s",
                              id, line != NULL ? line : "");
        break;
    case EXIT_DRIVER_FAILED:
        line = rlmcp_h_last_line(out);
        /* In a session that worked before, its browser died since. */
        if (!new_session) {
            rc = explain_session(h, id, line != NULL ? line : "", gone);
            break;
        }
        rc = rlmcp_h_fail_remedy(h, RLMCP_ERR_UNAVAILABLE,
                                 "Check that the browser image or blueprint "
                                 "has Chromium, Node and playwright-core.",
                                 "session %s: the browser could not start: "
                                 "%.600s",
                                 id, line != NULL ? line : "");
        break;
    case EXIT_NO_DRIVER:
        rc = explain_session(h, id, "no browser driver in the devbox", gone);
        break;
    case CURL_CONNECT_FAILED:
    case CURL_EMPTY_REPLY:
        rc = explain_session(h, id, "the browser driver exited", gone);
        break;
    case CURL_TIMED_OUT:
        rc = rlmcp_h_fail(h, RLMCP_ERR_TIMEOUT,
                          "session %s: the browser did not answer in time", id);
        break;
    default:
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "session %s: the action command exited with %d: "
                          "%.300s",
                          id, code, err != NULL ? err : "");
        break;
    }
    free(line);
    if (rc != RLMCP_OK) {
        cJSON_Delete(*reply_out);
        *reply_out = NULL;
    }
    return rc;
}

int br_session_send(const struct br *br, const struct rlmcp_h *h,
                    const char *id, const struct br_call *c, bool new_session,
                    bool *gone, cJSON **reply_out)
{
    cJSON *view = NULL;
    char *request = NULL, *cmd = NULL;
    uint64_t left = rlmcp_h_time_left_ms(h, 2000);
    long long wait_tenths = 0;
    /* curl gives the driver the action's own bound and then some. */
    long long max_s = c->timeout_ms / 1000 + 30;
    int rc = RLMCP_ENOMEM;

    *reply_out = NULL;
    /* A new session's Chromium may take minutes to start on a loaded
     * machine: wait for it as long as the driver lets it try (300 s). */
    if (new_session)
        wait_tenths =
            (long long)(left / 100) > 3000 ? 3000 : (long long)(left / 100);
    request = br_driver_request(br, c);
    if (request != NULL)
        cmd = action_command(request, wait_tenths, max_s);
    if (cmd == NULL)
        goto out;
    rc = exec_wait(h, id, cmd, rlmcp_h_now_ms() + left, gone, &view);
    if (rc == RLMCP_OK && view != NULL)
        rc = read_reply(h, id, view, new_session, gone, reply_out);
out:
    free(request);
    free(cmd);
    cJSON_Delete(view);
    return rc;
}

/* ---- closing and files ------------------------------------------------------
 */

int br_session_end(const struct rlmcp_h *h, const char *id)
{
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s/shutdown", id);
    int rc;

    if (path == NULL)
        return RLMCP_ENOMEM;
    /* Nothing of a closed session is worth keeping (its page is gone with
     * the browser), so its devbox is not left suspended: a new session is a
     * new devbox. */
    rc = rlmcp_h_request(h, "POST", path, NULL, NULL,
                         "shutting down the session's devbox", NULL);
    free(path);
    return rc;
}

int br_session_fetch(const struct br *br, const struct rlmcp_h *h,
                     const char *id, const char *path,
                     struct rlmcp_http_resp **resp_out)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    char *url = NULL, *text = NULL;
    int rc;

    *resp_out = NULL;
    rc = rlmcp_h_download_req(id, path, br->max_screenshot_bytes, 60000, &req,
                              &url, &text);
    if (rc != RLMCP_OK)
        goto out;
    rc = h->api->runloop_request(h->call, &req, resp_out);
    if (rc != RLMCP_OK) {
        rc = rlmcp_h_fail_rc(h, rc, "downloading the screenshot");
        goto out;
    }
    if ((*resp_out)->status < 200 || (*resp_out)->status > 299)
        rc = rlmcp_h_fail_resp(h, *resp_out, "downloading the screenshot");
    else if (rlmcp_h_resp_over(*resp_out, br->max_screenshot_bytes))
        rc = rlmcp_h_fail(h, RLMCP_ERR_TOO_LARGE,
                          "the screenshot is larger than this server's limit "
                          "of %lld bytes (saved at %s in the devbox)",
                          br->max_screenshot_bytes, path);
    if (rc != RLMCP_OK) {
        h->api->http_resp_free(*resp_out);
        *resp_out = NULL;
    }
out:
    free(url);
    free(text);
    return rc;
}
