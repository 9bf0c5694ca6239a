/*
 * The copy-out extractor with hostile archives: each input is extracted
 * into a fresh directory inside a private base directory, with the limits
 * the client uses in tests (1 MiB, 1000 entries). Afterwards the base must
 * hold nothing but that directory: no member escaped next to it.
 */
#include <limits.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentlane.h"
#include "lib/tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char base[PATH_MAX];

struct source {
	const uint8_t *data;
	size_t size, off;
};

/* Hands out the input in chunks of up to 4 KiB, like a socket. */
static ssize_t
source_read(void *arg, const void **buf, struct al_error *err)
{
	struct source *s = arg;
	size_t n = s->size - s->off;

	if (n > 4096)
		n = 4096;
	*buf = s->data + s->off;
	s->off += n;
	return (ssize_t)n;
}

static void
cleanup(void)
{
	if (base[0] != '\0')
		al_remove_tree(base);
}

static size_t
entries_in(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	size_t n = 0;

	if (d == NULL)
		abort();
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct al_tar_limits lim = { 1u << 20, 1000 };
	struct source s = { data, size, 0 };
	struct al_error err;
	char dir[PATH_MAX + 8];
	uint64_t entries = 0;
	int rc;

	if (base[0] == '\0') {
		char tmpl[] = "/tmp/fuzz_tar.XXXXXX";

		/* realpath: extraction refuses symbolic links above dir. */
		if (mkdtemp(tmpl) == NULL || realpath(tmpl, base) == NULL)
			abort();
		atexit(cleanup);
	}
	snprintf(dir, sizeof dir, "%s/x", base);
	if (mkdir(dir, 0700) == -1)
		abort();
	memset(&err, 0, sizeof err);
	rc = al_tar_extract(source_read, &s, dir, &lim, &entries, &err);
	if (rc == -1 && (err.code == 0 || err.message[0] == '\0'))
		abort();
	if (rc == 0 && entries > lim.max_entries)
		abort();
	/* Only x next to x: nothing climbed out of it. */
	if (entries_in(base) != 1)
		abort();
	al_remove_tree(dir);
	if (entries_in(base) != 0)
		abort();
	return 0;
}
