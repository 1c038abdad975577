/* devboxd sandbox runtime: one isolated Linux sandbox per devbox.
 *
 * A sandbox is: an overlay root filesystem (read-only lower layers over an
 * image + the devbox's writable upper layer, under the per-devbox
 * directory), run by runc in fresh pid/ipc/uts/mount/user/net/cgroup
 * namespaces with a per-devbox range of host ids (root inside is the
 * range's first id), inside cgroup v1 limits, with an in-sandbox agent
 * (devboxd-agent, pid 1) that runs commands for devboxd.  Layout of the
 * per-devbox directory, what a devbox sees and the agent protocol are in
 * docs/sandbox.md.
 *
 * Ownership: every pointer returned by this API is owned by the caller and
 * released with the matching *_free/sandbox_release.  Strings in specs are
 * borrowed for the duration of the call only.
 *
 * Threading: sandbox_init() once, before any thread uses the API.  After
 * that, sandbox_* functions may be called from any thread concurrently on
 * the same sandbox, sandbox_stop() included (calls racing with it fail with
 * -ESRCH, never touch a closed descriptor); only sandbox_release() must not
 * race with other calls on that sandbox.  An sb_proc is used by one thread
 * at a time (the caller serialises) and may outlive its sandbox's stop.
 * sandbox_start/stop fork and waitpid() their own children by pid: devboxd
 * must not reap with waitpid(-1) or ignore SIGCHLD.
 *
 * Errors: functions return 0 or a negative errno value; those taking
 * err/errlen also write a one-line human message saying what to fix.
 * devboxd must run as root (it mounts overlays and creates cgroups); the
 * sandbox itself never holds host privileges.
 */
#ifndef DEVBOXD_SANDBOX_H
#define DEVBOXD_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Process-wide runtime configuration.  NULL/0 fields take the default. */
struct sb_runtime {
    const char
        *state_dir; /* required: sandbox bookkeeping (uid claims) lives in
                                <state_dir>/sandbox/; usually devboxd's --state-dir */
    const char
        *agent_path; /* default: devboxd-agent next to /proc/self/exe, then
                                <exe dir>/../libexec/runloop-mcp/devboxd-agent */
    const char *slirp_path; /* default: /usr/bin/slirp4netns */
    const char
        *cgroup_root; /* default: /sys/fs/cgroup (v1 controllers below it) */
    const char *cgroup_name; /* parent group name, default "devboxd" */
    const char *runc_path;   /* the runtime; default: /usr/sbin/runc */
    /* Appended: devbox disks.  NULL/"" or "loop" = a devbox with
     * limits.disk_bytes gets a loop-mounted ext4 of that size (see
     * sandbox_disk_attach); "off" = disk_bytes is advisory. */
    const char *disk;
    /* Where every devboxd of the machine claims its host ids (one claim
     * file per uid or range, holding the owner's dir), an absolute path;
     * default SB_CLAIMS_DIR.  Engines that must not share ids name the
     * same one. */
    const char *claims_dir;
    /* How many runc id ranges this engine hands out, 1 to SB_RANGE_SLOTS;
     * 0: all. */
    uint32_t range_slots;
};
/* The defaults of claims_dir and range_slots (RLMCP_UID_CLAIMS_DIR,
 * RLMCP_UID_RANGE_SLOTS). */
#define SB_CLAIMS_DIR "/var/lib/devboxd/uids"
#define SB_RANGE_SLOTS 4096u

int sandbox_init(const struct sb_runtime *rt, char *err, size_t errlen);
/* A helper binary of devboxd (devboxd-agent, devboxd-image): name next to
 * /proc/self/exe when executable there, else <exe dir>/../libexec/runloop-mcp/
 * name.  malloc'd, NULL when out of memory or the exe path is unknown. */
char *sandbox_helper_path(const char *name);
/* posix_spawn of path with argv (fa may be NULL): the child starts with no
 * signal blocked and every signal at its default, not devboxd's blocked and
 * ignored ones, and with no descriptor above 2 open (fa's file actions
 * run first; fa gains a close action).  0 with *pid, or an errno. */
int sandbox_spawn(pid_t *pid, const char *path, posix_spawn_file_actions_t *fa,
                  char *const argv[]);
/* cp -a --reflink=auto of the tree src into the existing dir dst, as root
 * (host ids, modes, xattrs and overlay whiteouts kept), in a private root
 * that holds only the host's /usr, src (read-only) and dst.  src may be the
 * writable layer of a running devbox, which can turn any directory in it
 * into a symlink while cp walks it: in that root such a symlink can only
 * reach /usr, which every devbox sees anyway.  0, or -1 with err. */
int sandbox_copy_tree(const char *src, const char *dst, char *err,
                      size_t errlen);

/* Reads fd, a child's output, into buf (len bytes, NUL-terminated, the
 * trailing line breaks dropped) until end of file or buf is full, then
 * waits for the child pid: its exit status, or 128 + the signal that ended
 * it.  The caller closes fd. */
int sandbox_collect(pid_t pid, int fd, char *buf, size_t len);
void sandbox_shutdown_runtime(void); /* frees what sandbox_init allocated */

struct sb_limits {
    uint64_t memory_bytes; /* 0 = unlimited; cgroup memory.limit_in_bytes */
    uint32_t pids_max;     /* 0 = default 4096; cgroup pids.max */
    uint32_t cpu_millis;   /* 0 = unlimited; 1000 = one core (cfs quota) */
    uint64_t
        disk_bytes; /* 0 = no disk of its own; else the size of the devbox's
                       disk (sandbox_disk_attach), >= SANDBOX_DISK_MIN_BYTES */
};

enum sb_network {
    SB_NET_OUTBOUND = 0, /* slirp4netns: outside reachable, host loopback not */
    SB_NET_NONE = 1,     /* only lo */
};

struct sb_spec {
    const char *id; /* devbox id: [A-Za-z0-9_-]{1,63}; becomes the hostname */
    const char
        *dir; /* per-devbox dir (created if missing); sandbox owns its layout */
    /* Read-only layers, topmost first (snapshots/blueprints later).  Each is
     * a directory tree rooted at "/"; see docs/sandbox.md for ownership. */
    const char *const *lower_layers;
    size_t n_layers;
    /* Root filesystem image (a directory tree, e.g. from devboxd-image),
     * the lowest layer; required. */
    const char *image;
    struct sb_limits limits;
    enum sb_network net;
    const char *const
        *env; /* NULL-terminated KEY=VAL list for every command, may be NULL */
    /* Appended: who commands run as.  NULL = "user" (1000); "root" with
     * uid 0; another name is created in the devbox (home /home/<name>,
     * passwordless sudo).  [a-z_][a-z0-9_-]{0,31}, uid 0-60000. */
    const char *user_name;
    uint32_t user_uid;
    /* Appended: each lower layer's owner (the first host id of the range
     * that wrote it, >= the range base), or NULL.  With owners the runc
     * runtime mounts each layer where it is, read-only, through an
     * idmapped view that shows the owner's ids as this devbox's: layers
     * are shared, never copied.  NULL: the layers already belong to the
     * devbox (copies handed to its ids). */
    const uid_t *layer_owners;
};

struct sandbox;
struct sb_proc;

/* Checks a user_name/user_uid pair; false with a message in err. */
bool sandbox_valid_user(const char *name, uint32_t uid, char *err,
                        size_t errlen);

/* Mounts the root, creates cgroups, starts runc + agent (+ slirp4netns)
 * and returns once the agent answered.  Bounded: fails after 10 s. */
int sandbox_start(const struct sb_spec *spec, struct sandbox **out, char *err,
                  size_t errlen);

/* All processes killed and reaped, cgroups removed, root unmounted; the
 * writable layer stays on disk.  Idempotent.  The handle stays valid (only
 * sandbox_failure_reason/usage remain meaningful) until sandbox_release(). */
int sandbox_stop(struct sandbox *sb);
void sandbox_release(struct sandbox *sb); /* stops if needed, then frees */

/* Deletes the per-devbox dir (writable layer included) and its disk, and
 * releases the devbox's host uid.  The sandbox must be stopped. */
int sandbox_destroy_dir(const char *dir, char *err, size_t errlen);
/* After a devboxd that was killed: ends every process left in the cgroups
 * of sandbox id and removes them (thawing a group frozen mid-snapshot).
 * Call before that id starts again. Returns how many groups were found,
 * or -errno. Thread-safe. */
int sandbox_purge(const char *id);

/* The devbox's disk: a sparse ext4 image of `bytes` beside dir (<dir>.img),
 * created on first need and loop-mounted on dir itself (in devboxd's mount
 * namespace), so everything under dir (the writable layer, layer copies,
 * SANDBOX_OUTPUT_DIR) counts against it: writing past it is ENOSPC and the
 * host loses at most `bytes`.  Creates dir if missing; a no-op when dir is
 * mounted already.  An existing image is mounted whatever bytes and the
 * mode; none is made when bytes is 0 or the runtime's disk is "off".  Call it
 * before anything else writes into dir (sandbox_start does; so must a
 * caller of sandbox_dir_owner).  Fails naming the cause when loop devices or
 * mkfs.ext4 are missing. */
/* The longest command sandbox_exec runs: half the agent's message, the
 * rest left for the environment (AGENT_MSG_MAX / 2, checked where both are
 * seen). */
#define SANDBOX_COMMAND_MAX (32 * 1024)
#define SANDBOX_DISK_MIN_BYTES (256ULL << 20)
int sandbox_disk_attach(const char *dir, uint64_t bytes, char *err,
                        size_t errlen);
/* sandbox_disk_attach on a disk the kernel will not mount read-write, or
 * turned read-only at once, mounts it read-only and answers -EROFS, err
 * saying so: its files stay readable; the image is never deleted. */
/* 0 when dir's disk is writable (or dir has none), -EROFS when it is
 * mounted read-only (the kernel's answer to a storage error), -errno. */
int sandbox_disk_state(const char *dir);
/* Mounts dir's existing disk read-only (no journal replay when that is
 * what fails), for reading the files of a devbox whose disk failed; 0 when
 * it is mounted already. */
int sandbox_disk_mount_ro(const char *dir, char *err, size_t errlen);
/* The image's size and the host blocks it holds (bytes); -ENOENT when dir
 * has no disk, -ENOTSUP when devbox disks are off. */
int sandbox_disk_usage(const char *dir, uint64_t *size, uint64_t *allocated);
/* Unmounts dir's disk (lazily), keeping its image; 0 when none is mounted.
 * For devboxd's stop: sandbox_disk_attach mounts it again. */
int sandbox_disk_detach(const char *dir);
/* Under dir, on the devbox's disk: devboxd's files of the devbox (command
 * output), which the sandbox runtime never touches. */
#define SANDBOX_OUTPUT_DIR "output"

/* 0 while the sandbox runs; -ESRCH once its agent/init is gone (then
 * sandbox_failure_reason() says why).  An OOM kill of another process in
 * the group does not end the sandbox (sandbox_oom_kills() counts them). */
int sandbox_check(struct sandbox *sb);

/* runc devboxes with a memory limit: writes their /proc/meminfo again
 * (MemTotal the limit, MemFree/MemAvailable from the memory group's
 * usage); at most once a second, a no-op for other devboxes.  Call it
 * periodically (devboxd's engine timer does). */
void sandbox_refresh_meminfo(struct sandbox *sb);

/* NULL while the agent/init runs; once it is gone, "out_of_memory" when the
 * group's memory limit killed a process, else "sandbox_exited".  Static
 * string. */
const char *sandbox_failure_reason(struct sandbox *sb);

/* Host uid/gid the devbox's user runs as (its uid inside + the range). */
uid_t sandbox_host_uid(const struct sandbox *sb);
/* Who owns the devbox's writable layer on the host: the first id of its
 * range (root inside). */
uid_t sandbox_owner_uid(const struct sandbox *sb);
/* The owner sandbox_start will use for dir, before the first start:
 * claims it for dir (created if missing) and records it there, as
 * sandbox_start would (e.g. to hand layer files to the devbox before it
 * boots). */
int sandbox_dir_owner(const char *dir, const char *id, uid_t *owner, char *err,
                      size_t errlen);
/* The host id a layer file owned by u gets when a layer of owner `from`
 * is handed to owner `to`; (uid_t)-1 when u stays as it is. */
uid_t sandbox_shift_uid(uid_t u, uid_t from, uid_t to);

struct sb_exec {
    const char *command; /* shell string, run with bash -c */
    const char
        *shell_name; /* NULL = fresh shell; else [A-Za-z0-9_.-]{1,64}: keeps cwd
                               and exported env between commands; commands on one
                               named shell run one after the other (queued) */
    const char *cwd; /* NULL = shell's cwd (named) or /home/user */
    const char *const *env; /* NULL-terminated KEY=VAL extras, may be NULL */
    int stdout_fd; /* opened by the caller (e.g. O_WRONLY|O_APPEND file, 0600 root);
                               passed to the agent with SCM_RIGHTS; -1 = /dev/null */
    int stderr_fd; /* same; may equal stdout_fd */
    bool
        want_stdin; /* true: sandbox_exec_write_stdin/close_stdin feed it; false: /dev/null */
    /* Appended for PTY sessions: run on a new pseudo-terminal (stdin/stdout/
     * stderr fields ignored; fresh shell only).  sandbox_exec_pty_fd() returns the
     * master once sandbox_exec returned. */
    bool want_pty;
    uint16_t pty_cols; /* 1-1000 */
    uint16_t pty_rows; /* 1-1000 */
};

int sandbox_exec(struct sandbox *sb, const struct sb_exec *req,
                 struct sb_proc **out, char *err, size_t errlen);

/* Waits for the command's exit.  timeout_ms < 0 waits forever, 0 polls.
 * Returns 0 with *exit_status set (exit code, or 128+signal when killed),
 * -ETIMEDOUT, or -ESRCH if the sandbox died first (*exit_status = -1). */
int sandbox_exec_wait(struct sb_proc *p, int timeout_ms, int *exit_status);
/* When the agent could not run the command at all (bad cwd is NOT this:
 * that is exit status 1 with a message on stderr), sandbox_exec_wait reports
 * exit status 127 and this returns the agent's reason; else NULL. */
const char *sandbox_exec_error(const struct sb_proc *p);
/* Host-visible pid is not exposed; this is the pid inside the sandbox, 0 until started. */
int sandbox_exec_pid(const struct sb_proc *p);
/* The pty master of a want_pty command (owned by p; read/write the
 * terminal, TIOCSWINSZ to resize; reads fail with EIO once the command and
 * its children closed the terminal), or -1. */
int sandbox_exec_pty_fd(const struct sb_proc *p);
/* fd that becomes readable when sandbox_exec_wait(p, 0, ..) has news (for poll loops). */
int sandbox_exec_fd(const struct sb_proc *p);
/* Signals the command's process group.  -ESRCH once it exited. */
int sandbox_exec_kill(struct sb_proc *p, int sig);
/* Writes all of buf to the command's stdin; -EPIPE if it closed, -ETIMEDOUT
 * if it read nothing for 10 s (part of buf may have been written). */
int sandbox_exec_write_stdin(struct sb_proc *p, const void *buf, size_t len);
int sandbox_exec_close_stdin(struct sb_proc *p);
/* Frees the handle; a still-running command keeps running. */
void sandbox_exec_free(struct sb_proc *p);

/* Opens path inside the devbox root as the devbox's user (permissions as
 * inside; created files owned by sandbox_host_uid).  Relative paths are
 * relative to /home/user.  Resolution never leaves the root (openat2
 * RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV), so "..", absolute
 * symlinks and races cannot reach the host; paths on bind mounts (/usr,
 * /proc, /dev) are refused with -EXDEV.  Returns an O_CLOEXEC fd or -errno.
 * Works while the sandbox is running. */
int sandbox_open(struct sandbox *sb, const char *path, int flags, mode_t mode);
/* For a devbox with no sandbox whose disk was kept (read-only): opens
 * path, as sandbox_open resolves it, for reading from what the devbox
 * wrote (its writable layer on the disk under dir; files it only read
 * from its image are not there: -ENOENT).  The fd is O_NONBLOCK. */
int sandbox_open_kept(const char *dir, const char *path);

/* Connects to 127.0.0.1:port inside the devbox's network namespace (for
 * tunnels/port forwarding: devboxd then proxies bytes between a host client
 * and this socket).  Returns a connected O_CLOEXEC TCP socket or -errno
 * (-ECONNREFUSED when nothing listens there, -ETIMEDOUT after timeout_ms).
 * Never reaches the host's loopback. */
int sandbox_connect_tcp(struct sandbox *sb, uint16_t port, int timeout_ms);
/* A listening TCP socket on 127.0.0.1:port inside the devbox's network
 * namespace (privileged ports too: devboxd creates it), O_CLOEXEC, or
 * -errno.  For services devboxd starts inside (the PTY server, port 13). */
int sandbox_listen_tcp(struct sandbox *sb, uint16_t port);

struct sb_usage {
    uint64_t memory_bytes;      /* current, cgroup memory.usage_in_bytes */
    uint64_t memory_peak_bytes; /* memory.max_usage_in_bytes */
    uint64_t cpu_nanos;         /* cpuacct.usage */
    uint32_t pids;              /* pids.current */
    uint64_t oom_kills;         /* memory.oom_control oom_kill */
    uint64_t pids_denied; /* forks refused at pids_max (pids.events "max") */
};
int sandbox_usage(struct sandbox *sb, struct sb_usage *u);
/* sb_usage.oom_kills alone (one cgroup file instead of six); -ESRCH once
 * stopped. */
int sandbox_oom_kills(struct sandbox *sb, uint64_t *kills);

/* Stops every process of the devbox where it stands (frozen = true) or lets
 * them go on, so its files can be captured at one moment. Waits up to
 * timeout_ms for the kernel; on -ETIMEDOUT the devbox is thawed again.
 * -ENOTSUP without the cgroup freezer, -ESRCH once stopped. Thread-safe. */
int sandbox_freeze(struct sandbox *sb, bool frozen, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
