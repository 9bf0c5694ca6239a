/*
 * Text checks shared by the daemon and the CLI: what may go into a label
 * value (and so into logs and JSON output) is decided in one place.
 */
#ifndef AGENTLANE_TEXT_H
#define AGENTLANE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The length of the well-formed UTF-8 sequence at p, or 0 if there is
 * none (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF).
 */
size_t text_utf8_len(const unsigned char *);
/*
 * Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF) holding no control character, C0, DEL or C1.
 */
bool text_utf8_printable(const char *);

#endif
