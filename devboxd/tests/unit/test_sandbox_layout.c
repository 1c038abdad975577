/* Unit tests: per-devbox directory layout, base layer, host uid claims and
 * cgroup setup (needs root for chown and cgroups). */
#define _GNU_SOURCE
#include "sandbox_internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char state[64];

static int setup(void **st)
{
    char claims[128];

    (void)st;
    snprintf(state, sizeof(state), "/tmp/sbunit-XXXXXX");
    if (mkdtemp(state) == NULL)
        return -1;
    snprintf(claims, sizeof(claims), "%s/uids", state);
    if (mkdir(claims, 0700) != 0)
        return -1;
    memset(&sb_rt, 0, sizeof(sb_rt));
    sb_rt.claims_dir = strdup(claims);
    sb_rt.cgroup_root = strdup("/sys/fs/cgroup");
    sb_rt.cgroup_name = strdup("devboxd-unit");
    sb_rt.uid_base = 300000;
    sb_rt.uid_count = 4; /* small, to exercise collisions and exhaustion */
    sb_cg_detect();
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    sb_cg_remove_parents();
    sb_remove_tree(state);
    free(sb_rt.claims_dir);
    free(sb_rt.cgroup_root);
    free(sb_rt.cgroup_name);
    memset(&sb_rt, 0, sizeof(sb_rt));
    return 0;
}

static char *path2(const char *a, const char *b)
{
    char *p = NULL;

    assert_true(asprintf(&p, "%s/%s", a, b) > 0);
    return p;
}

static void assert_mode(const char *dir, const char *rel, mode_t type, mode_t mode, uid_t uid)
{
    struct stat st;
    char *p = path2(dir, rel);

    assert_int_equal(lstat(p, &st), 0);
    assert_int_equal(st.st_mode & S_IFMT, type);
    if (mode != 0)
        assert_int_equal(st.st_mode & 07777, mode);
    assert_int_equal(st.st_uid, uid);
    free(p);
}

static void test_layout(void **st)
{
    char *dir = path2(state, "box1");
    char *f = NULL;
    char buf[512];
    char err[256] = "";

    (void)st;
    assert_int_equal(sb_prepare_dir(dir, "box1", 300001, 300001, false, err, sizeof(err)), 0);
    assert_mode(dir, "", S_IFDIR, 0700, 0);
    assert_mode(dir, "upper", S_IFDIR, 0755, 0);
    assert_mode(dir, "work", S_IFDIR, 0700, 0);
    assert_mode(dir, "base/tmp", S_IFDIR, 01777, 0);
    assert_mode(dir, "base/home/user", S_IFDIR, 0755, 300001);
    assert_mode(dir, "base/bin", S_IFLNK, 0, 0);
    assert_mode(dir, "base/etc/passwd", S_IFREG, 0644, 0);
    assert_mode(dir, "base/usr", S_IFDIR, 0755, 0);
    f = path2(dir, "base/etc/passwd");
    assert_true(sb_read_small(f, buf, sizeof(buf)) > 0);
    assert_non_null(strstr(buf, "user:x:1000:1000:user:/home/user:/bin/bash"));
    free(f);
    f = path2(dir, "base/etc/hostname");
    assert_true(sb_read_small(f, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "box1\n");
    free(f);
    f = path2(dir, "base/etc/resolv.conf");
    assert_true(sb_read_small(f, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "nameserver 10.0.2.3\n");
    free(f);
    /* Idempotent (every start re-runs it). */
    assert_int_equal(sb_prepare_dir(dir, "box1", 300001, 300001, false, err, sizeof(err)), 0);
    free(dir);
}

static void test_uid_claims(void **st)
{
    char err[256] = "";
    char *dirs[5];
    uid_t uids[5];
    uid_t again;
    int i;
    int j;

    (void)st;
    for (i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof(name), "u%d", i);
        dirs[i] = path2(state, name);
        assert_int_equal(mkdir(dirs[i], 0700), 0);
    }
    /* Four uids in the range: four devboxes get distinct ones... */
    for (i = 0; i < 4; i++) {
        assert_int_equal(sb_uid_claim(dirs[i], "same-id-hash", &uids[i], err, sizeof(err)), 0);
        assert_true(uids[i] >= 300000 && uids[i] < 300004);
        for (j = 0; j < i; j++)
            assert_int_not_equal(uids[i], uids[j]);
    }
    /* ...the fifth is told the range is exhausted... */
    assert_int_equal(sb_uid_claim(dirs[4], "x", &uids[4], err, sizeof(err)), -EUSERS);
    assert_non_null(strstr(err, "in use"));
    /* ...a devbox keeps its uid across starts... */
    assert_int_equal(sb_uid_claim(dirs[2], "other", &again, err, sizeof(err)), 0);
    assert_int_equal(again, uids[2]);
    /* ...and releasing frees it for the next devbox. */
    assert_int_equal(sb_uid_release(dirs[2]), 0);
    assert_int_equal(sb_remove_tree(dirs[2]), 0);
    assert_int_equal(sb_uid_claim(dirs[4], "x", &uids[4], err, sizeof(err)), 0);
    assert_int_equal(uids[4], uids[2]);
    for (i = 0; i < 5; i++)
        free(dirs[i]);
}

static void test_uid_file_tampered(void **st)
{
    char err[256] = "";
    char *dir = path2(state, "tamper");
    int fd;
    uid_t uid;

    (void)st;
    assert_int_equal(mkdir(dir, 0700), 0);
    fd = openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY);
    assert_int_equal(sb_write_file(fd, "uid", "0\n", 0600), 0);
    close(fd);
    assert_int_equal(sb_uid_claim(dir, "t", &uid, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "remove it"));
    free(dir);
}

static void test_cgroup_limits(void **st)
{
    struct sb_limits lim = {.memory_bytes = 64ULL << 20, .pids_max = 77, .cpu_millis = 500};
    struct sb_cgroup cg;
    char err[256] = "";
    struct stat s;
    char *p = NULL;

    (void)st;
    if (!sb_rt.have_ctl[SB_CG_MEMORY] || !sb_rt.have_ctl[SB_CG_PIDS]) {
        print_message("no cgroup v1 memory/pids here: checking the rlimit fallback path only\n");
        assert_int_equal(sb_cg_create(&cg, "unit1", &lim, err, sizeof(err)), 0);
        sb_cg_remove(&cg);
        return;
    }
    assert_int_equal(sb_cg_create(&cg, "unit1", &lim, err, sizeof(err)), 0);
    assert_int_equal(sb_cg_read_u64(&cg, SB_CG_MEMORY, "memory.limit_in_bytes"), 64ULL << 20);
    assert_int_equal(sb_cg_read_u64(&cg, SB_CG_PIDS, "pids.max"), 77);
    if (sb_rt.have_ctl[SB_CG_CPU])
        assert_int_equal(sb_cg_read_u64(&cg, SB_CG_CPU, "cpu.cfs_quota_us"), 50000);
    assert_int_equal(sb_cg_pids_current(&cg), 0);
    assert_int_equal(sb_cg_oom_kills(&cg), 0);
    p = strdup(cg.path[SB_CG_PIDS]);
    assert_int_equal(stat(p, &s), 0);
    assert_int_equal(sb_cg_kill_all(&cg, 1000), 0); /* empty group: nothing to do */
    sb_cg_remove(&cg);
    assert_int_not_equal(stat(p, &s), 0);
    assert_null(cg.path[SB_CG_PIDS]);
    free(p);
    /* Defaults: no memory limit written, pids gets the default cap. */
    memset(&lim, 0, sizeof(lim));
    assert_int_equal(sb_cg_create(&cg, "unit2", &lim, err, sizeof(err)), 0);
    assert_int_equal(sb_cg_read_u64(&cg, SB_CG_PIDS, "pids.max"), SB_DEFAULT_PIDS);
    sb_cg_remove(&cg);
}

static void test_cgroup_bad_limit(void **st)
{
    struct sb_limits lim = {.memory_bytes = 1}; /* kernel rounds; must still succeed or explain */
    struct sb_cgroup cg;
    char err[256] = "";
    int rc;

    (void)st;
    rc = sb_cg_create(&cg, "unit3", &lim, err, sizeof(err));
    if (rc != 0)
        assert_non_null(strstr(err, "limits"));
    else
        sb_cg_remove(&cg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_uid_claims),
        cmocka_unit_test(test_uid_file_tampered),
        cmocka_unit_test(test_cgroup_limits),
        cmocka_unit_test(test_cgroup_bad_limit),
    };

    if (geteuid() != 0) {
        fprintf(stderr, "test_sandbox_layout needs root (chown, cgroups)\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
