#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctxstore.h"
#include "text.h"

#define CTX_HEADER "# agent-lane context: see agent-lanectl(1), CONTEXTS\n"

bool
ctx_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > CTX_NAME_MAX || strcmp(s, CTX_DEFAULT) == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9');

		if (!alnum && (i == 0 || (ch != '_' && ch != '.' && ch != '-')))
			return false;
	}
	return true;
}

/* One KEY=VALUE line (without its newline) into c. */
static int
parse_kv(const char *line, size_t len, struct ctx *c, bool seen[3],
    char *err, size_t errlen)
{
	static const struct {
		const char *key;
		size_t off, cap;
	} keys[] = {
		{ "host", offsetof(struct ctx, host), CTX_HOST_MAX },
		{ "description", offsetof(struct ctx, description), CTX_DESC_MAX },
		{ "remote-command", offsetof(struct ctx, remote_command),
		    CTX_REMOTE_MAX },
	};
	const char *eq = memchr(line, '=', len);
	size_t klen, vlen;

	if (eq == NULL) {
		snprintf(err, errlen, "a line that is neither KEY=VALUE nor a "
		    "# comment");
		return -1;
	}
	klen = (size_t)(eq - line);
	vlen = len - klen - 1;
	for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
		char *dst = (char *)c + keys[k].off;

		if (strlen(keys[k].key) != klen ||
		    memcmp(keys[k].key, line, klen) != 0)
			continue;
		if (seen[k]) {
			snprintf(err, errlen, "%s is given twice", keys[k].key);
			return -1;
		}
		seen[k] = true;
		if (vlen > keys[k].cap) {
			snprintf(err, errlen, "%s is longer than %zu bytes",
			    keys[k].key, keys[k].cap);
			return -1;
		}
		memcpy(dst, eq + 1, vlen);
		dst[vlen] = '\0';
		/* An embedded NUL would cut the value short: refused too. */
		if (strlen(dst) != vlen || !text_utf8_printable(dst)) {
			snprintf(err, errlen, "%s is not printable UTF-8",
			    keys[k].key);
			return -1;
		}
		return 0;
	}
	snprintf(err, errlen, "an unknown key \"%.*s\"", klen > 32 ? 32 :
	    (int)klen, line);
	text_sanitize(err);
	return -1;
}

int
ctx_parse(const char *buf, size_t len, struct ctx *c, char *err, size_t errlen)
{
	bool seen[3] = { false, false, false };
	size_t at = 0, lineno = 0;
	char why[160];

	c->host[0] = c->description[0] = c->remote_command[0] = '\0';
	if (len > CTX_FILE_MAX) {
		snprintf(err, errlen, "larger than %d bytes", CTX_FILE_MAX);
		return -1;
	}
	while (at < len) {
		const char *line = buf + at, *nl = memchr(line, '\n', len - at);
		size_t n;

		lineno++;
		if (nl == NULL) {
			snprintf(err, errlen, "line %zu: no newline at its end",
			    lineno);
			return -1;
		}
		n = (size_t)(nl - line);
		at += n + 1;
		if (n > 0 && line[0] == '#') {
			/* A comment: any text, but text. */
			for (size_t i = 0; i < n; i++)
				if ((unsigned char)line[i] < 0x20 ||
				    line[i] == 0x7f) {
					snprintf(err, errlen, "line %zu: a control "
					    "character in a comment", lineno);
					return -1;
				}
			continue;
		}
		if (parse_kv(line, n, c, seen, why, sizeof why) == -1) {
			snprintf(err, errlen, "line %zu: %s", lineno, why);
			return -1;
		}
	}
	if (!seen[0] || c->host[0] == '\0') {
		snprintf(err, errlen, "no host=URL line");
		return -1;
	}
	return 0;
}

size_t
ctx_format(const struct ctx *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, CTX_HEADER "host=%s\n%s%s%s%s%s%s",
	    c->host, c->description[0] ? "description=" : "", c->description,
	    c->description[0] ? "\n" : "", c->remote_command[0] ?
	    "remote-command=" : "", c->remote_command, c->remote_command[0] ?
	    "\n" : "");

	return n < 0 || (size_t)n >= len || n > CTX_FILE_MAX ? 0 : (size_t)n;
}

/* ---- the files ---- */

static const char *
home_dir(void)
{
	const char *home = getenv("HOME");
	struct passwd *pw;

	if ((home == NULL || home[0] != '/') &&
	    (pw = getpwuid(getuid())) != NULL)
		home = pw->pw_dir;
	return home != NULL ? home : "/";
}

void
ctx_dir(char *buf, size_t len)
{
	snprintf(buf, len, "%s/.agent-lane/contexts", home_dir());
}

/* A directory or file of ours that no one else can write. */
static int
ours(const char *path, const struct stat *sb, bool dir, char *err,
    size_t errlen)
{
	if (dir ? !S_ISDIR(sb->st_mode) : !S_ISREG(sb->st_mode))
		snprintf(err, errlen, "%s is not a %s", path, dir ? "directory" :
		    "regular file");
	else if (sb->st_uid != getuid())
		snprintf(err, errlen, "%s belongs to uid %ld, not to us", path,
		    (long)sb->st_uid);
	else if ((sb->st_mode & 022) != 0)
		snprintf(err, errlen, "%s is writable by others (mode %04o)",
		    path, (unsigned)(sb->st_mode & 07777));
	else
		return 0;
	return -1;
}

/*
 * ~/.agent-lane and its contexts directory, made 0700 when missing (make)
 * and checked either way. 1: missing and not made.
 */
static int
store_dirs(bool make, char *dir, size_t dirlen, char *err, size_t errlen)
{
	char top[1024];
	struct stat sb;

	snprintf(top, sizeof top, "%s/.agent-lane", home_dir());
	ctx_dir(dir, dirlen);
	for (int i = 0; i < 2; i++) {
		const char *p = i == 0 ? top : dir;

		if (lstat(p, &sb) == -1) {
			if (errno != ENOENT) {
				snprintf(err, errlen, "%s: %s", p, strerror(errno));
				return -1;
			}
			if (!make)
				return 1;
			if (mkdir(p, 0700) == -1 && errno != EEXIST) {
				snprintf(err, errlen, "mkdir %s: %s", p,
				    strerror(errno));
				return -1;
			}
			if (lstat(p, &sb) == -1) {
				snprintf(err, errlen, "%s: %s", p, strerror(errno));
				return -1;
			}
		}
		if (ours(p, &sb, true, err, errlen) == -1)
			return -1;
	}
	return 0;
}

/* A small file of ours, whole: 0, 1 missing, -1. */
static int
read_small(const char *path, char *buf, size_t cap, size_t *len, char *err,
    size_t errlen)
{
	struct stat sb;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return 1;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &sb) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (ours(path, &sb, false, err, errlen) == -1) {
		close(fd);
		return -1;
	}
	if (sb.st_size < 0 || (size_t)sb.st_size > cap) {
		snprintf(err, errlen, "%s is larger than %zu bytes", path, cap);
		close(fd);
		return -1;
	}
	*len = 0;
	while (*len <= cap && (n = read(fd, buf + *len, cap + 1 - *len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		*len += (size_t)n;
	}
	close(fd);
	if (*len > cap) {
		snprintf(err, errlen, "%s grew past %zu bytes", path, cap);
		return -1;
	}
	return 0;
}

/* Replaces path with data: a 0600 temporary file, fsync, rename, fsync. */
static int
write_atomic(const char *dir, const char *path, const void *data, size_t len,
    char *err, size_t errlen)
{
	char tmp[1200];
	const char *p = data;
	size_t off = 0;
	int fd, dfd;

	snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	if (fchmod(fd, 0600) == -1)
		goto fail;
	while (off < len) {
		ssize_t n = write(fd, p + off, len - off);

		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
	}
	if (fsync(fd) == -1 || close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) == -1)
		goto fail;
	/* The rename itself is durable once the directory is. */
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
fail:
	snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
	if (fd != -1)
		close(fd);
	(void)unlink(tmp);
	return -1;
}

int
ctx_load(const char *name, struct ctx *c, char *err, size_t errlen)
{
	char dir[1024], path[1200], buf[CTX_FILE_MAX + 1], why[256];
	size_t len;
	int rc;

	if (!ctx_name_valid(name)) {
		snprintf(err, errlen, "\"%s\" is not a context name "
		    "([A-Za-z0-9][A-Za-z0-9_.-], up to 63)", name);
		text_sanitize(err);
		return -1;
	}
	if ((rc = store_dirs(false, dir, sizeof dir, err, errlen)) != 0)
		return rc;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((rc = read_small(path, buf, CTX_FILE_MAX, &len, err, errlen)) != 0)
		return rc;
	memset(c, 0, sizeof *c);
	snprintf(c->name, sizeof c->name, "%s", name);
	if (ctx_parse(buf, len, c, why, sizeof why) == -1) {
		snprintf(err, errlen, "%s: %s", path, why);
		return -1;
	}
	return 0;
}

int
ctx_save(const struct ctx *c, bool create, char *err, size_t errlen)
{
	char dir[1024], path[1200], buf[CTX_FILE_MAX + 1];
	struct stat sb;
	size_t len;

	if (!ctx_name_valid(c->name)) {
		snprintf(err, errlen, "\"%s\" is not a context name", c->name);
		return -1;
	}
	if ((len = ctx_format(c, buf, sizeof buf)) == 0) {
		snprintf(err, errlen, "context %s does not fit %d bytes",
		    c->name, CTX_FILE_MAX);
		return -1;
	}
	if (store_dirs(true, dir, sizeof dir, err, errlen) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/%s", dir, c->name);
	if (lstat(path, &sb) == 0 && create)
		return 1;
	return write_atomic(dir, path, buf, len, err, errlen);
}

int
ctx_remove(const char *name, char *err, size_t errlen)
{
	char dir[1024], path[1200];
	int rc;

	if (!ctx_name_valid(name)) {
		snprintf(err, errlen, "\"%s\" is not a context name", name);
		text_sanitize(err);
		return -1;
	}
	if ((rc = store_dirs(false, dir, sizeof dir, err, errlen)) != 0)
		return rc;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (unlink(path) == -1) {
		if (errno == ENOENT)
			return 1;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int
ctx_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ctx *)a)->name, ((const struct ctx *)b)->name);
}

int
ctx_list(struct ctx **out, size_t *n, char *err, size_t errlen)
{
	char dir[1024];
	struct dirent *e;
	struct ctx *v;
	DIR *dp;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = store_dirs(false, dir, sizeof dir, err, errlen)) != 0)
		return rc == 1 ? 0 : -1;
	if ((v = calloc(CTX_LIST_MAX, sizeof *v)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((dp = opendir(dir)) == NULL) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		free(v);
		return -1;
	}
	/* Temporary files and anything else not named like one: skipped. */
	while ((e = readdir(dp)) != NULL) {
		if (!ctx_name_valid(e->d_name))
			continue;
		if (*n == CTX_LIST_MAX) {
			snprintf(err, errlen, "more than %d contexts in %s",
			    CTX_LIST_MAX, dir);
			closedir(dp);
			free(v);
			return -1;
		}
		if (ctx_load(e->d_name, &v[*n], err, errlen) != 0) {
			closedir(dp);
			free(v);
			return -1;
		}
		(*n)++;
	}
	closedir(dp);
	qsort(v, *n, sizeof *v, ctx_cmp);
	*out = v;
	return 0;
}

static void
current_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s/.agent-lane/current-context", home_dir());
}

int
ctx_current(char name[CTX_NAME_MAX + 1], char *err, size_t errlen)
{
	char dir[1024], path[1200], buf[CTX_NAME_MAX + 2];
	size_t len;
	int rc;

	snprintf(name, CTX_NAME_MAX + 1, "%s", CTX_DEFAULT);
	current_path(path, sizeof path);
	if ((rc = store_dirs(false, dir, sizeof dir, err, errlen)) != 0) {
		/* No contexts directory: none was ever set. */
		return rc == 1 ? 1 : -1;
	}
	if ((rc = read_small(path, buf, sizeof buf - 1, &len, err,
	    errlen)) != 0)
		return rc;
	buf[len] = '\0';
	if (len >= 2 && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	else
		buf[0] = '\0';
	if (strcmp(buf, CTX_DEFAULT) != 0 && !ctx_name_valid(buf)) {
		snprintf(err, errlen, "%s does not hold one context name and a "
		    "newline", path);
		return -1;
	}
	snprintf(name, CTX_NAME_MAX + 1, "%s", buf);
	return 0;
}

int
ctx_set_current(const char *name, char *err, size_t errlen)
{
	char dir[1024], path[1200], buf[CTX_NAME_MAX + 2];

	current_path(path, sizeof path);
	if (strcmp(name, CTX_DEFAULT) == 0) {
		if (unlink(path) == -1 && errno != ENOENT) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -1;
		}
		return 0;
	}
	if (!ctx_name_valid(name)) {
		snprintf(err, errlen, "\"%s\" is not a context name", name);
		text_sanitize(err);
		return -1;
	}
	if (store_dirs(true, dir, sizeof dir, err, errlen) != 0)
		return -1;
	snprintf(buf, sizeof buf, "%s\n", name);
	snprintf(dir, sizeof dir, "%s/.agent-lane", home_dir());
	return write_atomic(dir, path, buf, strlen(buf), err, errlen);
}
