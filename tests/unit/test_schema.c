/*
 * test_schema.c - JSON Schema checks (registration) and validation (calls).
 */
#include <pthread.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "schema.h"

static cJSON *parse(const char *text)
{
    cJSON *v = cJSON_Parse(text);

    if (v == NULL) {
        fail_msg("test JSON does not parse: %s", text);
    }
    return v;
}

/* Validate inst against schema (which must pass schema_check). */
static int run(const char *schema, const char *inst, char *err, size_t len)
{
    cJSON *s = parse(schema);
    cJSON *i = parse(inst);
    char cerr[512];
    int rc;

    if (schema_check(s, cerr, sizeof(cerr)) != 0) {
        fail_msg("schema rejected: %s\n  %s", cerr, schema);
    }
    rc = schema_validate(s, i, "arguments", err, len);
    cJSON_Delete(s);
    cJSON_Delete(i);
    return rc;
}

static void ok(const char *schema, const char *inst)
{
    char err[1024];

    if (run(schema, inst, err, sizeof(err)) != 0) {
        fail_msg("expected valid: %s\n  schema %s\n  error: %s", inst, schema,
                 err);
    }
    assert_string_equal(err, "");
}

/* Invalid, with exactly this message. */
static void bad(const char *schema, const char *inst, const char *want)
{
    char err[1024];

    if (run(schema, inst, err, sizeof(err)) == 0) {
        fail_msg("expected invalid: %s\n  schema %s", inst, schema);
    }
    assert_string_equal(err, want);
}

/* Invalid, with a message containing want. */
static void bad_has(const char *schema, const char *inst, const char *want)
{
    char err[1024];

    if (run(schema, inst, err, sizeof(err)) == 0) {
        fail_msg("expected invalid: %s\n  schema %s", inst, schema);
    }
    if (strstr(err, want) == NULL) {
        fail_msg("error %s\n  lacks %s", err, want);
    }
}

/* schema_check rejects, with a message containing want. */
static void check_fails(const char *schema, const char *want)
{
    cJSON *s = parse(schema);
    char err[1024];

    if (schema_check(s, err, sizeof(err)) == 0) {
        fail_msg("schema accepted: %s", schema);
    }
    if (strstr(err, want) == NULL) {
        fail_msg("check error %s\n  lacks %s", err, want);
    }
    cJSON_Delete(s);
}

/* ---- type ---------------------------------------------------------------- */

static void test_type(void **state)
{
    const char *s = "{\"type\":\"object\",\"properties\":{"
                    "\"timeout_seconds\":{\"type\":\"integer\"}}}";

    ok(s, "{\"timeout_seconds\":10}");
    ok(s, "{\"timeout_seconds\":10.0}"); /* no fraction: an integer */
    ok(s, "{}");
    bad(s, "{\"timeout_seconds\":\"10\"}",
        "arguments.timeout_seconds: expected integer, got string \"10\"");
    bad(s, "{\"timeout_seconds\":1.5}",
        "arguments.timeout_seconds: expected integer, got number 1.5");
    bad(s, "[]", "arguments: expected object, got array");
    bad(s, "null", "arguments: expected object, got null");

    ok("{\"type\":\"number\"}", "1.5");
    ok("{\"type\":\"null\"}", "null");
    ok("{\"type\":\"boolean\"}", "false");
    ok("{\"type\":\"array\"}", "[1]");
    ok("{\"type\":\"string\"}", "\"x\"");
    bad("{\"type\":\"boolean\"}", "0",
        "arguments: expected boolean, got number 0");
    bad("{\"type\":\"string\"}", "true",
        "arguments: expected string, got boolean true");
    bad("{\"type\":\"number\"}", "{}",
        "arguments: expected number, got object");

    ok("{\"type\":[\"string\",\"null\"]}", "null");
    ok("{\"type\":[\"string\",\"null\"]}", "\"a\"");
    bad("{\"type\":[\"string\",\"null\"]}", "5",
        "arguments: expected string or null, got number 5");
    bad("{\"type\":[\"string\",\"integer\",\"null\"]}", "[]",
        "arguments: expected string, integer or null, got array");
}

/* ---- objects --------------------------------------------------------------- */

static const char *exec_schema =
    "{\"type\":\"object\",\"properties\":{"
    "\"command\":{\"type\":\"string\"},\"devbox_id\":{\"type\":\"string\"}},"
    "\"required\":[\"command\"],\"additionalProperties\":false}";

static void test_required(void **state)
{
    ok(exec_schema, "{\"command\":\"ls\"}");
    bad(exec_schema, "{}", "arguments: missing required property 'command'");
    bad(exec_schema, "{\"devbox_id\":\"d\"}",
        "arguments: missing required property 'command'");
    bad("{\"type\":\"object\",\"required\":[\"a\",\"b\",\"c\"]}", "{\"b\":1}",
        "arguments: missing required properties 'a', 'c'");
    /* required applies only to objects */
    ok("{\"required\":[\"a\"]}", "\"not an object\"");
}

static void test_additional_properties(void **state)
{
    bad(exec_schema, "{\"comand\":\"ls\"}",
        "arguments: unknown property 'comand' (allowed: command, devbox_id); "
        "did you mean 'command'?");
    bad(exec_schema, "{\"command\":\"ls\",\"zzz\":1}",
        "arguments: unknown property 'zzz' (allowed: command, devbox_id)");
    bad("{\"type\":\"object\",\"additionalProperties\":false}", "{\"a\":1}",
        "arguments: unknown property 'a' (this object takes no properties)");

    /* a schema for the rest */
    const char *s = "{\"type\":\"object\",\"properties\":{\"a\":{}},"
                    "\"additionalProperties\":{\"type\":\"integer\"}}";
    ok(s, "{\"a\":\"x\",\"b\":1,\"c\":2}");
    bad(s, "{\"a\":\"x\",\"b\":\"y\"}",
        "arguments.b: expected integer, got string \"y\"");
}

static void test_pattern_properties(void **state)
{
    const char *s = "{\"type\":\"object\",\"properties\":{\"name\":{}},"
                    "\"patternProperties\":{\"^x-\":{\"type\":\"string\"},"
                    "\"^n_[0-9]+$\":{\"type\":\"number\"}},"
                    "\"additionalProperties\":false}";

    ok(s, "{\"name\":1,\"x-a\":\"s\",\"n_12\":3}");
    bad(s, "{\"x-a\":5}", "arguments.x-a: expected string, got number 5");
    bad(s, "{\"n_1\":\"s\"}",
        "arguments.n_1: expected number, got string \"s\"");
    bad(s, "{\"other\":1}",
        "arguments: unknown property 'other' (allowed: name or names "
        "matching '^x-' or names matching '^n_[0-9]+$')");
}

static void test_object_counts_and_dependencies(void **state)
{
    const char *s = "{\"type\":\"object\",\"minProperties\":1,"
                    "\"maxProperties\":2,"
                    "\"dependentRequired\":{\"user\":[\"password\"]}}";

    ok(s, "{\"a\":1}");
    bad(s, "{}",
        "arguments: object has 0 properties, fewer than "
        "minProperties 1");
    bad(s, "{\"a\":1,\"b\":2,\"c\":3}",
        "arguments: object has 3 properties, more than maxProperties 2");
    bad(s, "{\"user\":\"u\"}",
        "arguments: property 'password' is required when 'user' is present");
    ok(s, "{\"user\":\"u\",\"password\":\"p\"}");

    const char *names = "{\"type\":\"object\",\"propertyNames\":"
                        "{\"pattern\":\"^[a-z]+$\",\"maxLength\":5}}";
    ok(names, "{\"abc\":1}");
    bad(names, "{\"Abc\":1}",
        "arguments.Abc (property name): string \"Abc\" does not match "
        "pattern '^[a-z]+$'");
    bad(names, "{\"abcdefg\":1}",
        "arguments.abcdefg (property name): string longer than maxLength 5");

    const char *dep = "{\"type\":\"object\",\"dependentSchemas\":{\"a\":"
                      "{\"required\":[\"b\"]}}}";
    ok(dep, "{}");
    bad(dep, "{\"a\":1}", "arguments: missing required property 'b'");
}

/* ---- strings ------------------------------------------------------------- */

static void test_string_lengths(void **state)
{
    const char *files = "{\"type\":\"object\",\"properties\":{\"files\":{"
                        "\"type\":\"object\",\"additionalProperties\":{"
                        "\"type\":\"string\",\"maxLength\":1000}}}}";
    char *big = malloc(1200);
    char *inst = malloc(1300);

    memset(big, 'x', 1001);
    big[1001] = '\0';
    snprintf(inst, 1300, "{\"files\":{\"a.py\":\"%s\"}}", big);
    bad(files, inst, "arguments.files.a.py: string longer than maxLength 1000");
    big[1000] = '\0';
    snprintf(inst, 1300, "{\"files\":{\"a.py\":\"%s\"}}", big);
    ok(files, inst);
    free(big);
    free(inst);

    /* lengths are code points, not bytes */
    const char *three = "{\"type\":\"string\",\"minLength\":3,\"maxLength\":3}";
    ok(three, "\"\xC3\xA9\xC3\xA9\xC3\xA9\""); /* 6 bytes */
    ok(three, "\"a\xF0\x9F\x98\x80z\"");       /* emoji, 6 bytes */
    ok(three, "\"a\\ud83d\\ude00z\"");         /* escaped pair */
    bad(three, "\"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE5\x90\x8D\"",
        "arguments: string longer than maxLength 3");
    bad(three, "\"\xC3\xA9\xC3\xA9\"",
        "arguments: string shorter than minLength 3");
    ok("{\"maxLength\":0}", "\"\"");
    ok("{\"minLength\":2}", "5"); /* only strings */
}

static void test_pattern(void **state)
{
    const char *digits = "{\"type\":\"string\",\"pattern\":\"^\\\\d+$\"}";

    ok(digits, "\"12345\"");
    bad(digits, "\"12a\"",
        "arguments: string \"12a\" does not match pattern '^\\d+$'");
    /* unanchored search, like ECMA-262 */
    ok("{\"pattern\":\"b+\"}", "\"abbbc\"");
    bad_has("{\"pattern\":\"^b\"}", "\"abc\"", "does not match pattern '^b'");
    /* '.' is one code point and stops at line terminators */
    ok("{\"pattern\":\"^.$\"}", "\"\xC3\xA9\"");
    ok("{\"pattern\":\"^.$\"}", "\"\xF0\x9F\x98\x80\"");
    /* ASCII subjects take the C-locale compilation: same answers */
    ok("{\"pattern\":\"^.{2}$\"}", "\"ab\"");
    ok("{\"pattern\":\"^.{2}$\"}", "\"\xC3\xA9\xC3\xA9\"");
    bad_has("{\"pattern\":\"^.{2}$\"}", "\"\xC3\xA9\"", "does not match");
    ok("{\"pattern\":\"^[^\xC3\xA9]$\"}", "\"a\"");
    bad_has("{\"pattern\":\"^[^\xC3\xA9]$\"}", "\"\xC3\xA9\"",
            "does not match");
    ok("{\"pattern\":\"^[^\xC3\xA9]$\"}", "\"\xC3\xA8\"");
    bad_has("{\"pattern\":\"^\xC3\xA9\"}", "\"e\"", "does not match");
    bad_has("{\"pattern\":\"^a.b$\"}", "\"a\\nb\"", "does not match");
    ok("{\"pattern\":\"^a[^x]b$\"}", "\"a\\nb\"");
    /* escapes and classes */
    ok("{\"pattern\":\"^\\\\w+\\\\s\\\\S+$\"}", "\"ab_9 x!\"");
    bad_has("{\"pattern\":\"^\\\\W$\"}", "\"a\"", "does not match");
    ok("{\"pattern\":\"^\\\\D\\\\d$\"}", "\"x1\"");
    ok("{\"pattern\":\"^[\\\\d.]+$\"}", "\"1.5\"");
    bad_has("{\"pattern\":\"^[\\\\d.]+$\"}", "\"1,5\"", "does not match");
    ok("{\"pattern\":\"^[\\\\]a]+$\"}", "\"]a]\"");
    ok("{\"pattern\":\"^[-a]+$\"}", "\"-a\"");
    ok("{\"pattern\":\"^[a-]+$\"}", "\"a-\"");
    ok("{\"pattern\":\"^[\\\\^]$\"}", "\"^\"");
    ok("{\"pattern\":\"^[^^]$\"}", "\"a\"");
    bad_has("{\"pattern\":\"^[^^]$\"}", "\"^\"", "does not match");
    ok("{\"pattern\":\"^[\\\\[\\\\]]+$\"}", "\"[]\"");
    ok("{\"pattern\":\"^[a-z\\\\-]+$\"}", "\"a-b\"");
    ok("{\"pattern\":\"^\\\\.\\\\*\\\\+\\\\?\\\\(\\\\)\\\\{\\\\}\\\\|\\\\$\\\\^"
       "\\\\/$\"}",
       "\".*+?(){}|$^/\"");
    ok("{\"pattern\":\"^\\\\u00e9\\\\x41$\"}", "\"\xC3\xA9"
                                               "A\"");
    ok("{\"pattern\":\"^\\\\ud83d\\\\ude00$\"}", "\"\xF0\x9F\x98\x80\"");
    ok("{\"pattern\":\"^[\\\\u00e0-\\\\u00ff]$\"}", "\"\xC3\xA9\"");
    ok("{\"pattern\":\"^[a-\\\\u00ff]+$\"}", "\"z\xC3\xA9\"");
    bad_has("{\"pattern\":\"^[\\\\u00e0-\\\\u00ff]$\"}", "\"e\"",
            "does not match");
    ok("{\"pattern\":\"^[^\\\\u00e0-\\\\u00ff]$\"}", "\"e\"");
    ok("{\"pattern\":\"^\\\\t$\"}", "\"\\t\"");
    ok("{\"pattern\":\"^[\\\\\\\\]$\"}", "\"\\\\\""); /* [\\] is a backslash */
    /* negated escapes in a class: [\s\S] is "anything", newline too */
    ok("{\"pattern\":\"^[\\\\s\\\\S]+$\"}", "\"a \\n\xC3\xA9\"");
    ok("{\"pattern\":\"^[a\\\\D]$\"}", "\"x\"");
    ok("{\"pattern\":\"^[5\\\\D]$\"}", "\"5\"");
    bad_has("{\"pattern\":\"^[5\\\\D]$\"}", "\"6\"", "does not match");
    ok("{\"pattern\":\"^[\\\\W]{2}$\"}", "\"!?\"");
    /* groups and quantifiers */
    ok("{\"pattern\":\"^(?:ab)+$\"}", "\"abab\"");
    ok("{\"pattern\":\"^(?<word>ab){2}$\"}", "\"abab\"");
    ok("{\"pattern\":\"^a{2,3}?b*?$\"}", "\"aab\"");
    ok("{\"pattern\":\"^(cat|dog)s?$\"}", "\"dogs\"");
    bad_has("{\"pattern\":\"^a{2}$\"}", "\"aaa\"", "does not match");
    ok("{\"pattern\":\"^[A-Za-z0-9_.-]{1,128}$\"}", "\"run_code.v2\"");
    ok("{\"pattern\":\"^(?:[a-z]{1,10}\\\\.){0,50}$\"}", "\"ab.cd.\"");
    ok("{\"pattern\":\"^.{0,1000}$\"}", "\"long enough\"");
    ok("{\"pattern\":\"^(?:[0-9a-f]{8}-){4}[0-9a-f]{12}$\"}",
       "\"0123abcd-0123abcd-0123abcd-0123abcd-0123456789ab\"");
    ok("{\"pattern\":\"^(a|b)*?c+?$\"}", "\"abcc\"");
}

/* ECMA-262 features beyond a POSIX ERE, with their ECMA-262 meaning. */
static void test_pattern_ecma(void **state)
{
    ok("{\"pattern\":\"^(?=.*\\\\d)(?!.*x).{3}$\"}", "\"ab1\"");
    bad_has("{\"pattern\":\"^(?=.*\\\\d)(?!.*x).{3}$\"}", "\"ax1\"",
            "does not match");
    ok("{\"pattern\":\"(?<=\\\\$)\\\\d+\"}", "\"cost $12\"");
    bad_has("{\"pattern\":\"(?<!\\\\$)\\\\b\\\\d+\"}", "\"$12\"",
            "does not match");
    ok("{\"pattern\":\"^(a+)b\\\\1$\"}", "\"aabaa\"");
    bad_has("{\"pattern\":\"^(a+)b\\\\1$\"}", "\"aaba\"", "does not match");
    ok("{\"pattern\":\"^(?<q>['\\\"]).*\\\\k<q>$\"}", "\"'x'\"");
    /* a reference to a group that did not take part matches empty */
    ok("{\"pattern\":\"^(?:(a)|b)\\\\1$\"}", "\"b\"");
    ok("{\"pattern\":\"\\\\bword\\\\b\"}", "\"a word here\"");
    bad_has("{\"pattern\":\"\\\\bword\\\\b\"}", "\"swordfish\"",
            "does not match");
    ok("{\"pattern\":\"^\\\\p{L}+$\"}", "\"\xC3\xA9t\xC3\xA9\"");
    bad_has("{\"pattern\":\"^\\\\P{L}$\"}", "\"a\"", "does not match");
    /* [] matches nothing, [^] anything */
    bad_has("{\"pattern\":\"a[]\"}", "\"a\"", "does not match");
    ok("{\"pattern\":\"^a[^]b$\"}", "\"a\\nb\"");
    /* wide ranges and large counts */
    ok("{\"pattern\":\"^[\\\\u4e00-\\\\u9fff]+$\"}",
       "\"\xE6\x97\xA5\xE6\x9C\xAC\"");
    {
        char inst[1100];
        memset(inst, 'a', sizeof(inst));
        inst[0] = '"';
        inst[1002] = '"';
        inst[1003] = '\0';
        ok("{\"pattern\":\"^a{1001}$\"}", inst);
        inst[1001] = '"';
        inst[1002] = '\0';
        bad_has("{\"pattern\":\"^a{1001}$\"}", inst, "does not match");
    }
    ok("{\"pattern\":\"^.{2,6665}$\"}", "\"ab\"");
    /* \s is ECMA-262's (Unicode spaces, U+FEFF), and so is \S in a class */
    ok("{\"pattern\":\"^\\\\s$\"}", "\"\xC2\xA0\"");
    ok("{\"pattern\":\"^\\\\s$\"}", "\"\xEF\xBB\xBF\"");
    bad_has("{\"pattern\":\"^\\\\S$\"}", "\"\xC2\xA0\"", "does not match");
    bad_has("{\"pattern\":\"^[\\\\S]$\"}", "\"\xE3\x80\x80\"",
            "does not match");
    ok("{\"pattern\":\"^[^a\\\\S]$\"}", "\"\xE3\x80\x80\"");
    bad_has("{\"pattern\":\"^[\\\\S]$\"}", "\"\xEF\xBB\xBF\"",
            "does not match");
    ok("{\"pattern\":\"^[^\\\\S]$\"}", "\"\xEF\xBB\xBF\"");
    ok("{\"pattern\":\"^[\\\\S\\\\u3000]$\"}", "\"\xE3\x80\x80\"");
    bad_has("{\"pattern\":\"^[^a\\\\S]$\"}", "\"b\"", "does not match");
    ok("{\"pattern\":\"^[a\\\\s]+$\"}", "\"a\xC2\xA0 a\"");
    /* '$' is the end of the string, not before a final newline */
    bad_has("{\"pattern\":\"^a$\"}", "\"a\\n\"", "does not match");
    /* '.' stops at U+2028 as well */
    bad_has("{\"pattern\":\"^.$\"}", "\"\xE2\x80\xA8\"", "does not match");
    /* control escapes */
    ok("{\"pattern\":\"^\\\\v\\\\cJ\\\\0?$\"}", "\"\\u000b\\n\"");
    ok("{\"pattern\":\"^\\\\u{1F600}$\"}", "\"\xF0\x9F\x98\x80\"");
    /* '[' in a class is a literal, not a POSIX [:class:] */
    ok("{\"pattern\":\"^[[:a]+$\"}", "\":a[\"");
    bad_has("{\"pattern\":\"^[[:alpha:]]$\"}", "\"b\"", "does not match");
    /* a subject that is not UTF-8 matches no character there, no error */
    {
        cJSON *s = parse("{\"pattern\":\"^.$\"}");
        cJSON *v = cJSON_CreateString("\xff");
        char err[256];
        assert_int_equal(schema_check(s, err, sizeof(err)), 0);
        assert_int_equal(schema_validate(s, v, "arguments", err, sizeof(err)),
                         -1);
        assert_non_null(strstr(err, "does not match"));
        cJSON_Delete(v);
        cJSON_Delete(s);
    }
}

/*
 * A pattern that backtracks catastrophically (nested quantifiers against a
 * value that almost matches) never hangs the call: an anchored one is
 * answered by PCRE2's DFA matcher, anything else fails the value with a
 * message once PCRE2's match limits are reached.
 */
static void test_pattern_backtracking(void **state)
{
    char value[80];
    char inst[96];

    memset(value, 'a', 60);
    value[60] = '!';
    value[61] = '\0';
    snprintf(inst, sizeof(inst), "\"%s\"", value);
    bad_has("{\"pattern\":\"^(a+)+$\"}", inst, "does not match pattern");
    bad_has("{\"pattern\":\"^(a|a)*$\"}", inst, "does not match pattern");
    bad_has("{\"pattern\":\"(a+)+$\"}", inst,
            "arguments: pattern '(a+)+$': matching gave up: the pattern "
            "backtracks too much on this value");
    bad_has("{\"pattern\":\"^(a+)+\\\\1$\"}", inst, "backtracks too much");
    bad_has("{\"properties\":{\"k\":{\"pattern\":\"(\\\\w+\\\\s?)*$\"}}}",
            "{\"k\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\"}",
            "arguments.k: pattern '(\\w+\\s?)*$': matching gave up");
    bad_has("{\"patternProperties\":{\"(a+)+$\":{}},"
            "\"additionalProperties\":false}",
            "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\":1}",
            "patternProperties key '(a+)+$': matching gave up");
    /* the same patterns still answer for values that do not explode */
    ok("{\"pattern\":\"(a+)+$\"}", "\"aaaa\"");
    bad_has("{\"pattern\":\"^(a+)+$\"}", "\"aa!\"", "does not match");
}

static void test_pattern_rejected(void **state)
{
    check_fails("{\"pattern\":\"[abc\"}", "unclosed '['");
    check_fails("{\"pattern\":\"(abc\"}", "missing closing parenthesis");
    check_fails("{\"pattern\":\"abc)\"}", "unmatched closing parenthesis");
    check_fails("{\"pattern\":\"a{x}\"}", "escape a literal brace");
    check_fails("{\"pattern\":\"\\\\q\"}", "unknown escape \\q");
    check_fails("{\"pattern\":\"\\\\u12\"}", "4 hex digits");
    check_fails("{\"pattern\":\"\\\\x4\"}", "2 hex digits");
    check_fails("{\"pattern\":\"\\\\ud800\"}", "lone surrogate");
    check_fails("{\"pattern\":\"\\\\u{110000}\"}", "beyond U+10FFFF");
    check_fails("{\"pattern\":\"[z-a]\"}", "range out of order");
    check_fails("{\"pattern\":\"a\\\\\"}", "lone backslash");
    /* an escape cut short by the end of the pattern */
    check_fails("{\"pattern\":\"\\\\p\"}", "must be followed by {property}");
    check_fails("{\"pattern\":\"\\\\P{L\"}", "must be followed by {property}");
    check_fails("{\"pattern\":\"\\\\u{\"}", "\\u{...} needs 1 to 8 hex digits");
    check_fails("{\"pattern\":\"(?<n\"}", "unclosed group name");
    check_fails("{\"pattern\":\"[\\\\\"}", "lone backslash");
    check_fails("{\"pattern\":\"(?i)a\"}", "group syntax (?i");
    check_fails("{\"pattern\":\"(?>a)\"}", "group syntax (?>");
    check_fails("{\"pattern\":\"a{3,2}\"}",
                "pattern 'a{3,2}' is not supported");
    /* PCRE2-only syntax is not ECMA-262 */
    check_fails("{\"pattern\":\"\\\\Aa\\\\z\"}", "unknown escape \\A");
    check_fails("{\"pattern\":\"\\\\Qa\\\\E\"}", "unknown escape \\Q");
    check_fails("{\"pattern\":\"(*UCP)\\\\w\"}",
                "nothing to repeat before '*'");
    check_fails("{\"pattern\":\"\\\\01\"}", "octal escapes are not ECMA-262");
    check_fails("{\"pattern\":\"\\\\c1\"}", "\\c must be followed by a letter");
    check_fails("{\"pattern\":\"[\\\\1]\"}",
                "backreference \\1 inside a class");
    check_fails("{\"pattern\":\"(a)\\\\2\"}", "non-existent");
    /* PCRE2 needs a bounded lookbehind */
    check_fails("{\"pattern\":\"(?<=a+)b\"}", "lookbehind");
    /* stacked quantifiers (ECMA-262 rejects them; a++ is possessive in
     * PCRE2) */
    check_fails("{\"pattern\":\"a++\"}", "a quantifier cannot follow another "
                                         "quantifier ('+'");
    check_fails("{\"pattern\":\"a{2}{3}\"}",
                "cannot follow another quantifier");
    check_fails("{\"pattern\":\"a*??\"}", "cannot follow another quantifier");
    check_fails("{\"pattern\":\"^\\\\d{3}+++++++++++++++\"}",
                "cannot follow another quantifier");
    check_fails("{\"pattern\":\"*a\"}", "nothing to repeat before '*'");
    check_fails("{\"pattern\":\"^?\"}", "nothing to repeat before '?'");
    check_fails("{\"pattern\":\"a|{2}\"}", "nothing to repeat before '{'");
    check_fails("{\"pattern\":\"a{70000}\"}", "too big");
    check_fails("{\"pattern\":\"((((((((((((((((((((((((((((((((("
                "((((((((((((((((((((((((((((((((("
                "a)))))))))))))))))))))))))))))))))"
                ")))))))))))))))))))))))))))))))))\"}",
                "too deeply nested");
    check_fails("{\"patternProperties\":{\"(?i)x\":{}}}",
                "patternProperties key '(?i)x' is not supported");
    /* the location is named */
    check_fails("{\"type\":\"object\",\"properties\":{\"a\":{\"pattern\":"
                "\"\\\\Ax\"}}}",
                "#/properties/a: pattern '\\Ax'");
}

/* ---- numbers ------------------------------------------------------------- */

static void test_numbers(void **state)
{
    const char *s = "{\"type\":\"object\",\"properties\":{\"t\":{"
                    "\"type\":\"number\",\"minimum\":1,\"maximum\":3600}}}";

    ok(s, "{\"t\":1}");
    ok(s, "{\"t\":3600}");
    bad(s, "{\"t\":0}", "arguments.t: must be >= 1, got 0");
    bad(s, "{\"t\":3600.5}", "arguments.t: must be <= 3600, got 3600.5");
    bad("{\"exclusiveMinimum\":0}", "0", "arguments: must be > 0, got 0");
    ok("{\"exclusiveMinimum\":0}", "0.001");
    bad("{\"exclusiveMaximum\":10}", "10", "arguments: must be < 10, got 10");
    ok("{\"exclusiveMaximum\":10}", "9.99");
    ok("{\"multipleOf\":0.1}", "0.3");
    ok("{\"multipleOf\":0.01}", "19.99");
    ok("{\"multipleOf\":3}", "-9");
    bad("{\"multipleOf\":0.5}", "0.3",
        "arguments: must be a multiple of 0.5, got 0.3");
    bad("{\"multipleOf\":2}", "7", "arguments: must be a multiple of 2, got 7");
    ok("{\"type\":\"integer\"}", "1e3");
    ok("{\"type\":\"integer\",\"maximum\":9007199254740993}",
       "9007199254740992");
    ok("{\"minimum\":5}", "\"strings are not numbers\"");
}

/* ---- enum and const ------------------------------------------------------ */

static void test_enum_const(void **state)
{
    const char *s = "{\"enum\":[\"python\",\"node\",3,null,{\"a\":[1]}]}";

    ok(s, "\"node\"");
    ok(s, "3.0");
    ok(s, "null");
    ok(s, "{\"a\":[1]}");
    bad(s, "\"ruby\"",
        "arguments: must be one of \"python\", \"node\", 3, null, {\"a\":[1]}; "
        "got string \"ruby\"");
    bad(s, "{\"a\":[2]}",
        "arguments: must be one of \"python\", \"node\", 3, "
        "null, {\"a\":[1]}; got object");
    ok("{\"const\":{\"x\":1,\"y\":2}}", "{\"y\":2,\"x\":1}");
    bad("{\"const\":\"v1\"}", "\"v2\"",
        "arguments: must be \"v1\"; got string \"v2\"");
    bad("{\"const\":true}", "1", "arguments: must be true; got number 1");
    /* long strings are cut in messages */
    bad_has("{\"const\":\"a\"}",
            "\"0123456789012345678901234567890123456789TAIL\"",
            "got string \"0123456789012345678901234567890123456789...\"");
}

/* ---- arrays -------------------------------------------------------------- */

static void test_arrays(void **state)
{
    const char *s = "{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
                    "\"minItems\":1,\"maxItems\":3,\"uniqueItems\":true}";

    ok(s, "[\"a\",\"b\"]");
    bad(s, "[]", "arguments: array has 0 items, fewer than minItems 1");
    bad(s, "[\"a\",\"b\",\"c\",\"d\"]",
        "arguments: array has 4 items, more than maxItems 3");
    bad(s, "[\"a\",5]", "arguments[1]: expected string, got number 5");
    bad(s, "[\"a\",\"b\",\"a\"]",
        "arguments: items [0] and [2] are equal, "
        "but uniqueItems requires distinct items");
    ok("{\"uniqueItems\":true}", "[1,\"1\",[1],{\"a\":1},{\"a\":2}]");
    bad_has("{\"uniqueItems\":true}", "[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1}]",
            "items [0] and [1] are equal");

    const char *tuple = "{\"type\":\"array\",\"prefixItems\":[{\"type\":"
                        "\"string\"},{\"type\":\"integer\"}],\"items\":false}";
    ok(tuple, "[\"a\",1]");
    ok(tuple, "[\"a\"]");
    bad(tuple, "[1,1]", "arguments[0]: expected string, got number 1");
    bad(tuple, "[\"a\",1,true]",
        "arguments: array has 3 items, but at most 2 are allowed");
    const char *rest = "{\"prefixItems\":[{\"const\":\"cmd\"}],"
                       "\"items\":{\"type\":\"number\"}}";
    ok(rest, "[\"cmd\",1,2]");
    bad(rest, "[\"cmd\",1,\"x\"]",
        "arguments[2]: expected number, got string \"x\"");

    const char *has = "{\"contains\":{\"type\":\"integer\"},\"minContains\":2,"
                      "\"maxContains\":3}";
    ok(has, "[1,\"a\",2]");
    bad(has, "[1,\"a\"]",
        "arguments: array needs at least 2 item(s) "
        "matching the \"contains\" schema, found 1");
    bad(has, "[1,2,3,4]",
        "arguments: array has 4 items matching the "
        "\"contains\" schema, more than maxContains 3");
    bad("{\"contains\":{\"const\":1}}", "[]",
        "arguments: array needs at least 1 item(s) matching the \"contains\" "
        "schema, found 0");
}

/* ---- combinators --------------------------------------------------------- */

static void test_any_one_all_not(void **state)
{
    const char *any = "{\"anyOf\":[{\"type\":\"string\",\"maxLength\":2},"
                      "{\"type\":\"integer\"}]}";
    ok(any, "\"ab\"");
    ok(any, "7");
    /* exactly one branch takes strings: its message is the useful one */
    bad(any, "\"abc\"", "arguments: string longer than maxLength 2");
    bad(any, "true", "arguments: expected string or integer, got boolean true");

    const char *any2 = "{\"anyOf\":[{\"minimum\":10},{\"maximum\":0}]}";
    bad(any2, "5",
        "arguments: does not match any alternative in anyOf; "
        "alternative 1: must be >= 10, got 5; alternative 2: "
        "must be <= 0, got 5");

    const char *one = "{\"oneOf\":[{\"type\":\"integer\"},"
                      "{\"type\":\"number\",\"minimum\":0}]}";
    ok(one, "-3");
    ok(one, "0.5");
    bad(one, "3",
        "arguments: matches more than one alternative in oneOf "
        "(1 and 2); it must match exactly one");
    bad(one, "\"x\"",
        "arguments: expected integer or number, got string \"x\"");

    const char *all = "{\"allOf\":[{\"type\":\"string\"},{\"minLength\":2}]}";
    ok(all, "\"ab\"");
    bad(all, "\"a\"", "arguments: string shorter than minLength 2");

    const char *no = "{\"not\":{\"type\":\"null\"}}";
    ok(no, "0");
    bad(no, "null", "arguments: must not match the schema in \"not\"");

    const char *cond = "{\"type\":\"object\",\"if\":{\"properties\":{\"kind\":"
                       "{\"const\":\"file\"}},\"required\":[\"kind\"]},"
                       "\"then\":{\"required\":[\"path\"]},"
                       "\"else\":{\"required\":[\"url\"]}}";
    ok(cond, "{\"kind\":\"file\",\"path\":\"/x\"}");
    ok(cond, "{\"kind\":\"web\",\"url\":\"u\"}");
    bad(cond, "{\"kind\":\"file\"}",
        "arguments: missing required property 'path'");
    bad(cond, "{\"kind\":\"web\"}",
        "arguments: missing required property 'url'");

    /* nested within properties: the path is kept */
    bad("{\"properties\":{\"a\":{\"anyOf\":[{\"type\":\"string\"},"
        "{\"type\":\"array\",\"items\":{\"type\":\"string\"}}]}}}",
        "{\"a\":[\"x\",1]}", "arguments.a[1]: expected string, got number 1");
}

static void test_boolean_schemas(void **state)
{
    ok("{\"properties\":{\"a\":true}}", "{\"a\":[1,2]}");
    bad("{\"properties\":{\"a\":false}}", "{\"a\":1}",
        "arguments.a: no value is allowed here");
    ok("{\"properties\":{\"a\":false}}", "{}");
}

/* ---- $ref ---------------------------------------------------------------- */

/* The conformance suite's json_schema_2020_12_tool input schema, verbatim. */
static const char *conformance_schema =
    "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
    "\"type\":\"object\","
    "\"$defs\":{\"address\":{\"type\":\"object\",\"properties\":{"
    "\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"
    "\"properties\":{\"name\":{\"type\":\"string\"},"
    "\"address\":{\"$ref\":\"#/$defs/address\"}},"
    "\"additionalProperties\":false}";

static void test_conformance_schema(void **state)
{
    cJSON *s = parse(conformance_schema);
    char err[256];

    assert_int_equal(schema_check_tool_input(s, err, sizeof(err)), 0);
    cJSON_Delete(s);
    ok(conformance_schema, "{}");
    ok(conformance_schema,
       "{\"name\":\"Ada\",\"address\":{\"street\":\"1 Main\",\"city\":\"X\"}}");
    bad(conformance_schema, "{\"address\":{\"city\":7}}",
        "arguments.address.city: expected string, got number 7");
    bad(conformance_schema, "{\"address\":\"Main St\"}",
        "arguments.address: expected object, got string \"Main St\"");
    bad(conformance_schema, "{\"nme\":\"Ada\"}",
        "arguments: unknown property 'nme' (allowed: name, address); "
        "did you mean 'name'?");
}

static void test_refs(void **state)
{
    const char *defs = "{\"type\":\"object\",\"definitions\":{\"id\":{"
                       "\"type\":\"string\",\"pattern\":\"^dbx_\"}},"
                       "\"properties\":{\"devbox_id\":{\"$ref\":"
                       "\"#/definitions/id\",\"maxLength\":8}}}";
    ok(defs, "{\"devbox_id\":\"dbx_1\"}");
    bad(defs, "{\"devbox_id\":\"box_1\"}",
        "arguments.devbox_id: string \"box_1\" does not match pattern '^dbx_'");
    /* siblings of $ref apply too (2020-12) */
    bad(defs, "{\"devbox_id\":\"dbx_123456\"}",
        "arguments.devbox_id: string longer than maxLength 8");

    /* JSON pointer escapes: ~1 is '/', ~0 is '~', %25 is '%' */
    const char *esc = "{\"$defs\":{\"a/b\":{\"type\":\"integer\"},"
                      "\"c~d\":{\"type\":\"string\"},\"e%f\":{\"const\":1}},"
                      "\"properties\":{\"x\":{\"$ref\":\"#/$defs/a~1b\"},"
                      "\"y\":{\"$ref\":\"#/$defs/c~0d\"},"
                      "\"z\":{\"$ref\":\"#/$defs/e%25f\"}}}";
    ok(esc, "{\"x\":1,\"y\":\"s\",\"z\":1}");
    bad(esc, "{\"x\":\"1\"}",
        "arguments.x: expected integer, got string \"1\"");
    bad(esc, "{\"y\":1}", "arguments.y: expected string, got number 1");

    /* recursion that consumes input is fine */
    const char *tree = "{\"$defs\":{\"node\":{\"type\":\"object\","
                       "\"properties\":{\"v\":{\"type\":\"integer\"},"
                       "\"kids\":{\"type\":\"array\",\"items\":"
                       "{\"$ref\":\"#/$defs/node\"}}},"
                       "\"additionalProperties\":false}},"
                       "\"$ref\":\"#/$defs/node\"}";
    ok(tree, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":3}]}]}");
    bad(tree, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":\"x\"}]}]}",
        "arguments.kids[0].kids[0].v: expected integer, got string \"x\"");
    /* a target under an unknown keyword works like one in $defs */
    ok("{\"x-lib\":{\"id\":{\"type\":\"string\"}},\"properties\":{\"a\":"
       "{\"$ref\":\"#/x-lib/id\"}}}",
       "{\"a\":\"s\"}");
    bad("{\"x-lib\":{\"id\":{\"type\":\"string\"}},\"properties\":{\"a\":"
        "{\"$ref\":\"#/x-lib/id\"}}}",
        "{\"a\":1}", "arguments.a: expected string, got number 1");
    /* "#" is the root */
    ok("{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}}}",
       "{\"next\":{\"next\":{}}}");
}

static void test_ref_cycles(void **state)
{
    check_fails("{\"type\":\"object\",\"$defs\":{\"a\":{\"$ref\":"
                "\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},"
                "\"properties\":{\"x\":{\"$ref\":\"#/$defs/a\"}}}",
                "$ref cycle");
    check_fails("{\"$ref\":\"#\"}", "$ref cycle");
    check_fails("{\"allOf\":[{\"$ref\":\"#\"}]}", "$ref cycle");
    check_fails("{\"$defs\":{\"a\":{\"anyOf\":[{\"type\":\"string\"},"
                "{\"not\":{\"$ref\":\"#/$defs/a\"}}]}}}",
                "$ref cycle");

    /* the same cycle, unchecked, must not hang or overflow at validation */
    cJSON *s = parse("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},"
                     "\"b\":{\"$ref\":\"#/$defs/a\"}},"
                     "\"properties\":{\"x\":{\"$ref\":\"#/$defs/a\"}}}");
    cJSON *i = parse("{\"x\":1}");
    char err[512];
    assert_int_equal(schema_validate(s, i, "arguments", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "schema error at arguments.x: more than 64 "
                                "nested schemas apply here"));
    cJSON_Delete(s);
    cJSON_Delete(i);
}

/* ---- deep instances ------------------------------------------------------ */

static char *nested(const char *open, const char *mid, const char *close,
                    int depth)
{
    size_t lo = strlen(open), lc = strlen(close), lm = strlen(mid);
    char *buf = malloc((lo + lc) * (size_t)depth + lm + 1);
    char *p = buf;
    int i;

    for (i = 0; i < depth; i++, p += lo) {
        memcpy(p, open, lo);
    }
    memcpy(p, mid, lm);
    p += lm;
    for (i = 0; i < depth; i++, p += lc) {
        memcpy(p, close, lc);
    }
    *p = '\0';
    return buf;
}

static void test_deep_instances(void **state)
{
    const char *rec = "{\"type\":\"object\",\"additionalProperties\":"
                      "{\"$ref\":\"#\"}}";
    char *shallow = nested("{\"a\":", "{}", "}", 20);
    char *deep = nested("{\"a\":", "{}", "}", 500);
    char *arrays = nested("[", "1", "]", 900);
    char err[512];

    ok(rec, shallow);
    assert_int_equal(run(rec, deep, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "more than 64 nested schemas apply here"));
    /* a schema that does not descend never looks deep */
    ok("{\"type\":\"array\"}", arrays);
    bad("{\"type\":\"object\"}", arrays,
        "arguments: expected object, got array");
    ok("{}", deep);
    free(shallow);
    free(deep);
    free(arrays);
}

/* ---- registration checks ------------------------------------------------- */

static void test_check_keywords(void **state)
{
    check_fails("[]", "the schema must be a JSON object, got array");
    check_fails("{\"type\":\"text\"}", "unknown type 'text'");
    check_fails("{\"type\":[]}", "must not be an empty array");
    check_fails("{\"type\":[\"string\",\"string\"]}", "lists 'string' twice");
    check_fails("{\"type\":5}", "\"type\" must be a type name");
    check_fails("{\"properties\":{\"a\":{\"minLength\":-1}}}",
                "#/properties/a: \"minLength\" must be a non-negative "
                "integer, got number -1");
    check_fails("{\"maxItems\":1.5}", "\"maxItems\" must be a non-negative");
    check_fails("{\"minimum\":\"5\"}",
                "#: \"minimum\" must be a number, got string \"5\"");
    check_fails("{\"multipleOf\":0}",
                "\"multipleOf\" must be a number greater");
    check_fails("{\"exclusiveMinimum\":true}", "draft-04 form");
    check_fails("{\"required\":\"a\"}", "\"required\" must be an array");
    check_fails("{\"required\":[\"a\",\"a\"]}", "lists 'a' twice");
    check_fails("{\"required\":[1]}", "must hold only strings");
    check_fails("{\"properties\":[]}", "\"properties\" must be an object");
    check_fails("{\"properties\":{\"a\":5}}",
                "#/properties/a: a schema must be an object or a boolean");
    check_fails("{\"items\":[{}]}", "the array form of \"items\" is draft-07");
    check_fails("{\"anyOf\":[]}", "\"anyOf\" must be a non-empty array");
    check_fails("{\"allOf\":{}}", "\"allOf\" must be a non-empty array");
    check_fails("{\"enum\":[]}", "\"enum\" must be a non-empty array");
    check_fails("{\"uniqueItems\":\"yes\"}", "must be true or false");
    check_fails("{\"unevaluatedProperties\":false}",
                "\"unevaluatedProperties\" is not supported");
    check_fails("{\"dependencies\":{}}", "dependentRequired");
    check_fails("{\"$ref\":\"other.json#/x\"}", "only references inside");
    check_fails("{\"$ref\":\"#anchor\"}", "anchors are not supported");
    check_fails("{\"$ref\":\"#/$defs/missing\"}", "does not resolve");
    check_fails("{\"$ref\":5}", "\"$ref\" must be a string");
    check_fails("{\"properties\":{\"a\":{\"$id\":\"x\"}}}",
                "\"$id\" inside a subschema");
    check_fails("{\"minLength\":5,\"maxLength\":3}",
                "\"minLength\" 5 is greater than \"maxLength\" 3");
    check_fails("{\"minimum\":2,\"maximum\":1}", "\"minimum\" 2 is greater");
    check_fails(
        "{\"type\":\"object\",\"properties\":{\"a\":{}},"
        "\"required\":[\"b\"],\"additionalProperties\":false}",
        "\"required\" lists 'b', but \"additionalProperties\" is false");
    check_fails("{\"dependentRequired\":{\"a\":\"b\"}}", "must be an array");
    check_fails("{\"properties\":{\"a\":{\"properties\":{\"b\":{\"items\":"
                "{\"type\":\"x\"}}}}}}",
                "#/properties/a/properties/b/items: unknown type 'x'");
    check_fails("{\"$defs\":{\"a/b\":{\"type\":1}}}", "#/$defs/a~1b:");
    /* a $ref target outside the known keywords is checked too */
    check_fails("{\"x-lib\":{\"a\":{\"$ref\":\"#/nowhere\"}},"
                "\"properties\":{\"x\":{\"$ref\":\"#/x-lib/a\"}}}",
                "#/x-lib/a: $ref '#/nowhere' does not resolve");
    check_fails("{\"x-lib\":{\"a\":{\"minimum\":\"1\"}},"
                "\"properties\":{\"x\":{\"$ref\":\"#/x-lib/a\"}}}",
                "#/x-lib/a: \"minimum\" must be a number");
    check_fails("{\"x-lib\":{\"a\":{\"$ref\":\"#/x-lib/a\"}},"
                "\"properties\":{\"x\":{\"$ref\":\"#/x-lib/a\"}}}",
                "$ref cycle");
}

static void test_check_accepts(void **state)
{
    /* annotations and unknown keywords are ignored; nullable has no effect */
    const char *s =
        "{\"type\":\"object\",\"title\":\"T\",\"description\":\"d\","
        "\"examples\":[{}],\"x-vendor\":{\"type\":5},"
        "\"properties\":{\"url\":{\"type\":\"string\",\"format\":"
        "\"uri\",\"default\":\"x\",\"nullable\":true,"
        "\"deprecated\":true,\"readOnly\":true}},"
        "\"required\":[\"url\"]}";
    cJSON *v = parse(s);
    char err[256];

    assert_int_equal(schema_check(v, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    assert_int_equal(schema_check_tool_input(v, err, sizeof(err)), 0);
    cJSON_Delete(v);
    ok(s, "{\"url\":\"not a uri, format is an annotation\"}");
    bad(s, "{\"url\":null}", "arguments.url: expected string, got null");
    ok("{\"properties\":{\"a\":true,\"b\":false}}", "{}");
}

static void test_check_tool_roots(void **state)
{
    char err[256];
    cJSON *v = parse("{\"properties\":{}}");

    assert_int_equal(schema_check(v, err, sizeof(err)), 0);
    assert_int_equal(schema_check_tool_input(v, err, sizeof(err)), -1);
    assert_string_equal(err, "#: an MCP inputSchema must have \"type\": "
                             "\"object\" at the top level, got no \"type\"");
    cJSON_Delete(v);
    v = parse("{\"type\":\"array\"}");
    assert_int_equal(schema_check_tool_output(v, err, sizeof(err)), -1);
    assert_string_equal(err, "#: an MCP outputSchema must have \"type\": "
                             "\"object\" at the top level, got string "
                             "\"array\"");
    cJSON_Delete(v);
    v = parse("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"q\"}}}");
    assert_int_equal(schema_check_tool_input(v, err, sizeof(err)), -1);
    assert_string_equal(err, "#/properties/a: unknown type 'q' (use null, "
                             "boolean, object, array, number, integer or "
                             "string)");
    cJSON_Delete(v);
    /* Array members are located by index, object members by key. */
    v = parse("{\"type\":\"object\",\"allOf\":[{},{\"$defs\":{\"d\":"
              "{\"type\":\"q\"}}}]}");
    assert_int_equal(schema_check_tool_input(v, err, sizeof(err)), -1);
    assert_string_equal(err, "#/allOf/1/$defs/d: unknown type 'q' (use null, "
                             "boolean, object, array, number, integer or "
                             "string)");
    cJSON_Delete(v);
    assert_int_equal(schema_check(NULL, err, sizeof(err)), -1);
    assert_int_equal(schema_check_tool_input(NULL, NULL, 0), -1);
}

/* ---- unchecked schemas, buffers, threads --------------------------------- */

static void test_unchecked_schema_errors(void **state)
{
    const char *cases[][2] = {
        {"{\"properties\":{\"a\":{\"minLength\":\"x\"}}}", "{\"a\":\"s\"}"},
        {"{\"properties\":{\"a\":{\"pattern\":\"(?i)x\"}}}", "{\"a\":\"s\"}"},
        {"{\"patternProperties\":[1]}", "{\"a\":1}"},
        {"{\"type\":7}", "1"},
        {"{\"$ref\":\"#/nope\"}", "1"},
        {"{\"properties\":{\"a\":3}}", "{\"a\":1}"},
        {"{\"allOf\":{}}", "1"},
    };
    size_t i;
    char err[512];

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *s = parse(cases[i][0]);
        cJSON *v = parse(cases[i][1]);
        assert_int_equal(schema_validate(s, v, NULL, err, sizeof(err)), -1);
        if (strncmp(err, "schema error at value", 21) != 0) {
            fail_msg("case %zu: %s", i, err);
        }
        cJSON_Delete(s);
        cJSON_Delete(v);
    }
}

static void test_buffers(void **state)
{
    cJSON *s = parse(exec_schema);
    cJSON *v = parse("{\"comand\":\"ls\"}");
    char small[16];

    assert_int_equal(schema_validate(s, v, "arguments", NULL, 0), -1);
    memset(small, 'Z', sizeof(small));
    assert_int_equal(schema_validate(s, v, "arguments", small, sizeof(small)),
                     -1);
    assert_string_equal(small, "arguments: unkn");
    assert_int_equal(
        schema_validate(s, NULL, "arguments", small, sizeof(small)), -1);
    assert_int_equal(schema_check(s, NULL, 0), 0);
    cJSON_Delete(s);
    cJSON_Delete(v);
}

struct worker {
    const cJSON *schema;
    int failures;
};

static void *validate_many(void *arg)
{
    struct worker *w = arg;
    char err[256];
    char text[64];
    int i;

    for (i = 0; i < 2000; i++) {
        cJSON *v = NULL;
        snprintf(text, sizeof(text), "{\"id\":\"dbx_%d\",\"n\":%d}", i, i % 7);
        v = cJSON_Parse(text);
        if (schema_validate(w->schema, v, "arguments", err, sizeof(err)) != 0) {
            w->failures++;
        }
        cJSON_Delete(v);
        v = cJSON_Parse("{\"id\":\"nope\"}");
        if (schema_validate(w->schema, v, "arguments", err, sizeof(err)) == 0 ||
            strstr(err, "does not match pattern") == NULL) {
            w->failures++;
        }
        cJSON_Delete(v);
    }
    return NULL;
}

static void test_threads(void **state)
{
    /* Fresh patterns so the threads race to compile and cache them. */
    cJSON *s = parse("{\"type\":\"object\",\"properties\":{"
                     "\"id\":{\"type\":\"string\",\"pattern\":"
                     "\"^dbx_[0-9]+$\"},"
                     "\"n\":{\"type\":\"integer\",\"maximum\":6}},"
                     "\"patternProperties\":{\"^[a-z]+$\":{}},"
                     "\"additionalProperties\":false}");
    pthread_t th[6];
    struct worker w[6];
    int i;

    schema_cleanup();
    for (i = 0; i < 6; i++) {
        w[i].schema = s;
        w[i].failures = 0;
        assert_int_equal(pthread_create(&th[i], NULL, validate_many, &w[i]), 0);
    }
    for (i = 0; i < 6; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].failures, 0);
    }
    cJSON_Delete(s);
    schema_cleanup();
    /* usable again after cleanup */
    ok("{\"pattern\":\"^a+$\"}", "\"aaa\"");
}

/* A large array must not cost n^2 comparisons; duplicates far apart. */
static void test_unique_large(void **state)
{
    const int n = 50000;
    cJSON *s = parse("{\"type\":\"array\",\"uniqueItems\":true}");
    cJSON *arr = cJSON_CreateArray();
    cJSON *objs = cJSON_CreateArray();
    char err[256];
    int i;

    for (i = 0; i < n; i++) {
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(i * 0.5));
    }
    assert_int_equal(schema_validate(s, arr, "arguments", err, sizeof(err)), 0);
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(7.0)); /* equals item 14 */
    assert_int_equal(schema_validate(s, arr, "arguments", err, sizeof(err)),
                     -1);
    assert_string_equal(err, "arguments: items [14] and [50000] are equal, but "
                             "uniqueItems requires distinct items");
    for (i = 0; i < 100; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "a", i);
        cJSON_AddStringToObject(o, "b", "x");
        cJSON_AddItemToArray(objs, o);
    }
    assert_int_equal(schema_validate(s, objs, "arguments", err, sizeof(err)),
                     0);
    cJSON_AddItemToArray(objs, parse("{\"b\":\"x\",\"a\":42}"));
    assert_int_equal(schema_validate(s, objs, "arguments", err, sizeof(err)),
                     -1);
    assert_non_null(strstr(err, "items [42] and [100] are equal"));
    cJSON_Delete(arr);
    cJSON_Delete(objs);
    cJSON_Delete(s);
}

/* Numbers are equal by value, exactly (not cJSON_Compare's slack). */
static void test_equality(void **state)
{
    ok("{\"enum\":[1]}", "1.0");
    ok("{\"const\":0}", "-0");
    bad_has("{\"enum\":[0.3]}", "0.30000000000000004", "must be one of 0.3");
    ok("{\"const\":[1,{\"a\":null}]}", "[1.0,{\"a\":null}]");
    bad_has("{\"const\":[1,2]}", "[2,1]", "must be [1,2]");
    bad_has("{\"const\":{\"a\":1}}", "{\"a\":1,\"b\":2}", "must be {\"a\":1}");
    bad_has("{\"const\":\"1\"}", "1", "must be \"1\"");
    ok("{\"uniqueItems\":true}", "[0.1,0.30000000000000004,0.3]");
}

static bool valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    while (*p != '\0') {
        int n = *p < 0x80    ? 0
                : *p >= 0xF0 ? 3
                : *p >= 0xE0 ? 2
                : *p >= 0xC0 ? 1
                             : -1;
        if (n < 0) {
            return false;
        }
        for (p++; n > 0; n--, p++) {
            if ((*p & 0xC0) != 0x80) {
                return false;
            }
        }
    }
    return true;
}

/* Messages are cut at a character boundary, never inside UTF-8. */
static void test_utf8_messages(void **state)
{
    cJSON *s = parse(exec_schema);
    cJSON *v = parse("{\"\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                     "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                     "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                     "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                     "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                     "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                     "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"
                     "\":1}");
    char err[512];
    size_t len;

    for (len = 20; len < 120; len++) {
        assert_int_equal(schema_validate(s, v, "arguments", err, len), -1);
        if (!valid_utf8(err)) {
            fail_msg("errlen %zu: cut inside a character: %s", len, err);
        }
    }
    assert_int_equal(schema_validate(s, v, "arguments", err, sizeof(err)), -1);
    /* the same for a quoted value, at every buffer size */
    {
        cJSON *ps = parse("{\"pattern\":\"^x\"}");
        cJSON *pv = parse("\"\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80\xC3\xA9"
                          "\xE6\x97\xA5\xF0\x9F\x98\x80\"");
        for (len = 1; len < 80; len++) {
            assert_int_equal(schema_validate(ps, pv, "arguments", err, len),
                             -1);
            if (!valid_utf8(err)) {
                fail_msg("errlen %zu: cut inside a character: %s", len, err);
            }
        }
        cJSON_Delete(ps);
        cJSON_Delete(pv);
    }
    /* the name is shown up to 40 characters, also in a path */
    assert_int_equal(run("{\"additionalProperties\":{\"type\":\"string\"}}",
                         "{\"0123456789012345678901234567890123456789xyz\":1}",
                         err, sizeof(err)),
                     -1);
    assert_string_equal(err,
                        "arguments.0123456789012345678901234567890123456789..."
                        ": expected string, got number 1");
    assert_int_equal(schema_validate(s, v, "arguments", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "\xC3\xA9...' (allowed: command, devbox_id)"));
    cJSON_Delete(s);
    cJSON_Delete(v);

    /* a path longer than the path buffer stays valid UTF-8 too */
    char *deep = malloc(20000);
    char *schema = malloc(20000);
    char *p = deep;
    char *q = schema;
    int i;
    for (i = 0; i < 55; i++) {
        p += sprintf(p, "{\"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\":");
        q += sprintf(q, "{\"additionalProperties\":");
    }
    p += sprintf(p, "5");
    q += sprintf(q, "{\"type\":\"string\"}");
    for (i = 0; i < 55; i++) {
        *p++ = '}';
        *q++ = '}';
    }
    *p = '\0';
    *q = '\0';
    s = parse(schema);
    v = parse(deep);
    assert_int_equal(schema_check(s, err, sizeof(err)), 0);
    assert_int_equal(schema_validate(s, v, "arguments", err, sizeof(err)), -1);
    assert_true(valid_utf8(err));
    /* the middle of a long path gives way to the reason */
    assert_non_null(strstr(err, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E.(...)."));
    assert_non_null(strstr(err,
                           "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E: expected "
                           "string, got number 5"));
    assert_int_equal(strncmp(err, "arguments.\xE6\x97\xA5", 13), 0);
    cJSON_Delete(s);
    cJSON_Delete(v);
    free(deep);
    free(schema);
}

static void test_check_duplicates(void **state)
{
    check_fails("{\"type\":\"object\",\"type\":\"string\"}",
                "#: the key \"type\" appears twice; keep one");
    check_fails("{\"properties\":{\"a\":{},\"a\":{\"type\":\"string\"}}}",
                "#/properties: the key \"a\" appears twice");
}

static int teardown_all(void **state)
{
    schema_cleanup();
    return 0;
}

/* The listed outputSchema admits an error object besides the result. */
static bool valid(const cJSON *schema, const char *json)
{
    cJSON *v = parse(json);
    bool ok = schema_validate(schema, v, "structuredContent", NULL, 0) == 0;

    cJSON_Delete(v);
    return ok;
}

static void test_admit_error(void **state)
{
    cJSON *plain = parse("{\"type\":\"object\",\"properties\":{\"n\":"
                         "{\"type\":\"integer\"}},\"required\":[\"n\"]}");
    cJSON *strict = parse("{\"type\":\"object\",\"additionalProperties\":"
                          "false,\"properties\":{\"n\":{\"type\":"
                          "\"integer\"}},\"required\":[\"n\"]}");
    cJSON *own = parse("{\"type\":\"object\",\"properties\":{\"error\":"
                       "{\"type\":\"string\"}},\"required\":[\"error\"]}");
    cJSON *w = NULL;

    (void)state;
    assert_false(valid(plain, "{\"error\":{\"code\":\"x\"}}"));
    w = schema_admit_error(plain);
    assert_non_null(w);
    assert_int_equal(schema_check_tool_output(w, NULL, 0), 0);
    assert_null(cJSON_GetObjectItem(w, "required"));
    assert_non_null(cJSON_GetObjectItem(w, "anyOf"));
    assert_true(valid(w, "{\"error\":{\"code\":\"x\"}}"));
    assert_true(valid(w, "{\"error\":{\"code\":\"x\"},\"result\":{}}"));
    assert_true(valid(w, "{\"n\":1}"));
    /* Still a result's shape: the properties it has keep their types. */
    assert_false(valid(w, "{}"));
    assert_false(valid(w, "{\"n\":\"1\"}"));
    assert_false(valid(w, "{\"error\":{},\"n\":\"1\"}"));
    cJSON_Delete(w);
    /* additionalProperties false: "error" becomes a property. */
    w = schema_admit_error(strict);
    assert_true(valid(w, "{\"error\":{\"code\":\"x\"}}"));
    assert_false(valid(w, "{\"error\":{},\"result\":{}}"));
    assert_false(valid(w, "{\"error\":\"x\"}"));
    assert_true(valid(w, "{\"n\":1}"));
    assert_false(valid(w, "{\"n\":1,\"m\":2}"));
    cJSON_Delete(w);
    /* Not widened where it cannot be safely: copied unchanged. */
    w = schema_admit_error(own);
    assert_true(cJSON_Compare(w, own, true));
    cJSON_Delete(w);
    cJSON_Delete(plain);
    cJSON_Delete(strict);
    cJSON_Delete(own);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type),
        cmocka_unit_test(test_required),
        cmocka_unit_test(test_additional_properties),
        cmocka_unit_test(test_pattern_properties),
        cmocka_unit_test(test_object_counts_and_dependencies),
        cmocka_unit_test(test_string_lengths),
        cmocka_unit_test(test_pattern),
        cmocka_unit_test(test_pattern_ecma),
        cmocka_unit_test(test_pattern_backtracking),
        cmocka_unit_test(test_pattern_rejected),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_enum_const),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_any_one_all_not),
        cmocka_unit_test(test_boolean_schemas),
        cmocka_unit_test(test_conformance_schema),
        cmocka_unit_test(test_refs),
        cmocka_unit_test(test_ref_cycles),
        cmocka_unit_test(test_deep_instances),
        cmocka_unit_test(test_check_keywords),
        cmocka_unit_test(test_check_accepts),
        cmocka_unit_test(test_check_tool_roots),
        cmocka_unit_test(test_unchecked_schema_errors),
        cmocka_unit_test(test_buffers),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_unique_large),
        cmocka_unit_test(test_equality),
        cmocka_unit_test(test_utf8_messages),
        cmocka_unit_test(test_check_duplicates),
        cmocka_unit_test(test_admit_error),
    };

    return cmocka_run_group_tests(tests, NULL, teardown_all);
}
