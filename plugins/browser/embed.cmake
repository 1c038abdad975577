# cmake -DIN=driver.cjs -DOUT=driver_js.c -P embed.cmake
# Writes the driver's bytes as a C array (br_driver_js, br_driver_js_len).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT}.tmp
"/* Generated from driver.cjs by embed.cmake: do not edit. */\n#include <stddef.h>\n\n"
"const unsigned char br_driver_js[] = {\n${bytes}0x00};\n"
"const size_t br_driver_js_len = ${len};\n")
file(RENAME ${OUT}.tmp ${OUT})
