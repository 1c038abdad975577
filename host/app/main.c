/*
 * main.c - the runloop-mcp command line: find and load the deployment,
 * load its plugins, apply the tool selection, then list, check or serve.
 *
 * Exit codes: 0 ok, 2 usage or deployment error, 1 runtime failure
 * (a plugin that cannot be loaded, a transport that cannot start).
 */
#define _GNU_SOURCE /* asprintf, vasprintf */
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

#include "audit.h"
#include "backend.h"
#include "cli.h"
#include "config.h"
#include "deployment.h"
#include "exe_dir.h"
#include "http.h"
#include "loader.h"
#include "log.h"
#include "mcp.h"
#include "mcp_stdio.h"
#include "metrics.h"
#include "registry.h"
#include "reload.h"
#include "rlclient.h"
#include "schema.h"
#include "services.h"
#include "tasks.h"
#include "toolsets.h"

#ifndef RLMCP_VERSION
#define RLMCP_VERSION "0.0.0"
#endif
#ifndef RLMCP_INSTALL_CONF_DIR
#define RLMCP_INSTALL_CONF_DIR "/usr/local/share/runloop-mcp/conf"
#endif

#define EXIT_USAGE 2
#define EXIT_RUNTIME 1
#define DEFAULT_CONF "runloop-mcp.yaml"

enum action { ACT_SERVE, ACT_LIST, ACT_CHECK };

struct options {
    const char *config;
    const char *transport;
    const char *listen;
    const char
        *host; /* --host, --port: the older two-option spelling of --listen */
    const char *port;
    const char *log_level;
    enum action action;
    bool json;
    bool all;
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "Usage: runloop-mcp [OPTION]...\n"
        "       runloop-mcp engine status|start|stop|logs [OPTION]...\n"
        "       runloop-mcp install-client claude|cursor|vscode|codex "
        "[OPTION]...\n"
        "       runloop-mcp ssh DEVBOX [COMMAND [ARG]...]\n"
        "Serve MCP tools that drive Runloop devboxes, as selected by a "
        "deployment file;\n"
        "look after the local engine; add this server to an MCP client's "
        "config;\n"
        "open a shell in a devbox of the local engine.\n"
        "\n"
        "  -c, --config FILE        deployment file (default: $RLMCP_CONFIG, "
        "else\n"
        "                           conf/" DEFAULT_CONF
        " next to the binary or installed)\n"
        "  -t, --transport KIND     stdio or http (overrides "
        "server.transport)\n"
        "  -l, --listen HOST:PORT   HTTP address (overrides "
        "server.http.listen;\n"
        "                           implies --transport http)\n"
        "      --host HOST          HTTP host only (the port stays the "
        "deployment's);\n"
        "                           implies --transport http\n"
        "      --port PORT          HTTP port only (the host stays the "
        "deployment's);\n"
        "                           implies --transport http\n"
        "      --list-tools         print the tools this deployment exposes "
        "and exit\n"
        "      --json               with --list-tools: print JSON\n"
        "      --all                with --list-tools: also the tools the "
        "selection hides\n"
        "      --check-config       validate the deployment, load its plugins, "
        "print a\n"
        "                           summary and exit\n"
        "      --log-level LEVEL    debug, info, notice, warning, error "
        "(overrides\n"
        "                           host.log_level)\n"
        "  -V, --version            print the version and plugin ABI and exit\n"
        "  -h, --help               print this help and exit\n"
        "\n"
        "Exit status: 0 ok, 2 usage or deployment error, 1 runtime failure.\n"
        "Docs: docs/cli.md, docs/deployments.md\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
    enum {
        OPT_LIST = 256,
        OPT_CHECK,
        OPT_JSON,
        OPT_ALL,
        OPT_LOG,
        OPT_HOST,
        OPT_PORT
    };
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"transport", required_argument, NULL, 't'},
        {"listen", required_argument, NULL, 'l'},
        {"host", required_argument, NULL, OPT_HOST},
        {"port", required_argument, NULL, OPT_PORT},
        {"list-tools", no_argument, NULL, OPT_LIST},
        {"check-config", no_argument, NULL, OPT_CHECK},
        {"json", no_argument, NULL, OPT_JSON},
        {"all", no_argument, NULL, OPT_ALL},
        {"log-level", required_argument, NULL, OPT_LOG},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch = 0;

    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":c:t:l:Vh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o->config = optarg;
            break;
        case 't':
            o->transport = optarg;
            break;
        case 'l':
            o->listen = optarg;
            break;
        case OPT_HOST:
            o->host = optarg;
            break;
        case OPT_PORT:
            o->port = optarg;
            break;
        case OPT_LIST:
            o->action = ACT_LIST;
            break;
        case OPT_CHECK:
            o->action = ACT_CHECK;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_ALL:
            o->all = true;
            break;
        case OPT_LOG:
            o->log_level = optarg;
            break;
        case 'V':
            printf("runloop-mcp %s (plugin ABI %d.%d)\n", RLMCP_VERSION,
                   RLMCP_ABI_MAJOR, RLMCP_ABI_MINOR);
            exit(0);
        case 'h':
            usage(stdout);
            exit(0);
        case ':':
            fprintf(stderr,
                    "runloop-mcp: option '%s' needs a value; see --help\n",
                    argv[optind - 1]);
            return -1;
        default:
            fprintf(stderr, "runloop-mcp: unknown option '%s'; see --help\n",
                    argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr,
                "runloop-mcp: unexpected argument '%s'; give the deployment "
                "with --config FILE\n",
                argv[optind]);
        return -1;
    }
    if ((o->json || o->all) && o->action != ACT_LIST) {
        fprintf(stderr, "runloop-mcp: --json and --all go with --list-tools\n");
        return -1;
    }
    return 0;
}

/* ---- finding the deployment -------------------------------------------- */

static bool readable(const char *p)
{
    return access(p, R_OK) == 0;
}

/*
 * $RLMCP_CONFIG, then <bindir>/../conf (an unpacked tree),
 * <bindir>/../../conf (the build tree: build/bin -> repo conf/),
 * <bindir>/../share/runloop-mcp/conf (a relocated install), then the
 * configured install dir. Returns malloc'd path or NULL (tried in *tried).
 */
static char *find_config(char *tried, size_t triedlen)
{
    const char *env = getenv("RLMCP_CONFIG");
    static const char *const rel[] = {"/../conf/", "/../../conf/",
                                      "/../share/runloop-mcp/conf/"};
    char *dir = exe_dir();
    char *path = NULL;
    size_t used = 0;
    size_t i = 0;

    tried[0] = '\0';
    if (env != NULL && env[0] != '\0') {
        free(dir);
        return strdup(env);
    }
    for (i = 0; dir != NULL && i < sizeof(rel) / sizeof(rel[0]); i++) {
        if (asprintf(&path, "%s%s%s", dir, rel[i], DEFAULT_CONF) < 0)
            break;
        if (readable(path))
            goto out;
        used += (size_t)snprintf(tried + used,
                                 used < triedlen ? triedlen - used : 0, "%s%s",
                                 used ? ", " : "", path);
        free(path);
        path = NULL;
    }
    if (asprintf(&path, "%s/%s", RLMCP_INSTALL_CONF_DIR, DEFAULT_CONF) < 0) {
        path = NULL;
        goto out;
    }
    if (!readable(path)) {
        snprintf(tried + used, used < triedlen ? triedlen - used : 0, "%s%s",
                 used ? ", " : "", path);
        free(path);
        path = NULL;
    }
out:
    free(dir);
    return path;
}

/* ---- CLI overrides ----------------------------------------------------- */

/*
 * --host and --port (the older launch line): each replaces its half of
 * the deployment's server.http.listen. *out is malloc'd HOST:PORT.
 */
static int host_port_listen(const struct options *o, const char *cur,
                            char **out)
{
    char host[256] = "127.0.0.1";
    uint16_t port = 8000;
    char *end = NULL;
    long p = 0;

    *out = NULL;
    if (o->listen != NULL) {
        fprintf(stderr, "runloop-mcp: give --listen HOST:PORT or --host and "
                        "--port, not both\n");
        return -1;
    }
    if (cur != NULL && http_parse_listen(cur, host, sizeof(host), &port) != 0) {
        snprintf(host, sizeof(host), "127.0.0.1");
        port = 8000;
    }
    if (o->host != NULL) {
        if (o->host[0] == '\0' || strlen(o->host) >= sizeof(host) ||
            strpbrk(o->host, "[]/ \t") != NULL) {
            fprintf(stderr,
                    "runloop-mcp: --host '%s' is not a host name or IP "
                    "address; e.g. --host 127.0.0.1\n",
                    o->host);
            return -1;
        }
        snprintf(host, sizeof(host), "%s", o->host);
    }
    if (o->port != NULL) {
        p = strtol(o->port, &end, 10);
        if (o->port[0] < '0' || o->port[0] > '9' || *end != '\0' || p < 0 ||
            p > 65535) {
            fprintf(stderr,
                    "runloop-mcp: --port '%s' is not a port number; use "
                    "0-65535, e.g. --port 8000\n",
                    o->port);
            return -1;
        }
        port = (uint16_t)p;
    }
    /* An IPv6 address needs brackets in HOST:PORT. */
    if (asprintf(out, strchr(host, ':') != NULL ? "[%s]:%u" : "%s:%u", host,
                 (unsigned)port) < 0) {
        *out = NULL;
        return -1;
    }
    return 0;
}

/* --listen, or --host/--port: the HTTP address, and transport http. */
static int apply_listen(const struct options *o, struct host_config *cfg)
{
    const char *listen = o->listen;
    char *joined = NULL;
    const char *colon = NULL;
    char *end = NULL;
    char *copy = NULL;
    long port = -1;
    int rc = -1;

    if ((o->host != NULL || o->port != NULL) &&
        host_port_listen(o, cfg->server.http.listen, &joined) < 0)
        goto out;
    if (joined != NULL)
        listen = joined;
    if (listen == NULL) {
        rc = 0;
        goto out;
    }
    colon = strrchr(listen, ':');
    port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (colon == NULL || colon == listen || colon[1] == '\0' || *end != '\0' ||
        port < 0 || port > 65535) {
        fprintf(stderr,
                "runloop-mcp: --listen '%s' is not HOST:PORT; e.g. "
                "--listen 127.0.0.1:8000\n",
                listen);
        goto out;
    }
    copy = strdup(listen);
    if (copy == NULL)
        goto out;
    free(cfg->server.http.listen);
    cfg->server.http.listen = copy;
    if (o->transport == NULL)
        cfg->server.transport = HOST_TRANSPORT_HTTP;
    rc = 0;
out:
    free(joined);
    return rc;
}

static int apply_overrides(const struct options *o, struct host_config *cfg)
{
    if (o->transport != NULL) {
        if (strcmp(o->transport, "stdio") == 0) {
            cfg->server.transport = HOST_TRANSPORT_STDIO;
        } else if (strcmp(o->transport, "http") == 0) {
            cfg->server.transport = HOST_TRANSPORT_HTTP;
        } else {
            fprintf(stderr,
                    "runloop-mcp: --transport '%s' is not known; use stdio or "
                    "http\n",
                    o->transport);
            return -1;
        }
    }
    if (apply_listen(o, cfg) < 0)
        return -1;
    if (o->log_level != NULL) {
        int lvl = log_level_parse(o->log_level);
        if (lvl < 0) {
            fprintf(stderr,
                    "runloop-mcp: --log-level '%s' is not known; use debug, "
                    "info, notice, warning or error\n",
                    o->log_level);
            return -1;
        }
        cfg->host.log_level = lvl;
    }
    return 0;
}

/* ---- --list-tools ------------------------------------------------------ */

static bool is_exposed(const struct registry *reg, const struct tool_entry *t)
{
    return registry_find_tool(reg, t->name) == t;
}

static int list_json(const struct registry *reg, bool all)
{
    cJSON *arr = cJSON_CreateArray();
    size_t n = all ? registry_all_tool_count(reg) : registry_tool_count(reg);
    char *text = NULL;
    size_t i = 0;

    if (arr == NULL)
        return -1;
    for (i = 0; i < n; i++) {
        const struct tool_entry *t =
            all ? registry_registered_tool((struct registry *)reg, i)
                : registry_tool_at(reg, i);
        cJSON *o = cJSON_CreateObject();
        if (o == NULL)
            goto fail;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "plugin", t->plugin_name);
        if (strcmp(t->name, t->original_name) != 0)
            cJSON_AddStringToObject(o, "original_name", t->original_name);
        cJSON_AddBoolToObject(o, "read_only", t->read_only);
        if (t->selected && t->toolset != 0)
            cJSON_AddStringToObject(
                o, "toolset",
                registry_toolsets(reg)->sets[t->toolset - 1].name);
        if (all)
            cJSON_AddBoolToObject(o, "exposed", is_exposed(reg, t));
        if (t->title != NULL)
            cJSON_AddStringToObject(o, "title", t->title);
        cJSON_AddStringToObject(o, "description", t->description);
        cJSON_AddItemToObject(o, "inputSchema",
                              cJSON_Duplicate(t->input_schema, true));
    }
    text = cJSON_Print(arr);
    if (text == NULL)
        goto fail;
    printf("%s\n", text);
    free(text);
    cJSON_Delete(arr);
    return 0;
fail:
    cJSON_Delete(arr);
    return -1;
}

static void list_table(const struct registry *reg, bool all)
{
    size_t n = all ? registry_all_tool_count(reg) : registry_tool_count(reg);
    int wname = 4;
    int wplug = 6;
    size_t i = 0;

    for (i = 0; i < n; i++) {
        const struct tool_entry *t =
            all ? registry_registered_tool((struct registry *)reg, i)
                : registry_tool_at(reg, i);
        if ((int)strlen(t->name) > wname)
            wname = (int)strlen(t->name);
        if ((int)strlen(t->plugin_name) > wplug)
            wplug = (int)strlen(t->plugin_name);
    }
    printf("%-*s  %-*s  %s%s\n", wname, "TOOL", wplug, "PLUGIN", "ACCESS",
           all ? "      EXPOSED" : "");
    for (i = 0; i < n; i++) {
        const struct tool_entry *t =
            all ? registry_registered_tool((struct registry *)reg, i)
                : registry_tool_at(reg, i);
        printf("%-*s  %-*s  %-10s", wname, t->name, wplug, t->plugin_name,
               t->read_only ? "read-only" : "read-write");
        if (all)
            printf("  %s", is_exposed(reg, t) ? "yes" : "no");
        if (strcmp(t->name, t->original_name) != 0)
            printf("  (alias of %s)", t->original_name);
        if (t->selected && t->toolset != 0)
            printf("  (toolset %s)",
                   registry_toolsets(reg)->sets[t->toolset - 1].name);
        printf("\n");
    }
}

/* ---- --check-config ---------------------------------------------------- */

static void print_check(const struct host_config *cfg, const struct loader *l,
                        const struct registry *reg, bool token_note)
{
    size_t i = 0;
    char *dir = loader_plugin_dir(cfg);

    printf("deployment: %s\n", cfg->path);
    printf("server:     %s, transport %s", cfg->server.name,
           config_transport_name(cfg->server.transport));
    if (cfg->server.transport == HOST_TRANSPORT_HTTP)
        printf(" on %s", cfg->server.http.listen);
    printf("\n");
    if (token_note)
        printf("auth token: from ${%s}, unset now: set it before serving on "
               "%s (a start without it is refused)\n",
               cfg->server.http.auth_token_env, cfg->server.http.listen);
    {
        char desc[512] = "";
        printf("backend:    %s\n", backend_describe(cfg, desc, sizeof(desc)));
    }
    if (cfg->server.transport == HOST_TRANSPORT_HTTP)
        printf("metrics:    GET /metrics, %s\n",
               cfg->server.http.metrics == HOST_METRICS_OFF ? "off"
               : cfg->server.http.metrics == HOST_METRICS_PUBLIC
                   ? "public"
                   : "behind the /mcp endpoint's auth");
    if (cfg->host.audit_log != NULL)
        printf("audit log:  %s (rotated at %llu bytes, %u kept)\n",
               cfg->host.audit_log, cfg->host.audit_max_bytes,
               cfg->host.audit_keep);
    printf("plugin dir: %s\n", dir ? dir : "?");
    printf("plugins:    %zu loaded", l->n_plugins);
    if (l->n_skipped > 0)
        printf(", %zu skipped", l->n_skipped);
    printf("\n");
    for (i = 0; i < l->n_plugins; i++) {
        const struct loaded_plugin *lp = l->plugins[i];
        printf("  %-16s %-10s ABI %u.%u  %s\n", lp->name,
               lp->desc.version ? lp->desc.version : "?", lp->desc.abi_major,
               lp->desc.abi_minor, lp->path);
    }
    printf("tools:      %zu exposed of %zu registered\n",
           registry_tool_count(reg), registry_all_tool_count(reg));
    if (registry_resource_count(reg) > 0 || registry_prompt_count(reg) > 0)
        printf("resources:  %zu, prompts: %zu\n", registry_resource_count(reg),
               registry_prompt_count(reg));
    printf("ok\n");
    free(dir);
}

/* ---- serving ----------------------------------------------------------- */

static void on_stop_signal(int sig)
{
    (void)sig;
    stdio_request_stop();
}

/* The transport's loop; returns when the client goes or a signal came. */
static int run_transport(const struct host_config *cfg,
                         struct mcp_dispatcher *d)
{
    struct sigaction sa;

    /* HTTP handles its own signals */
    if (cfg->server.transport == HOST_TRANSPORT_HTTP)
        return http_serve(d, cfg) == 0 ? 0 : EXIT_RUNTIME;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return stdio_serve(d) == 0 ? 0 : EXIT_RUNTIME;
}

/* The settings the transport would refuse at its start. */
static int serve_check(const struct host_config *cfg, char *err, size_t errlen)
{
    struct http_options opts;

    if (cfg->server.transport != HOST_TRANSPORT_HTTP)
        return 0;
    http_options_from_config(&opts, cfg);
    return http_options_check(&opts, err, errlen);
}

/*
 * --check-config refuses what a start would refuse, with one exception: a
 * token taken from an environment variable that is unset now (an image
 * build or CI checks the file without the secret). The settings are
 * checked again as if the token were set, and a note names the variable
 * a start will need. *note is set when that note applies.
 */
static int check_config_serve(const struct host_config *cfg, bool *note,
                              char *err, size_t errlen)
{
    struct http_options opts;
    const char *stand_in = "token-from-the-environment";

    *note = false;
    if (serve_check(cfg, err, errlen) == 0)
        return 0;
    if (cfg->server.http.auth_token != NULL ||
        cfg->server.http.auth_token_env == NULL)
        return -1;
    http_options_from_config(&opts, cfg);
    opts.auth_token = stand_in;
    if (http_options_check(&opts, err, errlen) != 0)
        return -1;
    *note = true;
    return 0;
}

/*
 * Serving did not start (the HTTP address is taken, say): stop the local
 * engine this start began, so that a refused start leaves none behind. An
 * engine that was running already is left alone, and so is one that
 * another host may be using by now: devboxd is shared by every host of the
 * state dir, and one may have attached since it started. The sign of that
 * is a devbox created since; a host that attached and created nothing yet
 * cannot be seen (backend.h), and finds the engine gone.
 */
static void stop_started_engine(const struct backend *b)
{
    int pid = backend_started_pid(b);
    int waited_ms = 0;
    char why[256] = "";

    if (pid <= 0)
        return;
    if (!backend_started_engine_unused(b, why, sizeof(why))) {
        log_msg(RLMCP_LOG_NOTICE, NULL,
                "leaving the local engine this start began running "
                "(devboxd pid %d): %s; stop it with `runloop-mcp engine stop`",
                pid, why);
        return;
    }
    log_msg(RLMCP_LOG_NOTICE, NULL,
            "stopping the local engine this start began (devboxd pid %d)", pid);
    if (kill(pid, SIGTERM) != 0)
        return;
    while (!backend_pid_gone(pid) && waited_ms < 30000) {
        struct timespec ts = {0, 50 * 1000000L};

        nanosleep(&ts, NULL);
        waited_ms += 50;
    }
    if (!backend_pid_gone(pid))
        log_msg(RLMCP_LOG_WARNING, NULL,
                "devboxd (pid %d) did not exit within 30 s; stop it with "
                "`runloop-mcp engine stop`",
                pid);
}

static int circuit_state(void *client)
{
    return rlclient_breaker_state(client);
}

/*
 * Serve dep (consumed: the dispatcher holds it, and a reload replaces it)
 * until the transport ends.
 */
static int serve(const struct host_config *cfg, struct deployment *dep)
{
    struct mcp_options opts;
    struct mcp_dispatcher *d = NULL;
    struct reloader *rl = NULL;
    struct backend *b = NULL;
    char *berr = NULL;
    char aerr[512] = "";
    bool started = false;
    int rc = EXIT_RUNTIME;

    reload_block_signal(); /* before any thread starts */
    if (cfg->host.audit_log != NULL &&
        audit_open(cfg->host.audit_log, cfg->host.audit_max_bytes,
                   cfg->host.audit_keep, aerr, sizeof(aerr)) != 0) {
        log_msg(RLMCP_LOG_ERROR, NULL, "%s", aerr);
        deployment_unref(dep);
        return EXIT_RUNTIME;
    }
    if (backend_open(cfg, &b, &berr) != 0) {
        log_msg(RLMCP_LOG_ERROR, NULL, "%s",
                berr ? berr : "no Runloop backend");
        free(berr);
        audit_close();
        deployment_unref(dep);
        return EXIT_RUNTIME;
    }
    log_msg(RLMCP_LOG_INFO, NULL, "%s", backend_description(b));
    memset(&opts, 0, sizeof(opts));
    opts.server_name = cfg->server.name;
    opts.server_version = RLMCP_VERSION;
    opts.instructions = cfg->server.instructions;
    opts.workers = cfg->host.workers;
    opts.default_timeout_ms = cfg->host.call_timeout_ms;
    d = mcp_create_deployment(&opts, dep);
    deployment_unref(dep); /* the dispatcher's now */
    if (d == NULL) {
        log_msg(RLMCP_LOG_ERROR, NULL,
                "cannot start the MCP dispatcher (out of memory or threads)");
        goto out;
    }
    mcp_set_rlclient(d, backend_client(b));
    metrics_set_circuit_source(circuit_state, backend_client(b));
    mcp_set_default_api_key(d, backend_api_key(b));
    /* Over HTTP each caller brings its key for a cloud backend. */
    mcp_set_key_required(d, cfg->server.transport == HOST_TRANSPORT_HTTP &&
                                !backend_is_local(b));
    tasks_init_key(cfg->server.http.state_secret, backend_state_dir(b));
    rl = reload_start(d, cfg);
    rc = run_transport(cfg, d);
    /* HTTP returns non-zero only when it could not start. */
    started = rc == 0 || cfg->server.transport != HOST_TRANSPORT_HTTP;
    /* Finish or cancel what is in flight before plugins shut down. */
    mcp_drain(d, 5000);
    reload_stop(rl);
out:
    mcp_destroy(d); /* the deployment served last, and its plugins, go */
    metrics_set_circuit_source(NULL, NULL);
    if (!started)
        stop_started_engine(b);
    backend_free(b); /* after the dispatcher: calls used its client */
    audit_close();   /* after the calls that write it */
    return rc;
}

/* ---- main -------------------------------------------------------------- */

static int load_config(const struct options *o, struct host_config *cfg)
{
    char err[1024] = "";
    char tried[2048] = "";
    char *path = NULL;
    int rc = -1;

    if (o->config != NULL)
        path = strdup(o->config);
    else
        path = find_config(tried, sizeof(tried));
    if (path == NULL) {
        fprintf(stderr,
                "runloop-mcp: error: no deployment file found (looked for %s); "
                "pass --config FILE or set RLMCP_CONFIG\n",
                tried);
        return -1;
    }
    if (config_load(path, cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "runloop-mcp: error: %s\n", err);
        goto out;
    }
    rc = 0;
out:
    free(path);
    return rc;
}

static int load_config_path(const char *path, struct host_config *cfg)
{
    struct options o;

    memset(&o, 0, sizeof(o));
    o.config = path;
    return load_config(&o, cfg);
}

#ifdef RLMCP_TSAN_LOG
/* ThreadSanitizer builds: where the reports go unless TSAN_OPTIONS says. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "log_path=" RLMCP_TSAN_LOG;
}
#endif

int main(int argc, char **argv)
{
    struct options o;
    struct host_config cfg;
    struct registry *reg = NULL;
    struct loader *ldr = NULL;
    struct deployment *dep = NULL;
    char err[1024] = "";
    bool token_note = false;
    int rc = EXIT_USAGE;

    memset(&o, 0, sizeof(o));
    memset(&cfg, 0, sizeof(cfg));
    signal(SIGPIPE, SIG_IGN);
    if (argc > 1 && strcmp(argv[1], "engine") == 0)
        return cli_engine_main(argc - 1, argv + 1, load_config_path);
    if (argc > 1 && strcmp(argv[1], "install-client") == 0)
        return cli_client_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "ssh") == 0)
        return cli_ssh_main(argc - 1, argv + 1, load_config_path);
    if (parse_args(argc, argv, &o) < 0)
        return EXIT_USAGE;
    if (load_config(&o, &cfg) < 0)
        return EXIT_USAGE;
    if (apply_overrides(&o, &cfg) < 0)
        goto out;
    /* Refuse a start before anything is started (the local engine), and
     * refuse the same settings in --check-config. */
    if (o.action == ACT_SERVE && serve_check(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "runloop-mcp: error: %s\n", err);
        goto out;
    }
    if (o.action == ACT_CHECK &&
        check_config_serve(&cfg, &token_note, err, sizeof(err)) != 0) {
        fprintf(stderr, "runloop-mcp: error: %s\n", err);
        goto out;
    }
    log_set_level(cfg.host.log_level);
    reg = registry_new();
    if (reg == NULL) {
        rc = EXIT_RUNTIME;
        goto out;
    }
    if (loader_load_all(&cfg, reg, services_table(), &ldr) < 0) {
        rc = EXIT_RUNTIME;
        goto out;
    }
    if (registry_select(reg, &cfg.tools, cfg.path,
                        cfg.host.on_plugin_error == HOST_PLUGIN_ERROR_SKIP,
                        cfg.host.call_timeout_ms, err, sizeof(err)) < 0) {
        fprintf(stderr, "runloop-mcp: error: %s\n", err);
        rc = EXIT_USAGE;
        goto out;
    }
    switch (o.action) {
    case ACT_LIST:
        if (o.json)
            rc = list_json(reg, o.all) == 0 ? 0 : EXIT_RUNTIME;
        else {
            list_table(reg, o.all);
            rc = 0;
        }
        break;
    case ACT_CHECK:
        print_check(&cfg, ldr, reg, token_note);
        rc = 0;
        break;
    default:
        /* The deployment owns the registry and the plugins from here. */
        dep = deployment_new(reg, ldr, cfg.host.call_timeout_ms);
        if (dep == NULL) {
            rc = EXIT_RUNTIME;
            break;
        }
        reg = NULL;
        ldr = NULL;
        rc = serve(&cfg, dep);
        break;
    }
out:
    fflush(stdout);
    loader_unload_all(ldr);
    registry_free(reg);
    config_free(&cfg);
    schema_cleanup(); /* the shared compiled-pattern cache */
    return rc;
}
