/* Sandbox filesystem side: validation, the per-devbox directory layout,
 * the generated base layer and host uid claims. */
#define _GNU_SOURCE
#include "sandbox_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int sandbox_fs_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

bool sandbox_fs_valid_id(const char *id)
{
    size_t i;

    if (id == NULL || id[0] == '\0')
        return false;
    for (i = 0; id[i] != '\0'; i++) {
        if (i >= SB_ID_MAX)
            return false;
        if (!is_alnum(id[i]) && id[i] != '_' && id[i] != '-')
            return false;
    }
    /* It becomes the hostname: no leading '-'. */
    return id[0] != '-';
}

bool sandbox_fs_valid_shell_name(const char *name)
{
    size_t i;

    if (name == NULL || name[0] == '\0' || name[0] == '.')
        return false;
    for (i = 0; name[i] != '\0'; i++) {
        if (i >= SB_SHELL_MAX)
            return false;
        if (!is_alnum(name[i]) && name[i] != '_' && name[i] != '-' &&
            name[i] != '.')
            return false;
    }
    return true;
}

bool sandbox_fs_valid_env(const char *kv)
{
    size_t i;

    if (kv == NULL)
        return false;
    if (!(kv[0] == '_' || (kv[0] >= 'a' && kv[0] <= 'z') ||
          (kv[0] >= 'A' && kv[0] <= 'Z')))
        return false;
    for (i = 1; kv[i] != '\0' && kv[i] != '='; i++) {
        if (!is_alnum(kv[i]) && kv[i] != '_')
            return false;
    }
    return kv[i] == '=';
}

bool sandbox_fs_valid_layer_path(const char *path)
{
    if (path == NULL || path[0] != '/' || strlen(path) >= 1024)
        return false;
    /* Overlay option syntax uses these as separators/escapes. */
    return strpbrk(path, ":,\\\n") == NULL;
}

char *sandbox_fs_lowerdir(const char *const *layers, size_t n, const char *base,
                          const char *image, char *err, size_t errlen)
{
    size_t len = 0;
    size_t i;
    char *out = NULL;
    struct stat st;

    if (n > SB_MAX_LAYERS) {
        sandbox_fs_err(err, errlen, -EINVAL,
                       "too many lower layers (%zu, at most %d)", n,
                       SB_MAX_LAYERS);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        if (!sandbox_fs_valid_layer_path(layers[i])) {
            sandbox_fs_err(
                err, errlen, -EINVAL,
                "lower layer %zu must be an absolute path without ':', ',' "
                "or '\\'",
                i);
            return NULL;
        }
        if (stat(layers[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
            sandbox_fs_err(err, errlen, -ENOENT,
                           "lower layer %s is not a directory", layers[i]);
            return NULL;
        }
        len += strlen(layers[i]) + 1;
    }
    if (!sandbox_fs_valid_layer_path(base)) {
        sandbox_fs_err(err, errlen, -EINVAL,
                       "devbox dir %s must not contain ':', ',' or '\\'", base);
        return NULL;
    }
    len += strlen(base) + 1;
    if (image != NULL) {
        if (stat(image, &st) != 0 || !S_ISDIR(st.st_mode)) {
            sandbox_fs_err(err, errlen, -ENOENT, "image %s is not a directory",
                           image);
            return NULL;
        }
        len += strlen(image) + 1;
    }
    out = malloc(len);
    if (out == NULL) {
        sandbox_fs_err(err, errlen, -ENOMEM, "out of memory");
        return NULL;
    }
    out[0] = '\0';
    for (i = 0; i < n; i++) {
        strcat(out, layers[i]);
        strcat(out, ":");
    }
    strcat(out, base);
    if (image != NULL) {
        strcat(out, ":");
        strcat(out, image);
    }
    return out;
}

char *sandbox_fs_root_relative(const char *path)
{
    size_t len;
    char *out = NULL;

    if (path == NULL || path[0] == '\0')
        return NULL;
    len = strlen(path);
    if (len >= 4096)
        return NULL;
    if (path[0] == '/') {
        while (*path == '/')
            path++;
        out = strdup(path[0] == '\0' ? "." : path);
        return out;
    }
    if (asprintf(&out, "%s/%s", SB_INSIDE_HOME + 1, path) < 0)
        return NULL;
    return out;
}

int sandbox_fs_write_file(int dirfd, const char *name, const char *data,
                          mode_t mode)
{
    int fd = -1;
    int rc = 0;
    size_t len = strlen(data);
    ssize_t n;

    fd = openat(dirfd, name,
                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -errno;
    while (len > 0) {
        n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : -EIO;
            goto out;
        }
        data += n;
        len -= (size_t)n;
    }
    if (fchmod(fd, mode) != 0)
        rc = -errno;
out:
    close(fd);
    return rc;
}

int sandbox_fs_read_small(const char *path, char *buf, size_t len)
{
    int fd = -1;
    ssize_t n;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return (int)n;
}

static int mkdir_at(int dirfd, const char *name, mode_t mode, uid_t uid,
                    gid_t gid)
{
    if (mkdirat(dirfd, name, mode) != 0 && errno != EEXIST)
        return -errno;
    if (fchownat(dirfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
        return -errno;
    if (fchmodat(dirfd, name, mode, 0) != 0)
        return -errno;
    return 0;
}

static int symlink_at(int dirfd, const char *target, const char *name)
{
    if (symlinkat(target, dirfd, name) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* Mount points in the base layer, so the runtime never has to create them
 * in the devbox's writable layer. */
static const char *const base_dirs[] = {
    "usr", "proc", "dev", "run", "home", "var", "etc", NULL,
};

/* Per-devbox /etc files (the image brings its users, groups and NSS
 * setup). */
static int write_etc(int basefd, const char *id)
{
    char buf[512];
    int rc;

    snprintf(buf, sizeof(buf),
             "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n"
             "127.0.1.1\t%s\n",
             id);
    rc = sandbox_fs_write_file(basefd, "etc/hosts", buf, 0644);
    if (rc == 0) {
        snprintf(buf, sizeof(buf), "%s\n", id);
        rc = sandbox_fs_write_file(basefd, "etc/hostname", buf, 0644);
    }
    if (rc == 0)
        rc = sandbox_fs_write_file(basefd, "etc/resolv.conf",
                                   "nameserver 10.0.2.3\n", 0644);
    return rc;
}

static int prepare_base(int dirfd, const char *id, uid_t uid, gid_t gid)
{
    int basefd = -1;
    int rc;
    size_t i;

    rc = mkdir_at(dirfd, SB_DIR_BASE, 0755, 0, 0);
    if (rc != 0)
        return rc;
    basefd = openat(dirfd, SB_DIR_BASE,
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (basefd < 0)
        return -errno;
    for (i = 0; base_dirs[i] != NULL && rc == 0; i++)
        rc = mkdir_at(basefd, base_dirs[i], 0755, 0, 0);
    if (rc == 0)
        rc = mkdir_at(basefd, "tmp", 01777, 0, 0);
    if (rc == 0)
        rc = mkdir_at(basefd, "var/tmp", 01777, 0, 0);
    if (rc == 0)
        rc = mkdir_at(basefd, "home/user", 0755, uid, gid);
    if (rc == 0)
        rc = symlink_at(basefd, "usr/bin", "bin");
    if (rc == 0)
        rc = symlink_at(basefd, "usr/sbin", "sbin");
    if (rc == 0)
        rc = symlink_at(basefd, "usr/lib", "lib");
    if (rc == 0)
        rc = symlink_at(basefd, "usr/lib64", "lib64");
    if (rc == 0)
        rc = symlink_at(basefd, "../usr/lib/os-release", "etc/os-release");
    if (rc == 0)
        rc = write_etc(basefd, id);
    close(basefd);
    return rc;
}

int sandbox_fs_prepare_dir(const char *dir, const char *id, uid_t uid,
                           gid_t gid, char *err, size_t errlen)
{
    int dirfd = -1;
    int rc = 0;

    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return sandbox_fs_err(err, errlen, -errno,
                              "cannot create devbox dir %s: %s", dir,
                              strerror(errno));
    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0)
        return sandbox_fs_err(err, errlen, -errno,
                              "cannot open devbox dir %s: %s", dir,
                              strerror(errno));
    /* The upper root stays root-owned 0755 (it is the devbox's "/"). */
    if (mkdirat(dirfd, SB_DIR_UPPER, 0755) != 0 && errno != EEXIST) {
        rc = sandbox_fs_err(err, errlen, -errno, "cannot create %s/%s: %s", dir,
                            SB_DIR_UPPER, strerror(errno));
        goto out;
    }
    rc = mkdir_at(dirfd, SB_DIR_WORK, 0700, 0, 0);
    if (rc == 0)
        rc = prepare_base(dirfd, id, uid, gid);
    if (rc != 0)
        sandbox_fs_err(err, errlen, rc, "cannot lay out devbox dir %s: %s", dir,
                       strerror(-rc));
out:
    close(dirfd);
    return rc;
}

/* ---- host uid claims ------------------------------------------------- */

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

static int claim_path(uid_t uid, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%u", sandbox_rt.claims_dir, (unsigned)uid);

    return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

/* A claim file holds the devbox dir it belongs to. */
static int claim_matches(uid_t uid, const char *dir)
{
    char path[4096];
    char buf[4096];

    if (claim_path(uid, path, sizeof(path)) != 0)
        return -ENAMETOOLONG;
    if (sandbox_fs_read_small(path, buf, sizeof(buf)) < 0)
        return -ENOENT;
    return strcmp(buf, dir) == 0 ? 0 : -EEXIST;
}

/* A claim is stale when the directory that holds the devbox's or build's
 * dir (devboxes/ID, blueprints/ID) is gone: its state dir was deleted
 * without a clean stop, so nothing can start it again. A claim of a
 * stopped engine's devbox (suspended, its disk unmounted) is not stale:
 * its record dir is still there. Only absolute owners are judged. */
static int claim_stale(uid_t uid)
{
    char path[4096];
    char owner[4096];
    char *slash = NULL;
    struct stat st;

    if (claim_path(uid, path, sizeof(path)) != 0 ||
        sandbox_fs_read_small(path, owner, sizeof(owner)) <= 0 ||
        owner[0] != '/')
        return 0;
    slash = strrchr(owner, '/');
    if (slash == NULL || slash == owner)
        return 0;
    *slash = '\0';
    return lstat(owner, &st) != 0 && errno == ENOENT;
}

/* Claims are shared by every devboxd of the machine (sandbox_rt.claims_dir):
 * an exclusive flock on its .lock orders their claims and releases, so a
 * stale claim is removed and taken by one engine only. -errno or the fd. */
static int claims_lock(void)
{
    char path[4096];
    int fd;

    if (snprintf(path, sizeof(path), "%s/.lock", sandbox_rt.claims_dir) >=
        (int)sizeof(path))
        return -ENAMETOOLONG;
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            int rc = -errno;

            close(fd);
            return rc;
        }
    }
    return fd;
}

static void claims_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* drops the flock */
}

static int claim_new(uid_t uid, const char *dir)
{
    char path[4096];
    int fd = -1;
    ssize_t n;
    size_t len = strlen(dir);

    if (claim_path(uid, path, sizeof(path)) != 0)
        return -ENAMETOOLONG;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    n = write(fd, dir, len);
    close(fd);
    if (n != (ssize_t)len) {
        unlink(path);
        return -EIO;
    }
    return 0;
}

/* Which claims a devbox dir records: a range (runc), or a single uid
 * (the retired bubblewrap runtime's dirs; released alike). */
struct claim_kind {
    const char *file; /* in the devbox dir */
    uint32_t first;
    uint32_t count; /* candidates */
    uint32_t stride;
};

static int claim_in_locked(const struct claim_kind *k, const char *dir,
                           const char *id, uid_t *uid, char *err, size_t errlen)
{
    char buf[32];
    char path[4096];
    char *end = NULL;
    unsigned long v;
    uint64_t last = (uint64_t)k->first + (uint64_t)k->count * k->stride;
    uint32_t i;
    uint32_t start;
    uid_t cand;
    int rc;
    int dirfd = -1;

    if (snprintf(path, sizeof(path), "%s/%s", dir, k->file) >=
        (int)sizeof(path))
        return sandbox_fs_err(err, errlen, -ENAMETOOLONG,
                              "devbox dir path too long");
    if (sandbox_fs_read_small(path, buf, sizeof(buf)) > 0) {
        v = strtoul(buf, &end, 10);
        if (end == buf || v < k->first || v >= last ||
            (v - k->first) % k->stride != 0)
            return sandbox_fs_err(
                err, errlen, -EINVAL,
                "%s holds no uid of the range %u+%u; remove it", path, k->first,
                (unsigned)(last - k->first));
        cand = (uid_t)v;
        rc = claim_matches(cand, dir);
        if (rc == -EEXIST && claim_stale(cand) &&
            claim_path(cand, path, sizeof(path)) == 0 && unlink(path) == 0)
            rc = -ENOENT;
        if (rc == -ENOENT)
            rc = claim_new(cand, dir);
        if (rc != 0)
            return sandbox_fs_err(
                err, errlen, -EEXIST,
                "host uid %u of %s is claimed by another devbox",
                (unsigned)cand, dir);
        *uid = cand;
        return 0;
    }
    start = hash_str(id) % k->count;
    for (i = 0; i < k->count; i++) {
        cand = k->first + ((start + i) % k->count) * k->stride;
        rc = claim_new(cand, dir);
        if (rc == -EEXIST && claim_stale(cand) &&
            claim_path(cand, path, sizeof(path)) == 0 && unlink(path) == 0)
            rc = claim_new(cand, dir);
        if (rc == -EEXIST)
            continue;
        if (rc != 0)
            return sandbox_fs_err(err, errlen, rc,
                                  "cannot claim a host uid in %s: %s",
                                  sandbox_rt.claims_dir, strerror(-rc));
        snprintf(buf, sizeof(buf), "%u\n", (unsigned)cand);
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        rc = dirfd < 0 ? -errno
                       : sandbox_fs_write_file(dirfd, k->file, buf, 0600);
        sandbox_close_fd(dirfd);
        if (rc != 0) {
            claim_path(cand, path, sizeof(path));
            unlink(path);
            return sandbox_fs_err(err, errlen, rc,
                                  "cannot record the devbox uid in %s: %s", dir,
                                  strerror(-rc));
        }
        *uid = cand;
        return 0;
    }
    return sandbox_fs_err(
        err, errlen, -EUSERS,
        "all %u host uids are in use (by the devboxes and builds of "
        "every devboxd "
        "of this machine, claims in %s)",
        k->count, sandbox_rt.claims_dir);
}

static int claim_in(const struct claim_kind *k, const char *dir, const char *id,
                    uid_t *uid, char *err, size_t errlen)
{
    int lock = claims_lock();
    int rc;

    if (lock < 0)
        return sandbox_fs_err(err, errlen, lock,
                              "cannot lock the host uid claims in %s: %s",
                              sandbox_rt.claims_dir, strerror(-lock));
    rc = claim_in_locked(k, dir, id, uid, err, errlen);
    claims_unlock(lock);
    return rc;
}

int sandbox_fs_range_claim(const char *dir, const char *id, uint32_t *base,
                           char *err, size_t errlen)
{
    struct claim_kind k = {SB_FILE_RANGE, SB_RANGE_BASE,
                           sandbox_rt.range_slots != 0 ? sandbox_rt.range_slots
                                                       : SB_RANGE_SLOTS,
                           SB_RANGE_SIZE};
    uid_t v = 0;
    int rc = claim_in(&k, dir, id, &v, err, errlen);

    *base = (uint32_t)v;
    return rc;
}

static int release_one(const char *dir, const char *file)
{
    char path[4096];
    char buf[32];
    unsigned long v;
    char *end = NULL;

    if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    if (sandbox_fs_read_small(path, buf, sizeof(buf)) <= 0)
        return 0;
    v = strtoul(buf, &end, 10);
    if (end == buf || v > UINT32_MAX)
        return -EINVAL;
    if (claim_matches((uid_t)v, dir) != 0)
        return 0; /* not ours: leave it */
    if (claim_path((uid_t)v, path, sizeof(path)) != 0)
        return -ENAMETOOLONG;
    if (unlink(path) != 0 && errno != ENOENT)
        return -errno;
    return 0;
}

int sandbox_fs_uid_release(const char *dir)
{
    int lock = claims_lock();
    int rc;

    if (lock < 0)
        return lock;
    rc = release_one(dir, SB_FILE_UID);
    if (rc == 0)
        rc = release_one(dir, SB_FILE_RANGE);
    claims_unlock(lock);
    return rc;
}

/* ---- removal ---------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int type,
                    struct FTW *ftw)
{
    int rc;

    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        rc = rmdir(path);
    else
        rc = unlink(path);
    if (rc != 0 && errno != ENOENT)
        return -errno;
    return 0;
}

int sandbox_fs_remove_tree(const char *path)
{
    struct stat st;
    int rc;

    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -errno;
    rc = nftw(path, rm_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (rc > 0)
        rc = -EIO;
    return rc;
}

/* ---- runc runtime layout ----------------------------------------------- */

bool sandbox_fs_valid_user_name(const char *name)
{
    size_t i;

    if (name == NULL || name[0] == '\0' || strlen(name) > 32 ||
        !((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
        return false;
    for (i = 1; name[i] != '\0'; i++) {
        char c = name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-'))
            return false;
    }
    return true;
}

static __thread uid_t own_to;

/* nftw: host root's entries of the base layer become the devbox root's. */
static int own_entry(const char *path, const struct stat *st, int type,
                     struct FTW *ftw)
{
    (void)type;
    (void)ftw;
    if (st->st_uid != 0 && st->st_gid != 0)
        return 0;
    if (lchown(path, st->st_uid == 0 ? own_to : (uid_t)-1,
               st->st_gid == 0 ? own_to : (gid_t)-1) != 0)
        return -1;
    return 0;
}

/* Appends "line" to a copy of the image's etc/<file> in the base layer,
 * unless the image already has an entry starting with "key:". */
static int add_account_line(int basefd, const char *image, const char *file,
                            const char *key, const char *line, mode_t mode)
{
    char path[4096];
    char *text = NULL;
    char *out = NULL;
    size_t len = 0;
    size_t klen = strlen(key);
    FILE *f = NULL;
    char *p = NULL;
    char *nl = NULL;
    int rc = 0;

    snprintf(path, sizeof(path), "%s/etc/%s", image, file);
    f = fopen(path, "re");
    if (f != NULL) {
        text = calloc(1, 1 << 20);
        len = text != NULL ? fread(text, 1, (1 << 20) - 1, f) : 0;
        fclose(f);
        if (text == NULL)
            return -ENOMEM;
    }
    for (p = text; p != NULL && *p != '\0'; p = nl != NULL ? nl + 1 : NULL) {
        nl = strchr(p, '\n');
        if (strncmp(p, key, klen) == 0 && p[klen] == ':')
            goto out; /* the image has it */
    }
    if (asprintf(&out, "%s%s%s\n", text != NULL ? text : "",
                 len > 0 && text[len - 1] != '\n' ? "\n" : "", line) < 0) {
        out = NULL;
        rc = -ENOMEM;
        goto out;
    }
    snprintf(path, sizeof(path), "etc/%s", file);
    rc = sandbox_fs_write_file(basefd, path, out, mode);
out:
    free(text);
    free(out);
    return rc;
}

/* The copied shadow file keeps the image's group (shadow), mapped. */
static int shadow_group(int basefd, const char *image, uint32_t range)
{
    char path[4096];
    struct stat st;

    snprintf(path, sizeof(path), "%s/etc/shadow", image);
    if (stat(path, &st) != 0 || st.st_gid == 0)
        return 0;
    if (fchownat(basefd, "etc/shadow", 0, range + st.st_gid,
                 AT_SYMLINK_NOFOLLOW) != 0 &&
        errno != ENOENT)
        return -errno;
    return 0;
}

/* A user the image lacks: passwd, group and shadow entries (copies of the
 * image's files plus one line), passwordless sudo, a home. */
static int add_user(int basefd, const char *image, const char *user,
                    uint32_t range, uint32_t uid)
{
    char line[256];
    char path[128];
    int rc;

    snprintf(line, sizeof(line), "%s:x:%u:%u::/home/%s:/bin/bash", user, uid,
             uid, user);
    rc = add_account_line(basefd, image, "passwd", user, line, 0644);
    if (rc == 0) {
        snprintf(line, sizeof(line), "%s:x:%u:", user, uid);
        rc = add_account_line(basefd, image, "group", user, line, 0644);
    }
    /* PAM (sudo) wants a shadow entry; locked password, as "user" has. */
    if (rc == 0) {
        snprintf(line, sizeof(line), "%s:!:19675:0:99999:7:::", user);
        rc = add_account_line(basefd, image, "shadow", user, line, 0640);
    }
    if (rc == 0)
        rc = shadow_group(basefd, image, range);
    if (rc == 0)
        rc = mkdir_at(basefd, "etc/sudoers.d", 0755, 0, 0);
    if (rc == 0) {
        snprintf(path, sizeof(path), "etc/sudoers.d/%s", user);
        snprintf(line, sizeof(line), "%s ALL=(ALL:ALL) NOPASSWD: ALL\n", user);
        rc = sandbox_fs_write_file(basefd, path, line, 0440);
    }
    if (rc == 0) {
        snprintf(path, sizeof(path), "home/%s", user);
        rc = mkdir_at(basefd, path, 0755, range + uid, range + uid);
    }
    return rc;
}

int sandbox_fs_prepare_dir_oci(const char *dir, const char *id, uint32_t range,
                               const char *image, const char *user,
                               uint32_t uid, char *err, size_t errlen)
{
    char path[4096];
    int dirfd = -1;
    int basefd = -1;
    int rc;

    rc = sandbox_fs_prepare_dir(dir, id, range + SB_INSIDE_UID,
                                range + SB_INSIDE_UID, err, errlen);
    if (rc != 0)
        return rc;
    dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0)
        return sandbox_fs_err(err, errlen, -errno,
                              "cannot open devbox dir %s: %s", dir,
                              strerror(errno));
    basefd = openat(dirfd, SB_DIR_BASE,
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (basefd < 0) {
        rc = -errno;
        goto out;
    }
    /* The devbox's "/" belongs to its root. */
    if (fchownat(dirfd, SB_DIR_UPPER, range, range, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = -errno;
        goto out;
    }
    if (user != NULL && strcmp(user, "user") != 0 && strcmp(user, "root") != 0)
        rc = add_user(basefd, image, user, range, uid);
    if (rc != 0)
        goto out;
    own_to = range;
    snprintf(path, sizeof(path), "%s/%s", dir, SB_DIR_BASE);
    if (nftw(path, own_entry, 16, FTW_PHYS | FTW_MOUNT) != 0)
        rc = errno != 0 ? -errno : -EIO;
out:
    if (rc != 0)
        sandbox_fs_err(err, errlen, rc, "cannot lay out devbox dir %s: %s", dir,
                       strerror(-rc));
    sandbox_close_fd(basefd);
    close(dirfd);
    return rc;
}
