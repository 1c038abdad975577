/* devboxd-agent: pid 1 of a devbox sandbox.  Runs commands devboxd sends
 * over the inherited master socket, keeps named shells' cwd and exported
 * environment, queues commands per named shell, reaps every zombie.
 * Protocol: agent_proto.h.  Everything it receives is validated; it runs
 * with the sandbox user's (lack of) privileges. */
#define _GNU_SOURCE
#include "agent_proto.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_JOBS 1024
#define MAX_ENV 256

struct job {
    int chan;   /* -1 once devboxd hung up */
    int fds[3]; /* stdin, stdout, stderr; -1 once handed to the child */
    char *cmd;
    char *shell; /* NULL = fresh shell */
    char *cwd;
    char **env;     /* NULL-terminated */
    pid_t pid;      /* 0 while queued */
    int cols, rows; /* > 0: run on a new pseudo-terminal of this size */
    unsigned long seq;
    struct job *next;
};

static struct job *jobs;
static size_t njobs;
static unsigned long next_seq;
static sigset_t child_mask;
static const char *state_dir =
    AGENT_STATE_DIR; /* --state-dir (tests run outside a sandbox) */
/* What commands write to /proc/self/oom_score_adj (cmd_oom_adj_init). */
static char cmd_oom_adj[8] = "0";

/* Named shells: source the saved state, apply the request, run the command
 * with eval, save cwd + exports on every exit path (EXIT trap).
 * $1 = command, $2 = cwd or "", $3 = state file, $4.. = KEY=VAL. */
static const char named_wrapper[] =
    "__rlmcp_st=$3\n"
    "__rlmcp_save() { { printf 'cd -- %q 2>/dev/null\\n' \"$PWD\"; export -p; "
    "} "
    "> \"$__rlmcp_st.new\" 2>/dev/null && mv -f -- \"$__rlmcp_st.new\" "
    "\"$__rlmcp_st\"; }\n"
    "trap __rlmcp_save EXIT\n"
    "if [ -r \"$__rlmcp_st\" ]; then . \"$__rlmcp_st\"; fi\n"
    "if [ -n \"$2\" ]; then cd -- \"$2\" || exit 1; fi\n"
    "for __rlmcp_kv in \"${@:4}\"; do export \"$__rlmcp_kv\"; done\n"
    "unset __rlmcp_kv\n"
    "__rlmcp_cmd=$1\n"
    "set --\n"
    "eval \"$__rlmcp_cmd\"\n";

static void send_json(int fd, cJSON *msg)
{
    char *text = NULL;

    if (fd < 0)
        goto out;
    text = cJSON_PrintUnformatted(msg);
    if (text != NULL)
        send(fd, text, strlen(text), MSG_NOSIGNAL | MSG_DONTWAIT);
out:
    free(text);
    cJSON_Delete(msg);
}

static void send_event(int fd, const char *ev, const char *key, double num,
                       const char *str)
{
    cJSON *msg = cJSON_CreateObject();

    if (msg == NULL)
        return;
    cJSON_AddStringToObject(msg, "ev", ev);
    if (key != NULL && str != NULL)
        cJSON_AddStringToObject(msg, key, str);
    else if (key != NULL)
        cJSON_AddNumberToObject(msg, key, num);
    send_json(fd, msg);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void job_free(struct job *j)
{
    size_t i;

    close_fd(&j->chan);
    for (i = 0; i < 3; i++)
        close_fd(&j->fds[i]);
    free(j->cmd);
    free(j->shell);
    free(j->cwd);
    for (i = 0; j->env != NULL && j->env[i] != NULL; i++)
        free(j->env[i]);
    free(j->env);
    free(j);
}

static void job_unlink(struct job *j)
{
    struct job **pp;

    for (pp = &jobs; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == j) {
            *pp = j->next;
            njobs--;
            return;
        }
    }
}

static bool shell_busy(const char *shell)
{
    struct job *j;

    for (j = jobs; j != NULL; j = j->next) {
        if (j->pid > 0 && j->shell != NULL && strcmp(j->shell, shell) == 0)
            return true;
    }
    return false;
}

static bool valid_shell(const char *s)
{
    size_t i;

    if (s[0] == '\0' || s[0] == '.' || strlen(s) > 64)
        return false;
    for (i = 0; s[i] != '\0'; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

static bool valid_env(const char *kv)
{
    const char *eq = strchr(kv, '=');
    const char *p;

    if (eq == NULL || eq == kv || (kv[0] >= '0' && kv[0] <= '9'))
        return false;
    for (p = kv; p < eq; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

/* In the child: a new session whose controlling terminal is the pty slave. */
static void child_pty(const char *slave)
{
    int fd;

    setsid();
    fd = open(slave, O_RDWR);
    if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) != 0)
        _exit(127);
    if (dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
        _exit(127);
    if (fd > 2)
        close(fd);
    if (getenv("TERM") == NULL)
        setenv("TERM", "xterm-256color", 1);
}

static void child_exec(struct job *j, const char *slave)
{
    char state[PATH_MAX];
    const char *argv[8 + MAX_ENV];
    size_t n = 0;
    size_t i;
    int fd;
    sigset_t none;

    /* Commands start with no signal blocked or ignored, whatever the
     * agent inherited (timeout, kill and interrupts must work). */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    if (slave != NULL) {
        child_pty(slave);
    } else {
        setsid();
        for (i = 0; i < 3; i++) {
            if (dup2(j->fds[i], (int)i) < 0)
                _exit(127);
        }
    }
    close_range(3, ~0U, 0);
    /* Commands rank above the agent for the OOM killer (raising is never
     * refused).  Our /proc/self belongs to the host's root while we are
     * not dumpable: become dumpable first, as the execve below makes us
     * anyway; nothing of the agent's is left open in here to take. */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, cmd_oom_adj, strlen(cmd_oom_adj)) < 0) {
            /* best effort */
        }
        close(fd);
    }
    argv[n++] = "bash";
    argv[n++] = "-c";
    if (j->shell == NULL) {
        const char *dir = j->cwd != NULL ? j->cwd : getenv("HOME");
        if (dir != NULL && chdir(dir) != 0) {
            dprintf(2, "cd: %s: %s\n", dir, strerror(errno));
            _exit(1);
        }
        for (i = 0; j->env[i] != NULL; i++)
            putenv(j->env[i]);
        argv[n++] = j->cmd;
        argv[n] = NULL;
    } else {
        const char *home = getenv("HOME");
        if (home != NULL && chdir(home) != 0) {
            /* stay in / */
        }
        snprintf(state, sizeof(state), "%s/shells/%s", state_dir, j->shell);
        argv[n++] = named_wrapper;
        argv[n++] = "bash";
        argv[n++] = j->cmd;
        argv[n++] = j->cwd != NULL ? j->cwd : "";
        argv[n++] = state;
        for (i = 0; j->env[i] != NULL; i++)
            argv[n++] = j->env[i];
        argv[n] = NULL;
    }
    execv("/bin/bash", (char *const *)argv);
    dprintf(2, "devboxd-agent: cannot run /bin/bash: %s\n", strerror(errno));
    _exit(127);
}

/* Opens a pty master sized cols x rows; *slave receives the slave path. */
static int open_pty(const struct job *j, char *slave, size_t len)
{
    struct winsize ws = {.ws_row = (unsigned short)j->rows,
                         .ws_col = (unsigned short)j->cols};
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

    if (m < 0)
        return -1;
    if (grantpt(m) != 0 || unlockpt(m) != 0 || ptsname_r(m, slave, len) != 0 ||
        ioctl(m, TIOCSWINSZ, &ws) != 0) {
        close(m);
        return -1;
    }
    return m;
}

/* Hands the pty master to devboxd on the job's channel. */
static void send_master(int chan, int master)
{
    static const char msg[] = "{\"ev\":\"pty\"}";
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = sizeof(msg) - 1};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = cbuf,
                        .msg_controllen = sizeof(cbuf)};
    struct cmsghdr *c;

    memset(cbuf, 0, sizeof(cbuf));
    c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &master, sizeof(int));
    sendmsg(chan, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void job_start(struct job *j)
{
    char slave[128];
    int master = -1;
    pid_t pid;
    size_t i;

    if (j->cols > 0) {
        master = open_pty(j, slave, sizeof(slave));
        if (master < 0) {
            send_event(j->chan, "error", "message", 0,
                       "cannot open a pseudo-terminal");
            job_unlink(j);
            job_free(j);
            return;
        }
    }
    pid = fork();
    if (pid < 0) {
        send_event(j->chan, "error", "message", 0, "cannot fork");
        if (master >= 0)
            close(master);
        job_unlink(j);
        job_free(j);
        return;
    }
    if (pid == 0)
        child_exec(j, master >= 0 ? slave : NULL);
    if (master >= 0) {
        send_master(j->chan, master);
        close(master); /* devboxd holds the only master now */
    }
    j->pid = pid;
    for (i = 0; i < 3; i++)
        close_fd(&j->fds[i]);
    send_event(j->chan, "started", "pid", pid, NULL);
}

/* Starts the oldest queued job of each idle shell (and every fresh one). */
static void schedule(void)
{
    struct job *j;
    struct job *next;
    struct job *oldest;

    for (j = jobs; j != NULL; j = next) {
        next = j->next;
        if (j->pid != 0)
            continue;
        if (j->shell == NULL) {
            job_start(j);
            continue;
        }
        if (shell_busy(j->shell))
            continue;
        oldest = j;
        for (struct job *k = jobs; k != NULL; k = k->next) {
            if (k->pid == 0 && k->shell != NULL &&
                strcmp(k->shell, j->shell) == 0 && k->seq < oldest->seq)
                oldest = k;
        }
        job_start(oldest);
        next =
            jobs; /* the list may have changed; rescan (bounded by MAX_JOBS) */
    }
}

static const char *opt_string(const cJSON *obj, const char *key, bool *bad)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (v == NULL || cJSON_IsNull(v))
        return NULL;
    if (!cJSON_IsString(v)) {
        *bad = true;
        return NULL;
    }
    return v->valuestring;
}

static const char *parse_exec(const cJSON *msg, struct job *j)
{
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(msg, "env");
    const cJSON *pty = cJSON_GetObjectItemCaseSensitive(msg, "pty");
    const cJSON *e;
    const char *cmd;
    const char *shell;
    const char *cwd;
    bool bad = false;
    size_t n = 0;

    cmd = opt_string(msg, "cmd", &bad);
    shell = opt_string(msg, "shell", &bad);
    cwd = opt_string(msg, "cwd", &bad);
    if (bad || cmd == NULL)
        return "exec needs a string cmd; shell and cwd must be strings or null";
    if (shell != NULL && !valid_shell(shell))
        return "invalid shell name";
    if (env != NULL && !cJSON_IsArray(env))
        return "env must be an array of KEY=VAL strings";
    if (pty != NULL && !cJSON_IsNull(pty)) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(pty, "cols");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(pty, "rows");
        if (!cJSON_IsNumber(c) || !cJSON_IsNumber(r) || c->valuedouble < 1 ||
            c->valuedouble > 1000 || r->valuedouble < 1 ||
            r->valuedouble > 1000)
            return "pty needs cols and rows of 1-1000";
        if (shell != NULL)
            return "a pty command runs in its own shell, not a named one";
        j->cols = (int)c->valuedouble;
        j->rows = (int)r->valuedouble;
    }
    if (cJSON_GetArraySize(env) > MAX_ENV)
        return "too many env entries";
    j->env = calloc((size_t)cJSON_GetArraySize(env) + 1, sizeof(char *));
    j->cmd = strdup(cmd);
    j->shell = shell ? strdup(shell) : NULL;
    j->cwd = cwd ? strdup(cwd) : NULL;
    if (j->env == NULL || j->cmd == NULL || (shell && !j->shell) ||
        (cwd && !j->cwd))
        return "out of memory";
    cJSON_ArrayForEach(e, env)
    {
        if (!cJSON_IsString(e) || !valid_env(e->valuestring))
            return "env entries must be KEY=VAL strings";
        j->env[n] = strdup(e->valuestring);
        if (j->env[n] == NULL)
            return "out of memory";
        n++;
    }
    return NULL;
}

static void close_cmsg_fds(struct msghdr *mh, int *fds, size_t *nfds,
                           size_t max)
{
    struct cmsghdr *c;
    size_t i;
    size_t n;
    int *p;

    *nfds = 0;
    for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        p = (int *)CMSG_DATA(c);
        for (i = 0; i < n; i++) {
            if (*nfds < max)
                fds[(*nfds)++] = p[i];
            else
                close(p[i]);
        }
    }
}

/* Returns -1 when the master is gone (the agent then exits). */
static int on_master(int master, char *buf)
{
    char cbuf[CMSG_SPACE(sizeof(int) * 8)];
    struct iovec iov = {.iov_base = buf, .iov_len = AGENT_MSG_MAX};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = cbuf,
                        .msg_controllen = sizeof(cbuf)};
    int fds[8];
    size_t nfds = 0;
    size_t i;
    ssize_t n;
    cJSON *msg = NULL;
    const cJSON *op;
    struct job *j = NULL;
    const char *bad = NULL;

    n = recvmsg(master, &mh, MSG_CMSG_CLOEXEC);
    if (n < 0)
        return (errno == EINTR || errno == EAGAIN) ? 0 : -1;
    if (n == 0)
        return -1;
    close_cmsg_fds(&mh, fds, &nfds, 8);
    buf[n] = '\0';
    if (nfds < 1) /* nowhere to answer */
        goto out;
    msg = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
              ? NULL
              : cJSON_ParseWithLength(buf, (size_t)n);
    op = cJSON_GetObjectItemCaseSensitive(msg, "op");
    if (!cJSON_IsString(op) || strcmp(op->valuestring, "exec") != 0) {
        bad = "expected an exec message";
    } else if (nfds != AGENT_EXEC_FDS) {
        bad = "exec needs exactly 4 file descriptors";
    } else if (njobs >= MAX_JOBS) {
        bad = "too many commands in flight";
    }
    if (bad == NULL) {
        j = calloc(1, sizeof(*j));
        if (j == NULL) {
            bad = "out of memory";
        } else {
            j->chan = fds[0];
            for (i = 0; i < 3; i++)
                j->fds[i] = fds[i + 1];
            nfds = 0;
            bad = parse_exec(msg, j);
        }
    }
    if (bad != NULL) {
        send_event(j != NULL ? j->chan : fds[0], "error", "message", 0, bad);
        if (j != NULL)
            job_free(j);
        goto out;
    }
    fcntl(j->chan, F_SETFL, O_NONBLOCK);
    j->seq = next_seq++;
    j->next = jobs;
    jobs = j;
    njobs++;
    schedule();
out:
    for (i = 0; i < nfds; i++)
        close(fds[i]);
    cJSON_Delete(msg);
    return 0;
}

static void on_chan(struct job *j, char *buf)
{
    ssize_t n;
    cJSON *msg = NULL;
    const cJSON *op;
    const cJSON *sig;

    n = recv(j->chan, buf, AGENT_MSG_MAX, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        close_fd(&j->chan); /* devboxd let go; the command keeps running */
        return;
    }
    buf[n] = '\0';
    msg = cJSON_ParseWithLength(buf, (size_t)n);
    op = cJSON_GetObjectItemCaseSensitive(msg, "op");
    sig = cJSON_GetObjectItemCaseSensitive(msg, "sig");
    if (cJSON_IsString(op) && strcmp(op->valuestring, "kill") == 0 &&
        cJSON_IsNumber(sig) && sig->valuedouble >= 1 &&
        sig->valuedouble <= 64 && j->pid > 0) {
        /* Before the child's setsid() its group does not exist yet. */
        if (kill(-j->pid, (int)sig->valuedouble) != 0 && errno == ESRCH)
            kill(j->pid, (int)sig->valuedouble);
    }
    cJSON_Delete(msg);
}

static void reap(void)
{
    struct job *j;
    int status;
    int code;
    pid_t pid;

    for (;;) {
        pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            break;
        for (j = jobs; j != NULL; j = j->next) {
            if (j->pid == pid)
                break;
        }
        if (j == NULL)
            continue; /* an orphan re-parented to us */
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        send_event(j->chan, "exit", "status", code, NULL);
        job_unlink(j);
        job_free(j);
    }
    schedule();
}

static int event_loop(int master, int sfd)
{
    static char buf[AGENT_MSG_MAX + 1];
    static struct pollfd pfds[MAX_JOBS + 2];
    static struct job *pjobs[MAX_JOBS + 2];
    struct signalfd_siginfo si;
    struct job *j;
    size_t n;
    size_t i;

    for (;;) {
        n = 0;
        pfds[n++] = (struct pollfd){.fd = master, .events = POLLIN};
        pfds[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
        for (j = jobs; j != NULL && n < MAX_JOBS + 2; j = j->next) {
            if (j->chan < 0)
                continue;
            pjobs[n] = j;
            pfds[n++] = (struct pollfd){.fd = j->chan, .events = POLLIN};
        }
        if (poll(pfds, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (pfds[1].revents & POLLIN) {
            while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
            }
            reap();
            continue; /* job pointers may be stale */
        }
        for (i = 2; i < n; i++) {
            if (pfds[i].revents != 0)
                on_chan(pjobs[i], buf);
        }
        if (pfds[0].revents != 0 && on_master(master, buf) < 0)
            return 0;
    }
}

/* --ptyd-fd N (runc runtime): the PTY server's binary, handed over as an
 * open file, becomes <state_dir>/ptyd; then no fd but the master stays. */
static int install_ptyd(int fd)
{
    char path[PATH_MAX];
    char buf[65536];
    ssize_t n;
    int out = -1;
    int rc = 0;

    snprintf(path, sizeof(path), "%s/ptyd", state_dir);
    out =
        open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0555);
    if (out < 0)
        return -1;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        if (write(out, buf, (size_t)n) != n) {
            rc = -1;
            break;
        }
    }
    if (n < 0)
        rc = -1;
    close(out);
    return rc;
}

/* The memory limit's OOM killer must take the command that overran, never
 * the agent: losing pid 1 ends the whole devbox.  devboxd starts us at
 * -999 where the host lets it (CAP_SYS_RESOURCE), and commands then run at
 * 0; where it cannot, we keep the engine's score and commands run
 * AGENT_CMD_OOM_ADJ_ABOVE above it.  Never below 0: a command is not
 * protected from a host-wide OOM. */
static void cmd_oom_adj_init(void)
{
    char buf[16];
    long own = 0;
    long cmd;
    ssize_t n;
    int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    own = strtol(buf, NULL, 10);
    cmd = own < 0 ? 0 : own + AGENT_CMD_OOM_ADJ_ABOVE;
    if (cmd > 1000)
        cmd = 1000;
    snprintf(cmd_oom_adj, sizeof(cmd_oom_adj), "%ld", cmd);
}

int main(int argc, char **argv)
{
    char shells[PATH_MAX];
    int sfd = -1;
    int master = AGENT_MASTER_FD;
    int ptyd_fd = -1;
    bool oci = false;
    struct stat st;
    cJSON *hello = NULL;
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc &&
            argv[i + 1][0] == '/') {
            state_dir = argv[++i];
        } else if (strcmp(argv[i], "--ptyd-fd") == 0 && i + 1 < argc) {
            ptyd_fd = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--oci") == 0) {
            oci = true; /* started by runc from an inherited fd */
        } else {
            fprintf(stderr,
                    "usage: devboxd-agent [--state-dir /abs/dir] [--oci] "
                    "[--ptyd-fd N]\n");
            return 2;
        }
    }
    if (fstat(master, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        fprintf(stderr,
                "devboxd-agent: fd %d is not the devboxd socket; run by "
                "devboxd only\n",
                master);
        return 2;
    }
    fcntl(master, F_SETFD, FD_CLOEXEC);
    /* Commands run as our uid: without this they could ptrace us or take
     * our sockets with pidfd_getfd and speak to devboxd in our name.
     * Commands are dumpable again after their execve. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    prctl(PR_SET_NAME, "devboxd-agent", 0, 0, 0); /* runc starts us as "4" */
    signal(SIGPIPE, SIG_IGN);
    cmd_oom_adj_init();
    snprintf(shells, sizeof(shells), "%s/shells", state_dir);
    if ((mkdir(state_dir, 0700) != 0 && errno != EEXIST) ||
        (mkdir(shells, 0700) != 0 && errno != EEXIST)) {
        fprintf(stderr, "devboxd-agent: cannot create %s: %s\n", shells,
                strerror(errno));
        return 2;
    }
    if (ptyd_fd > AGENT_MASTER_FD && install_ptyd(ptyd_fd) != 0)
        fprintf(stderr, "devboxd-agent: cannot install the PTY server: %s\n",
                strerror(errno));
    if (oci)
        close_range(AGENT_MASTER_FD + 1, ~0U, 0);
    sigemptyset(&child_mask);
    sigaddset(&child_mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &child_mask, NULL);
    sfd = signalfd(-1, &child_mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        return 2;
    hello = cJSON_CreateObject();
    cJSON_AddStringToObject(hello, "ev", "hello");
    cJSON_AddNumberToObject(hello, "version", AGENT_PROTO_VERSION);
    send_json(master, hello);
    return event_loop(master, sfd);
}
