/* Seccomp filter for everything that runs in a devbox (agent and commands):
 * a deny list of kernel interfaces a development sandbox has no use for and
 * that widen the kernel attack surface.  Built once with libseccomp and
 * handed to bubblewrap (--seccomp FD) as classic BPF. */
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
#include <unistd.h>

static const char *const denied[] = {
    /* kernel keyrings are not namespaced */
    "add_key", "keyctl", "request_key",
    /* profiling, BPF and fault handling: frequent privilege-escalation paths */
    "bpf", "perf_event_open", "userfaultfd",
    /* kernel and system control (already refused without capabilities) */
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "open_by_handle_at",
    "lookup_dcookie", "syslog", "vhangup",
    /* asynchronous I/O that bypasses the seccomp checks of each operation */
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    NULL,
};

static int build(scmp_filter_ctx ctx)
{
    int rc = 0;
    int nr;
    size_t i;

    for (i = 0; denied[i] != NULL && rc == 0; i++) {
        nr = seccomp_syscall_resolve_name(denied[i]);
        if (nr == __NR_SCMP_ERROR)
            continue; /* not on this architecture */
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    }
    /* Typing into another process's terminal. */
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
    if (rc == 0)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
    return rc;
}

int sb_seccomp_program(char **prog, size_t *len)
{
    scmp_filter_ctx ctx = NULL;
    int fd = -1;
    int rc;
    off_t size;
    char *buf = NULL;

    *prog = NULL;
    *len = 0;
    ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == NULL)
        return -ENOMEM;
    rc = build(ctx);
    if (rc != 0)
        goto out;
    /* bwrap applies the filter with no_new_privs already set. */
    fd = memfd_create("devbox-seccomp", MFD_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    rc = seccomp_export_bpf(ctx, fd);
    if (rc != 0)
        goto out;
    size = lseek(fd, 0, SEEK_END);
    buf = size > 0 ? malloc((size_t)size) : NULL;
    if (buf == NULL || pread(fd, buf, (size_t)size, 0) != size) {
        rc = -EIO;
        goto out;
    }
    *prog = buf;
    *len = (size_t)size;
    buf = NULL;
out:
    free(buf);
    sb_close_fd(fd);
    seccomp_release(ctx);
    return rc;
}

static cJSON *oci_rule(const char *const *names, int errno_ret, unsigned idx,
                       uint64_t mask, uint64_t value)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(r, "names");
    cJSON *args = NULL;
    cJSON *arg = NULL;
    size_t i;

    for (i = 0; names[i] != NULL; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(names[i]));
    cJSON_AddStringToObject(r, "action", "SCMP_ACT_ERRNO");
    cJSON_AddNumberToObject(r, "errnoRet", errno_ret);
    if (mask != 0) {
        args = cJSON_AddArrayToObject(r, "args");
        arg = cJSON_CreateObject();
        cJSON_AddNumberToObject(arg, "index", idx);
        cJSON_AddNumberToObject(arg, "value", (double)mask);
        cJSON_AddNumberToObject(arg, "valueTwo", (double)value);
        cJSON_AddStringToObject(arg, "op", "SCMP_CMP_MASKED_EQ");
        cJSON_AddItemToArray(args, arg);
    }
    return r;
}

/* The same deny list as an OCI "linux.seccomp" object for runc, plus what
 * bubblewrap's --disable-userns did: no nested user namespaces (clone and
 * unshare with CLONE_NEWUSER; clone3, whose flags a filter cannot read,
 * answers ENOSYS so libc falls back to clone). */
cJSON *sb_seccomp_oci(void)
{
    static const char *const ioctl_n[] = {"ioctl", NULL};
    static const char *const userns_n[] = {"unshare", "clone", NULL};
    static const char *const clone3_n[] = {"clone3", NULL};
    static const char *const archs[] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86",
                                        "SCMP_ARCH_X32", NULL};
    cJSON *s = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(s, "architectures");
    cJSON *rules = NULL;
    size_t i;

    cJSON_AddStringToObject(s, "defaultAction", "SCMP_ACT_ALLOW");
    for (i = 0; archs[i] != NULL; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(archs[i]));
    rules = cJSON_AddArrayToObject(s, "syscalls");
    cJSON_AddItemToArray(rules, oci_rule(denied, EPERM, 0, 0, 0));
    cJSON_AddItemToArray(rules,
                         oci_rule(ioctl_n, EPERM, 1, 0xffffffffu, TIOCSTI));
    cJSON_AddItemToArray(rules,
                         oci_rule(ioctl_n, EPERM, 1, 0xffffffffu, TIOCLINUX));
    cJSON_AddItemToArray(
        rules, oci_rule(userns_n, EPERM, 0, CLONE_NEWUSER, CLONE_NEWUSER));
    cJSON_AddItemToArray(rules, oci_rule(clone3_n, ENOSYS, 0, 0, 0));
    return s;
}

int sb_seccomp_fd(void)
{
    int fd;
    ssize_t n;

    if (sb_rt.seccomp_prog == NULL)
        return -ENOENT;
    fd = memfd_create("devbox-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    n = write(fd, sb_rt.seccomp_prog, sb_rt.seccomp_len);
    if (n != (ssize_t)sb_rt.seccomp_len || lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -EIO;
    }
    return fd;
}
