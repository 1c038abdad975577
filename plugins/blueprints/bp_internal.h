/*
 * bp_internal.h - what the blueprints plugin's files share: its state, the
 * start of a build and the summary fields of a blueprint result.
 */
#ifndef RLMCP_BP_INTERNAL_H
#define RLMCP_BP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"

struct bp {
    const struct rlmcp_host_api *api;
    long long wait_s;
    long long poll_ms;
    long long max_progress;
};

/* The fields of a blueprint that build_blueprint returns (NULL-ended). */
extern const char *const bp_summary_keys[];

/*
 * Start the build that build_blueprint's arguments (aj, al as the handler
 * got them) describe: POST /v1/blueprints. *wait (may be NULL) receives
 * the "wait" argument, left as it is when absent; *view the new blueprint
 * (caller frees; may be set on a failure too) and *id its checked id
 * (borrowed from *view). Returns 0, RLMCP_H_REPORTED or a negative code.
 */
int bp_start_build(const struct rlmcp_h *h, const char *aj, size_t al,
                   bool *wait, cJSON **view, const char **id);

/* What build_blueprint returns for a built blueprint: the summary of view
 * and log_lines, the length of the logs array (may be NULL). Returns 0 or
 * RLMCP_ENOMEM. */
int bp_built_result(const struct rlmcp_h *h, const cJSON *view,
                    const cJSON *logs);

/* Why a build failed: its failure_reason and the failing step of the
 * build log (logs may be NULL); malloc'd, NULL without memory. */
char *bp_failure_text(const char *id, const cJSON *view, const cJSON *logs);
#define BP_FAILED_REMEDY                                                       \
    "Fix the failing step in dockerfile or system_setup_commands (the "        \
    "whole log: get_blueprint_logs), then call build_blueprint again."

/*
 * Where the blueprint's view says "supports_wait_for_status" (devboxd;
 * Runloop's API has no such route and is only ever polled): instead of a
 * pause, POST /v1/blueprints/{id}/wait_for_status, held by the engine
 * until the build ends or for the poll interval (whole seconds, before
 * deadline), so the end is seen as the engine reaches it. *used: it held
 * (2xx or 408), else the caller pauses as usual (also when the backend
 * refused); *waited_ms: the time held (the whole wait when it ran out).
 * Returns 0 or a negative code (a cancelled call).
 */
int bp_hold(const struct rlmcp_h *h, const struct bp *bp, const char *id,
            uint64_t deadline, bool *used, uint64_t *waited_ms);

/* build_blueprint as an MCP task (task.c). */
extern const struct rlmcp_task_def bp_task_def;

#endif
