/*
 * call_audit.h - what each tools/call leaves for the operator: metrics
 * (metrics.h) and an audit line (audit.h). Called by call.c.
 */
#ifndef RLMCP_HOST_CALL_AUDIT_H
#define RLMCP_HOST_CALL_AUDIT_H

#include <stdint.h>

#include <cjson/cJSON.h>

struct rlmcp_call;

/* A call's handler is about to run: its start time (monotonic ns). */
uint64_t call_account_begin(struct rlmcp_call *c);

/* The call was answered (rc: its handler's return). */
void call_account_end(struct rlmcp_call *c, int rc, uint64_t start_ns);

/* Remember the devbox a tool result names ("devbox_id", or an "id" that
 * is a devbox id) for the audit line. structured may be NULL. */
void call_note_devbox(struct rlmcp_call *c, const cJSON *structured);

#endif
