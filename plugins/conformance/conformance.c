/*
 * conformance.c - the fixture tools, resources and prompts that the
 * official MCP conformance suite (@modelcontextprotocol/conformance) calls
 * by name. Loaded only by conf/conformance.yaml, never by a real
 * deployment. Names, texts and shapes follow the suite's reference server
 * (examples/servers/typescript/everything-server.ts).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "conformance.h"
#include "rlmcp/plugin.h"
#include "schemas.h" /* schema_<file>: schemas/<file>.json, built in */

#define PNG_1PX                                                                \
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIA" \
    "X8jx0gAAAABJRU5ErkJggg=="
#define WAV_TINY "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

const struct rlmcp_host_api *api;

/* A string argument, or NULL. The returned pointer lives in root. */
static const char *arg_string(cJSON *root, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- tools --------------------------------------------------------------- */

static int t_simple_text(rlmcp_call *call, const char *args, size_t len,
                         void *ud)
{
    (void)args, (void)len, (void)ud;
    return api->result_text(call,
                            "This is a simple text response for testing.");
}

static int t_image(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    static const char img[] = "{\"type\":\"image\",\"data\":\"" PNG_1PX
                              "\",\"mimeType\":\"image/png\"}";

    (void)args, (void)len, (void)ud;
    return api->result_content(call, img, strlen(img));
}

static int t_audio(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    static const char au[] = "{\"type\":\"audio\",\"data\":\"" WAV_TINY
                             "\",\"mimeType\":\"audio/wav\"}";

    (void)args, (void)len, (void)ud;
    return api->result_content(call, au, strlen(au));
}

static int t_embedded(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    static const char res[] =
        "{\"type\":\"resource\",\"resource\":{\"uri\":\"test://"
        "embedded-resource\","
        "\"mimeType\":\"text/plain\",\"text\":\"This is an embedded resource "
        "content.\"}}";

    (void)args, (void)len, (void)ud;
    return api->result_content(call, res, strlen(res));
}

static int t_mixed(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    static const char img[] = "{\"type\":\"image\",\"data\":\"" PNG_1PX
                              "\",\"mimeType\":\"image/png\"}";
    static const char res[] =
        "{\"type\":\"resource\",\"resource\":{\"uri\":"
        "\"test://mixed-content-resource\",\"mimeType\":\"application/json\","
        "\"text\":\"{\\\"test\\\":\\\"data\\\",\\\"value\\\":123}\"}}";
    int rc = 0;

    (void)args, (void)len, (void)ud;
    rc = api->result_text(call, "Multiple content types test:");
    if (rc == RLMCP_OK)
        rc = api->result_content(call, img, strlen(img));
    if (rc == RLMCP_OK)
        rc = api->result_content(call, res, strlen(res));
    return rc;
}

static int t_logging(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    int rc = 0;

    (void)args, (void)len, (void)ud;
    api->call_log(call, RLMCP_LOG_INFO, "Tool execution started");
    rc = api->sleep_ms(call, 50);
    if (rc != RLMCP_OK)
        return rc;
    api->call_log(call, RLMCP_LOG_INFO, "Tool processing data");
    rc = api->sleep_ms(call, 50);
    if (rc != RLMCP_OK)
        return rc;
    api->call_log(call, RLMCP_LOG_INFO, "Tool execution completed");
    return api->result_text(call, "Tool with logging executed successfully");
}

static int t_error(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    (void)args, (void)len, (void)ud;
    return api->result_error(call, "internal",
                             "nothing to fix: this fixture always fails",
                             "This tool intentionally returns an error for "
                             "testing");
}

static int t_progress(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    static const double steps[] = {0, 50, 100};
    int rc = 0;

    (void)args, (void)len, (void)ud;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        rc = api->progress(call, steps[i], 100, NULL);
        if (rc != RLMCP_OK)
            return rc;
        if (i + 1 < sizeof(steps) / sizeof(steps[0])) {
            rc = api->sleep_ms(call, 50);
            if (rc != RLMCP_OK)
                return rc;
        }
    }
    return api->result_text(call, "Progress tool completed: 3 steps");
}

/* Send a request to the client and turn its answer into the result. */
static int ask_client(rlmcp_call *call, const char *method, cJSON *params,
                      const char *prefix)
{
    char *pjson = cJSON_PrintUnformatted(params);
    char *answer = NULL;
    char *text = NULL;
    size_t n = 0;
    int rc = RLMCP_ENOMEM;

    if (pjson == NULL)
        goto out;
    rc = api->client_request(call, method, pjson, 60000, &answer);
    if (rc == RLMCP_ENOTSUP) {
        rc = api->result_error(call, "unavailable",
                               "use a client that declares this capability",
                               "the client does not support %s", method);
        goto out;
    }
    if (rc != RLMCP_OK && rc != RLMCP_EINVAL)
        goto out;
    n = strlen(prefix) + (answer ? strlen(answer) : 0) + 1;
    text = malloc(n);
    if (text == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    snprintf(text, n, "%s%s", prefix, answer ? answer : "");
    if (rc == RLMCP_EINVAL)
        rc = api->result_error(call, "unavailable", NULL,
                               "the client answered %s with an error: %s",
                               method, answer ? answer : "?");
    else
        rc = api->result_text(call, text);
out:
    free(text);
    if (answer != NULL)
        api->free(answer);
    cJSON_free(pjson);
    return rc;
}

/* "LLM response: <text>" from a sampling/createMessage answer. */
static int t_sampling(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const char *prompt = arg_string(a, "prompt");
    cJSON *p = cJSON_CreateObject();
    cJSON *msgs = cJSON_AddArrayToObject(p, "messages");
    cJSON *m = cJSON_CreateObject();
    cJSON *c = NULL;
    int rc = 0;

    (void)ud;
    cJSON_AddItemToArray(msgs, m);
    cJSON_AddStringToObject(m, "role", "user");
    c = cJSON_AddObjectToObject(m, "content");
    cJSON_AddStringToObject(c, "type", "text");
    cJSON_AddStringToObject(c, "text", prompt ? prompt : "");
    cJSON_AddNumberToObject(p, "maxTokens", 100);
    rc = ask_client(call, "sampling/createMessage", p, "LLM response: ");
    cJSON_Delete(p);
    cJSON_Delete(a);
    return rc;
}

static int elicit(rlmcp_call *call, const char *message, const char *schema)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *s = cJSON_Parse(schema);
    int rc = 0;

    cJSON_AddStringToObject(p, "message", message);
    cJSON_AddItemToObject(p, "requestedSchema", s);
    rc = ask_client(call, "elicitation/create", p, "User response: ");
    cJSON_Delete(p);
    return rc;
}

static int t_elicitation(rlmcp_call *call, const char *args, size_t len,
                         void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const char *msg = arg_string(a, "message");
    int rc = 0;

    (void)ud;
    rc = elicit(call, msg ? msg : "Please provide your information",
                schema_elicit_user);
    cJSON_Delete(a);
    return rc;
}

static int t_elicit_defaults(rlmcp_call *call, const char *args, size_t len,
                             void *ud)
{
    (void)args, (void)len, (void)ud;
    return elicit(call,
                  "Please review and update the form fields with "
                  "defaults",
                  schema_elicit_defaults);
}

static int t_elicit_enums(rlmcp_call *call, const char *args, size_t len,
                          void *ud)
{
    (void)args, (void)len, (void)ud;
    return elicit(call, "Please select options from the enum fields",
                  schema_elicit_enums);
}

static int t_schema_2020(rlmcp_call *call, const char *args, size_t len,
                         void *ud)
{
    char *text = NULL;
    int rc = 0;

    (void)ud;
    text = malloc(len + 32);
    if (text == NULL)
        return RLMCP_ENOMEM;
    snprintf(text, len + 32, "Received: %.*s", (int)len, args);
    rc = api->result_text(call, text);
    free(text);
    return rc;
}

/*
 * SEP-1699 polling: the transport may close the reply stream while the
 * call runs; the result then arrives on the client's resumed GET.
 */
static int t_reconnection(rlmcp_call *call, const char *args, size_t len,
                          void *ud)
{
    int rc = 0;

    (void)args, (void)len, (void)ud;
    rc = api->sleep_ms(call, 100);
    if (rc != RLMCP_OK)
        return rc;
    return api->result_text(call, "Reconnection test completed");
}

/*
 * The suite's tools/list_changed hook: a live reload of the deployment,
 * as an operator's SIGHUP does (the host's reload thread takes it and
 * sends notifications/tools/list_changed to every session and to the
 * subscriptions/listen streams that asked for it). Test fixture only.
 */
static int t_trigger_tool_change(rlmcp_call *call, const char *args, size_t len,
                                 void *ud)
{
    (void)args, (void)len, (void)ud;
    if (kill(getpid(), SIGHUP) != 0)
        return api->result_error(call, "RELOAD_FAILED",
                                 "the host could not be signalled; reload it "
                                 "with SIGHUP by hand",
                                 "kill(SIGHUP): %s", strerror(errno));
    return api->result_text(call, "Reload requested: tools/list_changed "
                                  "follows once the deployment is re-read");
}

/* ---- resources ------------------------------------------------------------
 */

static int r_static_text(rlmcp_call *call, const char *uri, void *ud)
{
    static const char t[] = "This is the content of the static text resource.";

    (void)ud;
    return api->resource_contents(call, uri, "text/plain", t, strlen(t), false);
}

static int r_static_binary(rlmcp_call *call, const char *uri, void *ud)
{
    /* The 1x1 PNG, as bytes: the host base64-encodes blobs. */
    static const unsigned char png[] = {
        0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d,
        0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,
        0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
        0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xfc, 0xcf, 0xc0, 0xf0,
        0x1f, 0x00, 0x05, 0x05, 0x02, 0x00, 0x5f, 0xc8, 0xf1, 0xd2, 0x00, 0x00,
        0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};

    (void)ud;
    return api->resource_contents(call, uri, "image/png", png, sizeof(png),
                                  true);
}

static int r_template(rlmcp_call *call, const char *uri, void *ud)
{
    static const char prefix[] = "test://template/";
    static const char suffix[] = "/data";
    char text[512];
    size_t ulen = strlen(uri);
    size_t plen = strlen(prefix);
    size_t slen = strlen(suffix);
    int n = 0;

    (void)ud;
    if (ulen <= plen + slen || strncmp(uri, prefix, plen) != 0 ||
        strcmp(uri + ulen - slen, suffix) != 0 || ulen > 300)
        return RLMCP_ENOTFOUND;
    n = snprintf(text, sizeof(text),
                 "{\"id\":\"%.*s\",\"templateTest\":true,\"data\":\"Data for "
                 "ID: %.*s\"}",
                 (int)(ulen - plen - slen), uri + plen,
                 (int)(ulen - plen - slen), uri + plen);
    return api->resource_contents(call, uri, "application/json", text,
                                  (size_t)n, false);
}

static int r_watched(rlmcp_call *call, const char *uri, void *ud)
{
    static const char t[] = "Watched resource content";

    (void)ud;
    return api->resource_contents(call, uri, "text/plain", t, strlen(t), false);
}

/* ---- prompts --------------------------------------------------------------
 */

static int user_text(rlmcp_call *call, const char *text)
{
    cJSON *c = cJSON_CreateObject();
    char *json = NULL;
    int rc = RLMCP_ENOMEM;

    cJSON_AddStringToObject(c, "type", "text");
    cJSON_AddStringToObject(c, "text", text);
    json = cJSON_PrintUnformatted(c);
    if (json != NULL)
        rc = api->prompt_message(call, "user", json);
    cJSON_free(json);
    cJSON_Delete(c);
    return rc;
}

static int p_simple(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    (void)args, (void)len, (void)ud;
    return user_text(call, "This is a simple prompt for testing.");
}

static int p_args(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const char *a1 = arg_string(a, "arg1");
    const char *a2 = arg_string(a, "arg2");
    char text[1024];
    int rc = 0;

    (void)ud;
    snprintf(text, sizeof(text),
             "Prompt with arguments: arg1='%.400s', "
             "arg2='%.400s'",
             a1 ? a1 : "", a2 ? a2 : "");
    rc = user_text(call, text);
    cJSON_Delete(a);
    return rc;
}

static int p_embedded(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const char *uri = arg_string(a, "resourceUri");
    cJSON *c = cJSON_CreateObject();
    cJSON *r = NULL;
    char *json = NULL;
    int rc = RLMCP_ENOMEM;

    (void)ud;
    cJSON_AddStringToObject(c, "type", "resource");
    r = cJSON_AddObjectToObject(c, "resource");
    cJSON_AddStringToObject(r, "uri", uri ? uri : "test://example-resource");
    cJSON_AddStringToObject(r, "mimeType", "text/plain");
    cJSON_AddStringToObject(r, "text",
                            "Embedded resource content for testing.");
    json = cJSON_PrintUnformatted(c);
    if (json != NULL)
        rc = api->prompt_message(call, "user", json);
    if (rc == RLMCP_OK)
        rc = user_text(call, "Please process the embedded resource above.");
    cJSON_free(json);
    cJSON_Delete(c);
    cJSON_Delete(a);
    return rc;
}

static int p_image(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    static const char img[] = "{\"type\":\"image\",\"data\":\"" PNG_1PX
                              "\",\"mimeType\":\"image/png\"}";
    int rc = 0;

    (void)args, (void)len, (void)ud;
    rc = api->prompt_message(call, "user", img);
    if (rc == RLMCP_OK)
        rc = user_text(call, "Please analyze the image above.");
    return rc;
}

/* The host checked Mcp-Param-Region against arguments.region (HTTP). */
static int t_custom_header(rlmcp_call *call, const char *args, size_t len,
                           void *ud)
{
    cJSON *a = cJSON_ParseWithLength(args, len);
    const char *region = arg_string(a, "region");
    char text[512];
    int rc;

    (void)ud;
    snprintf(text, sizeof(text), "Routed to region %s",
             region != NULL ? region : "?");
    rc = api->result_text(call, text);
    cJSON_Delete(a);
    return rc;
}

/* ---- 2026-07-28 fixtures: input rounds (MRTR) and capabilities -----------
 *
 * Each client request names its key in params._meta["rlmcp/input-key"]; in
 * a stateless call the host turns the requests into an InputRequiredResult
 * under those keys and hands the answers back when the client calls again.
 */

/* A client request under a key; *answer is the parsed result or NULL. */
int ask_keyed(rlmcp_call *call, const char *key, const char *method,
              cJSON *params, cJSON **answer)
{
    cJSON *meta = cJSON_AddObjectToObject(params, "_meta");
    char *pjson = NULL;
    char *raw = NULL;
    int rc = RLMCP_ENOMEM;

    *answer = NULL;
    cJSON_AddStringToObject(meta, INPUT_KEY, key);
    pjson = cJSON_PrintUnformatted(params);
    if (pjson == NULL)
        goto out;
    rc = api->client_request(call, method, pjson, 60000, &raw);
    if (rc == RLMCP_OK)
        *answer = cJSON_Parse(raw);
out:
    if (raw != NULL)
        api->free(raw);
    cJSON_free(pjson);
    cJSON_Delete(params);
    return rc;
}

/* elicitation/create params asking for one string or boolean field. */
cJSON *elicit_params(const char *message, const char *field, const char *type)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *schema = cJSON_AddObjectToObject(p, "requestedSchema");
    cJSON *props = NULL;
    cJSON *req = NULL;

    cJSON_AddStringToObject(p, "message", message);
    cJSON_AddStringToObject(schema, "type", "object");
    props = cJSON_AddObjectToObject(schema, "properties");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(props, field), "type",
                            type);
    req = cJSON_AddArrayToObject(schema, "required");
    cJSON_AddItemToArray(req, cJSON_CreateString(field));
    return p;
}

static cJSON *sampling_params(const char *text, int max_tokens)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *m = cJSON_CreateObject();
    cJSON *c = cJSON_AddObjectToObject(m, "content");

    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddStringToObject(c, "type", "text");
    cJSON_AddStringToObject(c, "text", text);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(p, "messages"), m);
    cJSON_AddNumberToObject(p, "maxTokens", max_tokens);
    return p;
}

/* content.<field> of an elicitation answer, or content.text of a sampling
 * answer, as text ("?" when absent). */
static const char *elicited(const cJSON *answer, const char *field)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(answer, "content"), field);

    return cJSON_IsString(v) ? v->valuestring : "?";
}

/*
 * Ask the client one request under key and answer with content.<field> of
 * its answer between pre and post, cut to cap bytes (as the fixtures'
 * buffers did).
 */
static int ask_say(rlmcp_call *call, const char *key, const char *method,
                   cJSON *params, const char *pre, const char *field,
                   const char *post, size_t cap)
{
    cJSON *ans = NULL;
    char text[512];
    int rc;

    if (cap > sizeof(text))
        cap = sizeof(text);
    rc = ask_keyed(call, key, method, params, &ans);
    if (rc == RLMCP_OK) {
        snprintf(text, cap, "%s%s%s", pre, elicited(ans, field), post);
        rc = api->result_text(call, text);
    }
    cJSON_Delete(ans);
    return rc;
}

static int t_irr_elicitation(rlmcp_call *call, const char *args, size_t len,
                             void *ud)
{
    (void)args, (void)len, (void)ud;
    return ask_say(call, "user_name", "elicitation/create",
                   elicit_params("What is your name?", "name", "string"),
                   "Hello, ", "name", "!", 256);
}

/* The text of a sampling answer's content. */
static const char *sampled(const cJSON *answer)
{
    return elicited(answer, "text");
}

static int t_irr_sampling(rlmcp_call *call, const char *args, size_t len,
                          void *ud)
{
    (void)args, (void)len, (void)ud;
    return ask_say(call, "capital_question", "sampling/createMessage",
                   sampling_params("What is the capital of France?", 100),
                   "LLM response: ", "text", "", 512);
}

/* "Roots: uri, uri" from a ListRootsResult. */
static int roots_text(rlmcp_call *call, const cJSON *ans)
{
    const cJSON *r = NULL;
    char text[1024] = "Roots:";
    size_t n = strlen(text);

    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(ans, "roots"))
    {
        const cJSON *uri = cJSON_GetObjectItemCaseSensitive(r, "uri");
        if (cJSON_IsString(uri) && n < sizeof(text))
            n += (size_t)snprintf(text + n, sizeof(text) - n, " %s",
                                  uri->valuestring);
    }
    return api->result_text(call, text);
}

static int t_irr_roots(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *ans = NULL;
    int rc;

    (void)args, (void)len, (void)ud;
    rc = ask_keyed(call, "client_roots", "roots/list", cJSON_CreateObject(),
                   &ans);
    if (rc == RLMCP_OK)
        rc = roots_text(call, ans);
    cJSON_Delete(ans);
    return rc;
}

/* The host checks requestState before the handler runs again. */
static int t_irr_state(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *ans = NULL;
    int rc;

    (void)args, (void)len, (void)ud;
    rc = ask_keyed(call, "confirm", "elicitation/create",
                   elicit_params("Please confirm", "ok", "boolean"), &ans);
    if (rc == RLMCP_OK)
        rc = api->result_text(call, "state-ok: the request state was "
                                    "verified and the answer received");
    cJSON_Delete(ans);
    return rc;
}

/* All three requests first, so that one round asks for all of them. */
static int t_irr_multiple(rlmcp_call *call, const char *args, size_t len,
                          void *ud)
{
    cJSON *name = NULL;
    cJSON *greet = NULL;
    cJSON *roots = NULL;
    char text[512];
    int rc1, rc2, rc3;
    int rc;

    (void)args, (void)len, (void)ud;
    rc1 =
        ask_keyed(call, "user_name", "elicitation/create",
                  elicit_params("What is your name?", "name", "string"), &name);
    rc2 = ask_keyed(call, "greeting", "sampling/createMessage",
                    sampling_params("Generate a greeting", 50), &greet);
    rc3 = ask_keyed(call, "client_roots", "roots/list", cJSON_CreateObject(),
                    &roots);
    rc = rc1 != RLMCP_OK ? rc1 : rc2 != RLMCP_OK ? rc2 : rc3;
    if (rc == RLMCP_OK) {
        snprintf(text, sizeof(text), "%s, %s (%d roots)", sampled(greet),
                 elicited(name, "name"),
                 cJSON_GetArraySize(
                     cJSON_GetObjectItemCaseSensitive(roots, "roots")));
        rc = api->result_text(call, text);
    }
    cJSON_Delete(name);
    cJSON_Delete(greet);
    cJSON_Delete(roots);
    return rc;
}

/* Two rounds: step2 is asked only once step1 is answered. */
static int t_irr_multi_round(rlmcp_call *call, const char *args, size_t len,
                             void *ud)
{
    cJSON *a1 = NULL;
    cJSON *a2 = NULL;
    char text[512];
    int rc;

    (void)args, (void)len, (void)ud;
    rc = ask_keyed(
        call, "step1", "elicitation/create",
        elicit_params("Step 1: What is your name?", "name", "string"), &a1);
    if (rc == RLMCP_OK)
        rc = ask_keyed(call, "step2", "elicitation/create",
                       elicit_params("Step 2: What is your favorite color?",
                                     "color", "string"),
                       &a2);
    if (rc == RLMCP_OK) {
        snprintf(text, sizeof(text), "%s likes %s", elicited(a1, "name"),
                 elicited(a2, "color"));
        rc = api->result_text(call, text);
    }
    cJSON_Delete(a1);
    cJSON_Delete(a2);
    return rc;
}

/* Asks for what the client may offer: a refused request is skipped. */
static int t_irr_capabilities(rlmcp_call *call, const char *args, size_t len,
                              void *ud)
{
    cJSON *e = NULL;
    cJSON *smp = NULL;
    int rc1, rc2;
    int rc;

    (void)args, (void)len, (void)ud;
    rc1 = ask_keyed(call, "user_name", "elicitation/create",
                    elicit_params("What is your name?", "name", "string"), &e);
    rc2 =
        ask_keyed(call, "capital_question", "sampling/createMessage",
                  sampling_params("What is the capital of France?", 100), &smp);
    rc = rc2;
    if (rc1 != RLMCP_OK && rc1 != RLMCP_ENOTSUP)
        rc = rc1;
    if (rc == RLMCP_OK)
        rc = api->result_text(call, sampled(smp));
    cJSON_Delete(e);
    cJSON_Delete(smp);
    return rc;
}

/* Sampling is required: without it the call fails (-32021 in 2026). */
static int t_missing_capability(rlmcp_call *call, const char *args, size_t len,
                                void *ud)
{
    cJSON *ans = NULL;
    int rc;

    (void)args, (void)len, (void)ud;
    rc = ask_keyed(call, "completion", "sampling/createMessage",
                   sampling_params("Say hello", 20), &ans);
    if (rc == RLMCP_OK)
        rc = api->result_text(call, sampled(ans));
    cJSON_Delete(ans);
    return rc;
}

static int p_irr(rlmcp_call *call, const char *args, size_t len, void *ud)
{
    cJSON *ans = NULL;
    char text[512];
    int rc;

    (void)args, (void)len, (void)ud;
    rc = ask_keyed(call, "user_context", "elicitation/create",
                   elicit_params("What context should the prompt use?",
                                 "context", "string"),
                   &ans);
    if (rc == RLMCP_OK) {
        snprintf(text, sizeof(text), "Use this context: %s",
                 elicited(ans, "context"));
        rc = user_text(call, text);
    }
    cJSON_Delete(ans);
    return rc;
}

/* ---- registration ---------------------------------------------------------
 */

struct tool_row {
    const char *name;
    const char *description;
    const char *schema;
    rlmcp_tool_fn fn;
    bool optional; /* a host that rejects the schema skips only this one */
};

static const struct tool_row tools[] = {
    {"test_simple_text", "Tests simple text content response",
     schema_no_arguments, t_simple_text, false},
    {"test_image_content", "Tests image content response", schema_no_arguments,
     t_image, false},
    {"test_audio_content", "Tests audio content response", schema_no_arguments,
     t_audio, false},
    {"test_embedded_resource", "Tests embedded resource content response",
     schema_no_arguments, t_embedded, false},
    {"test_multiple_content_types",
     "Tests response with multiple content types (text, image, resource)",
     schema_no_arguments, t_mixed, false},
    {"test_tool_with_logging",
     "Tests tool that emits log messages during execution", schema_no_arguments,
     t_logging, false},
    {"test_error_handling", "Tests error response handling",
     schema_no_arguments, t_error, false},
    {"test_tool_with_progress",
     "Tests tool that reports progress "
     "notifications",
     schema_no_arguments, t_progress, false},
    {"test_sampling",
     "Tests server-initiated sampling (LLM completion "
     "request)",
     schema_test_sampling, t_sampling, false},
    {"test_elicitation",
     "Tests server-initiated elicitation (user input "
     "request)",
     schema_test_elicitation, t_elicitation, false},
    {"test_elicitation_sep1034_defaults",
     "Tests elicitation with default values per SEP-1034", schema_no_arguments,
     t_elicit_defaults, false},
    {"test_elicitation_sep1330_enums",
     "Tests elicitation with enum schema improvements per SEP-1330",
     schema_no_arguments, t_elicit_enums, false},
    {"json_schema_2020_12_tool",
     "Tool with JSON Schema 2020-12 features for conformance testing "
     "(SEP-1613)",
     schema_json_schema_2020_12_tool, t_schema_2020, true},
    {"test_logging_tool",
     "Emits log messages (sent only when the request asks for a log level)",
     schema_no_arguments, t_logging, false},
    {"test_streaming_elicitation",
     "Asks the user for input while it runs (an input round in 2026-07-28)",
     schema_no_arguments, t_irr_elicitation, false},
    {"test_missing_capability",
     "Needs the client's sampling capability and fails without it",
     schema_no_arguments, t_missing_capability, false},
    {"test_input_required_result_elicitation",
     "Asks for the user's name (input round: elicitation)", schema_no_arguments,
     t_irr_elicitation, false},
    {"test_input_required_result_sampling",
     "Asks the client's model a question (input round: sampling)",
     schema_no_arguments, t_irr_sampling, false},
    {"test_input_required_result_list_roots",
     "Asks for the client's roots (input round: roots/list)",
     schema_no_arguments, t_irr_roots, false},
    {"test_input_required_result_request_state",
     "Asks for a confirmation and checks the echoed request state",
     schema_no_arguments, t_irr_state, false},
    {"test_input_required_result_multiple_inputs",
     "Asks for elicitation, sampling and roots in one round",
     schema_no_arguments, t_irr_multiple, false},
    {"test_input_required_result_multi_round",
     "Asks two questions in two rounds", schema_no_arguments, t_irr_multi_round,
     false},
    {"test_input_required_result_tampered_state",
     "Asks for a name; a tampered request state is refused",
     schema_no_arguments, t_irr_elicitation, false},
    {"test_input_required_result_capabilities",
     "Asks only for input the client declared it can give", schema_no_arguments,
     t_irr_capabilities, false},
    {"test_reconnection",
     "Tests SSE stream resumption: the result may arrive on a resumed "
     "stream (SEP-1699)",
     schema_no_arguments, t_reconnection, false},
    {"test_custom_header",
     "Echoes its region argument, which 2026-07-28 HTTP clients also send as "
     "the Mcp-Param-Region header",
     schema_test_custom_header, t_custom_header, false},
    {"test_trigger_tool_change",
     "Reloads the deployment (as SIGHUP does), so notifications/"
     "tools/list_changed goes out",
     schema_no_arguments, t_trigger_tool_change, false},
};

int conf_registered(rlmcp_plugin *self, int rc, const char *kind,
                    const char *name)
{
    if (rc != RLMCP_OK)
        api->set_error(self, "cannot register %s%s: %s", kind, name,
                       api->strerror(rc));
    return rc;
}

static int add_tools(rlmcp_plugin *self)
{
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
        struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
        int rc = 0;
        def.name = tools[i].name;
        def.description = tools[i].description;
        def.input_schema_json = tools[i].schema;
        def.handler = tools[i].fn;
        rc = api->register_tool(self, &def);
        if (rc != RLMCP_OK && tools[i].optional) {
            api->log(self, RLMCP_LOG_WARNING, "skipping %s: %s", def.name,
                     api->strerror(rc));
            continue;
        }
        if (conf_registered(self, rc, "", def.name) != RLMCP_OK)
            return rc;
    }
    return RLMCP_OK;
}

static int add_resource(rlmcp_plugin *self, const char *uri, const char *tmpl,
                        const char *name, const char *description,
                        const char *mime, uint32_t flags, rlmcp_resource_fn fn)
{
    struct rlmcp_resource_def def = RLMCP_RESOURCE_DEF_INIT;
    int rc = 0;

    def.uri = uri;
    def.uri_template = tmpl;
    def.name = name;
    def.description = description;
    def.mime_type = mime;
    def.flags = flags;
    def.read = fn;
    rc = api->register_resource(self, &def);
    return conf_registered(self, rc, "resource ", uri ? uri : tmpl);
}

static int add_prompt(rlmcp_plugin *self, const char *name,
                      const char *description, const char *arguments,
                      rlmcp_prompt_fn fn)
{
    struct rlmcp_prompt_def def = RLMCP_PROMPT_DEF_INIT;
    int rc = 0;

    def.name = name;
    def.description = description;
    def.arguments_json = arguments;
    def.get = fn;
    rc = api->register_prompt(self, &def);
    return conf_registered(self, rc, "prompt ", name);
}

static int conf_init(rlmcp_plugin *self, const struct rlmcp_host_api *a,
                     void **state)
{
    int rc = 0;

    api = a;
    *state = NULL;
    rc = add_tools(self);
    if (rc == RLMCP_OK)
        rc = jobs_register(self);
    if (rc == RLMCP_OK)
        rc = add_resource(self, "test://static-text", NULL,
                          "Static Text "
                          "Resource",
                          "A static text resource for testing", "text/plain", 0,
                          r_static_text);
    if (rc == RLMCP_OK)
        rc = add_resource(self, "test://static-binary", NULL,
                          "Static Binary "
                          "Resource",
                          "A static binary resource (image) for "
                          "testing",
                          "image/png", 0, r_static_binary);
    if (rc == RLMCP_OK)
        rc = add_resource(self, NULL, "test://template/{id}/data",
                          "Resource Template",
                          "A resource template with "
                          "parameter substitution",
                          "application/json", 0, r_template);
    if (rc == RLMCP_OK)
        rc = add_resource(self, "test://watched-resource", NULL,
                          "Watched "
                          "Resource",
                          "A resource that can be subscribed to", "text/plain",
                          RLMCP_RESOURCE_SUBSCRIBABLE, r_watched);
    if (rc == RLMCP_OK)
        rc = add_prompt(self, "test_simple_prompt",
                        "A simple prompt without arguments", NULL, p_simple);
    if (rc == RLMCP_OK)
        rc = add_prompt(self, "test_prompt_with_arguments",
                        "A prompt with required arguments",
                        "[{\"name\":\"arg1\",\"description\":\"First test "
                        "argument\",\"required\":true},{\"name\":\"arg2\","
                        "\"description\":\"Second test argument\","
                        "\"required\":true}]",
                        p_args);
    if (rc == RLMCP_OK)
        rc = add_prompt(self, "test_prompt_with_embedded_resource",
                        "A prompt that includes an embedded resource",
                        "[{\"name\":\"resourceUri\",\"description\":\"URI of "
                        "the resource to embed\",\"required\":true}]",
                        p_embedded);
    if (rc == RLMCP_OK)
        rc = add_prompt(self, "test_prompt_with_image",
                        "A prompt that includes image content", NULL, p_image);
    if (rc == RLMCP_OK)
        rc = add_prompt(self, "test_input_required_result_prompt",
                        "A prompt that asks the user for context first", NULL,
                        p_irr);
    return rc;
}

RLMCP_PLUGIN_DEFINE("conformance", "1.0.0",
                    "Fixtures for the official MCP conformance suite (tests "
                    "only)",
                    conf_init, NULL)
