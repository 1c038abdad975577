/*
 * tasks.c - MCP tasks over the plugins' task ops (see tasks.h).
 *
 * Task id: "rt1.<payload>.<mac>", both base64url without padding. payload
 * is {"t": registered tool name, "h": handle, "c": created (ms since the
 * epoch), "l": ttl ms}; mac is HMAC-SHA256 under the task key of
 * "rlmcp-task\n<caller>\n<payload>", caller being hex SHA-256 of the
 * caller's credential ("-" without one). Nothing else is needed to serve a
 * task, so it survives a reconnect and a host restart. The process also
 * remembers the tasks it saw, for tasks/list only.
 */
#define _GNU_SOURCE
#include "tasks.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "base64.h"
#include "digest.h"
#include "jsonrpc.h"
#include "log.h"
#include "random.h"
#include "call_state.h"
#include "dispatch.h"
#include "mrtr.h"
#include "registry.h"
#include "revision.h"
#include "schema.h"
#include "secret.h"

#define KEY_BYTES DIGEST_BYTES
#define ID_PREFIX "rt1."
#define ID_MAX 2048
#define HANDLE_MAX 512
#define DEFAULT_TTL_MS (24ll * 3600 * 1000)
#define MAX_TTL_MS (7ll * 24 * 3600 * 1000)
#define POLL_MS 1000
/* tasks/result waits as long as this per op call (the op may say more). */
#define RESULT_WAIT_S 86400
#define LIST_MAX 1000
#define LIST_PAGE 100

enum task_op { OP_START, OP_GET, OP_RESULT, OP_CANCEL, OP_UPDATE };

/* A decoded, verified task id. */
struct task_ref {
    const struct tool_entry *tool;
    char gone[129]; /* a genuine id whose tool this deployment lacks */
    cJSON *handle;
    long long created_ms;
    long long ttl_ms;
};

/* What this process saw, for tasks/list. */
struct seen {
    char *id;
    char caller[65];
    long long created_ms;
    long long ttl_ms;
    char status[16];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct digest_key key = DIGEST_KEY_INIT;
static struct seen seen[LIST_MAX];
static size_t n_seen;    /* entries in use */
static size_t seen_next; /* the next slot to (over)write */

/* ---- key ---------------------------------------------------------------- */

int tasks_set_key(const unsigned char *k, size_t len)
{
    return digest_key_set(&key, k, len);
}

static int read_key(const char *path, unsigned char *out, char *err,
                    size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = 0;

    if (fd < 0)
        return errno == ENOENT ? 1 : -1;
    n = read(fd, out, KEY_BYTES);
    close(fd);
    if (n != KEY_BYTES) {
        snprintf(err, errlen,
                 "%s: the task key must be %d bytes; delete the file to make "
                 "a new one (tasks created with the old key are then lost)",
                 path, KEY_BYTES);
        return -1;
    }
    return 0;
}

/* Write a new key atomically: a racing process's key wins if it was first. */
static int create_key(const char *path, unsigned char *out, char *err,
                      size_t errlen)
{
    char tmp[4096];
    int fd = -1;
    int rc = -1;

    if (random_fill(out, KEY_BYTES) != 0)
        goto fail;
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        goto fail;
    if (write(fd, out, KEY_BYTES) != KEY_BYTES || fsync(fd) != 0)
        goto fail;
    close(fd);
    fd = -1;
    if (link(tmp, path) != 0 && errno != EEXIST)
        goto fail;
    unlink(tmp);
    return read_key(path, out, err, errlen);
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    if (err[0] == '\0')
        snprintf(err, errlen, "%s: cannot create the task key: %s", path,
                 strerror(errno));
    return rc;
}

int tasks_load_key_file(const char *path, char *err, size_t errlen)
{
    unsigned char k[KEY_BYTES];
    int rc;

    err[0] = '\0';
    rc = read_key(path, k, err, errlen);
    if (rc == 1)
        rc = create_key(path, k, err, errlen);
    else if (rc < 0 && err[0] == '\0')
        snprintf(err, errlen, "%s: cannot read the task key: %s", path,
                 strerror(errno));
    if (rc == 0)
        rc = tasks_set_key(k, sizeof(k));
    explicit_bzero(k, sizeof(k));
    return rc;
}

void tasks_init_key(const char *state_secret, const char *state_dir)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    char *text = NULL;
    char *path = NULL;
    char err[512];

    if (state_secret != NULL) {
        if (asprintf(&text, "rlmcp-tasks\n%s", state_secret) >= 0) {
            SHA256((const unsigned char *)text, strlen(text), md);
            tasks_set_key(md, sizeof(md));
            explicit_bzero(md, sizeof(md));
            secret_free(text);
            return;
        }
    } else if (state_dir != NULL &&
               asprintf(&path, "%s/task.key", state_dir) >= 0) {
        if (tasks_load_key_file(path, err, sizeof(err)) == 0) {
            free(path);
            return;
        }
        log_msg(RLMCP_LOG_WARNING, NULL,
                "%s; tasks will not survive a restart of this process", err);
        free(path);
    }
    if (tasks_set_key(NULL, 0) != 0)
        log_msg(RLMCP_LOG_ERROR, NULL, "cannot draw a random task key");
}

/* ---- signing ------------------------------------------------------------ */

static int mac(const char *caller, const char *payload, unsigned char out[32])
{
    char *text = NULL;
    int rc = -1;

    if (asprintf(&text, "rlmcp-task\n%s\n%s", caller, payload) < 0)
        return -1;
    rc = digest_hmac(&key, text, strlen(text), out);
    free(text);
    return rc;
}

static char *id_encode(const char *tool, const cJSON *handle,
                       long long created_ms, long long ttl_ms,
                       const char *caller)
{
    cJSON *p = cJSON_CreateObject();
    unsigned char md[32];
    char *json = NULL, *payload = NULL, *sig = NULL, *id = NULL;

    cJSON_AddStringToObject(p, "t", tool);
    cJSON_AddItemToObject(p, "h", cJSON_Duplicate(handle, true));
    cJSON_AddNumberToObject(p, "c", (double)created_ms);
    cJSON_AddNumberToObject(p, "l", (double)ttl_ms);
    json = cJSON_PrintUnformatted(p);
    if (json != NULL)
        payload = base64_encode(json, strlen(json), true);
    if (payload != NULL && mac(caller, payload, md) == 0)
        sig = base64_encode(md, sizeof(md), true);
    if (sig != NULL && asprintf(&id, ID_PREFIX "%s.%s", payload, sig) < 0)
        id = NULL;
    cJSON_Delete(p);
    free(json);
    free(payload);
    free(sig);
    return id;
}

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool whole_number(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble >= 0 &&
           v->valuedouble <= 9007199254740991.0 &&
           v->valuedouble == (double)(long long)v->valuedouble;
}

/* The payload's fields; false when any is missing or of the wrong type. */
static bool payload_fields(const struct registry *reg, const cJSON *p,
                           struct task_ref *out)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "t");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(p, "h");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "c");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(p, "l");

    if (!cJSON_IsString(t) || !cJSON_IsObject(h) || !whole_number(c) ||
        !whole_number(l))
        return false;
    out->created_ms = (long long)c->valuedouble;
    out->ttl_ms = (long long)l->valuedouble;
    out->tool =
        registry_find_original(reg, t->valuestring, strlen(t->valuestring));
    if (out->tool == NULL || !out->tool->has_task) {
        /* A reload removed its plugin: say so (the id is genuine). */
        snprintf(out->gone, sizeof(out->gone), "%.128s", t->valuestring);
        out->tool = NULL;
        return false;
    }
    out->handle = cJSON_Duplicate(h, true);
    return out->handle != NULL;
}

/*
 * Verify and decode a task id for this caller. 0; 1 when it is not a task
 * of this caller (malformed, forged, another caller's, expired, or its tool
 * is gone): the same answer for all, so ids cannot be probed.
 */
static int id_decode(const struct registry *reg, const char *id,
                     const char *caller, struct task_ref *out)
{
    const char *payload = NULL, *dot = NULL;
    unsigned char want[32];
    unsigned char *got = NULL, *json = NULL;
    size_t got_len = 0, json_len = 0;
    char *payload_s = NULL;
    cJSON *p = NULL;
    int rc = 1;

    memset(out, 0, sizeof(*out));
    if (strlen(id) > ID_MAX || strncmp(id, ID_PREFIX, strlen(ID_PREFIX)) != 0)
        return 1;
    payload = id + strlen(ID_PREFIX);
    dot = strchr(payload, '.');
    if (dot == NULL)
        return 1;
    payload_s = strndup(payload, (size_t)(dot - payload));
    got = base64_decode(dot + 1, strlen(dot + 1), true, &got_len);
    if (payload_s == NULL || got == NULL || got_len != sizeof(want) ||
        mac(caller, payload_s, want) != 0 ||
        CRYPTO_memcmp(want, got, sizeof(want)) != 0)
        goto out;
    json = base64_decode(payload_s, strlen(payload_s), true, &json_len);
    p = json != NULL ? cJSON_ParseWithLength((const char *)json, json_len)
                     : NULL;
    if (p == NULL || (!payload_fields(reg, p, out) && out->gone[0] == '\0'))
        goto out;
    if (now_ms() > out->created_ms + out->ttl_ms) {
        out->gone[0] = '\0';
        goto out; /* expired: its ttl is over */
    }
    if (out->gone[0] != '\0') {
        rc = 2;
        goto out;
    }
    rc = 0;
out:
    if (rc != 0) {
        cJSON_Delete(out->handle);
        out->handle = NULL;
    }
    cJSON_Delete(p);
    free(payload_s);
    free(got);
    free(json);
    return rc;
}

/* ---- what this process saw (tasks/list) --------------------------------- */

static void seen_note(const char *id, const char *caller, long long created,
                      long long ttl, const char *status)
{
    size_t i;
    struct seen *e = NULL;

    pthread_mutex_lock(&lock);
    for (i = 0; i < n_seen; i++) {
        if (strcmp(seen[i].id, id) == 0) {
            e = &seen[i];
            break;
        }
    }
    if (e == NULL) {
        char *copy = strdup(id);

        if (copy == NULL)
            goto out;
        e = &seen[seen_next];
        free(e->id);
        e->id = copy;
        snprintf(e->caller, sizeof(e->caller), "%s", caller);
        e->created_ms = created;
        e->ttl_ms = ttl;
        seen_next = (seen_next + 1) % LIST_MAX;
        if (n_seen < LIST_MAX)
            n_seen++;
    }
    snprintf(e->status, sizeof(e->status), "%s", status);
out:
    pthread_mutex_unlock(&lock);
}

/* ---- answers ------------------------------------------------------------ */

#define reply_error(q, code, data, ...)                                        \
    mcp_send_error((q)->sink, (q)->id, code, data, __VA_ARGS__)

static void iso_time(long long ms, char out[32])
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;

    gmtime_r(&s, &tm);
    snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(ms % 1000));
}

/* The Task fields of both revisions into o. */
static void task_fields(cJSON *o, const char *id, const char *status,
                        const char *message, long long created, long long ttl,
                        bool stateless)
{
    char t[32];

    cJSON_AddStringToObject(o, "taskId", id);
    cJSON_AddStringToObject(o, "status", status);
    if (message != NULL)
        cJSON_AddStringToObject(o, "statusMessage", message);
    iso_time(created, t);
    cJSON_AddStringToObject(o, "createdAt", t);
    iso_time(now_ms(), t);
    cJSON_AddStringToObject(o, "lastUpdatedAt", t);
    cJSON_AddNumberToObject(o, stateless ? "ttlMs" : "ttl", (double)ttl);
    cJSON_AddNumberToObject(o, stateless ? "pollIntervalMs" : "pollInterval",
                            POLL_MS);
}

/* ---- the sink that turns an op's answer into the task answer ------------ */

struct task_sink {
    struct mcp_sink sink; /* first: the sink pointer is the struct's */
    atomic_int refs;
    struct mcp_sink *inner;
    enum task_op op;
    bool stateless;
    char caller[65];
    char *id;         /* the task id (START: made from the answer) */
    const char *tool; /* START: the registered name */
    /* The tool (lives in the call's deployment, as long as the call). */
    const struct tool_entry *entry;
    char why[768]; /* an error message made for this answer */
    long long created_ms;
    long long ttl_ms;
};

static void ts_retain(struct mcp_sink *sink)
{
    struct task_sink *ts = (struct task_sink *)sink;

    atomic_fetch_add(&ts->refs, 1);
}

static void ts_release(struct mcp_sink *sink)
{
    struct task_sink *ts = (struct task_sink *)sink;

    if (atomic_fetch_sub(&ts->refs, 1) != 1)
        return;
    if (ts->inner->release != NULL)
        ts->inner->release(ts->inner);
    free(ts->id);
    free(ts);
}

/* The text of a tool error result's first text block. */
static const char *error_text(const cJSON *result)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(result, "content");
    const cJSON *first = cJSON_GetArrayItem(content, 0);
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(first, "text");

    return cJSON_IsString(text) ? text->valuestring : "the task failed";
}

/*
 * A tool error result's error {code, message} (call.c error_block), parsed
 * from its first text block; NULL when it has none.
 */
static cJSON *error_object(const cJSON *result)
{
    cJSON *outer = cJSON_Parse(error_text(result));
    cJSON *e = cJSON_DetachItemFromObjectCaseSensitive(outer, "error");

    cJSON_Delete(outer);
    if (cJSON_IsObject(e))
        return e;
    cJSON_Delete(e);
    return NULL;
}

/* Codes of an op's error that say the state could not be read now. */
static bool unreadable_code(const char *code)
{
    static const char *const codes[] = {
        "unavailable",     "timeout",           "rate_limited",
        "unauthenticated", "permission_denied", "internal",
    };
    size_t i;

    for (i = 0; i < sizeof(codes) / sizeof(*codes); i++) {
        if (strcmp(code, codes[i]) == 0)
            return true;
    }
    return false;
}

/*
 * Statuses of work still going on: an execution's, and the backend's
 * builds' and snapshots' (plugin.h rlmcp_task_def).
 */
static bool working_status(const char *st)
{
    static const char *const names[] = {
        "queued", "running", "in_progress", "provisioning", "building",
    };
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(*names); i++) {
        if (strcmp(st, names[i]) == 0)
            return true;
    }
    return false;
}

/*
 * A task status from a get or wait op's CallToolResult (plugin.h
 * rlmcp_task_def); NULL when the op could not read the state now.
 */
static const char *status_of(const cJSON *result)
{
    const cJSON *sc =
        cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(sc, "status");
    const char *status = "completed"; /* the work's own tool error */
    const cJSON *code = NULL;
    cJSON *e = NULL;

    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"))) {
        e = error_object(result);
        code = cJSON_GetObjectItemCaseSensitive(e, "code");
        if (!cJSON_IsString(code) || unreadable_code(code->valuestring))
            status = NULL;
        else if (strcmp(code->valuestring, "not_found") == 0)
            status = "failed"; /* the work is gone */
        cJSON_Delete(e);
        return status;
    }
    if (!cJSON_IsString(st))
        return "completed";
    if (working_status(st->valuestring))
        return "working";
    if (strcmp(st->valuestring, "input_required") == 0)
        return "input_required";
    if (strcmp(st->valuestring, "failed") == 0)
        return "failed";
    if (strcmp(st->valuestring, "killed") == 0 ||
        strcmp(st->valuestring, "cancelled") == 0)
        return "cancelled";
    return "completed";
}

static bool terminal(const char *status)
{
    return strcmp(status, "working") != 0 &&
           strcmp(status, "input_required") != 0;
}

/* Why a task failed, for statusMessage and the inlined error. */
static char *failure_message(const cJSON *result)
{
    const cJSON *sc =
        cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(sc, "message");
    cJSON *e = NULL;
    const cJSON *em = NULL;
    char *out = NULL;

    if (cJSON_IsString(m))
        return strdup(m->valuestring);
    e = error_object(result);
    em = cJSON_GetObjectItemCaseSensitive(e, "message");
    out = strdup(cJSON_IsString(em) ? em->valuestring : error_text(result));
    cJSON_Delete(e);
    return out;
}

/*
 * A completed task's result is the tool's own: it must match the tool's
 * outputSchema. Status reads before it (a build's "building", a failure's
 * message) are not the tool's result and are not checked.
 */
static bool final_ok(const struct task_sink *ts, const cJSON *result, int *code,
                     const char **msg)
{
    const cJSON *sc =
        cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
    char err[512] = "no structured result (result_json)";

    if (ts->entry == NULL || ts->entry->output_schema == NULL ||
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError")))
        return true;
    if (sc != NULL &&
        schema_validate(ts->entry->output_schema, sc, "structuredContent", err,
                        sizeof(err)) == 0)
        return true;
    log_msg(RLMCP_LOG_ERROR, ts->entry->plugin_name,
            "tool '%s': its task's result does not match its outputSchema: "
            "%s",
            ts->entry->name, err);
    *code = JSONRPC_INTERNAL_ERROR;
    *msg = "the task's result does not match the tool's outputSchema; "
           "details are in the server log";
    return false;
}

static cJSON *answer_start(struct task_sink *ts, cJSON *result, int *code,
                           const char **msg)
{
    cJSON *handle =
        cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
    cJSON *out = NULL, *task = NULL;
    char *hjson = NULL;

    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError")))
        return NULL; /* the tool's own error: no task was made */
    cJSON_DeleteItemFromObjectCaseSensitive(handle, "status");
    hjson = cJSON_IsObject(handle) ? cJSON_PrintUnformatted(handle) : NULL;
    if (hjson == NULL || strlen(hjson) > HANDLE_MAX) {
        log_msg(RLMCP_LOG_ERROR, NULL,
                "tool '%s': its task start returned no handle object of at "
                "most %d bytes",
                ts->tool, HANDLE_MAX);
        free(hjson);
        *code = JSONRPC_INTERNAL_ERROR;
        *msg = "the task could not be created; details are in the server "
               "log";
        return NULL;
    }
    free(hjson);
    ts->id =
        id_encode(ts->tool, handle, ts->created_ms, ts->ttl_ms, ts->caller);
    if (ts->id == NULL) {
        *code = JSONRPC_INTERNAL_ERROR;
        *msg = "out of memory";
        return NULL;
    }
    seen_note(ts->id, ts->caller, ts->created_ms, ts->ttl_ms, "working");
    out = cJSON_CreateObject();
    if (ts->stateless) {
        /* 2026-07-28: a flat Result & Task. */
        task_fields(out, ts->id, "working", NULL, ts->created_ms, ts->ttl_ms,
                    true);
        cJSON_AddStringToObject(out, "resultType", "task");
    } else {
        task = cJSON_AddObjectToObject(out, "task");
        task_fields(task, ts->id, "working", NULL, ts->created_ms, ts->ttl_ms,
                    false);
    }
    return out;
}

/* The error of an op that could not read the task's state now. */
static void unreadable(const cJSON *result, int *code, const char **msg)
{
    (void)result;
    *code = JSONRPC_INTERNAL_ERROR;
    *msg = "the task's state could not be read now (the backend did not "
           "answer, or refused the credential); call again in a few "
           "seconds — the task itself is unchanged";
}

/* 2026-07-28: what the work waits for, as the DetailedTask's map. */
static void add_input_requests(cJSON *out, const cJSON *result)
{
    const cJSON *sc =
        cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(sc, "input_requests");
    cJSON *map =
        cJSON_IsObject(in) ? cJSON_Duplicate(in, true) : cJSON_CreateObject();
    cJSON *e = NULL;

    cJSON_ArrayForEach(e, map)
    {
        /* The key is for the plugin; never sent to the client. */
        mrtr_strip_key(cJSON_GetObjectItemCaseSensitive(e, "params"));
    }
    cJSON_AddItemToObject(out, "inputRequests", map);
}

static cJSON *answer_get(struct task_sink *ts, cJSON *result, int *code,
                         const char **msg)
{
    const char *status = status_of(result);
    char *message = NULL;
    cJSON *out = NULL;
    cJSON *err = NULL;

    if (status == NULL) {
        unreadable(result, code, msg);
        return NULL;
    }
    if (strcmp(status, "completed") == 0 && !final_ok(ts, result, code, msg))
        return NULL;
    if (strcmp(status, "failed") == 0)
        message = failure_message(result);
    out = cJSON_CreateObject();
    seen_note(ts->id, ts->caller, ts->created_ms, ts->ttl_ms, status);
    task_fields(out, ts->id, status, message, ts->created_ms, ts->ttl_ms,
                ts->stateless);
    if (ts->stateless && strcmp(status, "input_required") == 0)
        add_input_requests(out, result);
    if (!ts->stateless || !terminal(status))
        goto out;
    /* 2026-07-28 DetailedTask: the outcome inline. */
    if (strcmp(status, "failed") == 0) {
        err = cJSON_AddObjectToObject(out, "error");
        cJSON_AddNumberToObject(err, "code", JSONRPC_INTERNAL_ERROR);
        cJSON_AddStringToObject(err, "message",
                                message != NULL ? message : "the task failed");
    } else {
        cJSON_AddStringToObject(result, "resultType", "complete");
        cJSON_AddItemToObject(out, "result", cJSON_Duplicate(result, true));
    }
out:
    free(message);
    return out;
}

static cJSON *answer_result(struct task_sink *ts, cJSON *result, int *code,
                            const char **msg)
{
    const char *status = status_of(result);
    cJSON *meta = NULL, *rel = NULL;

    if (status == NULL) {
        unreadable(result, code, msg);
        return NULL;
    }
    seen_note(ts->id, ts->caller, ts->created_ms, ts->ttl_ms, status);
    if (strcmp(status, "input_required") == 0) {
        /* Left by tasks_input_result: the client cannot be asked. */
        *code = JSONRPC_INVALID_PARAMS;
        *msg = "the task waits for input this client cannot give: it did "
               "not declare the capability (elicitation or sampling) in "
               "initialize, or the tool takes no answers; reconnect "
               "declaring it and call tasks/result again";
        return NULL;
    }
    if (strcmp(status, "failed") == 0 &&
        !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"))) {
        char *why = failure_message(result);

        snprintf(ts->why, sizeof(ts->why), "the task failed: %s",
                 why != NULL ? why : "its work broke");
        free(why);
        *code = JSONRPC_INTERNAL_ERROR;
        *msg = ts->why;
        return NULL;
    }
    if (strcmp(status, "completed") == 0 && !final_ok(ts, result, code, msg))
        return NULL;
    if (!terminal(status)) {
        *code = JSONRPC_INTERNAL_ERROR;
        *msg = "the task is still working after the longest wait; call "
               "tasks/result again";
        return NULL;
    }
    meta = cJSON_GetObjectItemCaseSensitive(result, "_meta");
    if (meta == NULL)
        meta = cJSON_AddObjectToObject(result, "_meta");
    rel = cJSON_AddObjectToObject(meta, TASKS_RELATED_META);
    cJSON_AddStringToObject(rel, "taskId", ts->id);
    return cJSON_Duplicate(result, true);
}

/* A cancel op's refusal with code conflict: this work cannot be stopped. */
static bool cannot_stop(const cJSON *result)
{
    cJSON *e = NULL;
    const cJSON *code = NULL;
    bool yes = false;

    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError")))
        return false;
    e = error_object(result);
    code = cJSON_GetObjectItemCaseSensitive(e, "code");
    yes = cJSON_IsString(code) && strcmp(code->valuestring, "conflict") == 0;
    cJSON_Delete(e);
    return yes;
}

static void cancel_refusal(struct task_sink *ts, const cJSON *result)
{
    cJSON *e = error_object(result);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(e, "remedy");

    snprintf(ts->why, sizeof(ts->why), "this task cannot be cancelled: %s%s%s",
             cJSON_IsString(m) ? m->valuestring : "its work cannot be stopped",
             cJSON_IsString(r) ? " " : "",
             cJSON_IsString(r) ? r->valuestring : "");
    cJSON_Delete(e);
}

static cJSON *answer_cancel(struct task_sink *ts, cJSON *result, int *code,
                            const char **msg)
{
    const cJSON *sc =
        cJSON_GetObjectItemCaseSensitive(result, "structuredContent");
    bool already =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sc, "already_done"));
    const char *status = status_of(result);
    cJSON *out = NULL;

    if (cannot_stop(result)) {
        /* The work runs to its end: 2026-07-28 cancels cooperatively (an
         * ack, the task ends as it ends); 2025-11-25 would have it
         * cancelled at once, which it will not be. */
        if (ts->stateless)
            return cJSON_CreateObject();
        cancel_refusal(ts, result);
        *code = JSONRPC_INVALID_PARAMS;
        *msg = ts->why;
        return NULL;
    }
    if (status == NULL || (!already && strcmp(status, "failed") == 0) ||
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError"))) {
        /* The stop could not be confirmed: say so, never "cancelled". */
        *code = JSONRPC_INTERNAL_ERROR;
        *msg = error_text(result);
        return NULL;
    }
    seen_note(ts->id, ts->caller, ts->created_ms, ts->ttl_ms, status);
    if (ts->stateless)
        return cJSON_CreateObject(); /* an empty ack, also when it had ended */
    if (already) {
        *code = JSONRPC_INVALID_PARAMS;
        *msg = "the task already ended; a terminal task cannot be cancelled";
        return NULL;
    }
    out = cJSON_CreateObject();
    task_fields(out, ts->id, "cancelled", "cancelled by the client",
                ts->created_ms, ts->ttl_ms, false);
    return out;
}

/* tasks/update: an empty ack, or the op's refusal. */
static cJSON *answer_update(cJSON *result, int *code, const char **msg)
{
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(result, "isError")))
        return cJSON_CreateObject();
    *code = JSONRPC_INVALID_PARAMS;
    *msg = error_text(result);
    return NULL;
}

/* An input round of the start op (2026-07-28): sent as it is. */
static bool input_round(const cJSON *result)
{
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(result, "resultType");

    return cJSON_IsString(rt) && strcmp(rt->valuestring, "input_required") == 0;
}

/* The op's answer (a CallToolResult or an error) as the task answer. */
static char *transform(struct task_sink *ts, const char *json, size_t len)
{
    cJSON *msg = cJSON_ParseWithLength(json, len);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
    cJSON *result = cJSON_GetObjectItemCaseSensitive(msg, "result");
    cJSON *out = NULL;
    const char *emsg = NULL;
    char *text = NULL;
    int code = 0;

    if (!cJSON_IsObject(result) || input_round(result))
        goto out; /* an error answer goes out as it is */
    switch (ts->op) {
    case OP_START:
        out = answer_start(ts, result, &code, &emsg);
        break;
    case OP_GET:
        out = answer_get(ts, result, &code, &emsg);
        break;
    case OP_RESULT:
        out = answer_result(ts, result, &code, &emsg);
        break;
    case OP_CANCEL:
        out = answer_cancel(ts, result, &code, &emsg);
        break;
    case OP_UPDATE:
        out = answer_update(result, &code, &emsg);
        break;
    }
    if (out != NULL)
        text = jsonrpc_result(id, out);
    else if (code != 0)
        text = jsonrpc_error(id, code, emsg, NULL);
out:
    cJSON_Delete(msg);
    return text;
}

/* A server-to-client request, or the notice that one was given up. */
static bool to_client(const char *json, size_t len)
{
    cJSON *msg = json != NULL ? cJSON_ParseWithLength(json, len) : NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(msg, "method");
    bool yes = false;

    if (cJSON_IsString(m))
        yes = cJSON_GetObjectItemCaseSensitive(msg, "id") != NULL ||
              strcmp(m->valuestring, "notifications/cancelled") == 0;
    cJSON_Delete(msg);
    return yes;
}

static void ts_send(struct mcp_sink *sink, const char *json, size_t len,
                    bool final)
{
    struct task_sink *ts = (struct task_sink *)sink;
    char *text = NULL;

    if (!final) {
        /* An op's progress and logs are not the task's; what tasks/result
         * asks the client (tasks_input.c) is. */
        if (ts->op == OP_RESULT && to_client(json, len))
            ts->inner->send(ts->inner, json, len, false);
        return;
    }
    if (json != NULL)
        text = transform(ts, json, len);
    if (text != NULL)
        ts->inner->send(ts->inner, text, strlen(text), true);
    else
        ts->inner->send(ts->inner, json, len, true);
    free(text);
}

static struct task_sink *sink_new(const struct tasks_req *q, enum task_op op)
{
    struct task_sink *ts = calloc(1, sizeof(*ts));

    if (ts == NULL)
        return NULL;
    ts->sink.send = ts_send;
    ts->sink.retain = ts_retain;
    ts->sink.release = ts_release;
    atomic_init(&ts->refs, 1);
    ts->inner = q->sink;
    if (ts->inner->retain != NULL)
        ts->inner->retain(ts->inner);
    ts->op = op;
    ts->stateless = q->stateless;
    digest_caller(q->api_key, ts->caller);
    return ts;
}

/*
 * Queue op of tool t with args (consumed) as a call answering into ts;
 * mr (consumed, may be NULL) gives it input rounds.
 */
static void run_op(const struct tasks_req *q, struct task_sink *ts,
                   const struct tool_entry *t, rlmcp_tool_fn op, char *args,
                   uint32_t timeout_ms, bool unchecked, struct mrtr *mr)
{
    struct rlmcp_call *c =
        call_new(q->d, q->dep, q->s, &ts->sink, CALL_TOOL, q->id, q->api_key);

    ts_release(&ts->sink); /* the call holds it now */
    if (c == NULL) {
        free(args);
        mrtr_free(mr);
        reply_error(q, JSONRPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    call_set_tool(c, t, args, strlen(args), mr);
    c->op = op;
    c->op_unchecked = unchecked;
    c->task_id = ts->id;
    c->timeout_ms = timeout_ms;
    mcp_enqueue_call(q->d, q->s, c);
}

/* ---- requests ----------------------------------------------------------- */

bool tasks_available(const struct registry *reg)
{
    size_t i;

    for (i = 0; i < registry_tool_count(reg); i++) {
        if (registry_tool_at(reg, i)->has_task)
            return true;
    }
    return false;
}

bool tasks_required(const struct tool_entry *t)
{
    return t->has_task && (t->task.flags & RLMCP_TASK_REQUIRED) != 0;
}

bool tasks_requested(bool stateless, bool cap_tasks, const cJSON *params)
{
    if (stateless)
        return cap_tasks;
    return cJSON_GetObjectItemCaseSensitive(params, "task") != NULL;
}

void tasks_tools_call(const struct tasks_req *q, const struct tool_entry *t,
                      char *args, size_t len)
{
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(q->params, "task");
    const cJSON *ttl = cJSON_GetObjectItemCaseSensitive(task, "ttl");
    struct task_sink *ts = NULL;
    long long ttl_ms = DEFAULT_TTL_MS;

    (void)len;
    if (!q->stateless && !cJSON_IsObject(task)) {
        free(args);
        mrtr_free(q->mrtr);
        reply_error(q, JSONRPC_INVALID_PARAMS, NULL,
                    "params.task must be an object such as {\"ttl\": 60000} "
                    "(ttl in milliseconds, optional)");
        return;
    }
    if (!q->stateless && ttl != NULL && !cJSON_IsNull(ttl)) {
        if (!whole_number(ttl) || ttl->valuedouble < 1) {
            free(args);
            mrtr_free(q->mrtr);
            reply_error(q, JSONRPC_INVALID_PARAMS, NULL,
                        "params.task.ttl must be a positive integer number "
                        "of milliseconds");
            return;
        }
        ttl_ms = (long long)ttl->valuedouble;
        if (ttl_ms > MAX_TTL_MS)
            ttl_ms = MAX_TTL_MS;
    }
    ts = sink_new(q, OP_START);
    if (ts == NULL) {
        free(args);
        mrtr_free(q->mrtr);
        reply_error(q, JSONRPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    ts->tool = t->original_name;
    ts->entry = t;
    ts->created_ms = now_ms();
    ts->ttl_ms = ttl_ms;
    run_op(q, ts, t, t->task.start, args, t->timeout_ms, true, q->mrtr);
}

/* params.taskId as a task of this caller; false after answering. */
static bool task_param(const struct tasks_req *q, struct task_ref *ref,
                       const char **id_out)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(q->params, "taskId");
    char caller[65];
    int rc = 0;

    if (!cJSON_IsString(id) || id->valuestring[0] == '\0') {
        reply_error(q, JSONRPC_INVALID_PARAMS, NULL,
                    "params.taskId must be the taskId string that "
                    "tools/call returned");
        return false;
    }
    digest_caller(q->api_key, caller);
    rc = id_decode(q->dep->reg, id->valuestring, caller, ref);
    if (rc == 2) {
        reply_error(q, JSONRPC_INVALID_PARAMS, NULL,
                    "task '%.64s%s' belongs to tool '%s', which this "
                    "deployment no longer offers (its plugin was removed or "
                    "failed to load); restore the plugin in the deployment "
                    "and reload to reach the task again",
                    id->valuestring, strlen(id->valuestring) > 64 ? "…" : "",
                    ref->gone);
        return false;
    }
    if (rc != 0) {
        reply_error(q, JSONRPC_INVALID_PARAMS, NULL,
                    "no task '%.64s%s' for this caller: it does not exist, "
                    "expired, or was created with another credential",
                    id->valuestring, strlen(id->valuestring) > 64 ? "…" : "");
        return false;
    }
    *id_out = id->valuestring;
    return true;
}

/* The handle as an op's arguments, with timeout_seconds for waits. */
static char *op_args(cJSON *handle, long long wait_s)
{
    if (wait_s > 0)
        cJSON_AddNumberToObject(handle, "timeout_seconds", (double)wait_s);
    return cJSON_PrintUnformatted(handle);
}

static void task_op(const struct tasks_req *q, enum task_op op)
{
    struct task_ref ref;
    struct task_sink *ts = NULL;
    const char *id = NULL;
    char *args = NULL;
    rlmcp_tool_fn fn = NULL;
    uint32_t timeout_ms = 0;

    if (!task_param(q, &ref, &id))
        return;
    switch (op) {
    case OP_GET:
        fn = ref.tool->task.get;
        timeout_ms = ref.tool->timeout_ms;
        break;
    case OP_RESULT:
        /* 2025-11-25 asks the client what the work waits for on the way. */
        fn = q->stateless ? ref.tool->task.wait : tasks_input_result;
        timeout_ms = 0; /* blocks until the work ends (spec) */
        break;
    case OP_UPDATE:
        fn = ref.tool->task.update;
        timeout_ms = ref.tool->timeout_ms;
        break;
    default:
        fn = ref.tool->task.cancel;
        timeout_ms = ref.tool->timeout_ms;
        break;
    }
    if (op == OP_UPDATE)
        cJSON_AddItemToObject(ref.handle, "input_responses",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
                                                  q->params, "inputResponses"),
                                              true));
    args = op_args(ref.handle, op == OP_RESULT ? RESULT_WAIT_S : 0);
    ts = sink_new(q, op);
    if (args == NULL || ts == NULL || (ts->id = strdup(id)) == NULL) {
        free(args);
        if (ts != NULL)
            ts_release(&ts->sink);
        cJSON_Delete(ref.handle);
        reply_error(q, JSONRPC_INTERNAL_ERROR, NULL, "out of memory");
        return;
    }
    ts->created_ms = ref.created_ms;
    ts->ttl_ms = ref.ttl_ms;
    ts->entry = ref.tool;
    cJSON_Delete(ref.handle);
    /* A completed task's result is checked in the answer, not here. */
    run_op(q, ts, ref.tool, fn, args, timeout_ms, true, NULL);
}

/* tasks/list (2025-11-25): the tasks this process saw for this caller. */
static void task_list(const struct tasks_req *q)
{
    const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(q->params, "cursor");
    cJSON *res = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(res, "tasks");
    char caller[65];
    char *end = NULL;
    size_t skip = 0, listed = 0, i;
    bool more = false;

    if (cursor != NULL) {
        errno = 0;
        skip =
            cJSON_IsString(cursor) ? strtoul(cursor->valuestring, &end, 10) : 0;
        if (!cJSON_IsString(cursor) || end == cursor->valuestring ||
            *end != '\0' || errno != 0 || skip > LIST_MAX) {
            cJSON_Delete(res);
            reply_error(q, JSONRPC_INVALID_PARAMS, NULL,
                        "params.cursor is not a cursor this server gave; "
                        "send the nextCursor of the previous page, or none");
            return;
        }
    }
    digest_caller(q->api_key, caller);
    pthread_mutex_lock(&lock);
    /* Newest first: walk back from the last written slot. */
    for (i = 0; i < n_seen; i++) {
        const struct seen *e = &seen[(seen_next + LIST_MAX - 1 - i) % LIST_MAX];
        cJSON *t = NULL;

        if (strcmp(e->caller, caller) != 0 ||
            now_ms() > e->created_ms + e->ttl_ms)
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        if (listed == LIST_PAGE) {
            more = true;
            break;
        }
        t = cJSON_CreateObject();
        task_fields(t, e->id, e->status, NULL, e->created_ms, e->ttl_ms, false);
        cJSON_AddItemToArray(arr, t);
        listed++;
    }
    pthread_mutex_unlock(&lock);
    if (more) {
        char next[32];
        unsigned long base = 0;

        if (cJSON_IsString(cursor))
            base = strtoul(cursor->valuestring, NULL, 10);
        snprintf(next, sizeof(next), "%lu", base + LIST_PAGE);
        cJSON_AddStringToObject(res, "nextCursor", next);
    }
    mcp_send_final(q->sink, jsonrpc_result(q->id, res));
}

/*
 * tasks/update (2026-07-28): answers to what a task asked (tasks/get's
 * inputRequests), handed to the tool's update op. A tool without one never
 * asks: the answers are ignored, like unasked keys.
 */
static void task_update(const struct tasks_req *q)
{
    const cJSON *in =
        cJSON_GetObjectItemCaseSensitive(q->params, "inputResponses");
    struct task_ref ref;
    const char *id = NULL;
    bool has_op = false;

    if (!cJSON_IsObject(in)) {
        reply_error(q, JSONRPC_INVALID_PARAMS, NULL,
                    "params.inputResponses must be an object of answers "
                    "keyed as tasks/get's inputRequests");
        return;
    }
    if (!task_param(q, &ref, &id))
        return;
    has_op = ref.tool->task.update != NULL;
    cJSON_Delete(ref.handle);
    if (has_op)
        task_op(q, OP_UPDATE);
    else
        mcp_send_final(q->sink, jsonrpc_result(q->id, cJSON_CreateObject()));
}

void tasks_handle(const struct tasks_req *q, const char *method)
{
    if (strcmp(method, "tasks/get") == 0)
        task_op(q, OP_GET);
    else if (strcmp(method, "tasks/result") == 0)
        task_op(q, OP_RESULT);
    else if (strcmp(method, "tasks/cancel") == 0)
        task_op(q, OP_CANCEL);
    else if (strcmp(method, "tasks/list") == 0)
        task_list(q);
    else
        task_update(q);
}
