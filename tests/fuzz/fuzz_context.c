/*
 * A context file, any bytes (client/ctl/ctxstore.c): ctx_parse never
 * reads past them, what it accepts is printable text within its bounds,
 * and writing it back and reading that again gives the same context.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../client/ctl/ctxstore.h"
#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx a, b;
	char err[256], out[CTX_FILE_MAX + 1], *buf;
	size_t n;

	if ((buf = malloc(size > 0 ? size : 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	memset(&a, 0, sizeof a);
	if (ctx_parse(buf, size, &a, err, sizeof err) == 0) {
		if (a.host[0] == '\0' || !text_utf8_printable(a.host) ||
		    !text_utf8_printable(a.description) ||
		    !text_utf8_printable(a.remote_command))
			abort();
		/* What it accepted it can write, and reads back the same. */
		if ((n = ctx_format(&a, out, sizeof out)) == 0)
			abort();
		memset(&b, 0, sizeof b);
		if (ctx_parse(out, n, &b, err, sizeof err) != 0 ||
		    strcmp(a.host, b.host) != 0 ||
		    strcmp(a.description, b.description) != 0 ||
		    strcmp(a.remote_command, b.remote_command) != 0)
			abort();
	}
	free(buf);
	return 0;
}
