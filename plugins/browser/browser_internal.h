/*
 * browser_internal.h - shared state of the browser plugin's source files.
 */
#ifndef RLMCP_BROWSER_INTERNAL_H
#define RLMCP_BROWSER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"

/* Where the driver lives inside a session's devbox. */
#define BR_DIR "/tmp/rlmcp-browser"
#define BR_MANAGED_BY "runloop-mcp.browser"

/* The plugin's configuration (docs/tools.md "run_browser"). */
struct br {
    const struct rlmcp_host_api *api;
    char *blueprint_name; /* the browser image or blueprint */
    char *executable;     /* Chromium inside the devbox; NULL: search */
    long long action_timeout_ms;
    long long max_timeout_ms;
    long long create_wait_s;
    long long keep_alive_s;
    long long idle_s; /* a session without an action for this long ends */
    long long max_text_bytes;
    long long max_screenshot_bytes;
    long long width, height;
};

enum br_action {
    BR_NAVIGATE,
    BR_CLICK,
    BR_TYPE,
    BR_FILL,
    BR_SCREENSHOT,
    BR_GET_TEXT,
    BR_GET_ATTRIBUTE,
    BR_WAIT_FOR_SELECTOR,
    BR_WAIT_FOR_NAVIGATION,
    BR_PRESS,
    BR_HOVER,
    BR_SCROLL,
    BR_CHECK,
    BR_UNCHECK,
    BR_SELECT_OPTION,
    BR_CLOSE,
    BR_N_ACTIONS
};

/* One validated call. Strings are borrowed from the parsed arguments. */
struct br_call {
    enum br_action action;
    const char *session_id; /* NULL: start a session */
    const char *selector;
    const char *value;
    const char *shot_path; /* screenshot: where it is saved in the devbox */
    long long timeout_ms;
    bool full_page;
};

extern const char *const br_action_names[BR_N_ACTIONS];

/* The driver's source (driver.cjs), embedded at build time. */
extern const unsigned char br_driver_js[];
extern const size_t br_driver_js_len;

/* args.c: check the arguments; 0 or RLMCP_H_REPORTED. */
int br_parse_call(const struct br *br, const struct rlmcp_h *h,
                  const cJSON *args, struct br_call *c);
/* The JSON request the driver gets for a call (malloc'd, one line). */
char *br_driver_request(const struct br *br, const struct br_call *c);

/* session.c */
/* Create a session's devbox and start its driver; *id_out (malloc'd). */
int br_session_start(const struct br *br, const struct rlmcp_h *h,
                     char **id_out);
/*
 * Send one request to the session's driver; *reply_out is its answer (a
 * new session's first action waits for the driver to come up). With gone
 * set, a running session whose browser is gone is not an error: *gone is
 * true and *reply_out NULL.
 */
int br_session_send(const struct br *br, const struct rlmcp_h *h,
                    const char *id, const struct br_call *c, bool new_session,
                    bool *gone, cJSON **reply_out);
/* End the session: shut its devbox down (a closed session is not kept,
 * suspended or running). */
int br_session_end(const struct rlmcp_h *h, const char *id);
/* Read a file of the devbox (the screenshot) within max bytes. */
int br_session_fetch(const struct br *br, const struct rlmcp_h *h,
                     const char *id, const char *path,
                     struct rlmcp_http_resp **resp_out);

#endif
