/* devboxd engine: devbox records, their state machine and persistence.
 * One engine mutex guards every record; slow sandbox work (start, stop,
 * launch commands) runs on worker threads with the lock released, and a
 * devbox's `busy` flag keeps one lifecycle worker per devbox at a time. */
#define _GNU_SOURCE
#include "engine.h"
#include "file_writes.h"
#include "retention.h"
#include "blueprint_buildah.h"
#include "images.h"
#include "code_mounts.h"
#include "mounts.h"
#include "pty_sessions.h"
#include "tunnels.h"
#include "warm_pool.h"
#include "layer_records.h"
#include "sandbox.h"
#include "ssh_keys.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static const char *const status_names[DBX_N_STATUS] = {
    "provisioning", "initializing", "running",  "suspending", "suspended",
    "resuming",     "failure",      "shutdown", "queued",
};

const char *dbx_status_name(int status)
{
    if (status < 0 || status >= DBX_N_STATUS)
        return "failure";
    return status_names[status];
}

int dbx_status_parse(const char *name)
{
    int i;

    for (i = 0; i < DBX_N_STATUS; i++) {
        if (strcmp(status_names[i], name) == 0)
            return i;
    }
    return -1;
}

const char *exec_status_name(int status)
{
    switch (status) {
    case EXEC_QUEUED:
        return "queued";
    case EXEC_RUNNING:
        return "running";
    default:
        return "completed";
    }
}

int exec_status_parse(const char *name)
{
    if (strcmp(name, "queued") == 0)
        return EXEC_QUEUED;
    if (strcmp(name, "running") == 0)
        return EXEC_RUNNING;
    if (strcmp(name, "completed") == 0)
        return EXEC_COMPLETED;
    return -1;
}

static int is_flex(const cJSON *spec)
{
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    const cJSON *tier =
        cJSON_GetObjectItemCaseSensitive(lp, "provisioning_tier");

    return cJSON_IsString(tier) && strcmp(tier->valuestring, "flex") == 0;
}

static int is_active_status(int status)
{
    return status == DBX_INITIALIZING || status == DBX_RUNNING ||
           status == DBX_SUSPENDING || status == DBX_RESUMING;
}

char *engine_box_dir(struct engine *eng, const char *box_id)
{
    char *path = NULL;

    if (asprintf(&path, "%s/devboxes/%s", eng->state_dir, box_id) < 0)
        return NULL;
    return path;
}

char *engine_exec_dir(struct engine *eng, const char *box_id)
{
    char *path = NULL;

    if (asprintf(&path, "%s/devboxes/%s/executions", eng->state_dir, box_id) <
        0)
        return NULL;
    return path;
}

char *engine_sandbox_dir(struct engine *eng, const char *box_id)
{
    char *path = NULL;

    if (asprintf(&path, "%s/devboxes/%s/sandbox", eng->state_dir, box_id) < 0)
        return NULL;
    return path;
}

/* The record beside the devbox's other records; stdout and stderr on the
 * devbox's disk, where they count against its size and go with it. */
void engine_exec_output_path(struct engine *eng, struct execution *ex,
                             const char *which, char *out, size_t outlen)
{
    if (strcmp(which, "json") == 0)
        snprintf(out, outlen, "%s/devboxes/%s/executions/%s.%s", eng->state_dir,
                 ex->box->id, ex->id, which);
    else
        snprintf(out, outlen,
                 "%s/devboxes/%s/sandbox/" SANDBOX_OUTPUT_DIR "/%s.%s",
                 eng->state_dir, ex->box->id, ex->id, which);
}

/* --------------------------------------------------------------- views */

/* Not in Runloop's API either: what a provisioning devbox waits for, when
 * it is its image's build ("the universal image is being prepared (40%:
 * installing packages)"), so a client can tell a wait of minutes from a
 * hang. */
static void add_status_message(cJSON *v, const struct devbox *box)
{
    char msg[200];
    const char *image = NULL;

    if (box->status != DBX_PROVISIONING)
        return;
    image = util_json_str(box->spec, "_image");
    if (images_preparing(image, msg, sizeof(msg)))
        cJSON_AddStringToObject(v, "status_message", msg);
}

cJSON *engine_box_view_locked(struct devbox *box)
{
    cJSON *v = cJSON_CreateObject();
    const cJSON *spec = box->spec;
    const cJSON *it = NULL;

    cJSON_AddStringToObject(v, "id", box->id);
    it = cJSON_GetObjectItemCaseSensitive(spec, "name");
    if (cJSON_IsString(it))
        cJSON_AddStringToObject(v, "name", it->valuestring);
    else
        cJSON_AddNullToObject(v, "name");
    cJSON_AddStringToObject(v, "status", dbx_status_name(box->status));
    cJSON_AddNumberToObject(v, "create_time_ms", (double)box->create_time_ms);
    if (box->end_time_ms > 0)
        cJSON_AddNumberToObject(v, "end_time_ms", (double)box->end_time_ms);
    else
        cJSON_AddNullToObject(v, "end_time_ms");
    it = cJSON_GetObjectItemCaseSensitive(spec, "metadata");
    cJSON_AddItemToObject(v, "metadata",
                          it != NULL ? cJSON_Duplicate(it, 1)
                                     : cJSON_CreateObject());
    it = cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    cJSON_AddItemToObject(v, "launch_parameters",
                          it != NULL ? cJSON_Duplicate(it, 1)
                                     : cJSON_CreateObject());
    cJSON_AddItemToObject(v, "state_transitions",
                          cJSON_Duplicate(box->transitions, 1));
    cJSON_AddItemToObject(v, "capabilities", cJSON_CreateArray());
    it = cJSON_GetObjectItemCaseSensitive(spec, "blueprint_id");
    cJSON_AddItemToObject(v, "blueprint_id",
                          cJSON_IsString(it) ? cJSON_Duplicate(it, 0)
                                             : cJSON_CreateNull());
    it = cJSON_GetObjectItemCaseSensitive(spec, "snapshot_id");
    cJSON_AddItemToObject(v, "snapshot_id",
                          cJSON_IsString(it) ? cJSON_Duplicate(it, 0)
                                             : cJSON_CreateNull());
    if (box->failure_reason != NULL)
        cJSON_AddStringToObject(v, "failure_reason", box->failure_reason);
    else
        cJSON_AddNullToObject(v, "failure_reason");
    if (box->failure_message !=
        NULL) /* not in Runloop's API: the enum alone hides the cause */
        cJSON_AddStringToObject(v, "failure_message", box->failure_message);
    add_status_message(v, box);
    if (box->shutdown_reason != NULL)
        cJSON_AddStringToObject(v, "shutdown_reason", box->shutdown_reason);
    else
        cJSON_AddNullToObject(v, "shutdown_reason");
    /* Not in Runloop's API: when keep_alive_time_seconds (or the last
     * renewal) ends this run, so a lease can be watched and renewed. */
    if (engine_lifetime_end_locked(box) > 0)
        cJSON_AddNumberToObject(v, "lifetime_end_ms",
                                (double)engine_lifetime_end_locked(box));
    else
        cJSON_AddNullToObject(v, "lifetime_end_ms");
    cJSON_AddNullToObject(v, "initiator_id");
    cJSON_AddStringToObject(v, "initiator_type", "api");
    if (box->tunnel != NULL)
        cJSON_AddItemToObject(v, "tunnel", tunnel_view_out(box->tunnel));
    else
        cJSON_AddNullToObject(v, "tunnel");
    return v;
}

/* --------------------------------------------------------- persistence */

int engine_save_locked(struct engine *eng, struct devbox *box)
{
    cJSON *rec = cJSON_CreateObject();
    char *dir = NULL;
    char *path = NULL;
    char *text = NULL;
    int rc = -1;

    cJSON_AddStringToObject(rec, "id", box->id);
    cJSON_AddItemToObject(rec, "spec", cJSON_Duplicate(box->spec, 1));
    cJSON_AddStringToObject(rec, "status", dbx_status_name(box->status));
    if (box->failure_reason != NULL)
        cJSON_AddStringToObject(rec, "failure_reason", box->failure_reason);
    if (box->failure_message != NULL)
        cJSON_AddStringToObject(rec, "failure_message", box->failure_message);
    if (box->shutdown_reason != NULL)
        cJSON_AddStringToObject(rec, "shutdown_reason", box->shutdown_reason);
    if (box->disk_kept)
        cJSON_AddTrueToObject(rec, "_disk_kept");
    cJSON_AddNumberToObject(rec, "create_time_ms", (double)box->create_time_ms);
    cJSON_AddNumberToObject(rec, "end_time_ms", (double)box->end_time_ms);
    cJSON_AddNumberToObject(rec, "active_ms", (double)box->active_ms);
    cJSON_AddNumberToObject(rec, "ttl_deadline_ms",
                            (double)box->ttl_deadline_ms);
    cJSON_AddItemToObject(rec, "state_transitions",
                          cJSON_Duplicate(box->transitions, 1));
    if (box->tunnel != NULL)
        cJSON_AddItemToObject(rec, "tunnel", cJSON_Duplicate(box->tunnel, 1));
    text = cJSON_Print(rec);
    dir = engine_box_dir(eng, box->id);
    if (text == NULL || dir == NULL || util_mkdirs(dir) != 0)
        goto out;
    if (asprintf(&path, "%s/devbox.json", dir) < 0) {
        path = NULL;
        goto out;
    }
    rc = util_write_atomic(path, text, strlen(text), 0600);
out:
    if (rc != 0)
        fprintf(stderr, "devboxd: cannot save devbox %s under %s: %s\n",
                box->id, eng->state_dir, strerror(errno));
    cJSON_Delete(rec);
    free(text);
    free(dir);
    free(path);
    return rc;
}

void engine_log_locked(struct engine *eng, struct devbox *box,
                       const char *source, const char *level,
                       const char *message, struct execution *ex, int exit_code)
{
    cJSON *e = cJSON_CreateObject();
    char *line = NULL;
    char path[4200];
    int fd;

    cJSON_AddStringToObject(e, "level", level);
    cJSON_AddStringToObject(e, "source", source);
    cJSON_AddNumberToObject(e, "timestamp_ms", (double)util_now_ms());
    if (message != NULL)
        cJSON_AddStringToObject(e, "message", message);
    if (ex != NULL) {
        cJSON_AddStringToObject(e, "cmd", ex->command);
        cJSON_AddStringToObject(e, "cmd_id", ex->id);
        if (ex->shell_name != NULL)
            cJSON_AddStringToObject(e, "shell_name", ex->shell_name);
        if (exit_code != INT32_MIN)
            cJSON_AddNumberToObject(e, "exit_code", exit_code);
    }
    line = cJSON_PrintUnformatted(e);
    cJSON_Delete(e);
    if (line == NULL)
        return;
    snprintf(path, sizeof(path), "%s/devboxes/%s/logs.jsonl", eng->state_dir,
             box->id);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        size_t len = strlen(line);

        line[len] = '\n';
        if (write(fd, line, len + 1) < 0) {
            /* logs are best effort */
        }
        close(fd);
    }
    free(line);
}

/* ------------------------------------------------------ state machine */

/* Overwrites every string under j before it is freed: secret values must
 * not linger in freed heap either. */
static void scrub_strings(cJSON *j)
{
    cJSON *it = NULL;

    if (cJSON_IsString(j) && j->valuestring != NULL)
        explicit_bzero(j->valuestring, strlen(j->valuestring));
    cJSON_ArrayForEach(it, j)
    {
        scrub_strings(it);
    }
}

/* Secret values ("_secret_env") and MCP Hub tokens and credentials
 * ("_mcp") are needed only to start the devbox's processes and serve its
 * hub: kept while the devbox runs or is suspended (a resume starts them
 * again), gone from the record once it ended. 1 when something went. */
static int forget_secrets(struct devbox *box)
{
    static const char *const keys[] = {"_secret_env", "_mcp"};
    int removed = 0;
    size_t i;

    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        cJSON *it = cJSON_DetachItemFromObjectCaseSensitive(box->spec, keys[i]);

        if (it == NULL)
            continue;
        scrub_strings(it);
        cJSON_Delete(it);
        removed = 1;
    }
    return removed;
}

static int is_ended_status(int status)
{
    return status == DBX_SHUTDOWN || status == DBX_FAILURE;
}

void engine_forget_ended_secrets(struct engine *eng)
{
    struct devbox *box;

    pthread_mutex_lock(&eng->lock);
    for (box = eng->boxes; box != NULL; box = box->next) {
        if (is_ended_status(box->status) && forget_secrets(box))
            engine_save_locked(eng, box);
    }
    pthread_mutex_unlock(&eng->lock);
}

int engine_set_status_locked(struct engine *eng, struct devbox *box, int status,
                             const char *failure_reason,
                             const char *shutdown_reason)
{
    /* A boot's inner steps (queued -> provisioning, provisioning ->
     * initializing) need no write of their own: a restart boots a devbox
     * found in any of these states again, and the next saved status
     * carries their transitions.  Two fsyncs fewer per create. */
    int first = cJSON_GetArraySize(box->transitions) == 0;
    int durable =
        first || !(status == DBX_INITIALIZING ||
                   (status == DBX_PROVISIONING && box->status == DBX_QUEUED));
    int rc = 0;
    int64_t now = util_now_ms();
    cJSON *t = cJSON_CreateObject();
    char msg[160];

    if (is_active_status(box->status) && box->active_since_ms > 0) {
        box->active_ms += now - box->active_since_ms;
        box->active_since_ms = 0;
    }
    if (is_active_status(status))
        box->active_since_ms = now;
    box->status = status;
    if (failure_reason != NULL) {
        free(box->failure_reason);
        box->failure_reason = strdup(failure_reason);
    }
    if (shutdown_reason != NULL) {
        free(box->shutdown_reason);
        box->shutdown_reason = strdup(shutdown_reason);
    }
    if (status == DBX_FAILURE || status == DBX_SHUTDOWN) {
        box->end_time_ms = now;
        /* A tunnel lives until the devbox ends (it survives suspend). */
        cJSON_Delete(box->tunnel);
        box->tunnel = NULL;
        forget_secrets(box);
        ssh_keys_forget_locked(box->id);
    }
    if (status == DBX_RUNNING)
        box->last_activity_ms = now;
    cJSON_AddStringToObject(t, "status", dbx_status_name(status));
    cJSON_AddNumberToObject(t, "transition_time_ms", (double)now);
    if (status == DBX_FAILURE && failure_reason != NULL)
        cJSON_AddStringToObject(t, "failure_reason", failure_reason);
    cJSON_AddItemToArray(box->transitions, t);
    snprintf(msg, sizeof(msg), "devbox is %s%s%s", dbx_status_name(status),
             failure_reason ? ": " : "", failure_reason ? failure_reason : "");
    engine_log_locked(eng, box, "entrypoint",
                      status == DBX_FAILURE ? "error" : "info", msg, NULL, 0);
    if (durable)
        rc = engine_save_locked(eng, box);
    pthread_cond_broadcast(&eng->changed);
    return rc;
}

int engine_wait_locked(struct engine *eng, int64_t deadline_ms)
{
    struct timespec ts;
    int64_t now = util_now_ms();

    if (now >= deadline_ms)
        return -1;
    ts.tv_sec = (time_t)(deadline_ms / 1000);
    ts.tv_nsec = (long)(deadline_ms % 1000) * 1000000;
    pthread_cond_timedwait(&eng->changed, &eng->lock, &ts);
    return util_now_ms() >= deadline_ms ? -1 : 0;
}

void engine_touch_locked(struct devbox *box)
{
    box->last_activity_ms = util_now_ms();
}

/* The lifetime runs while a devbox boots or runs; a suspended one gets a
 * fresh lifetime when it resumes. */
static int counts_lifetime(const struct devbox *box)
{
    return box->status == DBX_QUEUED || box->status == DBX_PROVISIONING ||
           box->status == DBX_INITIALIZING || box->status == DBX_RUNNING ||
           box->status == DBX_RESUMING;
}

int64_t engine_lifetime_end_locked(const struct devbox *box)
{
    return counts_lifetime(box) ? box->ttl_deadline_ms : 0;
}

int engine_renew_locked(struct engine *eng, struct devbox *box, int64_t seconds,
                        char *err, size_t errlen)
{
    int64_t old = box->ttl_deadline_ms;

    if (!counts_lifetime(box)) {
        snprintf(err, errlen,
                 "devbox %s is %s; only a running (or starting) devbox can be "
                 "renewed%s",
                 box->id, dbx_status_name(box->status),
                 box->status == DBX_SUSPENDED
                     ? " (a resume starts a fresh lifetime)"
                     : "");
        return 400;
    }
    box->ttl_deadline_ms = util_now_ms() + seconds * 1000;
    if (engine_save_locked(eng, box) != 0) {
        /* Not saved, so not renewed: a restart would bring back the old. */
        box->ttl_deadline_ms = old;
        err[0] = '\0';
        return 507;
    }
    pthread_cond_broadcast(&eng->changed);
    return 0;
}

struct devbox *engine_find_locked(struct engine *eng, const char *id)
{
    struct devbox *b;

    for (b = eng->boxes; b != NULL; b = b->next) {
        if (strcmp(b->id, id) == 0)
            return b;
    }
    return NULL;
}

void engine_box_unref_locked(struct engine *eng, struct devbox *box)
{
    (void)eng;
    if (box->refs > 0)
        box->refs--;
}

void engine_box_free(struct devbox *box)
{
    struct execution *ex;
    struct execution *nex;

    for (ex = box->execs; ex != NULL; ex = nex) {
        nex = ex->next;
        engine_exec_free(ex);
    }
    cJSON_Delete(box->spec);
    cJSON_Delete(box->transitions);
    cJSON_Delete(box->tunnel);
    free(box->failure_reason);
    free(box->failure_message);
    free(box->shutdown_reason);
    free(box);
}

/* ------------------------------------------------------ sandbox glue */

struct size_row {
    const char *name;
    uint32_t cpu_millis;
    uint64_t mem_gib;
    uint64_t disk_gib;
};

static const struct size_row sizes[] = {
    {"X_SMALL", 500, 1, 4},    {"SMALL", 1000, 2, 4},
    {"MEDIUM", 2000, 4, 8},    {"LARGE", 2000, 8, 16},
    {"X_LARGE", 4000, 16, 16}, {"XX_LARGE", 8000, 32, 16},
};

void engine_spec_limits(const cJSON *spec, struct sb_limits *lim, double *cpus,
                        double *mem_gb, double *disk_gb)
{
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    const cJSON *size =
        cJSON_GetObjectItemCaseSensitive(lp, "resource_size_request");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(lp, "custom_cpu_cores");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(lp, "custom_gb_memory");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(lp, "custom_disk_size");
    size_t i;

    memset(lim, 0, sizeof(*lim));
    *cpus = 1;
    *mem_gb = 2;
    *disk_gb = 4;
    if (cJSON_IsString(size)) {
        for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            if (strcmp(sizes[i].name, size->valuestring) == 0) {
                *cpus = sizes[i].cpu_millis / 1000.0;
                *mem_gb = (double)sizes[i].mem_gib;
                *disk_gb = (double)sizes[i].disk_gib;
            }
        }
    }
    if (cJSON_IsNumber(c))
        *cpus = c->valuedouble;
    if (cJSON_IsNumber(m))
        *mem_gb = m->valuedouble;
    if (cJSON_IsNumber(d))
        *disk_gb = d->valuedouble;
    else if (cJSON_IsString(size) &&
             strcmp(size->valuestring, "CUSTOM_SIZE") == 0)
        *disk_gb = 16;
    lim->cpu_millis = (uint32_t)(*cpus * 1000);
    lim->memory_bytes = (uint64_t)(*mem_gb * 1024 * 1024 * 1024);
    lim->disk_bytes = (uint64_t)(*disk_gb * 1024 * 1024 * 1024);
    lim->pids_max = 0;
}

static char **box_env(const cJSON *spec)
{
    const cJSON *envs =
        cJSON_GetObjectItemCaseSensitive(spec, "environment_variables");
    /* Secret values and MCP Hub tokens resolved at create (secrets.h). */
    const cJSON *priv = cJSON_GetObjectItemCaseSensitive(spec, "_secret_env");
    const cJSON *it = NULL;
    char **env = NULL;
    size_t n = 0;

    env = calloc((size_t)cJSON_GetArraySize(envs) +
                     (size_t)cJSON_GetArraySize(priv) + 1,
                 sizeof(char *));
    if (env == NULL)
        return NULL;
    cJSON_ArrayForEach(it, envs)
    {
        if (asprintf(&env[n], "%s=%s", it->string, it->valuestring) >= 0)
            n++;
    }
    cJSON_ArrayForEach(it, priv)
    {
        if (cJSON_IsString(it) &&
            asprintf(&env[n], "%s=%s", it->string, it->valuestring) >= 0)
            n++;
    }
    return env;
}

static void env_free(char **env)
{
    size_t i;

    for (i = 0; env != NULL && env[i] != NULL; i++) {
        explicit_bzero(env[i], strlen(env[i])); /* may hold secret values */
        free(env[i]);
    }
    free(env);
}

int engine_spec_network(const cJSON *spec)
{
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    const cJSON *np = cJSON_GetObjectItemCaseSensitive(lp, "network_policy_id");

    if (cJSON_IsString(np) &&
        strcmp(np->valuestring, "npol_local_deny_all") == 0)
        return SB_NET_NONE;
    return SB_NET_OUTBOUND;
}

int engine_run_boot_command(struct engine *eng, struct devbox *box,
                            const char *cmd, const char *kind, char *err,
                            size_t errlen)
{
    struct execution *ex = NULL;
    int status;

    pthread_mutex_lock(&eng->lock);
    ex = engine_exec_start(eng, box, cmd, NULL, NULL, 0, kind, err, errlen);
    if (ex == NULL) {
        pthread_mutex_unlock(&eng->lock);
        return -1;
    }
    while (ex->status != EXEC_COMPLETED)
        pthread_cond_wait(&eng->changed, &eng->lock);
    status = ex->exit_status;
    engine_exec_unref_locked(ex);
    pthread_mutex_unlock(&eng->lock);
    return status;
}

/* A devbox that ended (shutdown or failure) keeps its records and logs;
 * its sandbox dir, disk and command output go. */
static void destroy_box_files(struct engine *eng, struct devbox *box)
{
    char err[256] = "";
    char msg[400];
    char *dir = engine_sandbox_dir(eng, box->id);

    if (dir != NULL && sandbox_destroy_dir(dir, err, sizeof(err)) != 0) {
        snprintf(msg, sizeof(msg), "cannot delete the devbox's files: %s", err);
        pthread_mutex_lock(&eng->lock);
        engine_log_locked(eng, box, "entrypoint", "warn", msg, NULL, 0);
        pthread_mutex_unlock(&eng->lock);
    }
    free(dir);
}

struct boot_job {
    struct engine *eng;
    struct devbox *box;
    int first_boot;
};

/* Whether a devbox that fails now keeps its disk: when the disk is
 * read-only (a storage error), or when it held files before this boot (a
 * resume or devboxd's restart): acknowledged files are never deleted by a
 * failure.  A kept disk stays mounted (read-only when it has to be). */
static int keep_disk(struct engine *eng, struct devbox *box, int first_boot)
{
    char err[512] = "";
    char *dir = engine_sandbox_dir(eng, box->id);
    uint64_t size, alloc;
    int keep = 0;

    if (dir == NULL || sandbox_disk_usage(dir, &size, &alloc) != 0)
        goto out;
    keep = !first_boot || sandbox_disk_state(dir) == -EROFS;
    if (keep && sandbox_disk_mount_ro(dir, err, sizeof(err)) != 0)
        fprintf(stderr, "devboxd: devbox %s: %s\n", box->id, err);
out:
    free(dir);
    return keep;
}

/* eng->lock held: a copy of the layer chain of a devbox that is ending,
 * for release_layers once the lock is dropped; NULL without layers. */
static cJSON *chain_of_locked(const struct devbox *box)
{
    const cJSON *chain = cJSON_GetObjectItemCaseSensitive(box->spec, "_layers");

    return cJSON_GetArraySize(chain) > 0 ? cJSON_Duplicate(chain, 1) : NULL;
}

/* eng->lock not held, once the devbox is shut down or failed (no longer
 * a holder): the layers of its chain that only it kept (their snapshot or
 * blueprint was deleted while it ran) go now.  Deletes chain. */
static void release_layers(struct engine *eng, cJSON *chain)
{
    cJSON *freed = NULL;

    if (chain == NULL)
        return;
    layer_records_lock(eng);
    freed = layers_release_locked(chain, NULL);
    layer_records_unlock();
    layers_free(freed);
    cJSON_Delete(chain);
}

static void boot_fail(struct engine *eng, struct devbox *box,
                      const char *reason, const char *msg, int first_boot)
{
    struct sandbox *sb = NULL;
    char *full = NULL;
    cJSON *chain = NULL;
    int kept;

    pthread_mutex_lock(&eng->lock);
    engine_log_locked(eng, box, "setup_commands", "error", msg, NULL, 0);
    sb = box->sb;
    pthread_mutex_unlock(&eng->lock);
    if (sb != NULL)
        sandbox_stop(sb);
    pty_engine_forget(box->id);
    if (eng->on_sandbox_stop != NULL)
        eng->on_sandbox_stop(box->id);
    kept = keep_disk(eng, box, first_boot);
    if (!kept)
        destroy_box_files(eng, box);
    else if (asprintf(&full,
                      "%s; its disk is kept: download its files "
                      "(download_file, read_file_contents), then shut it "
                      "down to delete the disk",
                      msg) < 0)
        full = NULL;
    pthread_mutex_lock(&eng->lock);
    box->disk_kept = kept;
    free(box->failure_message);
    box->failure_message = strdup(full != NULL ? full : msg);
    free(full);
    engine_set_status_locked(eng, box, DBX_FAILURE, reason, NULL);
    box->busy = 0;
    chain = chain_of_locked(box);
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
    release_layers(eng, chain);
}

/* The boot worker's way out when a shutdown or devboxd's stop cancelled
 * the boot: it gives the devbox back (not busy, status unchanged) and the
 * canceller stops the sandbox as for a running devbox (the shutdown worker,
 * or engine_fini). Returns whether it was cancelled. */
static int boot_cancelled(struct engine *eng, struct devbox *box)
{
    int why;

    pthread_mutex_lock(&eng->lock);
    why = box->cancel_boot;
    if (why != 0) {
        engine_log_locked(eng, box, "setup_commands", "info",
                          why == BOOT_CANCEL_SHUTDOWN
                              ? "boot cancelled by a shutdown"
                              : "boot cancelled: devboxd is stopping",
                          NULL, 0);
        box->cancel_boot = 0;
        box->busy = 0;
        pthread_cond_broadcast(&eng->changed);
    }
    pthread_mutex_unlock(&eng->lock);
    return why != 0;
}

/* A code mount's token is needed only until its clone is in the devbox's
 * disk (a resume keeps the clone): the record stops holding it then. */
static void drop_code_tokens(struct engine *eng, struct devbox *box)
{
    const cJSON *cm = NULL;

    pthread_mutex_lock(&eng->lock);
    cm = cJSON_GetObjectItemCaseSensitive(box->spec, "code_mounts");
    if (cJSON_GetArraySize(cm) > 0) {
        code_mounts_redact(box->spec);
        engine_save_locked(eng, box);
    }
    pthread_mutex_unlock(&eng->lock);
}

/* Lock held (released meanwhile). Tells a boot worker to stop and kills
 * its running launch command, so a command that blocks (sleep 600) cannot
 * hold a shutdown or devboxd's stop. */
static void cancel_boot_locked(struct engine *eng, struct devbox *box, int why)
{
    struct execution *run[8];
    struct execution *ex;
    size_t n = 0;
    size_t i;

    if (!box->busy ||
        (box->status != DBX_PROVISIONING && box->status != DBX_INITIALIZING &&
         box->status != DBX_RESUMING && box->status != DBX_QUEUED))
        return;
    box->cancel_boot = why;
    for (ex = box->execs; ex != NULL && n < 8; ex = ex->next) {
        if (ex->status != EXEC_COMPLETED && strcmp(ex->kind, "launch") == 0) {
            ex->refs++;
            run[n++] = ex;
        }
    }
    pthread_mutex_unlock(&eng->lock);
    for (i = 0; i < n; i++)
        engine_exec_kill(eng, run[i]);
    pthread_mutex_lock(&eng->lock);
    for (i = 0; i < n; i++)
        engine_exec_unref_locked(run[i]);
}

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

/* Lock held: launch_parameters.user_parameters (checked at create), or
 * NULL for the default "user". */
static void box_user(const cJSON *spec, char **name, uint32_t *uid)
{
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    const cJSON *up = cJSON_GetObjectItemCaseSensitive(lp, "user_parameters");
    const char *n = util_json_str(up, "username");
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(up, "uid");

    *name = NULL;
    *uid = 0;
    if (n == NULL || !cJSON_IsNumber(u))
        return;
    *name = strdup(n);
    *uid = (uint32_t)u->valuedouble;
}

/* The image's root, waited for while it builds (the view says how far it
 * got, see engine_box_view_locked); a shutdown of box ends the wait. */
static int wait_image(struct engine *eng, struct devbox *box, const char *name,
                      char **path, char *err, size_t errlen)
{
    int cancelled = 0;
    int rc;

    for (;;) {
        rc = images_wait(name, 1000, path, err, errlen);
        if (rc != 1 || box == NULL)
            break;
        pthread_mutex_lock(&eng->lock);
        cancelled = box->cancel_boot != 0;
        pthread_mutex_unlock(&eng->lock);
        if (cancelled) {
            snprintf(err, errlen,
                     "boot cancelled while its image was "
                     "being prepared");
            rc = -1;
            break;
        }
    }
    return rc;
}

int engine_sandbox_start(struct engine *eng, const char *id,
                         const cJSON *box_spec, struct devbox *log_box,
                         struct sandbox **out, char *err, size_t errlen)
{
    struct sb_spec spec;
    struct sandbox *sb = NULL;
    char **env = NULL;
    char *dir = NULL;
    const char *image_name = NULL;
    char *image = NULL;
    char *user_name = NULL;
    cJSON *chain = NULL;
    char **layers = NULL;
    uid_t *owners = NULL;
    size_t n_layers = 0;
    double cpus, mem, disk;
    int rc = -1;

    *out = NULL;
    memset(&spec, 0, sizeof(spec));
    env = box_env(box_spec);
    engine_spec_limits(box_spec, &spec.limits, &cpus, &mem, &disk);
    spec.net = (enum sb_network)engine_spec_network(box_spec);
    image_name = util_json_str(box_spec, "_image");
    box_user(box_spec, &user_name, &spec.user_uid);
    chain = cJSON_CreateObject();
    cJSON_AddItemToObject(
        chain, "_layers",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(box_spec, "_layers"),
                        1));
    dir = engine_sandbox_dir(eng, id);
    if (env == NULL || chain == NULL || dir == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* The image first: built on first need (the devbox stays provisioning). */
    if (wait_image(eng, log_box, image_name, &image, err, errlen) != 0)
        goto out;
    spec.image = image;
    /* The devbox's disk before anything is written into its dir. */
    if (sandbox_disk_attach(dir, spec.limits.disk_bytes, err, errlen) != 0)
        goto out;
    /* Snapshot/blueprint layers: mounted shared under runc. */
    if (layers_prepare_box(chain, dir, id, image != NULL, &layers, &owners,
                           &n_layers, err, errlen) != 0)
        goto out;
    spec.lower_layers = (const char *const *)layers;
    spec.layer_owners = owners;
    spec.n_layers = n_layers;
    spec.id = id;
    spec.dir = dir;
    spec.env = (const char *const *)env;
    spec.user_name = user_name;
    /* One start at a time, as ever: the serialisation came with the
     * retired bubblewrap runtime (whose loopback set-up raced, and whose
     * failures were retried); overlapping runc starts have not been
     * measured apart from it. */
    pthread_mutex_lock(&start_lock);
    rc = sandbox_start(&spec, &sb, err, errlen);
    pthread_mutex_unlock(&start_lock);
    if (rc == 0)
        *out = sb;
out:
    env_free(env);
    free(dir);
    free(image);
    free(user_name);
    layers_free_paths(layers, n_layers);
    free(owners);
    cJSON_Delete(chain);
    return rc;
}

/* The devbox's sandbox: the warm one it was given at create, else a new
 * one; then the services that follow a sandbox start. */
static int boot_start_sandbox(struct engine *eng, struct devbox *box, char *err,
                              size_t errlen)
{
    struct sandbox *sb = NULL;
    cJSON *spec = NULL;
    int pooled;
    int rc = -1;

    pthread_mutex_lock(&eng->lock);
    spec = cJSON_Duplicate(box->spec, 1);
    pooled = box->pooled;
    box->pooled = 0;
    pthread_mutex_unlock(&eng->lock);
    if (spec == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (pooled)
        sb = warm_pool_adopt(eng, box->id);
    rc = sb != NULL
             ? 0
             : engine_sandbox_start(eng, box->id, spec, box, &sb, err, errlen);
    cJSON_Delete(spec);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&eng->lock);
    box->sb = sb;
    pthread_mutex_unlock(&eng->lock);
    rc = file_writes_clean(eng, box, sb);
    if (rc > 0)
        fprintf(stderr,
                "devboxd: devbox %s: removed %d temporary files of writes a "
                "devboxd that did not stop cleanly left\n",
                box->id, rc);
    rc = 0;
    pty_engine_boot(eng, box, sb);     /* PTY server on port 13 inside */
    if (eng->on_sandbox_start != NULL) /* the MCP hub: $RL_MCP_URL */
        eng->on_sandbox_start(eng, box, sb);
    return 0;
}

static void *boot_thread(void *arg)
{
    struct boot_job *job = arg;
    struct engine *eng = job->eng;
    struct devbox *box = job->box;
    const cJSON *lp = NULL;
    const cJSON *cmds = NULL;
    const cJSON *it = NULL;
    const cJSON *ep = NULL;
    char err[512] = "";
    char msg[1024];
    int first_boot = job->first_boot;

    free(job);
    pthread_mutex_lock(&eng->lock);
    if (box->status == DBX_QUEUED)
        engine_set_status_locked(eng, box, DBX_PROVISIONING, NULL, NULL);
    pthread_mutex_unlock(&eng->lock);
    if (boot_start_sandbox(eng, box, err, sizeof(err)) != 0) {
        /* A shutdown while the image was still building: not a failure. */
        if (boot_cancelled(eng, box))
            return NULL;
        snprintf(msg, sizeof(msg), "sandbox failed to start: %s", err);
        boot_fail(eng, box, "health_check_failed", msg, first_boot);
        return NULL;
    }
    pthread_mutex_lock(&eng->lock);
    engine_set_status_locked(eng, box, DBX_INITIALIZING, NULL, NULL);
    lp = cJSON_GetObjectItemCaseSensitive(box->spec, "launch_parameters");
    cmds = cJSON_GetObjectItemCaseSensitive(lp, "launch_commands");
    ep = cJSON_GetObjectItemCaseSensitive(box->spec, "entrypoint");
    pthread_mutex_unlock(&eng->lock);
    if (mounts_write(eng, box, err, sizeof(err)) != 0) {
        /* A cancelled code mount clone fails mounts_write: not a failure. */
        if (boot_cancelled(eng, box))
            return NULL;
        drop_code_tokens(eng, box);
        boot_fail(eng, box, "execution_failed", err, first_boot);
        return NULL;
    }
    drop_code_tokens(eng, box);
    cJSON_ArrayForEach(it, cmds)
    {
        int st;

        if (boot_cancelled(eng, box))
            return NULL;
        st = engine_run_boot_command(eng, box, it->valuestring, "launch", err,
                                     sizeof(err));
        if (boot_cancelled(eng, box))
            return NULL;
        if (st != 0) {
            snprintf(msg, sizeof(msg),
                     "launch command '%.200s' failed (exit status %d)%s%s",
                     it->valuestring, st, err[0] ? ": " : "", err);
            boot_fail(eng, box, "execution_failed", msg, first_boot);
            return NULL;
        }
    }
    if (boot_cancelled(eng, box))
        return NULL;
    pthread_mutex_lock(&eng->lock);
    engine_set_status_locked(eng, box, DBX_RUNNING, NULL, NULL);
    if (cJSON_IsString(ep)) {
        box->entrypoint =
            engine_exec_start(eng, box, ep->valuestring, NULL, NULL, 0,
                              "entrypoint", err, sizeof(err));
        if (box->entrypoint != NULL)
            box->entrypoint->refs++;
    }
    box->busy = 0;
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
    return NULL;
}

/* Lock held. Starts the boot worker; the devbox must not be busy. */
static int start_boot_locked(struct engine *eng, struct devbox *box,
                             int first_boot)
{
    struct boot_job *job = calloc(1, sizeof(*job));

    if (job == NULL)
        return -1;
    job->eng = eng;
    job->box = box;
    job->first_boot = first_boot;
    box->busy = 1;
    /* The image's build starts now, so the first view of the devbox can
     * already say how far it is. */
    images_prepare(util_json_str(box->spec, "_image"));
    if (util_thread_detached(boot_thread, job, 256 * 1024) != 0) {
        box->busy = 0;
        free(job);
        engine_set_status_locked(eng, box, DBX_FAILURE, "health_check_failed",
                                 NULL);
        return -1;
    }
    return 0;
}

/* Lock held.  The bytes the disks in the state dir may still take from
 * the state filesystem: each sparse image's holes, and the whole size of
 * a disk not made yet (a devbox being created).  A devbox that ended
 * holds none; a failed one's kept disk is read-only.  Warm sandboxes'
 * disks count too (they live under devboxes/ with no record). */
static unsigned long long disk_promised_locked(struct engine *eng)
{
    unsigned long long sum = 0;
    struct devbox *box;
    struct dirent *de;
    struct sb_limits lim;
    double cpus, mem, disk;
    uint64_t size, alloc;
    char *root = NULL;
    char *dir = NULL;
    DIR *d = NULL;
    int rc;

    if (asprintf(&root, "%s/devboxes", eng->state_dir) < 0)
        return 0;
    d = opendir(root);
    while (d != NULL && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        box = engine_find_locked(eng, de->d_name);
        if (box != NULL &&
            (box->status == DBX_SHUTDOWN || box->status == DBX_FAILURE))
            continue;
        dir = engine_sandbox_dir(eng, de->d_name);
        rc = sandbox_disk_usage(dir, &size, &alloc);
        free(dir);
        dir = NULL;
        if (rc == -ENOTSUP)
            break;
        if (rc == 0 && size > alloc) {
            sum += size - alloc;
        } else if (rc == -ENOENT && box != NULL) {
            engine_spec_limits(box->spec, &lim, &cpus, &mem, &disk);
            sum += lim.disk_bytes;
        }
    }
    if (d != NULL)
        closedir(d);
    free(root);
    return sum;
}

int engine_state_room_locked(struct engine *eng, unsigned long long need,
                             const char *what, char *err, size_t errlen)
{
    return admission_disk_check(&eng->caps, eng->state_dir,
                                disk_promised_locked(eng), need, what, err,
                                errlen);
}

/* Free bytes on the filesystem holding path, or -1. */
static long long fs_avail(const char *path)
{
    struct statvfs vfs;

    if (statvfs(path, &vfs) != 0)
        return -1;
    return (long long)vfs.f_bavail * (long long)vfs.f_frsize;
}

int engine_disk_trouble(struct engine *eng, const struct devbox *box, int rc,
                        unsigned long long len, char *err, size_t errlen)
{
    char *dir = engine_sandbox_dir(eng, box->id);
    long long state_free = fs_avail(eng->state_dir);
    long long box_free = -1;
    int status = 0;

    if (dir == NULL)
        return 0;
    box_free = fs_avail(dir);
    if (sandbox_disk_state(dir) == -EROFS || rc == -EROFS) {
        snprintf(err, errlen,
                 "devbox %s: its disk is read-only: the kernel stopped "
                 "writing to it after a storage error%s%s%s. Nothing can be "
                 "written in it and no command can run; its files can still "
                 "be read (read_file_contents, download_file). Download what "
                 "you need, then shut it down and create a new devbox",
                 box->id,
                 state_free >= 0 && state_free < (64LL << 20)
                     ? " (the engine's state filesystem "
                     : "",
                 state_free >= 0 && state_free < (64LL << 20) ? eng->state_dir
                                                              : "",
                 state_free >= 0 && state_free < (64LL << 20)
                     ? " is full: free space there)"
                     : "");
        status = 423;
    } else if (rc == -ENOSPC || rc == -EDQUOT || rc == -EIO) {
        /* The devbox's disk had room for it (the failed write's bytes are
         * freed again): the host under it had none. */
        if (box_free >= 0 &&
            (unsigned long long)box_free >= len + (1ULL << 20)) {
            snprintf(err, errlen,
                     ADMISSION_DISK_FULL
                     ": devboxd's state filesystem (%s) "
                     "has %lld MiB free, so devbox %s's disk (%lld MiB free "
                     "inside) could not grow. Free space there: shut down "
                     "or delete devboxes you no longer need, delete "
                     "snapshots and storage objects",
                     eng->state_dir, state_free >= 0 ? state_free >> 20 : 0,
                     box->id, box_free >> 20);
            status = 507;
        } else if (rc != -EIO) {
            snprintf(err, errlen,
                     "the devbox's disk is full (%lld MiB free inside "
                     "devbox %s); free space inside the devbox (delete "
                     "files with a command) or create one with a larger "
                     "custom_disk_size",
                     box_free >= 0 ? box_free >> 20 : 0, box->id);
            status = 507;
        }
    }
    free(dir);
    return status;
}

/* Lock held.  Whether the caps admit box beside the devboxes that hold (or
 * are about to hold) a sandbox, and, for a devbox whose disk is still to
 * be made (new_disk), whether the state filesystem has room for it. A
 * resumed or restarted devbox's disk exists and is already counted among
 * what the disks may claim: it needs no room of its own. */
static int admit_locked(struct engine *eng, const struct devbox *box,
                        bool new_disk, char *err, size_t errlen)
{
    const struct devbox *b;
    struct sb_limits lim;
    double cpus, mem, disk;
    double used_cpus = 0;
    double used_mem = 0;
    uint64_t size, alloc;
    unsigned n = 0;

    for (b = eng->boxes; b != NULL; b = b->next) {
        if (b->status != DBX_PROVISIONING && b->status != DBX_QUEUED &&
            !is_active_status(b->status))
            continue;
        engine_spec_limits(b->spec, &lim, &cpus, &mem, &disk);
        used_cpus += cpus;
        used_mem += mem;
        n++;
    }
    engine_spec_limits(box->spec, &lim, &cpus, &mem, &disk);
    if (admission_check(&eng->caps, n, used_mem, used_cpus, mem, cpus, err,
                        errlen) != 0)
        return -1;
    if (!new_disk)
        return 0;
    /* Its disk, counted whole: sparse images must never promise more than
     * the state filesystem holds (a full one aborts their journals). */
    if (sandbox_disk_usage(eng->state_dir, &size, &alloc) == -ENOTSUP)
        return 0; /* RLMCP_DEVBOX_DISK=off: no disks */
    return engine_state_room_locked(eng, lim.disk_bytes, "this devbox's disk",
                                    err, errlen);
}

static void box_discard(struct devbox *box)
{
    cJSON_Delete(box->spec);
    cJSON_Delete(box->tunnel);
    cJSON_Delete(box->transitions);
    free(box);
}

/* launch_parameters.keep_alive_time_seconds (default 3600) in ms. */
static int64_t lifetime_ms(const cJSON *spec)
{
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    const cJSON *ka =
        cJSON_GetObjectItemCaseSensitive(lp, "keep_alive_time_seconds");

    return (cJSON_IsNumber(ka) ? (int64_t)ka->valuedouble : 3600) * 1000;
}

struct devbox *engine_create(struct engine *eng, cJSON *spec, cJSON **view,
                             char *err, size_t errlen)
{
    struct devbox *box = calloc(1, sizeof(*box));
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    const cJSON *life = cJSON_GetObjectItemCaseSensitive(lp, "lifecycle");
    const cJSON *idle = cJSON_GetObjectItemCaseSensitive(life, "after_idle");
    char *dir = NULL;
    int keep = 0;

    if (errlen > 0)
        err[0] = '\0';
    if (box == NULL) {
        cJSON_Delete(spec);
        return NULL;
    }
    if (idle == NULL)
        idle = cJSON_GetObjectItemCaseSensitive(lp, "after_idle");
    util_new_id("dbx", box->id, sizeof(box->id));
    box->spec = spec;
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(spec, "tunnel")))
        box->tunnel =
            tunnel_new_view(cJSON_GetObjectItemCaseSensitive(spec, "tunnel"));
    box->transitions = cJSON_CreateArray();
    box->create_time_ms = util_now_ms();
    if (idle != NULL) {
        const cJSON *secs =
            cJSON_GetObjectItemCaseSensitive(idle, "idle_time_seconds");
        const cJSON *on = cJSON_GetObjectItemCaseSensitive(idle, "on_idle");

        box->idle_seconds = (int64_t)secs->valuedouble;
        box->idle_suspend = strcmp(on->valuestring, "suspend") == 0;
    }
    box->ttl_deadline_ms = box->create_time_ms + lifetime_ms(spec);
    pthread_mutex_lock(&eng->lock);
    if (admit_locked(eng, box, true, err, errlen) != 0) {
        pthread_mutex_unlock(&eng->lock);
        box_discard(box);
        return NULL;
    }
    /* A sandbox started ahead, when the spec asks for nothing more: the
     * devbox takes its id. */
    box->pooled = warm_pool_claim_locked(eng, spec, box->id, sizeof(box->id));
    dir = engine_exec_dir(eng, box->id);
    if (dir != NULL)
        util_mkdirs(dir);
    free(dir);
    box->next = eng->boxes;
    eng->boxes = box;
    /* A flex devbox starts queued as Runloop documents; here capacity is
     * the admission caps already passed, so its boot takes it at once. */
    if (engine_set_status_locked(eng, box,
                                 is_flex(spec) ? DBX_QUEUED : DBX_PROVISIONING,
                                 NULL, NULL) != 0) {
        /* Not saved: it must not exist (nor boot) unacknowledged. */
        eng->boxes = box->next;
        /* A warm sandbox's dir stays for the pool, unless its start failed. */
        keep = box->pooled && warm_pool_unclaim_locked(eng, box->id) == 0;
        pthread_mutex_unlock(&eng->lock);
        dir = keep ? NULL : engine_box_dir(eng, box->id);
        if (dir != NULL)
            util_rmtree(dir);
        free(dir);
        box_discard(box);
        return NULL;
    }
    *view = engine_box_view_locked(box);
    start_boot_locked(eng, box, 1);
    pthread_mutex_unlock(&eng->lock);
    return box;
}

/* ------------------------------------------------------- stop workers */

struct stop_job {
    struct engine *eng;
    struct devbox *box;
    int target; /* DBX_SUSPENDED, DBX_SHUTDOWN or DBX_FAILURE */
    char *reason;
};

/* Lock held: a copy of launch_parameters.lifecycle.lifecycle_hooks, or NULL. */
static cJSON *suspend_hooks_locked(const struct devbox *box)
{
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(box->spec, "launch_parameters");
    const cJSON *life = cJSON_GetObjectItemCaseSensitive(lp, "lifecycle");
    const cJSON *hooks =
        cJSON_GetObjectItemCaseSensitive(life, "lifecycle_hooks");
    const cJSON *cmds =
        cJSON_GetObjectItemCaseSensitive(hooks, "suspend_commands");

    return cJSON_GetArraySize(cmds) > 0 ? cJSON_Duplicate(hooks, 1) : NULL;
}

static void hook_log(struct engine *eng, struct devbox *box, const char *level,
                     const char *msg)
{
    pthread_mutex_lock(&eng->lock);
    engine_log_locked(eng, box, "lifecycle_hooks", level, msg, NULL, 0);
    pthread_mutex_unlock(&eng->lock);
}

/*
 * lifecycle_hooks.suspend_commands, one after the other in the devbox,
 * within suspend_deadline_ms (default 30 s) for all of them. A failure or
 * the deadline is logged and the suspend goes on, as Runloop documents.
 */
static void run_suspend_hooks(struct engine *eng, struct devbox *box,
                              struct sandbox *sb, const cJSON *hooks)
{
    const cJSON *cmds =
        cJSON_GetObjectItemCaseSensitive(hooks, "suspend_commands");
    const cJSON *dl =
        cJSON_GetObjectItemCaseSensitive(hooks, "suspend_deadline_ms");
    int64_t budget = cJSON_IsNumber(dl) ? (int64_t)dl->valuedouble : 30000;
    int64_t deadline = util_now_ms() + budget;
    const cJSON *c = NULL;
    int i = 0;
    char msg[512];

    cJSON_ArrayForEach(c, cmds)
    {
        struct sb_exec req;
        struct sb_proc *proc = NULL;
        char err[256] = "";
        int status = -1;
        int64_t left = deadline - util_now_ms();
        int rc;

        i++;
        if (left <= 0) {
            snprintf(msg, sizeof(msg),
                     "suspend_commands: the %lld ms deadline passed "
                     "before command %d; the suspend goes on",
                     (long long)budget, i);
            hook_log(eng, box, "warn", msg);
            return;
        }
        memset(&req, 0, sizeof(req));
        req.command = c->valuestring;
        req.stdout_fd = -1;
        req.stderr_fd = -1;
        if (sandbox_exec(sb, &req, &proc, err, sizeof(err)) != 0) {
            snprintf(msg, sizeof(msg),
                     "suspend_commands: command %d could not start: %s", i,
                     err);
            hook_log(eng, box, "error", msg);
            continue;
        }
        rc = sandbox_exec_wait(proc, (int)left, &status);
        if (rc == -ETIMEDOUT) {
            sandbox_exec_kill(proc, SIGKILL);
            sandbox_exec_wait(proc, 2000, &status);
            sandbox_exec_free(proc);
            snprintf(msg, sizeof(msg),
                     "suspend_commands: command %d did not finish within "
                     "the %lld ms deadline (killed); the suspend goes on",
                     i, (long long)budget);
            hook_log(eng, box, "warn", msg);
            return;
        }
        sandbox_exec_free(proc);
        snprintf(msg, sizeof(msg),
                 "suspend_commands: command %d exited with status %d%s", i,
                 status, status == 0 ? "" : "; the suspend goes on");
        hook_log(eng, box, status == 0 ? "info" : "error", msg);
    }
}

static void *stop_thread(void *arg)
{
    struct stop_job *job = arg;
    struct engine *eng = job->eng;
    struct devbox *box = job->box;
    struct sandbox *sb = NULL;
    cJSON *hooks = NULL;
    cJSON *chain = NULL;
    int kept = 0;

    pthread_mutex_lock(&eng->lock);
    sb = box->sb; /* the worker owns the devbox while busy */
    if (job->target == DBX_SUSPENDED && sb != NULL)
        hooks = suspend_hooks_locked(box);
    pthread_mutex_unlock(&eng->lock);
    /* Before anything stops: the hooks run in the live devbox. */
    if (hooks != NULL)
        run_suspend_hooks(eng, box, sb, hooks);
    cJSON_Delete(hooks);
    pthread_mutex_lock(&eng->lock);
    while (box->io_refs > 0)
        pthread_cond_wait(&eng->changed, &eng->lock);
    sb = box->sb;
    box->sb = NULL;
    pthread_mutex_unlock(&eng->lock);
    if (sb != NULL) {
        sandbox_stop(sb);
        sandbox_release(sb);
    }
    pty_engine_forget(box->id); /* its devboxd-ptyd ended with the sandbox */
    if (eng->on_sandbox_stop != NULL)
        eng->on_sandbox_stop(box->id);
    pthread_mutex_lock(&eng->lock);
    /* Executions still marked running lost their processes with the sandbox. */
    while (1) {
        struct execution *ex;
        int pending = 0;

        for (ex = box->execs; ex != NULL; ex = ex->next) {
            if (ex->status != EXEC_COMPLETED)
                pending = 1;
        }
        if (!pending)
            break;
        pthread_cond_wait(&eng->changed, &eng->lock);
    }
    if (job->target == DBX_SHUTDOWN || job->target == DBX_FAILURE) {
        pthread_mutex_unlock(&eng->lock);
        /* A failure that is its disk's (read-only after a storage error)
         * keeps it, for its files. */
        kept = job->target == DBX_FAILURE && keep_disk(eng, box, 1);
        if (!kept)
            destroy_box_files(eng, box);
        pthread_mutex_lock(&eng->lock);
        box->disk_kept = kept;
        if (kept) {
            free(box->failure_message);
            box->failure_message = strdup(
                "the devbox's disk went read-only after a storage error; its "
                "disk is kept: download its files (download_file, "
                "read_file_contents), then shut it down to delete the disk");
        }
    }
    engine_set_status_locked(eng, box, job->target,
                             job->target == DBX_FAILURE ? job->reason : NULL,
                             job->target == DBX_SHUTDOWN ? job->reason : NULL);
    box->busy = 0;
    if (job->target == DBX_SHUTDOWN || job->target == DBX_FAILURE)
        chain = chain_of_locked(box);
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
    release_layers(eng, chain);
    free(job->reason);
    free(job);
    return NULL;
}

/* Lock held. */
static int start_stop_locked(struct engine *eng, struct devbox *box, int target,
                             const char *reason)
{
    struct stop_job *job = calloc(1, sizeof(*job));

    if (job == NULL)
        return -1;
    job->eng = eng;
    job->box = box;
    job->target = target;
    job->reason = reason != NULL ? strdup(reason) : NULL;
    if (target == DBX_SUSPENDED && box->status != DBX_SUSPENDING)
        engine_set_status_locked(eng, box, DBX_SUSPENDING, NULL, NULL);
    box->busy = 1;
    if (util_thread_detached(stop_thread, job, 256 * 1024) != 0) {
        box->busy = 0;
        free(job->reason);
        free(job);
        return -1;
    }
    return 0;
}

/* Lock held: waits for a boot or stop worker to finish (bounded). */
static int wait_not_busy_locked(struct engine *eng, struct devbox *box)
{
    int64_t deadline = util_now_ms() + 60000;

    while (box->busy) {
        if (engine_wait_locked(eng, deadline) != 0 && box->busy)
            return -1;
    }
    return 0;
}

/* Lock held. Marks a running devbox suspending only once that is saved:
 * on a full state disk the change is undone and the devbox keeps running
 * (the caller answers 507, nothing acknowledged). */
static int mark_suspending_locked(struct engine *eng, struct devbox *box)
{
    int64_t active_ms = box->active_ms;
    int64_t active_since_ms = box->active_since_ms;
    int n_transitions = cJSON_GetArraySize(box->transitions);

    if (engine_set_status_locked(eng, box, DBX_SUSPENDING, NULL, NULL) == 0)
        return 0;
    box->status = DBX_RUNNING;
    box->active_ms = active_ms;
    box->active_since_ms = active_since_ms;
    while (cJSON_GetArraySize(box->transitions) > n_transitions)
        cJSON_DeleteItemFromArray(box->transitions, n_transitions);
    pthread_cond_broadcast(&eng->changed);
    return -1;
}

int engine_suspend(struct engine *eng, struct devbox *box, char *err,
                   size_t errlen)
{
    int rc = 0;

    pthread_mutex_lock(&eng->lock);
    if (box->status == DBX_SUSPENDED || box->status == DBX_SUSPENDING)
        goto out;
    if (box->status != DBX_RUNNING) {
        snprintf(err, errlen,
                 "devbox %s is %s; only a running devbox can be suspended "
                 "(wait for status running first)",
                 box->id, dbx_status_name(box->status));
        rc = 400;
        goto out;
    }
    if (wait_not_busy_locked(eng, box) != 0 || box->status != DBX_RUNNING) {
        snprintf(err, errlen, "devbox %s is busy changing state; retry",
                 box->id);
        rc = 409;
        goto out;
    }
    if (mark_suspending_locked(eng, box) != 0) {
        snprintf(err, errlen,
                 "devboxd could not save the suspend of devbox %s "
                 "(its state disk is full or not writable); it keeps running",
                 box->id);
        rc = 507;
        goto out;
    }
    if (start_stop_locked(eng, box, DBX_SUSPENDED, NULL) != 0) {
        snprintf(err, errlen, "cannot start the suspend worker");
        rc = 500;
    }
out:
    pthread_mutex_unlock(&eng->lock);
    return rc;
}

int engine_resume(struct engine *eng, struct devbox *box, char *err,
                  size_t errlen)
{
    char cap[384];
    int rc = 0;

    pthread_mutex_lock(&eng->lock);
    if (box->status == DBX_SUSPENDING)
        wait_not_busy_locked(eng, box);
    if (box->status == DBX_RUNNING || box->status == DBX_RESUMING)
        goto out;
    if (box->status != DBX_SUSPENDED) {
        snprintf(err, errlen,
                 "devbox %s is %s; only a suspended devbox can be resumed",
                 box->id, dbx_status_name(box->status));
        rc = 400;
        goto out;
    }
    /* A suspended devbox holds no sandbox: waking it takes a slot like a
     * create does. 429: the client may retry once a devbox stops. */
    if (admit_locked(eng, box, false, cap, sizeof(cap)) != 0) {
        snprintf(err, errlen, "devbox %s stays suspended: %s", box->id, cap);
        rc = 429;
        goto out;
    }
    /* keep_alive_time_seconds bounds a run, not a sleep: a devbox resumed
     * past its first deadline was shut down by the timer right after it
     * booted. A resume starts a fresh lifetime (saved with the status). */
    if (box->ttl_deadline_ms > 0)
        box->ttl_deadline_ms = util_now_ms() + lifetime_ms(box->spec);
    engine_set_status_locked(eng, box, DBX_RESUMING, NULL, NULL);
    if (start_boot_locked(eng, box, 0) != 0) {
        snprintf(err, errlen, "cannot start the resume worker");
        rc = 500;
    }
out:
    pthread_mutex_unlock(&eng->lock);
    return rc;
}

int engine_shutdown(struct engine *eng, struct devbox *box, const char *reason,
                    char *err, size_t errlen)
{
    int rc = 0;

    pthread_mutex_lock(&eng->lock);
    if (box->status == DBX_FAILURE && box->disk_kept && !box->busy) {
        /* The disk a failure kept, for its files: a shutdown deletes it. */
        box->busy = 1;
        pthread_mutex_unlock(&eng->lock);
        destroy_box_files(eng, box);
        pthread_mutex_lock(&eng->lock);
        box->disk_kept = 0;
        box->busy = 0;
        engine_save_locked(eng, box);
        pthread_cond_broadcast(&eng->changed);
        goto out;
    }
    if (box->status == DBX_SHUTDOWN || box->status == DBX_FAILURE)
        goto out; /* already final */
    cancel_boot_locked(eng, box, BOOT_CANCEL_SHUTDOWN);
    if (wait_not_busy_locked(eng, box) != 0) {
        snprintf(err, errlen, "devbox %s is busy changing state; retry",
                 box->id);
        rc = 409;
        goto out;
    }
    if (box->status == DBX_SHUTDOWN)
        goto out;
    if (start_stop_locked(eng, box, DBX_SHUTDOWN, reason) != 0) {
        snprintf(err, errlen, "cannot start the shutdown worker");
        rc = 500;
        goto out;
    }
    /* Shutdown is quick and clients expect it done in the response. */
    wait_not_busy_locked(eng, box);
out:
    pthread_mutex_unlock(&eng->lock);
    return rc;
}

/* ---------------------------------------------------- timer and health */

static void timer_tick_locked(struct engine *eng)
{
    int64_t now = util_now_ms();
    struct devbox *box;

    for (box = eng->boxes; box != NULL; box = box->next) {
        if (box->status != DBX_RUNNING || box->busy)
            continue;
        if (box->sb != NULL && sandbox_check(box->sb) != 0) {
            const char *why = sandbox_failure_reason(box->sb);
            int oom = why != NULL && strcmp(why, "out_of_memory") == 0;

            box->oom_failed = oom;
            engine_log_locked(eng, box, "entrypoint", "error",
                              oom ? "the devbox ran out of memory"
                                  : "the devbox's sandbox exited",
                              NULL, 0);
            start_stop_locked(eng, box, DBX_FAILURE,
                              oom ? "out_of_memory" : "health_check_failed");
            continue;
        }
        if (box->sb != NULL)
            sandbox_refresh_meminfo(box->sb);
        if (box->ttl_deadline_ms > 0 && now >= box->ttl_deadline_ms) {
            start_stop_locked(eng, box, DBX_SHUTDOWN, "keep_alive_timeout");
            continue;
        }
        if (box->idle_seconds > 0 &&
            now - box->last_activity_ms >= box->idle_seconds * 1000) {
            int running = 0;
            struct execution *ex;

            for (ex = box->execs; ex != NULL; ex = ex->next)
                running |=
                    ex->status != EXEC_COMPLETED && ex != box->entrypoint;
            if (running) {
                box->last_activity_ms = now;
                continue;
            }
            if (box->idle_suspend)
                start_stop_locked(eng, box, DBX_SUSPENDED, NULL);
            else
                start_stop_locked(eng, box, DBX_SHUTDOWN, "idle");
        }
    }
}

static void *timer_thread(void *arg)
{
    struct engine *eng = arg;

    int64_t swept_ms = 0;

    pthread_mutex_lock(&eng->lock);
    while (!eng->stopping) {
        int64_t now;

        engine_wait_locked(eng, util_now_ms() + 250);
        if (eng->stopping)
            break;
        timer_tick_locked(eng);
        now = util_now_ms();
        if (now - swept_ms >= 1000) {
            struct devbox *gone = retention_collect_locked(eng, now);

            swept_ms = now;
            if (gone != NULL) {
                /* Unlinked: no other thread can find them any more. */
                pthread_mutex_unlock(&eng->lock);
                retention_remove(eng, gone);
                pthread_mutex_lock(&eng->lock);
            }
        }
    }
    pthread_mutex_unlock(&eng->lock);
    return NULL;
}

/* --------------------------------------------------------- init/load */

int engine_init(struct engine *eng, const char *state_dir,
                const struct engine_settings *set, char *err, size_t errlen)
{
    struct sb_runtime rt;
    pthread_condattr_t ca;

    memset(eng, 0, sizeof(*eng));
    eng->state_dir = strdup(state_dir);
    eng->settings = *set;
    eng->caps = set->caps;
    eng->retain_ms = (int64_t)(set->retention_days * 86400000.0);
    eng->retain_max = set->retention_max;
    code_mounts_init(state_dir, set->code_mount_base,
                     set->code_mount_timeout_s);
    images_set_default(set->devbox_image);
    blueprint_buildah_set_image_cache(set->image_cache);
    pthread_mutex_init(&eng->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_REALTIME);
    pthread_cond_init(&eng->changed, &ca);
    pthread_condattr_destroy(&ca);
    memset(&rt, 0, sizeof(rt));
    rt.state_dir = state_dir;
    rt.runc_path = set->runc_path;
    rt.disk = set->disk;
    rt.claims_dir = set->uid_claims_dir;
    rt.range_slots = set->uid_range_slots;
    if (sandbox_init(&rt, err, errlen) != 0)
        return -1;
    eng->sandbox_ready = 1;
    return 0;
}

static struct execution *exec_load(struct engine *eng, struct devbox *box,
                                   const char *path)
{
    struct execution *ex = NULL;
    cJSON *rec = util_read_json(path, 1 << 20);
    const cJSON *it = NULL;

    if (rec == NULL)
        return NULL;
    ex = calloc(1, sizeof(*ex));
    if (ex == NULL)
        goto out;
    ex->box = box;
    it = cJSON_GetObjectItemCaseSensitive(rec, "id");
    snprintf(ex->id, sizeof(ex->id), "%s",
             cJSON_IsString(it) ? it->valuestring : "exn_x");
    it = cJSON_GetObjectItemCaseSensitive(rec, "command");
    ex->command = strdup(cJSON_IsString(it) ? it->valuestring : "");
    it = cJSON_GetObjectItemCaseSensitive(rec, "command_id");
    ex->command_id = cJSON_IsString(it) ? strdup(it->valuestring) : NULL;
    it = cJSON_GetObjectItemCaseSensitive(rec, "shell_name");
    ex->shell_name = cJSON_IsString(it) ? strdup(it->valuestring) : NULL;
    it = cJSON_GetObjectItemCaseSensitive(rec, "kind");
    ex->kind = strdup(cJSON_IsString(it) ? it->valuestring : "exec");
    it = cJSON_GetObjectItemCaseSensitive(rec, "status");
    ex->status = cJSON_IsString(it) ? exec_status_parse(it->valuestring)
                                    : EXEC_COMPLETED;
    ex->exit_status = (int)cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rec, "exit_status"));
    ex->create_time_ms = (int64_t)cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rec, "create_time_ms"));
    ex->end_time_ms = (int64_t)cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rec, "end_time_ms"));
    ex->killed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "killed"));
    ex->oom_killed =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "oom_killed"));
    if (ex->status != EXEC_COMPLETED) {
        /* Its process died with the previous engine: as if killed. */
        ex->status = EXEC_COMPLETED;
        ex->exit_status = 128 + SIGKILL;
        ex->killed = 1;
        ex->end_time_ms = util_now_ms();
        engine_exec_save(eng, ex);
    }
out:
    cJSON_Delete(rec);
    return ex;
}

static int cmp_exec_time(const void *a, const void *b)
{
    const struct execution *x = *(struct execution *const *)a;
    const struct execution *y = *(struct execution *const *)b;

    return (x->create_time_ms > y->create_time_ms) -
           (x->create_time_ms < y->create_time_ms);
}

static void load_execs(struct engine *eng, struct devbox *box)
{
    char *dir = engine_exec_dir(eng, box->id);
    struct execution **arr = NULL;
    size_t n = 0, i;
    DIR *d = NULL;
    struct dirent *de;

    d = dir != NULL ? opendir(dir) : NULL;
    while (d != NULL && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        char path[4200];
        struct execution *ex;
        struct execution **grown;

        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        ex = exec_load(eng, box, path);
        if (ex == NULL)
            continue;
        grown = realloc(arr, (n + 1) * sizeof(*arr));
        if (grown == NULL)
            break;
        arr = grown;
        arr[n++] = ex;
    }
    if (d != NULL)
        closedir(d);
    if (n > 0)
        qsort(arr, n, sizeof(*arr), cmp_exec_time);
    for (i = 0; i < n; i++) {
        arr[i]->next = box->execs;
        box->execs = arr[i];
    }
    free(arr);
    free(dir);
}

static struct devbox *box_load(struct engine *eng, const char *path)
{
    struct devbox *box = NULL;
    cJSON *rec = util_read_json(path, 16 << 20);
    const cJSON *it = NULL;

    if (rec == NULL) {
        fprintf(stderr, "devboxd: skipping unreadable record %s\n", path);
        return NULL;
    }
    box = calloc(1, sizeof(*box));
    if (box == NULL)
        goto out;
    it = cJSON_GetObjectItemCaseSensitive(rec, "id");
    snprintf(box->id, sizeof(box->id), "%s",
             cJSON_IsString(it) ? it->valuestring : "");
    box->spec = cJSON_DetachItemFromObjectCaseSensitive(rec, "spec");
    if (box->spec == NULL)
        box->spec = cJSON_CreateObject();
    box->tunnel = cJSON_DetachItemFromObjectCaseSensitive(rec, "tunnel");
    if (box->tunnel != NULL && !cJSON_IsObject(box->tunnel)) {
        cJSON_Delete(box->tunnel);
        box->tunnel = NULL;
    }
    box->transitions =
        cJSON_DetachItemFromObjectCaseSensitive(rec, "state_transitions");
    if (box->transitions == NULL)
        box->transitions = cJSON_CreateArray();
    it = cJSON_GetObjectItemCaseSensitive(rec, "status");
    box->status =
        cJSON_IsString(it) ? dbx_status_parse(it->valuestring) : DBX_FAILURE;
    if (box->status < 0)
        box->status = DBX_FAILURE;
    it = cJSON_GetObjectItemCaseSensitive(rec, "failure_reason");
    box->failure_reason = cJSON_IsString(it) ? strdup(it->valuestring) : NULL;
    it = cJSON_GetObjectItemCaseSensitive(rec, "failure_message");
    box->failure_message = cJSON_IsString(it) ? strdup(it->valuestring) : NULL;
    it = cJSON_GetObjectItemCaseSensitive(rec, "shutdown_reason");
    box->shutdown_reason = cJSON_IsString(it) ? strdup(it->valuestring) : NULL;
    box->disk_kept =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec, "_disk_kept"));
    box->create_time_ms = (int64_t)cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rec, "create_time_ms"));
    box->end_time_ms = (int64_t)cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rec, "end_time_ms"));
    box->active_ms = (int64_t)cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rec, "active_ms"));
    box->ttl_deadline_ms = (int64_t)cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rec, "ttl_deadline_ms"));
    {
        const cJSON *lp =
            cJSON_GetObjectItemCaseSensitive(box->spec, "launch_parameters");
        const cJSON *life = cJSON_GetObjectItemCaseSensitive(lp, "lifecycle");
        const cJSON *idle =
            cJSON_GetObjectItemCaseSensitive(life, "after_idle");

        if (idle == NULL)
            idle = cJSON_GetObjectItemCaseSensitive(lp, "after_idle");
        if (idle != NULL) {
            box->idle_seconds = (int64_t)cJSON_GetNumberValue(
                cJSON_GetObjectItemCaseSensitive(idle, "idle_time_seconds"));
            it = cJSON_GetObjectItemCaseSensitive(idle, "on_idle");
            box->idle_suspend =
                cJSON_IsString(it) && strcmp(it->valuestring, "suspend") == 0;
        }
    }
    /* A record an older devboxd wrote at the end still held them. */
    if (is_ended_status(box->status) && forget_secrets(box))
        engine_save_locked(eng, box);
    load_execs(eng, box);
out:
    cJSON_Delete(rec);
    return box;
}

/* Before any worker runs: a suspended devbox's disk is mounted again (its
 * command output is read from it); one that ended keeps no files (a stop
 * that did not finish deleting them). */
static void load_box_disk(struct engine *eng, struct devbox *box)
{
    struct sb_limits lim;
    double cpus, mem, disk;
    char err[256] = "";
    char *dir = engine_sandbox_dir(eng, box->id);
    int rc = 0;

    if (dir == NULL)
        return;
    /* No process of this devboxd is alive yet: whatever a killed one left
     * in the devbox's cgroups goes, before it boots again. */
    rc = sandbox_purge(box->id);
    if (rc > 0)
        fprintf(stderr,
                "devboxd: devbox %s: removed %d cgroups left by a devboxd that "
                "did not stop cleanly\n",
                box->id, rc);
    else if (rc < 0)
        fprintf(stderr,
                "devboxd: devbox %s: cannot empty the cgroups a devboxd that "
                "did not stop cleanly left: %s\n",
                box->id, strerror(-rc));
    rc = 0;
    if (box->status == DBX_SUSPENDED || box->status == DBX_SUSPENDING) {
        engine_spec_limits(box->spec, &lim, &cpus, &mem, &disk);
        rc = sandbox_disk_attach(dir, lim.disk_bytes, err, sizeof(err));
    } else if (box->status == DBX_FAILURE && box->disk_kept) {
        /* Kept for its files: read-only, never deleted by a start. */
        rc = sandbox_disk_mount_ro(dir, err, sizeof(err));
    } else if (box->status == DBX_SHUTDOWN || box->status == DBX_FAILURE) {
        if (access(dir, F_OK) == 0)
            rc = sandbox_destroy_dir(dir, err, sizeof(err));
    }
    if (rc != 0)
        fprintf(stderr, "devboxd: devbox %s: %s\n", box->id, err);
    free(dir);
}

static int cmp_box_time(const void *a, const void *b)
{
    const struct devbox *x = *(struct devbox *const *)a;
    const struct devbox *y = *(struct devbox *const *)b;

    return (x->create_time_ms > y->create_time_ms) -
           (x->create_time_ms < y->create_time_ms);
}

int engine_load(struct engine *eng, char *err, size_t errlen)
{
    char *dir = NULL;
    DIR *d = NULL;
    struct dirent *de;
    struct devbox **arr = NULL;
    size_t n = 0, i;
    int rc = -1;

    if (asprintf(&dir, "%s/devboxes", eng->state_dir) < 0) {
        dir = NULL;
        goto out;
    }
    if (util_mkdirs(dir) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        goto out;
    }
    warm_pool_remove_orphans(eng);
    d = opendir(dir);
    while (d != NULL && (de = readdir(d)) != NULL) {
        char path[4200];
        struct devbox *box;
        struct devbox **grown;

        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s/devbox.json", dir, de->d_name);
        if (access(path, F_OK) != 0)
            continue;
        box = box_load(eng, path);
        if (box == NULL)
            continue;
        grown = realloc(arr, (n + 1) * sizeof(*arr));
        if (grown == NULL)
            break;
        arr = grown;
        arr[n++] = box;
    }
    if (n > 0)
        qsort(arr, n, sizeof(*arr), cmp_box_time);
    for (i = 0; i < n; i++)
        load_box_disk(eng, arr[i]);
    pthread_mutex_lock(&eng->lock);
    for (i = 0; i < n; i++) {
        struct devbox *box = arr[i];
        char cap[384];

        switch (box->status) {
        case DBX_SUSPENDING:
            engine_set_status_locked(eng, box, DBX_SUSPENDED, NULL, NULL);
            break;
        case DBX_QUEUED:
        case DBX_PROVISIONING:
        case DBX_INITIALIZING:
        case DBX_RUNNING:
        case DBX_RESUMING:
            /* As after a reboot: files kept, processes gone, boot again,
             * oldest first within the caps (they may have been lowered);
             * past them a devbox waits suspended, as a resume would. Not
             * yet in the list: it does not count itself. */
            if (admit_locked(eng, box, false, cap, sizeof(cap)) != 0) {
                fprintf(stderr,
                        "devboxd: devbox %s stays suspended after the "
                        "restart: %s\n",
                        box->id, cap);
                engine_set_status_locked(eng, box, DBX_SUSPENDED, NULL, NULL);
                break;
            }
            engine_set_status_locked(eng, box, DBX_PROVISIONING, NULL, NULL);
            start_boot_locked(eng, box, 0);
            break;
        default:
            break;
        }
        box->next = eng->boxes;
        eng->boxes = box;
    }
    pthread_mutex_unlock(&eng->lock);
    /* With the devboxes known: what their chains use is not freed. */
    layer_records_start(eng);
    if (pthread_create(&eng->timer, NULL, timer_thread, eng) != 0) {
        snprintf(err, errlen, "cannot start the timer thread");
        goto out;
    }
    eng->timer_started = 1;
    /* After the records: a dir without one is the pool's to remove. */
    if (warm_pool_start(eng, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    if (d != NULL)
        closedir(d);
    free(arr);
    free(dir);
    return rc;
}

/* devboxd stops: the devbox's disk is unmounted (its image stays for the
 * next start, which mounts it again). */
static void fini_box_disk(struct engine *eng, struct devbox *box)
{
    char *dir = engine_sandbox_dir(eng, box->id);
    int rc = dir != NULL ? sandbox_disk_detach(dir) : 0;

    if (rc != 0)
        fprintf(stderr, "devboxd: cannot unmount the disk of devbox %s: %s\n",
                box->id, strerror(-rc));
    free(dir);
}

void engine_fini(struct engine *eng)
{
    struct devbox *box;
    struct devbox *next;

    /* Snapshot copies hold devboxes and builds hold sandboxes: end them first. */
    layer_records_fini();
    pthread_mutex_lock(&eng->lock);
    eng->stopping = 1;
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
    if (eng->timer_started)
        pthread_join(eng->timer, NULL);
    /* Stop sandboxes: records stay as they are so a restart brings them back. */
    pthread_mutex_lock(&eng->lock);
    for (box = eng->boxes; box != NULL; box = box->next)
        cancel_boot_locked(eng, box, BOOT_CANCEL_STOP);
    for (box = eng->boxes; box != NULL; box = box->next)
        wait_not_busy_locked(eng, box);
    pthread_mutex_unlock(&eng->lock);
    /* No boot worker waits for a warm sandbox any more. */
    warm_pool_stop(eng);
    for (box = eng->boxes; box != NULL; box = box->next) {
        if (box->sb != NULL) {
            sandbox_stop(box->sb);
        }
    }
    /* Wait for execution threads to see their processes gone. */
    pthread_mutex_lock(&eng->lock);
    {
        int64_t deadline = util_now_ms() + 10000;

        while (eng->exec_threads > 0 && engine_wait_locked(eng, deadline) == 0)
            ;
    }
    pthread_mutex_unlock(&eng->lock);
    for (box = eng->boxes; box != NULL; box = next) {
        next = box->next;
        if (box->sb != NULL)
            sandbox_release(box->sb);
        fini_box_disk(eng, box);
        /* Executions a command thread still uses stay allocated. */
        if (eng->exec_threads != 0)
            box->execs = NULL;
        engine_box_free(box);
    }
    if (eng->sandbox_ready)
        sandbox_shutdown_runtime();
    free(eng->state_dir);
    free(eng->api_key);
}
