/*
 * fsops.h - file operations run as short scripts on the devbox (the API
 * has no endpoint for them): list a directory, remove, and the rename that
 * makes write_file atomic.
 */
#ifndef RLMCP_FILES_FSOPS_H
#define RLMCP_FILES_FSOPS_H

#include <stdbool.h>

#include "rlmcp/plugin.h"
#include "rlmcp_helpers.h"

/* Exit statuses the scripts use. */
#define FS_MISSING 3
#define FS_NOT_EMPTY 5 /* fs_remove_script writes it as "exit 5" */
#define FS_ROOT 6

/*
 * Run script on the devbox and wait (about a minute at most) until it
 * completed; *view_out is the execution view. Failures are reported.
 */
int fs_run_script(const struct rlmcp_h *h, const char *id, const char *script,
                  const char *what, cJSON **view_out);
int fs_exit_status(const cJSON *view);
const char *fs_text(const cJSON *view, const char *which);

/* path as the API resolves it: absolute, or under /home/user. malloc'd. */
char *fs_resolved(const char *path);

/* not_found for a path, with a remedy about the path. */
int fs_fail_missing(const struct rlmcp_h *h, const char *what,
                    const char *path);

/* The scripts (malloc'd). */
char *fs_list_script(const char *path, long long max_entries);
char *fs_remove_script(const char *path, bool recursive);
/* user (may be NULL): the file's owner, with that user's login group; the
 * contents were then written to stage (in the default user's home), else
 * to tmp. */
char *fs_commit_script(const char *tmp, const char *path, const char *mode,
                       const char *user, const char *stage);

/* list_files' result from its script's view; NULL when malformed. */
cJSON *fs_list_result(const cJSON *view, long long max_entries);

#endif
