/*
 * daemon/vm.c: vm_remove_halfmade, the daemon's own removal of an instance
 * directory that limactl delete refuses (no lima.yaml). It must stay
 * inside the Lima home: no symbolic link followed, no other file system
 * entered, no directory that has a lima.yaml, no name that is not an
 * instance's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mount.h>
#endif

#include "vm.h"

#define NAME "al-0123456789abcdef"

static char root[PATH_MAX], home[PATH_MAX], outside[PATH_MAX];

static void
path(char *buf, const char *a, const char *b)
{
	snprintf(buf, PATH_MAX, "%s/%s", a, b);
}

static void
mkdir_p(const char *base, const char *rel)
{
	char p[PATH_MAX];

	path(p, base, rel);
	assert_int_equal(mkdir(p, 0700), 0);
}

static void
touch(const char *base, const char *rel)
{
	char p[PATH_MAX];
	int fd;

	path(p, base, rel);
	assert_true((fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600)) != -1);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

static bool
exists(const char *base, const char *rel)
{
	char p[PATH_MAX];
	struct stat sb;

	path(p, base, rel);
	return lstat(p, &sb) == 0;
}

static int
setup(void **state)
{
	snprintf(root, sizeof root, "/tmp/vmrm.XXXXXX");
	assert_non_null(mkdtemp(root));
	path(home, root, "home");
	path(outside, root, "outside");
	assert_int_equal(mkdir(home, 0700), 0);
	assert_int_equal(mkdir(outside, 0700), 0);
	touch(outside, "keep");
	mkdir_p(outside, "dir");
	touch(outside, "dir/keep");
	return 0;
}

static int
teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static int
home_fd(void)
{
	int fd = open(home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd != -1);
	return fd;
}

static void
test_removes_without_following_links(void **state)
{
	char inst[PATH_MAX], p[PATH_MAX], err[256];
	int fd = home_fd();

	path(inst, home, NAME);
	mkdir_p(home, NAME);
	touch(inst, "disk");
	mkdir_p(inst, "sub");
	touch(inst, "sub/file");
	mkdir_p(inst, "sub/deeper");
	touch(inst, "sub/deeper/file");
	/* Links out of the home: unlinked, their targets untouched. */
	path(p, inst, "to-file");
	assert_int_equal(symlink(outside, p), 0);
	path(p, inst, "sub/to-dir");
	snprintf(err, sizeof err, "%s/dir", outside);
	assert_int_equal(symlink(err, p), 0);
	assert_int_equal(vm_remove_halfmade(fd, NAME, err, sizeof err), 0);
	assert_false(exists(home, NAME));
	assert_true(exists(outside, "keep"));
	assert_true(exists(outside, "dir/keep"));
	close(fd);
}

static void
test_refuses_a_directory_with_lima_yaml(void **state)
{
	char inst[PATH_MAX], err[256];
	int fd = home_fd();

	path(inst, home, NAME);
	mkdir_p(home, NAME);
	touch(inst, "lima.yaml");
	touch(inst, "disk");
	assert_int_equal(vm_remove_halfmade(fd, NAME, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a half-made"));
	assert_true(exists(inst, "disk"));
	close(fd);
}

static void
test_refuses_a_linked_instance(void **state)
{
	char p[PATH_MAX], err[256];
	int fd = home_fd();

	/* The instance name itself a link out of the home. */
	path(p, home, NAME);
	assert_int_equal(symlink(outside, p), 0);
	assert_int_equal(vm_remove_halfmade(fd, NAME, err, sizeof err), -1);
	assert_true(exists(outside, "keep"));
	assert_true(exists(home, NAME));
	close(fd);
}

static void
test_refuses_other_names(void **state)
{
	char err[256];
	int fd = home_fd();

	mkdir_p(home, "default");
	assert_int_equal(vm_remove_halfmade(fd, "default", err, sizeof err), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(vm_remove_halfmade(fd, "../outside", err, sizeof err),
	    -1);
	assert_int_equal(vm_remove_halfmade(fd, "al-0123456789abcdef/..", err,
	    sizeof err), -1);
	assert_true(exists(home, "default"));
	assert_true(exists(outside, "keep"));
	close(fd);
}

static void
test_never_crosses_a_mount(void **state)
{
#ifdef __linux__
	char inst[PATH_MAX], mnt[PATH_MAX], err[256];
	int fd = home_fd(), rc;

	path(inst, home, NAME);
	mkdir_p(home, NAME);
	mkdir_p(inst, "mnt");
	path(mnt, inst, "mnt");
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") == -1) {
		close(fd);
		skip();		/* needs CAP_SYS_ADMIN: not here */
	}
	touch(mnt, "other-fs");
	rc = vm_remove_halfmade(fd, NAME, err, sizeof err);
	assert_true(exists(mnt, "other-fs"));
	assert_int_equal(umount(mnt), 0);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err, "another file system"));
	close(fd);
#else
	skip();			/* mount(2) as used here is Linux's */
#endif
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_removes_without_following_links),
		T(test_refuses_a_directory_with_lima_yaml),
		T(test_refuses_a_linked_instance),
		T(test_refuses_other_names),
		T(test_never_crosses_a_mount),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
