/* Internals of the sandbox runtime shared by sandbox*.c and its unit tests.
 * Not part of the API devboxd's other modules use (that is sandbox.h). */
#ifndef DEVBOXD_SANDBOX_INTERNAL_H
#define DEVBOXD_SANDBOX_INTERNAL_H

#include "sandbox.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>
#include <sys/types.h>

#define SB_INSIDE_UID 1000
#define SB_INSIDE_HOME "/home/user"
#define SB_ID_MAX 63
#define SB_SHELL_MAX 64
#define SB_MAX_LAYERS 64
#define SB_DEFAULT_PIDS 4096
#define SB_START_TIMEOUT_MS 10000
/* pid 1 (the agent) only goes when nothing else in its group can */
#define SB_AGENT_OOM_SCORE_ADJ -999
#define SB_SEND_TIMEOUT_MS                                                     \
    5000 /* an agent not reading its socket for this long is stuck */
#define SB_STAGE_DIR "/run/devboxd-stage"

/* Per-devbox directory layout (relative to spec->dir). */
#define SB_DIR_UPPER "upper" /* overlay upperdir: the devbox's writable layer */
#define SB_DIR_WORK "work"   /* overlay workdir */
#define SB_DIR_BASE "base" /* generated lowest layer: /etc files, mountpoints */
#define SB_FILE_UID "uid"  /* retired bubblewrap runtime: its single host uid */
#define SB_FILE_RANGE "uidrange" /* runc runtime: first host id of its range */

/* Each devbox owns SB_RANGE_SIZE host ids from SB_RANGE_BASE + k *
 * SB_RANGE_SIZE (k < SB_RANGE_SLOTS), all above the single uids the
 * retired bubblewrap runtime claimed (whose layers and dirs may remain). */
#define SB_RANGE_SIZE 65536u
#define SB_RANGE_BASE 1048576u
/* SB_RANGE_SLOTS and SB_CLAIMS_DIR: sandbox.h. */
#define SB_OCI_AGENT_FD                                                        \
    4 /* runc --preserve-fds: 3 = master, 4 = agent, 5 = ptyd */
#define SB_OCI_PTYD_FD 5

/* Controllers, in the order the runtime uses them. */
enum sb_ctl {
    SB_CG_MEMORY,
    SB_CG_PIDS,
    SB_CG_CPU,
    SB_CG_CPUACCT,
    SB_CG_FREEZER,
    SB_CG_N
};

struct sandbox_rt {
    char *state_dir;
    char *claims_dir;     /* SB_CLAIMS_DIR: shared by the machine's engines */
    uint32_t range_slots; /* runc ranges handed out (RLMCP_UID_RANGE_SLOTS) */
    char *agent_path;
    char *slirp_path;
    char *cgroup_root;
    char *cgroup_name;
    bool have_ctl[SB_CG_N];
    bool slirp_as_root; /* /dev/net/tun is root-only on this host */
    char *ptyd_path; /* devboxd-ptyd next to the agent, NULL when not built */
    char *runc_path;
    char *runc_root; /* <state_dir>/sandbox/runc: runc's --root */
    bool disk_on;    /* devbox disks are loop-mounted ext4 (sandbox_disk.c) */
};

extern struct sandbox_rt sandbox_rt; /* filled by sandbox_init */

/* Formats a message into err (if any) and returns rc (a negative errno). */
int sandbox_fs_err(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Validation (sandbox_fs.c). */
bool sandbox_fs_valid_id(const char *id);
bool sandbox_fs_valid_shell_name(const char *name);
bool sandbox_fs_valid_env(
    const char *kv); /* KEY=VAL, KEY [A-Za-z_][A-Za-z0-9_]* */
/* True when a path can be used as an overlay layer option value. */
bool sandbox_fs_valid_layer_path(const char *path);

/* Builds the overlay lowerdir option: layers (topmost first), base, then
 * the image when not NULL.
 * Returns a malloc'd string or NULL with err set. */
char *sandbox_fs_lowerdir(const char *const *layers, size_t n, const char *base,
                          const char *image, char *err, size_t errlen);

/* Maps an API path to one relative to the sandbox root: absolute paths lose
 * their leading '/', relative ones are prefixed with "home/user/".  Returns
 * malloc'd string, NULL on empty/NUL-free-violating/oversized input. */
char *sandbox_fs_root_relative(const char *path);

/* Per-devbox layout: creates dir, upper, work, base (mount points, the
 * home of uid/gid, /etc/hosts, hostname, resolv.conf; the image brings the
 * rest of /etc). */
int sandbox_fs_prepare_dir(const char *dir, const char *id, uid_t uid,
                           gid_t gid, char *err, size_t errlen);

/* Releases the host id claims a devbox dir records: its range, or the
 * single uid of a dir of the retired bubblewrap runtime. */
int sandbox_fs_uid_release(const char *dir);

/* rm -rf without following symlinks or crossing mounts. */
int sandbox_fs_remove_tree(const char *path);

/* cgroups (sandbox_cgroup.c). */
struct sb_cgroup {
    char *path[SB_CG_N]; /* NULL when that controller is missing */
};
int sandbox_cgroup_detect(void); /* fills sandbox_rt.have_ctl */
int sandbox_cgroup_create(struct sb_cgroup *cg, const char *id,
                          const struct sb_limits *lim, char *err,
                          size_t errlen);
/* Opens each group's cgroup.procs for writing (fds[i] = -1 when missing),
 * so a child can join with write() only (async-signal-safe). */
int sandbox_cgroup_open_procs(const struct sb_cgroup *cg, int fds[SB_CG_N]);
int sandbox_cgroup_kill_all(struct sb_cgroup *cg, int timeout_ms);
void sandbox_cgroup_remove(struct sb_cgroup *cg); /* rmdir + free paths */
void sandbox_cgroup_remove_parents(void); /* rmdir the (empty) parent groups */
uint64_t sandbox_cgroup_read_u64(const struct sb_cgroup *cg, enum sb_ctl c,
                                 const char *file);
uint64_t sandbox_cgroup_oom_kills(const struct sb_cgroup *cg);
int sandbox_cgroup_pids_current(const struct sb_cgroup *cg);
uint64_t sandbox_cgroup_pids_denied(const struct sb_cgroup *cg);
/* The CPUs a devbox runs on (its processes' affinity, so nproc inside
 * follows its size): ceil(cpu_millis / 1000) of devboxd's own, at least
 * one, consecutive from a place its id picks. false: no pinning (no CPU
 * limit, or the limit covers every CPU devboxd has). */
bool sandbox_cgroup_cpu_pick(const char *id, uint32_t cpu_millis,
                             cpu_set_t *set);
/* set as a cpuset list ("0,3"), for cpuset.cpus. */
void sandbox_cgroup_cpu_list(const cpu_set_t *set, char *buf, size_t len);
/* Freezes or thaws every task of the group and waits until the kernel
 * reports the state; -ENOTSUP without the freezer controller. */
int sandbox_cgroup_freeze(struct sb_cgroup *cg, bool frozen, int timeout_ms);
/* Kills what is left in the groups named id (a devboxd that was killed
 * leaves them, maybe frozen) and removes them: the number found, or -errno. */
int sandbox_cgroup_purge(const char *id);

/* Seccomp (sandbox_seccomp.c). */
struct cJSON;
struct cJSON *
sandbox_seccomp_oci(void); /* the same filter as OCI linux.seccomp */

/* runc runtime (sandbox_oci.c). */
struct sb_oci_conf {
    const char *id;
    const char *cgroup_name;
    uint32_t range; /* first host id */
    uint32_t uid;   /* who the agent and commands run as, inside */
    const char *user;
    const char *home;
    const char *const *env;
    bool with_ptyd;
    const char *cpus; /* cpuset.cpus list ("0,2"), or NULL for all */
    bool meminfo;     /* bind the generated meminfo over /proc/meminfo */
};
/* slirp4netns for the network namespace of process ns_pid (outbound
 * only, the host's loopback unreachable), run as uid where /dev/net/tun
 * allows; as for a devbox. */
struct sandbox_slirp {
    pid_t pid;
    int pidfd;
    int exit_w; /* closing it ends slirp4netns */
};
int sandbox_slirp_start(pid_t ns_pid, uid_t uid, struct sandbox_slirp *s,
                        char *err, size_t errlen);
void sandbox_slirp_stop(struct sandbox_slirp *s); /* also of a failed start */

int sandbox_oci_userns(uint32_t base); /* ids 0.. shown as base.. */
/* ids inside.. shown as base..: a layer owned by the range at inside,
 * mounted for the devbox whose range is base. */
int sandbox_oci_userns_map(uint32_t inside, uint32_t base);
int sandbox_oci_idmapped(const char *path, int userns_fd);
char *sandbox_oci_config(
    const struct sb_oci_conf *c); /* config.json text, malloc'd */

/* The tmpfs mounts devboxd makes for a runc devbox (detached, owned by
 * host root so their options show no host ids; roots handed to the
 * devbox's ids): the launcher's stage (bundle root dir "root" and the
 * generated meminfo), /dev, /dev/shm, /run and the agent's /run/devbox.
 * meminfo_fd: the generated /proc/meminfo (meminfo), else -1. */
#define SB_OCI_ROOT SB_STAGE_DIR "/root"
#define SB_OCI_MEMINFO "meminfo"
struct sandbox_oci_mounts {
    int stage;
    int dev;
    int shm;
    int run;
    int state;
};
int sandbox_oci_mounts(struct sandbox_oci_mounts *m, uint32_t range,
                       uint32_t uid, bool meminfo, int *meminfo_fd);
void sandbox_oci_mounts_close(struct sandbox_oci_mounts *m);
/* /proc/meminfo of a devbox whose memory limit is limit, from its memory
 * group's usage_in_bytes and memory.stat text; returns the length. */
size_t sandbox_oci_meminfo_text(char *buf, size_t len, uint64_t limit,
                                uint64_t usage, const char *stat);

/* Host id range claims (sandbox_fs.c): stable per devbox dir, unique
 * machine-wide (claims in claims_dir). */
int sandbox_fs_range_claim(const char *dir, const char *id, uint32_t *base,
                           char *err, size_t errlen);
/* runc runtime layout: base layer owned by the devbox's root (range), the
 * user's home and, for a user the image lacks, its passwd/group/sudoers
 * entries.  image: the image root (its /etc/passwd is read). */
int sandbox_fs_prepare_dir_oci(const char *dir, const char *id, uint32_t range,
                               const char *image, const char *user,
                               uint32_t uid, char *err, size_t errlen);
bool sandbox_fs_valid_user_name(const char *name);

/* Devbox disks (sandbox_disk.c).  The image of dir: "<dir>.img" (trailing
 * slashes dropped); -EINVAL for "/" or a relative dir. */
int sandbox_disk_image_path(const char *dir, char *buf, size_t len);
/* Releases the uid claims recorded on dir's disk, unmounts and deletes it;
 * 0 when dir has no disk. */
int sandbox_disk_destroy(const char *dir, char *err, size_t errlen);

/* Small file helpers. */
int sandbox_fs_write_file(int dirfd, const char *name, const char *data,
                          mode_t mode);
int sandbox_fs_read_small(const char *path, char *buf, size_t len);
/* Closes fd when it is open (>= 0). */
void sandbox_close_fd(int fd);
/* Closes both ends of a pipe or socketpair that are open; sets them -1. */
void sandbox_close_pair(int p[2]);

#endif
