/*
 * schema_bench.c - nanoseconds per schema_validate() call for one schema
 * and one instance (see schema_bench.sh, which prints ajv's figure for the
 * same case beside it).
 *
 *   schema_bench SCHEMA_JSON INSTANCE_JSON N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "schema.h"

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    cJSON *schema = NULL;
    cJSON *inst = NULL;
    char err[512] = "";
    long n = 0;
    long i;
    int valid = 0;
    int rc = 1;
    double t0;

    if (argc != 4 || (n = atol(argv[3])) <= 0) {
        fprintf(stderr, "usage: schema_bench SCHEMA INSTANCE N\n");
        return 2;
    }
    schema = cJSON_Parse(argv[1]);
    inst = cJSON_Parse(argv[2]);
    if (schema == NULL || inst == NULL) {
        fprintf(stderr, "schema_bench: SCHEMA and INSTANCE must be JSON\n");
        goto out;
    }
    if (schema_check(schema, err, sizeof(err)) != 0) {
        fprintf(stderr, "schema_bench: %s\n", err);
        goto out;
    }
    valid = schema_validate(schema, inst, "arguments", err, sizeof(err)) == 0;
    t0 = now();
    for (i = 0; i < n; i++) {
        schema_validate(schema, inst, "arguments", err, sizeof(err));
    }
    printf("%s %.0f\n", valid ? "valid" : "invalid",
           (now() - t0) / (double)n * 1e9);
    rc = 0;
out:
    cJSON_Delete(schema);
    cJSON_Delete(inst);
    schema_cleanup();
    return rc;
}
