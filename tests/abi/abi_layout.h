/*
 * The layout of the plugin ABI's sized structs as one header compiles them:
 * abi_layout.c is built once per frozen minor header (abi_layout_1_N) and
 * once against today's sdk/include (abi_layout_today). No rlmcp header
 * here: each object sees only its own.
 */
#ifndef RLMCP_TESTS_ABI_LAYOUT_H
#define RLMCP_TESTS_ABI_LAYOUT_H

#include <stddef.h>

struct abi_field {
    const char *type;  /* "rlmcp_tool_def" */
    const char *field; /* NULL: the row of the struct's sizeof */
    size_t offset;
    size_t size;
};

struct abi_layout {
    int minor; /* RLMCP_ABI_MINOR of the header */
    const struct abi_field *rows;
    size_t n_rows;
    size_t n_services; /* function pointers in rlmcp_host_api */
};

#define ABI_N_FROZEN 7 /* 1.0 ... 1.6 */

const struct abi_layout *abi_layout_1_0(void);
const struct abi_layout *abi_layout_1_1(void);
const struct abi_layout *abi_layout_1_2(void);
const struct abi_layout *abi_layout_1_3(void);
const struct abi_layout *abi_layout_1_4(void);
const struct abi_layout *abi_layout_1_5(void);
const struct abi_layout *abi_layout_1_6(void);
const struct abi_layout *abi_layout_today(void);

#endif
