/* Engine-wide admission caps: how many devboxes may run at once and how
 * much memory and CPU their limits may add up to, against the machine.
 * Set from the environment by devboxd/config.c (docs/devboxd.md "Limits"). */
#ifndef DEVBOXD_ADMISSION_H
#define DEVBOXD_ADMISSION_H

#include <stddef.h>

struct admission_caps {
    unsigned max_devboxes; /* RLMCP_MAX_DEVBOXES, default 256 */
    double max_memory_gb;  /* RLMCP_MAX_MEMORY_GB, default 8 x the machine's
                              memory */
    double max_cpus;       /* RLMCP_MAX_CPUS, default 32 x the machine's CPUs */
    /* Blueprint builds (docs/devboxd.md "Limits"). */
    unsigned max_builds;     /* RLMCP_MAX_BUILDS, default 2 at once */
    double build_memory_gb;  /* RLMCP_BUILD_MEMORY_GB, default 4 per build */
    double build_cpus;       /* RLMCP_BUILD_CPUS, default 1 per build */
    double build_timeout_s;  /* RLMCP_BUILD_TIMEOUT_S, default 3600 per build */
    double build_context_mb; /* RLMCP_BUILD_CONTEXT_MB, default 1024 unpacked */
    /* RLMCP_STATE_DISK_RESERVE_MB: kept free on the state filesystem for
     * records, logs and journals; 0 = 2% of it, 64 MiB to 1 GiB. */
    double state_reserve_mb;
    double build_disk_gb; /* RLMCP_BUILD_DISK_GB, default 20 per build */
};

/* Whether one more devbox with mem_gb/cpus limits fits beside n admitted
 * devboxes whose limits add up to used_mem_gb/used_cpus.  0, or -1 with err
 * naming the cap and how to raise it. */
int admission_check(const struct admission_caps *caps, unsigned n,
                    double used_mem_gb, double used_cpus, double mem_gb,
                    double cpus, char *err, size_t errlen);

/* Every refusal of admission_disk_check starts with this. */
#define ADMISSION_DISK_FULL "the engine's disk is full"

/* Whether `need` more bytes (what = "this devbox's disk", "this upload")
 * fit on the state filesystem holding state_dir beside `promised` bytes
 * the disks of existing devboxes may still claim (their sparse images'
 * holes) and the reserve.  0, or -1 with err naming the filesystem, its
 * free/needed figures and what frees space. */
int admission_disk_check(const struct admission_caps *caps,
                         const char *state_dir, unsigned long long promised,
                         unsigned long long need, const char *what, char *err,
                         size_t errlen);

#endif
