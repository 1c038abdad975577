/*
 * backend.c - choose the Runloop backend and, for the local engine, make
 * sure a devboxd serves the state dir (see backend.h, docs/backends.md).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf, pipe2 */
#endif
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <pthread.h>

#include "deadline.h"
#include "log.h"
#include "rlclient.h"
#include "secret.h"

#define BACKEND_CLOUD_URL "https://api.runloop.ai"
#define BACKEND_LOCAL_URL "http://localhost"
#define BACKEND_WAIT_MS 30000L /* devboxd start bound */
#define BACKEND_PROBE_PATH "/v1/devboxes?limit=1"

struct backend {
    bool local;
    char *base_url;
    char *socket_path; /* local */
    char *state_dir;   /* local */
    char *devboxd_cfg; /* runloop.devboxd as configured */
    char *api_key;     /* default key (cloud), never logged */
    char describe[1024];
    struct rlclient *client;
    int started_pid;
    long long started_at_ms; /* wall clock, when started_pid began */
    long restarted_ms;       /* last restart of the engine we started */
};

/* One restart at a time; the client's down hook runs on any worker. */
static pthread_mutex_t restart_lock = PTHREAD_MUTEX_INITIALIZER;

/* Refused connections closer together than this restart nothing. */
#define BACKEND_RESTART_GAP_MS 2000L

static char *fmt_err(const char *fmt, ...) RLMCP_PRINTF(1, 2);
static char *fmt_err(const char *fmt, ...)
{
    va_list ap;
    char *out = NULL;

    va_start(ap, fmt);
    if (vasprintf(&out, fmt, ap) < 0)
        out = NULL;
    va_end(ap);
    return out;
}

/* An environment variable, with empty meaning unset. */
static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : NULL;
}

static const char *nonempty(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : NULL;
}

static long now_ms(void)
{
    return (long)deadline_now_ms();
}

/* The wall clock in ms, as devboxd stamps create_time_ms. */
static long long wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------------- */
/* Deciding                                                               */
/* ---------------------------------------------------------------------- */

static char *home_dir(void)
{
    const char *h = env_nonempty("HOME");
    struct passwd *pw = NULL;

    if (h != NULL)
        return strdup(h);
    pw = getpwuid(getuid());
    return pw != NULL && pw->pw_dir != NULL ? strdup(pw->pw_dir) : NULL;
}

char *backend_absolute_path(const char *p)
{
    char cwd[PATH_MAX];
    char *out = NULL;

    if (p[0] == '/')
        return strdup(p);
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return NULL;
    if (asprintf(&out, "%s/%s", cwd, p) < 0)
        return NULL;
    return out;
}

static char *state_dir_for(const struct host_config *cfg, char **err)
{
    const char *v = nonempty(cfg->runloop.state_dir);
    char *home = NULL;
    char *out = NULL;

    if (v == NULL)
        v = env_nonempty("RLMCP_STATE_DIR");
    if (v != NULL) {
        out = backend_absolute_path(v);
        goto done;
    }
    v = env_nonempty("XDG_STATE_HOME");
    if (v != NULL && v[0] == '/') { /* relative values are invalid (XDG) */
        if (asprintf(&out, "%s/devboxd", v) < 0)
            out = NULL;
        goto done;
    }
    home = home_dir();
    if (home == NULL) {
        *err = fmt_err("cannot find a state dir for the local engine: HOME "
                       "is unset; set runloop.state_dir or RLMCP_STATE_DIR");
        return NULL;
    }
    if (asprintf(&out, "%s/.local/state/devboxd", home) < 0)
        out = NULL;
    free(home);
done:
    if (out == NULL && *err == NULL)
        *err = fmt_err("out of memory");
    return out;
}

static int decide_local(const struct host_config *cfg, struct backend *b,
                        const char *why, char **err)
{
    struct sockaddr_un sun;
    size_t n = 0;

    b->local = true;
    b->state_dir = state_dir_for(cfg, err);
    if (b->state_dir == NULL)
        return -1;
    n = strlen(b->state_dir);
    while (n > 1 && b->state_dir[n - 1] == '/')
        b->state_dir[--n] = '\0';
    if (asprintf(&b->socket_path, "%s/devboxd.sock", b->state_dir) < 0) {
        b->socket_path = NULL;
        *err = fmt_err("out of memory");
        return -1;
    }
    if (strlen(b->socket_path) >= sizeof(sun.sun_path)) {
        *err = fmt_err("the local engine's socket path %s is %zu bytes, "
                       "longer than a unix socket allows (%zu); set "
                       "runloop.state_dir (or RLMCP_STATE_DIR) to a shorter "
                       "directory",
                       b->socket_path, strlen(b->socket_path),
                       sizeof(sun.sun_path) - 1);
        return -1;
    }
    b->base_url = strdup(BACKEND_LOCAL_URL);
    if (nonempty(cfg->runloop.devboxd) != NULL)
        b->devboxd_cfg = strdup(cfg->runloop.devboxd);
    snprintf(b->describe, sizeof(b->describe),
             "backend: local engine at unix:%s (%s%s)", b->socket_path, why,
             env_nonempty("RUNLOOP_BASE_URL") != NULL
                 ? "; RUNLOOP_BASE_URL ignored"
                 : "");
    return b->base_url != NULL ? 0 : -1;
}

/* The mark that makes key look like a placeholder, or NULL. */
static const char *placeholder_mark(const char *key)
{
    static const char *const marks[] = {"...", "\xe2\x80\xa6", "<",
                                        ">",   "${",           "$("};
    size_t i = 0;
    const char *p = key;

    for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
        if (strstr(key, marks[i]) != NULL)
            return marks[i];
    /* "ak_", "ak_xxxx", "ak_****": the prefix with nothing real after it. */
    if (strncmp(p, "ak_", 3) == 0) {
        for (p += 3; *p == 'x' || *p == 'X' || *p == '*' || *p == '.'; p++)
            ;
        if (*p == '\0')
            return "ak_";
    }
    return NULL;
}

bool backend_key_is_placeholder(const char *key)
{
    return placeholder_mark(key) != NULL;
}

static int decide_cloud(const struct host_config *cfg, struct backend *b,
                        const char *why, char **err)
{
    const char *url = env_nonempty("RUNLOOP_BASE_URL");
    const char *url_src = "RUNLOOP_BASE_URL";
    const char *key = nonempty(cfg->runloop.api_key);
    const char *key_src = "runloop.api_key";
    const char *key_note = NULL;
    char note[128];

    if (url == NULL) {
        url = nonempty(cfg->runloop.base_url);
        url_src = "runloop.base_url";
    }
    if (url == NULL) {
        url = BACKEND_CLOUD_URL;
        url_src = "default";
    }
    if (key == NULL) {
        key = env_nonempty("RUNLOOP_API_KEY");
        key_src = "RUNLOOP_API_KEY";
    }
    /* The key itself is never printed, even when it looks fake. */
    if (key != NULL && backend_key_is_placeholder(key)) {
        *err = fmt_err("%s looks like a placeholder copied from an example "
                       "(it has '%s'), not a Runloop API key: set it to your "
                       "key, or remove it (also from the MCP client's config) "
                       "to use the local engine",
                       key_src, placeholder_mark(key));
        return -1;
    }
    if (key == NULL && cfg->server.transport != HOST_TRANSPORT_HTTP &&
        cfg->runloop.backend == HOST_BACKEND_CLOUD) {
        *err = fmt_err("runloop.backend is cloud but no API key is "
                       "configured: set RUNLOOP_API_KEY (or runloop.api_key "
                       "in %s), or use backend: local for the local engine",
                       cfg->path != NULL ? cfg->path : "the deployment");
        return -1;
    }
    if (key != NULL) {
        snprintf(note, sizeof(note), "default key from %s", key_src);
        key_note = note;
    } else if (cfg->server.transport == HOST_TRANSPORT_HTTP) {
        key_note = "no default key: each HTTP caller sends its own";
    } else {
        key_note = "no key: requests go unauthenticated";
    }
    b->local = false;
    b->base_url = strdup(url);
    b->api_key = key != NULL ? strdup(key) : NULL;
    if (b->base_url == NULL || (key != NULL && b->api_key == NULL)) {
        *err = fmt_err("out of memory");
        return -1;
    }
    snprintf(b->describe, sizeof(b->describe),
             "backend: Runloop API at %s (%s; URL from %s; %s)", url, why,
             url_src, key_note);
    return 0;
}

/* auto's reason for choosing the API. */
static void auto_cloud_reason(const struct host_config *cfg, char *out,
                              size_t n)
{
    bool cfg_key = nonempty(cfg->runloop.api_key) != NULL;
    bool env_key = env_nonempty("RUNLOOP_API_KEY") != NULL;
    bool env_url = env_nonempty("RUNLOOP_BASE_URL") != NULL;
    const char *key = cfg_key ? "runloop.api_key" : "RUNLOOP_API_KEY";

    if ((cfg_key || env_key) && env_url)
        snprintf(out, n, "auto: %s and RUNLOOP_BASE_URL are set", key);
    else if (cfg_key || env_key)
        snprintf(out, n, "auto: %s is set", key);
    else
        snprintf(out, n, "auto: RUNLOOP_BASE_URL is set");
}

int backend_resolve(const struct host_config *cfg, struct backend **out,
                    char **err)
{
    struct backend *b = NULL;
    char why[160];
    int rc = -1;
    bool to_cloud = false;

    *out = NULL;
    *err = NULL;
    if (cfg == NULL) {
        *err = fmt_err("no deployment");
        return -1;
    }
    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        *err = fmt_err("out of memory");
        return -1;
    }
    switch (cfg->runloop.backend) {
    case HOST_BACKEND_CLOUD:
        rc = decide_cloud(cfg, b, "runloop.backend: cloud", err);
        break;
    case HOST_BACKEND_LOCAL:
        rc = decide_local(cfg, b, "runloop.backend: local", err);
        break;
    default:
        to_cloud = nonempty(cfg->runloop.api_key) != NULL ||
                   env_nonempty("RUNLOOP_API_KEY") != NULL ||
                   env_nonempty("RUNLOOP_BASE_URL") != NULL;
        if (to_cloud) {
            auto_cloud_reason(cfg, why, sizeof(why));
            rc = decide_cloud(cfg, b, why, err);
        } else {
            rc = decide_local(cfg, b,
                              "auto: no RUNLOOP_API_KEY and no "
                              "RUNLOOP_BASE_URL",
                              err);
        }
        break;
    }
    if (rc != 0) {
        if (*err == NULL)
            *err = fmt_err("out of memory");
        backend_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The local engine                                                       */
/* ---------------------------------------------------------------------- */

static struct rlclient *make_client(const struct backend *b, bool quiet)
{
    struct rlclient_options o = {
        .base_url = b->base_url,
        .unix_socket = b->local ? b->socket_path : NULL,
        .default_max_retries = -1,
        .quiet = quiet,
        .no_breaker = quiet, /* start-up probes poll an engine coming up */
    };
    struct rlclient *c = NULL;
    char *pidfile = NULL;

    /* Tunnels of the local engine: devboxd.pid names its listener. */
    if (b->local && asprintf(&pidfile, "%s/devboxd.pid", b->state_dir) < 0)
        return NULL;
    o.tunnel_info_file = pidfile;
    c = rlclient_create(&o);
    free(pidfile);
    return c;
}

/* 1: a devboxd answers; 0: nothing listens; -1: something else answers. */
static int probe(struct rlclient *pc, long *status)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    int rc = 0;

    req.method = "GET";
    req.path = BACKEND_PROBE_PATH;
    req.timeout_ms = 2000;
    req.max_retries = 0;
    rc = rlclient_request(pc, NULL, &req, &r, NULL, NULL);
    if (rc != RLMCP_OK)
        return 0;
    *status = r->status;
    rlclient_resp_free(r);
    return *status >= 200 && *status <= 299 ? 1 : -1;
}

static int mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    size_t i;
    size_t n = strlen(path);

    if (n >= sizeof(buf))
        return -1;
    memcpy(buf, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        buf[i] = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -1;
        buf[i] = path[i];
    }
    return 0;
}

static bool executable(const char *p)
{
    struct stat st;

    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

static char *search_path(const char *name)
{
    const char *path = env_nonempty("PATH");
    char *copy = NULL;
    char *save = NULL;
    char *dir = NULL;
    char *out = NULL;

    if (path == NULL)
        return NULL;
    copy = strdup(path);
    for (dir = copy ? strtok_r(copy, ":", &save) : NULL; dir != NULL;
         dir = strtok_r(NULL, ":", &save)) {
        if (asprintf(&out, "%s/%s", dir[0] ? dir : ".", name) < 0) {
            out = NULL;
            break;
        }
        if (executable(out))
            break;
        free(out);
        out = NULL;
    }
    free(copy);
    return out;
}

/* runloop.devboxd, else next to this binary, else PATH. */
static char *find_devboxd(const struct backend *b, char **err)
{
    char self[PATH_MAX];
    ssize_t n = 0;
    char *slash = NULL;
    char *p = NULL;

    if (b->devboxd_cfg != NULL) {
        p = strchr(b->devboxd_cfg, '/') != NULL
                ? backend_absolute_path(b->devboxd_cfg)
                : search_path(b->devboxd_cfg);
        if (p != NULL && executable(p))
            return p;
        *err = fmt_err("runloop.devboxd '%s' is not an executable file; fix "
                       "the path or remove the key to use the default search",
                       b->devboxd_cfg);
        free(p);
        return NULL;
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash != NULL &&
            asprintf(&p, "%.*s/devboxd", (int)(slash - self), self) >= 0) {
            if (executable(p))
                return p;
            free(p);
        }
    }
    p = search_path("devboxd");
    if (p != NULL)
        return p;
    *err = fmt_err("no devboxd to start the local engine: not next to the "
                   "runloop-mcp binary nor on PATH; install it, set "
                   "runloop.devboxd, or use backend: cloud with "
                   "RUNLOOP_API_KEY");
    return NULL;
}

/*
 * Start devboxd detached: double fork so it is nobody's child, setsid so it
 * outlives this host's session, stdin/stdout /dev/null, stderr appended to
 * <state>/devboxd.log. Returns the daemon's pid, or -1.
 */
static int spawn_devboxd(const struct backend *b, const char *bin, char **err)
{
    char *logpath = NULL;
    char *listen = NULL;
    int pfd[2] = {-1, -1};
    int logfd = -1;
    int nullfd = -1;
    int pid = -1;
    pid_t mid = -1;
    ssize_t got = 0;

    if (asprintf(&logpath, "%s/devboxd.log", b->state_dir) < 0 ||
        asprintf(&listen, "unix:%s", b->socket_path) < 0) {
        *err = fmt_err("out of memory");
        goto out;
    }
    logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (logfd < 0 || nullfd < 0 || pipe2(pfd, O_CLOEXEC) != 0) {
        *err =
            fmt_err("cannot start devboxd: %s: %s", logpath, strerror(errno));
        goto out;
    }
    mid = fork();
    if (mid < 0) {
        *err = fmt_err("cannot start devboxd: fork: %s", strerror(errno));
        goto out;
    }
    if (mid == 0) {
        /* Only async-signal-safe calls from here to exec. */
        pid_t gc = 0;
        sigset_t none;

        setsid();
        gc = fork();
        if (gc != 0) {
            int v = (int)gc;

            (void)!write(pfd[1], &v, sizeof(v));
            _exit(gc > 0 ? 0 : 1);
        }
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        dup2(nullfd, 0);
        dup2(nullfd, 1);
        dup2(logfd, 2);
        execl(bin, "devboxd", "--state-dir", b->state_dir, "--listen", listen,
              (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    pfd[1] = -1;
    got = read(pfd[0], &pid, sizeof(pid));
    waitpid(mid, NULL, 0);
    if (got != (ssize_t)sizeof(pid) || pid <= 0) {
        *err = fmt_err("cannot start devboxd %s", bin);
        pid = -1;
    }
out:
    if (pfd[0] >= 0)
        close(pfd[0]);
    if (pfd[1] >= 0)
        close(pfd[1]);
    if (logfd >= 0)
        close(logfd);
    if (nullfd >= 0)
        close(nullfd);
    free(logpath);
    free(listen);
    return pid;
}

/* Gone, or a zombie nobody reaped yet. */
static bool process_dead(int pid)
{
    char path[64];
    char buf[512];
    FILE *f = NULL;
    char *rp = NULL;
    bool dead = true;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "re");
    if (f == NULL)
        return true;
    if (fgets(buf, sizeof(buf), f) != NULL) {
        rp = strrchr(buf, ')');
        dead = rp != NULL && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
    }
    fclose(f);
    return dead;
}

/*
 * Whether some devboxd holds <state>/devboxd.lock (devboxd flocks it for
 * its lifetime). Read from /proc/locks, never by taking the lock: trying
 * it could make a devboxd that starts at that instant fail.
 */
static bool engine_lock_held(const struct backend *b)
{
    char path[PATH_MAX];
    char line[256];
    struct stat st;
    FILE *f = NULL;
    bool held = false;

    snprintf(path, sizeof(path), "%s/devboxd.lock", b->state_dir);
    if (stat(path, &st) != 0)
        return false;
    f = fopen("/proc/locks", "re");
    if (f == NULL)
        return true; /* cannot tell: keep waiting to the bound */
    while (!held && fgets(line, sizeof(line), f) != NULL) {
        char kind[16] = "";
        char dev_ino[64] = "";
        const char *colon = NULL;

        /* "1: FLOCK  ADVISORY  WRITE 17974 fe:00:10953974 0 EOF" */
        if (sscanf(line, "%*s %15s %*s %*s %*d %63s", kind, dev_ino) != 2)
            continue;
        colon = strrchr(dev_ino, ':');
        held = strcmp(kind, "FLOCK") == 0 && colon != NULL &&
               strtoull(colon + 1, NULL, 10) == (unsigned long long)st.st_ino;
    }
    fclose(f);
    return held;
}

/* The last line of devboxd.log, for error messages. */
static void log_tail(const struct backend *b, char *out, size_t n)
{
    char path[PATH_MAX];
    char buf[4096];
    ssize_t got = 0;
    char *line = NULL;
    int fd = -1;
    off_t size = 0;

    out[0] = '\0';
    snprintf(path, sizeof(path), "%s/devboxd.log", b->state_dir);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size = lseek(fd, 0, SEEK_END);
    got = pread(fd, buf, sizeof(buf) - 1,
                size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1
                                              : 0);
    close(fd);
    if (got <= 0)
        return;
    buf[got] = '\0';
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
        buf[--got] = '\0';
    line = strrchr(buf, '\n');
    snprintf(out, n, "%s", line != NULL ? line + 1 : buf);
}

/* The pid in <state>/devboxd.pid ("pid N"), or 0. */
static int engine_pid(const struct backend *b)
{
    char path[PATH_MAX];
    FILE *f = NULL;
    int pid = 0;

    snprintf(path, sizeof(path), "%s/devboxd.pid", b->state_dir);
    f = fopen(path, "re");
    if (f == NULL)
        return 0;
    if (fscanf(f, "pid %d", &pid) != 1)
        pid = 0;
    fclose(f);
    return pid;
}

/*
 * Did the devboxd we spawned win, or a concurrent host's? devboxd writes
 * its pid file just after it starts serving, and a loser exits once it
 * finds the lock taken: wait (briefly) for one of the two.
 */
static int serving_is_ours(const struct backend *b, int pid)
{
    long end = now_ms() + 2000;

    while (now_ms() < end) {
        struct timespec ts = {0, 20 * 1000000L};

        if (engine_pid(b) == pid)
            return pid;
        if (process_dead(pid))
            return 0;
        nanosleep(&ts, NULL);
    }
    return 0;
}

static long wait_bound_ms(void)
{
    const char *v = env_nonempty("RLMCP_DEVBOXD_WAIT_MS");
    long ms = v != NULL ? strtol(v, NULL, 10) : 0;

    return ms > 0 ? ms : BACKEND_WAIT_MS;
}

/* Poll the socket until a devboxd answers (ours or a concurrent host's). */
static int wait_for_engine(struct backend *b, struct rlclient *pc, int pid,
                           char **err)
{
    long start = now_ms();
    long bound = wait_bound_ms();
    long dead_since = 0;
    long status = 0;
    char tail[512];

    for (;;) {
        struct timespec ts = {0, 50 * 1000000L};
        int up = probe(pc, &status);
        long t = now_ms();

        if (up == 1)
            return 0;
        if (up < 0) {
            *err = fmt_err("something at unix:%s answers HTTP %ld to GET %s "
                           "instead of a devboxd; stop it or choose another "
                           "runloop.state_dir",
                           b->socket_path, status, BACKEND_PROBE_PATH);
            return -1;
        }
        /* Ours exited: fine if another host's devboxd holds the state dir
         * (it lost the race to that one), else nothing will answer. */
        if (dead_since == 0 && process_dead(pid))
            dead_since = t;
        if (t - start >= bound || (dead_since != 0 && !engine_lock_held(b))) {
            log_tail(b, tail, sizeof(tail));
            *err = fmt_err("devboxd did not answer on unix:%s within %ld ms%s; "
                           "see %s/devboxd.log%s%s",
                           b->socket_path, t - start,
                           dead_since ? " (it exited)" : "", b->state_dir,
                           tail[0] ? ": " : "", tail);
            return -1;
        }
        nanosleep(&ts, NULL);
    }
}

static int ensure_engine(struct backend *b, bool may_start, char **err)
{
    struct rlclient *pc = NULL;
    char *bin = NULL;
    long status = 0;
    long long spawn_ms = 0;
    int up = 0;
    int rc = -1;
    int pid = -1;

    pc = make_client(b, true);
    if (pc == NULL) {
        *err = fmt_err("cannot create the HTTP client for unix:%s",
                       b->socket_path);
        goto out;
    }
    up = probe(pc, &status);
    if (up == 1) {
        rc = 0;
        goto out;
    }
    if (up < 0) {
        *err = fmt_err("something at unix:%s answers HTTP %ld to GET %s "
                       "instead of a devboxd; stop it or choose another "
                       "runloop.state_dir",
                       b->socket_path, status, BACKEND_PROBE_PATH);
        goto out;
    }
    if (!may_start) {
        *err = fmt_err("no local engine answers on unix:%s", b->socket_path);
        goto out;
    }
    bin = find_devboxd(b, err);
    if (bin == NULL)
        goto out;
    if (mkdir_p(b->state_dir, 0700) != 0) {
        *err = fmt_err("cannot create the state dir %s: %s; set "
                       "runloop.state_dir to a writable directory",
                       b->state_dir, strerror(errno));
        goto out;
    }
    spawn_ms = wall_ms();
    pid = spawn_devboxd(b, bin, err);
    if (pid < 0)
        goto out;
    log_msg(RLMCP_LOG_INFO, NULL,
            "started devboxd %s (pid %d) for %s; its log: %s/devboxd.log", bin,
            pid, b->state_dir, b->state_dir);
    rc = wait_for_engine(b, pc, pid, err);
    if (rc == 0)
        b->started_pid = serving_is_ours(b, pid);
    if (b->started_pid > 0)
        b->started_at_ms = spawn_ms;
out:
    free(bin);
    rlclient_destroy(pc);
    return rc;
}

/*
 * The client's down hook: the engine's socket refused a connection. When
 * the devboxd this host started is gone (and no other holds the state
 * dir), start it again and say so; the circuit breaker's probes notice
 * when it answers. Never waits for it: the call that noticed fails fast.
 */
static void engine_down(void *ctx)
{
    struct backend *b = ctx;
    char *err = NULL;
    char *bin = NULL;
    long long spawn_ms = 0;
    int old = 0;
    int pid = -1;

    pthread_mutex_lock(&restart_lock);
    old = b->started_pid;
    if (old <= 0 || now_ms() - b->restarted_ms < BACKEND_RESTART_GAP_MS ||
        !process_dead(old) || engine_lock_held(b))
        goto out;
    b->restarted_ms = now_ms();
    bin = find_devboxd(b, &err);
    spawn_ms = wall_ms();
    if (bin != NULL)
        pid = spawn_devboxd(b, bin, &err);
    if (pid < 0) {
        log_msg(RLMCP_LOG_ERROR, NULL,
                "devboxd (pid %d), started by this host for %s, exited; "
                "restarting it failed: %s",
                old, b->state_dir, err != NULL ? err : "unknown error");
        goto out;
    }
    b->started_pid = pid;
    b->started_at_ms = spawn_ms;
    log_msg(RLMCP_LOG_WARNING, NULL,
            "devboxd (pid %d), started by this host for %s, exited; started "
            "it again (pid %d); its log: %s/devboxd.log",
            old, b->state_dir, pid, b->state_dir);
out:
    pthread_mutex_unlock(&restart_lock);
    free(bin);
    free(err);
}

static int connect_to(struct backend *b, bool may_start, char **err)
{
    *err = NULL;
    if (b->client != NULL)
        return 0;
    if (b->local && ensure_engine(b, may_start, err) != 0)
        return -1;
    b->client = make_client(b, false);
    if (b->client == NULL) {
        *err = fmt_err("cannot create the HTTP client for %s (check "
                       "runloop.base_url or RUNLOOP_BASE_URL)",
                       b->base_url);
        return -1;
    }
    if (b->local)
        rlclient_set_down_hook(b->client, engine_down, b);
    return 0;
}

int backend_connect(struct backend *b, char **err)
{
    return connect_to(b, true, err);
}

int backend_attach(struct backend *b, char **err)
{
    return connect_to(b, false, err);
}

bool backend_pid_gone(int pid)
{
    return process_dead(pid);
}

int backend_engine_pid(const struct backend *b)
{
    int pid = 0;

    if (!b->local)
        return 0;
    pid = engine_pid(b);
    if (pid <= 0 || process_dead(pid) || !engine_lock_held(b))
        return 0;
    return pid;
}

int backend_open(const struct host_config *cfg, struct backend **out,
                 char **err)
{
    struct backend *b = NULL;

    *out = NULL;
    if (backend_resolve(cfg, &b, err) != 0)
        return -1;
    if (backend_connect(b, err) != 0) {
        backend_free(b);
        return -1;
    }
    *out = b;
    return 0;
}

const char *backend_description(const struct backend *b)
{
    return b->describe;
}

const char *backend_describe(const struct host_config *cfg, char *buf,
                             size_t len)
{
    struct backend *b = NULL;
    char *err = NULL;

    if (buf == NULL || len == 0)
        return buf;
    if (backend_resolve(cfg, &b, &err) != 0) {
        snprintf(buf, len, "error: %s", err != NULL ? err : "out of memory");
        free(err);
        return buf;
    }
    snprintf(buf, len, "%s", b->describe + strlen("backend: "));
    backend_free(b);
    return buf;
}

struct rlclient *backend_client(const struct backend *b)
{
    return b->client;
}

const char *backend_api_key(const struct backend *b)
{
    return b->api_key;
}

bool backend_is_local(const struct backend *b)
{
    return b->local;
}

const char *backend_state_dir(const struct backend *b)
{
    return b->state_dir;
}

const char *backend_socket(const struct backend *b)
{
    return b->socket_path;
}

const char *backend_base_url(const struct backend *b)
{
    return b->base_url;
}

int backend_started_pid(const struct backend *b)
{
    return b->started_pid;
}

bool backend_started_engine_unused(const struct backend *b, char *why,
                                   size_t len)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    cJSON *doc = NULL;
    const cJSON *box = NULL;
    const cJSON *t = NULL;
    const cJSON *id = NULL;
    bool unused = false;

    snprintf(why, len, "it is not this host's");
    if (b->started_pid <= 0)
        return false;
    if (backend_engine_pid(b) != b->started_pid) {
        snprintf(why, len, "the state dir's engine is no longer pid %d",
                 b->started_pid);
        return false;
    }
    unused = true;
    if (b->client == NULL)
        return unused;
    /* Newest first: a devbox created since the start is another client's
     * (this host did not serve). */
    req.method = "GET";
    req.path = "/v1/devboxes?limit=1";
    req.timeout_ms = 5000;
    req.max_retries = 0;
    if (rlclient_request(b->client, NULL, &req, &r, NULL, NULL) != RLMCP_OK)
        return unused; /* not answering: nobody is using it either */
    if (r->status == 200)
        doc = cJSON_Parse(r->body);
    box = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "devboxes"),
                             0);
    t = cJSON_GetObjectItemCaseSensitive(box, "create_time_ms");
    id = cJSON_GetObjectItemCaseSensitive(box, "id");
    if (cJSON_IsNumber(t) && t->valuedouble >= (double)b->started_at_ms) {
        snprintf(why, len, "another client created devbox %s on it since",
                 cJSON_IsString(id) ? id->valuestring : "?");
        unused = false;
    }
    cJSON_Delete(doc);
    rlclient_resp_free(r);
    return unused;
}

void backend_free(struct backend *b)
{
    if (b == NULL)
        return;
    rlclient_destroy(b->client);
    free(b->base_url);
    free(b->socket_path);
    free(b->state_dir);
    free(b->devboxd_cfg);
    secret_free(b->api_key);
    free(b);
}
