/* layers_import on a layer a build wrote: the build owns every directory of
 * it, so `etc` or `run` may be a symlink to a host path.  Dropping the
 * empty files buildah leaves as mount points (etc/hosts, run/.containerenv
 * ...) must not follow such a link: it used to unlink the host's empty
 * files of those names as host root. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layers.h"
#include "util.h"

static const char *const names[] = {"hosts", "hostname", "resolv.conf",
                                    ".containerenv", NULL};

static char top[64];

static void touch(const char *dir, const char *name)
{
    char p[512];
    int fd;

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
}

static bool exists(const char *dir, const char *name)
{
    char p[512];
    struct stat st;

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return lstat(p, &st) == 0;
}

static int setup(void **state)
{
    (void)state;
    if (geteuid() != 0)
        return 0;
    snprintf(top, sizeof(top), "/tmp/layers-import-XXXXXX");
    return mkdtemp(top) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (top[0] != '\0')
        util_rmtree(top);
    return 0;
}

static void test_symlinked_dirs_not_followed(void **state)
{
    char host[256];
    char src[256];
    char dst[256];
    char link[300];
    char err[512] = "";
    size_t i;

    (void)state;
    if (geteuid() != 0)
        skip(); /* the import hands files to another uid */
    /* A "host" dir holding empty files of every mount point's name. */
    snprintf(host, sizeof(host), "%s/host", top);
    assert_int_equal(mkdir(host, 0755), 0);
    for (i = 0; names[i] != NULL; i++)
        touch(host, names[i]);
    /* The build's layer: etc and run are links to it. */
    snprintf(src, sizeof(src), "%s/src", top);
    assert_int_equal(mkdir(src, 0755), 0);
    snprintf(link, sizeof(link), "%s/etc", src);
    assert_int_equal(symlink(host, link), 0);
    snprintf(link, sizeof(link), "%s/run", src);
    assert_int_equal(symlink(host, link), 0);
    snprintf(dst, sizeof(dst), "%s/dst", top);
    assert_int_equal(layers_import(src, dst, 0, err, sizeof(err)), 0);
    for (i = 0; names[i] != NULL; i++)
        assert_true(exists(host, names[i]));
    /* the links themselves arrive as they are */
    assert_true(exists(dst, "etc"));
    assert_true(exists(dst, "run"));
}

static void test_mount_points_dropped(void **state)
{
    char src[256];
    char dst[256];
    char dir[300];
    char err[512] = "";

    (void)state;
    if (geteuid() != 0)
        skip();
    /* Real dirs: the empty mount points go, a non-empty file stays. */
    snprintf(src, sizeof(src), "%s/src2", top);
    assert_int_equal(mkdir(src, 0755), 0);
    snprintf(dir, sizeof(dir), "%s/etc", src);
    assert_int_equal(mkdir(dir, 0755), 0);
    touch(dir, "hosts");
    touch(dir, "resolv.conf");
    snprintf(dir, sizeof(dir), "%s/etc/hostname", src);
    assert_int_equal(util_write_atomic(dir, "box\n", 4, 0644), 0);
    snprintf(dir, sizeof(dir), "%s/run", src);
    assert_int_equal(mkdir(dir, 0755), 0);
    touch(dir, ".containerenv");
    snprintf(dst, sizeof(dst), "%s/dst2", top);
    assert_int_equal(layers_import(src, dst, 0, err, sizeof(err)), 0);
    assert_false(exists(dst, "etc/hosts"));
    assert_false(exists(dst, "etc/resolv.conf"));
    assert_false(exists(dst, "run/.containerenv"));
    assert_true(exists(dst, "etc/hostname"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symlinked_dirs_not_followed),
        cmocka_unit_test(test_mount_points_dropped),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
