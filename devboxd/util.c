#define _GNU_SOURCE
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

int64_t util_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int util_random_check(void)
{
    unsigned char probe[16];
    ssize_t n = -1;

    do {
        n = getrandom(probe, sizeof(probe), 0);
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(probe) ? 0 : -1;
}

void util_random(void *buf, size_t n)
{
    unsigned char *p = buf;
    size_t got = 0;

    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            fprintf(stderr, "devboxd: the kernel's random source failed: %s\n",
                    strerror(errno));
            abort();
        }
        got += (size_t)r;
    }
}

void util_random_text(char *out, size_t n, const char *alphabet)
{
    size_t alen = strlen(alphabet);
    /* Bytes at or above limit are redrawn, so every symbol is equally
     * likely (no modulo bias). */
    unsigned limit = 256u - 256u % (unsigned)alen;
    unsigned char rnd[64];
    size_t used = sizeof(rnd);
    size_t i = 0;

    while (i < n) {
        if (used == sizeof(rnd)) {
            util_random(rnd, sizeof(rnd));
            used = 0;
        }
        if (rnd[used] < limit)
            out[i++] = alphabet[rnd[used] % alen];
        used++;
    }
    out[n] = '\0';
}

void util_new_id(const char *prefix, char *out, size_t outlen)
{
    char tail[21];

    util_random_text(
        tail, sizeof(tail) - 1,
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
    snprintf(out, outlen, "%s_%s", prefix, tail);
}

int util_secret_equal(const char *given, const char *expected)
{
    unsigned char a[SHA256_DIGEST_LENGTH];
    unsigned char b[SHA256_DIGEST_LENGTH];

    if (given == NULL || expected == NULL || expected[0] == '\0')
        return 0;
    SHA256((const unsigned char *)given, strlen(given), a);
    SHA256((const unsigned char *)expected, strlen(expected), b);
    return CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}

int util_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    size_t done = 0;

    while (done < len) {
        ssize_t n = write(fd, p + done, len - done);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

int util_mkdirs(const char *path)
{
    char buf[4096];
    size_t len = strlen(path);
    size_t i;

    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, path, len + 1);
    for (i = 1; i <= len; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char saved = buf[i];

            buf[i] = '\0';
            if (mkdir(buf, 0700) != 0 && errno != EEXIST)
                return -1;
            buf[i] = saved;
        }
    }
    return 0;
}

static __thread int write_errno;

int util_write_error(void)
{
    return write_errno;
}

void util_write_error_reset(void)
{
    write_errno = 0;
}

/* fsync of the directory holding path: the rename itself is durable. */
static int fsync_parent(const char *path)
{
    char dir[4200];
    char *slash = NULL;
    int fd;
    int rc;

    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    rc = fsync(fd);
    close(fd);
    return rc;
}

int util_write_atomic(const char *path, const char *data, size_t len, int mode)
{
    char tmp[4200];
    int fd = -1;
    int rc = -1;
    int saved;

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    /* A stale temp file (or a link planted there) could carry other modes
     * or point elsewhere: start from a fresh file of our own. */
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        goto out;
    if (fchmod(fd, (mode_t)mode) != 0 || util_write_all(fd, data, len) != 0 ||
        fsync(fd) != 0)
        goto out;
    if (close(fd) != 0) {
        fd = -1;
        goto out;
    }
    fd = -1;
    if (rename(tmp, path) != 0)
        goto out;
    /* The rename is durable only once the directory is. */
    if (fsync_parent(path) != 0)
        goto out;
    rc = 0;
out:
    saved = errno;
    if (fd >= 0)
        close(fd);
    if (rc != 0) {
        unlink(tmp);
        if (write_errno == 0)
            write_errno = saved != 0 ? saved : EIO;
    }
    errno = saved;
    return rc;
}

char *util_read_file(const char *path, size_t max, size_t *len_out)
{
    char *buf = NULL;
    size_t len = 0;
    size_t cap = 0;
    int fd;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    for (;;) {
        ssize_t n;

        if (len + 4096 + 1 > cap) {
            char *grown = NULL;

            cap = cap ? cap * 2 : 8192;
            grown = realloc(buf, cap);
            if (grown == NULL)
                goto fail;
            buf = grown;
        }
        n = read(fd, buf + len, cap - len - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            goto fail;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > max)
            goto fail;
    }
    close(fd);
    if (buf == NULL)
        buf = calloc(1, 1);
    if (buf != NULL)
        buf[len] = '\0';
    if (len_out != NULL)
        *len_out = len;
    return buf;
fail:
    close(fd);
    free(buf);
    return NULL;
}

/* Empties the directory open as d: removes files and empty directories,
 * or opens the first non-empty subdirectory into *child. Returns 0 when d
 * is empty, 1 with *child set, -1 on an entry it cannot remove. */
static int rmtree_step(DIR *d, int *child)
{
    struct dirent *de;
    int fd = dirfd(d);

    *child = -1;
    rewinddir(d);
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (unlinkat(fd, de->d_name, 0) == 0)
            continue;
        if (errno != EISDIR)
            return -1;
        if (unlinkat(fd, de->d_name, AT_REMOVEDIR) == 0)
            continue;
        if (errno != ENOTEMPTY && errno != EEXIST)
            return -1;
        *child = openat(fd, de->d_name,
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return *child >= 0 ? 1 : -1;
    }
    return 0;
}

/* Iterative and fd-relative: trees built inside a devbox (snapshot and
 * blueprint layers) may nest far deeper than a thread's stack or PATH_MAX
 * allows, and a symlink in them is removed, never followed. One directory
 * fd is open at a time: after a subdirectory is emptied we climb back
 * through ".." and re-read the parent, whose done entries are gone. */
cJSON *util_read_json(const char *path, size_t max)
{
    char *text = util_read_file(path, max, NULL);
    cJSON *doc = NULL;

    if (text == NULL)
        return NULL;
    doc = cJSON_Parse(text);
    explicit_bzero(text, strlen(text));
    free(text);
    return doc;
}

int util_rmtree(const char *path)
{
    struct stat st;
    DIR *d = NULL;
    size_t depth = 0;
    int fd;
    int child;
    int rc = -1;

    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    for (;;) {
        int step;

        d = fdopendir(fd);
        if (d == NULL) {
            close(fd);
            goto out;
        }
        step = rmtree_step(d, &child);
        if (step < 0)
            goto out; /* stop rather than revisit an entry that stays */
        if (step == 1) {
            closedir(d);
            d = NULL;
            fd = child;
            depth++;
            continue;
        }
        if (depth == 0)
            break;
        fd = openat(dirfd(d), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        closedir(d);
        d = NULL;
        if (fd < 0)
            goto out;
        depth--;
    }
    rc = rmdir(path);
out:
    if (d != NULL)
        closedir(d);
    return rc;
}

int util_split_hostport(const char *spec, char *host, size_t hostsize,
                        const char **port)
{
    const char *colon = strrchr(spec, ':');
    const char *start = spec;
    size_t hostlen;

    if (colon == NULL || colon == spec || colon[1] == '\0' ||
        strspn(colon + 1, "0123456789") != strlen(colon + 1))
        return -EINVAL;
    hostlen = (size_t)(colon - spec);
    if (spec[0] == '[' && hostlen >= 2 && spec[hostlen - 1] == ']') {
        start++;
        hostlen -= 2;
    }
    if (hostlen >= hostsize)
        return -ENAMETOOLONG;
    memcpy(host, start, hostlen);
    host[hostlen] = '\0';
    *port = colon + 1;
    return 0;
}

static int is_loopback(const struct sockaddr *sa)
{
    const struct sockaddr_in *in = (const void *)sa;
    const struct sockaddr_in6 *in6 = (const void *)sa;

    if (sa->sa_family == AF_INET)
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    return 0;
}

int util_listen_tcp(const char *spec, const struct util_listen_words *w,
                    int allow_non_loopback, int *bound_port, char *err,
                    size_t errlen)
{
    struct addrinfo hints;
    struct addrinfo *res = NULL;
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof(ss);
    const char *port = NULL;
    char host[256];
    int fd = -1;
    int one = 1;
    int rc;

    rc = util_split_hostport(spec, host, sizeof(host), &port);
    if (rc == -ENAMETOOLONG) {
        snprintf(err, errlen, "%s '%s': host name too long", w->option, spec);
        goto out;
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s '%s': expected %s", w->option, spec, w->form);
        goto out;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        res = NULL;
        snprintf(err, errlen, "%s '%s': %s", w->option, spec, gai_strerror(rc));
        goto out;
    }
    if (!is_loopback(res->ai_addr) && !allow_non_loopback) {
        snprintf(err, errlen,
                 "%s '%s' is not a loopback address; %s, so pass "
                 "--allow-non-loopback if you really mean it",
                 w->option, spec, w->exposes);
        goto out;
    }
    fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
        snprintf(err, errlen, "cannot listen on '%s'%s: %s", spec, w->purpose,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
        goto out;
    }
    if (getsockname(fd, (struct sockaddr *)&ss, &sslen) == 0)
        *bound_port = ntohs(ss.ss_family == AF_INET
                                ? ((struct sockaddr_in *)&ss)->sin_port
                                : ((struct sockaddr_in6 *)&ss)->sin6_port);
out:
    if (res != NULL)
        freeaddrinfo(res);
    return fd;
}

int util_check_fields(const cJSON *obj, const char *where,
                      const char *const *allowed, char *err, size_t errlen)
{
    const cJSON *it = NULL;

    cJSON_ArrayForEach(it, obj)
    {
        size_t i;
        int ok = 0;

        for (i = 0; allowed[i] != NULL; i++) {
            if (strcmp(allowed[i], it->string) == 0) {
                ok = 1;
                break;
            }
        }
        if (!ok) {
            snprintf(err, errlen,
                     "unknown field '%s%s%s'; remove it (see the "
                     "Runloop API reference for the accepted fields)",
                     where, where[0] ? "." : "", it->string);
            return -1;
        }
    }
    return 0;
}

const char *util_json_str(const cJSON *obj, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, name));
}

int util_opt_string(const cJSON *obj, const char *name, const char **out,
                    char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

    *out = NULL;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v)) {
        snprintf(err, errlen, "'%s' must be a string", name);
        return -1;
    }
    *out = v->valuestring;
    return 0;
}

int util_opt_bool(const cJSON *obj, const char *name, int *out, char *err,
                  size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsBool(v)) {
        snprintf(err, errlen, "'%s' must be true or false", name);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

int util_opt_int(const cJSON *obj, const char *name, int64_t lo, int64_t hi,
                 int64_t *out, int *present, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    double d;

    if (present != NULL)
        *present = 0;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v)) {
        snprintf(err, errlen, "'%s' must be an integer", name);
        return -1;
    }
    d = v->valuedouble;
    /* Range first: casting a double outside int64_t is undefined. */
    if (!(d >= (double)lo && d <= (double)hi && d > -9.2e18 && d < 9.2e18)) {
        snprintf(err, errlen, "'%s' must be between %lld and %lld, got %g",
                 name, (long long)lo, (long long)hi, d);
        return -1;
    }
    if (d != (double)(int64_t)d) {
        snprintf(err, errlen, "'%s' must be a whole number, got %g", name, d);
        return -1;
    }
    *out = (int64_t)d;
    if (present != NULL)
        *present = 1;
    return 0;
}

int util_opt_string_map(const cJSON *obj, const char *name, const cJSON **out,
                        char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    const cJSON *it = NULL;

    *out = NULL;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsObject(v)) {
        snprintf(err, errlen, "'%s' must be an object of string values", name);
        return -1;
    }
    cJSON_ArrayForEach(it, v)
    {
        if (!cJSON_IsString(it)) {
            snprintf(err, errlen, "'%s.%s' must be a string", name, it->string);
            return -1;
        }
    }
    *out = v;
    return 0;
}

int util_opt_string_array(const cJSON *obj, const char *name, const cJSON **out,
                          char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    const cJSON *it = NULL;
    int i = 0;

    *out = NULL;
    if (v == NULL || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsArray(v)) {
        snprintf(err, errlen, "'%s' must be an array of strings", name);
        return -1;
    }
    cJSON_ArrayForEach(it, v)
    {
        if (!cJSON_IsString(it)) {
            snprintf(err, errlen, "'%s[%d]' must be a string", name, i);
            return -1;
        }
        i++;
    }
    *out = v;
    return 0;
}

int util_thread_detached(void *(*fn)(void *), void *arg, size_t stack_size)
{
    pthread_attr_t attr;
    pthread_t tid;
    int rc;

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (stack_size > 0)
        pthread_attr_setstacksize(&attr, stack_size);
    rc = pthread_create(&tid, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}

char *util_shell_quote(const char *s)
{
    size_t len = strlen(s);
    char *out = malloc(len * 4 + 3);
    char *p = out;

    if (out == NULL)
        return NULL;
    *p++ = '\'';
    for (; *s != '\0'; s++) {
        if (*s == '\'') {
            memcpy(p, "'\\''", 4);
            p += 4;
        } else {
            *p++ = *s;
        }
    }
    *p++ = '\'';
    *p = '\0';
    return out;
}

size_t util_json_nul_at(const char *buf, size_t len)
{
    int in_string = 0;
    size_t i;

    for (i = 0; i < len; i++) {
        if (!in_string) {
            in_string = buf[i] == '"';
            continue;
        }
        if (buf[i] == '"') {
            in_string = 0;
        } else if (buf[i] == '\\') {
            if (i + 5 < len && memcmp(buf + i + 1, "u0000", 5) == 0)
                return i;
            i++; /* the escaped character */
        }
    }
    return len;
}
