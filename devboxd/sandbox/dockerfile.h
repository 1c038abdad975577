/* A small, validated Dockerfile parser for local blueprint builds: FROM,
 * RUN, ENV, WORKDIR, USER, ARG and COPY; anything else is refused with the
 * line and instruction named. */
#ifndef DEVBOXD_DOCKERFILE_H
#define DEVBOXD_DOCKERFILE_H

#include <stddef.h>

#define DOCKERFILE_MAX (256u * 1024u)

enum df_kind { DF_FROM, DF_RUN, DF_ENV, DF_WORKDIR, DF_USER, DF_ARG, DF_COPY };

struct df_pair {
    char *key;
    char *value; /* NULL for an ARG without default */
};

struct df_step {
    enum df_kind kind;
    int line;      /* 1-based line where the instruction starts */
    char *text;    /* the instruction as written (continuations joined) */
    char *arg;     /* RUN: shell command; FROM: image; WORKDIR/USER: value */
    struct df_pair *pairs; /* ENV and ARG */
    size_t n_pairs;
    char *src;     /* COPY */
    char *dst;
};

struct df_file {
    struct df_step *steps;
    size_t n;
};

/* Parses text into out (zeroed first).  Returns 0, or -1 with a message
 * naming the line and what to change (e.g. "line 3: ADD is not supported
 * by the local engine ..."). */
int dockerfile_parse(const char *text, struct df_file *out, char *err, size_t errlen);
void dockerfile_free(struct df_file *f);
const char *dockerfile_kind_name(enum df_kind kind);

#endif
