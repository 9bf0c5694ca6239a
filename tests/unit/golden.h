/*
 * Golden files of the unit tests (tests/unit/golden/): the rendered text
 * must equal the file byte for byte. AL_UPDATE_GOLDEN=1 writes the files
 * instead, for a change that is meant: review the diff; the real-Lima
 * tier's tests/lima/validate.sh then checks every lane YAML against
 * Lima's own `limactl validate`. Include after <cmocka.h>.
 */
#ifndef AL_TEST_GOLDEN_H
#define AL_TEST_GOLDEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The golden directory sits next to this header. */
static void
golden_path(const char *name, char *path, size_t len)
{
	const char *slash = strrchr(__FILE__, '/');

	snprintf(path, len, "%.*sgolden/%s",
	    slash != NULL ? (int)(slash - __FILE__ + 1) : 0, __FILE__, name);
}

static char *
golden_read(const char *name, size_t *len)
{
	char path[1024], *buf;
	FILE *f;
	long size;

	golden_path(name, path, sizeof path);
	if ((f = fopen(path, "rb")) == NULL)
		fail_msg("%s: cannot open (run from the repository root)", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	assert_true(size >= 0);
	rewind(f);
	buf = calloc(1, (size_t)size + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	*len = (size_t)size;
	return buf;
}

static void
golden_check(const char *name, const char *text, size_t n)
{
	char path[1024], *golden;
	size_t glen;
	FILE *f;

	if (getenv("AL_UPDATE_GOLDEN") != NULL) {
		golden_path(name, path, sizeof path);
		assert_non_null(f = fopen(path, "wb"));
		assert_int_equal(fwrite(text, 1, n, f), n);
		assert_int_equal(fclose(f), 0);
		return;
	}
	golden = golden_read(name, &glen);
	if (n != glen || memcmp(text, golden, glen) != 0)
		fail_msg("rendered text differs from tests/unit/golden/%s "
		    "(AL_UPDATE_GOLDEN=1 rewrites it); rendered:\n%s", name, text);
	free(golden);
}

#endif
