/* Blueprint builds by buildah (the one builder): the
 * Dockerfile (buildah_dockerfile.h) is built with `buildah build --runtime
 * runc` in a store of the build's own on its build disk, FROM the
 * engine's images imported once per machine (devboxd-buildah-base) or
 * other blueprints' images (kept in the state dir's store,
 * <state>/buildah); the build's new layer becomes the blueprint's
 * layer and its image config (ENV, WORKDIR, USER, ENTRYPOINT) its record's.
 * Memory, CPU and process limits hold for buildah and every RUN step: all
 * run in the build's own cgroup.  Disk: buildah builds in a store of the
 * build's own on a disk of RLMCP_BUILD_DISK_GB (reading the images of the
 * state dir's store and the machine's), so a step cannot fill the state
 * filesystem.  RUN steps run in a user namespace whose
 * root is a host id range claimed for the build as for a devbox. */
#ifndef DEVBOXD_BLUEPRINT_BUILDAH_H
#define DEVBOXD_BLUEPRINT_BUILDAH_H

/* buildah's temp dirs: one per build, <root>/<id> (root-owned, 0711). */
#define BUILD_TMP_ROOT "/var/tmp/devboxd-buildah"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

struct blueprint_buildah_job {
    const char *id;  /* bpt_... */
    const char *dir; /* <state>/blueprints/<id> */
    const char *state_dir;
    const cJSON *params; /* the create body */
    int context_fd;      /* build_context archive (build_context.h), or -1 */
    uint64_t context_max_bytes;
    double memory_gb;
    double cpus;
    double disk_gb; /* the build disk (RLMCP_BUILD_DISK_GB) */
    /* Logs one line; says (1, err set) when the build must stop now. */
    void (*log)(void *ctx, const char *level, const char *msg);
    int (*should_stop)(void *ctx, char *err, size_t errlen);
    void *ctx;
    /* Results, owned by the job (blueprint_buildah_job_free). */
    cJSON *record; /* fields for the record: layers, env, image, ... */
    int killed; /* buildah was killed: its store needs blueprint_buildah_cleanup */
    int out_of_disk; /* failed at the build disk limit */
};

#define BUILDAH_PATH "/usr/bin/buildah"

/* 0 when buildah is installed, else -1 with err saying what to install. */
int blueprint_buildah_available(char *err, size_t errlen);
/* RLMCP_IMAGE_CACHE when unset. */
#define BLUEPRINT_BUILDAH_DEFAULT_IMAGE_CACHE "/var/cache/runloop-mcp/images"
/* At devboxd's start: the machine-wide image cache whose buildah store
 * builds read base images from (NULL: the default). */
void blueprint_buildah_set_image_cache(const char *dir);
/* The engine's blueprint records, as a build FROM another blueprint reads
 * them: the builder keeps no records of its own. */
struct blueprint_buildah_records {
    /* A copy of the newest built record named name (id NULL) or of id's
     * (name NULL), of id's in any status when any is set; NULL if none. */
    cJSON *(*find)(const char *id, const char *name, int any);
    /* Blueprint job_id builds on the built blueprint id from now on (its
     * layers stay while job_id builds): 0, or -1 when id is not built. */
    int (*depend)(const char *job_id, const char *id);
};
/* At devboxd's start: where FROM another blueprint finds it (without
 * them no blueprint is found). */
void blueprint_buildah_set_records(const struct blueprint_buildah_records *r);
/* Checks a create body's Dockerfile, FROM names and file_mounts without
 * building: 0, or -1 with err (a 400). Not under the registry lock. */
int blueprint_buildah_check(const cJSON *params, char *err, size_t errlen);
/* Builds; 0 with job->record set, or -1 after logging why. */
int blueprint_buildah_run(struct blueprint_buildah_job *job);
void blueprint_buildah_job_free(struct blueprint_buildah_job *job);
/* Removes buildah's working containers and their mounts from the state
 * dir's store (no build may run meanwhile). */
void blueprint_buildah_cleanup(const char *state_dir);
/* After a restart: removes what the interrupted build id left (its
 * processes and cgroups, its images, its temp dir). */
void blueprint_buildah_abandon(const char *state_dir, const char *id);
/* Forgets a deleted blueprint's image. */
void blueprint_buildah_forget(const char *state_dir, const cJSON *rec);

#endif
