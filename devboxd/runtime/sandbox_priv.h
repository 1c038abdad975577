/* struct sandbox and helpers shared by sandbox.c and sandbox_exec.c. */
#ifndef DEVBOXD_SANDBOX_PRIV_H
#define DEVBOXD_SANDBOX_PRIV_H

#include "sandbox_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

struct sandbox {
    pthread_mutex_t
        lock; /* guards master/rootfd/init_pidfd/cg/failure/stopped */
    char id[SB_ID_MAX + 1];
    char *dir;
    uid_t uid;  /* host uid == gid of the devbox user */
    int master; /* SEQPACKET to the agent */
    int rootfd; /* the overlay mount (fsmount fd): sandbox_open's root */
    pid_t launcher_pid; /* our child, which became runc */
    int launcher_pidfd;
    pid_t init_pid; /* host pid of the agent (pid 1 inside) */
    int init_pidfd;
    pid_t slirp_pid;
    int slirp_pidfd;
    int slirp_exit_w; /* closing it ends slirp4netns */
    int errpipe_r;    /* runc's stderr during start */
    struct sb_cgroup cg;
    uint64_t oom_base;
    const char *failure;
    bool stopped;
    uint32_t range; /* first host id of the devbox's range */
    int out_tree;   /* detached clone of the dir of commands' output files */
    dev_t out_dev;  /* ... that dir's identity, to reuse the clone */
    ino_t out_ino;
    int meminfo_fd; /* runc: the generated /proc/meminfo, -1 if none */
    uint64_t meminfo_limit;
    int64_t meminfo_ms; /* when it was last written */
};

int64_t sandbox_now_ms(void);
/* Duplicate of sb->master/rootfd/init_pidfd taken under sb->lock, so it
 * stays valid across a concurrent sandbox_stop; -ESRCH once stopped. */
int sandbox_dup_fd(struct sandbox *sb, const int *field);
int sandbox_poll_until(int fd, short events, int64_t deadline);
/* Waits (bounded) for our own child to exit and reaps it (SIGKILL when
 * it outlives timeout_ms). */
void sandbox_reap_child(pid_t pid, int pidfd, int timeout_ms);
/* Every signal at its default and none blocked, for a child before its
 * exec (devboxd's own mask and ignored signals survive execve).
 * Async-signal-safe. */
void sandbox_child_default_signals(void);

#endif
