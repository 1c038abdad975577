/*
 * tasks.h - MCP tasks: a tools/call that returns at once with a task id,
 * followed with tasks/get, tasks/result, tasks/cancel (2025-11-25
 * experimental tasks) or tasks/get, tasks/cancel, tasks/update (the
 * 2026-07-28 extension io.modelcontextprotocol/tasks).
 *
 * A tool runs as a task when its plugin gave task ops (ABI 1.4
 * rlmcp_task_def): start returns a handle naming the work outside the host
 * (for execute_command: the devbox and execution ids). The task id carries
 * that handle, the tool, the creation time and the ttl, signed with
 * HMAC-SHA256 over the caller's credential: any host process with the same
 * key resolves it (a reconnected client, a restarted host, a replica), and
 * a caller with another credential cannot. Each task request runs the
 * matching op as a call of the tool on the worker pool; its answer is
 * turned into the task message by a sink wrapped around the request's own.
 */
#ifndef RLMCP_HOST_TASKS_H
#define RLMCP_HOST_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "rlmcp/plugin.h"

#define TASKS_EXTENSION "io.modelcontextprotocol/tasks"
#define TASKS_RELATED_META "io.modelcontextprotocol/related-task"

struct deployment;
struct mcp_dispatcher;
struct mcp_session;
struct mcp_sink;
struct registry;
struct tool_entry;

/* One task request (or task-augmented tools/call), as the dispatcher saw it. */
struct tasks_req {
    struct mcp_dispatcher *d;
    struct deployment *dep; /* the request's (deployment.h) */
    struct mcp_session *s;
    struct mcp_sink *sink;
    const cJSON *id;
    const cJSON *params;
    const char *api_key; /* the caller's, or NULL: binds the task */
    bool stateless;      /* a 2026-07-28 request */
    struct mrtr *mrtr;   /* its input rounds (start may ask); consumed */
};

/*
 * The signing key: len 0 draws 32 random bytes (tasks then live as long as
 * the process). 0 or -1.
 */
int tasks_set_key(const unsigned char *key, size_t len);

/*
 * The key from a file (created with 32 random bytes, mode 0600, when
 * missing), so that tasks survive a restart. 0, or -1 with err filled.
 */
int tasks_load_key_file(const char *path, char *err, size_t errlen);

/*
 * The key at start: derived from the shared secret when there is one
 * (replicas agree), else the key file <state_dir>/task.key (tasks survive
 * a restart), else random. Problems are logged; tasks then live as long as
 * the process.
 */
void tasks_init_key(const char *state_secret, const char *state_dir);

/* True when some tool of the deployment runs as a task. */
bool tasks_available(const struct registry *reg);

/*
 * Whether this tools/call of a task tool should become a task: 2025-11-25
 * when params.task is present, 2026-07-28 when the request declared the
 * extension (the server decides; params.task is ignored).
 */
bool tasks_requested(bool stateless, bool cap_tasks, const cJSON *params);

/* True when t runs only as a task (RLMCP_TASK_REQUIRED). */
bool tasks_required(const struct tool_entry *t);

/*
 * Start t as a task; args (validated, unaliased) and q->mrtr are consumed.
 * In 2026-07-28 the start op may ask the client first (input rounds): the
 * task is made in the round that no longer asks.
 */
void tasks_tools_call(const struct tasks_req *q, const struct tool_entry *t,
                      char *args, size_t len);

/*
 * 2025-11-25 tasks/result as a task op (tasks_input.c): the tool's wait,
 * and while the task waits for input, its requests sent to the client
 * (related to the task, on the tasks/result stream) and the answers handed
 * to the tool's update op, until the task ends.
 */
int tasks_input_result(rlmcp_call *call, const char *args_json, size_t args_len,
                       void *user_data);

/* tasks/get, tasks/result, tasks/cancel, tasks/list, tasks/update. */
void tasks_handle(const struct tasks_req *q, const char *method);

#endif
