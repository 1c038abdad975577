/* Blueprint builds by buildah (see blueprint_buildah.h). */
#define _GNU_SOURCE
#include "blueprint_buildah.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "build_cache.h"
#include "build_context.h"
#include "build_net.h"
#include "buildah_dockerfile.h"
#include "code_mounts.h"
#include "images.h"
#include "layers.h"
#include "sandbox.h"
#include "sandbox_internal.h"
#include "util.h"

#define BLUEPRINT_REPO "localhost/devboxd-blueprint:"
#define IMAGE_REPO "localhost/devboxd-image/"
#define BUILD_REPO "localhost/devboxd-build:" /* as buildah committed it */
/* BUILD_CACHE_ROOT's parent */
#define DEFAULT_PATH                                                           \
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define TAIL_LINES 12
#define LINE_MAX_LEN 4096
#define OUT_MAX (4u << 20)
#define TERM_GRACE_MS 5000
#define STEP_OOM_LOG "step-ooms" /* in the build's temp dir */

extern char **environ;

/* ------------------------------------------------------------ settings */

int blueprint_buildah_available(char *err, size_t errlen)
{
    if (access(BUILDAH_PATH, X_OK) == 0)
        return 0;
    snprintf(err, errlen,
             "blueprint builds need buildah at %s: install it (apt-get "
             "install buildah; scripts/bootstrap)",
             BUILDAH_PATH);
    return -1;
}

/* The machine-wide image cache (RLMCP_IMAGE_CACHE), set once at start. */
static const char *cache_dir = BLUEPRINT_BUILDAH_DEFAULT_IMAGE_CACHE;

void blueprint_buildah_set_image_cache(const char *dir)
{
    if (dir != NULL && dir[0] != '\0')
        cache_dir = dir;
}

/* The engine's blueprint records (blueprint_buildah_set_records). */
static const struct blueprint_buildah_records *records;

void blueprint_buildah_set_records(const struct blueprint_buildah_records *r)
{
    records = r;
}

static const char *image_cache(void)
{
    return cache_dir;
}

#define STORE_OWNED 4 /* strings store_args allocates at most */

/* buildah's global options for the state dir's store, or (disk set) for a
 * build's own store on its build disk, which reads the images of the state
 * dir's store and the machine's but writes only to the disk; argv[0..n)
 * set. */
static size_t store_args(const char *state_dir, const char *disk, char **argv,
                         char **owned)
{
    const char *home = disk != NULL ? disk : state_dir;
    const char *sub = disk != NULL ? "" : "/buildah";
    size_t n = 0;
    int r;

    argv[n++] = "buildah";
    argv[n++] = "--root";
    if (asprintf(&owned[0], "%s%s/storage", home, sub) < 0)
        owned[0] = NULL;
    argv[n++] = owned[0];
    argv[n++] = "--runroot";
    if (asprintf(&owned[1], "%s%s/run", home, sub) < 0)
        owned[1] = NULL;
    argv[n++] = owned[1];
    argv[n++] = "--storage-driver";
    argv[n++] = "overlay";
    argv[n++] = "--storage-opt";
    r = asprintf(&owned[2], "overlay.imagestore=%s/buildah/storage",
                 image_cache());
    if (r < 0)
        owned[2] = NULL;
    argv[n++] = owned[2];
    if (disk != NULL) {
        /* One option each: buildah splits a flag's value at commas. */
        argv[n++] = "--storage-opt";
        if (asprintf(&owned[3], "overlay.imagestore=%s/buildah/storage",
                     state_dir) < 0)
            owned[3] = NULL;
        argv[n++] = owned[3];
    }
    return n;
}

/* ------------------------------------------------------------- process */

struct child {
    pid_t pid;
    int out; /* stdout + stderr */
};

/* Starts argv in its own process group, in the cgroups whose procs files
 * are fds (may be NULL), with TMPDIR in the state dir. */
static int spawn(char *const *argv, const int *fds, const char *tmpdir,
                 struct child *c, char *err, size_t errlen)
{
    int pp[2] = {-1, -1};
    char **envp = NULL;
    char *tmp = NULL;
    size_t n = 0, i, k;
    sigset_t all;
    sigset_t old;
    pid_t pid;

    while (environ[n] != NULL)
        n++;
    envp = calloc(n + 2, sizeof(*envp));
    if (envp == NULL || asprintf(&tmp, "TMPDIR=%s", tmpdir) < 0 ||
        pipe2(pp, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot start buildah: %s", strerror(errno));
        free(envp);
        return -1;
    }
    /* Ours first and alone: with two, buildah (Go) takes the first. */
    envp[0] = tmp;
    for (i = 0, k = 1; i < n; i++) {
        if (strncmp(environ[i], "TMPDIR=", 7) != 0)
            envp[k++] = environ[i];
    }
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = fork();
    if (pid == 0) {
        struct sigaction dfl;
        int s;

        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        for (s = 1; s < NSIG; s++)
            sigaction(s, &dfl, NULL);
        for (i = 0; fds != NULL && i < SB_CG_N; i++) {
            if (fds[i] >= 0 && write(fds[i], "0", 1) != 1)
                _exit(126);
        }
        setpgid(0, 0);
        dup2(pp[1], 1);
        dup2(pp[1], 2);
        close_range(3, ~0U, 0); /* none of devboxd's descriptors */
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        execve(BUILDAH_PATH, argv, envp);
        _exit(127);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(pp[1]);
    free(envp);
    free(tmp);
    if (pid < 0) {
        close(pp[0]);
        snprintf(err, errlen, "cannot start buildah: %s", strerror(errno));
        return -1;
    }
    c->pid = pid;
    c->out = pp[0];
    return 0;
}

static int reap(pid_t pid)
{
    int status = 0;

    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs buildah with argv and returns its exit status; its output (at most
 * OUT_MAX bytes) in *out when out is not NULL. */
static int run_quiet(char *const *argv, const char *tmpdir, char **out,
                     char *err, size_t errlen)
{
    struct child c;
    char *buf = NULL;
    size_t len = 0;
    char chunk[8192];
    ssize_t r;

    if (spawn(argv, NULL, tmpdir, &c, err, errlen) != 0)
        return -1;
    while ((r = read(c.out, chunk, sizeof(chunk))) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        if (out != NULL && len + (size_t)r < OUT_MAX) {
            char *g = realloc(buf, len + (size_t)r + 1);

            if (g != NULL) {
                buf = g;
                memcpy(buf + len, chunk, (size_t)r);
                len += (size_t)r;
                buf[len] = '\0';
            }
        }
    }
    close(c.out);
    if (out != NULL)
        *out = buf;
    else
        free(buf);
    return reap(c.pid);
}

static char *tmpdir_of(const char *state_dir)
{
    char *t = NULL;

    if (asprintf(&t, "%s/buildah/tmp", state_dir) < 0)
        return NULL;
    util_mkdirs(t);
    return t;
}

/* Runs `buildah <store> words...` quietly in the state dir's store, or
 * (disk set) in a build's own; the exit status. */
static int store_cmd_in(const char *state_dir, const char *disk,
                        const char *const *words, char **out)
{
    char **argv = NULL;
    char *owned[STORE_OWNED] = {NULL, NULL, NULL, NULL};
    char *tmp = disk != NULL ? strdup(disk) : tmpdir_of(state_dir);
    char err[256];
    size_t n_words = 0;
    size_t n, i;
    int rc = -1;

    while (words[n_words] != NULL)
        n_words++;
    argv = calloc(n_words + 16, sizeof(*argv));
    if (argv == NULL)
        goto out;
    n = store_args(state_dir, disk, argv, owned);
    for (i = 0; i < n_words; i++)
        argv[n++] = (char *)words[i];
    argv[n] = NULL;
    if (owned[0] && owned[1] && owned[2] && (disk == NULL || owned[3]) && tmp)
        rc = run_quiet(argv, tmp, out, err, sizeof(err));
out:
    for (i = 0; i < STORE_OWNED; i++)
        free(owned[i]);
    free(argv);
    free(tmp);
    return rc;
}

static int store_cmd(const char *state_dir, const char *const *words,
                     char **out)
{
    return store_cmd_in(state_dir, NULL, words, out);
}

/* A member ("id", "layer") of the image named name in the store at root
 * (its images.json, which the store replaces whole on each change), or NULL
 * when the store has no image of that name. */
static char *image_member(const char *root, const char *name,
                          const char *member)
{
    char *path = NULL;
    cJSON *images = NULL;
    const cJSON *im = NULL;
    char *out = NULL;

    if (asprintf(&path, "%s/overlay-images/images.json", root) < 0)
        return NULL;
    images = util_read_json(path, 64u << 20);
    cJSON_ArrayForEach(im, images)
    {
        const cJSON *n = NULL;

        cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(im, "names"))
        {
            const char *v = util_json_str(im, member);

            if (out == NULL && v != NULL && cJSON_IsString(n) &&
                strcmp(n->valuestring, name) == 0)
                out = strdup(v);
        }
    }
    cJSON_Delete(images);
    free(path);
    return out;
}

static char *top_layer(const char *root, const char *name)
{
    return image_member(root, name, "layer");
}

/* Whether the state dir's store has an image of that name (buildah rmi of
 * one it lacks costs a buildah run for nothing). */
static int state_has_image(const char *state_dir, const char *name)
{
    char *root = NULL;
    char *id = NULL;
    int has;

    if (asprintf(&root, "%s/buildah/storage", state_dir) < 0)
        return 1;
    id = image_member(root, name, "id");
    has = id != NULL;
    free(id);
    free(root);
    return has;
}

void blueprint_buildah_cleanup(const char *state_dir)
{
    static const char *const rm[] = {"rm", "--all", NULL};
    char *storage = NULL;
    struct stat st;

    if (asprintf(&storage, "%s/buildah/storage", state_dir) < 0)
        return;
    if (stat(storage, &st) == 0 && store_cmd(state_dir, rm, NULL) != 0)
        fprintf(stderr, "devboxd: buildah rm --all failed in %s\n", storage);
    free(storage);
}

void blueprint_buildah_forget(const char *state_dir, const cJSON *rec)
{
    const char *img = util_json_str(rec, "buildah_image");
    const char *words[] = {"rmi", img, NULL};

    if (img != NULL && state_has_image(state_dir, img))
        store_cmd(state_dir, words, NULL);
}

/* ----------------------------------------------------------- FROM names */

struct names {
    int check_only;     /* create time: names only, nothing imported */
    const char *job_id; /* the building blueprint (not at create time) */
    const char *state_dir;
    char *image;     /* the engine image of the last resolved base */
    char *base_id;   /* or the blueprint */
    cJSON *resolved; /* {local name: {"image": x} | {"blueprint": id}} */
};

/* Engine images whose buildah image this devboxd's helper run reported
 * ({rootfs: name}): the helper checks under its lock that the image is
 * whole, so a later build only checks that the machine's store still
 * lists it instead of running the helper (a shell and a buildah) again. */
static pthread_mutex_t imported_lock = PTHREAD_MUTEX_INITIALIZER;
static cJSON *imported;

static char *imported_name(const char *rootfs)
{
    char *name = NULL;
    char *root = NULL;
    char *id = NULL;

    pthread_mutex_lock(&imported_lock);
    if (util_json_str(imported, rootfs) != NULL)
        name = strdup(util_json_str(imported, rootfs));
    pthread_mutex_unlock(&imported_lock);
    if (name == NULL ||
        asprintf(&root, "%s/buildah/storage", image_cache()) < 0) {
        free(name);
        return NULL;
    }
    id = image_member(root, name, "id");
    if (id == NULL) {
        free(name);
        name = NULL;
    }
    free(id);
    free(root);
    return name;
}

static void remember_import(const char *rootfs, const char *name)
{
    pthread_mutex_lock(&imported_lock);
    if (imported == NULL)
        imported = cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(imported, rootfs);
    cJSON_AddStringToObject(imported, rootfs, name);
    pthread_mutex_unlock(&imported_lock);
}

/* The buildah name of an engine image, importing it once per machine. */
static int image_local(const char *image, char **local, char *err,
                       size_t errlen)
{
    char *rootfs = NULL;
    char *helper = sandbox_helper_path("devboxd-buildah-base");
    char *argv[] = {helper, NULL, NULL};
    char *out = NULL;
    int pp[2] = {-1, -1};
    pid_t pid;
    int rc = -1;
    char buf[512];
    size_t got = 0;
    ssize_t r;

    if (helper == NULL || images_path(image, &rootfs, err, errlen) != 0)
        goto out;
    argv[1] = rootfs;
    out = imported_name(rootfs);
    if (out != NULL) {
        rc = 0;
        goto out;
    }
    if (pipe2(pp, O_CLOEXEC) != 0)
        goto out;
    pid = fork();
    if (pid == 0) {
        dup2(pp[1], 1);
        close_range(3, ~0U, 0);
        execv(helper, argv);
        _exit(127);
    }
    close(pp[1]);
    pp[1] = -1;
    while (pid > 0 && got < sizeof(buf) - 1 &&
           (r = read(pp[0], buf + got, sizeof(buf) - 1 - got)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        got += (size_t)r;
    }
    buf[got] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    if (pid < 0 || reap(pid) != 0 ||
        strncmp(buf, IMAGE_REPO, strlen(IMAGE_REPO)) != 0) {
        snprintf(err, errlen,
                 "the %s image could not be made a buildah image "
                 "(devboxd-buildah-base; its messages are in devboxd's log)",
                 image);
        goto out;
    }
    out = strdup(buf);
    rc = out != NULL ? 0 : -1;
    if (rc == 0)
        remember_import(rootfs, out);
out:
    if (pp[0] >= 0)
        close(pp[0]);
    if (pp[1] >= 0)
        close(pp[1]);
    free(rootfs);
    free(helper);
    *local = out;
    return rc;
}

/* The building blueprint depends on the blueprint its final stage is
 * FROM (not on one a COPY --from or another stage names), as a devbox on its
 * blueprint: the base's layers stay while the build runs, even through the
 * base's delete. 0, or -1 with err when that base went meanwhile. */
static int depend_on_final(const struct names *nm,
                           const struct buildah_dockerfile_out *df, char *err,
                           size_t errlen)
{
    const cJSON *what =
        cJSON_GetObjectItemCaseSensitive(nm->resolved, df->final_from);
    const char *id = util_json_str(what, "blueprint");
    int rc = 0;

    if (id == NULL)
        return 0;
    if (records == NULL || records->depend(nm->job_id, id) != 0) {
        snprintf(err, errlen,
                 "the base blueprint %s was deleted before the build started",
                 id);
        rc = -1;
    }
    return rc;
}

static int blueprint_image(const char *state_dir, const char *id, char *err,
                           size_t errlen);

static int resolve_blueprint(struct names *nm, const char *name, char **local,
                             char *err, size_t errlen)
{
    cJSON *rec = NULL;
    const char *img = NULL;
    char *bp_id = NULL;
    int by_id = strncmp(name, "bpt_", 4) == 0;
    int rc = 1;

    if (records != NULL)
        rec = records->find(by_id ? name : NULL, by_id ? NULL : name, 0);
    if (rec != NULL) {
        const char *id = util_json_str(rec, "id");
        const char *base = util_json_str(rec, "image");

        img = util_json_str(rec, "buildah_image");
        if (img == NULL) {
            snprintf(err, errlen,
                     "blueprint %s was built by the native builder, which "
                     "is gone; build it again to build FROM it",
                     id);
            rc = -1;
        } else {
            cJSON *what = cJSON_CreateObject();

            cJSON_AddStringToObject(what, "blueprint", id);
            cJSON_AddStringToObject(what, "image",
                                    base != NULL ? base : images_default());
            cJSON_DeleteItemFromObjectCaseSensitive(nm->resolved, img);
            cJSON_AddItemToObject(nm->resolved, img, what);
            *local = strdup(img);
            bp_id = strdup(id);
            rc = *local != NULL && bp_id != NULL ? 0 : -1;
        }
    }
    cJSON_Delete(rec);
    /* A build (not a create's check) needs the image itself now. */
    if (rc == 0 && !nm->check_only &&
        blueprint_image(nm->state_dir, bp_id, err, errlen) != 0) {
        free(*local);
        *local = NULL;
        rc = -1;
    }
    free(bp_id);
    return rc;
}

static int resolve(void *ctx, const char *name, char **local, char *err,
                   size_t errlen)
{
    struct names *nm = ctx;
    const char *image = NULL;
    cJSON *what = NULL;
    int pub = 0;
    int rc;

    *local = NULL;
    if (name == NULL) {
        image = images_default();
    } else {
        pub = images_public_name(name, &image, err, errlen);
        if (pub < 0)
            return -1;
        if (pub == 0) {
            rc = resolve_blueprint(nm, name, local, err, errlen);
            if (rc <= 0)
                return rc;
            if (!images_builtin_name(name, &image)) {
                snprintf(err, errlen,
                         "no image or built blueprint of that name; use "
                         "runloop/starter-x86_64, "
                         "runloop/universal-ubuntu-24.04-x86_64, "
                         "runloop-mcp-browser, or the id or name of a "
                         "blueprint whose "
                         "build completed");
                return -1;
            }
        }
    }
    if (nm->check_only)
        rc = (*local = strdup(image)) != NULL ? 0 : -1;
    else
        rc = image_local(image, local, err, errlen);
    if (rc == 0) {
        what = cJSON_CreateObject();
        cJSON_AddStringToObject(what, "image", image);
        cJSON_DeleteItemFromObjectCaseSensitive(nm->resolved, *local);
        cJSON_AddItemToObject(nm->resolved, *local, what);
    }
    return rc;
}

int blueprint_buildah_check(const cJSON *params, char *err, size_t errlen)
{
    struct names nm;
    struct buildah_dockerfile_out out;
    int rc;

    memset(&nm, 0, sizeof(nm));
    nm.check_only = 1;
    nm.resolved = cJSON_CreateObject();
    rc = buildah_dockerfile_prepare(params, resolve, &nm, &out, err, errlen);
    if (rc == 0)
        buildah_dockerfile_free(&out);
    cJSON_Delete(nm.resolved);
    return rc;
}

/* -------------------------------------------------------------- context */

static void jlog(struct blueprint_buildah_job *j, const char *level,
                 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void jlog(struct blueprint_buildah_job *j, const char *level,
                 const char *fmt, ...)
{
    char msg[LINE_MAX_LEN];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    j->log(j->ctx, level, msg);
}

static int write_whole(const char *path, const char *data, char *err,
                       size_t errlen)
{
    char *dir = strdup(path);
    char *slash = dir != NULL ? strrchr(dir, '/') : NULL;
    int fd = -1;
    int rc = -1;

    if (slash != NULL) {
        *slash = '\0';
        util_mkdirs(dir);
    }
    fd =
        open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd >= 0 && util_write_all(fd, data, strlen(data)) == 0)
        rc = 0;
    else
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(dir);
    return rc;
}

/* <dir>/build/Dockerfile and <dir>/build/context with the inline files. */
static int write_context(struct blueprint_buildah_job *j,
                         const struct buildah_dockerfile_out *df, char *err,
                         size_t errlen)
{
    const cJSON *it = NULL;
    char *path = NULL;
    int rc = 0;

    if (asprintf(&path, "%s/build", j->dir) < 0)
        return -1;
    util_rmtree(path);
    free(path);
    path = NULL;
    if (asprintf(&path, "%s/build/context", j->dir) < 0)
        return -1;
    util_mkdirs(path);
    /* RUN --mount=type=bind without a source mounts the context itself:
     * the step's root (not the host's) reads it.  The state dir above
     * keeps everyone else out. */
    if (chmod(path, 0755) != 0) {
        snprintf(err, errlen, "cannot open up %s: %s", path, strerror(errno));
        free(path);
        return -1;
    }
    /* The archive first: file_mounts of the same path replace its files. */
    if (j->context_fd >= 0) {
        jlog(j, "info", "unpacking the build context");
        rc = build_context_unpack(j->context_fd, path, j->context_max_bytes,
                                  err, errlen);
    }
    free(path);
    path = NULL;
    if (rc != 0)
        return -1;
    if (asprintf(&path, "%s/build/Dockerfile", j->dir) < 0)
        return -1;
    rc = write_whole(path, df->text, err, errlen);
    free(path);
    if (asprintf(&path, "%s/build/context", j->dir) < 0)
        return -1;
    cJSON_ArrayForEach(it, df->files)
    {
        if (rc != 0)
            break;
        rc =
            build_context_write(path, it->string, it->valuestring, err, errlen);
    }
    free(path);
    return rc;
}

/* Each code mount cloned on the host into a bundle in the context. */
static int fetch_code(struct blueprint_buildah_job *j, char *err, size_t errlen)
{
    const cJSON *mounts =
        cJSON_GetObjectItemCaseSensitive(j->params, "code_mounts");
    const cJSON *m = NULL;
    char *dir = NULL;
    int i = 0;
    int rc = 0;

    if (cJSON_GetArraySize(mounts) == 0)
        return 0;
    if (asprintf(&dir, "%s/build/context/" BD_CODE_DIR, j->dir) < 0)
        return -1;
    util_rmtree(dir); /* not through whatever the archive put there */
    util_mkdirs(dir);
    cJSON_ArrayForEach(m, mounts)
    {
        char *url = code_mounts_url(m);
        char *out = NULL;

        jlog(j, "info", "code_mounts[%d]: cloning %s", i, url ? url : "");
        if (url == NULL || asprintf(&out, "%s/%d.bundle", dir, i) < 0) {
            out = NULL;
            rc = -1;
        } else {
            rc =
                code_mounts_bundle(m, out, j->should_stop, j->ctx, err, errlen);
        }
        free(url);
        free(out);
        if (rc != 0)
            break;
        i++;
    }
    free(dir);
    return rc;
}

/* ----------------------------------------------------------------- run */

struct progress {
    const struct buildah_dockerfile_out *df;
    long cur; /* index into df->steps of the running step, -1 */
    char tail[TAIL_LINES][256];
    int tail_n;
    int exit_status; /* from "exit status N", -1 */
};

/* buildah's "[k/n] STEP i/m: ..." → the step's index in df->steps. */
static long step_of(const struct buildah_dockerfile_out *df, const char *line)
{
    int k = 1, n = 1, i = 0, m = 0;
    size_t first = 0;
    size_t count;

    if (sscanf(line, "[%d/%d] STEP %d/%d:", &k, &n, &i, &m) != 4) {
        k = 1;
        if (sscanf(line, "STEP %d/%d:", &i, &m) != 2)
            return -1;
    }
    count = buildah_dockerfile_stage_steps(df, k - 1, &first);
    if (i < 1 || (size_t)i > count)
        return -1;
    return (long)(first + (size_t)i - 1);
}

/* runc's complaints about the build's group it cannot remove (buildah
 * itself is in it). */
static int noise(const char *line)
{
    return strstr(line, "Failed to remove cgroup") != NULL ||
           strstr(line, "Failed to remove paths") != NULL;
}

static void one_line(struct blueprint_buildah_job *j, struct progress *pg,
                     const char *line)
{
    long s = step_of(pg->df, line);
    const char *es;

    if (noise(line))
        return;
    if (s >= 0) {
        const struct buildah_dockerfile_step *st = &pg->df->steps[s];

        pg->cur = s;
        pg->tail_n = 0;
        if (st->user_step > 0)
            jlog(j, "info", "Step %d/%d: %s", st->user_step, pg->df->user_steps,
                 st->text);
        else if (strncmp(st->emit, "FROM ", 5) == 0)
            jlog(j, "info", "%s (%s)", st->text, st->emit + 5);
        return;
    }
    es = strstr(line, "exit status ");
    if (es != NULL)
        pg->exit_status = atoi(es + strlen("exit status "));
    snprintf(pg->tail[pg->tail_n % TAIL_LINES], sizeof(pg->tail[0]), "%s",
             line);
    pg->tail_n++;
    jlog(j, "info", "%s", line);
}

/* Logs complete lines of buf[0..len), keeps the partial last one. */
static size_t lines_of(struct blueprint_buildah_job *j, struct progress *pg,
                       char *buf, size_t len, int flush)
{
    size_t start = 0, i;

    for (i = 0; i < len; i++) {
        if (buf[i] == '\n') {
            buf[i] = '\0';
            one_line(j, pg, buf + start);
            start = i + 1;
        }
    }
    if ((flush && start < len) || len - start >= LINE_MAX_LEN - 1) {
        buf[len] = '\0';
        one_line(j, pg, buf + start);
        start = len;
    }
    memmove(buf, buf + start, len - start);
    return len - start;
}

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SIGKILLs every task of group dir and of the groups below it; how many
 * were signalled. */
static int kill_tree(const char *dir, int depth)
{
    char path[4096];
    DIR *d = NULL;
    struct dirent *de = NULL;
    FILE *f = NULL;
    long pid;
    int n = 0;

    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    f = fopen(path, "re");
    while (f != NULL && fscanf(f, "%ld", &pid) == 1) {
        if (pid > 1 && kill((pid_t)pid, SIGKILL) == 0)
            n++;
    }
    if (f != NULL)
        fclose(f);
    d = depth < 8 ? opendir(dir) : NULL;
    while (d != NULL && (de = readdir(d)) != NULL) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        n += kill_tree(path, depth + 1);
    }
    if (d != NULL)
        closedir(d);
    return n;
}

/* Removes the (emptied) groups below dir, deepest first. */
static void remove_below(const char *dir, int depth)
{
    char path[4096];
    DIR *d = depth < 8 ? opendir(dir) : NULL;
    struct dirent *de = NULL;
    int tries;

    while (d != NULL && (de = readdir(d)) != NULL) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        remove_below(path, depth + 1);
        /* EBUSY while killed tasks are still accounted. */
        for (tries = 0; tries < 1000; tries++) {
            if (rmdir(path) == 0 || errno != EBUSY)
                break;
            usleep(2000);
        }
    }
    if (d != NULL)
        closedir(d);
}

/* A build's RUN steps run in groups of their own below the build's
 * (devboxd-build-runtime): when a build is stopped or abandoned, every task
 * in the build's group and below is killed and the step groups removed in
 * every controller, so that the build's group can go. */
static void drop_step_groups(const char *id)
{
    char base[4096];
    DIR *d = NULL;
    struct dirent *de = NULL;
    int tries;

    if (sandbox_rt.cgroup_root == NULL || sandbox_rt.cgroup_name == NULL ||
        id == NULL || id[0] == '\0' || id[0] == '.' || strchr(id, '/'))
        return;
    d = opendir(sandbox_rt.cgroup_root);
    while (d != NULL && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(base, sizeof(base), "%s/%s/%s/%s", sandbox_rt.cgroup_root,
                 de->d_name, sandbox_rt.cgroup_name, id);
        for (tries = 0; tries < 2500 && kill_tree(base, 0) > 0; tries++)
            usleep(2000);
        remove_below(base, 0);
    }
    if (d != NULL)
        closedir(d);
}

/* How many OOM kills devboxd-build-runtime noted for the build's steps
 * (each in its own group, whose count the build's group lacks). */
static uint64_t step_ooms(const char *tmp)
{
    char *path = NULL;
    FILE *f = NULL;
    char id[1100];
    unsigned long long n;
    uint64_t sum = 0;

    if (asprintf(&path, "%s/" STEP_OOM_LOG, tmp) < 0)
        return 0;
    f = fopen(path, "re");
    while (f != NULL && fscanf(f, "%1099s %llu", id, &n) == 2)
        sum += n;
    if (f != NULL)
        fclose(f);
    free(path);
    return sum;
}

/* Streams buildah's output into the log until it ends; kills it when the
 * build must stop (SIGTERM to buildah, then every task of the group). */
static int follow(struct blueprint_buildah_job *j, struct child *c,
                  struct sb_cgroup *cg, struct progress *pg, char *why,
                  size_t whylen)
{
    char buf[LINE_MAX_LEN + 1];
    size_t have = 0;
    int64_t term_at = 0;
    int killed = 0;

    for (;;) {
        struct pollfd p = {.fd = c->out, .events = POLLIN};
        int pr = poll(&p, 1, 200);
        ssize_t r;

        if (!term_at && j->should_stop(j->ctx, why, whylen)) {
            kill(-c->pid, SIGTERM);
            term_at = mono_ms();
        }
        if (term_at && !killed && mono_ms() - term_at > TERM_GRACE_MS) {
            sandbox_cgroup_kill_all(cg, 5000);
            drop_step_groups(j->id);
            killed = 1;
        }
        if (pr <= 0)
            continue;
        r = read(c->out, buf + have, sizeof(buf) - 1 - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have = lines_of(j, pg, buf, have + (size_t)r, 0);
    }
    lines_of(j, pg, buf, have, 1);
    close(c->out);
    if (term_at) {
        sandbox_cgroup_kill_all(cg, 5000); /* RUN steps buildah left */
        drop_step_groups(j->id);
        j->killed = 1;
    }
    return reap(c->pid);
}

/* ------------------------------------------------------------- results */

static const char *parent_of(const cJSON *layers, const char *id)
{
    const cJSON *l = NULL;

    cJSON_ArrayForEach(l, layers)
    {
        const char *lid = util_json_str(l, "id");

        if (lid != NULL && strcmp(lid, id) == 0)
            return util_json_str(l, "parent");
    }
    return NULL;
}

/* Imports the image's new layer top into dst.  Every stage is FROM an
 * image (a stage FROM an earlier one gets that one's steps, see
 * buildah_dockerfile.c), so the final stage commits one layer over base. */
static int import_layer(const char *root, const cJSON *layers, const char *top,
                        const char *base, const char *dst, uid_t range,
                        char *err, size_t errlen)
{
    const char *parent = parent_of(layers, top);
    char *diff = NULL;
    int rc;

    if (parent == NULL || strcmp(parent, base) != 0) {
        snprintf(err, errlen,
                 "the built image's layer %s is not one layer over its "
                 "base image's layer %s",
                 top, base);
        return -1;
    }
    if (asprintf(&diff, "%s/overlay/%s/diff", root, top) < 0)
        return -1;
    rc = layers_import(diff, dst, range, err, errlen);
    free(diff);
    return rc;
}

/* Copies the build's new layer (above the final FROM's image) into
 * <dir>/layer, with ids moved from the build's range into the layer
 * owner's. */
static int keep_layer(struct blueprint_buildah_job *j, const char *disk,
                      const char *image, const char *from, uid_t range,
                      char *err, size_t errlen)
{
    char *root = NULL;
    char *state = NULL;
    char *shared = NULL;
    char *path = NULL;
    char *top = NULL;
    char *base = NULL;
    char *dst = NULL;
    cJSON *layers = NULL;
    int rc = -1;

    /* The built image is in the build's store; its base in any of three. */
    if (asprintf(&root, "%s/storage", disk) < 0 ||
        asprintf(&state, "%s/buildah/storage", j->state_dir) < 0 ||
        asprintf(&shared, "%s/buildah/storage", image_cache()) < 0 ||
        asprintf(&path, "%s/overlay-layers/layers.json", root) < 0 ||
        asprintf(&dst, "%s/layer", j->dir) < 0)
        goto out;
    top = top_layer(root, image);
    base = top_layer(root, from);
    if (base == NULL)
        base = top_layer(state, from);
    if (base == NULL)
        base = top_layer(shared, from);
    layers = util_read_json(path, 64u << 20);
    if (top == NULL || base == NULL || layers == NULL) {
        snprintf(err, errlen, "cannot find the built image's layers in %s",
                 root);
        goto out;
    }
    util_rmtree(dst);
    if (strcmp(top, base) == 0) { /* nothing changed on disk */
        rc = mkdir(dst, 0755) == 0 ? 0 : -1;
        goto out;
    }
    rc = import_layer(root, layers, top, base, dst, range, err, errlen);
out:
    free(root);
    free(state);
    free(shared);
    free(path);
    free(top);
    free(base);
    free(dst);
    cJSON_Delete(layers);
    return rc;
}

/* Standard Base64 with padding of s (containers/storage's name for a
 * big-data item whose key is not a plain file name). */
static char *b64(const char *s)
{
    static const char tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t len = strlen(s);
    char *out = malloc((len + 2) / 3 * 4 + 1);
    size_t i, o = 0;

    if (out == NULL)
        return NULL;
    for (i = 0; i < len; i += 3) {
        unsigned v = (unsigned)(unsigned char)s[i] << 16;

        if (i + 1 < len)
            v |= (unsigned)(unsigned char)s[i + 1] << 8;
        if (i + 2 < len)
            v |= (unsigned char)s[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? tab[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* The OCI config document of the image named name in the store at root,
 * read from the store's files: buildah commits an image whose id is its
 * config's digest and keeps the config as the big-data item of that key
 * (a `buildah inspect` would cost a buildah run). */
static cJSON *image_config_doc(const char *root, const char *name)
{
    char *id = image_member(root, name, "id");
    char *key = NULL;
    char *enc = NULL;
    char *path = NULL;
    cJSON *doc = NULL;

    if (id == NULL || asprintf(&key, "sha256:%s", id) < 0)
        goto out;
    enc = b64(key);
    if (enc == NULL ||
        asprintf(&path, "%s/overlay-images/%s/=%s", root, id, enc) < 0)
        goto out;
    doc = util_read_json(path, 16u << 20);
out:
    free(id);
    free(key);
    free(enc);
    free(path);
    return doc;
}

/* The built image's config: Env (without the default PATH), WorkingDir,
 * User, Entrypoint, Cmd into the record fields. */
static int keep_config(struct blueprint_buildah_job *j, const char *disk,
                       const char *image, char *err, size_t errlen)
{
    char *root = NULL;
    cJSON *doc = NULL;
    const cJSON *cfg = NULL;
    const cJSON *it = NULL;
    cJSON *env = cJSON_CreateObject();
    int rc = -1;

    if (asprintf(&root, "%s/storage", disk) < 0)
        root = NULL;
    if (root != NULL)
        doc = image_config_doc(root, image);
    if (!cJSON_IsObject(doc) ||
        !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(doc, "rootfs"))) {
        snprintf(err, errlen,
                 "cannot read the built image's config in the build's "
                 "store");
        goto out;
    }
    cfg = cJSON_GetObjectItemCaseSensitive(doc, "config");
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(cfg, "Env"))
    {
        const char *kv = cJSON_GetStringValue(it);
        const char *eq = kv != NULL ? strchr(kv, '=') : NULL;
        char *key = NULL;

        if (eq == NULL || strcmp(kv, DEFAULT_PATH) == 0)
            continue;
        key = strndup(kv, (size_t)(eq - kv));
        if (key != NULL)
            cJSON_AddStringToObject(env, key, eq + 1);
        free(key);
    }
    cJSON_AddItemToObject(j->record, "env", env);
    env = NULL;
    cJSON_AddItemToObject(j->record, "image_config",
                          cfg != NULL ? cJSON_Duplicate(cfg, 1)
                                      : cJSON_CreateObject());
    rc = 0;
out:
    cJSON_Delete(env);
    cJSON_Delete(doc);
    free(root);
    return rc;
}

/* -------------------------------------------------------------- build */

static void fail_message(struct blueprint_buildah_job *j,
                         const struct progress *pg, const char *why,
                         uint64_t ooms)
{
    char detail[512];
    char where[LINE_MAX_LEN];
    const struct buildah_dockerfile_step *st =
        pg->cur >= 0 ? &pg->df->steps[pg->cur] : NULL;
    int i;

    if (why[0] != '\0')
        snprintf(detail, sizeof(detail), "%s", why);
    else if (ooms > 0)
        snprintf(detail, sizeof(detail),
                 "killed for memory: a build may use %.3g GiB "
                 "(RLMCP_BUILD_MEMORY_GB)",
                 j->memory_gb);
    else if (pg->exit_status >= 0)
        snprintf(detail, sizeof(detail), "command exited with code %d",
                 pg->exit_status);
    else
        snprintf(detail, sizeof(detail), "buildah failed");
    if (st == NULL)
        snprintf(where, sizeof(where), "the build failed");
    else if (st->setup > 0)
        snprintf(where, sizeof(where),
                 "step %d/%d: system_setup_commands[%d] %s failed",
                 st->user_step, pg->df->user_steps, st->setup - 1,
                 st->text + 4);
    else if (st->line > 0 && st->user_step > 0)
        snprintf(where, sizeof(where),
                 "step %d/%d (Dockerfile line %d): %s failed", st->user_step,
                 pg->df->user_steps, st->line, st->text);
    else if (st->line > 0)
        snprintf(where, sizeof(where), "Dockerfile line %d: %s failed",
                 st->line, st->text);
    else
        snprintf(where, sizeof(where), "%s failed", st->text);
    jlog(j, "error", "%s: %s", where, detail);
    if (pg->tail_n > 0 && (why[0] == '\0' || j->out_of_disk)) {
        int n = pg->tail_n < TAIL_LINES ? pg->tail_n : TAIL_LINES;

        jlog(j, "error", "the last %d lines of output:", n);
        for (i = pg->tail_n - n; i < pg->tail_n; i++)
            jlog(j, "error", "  %s", pg->tail[i % TAIL_LINES]);
    }
}

static size_t build_args(struct blueprint_buildah_job *j, char **argv, size_t n,
                         size_t max, char **owned, size_t *n_owned)
{
    const cJSON *it = NULL;

    cJSON_ArrayForEach(
        it, cJSON_GetObjectItemCaseSensitive(j->params, "build_args"))
    {
        char *kv = NULL;

        if (n + 2 >= max || !cJSON_IsString(it) ||
            asprintf(&kv, "%s=%s", it->string, it->valuestring) < 0)
            continue;
        owned[(*n_owned)++] = kv;
        argv[n++] = "--build-arg";
        argv[n++] = kv;
    }
    return n;
}

/* The limits' cgroup for buildah and its RUN steps (-1 with err). */
static int make_group(struct blueprint_buildah_job *j, struct sb_cgroup *cg,
                      int fds[SB_CG_N], char *err, size_t errlen)
{
    struct sb_limits lim;
    int i;

    memset(&lim, 0, sizeof(lim));
    lim.memory_bytes = (uint64_t)(j->memory_gb * 1073741824.0);
    lim.cpu_millis = (uint32_t)(j->cpus * 1000.0);
    sandbox_purge(j->id);
    if (sandbox_cgroup_create(cg, j->id, &lim, err, errlen) != 0)
        return -1;
    for (i = 0; i < SB_CG_N; i++)
        fds[i] = -1;
    return sandbox_cgroup_open_procs(cg, fds) == 0 ? 0 : -1;
}

/* Unmounts and deletes a build's disk and temp dir. */
static void drop_build_disk(const char *tmp)
{
    char img[4096];

    if (sandbox_disk_detach(tmp) != 0)
        fprintf(stderr, "devboxd: cannot unmount the build disk %s\n", tmp);
    if (sandbox_fs_remove_tree(tmp) != 0)
        fprintf(stderr, "devboxd: cannot remove %s\n", tmp);
    if (sandbox_disk_image_path(tmp, img, sizeof(img)) == 0 &&
        unlink(img) != 0 && errno != ENOENT)
        fprintf(stderr, "devboxd: cannot remove %s: %s\n", img,
                strerror(errno));
}

/* buildah's temp dir for a build, BUILD_TMP_ROOT/<id>, on the build's own
 * disk (a fresh ext4 of disk_gb, loop-mounted there): it holds the build's
 * store too, so all a build writes counts against RLMCP_BUILD_DISK_GB.  A
 * RUN step's bundle is there and runc, already in the step's user
 * namespace, mounts from it: so not under the 0700 state dir, but in a dir
 * that only root writes. */
static char *build_tmpdir(const char *id, double disk_gb, char *err,
                          size_t errlen)
{
    struct stat st;
    char *t = NULL;

    if (mkdir(BUILD_TMP_ROOT, 0711) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", BUILD_TMP_ROOT,
                 strerror(errno));
        return NULL;
    }
    if (lstat(BUILD_TMP_ROOT, &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != 0 || (st.st_mode & 022) != 0 ||
        chmod(BUILD_TMP_ROOT, 0711) != 0) {
        snprintf(err, errlen,
                 "%s must be a directory of root's that no one else may "
                 "write; remove it",
                 BUILD_TMP_ROOT);
        return NULL;
    }
    if (asprintf(&t, "%s/%s", BUILD_TMP_ROOT, id) < 0)
        return NULL;
    drop_build_disk(t);
    if (sandbox_disk_attach(t, (uint64_t)(disk_gb * 1073741824.0), err,
                            errlen) != 0) {
        free(t);
        return NULL;
    }
    if (chmod(t, 0711) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", t, strerror(errno));
        drop_build_disk(t);
        free(t);
        return NULL;
    }
    return t;
}

/* Starts `buildah build` of the job's Dockerfile into tag, its RUN steps
 * in a user namespace whose root is host id range. */
static int start_build(struct blueprint_buildah_job *j, uid_t range,
                       const char *tmp, const char *tag,
                       const struct build_net *net, const struct sb_cgroup *cg,
                       const int *fds, struct child *c, char *err,
                       size_t errlen)
{
    char *argv[160];
    char *owned[80];
    char *store[STORE_OWNED] = {NULL, NULL, NULL, NULL};
    char cpus[64] = "";
    char map[64];
    cpu_set_t set;
    size_t n, n_owned = 0, i;
    int rc = -1;

    snprintf(map, sizeof(map), "0:%u:%u", (unsigned)range, SB_RANGE_SIZE);
    n = store_args(j->state_dir, tmp, argv, store);
    argv[n++] = "build";
    /* runc through devboxd's wrapper, which masks /proc/cmdline. */
    argv[n++] = "--runtime";
    owned[n_owned] = sandbox_helper_path("devboxd-build-runtime");
    if (owned[n_owned] == NULL)
        goto out;
    argv[n++] = owned[n_owned++];
    argv[n++] = "--runtime-flag";
    if (asprintf(&owned[n_owned], "devboxd-runc=%s", sandbox_rt.runc_path) < 0)
        goto out;
    argv[n++] = owned[n_owned++];
    /* Every RUN step in the build's own user and network namespaces
     * (build_net.h): the wrapper joins the one, buildah the other. */
    argv[n++] = "--runtime-flag";
    if (asprintf(&owned[n_owned], "devboxd-userns=%s", net->userns) < 0)
        goto out;
    argv[n++] = owned[n_owned++];
    argv[n++] = "--runtime-flag";
    if (asprintf(&owned[n_owned], "devboxd-netns=%s", net->netns) < 0)
        goto out;
    argv[n++] = owned[n_owned++];
    /* Each step in a group of its own below the build's (build_runtime.c:
     * runc delete removes it at once), its OOM kills noted for us. */
    if (cg->path[SB_CG_MEMORY] != NULL) {
        argv[n++] = "--runtime-flag";
        if (asprintf(&owned[n_owned], "devboxd-memcg=%s",
                     cg->path[SB_CG_MEMORY]) < 0)
            goto out;
        argv[n++] = owned[n_owned++];
        argv[n++] = "--runtime-flag";
        if (asprintf(&owned[n_owned], "devboxd-oom-log=%s/" STEP_OOM_LOG, tmp) <
            0)
            goto out;
        argv[n++] = owned[n_owned++];
    }
    if (asprintf(&owned[n_owned], "--network=ns:%s", net->netns) < 0)
        goto out;
    argv[n++] = owned[n_owned++];
    argv[n++] = "--userns-uid-map";
    argv[n++] = map;
    argv[n++] = "--userns-gid-map";
    argv[n++] = map;
    argv[n++] = "--cgroup-manager";
    argv[n++] = "cgroupfs";
    argv[n++] = "--cgroup-parent";
    if (asprintf(&owned[n_owned], "/%s/%s", sandbox_rt.cgroup_name, j->id) < 0)
        goto out;
    argv[n++] = owned[n_owned++];
    if (sandbox_cgroup_cpu_pick(j->id, (uint32_t)(j->cpus * 1000.0), &set)) {
        sandbox_cgroup_cpu_list(&set, cpus, sizeof(cpus));
        argv[n++] = "--cpuset-cpus";
        argv[n++] = cpus;
    }
    argv[n++] = "--layers=false";
    argv[n++] = "--pull=never";
    argv[n++] = "--format=oci";
    argv[n++] = "-t";
    argv[n++] = (char *)tag;
    argv[n++] = "-f";
    if (asprintf(&owned[n_owned], "%s/build/Dockerfile", j->dir) < 0)
        goto out;
    argv[n++] = owned[n_owned++];
    n = build_args(j, argv, n, 150, owned, &n_owned);
    if (asprintf(&owned[n_owned], "%s/build/context", j->dir) < 0)
        goto out;
    argv[n++] = owned[n_owned++];
    argv[n] = NULL;
    rc = spawn(argv, fds, tmp, c, err, errlen);
out:
    for (i = 0; i < n_owned; i++)
        free(owned[i]);
    for (i = 0; i < STORE_OWNED; i++)
        free(store[i]);
    return rc;
}

/* Adds `flag value` for each string of a (or each key of an object). */
static size_t config_list(const char **w, size_t n, const char *flag,
                          const cJSON *a)
{
    const cJSON *it = NULL;

    cJSON_ArrayForEach(it, a)
    {
        const char *v =
            cJSON_IsObject(a) ? it->string : cJSON_GetStringValue(it);

        if (v != NULL) {
            w[n++] = flag;
            w[n++] = v;
        }
    }
    return n;
}

/* `buildah config` of container ctr to the OCI image config cfg. */
static int set_config(const char *state_dir, const char *ctr, const cJSON *cfg)
{
    const char *str[][2] = {{"--workingdir", "WorkingDir"},
                            {"--user", "User"},
                            {"--stop-signal", "StopSignal"}};
    const char *json[][2] = {{"--entrypoint", "Entrypoint"}, {"--cmd", "Cmd"}};
    char *text[2] = {NULL, NULL};
    char **labels = NULL;
    const char **w = NULL;
    const cJSON *it = NULL;
    size_t n = 0, i, count = 16;
    int rc = -1;

    cJSON_ArrayForEach(it, cfg) count += 2 * (size_t)cJSON_GetArraySize(it);
    w = calloc(count, sizeof(*w));
    labels = calloc(count, sizeof(*labels));
    if (w == NULL || labels == NULL)
        goto out;
    w[n++] = "config";
    for (i = 0; i < 3; i++) {
        it = cJSON_GetObjectItemCaseSensitive(cfg, str[i][1]);
        if (cJSON_IsString(it) && it->valuestring[0] != '\0') {
            w[n++] = str[i][0];
            w[n++] = it->valuestring;
        }
    }
    for (i = 0; i < 2; i++) {
        it = cJSON_GetObjectItemCaseSensitive(cfg, json[i][1]);
        if (cJSON_IsArray(it) &&
            (text[i] = cJSON_PrintUnformatted(it)) != NULL) {
            w[n++] = json[i][0];
            w[n++] = text[i];
        }
    }
    n = config_list(w, n, "--env",
                    cJSON_GetObjectItemCaseSensitive(cfg, "Env"));
    n = config_list(w, n, "--port",
                    cJSON_GetObjectItemCaseSensitive(cfg, "ExposedPorts"));
    n = config_list(w, n, "--volume",
                    cJSON_GetObjectItemCaseSensitive(cfg, "Volumes"));
    i = 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(cfg, "Labels"))
    {
        if (cJSON_IsString(it) &&
            asprintf(&labels[i], "%s=%s", it->string, it->valuestring) >= 0) {
            w[n++] = "--label";
            w[n++] = labels[i++];
        }
    }
    w[n++] = ctr;
    w[n] = NULL;
    rc = store_cmd(state_dir, w, NULL) == 0 ? 0 : -1;
out:
    for (i = 0; labels != NULL && labels[i] != NULL; i++)
        free(labels[i]);
    free(labels);
    free(text[0]);
    free(text[1]);
    free(w);
    return rc;
}

/* The overlay upper dir of working container ctr (unmounted again). */
static char *container_diff(const char *state_dir, const char *ctr)
{
    const char *mount[] = {"mount", ctr, NULL};
    const char *umount[] = {"umount", ctr, NULL};
    char *out = NULL;
    char *line = NULL;
    char *slash = NULL;
    char *diff = NULL;

    if (store_cmd(state_dir, mount, &out) != 0 || out == NULL)
        goto out;
    /* The last line: the mount point (after any warning). */
    line = out + strlen(out);
    while (line > out && (line[-1] == '\n' || line[-1] == ' '))
        *--line = '\0';
    while (line > out && line[-1] != '\n')
        line--;
    slash = strrchr(line, '/');
    if (line[0] == '/' && slash != NULL && strcmp(slash, "/merged") == 0) {
        *slash = '\0';
        if (asprintf(&diff, "%s/diff", line) < 0)
            diff = NULL;
    }
    if (store_cmd(state_dir, umount, NULL) != 0) {
        free(diff);
        diff = NULL;
    }
out:
    free(out);
    return diff;
}

/* A new working container ctr of image from (an earlier attempt's gone). */
static int new_container(const char *state_dir, const char *ctr,
                         const char *from)
{
    const char *rm[] = {"rm", ctr, NULL};
    const char *words[] = {"from", "--pull=never", "--name", ctr, from, NULL};

    store_cmd(state_dir, rm, NULL);
    return store_cmd(state_dir, words, NULL);
}

static int commit_container(const char *state_dir, const char *ctr,
                            const char *name)
{
    const char *words[] = {"commit", "--rm", "--quiet", "--format=oci",
                           ctr,      name,   NULL};

    return store_cmd(state_dir, words, NULL);
}

/* The buildah image of blueprint id (its layer in <dir>/layer), name,
 * for builds FROM it: the final FROM's image `from`, the blueprint's layer
 * with image ids and the built image's config cfg. Not the image buildah
 * committed: buildah 1.28 keeps the build's host ids in a layer built in a
 * user namespace, and runc cannot start a step on it (the step's root does
 * not own the layer's /run). */
static int make_image(const char *state_dir, const char *id, const char *dir,
                      const cJSON *cfg, const char *from, const char *name,
                      char *err, size_t errlen)
{
    char *ctr = NULL;
    char *diff = NULL;
    char *layer = NULL;
    const char *rm[] = {"rm", NULL, NULL};
    int rc = -1;

    if (asprintf(&ctr, "devboxd-image-%s", id) < 0 ||
        asprintf(&layer, "%s/layer", dir) < 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (new_container(state_dir, ctr, from) != 0) {
        snprintf(err, errlen, "buildah from %s failed", from);
        goto out;
    }
    diff = container_diff(state_dir, ctr);
    if (diff == NULL || rmdir(diff) != 0) {
        snprintf(err, errlen, "cannot find the layer dir of container %s", ctr);
        goto out;
    }
    if (layers_export(layer, diff, err, errlen) != 0)
        goto out;
    if (set_config(state_dir, ctr, cfg) != 0) {
        snprintf(err, errlen, "buildah config of the blueprint's image failed");
        goto out;
    }
    if (commit_container(state_dir, ctr, name) != 0) {
        snprintf(err, errlen, "buildah commit of %s failed", name);
        goto out;
    }
    rc = 0;
out:
    rm[1] = ctr;
    if (rc != 0 && ctr != NULL)
        store_cmd(state_dir, rm, NULL);
    free(ctr);
    free(diff);
    free(layer);
    return rc;
}

/* What making blueprint id's image needs, copied from its record (any
 * state: a deleted base stays while a blueprint built on it does). */
struct bp_image {
    char *name;  /* buildah_image */
    char *from;  /* buildah_from: the final FROM's local name */
    char *image; /* the engine image under it all */
    char *dir;
    cJSON *cfg;
};

static void bp_image_free(struct bp_image *b)
{
    free(b->name);
    free(b->from);
    free(b->image);
    free(b->dir);
    cJSON_Delete(b->cfg);
}

static int bp_image_of(const char *state_dir, const char *id,
                       struct bp_image *b)
{
    cJSON *rec = NULL;
    int rc = -1;

    memset(b, 0, sizeof(*b));
    if (records != NULL)
        rec = records->find(id, NULL, 1);
    if (rec != NULL && util_json_str(rec, "buildah_image") != NULL) {
        b->name = strdup(util_json_str(rec, "buildah_image"));
        b->from = util_json_str(rec, "buildah_from") != NULL
                      ? strdup(util_json_str(rec, "buildah_from"))
                      : NULL;
        b->image = strdup(util_json_str(rec, "image") ?: images_default());
        b->cfg = cJSON_Duplicate(
            cJSON_GetObjectItemCaseSensitive(rec, "image_config"), 1);
        if (asprintf(&b->dir, "%s/blueprints/%s", state_dir, id) < 0)
            b->dir = NULL;
        rc = b->name != NULL && b->image != NULL && b->dir != NULL ? 0 : -1;
    }
    cJSON_Delete(rec);
    return rc;
}

static int image_exists(const char *state_dir, const char *name)
{
    const char *words[] = {"inspect", "--type", "image", name, NULL};
    char *out = NULL;
    int rc = store_cmd(state_dir, words, &out);

    free(out);
    return rc == 0;
}

/* Makes blueprint id's image unless the store has it, its base's first
 * (a blueprint FROM a blueprint is FROM that one's image). */
static int blueprint_image_locked(const char *state_dir, const char *id,
                                  int depth, char *err, size_t errlen)
{
    struct bp_image b;
    char *local = NULL;
    int rc = -1;

    if (bp_image_of(state_dir, id, &b) != 0) {
        snprintf(err, errlen, "blueprint %s has no buildah image record", id);
        goto out;
    }
    if (image_exists(state_dir, b.name)) {
        rc = 0;
        goto out;
    }
    if (b.from == NULL || depth > 64) {
        snprintf(err, errlen,
                 "blueprint %s has no buildah image; build it again to "
                 "build FROM it",
                 id);
        goto out;
    }
    /* On an engine image: its buildah name now (imported once per machine;
     * devboxes of the blueprint run on that image by name too). */
    if (strncmp(b.from, BLUEPRINT_REPO, strlen(BLUEPRINT_REPO)) == 0)
        rc = blueprint_image_locked(state_dir, b.from + strlen(BLUEPRINT_REPO),
                                    depth + 1, err, errlen);
    else
        rc = image_local(b.image, &local, err, errlen);
    if (rc == 0)
        rc = make_image(state_dir, id, b.dir, b.cfg,
                        local != NULL ? local : b.from, b.name, err, errlen);
out:
    free(local);
    bp_image_free(&b);
    return rc;
}

static pthread_mutex_t bp_image_lock = PTHREAD_MUTEX_INITIALIZER;

/* Blueprint id's buildah image, made on the first build FROM it. One at a
 * time: two builds FROM one blueprint make it once. */
static int blueprint_image(const char *state_dir, const char *id, char *err,
                           size_t errlen)
{
    int rc;

    pthread_mutex_lock(&bp_image_lock);
    rc = blueprint_image_locked(state_dir, id, 0, err, errlen);
    pthread_mutex_unlock(&bp_image_lock);
    return rc;
}

/* The results of a built image tag into j->record.  The blueprint's own
 * buildah image is not made now but when a build is FROM it
 * (blueprint_image): most blueprints only boot devboxes, which run on its
 * layer, and making it (a container, a copy of the layer, a commit) is
 * most of a small build's time over its steps. */
static int keep_results(struct blueprint_buildah_job *j, struct names *nm,
                        const struct buildah_dockerfile_out *df, uid_t range,
                        const char *disk, const char *tag)
{
    const cJSON *what =
        cJSON_GetObjectItemCaseSensitive(nm->resolved, df->final_from);
    char *name = NULL;
    char err[1024] = "";
    int rc = -1;

    if (asprintf(&name, BLUEPRINT_REPO "%s", j->id) < 0)
        return -1;
    if (keep_layer(j, disk, tag, df->final_from, range, err, sizeof(err)) !=
            0 ||
        keep_config(j, disk, tag, err, sizeof(err)) != 0) {
        jlog(j, "error", "%s", err);
        goto out;
    }
    cJSON_AddStringToObject(j->record, "builder", "buildah");
    cJSON_AddStringToObject(j->record, "buildah_image", name);
    cJSON_AddStringToObject(j->record, "buildah_from", df->final_from);
    cJSON_AddStringToObject(j->record, "image",
                            util_json_str(what, "image") ?: images_default());
    if (cJSON_GetObjectItemCaseSensitive(what, "blueprint") != NULL)
        cJSON_AddStringToObject(j->record, "base_blueprint_id",
                                util_json_str(what, "blueprint"));
    rc = 0;
out:
    free(name);
    return rc;
}

/* Removes what a build left: its temp dir and, when its store has them,
 * the image buildah committed and (when it failed) the blueprint's. */
static void drop_leftovers(const char *state_dir, const char *id, int failed)
{
    char *storage = NULL;
    char *build = NULL;
    char *name = NULL;
    char *tmp = NULL;
    struct stat st;

    if (asprintf(&tmp, "%s/%s", BUILD_TMP_ROOT, id) >= 0)
        drop_build_disk(tmp);
    if (asprintf(&storage, "%s/buildah/storage", state_dir) < 0 ||
        stat(storage, &st) != 0)
        goto out;
    /* Builds commit into their disk's store, gone with the disk: only a
     * build of an older devboxd left its image here. */
    if (asprintf(&build, BUILD_REPO "%s", id) >= 0 &&
        state_has_image(state_dir, build)) {
        const char *words[] = {"rmi", build, NULL};

        store_cmd(state_dir, words, NULL);
    }
    if (failed && asprintf(&name, BLUEPRINT_REPO "%s", id) >= 0 &&
        state_has_image(state_dir, name)) {
        const char *words[] = {"rmi", name, NULL};

        store_cmd(state_dir, words, NULL);
    }
out:
    free(storage);
    free(build);
    free(name);
    free(tmp);
}

void blueprint_buildah_abandon(const char *state_dir, const char *id)
{
    /* buildah outlives a killed devboxd: it and its steps go first. */
    drop_step_groups(id);
    sandbox_purge(id);
    drop_leftovers(state_dir, id, 1);
}

/* The state dir's store exists before a build reads it as an image store
 * (on an engine's first build it does not). */
static int ensure_state_store(const char *state_dir)
{
    static const char *const words[] = {"images", "-q", NULL};
    char *path = NULL;
    struct stat st;
    int rc = 0;

    if (asprintf(&path, "%s/buildah/storage/overlay-images", state_dir) < 0)
        return -1;
    if (stat(path, &st) != 0)
        rc = store_cmd(state_dir, words, NULL);
    free(path);
    return rc;
}

/* Whether a failed build ran out of its disk: a step or buildah said so,
 * or the disk is (nearly) full. */
static int disk_full(const struct progress *pg, const char *disk)
{
    struct statvfs v;
    int n = pg->tail_n < TAIL_LINES ? pg->tail_n : TAIL_LINES;
    int i;

    for (i = pg->tail_n - n; i < pg->tail_n; i++) {
        if (strcasestr(pg->tail[i % TAIL_LINES], "no space left on device") !=
            NULL)
            return 1;
    }
    return statvfs(disk, &v) == 0 && v.f_blocks > 0 &&
           v.f_bavail < v.f_blocks / 50;
}

int blueprint_buildah_run(struct blueprint_buildah_job *j)
{
    struct names nm;
    struct buildah_dockerfile_out df;
    struct progress pg;
    struct sb_cgroup cg;
    struct build_net net;
    struct child c;
    char err[1024] = "";
    char why[512] = "";
    char *tmp = NULL;
    char *tag = NULL;
    char *sbdir = NULL;
    uid_t range = 0;
    int cache_lock = -1;
    int have_net = 0;
    int fds[SB_CG_N];
    size_t i;
    int status;
    int rc = -1;

    memset(&nm, 0, sizeof(nm));
    memset(&df, 0, sizeof(df));
    memset(&cg, 0, sizeof(cg));
    memset(&pg, 0, sizeof(pg));
    for (i = 0; i < SB_CG_N; i++)
        fds[i] = -1;
    nm.resolved = cJSON_CreateObject();
    nm.job_id = j->id;
    nm.state_dir = j->state_dir;
    j->record = cJSON_CreateObject();
    jlog(j, "info", "builder: buildah (%s)", "buildah build --runtime runc");
    if (buildah_dockerfile_prepare(j->params, resolve, &nm, &df, err,
                                   sizeof(err)) != 0) {
        jlog(j, "error", "Dockerfile %s", err);
        goto out;
    }
    if (depend_on_final(&nm, &df, err, sizeof(err)) != 0 ||
        write_context(j, &df, err, sizeof(err)) != 0 ||
        fetch_code(j, err, sizeof(err)) != 0) {
        jlog(j, "error", "%s", err);
        goto out;
    }
    /* RUN steps' root is a host id range of the build's, claimed as a
     * devbox's (in <dir>/sandbox, which a restart after a crash releases). */
    if (asprintf(&sbdir, "%s/sandbox", j->dir) < 0 ||
        sandbox_dir_owner(sbdir, j->id, &range, err, sizeof(err)) != 0) {
        jlog(j, "error", "the build's host ids: %s", err);
        goto out;
    }
    jlog(j, "info", "RUN steps run as host ids %u-%u (root is %u)",
         (unsigned)range, (unsigned)(range + SB_RANGE_SIZE - 1),
         (unsigned)range);
    if (make_group(j, &cg, fds, err, sizeof(err)) != 0) {
        jlog(j, "error", "the build's cgroup: %s", err);
        goto out;
    }
    if ((tmp = build_tmpdir(j->id, j->disk_gb, err, sizeof(err))) == NULL) {
        jlog(j, "error", "the build disk: %s", err);
        goto out;
    }
    if (build_net_start(&net, range, fds, err, sizeof(err)) != 0) {
        jlog(j, "error", "%s", err);
        goto out;
    }
    have_net = 1;
    if (ensure_state_store(j->state_dir) != 0) {
        jlog(j, "error", "cannot open the buildah store of %s", j->state_dir);
        goto out;
    }
    if (build_cache_open(j->state_dir, tmp, range, &df.caches, &cache_lock, why,
                         sizeof(why), err, sizeof(err)) != 0) {
        jlog(j, "error", "the build cache: %s", err);
        goto out;
    }
    if (why[0] != '\0')
        jlog(j, "info", "%s", why);
    why[0] = '\0';
    if (asprintf(&tag, BUILD_REPO "%s", j->id) < 0)
        goto out;
    pg.df = &df;
    pg.cur = -1;
    pg.exit_status = -1;
    if (start_build(j, range, tmp, tag, &net, &cg, fds, &c, err, sizeof(err)) !=
        0) {
        jlog(j, "error", "%s", err);
        goto out;
    }
    status = follow(j, &c, &cg, &pg, why, sizeof(why));
    if (status != 0 && why[0] == '\0' && disk_full(&pg, tmp)) {
        j->out_of_disk = 1;
        snprintf(why, sizeof(why),
                 "the build disk limit of %.3g GiB was reached "
                 "(RLMCP_BUILD_DISK_GB): what the steps write and buildah's "
                 "work must fit in it; write less or raise "
                 "RLMCP_BUILD_DISK_GB",
                 j->disk_gb);
    }
    if (status != 0 || why[0] != '\0') {
        fail_message(j, &pg, why,
                     sandbox_cgroup_oom_kills(&cg) + step_ooms(tmp));
        goto out;
    }
    if (keep_results(j, &nm, &df, range, tmp, tag) != 0)
        goto out;
    rc = 0;
out:
    for (i = 0; i < SB_CG_N; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (have_net)
        build_net_stop(&net);
    sandbox_cgroup_kill_all(&cg, 5000);
    drop_step_groups(j->id);
    sandbox_cgroup_remove(&cg);
    sandbox_purge(j->id); /* the groups runc made in the other controllers */
    if (cache_lock >= 0)
        close(cache_lock); /* after the last RUN step is gone */
    drop_leftovers(j->state_dir, j->id, rc != 0);
    if (sbdir != NULL && sandbox_destroy_dir(sbdir, err, sizeof(err)) != 0)
        fprintf(stderr, "devboxd: build %s: %s\n", j->id, err);
    free(sbdir);
    free(tag);
    free(tmp);
    buildah_dockerfile_free(&df);
    cJSON_Delete(nm.resolved);
    return rc;
}

void blueprint_buildah_job_free(struct blueprint_buildah_job *j)
{
    cJSON_Delete(j->record);
    j->record = NULL;
}
