/* A deliberately hostile devboxd-agent for tests: runs in a real sandbox in
 * place of the agent and answers devboxd with garbage, oversized messages,
 * out-of-range values and unsolicited file descriptors.  Its behaviour is
 * chosen by the devbox id (= hostname). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void send_fds(int sock, const char *text, size_t len, int nfds)
{
    char cbuf[CMSG_SPACE(sizeof(int) * 8)];
    int fds[8];
    struct iovec iov = {.iov_base = (void *)text, .iov_len = len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    struct cmsghdr *c;
    int i;

    if (nfds > 0) {
        for (i = 0; i < nfds; i++)
            fds[i] = open("/dev/null", O_RDONLY);
        memset(cbuf, 0, sizeof(cbuf));
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    sendmsg(sock, &mh, MSG_NOSIGNAL);
    for (i = 0; i < nfds; i++)
        close(fds[i]);
}

static void say(int sock, const char *text)
{
    send_fds(sock, text, strlen(text), 0);
}

static void garbage(int chan)
{
    static char big[200000];

    memset(big, '{', sizeof(big));
    send_fds(chan, big, sizeof(big), 0);
    say(chan, "not json at all");
    say(chan, "{\"ev\":\"started\",\"pid\":-5}");
    say(chan, "{\"ev\":\"started\",\"pid\":1e300}");
    send_fds(chan, "{\"ev\":\"started\",\"pid\":7}", 24, 8);
    say(chan, "{\"ev\":\"exit\",\"status\":99999}");
    say(chan, "{\"ev\":\"exit\",\"status\":-1}");
    say(chan, "{\"ev\":\"exit\",\"status\":\"0\"}");
    say(chan, "{\"ev\":\"exit\"}");
    say(chan, "[\"ev\",\"exit\"]");
    say(chan, "{\"ev\":12}");
}

int main(void)
{
    char host[128] = "";
    char buf[70000];
    char cbuf[CMSG_SPACE(sizeof(int) * 8)];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf) - 1};
    struct msghdr mh;
    struct cmsghdr *c;
    int fds[8];
    int nfds;
    ssize_t n;

    gethostname(host, sizeof(host) - 1);
    if (strcmp(host, "exit-at-once") == 0)
        return 0;
    if (strcmp(host, "bad-hello") == 0) {
        say(3, "{\"ev\":\"hello\",\"version\":99}");
        pause();
    }
    send_fds(3, "{\"ev\":\"hello\",\"version\":1}", 26,
             4); /* with unsolicited fds */
    for (;;) {
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof(cbuf);
        n = recvmsg(3, &mh, 0);
        if (n <= 0)
            return 0;
        buf[n] = '\0';
        nfds = 0;
        for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            memcpy(fds, CMSG_DATA(c), sizeof(int) * (size_t)(k > 8 ? 8 : k));
            nfds = k;
        }
        if (nfds < 1)
            continue;
        if (strstr(buf, "\"pty\"") != NULL) {
            /* A "terminal" that is no terminal, then a quick exit. */
            send_fds(fds[0], "{\"ev\":\"pty\"}", 12, 1);
            say(fds[0], "{\"ev\":\"exit\",\"status\":0}");
            continue;
        }
        garbage(fds[0]);
        if (strstr(buf, "\"valid\"") != NULL)
            say(fds[0], "{\"ev\":\"exit\",\"status\":3}");
        else if (strstr(buf, "\"eof\"") != NULL)
            close(fds[0]);
        /* "never": no exit event at all; the channel stays open. */
    }
}
