/*
 * What limactl prints, as hostile as a Lima home can make it: the
 * `limactl list --json` parser and the stderr message picker. Whatever
 * they return is bounded: names and statuses printable ASCII, messages
 * well-formed UTF-8 without control characters.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lima.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static bool
printable(const char *s, size_t size)
{
	const char *end = memchr(s, '\0', size);

	if (end == NULL)
		return false;
	for (; s < end; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* Terminated within size, well-formed UTF-8 (RFC 3629), no C0/DEL/C1. */
static bool
utf8_text(const char *str, size_t size)
{
	const unsigned char *s = (const unsigned char *)str, *end;
	uint32_t c, min;
	size_t n;

	if ((end = memchr(s, '\0', size)) == NULL)
		return false;
	while (s < end) {
		if (s[0] < 0x80) {
			if (s[0] < 0x20 || s[0] == 0x7f)
				return false;
			s++;
			continue;
		}
		if (s[0] >= 0xc2 && s[0] <= 0xdf) {
			n = 2;
			c = s[0] & 0x1f;
			min = 0x80;
		} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
			n = 3;
			c = s[0] & 0x0f;
			min = 0x800;
		} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
			n = 4;
			c = s[0] & 0x07;
			min = 0x10000;
		} else
			return false;
		if ((size_t)(end - s) < n)
			return false;
		for (size_t i = 1; i < n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			c = (c << 6) | (s[i] & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) ||
		    (c >= 0x80 && c <= 0x9f))
			return false;
		s += n;
	}
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct lima *l;
	struct lima_instance *v = NULL;
	size_t n = 0;
	char err[256], msg[512], *text;

	if (l == NULL)
		l = lima_new("/bin/true", "/tmp/fuzz-lima", "template:_images/x",
		    NULL);

	err[0] = '\0';
	if (lima_list_parse(l, (const char *)data, size, &v, &n, 64, err,
	    sizeof err) == 0) {
		if (n > 64)
			abort();
		for (size_t i = 0; i < n; i++)
			if (!printable(v[i].name, sizeof v[i].name) ||
			    !printable(v[i].status, sizeof v[i].status))
				abort();
		free(v);
	} else if (memchr(err, '\0', sizeof err) == NULL || err[0] == '\0')
		abort();

	if ((text = malloc(size + 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	lima_error_message(l, text, msg, sizeof msg);
	if (!utf8_text(msg, sizeof msg))
		abort();
	free(text);
	return 0;
}
