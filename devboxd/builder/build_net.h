/* The network of one blueprint build: a user and network namespace of the
 * build's own, made once per build and joined by each of its RUN steps
 * (instead of a namespace and a bridge veth set up and torn down per step
 * by buildah's CNI network), with slirp4netns as a devbox has it: outbound
 * only, the host's loopback unreachable.  See docs/devboxd.md, "The
 * build's network". */
#ifndef DEVBOXD_BUILD_NET_H
#define DEVBOXD_BUILD_NET_H

#include <stddef.h>
#include <sys/types.h>

#include "sandbox_internal.h"

struct build_net {
    pid_t holder; /* our child, holding the namespaces (unreaped until
                   * build_net_stop: its pid names them) */
    struct sandbox_slirp slirp;
    char userns[64]; /* /proc/<holder>/ns/user */
    char netns[64];  /* /proc/<holder>/ns/net */
};

/* Makes the namespaces (user namespace root = host id range, in the
 * cgroups whose procs files are cg_fds, may be NULL) and starts
 * slirp4netns in them; 0, or -1 with err (and nothing left running). */
int build_net_start(struct build_net *n, uid_t range, const int *cg_fds,
                    char *err, size_t errlen);
/* Ends slirp4netns and the holder of a started n. */
void build_net_stop(struct build_net *n);

#endif
