/*
 * What limactl prints, as hostile as a Lima home can make it: the
 * `limactl list --json` parser and the stderr message picker. Whatever
 * they return is bounded and printable.
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
	if (!printable(msg, sizeof msg))
		abort();
	free(text);
	return 0;
}
