/*
 * test_reload.c - the reload thread (reload.c) with the loader fixtures:
 * a reload keeps the unchanged plugin (no second init), drops a removed
 * one once its deployment is released and applies the new selection; a
 * broken file keeps the running deployment and names file:line:col.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "deployment.h"
#include "loader.h"
#include "log.h"
#include "mcp.h"
#include "registry.h"
#include "services.h"
#include "reload.h"

#define FIXTURES RLMCP_BINARY_DIR "/fixtures"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char logbuf[65536];

/* Lines come from the reload thread too. */
static void sink(void *user, int level, const char *line)
{
    size_t used = 0;

    pthread_mutex_lock(&log_lock);
    used = strlen(logbuf);
    snprintf(logbuf + used, sizeof(logbuf) - used, "%s\n", line);
    pthread_mutex_unlock(&log_lock);
}

static bool logged(const char *text)
{
    bool found = false;

    pthread_mutex_lock(&log_lock);
    found = strstr(logbuf, text) != NULL;
    pthread_mutex_unlock(&log_lock);
    return found;
}

static void clear_log(void)
{
    pthread_mutex_lock(&log_lock);
    logbuf[0] = '\0';
    pthread_mutex_unlock(&log_lock);
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Wait (up to 60 s) until the log has text. */
static void wait_log(const char *text)
{
    int i = 0;

    for (i = 0; i < 6000 && !logged(text); i++)
        pause_ms(10);
    if (!logged(text))
        fail_msg("log lacks '%s'; log:\n%s", text, logbuf);
}

/* Wait (up to 60 s) until n reloads were done. */
static void wait_reloads(struct reloader *r, unsigned n)
{
    int i = 0;

    for (i = 0; i < 6000 && reload_count(r, NULL) < n; i++)
        pause_ms(10);
    assert_true(reload_count(r, NULL) >= n);
}

static void put(const char *path, const char *plugins_and_tools)
{
    char tmp[600];
    FILE *f = NULL;

    snprintf(tmp, sizeof(tmp), "%s.new", path);
    f = fopen(tmp, "w");
    assert_non_null(f);
    fprintf(f, "host:\n  plugin_dir: %s\n%s", FIXTURES, plugins_and_tools);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, path), 0);
}

/* The deployment in path, served by a new dispatcher. */
static struct mcp_dispatcher *serve(const char *path, struct host_config *cfg)
{
    struct mcp_options o;
    struct registry *reg = registry_new();
    struct loader *ldr = NULL;
    struct deployment *dep = NULL;
    struct mcp_dispatcher *d = NULL;
    char err[1024] = "";

    assert_int_equal(config_load(path, cfg, err, sizeof(err)), 0);
    assert_int_equal(loader_load_all(cfg, reg, services_table(), &ldr), 0);
    assert_int_equal(
        registry_select(reg, &cfg->tools, path, false, 1000, err, sizeof(err)),
        0);
    dep = deployment_new(reg, ldr, 1000);
    assert_non_null(dep);
    memset(&o, 0, sizeof(o));
    o.workers = 2;
    d = mcp_create_deployment(&o, dep);
    assert_non_null(d);
    deployment_unref(dep);
    return d;
}

static bool has_tool(struct mcp_dispatcher *d, const char *name)
{
    struct deployment *dep = mcp_deployment_get(d);
    bool v = registry_find_tool(dep->reg, name) != NULL;

    deployment_unref(dep);
    return v;
}

static void test_reload_thread(void **state)
{
    char dir[] = "/tmp/rlmcp-reload-XXXXXX";
    char path[300];
    struct host_config cfg;
    struct mcp_dispatcher *d = NULL;
    struct reloader *r = NULL;
    struct deployment *dep = NULL;
    struct deployment *kept = NULL;
    unsigned failed = 0;

    memset(&cfg, 0, sizeof(cfg));
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/d.yaml", dir);
    put(path, "plugins:\n  - name: fx_good\n    config: {k: 1}\n"
              "  - fx_second\n");
    d = serve(path, &cfg);
    r = reload_start(d, &cfg);
    assert_non_null(r);
    assert_true(has_tool(d, "fx_read") && has_tool(d, "fx_second_tool"));

    clear_log();
    put(path, "server:\n  name: renamed\n"
              "plugins:\n  - name: fx_good\n    config: {k: 1}\n"
              "tools:\n  exclude: [fx_read]\n");
    reload_request(r);
    wait_reloads(r, 1);
    assert_int_equal(reload_count(r, &failed), 1);
    assert_int_equal(failed, 0);
    assert_false(has_tool(d, "fx_read"));
    assert_false(has_tool(d, "fx_second_tool"));
    assert_true(has_tool(d, "fx_echo"));
    assert_true(logged("fx_good: path and config unchanged"));
    assert_true(logged("d.yaml: server changed; these settings are read at "
                       "start only: restart to apply them"));
    assert_false(logged("fx_good: config"));
    /* Nothing runs on the old deployment: released, fx_second with it. */
    wait_log("fx_second: shutdown");
    assert_false(logged("fx_good: shutdown"));

    /* A broken file: refused with its position, nothing changes. */
    dep = mcp_deployment_get(d);
    put(path, "plugins: [fx_good\n");
    reload_request(r);
    wait_reloads(r, 2);
    assert_int_equal(reload_count(r, &failed), 2);
    assert_int_equal(failed, 1);
    wait_log("d.yaml:4:1: YAML syntax error");
    assert_true(logged("still serving the previous deployment"));
    kept = mcp_deployment_get(d);
    assert_ptr_equal(kept, dep);
    deployment_unref(kept);
    deployment_unref(dep);
    assert_false(has_tool(d, "fx_read"));
    assert_true(has_tool(d, "fx_echo"));

    reload_stop(r);
    mcp_destroy(d);
    assert_true(logged("fx_good: shutdown"));
    config_free(&cfg);
    unlink(path);
    rmdir(dir);
}

static int setup(void **state)
{
    clear_log();
    log_set_level(RLMCP_LOG_DEBUG);
    log_set_sink(sink, NULL);
    return 0;
}

static int teardown(void **state)
{
    log_set_sink(NULL, NULL);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reload_thread, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
