/*
 * desktop.c - computer: a virtual display in a devbox driven with the
 * actions computer-use models are trained on (Anthropic's computer tool:
 * screenshot, clicks, mouse_move, left_click_drag, type, key, scroll, wait,
 * cursor_position...), and a web viewer for a person to watch.
 *
 * A call acts on a devbox from the desktop image (local engine) or
 * blueprint (cloud): the one named by devbox_id, else a new one. Each action
 * is one exec of desktop.sh (embedded), which starts the display (Xvfb and
 * openbox) on first use and leaves it running for the next calls; input goes
 * through xdotool, screenshots through scrot (scaled by netpbm) and come
 * back as PNG image content. The plugin keeps no state: the devbox is the
 * session. See docs/tools.md "desktop".
 *
 * Config: blueprint_name, display_width, display_height,
 * create_wait_seconds, keep_alive_seconds, max_screenshot_bytes,
 * viewer_port, viewer_interactive.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"
#include "schemas.h" /* schema_<file>: schemas/<file>.json, built in */

#define DEFAULT_BLUEPRINT "runloop-mcp-desktop"
#define MANAGED_BY "runloop-mcp.desktop"
#define DISPLAY_NUMBER 99
#define CLOUD_URL_TEMPLATE "https://{port}-{tunnel_key}.tunnel.runloop.ai"
/* Longest command an action may send: devboxd refuses a command over
 * 32 KiB (its agent's message limit), and the command holds desktop.sh
 * (about 8 KiB) and the shell-quoted text and URL (a ' takes 4 bytes). */
#define MAX_COMMAND (32 * 1024)
#define MAX_KEYS 256

/* desktop.sh's exit statuses (see its header). */
#define EXIT_NOT_DESKTOP 80
#define EXIT_NO_DISPLAY 81
#define EXIT_BAD_INPUT 82
#define EXIT_FAILED 83
#define EXIT_NO_BROWSER 84

extern const unsigned char dk_script_sh[];
extern const size_t dk_script_sh_len;

struct dk {
    const struct rlmcp_host_api *api;
    char *blueprint_name;
    long long width, height;
    long long create_wait_s;
    long long keep_alive_s;
    long long max_screenshot_bytes;
    long long viewer_port;
    bool viewer_interactive;
};

/* What an action takes besides itself. */
enum need { NO, OPT, REQ };

static const struct action {
    const char *name;
    enum need coordinate;
    enum need text;
    bool keys; /* text holds key names (else: text to type) */
} actions[] = {
    {"screenshot", NO, NO, false},
    {"left_click", OPT, OPT, true},
    {"double_click", OPT, OPT, true},
    {"triple_click", OPT, OPT, true},
    {"right_click", OPT, OPT, true},
    {"middle_click", OPT, OPT, true},
    {"mouse_move", REQ, NO, false},
    {"left_click_drag", REQ, NO, false},
    {"left_mouse_down", OPT, NO, false},
    {"left_mouse_up", OPT, NO, false},
    {"type", NO, REQ, false},
    {"key", NO, REQ, true},
    {"hold_key", NO, REQ, true},
    {"scroll", OPT, OPT, true},
    {"wait", NO, NO, false},
    {"cursor_position", NO, NO, false},
    {"viewer", NO, NO, false},
};

#define ACTIONS_TEXT                                                           \
    "screenshot, left_click, double_click, triple_click, right_click, "        \
    "middle_click, mouse_move, left_click_drag, left_mouse_down, "             \
    "left_mouse_up, type, key, hold_key, scroll, wait, cursor_position, "      \
    "viewer"

/* One checked call; strings borrowed from the parsed arguments. */
struct dk_call {
    const struct action *act;
    const char *devbox_id;
    const char *text;
    const char *url;
    const char *scroll_direction;
    long long x, y, sx, sy;
    bool has_xy, has_start;
    long long scroll_amount;
    double duration;
    long long image_w, image_h; /* 0: the display's */
    bool shot;
};

static const char *str_field(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static bool eq(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* ---- arguments -------------------------------------------------------------
 */

/* A coordinate argument ([x, y], types checked by the host) inside the
 * display. */
static int arg_point(const struct dk *dk, const struct rlmcp_h *h,
                     const cJSON *args, const char *name, long long *x,
                     long long *y, bool *present)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
    const cJSON *a = cJSON_GetArrayItem(v, 0);
    const cJSON *b = cJSON_GetArrayItem(v, 1);

    *present = false;
    if (v == NULL)
        return RLMCP_OK;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 || !cJSON_IsNumber(a) ||
        !cJSON_IsNumber(b) || a->valuedouble != floor(a->valuedouble) ||
        b->valuedouble != floor(b->valuedouble))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument '%s' must be [x, y], two integers", name);
    if (a->valuedouble < 0 || a->valuedouble >= (double)dk->width ||
        b->valuedouble < 0 || b->valuedouble >= (double)dk->height)
        return rlmcp_h_fail_remedy(
            h, RLMCP_ERR_INVALID_ARGUMENT,
            "Give a point on the display: take a screenshot and use its "
            "pixel positions (screenshot_width/height scale only the image).",
            "argument '%s' [%.0f, %.0f] is outside the display (%lldx%lld): "
            "x must be 0-%lld and y 0-%lld",
            name, a->valuedouble, b->valuedouble, dk->width, dk->height,
            dk->width - 1, dk->height - 1);
    *x = (long long)a->valuedouble;
    *y = (long long)b->valuedouble;
    *present = true;
    return RLMCP_OK;
}

/* Key names (xdotool's: letters, digits, _, + between keys of a combination,
 * spaces between keys of a sequence). */
static bool keys_valid(const char *s)
{
    size_t n = strlen(s);

    return n >= 1 && n <= MAX_KEYS &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789_+ ") == n &&
           strspn(s, " ") < n;
}

/* Typed text: no control characters but newline and tab. */
static bool text_typable(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    for (; *p != '\0'; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
            return false;
    return true;
}

static bool url_ok(const char *s)
{
    size_t n = strlen(s);
    const unsigned char *p = (const unsigned char *)s;

    if (n == 0)
        return false;
    for (; *p != '\0'; p++)
        if (*p <= 0x20 || *p == 0x7f)
            return false;
    return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0 ||
           strncmp(s, "file://", 7) == 0 || strncmp(s, "data:", 5) == 0 ||
           strncmp(s, "about:", 6) == 0;
}

static int unused(const struct rlmcp_h *h, const char *arg, const char *act,
                  const char *which)
{
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "argument '%s' is not used by action %s (it is for "
                        "%s)",
                        arg, act, which);
}

/* Screenshot size: at most the display's, the missing side keeping its
 * aspect ratio. */
static int arg_image_size(const struct dk *dk, const struct rlmcp_h *h,
                          const cJSON *args, struct dk_call *c)
{
    long long w = 0, hh = 0;
    int rc;

    rc = rlmcp_h_arg_int(h, args, "screenshot_width", false, 16, dk->width, &w);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(h, args, "screenshot_height", false, 16,
                             dk->height, &hh);
    if (rc != RLMCP_OK)
        return rc;
    if (w == 0 && hh == 0)
        return RLMCP_OK;
    if (hh == 0)
        hh = (w * dk->height + dk->width / 2) / dk->width;
    if (w == 0)
        w = (hh * dk->width + dk->height / 2) / dk->height;
    c->image_w = w > 0 ? w : 1;
    c->image_h = hh > 0 ? hh : 1;
    return RLMCP_OK;
}

static int parse_call(const struct dk *dk, const struct rlmcp_h *h,
                      const cJSON *args, struct dk_call *c)
{
    const char *name = NULL;
    const char *a = NULL;
    const cJSON *dur = cJSON_GetObjectItemCaseSensitive(args, "duration");
    size_t i;
    int rc;

    memset(c, 0, sizeof(*c));
    c->scroll_amount = 3;
    c->duration = 1;
    rc = rlmcp_h_arg_str(h, args, "action", true, &name);
    if (rc != RLMCP_OK)
        return rc;
    for (i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
        if (strcmp(name, actions[i].name) == 0)
            c->act = &actions[i];
    if (c->act == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "unknown action '%.100s': use one of " ACTIONS_TEXT,
                            name);
    a = c->act->name;
    rc = rlmcp_h_arg_id(h, args, "devbox_id", false, &c->devbox_id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "text", false, &c->text);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "url", false, &c->url);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "scroll_direction", false,
                             &c->scroll_direction);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(h, args, "scroll_amount", false, 1, 100,
                             &c->scroll_amount);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(h, args, "screenshot", &c->shot);
    if (rc == RLMCP_OK)
        rc = arg_image_size(dk, h, args, c);
    if (rc == RLMCP_OK)
        rc = arg_point(dk, h, args, "coordinate", &c->x, &c->y, &c->has_xy);
    if (rc == RLMCP_OK)
        rc = arg_point(dk, h, args, "start_coordinate", &c->sx, &c->sy,
                       &c->has_start);
    if (rc != RLMCP_OK)
        return rc;

    if (c->act->coordinate == REQ && !c->has_xy)
        return rlmcp_h_fail(
            h, RLMCP_ERR_INVALID_ARGUMENT,
            "action %s needs argument 'coordinate' [x, y]%s", a,
            strcmp(a, "left_click_drag") == 0 ? " (where the drag ends)" : "");
    if (c->act->coordinate == NO && c->has_xy)
        return unused(h, "coordinate", a,
                      "clicks, mouse_move, left_click_drag and scroll");
    if (strcmp(a, "left_click_drag") == 0 && !c->has_start)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "action left_click_drag needs argument "
                            "'start_coordinate' [x, y] (where the drag "
                            "starts)");
    if (strcmp(a, "left_click_drag") != 0 && c->has_start)
        return unused(h, "start_coordinate", a, "left_click_drag");

    if (c->act->text == REQ && (c->text == NULL || c->text[0] == '\0'))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "action %s needs argument 'text' (%s)", a,
                            c->act->keys ? "key names, e.g. Return or ctrl+a"
                                         : "the text to type");
    if (c->act->text == NO && c->text != NULL)
        return unused(h, "text", a,
                      "type, key, hold_key, and modifier keys of clicks and "
                      "scroll");
    if (c->text != NULL && c->act->keys && c->text[0] != '\0' &&
        !keys_valid(c->text))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'text' of action %s must be key names "
                            "(letters, digits, _; + joins a combination, "
                            "spaces separate keys; at most %d characters), "
                            "e.g. Return, ctrl+a, ctrl+shift+t",
                            a, MAX_KEYS);
    if (c->text != NULL && !c->act->keys && !text_typable(c->text))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'text' must have no control characters "
                            "but newline and tab");

    if (strcmp(a, "scroll") == 0 && c->scroll_direction == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "action scroll needs argument 'scroll_direction' "
                            "(up, down, left or right)");
    if (strcmp(a, "scroll") != 0 &&
        (c->scroll_direction != NULL ||
         cJSON_GetObjectItemCaseSensitive(args, "scroll_amount") != NULL))
        return unused(h,
                      c->scroll_direction != NULL ? "scroll_direction"
                                                  : "scroll_amount",
                      a, "scroll");
    if (c->scroll_direction != NULL && strcmp(c->scroll_direction, "up") != 0 &&
        strcmp(c->scroll_direction, "down") != 0 &&
        strcmp(c->scroll_direction, "left") != 0 &&
        strcmp(c->scroll_direction, "right") != 0)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'scroll_direction' must be up, down, "
                            "left or right");

    if (dur != NULL) {
        if (strcmp(a, "wait") != 0 && strcmp(a, "hold_key") != 0)
            return unused(h, "duration", a, "wait and hold_key");
        if (!cJSON_IsNumber(dur) || dur->valuedouble < 0 ||
            dur->valuedouble > 60)
            return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                "argument 'duration' must be 0-60 seconds");
        c->duration = dur->valuedouble;
    } else if (strcmp(a, "hold_key") == 0) {
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "action hold_key needs argument 'duration' "
                            "(seconds, 0-60)");
    }

    if (c->url != NULL && !url_ok(c->url))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'url' must be an http://, https://, "
                            "file://, data: or about: URL without spaces or "
                            "control characters");
    if (strcmp(a, "screenshot") == 0)
        c->shot = true;
    return RLMCP_OK;
}

/* ---- the devbox ------------------------------------------------------------
 */

static int create_devbox(const struct dk *dk, const struct rlmcp_h *h,
                         char **id_out)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *md = NULL, *lp = NULL;
    int rc = RLMCP_ENOMEM;

    if (body == NULL)
        goto out;
    cJSON_AddStringToObject(body, "name", "desktop");
    cJSON_AddStringToObject(body, "blueprint_name", dk->blueprint_name);
    md = cJSON_AddObjectToObject(body, "metadata");
    cJSON_AddStringToObject(md, "managed_by", MANAGED_BY);
    lp = cJSON_AddObjectToObject(body, "launch_parameters");
    cJSON_AddNumberToObject(lp, "keep_alive_time_seconds",
                            (double)dk->keep_alive_s);
    rc = rlmcp_h_devbox_create(h, body, "creating the desktop devbox", id_out);
out:
    cJSON_Delete(body);
    return rc;
}

static int start_devbox(const struct dk *dk, const struct rlmcp_h *h,
                        char **id_out)
{
    static const char *const settled[] = {"running", "failure", "shutdown",
                                          NULL};
    cJSON *view = NULL;
    char *id = NULL;
    const char *st = NULL, *fm = NULL;
    int rc;

    *id_out = NULL;
    rc = create_devbox(dk, h, &id);
    if (rc != RLMCP_OK)
        goto out;
    rc = h->api->is_cancelled(h->call) ? RLMCP_ECANCELLED : RLMCP_OK;
    if (rc == RLMCP_OK)
        rc = rlmcp_h_devbox_wait(h, id, settled,
                                 (uint64_t)dk->create_wait_s * 1000u, &view);
    if (rc != RLMCP_OK)
        goto out;
    st = rlmcp_h_devbox_status(view);
    fm = str_field(view, "failure_message");
    if (eq(st, "failure") || eq(st, "shutdown")) {
        rc = rlmcp_h_fail_remedy(
            h, RLMCP_ERR_DEVBOX_NOT_RUNNING,
            "Check the deployment's desktop blueprint_name, then call "
            "computer again.",
            "the desktop devbox %s stopped while starting (status %s)%s%.600s",
            id, st, fm != NULL ? ": " : "", fm != NULL ? fm : "");
    } else if (!eq(st, "running")) {
        rc = rlmcp_h_devbox_preparing(h, view);
        if (rc == RLMCP_OK)
            rc = rlmcp_h_fail_remedy(
                h, RLMCP_ERR_DEVBOX_NOT_READY,
                "The desktop image may still be building on its first use; "
                "call computer again in a minute.",
                "the desktop devbox %s is not running after %lld s (status "
                "%s); it was shut down",
                id, dk->create_wait_s, st);
    }
out:
    if (rc == RLMCP_OK) {
        *id_out = id;
        id = NULL;
    } else if (id != NULL) {
        rlmcp_h_devbox_discard(h, id);
    }
    cJSON_Delete(view);
    free(id);
    return rc;
}

/* ---- one action ------------------------------------------------------------
 */

/* A string variable of the script, shell-quoted ("" when s is NULL). */
static char *var(const char *name, const char *s)
{
    char *q = rlmcp_h_shell_quote(s != NULL ? s : "");
    char *out = q != NULL ? rlmcp_h_sprintf("%s=%s\n", name, q) : NULL;

    free(q);
    return out;
}

/* The command: the call's variables, then desktop.sh. */
static char *action_command(const struct dk *dk, const struct dk_call *c)
{
    char *text = var("TEXT", c->text);
    char *url = var("URL", c->url);
    char *sdir = var("SDIR", c->scroll_direction);
    char xy[64] = "X=\nY=\n", start[64] = "SX=\nSY=\n", img[64] = "IW=\nIH=\n";
    char *cmd = NULL;

    if (c->has_xy)
        snprintf(xy, sizeof(xy), "X=%lld\nY=%lld\n", c->x, c->y);
    if (c->has_start)
        snprintf(start, sizeof(start), "SX=%lld\nSY=%lld\n", c->sx, c->sy);
    if (c->image_w > 0)
        snprintf(img, sizeof(img), "IW=%lld\nIH=%lld\n", c->image_w,
                 c->image_h);
    if (text != NULL && url != NULL && sdir != NULL)
        cmd = rlmcp_h_sprintf(
            "ACT=%s\nW=%lld\nH=%lld\nDNUM=%d\n%s%s%s%s%s%s"
            "SAMT=%lld\nDUR=%.3f\nSHOT=%d\nVPORT=%lld\n"
            "VIEWONLY=%d\n%.*s",
            c->act->name, dk->width, dk->height, DISPLAY_NUMBER, xy, start, img,
            text, url, sdir, c->scroll_amount, c->duration, c->shot ? 1 : 0,
            dk->viewer_port, dk->viewer_interactive ? 0 : 1,
            (int)dk_script_sh_len, (const char *)dk_script_sh);
    free(text);
    free(url);
    free(sdir);
    return cmd;
}

/* An action runs as one command; a refusal is explained by the devbox's
 * state (rlmcp_h_exec_wait's default). */
static const struct rlmcp_h_exec_wait exec_how = {"the computer action", NULL,
                                                  NULL};

/* The script's outcome: its JSON line, or its failure named. */
static int read_reply(const struct dk *dk, const struct rlmcp_h *h,
                      const char *id, const cJSON *view, cJSON **reply_out)
{
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(view, "exit_status");
    int code = cJSON_IsNumber(ex) ? ex->valueint : -1;
    char *out = rlmcp_h_last_line(str_field(view, "stdout"));
    char *err = rlmcp_h_last_line(str_field(view, "stderr"));
    const char *why = err != NULL ? err : "";
    int rc = RLMCP_ENOMEM;

    *reply_out = NULL;
    if (out == NULL || err == NULL)
        goto done;
    switch (code) {
    case 0:
        *reply_out = cJSON_Parse(out);
        rc = cJSON_IsObject(*reply_out)
                 ? RLMCP_OK
                 : rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                                "devbox %s: the computer action's answer is "
                                "not JSON: %.200s",
                                id, out);
        break;
    case EXIT_NOT_DESKTOP:
        rc = rlmcp_h_fail_remedy(
            h, RLMCP_ERR_INVALID_ARGUMENT,
            "Call computer without devbox_id for a new desktop devbox, or "
            "create one from the desktop image (blueprint_name "
            "runloop-mcp-desktop).",
            "devbox %s cannot show a display: %s", id, why);
        break;
    case EXIT_NO_DISPLAY:
    case EXIT_NO_BROWSER:
        rc = rlmcp_h_fail_remedy(
            h, RLMCP_ERR_UNAVAILABLE,
            "Call computer again (what is missing starts anew); if it keeps "
            "failing, read the logs in /tmp/rlmcp-desktop of the devbox "
            "(execute_command) or call without devbox_id for a new one.",
            "devbox %s: %s", id, why);
        break;
    case EXIT_BAD_INPUT:
        rc = rlmcp_h_fail_remedy(
            h, RLMCP_ERR_INVALID_ARGUMENT,
            "Check the argument against docs/tools.md (computer) and call "
            "again: the display is unchanged by the part that failed.",
            "%s", why);
        break;
    case EXIT_FAILED:
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL, "devbox %s: %s", id, why);
        break;
    default:
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "devbox %s: the computer action exited with %d: "
                          "%.300s",
                          id, code, why);
        break;
    }
done:
    (void)dk;
    free(out);
    free(err);
    return rc;
}

/* ---- results ---------------------------------------------------------------
 */

/* The screenshot file as image content, the first block of the result. */
static int add_image(const struct dk *dk, const struct rlmcp_h *h,
                     const char *id, const char *path)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;
    cJSON *img = NULL;
    char *url = NULL, *body = NULL, *b64 = NULL, *text = NULL;
    int rc;

    rc = rlmcp_h_download_req(id, path, dk->max_screenshot_bytes, 60000, &req,
                              &url, &body);
    if (rc != RLMCP_OK)
        goto out;
    rc = h->api->runloop_request(h->call, &req, &resp);
    if (rc != RLMCP_OK) {
        rc = rlmcp_h_fail_rc(h, rc, "downloading the screenshot");
        goto out;
    }
    if (resp->status < 200 || resp->status > 299) {
        rc = rlmcp_h_fail_resp(h, resp, "downloading the screenshot");
        goto out;
    }
    if (rlmcp_h_resp_over(resp, dk->max_screenshot_bytes)) {
        rc = rlmcp_h_fail_remedy(
            h, RLMCP_ERR_TOO_LARGE,
            "Ask for a smaller image with screenshot_width.",
            "the screenshot is larger than this server's limit of %lld bytes "
            "(saved at %s in devbox %s)",
            dk->max_screenshot_bytes, path, id);
        goto out;
    }
    rc = RLMCP_ENOMEM;
    b64 = rlmcp_h_b64_encode(resp->body, resp->body_len, NULL);
    img = cJSON_CreateObject();
    if (b64 == NULL || img == NULL)
        goto out;
    cJSON_AddStringToObject(img, "type", "image");
    cJSON_AddStringToObject(img, "data", b64);
    cJSON_AddStringToObject(img, "mimeType", "image/png");
    text = cJSON_PrintUnformatted(img);
    if (text != NULL)
        rc = h->api->result_content(h->call, text, strlen(text));
out:
    h->api->http_resp_free(resp);
    cJSON_Delete(img);
    free(url);
    free(body);
    free(b64);
    free(text);
    return rc;
}

static bool tunnel_key_valid(const char *s)
{
    size_t n = s != NULL ? strlen(s) : 0;

    return n >= 1 && n <= 512 &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789_-") == n;
}

static bool url_template_ok(const char *t)
{
    return t != NULL && strlen(t) <= 512 &&
           (strncmp(t, "http://", 7) == 0 || strncmp(t, "https://", 8) == 0) &&
           strstr(t, "{port}") != NULL && strstr(t, "{tunnel_key}") != NULL &&
           strpbrk(t, " \t\r\n?#") == NULL;
}

/* "{port}" and "{tunnel_key}" of tmpl filled in (malloc'd). */
static char *expand(const char *tmpl, const char *key, long long port)
{
    char *out = NULL;
    char *next = NULL;
    const char *p = NULL;
    char *at = NULL;

    out = strdup(tmpl);
    while (out != NULL && (at = strstr(out, "{port}")) != NULL) {
        *at = '\0';
        next = rlmcp_h_sprintf("%s%lld%s", out, port, at + 6);
        free(out);
        out = next;
    }
    while (out != NULL && (at = strstr(out, "{tunnel_key}")) != NULL) {
        *at = '\0';
        p = at + 12;
        next = rlmcp_h_sprintf("%s%s%s", out, key, p);
        free(out);
        out = next;
    }
    return out;
}

/* The VNC password desktop.sh made: 8 letters or digits. */
static bool vnc_password_valid(const char *s)
{
    return s != NULL && strlen(s) == 8 &&
           strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789") == 8;
}

/*
 * The viewer's URL: noVNC's page on the viewer port through the devbox's
 * tunnel (an open one: a browser sends no token; one is made when the
 * devbox has none). Its WebSocket path is the tunnel URL's own path (the
 * path form's /tunnel/{port}-{key}) plus websockify. The VNC password goes
 * in the fragment, which noVNC reads and no server or proxy sees.
 */
static int viewer_url(const struct dk *dk, const struct rlmcp_h *h,
                      const char *id, const char *password, char **url_out)
{
    char *path = rlmcp_h_sprintf("/v1/devboxes/%s", id);
    char *epath = rlmcp_h_sprintf("/v1/devboxes/%s/enable_tunnel", id);
    char *base = NULL, *ws = NULL, *enc = NULL;
    cJSON *dbx = NULL, *made = NULL, *body = NULL;
    const cJSON *tv = NULL;
    const char *tmpl = NULL, *key = NULL, *slash = NULL;
    int rc;

    *url_out = NULL;
    rc = rlmcp_h_request(h, "GET", path, NULL, NULL,
                         "looking up the devbox's tunnel", &dbx);
    if (rc != RLMCP_OK)
        goto out;
    tv = cJSON_GetObjectItemCaseSensitive(dbx, "tunnel");
    if (cJSON_IsObject(tv) && eq(str_field(tv, "auth_mode"), "authenticated")) {
        rc = rlmcp_h_fail_remedy(
            h, RLMCP_ERR_CONFLICT,
            "Remove the tunnel (remove_tunnel) and ask for the viewer "
            "again, or open the viewer port through the tunnel with its "
            "token yourself.",
            "devbox %s has an authenticated tunnel: a web browser cannot "
            "send its token, and a devbox has one tunnel",
            id);
        goto out;
    }
    if (!cJSON_IsObject(tv) || str_field(tv, "tunnel_key") == NULL) {
        body = cJSON_CreateObject();
        if (body == NULL) {
            rc = RLMCP_ENOMEM;
            goto out;
        }
        cJSON_AddStringToObject(body, "auth_mode", "open");
        rc = rlmcp_h_request(h, "POST", epath, body, NULL,
                             "opening a tunnel for the viewer", &made);
        if (rc != RLMCP_OK)
            goto out;
        tv = made;
    }
    key = str_field(tv, "tunnel_key");
    if (!tunnel_key_valid(key)) {
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "devbox %s: the Runloop API returned a tunnel "
                          "without a usable tunnel_key",
                          id);
        goto out;
    }
    /* devboxd's path form opens in any browser (no *.localhost lookup). */
    tmpl = str_field(tv, "path_url_template");
    if (!url_template_ok(tmpl))
        tmpl = str_field(tv, "url_template");
    if (!url_template_ok(tmpl))
        tmpl = CLOUD_URL_TEMPLATE;
    rc = RLMCP_ENOMEM;
    base = expand(tmpl, key, dk->viewer_port);
    if (base == NULL)
        goto out;
    slash = strchr(strstr(base, "://") + 3, '/');
    ws = rlmcp_h_sprintf("%s%swebsockify", slash != NULL ? slash + 1 : "",
                         slash != NULL ? "/" : "");
    enc = ws != NULL ? rlmcp_h_url_encode(ws) : NULL;
    if (enc == NULL)
        goto out;
    *url_out = rlmcp_h_sprintf(
        "%s/vnc.html?autoconnect=1&resize=scale&"
        "reconnect=1%s&path=%s#password=%s",
        base, dk->viewer_interactive ? "" : "&view_only=1", enc, password);
    rc = *url_out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
out:
    free(path);
    free(epath);
    free(base);
    free(ws);
    free(enc);
    cJSON_Delete(dbx);
    cJSON_Delete(made);
    cJSON_Delete(body);
    return rc;
}

static int finish(const struct dk *dk, const struct rlmcp_h *h,
                  const struct dk_call *c, const char *id, bool new_devbox,
                  const cJSON *reply)
{
    static const char *const ints[] = {
        "display_width", "display_height", "x", "y",
        "image_width",   "image_height",   NULL};
    cJSON *res = cJSON_CreateObject();
    const cJSON *v = NULL;
    const char *shot = str_field(reply, "shot");
    char *vurl = NULL;
    size_t i;
    int rc = RLMCP_ENOMEM;

    if (res == NULL)
        goto out;
    cJSON_AddStringToObject(res, "devbox_id", id);
    cJSON_AddStringToObject(res, "action", c->act->name);
    cJSON_AddBoolToObject(res, "new_devbox", new_devbox);
    for (i = 0; ints[i] != NULL; i++) {
        v = cJSON_GetObjectItemCaseSensitive(reply, ints[i]);
        if (cJSON_IsNumber(v))
            cJSON_AddNumberToObject(res, ints[i], v->valuedouble);
    }
    rc = RLMCP_OK;
    if (strcmp(c->act->name, "viewer") == 0) {
        const char *pw = str_field(reply, "viewer_password");

        if (!vnc_password_valid(pw)) {
            rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                              "devbox %s: the viewer started without a "
                              "usable password",
                              id);
            goto out;
        }
        rc = viewer_url(dk, h, id, pw, &vurl);
        if (rc == RLMCP_OK) {
            cJSON_AddStringToObject(res, "viewer_url", vurl);
            cJSON_AddBoolToObject(res, "view_only", !dk->viewer_interactive);
        }
    }
    if (rc == RLMCP_OK && shot != NULL)
        rc = add_image(dk, h, id, shot);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_json(h, res);
out:
    free(vurl);
    cJSON_Delete(res);
    return rc;
}

static int computer(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    const struct dk *dk = ud;
    struct rlmcp_h h = {dk->api, call};
    struct dk_call c;
    cJSON *args = NULL, *view = NULL, *reply = NULL;
    char *started = NULL, *cmd = NULL;
    const char *id = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = parse_call(dk, &h, args, &c);
    if (rc != RLMCP_OK)
        goto out;
    cmd = action_command(dk, &c);
    if (cmd == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    /* Refused here, before a devbox is made, rather than by the API as a
     * server error. */
    if (strlen(cmd) > MAX_COMMAND) {
        rc = rlmcp_h_fail_remedy(
            &h, RLMCP_ERR_TOO_LARGE,
            "Split the text over several type calls (or open a shorter URL).",
            "argument 'text' or 'url' is too long: with them the action's "
            "command is %zu bytes, over the %d a devbox runs (desktop.sh "
            "takes %zu; each ' of text or url counts 4 bytes)",
            strlen(cmd), MAX_COMMAND, dk_script_sh_len);
        goto out;
    }
    id = c.devbox_id;
    if (id == NULL) {
        rc = start_devbox(dk, &h, &started);
        if (rc != RLMCP_OK)
            goto out;
        id = started;
    }
    rc = rlmcp_h_exec_wait(&h, id, cmd,
                           rlmcp_h_now_ms() + rlmcp_h_time_left_ms(&h, 2000),
                           &exec_how, &view);
    if (rc == RLMCP_OK)
        rc = read_reply(dk, &h, id, view, &reply);
    if (rc == RLMCP_OK)
        rc = finish(dk, &h, &c, id, started != NULL, reply);
    /* A new devbox whose first action failed is not left running. */
    if (rc != RLMCP_OK && started != NULL)
        rlmcp_h_devbox_discard(&h, started);
out:
    free(started);
    free(cmd);
    cJSON_Delete(args);
    cJSON_Delete(view);
    cJSON_Delete(reply);
    return rlmcp_h_ret(rc);
}

/* ---- configuration and registration -------------------------------------- */

static const struct rlmcp_h_tool specs[] = {
    {"computer", "Use a computer (virtual display)",
     "See and drive a virtual display in a devbox with mouse and keyboard, "
     "one action per call: screenshot, left_click, double_click, "
     "triple_click, right_click, middle_click, mouse_move, left_click_drag, "
     "left_mouse_down, left_mouse_up, type, key, hold_key, scroll, wait, "
     "cursor_position, and viewer (a URL where a person watches the display "
     "live). Coordinates are display pixels [x, y] from the top left. The "
     "first call (no devbox_id) starts a desktop devbox and returns its "
     "devbox_id; pass it to later calls. url opens a page in Chromium on "
     "the display. Screenshots come back as PNG images. The devbox is a "
     "normal devbox: execute_command and the file tools work on it, and "
     "shutdown_devbox ends it.",
     schema_computer, schema_computer_out,
     "{\"readOnlyHint\":false,\"destructiveHint\":false,"
     "\"idempotentHint\":false,\"openWorldHint\":true}",
     computer, true},
};

static const char *const waiting[] = {"computer", NULL};

static void dk_shutdown(rlmcp_plugin *self, void *state)
{
    struct dk *dk = state;

    (void)self;
    if (dk == NULL)
        return;
    free(dk->blueprint_name);
    free(dk);
}

/* The host has checked the section against schemas/config.json; this fills
 * the defaults. */
static int dk_setup(void *state, rlmcp_plugin *self,
                    const struct rlmcp_host_api *api, const cJSON *cfg)
{
    static const struct rlmcp_h_cfg_default keys[] = {
        {"display_width", 1024, offsetof(struct dk, width)},
        {"display_height", 768, offsetof(struct dk, height)},
        {"create_wait_seconds", 180, offsetof(struct dk, create_wait_s)},
        {"keep_alive_seconds", 3600, offsetof(struct dk, keep_alive_s)},
        {"max_screenshot_bytes", 8 << 20,
         offsetof(struct dk, max_screenshot_bytes)},
        {"viewer_port", 6080, offsetof(struct dk, viewer_port)},
    };
    struct dk *dk = state;
    const cJSON *bp = cJSON_GetObjectItemCaseSensitive(cfg, "blueprint_name");
    uint64_t long_ms;

    dk->api = api;
    rlmcp_h_cfg_defaults(cfg, keys, sizeof(keys) / sizeof(keys[0]), dk);
    (void)rlmcp_h_cfg_bool(cfg, "viewer_interactive", false,
                           &dk->viewer_interactive);
    if (dk->viewer_port == 5900) {
        api->set_error(self, "config viewer_port must not be 5900 (the "
                             "display's VNC server listens there)");
        return RLMCP_EINVAL;
    }
    dk->blueprint_name =
        strdup(cJSON_IsString(bp) ? bp->valuestring : DEFAULT_BLUEPRINT);
    if (dk->blueprint_name == NULL)
        return RLMCP_ENOMEM;
    /* A first call creates the devbox and starts the display and maybe
     * Chromium; a wait or hold_key lasts up to a minute. */
    long_ms = (uint64_t)dk->create_wait_s * 1000u + 300000u;
    return rlmcp_h_register_tools_waiting(self, api, specs,
                                          sizeof(specs) / sizeof(specs[0]), dk,
                                          (uint32_t)long_ms, waiting);
}

RLMCP_H_PLUGIN_DEFINE("desktop", "0.1.0",
                      "computer: a virtual display in a devbox, driven by "
                      "mouse and keyboard",
                      struct dk, dk_setup, dk_shutdown, schema_config)
