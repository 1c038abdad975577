/*
 * exe_dir.h - where the running executable is, and what lies beside it.
 */
#ifndef RLMCP_HOST_EXE_DIR_H
#define RLMCP_HOST_EXE_DIR_H

#include <stddef.h>

/* The directory of the running executable, malloc'd, or NULL. */
char *exe_dir(void);

/* The first of <exe dir><rel[i]> that is a directory (malloc'd), or NULL. */
char *exe_dir_beside(const char *const *rel, size_t n);

#endif
