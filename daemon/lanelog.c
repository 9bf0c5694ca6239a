#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "laned.h"
#include "lanelog.h"
#include "lima.h"
#include "listener.h"
#include "log.h"
#include "names.h"
#include "registry.h"
#include "util.h"

/*
 * Lima's logs in an instance directory (lima-cli.md §1.3): the serial
 * consoles (serialp/serialv on ARM and VZ) and the hostagent's JSON logs.
 * limactl.log exists only among kept logs.
 */
const char *const lanelog_files[] = {
	"serial.log", "serialp.log", "serialv.log", "ha.stderr.log",
	"ha.stdout.log", "limactl.log", NULL,
};

bool
lanelog_kept_dir(const struct laned *d, const char *name, char *buf,
    size_t len)
{
	if (!names_lane_valid(name))
		return false;
	return (size_t)snprintf(buf, len, "%s/log/lanes/%s", d->cfg.state_dir,
	    name) < len;
}

static int
write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * The last cap bytes of src into dst (0600, replaced), starting after a
 * line end when cut. 0, 1 when src does not exist, -1 with errno.
 */
static int
copy_tail(const char *src, const char *dst, uint64_t cap)
{
	char buf[65536];
	struct stat sb;
	uint64_t left;
	off_t off;
	ssize_t n;
	int in, out, saved;
	bool skip_line;

	/* Non-blocking: a FIFO planted under the name must not hang us. */
	if ((in = open(src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) ==
	    -1)
		return errno == ENOENT ? 1 : -1;
	if (fstat(in, &sb) == -1 || !S_ISREG(sb.st_mode)) {
		close(in);
		errno = EINVAL;
		return -1;
	}
	off = (uint64_t)sb.st_size > cap ? sb.st_size - (off_t)cap : 0;
	skip_line = off > 0;
	if (off > 0 && lseek(in, off, SEEK_SET) == -1) {
		saved = errno;
		close(in);
		errno = saved;
		return -1;
	}
	if ((out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1) {
		saved = errno;
		close(in);
		errno = saved;
		return -1;
	}
	for (left = cap; left > 0;) {
		char *p = buf;

		n = read(in, buf, left < sizeof buf ? (size_t)left : sizeof buf);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		left -= (uint64_t)n;
		if (skip_line) {
			char *nl = memchr(buf, '\n', (size_t)n);

			if (nl == NULL)
				continue;
			skip_line = false;
			p = nl + 1;
		}
		if (write_all(out, p, (size_t)(buf + n - p)) == -1)
			break;
	}
	saved = n == -1 ? errno : 0;
	close(in);
	if (close(out) == -1 && saved == 0)
		saved = errno;
	errno = saved;
	return saved != 0 ? -1 : 0;
}

void
lanelog_keep(struct laned *d, const char *name, const char *limactl_stderr)
{
	char dir[PATH_MAX], inst[PATH_MAX], src[PATH_MAX], dst[PATH_MAX];
	char err[512];
	int fd, kept = 0;

	if (!lanelog_kept_dir(d, name, dir, sizeof dir) ||
	    !lima_instance_dir(d->lima, name, inst, sizeof inst))
		return;
	if (listener_private_dir(dir, d->uid, true, err, sizeof err) == -1) {
		log_warnx("lane %s: cannot keep its logs: %s", name, err);
		return;
	}
	for (size_t i = 0; lanelog_files[i] != NULL; i++) {
		if (strcmp(lanelog_files[i], "limactl.log") == 0)
			continue;
		snprintf(src, sizeof src, "%s/%s", inst, lanelog_files[i]);
		snprintf(dst, sizeof dst, "%s/%s", dir, lanelog_files[i]);
		switch (copy_tail(src, dst, d->cfg.max_lane_log_bytes)) {
		case 0:
			kept++;
			break;
		case -1:
			log_warnx("lane %s: keeping %s: %s", name,
			    lanelog_files[i], strerror(errno));
			break;
		}
	}
	if (limactl_stderr != NULL && limactl_stderr[0] != '\0') {
		size_t n = strlen(limactl_stderr);

		if (n > d->cfg.max_lane_log_bytes)
			n = d->cfg.max_lane_log_bytes;
		snprintf(dst, sizeof dst, "%s/limactl.log", dir);
		if ((fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
		    O_CLOEXEC, 0600)) == -1 ||
		    write_all(fd, limactl_stderr + strlen(limactl_stderr) - n,
		    n) == -1)
			log_warn("lane %s: keeping limactl.log", name);
		else
			kept++;
		if (fd != -1 && close(fd) == -1)
			log_warn("lane %s: keeping limactl.log", name);
	}
	log_info("lane %s: kept %d log file%s of the failed start in %s", name,
	    kept, kept == 1 ? "" : "s", dir);
}

void
lanelog_discard(struct laned *d, const char *name)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	DIR *dp;

	if (!lanelog_kept_dir(d, name, dir, sizeof dir))
		return;
	if ((dp = opendir(dir)) == NULL) {
		if (errno != ENOENT)
			log_warn("lane %s: %s", name, dir);
		return;
	}
	/* Only what lanelog_keep writes: names from the list, files. */
	while ((de = readdir(dp)) != NULL)
		for (size_t i = 0; lanelog_files[i] != NULL; i++)
			if (strcmp(de->d_name, lanelog_files[i]) == 0) {
				snprintf(path, sizeof path, "%s/%s", dir,
				    de->d_name);
				if (unlink(path) == -1)
					log_warn("lane %s: unlink %s", name,
					    path);
			}
	closedir(dp);
	if (rmdir(dir) == -1)
		log_warn("lane %s: rmdir %s", name, dir);
	else
		log_info("lane %s: removed its kept logs", name);
}

void
lanelog_prune(struct laned *d)
{
	char dir[PATH_MAX], names[64][NAMES_LANE_LEN + 1];
	struct lane_record rec;
	struct dirent *de;
	size_t n = 0;
	DIR *dp;

	snprintf(dir, sizeof dir, "%s/log/lanes", d->cfg.state_dir);
	if ((dp = opendir(dir)) == NULL)
		return;
	/* Removed after the scan, a bounded batch; the next tick goes on. */
	while (n < sizeof names / sizeof *names && (de = readdir(dp)) != NULL)
		if (names_lane_valid(de->d_name) && registry_lane_get(d->reg,
		    de->d_name, &rec) == REG_NOT_FOUND)
			str_copy(names[n++], de->d_name, sizeof names[0]);
	closedir(dp);
	for (size_t i = 0; i < n; i++)
		lanelog_discard(d, names[i]);
}
