/*
 * complete.h - completion/complete: values for an argument, by its name.
 *
 * devbox_id (a prompt argument or a template variable) completes to the
 * ids of the caller's devboxes that are not shut down; an argument naming
 * a snapshot or a blueprint completes to their names (their ids when the
 * name ends in _id). The lists come from the Runloop API with the caller's
 * key, on the worker pool; anything else completes to nothing.
 */
#ifndef RLMCP_HOST_COMPLETE_H
#define RLMCP_HOST_COMPLETE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct mcp_sink;
struct pool;
struct rlclient;

/* Most values one answer carries (the spec's limit). */
#define COMPLETE_MAX_VALUES 100

enum complete_kind {
    COMPLETE_NONE = 0,
    COMPLETE_DEVBOX_ID,
    COMPLETE_SNAPSHOT_NAME,
    COMPLETE_SNAPSHOT_ID,
    COMPLETE_BLUEPRINT_NAME,
    COMPLETE_BLUEPRINT_ID,
};

/* What an argument name completes to. */
enum complete_kind complete_kind_of(const char *arg_name);

/*
 * The completion result {completion:{values,total,hasMore}} from one API
 * list page: the values of kind starting with prefix, in list order,
 * without repeats. NULL on allocation failure.
 */
cJSON *complete_from_page(enum complete_kind kind, const cJSON *page,
                          const char *prefix);

/*
 * Answer the request id on sink: at once (an empty list) for COMPLETE_NONE,
 * else from a job on pool that lists from the API through rl (none: no
 * values) with api_key (may be NULL; sink retained until answered).
 */
void complete_answer(struct pool *pool, struct rlclient *rl,
                     struct mcp_sink *sink, const cJSON *id,
                     enum complete_kind kind, const char *prefix,
                     const char *api_key);

#endif
