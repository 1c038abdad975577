/*
 * screen.h - turning raw terminal output into text for a model.
 *
 * The rules (docs/tools.md, "Terminal output as text", repeats them):
 *  - CSI sequences (ESC [ params intermediates final) are removed. Four
 *    are applied to the current line first: K (erase to end of line; 2K
 *    clears the line, 1K blanks it up to the cursor), C (cursor forward n),
 *    D (cursor back n), G (cursor to column n).
 *  - OSC (ESC ]) ends at BEL or ESC \ and is removed; so are DCS, SOS, PM
 *    and APC strings (ESC P / X / ^ / _ ... ESC \). Other ESC sequences
 *    (ESC, intermediates 0x20-0x2F, one final byte) are removed.
 *  - \r\n and \n end a line. A lone \r moves the cursor to column 0, so
 *    later text overwrites the line (progress bars keep their last state).
 *    Backspace moves the cursor one character left without erasing, as a
 *    terminal does: "ab\b\bX" gives "Xb", and a shell's erase echo
 *    "ab\b \b" leaves "a " (the blank that overwrote the b).
 *  - Tab is kept; every other C0 control and DEL is dropped.
 *  - Text is UTF-8; an invalid byte (also an 8-bit C1 control such as 0x9B)
 *    becomes U+FFFD. The cursor moves by characters, not bytes.
 *  - A sequence cut off at the end of the data is dropped.
 */
#ifndef RLMCP_PTY_SCREEN_H
#define RLMCP_PTY_SCREEN_H

#include <stddef.h>

/* The cleaned text of data (NUL-terminated, malloc'd), NULL on ENOMEM. */
char *pty_screen_text(const char *data, size_t len);

#endif
