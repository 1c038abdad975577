/*
 * args.c - run_browser's arguments: which action needs what, checked
 * before anything reaches a devbox, and the driver request built from them.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "browser_internal.h"

const char *const br_action_names[BR_N_ACTIONS] = {
    [BR_NAVIGATE] = "navigate",
    [BR_CLICK] = "click",
    [BR_TYPE] = "type",
    [BR_FILL] = "fill",
    [BR_SCREENSHOT] = "screenshot",
    [BR_GET_TEXT] = "get_text",
    [BR_GET_ATTRIBUTE] = "get_attribute",
    [BR_WAIT_FOR_SELECTOR] = "wait_for_selector",
    [BR_WAIT_FOR_NAVIGATION] = "wait_for_navigation",
    [BR_PRESS] = "press",
    [BR_HOVER] = "hover",
    [BR_SCROLL] = "scroll",
    [BR_CHECK] = "check",
    [BR_UNCHECK] = "uncheck",
    [BR_SELECT_OPTION] = "select_option",
    [BR_CLOSE] = "close",
};

/* What an action needs. */
enum need { OPTIONAL, REQUIRED, UNUSED };

static const struct {
    enum need selector;
    enum need value;
    /* The Python runloop-mcp passes the selector as `value` for actions that
     * take only a selector: accepted when `selector` is absent. */
    bool value_is_selector;
    const char *value_means;
} needs[BR_N_ACTIONS] = {
    [BR_NAVIGATE] = {UNUSED, REQUIRED, false, "the URL"},
    [BR_CLICK] = {REQUIRED, UNUSED, true, NULL},
    [BR_TYPE] = {REQUIRED, REQUIRED, false, "the text to type"},
    [BR_FILL] = {REQUIRED, REQUIRED, false, "the text to fill in"},
    [BR_SCREENSHOT] = {OPTIONAL, OPTIONAL, false, "the path to save it at"},
    [BR_GET_TEXT] = {OPTIONAL, UNUSED, true, NULL},
    [BR_GET_ATTRIBUTE] = {REQUIRED, REQUIRED, false, "the attribute name"},
    [BR_WAIT_FOR_SELECTOR] = {REQUIRED, OPTIONAL, false, "the state"},
    [BR_WAIT_FOR_NAVIGATION] = {UNUSED, OPTIONAL, false, "a URL pattern"},
    [BR_PRESS] = {OPTIONAL, REQUIRED, false, "the key, e.g. Enter"},
    [BR_HOVER] = {REQUIRED, UNUSED, true, NULL},
    [BR_SCROLL] = {OPTIONAL, OPTIONAL, false, "pixels, top or bottom"},
    [BR_CHECK] = {REQUIRED, UNUSED, true, NULL},
    [BR_UNCHECK] = {REQUIRED, UNUSED, true, NULL},
    [BR_SELECT_OPTION] = {REQUIRED, REQUIRED, false,
                          "the option value or label"},
    [BR_CLOSE] = {UNUSED, UNUSED, false, NULL},
};

/* Longest selector and value: a request stays far below the API's body
 * limit (data: URLs are the long values). */
#define MAX_SELECTOR 4096
#define MAX_VALUE (512 * 1024)

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static bool has_suffix(const char *s, const char *x)
{
    size_t n = strlen(s);
    size_t m = strlen(x);

    return n >= m && strcmp(s + n - m, x) == 0;
}

static int parse_action(const struct rlmcp_h *h, const char *name,
                        enum br_action *out)
{
    int i;

    for (i = 0; i < BR_N_ACTIONS; i++) {
        if (strcmp(name, br_action_names[i]) == 0) {
            *out = (enum br_action)i;
            return RLMCP_OK;
        }
    }
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "unknown action '%.64s': use one of navigate, click, "
                        "type, fill, screenshot, get_text, get_attribute, "
                        "wait_for_selector, wait_for_navigation, press, "
                        "hover, scroll, check, uncheck, select_option, close",
                        name);
}

/* URLs a page may be opened at: the web, files of the devbox, inline. */
static int check_url(const struct rlmcp_h *h, const char *url)
{
    static const char *const schemes[] = {"http://", "https://", "file:///",
                                          "data:", "about:blank"};
    size_t i;

    for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        if (strncasecmp(url, schemes[i], strlen(schemes[i])) == 0)
            return RLMCP_OK;
    }
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "value: navigate needs an http://, https://, "
                        "file:/// or data: URL (or about:blank), got "
                        "'%.100s'",
                        url);
}

/*
 * A screenshot is saved inside the session's devbox, never elsewhere: an
 * absolute path, no '..' step, nothing under /proc, /sys or /dev, and a
 * .png, .jpg or .jpeg name.
 */
static int check_shot_path(const struct rlmcp_h *h, const char *p)
{
    const char *ext = strrchr(p, '.');
    const char *why = NULL;
    const char *s;

    if (p[0] != '/')
        why = "it must be an absolute path inside the devbox, e.g. "
              "/home/user/page.png (host paths and URLs are not "
              "reachable)";
    else if (strlen(p) > 1024)
        why = "it is longer than 1024 bytes";
    else if (strstr(p, "/../") != NULL || has_suffix(p, "/.."))
        why = "'..' steps are not allowed";
    else if (has_prefix(p, "/proc/") || has_prefix(p, "/sys/") ||
             has_prefix(p, "/dev/") || strcmp(p, "/proc") == 0 ||
             strcmp(p, "/sys") == 0 || strcmp(p, "/dev") == 0)
        why = "/proc, /sys and /dev are not places for files";
    else if (ext == NULL || strchr(ext, '/') != NULL ||
             (strcasecmp(ext, ".png") != 0 && strcasecmp(ext, ".jpg") != 0 &&
              strcasecmp(ext, ".jpeg") != 0))
        why = "the name must end in .png, .jpg or .jpeg";
    for (s = p; why == NULL && *s != '\0'; s++) {
        if ((unsigned char)*s < 0x20)
            why = "it contains a control character";
    }
    if (why == NULL)
        return RLMCP_OK;
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "value: cannot save the screenshot at '%.200s': %s", p,
                        why);
}

static int check_scroll(const struct rlmcp_h *h, const char *v)
{
    char *end = NULL;
    long n;

    if (strcmp(v, "top") == 0 || strcmp(v, "bottom") == 0)
        return RLMCP_OK;
    n = strtol(v, &end, 10);
    if (v[0] != '\0' && *end == '\0' && n >= -1000000 && n <= 1000000)
        return RLMCP_OK;
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "value: scroll takes a number of pixels (negative "
                        "scrolls up), 'top' or 'bottom', got '%.64s'",
                        v);
}

static int check_state(const struct rlmcp_h *h, const char *v)
{
    if (strcmp(v, "visible") == 0 || strcmp(v, "hidden") == 0 ||
        strcmp(v, "attached") == 0 || strcmp(v, "detached") == 0)
        return RLMCP_OK;
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "value: wait_for_selector waits for the state "
                        "visible (default), hidden, attached or detached, "
                        "got '%.64s'",
                        v);
}

/* The selector and value an action needs are there (and nothing else). */
static int check_needs(const struct rlmcp_h *h, struct br_call *c)
{
    const char *name = br_action_names[c->action];

    if (c->selector == NULL && needs[c->action].value_is_selector) {
        c->selector = c->value;
        c->value = NULL;
    }
    if (needs[c->action].selector == REQUIRED && c->selector == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "missing selector: action %s needs the element "
                            "to act on, e.g. selector=\"#submit\"",
                            name);
    if (needs[c->action].selector == UNUSED && c->selector != NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "action %s takes no selector", name);
    if (needs[c->action].value == REQUIRED && c->value == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "missing value: action %s needs %s", name,
                            needs[c->action].value_means);
    if (needs[c->action].value == UNUSED && c->value != NULL)
        return rlmcp_h_fail(
            h, RLMCP_ERR_INVALID_ARGUMENT, "action %s takes no value%s", name,
            c->selector != NULL ? " (the element is selector)" : "");
    if (c->selector != NULL &&
        (c->selector[0] == '\0' || strlen(c->selector) > MAX_SELECTOR))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "selector must be 1-%d bytes, e.g. \"#submit\" or "
                            "\"text=Sign in\"",
                            MAX_SELECTOR);
    if (c->value != NULL && strlen(c->value) > MAX_VALUE)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "value is longer than %d bytes", MAX_VALUE);
    return RLMCP_OK;
}

static int check_value(const struct br *br, const struct rlmcp_h *h,
                       struct br_call *c)
{
    int rc = RLMCP_OK;

    switch (c->action) {
    case BR_NAVIGATE:
        rc = check_url(h, c->value);
        break;
    case BR_GET_TEXT:
        if (c->selector == NULL)
            c->selector = "body"; /* the whole page */
        break;
    case BR_SCREENSHOT:
        c->shot_path = c->value != NULL ? c->value : BR_DIR "/screenshot.png";
        if (c->value != NULL)
            rc = check_shot_path(h, c->value);
        break;
    case BR_SCROLL:
        if (c->value != NULL && c->selector != NULL)
            rc = rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                              "scroll takes a selector (scroll it into view) "
                              "or a value (pixels, top, bottom), not both");
        else if (c->value != NULL)
            rc = check_scroll(h, c->value);
        break;
    case BR_WAIT_FOR_SELECTOR:
        if (c->value != NULL)
            rc = check_state(h, c->value);
        break;
    case BR_GET_ATTRIBUTE:
    case BR_PRESS:
        if (c->value[0] == '\0')
            rc = rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                              "value must not be empty: action %s needs %s",
                              br_action_names[c->action],
                              needs[c->action].value_means);
        break;
    default:
        break;
    }
    (void)br;
    return rc;
}

int br_parse_call(const struct br *br, const struct rlmcp_h *h,
                  const cJSON *args, struct br_call *c)
{
    const char *action = NULL;
    bool full_page = false;
    int rc;

    memset(c, 0, sizeof(*c));
    c->timeout_ms = br->action_timeout_ms;
    rc = rlmcp_h_arg_str(h, args, "action", true, &action);
    if (rc == RLMCP_OK)
        rc = parse_action(h, action, &c->action);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, args, "session_id", false, &c->session_id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "selector", false, &c->selector);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "value", false, &c->value);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(h, args, "timeout_ms", false, 100,
                             br->max_timeout_ms, &c->timeout_ms);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(h, args, "full_page", &full_page);
    if (rc != RLMCP_OK)
        return rc;
    c->full_page = full_page;
    if (full_page && c->action != BR_SCREENSHOT)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "full_page is for action screenshot only");
    if (c->action == BR_CLOSE && c->session_id == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "missing session_id: close ends the session "
                            "named by session_id");
    rc = check_needs(h, c);
    if (rc == RLMCP_OK)
        rc = check_value(br, h, c);
    return rc;
}

char *br_driver_request(const struct br *br, const struct br_call *c)
{
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;

    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "action", br_action_names[c->action]);
    if (c->selector != NULL)
        cJSON_AddStringToObject(o, "selector", c->selector);
    if (c->value != NULL)
        cJSON_AddStringToObject(o, "value", c->value);
    if (c->shot_path != NULL)
        cJSON_AddStringToObject(o, "path", c->shot_path);
    if (c->full_page)
        cJSON_AddTrueToObject(o, "full_page");
    cJSON_AddNumberToObject(o, "timeout_ms", (double)c->timeout_ms);
    cJSON_AddNumberToObject(o, "max_text_bytes", (double)br->max_text_bytes);
    /* Unformatted: one line, so it can travel in a shell here-document. */
    text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}
