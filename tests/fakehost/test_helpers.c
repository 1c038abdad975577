/*
 * test_helpers.c - the SDK helper library's tool registration, driven
 * through the fake host: every tool registered with the plugin's data,
 * long-running ones with the long bound, a failure named in the error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registers_all),
        cmocka_unit_test(failure_names_tool),
        cmocka_unit_test(cfg_range),
        cmocka_unit_test(arguments_validated_like_the_host),
        cmocka_unit_test(results_checked_like_the_host),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
