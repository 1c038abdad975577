/*
 * cli.c - what the subcommands (cli.h) share: reading their first word
 * and reporting the arguments getopt_long refused, in one wording.
 */
#include "cli.h"

#include <getopt.h>
#include <string.h>

int cli_word(int argc, char **argv, const char *const *names, size_t n,
             void (*usage)(FILE *), size_t *index)
{
    const char *word = argc > 1 ? argv[1] : NULL;
    size_t i = 0;

    if (word == NULL) {
        usage(stderr);
        return -1;
    }
    if (strcmp(word, "-h") == 0 || strcmp(word, "--help") == 0) {
        usage(stdout);
        return 1;
    }
    for (i = 0; i < n; i++) {
        if (strcmp(word, names[i]) == 0)
            break;
    }
    *index = i;
    return 0;
}

int cli_option_error(const char *cmd, int ch, char **argv)
{
    if (ch == ':')
        fprintf(stderr, "runloop-mcp: %s: option '%s' needs a value\n", cmd,
                argv[optind - 1]);
    else
        fprintf(stderr, "runloop-mcp: %s: unknown option '%s'; see %s --help\n",
                cmd, argv[optind - 1], cmd);
    return -1;
}

int cli_no_more_args(const char *cmd, int argc, char **argv)
{
    if (optind >= argc)
        return 0;
    fprintf(stderr, "runloop-mcp: %s: unexpected argument '%s'\n", cmd,
            argv[optind]);
    return -1;
}
