/* Root filesystem images devboxes run on: Runloop's public image names,
 * the default, and their directories from the image builder
 * (devboxd-image, built next to devboxd; see docs/devboxd.md "Images"). */
#ifndef DEVBOXD_IMAGES_H
#define DEVBOXD_IMAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Maps a blueprint_name in Runloop's "runloop/" namespace to one of our
 * images ("starter" or "universal").  Returns 1 and sets *image for a
 * known name, 0 when name is not in that namespace (a user blueprint), -1
 * with err set for an unknown "runloop/" name. */
int images_public_name(const char *name, const char **image, char *err,
                       size_t errlen);

/* Names devboxd gives its own images for deployments to ask for as a
 * blueprint_name ("runloop-mcp-browser" -> "browser"): 1 and *image set
 * for such a name, else 0.  A user blueprint of the same name wins. */
int images_builtin_name(const char *name, const char **image);

/* The image a devbox gets when its create names none: $RLMCP_DEVBOX_IMAGE,
 * default "starter". */
const char *images_default(void);
/* At devboxd's start, before any thread: sets images_default() (name
 * checked by images_check_default; NULL: "starter"). */
void images_set_default(const char *name);

/* 0 when name (the RLMCP_DEVBOX_IMAGE setting) names an image, else -1
 * with err naming the setting and the images there are. */
int images_check_default(const char *name, char *err, size_t errlen);

/* The root directory of image name (NULL = images_default()), building it
 * first when the machine-wide cache has none (minutes; progress lines go
 * to devboxd's stderr).  Sets *path (malloc'd) and returns
 * 0, or returns -1 with err set.  Thread-safe; concurrent callers wait for
 * one build. */
int images_path(const char *name, char **path, char *err, size_t errlen);

/* images_path that waits at most wait_ms (< 0: without bound): 1 with err
 * set to "the NAME image is being prepared (N%: stage)" when the build
 * goes on past that (it keeps going; a later call finds it or waits on).
 * Each image builds on a thread of its own, so a build holds up only the
 * devboxes that need that image.  A build that failed is tried again by
 * the next call. */
int images_wait(const char *name, int64_t wait_ms, char **path, char *err,
                size_t errlen);

/* Starts image name's build (NULL = images_default()) when it is neither
 * known to be built nor being built; returns at once. */
void images_prepare(const char *name);

/* Whether image name (NULL = images_default()) is being built now; then
 * msg says so as images_wait does.  Never blocks on a build. */
bool images_preparing(const char *name, char *msg, size_t len);

/* Whether image name (NULL = images_default()) is in the cache: never
 * builds.  Known at once once built or found; while not, asks the builder
 * whether another process built it at most every 5 s at first, the wait
 * doubling to one minute (between asks the answer is false). */
bool images_built(const char *name);

#endif
