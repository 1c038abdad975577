/* devboxd warm pool (warm_pool.h). */
#define _GNU_SOURCE
#include "warm_pool.h"

#include "engine.h"
#include "images.h"
#include "layer_records.h"
#include "layers.h"
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

#define POOL_RETRY_MS 30000
#define POOL_IMAGE_WAIT_MS 5000
/* Layer chains (snapshots, blueprints) kept warm at once, one sandbox each:
 * the ones devboxes were last created from. */
#define POOL_HOT_MAX 2

/* RELEASING: the thread is removing the entry's sandbox; it stays listed
 * (and its layers referenced, warm_pool_refs_locked) until that is done. */
enum entry_state { ENTRY_STARTING, ENTRY_READY, ENTRY_FAILED, ENTRY_RELEASING };

/* What a sandbox is started for: the plain devbox (layers NULL), or the
 * plain devbox on a layer chain and image (a hot snapshot or blueprint). */
struct pool_key {
    cJSON *layers; /* the spec's "_layers", or NULL */
    char *image;   /* the spec's "_image", or NULL (the default) */
};

struct pool_entry {
    char id[40];
    struct sandbox *sb;
    enum entry_state state;
    int claimed;
    struct pool_key key;
    struct pool_entry *next;
};

struct warm_pool {
    int size;
    pthread_t thread;
    struct pool_entry *entries;
    int64_t retry_at_ms; /* no start before this, after a failed one */
    struct pool_key hot[POOL_HOT_MAX]; /* most recently asked first */
    int n_hot;
};

static void key_free(struct pool_key *k)
{
    cJSON_Delete(k->layers);
    free(k->image);
    k->layers = NULL;
    k->image = NULL;
}

static int key_copy(struct pool_key *dst, const struct pool_key *src)
{
    dst->layers = src->layers != NULL ? cJSON_Duplicate(src->layers, 1) : NULL;
    dst->image = src->image != NULL ? strdup(src->image) : NULL;
    if ((src->layers != NULL && dst->layers == NULL) ||
        (src->image != NULL && dst->image == NULL)) {
        key_free(dst);
        return -1;
    }
    return 0;
}

/* The image a spec names, NULL for the default one. */
static const char *spec_image(const cJSON *spec)
{
    const char *image = util_json_str(spec, "_image");

    return image != NULL && strcmp(image, images_default()) != 0 ? image : NULL;
}

static int key_matches(const struct pool_key *k, const cJSON *layers,
                       const char *image)
{
    if ((k->layers == NULL) != (layers == NULL))
        return 0;
    if (k->layers != NULL && !cJSON_Compare(k->layers, layers, 1))
        return 0;
    if ((k->image == NULL) != (image == NULL))
        return 0;
    return k->image == NULL || strcmp(k->image, image) == 0;
}

/* Whether spec asks for nothing the pool's sandboxes lack, but for its
 * layer chain and image (the entry's key). */
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
        cJSON_GetObjectItemCaseSensitive(lp, "user_parameters") != NULL)
        return 0;
    /* Another image without layers: a sandbox on it is never started ahead. */
    if (image != NULL && strcmp(image, images_default()) != 0 &&
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(spec, "_layers")) ==
            0)
        return 0;
    if (engine_spec_network(spec) != engine_spec_network(NULL))
        return 0;
    engine_spec_limits(spec, &mine, &cpus, &mem, &disk);
    engine_spec_limits(NULL, &plain, &cpus, &mem, &disk);
    return mine.cpu_millis == plain.cpu_millis &&
           mine.memory_bytes == plain.memory_bytes &&
           mine.disk_bytes == plain.disk_bytes;
}

/* Unclaimed entries of key k (k NULL: the plain ones). */
static int unclaimed_locked(const struct warm_pool *pool,
                            const struct pool_key *k)
{
    const struct pool_entry *e;
    int n = 0;

    for (e = pool->entries; e != NULL; e = e->next) {
        if (e->claimed || e->state == ENTRY_FAILED ||
            e->state == ENTRY_RELEASING)
            continue;
        if (k == NULL ? e->key.layers == NULL
                      : key_matches(&e->key, k->layers, k->image))
            n++;
    }
    return n;
}

/* The hot chain without a sandbox ahead, or NULL. */
static const struct pool_key *cold_hot_locked(const struct warm_pool *pool)
{
    int i;

    for (i = 0; i < pool->n_hot; i++) {
        if (unclaimed_locked(pool, &pool->hot[i]) == 0)
            return &pool->hot[i];
    }
    return NULL;
}

/* An unclaimed entry whose chain is no longer hot (replaced by others, or
 * its layers deleted), ready or failed: the thread removes it. */
static struct pool_entry *stale_locked(const struct warm_pool *pool)
{
    struct pool_entry *e;
    int i;

    for (e = pool->entries; e != NULL; e = e->next) {
        int hot = 0;

        if (e->claimed || e->state == ENTRY_STARTING ||
            e->state == ENTRY_RELEASING || e->key.layers == NULL)
            continue;
        for (i = 0; i < pool->n_hot && !hot; i++)
            hot = key_matches(&pool->hot[i], e->key.layers, e->key.image);
        if (!hot)
            return e;
    }
    return NULL;
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

/* Starts e's sandbox (no lock held; e->key is not changed meanwhile). */
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
    if (e->key.layers != NULL &&
        !cJSON_AddItemToObject(spec, "_layers",
                               cJSON_Duplicate(e->key.layers, 1))) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (e->key.image != NULL &&
        cJSON_AddStringToObject(spec, "_image", e->key.image) == NULL) {
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

/* Drops the hot chains equal to layers (any image); the thread then
 * removes their sandboxes. */
static void forget_hot_locked(struct warm_pool *pool, const cJSON *layers)
{
    int i = 0;

    while (i < pool->n_hot) {
        if (!cJSON_Compare(pool->hot[i].layers, layers, 1)) {
            i++;
            continue;
        }
        key_free(&pool->hot[i]);
        memmove(&pool->hot[i], &pool->hot[i + 1],
                (size_t)(pool->n_hot - i - 1) * sizeof(pool->hot[0]));
        pool->n_hot--;
    }
}

static void entry_free(struct pool_entry *e)
{
    key_free(&e->key);
    free(e);
}

int warm_pool_refs_locked(struct engine *eng, const char *path)
{
    const struct pool_entry *e;
    int n = 0;

    for (e = eng->pool != NULL ? eng->pool->entries : NULL; e != NULL;
         e = e->next) {
        if (e->state != ENTRY_STARTING && e->sb == NULL)
            continue;
        if (layers_chain_has(e->key.layers, path))
            n++;
    }
    return n;
}

/* eng->lock not held, once an entry on layers left the pool (its sandbox
 * released): the layers only it kept (their snapshot or blueprint was
 * deleted meanwhile) go now. */
static void release_chain(struct engine *eng, const cJSON *layers)
{
    cJSON *freed = NULL;

    if (cJSON_GetArraySize(layers) == 0)
        return;
    layer_records_lock(eng);
    freed = layers_release_locked(layers, NULL);
    layer_records_unlock();
    layers_free(freed);
}

/* eng->lock held (released meanwhile): starts one entry for key k (NULL:
 * a plain one). */
static void fill_one_locked(struct engine *eng, struct warm_pool *pool,
                            const struct pool_key *k)
{
    struct pool_entry *e = calloc(1, sizeof(*e));
    struct sandbox *sb = NULL;
    char err[512] = "";
    int rc;

    if (e == NULL || (k != NULL && key_copy(&e->key, k) != 0)) {
        free(e);
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
    } else if (e->key.layers != NULL) {
        /* Its layers, not the runtime: the chain is no longer kept warm. */
        fprintf(stderr,
                "devboxd: warm pool: cannot start a sandbox ahead on a "
                "snapshot's or blueprint's layers (no longer kept warm): %s\n",
                err);
        e->state = ENTRY_FAILED;
        forget_hot_locked(pool, e->key.layers);
    } else {
        fprintf(stderr,
                "devboxd: warm pool: cannot start a sandbox ahead (next try in "
                "%d s): %s\n",
                POOL_RETRY_MS / 1000, err);
        e->state = ENTRY_FAILED;
        pool->retry_at_ms = util_now_ms() + POOL_RETRY_MS;
    }
    if (rc != 0) {
        /* A claimed entry stays for its devbox's boot worker to collect. */
        if (!e->claimed) {
            unlink_locked(pool, e);
            pthread_mutex_unlock(&eng->lock);
            remove_files(eng, e->id, 1);
            release_chain(eng, e->key.layers);
            entry_free(e);
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
        struct pool_entry *stale = stale_locked(pool);
        const struct pool_key *hot = NULL;

        if (stale != NULL) {
            /* Listed until its sandbox is gone: a snapshot delete or a
             * devbox's end meanwhile must not free the layers under it. */
            stale->state = ENTRY_RELEASING;
            pthread_mutex_unlock(&eng->lock);
            if (stale->sb != NULL)
                sandbox_release(stale->sb);
            remove_files(eng, stale->id, 1);
            pthread_mutex_lock(&eng->lock);
            unlink_locked(pool, stale);
            pthread_mutex_unlock(&eng->lock);
            release_chain(eng, stale->key.layers);
            entry_free(stale);
            pthread_mutex_lock(&eng->lock);
            continue;
        }
        /* The plain devbox first, then the hot chains. */
        if (unclaimed_locked(pool, NULL) >= pool->size)
            hot = cold_hot_locked(pool);
        if ((unclaimed_locked(pool, NULL) >= pool->size && hot == NULL) ||
            now < pool->retry_at_ms) {
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
        /* The hot list may have changed while unlocked: look again. */
        hot = unclaimed_locked(pool, NULL) >= pool->size ? cold_hot_locked(pool)
                                                         : NULL;
        if (unclaimed_locked(pool, NULL) >= pool->size && hot == NULL)
            continue;
        fill_one_locked(eng, pool, hot);
    }
    pthread_mutex_unlock(&eng->lock);
    return NULL;
}

int warm_pool_start(struct engine *eng, char *err, size_t errlen)
{
    struct warm_pool *pool = NULL;
    int size = eng->settings.warm_pool;

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
    int i;

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
        entry_free(e);
    }
    for (i = 0; i < pool->n_hot; i++)
        key_free(&pool->hot[i]);
    free(pool);
}

/* Makes the chain of layers/image the hottest (added, or moved first;
 * the coldest goes when the list is full). */
static void mark_hot_locked(struct engine *eng, struct warm_pool *pool,
                            const cJSON *layers, const char *image)
{
    struct pool_key k = {NULL, NULL};
    struct pool_key was = {(cJSON *)layers, (char *)image};
    int i;

    for (i = 0; i < pool->n_hot; i++) {
        if (key_matches(&pool->hot[i], layers, image))
            break;
    }
    if (i < pool->n_hot) {
        k = pool->hot[i];
    } else {
        if (key_copy(&k, &was) != 0)
            return;
        if (pool->n_hot == POOL_HOT_MAX)
            key_free(&pool->hot[--pool->n_hot]);
        i = pool->n_hot++;
    }
    memmove(&pool->hot[1], &pool->hot[0], (size_t)i * sizeof(pool->hot[0]));
    pool->hot[0] = k;
    pthread_cond_broadcast(&eng->changed);
}

int warm_pool_claim_locked(struct engine *eng, const cJSON *spec, char *id,
                           size_t idlen)
{
    struct warm_pool *pool = eng->pool;
    struct pool_entry *pick = NULL;
    struct pool_entry *e;
    const cJSON *layers = NULL;
    const char *image = NULL;

    if (pool == NULL || eng->stopping || !is_plain(spec))
        return 0;
    layers = cJSON_GetObjectItemCaseSensitive(spec, "_layers");
    if (cJSON_GetArraySize(layers) == 0)
        layers = NULL;
    image = layers != NULL ? spec_image(spec) : NULL;
    /* A ready sandbox first; else the one starting now. */
    for (e = pool->entries; e != NULL; e = e->next) {
        if (e->claimed || e->state == ENTRY_FAILED ||
            e->state == ENTRY_RELEASING || !key_matches(&e->key, layers, image))
            continue;
        if (pick == NULL || e->state == ENTRY_READY)
            pick = e;
    }
    if (layers != NULL)
        mark_hot_locked(eng, pool, layers, image);
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

void warm_pool_forget_locked(struct engine *eng, const cJSON *layers)
{
    struct pool_entry *e;

    if (eng->pool == NULL || cJSON_GetArraySize(layers) == 0)
        return;
    forget_hot_locked(eng->pool, layers);
    /* Never claimed from now on; the thread removes them. */
    for (e = eng->pool->entries; e != NULL; e = e->next) {
        if (!e->claimed && e->state == ENTRY_READY &&
            cJSON_Compare(e->key.layers, layers, 1))
            e->state = ENTRY_FAILED;
    }
    pthread_cond_broadcast(&eng->changed);
}

int warm_pool_unclaim_locked(struct engine *eng, const char *id)
{
    struct pool_entry *e = find_locked(eng->pool, id);

    if (e == NULL || e->state == ENTRY_FAILED) {
        /* Its start failed (and removed its sandbox): nothing to keep. */
        if (e != NULL) {
            unlink_locked(eng->pool, e);
            entry_free(e);
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
        entry_free(e);
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
