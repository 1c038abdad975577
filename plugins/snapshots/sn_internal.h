/*
 * sn_internal.h - what the snapshots plugin's files share: its state, the
 * snapshot request body, and the snapshot result create_snapshot gives.
 */
#ifndef RLMCP_SN_INTERNAL_H
#define RLMCP_SN_INTERNAL_H

#include <stdbool.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"

struct snap {
    const struct rlmcp_host_api *api;
    bool sync;
    long long wait_s;
    long long poll_ms;
};

/* create_snapshot's result: the picked snapshot view plus its status. */
int sn_result(const struct rlmcp_h *h, const cJSON *view, const char *status);

/* The snapshot body (name, commit_message, metadata) from the arguments. */
int sn_create_body(const struct rlmcp_h *h, const cJSON *args, cJSON **out);

/* A POST on a devbox; a refusal is explained by the devbox's state. */
int sn_devbox_post(const struct rlmcp_h *h, const char *id, const char *path,
                   const cJSON *body, const struct rlmcp_h_req_opts *o,
                   const char *what, cJSON **out);

/* create_snapshot as an MCP task (task.c). */
extern const struct rlmcp_task_def sn_task_def;

#endif
