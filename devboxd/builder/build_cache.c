/* The owner's build cache (see build_cache.h). */
#define _GNU_SOURCE
#include "build_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"
#include "sandbox_internal.h"
#include "util.h"

/* A directory of root's that no one else may write, made when missing. */
static int root_dir(const char *path, mode_t mode, char *err, size_t errlen)
{
    struct stat st;

    if (mkdir(path, mode) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & 022) != 0 || chmod(path, mode) != 0) {
        snprintf(err, errlen,
                 "%s must be a directory of root's that no one else may "
                 "write; remove it",
                 path);
        return -1;
    }
    return 0;
}

/* The owner's name: a hash of the state dir's real path. */
static void owner_name(const char *state_dir, char *out, size_t outlen)
{
    char real[PATH_MAX];
    const char *s = realpath(state_dir, real) != NULL ? real : state_dir;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    snprintf(out, outlen, "%016" PRIx64, h);
}

static __thread uid_t shift_from;
static __thread uid_t shift_to;

static int shift_one(const char *path, const struct stat *st, int flag,
                     struct FTW *ftw)
{
    uid_t u = sandbox_shift_uid(st->st_uid, shift_from, shift_to);
    gid_t g = sandbox_shift_uid(st->st_gid, shift_from, shift_to);
    mode_t keep = st->st_mode & 07777;

    (void)flag;
    (void)ftw;
    if (u == (uid_t)-1 && g == (gid_t)-1)
        return 0;
    if (lchown(path, u, g) != 0)
        return -1;
    /* chown clears set-id bits; the cache's files keep their modes. */
    if (!S_ISLNK(st->st_mode) && (keep & 06000) != 0 && chmod(path, keep) != 0)
        return -1;
    return 0;
}

/* The ids of the tree at dir, from range `from` to range `to`. */
static int shift_tree(const char *dir, uid_t from, uid_t to)
{
    shift_from = from;
    shift_to = to;
    return nftw(dir, shift_one, 32, FTW_PHYS | FTW_MOUNT);
}

/* The range the cache at dir was last used with, from <dir>.range. */
static uid_t last_range(const char *rec)
{
    char *text = util_read_file(rec, 64, NULL);
    unsigned long v = text != NULL ? strtoul(text, NULL, 10) : 0;

    free(text);
    return (uid_t)v;
}

/* A dir owned by the build's root, only it and the host's root enter. */
static int build_dir(const char *path, uid_t range, char *err, size_t errlen)
{
    struct stat st;

    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) ||
        lchown(path, range, range) != 0 || chmod(path, 0700) != 0) {
        snprintf(err, errlen, "%s is not a directory the build can own", path);
        return -1;
    }
    return 0;
}

/* Each cache id under dir, made when missing as the mount asks. */
static int make_ids(const char *dir, uid_t range,
                    const struct build_flags_caches *c, char *err,
                    size_t errlen)
{
    size_t i;

    for (i = 0; i < c->n; i++) {
        const struct build_flags_cache *m = &c->v[i];
        char *path = NULL;
        struct stat st;
        int rc = 0;

        if (asprintf(&path, "%s/%s", dir, m->id) < 0)
            return -1;
        if (lstat(path, &st) == 0) {
            if (!S_ISDIR(st.st_mode)) {
                snprintf(err, errlen, "build cache %s is not a directory",
                         m->id);
                rc = -1;
            }
        } else if (mkdir(path, 0700) != 0 ||
                   lchown(path, range + m->uid, range + m->gid) != 0 ||
                   chmod(path, m->mode) != 0) {
            snprintf(err, errlen, "cannot make build cache %s: %s", m->id,
                     strerror(errno));
            rc = -1;
        }
        free(path);
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* Removes the caches of owners whose state dir is gone (the <name>.owner
 * file names it), unless a build holds one. */
static void prune(void)
{
    DIR *d = opendir(BUILD_CACHE_ROOT);
    struct dirent *e;

    while (d != NULL && (e = readdir(d)) != NULL) {
        const char *dot = strrchr(e->d_name, '.');
        size_t len = dot != NULL ? (size_t)(dot - e->d_name) : 0;
        char *base = NULL;
        char *path = NULL;
        char *owner = NULL;
        struct stat st;
        int fd = -1;

        if (dot == NULL || strcmp(dot, ".owner") != 0 || len == 0 ||
            asprintf(&base, BUILD_CACHE_ROOT "/%.*s", (int)len, e->d_name) < 0)
            continue;
        if (asprintf(&path, "%s.owner", base) >= 0)
            owner = util_read_file(path, PATH_MAX, NULL);
        if (owner != NULL && owner[0] == '/' && stat(owner, &st) != 0 &&
            errno == ENOENT) {
            char *lockpath = NULL;

            if (asprintf(&lockpath, "%s.lock", base) >= 0)
                fd = open(lockpath, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
            if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) {
                char *rec = NULL;

                sandbox_fs_remove_tree(base);
                if (asprintf(&rec, "%s.range", base) >= 0)
                    unlink(rec);
                free(rec);
                unlink(path);
                unlink(lockpath);
            }
            if (fd >= 0)
                close(fd);
            free(lockpath);
        }
        free(owner);
        free(path);
        free(base);
    }
    if (d != NULL)
        closedir(d);
}

int build_cache_open(const char *state_dir, const char *tmp, uid_t range,
                     const struct build_flags_caches *caches, int *lock,
                     char *note, size_t notelen, char *err, size_t errlen)
{
    char owner[32];
    char *store = NULL;
    char *lockpath = NULL;
    char *rec = NULL;
    char *link = NULL;
    char *ownerpath = NULL;
    char real[PATH_MAX];
    char num[32];
    int fd = -1;
    int rc = -1;

    *lock = -1;
    note[0] = '\0';
    if (caches->n == 0)
        return 0;
    owner_name(state_dir, owner, sizeof(owner));
    if (asprintf(&store, BUILD_CACHE_ROOT "/%s", owner) < 0 ||
        asprintf(&lockpath, BUILD_CACHE_ROOT "/%s.lock", owner) < 0 ||
        asprintf(&rec, BUILD_CACHE_ROOT "/%s.range", owner) < 0 ||
        asprintf(&link, "%s/buildah-cache", tmp) < 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (root_dir(BUILD_CACHE_ROOT, 0711, err, errlen) != 0)
        goto out;
    prune();
    if (realpath(state_dir, real) == NULL ||
        asprintf(&ownerpath, BUILD_CACHE_ROOT "/%s.owner", owner) < 0 ||
        util_write_atomic(ownerpath, real, strlen(real), 0600) != 0) {
        snprintf(err, errlen, "cannot record the build cache's owner %s",
                 state_dir);
        goto out;
    }
    fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s: %s", lockpath, strerror(errno));
        goto out;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        /* Another build of the owner's holds it: an empty cache here. */
        close(fd);
        fd = -1;
        snprintf(note, notelen,
                 "the build cache is in use by another build; this build's "
                 "cache mounts start empty");
        if (build_dir(link, range, err, errlen) != 0 ||
            make_ids(link, range, caches, err, errlen) != 0)
            goto out;
        rc = 0;
        goto out;
    }
    if (mkdir(store, 0700) == 0 || errno == EEXIST) {
        uid_t last = last_range(rec);

        if (last >= SB_RANGE_BASE && last != range &&
            shift_tree(store, last, range) != 0) {
            snprintf(err, errlen,
                     "cannot move the build cache %s to ids %u: %s", store,
                     (unsigned)range, strerror(errno));
            goto out;
        }
    }
    snprintf(num, sizeof(num), "%u\n", (unsigned)range);
    if (build_dir(store, range, err, errlen) != 0 ||
        util_write_atomic(rec, num, strlen(num), 0600) != 0 ||
        make_ids(store, range, caches, err, errlen) != 0)
        goto out;
    if (symlink(store, link) != 0) {
        snprintf(err, errlen, "cannot link %s: %s", link, strerror(errno));
        goto out;
    }
    *lock = fd;
    fd = -1;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    free(store);
    free(lockpath);
    free(rec);
    free(link);
    free(ownerpath);
    return rc;
}
