/*
 * schema.h - JSON Schema (2020-12 subset) checking and validation.
 *
 * schema_check*() runs once per schema at tool registration: it rejects a
 * schema the validator could not apply faithfully (malformed keyword
 * values, unresolvable or remote $refs, $ref cycles that never consume
 * input, patterns outside the supported dialect, assertion keywords we do
 * not implement). schema_validate() then runs per call, on any thread,
 * without allocating on the happy path.
 *
 * The keyword set, the pattern dialect and the limits are documented in
 * docs/schema.md.
 */
#ifndef RLMCP_HOST_SCHEMA_H
#define RLMCP_HOST_SCHEMA_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Applicator depth (nesting, $ref hops) at which validation gives up. */
#define SCHEMA_MAX_DEPTH 64

/*
 * 0 when schema is a usable JSON Schema object, else -1 with a message in
 * err saying which keyword at which schema location is wrong and how to
 * fix it. Compiles (and caches) every pattern it finds. err may be NULL.
 * Threads: any.
 */
int schema_check(const cJSON *schema, char *err, size_t errlen);

/* schema_check() plus the MCP rule that the top level is "type":"object". */
int schema_check_tool_input(const cJSON *schema, char *err, size_t errlen);
int schema_check_tool_output(const cJSON *schema, char *err, size_t errlen);

/*
 * 0 when instance is valid against schema, else -1 with a message naming
 * the field path from root_name (NULL: "value"), e.g.
 *   arguments.timeout_seconds: expected integer, got string "10"
 * A schema error met during validation (only possible when the schema was
 * not checked) also returns -1 with "schema error: ...". err may be NULL.
 * Threads: any, concurrently; schema and instance are only read.
 */
int schema_validate(const cJSON *schema, const cJSON *instance,
                    const char *root_name, char *err, size_t errlen);

/*
 * The outputSchema a client sees: a copy of a tool's schema that also
 * admits an error result's structuredContent, {"error": {...}, ...}. A
 * top-level "required" R becomes "anyOf": [{"required": R},
 * {"required": ["error"]}], so a client that validates error results too
 * (the MCP TypeScript SDK does) accepts them; "additionalProperties": false
 * also gets an "error" property of type object. A schema it cannot widen
 * safely (other top-level constraints, or an "error" property of its own)
 * is copied unchanged; error results then carry structuredContent only
 * when it validates. NULL when out of memory.
 */
cJSON *schema_admit_error(const cJSON *output_schema);

/*
 * Free the compiled-pattern cache. Call once at exit, when no validation
 * runs; later calls to the functions above rebuild it.
 */
void schema_cleanup(void);

#endif
