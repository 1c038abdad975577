/*
 * bp_internal.h - what the blueprints plugin's files share: its state, the
 * build request body and the summary fields of a blueprint result.
 */
#ifndef RLMCP_BP_INTERNAL_H
#define RLMCP_BP_INTERNAL_H

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

/* The POST /v1/blueprints body from build_blueprint's arguments. */
int bp_build_body(const struct rlmcp_h *h, const cJSON *args, cJSON **out);

/* Why a build failed: its failure_reason and the failing step of the
 * build log (logs may be NULL); malloc'd, NULL without memory. */
char *bp_failure_text(const char *id, const cJSON *view, const cJSON *logs);
#define BP_FAILED_REMEDY                                                       \
    "Fix the failing step in dockerfile or system_setup_commands (the "        \
    "whole log: get_blueprint_logs), then call build_blueprint again."

/* build_blueprint as an MCP task (task.c). */
extern const struct rlmcp_task_def bp_task_def;

#endif
