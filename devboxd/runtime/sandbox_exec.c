/* Commands (via the agent) and confined file opens.  Everything the agent
 * sends back is untrusted: bounded, parsed with cJSON, type-checked; fds it
 * tries to pass are closed. */
#define _GNU_SOURCE
#include "sandbox_priv.h"
#include "agent/agent_proto.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <arpa/inet.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

struct sb_proc {
    int chan;     /* SEQPACKET to the agent for this command */
    int stdin_fd; /* our end of the stdin stream socket, -1 if none */
    int pid;      /* inside the sandbox, 0 until started */
    int pty_fd;   /* pty master (want_pty), -1 otherwise */
    bool done;
    int status;
    char *error;
};

static void close_passed_fds(struct msghdr *mh)
{
    struct cmsghdr *c;
    size_t i;
    size_t n;
    int fd;

    for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (i = 0; i < n; i++) {
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            close(fd);
        }
    }
}

static int send_with_fds(int sock, const char *text, const int *fds,
                         size_t nfds)
{
    char cbuf[CMSG_SPACE(sizeof(int) * AGENT_EXEC_FDS)];
    struct iovec iov = {.iov_base = (void *)text, .iov_len = strlen(text)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    struct cmsghdr *c;
    int64_t deadline = -1;
    ssize_t n = -1;

    if (nfds > 0) {
        memset(cbuf, 0, sizeof(cbuf));
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    /* Bounded: an agent that stops reading must not hang devboxd (the
     * caller may hold the sandbox lock). */
    for (;;) {
        n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0 || errno == EINTR)
            break;
        if (errno != EAGAIN)
            return -errno;
        if (deadline < 0)
            deadline = sandbox_now_ms() + SB_SEND_TIMEOUT_MS;
        if (sandbox_poll_until(sock, POLLOUT, deadline) != 0)
            return -ETIMEDOUT;
    }
    if (n < 0)
        return -EINTR;
    return n == (ssize_t)iov.iov_len ? 0 : -EIO;
}

_Static_assert(SANDBOX_COMMAND_MAX == AGENT_MSG_MAX / 2,
               "a command takes half an agent message");

static int check_exec(const struct sb_exec *req, char *err, size_t errlen)
{
    size_t i;

    if (req == NULL || req->command == NULL)
        return sandbox_fs_err(err, errlen, -EINVAL, "command is required");
    if (strlen(req->command) > SANDBOX_COMMAND_MAX)
        return sandbox_fs_err(err, errlen, -E2BIG,
                              "command is longer than %d bytes",
                              SANDBOX_COMMAND_MAX);
    if (req->shell_name != NULL &&
        !sandbox_fs_valid_shell_name(req->shell_name))
        return sandbox_fs_err(
            err, errlen, -EINVAL,
            "shell_name must be 1-64 of [A-Za-z0-9_.-], not starting with '.'");
    if (req->cwd != NULL && (req->cwd[0] == '\0' || strlen(req->cwd) > 4096))
        return sandbox_fs_err(err, errlen, -EINVAL,
                              "cwd must be a non-empty path");
    if (req->want_pty &&
        (req->shell_name != NULL || req->pty_cols < 1 || req->pty_cols > 1000 ||
         req->pty_rows < 1 || req->pty_rows > 1000))
        return sandbox_fs_err(
            err, errlen, -EINVAL,
            "a pty command needs cols and rows of 1-1000 and no shell_name");
    for (i = 0; req->env != NULL && req->env[i] != NULL; i++) {
        if (i >= 256 || !sandbox_fs_valid_env(req->env[i]))
            return sandbox_fs_err(
                err, errlen, -EINVAL,
                "environment entry %zu must be KEY=VALUE with KEY of "
                "[A-Za-z0-9_]",
                i);
    }
    return 0;
}

static char *exec_json(const struct sb_exec *req)
{
    cJSON *msg = cJSON_CreateObject();
    cJSON *env = NULL;
    char *text = NULL;
    size_t i;

    if (msg == NULL)
        return NULL;
    cJSON_AddStringToObject(msg, "op", "exec");
    cJSON_AddStringToObject(msg, "cmd", req->command);
    if (req->shell_name != NULL)
        cJSON_AddStringToObject(msg, "shell", req->shell_name);
    else
        cJSON_AddNullToObject(msg, "shell");
    if (req->cwd != NULL)
        cJSON_AddStringToObject(msg, "cwd", req->cwd);
    else
        cJSON_AddNullToObject(msg, "cwd");
    if (req->want_pty) {
        cJSON *pty = cJSON_AddObjectToObject(msg, "pty");
        cJSON_AddNumberToObject(pty, "cols", req->pty_cols);
        cJSON_AddNumberToObject(pty, "rows", req->pty_rows);
    }
    env = cJSON_AddArrayToObject(msg, "env");
    for (i = 0; env != NULL && req->env != NULL && req->env[i] != NULL; i++)
        cJSON_AddItemToArray(env, cJSON_CreateString(req->env[i]));
    text = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    if (text != NULL && strlen(text) > AGENT_MSG_MAX) {
        free(text);
        text = NULL;
    }
    return text;
}

static int handle_event(struct sb_proc *p, const char *buf, size_t len);

/* Takes the one fd of a {"ev":"pty"} message if it is a pty master. */
static int take_pty_fd(struct sb_proc *p, struct msghdr *mh)
{
    struct cmsghdr *c = CMSG_FIRSTHDR(mh);
    unsigned int ptn;
    int fd;

    if (c == NULL || c->cmsg_level != SOL_SOCKET ||
        c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)) ||
        CMSG_NXTHDR(mh, c) != NULL)
        return -EPROTO;
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    /* Only a pty master answers TIOCGPTN: nothing else is accepted. */
    if (ioctl(fd, TIOCGPTN, &ptn) != 0)
        return -EPROTO;
    p->pty_fd = fd;
    return 0;
}

/* One message from the agent and the descriptors passed with it. */
struct agent_msg {
    char text[1024];
    char cbuf[CMSG_SPACE(sizeof(int) * 8)];
    struct iovec iov;
    struct msghdr mh;
};

/* Waits until deadline for the next message on chan.  Returns its length
 * (m->text NUL-terminated, passed fds left in m->mh for the caller), -ESRCH
 * when the agent is gone (anything passed is closed), or sandbox_poll_until's
 * error. */
static ssize_t recv_with_fds(int chan, int64_t deadline, struct agent_msg *m)
{
    ssize_t n;
    int rc;

    for (;;) {
        rc = sandbox_poll_until(chan, POLLIN, deadline);
        if (rc != 0)
            return rc;
        m->iov.iov_base = m->text;
        m->iov.iov_len = sizeof(m->text) - 1;
        memset(&m->mh, 0, sizeof(m->mh));
        m->mh.msg_iov = &m->iov;
        m->mh.msg_iovlen = 1;
        m->mh.msg_control = m->cbuf;
        m->mh.msg_controllen = sizeof(m->cbuf);
        n = recvmsg(chan, &m->mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n > 0) {
            m->text[n] = '\0';
            return n;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        close_passed_fds(&m->mh);
        return -ESRCH;
    }
}

/* Bounded wait for the agent's pty master (sent before "started"). */
static int wait_pty(struct sb_proc *p)
{
    struct agent_msg m;
    int64_t deadline = sandbox_now_ms() + SB_START_TIMEOUT_MS;
    ssize_t n;

    while (p->pty_fd < 0) {
        if (p->done)
            return -EIO;
        n = recv_with_fds(p->chan, deadline, &m);
        if (n < 0)
            return (int)n;
        if (strcmp(m.text, "{\"ev\":\"pty\"}") == 0 &&
            !(m.mh.msg_flags & MSG_CTRUNC) && take_pty_fd(p, &m.mh) == 0)
            continue;
        close_passed_fds(&m.mh);
        if (!(m.mh.msg_flags & MSG_TRUNC) &&
            handle_event(p, m.text, (size_t)n) == 1)
            p->done = true;
    }
    return 0;
}

/* A regular file devboxd hands a command as stdout/stderr (its output
 * files under devboxd's state dir), opened again through a detached clone
 * of its directory: inside, /proc/self/fd/1 then reads "/<name>", not the
 * host path.  The clone is kept per sandbox (one mount, not one per
 * command).  Sockets, pipes and /dev/null pass as they are.  Returns a
 * new fd, or -1 when fd is to be passed as it is. */
static int neutral_fd(struct sandbox *sb, int fd)
{
    char link[64];
    char path[PATH_MAX];
    struct stat st;
    struct stat dst;
    struct stat nst;
    char *slash = NULL;
    ssize_t n;
    int flags;
    int tree = -1;
    int nfd = -1;

    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    flags = fcntl(fd, F_GETFL);
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof(path) - 1);
    if (flags < 0 || n <= 0 || path[0] != '/')
        return -1;
    path[n] = '\0';
    slash = strrchr(path, '/');
    *slash = '\0';
    if (stat(path[0] != '\0' ? path : "/", &dst) != 0)
        return -1;
    pthread_mutex_lock(&sb->lock);
    if (sb->out_tree < 0 || sb->out_dev != dst.st_dev ||
        sb->out_ino != dst.st_ino) {
        tree =
            (int)syscall(SYS_open_tree, AT_FDCWD, path[0] != '\0' ? path : "/",
                         OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (tree >= 0) {
            sandbox_close_fd(sb->out_tree);
            sb->out_tree = tree;
            sb->out_dev = dst.st_dev;
            sb->out_ino = dst.st_ino;
        }
    }
    if (sb->out_tree >= 0)
        nfd = openat(sb->out_tree, slash + 1,
                     (flags & (O_ACCMODE | O_APPEND)) | O_NOFOLLOW | O_CLOEXEC);
    pthread_mutex_unlock(&sb->lock);
    /* Only the same file will do (renamed or replaced meanwhile: as is). */
    if (nfd >= 0 && (fstat(nfd, &nst) != 0 || nst.st_dev != st.st_dev ||
                     nst.st_ino != st.st_ino)) {
        close(nfd);
        nfd = -1;
    }
    if (nfd >= 0 && (flags & O_APPEND) == 0)
        lseek(nfd, lseek(fd, 0, SEEK_CUR), SEEK_SET);
    return nfd;
}

int sandbox_exec(struct sandbox *sb, const struct sb_exec *req,
                 struct sb_proc **out, char *err, size_t errlen)
{
    struct sb_proc *p = NULL;
    char *text = NULL;
    int chan[2] = {-1, -1};
    int in[2] = {-1, -1};
    int devnull = -1;
    int nout = -1;
    int nerr = -1;
    int fds[AGENT_EXEC_FDS];
    int rc;

    *out = NULL;
    rc = check_exec(req, err, errlen);
    if (rc != 0)
        return rc;
    if (sb == NULL)
        return sandbox_fs_err(err, errlen, -ESRCH, "the devbox is not running");
    text = exec_json(req);
    p = calloc(1, sizeof(*p));
    if (text == NULL || p == NULL) {
        rc = sandbox_fs_err(
            err, errlen, -E2BIG,
            "command and environment too large or out of memory");
        goto out;
    }
    p->chan = p->stdin_fd = p->pty_fd = -1;
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) != 0 ||
        (req->want_stdin &&
         socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0)) {
        rc = sandbox_fs_err(err, errlen, -errno,
                            "cannot create command channels: %s",
                            strerror(errno));
        goto out;
    }
    if (req->want_stdin)
        shutdown(in[1], SHUT_WR); /* the command only reads */
    fds[0] = chan[1];
    fds[1] = req->want_stdin ? in[1] : devnull;
    /* One open file for both when they share one (a shared offset). */
    nout = neutral_fd(sb, req->stdout_fd);
    nerr =
        req->stderr_fd == req->stdout_fd ? -1 : neutral_fd(sb, req->stderr_fd);
    fds[2] = nout >= 0 ? nout : req->stdout_fd >= 0 ? req->stdout_fd : devnull;
    fds[3] = req->stderr_fd == req->stdout_fd ? fds[2]
             : nerr >= 0                      ? nerr
             : req->stderr_fd >= 0            ? req->stderr_fd
                                              : devnull;
    pthread_mutex_lock(&sb->lock);
    rc = (!sb->stopped && sb->master >= 0)
             ? send_with_fds(sb->master, text, fds, AGENT_EXEC_FDS)
             : -ESRCH;
    pthread_mutex_unlock(&sb->lock);
    if (rc != 0) {
        rc = sandbox_fs_err(err, errlen, -ESRCH,
                            "the devbox is not running (agent gone: %s)",
                            strerror(-rc));
        goto out;
    }
    p->chan = chan[0];
    chan[0] = -1;
    p->stdin_fd = in[0];
    in[0] = -1;
    if (req->want_pty) {
        rc = wait_pty(p);
        if (rc != 0) {
            rc = sandbox_fs_err(err, errlen, rc,
                                "the devbox could not open a terminal%s%s",
                                p->error ? ": " : "", p->error ? p->error : "");
            goto out;
        }
    }
    *out = p;
    p = NULL;
out:
    sandbox_close_pair(chan);
    sandbox_close_pair(in);
    sandbox_close_fd(devnull);
    sandbox_close_fd(nout);
    sandbox_close_fd(nerr);
    free(text);
    sandbox_exec_free(p);
    return rc;
}

/* Handles one agent message; returns 1 when the command finished. */
static int handle_event(struct sb_proc *p, const char *buf, size_t len)
{
    cJSON *js = cJSON_ParseWithLength(buf, len);
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(js, "ev");
    const cJSON *num;
    const cJSON *msg;
    int done = 0;

    if (!cJSON_IsString(ev))
        goto out;
    if (strcmp(ev->valuestring, "started") == 0) {
        num = cJSON_GetObjectItemCaseSensitive(js, "pid");
        if (cJSON_IsNumber(num) && num->valuedouble >= 1 &&
            num->valuedouble <= 4194304)
            p->pid = (int)num->valuedouble;
    } else if (strcmp(ev->valuestring, "exit") == 0) {
        num = cJSON_GetObjectItemCaseSensitive(js, "status");
        if (cJSON_IsNumber(num) && num->valuedouble >= 0 &&
            num->valuedouble <= 255) {
            p->status = (int)num->valuedouble;
            done = 1;
        }
    } else if (strcmp(ev->valuestring, "error") == 0) {
        msg = cJSON_GetObjectItemCaseSensitive(js, "message");
        free(p->error);
        p->error = strndup(
            cJSON_IsString(msg) ? msg->valuestring : "agent error", 200);
        p->status = 127;
        done = 1;
    }
out:
    cJSON_Delete(js);
    return done;
}

int sandbox_exec_wait(struct sb_proc *p, int timeout_ms, int *exit_status)
{
    struct agent_msg m;
    int64_t deadline = timeout_ms < 0 ? -1 : sandbox_now_ms() + timeout_ms;
    ssize_t n;

    *exit_status = -1;
    while (!p->done) {
        if (p->chan < 0)
            return -ESRCH;
        n = recv_with_fds(p->chan, deadline, &m);
        if (n == -ESRCH) {
            /* Agent (or the whole sandbox) went away without an exit event. */
            close(p->chan);
            p->chan = -1;
            return -ESRCH;
        }
        if (n < 0)
            return (int)n;
        close_passed_fds(&m.mh);
        if (m.mh.msg_flags & MSG_TRUNC)
            continue; /* oversized: not a message we sent for */
        if (handle_event(p, m.text, (size_t)n) == 1)
            p->done = true;
    }
    *exit_status = p->status;
    return 0;
}

const char *sandbox_exec_error(const struct sb_proc *p)
{
    return p->error;
}

int sandbox_exec_pid(const struct sb_proc *p)
{
    return p->pid;
}

int sandbox_exec_pty_fd(const struct sb_proc *p)
{
    return p->pty_fd;
}

int sandbox_exec_fd(const struct sb_proc *p)
{
    return p->chan;
}

int sandbox_exec_kill(struct sb_proc *p, int sig)
{
    char msg[64];
    int rc;

    if (sig < 1 || sig > 64)
        return -EINVAL;
    if (p->done || p->chan < 0)
        return -ESRCH;
    snprintf(msg, sizeof(msg), "{\"op\":\"kill\",\"sig\":%d}", sig);
    rc = send_with_fds(p->chan, msg, NULL, 0);
    return rc == -EPIPE || rc == -ECONNRESET ? -ESRCH : rc;
}

/* How long a stdin write waits for the command to read before giving up. */
#define SB_STDIN_STALL_MS 10000

int sandbox_exec_write_stdin(struct sb_proc *p, const void *buf, size_t len)
{
    const char *c = buf;
    ssize_t n;
    int rc;

    if (p->stdin_fd < 0)
        return -EPIPE;
    while (len > 0) {
        n = send(p->stdin_fd, c, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* Bounded: a command that stops reading must not hold the
             * caller (and the locks it holds) forever. */
            rc = sandbox_poll_until(p->stdin_fd, POLLOUT,
                                    sandbox_now_ms() + SB_STDIN_STALL_MS);
            if (rc != 0)
                return rc;
            continue;
        }
        if (n < 0)
            return (errno == ECONNRESET || errno == EPIPE) ? -EPIPE : -errno;
        c += n;
        len -= (size_t)n;
    }
    return 0;
}

int sandbox_exec_close_stdin(struct sb_proc *p)
{
    if (p->stdin_fd >= 0) {
        close(p->stdin_fd);
        p->stdin_fd = -1;
    }
    return 0;
}

void sandbox_exec_free(struct sb_proc *p)
{
    if (p == NULL)
        return;
    sandbox_close_fd(p->chan);
    sandbox_close_fd(p->stdin_fd);
    sandbox_close_fd(p->pty_fd);
    free(p->error);
    free(p);
}

/* ---- files ------------------------------------------------------------- */

int sandbox_open(struct sandbox *sb, const char *path, int flags, mode_t mode)
{
    struct open_how how;
    char *rel = NULL;
    long fd;
    int saved;
    int tries = 0;
    int rootfd;
    uid_t old_uid;
    gid_t old_gid;

    if (sb == NULL)
        return -ESRCH;
    if (path == NULL || strnlen(path, 4097) > 4096)
        return -ENAMETOOLONG;
    rel = sandbox_fs_root_relative(path);
    if (rel == NULL)
        return -EINVAL;
    rootfd = sandbox_dup_fd(sb, &sb->rootfd);
    if (rootfd < 0) {
        free(rel);
        return rootfd;
    }
    memset(&how, 0, sizeof(how));
    how.flags = (uint64_t)(flags | O_CLOEXEC | O_NOCTTY) & ~(uint64_t)O_PATH;
    how.mode =
        (flags & (O_CREAT | O_TMPFILE)) ? (mode & 07777 & ~(mode_t)06000) : 0;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    /* Act as the devbox user for this thread only: permissions as inside,
     * new files owned by its host uid (fsuid/fsgid are per-thread). */
    old_gid = (gid_t)syscall(SYS_setfsgid, sb->uid);
    old_uid = (uid_t)syscall(SYS_setfsuid, sb->uid);
    do {
        fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
    } while (fd < 0 && (errno == EAGAIN || errno == EINTR) && ++tries < 32);
    saved = errno;
    syscall(SYS_setfsuid, old_uid);
    syscall(SYS_setfsgid, old_gid);
    close(rootfd);
    free(rel);
    return fd < 0 ? -saved : (int)fd;
}

int sandbox_open_kept(const char *dir, const char *path)
{
    struct open_how how;
    char upper[4200];
    char *rel = NULL;
    long fd;
    int saved;
    int rootfd;

    if (dir == NULL || path == NULL || strnlen(path, 4097) > 4096)
        return -ENAMETOOLONG;
    rel = sandbox_fs_root_relative(path);
    if (rel == NULL)
        return -EINVAL;
    snprintf(upper, sizeof(upper), "%s/%s", dir, SB_DIR_UPPER);
    rootfd = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rootfd < 0) {
        saved = errno;
        free(rel);
        return -saved;
    }
    memset(&how, 0, sizeof(how));
    how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
    saved = errno;
    close(rootfd);
    free(rel);
    return fd < 0 ? -saved : (int)fd;
}

/* ---- connections into the devbox's network namespace ----------------- */

struct connect_job {
    int pidfd;
    uint16_t port;
    int timeout_ms;
    int result; /* fd or -errno */
};

static int connect_bounded(int fd, const struct sockaddr_in *sin,
                           int timeout_ms)
{
    socklen_t len = sizeof(int);
    int soerr = 0;
    int rc;

    if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) == 0)
        return 0;
    if (errno != EINPROGRESS)
        return -errno;
    rc = sandbox_poll_until(fd, POLLOUT, sandbox_now_ms() + timeout_ms);
    if (rc != 0)
        return rc;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
        return -errno;
    return -soerr;
}

/* On the thread of job: enters the devbox's network namespace and makes a
 * TCP socket of type (SOCK_* flags added) there, with *sin set to
 * 127.0.0.1:job->port.  The fd, or -errno. */
static int netns_socket(const struct connect_job *job, int type,
                        struct sockaddr_in *sin)
{
    int fd;

    if (setns(job->pidfd, CLONE_NEWNET) != 0)
        return -errno;
    fd = socket(AF_INET, SOCK_STREAM | type, 0);
    if (fd < 0)
        return -errno;
    memset(sin, 0, sizeof(*sin));
    sin->sin_family = AF_INET;
    sin->sin_port = htons(job->port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return fd;
}

/* Runs on its own thread: setns(CLONE_NEWNET) changes only this thread's
 * namespace, and the socket keeps the namespace it was created in. */
static void *connect_thread(void *arg)
{
    struct connect_job *job = arg;
    struct sockaddr_in sin;
    int fd = -1;
    int rc;
    int flags;

    fd = netns_socket(job, SOCK_CLOEXEC | SOCK_NONBLOCK, &sin);
    if (fd < 0) {
        job->result = fd;
        return NULL;
    }
    rc = connect_bounded(fd, &sin, job->timeout_ms);
    flags = fcntl(fd, F_GETFL);
    if (rc == 0 && (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0))
        rc = -errno;
    if (rc != 0) {
        close(fd);
        job->result = rc;
        return NULL;
    }
    job->result = fd;
    return NULL;
}

/* Runs fn (connect_thread or listen_thread) on a thread of its own, which
 * enters the devbox's network namespace: the fd it made, or -errno. */
static int in_netns(struct sandbox *sb, uint16_t port, int timeout_ms,
                    void *(*fn)(void *))
{
    struct connect_job job;
    pthread_t th;
    int rc;

    if (sb == NULL)
        return -ESRCH;
    if (port == 0)
        return -EINVAL;
    job.pidfd = sandbox_dup_fd(sb, &sb->init_pidfd);
    if (job.pidfd < 0)
        return job.pidfd;
    job.port = port;
    job.timeout_ms = timeout_ms;
    job.result = -EIO;
    rc = pthread_create(&th, NULL, fn, &job);
    if (rc != 0) {
        close(job.pidfd);
        return -rc;
    }
    pthread_join(th, NULL);
    close(job.pidfd);
    return job.result;
}

int sandbox_connect_tcp(struct sandbox *sb, uint16_t port, int timeout_ms)
{
    return in_netns(sb, port, timeout_ms < 0 ? SB_START_TIMEOUT_MS : timeout_ms,
                    connect_thread);
}

/* Listening socket on 127.0.0.1:port inside the devbox's network namespace,
 * created by devboxd (root) so a privileged port works (the PTY server's
 * port 13); handed to a process inside. Runs on its own thread like
 * connect_thread. */
static void *listen_thread(void *arg)
{
    struct connect_job *job = arg;
    struct sockaddr_in sin;
    int one = 1;
    int fd = -1;

    fd = netns_socket(job, SOCK_CLOEXEC, &sin);
    if (fd < 0) {
        job->result = fd;
        return NULL;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        listen(fd, 64) != 0) {
        job->result = -errno;
        close(fd);
        return NULL;
    }
    job->result = fd;
    return NULL;
}

int sandbox_listen_tcp(struct sandbox *sb, uint16_t port)
{
    return in_netns(sb, port, 0, listen_thread);
}
