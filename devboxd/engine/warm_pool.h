/* devboxd warm pool: sandboxes of the plain devbox (default image, size,
 * network and user; no layers, no environment) started ahead of time, so a
 * create that asks for nothing more is running as soon as its record is
 * saved. runc needs about 250 ms to start a container; the pool takes that
 * off the create path.
 *
 * Hot snapshots and blueprints: a create from a layer chain (otherwise
 * plain) makes that chain hot; the pool keeps one sandbox ahead on each of
 * the POOL_HOT_MAX chains last asked for (runc only: their layers are
 * mounted, not copied), so the next devbox from a snapshot starts as fast
 * as a plain one.  A chain that falls off the list, whose record is
 * deleted (warm_pool_forget_locked) or whose sandbox cannot start loses
 * its sandbox.
 *
 * An entry is a devbox id chosen ahead with its sandbox dir
 * (<state>/devboxes/<id>/sandbox) and, once started, its sandbox.  A create
 * claims an entry, ready or still starting, and takes its id; the boot
 * worker adopts the sandbox (waiting for a start in progress, which is
 * never slower than a start of its own: starts run one at a time).  The
 * pool then starts the next entry in the background.
 *
 * Size: $RLMCP_WARM_POOL (default 1, at most 8; 0 turns it off).  Entries
 * are not devboxes: they have no record, do not count against the
 * admission caps and are removed when devboxd stops; a devboxd killed with
 * entries standing leaves dirs without a devbox.json, removed at the next
 * start (engine_load).
 *
 * Locking: the pool's state is under eng->lock; its thread waits on
 * eng->changed. */
#ifndef DEVBOXD_WARM_POOL_H
#define DEVBOXD_WARM_POOL_H

#include <cjson/cJSON.h>
#include <stddef.h>

struct engine;
struct sandbox;

/* The most sandboxes RLMCP_WARM_POOL may ask for. */
#define WARM_POOL_MAX 8
/* Starts the pool's thread (size eng->settings.warm_pool; 0: nothing). After
 * engine_load. 0 or -1 with err. */
int warm_pool_start(struct engine *eng, char *err, size_t errlen);
/* At engine stop, after the boot workers ended: stops the thread and
 * removes every unclaimed entry. */
void warm_pool_stop(struct engine *eng);
/* eng->lock held. Whether spec is the plain devbox the pool starts and an
 * unclaimed entry exists: then claims it and copies its id (idlen >= 40). */
int warm_pool_claim_locked(struct engine *eng, const cJSON *spec, char *id,
                           size_t idlen);
/* eng->lock held. The record whose chain is layers is gone (deleted,
 * failed): no more sandboxes ahead on it. */
void warm_pool_forget_locked(struct engine *eng, const cJSON *layers);
/* eng->lock held. Pool sandboxes on a chain holding the layer at path
 * (starting, or started and not yet removed): they mount it, so it is
 * not freed under them. */
int warm_pool_refs_locked(struct engine *eng, const char *path);
/* eng->lock held. Gives back a claim whose devbox was never acknowledged:
 * 0, or 1 when the entry is gone (its start failed) and the caller removes
 * the devbox dir. */
int warm_pool_unclaim_locked(struct engine *eng, const char *id);
/* Boot worker, eng->lock not held: the sandbox of the entry claimed as id,
 * waiting while it starts; NULL when its start failed (the caller starts
 * one itself). The entry leaves the pool. */
struct sandbox *warm_pool_adopt(struct engine *eng, const char *id);
/* At engine_load, before the pool starts: removes devbox dirs without a
 * record (entries of a devboxd that did not stop, or creates that were
 * never acknowledged): their cgroups, disk, uid range and files. */
void warm_pool_remove_orphans(struct engine *eng);

#endif
