/*
 * Text rules shared by the daemon and the CLI, each decided in one place:
 * what may go into a label value (and so into logs and JSON output), and
 * how text from outside (a guest, limactl, a daemon) is made safe for a
 * protobuf string and a terminal.
 */
#ifndef AGENTLANE_TEXT_H
#define AGENTLANE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The length of the well-formed UTF-8 sequence at p, at most len bytes,
 * and its code point; 0 if there is none (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF). Reads no byte past one that fails.
 */
size_t text_utf8_decode(const unsigned char *p, size_t len, uint32_t *cp);
/* text_utf8_decode of a NUL-terminated string. */
size_t text_utf8_len(const unsigned char *);
/* p[0..len) is the start of a well-formed sequence that len cut short. */
bool text_utf8_cut(const unsigned char *p, size_t len);
/*
 * Code points that steer a terminal rather than print: C0 and C1 controls
 * (U+009B is CSI, U+009D OSC, U+009C ST), DEL, and the bidirectional
 * overrides and isolates, which can make text display as something it
 * does not say.
 */
bool text_is_control(uint32_t cp);
/*
 * Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF) holding no control character, C0, DEL or C1.
 */
bool text_utf8_printable(const char *);

/*
 * The rule for text from outside, in place: well-formed UTF-8 is kept;
 * each invalid byte (a raw 0x9b too), and each control character
 * (text_is_control), becomes '?'. The result is never longer.
 */
void text_sanitize(char *s);

/*
 * The same rule on a stream that arrives in chunks (a boot console): a
 * sequence cut by a chunk's end is held for the next. lines: line ends
 * and tabs are kept and carriage returns dropped, as a log wants. put
 * writes the pieces; false from it stops and is returned.
 */
struct text_stream {
	bool lines;
	unsigned char carry[4];
	size_t ncarry;
};
bool text_stream_put(struct text_stream *, const void *data, size_t len,
    bool (*put)(const void *, size_t, void *), void *arg);
/* At the stream's end: a sequence it ended in is one '?' a byte. */
bool text_stream_end(struct text_stream *,
    bool (*put)(const void *, size_t, void *), void *arg);

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

/*
 * A secret's own credential headers (create --secret-header
 * NAME=HEADER[,HEADER...], agent-laned.conf's secret_header): the headers
 * the proxy may put its value in besides the default ones (Authorization,
 * x-api-key, ...). The same rules as the proxy's secret_set_headers
 * (daemon/secret.h), which has the last word.
 */
#define TEXT_SECRET_HEADERS_MAX 8	/* a secret's own headers */
#define TEXT_SECRET_HEADER_MAX 64	/* bytes of one header name */

/*
 * A header name a value may go in: an HTTP token (RFC 9110) of 1 to
 * TEXT_SECRET_HEADER_MAX bytes, and not a header the proxy frames, routes
 * or drops (Host, Connection, Content-Length, Transfer-Encoding, TE,
 * Trailer, Upgrade, Expect, Keep-Alive, Proxy-*) nor Cookie or Set-Cookie,
 * in any case.
 */
bool text_secret_header_valid(const char *);
/*
 * Splits NAME=HEADER[,HEADER...] at the first '=': the name into name, as
 * text_secret_spec does, *headers to the text after the '='. False when
 * the name is invalid or there is no '=' or nothing after it (the headers
 * themselves are the caller's to check).
 */
bool text_secret_header_spec(const char *spec,
    char name[TEXT_SECRET_NAME_MAX + 1], const char **headers);

#endif
