/*
 * secret.c - wiping secrets held as text (see secret.h).
 */
#include "secret.h"

#include <stdlib.h>
#include <string.h>

void secret_free(char *s)
{
    if (s == NULL)
        return;
    explicit_bzero(s, strlen(s));
    free(s);
}
