/* Blueprints: builds run by buildah (blueprint_buildah.c) on worker
 * threads, bounded concurrency; the build's new layer becomes the
 * blueprint's layer over its base's.  Logs are JSON lines appended as the
 * steps run. */
#define _GNU_SOURCE
#include "blueprint_builds.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blueprint_buildah.h"
#include "buildah_dockerfile.h"
#include "build_context.h"
#include "code_mounts.h"
#include "devbox_spec.h"
#include "images.h"
#include "layer_records.h"
#include "objects.h"
#include "sandbox.h"
#include "warm_pool.h"
#include "sandbox_internal.h"
#include "util.h"

#define ERRLEN 512
#define MAX_FILE_MOUNT 131000 /* the SDK's per-file check */
#define MAX_FILE_MOUNTS 1310000
#define MAX_SETUP_BYTES (64 * 1024)
#define MAX_LOG_LINES 20000 /* per build; more output is cut */
#define LOG_LINE_MAX 4096
#define LOCAL_BASE "runloop:runloop/starter-x86_64"
#define CANCEL_WAIT_MS                                                         \
    30000 /* a delete waits this long for its build to stop */

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slot_cond = PTHREAD_COND_INITIALIZER;
static int slots_used;
static int builds_alive;     /* worker threads not yet finished */
static int stopping;         /* devboxd is stopping: end the builds */
static struct build *active; /* builds not yet finished, slot_lock */
static int store_dirty;      /* a killed buildah left containers: slot_lock */
static int
    cleaning; /* blueprint_buildah_cleanup runs: no build starts, slot_lock */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

struct build {
    struct engine *eng;
    char id[40];
    char *dir;     /* <state>/blueprints/<id> */
    cJSON *params; /* the create body */
    int log_lines;
    int64_t deadline_ms; /* RLMCP_BUILD_TIMEOUT_S from the slot's start */
    int cancelled;       /* deleted while building: slot_lock */
    int killed;          /* buildah was killed (blueprint_buildah_job.killed) */
    int context_fd;      /* the build_context archive, or -1 */
    struct build *next_active; /* the builds list, slot_lock */
};

static void set_str(cJSON *rec, const char *name, const char *value)
{
    cJSON_DeleteItemFromObjectCaseSensitive(rec, name);
    if (value != NULL)
        cJSON_AddStringToObject(rec, name, value);
}

static cJSON *find_locked(const char *id)
{
    cJSON *rec = NULL;

    cJSON_ArrayForEach(rec, layer_records_blueprints_locked())
    {
        const char *rid = util_json_str(rec, "id");

        if (rid != NULL && strcmp(rid, id) == 0)
            return rec;
    }
    return NULL;
}

cJSON *blueprints_record_locked(const char *id)
{
    return find_locked(id);
}

void blueprints_depend_locked(const char *id, const cJSON *base)
{
    cJSON *mine = find_locked(id);
    const char *base_id = util_json_str(base, "id");

    if (mine == NULL || base_id == NULL)
        return;
    set_str(mine, "base_blueprint_id", base_id);
    cJSON_DeleteItemFromObjectCaseSensitive(mine, "layers");
    cJSON_AddItemToObject(
        mine, "layers",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(base, "layers"), 1));
    layer_records_save_record("blueprints", "blueprint.json", mine);
}

static int has_tag(const cJSON *rec, const char *tag)
{
    const cJSON *it = NULL;

    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rec, "tags"))
    {
        if (cJSON_IsString(it) && strcmp(it->valuestring, tag) == 0)
            return 1;
    }
    return 0;
}

/* A completed, not deleted build whose id (or name) is key; with tag, the
 * one of that name carrying the tag. */
static cJSON *find_built_locked(const char *field, const char *key,
                                size_t keylen, const char *tag)
{
    cJSON *rec = NULL;

    cJSON_ArrayForEach(rec, layer_records_blueprints_locked())
    {
        const char *st = util_json_str(rec, "status");
        const char *state = util_json_str(rec, "state");
        const char *v = util_json_str(rec, field);

        if (st == NULL || strcmp(st, "build_complete") != 0 || state == NULL ||
            strcmp(state, "created") != 0 || v == NULL)
            continue;
        if (strlen(v) == keylen && strncmp(v, key, keylen) == 0 &&
            (tag == NULL || has_tag(rec, tag)))
            return rec; /* newest first: the latest successful build of a name */
    }
    return NULL;
}

cJSON *blueprints_find_locked(const char *id, const char *name)
{
    const char *colon = NULL;
    cJSON *rec = NULL;

    if (id != NULL)
        return find_built_locked("id", id, strlen(id), NULL);
    rec = find_built_locked("name", name, strlen(name), NULL);
    /* No build named so: "NAME:TAG" is the build of NAME tagged TAG. */
    colon = strrchr(name, ':');
    if (rec == NULL && colon != NULL && colon != name && colon[1] != '\0')
        rec =
            find_built_locked("name", name, (size_t)(colon - name), colon + 1);
    return rec;
}

/* blueprint_buildah_records.find: the registry's record, copied under its
 * lock. */
static cJSON *records_find(const char *id, const char *name, int any)
{
    cJSON *rec = NULL;

    layer_records_lock(NULL);
    rec = any ? find_locked(id) : blueprints_find_locked(id, name);
    rec = rec != NULL ? cJSON_Duplicate(rec, 1) : NULL;
    layer_records_unlock();
    return rec;
}

/* blueprint_buildah_records.depend, under the registry lock. */
static int records_depend(const char *job_id, const char *id)
{
    const cJSON *base = NULL;

    layer_records_lock(NULL);
    base = blueprints_find_locked(id, NULL);
    if (base != NULL)
        blueprints_depend_locked(job_id, base);
    layer_records_unlock();
    return base != NULL ? 0 : -1;
}

const struct blueprint_buildah_records blueprints_records = {records_find,
                                                             records_depend};

/* BlueprintView of a record. */
static cJSON *bp_view(const cJSON *rec)
{
    static const char *const opt[] = {"base_blueprint_id", "failure_reason",
                                      NULL};
    cJSON *v = cJSON_CreateObject();
    const cJSON *it = NULL;
    size_t i;

    cJSON_AddStringToObject(v, "id", util_json_str(rec, "id"));
    cJSON_AddStringToObject(v, "name", util_json_str(rec, "name"));
    cJSON_AddStringToObject(v, "status", util_json_str(rec, "status"));
    cJSON_AddStringToObject(v, "state", util_json_str(rec, "state"));
    cJSON_AddNumberToObject(
        v, "create_time_ms",
        cJSON_GetNumberValue(
            cJSON_GetObjectItemCaseSensitive(rec, "create_time_ms")));
    it = cJSON_GetObjectItemCaseSensitive(rec, "build_finish_time_ms");
    if (cJSON_IsNumber(it))
        cJSON_AddNumberToObject(v, "build_finish_time_ms", it->valuedouble);
    else
        cJSON_AddNullToObject(v, "build_finish_time_ms");
    cJSON_AddItemToObject(
        v, "parameters",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec, "parameters"),
                        1));
    for (i = 0; opt[i] != NULL; i++) {
        const char *s = util_json_str(rec, opt[i]);

        if (s != NULL)
            cJSON_AddStringToObject(v, opt[i], s);
        else
            cJSON_AddNullToObject(v, opt[i]);
    }
    cJSON_AddNullToObject(v, "containerized_services");
    cJSON_AddItemToObject(v, "devbox_capabilities", cJSON_CreateArray());
    cJSON_AddFalseToObject(v, "is_public");
    /* devboxd's extension: POST /v1/blueprints/{id}/wait_for_status
     * answers when the build reaches a status (a client that sees this
     * long-polls instead of polling). */
    cJSON_AddTrueToObject(v, "supports_wait_for_status");
    /* devboxd's extension: the tags naming this build (blueprints_tag). */
    it = cJSON_GetObjectItemCaseSensitive(rec, "tags");
    cJSON_AddItemToObject(v, "tags",
                          cJSON_IsArray(it) ? cJSON_Duplicate(it, 1)
                                            : cJSON_CreateArray());
    it = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rec, "parameters"), "metadata");
    cJSON_AddItemToObject(v, "metadata",
                          cJSON_IsObject(it) ? cJSON_Duplicate(it, 1)
                                             : cJSON_CreateObject());
    return v;
}

/* ---------------------------------------------------------------- logs */

/* msg with every occurrence of needle (when not empty) replaced by with,
 * into out (cut to len).  */
static void replace_all(const char *msg, const char *needle, const char *with,
                        char *out, size_t len)
{
    size_t nlen = needle != NULL ? strlen(needle) : 0;
    size_t off = 0;
    const char *p = msg;
    const char *hit;

    if (len == 0)
        return;
    while (nlen > 0 && (hit = strstr(p, needle)) != NULL && off < len) {
        off += (size_t)snprintf(out + off, len - off, "%.*s%s", (int)(hit - p),
                                p, with);
        p = hit + nlen;
    }
    if (off < len)
        snprintf(out + off, len - off, "%s", p);
    else
        out[len - 1] = '\0';
}

/* A build log names no host path of devboxd's: its state dir (also as
 * its real path) and buildah's temp root read "<state>" and "<build-tmp>".
 * The log goes to the blueprint's caller (GET …/logs); errors of buildah
 * and of the build's own steps quote such paths. */
static void scrub_paths(const char *msg, char *out, size_t len)
{
    char tmp[LOG_LINE_MAX + 256];
    char tmp2[LOG_LINE_MAX + 256];
    char real[PATH_MAX];
    const char *state = layer_records_state_dir();

    replace_all(msg, state, "<state>", tmp, sizeof(tmp));
    if (state != NULL && realpath(state, real) != NULL &&
        strcmp(real, state) != 0)
        replace_all(tmp, real, "<state>", tmp2, sizeof(tmp2));
    else
        snprintf(tmp2, sizeof(tmp2), "%s", tmp);
    replace_all(tmp2, BUILD_TMP_ROOT, "<build-tmp>", out, len);
}

static void log_append(const char *dir, const char *level, const char *msg)
{
    cJSON *e = cJSON_CreateObject();
    char *text = NULL;
    char *path = NULL;
    char clean[LOG_LINE_MAX + 256];
    int fd = -1;

    scrub_paths(msg, clean, sizeof(clean));
    cJSON_AddStringToObject(e, "level", level);
    cJSON_AddStringToObject(e, "message", clean);
    cJSON_AddNumberToObject(e, "timestamp_ms", (double)util_now_ms());
    text = cJSON_PrintUnformatted(e);
    if (text == NULL || asprintf(&path, "%s/logs.jsonl", dir) < 0) {
        path = NULL;
        goto out;
    }
    pthread_mutex_lock(&log_lock);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        size_t len = strlen(text);

        text[len] = '\n'; /* one write per line so readers see whole lines */
        if (write(fd, text, len + 1) < 0)
            fprintf(stderr, "devboxd: cannot append to %s\n", path);
        text[len] = '\0';
        close(fd);
    }
    pthread_mutex_unlock(&log_lock);
out:
    cJSON_Delete(e);
    free(text);
    free(path);
}

static void blog(struct build *b, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void blog(struct build *b, const char *level, const char *fmt, ...)
{
    char msg[LOG_LINE_MAX];
    va_list ap;

    if (b->log_lines > MAX_LOG_LINES)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (++b->log_lines > MAX_LOG_LINES)
        snprintf(msg, sizeof(msg), "[build output cut after %d log lines]",
                 MAX_LOG_LINES);
    log_append(b->dir, level, msg);
}

/* ------------------------------------------------------------- status */

static void set_status(struct build *b, const char *status, const char *failure)
{
    cJSON *rec = NULL;
    cJSON *freed = NULL;
    char *layer = NULL;

    if (asprintf(&layer, "%s/layer", b->dir) < 0)
        layer = NULL;
    layer_records_lock(b->eng);
    rec = find_locked(b->id);
    if (rec != NULL) {
        set_str(rec, "status", status);
        if (failure != NULL)
            set_str(rec, "failure_reason", failure);
        if (strcmp(status, "build_complete") == 0 ||
            strcmp(status, "failed") == 0)
            cJSON_AddNumberToObject(rec, "build_finish_time_ms",
                                    (double)util_now_ms());
        /* A failed build holds its base's layers no more (a base deleted
         * while it built goes now), and its own layer is no one's. */
        if (layer_records_save_record("blueprints", "blueprint.json", rec) ==
                0 &&
            strcmp(status, "failed") == 0)
            freed = layers_release_locked(
                cJSON_GetObjectItemCaseSensitive(rec, "layers"), layer);
    }
    layer_records_unlock();
    layers_free(freed);
    free(layer);
}

/* Whether the running step must end now, with why in err: devboxd stops,
 * the blueprint was deleted, or the build ran past its time limit. */
static int stop_reason(struct build *b, char *err, size_t errlen)
{
    int cancelled;

    pthread_mutex_lock(&slot_lock);
    cancelled = b->cancelled;
    pthread_mutex_unlock(&slot_lock);
    if (__atomic_load_n(&stopping, __ATOMIC_SEQ_CST))
        snprintf(err, errlen, "devboxd is stopping");
    else if (cancelled)
        snprintf(err, errlen, "the blueprint was deleted during the build");
    else if (util_now_ms() > b->deadline_ms)
        snprintf(err, errlen,
                 "the build ran past its time limit of %.0f s "
                 "(RLMCP_BUILD_TIMEOUT_S)",
                 b->eng->caps.build_timeout_s);
    else
        return 0;
    return 1;
}

/* --------------------------------------------------------------- build */

static void bb_log(void *ctx, const char *level, const char *msg)
{
    blog(ctx, level, "%s", msg);
}

static int bb_stop(void *ctx, char *err, size_t errlen)
{
    return stop_reason(ctx, err, errlen);
}

/* Success by buildah: the record gets the layer over its base's chain
 * and the image's config. */
/* 0, or -1 when the base went away (the chain would lack its files). */
static int record_buildah(struct build *b, cJSON *fields)
{
    static const char *const keep[] = {
        "env",          "image", "image_config", "builder", "buildah_image",
        "buildah_from", NULL};
    const char *base = util_json_str(fields, "base_blueprint_id");
    cJSON *layers = cJSON_CreateArray();
    cJSON *own = cJSON_CreateObject();
    cJSON *rec = NULL;
    const cJSON *it = NULL;
    char *layer = NULL;
    size_t i;
    int rc = 0;

    if (asprintf(&layer, "%s/layer", b->dir) < 0)
        layer = NULL;
    cJSON_AddStringToObject(own, "path", layer != NULL ? layer : "");
    cJSON_AddNumberToObject(own, "owner", (double)SB_RANGE_BASE);
    cJSON_AddItemToArray(layers, own);
    layer_records_lock(b->eng);
    rec = find_locked(b->id);
    if (base != NULL) {
        const cJSON *brec = find_locked(base);
        const cJSON *chain = cJSON_GetObjectItemCaseSensitive(brec, "layers");

        /* The base's layers are there if it is still built, or if this
         * build's record held them all along (blueprints_depend_locked),
         * even through the base's delete. */
        if (brec == NULL ||
            (blueprints_find_locked(base, NULL) != brec &&
             !cJSON_Compare(
                 chain, cJSON_GetObjectItemCaseSensitive(rec, "layers"), 1)))
            rc = -1;
        cJSON_ArrayForEach(it, chain)
            cJSON_AddItemToArray(layers, cJSON_Duplicate(it, 1));
    }
    if (rec != NULL && rc == 0) {
        for (i = 0; keep[i] != NULL; i++) {
            cJSON_DeleteItemFromObjectCaseSensitive(rec, keep[i]);
            it = cJSON_GetObjectItemCaseSensitive(fields, keep[i]);
            if (it != NULL)
                cJSON_AddItemToObject(rec, keep[i], cJSON_Duplicate(it, 1));
        }
        set_str(rec, "base_blueprint_id", base);
        cJSON_DeleteItemFromObjectCaseSensitive(rec, "layers");
        cJSON_AddItemToObject(rec, "layers", layers);
        layers = NULL;
    }
    layer_records_unlock();
    cJSON_Delete(layers);
    free(layer);
    return rc;
}

static uint64_t context_max(const struct engine *eng)
{
    return (uint64_t)(eng->caps.build_context_mb * 1048576.0);
}

/* The build's clock starts: status building, its limits in the log. */
static void start_building(struct build *b)
{
    b->deadline_ms =
        util_now_ms() + (int64_t)(b->eng->caps.build_timeout_s * 1000.0);
    set_status(b, "building", NULL);
    blog(b, "info",
         "limits: %.3g GiB of memory, %.3g CPUs, %.0f s, %.3g GiB of disk "
         "(RLMCP_BUILD_MEMORY_GB, RLMCP_BUILD_CPUS, RLMCP_BUILD_TIMEOUT_S, "
         "RLMCP_BUILD_DISK_GB)",
         b->eng->caps.build_memory_gb, b->eng->caps.build_cpus,
         b->eng->caps.build_timeout_s, b->eng->caps.build_disk_gb);
}

static void build_run_buildah(struct build *b)
{
    struct blueprint_buildah_job j;
    char *ctx = NULL;
    int ok;

    memset(&j, 0, sizeof(j));
    j.id = b->id;
    j.dir = b->dir;
    j.state_dir = b->eng->state_dir;
    j.params = b->params;
    j.context_fd = b->context_fd;
    j.context_max_bytes = context_max(b->eng);
    j.memory_gb = b->eng->caps.build_memory_gb;
    j.cpus = b->eng->caps.build_cpus;
    j.disk_gb = b->eng->caps.build_disk_gb;
    j.log = bb_log;
    j.should_stop = bb_stop;
    j.ctx = b;
    start_building(b);
    ok = blueprint_buildah_run(&j) == 0;
    b->killed = j.killed;
    if (ok && record_buildah(b, j.record) != 0) {
        blog(b, "error",
             "the base blueprint of this build is gone; build it "
             "again FROM a blueprint that exists");
        ok = 0;
    }
    if (ok)
        blog(b, "info", "build complete");
    if (ok)
        set_status(b, "build_complete", NULL);
    else
        set_status(b, "failed", j.out_of_disk ? "out_of_disk" : "build_failed");
    if (asprintf(&ctx, "%s/build", b->dir) >= 0)
        util_rmtree(ctx);
    free(ctx);
    blueprint_buildah_job_free(&j);
}

static void build_run(struct build *b)
{
    blog(b, "info", "build %s queued on the local engine", b->id);
    build_run_buildah(b);
}

static void build_free(struct build *b)
{
    if (b->context_fd >= 0)
        close(b->context_fd);
    free(b->dir);
    cJSON_Delete(b->params);
    free(b);
}

static void unlink_active_locked(struct build *b)
{
    struct build **pp = &active;

    while (*pp != NULL && *pp != b)
        pp = &(*pp)->next_active;
    if (*pp == b)
        *pp = b->next_active;
}

/* Waits for one of the RLMCP_MAX_BUILDS slots, saying in the log how many
 * builds are ahead; 0 when devboxd stops or the blueprint is deleted first. */
static int take_slot(struct build *b, int *cancelled)
{
    unsigned max = b->eng->caps.max_builds;
    int told = 0;
    int run;

    pthread_mutex_lock(&slot_lock);
    while ((slots_used >= (int)max || cleaning) && !stopping && !b->cancelled) {
        if (!told) {
            int waiting = builds_alive - slots_used - 1;

            pthread_mutex_unlock(&slot_lock);
            blog(b, "info",
                 "queued: %u builds run at once (RLMCP_MAX_BUILDS) and %d more "
                 "wait; this one starts when a slot frees",
                 max, waiting);
            pthread_mutex_lock(&slot_lock);
            told = 1;
            continue;
        }
        pthread_cond_wait(&slot_cond, &slot_lock);
    }
    *cancelled = b->cancelled;
    run = !stopping && !b->cancelled;
    if (run)
        slots_used++;
    pthread_mutex_unlock(&slot_lock);
    return run;
}

static void *build_thread(void *arg)
{
    struct build *b = arg;

    int run;
    int cancelled;

    run = take_slot(b, &cancelled);
    if (run) {
        build_run(b);
    } else {
        log_append(b->dir, "error",
                   cancelled ? "the blueprint was deleted before its build ran"
                             : "devboxd stopped before the build ran; build "
                               "it again");
        set_status(b, "failed", "build_failed");
    }
    pthread_mutex_lock(&slot_lock);
    if (run)
        slots_used--;
    if (b->killed)
        store_dirty = 1;
    if (store_dirty && slots_used == 0 && !cleaning) {
        /* No build runs: buildah's leftovers can go. */
        cleaning = 1;
        store_dirty = 0;
        pthread_mutex_unlock(&slot_lock);
        blueprint_buildah_cleanup(b->eng->state_dir);
        pthread_mutex_lock(&slot_lock);
        cleaning = 0;
    }
    builds_alive--;
    unlink_active_locked(b);
    pthread_cond_broadcast(&slot_cond);
    pthread_mutex_unlock(&slot_lock);
    build_free(b);
    return NULL;
}

void blueprints_stop_all(void)
{
    pthread_mutex_lock(&slot_lock);
    __atomic_store_n(&stopping, 1, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&slot_cond);
    while (builds_alive > 0)
        pthread_cond_wait(&slot_cond, &slot_lock);
    __atomic_store_n(&stopping, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&slot_lock);
}

void blueprints_load_locked(struct engine *eng, cJSON *list)
{
    cJSON *rec = NULL;
    int interrupted = 0;

    cJSON_ArrayForEach(rec, list)
    {
        const char *st = util_json_str(rec, "status");
        char *dir = NULL;
        char err[ERRLEN];

        if (st != NULL &&
            (strcmp(st, "build_complete") == 0 || strcmp(st, "failed") == 0))
            continue;
        interrupted++;
        set_str(rec, "status", "failed");
        set_str(rec, "failure_reason", "build_failed");
        cJSON_AddNumberToObject(rec, "build_finish_time_ms",
                                (double)util_now_ms());
        layer_records_save_record("blueprints", "blueprint.json", rec);
        if (asprintf(&dir, "%s/blueprints/%s", layer_records_state_dir(),
                     util_json_str(rec, "id")) < 0)
            continue;
        log_append(dir, "error",
                   "devboxd restarted during the build; build it again");
        free(dir);
        blueprint_buildah_abandon(eng->state_dir, util_json_str(rec, "id"));
        if (asprintf(&dir, "%s/blueprints/%s/sandbox",
                     layer_records_state_dir(), util_json_str(rec, "id")) >= 0)
            sandbox_destroy_dir(dir, err, sizeof(err));
        free(dir);
        if (asprintf(&dir, "%s/blueprints/%s/build", layer_records_state_dir(),
                     util_json_str(rec, "id")) >= 0)
            util_rmtree(dir);
        free(dir);
    }
    /* buildah's working containers (and their mounts) of those builds. */
    if (interrupted > 0)
        blueprint_buildah_cleanup(eng->state_dir);
}

/* -------------------------------------------------------------- create */

static int check_file_mounts(const cJSON *fm, char *err, size_t errlen)
{
    const cJSON *it = NULL;
    size_t total = 0;

    cJSON_ArrayForEach(it, fm)
    {
        size_t len = strlen(it->valuestring);

        if (it->string[0] != '/') {
            snprintf(err, errlen,
                     "file_mounts key \"%s\" must be an absolute path",
                     it->string);
            return -1;
        }
        if (len > MAX_FILE_MOUNT) {
            snprintf(
                err, errlen,
                "file_mounts[\"%s\"] is %zu bytes; keep each file under %d "
                "bytes",
                it->string, len, MAX_FILE_MOUNT);
            return -1;
        }
        total += len;
    }
    if (total > MAX_FILE_MOUNTS) {
        snprintf(err, errlen,
                 "file_mounts hold %zu bytes in all; keep them under %d", total,
                 MAX_FILE_MOUNTS);
        return -1;
    }
    return 0;
}

static int check_setup(const cJSON *cmds, char *err, size_t errlen)
{
    const cJSON *it = NULL;
    size_t total = 0;

    cJSON_ArrayForEach(it, cmds) total += strlen(it->valuestring);
    if (total > MAX_SETUP_BYTES) {
        snprintf(err, errlen,
                 "system_setup_commands hold %zu bytes; keep them under %d",
                 total, MAX_SETUP_BYTES);
        return -1;
    }
    return 0;
}

static int check_launch(const cJSON *body, char *err, size_t errlen)
{
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(body, "launch_parameters");
    cJSON *probe = NULL;
    cJSON *spec = NULL;
    int status;

    if (lp == NULL || cJSON_IsNull(lp))
        return 0;
    probe = cJSON_CreateObject();
    cJSON_AddItemToObject(probe, "launch_parameters", cJSON_Duplicate(lp, 1));
    spec = devbox_spec_validate(probe, &status, err, errlen);
    cJSON_Delete(probe);
    if (spec == NULL)
        return -1;
    cJSON_Delete(spec);
    return 0;
}

static int check_create(const cJSON *body, char *err, size_t errlen)
{
    static const char *const fields[] = {
        "name",
        "dockerfile",
        "system_setup_commands",
        "file_mounts",
        "launch_parameters",
        "base_blueprint_id",
        "base_blueprint_name",
        "build_args",
        "metadata",
        "code_mounts",
        "build_context",
        "secrets",
        "services",
        "network_policy_id",
        NULL,
    };
    static const char *const never[] = {"secrets", "services",
                                        "network_policy_id", NULL};
    const char *s = NULL;
    const cJSON *m = NULL;
    size_t i;

    if (util_check_fields(body, "", fields, err, errlen) != 0 ||
        code_mounts_check(body, err, errlen) != 0)
        return -1;
    for (i = 0; never[i] != NULL; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, never[i]);

        if (v != NULL && !cJSON_IsNull(v) &&
            !(cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0)) {
            snprintf(err, errlen,
                     "'%s' is not supported by the local engine; remove it "
                     "(give files inline in file_mounts)",
                     never[i]);
            return -1;
        }
    }
    if (util_opt_string(body, "name", &s, err, errlen) != 0)
        return -1;
    if (s == NULL || s[0] == '\0' || strlen(s) > 256) {
        snprintf(err, errlen,
                 "name is required: a string of 1 to 256 characters");
        return -1;
    }
    if (util_opt_string(body, "dockerfile", &s, err, errlen) != 0)
        return -1;
    if (s != NULL && strlen(s) > BD_DOCKERFILE_MAX) {
        snprintf(err, errlen, "dockerfile is over %u bytes", BD_DOCKERFILE_MAX);
        return -1;
    }
    if (util_opt_string_array(body, "system_setup_commands", &m, err, errlen) !=
            0 ||
        check_setup(m, err, errlen) != 0 ||
        util_opt_string_map(body, "file_mounts", &m, err, errlen) != 0 ||
        check_file_mounts(m, err, errlen) != 0 ||
        util_opt_string_map(body, "build_args", &m, err, errlen) != 0 ||
        util_opt_string_map(body, "metadata", &m, err, errlen) != 0 ||
        util_opt_string(body, "base_blueprint_id", &s, err, errlen) != 0 ||
        util_opt_string(body, "base_blueprint_name", &s, err, errlen) != 0)
        return -1;
    return check_launch(body, err, errlen);
}

/* Registry lock held: finds the base named by the body; 0 or an HTTP status. */
static int resolve_base_locked(const cJSON *body, const cJSON **base, char *err,
                               size_t errlen)
{
    const char *id = util_json_str(body, "base_blueprint_id");
    const char *name = util_json_str(body, "base_blueprint_name");

    *base = NULL;
    if (id != NULL && id[0] == '\0')
        id = NULL;
    if (name != NULL && name[0] == '\0')
        name = NULL;
    if (id != NULL && name != NULL) {
        snprintf(err, errlen,
                 "set only one of base_blueprint_id and base_blueprint_name");
        return 400;
    }
    if (id == NULL && name == NULL)
        return 0;
    if (id == NULL) {
        /* An image name (Runloop's public names, devboxd's own), mapped as
         * devbox create maps it: the build resolves it as its FROM. */
        const char *image = NULL;
        int pub = images_public_name(name, &image, err, errlen);

        if (pub < 0)
            return 400;
        if (pub > 0)
            return 0;
        if (blueprints_find_locked(NULL, name) == NULL &&
            images_builtin_name(name, &image))
            return 0;
    }
    *base = blueprints_find_locked(id, name);
    if (*base == NULL) {
        snprintf(err, errlen,
                 "base blueprint %s has no successful build; list the "
                 "blueprints to see which built",
                 id != NULL ? id : name);
        return id != NULL ? 404 : 400;
    }
    return 0;
}

static int spawn_build(struct build *b)
{
    int rc;

    pthread_mutex_lock(&slot_lock);
    builds_alive++;
    b->next_active = active;
    active = b;
    pthread_mutex_unlock(&slot_lock);
    rc = util_thread_detached(build_thread, b, 512 * 1024);
    if (rc != 0) {
        pthread_mutex_lock(&slot_lock);
        builds_alive--;
        unlink_active_locked(b);
        pthread_mutex_unlock(&slot_lock);
    }
    return rc;
}

/* A build context's storage object (build_context_open_fn). */
static int open_object(void *ud, const char *id, char *err, size_t errlen)
{
    return objects_open(ud, id, err, errlen);
}

int blueprints_create(struct engine *eng, const cJSON *body, cJSON **view,
                      char *err, size_t errlen)
{
    cJSON *rec = NULL;
    const cJSON *base = NULL;
    struct build *b = NULL;
    int context_fd = -1;
    int status = 0;

    *view = NULL;
    if (check_create(body, err, errlen) != 0)
        return 400;
    if (blueprint_buildah_available(err, errlen) != 0)
        return 503;
    /* An unknown base_blueprint_id stays a 404. */
    layer_records_lock(eng);
    status = resolve_base_locked(body, &base, err, errlen);
    layer_records_unlock();
    if (status != 0)
        return status;
    if (blueprint_buildah_check(body, err, errlen) != 0)
        return 400;
    /* Checked whole now (a bad archive is a 400) and kept open: the build
     * gets these bytes even if the object is deleted meanwhile. */
    if (build_context_open(body, context_max(eng), open_object, eng,
                           &context_fd, err, errlen) != 0)
        return 400;
    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        if (context_fd >= 0)
            close(context_fd);
        goto oom;
    }
    b->context_fd = context_fd;
    b->eng = eng;
    util_new_id("bpt", b->id, sizeof(b->id));
    if (asprintf(&b->dir, "%s/blueprints/%s", eng->state_dir, b->id) < 0) {
        b->dir = NULL;
        goto oom;
    }
    b->params = cJSON_Duplicate(body, 1);
    if (b->params == NULL)
        goto oom;
    layer_records_lock(eng);
    status = resolve_base_locked(body, &base, err, errlen);
    if (status != 0) {
        layer_records_unlock();
        goto out;
    }
    rec = cJSON_CreateObject();
    cJSON_AddStringToObject(rec, "id", b->id);
    cJSON_AddStringToObject(rec, "name", util_json_str(body, "name"));
    cJSON_AddStringToObject(rec, "status", "provisioning");
    cJSON_AddStringToObject(rec, "state", "created");
    cJSON_AddNumberToObject(rec, "create_time_ms", (double)util_now_ms());
    cJSON_AddItemToObject(rec, "parameters", cJSON_Duplicate(body, 1));
    /* A token serves the build's clone only: never shown or stored. */
    code_mounts_redact(cJSON_GetObjectItemCaseSensitive(rec, "parameters"));
    util_mkdirs(b->dir);
    cJSON_InsertItemInArray(layer_records_blueprints_locked(), 0, rec);
    if (base != NULL) {
        blueprints_depend_locked(b->id, base); /* saves the record */
    } else {
        layer_records_save_record("blueprints", "blueprint.json", rec);
    }
    *view = bp_view(rec);
    layer_records_unlock();
    if (spawn_build(b) != 0) {
        log_append(b->dir, "error", "cannot start the build worker");
        set_status(b, "failed", "build_failed");
        build_free(b);
    }
    b = NULL;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
    status = 500;
out:
    if (b != NULL)
        build_free(b);
    return status;
}

/* ------------------------------------------------------------- records */

static int not_found(const char *id, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "blueprint %s not found; list the blueprints to see which exist",
             id);
    return 404;
}

cJSON *blueprints_view(const cJSON *rec)
{
    return bp_view(rec);
}

int blueprints_listed(const cJSON *rec, const char *name, const char *status)
{
    if (strcmp(util_json_str(rec, "state"), "created") != 0)
        return 0;
    if (name != NULL && name[0] != '\0' &&
        strcmp(util_json_str(rec, "name"), name) != 0)
        return 0;
    if (status != NULL && status[0] != '\0' &&
        strcmp(util_json_str(rec, "status"), status) != 0)
        return 0;
    return 1;
}

/* Docker's tag rule: a word character, then up to 127 of [A-Za-z0-9_.-]. */
static int tag_ok(const char *t)
{
    size_t n = strlen(t);
    size_t i;

    if (n == 0 || n > 128 || t[0] == '.' || t[0] == '-')
        return 0;
    for (i = 0; i < n; i++) {
        char c = t[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

/* Registry lock held: rec without tag (saved); 0 or -1. */
static int drop_tag_locked(cJSON *rec, const char *tag)
{
    cJSON *tags = cJSON_GetObjectItemCaseSensitive(rec, "tags");
    int i;

    for (i = cJSON_GetArraySize(tags) - 1; i >= 0; i--) {
        const cJSON *it = cJSON_GetArrayItem(tags, i);

        if (cJSON_IsString(it) && strcmp(it->valuestring, tag) == 0) {
            cJSON_DeleteItemFromArray(tags, i);
            return layer_records_save_record("blueprints", "blueprint.json",
                                             rec);
        }
    }
    return 0;
}

int blueprints_tag(struct engine *eng, const char *id, const char *tag,
                   cJSON **view, char *err, size_t errlen)
{
    cJSON *rec = NULL;
    cJSON *other = NULL;
    cJSON *tags = NULL;
    const char *name = NULL;
    int status = 0;

    *view = NULL;
    if (!tag_ok(tag)) {
        snprintf(err, errlen,
                 "tag \"%.130s\" is not valid: 1-128 of A-Z a-z 0-9 _ . -, not "
                 "starting with . or -",
                 tag);
        return 400;
    }
    layer_records_lock(eng);
    rec = find_locked(id);
    if (rec == NULL || strcmp(util_json_str(rec, "state"), "created") != 0) {
        status = not_found(id, err, errlen);
        goto out;
    }
    if (strcmp(util_json_str(rec, "status"), "build_complete") != 0) {
        snprintf(err, errlen,
                 "blueprint %s is %s: only a completed build can be tagged "
                 "(wait for build_complete)",
                 id, util_json_str(rec, "status"));
        status = 400;
        goto out;
    }
    name = util_json_str(rec, "name");
    /* One build of a name carries a tag: the others lose it. */
    cJSON_ArrayForEach(other, layer_records_blueprints_locked())
    {
        const char *oname = util_json_str(other, "name");

        if (other == rec || oname == NULL || strcmp(oname, name) != 0)
            continue;
        if (drop_tag_locked(other, tag) != 0) {
            status = 507;
            goto out;
        }
    }
    if (!has_tag(rec, tag)) {
        tags = cJSON_GetObjectItemCaseSensitive(rec, "tags");
        if (!cJSON_IsArray(tags)) {
            cJSON_DeleteItemFromObjectCaseSensitive(rec, "tags");
            tags = cJSON_AddArrayToObject(rec, "tags");
        }
        cJSON_AddItemToArray(tags, cJSON_CreateString(tag));
        if (layer_records_save_record("blueprints", "blueprint.json", rec) !=
            0) {
            drop_tag_locked(rec, tag);
            status = 507;
            goto out;
        }
    }
    *view = bp_view(rec);
out:
    if (status == 507)
        snprintf(err, errlen,
                 "devboxd could not save the tag to its state directory; "
                 "nothing was acknowledged, retry once the state disk is "
                 "writable");
    layer_records_unlock();
    return status;
}

int blueprints_get(struct engine *eng, const char *id, cJSON **view, char *err,
                   size_t errlen)
{
    cJSON *rec = NULL;
    int status = 0;

    layer_records_lock(eng);
    rec = find_locked(id);
    if (rec != NULL)
        *view = bp_view(rec);
    else
        status = not_found(id, err, errlen);
    layer_records_unlock();
    return status;
}

static struct build *find_active_locked(const char *id)
{
    struct build *b = active;

    while (b != NULL && strcmp(b->id, id) != 0)
        b = b->next_active;
    return b;
}

/* Stops the build of id, queued or running (its step is killed at once),
 * and waits up to timeout_ms for it to end: 0 once no build of id runs. */
static int cancel_build(const char *id, int timeout_ms)
{
    struct build *b = NULL;
    struct timespec ts;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    pthread_mutex_lock(&slot_lock);
    b = find_active_locked(id);
    if (b != NULL)
        b->cancelled = 1;
    pthread_cond_broadcast(&slot_cond); /* a queued one leaves the queue */
    while (rc == 0 && find_active_locked(id) != NULL)
        rc = pthread_cond_timedwait(&slot_cond, &slot_lock, &ts);
    b = find_active_locked(id);
    pthread_mutex_unlock(&slot_lock);
    return b == NULL ? 0 : -1;
}

int blueprints_delete(struct engine *eng, const char *id, char *err,
                      size_t errlen)
{
    cJSON *rec = NULL;
    const char *st = NULL;
    char *layer = NULL;
    cJSON *freed = NULL;
    int status = 0;

    /* Deleting a blueprint whose build is queued or running ends the build
     * first: no slot, memory or CPU is held for a blueprint nobody wants. */
    if (cancel_build(id, CANCEL_WAIT_MS) != 0) {
        snprintf(err, errlen,
                 "the build of blueprint %s did not stop within %d s; try the "
                 "delete again",
                 id, CANCEL_WAIT_MS / 1000);
        return 503;
    }
    layer_records_lock(eng);
    rec = find_locked(id);
    if (rec == NULL) {
        status = not_found(id, err, errlen);
        goto out;
    }
    st = util_json_str(rec, "status");
    if (strcmp(util_json_str(rec, "state"), "deleted") == 0)
        goto out;
    if (strcmp(st, "build_complete") != 0 && strcmp(st, "failed") != 0) {
        /* Only a build created after the cancel above can be here. */
        snprintf(err, errlen,
                 "blueprint %s is %s: its build is just starting; delete it "
                 "again in a moment",
                 id, st);
        status = 409;
        goto out;
    }
    if (asprintf(&layer, "%s/blueprints/%s/layer", eng->state_dir, id) < 0) {
        layer = NULL;
        snprintf(err, errlen, "out of memory");
        status = 500;
        goto out;
    }
    /* Devboxes running on its files keep its layer (they mount it) until
     * they end; then the last one frees it (engine_release_layers). */
    /* The tombstone is on disk before any file goes: a kill in between
     * leaves a layer nothing references, which the next start frees. */
    set_str(rec, "state", "deleted");
    if (layer_records_save_record("blueprints", "blueprint.json", rec) != 0) {
        set_str(rec, "state", "created");
        snprintf(err, errlen,
                 "cannot record the delete of blueprint %s (writing the state "
                 "dir failed); try again",
                 id);
        status = 500;
        goto out;
    }
    /* No more sandboxes ahead on its chain. */
    pthread_mutex_lock(&eng->lock);
    warm_pool_forget_locked(eng,
                            cJSON_GetObjectItemCaseSensitive(rec, "layers"));
    pthread_mutex_unlock(&eng->lock);
    /* Its layer (and deleted ones under it) go unless snapshots or other
     * blueprints are built on them; the buildah image goes with it. */
    freed = layers_release_locked(
        cJSON_GetObjectItemCaseSensitive(rec, "layers"), layer);
out:
    layer_records_unlock();
    /* buildah waits on its store's lock: never with the registry held,
     * which every create, snapshot and build needs. */
    layers_free(freed);
    free(layer);
    return status;
}

int blueprints_log_open(struct engine *eng, const char *id, FILE **log,
                        char *err, size_t errlen)
{
    char *path = NULL;
    int known;

    *log = NULL;
    layer_records_lock(eng);
    known = find_locked(id) != NULL;
    layer_records_unlock();
    if (!known)
        return not_found(id, err, errlen);
    if (asprintf(&path, "%s/blueprints/%s/logs.jsonl", eng->state_dir, id) <
        0) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    *log = fopen(path, "re");
    free(path);
    return 0;
}
