/* The runtime a sandbox runs under: runc (sandbox_runc.c).  sandbox.c's
 * lifecycle calls these in order: init once; then per devbox create,
 * start (whose agent channel, sb->master, is where sandbox_exec hands
 * commands over), freeze/thaw while it runs, kill at its stop, delete of
 * what runc keeps of a container.  Errors as in sandbox.h. */
#ifndef DEVBOXD_SANDBOX_RUNC_H
#define DEVBOXD_SANDBOX_RUNC_H

#include "sandbox.h"

#include <stdbool.h>
#include <stddef.h>

struct sandbox;
struct sb_cgroup;

/* runc present (rt->runc_path, default /usr/sbin/runc), its state under
 * <sbdir>/runc, user namespaces available. */
int sandbox_runc_init(const struct sb_runtime *rt, const char *sbdir, char *err,
                      size_t errlen);
/* The devbox's host id range (sb->range, sb->uid), its dir's layout and
 * its root overlay (sb->rootfd): its layers over an idmapped view of the
 * image. */
int sandbox_runc_create(struct sandbox *sb, const struct sb_spec *spec,
                        char *err, size_t errlen);
/* Writes the bundle and runs the container in the cgroups sb->cg (made
 * by the caller): returns once the agent said hello (sb->master,
 * sb->init_pid/pidfd, sb->launcher_pid/pidfd set).  Bounded: fails after
 * SB_START_TIMEOUT_MS, with what runc said. */
int sandbox_runc_start(struct sandbox *sb, const struct sb_spec *spec,
                       char *err, size_t errlen);
/* Freezes or thaws every process of the group (cg holds the freezer's
 * path); a freeze that times out is undone. */
int sandbox_runc_freeze(struct sb_cgroup *cg, bool frozen, int timeout_ms);
/* Ends the container: pid 1 (init_pidfd), runc (reaped), then whatever
 * is left in cg. */
void sandbox_runc_kill(struct sandbox *sb, int init_pidfd,
                       struct sb_cgroup *cg);
/* Removes runc's state of container id (one that ran before, or whose
 * runc was killed with devboxd). */
void sandbox_runc_delete(const char *id);
/* Usage figures from the devbox's groups; the caller holds sb->lock. */
void sandbox_runc_stats(const struct sandbox *sb, struct sb_usage *u);

#endif
