/* The flags of a Dockerfile instruction (RUN --mount=..., COPY --from=...,
 * FROM --platform=...), checked before buildah sees them.  buildah 1.28
 * (Debian 12's) joins a cache mount's id to its cache directory unchecked
 * (CVE-2024-9675: id=../../.. is the host's /) and follows symlinks of a
 * bind mount's source on the host (CVE-2024-1753), so a flag passes only
 * in a form known to stay inside the build, and is emitted again in a
 * canonical form of our own: buildah never parses the user's text of it.
 *
 * Allowed: RUN --mount of type cache (id a plain name, kept in the
 * owner's build cache), bind (a path in the build context, read-only) and
 * tmpfs; COPY --from=<earlier stage>, --chown, --chmod; ADD --chown,
 * --chmod; FROM --platform; HEALTHCHECK's timing flags.  Everything else
 * (--network, --security, secret and ssh mounts, from= on a mount, a
 * variable, a quote or a backslash in a flag) is refused. */
#ifndef DEVBOXD_BUILD_FLAGS_H
#define DEVBOXD_BUILD_FLAGS_H

#include <stddef.h>

/* A cache mount of the build: the engine makes <cache dir>/<id> before
 * buildah runs, owned by uid:gid of the build's user namespace. */
struct build_flags_cache {
    char *id;
    unsigned uid, gid, mode;
};

struct build_flags_caches {
    struct build_flags_cache *v;
    size_t n;
};

/* The stages before the instruction's: aliases[i] is stage i's AS name or
 * NULL; n is how many (the instruction's own stage is index n). */
struct build_flags_stages {
    char *const *aliases;
    size_t n;
};

/* kw: the instruction (any case); args: its text after the keyword with
 * continuation lines joined.  Returns 0 with *canon (malloc'd, the flags
 * to emit, "" when none) and *rest (into args: what follows the flags,
 * no leading space), or -1 with err "line N: ..." saying what is allowed.
 * Cache mounts are added to caches (may be NULL). */
int build_flags_check(const char *kw, const char *args, int line,
                      const struct build_flags_stages *stages,
                      struct build_flags_caches *caches, char **canon,
                      const char **rest, char *err, size_t errlen);

void build_flags_caches_free(struct build_flags_caches *c);

/* A byte Go's unicode.IsSpace takes as a space when buildah reads a byte
 * as a rune (0x85 and 0xa0 too): where buildah ends a flag word. */
int build_flags_is_space(unsigned char c);

#endif
