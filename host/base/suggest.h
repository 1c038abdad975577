/*
 * suggest.h - the edit distance behind every "did you mean" of the host
 * (deployment keys and names, tool arguments' property names).
 */
#ifndef RLMCP_HOST_SUGGEST_H
#define RLMCP_HOST_SUGGEST_H

#include <stddef.h>

/*
 * Levenshtein distance between a and b, ignoring ASCII case (a misspelt
 * case is one more thing to suggest the right spelling for). SIZE_MAX when
 * either is longer than 64 bytes: no suggestion for long texts.
 */
size_t suggest_distance(const char *a, const char *b);

#endif
