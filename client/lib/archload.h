/*
 * libarchive, loaded on the first copy instead of at start-up.
 *
 * libarchive pulls in a dozen libraries (xml2, icu, lzma, zstd, acl, ...);
 * mapping and relocating them cost every agent-lanectl run about 1.5 ms,
 * although only copies use them. The library and the CLI therefore do not
 * link libarchive: the Makefile compiles the files that call it
 * (client/lib/tar.c, client/ctl/cpstream.c) with this header forced in
 * (-include), which routes each archive_* call through a table filled by
 * dlopen on first use (archload.c).
 *
 * The constructors (archive_*_new) load the library and return NULL when it
 * cannot be loaded, as on allocation failure, which the callers handle; the
 * destructors accept NULL without loading. Every other call takes an object
 * a constructor made, so the table is filled by then.
 *
 * A call used but missing from the lists below does not link (nothing in
 * the client links libarchive), so no call can go around the loader.
 */
#ifndef AL_ARCHLOAD_H
#define AL_ARCHLOAD_H

#include <archive.h>
#include <archive_entry.h>

#define AL_ARCHIVE_CALLS(X) \
	X(archive_entry_clear) X(archive_entry_copy_hardlink) \
	X(archive_entry_copy_pathname) X(archive_entry_copy_sourcepath) \
	X(archive_entry_filetype) X(archive_entry_hardlink) \
	X(archive_entry_pathname) X(archive_entry_set_gid) \
	X(archive_entry_set_gname) X(archive_entry_set_nlink) \
	X(archive_entry_set_pathname) X(archive_entry_set_uid) \
	X(archive_entry_set_uname) X(archive_entry_size) \
	X(archive_entry_sourcepath) X(archive_entry_sparse_next) \
	X(archive_entry_sparse_reset) X(archive_errno) \
	X(archive_error_string) X(archive_read_close) \
	X(archive_read_data_block) X(archive_read_disk_can_descend) \
	X(archive_read_disk_descend) X(archive_read_disk_entry_from_file) \
	X(archive_read_disk_open) X(archive_read_disk_set_standard_lookup) \
	X(archive_read_disk_set_symlink_logical) \
	X(archive_read_disk_set_symlink_physical) \
	X(archive_read_next_header) X(archive_read_next_header2) \
	X(archive_read_open) X(archive_read_open_fd) \
	X(archive_read_support_filter_all) \
	X(archive_read_support_format_gnutar) \
	X(archive_read_support_format_tar) X(archive_set_error) \
	X(archive_write_close) X(archive_write_data) \
	X(archive_write_data_block) X(archive_write_disk_set_options) \
	X(archive_write_finish_entry) X(archive_write_header) \
	X(archive_write_open2) X(archive_write_open_fd) \
	X(archive_write_set_bytes_in_last_block) \
	X(archive_write_set_bytes_per_block) \
	X(archive_write_set_format_option) \
	X(archive_write_set_format_pax_restricted)

/* Constructors and destructors get wrappers (see above). */
#define AL_ARCHIVE_LIFECYCLE(X) \
	X(archive_read_new) X(archive_read_disk_new) X(archive_write_new) \
	X(archive_write_disk_new) X(archive_entry_new) X(archive_read_free) \
	X(archive_write_free) X(archive_entry_free)

#define AL_ARCHIVE_MEMBER(f) __typeof__(f) *f;
struct al_archive_calls {
	AL_ARCHIVE_CALLS(AL_ARCHIVE_MEMBER)
	AL_ARCHIVE_LIFECYCLE(AL_ARCHIVE_MEMBER)
};
#undef AL_ARCHIVE_MEMBER

__attribute__((visibility("hidden")))
extern struct al_archive_calls al_archive;

__attribute__((visibility("hidden"))) struct archive *al_archive_read_new(void);
__attribute__((visibility("hidden"))) struct archive *al_archive_read_disk_new(void);
__attribute__((visibility("hidden"))) struct archive *al_archive_write_new(void);
__attribute__((visibility("hidden"))) struct archive *al_archive_write_disk_new(void);
__attribute__((visibility("hidden"))) struct archive_entry *al_archive_entry_new(void);
__attribute__((visibility("hidden"))) int al_archive_read_free(struct archive *);
__attribute__((visibility("hidden"))) int al_archive_write_free(struct archive *);
__attribute__((visibility("hidden"))) void al_archive_entry_free(struct archive_entry *);

#ifndef AL_ARCHLOAD_IMPL
#define archive_entry_clear (al_archive.archive_entry_clear)
#define archive_entry_copy_hardlink (al_archive.archive_entry_copy_hardlink)
#define archive_entry_copy_pathname (al_archive.archive_entry_copy_pathname)
#define archive_entry_copy_sourcepath \
	(al_archive.archive_entry_copy_sourcepath)
#define archive_entry_filetype (al_archive.archive_entry_filetype)
#define archive_entry_hardlink (al_archive.archive_entry_hardlink)
#define archive_entry_pathname (al_archive.archive_entry_pathname)
#define archive_entry_set_gid (al_archive.archive_entry_set_gid)
#define archive_entry_set_gname (al_archive.archive_entry_set_gname)
#define archive_entry_set_nlink (al_archive.archive_entry_set_nlink)
#define archive_entry_set_pathname (al_archive.archive_entry_set_pathname)
#define archive_entry_set_uid (al_archive.archive_entry_set_uid)
#define archive_entry_set_uname (al_archive.archive_entry_set_uname)
#define archive_entry_size (al_archive.archive_entry_size)
#define archive_entry_sourcepath (al_archive.archive_entry_sourcepath)
#define archive_entry_sparse_next (al_archive.archive_entry_sparse_next)
#define archive_entry_sparse_reset (al_archive.archive_entry_sparse_reset)
#define archive_errno (al_archive.archive_errno)
#define archive_error_string (al_archive.archive_error_string)
#define archive_read_close (al_archive.archive_read_close)
#define archive_read_data_block (al_archive.archive_read_data_block)
#define archive_read_disk_can_descend \
	(al_archive.archive_read_disk_can_descend)
#define archive_read_disk_descend (al_archive.archive_read_disk_descend)
#define archive_read_disk_entry_from_file \
	(al_archive.archive_read_disk_entry_from_file)
#define archive_read_disk_open (al_archive.archive_read_disk_open)
#define archive_read_disk_set_standard_lookup \
	(al_archive.archive_read_disk_set_standard_lookup)
#define archive_read_disk_set_symlink_logical \
	(al_archive.archive_read_disk_set_symlink_logical)
#define archive_read_disk_set_symlink_physical \
	(al_archive.archive_read_disk_set_symlink_physical)
#define archive_read_next_header (al_archive.archive_read_next_header)
#define archive_read_next_header2 (al_archive.archive_read_next_header2)
#define archive_read_open (al_archive.archive_read_open)
#define archive_read_open_fd (al_archive.archive_read_open_fd)
#define archive_read_support_filter_all \
	(al_archive.archive_read_support_filter_all)
#define archive_read_support_format_gnutar \
	(al_archive.archive_read_support_format_gnutar)
#define archive_read_support_format_tar \
	(al_archive.archive_read_support_format_tar)
#define archive_set_error (al_archive.archive_set_error)
#define archive_write_close (al_archive.archive_write_close)
#define archive_write_data (al_archive.archive_write_data)
#define archive_write_data_block (al_archive.archive_write_data_block)
#define archive_write_disk_set_options \
	(al_archive.archive_write_disk_set_options)
#define archive_write_finish_entry (al_archive.archive_write_finish_entry)
#define archive_write_header (al_archive.archive_write_header)
#define archive_write_open2 (al_archive.archive_write_open2)
#define archive_write_open_fd (al_archive.archive_write_open_fd)
#define archive_write_set_bytes_in_last_block \
	(al_archive.archive_write_set_bytes_in_last_block)
#define archive_write_set_bytes_per_block \
	(al_archive.archive_write_set_bytes_per_block)
#define archive_write_set_format_option \
	(al_archive.archive_write_set_format_option)
#define archive_write_set_format_pax_restricted \
	(al_archive.archive_write_set_format_pax_restricted)
#define archive_read_new al_archive_read_new
#define archive_read_disk_new al_archive_read_disk_new
#define archive_write_new al_archive_write_new
#define archive_write_disk_new al_archive_write_disk_new
#define archive_entry_new al_archive_entry_new
#define archive_read_free al_archive_read_free
#define archive_write_free al_archive_write_free
#define archive_entry_free al_archive_entry_free
#endif

#endif
