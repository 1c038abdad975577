/* Images: Runloop's public names, the default image, and the image builder
 * (devboxd-image) run on first need.  See images.h. */
#define _GNU_SOURCE
#include "images.h"
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define IMAGES_MAX 8

/* Runloop's public image names agents copy from its docs and examples. */
static const struct {
    const char *name;
    const char *image;
} public_names[] = {
    {"runloop/starter-x86_64", "starter"},
    {"runloop/universal-ubuntu-24.04-x86_64", "universal"},
    {"runloop/universal-ubuntu-22.04-x86_64", "universal"},
};

/* devboxd's own images under the blueprint names the bundled deployments
 * use, so one deployment runs on both backends (on the cloud the name is a
 * blueprint of the account, see docs/tools.md "run_browser"). */
static const struct {
    const char *name;
    const char *image;
} builtin_names[] = {
    {"runloop-mcp-browser", "browser"},
};

static pthread_mutex_t images_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *name;
    char *path;
} known[IMAGES_MAX];

int images_public_name(const char *name, const char **image, char *err,
                       size_t errlen)
{
    size_t i;

    *image = NULL;
    if (name == NULL || strncmp(name, "runloop/", 8) != 0)
        return 0;
    for (i = 0; i < sizeof(public_names) / sizeof(public_names[0]); i++) {
        if (strcmp(name, public_names[i].name) == 0) {
            *image = public_names[i].image;
            return 1;
        }
    }
    snprintf(
        err, errlen,
        "unknown image \"%.100s\": this engine runs runloop/starter-x86_64 and "
        "runloop/universal-ubuntu-24.04-x86_64 (also -22.04-); no arm64 or "
        "docker-in-docker "
        "images",
        name);
    return -1;
}

int images_builtin_name(const char *name, const char **image)
{
    size_t i;

    *image = NULL;
    for (i = 0;
         name != NULL && i < sizeof(builtin_names) / sizeof(builtin_names[0]);
         i++) {
        if (strcmp(name, builtin_names[i].name) == 0) {
            *image = builtin_names[i].image;
            return 1;
        }
    }
    return 0;
}

const char *images_default(void)
{
    const char *v = getenv("RLMCP_DEVBOX_IMAGE");

    return v != NULL && v[0] != '\0' ? v : "starter";
}

static bool known_image(const char *name)
{
    return strcmp(name, "starter") == 0 || strcmp(name, "universal") == 0 ||
           strcmp(name, "browser") == 0;
}

int images_check_default(char *err, size_t errlen)
{
    const char *name = images_default();

    if (strcmp(name, "host") == 0 || known_image(name))
        return 0;
    snprintf(err, errlen,
             "RLMCP_DEVBOX_IMAGE=\"%.100s\" is not an image: set it to starter "
             "(the default), universal, browser or host",
             name);
    return -1;
}

/* Runs "devboxd-image NAME": builds when needed; stderr is devboxd's.
 * With check, "devboxd-image --check NAME": only looks in the cache. */
static int run_builder(const char *name, bool check, char **path, char *err,
                       size_t errlen)
{
    char *builder = sandbox_helper_path("devboxd-image");
    char *build_argv[] = {builder, (char *)name, NULL};
    char *check_argv[] = {builder, "--check", (char *)name, NULL};
    char **argv = check ? check_argv : build_argv;
    char out[PATH_MAX];
    posix_spawn_file_actions_t fa;
    struct stat st;
    int pp[2] = {-1, -1};
    pid_t pid;
    int rc = -1;
    int status;

    if (builder == NULL || pipe2(pp, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot run the image builder: %s",
                 strerror(errno));
        goto out;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pp[1], 1);
    status = sandbox_spawn(&pid, builder, &fa, argv);
    posix_spawn_file_actions_destroy(&fa);
    close(pp[1]);
    pp[1] = -1;
    if (status != 0) {
        snprintf(err, errlen, "cannot run the image builder %s: %s", builder,
                 strerror(status));
        goto out;
    }
    status = sandbox_collect(pid, pp[0], out, sizeof(out));
    if (status != 0 || out[0] != '/' || stat(out, &st) != 0 ||
        !S_ISDIR(st.st_mode)) {
        if (check) {
            snprintf(err, errlen, "the %s image is not built yet", name);
            goto out;
        }
        snprintf(err, errlen,
                 "the %s image could not be built (devboxd-image exit status "
                 "%d; its messages "
                 "are in devboxd's log)",
                 name, status);
        goto out;
    }
    *path = strdup(out);
    rc = *path != NULL ? 0 : -1;
out:
    if (pp[0] >= 0)
        close(pp[0]);
    if (pp[1] >= 0)
        close(pp[1]);
    free(builder);
    return rc;
}

/* images_path, or with check only a lookup in the cache (no build). */
static int image_lookup(const char *name, bool check, char **path, char *err,
                        size_t errlen)
{
    size_t i;
    int rc = -1;

    *path = NULL;
    if (name == NULL)
        name = images_default();
    if (strcmp(name, "host") == 0)
        return 0;
    if (!known_image(name)) {
        snprintf(
            err, errlen,
            "unknown image \"%.100s\" (images: starter, universal, browser, "
            "host)",
            name);
        return -1;
    }
    /* One lookup or build at a time: a second devbox waits for the build
     * the first one started. */
    pthread_mutex_lock(&images_lock);
    for (i = 0; i < IMAGES_MAX && known[i].name != NULL; i++) {
        if (strcmp(known[i].name, name) == 0) {
            *path = strdup(known[i].path);
            rc = *path != NULL ? 0 : -1;
            goto out;
        }
    }
    rc = run_builder(name, check, path, err, errlen);
    if (rc == 0 && i < IMAGES_MAX) {
        known[i].name = strdup(name);
        known[i].path = strdup(*path);
    }
out:
    pthread_mutex_unlock(&images_lock);
    return rc;
}

int images_path(const char *name, char **path, char *err, size_t errlen)
{
    return image_lookup(name, false, path, err, errlen);
}

bool images_built(const char *name)
{
    char err[256];
    char *path = NULL;
    int rc = image_lookup(name, true, &path, err, sizeof(err));

    free(path);
    return rc == 0;
}
