/*
 * config.h - the deployment file (YAML, e.g. conf/runloop-mcp.yaml) as parsed
 * values.
 *
 * config_load() reads and validates the whole file with libyaml: unknown
 * keys, wrong types and bad enum values are errors naming file:line:col and
 * the fix. ${VAR}, ${VAR:-default} and ${VAR:?message} are expanded in every
 * scalar. Names in tools.allow/exclude/aliases can only be checked against
 * the tools once the plugins are loaded: registry_select() does that with
 * the positions kept here. See docs/deployments.md.
 */
#ifndef RLMCP_HOST_CONFIG_H
#define RLMCP_HOST_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

enum host_transport { HOST_TRANSPORT_STDIO = 0, HOST_TRANSPORT_HTTP = 1 };
enum host_on_plugin_error {
    HOST_PLUGIN_ERROR_FAIL = 0,
    HOST_PLUGIN_ERROR_SKIP = 1
};
enum host_backend {
    HOST_BACKEND_AUTO = 0,
    HOST_BACKEND_CLOUD = 1,
    HOST_BACKEND_LOCAL = 2
};

/* Where a value was written: 1-based line and column. 0 when defaulted. */
struct config_pos {
    unsigned line;
    unsigned col;
};

struct config_name {
    char *name;
    struct config_pos pos;
};

struct config_param_alias {
    char *from; /* the parameter as the plugin registered it */
    char *to;   /* the parameter as clients see it */
    struct config_pos pos;
};

struct config_alias {
    char *from; /* the tool as the plugin registered it */
    char *to;   /* the tool as clients see it */
    struct config_param_alias *params;
    size_t n_params;
    struct config_pos pos;
};

/* GET /metrics: behind the same auth as /mcp, open, or not served. */
enum host_metrics {
    HOST_METRICS_PRIVATE = 0,
    HOST_METRICS_PUBLIC,
    HOST_METRICS_OFF
};

struct host_http_config {
    bool present;           /* an http: section was written */
    char *listen;           /* "127.0.0.1:8000" */
    char **allowed_origins; /* NULL-terminated; may be empty */
    size_t n_allowed_origins;
    char *auth_token;      /* secret: never logged; NULL when unset */
    char *auth_token_env;  /* the variable auth_token names ("${NAME...}"),
                              NULL when written literally or not at all */
    bool allow_query_key;  /* false */
    size_t max_body_bytes; /* 4 MiB */
    unsigned max_sessions; /* 64 */
    unsigned max_sessions_per_client; /* 0: by the bind (http.h) */
    unsigned session_idle_seconds;    /* 1800 */
    unsigned max_connections;         /* 256 */
    enum host_metrics metrics;        /* private */
    char *state_secret; /* signs 2026-07-28 requestState; replicas share
                           it. Secret: never logged; NULL: random */
    char *raw_json;     /* the http: map as JSON, NULL if absent;
                           holds secrets: never log it */
};

struct host_server_config {
    char *name;         /* "runloop-mcp" */
    char *instructions; /* NULL */
    enum host_transport transport;
    struct host_http_config http;
};

struct host_host_config {
    char *plugin_dir; /* NULL: the default search (loader.h) */
    struct config_pos plugin_dir_pos;
    enum host_on_plugin_error on_plugin_error;
    unsigned call_timeout_ms; /* 300000 */
    unsigned workers;         /* 8 */
    int log_level;            /* RLMCP_LOG_INFO */

    /* The audit log (audit.h); NULL: none. */
    char *audit_log;
    unsigned long long audit_max_bytes; /* 64 MiB; 0: never rotate */
    unsigned audit_keep;                /* 5 rotated files */
};

struct host_runloop_config {
    enum host_backend backend; /* auto */
    char *base_url;            /* NULL: backend's default */
    char *api_key;             /* secret: never logged; NULL when unset/empty */
    char *state_dir;           /* NULL */
    char *devboxd;             /* path of the devboxd binary, NULL */
};

/* Where each value of a plugin's config: section was written, by its path
 * as the schema validator names it ("config", "config.a", "config.a[0]"). */
struct config_mark {
    char *path;
    struct config_pos pos;
};

struct host_plugin_config {
    char *name;
    char *path;        /* NULL: <plugin_dir>/rlmcp_<name>.so */
    bool enabled;      /* true */
    char *config_json; /* the config: subtree as JSON, "{}" if absent */
    struct config_pos pos;
    struct config_pos path_pos;
    struct config_mark *config_marks;
    size_t n_config_marks;
};

/*
 * The position of the value a validator message is about: the mark whose
 * path is the longest that starts msg ("config.a.b: expected ..."), else
 * the plugin entry's own.
 */
struct config_pos config_mark_find(const struct host_plugin_config *p,
                                   const char *msg);

/* A tools.toolsets entry: a group of tools a session enables on demand. */
struct config_toolset {
    char *name;                /* [a-z0-9_]{1,64} */
    char *description;         /* what an agent needs to pick it */
    struct config_name *tools; /* tool names or plugin:NAME */
    size_t n_tools;
    struct config_pos pos;
};

/* At most this many toolsets: a session's enabled ones are a bit mask. */
#define CONFIG_MAX_TOOLSETS 64

struct host_tools_config {
    bool allow_set; /* false: every tool of the loaded plugins */
    struct config_name *allow;
    size_t n_allow;
    struct config_name *exclude;
    size_t n_exclude;
    bool read_only;
    struct config_alias *aliases;
    size_t n_aliases;
    /* tools.timeout_ms: a default time limit per tool (or plugin:NAME),
     * over the plugin's own and host.call_timeout_ms. */
    struct config_name *timeouts;
    unsigned *timeout_ms; /* parallel to timeouts */
    size_t n_timeouts;
    /* tools.toolsets: tools listed only once a session enables their
     * toolset (toolsets.h); none: every session sees every tool. */
    struct config_toolset *toolsets;
    size_t n_toolsets;
    /* tools.full_list_clients: clientInfo.name patterns (fnmatch) given
     * every tool at once (clients that do not re-list on list_changed). */
    char **full_list_clients; /* NULL-terminated; may be NULL */
    size_t n_full_list_clients;
};

struct host_config {
    char *path; /* the file, as given */
    struct host_server_config server;
    struct host_host_config host;
    struct host_runloop_config runloop;
    struct host_plugin_config *plugins;
    size_t n_plugins;
    struct host_tools_config tools;
};

/* Defaults only (no file): what an empty deployment means. */
int config_init_defaults(struct host_config *cfg);

/*
 * Read and validate a deployment file. On error returns -1 with
 * "file:line:col: what is wrong; the fix" in err (never a secret's value)
 * and leaves *cfg freed. 0 on success.
 */
int config_load(const char *path, struct host_config *cfg, char *err,
                size_t errlen);

/* Same from a buffer; name stands for the file in messages. */
int config_load_string(const char *name, const char *text, size_t len,
                       struct host_config *cfg, char *err, size_t errlen);

void config_free(struct host_config *cfg);

/* A plugin entry by name, or NULL. */
const struct host_plugin_config *
config_find_plugin(const struct host_config *cfg, const char *name);

const char *config_transport_name(enum host_transport t);
const char *config_backend_name(enum host_backend b);

/*
 * "did you mean" help: the candidate closest to word (edit distance <= 2),
 * or NULL. candidates is NULL-terminated.
 */
const char *config_suggest(const char *word, const char *const *candidates);

#endif
