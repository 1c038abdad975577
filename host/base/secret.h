/*
 * secret.h - secrets held as text (API keys, tokens, the state secret):
 * their bytes are wiped before the memory goes back, so a later
 * allocation or a core file never shows them.
 */
#ifndef RLMCP_HOST_SECRET_H
#define RLMCP_HOST_SECRET_H

/* Wipe the NUL-terminated s and free it; NULL does nothing. */
void secret_free(char *s);

#endif
