/* Where a copy out lands, by docker cp's rules (place.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "place.h"

bool
al_path_last(const char *path, char *name, size_t len)
{
	size_t n = strlen(path), end;
	bool slash = n > 0 && path[n - 1] == '/';

	while (n > 0 && path[n - 1] == '/')
		n--;
	end = n;
	while (n > 0 && path[n - 1] != '/')
		n--;
	snprintf(name, len, "%.*s", (int)(end - n), path + n);
	return slash;
}

/* path's directory ("." for a bare name), trailing slashes aside. */
static void
parent_of(const char *path, char *parent, size_t len)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;
	while (n > 0 && path[n - 1] != '/')
		n--;
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n == 0)
		snprintf(parent, len, ".");
	else
		snprintf(parent, len, "%.*s", (int)n, path);
}

int
al_place_check(const char *host_path, struct al_error *err)
{
	char parent[PATH_MAX];
	struct stat sb;

	if (host_path == NULL || host_path[0] == '\0' ||
	    strlen(host_path) >= PATH_MAX) {
		al_set_error(err, AL_INVALID_ARGUMENT, "a host path is needed");
		return -1;
	}
	if (stat(host_path, &sb) == 0)
		return 0;
	parent_of(host_path, parent, sizeof parent);
	if (stat(parent, &sb) == -1 || !S_ISDIR(sb.st_mode)) {
		al_set_error(err, AL_IO, "%s: not a directory", parent);
		return -1;
	}
	return 0;
}

int
al_place_out(const char *guest_path, const char *host_path, int kind,
    struct al_place *pl, struct al_error *err)
{
	char gname[NAME_MAX + 1], real[PATH_MAX];
	struct stat sb, xb;
	size_t hl = strlen(host_path);
	bool exists = stat(host_path, &sb) == 0, isdir = exists &&
	    S_ISDIR(sb.st_mode), contents;

	(void)al_path_last(guest_path, gname, sizeof gname);
	contents = gname[0] == '\0' || strcmp(gname, ".") == 0;
	memset(pl, 0, sizeof *pl);
	if (kind == AL_COPY_FILE && !isdir && hl > 0 &&
	    host_path[hl - 1] == '/') {
		al_set_error(err, AL_NOT_FOUND, "%s: no such directory (a "
		    "trailing / says the destination is one)", host_path);
		return -1;
	}
	if (kind == AL_COPY_DIRECTORY && exists && !isdir) {
		al_set_error(err, AL_FAILED_PRECONDITION, "cannot copy a "
		    "directory onto %s, which is not a directory", host_path);
		return -1;
	}
	if (isdir && !(kind == AL_COPY_DIRECTORY && contents)) {
		if (contents || strcmp(gname, "..") == 0) {
			al_set_error(err, AL_INVALID_ARGUMENT, "name the "
			    "destination for %s", guest_path);
			return -1;
		}
		if ((size_t)snprintf(pl->dest, sizeof pl->dest, "%s/%s",
		    host_path, gname) >= sizeof pl->dest)
			goto toolong;
	} else if ((size_t)snprintf(pl->dest, sizeof pl->dest, "%s",
	    host_path) >= sizeof pl->dest)
		goto toolong;
	/* "dir/" and "dir" are one place. */
	for (size_t n = strlen(pl->dest); n > 1 && pl->dest[n - 1] == '/'; n--)
		pl->dest[n - 1] = '\0';
	/* As docker cp, a symbolic link to the destination is followed. */
	if (stat(pl->dest, &xb) == 0) {
		if (kind == AL_COPY_FILE && S_ISDIR(xb.st_mode)) {
			al_set_error(err, AL_FAILED_PRECONDITION, "cannot copy a "
			    "file onto %s, a directory", pl->dest);
			return -1;
		}
		if (kind == AL_COPY_DIRECTORY && !S_ISDIR(xb.st_mode)) {
			al_set_error(err, AL_FAILED_PRECONDITION, "cannot copy a "
			    "directory onto %s, which is not a directory",
			    pl->dest);
			return -1;
		}
		pl->merge = kind == AL_COPY_DIRECTORY;
		/* Merged by renames: the temporary tree goes beside the real one. */
		if (pl->merge && realpath(pl->dest, real) == NULL) {
			al_set_errno(err, AL_IO, pl->dest);
			return -1;
		}
		if (pl->merge)
			snprintf(pl->dest, sizeof pl->dest, "%s", real);
	}
	parent_of(pl->dest, pl->parent, sizeof pl->parent);
	(void)al_path_last(pl->dest, pl->base, sizeof pl->base);
	if (stat(pl->parent, &sb) == -1 || !S_ISDIR(sb.st_mode)) {
		al_set_error(err, AL_IO, "%s: not a directory", pl->parent);
		return -1;
	}
	return 0;
toolong:
	al_set_error(err, AL_INVALID_ARGUMENT, "%s: path too long", host_path);
	return -1;
}

/* ---- Merging a tree into a directory ---- */

struct merge {
	char src[PATH_MAX], dst[PATH_MAX];
	uint64_t entries, max_entries;
	struct al_error *err;
};

/* The names in the directory m->src, read whole (no descriptor kept). */
static char **
list_names(struct merge *m, size_t *n)
{
	char **names = NULL, **grown;
	size_t cap = 0;
	struct dirent *de;
	DIR *d;

	*n = 0;
	if ((d = opendir(m->src)) == NULL) {
		al_set_errno(m->err, AL_IO, m->src);
		return NULL;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++m->entries > m->max_entries) {
			al_set_error(m->err, AL_TOO_LARGE, "more than %llu entries",
			    (unsigned long long)m->max_entries);
			goto fail;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((grown = realloc(names, cap * sizeof *names)) == NULL)
				goto oom;
			names = grown;
		}
		if ((names[*n] = strdup(de->d_name)) == NULL)
			goto oom;
		(*n)++;
	}
	closedir(d);
	if (names == NULL && (names = calloc(1, sizeof *names)) == NULL) {
		al_set_error(m->err, AL_IO, "out of memory");
		return NULL;
	}
	return names;
oom:
	al_set_error(m->err, AL_IO, "out of memory");
fail:
	closedir(d);
	while (*n > 0)
		free(names[--(*n)]);
	free(names);
	return NULL;
}

/* Appends "/name" to both paths; false (err set) when they do not fit. */
static bool
descend(struct merge *m, const char *name, size_t *sl, size_t *dl)
{
	*sl = strlen(m->src);
	*dl = strlen(m->dst);
	if (*sl + 1 + strlen(name) >= sizeof m->src ||
	    *dl + 1 + strlen(name) >= sizeof m->dst) {
		al_set_error(m->err, AL_IO, "%s/%s: path too long", m->dst, name);
		return false;
	}
	snprintf(m->src + *sl, sizeof m->src - *sl, "/%s", name);
	snprintf(m->dst + *dl, sizeof m->dst - *dl, "/%s", name);
	return true;
}

/* One pass over m->src: checking (move false), then moving. */
static int
merge_pass(struct merge *m, bool move)
{
	struct stat ss, ds;
	size_t n, sl, dl;
	char **names;
	int rc = 0;

	if ((names = list_names(m, &n)) == NULL)
		return -1;
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (!descend(m, names[i], &sl, &dl)) {
			rc = -1;
			break;
		}
		if (lstat(m->src, &ss) == -1) {
			al_set_errno(m->err, AL_IO, m->src);
			rc = -1;
		} else if (lstat(m->dst, &ds) == -1) {
			/* Nothing there: a rename moves the whole entry. */
			if (move && rename(m->src, m->dst) == -1) {
				al_set_errno(m->err, AL_IO, m->dst);
				rc = -1;
			}
		} else if (S_ISDIR(ss.st_mode) && S_ISDIR(ds.st_mode))
			rc = merge_pass(m, move);
		else if (S_ISDIR(ss.st_mode) != S_ISDIR(ds.st_mode)) {
			al_set_error(m->err, AL_FAILED_PRECONDITION, S_ISDIR(
			    ss.st_mode) ? "cannot copy a directory onto %s, "
			    "which is not a directory" : "cannot copy a file "
			    "onto %s, a directory", m->dst);
			rc = -1;
		} else if (move && rename(m->src, m->dst) == -1) {
			al_set_errno(m->err, AL_IO, m->dst);
			rc = -1;
		}
		m->src[sl] = '\0';
		m->dst[dl] = '\0';
	}
	while (n > 0)
		free(names[--n]);
	free(names);
	return rc;
}

int
al_merge_tree(const char *src, const char *dst, uint64_t max_entries,
    struct al_error *err)
{
	struct merge *m = calloc(1, sizeof *m);
	int rc = -1;

	if (m == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	m->err = err;
	m->max_entries = max_entries;
	snprintf(m->src, sizeof m->src, "%s", src);
	snprintf(m->dst, sizeof m->dst, "%s", dst);
	if (merge_pass(m, false) == 0) {
		m->entries = 0;
		rc = merge_pass(m, true);
	}
	free(m);
	return rc;
}
