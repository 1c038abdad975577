/*
 * fuzz_schema.c - schema_check and schema_validate on arbitrary input.
 *
 * Input: the schema as JSON on the first line, the instance as JSON after
 * the first newline. Checks: nothing crashes, hangs or leaks; a result
 * does not depend on the error buffer; a failure always says why, success
 * never does; messages fit their buffer and, for UTF-8 input, are UTF-8.
 */
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz_util.h"
#include "schema.h"

static void check_message(const char *err, size_t cap, bool utf8_input)
{
    size_t len = strnlen(err, cap);

    FUZZ_REQUIRE(len < cap, "message not terminated");
    if (utf8_input) {
        FUZZ_REQUIRE(fuzz_valid_utf8((const unsigned char *)err, len),
                     "message is not UTF-8: %s", err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned runs;
    const uint8_t *nl = size > 0 ? memchr(data, '\n', size) : NULL;
    size_t slen = nl != NULL ? (size_t)(nl - data) : size;
    bool utf8 = size > 0 && fuzz_valid_utf8(data, size) &&
                memchr(data, 0, size) == NULL;
    cJSON *schema = cJSON_ParseWithLength((const char *)data, slen);
    cJSON *inst = NULL;
    char err[512];
    char small[24];
    int checked;
    int rc;

    if (schema == NULL) {
        return 0; /* also the replay driver's final (NULL, 0) */
    }
    checked = schema_check(schema, err, sizeof(err));
    check_message(err, sizeof(err), utf8);
    FUZZ_REQUIRE(checked == 0 || err[0] != '\0', "check failed silently");
    FUZZ_REQUIRE(schema_check_tool_input(schema, NULL, 0) != 0 || checked == 0,
                 "tool check passed a bad schema");
    if (nl != NULL) {
        inst = cJSON_ParseWithLength((const char *)nl + 1, size - slen - 1);
    }
    if (inst != NULL) {
        rc = schema_validate(schema, inst, "arguments", err, sizeof(err));
        check_message(err, sizeof(err), utf8);
        FUZZ_REQUIRE(rc == 0 || rc == -1, "rc %d", rc);
        FUZZ_REQUIRE((rc == 0) == (err[0] == '\0'), "rc %d with '%s'", rc, err);
        if (checked == 0 && rc != 0 && strncmp(err, "schema error", 12) == 0) {
            /* Only the depth limit may stop a checked schema. */
            FUZZ_REQUIRE(strstr(err, "nested schemas apply here") != NULL,
                         "checked schema failed: %s", err);
        }
        FUZZ_REQUIRE(schema_validate(schema, inst, "arguments", small,
                                     sizeof(small)) == rc,
                     "result depends on the buffer");
        check_message(small, sizeof(small), utf8);
        FUZZ_REQUIRE(schema_validate(schema, inst, NULL, NULL, 0) == rc,
                     "result depends on the buffer");
    }
    cJSON_Delete(inst);
    cJSON_Delete(schema);
    /* The pattern cache keeps every distinct pattern (a registry has few;
     * the fuzzer makes millions): empty it now and then. */
    if (++runs % 512 == 0) {
        schema_cleanup();
    }
    return 0;
}
