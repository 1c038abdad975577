# cmake -DIN=FILE -DOUT=FILE.c -DNAME=sym -P cmake/embed_bytes.cmake
# Writes a file's bytes as a C array (NAME, NAME_len, NUL-terminated): the
# scripts a plugin installs in a devbox (the browser driver, the code
# contexts gateway) are compiled into it.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT}.tmp
"/* Generated from ${IN} by embed_bytes.cmake: do not edit. */\n#include <stddef.h>\n\n"
"const unsigned char ${NAME}[] = {\n${bytes}0x00};\n"
"const size_t ${NAME}_len = ${len};\n")
file(RENAME ${OUT}.tmp ${OUT})
