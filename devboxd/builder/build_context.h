/* devboxd blueprint build contexts: a create body's
 * `build_context: {type: "object", object_id}` names a completed storage
 * object holding a tar or tar.gz archive, unpacked into the build's context
 * directory for COPY/ADD (beside file_mounts). The archive is read with
 * libarchive and checked whole at create, so bad input is a 400: every
 * entry stays inside the context (no absolute names, no "..", no symlink
 * or hard link leading out), only files, directories and links, at most
 * RLMCP_BUILD_CONTEXT_MB unpacked and BUILD_CONTEXT_MAX_ENTRIES entries.
 * See docs/devboxd.md "Build context". */
#ifndef DEVBOXD_BUILD_CONTEXT_H
#define DEVBOXD_BUILD_CONTEXT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define BUILD_CONTEXT_MAX_ENTRIES 100000

/* Opens the bytes of the storage object id (the engine's): an fd, or -1
 * with err saying why. */
typedef int (*build_context_open_fn)(void *ud, const char *id, char *err,
                                     size_t errlen);
/* Checks body's build_context and opens its object with open_object(ud,
 * ...): 0 with *fd the object's bytes (-1 when the body has no
 * build_context), or -1 with err naming what to fix (a 400). max_bytes
 * bounds the unpacked size. */
int build_context_open(const cJSON *body, uint64_t max_bytes,
                       build_context_open_fn open_object, void *ud, int *fd,
                       char *err, size_t errlen);
/* Unpacks the archive at fd into the directory dir (which exists), with the
 * checks of build_context_open again: 0, or -1 with err. */
int build_context_unpack(int fd, const char *dir, uint64_t max_bytes, char *err,
                         size_t errlen);
/* Writes data to the file rel (relative, made of plain names) under the
 * context directory dir, creating missing directories and following no
 * symlink on the way (an archive's link cannot redirect a file_mounts
 * write): 0, or -1 with err. */
int build_context_write(const char *dir, const char *rel, const char *data,
                        char *err, size_t errlen);
/* Whether an archive entry's name stays inside the context: 0, or -1. */
int build_context_name_ok(const char *name);
/* Whether a symlink at name pointing to target stays inside: 0, or -1. */
int build_context_link_ok(const char *name, const char *target);

#endif
