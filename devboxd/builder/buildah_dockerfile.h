/* The Dockerfile buildah builds for a blueprint: the user's Dockerfile with
 * each FROM resolved to a local image (the engine's images by Runloop's
 * public names, other blueprints by id or name), heredocs turned into
 * forms buildah 1.28 runs, COPY/ADD sources checked to stay in the build
 * context, file_mounts copied in after the last FROM and
 * system_setup_commands appended as RUN steps.  A stage FROM an earlier
 * stage gets that stage's steps in place of the FROM (one layer per build
 * over an image: buildah 1.28 cannot run a step, in a user namespace, on an
 * image it built in one).  Every instruction's flags are checked and
 * emitted in a form of our own (build_flags.h), each instruction on one
 * line. */
#ifndef DEVBOXD_BUILDAH_DOCKERFILE_H
#define DEVBOXD_BUILDAH_DOCKERFILE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "build_flags.h"

/* Maps a FROM name (without "runloop:"; NULL = the base a blueprint without
 * a Dockerfile builds on) to the name buildah builds FROM.  Returns 0 with
 * *local set (malloc'd), or -1 with err naming what to change. */
typedef int (*buildah_dockerfile_resolve_fn)(void *ctx, const char *name,
                                             char **local, char *err,
                                             size_t errlen);

/* Where the builder puts code_mounts[i] as a git bundle, <i>.bundle, in
 * the build context. */
/* The longest Dockerfile a create may give. */
#define BD_DOCKERFILE_MAX (256u * 1024u)
#define BD_CODE_DIR ".devboxd-code"

struct buildah_dockerfile_step {
    int stage;     /* 0-based stage of the emitted Dockerfile */
    int line;      /* Dockerfile line, 0 for steps the engine adds */
    int user_step; /* 1-based number among the user's steps, 0 = added/FROM */
    int setup;     /* index into system_setup_commands + 1, else 0 */
    char *text;    /* the instruction as the user wrote it */
    char *emit;    /* what buildah gets for it */
    int inherited; /* a copy of a step of the earlier stage this one is FROM */
};

struct buildah_dockerfile_out {
    char *text;   /* the Dockerfile to build */
    cJSON *files; /* {context path: content}: file_mounts and heredocs */
    struct buildah_dockerfile_step *steps;
    size_t n_steps;
    int user_steps;   /* how many steps the user wrote (FROMs not counted) */
    char *final_from; /* the final stage's base as resolved (not an alias) */
    struct build_flags_caches
        caches; /* RUN --mount=type=cache ids, for the builder */
};

/* params: the blueprint create body (dockerfile, file_mounts,
 * system_setup_commands, base_blueprint_id/name).  0, or -1 with err
 * naming the line and what to change. */
int buildah_dockerfile_prepare(const cJSON *params,
                               buildah_dockerfile_resolve_fn resolve, void *ctx,
                               struct buildah_dockerfile_out *out, char *err,
                               size_t errlen);
void buildah_dockerfile_free(struct buildah_dockerfile_out *out);
/* The steps of stage `stage` in order: *first index into out->steps and
 * how many there are. */
size_t buildah_dockerfile_stage_steps(const struct buildah_dockerfile_out *out,
                                      int stage, size_t *first);

#endif
