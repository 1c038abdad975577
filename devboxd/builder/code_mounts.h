/* devboxd code mounts: the legacy `code_mounts: [{repo_name, repo_owner,
 * token?, install_command?}]` of devbox and blueprint create. Runloop
 * clones github.com/<owner>/<name>; devboxd clones
 * $RLMCP_CODE_MOUNT_BASE/<owner>/<name> (default https://github.com) on
 * the host, as nobody, into a git bundle (bounded by
 * RLMCP_CODE_MOUNT_TIMEOUT_S), which the devbox or the build then clones
 * with its own git into /home/user/<repo_name>. The token reaches only the
 * host's git, in its environment (never argv, logs or the devbox). See
 * docs/devboxd.md "Code mounts". */
#ifndef DEVBOXD_CODE_MOUNTS_H
#define DEVBOXD_CODE_MOUNTS_H

#include <cjson/cJSON.h>
#include <stddef.h>

#define CODE_MOUNTS_MAX 16
/* RLMCP_CODE_MOUNT_BASE and RLMCP_CODE_MOUNT_TIMEOUT_S when unset. */
#define CODE_MOUNTS_DEFAULT_BASE "https://github.com"
#define CODE_MOUNTS_DEFAULT_TIMEOUT_S 600

/* Checks a create body's `code_mounts` (absent, null or a list): 0, or -1
 * with err naming the field and what to send. */
int code_mounts_check(const cJSON *body, char *err, size_t errlen);
/* The URL a mount clones: <base>/<owner>/<name> (malloc'd, no token). */
char *code_mounts_url(const cJSON *mount);
/* Says (1, with why) that a clone must end now: its build or devbox boot
 * was cancelled. */
typedef int (*code_mounts_stop_fn)(void *ctx, char *why, size_t whylen);

/* Clones mount's repository into a git bundle at out (written by root,
 * 0600), checking stop (may be NULL) every second: 0, or -1 with err (the
 * URL and git's last line). */
int code_mounts_bundle(const cJSON *mount, const char *out,
                       code_mounts_stop_fn stop, void *stop_ctx, char *err,
                       size_t errlen);
/* At devboxd's start: sets where clones come from (base, NULL: the
 * default) and how long one may take (timeout s, 0: the default), names
 * this state dir's clone dirs and removes the clone dirs and bundles a
 * killed devboxd left behind. */
void code_mounts_init(const char *state_dir, const char *base, int timeout);
/* The shell script that clones the bundle at `bundle` into
 * <home>/<repo_name> (home: shell text, e.g. "\"$HOME\"") with the origin
 * set to the mount's URL, then runs its install_command there; nothing
 * when the directory exists (a resume). malloc'd. */
char *code_mounts_script(const cJSON *mount, const char *bundle,
                         const char *home);
/* Removes every code mount's token from a create body (a record's copy). */
void code_mounts_redact(cJSON *body);

#endif
