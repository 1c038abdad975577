/* devboxd's settings: its flags and its environment, read once at start
 * into one struct, each checked against its range (config.c).  Nothing
 * below main.c reads the environment: the modules get what they need from
 * this struct (engine_init takes cfg->engine).  devboxd --help and
 * docs/devboxd.md "Usage" list every variable with its default and range;
 * cmake/check_devboxd_getenv.cmake keeps getenv out of the other sources. */
#ifndef DEVBOXD_CONFIG_H
#define DEVBOXD_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "engine.h"

#define DEVBOXD_MAX_LISTEN 8

struct devboxd_config {
    /* Flags. */
    const char *state_dir;
    const char *listen[DEVBOXD_MAX_LISTEN];
    int n_listen;
    const char *api_key_file;
    int allow_non_loopback;
    const char *tunnel_listen;       /* NULL: 127.0.0.1:0 */
    const char *tunnel_url_template; /* NULL: the listener's *.localhost URL */
    /* The environment. */
    struct engine_settings engine;
};

enum devboxd_config_result {
    DEVBOXD_CONFIG_RUN,     /* cfg is filled: start */
    DEVBOXD_CONFIG_HELP,    /* --help: print devboxd_config_usage, exit 0 */
    DEVBOXD_CONFIG_VERSION, /* --version: exit 0 */
    DEVBOXD_CONFIG_USAGE,   /* a bad command line: err (may be ""), usage */
    DEVBOXD_CONFIG_BAD,     /* a bad setting: err names it */
};

/* Reads argv and the environment into cfg (strings point into them).
 * A DEVBOXD_CONFIG_* value; err says what is wrong with a bad flag or
 * variable: its name, its value and what it takes. */
int devboxd_config_load(struct devboxd_config *cfg, int argc, char **argv,
                        char *err, size_t errlen);

/* devboxd --help: the flags, then every variable with its default and
 * range. */
void devboxd_config_usage(FILE *f);

/* The variables devboxd reads, for tests that hold the help and the docs
 * to the list: the count, then each one's name, default and range as
 * devboxd --help prints them (text in buf). */
size_t devboxd_config_count(void);
const char *devboxd_config_name(size_t i);
const char *devboxd_config_default(size_t i, char *buf, size_t len);
const char *devboxd_config_range(size_t i, char *buf, size_t len);

#endif
