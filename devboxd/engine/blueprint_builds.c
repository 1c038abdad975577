/* Blueprints: builds run in a build sandbox on the base layers (worker
 * threads, bounded concurrency); the build's writable layer becomes the
 * blueprint's layer.  Logs are JSON lines appended as the steps run. */
#define _GNU_SOURCE
#include "blueprint_builds.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blueprint_buildah.h"
#include "build_context.h"
#include "code_mounts.h"
#include "devbox_spec.h"
#include "dockerfile.h"
#include "images.h"
#include "layer_records.h"
#include "sandbox.h"
#include "warm_pool.h"
#include "sandbox_internal.h"
#include "util.h"

#define ERRLEN 512
#define MAX_FILE_MOUNT 131000    /* the SDK's per-file check */
#define MAX_FILE_MOUNTS 1310000
#define MAX_SETUP_BYTES (64 * 1024)
#define MAX_LOG_LINES 20000      /* per build; more output is cut */
#define LOG_LINE_MAX 4096
#define LOCAL_BASE "runloop:runloop/starter-x86_64"
#define CANCEL_WAIT_MS                                                         \
    30000 /* a delete waits this long for its build to stop */

static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slot_cond = PTHREAD_COND_INITIALIZER;
static int slots_used;
static int builds_alive;  /* worker threads not yet finished */
static int stopping;      /* devboxd is stopping: end the builds */
static struct build *active; /* builds not yet finished, slot_lock */
static int store_dirty;      /* a killed buildah left containers: slot_lock */
static int cleaning;         /* bb_cleanup runs: no build starts, slot_lock */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

struct build {
    struct engine *eng;
    char id[40];
    char *dir;           /* <state>/blueprints/<id> */
    cJSON *params;       /* the create body */
    cJSON *base_chain;   /* layers of the base blueprint, if any */
    char *base_id;
    struct sandbox *sb;
    cJSON *env;          /* ENV values (expanded) kept for devboxes */
    int log_lines;
    int step;
    int n_steps;
    int copies;
    int64_t deadline_ms;       /* RLMCP_BUILD_TIMEOUT_S from the slot's start */
    int cancelled;             /* deleted while building: slot_lock */
    int killed;                /* buildah was killed (bb_job.killed) */
    int context_fd;            /* the build_context archive, or -1 */
    struct build *next_active; /* the builds list, slot_lock */
};

static void set_str(cJSON *rec, const char *name, const char *value)
{
    cJSON_DeleteItemFromObjectCaseSensitive(rec, name);
    if (value != NULL)
        cJSON_AddStringToObject(rec, name, value);
}

static cJSON *find_locked(const char *id)
{
    cJSON *rec = NULL;

    cJSON_ArrayForEach(rec, layers_blueprints_locked()) {
        const char *rid = util_json_str(rec, "id");

        if (rid != NULL && strcmp(rid, id) == 0)
            return rec;
    }
    return NULL;
}

cJSON *blueprints_record_locked(const char *id)
{
    return find_locked(id);
}

void blueprints_depend_locked(const char *id, const cJSON *base)
{
    cJSON *mine = find_locked(id);
    const char *base_id = util_json_str(base, "id");

    if (mine == NULL || base_id == NULL)
        return;
    set_str(mine, "base_blueprint_id", base_id);
    cJSON_DeleteItemFromObjectCaseSensitive(mine, "layers");
    cJSON_AddItemToObject(
        mine, "layers",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(base, "layers"), 1));
    layers_save_record("blueprints", "blueprint.json", mine);
}

static int has_tag(const cJSON *rec, const char *tag)
{
    const cJSON *it = NULL;

    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rec, "tags")) {
        if (cJSON_IsString(it) && strcmp(it->valuestring, tag) == 0)
            return 1;
    }
    return 0;
}

/* A completed, not deleted build whose id (or name) is key; with tag, the
 * one of that name carrying the tag. */
static cJSON *find_built_locked(const char *field, const char *key,
                                size_t keylen, const char *tag)
{
    cJSON *rec = NULL;

    cJSON_ArrayForEach(rec, layers_blueprints_locked()) {
        const char *st = util_json_str(rec, "status");
        const char *state = util_json_str(rec, "state");
        const char *v = util_json_str(rec, field);

        if (st == NULL || strcmp(st, "build_complete") != 0 || state == NULL ||
            strcmp(state, "created") != 0 || v == NULL)
            continue;
        if (strlen(v) == keylen && strncmp(v, key, keylen) == 0 &&
            (tag == NULL || has_tag(rec, tag)))
            return rec; /* newest first: the latest successful build of a name */
    }
    return NULL;
}

cJSON *blueprints_find_locked(const char *id, const char *name)
{
    const char *colon = NULL;
    cJSON *rec = NULL;

    if (id != NULL)
        return find_built_locked("id", id, strlen(id), NULL);
    rec = find_built_locked("name", name, strlen(name), NULL);
    /* No build named so: "NAME:TAG" is the build of NAME tagged TAG. */
    colon = strrchr(name, ':');
    if (rec == NULL && colon != NULL && colon != name && colon[1] != '\0')
        rec = find_built_locked("name", name, (size_t)(colon - name), colon + 1);
    return rec;
}

/* BlueprintView of a record. */
static cJSON *bp_view(const cJSON *rec)
{
    static const char *const opt[] = {"base_blueprint_id", "failure_reason", NULL};
    cJSON *v = cJSON_CreateObject();
    const cJSON *it = NULL;
    size_t i;

    cJSON_AddStringToObject(v, "id", util_json_str(rec, "id"));
    cJSON_AddStringToObject(v, "name", util_json_str(rec, "name"));
    cJSON_AddStringToObject(v, "status", util_json_str(rec, "status"));
    cJSON_AddStringToObject(v, "state", util_json_str(rec, "state"));
    cJSON_AddNumberToObject(v, "create_time_ms", cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(rec, "create_time_ms")));
    it = cJSON_GetObjectItemCaseSensitive(rec, "build_finish_time_ms");
    if (cJSON_IsNumber(it))
        cJSON_AddNumberToObject(v, "build_finish_time_ms", it->valuedouble);
    else
        cJSON_AddNullToObject(v, "build_finish_time_ms");
    cJSON_AddItemToObject(v, "parameters", cJSON_Duplicate(
        cJSON_GetObjectItemCaseSensitive(rec, "parameters"), 1));
    for (i = 0; opt[i] != NULL; i++) {
        const char *s = util_json_str(rec, opt[i]);

        if (s != NULL)
            cJSON_AddStringToObject(v, opt[i], s);
        else
            cJSON_AddNullToObject(v, opt[i]);
    }
    cJSON_AddNullToObject(v, "containerized_services");
    cJSON_AddItemToObject(v, "devbox_capabilities", cJSON_CreateArray());
    cJSON_AddFalseToObject(v, "is_public");
    /* devboxd's extension: the tags naming this build (blueprints_tag). */
    it = cJSON_GetObjectItemCaseSensitive(rec, "tags");
    cJSON_AddItemToObject(v, "tags", cJSON_IsArray(it) ? cJSON_Duplicate(it, 1)
                                                       : cJSON_CreateArray());
    it = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(rec, "parameters"), "metadata");
    cJSON_AddItemToObject(v, "metadata", cJSON_IsObject(it) ? cJSON_Duplicate(it, 1)
                                                             : cJSON_CreateObject());
    return v;
}

/* ---------------------------------------------------------------- logs */

/* msg with every occurrence of needle (when not empty) replaced by with,
 * into out (cut to len).  */
static void replace_all(const char *msg, const char *needle, const char *with,
                        char *out, size_t len)
{
    size_t nlen = needle != NULL ? strlen(needle) : 0;
    size_t off = 0;
    const char *p = msg;
    const char *hit;

    if (len == 0)
        return;
    while (nlen > 0 && (hit = strstr(p, needle)) != NULL && off < len) {
        off += (size_t)snprintf(out + off, len - off, "%.*s%s", (int)(hit - p),
                                p, with);
        p = hit + nlen;
    }
    if (off < len)
        snprintf(out + off, len - off, "%s", p);
    else
        out[len - 1] = '\0';
}

/* A build log names no host path of devboxd's: its state dir (also as
 * its real path) and buildah's temp root read "<state>" and "<build-tmp>".
 * The log goes to the blueprint's caller (GET …/logs); errors of buildah
 * and of the build's own steps quote such paths. */
static void scrub_paths(const char *msg, char *out, size_t len)
{
    char tmp[LOG_LINE_MAX + 256];
    char tmp2[LOG_LINE_MAX + 256];
    char real[PATH_MAX];
    const char *state = layers_state_dir();

    replace_all(msg, state, "<state>", tmp, sizeof(tmp));
    if (state != NULL && realpath(state, real) != NULL &&
        strcmp(real, state) != 0)
        replace_all(tmp, real, "<state>", tmp2, sizeof(tmp2));
    else
        snprintf(tmp2, sizeof(tmp2), "%s", tmp);
    replace_all(tmp2, BUILD_TMP_ROOT, "<build-tmp>", out, len);
}

static void log_append(const char *dir, const char *level, const char *msg)
{
    cJSON *e = cJSON_CreateObject();
    char *text = NULL;
    char *path = NULL;
    char clean[LOG_LINE_MAX + 256];
    int fd = -1;

    scrub_paths(msg, clean, sizeof(clean));
    cJSON_AddStringToObject(e, "level", level);
    cJSON_AddStringToObject(e, "message", clean);
    cJSON_AddNumberToObject(e, "timestamp_ms", (double)util_now_ms());
    text = cJSON_PrintUnformatted(e);
    if (text == NULL || asprintf(&path, "%s/logs.jsonl", dir) < 0) {
        path = NULL;
        goto out;
    }
    pthread_mutex_lock(&log_lock);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        size_t len = strlen(text);

        text[len] = '\n'; /* one write per line so readers see whole lines */
        if (write(fd, text, len + 1) < 0)
            fprintf(stderr, "devboxd: cannot append to %s\n", path);
        text[len] = '\0';
        close(fd);
    }
    pthread_mutex_unlock(&log_lock);
out:
    cJSON_Delete(e);
    free(text);
    free(path);
}

static void blog(struct build *b, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void blog(struct build *b, const char *level, const char *fmt, ...)
{
    char msg[LOG_LINE_MAX];
    va_list ap;

    if (b->log_lines > MAX_LOG_LINES)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (++b->log_lines > MAX_LOG_LINES)
        snprintf(msg, sizeof(msg), "[build output cut after %d log lines]", MAX_LOG_LINES);
    log_append(b->dir, level, msg);
}

/* ------------------------------------------------------------- status */

static void set_status(struct build *b, const char *status, const char *failure)
{
    cJSON *rec = NULL;
    cJSON *freed = NULL;
    char *layer = NULL;

    if (asprintf(&layer, "%s/layer", b->dir) < 0)
        layer = NULL;
    layers_lock(b->eng);
    rec = find_locked(b->id);
    if (rec != NULL) {
        set_str(rec, "status", status);
        if (failure != NULL)
            set_str(rec, "failure_reason", failure);
        if (strcmp(status, "build_complete") == 0 || strcmp(status, "failed") == 0)
            cJSON_AddNumberToObject(rec, "build_finish_time_ms", (double)util_now_ms());
        /* A failed build holds its base's layers no more (a base deleted
         * while it built goes now), and its own layer is no one's. */
        if (layers_save_record("blueprints", "blueprint.json", rec) == 0 &&
            strcmp(status, "failed") == 0)
            freed = layers_release_locked(
                cJSON_GetObjectItemCaseSensitive(rec, "layers"), layer);
    }
    layers_unlock();
    layers_free(freed);
    free(layer);
}

/* ---------------------------------------------------------- build steps */

static char *dquote(const char *s)
{
    size_t len = strlen(s);
    char *out = malloc(len * 2 + 3);
    size_t o = 0;

    if (out == NULL)
        return NULL;
    out[o++] = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\' || *s == '`')
            out[o++] = '\\';
        out[o++] = *s;
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

/* Logs the complete lines of buf[0..len) and keeps the partial last one. */
static size_t log_lines_of(struct build *b, char *buf, size_t len, int flush)
{
    size_t start = 0, i;

    for (i = 0; i < len; i++) {
        if (buf[i] == '\n') {
            blog(b, "info", "%.*s", (int)(i - start), buf + start);
            start = i + 1;
        }
    }
    if (flush && start < len) {
        blog(b, "info", "%.*s", (int)(len - start), buf + start);
        start = len;
    }
    if (len - start >= LOG_LINE_MAX) { /* a very long line: log it cut */
        blog(b, "info", "%.*s", (int)(len - start), buf + start);
        start = len;
    }
    memmove(buf, buf + start, len - start);
    return len - start;
}

/* Runs cmd in the build's named shell, streaming its output into the logs
 * while it runs.  Returns the exit status, or -1 with err. */
/* Whether the running step must end now, with why in err: devboxd stops,
 * the blueprint was deleted, or the build ran past its time limit. */
static int stop_reason(struct build *b, char *err, size_t errlen)
{
    int cancelled;

    pthread_mutex_lock(&slot_lock);
    cancelled = b->cancelled;
    pthread_mutex_unlock(&slot_lock);
    if (__atomic_load_n(&stopping, __ATOMIC_SEQ_CST))
        snprintf(err, errlen, "devboxd is stopping");
    else if (cancelled)
        snprintf(err, errlen, "the blueprint was deleted during the build");
    else if (util_now_ms() > b->deadline_ms)
        snprintf(err, errlen,
                 "the build ran past its time limit of %.0f s "
                 "(RLMCP_BUILD_TIMEOUT_S)",
                 b->eng->caps.build_timeout_s);
    else
        return 0;
    return 1;
}

static uint64_t oom_kills(struct build *b)
{
    uint64_t kills = 0;

    return sandbox_oom_kills(b->sb, &kills) == 0 ? kills : 0;
}

static int run_cmd(struct build *b, const char *cmd, int log_output, char *capture,
                   size_t capcap, char *err, size_t errlen)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    char *outpath = NULL;
    char buf[LOG_LINE_MAX + 1];
    size_t have = 0;
    off_t off = 0;
    int fd = -1;
    int status = -1;
    uint64_t oom_before;
    int rc;

    if (asprintf(&outpath, "%s/step.out", b->dir) < 0)
        return -1;
    fd = open(outpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", outpath, strerror(errno));
        goto out;
    }
    oom_before = oom_kills(b);
    memset(&req, 0, sizeof(req));
    req.command = cmd;
    req.shell_name = "build";
    req.stdout_fd = fd;
    req.stderr_fd = fd;
    if (sandbox_exec(b->sb, &req, &p, err, errlen) != 0)
        goto out;
    for (;;) {
        ssize_t n;

        rc = sb_proc_wait(p, 200, &status);
        if (rc == -ETIMEDOUT && stop_reason(b, err, errlen))
            sb_proc_kill(p, SIGKILL);
        while ((n = pread(fd, buf + have, sizeof(buf) - 1 - have, off)) > 0) {
            off += n;
            have += (size_t)n;
            if (log_output)
                have = log_lines_of(b, buf, have, 0);
            else if (capture != NULL && capcap > 0)
                have = have >= capcap ? capcap - 1 : have;
            if (have >= sizeof(buf) - 1)
                have = 0;
        }
        if (rc != -ETIMEDOUT)
            break;
    }
    if (log_output)
        log_lines_of(b, buf, have, 1);
    else if (capture != NULL && capcap > 0) {
        memcpy(capture, buf, have < capcap ? have : capcap - 1);
        capture[have < capcap ? have : capcap - 1] = '\0';
    }
    if (rc != 0) {
        snprintf(err, errlen, "the build sandbox stopped");
        status = -1;
    } else if (status != 0 && err[0] == '\0' && oom_kills(b) > oom_before) {
        snprintf(err, errlen,
                 "killed for memory: a build may use %.3g GiB "
                 "(RLMCP_BUILD_MEMORY_GB)",
                 b->eng->caps.build_memory_gb);
    } else if (status == 127 && sb_proc_error(p) != NULL) {
        snprintf(err, errlen, "%s", sb_proc_error(p));
    }
out:
    if (p != NULL)
        sb_proc_free(p);
    if (fd >= 0)
        close(fd);
    if (outpath != NULL)
        unlink(outpath);
    free(outpath);
    return status;
}

static int write_file(struct build *b, const char *path, const char *content, char *err,
                      size_t errlen)
{
    size_t len = strlen(content);
    size_t done = 0;
    int fd = sandbox_open(b->sb, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    if (fd < 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(-fd));
        return -1;
    }
    while (done < len) {
        ssize_t n = write(fd, content + done, len - done);

        if (n <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    close(fd);
    return 0;
}

/* export NAME="value" in the build shell; *value_out gets the expansion. */
static int export_var(struct build *b, const char *key, const char *value, int keep,
                      char *err, size_t errlen)
{
    char *q = dquote(value);
    char *cmd = NULL;
    char expanded[LOG_LINE_MAX];
    int st;

    if (q == NULL || asprintf(&cmd, "export %s=%s && printf '%%s' \"$%s\"", key, q, key) < 0) {
        free(q);
        return -1;
    }
    expanded[0] = '\0';
    st = run_cmd(b, cmd, 0, expanded, sizeof(expanded), err, errlen);
    if (st == 0 && keep) {
        cJSON_DeleteItemFromObjectCaseSensitive(b->env, key);
        cJSON_AddStringToObject(b->env, key, expanded);
    }
    free(q);
    free(cmd);
    return st;
}

static const char *mount_content(const cJSON *fm, const char *src)
{
    const cJSON *it = NULL;
    const char *want = src;

    if (strncmp(want, "./", 2) == 0)
        want += 2;
    cJSON_ArrayForEach(it, fm) {
        const char *base = strrchr(it->string, '/');

        if (strcmp(it->string, src) == 0 || (base != NULL && strcmp(base + 1, want) == 0))
            return it->valuestring;
    }
    return NULL;
}

static int step_copy(struct build *b, const struct df_step *s, char *err, size_t errlen)
{
    const cJSON *fm = cJSON_GetObjectItemCaseSensitive(b->params, "file_mounts");
    const char *content = mount_content(fm, s->src);
    const char *base = strrchr(s->src, '/');
    char tmp[64];
    char *qd = NULL;
    char *qb = NULL;
    char *cmd = NULL;
    int st = -1;

    if (content == NULL) {
        snprintf(err, errlen, "COPY source \"%s\" is not in file_mounts; the local engine "
                 "copies only files given inline in file_mounts", s->src);
        return -1;
    }
    snprintf(tmp, sizeof(tmp), "/tmp/.devboxd-copy-%d", b->copies++);
    if (write_file(b, tmp, content, err, errlen) != 0)
        return -1;
    qd = dquote(s->dst);
    qb = dquote(base != NULL ? base + 1 : s->src);
    if (qd != NULL && qb != NULL &&
        asprintf(&cmd, "d=%s; case \"$d\" in */) mkdir -p \"$d\" && d=\"$d\"%s;; esac; "
                 "mkdir -p \"$(dirname \"$d\")\" && cp %s \"$d\" && rm -f %s", qd, qb, tmp,
                 tmp) >= 0)
        st = run_cmd(b, cmd, 1, NULL, 0, err, errlen);
    free(qd);
    free(qb);
    free(cmd);
    return st;
}

static int step_user(const struct df_step *s, char *err, size_t errlen)
{
    static const char *const ok[] = {"user", "1000", "user:user", "1000:1000", NULL};
    size_t i;

    for (i = 0; ok[i] != NULL; i++) {
        if (strcmp(s->arg, ok[i]) == 0)
            return 0;
    }
    snprintf(err, errlen, "USER %s is not supported by the local engine: build steps and "
             "devboxes run as user (uid 1000); write USER user or remove it", s->arg);
    return -1;
}

static int step_arg(struct build *b, const struct df_step *s, char *err, size_t errlen)
{
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(b->params, "build_args");
    size_t i;

    for (i = 0; i < s->n_pairs; i++) {
        const char *v = util_json_str(args, s->pairs[i].key);

        if (v == NULL)
            v = s->pairs[i].value;
        if (v != NULL && export_var(b, s->pairs[i].key, v, 0, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* One Dockerfile instruction (FROM is handled before the sandbox starts). */
static int run_step(struct build *b, const struct df_step *s, char *err, size_t errlen)
{
    char *q = NULL;
    char *cmd = NULL;
    size_t i;
    int st = 0;

    switch (s->kind) {
    case DF_RUN:
        return run_cmd(b, s->arg, 1, NULL, 0, err, errlen);
    case DF_ENV:
        for (i = 0; i < s->n_pairs && st == 0; i++)
            st = export_var(b, s->pairs[i].key, s->pairs[i].value, 1, err, errlen);
        return st;
    case DF_ARG:
        return step_arg(b, s, err, errlen);
    case DF_WORKDIR:
        q = dquote(s->arg);
        if (q == NULL || asprintf(&cmd, "mkdir -p %s && cd %s", q, q) < 0) {
            free(q);
            return -1;
        }
        st = run_cmd(b, cmd, 1, NULL, 0, err, errlen);
        free(q);
        free(cmd);
        return st;
    case DF_USER:
        return step_user(s, err, errlen);
    case DF_COPY:
        return step_copy(b, s, err, errlen);
    default:
        return 0;
    }
}

/* --------------------------------------------------------------- build */

static int start_sandbox(struct build *b, char *err, size_t errlen)
{
    struct sb_spec spec;
    cJSON *holder = cJSON_CreateObject();
    char **paths = NULL;
    uid_t *owners = NULL;
    char *sbdir = NULL;
    char *image = NULL;
    size_t n = 0;
    int attempt;
    int rc = -1;

    memset(&spec, 0, sizeof(spec));
    if (b->base_chain != NULL)
        cJSON_AddItemToObject(holder, "_layers", cJSON_Duplicate(b->base_chain, 1));
    if (asprintf(&sbdir, "%s/sandbox", b->dir) < 0) {
        sbdir = NULL;
        goto out;
    }
    /* Blueprints build on the default image, as their devboxes run on it. */
    if (images_path(NULL, &image, err, errlen) != 0)
        goto out;
    spec.image = image;
    if (layers_prepare_box(holder, sbdir, b->id, image != NULL, &paths, &owners,
                           &n, err, errlen) != 0)
        goto out;
    spec.id = b->id;
    spec.dir = sbdir;
    spec.limits.memory_bytes =
        (uint64_t)(b->eng->caps.build_memory_gb * 1073741824.0);
    spec.limits.cpu_millis = (uint32_t)(b->eng->caps.build_cpus * 1000.0);
    spec.lower_layers = (const char *const *)paths;
    spec.layer_owners = owners;
    spec.n_layers = n;
    spec.net = SB_NET_OUTBOUND;
    for (attempt = 0; attempt < 3; attempt++) {
        rc = sandbox_start(&spec, &b->sb, err, errlen);
        if (rc == 0 || strstr(err, "RTM_NEWADDR") == NULL)
            break;
    }
out:
    layers_free_paths(paths, n);
    free(owners);
    free(sbdir);
    free(image);
    cJSON_Delete(holder);
    return rc;
}

/* Stops the build sandbox; on success its writable layer becomes the
 * blueprint's layer.  Returns 0 with *owner set, or -1. */
static int finish_sandbox(struct build *b, int keep, uid_t *owner, char *err, size_t errlen)
{
    char *sbdir = NULL;
    char *upper = NULL;
    char *layer = NULL;
    int rc = -1;

    if (b->sb == NULL)
        return keep ? -1 : 0;
    *owner = sandbox_owner_uid(b->sb);
    sandbox_stop(b->sb);
    sandbox_release(b->sb);
    b->sb = NULL;
    if (asprintf(&sbdir, "%s/sandbox", b->dir) < 0 || asprintf(&upper, "%s/upper", sbdir) < 0 ||
        asprintf(&layer, "%s/layer", b->dir) < 0)
        goto out;
    rc = 0;
    if (keep) {
        util_rmtree(layer);
        if (rename(upper, layer) != 0) {
            snprintf(err, errlen, "cannot keep the build layer: %s", strerror(errno));
            rc = -1;
        }
    }
    sandbox_destroy_dir(sbdir, err, errlen);
out:
    free(sbdir);
    free(upper);
    free(layer);
    return rc;
}

static int write_mounts(struct build *b, char *err, size_t errlen)
{
    const cJSON *it = NULL;

    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(b->params, "file_mounts")) {
        char *q = dquote(it->string);
        char *cmd = NULL;
        int st = -1;

        if (q != NULL && asprintf(&cmd, "mkdir -p \"$(dirname %s)\"", q) >= 0)
            st = run_cmd(b, cmd, 1, NULL, 0, err, errlen);
        free(q);
        free(cmd);
        if (st != 0 || write_file(b, it->string, it->valuestring, err, errlen) != 0) {
            blog(b, "error", "file_mounts %s: cannot write it in the build: %s", it->string,
                 err[0] ? err : "mkdir failed");
            return -1;
        }
        blog(b, "info", "file_mounts: wrote %s", it->string);
    }
    return 0;
}

/* Runs every step; logs and returns -1 at the first failure. */
static int run_steps(struct build *b, const struct df_file *df, char *err, size_t errlen)
{
    const cJSON *cmds = cJSON_GetObjectItemCaseSensitive(b->params, "system_setup_commands");
    const cJSON *it = NULL;
    size_t i;
    int k = 0;
    int st;

    for (i = 0; i < df->n; i++) {
        const struct df_step *s = &df->steps[i];

        if (s->kind == DF_FROM)
            continue;
        b->step++;
        blog(b, "info", "Step %d/%d: %s", b->step, b->n_steps, s->text);
        err[0] = '\0';
        st = run_step(b, s, err, errlen);
        if (st != 0) {
            blog(b, "error", "step %d/%d (Dockerfile line %d): %s failed: %s%s%d",
                 b->step, b->n_steps, s->line, s->text, err[0] ? err : "",
                 err[0] ? "; exit code " : "command exited with code ", st);
            return -1;
        }
    }
    cJSON_ArrayForEach(it, cmds) {
        b->step++;
        blog(b, "info", "Step %d/%d: RUN %s", b->step, b->n_steps, it->valuestring);
        err[0] = '\0';
        st = run_cmd(b, it->valuestring, 1, NULL, 0, err, errlen);
        if (st != 0) {
            blog(b, "error", "step %d/%d: system_setup_commands[%d] %s failed: %s%s%d",
                 b->step, b->n_steps, k, it->valuestring, err[0] ? err : "",
                 err[0] ? "; exit code " : "command exited with code ", st);
            return -1;
        }
        k++;
    }
    return 0;
}

/* Resolves FROM: the local base or a blueprint (by id or name). */
static int resolve_from(struct build *b, const struct df_file *df, char *err, size_t errlen)
{
    const char *img = NULL;
    const char *ref = NULL;
    const cJSON *rec = NULL;
    size_t i;

    for (i = 0; i < df->n; i++) {
        if (df->steps[i].kind == DF_FROM)
            img = df->steps[i].arg;
    }
    if (img == NULL || strcmp(img, LOCAL_BASE) == 0 ||
        strcmp(img, "runloop/starter-x86_64") == 0)
        return 0;
    if (strncmp(img, "runloop:", 8) != 0) {
        snprintf(err, errlen, "FROM %s: the local engine has no image registry; use FROM "
                 LOCAL_BASE " or FROM runloop:<blueprint id or name>", img);
        return -1;
    }
    ref = img + 8;
    layers_lock(b->eng);
    rec = blueprints_find_locked(strncmp(ref, "bpt_", 4) == 0 ? ref : NULL,
                                 strncmp(ref, "bpt_", 4) == 0 ? NULL : ref);
    if (rec != NULL && b->base_id != NULL &&
        strcmp(b->base_id, util_json_str(rec, "id")) != 0)
        rec = NULL;
    if (rec != NULL && b->base_id == NULL) {
        b->base_id = strdup(util_json_str(rec, "id"));
        b->base_chain = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(rec, "layers"), 1);
        blueprints_depend_locked(b->id, rec);
    }
    layers_unlock();
    if (rec == NULL) {
        snprintf(err, errlen, "FROM %s: no successful build of that blueprint%s", img,
                 b->base_id != NULL ? " (or it differs from base_blueprint_id)" : "");
        return -1;
    }
    return 0;
}

static int count_steps(const struct df_file *df, const cJSON *params)
{
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(params,
                                                                "system_setup_commands"));
    size_t i;

    for (i = 0; i < df->n; i++)
        n += df->steps[i].kind != DF_FROM;
    return n;
}

/* Success: records the layer chain and ENV. */
static void record_success(struct build *b, uid_t owner)
{
    cJSON *rec = NULL;
    cJSON *layers = cJSON_CreateArray();
    cJSON *own = cJSON_CreateObject();
    char *layer = NULL;
    const cJSON *it = NULL;

    if (asprintf(&layer, "%s/layer", b->dir) < 0)
        layer = NULL;
    cJSON_AddStringToObject(own, "path", layer != NULL ? layer : "");
    cJSON_AddNumberToObject(own, "owner", (double)owner);
    cJSON_AddItemToArray(layers, own);
    cJSON_ArrayForEach(it, b->base_chain)
        cJSON_AddItemToArray(layers, cJSON_Duplicate(it, 1));
    layers_lock(b->eng);
    rec = find_locked(b->id);
    if (rec != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(rec, "layers");
        cJSON_AddItemToObject(rec, "layers", layers);
        layers = NULL;
        cJSON_DeleteItemFromObjectCaseSensitive(rec, "env");
        cJSON_AddItemToObject(rec, "env", cJSON_Duplicate(b->env, 1));
    }
    layers_unlock();
    cJSON_Delete(layers);
    free(layer);
}

static void bb_log(void *ctx, const char *level, const char *msg)
{
    blog(ctx, level, "%s", msg);
}

static int bb_stop(void *ctx, char *err, size_t errlen)
{
    return stop_reason(ctx, err, errlen);
}

/* Success by buildah: the record gets the layer over its base's chain
 * and the image's config. */
/* 0, or -1 when the base went away (the chain would lack its files). */
static int record_buildah(struct build *b, cJSON *fields)
{
    static const char *const keep[] = {
        "env", "image", "image_config", "builder", "buildah_image", NULL};
    const char *base = util_json_str(fields, "base_blueprint_id");
    cJSON *layers = cJSON_CreateArray();
    cJSON *own = cJSON_CreateObject();
    cJSON *rec = NULL;
    const cJSON *it = NULL;
    char *layer = NULL;
    size_t i;
    int rc = 0;

    if (asprintf(&layer, "%s/layer", b->dir) < 0)
        layer = NULL;
    cJSON_AddStringToObject(own, "path", layer != NULL ? layer : "");
    cJSON_AddNumberToObject(own, "owner", (double)SB_RANGE_BASE);
    cJSON_AddItemToArray(layers, own);
    layers_lock(b->eng);
    rec = find_locked(b->id);
    if (base != NULL) {
        const cJSON *brec = find_locked(base);
        const cJSON *chain = cJSON_GetObjectItemCaseSensitive(brec, "layers");

        /* The base's layers are there if it is still built, or if this
         * build's record held them all along (blueprints_depend_locked),
         * even through the base's delete. */
        if (brec == NULL ||
            (blueprints_find_locked(base, NULL) != brec &&
             !cJSON_Compare(
                 chain, cJSON_GetObjectItemCaseSensitive(rec, "layers"), 1)))
            rc = -1;
        cJSON_ArrayForEach(it, chain)
            cJSON_AddItemToArray(layers, cJSON_Duplicate(it, 1));
    }
    if (rec != NULL && rc == 0) {
        for (i = 0; keep[i] != NULL; i++) {
            cJSON_DeleteItemFromObjectCaseSensitive(rec, keep[i]);
            it = cJSON_GetObjectItemCaseSensitive(fields, keep[i]);
            if (it != NULL)
                cJSON_AddItemToObject(rec, keep[i], cJSON_Duplicate(it, 1));
        }
        set_str(rec, "base_blueprint_id", base);
        cJSON_DeleteItemFromObjectCaseSensitive(rec, "layers");
        cJSON_AddItemToObject(rec, "layers", layers);
        layers = NULL;
    }
    layers_unlock();
    cJSON_Delete(layers);
    free(layer);
    return rc;
}

static uint64_t context_max(const struct engine *eng)
{
    return (uint64_t)(eng->caps.build_context_mb * 1048576.0);
}

/* The build's clock starts: status building, its limits in the log. */
static void start_building(struct build *b)
{
    b->deadline_ms =
        util_now_ms() + (int64_t)(b->eng->caps.build_timeout_s * 1000.0);
    set_status(b, "building", NULL);
    blog(
        b, "info",
        "limits: %.3g GiB of memory, %.3g CPUs, %.0f s, %.3g GiB of disk "
        "(RLMCP_BUILD_MEMORY_GB, RLMCP_BUILD_CPUS, RLMCP_BUILD_TIMEOUT_S, "
        "RLMCP_BUILD_DISK_GB)",
        b->eng->caps.build_memory_gb, b->eng->caps.build_cpus,
        b->eng->caps.build_timeout_s, b->eng->caps.build_disk_gb);
}

static void build_run_buildah(struct build *b)
{
    struct bb_job j;
    char *ctx = NULL;
    int ok;

    memset(&j, 0, sizeof(j));
    j.id = b->id;
    j.dir = b->dir;
    j.state_dir = b->eng->state_dir;
    j.params = b->params;
    j.context_fd = b->context_fd;
    j.context_max_bytes = context_max(b->eng);
    j.memory_gb = b->eng->caps.build_memory_gb;
    j.cpus = b->eng->caps.build_cpus;
    j.disk_gb = b->eng->caps.build_disk_gb;
    j.log = bb_log;
    j.should_stop = bb_stop;
    j.ctx = b;
    start_building(b);
    ok = bb_run(&j) == 0;
    b->killed = j.killed;
    if (ok && record_buildah(b, j.record) != 0) {
        blog(b, "error", "the base blueprint of this build is gone; build it "
                         "again FROM a blueprint that exists");
        ok = 0;
    }
    if (ok)
        blog(b, "info", "build complete");
    if (ok)
        set_status(b, "build_complete", NULL);
    else
        set_status(b, "failed", j.out_of_disk ? "out_of_disk" : "build_failed");
    if (asprintf(&ctx, "%s/build", b->dir) >= 0)
        util_rmtree(ctx);
    free(ctx);
    bb_job_free(&j);
}

static void build_run(struct build *b)
{
    struct df_file df;
    const cJSON *dockerfile = cJSON_GetObjectItemCaseSensitive(b->params, "dockerfile");
    char err[ERRLEN] = "";
    uid_t owner = 0;
    int ok = 0;

    memset(&df, 0, sizeof(df));
    blog(b, "info", "build %s queued on the local engine", b->id);
    if (bb_enabled()) {
        build_run_buildah(b);
        return;
    }
    if (cJSON_IsString(dockerfile) && dockerfile->valuestring[0] != '\0' &&
        dockerfile_parse(dockerfile->valuestring, &df, err, sizeof(err)) != 0) {
        blog(b, "error", "Dockerfile %s", err);
        goto done;
    }
    if (resolve_from(b, &df, err, sizeof(err)) != 0) {
        blog(b, "error", "Dockerfile %s", err);
        goto done;
    }
    b->n_steps = count_steps(&df, b->params);
    start_building(b);
    blog(b, "info", "starting the build sandbox%s%s", b->base_id ? " on blueprint " : "",
         b->base_id ? b->base_id : "");
    if (start_sandbox(b, err, sizeof(err)) != 0) {
        blog(b, "error", "the build sandbox failed to start: %s", err);
        goto done;
    }
    if (write_mounts(b, err, sizeof(err)) != 0 || run_steps(b, &df, err, sizeof(err)) != 0)
        goto done;
    ok = 1;
done:
    if (finish_sandbox(b, ok, &owner, err, sizeof(err)) != 0 && ok) {
        blog(b, "error", "%s", err);
        ok = 0;
    }
    if (ok) {
        record_success(b, owner);
        blog(b, "info", "build complete");
    }
    set_status(b, ok ? "build_complete" : "failed", ok ? NULL : "build_failed");
    dockerfile_free(&df);
}

static void build_free(struct build *b)
{
    if (b->context_fd >= 0)
        close(b->context_fd);
    free(b->dir);
    free(b->base_id);
    cJSON_Delete(b->params);
    cJSON_Delete(b->base_chain);
    cJSON_Delete(b->env);
    free(b);
}

static void unlink_active_locked(struct build *b)
{
    struct build **pp = &active;

    while (*pp != NULL && *pp != b)
        pp = &(*pp)->next_active;
    if (*pp == b)
        *pp = b->next_active;
}

/* Waits for one of the RLMCP_MAX_BUILDS slots, saying in the log how many
 * builds are ahead; 0 when devboxd stops or the blueprint is deleted first. */
static int take_slot(struct build *b, int *cancelled)
{
    unsigned max = b->eng->caps.max_builds;
    int told = 0;
    int run;

    pthread_mutex_lock(&slot_lock);
    while ((slots_used >= (int)max || cleaning) && !stopping && !b->cancelled) {
        if (!told) {
            int waiting = builds_alive - slots_used - 1;

            pthread_mutex_unlock(&slot_lock);
            blog(b, "info",
                 "queued: %u builds run at once (RLMCP_MAX_BUILDS) and %d more "
                 "wait; this one starts when a slot frees",
                 max, waiting);
            pthread_mutex_lock(&slot_lock);
            told = 1;
            continue;
        }
        pthread_cond_wait(&slot_cond, &slot_lock);
    }
    *cancelled = b->cancelled;
    run = !stopping && !b->cancelled;
    if (run)
        slots_used++;
    pthread_mutex_unlock(&slot_lock);
    return run;
}

static void *build_thread(void *arg)
{
    struct build *b = arg;

    int run;
    int cancelled;

    run = take_slot(b, &cancelled);
    if (run) {
        build_run(b);
    } else {
        log_append(b->dir, "error",
                   cancelled ? "the blueprint was deleted before its build ran"
                             : "devboxd stopped before the build ran; build "
                               "it again");
        set_status(b, "failed", "build_failed");
    }
    pthread_mutex_lock(&slot_lock);
    if (run)
        slots_used--;
    if (b->killed)
        store_dirty = 1;
    if (store_dirty && slots_used == 0 && !cleaning) {
        /* No build runs: buildah's leftovers can go. */
        cleaning = 1;
        store_dirty = 0;
        pthread_mutex_unlock(&slot_lock);
        bb_cleanup(b->eng->state_dir);
        pthread_mutex_lock(&slot_lock);
        cleaning = 0;
    }
    builds_alive--;
    unlink_active_locked(b);
    pthread_cond_broadcast(&slot_cond);
    pthread_mutex_unlock(&slot_lock);
    build_free(b);
    return NULL;
}

void blueprints_stop_all(void)
{
    pthread_mutex_lock(&slot_lock);
    __atomic_store_n(&stopping, 1, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&slot_cond);
    while (builds_alive > 0)
        pthread_cond_wait(&slot_cond, &slot_lock);
    __atomic_store_n(&stopping, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&slot_lock);
}

void blueprints_load_locked(struct engine *eng, cJSON *list)
{
    cJSON *rec = NULL;
    int interrupted = 0;

    cJSON_ArrayForEach(rec, list) {
        const char *st = util_json_str(rec, "status");
        char *dir = NULL;
        char err[ERRLEN];

        if (st != NULL && (strcmp(st, "build_complete") == 0 || strcmp(st, "failed") == 0))
            continue;
        interrupted++;
        set_str(rec, "status", "failed");
        set_str(rec, "failure_reason", "build_failed");
        cJSON_AddNumberToObject(rec, "build_finish_time_ms", (double)util_now_ms());
        layers_save_record("blueprints", "blueprint.json", rec);
        if (asprintf(&dir, "%s/blueprints/%s", layers_state_dir(),
                     util_json_str(rec, "id")) < 0)
            continue;
        log_append(dir, "error", "devboxd restarted during the build; build it again");
        free(dir);
        sandbox_purge(util_json_str(rec, "id"));
        bb_abandon(eng->state_dir, util_json_str(rec, "id"));
        if (asprintf(&dir, "%s/blueprints/%s/sandbox", layers_state_dir(),
                     util_json_str(rec, "id")) >= 0)
            sandbox_destroy_dir(dir, err, sizeof(err));
        free(dir);
        if (asprintf(&dir, "%s/blueprints/%s/build", layers_state_dir(),
                     util_json_str(rec, "id")) >= 0)
            util_rmtree(dir);
        free(dir);
    }
    /* buildah's working containers (and their mounts) of those builds. */
    if (interrupted > 0)
        bb_cleanup(eng->state_dir);
}

/* -------------------------------------------------------------- create */

static int check_file_mounts(const cJSON *fm, char *err, size_t errlen)
{
    const cJSON *it = NULL;
    size_t total = 0;

    cJSON_ArrayForEach(it, fm) {
        size_t len = strlen(it->valuestring);

        if (it->string[0] != '/') {
            snprintf(err, errlen, "file_mounts key \"%s\" must be an absolute path",
                     it->string);
            return -1;
        }
        if (len > MAX_FILE_MOUNT) {
            snprintf(err, errlen, "file_mounts[\"%s\"] is %zu bytes; keep each file under %d "
                     "bytes", it->string, len, MAX_FILE_MOUNT);
            return -1;
        }
        total += len;
    }
    if (total > MAX_FILE_MOUNTS) {
        snprintf(err, errlen, "file_mounts hold %zu bytes in all; keep them under %d", total,
                 MAX_FILE_MOUNTS);
        return -1;
    }
    return 0;
}

static int check_setup(const cJSON *cmds, char *err, size_t errlen)
{
    const cJSON *it = NULL;
    size_t total = 0;

    cJSON_ArrayForEach(it, cmds)
        total += strlen(it->valuestring);
    if (total > MAX_SETUP_BYTES) {
        snprintf(err, errlen, "system_setup_commands hold %zu bytes; keep them under %d",
                 total, MAX_SETUP_BYTES);
        return -1;
    }
    return 0;
}

static int check_launch(const cJSON *body, char *err, size_t errlen)
{
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(body, "launch_parameters");
    cJSON *probe = NULL;
    cJSON *spec = NULL;
    int status;

    if (lp == NULL || cJSON_IsNull(lp))
        return 0;
    probe = cJSON_CreateObject();
    cJSON_AddItemToObject(probe, "launch_parameters", cJSON_Duplicate(lp, 1));
    spec = devbox_spec_validate(probe, &status, err, errlen);
    cJSON_Delete(probe);
    if (spec == NULL)
        return -1;
    cJSON_Delete(spec);
    return 0;
}

static int check_create(const cJSON *body, char *err, size_t errlen)
{
    static const char *const fields[] = {
        "name", "dockerfile", "system_setup_commands", "file_mounts", "launch_parameters",
        "base_blueprint_id", "base_blueprint_name", "build_args", "metadata", "code_mounts",
        "build_context", "secrets", "services", "network_policy_id", NULL,
    };
    static const char *const never[] = {"secrets", "services",
                                        "network_policy_id", NULL};
    const char *s = NULL;
    const cJSON *m = NULL;
    size_t i;

    if (util_check_fields(body, "", fields, err, errlen) != 0 ||
        code_mounts_check(body, err, errlen) != 0)
        return -1;
    for (i = 0; never[i] != NULL; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, never[i]);

        if (v != NULL && !cJSON_IsNull(v) && !(cJSON_IsArray(v) && cJSON_GetArraySize(v) == 0)) {
            snprintf(err, errlen, "'%s' is not supported by the local engine; remove it "
                     "(give files inline in file_mounts)", never[i]);
            return -1;
        }
    }
    if (util_opt_string(body, "name", &s, err, errlen) != 0)
        return -1;
    if (s == NULL || s[0] == '\0' || strlen(s) > 256) {
        snprintf(err, errlen, "name is required: a string of 1 to 256 characters");
        return -1;
    }
    if (util_opt_string(body, "dockerfile", &s, err, errlen) != 0)
        return -1;
    if (s != NULL && strlen(s) > DOCKERFILE_MAX) {
        snprintf(err, errlen, "dockerfile is over %u bytes", DOCKERFILE_MAX);
        return -1;
    }
    if (util_opt_string_array(body, "system_setup_commands", &m, err, errlen) != 0 ||
        check_setup(m, err, errlen) != 0 ||
        util_opt_string_map(body, "file_mounts", &m, err, errlen) != 0 ||
        check_file_mounts(m, err, errlen) != 0 ||
        util_opt_string_map(body, "build_args", &m, err, errlen) != 0 ||
        util_opt_string_map(body, "metadata", &m, err, errlen) != 0 ||
        util_opt_string(body, "base_blueprint_id", &s, err, errlen) != 0 ||
        util_opt_string(body, "base_blueprint_name", &s, err, errlen) != 0)
        return -1;
    return check_launch(body, err, errlen);
}

/* Registry lock held: finds the base named by the body; 0 or an HTTP status. */
static int resolve_base_locked(const cJSON *body, const cJSON **base, char *err, size_t errlen)
{
    const char *id = util_json_str(body, "base_blueprint_id");
    const char *name = util_json_str(body, "base_blueprint_name");

    *base = NULL;
    if (id != NULL && id[0] == '\0')
        id = NULL;
    if (name != NULL && name[0] == '\0')
        name = NULL;
    if (id != NULL && name != NULL) {
        snprintf(err, errlen, "set only one of base_blueprint_id and base_blueprint_name");
        return 400;
    }
    if (id == NULL && name == NULL)
        return 0;
    if (id == NULL && bb_enabled()) {
        /* An image name (Runloop's public names, devboxd's own), mapped as
         * devbox create maps it: the build resolves it as its FROM. */
        const char *image = NULL;
        int pub = images_public_name(name, &image, err, errlen);

        if (pub < 0)
            return 400;
        if (pub > 0)
            return 0;
        if (blueprints_find_locked(NULL, name) == NULL &&
            images_builtin_name(name, &image))
            return 0;
    }
    *base = blueprints_find_locked(id, name);
    if (*base == NULL) {
        snprintf(err, errlen, "base blueprint %s has no successful build; list the "
                 "blueprints to see which built", id != NULL ? id : name);
        return id != NULL ? 404 : 400;
    }
    return 0;
}

static int spawn_build(struct build *b)
{
    int rc;

    pthread_mutex_lock(&slot_lock);
    builds_alive++;
    b->next_active = active;
    active = b;
    pthread_mutex_unlock(&slot_lock);
    rc = util_thread_detached(build_thread, b, 512 * 1024);
    if (rc != 0) {
        pthread_mutex_lock(&slot_lock);
        builds_alive--;
        unlink_active_locked(b);
        pthread_mutex_unlock(&slot_lock);
    }
    return rc;
}

int blueprints_create(struct engine *eng, const cJSON *body, cJSON **view,
                      char *err, size_t errlen)
{
    cJSON *rec = NULL;
    const cJSON *base = NULL;
    struct build *b = NULL;
    int context_fd = -1;
    int status = 0;

    *view = NULL;
    if (check_create(body, err, errlen) != 0)
        return 400;
    if (!bb_enabled() && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
                             body, "build_context"))) {
        snprintf(err, errlen,
                 "build_context needs the buildah builder: unset "
                 "RLMCP_BUILDER=native (or give the files in file_mounts)");
        return 400;
    }
    if (!bb_enabled() && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
                             body, "code_mounts")) > 0) {
        snprintf(err, errlen,
                 "code_mounts needs the buildah builder: unset "
                 "RLMCP_BUILDER=native (or clone in system_setup_commands)");
        return 400;
    }
    if (bb_enabled()) {
        /* An unknown base_blueprint_id stays a 404. */
        layers_lock(eng);
        status = resolve_base_locked(body, &base, err, errlen);
        layers_unlock();
        if (status != 0)
            return status;
        if (bb_check(body, err, errlen) != 0)
            return 400;
        /* Checked whole now (a bad archive is a 400) and kept open: the
         * build gets these bytes even if the object is deleted meanwhile. */
        if (build_context_open(eng, body, context_max(eng), &context_fd, err,
                               errlen) != 0)
            return 400;
    }
    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        if (context_fd >= 0)
            close(context_fd);
        goto oom;
    }
    b->context_fd = context_fd;
    b->eng = eng;
    b->env = cJSON_CreateObject();
    util_new_id("bpt", b->id, sizeof(b->id));
    if (asprintf(&b->dir, "%s/blueprints/%s", eng->state_dir, b->id) < 0) {
        b->dir = NULL;
        goto oom;
    }
    b->params = cJSON_Duplicate(body, 1);
    if (b->params == NULL)
        goto oom;
    layers_lock(eng);
    status = resolve_base_locked(body, &base, err, errlen);
    if (status != 0) {
        layers_unlock();
        goto out;
    }
    rec = cJSON_CreateObject();
    cJSON_AddStringToObject(rec, "id", b->id);
    cJSON_AddStringToObject(rec, "name", util_json_str(body, "name"));
    cJSON_AddStringToObject(rec, "status", "provisioning");
    cJSON_AddStringToObject(rec, "state", "created");
    cJSON_AddNumberToObject(rec, "create_time_ms", (double)util_now_ms());
    cJSON_AddItemToObject(rec, "parameters", cJSON_Duplicate(body, 1));
    /* A token serves the build's clone only: never shown or stored. */
    code_mounts_redact(cJSON_GetObjectItemCaseSensitive(rec, "parameters"));
    util_mkdirs(b->dir);
    cJSON_InsertItemInArray(layers_blueprints_locked(), 0, rec);
    if (base != NULL) {
        b->base_id = strdup(util_json_str(base, "id"));
        b->base_chain = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(base, "layers"), 1);
        blueprints_depend_locked(b->id, base); /* saves the record */
    } else {
        layers_save_record("blueprints", "blueprint.json", rec);
    }
    *view = bp_view(rec);
    layers_unlock();
    if (spawn_build(b) != 0) {
        log_append(b->dir, "error", "cannot start the build worker");
        set_status(b, "failed", "build_failed");
        build_free(b);
    }
    b = NULL;
    goto out;
oom:
    snprintf(err, errlen, "out of memory");
    status = 500;
out:
    if (b != NULL)
        build_free(b);
    return status;
}

/* ------------------------------------------------------------- records */

static int not_found(const char *id, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "blueprint %s not found; list the blueprints to see which exist",
             id);
    return 404;
}

cJSON *blueprints_view(const cJSON *rec)
{
    return bp_view(rec);
}

int blueprints_listed(const cJSON *rec, const char *name, const char *status)
{
    if (strcmp(util_json_str(rec, "state"), "created") != 0)
        return 0;
    if (name != NULL && name[0] != '\0' &&
        strcmp(util_json_str(rec, "name"), name) != 0)
        return 0;
    if (status != NULL && status[0] != '\0' &&
        strcmp(util_json_str(rec, "status"), status) != 0)
        return 0;
    return 1;
}

/* Docker's tag rule: a word character, then up to 127 of [A-Za-z0-9_.-]. */
static int tag_ok(const char *t)
{
    size_t n = strlen(t);
    size_t i;

    if (n == 0 || n > 128 || t[0] == '.' || t[0] == '-')
        return 0;
    for (i = 0; i < n; i++) {
        char c = t[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

/* Registry lock held: rec without tag (saved); 0 or -1. */
static int drop_tag_locked(cJSON *rec, const char *tag)
{
    cJSON *tags = cJSON_GetObjectItemCaseSensitive(rec, "tags");
    int i;

    for (i = cJSON_GetArraySize(tags) - 1; i >= 0; i--) {
        const cJSON *it = cJSON_GetArrayItem(tags, i);

        if (cJSON_IsString(it) && strcmp(it->valuestring, tag) == 0) {
            cJSON_DeleteItemFromArray(tags, i);
            return layers_save_record("blueprints", "blueprint.json", rec);
        }
    }
    return 0;
}

int blueprints_tag(struct engine *eng, const char *id, const char *tag,
                   cJSON **view, char *err, size_t errlen)
{
    cJSON *rec = NULL;
    cJSON *other = NULL;
    cJSON *tags = NULL;
    const char *name = NULL;
    int status = 0;

    *view = NULL;
    if (!tag_ok(tag)) {
        snprintf(err, errlen,
                 "tag \"%.130s\" is not valid: 1-128 of A-Z a-z 0-9 _ . -, not "
                 "starting with . or -",
                 tag);
        return 400;
    }
    layers_lock(eng);
    rec = find_locked(id);
    if (rec == NULL || strcmp(util_json_str(rec, "state"), "created") != 0) {
        status = not_found(id, err, errlen);
        goto out;
    }
    if (strcmp(util_json_str(rec, "status"), "build_complete") != 0) {
        snprintf(err, errlen,
                 "blueprint %s is %s: only a completed build can be tagged "
                 "(wait for build_complete)",
                 id, util_json_str(rec, "status"));
        status = 400;
        goto out;
    }
    name = util_json_str(rec, "name");
    /* One build of a name carries a tag: the others lose it. */
    cJSON_ArrayForEach(other, layers_blueprints_locked()) {
        const char *oname = util_json_str(other, "name");

        if (other == rec || oname == NULL || strcmp(oname, name) != 0)
            continue;
        if (drop_tag_locked(other, tag) != 0) {
            status = 507;
            goto out;
        }
    }
    if (!has_tag(rec, tag)) {
        tags = cJSON_GetObjectItemCaseSensitive(rec, "tags");
        if (!cJSON_IsArray(tags)) {
            cJSON_DeleteItemFromObjectCaseSensitive(rec, "tags");
            tags = cJSON_AddArrayToObject(rec, "tags");
        }
        cJSON_AddItemToArray(tags, cJSON_CreateString(tag));
        if (layers_save_record("blueprints", "blueprint.json", rec) != 0) {
            drop_tag_locked(rec, tag);
            status = 507;
            goto out;
        }
    }
    *view = bp_view(rec);
out:
    if (status == 507)
        snprintf(err, errlen,
                 "devboxd could not save the tag to its state directory; "
                 "nothing was acknowledged, retry once the state disk is "
                 "writable");
    layers_unlock();
    return status;
}

int blueprints_get(struct engine *eng, const char *id, cJSON **view, char *err,
                   size_t errlen)
{
    cJSON *rec = NULL;
    int status = 0;

    layers_lock(eng);
    rec = find_locked(id);
    if (rec != NULL)
        *view = bp_view(rec);
    else
        status = not_found(id, err, errlen);
    layers_unlock();
    return status;
}

static struct build *find_active_locked(const char *id)
{
    struct build *b = active;

    while (b != NULL && strcmp(b->id, id) != 0)
        b = b->next_active;
    return b;
}

/* Stops the build of id, queued or running (its step is killed at once),
 * and waits up to timeout_ms for it to end: 0 once no build of id runs. */
static int cancel_build(const char *id, int timeout_ms)
{
    struct build *b = NULL;
    struct timespec ts;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    pthread_mutex_lock(&slot_lock);
    b = find_active_locked(id);
    if (b != NULL)
        b->cancelled = 1;
    pthread_cond_broadcast(&slot_cond); /* a queued one leaves the queue */
    while (rc == 0 && find_active_locked(id) != NULL)
        rc = pthread_cond_timedwait(&slot_cond, &slot_lock, &ts);
    b = find_active_locked(id);
    pthread_mutex_unlock(&slot_lock);
    return b == NULL ? 0 : -1;
}

int blueprints_delete(struct engine *eng, const char *id, char *err,
                      size_t errlen)
{
    cJSON *rec = NULL;
    const char *st = NULL;
    char *layer = NULL;
    cJSON *freed = NULL;
    int status = 0;

    /* Deleting a blueprint whose build is queued or running ends the build
     * first: no slot, memory or CPU is held for a blueprint nobody wants. */
    if (cancel_build(id, CANCEL_WAIT_MS) != 0) {
        snprintf(err, errlen,
                 "the build of blueprint %s did not stop within %d s; try the "
                 "delete again",
                 id, CANCEL_WAIT_MS / 1000);
        return 503;
    }
    layers_lock(eng);
    rec = find_locked(id);
    if (rec == NULL) {
        status = not_found(id, err, errlen);
        goto out;
    }
    st = util_json_str(rec, "status");
    if (strcmp(util_json_str(rec, "state"), "deleted") == 0)
        goto out;
    if (strcmp(st, "build_complete") != 0 && strcmp(st, "failed") != 0) {
        /* Only a build created after the cancel above can be here. */
        snprintf(err, errlen,
                 "blueprint %s is %s: its build is just starting; delete it "
                 "again in a moment",
                 id, st);
        status = 409;
        goto out;
    }
    if (asprintf(&layer, "%s/blueprints/%s/layer", eng->state_dir, id) < 0) {
        layer = NULL;
        snprintf(err, errlen, "out of memory");
        status = 500;
        goto out;
    }
    /* Devboxes running on its files keep its layer (they mount it) until
     * they end; then the last one frees it (engine_release_layers). */
    /* The tombstone is on disk before any file goes: a kill in between
     * leaves a layer nothing references, which the next start frees. */
    set_str(rec, "state", "deleted");
    if (layers_save_record("blueprints", "blueprint.json", rec) != 0) {
        set_str(rec, "state", "created");
        snprintf(err, errlen,
                 "cannot record the delete of blueprint %s (writing the state "
                 "dir failed); try again",
                 id);
        status = 500;
        goto out;
    }
    /* No more sandboxes ahead on its chain. */
    pthread_mutex_lock(&eng->lock);
    warm_pool_forget_locked(eng,
                            cJSON_GetObjectItemCaseSensitive(rec, "layers"));
    pthread_mutex_unlock(&eng->lock);
    /* Its layer (and deleted ones under it) go unless snapshots or other
     * blueprints are built on them; the buildah image goes with it. */
    freed = layers_release_locked(
        cJSON_GetObjectItemCaseSensitive(rec, "layers"), layer);
out:
    layers_unlock();
    /* buildah waits on its store's lock: never with the registry held,
     * which every create, snapshot and build needs. */
    layers_free(freed);
    free(layer);
    return status;
}

int blueprints_log_open(struct engine *eng, const char *id, FILE **log,
                        char *err, size_t errlen)
{
    char *path = NULL;
    int known;

    *log = NULL;
    layers_lock(eng);
    known = find_locked(id) != NULL;
    layers_unlock();
    if (!known)
        return not_found(id, err, errlen);
    if (asprintf(&path, "%s/blueprints/%s/logs.jsonl", eng->state_dir, id) <
        0) {
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    *log = fopen(path, "re");
    free(path);
    return 0;
}
