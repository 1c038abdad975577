/*
 * suggest.c - see suggest.h.
 */
#include "suggest.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

#define SUGGEST_MAX 64

size_t suggest_distance(const char *a, const char *b)
{
    size_t la = strlen(a);
    size_t lb = strlen(b);
    size_t row[SUGGEST_MAX + 1];
    size_t i = 0;
    size_t j = 0;

    if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
        return SIZE_MAX;
    for (j = 0; j <= lb; j++)
        row[j] = j;
    for (i = 1; i <= la; i++) {
        size_t diag = row[0]; /* row[j - 1] of the previous line */

        row[0] = i;
        for (j = 1; j <= lb; j++) {
            size_t up = row[j];
            int same = tolower((unsigned char)a[i - 1]) ==
                       tolower((unsigned char)b[j - 1]);
            size_t best = diag + (same ? 0 : 1);

            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}
