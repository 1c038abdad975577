/*
 * cli.h - runloop-mcp's subcommands besides serving:
 *
 *   runloop-mcp engine status|start|stop|logs   (cli_engine.c)
 *   runloop-mcp install-client CLIENT           (cli_client.c)
 *
 * Each takes argv with argv[0] the subcommand's name and returns the exit
 * status (0 ok, 2 usage or deployment error, 1 failure; engine status
 * returns 3 when no engine runs).
 */
#ifndef RLMCP_HOST_CLI_H
#define RLMCP_HOST_CLI_H

#include "config.h"

#define CLI_EXIT_USAGE 2

/* Loads the deployment at path, or the default one when path is NULL (as
 * serving finds it). 0, or -1 after printing what to fix. */
typedef int (*cli_load_fn)(const char *path, struct host_config *cfg);

int cli_engine_main(int argc, char **argv, cli_load_fn load);
int cli_client_main(int argc, char **argv);

#endif
