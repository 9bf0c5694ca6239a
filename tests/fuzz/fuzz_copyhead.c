/*
 * The copy-out script's first line (copy_head_parse) with hostile bytes:
 * it never reads past the line's end, only the two kinds pass, and a mode
 * is never more than permission bits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "copy.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct copy_head h;
	char *line;

	if (len > 64)
		return 0;	/* the daemon reads at most 31 bytes of it */
	if ((line = malloc(len + 1)) == NULL)
		return 0;
	memcpy(line, data, len);
	line[len] = '\0';
	if (copy_head_parse(line, &h)) {
		if (line[0] != 'D' && line[0] != 'F')
			abort();
		if ((h.mode & ~0777u) != 0 ||
		    (h.kind == AGENTLANE__V1__COPY_KIND__DIRECTORY && h.mode != 0))
			abort();
	}
	free(line);
	return 0;
}
