/*
 * test_registry.c - registration checks and the deployment's selection:
 * precedence, plugin:NAME, aliases (tools and parameters), sorting,
 * list_json, timeouts, and the errors for unknown names.
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
#include "deadline.h"
#include "log.h"
#include "registry.h"

static char plugin_a_tag, plugin_b_tag;
#define PA ((struct loaded_plugin *)&plugin_a_tag)
#define PB ((struct loaded_plugin *)&plugin_b_tag)

static char err[1024];
static int freed;

static int handler(rlmcp_call *call, const char *a, size_t n, void *u)
{
    return RLMCP_OK;
}

static void count_free(void *p)
{
    freed++;
}

static const char schema[] =
    "{\"type\":\"object\",\"properties\":{\"file_path\":{\"type\":\"string\"},"
    "\"contents\":{\"type\":\"string\"},\"mode\":{\"type\":\"string\"}},"
    "\"required\":[\"file_path\",\"contents\"]}";

static int add(struct registry *reg, struct loaded_plugin *p,
               const char *plugin, const char *name, const char *annotations)
{
    struct rlmcp_tool_def d = RLMCP_TOOL_DEF_INIT;

    d.name = name;
    d.description = "desc";
    d.input_schema_json = schema;
    d.annotations_json = annotations;
    d.handler = handler;
    d.user_data_free = count_free;
    err[0] = '\0';
    return registry_add_tool(reg, p, plugin, &d, err, sizeof(err));
}

/* A registry with tools from two plugins:
 *   a: write_file, read_file (ro), execute_command, kill
 *   b: zeta (ro), alpha */
static struct registry *sample(void)
{
    struct registry *reg = registry_new();

    assert_non_null(reg);
    assert_int_equal(add(reg, PA, "a", "write_file", NULL), RLMCP_OK);
    assert_int_equal(add(reg, PA, "a", "read_file", "{\"readOnlyHint\":true}"),
                     RLMCP_OK);
    assert_int_equal(
        add(reg, PA, "a", "execute_command", "{\"readOnlyHint\":false}"),
        RLMCP_OK);
    assert_int_equal(add(reg, PA, "a", "kill", NULL), RLMCP_OK);
    assert_int_equal(
        add(reg, PB, "b", "zeta", "{\"readOnlyHint\":true,\"title\":\"Z\"}"),
        RLMCP_OK);
    assert_int_equal(add(reg, PB, "b", "alpha", NULL), RLMCP_OK);
    return reg;
}

/* Apply a tools: section; returns registry_select's result. */
static int select_yaml(struct registry *reg, const char *tools_yaml,
                       bool lenient)
{
    struct host_config cfg;
    char yaml[2048];
    int rc = 0;

    snprintf(yaml, sizeof(yaml), "plugins: [a, b]\n%s", tools_yaml);
    if (config_load_string("d.yaml", yaml, strlen(yaml), &cfg, err,
                           sizeof(err)) != 0)
        fail_msg("bad test yaml: %s", err);
    err[0] = '\0';
    rc = registry_select(reg, &cfg.tools, cfg.path, lenient, 5000, err,
                         sizeof(err));
    config_free(&cfg);
    return rc;
}

/* Exposed names joined with ',' in order. */
static const char *names(const struct registry *reg)
{
    static char buf[512];
    size_t i = 0;

    buf[0] = '\0';
    for (i = 0; i < registry_tool_count(reg); i++) {
        if (i)
            strcat(buf, ",");
        strcat(buf, registry_tool_at(reg, i)->name);
    }
    return buf;
}

static void test_all_sorted(void **state)
{
    struct registry *reg = sample();
    const struct tool_entry *t = NULL;

    assert_int_equal(
        registry_select(reg, NULL, "d.yaml", false, 5000, err, sizeof(err)), 0);
    assert_true(registry_frozen(reg));
    assert_string_equal(names(reg),
                        "alpha,execute_command,kill,read_file,write_file,zeta");
    t = registry_find_tool(reg, "zeta");
    assert_non_null(t);
    assert_string_equal(t->plugin_name, "b");
    assert_true(t->read_only);
    assert_int_equal(t->timeout_ms, 5000);
    assert_null(registry_find_tool(reg, "nope"));
    assert_true(registry_find_tool(reg, "alpha") == registry_tool_at(reg, 0));
    /* list_json: name, title, description, inputSchema, annotations */
    {
        cJSON *j = cJSON_Parse(t->list_json);
        assert_non_null(j);
        assert_string_equal(cJSON_GetObjectItem(j, "name")->valuestring,
                            "zeta");
        assert_string_equal(cJSON_GetObjectItem(j, "description")->valuestring,
                            "desc");
        assert_true(cJSON_IsObject(cJSON_GetObjectItem(j, "inputSchema")));
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(
            cJSON_GetObjectItem(j, "annotations"), "readOnlyHint")));
        assert_null(cJSON_GetObjectItem(j, "outputSchema"));
        cJSON_Delete(j);
    }
    /* Frozen: no more registrations. */
    assert_int_equal(add(reg, PA, "a", "late", NULL), RLMCP_ESTATE);
    registry_free(reg);
}

static void test_allow_exclude_read_only(void **state)
{
    struct registry *reg = sample();

    assert_int_equal(
        select_yaml(reg,
                    "tools:\n  allow: [kill, zeta, alpha]\n  exclude: [kill]\n",
                    false),
        0);
    assert_string_equal(names(reg), "alpha,zeta"); /* exclude beats allow */
    assert_int_equal(registry_all_tool_count(reg), 6);
    registry_free(reg);

    reg = sample();
    assert_int_equal(
        select_yaml(
            reg,
            "tools:\n  allow: [kill, zeta, read_file]\n  read_only: true\n",
            false),
        0);
    assert_string_equal(names(reg),
                        "read_file,zeta"); /* read_only beats allow */
    registry_free(reg);

    reg = sample();
    assert_int_equal(
        select_yaml(reg, "tools:\n  read_only: true\n  exclude: [zeta]\n",
                    false),
        0);
    assert_string_equal(names(reg), "read_file");
    registry_free(reg);

    reg = sample();
    assert_int_equal(
        select_yaml(reg, "tools:\n  allow: [plugin:b, kill]\n", false), 0);
    assert_string_equal(names(reg), "alpha,kill,zeta");
    registry_free(reg);

    reg = sample();
    assert_int_equal(select_yaml(reg, "tools:\n  exclude: [plugin:a]\n", false),
                     0);
    assert_string_equal(names(reg), "alpha,zeta");
    registry_free(reg);

    reg = sample();
    assert_int_equal(select_yaml(reg, "tools:\n  allow: []\n", false), 0);
    assert_string_equal(names(reg), "");
    registry_free(reg);
}

static void test_aliases(void **state)
{
    struct registry *reg = sample();
    const struct tool_entry *t = NULL;
    cJSON *j = NULL;
    const char *yaml = "tools:\n"
                       "  allow: [run_in_sandbox, write_file, kill]\n"
                       "  aliases:\n"
                       "    execute_command: run_in_sandbox\n"
                       "    write_file: {name: put_file, params: {file_path: "
                       "path, contents: data}}\n"
                       "    kill: {params: {mode: signal}}\n";

    assert_int_equal(select_yaml(reg, yaml, false), 0);
    assert_string_equal(names(reg), "kill,put_file,run_in_sandbox");
    assert_null(registry_find_tool(reg, "execute_command"));
    t = registry_find_tool(reg, "run_in_sandbox");
    assert_non_null(t);
    assert_string_equal(t->original_name, "execute_command");
    assert_int_equal(t->n_param_aliases, 0);

    t = registry_find_tool(reg, "put_file");
    assert_non_null(t);
    assert_string_equal(t->original_name, "write_file");
    assert_int_equal(t->n_param_aliases, 2);
    assert_string_equal(t->param_aliases[0].exposed, "path");
    assert_string_equal(t->param_aliases[0].original, "file_path");
    assert_string_equal(t->param_aliases[1].exposed, "data");
    /* The exposed schema: renamed in place, order kept, required too. */
    j = cJSON_Parse(t->list_json);
    assert_non_null(j);
    {
        cJSON *props = cJSON_GetObjectItem(
            cJSON_GetObjectItem(j, "inputSchema"), "properties");
        cJSON *req = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "inputSchema"),
                                         "required");
        assert_string_equal(props->child->string, "path");
        assert_string_equal(props->child->next->string, "data");
        assert_string_equal(props->child->next->next->string, "mode");
        assert_null(cJSON_GetObjectItem(props, "file_path"));
        assert_string_equal(cJSON_GetArrayItem(req, 0)->valuestring, "path");
        assert_string_equal(cJSON_GetArrayItem(req, 1)->valuestring, "data");
    }
    assert_string_equal(cJSON_GetObjectItem(j, "name")->valuestring,
                        "put_file");
    cJSON_Delete(j);

    t = registry_find_tool(reg, "kill"); /* params only: name unchanged */
    assert_non_null(t);
    assert_int_equal(t->n_param_aliases, 1);
    assert_non_null(cJSON_GetObjectItem(
        cJSON_GetObjectItem(t->input_schema, "properties"), "signal"));
    registry_free(reg);
}

static void test_selection_errors(void **state)
{
    struct registry *reg = sample();

    assert_int_equal(select_yaml(reg, "tools:\n  allow: [kil]\n", false), -1);
    assert_string_equal(err,
                        "d.yaml:3:11: unknown tool 'kil' in 'tools.allow': no "
                        "loaded plugin registers it; did you mean 'kill'?");
    registry_free(reg);

    reg = sample();
    assert_int_equal(
        select_yaml(reg, "tools:\n  exclude: [nothing_like_it]\n", false), -1);
    assert_non_null(strstr(
        err, "d.yaml:3:13: unknown tool 'nothing_like_it' in 'tools.exclude'"));
    assert_non_null(strstr(err, "--list-tools --all"));
    registry_free(reg);

    reg = sample();
    assert_int_equal(
        select_yaml(reg, "tools:\n  aliases:\n    exec_cmd: x\n", false), -1);
    assert_non_null(
        strstr(err, "d.yaml:4:5: alias for unknown tool 'exec_cmd'"));
    registry_free(reg);

    reg = sample();
    assert_int_equal(
        select_yaml(reg, "tools:\n  aliases:\n    kill: {params: {pid: p}}\n",
                    false),
        -1);
    assert_non_null(strstr(
        err, "d.yaml:4:21: tool 'kill' has no parameter 'pid' to rename"));
    registry_free(reg);

    reg = sample();
    assert_int_equal(
        select_yaml(
            reg, "tools:\n  aliases:\n    kill: {params: {mode: contents}}\n",
            false),
        -1);
    assert_non_null(
        strstr(err, "tool 'kill' already has a parameter 'contents'"));
    registry_free(reg);

    reg = sample();
    assert_int_equal(
        select_yaml(reg, "tools:\n  aliases:\n    kill: alpha\n", false), -1);
    assert_non_null(
        strstr(err, "d.yaml:4:5: two tools would both be called 'alpha'"));
    registry_free(reg);

    /* ... unless the clash is excluded. */
    reg = sample();
    assert_int_equal(
        select_yaml(reg,
                    "tools:\n  exclude: [alpha]\n  aliases:\n    kill: alpha\n",
                    false),
        0);
    assert_string_equal(names(reg),
                        "alpha,execute_command,read_file,write_file,zeta");
    assert_string_equal(registry_find_tool(reg, "alpha")->original_name,
                        "kill");
    registry_free(reg);

    reg = sample();
    assert_int_equal(
        select_yaml(reg, "tools:\n  aliases:\n    kill: \"bad name\"\n", false),
        -1);
    assert_non_null(strstr(
        err, "alias 'bad name' for tool 'kill' is not a valid tool name"));
    registry_free(reg);

    /* Lenient (on_plugin_error: skip): unknown names are warnings. */
    reg = sample();
    assert_int_equal(select_yaml(reg,
                                 "tools:\n  allow: [kill, "
                                 "from_skipped_plugin]\n  aliases: {gone: x}\n",
                                 true),
                     0);
    assert_string_equal(names(reg), "kill");
    registry_free(reg);
}

/* tools.timeout_ms over the def's timeout over the host default. */
static void test_tool_timeouts(void **state)
{
    struct registry *reg = registry_new();
    struct rlmcp_tool_def d = RLMCP_TOOL_DEF_INIT;

    (void)state;
    assert_non_null(reg);
    d.description = "desc";
    d.input_schema_json = schema;
    d.handler = handler;
    d.timeout_ms = 42000; /* the plugin's own */
    d.name = "own";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_OK);
    d.name = "own_overridden";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_OK);
    d.timeout_ms = 0;
    d.name = "plain";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_OK);
    d.name = "by_plugin";
    assert_int_equal(registry_add_tool(reg, PB, "b", &d, err, sizeof(err)),
                     RLMCP_OK);
    d.name = "by_name";
    assert_int_equal(registry_add_tool(reg, PB, "b", &d, err, sizeof(err)),
                     RLMCP_OK);
    assert_int_equal(
        select_yaml(reg,
                    "tools:\n  aliases: {by_name: renamed}\n  timeout_ms:\n"
                    "    own_overridden: 1500\n    plugin:b: 2500\n"
                    "    renamed: 3500\n",
                    false),
        0);
    assert_int_equal(registry_find_tool(reg, "own")->timeout_ms, 42000);
    assert_int_equal(registry_find_tool(reg, "own_overridden")->timeout_ms,
                     1500);
    assert_int_equal(registry_find_tool(reg, "plain")->timeout_ms, 5000);
    assert_int_equal(registry_find_tool(reg, "by_plugin")->timeout_ms, 2500);
    /* By its alias; a tool's own entry wins over its plugin's. */
    assert_int_equal(registry_find_tool(reg, "renamed")->timeout_ms, 3500);
    registry_free(reg);

    reg = sample();
    assert_int_equal(
        select_yaml(reg, "tools:\n  timeout_ms: {kil: 1000}\n", false), -1);
    assert_non_null(strstr(err, "d.yaml:3:16: unknown tool 'kil' in "
                                "'tools.timeout_ms'"));
    assert_non_null(strstr(err, "did you mean 'kill'?"));
    registry_free(reg);
}

/* The argument that sets a call's time limit comes from the declaration. */
static void test_timeout_arg(void **state)
{
    struct registry *reg = registry_new();
    struct rlmcp_tool_def d = RLMCP_TOOL_DEF_INIT;
    static const char with_wait[] =
        "{\"type\":\"object\",\"properties\":{\"wait_s\":{\"type\":"
        "\"integer\"},\"timeout_seconds\":{\"type\":\"integer\"},"
        "\"label\":{\"type\":\"string\"}}}";
    static const char args[] = "{\"wait_s\":2,\"timeout_seconds\":7}";

    (void)state;
    assert_non_null(reg);
    d.description = "desc";
    d.handler = handler;
    d.input_schema_json = with_wait;
    d.name = "declared";
    d.timeout_arg = "wait_s";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_OK);
    d.name = "none";
    d.timeout_arg = "";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_OK);
    /* A def from before the field: timeout_seconds when the schema has it. */
    d.name = "old";
    d.timeout_arg = NULL;
    d.struct_size = offsetof(struct rlmcp_tool_def, timeout_arg);
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_OK);
    d.name = "old_no_arg";
    d.input_schema_json = schema;
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_OK);
    d.struct_size = sizeof(d);
    d.name = "bad";
    d.input_schema_json = with_wait;
    d.timeout_arg = "label";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_EINVAL);
    assert_non_null(strstr(err, "tool 'bad': timeout_arg 'label' is not an "
                                "\"integer\" or \"number\" property"));
    d.timeout_arg = "missing";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_EINVAL);
    assert_int_equal(
        registry_select(reg, NULL, "d.yaml", false, 5000, err, sizeof(err)), 0);

    assert_string_equal(registry_find_tool(reg, "declared")->timeout_arg,
                        "wait_s");
    assert_null(registry_find_tool(reg, "none")->timeout_arg);
    assert_string_equal(registry_find_tool(reg, "old")->timeout_arg,
                        "timeout_seconds");
    assert_null(registry_find_tool(reg, "old_no_arg")->timeout_arg);
    /* The argument's time, and the clean-up after it. */
    assert_int_equal(deadline_call_ms(5000, "wait_s", args, strlen(args)),
                     2000 + DEADLINE_CLEANUP_MS);
    assert_int_equal(
        deadline_call_ms(5000, "timeout_seconds", args, strlen(args)),
        7000 + DEADLINE_CLEANUP_MS);
    assert_int_equal(deadline_call_ms(5000, NULL, args, strlen(args)), 5000);
    assert_int_equal(deadline_call_ms(5000, "wait_s", "{\"wait_s\":0}", 12),
                     5000);
    registry_free(reg);
}

static void test_bad_registrations(void **state)
{
    struct registry *reg = registry_new();
    struct rlmcp_tool_def d = RLMCP_TOOL_DEF_INIT;
    char longname[200];
    struct {
        struct rlmcp_tool_def d;
        uint32_t extra[4];
    } big;

    assert_int_equal(add(reg, PA, "a", "", NULL), RLMCP_EINVAL);
    assert_int_equal(add(reg, PA, "a", "has space", NULL), RLMCP_EINVAL);
    assert_non_null(strstr(err, "tool name 'has space' is not valid"));
    memset(longname, 'x', 129);
    longname[129] = '\0';
    assert_int_equal(add(reg, PA, "a", longname, NULL), RLMCP_EINVAL);
    longname[128] = '\0';
    assert_int_equal(add(reg, PA, "a", longname, NULL), RLMCP_OK);
    assert_int_equal(add(reg, PA, "a", "ok.name-1_A", NULL), RLMCP_OK);
    assert_int_equal(add(reg, PB, "b", "ok.name-1_A", NULL), RLMCP_EEXIST);
    assert_non_null(strstr(err, "already registered by plugin 'a'"));
    assert_int_equal(add(reg, PA, "a", "t1", "[]"), RLMCP_EINVAL);
    assert_non_null(strstr(err, "annotations must be a JSON object"));
    assert_int_equal(add(reg, PA, "a", "t1", "{\"readOnlyHint\":\"yes\"}"),
                     RLMCP_EINVAL);
    assert_non_null(
        strstr(err, "annotations.readOnlyHint must be true or false"));
    assert_int_equal(add(reg, PA, "a", "t1", "{not json"), RLMCP_EINVAL);

    d.name = "s";
    d.handler = handler;
    d.input_schema_json = schema;
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_EINVAL);
    assert_non_null(strstr(err, "has no description"));
    d.description = "x";
    d.handler = NULL;
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_EINVAL);
    d.handler = handler;
    d.input_schema_json = "{\"type\":\"string\"}";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_EINVAL);
    assert_non_null(
        strstr(err, "tool 's' input schema must have \"type\": \"object\""));
    d.input_schema_json = "[1]";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_EINVAL);
    d.input_schema_json = "{\"type\":\"object\",\"required\":\"x\"}";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_EINVAL);
    d.input_schema_json = NULL;
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_EINVAL);
    d.input_schema_json = schema;
    d.output_schema_json = "{\"type\":\"array\"}";
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_EINVAL);
    assert_non_null(strstr(err, "output schema"));
    d.output_schema_json = NULL;

    /* Sizes: smaller than 1.0 is refused; larger is fine if the tail is 0. */
    d.struct_size = offsetof(struct rlmcp_tool_def, handler);
    assert_int_equal(registry_add_tool(reg, PA, "a", &d, err, sizeof(err)),
                     RLMCP_EVERSION);
    assert_non_null(strstr(err, "smaller than 88, the least this host takes"));
    memset(&big, 0, sizeof(big));
    big.d = d;
    big.d.struct_size = sizeof(big);
    big.d.name = "future_ok";
    assert_int_equal(registry_add_tool(reg, PA, "a", &big.d, err, sizeof(err)),
                     RLMCP_OK);
    big.d.name = "future_bad";
    big.extra[3] = 1;
    assert_int_equal(registry_add_tool(reg, PA, "a", &big.d, err, sizeof(err)),
                     RLMCP_EVERSION);
    assert_non_null(strstr(err, "fields this host does not know"));
    assert_int_equal(registry_add_tool(reg, PA, "a", NULL, err, sizeof(err)),
                     RLMCP_EINVAL);
    assert_int_equal(registry_all_tool_count(reg), 3);
    registry_free(reg);
}

static int res_read(rlmcp_call *c, const char *uri, void *u)
{
    return RLMCP_OK;
}

static int prompt_get(rlmcp_call *c, const char *a, size_t n, void *u)
{
    return RLMCP_OK;
}

static void test_resources_prompts(void **state)
{
    struct registry *reg = registry_new();
    struct rlmcp_resource_def r = RLMCP_RESOURCE_DEF_INIT;
    struct rlmcp_prompt_def p = RLMCP_PROMPT_DEF_INIT;

    r.uri = "devbox://x/log";
    r.name = "log";
    r.read = res_read;
    assert_int_equal(registry_add_resource(reg, PA, &r, err, sizeof(err)),
                     RLMCP_OK);
    assert_int_equal(registry_add_resource(reg, PA, &r, err, sizeof(err)),
                     RLMCP_EEXIST);
    r.uri_template = "devbox://{id}/log";
    assert_int_equal(registry_add_resource(reg, PA, &r, err, sizeof(err)),
                     RLMCP_EINVAL);
    r.uri = NULL;
    assert_int_equal(registry_add_resource(reg, PA, &r, err, sizeof(err)),
                     RLMCP_OK);
    r.uri_template = "noscheme";
    assert_int_equal(registry_add_resource(reg, PA, &r, err, sizeof(err)),
                     RLMCP_EINVAL);
    assert_int_equal(registry_resource_count(reg), 2);

    p.name = "zz";
    p.description = "d";
    p.get = prompt_get;
    p.arguments_json = "[{\"name\":\"x\",\"required\":true}]";
    assert_int_equal(registry_add_prompt(reg, PA, &p, err, sizeof(err)),
                     RLMCP_OK);
    assert_int_equal(registry_add_prompt(reg, PA, &p, err, sizeof(err)),
                     RLMCP_EEXIST);
    p.name = "aa";
    p.arguments_json = "{\"name\":\"x\"}";
    assert_int_equal(registry_add_prompt(reg, PA, &p, err, sizeof(err)),
                     RLMCP_EINVAL);
    p.arguments_json = "[{\"nom\":\"x\"}]";
    assert_int_equal(registry_add_prompt(reg, PA, &p, err, sizeof(err)),
                     RLMCP_EINVAL);
    p.arguments_json = NULL;
    p.description = NULL;
    assert_int_equal(registry_add_prompt(reg, PA, &p, err, sizeof(err)),
                     RLMCP_EINVAL);
    p.description = "d";
    assert_int_equal(registry_add_prompt(reg, PB, &p, err, sizeof(err)),
                     RLMCP_OK);
    assert_int_equal(
        registry_select(reg, NULL, "d.yaml", false, 1, err, sizeof(err)), 0);
    assert_string_equal(registry_prompt_at(reg, 0)->name, "aa"); /* sorted */
    assert_non_null(registry_find_prompt(reg, "zz"));
    assert_int_equal(registry_add_prompt(reg, PB, &p, err, sizeof(err)),
                     RLMCP_ESTATE);
    registry_free(reg);
}

static void test_remove_and_release(void **state)
{
    struct registry *reg = sample();

    freed = 0;
    registry_remove_plugin(reg, PB);
    assert_int_equal(freed, 2);
    assert_int_equal(registry_all_tool_count(reg), 4);
    assert_int_equal(
        registry_select(reg, NULL, "d.yaml", false, 1, err, sizeof(err)), 0);
    assert_string_equal(names(reg),
                        "execute_command,kill,read_file,write_file");
    freed = 0;
    registry_release_plugin(reg, PA);
    assert_int_equal(freed, 4);
    registry_release_plugin(reg, PA); /* once only */
    assert_int_equal(freed, 4);
    registry_free(reg);
    assert_int_equal(freed, 4); /* registry_free never calls plugin code */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_sorted),
        cmocka_unit_test(test_allow_exclude_read_only),
        cmocka_unit_test(test_aliases),
        cmocka_unit_test(test_selection_errors),
        cmocka_unit_test(test_tool_timeouts),
        cmocka_unit_test(test_timeout_arg),
        cmocka_unit_test(test_bad_registrations),
        cmocka_unit_test(test_resources_prompts),
        cmocka_unit_test(test_remove_and_release),
    };
    log_set_level(RLMCP_LOG_EMERGENCY); /* lenient-mode warnings */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
