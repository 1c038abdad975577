/* The build cache of RUN --mount=type=cache: one per owner (an engine's
 * state dir; its API key is its one user), kept between builds under
 * BUILD_CACHE_ROOT/<owner>, a dir only the host's root and the running
 * build's root may enter.  buildah 1.28 puts cache <id> at
 * $TMPDIR/buildah-cache/<id> (TMPDIR is the build's temp dir): that path
 * leads to the owner's cache, each id made beforehand with its owner in
 * the build's host id range (buildah would make it host root's, which the
 * step's root cannot write).  The cache's files carry the host ids of the
 * last build that used it; a build with another range moves them to its
 * own first.  One build at a time holds an owner's cache; another one
 * meanwhile starts from an empty cache of its own (a cache may be empty at
 * any build). */
#ifndef DEVBOXD_BUILD_CACHE_H
#define DEVBOXD_BUILD_CACHE_H

#include <stddef.h>
#include <sys/types.h>

#include "build_flags.h"

#define BUILD_CACHE_ROOT "/var/tmp/devboxd-buildah/cache"

/* Makes tmp/buildah-cache lead to the cache of state_dir's owner with
 * every id of caches.  Returns 0 with *lock (an fd to close when the build
 * ends, -1 when none is held) and note (a line for the build log, may be
 * empty), or -1 with err. */
int build_cache_open(const char *state_dir, const char *tmp, uid_t range,
                     const struct build_flags_caches *caches, int *lock,
                     char *note, size_t notelen, char *err, size_t errlen);

#endif
