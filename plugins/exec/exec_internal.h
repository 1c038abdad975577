/*
 * exec_internal.h - shared state of the exec plugin's source files.
 */
#ifndef RLMCP_EXEC_INTERNAL_H
#define RLMCP_EXEC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"
#include "schemas.h" /* schema_<file>: schemas/<file>.json, built in */

struct ex;

/* One run_<language> tool. */
struct lang {
    char *name;      /* python */
    char *tool_name; /* run_python */
    char *extension; /* py */
    char *command;   /* python3 {file} */
    char *blueprint; /* blueprint name, or NULL: the default image */
    bool suspend_after;
    char *description;
    struct ex *ex;
};

struct ex {
    const struct rlmcp_host_api *api;
    long long max_output; /* bytes kept per stream */
    long long default_timeout_s;
    long long max_timeout_s;
    long long optimistic_s; /* in-request wait of execute */
    long long last_n;       /* lines asked of the API */
    long long create_wait_s;
    long long max_log_bytes;
    bool stream; /* stream stdout as progress */
    /* run_code */
    char *purpose;           /* metadata purpose tag */
    long long keep_alive_s;  /* lifetime of devboxes we create */
    char *default_blueprint; /* run_code's default blueprint name */
    struct lang *langs;
    size_t n_langs;
};

/* What exec_run hands back. */
struct exec_out {
    cJSON *result; /* the structured result (exec result object) */
};

struct exec_params {
    const char *devbox_id;
    const char *command;    /* already prefixed */
    const char *shell_name; /* may be NULL */
    long long timeout_ms;   /* the command's own time */
};

/*
 * Run a command to completion: optimistic execute, then streaming or
 * long-poll wait, kill on timeout or cancellation, capped output.
 * 0 with *result_out set, RLMCP_H_REPORTED or a negative code.
 */
int exec_run(struct ex *ex, const struct rlmcp_h *h,
             const struct exec_params *p, cJSON **result_out);

/*
 * Long-poll executions/{eid}/wait_for_status until completed or deadline
 * (monotonic ms). *view_io (may start NULL) gets the newest view.
 * RLMCP_OK when completed, RLMCP_ETIMEDOUT at the deadline (nothing
 * reported), RLMCP_H_REPORTED or a negative code.
 */
int exec_wait_done(struct ex *ex, const struct rlmcp_h *h,
                   const char *devbox_id, const char *eid, uint64_t deadline,
                   cJSON **view_io);

/*
 * A call's time limits (stop.c). work_until: the command's own end, all
 * of timeout_ms from now; only when that would leave less than a reserve
 * (a tenth of the timeout: 1-3 s to kill and confirm, 0.3-1 s for a
 * status read) before answer_by, the call's deadline less a margin (0:
 * the host gave none), is it moved earlier, and cut says so.
 */
struct exec_limits {
    uint64_t work_until;
    uint64_t answer_by;
    bool cut;
};
/* What the reserve is for: killing and confirming, or one status read. */
enum exec_reserve { EXEC_RESERVE_KILL, EXEC_RESERVE_READ };
void exec_limits(const struct rlmcp_h *h, long long timeout_ms,
                 enum exec_reserve kind, struct exec_limits *out);
/* A time limit as the user gave it: "3 s", "2500 ms". */
void exec_fmt_ms(long long ms, char *buf, size_t n);
/* Until when a clean-up may run: answer_by, else 5 s from now. */
uint64_t exec_cleanup_until(const struct exec_limits *l, bool cancelled);

/*
 * Kill an execution and read its status back until it says completed,
 * retrying (no longer than until). True when confirmed; else why[] says
 * what failed last. view_out (may be NULL) receives the completed view
 * (with the output the API kept) when confirmed.
 */
bool exec_stop(const struct rlmcp_h *h, const char *devbox_id, const char *eid,
               uint64_t until, char *why, size_t whylen, cJSON **view_out);

/* Build "cd DIR && export K=V && { CMD\n}" (any part optional). */
int exec_prefix(const struct rlmcp_h *h, const char *command,
                const char *working_dir, const cJSON *env, char **out);

/*
 * The command line of an execute call: exec_prefix with args' working_dir
 * and env, run through sudo when args' user is "root" (refused with a
 * named shell). *out is malloc'd.
 */
int exec_build_command(const struct rlmcp_h *h, const cJSON *args,
                       const char *command, const char *shell, char **out);

/* Map an exec/file failure on a devbox, checking whether it is running. */
int exec_fail_on_devbox(const struct rlmcp_h *h, const char *devbox_id,
                        long status, const char *msg, const char *what);

/* Fill req (from RLMCP_HTTP_REQ_INIT) as a clean-up request: method on
 * path with body (may be NULL), sent even after a cancel
 * (RLMCP_HTTP_IGNORE_CANCEL), with its own bound and retries. */
void exec_cleanup_req(struct rlmcp_http_req *req, const char *method,
                      const char *path, const char *body, uint32_t timeout_ms,
                      int32_t max_retries);

/* A best-effort request whose outcome is only logged (clean-ups). */
void exec_cleanup_request(const struct rlmcp_h *h, const char *method,
                          const char *path, const char *body);

/*
 * Read an execution's output stream (SSE) from offset, at most limit bytes
 * (0: all), into cap. *complete: the stream ended normally.
 */
int exec_read_stream(const struct rlmcp_h *h, const char *devbox_id,
                     const char *eid, const char *which, uint64_t offset,
                     uint64_t limit, uint32_t timeout_ms,
                     struct rlmcp_h_capture *cap, bool *complete,
                     uint64_t *received);

/*
 * How long a running execution's output stream is read for the output so
 * far (the API's view has none until the command completes).
 */
#define EXEC_LIVE_WINDOW_MS 800

/*
 * The output so far of a running execution's stream `which`: what arrives
 * within EXEC_LIVE_WINDOW_MS. RLMCP_OK (also when the window ended it),
 * RLMCP_ECANCELLED.
 */
int exec_live_output(const struct rlmcp_h *h, const char *devbox_id,
                     const char *eid, const char *which, uint64_t offset,
                     uint64_t limit, struct rlmcp_h_capture *cap,
                     bool *complete, uint64_t *received);

/* Result object of an execution view (completed or not); for a running
 * one, with the output so far. */
cJSON *exec_view_result(struct ex *ex, const struct rlmcp_h *h,
                        const cJSON *view, const char *devbox_id);

/*
 * "full output: get_execution_logs execution_id=<eid>" as the deployment
 * names them, or NULL when it hides get_execution_logs (the capped output
 * is then all the agent gets). malloc'd.
 */
char *exec_logs_hint(const struct rlmcp_h *h, const char *eid);

/*
 * GET the execution's view into *view; last_n >= 0 asks for that many
 * output lines, -1 for the API's default.
 */
int exec_read_view(const struct rlmcp_h *h, const char *id, const char *eid,
                   long long last_n, cJSON **view);

/*
 * Wait up to timeout_ms (cut to leave a status read inside the call's time)
 * for the execution to end; when that bound passes, read where it stands
 * (exec_read_view with last_n) without stopping it. *view as for
 * exec_wait_done.
 */
int exec_wait_view(struct ex *ex, const struct rlmcp_h *h, const char *id,
                   const char *eid, long long timeout_ms, long long last_n,
                   cJSON **view);

/* A command's time limit in ms: its "timeout_seconds" (1 to
 * max_timeout_seconds) or "timeout_ms" (1000 to the same maximum), not
 * both; default_timeout_seconds when neither. Returns 0 or
 * RLMCP_H_REPORTED. */
int exec_arg_timeout(struct ex *ex, const struct rlmcp_h *h, const cJSON *args,
                     long long *out_ms);

/* The command of a tool call: its "command" (a bash command line) or its
 * "args" (argv, each word shell-quoted so none is shell syntax), exactly
 * one of them. *out is malloc'd. Returns 0 or RLMCP_H_REPORTED. */
int exec_arg_command(const struct rlmcp_h *h, const cJSON *args, char **out);

/* Parse the (host-validated) args and take devbox_id and execution_id. */
int exec_ids(const struct rlmcp_h *h, const char *aj, size_t al, cJSON **args,
             const char **id, const char **eid);

/* How exec_answer_view answers: as a task op (an execution a kill ended
 * reads "killed"), and for a cancel that found it ended (already_done). */
#define EXEC_ANSWER_TASK (1u << 0)
#define EXEC_ANSWER_DONE (1u << 1)
/* A task's command its timeout ended: ended_by "timeout". */
#define EXEC_ANSWER_TIMEOUT (1u << 2)
/* How long a task's cancel, or the stop at its timeout, may take. */
#define EXEC_TASK_STOP_MS 15000u

/* The wall clock in ms (a task's timeout outlives the host process). */
long long exec_wall_ms(void);

/* The execution view as the call's result (exec_view_result), with the
 * EXEC_ANSWER_* flags. Returns 0 or a negative code. */
int exec_answer_view(struct ex *ex, const struct rlmcp_h *h, const cJSON *view,
                     const char *id, unsigned flags);

/*
 * get_execution (max_wait_s 0: read at once) and wait_execution (wait up
 * to the call's timeout_seconds, 1 to max_wait_s, default 60), and a
 * task's get and wait: the execution named by devbox_id and execution_id
 * with last_n output lines (-1: the API's default), answered with
 * exec_answer_view(flags). A whole handler: returns its return value.
 */
int exec_get_tool(struct ex *ex, rlmcp_call *call, const char *aj, size_t al,
                  long long max_wait_s, long long last_n, unsigned flags);

/* execute_command as an MCP task: start (exec.c), get/wait/cancel (task.c) */
int exec_task_start(rlmcp_call *call, const char *aj, size_t al, void *ud);
extern const struct rlmcp_task_def exec_task_def;

/* list_executions (list.c) */
int list_executions_tool(rlmcp_call *call, const char *aj, size_t al, void *ud);

/* Score a devbox of a listing; < 0 means unusable. Higher is better. */
typedef int (*exec_score_fn)(const cJSON *dbx, const void *ctx);

/*
 * The best-scoring devbox of GET /v1/devboxes?status= (a few pages),
 * copied into *out, or *out NULL when none fits.
 */
int exec_find_devbox(const struct rlmcp_h *h, const char *status,
                     exec_score_fn score, const void *ctx, cJSON **out);

/* Code contexts (context.c): the tools, and a cell run in context cid
 * (run_python and run_code with `context`); language names the result. */
int ctx_create_tool(rlmcp_call *call, const char *aj, size_t al, void *ud);
int ctx_list_tool(rlmcp_call *call, const char *aj, size_t al, void *ud);
int ctx_restart_tool(rlmcp_call *call, const char *aj, size_t al, void *ud);
int ctx_delete_tool(rlmcp_call *call, const char *aj, size_t al, void *ud);
int ctx_run_cell(struct ex *ex, const struct rlmcp_h *h, const char *cid,
                 const char *code, long long timeout_ms, const char *language);
/* Empties the cache of the last gateway used (a process-wide one: the
 * plugin's shutdown, before the host unloads it). */
void ctx_shutdown(void);
/* The gateway (ctxgw.py), embedded at build time. */
extern const unsigned char ex_ctxgw_py[];
extern const size_t ex_ctxgw_py_len;

/* Tools in run.c */
int run_code_tool(rlmcp_call *call, const char *aj, size_t al, void *ud);
int run_lang_tool(rlmcp_call *call, const char *aj, size_t al, void *ud);
/* Expand {file}, {dir}, {stem} (shell-quoted) in a command template. */
char *run_expand(const char *tmpl, const char *file);

/* Write a text file with write_file_contents (reports errors). */
int exec_write_file(const struct rlmcp_h *h, const char *devbox_id,
                    const char *path, const char *contents);

#endif
