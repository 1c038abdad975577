/*
 * cli.h - runloop-mcp's subcommands besides serving:
 *
 *   runloop-mcp engine status|start|stop|logs   (cli_engine.c)
 *   runloop-mcp install-client CLIENT           (cli_client.c)
 *   runloop-mcp ssh DEVBOX [COMMAND...]         (cli_ssh.c)
 *
 * Each takes argv with argv[0] the subcommand's name and returns the exit
 * status (0 ok, 2 usage or deployment error, 1 failure; engine status
 * returns 3 when no engine runs).
 */
#ifndef RLMCP_HOST_CLI_H
#define RLMCP_HOST_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"

#define CLI_EXIT_USAGE 2

/*
 * A subcommand's first word, argv[1]: 0 with *index its place in names (n
 * of them; n when it is none of them, for the caller to say so); 1 after
 * -h or --help printed usage to stdout; -1 when it is missing (usage on
 * stderr).
 */
int cli_word(int argc, char **argv, const char *const *names, size_t n,
             void (*usage)(FILE *), size_t *index);
/* After getopt_long answered ch ':' (no value) or '?' (unknown option):
 * says so, as "runloop-mcp: <cmd>: ...", and returns -1. */
int cli_option_error(const char *cmd, int ch, char **argv);
/* -1 after saying so when words are left after the options, else 0. */
int cli_no_more_args(const char *cmd, int argc, char **argv);

/* Loads the deployment at path, or the default one when path is NULL (as
 * serving finds it). 0, or -1 after printing what to fix. */
typedef int (*cli_load_fn)(const char *path, struct host_config *cfg);

int cli_engine_main(int argc, char **argv, cli_load_fn load);
int cli_client_main(int argc, char **argv);
int cli_ssh_main(int argc, char **argv, cli_load_fn load);

#endif
