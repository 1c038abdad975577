/* cgroup v1 limits for sandboxes: <root>/<ctl>/<name>/<id> per controller.
 * A missing controller is skipped (rlimits in the child are the fallback). */
#define _GNU_SOURCE
#include "sandbox_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const ctl_names[SB_CG_N] = {"memory", "pids", "cpu",
                                               "cpuacct", "freezer"};

int sandbox_cgroup_detect(void)
{
    char path[4096];
    struct stat st;
    int i;

    for (i = 0; i < SB_CG_N; i++) {
        snprintf(path, sizeof(path), "%s/%s/cgroup.procs",
                 sandbox_rt.cgroup_root, ctl_names[i]);
        sandbox_rt.have_ctl[i] = stat(path, &st) == 0;
    }
    return 0;
}

static int write_at(const char *dir, const char *file, const char *val)
{
    char path[4096];
    int fd = -1;
    ssize_t n;
    size_t len = strlen(val);

    if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    n = write(fd, val, len);
    close(fd);
    if (n != (ssize_t)len)
        return n < 0 ? -errno : -EIO;
    return 0;
}

static int mkdir_p2(const char *parent, const char *child, char **out)
{
    char *path = NULL;

    if (asprintf(&path, "%s/%s", parent, child) < 0)
        return -ENOMEM;
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        int rc = -errno;
        free(path);
        return rc;
    }
    *out = path;
    return 0;
}

static int apply_limits(enum sb_ctl c, const char *dir,
                        const struct sb_limits *lim)
{
    char val[64];
    int rc = 0;

    switch (c) {
    case SB_CG_MEMORY:
        if (lim->memory_bytes == 0)
            break;
        snprintf(val, sizeof(val), "%" PRIu64, lim->memory_bytes);
        rc = write_at(dir, "memory.limit_in_bytes", val);
        /* memsw exists only with swap accounting; keep swap out when it
         * does, and ignore its absence. */
        if (rc == 0) {
            write_at(dir, "memory.memsw.limit_in_bytes", val);
            write_at(dir, "memory.swappiness", "0");
        }
        break;
    case SB_CG_PIDS:
        snprintf(val, sizeof(val), "%u",
                 lim->pids_max ? lim->pids_max : SB_DEFAULT_PIDS);
        rc = write_at(dir, "pids.max", val);
        break;
    case SB_CG_CPU:
        if (lim->cpu_millis == 0)
            break;
        rc = write_at(dir, "cpu.cfs_period_us", "100000");
        snprintf(val, sizeof(val), "%u", lim->cpu_millis * 100);
        if (rc == 0)
            rc = write_at(dir, "cpu.cfs_quota_us", val);
        break;
    default:
        break;
    }
    return rc;
}

int sandbox_cgroup_create(struct sb_cgroup *cg, const char *id,
                          const struct sb_limits *lim, char *err, size_t errlen)
{
    char *parent = NULL;
    char *top = NULL;
    int rc = 0;
    int i;

    memset(cg, 0, sizeof(*cg));
    for (i = 0; i < SB_CG_N; i++) {
        if (!sandbox_rt.have_ctl[i])
            continue;
        if (asprintf(&top, "%s/%s", sandbox_rt.cgroup_root, ctl_names[i]) < 0) {
            rc = -ENOMEM;
            goto fail;
        }
        rc = mkdir_p2(top, sandbox_rt.cgroup_name, &parent);
        free(top);
        top = NULL;
        if (rc == 0)
            rc = mkdir_p2(parent, id, &cg->path[i]);
        free(parent);
        parent = NULL;
        if (rc != 0) {
            sandbox_fs_err(err, errlen, rc,
                           "cannot create the %s cgroup for %s: %s",
                           ctl_names[i], id, strerror(-rc));
            goto fail;
        }
        rc = apply_limits((enum sb_ctl)i, cg->path[i], lim);
        if (rc != 0) {
            sandbox_fs_err(err, errlen, rc, "cannot set %s limits for %s: %s",
                           ctl_names[i], id, strerror(-rc));
            goto fail;
        }
    }
    return 0;
fail:
    sandbox_cgroup_remove(cg);
    return rc;
}

int sandbox_cgroup_open_procs(const struct sb_cgroup *cg, int fds[SB_CG_N])
{
    char path[4096];
    int i;
    int rc = 0;

    for (i = 0; i < SB_CG_N; i++)
        fds[i] = -1;
    for (i = 0; i < SB_CG_N; i++) {
        if (cg->path[i] == NULL)
            continue;
        snprintf(path, sizeof(path), "%s/cgroup.procs", cg->path[i]);
        fds[i] = open(path, O_WRONLY | O_CLOEXEC);
        if (fds[i] < 0) {
            rc = -errno;
            break;
        }
    }
    if (rc != 0) {
        for (i = 0; i < SB_CG_N; i++) {
            sandbox_close_fd(fds[i]);
            fds[i] = -1;
        }
    }
    return rc;
}

/* Signals every pid listed in the group's cgroup.procs; returns how many. */
static int kill_listed(const char *dir, int sig)
{
    char path[4096];
    FILE *f = NULL;
    long pid;
    int n = 0;

    snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
    f = fopen(path, "re");
    if (f == NULL)
        return 0;
    while (fscanf(f, "%ld", &pid) == 1) {
        if (pid > 1 && kill((pid_t)pid, sig) == 0)
            n++;
    }
    fclose(f);
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000L};

    nanosleep(&ts, NULL);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sandbox_cgroup_kill_all(struct sb_cgroup *cg, int timeout_ms)
{
    const char *dir =
        cg->path[SB_CG_PIDS] ? cg->path[SB_CG_PIDS] : cg->path[SB_CG_MEMORY];
    const char *frz = cg->path[SB_CG_FREEZER];
    int64_t deadline = now_ms() + timeout_ms;
    int left;

    if (dir == NULL)
        dir = frz;
    if (dir == NULL)
        return 0;
    /* Frozen tasks cannot fork while we walk the list; SIGKILL still lands
     * once thawed. */
    if (frz != NULL)
        write_at(frz, "freezer.state", "FROZEN");
    kill_listed(dir, SIGKILL);
    if (frz != NULL)
        write_at(frz, "freezer.state", "THAWED");
    for (;;) {
        left = kill_listed(dir, SIGKILL);
        if (left == 0)
            return 0;
        if (now_ms() > deadline)
            return -ETIMEDOUT;
        sleep_ms(2); /* bounded wait for the kernel to tear tasks down */
    }
}

void sandbox_cgroup_remove(struct sb_cgroup *cg)
{
    int i;
    int tries;

    for (i = 0; i < SB_CG_N; i++) {
        if (cg->path[i] == NULL)
            continue;
        /* rmdir fails with EBUSY while exiting tasks are still accounted. */
        for (tries = 0; tries < 500; tries++) {
            if (rmdir(cg->path[i]) == 0 || errno == ENOENT)
                break;
            if (errno != EBUSY)
                break;
            sleep_ms(2);
        }
        free(cg->path[i]);
        cg->path[i] = NULL;
    }
}

/* The number after key (NULL: at the start) in the cgroup file of
 * controller c; 0 when either is missing. */
static uint64_t read_counter(const struct sb_cgroup *cg, enum sb_ctl c,
                             const char *file, const char *key)
{
    char path[4096];
    char buf[512];
    const char *p = buf;

    if (cg->path[c] == NULL)
        return 0;
    snprintf(path, sizeof(path), "%s/%s", cg->path[c], file);
    if (sandbox_fs_read_small(path, buf, sizeof(buf)) <= 0)
        return 0;
    if (key != NULL) {
        p = strstr(buf, key);
        if (p == NULL)
            return 0;
        p += strlen(key);
    }
    return strtoull(p, NULL, 10);
}

uint64_t sandbox_cgroup_read_u64(const struct sb_cgroup *cg, enum sb_ctl c,
                                 const char *file)
{
    return read_counter(cg, c, file, NULL);
}

uint64_t sandbox_cgroup_oom_kills(const struct sb_cgroup *cg)
{
    return read_counter(cg, SB_CG_MEMORY, "memory.oom_control", "oom_kill ");
}

int sandbox_cgroup_pids_current(const struct sb_cgroup *cg)
{
    return (int)sandbox_cgroup_read_u64(cg, SB_CG_PIDS, "pids.current");
}

uint64_t sandbox_cgroup_pids_denied(const struct sb_cgroup *cg)
{
    return read_counter(cg, SB_CG_PIDS, "pids.events", "max ");
}

void sandbox_cgroup_remove_parents(void)
{
    char path[4096];
    int i;

    if (sandbox_rt.cgroup_root == NULL || sandbox_rt.cgroup_name == NULL)
        return;
    for (i = 0; i < SB_CG_N; i++) {
        snprintf(path, sizeof(path), "%s/%s/%s", sandbox_rt.cgroup_root,
                 ctl_names[i], sandbox_rt.cgroup_name);
        rmdir(path); /* fails harmlessly while devbox groups remain */
    }
}

bool sandbox_cgroup_cpu_pick(const char *id, uint32_t cpu_millis,
                             cpu_set_t *set)
{
    cpu_set_t own;
    int allowed[CPU_SETSIZE];
    int n_allowed = 0;
    uint32_t want;
    uint32_t hash = 2166136261u;
    const char *p;
    int cpu;
    int i;

    CPU_ZERO(set);
    if (cpu_millis == 0 || sched_getaffinity(0, sizeof(own), &own) != 0)
        return false;
    for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &own))
            allowed[n_allowed++] = cpu;
    }
    want = (cpu_millis + 999) / 1000;
    if (n_allowed == 0 || want >= (uint32_t)n_allowed)
        return false;
    /* FNV-1a of the id: devboxes of one size spread over the CPUs. */
    for (p = id; p != NULL && *p != '\0'; p++)
        hash = (hash ^ (unsigned char)*p) * 16777619u;
    for (i = 0; i < (int)want; i++)
        CPU_SET(allowed[(hash + (uint32_t)i) % (uint32_t)n_allowed], set);
    return true;
}

void sandbox_cgroup_cpu_list(const cpu_set_t *set, char *buf, size_t len)
{
    size_t used = 0;
    int cpu;
    int n;

    if (len > 0)
        buf[0] = '\0';
    for (cpu = 0; cpu < CPU_SETSIZE && used < len; cpu++) {
        if (!CPU_ISSET(cpu, set))
            continue;
        n = snprintf(buf + used, len - used, "%s%d", used > 0 ? "," : "", cpu);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

int sandbox_cgroup_freeze(struct sb_cgroup *cg, bool frozen, int timeout_ms)
{
    const char *frz = cg->path[SB_CG_FREEZER];
    const char *want = frozen ? "FROZEN" : "THAWED";
    char path[4096];
    char state[32];
    int64_t deadline = now_ms() + timeout_ms;
    int rc;

    if (frz == NULL)
        return -ENOTSUP;
    rc = write_at(frz, "freezer.state", want);
    if (rc != 0)
        return rc;
    snprintf(path, sizeof(path), "%s/freezer.state", frz);
    /* FREEZING lasts until every task has stopped (one in an
     * uninterruptible sleep holds it there). */
    for (;;) {
        if (sandbox_fs_read_small(path, state, sizeof(state)) > 0 &&
            strncmp(state, want, strlen(want)) == 0)
            return 0;
        if (now_ms() > deadline)
            return -ETIMEDOUT;
        sleep_ms(1);
    }
}

/* runc also makes the group in the controllers devboxd does not use
 * (blkio, cpuset, devices, ...): removes those, empty by now. */
static void remove_elsewhere(const char *id)
{
    char path[4096];
    DIR *d = opendir(sandbox_rt.cgroup_root);
    struct dirent *de;

    while (d != NULL && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s/%s/%s", sandbox_rt.cgroup_root,
                 de->d_name, sandbox_rt.cgroup_name, id);
        rmdir(path);
    }
    if (d != NULL)
        closedir(d);
}

int sandbox_cgroup_purge(const char *id)
{
    struct sb_cgroup cg;
    struct stat st;
    int found = 0;
    int rc = 0;
    int i;

    memset(&cg, 0, sizeof(cg));
    for (i = 0; i < SB_CG_N; i++) {
        if (!sandbox_rt.have_ctl[i])
            continue;
        if (asprintf(&cg.path[i], "%s/%s/%s/%s", sandbox_rt.cgroup_root,
                     ctl_names[i], sandbox_rt.cgroup_name, id) < 0) {
            cg.path[i] = NULL;
            rc = -ENOMEM;
            goto out;
        }
        if (stat(cg.path[i], &st) != 0) {
            free(cg.path[i]);
            cg.path[i] = NULL;
            continue;
        }
        found++;
    }
    /* kill_all thaws a group frozen mid-snapshot before it kills. */
    if (found > 0)
        rc = sandbox_cgroup_kill_all(&cg, 5000);
out:
    sandbox_cgroup_remove(&cg);
    remove_elsewhere(id);
    return rc < 0 ? rc : found;
}
