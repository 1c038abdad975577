/*
 * mrtr.h - multi round-trip requests (2026-07-28, SEP-2322).
 *
 * In 2026-07-28 a server does not send requests to the client while it
 * handles one of the client's. A plugin's client_request (elicitation,
 * sampling, roots) in a stateless call becomes an entry of an
 * InputRequiredResult instead: the call ends with
 * {resultType:"input_required", inputRequests:{key:{method,params}},
 * requestState}, and the client calls again with inputResponses{key:result}
 * and the requestState echoed. The handler then runs again from the start
 * and each client_request whose answer is known returns it at once. The
 * answers of earlier rounds travel in requestState, signed with HMAC-SHA256
 * so a client cannot forge or alter them.
 *
 * The key of an input request is params._meta["rlmcp/input-key"] when the
 * plugin names one, else "input-N" (N counts this round's requests). The
 * host removes that _meta member before any request goes to a client.
 */
#ifndef RLMCP_HOST_MRTR_H
#define RLMCP_HOST_MRTR_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#define MRTR_KEY_META "rlmcp/input-key"

struct mrtr;

/*
 * The signing key: 32 random bytes at start, or the deployment's shared
 * secret (replicas must agree). len 0: a fresh random key. 0 or -1.
 */
int mrtr_set_secret(const unsigned char *secret, size_t len);

/*
 * State for one stateless call from its params (inputResponses,
 * requestState) and the tool/prompt/uri it targets, for the caller holding
 * api_key (may be NULL; a state made for one credential is refused for
 * another). Returns NULL with err filled on bad input (a -32602 for the
 * client), or on no memory (err "").
 */
struct mrtr *mrtr_new(const cJSON *params, const char *target,
                      const char *api_key, char *err, size_t errlen);
void mrtr_free(struct mrtr *m);

/*
 * A client request of the handler. params is consumed (may be NULL); its
 * input-key member is removed. Returns 0 with *result (the client's answer,
 * malloc'd JSON) when the client already gave it; otherwise records the
 * request for this round's InputRequiredResult and returns 1.
 */
int mrtr_request(struct mrtr *m, const char *method, cJSON *params,
                 char **result);

/* A client request refused for want of this capability ("sampling"...). */
void mrtr_missing_capability(struct mrtr *m, const char *capability);

/*
 * The call's final message when MRTR decides it: the InputRequiredResult
 * when requests are pending; -32021 when the handler failed (rc < 0) after
 * a capability was missing. NULL: answer as usual. malloc'd.
 */
char *mrtr_final(struct mrtr *m, const cJSON *id, int rc);

/* Remove the input-key member from client request params (any revision). */
void mrtr_strip_key(cJSON *params);

#endif
