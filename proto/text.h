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

/*
 * Lane secrets (create --secret NAME@HOST[,HOST...]): the daemon and the
 * CLI check them alike, so that the CLI can refuse before it sends.
 */
#define TEXT_SECRET_NAME_MAX 63		/* a secret's variable name */
#define TEXT_SECRET_VALUE_MAX 8192	/* a secret's value, bytes */

/* An environment variable name fit for a secret: [A-Za-z_][A-Za-z0-9_]{0,62}. */
bool text_secret_name_valid(const char *);
/*
 * A secret's value: 1 to TEXT_SECRET_VALUE_MAX bytes of printable ASCII
 * (0x20-0x7e), no space at either end. It is put into HTTP header values
 * upstream, so a CR, LF or NUL in it could forge headers.
 */
bool text_secret_value_valid(const void *, size_t);
/*
 * Splits NAME@HOST[,HOST...] at the first '@': the name into name (NUL
 * terminated, up to TEXT_SECRET_NAME_MAX), *hosts to the text after the
 * '@', or NULL when there is none (NAME alone). False when the name is
 * invalid, or an '@' has nothing after it.
 */
bool text_secret_spec(const char *spec, char name[TEXT_SECRET_NAME_MAX + 1],
    const char **hosts);

#endif
