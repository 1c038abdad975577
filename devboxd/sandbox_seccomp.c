/* Seccomp filter for everything that runs in a devbox (agent and commands):
 * a deny list of kernel interfaces a development sandbox has no use for and
 * that widen the kernel attack surface.  Built once with libseccomp and
 * handed to bubblewrap (--seccomp FD) as classic BPF. */
#define _GNU_SOURCE
#include "sandbox_internal.h"

#include <errno.h>
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
    if (fd >= 0)
        close(fd);
    seccomp_release(ctx);
    return rc;
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
