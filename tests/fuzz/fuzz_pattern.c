/*
 * fuzz_pattern.c - pattern checking (the ECMA-262 pass, PCRE2) and its cache.
 *
 * Input: a pattern (up to the first NUL). Checks: no crash or leak; a
 * pattern schema_check accepts never fails later as a schema error; the
 * rejection says why; matching gives the same answer twice (cache hit).
 */
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz_util.h"
#include "schema.h"

static const char *const subjects[] = {
    "",
    "a",
    "aaaa",
    "Ab1_-.",
    "a\nb",
    "\xC3\xA9\xE6\x97\xA5\xF0\x9F\x98\x80",
    "{}[]()^$|?*+\\/",
    "   \t",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned runs;
    char *pattern = data != NULL ? strndup((const char *)data, size) : NULL;
    cJSON *schema = cJSON_CreateObject();
    cJSON *subject = NULL;
    char err[512];
    size_t i;
    int checked;

    if (pattern == NULL || schema == NULL ||
        cJSON_AddStringToObject(schema, "pattern", pattern) == NULL) {
        goto out;
    }
    checked = schema_check(schema, err, sizeof(err));
    FUZZ_REQUIRE(checked == 0 || strstr(err, "pattern") != NULL,
                 "rejection does not name the pattern: %s", err);
    for (i = 0; i <= sizeof(subjects) / sizeof(subjects[0]); i++) {
        const char *s =
            i < sizeof(subjects) / sizeof(subjects[0]) ? subjects[i] : pattern;
        int a, b;
        subject = cJSON_CreateString(s);
        if (subject == NULL) {
            goto out;
        }
        a = schema_validate(schema, subject, "s", err, sizeof(err));
        if (checked == 0) {
            FUZZ_REQUIRE(a == 0 || strncmp(err, "schema error", 12) != 0,
                         "accepted pattern failed later: %s", err);
        } else {
            FUZZ_REQUIRE(a == -1, "rejected pattern matched");
        }
        b = schema_validate(schema, subject, "s", NULL, 0);
        FUZZ_REQUIRE(a == b, "two answers for one subject");
        cJSON_Delete(subject);
        subject = NULL;
    }
out:
    cJSON_Delete(subject);
    cJSON_Delete(schema);
    free(pattern);
    /* The pattern cache keeps every distinct pattern (a registry has few;
     * the fuzzer makes millions): empty it now and then. */
    if (++runs % 512 == 0) {
        schema_cleanup();
    }
    return 0;
}
