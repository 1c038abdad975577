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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define IMAGES_MAX 8
/* images_built asks the builder whether another process built an image at
 * most this often, doubling from the first to the last while it is not:
 * each ask spawns devboxd-image, which hashes the image's recipe. */
#define IMAGES_CHECK_FIRST_MS 5000
#define IMAGES_CHECK_MAX_MS 60000

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
    {"runloop-mcp-desktop", "desktop"},
};

/* One record per image: built (path), being built (a builder runs), or
 * failed last time (error, until the next need starts another build). */
struct image_state {
    char *name;
    char *path;
    char *progress_file; /* where the builder writes "PERCENT STAGE" */
    char *error;
    bool building;
    int64_t check_at_ms;   /* images_built: no builder --check before this */
    int64_t check_wait_ms; /* and the wait after the next one that fails */
};

static pthread_mutex_t images_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t images_changed = PTHREAD_COND_INITIALIZER;
static struct image_state known[IMAGES_MAX];

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

/* RLMCP_DEVBOX_IMAGE, set once at start (images_set_default). */
static const char *default_image = "starter";

void images_set_default(const char *name)
{
    if (name != NULL && name[0] != '\0')
        default_image = name;
}

const char *images_default(void)
{
    return default_image;
}

static bool known_image(const char *name)
{
    return strcmp(name, "starter") == 0 || strcmp(name, "universal") == 0 ||
           strcmp(name, "browser") == 0 || strcmp(name, "desktop") == 0;
}

int images_check_default(const char *name, char *err, size_t errlen)
{
    if (known_image(name))
        return 0;
    /* "host" (the host's /usr under the retired bubblewrap runtime) is
     * named, so a setup that still asks for it learns what to do. */
    snprintf(err, errlen,
             "RLMCP_DEVBOX_IMAGE=\"%.100s\" is not an image%s: set it to "
             "starter (the default), universal, browser or desktop",
             name,
             strcmp(name, "host") == 0
                 ? " (devboxes no longer run on the host's /usr)"
                 : "");
    return -1;
}

/* Runs argv (the builder) and reads the one line it prints into line.
 * Returns its exit status; *spawn_err is an errno when it did not start. */
static int run_builder_line(char *const argv[], char *line, size_t len,
                            int *spawn_err)
{
    posix_spawn_file_actions_t fa;
    int pp[2] = {-1, -1};
    pid_t pid;
    int status = -1;

    line[0] = '\0';
    if (pipe2(pp, O_CLOEXEC) != 0) {
        *spawn_err = errno;
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pp[1], 1);
    *spawn_err = sandbox_spawn(&pid, argv[0], &fa, argv);
    posix_spawn_file_actions_destroy(&fa);
    close(pp[1]);
    if (*spawn_err == 0)
        status = sandbox_collect(pid, pp[0], line, len);
    close(pp[0]);
    return status;
}

/* "devboxd-image [OPTION] NAME" and the path it prints: the image's root
 * (no option: built first when needed; "--check": only looked up) or the
 * file where builds of NAME report progress ("--progress-file"). */
static int run_builder(const char *option, const char *name, char **out,
                       char *err, size_t errlen)
{
    char *builder = sandbox_helper_path("devboxd-image");
    char *argv[4] = {builder, NULL, NULL, NULL};
    char line[PATH_MAX];
    bool want_dir = option == NULL || strcmp(option, "--check") == 0;
    struct stat st;
    int spawn_err = 0;
    int status;
    int rc = -1;

    *out = NULL;
    if (builder == NULL) {
        snprintf(err, errlen, "cannot run the image builder: out of memory");
        goto out;
    }
    argv[1] = option != NULL ? (char *)option : (char *)name;
    argv[2] = option != NULL ? (char *)name : NULL;
    status = run_builder_line(argv, line, sizeof(line), &spawn_err);
    if (spawn_err != 0) {
        snprintf(err, errlen, "cannot run the image builder %s: %s", builder,
                 strerror(spawn_err));
        goto out;
    }
    if (status != 0 || line[0] != '/' ||
        (want_dir && (stat(line, &st) != 0 || !S_ISDIR(st.st_mode)))) {
        if (option != NULL)
            snprintf(err, errlen, "the %s image is not built yet", name);
        else
            snprintf(err, errlen,
                     "the %s image could not be built (devboxd-image exit "
                     "status %d; its messages are in devboxd's log)",
                     name, status);
        goto out;
    }
    *out = strdup(line);
    rc = *out != NULL ? 0 : -1;
out:
    free(builder);
    return rc;
}

/* Lock held: name's record, made on first use; NULL when out of room. */
static struct image_state *state_of_locked(const char *name)
{
    size_t i;

    for (i = 0; i < IMAGES_MAX && known[i].name != NULL; i++) {
        if (strcmp(known[i].name, name) == 0)
            return &known[i];
    }
    if (i == IMAGES_MAX)
        return NULL;
    known[i].name = strdup(name);
    return known[i].name != NULL ? &known[i] : NULL;
}

/* The builder, on a thread of its own: no devbox, lock or request waits
 * on it except the ones that need this very image. */
static void *build_thread(void *arg)
{
    struct image_state *st = arg;
    char err[256] = "";
    char *progress = NULL;
    char *path = NULL;
    int rc;

    if (run_builder("--progress-file", st->name, &progress, err, sizeof(err)) ==
        0) {
        pthread_mutex_lock(&images_lock);
        free(st->progress_file);
        st->progress_file = progress;
        pthread_mutex_unlock(&images_lock);
    }
    rc = run_builder(NULL, st->name, &path, err, sizeof(err));
    pthread_mutex_lock(&images_lock);
    /* images_built may have found it meanwhile (built by another process). */
    if (rc == 0 && st->path == NULL) {
        st->path = path;
        path = NULL;
    } else if (rc != 0) {
        st->error = strdup(err);
    }
    st->building = false;
    pthread_cond_broadcast(&images_changed);
    pthread_mutex_unlock(&images_lock);
    free(path);
    return NULL;
}

/* Lock held: starts st's build (a lookup when the cache has it). */
static int start_build_locked(struct image_state *st, char *err, size_t errlen)
{
    pthread_attr_t attr;
    pthread_t t;
    int rc;

    free(st->error);
    st->error = NULL;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&t, &attr, build_thread, st);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the %s image's build: %s", st->name,
                 strerror(rc));
        return -1;
    }
    st->building = true;
    return 0;
}

/* Lock held: "the NAME image is being prepared (N%: stage)" from the
 * builder's progress file ("PERCENT STAGE"); without one, "(starting)". */
static void preparing_locked(const struct image_state *st, char *msg,
                             size_t len)
{
    char line[128] = "";
    char *stage = NULL;
    long pct = -1;
    FILE *f = NULL;

    if (st->progress_file != NULL)
        f = fopen(st->progress_file, "re");
    if (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        pct = strtol(line, &stage, 10);
        stage += strspn(stage, " ");
    }
    if (f != NULL)
        fclose(f);
    if (pct >= 0 && pct <= 100)
        snprintf(msg, len, "the %s image is being prepared (%ld%%%s%s)",
                 st->name, pct, stage[0] != '\0' ? ": " : "", stage);
    else
        snprintf(msg, len, "the %s image is being prepared (starting)",
                 st->name);
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Lock held: waits on images_changed for up to ms (at most a second, so
 * the caller looks at the monotonic clock again; the condition's clock is
 * the wall clock). */
static void wait_changed_locked(int64_t ms)
{
    struct timespec until;

    if (ms > 1000)
        ms = 1000;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&images_changed, &images_lock, &until);
}

/* Resolves NULL to the default and refuses names that are no image. */
static int image_name(const char **name, char *err, size_t errlen)
{
    if (*name == NULL)
        *name = images_default();
    if (known_image(*name))
        return 0;
    snprintf(err, errlen,
             "unknown image \"%.100s\" (images: starter, universal, browser, "
             "desktop)",
             *name);
    return -1;
}

int images_wait(const char *name, int64_t wait_ms, char **path, char *err,
                size_t errlen)
{
    struct image_state *st = NULL;
    int64_t deadline = mono_ms() + (wait_ms > 0 ? wait_ms : 0);
    bool started = false;
    int rc = -1;

    *path = NULL;
    if (image_name(&name, err, errlen) != 0)
        return -1;
    pthread_mutex_lock(&images_lock);
    st = state_of_locked(name);
    if (st == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (;;) {
        int64_t left = deadline - mono_ms();

        if (st->path != NULL) {
            *path = strdup(st->path);
            rc = *path != NULL ? 0 : -1;
            break;
        }
        if (!st->building) {
            /* A failure seen before this call started gets a new try. */
            if (started) {
                snprintf(err, errlen, "%s",
                         st->error != NULL ? st->error : "out of memory");
                break;
            }
            if (start_build_locked(st, err, errlen) != 0)
                break;
            started = true;
        }
        if (wait_ms >= 0 && left <= 0) {
            preparing_locked(st, err, errlen);
            rc = 1;
            break;
        }
        wait_changed_locked(wait_ms >= 0 ? left : 1000);
    }
out:
    pthread_mutex_unlock(&images_lock);
    return rc;
}

int images_path(const char *name, char **path, char *err, size_t errlen)
{
    return images_wait(name, -1, path, err, errlen);
}

void images_prepare(const char *name)
{
    char err[256];
    char *path = NULL;

    if (images_wait(name, 0, &path, err, sizeof(err)) == 0)
        free(path);
}

bool images_preparing(const char *name, char *msg, size_t len)
{
    struct image_state *st = NULL;
    bool building = false;
    char err[64];

    if (image_name(&name, err, sizeof(err)) != 0)
        return false;
    pthread_mutex_lock(&images_lock);
    st = state_of_locked(name);
    building = st != NULL && st->building && st->path == NULL;
    if (building)
        preparing_locked(st, msg, len);
    pthread_mutex_unlock(&images_lock);
    return building;
}

bool images_built(const char *name)
{
    struct image_state *st = NULL;
    char err[256];
    char *path = NULL;
    bool built = false;
    bool ask = false;
    int64_t now = mono_ms();

    if (image_name(&name, err, sizeof(err)) != 0)
        return false;
    pthread_mutex_lock(&images_lock);
    st = state_of_locked(name);
    built = st != NULL && st->path != NULL;
    /* Built by another process (scripts/run, scripts/test) since? Asked
     * again only after a growing wait: an image, once built, stays. */
    ask = !built && st != NULL && now >= st->check_at_ms;
    if (ask) {
        int64_t wait = st->check_wait_ms * 2;

        if (wait == 0)
            wait = IMAGES_CHECK_FIRST_MS;
        if (wait > IMAGES_CHECK_MAX_MS)
            wait = IMAGES_CHECK_MAX_MS;
        st->check_wait_ms = wait;
        st->check_at_ms = now + wait;
    }
    pthread_mutex_unlock(&images_lock);
    if (!ask)
        return built;
    if (run_builder("--check", name, &path, err, sizeof(err)) != 0)
        return false;
    pthread_mutex_lock(&images_lock);
    if (st->path == NULL) {
        st->path = path;
        path = NULL;
    }
    pthread_mutex_unlock(&images_lock);
    free(path);
    return true;
}
