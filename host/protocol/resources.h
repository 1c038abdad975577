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
#include <stddef.h>

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

/* ---- subscriptions ------------------------------------------------------ */

struct mcp_dispatcher;
struct mcp_session;
struct res_watch;

/* How often a watched resource is re-read (after the last read ended). */
#define RES_WATCH_INTERVAL_MS 500u
/* Resources one session may watch at once. */
#define RES_WATCH_MAX_PER_SESSION 64u

/* The dispatcher's watcher; its thread starts with the first watch. */
struct res_watch *resources_watch_new(struct mcp_dispatcher *d);

/*
 * Watch uri (of a RLMCP_RESOURCE_SUBSCRIBABLE resource) for session s,
 * reading it with api_key (may be NULL: the deployment's). Each read finds
 * the resource in the deployment current then (a reload may change it; a
 * resource no longer there is not read). Watching it again is a no-op. 0,
 * or -1 when the session watches too many (or out of memory).
 */
int resources_watch_add(struct res_watch *w, struct mcp_session *s,
                        const char *uri, const char *api_key);
void resources_watch_remove(struct res_watch *w, struct mcp_session *s,
                            const char *uri);
/* Forget everything session s watches (its end). */
void resources_watch_session(struct res_watch *w, struct mcp_session *s);
/* Stop the thread, cancel the reads in flight, wait for them, free. */
void resources_watch_free(struct res_watch *w);

#endif
