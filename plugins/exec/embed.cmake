# cmake -DIN=ctxgw.py -DOUT=ctxgw_py.c -DNAME=ex_ctxgw_py -P embed.cmake
# Writes a file's bytes as a C array (NAME, NAME_len).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT}.tmp
"/* Generated from ${IN} by embed.cmake: do not edit. */\n#include <stddef.h>\n\n"
"const unsigned char ${NAME}[] = {\n${bytes}0x00};\n"
"const size_t ${NAME}_len = ${len};\n")
file(RENAME ${OUT}.tmp ${OUT})
