/* devboxd MCP Hub: MCP configs (engine/mcp_configs.c) and the hub itself
 * (mcphub.c).
 *
 * /v1/mcp-configs records live under <state>/mcp-configs/ (0600). A devbox
 * create's `mcp: {ENV: {mcp_config, secret}}` resolves, at create time,
 * each server's endpoint, allowed tools and credential (the secret's value
 * and secret-backed custom headers) into the devbox's private spec
 * ("_mcp"); the devbox gets $RL_MCP_URL and an opaque token in $ENV.
 * devboxd serves $RL_MCP_URL itself from a listener in the devbox's network
 * namespace (127.0.0.1:MCPHUB_PORT, reachable from that devbox only): a
 * request with a server's token is forwarded to its endpoint with the real
 * credential added; tools/list answers keep only the allowed tools and
 * tools/call of any other tool is refused. The credential never enters
 * the devbox. See docs/devboxd.md, "MCP Hub". */
#ifndef DEVBOXD_MCPHUB_H
#define DEVBOXD_MCPHUB_H

#include <cjson/cJSON.h>

#include "engine.h"
#include "mcp_configs.h"

/* ---- mcphub.c ---- */
struct sandbox;
/* Serves the hub inside a devbox whose sandbox just started (boot or
 * resume) when its spec has MCP servers. Best effort: a failure goes to
 * the devbox's logs. */
void mcphub_boot(struct engine *eng, struct devbox *box, struct sandbox *sb);
/* Stops the hub of a devbox whose sandbox stopped. */
void mcphub_forget(const char *box_id);
/* Stops every hub (engine stop). */
void mcphub_shutdown(void);

#endif
