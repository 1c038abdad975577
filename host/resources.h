/*
 * resources.h - finding the resource a URI names (fixed URIs and RFC 6570
 * templates), and the subscriptions: a subscribed resource whose plugin
 * marked it RLMCP_RESOURCE_SUBSCRIBABLE is re-read in the background and
 * notifications/resources/updated goes to the session when its result
 * changed.
 */
#ifndef RLMCP_HOST_RESOURCES_H
#define RLMCP_HOST_RESOURCES_H

#include <stdbool.h>

struct registry;
struct resource_entry;

/*
 * RFC 6570 matching of a URI against a template: {var} matches one or
 * more characters but '/', {+var} (reserved expansion) one or more of any.
 */
bool resources_template_match(const char *tpl, const char *uri);

/*
 * The resource uri names: a fixed URI first, else the matching template
 * with the most literal text (devbox://{id}/executions/{eid}/stdout wins
 * over devbox://{id}/{+path}). NULL when none matches.
 */
const struct resource_entry *resources_find(const struct registry *reg,
                                            const char *uri);

#endif
