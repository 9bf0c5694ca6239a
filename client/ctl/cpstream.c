/*
 * agent-lanectl cp with "-", as docker cp: a tar stream on standard input
 * is extracted into a lane directory, and a lane path is written to
 * standard output as a tar stream whose members start with the path's last
 * component.
 *
 * libagentlane copies host paths, not streams, so both go through a
 * private temporary directory on the host ($TMPDIR, else /tmp): the input
 * is extracted there (plain files, directories and symbolic links only,
 * with libarchive's secure flags) and copied in; the output is copied out
 * there and archived. The directory is removed on every exit path, an
 * interrupt included. This costs the data's size in $TMPDIR once.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)(flag == FTW_DP || flag == FTW_D ? rmdir(path) : unlink(path));
	return 0;
}

/* Removes the tree without following symbolic links. */
static void
remove_tree(const char *path)
{
	(void)nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int
make_tmpdir(char *buf, size_t len, struct al_error *err)
{
	const char *t = getenv("TMPDIR");

	if (t == NULL || t[0] != '/')
		t = "/tmp";
	snprintf(buf, len, "%s/agent-lanectl.XXXXXX", t);
	if (mkdtemp(buf) == NULL) {
		err->code = AL_IO;
		err->os_errno = errno;
		snprintf(err->message, sizeof err->message, "%s: %s", buf,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static void
archive_err(struct al_error *err, const char *what, struct archive *a)
{
	err->code = AL_IO;
	err->os_errno = archive_errno(a);
	snprintf(err->message, sizeof err->message, "%s: %s", what,
	    archive_error_string(a) != NULL ? archive_error_string(a) :
	    "archive error");
}

/* Standard input, a tar stream, into dir. */
static int
extract_stdin(const char *dir, struct al_error *err)
{
	struct archive *in = archive_read_new(), *out = archive_write_disk_new();
	struct archive_entry *e;
	char path[PATH_MAX];
	int r, rc = -1;

	if (in == NULL || out == NULL) {
		err->code = AL_IO;
		snprintf(err->message, sizeof err->message, "out of memory");
		goto done;
	}
	archive_read_support_format_tar(in);
	archive_read_support_format_gnutar(in);
	archive_read_support_filter_all(in);
	/* Owners are not kept; nothing may land outside dir. */
	archive_write_disk_set_options(out, ARCHIVE_EXTRACT_PERM |
	    ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	    ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_NO_OVERWRITE);
	if (archive_read_open_fd(in, STDIN_FILENO, 65536) != ARCHIVE_OK) {
		archive_err(err, "standard input", in);
		goto done;
	}
	while ((r = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
		mode_t type = archive_entry_filetype(e);
		const char *name = archive_entry_pathname(e);

		if (ctl_interrupted()) {
			err->code = AL_CANCELLED;
			snprintf(err->message, sizeof err->message, "interrupted");
			goto done;
		}
		if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
			err->code = AL_UNSAFE;
			snprintf(err->message, sizeof err->message, "standard "
			    "input: %s: only files, directories and symbolic "
			    "links are copied", name != NULL ? name : "?");
			goto done;
		}
		/*
		 * Names are made absolute under dir below, so libarchive's
		 * SECURE_NOABSOLUTEPATHS cannot be used: refuse them here.
		 */
		if (name == NULL || name[0] == '/') {
			err->code = AL_UNSAFE;
			snprintf(err->message, sizeof err->message, "standard "
			    "input: %s: absolute member names are refused",
			    name != NULL ? name : "(none)");
			goto done;
		}
		if (archive_entry_hardlink(e) != NULL) {
			err->code = AL_UNSAFE;
			snprintf(err->message, sizeof err->message, "standard "
			    "input: %s: hard links are not copied", name);
			goto done;
		}
		snprintf(path, sizeof path, "%s/%s", dir, name);
		archive_entry_set_pathname(e, path);
		archive_entry_set_uid(e, getuid());
		archive_entry_set_gid(e, getgid());
		if (archive_write_header(out, e) != ARCHIVE_OK) {
			archive_err(err, name, out);
			goto done;
		}
		if (type == AE_IFREG) {
			const void *buf;
			size_t len;
			la_int64_t off;

			while ((r = archive_read_data_block(in, &buf, &len,
			    &off)) == ARCHIVE_OK)
				if (archive_write_data_block(out, buf, len, off) !=
				    ARCHIVE_OK) {
					archive_err(err, name, out);
					goto done;
				}
			if (r != ARCHIVE_EOF) {
				archive_err(err, "standard input", in);
				goto done;
			}
		}
		if (archive_write_finish_entry(out) != ARCHIVE_OK) {
			archive_err(err, name, out);
			goto done;
		}
	}
	if (r != ARCHIVE_EOF) {
		archive_err(err, "standard input", in);
		goto done;
	}
	rc = 0;
done:
	if (in != NULL)
		archive_read_free(in);
	if (out != NULL)
		archive_write_free(out);
	return rc;
}

int
cp_in_stream(struct ctl *ctl, const char *lane, const char *guest_dir,
    struct al_error *err)
{
	char dir[PATH_MAX], contents[PATH_MAX + 2];
	uint64_t bytes;
	int rc;

	if (isatty(STDIN_FILENO))
		return ctl_usage("cp: - reads a tar stream from standard input, "
		    "which is a terminal");
	if (make_tmpdir(dir, sizeof dir, err) == -1)
		return -1;
	rc = extract_stdin(dir, err);
	/*
	 * The directory's contents ("DIR/.") go into guest_dir, created as
	 * needed, as docker cp - extracts the stream into its destination.
	 */
	snprintf(contents, sizeof contents, "%s/.", dir);
	if (rc == 0)
		rc = al_copy_in(ctl->client, lane, contents, guest_dir, NULL,
		    NULL, &bytes, err) == AL_OK ? 0 : -1;
	remove_tree(dir);
	return rc;
}

/* Archives the tree at name (relative to the current directory) to fd 1. */
static int
archive_stdout(const char *name, struct al_error *err)
{
	struct archive *disk = archive_read_disk_new(), *out = archive_write_new();
	struct archive_entry *e = NULL;
	char buf[65536];
	int r, rc = -1, fd;
	ssize_t n;

	if (disk == NULL || out == NULL || (e = archive_entry_new()) == NULL) {
		err->code = AL_IO;
		snprintf(err->message, sizeof err->message, "out of memory");
		goto done;
	}
	archive_read_disk_set_symlink_physical(disk);
	archive_read_disk_set_standard_lookup(disk);
	archive_write_set_format_pax_restricted(out);
	if (archive_write_open_fd(out, STDOUT_FILENO) != ARCHIVE_OK) {
		archive_err(err, "standard output", out);
		goto done;
	}
	if (archive_read_disk_open(disk, name) != ARCHIVE_OK) {
		archive_err(err, name, disk);
		goto done;
	}
	for (;;) {
		archive_entry_clear(e);
		if ((r = archive_read_next_header2(disk, e)) == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK) {
			archive_err(err, name, disk);
			goto done;
		}
		if (ctl_interrupted()) {
			err->code = AL_CANCELLED;
			snprintf(err->message, sizeof err->message, "interrupted");
			goto done;
		}
		archive_read_disk_descend(disk);
		/* The copy-out's files are ours; owners say nothing. */
		archive_entry_set_uid(e, 0);
		archive_entry_set_gid(e, 0);
		archive_entry_set_uname(e, "");
		archive_entry_set_gname(e, "");
		if (archive_write_header(out, e) != ARCHIVE_OK) {
			archive_err(err, "standard output", out);
			goto done;
		}
		if (archive_entry_filetype(e) != AE_IFREG ||
		    archive_entry_size(e) == 0)
			continue;
		if ((fd = open(archive_entry_sourcepath(e), O_RDONLY |
		    O_CLOEXEC | O_NOFOLLOW)) == -1) {
			err->code = AL_IO;
			err->os_errno = errno;
			snprintf(err->message, sizeof err->message, "%s: %s",
			    archive_entry_sourcepath(e), strerror(errno));
			goto done;
		}
		while ((n = read(fd, buf, sizeof buf)) > 0)
			if (archive_write_data(out, buf, (size_t)n) != n) {
				close(fd);
				archive_err(err, "standard output", out);
				goto done;
			}
		close(fd);
		if (n == -1) {
			err->code = AL_IO;
			err->os_errno = errno;
			snprintf(err->message, sizeof err->message, "reading %s",
			    archive_entry_sourcepath(e));
			goto done;
		}
	}
	if (archive_write_close(out) != ARCHIVE_OK) {
		archive_err(err, "standard output", out);
		goto done;
	}
	rc = 0;
done:
	if (e != NULL)
		archive_entry_free(e);
	if (disk != NULL)
		archive_read_free(disk);
	if (out != NULL)
		archive_write_free(out);
	return rc;
}

int
cp_out_stream(struct ctl *ctl, const char *lane, const char *guest_path,
    const struct al_copy_out_opts *o, struct al_error *err)
{
	char dir[PATH_MAX], cwd[PATH_MAX], g[PATH_MAX], *base;
	int rc, cwdfd;

	if (isatty(STDOUT_FILENO))
		return ctl_usage("cp: - writes a tar stream to standard output, "
		    "which is a terminal");
	snprintf(g, sizeof g, "%s", guest_path);
	for (size_t n = strlen(g); n > 1 && g[n - 1] == '/'; n--)
		g[n - 1] = '\0';
	base = strrchr(g, '/') != NULL ? strrchr(g, '/') + 1 : g;
	if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return ctl_usage("cp: %s:%s: name a file or directory",
		    lane, guest_path);
	if (make_tmpdir(dir, sizeof dir, err) == -1)
		return -1;
	/* Lands as dir/base: dir exists and is a directory. */
	rc = al_copy_out(ctl->client, lane, guest_path, dir, o, NULL, NULL,
	    err) == AL_OK ? 0 : -1;
	if (rc == 0) {
		/* Members are named from base on, so archive from inside dir. */
		if ((cwdfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
		    chdir(dir) == -1) {
			err->code = AL_IO;
			err->os_errno = errno;
			snprintf(err->message, sizeof err->message, "%s: %s", dir,
			    strerror(errno));
			rc = -1;
		} else {
			rc = archive_stdout(base, err);
			if (fchdir(cwdfd) == -1 && getcwd(cwd, sizeof cwd) == NULL)
				(void)chdir("/");
		}
		if (cwdfd != -1)
			close(cwdfd);
	}
	remove_tree(dir);
	return rc;
}
