/*
 * sn_internal.h - what the snapshots plugin's files share: its state, the
 * start of a snapshot, and the snapshot result create_snapshot gives.
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

/*
 * Start the snapshot create_snapshot's arguments (aj, al as the handler got
 * them) describe. *wait (NULL for a task) receives the "wait" argument,
 * left as it is when absent; only a waiting call in sync mode uses the
 * synchronous endpoint. *view receives the snapshot (caller frees; may be
 * set on a failure too), *sid its checked id (borrowed from *view); a
 * refusal is explained by the devbox's state. Returns 0, RLMCP_H_REPORTED
 * or a negative code.
 */
int sn_start(const struct snap *sn, const struct rlmcp_h *h, const char *aj,
             size_t al, bool *wait, cJSON **view, const char **sid);

/* create_snapshot as an MCP task (task.c). */
extern const struct rlmcp_task_def sn_task_def;

#endif
