/* Unit tests of layer_merge (layer_merge.h): an upper overlay layer moved
 * onto a lower one keeps what the pair showed: files replaced, new files
 * added, whiteouts replacing lower entries, opaque directories replacing
 * lower ones, and a directory over a lower file or whiteout made opaque so
 * the base stays hidden. Needs root (whiteouts are device nodes). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "layer_merge.h"
#include "util.h"

static char root[64];

static char *at(const char *layer, const char *rel)
{
    static char buf[4][512];
    static int k;

    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s/%s", root, layer, rel);
    return buf[k];
}

static void put(const char *layer, const char *rel, const char *text)
{
    assert_int_equal(
        util_write_atomic(at(layer, rel), text, strlen(text), 0644), 0);
}

static void dir(const char *layer, const char *rel)
{
    assert_int_equal(util_mkdirs(at(layer, rel)), 0);
}

static void whiteout(const char *layer, const char *rel)
{
    assert_int_equal(mknod(at(layer, rel), S_IFCHR | 0, makedev(0, 0)), 0);
}

static int opaque(const char *layer, const char *rel)
{
    char v[4] = "";

    return lgetxattr(at(layer, rel), "trusted.overlay.opaque", v, sizeof(v)) ==
               1 &&
           v[0] == 'y';
}

static char *text_of(const char *layer, const char *rel)
{
    return util_read_file(at(layer, rel), 100, NULL);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/test-layer-merge-XXXXXX");
    assert_non_null(mkdtemp(root));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    util_rmtree(root);
    return 0;
}

static void test_merge(void **state)
{
    char err[512] = "";
    struct stat st;
    char *t = NULL;

    (void)state;
    if (geteuid() != 0)
        skip();
    dir("lower", "keep");
    put("lower", "keep/same", "lower\n");
    put("lower", "keep/replaced", "lower\n");
    put("lower", "keep/deleted", "lower\n");
    dir("lower", "gone/sub");
    put("lower", "gone/sub/f", "lower\n");
    whiteout("lower", "was-deleted");
    put("lower", "file-then-dir", "lower\n");
    dir("lower", "op");
    put("lower", "op/old", "lower\n");

    dir("upper", "keep");
    chmod(at("upper", "keep"), 0711);
    put("upper", "keep/replaced", "upper\n");
    put("upper", "keep/new", "upper\n");
    whiteout("upper", "keep/deleted");
    whiteout("upper", "gone");
    dir("upper", "was-deleted");
    put("upper", "was-deleted/x", "upper\n");
    dir("upper", "file-then-dir");
    dir("upper", "op");
    put("upper", "op/new", "upper\n");
    assert_int_equal(
        lsetxattr(at("upper", "op"), "trusted.overlay.opaque", "y", 1, 0), 0);

    assert_int_equal(
        layer_merge(at("upper", ""), at("lower", ""), err, sizeof(err)), 0);
    assert_int_equal(stat(at("upper", ""), &st), -1); /* consumed */

    t = text_of("lower", "keep/same");
    assert_string_equal(t, "lower\n");
    free(t);
    t = text_of("lower", "keep/replaced");
    assert_string_equal(t, "upper\n");
    free(t);
    t = text_of("lower", "keep/new");
    assert_string_equal(t, "upper\n");
    free(t);
    assert_int_equal(lstat(at("lower", "keep"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0711);
    assert_int_equal(lstat(at("lower", "keep/deleted"), &st), 0);
    assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
    assert_int_equal(lstat(at("lower", "gone"), &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    /* A directory over a whiteout or a file hides the base. */
    assert_true(opaque("lower", "was-deleted"));
    assert_true(opaque("lower", "file-then-dir"));
    assert_false(opaque("lower", "keep"));
    /* An opaque upper directory replaces the lower one. */
    assert_true(opaque("lower", "op"));
    assert_int_equal(lstat(at("lower", "op/old"), &st), -1);
    t = text_of("lower", "op/new");
    assert_string_equal(t, "upper\n");
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_merge, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
