/* devboxd executions: commands run through the sandbox with stdout and
 * stderr written straight into files under the state dir (output of any
 * size never passes through devboxd's memory), one waiter thread each. */
#define _GNU_SOURCE
#include "engine.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TAIL_MAX_BYTES (1 << 20) /* bound on the output carried in a view */

struct execution *engine_exec_find_locked(struct devbox *box, const char *eid)
{
    struct execution *ex;

    for (ex = box->execs; ex != NULL; ex = ex->next) {
        if (strcmp(ex->id, eid) == 0)
            return ex;
    }
    return NULL;
}

struct execution *engine_exec_by_command_id_locked(struct devbox *box,
                                                   const char *cid)
{
    struct execution *ex;

    for (ex = box->execs; ex != NULL; ex = ex->next) {
        if (ex->command_id != NULL && strcmp(ex->command_id, cid) == 0)
            return ex;
    }
    return NULL;
}

void engine_exec_free(struct execution *ex)
{
    free(ex->command);
    free(ex->command_id);
    free(ex->shell_name);
    free(ex->kind);
    free(ex);
}

void engine_exec_unref_locked(struct execution *ex)
{
    if (ex->refs > 0)
        ex->refs--;
}

int engine_exec_save(struct engine *eng, struct execution *ex)
{
    cJSON *rec = cJSON_CreateObject();
    char path[4200];
    char *text = NULL;
    int rc;

    cJSON_AddStringToObject(rec, "id", ex->id);
    cJSON_AddStringToObject(rec, "command", ex->command);
    if (ex->command_id != NULL)
        cJSON_AddStringToObject(rec, "command_id", ex->command_id);
    if (ex->shell_name != NULL)
        cJSON_AddStringToObject(rec, "shell_name", ex->shell_name);
    cJSON_AddStringToObject(rec, "kind", ex->kind);
    cJSON_AddStringToObject(rec, "status", exec_status_name(ex->status));
    cJSON_AddNumberToObject(rec, "exit_status", ex->exit_status);
    cJSON_AddNumberToObject(rec, "create_time_ms", (double)ex->create_time_ms);
    cJSON_AddNumberToObject(rec, "end_time_ms", (double)ex->end_time_ms);
    cJSON_AddBoolToObject(rec, "attach_stdin", ex->attach_stdin);
    if (ex->killed)
        cJSON_AddBoolToObject(rec, "killed", 1);
    if (ex->oom_killed)
        cJSON_AddBoolToObject(rec, "oom_killed", 1);
    text = cJSON_Print(rec);
    cJSON_Delete(rec);
    engine_exec_output_path(eng, ex, "json", path, sizeof(path));
    rc = text != NULL ? util_write_atomic(path, text, strlen(text), 0600) : -1;
    free(text);
    return rc;
}

struct exec_job {
    struct engine *eng;
    struct execution *ex;
    pthread_mutex_t *proc_lock;
};

/* Per-execution lock for the sb_proc handle, which one thread may use at a
 * time: the waiter polls with timeout 0 under it, kill/stdin take it too. */
struct proc_slot {
    pthread_mutex_t lock;
};

static void on_entrypoint_exit_locked(struct engine *eng, struct execution *ex)
{
    struct devbox *box = ex->box;
    char err[256];

    if (eng->stopping || box->entrypoint != ex || box->status != DBX_RUNNING ||
        box->busy)
        return;
    /* The devbox shuts down when its entrypoint exits (entrypoint_exit). */
    pthread_mutex_unlock(&eng->lock);
    engine_shutdown(eng, box, "entrypoint_exit", err, sizeof(err));
    pthread_mutex_lock(&eng->lock);
}

/* A command killed by the devbox's memory limit is reported in its logs
 * (the devbox keeps running unless the sandbox itself died). Returns 1
 * when the devbox's OOM-kill count rose since the last look. */
static int report_oom_locked(struct engine *eng, struct devbox *box)
{
    uint64_t kills = 0;
    char msg[200];

    /* The OOM count alone: every command's end passes here. */
    if (box->sb == NULL || box->busy ||
        sandbox_oom_kills(box->sb, &kills) != 0 || kills <= box->oom_kills)
        return 0;
    snprintf(msg, sizeof(msg),
             "out of memory: the devbox's memory limit killed a process "
             "(%llu OOM kills so far); use a larger resource_size_request",
             (unsigned long long)kills);
    box->oom_kills = kills;
    engine_log_locked(eng, box, "kmsg", "error", msg, NULL, 0);
    return 1;
}

const char *engine_exec_ended_by(const struct execution *ex)
{
    if (ex->oom_killed)
        return "out_of_memory";
    if (ex->killed || ex->exit_status == 128 + SIGKILL ||
        ex->exit_status == 128 + SIGTERM)
        return "killed";
    return "exit";
}

static void *exec_thread(void *arg)
{
    struct exec_job *job = arg;
    struct engine *eng = job->eng;
    struct execution *ex = job->ex;
    struct sb_proc *proc = ex->proc;
    int status = -1;
    int rc;

    for (;;) {
        struct pollfd pfd = {.fd = sandbox_exec_fd(proc), .events = POLLIN};

        poll(&pfd, 1, 500);
        pthread_mutex_lock(job->proc_lock);
        rc = sandbox_exec_wait(proc, 0, &status);
        pthread_mutex_unlock(job->proc_lock);
        if (rc != -ETIMEDOUT)
            break;
    }
    pthread_mutex_lock(&eng->lock);
    pthread_mutex_lock(job->proc_lock);
    ex->proc = NULL;
    pthread_mutex_unlock(job->proc_lock);
    ex->status = EXEC_COMPLETED;
    /* A sandbox that died or was stopped took the process with it. */
    ex->exit_status = rc == 0 && status >= 0 ? status : 128 + SIGKILL;
    ex->end_time_ms = util_now_ms();
    /* The kernel's OOM killer sends SIGKILL; the cgroup's count says it was
     * the memory limit and not a kill call. */
    if ((report_oom_locked(eng, ex->box) || ex->box->oom_failed) &&
        ex->exit_status == 128 + SIGKILL && !ex->killed)
        ex->oom_killed = 1;
    engine_exec_save(eng, ex);
    engine_log_locked(eng, ex->box,
                      strcmp(ex->kind, "launch") == 0 ? "setup_commands"
                                                      : "exec",
                      "info", "command completed", ex, ex->exit_status);
    pthread_cond_broadcast(&eng->changed);
    if (strcmp(ex->kind, "entrypoint") == 0)
        on_entrypoint_exit_locked(eng, ex);
    ex->refs--;
    sandbox_exec_free(proc);
    eng->exec_threads--;
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
    free(job);
    return NULL;
}

/* The lock of each execution's sb_proc, kept apart from the record so a
 * blocking stdin write never holds the engine lock. */
static pthread_mutex_t proc_locks[64] = {
#define L PTHREAD_MUTEX_INITIALIZER
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
#undef L
};

static pthread_mutex_t *proc_lock_for(const struct execution *ex)
{
    unsigned h = 5381;
    const char *p;

    for (p = ex->id; *p != '\0'; p++)
        h = h * 33 + (unsigned char)*p;
    return &proc_locks[h % 64];
}

static int open_output(struct engine *eng, struct execution *ex,
                       const char *which)
{
    char path[4200];

    char *slash = NULL;
    int fd;

    engine_exec_output_path(eng, ex, which, path, sizeof(path));
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != ENOENT)
        return fd;
    /* The first command on this disk: its output dir (root's, 0700). */
    slash = strrchr(path, '/');
    *slash = '\0';
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return -1;
    *slash = '/';
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

static struct execution *exec_new(struct devbox *box, const char *command,
                                  const char *shell_name,
                                  const char *command_id, int attach_stdin,
                                  const char *kind)
{
    struct execution *ex = calloc(1, sizeof(*ex));

    if (ex == NULL)
        return NULL;
    util_new_id("exn", ex->id, sizeof(ex->id));
    ex->box = box;
    ex->command = strdup(command);
    ex->command_id = command_id != NULL ? strdup(command_id) : NULL;
    ex->shell_name = shell_name != NULL ? strdup(shell_name) : NULL;
    ex->kind = strdup(kind);
    ex->attach_stdin = attach_stdin;
    ex->status = EXEC_RUNNING;
    ex->create_time_ms = util_now_ms();
    if (ex->command == NULL || ex->kind == NULL) {
        engine_exec_free(ex);
        return NULL;
    }
    return ex;
}

/* Hands the command to the sandbox with its output files as stdout/stderr. */
static int exec_submit(struct engine *eng, struct sandbox *sb,
                       struct execution *ex, char *err, size_t errlen)
{
    struct sb_exec req;
    int out_fd = open_output(eng, ex, "stdout");
    int err_fd = open_output(eng, ex, "stderr");
    int rc = -1;

    if (out_fd < 0 || err_fd < 0) {
        snprintf(err, errlen, "cannot create output files under %s: %s",
                 eng->state_dir, strerror(errno));
        goto out;
    }
    memset(&req, 0, sizeof(req));
    req.command = ex->command;
    req.shell_name = ex->shell_name;
    req.stdout_fd = out_fd;
    req.stderr_fd = err_fd;
    req.want_stdin = ex->attach_stdin != 0;
    /* A fresh shell starts in the WORKDIR of the blueprint the devbox
     * came from (named shells keep their own cwd). */
    if (ex->shell_name == NULL && ex->box != NULL)
        req.cwd = util_json_str(ex->box->spec, "_workdir");
    /* Quick: the sandbox passes the command to its agent and returns. */
    rc = sandbox_exec(sb, &req, &ex->proc, err, errlen);
out:
    if (out_fd >= 0)
        close(out_fd);
    if (err_fd >= 0)
        close(err_fd);
    if (rc != 0) {
        char path[4200];

        engine_exec_output_path(eng, ex, "stdout", path, sizeof(path));
        unlink(path);
        engine_exec_output_path(eng, ex, "stderr", path, sizeof(path));
        unlink(path);
    }
    return rc;
}

/* Lock held. Starts the waiter thread; without one the execution is
 * killed and completed so nothing waits for it forever. */
static void exec_spawn_waiter(struct engine *eng, struct execution *ex)
{
    struct exec_job *job = calloc(1, sizeof(*job));
    int rc = -1;

    if (job != NULL) {
        job->eng = eng;
        job->ex = ex;
        job->proc_lock = proc_lock_for(ex);
        eng->exec_threads++;
        rc = util_thread_detached(exec_thread, job, 128 * 1024);
    }
    if (rc == 0)
        return;
    if (job != NULL)
        eng->exec_threads--;
    free(job);
    sandbox_exec_kill(ex->proc, SIGKILL);
    sandbox_exec_free(ex->proc);
    ex->proc = NULL;
    ex->status = EXEC_COMPLETED;
    ex->exit_status = 128 + SIGKILL;
    ex->refs--;
}

struct execution *engine_exec_start(struct engine *eng, struct devbox *box,
                                    const char *command, const char *shell_name,
                                    const char *command_id, int attach_stdin,
                                    const char *kind, char *err, size_t errlen)
{
    struct execution *ex = NULL;

    if (box->sb == NULL) {
        snprintf(err, errlen, "devbox %s has no running sandbox", box->id);
        return NULL;
    }
    ex = exec_new(box, command, shell_name, command_id, attach_stdin, kind);
    if (ex == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* Saved before it runs: a command is never run unrecorded. */
    if (engine_exec_save(eng, ex) != 0) {
        snprintf(err, errlen, "cannot save the execution record: %s",
                 strerror(errno));
        engine_exec_free(ex);
        return NULL;
    }
    if (exec_submit(eng, box->sb, ex, err, errlen) != 0) {
        char path[4200];

        engine_exec_output_path(eng, ex, "json", path, sizeof(path));
        unlink(path);
        engine_exec_free(ex);
        return NULL;
    }
    /* The record saved above already says running: nothing to add now
     * that the agent has the command (a second write cost two fsyncs). */
    /* The devbox log names a command when it starts too (not only when it
     * ends), so a client that lost the answer can find it running. */
    engine_log_locked(eng, box,
                      strcmp(kind, "launch") == 0 ? "setup_commands" : "exec",
                      "info", "command started", ex, INT32_MIN);
    ex->next = box->execs;
    box->execs = ex;
    ex->refs = 2; /* the waiter thread and the caller */
    engine_touch_locked(box);
    exec_spawn_waiter(eng, ex);
    return ex;
}

int engine_exec_kill(struct engine *eng, struct execution *ex)
{
    pthread_mutex_t *pl = proc_lock_for(ex);
    int rc = 0;

    (void)eng;
    pthread_mutex_lock(pl);
    if (ex->proc != NULL) {
        ex->killed = 1;
        rc = sandbox_exec_kill(ex->proc, SIGKILL);
    }
    pthread_mutex_unlock(pl);
    return rc == -ESRCH ? 0 : rc;
}

int engine_exec_stdin(struct engine *eng, struct execution *ex,
                      const char *text, size_t len, int eof, int interrupt,
                      char *err, size_t errlen)
{
    pthread_mutex_t *pl = proc_lock_for(ex);
    int rc = 0;

    (void)eng;
    pthread_mutex_lock(pl);
    if (ex->proc == NULL) {
        snprintf(err, errlen,
                 "execution %s has completed; stdin can only be sent to a "
                 "running execution",
                 ex->id);
        rc = 400;
        goto out;
    }
    if (len > 0) {
        int wrc = sandbox_exec_write_stdin(ex->proc, text, len);

        if (wrc == -ETIMEDOUT) {
            snprintf(err, errlen,
                     "the command is not reading its stdin (nothing read for "
                     "10 s; part of the text may have been delivered); send "
                     "less or kill it");
            rc = 400;
            goto out;
        }
        if (wrc != 0) {
            snprintf(err, errlen, "the command's stdin is closed");
            rc = 400;
            goto out;
        }
    }
    if (interrupt)
        sandbox_exec_kill(ex->proc, SIGINT);
    if (eof)
        sandbox_exec_close_stdin(ex->proc);
out:
    pthread_mutex_unlock(pl);
    return rc;
}

/* ------------------------------------------------------------ views */

char *engine_tail(const char *path, int last_n, int *truncated)
{
    char *buf = NULL;
    struct stat st;
    off_t start;
    off_t size;
    size_t len;
    size_t i;
    int lines = 0;
    int fd;

    *truncated = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return strdup("");
    }
    size = st.st_size;
    start = size > TAIL_MAX_BYTES ? size - TAIL_MAX_BYTES : 0;
    len = (size_t)(size - start);
    buf = malloc(len + 1);
    if (buf == NULL || pread(fd, buf, len, start) != (ssize_t)len) {
        close(fd);
        free(buf);
        return strdup("");
    }
    close(fd);
    buf[len] = '\0';
    /* Walk back over last_n line ends (a final newline ends the last line). */
    i = len;
    if (i > 0 && buf[i - 1] == '\n')
        i--;
    while (i > 0) {
        if (buf[i - 1] == '\n') {
            lines++;
            if (lines >= last_n)
                break;
        }
        i--;
    }
    if (last_n <= 0)
        i = len;
    if (i > 0 || start > 0)
        *truncated = 1;
    /* Never start inside a UTF-8 sequence. */
    while (i < len && ((unsigned char)buf[i] & 0xC0) == 0x80)
        i++;
    memmove(buf, buf + i, len - i + 1);
    return buf;
}

cJSON *engine_exec_view_locked(struct engine *eng, struct execution *ex,
                               int last_n)
{
    cJSON *v = cJSON_CreateObject();

    cJSON_AddStringToObject(v, "devbox_id", ex->box->id);
    cJSON_AddStringToObject(v, "execution_id", ex->id);
    cJSON_AddStringToObject(v, "status", exec_status_name(ex->status));
    if (ex->shell_name != NULL)
        cJSON_AddStringToObject(v, "shell_name", ex->shell_name);
    else
        cJSON_AddNullToObject(v, "shell_name");
    if (ex->status == EXEC_COMPLETED) {
        const char *which[2] = {"stdout", "stderr"};
        int i;

        cJSON_AddNumberToObject(v, "exit_status", ex->exit_status);
        /* Not in Runloop's view: exit_status 137 alone hides the cause. */
        cJSON_AddStringToObject(v, "ended_by", engine_exec_ended_by(ex));
        for (i = 0; i < 2; i++) {
            char path[4200];
            char key[32];
            char *text = NULL;
            int trunc = 0;

            engine_exec_output_path(eng, ex, which[i], path, sizeof(path));
            text = engine_tail(path, last_n, &trunc);
            cJSON_AddStringToObject(v, which[i], text != NULL ? text : "");
            snprintf(key, sizeof(key), "%s_truncated", which[i]);
            cJSON_AddBoolToObject(v, key, trunc);
            free(text);
        }
    } else {
        cJSON_AddNullToObject(v, "exit_status");
    }
    return v;
}
