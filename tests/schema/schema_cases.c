/*
 * schema_cases.c - the host's schema validator as a filter, for the node
 * tests that compare it with the JSON-Schema-Test-Suite and with ajv.
 *
 * Each stdin line is a JSON object {"schema": S, "data": D}; each stdout
 * line answers it: {"checked": true, "valid": bool, "error": "..."} when
 * schema_check() accepts S, else {"checked": false, "error": "..."}. A line
 * that is not such an object answers {"bad_input": "..."}.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "schema.h"

static char *answer(const char *line)
{
    cJSON *req = cJSON_Parse(line);
    cJSON *out = cJSON_CreateObject();
    const cJSON *schema = NULL;
    const cJSON *data = NULL;
    char *text = NULL;
    char err[2048] = "";
    int rc;

    if (out == NULL) {
        goto out;
    }
    schema = cJSON_GetObjectItemCaseSensitive(req, "schema");
    data = cJSON_GetObjectItemCaseSensitive(req, "data");
    if (schema == NULL || data == NULL) {
        cJSON_AddStringToObject(out, "bad_input",
                                "want {\"schema\": ..., \"data\": ...}");
        goto print;
    }
    if (schema_check(schema, err, sizeof(err)) != 0) {
        cJSON_AddBoolToObject(out, "checked", false);
        cJSON_AddStringToObject(out, "error", err);
        goto print;
    }
    rc = schema_validate(schema, data, NULL, err, sizeof(err));
    cJSON_AddBoolToObject(out, "checked", true);
    cJSON_AddBoolToObject(out, "valid", rc == 0);
    cJSON_AddStringToObject(out, "error", rc == 0 ? "" : err);
print:
    text = cJSON_PrintUnformatted(out);
out:
    cJSON_Delete(out);
    cJSON_Delete(req);
    return text;
}

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;

    while (getline(&line, &cap, stdin) > 0) {
        char *text = answer(line);
        if (text == NULL) {
            fprintf(stderr, "schema_cases: out of memory\n");
            rc = 1;
            break;
        }
        puts(text);
        free(text);
    }
    free(line);
    schema_cleanup();
    return rc;
}
