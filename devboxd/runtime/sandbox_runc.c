/* The devbox runtime: runc (see sandbox_runc.h).  The devbox's root
 * overlay, its OCI bundle, the launcher that hands runc the agent and its
 * channel, the agent's hello, and kill, delete, freeze and stats for
 * sandbox.c's lifecycle. */
#define _GNU_SOURCE
#include "sandbox_runc.h"
#include "sandbox_internal.h"
#include "sandbox_priv.h"
#include "agent/agent_proto.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STR2(x) #x
#define STR(x) STR2(x)

/* fd's bytes in a read-only memfd anyone may run: the devbox execs its
 * helpers as its own ids, which a helper built under umask 077 (0700,
 * owned by root) refuses.  The writable fd is closed, so exec does not
 * find the file busy.  The new fd or -errno. */
static int helper_copy(int fd)
{
    char buf[65536];
    char self[64];
    ssize_t n = 0;
    int mfd = memfd_create("devboxd-helper", MFD_CLOEXEC);
    int ro = -1;
    int rc = 0;

    if (mfd < 0)
        return -errno;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        if (write(mfd, buf, (size_t)n) != n) {
            rc = -EIO;
            break;
        }
    }
    if (rc == 0 && n < 0)
        rc = -errno;
    if (rc == 0 && fchmod(mfd, 0555) != 0)
        rc = -errno;
    if (rc == 0) {
        snprintf(self, sizeof(self), "/proc/self/fd/%d", mfd);
        ro = open(self, O_RDONLY | O_CLOEXEC);
        if (ro < 0)
            rc = -errno;
    }
    close(mfd);
    return rc != 0 ? rc : ro;
}

/* ---- launch ------------------------------------------------------------ */

/* Opens a helper binary for one launch (a private offset: runc reads it
 * from the preserved fd). */
static int open_helper(const char *path, char *err, size_t errlen)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int copy;

    if (fd < 0)
        return sandbox_fs_err(err, errlen, -errno, "cannot open %s: %s", path,
                              strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sandbox_fs_err(err, errlen, -ENOEXEC, "%s is not a regular file",
                              path);
    }
    if ((st.st_mode & 0005) == 0005)
        return fd;
    copy = helper_copy(fd);
    close(fd);
    if (copy < 0)
        return sandbox_fs_err(err, errlen, copy,
                              "cannot stage %s for the devbox: %s", path,
                              strerror(-copy));
    return copy;
}

/* ---- init -------------------------------------------------------------- */

int sandbox_runc_init(const struct sb_runtime *rt, const char *sbdir, char *err,
                      size_t errlen)
{
    int fd;

    sandbox_rt.runc_path = strdup(
        rt->runc_path != NULL && rt->runc_path[0] != '\0' ? rt->runc_path
                                                          : "/usr/sbin/runc");
    if (sandbox_rt.runc_path == NULL ||
        asprintf(&sandbox_rt.runc_root, "%s/runc", sbdir) < 0) {
        sandbox_rt.runc_root = NULL;
        return sandbox_fs_err(err, errlen, -ENOMEM, "out of memory");
    }
    if (access(sandbox_rt.runc_path, X_OK) != 0)
        return sandbox_fs_err(
            err, errlen, -ENOENT,
            "runc, the devbox runtime, is not at %s: install it "
            "(apt-get install runc; scripts/bootstrap) or point "
            "RLMCP_RUNC at it",
            sandbox_rt.runc_path);
    if (mkdir(sandbox_rt.runc_root, 0700) != 0 && errno != EEXIST)
        return sandbox_fs_err(err, errlen, -errno, "cannot create %s: %s",
                              sandbox_rt.runc_root, strerror(errno));
    fd = sandbox_oci_userns(SB_RANGE_BASE);
    if (fd < 0)
        return sandbox_fs_err(
            err, errlen, fd,
            "user namespaces are unavailable (%s); devboxes need "
            "them (sysctl user.max_user_namespaces > 0)",
            strerror(-fd));
    close(fd);
    return 0;
}

struct argvec {
    char **v;
    size_t n;
    size_t cap;
    bool oom;
};

static void av_add(struct argvec *a, const char *s)
{
    char **nv;

    if (a->oom)
        return;
    if (a->n + 2 > a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        nv = realloc(a->v, a->cap * sizeof(char *));
        if (nv == NULL) {
            a->oom = true;
            return;
        }
        a->v = nv;
    }
    a->v[a->n] = strdup(s);
    if (a->v[a->n] == NULL) {
        a->oom = true;
        return;
    }
    a->n++;
    a->v[a->n] = NULL;
}

static void av_free(struct argvec *a)
{
    size_t i;

    for (i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    memset(a, 0, sizeof(*a));
}

/* The kernel's own words about a failed fsconfig (the fs context's
 * message log), as " (…)", or "". */
static const char *fs_log(int fsfd, char *buf, size_t len)
{
    char line[256];
    ssize_t n = read(fsfd, line, sizeof(line) - 1);

    if (n <= 0)
        return "";
    while (n > 0 && line[n - 1] == '\n')
        n--;
    line[n] = '\0';
    snprintf(buf, len, " (%s)", line);
    return buf;
}

/* What the launcher child gets: the helper binaries, /dev/null and its
 * channels to devboxd. */
struct launch_io {
    int agent_fd; /* the agent binary */
    int ptyd_fd;  /* the PTY server binary, or -1 */
    int devnull;
    int sp[2];   /* [0] devboxd's master, [1] the agent's end -> fd 3 */
    int errp[2]; /* the launcher's stderr: [0] devboxd reads, [1] -> fd 2 */
    cpu_set_t
        cpus; /* the devbox's CPUs, when pin_cpus (sandbox_cgroup_cpu_pick) */
    bool pin_cpus;
};

static void child_fail(int errfd, const char *what)
{
    char msg[160];
    int e = errno;
    int n;

    n = snprintf(msg, sizeof(msg), "devboxd launcher: %s: %s\n", what,
                 strerror(e));
    if (n > 0 && write(errfd, msg, (size_t)n) < 0) {
        /* nothing more to do */
    }
    _exit(121);
}

/* The agent (pid 1 inside) is the last thing the memory limit's OOM killer
 * picks: losing it ends the devbox, losing a command ends only that command.
 * It hands its commands a score of 0 again (agent.c).  Set before the
 * runtime is exec'd and inherited: best effort, as lowering it needs
 * CAP_SYS_RESOURCE, which some hosts withhold even from root (runc's own
 * process.oomScoreAdj would fail the whole start there).  The agent then
 * ranks its commands above itself instead.  Async-signal-safe. */
static void child_protect_from_oom(void)
{
    static const char adj[] = STR(SB_AGENT_OOM_SCORE_ADJ);
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

    if (fd < 0)
        return;
    if (write(fd, adj, sizeof(adj) - 1) < 0) {
        /* the OOM killer still prefers the biggest process */
    }
    close(fd);
}

/* The agent's hello.  *sender: the agent's pid in devboxd's pid namespace
 * when the master has SO_PASSCRED (the kernel attaches and translates the
 * sender's credentials), else 0. */
static int wait_hello(struct sandbox *sb, pid_t *sender, char *err,
                      size_t errlen)
{
    char buf[256];
    char cbuf[CMSG_SPACE(sizeof(struct ucred))];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf) - 1};
    struct msghdr mh;
    struct cmsghdr *cm = NULL;
    struct ucred cred = {0};
    ssize_t n;
    cJSON *js = NULL;
    const cJSON *ev;
    const cJSON *ver;
    int rc = 0;

    *sender = 0;
    rc = sandbox_poll_until(sb->master, POLLIN,
                            sandbox_now_ms() + SB_START_TIMEOUT_MS);
    if (rc != 0)
        return sandbox_fs_err(err, errlen, rc,
                              "the devbox agent did not start in time");
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof(cbuf);
    n = recvmsg(sb->master, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n <= 0)
        return sandbox_fs_err(err, errlen, -EIO,
                              "the devbox agent exited during start");
    buf[n] = '\0';
    for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS)
            memcpy(&cred, CMSG_DATA(cm), sizeof(cred));
    }
    js = cJSON_ParseWithLength(buf, (size_t)n);
    ev = cJSON_GetObjectItemCaseSensitive(js, "ev");
    ver = cJSON_GetObjectItemCaseSensitive(js, "version");
    if (!cJSON_IsString(ev) || strcmp(ev->valuestring, "hello") != 0 ||
        !cJSON_IsNumber(ver) || ver->valueint != AGENT_PROTO_VERSION)
        rc = sandbox_fs_err(err, errlen, -EPROTO,
                            "the devbox agent spoke an unknown protocol");
    cJSON_Delete(js);
    *sender = cred.pid;
    return rc;
}

static void read_errpipe(int fd, char *err, size_t errlen)
{
    char buf[512];
    ssize_t n;

    if (fd < 0 || err == NULL || errlen == 0)
        return;
    n = read(fd, buf, sizeof(buf) - 1);
    if (n <= 0)
        return;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    snprintf(err + strlen(err), errlen - strlen(err), " (%s)", buf);
}

/* The end of a start: on failure, what the launcher wrote to its stderr
 * within why_ms joins err; the stderr pipe is closed either way. */
static int finish_start(struct sandbox *sb, int rc, int why_ms, char *err,
                        size_t errlen)
{
    if (rc != 0) {
        if (sb->errpipe_r >= 0)
            sandbox_poll_until(sb->errpipe_r, POLLIN,
                               sandbox_now_ms() + why_ms);
        read_errpipe(sb->errpipe_r, err, errlen);
    }
    sandbox_close_fd(sb->errpipe_r);
    sb->errpipe_r = -1;
    return rc;
}

static void close_launch_io(struct launch_io *io)
{
    sandbox_close_pair(io->sp);
    sandbox_close_pair(io->errp);
    sandbox_close_fd(io->devnull);
    sandbox_close_fd(io->agent_fd);
    sandbox_close_fd(io->ptyd_fd);
    io->devnull = io->agent_fd = io->ptyd_fd = -1;
}

/* Opens what every launcher hands on (struct launch_io); passcred: the
 * master receives the agent's credentials (its pid) with its hello.  io is
 * safe for close_launch_io whatever this returns. */
static int open_launch_io(struct launch_io *io, bool passcred, char *err,
                          size_t errlen)
{
    int one = 1;

    io->sp[0] = io->sp[1] = io->errp[0] = io->errp[1] = -1;
    io->agent_fd = io->ptyd_fd = -1;
    io->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    io->agent_fd = open_helper(sandbox_rt.agent_path, err, errlen);
    if (io->agent_fd < 0)
        return io->agent_fd;
    if (sandbox_rt.ptyd_path != NULL) {
        io->ptyd_fd = open_helper(sandbox_rt.ptyd_path, err, errlen);
        if (io->ptyd_fd < 0)
            return io->ptyd_fd;
    }
    if (io->devnull < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, io->sp) != 0 ||
        (passcred && setsockopt(io->sp[0], SOL_SOCKET, SO_PASSCRED, &one,
                                sizeof(one)) != 0) ||
        pipe2(io->errp, O_CLOEXEC | O_NONBLOCK) != 0)
        return sandbox_fs_err(err, errlen, -errno,
                              "cannot create sandbox channels: %s",
                              strerror(errno));
    return 0;
}

/* fork for a launcher: the child runs child(arg), which goes on to exec;
 * devboxd gets the launcher's pid, with sb holding the master and the
 * stderr pipe and the child's ends closed; or -errno. */
static pid_t fork_launcher(struct sandbox *sb, struct launch_io *io,
                           void (*child)(const void *arg), const void *arg,
                           char *err, size_t errlen)
{
    pid_t pid = fork();

    if (pid < 0)
        return sandbox_fs_err(err, errlen, -errno, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* Inherited by runc and everything in the devbox. */
        if (io->pin_cpus &&
            sched_setaffinity(0, sizeof(io->cpus), &io->cpus) != 0)
            child_fail(io->errp[1], "sched_setaffinity");
        child(arg);
        _exit(127); /* child execs or exits */
    }
    sb->launcher_pid = pid;
    sb->launcher_pidfd = pidfd_open(pid, 0);
    sb->master = io->sp[0];
    io->sp[0] = -1;
    sb->errpipe_r = io->errp[0];
    io->errp[0] = -1;
    /* Only the child keeps these ends. */
    sandbox_close_pair(io->sp);
    sandbox_close_pair(io->errp);
    return pid;
}

/* Sets overlay option key to dir[/sub], opened as O_PATH and named
 * "/proc/self/fd/N": the mount's options (shown in /proc/self/mountinfo
 * inside) then hold no host paths.  The fd joins fds. */
static int set_fd_option(int fsfd, const char *key, const char *dir,
                         const char *sub, int *fds, size_t *nfds)
{
    char path[PATH_MAX];
    char name[64];
    int fd;

    snprintf(path, sizeof(path), "%s%s%s", dir, sub != NULL ? "/" : "",
             sub != NULL ? sub : "");
    fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    fds[(*nfds)++] = fd;
    snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
    if (fsconfig(fsfd, FSCONFIG_SET_STRING, key, name, 0) != 0)
        return -errno;
    return 0;
}

/* Sets lowerdir+ to an idmapped view of the shared layer path written by
 * the range at owner, shown as the devbox's range: the layer is mounted in
 * place, read-only, for every devbox on it.  *userns caches the namespace
 * of *userns_owner (layers of one owner are often next to each other). */
static int set_shared_layer(int fsfd, const char *path, uid_t owner,
                            uint32_t range, int *userns, uid_t *userns_owner,
                            int *fds, size_t *nfds)
{
    char name[64];
    int fd;

    if (owner < SB_RANGE_BASE)
        return -EINVAL; /* a single-uid layer: the engine copies those */
    if (*userns < 0 || *userns_owner != owner) {
        sandbox_close_fd(*userns);
        *userns = sandbox_oci_userns_map(owner, range);
        if (*userns < 0)
            return *userns;
        *userns_owner = owner;
    }
    fd = sandbox_oci_idmapped(path, *userns);
    if (fd < 0)
        return fd;
    fds[(*nfds)++] = fd;
    snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
    if (fsconfig(fsfd, FSCONFIG_SET_STRING, "lowerdir+", name, 0) != 0)
        return -errno;
    return 0;
}

static int oci_fsconfig(int fsfd, const struct sb_spec *spec, uint32_t range,
                        int imgfd, int *fds, size_t *nfds)
{
    const char *dir = spec->dir;
    char name[64];
    int userns = -1;
    uid_t userns_owner = 0;
    size_t i;
    int rc = 0;

    for (i = 0; i < spec->n_layers && rc == 0; i++) {
        if (spec->layer_owners != NULL && spec->layer_owners[i] != range)
            rc = set_shared_layer(fsfd, spec->lower_layers[i],
                                  spec->layer_owners[i], range, &userns,
                                  &userns_owner, fds, nfds);
        else
            rc = set_fd_option(fsfd, "lowerdir+", spec->lower_layers[i], NULL,
                               fds, nfds);
    }
    sandbox_close_fd(userns);
    if (rc == 0)
        rc = set_fd_option(fsfd, "lowerdir+", dir, SB_DIR_BASE, fds, nfds);
    snprintf(name, sizeof(name), "/proc/self/fd/%d", imgfd);
    if (rc == 0 &&
        fsconfig(fsfd, FSCONFIG_SET_STRING, "lowerdir+", name, 0) != 0)
        rc = -errno;
    if (rc == 0)
        rc = set_fd_option(fsfd, "upperdir", dir, SB_DIR_UPPER, fds, nfds);
    if (rc == 0)
        rc = set_fd_option(fsfd, "workdir", dir, SB_DIR_WORK, fds, nfds);
    if (rc == 0 && fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
        rc = -errno;
    return rc;
}

/* The overlay of a runc devbox: its layers, the base layer and an
 * idmapped view of the image (root-owned files belong to the devbox's
 * root).  set-id programs work (sudo); device nodes do not. */
static int mount_overlay_oci(const struct sb_spec *spec, uint32_t range,
                             char *err, size_t errlen)
{
    char why[300];
    int fds[SB_MAX_LAYERS + 4];
    size_t nfds = 0;
    int userns = -1;
    int imgfd = -1;
    int fsfd = -1;
    int mfd = -1;
    int rc = 0;

    userns = sandbox_oci_userns(range);
    if (userns < 0) {
        rc = sandbox_fs_err(err, errlen, userns,
                            "cannot create the devbox's user namespace: %s",
                            strerror(-userns));
        goto out;
    }
    imgfd = sandbox_oci_idmapped(spec->image, userns);
    if (imgfd < 0) {
        rc = sandbox_fs_err(err, errlen, imgfd,
                            "cannot map the image %s to the devbox's ids: %s",
                            spec->image, strerror(-imgfd));
        goto out;
    }
    fsfd = fsopen("overlay", FSOPEN_CLOEXEC);
    if (fsfd < 0) {
        rc = sandbox_fs_err(err, errlen, -errno, "overlayfs unavailable: %s",
                            strerror(errno));
        goto out;
    }
    rc = oci_fsconfig(fsfd, spec, range, imgfd, fds, &nfds);
    if (rc != 0) {
        sandbox_fs_err(err, errlen, rc,
                       "cannot mount the root overlay of %s: %s%s", spec->dir,
                       strerror(-rc), fs_log(fsfd, why, sizeof(why)));
        goto out;
    }
    mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV);
    if (mfd < 0)
        rc = sandbox_fs_err(err, errlen, -errno,
                            "cannot mount the root overlay of %s: %s",
                            spec->dir, strerror(errno));
out:
    while (nfds > 0)
        close(fds[--nfds]);
    sandbox_close_fd(fsfd);
    sandbox_close_fd(imgfd);
    sandbox_close_fd(userns);
    return rc != 0 ? rc : mfd;
}

struct oci_launch {
    char **argv;
    int mntfd;
    struct sandbox_oci_mounts mounts;
    struct launch_io io; /* agent -> SB_OCI_AGENT_FD, ptyd -> SB_OCI_PTYD_FD */
};

/* Moves the detached mount fd onto rel under the root dir rootfd,
 * resolved without following a symlink (the devbox's upper layer is its
 * own) nor leaving the root. */
static void child_place(int fd, int rootfd, const char *rel, int errfd)
{
    struct open_how how;
    int t;

    memset(&how, 0, sizeof(how));
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    t = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
    if (t < 0)
        child_fail(errfd, rel);
    if (move_mount(fd, "", t, "",
                   MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        child_fail(errfd, rel);
    close(t);
}

/* In a mount namespace of the launcher's own: the stage tmpfs at
 * SB_STAGE_DIR, the overlay on its root/ (SB_OCI_ROOT, the bundle's
 * root), and devboxd's tmpfs's on the image's /dev, /dev/shm, /run and
 * /run/devbox. */
static void oci_child_mounts(const struct oci_launch *l, int errfd)
{
    int rootfd;

    if (unshare(CLONE_NEWNS) != 0)
        child_fail(errfd, "unshare(mount)");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        child_fail(errfd, "make / private");
    if (move_mount(l->mounts.stage, "", AT_FDCWD, SB_STAGE_DIR,
                   MOVE_MOUNT_F_EMPTY_PATH) != 0)
        child_fail(errfd, "attach the stage");
    if (move_mount(l->mntfd, "", AT_FDCWD, SB_OCI_ROOT,
                   MOVE_MOUNT_F_EMPTY_PATH) != 0)
        child_fail(errfd, "attach the root overlay");
    rootfd = open(SB_OCI_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        child_fail(errfd, "open the root");
    child_place(l->mounts.dev, rootfd, "dev", errfd);
    child_place(l->mounts.shm, rootfd, "dev/shm", errfd);
    child_place(l->mounts.run, rootfd, "run", errfd);
    child_place(l->mounts.state, rootfd, "run/devbox", errfd);
    close(rootfd);
}

/* Runs between fork and exec: async-signal-safe calls only.  The overlay
 * is attached in a mount namespace of this launcher's own, where runc
 * finds it as the bundle's root. */
static void oci_child(const void *arg)
{
    const struct oci_launch *l = arg;
    static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    int hi[4];
    int i;

    child_protect_from_oom();
    oci_child_mounts(l, l->io.errp[1]);
    hi[0] = fcntl(l->io.sp[1], F_DUPFD, 10);
    hi[1] = fcntl(l->io.agent_fd, F_DUPFD, 10);
    hi[2] =
        fcntl(l->io.ptyd_fd >= 0 ? l->io.ptyd_fd : l->io.devnull, F_DUPFD, 10);
    hi[3] = fcntl(l->io.errp[1], F_DUPFD, 10);
    for (i = 0; i < 4; i++) {
        if (hi[i] < 0)
            child_fail(l->io.errp[1], "dup");
    }
    if (dup2(l->io.devnull, 0) < 0 || dup2(l->io.devnull, 1) < 0 ||
        dup2(hi[3], 2) < 0 || dup2(hi[0], AGENT_MASTER_FD) < 0 ||
        dup2(hi[1], SB_OCI_AGENT_FD) < 0 || dup2(hi[2], SB_OCI_PTYD_FD) < 0)
        child_fail(l->io.errp[1], "dup2");
    close_range(SB_OCI_PTYD_FD + 1, ~0U, 0);
    sandbox_child_default_signals();
    execve(l->argv[0], l->argv, envp);
    child_fail(2, "exec runc");
}

/* Fallbacks when a controller is missing, set on the agent once it runs
 * (every command inherits them): per-process address space and a process
 * count per host uid (each devbox has its own ids).  Not in the bundle's
 * rlimits: runc's own init (Go) would run under RLIMIT_AS too, and cannot
 * load the seccomp filter in 256 MiB. */
static int set_fallback_rlimits(struct sandbox *sb, const struct sb_limits *lim,
                                char *err, size_t errlen)
{
    struct rlimit rl;

    if (!sandbox_rt.have_ctl[SB_CG_MEMORY] && lim->memory_bytes > 0) {
        rl.rlim_cur = rl.rlim_max = lim->memory_bytes;
        if (prlimit(sb->init_pid, RLIMIT_AS, &rl, NULL) != 0)
            return sandbox_fs_err(err, errlen, -errno,
                                  "cannot limit the devbox's memory: %s",
                                  strerror(errno));
    }
    if (!sandbox_rt.have_ctl[SB_CG_PIDS]) {
        rl.rlim_cur = rl.rlim_max =
            (lim->pids_max ? lim->pids_max : SB_DEFAULT_PIDS) + 8;
        if (prlimit(sb->init_pid, RLIMIT_NPROC, &rl, NULL) != 0)
            return sandbox_fs_err(err, errlen, -errno,
                                  "cannot limit the devbox's processes: %s",
                                  strerror(errno));
    }
    return 0;
}

/* The agent's hello, and its host pid from the hello's credentials. */
static int wait_hello_oci(struct sandbox *sb, char *err, size_t errlen)
{
    pid_t pid = 0;
    int rc = wait_hello(sb, &pid, err, errlen);

    if (rc == 0 && pid <= 1)
        rc = sandbox_fs_err(err, errlen, -EPROTO,
                            "the devbox agent's pid is unknown");
    if (rc == 0) {
        sb->init_pid = pid;
        sb->init_pidfd = pidfd_open(pid, 0);
        if (sb->init_pidfd < 0)
            rc = sandbox_fs_err(err, errlen, -errno,
                                "the devbox agent exited during start");
    }
    return rc;
}

static int oci_argv(const struct sb_spec *spec, struct argvec *av, bool ptyd)
{
    av_add(av, sandbox_rt.runc_path);
    av_add(av, "--root");
    av_add(av, sandbox_rt.runc_root);
    av_add(av, "run");
    av_add(av, "--bundle");
    av_add(av, spec->dir);
    av_add(av, "--preserve-fds");
    av_add(av, ptyd ? "3" : "2");
    av_add(av, "--no-new-keyring");
    av_add(av, spec->id);
    return av->oom ? -ENOMEM : 0;
}

/* config.json in the devbox dir (root 0600), and no state of an earlier
 * container of this id (a devboxd that died leaves it behind). */
static int write_bundle(struct sandbox *sb, const struct sb_spec *spec,
                        const struct launch_io *io, char *err, size_t errlen)
{
    struct sb_oci_conf c;
    char cpus[256];
    char home[128];
    char *text = NULL;
    int dirfd = -1;
    int rc;

    memset(&c, 0, sizeof(c));
    c.id = spec->id;
    c.cgroup_name = sandbox_rt.cgroup_name;
    c.range = sb->range;
    c.uid = spec->user_name != NULL ? spec->user_uid : SB_INSIDE_UID;
    c.user = spec->user_name != NULL ? spec->user_name : "user";
    if (c.uid == 0)
        snprintf(home, sizeof(home), "/root");
    else
        snprintf(home, sizeof(home), "/home/%s", c.user);
    c.home = home;
    c.env = spec->env;
    c.with_ptyd = sandbox_rt.ptyd_path != NULL;
    c.meminfo = sb->meminfo_fd >= 0;
    if (io->pin_cpus) {
        sandbox_cgroup_cpu_list(&io->cpus, cpus, sizeof(cpus));
        c.cpus = cpus;
    }
    text = sandbox_oci_config(&c);
    dirfd = open(spec->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    rc = text == NULL ? -ENOMEM
         : dirfd < 0  ? -errno
                      : sandbox_fs_write_file(dirfd, "config.json", text, 0600);
    if (rc != 0)
        sandbox_fs_err(err, errlen, rc,
                       "cannot write the devbox's OCI bundle: %s",
                       strerror(-rc));
    if (rc == 0)
        sandbox_runc_delete(spec->id);
    sandbox_close_fd(dirfd);
    free(text);
    return rc;
}

/* ---- the interface (sandbox_runc.h) --------------------------------------- */

int sandbox_runc_start(struct sandbox *sb, const struct sb_spec *spec,
                       char *err, size_t errlen)
{
    struct argvec av = {0};
    struct oci_launch l;
    int rc;
    pid_t pid;

    memset(&l, 0, sizeof(l));
    l.mounts.stage = l.mounts.dev = l.mounts.shm = l.mounts.run =
        l.mounts.state = -1;
    rc = open_launch_io(&l.io, true, err, errlen);
    l.io.pin_cpus =
        sandbox_cgroup_cpu_pick(spec->id, spec->limits.cpu_millis, &l.io.cpus);
    if (rc == 0) {
        rc = sandbox_oci_mounts(&l.mounts, sb->range, sb->uid - sb->range,
                                spec->limits.memory_bytes > 0, &sb->meminfo_fd);
        if (rc != 0)
            sandbox_fs_err(err, errlen, rc,
                           "cannot make the devbox's tmpfs mounts: %s",
                           strerror(-rc));
    }
    if (rc == 0 && sb->meminfo_fd >= 0) {
        sb->meminfo_limit = spec->limits.memory_bytes;
        sb->meminfo_ms = 0;
        sandbox_refresh_meminfo(sb);
    }
    if (rc == 0)
        rc = write_bundle(sb, spec, &l.io, err, errlen);
    if (rc != 0)
        goto out;
    if (oci_argv(spec, &av, l.io.ptyd_fd >= 0) != 0) {
        rc = sandbox_fs_err(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    l.argv = av.v;
    l.mntfd = sb->rootfd;
    pid = fork_launcher(sb, &l.io, oci_child, &l, err, errlen);
    if (pid < 0) {
        rc = (int)pid;
        goto out;
    }
    rc = wait_hello_oci(sb, err, errlen);
    if (rc == 0)
        rc = set_fallback_rlimits(sb, &spec->limits, err, errlen);
    /* runc says why on stderr once it gave up. */
    rc = finish_start(sb, rc, 2000, err, errlen);
out:
    close_launch_io(&l.io);
    sandbox_oci_mounts_close(&l.mounts);
    av_free(&av);
    return rc;
}

int sandbox_runc_create(struct sandbox *sb, const struct sb_spec *spec,
                        char *err, size_t errlen)
{
    uint32_t inside = spec->user_name != NULL ? spec->user_uid : SB_INSIDE_UID;
    int rc;

    rc = sandbox_fs_range_claim(spec->dir, spec->id, &sb->range, err, errlen);
    if (rc != 0)
        return rc;
    sb->uid = sb->range + inside;
    rc = sandbox_fs_prepare_dir_oci(spec->dir, spec->id, sb->range, spec->image,
                                    spec->user_name, inside, err, errlen);
    if (rc != 0)
        return rc;
    sb->rootfd = mount_overlay_oci(spec, sb->range, err, errlen);
    return sb->rootfd < 0 ? sb->rootfd : 0;
}

void sandbox_runc_kill(struct sandbox *sb, int init_pidfd, struct sb_cgroup *cg)
{
    /* Kill pid 1 inside first (the kernel then kills the whole pid
     * namespace) and let runc reap it and exit: killing runc first would
     * orphan the agent to the host's init. */
    if (init_pidfd >= 0)
        pidfd_send_signal(init_pidfd, SIGKILL, NULL, 0);
    /* A frozen task acts on SIGKILL only once thawed: a devbox left frozen
     * (a snapshot whose thaw failed) must not make the reap below wait. */
    sandbox_cgroup_freeze(cg, false, 1000);
    sandbox_reap_child(sb->launcher_pid, sb->launcher_pidfd, 5000);
    sb->launcher_pid = 0;
    sandbox_close_fd(sb->launcher_pidfd);
    sb->launcher_pidfd = -1;
    sandbox_cgroup_kill_all(
        cg, 5000); /* anything that slipped out of the pid namespace */
}

void sandbox_runc_delete(const char *id)
{
    char path[PATH_MAX];

    if (sandbox_rt.runc_root == NULL)
        return;
    snprintf(path, sizeof(path), "%s/%s", sandbox_rt.runc_root, id);
    sandbox_fs_remove_tree(path);
}

int sandbox_runc_freeze(struct sb_cgroup *cg, bool frozen, int timeout_ms)
{
    int rc = sandbox_cgroup_freeze(cg, frozen, timeout_ms);

    if (rc == -ETIMEDOUT && frozen)
        sandbox_cgroup_freeze(cg, false, timeout_ms);
    return rc;
}

void sandbox_runc_stats(const struct sandbox *sb, struct sb_usage *u)
{
    u->memory_bytes =
        sandbox_cgroup_read_u64(&sb->cg, SB_CG_MEMORY, "memory.usage_in_bytes");
    u->memory_peak_bytes = sandbox_cgroup_read_u64(&sb->cg, SB_CG_MEMORY,
                                                   "memory.max_usage_in_bytes");
    u->cpu_nanos =
        sandbox_cgroup_read_u64(&sb->cg, SB_CG_CPUACCT, "cpuacct.usage");
    u->pids = (uint32_t)sandbox_cgroup_pids_current(&sb->cg);
    u->oom_kills = sandbox_cgroup_oom_kills(&sb->cg) - sb->oom_base;
    u->pids_denied = sandbox_cgroup_pids_denied(&sb->cg);
}
