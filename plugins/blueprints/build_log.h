/*
 * build_log.h - reading blueprint build logs ({level, message,
 * timestamp_ms} entries): progress text, the failing step, a tail view.
 * Pure functions over cJSON, unit-tested on their own.
 */
#ifndef RLMCP_BP_BUILD_LOG_H
#define RLMCP_BP_BUILD_LOG_H

#include <stddef.h>

#include <cjson/cJSON.h>

/*
 * The messages of logs[from..] joined with '\n'. Longer than max bytes:
 * the last lines that fit, after "[N earlier lines omitted]". "" when
 * there are none; NULL on ENOMEM.
 */
char *bp_log_join(const cJSON *logs, size_t from, size_t max);

/*
 * The step a failed build died in: the last error entry (level error or
 * fatal, else a message saying error/failed/non-zero/exit code, else the
 * last entry), preceded by the last step line at or before it ("Step 2/5",
 * "[2/5]", "step ...", "RUN ...") when that is a different line. Each part
 * cut to 300 bytes. NULL when logs is empty or on ENOMEM.
 */
char *bp_log_failing_step(const cJSON *logs);

/*
 * {blueprint_id, lines: [last `tail` entries], total_lines, truncated}.
 * NULL on ENOMEM.
 */
cJSON *bp_log_tail(const char *id, const cJSON *logs, size_t tail);

#endif
