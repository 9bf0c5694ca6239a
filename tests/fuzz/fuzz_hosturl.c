/*
 * A host URL, any bytes ($AGENT_LANE_HOST, --host, a context file):
 * al_host_parse never reads past the string, never lets through a user or
 * host ssh would take as an option or that the remote shell would split,
 * and what it accepts is shown as a URL that parses back to the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
safe(const char *s)
{
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("._-:%", *s) != NULL))
			return 0;
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct al_host h, h2;
	struct al_error err;
	char url[AL_HOST_URL_MAX], *s;

	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (al_host_parse(s, &h, &err) == 0) {
		if (h.kind == AL_HOST_SSH && (h.host[0] == '\0' ||
		    h.host[0] == '-' || h.user[0] == '-' || !safe(h.host) ||
		    !safe(h.user)))
			abort();
		if (h.kind == AL_HOST_UNIX && h.path[0] != '/')
			abort();
		al_host_url(&h, url, sizeof url);
		if (al_host_parse(url, &h2, &err) != 0 || h2.kind != h.kind ||
		    strcmp(h.host, h2.host) != 0 || strcmp(h.user, h2.user) != 0 ||
		    h.port != h2.port || strcmp(h.path, h2.path) != 0)
			abort();
	}
	al_remote_command_valid(s);
	free(s);
	return 0;
}
