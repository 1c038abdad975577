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

/* rc of a registration of the kind ("", "resource ", "prompt ") named
 * name; a failure is recorded as the init error. Init only. */
int conf_registered(rlmcp_plugin *self, int rc, const char *kind,
                    const char *name);

/* The task fixtures of the 2026-07-28 tasks extension (jobs.c). */
int jobs_register(rlmcp_plugin *self);

#endif
