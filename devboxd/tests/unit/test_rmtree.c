/* util_rmtree on trees a devbox can build: nesting deeper than a thread
 * stack allows for a path-recursive walk and than PATH_MAX, symlinks to
 * outside that must be removed and never followed. It used to recurse with
 * a 4 KiB path buffer per level (stack overflow, and paths past 4200 bytes
 * truncated). Runs on a thread with a small stack, as request handlers do. */
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
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define DEPTH 3000

struct job {
    const char *path;
    int rc;
};

static void *run_rmtree(void *arg)
{
    struct job *j = arg;

    j->rc = util_rmtree(j->path);
    return NULL;
}

static int rmtree_small_stack(const char *path)
{
    pthread_attr_t attr;
    pthread_t tid;
    struct job j = {path, -2};

    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    assert_int_equal(pthread_create(&tid, &attr, run_rmtree, &j), 0);
    pthread_join(tid, NULL);
    pthread_attr_destroy(&attr);
    return j.rc;
}

static void write_file_at(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x", 1), 1);
    close(fd);
}

/* The tree's parent: memory (tmpfs) when there is one, so that 3000
 * levels take milliseconds, not seconds of a busy disk's journal. */
static const char *scratch_dir(void)
{
    return access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

static void test_deep_tree_with_symlinks(void **state)
{
    char base[64];
    char outside[256], keep[300], tree[256];
    struct stat st;
    int fd;
    int i;

    (void)state;
    snprintf(base, sizeof(base), "%s/test_rmtree.XXXXXX", scratch_dir());
    assert_non_null(mkdtemp(base));
    snprintf(outside, sizeof(outside), "%s/outside", base);
    snprintf(keep, sizeof(keep), "%s/keep.txt", outside);
    snprintf(tree, sizeof(tree), "%s/tree", base);
    assert_int_equal(mkdir(outside, 0755), 0);
    fd = open(outside, O_RDONLY | O_DIRECTORY);
    write_file_at(fd, "keep.txt");
    close(fd);
    assert_int_equal(mkdir(tree, 0755), 0);
    fd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    for (i = 0; i < DEPTH; i++) {
        int next;

        if (i % 100 == 0) {
            write_file_at(fd, "f");
            assert_int_equal(symlinkat(outside, fd, "to-outside"), 0);
            assert_int_equal(symlinkat(keep, fd, "to-keep"), 0);
            assert_int_equal(mkdirat(fd, "empty", 0755), 0);
        }
        assert_int_equal(mkdirat(fd, "d", 0755), 0);
        next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(next >= 0);
        close(fd);
        fd = next;
    }
    write_file_at(fd, "bottom");
    close(fd);

    assert_int_equal(rmtree_small_stack(tree), 0);
    assert_int_equal(lstat(tree, &st), -1);
    assert_int_equal(errno, ENOENT);
    /* What the symlinks named is untouched. */
    assert_int_equal(stat(keep, &st), 0);
    assert_true(S_ISREG(st.st_mode));

    /* A file, a symlink and a missing path. */
    assert_int_equal(rmtree_small_stack(keep), 0);
    assert_int_equal(lstat(keep, &st), -1);
    assert_int_equal(symlink(outside, tree), 0);
    assert_int_equal(rmtree_small_stack(tree), 0);
    assert_int_equal(lstat(tree, &st), -1);
    assert_int_equal(stat(outside, &st), 0);
    assert_int_equal(rmtree_small_stack(tree), 0);
    assert_int_equal(rmtree_small_stack(base), 0);
    assert_int_equal(lstat(base, &st), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deep_tree_with_symlinks),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
