/* The runc runtime of a devbox on an image: root inside a user namespace
 * whose ids map to a host range of the devbox's own (SB_RANGE_SIZE ids),
 * an idmapped view of the root-owned image as the overlay's lowest layer,
 * and an OCI bundle (config.json) that runc runs with the agent as pid 1
 * on the inherited socketpair.  Layout and what a devbox sees:
 * docs/sandbox.md. */
#define _GNU_SOURCE
#include "sandbox_internal.h"

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

static int write_map(pid_t pid, const char *file, uint32_t inside,
                     uint32_t base)
{
    char path[64];
    char line[64];
    int fd;
    int n;
    int rc = 0;

    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    n = snprintf(line, sizeof(line), "%u %u %u\n", (unsigned)inside,
                 (unsigned)base, (unsigned)SB_RANGE_SIZE);
    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (write(fd, line, (size_t)n) != n)
        rc = -errno;
    close(fd);
    return rc;
}

/* A user namespace mapping inside..inside+SB_RANGE_SIZE-1 to base..: made
 * by a child that unshares and waits until its maps are written and the
 * namespace is opened.  Returns an O_CLOEXEC fd or -errno. */
int sandbox_oci_userns_map(uint32_t inside, uint32_t base)
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
        rc = write_map(pid, "uid_map", inside, base);
    if (rc == 0)
        rc = write_map(pid, "gid_map", inside, base);
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
    sandbox_close_pair(go);
    sandbox_close_pair(ready);
    return rc != 0 ? rc : fd;
}

int sandbox_oci_userns(uint32_t base)
{
    return sandbox_oci_userns_map(0, base);
}

/* A detached, read-only, idmapped clone of path: files of host uid N show
 * as base+N, so the image's root-owned files belong to the devbox's root. */
int sandbox_oci_idmapped(const char *path, int userns_fd)
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

/* /dev, /dev/shm, /run and the agent's state dir are not here: the
 * launcher mounts tmpfs's devboxd made (sandbox_oci_mounts) before runc runs. */
static cJSON *build_mounts(bool meminfo)
{
    cJSON *m = cJSON_CreateArray();
    static const char *const proc_o[] = {"nosuid", "noexec", "nodev", NULL};
    /* gid=5 (tty), as runc's default: sshd gives up on a terminal it
     * cannot hand to group tty, which the devbox user may not chown to. */
    static const char *const pts_o[] = {
        "nosuid",    "noexec", "newinstance", "ptmxmode=0666",
        "mode=0620", "gid=5",  NULL};
    static const char *const mq_o[] = {"nosuid", "noexec", "nodev", NULL};
    static const char *const sys_o[] = {"nosuid", "noexec", "nodev", "ro",
                                        NULL};
    static const char *const bind_o[] = {"bind",   "ro",    "nosuid",
                                         "noexec", "nodev", NULL};

    add_mount(m, "/proc", "proc", "proc", proc_o);
    /* The devbox's own figures (sandbox_refresh_meminfo), not the host's. */
    if (meminfo)
        add_mount(m, "/proc/meminfo", "bind", SB_STAGE_DIR "/" SB_OCI_MEMINFO,
                  bind_o);
    add_mount(m, "/dev/pts", "devpts", "devpts", pts_o);
    add_mount(m, "/dev/mqueue", "mqueue", "mqueue", mq_o);
    add_mount(m, "/sys", "sysfs", "sysfs", sys_o);
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
    cJSON *sc = NULL;
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
    sc = sandbox_seccomp_oci();
    if (sc == NULL) { /* never a devbox without its filter */
        cJSON_Delete(l);
        return NULL;
    }
    cJSON_AddItemToObject(l, "seccomp", sc);
    return l;
}

char *sandbox_oci_config(const struct sb_oci_conf *c)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *r = NULL;
    cJSON *lx = NULL;
    char *text = NULL;

    if (root == NULL)
        return NULL;
    cJSON_AddStringToObject(root, "ociVersion", "1.0.2");
    cJSON_AddItemToObject(root, "process", build_process(c));
    r = cJSON_AddObjectToObject(root, "root");
    cJSON_AddStringToObject(r, "path", SB_OCI_ROOT);
    cJSON_AddBoolToObject(r, "readonly", false);
    cJSON_AddStringToObject(root, "hostname", c->id);
    cJSON_AddItemToObject(root, "mounts", build_mounts(c->meminfo));
    lx = build_linux(c);
    if (lx == NULL) {
        cJSON_Delete(root);
        return NULL;
    }
    cJSON_AddItemToObject(root, "linux", lx);
    text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

/* ---- the devbox's own tmpfs mounts and /proc/meminfo ------------------- */

/* A detached tmpfs made by devboxd (host root), its root handed to owner:
 * the superblock's owner is then root, so the mount's options inside show
 * no uid=/gid= (the kernel prints them in host ids), unlike a tmpfs runc
 * makes in the devbox's user namespace. */
static int detached_tmpfs(const char *mode, const char *size, unsigned attrs,
                          uint32_t owner)
{
    int fsfd = -1;
    int mfd = -1;
    int rc = 0;

    fsfd = fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (fsfd < 0)
        return -errno;
    if (fsconfig(fsfd, FSCONFIG_SET_STRING, "mode", mode, 0) != 0 ||
        (size != NULL &&
         fsconfig(fsfd, FSCONFIG_SET_STRING, "size", size, 0) != 0) ||
        fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0) {
        rc = -errno;
        goto out;
    }
    mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, attrs);
    if (mfd < 0) {
        rc = -errno;
        goto out;
    }
    if (fchownat(mfd, "", owner, owner, AT_EMPTY_PATH) != 0)
        rc = -errno;
out:
    sandbox_close_fd(fsfd);
    if (rc != 0)
        sandbox_close_fd(mfd);
    return rc != 0 ? rc : mfd;
}

void sandbox_oci_mounts_close(struct sandbox_oci_mounts *m)
{
    sandbox_close_fd(m->stage);
    sandbox_close_fd(m->dev);
    sandbox_close_fd(m->shm);
    sandbox_close_fd(m->run);
    sandbox_close_fd(m->state);
    m->stage = m->dev = m->shm = m->run = m->state = -1;
}

int sandbox_oci_mounts(struct sandbox_oci_mounts *m, uint32_t range,
                       uint32_t uid, bool meminfo, int *meminfo_fd)
{
    const unsigned nsnd = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    int rc = 0;

    m->stage = m->dev = m->shm = m->run = m->state = -1;
    *meminfo_fd = -1;
    /* The launcher's stage: the bundle's root (the overlay goes on
     * root/) and the generated meminfo, in a tmpfs no devbox writes. */
    m->stage = detached_tmpfs("755", "1m", nsnd, 0);
    if (m->stage < 0)
        return m->stage;
    if (mkdirat(m->stage, "root", 0755) != 0)
        rc = -errno;
    if (rc == 0 && meminfo) {
        *meminfo_fd = openat(m->stage, SB_OCI_MEMINFO,
                             O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        if (*meminfo_fd < 0)
            rc = -errno;
    }
    if (rc == 0) {
        m->dev = detached_tmpfs(
            "755", "65536k", MOUNT_ATTR_NOSUID | MOUNT_ATTR_STRICTATIME, range);
        rc = m->dev < 0 ? m->dev : 0;
    }
    if (rc == 0 && (mkdirat(m->dev, "shm", 01777) != 0 ||
                    fchownat(m->dev, "shm", range, range, 0) != 0))
        rc = -errno;
    if (rc == 0) {
        m->shm =
            detached_tmpfs("1777", "65536k", nsnd | MOUNT_ATTR_NOEXEC, range);
        rc = m->shm < 0 ? m->shm : 0;
    }
    if (rc == 0) {
        m->run = detached_tmpfs("755", NULL, nsnd, range);
        rc = m->run < 0 ? m->run : 0;
    }
    if (rc == 0 &&
        (mkdirat(m->run, "devbox", 0700) != 0 ||
         fchownat(m->run, "devbox", range + uid, range + uid, 0) != 0))
        rc = -errno;
    if (rc == 0) {
        m->state = detached_tmpfs("700", NULL, nsnd, range + uid);
        rc = m->state < 0 ? m->state : 0;
    }
    if (rc != 0) {
        sandbox_oci_mounts_close(m);
        sandbox_close_fd(*meminfo_fd);
        *meminfo_fd = -1;
    }
    return rc;
}

/* One "Key:   N kB" line as the kernel prints it. */
static size_t kb_line(char *buf, size_t len, size_t off, const char *key,
                      uint64_t bytes)
{
    int n;

    if (off >= len)
        return off;
    n = snprintf(buf + off, len - off, "%-16s%8llu kB\n", key,
                 (unsigned long long)(bytes / 1024));
    return n > 0 ? off + (size_t)n : off;
}

/* A value of memory.stat ("key N" lines), 0 when absent. */
static uint64_t stat_value(const char *stat, const char *key)
{
    size_t klen = strlen(key);
    const char *p = stat;

    while (p != NULL && *p != '\0') {
        if (strncmp(p, key, klen) == 0 && p[klen] == ' ')
            return strtoull(p + klen + 1, NULL, 10);
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return 0;
}

size_t sandbox_oci_meminfo_text(char *buf, size_t len, uint64_t limit,
                                uint64_t usage, const char *stat)
{
    uint64_t cache = stat_value(stat, "total_cache");
    uint64_t shmem = stat_value(stat, "total_shmem");
    uint64_t act_anon = stat_value(stat, "total_active_anon");
    uint64_t ina_anon = stat_value(stat, "total_inactive_anon");
    uint64_t act_file = stat_value(stat, "total_active_file");
    uint64_t ina_file = stat_value(stat, "total_inactive_file");
    uint64_t used = usage < limit ? usage : limit;
    uint64_t free_b = limit - used;
    uint64_t avail = free_b + (ina_file < used ? ina_file : 0);
    size_t off = 0;

    if (cache > used)
        cache = used;
    off = kb_line(buf, len, off, "MemTotal:", limit);
    off = kb_line(buf, len, off, "MemFree:", free_b);
    off =
        kb_line(buf, len, off, "MemAvailable:", avail < limit ? avail : limit);
    off = kb_line(buf, len, off, "Buffers:", 0);
    off = kb_line(buf, len, off, "Cached:", cache);
    off = kb_line(buf, len, off, "SwapCached:", 0);
    off = kb_line(buf, len, off, "Active:", act_anon + act_file);
    off = kb_line(buf, len, off, "Inactive:", ina_anon + ina_file);
    off = kb_line(buf, len, off, "Active(anon):", act_anon);
    off = kb_line(buf, len, off, "Inactive(anon):", ina_anon);
    off = kb_line(buf, len, off, "Active(file):", act_file);
    off = kb_line(buf, len, off, "Inactive(file):", ina_file);
    off = kb_line(buf, len, off, "SwapTotal:", 0);
    off = kb_line(buf, len, off, "SwapFree:", 0);
    off = kb_line(buf, len, off, "Shmem:", shmem);
    return off < len ? off : len;
}
