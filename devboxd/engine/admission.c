/* Engine-wide admission caps (admission.h). */
#define _GNU_SOURCE
#include "admission.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* A positive number from the environment, or def when unset. */
static int env_number(const char *name, double def, double *out, char *err,
                      size_t errlen)
{
    const char *v = getenv(name);
    char *end = NULL;
    double x;

    *out = def;
    if (v == NULL || v[0] == '\0')
        return 0;
    errno = 0;
    x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !isfinite(x) || x <= 0 ||
        x > 1e9) {
        snprintf(err, errlen, "%s must be a positive number, got \"%.40s\"",
                 name, v);
        return -1;
    }
    *out = x;
    return 0;
}

int admission_caps_init(struct admission_caps *caps, char *err, size_t errlen)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double machine_gb =
        pages > 0 && page > 0 ? (double)pages * (double)page / 1073741824.0 : 4;
    double n = 0;

    /* Limits are ceilings, not reservations: idle devboxes use little, so
     * the defaults overcommit, but not without bound. */
    if (env_number("RLMCP_MAX_DEVBOXES", 256, &n, err, errlen) != 0 ||
        env_number("RLMCP_MAX_MEMORY_GB", 8 * machine_gb, &caps->max_memory_gb,
                   err, errlen) != 0 ||
        env_number("RLMCP_MAX_CPUS", 32.0 * (cpus > 0 ? (double)cpus : 1),
                   &caps->max_cpus, err, errlen) != 0)
        return -1;
    caps->max_devboxes = n < 1 ? 1 : (unsigned)n;
    /* A build runs what the blueprint says, unattended: bounded so a
     * runaway step cannot hold the machine's memory and cores or a slot. */
    if (env_number("RLMCP_MAX_BUILDS", 2, &n, err, errlen) != 0 ||
        env_number("RLMCP_BUILD_MEMORY_GB", 4, &caps->build_memory_gb, err,
                   errlen) != 0 ||
        env_number("RLMCP_BUILD_CPUS", 1, &caps->build_cpus, err, errlen) !=
            0 ||
        env_number("RLMCP_BUILD_TIMEOUT_S", 3600, &caps->build_timeout_s, err,
                   errlen) != 0 ||
        env_number("RLMCP_BUILD_CONTEXT_MB", 1024, &caps->build_context_mb, err,
                   errlen) != 0 ||
        env_number("RLMCP_BUILD_DISK_GB", 20, &caps->build_disk_gb, err,
                   errlen) != 0)
        return -1;
    /* A build disk holds buildah's store and what the steps write: a
     * sparse ext4 file, so the default costs only what a build uses. */
    if (caps->build_disk_gb < 0.25) {
        snprintf(err, errlen,
                 "RLMCP_BUILD_DISK_GB is too small: give at least 0.25 "
                 "(256 MiB)");
        return -1;
    }
    caps->max_builds = n < 1 ? 1 : (unsigned)n;
    caps->state_reserve_mb = 0;
    if (getenv("RLMCP_STATE_DISK_RESERVE_MB") != NULL &&
        env_number("RLMCP_STATE_DISK_RESERVE_MB", 0, &caps->state_reserve_mb,
                   err, errlen) != 0)
        return -1;
    /* Below these a limit would round to 0, which means none at all. */
    if (caps->build_memory_gb < 0.0625 || caps->build_cpus < 0.01) {
        snprintf(err, errlen, "%s is too small: give at least %s",
                 caps->build_cpus < 0.01 ? "RLMCP_BUILD_CPUS"
                                         : "RLMCP_BUILD_MEMORY_GB",
                 caps->build_cpus < 0.01 ? "0.01 (CPUs)" : "0.0625 (64 MiB)");
        return -1;
    }
    return 0;
}

int admission_check(const struct admission_caps *caps, unsigned n,
                    double used_mem_gb, double used_cpus, double mem_gb,
                    double cpus, char *err, size_t errlen)
{
    if (n + 1 > caps->max_devboxes) {
        snprintf(err, errlen,
                 "too many devboxes: %u are running or starting, the engine "
                 "admits %u "
                 "(RLMCP_MAX_DEVBOXES); shut one down or raise the cap",
                 n, caps->max_devboxes);
        return -1;
    }
    if (used_mem_gb + mem_gb > caps->max_memory_gb + 1e-9) {
        snprintf(err, errlen,
                 "not enough memory: running devboxes are allowed %.1f GiB, "
                 "this one asks %.1f GiB, "
                 "the engine admits %.1f GiB in all (RLMCP_MAX_MEMORY_GB); ask "
                 "for a smaller "
                 "resource_size_request, shut one down or raise the cap",
                 used_mem_gb, mem_gb, caps->max_memory_gb);
        return -1;
    }
    if (used_cpus + cpus > caps->max_cpus + 1e-9) {
        snprintf(
            err, errlen,
            "not enough CPU: running devboxes are allowed %.1f CPUs, this one "
            "asks %.1f, the "
            "engine admits %.1f in all (RLMCP_MAX_CPUS); ask for a smaller "
            "resource_size_request, shut one down or raise the cap",
            used_cpus, cpus, caps->max_cpus);
        return -1;
    }
    return 0;
}

/* The reserve: configured, else 2% of the filesystem within 64 MiB-1 GiB. */
static unsigned long long reserve_bytes(const struct admission_caps *caps,
                                        const struct statvfs *vfs)
{
    unsigned long long total =
        (unsigned long long)vfs->f_blocks * (unsigned long long)vfs->f_frsize;
    unsigned long long r = total / 50;

    if (caps->state_reserve_mb > 0)
        return (unsigned long long)(caps->state_reserve_mb * 1048576.0);
    if (r < (64ULL << 20))
        r = 64ULL << 20;
    if (r > (1ULL << 30))
        r = 1ULL << 30;
    return r;
}

int admission_disk_check(const struct admission_caps *caps,
                         const char *state_dir, unsigned long long promised,
                         unsigned long long need, const char *what, char *err,
                         size_t errlen)
{
    struct statvfs vfs;
    unsigned long long avail;
    unsigned long long reserve;

    /* Unknown free space admits: the write itself then answers. */
    if (statvfs(state_dir, &vfs) != 0)
        return 0;
    avail = (unsigned long long)vfs.f_bavail * (unsigned long long)vfs.f_frsize;
    reserve = reserve_bytes(caps, &vfs);
    if (avail >= promised + need + reserve)
        return 0;
    snprintf(err, errlen,
             ADMISSION_DISK_FULL
             ": devboxd's state filesystem (%s) has "
             "%llu MiB free, %llu MiB of it promised to the disks of existing "
             "devboxes and %llu MiB kept in reserve "
             "(RLMCP_STATE_DISK_RESERVE_MB); %s needs %llu MiB. Free space "
             "there: shut down or delete devboxes you no longer need, delete "
             "snapshots and storage objects, or ask for a smaller "
             "custom_disk_size",
             state_dir, avail >> 20, promised >> 20, reserve >> 20, what,
             (need + (1ULL << 20) - 1) >> 20);
    return -1;
}
