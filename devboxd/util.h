/* Small helpers shared by the devboxd modules. */
#ifndef DEVBOXD_UTIL_H
#define DEVBOXD_UTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"

int64_t util_now_ms(void);
/* "<prefix>_<20 random base62 chars>" into out (>= 32 bytes). */
void util_new_id(const char *prefix, char *out, size_t outlen);
/* mkdir -p with mode 0700. */
int util_mkdirs(const char *path);
/* Writes data to path durably: temp file, fsync, rename, fsync of the
 * directory. On failure (errno set) the old file is untouched and the
 * calling thread's write error is set (util_write_error). */
int util_write_atomic(const char *path, const char *data, size_t len, int mode);
/* The errno of the first util_write_atomic failure on this thread since
 * util_write_error_reset (0: none): a request handler checks it before
 * acknowledging a change that must be saved. */
int util_write_error(void);
void util_write_error_reset(void);
/* Answers 507 for a state-disk write error (err: an errno), saying the
 * engine's disk is full when it is. */
void util_storage_error(struct http_response *resp, int err);
/* Reads a whole (small) file; NUL-terminated. */
char *util_read_file(const char *path, size_t max, size_t *len_out);
int util_rmtree(const char *path);

/* Runloop error shape: {"code": slug, "message": text} with status. */
void util_error(struct http_response *resp, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sends a cJSON value (consumed) as the body with status. */
void util_json(struct http_response *resp, int status, cJSON *json);

/* Validation helpers: each returns 0 or -1 with a message in err naming
 * the field and what to send instead. */
int util_check_fields(const cJSON *obj, const char *where,
                      const char *const *allowed, char *err, size_t errlen);
int util_opt_string(const cJSON *obj, const char *name, const char **out,
                    char *err, size_t errlen);
int util_opt_bool(const cJSON *obj, const char *name, int *out, char *err,
                  size_t errlen);
int util_opt_int(const cJSON *obj, const char *name, int64_t lo, int64_t hi,
                 int64_t *out, int *present, char *err, size_t errlen);
int util_opt_string_map(const cJSON *obj, const char *name, const cJSON **out,
                        char *err, size_t errlen);
int util_opt_string_array(const cJSON *obj, const char *name, const cJSON **out,
                          char *err, size_t errlen);

#endif
