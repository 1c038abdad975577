/* devboxd-build-runtime: the OCI runtime buildah runs a build's RUN steps
 * with (`buildah build --runtime devboxd-build-runtime --runtime-flag
 * devboxd-runc=<runc>`).  It adds what devboxd hides from a build to the
 * bundle's config.json and execs runc with the same arguments:
 * /proc/cmdline (the host's kernel command line, which buildah 1.28 leaves
 * visible and offers no option to mask) joins linux.maskedPaths.
 * Everything else passes through unchanged. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUNC_FLAG "--devboxd-runc="
#define CONFIG_MAX (16u << 20)

static const char *const hidden[] = {"/proc/cmdline", NULL};

static char *read_all(int fd, size_t *len)
{
    char *buf = NULL;
    size_t cap = 0;
    size_t n = 0;
    ssize_t r;

    for (;;) {
        if (n == cap) {
            char *nb = NULL;

            if (cap >= CONFIG_MAX)
                goto fail;
            cap = cap == 0 ? 65536 : cap * 2;
            nb = realloc(buf, cap + 1);
            if (nb == NULL)
                goto fail;
            buf = nb;
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto fail;
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    free(buf);
    return NULL;
}

/* Adds the hidden paths to bundle/config.json's linux.maskedPaths. */
static int mask_paths(const char *bundle)
{
    char path[PATH_MAX];
    char tmp[PATH_MAX];
    cJSON *root = NULL;
    cJSON *linux_o = NULL;
    cJSON *masked = NULL;
    char *text = NULL;
    char *out = NULL;
    size_t len = 0;
    size_t i;
    int fd = -1;
    int rc = -1;

    snprintf(path, sizeof(path), "%s/config.json", bundle);
    snprintf(tmp, sizeof(tmp), "%s/.config.json.devboxd", bundle);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        goto out;
    text = read_all(fd, &len);
    close(fd);
    fd = -1;
    root = text != NULL ? cJSON_ParseWithLength(text, len) : NULL;
    if (!cJSON_IsObject(root))
        goto out;
    linux_o = cJSON_GetObjectItemCaseSensitive(root, "linux");
    if (linux_o == NULL)
        linux_o = cJSON_AddObjectToObject(root, "linux");
    masked = cJSON_GetObjectItemCaseSensitive(linux_o, "maskedPaths");
    if (masked == NULL)
        masked = cJSON_AddArrayToObject(linux_o, "maskedPaths");
    if (!cJSON_IsArray(masked))
        goto out;
    for (i = 0; hidden[i] != NULL; i++)
        cJSON_AddItemToArray(masked, cJSON_CreateString(hidden[i]));
    out = cJSON_PrintUnformatted(root);
    if (out == NULL)
        goto out;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, out, strlen(out)) != (ssize_t)strlen(out) ||
        fsync(fd) != 0)
        goto out;
    close(fd);
    fd = -1;
    rc = rename(tmp, path);
out:
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        unlink(tmp);
    cJSON_Delete(root);
    free(text);
    free(out);
    return rc;
}

int main(int argc, char **argv)
{
    const char *runc = "/usr/sbin/runc";
    char **args = calloc((size_t)argc + 1, sizeof(*args));
    const char *bundle = NULL;
    bool creates = false;
    int i;
    int n = 1;

    if (args == NULL)
        return 125;
    for (i = 1; i < argc; i++) {
        if (strncmp(argv[i], RUNC_FLAG, strlen(RUNC_FLAG)) == 0) {
            runc = argv[i] + strlen(RUNC_FLAG);
            continue;
        }
        if (strcmp(argv[i], "create") == 0 || strcmp(argv[i], "run") == 0)
            creates = true;
        if ((strcmp(argv[i], "--bundle") == 0 || strcmp(argv[i], "-b") == 0) &&
            i + 1 < argc)
            bundle = argv[i + 1];
        else if (strncmp(argv[i], "--bundle=", 9) == 0)
            bundle = argv[i] + 9;
        args[n++] = argv[i];
    }
    args[0] = (char *)runc;
    args[n] = NULL;
    /* A step whose config cannot be changed does not run. */
    if (creates && bundle != NULL && mask_paths(bundle) != 0) {
        fprintf(
            stderr,
            "devboxd-build-runtime: cannot mask paths in %s/config.json: %s\n",
            bundle, strerror(errno));
        return 125;
    }
    execv(runc, args);
    fprintf(stderr, "devboxd-build-runtime: cannot run %s: %s\n", runc,
            strerror(errno));
    return 125;
}
