/* The network of one blueprint build (see build_net.h). */
#define _GNU_SOURCE
#include "build_net.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define HOLDER_TIMEOUT_MS 10000

/* Child side: joins the build's cgroups, makes the namespaces, waits for
 * its id maps, becomes the namespace's root (host id range, not the host's
 * root) and pauses until killed.  fds {go read end, ready write end}
 * become 3 and 4; async-signal-safe calls only. */
static void holder_child(int go, int ready, const int *cg_fds, pid_t parent)
{
    sigset_t none;
    int devnull;
    int hi[2];
    char c = 'x';
    int i;

    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Gone with devboxd (build_net_stop ends it otherwise). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(1);
    for (i = 0; cg_fds != NULL && i < SB_CG_N; i++) {
        if (cg_fds[i] >= 0 && write(cg_fds[i], "0", 1) != 1)
            _exit(1);
    }
    hi[0] = fcntl(go, F_DUPFD, 10);
    hi[1] = fcntl(ready, F_DUPFD, 10);
    devnull = open("/dev/null", O_RDWR);
    /* Nothing of devboxd's, its stdio included, stays open in it. */
    if (hi[0] < 0 || hi[1] < 0 || devnull < 0 || dup2(devnull, 0) != 0 ||
        dup2(devnull, 1) != 1 || dup2(devnull, 2) != 2 || dup2(hi[0], 3) != 3 ||
        dup2(hi[1], 4) != 4)
        _exit(1);
    close_range(5, ~0U, 0);
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0)
        c = 'u';
    if (write(4, &c, 1) != 1 || c != 'u')
        _exit(1);
    if (read(3, &c, 1) != 1 || c != 'g')
        _exit(1);
    if (syscall(SYS_setgroups, 0, NULL) != 0 ||
        syscall(SYS_setresgid, 0, 0, 0) != 0 ||
        syscall(SYS_setresuid, 0, 0, 0) != 0)
        _exit(1);
    c = 'r';
    if (write(4, &c, 1) != 1)
        _exit(1);
    close(3);
    close(4);
    for (;;)
        pause();
}

static int write_map(pid_t pid, const char *file, uid_t range)
{
    char path[64];
    char line[64];
    int fd;
    int rc;

    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    snprintf(line, sizeof(line), "0 %u %u\n", (unsigned)range, SB_RANGE_SIZE);
    fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    rc = util_write_all(fd, line, strlen(line));
    close(fd);
    return rc;
}

/* One byte from fd within HOLDER_TIMEOUT_MS; 0 or -1. */
static int read_byte(int fd, char *c)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r;

    do
        r = poll(&p, 1, HOLDER_TIMEOUT_MS);
    while (r < 0 && errno == EINTR);
    if (r != 1 || read(fd, c, 1) != 1)
        return -1;
    return 0;
}

int build_net_start(struct build_net *n, uid_t range, const int *cg_fds,
                    char *err, size_t errlen)
{
    int go[2] = {-1, -1};
    int ready[2] = {-1, -1};
    pid_t self = getpid();
    char slirp_err[512] = "";
    char c = 0;
    pid_t pid;
    int rc = -1;

    memset(n, 0, sizeof(*n));
    n->slirp.pidfd = -1;
    n->slirp.exit_w = -1;
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(ready, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "the build's network: %s", strerror(errno));
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "the build's network: fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0)
        holder_child(go[0], ready[1], cg_fds, self);
    n->holder = pid;
    close(ready[1]);
    ready[1] = -1;
    /* A byte each way, not EOF: another thread's child may hold copies of
     * these pipes until it execs. */
    if (read_byte(ready[0], &c) != 0 || c != 'u' ||
        write_map(pid, "uid_map", range) != 0 ||
        write_map(pid, "gid_map", range) != 0 || write(go[1], "g", 1) != 1 ||
        read_byte(ready[0], &c) != 0 || c != 'r') {
        snprintf(err, errlen,
                 "the build's network: cannot make its user and network "
                 "namespaces (%s)",
                 strerror(errno));
        goto out;
    }
    snprintf(n->userns, sizeof(n->userns), "/proc/%d/ns/user", (int)pid);
    snprintf(n->netns, sizeof(n->netns), "/proc/%d/ns/net", (int)pid);
    if (sandbox_slirp_start(pid, range, &n->slirp, slirp_err,
                            sizeof(slirp_err)) != 0) {
        snprintf(err, errlen, "the build's network: %s", slirp_err);
        goto out;
    }
    rc = 0;
out:
    if (go[0] >= 0)
        close(go[0]);
    if (go[1] >= 0)
        close(go[1]);
    if (ready[0] >= 0)
        close(ready[0]);
    if (ready[1] >= 0)
        close(ready[1]);
    if (rc != 0)
        build_net_stop(n);
    return rc;
}

void build_net_stop(struct build_net *n)
{
    int status;

    sandbox_slirp_stop(&n->slirp);
    if (n->holder > 0) {
        kill(n->holder, SIGKILL);
        while (waitpid(n->holder, &status, 0) < 0 && errno == EINTR)
            ;
    }
    n->holder = 0;
    n->userns[0] = '\0';
    n->netns[0] = '\0';
}
