/*
 * hello - a complete runloop-mcp plugin, for plugin authors to copy.
 *
 * One tool, `hello`, that greets someone. It shows the parts most tools
 * need: reading the plugin's own config section, an input schema, an
 * output schema with structured results, annotations, progress, polling
 * for cancellation, and business errors the model can act on. It reads
 * its arguments and sets its result with the SDK's helper library
 * (rlmcp/rlmcp_helpers.h, linked statically: rlmcp-helpers.pc or
 * rlmcp::helpers).
 *
 * Deployment:
 *   plugins:
 *     - name: hello
 *       config: {greeting: Hi}      # optional, default "Hello"
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <rlmcp/plugin.h>
#include <rlmcp/rlmcp_helpers.h>

struct hello_state {
    const struct rlmcp_host_api *api;
    rlmcp_plugin *self;
    char greeting[64];
};

static const char input_schema[] =
    "{\"type\":\"object\","
    "\"properties\":{"
    "\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":100,"
    "\"description\":\"Who to greet; default 'world'\"},"
    "\"steps\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,"
    "\"description\":\"Progress steps to report (default 1)\"},"
    "\"step_ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10000,"
    "\"description\":\"Pause per step in milliseconds (default 0)\"}},"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\","
    "\"properties\":{\"greeting\":{\"type\":\"string\"},"
    "\"steps\":{\"type\":\"integer\"}},"
    "\"required\":[\"greeting\",\"steps\"]}";

static const char annotations[] =
    "{\"title\":\"Say hello\",\"readOnlyHint\":true,"
    "\"destructiveHint\":false,\"idempotentHint\":true,"
    "\"openWorldHint\":false}";

static int hello_call(rlmcp_call *call, const char *args_json, size_t args_len,
                      void *user_data)
{
    struct hello_state *st = user_data;
    struct rlmcp_h h = {st->api, call};
    cJSON *args = NULL;
    cJSON *out = NULL;
    const char *name = "world";
    char greeting[256];
    long long steps = 1;
    long long step_ms = 0;
    long long i = 0;
    int rc = RLMCP_OK;

    /* The host checked the arguments against input_schema already; the
     * getters read them typed, with the defaults above when absent. */
    rc = rlmcp_h_args(&h, args_json, args_len, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "name", false, &name);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "steps", false, 1, 100, &steps);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "step_ms", false, 0, 10000, &step_ms);
    if (rc != RLMCP_OK)
        goto out;
    if (strcmp(name, "nobody") == 0) {
        /* A business failure: the model sees it and can try again. */
        rc = rlmcp_h_fail_remedy(&h, RLMCP_ERR_INVALID_ARGUMENT,
                                 "pass the name of someone to greet",
                                 "cannot greet nobody");
        goto out;
    }
    for (i = 1; i <= steps; i++) {
        st->api->progress(call, (double)i, (double)steps,
                          "composing the greeting");
        if (step_ms > 0 &&
            st->api->sleep_ms(call, (uint32_t)step_ms) != RLMCP_OK) {
            rc = RLMCP_ECANCELLED; /* the host sends nothing more */
            goto out;
        }
    }
    snprintf(greeting, sizeof(greeting), "%s, %s!", st->greeting, name);
    out = cJSON_CreateObject();
    if (out == NULL || !cJSON_AddStringToObject(out, "greeting", greeting) ||
        !cJSON_AddNumberToObject(out, "steps", (double)steps)) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    /* structuredContent; the host mirrors it as a text block. */
    rc = rlmcp_h_result_json(&h, out);
out:
    cJSON_Delete(out);
    cJSON_Delete(args);
    /* RLMCP_H_REPORTED (an error result is set) returns RLMCP_OK. */
    return rlmcp_h_ret(rc);
}

static int read_config(struct hello_state *st)
{
    size_t len = 0;
    const char *json = st->api->config_json(st->self, &len);
    cJSON *cfg = cJSON_ParseWithLength(json, len);
    const cJSON *g = NULL;
    int rc = RLMCP_OK;

    snprintf(st->greeting, sizeof(st->greeting), "Hello");
    if (cfg == NULL)
        return RLMCP_ENOMEM;
    cJSON_ArrayForEach(g, cfg)
    {
        if (strcmp(g->string, "greeting") != 0) {
            st->api->set_error(st->self,
                               "unknown config key '%s' (allowed: greeting)",
                               g->string);
            rc = RLMCP_EINVAL;
            goto out;
        }
        if (!cJSON_IsString(g) || strlen(g->valuestring) == 0 ||
            strlen(g->valuestring) >= sizeof(st->greeting)) {
            st->api->set_error(
                st->self,
                "config 'greeting' must be a string of 1-63 characters");
            rc = RLMCP_EINVAL;
            goto out;
        }
        snprintf(st->greeting, sizeof(st->greeting), "%s", g->valuestring);
    }
out:
    cJSON_Delete(cfg);
    return rc;
}

static int hello_init(rlmcp_plugin *self, const struct rlmcp_host_api *api,
                      void **state_out)
{
    struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
    struct hello_state *st = api->calloc(1, sizeof(*st));
    int rc = RLMCP_OK;

    if (st == NULL)
        return RLMCP_ENOMEM;
    st->api = api;
    st->self = self;
    rc = read_config(st);
    if (rc != RLMCP_OK)
        goto fail;
    def.name = "hello";
    def.title = "Say hello";
    def.description = "Greet someone by name. Returns {greeting, steps}.";
    def.input_schema_json = input_schema;
    def.output_schema_json = output_schema;
    def.annotations_json = annotations;
    def.handler = hello_call;
    def.user_data = st;
    rc = api->register_tool(self, &def);
    if (rc != RLMCP_OK)
        goto fail;
    api->log(self, RLMCP_LOG_DEBUG, "ready, greeting '%s'", st->greeting);
    *state_out = st;
    return RLMCP_OK;
fail:
    api->free(st);
    return rc;
}

static void hello_shutdown(rlmcp_plugin *self, void *state)
{
    struct hello_state *st = state;

    (void)self;
    if (st != NULL)
        st->api->free(st);
}

RLMCP_PLUGIN_DEFINE("hello", "1.0.0", "Example plugin: a hello tool",
                    hello_init, hello_shutdown)
