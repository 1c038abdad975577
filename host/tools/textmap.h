/*
 * textmap.h - plugin-written text as this deployment exposes it.
 *
 * Plugins write descriptions and remedies with the tool and parameter names
 * they register. A deployment may rename tools and parameters (aliases) and
 * hide tools (allow/exclude, or a plugin it does not load). textmap rewrites
 * such text so it names only what the deployment exposes:
 *
 *  - a registered tool name becomes its exposed name;
 *  - a parameter name becomes its exposed name, for the tool named last
 *    before it in the same sentence, else for the tool the text belongs to;
 *  - with TEXTMAP_DROP_HIDDEN, a sentence naming a hidden tool is removed,
 *    or only the parenthesised part when the name is inside parentheses.
 *
 * A hidden tool is a registered tool the selection left out, or a tool of a
 * bundled plugin this deployment does not load.
 */
#ifndef RLMCP_HOST_TEXTMAP_H
#define RLMCP_HOST_TEXTMAP_H

#include <stdbool.h>

#include "rlmcp/plugin.h"

struct registry;
struct tool_entry;

enum { TEXTMAP_RENAME = 0, TEXTMAP_DROP_HIDDEN = 1 };

/*
 * The text rewritten for the deployment (malloc'd), "" when every sentence
 * was dropped; NULL only when out of memory. self (may be NULL) is the tool
 * the text belongs to. Needs the selection applied (tool_entry.selected).
 */
char *textmap_apply(const struct registry *reg, const struct tool_entry *self,
                    const char *text, int flags);

/* The name t's parameter param is exposed as; NULL when not renamed. */
const char *textmap_param_name(const struct tool_entry *t, const char *param);

#endif
