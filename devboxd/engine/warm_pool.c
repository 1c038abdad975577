/* devboxd warm pool (warm_pool.h). */
#define _GNU_SOURCE
#include "warm_pool.h"

#include "engine.h"
#include "images.h"
#include "sandbox.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POOL_MAX 8
#define POOL_RETRY_MS 30000
#define POOL_IMAGE_WAIT_MS 5000

enum entry_state { ENTRY_STARTING, ENTRY_READY, ENTRY_FAILED };

struct pool_entry {
    char id[40];
    struct sandbox *sb;
    enum entry_state state;
    int claimed;
    struct pool_entry *next;
};

struct warm_pool {
    int size;
    pthread_t thread;
    struct pool_entry *entries;
    int64_t retry_at_ms; /* no start before this, after a failed one */
};

int warm_pool_size(char *err, size_t errlen)
{
    const char *v = getenv("RLMCP_WARM_POOL");
    char *end = NULL;
    long n;

    if (v == NULL || v[0] == '\0')
        return 1;
    errno = 0;
    n = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || n < 0 || n > POOL_MAX) {
        snprintf(
            err, errlen,
            "RLMCP_WARM_POOL=%s: give the number of sandboxes to start ahead, "
            "0 to %d (0 turns the warm pool off)",
            v, POOL_MAX);
        return -1;
    }
    return (int)n;
}

/* Whether spec asks for nothing the pool's sandboxes lack. */
static int is_plain(const cJSON *spec)
{
    const cJSON *lp =
        cJSON_GetObjectItemCaseSensitive(spec, "launch_parameters");
    const char *image = util_json_str(spec, "_image");
    struct sb_limits mine, plain;
    double cpus, mem, disk;

    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
            spec, "environment_variables")) > 0 ||
        cJSON_GetArraySize(
            cJSON_GetObjectItemCaseSensitive(spec, "_secret_env")) > 0 ||
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(spec, "_layers")) >
            0 ||
        cJSON_GetObjectItemCaseSensitive(lp, "user_parameters") != NULL)
        return 0;
    if (image != NULL && strcmp(image, images_default()) != 0)
        return 0;
    if (engine_spec_network(spec) != engine_spec_network(NULL))
        return 0;
    engine_spec_limits(spec, &mine, &cpus, &mem, &disk);
    engine_spec_limits(NULL, &plain, &cpus, &mem, &disk);
    return mine.cpu_millis == plain.cpu_millis &&
           mine.memory_bytes == plain.memory_bytes &&
           mine.disk_bytes == plain.disk_bytes;
}

static int unclaimed_locked(const struct warm_pool *pool)
{
    const struct pool_entry *e;
    int n = 0;

    for (e = pool->entries; e != NULL; e = e->next) {
        if (!e->claimed && e->state != ENTRY_FAILED)
            n++;
    }
    return n;
}

static void unlink_locked(struct warm_pool *pool, struct pool_entry *gone)
{
    struct pool_entry **pp;

    for (pp = &pool->entries; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == gone) {
            *pp = gone->next;
            return;
        }
    }
}

/* An entry's files: its sandbox dir (disk, uid range) and, unless a devbox
 * took its id, the devbox dir. */
static void remove_files(struct engine *eng, const char *id, int whole)
{
    char err[256] = "";
    char *dir = engine_sandbox_dir(eng, id);

    if (dir != NULL && access(dir, F_OK) == 0 &&
        sandbox_destroy_dir(dir, err, sizeof(err)) != 0)
        fprintf(stderr, "devboxd: warm pool: %s: %s\n", id, err);
    free(dir);
    if (!whole)
        return;
    dir = engine_box_dir(eng, id);
    if (dir != NULL)
        util_rmtree(dir);
    free(dir);
}

/* Starts e's sandbox (no lock held). */
static int start_entry(struct engine *eng, struct pool_entry *e,
                       struct sandbox **sb, char *err, size_t errlen)
{
    cJSON *spec = cJSON_CreateObject();
    char *dir = engine_box_dir(eng, e->id);
    int rc = -1;

    if (spec == NULL || dir == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (util_mkdirs(dir) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
        goto out;
    }
    rc = engine_sandbox_start(eng, e->id, spec, NULL, sb, err, errlen);
out:
    cJSON_Delete(spec);
    free(dir);
    return rc;
}

/* eng->lock held (released meanwhile): starts one entry. */
static void fill_one_locked(struct engine *eng, struct warm_pool *pool)
{
    struct pool_entry *e = calloc(1, sizeof(*e));
    struct sandbox *sb = NULL;
    char err[512] = "";
    int rc;

    if (e == NULL) {
        pool->retry_at_ms = util_now_ms() + POOL_RETRY_MS;
        return;
    }
    util_new_id("dbx", e->id, sizeof(e->id));
    e->state = ENTRY_STARTING;
    e->next = pool->entries;
    pool->entries = e;
    pthread_mutex_unlock(&eng->lock);
    rc = start_entry(eng, e, &sb, err, sizeof(err));
    if (rc != 0)
        remove_files(eng, e->id, 0);
    pthread_mutex_lock(&eng->lock);
    if (rc == 0) {
        e->sb = sb;
        e->state = ENTRY_READY;
    } else {
        fprintf(stderr,
                "devboxd: warm pool: cannot start a sandbox ahead (next try in "
                "%d s): %s\n",
                POOL_RETRY_MS / 1000, err);
        e->state = ENTRY_FAILED;
        pool->retry_at_ms = util_now_ms() + POOL_RETRY_MS;
        /* A claimed entry stays for its devbox's boot worker to collect. */
        if (!e->claimed) {
            unlink_locked(pool, e);
            pthread_mutex_unlock(&eng->lock);
            remove_files(eng, e->id, 1);
            free(e);
            pthread_mutex_lock(&eng->lock);
        }
    }
    pthread_cond_broadcast(&eng->changed);
}

static void *pool_thread(void *arg)
{
    struct engine *eng = arg;
    struct warm_pool *pool = eng->pool;
    bool built;

    pthread_mutex_lock(&eng->lock);
    while (!eng->stopping) {
        int64_t now = util_now_ms();

        if (unclaimed_locked(pool) >= pool->size || now < pool->retry_at_ms) {
            engine_wait_locked(eng, now < pool->retry_at_ms ? pool->retry_at_ms
                                                            : now + 60000);
            continue;
        }
        /* The pool never builds an image (minutes, which a stop would wait
         * for): it starts once a devbox had the image built, or scripts/run
         * did. */
        pthread_mutex_unlock(&eng->lock);
        built = images_built(NULL);
        pthread_mutex_lock(&eng->lock);
        if (!built) {
            pool->retry_at_ms = util_now_ms() + POOL_IMAGE_WAIT_MS;
            continue;
        }
        fill_one_locked(eng, pool);
    }
    pthread_mutex_unlock(&eng->lock);
    return NULL;
}

int warm_pool_start(struct engine *eng, char *err, size_t errlen)
{
    struct warm_pool *pool = NULL;
    int size = warm_pool_size(err, errlen);

    if (size <= 0)
        return size;
    pool = calloc(1, sizeof(*pool));
    if (pool == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pool->size = size;
    eng->pool = pool;
    if (pthread_create(&pool->thread, NULL, pool_thread, eng) != 0) {
        eng->pool = NULL;
        free(pool);
        snprintf(err, errlen, "cannot start the warm pool's thread");
        return -1;
    }
    return 0;
}

void warm_pool_stop(struct engine *eng)
{
    struct warm_pool *pool = eng->pool;
    struct pool_entry *e;
    struct pool_entry *next;

    if (pool == NULL)
        return;
    pthread_mutex_lock(&eng->lock);
    eng->stopping = 1;
    pthread_cond_broadcast(&eng->changed);
    pthread_mutex_unlock(&eng->lock);
    pthread_join(pool->thread, NULL);
    eng->pool = NULL;
    /* Unclaimed entries, and claimed ones no boot worker took (a devbox
     * whose worker could not start). */
    for (e = pool->entries; e != NULL; e = next) {
        next = e->next;
        if (e->sb != NULL)
            sandbox_release(e->sb);
        remove_files(eng, e->id, !e->claimed);
        free(e);
    }
    free(pool);
}

int warm_pool_claim_locked(struct engine *eng, const cJSON *spec, char *id,
                           size_t idlen)
{
    struct warm_pool *pool = eng->pool;
    struct pool_entry *pick = NULL;
    struct pool_entry *e;

    if (pool == NULL || eng->stopping || !is_plain(spec))
        return 0;
    /* A ready sandbox first; else the one starting now. */
    for (e = pool->entries; e != NULL; e = e->next) {
        if (e->claimed || e->state == ENTRY_FAILED)
            continue;
        if (pick == NULL || e->state == ENTRY_READY)
            pick = e;
    }
    if (pick == NULL || idlen <= strlen(pick->id))
        return 0;
    pick->claimed = 1;
    snprintf(id, idlen, "%s", pick->id);
    pthread_cond_broadcast(&eng->changed); /* the thread starts the next */
    return 1;
}

static struct pool_entry *find_locked(struct warm_pool *pool, const char *id)
{
    struct pool_entry *e;

    for (e = pool != NULL ? pool->entries : NULL; e != NULL; e = e->next) {
        if (strcmp(e->id, id) == 0)
            return e;
    }
    return NULL;
}

int warm_pool_unclaim_locked(struct engine *eng, const char *id)
{
    struct pool_entry *e = find_locked(eng->pool, id);

    if (e == NULL || e->state == ENTRY_FAILED) {
        /* Its start failed (and removed its sandbox): nothing to keep. */
        if (e != NULL) {
            unlink_locked(eng->pool, e);
            free(e);
        }
        return 1;
    }
    e->claimed = 0;
    return 0;
}

struct sandbox *warm_pool_adopt(struct engine *eng, const char *id)
{
    struct pool_entry *e = NULL;
    struct sandbox *sb = NULL;

    pthread_mutex_lock(&eng->lock);
    e = find_locked(eng->pool, id);
    /* Bounded by one sandbox start: the pool's thread always ends it. */
    while (e != NULL && e->state == ENTRY_STARTING)
        pthread_cond_wait(&eng->changed, &eng->lock);
    if (e != NULL) {
        sb = e->state == ENTRY_READY ? e->sb : NULL;
        unlink_locked(eng->pool, e);
        free(e);
        pthread_cond_broadcast(&eng->changed);
    }
    pthread_mutex_unlock(&eng->lock);
    return sb;
}

void warm_pool_remove_orphans(struct engine *eng)
{
    char *dir = NULL;
    DIR *d = NULL;
    struct dirent *de;

    if (asprintf(&dir, "%s/devboxes", eng->state_dir) < 0)
        return;
    d = opendir(dir);
    while (d != NULL && (de = readdir(d)) != NULL) {
        char path[4200];
        int rc;

        if (strncmp(de->d_name, "dbx_", 4) != 0 || strlen(de->d_name) >= 40)
            continue;
        snprintf(path, sizeof(path), "%s/%s/devbox.json", dir, de->d_name);
        if (access(path, F_OK) == 0 || errno != ENOENT)
            continue;
        rc = sandbox_purge(de->d_name);
        if (rc < 0)
            fprintf(stderr, "devboxd: %s: cannot empty its cgroups: %s\n",
                    de->d_name, strerror(-rc));
        remove_files(eng, de->d_name, 1);
        fprintf(
            stderr,
            "devboxd: removed %s/%s: a sandbox started ahead or a create never "
            "acknowledged, left by a devboxd that did not stop cleanly\n",
            dir, de->d_name);
    }
    if (d != NULL)
        closedir(d);
    free(dir);
}
