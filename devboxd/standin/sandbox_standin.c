/* Development stand-in for the sandbox runtime (devboxd/sandbox*.c), built
 * only with -DDEVBOXD_SANDBOX_STANDIN=ON or while the real runtime is absent.
 * NOT AN ISOLATION BOUNDARY: commands run as root under a bare bwrap with
 * <dir>/root as / and the host's /usr read-only, so paths stay inside the
 * devbox's directory. Named shells keep no state. Never ship it. */
#define _GNU_SOURCE
#include "../sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct sandbox {
    char root[4096];
    int root_fd;
    char **env;
};

struct sb_proc {
    pid_t pid;
    int stdin_fd;
    int pidfd;
    int done;
    int status;
};

int sandbox_init(const struct sb_runtime *rt, char *err, size_t errlen)
{
    (void)rt;
    (void)err;
    (void)errlen;
    fprintf(stderr, "devboxd: WARNING: built with the sandbox stand-in: no isolation\n");
    return 0;
}

void sandbox_shutdown_runtime(void) {}

static void mkdirs(const char *p)
{
    char buf[4096];
    size_t i;

    snprintf(buf, sizeof(buf), "%s", p);
    for (i = 1; buf[i]; i++) {
        if (buf[i] == '/') {
            buf[i] = 0;
            mkdir(buf, 0755);
            buf[i] = '/';
        }
    }
    mkdir(buf, 0755);
}

int sandbox_start(const struct sb_spec *spec, struct sandbox **out, char *err, size_t errlen)
{
    struct sandbox *sb = calloc(1, sizeof(*sb));
    char home[4200];
    size_t n = 0;

    snprintf(sb->root, sizeof(sb->root), "%s/root", spec->dir);
    snprintf(home, sizeof(home), "%s/home/user", sb->root);
    mkdirs(home);
    {
        static const char *const dirs[] = {"usr", "etc", "proc", "dev", "tmp"};
        static const char *const links[][2] = {
            {"usr/bin", "bin"}, {"usr/lib", "lib"}, {"usr/lib64", "lib64"}};
        char p[4200];

        for (size_t i = 0; i < 5; i++) {
            snprintf(p, sizeof(p), "%s/%s", sb->root, dirs[i]);
            mkdir(p, 0755);
        }
        snprintf(p, sizeof(p), "%s/tmp", sb->root);
        chmod(p, 01777);
        for (size_t i = 0; i < 3; i++) {
            snprintf(p, sizeof(p), "%s/%s", sb->root, links[i][1]);
            if (symlink(links[i][0], p) != 0 && errno != EEXIST)
                return -errno;
        }
    }
    sb->root_fd = open(sb->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sb->root_fd < 0) {
        snprintf(err, errlen, "open root: %s", strerror(errno));
        free(sb);
        return -errno;
    }
    while (spec->env && spec->env[n])
        n++;
    sb->env = calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        sb->env[i] = strdup(spec->env[i]);
    *out = sb;
    return 0;
}

int sandbox_stop(struct sandbox *sb) { (void)sb; return 0; }

void sandbox_release(struct sandbox *sb)
{
    if (sb == NULL)
        return;
    close(sb->root_fd);
    for (size_t i = 0; sb->env[i]; i++)
        free(sb->env[i]);
    free(sb->env);
    free(sb);
}

int sandbox_destroy_dir(const char *dir, char *err, size_t errlen)
{
    (void)dir; (void)err; (void)errlen;
    return 0;
}

int sandbox_check(struct sandbox *sb) { (void)sb; return 0; }
const char *sandbox_failure_reason(struct sandbox *sb) { (void)sb; return NULL; }
uid_t sandbox_host_uid(const struct sandbox *sb) { (void)sb; return 0; }

int sandbox_exec(struct sandbox *sb, const struct sb_exec *req, struct sb_proc **out,
                 char *err, size_t errlen)
{
    struct sb_proc *p = calloc(1, sizeof(*p));
    int in[2] = {-1, -1};
    char home[4200];

    snprintf(home, sizeof(home), "%s/home/user", sb->root);
    if (req->want_stdin && pipe2(in, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe");
        free(p);
        return -EIO;
    }
    p->pid = fork();
    if (p->pid == 0) {
        int devnull = open("/dev/null", O_RDWR);

        setsid();
        dup2(req->want_stdin ? in[0] : devnull, 0);
        dup2(req->stdout_fd >= 0 ? req->stdout_fd : devnull, 1);
        dup2(req->stderr_fd >= 0 ? req->stderr_fd : devnull, 2);
        if (chdir(home) != 0)
            _exit(127);
        for (size_t i = 0; sb->env[i]; i++)
            putenv(sb->env[i]);
        setenv("HOME", "/home/user", 1);
        execl("/usr/bin/bwrap", "bwrap", "--unshare-pid", "--unshare-user",
              "--uid", "1000", "--gid", "1000",
              "--bind", sb->root, "/", "--ro-bind", "/usr", "/usr",
              "--ro-bind", "/etc", "/etc",
              "--proc", "/proc", "--dev", "/dev", "--chdir", "/home/user",
              "bash", "-c", req->command, (char *)NULL);
        _exit(127);
    }
    if (in[0] >= 0)
        close(in[0]);
    p->stdin_fd = in[1];
    p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
    *out = p;
    return 0;
}

int sb_proc_wait(struct sb_proc *p, int timeout_ms, int *exit_status)
{
    int st;
    pid_t r;

    if (p->done) {
        *exit_status = p->status;
        return 0;
    }
    if (timeout_ms != 0)
        return -EINVAL;
    r = waitpid(p->pid, &st, WNOHANG);
    if (r == 0)
        return -ETIMEDOUT;
    p->done = 1;
    p->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    *exit_status = p->status;
    return 0;
}

int sb_proc_fd(const struct sb_proc *p) { return p->pidfd; }

int sb_proc_kill(struct sb_proc *p, int sig)
{
    if (p->done)
        return -ESRCH;
    return kill(-p->pid, sig) == 0 ? 0 : -errno;
}

int sb_proc_write_stdin(struct sb_proc *p, const void *buf, size_t len)
{
    if (p->stdin_fd < 0)
        return -EPIPE;
    return write(p->stdin_fd, buf, len) == (ssize_t)len ? 0 : -EPIPE;
}

int sb_proc_close_stdin(struct sb_proc *p)
{
    if (p->stdin_fd >= 0)
        close(p->stdin_fd);
    p->stdin_fd = -1;
    return 0;
}

void sb_proc_free(struct sb_proc *p)
{
    if (p->stdin_fd >= 0)
        close(p->stdin_fd);
    if (p->pidfd >= 0)
        close(p->pidfd);
    free(p);
}

int sandbox_open(struct sandbox *sb, const char *path, int flags, mode_t mode)
{
    struct open_how how;
    char rel[4200];
    int fd;

    memset(&how, 0, sizeof(how));
    how.flags = (uint64_t)(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    if (path[0] == '/')
        snprintf(rel, sizeof(rel), "%s", path);
    else
        snprintf(rel, sizeof(rel), "/home/user/%s", path);
    fd = (int)syscall(SYS_openat2, sb->root_fd, rel, &how, sizeof(how));
    return fd < 0 ? -errno : fd;
}

int sandbox_usage(struct sandbox *sb, struct sb_usage *u)
{
    (void)sb;
    memset(u, 0, sizeof(*u));
    return 0;
}
