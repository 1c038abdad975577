/* devboxd-build-runtime: the OCI runtime buildah runs a build's RUN steps
 * with (`buildah build --runtime devboxd-build-runtime --runtime-flag
 * devboxd-runc=<runc>`).  It adds what devboxd hides from a build to the
 * bundle's config.json and execs runc with the same arguments:
 * /proc/cmdline (the host's kernel command line, which buildah 1.28 leaves
 * visible and offers no option to mask) joins linux.maskedPaths; with
 * --devboxd-userns=PATH --devboxd-netns=PATH (the build's own namespaces,
 * see engine/build_net.h) the step joins that user namespace, and runs
 * only when buildah put it in that network namespace.  With
 * --devboxd-memcg=DIR --devboxd-oom-log=FILE each step runs in a group of
 * its own under the build's (the build's limits bound it all the same):
 * runc delete then removes an empty group at once instead of retrying the
 * build's, which buildah itself keeps busy, for 150 ms; the step's group
 * counts its OOM kills, which delete adds to FILE (DIR is the build's
 * memory group) before the group goes.
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
#define USERNS_FLAG "--devboxd-userns="
#define NETNS_FLAG "--devboxd-netns="
#define MEMCG_FLAG "--devboxd-memcg="
#define OOMLOG_FLAG "--devboxd-oom-log="
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

/* The namespace entry of type in linux.namespaces, or NULL. */
static cJSON *ns_entry(cJSON *linux_o, const char *type)
{
    cJSON *it = NULL;

    cJSON_ArrayForEach(it,
                       cJSON_GetObjectItemCaseSensitive(linux_o, "namespaces"))
    {
        const char *t =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "type"));

        if (t != NULL && strcmp(t, type) == 0)
            return it;
    }
    return NULL;
}

/* The step into the build's namespaces: its user namespace joined (the
 * step's own would not own the network namespace, and runc could not
 * mount /sys), its network namespace checked. */
static int join_build_ns(cJSON *linux_o, const char *userns, const char *netns)
{
    cJSON *user = ns_entry(linux_o, "user");
    cJSON *net = ns_entry(linux_o, "network");
    const char *path =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(net, "path"));

    if (user == NULL || path == NULL || strcmp(path, netns) != 0) {
        fprintf(stderr, "devboxd-build-runtime: a step outside the build's "
                        "user or network namespace is refused\n");
        errno = EPERM;
        return -1;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(user, "path");
    cJSON_AddStringToObject(user, "path", userns);
    return 0;
}

/* A runc container id (runc's own rule), safe as a group's name. */
static bool valid_id(const char *id)
{
    size_t i;

    if (id == NULL || id[0] == '\0' || id[0] == '.' || strlen(id) > 1024)
        return false;
    for (i = 0; id[i] != '\0'; i++) {
        char c = id[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
              c == '+'))
            return false;
    }
    return true;
}

/* The step's group: linux.cgroupsPath (the build's) + "/" + its id. */
static int step_cgroup(cJSON *linux_o, const char *id)
{
    const char *parent = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(linux_o, "cgroupsPath"));
    char *path = NULL;
    int rc = -1;

    if (parent == NULL || parent[0] != '/' || !valid_id(id)) {
        fprintf(stderr, "devboxd-build-runtime: a step without the build's "
                        "cgroup is refused\n");
        errno = EPERM;
        return -1;
    }
    if (asprintf(&path, "%s/%s", parent, id) < 0)
        return -1;
    cJSON_DeleteItemFromObjectCaseSensitive(linux_o, "cgroupsPath");
    if (cJSON_AddStringToObject(linux_o, "cgroupsPath", path) != NULL)
        rc = 0;
    free(path);
    return rc;
}

/* Before runc delete removes step id's group: its OOM kills, if any,
 * appended to log as a line "id N". */
static void log_ooms(const char *memcg, const char *log, const char *id)
{
    char path[PATH_MAX];
    char buf[512];
    char line[1200];
    const char *p = NULL;
    unsigned long long n = 0;
    ssize_t r;
    int fd;

    if (!valid_id(id))
        return;
    snprintf(path, sizeof(path), "%s/%s/memory.oom_control", memcg, id);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    r = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (r <= 0)
        return;
    buf[r] = '\0';
    p = strstr(buf, "oom_kill ");
    if (p != NULL)
        n = strtoull(p + strlen("oom_kill "), NULL, 10);
    if (n == 0)
        return;
    snprintf(line, sizeof(line), "%s %llu\n", id, n);
    fd =
        open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || write(fd, line, strlen(line)) != (ssize_t)strlen(line))
        fprintf(stderr,
                "devboxd-build-runtime: cannot note %s's OOM kills "
                "in %s\n",
                id, log);
    if (fd >= 0)
        close(fd);
}

/* Adds the hidden paths to bundle/config.json's linux.maskedPaths (and the
 * build's namespaces when userns is set, the step's own group when id is). */
static int edit_config(const char *bundle, const char *userns,
                       const char *netns, const char *id)
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
    if (userns != NULL && join_build_ns(linux_o, userns, netns) != 0)
        goto out;
    if (id != NULL && step_cgroup(linux_o, id) != 0)
        goto out;
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
    if (rc != 0) {
        int saved = errno;

        unlink(tmp);
        errno = saved;
    }
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
    const char *userns = NULL;
    const char *netns = NULL;
    const char *memcg = NULL;
    const char *oom_log = NULL;
    bool creates = false;
    bool deletes = false;
    int i;
    int n = 1;

    if (args == NULL)
        return 125;
    for (i = 1; i < argc; i++) {
        if (strncmp(argv[i], RUNC_FLAG, strlen(RUNC_FLAG)) == 0) {
            runc = argv[i] + strlen(RUNC_FLAG);
            continue;
        }
        if (strncmp(argv[i], USERNS_FLAG, strlen(USERNS_FLAG)) == 0) {
            userns = argv[i] + strlen(USERNS_FLAG);
            continue;
        }
        if (strncmp(argv[i], NETNS_FLAG, strlen(NETNS_FLAG)) == 0) {
            netns = argv[i] + strlen(NETNS_FLAG);
            continue;
        }
        if (strncmp(argv[i], MEMCG_FLAG, strlen(MEMCG_FLAG)) == 0) {
            memcg = argv[i] + strlen(MEMCG_FLAG);
            continue;
        }
        if (strncmp(argv[i], OOMLOG_FLAG, strlen(OOMLOG_FLAG)) == 0) {
            oom_log = argv[i] + strlen(OOMLOG_FLAG);
            continue;
        }
        if (strcmp(argv[i], "create") == 0 || strcmp(argv[i], "run") == 0)
            creates = true;
        if (strcmp(argv[i], "delete") == 0)
            deletes = true;
        if ((strcmp(argv[i], "--bundle") == 0 || strcmp(argv[i], "-b") == 0) &&
            i + 1 < argc)
            bundle = argv[i + 1];
        else if (strncmp(argv[i], "--bundle=", 9) == 0)
            bundle = argv[i] + 9;
        args[n++] = argv[i];
    }
    args[0] = (char *)runc;
    args[n] = NULL;
    if ((userns == NULL) != (netns == NULL)) {
        fprintf(stderr, "devboxd-build-runtime: --devboxd-userns and "
                        "--devboxd-netns go together\n");
        return 125;
    }
    if (creates && bundle == NULL && userns != NULL) {
        fprintf(stderr, "devboxd-build-runtime: no --bundle to put in the "
                        "build's namespaces\n");
        return 125;
    }
    if ((memcg == NULL) != (oom_log == NULL)) {
        fprintf(stderr, "devboxd-build-runtime: --devboxd-memcg and "
                        "--devboxd-oom-log go together\n");
        return 125;
    }
    /* runc create|run|delete ... ID: the container's id comes last. */
    if (deletes && memcg != NULL && n > 1)
        log_ooms(memcg, oom_log, args[n - 1]);
    /* A step whose config cannot be changed does not run. */
    if (creates && bundle != NULL &&
        edit_config(bundle, userns, netns,
                    memcg != NULL && n > 1 ? args[n - 1] : NULL) != 0) {
        fprintf(stderr,
                "devboxd-build-runtime: cannot prepare %s/config.json: %s\n",
                bundle, strerror(errno));
        return 125;
    }
    execv(runc, args);
    fprintf(stderr, "devboxd-build-runtime: cannot run %s: %s\n", runc,
            strerror(errno));
    return 125;
}
