/* devboxd mounts: the files a devbox create asks for (`mounts` of type
 * file_mount and object_mount, `file_mounts`), written into the devbox at
 * each boot, before its launch commands. */
#ifndef DEVBOXD_MOUNTS_H
#define DEVBOXD_MOUNTS_H

#include <stddef.h>

#include "engine.h"

/* Writes every mount of box's spec into its running sandbox: 0, or -1 with
 * err naming the mount that failed. */
int mounts_write(struct engine *eng, struct devbox *box, char *err,
                 size_t errlen);

#endif
