/*
 * audit.h - the audit log: one JSON line per tool call that ended
 * (docs/operations.md), e.g.
 *
 *   {"time":"2026-12-01T17:40:02.125Z","caller":"sha256:4f1c0a9e2b7d",
 *    "session":"1f2e3d4c","tool":"execute_command",
 *    "args_sha256":"9a0b…","outcome":"ok","duration_ms":812,
 *    "devbox_id":"dbx_31x…"}
 *
 * The caller is the first 12 hex digits of the SHA-256 of their Runloop
 * key ("none" without one): enough to tell callers apart, never the key.
 * Arguments are a SHA-256 of the JSON the client sent (values may hold
 * secrets or data). Lines are appended with O_APPEND in one write; when
 * the file would pass max_bytes it is renamed to FILE.1 (FILE.1 to
 * FILE.2, … up to keep files) and a new one is started.
 */
#ifndef RLMCP_HOST_AUDIT_H
#define RLMCP_HOST_AUDIT_H

#include <stddef.h>

struct audit_entry {
    const char *api_key; /* the key the call used, or NULL */
    const char *session; /* a short session label, or NULL */
    const char *tool;    /* as the client named it */
    const char *args;    /* the arguments' JSON */
    size_t args_len;
    const char *outcome; /* "ok", "error", "cancelled", ... */
    const char *code;    /* the error code of an error result, or NULL */
    double duration_ms;
    const char *devbox_id; /* or NULL */
};

/*
 * Start writing to path (created 0600, parents must exist). max_bytes 0:
 * never rotate. Returns 0, or -1 with a message in err.
 */
int audit_open(const char *path, unsigned long long max_bytes, unsigned keep,
               char *err, size_t errlen);

/* Whether a log is open (callers skip building entries otherwise). */
int audit_enabled(void);

/* Append one line; failures are logged once per minute, never fatal. */
void audit_record(const struct audit_entry *e);

/* "sha256:" + 12 hex digits of key, or "none": the caller's fingerprint. */
void audit_key_fingerprint(const char *key, char *out, size_t n);

void audit_close(void);

#endif
