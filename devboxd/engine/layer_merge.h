/* Merging two overlay layers into one: a final build stage FROM an earlier
 * stage leaves the earlier stage's layer and its own in the built image,
 * and a blueprint keeps one layer over its base. */
#ifndef DEVBOXD_LAYER_MERGE_H
#define DEVBOXD_LAYER_MERGE_H

#include <stddef.h>

/* Moves the overlay upper dir `upper` (kernel whiteouts: 0/0 character
 * devices, "trusted.overlay.opaque" directories) onto the layer `lower` so
 * that `lower` alone then shows, over any base, what `upper` over `lower`
 * showed. Both on one filesystem; `upper` is consumed. 0, or -1 with err. */
int layer_merge(const char *upper, const char *lower, char *err, size_t errlen);

#endif
