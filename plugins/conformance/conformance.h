/*
 * conformance.h - what the fixture plugin's files share.
 */
#ifndef RLMCP_CONFORMANCE_H
#define RLMCP_CONFORMANCE_H

#include <cjson/cJSON.h>

#include "rlmcp/plugin.h"

#define INPUT_KEY "rlmcp/input-key"

extern const struct rlmcp_host_api *api;

/* A client request under a key (params consumed); *answer parsed or NULL. */
int ask_keyed(rlmcp_call *call, const char *key, const char *method,
              cJSON *params, cJSON **answer);

/* elicitation/create params asking for one string or boolean field. */
cJSON *elicit_params(const char *message, const char *field, const char *type);

/* The task fixtures of the 2026-07-28 tasks extension (jobs.c). */
int jobs_register(rlmcp_plugin *self);

#endif
