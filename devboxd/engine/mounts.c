/* devboxd mounts: see mounts.h. File mounts carry their content in the
 * spec; object mounts copy a storage object's bytes (objects.c) and unpack
 * archives inside the devbox with its own tar and gzip. */
#define _GNU_SOURCE
#include "mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "code_mounts.h"
#include "objects.h"
#include "sandbox.h"
#include "util.h"

/* Runs cmd (consumed; NULL: out of memory) as a boot command; 0 when it
 * exited 0. */
static int run_cmd(struct engine *eng, struct devbox *box, char *cmd, char *err,
                   size_t errlen)
{
    int rc = -1;

    if (cmd == NULL)
        snprintf(err, errlen, "out of memory");
    else
        rc = engine_run_boot_command(eng, box, cmd, "files", err, errlen) == 0
                 ? 0
                 : -1;
    free(cmd);
    return rc;
}

static int make_parent(struct engine *eng, struct devbox *box,
                       const char *target, char *err, size_t errlen)
{
    char *dir = strdup(target);
    char *slash = dir != NULL ? strrchr(dir, '/') : NULL;
    int rc = 0;

    if (dir == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (slash != NULL && slash != dir) {
        *slash = '\0';
        char *q = util_shell_quote(dir);
        char *cmd = NULL;

        if (q == NULL || asprintf(&cmd, "mkdir -p -- %s", q) < 0)
            cmd = NULL;
        rc = run_cmd(eng, box, cmd, err, errlen);
        free(q);
        if (rc != 0)
            snprintf(err, errlen,
                     "cannot create the parent directory of mount '%s'",
                     target);
    }
    free(dir);
    return rc;
}

/* Writes content (len bytes), or everything read from src when content is
 * NULL, to target inside the devbox. */
static int copy_in(struct devbox *box, const char *target, const char *content,
                   size_t len, int src, char *err, size_t errlen)
{
    char buf[65536];
    ssize_t n = 0;
    int fd = sandbox_open(box->sb, target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = -1;

    if (fd < 0) {
        snprintf(err, errlen, "cannot write mount '%s': %s", target,
                 strerror(-fd));
        return -1;
    }
    if (content != NULL) {
        rc = util_write_all(fd, content, len);
    } else {
        while ((n = read(src, buf, sizeof(buf))) > 0 ||
               (n < 0 && errno == EINTR)) {
            if (n > 0 && util_write_all(fd, buf, (size_t)n) != 0)
                break;
        }
        rc = n == 0 ? 0 : -1;
    }
    if (rc != 0)
        snprintf(err, errlen, "cannot write mount '%s': %s", target,
                 strerror(errno));
    close(fd);
    return rc;
}

static int write_file_mount(struct engine *eng, struct devbox *box,
                            const char *target, const char *content, char *err,
                            size_t errlen)
{
    if (make_parent(eng, box, target, err, errlen) != 0)
        return -1;
    return copy_in(box, target, content, strlen(content), -1, err, errlen);
}

/* Unpacks the archive at tmp (then removed) to path inside the devbox. */
static int unpack(struct engine *eng, struct devbox *box,
                  const char *content_type, const char *tmp, const char *path,
                  char *err, size_t errlen)
{
    char *qt = util_shell_quote(tmp);
    char *qp = util_shell_quote(path);
    const char *z = strcmp(content_type, "tgz") == 0 ? "z" : "";
    char *cmd = NULL;
    int n = -1;

    if (qt != NULL && qp != NULL && strcmp(content_type, "gzip") == 0)
        n = asprintf(&cmd, "gzip -dc < %s > %s; rc=$?; rm -f -- %s; exit $rc",
                     qt, qp, qt);
    else if (qt != NULL && qp != NULL)
        n = asprintf(&cmd,
                     "mkdir -p -- %s && tar -x%sf %s -C %s; rc=$?; rm -f -- "
                     "%s; exit $rc",
                     qp, z, qt, qp, qt);
    if (n < 0)
        cmd = NULL;
    free(qt);
    free(qp);
    return run_cmd(eng, box, cmd, err, errlen);
}

static int is_archive(const char *content_type)
{
    return strcmp(content_type, "tar") == 0 ||
           strcmp(content_type, "tgz") == 0 ||
           strcmp(content_type, "gzip") == 0;
}

static int write_object_mount(struct engine *eng, struct devbox *box,
                              const cJSON *m, char *err, size_t errlen)
{
    const char *id = util_json_str(m, "object_id");
    const char *path = util_json_str(m, "object_path");
    const char *ct = util_json_str(m, "content_type");
    char tmp[80];
    char why[256] = "";
    int src = objects_open(eng, id, why, sizeof(why));
    int rc = -1;

    if (src < 0) {
        snprintf(err, errlen, "object mount at '%s': %s", path, why);
        return -1;
    }
    if (make_parent(eng, box, path, err, errlen) != 0)
        goto out;
    if (!is_archive(ct)) {
        rc = copy_in(box, path, NULL, 0, src, err, errlen);
        goto out;
    }
    /* An archive lands in /tmp first and is unpacked by the devbox's own
     * tools, as its user: a hostile archive can do no more than they can. */
    snprintf(tmp, sizeof(tmp), "/tmp/.devboxd-%s", id);
    if (copy_in(box, tmp, NULL, 0, src, err, errlen) != 0)
        goto out;
    rc = unpack(eng, box, ct, tmp, path, why, sizeof(why));
    if (rc != 0)
        snprintf(err, errlen, "cannot unpack object %s (%s) at '%s'%s%s", id,
                 ct, path, why[0] != '\0' ? ": " : "", why);
out:
    close(src);
    return rc;
}

struct boot_ref {
    struct engine *eng;
    struct devbox *box;
};

/* A shutdown of the devbox or devboxd's stop cancels its boot: the host's
 * clone ends then instead of at RLMCP_CODE_MOUNT_TIMEOUT_S. */
static int boot_stop(void *ctx, char *why, size_t whylen)
{
    const struct boot_ref *ref = ctx;
    int cancel;

    pthread_mutex_lock(&ref->eng->lock);
    cancel = ref->box->cancel_boot != 0 || ref->eng->stopping;
    pthread_mutex_unlock(&ref->eng->lock);
    if (cancel)
        snprintf(why, whylen, "the devbox's boot was cancelled");
    return cancel;
}

/* Clones a code mount on the host into a bundle, which the devbox's own
 * git clones into ~/<repo_name> as its user (once: a resume keeps it). */
static int write_code_mount(struct engine *eng, struct devbox *box,
                            const cJSON *m, int i, char *err, size_t errlen)
{
    const char *name = util_json_str(m, "repo_name");
    char host[4200];
    char tmp[80];
    char why[512] = "";
    char *cmd = NULL;
    struct boot_ref ref = {eng, box};
    int src = -1;
    int st;

    if (asprintf(&cmd, "test -e \"$HOME\"/%s", name) < 0)
        cmd = NULL;
    if (cmd != NULL && engine_run_boot_command(eng, box, cmd, "files", why,
                                               sizeof(why)) == 0) {
        free(cmd);
        return 0;
    }
    free(cmd);
    snprintf(host, sizeof(host), "%s/code-%s-%d.bundle", eng->state_dir,
             box->id, i);
    if (code_mounts_bundle(m, host, boot_stop, &ref, err, errlen) != 0)
        goto out;
    src = open(host, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    snprintf(tmp, sizeof(tmp), "/tmp/.devboxd-code-%d.bundle", i);
    if (src < 0 || copy_in(box, tmp, NULL, 0, src, err, errlen) != 0)
        goto fail;
    cmd = code_mounts_script(m, tmp, "\"$HOME\"");
    st = cmd != NULL
             ? engine_run_boot_command(eng, box, cmd, "files", why, sizeof(why))
             : -1;
    free(cmd);
    if (st != 0) {
        snprintf(
            err, errlen,
            "code_mounts[%d] (%s): the clone into ~/%s or its install_command "
            "failed (exit status %d; the devbox's logs have its output)%s%s",
            i, name, name, st, why[0] ? ": " : "", why);
        goto fail;
    }
    unlink(host);
    close(src);
    return 0;
fail:
    unlink(host);
out:
    if (src >= 0)
        close(src);
    return -1;
}

int mounts_write(struct engine *eng, struct devbox *box, char *err,
                 size_t errlen)
{
    const cJSON *mounts = cJSON_GetObjectItemCaseSensitive(box->spec, "mounts");
    const cJSON *objs =
        cJSON_GetObjectItemCaseSensitive(box->spec, "_object_mounts");
    const cJSON *fm =
        cJSON_GetObjectItemCaseSensitive(box->spec, "file_mounts");
    const cJSON *it = NULL;
    int i;

    cJSON_ArrayForEach(it, mounts)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(it, "type");
        const cJSON *target = cJSON_GetObjectItemCaseSensitive(it, "target");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");

        /* Object mounts are written from "_object_mounts" below. */
        if (strcmp(cJSON_GetStringValue(type), "file_mount") != 0)
            continue;
        if (write_file_mount(eng, box, target->valuestring,
                             content->valuestring, err, errlen) != 0)
            return -1;
    }
    cJSON_ArrayForEach(it, objs)
    {
        if (write_object_mount(eng, box, it, err, errlen) != 0)
            return -1;
    }
    cJSON_ArrayForEach(it, fm)
    {
        if (write_file_mount(eng, box, it->string, it->valuestring, err,
                             errlen) != 0)
            return -1;
    }
    i = 0;
    cJSON_ArrayForEach(
        it, cJSON_GetObjectItemCaseSensitive(box->spec, "code_mounts"))
    {
        if (write_code_mount(eng, box, it, i++, err, errlen) != 0)
            return -1;
    }
    return 0;
}
