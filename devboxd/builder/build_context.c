/* Blueprint build contexts from storage objects (see build_context.h). */
#define _GNU_SOURCE
#include "build_context.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

#define READ_BLOCK (64 * 1024)

/* ------------------------------------------------------------- names */

/* Walks the '/'-separated components of path from depth *depth: -1 as
 * soon as a ".." climbs above 0. */
static int walk_depth(const char *path, int *depth)
{
    const char *s = path;

    while (*s != '\0') {
        const char *e = strchr(s, '/');
        size_t len = e != NULL ? (size_t)(e - s) : strlen(s);

        if (len == 2 && s[0] == '.' && s[1] == '.') {
            if (--*depth < 0)
                return -1;
        } else if (len > 0 && !(len == 1 && s[0] == '.')) {
            ++*depth;
        }
        s += len;
        if (*s == '/')
            s++;
    }
    return 0;
}

int build_context_name_ok(const char *name)
{
    const char *s = name;

    if (name[0] == '/')
        return -1;
    /* No ".." at all: even a name that comes back (a/../b) is refused. */
    while (*s != '\0') {
        const char *e = strchr(s, '/');
        size_t len = e != NULL ? (size_t)(e - s) : strlen(s);

        if (len == 2 && s[0] == '.' && s[1] == '.')
            return -1;
        s += len;
        if (*s == '/')
            s++;
    }
    return 0;
}

int build_context_link_ok(const char *name, const char *target)
{
    char *dir = NULL;
    char *slash = NULL;
    int depth = 0;
    int rc = -1;

    if (target[0] == '\0' || target[0] == '/' ||
        build_context_name_ok(name) != 0)
        return -1;
    dir = strdup(name);
    if (dir == NULL)
        return -1;
    /* The link resolves from its own directory. */
    slash = strrchr(dir, '/');
    if (slash != NULL) {
        *slash = '\0';
        walk_depth(dir, &depth);
    }
    rc = walk_depth(target, &depth);
    free(dir);
    return rc;
}

/* The entry's name without leading "./"; "" for the context's top. */
static const char *rel_name(const char *name)
{
    while (name[0] == '.' && name[1] == '/') {
        name += 2;
        while (*name == '/')
            name++;
    }
    if (strcmp(name, ".") == 0)
        return "";
    return name;
}

/* ------------------------------------------------------------- walk */

struct walk {
    const char *dir; /* where to unpack (realpath), NULL: only check */
    int dirfd;
    struct archive *out;
    uint64_t max_bytes;
    uint64_t bytes;
    size_t entries;
    char **links; /* symlinks unpacked, checked once all exist */
    size_t n_links;
    size_t cap_links;
    char *err;
    size_t errlen;
};

static int over_limit(struct walk *w)
{
    snprintf(w->err, w->errlen,
             "build_context: the archive unpacks to more than %llu MiB "
             "(RLMCP_BUILD_CONTEXT_MB); leave out what the build does not "
             "COPY (a .dockerignore) or raise the limit",
             (unsigned long long)(w->max_bytes >> 20));
    return -1;
}

/* Whether one entry may be unpacked: 0, or -1 with err. */
static int check_entry(struct walk *w, struct archive_entry *e, const char *raw,
                       const char *name)
{
    const char *hard = archive_entry_hardlink(e);
    const char *sym = NULL;
    la_int64_t size = archive_entry_size(e);

    if (raw[0] == '/' || build_context_name_ok(name) != 0) {
        snprintf(w->err, w->errlen,
                 "build_context: entry \"%.300s\" leaves the build context; "
                 "archive the context relative to its top, without absolute "
                 "names or \"..\" (tar -czf ctx.tgz -C dir .)",
                 raw);
        return -1;
    }
    if (hard != NULL) {
        if (hard[0] == '/' || build_context_name_ok(rel_name(hard)) != 0) {
            snprintf(w->err, w->errlen,
                     "build_context: hard link \"%.300s\" points to "
                     "\"%.300s\", outside the build context; link only to "
                     "files in the archive",
                     raw, hard);
            return -1;
        }
        return 0;
    }
    switch (archive_entry_filetype(e)) {
    case AE_IFREG:
        if (size > 0)
            w->bytes += (uint64_t)size;
        if (w->bytes > w->max_bytes)
            return over_limit(w);
        return 0;
    case AE_IFDIR:
        return 0;
    case AE_IFLNK:
        sym = archive_entry_symlink(e);
        if (sym == NULL || build_context_link_ok(name, sym) != 0) {
            snprintf(w->err, w->errlen,
                     "build_context: symlink \"%.300s\" -> \"%.300s\" points "
                     "outside the build context; make it relative to a file "
                     "in the archive or leave it out",
                     raw, sym != NULL ? sym : "");
            return -1;
        }
        return 0;
    case AE_IFCHR:
    case AE_IFBLK:
        snprintf(w->err, w->errlen,
                 "build_context: entry \"%.300s\" is a device node; a build "
                 "context holds only files, directories and links",
                 raw);
        return -1;
    default:
        snprintf(w->err, w->errlen,
                 "build_context: entry \"%.300s\" is a fifo or socket; a "
                 "build context holds only files, directories and links",
                 raw);
        return -1;
    }
}

/* fd of path under the context, resolved without leaving it (and, when
 * no_links, without following any symlink); -1 with errno. */
static int open_beneath(int dirfd, const char *path, int no_links)
{
    struct open_how how;

    memset(&how, 0, sizeof(how));
    how.flags = O_PATH | O_CLOEXEC | (no_links ? O_NOFOLLOW : 0);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
                  (no_links ? RESOLVE_NO_SYMLINKS : 0);
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

static int remember_link(struct walk *w, const char *name)
{
    if (w->n_links == w->cap_links) {
        size_t cap = w->cap_links ? w->cap_links * 2 : 64;
        char **links = realloc(w->links, cap * sizeof(*links));

        if (links == NULL)
            return -1;
        w->links = links;
        w->cap_links = cap;
    }
    w->links[w->n_links] = strdup(name);
    if (w->links[w->n_links] == NULL)
        return -1;
    w->n_links++;
    return 0;
}

/* A hard link's target must be a file already unpacked, reached through
 * no symlink: link() would follow one out of the context. */
static int check_hard_target(struct walk *w, const char *raw,
                             const char *target)
{
    struct stat st;
    int fd = open_beneath(w->dirfd, target, 1);
    int rc = -1;

    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        rc = 0;
    else
        snprintf(w->err, w->errlen,
                 "build_context: hard link \"%.300s\" -> \"%.300s\": the "
                 "target must be a regular file earlier in the archive, "
                 "reached through no symlink",
                 raw, target);
    if (fd >= 0)
        close(fd);
    return rc;
}

static int copy_data(struct walk *w, struct archive *in, const char *raw)
{
    const void *buf = NULL;
    size_t len = 0;
    la_int64_t off = 0;
    int r;

    for (;;) {
        r = archive_read_data_block(in, &buf, &len, &off);
        if (r == ARCHIVE_EOF)
            return 0;
        if (r < ARCHIVE_WARN) {
            snprintf(w->err, w->errlen, "build_context: reading \"%.300s\": %s",
                     raw, archive_error_string(in));
            return -1;
        }
        if (archive_write_data_block(w->out, buf, len, off) < ARCHIVE_WARN) {
            snprintf(w->err, w->errlen, "build_context: writing \"%.300s\": %s",
                     raw, archive_error_string(w->out));
            return -1;
        }
    }
}

/* Writes one checked entry under w->dir. */
static int unpack_entry(struct walk *w, struct archive *in,
                        struct archive_entry *e, const char *raw_in,
                        const char *name_in)
{
    const char *hard = archive_entry_hardlink(e);
    /* Copies: the entry's own strings change with its names below. */
    char *raw = strdup(raw_in);
    char *name = strdup(name_in);
    char *path = NULL;
    char *target = NULL;
    int rc = -1;

    if (raw == NULL || name == NULL)
        goto oom;
    if (hard != NULL && check_hard_target(w, raw, rel_name(hard)) != 0)
        goto out;
    if (hard != NULL) {
        if (asprintf(&target, "%s/%s", w->dir, rel_name(hard)) < 0) {
            target = NULL;
            goto oom;
        }
        archive_entry_set_hardlink(e, target);
    }
    if (asprintf(&path, "%s/%s", w->dir, name) < 0) {
        path = NULL;
        goto oom;
    }
    archive_entry_set_pathname(e, path);
    /* The modes as archived, without setuid, setgid or sticky bits. */
    archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
    if (archive_write_header(w->out, e) < ARCHIVE_WARN) {
        snprintf(w->err, w->errlen,
                 "build_context: cannot unpack \"%.300s\": %s", raw,
                 archive_error_string(w->out));
        goto out;
    }
    if (hard == NULL && archive_entry_filetype(e) == AE_IFREG &&
        copy_data(w, in, raw) != 0)
        goto out;
    if (archive_write_finish_entry(w->out) < ARCHIVE_WARN) {
        snprintf(w->err, w->errlen,
                 "build_context: cannot unpack \"%.300s\": %s", raw,
                 archive_error_string(w->out));
        goto out;
    }
    if (hard == NULL && archive_entry_filetype(e) == AE_IFLNK &&
        remember_link(w, name) != 0)
        goto oom;
    rc = 0;
    goto out;
oom:
    snprintf(w->err, w->errlen, "build_context: out of memory");
out:
    free(path);
    free(target);
    free(raw);
    free(name);
    return rc;
}

/* Once every entry exists: no symlink leads out through other links
 * (a -> b/.. where b -> .. passes the check of each name alone). */
static int check_links(struct walk *w)
{
    size_t i;

    for (i = 0; i < w->n_links; i++) {
        int fd = open_beneath(w->dirfd, w->links[i], 0);
        char target[PATH_MAX];
        ssize_t n = -1;

        /* A link whose target is missing now may lead out once a later
         * write creates what it climbs through: refuse any that climbs. */
        if (fd < 0 && errno == ENOENT) {
            n = readlinkat(w->dirfd, w->links[i], target, sizeof(target) - 1);
            if (n >= 0) {
                target[n] = '\0';
                errno = strstr(target, "..") != NULL ? EXDEV : ENOENT;
            }
        }
        if (fd < 0 && (errno == EXDEV || errno == ELOOP)) {
            snprintf(w->err, w->errlen,
                     "build_context: symlink \"%.300s\" leads outside the "
                     "build context through other links; make it point to a "
                     "file in the archive",
                     w->links[i]);
            return -1;
        }
        if (fd >= 0)
            close(fd);
    }
    return 0;
}

static int walk_archive(struct walk *w, int fd)
{
    struct archive *in = NULL;
    struct archive_entry *e = NULL;
    int r;
    int rc = -1;

    in = archive_read_new();
    if (in == NULL || lseek(fd, 0, SEEK_SET) != 0) {
        snprintf(w->err, w->errlen, "build_context: cannot read the object: %s",
                 strerror(errno));
        goto out;
    }
    archive_read_support_filter_gzip(in);
    archive_read_support_format_tar(in);
    if (archive_read_open_fd(in, fd, READ_BLOCK) != ARCHIVE_OK)
        goto not_tar;
    while ((r = archive_read_next_header(in, &e)) != ARCHIVE_EOF) {
        const char *raw = NULL;
        const char *name = NULL;

        if (r < ARCHIVE_WARN) {
            if (w->entries == 0)
                goto not_tar;
            snprintf(w->err, w->errlen,
                     "build_context: the archive is damaged after %zu "
                     "entries: %s",
                     w->entries, archive_error_string(in));
            goto out;
        }
        if (++w->entries > BUILD_CONTEXT_MAX_ENTRIES) {
            snprintf(w->err, w->errlen,
                     "build_context: the archive has more than %d entries; "
                     "leave out what the build does not COPY",
                     BUILD_CONTEXT_MAX_ENTRIES);
            goto out;
        }
        raw = archive_entry_pathname(e);
        if (raw == NULL || raw[0] == '\0') {
            snprintf(w->err, w->errlen, "build_context: entry %zu has no name",
                     w->entries);
            goto out;
        }
        name = rel_name(raw);
        if (check_entry(w, e, raw, name) != 0)
            goto out;
        if (w->dir == NULL || name[0] == '\0')
            continue; /* the next header skips the data */
        if (unpack_entry(w, in, e, raw, name) != 0)
            goto out;
    }
    if (w->dir != NULL && archive_write_close(w->out) < ARCHIVE_WARN) {
        snprintf(w->err, w->errlen, "build_context: %s",
                 archive_error_string(w->out));
        goto out;
    }
    rc = w->dir != NULL ? check_links(w) : 0;
    goto out;
not_tar:
    snprintf(w->err, w->errlen,
             "build_context: the object is not a tar or tar.gz archive (%s); "
             "upload one (tar -czf ctx.tgz -C dir .)",
             archive_error_string(in) ? archive_error_string(in)
                                      : "unreadable");
out:
    if (in != NULL)
        archive_read_free(in);
    return rc;
}

/* ------------------------------------------------------------- calls */

int build_context_open(const cJSON *body, uint64_t max_bytes,
                       build_context_open_fn open_object, void *ud, int *fd,
                       char *err, size_t errlen)
{
    static const char *const fields[] = {"type", "object_id", NULL};
    const cJSON *bc = cJSON_GetObjectItemCaseSensitive(body, "build_context");
    const char *type = NULL;
    const char *id = NULL;
    struct walk w;
    char why[256] = "";

    *fd = -1;
    if (bc == NULL || cJSON_IsNull(bc))
        return 0;
    if (!cJSON_IsObject(bc)) {
        snprintf(err, errlen,
                 "build_context must be an object: "
                 "{\"type\": \"object\", \"object_id\": \"obj_...\"}");
        return -1;
    }
    if (util_check_fields(bc, "build_context.", fields, err, errlen) != 0 ||
        util_opt_string(bc, "type", &type, err, errlen) != 0 ||
        util_opt_string(bc, "object_id", &id, err, errlen) != 0)
        return -1;
    if (type == NULL || strcmp(type, "object") != 0) {
        snprintf(err, errlen,
                 "build_context.type must be \"object\" (a "
                 "storage object holding a tar or tar.gz archive)");
        return -1;
    }
    if (id == NULL || id[0] == '\0') {
        snprintf(err, errlen,
                 "build_context.object_id is required: the id of "
                 "a completed storage object (obj_...)");
        return -1;
    }
    *fd = open_object(ud, id, why, sizeof(why));
    if (*fd < 0) {
        snprintf(err, errlen,
                 "build_context.object_id: %s; upload a tar or tar.gz archive "
                 "as a storage object and complete it (state READ_ONLY) "
                 "before the build",
                 why);
        return -1;
    }
    memset(&w, 0, sizeof(w));
    w.dirfd = -1;
    w.max_bytes = max_bytes;
    w.err = err;
    w.errlen = errlen;
    if (walk_archive(&w, *fd) != 0) {
        close(*fd);
        *fd = -1;
        return -1;
    }
    return 0;
}

int build_context_unpack(int fd, const char *dir, uint64_t max_bytes, char *err,
                         size_t errlen)
{
    struct walk w;
    char *real = NULL;
    size_t i;
    int rc = -1;

    memset(&w, 0, sizeof(w));
    w.dirfd = -1;
    w.max_bytes = max_bytes;
    w.err = err;
    w.errlen = errlen;
    /* libarchive refuses to write through any symlink in the path; the
     * context's own path has none once resolved. */
    real = realpath(dir, NULL);
    if (real == NULL ||
        (w.dirfd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(err, errlen, "build_context: %s: %s", dir, strerror(errno));
        goto out;
    }
    w.dir = real;
    w.out = archive_write_disk_new();
    if (w.out == NULL) {
        snprintf(err, errlen, "build_context: out of memory");
        goto out;
    }
    archive_write_disk_set_options(w.out, ARCHIVE_EXTRACT_TIME |
                                              ARCHIVE_EXTRACT_PERM |
                                              ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                              ARCHIVE_EXTRACT_SECURE_NODOTDOT);
    rc = walk_archive(&w, fd);
out:
    if (w.out != NULL)
        archive_write_free(w.out);
    if (w.dirfd >= 0)
        close(w.dirfd);
    for (i = 0; i < w.n_links; i++)
        free(w.links[i]);
    free(w.links);
    free(real);
    return rc;
}

/* Opens (creating when missing) directory name under dirfd, following no
 * symlink: a new fd, or -1. */
static int open_dir_step(int dirfd, const char *name)
{
    int fd =
        openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0 && errno == ENOENT) {
        if (mkdirat(dirfd, name, 0755) != 0 && errno != EEXIST)
            return -1;
        fd = openat(dirfd, name,
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    return fd;
}

int build_context_write(const char *dir, const char *rel, const char *data,
                        char *err, size_t errlen)
{
    char *copy = strdup(rel);
    char *save = NULL;
    char *name = NULL;
    char *next = NULL;
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int fd = -1;
    int rc = -1;

    if (copy == NULL || dirfd < 0)
        goto fail;
    name = strtok_r(copy, "/", &save);
    while (name != NULL) {
        next = strtok_r(NULL, "/", &save);
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
            errno = EINVAL;
            goto fail;
        }
        if (next == NULL)
            break;
        fd = open_dir_step(dirfd, name);
        if (fd < 0)
            goto fail;
        close(dirfd);
        dirfd = fd;
        fd = -1;
        name = next;
    }
    if (name == NULL) {
        errno = EINVAL;
        goto fail;
    }
    fd = openat(dirfd, name,
                O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || util_write_all(fd, data, strlen(data)) != 0)
        goto fail;
    rc = 0;
    goto out;
fail:
    snprintf(err, errlen, "cannot write %.300s into the build context: %s%s",
             rel, strerror(errno),
             errno == ELOOP || errno == ENOTDIR
                 ? " (a file_mounts path must not pass through a symlink of "
                   "build_context)"
                 : "");
out:
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    free(copy);
    return rc;
}
