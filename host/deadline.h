/*
 * deadline.h - how long one tools/call may take.
 *
 * A call's deadline starts when its request is read. Its length is the
 * tool's own timeout argument (`timeout_seconds`, as execute_command,
 * run_code and wait_for_execution take it) when the call passes one, else
 * the tool's timeout from the deployment (tool def, else host default).
 * Every queueing, HTTP request, retry, backoff and clean-up of the call
 * fits inside it (docs/errors.md "Deadlines").
 */
#ifndef RLMCP_HOST_DEADLINE_H
#define RLMCP_HOST_DEADLINE_H

#include <stddef.h>
#include <stdint.h>

/* The call's time limit in ms: timeout_seconds from args_json when it is
 * a positive number, else fallback_ms. */
uint32_t deadline_call_ms(uint32_t fallback_ms, const char *args_json,
                          size_t len);

#endif
