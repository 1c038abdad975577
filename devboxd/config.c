/* devboxd's settings, read once at start: see config.h. */
#define _GNU_SOURCE
#include "config.h"

#include "api.h"
#include "blueprint_buildah.h"
#include "code_mounts.h"
#include "images.h"
#include "pty_sessions.h"
#include "retention.h"
#include "sandbox.h"
#include "tunnels.h"
#include "warm_pool.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum kind {
    K_NUMBER, /* a decimal number in [min, max]; min 0: above 0 */
    K_WHOLE,  /* a whole number in [min, max] */
    K_PATH,   /* an absolute path */
    K_TEXT,   /* any text */
    K_CHOICE, /* one of choices */
};

#define BIG 1e9 /* the ceiling of the caps */

struct setting {
    const char *name;
    enum kind kind;
    double min;
    double max;
    const char *def;     /* the default as --help and the docs show it */
    const char *choices; /* K_CHOICE: "a|b|c" */
    const char *what;    /* one line for --help */
};

/* Indexes of settings[]. */
enum {
    S_MAX_DEVBOXES,
    S_MAX_MEMORY_GB,
    S_MAX_CPUS,
    S_MAX_BUILDS,
    S_BUILD_MEMORY_GB,
    S_BUILD_CPUS,
    S_BUILD_TIMEOUT_S,
    S_BUILD_CONTEXT_MB,
    S_BUILD_DISK_GB,
    S_STATE_DISK_RESERVE_MB,
    S_RECORD_RETENTION_DAYS,
    S_RECORD_RETENTION_MAX,
    S_WARM_POOL,
    S_EVICTION_NOTICE_S,
    S_CODE_MOUNT_BASE,
    S_CODE_MOUNT_TIMEOUT_S,
    S_PTY_IDLE_TTL,
    S_PTY_PING_TIMEOUT,
    S_DEVBOX_IMAGE,
    S_IMAGE_CACHE,
    S_DEVBOX_RUNTIME,
    S_BUILDER,
    S_RUNC,
    S_DEVBOX_DISK,
    S_UID_CLAIMS_DIR,
    S_UID_RANGE_SLOTS,
    S_COUNT
};

#define STR_(x) #x
#define STR(x) STR_(x)

static const struct setting settings[S_COUNT] = {
    [S_MAX_DEVBOXES] = {"RLMCP_MAX_DEVBOXES", K_WHOLE, 1, BIG, "256", NULL,
                        "devboxes running or starting at once"},
    [S_MAX_MEMORY_GB] = {"RLMCP_MAX_MEMORY_GB", K_NUMBER, 0, BIG,
                         "8 x the machine's memory", NULL,
                         "GiB the devboxes' memory limits may add up to"},
    [S_MAX_CPUS] = {"RLMCP_MAX_CPUS", K_NUMBER, 0, BIG,
                    "32 x the machine's CPUs", NULL,
                    "CPUs the devboxes' CPU limits may add up to"},
    [S_MAX_BUILDS] = {"RLMCP_MAX_BUILDS", K_WHOLE, 1, BIG, "2", NULL,
                      "blueprint builds at once; later ones wait"},
    [S_BUILD_MEMORY_GB] = {"RLMCP_BUILD_MEMORY_GB", K_NUMBER, 0.0625, BIG, "4",
                           NULL, "GiB of memory of one build"},
    [S_BUILD_CPUS] = {"RLMCP_BUILD_CPUS", K_NUMBER, 0.01, BIG, "1", NULL,
                      "CPUs of one build"},
    [S_BUILD_TIMEOUT_S] = {"RLMCP_BUILD_TIMEOUT_S", K_NUMBER, 0, BIG, "3600",
                           NULL, "seconds one build may run"},
    [S_BUILD_CONTEXT_MB] = {"RLMCP_BUILD_CONTEXT_MB", K_NUMBER, 0, BIG, "1024",
                            NULL, "MiB a build_context archive may unpack to"},
    [S_BUILD_DISK_GB] = {"RLMCP_BUILD_DISK_GB", K_NUMBER, 0.25, BIG, "20", NULL,
                         "GiB of the disk of one build"},
    [S_STATE_DISK_RESERVE_MB] = {"RLMCP_STATE_DISK_RESERVE_MB", K_NUMBER, 0,
                                 BIG,
                                 "2% of the state filesystem, 64 MiB to 1 GiB",
                                 NULL, "MiB kept free on the state filesystem"},
    [S_RECORD_RETENTION_DAYS] = {"RLMCP_RECORD_RETENTION_DAYS", K_NUMBER,
                                 0.00001, 36500, STR(RETENTION_DAYS_DEFAULT),
                                 NULL,
                                 "days the records of ended devboxes are "
                                 "kept"},
    [S_RECORD_RETENTION_MAX] = {"RLMCP_RECORD_RETENTION_MAX", K_WHOLE, 0,
                                10000000, STR(RETENTION_MAX_DEFAULT), NULL,
                                "ended devboxes' records kept at most, "
                                "newest first"},
    [S_WARM_POOL] = {"RLMCP_WARM_POOL", K_WHOLE, 0, WARM_POOL_MAX, "1", NULL,
                     "sandboxes kept started ahead (0 turns the pool off)"},
    [S_EVICTION_NOTICE_S] = {"RLMCP_EVICTION_NOTICE_S", K_WHOLE, 0, RENEW_MAX_S,
                             STR(EVICTION_NOTICE_DEFAULT_S), NULL,
                             "seconds before a devbox's lifetime ends that "
                             "its eviction is announced"},
    [S_CODE_MOUNT_BASE] = {"RLMCP_CODE_MOUNT_BASE", K_TEXT, 0, 0,
                           CODE_MOUNTS_DEFAULT_BASE, NULL,
                           "code mounts clone BASE/<owner>/<repo>"},
    [S_CODE_MOUNT_TIMEOUT_S] = {"RLMCP_CODE_MOUNT_TIMEOUT_S", K_WHOLE, 1, 86400,
                                STR(CODE_MOUNTS_DEFAULT_TIMEOUT_S), NULL,
                                "seconds one code mount clone may take"},
    [S_PTY_IDLE_TTL] = {"DEVBOXD_PTY_IDLE_TTL", K_WHOLE, 1, PTY_IDLE_TTL_MAX_S,
                        STR(PTY_IDLE_TTL_DEFAULT_S), NULL,
                        "seconds a detached PTY session lives"},
    [S_PTY_PING_TIMEOUT] = {"DEVBOXD_PTY_PING_TIMEOUT", K_WHOLE, 1,
                            PTY_PING_TIMEOUT_MAX_S,
                            STR(PTY_PING_TIMEOUT_DEFAULT_S), NULL,
                            "seconds a silent PTY client is kept"},
    [S_DEVBOX_IMAGE] = {"RLMCP_DEVBOX_IMAGE", K_CHOICE, 0, 0, "starter",
                        "starter|universal|browser|desktop",
                        "the image of a devbox whose create names none"},
    [S_IMAGE_CACHE] = {"RLMCP_IMAGE_CACHE", K_PATH, 0, 0,
                       BLUEPRINT_BUILDAH_DEFAULT_IMAGE_CACHE, NULL,
                       "the machine-wide cache of devbox images"},
    [S_DEVBOX_RUNTIME] = {"RLMCP_DEVBOX_RUNTIME", K_CHOICE, 0, 0, "runc",
                          "runc", "the sandbox runtime (runc only)"},
    [S_BUILDER] = {"RLMCP_BUILDER", K_CHOICE, 0, 0, "buildah", "buildah",
                   "the blueprint builder (buildah only)"},
    [S_RUNC] = {"RLMCP_RUNC", K_PATH, 0, 0, "/usr/sbin/runc", NULL,
                "the runc binary"},
    [S_DEVBOX_DISK] = {"RLMCP_DEVBOX_DISK", K_CHOICE, 0, 0, "loop", "loop|off",
                       "devbox disks: loop-mounted ext4, or off (advisory)"},
    [S_UID_CLAIMS_DIR] = {"RLMCP_UID_CLAIMS_DIR", K_PATH, 0, 0, SB_CLAIMS_DIR,
                          NULL,
                          "where every devboxd of the machine claims host "
                          "ids"},
    [S_UID_RANGE_SLOTS] = {"RLMCP_UID_RANGE_SLOTS", K_WHOLE, 1, SB_RANGE_SLOTS,
                           STR(SB_RANGE_SLOTS), NULL,
                           "host id ranges of 65536 this devboxd hands out"},
};

size_t devboxd_config_count(void)
{
    return S_COUNT;
}

const char *devboxd_config_name(size_t i)
{
    return i < S_COUNT ? settings[i].name : NULL;
}

const char *devboxd_config_default(size_t i, char *buf, size_t len)
{
    const char *def = i < S_COUNT ? settings[i].def : "";
    size_t n = strlen(def);

    /* "4096u" (SB_RANGE_SLOTS) reads as 4096. */
    if (n > 0 && def[n - 1] == 'u')
        n--;
    snprintf(buf, len, "%.*s", (int)n, def);
    return buf;
}

const char *devboxd_config_range(size_t i, char *buf, size_t len)
{
    const struct setting *s = &settings[i < S_COUNT ? i : 0];

    switch (s->kind) {
    case K_NUMBER:
        if (s->min == 0)
            snprintf(buf, len, "a number above 0 up to %.10g", s->max);
        else
            snprintf(buf, len, "a number from %.10g to %.10g", s->min, s->max);
        break;
    case K_WHOLE:
        snprintf(buf, len, "a whole number from %.10g to %.10g", s->min,
                 s->max);
        break;
    case K_PATH:
        snprintf(buf, len, "an absolute path");
        break;
    case K_TEXT:
        snprintf(buf, len, "any text");
        break;
    case K_CHOICE: {
        const char *c = s->choices;
        size_t o = (size_t)snprintf(
            buf, len, "%s", strchr(c, '|') != NULL ? "one of " : "only ");

        for (; *c != '\0' && o + 3 < len; c++) {
            if (*c == '|') {
                buf[o++] = ',';
                buf[o++] = ' ';
            } else {
                buf[o++] = *c;
            }
        }
        buf[o] = '\0';
        break;
    }
    }
    return buf;
}

/* The value of setting id, NULL when unset or empty (an empty variable
 * means the default, as it always has). */
static const char *value_of(int id)
{
    const char *v = getenv(settings[id].name);

    return v != NULL && v[0] != '\0' ? v : NULL;
}

static int refuse(int id, const char *v, char *err, size_t errlen)
{
    char range[256];
    char def[128];

    snprintf(err, errlen,
             "%s=\"%.100s\" is not %s: set one, or unset it for the "
             "default (%s)",
             settings[id].name, v,
             devboxd_config_range((size_t)id, range, sizeof(range)),
             devboxd_config_default((size_t)id, def, sizeof(def)));
    return -1;
}

/* A number setting: *out = its value, def when unset; -1 with err when it
 * is not a number in its range. */
static int number(int id, double def, double *out, char *err, size_t errlen)
{
    const struct setting *s = &settings[id];
    const char *v = value_of(id);
    char *end = NULL;
    double x;

    *out = def;
    if (v == NULL)
        return 0;
    /* Decimal digits only for a whole number: strtod alone would take
     * "0x10" or "1e2". */
    if (s->kind == K_WHOLE && v[strspn(v, "0123456789")] != '\0')
        return refuse(id, v, err, errlen);
    errno = 0;
    x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !isfinite(x) || x < s->min ||
        x > s->max || (s->kind == K_WHOLE && x != floor(x)) ||
        (s->kind == K_NUMBER && s->min == 0 && x <= 0))
        return refuse(id, v, err, errlen);
    *out = x;
    return 0;
}

static int whole(int id, int def, int *out, char *err, size_t errlen)
{
    double x = 0;

    if (number(id, def, &x, err, errlen) != 0)
        return -1;
    *out = (int)x;
    return 0;
}

/* A text setting: *out = its value, its default when unset; -1 with err
 * when it is not one of its choices or not an absolute path. */
static int text(int id, const char **out, char *err, size_t errlen)
{
    const struct setting *s = &settings[id];
    const char *v = value_of(id);
    size_t n;
    const char *c;

    *out = s->def;
    if (v == NULL)
        return 0;
    n = strlen(v);
    if (s->kind == K_PATH && (v[0] != '/' || n >= 4096))
        return refuse(id, v, err, errlen);
    if (s->kind == K_CHOICE) {
        /* "loop|off" would match the whole list. */
        if (strchr(v, '|') != NULL)
            return refuse(id, v, err, errlen);
        for (c = s->choices; c != NULL; c = strchr(c, '|')) {
            if (*c == '|')
                c++;
            if (strncmp(c, v, n) == 0 && (c[n] == '|' || c[n] == '\0'))
                break;
        }
        if (c == NULL)
            return refuse(id, v, err, errlen);
    }
    *out = v;
    return 0;
}

/* The settings whose old values are gone say what became of them. */
static int check_retired(char *err, size_t errlen)
{
    const char *v = value_of(S_DEVBOX_RUNTIME);

    if (v != NULL && strcmp(v, "runc") != 0) {
        snprintf(err, errlen,
                 "RLMCP_DEVBOX_RUNTIME=\"%.40s\": devboxes run under runc only "
                 "(the bubblewrap runtime is gone); unset RLMCP_DEVBOX_RUNTIME "
                 "or set it to runc",
                 v);
        return -1;
    }
    v = value_of(S_BUILDER);
    if (v != NULL && strcmp(v, "buildah") != 0) {
        snprintf(err, errlen,
                 "RLMCP_BUILDER=\"%.40s\": blueprints build with buildah only "
                 "(the native Dockerfile builder is gone); unset RLMCP_BUILDER "
                 "or set it to buildah",
                 v);
        return -1;
    }
    v = value_of(S_DEVBOX_IMAGE);
    if (v != NULL && images_check_default(v, err, errlen) != 0)
        return -1;
    return 0;
}

static int load_caps(struct admission_caps *caps, char *err, size_t errlen)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double machine_gb =
        pages > 0 && page > 0 ? (double)pages * (double)page / 1073741824.0 : 4;
    double n = 0;
    double builds = 0;

    /* Limits are ceilings, not reservations: idle devboxes use little, so
     * the defaults overcommit, but not without bound.  A build runs what
     * the blueprint says, unattended: bounded so a runaway step cannot hold
     * the machine's memory and cores or a slot. */
    if (number(S_MAX_DEVBOXES, 256, &n, err, errlen) != 0 ||
        number(S_MAX_MEMORY_GB, 8 * machine_gb, &caps->max_memory_gb, err,
               errlen) != 0 ||
        number(S_MAX_CPUS, 32.0 * (cpus > 0 ? (double)cpus : 1),
               &caps->max_cpus, err, errlen) != 0 ||
        number(S_MAX_BUILDS, 2, &builds, err, errlen) != 0 ||
        number(S_BUILD_MEMORY_GB, 4, &caps->build_memory_gb, err, errlen) !=
            0 ||
        number(S_BUILD_CPUS, 1, &caps->build_cpus, err, errlen) != 0 ||
        number(S_BUILD_TIMEOUT_S, 3600, &caps->build_timeout_s, err, errlen) !=
            0 ||
        number(S_BUILD_CONTEXT_MB, 1024, &caps->build_context_mb, err,
               errlen) != 0 ||
        number(S_BUILD_DISK_GB, 20, &caps->build_disk_gb, err, errlen) != 0 ||
        /* 0: 2% of the state filesystem (admission_disk_check). */
        number(S_STATE_DISK_RESERVE_MB, 0, &caps->state_reserve_mb, err,
               errlen) != 0)
        return -1;
    caps->max_devboxes = (unsigned)n;
    caps->max_builds = (unsigned)builds;
    return 0;
}

static int load_env(struct engine_settings *e, char *err, size_t errlen)
{
    double days = 0;
    double max = 0;
    int slots = 0;

    memset(e, 0, sizeof(*e));
    if (check_retired(err, errlen) != 0 ||
        load_caps(&e->caps, err, errlen) != 0)
        return -1;
    if (number(S_RECORD_RETENTION_DAYS, RETENTION_DAYS_DEFAULT, &days, err,
               errlen) != 0 ||
        number(S_RECORD_RETENTION_MAX, RETENTION_MAX_DEFAULT, &max, err,
               errlen) != 0 ||
        whole(S_WARM_POOL, 1, &e->warm_pool, err, errlen) != 0 ||
        whole(S_EVICTION_NOTICE_S, EVICTION_NOTICE_DEFAULT_S,
              &e->eviction_notice_s, err, errlen) != 0 ||
        text(S_CODE_MOUNT_BASE, &e->code_mount_base, err, errlen) != 0 ||
        whole(S_CODE_MOUNT_TIMEOUT_S, CODE_MOUNTS_DEFAULT_TIMEOUT_S,
              &e->code_mount_timeout_s, err, errlen) != 0 ||
        whole(S_PTY_IDLE_TTL, PTY_IDLE_TTL_DEFAULT_S, &e->pty_idle_ttl_s, err,
              errlen) != 0 ||
        whole(S_PTY_PING_TIMEOUT, PTY_PING_TIMEOUT_DEFAULT_S,
              &e->pty_ping_timeout_s, err, errlen) != 0 ||
        text(S_DEVBOX_IMAGE, &e->devbox_image, err, errlen) != 0 ||
        text(S_IMAGE_CACHE, &e->image_cache, err, errlen) != 0 ||
        text(S_RUNC, &e->runc_path, err, errlen) != 0 ||
        text(S_DEVBOX_DISK, &e->disk, err, errlen) != 0 ||
        text(S_UID_CLAIMS_DIR, &e->uid_claims_dir, err, errlen) != 0 ||
        whole(S_UID_RANGE_SLOTS, (int)SB_RANGE_SLOTS, &slots, err, errlen) != 0)
        return -1;
    e->retention_days = days;
    e->retention_max = (size_t)max;
    e->uid_range_slots = (unsigned)slots;
    return 0;
}

void devboxd_config_usage(FILE *f)
{
    char def[128];
    char range[256];
    size_t i;

    fprintf(
        f,
        "usage: devboxd --state-dir DIR [--listen unix:PATH|HOST:PORT]...\n"
        "               [--api-key-file FILE] [--allow-non-loopback]\n"
        "               [--tunnel-listen HOST:PORT] [--tunnel-url-template "
        "URL]\n"
        "               [--version]\n"
        "\n"
        "Serves the Runloop REST API (HTTP/1.1 and cleartext HTTP/2) with "
        "local\n"
        "sandboxes. Default listen address: unix:DIR/devboxd.sock (no key "
        "needed:\n"
        "the socket's 0600 mode is the access control). TCP listeners require\n"
        "'Authorization: Bearer KEY'; KEY is read from --api-key-file or "
        "generated\n"
        "into DIR/api-key. Port 0 picks a free port (see DIR/devboxd.pid).\n"
        "Tunnels (enable_tunnel) are served on --tunnel-listen (default\n"
        "127.0.0.1:0) as http://{port}-{tunnel_key}.localhost:TUNNEL_PORT/;\n"
        "--tunnel-url-template http(s)://{port}-{tunnel_key}.DOMAIN[:PORT] "
        "names\n"
        "them instead when a proxy or wildcard DNS name fronts the listener.\n"
        "Clients learn the template from TunnelView.url_template and the\n"
        "X-Devboxd-Tunnel-Url-Template header of every API answer.\n"
        "\n"
        "Environment, read once at start (docs/devboxd.md); unset or empty\n"
        "means the default, a value out of range stops devboxd naming it:\n");
    for (i = 0; i < S_COUNT; i++)
        fprintf(f, "  %s\n      %s\n      default %s; %s\n", settings[i].name,
                settings[i].what, devboxd_config_default(i, def, sizeof(def)),
                devboxd_config_range(i, range, sizeof(range)));
}

static int parse_args(struct devboxd_config *cfg, int argc, char **argv,
                      char *err, size_t errlen)
{
    static const struct option longopts[] = {
        {"state-dir", required_argument, NULL, 's'},
        {"listen", required_argument, NULL, 'l'},
        {"api-key-file", required_argument, NULL, 'k'},
        {"allow-non-loopback", no_argument, NULL, 'A'},
        {"tunnel-listen", required_argument, NULL, 't'},
        {"tunnel-url-template", required_argument, NULL, 'u'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;

    optind = 0; /* a full rescan, also on a second call (tests) */
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            cfg->state_dir = optarg;
            break;
        case 'l':
            if (cfg->n_listen == DEVBOXD_MAX_LISTEN) {
                snprintf(err, errlen, "at most %d --listen options",
                         DEVBOXD_MAX_LISTEN);
                return DEVBOXD_CONFIG_BAD;
            }
            cfg->listen[cfg->n_listen++] = optarg;
            break;
        case 'k':
            cfg->api_key_file = optarg;
            break;
        case 'A':
            cfg->allow_non_loopback = 1;
            break;
        case 't':
            cfg->tunnel_listen = optarg;
            break;
        case 'u':
            /* Checked now so a typo fails before anything starts. */
            if (tunnel_set_url_template(optarg, "127.0.0.1", 0, err, errlen) !=
                0)
                return DEVBOXD_CONFIG_BAD;
            cfg->tunnel_url_template = optarg;
            break;
        case 'h':
            return DEVBOXD_CONFIG_HELP;
        case 'V':
            return DEVBOXD_CONFIG_VERSION;
        default:
            err[0] = '\0'; /* getopt said what */
            return DEVBOXD_CONFIG_USAGE;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
        return DEVBOXD_CONFIG_USAGE;
    }
    if (cfg->state_dir == NULL || cfg->state_dir[0] == '\0') {
        snprintf(err, errlen,
                 "--state-dir DIR is required (where devboxes and their "
                 "files are kept)");
        return DEVBOXD_CONFIG_BAD;
    }
    return DEVBOXD_CONFIG_RUN;
}

int devboxd_config_load(struct devboxd_config *cfg, int argc, char **argv,
                        char *err, size_t errlen)
{
    int rc;

    memset(cfg, 0, sizeof(*cfg));
    err[0] = '\0';
    rc = parse_args(cfg, argc, argv, err, errlen);
    if (rc != DEVBOXD_CONFIG_RUN)
        return rc;
    if (load_env(&cfg->engine, err, errlen) != 0)
        return DEVBOXD_CONFIG_BAD;
    return DEVBOXD_CONFIG_RUN;
}
