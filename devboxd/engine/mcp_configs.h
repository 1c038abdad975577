/* devboxd MCP configs (mcp_configs.c): the /v1/mcp-configs records under
 * <state>/mcp-configs/ (0600), the calls behind their routes
 * (rest/api_mcp_configs.c) and the `mcp` map of a devbox create. See
 * net/mcphub.h for the hub that serves them inside a devbox. Calls
 * returning int give 0, or an HTTP status with a message in err. */
#ifndef DEVBOXD_MCP_CONFIGS_H
#define DEVBOXD_MCP_CONFIGS_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "engine.h"

#define MCPHUB_PORT 14 /* inside each devbox: http://127.0.0.1:14/mcp */
#define MCPHUB_URL "http://127.0.0.1:14/mcp"
#define MCP_MAX_HEADERS 8
#define MCP_MAX_SERVERS 16 /* per devbox */

/* Creates (id NULL) or updates the config with body's fields; *view: the
 * result. */
int mcp_configs_write(struct engine *eng, const char *id, const cJSON *body,
                      cJSON **view, char *err, size_t errlen);
int mcp_configs_delete(struct engine *eng, const char *id, cJSON **view,
                       char *err, size_t errlen);
int mcp_configs_get(struct engine *eng, const char *id, cJSON **view, char *err,
                    size_t errlen);
/* Every config's view, newest first. */
cJSON *mcp_configs_list(struct engine *eng);
/* 0 when id has the shape of a config id, else 404 with err. */
int mcp_configs_check_id(const char *id, char *err, size_t errlen);
/* Checks the shape of a create body's `mcp` map. 0 or -1 with err. */
int mcp_configs_check_spec(const cJSON *body, char *err, size_t errlen);
/* Resolves a create body's `mcp` into spec "_mcp" and adds RL_MCP_URL and
 * the tokens to spec "_secret_env". 0, or an HTTP status with err. */
int mcp_configs_resolve_create(struct engine *eng, const cJSON *body,
                               cJSON *spec, char *err, size_t errlen);
/* 1 when pattern list `allowed` (array of globs) admits tool name. */
int mcp_configs_tool_allowed(const cJSON *allowed, const char *name);

#endif
