/* The layer store (layers.h): layer directories, their copies and mounts
 * for a devbox, and their lifetime, counted from the owners registered
 * from above.  It knows no record, route or blueprint. */
#define _GNU_SOURCE
#include "layers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox_internal.h"
#include "util.h"

#define MAX_KINDS 4
#define MAX_OWNERS 8

/* Set under the caller's registry lock; the reaper thread reads the kinds
 * while it runs (layers_store_fini stops it before clearing them). */
static struct {
    char *state_dir;
    struct layers_kind kinds[MAX_KINDS];
    size_t n_kinds;
    struct layers_owner owners[MAX_OWNERS];
    size_t n_owners;
} store;

static void reaper_fini(void);

void layers_store_init(const char *state_dir)
{
    free(store.state_dir);
    store.state_dir = state_dir != NULL ? strdup(state_dir) : NULL;
    store.n_kinds = 0;
    store.n_owners = 0;
}

int layers_add_kind(const struct layers_kind *k)
{
    if (store.n_kinds == MAX_KINDS)
        return -1;
    store.kinds[store.n_kinds++] = *k;
    return 0;
}

int layers_add_owner(const struct layers_owner *o)
{
    if (store.n_owners == MAX_OWNERS)
        return -1;
    store.owners[store.n_owners++] = *o;
    return 0;
}

void layers_store_stop(void)
{
    reaper_fini();
}

void layers_store_fini(void)
{
    reaper_fini();
    free(store.state_dir);
    store.state_dir = NULL;
    store.n_kinds = 0;
    store.n_owners = 0;
}

/* ---------------------------------------------------------------- copy */

static __thread uid_t chown_from;
static __thread uid_t chown_to;
static __thread int64_t size_sum;

static int chown_one(const char *path, const struct stat *st, int flag,
                     struct FTW *ftw)
{
    (void)flag;
    (void)ftw;
    uid_t u = sandbox_shift_uid(st->st_uid, chown_from, chown_to);
    gid_t gr = sandbox_shift_uid(st->st_gid, chown_from, chown_to);

    if (u != (uid_t)-1 || gr != (gid_t)-1) {
        mode_t keep = st->st_mode & 07777;

        if (lchown(path, u, gr) != 0)
            return -1;
        /* chown clears set-id bits; keep the layer's modes as they were. */
        if (!S_ISLNK(st->st_mode) && (keep & 06000) != 0 &&
            chmod(path, keep) != 0)
            return -1;
    }
    return 0;
}

int layers_copy(const char *src, const char *dst, uid_t from_uid, uid_t to_uid,
                char *err, size_t errlen)
{
    if (mkdir(dst, 0755) != 0) {
        snprintf(err, errlen, "cannot create layer dir %s: %s", dst,
                 strerror(errno));
        return -1;
    }
    if (sandbox_copy_tree(src, dst, err, errlen) != 0)
        return -1;
    if (from_uid == to_uid)
        return 0;
    chown_from = from_uid;
    chown_to = to_uid;
    if (nftw(dst, chown_one, 32, FTW_PHYS) != 0) {
        snprintf(err, errlen, "cannot hand the layer %s to uid %u: %s", dst,
                 (unsigned)to_uid, strerror(errno));
        return -1;
    }
    return 0;
}

/* A layer moving between id spaces: ids in [shift_from, shift_from +
 * SB_RANGE_SIZE) go to shift_to + (id - shift_from); with shift_low, ids
 * below SB_RANGE_SIZE go to shift_to + id (what buildah's store writes
 * itself into a layer built in a user namespace: its root, whiteouts). */
static __thread uid_t shift_from;
static __thread uid_t shift_to;
static __thread int shift_low;

static uid_t shift_id(uid_t id)
{
    if (id >= shift_from && id - shift_from < SB_RANGE_SIZE)
        return shift_to + (id - shift_from);
    if (shift_low && id < SB_RANGE_SIZE)
        return shift_to + id;
    return (uid_t)-1;
}

static int shift_one(const char *path, const struct stat *st, int flag,
                     struct FTW *ftw)
{
    mode_t keep = st->st_mode & 07777;
    uid_t u = shift_id(st->st_uid);
    gid_t gr = shift_id(st->st_gid);

    (void)flag;
    (void)ftw;
    if (u == (uid_t)-1 || gr == (gid_t)-1)
        return -1;
    if (lchown(path, u, gr) != 0)
        return -1;
    if (!S_ISLNK(st->st_mode) && (keep & 06000) != 0 && chmod(path, keep) != 0)
        return -1;
    return 0;
}

/* Files buildah leaves as mount points of its RUN steps (empty).  The
 * layer is the build's, so any of its directories may be a symlink (`etc`
 * -> a host dir): the parent is opened beneath dst without following one,
 * and the file is checked and removed relative to that fd. */
static void drop_mount_points(const char *dst)
{
    static const char *const dirs[] = {"etc", "etc", "etc", "run", NULL};
    static const char *const names[] = {"hosts", "hostname", "resolv.conf",
                                        ".containerenv", NULL};
    struct open_how how;
    struct stat st;
    int root = -1;
    size_t i;

    root = open(dst, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root < 0)
        return;
    memset(&how, 0, sizeof(how));
    how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV;
    for (i = 0; names[i] != NULL; i++) {
        int dfd = (int)syscall(SYS_openat2, root, dirs[i], &how, sizeof(how));

        if (dfd < 0)
            continue; /* missing, or a symlink: nothing of ours */
        if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && st.st_size == 0)
            unlinkat(dfd, names[i], 0);
        close(dfd);
    }
    close(root);
}

/* cp of src into dst (created), then the ids shifted as shift_id says. */
static int copy_shifted(const char *src, const char *dst, uid_t from, uid_t to,
                        int low, char *err, size_t errlen)
{
    if (mkdir(dst, 0755) != 0) {
        snprintf(err, errlen, "cannot create layer dir %s: %s", dst,
                 strerror(errno));
        return -1;
    }
    if (sandbox_copy_tree(src, dst, err, errlen) != 0)
        return -1;
    drop_mount_points(dst);
    shift_from = from;
    shift_to = to;
    shift_low = low;
    if (nftw(dst, shift_one, 32, FTW_PHYS) != 0) {
        snprintf(err, errlen,
                 "cannot move the ids of layer %s from %u.. to %u.. (a file "
                 "owned by an id outside that range?): %s",
                 dst, (unsigned)from, (unsigned)to, strerror(errno));
        return -1;
    }
    return 0;
}

int layers_import(const char *src, const char *dst, uid_t range, char *err,
                  size_t errlen)
{
    return copy_shifted(src, dst, range, SB_RANGE_BASE, 1, err, errlen);
}

int layers_export(const char *src, const char *dst, char *err, size_t errlen)
{
    return copy_shifted(src, dst, SB_RANGE_BASE, 0, 0, err, errlen);
}

static int size_one(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)path;
    (void)flag;
    (void)ftw;
    if (S_ISREG(st->st_mode))
        size_sum += st->st_size;
    return 0;
}

int64_t layers_size(const char *path)
{
    size_sum = 0;
    nftw(path, size_one, 32, FTW_PHYS);
    return size_sum;
}

/* ------------------------------------------------ a devbox's lower layers */

void layers_free_paths(char **paths, size_t n)
{
    size_t i;

    for (i = 0; paths != NULL && i < n; i++)
        free(paths[i]);
    free(paths);
}

static int prepare_one(const cJSON *layer, const char *sbdir, size_t k,
                       uid_t uid, char **out, char *err, size_t errlen)
{
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(layer, "path");
    const cJSON *owner = cJSON_GetObjectItemCaseSensitive(layer, "owner");
    char *dst = NULL;
    char *ready = NULL;
    struct stat st;
    int rc = -1;

    if (!cJSON_IsString(path) || !cJSON_IsNumber(owner)) {
        snprintf(err, errlen, "the devbox record has a malformed layer list");
        return -1;
    }
    if (asprintf(&dst, "%s/layers/%zu", sbdir, k) < 0 ||
        asprintf(&ready, "%s/layers/%zu.ready", sbdir, k) < 0)
        goto out;
    if (stat(ready, &st) == 0) { /* copied by an earlier boot */
        rc = 0;
        goto out;
    }
    util_rmtree(dst);
    if (stat(path->valuestring, &st) != 0) {
        snprintf(err, errlen, "layer %s is missing: %s", path->valuestring,
                 strerror(errno));
        goto out;
    }
    if (layers_copy(path->valuestring, dst, (uid_t)owner->valuedouble, uid, err,
                    errlen) != 0)
        goto out;
    rc = util_write_atomic(ready, "", 0, 0600);
out:
    if (rc == 0) {
        *out = dst;
        dst = NULL;
    }
    free(dst);
    free(ready);
    return rc;
}

/* The chain's layers where they are, with their owners, when they can be
 * mounted shared (every owner a range); 1 when they cannot (the layers are
 * copied then), 0 or -1 with err. */
static int shared_chain(const cJSON *chain, bool image, size_t count,
                        char **out, uid_t *owners, char *err, size_t errlen)
{
    struct stat st;
    size_t k;

    if (!image)
        return 1;
    for (k = 0; k < count; k++) {
        const cJSON *layer = cJSON_GetArrayItem(chain, (int)k);
        const char *path = util_json_str(layer, "path");
        const cJSON *owner = cJSON_GetObjectItemCaseSensitive(layer, "owner");

        if (path == NULL || !cJSON_IsNumber(owner)) {
            snprintf(err, errlen,
                     "the devbox record has a malformed layer list");
            return -1;
        }
        if ((uid_t)owner->valuedouble < SB_RANGE_BASE)
            return 1; /* written by a single-uid devbox: copied */
        if (stat(path, &st) != 0) {
            snprintf(err, errlen, "layer %s is missing: %s", path,
                     strerror(errno));
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            snprintf(err, errlen, "layer %s is not a directory", path);
            return -1;
        }
        owners[k] = (uid_t)owner->valuedouble;
        out[k] = strdup(path);
        if (out[k] == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

int layers_prepare_box(const cJSON *spec, const char *sbdir, const char *id,
                       bool image, char ***paths, uid_t **owners, size_t *n,
                       char *err, size_t errlen)
{
    const cJSON *chain = cJSON_GetObjectItemCaseSensitive(spec, "_layers");
    char **out = NULL;
    uid_t *own = NULL;
    char *ldir = NULL;
    size_t count, k;
    uid_t uid;
    int shared;
    int rc = -1;

    *paths = NULL;
    *owners = NULL;
    *n = 0;
    count = cJSON_IsArray(chain) ? (size_t)cJSON_GetArraySize(chain) : 0;
    if (count == 0)
        return 0;
    out = calloc(count, sizeof(*out));
    own = calloc(count, sizeof(*own));
    if (out == NULL || own == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    shared = shared_chain(chain, image, count, out, own, err, errlen);
    if (shared < 0)
        goto out;
    if (shared == 0) {
        *paths = out;
        *owners = own;
        *n = count;
        out = NULL;
        own = NULL;
        rc = 0;
        goto out;
    }
    layers_free_paths(out, count);
    out = NULL;
    out = calloc(count, sizeof(*out));
    if (out == NULL || asprintf(&ldir, "%s/layers", sbdir) < 0) {
        ldir = NULL;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (mkdir(sbdir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", sbdir, strerror(errno));
        goto out;
    }
    if (mkdir(ldir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", ldir, strerror(errno));
        goto out;
    }
    /* Same claim as sandbox_start makes next: it finds <sbdir>/uid. */
    if (sandbox_dir_owner(sbdir, id, &uid, err, errlen) != 0)
        goto out;
    for (k = 0; k < count; k++) {
        if (prepare_one(cJSON_GetArrayItem(chain, (int)k), sbdir, k, uid,
                        &out[k], err, errlen) != 0)
            goto out;
    }
    *paths = out;
    *n = count;
    out = NULL;
    rc = 0;
out:
    layers_free_paths(out, count);
    free(own);
    free(ldir);
    return rc;
}

/* ---------------------------------------------------------- references */

#define FREE_SUFFIX ".free"

/* The kind whose layers live under the dir named by len bytes of name. */
static const struct layers_kind *kind_named(const char *name, size_t len)
{
    size_t i;

    for (i = 0; i < store.n_kinds; i++) {
        if (strlen(store.kinds[i].dir) == len &&
            strncmp(store.kinds[i].dir, name, len) == 0)
            return &store.kinds[i];
    }
    return NULL;
}

/* A layer's name in the store: "<kind>/<id>/layer" at the end of its path,
 * whatever path the state dir had when a chain was recorded.  NULL for a
 * path outside the store. */
static const char *layer_key(const char *path)
{
    size_t len = strlen(path);
    const char *p;
    const char *slash;

    if (len < 7 || strcmp(path + len - 6, "/layer") != 0)
        return NULL;
    /* back to the slash before <kind>: three components up */
    p = path + len - 6;
    while (p > path && p[-1] != '/')
        p--;
    if (p == path || p - 1 == path)
        return NULL;
    p--;
    while (p > path && p[-1] != '/')
        p--;
    slash = strchr(p, '/');
    if (slash == NULL || slash[1] == '/' || slash + 1 >= path + len - 6 ||
        kind_named(p, (size_t)(slash - p)) == NULL)
        return NULL;
    return p;
}

static int same_layer(const char *a, const char *b)
{
    const char *ka = layer_key(a);
    const char *kb = layer_key(b);

    if (ka != NULL && kb != NULL)
        return strcmp(ka, kb) == 0;
    return strcmp(a, b) == 0;
}

int layers_chain_has(const cJSON *chain, const char *path)
{
    const cJSON *it = NULL;

    cJSON_ArrayForEach(it, chain)
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, "path");

        if (cJSON_IsString(p) && same_layer(p->valuestring, path))
            return 1;
    }
    return 0;
}

int layers_refs_locked(const char *path)
{
    size_t i;
    int n = 0;

    for (i = 0; i < store.n_owners; i++)
        n += store.owners[i].refs(store.owners[i].ctx, path);
    return n;
}

static void add_free(cJSON *out, const char *dir)
{
    cJSON *item = cJSON_CreateObject();

    cJSON_AddStringToObject(item, "dir", dir);
    cJSON_AddItemToArray(out, item);
}

/* A freed layer (key "<kind>/<id>/layer"): its dir, and what its kind
 * removes after it (e.g. a blueprint's buildah image). */
static void add_free_of(cJSON *out, const char *dir, const char *key)
{
    const char *slash = strchr(key, '/');
    const char *end = slash != NULL ? strchr(slash + 1, '/') : NULL;
    const struct layers_kind *k = NULL;
    cJSON *extra = NULL;
    cJSON *item = NULL;
    char id[128];

    add_free(out, dir);
    if (slash != NULL)
        k = kind_named(key, (size_t)(slash - key));
    if (k == NULL || k->on_free == NULL || end == NULL ||
        (size_t)(end - slash - 1) >= sizeof(id))
        return;
    memcpy(id, slash + 1, (size_t)(end - slash - 1));
    id[end - slash - 1] = '\0';
    extra = k->on_free(id);
    if (extra == NULL)
        return;
    item = cJSON_GetArrayItem(out, cJSON_GetArraySize(out) - 1);
    cJSON_AddStringToObject(item, "kind", k->dir);
    cJSON_AddItemToObject(item, "extra", extra);
}

/* Moves the unreferenced layer key out of the store; adds it to out. */
static void release_one(const char *key, cJSON *out)
{
    char *cur = NULL;
    char *trash = NULL;

    if (layers_refs_locked(key) > 0 ||
        asprintf(&cur, "%s/%s", store.state_dir, key) < 0)
        return;
    if (asprintf(&trash, "%s" FREE_SUFFIX, cur) < 0) {
        trash = NULL;
        goto out;
    }
    /* The rename is the decision: a second release of it, or a start
     * after a kill, finds the layer gone or only its .free dir. */
    if (rename(cur, trash) != 0) {
        if (errno != ENOENT)
            fprintf(stderr, "devboxd: cannot free layer %s: %s\n", cur,
                    strerror(errno));
        goto out;
    }
    add_free_of(out, trash, key);
out:
    free(cur);
    free(trash);
}

cJSON *layers_release_locked(const cJSON *chain, const char *path)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *it = NULL;
    const char *key = NULL;

    if (store.state_dir == NULL)
        goto out;
    /* Topmost first: what a child's kind removes goes before its base's. */
    cJSON_ArrayForEach(it, chain)
    {
        const char *p = util_json_str(it, "path");

        key = p != NULL ? layer_key(p) : NULL;
        if (key != NULL)
            release_one(key, out);
    }
    key = path != NULL ? layer_key(path) : NULL;
    if (key != NULL)
        release_one(key, out);
out:
    if (cJSON_GetArraySize(out) == 0) {
        cJSON_Delete(out);
        out = NULL;
    }
    return out;
}

/* Removing a layer of many files takes long (20,000 files: 40 s on a
 * slow disk), so one thread removes freed layers in the background: a
 * delete answers, and devboxd starts, without waiting.  What it has not
 * removed when devboxd stops stays as .free dirs for the next start. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    cJSON *queue; /* released items, each with its state dir */
    pthread_t tid;
    int started;
    int stop;
    pid_t child; /* the rm running, or 0 */
} reaper = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0};

/* rm, which never follows a symlink and has no depth limit; in a child
 * process so that a stop can end it at once. */
static void remove_dir(const char *dir)
{
    const char *argv[] = {"rm", "-rf", "--one-file-system", "--", dir, NULL};
    pid_t pid = 0;
    int status = 0;
    int rc;

    pthread_mutex_lock(&reaper.lock);
    rc = reaper.stop
             ? ECANCELED
             : sandbox_spawn(&pid, "/bin/rm", NULL, (char *const *)argv);
    if (rc == 0)
        reaper.child = pid;
    pthread_mutex_unlock(&reaper.lock);
    if (rc != 0)
        return;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&reaper.lock);
    reaper.child = 0;
    pthread_mutex_unlock(&reaper.lock);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "devboxd: removing %s failed (rm status %d)\n", dir,
                status);
}

static void *reaper_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&reaper.lock);
    while (!reaper.stop) {
        cJSON *it = cJSON_DetachItemFromArray(reaper.queue, 0);
        const char *dir = NULL;
        const char *state = NULL;
        const char *kind = NULL;
        const struct layers_kind *k = NULL;

        if (it == NULL) {
            pthread_cond_wait(&reaper.cond, &reaper.lock);
            continue;
        }
        pthread_mutex_unlock(&reaper.lock);
        dir = util_json_str(it, "dir");
        state = util_json_str(it, "state_dir");
        kind = util_json_str(it, "kind");
        k = kind != NULL ? kind_named(kind, strlen(kind)) : NULL;
        if (dir != NULL)
            remove_dir(dir);
        /* E.g. buildah, which waits on its store's lock: never under the
         * registry. */
        if (k != NULL && k->after_free != NULL && state != NULL)
            k->after_free(state, cJSON_GetObjectItemCaseSensitive(it, "extra"));
        cJSON_Delete(it);
        pthread_mutex_lock(&reaper.lock);
    }
    pthread_mutex_unlock(&reaper.lock);
    return NULL;
}

void layers_free(cJSON *released)
{
    cJSON *it = NULL;

    if (released == NULL)
        return;
    pthread_mutex_lock(&reaper.lock);
    if (reaper.queue == NULL)
        reaper.queue = cJSON_CreateArray();
    if (!reaper.started && !reaper.stop &&
        pthread_create(&reaper.tid, NULL, reaper_thread, NULL) == 0)
        reaper.started = 1;
    while (reaper.started &&
           (it = cJSON_DetachItemFromArray(released, 0)) != NULL) {
        if (store.state_dir != NULL)
            cJSON_AddStringToObject(it, "state_dir", store.state_dir);
        cJSON_AddItemToArray(reaper.queue, it);
    }
    pthread_cond_signal(&reaper.cond);
    pthread_mutex_unlock(&reaper.lock);
    /* Empty, unless no thread could start: the next start frees those. */
    cJSON_Delete(released);
}

/* Ends the removal under way (its dir stays as .free for the next start). */
static void reaper_fini(void)
{
    pthread_mutex_lock(&reaper.lock);
    reaper.stop = 1;
    if (reaper.child > 0)
        kill(reaper.child, SIGKILL);
    pthread_cond_broadcast(&reaper.cond);
    pthread_mutex_unlock(&reaper.lock);
    if (reaper.started)
        pthread_join(reaper.tid, NULL);
    pthread_mutex_lock(&reaper.lock);
    cJSON_Delete(reaper.queue);
    reaper.queue = NULL;
    reaper.started = 0;
    reaper.stop = 0;
    pthread_mutex_unlock(&reaper.lock);
}

/* ---------------------------------------------------------------- start */

/* One <kind>/<name> entry at start: a .free dir is a free cut off by a
 * kill; a layer nothing references is freed, unless its record exists on
 * disk but could not be read (then nobody can tell: it stays). */
static void collect_entry(const struct layers_kind *k, const char *name,
                          cJSON *out)
{
    char *dir = NULL;
    char *trash = NULL;
    char *key = NULL;
    char *recfile = NULL;
    char *layer = NULL;
    struct stat st;
    int has_layer;
    int has_trash;

    if (asprintf(&dir, "%s/%s/%s", store.state_dir, k->dir, name) < 0)
        return;
    if (asprintf(&trash, "%s/layer" FREE_SUFFIX, dir) < 0 ||
        asprintf(&key, "%s/%s/layer", k->dir, name) < 0 ||
        asprintf(&layer, "%s/layer", dir) < 0 ||
        asprintf(&recfile, "%s/%s", dir, k->record_file) < 0)
        goto out;
    has_layer = lstat(layer, &st) == 0;
    has_trash = lstat(trash, &st) == 0;
    if (k->knows(name)) {
        /* A free cut off by a kill: the buildah image goes too, unless the
         * layer is there again and in use (never, but nothing is lost). */
        if (has_trash && !has_layer && layers_refs_locked(key) == 0)
            add_free_of(out, trash, key);
        else if (has_trash)
            add_free(out, trash);
        release_one(key, out);
    } else if (lstat(recfile, &st) == 0) {
        if (has_layer)
            fprintf(stderr,
                    "devboxd: keeping the layer of %s/%s: its record cannot be "
                    "read\n",
                    k->dir, name);
        if (has_trash)
            add_free(out, trash);
    } else if ((has_layer || has_trash) && layers_refs_locked(key) == 0) {
        add_free(out, dir); /* an orphan: no record was ever written */
    }
out:
    free(dir);
    free(trash);
    free(key);
    free(recfile);
    free(layer);
}

static void collect_kind(const struct layers_kind *k, cJSON *out)
{
    char *path = NULL;
    DIR *d = NULL;
    struct dirent *de;

    if (asprintf(&path, "%s/%s", store.state_dir, k->dir) < 0)
        return;
    d = opendir(path);
    while (d != NULL && (de = readdir(d)) != NULL) {
        if (de->d_name[0] != '.')
            collect_entry(k, de->d_name, out);
    }
    if (d != NULL)
        closedir(d);
    free(path);
}

cJSON *layers_unreferenced_locked(void)
{
    cJSON *out = cJSON_CreateArray();
    size_t i;

    for (i = 0; store.state_dir != NULL && out != NULL && i < store.n_kinds;
         i++)
        collect_kind(&store.kinds[i], out);
    return out;
}
