#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat.h"
#include "lima.h"
#include "log.h"
#include "names.h"
#include "netpolicy.h"
#include "util.h"

struct lima {
	char *limactl;
	char *home;
	char *base_template;
	char **envp;
	sqlite3 *json;	/* private :memory: connection for JSON parsing */
};

static const char hexdigits[] = "0123456789abcdef";

static bool
executable(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    access(path, X_OK) == 0;
}

int
lima_resolve_limactl(const char *spec, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX], *copy, *dir, *save = NULL;
	int rc = -1;

	if (strchr(spec, '/') != NULL) {
		if (realpath(spec, buf) == NULL || !executable(buf))
			return -1;
		str_copy(out, buf, len);
		return 0;
	}
	xasprintf(&copy, "%s:/opt/homebrew/bin:/usr/local/bin",
	    path != NULL ? path : "/usr/bin:/bin");
	for (dir = strtok_r(copy, ":", &save); dir != NULL;
	    dir = strtok_r(NULL, ":", &save)) {
		if (dir[0] != '/')
			continue;	/* relative PATH entries are not trusted */
		snprintf(buf, sizeof buf, "%s/%s", dir, spec);
		if (executable(buf)) {
			str_copy(out, buf, len);
			rc = 0;
			break;
		}
	}
	free(copy);
	return rc;
}

struct lima *
lima_new(const char *limactl, const char *home, const char *base_template,
    char *const *environ_base)
{
	struct lima *l = xcalloc(1, sizeof *l);
	size_t n = 0, i, j = 0;

	l->limactl = xstrdup(limactl);
	l->home = xstrdup(home);
	l->base_template = xstrdup(base_template);
	if (sqlite3_open_v2(":memory:", &l->json, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
		fatalx("lima: cannot open an in-memory SQLite database");

	/*
	 * Our environment minus what would change limactl's behaviour under
	 * us, plus the dedicated LIMA_HOME. The simulator's fault variables
	 * pass through on purpose: tests set them on the daemon.
	 */
	while (environ_base != NULL && environ_base[n] != NULL)
		n++;
	l->envp = xcalloc(n + 2, sizeof *l->envp);
	for (i = 0; i < n; i++) {
		const char *e = environ_base[i];

		if (strncmp(e, "LIMA_HOME=", 10) == 0 ||
		    strncmp(e, "_LIMA_OUTPUT_IS_TTY=", 20) == 0 ||
		    strncmp(e, "LIMA_INSTANCE=", 14) == 0 ||
		    strncmp(e, "LIMA_WORKDIR=", 13) == 0 ||
		    strncmp(e, "LIMA_SHELL=", 11) == 0)
			continue;
		l->envp[j++] = xstrdup(e);
	}
	xasprintf(&l->envp[j++], "LIMA_HOME=%s", home);
	l->envp[j] = NULL;
	return l;
}

void
lima_free(struct lima *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; l->envp[i] != NULL; i++)
		free(l->envp[i]);
	free(l->envp);
	sqlite3_close(l->json);
	free(l->limactl);
	free(l->home);
	free(l->base_template);
	free(l);
}

const char *
lima_limactl(const struct lima *l)
{
	return l->limactl;
}

const char *
lima_home(const struct lima *l)
{
	return l->home;
}

char *const *
lima_envp(const struct lima *l)
{
	return l->envp;
}

int
lima_name_generate(char *name, size_t size)
{
	unsigned char rnd[8];
	size_t i;

	if (size < NAMES_LANE_LEN + 1 || compat_random(rnd, sizeof rnd) == -1)
		return -1;
	memcpy(name, NAMES_LANE_PREFIX, NAMES_LANE_PREFIX_LEN);
	for (i = 0; i < sizeof rnd; i++) {
		name[3 + 2 * i] = hexdigits[rnd[i] >> 4];
		name[3 + 2 * i + 1] = hexdigits[rnd[i] & 0xf];
	}
	name[NAMES_LANE_LEN] = '\0';
	return 0;
}

int
lima_image_name_generate(char *name, size_t size)
{
	char lane[NAMES_LANE_LEN + 1];

	if (size < NAMES_IMAGE_INSTANCE_LEN + 1 ||
	    lima_name_generate(lane, sizeof lane) == -1)
		return -1;
	snprintf(name, size, "%s%s", NAMES_IMAGE_PREFIX,
	    lane + NAMES_LANE_PREFIX_LEN);
	return 0;
}

/* True if a "/"-separated path has a ".." component. */
static bool
has_dotdot(const char *p)
{
	for (const char *seg = p; *seg != '\0';) {
		size_t n = strcspn(seg, "/");

		if (n == 2 && seg[0] == '.' && seg[1] == '.')
			return true;
		seg += n;
		while (*seg == '/')
			seg++;
	}
	return false;
}

bool
lima_template_acceptable(const char *t)
{
	const char *p;

	if (t[0] == '/') {
		/* A local file; still a plain path, no YAML syntax. */
		for (p = t; *p != '\0'; p++)
			if (!isalnum((unsigned char)*p) && strchr("/._-", *p) == NULL)
				return false;
		return !has_dotdot(t);
	}
	if (strncmp(t, "template:_images/", 17) != 0 || t[17] == '\0')
		return false;
	for (p = t + 17; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && strchr("._-", *p) == NULL)
			return false;
	return !has_dotdot(t + 17);
}

int
lima_yaml_render(const struct lima *l, const struct lima_lane_spec *spec,
    char *buf, size_t len)
{
	char memory[32];
	const char *minver = "2.0.0";
	int n, p;

	/* Without guest root the policy needs Lima to honour that key. */
	if (spec->has_policy && !spec->sudo)
		minver = NETPOLICY_LIMA_MIN;
	if (spec->memory_mib % 1024 == 0)
		snprintf(memory, sizeof memory, "%uGiB", spec->memory_mib / 1024);
	else
		snprintf(memory, sizeof memory, "%uMiB", spec->memory_mib);

	/*
	 * Every key below closes a path from the guest to the host; see
	 * SECURITY.md. tests/unit/test_yaml.c pins each one. `plain: true`
	 * also drops any mounts or dynamic forwards a base template appends.
	 */
	n = snprintf(buf, len,
	    "# Generated by agent-laned. Lanes have no host surface: no mounts,\n"
	    "# no port forwarding, no agent or X11 forwarding, no host resolver.\n"
	    "minimumLimaVersion: %s\n"
	    "base:\n"
	    "- %s\n"
	    "cpus: %u\n"
	    "memory: %s\n"
	    "disk: %uGiB\n"
	    "plain: true\n"
	    "mounts: []\n"
	    "containerd:\n"
	    "  system: false\n"
	    "  user: false\n"
	    "portForwards:\n"
	    "- guestIP: \"0.0.0.0\"\n"
	    "  guestIPMustBeZero: false\n"
	    "  proto: any\n"
	    "  ignore: true\n"
	    "- guestIP: \"127.0.0.1\"\n"
	    "  proto: any\n"
	    "  ignore: true\n"
	    "ssh:\n"
	    "  loadDotSSHPubKeys: false\n"
	    "  forwardAgent: false\n"
	    "  forwardX11: false\n"
	    "  forwardX11Trusted: false\n"
	    "propagateProxyEnv: false\n"
	    "hostResolver:\n"
	    "  enabled: false\n"
	    "video:\n"
	    "  display: none\n",
	    minver, l->base_template, spec->cpus, memory, spec->disk_gib);
	if (n < 0 || (size_t)n >= len)
		return -1;
	if (!spec->has_policy)
		return spec->ca_pem == NULL ? n : -1;
	if ((p = netpolicy_yaml((enum netpolicy_mode)spec->net_mode,
	    spec->proxy_port, spec->sudo, spec->userns, buf + n,
	    len - (size_t)n)) < 0)
		return -1;
	n += p;
	/* The lane CA's script is one more item of the provision list. */
	if (spec->ca_pem != NULL && (p = netpolicy_ca_yaml(spec->ca_pem,
	    buf + n, len - (size_t)n)) < 0)
		return -1;
	return spec->ca_pem != NULL ? n + p : n;
}

bool
lima_home_unsafe(const struct lima *l, char *why, size_t len)
{
	static const char *const merged[] = {
		"default.yaml", "override.yaml", "base.yaml",
	};
	struct stat sb;
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof merged / sizeof *merged; i++) {
		snprintf(path, sizeof path, "%s/_config/%s", l->home, merged[i]);
		if (lstat(path, &sb) == 0) {
			snprintf(why, len, "%s exists; Lima merges it into every "
			    "lane, so agent-laned refuses to create lanes until "
			    "it is removed", path);
			return true;
		}
		if (errno != ENOENT) {
			snprintf(why, len, "%s: %s", path, strerror(errno));
			return true;
		}
	}
	return false;
}

bool
lima_instance_dir(const struct lima *l, const char *name, char *buf, size_t len)
{
	int n;

	if (!names_instance_valid(name))
		return false;
	n = snprintf(buf, len, "%s/%s", l->home, name);
	return n > 0 && (size_t)n < len;
}

bool
lima_instance_exists(const struct lima *l, const char *name)
{
	char path[PATH_MAX];
	struct stat sb;

	if (!lima_instance_dir(l, name, path, sizeof path))
		return false;
	return lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int
scan_instances(const struct lima *l, bool (*valid)(const char *),
    void (*cb)(const char *, void *), void *arg)
{
	DIR *dir;
	struct dirent *de;
	char path[PATH_MAX];
	struct stat sb;

	if ((dir = opendir(l->home)) == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((de = readdir(dir)) != NULL) {
		if (!valid(de->d_name))
			continue;
		snprintf(path, sizeof path, "%s/%s", l->home, de->d_name);
		if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
			cb(de->d_name, arg);
	}
	closedir(dir);
	return 0;
}

int
lima_scan_images(const struct lima *l, void (*cb)(const char *, void *),
    void *arg)
{
	return scan_instances(l, names_image_instance_valid, cb, arg);
}

int
lima_scan_lanes(const struct lima *l, void (*cb)(const char *, void *),
    void *arg)
{
	return scan_instances(l, names_lane_valid, cb, arg);
}

/* Builds argv from a NULL-terminated list of strings to duplicate. */
static char **
argv_build(const char *const *parts)
{
	size_t n = 0;
	char **argv;

	while (parts[n] != NULL)
		n++;
	argv = xcalloc(n + 1, sizeof *argv);
	for (size_t i = 0; i < n; i++)
		argv[i] = xstrdup(parts[i]);
	return argv;
}

void
lima_argv_free(char **argv)
{
	if (argv == NULL)
		return;
	for (size_t i = 0; argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
}

/*
 * --tty=false: never prompt. --log-format=json: stderr lines we can parse
 * with a real JSON parser instead of matching English.
 */
#define LIMACTL_COMMON "--tty=false", "--log-format=json"

char **
lima_argv_create(const struct lima *l, const char *name, const char *yaml_path)
{
	char flag[64];

	if (!names_instance_valid(name))
		return NULL;
	snprintf(flag, sizeof flag, "--name=%s", name);
	return argv_build((const char *const[]){ l->limactl, LIMACTL_COMMON,
	    "create", flag, yaml_path, NULL });
}

char **
lima_argv_start(const struct lima *l, const char *name, uint64_t timeout_ms)
{
	char flag[64];

	if (!names_instance_valid(name))
		return NULL;
	snprintf(flag, sizeof flag, "--timeout=%llus",
	    (unsigned long long)((timeout_ms + 999) / 1000));
	return argv_build((const char *const[]){ l->limactl, LIMACTL_COMMON,
	    "start", flag, name, NULL });
}

char **
lima_argv_delete(const struct lima *l, const char *name)
{
	if (!names_instance_valid(name))
		return NULL;
	return argv_build((const char *const[]){ l->limactl, LIMACTL_COMMON,
	    "delete", "--force", name, NULL });
}

char **
lima_argv_stop(const struct lima *l, const char *name)
{
	if (!names_instance_valid(name))
		return NULL;
	return argv_build((const char *const[]){ l->limactl, LIMACTL_COMMON,
	    "stop", name, NULL });
}

char **
lima_argv_clone(const struct lima *l, const char *image, const char *to)
{
	/* An image to a lane or image; a lane only to an image (commit). */
	if (!(names_image_instance_valid(image) && names_instance_valid(to)) &&
	    !(names_lane_valid(image) && names_image_instance_valid(to)))
		return NULL;
	return argv_build((const char *const[]){ l->limactl, LIMACTL_COMMON,
	    "clone", image, to, NULL });
}

char **
lima_argv_template_embed(const struct lima *l, const char *path)
{
	if (path == NULL || path[0] != '/')
		return NULL;
	return argv_build((const char *const[]){ l->limactl, LIMACTL_COMMON,
	    "template", "copy", "--embed-all", path, "-", NULL });
}

int
lima_yaml_replace(const struct lima *l, const char *name, const char *yaml,
    size_t len, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	static const char tmp[] = "lima.yaml.agent-laned.tmp";
	int dfd, fd;
	ssize_t w;

	if (!lima_instance_dir(l, name, dir, sizeof dir)) {
		snprintf(err, errlen, "invalid instance name");
		return -1;
	}
	/* O_NOFOLLOW on the directory and both names: a planted link in the
	 * copied directory must not redirect the write. */
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	(void)unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0644);
	if (fd == -1) {
		snprintf(err, errlen, "%s/%s: %s", dir, tmp, strerror(errno));
		close(dfd);
		return -1;
	}
	w = write(fd, yaml, len);
	if (w < 0 || (size_t)w != len || fsync(fd) == -1) {
		snprintf(err, errlen, "%s/%s: %s", dir, tmp,
		    w < 0 ? strerror(errno) : "short write");
		close(fd);
		(void)unlinkat(dfd, tmp, 0);
		close(dfd);
		return -1;
	}
	close(fd);
	if (renameat(dfd, tmp, dfd, "lima.yaml") == -1) {
		snprintf(err, errlen, "%s/lima.yaml: %s", dir, strerror(errno));
		(void)unlinkat(dfd, tmp, 0);
		close(dfd);
		return -1;
	}
	if (fsync(dfd) == -1)
		log_warn("fsync %s", dir);
	close(dfd);
	return 0;
}

char **
lima_argv_list(const struct lima *l)
{
	return argv_build((const char *const[]){ l->limactl, LIMACTL_COMMON,
	    "list", "--json", NULL });
}

char **
lima_argv_version(const struct lima *l)
{
	/* --version is a flag of limactl itself, not of a subcommand. */
	return argv_build((const char *const[]){ l->limactl, "--version",
	    NULL });
}

char **
lima_argv_info(const struct lima *l)
{
	return argv_build((const char *const[]){ l->limactl, LIMACTL_COMMON,
	    "info", NULL });
}

int
lima_info_guest_network_none(struct lima *l, const char *buf, size_t len,
    bool *none, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	const char *type, *v;
	int rc = -1;

	*none = false;
	if (len > INT32_MAX || sqlite3_prepare_v2(l->json,
	    "SELECT json_type(?1), json_extract(?1, '$.guestNetwork') "
	    "WHERE json_valid(?1)", -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(l->json));
		return -1;
	}
	sqlite3_bind_text(st, 1, buf, (int)len, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    (type = (const char *)sqlite3_column_text(st, 0)) != NULL &&
	    strcmp(type, "object") == 0) {
		v = (const char *)sqlite3_column_text(st, 1);
		*none = v != NULL && strcmp(v, "none") == 0;
		rc = 0;
	} else
		snprintf(err, errlen, "not a JSON object");
	sqlite3_finalize(st);
	return rc;
}

void
lima_info_driver(struct lima *l, const char *buf, size_t len, char *driver,
    size_t driverlen)
{
	sqlite3_stmt *st;
	const char *v;

	driver[0] = '\0';
	if (len > INT32_MAX || sqlite3_prepare_v2(l->json,
	    "SELECT coalesce(json_extract(?1, '$.defaultTemplate.vmType'), "
	    "json_extract(?1, '$.vmTypes[0]')) WHERE json_valid(?1) AND "
	    "json_type(?1) = 'object'", -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, buf, (int)len, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) == SQLITE_TEXT &&
	    (v = (const char *)sqlite3_column_text(st, 0)) != NULL) {
		str_copy(driver, v, driverlen);
		str_sanitize_ascii(driver);
	}
	sqlite3_finalize(st);
}

int
lima_ssh_port(const struct lima *l, const char *name, uint16_t *port)
{
	char path[PATH_MAX], line[512];
	unsigned long v;
	FILE *f;
	int rc = -1;

	if (!lima_instance_dir(l, name, path, sizeof path) ||
	    strlen(path) + sizeof "/ssh.config" > sizeof path)
		return -1;
	strncat(path, "/ssh.config", sizeof path - strlen(path) - 1);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		char *p = line, *end;

		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "Port ", 5) != 0)
			continue;
		v = strtoul(p + 5, &end, 10);
		if (end != p + 5 && v > 0 && v <= 65535) {
			*port = (uint16_t)v;
			rc = 0;
		}
		break;
	}
	fclose(f);
	return rc;
}

char **
lima_argv_shell(const struct lima *l, const char *name, const char *const *cmd)
{
	size_t n = 0, i, j = 0;
	char **argv;

	if (!names_instance_valid(name))
		return NULL;
	while (cmd[n] != NULL)
		n++;
	argv = xcalloc(n + 8, sizeof *argv);
	argv[j++] = xstrdup(l->limactl);
	argv[j++] = xstrdup("--tty=false");
	argv[j++] = xstrdup("shell");
	/* Explicit: otherwise limactl picks a directory from our cwd. */
	argv[j++] = xstrdup("--workdir=/");
	argv[j++] = xstrdup(name);
	argv[j++] = xstrdup("--");
	for (i = 0; i < n; i++)
		argv[j++] = xstrdup(cmd[i]);
	argv[j] = NULL;
	return argv;
}

int
lima_list_parse(struct lima *l, const char *buf, size_t len,
    struct lima_instance **out, size_t *n, size_t max, char *err,
    size_t errlen)
{
	sqlite3_stmt *st;
	struct lima_instance *v = NULL;
	size_t count = 0, lineno = 0;
	const char *p = buf, *end = buf + len;
	int rc = 0;

	if (sqlite3_prepare_v2(l->json,
	    "SELECT json_type(?1), json_type(?1, '$.name'), "
	    "json_extract(?1, '$.name'), json_type(?1, '$.status'), "
	    "json_extract(?1, '$.status')", -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(l->json));
		return -1;
	}
	while (p < end && rc == 0) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *lend = nl != NULL ? nl : end;
		const char *type, *ntype, *name, *stype, *status;

		lineno++;
		if (lend == p || (lend - p == 1 && *p == '\r')) {
			p = lend + 1;
			continue;
		}
		if (count == max) {
			snprintf(err, errlen, "more than %zu instances", max);
			rc = -1;
			break;
		}
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, p, (int)(lend - p), SQLITE_TRANSIENT);
		if (sqlite3_step(st) != SQLITE_ROW) {
			/* json_type raises an error on malformed JSON. */
			snprintf(err, errlen, "line %zu: not JSON", lineno);
			rc = -1;
			break;
		}
		type = (const char *)sqlite3_column_text(st, 0);
		ntype = (const char *)sqlite3_column_text(st, 1);
		name = (const char *)sqlite3_column_text(st, 2);
		stype = (const char *)sqlite3_column_text(st, 3);
		status = (const char *)sqlite3_column_text(st, 4);
		if (type == NULL || strcmp(type, "object") != 0 ||
		    ntype == NULL || strcmp(ntype, "text") != 0 || name == NULL) {
			snprintf(err, errlen, "line %zu: not an instance object",
			    lineno);
			rc = -1;
			break;
		}
		v = xreallocarray(v, count + 1, sizeof *v);
		memset(&v[count], 0, sizeof v[count]);
		str_copy(v[count].name, name, sizeof v[count].name);
		if (stype != NULL && strcmp(stype, "text") == 0 && status != NULL)
			str_copy(v[count].status, status, sizeof v[count].status);
		str_sanitize_ascii(v[count].name);
		str_sanitize_ascii(v[count].status);
		count++;
		p = lend + 1;
	}
	sqlite3_finalize(st);
	if (rc != 0) {
		free(v);
		return -1;
	}
	*out = v;
	*n = count;
	return 0;
}

bool
lima_log_line(struct lima *l, const char *line, size_t len, char *level,
    size_t levellen, char *msg, size_t msglen)
{
	sqlite3_stmt *st = NULL;
	bool ok = false;

	if (len == 0 || line[0] != '{' || len > INT_MAX)
		return false;
	if (sqlite3_prepare_v2(l->json, "SELECT json_extract(?1, '$.level'), "
	    "json_extract(?1, '$.msg') WHERE json_valid(?1)", -1, &st,
	    NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_text(st, 1, line, (int)len, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) == SQLITE_TEXT &&
	    sqlite3_column_type(st, 1) == SQLITE_TEXT) {
		str_copy(level, (const char *)sqlite3_column_text(st, 0),
		    levellen);
		str_copy(msg, (const char *)sqlite3_column_text(st, 1), msglen);
		str_sanitize(level);
		str_sanitize(msg);
		ok = true;
	}
	sqlite3_finalize(st);
	return ok;
}

void
lima_requirement_text(const char *msg, char *buf, size_t len)
{
	/* Lima's names of what its hostagent waits for, said for people. */
	static const struct {
		const char *name, *text;
	} reqs[] = {
		{ "ssh", "booting (about a minute without KVM)" },
		{ "Explicitly start ssh ControlMaster", "ssh's connection to "
		    "the guest" },
		{ "user session is ready for ssh", "the guest user's session" },
		{ "systemd must be available", "systemd in the guest" },
		{ "boot scripts must have finished", "the guest's boot scripts "
		    "(cloud-init)" },
	};
	const char *q, *end;
	unsigned i, n;

	/*
	 * "Waiting for the essential requirement 1 of 2: `ssh`": Lima 2.2
	 * quotes the name as Go's %#q does, in backquotes (double quotes for
	 * a name holding one).
	 */
	if (sscanf(msg, "Waiting for the %*s requirement %u of %u:", &i,
	    &n) != 2 || (q = strpbrk(msg, "`\"")) == NULL ||
	    (end = strrchr(msg, *q)) == q) {
		str_copy(buf, msg, len);
		return;
	}
	q++;
	for (size_t k = 0; k < sizeof reqs / sizeof *reqs; k++)
		if (strlen(reqs[k].name) == (size_t)(end - q) &&
		    strncmp(reqs[k].name, q, (size_t)(end - q)) == 0) {
			snprintf(buf, len, "%s, step %u of %u", reqs[k].text, i,
			    n);
			return;
		}
	snprintf(buf, len, "waiting for %.*s, step %u of %u", (int)(end - q),
	    q, i, n);
}

void
lima_error_message(struct lima *l, const char *text, char *buf, size_t len)
{
	sqlite3_stmt *st = NULL;
	const char *p = text, *line_start, *nl;
	char *best_json = NULL, *best_line = NULL;

	buf[0] = '\0';
	if (text == NULL)
		return;
	if (sqlite3_prepare_v2(l->json, "SELECT json_extract(?1, '$.level'), "
	    "json_extract(?1, '$.msg') WHERE json_valid(?1)", -1, &st,
	    NULL) != SQLITE_OK)
		st = NULL;
	while (*p != '\0') {
		size_t n;

		line_start = p;
		nl = strchr(p, '\n');
		n = nl != NULL ? (size_t)(nl - p) : strlen(p);
		p = nl != NULL ? nl + 1 : p + n;
		if (n == 0)
			continue;
		if (st != NULL) {
			sqlite3_reset(st);
			sqlite3_bind_text(st, 1, line_start, (int)n,
			    SQLITE_TRANSIENT);
			if (sqlite3_step(st) == SQLITE_ROW) {
				const char *lvl = (const char *)
				    sqlite3_column_text(st, 0);
				const char *msg = (const char *)
				    sqlite3_column_text(st, 1);

				if (lvl != NULL && msg != NULL &&
				    (strcmp(lvl, "fatal") == 0 ||
				    strcmp(lvl, "error") == 0)) {
					free(best_json);
					best_json = xstrdup(msg);
				}
				continue;
			}
		}
		free(best_line);
		best_line = xstrndup(line_start, n);
	}
	if (st != NULL)
		sqlite3_finalize(st);
	if (best_json != NULL)
		str_copy(buf, best_json, len);
	else if (best_line != NULL)
		str_copy(buf, best_line, len);
	free(best_json);
	free(best_line);
	str_sanitize(buf);
}
