/* Sandbox lifecycle: runtime init, start (overlay + cgroups + runc + slirp4netns
 * + agent handshake), stop, health, usage.  Exec and open are in
 * sandbox_exec.c. */
#define _GNU_SOURCE
#include "sandbox_internal.h"
#include "sandbox_priv.h"
#include "agent/agent_proto.h"

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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct sb_rt sb_rt;

#define STR2(x) #x
#define STR(x) STR2(x)

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

int sandbox_spawn(pid_t *pid, const char *path,
                  posix_spawn_file_actions_t *fa, char *const argv[])
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

void sandbox_shutdown_runtime(void)
{
    sb_cg_remove_parents();
    free(sb_rt.ptyd_path);
    free(sb_rt.state_dir);
    free(sb_rt.claims_dir);
    free(sb_rt.agent_path);
    free(sb_rt.slirp_path);
    free(sb_rt.cgroup_root);
    free(sb_rt.cgroup_name);
    free(sb_rt.runc_path);
    free(sb_rt.runc_root);
    memset(&sb_rt, 0, sizeof(sb_rt));
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
 * out the same ids. RLMCP_UID_CLAIMS_DIR moves it (all engines that share
 * ids must name the same one). */
static char *claims_dir(void)
{
    const char *v = getenv("RLMCP_UID_CLAIMS_DIR");

    return strdup(v != NULL && v[0] == '/' ? v : SB_CLAIMS_DIR);
}

/* RLMCP_UID_RANGE_SLOTS: how many runc id ranges devboxd hands out (1 to
 * SB_RANGE_SLOTS, default all); 0 or -errno with err. */
static int range_slots(char *err, size_t errlen)
{
    const char *v = getenv("RLMCP_UID_RANGE_SLOTS");
    char *end = NULL;
    unsigned long n;

    sb_rt.range_slots = SB_RANGE_SLOTS;
    if (v == NULL || v[0] == '\0')
        return 0;
    errno = 0;
    n = strtoul(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < 1 || n > SB_RANGE_SLOTS)
        return sb_err(err, errlen, -EINVAL,
                      "RLMCP_UID_RANGE_SLOTS must be a whole number from 1 to "
                      "%u, got \"%.40s\"",
                      SB_RANGE_SLOTS, v);
    sb_rt.range_slots = (uint32_t)n;
    return 0;
}

/* The PTY server (devboxd-ptyd) is built next to the agent; optional. */
static char *ptyd_path(void)
{
    char *path = NULL;
    char *slash = strrchr(sb_rt.agent_path, '/');
    int dirlen = slash != NULL ? (int)(slash - sb_rt.agent_path) : 0;

    if (slash == NULL ||
        asprintf(&path, "%.*s/devboxd-ptyd", dirlen, sb_rt.agent_path) < 0)
        return NULL;
    if (access(path, R_OK) == 0)
        return path;
    free(path);
    return NULL;
}

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

/* Opens a helper binary for one launch (a private offset: runc reads it
 * from the preserved fd). */
static int open_helper(const char *path, char *err, size_t errlen)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int copy;

    if (fd < 0)
        return sb_err(err, errlen, -errno, "cannot open %s: %s", path,
                      strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return sb_err(err, errlen, -ENOEXEC, "%s is not a regular file", path);
    }
    if ((st.st_mode & 0005) == 0005)
        return fd;
    copy = helper_copy(fd);
    close(fd);
    if (copy < 0)
        return sb_err(err, errlen, copy, "cannot stage %s for the devbox: %s", path,
                      strerror(-copy));
    return copy;
}

/* The runtime: runc present, its state under <state_dir>/sandbox/runc,
 * user namespaces available. */
static int init_runc(const struct sb_runtime *rt, const char *sbdir, char *err,
                     size_t errlen)
{
    int fd;

    sb_rt.runc_path = dup_or(rt->runc_path, "/usr/sbin/runc");
    if (sb_rt.runc_path == NULL ||
        asprintf(&sb_rt.runc_root, "%s/runc", sbdir) < 0) {
        sb_rt.runc_root = NULL;
        return sb_err(err, errlen, -ENOMEM, "out of memory");
    }
    if (access(sb_rt.runc_path, X_OK) != 0)
        return sb_err(err, errlen, -ENOENT,
                      "runc, the devbox runtime, is not at %s: install it "
                      "(apt-get install runc; scripts/bootstrap) or point "
                      "RLMCP_RUNC at it",
                      sb_rt.runc_path);
    if (mkdir_mode(sb_rt.runc_root, 0700) != 0)
        return sb_err(err, errlen, -errno, "cannot create %s: %s",
                      sb_rt.runc_root, strerror(errno));
    fd = sb_oci_userns(SB_RANGE_BASE);
    if (fd < 0)
        return sb_err(err, errlen, fd,
                      "user namespaces are unavailable (%s); devboxes need "
                      "them (sysctl user.max_user_namespaces > 0)",
                      strerror(-fd));
    close(fd);
    return 0;
}

int sandbox_init(const struct sb_runtime *rt, char *err, size_t errlen)
{
    char *sbdir = NULL;
    cJSON *seccomp = NULL;
    struct stat st;
    int rc = 0;

    if (rt == NULL || rt->state_dir == NULL || rt->state_dir[0] != '/')
        return sb_err(err, errlen, -EINVAL, "sandbox runtime needs an absolute state_dir");
    if (geteuid() != 0)
        return sb_err(err, errlen, -EPERM,
                      "devboxd must run as root to mount devbox filesystems and cgroups");
    sandbox_shutdown_runtime();
    sb_rt.state_dir = strdup(rt->state_dir);
    sb_rt.agent_path = rt->agent_path ? strdup(rt->agent_path)
                                      : sandbox_helper_path("devboxd-agent");
    sb_rt.slirp_path = dup_or(rt->slirp_path, "/usr/bin/slirp4netns");
    sb_rt.cgroup_root = dup_or(rt->cgroup_root, "/sys/fs/cgroup");
    sb_rt.cgroup_name = dup_or(rt->cgroup_name, "devboxd");
    if (asprintf(&sbdir, "%s/sandbox", rt->state_dir) < 0 ||
        (sb_rt.claims_dir = claims_dir()) == NULL || sb_rt.state_dir == NULL ||
        sb_rt.agent_path == NULL ||
        sb_rt.slirp_path == NULL || sb_rt.cgroup_root == NULL ||
        sb_rt.cgroup_name == NULL) {
        rc = sb_err(err, errlen, -ENOMEM, "out of memory");
        goto out;
    }
    if (!sb_valid_id(sb_rt.cgroup_name)) {
        rc = sb_err(err, errlen, -EINVAL, "invalid cgroup name");
        goto out;
    }
    if (access(sb_rt.agent_path, X_OK) != 0) {
        rc = sb_err(err, errlen, -ENOENT, "devbox agent %s is not executable; build devboxd-agent",
                    sb_rt.agent_path);
        goto out;
    }
    sb_rt.ptyd_path = ptyd_path();
    rc = range_slots(err, errlen);
    if (rc != 0)
        goto out;
    rc = mkdir_mode(sbdir, 0700);
    if (rc == 0)
        rc = mkdir_parents(sb_rt.claims_dir, 0700);
    if (rc == 0)
        rc = mkdir_mode(SB_STAGE_DIR, 0755);
    if (rc != 0) {
        sb_err(err, errlen, rc, "cannot create %s or %s: %s", sb_rt.claims_dir, SB_STAGE_DIR,
               strerror(-rc));
        goto out;
    }
    rc = init_runc(rt, sbdir, err, errlen);
    if (rc != 0)
        goto out;
    if (rt->disk != NULL && rt->disk[0] != '\0' &&
        strcmp(rt->disk, "loop") != 0 && strcmp(rt->disk, "off") != 0) {
        rc = sb_err(err, errlen, -EINVAL,
                    "unknown devbox disk mode \"%.40s\" (loop, off)", rt->disk);
        goto out;
    }
    sb_rt.disk_on = rt->disk == NULL || strcmp(rt->disk, "off") != 0;
    sb_cg_detect();
    if (!sb_rt.have_ctl[SB_CG_FREEZER])
        fprintf(
            stderr,
            "devboxd: no cgroup freezer under %s: snapshots copy a devbox's "
            "files while it runs, not at one moment\n",
            sb_rt.cgroup_root);
    /* Built for every bundle; a libseccomp that cannot is a setup error. */
    seccomp = sb_seccomp_oci();
    if (seccomp == NULL) {
        rc = sb_err(err, errlen, -ENOMEM, "cannot build the devbox seccomp filter");
        goto out;
    }
    /* slirp4netns opens /dev/net/tun after joining the devbox's namespaces;
     * as an unprivileged uid that needs the usual 0666 mode. */
    sb_rt.slirp_as_root = !(stat("/dev/net/tun", &st) == 0 && (st.st_mode & 0006) == 0006);
out:
    cJSON_Delete(seccomp);
    free(sbdir);
    if (rc != 0)
        sandbox_shutdown_runtime();
    return rc;
}

/* ---- small process helpers ------------------------------------------ */

int64_t sb_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* poll() one fd for events until deadline (ms, monotonic); -ETIMEDOUT. */
int sb_poll_until(int fd, short events, int64_t deadline)
{
    struct pollfd p = {.fd = fd, .events = events};
    int64_t left;
    int rc;

    for (;;) {
        left = deadline < 0 ? -1 : deadline - sb_now_ms();
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

/* Waits (bounded) for our own child to exit and reaps it. */
static void reap_child(pid_t pid, int pidfd, int timeout_ms)
{
    int status;

    if (pid <= 0)
        return;
    if (pidfd >= 0)
        sb_poll_until(pidfd, POLLIN, sb_now_ms() + timeout_ms);
    if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
}

/* ---- bwrap command line ---------------------------------------------- */

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

/* ---- overlay --------------------------------------------------------- */

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

/* ---- the launcher child ---------------------------------------------- */

/* What the launcher child gets: the helper binaries, /dev/null and its
 * channels to devboxd. */
struct launch_io {
    int agent_fd; /* the agent binary */
    int ptyd_fd;  /* the PTY server binary, or -1 */
    int devnull;
    int sp[2];    /* [0] devboxd's master, [1] the agent's end -> fd 3 */
    int errp[2];  /* the launcher's stderr: [0] devboxd reads, [1] -> fd 2 */
    cpu_set_t cpus; /* the devbox's CPUs, when pin_cpus (sb_cpu_pick) */
    bool pin_cpus;
};

static void child_fail(int errfd, const char *what)
{
    char msg[160];
    int e = errno;
    int n;

    n = snprintf(msg, sizeof(msg), "devboxd launcher: %s: %s\n", what, strerror(e));
    if (n > 0 && write(errfd, msg, (size_t)n) < 0) {
        /* nothing more to do */
    }
    _exit(121);
}

/* devboxd blocks SIGTERM/SIGINT/SIGHUP (sigwait) and ignores SIGPIPE; a
 * blocked mask and ignored signals survive execve, so every process of a
 * devbox would inherit them.  Async-signal-safe. */
static void child_default_signals(void)
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
    child_default_signals();
    if (!sb_rt.slirp_as_root &&
        (syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setresgid, uid, uid, uid) != 0 ||
         syscall(SYS_setresuid, uid, uid, uid) != 0))
        _exit(123);
    execve(argv[0], argv, envp);
    _exit(124);
}

static int start_slirp(struct sandbox *sb, char *err, size_t errlen)
{
    char nspath[64];
    int fds[4] = {-1, -1, -1, -1}; /* netns, userns, exit read end, ready write end */
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
    char *argv[] = {sb_rt.slirp_path, "--configure", "--mtu=65520", "--disable-host-loopback",
                    "--netns-type=path", "--exit-fd=5", "--ready-fd=6", "--enable-seccomp",
                    sb_rt.slirp_as_root ? "--enable-sandbox" : "--userns-path=/proc/self/fd/4",
                    "/proc/self/fd/3", "tap0", NULL};

    snprintf(nspath, sizeof(nspath), "/proc/%d/ns/net", (int)sb->init_pid);
    fds[0] = open(nspath, O_RDONLY | O_CLOEXEC);
    if (fds[0] < 0) {
        rc = sb_err(err, errlen, -errno, "sandbox exited during network setup");
        goto out;
    }
    /* The netns belongs to the devbox's user namespace; slirp joins that. */
    fds[1] = ioctl(fds[0], NS_GET_USERNS);
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fds[1] < 0 || devnull < 0 || pipe2(pp, O_CLOEXEC) != 0) {
        rc = sb_err(err, errlen, -errno, "network setup: %s", strerror(errno));
        goto out;
    }
    fds[2] = pp[0];
    exit_w = pp[1];
    if (pipe2(pp, O_CLOEXEC) != 0) {
        rc = sb_err(err, errlen, -errno, "network setup: %s", strerror(errno));
        goto out;
    }
    ready_r = pp[0];
    fds[3] = pp[1];
    pid = fork();
    if (pid < 0) {
        rc = sb_err(err, errlen, -errno, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0)
        slirp_child(fds, devnull, sb->uid, argv);
    sb->slirp_pid = pid;
    sb->slirp_pidfd = pidfd_open(pid, 0);
    sb->slirp_exit_w = exit_w;
    exit_w = -1;
    close(fds[3]);
    fds[3] = -1;
    rc = sb_poll_until(ready_r, POLLIN, sb_now_ms() + SB_START_TIMEOUT_MS);
    if (rc == 0 && read(ready_r, buf, 1) != 1)
        rc = -EIO;
    if (rc != 0)
        sb_err(err, errlen, rc, "slirp4netns (%s) did not configure the devbox network; "
               "install it or create the devbox without network", sb_rt.slirp_path);
out:
    for (i = 0; i < 4; i++) {
        sb_close_fd(fds[i]);
    }
    sb_close_fd(ready_r);
    sb_close_fd(exit_w);
    sb_close_fd(devnull);
    return rc;
}

/* ---- start ------------------------------------------------------------ */

static int check_spec(const struct sb_spec *spec, char *err, size_t errlen)
{
    size_t i;

    if (spec == NULL || !sb_valid_id(spec->id))
        return sb_err(err, errlen, -EINVAL, "devbox id must be 1-63 of [A-Za-z0-9_-]");
    if (spec->dir == NULL || !sb_valid_layer_path(spec->dir))
        return sb_err(err, errlen, -EINVAL,
                      "devbox dir must be an absolute path without ':', ',' or '\\'");
    if (spec->net != SB_NET_OUTBOUND && spec->net != SB_NET_NONE)
        return sb_err(err, errlen, -EINVAL, "unknown network policy %d", (int)spec->net);
    if (spec->n_layers > 0 && spec->lower_layers == NULL)
        return sb_err(err, errlen, -EINVAL, "n_layers > 0 but no layer list");
    if (spec->image == NULL || !sb_valid_layer_path(spec->image))
        return sb_err(err, errlen, -EINVAL,
                      "a devbox needs an image: an absolute path without ':', ',' or '\\'");
    for (i = 0; spec->env != NULL && spec->env[i] != NULL; i++) {
        if (!sb_valid_env(spec->env[i]) || strlen(spec->env[i]) > 32768)
            return sb_err(err, errlen, -EINVAL,
                          "environment entry %zu must be KEY=VALUE with KEY of [A-Za-z0-9_]", i);
    }
    if (sb_rt.state_dir == NULL)
        return sb_err(err, errlen, -EINVAL, "sandbox_init was not called");
    return 0;
}

/* The agent's hello.  *sender: the agent's pid in devboxd's pid namespace
 * when the master has SO_PASSCRED (the kernel attaches and translates the
 * sender's credentials), else 0. */
static int wait_hello(struct sandbox *sb, pid_t *sender, char *err, size_t errlen)
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
    rc = sb_poll_until(sb->master, POLLIN, sb_now_ms() + SB_START_TIMEOUT_MS);
    if (rc != 0)
        return sb_err(err, errlen, rc, "the devbox agent did not start in time");
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof(cbuf);
    n = recvmsg(sb->master, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n <= 0)
        return sb_err(err, errlen, -EIO, "the devbox agent exited during start");
    buf[n] = '\0';
    for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS)
            memcpy(&cred, CMSG_DATA(cm), sizeof(cred));
    }
    js = cJSON_ParseWithLength(buf, (size_t)n);
    ev = cJSON_GetObjectItemCaseSensitive(js, "ev");
    ver = cJSON_GetObjectItemCaseSensitive(js, "version");
    if (!cJSON_IsString(ev) || strcmp(ev->valuestring, "hello") != 0 || !cJSON_IsNumber(ver) ||
        ver->valueint != AGENT_PROTO_VERSION)
        rc = sb_err(err, errlen, -EPROTO, "the devbox agent spoke an unknown protocol");
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

/* Once the agent said hello (rc 0): the network.  Last, because runc
 * configures lo concurrently with its setup, and slirp4netns' netlink
 * requests must not race with it; no command runs before start returns,
 * so none sees the network missing.  On failure, what the launcher wrote
 * to its stderr within why_ms joins err. */
static int finish_start(struct sandbox *sb, const struct sb_spec *spec, int rc, int why_ms,
                        char *err, size_t errlen)
{
    if (rc == 0 && spec->net == SB_NET_OUTBOUND)
        rc = start_slirp(sb, err, errlen);
    if (rc != 0) {
        if (sb->errpipe_r >= 0)
            sb_poll_until(sb->errpipe_r, POLLIN, sb_now_ms() + why_ms);
        read_errpipe(sb->errpipe_r, err, errlen);
    }
    return rc;
}

void sb_close_fd(int fd)
{
    if (fd >= 0)
        close(fd);
}

void sb_close_pair(int p[2])
{
    sb_close_fd(p[0]);
    sb_close_fd(p[1]);
    p[0] = p[1] = -1;
}

static void close_launch_io(struct launch_io *io)
{
    sb_close_pair(io->sp);
    sb_close_pair(io->errp);
    sb_close_fd(io->devnull);
    sb_close_fd(io->agent_fd);
    sb_close_fd(io->ptyd_fd);
    io->devnull = io->agent_fd = io->ptyd_fd = -1;
}

/* Opens what every launcher hands on (struct launch_io); passcred: the
 * master receives the agent's credentials (its pid) with its hello.  io is
 * safe for close_launch_io whatever this returns. */
static int open_launch_io(struct launch_io *io, bool passcred, char *err, size_t errlen)
{
    int one = 1;

    io->sp[0] = io->sp[1] = io->errp[0] = io->errp[1] = -1;
    io->agent_fd = io->ptyd_fd = -1;
    io->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    io->agent_fd = open_helper(sb_rt.agent_path, err, errlen);
    if (io->agent_fd < 0)
        return io->agent_fd;
    if (sb_rt.ptyd_path != NULL) {
        io->ptyd_fd = open_helper(sb_rt.ptyd_path, err, errlen);
        if (io->ptyd_fd < 0)
            return io->ptyd_fd;
    }
    if (io->devnull < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, io->sp) != 0 ||
        (passcred && setsockopt(io->sp[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) != 0) ||
        pipe2(io->errp, O_CLOEXEC | O_NONBLOCK) != 0)
        return sb_err(err, errlen, -errno, "cannot create sandbox channels: %s",
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
        return sb_err(err, errlen, -errno, "fork: %s", strerror(errno));
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
    sb_close_pair(io->sp);
    sb_close_pair(io->errp);
    return pid;
}

/* ---- the runc runtime ------------------------------------------------- */

/* Sets overlay option key to dir[/sub], opened as O_PATH and named
 * "/proc/self/fd/N": the mount's options (shown in /proc/self/mountinfo
 * inside) then hold no host paths.  The fd joins fds. */
static int set_fd_option(int fsfd, const char *key, const char *dir, const char *sub, int *fds,
                         size_t *nfds)
{
    char path[PATH_MAX];
    char name[64];
    int fd;

    snprintf(path, sizeof(path), "%s%s%s", dir, sub != NULL ? "/" : "", sub != NULL ? sub : "");
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
        sb_close_fd(*userns);
        *userns = sb_oci_userns_map(owner, range);
        if (*userns < 0)
            return *userns;
        *userns_owner = owner;
    }
    fd = sb_oci_idmapped(path, *userns);
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
    sb_close_fd(userns);
    if (rc == 0)
        rc = set_fd_option(fsfd, "lowerdir+", dir, SB_DIR_BASE, fds, nfds);
    snprintf(name, sizeof(name), "/proc/self/fd/%d", imgfd);
    if (rc == 0 && fsconfig(fsfd, FSCONFIG_SET_STRING, "lowerdir+", name, 0) != 0)
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

    userns = sb_oci_userns(range);
    if (userns < 0) {
        rc = sb_err(err, errlen, userns,
                    "cannot create the devbox's user namespace: %s",
                    strerror(-userns));
        goto out;
    }
    imgfd = sb_oci_idmapped(spec->image, userns);
    if (imgfd < 0) {
        rc = sb_err(err, errlen, imgfd,
                    "cannot map the image %s to the devbox's ids: %s",
                    spec->image, strerror(-imgfd));
        goto out;
    }
    fsfd = fsopen("overlay", FSOPEN_CLOEXEC);
    if (fsfd < 0) {
        rc = sb_err(err, errlen, -errno, "overlayfs unavailable: %s",
                    strerror(errno));
        goto out;
    }
    rc = oci_fsconfig(fsfd, spec, range, imgfd, fds, &nfds);
    if (rc != 0) {
        sb_err(err, errlen, rc, "cannot mount the root overlay of %s: %s%s",
               spec->dir, strerror(-rc), fs_log(fsfd, why, sizeof(why)));
        goto out;
    }
    mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV);
    if (mfd < 0)
        rc = sb_err(err, errlen, -errno,
                    "cannot mount the root overlay of %s: %s", spec->dir,
                    strerror(errno));
out:
    while (nfds > 0)
        close(fds[--nfds]);
    sb_close_fd(fsfd);
    sb_close_fd(imgfd);
    sb_close_fd(userns);
    return rc != 0 ? rc : mfd;
}

struct oci_launch {
    char **argv;
    int mntfd;
    struct sb_oci_mounts mounts;
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
    hi[2] = fcntl(l->io.ptyd_fd >= 0 ? l->io.ptyd_fd : l->io.devnull, F_DUPFD, 10);
    hi[3] = fcntl(l->io.errp[1], F_DUPFD, 10);
    for (i = 0; i < 4; i++) {
        if (hi[i] < 0)
            child_fail(l->io.errp[1], "dup");
    }
    if (dup2(l->io.devnull, 0) < 0 || dup2(l->io.devnull, 1) < 0 || dup2(hi[3], 2) < 0 ||
        dup2(hi[0], AGENT_MASTER_FD) < 0 || dup2(hi[1], SB_OCI_AGENT_FD) < 0 ||
        dup2(hi[2], SB_OCI_PTYD_FD) < 0)
        child_fail(l->io.errp[1], "dup2");
    close_range(SB_OCI_PTYD_FD + 1, ~0U, 0);
    child_default_signals();
    execve(l->argv[0], l->argv, envp);
    child_fail(2, "exec runc");
}

/* Fallbacks when a controller is missing, set on the agent once it runs
 * (every command inherits them): per-process address space and a process
 * count per host uid (each devbox has its own ids).  Not in the bundle's
 * rlimits: runc's own init (Go) would run under RLIMIT_AS too, and cannot
 * load the seccomp filter in 256 MiB. */
static int set_fallback_rlimits(struct sandbox *sb, const struct sb_limits *lim, char *err,
                                size_t errlen)
{
    struct rlimit rl;

    if (!sb_rt.have_ctl[SB_CG_MEMORY] && lim->memory_bytes > 0) {
        rl.rlim_cur = rl.rlim_max = lim->memory_bytes;
        if (prlimit(sb->init_pid, RLIMIT_AS, &rl, NULL) != 0)
            return sb_err(err, errlen, -errno, "cannot limit the devbox's memory: %s",
                          strerror(errno));
    }
    if (!sb_rt.have_ctl[SB_CG_PIDS]) {
        rl.rlim_cur = rl.rlim_max = (lim->pids_max ? lim->pids_max : SB_DEFAULT_PIDS) + 8;
        if (prlimit(sb->init_pid, RLIMIT_NPROC, &rl, NULL) != 0)
            return sb_err(err, errlen, -errno, "cannot limit the devbox's processes: %s",
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
        rc = sb_err(err, errlen, -EPROTO, "the devbox agent's pid is unknown");
    if (rc == 0) {
        sb->init_pid = pid;
        sb->init_pidfd = pidfd_open(pid, 0);
        if (sb->init_pidfd < 0)
            rc = sb_err(err, errlen, -errno, "the devbox agent exited during start");
    }
    return rc;
}

static int oci_argv(const struct sb_spec *spec, struct argvec *av, bool ptyd)
{
    av_add(av, sb_rt.runc_path);
    av_add(av, "--root");
    av_add(av, sb_rt.runc_root);
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
    char path[PATH_MAX];
    char *text = NULL;
    int dirfd = -1;
    int rc;

    memset(&c, 0, sizeof(c));
    c.id = spec->id;
    c.cgroup_name = sb_rt.cgroup_name;
    c.range = sb->range;
    c.uid = spec->user_name != NULL ? spec->user_uid : SB_INSIDE_UID;
    c.user = spec->user_name != NULL ? spec->user_name : "user";
    if (c.uid == 0)
        snprintf(home, sizeof(home), "/root");
    else
        snprintf(home, sizeof(home), "/home/%s", c.user);
    c.home = home;
    c.env = spec->env;
    c.with_ptyd = sb_rt.ptyd_path != NULL;
    c.meminfo = sb->meminfo_fd >= 0;
    if (io->pin_cpus) {
        sb_cpu_list(&io->cpus, cpus, sizeof(cpus));
        c.cpus = cpus;
    }
    text = sb_oci_config(&c);
    dirfd = open(spec->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    rc = text == NULL ? -ENOMEM
         : dirfd < 0  ? -errno
                      : sb_write_file(dirfd, "config.json", text, 0600);
    if (rc != 0)
        sb_err(err, errlen, rc, "cannot write the devbox's OCI bundle: %s",
               strerror(-rc));
    snprintf(path, sizeof(path), "%s/%s", sb_rt.runc_root, spec->id);
    if (rc == 0)
        sb_remove_tree(path);
    sb_close_fd(dirfd);
    free(text);
    return rc;
}

static int launch_oci(struct sandbox *sb, const struct sb_spec *spec, char *err,
                      size_t errlen)
{
    struct argvec av = {0};
    struct oci_launch l;
    int rc;
    pid_t pid;

    memset(&l, 0, sizeof(l));
    l.mounts.stage = l.mounts.dev = l.mounts.shm = l.mounts.run =
        l.mounts.state = -1;
    rc = open_launch_io(&l.io, true, err, errlen);
    l.io.pin_cpus = sb_cpu_pick(spec->id, spec->limits.cpu_millis, &l.io.cpus);
    if (rc == 0) {
        rc = sb_oci_mounts(&l.mounts, sb->range, sb->uid - sb->range,
                           spec->limits.memory_bytes > 0, &sb->meminfo_fd);
        if (rc != 0)
            sb_err(err, errlen, rc, "cannot make the devbox's tmpfs mounts: %s",
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
        rc = sb_err(err, errlen, -ENOMEM, "out of memory");
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
    rc = finish_start(sb, spec, rc, 2000, err, errlen);
out:
    close_launch_io(&l.io);
    sb_oci_mounts_close(&l.mounts);
    av_free(&av);
    return rc;
}

bool sandbox_valid_user(const char *name, uint32_t uid, char *err,
                        size_t errlen)
{
    if (!sb_valid_user_name(name))
        sb_err(err, errlen, -EINVAL,
               "user name \"%.40s\" must be 1-32 of [a-z0-9_-], starting "
               "with a letter or '_'",
               name != NULL ? name : "");
    else if (uid > 60000)
        sb_err(err, errlen, -EINVAL, "uid %u is out of range; use 0-60000",
               (unsigned)uid);
    else if ((uid == 0) != (strcmp(name, "root") == 0))
        sb_err(err, errlen, -EINVAL,
               "uid 0 is the user \"root\" and \"root\" is uid 0");
    else if (strcmp(name, "user") == 0 && uid != SB_INSIDE_UID)
        sb_err(err, errlen, -EINVAL, "\"user\" is uid %d", SB_INSIDE_UID);
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

/* The runc devbox's ids, layout and root overlay (sandbox_start). */
static int prepare_oci(struct sandbox *sb, const struct sb_spec *spec, char *err, size_t errlen)
{
    uint32_t inside = spec->user_name != NULL ? spec->user_uid : SB_INSIDE_UID;
    int rc;

    rc = sb_range_claim(spec->dir, spec->id, &sb->range, err, errlen);
    if (rc != 0)
        return rc;
    sb->uid = sb->range + inside;
    rc = sb_prepare_dir_oci(spec->dir, spec->id, sb->range, spec->image, spec->user_name, inside,
                            err, errlen);
    if (rc != 0)
        return rc;
    sb->rootfd = mount_overlay_oci(spec, sb->range, err, errlen);
    return sb->rootfd < 0 ? sb->rootfd : 0;
}

int sandbox_start(const struct sb_spec *spec, struct sandbox **out, char *err, size_t errlen)
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
        return sb_err(err, errlen, -ENOMEM, "out of memory");
    /* The disk first: everything below goes onto it. */
    rc = sandbox_disk_attach(spec->dir, spec->limits.disk_bytes, err, errlen);
    if (rc != 0)
        goto fail;
    rc = prepare_oci(sb, spec, err, errlen);
    if (rc != 0)
        goto fail;
    rc = sb_cg_create(&sb->cg, spec->id, &spec->limits, err, errlen);
    if (rc != 0)
        goto fail;
    sb->oom_base = sb_cg_oom_kills(&sb->cg);
    rc = launch_oci(sb, spec, err, errlen);
    if (rc != 0)
        goto fail;
    close(sb->errpipe_r);
    sb->errpipe_r = -1;
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
    sb_close_fd(sb->out_tree);
    sb->out_tree = -1;
    sb_close_fd(sb->meminfo_fd);
    sb->meminfo_fd = -1;
    pthread_mutex_unlock(&sb->lock);
    /* Kill pid 1 inside first (the kernel then kills the whole pid
     * namespace) and let runc reap it and exit: killing runc first would
     * orphan the agent to the host's init. */
    if (init_pidfd >= 0)
        pidfd_send_signal(init_pidfd, SIGKILL, NULL, 0);
    sb_close_fd(master);
    /* A frozen task acts on SIGKILL only once thawed: a devbox left frozen
     * (a snapshot whose thaw failed) must not make the reap below wait. */
    sb_cg_freeze(&cg, false, 1000);
    reap_child(sb->launcher_pid, sb->launcher_pidfd, 5000);
    sb->launcher_pid = 0;
    sb_cg_kill_all(&cg, 5000); /* anything that slipped out of the pid namespace */
    if (sb->slirp_exit_w >= 0) {
        close(sb->slirp_exit_w); /* slirp4netns exits on EOF */
        sb->slirp_exit_w = -1;
    }
    reap_child(sb->slirp_pid, sb->slirp_pidfd, 2000);
    sb->slirp_pid = 0;
    sb_cg_remove(&cg);
    sb_close_fd(rootfd); /* last reference to the overlay mount */
    sb_close_fd(init_pidfd);
    sb_close_fd(sb->launcher_pidfd);
    sb_close_fd(sb->slirp_pidfd);
    sb->launcher_pidfd = sb->slirp_pidfd = -1;
    return 0;
}

/* A private duplicate of one of the sandbox's fds (-ESRCH once stopped). */
int sb_dup_fd(struct sandbox *sb, const int *field)
{
    int fd;

    pthread_mutex_lock(&sb->lock);
    fd = (sb->stopped || *field < 0) ? -ESRCH : fcntl(*field, F_DUPFD_CLOEXEC, 0);
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
    sb_close_fd(sb->errpipe_r);
    pthread_mutex_destroy(&sb->lock);
    free(sb->dir);
    free(sb);
}

int sandbox_destroy_dir(const char *dir, char *err, size_t errlen)
{
    int rc;

    if (dir == NULL || dir[0] != '/' || strcmp(dir, "/") == 0)
        return sb_err(err, errlen, -EINVAL, "devbox dir must be an absolute path");
    rc = sb_disk_destroy(dir, err, errlen);
    if (rc != 0)
        return rc;
    rc = sb_uid_release(dir);
    if (rc != 0)
        return sb_err(err, errlen, rc, "cannot release the uid of %s: %s", dir, strerror(-rc));
    rc = sb_remove_tree(dir);
    if (rc != 0)
        return sb_err(err, errlen, rc, "cannot remove %s: %s", dir, strerror(-rc));
    return 0;
}

int sandbox_purge(const char *id)
{
    char path[PATH_MAX];
    int rc;

    if (id == NULL || id[0] == '\0' || strchr(id, '/') != NULL || id[0] == '.')
        return -EINVAL;
    rc = sb_cg_purge(id);
    /* runc's state of a container whose runc was killed with devboxd. */
    if (sb_rt.runc_root != NULL) {
        snprintf(path, sizeof(path), "%s/%s", sb_rt.runc_root, id);
        sb_remove_tree(path);
    }
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
    int64_t now = sb_now_ms();
    size_t n;

    pthread_mutex_lock(&sb->lock);
    if (sb->meminfo_fd < 0 || now - sb->meminfo_ms < 1000 ||
        sb->cg.path[SB_CG_MEMORY] == NULL)
        goto out;
    sb->meminfo_ms = now;
    usage = sb_cg_read_u64(&sb->cg, SB_CG_MEMORY, "memory.usage_in_bytes");
    snprintf(path, sizeof(path), "%s/memory.stat", sb->cg.path[SB_CG_MEMORY]);
    if (sb_read_small(path, stat, sizeof(stat)) <= 0)
        stat[0] = '\0';
    n = sb_oci_meminfo_text(text, sizeof(text), sb->meminfo_limit, usage, stat);
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
            sb->failure = sb_cg_oom_kills(&sb->cg) > sb->oom_base
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
    *kills = sb_cg_oom_kills(&sb->cg) - sb->oom_base;
    pthread_mutex_unlock(&sb->lock);
    return 0;
}

int sandbox_usage(struct sandbox *sb, struct sb_usage *u)
{
    memset(u, 0, sizeof(*u));
    if (lock_live(sb) != 0)
        return -ESRCH;
    u->memory_bytes = sb_cg_read_u64(&sb->cg, SB_CG_MEMORY, "memory.usage_in_bytes");
    u->memory_peak_bytes = sb_cg_read_u64(&sb->cg, SB_CG_MEMORY, "memory.max_usage_in_bytes");
    u->cpu_nanos = sb_cg_read_u64(&sb->cg, SB_CG_CPUACCT, "cpuacct.usage");
    u->pids = (uint32_t)sb_cg_pids_current(&sb->cg);
    u->oom_kills = sb_cg_oom_kills(&sb->cg) - sb->oom_base;
    u->pids_denied = sb_cg_pids_denied(&sb->cg);
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
    rc = sb_cg_freeze(&one, frozen, timeout_ms);
    if (rc == -ETIMEDOUT && frozen)
        sb_cg_freeze(&one, false, timeout_ms);
    free(one.path[SB_CG_FREEZER]);
    return rc;
}

uid_t sandbox_owner_uid(const struct sandbox *sb)
{
    return sb->range;
}

int sandbox_dir_owner(const char *dir, const char *id, uid_t *owner, char *err, size_t errlen)
{
    uint32_t range = 0;
    int rc;

    if (sb_rt.state_dir == NULL)
        return sb_err(err, errlen, -EINVAL, "sandbox_init was not called");
    if (!sb_valid_id(id) || dir == NULL || !sb_valid_layer_path(dir))
        return sb_err(err, errlen, -EINVAL, "invalid devbox id or dir");
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return sb_err(err, errlen, -errno, "cannot create devbox dir %s: %s", dir,
                      strerror(errno));
    rc = sb_range_claim(dir, id, &range, err, errlen);
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

