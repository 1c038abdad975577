/* Unit tests of devboxd's settings (config.c): every variable's default,
 * a value in range arriving in the struct the engine gets, a value out of
 * range (or not a number, not an absolute path, not a choice) refused with
 * a message naming the variable, the value and the range, both ends of
 * each range accepted, the flags, and devboxd --help and docs/devboxd.md
 * listing every variable with the same default and range. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "util.h"

static void clear_env(void)
{
    size_t i;

    for (i = 0; i < devboxd_config_count(); i++)
        unsetenv(devboxd_config_name(i));
}

static int load(struct devboxd_config *cfg, char *err, size_t errlen)
{
    char *argv[] = {"devboxd", "--state-dir", "/tmp/cfg-test", NULL};

    return devboxd_config_load(cfg, 3, argv, err, errlen);
}

static void test_defaults(void **state)
{
    struct devboxd_config cfg;
    char err[512];
    const struct engine_settings *e = &cfg.engine;

    (void)state;
    clear_env();
    setenv("RLMCP_WARM_POOL", "", 1); /* empty is unset */
    assert_int_equal(load(&cfg, err, sizeof(err)), DEVBOXD_CONFIG_RUN);
    assert_string_equal(cfg.state_dir, "/tmp/cfg-test");
    assert_int_equal(cfg.n_listen, 0);
    assert_int_equal(e->caps.max_devboxes, 256);
    assert_true(e->caps.max_memory_gb > 0);
    assert_true(e->caps.max_cpus >= 32);
    assert_int_equal(e->caps.max_builds, 2);
    assert_true(e->caps.build_memory_gb == 4 && e->caps.build_cpus == 1);
    assert_true(e->caps.build_timeout_s == 3600);
    assert_true(e->caps.build_context_mb == 1024);
    assert_true(e->caps.build_disk_gb == 20);
    assert_true(e->caps.state_reserve_mb == 0); /* 2% of the filesystem */
    assert_true(e->retention_days == 7);
    assert_int_equal(e->retention_max, 10000);
    assert_int_equal(e->warm_pool, 1);
    assert_int_equal(e->eviction_notice_s, 300);
    assert_string_equal(e->code_mount_base, "https://github.com");
    assert_int_equal(e->code_mount_timeout_s, 600);
    assert_int_equal(e->pty_idle_ttl_s, 1800);
    assert_int_equal(e->pty_ping_timeout_s, 60);
    assert_string_equal(e->devbox_image, "starter");
    assert_string_equal(e->image_cache, "/var/cache/runloop-mcp/images");
    assert_string_equal(e->runc_path, "/usr/sbin/runc");
    assert_string_equal(e->disk, "loop");
    assert_string_equal(e->uid_claims_dir, "/var/lib/devboxd/uids");
    assert_int_equal(e->uid_range_slots, 4096);
}

static void test_values_arrive(void **state)
{
    static const char *const set[][2] = {
        {"RLMCP_MAX_DEVBOXES", "2"},
        {"RLMCP_MAX_MEMORY_GB", "1.5"},
        {"RLMCP_MAX_CPUS", "0.5"},
        {"RLMCP_MAX_BUILDS", "3"},
        {"RLMCP_BUILD_MEMORY_GB", "0.0625"},
        {"RLMCP_BUILD_CPUS", "2.5"},
        {"RLMCP_BUILD_TIMEOUT_S", "10"},
        {"RLMCP_BUILD_CONTEXT_MB", "1"},
        {"RLMCP_BUILD_DISK_GB", "0.25"},
        {"RLMCP_STATE_DISK_RESERVE_MB", "100"},
        {"RLMCP_RECORD_RETENTION_DAYS", "0.5"},
        {"RLMCP_RECORD_RETENTION_MAX", "0"},
        {"RLMCP_WARM_POOL", "0"},
        {"RLMCP_EVICTION_NOTICE_S", "120"},
        {"RLMCP_CODE_MOUNT_BASE", "file:///srv/repos"},
        {"RLMCP_CODE_MOUNT_TIMEOUT_S", "2"},
        {"DEVBOXD_PTY_IDLE_TTL", "3"},
        {"DEVBOXD_PTY_PING_TIMEOUT", "4"},
        {"RLMCP_DEVBOX_IMAGE", "universal"},
        {"RLMCP_IMAGE_CACHE", "/srv/images"},
        {"RLMCP_DEVBOX_RUNTIME", "runc"},
        {"RLMCP_BUILDER", "buildah"},
        {"RLMCP_RUNC", "/opt/runc"},
        {"RLMCP_DEVBOX_DISK", "off"},
        {"RLMCP_UID_CLAIMS_DIR", "/tmp/claims"},
        {"RLMCP_UID_RANGE_SLOTS", "3"},
    };
    struct devboxd_config cfg;
    char err[512] = "";
    const struct engine_settings *e = &cfg.engine;
    size_t i;

    (void)state;
    clear_env();
    /* Every variable is in the list above. */
    assert_int_equal(sizeof(set) / sizeof(set[0]), devboxd_config_count());
    for (i = 0; i < sizeof(set) / sizeof(set[0]); i++)
        setenv(set[i][0], set[i][1], 1);
    assert_int_equal(load(&cfg, err, sizeof(err)), DEVBOXD_CONFIG_RUN);
    assert_int_equal(e->caps.max_devboxes, 2);
    assert_true(e->caps.max_memory_gb == 1.5 && e->caps.max_cpus == 0.5);
    assert_int_equal(e->caps.max_builds, 3);
    assert_true(e->caps.build_memory_gb == 0.0625);
    assert_true(e->caps.build_cpus == 2.5);
    assert_true(e->caps.build_timeout_s == 10);
    assert_true(e->caps.build_context_mb == 1);
    assert_true(e->caps.build_disk_gb == 0.25);
    assert_true(e->caps.state_reserve_mb == 100);
    assert_true(e->retention_days == 0.5);
    assert_int_equal(e->retention_max, 0);
    assert_int_equal(e->warm_pool, 0);
    assert_int_equal(e->eviction_notice_s, 120);
    assert_string_equal(e->code_mount_base, "file:///srv/repos");
    assert_int_equal(e->code_mount_timeout_s, 2);
    assert_int_equal(e->pty_idle_ttl_s, 3);
    assert_int_equal(e->pty_ping_timeout_s, 4);
    assert_string_equal(e->devbox_image, "universal");
    assert_string_equal(e->image_cache, "/srv/images");
    assert_string_equal(e->runc_path, "/opt/runc");
    assert_string_equal(e->disk, "off");
    assert_string_equal(e->uid_claims_dir, "/tmp/claims");
    assert_int_equal(e->uid_range_slots, 3);
    clear_env();
}

/* value of variable i is refused with a message naming it, the value and
 * (want) the range. */
static void refused(size_t i, const char *value, const char *want)
{
    struct devboxd_config cfg;
    char err[1024] = "";
    char head[256];
    const char *name = devboxd_config_name(i);

    clear_env();
    setenv(name, value, 1);
    if (load(&cfg, err, sizeof(err)) != DEVBOXD_CONFIG_BAD)
        fail_msg("%s=%s was accepted", name, value);
    snprintf(head, sizeof(head), "%s=\"%s\"", name, value);
    if (strstr(err, head) == NULL || strstr(err, want) == NULL)
        fail_msg("%s=%s: \"%s\" does not name %s and \"%s\"", name, value, err,
                 head, want);
}

static void accepted(size_t i, const char *value)
{
    struct devboxd_config cfg;
    char err[1024] = "";
    const char *name = devboxd_config_name(i);

    clear_env();
    setenv(name, value, 1);
    if (load(&cfg, err, sizeof(err)) != DEVBOXD_CONFIG_RUN)
        fail_msg("%s=%s was refused: %s", name, value, err);
}

static void test_ranges(void **state)
{
    char range[256];
    char def[128];
    char want[512];
    char v[64];
    double lo = 0;
    double hi = 0;
    size_t i;

    (void)state;
    for (i = 0; i < devboxd_config_count(); i++) {
        devboxd_config_range(i, range, sizeof(range));
        devboxd_config_default(i, def, sizeof(def));
        snprintf(want, sizeof(want),
                 "is not %s: set one, or unset it for "
                 "the default (%s)",
                 range, def);
        if (sscanf(range, "a whole number from %lf to %lf", &lo, &hi) == 2) {
            refused(i, "many", want);
            refused(i, "1.5", want);
            refused(i, "0x1", want); /* strtod's hex and exponent forms */
            refused(i, "1e0", want);
            refused(i, " 1", want);
            snprintf(v, sizeof(v), "%.0f", hi + 1);
            refused(i, v, want);
            snprintf(v, sizeof(v), "%.0f", lo - 1);
            refused(i, v, want);
            snprintf(v, sizeof(v), "%.0f", lo);
            accepted(i, v);
            snprintf(v, sizeof(v), "%.0f", hi);
            accepted(i, v);
        } else if (sscanf(range, "a number from %lf to %lf", &lo, &hi) == 2) {
            refused(i, "lots", want);
            refused(i, "nan", want);
            snprintf(v, sizeof(v), "%.10g", hi * 2);
            refused(i, v, want);
            snprintf(v, sizeof(v), "%.10g", lo / 2);
            refused(i, v, want);
            snprintf(v, sizeof(v), "%.10g", lo);
            accepted(i, v);
            snprintf(v, sizeof(v), "%.10g", hi);
            accepted(i, v);
        } else if (sscanf(range, "a number above 0 up to %lf", &hi) == 1) {
            refused(i, "lots", want);
            refused(i, "0", want);
            refused(i, "-1", want);
            snprintf(v, sizeof(v), "%.10g", hi * 2);
            refused(i, v, want);
            accepted(i, "0.001");
            snprintf(v, sizeof(v), "%.10g", hi);
            accepted(i, v);
        } else if (strcmp(range, "an absolute path") == 0) {
            refused(i, "relative/dir", want);
            accepted(i, "/abs/dir");
        } else if (strncmp(range, "one of ", 7) == 0 ||
                   strncmp(range, "only ", 5) == 0) {
            /* The retired values have messages of their own that say
             * what became of them; each still names every choice. */
            char *choices = strchr(range, ' ') + 1;
            char *save = NULL;
            char *word = NULL;

            if (strncmp(range, "one of ", 7) == 0)
                choices = range + 7;
            for (word = strtok_r(choices, ", ", &save); word != NULL;
                 word = strtok_r(NULL, ", ", &save)) {
                refused(i, "nope", word);
                accepted(i, word);
            }
        } else {
            assert_string_equal(range, "any text");
        }
    }
    clear_env();
}

/* A choice is one word of the list, never a run of them. */
static void test_choice_is_one_word(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < devboxd_config_count(); i++)
        if (strcmp(devboxd_config_name(i), "RLMCP_DEVBOX_DISK") == 0)
            break;
    assert_true(i < devboxd_config_count());
    refused(i, "loop|off", "is not one of loop, off");
    refused(i, "|loop", "is not one of loop, off");
    accepted(i, "off");
    clear_env();
}

/* The messages of the retired choices, which tests and setups know. */
static void test_retired(void **state)
{
    (void)state;
    for (size_t i = 0; i < devboxd_config_count(); i++) {
        const char *n = devboxd_config_name(i);

        if (strcmp(n, "RLMCP_DEVBOX_RUNTIME") == 0)
            refused(i, "bwrap", "devboxes run under runc only");
        else if (strcmp(n, "RLMCP_BUILDER") == 0)
            refused(i, "native", "blueprints build with buildah only");
        else if (strcmp(n, "RLMCP_DEVBOX_IMAGE") == 0)
            refused(i, "host",
                    "is not an image (devboxes no longer run on the host's "
                    "/usr): set it to starter (the default), universal, "
                    "browser or desktop");
    }
    clear_env();
}

static void test_flags(void **state)
{
    struct devboxd_config cfg;
    char err[512];
    char *help[] = {"devboxd", "--help", NULL};
    char *version[] = {"devboxd", "--version", NULL};
    char *none[] = {"devboxd", NULL};
    char *extra[] = {"devboxd", "--state-dir", "/s", "more", NULL};
    char *listen[] = {"devboxd",        "--state-dir",          "/s",
                      "--listen",       "127.0.0.1:0",          "--listen",
                      "unix:/s/x.sock", "--allow-non-loopback", NULL};
    char *many[24] = {"devboxd", "--state-dir", "/s"};
    int i;

    (void)state;
    clear_env();
    /* --help works whatever the environment holds. */
    setenv("RLMCP_WARM_POOL", "99", 1);
    assert_int_equal(devboxd_config_load(&cfg, 2, help, err, sizeof(err)),
                     DEVBOXD_CONFIG_HELP);
    assert_int_equal(devboxd_config_load(&cfg, 2, version, err, sizeof(err)),
                     DEVBOXD_CONFIG_VERSION);
    clear_env();
    assert_int_equal(devboxd_config_load(&cfg, 1, none, err, sizeof(err)),
                     DEVBOXD_CONFIG_BAD);
    assert_non_null(strstr(err, "--state-dir DIR is required"));
    assert_int_equal(devboxd_config_load(&cfg, 4, extra, err, sizeof(err)),
                     DEVBOXD_CONFIG_USAGE);
    assert_non_null(strstr(err, "unexpected argument 'more'"));
    assert_int_equal(devboxd_config_load(&cfg, 8, listen, err, sizeof(err)),
                     DEVBOXD_CONFIG_RUN);
    assert_int_equal(cfg.n_listen, 2);
    assert_string_equal(cfg.listen[1], "unix:/s/x.sock");
    assert_int_equal(cfg.allow_non_loopback, 1);
    for (i = 0; i < 9; i++) {
        many[3 + 2 * i] = "--listen";
        many[4 + 2 * i] = "127.0.0.1:0";
    }
    assert_int_equal(devboxd_config_load(&cfg, 21, many, err, sizeof(err)),
                     DEVBOXD_CONFIG_BAD);
    assert_non_null(strstr(err, "at most 8 --listen options"));
}

/* devboxd --help and docs/devboxd.md list every variable with the
 * default and range the code has. */
static void test_help_and_docs(void **state)
{
    char *help = NULL;
    size_t help_len = 0;
    FILE *f = open_memstream(&help, &help_len);
    char *docs =
        util_read_file(RLMCP_SOURCE_DIR "/docs/devboxd.md", 1 << 22, NULL);
    char def[128];
    char range[256];
    char want[512];
    size_t i;

    (void)state;
    assert_non_null(f);
    assert_non_null(docs);
    devboxd_config_usage(f);
    fclose(f);
    for (i = 0; i < devboxd_config_count(); i++) {
        const char *name = devboxd_config_name(i);

        devboxd_config_default(i, def, sizeof(def));
        devboxd_config_range(i, range, sizeof(range));
        snprintf(want, sizeof(want), "  %s\n", name);
        if (strstr(help, want) == NULL)
            fail_msg("devboxd --help does not list %s", name);
        snprintf(want, sizeof(want), "default %s; %s\n", def, range);
        if (strstr(strstr(help, name), want) == NULL)
            fail_msg("devboxd --help lacks \"%s\" for %s", want, name);
        snprintf(want, sizeof(want), "| `%s` | %s | %s |", name, def, range);
        if (strstr(docs, want) == NULL)
            fail_msg("docs/devboxd.md (Usage) lacks the row \"%s\"", want);
    }
    free(help);
    free(docs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_values_arrive),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_choice_is_one_word),
        cmocka_unit_test(test_retired),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_help_and_docs),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
