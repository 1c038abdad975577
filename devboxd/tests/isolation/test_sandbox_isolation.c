/* Hostile-command suite: each test runs something a malicious devbox would
 * try and checks, from the host side, that it did not work.  Runs against
 * the sandbox API directly (real runc, overlay, cgroups, slirp4netns).
 * Needs root; cleans up every devbox, cgroup, planted file and helper
 * process it creates (group teardown, plus an atexit fallback). */
#define _GNU_SOURCE
#include "sbtest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T 20000 /* generous per-command bound (ms) on a busy 2-core machine */

static struct sbt_env env;
static struct sandbox *box_a;
static struct sandbox *box_b;
static char secret_path[128];
static char secret_val[64];
static char secret_name[64];
static pid_t host_sleeper = -1;
static int lo_server = -1;
static int lo_port;
static int abstract_server = -1;
static char abstract_name[64];

static int count_uid_procs(uid_t uid);

static bool contains(const char *hay, const char *needle)
{
    return hay != NULL && strstr(hay, needle) != NULL;
}

static void cleanup_host(void)
{
    if (secret_path[0] != '\0')
        unlink(secret_path);
    secret_path[0] = '\0';
    if (host_sleeper > 0) {
        kill(host_sleeper, SIGKILL);
        waitpid(host_sleeper, NULL, 0);
        host_sleeper = -1;
    }
    if (lo_server >= 0)
        close(lo_server);
    lo_server = -1;
    if (abstract_server >= 0)
        close(abstract_server);
    abstract_server = -1;
}

static void atexit_cleanup(void)
{
    /* Fallback when a test aborts: sandboxes die with our master sockets;
     * remove what is left on the host. */
    cleanup_host();
    if (box_a != NULL)
        sbt_destroy(&env, box_a, "iso_a");
    if (box_b != NULL)
        sbt_destroy(&env, box_b, "iso_b");
    box_a = box_b = NULL;
    if (env.state[0] != '\0')
        sbt_teardown(&env);
    env.state[0] = '\0';
}

static int start_listeners(void)
{
    struct sockaddr_in sin;
    struct sockaddr_un sun;
    socklen_t len = sizeof(sin);

    lo_server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lo_server < 0 ||
        bind(lo_server, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        listen(lo_server, 64) != 0 ||
        getsockname(lo_server, (struct sockaddr *)&sin, &len) != 0)
        return -1;
    lo_port = ntohs(sin.sin_port);
    abstract_server = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    snprintf(abstract_name, sizeof(abstract_name), "rlmcp-iso-%d",
             (int)getpid());
    memcpy(sun.sun_path + 1, abstract_name, strlen(abstract_name));
    if (abstract_server < 0 ||
        bind(abstract_server, (struct sockaddr *)&sun,
             (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                         strlen(abstract_name))) != 0 ||
        listen(abstract_server, 8) != 0)
        return -1;
    return 0;
}

static int group_setup(void **state)
{
    int fd;

    (void)state;
    atexit(atexit_cleanup);
    srandom((unsigned)time(NULL) ^ (unsigned)getpid());
    snprintf(secret_name, sizeof(secret_name), ".rlmcp-secret-%ld", random());
    snprintf(secret_val, sizeof(secret_val), "HOSTSECRET-%ld", random());
    snprintf(secret_path, sizeof(secret_path), "/root/%s", secret_name);
    fd = open(secret_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, secret_val, strlen(secret_val)) < 0)
        return -1;
    close(fd);
    host_sleeper = fork();
    if (host_sleeper == 0) {
        execl("/bin/sleep", "sleep", "600", (char *)NULL);
        _exit(127);
    }
    if (start_listeners() != 0)
        return -1;
    if (sbt_setup(&env) != 0)
        return -1;
    box_a = sbt_start(&env, "iso_a", NULL, SB_NET_OUTBOUND);
    box_b = sbt_start(&env, "iso_b", NULL, SB_NET_OUTBOUND);
    return box_a != NULL && box_b != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    atexit_cleanup();
    return 0;
}

/* ---- identity and privileges ------------------------------------------ */

static void test_runs_unprivileged(void **state)
{
    char *out = NULL;
    int st;

    (void)state;
    st = sbt_run(box_a, NULL,
                 "id -u; id -g; echo HOME=$HOME; hostname; grep -E "
                 "'^(NoNewPrivs|CapEff|CapPrm)' "
                 "/proc/self/status; unshare -U true && echo USERNS_OK; "
                 "echo END",
                 &out, T);
    assert_int_equal(st, 0);
    assert_true(contains(out, "1000\n1000\nHOME=/home/user\niso_a\n"));
    /* No capability in effect; no_new_privs stays off so that sudo can
     * make the user the devbox's root, whose capabilities count only in
     * the devbox's user namespace. */
    assert_true(contains(out, "NoNewPrivs:\t0"));
    assert_true(contains(out, "CapEff:\t0000000000000000"));
    assert_true(contains(out, "CapPrm:\t0000000000000000"));
    assert_false(contains(out, "USERNS_OK"));
    /* uid 1000 inside is an unprivileged host id of the devbox's own range
     * outside, above every host account. */
    assert_true(count_uid_procs(sandbox_host_uid(box_a)) >= 1); /* the agent */
    assert_true(sandbox_host_uid(box_a) >= 1048576);
    assert_int_equal(sandbox_host_uid(box_a) - sandbox_owner_uid(box_a), 1000);
    assert_int_not_equal(sandbox_host_uid(box_a), sandbox_host_uid(box_b));
    free(out);
}

/* ---- files ---------------------------------------------------------------- */

static void test_cannot_read_host_home(void **state)
{
    char cmd[2048];
    char *out = NULL;

    (void)state;
    snprintf(cmd, sizeof(cmd),
             "cat %s; cat /proc/1/root%s; ls -a /root /work /home; "
             "find / -xdev -name '%s' 2>/dev/null | sed 's/^/FOUND:/'; grep "
             "-rs '%s' /etc /tmp /home /run; "
             "cat /etc/shadow; echo DONE",
             secret_path, secret_path, secret_name, secret_val);
    sbt_run(box_a, NULL, cmd, &out, T);
    assert_true(contains(out, "DONE"));
    assert_false(contains(out, secret_val));
    assert_false(contains(out, "FOUND:"));
    assert_false(contains(out, "root:")); /* no shadow entries */
    free(out);
}

static void test_cannot_read_other_devbox(void **state)
{
    char cmd[1024];
    char *out = NULL;
    char *dir_b = sbt_devbox_dir(&env, "iso_b");

    (void)state;
    assert_int_equal(
        sbt_run(box_b, NULL, "echo B-PRIVATE-7731 > ~/bfile", NULL, T), 0);
    snprintf(cmd, sizeof(cmd),
             "cat %s/upper/home/user/bfile; cat /proc/*/root/home/user/bfile; "
             "grep -rs B-PRIVATE-7731 / --exclude-dir=proc --exclude-dir=sys "
             "--exclude-dir=usr; "
             "echo DONE",
             dir_b);
    sbt_run(box_a, NULL, cmd, &out, T);
    assert_true(contains(out, "DONE"));
    assert_false(contains(out, "B-PRIVATE-7731\n"));
    free(out);
    out = NULL;
    /* and B still has it */
    sbt_run(box_b, NULL, "cat ~/bfile", &out, T);
    assert_true(contains(out, "B-PRIVATE-7731"));
    free(out);
    free(dir_b);
}

static void test_cannot_write_outside_root(void **state)
{
    char cmd[1024];
    char hostfile[128];
    char *out = NULL;
    struct stat st;
    char *dir_a = sbt_devbox_dir(&env, "iso_a");

    (void)state;
    snprintf(hostfile, sizeof(hostfile), "/tmp/rlmcp-pwn-%ld", random());
    snprintf(
        cmd, sizeof(cmd),
        "echo x > %s; echo x > /usr/bin/rlmcp-pwn; echo x >> /etc/passwd; "
        "echo x > /etc/rlmcp-pwn; echo pwn > /proc/sys/kernel/hostname; "
        "mount -t tmpfs none /tmp/m; echo x > /run/devbox/agent; echo DONE",
        hostfile);
    sbt_run(box_a, NULL, cmd, &out, T);
    assert_true(contains(out, "DONE"));
    assert_int_not_equal(stat(hostfile, &st), 0);
    assert_int_not_equal(stat("/usr/bin/rlmcp-pwn", &st), 0);
    assert_int_not_equal(stat("/etc/rlmcp-pwn", &st), 0);
    free(out);
    out = NULL;
    /* The write to the sandbox's own /tmp landed in its writable layer. */
    snprintf(cmd, sizeof(cmd), "%s/upper%s", dir_a, hostfile);
    assert_int_equal(stat(cmd, &st), 0);
    assert_int_equal(st.st_uid, sandbox_host_uid(box_a));
    sbt_run(box_a, NULL, "hostname; grep -c user: /etc/passwd", &out, T);
    assert_true(contains(out, "iso_a\n1\n"));
    free(out);
    free(dir_a);
}

/* ---- processes -------------------------------------------------------- */

static void test_cannot_see_or_signal_host(void **state)
{
    char cmd[1024];
    char *out = NULL;

    (void)state;
    /* Returns once B's sleep has exec'd (bounded by T). */
    assert_int_equal(
        sbt_run(box_b, NULL,
                "setsid sleep 300 >/dev/null 2>&1 < /dev/null & "
                "until pgrep -x sleep >/dev/null; do sleep 0.02; done",
                NULL, T),
        0);
    snprintf(cmd, sizeof(cmd),
             "ps -eo pid,comm --no-headers; kill -9 %d; kill -9 -1; ls /proc | "
             "grep -c '^[0-9]'; "
             "echo DONE",
             (int)host_sleeper);
    sbt_run(box_a, NULL, cmd, &out, T);
    assert_non_null(out);
    assert_false(contains(out, "sleep")); /* neither the host's nor B's */
    free(out);
    out = NULL;
    /* The host process and B's process survived A's kill -9 -1. */
    assert_int_equal(kill(host_sleeper, 0), 0);
    assert_int_equal(waitpid(host_sleeper, NULL, WNOHANG), 0);
    assert_int_equal(sbt_run(box_b, NULL, "pgrep -x sleep >/dev/null", NULL, T),
                     0);
    /* A's agent survived too (pid 1 ignores signals from inside). */
    assert_int_equal(sbt_run(box_a, NULL, "echo alive", &out, T), 0);
    assert_true(contains(out, "alive"));
    free(out);
}

static void test_cannot_hijack_the_agent(void **state)
{
    char *out = NULL;

    (void)state;
    /* pid 1 is the agent, same uid as the commands: it must still refuse
     * ptrace, fd theft and memory access. */
    sbt_run(box_a, NULL,
            "python3 - <<'EOF'\n"
            "import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "pfd = os.pidfd_open(1)\n"
            "for fd in range(0, 8):\n"
            "    if libc.syscall(438, pfd, fd, 0) >= 0: print('GOT-FD', fd)\n"
            "if libc.ptrace(16, 1, 0, 0) == 0: print('PTRACED')\n"
            "try:\n"
            "    open('/proc/1/mem', 'rb'); print('MEM-OPEN')\n"
            "except OSError: pass\n"
            "try:\n"
            "    os.listdir('/proc/1/fd'); print('FD-LIST')\n"
            "except OSError: pass\n"
            "print('DONE')\n"
            "EOF",
            &out, T);
    assert_true(contains(out, "DONE"));
    assert_false(contains(out, "GOT-FD"));
    assert_false(contains(out, "PTRACED"));
    assert_false(contains(out, "MEM-OPEN"));
    assert_false(contains(out, "FD-LIST"));
    free(out);
    out = NULL;
    assert_int_equal(sbt_run(box_a, NULL, "echo agent-ok", &out, T), 0);
    assert_true(contains(out, "agent-ok"));
    free(out);
}

static void test_seccomp_denies_kernel_extras(void **state)
{
    char *out = NULL;

    (void)state;
    /* keyctl(KEYCTL_GET_KEYRING_ID, session) works for any host user; the
     * devbox's filter refuses it with EPERM, like bpf and perf_event_open. */
    sbt_run(
        box_a, NULL,
        "python3 - <<'EOF'\n"
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "for name, nr, args in (('keyctl', 250, (0, -3, 0)), ('bpf', 321, (0, "
        "0, 0)),\n"
        "                       ('perf_event_open', 298, (0, 0, -1, -1, 0)),\n"
        "                       ('userfaultfd', 323, (0,))):\n"
        "    r = libc.syscall(nr, *args)\n"
        "    print(name, 'EPERM' if r < 0 and ctypes.get_errno() == 1 else "
        "'ALLOWED')\n"
        "EOF",
        &out, T);
    assert_non_null(out);
    assert_true(contains(out, "keyctl EPERM"));
    assert_true(contains(out, "bpf EPERM"));
    assert_true(contains(out, "perf_event_open EPERM"));
    assert_true(contains(out, "userfaultfd EPERM"));
    free(out);
}

/* The profile is an allowlist: vsock (not network-namespaced: a devbox
 * would reach the host's or hypervisor's vsock services) and other socket
 * families are EAFNOSUPPORT, as on a kernel without them; namespaces are
 * refused; a call the profile does not know is ENOSYS.  No connection is
 * attempted: socket() alone must fail. */
static void test_seccomp_allowlist(void **state)
{
    char *out = NULL;

    (void)state;
    sbt_run(
        box_a, NULL,
        "python3 - <<'EOF'\n"
        "import ctypes, errno, socket\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def sock(name, fam, typ, proto=0):\n"
        "    try:\n"
        "        socket.socket(fam, typ, proto).close(); print(name, 'OK')\n"
        "    except OSError as e:\n"
        "        print(name, errno.errorcode[e.errno])\n"
        "sock('vsock', 40, socket.SOCK_STREAM)\n"
        "sock('vsock-dgram', 40, socket.SOCK_DGRAM)\n"
        "sock('packet', 17, socket.SOCK_DGRAM)\n"
        "sock('alg', 38, socket.SOCK_SEQPACKET)\n"
        "sock('unix', socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "sock('inet', socket.AF_INET, socket.SOCK_STREAM)\n"
        "sock('inet6', socket.AF_INET6, socket.SOCK_DGRAM)\n"
        "sock('nl-route', 16, socket.SOCK_RAW, 0)\n"
        "sock('nl-uevent', 16, socket.SOCK_RAW, 15)\n"
        "try:\n"
        "    socket.socketpair(30, socket.SOCK_SEQPACKET); print('tipc-pair "
        "OK')\n"
        "except OSError as e:\n"
        "    print('tipc-pair', errno.errorcode[e.errno])\n"
        "a, b = socket.socketpair(); a.close(); b.close(); print('unix-pair "
        "OK')\n"
        "# high bits the kernel would drop: still vsock, still refused\n"
        "r = libc.syscall(41, ctypes.c_long((1 << 32) | 40), 1, 0)\n"
        "print('vsock-high', 'OK' if r >= 0 else "
        "errno.errorcode[ctypes.get_errno()])\n"
        "for name, nr, args in (('unshare-user', 272, (0x10000000,)),\n"
        "                       ('unshare-net', 272, (0x40000000,)),\n"
        "                       ('unshare-files', 272, (0x400,)),\n"
        "                       ('clone3', 435, (0, 0)), ('mount', 165, (0, 0, "
        "0, 0, 0)),\n"
        "                       ('setns', 308, (-1, 0)), ('nosuch', 470, "
        "())):\n"
        "    r = libc.syscall(nr, *args)\n"
        "    e = ctypes.get_errno()\n"
        "    print(name, 'OK' if r >= 0 else errno.errorcode.get(e, str(e)))\n"
        "print('DONE')\n"
        "EOF",
        &out, T);
    assert_non_null(out);
    assert_true(contains(out, "DONE"));
    assert_true(contains(out, "vsock EAFNOSUPPORT"));
    assert_true(contains(out, "vsock-dgram EAFNOSUPPORT"));
    assert_true(contains(out, "vsock-high EAFNOSUPPORT"));
    assert_true(contains(out, "packet EAFNOSUPPORT"));
    assert_true(contains(out, "alg EAFNOSUPPORT"));
    assert_true(contains(out, "unix OK"));
    assert_true(contains(out, "inet OK"));
    assert_true(contains(out, "inet6 OK"));
    assert_true(contains(out, "nl-route OK"));
    assert_true(contains(out, "nl-uevent EPROTONOSUPPORT"));
    assert_true(contains(out, "tipc-pair EAFNOSUPPORT"));
    assert_true(contains(out, "unix-pair OK"));
    assert_true(contains(out, "unshare-user EPERM"));
    assert_true(contains(out, "unshare-net EPERM"));
    assert_true(contains(out, "unshare-files OK"));
    assert_true(contains(out, "clone3 ENOSYS"));
    assert_true(contains(out, "mount EPERM"));
    assert_true(contains(out, "setns EPERM"));
    assert_true(contains(out, "nosuch ENOSYS"));
    free(out);
    out = NULL;
    /* What a user relies on still works under the allowlist: threads and
     * processes, pipes, a pty (ioctl), epoll/inotify, a server on a
     * socket, netlink (ip), tar and a compiler when the host has one. */
    assert_int_equal(
        sbt_run(
            box_a, NULL,
            "set -e\n"
            "python3 - <<'EOF'\n"
            "import asyncio, multiprocessing, os, pty, socket, subprocess, "
            "threading\n"
            "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
            "with multiprocessing.Pool(2) as p: assert p.map(abs, [-1, -2]) == "
            "[1, 2]\n"
            "assert subprocess.run(['sh', '-c', 'echo hi | cat'], "
            "capture_output=True).stdout == b'hi\\n'\n"
            "pid, fd = pty.fork()\n"
            "if pid == 0: os._exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
            "c = socket.create_connection(s.getsockname()); a, _ = s.accept()\n"
            "c.sendall(b'x'); assert a.recv(1) == b'x'\n"
            "async def main(): await asyncio.sleep(0.01)\n"
            "asyncio.run(main())\n"
            "print('PY-OK')\n"
            "EOF\n"
            "ip -o link show lo >/dev/null && echo IP-OK\n"
            "cd /tmp && mkdir -p tarx && echo a > tarx/f && tar czf t.tgz tarx "
            "&& tar tzf t.tgz >/dev/null && echo TAR-OK\n"
            "if command -v cc >/dev/null; then printf 'int main(void){return "
            "0;}' > c.c && cc c.c -o c && ./c && echo CC-OK; else echo CC-OK; "
            "fi\n",
            &out, 60000),
        0);
    assert_true(contains(out, "PY-OK"));
    assert_true(contains(out, "IP-OK"));
    assert_true(contains(out, "TAR-OK"));
    assert_true(contains(out, "CC-OK"));
    free(out);
}

/* ---- network ---------------------------------------------------------- */

static void test_cannot_reach_host_loopback(void **state)
{
    char cmd[1024];
    char *out = NULL;
    struct sockaddr_in sin;
    int c;

    (void)state;
    /* The host-side server is reachable from the host (so a refusal below
     * is the sandbox's doing, not a dead server). */
    c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)lo_port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(c, (struct sockaddr *)&sin, sizeof(sin)), 0);
    close(c);
    snprintf(cmd, sizeof(cmd),
             "for h in 127.0.0.1 10.0.2.2 10.0.2.3 localhost; do "
             "timeout 5 bash -c \"exec 3<>/dev/tcp/$h/%d\" 2>/dev/null && echo "
             "CONNECTED-$h; done; "
             "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); "
             "s.connect('\\0%s'); print('ABSTRACT-CONNECTED')\" 2>/dev/null; "
             "ip -o link | awk '{print $2}'; echo DONE",
             lo_port, abstract_name);
    sbt_run(box_a, NULL, cmd, &out, T);
    assert_true(contains(out, "DONE"));
    assert_false(contains(out, "CONNECTED"));
    assert_true(contains(out, "tap0:")); /* outbound networking is configured */
    free(out);
}

static void test_net_none_has_only_lo(void **state)
{
    struct sandbox *c = NULL;
    char *out = NULL;
    char cmd[256];

    (void)state;
    c = sbt_start(&env, "iso_nonet", NULL, SB_NET_NONE);
    assert_non_null(c);
    snprintf(cmd, sizeof(cmd),
             "ip -o link | awk '{print $2}'; timeout 5 bash -c 'exec "
             "3<>/dev/tcp/10.0.2.2/%d' "
             "2>/dev/null && echo CONNECTED; echo DONE",
             lo_port);
    sbt_run(c, NULL, cmd, &out, T);
    assert_true(contains(out, "lo:\nDONE"));
    assert_false(contains(out, "tap0"));
    assert_false(contains(out, "CONNECTED"));
    free(out);
    sbt_destroy(&env, c, "iso_nonet");
}

/* ---- limits ------------------------------------------------------------ */

static void test_fork_bomb_contained(void **state)
{
    struct sb_limits lim = {.pids_max = 64};
    struct sandbox *c = NULL;
    struct sb_usage u;
    char *out = NULL;
    int i;

    (void)state;
    c = sbt_start(&env, "iso_forkbomb", &lim, SB_NET_NONE);
    assert_non_null(c);
    sbt_run_quiet(c, "bomb() { bomb | bomb & }; bomb", T);
    /* Watch it saturate (bounded: 15 s): never above the limit, and it
     * does run into it. */
    for (i = 0; i < 300; i++) {
        assert_int_equal(sandbox_usage(c, &u), 0);
        assert_true(u.pids <= 64);
        if (i >= 20 && u.pids_denied > 0)
            break;
        usleep(50 * 1000);
    }
    assert_true(u.pids_denied > 0);
    /* The engine and other devboxes keep serving meanwhile. */
    assert_int_equal(sbt_run(box_a, NULL, "echo still-here", &out, T), 0);
    assert_true(contains(out, "still-here"));
    free(out);
    assert_int_equal(sandbox_stop(c), 0); /* kills every bomb process */
    sbt_destroy(&env, c, "iso_forkbomb");
}

static void test_memory_bomb_contained(void **state)
{
    struct sb_limits lim = {.memory_bytes = 128ULL << 20};
    struct sandbox *c = NULL;
    char *out = NULL;
    uint64_t kills = 0;
    int st;

    (void)state;
    c = sbt_start(&env, "iso_membomb", &lim, SB_NET_NONE);
    assert_non_null(c);
    assert_null(sandbox_failure_reason(c));
    assert_int_equal(sandbox_check(c), 0);
    st = sbt_run_quiet(
        c, "python3 -c 'a=[]\nwhile True: a.append(bytearray(8<<20))'", T);
    assert_int_equal(st, 128 + 9); /* SIGKILLed by the cgroup OOM killer */
    assert_int_equal(sandbox_oom_kills(c, &kills), 0);
    assert_int_equal(kills, 1);
    /* The killer took the command, not the agent: the sandbox lives on. */
    assert_null(sandbox_failure_reason(c));
    assert_int_equal(sandbox_check(c), 0);
    assert_int_equal(sbt_run(c, NULL, "echo survived", &out, T), 0);
    assert_true(contains(out, "survived"));
    free(out);
    out = NULL;
    /* Commands rank above pid 1 (the agent) for the OOM killer. */
    assert_int_equal(sbt_run(c, NULL,
                             "test $(cat /proc/self/oom_score_adj) -gt "
                             "$(cat /proc/1/oom_score_adj) && echo ranked",
                             &out, T),
                     0);
    assert_true(contains(out, "ranked"));
    free(out);
    out = NULL;
    assert_int_equal(sandbox_check(box_a), 0); /* the others stay healthy */
    assert_int_equal(sandbox_check(box_b), 0);
    assert_int_equal(sbt_run(box_a, NULL, "echo still-here", &out, T), 0);
    assert_true(contains(out, "still-here"));
    free(out);
    sbt_destroy(&env, c, "iso_membomb");
}

/* ---- the files API ------------------------------------------------------- */

static char *read_fd(int fd)
{
    static char buf[8192];
    size_t got = 0;
    ssize_t n;

    while (got < sizeof(buf) - 1 &&
           (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    return buf;
}

static void test_open_cannot_escape(void **state)
{
    char cmd[1024];
    char path[256];
    char hostfile[128];
    struct stat st;
    int fd;

    (void)state;
    snprintf(hostfile, sizeof(hostfile), "/tmp/rlmcp-open-%ld", random());
    snprintf(
        cmd, sizeof(cmd),
        "cd ~ && ln -sfn %s abs && ln -sfn ../../../../../../../../root up && "
        "ln -sfn /proc/self/root/etc/shadow magic && ln -sfn %s evil && "
        "ln -sfn /etc/shadow shadow",
        secret_path, hostfile);
    assert_int_equal(sbt_run(box_a, NULL, cmd, NULL, T), 0);
    snprintf(path, sizeof(path), "../../../../../../..%s", secret_path);
    assert_true(sandbox_open(box_a, path, O_RDONLY, 0) < 0);
    assert_true(sandbox_open(box_a, secret_path, O_RDONLY, 0) < 0);
    assert_true(sandbox_open(box_a, "abs", O_RDONLY, 0) < 0);
    snprintf(path, sizeof(path), "up/%s", secret_name);
    assert_true(sandbox_open(box_a, path, O_RDONLY, 0) < 0);
    assert_true(sandbox_open(box_a, "magic", O_RDONLY, 0) < 0);
    assert_true(sandbox_open(box_a, "shadow", O_RDONLY, 0) < 0);
    assert_true(sandbox_open(box_a, "/../../etc/shadow", O_RDONLY, 0) < 0);
    /* Creating through an absolute symlink lands inside the devbox. */
    fd = sandbox_open(box_a, "evil", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_uid,
                     sandbox_host_uid(box_a)); /* owned by the devbox user */
    assert_int_equal(write(fd, "via-evil", 8), 8);
    close(fd);
    assert_int_not_equal(stat(hostfile, &st), 0);
    {
        char *out = NULL;
        snprintf(cmd, sizeof(cmd), "cat %s", hostfile);
        sbt_run(box_a, NULL, cmd, &out, T);
        assert_true(contains(out, "via-evil"));
        free(out);
    }
    /* Permissions are the devbox user's, not devboxd's. */
    assert_int_equal(sandbox_open(box_a, "/etc/passwd", O_WRONLY, 0), -EACCES);
    fd = sandbox_open(box_a, "/etc/passwd", O_RDONLY, 0);
    assert_true(fd >= 0);
    assert_true(contains(read_fd(fd), "user:x:1000:1000"));
    close(fd);
    /* /usr is the image's own (not the host's file), and what runc mounts
     * inside (/proc) is not reachable through the files API. */
    fd = sandbox_open(box_a, "/usr/bin/bash", O_RDONLY, 0);
    assert_true(fd >= 0);
    {
        struct stat in;
        struct stat host;

        assert_int_equal(fstat(fd, &in), 0);
        assert_int_equal(stat("/usr/bin/bash", &host), 0);
        assert_false(in.st_dev == host.st_dev && in.st_ino == host.st_ino);
    }
    close(fd);
    assert_true(sandbox_open(box_a, "/proc/1/environ", O_RDONLY, 0) < 0);
}

static void test_open_symlink_race(void **state)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    char err[256];
    char path[256];
    char cmd[1024];
    int i;
    int fd;
    int opened = 0;
    int status;
    int rc;
    char *got;

    (void)state;
    /* Inside: race/<secret_name> is a real file; a loop swaps race between
     * that dir and a symlink to /root (where the host keeps the secret). */
    snprintf(
        cmd, sizeof(cmd),
        "cd ~ && mkdir -p realdir && echo inside > realdir/%s && ln -sfn /root "
        "rootlink && "
        "end=$((SECONDS+4)); while [ $SECONDS -lt $end ]; do "
        "ln -sfn realdir race.tmp && mv -Tf race.tmp race; "
        "ln -sfn /root race.tmp && mv -Tf race.tmp race; "
        "ln -sfn ../../../../../root race.tmp && mv -Tf race.tmp race; done",
        secret_name);
    memset(&req, 0, sizeof(req));
    req.command = cmd;
    req.stdout_fd = req.stderr_fd = -1;
    assert_int_equal(sandbox_exec(box_a, &req, &p, err, sizeof(err)), 0);
    snprintf(path, sizeof(path), "race/%s", secret_name);
    for (i = 0; i < 20000 && sandbox_exec_wait(p, 0, &status) == -ETIMEDOUT;
         i++) {
        fd = sandbox_open(box_a, path, O_RDONLY, 0);
        if (fd < 0)
            continue;
        got = read_fd(fd);
        close(fd);
        assert_false(contains(got, secret_val));
        assert_true(contains(got, "inside"));
        opened++;
    }
    rc = sandbox_exec_wait(p, T, &status);
    if (rc != 0)
        print_message("race command: wait %d, sandbox_check %d\n", rc,
                      sandbox_check(box_a));
    assert_int_equal(rc, 0);
    sandbox_exec_free(p);
    assert_true(opened > 0); /* the race ran while we opened */
    print_message("race: %d opens inside, 0 escapes, over %d attempts\n",
                  opened, i);
}

/* ---- connections into a devbox (tunnels) ----------------------------------- */

static void test_connect_into_devbox_only(void **state)
{
    char buf[512];
    const char req[] = "GET / HTTP/1.0\r\n\r\n";
    ssize_t n;
    int fd = -1;
    int i;

    (void)state;
    assert_int_equal(
        sbt_run(
            box_b, NULL,
            "mkdir -p ~/www && echo served-from-b > ~/www/index.html && "
            "cd ~/www && setsid python3 -m http.server 18080 --bind 127.0.0.1 "
            ">/dev/null 2>&1 < /dev/null &",
            NULL, T),
        0);
    /* Bounded wait for the server to listen. */
    for (i = 0; i < 200; i++) {
        fd = sandbox_connect_tcp(box_b, 18080, 2000);
        if (fd >= 0)
            break;
        usleep(50 * 1000);
    }
    assert_true(fd >= 0);
    assert_int_equal(write(fd, req, sizeof(req) - 1),
                     (ssize_t)(sizeof(req) - 1));
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "200 OK"));
    /* The same port in another devbox is a different namespace... */
    assert_int_equal(sandbox_connect_tcp(box_a, 18080, 2000), -ECONNREFUSED);
    /* ...and the host's loopback server is not reachable this way either. */
    assert_int_equal(sandbox_connect_tcp(box_a, (uint16_t)lo_port, 2000),
                     -ECONNREFUSED);
    assert_int_equal(sandbox_connect_tcp(box_a, 0, 2000), -EINVAL);
}

/* ---- PTY sessions ------------------------------------------------------------ */

/* Reads the pty until want appears (bounded); returns what was read. */
static char *pty_read_until(int fd, const char *want, char *buf, size_t len)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    size_t used = 0;
    ssize_t n;
    int i;

    buf[0] = '\0';
    for (i = 0; i < 400 && strstr(buf, want) == NULL; i++) {
        if (poll(&p, 1, 50) <= 0)
            continue;
        n = read(fd, buf + used, len - 1 - used);
        if (n <= 0)
            break;
        used += (size_t)n;
        buf[used] = '\0';
        if (used + 1 >= len)
            used = 0; /* keep the tail only */
    }
    return buf;
}

static void test_pty_session(void **state)
{
    struct sb_exec req;
    struct sb_proc *p = NULL;
    struct winsize ws = {.ws_row = 20, .ws_col = 50};
    char err[256] = "";
    char buf[8192];
    const char *cmd1 = "stty size; tty; echo mark-$((6*7))\n";
    const char *cmd2 = "stty size; echo mark-$((7*7))\n";
    int status = -1;
    int fd;

    (void)state;
    memset(&req, 0, sizeof(req));
    req.command = "exec bash --norc --noprofile -i";
    req.stdout_fd = req.stderr_fd = -1;
    req.want_pty = true;
    req.pty_cols = 100;
    req.pty_rows = 40;
    assert_int_equal(sandbox_exec(box_a, &req, &p, err, sizeof(err)), 0);
    fd = sandbox_exec_pty_fd(p);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, cmd1, strlen(cmd1)), (ssize_t)strlen(cmd1));
    pty_read_until(fd, "mark-42", buf, sizeof(buf));
    assert_non_null(strstr(buf, "40 100"));
    assert_non_null(strstr(buf, "/dev/pts/"));
    assert_non_null(strstr(buf, "mark-42"));
    /* Resize from devboxd's side of the terminal. */
    assert_int_equal(ioctl(fd, TIOCSWINSZ, &ws), 0);
    assert_int_equal(write(fd, cmd2, strlen(cmd2)), (ssize_t)strlen(cmd2));
    pty_read_until(fd, "mark-49", buf, sizeof(buf));
    assert_non_null(strstr(buf, "20 50"));
    /* No typing into the terminal from inside (seccomp: TIOCSTI). */
    {
        const char *sti =
            "python3 -c \"import fcntl,termios\ntry:\n fcntl.ioctl(0, "
            "termios.TIOCSTI, b'x'); print('STI-' + 'OK')\nexcept OSError as "
            "e: "
            "print('STI-' + 'DENIED', e.errno)\"\n";
        assert_int_equal(write(fd, sti, strlen(sti)), (ssize_t)strlen(sti));
        pty_read_until(fd, "STI-DENIED 1", buf, sizeof(buf));
        assert_non_null(strstr(buf, "STI-DENIED 1"));
        assert_null(strstr(buf, "STI-OK"));
    }
    assert_int_equal(write(fd, "exit 5\n", 7), 7);
    assert_int_equal(sandbox_exec_wait(p, T, &status), 0);
    assert_int_equal(status, 5);
    sandbox_exec_free(p);
    /* Bad sizes and named shells are refused before reaching the agent. */
    req.pty_cols = 0;
    assert_int_equal(sandbox_exec(box_a, &req, &p, err, sizeof(err)), -EINVAL);
    req.pty_cols = 80;
    req.shell_name = "s";
    assert_int_equal(sandbox_exec(box_a, &req, &p, err, sizeof(err)), -EINVAL);
}

/* ---- concurrent calls while the sandbox stops ---------------------------- */

static volatile int race_stop;

static void *race_worker(void *arg)
{
    struct sandbox *sb = arg;
    struct sb_exec req;
    struct sb_proc *p = NULL;
    struct sb_usage u;
    char err[256];
    int status;
    int fd;
    long bad = 0;

    memset(&req, 0, sizeof(req));
    req.command = "true";
    req.stdout_fd = req.stderr_fd = -1;
    while (!race_stop) {
        fd = sandbox_open(sb, "/etc/hostname", O_RDONLY, 0);
        if (fd >= 0)
            close(fd);
        else if (fd != -ESRCH)
            bad++;
        if (sandbox_exec(sb, &req, &p, err, sizeof(err)) == 0) {
            sandbox_exec_wait(p, 5000, &status);
            sandbox_exec_free(p);
        }
        fd = sandbox_connect_tcp(sb, 9, 1000);
        if (fd >= 0)
            close(fd);
        sandbox_usage(sb, &u);
        sandbox_check(sb);
    }
    return (void *)bad;
}

static void test_stop_races_with_calls(void **state)
{
    struct sandbox *c = NULL;
    pthread_t th[3];
    void *bad;
    int i;

    (void)state;
    c = sbt_start(&env, "iso_race", NULL, SB_NET_NONE);
    assert_non_null(c);
    race_stop = 0;
    for (i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, race_worker, c), 0);
    usleep(300 * 1000);
    assert_int_equal(sandbox_stop(c), 0); /* while the workers hammer it */
    usleep(100 * 1000);
    race_stop = 1;
    for (i = 0; i < 3; i++) {
        pthread_join(th[i], &bad);
        assert_int_equal((long)bad, 0);
    }
    /* After stop every call says so. */
    assert_int_equal(sandbox_open(c, "x", O_RDONLY, 0), -ESRCH);
    assert_int_equal(sandbox_connect_tcp(c, 80, 100), -ESRCH);
    assert_int_equal(sandbox_check(c), -ESRCH);
    sbt_destroy(&env, c, "iso_race");
}

/* ---- cleanup ------------------------------------------------------------- */

static int count_uid_procs(uid_t uid)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    char path[300];
    struct stat st;
    int n = 0;

    while (d != NULL && (de = readdir(d)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s", de->d_name);
        if (stat(path, &st) == 0 && st.st_uid == uid) {
            char comm[300];
            char name[64] = "";
            int fd;
            snprintf(comm, sizeof(comm), "/proc/%s/stat", de->d_name);
            fd = open(comm, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                ssize_t k = read(fd, name, sizeof(name) - 1);
                name[k > 0 ? k : 0] = '\0';
                close(fd);
            }
            if (getenv("SBTEST_VERBOSE") != NULL)
                print_message("uid %u process: %s\n", (unsigned)uid, name);
            n++;
        }
    }
    if (d != NULL)
        closedir(d);
    return n;
}

static int count_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    while (d != NULL && readdir(d) != NULL)
        n++;
    if (d != NULL)
        closedir(d);
    return n;
}

static void test_stop_cleans_up(void **state)
{
    struct sandbox *c = NULL;
    struct stat st;
    uid_t uid;
    char *dir = NULL;
    char cg[256];
    char mi[64];
    FILE *f;
    char line[1024];
    bool stage_mounted = false;

    int fds_before = count_open_fds();

    (void)state;
    c = sbt_start(&env, "iso_cleanup", NULL, SB_NET_OUTBOUND);
    assert_non_null(c);
    uid = sandbox_host_uid(c);
    sbt_run_quiet(
        c, "for i in 1 2 3; do setsid sleep 300 & done; echo x > ~/kept", T);
    assert_true(count_uid_procs(uid) >= 3);
    assert_int_equal(sandbox_stop(c), 0);
    assert_int_equal(count_uid_procs(uid), 0); /* agent, slirp, sleepers */
    snprintf(cg, sizeof(cg), "/sys/fs/cgroup/memory/devboxd-test/iso_cleanup");
    assert_int_not_equal(stat(cg, &st), 0);
    snprintf(cg, sizeof(cg), "/sys/fs/cgroup/pids/devboxd-test/iso_cleanup");
    assert_int_not_equal(stat(cg, &st), 0);
    snprintf(mi, sizeof(mi), "/proc/self/mountinfo");
    f = fopen(mi, "re");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, "devboxd-stage") != NULL)
            stage_mounted = true;
    }
    if (f != NULL)
        fclose(f);
    assert_false(stage_mounted);
    /* The writable layer stays until the dir is destroyed. */
    dir = sbt_devbox_dir(&env, "iso_cleanup");
    snprintf(cg, sizeof(cg), "%s/upper/home/user/kept", dir);
    assert_int_equal(stat(cg, &st), 0);
    sbt_destroy(&env, c, "iso_cleanup");
    assert_int_not_equal(stat(dir, &st), 0);
    free(dir);
    assert_int_equal(count_open_fds(), fds_before); /* no descriptor leaked */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_unprivileged),
        cmocka_unit_test(test_cannot_read_host_home),
        cmocka_unit_test(test_cannot_read_other_devbox),
        cmocka_unit_test(test_cannot_write_outside_root),
        cmocka_unit_test(test_cannot_see_or_signal_host),
        cmocka_unit_test(test_cannot_hijack_the_agent),
        cmocka_unit_test(test_seccomp_denies_kernel_extras),
        cmocka_unit_test(test_seccomp_allowlist),
        cmocka_unit_test(test_cannot_reach_host_loopback),
        cmocka_unit_test(test_net_none_has_only_lo),
        cmocka_unit_test(test_fork_bomb_contained),
        cmocka_unit_test(test_memory_bomb_contained),
        cmocka_unit_test(test_open_cannot_escape),
        cmocka_unit_test(test_open_symlink_race),
        cmocka_unit_test(test_connect_into_devbox_only),
        cmocka_unit_test(test_pty_session),
        cmocka_unit_test(test_stop_races_with_calls),
        cmocka_unit_test(test_stop_cleans_up),
    };

    if (geteuid() != 0) {
        fprintf(stderr,
                "the isolation suite needs root (devboxd runs as root)\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
