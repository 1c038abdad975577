/*
 * stop.c - a call's time limit, and stopping an execution whose call ended
 * by timeout or cancellation.
 *
 * A command gets all of its own timeout; killing it and reading its
 * status back come after (the host's deadline for a call with a timeout
 * argument allows for that). Only when the call's deadline is nearer than
 * the command's timeout plus a clean-up reserve (a deployment's shorter
 * tool limit, setup that took long) is the command stopped early, and the
 * answer says so. A kill that cannot be confirmed in time is reported as
 * such, naming the execution, never as done.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"

/* Answer this long before the host's own timeout answer would go. */
#define ANSWER_MARGIN_MS 100u
/* Clean-up after a client's cancel (no deadline to keep: nobody waits). */
#define CANCEL_CLEANUP_MS 5000u
/* Clean-up when the call has no deadline of its own nearby. */
#define DEFAULT_CLEANUP_MS 5000u

void exec_limits(const struct rlmcp_h *h, long long timeout_ms,
                 enum exec_reserve kind, struct exec_limits *out)
{
    uint64_t lo = kind == EXEC_RESERVE_KILL ? 1000 : 300;
    uint64_t hi = kind == EXEC_RESERVE_KILL ? 3000 : 1000;
    uint64_t now = rlmcp_h_now_ms();
    uint64_t own = now + (uint64_t)timeout_ms;
    uint64_t d = 0;
    uint64_t reserve = (uint64_t)timeout_ms / 10u;

    if (RLMCP_API_HAS(h->api, call_deadline_ms))
        d = h->api->call_deadline_ms(h->call);
    /* A kill and a status read are two round trips on a busy engine. */
    if (reserve < lo)
        reserve = lo;
    if (reserve > hi)
        reserve = hi;
    out->answer_by = d > ANSWER_MARGIN_MS ? d - ANSWER_MARGIN_MS : 0;
    out->work_until = own;
    out->cut = false;
    if (out->answer_by != 0 && out->answer_by < own + reserve) {
        out->work_until =
            out->answer_by > now + reserve ? out->answer_by - reserve : now;
        out->cut = true;
    }
}

void exec_fmt_ms(long long ms, char *buf, size_t n)
{
    if (ms % 1000 == 0)
        snprintf(buf, n, "%lld s", ms / 1000);
    else
        snprintf(buf, n, "%lld ms", ms);
}

uint64_t exec_cleanup_until(const struct exec_limits *l, bool cancelled)
{
    uint64_t now = rlmcp_h_now_ms();
    uint64_t until = now + (cancelled ? CANCEL_CLEANUP_MS : DEFAULT_CLEANUP_MS);

    if (!cancelled && l->answer_by != 0 && l->answer_by < until)
        until = l->answer_by > now ? l->answer_by : now;
    return until;
}

/* One clean-up request bounded by until; *status and the view's status;
 * a completed view goes to *view_out when asked for. */
static int cleanup_req(const struct rlmcp_h *h, const char *method,
                       const char *path, const char *body, uint64_t until,
                       long *status, char *st, size_t stlen, cJSON **view_out)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;
    uint64_t now = rlmcp_h_now_ms();
    cJSON *v = NULL;
    const cJSON *s = NULL;
    int rc = RLMCP_OK;

    st[0] = '\0';
    *status = 0;
    if (now + 10 >= until)
        return RLMCP_ETIMEDOUT;
    /* No retries: our loop retries, inside the budget. */
    exec_cleanup_req(&req, method, path, body, (uint32_t)(until - now), 0);
    rc = h->api->runloop_request(h->call, &req, &resp);
    if (rc != RLMCP_OK)
        return rc;
    *status = resp->status;
    v = cJSON_ParseWithLength(resp->body, resp->body_len);
    s = cJSON_GetObjectItemCaseSensitive(v, "status");
    if (cJSON_IsString(s))
        snprintf(st, stlen, "%s", s->valuestring);
    if (view_out != NULL && resp->status >= 200 && resp->status <= 299 &&
        strcmp(st, "completed") == 0) {
        cJSON_Delete(*view_out);
        *view_out = v;
        v = NULL;
    }
    cJSON_Delete(v);
    h->api->http_resp_free(resp);
    return RLMCP_OK;
}

static void note_failure(char *why, size_t n, const char *what, int rc,
                         long status, const char *st)
{
    if (rc != RLMCP_OK)
        snprintf(why, n, "%s: %s", what,
                 rc == RLMCP_ETIMEDOUT ? "no answer in time"
                                       : "backend unreachable");
    else if (status < 200 || status > 299)
        snprintf(why, n, "%s: HTTP %ld", what, status);
    else
        snprintf(why, n, "%s: status still %s", what, st[0] ? st : "unknown");
}

bool exec_stop(const struct rlmcp_h *h, const char *devbox_id, const char *eid,
               uint64_t until, char *why, size_t whylen, cJSON **view_out)
{
    char *kill_path =
        rlmcp_h_sprintf("/v1/devboxes/%s/executions/%s/kill", devbox_id, eid);
    char *get_path =
        rlmcp_h_sprintf("/v1/devboxes/%s/executions/%s", devbox_id, eid);
    rlmcp_plugin *self = h->api->call_plugin(h->call);
    char st[32];
    bool done = false;
    unsigned tries = 0;

    snprintf(why, whylen, "no time left to send the kill");
    if (kill_path == NULL || get_path == NULL) {
        snprintf(why, whylen, "out of memory");
        goto out;
    }
    while (!done && rlmcp_h_now_ms() + 10 < until) {
        long status = 0;
        uint64_t pause = 50u << (tries < 3 ? tries : 3);
        uint64_t now = 0;
        int rc = 0;

        tries++;
        rc = cleanup_req(h, "POST", kill_path, "{\"kill_process_group\":true}",
                         until, &status, st, sizeof(st), view_out);
        if (rc == RLMCP_OK && status >= 200 && status <= 299 &&
            strcmp(st, "completed") == 0) {
            done = true;
            break;
        }
        note_failure(why, whylen, "kill", rc, status, st);
        /* Read the status back: the kill may have worked all the same. */
        rc = cleanup_req(h, "GET", get_path, NULL, until, &status, st,
                         sizeof(st), view_out);
        if (rc == RLMCP_OK && status >= 200 && status <= 299 &&
            strcmp(st, "completed") == 0) {
            done = true;
            break;
        }
        if (rc != RLMCP_OK || status < 200 || status > 299 ||
            strcmp(st, "completed") != 0)
            note_failure(why, whylen, "status read back", rc, status, st);
        now = rlmcp_h_now_ms();
        if (now + pause + 10 >= until)
            break;
        rlmcp_h_nap_ms(pause); /* no cancel cuts it short */
    }
    if (!done)
        h->api->log(self, RLMCP_LOG_WARNING,
                    "could not confirm that execution %s on devbox %s "
                    "stopped after %u attempt%s (%s)",
                    eid, devbox_id, tries, tries == 1 ? "" : "s", why);
out:
    free(kill_path);
    free(get_path);
    return done;
}
