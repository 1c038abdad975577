/* Unit tests: sandbox input validation, path mapping and layer lists. */
#define _GNU_SOURCE
#include "sandbox_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_ids(void **state)
{
    char long_id[80];

    (void)state;
    assert_true(sandbox_fs_valid_id("dbx_31abcXYZ"));
    assert_true(sandbox_fs_valid_id("a-b_c"));
    assert_false(sandbox_fs_valid_id(NULL));
    assert_false(sandbox_fs_valid_id(""));
    assert_false(sandbox_fs_valid_id("-lead"));
    assert_false(sandbox_fs_valid_id("has space"));
    assert_false(sandbox_fs_valid_id("dot.ted"));
    assert_false(sandbox_fs_valid_id("../up"));
    assert_false(sandbox_fs_valid_id("new\nline"));
    memset(long_id, 'a', sizeof(long_id));
    long_id[63] = '\0';
    assert_true(sandbox_fs_valid_id(long_id));
    long_id[63] = 'a';
    long_id[64] = '\0';
    assert_false(sandbox_fs_valid_id(long_id));
}

static void test_shell_names(void **state)
{
    (void)state;
    assert_true(sandbox_fs_valid_shell_name("main"));
    assert_true(sandbox_fs_valid_shell_name("my-shell_2.x"));
    assert_false(sandbox_fs_valid_shell_name(NULL));
    assert_false(sandbox_fs_valid_shell_name(""));
    assert_false(sandbox_fs_valid_shell_name("."));
    assert_false(sandbox_fs_valid_shell_name(".."));
    assert_false(sandbox_fs_valid_shell_name(".hidden"));
    assert_false(sandbox_fs_valid_shell_name("a/b"));
    assert_false(sandbox_fs_valid_shell_name("a b"));
    assert_false(sandbox_fs_valid_shell_name("x$(id)"));
    assert_false(sandbox_fs_valid_shell_name(
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
}

static void test_env_entries(void **state)
{
    (void)state;
    assert_true(sandbox_fs_valid_env("FOO=bar"));
    assert_true(sandbox_fs_valid_env("_x1="));
    assert_true(sandbox_fs_valid_env("A=b=c"));
    assert_false(sandbox_fs_valid_env(NULL));
    assert_false(sandbox_fs_valid_env("=x"));
    assert_false(sandbox_fs_valid_env("1A=x"));
    assert_false(sandbox_fs_valid_env("NOEQUALS"));
    assert_false(sandbox_fs_valid_env("BAD-KEY=x"));
    assert_false(sandbox_fs_valid_env("SP ACE=x"));
}

static void check_rel(const char *in, const char *want)
{
    char *got = sandbox_fs_root_relative(in);

    if (want == NULL) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_root_relative(void **state)
{
    char *big = NULL;

    (void)state;
    check_rel("notes.txt", "home/user/notes.txt");
    check_rel("a/b", "home/user/a/b");
    check_rel("../../etc/passwd",
              "home/user/../../etc/passwd"); /* kernel clamps at root */
    check_rel("/etc/hosts", "etc/hosts");
    check_rel("///tmp/x", "tmp/x");
    check_rel("/", ".");
    check_rel("", NULL);
    check_rel(NULL, NULL);
    big = malloc(5000);
    memset(big, 'a', 4999);
    big[4999] = '\0';
    check_rel(big, NULL);
    free(big);
}

static void test_layer_paths(void **state)
{
    (void)state;
    assert_true(sandbox_fs_valid_layer_path("/var/lib/devboxd/snapshots/s1"));
    assert_false(sandbox_fs_valid_layer_path(NULL));
    assert_false(sandbox_fs_valid_layer_path("relative/path"));
    assert_false(sandbox_fs_valid_layer_path("/a:b"));
    assert_false(sandbox_fs_valid_layer_path("/a,upperdir=/x"));
    assert_false(sandbox_fs_valid_layer_path("/a\\b"));
    assert_false(sandbox_fs_valid_layer_path("/a\nb"));
}

static void test_lowerdir(void **state)
{
    char tmp[] = "/tmp/sbunit-XXXXXX";
    char l1[64];
    char l2[64];
    char want[256];
    char err[256] = "";
    const char *layers[2];
    const char *bad[1];
    char *got = NULL;

    (void)state;
    assert_non_null(mkdtemp(tmp));
    snprintf(l1, sizeof(l1), "%s/top", tmp);
    snprintf(l2, sizeof(l2), "%s/bottom", tmp);
    assert_int_equal(mkdir(l1, 0755), 0);
    assert_int_equal(mkdir(l2, 0755), 0);
    layers[0] = l1;
    layers[1] = l2;
    /* Topmost first, base last. */
    got =
        sandbox_fs_lowerdir(layers, 2, "/srv/box/base", NULL, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:%s:/srv/box/base", l1, l2);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    got = sandbox_fs_lowerdir(NULL, 0, "/srv/box/base", NULL, err, sizeof(err));
    assert_string_equal(got, "/srv/box/base");
    free(got);
    /* Missing layer, injected option, too many layers: refused with a reason. */
    bad[0] = "/nonexistent/layer";
    assert_null(
        sandbox_fs_lowerdir(bad, 1, "/srv/box/base", NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "not a directory"));
    bad[0] = "/tmp,upperdir=/etc";
    assert_null(
        sandbox_fs_lowerdir(bad, 1, "/srv/box/base", NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "must be an absolute path"));
    assert_null(sandbox_fs_lowerdir(layers, SB_MAX_LAYERS + 1, "/srv/box/base",
                                    NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "too many"));
    assert_null(
        sandbox_fs_lowerdir(NULL, 0, "/srv/b:ad", NULL, err, sizeof(err)));
    /* The image is the lowest layer; a missing one is refused. */
    got = sandbox_fs_lowerdir(layers, 1, "/srv/box/base", l2, err, sizeof(err));
    snprintf(want, sizeof(want), "%s:/srv/box/base:%s", l1, l2);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    assert_null(sandbox_fs_lowerdir(NULL, 0, "/srv/box/base",
                                    "/nonexistent/image", err, sizeof(err)));
    assert_non_null(strstr(err, "image /nonexistent/image is not a directory"));
    rmdir(l1);
    rmdir(l2);
    rmdir(tmp);
}

static void test_spec_rejected(void **state)
{
    struct sb_spec spec;
    struct sandbox *sb = (struct sandbox *)0x1;
    char err[256] = "";
    static const char *const env_bad[] = {"OK=1", "BAD KEY=2", NULL};

    (void)state;
    memset(&spec, 0, sizeof(spec));
    spec.id = "bad id";
    spec.dir = "/tmp/x";
    assert_int_equal(sandbox_start(&spec, &sb, err, sizeof(err)), -EINVAL);
    assert_null(sb);
    assert_non_null(strstr(err, "devbox id"));
    spec.id = "ok";
    spec.dir = "relative";
    assert_int_equal(sandbox_start(&spec, &sb, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "absolute"));
    spec.dir = "/tmp/x";
    assert_int_equal(sandbox_start(&spec, &sb, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "needs an image"));
    spec.image = "/tmp/image";
    spec.env = env_bad;
    assert_int_equal(sandbox_start(&spec, &sb, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "entry 1"));
    spec.env = NULL;
    spec.net = (enum sb_network)7;
    assert_int_equal(sandbox_start(&spec, &sb, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "network"));
    spec.net = SB_NET_NONE;
    spec.n_layers = 2;
    assert_int_equal(sandbox_start(&spec, &sb, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "layer"));
}

static void test_exec_rejected_without_sandbox(void **state)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    char err[256] = "";
    char big[40000];
    static const char *const env_bad[] = {"1X=2", NULL};

    (void)state;
    memset(&req, 0, sizeof(req));
    assert_int_equal(sandbox_exec(NULL, &req, &p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "command"));
    req.command = "true";
    req.shell_name = "../x";
    assert_int_equal(sandbox_exec(NULL, &req, &p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "shell_name"));
    req.shell_name = NULL;
    req.env = env_bad;
    assert_int_equal(sandbox_exec(NULL, &req, &p, err, sizeof(err)), -EINVAL);
    req.env = NULL;
    req.cwd = "";
    assert_int_equal(sandbox_exec(NULL, &req, &p, err, sizeof(err)), -EINVAL);
    req.cwd = NULL;
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    req.command = big;
    assert_int_equal(sandbox_exec(NULL, &req, &p, err, sizeof(err)), -E2BIG);
    req.command = "true";
    assert_int_equal(sandbox_exec(NULL, &req, &p, err, sizeof(err)), -ESRCH);
    assert_non_null(strstr(err, "not running"));
    assert_null(p);
    assert_int_equal(sandbox_open(NULL, "x", 0, 0), -ESRCH);
}

static void test_disk_image_path(void **state)
{
    char buf[64];

    (void)state;
    assert_int_equal(
        sandbox_disk_image_path("/s/devboxes/d/sandbox", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/s/devboxes/d/sandbox.img");
    /* Beside the dir, never inside it. */
    assert_int_equal(sandbox_disk_image_path("/s/box//", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/s/box.img");
    assert_int_equal(sandbox_disk_image_path("/", buf, sizeof(buf)), -EINVAL);
    assert_int_equal(sandbox_disk_image_path("///", buf, sizeof(buf)), -EINVAL);
    assert_int_equal(sandbox_disk_image_path("rel/dir", buf, sizeof(buf)),
                     -EINVAL);
    assert_int_equal(sandbox_disk_image_path(NULL, buf, sizeof(buf)), -EINVAL);
    assert_int_equal(
        sandbox_disk_image_path(
            "/a/very/long/path/that/does/not/fit/in/the/buffer/x", buf, 16),
        -ENAMETOOLONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_shell_names),
        cmocka_unit_test(test_env_entries),
        cmocka_unit_test(test_root_relative),
        cmocka_unit_test(test_layer_paths),
        cmocka_unit_test(test_lowerdir),
        cmocka_unit_test(test_spec_rejected),
        cmocka_unit_test(test_exec_rejected_without_sandbox),
        cmocka_unit_test(test_disk_image_path),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
