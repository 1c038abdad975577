/* Unit tests of the local Dockerfile parser: supported instructions,
 * continuations, comments, exec-form RUN, ENV/ARG forms, and each kind of
 * bad input refused with the line named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dockerfile.h"

static void test_supported(void **state)
{
    struct df_file f;
    char err[512] = "";
    const char *text =
        "# syntax comment\n"
        "ARG BASE=x\n"
        "FROM runloop:runloop/starter-x86_64 AS build\n"
        "\n"
        "ENV A=1 B=\"two words\" \\\n"
        "    C='lit $X'\n"
        "env LEGACY some value here\n"
        "ARG NAME\n"
        "WORKDIR /home/user/app\n"
        "USER user\n"
        "COPY ./conf.json dest/\n"
        "RUN echo one && \\\n"
        "  # a comment inside\n"
        "  echo two\n"
        "RUN [\"sh\", \"-c\", \"echo it's\"]\n";

    (void)state;
    assert_int_equal(dockerfile_parse(text, &f, err, sizeof(err)), 0);
    assert_int_equal(f.n, 10);
    assert_int_equal(f.steps[0].kind, DF_ARG);
    assert_int_equal(f.steps[0].line, 2);
    assert_string_equal(f.steps[0].pairs[0].key, "BASE");
    assert_string_equal(f.steps[0].pairs[0].value, "x");
    assert_int_equal(f.steps[1].kind, DF_FROM);
    assert_string_equal(f.steps[1].arg, "runloop:runloop/starter-x86_64");
    assert_int_equal(f.steps[2].kind, DF_ENV);
    assert_int_equal(f.steps[2].line, 5);
    assert_int_equal(f.steps[2].n_pairs, 3);
    assert_string_equal(f.steps[2].pairs[1].value, "two words");
    assert_string_equal(f.steps[2].pairs[2].value, "lit $X");
    assert_string_equal(f.steps[3].pairs[0].key, "LEGACY");
    assert_string_equal(f.steps[3].pairs[0].value, "some value here");
    assert_int_equal(f.steps[3].line, 7);
    assert_null(f.steps[4].pairs[0].value);
    assert_string_equal(f.steps[5].arg, "/home/user/app");
    assert_string_equal(f.steps[6].arg, "user");
    assert_string_equal(f.steps[7].src, "./conf.json");
    assert_string_equal(f.steps[7].dst, "dest/");
    assert_string_equal(f.steps[8].arg, "echo one && echo two");
    assert_int_equal(f.steps[8].line, 12);
    assert_string_equal(f.steps[9].arg, "'sh' '-c' 'echo it'\\''s'");
    assert_int_equal(f.steps[9].line, 15);
    dockerfile_free(&f);
}

static void expect_bad(const char *text, const char *needle)
{
    struct df_file f;
    char err[512] = "";

    assert_int_equal(dockerfile_parse(text, &f, err, sizeof(err)), -1);
    if (strstr(err, needle) == NULL)
        fail_msg("error \"%s\" lacks \"%s\"", err, needle);
    assert_null(f.steps);
}

static void test_bad_input(void **state)
{
    (void)state;
    expect_bad("FROM a\nRUN true\nEXPOSE 80\n", "line 3: EXPOSE is not supported by the local engine");
    expect_bad("FROM a\nADD x /y\n", "line 2: ADD is not supported");
    expect_bad("FROM a\nCMD [\"x\"]\n", "line 2: CMD is not supported");
    expect_bad("FROM a\nHEALTHCHECK NONE\n", "HEALTHCHECK is not supported");
    expect_bad("FROM a\nFROWN x\n", "line 2: unknown instruction \"FROWN\"");
    expect_bad("RUN true\n", "line 1: RUN before FROM");
    expect_bad("# only a comment\n", "has no FROM");
    expect_bad("", "has no FROM");
    expect_bad("FROM a\nFROM b\n", "line 2: a second FROM");
    expect_bad("FROM\n", "line 1: FROM needs an argument");
    expect_bad("FROM a b\n", "FROM <image> [AS name]");
    expect_bad("FROM --platform=x a\n", "FROM option --platform=x");
    expect_bad("FROM a\nENV 1A=x\n", "not a valid variable name");
    expect_bad("FROM a\nENV A\n", "ENV A has no value");
    expect_bad("FROM a\nENV A=\"unterminated\n", "check the quotes");
    expect_bad("FROM a\nARG -x\n", "not a valid variable name");
    expect_bad("FROM a\nCOPY onlyone\n", "one source");
    expect_bad("FROM a\nCOPY a b c\n", "got 3 arguments");
    expect_bad("FROM a\nCOPY --chown=1 a b\n", "COPY option --chown=1");
    expect_bad("FROM a\nRUN --mount=type=cache,id=../../..,target=/h ls /h\n",
               "line 2: RUN option --mount is not supported by the native "
               "builder");
    expect_bad("FROM a\nRUN --network=host true\n", "RUN option --network");
    expect_bad("FROM a\nWORKDIR a b\n", "WORKDIR takes exactly one value");
    expect_bad("FROM a\nUSER\n", "line 2: USER needs an argument");
    expect_bad("FROM a\nRUN [1, 2]\n", "JSON array of strings");
    expect_bad("FROM a\nRUN [\"x\"\n", "JSON array of strings");
    expect_bad("FROM a\nRUN []\n", "JSON array of strings");
}

static void test_limits(void **state)
{
    struct df_file f;
    char err[512] = "";
    size_t n = DOCKERFILE_MAX + 10;
    char *big = malloc(n + 1);
    char *many = NULL;
    size_t i, o = 0;

    (void)state;
    assert_non_null(big);
    memset(big, 'a', n);
    big[n] = '\0';
    assert_int_equal(dockerfile_parse(big, &f, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "at most"));
    assert_int_equal(dockerfile_parse(NULL, &f, err, sizeof(err)), -1);
    free(big);
    many = malloc(1002 * 10 + 16);
    assert_non_null(many);
    o += (size_t)sprintf(many, "FROM a\n");
    for (i = 0; i < 1001; i++)
        o += (size_t)sprintf(many + o, "RUN true\n");
    assert_int_equal(dockerfile_parse(many, &f, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "more than 1000 instructions"));
    free(many);
    /* A continuation at the very end and CRLF line ends still parse. */
    assert_int_equal(dockerfile_parse("FROM a\r\nRUN echo \\\r\n", &f, err, sizeof(err)), 0);
    assert_int_equal(f.n, 2);
    assert_string_equal(f.steps[1].arg, "echo");
    dockerfile_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_supported),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_limits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
