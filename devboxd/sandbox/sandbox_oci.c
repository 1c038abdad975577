/* The runc runtime of a devbox on an image: root inside a user namespace
 * whose ids map to a host range of the devbox's own (SB_RANGE_SIZE ids),
 * an idmapped view of the root-owned image as the overlay's lowest layer,
 * and an OCI bundle (config.json) that runc runs with the agent as pid 1
 * on the inherited socketpair.  Layout and what a devbox sees:
 * docs/sandbox.md. */
#define _GNU_SOURCE
#include "sandbox_internal.h"
#include "agent/agent_proto.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif

/* ---- a user namespace holding the devbox's mapping ------------------- */

static int write_map(pid_t pid, const char *file, uint32_t base)
{
    char path[64];
    char line[64];
    int fd;
    int n;
    int rc = 0;

    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    n = snprintf(line, sizeof(line), "0 %u %u\n", (unsigned)base,
                 (unsigned)SB_RANGE_SIZE);
    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (write(fd, line, (size_t)n) != n)
        rc = -errno;
    close(fd);
    return rc;
}

/* A user namespace mapping 0..SB_RANGE_SIZE-1 to base..: made by a child
 * that unshares and waits until its maps are written and the namespace is
 * opened.  Returns an O_CLOEXEC fd or -errno. */
int sb_oci_userns(uint32_t base)
{
    char path[64];
    int go[2] = {-1, -1};
    int ready[2] = {-1, -1};
    int fd = -1;
    int rc = 0;
    int status;
    char c = 0;
    pid_t pid;

    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(ready, O_CLOEXEC) != 0) {
        rc = -errno;
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        rc = -errno;
        goto out;
    }
    if (pid == 0) {
        /* async-signal-safe only */
        close(go[1]);
        close(ready[0]);
        c = unshare(CLONE_NEWUSER) == 0 ? 'u' : 'x';
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    close(ready[1]);
    ready[1] = -1;
    if (read(ready[0], &c, 1) != 1 || c != 'u')
        rc = -EPERM;
    if (rc == 0)
        rc = write_map(pid, "uid_map", base);
    if (rc == 0)
        rc = write_map(pid, "gid_map", base);
    if (rc == 0) {
        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            rc = -errno;
    }
    /* A byte, not EOF: a child another thread forked meanwhile holds a
     * copy of go[1] until it execs or exits, and two such children waited
     * on each other for ever (two devboxes or builds starting at once). */
    if (write(go[1], "g", 1) != 1)
        kill(pid, SIGKILL);
    close(go[1]);
    go[1] = -1;
    waitpid(pid, &status, 0);
out:
    sb_close_pair(go);
    sb_close_pair(ready);
    return rc != 0 ? rc : fd;
}

/* A detached, read-only, idmapped clone of path: files of host uid N show
 * as base+N, so the image's root-owned files belong to the devbox's root. */
int sb_oci_idmapped(const char *path, int userns_fd)
{
    struct mount_attr attr;
    int fd;

    fd = (int)syscall(SYS_open_tree, AT_FDCWD, path,
                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (fd < 0)
        return -errno;
    memset(&attr, 0, sizeof(attr));
    attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV;
    attr.userns_fd = (uint64_t)userns_fd;
    if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr,
                sizeof(attr)) != 0) {
        int e = errno;

        close(fd);
        return -e;
    }
    return fd;
}

/* ---- config.json ------------------------------------------------------ */

/* What a container's root gets by default elsewhere (Docker's set): enough
 * for package managers, sudo and servers; no SYS_ADMIN (mounts, masks stay
 * in place), no SYS_PTRACE (the non-dumpable agent stays out of reach). */
static const char *const caps[] = {
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
    NULL,
};

static const char *const masked[] = {
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/proc/cmdline",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
    NULL,
};

static const char *const readonly[] = {
    "/proc/bus",           "/proc/fs", "/proc/irq", "/proc/sys",
    "/proc/sysrq-trigger", NULL,
};

static cJSON *str_array(const char *const *v)
{
    cJSON *a = cJSON_CreateArray();
    size_t i;

    for (i = 0; a != NULL && v[i] != NULL; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
    return a;
}

static void add_mount(cJSON *mounts, const char *dst, const char *type,
                      const char *src, const char *const *opts)
{
    cJSON *m = cJSON_CreateObject();

    cJSON_AddStringToObject(m, "destination", dst);
    cJSON_AddStringToObject(m, "type", type);
    cJSON_AddStringToObject(m, "source", src);
    cJSON_AddItemToObject(m, "options", str_array(opts));
    cJSON_AddItemToArray(mounts, m);
}

static cJSON *build_mounts(uint32_t uid)
{
    cJSON *m = cJSON_CreateArray();
    char state_opt[64];
    static const char *const proc_o[] = {"nosuid", "noexec", "nodev", NULL};
    static const char *const dev_o[] = {"nosuid", "strictatime", "mode=755",
                                        "size=65536k", NULL};
    static const char *const pts_o[] = {
        "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", NULL};
    static const char *const shm_o[] = {"nosuid",    "noexec",      "nodev",
                                        "mode=1777", "size=65536k", NULL};
    static const char *const mq_o[] = {"nosuid", "noexec", "nodev", NULL};
    static const char *const sys_o[] = {"nosuid", "noexec", "nodev", "ro",
                                        NULL};
    static const char *const run_o[] = {"nosuid", "nodev", "mode=755", NULL};
    const char *state_o[] = {"nosuid", "nodev", "mode=700", state_opt, NULL};

    snprintf(state_opt, sizeof(state_opt), "uid=%u,gid=%u", (unsigned)uid,
             (unsigned)uid);
    add_mount(m, "/proc", "proc", "proc", proc_o);
    add_mount(m, "/dev", "tmpfs", "tmpfs", dev_o);
    add_mount(m, "/dev/pts", "devpts", "devpts", pts_o);
    add_mount(m, "/dev/shm", "tmpfs", "shm", shm_o);
    add_mount(m, "/dev/mqueue", "mqueue", "mqueue", mq_o);
    add_mount(m, "/sys", "sysfs", "sysfs", sys_o);
    add_mount(m, "/run", "tmpfs", "tmpfs", run_o);
    add_mount(m, AGENT_STATE_DIR, "tmpfs", "tmpfs", state_o);
    return m;
}

static cJSON *build_process(const struct sb_oci_conf *c)
{
    cJSON *p = cJSON_CreateObject();
    cJSON *user = cJSON_AddObjectToObject(p, "user");
    cJSON *args = cJSON_AddArrayToObject(p, "args");
    cJSON *env = cJSON_AddArrayToObject(p, "env");
    cJSON *cap = cJSON_AddObjectToObject(p, "capabilities");
    static const char *const sets[] = {"effective", "permitted", NULL};
    char buf[PATH_MAX + 16];
    size_t i;

    cJSON_AddBoolToObject(p, "terminal", false);
    cJSON_AddNumberToObject(user, "uid", c->uid);
    cJSON_AddNumberToObject(user, "gid", c->uid);
    snprintf(buf, sizeof(buf), "/proc/self/fd/%d", SB_OCI_AGENT_FD);
    cJSON_AddItemToArray(args, cJSON_CreateString(buf));
    cJSON_AddItemToArray(args, cJSON_CreateString("--oci"));
    if (c->with_ptyd) {
        cJSON_AddItemToArray(args, cJSON_CreateString("--ptyd-fd"));
        snprintf(buf, sizeof(buf), "%d", SB_OCI_PTYD_FD);
        cJSON_AddItemToArray(args, cJSON_CreateString(buf));
    }
    cJSON_AddItemToArray(
        env, cJSON_CreateString("PATH=/usr/local/sbin:/usr/local/bin:/usr/"
                                "sbin:/usr/bin:/sbin:/bin"));
    snprintf(buf, sizeof(buf), "HOME=%s", c->home);
    cJSON_AddItemToArray(env, cJSON_CreateString(buf));
    snprintf(buf, sizeof(buf), "USER=%s", c->user);
    cJSON_AddItemToArray(env, cJSON_CreateString(buf));
    snprintf(buf, sizeof(buf), "LOGNAME=%s", c->user);
    cJSON_AddItemToArray(env, cJSON_CreateString(buf));
    cJSON_AddItemToArray(env, cJSON_CreateString("SHELL=/bin/bash"));
    cJSON_AddItemToArray(env, cJSON_CreateString("LANG=C.UTF-8"));
    for (i = 0; c->env != NULL && c->env[i] != NULL; i++)
        cJSON_AddItemToArray(env, cJSON_CreateString(c->env[i]));
    cJSON_AddStringToObject(p, "cwd", c->home);
    /* Root holds the set; another user only has it as a bound (sudo). */
    cJSON_AddItemToObject(cap, "bounding", str_array(caps));
    for (i = 0; c->uid == 0 && sets[i] != NULL; i++)
        cJSON_AddItemToObject(cap, sets[i], str_array(caps));
    cJSON_AddBoolToObject(p, "noNewPrivileges", false);
    return p;
}

static cJSON *build_linux(const struct sb_oci_conf *c)
{
    cJSON *l = cJSON_CreateObject();
    cJSON *ns = cJSON_AddArrayToObject(l, "namespaces");
    cJSON *map = NULL;
    static const char *const types[] = {"pid",  "ipc",     "uts",    "mount",
                                        "user", "network", "cgroup", NULL};
    static const char *const maps[] = {"uidMappings", "gidMappings", NULL};
    char cg[256];
    size_t i;

    for (i = 0; types[i] != NULL; i++) {
        cJSON *o = cJSON_CreateObject();

        cJSON_AddStringToObject(o, "type", types[i]);
        cJSON_AddItemToArray(ns, o);
    }
    for (i = 0; maps[i] != NULL; i++) {
        cJSON *o = cJSON_CreateObject();

        map = cJSON_AddArrayToObject(l, maps[i]);
        cJSON_AddNumberToObject(o, "containerID", 0);
        cJSON_AddNumberToObject(o, "hostID", c->range);
        cJSON_AddNumberToObject(o, "size", SB_RANGE_SIZE);
        cJSON_AddItemToArray(map, o);
    }
    /* The groups sandbox_cgroup.c made and limits; runc joins them. */
    snprintf(cg, sizeof(cg), "/%s/%s", c->cgroup_name, c->id);
    cJSON_AddStringToObject(l, "cgroupsPath", cg);
    /* runc writes the cpuset group (it makes no other limit here): the
     * devbox's CPUs hold even for a command that widens its affinity. */
    if (c->cpus != NULL) {
        cJSON *cpu = cJSON_AddObjectToObject(
            cJSON_AddObjectToObject(l, "resources"), "cpu");

        cJSON_AddStringToObject(cpu, "cpus", c->cpus);
    }
    cJSON_AddItemToObject(l, "maskedPaths", str_array(masked));
    cJSON_AddItemToObject(l, "readonlyPaths", str_array(readonly));
    cJSON_AddItemToObject(l, "seccomp", sb_seccomp_oci());
    return l;
}

char *sb_oci_config(const struct sb_oci_conf *c)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *r = NULL;
    char *text = NULL;

    if (root == NULL)
        return NULL;
    cJSON_AddStringToObject(root, "ociVersion", "1.0.2");
    cJSON_AddItemToObject(root, "process", build_process(c));
    r = cJSON_AddObjectToObject(root, "root");
    cJSON_AddStringToObject(r, "path", SB_STAGE_DIR);
    cJSON_AddBoolToObject(r, "readonly", false);
    cJSON_AddStringToObject(root, "hostname", c->id);
    cJSON_AddItemToObject(root, "mounts", build_mounts(c->uid));
    cJSON_AddItemToObject(root, "linux", build_linux(c));
    text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}
