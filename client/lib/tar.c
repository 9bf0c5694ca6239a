#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "internal.h"
#include "tar.h"

#define TAR_BLOCK (64u * 1024u)

/* ---- Creating ---- */

struct create_ctx {
	al_tar_write_fn write;
	void *arg;
	struct al_error *err;
	bool failed;
};

static la_ssize_t
create_write_cb(struct archive *a, void *arg, const void *buf, size_t len)
{
	struct create_ctx *ctx = arg;

	if (ctx->write(ctx->arg, buf, len, ctx->err) == -1) {
		ctx->failed = true;
		archive_set_error(a, EIO, "%s", ctx->err->message);
		return -1;
	}
	return (la_ssize_t)len;
}

/* Holes are handed to libarchive from here: it skips them, never reads. */
static const char zeros[TAR_BLOCK];

/* len bytes of the file from off, or of a hole (fd -1). */
static int
write_span(struct archive *a, int fd, int64_t off, int64_t len, char *buf,
    const char *source, struct create_ctx *ctx)
{
	while (len > 0) {
		size_t want = len < (int64_t)TAR_BLOCK ? (size_t)len : TAR_BLOCK;
		const char *p = zeros;
		ssize_t n = (ssize_t)want;

		if (al_interrupted()) {
			al_set_error(ctx->err, AL_CANCELLED, "interrupted");
			return -1;
		}
		if (fd != -1) {
			n = pread(fd, buf, want, (off_t)off);
			if (n == -1 && errno == EINTR && !al_interrupted())
				continue;
			if (n <= 0) {
				/* Shrunk while we read it: a silent short copy
				 * would be worse than failing. */
				al_set_error(ctx->err, AL_IO, "%s: %s", source,
				    n == 0 ? "file changed while being copied" :
				    strerror(errno));
				return -1;
			}
			p = buf;
		}
		if (archive_write_data(a, p, (size_t)n) != n) {
			if (!ctx->failed)
				al_set_error(ctx->err, AL_IO, "%s: %s", source,
				    archive_error_string(a));
			return -1;
		}
		off += n;
		len -= n;
	}
	return 0;
}

/*
 * A regular file's bytes. When libarchive found holes (SEEK_HOLE, FIEMAP)
 * the entry carries a sparse map that pax records (GNU.sparse 1.0, which
 * GNU tar in the guest extracts sparse) and only the data regions are read
 * or sent: a 4 GiB file holding one byte is one block on the wire.
 */
static int
write_contents(struct archive *a, struct archive_entry *e, int fd, char *buf,
    const char *source, struct create_ctx *ctx)
{
	int64_t size = archive_entry_size(e), pos = 0, off, len;

	if (archive_entry_sparse_reset(e) > 0) {
		while (archive_entry_sparse_next(e, &off, &len) == ARCHIVE_OK) {
			if (off < pos || len < 0 || off > size - len) {
				al_set_error(ctx->err, AL_IO, "%s: file changed "
				    "while being copied", source);
				return -1;
			}
			if (write_span(a, -1, pos, off - pos, buf, source,
			    ctx) == -1 ||
			    write_span(a, fd, off, len, buf, source, ctx) == -1)
				return -1;
			pos = off + len;
		}
		return write_span(a, -1, pos, size - pos, buf, source, ctx);
	}
	return write_span(a, fd, 0, size, buf, source, ctx);
}

/* Writes one member: header, then the file's bytes for regular files. */
static int
add_entry(struct archive *a, struct archive_entry *e, const char *source,
    struct create_ctx *ctx)
{
	mode_t type = archive_entry_filetype(e);
	char *buf = NULL;
	int fd = -1, rc = -1;

	if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
		al_set_error(ctx->err, AL_IO, "%s: sockets, FIFOs and devices "
		    "cannot be copied", source);
		return -1;
	}
	/* Host user and group names stay on the host. */
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	archive_entry_set_uname(e, NULL);
	archive_entry_set_gname(e, NULL);
	archive_entry_set_nlink(e, 1);
	archive_entry_copy_hardlink(e, NULL);
	if (type == AE_IFREG &&
	    (fd = open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		al_set_errno(ctx->err, AL_IO, source);
		return -1;
	}
	if (archive_write_header(a, e) != ARCHIVE_OK) {
		if (!ctx->failed)
			al_set_error(ctx->err, AL_IO, "%s: %s", source,
			    archive_error_string(a));
		goto out;
	}
	if (type == AE_IFREG) {
		if ((buf = malloc(TAR_BLOCK)) == NULL) {
			al_set_error(ctx->err, AL_IO, "out of memory");
			goto out;
		}
		if (write_contents(a, e, fd, buf, source, ctx) == -1)
			goto out;
	}
	rc = 0;
out:
	free(buf);
	if (fd != -1)
		close(fd);
	return rc;
}

static int
create_tree(struct archive *a, const char *root, struct create_ctx *ctx)
{
	struct archive *disk = archive_read_disk_new();
	struct archive_entry *e = NULL;
	size_t rootlen = strlen(root);
	int rc = -1, r;

	if (disk == NULL) {
		al_set_error(ctx->err, AL_IO, "out of memory");
		return -1;
	}
	/* Symbolic links inside the tree are archived as links. */
	archive_read_disk_set_symlink_physical(disk);
	if (archive_read_disk_open(disk, root) != ARCHIVE_OK) {
		al_set_error(ctx->err, AL_IO, "%s: %s", root,
		    archive_error_string(disk));
		goto out;
	}
	while (rootlen > 1 && root[rootlen - 1] == '/')
		rootlen--;
	for (;;) {
		const char *src, *rel;

		archive_entry_free(e);
		if ((e = archive_entry_new()) == NULL) {
			al_set_error(ctx->err, AL_IO, "out of memory");
			goto out;
		}
		r = archive_read_next_header2(disk, e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			al_set_error(ctx->err, AL_IO, "%s",
			    archive_error_string(disk));
			goto out;
		}
		if (archive_read_disk_can_descend(disk))
			archive_read_disk_descend(disk);
		src = archive_entry_sourcepath(e);
		if (src == NULL)
			src = archive_entry_pathname(e);
		if (strncmp(src, root, rootlen) != 0) {
			al_set_error(ctx->err, AL_IO, "%s: outside %s", src, root);
			goto out;
		}
		rel = src + rootlen;
		while (*rel == '/')
			rel++;
		if (*rel == '\0')
			continue;	/* the root: its mode is not ours to set */
		archive_entry_copy_pathname(e, rel);
		if (add_entry(a, e, src, ctx) == -1)
			goto out;
	}
	rc = 0;
out:
	archive_entry_free(e);
	archive_read_close(disk);
	archive_read_free(disk);
	return rc;
}

/* One file, stored as `member`; read_disk supplies its sparse map. */
static int
create_file(struct archive *a, const char *path, const char *member,
    struct create_ctx *ctx)
{
	struct archive *disk = archive_read_disk_new();
	struct archive_entry *e = archive_entry_new();
	int rc = -1;

	if (disk == NULL || e == NULL) {
		al_set_error(ctx->err, AL_IO, "out of memory");
		goto out;
	}
	archive_read_disk_set_symlink_logical(disk);
	archive_entry_copy_sourcepath(e, path);
	if (archive_read_disk_entry_from_file(disk, e, -1, NULL) <
	    ARCHIVE_WARN) {
		al_set_error(ctx->err, AL_IO, "%s: %s", path,
		    archive_error_string(disk));
		goto out;
	}
	if (archive_entry_filetype(e) != AE_IFREG) {
		al_set_error(ctx->err, AL_IO, "%s: not a regular file", path);
		goto out;
	}
	archive_entry_copy_pathname(e, member);
	rc = add_entry(a, e, path, ctx);
out:
	archive_entry_free(e);
	if (disk != NULL)
		archive_read_free(disk);
	return rc;
}

int
al_tar_create(const char *host_path, const char *member, al_tar_write_fn wfn,
    void *arg, struct al_error *err)
{
	struct create_ctx ctx = { .write = wfn, .arg = arg, .err = err };
	struct archive *a;
	struct stat sb;
	int rc = -1;

	if (stat(host_path, &sb) == -1) {
		al_set_errno(err, AL_IO, host_path);
		return -1;
	}
	if ((a = archive_write_new()) == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	/* pax: long names and large files, readable by GNU and BSD tar. */
	/* 64 KiB blocks: each becomes one DataChunk frame. */
	/*
	 * hdrcharset=BINARY: names are stored as the bytes the file system
	 * holds. Without it libarchive converts them from the caller's locale
	 * to UTF-8 and fails on any non-ASCII name under LANG=C (and would
	 * rewrite a Latin-1 name under a Latin-1 locale). The library must
	 * not depend on its host program's setlocale(3).
	 */
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY") !=
	    ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(a, (int)TAR_BLOCK) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open2(a, &ctx, NULL, create_write_cb, NULL, NULL) !=
	    ARCHIVE_OK) {
		al_set_error(err, AL_IO, "libarchive: %s", archive_error_string(a));
		archive_write_free(a);
		return -1;
	}
	if (S_ISDIR(sb.st_mode))
		rc = create_tree(a, host_path, &ctx);
	else if (S_ISREG(sb.st_mode))
		rc = create_file(a, host_path, member, &ctx);
	else
		al_set_error(err, AL_IO, "%s: not a regular file or directory",
		    host_path);
	if (rc == 0 && archive_write_close(a) != ARCHIVE_OK) {
		if (!ctx.failed)
			al_set_error(err, AL_IO, "libarchive: %s",
			    archive_error_string(a));
		rc = -1;
	}
	archive_write_free(a);
	return rc;
}

/* ---- Extracting ---- */

struct extract_ctx {
	al_tar_read_fn read;
	void *arg;
	struct al_error *err;
	bool failed;
};

static la_ssize_t
extract_read_cb(struct archive *a, void *arg, const void **buf)
{
	struct extract_ctx *ctx = arg;
	ssize_t n = ctx->read(ctx->arg, buf, ctx->err);

	if (n < 0) {
		ctx->failed = true;
		archive_set_error(a, EIO, "%s", ctx->err->message);
		return -1;
	}
	return n;
}

/*
 * Member names must be relative, free of "..", and short. Returns the name
 * without leading "./" segments, or NULL (with err) when it is refused.
 */
static const char *
member_name(const char *name, struct al_error *err)
{
	const char *p, *seg;

	if (name == NULL || name[0] == '\0') {
		al_set_error(err, AL_UNSAFE, "archive member without a name");
		return NULL;
	}
	if (name[0] == '/') {
		al_set_error(err, AL_UNSAFE, "archive member with an absolute "
		    "path: %.200s", name);
		return NULL;
	}
	if (strlen(name) > 4096) {
		al_set_error(err, AL_UNSAFE, "archive member name too long");
		return NULL;
	}
	for (seg = name; *seg != '\0'; seg = *p != '\0' ? p + 1 : p) {
		p = strchr(seg, '/');
		if (p == NULL)
			p = seg + strlen(seg);
		if (p - seg == 2 && seg[0] == '.' && seg[1] == '.') {
			al_set_error(err, AL_UNSAFE, "archive member climbs out "
			    "with \"..\": %.200s", name);
			return NULL;
		}
	}
	while (name[0] == '.' && name[1] == '/')
		name += 2;
	while (name[0] == '/')
		name++;
	return name;
}

int
al_tar_extract(al_tar_read_fn rfn, void *arg, const char *dir,
    const struct al_tar_limits *lim, uint64_t *nentries, struct al_error *err)
{
	struct extract_ctx ctx = { .read = rfn, .arg = arg, .err = err };
	struct archive *in = archive_read_new(), *out = archive_write_disk_new();
	struct archive_entry *e;
	uint64_t entries = 0, bytes = 0;
	char *path = NULL;
	int rc = -1, r;

	if (in == NULL || out == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		goto done;
	}
	/* Tar only: no compression filters, no other formats to parse. */
	archive_read_support_format_tar(in);
	archive_read_support_format_gnutar(in);
	/*
	 * No owners, no ACLs, xattrs or flags; permissions masked by the
	 * umask without set-id bits; never through a symbolic link, never
	 * with "..". Absolute names are refused in member_name().
	 */
	archive_write_disk_set_options(out, ARCHIVE_EXTRACT_TIME |
	    ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	    ARCHIVE_EXTRACT_NO_OVERWRITE);
	if (archive_read_open(in, &ctx, NULL, extract_read_cb, NULL) !=
	    ARCHIVE_OK) {
		if (!ctx.failed)
			al_set_error(err, AL_UNSAFE, "not a tar stream: %s",
			    archive_error_string(in));
		goto done;
	}
	for (;;) {
		const char *member;
		char name[4097];
		mode_t type;
		int64_t size;

		r = archive_read_next_header(in, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			if (!ctx.failed)
				al_set_error(err, AL_UNSAFE, "bad archive: %s",
				    archive_error_string(in));
			goto done;
		}
		if (++entries > lim->max_entries) {
			al_set_error(err, AL_TOO_LARGE, "more than %llu entries",
			    (unsigned long long)lim->max_entries);
			goto done;
		}
		/* Copied: the entry's own string is replaced below. */
		if ((member = member_name(archive_entry_pathname(e), err)) == NULL)
			goto done;
		snprintf(name, sizeof name, "%s", member);
		type = archive_entry_filetype(e);
		if (archive_entry_hardlink(e) != NULL) {
			al_set_error(err, AL_UNSAFE, "hard link member refused: "
			    "%.200s", name);
			goto done;
		}
		if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
			al_set_error(err, AL_UNSAFE, "device, FIFO or socket member "
			    "refused: %.200s", name);
			goto done;
		}
		/* Logical sizes count: a sparse member can claim terabytes. */
		size = archive_entry_size(e);
		if (size < 0 || (uint64_t)size > lim->max_bytes - bytes) {
			al_set_error(err, AL_TOO_LARGE, "archive contents exceed "
			    "%llu bytes", (unsigned long long)lim->max_bytes);
			goto done;
		}
		bytes += (uint64_t)size;
		if (name[0] == '\0' || strcmp(name, ".") == 0) {
			if (type != AE_IFDIR) {
				al_set_error(err, AL_UNSAFE, "the archive root is "
				    "not a directory");
				goto done;
			}
			continue;	/* the destination itself */
		}
		free(path);
		if (asprintf(&path, "%s/%s", dir, name) == -1) {
			path = NULL;
			al_set_error(err, AL_IO, "out of memory");
			goto done;
		}
		archive_entry_copy_pathname(e, path);
		archive_entry_set_uid(e, getuid());
		archive_entry_set_gid(e, getgid());
		r = archive_write_header(out, e);
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			al_set_error(err, AL_UNSAFE, "refused %.200s: %s", name,
			    archive_error_string(out));
			goto done;
		}
		if (type == AE_IFREG && size > 0) {
			const void *blk;
			size_t len;
			la_int64_t off;

			while ((r = archive_read_data_block(in, &blk, &len,
			    &off)) == ARCHIVE_OK) {
				if (archive_write_data_block(out, blk, len, off) !=
				    ARCHIVE_OK) {
					al_set_error(err, AL_IO, "%.200s: %s", name,
					    archive_error_string(out));
					goto done;
				}
			}
			if (r != ARCHIVE_EOF) {
				if (!ctx.failed)
					al_set_error(err, AL_UNSAFE, "%.200s: %s",
					    name, archive_error_string(in));
				goto done;
			}
		}
		if (archive_write_finish_entry(out) != ARCHIVE_OK) {
			al_set_error(err, AL_IO, "%.200s: %s", name,
			    archive_error_string(out));
			goto done;
		}
	}
	if (archive_write_close(out) != ARCHIVE_OK) {
		al_set_error(err, AL_IO, "%s", archive_error_string(out));
		goto done;
	}
	rc = 0;
done:
	free(path);
	if (in != NULL)
		archive_read_free(in);
	if (out != NULL)
		archive_write_free(out);
	if (nentries != NULL)
		*nentries = entries;
	return rc;
}

/* Depth-first removal that never follows symbolic links and makes
 * owner-only directories a hostile archive left (mode 000) enterable. */
static void
remove_at(int parent, const char *name)
{
	struct stat sb;
	DIR *d;
	struct dirent *de;
	int fd;

	if (fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) == -1)
		return;
	if (!S_ISDIR(sb.st_mode)) {
		(void)unlinkat(parent, name, 0);
		return;
	}
	(void)fchmodat(parent, name, 0700, 0);
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd != -1 && (d = fdopendir(fd)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0)
				remove_at(dirfd(d), de->d_name);
		closedir(d);
	} else if (fd != -1)
		close(fd);
	(void)unlinkat(parent, name, AT_REMOVEDIR);
}

void
al_remove_tree(const char *path)
{
	remove_at(AT_FDCWD, path);
}
