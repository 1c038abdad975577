/* Sandbox lifecycle: runtime init, start (cgroups + the runtime + slirp4netns),
 * stop, health, usage.  What runc does for it (the devbox's root, launch,
 * agent handshake, kill, freeze, stats) is in sandbox_runc.c; exec and
 * open are in sandbox_exec.c. */
#define _GNU_SOURCE
#include "sandbox_internal.h"
#include "sandbox_priv.h"
#include "sandbox_runc.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct sandbox_rt sandbox_rt;

static char *dup_or(const char *v, const char *def)
{
    return strdup(v != NULL && v[0] != '\0' ? v : def);
}

char *sandbox_helper_path(const char *name)
{
    char exe[PATH_MAX];
    char *slash;
    char *out = NULL;
    ssize_t n;

    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    slash = strrchr(exe, '/');
    if (slash == NULL)
        return NULL;
    *slash = '\0';
    if (asprintf(&out, "%s/%s", exe, name) < 0)
        return NULL;
    if (access(out, X_OK) == 0)
        return out;
    free(out);
    out = NULL;
    if (asprintf(&out, "%s/../libexec/runloop-mcp/%s", exe, name) < 0)
        return NULL;
    return out;
}

int sandbox_spawn(pid_t *pid, const char *path, posix_spawn_file_actions_t *fa,
                  char *const argv[])
{
    posix_spawn_file_actions_t own;
    posix_spawnattr_t attr;
    sigset_t none;
    sigset_t all;
    int rc;

    /* Only fds 0-2 reach the child: a descriptor devboxd holds open (or
     * inherited) would push the child's own pipes above 9, where dash
     * cannot redirect (mmdebstrap's hooks fail with "Bad fd number"). */
    if (fa == NULL) {
        posix_spawn_file_actions_init(&own);
        fa = &own;
    }
    rc = posix_spawn_file_actions_addclosefrom_np(fa, 3);
    if (rc != 0)
        goto out;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    rc = posix_spawn(pid, path, fa, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
out:
    if (fa == &own)
        posix_spawn_file_actions_destroy(&own);
    return rc;
}

int sandbox_collect(pid_t pid, int fd, char *buf, size_t len)
{
    size_t got = 0;
    ssize_t n;
    int status = 0;

    while (got < len - 1) {
        n = read(fd, buf + got, len - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == '\r'))
        buf[--got] = '\0';
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- confined copy ---------------------------------------------------- */

/* The host's directories that make /usr usable as a root: a symlink stays
 * a symlink (merged /usr), a directory is bound read-only. */
static const char *const copy_root_dirs[4] = {"/bin", "/lib", "/lib64",
                                              "/sbin"};

/* What the child of sandbox_copy_tree needs, found before the fork (the
 * child allocates nothing). */
struct copy_job {
    const char *src;
    const char *dst;
    /* For copy_root_dirs[i]: 'l' a symlink to links[i], 'd' a directory,
     * 0 absent. */
    char kind[4];
    char links[4][64];
    int errfd;
};

/* Child side: says what failed on errfd, then exits (as the launcher's
 * child_fail). */
static void copy_fail(int errfd, const char *what)
{
    char msg[200];
    int e = errno;
    int n = snprintf(msg, sizeof(msg), "%s: %s", what, strerror(e));

    if (n > 0 && write(errfd, msg, (size_t)n) < 0) {
        /* the exit status says it failed */
    }
    _exit(121);
}

/* Child side: a detached clone of the host's path, read-only, nosuid and
 * nodev unless rw. */
static int copy_clone(const char *path, bool rw, int errfd)
{
    struct mount_attr attr;
    int fd;

    fd = (int)syscall(SYS_open_tree, AT_FDCWD, path,
                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (fd < 0)
        copy_fail(errfd, path);
    memset(&attr, 0, sizeof(attr));
    attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    if (!rw && syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE,
                       &attr, sizeof(attr)) != 0)
        copy_fail(errfd, path);
    return fd;
}

/* Child side: the clone fd mounted on name (created) in the dir rootfd. */
static void copy_attach(int rootfd, int fd, const char *name, int errfd)
{
    if (mkdirat(rootfd, name, 0755) != 0 ||
        move_mount(fd, "", rootfd, name, MOVE_MOUNT_F_EMPTY_PATH) != 0)
        copy_fail(errfd, name);
    close(fd);
}

/* Child side, between fork and exec: cp in a private root, a tmpfs that
 * holds only /usr and the root dirs (read-only), /src (read-only) and
 * /dst, in a mount namespace of its own.  No user namespace: cp keeps the
 * host ids and overlay xattrs and makes whiteouts, which need root. */
static void copy_child(const struct copy_job *job)
{
    static char *const argv[] = {"cp",     "-a",   "--reflink=auto",
                                 "/src/.", "/dst", NULL};
    static char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
    int fds[4] = {-1, -1, -1, -1};
    int usr_fd, src_fd, dst_fd;
    int rootfd;
    size_t i;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    sandbox_child_default_signals();
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    if (unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) != 0)
        copy_fail(job->errfd, "unshare");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        copy_fail(job->errfd, "make / private");
    /* Cloned before the tmpfs covers /tmp, where src and dst may be. */
    usr_fd = copy_clone("/usr", false, job->errfd);
    src_fd = copy_clone(job->src, false, job->errfd);
    dst_fd = copy_clone(job->dst, true, job->errfd);
    for (i = 0; i < 4; i++) {
        if (job->kind[i] == 'd')
            fds[i] = copy_clone(copy_root_dirs[i], false, job->errfd);
    }
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
              "mode=0755,size=64k") != 0)
        copy_fail(job->errfd, "mount the private root");
    rootfd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        copy_fail(job->errfd, "open the private root");
    copy_attach(rootfd, usr_fd, "usr", job->errfd);
    copy_attach(rootfd, src_fd, "src", job->errfd);
    copy_attach(rootfd, dst_fd, "dst", job->errfd);
    for (i = 0; i < 4; i++) {
        const char *name = copy_root_dirs[i] + 1;

        if (job->kind[i] == 'd')
            copy_attach(rootfd, fds[i], name, job->errfd);
        else if (job->kind[i] == 'l' &&
                 symlinkat(job->links[i], rootfd, name) != 0)
            copy_fail(job->errfd, name);
    }
    /* The tmpfs becomes / and the host's tree goes: no path cp resolves,
     * a symlink the devbox swaps in included, leads out of this root. */
    if (fchdir(rootfd) != 0 || syscall(SYS_pivot_root, ".", ".") != 0 ||
        umount2(".", MNT_DETACH) != 0 || chdir("/") != 0)
        copy_fail(job->errfd, "enter the private root");
    /* Only /dst takes writes. */
    if (mount(NULL, "/", NULL,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
              NULL) != 0)
        copy_fail(job->errfd, "make the private root read-only");
    execve("/usr/bin/cp", argv, envp);
    copy_fail(job->errfd, "exec /usr/bin/cp");
}

int sandbox_copy_tree(const char *src, const char *dst, char *err,
                      size_t errlen)
{
    struct copy_job job;
    struct stat st;
    char why[256];
    int pp[2] = {-1, -1};
    pid_t pid;
    ssize_t len;
    size_t i;
    int status;
    int rc = -1;

    memset(&job, 0, sizeof(job));
    job.src = src;
    job.dst = dst;
    for (i = 0; i < 4; i++) {
        if (lstat(copy_root_dirs[i], &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            job.kind[i] = 'd';
        } else if (S_ISLNK(st.st_mode)) {
            len = readlink(copy_root_dirs[i], job.links[i],
                           sizeof(job.links[i]) - 1);
            if (len > 0)
                job.kind[i] = 'l';
        }
    }
    if (pipe2(pp, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot copy %s: pipe: %s", src, strerror(errno));
        goto out;
    }
    job.errfd = pp[1];
    pid = fork();
    if (pid == 0)
        copy_child(&job);
    close(pp[1]);
    pp[1] = -1;
    if (pid < 0) {
        snprintf(err, errlen, "cannot copy %s: fork: %s", src, strerror(errno));
        goto out;
    }
    /* The child's setup error, if any; end of file once cp is exec'd. */
    status = sandbox_collect(pid, pp[0], why, sizeof(why));
    if (why[0] != '\0') {
        snprintf(err, errlen, "cannot set up the private root to copy %s: %s",
                 src, why);
        goto out;
    }
    if (status != 0) {
        snprintf(err, errlen, "copying %s to %s failed (cp status %d)", src,
                 dst, status);
        goto out;
    }
    rc = 0;
out:
    if (pp[0] >= 0)
        close(pp[0]);
    return rc;
}

void sandbox_shutdown_runtime(void)
{
    sandbox_cgroup_remove_parents();
    free(sandbox_rt.ptyd_path);
    free(sandbox_rt.state_dir);
    free(sandbox_rt.claims_dir);
    free(sandbox_rt.agent_path);
    free(sandbox_rt.slirp_path);
    free(sandbox_rt.cgroup_root);
    free(sandbox_rt.cgroup_name);
    free(sandbox_rt.runc_path);
    free(sandbox_rt.runc_root);
    memset(&sandbox_rt, 0, sizeof(sandbox_rt));
}

static int mkdir_mode(const char *path, mode_t mode)
{
    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* path and its missing parents (0755; path itself gets mode). */
static int mkdir_parents(const char *path, mode_t mode)
{
    char buf[4096];
    char *p = NULL;
    int rc;

    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -ENAMETOOLONG;
    for (p = strchr(buf + 1, '/'); p != NULL; p = strchr(p + 1, '/')) {
        *p = '\0';
        rc = mkdir_mode(buf, 0755);
        *p = '/';
        if (rc != 0)
            return rc;
    }
    return mkdir_mode(buf, mode);
}

/* Host id claims are machine-wide: every devboxd of the machine, whatever
 * its state dir, claims in the same directory, so two engines never hand
 * out the same ids. rt->claims_dir moves it (all engines that share ids
 * must name the same one). */
static char *claims_dir(const struct sb_runtime *rt)
{
    const char *v = rt->claims_dir;

    return strdup(v != NULL && v[0] == '/' ? v : SB_CLAIMS_DIR);
}

/* rt->range_slots: how many runc id ranges devboxd hands out (1 to
 * SB_RANGE_SLOTS, 0: all); 0 or -errno with err. */
static int range_slots(const struct sb_runtime *rt, char *err, size_t errlen)
{
    sandbox_rt.range_slots = SB_RANGE_SLOTS;
    if (rt->range_slots == 0)
        return 0;
    if (rt->range_slots > SB_RANGE_SLOTS)
        return sandbox_fs_err(err, errlen, -EINVAL,
                              "range_slots must be from 1 to %u, got %u",
                              SB_RANGE_SLOTS, (unsigned)rt->range_slots);
    sandbox_rt.range_slots = rt->range_slots;
    return 0;
}

/* The PTY server (devboxd-ptyd) is built next to the agent; optional. */
static char *ptyd_path(void)
{
    char *path = NULL;
    char *slash = strrchr(sandbox_rt.agent_path, '/');
    int dirlen = slash != NULL ? (int)(slash - sandbox_rt.agent_path) : 0;

    if (slash == NULL ||
        asprintf(&path, "%.*s/devboxd-ptyd", dirlen, sandbox_rt.agent_path) < 0)
        return NULL;
    if (access(path, R_OK) == 0)
        return path;
    free(path);
    return NULL;
}

int sandbox_init(const struct sb_runtime *rt, char *err, size_t errlen)
{
    char *sbdir = NULL;
    cJSON *seccomp = NULL;
    struct stat st;
    int rc = 0;

    if (rt == NULL || rt->state_dir == NULL || rt->state_dir[0] != '/')
        return sandbox_fs_err(err, errlen, -EINVAL,
                              "sandbox runtime needs an absolute state_dir");
    if (geteuid() != 0)
        return sandbox_fs_err(
            err, errlen, -EPERM,
            "devboxd must run as root to mount devbox filesystems and cgroups");
    sandbox_shutdown_runtime();
    sandbox_rt.state_dir = strdup(rt->state_dir);
    sandbox_rt.agent_path = rt->agent_path
                                ? strdup(rt->agent_path)
                                : sandbox_helper_path("devboxd-agent");
    sandbox_rt.slirp_path = dup_or(rt->slirp_path, "/usr/bin/slirp4netns");
    sandbox_rt.cgroup_root = dup_or(rt->cgroup_root, "/sys/fs/cgroup");
    sandbox_rt.cgroup_name = dup_or(rt->cgroup_name, "devboxd");
    if (asprintf(&sbdir, "%s/sandbox", rt->state_dir) < 0 ||
        (sandbox_rt.claims_dir = claims_dir(rt)) == NULL ||
        sandbox_rt.state_dir == NULL || sandbox_rt.agent_path == NULL ||
        sandbox_rt.slirp_path == NULL || sandbox_rt.cgroup_root == NULL ||
        sandbox_rt.cgroup_name == NULL) {
        rc = sandbox_fs_err(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    if (!sandbox_fs_valid_id(sandbox_rt.cgroup_name)) {
        rc = sandbox_fs_err(err, errlen, -EINVAL, "invalid cgroup name");
        goto out;
    }
    if (access(sandbox_rt.agent_path, X_OK) != 0) {
        rc = sandbox_fs_err(
            err, errlen, -ENOENT,
            "devbox agent %s is not executable; build devboxd-agent",
            sandbox_rt.agent_path);
        goto out;
    }
    sandbox_rt.ptyd_path = ptyd_path();
    rc = range_slots(rt, err, errlen);
    if (rc != 0)
        goto out;
    rc = mkdir_mode(sbdir, 0700);
    if (rc == 0)
        rc = mkdir_parents(sandbox_rt.claims_dir, 0700);
    if (rc == 0)
        rc = mkdir_mode(SB_STAGE_DIR, 0755);
    if (rc != 0) {
        sandbox_fs_err(err, errlen, rc, "cannot create %s or %s: %s",
                       sandbox_rt.claims_dir, SB_STAGE_DIR, strerror(-rc));
        goto out;
    }
    rc = sandbox_runc_init(rt, sbdir, err, errlen);
    if (rc != 0)
        goto out;
    if (rt->disk != NULL && rt->disk[0] != '\0' &&
        strcmp(rt->disk, "loop") != 0 && strcmp(rt->disk, "off") != 0) {
        rc = sandbox_fs_err(err, errlen, -EINVAL,
                            "unknown devbox disk mode \"%.40s\" (loop, off)",
                            rt->disk);
        goto out;
    }
    sandbox_rt.disk_on = rt->disk == NULL || strcmp(rt->disk, "off") != 0;
    sandbox_cgroup_detect();
    if (!sandbox_rt.have_ctl[SB_CG_FREEZER])
        fprintf(
            stderr,
            "devboxd: no cgroup freezer under %s: snapshots copy a devbox's "
            "files while it runs, not at one moment\n",
            sandbox_rt.cgroup_root);
    /* Built for every bundle; a libseccomp that cannot is a setup error. */
    seccomp = sandbox_seccomp_oci();
    if (seccomp == NULL) {
        rc = sandbox_fs_err(err, errlen, -ENOMEM,
                            "cannot build the devbox seccomp filter");
        goto out;
    }
    /* slirp4netns opens /dev/net/tun after joining the devbox's namespaces;
     * as an unprivileged uid that needs the usual 0666 mode. */
    sandbox_rt.slirp_as_root =
        !(stat("/dev/net/tun", &st) == 0 && (st.st_mode & 0006) == 0006);
out:
    cJSON_Delete(seccomp);
    free(sbdir);
    if (rc != 0)
        sandbox_shutdown_runtime();
    return rc;
}

/* ---- small process helpers ------------------------------------------ */

int64_t sandbox_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* poll() one fd for events until deadline (ms, monotonic); -ETIMEDOUT. */
int sandbox_poll_until(int fd, short events, int64_t deadline)
{
    struct pollfd p = {.fd = fd, .events = events};
    int64_t left;
    int rc;

    for (;;) {
        left = deadline < 0 ? -1 : deadline - sandbox_now_ms();
        if (deadline >= 0 && left < 0)
            left = 0;
        rc = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (rc > 0)
            return 0;
        if (rc == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

void sandbox_reap_child(pid_t pid, int pidfd, int timeout_ms)
{
    int status;

    if (pid <= 0)
        return;
    if (pidfd >= 0)
        sandbox_poll_until(pidfd, POLLIN, sandbox_now_ms() + timeout_ms);
    if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
}

/* devboxd blocks SIGTERM/SIGINT/SIGHUP (sigwait) and ignores SIGPIPE; a
 * blocked mask and ignored signals survive execve, so every process of a
 * devbox would inherit them.  Async-signal-safe. */
void sandbox_child_default_signals(void)
{
    struct sigaction sa;
    sigset_t none;
    int sig;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    /* Fails harmlessly for SIGKILL and SIGSTOP. */
    for (sig = 1; sig < NSIG; sig++)
        sigaction(sig, &sa, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* ---- slirp4netns ------------------------------------------------------ */

/* Child side of start_slirp: fds = {netns, userns, exit pipe, ready pipe}
 * become 3..6; async-signal-safe calls only. */
static void slirp_child(const int fds[4], int devnull, uid_t uid, char **argv)
{
    static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    int hi[5];
    int i;

    for (i = 0; i < 4; i++) {
        hi[i] = fcntl(fds[i], F_DUPFD, 10);
        if (hi[i] < 0)
            _exit(122);
    }
    if (dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)
        _exit(122);
    for (i = 0; i < 4; i++) {
        if (dup2(hi[i], 3 + i) < 0)
            _exit(122);
    }
    close_range(7, ~0U, 0);
    sandbox_child_default_signals();
    if (!sandbox_rt.slirp_as_root &&
        (syscall(SYS_setgroups, 0, NULL) != 0 ||
         syscall(SYS_setresgid, uid, uid, uid) != 0 ||
         syscall(SYS_setresuid, uid, uid, uid) != 0))
        _exit(123);
    execve(argv[0], argv, envp);
    _exit(124);
}

int sandbox_slirp_start(pid_t ns_pid, uid_t uid, struct sandbox_slirp *s,
                        char *err, size_t errlen)
{
    char nspath[64];
    int fds[4] = {-1, -1, -1,
                  -1}; /* netns, userns, exit read end, ready write end */
    int ready_r = -1;
    int exit_w = -1;
    int pp[2];
    int devnull = -1;
    int rc = 0;
    int i;
    char buf[8];
    pid_t pid;
    /* As the devbox uid it joins the netns' owning userns; as root (when
     * /dev/net/tun is root-only) it confines itself: --enable-sandbox drops
     * every capability but NET_BIND_SERVICE and pivots to an empty root. */
    char *argv[] = {sandbox_rt.slirp_path,
                    "--configure",
                    "--mtu=65520",
                    "--disable-host-loopback",
                    "--netns-type=path",
                    "--exit-fd=5",
                    "--ready-fd=6",
                    "--enable-seccomp",
                    sandbox_rt.slirp_as_root ? "--enable-sandbox"
                                             : "--userns-path=/proc/self/fd/4",
                    "/proc/self/fd/3",
                    "tap0",
                    NULL};

    s->pid = 0;
    s->pidfd = -1;
    s->exit_w = -1;
    snprintf(nspath, sizeof(nspath), "/proc/%d/ns/net", (int)ns_pid);
    fds[0] = open(nspath, O_RDONLY | O_CLOEXEC);
    if (fds[0] < 0) {
        rc = sandbox_fs_err(err, errlen, -errno,
                            "sandbox exited during network setup");
        goto out;
    }
    /* The netns belongs to the devbox's user namespace; slirp joins that. */
    fds[1] = ioctl(fds[0], NS_GET_USERNS);
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fds[1] < 0 || devnull < 0 || pipe2(pp, O_CLOEXEC) != 0) {
        rc = sandbox_fs_err(err, errlen, -errno, "network setup: %s",
                            strerror(errno));
        goto out;
    }
    fds[2] = pp[0];
    exit_w = pp[1];
    if (pipe2(pp, O_CLOEXEC) != 0) {
        rc = sandbox_fs_err(err, errlen, -errno, "network setup: %s",
                            strerror(errno));
        goto out;
    }
    ready_r = pp[0];
    fds[3] = pp[1];
    pid = fork();
    if (pid < 0) {
        rc = sandbox_fs_err(err, errlen, -errno, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0)
        slirp_child(fds, devnull, uid, argv);
    s->pid = pid;
    s->pidfd = pidfd_open(pid, 0);
    s->exit_w = exit_w;
    exit_w = -1;
    close(fds[3]);
    fds[3] = -1;
    rc = sandbox_poll_until(ready_r, POLLIN,
                            sandbox_now_ms() + SB_START_TIMEOUT_MS);
    if (rc == 0 && read(ready_r, buf, 1) != 1)
        rc = -EIO;
    if (rc != 0)
        sandbox_fs_err(err, errlen, rc,
                       "slirp4netns (%s) did not configure the devbox network; "
                       "install it or create the devbox without network",
                       sandbox_rt.slirp_path);
out:
    for (i = 0; i < 4; i++) {
        sandbox_close_fd(fds[i]);
    }
    sandbox_close_fd(ready_r);
    sandbox_close_fd(exit_w);
    sandbox_close_fd(devnull);
    return rc;
}

void sandbox_slirp_stop(struct sandbox_slirp *s)
{
    if (s->exit_w >= 0) {
        close(s->exit_w); /* slirp4netns exits on EOF */
        s->exit_w = -1;
    }
    sandbox_reap_child(s->pid, s->pidfd, 2000);
    s->pid = 0;
    sandbox_close_fd(s->pidfd);
    s->pidfd = -1;
}

static int start_slirp(struct sandbox *sb, char *err, size_t errlen)
{
    struct sandbox_slirp s;
    int rc = sandbox_slirp_start(sb->init_pid, sb->uid, &s, err, errlen);

    /* Kept also on failure: sandbox_stop ends a half-started one. */
    sb->slirp_pid = s.pid;
    sb->slirp_pidfd = s.pidfd;
    sb->slirp_exit_w = s.exit_w;
    return rc;
}

/* ---- start ------------------------------------------------------------ */

static int check_spec(const struct sb_spec *spec, char *err, size_t errlen)
{
    size_t i;

    if (spec == NULL || !sandbox_fs_valid_id(spec->id))
        return sandbox_fs_err(err, errlen, -EINVAL,
                              "devbox id must be 1-63 of [A-Za-z0-9_-]");
    if (spec->dir == NULL || !sandbox_fs_valid_layer_path(spec->dir))
        return sandbox_fs_err(
            err, errlen, -EINVAL,
            "devbox dir must be an absolute path without ':', ',' or '\\'");
    if (spec->net != SB_NET_OUTBOUND && spec->net != SB_NET_NONE)
        return sandbox_fs_err(err, errlen, -EINVAL, "unknown network policy %d",
                              (int)spec->net);
    if (spec->n_layers > 0 && spec->lower_layers == NULL)
        return sandbox_fs_err(err, errlen, -EINVAL,
                              "n_layers > 0 but no layer list");
    if (spec->image == NULL || !sandbox_fs_valid_layer_path(spec->image))
        return sandbox_fs_err(
            err, errlen, -EINVAL,
            "a devbox needs an image: an absolute path without ':', "
            "',' or '\\'");
    for (i = 0; spec->env != NULL && spec->env[i] != NULL; i++) {
        if (!sandbox_fs_valid_env(spec->env[i]) || strlen(spec->env[i]) > 32768)
            return sandbox_fs_err(
                err, errlen, -EINVAL,
                "environment entry %zu must be KEY=VALUE with KEY of "
                "[A-Za-z0-9_]",
                i);
    }
    if (sandbox_rt.state_dir == NULL)
        return sandbox_fs_err(err, errlen, -EINVAL,
                              "sandbox_init was not called");
    return 0;
}

static struct sandbox *sandbox_new(const struct sb_spec *spec)
{
    struct sandbox *sb = calloc(1, sizeof(*sb));

    if (sb == NULL)
        return NULL;
    pthread_mutex_init(&sb->lock, NULL);
    snprintf(sb->id, sizeof(sb->id), "%s", spec->id);
    sb->dir = strdup(spec->dir);
    sb->master = sb->rootfd = sb->init_pidfd = sb->launcher_pidfd = -1;
    sb->slirp_pidfd = sb->slirp_exit_w = sb->errpipe_r = sb->out_tree = -1;
    sb->meminfo_fd = -1;
    if (sb->dir == NULL) {
        free(sb);
        return NULL;
    }
    return sb;
}

void sandbox_close_fd(int fd)
{
    if (fd >= 0)
        close(fd);
}

void sandbox_close_pair(int p[2])
{
    sandbox_close_fd(p[0]);
    sandbox_close_fd(p[1]);
    p[0] = p[1] = -1;
}

bool sandbox_valid_user(const char *name, uint32_t uid, char *err,
                        size_t errlen)
{
    if (!sandbox_fs_valid_user_name(name))
        sandbox_fs_err(
            err, errlen, -EINVAL,
            "user name \"%.40s\" must be 1-32 of [a-z0-9_-], starting "
            "with a letter or '_'",
            name != NULL ? name : "");
    else if (uid > 60000)
        sandbox_fs_err(err, errlen, -EINVAL,
                       "uid %u is out of range; use 0-60000", (unsigned)uid);
    else if ((uid == 0) != (strcmp(name, "root") == 0))
        sandbox_fs_err(err, errlen, -EINVAL,
                       "uid 0 is the user \"root\" and \"root\" is uid 0");
    else if (strcmp(name, "user") == 0 && uid != SB_INSIDE_UID)
        sandbox_fs_err(err, errlen, -EINVAL, "\"user\" is uid %d",
                       SB_INSIDE_UID);
    else
        return true;
    return false;
}

static int check_user(const struct sb_spec *spec, char *err, size_t errlen)
{
    if (spec->user_name == NULL)
        return 0;
    if (!sandbox_valid_user(spec->user_name, spec->user_uid, err, errlen))
        return -EINVAL;
    return 0;
}

int sandbox_start(const struct sb_spec *spec, struct sandbox **out, char *err,
                  size_t errlen)
{
    struct sandbox *sb = NULL;
    int rc;

    *out = NULL;
    rc = check_spec(spec, err, errlen);
    if (rc == 0)
        rc = check_user(spec, err, errlen);
    if (rc != 0)
        return rc;
    sb = sandbox_new(spec);
    if (sb == NULL)
        return sandbox_fs_err(err, errlen, -ENOMEM, "out of memory");
    /* The disk first: everything below goes onto it. */
    rc = sandbox_disk_attach(spec->dir, spec->limits.disk_bytes, err, errlen);
    if (rc != 0)
        goto fail;
    rc = sandbox_runc_create(sb, spec, err, errlen);
    if (rc != 0)
        goto fail;
    rc = sandbox_cgroup_create(&sb->cg, spec->id, &spec->limits, err, errlen);
    if (rc != 0)
        goto fail;
    sb->oom_base = sandbox_cgroup_oom_kills(&sb->cg);
    rc = sandbox_runc_start(sb, spec, err, errlen);
    /* The network last: runc configures lo concurrently with its setup,
     * and slirp4netns' netlink requests must not race with it; no command
     * runs before start returns, so none sees the network missing. */
    if (rc == 0 && spec->net == SB_NET_OUTBOUND)
        rc = start_slirp(sb, err, errlen);
    if (rc != 0)
        goto fail;
    *out = sb;
    return 0;
fail:
    sandbox_release(sb);
    return rc;
}

/* ---- stop / health ------------------------------------------------------ */

int sandbox_stop(struct sandbox *sb)
{
    struct sb_cgroup cg;
    int master;
    int rootfd;
    int init_pidfd;

    if (sb == NULL)
        return 0;
    /* Take the shared fds out under the lock so a concurrent exec, open,
     * connect or check never uses a closed (or reused) descriptor. */
    pthread_mutex_lock(&sb->lock);
    if (sb->stopped) {
        pthread_mutex_unlock(&sb->lock);
        return 0;
    }
    sb->stopped = true;
    cg = sb->cg;
    memset(&sb->cg, 0, sizeof(sb->cg));
    master = sb->master;
    rootfd = sb->rootfd;
    init_pidfd = sb->init_pidfd;
    sb->master = sb->rootfd = sb->init_pidfd = -1;
    sandbox_close_fd(sb->out_tree);
    sb->out_tree = -1;
    sandbox_close_fd(sb->meminfo_fd);
    sb->meminfo_fd = -1;
    pthread_mutex_unlock(&sb->lock);
    sandbox_close_fd(master);
    sandbox_runc_kill(sb, init_pidfd, &cg);
    if (sb->slirp_exit_w >= 0) {
        close(sb->slirp_exit_w); /* slirp4netns exits on EOF */
        sb->slirp_exit_w = -1;
    }
    sandbox_reap_child(sb->slirp_pid, sb->slirp_pidfd, 2000);
    sb->slirp_pid = 0;
    sandbox_cgroup_remove(&cg);
    sandbox_close_fd(rootfd); /* last reference to the overlay mount */
    sandbox_close_fd(init_pidfd);
    sandbox_close_fd(sb->slirp_pidfd);
    sb->slirp_pidfd = -1;
    return 0;
}

/* A private duplicate of one of the sandbox's fds (-ESRCH once stopped). */
int sandbox_dup_fd(struct sandbox *sb, const int *field)
{
    int fd;

    pthread_mutex_lock(&sb->lock);
    fd = (sb->stopped || *field < 0) ? -ESRCH
                                     : fcntl(*field, F_DUPFD_CLOEXEC, 0);
    if (fd == -1)
        fd = -errno;
    pthread_mutex_unlock(&sb->lock);
    return fd;
}

void sandbox_release(struct sandbox *sb)
{
    if (sb == NULL)
        return;
    sandbox_stop(sb);
    pthread_mutex_destroy(&sb->lock);
    free(sb->dir);
    free(sb);
}

int sandbox_destroy_dir(const char *dir, char *err, size_t errlen)
{
    int rc;

    if (dir == NULL || dir[0] != '/' || strcmp(dir, "/") == 0)
        return sandbox_fs_err(err, errlen, -EINVAL,
                              "devbox dir must be an absolute path");
    rc = sandbox_disk_destroy(dir, err, errlen);
    if (rc != 0)
        return rc;
    rc = sandbox_fs_uid_release(dir);
    if (rc != 0)
        return sandbox_fs_err(err, errlen, rc,
                              "cannot release the uid of %s: %s", dir,
                              strerror(-rc));
    rc = sandbox_fs_remove_tree(dir);
    if (rc != 0)
        return sandbox_fs_err(err, errlen, rc, "cannot remove %s: %s", dir,
                              strerror(-rc));
    return 0;
}

int sandbox_purge(const char *id)
{
    int rc;

    if (id == NULL || id[0] == '\0' || strchr(id, '/') != NULL || id[0] == '.')
        return -EINVAL;
    rc = sandbox_cgroup_purge(id);
    /* runc's state of a container whose runc was killed with devboxd. */
    sandbox_runc_delete(id);
    return rc;
}

static const char *get_failure(struct sandbox *sb)
{
    const char *why;

    pthread_mutex_lock(&sb->lock);
    why = sb->failure;
    pthread_mutex_unlock(&sb->lock);
    return why;
}

/* Locks sb when it is live: 0 with sb->lock held, or -ESRCH (NULL or
 * stopped) without it. */
static int lock_live(struct sandbox *sb)
{
    if (sb == NULL)
        return -ESRCH;
    pthread_mutex_lock(&sb->lock);
    if (sb->stopped) {
        pthread_mutex_unlock(&sb->lock);
        return -ESRCH;
    }
    return 0;
}

void sandbox_refresh_meminfo(struct sandbox *sb)
{
    char path[PATH_MAX];
    char stat[4096];
    char text[1024];
    uint64_t usage;
    int64_t now = sandbox_now_ms();
    size_t n;

    pthread_mutex_lock(&sb->lock);
    if (sb->meminfo_fd < 0 || now - sb->meminfo_ms < 1000 ||
        sb->cg.path[SB_CG_MEMORY] == NULL)
        goto out;
    sb->meminfo_ms = now;
    usage =
        sandbox_cgroup_read_u64(&sb->cg, SB_CG_MEMORY, "memory.usage_in_bytes");
    snprintf(path, sizeof(path), "%s/memory.stat", sb->cg.path[SB_CG_MEMORY]);
    if (sandbox_fs_read_small(path, stat, sizeof(stat)) <= 0)
        stat[0] = '\0';
    n = sandbox_oci_meminfo_text(text, sizeof(text), sb->meminfo_limit, usage,
                                 stat);
    /* In place (the bind mount holds this inode): fixed-width lines keep
     * the length, so a reader sees the old or the new figures. */
    if (pwrite(sb->meminfo_fd, text, n, 0) == (ssize_t)n)
        (void)!ftruncate(sb->meminfo_fd, (off_t)n);
out:
    pthread_mutex_unlock(&sb->lock);
}

int sandbox_check(struct sandbox *sb)
{
    struct pollfd p;
    int rc = 0;

    if (lock_live(sb) != 0)
        return -ESRCH;
    /* Only the death of pid 1 (the agent) ends the sandbox: the memory
     * limit's OOM killer takes one process, and a command it took is that
     * command's end, not the devbox's. */
    p.fd = sb->init_pidfd;
    p.events = POLLIN;
    p.revents = 0;
    if (poll(&p, 1, 0) == 1) {
        if (sb->failure == NULL)
            sb->failure = sandbox_cgroup_oom_kills(&sb->cg) > sb->oom_base
                              ? "out_of_memory"
                              : "sandbox_exited";
        rc = -ESRCH;
    }
    pthread_mutex_unlock(&sb->lock);
    return rc;
}

const char *sandbox_failure_reason(struct sandbox *sb)
{
    if (sb == NULL)
        return NULL;
    sandbox_check(sb);
    return get_failure(sb);
}

uid_t sandbox_host_uid(const struct sandbox *sb)
{
    return sb->uid;
}

int sandbox_oom_kills(struct sandbox *sb, uint64_t *kills)
{
    *kills = 0;
    if (lock_live(sb) != 0)
        return -ESRCH;
    *kills = sandbox_cgroup_oom_kills(&sb->cg) - sb->oom_base;
    pthread_mutex_unlock(&sb->lock);
    return 0;
}

int sandbox_usage(struct sandbox *sb, struct sb_usage *u)
{
    memset(u, 0, sizeof(*u));
    if (lock_live(sb) != 0)
        return -ESRCH;
    sandbox_runc_stats(sb, u);
    pthread_mutex_unlock(&sb->lock);
    return 0;
}

int sandbox_freeze(struct sandbox *sb, bool frozen, int timeout_ms)
{
    struct sb_cgroup one;
    int rc;

    if (sb == NULL)
        return -ESRCH;
    /* Only the freezer's path is taken under the lock: waiting for the
     * kernel with it held would stall every check and usage read of the
     * engine. The caller's I/O reference keeps the groups from a stop. */
    memset(&one, 0, sizeof(one));
    pthread_mutex_lock(&sb->lock);
    rc = sb->stopped ? -ESRCH : 0;
    if (rc == 0 && sb->cg.path[SB_CG_FREEZER] != NULL) {
        one.path[SB_CG_FREEZER] = strdup(sb->cg.path[SB_CG_FREEZER]);
        if (one.path[SB_CG_FREEZER] == NULL)
            rc = -ENOMEM;
    }
    pthread_mutex_unlock(&sb->lock);
    if (rc != 0)
        return rc;
    rc = sandbox_runc_freeze(&one, frozen, timeout_ms);
    free(one.path[SB_CG_FREEZER]);
    return rc;
}

uid_t sandbox_owner_uid(const struct sandbox *sb)
{
    return sb->range;
}

int sandbox_dir_owner(const char *dir, const char *id, uid_t *owner, char *err,
                      size_t errlen)
{
    uint32_t range = 0;
    int rc;

    if (sandbox_rt.state_dir == NULL)
        return sandbox_fs_err(err, errlen, -EINVAL,
                              "sandbox_init was not called");
    if (!sandbox_fs_valid_id(id) || dir == NULL ||
        !sandbox_fs_valid_layer_path(dir))
        return sandbox_fs_err(err, errlen, -EINVAL, "invalid devbox id or dir");
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return sandbox_fs_err(err, errlen, -errno,
                              "cannot create devbox dir %s: %s", dir,
                              strerror(errno));
    rc = sandbox_fs_range_claim(dir, id, &range, err, errlen);
    *owner = range;
    return rc;
}

/* Owners of SB_RANGE_BASE and above are ranges (inside uid 0 at the
 * owner, "user" at +1000); below, a single uid that is "user". */
uid_t sandbox_shift_uid(uid_t u, uid_t from, uid_t to)
{
    bool from_range = from >= SB_RANGE_BASE;
    bool to_range = to >= SB_RANGE_BASE;

    if (from_range && to_range)
        return u >= from && u - from < SB_RANGE_SIZE ? to + (u - from)
                                                     : (uid_t)-1;
    if (from_range)
        return u == from + SB_INSIDE_UID ? to : (uid_t)-1;
    if (to_range)
        return u == from ? to + SB_INSIDE_UID : (uid_t)-1;
    return u == from ? to : (uid_t)-1;
}
