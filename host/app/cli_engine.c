/*
 * cli_engine.c - `runloop-mcp engine status|start|stop|logs`: the local
 * engine (devboxd) of a deployment's state dir, as an operator sees it.
 * The engine outlives the servers that start it (devboxes survive between
 * launches); this is how to look at it and stop it without reading pid files.
 */
#define _GNU_SOURCE /* asprintf */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "deadline.h"
#include "backend.h"
#include "log.h"
#include "rlclient.h"

#define ENGINE_STOP_WAIT_MS 60000L
#define EXIT_NOT_RUNNING 3 /* as `systemctl status` / LSB */

enum engine_action { ENG_STATUS, ENG_START, ENG_STOP, ENG_LOGS };

struct engine_opts {
    enum engine_action action;
    const char *config;
    const char *lines;
    bool follow;
    bool json;
};

/* What devboxd.pid says ("pid N", "tunnel_port P", "version V", ...). */
struct pid_info {
    int pid;
    int tunnel_port;
    char version[64];
};

static void engine_usage(FILE *out)
{
    fprintf(
        out,
        "Usage: runloop-mcp engine status|start|stop|logs [OPTION]...\n"
        "The local engine (devboxd) of the deployment's state dir. It stays "
        "up\n"
        "between server launches so devboxes survive; stop it here.\n"
        "\n"
        "  status               state dir, pid, version, devboxes, tunnel "
        "port\n"
        "                       (exit 3 when no engine runs)\n"
        "  start                start it unless one runs\n"
        "  stop                 stop it (SIGTERM; its devboxes stop, their "
        "files stay)\n"
        "  logs [-n N] [-f]     the last N lines of devboxd.log (default "
        "50); -f follows\n"
        "\n"
        "  -c, --config FILE    deployment (default: as for serving)\n"
        "      --json           status as JSON\n");
}

static int parse_engine_args(int argc, char **argv, struct engine_opts *o)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"lines", required_argument, NULL, 'n'},
        {"follow", no_argument, NULL, 'f'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static const char *const names[] = {"status", "start", "stop", "logs"};
    const size_t n_names = sizeof(names) / sizeof(names[0]);
    size_t i = 0;
    int ch = 0;
    int rc = cli_word(argc, argv, names, n_names, engine_usage, &i);

    if (rc != 0)
        return rc;
    if (i == n_names) {
        fprintf(stderr,
                "runloop-mcp: engine: '%s' is not a command; use status, "
                "start, stop or logs\n",
                argv[1]);
        return -1;
    }
    o->action = (enum engine_action)i;
    optind = 2;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":c:n:fh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o->config = optarg;
            break;
        case 'n':
            o->lines = optarg;
            break;
        case 'f':
            o->follow = true;
            break;
        case 'j':
            o->json = true;
            break;
        case 'h':
            engine_usage(stdout);
            return 1;
        default:
            return cli_option_error("engine", ch, argv);
        }
    }
    if (cli_no_more_args("engine", argc, argv) < 0)
        return -1;
    if (o->lines != NULL || o->follow) {
        char *end = NULL;
        long n = o->lines ? strtol(o->lines, &end, 10) : 0;

        if (o->action != ENG_LOGS) {
            fprintf(stderr, "runloop-mcp: engine: -n and -f go with logs\n");
            return -1;
        }
        if (o->lines != NULL && (*end != '\0' || n < 0 || n > 1000000)) {
            fprintf(stderr,
                    "runloop-mcp: engine logs: -n '%s' is not a line count "
                    "(0 to 1000000)\n",
                    o->lines);
            return -1;
        }
    }
    if (o->json && o->action != ENG_STATUS) {
        fprintf(stderr, "runloop-mcp: engine: --json goes with status\n");
        return -1;
    }
    return 0;
}

static void read_pid_info(const char *state_dir, struct pid_info *pi)
{
    char path[PATH_MAX];
    char line[512];
    FILE *f = NULL;

    memset(pi, 0, sizeof(*pi));
    snprintf(path, sizeof(path), "%s/devboxd.pid", state_dir);
    f = fopen(path, "re");
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "pid %d", &pi->pid) == 1)
            continue;
        if (sscanf(line, "tunnel_port %d", &pi->tunnel_port) == 1)
            continue;
        sscanf(line, "version %63s", pi->version);
    }
    fclose(f);
}

/* Seconds since the process started, or -1. */
static long process_age(int pid)
{
    char path[64];
    char buf[1024];
    FILE *f = NULL;
    char *rp = NULL;
    unsigned long long start = 0;
    double up = 0;
    long hz = sysconf(_SC_CLK_TCK);
    int field = 0;
    char *tok = NULL;
    char *save = NULL;

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "re");
    if (f == NULL)
        return -1;
    if (fgets(buf, sizeof(buf), f) == NULL) {
        fclose(f);
        return -1;
    }
    fclose(f);
    rp = strrchr(buf, ')');
    /* Field 3 (state) follows ")"; starttime is field 22. */
    for (tok = rp ? strtok_r(rp + 1, " ", &save) : NULL, field = 3;
         tok != NULL && field < 22; tok = strtok_r(NULL, " ", &save))
        field++;
    if (tok == NULL || hz <= 0)
        return -1;
    start = strtoull(tok, NULL, 10);
    f = fopen("/proc/uptime", "re");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%lf", &up) != 1)
        up = 0;
    fclose(f);
    return up > 0 ? (long)(up - (double)start / (double)hz) : -1;
}

/* total_count of GET /v1/devboxes?limit=1[&status=S], or -1. */
static long count_devboxes(struct backend *b, const char *status)
{
    struct rlmcp_http_req req = RLMCP_HTTP_REQ_INIT;
    struct rlmcp_http_resp *r = NULL;
    char path[128];
    cJSON *doc = NULL;
    const cJSON *n = NULL;
    long out = -1;

    snprintf(path, sizeof(path), "/v1/devboxes?limit=1%s%s",
             status ? "&status=" : "", status ? status : "");
    req.method = "GET";
    req.path = path;
    req.timeout_ms = 5000;
    req.max_retries = 0;
    if (rlclient_request(backend_client(b), NULL, &req, &r, NULL, NULL) !=
        RLMCP_OK)
        return -1;
    if (r->status == 200)
        doc = cJSON_Parse(r->body);
    n = cJSON_GetObjectItemCaseSensitive(doc, "total_count");
    if (cJSON_IsNumber(n))
        out = (long)n->valuedouble;
    cJSON_Delete(doc);
    rlclient_resp_free(r);
    return out;
}

static void fmt_age(long s, char *out, size_t n)
{
    if (s < 0)
        snprintf(out, n, "?");
    else if (s < 3600)
        snprintf(out, n, "%ldm%02lds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(out, n, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
    else
        snprintf(out, n, "%ldd%02ldh", s / 86400, (s % 86400) / 3600);
}

static int print_status_json(struct backend *b, int pid,
                             const struct pid_info *pi, long running,
                             long total)
{
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;

    if (o == NULL)
        return EXIT_FAILURE;
    cJSON_AddBoolToObject(o, "running", pid > 0);
    cJSON_AddStringToObject(o, "state_dir", backend_state_dir(b));
    cJSON_AddStringToObject(o, "socket", backend_socket(b));
    if (pid > 0) {
        cJSON_AddNumberToObject(o, "pid", pid);
        cJSON_AddNumberToObject(o, "uptime_seconds", (double)process_age(pid));
        cJSON_AddStringToObject(o, "version",
                                pi->version[0] ? pi->version : "unknown");
        cJSON_AddNumberToObject(o, "devboxes_running", (double)running);
        cJSON_AddNumberToObject(o, "devboxes", (double)total);
        cJSON_AddNumberToObject(o, "tunnel_port", pi->tunnel_port);
    }
    text = cJSON_Print(o);
    if (text != NULL)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
    return pid > 0 ? 0 : EXIT_NOT_RUNNING;
}

static int engine_status(struct backend *b, bool json)
{
    struct pid_info pi;
    int pid = backend_engine_pid(b);
    char *err = NULL;
    char age[32];
    long running = -1;
    long total = -1;

    read_pid_info(backend_state_dir(b), &pi);
    if (pid > 0 && backend_attach(b, &err) == 0) {
        running = count_devboxes(b, "running");
        total = count_devboxes(b, NULL);
    }
    free(err);
    if (json)
        return print_status_json(b, pid, &pi, running, total);
    if (pid <= 0) {
        printf("engine:    not running\n"
               "state dir: %s\n"
               "start it:  runloop-mcp engine start (a server on the local "
               "engine starts it too)\n",
               backend_state_dir(b));
        return EXIT_NOT_RUNNING;
    }
    fmt_age(process_age(pid), age, sizeof(age));
    printf("engine:    running, pid %d, up %s\n", pid, age);
    printf("version:   devboxd %s\n", pi.version[0] ? pi.version : "unknown");
    printf("state dir: %s\n", backend_state_dir(b));
    printf("socket:    unix:%s\n", backend_socket(b));
    if (total >= 0)
        printf("devboxes:  %ld running, %ld in all\n", running, total);
    else
        printf("devboxes:  ? (the engine did not answer GET /v1/devboxes)\n");
    if (pi.tunnel_port > 0) {
        printf("tunnels:   http://{port}-{tunnel_key}.localhost:%d (port %d)\n",
               pi.tunnel_port, pi.tunnel_port);
        /* The form glibc-based clients (Node fetch, Python) open. */
        printf("           http://127.0.0.1:%d/tunnel/{port}-{tunnel_key} (any "
               "client)\n",
               pi.tunnel_port);
    }
    printf("log:       %s/devboxd.log (runloop-mcp engine logs)\n",
           backend_state_dir(b));
    printf("It stays up between server launches; stop it with: runloop-mcp "
           "engine stop\n");
    return 0;
}

static bool pid_is_devboxd(int pid)
{
    char path[64];
    char comm[64] = "";
    FILE *f = NULL;

    snprintf(path, sizeof(path), "/proc/%d/comm", pid);
    f = fopen(path, "re");
    if (f == NULL)
        return false;
    if (fgets(comm, sizeof(comm), f) == NULL)
        comm[0] = '\0';
    fclose(f);
    return strncmp(comm, "devboxd", 7) == 0;
}

static long now_ms(void)
{
    return (long)deadline_now_ms();
}

static int engine_stop(struct backend *b)
{
    int pid = backend_engine_pid(b);
    long start = now_ms();

    if (pid <= 0) {
        printf("no local engine runs for state dir %s\n", backend_state_dir(b));
        return 0;
    }
    if (!pid_is_devboxd(pid)) {
        fprintf(stderr,
                "runloop-mcp: engine stop: pid %d in %s/devboxd.pid is not a "
                "devboxd; nothing was stopped\n",
                pid, backend_state_dir(b));
        return EXIT_FAILURE;
    }
    if (kill(pid, SIGTERM) != 0) {
        fprintf(stderr, "runloop-mcp: engine stop: cannot signal pid %d: %s\n",
                pid, strerror(errno));
        return EXIT_FAILURE;
    }
    printf("stopping devboxd (pid %d): its devboxes stop, their files stay "
           "and they are listed again at the next start\n",
           pid);
    fflush(stdout);
    while (!backend_pid_gone(pid)) {
        struct timespec ts = {0, 50 * 1000000L};

        if (now_ms() - start > ENGINE_STOP_WAIT_MS) {
            fprintf(stderr,
                    "runloop-mcp: engine stop: devboxd (pid %d) did not exit "
                    "within %ld s; see %s/devboxd.log\n",
                    pid, ENGINE_STOP_WAIT_MS / 1000, backend_state_dir(b));
            return EXIT_FAILURE;
        }
        nanosleep(&ts, NULL);
    }
    printf("stopped in %ld ms\n", now_ms() - start);
    return 0;
}

static int engine_start(struct backend *b)
{
    char *err = NULL;
    int pid = backend_engine_pid(b);

    if (pid > 0) {
        printf("already running (pid %d)\n", pid);
        return engine_status(b, false);
    }
    if (backend_connect(b, &err) != 0) {
        fprintf(stderr, "runloop-mcp: engine start: %s\n",
                err ? err : "cannot start devboxd");
        free(err);
        return EXIT_FAILURE;
    }
    printf("started\n");
    return engine_status(b, false);
}

static int engine_logs(struct backend *b, const struct engine_opts *o)
{
    char *path = NULL;
    const char *argv[7];
    int i = 0;

    if (asprintf(&path, "%s/devboxd.log", backend_state_dir(b)) < 0)
        return EXIT_FAILURE;
    if (access(path, R_OK) != 0) {
        fprintf(stderr,
                "runloop-mcp: engine logs: no log at %s (%s); the engine "
                "writes it once a server starts it\n",
                path, strerror(errno));
        free(path);
        return EXIT_FAILURE;
    }
    fflush(stdout);
    argv[i++] = "tail";
    argv[i++] = "-n";
    argv[i++] = o->lines ? o->lines : "50";
    if (o->follow)
        argv[i++] = "-F";
    argv[i++] = "--";
    argv[i++] = path;
    argv[i] = NULL;
    execvp("tail", (char *const *)argv);
    fprintf(stderr, "runloop-mcp: engine logs: cannot run tail: %s\n",
            strerror(errno));
    free(path);
    return EXIT_FAILURE;
}

int cli_engine_main(int argc, char **argv, cli_load_fn load)
{
    struct engine_opts o;
    struct host_config cfg;
    struct backend *b = NULL;
    char *err = NULL;
    int rc = CLI_EXIT_USAGE;
    int parsed = 0;

    memset(&o, 0, sizeof(o));
    memset(&cfg, 0, sizeof(cfg));
    parsed = parse_engine_args(argc, argv, &o);
    if (parsed != 0)
        return parsed > 0 ? 0 : CLI_EXIT_USAGE;
    if (load(o.config, &cfg) != 0)
        return CLI_EXIT_USAGE;
    log_set_level(RLMCP_LOG_WARNING);
    if (backend_resolve(&cfg, &b, &err) != 0) {
        fprintf(stderr, "runloop-mcp: engine: %s\n", err ? err : "no backend");
        goto out;
    }
    if (!backend_is_local(b)) {
        fprintf(stderr,
                "runloop-mcp: engine: %s uses the Runloop API at %s, not the "
                "local engine (it serves when runloop.backend is local, or "
                "auto with no RUNLOOP_API_KEY and no RUNLOOP_BASE_URL)\n",
                cfg.path ? cfg.path : "the deployment", backend_base_url(b));
        goto out;
    }
    switch (o.action) {
    case ENG_STATUS:
        rc = engine_status(b, o.json);
        break;
    case ENG_START:
        rc = engine_start(b);
        break;
    case ENG_STOP:
        rc = engine_stop(b);
        break;
    default:
        rc = engine_logs(b, &o);
        break;
    }
out:
    free(err);
    backend_free(b);
    config_free(&cfg);
    return rc;
}
