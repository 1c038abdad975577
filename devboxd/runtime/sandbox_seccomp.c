/* Seccomp profile of everything that runs in a devbox (agent and
 * commands), from one definition (the rule table below): it becomes the
 * OCI "linux.seccomp" object runc loads (libseccomp resolves the names).
 *
 * An allowlist in the manner of Docker's default profile: the system calls
 * an ordinary Linux userland uses (package managers, compilers, language
 * runtimes, browsers, sudo) are allowed; everything else answers ENOSYS, as
 * a kernel without that call would, so libc and runtimes take their
 * fallbacks (clone3 -> clone, new calls -> old ones).  Calls that exist
 * but a devbox must not use answer EPERM, as Docker's profile does for a
 * container without the capability.  Argument filters:
 * - socket: AF_UNIX, AF_INET, AF_INET6, and AF_NETLINK for the route,
 *   sock_diag, audit and generic protocols (ip, ss, sudo, ethtool);
 *   socketpair: AF_UNIX only; any
 *   other family (vsock, which is not network-namespaced, packet, bluetooth,
 *   alg, ...) is EAFNOSUPPORT, another netlink protocol EPROTONOSUPPORT:
 *   what a kernel without them says.
 * - clone and unshare: no namespace flags (no nested user namespace, no
 *   new mount or network namespace); clone3, whose flags a filter cannot
 *   read, is ENOSYS so libc falls back to clone.
 * - ioctl: no TIOCSTI/TIOCLINUX (typing into another process's terminal).
 * - personality: the values Docker allows, plus ADDR_NO_RANDOMIZE (gdb).
 * Only the native ABI: on x86_64 the 32-bit and x32 calls are not in the
 * filter (libseccomp's bad-architecture action kills the caller), which
 * also keeps socketcall, whose arguments a filter cannot read, from
 * bypassing the socket families. */
#define _GNU_SOURCE
#include "sandbox_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <unistd.h>

#define SC_DEFAULT_ERRNO ENOSYS
#define SC_AF_LIMIT 64 /* families below it are listed one by one */
#define SC_NETLINK_LIMIT 32
#define SC_NS_FLAGS                                                            \
    (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |             \
     CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

/* Allowed without conditions: Docker's default list for a container
 * without CAP_SYS_ADMIN, minus io_uring, plus what Docker grants through the
 * capabilities a devbox's root holds (chroot), ptrace (Docker allows it from
 * kernel 4.8), the NUMA policy calls (a process's own memory placement) and
 * newer calls glibc and runtimes use when present. */
/* clang-format off */
static const char *const allowed[] = {
    "accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk",
    "cachestat", "capget", "capset", "chdir", "chmod", "chown", "chown32",
    "chroot", "clock_adjtime", "clock_adjtime64", "clock_getres",
    "clock_getres_time64", "clock_gettime", "clock_gettime64",
    "clock_nanosleep", "clock_nanosleep_time64", "close", "close_range",
    "connect", "copy_file_range", "creat", "dup", "dup2", "dup3",
    "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old",
    "epoll_pwait", "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd",
    "eventfd2", "execve", "execveat", "exit", "exit_group", "faccessat",
    "faccessat2", "fadvise64", "fadvise64_64", "fallocate", "fanotify_mark",
    "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown", "fchown32",
    "fchownat", "fcntl", "fcntl64", "fdatasync", "fgetxattr", "flistxattr",
    "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstat64",
    "fstatat64", "fstatfs", "fstatfs64", "fsync", "ftruncate", "ftruncate64",
    "futex", "futex_time64", "futex_requeue", "futex_wait", "futex_waitv",
    "futex_wake", "futimesat", "get_mempolicy", "get_robust_list",
    "get_thread_area", "getcpu", "getcwd", "getdents", "getdents64",
    "getegid", "getegid32", "geteuid", "geteuid32", "getgid", "getgid32",
    "getgroups", "getgroups32", "getitimer", "getpeername", "getpgid",
    "getpgrp", "getpid", "getppid", "getpriority", "getrandom", "getresgid",
    "getresgid32", "getresuid", "getresuid32", "getrlimit", "getrusage",
    "getsid", "getsockname", "getsockopt", "gettid", "gettimeofday", "getuid",
    "getuid32", "getxattr", "getxattrat", "inotify_add_watch",
    "inotify_init", "inotify_init1", "inotify_rm_watch", "io_cancel",
    "io_destroy", "io_getevents", "io_pgetevents", "io_pgetevents_time64",
    "io_setup", "io_submit", "ioprio_get", "ioprio_set", "ipc", "kill",
    "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self",
    "lchown", "lchown32", "lgetxattr", "link", "linkat", "listen",
    "listxattr", "listxattrat", "llistxattr", "_llseek", "lremovexattr",
    "lseek", "lsetxattr", "lstat", "lstat64", "madvise", "map_shadow_stack",
    "mbind", "membarrier", "memfd_create", "memfd_secret", "mincore", "mkdir",
    "mkdirat", "mknod", "mknodat", "mlock", "mlock2", "mlockall", "mmap",
    "mmap2", "mprotect", "mq_getsetattr", "mq_notify", "mq_open",
    "mq_timedreceive", "mq_timedreceive_time64", "mq_timedsend",
    "mq_timedsend_time64", "mq_unlink", "mremap", "mseal", "msgctl",
    "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
    "name_to_handle_at", "nanosleep", "newfstatat", "_newselect", "open",
    "openat", "openat2", "pause", "pidfd_open", "pidfd_send_signal", "pipe",
    "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll",
    "ppoll_time64", "prctl", "pread64", "preadv", "preadv2", "prlimit64",
    "process_mrelease", "process_vm_readv", "process_vm_writev", "pselect6",
    "pselect6_time64", "ptrace", "pwrite64", "pwritev", "pwritev2", "read",
    "readahead", "readlink", "readlinkat", "readv", "recv", "recvfrom",
    "recvmmsg", "recvmmsg_time64", "recvmsg", "remap_file_pages",
    "removexattr", "removexattrat", "rename", "renameat", "renameat2",
    "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
    "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend",
    "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_tgsigqueueinfo",
    "sched_get_priority_max", "sched_get_priority_min", "sched_getaffinity",
    "sched_getattr", "sched_getparam", "sched_getscheduler",
    "sched_rr_get_interval", "sched_rr_get_interval_time64",
    "sched_setaffinity", "sched_setattr", "sched_setparam",
    "sched_setscheduler", "sched_yield", "seccomp", "select", "semctl",
    "semget", "semop", "semtimedop", "semtimedop_time64", "send", "sendfile",
    "sendfile64", "sendmmsg", "sendmsg", "sendto", "set_mempolicy",
    "set_mempolicy_home_node", "set_robust_list", "set_thread_area",
    "set_tid_address", "setfsgid", "setfsgid32", "setfsuid", "setfsuid32",
    "setgid", "setgid32", "setgroups", "setgroups32", "setitimer", "setpgid",
    "setpriority", "setregid", "setregid32", "setresgid", "setresgid32",
    "setresuid", "setresuid32", "setreuid", "setreuid32", "setrlimit",
    "setsid", "setsockopt", "setuid", "setuid32", "setxattr", "setxattrat",
    "shmat", "shmctl", "shmdt", "shmget", "shutdown", "sigaltstack",
    "signalfd", "signalfd4", "sigprocmask", "sigreturn",
    "splice", "stat", "stat64", "statfs", "statfs64", "statx", "symlink",
    "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo", "tee",
    "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun",
    "timer_gettime", "timer_gettime64", "timer_settime", "timer_settime64",
    "timerfd_create", "timerfd_gettime", "timerfd_gettime64",
    "timerfd_settime", "timerfd_settime64", "times", "tkill", "truncate",
    "truncate64", "ugetrlimit", "umask", "uname", "unlink", "unlinkat",
    "utime", "utimensat", "utimensat_time64", "utimes", "vfork", "vmsplice",
    "wait4", "waitid", "waitpid", "write", "writev",
    /* x86 only */
    "arch_prctl", "modify_ldt",
    NULL,
};

/* EPERM: calls a devbox must not make, named so the answer says "not
 * permitted" rather than "no such call". */
static const char *const refused[] = {
    /* kernel keyrings are not namespaced */
    "add_key", "keyctl", "request_key",
    /* profiling, BPF and fault handling: frequent privilege-escalation paths */
    "bpf", "perf_event_open", "userfaultfd",
    /* asynchronous I/O that bypasses the seccomp checks of each operation */
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    /* mounts and namespaces (a devbox's root has no CAP_SYS_ADMIN either) */
    "mount", "umount", "umount2", "pivot_root", "setns", "fsopen", "fsconfig",
    "fsmount", "fspick", "move_mount", "open_tree", "open_tree_attr",
    "mount_setattr", "statmount", "listmount", "sethostname",
    "setdomainname",
    /* kernel and system control */
    "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
    "quotactl_fd", "open_by_handle_at", "lookup_dcookie", "syslog", "vhangup",
    "iopl", "ioperm", "settimeofday", "stime", "clock_settime",
    "clock_settime64", "fanotify_init", "nfsservctl", "uselib",
    /* reaching into another process beyond ptrace's checks */
    "kcmp", "pidfd_getfd", "process_madvise",
    NULL,
};
/* clang-format on */

struct sc_arg {
    unsigned idx;
    enum scmp_compare op;
    uint64_t a; /* value, or mask for MASKED_EQ */
    uint64_t b; /* datum for MASKED_EQ */
};

/* One rule: name, errno (0 = allow), up to two argument conditions. */
typedef int (*sc_emit)(void *ctx, const char *name, int err, unsigned n,
                       const struct sc_arg *args);

static int emit1(sc_emit fn, void *ctx, const char *name, int err, unsigned idx,
                 enum scmp_compare op, uint64_t a, uint64_t b)
{
    struct sc_arg arg = {idx, op, a, b};

    return fn(ctx, name, err, 1, &arg);
}

static bool af_allowed(unsigned af)
{
    return af == AF_UNIX || af == AF_INET || af == AF_INET6;
}

static bool netlink_allowed(unsigned proto)
{
    return proto == NETLINK_ROUTE || proto == NETLINK_SOCK_DIAG ||
           proto == NETLINK_AUDIT || proto == NETLINK_GENERIC;
}

/* socket(2): each family below SC_AF_LIMIT by value, AF_NETLINK by
 * protocol; anything at or above the limit (also a value with high bits
 * set, which the kernel would truncate to an int) is refused. */
static int socket_rules(sc_emit fn, void *ctx)
{
    struct sc_arg nl[2];
    unsigned v;
    int rc = 0;

    for (v = 0; v < SC_AF_LIMIT && rc == 0; v++) {
        if (v == AF_NETLINK)
            continue;
        rc = emit1(fn, ctx, "socket", af_allowed(v) ? 0 : EAFNOSUPPORT, 0,
                   SCMP_CMP_EQ, v, 0);
    }
    if (rc == 0)
        rc = emit1(fn, ctx, "socket", EAFNOSUPPORT, 0, SCMP_CMP_GE, SC_AF_LIMIT,
                   0);
    nl[0] = (struct sc_arg){0, SCMP_CMP_EQ, AF_NETLINK, 0};
    for (v = 0; v < SC_NETLINK_LIMIT && rc == 0; v++) {
        nl[1] = (struct sc_arg){2, SCMP_CMP_EQ, v, 0};
        rc = fn(ctx, "socket", netlink_allowed(v) ? 0 : EPROTONOSUPPORT, 2, nl);
    }
    nl[1] = (struct sc_arg){2, SCMP_CMP_GE, SC_NETLINK_LIMIT, 0};
    if (rc == 0)
        rc = fn(ctx, "socket", EPROTONOSUPPORT, 2, nl);
    /* socketpair: AF_UNIX only (TIPC, for one, makes pairs too, and the
     * kernel loads a family's module for any caller). */
    for (v = 0; v < SC_AF_LIMIT && rc == 0; v++)
        rc = emit1(fn, ctx, "socketpair", v == AF_UNIX ? 0 : EAFNOSUPPORT, 0,
                   SCMP_CMP_EQ, v, 0);
    if (rc == 0)
        rc = emit1(fn, ctx, "socketpair", EAFNOSUPPORT, 0, SCMP_CMP_GE,
                   SC_AF_LIMIT, 0);
    return rc;
}

/* ioctl: everything but TIOCSTI and TIOCLINUX (typing into a terminal),
 * compared on the low 32 bits as the kernel reads the request.  A filter
 * cannot say "not equal under a mask", and an unconditional allow would
 * override the refusals, so the allowed requests are spelled out as a
 * union: those differing from both in a bit the two share, and the other
 * combinations of the bits in which they differ. */
static int ioctl_rules(sc_emit fn, void *ctx)
{
    const uint64_t sti = TIOCSTI;
    const uint64_t lnx = TIOCLINUX;
    const uint64_t diff = sti ^ lnx;
    uint64_t sub;
    unsigned bit;
    int rc;

    rc =
        emit1(fn, ctx, "ioctl", EPERM, 1, SCMP_CMP_MASKED_EQ, 0xffffffffu, sti);
    if (rc == 0)
        rc = emit1(fn, ctx, "ioctl", EPERM, 1, SCMP_CMP_MASKED_EQ, 0xffffffffu,
                   lnx);
    for (bit = 0; bit < 32 && rc == 0; bit++) {
        uint64_t f = 1ULL << bit;

        if ((diff & f) == 0)
            rc = emit1(fn, ctx, "ioctl", 0, 1, SCMP_CMP_MASKED_EQ, f, ~sti & f);
    }
    /* every subset of diff's bits (the standard subset walk) */
    sub = 0;
    do {
        uint64_t v = (sti & ~diff) | sub;

        if (rc == 0 && v != sti && v != lnx)
            rc = emit1(fn, ctx, "ioctl", 0, 1, SCMP_CMP_MASKED_EQ, 0xffffffffu,
                       v);
        sub = (sub - diff) & diff;
    } while (sub != 0);
    return rc;
}

/* The whole profile, rule by rule (the one definition both runtimes use). */
static int sc_rules(sc_emit fn, void *ctx)
{
    static const char *const ns_calls[] = {"clone", "unshare", NULL};
    static const unsigned long personas[] = {
        0,
        PER_LINUX32,
        UNAME26,
        UNAME26 | PER_LINUX32,
        0xffffffffUL,
        ADDR_NO_RANDOMIZE,
    };
    size_t i;
    unsigned bit;
    int rc = 0;

    for (i = 0; allowed[i] != NULL && rc == 0; i++)
        rc = fn(ctx, allowed[i], 0, 0, NULL);
    for (i = 0; refused[i] != NULL && rc == 0; i++)
        rc = fn(ctx, refused[i], EPERM, 0, NULL);
    if (rc == 0)
        rc = fn(ctx, "clone3", ENOSYS, 0, NULL);
    if (rc == 0)
        rc = socket_rules(fn, ctx);
    /* clone (flags in arg 0 on x86) and unshare: allowed without namespace
     * flags, EPERM with any of them. */
    for (i = 0; ns_calls[i] != NULL && rc == 0; i++) {
        rc = emit1(fn, ctx, ns_calls[i], 0, 0, SCMP_CMP_MASKED_EQ, SC_NS_FLAGS,
                   0);
        for (bit = 0; bit < 64 && rc == 0; bit++) {
            uint64_t f = 1ULL << bit;

            if ((SC_NS_FLAGS & f) != 0)
                rc = emit1(fn, ctx, ns_calls[i], EPERM, 0, SCMP_CMP_MASKED_EQ,
                           f, f);
        }
    }
    if (rc == 0)
        rc = ioctl_rules(fn, ctx);
    for (i = 0; i < sizeof(personas) / sizeof(personas[0]) && rc == 0; i++)
        rc = emit1(fn, ctx, "personality", 0, 0, SCMP_CMP_EQ, personas[i], 0);
    return rc;
}

/* A rule the profile leaves out: the call is not one of this
 * architecture's (libseccomp names other ABIs' calls with negative
 * numbers) or unknown to libseccomp, or the answer is the default anyway
 * (libseccomp refuses a rule repeating the default action). */
static bool sc_skip(const char *name, int err)
{
    return err == SC_DEFAULT_ERRNO || seccomp_syscall_resolve_name(name) < 0;
}

/* ---- OCI linux.seccomp for runc ---------------------------------------- */

struct oci_ctx {
    cJSON *rules;
    cJSON *allow_names; /* the unconditional allows, one entry */
    cJSON *eperm_names; /* the unconditional EPERMs, one entry */
};

static const char *op_name(enum scmp_compare op)
{
    switch (op) {
    case SCMP_CMP_NE:
        return "SCMP_CMP_NE";
    case SCMP_CMP_LT:
        return "SCMP_CMP_LT";
    case SCMP_CMP_LE:
        return "SCMP_CMP_LE";
    case SCMP_CMP_EQ:
        return "SCMP_CMP_EQ";
    case SCMP_CMP_GE:
        return "SCMP_CMP_GE";
    case SCMP_CMP_GT:
        return "SCMP_CMP_GT";
    case SCMP_CMP_MASKED_EQ:
        return "SCMP_CMP_MASKED_EQ";
    default:
        return "SCMP_CMP_EQ";
    }
}

static cJSON *oci_entry(cJSON *rules, int err)
{
    cJSON *r = cJSON_CreateObject();

    cJSON_AddArrayToObject(r, "names");
    if (err == 0) {
        cJSON_AddStringToObject(r, "action", "SCMP_ACT_ALLOW");
    } else {
        cJSON_AddStringToObject(r, "action", "SCMP_ACT_ERRNO");
        cJSON_AddNumberToObject(r, "errnoRet", err);
    }
    cJSON_AddItemToArray(rules, r);
    return cJSON_GetObjectItem(r, "names");
}

static int oci_emit(void *vctx, const char *name, int err, unsigned n,
                    const struct sc_arg *args)
{
    struct oci_ctx *c = vctx;
    cJSON *names = NULL;
    cJSON *a = NULL;
    unsigned i;

    if (sc_skip(name, err))
        return 0;
    if (n == 0 && (err == 0 || err == EPERM)) {
        cJSON **group = err == 0 ? &c->allow_names : &c->eperm_names;

        if (*group == NULL)
            *group = oci_entry(c->rules, err);
        names = *group;
    } else {
        names = oci_entry(c->rules, err);
    }
    cJSON_AddItemToArray(names, cJSON_CreateString(name));
    if (n == 0)
        return 0;
    a = cJSON_AddArrayToObject(
        cJSON_GetArrayItem(c->rules, cJSON_GetArraySize(c->rules) - 1), "args");
    for (i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();

        cJSON_AddNumberToObject(o, "index", args[i].idx);
        cJSON_AddNumberToObject(o, "value", (double)args[i].a);
        cJSON_AddNumberToObject(o, "valueTwo", (double)args[i].b);
        cJSON_AddStringToObject(o, "op", op_name(args[i].op));
        cJSON_AddItemToArray(a, o);
    }
    return 0;
}

cJSON *sandbox_seccomp_oci(void)
{
    static const char *const archs[] = {"SCMP_ARCH_X86_64", NULL};
    struct oci_ctx c;
    cJSON *s = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(s, "architectures");
    size_t i;

    memset(&c, 0, sizeof(c));
    cJSON_AddStringToObject(s, "defaultAction", "SCMP_ACT_ERRNO");
    cJSON_AddNumberToObject(s, "defaultErrnoRet", SC_DEFAULT_ERRNO);
    for (i = 0; archs[i] != NULL && seccomp_arch_native() == SCMP_ARCH_X86_64;
         i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(archs[i]));
    c.rules = cJSON_AddArrayToObject(s, "syscalls");
    if (sc_rules(oci_emit, &c) != 0) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}
