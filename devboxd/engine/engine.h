/* devboxd engine: devbox and execution records, their state machines,
 * persistence under the state directory, and the sandbox runtime calls. */
#ifndef DEVBOXD_ENGINE_H
#define DEVBOXD_ENGINE_H

#include "admission.h"
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdint.h>

enum dbx_status {
    DBX_PROVISIONING,
    DBX_INITIALIZING,
    DBX_RUNNING,
    DBX_SUSPENDING,
    DBX_SUSPENDED,
    DBX_RESUMING,
    DBX_FAILURE,
    DBX_SHUTDOWN,
    DBX_QUEUED, /* provisioning_tier flex: waits for capacity, then provisions
                 */
    DBX_N_STATUS
};

enum exec_status { EXEC_QUEUED, EXEC_RUNNING, EXEC_COMPLETED };

const char *dbx_status_name(int status);
int dbx_status_parse(const char *name); /* -1 if unknown */
const char *exec_status_name(int status);
int exec_status_parse(const char *name);

struct sandbox;
struct idempotency_store;
struct sb_proc;
struct devbox;

struct execution {
    char id[40];
    struct devbox *box;
    char *command;
    char *command_id;
    char *shell_name;
    char *kind; /* "exec", "launch", "entrypoint" */
    int status;
    int exit_status; /* valid when completed */
    int attach_stdin;
    int killed;
    int oom_killed; /* SIGKILLed while the devbox's OOM-kill count rose */
    int64_t create_time_ms;
    int64_t end_time_ms;
    struct sb_proc *proc;
    int refs;
    struct execution *next; /* per devbox, newest first */
};

struct devbox {
    char id[40];
    cJSON
        *spec; /* normalised create body: name, metadata, launch_parameters… */
    int status;
    char *failure_reason;
    char *failure_message; /* why, in words (boot failures); view field
                              failure_message */
    char *shutdown_reason;
    int64_t create_time_ms;
    int64_t end_time_ms;
    cJSON *transitions;
    int64_t active_ms;       /* accumulated time in billed states */
    int64_t active_since_ms; /* 0 when not active */
    int64_t ttl_deadline_ms; /* 0 = none */
    int64_t last_activity_ms;
    int64_t idle_seconds; /* 0 = no idle policy */
    int idle_suspend;     /* on_idle: 1 suspend, 0 shutdown */
    int busy;             /* a lifecycle worker owns the sandbox */
    int cancel_boot;      /* BOOT_CANCEL_*: the boot worker stops early */
    int io_refs;          /* file API calls using sb; stops wait for 0 */
    uint64_t oom_kills;   /* OOM kills already reported in the logs */
    int oom_failed;       /* the memory limit failed the whole devbox */
    int refs;
    cJSON *tunnel; /* TunnelView or NULL (tunnels.c); removed at
                      shutdown/failure */
    int pooled;    /* given a warm sandbox at create (warm_pool.h) */
    int disk_kept; /* failed with its disk kept (read-only) for its files:
                      record field _disk_kept; a shutdown deletes it */
    struct sandbox *sb;
    struct execution *execs;
    struct execution *entrypoint;
    struct devbox *next; /* engine list, newest first */
};

/* Why a boot worker is told to stop before running (launch commands are
 * killed): a shutdown (the devbox ends shut down) or devboxd stopping (the
 * record keeps its status, so the next start boots it again). */
#define BOOT_CANCEL_SHUTDOWN 1
#define BOOT_CANCEL_STOP 2

/* What the engine and the modules below it take from devboxd's settings:
 * devboxd/config.c reads them once at start (devboxd --help, docs/devboxd.md
 * "Usage"), checked against their ranges.  Strings are borrowed for the
 * process's life. */
struct engine_settings {
    struct admission_caps caps;  /* RLMCP_MAX_*, RLMCP_BUILD_*,
                                   RLMCP_STATE_DISK_RESERVE_MB */
    double retention_days;       /* RLMCP_RECORD_RETENTION_DAYS */
    size_t retention_max;        /* RLMCP_RECORD_RETENTION_MAX */
    int warm_pool;               /* RLMCP_WARM_POOL: sandboxes started ahead */
    int eviction_notice_s;       /* RLMCP_EVICTION_NOTICE_S */
    const char *code_mount_base; /* RLMCP_CODE_MOUNT_BASE */
    int code_mount_timeout_s;    /* RLMCP_CODE_MOUNT_TIMEOUT_S */
    int pty_idle_ttl_s;          /* DEVBOXD_PTY_IDLE_TTL */
    int pty_ping_timeout_s;      /* DEVBOXD_PTY_PING_TIMEOUT */
    const char *image_cache;     /* RLMCP_IMAGE_CACHE */
    const char *devbox_image;    /* RLMCP_DEVBOX_IMAGE */
    const char *runc_path;       /* RLMCP_RUNC */
    const char *disk;            /* RLMCP_DEVBOX_DISK: loop | off */
    const char *uid_claims_dir;  /* RLMCP_UID_CLAIMS_DIR */
    unsigned uid_range_slots;    /* RLMCP_UID_RANGE_SLOTS */
};

struct engine {
    char *state_dir;
    char *api_key;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct devbox *boxes;
    int stopping;
    pthread_t timer;
    int timer_started;
    int sandbox_ready;
    int exec_threads; /* live execution waiter threads */
    struct idempotency_store
        *idem; /* x-request-id answers (rest/idempotency.c); NULL: none */
    struct engine_settings settings; /* from engine_init */
    struct admission_caps caps;      /* settings.caps */
    /* Services outside the engine (the MCP hub, net/mcphub.c) told when a
     * devbox's sandbox started (boot or resume) or stopped; set by main,
     * NULL: none. */
    void (*on_sandbox_start)(struct engine *eng, struct devbox *box,
                             struct sandbox *sb);
    void (*on_sandbox_stop)(const char *box_id);
    struct warm_pool
        *pool; /* sandboxes started ahead (warm_pool.h); NULL: none */
    /* Retention of ended devboxes' records (retention.h). */
    int64_t retain_ms;
    size_t retain_max;
};

/* set: the settings, checked by devboxd/config.c (copied). */
int engine_init(struct engine *eng, const char *state_dir,
                const struct engine_settings *set, char *err, size_t errlen);
/* Loads every record and restarts what was running. */
int engine_load(struct engine *eng, char *err, size_t errlen);
void engine_fini(struct engine *eng);

/* All engine_* calls below take eng->lock themselves unless noted. */
struct devbox *engine_find_locked(struct engine *eng, const char *id);
/* Lock held.  Whether need more bytes fit on the state filesystem beside
 * what the devbox disks may still claim and the reserve (admission.h):
 * 0, or -1 with err starting ADMISSION_DISK_FULL (answer 507). */
int engine_state_room_locked(struct engine *eng, unsigned long long need,
                             const char *what, char *err, size_t errlen);
/* What is wrong with a devbox's disk, as an HTTP status and words in err:
 * 423 when it is read-only (a storage error), 507 when a write failed
 * (rc -ENOSPC/-EDQUOT/-EIO, of len bytes) because the engine's state
 * filesystem is full (the devbox's disk had room for them) or, else, the
 * devbox's own disk is; 0 when none of these.  rc is 0 to ask before an
 * operation. */
int engine_disk_trouble(struct engine *eng, const struct devbox *box, int rc,
                        unsigned long long len, char *err, size_t errlen);
/* A request holding a devbox it looked up takes box->refs (under the lock)
 * and gives it back with this: retention never frees a held devbox. */
void engine_box_unref_locked(struct engine *eng, struct devbox *box);
/* Frees a devbox no list or thread refers to any more. */
void engine_box_free(struct devbox *box);
/* Starts a devbox from a validated spec (consumed). *view receives its
 * view as created (status provisioning), taken before the boot can run.
 * NULL with err set when the admission caps refuse it (err empty: out of
 * memory). */
struct devbox *engine_create(struct engine *eng, cJSON *spec, cJSON **view,
                             char *err, size_t errlen);
cJSON *engine_box_view_locked(struct devbox *box);
struct sb_limits;
/* A create spec's limits (resource size or custom values, else the
 * defaults) and network (enum sb_network). */
void engine_spec_limits(const cJSON *spec, struct sb_limits *lim, double *cpus,
                        double *mem_gb, double *disk_gb);
int engine_spec_network(const cJSON *spec);
/* Starts the sandbox of devbox id from its spec (the caller's, read
 * without eng->lock): image, disk, layers, limits, environment, user.
 * log_box (may be NULL) receives retried starts in its log. 0 and *out,
 * or -1 with err set. */
int engine_sandbox_start(struct engine *eng, const char *id, const cJSON *spec,
                         struct devbox *log_box, struct sandbox **out,
                         char *err, size_t errlen);
int engine_save_locked(struct engine *eng, struct devbox *box);
/* Returns the result of saving the record (0, or -1 with util_write_error
 * set): the change itself is made either way. */
int engine_set_status_locked(struct engine *eng, struct devbox *box, int status,
                             const char *failure_reason,
                             const char *shutdown_reason);
/* Lifecycle: 0, or an HTTP status with a message in err. */
int engine_suspend(struct engine *eng, struct devbox *box, char *err,
                   size_t errlen);
int engine_resume(struct engine *eng, struct devbox *box, char *err,
                  size_t errlen);
/* reason: the shutdown_reason to record (api_shutdown, entrypoint_exit…). */
int engine_shutdown(struct engine *eng, struct devbox *box, const char *reason,
                    char *err, size_t errlen);
/* Waits (lock held, released while waiting) until pred or the deadline. */
/* Erases secret values and MCP Hub credentials from the records of ended
 * devboxes (a secret or MCP config was deleted); takes eng->lock. */
void engine_forget_ended_secrets(struct engine *eng);
int engine_wait_locked(struct engine *eng, int64_t deadline_ms);
void engine_touch_locked(struct devbox *box);
/* Lease renewal (devboxd's extension): the lifetime ends `seconds` from
 * now; saved. 0, an HTTP status with a message in err, or 507 when the
 * record could not be saved (util_write_error() says why). */
int engine_renew_locked(struct engine *eng, struct devbox *box, int64_t seconds,
                        char *err, size_t errlen);
/* When the lifetime of a devbox that counts one ends (ms), else 0. */
int64_t engine_lifetime_end_locked(const struct devbox *box);

/* Executions. */
char *engine_exec_dir(struct engine *eng, const char *box_id);
struct execution *engine_exec_find_locked(struct devbox *box, const char *eid);
struct execution *engine_exec_by_command_id_locked(struct devbox *box,
                                                   const char *cid);
/* Runs one command in a booting devbox to completion (as the command user,
 * logged under kind); returns its exit status, or -1 with err. */
int engine_run_boot_command(struct engine *eng, struct devbox *box,
                            const char *cmd, const char *kind, char *err,
                            size_t errlen);
struct execution *engine_exec_start(struct engine *eng, struct devbox *box,
                                    const char *command, const char *shell_name,
                                    const char *command_id, int attach_stdin,
                                    const char *kind, char *err, size_t errlen);
void engine_exec_unref_locked(struct execution *ex);
/* Frees an execution no thread holds any more (no locks taken). */
void engine_exec_free(struct execution *ex);
/* Writes the execution's record (engine_exec_output_path "json"): 0, or -1
 * with util_write_error set. */
int engine_exec_save(struct engine *eng, struct execution *ex);
/* How a completed execution ended: "out_of_memory", "killed" or "exit". */
const char *engine_exec_ended_by(const struct execution *ex);
cJSON *engine_exec_view_locked(struct engine *eng, struct execution *ex,
                               int last_n);
/* Path of an execution's record ("json") or output file ("stdout"/"stderr",
 * on the devbox's disk: gone once the devbox ended). */
void engine_exec_output_path(struct engine *eng, struct execution *ex,
                             const char *which, char *out, size_t outlen);
int engine_exec_kill(struct engine *eng, struct execution *ex);
int engine_exec_stdin(struct engine *eng, struct execution *ex,
                      const char *text, size_t len, int eof, int interrupt,
                      char *err, size_t errlen);
/* Devbox log entries (JSON lines) appended under the devbox dir. */
void engine_log_locked(struct engine *eng, struct devbox *box,
                       const char *source, const char *level,
                       const char *message, struct execution *ex,
                       int exit_code);
char *engine_box_dir(struct engine *eng, const char *box_id);
/* The sandbox runtime's dir of a devbox (its disk's mount point). */
char *engine_sandbox_dir(struct engine *eng, const char *box_id);

/* Reads the last n lines of a file (bounded); *truncated set when cut. */
char *engine_tail(const char *path, int last_n, int *truncated);

#endif
