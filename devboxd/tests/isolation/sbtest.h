/* Helpers shared by the sandbox test programs: a private state dir, start
 * a devbox, run a command and collect its output. */
#ifndef DEVBOXD_SBTEST_H
#define DEVBOXD_SBTEST_H

#include "sandbox.h"

#include <stddef.h>

struct sbt_env {
    char state[256]; /* private state dir (mkdtemp) */
};

/* The root of the image devboxes of these tests run on: starter, from
 * devboxd-image next to the test binary (built first when the machine's
 * image cache has none; minutes).  NULL when it cannot be had. */
const char *sbt_image(void);

/* Creates the state dir and calls sandbox_init; aborts the test on error. */
int sbt_setup(struct sbt_env *e);
/* Removes the state dir; devbox dirs must have been destroyed. */
void sbt_teardown(struct sbt_env *e);

/* Starts devbox <id> under the state dir. */
struct sandbox *sbt_start(struct sbt_env *e, const char *id,
                          const struct sb_limits *lim, enum sb_network net);
/* Stops, releases and destroys the devbox dir. */
void sbt_destroy(struct sbt_env *e, struct sandbox *sb, const char *id);

/* Runs cmd (fresh shell unless shell != NULL) with a timeout; stdout+stderr
 * go to *out (malloc'd, NUL-terminated).  Returns the exit status, or
 * -1000 + rc (negative errno) on a runtime error. */
int sbt_run(struct sandbox *sb, const char *shell, const char *cmd, char **out,
            int timeout_ms);

/* Same, but stderr is discarded and out may be NULL. */
int sbt_run_quiet(struct sandbox *sb, const char *cmd, int timeout_ms);

char *sbt_devbox_dir(struct sbt_env *e, const char *id); /* malloc'd */

#endif
