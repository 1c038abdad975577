/*
 * exec.c - code execution tools: execute_command (+ async, get, wait, logs,
 * kill, stdin), run_shell, run_code and one run_<language> per configured
 * language. The run itself is in command.c, run_code/run_<lang> in run.c.
 *
 * Config (all optional):
 *   max_output_bytes       per stream kept in results (32768)
 *   default_timeout_seconds / max_timeout_seconds   (600 / 3600)
 *   optimistic_seconds     in-request wait before streaming (2; max 25)
 *   stream_output          stream stdout as progress (true)
 *   last_n                 lines asked of the API per stream (1000)
 *   create_wait_seconds    wait for new devboxes to run (180)
 *   max_log_bytes          most bytes get_execution_logs returns (1 MiB)
 *   run_code: {purpose: code-testing, keep_alive_seconds: 3600,
 *              blueprint_name: ...}
 *   languages: {name: {extension, command (with {file}), blueprint,
 *               suspend_after (true), description}}
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec_internal.h"

/* ---- execute_command / run_shell ---------------------------------------- */

int exec_arg_timeout(struct ex *ex, const struct rlmcp_h *h, const cJSON *args,
                     long long *out_ms)
{
    long long s = -1, ms = -1;
    int rc;

    *out_ms = ex->default_timeout_s * 1000;
    rc = rlmcp_h_arg_int(h, args, "timeout_seconds", false, 1,
                         ex->max_timeout_s, &s);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(h, args, "timeout_ms", false, 1000,
                             ex->max_timeout_s * 1000, &ms);
    if (rc != RLMCP_OK)
        return rc;
    if (s >= 0 && ms >= 0)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "give timeout_seconds or timeout_ms, not both "
                            "(got timeout_seconds %lld and timeout_ms %lld)",
                            s, ms);
    if (s >= 0)
        *out_ms = s * 1000;
    else if (ms >= 0)
        *out_ms = ms;
    return RLMCP_OK;
}

int exec_arg_command(const struct rlmcp_h *h, const cJSON *args, char **out)
{
    const cJSON *argv = cJSON_GetObjectItemCaseSensitive(args, "args");
    const cJSON *it = NULL;
    const char *command = NULL;
    char *acc = NULL;
    int i = 0;
    int rc;

    *out = NULL;
    rc = rlmcp_h_arg_str(h, args, "command", false, &command);
    if (rc != RLMCP_OK)
        return rc;
    if (cJSON_IsNull(argv))
        argv = NULL;
    if (command != NULL && argv != NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "give command (a bash command line) or args (a "
                            "program and its arguments, run without a "
                            "shell), not both");
    if (command == NULL && argv == NULL)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "missing the command: give command (a bash "
                            "command line, e.g. \"ls -l\") or args (e.g. "
                            "[\"ls\", \"-l\"])");
    if (command != NULL && command[0] == '\0')
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'command' is empty: give a bash "
                            "command line, e.g. \"ls -l\"");
    if (command != NULL) {
        *out = strdup(command);
        return *out != NULL ? RLMCP_OK : RLMCP_ENOMEM;
    }
    if (!cJSON_IsArray(argv) || cJSON_GetArraySize(argv) == 0)
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'args' must be a non-empty array of "
                            "strings: the program, then its arguments, "
                            "e.g. [\"ls\", \"-l\", \"/tmp\"]");
    /* Each word quoted: the API runs a bash command line, and nothing in
     * an argument may reach the shell as syntax. */
    acc = strdup("");
    cJSON_ArrayForEach(it, argv)
    {
        char *q = NULL, *next = NULL;

        if (!cJSON_IsString(it) || (i == 0 && it->valuestring[0] == '\0')) {
            rc = rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                              "args[%d] must be a %sstring (args is the "
                              "program, then its arguments)",
                              i, i == 0 ? "non-empty " : "");
            goto out;
        }
        q = acc != NULL ? rlmcp_h_shell_quote(it->valuestring) : NULL;
        next = q != NULL ? rlmcp_h_sprintf("%s%s%s", acc, i > 0 ? " " : "", q)
                         : NULL;
        free(q);
        free(acc);
        acc = next;
        if (acc == NULL) {
            rc = RLMCP_ENOMEM;
            goto out;
        }
        i++;
    }
    *out = acc;
    acc = NULL;
out:
    free(acc);
    return rc;
}

static int arg_shell(const struct rlmcp_h *h, const cJSON *args,
                     const char **out)
{
    int rc = rlmcp_h_arg_str(h, args, "shell_name", false, out);

    if (rc == RLMCP_OK && *out != NULL && !rlmcp_h_id_valid(*out))
        return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                            "argument 'shell_name' may hold only letters, "
                            "digits, '_', '-' and '.' (at most 128)");
    return rc;
}

static int execute_common(struct ex *ex, rlmcp_call *call, const char *aj,
                          size_t al, bool extras)
{
    struct rlmcp_h h = {ex->api, call};
    struct exec_params p = {0};
    cJSON *args = NULL, *result = NULL;
    char *command = NULL, *cmd = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &p.devbox_id);
    if (rc == RLMCP_OK)
        rc = exec_arg_command(&h, args, &command);
    if (rc == RLMCP_OK)
        rc = arg_shell(&h, args, &p.shell_name);
    if (rc == RLMCP_OK)
        rc = exec_arg_timeout(ex, &h, args, &p.timeout_ms);
    if (rc == RLMCP_OK && extras)
        rc = exec_build_command(&h, args, command, p.shell_name, &cmd);
    else if (rc == RLMCP_OK)
        rc = exec_prefix(&h, command, NULL, NULL, &cmd);
    if (rc != RLMCP_OK)
        goto out;
    p.command = cmd;
    rc = exec_run(ex, &h, &p, &result);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_json(&h, result);
out:
    free(command);
    free(cmd);
    cJSON_Delete(args);
    cJSON_Delete(result);
    return rlmcp_h_ret(rc);
}

static int t_execute(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return execute_common(ud, call, aj, al, true);
}

static int t_run_shell(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return execute_common(ud, call, aj, al, false);
}

/* ---- execute_command_async ------------------------------------------------
 */

/*
 * Start cmd (already prefixed) on devbox id in the background; the result
 * is {execution_id, devbox_id, status}.
 */
static int start_async(const struct rlmcp_h *h, const char *id, const char *cmd,
                       const char *shell, bool stdin_, long long timeout_ms)
{
    cJSON *body = NULL, *view = NULL, *res = NULL;
    const cJSON *eid = NULL, *st = NULL;
    char *path = NULL, *what = NULL, *msg = NULL;
    long status = 0;
    int rc;

    body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "command", cmd);
    if (shell != NULL)
        cJSON_AddStringToObject(body, "shell_name", shell);
    if (stdin_)
        cJSON_AddBoolToObject(body, "attach_stdin", true);
    path = rlmcp_h_sprintf("/v1/devboxes/%s/execute_async", id);
    what = rlmcp_h_sprintf("starting a command on devbox %s", id);
    rc = rlmcp_h_request_status(h, "POST", path, body, NULL, what, &status,
                                &view, &msg);
    if (rc != RLMCP_OK)
        goto out;
    if (status < 200 || status > 299) {
        rc = exec_fail_on_devbox(h, id, status, msg, what);
        goto out;
    }
    eid = cJSON_GetObjectItemCaseSensitive(view, "execution_id");
    st = cJSON_GetObjectItemCaseSensitive(view, "status");
    if (!cJSON_IsString(eid)) {
        rc = rlmcp_h_fail(h, RLMCP_ERR_INTERNAL,
                          "%s: no execution_id in the answer", what);
        goto out;
    }
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "execution_id", eid->valuestring);
    cJSON_AddStringToObject(res, "devbox_id", id);
    cJSON_AddStringToObject(res, "status",
                            cJSON_IsString(st) ? st->valuestring : "running");
    /* A task's timeout, kept in its handle (members are strings): from
     * now, when the command is surely running. */
    if (timeout_ms > 0) {
        char at[32];

        snprintf(at, sizeof(at), "%lld", exec_wall_ms() + timeout_ms);
        cJSON_AddStringToObject(res, "kill_at_ms", at);
    }
    rc = rlmcp_h_result_json(h, res);
out:
    free(path);
    free(what);
    free(msg);
    cJSON_Delete(body);
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rc;
}

/*
 * execute_command_async, and execute_command as a task (task.c has the
 * other ops): the arguments of either tool, started in the background. A task's
 * timeout_seconds is checked but does not bound the command: a task runs
 * until it ends or tasks/cancel stops it. Each tool's schema lacks the
 * other's argument (attach_stdin, timeout_seconds), so its getter finds it
 * absent.
 */
static int start_tool(struct ex *ex, rlmcp_call *call, const char *aj,
                      size_t al, bool task)
{
    struct rlmcp_h h = {ex->api, call};
    cJSON *args = NULL;
    const char *id = NULL, *shell = NULL;
    long long timeout_ms = 0;
    bool stdin_ = false;
    char *command = NULL, *cmd = NULL;
    int rc;

    rc = rlmcp_h_args(&h, aj, al, &args);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(&h, args, "devbox_id", true, &id);
    if (rc == RLMCP_OK)
        rc = exec_arg_command(&h, args, &command);
    if (rc == RLMCP_OK)
        rc = arg_shell(&h, args, &shell);
    if (rc == RLMCP_OK)
        rc = exec_arg_timeout(ex, &h, args, &timeout_ms);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(&h, args, "attach_stdin", &stdin_);
    if (rc == RLMCP_OK)
        rc = exec_build_command(&h, args, command, shell, &cmd);
    /* A task is bounded by a timeout only when the call gives one. */
    if (!task ||
        (cJSON_GetObjectItemCaseSensitive(args, "timeout_seconds") == NULL &&
         cJSON_GetObjectItemCaseSensitive(args, "timeout_ms") == NULL))
        timeout_ms = 0;
    if (rc == RLMCP_OK)
        rc = start_async(&h, id, cmd, shell, stdin_, timeout_ms);
    free(command);
    free(cmd);
    cJSON_Delete(args);
    return rlmcp_h_ret(rc);
}

static int t_async(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return start_tool(ud, call, aj, al, false);
}

int exec_task_start(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    return start_tool(ud, call, aj, al, true);
}

long long exec_wall_ms(void)
{
    return rlmcp_h_wall_ms(); /* the helpers' clock: tests simulate it */
}

/* ---- get / wait / kill / stdin --------------------------------------------
 */

int exec_ids(const struct rlmcp_h *h, const char *aj, size_t al, cJSON **args,
             const char **id, const char **eid)
{
    int rc = rlmcp_h_args(h, aj, al, args);

    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, *args, "devbox_id", true, id);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_id(h, *args, "execution_id", true, eid);
    return rc;
}

/* The execution's view, with the last last_n lines of each stream. */
int exec_read_view(const struct rlmcp_h *h, const char *id, const char *eid,
                   long long last_n, cJSON **view)
{
    char *path = NULL, *what = NULL;
    int rc = RLMCP_ENOMEM;

    if (last_n >= 0)
        path = rlmcp_h_sprintf("/v1/devboxes/%s/executions/%s?last_n=%lld", id,
                               eid, last_n);
    else
        path = rlmcp_h_sprintf("/v1/devboxes/%s/executions/%s", id, eid);
    what = rlmcp_h_sprintf("execution %s on devbox %s", eid, id);
    rc = rlmcp_h_request(h, "GET", path, NULL, NULL, what, view);
    free(path);
    free(what);
    return rc;
}

int exec_wait_view(struct ex *ex, const struct rlmcp_h *h, const char *id,
                   const char *eid, long long timeout_ms, long long last_n,
                   cJSON **view)
{
    struct exec_limits lim;
    int rc;

    exec_limits(h, timeout_ms, EXEC_RESERVE_READ, &lim);
    rc = exec_wait_done(ex, h, id, eid, lim.work_until, view);
    if (rc == RLMCP_ETIMEDOUT) {
        cJSON_Delete(*view);
        *view = NULL;
        rc = exec_read_view(h, id, eid, last_n, view);
    }
    return rc;
}

/* An execution that a kill ended reads "killed": the task was cancelled. */
static void mark_killed(cJSON *res)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(res, "status");
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(res, "ended_by");

    if (cJSON_IsString(st) && strcmp(st->valuestring, "completed") == 0 &&
        cJSON_IsString(by) && strcmp(by->valuestring, "killed") == 0)
        cJSON_ReplaceItemInObjectCaseSensitive(res, "status",
                                               cJSON_CreateString("killed"));
}

int exec_answer_view(struct ex *ex, const struct rlmcp_h *h, const cJSON *view,
                     const char *id, unsigned flags)
{
    cJSON *res = exec_view_result(ex, h, view, id);
    int rc = RLMCP_ENOMEM;

    if (res != NULL) {
        if (flags & EXEC_ANSWER_TIMEOUT)
            cJSON_ReplaceItemInObjectCaseSensitive(
                res, "ended_by", cJSON_CreateString("timeout"));
        else if (flags & EXEC_ANSWER_TASK)
            mark_killed(res);
        if (flags & EXEC_ANSWER_DONE)
            cJSON_AddBoolToObject(res, "already_done", true);
        rc = rlmcp_h_result_json(h, res);
    }
    cJSON_Delete(res);
    return rc;
}

/* A task's end by its timeout (wall-clock ms), from its handle; 0: none. */
static long long task_kill_at(const cJSON *args)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(args, "kill_at_ms");

    return cJSON_IsString(k) ? strtoll(k->valuestring, NULL, 10) : 0;
}

static bool view_ended_by_kill(const cJSON *view)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(view, "status");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(view, "exit_status");

    return cJSON_IsString(st) && strcmp(st->valuestring, "completed") == 0 &&
           cJSON_IsNumber(ex) &&
           (ex->valueint == 128 + 9 || ex->valueint == 128 + 15);
}

/*
 * A task past its timeout: a command still running is killed (and the kill
 * confirmed) now, and one a kill ended reads ended_by "timeout" (the task
 * completed, as the command does when its own timeout ends it).
 */
static int task_overrun(const struct rlmcp_h *h, const char *id,
                        const char *eid, long long timeout_at, cJSON **view,
                        unsigned *flags)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(*view, "status");
    struct exec_limits lim;
    cJSON *killed = NULL;
    char why[200];

    /* The clean-up time of a timed-out command, inside this call's. */
    exec_limits(h, 0, EXEC_RESERVE_KILL, &lim);
    if (cJSON_IsString(st) && strcmp(st->valuestring, "completed") != 0) {
        if (!exec_stop(h, id, eid, exec_cleanup_until(&lim, false), why,
                       sizeof(why), &killed))
            return rlmcp_h_fail_remedy(
                h, RLMCP_ERR_UNAVAILABLE,
                "Get the task again once the backend answers.",
                "execution %s on devbox %s ran past its timeout (%.1f s "
                "ago) and could not be confirmed stopped (%s)",
                eid, id, (double)(exec_wall_ms() - timeout_at) / 1000.0, why);
        cJSON_Delete(*view);
        *view = killed;
    }
    if (view_ended_by_kill(*view))
        *flags |= EXEC_ANSWER_TIMEOUT;
    return RLMCP_OK;
}

int exec_get_tool(struct ex *ex, rlmcp_call *call, const char *aj, size_t al,
                  long long max_wait_s, long long last_n, unsigned flags)
{
    struct rlmcp_h h = {ex->api, call};
    cJSON *args = NULL, *view = NULL;
    const char *id = NULL, *eid = NULL;
    long long timeout_s = 60;
    long long wait_ms = 0;
    long long timeout_at = 0;
    int rc;

    rc = exec_ids(&h, aj, al, &args, &id, &eid);
    if (rc == RLMCP_OK && max_wait_s > 0)
        rc = rlmcp_h_arg_int(&h, args, "timeout_seconds", false, 1, max_wait_s,
                             &timeout_s);
    if (rc != RLMCP_OK)
        goto out;
    wait_ms = max_wait_s > 0 ? timeout_s * 1000 : 0;
    /* A task with a timeout waits no longer than to its end. */
    if (flags & EXEC_ANSWER_TASK)
        timeout_at = task_kill_at(args);
    if (timeout_at > 0 && wait_ms > timeout_at - exec_wall_ms())
        wait_ms = timeout_at - exec_wall_ms();
    /* A wait answers an execution still running at the bound as it is. */
    if (wait_ms > 0)
        rc = exec_wait_view(ex, &h, id, eid, wait_ms, last_n, &view);
    else
        rc = exec_read_view(&h, id, eid, last_n, &view);
    if (rc == RLMCP_OK && timeout_at > 0 && exec_wall_ms() >= timeout_at)
        rc = task_overrun(&h, id, eid, timeout_at, &view, &flags);
    if (rc == RLMCP_OK)
        rc = exec_answer_view(ex, &h, view, id, flags);
out:
    cJSON_Delete(args);
    cJSON_Delete(view);
    return rlmcp_h_ret(rc);
}

static int t_get_execution(rlmcp_call *call, const char *aj, size_t al,
                           void *ud)
{
    struct ex *ex = ud;

    return exec_get_tool(ex, call, aj, al, 0, ex->last_n, 0);
}

static int t_wait_execution(rlmcp_call *call, const char *aj, size_t al,
                            void *ud)
{
    struct ex *ex = ud;

    return exec_get_tool(ex, call, aj, al, ex->max_timeout_s, ex->last_n, 0);
}

static int t_kill(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    cJSON *args = NULL, *view = NULL, *res = NULL, *body = NULL;
    const char *id = NULL, *eid = NULL;
    char *path = NULL, *what = NULL;
    bool group = true;
    int rc;

    rc = exec_ids(&h, aj, al, &args, &id, &eid);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_bool(&h, args, "kill_process_group", &group);
    if (rc != RLMCP_OK)
        goto out;
    body = cJSON_CreateObject();
    cJSON_AddBoolToObject(body, "kill_process_group", group);
    path = rlmcp_h_sprintf("/v1/devboxes/%s/executions/%s/kill", id, eid);
    what = rlmcp_h_sprintf("killing execution %s on devbox %s", eid, id);
    rc = rlmcp_h_request(&h, "POST", path, body, NULL, what, &view);
    if (rc != RLMCP_OK)
        goto out;
    if (cJSON_IsObject(view) &&
        cJSON_GetObjectItemCaseSensitive(view, "execution_id") != NULL) {
        res = exec_view_result(ex, &h, view, id);
    } else {
        res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "execution_id", eid);
        cJSON_AddStringToObject(res, "devbox_id", id);
        cJSON_AddStringToObject(res, "status", "killed");
    }
    rc = res != NULL ? rlmcp_h_result_json(&h, res) : RLMCP_ENOMEM;
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(body);
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

static int t_stdin(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    cJSON *args = NULL, *got = NULL, *res = NULL, *body = NULL;
    const char *id = NULL, *eid = NULL, *text = NULL, *sig = NULL;
    char *path = NULL, *what = NULL;
    int rc;

    rc = exec_ids(&h, aj, al, &args, &id, &eid);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "text", false, &text);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "signal", false, &sig);
    if (rc != RLMCP_OK)
        goto out;
    if (text == NULL && sig == NULL) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "give text and/or signal");
        goto out;
    }
    if (sig != NULL && strcmp(sig, "EOF") != 0 &&
        strcmp(sig, "INTERRUPT") != 0) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'signal' must be EOF or INTERRUPT");
        goto out;
    }
    body = cJSON_CreateObject();
    if (text != NULL)
        cJSON_AddStringToObject(body, "text", text);
    if (sig != NULL)
        cJSON_AddStringToObject(body, "signal", sig);
    path =
        rlmcp_h_sprintf("/v1/devboxes/%s/executions/%s/send_std_in", id, eid);
    what = rlmcp_h_sprintf("stdin of execution %s on devbox %s", eid, id);
    rc = rlmcp_h_request(&h, "POST", path, body, NULL, what, &got);
    if (rc != RLMCP_OK)
        goto out;
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "execution_id", eid);
    cJSON_AddStringToObject(res, "devbox_id", id);
    cJSON_AddBoolToObject(
        res, "success",
        !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(got, "success")));
    rc = rlmcp_h_result_json(&h, res);
out:
    free(path);
    free(what);
    cJSON_Delete(args);
    cJSON_Delete(body);
    cJSON_Delete(got);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* ---- get_execution_logs
 * ------------------------------------------------------ */

static int logs_stream(struct ex *ex, const struct rlmcp_h *h, const char *id,
                       const char *eid, const char *which, long long offset,
                       long long max_bytes, const cJSON *view, bool running,
                       cJSON *res)
{
    struct rlmcp_h_capture cap;
    char key[40];
    bool complete = false, trunc = false;
    uint64_t received = 0;
    char *text = NULL;
    int rc;

    /* Room for all of max_bytes: nothing is cut inside the page. */
    if (!rlmcp_h_capture_init(&cap, (size_t)max_bytes + 2))
        return RLMCP_ENOMEM;
    if (running)
        rc = exec_live_output(h, id, eid, which, (uint64_t)offset,
                              (uint64_t)max_bytes, &cap, &complete, &received);
    else
        rc = exec_read_stream(h, id, eid, which, (uint64_t)offset,
                              (uint64_t)max_bytes, 60000, &cap, &complete,
                              &received);
    if (rc != RLMCP_OK)
        goto out;
    if (received < (uint64_t)offset)
        received = (uint64_t)offset; /* nothing new yet */
    if (received == (uint64_t)offset && !complete && !running) {
        /* No stream from this backend: fall back to the view's lines. */
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(view, which);
        if (cJSON_IsString(t) && offset == 0) {
            size_t len = strlen(t->valuestring);
            if ((long long)len > max_bytes)
                len = (size_t)max_bytes;
            rlmcp_h_capture_add(&cap, t->valuestring, len);
            received = len;
        }
    }
    text = rlmcp_h_capture_text(&cap, NULL, &trunc);
    if (text == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    cJSON_AddStringToObject(res, which, text);
    snprintf(key, sizeof(key), "%s_next_offset", which);
    cJSON_AddNumberToObject(res, key, (double)received);
    snprintf(key, sizeof(key), "%s_has_more", which);
    /* A running command may write more. */
    cJSON_AddBoolToObject(
        res, key, running || (!complete && received > (uint64_t)offset));
out:
    free(text);
    rlmcp_h_capture_free(&cap);
    return rc;
}

static int t_logs(rlmcp_call *call, const char *aj, size_t al, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    cJSON *args = NULL, *view = NULL, *res = NULL;
    const char *id = NULL, *eid = NULL, *stream = "both";
    long long offset = 0, max_bytes = ex->max_log_bytes;
    const cJSON *st = NULL;
    bool running = false;
    int rc;

    rc = exec_ids(&h, aj, al, &args, &id, &eid);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_str(&h, args, "stream", false, &stream);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "offset", false, 0, 1LL << 50, &offset);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_arg_int(&h, args, "max_bytes", false, 1, ex->max_log_bytes,
                             &max_bytes);
    if (rc != RLMCP_OK)
        goto out;
    if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0 &&
        strcmp(stream, "both") != 0) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_INVALID_ARGUMENT,
                          "argument 'stream' must be stdout, stderr or "
                          "both");
        goto out;
    }
    rc = exec_read_view(&h, id, eid, ex->last_n, &view);
    if (rc != RLMCP_OK)
        goto out;
    st = cJSON_GetObjectItemCaseSensitive(view, "status");
    res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "execution_id", eid);
    cJSON_AddStringToObject(res, "status",
                            cJSON_IsString(st) ? st->valuestring : "unknown");
    /* Running: the streams hold the output so far (read for a moment, as
     * a live stream would block until the command ends). */
    running = cJSON_IsString(st) && strcmp(st->valuestring, "completed") != 0;
    if (strcmp(stream, "stderr") != 0)
        rc = logs_stream(ex, &h, id, eid, "stdout", offset, max_bytes, view,
                         running, res);
    if (rc == RLMCP_OK && strcmp(stream, "stdout") != 0)
        rc = logs_stream(ex, &h, id, eid, "stderr", offset, max_bytes, view,
                         running, res);
    if (rc == RLMCP_OK)
        rc = rlmcp_h_result_json(&h, res);
out:
    cJSON_Delete(args);
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

/* ---- devbox://{devbox_id}/executions/{execution_id}/stdout|stderr ------
 */

/* Parse the URI: the ids and which stream. */
static int out_uri(const struct rlmcp_h *h, const char *uri, char *id,
                   char *eid, const char **which)
{
    static const char pre[] = "executions/";
    const char *rest = NULL;
    const char *start = NULL;
    const char *slash = NULL;
    size_t n = 0;
    int rc = rlmcp_h_devbox_uri(h, uri, id, 130, &rest);

    if (rc != RLMCP_OK)
        return rc;
    if (strncmp(rest, pre, sizeof(pre) - 1) == 0) {
        start = rest + sizeof(pre) - 1;
        slash = strchr(start, '/');
    }
    if (slash != NULL)
        n = (size_t)(slash - start);
    if (n > 0 && n <= 128) {
        memcpy(eid, start, n);
        eid[n] = '\0';
        *which = slash + 1;
        if (rlmcp_h_id_valid(eid) &&
            (strcmp(*which, "stdout") == 0 || strcmp(*which, "stderr") == 0))
            return RLMCP_OK;
    }
    return rlmcp_h_fail(h, RLMCP_ERR_INVALID_ARGUMENT,
                        "'%.256s' is not an execution output URI: write "
                        "devbox://{devbox_id}/executions/{execution_id}/"
                        "stdout (or stderr)",
                        uri);
}

/* The result's _meta: where the execution stands. */
static int out_meta(const struct rlmcp_h *h, const cJSON *view)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(view, "status");
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(view, "exit_status");
    cJSON *meta = cJSON_CreateObject();
    int rc;

    cJSON_AddStringToObject(meta, "runloop/status",
                            cJSON_IsString(st) ? st->valuestring : "unknown");
    if (cJSON_IsNumber(ex))
        cJSON_AddNumberToObject(meta, "runloop/exit_status", ex->valuedouble);
    rc = rlmcp_h_result_json(h, meta);
    cJSON_Delete(meta);
    /* A host from before resource _meta: the contents still go out. */
    return rc == RLMCP_ESTATE ? RLMCP_OK : rc;
}

static int r_output(rlmcp_call *call, const char *uri, void *ud)
{
    struct ex *ex = ud;
    struct rlmcp_h h = {ex->api, call};
    cJSON *view = NULL, *res = NULL;
    const cJSON *st = NULL, *text = NULL, *next = NULL;
    const char *which = NULL;
    char id[130], eid[130], key[40];
    bool running;
    int rc;

    rc = out_uri(&h, uri, id, eid, &which);
    if (rc != RLMCP_OK)
        goto out;
    res = cJSON_CreateObject();
    if (res == NULL) {
        rc = RLMCP_ENOMEM;
        goto out;
    }
    rc = exec_read_view(&h, id, eid, ex->last_n, &view);
    if (rc != RLMCP_OK)
        goto out;
    st = cJSON_GetObjectItemCaseSensitive(view, "status");
    running = cJSON_IsString(st) && strcmp(st->valuestring, "completed") != 0;
    /* One byte over the cap tells "too large" from "exactly the cap". */
    rc = logs_stream(ex, &h, id, eid, which, 0, ex->max_log_bytes + 1, view,
                     running, res);
    if (rc != RLMCP_OK)
        goto out;
    text = cJSON_GetObjectItemCaseSensitive(res, which);
    snprintf(key, sizeof(key), "%s_next_offset", which);
    next = cJSON_GetObjectItemCaseSensitive(res, key);
    if (cJSON_IsNumber(next) && next->valuedouble > (double)ex->max_log_bytes) {
        rc = rlmcp_h_fail(&h, RLMCP_ERR_TOO_LARGE,
                          "execution %s on devbox %s: its %s is larger than "
                          "this server's limit of %lld bytes for a resource; "
                          "page it with get_execution_logs (offset, "
                          "max_bytes)",
                          eid, id, which, ex->max_log_bytes);
        goto out;
    }
    rc = out_meta(&h, view);
    if (rc == RLMCP_OK)
        rc = ex->api->resource_contents(
            call, uri, "text/plain",
            cJSON_IsString(text) ? text->valuestring : "",
            cJSON_IsString(text) ? strlen(text->valuestring) : 0, false);
out:
    cJSON_Delete(view);
    cJSON_Delete(res);
    return rlmcp_h_ret(rc);
}

static int register_outputs(struct ex *ex, rlmcp_plugin *self)
{
    static const char *const streams[] = {"stdout", "stderr"};
    size_t i;
    int rc = RLMCP_OK;

    for (i = 0; i < 2 && rc == RLMCP_OK; i++) {
        struct rlmcp_resource_def def = RLMCP_RESOURCE_DEF_INIT;
        char tmpl[80], name[40], desc[256];

        snprintf(tmpl, sizeof(tmpl),
                 "devbox://{devbox_id}/executions/{execution_id}/%s",
                 streams[i]);
        snprintf(name, sizeof(name), "execution-%s", streams[i]);
        snprintf(desc, sizeof(desc),
                 "The %s of an execution so far (all of it once completed); "
                 "_meta runloop/status says whether it still runs. "
                 "Subscribe to hear when it grows or completes.",
                 streams[i]);
        def.uri_template = tmpl;
        def.name = name;
        def.description = desc;
        def.mime_type = "text/plain";
        def.flags = RLMCP_RESOURCE_SUBSCRIBABLE;
        def.read = r_output;
        def.user_data = ex;
        rc = ex->api->register_resource(self, &def);
        if (rc != RLMCP_OK)
            ex->api->set_error(self, "registering %s failed: %s", tmpl,
                               ex->api->strerror(rc));
    }
    return rc;
}

/* ---- configuration
 * ------------------------------------------------------------- */

/* The shutdown; also frees the state of a failed init. */
static void ex_shutdown(rlmcp_plugin *self, void *state)
{
    struct ex *ex = state;
    size_t i;

    /* The gateway cache is the library's, not this instance's: emptied
     * here all the same, as the host may unload the library next (another
     * instance just reads its devbox again). */
    ctx_shutdown();
    if (ex == NULL)
        return;
    for (i = 0; i < ex->n_langs; i++) {
        free(ex->langs[i].name);
        free(ex->langs[i].tool_name);
        free(ex->langs[i].extension);
        free(ex->langs[i].command);
        free(ex->langs[i].blueprint);
        free(ex->langs[i].description);
    }
    free(ex->langs);
    free(ex->purpose);
    free(ex->default_blueprint);
    free(ex);
}

static const char *cfg_str(const cJSON *o, const char *k)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(it) ? it->valuestring : NULL;
}

static int parse_lang(struct ex *ex, rlmcp_plugin *self, const cJSON *l,
                      struct lang *out)
{
    const char *ext = cfg_str(l, "extension");
    const char *cmd = cfg_str(l, "command");
    const char *bp = cfg_str(l, "blueprint");
    const char *desc = cfg_str(l, "description");

    /* Names, keys, types, the extension and {file} in the command are
     * checked by schemas/config.json before init. */
    if (ext == NULL || cmd == NULL) {
        ex->api->set_error(self,
                           "config languages.%s needs extension and "
                           "command",
                           l->string);
        return RLMCP_EINVAL;
    }
    out->suspend_after = true;
    rlmcp_h_cfg_bool(l, "suspend_after", true, &out->suspend_after);
    out->name = strdup(l->string);
    out->tool_name = rlmcp_h_sprintf("run_%s", l->string);
    out->extension = strdup(ext);
    out->command = strdup(cmd);
    out->blueprint = bp != NULL ? strdup(bp) : NULL;
    out->description =
        desc != NULL
            ? strdup(desc)
            : rlmcp_h_sprintf(
                  "Run %s code: saved to a file (default "
                  "/home/user/code.%s) and run with `%s` in a devbox kept "
                  "for %s, created when needed%s. Returns exit_code, stdout "
                  "and stderr; a non-zero exit is a normal result.",
                  l->string, ext, cmd, l->string,
                  out->suspend_after ? " and suspended after" : "");
    out->ex = ex;
    if (out->name == NULL || out->tool_name == NULL || out->extension == NULL ||
        out->command == NULL || out->description == NULL ||
        (bp != NULL && out->blueprint == NULL))
        return RLMCP_ENOMEM;
    return RLMCP_OK;
}

static int ex_config_run_code(struct ex *ex, rlmcp_plugin *self,
                              const cJSON *cfg)
{
    const cJSON *rc_cfg = cJSON_GetObjectItemCaseSensitive(cfg, "run_code");
    const char *purpose = cfg_str(rc_cfg, "purpose");
    const char *bp = cfg_str(rc_cfg, "blueprint_name");

    (void)self;
    ex->purpose = strdup(purpose != NULL ? purpose : "code-testing");
    ex->default_blueprint = bp != NULL ? strdup(bp) : NULL;
    rlmcp_h_cfg_int(rc_cfg, "keep_alive_seconds", 3600, &ex->keep_alive_s);
    if (ex->purpose == NULL || (bp != NULL && ex->default_blueprint == NULL))
        return RLMCP_ENOMEM;
    return RLMCP_OK;
}

static int ex_config(struct ex *ex, rlmcp_plugin *self, const cJSON *cfg)
{
    static const struct rlmcp_h_cfg_default keys[] = {
        {"max_output_bytes", 32768, offsetof(struct ex, max_output)},
        {"default_timeout_seconds", 600,
         offsetof(struct ex, default_timeout_s)},
        {"max_timeout_seconds", 3600, offsetof(struct ex, max_timeout_s)},
        {"optimistic_seconds", 2, offsetof(struct ex, optimistic_s)},
        {"last_n", 1000, offsetof(struct ex, last_n)},
        {"create_wait_seconds", 180, offsetof(struct ex, create_wait_s)},
        {"max_log_bytes", 1 << 20, offsetof(struct ex, max_log_bytes)},
    };
    const struct rlmcp_host_api *api = ex->api;
    const cJSON *langs = NULL, *l = NULL;
    int rc;

    /* Types and ranges are schemas/config.json's; this fills defaults. */
    rlmcp_h_cfg_defaults(cfg, keys, sizeof(keys) / sizeof(keys[0]), ex);
    if (ex->default_timeout_s > ex->max_timeout_s) {
        api->set_error(self, "config default_timeout_seconds must not "
                             "exceed max_timeout_seconds");
        return RLMCP_EINVAL;
    }
    rlmcp_h_cfg_bool(cfg, "stream_output", true, &ex->stream);
    rc = ex_config_run_code(ex, self, cfg);
    if (rc != RLMCP_OK)
        return rc;
    langs = cJSON_GetObjectItemCaseSensitive(cfg, "languages");
    ex->n_langs = 0;
    ex->langs =
        calloc((size_t)cJSON_GetArraySize(langs) + 1, sizeof(struct lang));
    if (ex->langs == NULL)
        return RLMCP_ENOMEM;
    cJSON_ArrayForEach(l, langs)
    {
        rc = parse_lang(ex, self, l, &ex->langs[ex->n_langs]);
        ex->n_langs++;
        if (rc != RLMCP_OK)
            return rc;
    }
    return RLMCP_OK;
}

/* ---- registration
 * ------------------------------------------------------------------ */

#define ANN(ro, destr, idem)                                                   \
    "{\"readOnlyHint\":" ro ",\"destructiveHint\":" destr                      \
    ",\"idempotentHint\":" idem ",\"openWorldHint\":true}"

/* Tools that wait for commands: they run on the host's own threads. */
static const char *const waiting_tools[] = {
    "execute_command", "wait_for_execution", "run_shell", "run_code", NULL};

static const struct rlmcp_h_tool specs[] = {
    {"execute_command", "Run a command",
     "Run a bash command on a devbox and wait for it to finish. Returns "
     "exit_code, stdout, stderr and execution_id; a non-zero exit_code is a "
     "normal result. Long output is cut in the middle; get_execution_logs "
     "has all of it. For servers or long jobs use execute_command_async.",
     schema_execute_command, schema_execution_out,
     ANN("false", "true", "false"), t_execute, true},
    {"execute_command_async", "Start a command in the background",
     "Start a command and return at once with its execution_id; follow it "
     "with get_execution, wait_for_execution, get_execution_logs, "
     "send_execution_stdin or kill_execution.",
     schema_execute_command_async, schema_execute_command_async_out,
     ANN("false", "true", "false"), t_async, false},
    {"list_executions", "List a devbox's executions",
     "The commands run on a devbox, newest first, with execution_id, "
     "command, status (running/completed) and exit_code: finds an "
     "execution whose call was lost or timed out before naming it.",
     schema_list_executions, schema_list_executions_out,
     ANN("true", "false", "true"), list_executions_tool, false},
    {"get_execution", "Get an execution",
     "Status of a command started earlier; exit_code and output once it "
     "completed.",
     schema_get_execution, schema_execution_out, ANN("true", "false", "true"),
     t_get_execution, false},
    {"wait_for_execution", "Wait for an execution",
     "Wait (up to timeout_seconds) for a background command to finish and "
     "return its exit_code and output; if it is still running the result "
     "has status running and you can call again.",
     schema_wait_for_execution, schema_execution_out,
     ANN("true", "false", "true"), t_wait_execution, true},
    {"get_execution_logs", "Get an execution's full output",
     "The complete stdout/stderr of a finished command, paged by byte "
     "offset (use next_offset while has_more). For a running command, the "
     "newest lines.",
     schema_get_execution_logs, schema_get_execution_logs_out,
     ANN("true", "false", "true"), t_logs, false},
    {"kill_execution", "Kill an execution",
     "Stop a running command (and by default its child processes).",
     schema_kill_execution, schema_kill_execution_out,
     ANN("false", "true", "true"), t_kill, false},
    {"send_execution_stdin", "Send input to an execution",
     "Write text to the stdin of a command started with "
     "execute_command_async attach_stdin=true, or close stdin / interrupt "
     "it.",
     schema_send_execution_stdin, schema_send_execution_stdin_out,
     ANN("false", "false", "false"), t_stdin, false},
    {"run_shell", "Run a shell command",
     "Run a shell command on an existing devbox and wait for the result "
     "(exit_code, stdout, stderr). Use shell_name for a stateful session.",
     schema_run_shell, schema_execution_out, ANN("false", "true", "false"),
     t_run_shell, true},
    {"run_code", "Run code in a reusable test sandbox",
     "Write files and run a command in a code-testing sandbox: a running "
     "one is reused (preferring the requested blueprint), else one is "
     "created and kept after success for reuse (shut it down with "
     "shutdown_devbox when done). Returns exit_code, stdout, stderr and "
     "devbox_id.",
     schema_run_code, schema_run_code_out, ANN("false", "true", "false"),
     run_code_tool, true},
};

/* Code contexts (context.c). */
static const char *const ctx_waiting[] = {"create_code_context",
                                          "restart_code_context", NULL};

static const struct rlmcp_h_tool ctx_specs[] = {
    {"create_code_context", "Create a code context",
     "Start a live Python (IPython) interpreter whose variables, imports "
     "and data persist between calls: pass the returned context_id as "
     "`context` to run_python (or run_code with `code`). numpy, pandas and "
     "matplotlib are installed; figures come back as PNG images, "
     "DataFrames as text and HTML. Contexts share one devbox (created on "
     "first use) and end with it.",
     schema_create_code_context, schema_code_context_out,
     ANN("false", "false", "false"), ctx_create_tool, true},
    {"list_code_contexts", "List code contexts",
     "The live code contexts with context_id, cwd, created_ms, "
     "last_used_ms and whether a cell is running.",
     schema_list_code_contexts, schema_list_code_contexts_out,
     ANN("true", "false", "true"), ctx_list_tool, false},
    {"restart_code_context", "Restart a code context",
     "Replace the context's interpreter with a fresh one (same "
     "context_id): every variable and import is gone. A running cell "
     "ends at once (status died).",
     schema_context_id, schema_code_context_out, ANN("false", "true", "false"),
     ctx_restart_tool, true},
    {"delete_code_context", "Delete a code context",
     "End the context's interpreter; its context_id is no longer valid.",
     schema_context_id, schema_delete_code_context_out,
     ANN("false", "true", "true"), ctx_delete_tool, false},
};

static int ex_setup(void *state, rlmcp_plugin *self,
                    const struct rlmcp_host_api *api, const cJSON *cfg)
{
    struct ex *ex = state;
    const size_t n_specs = sizeof(specs) / sizeof(specs[0]);
    uint32_t long_ms;
    size_t i;
    int rc;

    ex->api = api;
    rc = ex_config(ex, self, cfg);
    if (rc != RLMCP_OK)
        return rc;
    /* Room for the longest command plus starting a devbox. */
    long_ms = (uint32_t)(ex->max_timeout_s + ex->create_wait_s + 120) * 1000u;
    /* specs[0], execute_command, may also run as an MCP task; the last,
     * run_code, is registered below. */
    rc =
        rlmcp_h_register_tools_task(self, api, specs, n_specs - 1,
                                    &exec_task_def, ex, long_ms, waiting_tools);
    if (rc == RLMCP_OK) {
        struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
        /* Finding or starting its sandbox comes before the command, whose
         * timeout starts with it: the call's limit is the tool's own. */
        rlmcp_h_tool_def(&specs[n_specs - 1], ex, long_ms, true, &def);
        def.timeout_arg = "";
        rc = rlmcp_h_register_def(self, api, &def);
    }
    if (rc == RLMCP_OK)
        rc = rlmcp_h_register_tools_waiting(
            self, api, ctx_specs, sizeof(ctx_specs) / sizeof(ctx_specs[0]), ex,
            long_ms, ctx_waiting);
    if (rc == RLMCP_OK)
        rc = register_outputs(ex, self);
    for (i = 0; i < ex->n_langs && rc == RLMCP_OK; i++) {
        struct rlmcp_tool_def def = RLMCP_TOOL_DEF_INIT;
        def.name = ex->langs[i].tool_name;
        def.description = ex->langs[i].description;
        /* run_python also runs code in a code context. */
        def.input_schema_json = strcmp(ex->langs[i].name, "python") == 0
                                    ? schema_run_python
                                    : schema_run_language;
        def.output_schema_json = schema_run_code_out;
        def.annotations_json = ANN("false", "true", "false");
        def.handler = run_lang_tool;
        def.user_data = &ex->langs[i];
        /* One at a time per language: the devbox is shared. */
        def.flags = RLMCP_TOOL_SERIAL | RLMCP_TOOL_LONG;
        def.timeout_ms = long_ms;
        /* Its devbox is started first: as run_code. */
        def.timeout_arg = "";
        rc = rlmcp_h_register_def(self, api, &def);
    }
    return rc;
}

RLMCP_H_PLUGIN_DEFINE("exec", "0.1.0",
                      "Code execution: commands, background executions, "
                      "run_code and run_<language>",
                      struct ex, ex_setup, ex_shutdown, schema_config)
