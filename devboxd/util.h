/* Small helpers shared by the devboxd modules. */
#ifndef DEVBOXD_UTIL_H
#define DEVBOXD_UTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

int64_t util_now_ms(void);
/* "<prefix>_<20 random base62 chars>" into out (>= 32 bytes). */
/* Fills buf with n bytes from the kernel's random source. devboxd refuses
 * to start without one (util_random_check), so a later failure aborts:
 * no id or token is better than a guessable one. */
void util_random(void *buf, size_t n);
/* 0 when the kernel's random source answers, else -1 with errno. */
int util_random_check(void);
/* n characters drawn uniformly from alphabet (2..256 symbols), then NUL. */
void util_random_text(char *out, size_t n, const char *alphabet);
void util_new_id(const char *prefix, char *out, size_t outlen);
/* 1 when a secret sent by a client equals the expected one. Both are
 * hashed first, so the time taken does not depend on where they differ
 * or on how their lengths compare. */
int util_secret_equal(const char *given, const char *expected);
/* Writes all len bytes to fd (retrying short writes and EINTR): 0, or -1
 * with errno. */
int util_write_all(int fd, const void *data, size_t len);
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
/* Reads a whole (small) file; NUL-terminated. */
char *util_read_file(const char *path, size_t max, size_t *len_out);
/* The JSON document in path, or NULL when it is missing, over max bytes or
 * does not parse.  The text read is wiped: a record may hold a secret. */
cJSON *util_read_json(const char *path, size_t max);
int util_rmtree(const char *path);
/* Starts fn(arg) on a detached thread with a stack of stack_size bytes
 * (0: the default): 0, or pthread_create's error. */
int util_thread_detached(void *(*fn)(void *), void *arg, size_t stack_size);
/* s quoted for a POSIX shell: in single quotes, each ' as '\''.
 * malloc'd; NULL when out of memory. */
char *util_shell_quote(const char *s);

/* Splits "HOST:PORT" ("[v6]:PORT" too) into host (NUL-terminated, brackets
 * dropped) and *port (points into spec, digits only). 0; -EINVAL when the
 * form is wrong; -ENAMETOOLONG when the host does not fit hostsize. */
int util_split_hostport(const char *spec, char *host, size_t hostsize,
                        const char **port);

/* How util_listen_tcp words its refusals for one command-line option. */
struct util_listen_words {
    const char *option;  /* "--listen" */
    const char *form;    /* what to write instead of a malformed value */
    const char *exposes; /* why a non-loopback address needs the flag */
    const char *purpose; /* "" or " for tunnels", after "cannot listen on X" */
};
/* A listening TCP socket on HOST:PORT (port 0: a free one, put in
 * *bound_port), loopback only unless allow_non_loopback. The fd, or -1
 * with a message in err worded by w. */
int util_listen_tcp(const char *spec, const struct util_listen_words *w,
                    int allow_non_loopback, int *bound_port, char *err,
                    size_t errlen);

/* obj's member name when it is a string, else NULL (obj may be NULL). */
/* The offset of the first \u0000 escape inside a string of valid JSON
 * text, else len (cJSON would end that string at the NUL). */
size_t util_json_nul_at(const char *buf, size_t len);
const char *util_json_str(const cJSON *obj, const char *name);

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
