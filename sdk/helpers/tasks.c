/*
 * tasks.c - the get and wait ops of a task whose work is the backend's:
 * read its state, answer it, or poll it until it ended or the op's bound.
 * See rlmcp_helpers.h.
 */
#include <stdlib.h>

#include "rlmcp_helpers.h"

int rlmcp_h_task_read(const struct rlmcp_h *h,
                      const struct rlmcp_h_task_ops *ops, void *user,
                      const char *args_json, size_t len, cJSON **args,
                      const char **id, cJSON **state)
{
    int rc;

    *args = NULL;
    *id = NULL;
    *state = NULL;
    rc = rlmcp_h_args(h, args_json, len, args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, *args, ops->id_arg, true, id);
    if (rc == RLMCP_OK)
        rc = ops->read(h, user, *id, state);
    if (rc != RLMCP_OK) {
        cJSON_Delete(*args);
        cJSON_Delete(*state);
        *args = NULL;
        *id = NULL;
        *state = NULL;
    }
    return rc;
}

int rlmcp_h_task_get(const struct rlmcp_h *h,
                     const struct rlmcp_h_task_ops *ops, void *user,
                     const char *args_json, size_t len)
{
    cJSON *args = NULL, *state = NULL;
    const char *id = NULL;
    int rc;

    rc = rlmcp_h_task_read(h, ops, user, args_json, len, &args, &id, &state);
    if (rc == RLMCP_OK)
        rc = ops->answer(h, user, id, state);
    cJSON_Delete(args);
    cJSON_Delete(state);
    return rc;
}

void rlmcp_h_poll_init(struct rlmcp_h_poll *p, uint32_t cap_ms)
{
    p->cap_ms = cap_ms > 0 ? cap_ms : 1;
    p->next_ms =
        RLMCP_H_POLL_FIRST_MS < p->cap_ms ? RLMCP_H_POLL_FIRST_MS : p->cap_ms;
    p->slept_ms = 0;
}

int rlmcp_h_poll_pause(const struct rlmcp_h *h, struct rlmcp_h_poll *p)
{
    uint32_t ms = p->next_ms;

    p->slept_ms += ms;
    p->next_ms = ms > p->cap_ms / 2 ? p->cap_ms : ms * 2;
    return h->api->sleep_ms(h->call, ms);
}

int rlmcp_h_task_wait(const struct rlmcp_h *h,
                      const struct rlmcp_h_task_ops *ops, void *user,
                      const char *args_json, size_t len, uint32_t poll_ms)
{
    cJSON *args = NULL, *state = NULL;
    const char *id = NULL;
    long long timeout_s = 60;
    uint64_t until = 0;
    struct rlmcp_h_poll poll;
    int rc;

    rlmcp_h_poll_init(&poll, poll_ms);

    rc = rlmcp_h_args(h, args_json, len, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, args, ops->id_arg, true, &id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(h, args, "timeout_seconds", false, 1,
                             ops->max_wait_s, &timeout_s);
    until = rlmcp_h_now_ms() + (uint64_t)timeout_s * 1000u;
    while (rc == RLMCP_OK) {
        cJSON_Delete(state);
        state = NULL;
        rc = ops->read(h, user, id, &state);
        if (rc != RLMCP_OK || ops->ended(state, user) ||
            rlmcp_h_now_ms() >= until)
            break;
        if (ops->hold != NULL) {
            bool held = false;

            rc = ops->hold(h, user, id, state, until, &held);
            if (rc != RLMCP_OK || held)
                continue;
        }
        rc = rlmcp_h_poll_pause(h, &poll);
    }
    /* Still working at the bound: say so; the host asks again. */
    if (rc == RLMCP_OK)
        rc = ops->answer(h, user, id, state);
    cJSON_Delete(args);
    cJSON_Delete(state);
    return rc;
}

/* The result {<key>: id, "status": status (when set), "already_done": true
 * (when done)}. */
static int answer_id(const struct rlmcp_h *h, const char *key, const char *id,
                     const char *status, bool done)
{
    cJSON *res = cJSON_CreateObject();
    int rc = RLMCP_ENOMEM;

    if (res == NULL || cJSON_AddStringToObject(res, key, id) == NULL)
        goto out;
    if (status != NULL &&
        cJSON_AddStringToObject(res, "status", status) == NULL)
        goto out;
    if (done && cJSON_AddBoolToObject(res, "already_done", true) == NULL)
        goto out;
    rc = rlmcp_h_result_json(h, res);
out:
    cJSON_Delete(res);
    return rc;
}

int rlmcp_h_task_handle(const struct rlmcp_h *h,
                        const struct rlmcp_h_task_ops *ops, const char *id)
{
    return answer_id(h, ops->id_arg, id, NULL, false);
}

int rlmcp_h_task_already_done(const struct rlmcp_h *h,
                              const struct rlmcp_h_task_ops *ops,
                              const char *id, const char *status)
{
    return answer_id(h, ops->id_arg, id, status, true);
}
