/*
 * test_loader.c - the plugin loader against the fixture plugins in
 * tests/fixtures/: every refusal with its log line, init failure fully
 * undone, skip mode, shutdown order, and the frozen ABI 1.0 plugin.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "loader.h"
#include "log.h"
#include "registry.h"
#include "services.h"

#define FIXTURES RLMCP_BINARY_DIR "/fixtures"

static char logbuf[65536];

static void sink(void *user, int level, const char *line)
{
    size_t used = strlen(logbuf);
    snprintf(logbuf + used, sizeof(logbuf) - used, "%s\n", line);
}

static int setup(void **state)
{
    logbuf[0] = '\0';
    log_set_level(RLMCP_LOG_DEBUG);
    log_set_sink(sink, NULL);
    return 0;
}

static int teardown(void **state)
{
    log_set_sink(NULL, NULL);
    return 0;
}

static void expect_log(const char *text)
{
    if (strstr(logbuf, text) == NULL)
        fail_msg("log lacks '%s'; log:\n%s", text, logbuf);
}

static void expect_no_log(const char *text)
{
    if (strstr(logbuf, text) != NULL)
        fail_msg("log has '%s'; log:\n%s", text, logbuf);
}

/* a appears in the log before b */
static void expect_order(const char *a, const char *b)
{
    const char *pa = strstr(logbuf, a);
    const char *pb = strstr(logbuf, b);

    if (pa == NULL || pb == NULL || pa > pb)
        fail_msg("expected '%s' before '%s'; log:\n%s", a, b, logbuf);
}

struct env {
    struct host_config cfg;
    struct registry *reg;
    struct loader *ldr;
};

/* Load a deployment whose plugin_dir is the fixtures directory. */
static int load(struct env *e, const char *plugins_yaml, const char *extra)
{
    char yaml[4096];
    char err[1024];

    snprintf(yaml, sizeof(yaml), "host:\n  plugin_dir: %s\n%s%s", FIXTURES,
             extra ? extra : "", plugins_yaml);
    if (config_load_string("l.yaml", yaml, strlen(yaml), &e->cfg, err,
                           sizeof(err)) != 0)
        fail_msg("bad test yaml: %s", err);
    e->reg = registry_new();
    assert_non_null(e->reg);
    e->ldr = NULL;
    return loader_load_all(&e->cfg, e->reg, services_table(), &e->ldr);
}

static void done(struct env *e)
{
    loader_unload_all(e->ldr);
    registry_free(e->reg);
    config_free(&e->cfg);
}

static bool is_loaded(const char *file)
{
    char path[512];
    void *h = NULL;

    snprintf(path, sizeof(path), "%s/%s", FIXTURES, file);
    h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL)
        dlclose(h);
    return h != NULL;
}

static void test_good_plugins_and_order(void **state)
{
    struct env e;
    char err[256];

    assert_int_equal(
        load(&e,
             "plugins:\n  - name: fx_good\n    config: {k: 1}\n  - fx_second\n",
             NULL),
        0);
    assert_int_equal(e.ldr->n_plugins, 2);
    assert_string_equal(e.ldr->plugins[0]->name, "fx_good");
    assert_string_equal(e.ldr->plugins[0]->desc.version, "1.2.3");
    assert_string_equal(e.ldr->plugins[0]->path, FIXTURES "/rlmcp_fx_good.so");
    assert_int_equal(registry_all_tool_count(e.reg), 4);
    /* Each plugin sees only its own config section. */
    expect_log("runloop-mcp: info: fx_good: config {\"k\":1}");
    expect_log("runloop-mcp: info: fx_second: config {}");
    assert_int_equal(
        registry_select(e.reg, NULL, "l.yaml", false, 777, err, sizeof(err)),
        0);
    assert_int_equal(registry_find_tool(e.reg, "fx_other")->timeout_ms, 1234);
    assert_int_equal(registry_find_tool(e.reg, "fx_other")->flags,
                     RLMCP_TOOL_SERIAL);
    assert_int_equal(registry_find_tool(e.reg, "fx_echo")->timeout_ms, 777);
    assert_true(registry_find_tool(e.reg, "fx_read")->read_only);
    assert_true(registry_find_tool(e.reg, "fx_echo")->plugin ==
                e.ldr->plugins[0]);
    assert_true(is_loaded("rlmcp_fx_good.so"));
    logbuf[0] = '\0';
    loader_unload_all(e.ldr);
    e.ldr = NULL;
    /* Reverse-order shutdown, then user data, then dlclose. */
    expect_order("fx_second: shutdown", "fx_good: shutdown");
    expect_order("fx_good: shutdown", "user_data_free fx_echo");
    expect_log("fx_second: user_data_free fx_second_tool");
    expect_log("fx_good: user_data_free fx_read");
    assert_false(is_loaded("rlmcp_fx_good.so"));
    assert_false(is_loaded("rlmcp_fx_second.so"));
    done(&e);
}

/* The header's ABI version as text ("1.1"): the expected log lines follow
 * every minor bump. */
#define ABI_STR2(x) #x
#define ABI_STR(x) ABI_STR2(x)
#define ABI_NOW ABI_STR(RLMCP_ABI_MAJOR) "." ABI_STR(RLMCP_ABI_MINOR)

static void test_wrong_major(void **state)
{
    struct env e;

    assert_int_equal(load(&e, "plugins: [fx_wrong_major]\n", NULL), -1);
    expect_log("runloop-mcp: error: fx_wrong_major: " FIXTURES
               "/rlmcp_fx_wrong_major.so: plugin ABI 2.0, host ABI " ABI_NOW
               ": the "
               "major versions differ; rebuild the plugin");
    expect_log("l.yaml: plugin 'fx_wrong_major' failed to load; fix it, or set "
               "host.on_plugin_error: skip");
    expect_no_log("init must never run");
    assert_false(is_loaded("rlmcp_fx_wrong_major.so"));
    done(&e);
}

static void test_newer_minor(void **state)
{
    struct env e;
    char want[256];

    snprintf(want, sizeof(want),
             "plugin ABI 1.%d, host ABI 1.%d: the plugin needs a newer host; "
             "upgrade runloop-mcp",
             RLMCP_ABI_MINOR + 1, RLMCP_ABI_MINOR);
    assert_int_equal(load(&e, "plugins: [fx_newer_minor]\n", NULL), -1);
    expect_log(want);
    expect_no_log("init must never run");
    done(&e);
}

static void test_missing_symbol_and_file(void **state)
{
    struct env e;

    assert_int_equal(load(&e, "plugins: [fx_no_symbol]\n", NULL), -1);
    expect_log("rlmcp_fx_no_symbol.so: not a runloop-mcp plugin: no "
               "rlmcp_plugin_descriptor() symbol");
    done(&e);
    logbuf[0] = '\0';
    assert_int_equal(load(&e, "plugins: [fx_nonexistent]\n", NULL), -1);
    expect_log("fx_nonexistent: " FIXTURES
               "/rlmcp_fx_nonexistent.so: cannot load:");
    expect_log("build the plugin or fix host.plugin_dir / plugins[].path");
    done(&e);
}

static void test_init_failure(void **state)
{
    struct env e;

    assert_int_equal(load(&e, "plugins: [fx_init_fail]\n", NULL), -1);
    expect_log("fx_init_fail: " FIXTURES
               "/rlmcp_fx_init_fail.so: init failed: the widget frobnicator is "
               "missing (invalid argument)");
    /* Everything it registered is gone, its user data freed, it is unloaded. */
    expect_log("fx_init_fail: user_data_free fx_fail_tool");
    expect_log("fx_init_fail: user_data_free fx_fail_resource");
    expect_log("fx_init_fail: user_data_free fx_fail_prompt");
    expect_no_log("fx_init_fail: shutdown"); /* no shutdown after failed init */
    assert_int_equal(registry_all_tool_count(e.reg), 0);
    assert_int_equal(registry_resource_count(e.reg), 0);
    assert_int_equal(registry_prompt_count(e.reg), 0);
    assert_false(is_loaded("rlmcp_fx_init_fail.so"));
    done(&e);
}

static void test_register_outside_init(void **state)
{
    struct env e;

    assert_int_equal(load(&e, "plugins: [fx_late_register]\n", NULL), 0);
    assert_int_equal(registry_all_tool_count(e.reg), 1);
    loader_unload_all(e.ldr);
    e.ldr = NULL;
    expect_log("fx_late_register: register_tool called outside init; register "
               "everything from init()");
    expect_log("fx_late_register: late register rc=-3");
    assert_int_equal(registry_all_tool_count(e.reg), 1);
    done(&e);
}

static void test_duplicate_tool(void **state)
{
    struct env e;

    assert_int_equal(load(&e, "plugins: [fx_good, fx_dup]\n", NULL), -1);
    expect_log(
        "fx_dup: tool 'fx_echo' is already registered by plugin 'fx_good'");
    expect_log("fx_dup: duplicate register rc=-10");
    expect_log("init failed: could not register fx_echo");
    expect_log("fx_dup: user_data_free fx_dup_own");
    /* fail mode: fx_good, loaded before, is shut down and unloaded too. */
    expect_log("fx_good: shutdown");
    expect_log("fx_good: user_data_free fx_echo");
    assert_false(is_loaded("rlmcp_fx_good.so"));
    done(&e);
}

static void test_bad_schema(void **state)
{
    struct env e;

    assert_int_equal(load(&e, "plugins: [fx_bad_schema]\n", NULL), -1);
    expect_log("fx_bad_schema: tool 'fx_bad' input schema");
    expect_log("fx_bad_schema: bad schema rc=-1");
    expect_log("init failed: tool fx_bad was refused");
    done(&e);
}

static void test_oversized_structs(void **state)
{
    struct env e;

    assert_int_equal(load(&e, "plugins: [fx_big_def]\n", NULL), -1);
    expect_log("fx_big_def: zero tail rc=0");
    expect_log("fx_big_def: nonzero tail rc=-8");
    expect_log("rlmcp_tool_def has fields this host does not know");
    assert_int_equal(registry_all_tool_count(e.reg), 0); /* undone */
    done(&e);
    logbuf[0] = '\0';
    assert_int_equal(load(&e, "plugins: [fx_big_desc]\n", NULL), -1);
    expect_log("rlmcp_fx_big_desc.so: plugin ABI " ABI_NOW ", host ABI " ABI_NOW
               ": the "
               "descriptor sets fields this host does not know");
    /* The struct and the byte, as sdk/ABI.md says: the unknown pointer
     * starts right after this host's descriptor. */
    {
        char want[128];
        size_t ours = sizeof(struct rlmcp_plugin_desc);

        snprintf(want, sizeof(want),
                 "(struct_size %zu > %zu, non-zero at byte ",
                 ours + sizeof(void *), ours);
        expect_log(want);
    }
    expect_no_log("init must never run");
    done(&e);
}

static void test_name_mismatch_and_twice(void **state)
{
    struct env e;

    assert_int_equal(
        load(&e, "plugins:\n  - {name: other, path: rlmcp_fx_good.so}\n", NULL),
        -1);
    expect_log("this file is plugin 'fx_good', not 'other'; fix plugins[].name "
               "or plugins[].path");
    done(&e);
    logbuf[0] = '\0';
    assert_int_equal(
        load(&e,
             "plugins:\n  - fx_good\n  - {name: fx_good_again, path: " FIXTURES
             "/rlmcp_fx_good.so}\n",
             NULL),
        -1);
    expect_log("fx_good_again: " FIXTURES
               "/rlmcp_fx_good.so: already loaded as plugin 'fx_good'");
    done(&e);
}

static void test_bad_descriptors(void **state)
{
    struct env e;

    assert_int_equal(load(&e, "plugins: [fx_no_init]\n", NULL), -1);
    expect_log("rlmcp_fx_no_init.so: the descriptor has no init function; pass "
               "one to RLMCP_PLUGIN_DEFINE");
    done(&e);
    logbuf[0] = '\0';
    assert_int_equal(load(&e, "plugins: [fx_bad_name]\n", NULL), -1);
    expect_log("rlmcp_fx_bad_name.so: the descriptor's name is missing or not "
               "[a-z0-9_]+");
    expect_no_log("init must never run");
    done(&e);
}

static void test_skip_mode(void **state)
{
    struct env e;

    assert_int_equal(
        load(&e,
             "plugins: [fx_wrong_major, fx_good, fx_init_fail, fx_missing]\n",
             "  on_plugin_error: skip\n"),
        0);
    assert_int_equal(e.ldr->n_plugins, 1);
    assert_int_equal(e.ldr->n_skipped, 3);
    assert_string_equal(e.ldr->plugins[0]->name, "fx_good");
    expect_log("runloop-mcp: warning: fx_wrong_major: skipped "
               "(host.on_plugin_error: skip)");
    expect_log("runloop-mcp: warning: fx_init_fail: skipped");
    expect_log("fx_init_fail: user_data_free fx_fail_tool");
    assert_int_equal(registry_all_tool_count(e.reg), 3);
    done(&e);
}

static void test_disabled(void **state)
{
    struct env e;

    assert_int_equal(load(&e,
                          "plugins:\n  - {name: fx_wrong_major, enabled: "
                          "false}\n  - fx_second\n",
                          NULL),
                     0);
    assert_int_equal(e.ldr->n_plugins, 1);
    expect_log("fx_wrong_major: disabled in the deployment; not loaded");
    done(&e);
}

/* A plugin that targets ABI 1.1 with today's header (RLMCP_PLUGIN_DEFINE,
 * no config schema) loads and registers its tool. */
static void test_abi_1_1_plugin(void **state)
{
    struct env e;
    char err[256];

    (void)state;
    assert_int_equal(
        load(&e, "plugins:\n  - name: fx_abi11\n    config: {k: 2}\n", NULL),
        0);
    expect_log("fx_abi11: abi11 config {\"k\":2}");
    assert_int_equal(e.ldr->plugins[0]->desc.abi_major, 1);
    assert_int_equal(e.ldr->plugins[0]->desc.abi_minor, 1);
    assert_null(e.ldr->plugins[0]->desc.config_schema);
    assert_int_equal(
        registry_select(e.reg, NULL, "l.yaml", false, 1, err, sizeof(err)), 0);
    assert_non_null(registry_find_tool(e.reg, "fx_abi11_tool"));
    done(&e);
}

static void test_abi_1_0_plugin(void **state)
{
    struct env e;
    char want[128];
    char err[256];

    /* The 1.0 tool def ends with user_data_free. */
    snprintf(want, sizeof(want),
             "abi10: abi10 config {\"a\":[1,2]} (11) def size %zu",
             offsetof(struct rlmcp_tool_def, user_data_free) + sizeof(void *));
    assert_int_equal(
        load(&e, "plugins:\n  - name: abi10\n    config: {a: [1, 2]}\n", NULL),
        0);
    expect_log(want);
    assert_int_equal(e.ldr->plugins[0]->desc.abi_major, 1);
    assert_int_equal(e.ldr->plugins[0]->desc.abi_minor, 0);
    assert_int_equal(
        registry_select(e.reg, NULL, "l.yaml", false, 1, err, sizeof(err)), 0);
    assert_non_null(registry_find_tool(e.reg, "abi10_echo"));
    assert_true(registry_find_tool(e.reg, "abi10_echo")->read_only);
    assert_string_equal(registry_find_tool(e.reg, "abi10_echo")->title,
                        "Echo (ABI 1.0)");
    loader_unload_all(e.ldr);
    e.ldr = NULL;
    expect_log("abi10: abi10 shutdown");
    done(&e);
}

static void test_plugin_dir(void **state)
{
    struct host_config cfg;
    char err[256];
    char *dir = NULL;
    const char *yaml = "host: {plugin_dir: rel/plugins}\nplugins: []\n";

    assert_int_equal(config_load_string("/etc/x/d.yaml", yaml, strlen(yaml),
                                        &cfg, err, sizeof(err)),
                     0);
    dir = loader_plugin_dir(&cfg);
    assert_string_equal(dir, "/etc/x/rel/plugins");
    free(dir);
    config_free(&cfg);
    assert_int_equal(config_load_string("d.yaml", "plugins: []\n", 12, &cfg,
                                        err, sizeof(err)),
                     0);
    setenv("RLMCP_PLUGIN_DIR", "/from/env", 1);
    dir = loader_plugin_dir(&cfg);
    assert_string_equal(dir, "/from/env");
    free(dir);
    unsetenv("RLMCP_PLUGIN_DIR");
    /* The test binary is in <build>/bin: <build>/bin/../plugins. */
    dir = loader_plugin_dir(&cfg);
    assert_non_null(strstr(dir, "/bin/../plugins"));
    free(dir);
    config_free(&cfg);
}

static void test_services_table(void **state)
{
    const struct rlmcp_host_api *api = services_table();

    assert_int_equal(api->size, sizeof(struct rlmcp_host_api));
    assert_int_equal(api->abi_major, RLMCP_ABI_MAJOR);
    assert_int_equal(api->abi_minor, RLMCP_ABI_MINOR);
    assert_true(RLMCP_API_HAS(api, call_plugin));
    assert_string_equal(api->strerror(RLMCP_EEXIST), "name already taken");
    assert_string_equal(api->strerror(-999), "unknown error");
    assert_int_equal(api->register_tool(NULL, NULL), RLMCP_EINVAL);
    {
        char *s = api->strdup("x");
        assert_string_equal(s, "x");
        api->free(s);
    }
}

/* A deployment of the fixtures for a reload: its config, registry, loader. */
static int reload_into(struct env *n, const struct env *old,
                       const char *plugins_yaml)
{
    char yaml[4096];
    char err[1024];

    snprintf(yaml, sizeof(yaml), "host:\n  plugin_dir: %s\n%s", FIXTURES,
             plugins_yaml);
    if (config_load_string("l.yaml", yaml, strlen(yaml), &n->cfg, err,
                           sizeof(err)) != 0)
        fail_msg("bad test yaml: %s", err);
    n->reg = registry_new();
    assert_non_null(n->reg);
    n->ldr = NULL;
    return loader_reload(&n->cfg, n->reg, services_table(), old->ldr, &n->ldr);
}

static void test_reload_keeps_unchanged(void **state)
{
    struct env e;
    struct env n;
    char err[256];

    assert_int_equal(load(&e,
                          "plugins:\n  - name: fx_good\n    config: {k: 1}\n"
                          "  - fx_second\n",
                          NULL),
                     0);
    logbuf[0] = '\0';
    assert_int_equal(reload_into(&n, &e,
                                 "plugins:\n  - name: fx_good\n    config: "
                                 "{k: 1}\n  - name: fx_second\n    config: "
                                 "{z: 2}\n"),
                     0);
    /* fx_good: same instance, init not run again; fx_second: a new one. */
    expect_no_log("fx_good: config");
    expect_log("fx_good: path and config unchanged: kept as loaded");
    expect_log("fx_second: config {\"z\":2}");
    assert_int_equal(n.ldr->n_plugins, 2);
    assert_int_equal(n.ldr->n_kept, 1);
    assert_ptr_equal(n.ldr->plugins[0], e.ldr->plugins[0]);
    assert_ptr_not_equal(n.ldr->plugins[1], e.ldr->plugins[1]);
    /* The new registry holds the kept plugin's tools as registered. */
    assert_int_equal(registry_all_tool_count(n.reg), 4);
    assert_int_equal(
        registry_select(e.reg, NULL, "l.yaml", false, 777, err, sizeof(err)),
        0);
    assert_int_equal(
        registry_select(n.reg, NULL, "l.yaml", false, 888, err, sizeof(err)),
        0);
    assert_int_equal(registry_find_tool(n.reg, "fx_other")->timeout_ms, 1234);
    assert_int_equal(registry_find_tool(n.reg, "fx_echo")->timeout_ms, 888);
    assert_ptr_equal(registry_find_tool(n.reg, "fx_echo")->plugin,
                     e.ldr->plugins[0]);
    /* SERIAL calls on the old and the new deployment still take turns. */
    assert_ptr_equal(registry_find_tool(n.reg, "fx_other")->serial,
                     registry_find_tool(e.reg, "fx_other")->serial);

    /* The old deployment goes: only the plugin it alone held shuts down. */
    logbuf[0] = '\0';
    loader_unload_all(e.ldr);
    e.ldr = NULL;
    expect_log("fx_second: shutdown");
    expect_no_log("fx_good: shutdown");
    expect_no_log("user_data_free fx_echo");
    assert_true(is_loaded("rlmcp_fx_good.so"));
    done(&e);
    logbuf[0] = '\0';
    loader_unload_all(n.ldr);
    n.ldr = NULL;
    expect_log("fx_good: shutdown");
    expect_log("fx_good: user_data_free fx_echo");
    assert_false(is_loaded("rlmcp_fx_good.so"));
    done(&n);
}

static void test_reload_failure_keeps_old(void **state)
{
    struct env e;
    struct env n;

    assert_int_equal(load(&e, "plugins: [fx_good]\n", NULL), 0);
    logbuf[0] = '\0';
    /* A new plugin whose init fails: the reload is undone, fx_good kept. */
    assert_int_equal(reload_into(&n, &e, "plugins: [fx_good, fx_init_fail]\n"),
                     -1);
    assert_null(n.ldr);
    expect_log("plugin 'fx_init_fail' failed to load");
    expect_no_log("fx_good: shutdown");
    assert_int_equal(atomic_load(&e.ldr->plugins[0]->refs), 1);
    assert_true(is_loaded("rlmcp_fx_good.so"));
    done(&n);
    /* A kept plugin whose tool a plugin before it now registers. */
    logbuf[0] = '\0';
    assert_int_equal(reload_into(&n, &e, "plugins: [fx_dup, fx_good]\n"), -1);
    expect_log("tool 'fx_echo' is already registered by plugin 'fx_dup'");
    expect_log("fx_dup: shutdown");
    expect_no_log("fx_good: shutdown");
    assert_int_equal(atomic_load(&e.ldr->plugins[0]->refs), 1);
    done(&n);
    logbuf[0] = '\0';
    done(&e);
    expect_log("fx_good: shutdown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_plugins_and_order, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wrong_major, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_minor, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_symbol_and_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_init_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_register_outside_init, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_tool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized_structs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_name_mismatch_and_twice, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_bad_descriptors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_skip_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abi_1_0_plugin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abi_1_1_plugin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plugin_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_services_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_keeps_unchanged, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reload_failure_keeps_old, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
