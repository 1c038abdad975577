/* Request idempotency by x-request-id (the official SDK sends one with every
 * non-GET request and reuses it on its retries): the first answer to a
 * mutating request is kept, and a retry with the same id and the same
 * request gets that answer again instead of repeating the side effect; the
 * same id with another request is 409. Answers are kept on disk under
 * STATE_DIR/requests/ for IDEM_WINDOW_MS (at most IDEM_MAX_ENTRIES answers,
 * IDEM_MAX_BYTES of bodies), so a retry after a devboxd restart is
 * answered the same way. See docs/devboxd.md, "Retries and x-request-id". */
#ifndef DEVBOXD_IDEMPOTENCY_H
#define DEVBOXD_IDEMPOTENCY_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"

#define IDEM_WINDOW_MS (24LL * 3600 * 1000)
#define IDEM_MAX_ENTRIES 10000
#define IDEM_MAX_BYTES (64u << 20)
#define IDEM_MAX_ID_LEN 255

struct idempotency_store;
struct idempotency_claim;

/* Opens (creating) STATE_DIR/requests and loads the answers kept there. */
struct idempotency_store *idempotency_open(const char *state_dir, char *err,
                                           size_t errlen);
void idempotency_close(struct idempotency_store *st);

/* Before running req. Returns 1 when resp already holds the answer (a
 * replay, or 409); 0 to run the request, with *claim set when its answer
 * is to be kept (pass it to idempotency_finish). st may be NULL (no-op). */
int idempotency_begin(struct idempotency_store *st,
                      const struct http_request *req,
                      struct idempotency_claim **claim,
                      struct http_response *resp);
/* After running: keeps resp for the claim's id (durably, before the answer
 * leaves) unless it is an answer a client retries (408, 409, 429, 5xx) or
 * a stream; then the id is free again. claim may be NULL. */
void idempotency_finish(struct idempotency_store *st,
                        struct idempotency_claim *claim,
                        const struct http_response *resp);

/* Whether a request to this method and path is kept (mutating endpoints;
 * long-polls and reads sent as POST are not). Exposed for unit tests. */
int idempotency_applies(const char *method, const char *path);

#endif
