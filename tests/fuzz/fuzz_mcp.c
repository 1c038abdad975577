/*
 * fuzz_mcp.c - the dispatcher's message handling (mcp_handle) on arbitrary
 * input, with a registry of tools whose schemas use most keywords.
 *
 * Input: one inbound message (any bytes). The session is initialized once,
 * so tools/call reaches argument validation. Checks: nothing crashes or
 * leaks; every message the dispatcher sends is one JSON object; each input
 * finishes (no call left running).
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "call.h"
#include "fuzz_util.h"
#include "log.h"
#include "mcp.h"
#include "registry.h"

static struct registry *g_reg;
static struct mcp_dispatcher *g_d;
static struct mcp_session *g_s;

static void sink_send(struct mcp_sink *sink, const char *json, size_t len,
                      bool final)
{
    cJSON *v = NULL;

    if (json == NULL) {
        FUZZ_REQUIRE(final, "a NULL message that is not final");
        return;
    }
    v = cJSON_ParseWithLength(json, len);
    FUZZ_REQUIRE(cJSON_IsObject(v),
                 "sent something other than a JSON "
                 "object: %.*s",
                 (int)(len > 300 ? 300 : len), json);
    cJSON_Delete(v);
}

static void sink_noop(struct mcp_sink *sink)
{
}

static struct mcp_sink g_sink = {sink_send, sink_noop, sink_noop};

static int h_echo(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    char *text = cJSON_PrintUnformatted(a);
    int rc = call_result_text(call, text != NULL ? text : "?");

    cJSON_free(text);
    cJSON_Delete(a);
    return rc;
}

static const char *const schemas[][2] = {
    {"echo", "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
             "\"string\",\"maxLength\":100}},\"required\":[\"text\"],"
             "\"additionalProperties\":false}"},
    {"exec", "{\"type\":\"object\",\"$defs\":{\"id\":{\"type\":\"string\","
             "\"pattern\":\"^dbx_[A-Za-z0-9]+$\"}},\"properties\":{"
             "\"devbox_id\":{\"$ref\":\"#/$defs/id\"},"
             "\"command\":{\"type\":\"string\",\"minLength\":1},"
             "\"timeout_seconds\":{\"type\":\"integer\",\"minimum\":1,"
             "\"maximum\":3600},\"env\":{\"type\":\"object\","
             "\"additionalProperties\":{\"type\":\"string\"}},"
             "\"shell\":{\"enum\":[\"bash\",\"sh\"]},"
             "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
             "\"uniqueItems\":true,\"maxItems\":5},"
             "\"mode\":{\"oneOf\":[{\"const\":\"a\"},{\"type\":\"integer\"}]}},"
             "\"required\":[\"command\"],\"additionalProperties\":false}"},
    {"tree", "{\"type\":\"object\",\"$defs\":{\"n\":{\"type\":\"object\","
             "\"properties\":{\"kids\":{\"type\":\"array\",\"items\":"
             "{\"$ref\":\"#/$defs/n\"}}}}},\"properties\":{\"root\":"
             "{\"$ref\":\"#/$defs/n\"}}}"},
};

static void setup(void)
{
    struct mcp_options o;
    char err[512] = "";
    size_t i;
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
        "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
        "\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}";
    static const char inited[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

    log_set_level(RLMCP_LOG_EMERGENCY); /* the fuzzer's output stays clean */
    g_reg = registry_new();
    FUZZ_REQUIRE(g_reg != NULL, "registry_new");
    for (i = 0; i < sizeof(schemas) / sizeof(schemas[0]); i++) {
        struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
        def.name = schemas[i][0];
        def.description = "fuzz tool";
        def.input_schema_json = schemas[i][1];
        def.handler = h_echo;
        FUZZ_REQUIRE(registry_add_tool(g_reg, NULL, "fuzz", &def, err,
                                       sizeof(err)) == RLMCP_OK,
                     "%s", err);
    }
    FUZZ_REQUIRE(registry_select(g_reg, NULL, "fuzz", false, 5000, err,
                                 sizeof(err)) == 0,
                 "%s", err);
    memset(&o, 0, sizeof(o));
    o.server_name = "fuzz";
    o.server_version = "0";
    o.workers = 2;
    o.max_message_bytes = 1 << 20;
    g_d = mcp_create(&o, g_reg);
    g_s = mcp_session_new(g_d);
    FUZZ_REQUIRE(g_d != NULL && g_s != NULL, "mcp_create");
    mcp_handle(g_d, g_s, init, strlen(init), &g_sink, NULL);
    mcp_handle(g_d, g_s, inited, strlen(inited), &g_sink, NULL);
}

static void teardown(void)
{
    mcp_session_free(g_s);
    mcp_destroy(g_d);
    registry_free(g_reg);
}

/* Wait for the input's calls: each one must end (bounded, 10 s). */
static void settle(void)
{
    struct timespec pause = {0, 100000};
    int i;

    for (i = 0; i < 100000 && mcp_inflight(g_d) > 0; i++) {
        nanosleep(&pause, NULL);
    }
    FUZZ_REQUIRE(mcp_inflight(g_d) == 0, "a call never finished");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    struct mcp_request_ctx ctx = {.api_key = NULL};

    pthread_once(&once, setup);
    if (size == 0 && data == NULL) {
        teardown(); /* the replay driver's last call */
        return 0;
    }
    mcp_handle(g_d, g_s, (const char *)data, size, &g_sink, &ctx);
    settle();
    return 0;
}
