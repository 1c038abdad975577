/* Unit tests of the Dockerfile devboxd gives buildah: FROM names resolved
 * (stage names kept), heredocs in forms buildah 1.28 runs, file_mounts
 * copied in after the final FROM, setup commands appended as user, the
 * steps' origins for the log, and each bad input refused with the line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buildah_dockerfile.h"

/* Knows "starter" (any runloop/ name) and the blueprint "base". */
static int resolve(void *ctx, const char *name, char **local, char *err,
                   size_t errlen)
{
    (void)ctx;
    if (name == NULL || strncmp(name, "runloop/", 8) == 0) {
        *local = strdup("local/starter");
        return 0;
    }
    if (strcmp(name, "base") == 0) {
        *local = strdup("local/base");
        return 0;
    }
    snprintf(err, errlen, "no image or built blueprint of that name");
    return -1;
}

static int prepare(const char *json, struct buildah_dockerfile_out *out,
                   char *err, size_t errlen)
{
    cJSON *params = cJSON_Parse(json);
    int rc;

    assert_non_null(params);
    rc = buildah_dockerfile_prepare(params, resolve, NULL, out, err, errlen);
    cJSON_Delete(params);
    return rc;
}

static void test_rewrite(void **state)
{
    struct buildah_dockerfile_out o;
    char err[512] = "";
    size_t first = 0;

    (void)state;
    assert_int_equal(
        prepare("{\"dockerfile\": \"# c\\nARG V=1\\nFROM "
                "runloop:runloop/starter-x86_64 AS b\\n"
                "RUN echo a \\\\\\n  b\\nFROM base\\nCOPY --from=b /x "
                "/y\\nUSER 1000\\n"
                "RUN <<EOF\\necho 'it' \\\\\\\\ x\\nEOF\\nCOPY <<EOF "
                "/etc/f\\nbody\\nEOF\\n\","
                "\"file_mounts\": {\"/etc/app/c.json\": \"{}\"},"
                "\"system_setup_commands\": [\"echo s\", \"a\\nb\"]}",
                &o, err, sizeof(err)),
        0);
    assert_string_equal(o.final_from, "local/base");
    assert_non_null(strstr(o.text, "FROM local/starter AS b\n"));
    /* Continuation lines joined, on one line, as buildah joins them. */
    assert_non_null(strstr(o.text, "RUN echo a   b\n"));
    /* The mounts come right after the final FROM. */
    assert_non_null(strstr(
        o.text, "FROM local/base\nCOPY --chown=1000:1000 "
                "[\"etc/app/c.json\",\"/etc/app/c.json\"]\nCOPY --from=b"));
    assert_non_null(strstr(
        o.text,
        "RUN sh -c \"$(printf %b 'echo \\0047it\\0047 \\\\\\\\ x\\n')\"\n"));
    assert_non_null(strstr(o.text, "COPY .devboxd-heredoc-0 /etc/f\n"));
    assert_string_equal(cJSON_GetStringValue(
                            cJSON_GetObjectItem(o.files, ".devboxd-heredoc-0")),
                        "body\n");
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(o.files, "etc/app/c.json")),
        "{}");
    assert_string_equal(
        cJSON_GetStringValue(cJSON_GetObjectItem(o.files, "c.json")), "{}");
    /* Setup commands as user, then the Dockerfile's USER back. */
    assert_non_null(strstr(o.text, "USER user\nRUN echo s\nRUN sh -c "
                                   "\"$(printf %b 'a\\nb')\"\nUSER 1000\n"));
    /* Stage 1: FROM, mounts COPY, COPY --from, USER, RUN, COPY, setup... */
    assert_int_equal(buildah_dockerfile_stage_steps(&o, 0, &first), 2);
    assert_int_equal(o.steps[first + 1].line, 4);
    assert_int_equal(o.steps[first + 1].user_step, 1);
    assert_int_equal(buildah_dockerfile_stage_steps(&o, 1, &first), 10);
    assert_string_equal(o.steps[first + 1].text, "file_mounts");
    assert_int_equal(o.steps[first + 1].user_step, 0);
    assert_int_equal(o.steps[first + 4].line, 9);
    assert_string_equal(o.steps[first + 4].text,
                        "RUN <<EOF\necho 'it' \\\\ x\nEOF");
    assert_int_equal(o.steps[first + 8].setup, 2);
    assert_int_equal(o.user_steps, 7);
    buildah_dockerfile_free(&o);

    /* No Dockerfile: FROM the base blueprint or the default. */
    assert_int_equal(
        prepare("{\"base_blueprint_name\": \"base\"}", &o, err, sizeof(err)),
        0);
    assert_string_equal(o.text, "FROM local/base\n");
    buildah_dockerfile_free(&o);
    assert_int_equal(prepare("{\"system_setup_commands\": [\"true\"]}", &o, err,
                             sizeof(err)),
                     0);
    assert_string_equal(o.text,
                        "FROM local/starter\nUSER user\nRUN true\nUSER root\n");
    buildah_dockerfile_free(&o);
}

/* A stage FROM an earlier stage runs that stage's steps itself: every
 * stage is FROM an image, and the final one has its base's USER. */
static void test_stage_from_stage(void **state)
{
    struct buildah_dockerfile_out o;
    char err[512] = "";
    size_t first = 0;

    (void)state;
    assert_int_equal(
        prepare("{\"dockerfile\": \"FROM runloop/starter-x86_64 AS a\\n"
                "RUN one\\nUSER 1000\\nFROM a AS b\\nRUN two\\n"
                "FROM b\\nRUN three\\nCOPY --from=a /x /y\\n\","
                "\"file_mounts\": {\"/m\": \"m\"},"
                "\"system_setup_commands\": [\"echo s\"]}",
                &o, err, sizeof(err)),
        0);
    assert_string_equal(o.final_from, "local/starter");
    assert_string_equal(o.text,
                        "FROM local/starter AS a\nRUN one\nUSER 1000\n"
                        "FROM local/starter AS b\nRUN one\nUSER 1000\nRUN two\n"
                        "FROM local/starter\nRUN one\nUSER 1000\nRUN two\n"
                        "COPY --chown=1000:1000 [\"m\",\"/m\"]\n"
                        "RUN three\nCOPY --from=a /x /y\n"
                        "USER user\nRUN echo s\nUSER 1000\n");
    /* The copies keep their lines and step numbers for the log. */
    assert_int_equal(buildah_dockerfile_stage_steps(&o, 2, &first), 10);
    assert_string_equal(o.steps[first].text, "FROM b");
    assert_int_equal(o.steps[first + 1].inherited, 1);
    assert_int_equal(o.steps[first + 1].line, 2);
    assert_int_equal(o.steps[first + 1].user_step, 1);
    assert_int_equal(o.steps[first + 3].user_step, 3);
    assert_int_equal(o.steps[first + 4].inherited, 0);
    assert_string_equal(o.steps[first + 4].text, "file_mounts");
    assert_int_equal(o.steps[first + 5].user_step, 4);
    assert_int_equal(o.user_steps, 6);
    buildah_dockerfile_free(&o);
}

static void test_bad_input(void **state)
{
    static const struct {
        const char *json;
        const char *want;
    } cases[] = {
        {"{\"dockerfile\": \"FROM python:3\\n\"}",
         "line 1: FROM python:3: no image"},
        {"{\"dockerfile\": \"RUN x\\n\"}", "line 1: RUN before FROM"},
        {"{\"dockerfile\": \"FROM base\\nFROWN x\\n\"}",
         "line 2: unknown instruction \"FROWN\""},
        {"{\"dockerfile\": \"FROM base\\nCOPY ../x /y\\n\"}",
         "line 2: COPY source \"../x\" is outside"},
        {"{\"dockerfile\": \"FROM base\\nADD a/../../x /y\\n\"}",
         "line 2: ADD source \"a/../../x\""},
        {"{\"dockerfile\": \"FROM base\\nCOPY [\\\"/../x\\\", "
         "\\\"/y\\\"]\\n\"}",
         "is outside"},
        {"{\"dockerfile\": \"FROM base\\nCOPY onlyone\\n\"}",
         "line 2: COPY needs a source"},
        {"{\"dockerfile\": \"FROM base\\nRUN <<EOF\\nx\\n\"}",
         "line 2: heredoc <<EOF is not closed"},
        {"{\"dockerfile\": \"FROM $X\\n\"}", "a variable in FROM"},
        {"{\"dockerfile\": \"FROM base AS\\n\"}",
         "line 1: FROM takes an image"},
        {"{\"dockerfile\": \"# only\\n\"}", "has no FROM"},
        {"{\"file_mounts\": {\"/a/../../b\": \"x\"}}",
         "leaves the build context"},
    };
    struct buildah_dockerfile_out o;
    char err[512];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        err[0] = '\0';
        assert_int_equal(prepare(cases[i].json, &o, err, sizeof(err)), -1);
        if (strstr(err, cases[i].want) == NULL)
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].want);
        assert_null(o.text);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rewrite),
        cmocka_unit_test(test_stage_from_stage),
        cmocka_unit_test(test_bad_input),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
