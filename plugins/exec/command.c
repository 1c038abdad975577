/*
 * command.c - running one command to completion on a devbox.
 *
 * 1. POST /execute with an optimistic in-request wait: short commands
 *    finish in one round trip.
 * 2. Otherwise stream stdout over SSE (each chunk is a progress
 *    notification, the stream ending means the output is complete), then
 *    long-poll executions/{eid}/wait_for_status for the exit status.
 * 3. On the deadline or cancellation the remote execution is killed with
 *    an IGNORE_CANCEL request, so it is sent even for a cancelled call.
 * Output is kept head + tail per stream in constant memory; when the API
 * says its copy was cut, the full text is re-read from the SSE stream.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "exec_internal.h"

/* ---- helpers ----------------------------------------------------------- */

void exec_cleanup_req(struct rlmcp_http_req *req, const char *method,
                      const char *path, const char *body, uint32_t timeout_ms,
                      int32_t max_retries)
{
    req->method = method;
    req->path = path;
    req->body = body;
    req->body_len = body != NULL ? strlen(body) : 0;
    req->flags = RLMCP_HTTP_IGNORE_CANCEL;
    req->timeout_ms = timeout_ms;
    req->max_retries = max_retries;
}

void exec_cleanup_request(const struct rlmcp_h *h, const char *method,
                          const char *path, const char *body)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *resp = NULL;
    rlmcp_plugin *self = h->api->call_plugin(h->call);
    int rc;

    exec_cleanup_req(&req, method, path, body, 15000, 1);
    rc = h->api->runloop_request(h->call, &req, &resp);
    if (rc != RLMCP_OK)
        h->api->log(self, RLMCP_LOG_WARNING, "clean-up %s %s failed: %s",
                    method, path, h->api->strerror(rc));
    else if (resp->status < 200 || resp->status > 299)
        h->api->log(self, RLMCP_LOG_WARNING, "clean-up %s %s: HTTP %ld", method,
                    path, resp->status);
    h->api->http_resp_free(resp);
}

int exec_fail_on_devbox(const struct rlmcp_h *h, const char *devbox_id,
                        long status, const char *msg, const char *what)
{
    return rlmcp_h_fail_on_devbox(h, devbox_id, status, msg, what);
}

/* POST with a JSON body; a non-2xx answer goes to exec_fail_on_devbox. */
static int devbox_post(const struct rlmcp_h *h, const char *devbox_id,
                       const char *path, const cJSON *body,
                       const struct rlmcp_h_req_opts *o, const char *what,
                       cJSON **out)
{
    long status = 0;
    char *msg = NULL;
    int rc;

    rc = rlmcp_h_request_status(h, "POST", path, body, o, what, &status, out,
                                &msg);
    if (rc != RLMCP_OK)
        goto out;
    if (status < 200 || status > 299) {
        cJSON_Delete(*out);
        *out = NULL;
        rc = exec_fail_on_devbox(h, devbox_id, status, msg, what);
    }
out:
    free(msg);
    return rc;
}

int exec_write_file(const struct rlmcp_h *h, const char *devbox_id,
                    const char *path, const char *contents)
{
    char *url =
        rlmcp_h_sprintf("/v1/devboxes/%s/write_file_contents", devbox_id);
    char *what = rlmcp_h_sprintf("writing %s on devbox %s", path, devbox_id);
    cJSON *body = cJSON_CreateObject();
    cJSON *got = NULL;
    int rc = RLMCP_ENOMEM;

    if (url == NULL || what == NULL || body == NULL)
        goto out;
    cJSON_AddStringToObject(body, "file_path", path);
    cJSON_AddStringToObject(body, "contents", contents);
    rc = devbox_post(h, devbox_id, url, body, NULL, what, &got);
out:
    free(url);
    free(what);
    cJSON_Delete(body);
    cJSON_Delete(got);
    return rc;
}

static bool env_name_ok(const char *s)
{
    size_t i;

    if (s == NULL || s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (i = 0; s[i] != '\0'; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

int exec_prefix(const struct rlmcp_h *h, const char *command,
                const char *working_dir, const cJSON *env, char **out)
{
    char *acc = NULL, *q = NULL, *next = NULL;
    const cJSON *it = NULL;

    *out = NULL;
    if (working_dir == NULL && env == NULL) {
        *out = strdup(command);
        return *out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
    }
    acc = strdup("");
    if (acc == NULL)
        return RLMCP_ENOMEM;
    if (working_dir != NULL) {
        q = rlmcp_h_shell_quote(working_dir);
        next = q != NULL ? rlmcp_h_sprintf("cd -- %s && ", q) : NULL;
        free(q);
        free(acc);
        acc = next;
        if (acc == NULL)
            return RLMCP_ENOMEM;
    }
    cJSON_ArrayForEach(it, env)
    {
        if (!env_name_ok(it->string)) {
            free(acc);
            return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                                "env: '%s' is not a valid variable name "
                                "(letters, digits, '_', not starting with a "
                                "digit)",
                                it->string);
        }
        q = rlmcp_h_shell_quote(it->valuestring);
        next = q != NULL
                   ? rlmcp_h_sprintf("%sexport %s=%s && ", acc, it->string, q)
                   : NULL;
        free(q);
        free(acc);
        acc = next;
        if (acc == NULL)
            return RLMCP_ENOMEM;
    }
    /* Braces keep the command's own operators together. */
    *out = rlmcp_h_sprintf("%s{ %s\n}", acc, command);
    free(acc);
    return *out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
}

int exec_build_command(const struct rlmcp_h *h, const cJSON *args,
                       const char *command, const char *shell, char **out)
{
    const char *wd = NULL;
    const char *user = NULL;
    const cJSON *env = NULL;
    char *cmd = NULL;
    char *q = NULL;
    int rc;

    *out = NULL;
    rc = rlmcp_h_arg_str(h, args, "working_dir", false, &wd);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str_map(h, args, "env", &env);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(h, args, "user", false, &user);
    if (rc == RLMCP_OK)
        rc = exec_prefix(h, command, wd, env, &cmd);
    if (rc != RLMCP_OK || user == NULL || strcmp(user, "root") != 0) {
        *out = cmd;
        return rc;
    }
    /* root: the default user's passwordless sudo, as on Runloop; where a
     * devbox gives no root (an image without sudo) sudo's absence says why. */
    if (shell != NULL) {
        free(cmd);
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "user 'root' runs the command through sudo in a "
                            "fresh shell; drop shell_name (a named shell "
                            "keeps the devbox's user), or run 'sudo ...' in "
                            "it");
    }
    q = rlmcp_h_shell_quote(cmd);
    *out = q != NULL ? rlmcp_h_sprintf("sudo -n -H -- bash -c %s", q) : NULL;
    free(q);
    free(cmd);
    return *out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
}

/* A UUIDv7: 48-bit ms timestamp, version, random bits, variant. The
 * random bits come from the kernel or the call fails: a guessable or
 * repeated command id would replay another command's answer. */
static int uuid7(char out[37])
{
    unsigned char b[16];
    struct timespec ts;
    uint64_t ms;
    ssize_t n = -1;
    size_t i;

    do {
        n = getrandom(b, sizeof(b), 0);
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(b))
        return -1;
    clock_gettime(CLOCK_REALTIME, &ts);
    ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    for (i = 0; i < 6; i++)
        b[i] = (unsigned char)(ms >> (40 - 8 * i));
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x70);
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
    snprintf(out, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
             b[11], b[12], b[13], b[14], b[15]);
    return 0;
}

/* ---- output ------------------------------------------------------------ */

struct sse_acc {
    const struct rlmcp_h *h;
    struct rlmcp_h_capture *cap;
    bool progress;     /* forward chunks as progress */
    uint64_t received; /* bytes of output taken */
    uint64_t limit;    /* stop after this many bytes (0: none) */
    bool error;        /* an `error` event arrived */
    bool stopped;      /* we stopped at limit */
};

static int on_chunk(void *user, const char *event, const char *id,
                    const char *data, size_t data_len)
{
    struct sse_acc *a = user;
    cJSON *doc = NULL;
    const cJSON *o = NULL;
    const cJSON *off = NULL;
    const char *text;
    size_t len, skip = 0;

    if (event != NULL && strcmp(event, "error") == 0) {
        a->error = true;
        return 1;
    }
    doc = cJSON_ParseWithLength(data, data_len);
    o = cJSON_GetObjectItemCaseSensitive(doc, "output");
    if (!cJSON_IsString(o)) {
        cJSON_Delete(doc);
        return 0;
    }
    text = o->valuestring;
    len = strlen(text);
    /* A replayed chunk after a reconnect: drop what we already have. */
    off = cJSON_GetObjectItemCaseSensitive(doc, "offset");
    if (cJSON_IsNumber(off) && off->valuedouble >= 0 &&
        (uint64_t)off->valuedouble < a->received) {
        uint64_t have = a->received - (uint64_t)off->valuedouble;
        skip = have >= len ? len : (size_t)have;
    }
    text += skip;
    len -= skip;
    if (a->limit > 0 && a->received + len > a->limit) {
        len = (size_t)(a->limit - a->received);
        a->stopped = true;
    }
    if (len > 0) {
        rlmcp_h_capture_add(a->cap, text, len);
        a->received += len;
        if (a->progress) {
            char *msg = strndup(text, len);
            if (msg != NULL)
                a->h->api->progress(a->h->call, (double)a->received, -1, msg);
            free(msg);
        }
    }
    cJSON_Delete(doc);
    return a->stopped ? 1 : 0;
}

/*
 * Read an output stream from `offset` into cap. *complete is true when the
 * stream ended normally (the whole output arrived). Returns RLMCP_OK,
 * RLMCP_ECANCELLED or RLMCP_ETIMEDOUT; other failures leave
 * *complete false.
 */
static int read_stream_status(const struct rlmcp_h *h, const char *devbox_id,
                              const char *eid, const char *which,
                              uint64_t offset, uint64_t limit,
                              uint32_t timeout_ms, bool progress,
                              struct rlmcp_h_capture *cap, bool *complete,
                              uint64_t *received, long *status_out)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct sse_acc acc = {h, cap, progress, offset, 0, false, false};
    char *path = NULL;
    long status = 0;
    int rc;

    *complete = false;
    if (limit > 0)
        acc.limit = offset + limit;
    path = rlmcp_h_sprintf("/v1/devboxes/%s/executions/%s/stream_%s_updates"
                           "?offset=%llu",
                           devbox_id, eid, which, (unsigned long long)offset);
    if (path == NULL)
        return RLMCP_ENOMEM;
    req.method = "GET";
    req.path = path;
    req.accept = "text/event-stream";
    req.timeout_ms = timeout_ms;
    req.max_retries = 0;
    rc = h->api->runloop_sse(h->call, &req, on_chunk, &acc, &status);
    free(path);
    if (received != NULL)
        *received = acc.received;
    if (status_out != NULL)
        *status_out = status;
    if (rc == RLMCP_OK && status >= 200 && status <= 299 && !acc.error &&
        !acc.stopped)
        *complete = true;
    if (rc == RLMCP_ECANCELLED || rc == RLMCP_ETIMEDOUT)
        return rc;
    return RLMCP_OK;
}

static int read_stream(const struct rlmcp_h *h, const char *devbox_id,
                       const char *eid, const char *which, uint64_t offset,
                       uint64_t limit, uint32_t timeout_ms, bool progress,
                       struct rlmcp_h_capture *cap, bool *complete,
                       uint64_t *received)
{
    return read_stream_status(h, devbox_id, eid, which, offset, limit,
                              timeout_ms, progress, cap, complete, received,
                              NULL);
}

/*
 * Follow a running execution's stdout until it is complete, forwarding
 * chunks as progress. A stream the server ends with 408 (idle) is
 * reopened at the byte offset reached, as the Runloop SDK does.
 */
static int follow_stdout(const struct rlmcp_h *h, const char *devbox_id,
                         const char *eid, uint64_t deadline,
                         struct rlmcp_h_capture *cap, bool *complete)
{
    uint64_t received = 0;
    int reconnects;
    int rc = RLMCP_OK;

    *complete = false;
    for (reconnects = 0; reconnects < 1000; reconnects++) {
        uint64_t now = rlmcp_h_now_ms();
        long status = 0;

        if (now >= deadline)
            return RLMCP_ETIMEDOUT;
        rc = read_stream_status(h, devbox_id, eid, "stdout", received, 0,
                                (uint32_t)(deadline - now), true, cap, complete,
                                &received, &status);
        if (rc != RLMCP_OK || *complete || status != 408)
            break;
    }
    return rc;
}

int exec_read_stream(const struct rlmcp_h *h, const char *devbox_id,
                     const char *eid, const char *which, uint64_t offset,
                     uint64_t limit, uint32_t timeout_ms,
                     struct rlmcp_h_capture *cap, bool *complete,
                     uint64_t *received)
{
    return read_stream(h, devbox_id, eid, which, offset, limit, timeout_ms,
                       false, cap, complete, received);
}

/* ---- the run ------------------------------------------------------------ */

static uint32_t remaining_ms(uint64_t deadline)
{
    uint64_t now = rlmcp_h_now_ms();

    return now >= deadline ? 0 : (uint32_t)(deadline - now);
}

static bool view_completed(const cJSON *v)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(v, "status");

    return cJSON_IsString(st) && strcmp(st->valuestring, "completed") == 0;
}

/*
 * Long-poll until completed or the deadline. *view_io is replaced by the
 * newest view. Returns RLMCP_OK (check view_completed), RLMCP_ETIMEDOUT at
 * the deadline, RLMCP_H_REPORTED or a negative code.
 */
int exec_wait_done(struct ex *ex, const struct rlmcp_h *h,
                   const char *devbox_id, const char *eid, uint64_t deadline,
                   cJSON **view_io)
{
    char *path = NULL;
    char *what = NULL;
    cJSON *body = cJSON_CreateObject();
    int lost = 0;
    int rc = RLMCP_ENOMEM;

    path = rlmcp_h_sprintf("/v1/devboxes/%s/executions/%s/wait_for_status"
                           "?last_n=%lld",
                           devbox_id, eid, ex->last_n);
    what = rlmcp_h_sprintf("execution %s on devbox %s", eid, devbox_id);
    if (path == NULL || what == NULL || body == NULL)
        goto out;
    cJSON_AddItemToObject(
        body, "statuses",
        cJSON_CreateStringArray((const char *[]){"completed"}, 1));
    while (!view_completed(*view_io)) {
        struct rlmcp_h_req_opts o = {0};
        uint32_t left = remaining_ms(deadline);
        uint32_t hold_s = left / 1000 > 25 ? 25 : left / 1000;
        long status = 0;
        cJSON *got = NULL;

        if (left == 0) {
            rc = RLMCP_ETIMEDOUT;
            goto out;
        }
        /* The server answers when its hold ends: keep that inside the
         * time left so the answer is not cut off. */
        if (left > 1500 && hold_s > (left - 500) / 1000)
            hold_s = (left - 500) / 1000;
        if (hold_s < 1)
            hold_s = 1;
        cJSON_DeleteItemFromObject(body, "timeout_seconds");
        cJSON_AddNumberToObject(body, "timeout_seconds", hold_s);
        o.max_retries = 0;
        o.transport_unreported = true;
        o.timeout_ms =
            left < hold_s * 1000 + 10000 ? left : hold_s * 1000 + 10000;
        rc = rlmcp_h_request_status(h, "POST", path, body, &o, what, &status,
                                    &got, NULL);
        if (rc == RLMCP_EHTTP && lost < 3 && remaining_ms(deadline) > 200) {
            /* A wait is safe to repeat: a lost answer (connection reset)
             * must not read as "unavailable" while time is left. */
            lost++;
            cJSON_Delete(got);
            if (h->api->sleep_ms(h->call, 100) != RLMCP_OK) {
                rc = RLMCP_ECANCELLED;
                goto out;
            }
            continue;
        }
        if (rc == RLMCP_EHTTP)
            rc = rlmcp_h_fail_rc(h, rc, what);
        if (rc != RLMCP_OK) {
            cJSON_Delete(got);
            goto out;
        }
        if (status >= 200 && status <= 299 && cJSON_IsObject(got)) {
            cJSON_Delete(*view_io);
            *view_io = got;
            continue;
        }
        cJSON_Delete(got);
        if (status == 408)
            continue;
        rc = exec_fail_on_devbox(h, devbox_id, status, NULL, what);
        goto out;
    }
    rc = RLMCP_OK;
out:
    free(path);
    free(what);
    cJSON_Delete(body);
    return rc;
}

/* A stream's text in a result: {which}, {which}_truncated and
 * {which}_bytes_dropped. */
static void put_stream(cJSON *r, const char *which, const char *text,
                       bool truncated, uint64_t dropped)
{
    char key[32];

    cJSON_AddStringToObject(r, which, text);
    snprintf(key, sizeof(key), "%s_truncated", which);
    cJSON_AddBoolToObject(r, key, truncated);
    snprintf(key, sizeof(key), "%s_bytes_dropped", which);
    cJSON_AddNumberToObject(r, key, (double)dropped);
}

/* Fill one stream's text into the result. */
static int add_stream(struct ex *ex, const struct rlmcp_h *h,
                      const char *devbox_id, const char *eid, const cJSON *view,
                      const char *which, struct rlmcp_h_capture *streamed,
                      bool streamed_ok, cJSON *result)
{
    struct rlmcp_h_capture cap;
    char key_t[32];
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(view, which);
    char *hint = exec_logs_hint(h, eid);
    uint64_t dropped = 0;
    bool api_cut = false;
    bool complete = false;
    bool truncated = false;
    char *out = NULL;
    int rc = RLMCP_OK;

    snprintf(key_t, sizeof(key_t), "%s_truncated", which);
    api_cut = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(view, key_t));
    if (!rlmcp_h_capture_init(&cap, (size_t)ex->max_output))
        return RLMCP_ENOMEM;
    if (!api_cut) {
        if (cJSON_IsString(text))
            rlmcp_h_capture_add(&cap, text->valuestring,
                                strlen(text->valuestring));
    } else if (streamed != NULL && streamed_ok) {
        out =
            rlmcp_h_capture_text_dropped(streamed, hint, &truncated, &dropped);
        goto done;
    } else {
        /* The API kept only the last lines: read the whole stream. */
        rc = read_stream(h, devbox_id, eid, which, 0, 0, 60000, false, &cap,
                         &complete, NULL);
        if (rc == RLMCP_ECANCELLED)
            goto out;
        rc = RLMCP_OK;
        if (!complete) {
            rlmcp_h_capture_reset(&cap);
            if (cJSON_IsString(text))
                rlmcp_h_capture_add(&cap, text->valuestring,
                                    strlen(text->valuestring));
            out =
                rlmcp_h_capture_text_dropped(&cap, hint, &truncated, &dropped);
            if (out != NULL) {
                char *t = rlmcp_h_sprintf(
                    "\u2026[earlier output omitted%s%s]\u2026\n%s",
                    hint != NULL ? "; " : "", hint != NULL ? hint : "", out);
                free(out);
                out = t;
            }
            truncated = true;
            goto done;
        }
    }
    out = rlmcp_h_capture_text_dropped(&cap, hint, &truncated, &dropped);
done:
    if (out == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    put_stream(result, which, out, truncated, dropped);
out:
    free(out);
    free(hint);
    rlmcp_h_capture_free(&cap);
    return rc;
}

static cJSON *base_result(const cJSON *view, const char *devbox_id,
                          const char *eid)
{
    cJSON *r = cJSON_CreateObject();
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(view, "exit_status");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(view, "status");
    const cJSON *how = cJSON_GetObjectItemCaseSensitive(view, "ended_by");

    if (r == NULL)
        return NULL;
    if (cJSON_IsNumber(ex))
        cJSON_AddNumberToObject(r, "exit_code", ex->valuedouble);
    else
        cJSON_AddNullToObject(r, "exit_code");
    /* How it ended: devboxd says (out_of_memory, killed, exit); else
     * killed by SIGKILL/SIGTERM (128+n), else its exit. */
    if (!cJSON_IsNumber(ex))
        cJSON_AddNullToObject(r, "ended_by");
    else if (cJSON_IsString(how) &&
             (strcmp(how->valuestring, "out_of_memory") == 0 ||
              strcmp(how->valuestring, "killed") == 0 ||
              strcmp(how->valuestring, "exit") == 0))
        cJSON_AddStringToObject(r, "ended_by", how->valuestring);
    else
        cJSON_AddStringToObject(
            r, "ended_by",
            ex->valueint == 128 + 9 || ex->valueint == 128 + 15 ? "killed"
                                                                : "exit");
    cJSON_AddStringToObject(r, "execution_id", eid);
    cJSON_AddStringToObject(r, "devbox_id", devbox_id);
    cJSON_AddStringToObject(r, "status",
                            cJSON_IsString(st) ? st->valuestring : "unknown");
    return r;
}

char *exec_logs_hint(const struct rlmcp_h *h, const char *eid)
{
    char *ref = NULL;
    char *hint = NULL;

    if (eid == NULL || eid[0] == '\0')
        return NULL;
    ref = rlmcp_h_tool_ref(h, "get_execution_logs", "execution_id", eid);
    if (ref != NULL)
        hint = rlmcp_h_sprintf("full output: %s", ref);
    free(ref);
    return hint;
}

int exec_live_output(const struct rlmcp_h *h, const char *devbox_id,
                     const char *eid, const char *which, uint64_t offset,
                     uint64_t limit, struct rlmcp_h_capture *cap,
                     bool *complete, uint64_t *received)
{
    int rc = read_stream(h, devbox_id, eid, which, offset, limit,
                         EXEC_LIVE_WINDOW_MS, false, cap, complete, received);

    return rc == RLMCP_ETIMEDOUT ? RLMCP_OK : rc;
}

cJSON *exec_view_result(struct ex *ex, const struct rlmcp_h *h,
                        const cJSON *view, const char *devbox_id)
{
    const cJSON *eid = cJSON_GetObjectItemCaseSensitive(view, "execution_id");
    const char *e = cJSON_IsString(eid) ? eid->valuestring : "";
    cJSON *r = base_result(view, devbox_id, e);
    char *hint = exec_logs_hint(h, e);
    static const char *const streams[] = {"stdout", "stderr"};
    size_t i;

    for (i = 0; r != NULL && i < 2; i++) {
        struct rlmcp_h_capture cap;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(view, streams[i]);
        char key[32];
        bool trunc = false;
        uint64_t dropped = 0;
        char *out;

        snprintf(key, sizeof(key), "%s_truncated", streams[i]);
        if (!rlmcp_h_capture_init(&cap, (size_t)ex->max_output))
            break;
        if (cJSON_IsString(t) && t->valuestring[0] != '\0') {
            rlmcp_h_capture_add(&cap, t->valuestring, strlen(t->valuestring));
        } else if (!view_completed(view) && e[0] != '\0') {
            /* The API has no output until it completes: what the stream
             * holds so far. */
            bool complete = false;
            if (exec_live_output(h, devbox_id, e, streams[i], 0, 0, &cap,
                                 &complete, NULL) == RLMCP_ECANCELLED) {
                rlmcp_h_capture_free(&cap);
                break;
            }
        }
        out = rlmcp_h_capture_text_dropped(&cap, hint, &trunc, &dropped);
        put_stream(
            r, streams[i], out != NULL ? out : "",
            trunc || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(view, key)),
            dropped);
        free(out);
        rlmcp_h_capture_free(&cap);
    }
    free(hint);
    return r;
}

static int start(struct ex *ex, const struct rlmcp_h *h,
                 const struct exec_params *p, uint64_t work_until,
                 cJSON **view_out)
{
    struct rlmcp_h_req_opts o = {0};
    cJSON *body = cJSON_CreateObject();
    char *path = NULL, *what = NULL;
    char cid[37];
    long long opt = ex->optimistic_s;
    uint32_t left = remaining_ms(work_until);
    int rc = RLMCP_ENOMEM;

    if (opt > p->timeout_ms / 1000)
        opt = p->timeout_ms / 1000;
    /* The server's in-request wait must end well before our own bound,
     * or the answer naming the execution would be cut off. */
    if (opt > (long long)(left / 1000) - 1)
        opt = left >= 2000 ? (long long)(left / 1000) - 1 : 0;
    if (uuid7(cid) != 0) {
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "the host's random source (getrandom) failed: no "
                          "command id, so nothing was started");
        goto out;
    }
    path = rlmcp_h_sprintf("/v1/devboxes/%s/execute?last_n=%lld", p->devbox_id,
                           ex->last_n);
    what = rlmcp_h_sprintf("executing on devbox %s", p->devbox_id);
    if (body == NULL || path == NULL || what == NULL)
        goto out;
    cJSON_AddStringToObject(body, "command", p->command);
    cJSON_AddStringToObject(body, "command_id", cid);
    cJSON_AddNumberToObject(body, "optimistic_timeout", (double)opt);
    if (p->shell_name != NULL)
        cJSON_AddStringToObject(body, "shell_name", p->shell_name);
    o.max_retries = -1;
    o.timeout_ms = (uint32_t)(opt + 30) * 1000u;
    if (left == 0)
        left = 1;
    if (o.timeout_ms > left)
        o.timeout_ms = left;
    /*
     * Sent even when the call is cancelled meanwhile: without the answer
     * we would not know the execution to kill. It is bounded by the
     * optimistic wait; exec_run checks for cancellation right after.
     */
    o.flags = RLMCP_HTTP_IGNORE_CANCEL;
    o.transport_unreported = true; /* a timeout is reported by fail_start */
    rc = devbox_post(h, p->devbox_id, path, body, &o, what, view_out);
    if (rc == RLMCP_EHTTP)
        rc = rlmcp_h_fail_rc(h, rc, what);
    if (rc == RLMCP_OK && !cJSON_IsObject(*view_out))
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "%s: the Runloop API answered without an "
                          "execution",
                          what);
out:
    cJSON_Delete(body);
    free(path);
    free(what);
    return rc;
}

/* Start the command; *eid_out receives its checked execution id. */
static int start_execution(struct ex *ex, const struct rlmcp_h *h,
                           const struct exec_params *p, uint64_t work_until,
                           cJSON **view_out, char **eid_out)
{
    const cJSON *eidj = NULL;
    char *msg = NULL;
    int rc = start(ex, h, p, work_until, view_out);

    if (rc != RLMCP_OK)
        return rc;
    eidj = cJSON_GetObjectItemCaseSensitive(*view_out, "execution_id");
    if (!cJSON_IsString(eidj) || !rlmcp_h_id_valid(eidj->valuestring))
        return rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                            "the Runloop API answered without a valid "
                            "execution_id");
    *eid_out = strdup(eidj->valuestring);
    if (*eid_out == NULL)
        return RLMCP_ENOMEM;
    /* The first progress names a running execution, so a client that
     * loses this call (host restart, cancel) can still find and stop it. */
    if (view_completed(*view_out))
        return RLMCP_OK; /* the result names it right away */
    msg = rlmcp_h_sprintf("execution %s started on devbox %s", *eid_out,
                          p->devbox_id);
    if (msg != NULL)
        h->api->progress(h->call, 0, -1, msg);
    free(msg);
    return RLMCP_OK;
}

/* The finished execution's result: status, both streams, duration. */
/* A stream that ended before the output did (a reset, an answer other
 * than 408, or an end the engine sent early): what the result's stdout
 * holds past the streamed bytes goes out as the last progress, so
 * progress still carries all the output. */
static void progress_rest(const struct rlmcp_h *h, const cJSON *result,
                          uint64_t streamed)
{
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(result, "stdout");
    const cJSON *cut =
        cJSON_GetObjectItemCaseSensitive(result, "stdout_truncated");
    size_t len = 0;

    if (!cJSON_IsString(out) || cJSON_IsTrue(cut))
        return; /* a part of the output: where it starts is unknown */
    len = strlen(out->valuestring);
    if (len > streamed)
        h->api->progress(h->call, (double)len, -1, out->valuestring + streamed);
}

static int finish_result(struct ex *ex, const struct rlmcp_h *h,
                         const struct exec_params *p, const char *eid,
                         const cJSON *view, struct rlmcp_h_capture *streamed,
                         bool stream_ok, uint64_t t0, cJSON **result_out)
{
    cJSON *result = base_result(view, p->devbox_id, eid);
    int rc;

    if (result == NULL)
        return RLMCP_ENOMEM;
    rc = add_stream(ex, h, p->devbox_id, eid, view, "stdout", streamed,
                    stream_ok, result);
    /* The result's stdout, whole: the view's or, when the API kept only
     * a tail, the stream read again from its start. */
    if (rc == RLMCP_OK && streamed != NULL)
        progress_rest(h, result, streamed->total);
    if (rc == RLMCP_OK)
        rc = add_stream(ex, h, p->devbox_id, eid, view, "stderr", NULL, false,
                        result);
    if (rc != RLMCP_OK) {
        cJSON_Delete(result);
        return rc;
    }
    cJSON_AddNumberToObject(result, "duration_ms",
                            (double)(rlmcp_h_now_ms() - t0));
    *result_out = result;
    return RLMCP_OK;
}

/* One stream of a timed-out command: what was streamed, else what the
 * kill's view kept (never a new request: the deadline is near). */
static void add_partial(struct ex *ex, const struct rlmcp_h *h, cJSON *r,
                        const char *which, const cJSON *view,
                        const struct rlmcp_h_capture *streamed, const char *eid)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(view, which);
    struct rlmcp_h_capture cap;
    char *hint = exec_logs_hint(h, eid);
    char *out = NULL;
    bool trunc = false;
    uint64_t dropped = 0;

    /* The stream holds all of it (head and tail); the view maybe a tail. */
    if (streamed != NULL)
        out = rlmcp_h_capture_text_dropped(streamed, hint, &trunc, &dropped);
    if ((out == NULL || out[0] == '\0') && cJSON_IsString(t) &&
        rlmcp_h_capture_init(&cap, (size_t)ex->max_output)) {
        free(out);
        rlmcp_h_capture_add(&cap, t->valuestring, strlen(t->valuestring));
        out = rlmcp_h_capture_text_dropped(&cap, hint, &trunc, &dropped);
        rlmcp_h_capture_free(&cap);
    }
    put_stream(r, which, out != NULL ? out : "", trunc, dropped);
    free(out);
    free(hint);
}

/*
 * What a timed-out command printed, as a second content block
 * {"result": exec result with ended_by "timeout"} after the error, and as
 * the same member of the error's structuredContent (result_json after
 * result_error; hosts before that drop it, sdk/ABI.md).
 */
static void add_timeout_result(struct ex *ex, const struct rlmcp_h *h,
                               const struct exec_params *p, const char *eid,
                               const cJSON *view,
                               const struct rlmcp_h_capture *streamed,
                               uint64_t t0, bool stopped)
{
    cJSON *wrap = cJSON_CreateObject();
    cJSON *r = base_result(view, p->devbox_id, eid);
    char *text = NULL;

    if (wrap == NULL || r == NULL)
        goto out;
    cJSON_ReplaceItemInObjectCaseSensitive(r, "ended_by",
                                           cJSON_CreateString("timeout"));
    if (!stopped)
        cJSON_ReplaceItemInObjectCaseSensitive(r, "status",
                                               cJSON_CreateString("unknown"));
    add_partial(ex, h, r, "stdout", view, streamed, eid);
    add_partial(ex, h, r, "stderr", view, NULL, eid);
    cJSON_AddNumberToObject(r, "duration_ms", (double)(rlmcp_h_now_ms() - t0));
    cJSON_AddItemToObject(wrap, "result", r);
    r = NULL;
    text = cJSON_PrintUnformatted(wrap);
    if (text != NULL) {
        h->api->result_text(h->call, text);
        h->api->result_json(h->call, text, strlen(text));
    }
out:
    free(text);
    cJSON_Delete(r);
    cJSON_Delete(wrap);
}

/*
 * A timed-out or cancelled execution is killed, and the kill confirmed by
 * reading its status back within the clean-up time; a timeout is reported
 * saying whether it is stopped, naming the execution either way, with the
 * output it printed so far.
 */
static int fail_execution(struct ex *ex, const struct rlmcp_h *h,
                          const struct exec_params *p,
                          const struct exec_limits *l, const char *eid, int rc,
                          const struct rlmcp_h_capture *streamed, uint64_t t0)
{
    char why[200];
    char limit[32];
    char ended[160];
    bool cancelled = rc == RLMCP_ECANCELLED;
    bool stopped = false;
    uint64_t ran_ms = rlmcp_h_now_ms() - t0;
    cJSON *view = NULL;

    if (rc != RLMCP_ETIMEDOUT && rc != RLMCP_ECANCELLED)
        return rc;
    stopped = exec_stop(h, p->devbox_id, eid, exec_cleanup_until(l, cancelled),
                        why, sizeof(why), &view);
    if (cancelled) {
        cJSON_Delete(view);
        return rc;
    }
    /* Whether its own timeout ended it, and when it was stopped. */
    exec_fmt_ms(p->timeout_ms, limit, sizeof(limit));
    if (l->cut)
        snprintf(ended, sizeof(ended),
                 "the command was stopped before its timeout of %s because "
                 "the call's own time limit ends sooner",
                 limit);
    else
        snprintf(ended, sizeof(ended),
                 "the command did not finish within its timeout of %s", limit);
    if (stopped)
        rc = rlmcp_h_fail_remedy(
            h, RLMCP_ERR_TIMEOUT,
            "Raise timeout_seconds (up to the server's maximum), or run "
            "it with execute_command_async and poll get_execution. The "
            "output it printed so far is in the result that follows.",
            "%s; execution %s on devbox %s was killed at %.1f s (its status "
            "reads completed)",
            ended, eid, p->devbox_id, (double)ran_ms / 1000.0);
    else
        rc = rlmcp_h_fail_remedy(
            h, RLMCP_ERR_TIMEOUT,
            "The command may still be running: check it with get_execution "
            "(devbox_id and execution_id from this message) and stop it with "
            "kill_execution once the backend answers.",
            "%s; a kill was sent at %.1f s, but execution %s on devbox %s "
            "could NOT be confirmed stopped within the time limit (%s)",
            ended, (double)ran_ms / 1000.0, eid, p->devbox_id, why);
    add_timeout_result(ex, h, p, eid, view, streamed, t0, stopped);
    cJSON_Delete(view);
    return rc;
}

/* The start request got no answer in time: the execution may exist. */
static int fail_start(const struct rlmcp_h *h, const struct exec_params *p,
                      int rc, uint64_t t0)
{
    const char *why = "";
    char limit[32];

    if (rc != RLMCP_ETIMEDOUT)
        return rc;
    if (RLMCP_API_HAS(h->api, call_last_error))
        why = h->api->call_last_error(h->call);
    exec_fmt_ms(p->timeout_ms, limit, sizeof(limit));
    return rlmcp_h_fail_remedy(
        h, RLMCP_ERR_TIMEOUT,
        "The command may start once the backend answers: list_executions "
        "for this devbox shows it (and kill_execution stops it).",
        "devbox %s: the request starting the command got no answer in "
        "%.1f s (the command's timeout: %s); whether the command started "
        "is unknown%s%s",
        p->devbox_id, (double)(rlmcp_h_now_ms() - t0) / 1000.0, limit,
        why[0] ? ": " : "", why);
}

int exec_run(struct ex *ex, const struct rlmcp_h *h,
             const struct exec_params *p, cJSON **result_out)
{
    struct rlmcp_h_capture streamed;
    struct exec_limits lim;
    uint64_t t0 = rlmcp_h_now_ms();
    uint64_t deadline = 0;
    cJSON *view = NULL;
    char *eid = NULL;
    bool have_stream = false, stream_ok = false;
    int rc;

    *result_out = NULL;
    if (!rlmcp_h_capture_init(&streamed, (size_t)ex->max_output))
        return RLMCP_ENOMEM;
    exec_limits(h, p->timeout_ms, EXEC_RESERVE_KILL, &lim);
    deadline = lim.work_until;
    rc = start_execution(ex, h, p, deadline, &view, &eid);
    if (rc != RLMCP_OK) {
        rc = fail_start(h, p, rc, t0);
        goto out;
    }
    if (h->api->is_cancelled(h->call))
        rc = RLMCP_ECANCELLED;
    if (rc == RLMCP_OK && !view_completed(view) && ex->stream) {
        uint32_t left = remaining_ms(deadline);
        have_stream = true;
        rc = left == 0 ? RLMCP_ETIMEDOUT
                       : follow_stdout(h, p->devbox_id, eid, deadline,
                                       &streamed, &stream_ok);
    }
    if (rc == RLMCP_OK)
        rc = exec_wait_done(ex, h, p->devbox_id, eid, deadline, &view);
    if (rc == RLMCP_OK)
        rc = finish_result(ex, h, p, eid, view, have_stream ? &streamed : NULL,
                           stream_ok, t0, result_out);
    if (rc != RLMCP_OK)
        rc = fail_execution(ex, h, p, &lim, eid, rc,
                            have_stream ? &streamed : NULL, t0);
out:
    rlmcp_h_capture_free(&streamed);
    cJSON_Delete(view);
    free(eid);
    return rc;
}
