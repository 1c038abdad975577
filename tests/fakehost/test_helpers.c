/*
 * test_helpers.c - the SDK helper library's tool registration, driven
 * through the fake host: every tool registered with the plugin's data,
 * long-running ones with the long bound, a failure named in the error; the
 * task get and wait ops over a backend's work (rlmcp_h_task_*).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "rlmcp_helpers.h"

static int marker;

static int t_noop(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    (void)args;
    (void)len;
    (void)ud;
    return call != NULL ? RLMCP_OK : RLMCP_EINVAL;
}

#define OBJ "{\"type\":\"object\"}"

static const struct rlmcp_h_tool good[] = {
    {"quick", "Quick", "A quick tool.", OBJ, NULL, NULL, t_noop, false},
    {"slow", "Slow", "A slow tool.", OBJ, OBJ, NULL, t_noop, true},
};

/* The second entry repeats the first name: the host refuses it. */
static const struct rlmcp_h_tool dup[] = {
    {"twice", NULL, "First.", OBJ, NULL, NULL, t_noop, false},
    {"twice", NULL, "Second.", OBJ, NULL, NULL, t_noop, false},
};

static int init_good(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                     void **state_out)
{
    *state_out = &marker;
    return rlmcp_h_register_tools(self, api, good, 2, &marker, 90000);
}

static int init_dup(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                    void **state_out)
{
    *state_out = NULL;
    return rlmcp_h_register_tools(self, api, dup, 2, NULL, 0);
}

static const struct rlmcp_plugin_desc desc_good = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "good",
    .version = "1",
    .description = "registers two tools",
    .init = init_good,
};

static const struct rlmcp_plugin_desc desc_dup = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "dup",
    .version = "1",
    .description = "registers one name twice",
    .init = init_dup,
};

/* ---- the fake host validates as the host does ---- */

static int handler_runs;

static int t_count(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    const struct rlmcp_host_api *api = ud;

    const char *res = "{\"n\":1}";

    handler_runs++;
    if (strstr(args, "\"bad_result\"") != NULL)
        res = "{\"n\":\"x\"}";
    return api->result_json(call, res, strlen(res));
}

#define COUNT_IN                                                               \
    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"     \
    "\"n\":{\"type\":\"integer\",\"minimum\":1},\"bad_result\":{\"type\":"     \
    "\"boolean\"}},\"required\":[\"n\"]}"
#define COUNT_OUT                                                              \
    "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}"

static int init_count(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                      void **state_out)
{
    const struct rlmcp_h_tool tool = {"count",   NULL, "Counts.", COUNT_IN,
                                      COUNT_OUT, NULL, t_count,   false};

    *state_out = NULL;
    return rlmcp_h_register_tools(self, api, &tool, 1, (void *)api, 0);
}

/* A pattern the host's validator refuses: registration fails. */
#define BAD_PATTERN_IN                                                         \
    "{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\","         \
    "\"pattern\":\"(\"}}}"

static int init_bad_pattern(rlmcp_plugin *self,
                            const struct rlmcp_host_api *api, void **state_out)
{
    const struct rlmcp_h_tool tool = {"bad", NULL, "Bad.", BAD_PATTERN_IN,
                                      NULL,  NULL, t_noop, false};

    *state_out = NULL;
    return rlmcp_h_register_tools(self, api, &tool, 1, NULL, 0);
}

static const struct rlmcp_plugin_desc desc_count = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "count",
    .version = "1",
    .description = "one tool with input and output schemas",
    .init = init_count,
};

static const struct rlmcp_plugin_desc desc_bad_pattern = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "bad",
    .version = "1",
    .description = "a schema the host refuses",
    .init = init_bad_pattern,
};

/* Bad arguments get the host's message and never reach the handler. */
static void arguments_validated_like_the_host(void **state)
{
    (void)state;
    handler_runs = 0;
    assert_int_equal(fh_load(&desc_count, "{}"), RLMCP_OK);
    assert_int_equal(fh_call("count", "{\"n\":\"3\"}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_string_equal(fh_error_message(),
                        "arguments.n: expected integer, got string \"3\"");
    fh_reset();
    assert_int_equal(fh_call("count", "{\"n\":1,\"m\":2}"), RLMCP_OK);
    assert_non_null(strstr(fh_error_message(), "unknown property 'm'"));
    fh_reset();
    assert_int_equal(fh_call("count", NULL), RLMCP_OK);
    assert_non_null(
        strstr(fh_error_message(), "missing required property 'n'"));
    fh_reset();
    assert_int_equal(fh_call("count", "[1]"), RLMCP_OK);
    assert_string_equal(fh_error_message(),
                        "arguments must be an object of named parameters");
    fh_reset();
    assert_int_equal(fh_call("count", "{\"n\":"), RLMCP_EINVAL);
    assert_int_equal(handler_runs, 0);
    fh_reset();
    assert_int_equal(fh_call("count", "{\"n\":2}"), RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(handler_runs, 1);
    fh_unload();
}

/* A result outside the outputSchema is the host's internal error. */
static void results_checked_like_the_host(void **state)
{
    (void)state;
    assert_int_equal(fh_load(&desc_count, "{}"), RLMCP_OK);
    assert_int_equal(fh_call("count", "{\"n\":1,\"bad_result\":true}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "internal");
    assert_non_null(strstr(fh_error_message(), "structuredContent.n"));
    fh_unload();
    assert_int_not_equal(fh_load(&desc_bad_pattern, "{}"), RLMCP_OK);
    fh_unload();
}

static long long range_value;

static int init_range(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                      void **state_out)
{
    const char *text = api->config_json(self, NULL);
    cJSON *cfg = cJSON_Parse(text != NULL ? text : "{}");
    bool ok = rlmcp_h_cfg_range(self, api, cfg, "wait_seconds", 600, 1, 86400,
                                &range_value);

    cJSON_Delete(cfg);
    return ok ? RLMCP_OK : RLMCP_EINVAL;
}

static const struct rlmcp_plugin_desc desc_range = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "range",
    .version = "1",
    .description = "reads one bounded integer",
    .init = init_range,
};

/* Default, in range, out of range, wrong type: one message for the last two. */
static void cfg_range(void **state)
{
    (void)state;
    assert_int_equal(fh_load(&desc_range, "{}"), RLMCP_OK);
    assert_int_equal(range_value, 600);
    fh_unload();
    assert_int_equal(fh_load(&desc_range, "{\"wait_seconds\":86400}"),
                     RLMCP_OK);
    assert_int_equal(range_value, 86400);
    fh_unload();
    assert_int_not_equal(fh_load(&desc_range, "{\"wait_seconds\":0}"),
                         RLMCP_OK);
    assert_string_equal(fh_init_error(),
                        "config wait_seconds must be an integer 1-86400");
    fh_unload();
    assert_int_not_equal(fh_load(&desc_range, "{\"wait_seconds\":\"9\"}"),
                         RLMCP_OK);
    assert_string_equal(fh_init_error(),
                        "config wait_seconds must be an integer 1-86400");
    fh_unload();
}

static void registers_all(void **state)
{
    const struct rlmcp_tool_def *q = NULL;
    const struct rlmcp_tool_def *s = NULL;

    (void)state;
    assert_int_equal(fh_load(&desc_good, "{}"), RLMCP_OK);
    assert_int_equal(fh_tool_count(), 2);
    q = fh_tool("quick");
    s = fh_tool("slow");
    assert_non_null(q);
    assert_non_null(s);
    assert_string_equal(q->title, "Quick");
    assert_string_equal(q->description, "A quick tool.");
    assert_string_equal(s->output_schema_json, OBJ);
    assert_ptr_equal(q->user_data, &marker);
    assert_ptr_equal(s->user_data, &marker);
    assert_int_equal(q->timeout_ms, 0); /* the host's default */
    assert_int_equal(s->timeout_ms, 90000);
    assert_int_equal(fh_call("quick", "{}"), RLMCP_OK);
    fh_unload();
}

static void failure_names_tool(void **state)
{
    (void)state;
    assert_int_not_equal(fh_load(&desc_dup, "{}"), RLMCP_OK);
    assert_non_null(fh_init_error());
    assert_non_null(strstr(fh_init_error(), "registering twice failed"));
    fh_unload();
}

/* ---- task ops over the backend's work ---- */

static int work_read(const struct rlmcp_h *h, void *user, const char *id,
                     cJSON **state)
{
    char *path = rlmcp_h_sprintf("/v1/works/%s", id);
    int rc = path != NULL ? rlmcp_h_request(h, "GET", path, NULL, NULL,
                                            "the work", state)
                          : RLMCP_ENOMEM;

    assert_ptr_equal(user, &marker);
    free(path);
    return rc;
}

static bool work_ended(const cJSON *state, void *user)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(state, "status");

    assert_ptr_equal(user, &marker);
    return cJSON_IsString(st) && strcmp(st->valuestring, "done") == 0;
}

static int work_answer(const struct rlmcp_h *h, void *user, const char *id,
                       const cJSON *state)
{
    cJSON *res = cJSON_Duplicate(state, true);
    int rc = RLMCP_ENOMEM;

    assert_ptr_equal(user, &marker);
    if (res != NULL && cJSON_AddStringToObject(res, "id", id) != NULL)
        rc = rlmcp_h_result_json(h, res);
    cJSON_Delete(res);
    return rc;
}

static const struct rlmcp_h_task_ops work_ops = {
    .id_arg = "work_id",
    .max_wait_s = 600,
    .read = work_read,
    .ended = work_ended,
    .answer = work_answer,
};

static const struct rlmcp_host_api *work_api;

static int work_get(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct rlmcp_h h = {work_api, call};

    return rlmcp_h_ret(rlmcp_h_task_get(&h, &work_ops, ud, aj, al));
}

static int work_wait(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct rlmcp_h h = {work_api, call};

    return rlmcp_h_ret(rlmcp_h_task_wait(&h, &work_ops, ud, aj, al, 10));
}

static const struct rlmcp_task_def work_task = {
    .struct_size = sizeof(struct rlmcp_task_def),
    .start = t_noop,
    .get = work_get,
    .wait = work_wait,
    .cancel = t_noop,
};

static int init_work(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                     void **state_out)
{
    const struct rlmcp_h_tool tool = {"work", NULL, "Works.", OBJ,
                                      NULL,   NULL, t_noop,   true};

    work_api = api;
    *state_out = NULL;
    return rlmcp_h_register_task_tool(self, api, &tool, &work_task, &marker,
                                      60000, true);
}

static const struct rlmcp_plugin_desc desc_work = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "work",
    .version = "1",
    .description = "one tool that runs as a task",
    .init = init_work,
};

#define WORKING "{\"status\":\"working\"}"
#define DONE "{\"status\":\"done\",\"n\":7}"

static const char *result_str(const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(fh_result(), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* get reads once and answers the state, ended or not. */
static void task_get_reads_once(void **state)
{
    (void)state;
    assert_int_equal(fh_load(&desc_work, "{}"), RLMCP_OK);
    fh_route_n("GET", "/v1/works/w_1", 200, WORKING, 1);
    fh_route("GET", "/v1/works/w_1", 200, DONE);
    assert_int_equal(fh_call_op("work", "get", "{\"work_id\":\"w_1\"}"),
                     RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(result_str("status"), "working");
    assert_string_equal(result_str("id"), "w_1");
    assert_int_equal(fh_count_requests("GET", "/v1/works/"), 1);
    fh_reset();
    /* A bad handle is the caller's error; nothing is read. */
    assert_int_equal(fh_call_op("work", "get", "{\"work_id\":\"a/b\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "work_id"));
    assert_int_equal(fh_count_requests("GET", "/v1/works/"), 0);
    fh_unload();
}

/* wait polls until the work ended and answers the last state read. */
static void task_wait_polls_to_the_end(void **state)
{
    (void)state;
    assert_int_equal(fh_load(&desc_work, "{}"), RLMCP_OK);
    fh_route_n("GET", "/v1/works/w_2", 200, WORKING, 3);
    fh_route("GET", "/v1/works/w_2", 200, DONE);
    assert_int_equal(
        fh_call_op("work", "wait",
                   "{\"work_id\":\"w_2\",\"timeout_seconds\":600}"),
        RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(result_str("status"), "done");
    assert_int_equal(fh_count_requests("GET", "/v1/works/w_2"), 4);
    fh_reset();
    /* timeout_seconds above max_wait_s is refused before any read. */
    assert_int_equal(
        fh_call_op("work", "wait",
                   "{\"work_id\":\"w_2\",\"timeout_seconds\":601}"),
        RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_non_null(strstr(fh_error_message(), "timeout_seconds"));
    assert_int_equal(fh_count_requests("GET", "/v1/works/"), 0);
    fh_reset();
    /* A failed read is reported as the read reported it; no answer. */
    fh_route("GET", "/v1/works/w_3", 404, "{\"message\":\"no such work\"}");
    assert_int_equal(fh_call_op("work", "wait", "{\"work_id\":\"w_3\"}"),
                     RLMCP_OK);
    assert_string_equal(fh_error_code(), "not_found");
    assert_null(fh_result());
    fh_unload();
}

/* A wait whose call is cancelled stops polling and answers nothing. */
static void task_wait_cancelled(void **state)
{
    (void)state;
    assert_int_equal(fh_load(&desc_work, "{}"), RLMCP_OK);
    fh_route_n("GET", "/v1/works/w_4", 200, WORKING, 0);
    fh_cancel_after(2);
    assert_int_equal(fh_call_op("work", "wait", "{\"work_id\":\"w_4\"}"),
                     RLMCP_ECANCELLED);
    assert_null(fh_result());
    assert_int_equal(fh_count_requests("GET", "/v1/works/w_4"), 2);
    fh_unload();
}

/* ---- a delete tool over one id ---- */

static int t_drop(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct rlmcp_h h = {work_api, call};

    return rlmcp_h_ret(rlmcp_h_delete_by_id(
        &h, aj, al, "thing_id", "/v1/things/", "/delete", "deleting thing"));
}

static int init_drop(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                     void **state_out)
{
    const struct rlmcp_h_tool tool = {"drop", NULL, "Drops.", OBJ,
                                      NULL,   NULL, t_drop,   false};

    work_api = api;
    *state_out = NULL;
    return rlmcp_h_register_tools(self, api, &tool, 1, NULL, 0);
}

static const struct rlmcp_plugin_desc desc_drop = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "drop",
    .version = "1",
    .description = "one delete tool",
    .init = init_drop,
};

/* POST on the id's path, {<id_arg>, deleted}; a refusal names the id. */
static void delete_by_id(void **state)
{
    (void)state;
    assert_int_equal(fh_load(&desc_drop, "{}"), RLMCP_OK);
    fh_route("POST", "/v1/things/th_1/delete", 200, "");
    assert_int_equal(fh_call("drop", "{\"thing_id\":\"th_1\"}"), RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(result_str("thing_id"), "th_1");
    assert_true(
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(fh_result(), "deleted")));
    assert_null(fh_request_at(0)->body);
    fh_reset();
    fh_route("POST", "/v1/things/th_2/delete", 409, "{\"message\":\"in use\"}");
    assert_int_equal(fh_call("drop", "{\"thing_id\":\"th_2\"}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "conflict");
    assert_non_null(strstr(fh_error_message(), "deleting thing th_2"));
    assert_null(fh_result());
    fh_reset();
    assert_int_equal(fh_call("drop", "{\"thing_id\":\"../x\"}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), "invalid_argument");
    assert_int_equal(fh_request_count(), 0);
    fh_unload();
}

/* ---- a transport code reported by rlmcp_h_fail_rc ---- */

static int t_too_big(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    struct rlmcp_h h = {ud, call};

    (void)args;
    (void)len;
    return rlmcp_h_ret(rlmcp_h_fail_rc(&h, RLMCP_ETOOBIG, "reading x"));
}

static int init_too_big(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                        void **state_out)
{
    const struct rlmcp_h_tool tool = {"too_big", NULL, "Fails.",  OBJ,
                                      NULL,      NULL, t_too_big, false};

    *state_out = NULL;
    return rlmcp_h_register_tools(self, api, &tool, 1, (void *)api, 0);
}

static const struct rlmcp_plugin_desc desc_too_big = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "too_big",
    .version = "1",
    .description = "one tool failing with RLMCP_ETOOBIG",
    .init = init_too_big,
};

/* A message over its limit is the input's size: too_large, with a way out. */
static void too_big_is_too_large(void **state)
{
    (void)state;
    assert_int_equal(fh_load(&desc_too_big, "{}"), RLMCP_OK);
    assert_int_equal(fh_call("too_big", "{}"), RLMCP_OK);
    assert_string_equal(fh_error_code(), RLMCP_ERR_TOO_LARGE);
    assert_non_null(strstr(fh_error_message(), "reading x: a message was "
                                               "larger than this server's "
                                               "limit"));
    assert_non_null(strstr(fh_error_remedy(), "Ask for less at a time"));
    fh_unload();
}

/* ---- integer arguments: range before conversion ---- */

static long long int_seen;

static int t_int(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    struct rlmcp_h h = {ud, call};
    cJSON *root = cJSON_ParseWithLength(args, len);
    int rc = rlmcp_h_arg_int(&h, root, "n", true, -5, 10, &int_seen);

    cJSON_Delete(root);
    return rlmcp_h_ret(rc);
}

static int init_int(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                    void **state_out)
{
    const struct rlmcp_h_tool tool = {"int_arg", NULL, "Reads n.", OBJ,
                                      NULL,      NULL, t_int,      false};

    *state_out = NULL;
    return rlmcp_h_register_tools(self, api, &tool, 1, (void *)api, 0);
}

static const struct rlmcp_plugin_desc desc_int = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "int_arg",
    .version = "1",
    .description = "one tool reading an integer argument",
    .init = init_int,
};

/* Values beyond long long (whose conversion would be undefined) are out of
 * range, named as sent; a fraction inside the range is not an integer. */
static void int_argument_range_first(void **state)
{
    static const struct {
        const char *args;
        const char *message; /* NULL: accepted */
        long long value;
    } cases[] = {
        {"{\"n\":7}", NULL, 7},
        {"{\"n\":-5}", NULL, -5},
        {"{\"n\":1e300}", "must be between -5 and 10 (got 1e+300)", 0},
        {"{\"n\":-1e300}", "must be between -5 and 10 (got -1e+300)", 0},
        {"{\"n\":9223372036854775808}", "must be between -5 and 10", 0},
        {"{\"n\":11}", "must be between -5 and 10 (got 11)", 0},
        {"{\"n\":1.5}", "argument 'n' must be an integer", 0},
        {"{\"n\":\"3\"}", "argument 'n' must be an integer", 0},
    };
    size_t i;

    (void)state;
    assert_int_equal(fh_load(&desc_int, "{}"), RLMCP_OK);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int_seen = 0;
        assert_int_equal(fh_call("int_arg", cases[i].args), RLMCP_OK);
        if (cases[i].message == NULL) {
            assert_null(fh_error_code());
            assert_int_equal(int_seen, cases[i].value);
        } else {
            assert_string_equal(fh_error_code(), RLMCP_ERR_INVALID_ARGUMENT);
            if (strstr(fh_error_message(), cases[i].message) == NULL)
                fail_msg("%s: \"%s\" lacks \"%s\"", cases[i].args,
                         fh_error_message(), cases[i].message);
        }
    }
    fh_unload();
}

/* ---- the first tool with task ops, the rest plain ---- */

static const char *const pair_waiting[] = {"pair_main", NULL};

static int init_pair(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                     void **state_out)
{
    static const struct rlmcp_h_tool tools[] = {
        {"pair_main", NULL, "Starts.", OBJ, NULL, NULL, t_noop, true},
        {"pair_other", NULL, "Reads.", OBJ, NULL, NULL, t_noop, false},
    };

    *state_out = NULL;
    return rlmcp_h_register_tools_task(self, api, tools, 2, &work_task, &marker,
                                       45000, pair_waiting);
}

static const struct rlmcp_plugin_desc desc_pair = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "pair",
    .version = "1",
    .description = "a task tool and a plain one",
    .init = init_pair,
};

static void registers_first_as_task(void **state)
{
    const struct rlmcp_tool_def *m = NULL;
    const struct rlmcp_tool_def *o = NULL;

    (void)state;
    assert_int_equal(fh_load(&desc_pair, "{}"), RLMCP_OK);
    m = fh_tool("pair_main");
    o = fh_tool("pair_other");
    assert_non_null(m);
    assert_non_null(o);
    assert_ptr_equal(m->task, &work_task);
    assert_null(o->task);
    assert_int_equal(m->flags & RLMCP_TOOL_LONG, RLMCP_TOOL_LONG);
    assert_int_equal(o->flags & RLMCP_TOOL_LONG, 0);
    assert_int_equal(m->timeout_ms, 45000);
    assert_int_equal(o->timeout_ms, 0);
    assert_ptr_equal(m->user_data, &marker);
    assert_ptr_equal(o->user_data, &marker);
    fh_unload();
}

/* A not_found sends the agent to the tool listing that kind of object,
 * never to list_devboxes for a snapshot or a secret. */
static void not_found_names_the_kind(void **state)
{
    static const struct {
        const char *message;
        const char *tool;
    } cases[] = {
        {"snapshot snp_1: Runloop API answered HTTP 404: snapshot snp_1 not "
         "found",
         "list_snapshots"},
        {"execution exe_1 on devbox dbx_1: Runloop API answered HTTP 404: "
         "not found",
         "list_executions"},
        {"blueprint_id bpt_1 does not exist", "list_blueprints"},
        {"deleting secret API_KEY: Runloop API answered HTTP 404: secret "
         "API_KEY not found",
         "list_secrets"},
        {"updating MCP config mcp_1: Runloop API answered HTTP 404",
         "list_mcp_configs"},
        {"devbox dbx_1 does not exist", "list_devboxes"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *r =
            rlmcp_h_remedy_for(RLMCP_ERR_NOT_FOUND, cases[i].message);

        assert_non_null(strstr(r, cases[i].tool));
        if (strcmp(cases[i].tool, "list_devboxes") != 0)
            assert_null(strstr(r, "devboxes"));
    }
    /* Nothing recognisable: no tool named, no devbox assumed. */
    assert_null(strstr(
        rlmcp_h_remedy_for(RLMCP_ERR_NOT_FOUND, "thing x is gone"), "list_"));
    /* Other codes keep their default; a conflict no longer says force. */
    assert_string_equal(rlmcp_h_remedy_for(RLMCP_ERR_CONFLICT, "devbox x"),
                        rlmcp_h_remedy_for_code(RLMCP_ERR_CONFLICT));
    assert_null(strstr(rlmcp_h_remedy_for_code(RLMCP_ERR_CONFLICT), "force"));
    assert_non_null(strstr(rlmcp_h_remedy_for_code(RLMCP_ERR_CONFLICT),
                           "pick another name"));
}

/* ---- run a command and wait for it ---- */

static uint64_t ew_bound_ms;
static bool ew_custom;
static int ew_refusals;  /* calls of the custom refusal, waiting ones * 10 */
static bool ew_discard;  /* the tool discards dbx_1 instead */
static uint64_t ew_left; /* rlmcp_h_time_left_ms(h, 2000) in the call */

static int ew_refused(const struct rlmcp_h *h, const char *id, long status,
                      const char *msg, bool waiting, void *ud)
{
    int *n = ud;

    *n += waiting ? 10 : 1;
    return rlmcp_h_fail(h, RLMCP_ERR_UNAVAILABLE, "thing %s said %ld: %s", id,
                        status, msg != NULL ? msg : "-");
}

static int t_ew(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct rlmcp_h h = {work_api, call};
    const struct rlmcp_h_exec_wait dflt = {"the test step", NULL, NULL};
    const struct rlmcp_h_exec_wait custom = {"the test step", ew_refused,
                                             &ew_refusals};
    cJSON *view = NULL;
    int rc;

    (void)aj;
    (void)al;
    (void)ud;
    ew_left = rlmcp_h_time_left_ms(&h, 2000);
    if (ew_discard) {
        rlmcp_h_devbox_discard(&h, "dbx_1");
        return RLMCP_OK;
    }
    rc = rlmcp_h_exec_wait(&h, "dbx_1", "echo hi",
                           rlmcp_h_now_ms() + ew_bound_ms,
                           ew_custom ? &custom : &dflt, &view);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_json(&h, view);
    cJSON_Delete(view);
    return rlmcp_h_ret(rc);
}

static int init_ew(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                   void **state_out)
{
    const struct rlmcp_h_tool tool = {"ew", NULL, "Runs.", OBJ,
                                      NULL, NULL, t_ew,    true};

    work_api = api;
    *state_out = NULL;
    return rlmcp_h_register_tools(self, api, &tool, 1, NULL, 0);
}

static const struct rlmcp_plugin_desc desc_ew = {
    .abi_major = RLMCP_ABI_MAJOR,
    .abi_minor = RLMCP_TARGET_ABI_MINOR,
    .struct_size = sizeof(struct rlmcp_plugin_desc),
    .name = "ew",
    .version = "1",
    .description = "one tool that runs a command and waits",
    .init = init_ew,
};

#define EW_EXEC "/v1/devboxes/dbx_1/execute?last_n=20"
#define EW_WAIT "/v1/devboxes/dbx_1/executions/exe_1/wait_for_status?last_n=20"
#define EW_RUNNING "{\"execution_id\":\"exe_1\",\"status\":\"running\"}"
#define EW_DONE                                                                \
    "{\"execution_id\":\"exe_1\",\"status\":\"completed\",\"exit_status\":0,"  \
    "\"stdout\":\"hi\\n\"}"

/* The command with the time left as its optimistic wait, then long polls;
 * an early 408 is a pause of a second, not a request at once. */
static void exec_wait_runs_and_waits(void **state)
{
    cJSON *sent = NULL;

    (void)state;
    assert_int_equal(fh_load(&desc_ew, "{}"), RLMCP_OK);
    fh_use_fake_clock(true);
    ew_custom = false;
    ew_bound_ms = 60000;
    fh_route("POST", EW_EXEC, 200, EW_RUNNING);
    fh_route_n("POST", EW_WAIT, 408, "{\"message\":\"not yet\"}", 2);
    fh_route("POST", EW_WAIT, 200, EW_DONE);
    assert_int_equal(fh_call("ew", NULL), RLMCP_OK);
    assert_null(fh_error_code());
    assert_string_equal(result_str("stdout"), "hi\n");
    sent = fh_request_json(fh_find_request("POST", EW_EXEC));
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(sent, "command")), "echo hi");
    assert_int_equal(cJSON_GetObjectItem(sent, "optimistic_timeout")->valueint,
                     25);
    assert_int_equal(fh_count_requests("POST", EW_WAIT), 3);
    assert_int_equal(fh_sleep_count(), 2);
    assert_int_equal(fh_sleep_at(0), 1000);

    /* 408s until the bound: a timeout naming the execution and devbox,
     * after about one request a second, not a busy loop. */
    fh_reset();
    ew_bound_ms = 10000;
    fh_route("POST", EW_EXEC, 200, EW_RUNNING);
    fh_route_n("POST", EW_WAIT, 408, "{\"message\":\"not yet\"}", 0);
    assert_int_equal(fh_call("ew", NULL), RLMCP_OK);
    assert_string_equal(fh_error_code(), "timeout");
    assert_non_null(strstr(fh_error_message(),
                           "the test step did not finish in time (execution "
                           "exe_1 in devbox dbx_1)"));
    assert_true(fh_count_requests("POST", EW_WAIT) <= 12);
    assert_null(fh_result());
    fh_use_fake_clock(false);
    fh_unload();
}

/* A refusal: by default explained by the devbox (its state looked up);
 * with a refused callback, that callback's report, told which request. */
static void exec_wait_refusals(void **state)
{
    (void)state;
    assert_int_equal(fh_load(&desc_ew, "{}"), RLMCP_OK);
    ew_bound_ms = 60000;
    ew_custom = false;
    fh_route("POST", EW_EXEC, 404, "{\"message\":\"no devbox\"}");
    fh_route("GET", "/v1/devboxes/dbx_1", 404, "{\"message\":\"no devbox\"}");
    assert_int_equal(fh_call("ew", NULL), RLMCP_OK);
    assert_string_equal(fh_error_code(), "not_found");
    assert_int_equal(fh_count_requests("GET", "/v1/devboxes/dbx_1"), 1);

    fh_reset();
    ew_custom = true;
    ew_refusals = 0;
    fh_route("POST", EW_EXEC, 400, "{\"message\":\"devbox is suspended\"}");
    assert_int_equal(fh_call("ew", NULL), RLMCP_OK);
    assert_int_equal(ew_refusals, 1);
    assert_string_equal(fh_error_code(), "unavailable");
    assert_non_null(strstr(fh_error_message(),
                           "thing dbx_1 said 400: devbox is suspended"));

    fh_reset();
    ew_refusals = 0;
    fh_route("POST", EW_EXEC, 200, EW_RUNNING);
    fh_route("POST", EW_WAIT, 404, "{\"message\":\"no execution\"}");
    assert_int_equal(fh_call("ew", NULL), RLMCP_OK);
    assert_int_equal(ew_refusals, 10);
    assert_non_null(strstr(fh_error_message(), "said 404: no execution"));
    assert_null(fh_result());
    fh_unload();
}

/* A discard is sent even for a cancelled call and reports nothing; the
 * time left is the deadline less the margin, a day without one. */
static void discard_and_time_left(void **state)
{
    char *line = NULL;

    (void)state;
    assert_int_equal(fh_load(&desc_ew, "{}"), RLMCP_OK);
    ew_discard = true;
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 409,
             "{\"message\":\"already shut down\"}");
    fh_set_deadline_ms(rlmcp_h_now_ms() + 30000);
    assert_int_equal(fh_call("ew", NULL), RLMCP_OK);
    assert_null(fh_error_code());
    assert_int_equal(fh_count_requests("POST", "/v1/devboxes/dbx_1/shutdown"),
                     1);
    assert_true(ew_left <= 28000 && ew_left > 20000);
    assert_true(fh_find_request("POST", "/v1/devboxes/dbx_1/shutdown")->flags &
                RLMCP_HTTP_IGNORE_CANCEL);
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 200, "{}");
    fh_set_deadline_ms(rlmcp_h_now_ms() + 1000);
    assert_int_equal(fh_call("ew", NULL), RLMCP_OK);
    assert_int_equal(ew_left, 0);
    fh_reset();
    fh_route("POST", "/v1/devboxes/dbx_1/shutdown", 200, "{}");
    assert_int_equal(fh_call("ew", NULL), RLMCP_OK);
    assert_int_equal(ew_left, 86400000u);
    ew_discard = false;
    fh_unload();

    line = rlmcp_h_last_line("one\ntwo\r\n\n");
    assert_string_equal(line, "two");
    free(line);
    line = rlmcp_h_last_line(NULL);
    assert_string_equal(line, "");
    free(line);
    line = rlmcp_h_last_line("only");
    assert_string_equal(line, "only");
    free(line);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(not_found_names_the_kind),
        cmocka_unit_test(registers_all),
        cmocka_unit_test(failure_names_tool),
        cmocka_unit_test(cfg_range),
        cmocka_unit_test(arguments_validated_like_the_host),
        cmocka_unit_test(results_checked_like_the_host),
        cmocka_unit_test(task_get_reads_once),
        cmocka_unit_test(task_wait_polls_to_the_end),
        cmocka_unit_test(task_wait_cancelled),
        cmocka_unit_test(delete_by_id),
        cmocka_unit_test(too_big_is_too_large),
        cmocka_unit_test(int_argument_range_first),
        cmocka_unit_test(registers_first_as_task),
        cmocka_unit_test(exec_wait_runs_and_waits),
        cmocka_unit_test(exec_wait_refusals),
        cmocka_unit_test(discard_and_time_left),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
