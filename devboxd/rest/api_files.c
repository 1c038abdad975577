/* devboxd files API. Every path goes through sandbox_open(), which resolves
 * it inside the devbox root only (openat2 RESOLVE_IN_ROOT), as the devbox's
 * user. The caller holds box->io_refs so the sandbox stays up meanwhile. */
#define _GNU_SOURCE
#include "api.h"
#include "file_writes.h"
#include "multipart.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define READ_CONTENTS_MAX (64u << 20)
/* open_regular(): the path names a FIFO, socket or device, not a file. */
#define NOT_REGULAR (-ENOSTR)

static void open_error(struct http_response *resp, const char *path, int rc)
{
    switch (-rc) {
    case ENOENT:
        http_response_error(
            resp, 404,
            "file '%s' not found in the devbox (relative paths start at "
            "/home/user)",
            path);
        break;
    case EACCES:
    case EPERM:
        http_response_error(
            resp, 403,
            "permission denied for '%s': the devbox user cannot access "
            "it (change its mode with a command first)",
            path);
        break;
    case EISDIR:
        http_response_error(resp, 400, "'%s' is a directory; give a file path",
                            path);
        break;
    case EXDEV:
        http_response_error(
            resp, 400,
            "'%s' is on a read-only system mount of the devbox (/usr, "
            "/proc, /dev); use a path under /home/user or /tmp",
            path);
        break;
    case ENOTDIR:
        http_response_error(resp, 400, "a parent of '%s' is not a directory",
                            path);
        break;
    case -NOT_REGULAR:
        http_response_error(
            resp, 400,
            "'%s' is not a regular file (a FIFO, socket or device); "
            "give the path of a regular file",
            path);
        break;
    default:
        http_response_error(resp, 400, "cannot open '%s' in the devbox: %s",
                            path, strerror(-rc));
        break;
    }
}

static int get_path(const cJSON *body, const char *field,
                    const char *const *fields, struct http_response *resp,
                    const char **out)
{
    char err[512];

    if (util_check_fields(body, "", fields, err, sizeof(err)) != 0 ||
        util_opt_string(body, field, out, err, sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        return -1;
    }
    if (*out == NULL || (*out)[0] == '\0') {
        http_response_error(resp, 400,
                            "'%s' is required: the file's path in the devbox",
                            field);
        return -1;
    }
    if (memchr(*out, '\0', strlen(*out) + 1) != *out + strlen(*out)) {
        http_response_error(resp, 400, "'%s' contains a NUL byte", field);
        return -1;
    }
    return 0;
}

/* Creates the parent directories of path inside the devbox as its user. */
static int make_parents(struct engine *eng, struct devbox *box,
                        const char *path)
{
    char *dir = strdup(path);
    char *slash = dir != NULL ? strrchr(dir, '/') : NULL;
    char *cmd = NULL;
    struct execution *ex = NULL;
    char err[256];
    size_t i, j = 0;
    int rc = -1;

    if (slash == NULL || slash == dir)
        goto out;
    *slash = '\0';
    cmd = malloc(strlen(dir) * 4 + 32);
    if (cmd == NULL)
        goto out;
    j = (size_t)sprintf(cmd, "mkdir -p -- '");
    for (i = 0; dir[i] != '\0'; i++) {
        if (dir[i] == '\'') {
            memcpy(cmd + j, "'\\''", 4);
            j += 4;
        } else {
            cmd[j++] = dir[i];
        }
    }
    cmd[j++] = '\'';
    cmd[j] = '\0';
    pthread_mutex_lock(&eng->lock);
    ex = box->sb != NULL ? engine_exec_start(eng, box, cmd, NULL, NULL, 0,
                                             "files", err, sizeof(err))
                         : NULL;
    if (ex != NULL) {
        while (ex->status != EXEC_COMPLETED)
            pthread_cond_wait(&eng->changed, &eng->lock);
        rc = ex->exit_status == 0 ? 0 : -1;
        engine_exec_unref_locked(ex);
    }
    pthread_mutex_unlock(&eng->lock);
out:
    free(dir);
    free(cmd);
    return rc;
}

/* Opens a regular file in the devbox. O_NONBLOCK because the devbox owns
 * its files: a FIFO planted at the path would otherwise block open() (and
 * with it this request and any suspend/shutdown waiting for io_refs)
 * forever. Anything but a regular file is refused with NOT_REGULAR. */
static int open_regular(struct devbox *box, const char *path, int flags,
                        mode_t mode)
{
    struct stat st;
    int fd;
    int fl;

    fd = sandbox_open(box->sb, path, flags | O_NONBLOCK, mode);
    if (fd == -ENXIO)
        return NOT_REGULAR; /* a FIFO with no reader, opened for writing */
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return NOT_REGULAR;
    }
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        close(fd);
        return -EIO;
    }
    return fd;
}

/* The file's directory (open, inside the devbox) and its last component. */
static int open_parent(struct engine *eng, struct devbox *box, const char *path,
                       char *base, size_t baselen)
{
    char *dir = strdup(path);
    char *slash = dir != NULL ? strrchr(dir, '/') : NULL;
    const char *name = slash != NULL ? slash + 1 : dir;
    const char *parent = slash == NULL ? "." : slash == dir ? "/" : dir;
    int fd = -ENOMEM;

    if (dir == NULL)
        goto out;
    fd = -EISDIR;
    if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
        strlen(name) + 1 > baselen)
        goto out;
    snprintf(base, baselen, "%s", name);
    if (slash != NULL)
        *slash = '\0';
    fd = sandbox_open(box->sb, parent, O_RDONLY | O_DIRECTORY, 0);
    if (fd == -ENOENT && make_parents(eng, box, path) == 0)
        fd = sandbox_open(box->sb, parent, O_RDONLY | O_DIRECTORY, 0);
out:
    free(dir);
    return fd;
}

/* Until as_devboxd: this thread's file-system calls act as the devbox's
 * user (fsuid/fsgid are per thread), as sandbox_open does. */
static uid_t as_user(struct devbox *box, uid_t *old_gid)
{
    uid_t uid = sandbox_host_uid(box->sb);

    *old_gid = (uid_t)syscall(SYS_setfsgid, uid);
    return (uid_t)syscall(SYS_setfsuid, uid);
}

static void as_devboxd(uid_t old_uid, uid_t old_gid)
{
    syscall(SYS_setfsuid, old_uid);
    syscall(SYS_setfsgid, old_gid);
}

/* Writes a file inside the devbox so that a failure (a full disk) never
 * leaves it torn: the bytes go to a temporary file in the same directory,
 * fsync, then rename over the old one. An existing file must be a regular
 * file the devbox user may write (as before); its mode is kept. Returns 0
 * or -errno (NOT_REGULAR). */
static int write_file(struct engine *eng, struct devbox *box, const char *path,
                      const char *data, size_t len)
{
    char base[256];
    char tmp[300];
    char *note = NULL;
    struct stat st;
    mode_t mode = 0644;
    uid_t old_uid, old_gid;
    int dfd = -1;
    int fd;
    int rc;

    fd = open_regular(box, path, O_WRONLY, 0);
    if (fd >= 0 && fstat(fd, &st) == 0)
        mode = st.st_mode & 07777 & ~(mode_t)06000;
    if (fd >= 0)
        close(fd);
    else if (fd != -ENOENT)
        return fd;
    dfd = open_parent(eng, box, path, base, sizeof(base));
    if (dfd < 0)
        return dfd;
    snprintf(tmp, sizeof(tmp), ".%.200s.%ld.devboxd-tmp", base, (long)gettid());
    /* Should devboxd die before the rename, the next start removes it. */
    note = file_writes_begin(eng, box->id, path, tmp);
    old_uid = as_user(box, &old_gid);
    fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                mode);
    rc = fd < 0 ? -errno : 0;
    if (rc == 0) {
        rc = util_write_all(fd, data, len) == 0 ? 0 : -errno;
        if (rc == 0 && fsync(fd) != 0)
            rc = -errno;
        if (close(fd) != 0 && rc == 0)
            rc = -errno;
        if (rc == 0 && renameat(dfd, tmp, dfd, base) != 0)
            rc = -errno;
        if (rc != 0)
            unlinkat(dfd, tmp, 0);
    }
    as_devboxd(old_uid, old_gid);
    file_writes_end(note);
    if (rc == 0)
        fsync(dfd);
    close(dfd);
    return rc;
}

/* A full disk names whose (the devbox's or the engine's), a read-only one
 * says so: never an argument to fix. */
static void write_error(struct engine *eng, struct devbox *box,
                        struct http_response *resp, const char *path, int rc,
                        size_t len)
{
    char why[1024];
    int status = engine_disk_trouble(eng, box, rc, len, why, sizeof(why));

    if (status != 0)
        http_response_error(resp, status,
                            "'%s' was not written (an existing file is "
                            "unchanged): %s",
                            path, why);
    else if (rc == -EIO)
        http_response_error(resp, 500,
                            "'%s' was not written: the devbox's disk "
                            "answered an I/O error (see devboxd's log)",
                            path);
    else
        open_error(resp, path, rc);
}

/* open_regular for a failed devbox whose disk was kept: from what it
 * wrote, read-only.  An overlay whiteout (a deleted file) is not there. */
static int open_kept(struct engine *eng, struct devbox *box, const char *path)
{
    char *dir = engine_sandbox_dir(eng, box->id);
    struct stat st;
    int fd;
    int fl;

    if (dir == NULL)
        return -ENOMEM;
    fd = sandbox_open_kept(dir, path);
    free(dir);
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fl = S_ISCHR(st.st_mode) && st.st_rdev == 0 ? -ENOENT : NOT_REGULAR;
        close(fd);
        return fl;
    }
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        close(fd);
        return -EIO;
    }
    return fd;
}

/* The devbox's file named by body's field, opened for reading: the fd, or
 * -1 once resp says why not.  *path gets the name. */
static int open_for_read(struct engine *eng, struct devbox *box,
                         const cJSON *body, const char *field,
                         const char *const *fields, struct http_response *resp,
                         const char **path)
{
    int fd;

    if (get_path(body, field, fields, resp, path) != 0)
        return -1;
    if (box->sb == NULL && box->disk_kept) {
        fd = open_kept(eng, box, *path);
        if (fd == -ENOENT) {
            http_response_error(
                resp, 404,
                "file '%s' not found on the kept disk of failed devbox %s "
                "(it holds the files the devbox wrote; relative paths start "
                "at /home/user)",
                *path, box->id);
            return -1;
        }
    } else {
        fd = open_regular(box, *path, O_RDONLY, 0);
    }
    if (fd < 0) {
        open_error(resp, *path, fd);
        return -1;
    }
    return fd;
}

void files_read_contents(struct engine *eng, struct devbox *box,
                         const cJSON *body, struct http_response *resp)
{
    static const char *const fields[] = {"file_path", NULL};
    const char *path = NULL;
    struct stat st;
    char *buf = NULL;
    size_t len = 0;
    int fd;

    fd = open_for_read(eng, box, body, "file_path", fields, resp, &path);
    if (fd < 0)
        return;
    if (fstat(fd, &st) != 0) {
        http_response_error(resp, 500, "cannot stat '%s': %s", path,
                            strerror(errno));
        goto out;
    }
    if ((uint64_t)st.st_size > READ_CONTENTS_MAX) {
        http_response_error(
            resp, 400,
            "'%s' is %lld bytes; read_file_contents returns at most %u "
            "bytes, use download_file",
            path, (long long)st.st_size, READ_CONTENTS_MAX);
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL) {
        http_response_error(resp, 500, "out of memory");
        goto out;
    }
    while (len < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

        if (n <= 0)
            break;
        len += (size_t)n;
    }
    http_response_set_body(resp, 200, "text/plain; charset=utf-8", buf, len);
    buf = NULL;
out:
    free(buf);
    close(fd);
}

void files_write_contents(struct engine *eng, struct devbox *box,
                          const cJSON *body, struct http_response *resp)
{
    static const char *const fields[] = {"file_path", "contents", NULL};
    const char *path = NULL;
    const char *contents = NULL;
    cJSON *out = NULL;
    char err[256];
    int rc;

    if (get_path(body, "file_path", fields, resp, &path) != 0)
        return;
    if (util_opt_string(body, "contents", &contents, err, sizeof(err)) != 0 ||
        contents == NULL) {
        http_response_error(resp, 400,
                            "'contents' is required: the file's text (UTF-8)");
        return;
    }
    rc = write_file(eng, box, path, contents, strlen(contents));
    if (rc != 0) {
        write_error(eng, box, resp, path, rc, strlen(contents));
        return;
    }
    out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "devbox_id", box->id);
    cJSON_AddNumberToObject(out, "exit_status", 0);
    cJSON_AddStringToObject(out, "stdout", "");
    cJSON_AddStringToObject(out, "stderr", "");
    cJSON_AddNullToObject(out, "shell_name");
    http_response_json(resp, 200, out);
}

struct dl_ctx {
    int fd;
};

static ssize_t dl_read(void *arg, char *buf, size_t max)
{
    struct dl_ctx *c = arg;
    ssize_t n;

    do {
        n = read(c->fd, buf, max);
    } while (n < 0 && errno == EINTR);
    return n;
}

static void dl_free(void *arg)
{
    struct dl_ctx *c = arg;

    close(c->fd);
    free(c);
}

void files_stream_fd(struct http_response *resp, int fd)
{
    struct dl_ctx *c = NULL;
    struct stat st;
    char len[32];

    if (fstat(fd, &st) != 0) {
        http_response_error(resp, 500, "cannot stat the file to send: %s",
                            strerror(errno));
        close(fd);
        return;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        close(fd);
        http_response_error(resp, 500, "out of memory");
        return;
    }
    c->fd = fd;
    /* The file is read while streaming: its devbox may be stopped, or the
     * file removed, after this returns, but the open fd stays valid. */
    resp->status = 200;
    http_response_set_header(resp, "content-type", "application/octet-stream");
    snprintf(len, sizeof(len), "%lld", (long long)st.st_size);
    http_response_set_header(resp, "x-file-size", len);
    resp->stream = dl_read;
    resp->stream_ctx = c;
    resp->stream_free = dl_free;
}

void files_download(struct engine *eng, struct devbox *box, const cJSON *body,
                    struct http_response *resp)
{
    static const char *const fields[] = {"path", NULL};
    const char *path = NULL;
    int fd;

    fd = open_for_read(eng, box, body, "path", fields, resp, &path);
    if (fd >= 0)
        files_stream_fd(resp, fd);
}

void files_upload(struct engine *eng, struct devbox *box,
                  const struct http_request *req, struct http_response *resp)
{
    struct multipart_part parts[8];
    const struct multipart_part *file = NULL;
    char boundary[80];
    char path[4096] = "";
    char err[256];
    size_t n = 0, i;
    int rc;

    if (req->body_too_large) {
        http_response_error(
            resp, 413, "upload too large: upload_file accepts at most %u bytes",
            HTTP_MAX_UPLOAD_BODY);
        return;
    }
    if (multipart_boundary(http_request_header(req, "content-type"), boundary,
                           sizeof(boundary)) != 0) {
        http_response_error(
            resp, 400,
            "upload_file needs a multipart/form-data body with a "
            "boundary and the parts 'path' and 'file'");
        return;
    }
    if (multipart_parse(req->body, req->body_len, boundary, parts, 8, &n, err,
                        sizeof(err)) != 0) {
        http_response_error(resp, 400, "%s", err);
        return;
    }
    for (i = 0; i < n; i++) {
        if (strcmp(parts[i].name, "path") == 0) {
            if (parts[i].len == 0 || parts[i].len >= sizeof(path) ||
                memchr(parts[i].data, '\0', parts[i].len) != NULL) {
                http_response_error(resp, 400,
                                    "the 'path' part must be a non-empty path");
                return;
            }
            memcpy(path, parts[i].data, parts[i].len);
            path[parts[i].len] = '\0';
        } else if (strcmp(parts[i].name, "file") == 0) {
            file = &parts[i];
        } else {
            http_response_error(
                resp, 400,
                "unknown multipart part '%s'; send only 'path' and 'file'",
                parts[i].name);
            return;
        }
    }
    if (path[0] == '\0' || file == NULL) {
        http_response_error(
            resp, 400,
            "upload_file needs both parts: 'path' (destination) and "
            "'file' (the bytes)");
        return;
    }
    rc = write_file(eng, box, path, file->data, file->len);
    if (rc != 0) {
        write_error(eng, box, resp, path, rc, file->len);
        return;
    }
    http_response_json(resp, 200, cJSON_CreateObject());
}
