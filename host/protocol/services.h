/*
 * services.h - the host services table handed to every plugin's init().
 *
 * A static const table (struct rlmcp_host_api, plugin.h). Plugin-scope
 * services (register_*, set_error, config_json, log) and memory live in
 * services.c; call-scope services (result_*, progress, runloop_request, ...)
 * are the dispatcher's call_<service> functions (call.h).
 */
#ifndef RLMCP_HOST_SERVICES_H
#define RLMCP_HOST_SERVICES_H

#include "rlmcp/plugin.h"

const struct rlmcp_host_api *services_table(void);

/* The strerror service: text for a RLMCP_* code, static, never NULL. */
const char *services_strerror(int code);

#endif
