/*
 * client/lib/tar.c: archives for copy-in and, above all, the extraction of
 * what a copy-out returns: bytes from inside a lane meeting the host file
 * system. Hostile archives are built in memory with libarchive's writer and
 * each case checks both the refusal and that nothing was written outside
 * the extraction directory.
 *
 * Layout of each test's temporary directory (realpath'd, as the API wants):
 *   BASE/x        the extraction directory
 *   BASE/outside  must stay empty
 *   BASE/src      trees to archive
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "agentlane.h"
#include "lib/tar.h"

struct fixture {
	char base[PATH_MAX];
	char x[PATH_MAX];
	char outside[PATH_MAX];
	char src[PATH_MAX];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	char tmpl[] = "/tmp/test_tar.XXXXXX";

	if (f == NULL || mkdtemp(tmpl) == NULL ||
	    realpath(tmpl, f->base) == NULL)
		return -1;
	snprintf(f->x, sizeof f->x, "%s/x", f->base);
	snprintf(f->outside, sizeof f->outside, "%s/outside", f->base);
	snprintf(f->src, sizeof f->src, "%s/src", f->base);
	if (mkdir(f->x, 0700) == -1 || mkdir(f->outside, 0700) == -1 ||
	    mkdir(f->src, 0700) == -1)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	al_remove_tree(f->base);
	free(f);
	return 0;
}

/* ---- Helpers: files ---- */

static size_t
dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/* Nothing escaped: BASE holds only x, outside and src; outside is empty. */
static void
assert_contained(const struct fixture *f)
{
	assert_int_equal(dir_entries(f->base), 3);
	assert_int_equal(dir_entries(f->outside), 0);
}

static void
write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd != -1);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void
assert_file(const char *path, const void *data, size_t len, mode_t mode)
{
	struct stat sb;
	char *buf = malloc(len + 1);
	int fd;

	assert_non_null(buf);
	if (lstat(path, &sb) == -1)
		fail_msg("%s: %s", path, strerror(errno));
	assert_true(S_ISREG(sb.st_mode));
	if ((sb.st_mode & 07777) != mode)
		fail_msg("%s: mode %o, want %o", path,
		    (unsigned)(sb.st_mode & 07777), (unsigned)mode);
	assert_int_equal(sb.st_size, len);
	assert_true((fd = open(path, O_RDONLY)) != -1);
	assert_int_equal(read(fd, buf, len + 1), (ssize_t)len);
	close(fd);
	assert_memory_equal(buf, data, len);
	free(buf);
}

static void
join(char *out, const char *dir, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s", dir, name);
}

/* ---- Helpers: archives in memory ---- */

struct mem {
	uint8_t *data;
	size_t len;
};

static int
mem_write(void *arg, const void *buf, size_t len, struct al_error *err)
{
	struct mem *m = arg;

	m->data = realloc(m->data, m->len + len);
	assert_non_null(m->data);
	memcpy(m->data + m->len, buf, len);
	m->len += len;
	return 0;
}

static la_ssize_t
mem_write_cb(struct archive *a, void *arg, const void *buf, size_t len)
{
	(void)mem_write(arg, buf, len, NULL);
	return (la_ssize_t)len;
}

/* Hands out the archive in small pseudo-random chunks, like a socket. */
struct reader {
	const uint8_t *data;
	size_t len, off;
	uint32_t rng;
	bool fail_at_end;
};

static ssize_t
mem_read(void *arg, const void **buf, struct al_error *err)
{
	struct reader *r = arg;
	size_t n;

	if (r->off == r->len) {
		if (r->fail_at_end) {
			err->code = AL_IO;
			snprintf(err->message, sizeof err->message,
			    "connection lost");
			return -1;
		}
		return 0;
	}
	/* xorshift32: deterministic, different chunk sizes 1..97. */
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 17;
	r->rng ^= r->rng << 5;
	n = 1 + r->rng % 97;
	if (n > r->len - r->off)
		n = r->len - r->off;
	*buf = r->data + r->off;
	r->off += n;
	return (ssize_t)n;
}

static struct archive *
writer_new(struct mem *m, bool pax)
{
	struct archive *a = archive_write_new();

	assert_non_null(a);
	memset(m, 0, sizeof *m);
	assert_int_equal(pax ? archive_write_set_format_pax(a) :
	    archive_write_set_format_ustar(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open(a, m, NULL, mem_write_cb, NULL),
	    ARCHIVE_OK);
	return a;
}

static void
writer_close(struct archive *a)
{
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

static void
add(struct archive *a, const char *name, mode_t type, mode_t perm,
    const char *data, const char *link)
{
	struct archive_entry *e = archive_entry_new();
	size_t len = data != NULL ? strlen(data) : 0;

	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm);
	archive_entry_set_size(e, (la_int64_t)len);
	archive_entry_set_mtime(e, 1700000000, 0);
	if (type == AE_IFLNK)
		archive_entry_set_symlink(e, link);
	if (type == AE_IFCHR || type == AE_IFBLK)
		archive_entry_set_rdev(e, makedev(1, 3));
	assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
	if (len > 0)
		assert_int_equal(archive_write_data(a, data, len), (la_ssize_t)len);
	archive_entry_free(e);
}

static void
add_file(struct archive *a, const char *name, const char *data)
{
	add(a, name, AE_IFREG, 0644, data, NULL);
}

static void
add_hardlink(struct archive *a, const char *name, const char *target)
{
	struct archive_entry *e = archive_entry_new();

	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_hardlink(e, target);
	archive_entry_set_size(e, 0);
	assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
	archive_entry_free(e);
}

static const struct al_tar_limits default_limits = { 1u << 20, 1000 };

static int
extract_limits(const struct fixture *f, const struct mem *m,
    const struct al_tar_limits *lim, uint64_t *entries, struct al_error *err)
{
	struct reader r = { m->data, m->len, 0, 0x9e3779b9u, false };

	memset(err, 0, sizeof *err);
	return al_tar_extract(mem_read, &r, f->x, lim, entries, err);
}

static int
extract(const struct fixture *f, const struct mem *m, struct al_error *err)
{
	return extract_limits(f, m, &default_limits, NULL, err);
}

/*
 * Extraction fails with code, for the reason named by want (a substring of
 * the message), and leaves everything outside x alone.
 */
static void
expect_refused(const struct fixture *f, const struct mem *m,
    const struct al_tar_limits *lim, int code, const char *want)
{
	struct al_error err;

	if (extract_limits(f, m, lim != NULL ? lim : &default_limits, NULL,
	    &err) != -1)
		fail_msg("extracted; want \"%s\"", want);
	if (err.code != code || strstr(err.message, want) == NULL)
		fail_msg("code %d \"%s\", want %d \"...%s...\"", err.code,
		    err.message, code, want);
	assert_contained(f);
}

/* Empties the extraction directory between cases of one test. */
static void
reset_x(const struct fixture *f)
{
	al_remove_tree(f->x);
	assert_int_equal(mkdir(f->x, 0700), 0);
}

/* ---- (a) Round trip ---- */

static void
build_tree(const struct fixture *f, uint8_t *blob, size_t bloblen)
{
	char p[PATH_MAX];

	for (size_t i = 0; i < bloblen; i++)
		blob[i] = (uint8_t)(i * 31 + (i >> 9));
	join(p, f->src, "run.sh");
	write_file(p, "#!/bin/sh\necho hi\n", 18, 0755);
	join(p, f->src, "secret");
	write_file(p, "s3cr3t", 6, 0600);
	join(p, f->src, "sub");
	assert_int_equal(mkdir(p, 0755), 0);
	join(p, f->src, "sub/deeper");
	assert_int_equal(mkdir(p, 0750), 0);
	join(p, f->src, "sub/deeper/data.bin");
	write_file(p, blob, bloblen, 0644);
	join(p, f->src, "sub/link");
	assert_int_equal(symlink("../run.sh", p), 0);
	join(p, f->src, "empty");
	assert_int_equal(mkdir(p, 0700), 0);
	join(p, f->src, "sub/deeper/empty.txt");
	write_file(p, "", 0, 0640);
}

static void
test_round_trip(void **state)
{
	struct fixture *f = *state;
	struct mem m = { 0 };
	struct al_error err = { 0 };
	size_t bloblen = 200000;
	uint8_t *blob = malloc(bloblen);
	char p[PATH_MAX], target[64];
	struct stat sb;
	uint64_t entries = 0;
	ssize_t n;

	assert_non_null(blob);
	build_tree(f, blob, bloblen);
	if (al_tar_create(f->src, "ignored", mem_write, &m, &err) != 0)
		fail_msg("al_tar_create: %s", err.message);
	assert_true(m.len > bloblen);

	if (extract_limits(f, &m, &default_limits, &entries, &err) != 0)
		fail_msg("al_tar_extract: %s", err.message);
	/* Members: everything below src, not src itself. */
	assert_int_equal(entries, 8);

	join(p, f->x, "run.sh");
	assert_file(p, "#!/bin/sh\necho hi\n", 18, 0755);
	join(p, f->x, "secret");
	assert_file(p, "s3cr3t", 6, 0600);
	join(p, f->x, "sub/deeper/data.bin");
	assert_file(p, blob, bloblen, 0644);
	join(p, f->x, "sub/deeper/empty.txt");
	assert_file(p, "", 0, 0640);
	join(p, f->x, "sub/deeper");
	assert_int_equal(lstat(p, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0750);
	join(p, f->x, "empty");
	assert_int_equal(lstat(p, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0700);
	assert_int_equal(dir_entries(p), 0);
	join(p, f->x, "sub/link");
	assert_int_equal(lstat(p, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	n = readlink(p, target, sizeof target);
	assert_int_equal(n, 9);
	assert_memory_equal(target, "../run.sh", 9);
	assert_int_equal(dir_entries(f->x), 4);	/* run.sh secret sub empty */
	assert_contained(f);
	free(m.data);
	free(blob);
}

static void
test_round_trip_single_file(void **state)
{
	struct fixture *f = *state;
	struct mem m = { 0 };
	struct al_error err = { 0 };
	char p[PATH_MAX];

	join(p, f->src, "run.sh");
	write_file(p, "#!/bin/sh\n", 10, 0750);
	/* A file travels as the one member it is given. */
	assert_int_equal(al_tar_create(p, "renamed.sh", mem_write, &m, &err), 0);
	assert_int_equal(extract(f, &m, &err), 0);
	join(p, f->x, "renamed.sh");
	assert_file(p, "#!/bin/sh\n", 10, 0750);
	assert_int_equal(dir_entries(f->x), 1);
	free(m.data);
}

static void
test_create_refuses_special_files(void **state)
{
	struct fixture *f = *state;
	struct mem m = { 0 };
	struct al_error err = { 0 };
	char p[PATH_MAX];

	join(p, f->src, "fifo");
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(al_tar_create(f->src, "x", mem_write, &m, &err), -1);
	assert_int_equal(err.code, AL_IO);
	free(m.data);

	memset(&m, 0, sizeof m);
	join(p, f->src, "absent");
	assert_int_equal(al_tar_create(p, "x", mem_write, &m, &err), -1);
	assert_int_equal(err.code, AL_IO);
	free(m.data);
}

/* Set-id bits never come out of an archive. */
static void
test_setid_bits_dropped(void **state)
{
	struct fixture *f = *state;
	struct mem m;
	struct archive *a = writer_new(&m, true);
	struct al_error err;
	char p[PATH_MAX];
	struct stat sb;

	add(a, "suid", AE_IFREG, 06755, "x", NULL);
	add(a, "sticky", AE_IFDIR, 01777, NULL, NULL);
	writer_close(a);
	assert_int_equal(extract(f, &m, &err), 0);
	join(p, f->x, "suid");
	assert_int_equal(lstat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 06000, 0);
	join(p, f->x, "sticky");
	assert_int_equal(lstat(p, &sb), 0);
	assert_int_equal(sb.st_mode & 07022, 0);
	free(m.data);
}

/* ---- (b) Hostile archives ---- */

static void
test_absolute_member(void **state)
{
	struct fixture *f = *state;
	struct mem m;
	struct archive *a = writer_new(&m, true);
	char p[PATH_MAX];

	join(p, f->outside, "abs");
	add_file(a, "ok", "fine");
	add_file(a, p, "pwned");
	writer_close(a);
	expect_refused(f, &m, NULL, AL_UNSAFE, "absolute path");
	free(m.data);
}

static void
test_dotdot_members(void **state)
{
	static const char *const names[] = {
		"../escape", "a/../../escape", "./../escape", "..", "a/..",
		"a/b/../../../escape",
	};

	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		struct fixture *f = *state;
		struct mem m;
		struct archive *a = writer_new(&m, i % 2 == 0);

		reset_x(f);
		add(a, "a", AE_IFDIR, 0755, NULL, NULL);
		add(a, "a/b", AE_IFDIR, 0755, NULL, NULL);
		add_file(a, names[i], "pwned");
		writer_close(a);
		expect_refused(f, &m, NULL, AL_UNSAFE, "climbs out");
		free(m.data);
	}
}

static void
test_write_through_symlink(void **state)
{
	struct fixture *f = *state;
	struct mem m;
	struct archive *a;
	char p[PATH_MAX];

	/* An absolute link out, then a file through it. */
	a = writer_new(&m, true);
	add(a, "link", AE_IFLNK, 0777, NULL, f->outside);
	add_file(a, "link/pwned", "pwned");
	writer_close(a);
	expect_refused(f, &m, NULL, AL_UNSAFE, "refused link/pwned");
	free(m.data);
	reset_x(f);

	/* A relative one, and a directory member through it. */
	a = writer_new(&m, false);
	add(a, "rel", AE_IFLNK, 0777, NULL, "../outside");
	add(a, "rel/sub", AE_IFDIR, 0755, NULL, NULL);
	writer_close(a);
	expect_refused(f, &m, NULL, AL_UNSAFE, "refused rel/sub");
	free(m.data);
	reset_x(f);

	/*
	 * A link to a file outside, then a file of the same name: libarchive
	 * replaces the link (SECURE_SYMLINKS unlinks a final symlink) rather
	 * than refusing. Either is safe; writing through it is not.
	 */
	join(p, f->outside, "target");
	a = writer_new(&m, true);
	add(a, "f", AE_IFLNK, 0777, NULL, p);
	add_file(a, "f", "pwned");
	writer_close(a);
	{
		struct al_error err;
		char inside[PATH_MAX];
		struct stat sb;

		if (extract(f, &m, &err) == 0) {
			join(inside, f->x, "f");
			assert_int_equal(lstat(inside, &sb), 0);
			assert_true(S_ISREG(sb.st_mode));
		} else
			assert_int_equal(err.code, AL_UNSAFE);
	}
	assert_int_equal(access(p, F_OK), -1);
	assert_contained(f);
	free(m.data);
}

static void
test_special_members(void **state)
{
	static const mode_t types[] = { AE_IFCHR, AE_IFBLK, AE_IFIFO };

	for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
		struct fixture *f = *state;
		struct mem m;
		struct archive *a = writer_new(&m, false);
		char p[PATH_MAX];

		reset_x(f);
		add(a, "special", types[i], 0666, NULL, NULL);
		writer_close(a);
		expect_refused(f, &m, NULL, AL_UNSAFE, "device, FIFO");
		join(p, f->x, "special");
		assert_int_equal(access(p, F_OK), -1);
		free(m.data);
	}
}

static void
test_hardlink_members(void **state)
{
	struct fixture *f = *state;
	struct mem m;
	struct archive *a;
	char p[PATH_MAX];

	a = writer_new(&m, true);
	add_file(a, "t", "data");
	add_hardlink(a, "h", "t");
	writer_close(a);
	expect_refused(f, &m, NULL, AL_UNSAFE, "hard link member refused");
	join(p, f->x, "h");
	assert_int_equal(access(p, F_OK), -1);
	free(m.data);

	/* A link to a host file would be worse still. */
	join(p, f->outside, "victim");
	write_file(p, "host", 4, 0600);
	a = writer_new(&m, false);
	add_hardlink(a, "h2", p);
	writer_close(a);
	{
		struct al_error err;

		assert_int_equal(extract(f, &m, &err), -1);
		assert_int_equal(err.code, AL_UNSAFE);
	}
	assert_file(p, "host", 4, 0600);
	assert_int_equal(dir_entries(f->x), 1);	/* only t from before */
	assert_int_equal(unlink(p), 0);
	free(m.data);
}

static void
test_too_many_entries(void **state)
{
	struct fixture *f = *state;
	struct al_tar_limits lim = { 1u << 20, 3 };
	struct mem m;
	struct archive *a = writer_new(&m, true);
	struct al_error err;
	uint64_t entries = 0;

	add_file(a, "1", "a");
	add_file(a, "2", "b");
	add_file(a, "3", "c");
	writer_close(a);
	/* Exactly max is fine. */
	assert_int_equal(extract_limits(f, &m, &lim, &entries, &err), 0);
	assert_int_equal(entries, 3);
	free(m.data);

	reset_x(f);
	a = writer_new(&m, true);
	for (int i = 0; i < 5; i++) {
		char name[8];

		snprintf(name, sizeof name, "f%d", i);
		add_file(a, name, "x");
	}
	writer_close(a);
	expect_refused(f, &m, &lim, AL_TOO_LARGE, "more than 3 entries");
	assert_true(dir_entries(f->x) <= 3);
	free(m.data);
}

static void
test_too_many_bytes(void **state)
{
	struct fixture *f = *state;
	struct al_tar_limits lim = { 100, 1000 };
	struct mem m;
	struct archive *a;
	char big[201], sixty[61], p[PATH_MAX];
	struct stat sb;

	memset(big, 'b', 200);
	big[200] = '\0';
	memset(sixty, 's', 60);
	sixty[60] = '\0';

	a = writer_new(&m, false);
	add_file(a, "big", big);
	writer_close(a);
	expect_refused(f, &m, &lim, AL_TOO_LARGE, "exceed 100 bytes");
	join(p, f->x, "big");
	assert_int_equal(access(p, F_OK), -1);
	free(m.data);

	/* The bound is on the sum of the members. */
	a = writer_new(&m, true);
	add_file(a, "s1", sixty);
	add_file(a, "s2", sixty);
	writer_close(a);
	expect_refused(f, &m, &lim, AL_TOO_LARGE, "exceed 100 bytes");
	join(p, f->x, "s2");
	assert_int_equal(access(p, F_OK), -1);
	free(m.data);

	/*
	 * A sparse member: a few stored bytes that claim a terabyte. The
	 * logical size counts, so nothing is written at all.
	 */
	reset_x(f);
	a = writer_new(&m, true);
	{
		struct archive_entry *e = archive_entry_new();

		archive_entry_set_pathname(e, "sparse");
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, 1ll << 40);
		archive_entry_sparse_add_entry(e, 0, 4);
		assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
		assert_int_equal(archive_write_data(a, "data", 4), 4);
		archive_entry_free(e);
	}
	writer_close(a);
	/* Stored small, declared huge. */
	assert_true(m.len < 64 * 1024);
	expect_refused(f, &m, &default_limits, AL_TOO_LARGE, "exceed 1048576 bytes");
	join(p, f->x, "sparse");
	assert_int_equal(lstat(p, &sb), -1);
	free(m.data);
}

static void
test_not_a_tar(void **state)
{
	struct fixture *f = *state;
	struct mem m;
	struct archive *a;
	struct al_error err;
	uint8_t junk[2048];

	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (uint8_t)(i * 7);
	m.data = junk;
	m.len = sizeof junk;
	assert_int_equal(extract(f, &m, &err), -1);
	assert_int_equal(err.code, AL_UNSAFE);
	assert_contained(f);

	/* gzip is not accepted: no decompression filters. */
	a = archive_write_new();
	assert_int_equal(archive_write_set_format_ustar(a), ARCHIVE_OK);
	assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open(a, &m, NULL, mem_write_cb, NULL),
	    ARCHIVE_OK);
	memset(&m, 0, sizeof m);
	add_file(a, "f", "data");
	writer_close(a);
	assert_int_equal(extract(f, &m, &err), -1);
	assert_int_equal(dir_entries(f->x), 0);
	free(m.data);
}

static void
test_truncated(void **state)
{
	struct fixture *f = *state;
	struct mem m;
	struct archive *a = writer_new(&m, true);
	struct al_error err;
	char data[3000];

	memset(data, 'd', sizeof data - 1);
	data[sizeof data - 1] = '\0';
	add_file(a, "f", data);
	writer_close(a);
	/* Cut in the middle of the member's data. */
	m.len = 512 * 4;
	assert_int_equal(extract(f, &m, &err), -1);
	assert_int_equal(err.code, AL_UNSAFE);
	free(m.data);
}

static void
test_reader_error(void **state)
{
	struct fixture *f = *state;
	struct mem m;
	struct archive *a = writer_new(&m, true);
	struct al_error err;
	struct reader r;
	char data[3000];

	memset(data, 'd', sizeof data - 1);
	data[sizeof data - 1] = '\0';
	add_file(a, "f", data);
	writer_close(a);
	/* The source's own error is what the caller sees. */
	r = (struct reader){ m.data, 512 * 4, 0, 1, true };
	memset(&err, 0, sizeof err);
	assert_int_equal(al_tar_extract(mem_read, &r, f->x, &default_limits,
	    NULL, &err), -1);
	assert_int_equal(err.code, AL_IO);
	assert_non_null(strstr(err.message, "connection lost"));
	free(m.data);
}

static void
test_root_member(void **state)
{
	struct fixture *f = *state;
	struct mem m;
	struct archive *a;
	struct al_error err;
	char p[PATH_MAX];

	/* "./" as a directory is the destination itself: fine. */
	a = writer_new(&m, false);
	add(a, "./", AE_IFDIR, 0777, NULL, NULL);
	add_file(a, "./a", "x");
	writer_close(a);
	assert_int_equal(extract(f, &m, &err), 0);
	join(p, f->x, "a");
	assert_file(p, "x", 1, 0644);
	free(m.data);

	/* "." as a file or a link is not. */
	a = writer_new(&m, true);
	add_file(a, ".", "x");
	writer_close(a);
	expect_refused(f, &m, NULL, AL_UNSAFE, "root is not a directory");
	free(m.data);
	a = writer_new(&m, true);
	add(a, ".", AE_IFLNK, 0777, NULL, "/");
	writer_close(a);
	expect_refused(f, &m, NULL, AL_UNSAFE, "root is not a directory");
	free(m.data);
}

/* ---- (c) Removal ---- */

static void
test_remove_tree(void **state)
{
	struct fixture *f = *state;
	char t[PATH_MAX], p[PATH_MAX], keep[PATH_MAX];

	join(keep, f->outside, "keep.txt");
	write_file(keep, "keep", 4, 0600);
	join(t, f->base, "t");
	assert_int_equal(mkdir(t, 0700), 0);
	join(p, t, "locked");
	assert_int_equal(mkdir(p, 0700), 0);
	join(p, t, "locked/inner");
	assert_int_equal(mkdir(p, 0700), 0);
	join(p, t, "locked/inner/f");
	write_file(p, "f", 1, 0000);
	join(p, t, "locked/inner");
	assert_int_equal(chmod(p, 0), 0);
	join(p, t, "locked");
	assert_int_equal(chmod(p, 0), 0);
	join(p, t, "file-link");
	assert_int_equal(symlink(keep, p), 0);
	join(p, t, "dir-link");
	assert_int_equal(symlink(f->outside, p), 0);

	al_remove_tree(t);
	assert_int_equal(access(t, F_OK), -1);
	assert_file(keep, "keep", 4, 0600);
	assert_int_equal(dir_entries(f->outside), 1);

	/* A symbolic link given as the root is removed, not followed. */
	join(t, f->base, "root-link");
	assert_int_equal(symlink(f->outside, t), 0);
	al_remove_tree(t);
	assert_int_equal(access(t, F_OK), -1);
	assert_file(keep, "keep", 4, 0600);

	/* Absent paths are fine. */
	al_remove_tree(t);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_round_trip),
		T(test_round_trip_single_file),
		T(test_create_refuses_special_files),
		T(test_setid_bits_dropped),
		T(test_absolute_member),
		T(test_dotdot_members),
		T(test_write_through_symlink),
		T(test_special_members),
		T(test_hardlink_members),
		T(test_too_many_entries),
		T(test_too_many_bytes),
		T(test_not_a_tar),
		T(test_truncated),
		T(test_reader_error),
		T(test_root_member),
		T(test_remove_tree),
	};
#undef T

	/* Extracted modes are masked by the umask: make it known. */
	umask(022);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
