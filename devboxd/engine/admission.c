/* Engine-wide admission caps (admission.h). */
#define _GNU_SOURCE
#include "admission.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <unistd.h>

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
