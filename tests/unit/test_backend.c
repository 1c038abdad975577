/*
 * test_backend.c - backend selection (auto/cloud/local, environment and
 * deployment precedence, state dir), devboxd discovery errors, and against
 * a real devboxd: GET over the unix socket, auto-start, and two hosts
 * starting at once ending up on one engine.
 *
 * The real-engine tests need build/bin/devboxd. Before devboxd/ had a
 * CMakeLists.txt they were skipped (and said so); once devboxd has landed a
 * missing binary is a failure.
 */
#define _GNU_SOURCE /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "config.h"
#include "rlclient.h"

#define SECRET "ak_backend_SECRET_77aa"
#define DEVBOXD RLMCP_BINARY_DIR "/bin/devboxd"

static const char *const g_vars[] = {
    "RUNLOOP_API_KEY", "RUNLOOP_BASE_URL",      "RLMCP_STATE_DIR",
    "XDG_STATE_HOME",  "RLMCP_DEVBOXD_WAIT_MS", NULL};

static int clear_env(void **state)
{
    int i;

    for (i = 0; g_vars[i] != NULL; i++)
        unsetenv(g_vars[i]);
    setenv("HOME", "/home/tester", 1);
    return 0;
}

/* A test's temporary state dir and what runs on it; the teardown stops and
 * removes everything even when the test failed half-way. */
struct tmpdir {
    char dir[32];
    pid_t fs; /* a faultserver, or 0 */
};

static int with_tmp(void **state)
{
    struct tmpdir *t = calloc(1, sizeof(*t));

    if (t == NULL)
        return -1;
    snprintf(t->dir, sizeof(t->dir), "/tmp/rlb-XXXXXX");
    if (mkdtemp(t->dir) == NULL) {
        free(t);
        return -1;
    }
    *state = t;
    return clear_env(state);
}

static void cfg_init(struct host_config *cfg, enum host_backend mode)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->path = "conf/test.yaml";
    cfg->server.transport = HOST_TRANSPORT_STDIO;
    cfg->runloop.backend = mode;
}

static struct backend *resolve_ok(const struct host_config *cfg)
{
    struct backend *b = NULL;
    char *err = NULL;

    if (backend_resolve(cfg, &b, &err) != 0)
        fail_msg("backend_resolve failed: %s", err);
    assert_null(err);
    assert_non_null(b);
    assert_null(strstr(backend_description(b), SECRET));
    return b;
}

static char *resolve_err(const struct host_config *cfg)
{
    struct backend *b = NULL;
    char *err = NULL;

    assert_int_equal(backend_resolve(cfg, &b, &err), -1);
    assert_null(b);
    assert_non_null(err);
    return err;
}

static void contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("'%s' does not contain '%s'", hay, needle);
}

/* ---------------------------------------------------------------------- */
/* Selection matrix                                                       */
/* ---------------------------------------------------------------------- */

static void t_auto_no_key_is_local(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;

    cfg_init(&cfg, HOST_BACKEND_AUTO);
    b = resolve_ok(&cfg);
    assert_true(backend_is_local(b));
    assert_null(backend_api_key(b));
    assert_string_equal(backend_state_dir(b),
                        "/home/tester/.local/state/devboxd");
    assert_string_equal(backend_socket(b),
                        "/home/tester/.local/state/devboxd/devboxd.sock");
    assert_string_equal(backend_description(b),
                        "backend: local engine at unix:/home/tester/.local/"
                        "state/devboxd/devboxd.sock (auto: no RUNLOOP_API_KEY "
                        "and no RUNLOOP_BASE_URL)");
    backend_free(b);

    /* Empty variables count as unset. */
    setenv("RUNLOOP_API_KEY", "", 1);
    setenv("RUNLOOP_BASE_URL", "", 1);
    b = resolve_ok(&cfg);
    assert_true(backend_is_local(b));
    backend_free(b);
    cfg.runloop.api_key = "";
    b = resolve_ok(&cfg);
    assert_true(backend_is_local(b));
    backend_free(b);
}

static void t_auto_env_key_is_cloud(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;

    cfg_init(&cfg, HOST_BACKEND_AUTO);
    setenv("RUNLOOP_API_KEY", SECRET, 1);
    b = resolve_ok(&cfg);
    assert_false(backend_is_local(b));
    assert_string_equal(backend_api_key(b), SECRET);
    assert_string_equal(backend_base_url(b), "https://api.runloop.ai");
    assert_null(backend_state_dir(b));
    contains(backend_description(b), "backend: Runloop API at "
                                     "https://api.runloop.ai (auto: "
                                     "RUNLOOP_API_KEY is set");
    contains(backend_description(b), "default key from RUNLOOP_API_KEY");
    backend_free(b);
}

static void t_auto_config_key_wins(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;

    cfg_init(&cfg, HOST_BACKEND_AUTO);
    setenv("RUNLOOP_API_KEY", "ak_env_other", 1);
    cfg.runloop.api_key = SECRET;
    cfg.runloop.base_url = "https://example.test";
    b = resolve_ok(&cfg);
    assert_false(backend_is_local(b));
    assert_string_equal(backend_api_key(b), SECRET);
    assert_string_equal(backend_base_url(b), "https://example.test");
    contains(backend_description(b), "auto: runloop.api_key is set");
    contains(backend_description(b), "URL from runloop.base_url");
    backend_free(b);
}

static void t_auto_base_url_is_cloud(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;

    cfg_init(&cfg, HOST_BACKEND_AUTO);
    cfg.runloop.base_url = "https://from-config.test";
    setenv("RUNLOOP_BASE_URL", "http://127.0.0.1:9", 1);
    b = resolve_ok(&cfg);
    assert_false(backend_is_local(b));
    assert_null(backend_api_key(b));
    assert_string_equal(backend_base_url(b), "http://127.0.0.1:9");
    contains(backend_description(b), "(auto: RUNLOOP_BASE_URL is set; URL from "
                                     "RUNLOOP_BASE_URL; no key");
    backend_free(b);

    /* A base URL in the deployment alone does not leave the local engine. */
    unsetenv("RUNLOOP_BASE_URL");
    b = resolve_ok(&cfg);
    assert_true(backend_is_local(b));
    backend_free(b);
}

static void t_cloud_needs_key(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;
    char *err = NULL;

    cfg_init(&cfg, HOST_BACKEND_CLOUD);
    err = resolve_err(&cfg);
    contains(err, "runloop.backend is cloud but no API key");
    contains(err, "RUNLOOP_API_KEY");
    contains(err, "conf/test.yaml");
    free(err);

    /* Over HTTP each caller brings a key: no default needed. */
    cfg.server.transport = HOST_TRANSPORT_HTTP;
    b = resolve_ok(&cfg);
    assert_false(backend_is_local(b));
    assert_null(backend_api_key(b));
    contains(backend_description(b), "runloop.backend: cloud");
    contains(backend_description(b), "each HTTP caller sends its own");
    backend_free(b);

    cfg.server.transport = HOST_TRANSPORT_STDIO;
    setenv("RUNLOOP_API_KEY", SECRET, 1);
    setenv("RUNLOOP_BASE_URL", "https://env.test", 1);
    cfg.runloop.base_url = "https://cfg.test";
    b = resolve_ok(&cfg);
    assert_string_equal(backend_base_url(b), "https://env.test");
    assert_string_equal(backend_api_key(b), SECRET);
    backend_free(b);
}

static void t_describe_for_check_config(void **state)
{
    struct host_config cfg;
    char line[512];

    cfg_init(&cfg, HOST_BACKEND_AUTO);
    setenv("RLMCP_STATE_DIR", "/s", 1);
    assert_string_equal(backend_describe(&cfg, line, sizeof(line)),
                        "local engine at unix:/s/devboxd.sock (auto: no "
                        "RUNLOOP_API_KEY and no RUNLOOP_BASE_URL)");
    cfg.runloop.backend = HOST_BACKEND_CLOUD;
    backend_describe(&cfg, line, sizeof(line));
    contains(line, "error: runloop.backend is cloud but no API key");
    cfg.runloop.api_key = SECRET;
    backend_describe(&cfg, line, sizeof(line));
    contains(line, "Runloop API at https://api.runloop.ai (runloop.backend: "
                   "cloud; URL from default; default key from "
                   "runloop.api_key)");
    assert_null(strstr(line, SECRET));
}

static void t_local_explicit(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;

    cfg_init(&cfg, HOST_BACKEND_LOCAL);
    setenv("RUNLOOP_API_KEY", SECRET, 1);
    setenv("RUNLOOP_BASE_URL", "https://env.test", 1);
    b = resolve_ok(&cfg);
    assert_true(backend_is_local(b));
    assert_null(backend_api_key(b)); /* a cloud key never goes to devboxd */
    assert_string_equal(backend_base_url(b), "http://localhost");
    contains(backend_description(b), "(runloop.backend: local; "
                                     "RUNLOOP_BASE_URL ignored)");
    backend_free(b);
}

static void t_state_dir_precedence(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;
    char cwd[4096];
    char want[4200];

    cfg_init(&cfg, HOST_BACKEND_LOCAL);
    setenv("XDG_STATE_HOME", "relative/not/allowed", 1);
    b = resolve_ok(&cfg);
    assert_string_equal(backend_state_dir(b),
                        "/home/tester/.local/state/devboxd");
    backend_free(b);
    setenv("XDG_STATE_HOME", "/xdg/state", 1);
    b = resolve_ok(&cfg);
    assert_string_equal(backend_state_dir(b), "/xdg/state/devboxd");
    backend_free(b);
    setenv("RLMCP_STATE_DIR", "/env/state/", 1);
    b = resolve_ok(&cfg);
    assert_string_equal(backend_state_dir(b), "/env/state");
    assert_string_equal(backend_socket(b), "/env/state/devboxd.sock");
    backend_free(b);
    cfg.runloop.state_dir = "rel/state";
    b = resolve_ok(&cfg);
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    snprintf(want, sizeof(want), "%s/rel/state", cwd);
    assert_string_equal(backend_state_dir(b), want);
    backend_free(b);
}

static void t_state_dir_too_long(void **state)
{
    struct host_config cfg;
    char longdir[200];
    char *err = NULL;

    memset(longdir, 'd', sizeof(longdir));
    longdir[0] = '/';
    longdir[sizeof(longdir) - 1] = '\0';
    cfg_init(&cfg, HOST_BACKEND_LOCAL);
    cfg.runloop.state_dir = longdir;
    err = resolve_err(&cfg);
    contains(err, "longer than a unix socket allows");
    contains(err, "runloop.state_dir");
    free(err);
}

/* ---------------------------------------------------------------------- */
/* Engine discovery and start-up errors                                   */
/* ---------------------------------------------------------------------- */

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

static void rm_rf(const char *dir)
{
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void t_devboxd_missing(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;
    char *dir = ((struct tmpdir *)*state)->dir;
    char *err = NULL;

    cfg_init(&cfg, HOST_BACKEND_LOCAL);
    cfg.runloop.state_dir = dir;
    cfg.runloop.devboxd = "/nonexistent/devboxd";
    assert_int_equal(backend_open(&cfg, &b, &err), -1);
    assert_null(b);
    contains(err, "runloop.devboxd '/nonexistent/devboxd' is not an "
                  "executable file");
    free(err);
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void t_devboxd_exits_at_once(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;
    char *dir = ((struct tmpdir *)*state)->dir;
    char *err = NULL;
    double t0 = 0;

    cfg_init(&cfg, HOST_BACKEND_LOCAL);
    cfg.runloop.state_dir = dir;
    cfg.runloop.devboxd = "/bin/false"; /* starts, exits, holds no lock */
    t0 = now_ms();
    assert_int_equal(backend_open(&cfg, &b, &err), -1);
    /* It noticed the engine died instead of waiting the 30 s bound. */
    assert_true(now_ms() - t0 < 15000.0);
    contains(err, "devboxd did not answer on unix:");
    contains(err, "(it exited)");
    contains(err, "devboxd.log");
    free(err);
}

static int engines_for(const char *dir, int *pids, int max);

/* Something that is not devboxd answers on the socket: say so, start
 * nothing, and never fall back elsewhere. */
static void t_foreign_server_on_socket(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;
    char *dir = ((struct tmpdir *)*state)->dir;
    char sock[128];
    char *err = NULL;
    int out[2];
    char line[256] = "";
    pid_t fs = -1;
    ssize_t n = 0;
    int pids[4];

    snprintf(sock, sizeof(sock), "%s/devboxd.sock", dir);
    assert_int_equal(pipe(out), 0);
    fs = fork();
    if (fs == 0) {
        dup2(out[1], 1);
        close(out[0]);
        execl(RLMCP_BINARY_DIR "/bin/faultserver", "faultserver", "--unix",
              sock, (char *)NULL);
        _exit(127);
    }
    ((struct tmpdir *)*state)->fs = fs;
    close(out[1]);
    n = read(out[0], line, sizeof(line) - 1); /* "listening on ..." */
    close(out[0]);
    assert_true(n > 0);
    /* With no script every request gets 200 {"ok":true}: make it 404. */
    {
        CURL *e = curl_easy_init();

        curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, sock);
        curl_easy_setopt(e, CURLOPT_URL, "http://localhost/__script");
        curl_easy_setopt(e, CURLOPT_POSTFIELDS,
                         "[{\"status\":404},{\"status\":404}]");
        assert_int_equal(curl_easy_perform(e), CURLE_OK);
        curl_easy_cleanup(e);
    }
    cfg_init(&cfg, HOST_BACKEND_LOCAL);
    cfg.runloop.state_dir = dir;
    cfg.runloop.devboxd = "/bin/false";
    assert_int_equal(backend_open(&cfg, &b, &err), -1);
    assert_null(b);
    contains(err, "answers HTTP 404 to GET /v1/devboxes?limit=1 instead of a "
                  "devboxd");
    free(err);
    assert_int_equal(engines_for(dir, pids, 4), 0);
}

/* ---------------------------------------------------------------------- */
/* A real devboxd                                                         */
/* ---------------------------------------------------------------------- */

static bool devboxd_ready(void)
{
    struct stat st;

    if (access(DEVBOXD, X_OK) == 0)
        return true;
    if (stat(RLMCP_SOURCE_DIR "/devboxd/CMakeLists.txt", &st) == 0)
        fail_msg("devboxd has landed but %s is not built", DEVBOXD);
    print_message("SKIPPED: %s not built and devboxd/ has no CMakeLists.txt "
                  "yet\n",
                  DEVBOXD);
    return false;
}

/* Pids of live devboxd processes whose command line names dir, and (when
 * ppids is set) their parents' pids. */
static int devboxd_procs(const char *dir, int *pids, int *ppids, int max)
{
    DIR *d = opendir("/proc");
    struct dirent *e = NULL;
    int n = 0;

    while (d != NULL && (e = readdir(d)) != NULL) {
        char path[300];
        char cmd[4096];
        char stat_line[512];
        ssize_t got = 0;
        ssize_t i = 0;
        int fd = -1;
        char *rp = NULL;

        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        got = read(fd, stat_line, sizeof(stat_line) - 1);
        close(fd);
        if (got <= 0)
            continue;
        stat_line[got] = '\0';
        rp = strrchr(stat_line, ')');
        if (rp == NULL || rp[2] == 'Z' ||
            strstr(stat_line, "(devboxd)") == NULL)
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        got = read(fd, cmd, sizeof(cmd) - 1);
        close(fd);
        for (i = 0; i < got; i++)
            if (cmd[i] == '\0')
                cmd[i] = ' ';
        cmd[got > 0 ? got : 0] = '\0';
        if (strstr(cmd, dir) != NULL && n < max) {
            pids[n] = atoi(e->d_name);
            if (ppids != NULL)
                ppids[n] = atoi(rp + 4); /* ") S ppid ..." */
            n++;
        }
    }
    if (d != NULL)
        closedir(d);
    return n;
}

/* Pids of the engines for dir: devboxd processes whose parent is not one
 * of them.  A child an engine forked shows the engine's name and command
 * line until it execs (a sandbox's launcher sets up its mounts there). */
static int engines_for(const char *dir, int *pids, int max)
{
    int all[32];
    int parents[32];
    int n = devboxd_procs(dir, all, parents, 32);
    int found = 0;
    int i;
    int j;

    for (i = 0; i < n; i++) {
        bool child = false;

        for (j = 0; j < n; j++)
            child = child || parents[i] == all[j];
        if (!child && found < max)
            pids[found++] = all[i];
    }
    return found;
}

static void stop_engines(const char *dir)
{
    int pids[8];
    int n = engines_for(dir, pids, 8);
    int i;
    double deadline = now_ms() + 15000;

    for (i = 0; i < n; i++)
        kill(pids[i], SIGTERM);
    while (engines_for(dir, pids, 8) > 0 && now_ms() < deadline) {
        struct timespec ts = {0, 20 * 1000000L};

        nanosleep(&ts, NULL);
    }
    n = engines_for(dir, pids, 8);
    for (i = 0; i < n; i++)
        kill(pids[i], SIGKILL);
    /* We are their subreaper (main): collect the exited engines. */
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

static void get_devboxes(struct backend *b)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    cJSON *j = NULL;

    req.method = "GET";
    req.path = "/v1/devboxes?limit=1";
    assert_int_equal(rlclient_request(backend_client(b), backend_api_key(b),
                                      &req, &r, NULL, NULL),
                     RLMCP_OK);
    assert_int_equal(r->status, 200);
    j = cJSON_Parse(r->body);
    assert_non_null(j);
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(j, "devboxes")));
    cJSON_Delete(j);
    rlclient_resp_free(r);
}

static void t_real_autostart_and_reuse(void **state)
{
    struct host_config cfg;
    struct backend *b = NULL;
    struct backend *b2 = NULL;
    char *dir = ((struct tmpdir *)*state)->dir;
    char *err = NULL;
    int pids[4];

    if (!devboxd_ready())
        return;
    cfg_init(&cfg, HOST_BACKEND_AUTO);
    cfg.runloop.state_dir = dir;
    cfg.runloop.devboxd = DEVBOXD;
    if (backend_open(&cfg, &b, &err) != 0)
        fail_msg("backend_open: %s", err);
    assert_true(backend_is_local(b));
    assert_true(backend_started_pid(b) > 0);
    get_devboxes(b); /* over the unix socket */
    /* A second host finds the running engine and starts nothing. */
    assert_int_equal(backend_open(&cfg, &b2, &err), 0);
    assert_int_equal(backend_started_pid(b2), 0);
    get_devboxes(b2);
    assert_int_equal(engines_for(dir, pids, 4), 1);
    assert_int_equal(pids[0], backend_started_pid(b));
    backend_free(b2);
    backend_free(b);
    /* The engine outlives the host that started it. */
    assert_int_equal(engines_for(dir, pids, 4), 1);
    stop_engines(dir);
    assert_int_equal(engines_for(dir, pids, 4), 0);
}

/* Two host processes open the same new state dir at the same moment. */
static void t_real_two_hosts_one_engine(void **state)
{
    struct host_config cfg;
    char *dir = ((struct tmpdir *)*state)->dir;
    int go[2];
    pid_t kids[2];
    int i;
    int pids[4];
    int started = 0;

    if (!devboxd_ready())
        return;
    cfg_init(&cfg, HOST_BACKEND_LOCAL);
    cfg.runloop.state_dir = dir;
    cfg.runloop.devboxd = DEVBOXD;
    assert_int_equal(pipe(go), 0);
    for (i = 0; i < 2; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            struct backend *b = NULL;
            char *err = NULL;
            char c = 0;
            int code = 0;

            close(go[1]);
            (void)!read(go[0], &c, 1); /* both wait for the same start */
            if (backend_open(&cfg, &b, &err) != 0) {
                fprintf(stderr, "host %d: %s\n", i, err);
                _exit(1);
            }
            {
                struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
                struct rlmcp_http_resp *r = NULL;

                req.method = "GET";
                req.path = "/v1/devboxes";
                if (rlclient_request(backend_client(b), NULL, &req, &r, NULL,
                                     NULL) != RLMCP_OK ||
                    r->status != 200)
                    code = 2;
                rlclient_resp_free(r);
            }
            code |= backend_started_pid(b) > 0 ? 4 : 0;
            backend_free(b);
            _exit(code);
        }
    }
    close(go[0]);
    close(go[1]); /* EOF releases both at once */
    for (i = 0; i < 2; i++) {
        int st = 0;

        waitpid(kids[i], &st, 0);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st) & 3, 0);
        started += (WEXITSTATUS(st) & 4) ? 1 : 0;
    }
    /* Exactly one engine serves the state dir, whoever started it (a
     * loser may take a moment to find the lock taken and exit). */
    {
        double end = now_ms() + 15000;

        while (engines_for(dir, pids, 4) > 1 && now_ms() < end) {
            struct timespec ts = {0, 20 * 1000000L};

            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(engines_for(dir, pids, 4), 1);
    assert_int_equal(started, 1);
    stop_engines(dir);
}

static int tmp_cleanup(void **state)
{
    struct tmpdir *t = *state;

    if (t->fs > 0) {
        kill(t->fs, SIGTERM);
        waitpid(t->fs, NULL, 0);
    }
    stop_engines(t->dir);
    rm_rf(t->dir);
    free(t);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(t_auto_no_key_is_local, clear_env),
        cmocka_unit_test_setup(t_auto_env_key_is_cloud, clear_env),
        cmocka_unit_test_setup(t_auto_config_key_wins, clear_env),
        cmocka_unit_test_setup(t_auto_base_url_is_cloud, clear_env),
        cmocka_unit_test_setup(t_cloud_needs_key, clear_env),
        cmocka_unit_test_setup(t_local_explicit, clear_env),
        cmocka_unit_test_setup(t_describe_for_check_config, clear_env),
        cmocka_unit_test_setup(t_state_dir_precedence, clear_env),
        cmocka_unit_test_setup(t_state_dir_too_long, clear_env),
        cmocka_unit_test_setup_teardown(t_devboxd_missing, with_tmp,
                                        tmp_cleanup),
        cmocka_unit_test_setup_teardown(t_devboxd_exits_at_once, with_tmp,
                                        tmp_cleanup),
        cmocka_unit_test_setup_teardown(t_foreign_server_on_socket, with_tmp,
                                        tmp_cleanup),
        cmocka_unit_test_setup_teardown(t_real_autostart_and_reuse, with_tmp,
                                        tmp_cleanup),
        cmocka_unit_test_setup_teardown(t_real_two_hosts_one_engine, with_tmp,
                                        tmp_cleanup),
    };

    signal(SIGPIPE, SIG_IGN);
    /* Detached engines re-parent to us, so the test can reap them. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    rlclient_global_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
