/*
 * test_config.c - the deployment file parser: values, defaults, env
 * expansion, and every class of error with its file:line:col and fix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "config.h"
#include "log.h"

static char err[1024];

static int load(const char *yaml, struct host_config *cfg)
{
    err[0] = '\0';
    return config_load_string("t.yaml", yaml, strlen(yaml), cfg, err,
                              sizeof(err));
}

/* The yaml must fail with an error containing each of the texts. */
static void expect_error(const char *yaml, ...)
{
    struct host_config cfg;
    va_list ap;
    const char *want = NULL;

    if (load(yaml, &cfg) == 0) {
        config_free(&cfg);
        fail_msg("accepted:\n%s", yaml);
    }
    va_start(ap, yaml);
    while ((want = va_arg(ap, const char *)) != NULL) {
        if (strstr(err, want) == NULL) {
            va_end(ap);
            fail_msg("error '%s' lacks '%s'", err, want);
        }
    }
    va_end(ap);
}

static void test_minimal_defaults(void **state)
{
    struct host_config cfg;

    assert_int_equal(load("plugins:\n  - name: exec\n", &cfg), 0);
    assert_string_equal(cfg.path, "t.yaml");
    assert_string_equal(cfg.server.name, "runloop-mcp");
    assert_int_equal(cfg.server.transport, HOST_TRANSPORT_STDIO);
    assert_string_equal(cfg.server.http.listen, "127.0.0.1:8000");
    assert_false(cfg.server.http.present);
    assert_null(cfg.server.http.raw_json);
    assert_int_equal(cfg.host.on_plugin_error, HOST_PLUGIN_ERROR_FAIL);
    assert_int_equal(cfg.host.call_timeout_ms, 300000);
    assert_int_equal(cfg.host.log_level, RLMCP_LOG_INFO);
    assert_null(cfg.host.plugin_dir);
    assert_int_equal(cfg.runloop.backend, HOST_BACKEND_AUTO);
    assert_null(cfg.runloop.api_key);
    assert_int_equal(cfg.n_plugins, 1);
    assert_string_equal(cfg.plugins[0].name, "exec");
    assert_null(cfg.plugins[0].path);
    assert_true(cfg.plugins[0].enabled);
    assert_string_equal(cfg.plugins[0].config_json, "{}");
    assert_int_equal(cfg.plugins[0].pos.line, 2);
    assert_int_equal(cfg.plugins[0].pos.col, 5);
    assert_false(cfg.tools.allow_set);
    assert_false(cfg.tools.read_only);
    config_free(&cfg);
}

static void test_full_file(void **state)
{
    struct host_config cfg;
    const char *yaml =
        "server:\n"
        "  name: box\n"
        "  transport: http\n"
        "  instructions: use it well\n"
        "  http:\n"
        "    listen: \"[::1]:9000\"\n"
        "    allowed_origins: [https://a.example, https://b.example]\n"
        "    auth_token: tok\n"
        "    allow_query_key: yes\n"
        "    max_body_bytes: 65536\n"
        "    max_sessions: 3\n"
        "    max_sessions_per_client: 2\n"
        "    session_idle_seconds: 60\n"
        "    max_connections: 9\n"
        "host:\n"
        "  plugin_dir: /opt/p\n"
        "  on_plugin_error: skip\n"
        "  call_timeout_ms: 1500\n"
        "  workers: 3\n"
        "  log_level: debug\n"
        "runloop:\n"
        "  backend: local\n"
        "  base_url: http://127.0.0.1:4000\n"
        "  api_key: \"\"\n"
        "  state_dir: /var/lib/x\n"
        "  devboxd: /usr/bin/devboxd\n"
        "plugins:\n"
        "  - exec\n"
        "  - name: files\n"
        "    path: custom/files.so\n"
        "    enabled: false\n"
        "tools:\n"
        "  allow: [run, plugin:files]\n"
        "  exclude: [kill]\n"
        "  read_only: true\n"
        "  aliases:\n"
        "    execute_command: run_in_sandbox\n"
        "    write_file: {name: put_file, params: {file_path: path, contents: "
        "data}}\n"
        "    read_file: {params: {file_path: path}}\n";

    assert_int_equal(load(yaml, &cfg), 0);
    assert_string_equal(cfg.server.name, "box");
    assert_int_equal(cfg.server.transport, HOST_TRANSPORT_HTTP);
    assert_string_equal(cfg.server.instructions, "use it well");
    assert_true(cfg.server.http.present);
    assert_string_equal(cfg.server.http.listen, "[::1]:9000");
    assert_int_equal(cfg.server.http.n_allowed_origins, 2);
    assert_string_equal(cfg.server.http.allowed_origins[1],
                        "https://b.example");
    assert_null(cfg.server.http.allowed_origins[2]);
    assert_string_equal(cfg.server.http.auth_token, "tok");
    assert_true(cfg.server.http.allow_query_key);
    assert_int_equal(cfg.server.http.max_body_bytes, 65536);
    assert_int_equal(cfg.server.http.max_sessions, 3);
    assert_int_equal(cfg.server.http.max_sessions_per_client, 2);
    assert_int_equal(cfg.server.http.session_idle_seconds, 60);
    assert_int_equal(cfg.server.http.max_connections, 9);
    assert_non_null(strstr(cfg.server.http.raw_json, "\"max_sessions\":3"));
    assert_string_equal(cfg.host.plugin_dir, "/opt/p");
    assert_int_equal(cfg.host.on_plugin_error, HOST_PLUGIN_ERROR_SKIP);
    assert_int_equal(cfg.host.call_timeout_ms, 1500);
    assert_int_equal(cfg.host.workers, 3);
    assert_int_equal(cfg.host.log_level, RLMCP_LOG_DEBUG);
    assert_int_equal(cfg.runloop.backend, HOST_BACKEND_LOCAL);
    assert_string_equal(cfg.runloop.base_url, "http://127.0.0.1:4000");
    assert_null(cfg.runloop.api_key); /* empty counts as unset */
    assert_string_equal(cfg.runloop.state_dir, "/var/lib/x");
    assert_string_equal(cfg.runloop.devboxd, "/usr/bin/devboxd");
    assert_int_equal(cfg.n_plugins, 2);
    assert_string_equal(cfg.plugins[0].name, "exec");
    assert_string_equal(cfg.plugins[1].path, "custom/files.so");
    assert_false(cfg.plugins[1].enabled);
    assert_true(cfg.tools.allow_set);
    assert_int_equal(cfg.tools.n_allow, 2);
    assert_string_equal(cfg.tools.allow[1].name, "plugin:files");
    assert_int_equal(cfg.tools.allow[0].pos.line, 33);
    assert_int_equal(cfg.tools.allow[0].pos.col, 11);
    assert_string_equal(cfg.tools.exclude[0].name, "kill");
    assert_true(cfg.tools.read_only);
    assert_int_equal(cfg.tools.n_aliases, 3);
    assert_string_equal(cfg.tools.aliases[0].from, "execute_command");
    assert_string_equal(cfg.tools.aliases[0].to, "run_in_sandbox");
    assert_int_equal(cfg.tools.aliases[0].n_params, 0);
    assert_string_equal(cfg.tools.aliases[1].to, "put_file");
    assert_int_equal(cfg.tools.aliases[1].n_params, 2);
    assert_string_equal(cfg.tools.aliases[1].params[1].from, "contents");
    assert_string_equal(cfg.tools.aliases[1].params[1].to, "data");
    assert_string_equal(cfg.tools.aliases[2].to, "read_file"); /* params only */
    assert_int_equal(cfg.tools.aliases[2].n_params, 1);
    config_free(&cfg);
}

/* The keys test_full_file does not set, each into its own field, and
 * their bounds. */
static void test_remaining_keys(void **state)
{
    struct host_config cfg;
    const char *yaml = "server:\n"
                       "  http:\n"
                       "    state_secret: 0123456789abcdef0123456789abcdef\n"
                       "    metrics: public\n"
                       "    auth_token: \"\"\n"
                       "host:\n"
                       "  plugin_dir: /opt/p\n"
                       "  audit_log: \"\"\n"
                       "  audit_max_bytes: 1099511627776\n"
                       "  audit_keep: 7\n"
                       "plugins: [exec]\n";

    assert_int_equal(load(yaml, &cfg), 0);
    assert_string_equal(cfg.server.http.state_secret,
                        "0123456789abcdef0123456789abcdef");
    assert_int_equal(cfg.server.http.metrics, HOST_METRICS_PUBLIC);
    assert_null(cfg.server.http.auth_token); /* empty counts as unset */
    assert_null(cfg.host.audit_log);         /* likewise */
    assert_int_equal(cfg.host.audit_max_bytes, 1ULL << 40);
    assert_int_equal(cfg.host.audit_keep, 7);
    assert_int_equal(cfg.host.plugin_dir_pos.line, 7);
    assert_int_equal(cfg.host.plugin_dir_pos.col, 15);
    config_free(&cfg);

    assert_int_equal(load("host: {audit_log: /var/log/a.jsonl}\n"
                          "plugins: [exec]\n",
                          &cfg),
                     0);
    assert_string_equal(cfg.host.audit_log, "/var/log/a.jsonl");
    config_free(&cfg);

    expect_error("server: {http: {state_secret: short}}\nplugins: [exec]\n",
                 "t.yaml:1:31: 'server.http.state_secret' must be at least 32 "
                 "characters",
                 NULL);
    expect_error("server: {http: {metrics: loud}}\nplugins: [exec]\n",
                 "'server.http.metrics' is 'loud'; it must be one of: "
                 "private, public, off",
                 NULL);
    expect_error("host: {audit_keep: 101}\nplugins: [exec]\n",
                 "'host.audit_keep' is 101; it must be between 0 and 100",
                 NULL);
    expect_error("host: {audit_max_bytes: 1099511627777}\nplugins: [exec]\n",
                 "'host.audit_max_bytes' is 1099511627777; it must be "
                 "between 0 and 1099511627776",
                 NULL);
    expect_error("server: {http: {max_body_bytes: 1023}}\nplugins: [exec]\n",
                 "'server.http.max_body_bytes' is 1023; it must be between "
                 "1024 and 4294967296",
                 NULL);
}

static void test_unknown_keys(void **state)
{
    expect_error("plugins: []\ntools:\n  alow: [x]\n",
                 "t.yaml:3:3: unknown key 'alow' in 'tools'; did you mean "
                 "'allow'? (allowed: allow, exclude, read_only, aliases, "
                 "timeout_ms, toolsets, full_list_clients)",
                 NULL);
    expect_error("plugins: []\nsrever: {}\n",
                 "t.yaml:2:1: unknown key 'srever'", "did you mean 'server'?",
                 NULL);
    expect_error(
        "plugins: []\nhost:\n  zzzzzzzz: 1\n",
        "t.yaml:3:3: unknown key 'zzzzzzzz' in 'host' (allowed: plugin_dir,",
        NULL);
    expect_error("plugins:\n  - name: a\n    confg: {}\n",
                 "t.yaml:3:5: unknown key 'confg' in 'plugins[]'; did you mean "
                 "'config'?",
                 NULL);
    expect_error("plugins: []\nserver:\n  http:\n    listn: 1.2.3.4:5\n",
                 "t.yaml:4:5: unknown key 'listn' in 'server.http'", NULL);
    expect_error("plugins: []\ntools:\n  aliases:\n    a: {nam: b}\n",
                 "t.yaml:4:9: unknown key 'nam'", "did you mean 'name'?", NULL);
}

/* tools.timeout_ms: per-tool default time limits, checked with positions. */
static void test_tool_timeouts(void **state)
{
    struct host_config cfg;
    const char *yaml = "plugins: [exec]\n"
                       "tools:\n"
                       "  timeout_ms:\n"
                       "    execute_command: 600000\n"
                       "    plugin:exec: 1000\n";

    (void)state;
    assert_int_equal(load(yaml, &cfg), 0);
    assert_int_equal(cfg.tools.n_timeouts, 2);
    assert_string_equal(cfg.tools.timeouts[0].name, "execute_command");
    assert_int_equal(cfg.tools.timeouts[0].pos.line, 4);
    assert_int_equal(cfg.tools.timeout_ms[0], 600000);
    assert_string_equal(cfg.tools.timeouts[1].name, "plugin:exec");
    assert_int_equal(cfg.tools.timeout_ms[1], 1000);
    config_free(&cfg);

    expect_error("plugins: []\ntools:\n  timeout_ms:\n    get_devbox: 5\n",
                 "t.yaml:4:17: 'tools.timeout_ms.get_devbox' is 5; it must be "
                 "between 100 and 86400000",
                 NULL);
    expect_error("plugins: []\ntools:\n  timeout_ms:\n    get_devbox: soon\n",
                 "t.yaml:4:17: 'tools.timeout_ms.get_devbox' must be a whole "
                 "number",
                 NULL);
    expect_error("plugins: []\ntools:\n  timeout_ms: 5000\n",
                 "t.yaml:3:15: 'tools.timeout_ms' must be a mapping", NULL);
    expect_error("plugins: []\ntools:\n  timeout_ms:\n    \"\": 5000\n",
                 "t.yaml:4:5: empty tool name in 'tools.timeout_ms'", NULL);
    expect_error("plugins: []\ntools:\n  timeout_ms:\n    a: 500\n    a: 600\n",
                 "t.yaml:5:5: duplicate key 'a' in 'tools.timeout_ms'", NULL);
    expect_error("plugins: [exec]\ntools:\n  timeout_ms: {plugin:files: 500}\n",
                 "t.yaml:3:16: 'plugin:files' in 'tools.timeout_ms' names "
                 "plugin 'files'",
                 NULL);
}

/* tools.toolsets and tools.full_list_clients (toolsets.h). */
static void test_toolsets(void **state)
{
    struct host_config cfg;
    char yaml[8192];
    size_t used = 0;
    int i = 0;

    (void)state;
    assert_int_equal(load("plugins: [exec, files]\n"
                          "tools:\n"
                          "  toolsets:\n"
                          "    background:\n"
                          "      description: Background commands.\n"
                          "      tools: [execute_command_async]\n"
                          "    files: {description: Files., tools: "
                          "[plugin:files]}\n"
                          "  full_list_clients: [old-*, other]\n",
                          &cfg),
                     0);
    assert_int_equal(cfg.tools.n_toolsets, 2);
    assert_string_equal(cfg.tools.toolsets[0].name, "background");
    assert_string_equal(cfg.tools.toolsets[0].description,
                        "Background commands.");
    assert_int_equal(cfg.tools.toolsets[0].n_tools, 1);
    assert_int_equal(cfg.tools.toolsets[0].tools[0].pos.line, 6);
    assert_string_equal(cfg.tools.toolsets[1].tools[0].name, "plugin:files");
    assert_int_equal(cfg.tools.n_full_list_clients, 2);
    assert_string_equal(cfg.tools.full_list_clients[0], "old-*");
    config_free(&cfg);

    expect_error("plugins: []\ntools:\n  toolsets: [a]\n",
                 "t.yaml:3:13: 'tools.toolsets' must be a mapping", NULL);
    expect_error("plugins: []\ntools:\n  toolsets:\n    a: [x]\n",
                 "t.yaml:4:8: toolset 'a' must be {description: TEXT, tools: "
                 "[TOOL, plugin:NAME, ...]}, not a list",
                 NULL);
    expect_error("plugins: []\ntools:\n  toolsets:\n    a: {description: d, "
                 "tools: [x], tool: [y]}\n",
                 "unknown key 'tool' in 'tools.toolsets.a'",
                 "did you mean 'tools'?", NULL);
    expect_error("plugins: []\ntools:\n  toolsets:\n    a: {description: d, "
                 "tools: [plugin:exec]}\n",
                 "'plugin:exec' in 'tools.toolsets.a.tools' names plugin "
                 "'exec', which is not in 'plugins'",
                 NULL);
    /* At most 64 toolsets: a session's enabled ones are a 64-bit mask. */
    used = (size_t)snprintf(yaml, sizeof(yaml),
                            "plugins: []\ntools:\n  toolsets:\n");
    for (i = 0; i < CONFIG_MAX_TOOLSETS + 1; i++)
        used += (size_t)snprintf(yaml + used, sizeof(yaml) - used,
                                 "    s%d: {description: d, tools: [x]}\n", i);
    expect_error(
        yaml, "'tools.toolsets' has 65 toolsets; at most 64 are allowed", NULL);
}

static void test_wrong_types(void **state)
{
    expect_error("plugins: []\nhost:\n  workers: many\n",
                 "t.yaml:3:12: 'host.workers' must be a whole number",
                 "not 'many'", NULL);
    expect_error(
        "plugins: []\nhost:\n  workers: 0\n",
        "t.yaml:3:12: 'host.workers' is 0; it must be between 1 and 256", NULL);
    expect_error("plugins: []\nhost:\n  workers: -3\n", "whole number", NULL);
    expect_error("plugins: []\nserver: [a]\n",
                 "t.yaml:2:9: 'server' must be a mapping", "not a list", NULL);
    expect_error("plugins: []\ntools:\n  allow: run_code\n",
                 "t.yaml:3:10: 'tools.allow' must be a list", NULL);
    expect_error("plugins: []\ntools:\n  allow: [[a]]\n",
                 "entries of 'tools.allow' must be names", NULL);
    expect_error(
        "plugins: []\ntools:\n  read_only: maybe\n",
        "t.yaml:3:14: 'tools.read_only' must be true or false, not 'maybe'",
        NULL);
    expect_error("plugins: []\nserver: {name: [a]}\n",
                 "t.yaml:2:16: 'server.name' must be a string, not a list",
                 NULL);
    expect_error("plugins: []\nhost: {workers: {n: 1}}\n",
                 "t.yaml:2:17: 'host.workers' must be a whole number, not a "
                 "mapping",
                 NULL);
    expect_error("plugins: []\ntools: {read_only: [yes]}\n",
                 "t.yaml:2:20: 'tools.read_only' must be true or false, not a "
                 "list",
                 NULL);
    expect_error("plugins: {a: 1}\n", "t.yaml:1:10: 'plugins' must be a list",
                 NULL);
    expect_error("plugins:\n  - name: a\n    config: [1]\n",
                 "t.yaml:3:13: 'config' of plugin 'a' must be a mapping", NULL);
    expect_error("plugins:\n  - name: Bad-Name\n",
                 "t.yaml:2:11: plugin name 'Bad-Name' is not valid", NULL);
    expect_error("plugins:\n  - path: x.so\n",
                 "t.yaml:2:5: a plugins entry has no 'name'", NULL);
    expect_error("plugins: []\nserver:\n  http: {listen: nowhere}\n",
                 "'server.http.listen' must be HOST:PORT", NULL);
    expect_error("plugins: []\nrunloop: {base_url: ftp://x}\n",
                 "'runloop.base_url' must start with https://", NULL);
    expect_error("- a\n- b\n", "t.yaml:1:1: the deployment must be a mapping",
                 NULL);
    expect_error("plugins: []\ntools:\n  aliases:\n    a: [b]\n",
                 "t.yaml:4:8: alias of 'a' must be a new name or {name: NEW, "
                 "params: {OLD: NEW}}",
                 NULL);
    expect_error("plugins: []\ntools:\n  aliases: {a: x, b: x}\n",
                 "aliases 'a' and 'b' both rename to 'x'", NULL);
}

static void test_bad_enums(void **state)
{
    expect_error("plugins: []\nserver:\n  transport: htp\n",
                 "t.yaml:3:14: 'server.transport' is 'htp'; did you mean "
                 "'http'? (allowed: stdio, http)",
                 NULL);
    expect_error(
        "plugins: []\nhost:\n  on_plugin_error: ignore\n",
        "'host.on_plugin_error' is 'ignore'; it must be one of: fail, skip",
        NULL);
    expect_error("plugins: []\nrunloop:\n  backend: clod\n",
                 "did you mean 'cloud'?", NULL);
    expect_error("plugins: []\nhost:\n  log_level: loud\n",
                 "'host.log_level' is 'loud'", NULL);
}

static void test_env_expansion(void **state)
{
    struct host_config cfg;
    const char *yaml = "server:\n"
                       "  name: ${RLMCP_T_NAME}\n"
                       "  instructions: \"a ${RLMCP_T_UNSET} b $$HOME "
                       "${RLMCP_T_EMPTY:-dflt} ${RLMCP_T_NAME:-no}\"\n"
                       "host:\n"
                       "  workers: ${RLMCP_T_WORKERS:-4}\n"
                       "runloop:\n"
                       "  api_key: ${RLMCP_T_UNSET}\n"
                       "  base_url: ${RLMCP_T_URL:-https://api.runloop.ai}\n"
                       "plugins:\n"
                       "  - name: ${RLMCP_T_PLUGIN:-exec}\n";

    setenv("RLMCP_T_NAME", "envname", 1);
    setenv("RLMCP_T_EMPTY", "", 1);
    unsetenv("RLMCP_T_UNSET");
    unsetenv("RLMCP_T_WORKERS");
    unsetenv("RLMCP_T_URL");
    unsetenv("RLMCP_T_PLUGIN");
    assert_int_equal(load(yaml, &cfg), 0);
    assert_string_equal(cfg.server.name, "envname");
    assert_string_equal(cfg.server.instructions, "a  b $HOME dflt envname");
    assert_int_equal(cfg.host.workers, 4);
    assert_null(cfg.runloop.api_key);
    assert_string_equal(cfg.runloop.base_url, "https://api.runloop.ai");
    assert_string_equal(cfg.plugins[0].name, "exec");
    config_free(&cfg);

    setenv("RLMCP_T_WORKERS", "7", 1);
    assert_int_equal(load(yaml, &cfg), 0);
    assert_int_equal(cfg.host.workers, 7);
    config_free(&cfg);

    setenv("RLMCP_T_WORKERS", "seven", 1);
    expect_error(yaml, "t.yaml:5:12: 'host.workers' must be a whole number",
                 NULL);
    unsetenv("RLMCP_T_WORKERS");

    expect_error("plugins: []\nrunloop:\n  api_key: ${RLMCP_T_UNSET:?export "
                 "your Runloop key}\n",
                 "t.yaml:3:12: environment variable RLMCP_T_UNSET is not set: "
                 "export your Runloop key",
                 NULL);
    expect_error("plugins: []\nserver: {name: \"${RLMCP_T_NAME\"}\n",
                 "unterminated '${'", NULL);
    expect_error("plugins: []\nserver: {name: \"${1X}\"}\n",
                 "bad environment reference '${1X}'", NULL);
    expect_error("plugins: []\nserver: {name: \"${X:+y}\"}\n",
                 "bad environment reference", NULL);
}

static void test_yaml_syntax(void **state)
{
    expect_error("plugins:\n  - name: a\n    config: {x: [1, 2}\n",
                 "t.yaml:3:", "YAML syntax error", NULL);
    expect_error("plugins: []\nserver:\n  name: a\n   transport: stdio\n",
                 "t.yaml:4:", "YAML syntax error", NULL);
    expect_error("plugins: []\n---\nplugins: []\n", "a second YAML document",
                 NULL);
}

static void test_duplicates(void **state)
{
    expect_error("plugins:\n  - name: exec\n  - files\n  - name: exec\n",
                 "t.yaml:4:5: plugin 'exec' is listed twice (first at line 2)",
                 NULL);
    expect_error(
        "plugins: []\nhost:\n  workers: 1\n  workers: 2\n",
        "t.yaml:4:3: duplicate key 'workers' in 'host' (first at line 3)",
        NULL);
}

static void test_empty_and_missing(void **state)
{
    expect_error("", "t.yaml:1:1: the deployment is empty", NULL);
    expect_error("# only a comment\n", "the deployment is empty", NULL);
    expect_error("server: {name: x}\n", "no 'plugins' list", NULL);
    expect_error("plugins: []\ntools:\n  allow: [plugin:nope]\n",
                 "t.yaml:3:11: 'plugin:nope' in 'tools.allow' names plugin "
                 "'nope', which is not in 'plugins'",
                 NULL);
}

static void test_plugin_config_json(void **state)
{
    struct host_config cfg;
    cJSON *j = NULL;
    const char *yaml = "plugins:\n"
                       "  - name: exec\n"
                       "    config:\n"
                       "      max_output_bytes: 65536\n"
                       "      ratio: 0.5\n"
                       "      quoted: \"123\"\n"
                       "      on: true\n"
                       "      nothing: ~\n"
                       "      port: ${RLMCP_T_PORT:-8080}\n"
                       "      langs:\n"
                       "        python: {cmd: [python3, -c]}\n"
                       "      list: [a, 1, false]\n"
                       "  - name: files\n";

    assert_int_equal(load(yaml, &cfg), 0);
    assert_string_equal(cfg.plugins[1].config_json, "{}");
    j = cJSON_Parse(cfg.plugins[0].config_json);
    assert_non_null(j);
    assert_int_equal(cJSON_GetObjectItem(j, "max_output_bytes")->valueint,
                     65536);
    assert_true(cJSON_GetObjectItem(j, "ratio")->valuedouble == 0.5);
    assert_true(cJSON_IsString(cJSON_GetObjectItem(j, "quoted")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "on")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "nothing")));
    assert_int_equal(cJSON_GetObjectItem(j, "port")->valueint, 8080);
    assert_string_equal(
        cJSON_GetArrayItem(
            cJSON_GetObjectItem(
                cJSON_GetObjectItem(cJSON_GetObjectItem(j, "langs"), "python"),
                "cmd"),
            1)
            ->valuestring,
        "-c");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "list")), 3);
    assert_true(
        cJSON_IsFalse(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "list"), 2)));
    cJSON_Delete(j);
    config_free(&cfg);

    expect_error("plugins:\n  - name: a\n    config:\n      k: 1\n      k: 2\n",
                 "t.yaml:5:7: duplicate key 'k' in 'config'", NULL);
}

static void test_alias_bombs(void **state)
{
    char yaml[4096];
    size_t used = 0;
    int i = 0;
    int j = 0;

    /* 10^9 values from a few hundred bytes: refused, quickly. */
    used += (size_t)snprintf(yaml + used, sizeof(yaml) - used,
                             "plugins:\n  - name: a\n    config:\n      l0: "
                             "&l0 [x,x,x,x,x,x,x,x,x,x]\n");
    for (i = 1; i < 10; i++) {
        used += (size_t)snprintf(yaml + used, sizeof(yaml) - used,
                                 "      l%d: &l%d [", i, i);
        for (j = 0; j < 10; j++)
            used += (size_t)snprintf(yaml + used, sizeof(yaml) - used, "%s*l%d",
                                     j ? "," : "", i - 1);
        used += (size_t)snprintf(yaml + used, sizeof(yaml) - used, "]\n");
    }
    expect_error(yaml,
                 "'config' expands to more than 100000 values (YAML aliases?)",
                 NULL);
    /* A node containing an alias to itself. */
    expect_error("plugins:\n  - name: a\n    config: &x {k: [*x]}\n",
                 "'config' is nested more than 64 levels deep", NULL);
}

static void test_secrets_never_printed(void **state)
{
    expect_error(
        "runloop:\n  api_key: sekrit-123\n  backend: bogus\nplugins: []\n",
        "'runloop.backend' is 'bogus'", NULL);
    assert_null(strstr(err, "sekrit"));
    expect_error("runloop:\n  api_key: [sekrit-123]\nplugins: []\n",
                 "'runloop.api_key' must be a string", NULL);
    assert_null(strstr(err, "sekrit"));
    expect_error(
        "server:\n  http:\n    auth_token: {v: sekrit-123}\nplugins: []\n",
        "'server.http.auth_token' must be a string", NULL);
    assert_null(strstr(err, "sekrit"));
}

static void test_missing_file(void **state)
{
    struct host_config cfg;

    assert_int_equal(config_load("/nonexistent/x.yaml", &cfg, err, sizeof(err)),
                     -1);
    assert_non_null(
        strstr(err, "/nonexistent/x.yaml: cannot open the deployment file"));
    assert_non_null(strstr(err, "--config"));
}

static void test_suggest(void **state)
{
    static const char *const names[] = {"run_code", "execute_command", NULL};

    assert_string_equal(config_suggest("run_cod", names), "run_code");
    assert_string_equal(config_suggest("EXECUTE_COMMAND", names),
                        "execute_command");
    assert_null(config_suggest("completely_else", names));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_defaults),
        cmocka_unit_test(test_full_file),
        cmocka_unit_test(test_remaining_keys),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_tool_timeouts),
        cmocka_unit_test(test_bad_enums),
        cmocka_unit_test(test_env_expansion),
        cmocka_unit_test(test_yaml_syntax),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_empty_and_missing),
        cmocka_unit_test(test_plugin_config_json),
        cmocka_unit_test(test_alias_bombs),
        cmocka_unit_test(test_secrets_never_printed),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_toolsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
