/*
 * resources.c - URI templates and the resource a URI names.
 */
#include "resources.h"

#include <string.h>

#include "registry.h"

bool resources_template_match(const char *tpl, const char *uri)
{
    while (*tpl != '\0') {
        if (*tpl == '{') {
            const char *close = strchr(tpl, '}');
            bool reserved = tpl[1] == '+';
            const char *u = uri;

            if (close == NULL)
                return false;
            tpl = close + 1;
            /* Shortest match first, so literal text after it can match. */
            while (*u != '\0' && (reserved || *u != '/')) {
                u++;
                if (resources_template_match(tpl, u))
                    return true;
            }
            return false;
        }
        if (*tpl != *uri)
            return false;
        tpl++;
        uri++;
    }
    return *uri == '\0';
}

/* Characters of a template outside its {expressions}. */
static size_t literal_len(const char *tpl)
{
    size_t n = 0;
    bool in_expr = false;

    for (; *tpl != '\0'; tpl++) {
        if (*tpl == '{')
            in_expr = true;
        else if (*tpl == '}')
            in_expr = false;
        else if (!in_expr)
            n++;
    }
    return n;
}

const struct resource_entry *resources_find(const struct registry *reg,
                                            const char *uri)
{
    const struct resource_entry *best = NULL;
    size_t best_len = 0;
    size_t n = registry_resource_count(reg);
    size_t i;

    for (i = 0; i < n; i++) {
        const struct resource_entry *e = registry_resource_at(reg, i);

        if (e->uri != NULL && strcmp(e->uri, uri) == 0)
            return e;
    }
    for (i = 0; i < n; i++) {
        const struct resource_entry *e = registry_resource_at(reg, i);
        size_t len = 0;

        if (e->uri_template == NULL ||
            !resources_template_match(e->uri_template, uri))
            continue;
        len = literal_len(e->uri_template);
        if (best == NULL || len > best_len) {
            best = e;
            best_len = len;
        }
    }
    return best;
}
