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
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXT4_MAGIC 0xEF53

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
    memset(&sandbox_rt, 0, sizeof(sandbox_rt));
    sandbox_rt.state_dir = strdup(state);
    snprintf(claims, sizeof(claims), "%s/sandbox", state);
    if (mkdir(claims, 0700) != 0)
        return -1;
    snprintf(claims, sizeof(claims), "%s/uids", state);
    sandbox_rt.claims_dir = strdup(claims);
    sandbox_rt.cgroup_root = strdup("/sys/fs/cgroup");
    sandbox_rt.cgroup_name = strdup("devboxd-unit");
    sandbox_rt.range_slots = 4; /* few, to exercise collisions and exhaustion */
    sandbox_cgroup_detect();
    return 0;
}

static int teardown(void **st)
{
    char disk[128];

    (void)st;
    sandbox_cgroup_remove_parents();
    /* A failed disk test leaves its disk mounted: never leave it behind. */
    snprintf(disk, sizeof(disk), "%s/diskbox", state);
    sandbox_disk_detach(disk);
    sandbox_fs_remove_tree(state);
    free(sandbox_rt.state_dir);
    free(sandbox_rt.claims_dir);
    free(sandbox_rt.cgroup_root);
    free(sandbox_rt.cgroup_name);
    memset(&sandbox_rt, 0, sizeof(sandbox_rt));
    return 0;
}

static char *path2(const char *a, const char *b)
{
    char *p = NULL;

    assert_true(asprintf(&p, "%s/%s", a, b) > 0);
    return p;
}

static void assert_mode(const char *dir, const char *rel, mode_t type,
                        mode_t mode, uid_t uid)
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
    assert_int_equal(
        sandbox_fs_prepare_dir(dir, "box1", 300001, 300001, err, sizeof(err)),
        0);
    assert_mode(dir, "", S_IFDIR, 0700, 0);
    assert_mode(dir, "upper", S_IFDIR, 0755, 0);
    assert_mode(dir, "work", S_IFDIR, 0700, 0);
    assert_mode(dir, "base/tmp", S_IFDIR, 01777, 0);
    assert_mode(dir, "base/home/user", S_IFDIR, 0755, 300001);
    assert_mode(dir, "base/bin", S_IFLNK, 0, 0);
    assert_mode(dir, "base/usr", S_IFDIR, 0755, 0);
    /* Users come from the image: the base layer has no passwd to hide it. */
    f = path2(dir, "base/etc/passwd");
    assert_int_equal(access(f, F_OK), -1);
    free(f);
    f = path2(dir, "base/etc/hostname");
    assert_true(sandbox_fs_read_small(f, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "box1\n");
    free(f);
    f = path2(dir, "base/etc/resolv.conf");
    assert_true(sandbox_fs_read_small(f, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "nameserver 10.0.2.3\n");
    free(f);
    /* Idempotent (every start re-runs it). */
    assert_int_equal(
        sandbox_fs_prepare_dir(dir, "box1", 300001, 300001, err, sizeof(err)),
        0);
    free(dir);
}

static void test_uid_claims(void **st)
{
    char err[256] = "";
    char *dirs[5];
    uint32_t uids[5];
    uint32_t again;
    int i;
    int j;

    (void)st;
    for (i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof(name), "u%d", i);
        dirs[i] = path2(state, name);
        assert_int_equal(mkdir(dirs[i], 0700), 0);
    }
    /* Four ranges: four devboxes get distinct ones... */
    for (i = 0; i < 4; i++) {
        assert_int_equal(sandbox_fs_range_claim(dirs[i], "same-id-hash",
                                                &uids[i], err, sizeof(err)),
                         0);
        assert_true(uids[i] >= SB_RANGE_BASE &&
                    uids[i] < SB_RANGE_BASE + 4 * SB_RANGE_SIZE);
        assert_int_equal((uids[i] - SB_RANGE_BASE) % SB_RANGE_SIZE, 0);
        for (j = 0; j < i; j++)
            assert_int_not_equal(uids[i], uids[j]);
    }
    /* ...the fifth is told they are all in use... */
    assert_int_equal(
        sandbox_fs_range_claim(dirs[4], "x", &uids[4], err, sizeof(err)),
        -EUSERS);
    assert_non_null(strstr(err, "in use"));
    /* ...a devbox keeps its range across starts... */
    assert_int_equal(
        sandbox_fs_range_claim(dirs[2], "other", &again, err, sizeof(err)), 0);
    assert_int_equal(again, uids[2]);
    /* ...and releasing frees it for the next devbox. */
    assert_int_equal(sandbox_fs_uid_release(dirs[2]), 0);
    assert_int_equal(sandbox_fs_remove_tree(dirs[2]), 0);
    assert_int_equal(
        sandbox_fs_range_claim(dirs[4], "x", &uids[4], err, sizeof(err)), 0);
    assert_int_equal(uids[4], uids[2]);
    for (i = 0; i < 5; i++)
        free(dirs[i]);
}

/* Claims are shared by every engine of the machine: one whose owner's
 * record dir is gone (a state dir deleted without a clean stop) is taken
 * again; one whose record dir is there (a stopped engine's devbox) never. */
static void test_uid_claims_stale(void **st)
{
    char err[256] = "";
    char owner[256];
    char claim[256];
    char *dirs[2];
    uint32_t range;
    int fd;
    int i;

    (void)st;
    for (i = 0; i < 2; i++) {
        char name[16];

        snprintf(name, sizeof(name), "s%d/sandbox", i);
        dirs[i] = path2(state, name);
        snprintf(owner, sizeof(owner), "%s/s%d", state, i);
        assert_int_equal(mkdir(owner, 0700), 0);
        assert_int_equal(mkdir(dirs[i], 0700), 0);
    }
    /* Three ranges held by a gone state dir, the fourth by a live record. */
    for (i = 0; i < 4; i++) {
        snprintf(claim, sizeof(claim), "%s/%u", sandbox_rt.claims_dir,
                 SB_RANGE_BASE + (unsigned)i * SB_RANGE_SIZE);
        if (i < 3)
            snprintf(owner, sizeof(owner),
                     "/nonexistent-state/devboxes/g%d/sandbox", i);
        else
            snprintf(owner, sizeof(owner), "%s/sandbox",
                     state); /* state exists */
        unlink(claim);       /* test_uid_claims' devboxes are done */
        fd = open(claim, O_WRONLY | O_CREAT | O_EXCL, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, owner, strlen(owner)),
                         (ssize_t)strlen(owner));
        close(fd);
    }
    assert_int_equal(
        sandbox_fs_range_claim(dirs[0], "stale-a", &range, err, sizeof(err)),
        0);
    assert_true(range >= SB_RANGE_BASE &&
                range < SB_RANGE_BASE + 3 * SB_RANGE_SIZE);
    assert_int_equal(
        sandbox_fs_range_claim(dirs[1], "stale-b", &range, err, sizeof(err)),
        0);
    assert_true(range >= SB_RANGE_BASE &&
                range < SB_RANGE_BASE + 3 * SB_RANGE_SIZE);
    for (i = 0; i < 2; i++) {
        assert_int_equal(sandbox_fs_uid_release(dirs[i]), 0);
        assert_int_equal(sandbox_fs_remove_tree(dirs[i]), 0);
        free(dirs[i]);
    }
    /* The live claim was never taken; clean up the rest. */
    snprintf(claim, sizeof(claim), "%s/%u", sandbox_rt.claims_dir,
             SB_RANGE_BASE + 3 * SB_RANGE_SIZE);
    assert_int_equal(unlink(claim), 0);
    for (i = 0; i < 3; i++) {
        snprintf(claim, sizeof(claim), "%s/%u", sandbox_rt.claims_dir,
                 SB_RANGE_BASE + (unsigned)i * SB_RANGE_SIZE);
        unlink(claim);
    }
}

static void test_uid_file_tampered(void **st)
{
    char err[256] = "";
    char *dir = path2(state, "tamper");
    int fd;
    uint32_t range;

    (void)st;
    assert_int_equal(mkdir(dir, 0700), 0);
    fd = openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY);
    assert_int_equal(sandbox_fs_write_file(fd, SB_FILE_RANGE, "0\n", 0600), 0);
    close(fd);
    assert_int_equal(sandbox_fs_range_claim(dir, "t", &range, err, sizeof(err)),
                     -EINVAL);
    assert_non_null(strstr(err, "remove it"));
    free(dir);
}

static void test_cgroup_limits(void **st)
{
    struct sb_limits lim = {
        .memory_bytes = 64ULL << 20, .pids_max = 77, .cpu_millis = 500};
    struct sb_cgroup cg;
    char err[256] = "";
    struct stat s;
    char *p = NULL;

    (void)st;
    if (!sandbox_rt.have_ctl[SB_CG_MEMORY] ||
        !sandbox_rt.have_ctl[SB_CG_PIDS]) {
        print_message("no cgroup v1 memory/pids here: checking the rlimit "
                      "fallback path only\n");
        assert_int_equal(
            sandbox_cgroup_create(&cg, "unit1", &lim, err, sizeof(err)), 0);
        sandbox_cgroup_remove(&cg);
        return;
    }
    assert_int_equal(
        sandbox_cgroup_create(&cg, "unit1", &lim, err, sizeof(err)), 0);
    assert_int_equal(
        sandbox_cgroup_read_u64(&cg, SB_CG_MEMORY, "memory.limit_in_bytes"),
        64ULL << 20);
    assert_int_equal(sandbox_cgroup_read_u64(&cg, SB_CG_PIDS, "pids.max"), 77);
    if (sandbox_rt.have_ctl[SB_CG_CPU])
        assert_int_equal(
            sandbox_cgroup_read_u64(&cg, SB_CG_CPU, "cpu.cfs_quota_us"), 50000);
    assert_int_equal(sandbox_cgroup_pids_current(&cg), 0);
    assert_int_equal(sandbox_cgroup_oom_kills(&cg), 0);
    p = strdup(cg.path[SB_CG_PIDS]);
    assert_int_equal(stat(p, &s), 0);
    assert_int_equal(sandbox_cgroup_kill_all(&cg, 1000),
                     0); /* empty group: nothing to do */
    sandbox_cgroup_remove(&cg);
    assert_int_not_equal(stat(p, &s), 0);
    assert_null(cg.path[SB_CG_PIDS]);
    free(p);
    /* Defaults: no memory limit written, pids gets the default cap. */
    memset(&lim, 0, sizeof(lim));
    assert_int_equal(
        sandbox_cgroup_create(&cg, "unit2", &lim, err, sizeof(err)), 0);
    assert_int_equal(sandbox_cgroup_read_u64(&cg, SB_CG_PIDS, "pids.max"),
                     SB_DEFAULT_PIDS);
    sandbox_cgroup_remove(&cg);
}

static void test_cgroup_bad_limit(void **st)
{
    struct sb_limits lim = {
        .memory_bytes = 1}; /* kernel rounds; must still succeed or explain */
    struct sb_cgroup cg;
    char err[256] = "";
    int rc;

    (void)st;
    rc = sandbox_cgroup_create(&cg, "unit3", &lim, err, sizeof(err));
    if (rc != 0)
        assert_non_null(strstr(err, "limits"));
    else
        sandbox_cgroup_remove(&cg);
}

/* Writes to path until the disk refuses; returns the bytes written. */
static uint64_t fill(const char *path)
{
    static char buf[1 << 20];
    uint64_t total = 0;
    ssize_t n;
    int fd;

    memset(buf, 'x', sizeof(buf));
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    while ((n = write(fd, buf, sizeof(buf))) > 0)
        total += (uint64_t)n;
    assert_int_equal(n, -1);
    assert_int_equal(errno, ENOSPC);
    close(fd);
    return total;
}

/* A second disk of a size is a sparse copy of the formatted template. */
static void test_disk_copy(void)
{
    char *dir = path2(state, "diskbox2");
    char *img = path2(state, "diskbox2.img");
    char tpl[160];
    char err[256] = "";
    struct statfs fs;
    struct stat st;

    snprintf(tpl, sizeof(tpl), "%s/sandbox/disks/ext4-v1-%llu.img", state,
             (unsigned long long)SANDBOX_DISK_MIN_BYTES);
    assert_int_equal(access(tpl, R_OK), 0);
    assert_int_equal(
        sandbox_disk_attach(dir, SANDBOX_DISK_MIN_BYTES, err, sizeof(err)), 0);
    assert_int_equal(statfs(dir, &fs), 0);
    assert_int_equal(fs.f_type, EXT4_MAGIC);
    assert_int_equal(stat(img, &st), 0);
    assert_int_equal(st.st_size, SANDBOX_DISK_MIN_BYTES);
    assert_true(st.st_blocks * 512 < 16 * 1024 * 1024);
    assert_int_equal(sandbox_destroy_dir(dir, err, sizeof(err)), 0);
    assert_int_equal(access(img, F_OK), -1);
    free(dir);
    free(img);
}

/* Another mount namespace copied the disk's mount; devboxd unmounts it and
 * mounts it again: the same filesystem (device) comes back, not a second
 * one writing the same image. */
static void test_disk_copied_mount(const char *dir)
{
    char err[256] = "";
    struct stat before;
    struct stat after;
    int go[2];
    int ready[2];
    char c = 0;
    pid_t pid;
    int status;

    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(stat(dir, &before), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Only the parent's end: the child must see it close. */
        close(go[1]);
        if (unshare(CLONE_NEWNS) != 0 ||
            mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
            _exit(1);
        if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(sandbox_disk_detach(dir), 0);
    assert_int_equal(
        sandbox_disk_attach(dir, SANDBOX_DISK_MIN_BYTES, err, sizeof(err)), 0);
    assert_int_equal(stat(dir, &after), 0);
    assert_int_equal(before.st_dev, after.st_dev);
    assert_int_equal(write(go[1], "g", 1), 1);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(go[0]);
    close(go[1]);
    close(ready[0]);
    close(ready[1]);
}

/* The devbox's disk: a loop-mounted ext4 of the asked size on the dir. */
static void test_disk(void **st)
{
    char *dir = path2(state, "diskbox");
    char *img = path2(state, "diskbox.img");
    char *big = path2(dir, "big");
    char claim[128];
    char err[256] = "";
    struct statfs fs;
    struct stat sb;
    uint64_t written;
    uint32_t range = 0;

    (void)st;
    sandbox_rt.disk_on = true;
    assert_int_equal(
        sandbox_disk_attach(dir, SANDBOX_DISK_MIN_BYTES - 1, err, sizeof(err)),
        -EINVAL);
    assert_non_null(strstr(err, "at least 256 MiB"));
    assert_int_equal(
        sandbox_disk_attach(dir, SANDBOX_DISK_MIN_BYTES, err, sizeof(err)), 0);
    assert_int_equal(statfs(dir, &fs), 0);
    assert_int_equal(fs.f_type, EXT4_MAGIC);
    assert_true((uint64_t)fs.f_blocks * fs.f_bsize <= SANDBOX_DISK_MIN_BYTES);
    assert_mode(state, "diskbox", S_IFDIR, 0700, 0);
    test_disk_copy();
    test_disk_copied_mount(dir);
    /* Attached already: a no-op.  The range claim is recorded on the disk. */
    assert_int_equal(
        sandbox_disk_attach(dir, SANDBOX_DISK_MIN_BYTES, err, sizeof(err)), 0);
    sandbox_rt.range_slots =
        SB_RANGE_SLOTS; /* the other tests may hold the few */
    assert_int_equal(
        sandbox_fs_range_claim(dir, "diskbox", &range, err, sizeof(err)), 0);
    sandbox_rt.range_slots = 4;
    /* Past its size: ENOSPC, and the host gave the image no more. */
    written = fill(big);
    assert_true(written < SANDBOX_DISK_MIN_BYTES &&
                written > SANDBOX_DISK_MIN_BYTES / 2);
    assert_int_equal(stat(img, &sb), 0);
    assert_true((uint64_t)sb.st_blocks * 512 <= SANDBOX_DISK_MIN_BYTES);
    /* Unmounted, the files are in the image only; mounted again, back. */
    assert_int_equal(sandbox_disk_detach(dir), 0);
    assert_int_equal(access(big, F_OK), -1);
    assert_int_equal(
        sandbox_disk_attach(dir, SANDBOX_DISK_MIN_BYTES, err, sizeof(err)), 0);
    assert_int_equal(access(big, F_OK), 0);
    /* Disks off (no new ones): an existing disk is mounted all the same. */
    assert_int_equal(sandbox_disk_detach(dir), 0);
    sandbox_rt.disk_on = false;
    assert_int_equal(sandbox_disk_attach(dir, 0, err, sizeof(err)), 0);
    assert_int_equal(access(big, F_OK), 0);
    sandbox_rt.disk_on = true;
    /* Destroyed while unmounted: the claim on the disk is released too. */
    assert_int_equal(sandbox_disk_detach(dir), 0);
    assert_int_equal(sandbox_destroy_dir(dir, err, sizeof(err)), 0);
    assert_int_equal(access(dir, F_OK), -1);
    assert_int_equal(access(img, F_OK), -1);
    snprintf(claim, sizeof(claim), "%s/uids/%u", state, (unsigned)range);
    assert_int_equal(access(claim, F_OK), -1);
    sandbox_rt.disk_on = false;
    free(dir);
    free(img);
    free(big);
}

/* No disk: disk_bytes 0, the runtime's disk off, or a dir made before
 * disks (files in it, no image): a plain dir, nothing mounted. */
static void test_disk_not_made(void **st)
{
    char *dir = path2(state, "nodisk");
    char *img = path2(state, "nodisk.img");
    char *old = path2(dir, "old");
    char err[256] = "";
    struct stat a;
    struct stat b;
    int fd;

    (void)st;
    sandbox_rt.disk_on = false;
    assert_int_equal(
        sandbox_disk_attach(dir, SANDBOX_DISK_MIN_BYTES, err, sizeof(err)), 0);
    sandbox_rt.disk_on = true;
    assert_int_equal(sandbox_disk_attach(dir, 0, err, sizeof(err)), 0);
    fd = open(old, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(
        sandbox_disk_attach(dir, SANDBOX_DISK_MIN_BYTES, err, sizeof(err)), 0);
    assert_int_equal(stat(dir, &a), 0);
    assert_int_equal(stat(state, &b), 0);
    assert_int_equal(a.st_dev, b.st_dev); /* nothing mounted on it */
    assert_int_equal(access(old, F_OK), 0);
    assert_int_equal(access(img, F_OK), -1);
    assert_int_equal(sandbox_disk_detach(dir), 0);
    assert_int_equal(sandbox_destroy_dir(dir, err, sizeof(err)), 0);
    sandbox_rt.disk_on = false;
    free(dir);
    free(img);
    free(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_uid_claims),
        cmocka_unit_test(test_uid_claims_stale),
        cmocka_unit_test(test_uid_file_tampered),
        cmocka_unit_test(test_cgroup_limits),
        cmocka_unit_test(test_cgroup_bad_limit),
        cmocka_unit_test(test_disk),
        cmocka_unit_test(test_disk_not_made),
    };

    if (geteuid() != 0) {
        fprintf(stderr, "test_sandbox_layout needs root (chown, cgroups)\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
