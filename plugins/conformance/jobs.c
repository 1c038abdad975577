/*
 * jobs.c - the task fixtures of the conformance suite's 2026-07-28 tasks
 * scenarios (SEP-2663): greet (never a task), slow_compute, failing_job,
 * protocol_error_job, confirm_delete, multi_input and test_tool_with_task,
 * with the task ops of ABI 1.4 plus update (rlmcp/plugin.h).
 *
 * A task's work is a job in this process's table; its handle is
 * {"job": id}. A job's state follows from the clock and the answers it
 * got, so no thread runs it. Unlike a real plugin's work (an execution on
 * the backend), jobs end with the process: these are test fixtures.
 */
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conformance.h"
#include "schemas.h"

#define JOBS_MAX 256
#define INPUTS_MAX 2
#define WAIT_STEP_MS 100

enum job_kind {
    JOB_SLOW,     /* slow_compute: done after its seconds */
    JOB_FAILING,  /* failing_job: a tool error after 1 s */
    JOB_PROTOCOL, /* protocol_error_job: broken after 0.3 s */
    JOB_CONFIRM,  /* confirm_delete: one elicitation, then done */
    JOB_MULTI,    /* multi_input: two elicitations at once, then done */
    JOB_GREETING, /* test_tool_with_task: done 0.5 s after its start */
};

enum job_state { ST_RUNNING, ST_INPUT, ST_DONE, ST_CANCELLED };

struct job {
    unsigned long id; /* 0: a free slot */
    enum job_kind kind;
    long long done_ms; /* LLONG_MAX while it waits for input */
    bool cancelled;
    unsigned n_inputs;
    bool answered[INPUTS_MAX];
    char answer[INPUTS_MAX][128]; /* the answer's text */
    char text[256];               /* label, file name or greeting */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct job jobs[JOBS_MAX];
static unsigned long next_id;

static const char *const input_keys[INPUTS_MAX] = {"first", "second"};

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the table ----------------------------------------------------------- */

/* A new job (the oldest slot is reused); its id, for the handle. */
static unsigned long job_new(enum job_kind kind, long long done_ms,
                             unsigned n_inputs, const char *text)
{
    struct job *j = NULL;
    unsigned long id;

    pthread_mutex_lock(&lock);
    id = ++next_id;
    j = &jobs[id % JOBS_MAX];
    memset(j, 0, sizeof(*j));
    j->id = id;
    j->kind = kind;
    j->done_ms = done_ms;
    j->n_inputs = n_inputs;
    snprintf(j->text, sizeof(j->text), "%s", text != NULL ? text : "");
    pthread_mutex_unlock(&lock);
    return id;
}

/* The job the handle names, copied out; false when it is gone. */
static bool job_get(const char *args, size_t len, struct job *out,
                    cJSON **parsed)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(a, "job");
    unsigned long n = 0;
    bool found = false;

    if (parsed != NULL)
        *parsed = a;
    if (cJSON_IsString(id))
        n = strtoul(id->valuestring, NULL, 10);
    pthread_mutex_lock(&lock);
    if (n != 0 && jobs[n % JOBS_MAX].id == n) {
        *out = jobs[n % JOBS_MAX];
        found = true;
    }
    pthread_mutex_unlock(&lock);
    if (parsed == NULL)
        cJSON_Delete(a);
    return found;
}

static enum job_state state_of(const struct job *j)
{
    unsigned i;

    if (j->cancelled)
        return ST_CANCELLED;
    for (i = 0; i < j->n_inputs; i++) {
        if (!j->answered[i])
            return ST_INPUT;
    }
    return now_ms() >= j->done_ms ? ST_DONE : ST_RUNNING;
}

/* ---- answers ------------------------------------------------------------- */

static int answer_json(rlmcp_call *call, cJSON *o)
{
    char *json = cJSON_PrintUnformatted(o);
    int rc = RLMCP_ENOMEM;

    if (json != NULL)
        rc = api->result_json(call, json, strlen(json));
    cJSON_free(json);
    cJSON_Delete(o);
    return rc;
}

static int answer_status(rlmcp_call *call, const char *status)
{
    cJSON *o = cJSON_CreateObject();

    cJSON_AddStringToObject(o, "status", status);
    return answer_json(call, o);
}

/* The elicitation a waiting job asks for under input i. */
static cJSON *input_params(const struct job *j, unsigned i)
{
    char msg[320];

    if (j->kind == JOB_CONFIRM) {
        snprintf(msg, sizeof(msg), "Delete %s?", j->text);
        return elicit_params(msg, "confirm", "boolean");
    }
    snprintf(msg, sizeof(msg), "Input %u of 2: what is your name?", i + 1);
    return elicit_params(msg, "name", "string");
}

static int answer_input(rlmcp_call *call, const struct job *j)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *map = NULL;
    unsigned i;

    cJSON_AddStringToObject(o, "status", "input_required");
    map = cJSON_AddObjectToObject(o, "input_requests");
    for (i = 0; i < j->n_inputs; i++) {
        cJSON *e = NULL;

        if (j->answered[i])
            continue;
        e = cJSON_AddObjectToObject(map, input_keys[i]);
        cJSON_AddStringToObject(e, "method", "elicitation/create");
        cJSON_AddItemToObject(e, "params", input_params(j, i));
    }
    return answer_json(call, o);
}

/* A finished job's outcome, as the tool itself would answer. */
static int answer_done(rlmcp_call *call, const struct job *j)
{
    char text[600];
    cJSON *o = NULL;

    switch (j->kind) {
    case JOB_FAILING:
        return api->result_error(call, "invalid_argument",
                                 "nothing to fix: this fixture always fails",
                                 "failing_job failed, as it always does");
    case JOB_PROTOCOL:
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", "failed");
        cJSON_AddStringToObject(o, "message",
                                "protocol_error_job: the job broke (an "
                                "internal failure, on purpose)");
        return answer_json(call, o);
    case JOB_CONFIRM:
        snprintf(text, sizeof(text), "%s %s",
                 strcmp(j->answer[0], "true") == 0 ? "Deleted" : "Kept",
                 j->text);
        break;
    case JOB_MULTI:
        snprintf(text, sizeof(text), "Got %s and %s", j->answer[0],
                 j->answer[1]);
        break;
    default:
        snprintf(text, sizeof(text), "%s", j->text);
        break;
    }
    return api->result_text(call, text);
}

static int answer_job(rlmcp_call *call, const struct job *j)
{
    switch (state_of(j)) {
    case ST_CANCELLED:
        return answer_status(call, "cancelled");
    case ST_INPUT:
        return answer_input(call, j);
    case ST_RUNNING:
        return answer_status(call, "running");
    default:
        return answer_done(call, j);
    }
}

static int gone(rlmcp_call *call)
{
    return api->result_error(call, "not_found",
                             "start the tool again; jobs end with the server "
                             "process",
                             "this job no longer exists");
}

/* ---- task ops ------------------------------------------------------------ */

static int op_get(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    struct job j;

    (void)ud;
    if (!job_get(args, len, &j, NULL))
        return gone(call);
    return answer_job(call, &j);
}

static int op_wait(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = NULL;
    const cJSON *t = NULL;
    long long until = 0;
    struct job j;
    int rc = RLMCP_OK;

    (void)ud;
    if (!job_get(args, len, &j, &a)) {
        cJSON_Delete(a);
        return gone(call);
    }
    t = cJSON_GetObjectItemCaseSensitive(a, "timeout_seconds");
    until =
        now_ms() + (cJSON_IsNumber(t) ? (long long)t->valuedouble : 60) * 1000;
    cJSON_Delete(a);
    while (state_of(&j) == ST_RUNNING && now_ms() < until && rc == RLMCP_OK) {
        rc = api->sleep_ms(call, WAIT_STEP_MS);
        if (rc == RLMCP_OK && !job_get(args, len, &j, NULL))
            return gone(call);
    }
    if (rc != RLMCP_OK)
        return rc;
    return answer_job(call, &j);
}

static int op_cancel(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    struct job j;
    enum job_state st;
    cJSON *o = NULL;

    (void)ud;
    if (!job_get(args, len, &j, NULL))
        return gone(call);
    st = state_of(&j);
    if (st == ST_DONE || st == ST_CANCELLED) {
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status",
                                st == ST_DONE ? "completed" : "cancelled");
        cJSON_AddBoolToObject(o, "already_done", true);
        return answer_json(call, o);
    }
    pthread_mutex_lock(&lock);
    if (jobs[j.id % JOBS_MAX].id == j.id)
        jobs[j.id % JOBS_MAX].cancelled = true;
    pthread_mutex_unlock(&lock);
    return answer_status(call, "killed");
}

/* The text of an elicitation answer: content.confirm or content.name. */
static void answer_text(const cJSON *r, char *out, size_t n)
{
    const cJSON *action = cJSON_GetObjectItemCaseSensitive(r, "action");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(r, "content");
    const cJSON *confirm = cJSON_GetObjectItemCaseSensitive(content, "confirm");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(content, "name");

    if (!cJSON_IsString(action) || strcmp(action->valuestring, "accept") != 0)
        snprintf(out, n, "declined");
    else if (cJSON_IsString(name))
        snprintf(out, n, "%s", name->valuestring);
    else
        snprintf(out, n, "%s", cJSON_IsTrue(confirm) ? "true" : "false");
}

/* Record the answers to inputs the job still waits on; others are ignored. */
static int op_update(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = NULL;
    const cJSON *in = NULL;
    struct job j;
    struct job *live = NULL;
    unsigned i, took = 0;
    cJSON *o = NULL;

    (void)ud;
    if (!job_get(args, len, &j, &a)) {
        cJSON_Delete(a);
        return gone(call);
    }
    in = cJSON_GetObjectItemCaseSensitive(a, "input_responses");
    pthread_mutex_lock(&lock);
    live = &jobs[j.id % JOBS_MAX];
    for (i = 0; live->id == j.id && !live->cancelled && i < live->n_inputs;
         i++) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(in, input_keys[i]);

        if (live->answered[i] || !cJSON_IsObject(r))
            continue;
        answer_text(r, live->answer[i], sizeof(live->answer[i]));
        live->answered[i] = true;
        took++;
    }
    if (live->id == j.id && state_of(live) != ST_INPUT &&
        live->done_ms == LLONG_MAX)
        live->done_ms = now_ms();
    pthread_mutex_unlock(&lock);
    cJSON_Delete(a);
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "accepted", took);
    return answer_json(call, o);
}

/* ---- start ops ----------------------------------------------------------- */

static int started(rlmcp_call *call, unsigned long id)
{
    cJSON *o = cJSON_CreateObject();
    char s[32];

    snprintf(s, sizeof(s), "%lu", id);
    cJSON_AddStringToObject(o, "job", s);
    return answer_json(call, o);
}

/* slow_compute's seconds and label, and its result text. */
static long long slow_args(const char *args, size_t len, char *text, size_t n)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(a, "seconds");
    const cJSON *label = cJSON_GetObjectItemCaseSensitive(a, "label");
    long long s = cJSON_IsNumber(sec) ? (long long)sec->valuedouble : 0;

    snprintf(text, n, "Computed %s in %lld s",
             cJSON_IsString(label) ? label->valuestring : "(unlabelled)", s);
    cJSON_Delete(a);
    return s;
}

static int start_slow(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    char text[256];
    long long s = slow_args(args, len, text, sizeof(text));

    (void)ud;
    return started(call, job_new(JOB_SLOW, now_ms() + s * 1000, 0, text));
}

static int start_failing(rlmcp_call *call, const char *args, size_t len,
                         void *ud)
{
    (void)args, (void)len, (void)ud;
    return started(call, job_new(JOB_FAILING, now_ms() + 1000, 0, NULL));
}

static int start_protocol(rlmcp_call *call, const char *args, size_t len,
                          void *ud)
{
    (void)args, (void)len, (void)ud;
    return started(call, job_new(JOB_PROTOCOL, now_ms() + 300, 0, NULL));
}

static int start_confirm(rlmcp_call *call, const char *args, size_t len,
                         void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(a, "filename");
    unsigned long id = job_new(JOB_CONFIRM, LLONG_MAX, 1,
                               cJSON_IsString(f) ? f->valuestring : "?");

    (void)ud;
    cJSON_Delete(a);
    return started(call, id);
}

static int start_multi(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    (void)args, (void)len, (void)ud;
    return started(call, job_new(JOB_MULTI, LLONG_MAX, 2, NULL));
}

/* Asks for the user's name and words the greeting into text. */
static int ask_name(rlmcp_call *call, char *text, size_t textlen)
{
    cJSON *ans = NULL;
    const cJSON *name = NULL;
    int rc;

    rc = ask_keyed(call, "user_name", "elicitation/create",
                   elicit_params("What is your name?", "name", "string"), &ans);
    if (rc == RLMCP_OK) {
        name = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(ans, "content"), "name");
        snprintf(text, textlen, "Hello, %s!",
                 cJSON_IsString(name) ? name->valuestring : "?");
    }
    cJSON_Delete(ans);
    return rc;
}

/* Ask for the user's name (an input round in 2026-07-28), then the job. */
static int start_greeting(rlmcp_call *call, const char *args, size_t len,
                          void *ud)
{
    char text[256];
    int rc;

    (void)args, (void)len, (void)ud;
    rc = ask_name(call, text, sizeof(text));
    if (rc == RLMCP_OK)
        rc = started(call, job_new(JOB_GREETING, now_ms() + 500, 0, text));
    return rc;
}

/* ---- the tools when not run as tasks ------------------------------------- */

static int t_greet(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(a, "name");
    char text[256];

    (void)ud;
    snprintf(text, sizeof(text), "Hello, %s!",
             cJSON_IsString(name) ? name->valuestring : "?");
    cJSON_Delete(a);
    return api->result_text(call, text);
}

static int t_slow(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    char text[256];
    long long s = slow_args(args, len, text, sizeof(text));
    int rc = RLMCP_OK;

    (void)ud;
    if (s > 0)
        rc = api->sleep_ms(call, (uint32_t)(s * 1000));
    return rc == RLMCP_OK ? api->result_text(call, text) : rc;
}

static int t_failing(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    (void)args, (void)len, (void)ud;
    return api->result_error(call, "invalid_argument",
                             "nothing to fix: this fixture always fails",
                             "failing_job failed, as it always does");
}

static int t_protocol(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    (void)call, (void)args, (void)len, (void)ud;
    return RLMCP_EINTERNAL; /* the host answers an internal error */
}

static int t_confirm(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(a, "filename");
    cJSON *ans = NULL;
    char msg[320];
    char said[128];
    int rc;

    (void)ud;
    snprintf(msg, sizeof(msg), "Delete %s?",
             cJSON_IsString(f) ? f->valuestring : "?");
    rc = ask_keyed(call, input_keys[0], "elicitation/create",
                   elicit_params(msg, "confirm", "boolean"), &ans);
    if (rc == RLMCP_OK) {
        answer_text(ans, said, sizeof(said));
        snprintf(msg, sizeof(msg), "%s %s",
                 strcmp(said, "true") == 0 ? "Deleted" : "Kept",
                 cJSON_IsString(f) ? f->valuestring : "?");
        rc = api->result_text(call, msg);
    }
    cJSON_Delete(a);
    cJSON_Delete(ans);
    return rc;
}

/* Both questions first, so that one round asks for both. */
static int t_multi(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a1 = NULL, *a2 = NULL;
    char s1[128], s2[128], text[300];
    int rc1, rc2;

    (void)args, (void)len, (void)ud;
    rc1 = ask_keyed(
        call, input_keys[0], "elicitation/create",
        elicit_params("Input 1 of 2: what is your name?", "name", "string"),
        &a1);
    rc2 = ask_keyed(
        call, input_keys[1], "elicitation/create",
        elicit_params("Input 2 of 2: what is your name?", "name", "string"),
        &a2);
    if (rc1 == RLMCP_OK && rc2 == RLMCP_OK) {
        answer_text(a1, s1, sizeof(s1));
        answer_text(a2, s2, sizeof(s2));
        snprintf(text, sizeof(text), "Got %s and %s", s1, s2);
        rc1 = api->result_text(call, text);
    }
    cJSON_Delete(a1);
    cJSON_Delete(a2);
    return rc1 != RLMCP_OK ? rc1 : rc2;
}

/* In a session the greeting comes at once (2025-11-25 asks the client). */
static int t_greeting(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    char text[256];
    int rc;

    (void)args, (void)len, (void)ud;
    rc = ask_name(call, text, sizeof(text));
    if (rc == RLMCP_OK)
        rc = api->result_text(call, text);
    return rc;
}

/* ---- registration -------------------------------------------------------- */

struct job_tool {
    const char *name;
    const char *description;
    const char *schema;
    rlmcp_tool_fn fn;
    rlmcp_tool_fn start; /* NULL: never a task */
    uint32_t task_flags;
    uint32_t flags;
};

static const struct job_tool job_tools[] = {
    {"greet", "Says hello to name (never runs as a task)", schema_greet,
     t_greet, NULL, 0, 0},
    {"slow_compute",
     "Computes for the given seconds; runs as a task when the client "
     "declares the tasks extension",
     schema_slow_compute, t_slow, start_slow, 0, RLMCP_TOOL_LONG},
    {"failing_job", "Runs only as a task, which ends with a tool error",
     schema_no_arguments, t_failing, start_failing, RLMCP_TASK_REQUIRED, 0},
    {"protocol_error_job",
     "A task whose work breaks (the task fails with an internal error)",
     schema_no_arguments, t_protocol, start_protocol, 0, 0},
    {"confirm_delete",
     "Asks the user to confirm deleting filename (a task waits for the "
     "answer)",
     schema_confirm_delete, t_confirm, start_confirm, 0, 0},
    {"multi_input", "Asks two questions at once (a task waits for both)",
     schema_no_arguments, t_multi, start_multi, 0, 0},
    {"test_tool_with_task",
     "Asks for the user's name, then greets them from a task (runs only as "
     "a task)",
     schema_no_arguments, t_greeting, start_greeting, RLMCP_TASK_REQUIRED, 0},
};

/* One task definition per tool: its start, the shared ops, its flags. */
static struct rlmcp_task_def task_defs[sizeof(job_tools) / sizeof(*job_tools)];

int jobs_register(rlmcp_plugin *self)
{
    size_t i;

    for (i = 0; i < sizeof(job_tools) / sizeof(*job_tools); i++) {
        const struct job_tool *jt = &job_tools[i];
        struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
        struct rlmcp_task_def *td = &task_defs[i];
        int rc;

        def.name = jt->name;
        def.description = jt->description;
        def.input_schema_json = jt->schema;
        def.handler = jt->fn;
        def.flags = jt->flags;
        if (jt->start != NULL) {
            memset(td, 0, sizeof(*td));
            td->struct_size = sizeof(*td);
            td->start = jt->start;
            td->get = op_get;
            td->wait = op_wait;
            td->cancel = op_cancel;
            td->update = op_update;
            td->flags = jt->task_flags;
            def.task = td;
        }
        rc = api->register_tool(self, &def);
        if (conf_registered(self, rc, "", def.name) != RLMCP_OK)
            return rc;
    }
    return RLMCP_OK;
}
