/* Unit tests for devboxd-agent's protocol, run outside any sandbox: the
 * agent is started on a socketpair as fd 3 with a private state dir, and
 * fed valid and hostile messages. */
#define _GNU_SOURCE
#include "agent/agent_proto.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAIT_MS 20000

struct agent {
    pid_t pid;
    int master;
    int errfd; /* agent's stderr (sanitizer reports end up here) */
    char dir[64];
};

static struct agent ag;

static char *agent_path(void)
{
    static char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
    char *slash;

    if (n <= 0)
        return NULL;
    path[n] = '\0';
    slash = strrchr(path, '/');
    strcpy(slash + 1, "devboxd-agent");
    return path;
}

static int recv_msg(int fd, char *buf, size_t len, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    ssize_t n;

    if (poll(&p, 1, timeout_ms) != 1)
        return -ETIMEDOUT;
    n = recv(fd, buf, len - 1, 0);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return (int)n;
}

static int setup(void **state)
{
    int sp[2];
    int ep[2];
    char buf[256];
    char *path = agent_path();

    (void)state;
    snprintf(ag.dir, sizeof(ag.dir), "/tmp/sbagent-XXXXXX");
    if (path == NULL || mkdtemp(ag.dir) == NULL)
        return -1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0 ||
        pipe2(ep, O_CLOEXEC) != 0)
        return -1;
    ag.pid = fork();
    if (ag.pid == 0) {
        char dir[80];
        snprintf(dir, sizeof(dir), "%s/run", ag.dir);
        dup2(sp[1], AGENT_MASTER_FD);
        dup2(ep[1], 2);
        execl(path, "devboxd-agent", "--state-dir", dir, (char *)NULL);
        _exit(127);
    }
    close(sp[1]);
    close(ep[1]);
    ag.master = sp[0];
    ag.errfd = ep[0];
    if (recv_msg(ag.master, buf, sizeof(buf), WAIT_MS) <= 0)
        return -1;
    return strstr(buf, "\"ev\":\"hello\"") != NULL &&
                   strstr(buf, "\"version\":1")
               ? 0
               : -1;
}

static int teardown(void **state)
{
    int status = -1;
    char buf[4096];
    ssize_t n;
    char cmd[128];

    (void)state;
    close(ag.master); /* the agent exits when devboxd goes away */
    waitpid(ag.pid, &status, 0);
    n = read(ag.errfd, buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(ag.errfd);
    snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", ag.dir);
    if (system(cmd) != 0)
        return -1;
    if (n > 0)
        fprintf(stderr, "agent stderr: %s\n", buf);
    /* Clean exit, nothing on stderr (sanitizer builds report leaks there). */
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && n <= 0 ? 0 : -1;
}

static int send_fds(int sock, const char *text, const int *fds, size_t nfds)
{
    char cbuf[CMSG_SPACE(sizeof(int) * 8)];
    struct iovec iov = {.iov_base = (void *)text, .iov_len = strlen(text)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    struct cmsghdr *c;

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
    return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

struct cmd {
    int chan; /* our end */
    int out;  /* output file */
};

/* Sends an exec message with the usual 4 fds; returns our channel end. */
static struct cmd exec_json(const char *json)
{
    struct cmd c = {-1, -1};
    int ch[2];
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    char path[128];
    int fds[4];

    snprintf(path, sizeof(path), "%s/out-XXXXXX", ag.dir);
    c.out = mkstemp(path);
    assert_true(c.out >= 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch),
                     0);
    fds[0] = ch[1];
    fds[1] = devnull;
    fds[2] = c.out;
    fds[3] = c.out;
    assert_int_equal(send_fds(ag.master, json, fds, 4), 0);
    close(ch[1]);
    close(devnull);
    c.chan = ch[0];
    return c;
}

/* Reads channel events until exit/error; returns exit status or -1 (error). */
static int wait_exit(struct cmd *c, char *last, size_t len)
{
    char buf[1024];
    char *p;

    for (;;) {
        if (recv_msg(c->chan, buf, sizeof(buf), WAIT_MS) <= 0)
            return -2;
        if (last != NULL)
            snprintf(last, len, "%s", buf);
        if (strstr(buf, "\"ev\":\"error\"") != NULL)
            return -1;
        p = strstr(buf, "\"ev\":\"exit\",\"status\":");
        if (p != NULL)
            return atoi(p + strlen("\"ev\":\"exit\",\"status\":"));
    }
}

static char *output(struct cmd *c)
{
    static char buf[4096];
    ssize_t n = pread(c->out, buf, sizeof(buf) - 1, 0);

    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void done(struct cmd *c)
{
    close(c->chan);
    close(c->out);
}

static void test_fresh_command(void **state)
{
    struct cmd c =
        exec_json("{\"op\":\"exec\",\"cmd\":\"echo hi; echo $X; exit 7\","
                  "\"shell\":null,\"cwd\":\"/tmp\",\"env\":[\"X=from-env\"]}");

    (void)state;
    assert_int_equal(wait_exit(&c, NULL, 0), 7);
    assert_string_equal(output(&c), "hi\nfrom-env\n");
    done(&c);
}

static void test_named_shell_keeps_state(void **state)
{
    struct cmd c;

    (void)state;
    c = exec_json("{\"op\":\"exec\",\"cmd\":\"cd /tmp && export KEEP=1 && exit "
                  "3\",\"shell\":\"s1\"}");
    assert_int_equal(wait_exit(&c, NULL, 0), 3);
    done(&c);
    c = exec_json(
        "{\"op\":\"exec\",\"cmd\":\"pwd; echo K=$KEEP\",\"shell\":\"s1\"}");
    assert_int_equal(wait_exit(&c, NULL, 0), 0);
    assert_string_equal(output(&c), "/tmp\nK=1\n");
    done(&c);
    /* Another shell does not share it. */
    c = exec_json(
        "{\"op\":\"exec\",\"cmd\":\"echo K=$KEEP\",\"shell\":\"s2\"}");
    assert_int_equal(wait_exit(&c, NULL, 0), 0);
    assert_string_equal(output(&c), "K=\n");
    done(&c);
}

static void test_named_shell_queues(void **state)
{
    struct cmd a;
    struct cmd b;
    char path[128];
    char buf[64] = "";
    char cmd1[256];
    char cmd2[256];
    int fd;

    (void)state;
    snprintf(path, sizeof(path), "%s/order", ag.dir);
    snprintf(cmd1, sizeof(cmd1),
             "{\"op\":\"exec\",\"cmd\":\"sleep 0.3; echo first >> "
             "%s\",\"shell\":\"q\"}",
             path);
    snprintf(cmd2, sizeof(cmd2),
             "{\"op\":\"exec\",\"cmd\":\"echo second >> %s\",\"shell\":\"q\"}",
             path);
    a = exec_json(cmd1);
    b = exec_json(cmd2);
    assert_int_equal(wait_exit(&b, NULL, 0), 0);
    assert_int_equal(wait_exit(&a, NULL, 0), 0);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_true(read(fd, buf, sizeof(buf) - 1) > 0);
    close(fd);
    assert_string_equal(buf, "first\nsecond\n");
    done(&a);
    done(&b);
}

static void test_kill(void **state)
{
    struct cmd c = exec_json("{\"op\":\"exec\",\"cmd\":\"sleep 60\"}");
    char buf[256];

    (void)state;
    assert_true(recv_msg(c.chan, buf, sizeof(buf), WAIT_MS) > 0);
    assert_non_null(strstr(buf, "\"ev\":\"started\""));
    assert_int_equal(send_fds(c.chan, "{\"op\":\"kill\",\"sig\":9}", NULL, 0),
                     0);
    assert_int_equal(wait_exit(&c, NULL, 0), 128 + 9);
    done(&c);
}

static void test_hostile_messages(void **state)
{
    static const char *const bad[] = {
        "not json",
        "{\"op\":\"format-disk\"}",
        "{\"op\":\"exec\"}",
        "{\"op\":\"exec\",\"cmd\":42}",
        "{\"op\":\"exec\",\"cmd\":\"true\",\"shell\":\"../../etc\"}",
        "{\"op\":\"exec\",\"cmd\":\"true\",\"shell\":\".x\"}",
        "{\"op\":\"exec\",\"cmd\":\"true\",\"env\":\"X=1\"}",
        "{\"op\":\"exec\",\"cmd\":\"true\",\"env\":[\"=x\"]}",
        "{\"op\":\"exec\",\"cmd\":\"true\",\"env\":[7]}",
        "{\"op\":\"exec\",\"cmd\":\"true\",\"cwd\":[]}",
        "[1,2,3]",
        "{\"op\":\"exec\",\"cmd\":\"true\",\"pty\":{\"cols\":0,\"rows\":24}}",
        "{\"op\":\"exec\",\"cmd\":\"true\",\"pty\":{\"cols\":80,\"rows\":1001}"
        "}",
        "{\"op\":\"exec\",\"cmd\":\"true\",\"pty\":{\"cols\":\"80\",\"rows\":"
        "24}}",
        "{\"op\":\"exec\",\"cmd\":\"true\",\"shell\":\"s\",\"pty\":{\"cols\":"
        "80,\"rows\":24}}",
    };
    char last[256];
    size_t i;
    struct cmd c;
    int ch[2];
    int fds[2];

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c = exec_json(bad[i]);
        assert_int_equal(wait_exit(&c, last, sizeof(last)), -1);
        assert_non_null(strstr(last, "\"message\""));
        done(&c);
    }
    /* Wrong number of fds: refused on the channel it did get. */
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch),
                     0);
    fds[0] = ch[1];
    fds[1] = ch[1];
    assert_int_equal(
        send_fds(ag.master, "{\"op\":\"exec\",\"cmd\":\"true\"}", fds, 2), 0);
    close(ch[1]);
    assert_true(recv_msg(ch[0], last, sizeof(last), WAIT_MS) > 0);
    assert_non_null(strstr(last, "4 file descriptors"));
    close(ch[0]);
    /* No fds at all and garbage: silently dropped, agent still serves. */
    assert_int_equal(
        send_fds(ag.master, "{\"op\":\"exec\",\"cmd\":\"true\"}", NULL, 0), 0);
    assert_int_equal(send_fds(ag.master, "\x01\x02\x03", NULL, 0), 0);
    c = exec_json("{\"op\":\"exec\",\"cmd\":\"sleep 0.5; echo still\"}");
    /* Bad kill requests on a running command are ignored. */
    assert_int_equal(send_fds(c.chan, "{\"op\":\"kill\",\"sig\":0}", NULL, 0),
                     0);
    assert_int_equal(
        send_fds(c.chan, "{\"op\":\"kill\",\"sig\":\"KILL\"}", NULL, 0), 0);
    assert_int_equal(send_fds(c.chan, "{\"op\":\"kill\",\"sig\":65}", NULL, 0),
                     0);
    assert_int_equal(send_fds(c.chan, "{\"op\":\"rm\"}", NULL, 0), 0);
    assert_int_equal(wait_exit(&c, NULL, 0), 0);
    assert_string_equal(output(&c), "still\n");
    done(&c);
}

static void test_bad_cwd(void **state)
{
    struct cmd c = exec_json(
        "{\"op\":\"exec\",\"cmd\":\"pwd\",\"cwd\":\"/nonexistent-dir\"}");

    (void)state;
    assert_int_equal(wait_exit(&c, NULL, 0), 1);
    assert_non_null(strstr(output(&c), "/nonexistent-dir"));
    done(&c);
}

static void test_orphans_are_reaped(void **state)
{
    struct cmd c = exec_json(
        "{\"op\":\"exec\",\"cmd\":\"(sleep 0.1 &) ; echo parent-done\"}");
    char path[64];
    char buf[512];
    int fd;
    int zombies = 0;

    (void)state;
    assert_int_equal(wait_exit(&c, NULL, 0), 0);
    done(&c);
    /* Outside a pid namespace orphans go to our init, so check the agent's
     * own children instead: none may stay a zombie. Reaping is
     * asynchronous, so wait for it with a generous bound. */
    for (int i = 0; i < 200; i++) {
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)ag.pid,
                 (int)ag.pid);
        zombies = 0;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, buf, sizeof(buf) - 1);
            buf[n > 0 ? n : 0] = '\0';
            close(fd);
            zombies = (int)strlen(buf);
        }
        if (zombies == 0)
            break;
        usleep(50 * 1000);
    }
    assert_int_equal(zombies, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_command),
        cmocka_unit_test(test_named_shell_keeps_state),
        cmocka_unit_test(test_named_shell_queues),
        cmocka_unit_test(test_kill),
        cmocka_unit_test(test_hostile_messages),
        cmocka_unit_test(test_bad_cwd),
        cmocka_unit_test(test_orphans_are_reaped),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, setup, teardown);
}
