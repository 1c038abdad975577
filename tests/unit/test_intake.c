/*
 * test_intake.c - what the protocol decides for a transport (intake.h):
 * refusal codes, the version rule, a final answer's adaptation and
 * outcome, and which stdio lines are stateless requests or cancellations.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "intake.h"
#include "mcp.h"

/* The error code of a JSON-RPC error message, or 0. */
static int code_of(const char *json)
{
    cJSON *msg = cJSON_Parse(json);
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(msg, "error"), "code");
    int v = cJSON_IsNumber(code) ? code->valueint : 0;

    cJSON_Delete(msg);
    return v;
}

static void expect_refusal(enum intake_refusal why, int code)
{
    char *text = intake_refusal(why, NULL, "why");

    assert_non_null(text);
    assert_int_equal(code_of(text), code);
    assert_non_null(strstr(text, "\"id\":null"));
    assert_non_null(strstr(text, "\"message\":\"why\""));
    free(text);
}

static void test_refusals(void **state)
{
    cJSON *id = cJSON_CreateNumber(7);
    char *text = NULL;

    (void)state;
    expect_refusal(INTAKE_REFUSE_SERVER, -32000);
    expect_refusal(INTAKE_REFUSE_NO_SESSION, -32001);
    expect_refusal(INTAKE_REFUSE_PARSE, -32700);
    expect_refusal(INTAKE_REFUSE_INVALID, -32600);
    expect_refusal(INTAKE_REFUSE_PARAMS, -32602);
    expect_refusal(INTAKE_REFUSE_INTERNAL, -32603);
    text = intake_refusal_code(-32021, id, "missing", NULL);
    assert_non_null(strstr(text, "\"id\":7"));
    assert_int_equal(code_of(text), -32021);
    free(text);
    cJSON_Delete(id);
}

/* intake_parse refuses text with why; its refusal says what to fix. */
static void expect_parse(const char *text, enum intake_refusal why, int code,
                         const char *id, const char *words)
{
    struct intake_parsed p;
    char *json = NULL;

    assert_false(intake_parse(text, strlen(text), &p));
    assert_null(p.msg);
    assert_int_equal(p.why, why);
    assert_non_null(strstr(p.err, words));
    json = intake_parsed_refusal(&p);
    assert_non_null(json);
    assert_int_equal(code_of(json), code);
    assert_non_null(strstr(json, id));
    free(json);
    intake_parsed_free(&p);
}

/* The one read of a message both transports use. */
static void test_parse(void **state)
{
    const char *ok = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
    const char *bad_note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
                           "x\",\"params\":3}";
    struct intake_parsed p;

    (void)state;
    assert_true(intake_parse(ok, strlen(ok), &p));
    assert_non_null(p.msg);
    assert_true(cJSON_IsObject(p.msg));
    intake_parsed_free(&p);

    expect_parse("[]", INTAKE_REFUSE_INVALID, -32600, "\"id\":null",
                 "batches are not supported since 2025-06-18; send each "
                 "JSON-RPC message on its own");
    expect_parse("{\"a\":", INTAKE_REFUSE_PARSE, -32700, "\"id\":null",
                 "invalid JSON near byte");
    expect_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x",
                 INTAKE_REFUSE_PARSE, -32700, "\"id\":null",
                 "unexpected data after the JSON value");
    expect_parse("7", INTAKE_REFUSE_INVALID, -32600, "\"id\":null",
                 "must be a JSON-RPC 2.0 object");
    expect_parse("{\"id\":\"a\",\"method\":\"ping\"}", INTAKE_REFUSE_INVALID,
                 -32600, "\"id\":\"a\"", "\"jsonrpc\" must be the string");
    expect_parse("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\","
                 "\"params\":[]}",
                 INTAKE_REFUSE_PARAMS, -32602, "\"id\":2", "must be an object");

    /* A notification's refusal: nobody to answer on a stream. */
    assert_false(intake_parse(bad_note, strlen(bad_note), &p));
    assert_true(p.notification);
    intake_parsed_free(&p);
    assert_false(intake_parse("[]", 2, &p));
    assert_false(p.notification);
    intake_parsed_free(&p);
}

/* A transport marks a stateless request without naming its revision. */
static void test_mark_stateless(void **state)
{
    struct mcp_request_ctx ctx = {0};

    (void)state;
    intake_mark_stateless(&ctx);
    assert_non_null(ctx.revision);
    assert_string_equal(ctx.revision, "2026-07-28");
}

static void test_version(void **state)
{
    char err[512];

    (void)state;
    assert_int_equal(intake_check_version(NULL, err, sizeof(err)), 0);
    assert_int_equal(intake_check_version("2025-06-18", err, sizeof(err)), 0);
    assert_int_equal(intake_check_version("1999-01-01", err, sizeof(err)),
                     -32000);
    assert_non_null(strstr(err, "unsupported MCP-Protocol-Version "
                                "'1999-01-01'; this server speaks "
                                "2025-11-25, 2025-06-18 and 2025-03-26"));
}

/* intake_reply of msg read without a session (HTTP without a session id). */
static void reply_of(const char *msg, struct intake_reply *r)
{
    cJSON *m = cJSON_Parse(msg);
    struct intake in;

    assert_non_null(m);
    intake_read(m, NULL, INTAKE_NO_SESSION, &in);
    intake_reply_init(r, &in);
    cJSON_Delete(m);
}

static void test_answer(void **state)
{
    static const char result[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":"
                                 "{\"tools\":[]}}";
    static const char gone[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":"
                               "{\"code\":-32002,\"message\":\"no\"}}";
    struct intake_reply session;
    struct intake_reply stateless;
    char *out = NULL;

    (void)state;
    reply_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
             &session);
    assert_false(session.stateless);
    assert_null(intake_answer(&session, result, strlen(result)));
    reply_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
             "\"params\":{\"_meta\":{\"io.modelcontextprotocol/"
             "protocolVersion\":\"2026-07-28\"}}}",
             &stateless);
    assert_true(stateless.stateless);
    assert_string_equal(stateless.method, "tools/list");
    out = intake_answer(&stateless, result, strlen(result));
    assert_non_null(out);
    assert_non_null(strstr(out, "\"ttlMs\":60000"));
    assert_non_null(strstr(out, "\"resultType\":\"complete\""));
    free(out);
    /* An unknown resource is an invalid parameter in 2026-07-28. */
    out = intake_answer(&stateless, gone, strlen(gone));
    assert_non_null(out);
    assert_int_equal(code_of(out), -32602);
    free(out);
    assert_null(intake_answer(&stateless, NULL, 0));
}

static void expect_status(const struct intake_reply *r, int code,
                          enum intake_status want)
{
    char json[128];
    struct intake_outcome out;

    snprintf(json, sizeof(json),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":%d,"
             "\"message\":\"x\"}}",
             code);
    intake_outcome(r, json, strlen(json), &out);
    assert_int_equal(out.status, want);
    assert_false(out.session_created);
}

static void test_outcome(void **state)
{
    static const char ok[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
    static const char err[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":"
                              "{\"code\":-32602,\"message\":\"x\"}}";
    struct intake_reply init;
    struct intake_reply call;
    struct intake_reply stateless;
    struct intake_outcome out;

    (void)state;
    reply_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}", &init);
    intake_outcome(&init, ok, strlen(ok), &out);
    assert_true(out.session_created);
    assert_false(out.session_refused);
    assert_int_equal(out.status, INTAKE_STATUS_OK);
    intake_outcome(&init, err, strlen(err), &out);
    assert_false(out.session_created);
    assert_true(out.session_refused);
    intake_outcome(&init, "{", 1, &out);
    assert_true(out.session_refused);
    /* A session's errors travel as answers; no session changes. */
    reply_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}", &call);
    expect_status(&call, -32601, INTAKE_STATUS_OK);
    expect_status(&call, -32020, INTAKE_STATUS_OK);
    intake_outcome(&call, ok, strlen(ok), &out);
    assert_false(out.session_created);
    assert_false(out.session_refused);
    /* A stateless request's: by the revision's rule. */
    reply_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
             "\"params\":{\"_meta\":{\"io.modelcontextprotocol/"
             "protocolVersion\":\"2026-07-28\"}}}",
             &stateless);
    expect_status(&stateless, -32601, INTAKE_STATUS_UNKNOWN);
    expect_status(&stateless, -32020, INTAKE_STATUS_MALFORMED);
    expect_status(&stateless, -32021, INTAKE_STATUS_MALFORMED);
    expect_status(&stateless, -32022, INTAKE_STATUS_MALFORMED);
    expect_status(&stateless, -32600, INTAKE_STATUS_MALFORMED);
    expect_status(&stateless, -32602, INTAKE_STATUS_OK);
    expect_status(&stateless, -32603, INTAKE_STATUS_OK);
    intake_outcome(&stateless, ok, strlen(ok), &out);
    assert_int_equal(out.status, INTAKE_STATUS_OK);
}

static void test_lines(void **state)
{
    static const char sl[] =
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":"
        "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
        "\"2026-07-28\"}}}";
    static const char old[] =
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":"
        "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
        "\"2025-11-25\"}}}";
    static const char note[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\",\"params\":"
        "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
        "\"2026-07-28\"}}}";
    static const char plain[] =
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}";
    static const char cancel[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
        "\"params\":{\"requestId\":3}}";
    struct intake_reply r;

    (void)state;
    assert_true(intake_line_stateless(sl, strlen(sl), INTAKE_SESSION_OPEN, &r));
    assert_true(r.stateless);
    assert_string_equal(r.method, "tools/list");
    assert_true(intake_line_stateless(sl, strlen(sl), INTAKE_NO_SESSION, &r));
    /* Another version: stateless before initialize (then refused),
     * the session's after it. */
    assert_true(intake_line_stateless(old, strlen(old), INTAKE_NO_SESSION, &r));
    assert_false(
        intake_line_stateless(old, strlen(old), INTAKE_SESSION_OPEN, &r));
    assert_false(
        intake_line_stateless(note, strlen(note), INTAKE_NO_SESSION, &r));
    assert_false(
        intake_line_stateless(plain, strlen(plain), INTAKE_NO_SESSION, &r));
    assert_false(intake_line_stateless("{x", 2, INTAKE_NO_SESSION, &r));
    assert_true(intake_line_cancel(cancel, strlen(cancel)));
    assert_false(intake_line_cancel(plain, strlen(plain)));
    assert_false(intake_line_cancel("cancelled", 9));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),       cmocka_unit_test(test_version),
        cmocka_unit_test(test_answer),         cmocka_unit_test(test_outcome),
        cmocka_unit_test(test_lines),          cmocka_unit_test(test_parse),
        cmocka_unit_test(test_mark_stateless),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
