/*
 * agent-lanectl daemon install | uninstall | status: the launchd agent on
 * macOS, systemd --user units elsewhere. The unit files are compiled in
 * (the templates in launchd/) and filled with absolute paths, because launchd expands
 * neither ~ nor $HOME. Every step is idempotent.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

#include "ctl.h"

extern char **environ;
extern const char tmpl_dev_agent_lane_agent_laned_plist[];
extern const char tmpl_agent_laned_service[];
extern const char tmpl_agent_laned_socket[];

#define LAUNCHD_LABEL "dev.agent-lane.agent-laned"

enum platform { PLAT_LAUNCHD, PLAT_SYSTEMD };
enum escape { ESC_XML, ESC_SYSTEMD };

struct paths {
	char home[PATH_MAX];
	char bindir[PATH_MAX];
	char socket[PATH_MAX];
	char statedir[PATH_MAX];
	char logdir[PATH_MAX];
	char unitdir[PATH_MAX];
};

/* The directory of this executable: agent-laned is installed beside it. */
static int
self_dir(char *buf, size_t len)
{
	char path[PATH_MAX], real[PATH_MAX], *slash;

#if defined(__APPLE__)
	uint32_t size = sizeof path;

	if (_NSGetExecutablePath(path, &size) != 0)
		return -1;
#else
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);

	if (n <= 0)
		return -1;
	path[n] = '\0';
#endif
	if (realpath(path, real) == NULL || (slash = strrchr(real, '/')) == NULL)
		return -1;
	*slash = '\0';
	snprintf(buf, len, "%s", real[0] != '\0' ? real : "/");
	return 0;
}

static int
mkdirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, mode) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

/* Appends s to the buffer, escaped for the target syntax. */
static bool
append_escaped(char **out, size_t *len, size_t *cap, const char *s,
    enum escape esc)
{
	for (; *s != '\0'; s++) {
		char tmp[8];
		const char *piece = tmp;

		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;	/* no newline or control byte survives */
		tmp[0] = *s;
		tmp[1] = '\0';
		if (esc == ESC_XML) {
			if (*s == '&')
				piece = "&amp;";
			else if (*s == '<')
				piece = "&lt;";
			else if (*s == '>')
				piece = "&gt;";
			else if (*s == '"')
				piece = "&quot;";
		} else {
			if (*s == '%')
				piece = "%%";
			else if (*s == '"' || *s == '\\')
				return false;	/* not worth quoting rules */
		}
		while (*len + strlen(piece) + 1 > *cap) {
			char *nb = realloc(*out, *cap * 2);

			if (nb == NULL)
				return false;
			*out = nb;
			*cap *= 2;
		}
		memcpy(*out + *len, piece, strlen(piece));
		*len += strlen(piece);
	}
	return true;
}

/* The template with @BINDIR@, @SOCKET@, @STATEDIR@, @LOGDIR@ filled in. */
static char *
render(const char *tmpl, const struct paths *p, enum escape esc)
{
	static const char *const keys[] = {
		"@BINDIR@", "@SOCKET@", "@STATEDIR@", "@LOGDIR@",
	};
	const char *vals[] = { p->bindir, p->socket, p->statedir, p->logdir };
	size_t len = 0, cap = 4096;
	char *out = malloc(cap);

	if (out == NULL)
		return NULL;
	while (*tmpl != '\0') {
		bool replaced = false;

		for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
			if (strncmp(tmpl, keys[i], strlen(keys[i])) == 0) {
				if (!append_escaped(&out, &len, &cap, vals[i],
				    esc)) {
					free(out);
					return NULL;
				}
				tmpl += strlen(keys[i]);
				replaced = true;
				break;
			}
		if (replaced)
			continue;
		if (len + 2 > cap) {
			char *nb = realloc(out, cap * 2);

			if (nb == NULL) {
				free(out);
				return NULL;
			}
			out = nb;
			cap *= 2;
		}
		out[len++] = *tmpl++;
	}
	out[len] = '\0';
	return out;
}

/* Writes content atomically unless the file already holds it. */
static int
write_file(const char *path, const char *content, bool *changed)
{
	char tmp[PATH_MAX], old[65536];
	ssize_t n;
	int fd;

	*changed = true;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		n = read(fd, old, sizeof old - 1);
		close(fd);
		if (n >= 0) {
			old[n] = '\0';
			if (strcmp(old, content) == 0) {
				*changed = false;
				return 0;
			}
		}
	}
	snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
	if ((fd = mkstemp(tmp)) == -1)
		return -1;
	if (fchmod(fd, 0644) == -1 ||
	    write(fd, content, strlen(content)) != (ssize_t)strlen(content) ||
	    fsync(fd) == -1) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	if (rename(tmp, path) == -1) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Runs a command; its exit status, or -1 if it could not run. */
static int
run(const char *const argv[], bool quiet)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, rc;

	if (posix_spawn_file_actions_init(&fa) != 0)
		return -1;
	if (quiet) {
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	}
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv,
	    environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return -1;
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int
resolve_paths(struct ctl *ctl, enum platform plat, bool create,
    struct paths *p)
{
	const char *home = getenv("HOME"), *env;
	char socketdir[PATH_MAX], *slash;

	memset(p, 0, sizeof *p);
	if (home == NULL || home[0] != '/') {
		ctl_errx("HOME is not set to an absolute path");
		return -1;
	}
	snprintf(p->home, sizeof p->home, "%s", home);
	if (self_dir(p->bindir, sizeof p->bindir) == -1) {
		ctl_errx("cannot find the directory of agent-lanectl");
		return -1;
	}
	snprintf(p->socket, sizeof p->socket, "%s", al_client_socket(ctl->client));
	if (p->socket[0] != '/') {
		ctl_errx("the socket path must be absolute");
		return -1;
	}
	if ((env = getenv("AGENT_LANE_STATE_DIR")) != NULL && env[0] == '/')
		snprintf(p->statedir, sizeof p->statedir, "%s", env);
	else
		snprintf(p->statedir, sizeof p->statedir, "%s/.agent-lane", home);
	snprintf(p->logdir, sizeof p->logdir, "%s/log", p->statedir);
	if (plat == PLAT_LAUNCHD)
		snprintf(p->unitdir, sizeof p->unitdir,
		    "%s/Library/LaunchAgents", home);
	else if ((env = getenv("XDG_CONFIG_HOME")) != NULL && env[0] == '/')
		snprintf(p->unitdir, sizeof p->unitdir, "%s/systemd/user", env);
	else
		snprintf(p->unitdir, sizeof p->unitdir, "%s/.config/systemd/user",
		    home);
	snprintf(socketdir, sizeof socketdir, "%s", p->socket);
	if ((slash = strrchr(socketdir, '/')) != NULL && slash != socketdir)
		*slash = '\0';
	/* The daemon insists on private directories; make them so. */
	if (create && (mkdirs(p->statedir, 0700) == -1 ||
	    mkdirs(p->logdir, 0700) == -1 || mkdirs(socketdir, 0700) == -1)) {
		ctl_errx("creating %s: %s", p->statedir, strerror(errno));
		return -1;
	}
	return 0;
}

static int
daemon_install(struct ctl *ctl, enum platform plat, bool load)
{
	struct paths p;
	char file[PATH_MAX], domain[64], target[128], daemon[PATH_MAX];
	char *content;
	bool changed, changed2 = false;

	if (resolve_paths(ctl, plat, true, &p) == -1)
		return CTL_EXIT_FAILURE;
	snprintf(daemon, sizeof daemon, "%s/agent-laned", p.bindir);
	if (access(daemon, X_OK) == -1) {
		ctl_errx("%s: %s (agent-laned must be installed beside "
		    "agent-lanectl)", daemon, strerror(errno));
		return CTL_EXIT_FAILURE;
	}
	if (mkdirs(p.unitdir, 0755) == -1) {
		ctl_errx("%s: %s", p.unitdir, strerror(errno));
		return CTL_EXIT_FAILURE;
	}
	if (plat == PLAT_LAUNCHD) {
		snprintf(file, sizeof file, "%s/%s.plist", p.unitdir,
		    LAUNCHD_LABEL);
		if ((content = render(tmpl_dev_agent_lane_agent_laned_plist, &p,
		    ESC_XML)) == NULL) {
			ctl_errx("a path holds characters a plist cannot carry");
			return CTL_EXIT_FAILURE;
		}
		if (write_file(file, content, &changed) == -1) {
			ctl_errx("%s: %s", file, strerror(errno));
			free(content);
			return CTL_EXIT_FAILURE;
		}
		free(content);
		printf("%s %s\n", changed ? "wrote" : "unchanged", file);
		if (!load)
			return 0;
		snprintf(domain, sizeof domain, "gui/%ld", (long)getuid());
		snprintf(target, sizeof target, "%s/%s", domain, LAUNCHD_LABEL);
		/* Loaded and unchanged: nothing to do. */
		if (!changed && run((const char *const[]){ "launchctl", "print",
		    target, NULL }, true) == 0) {
			printf("loaded %s\n", target);
			return 0;
		}
		(void)run((const char *const[]){ "launchctl", "bootout", target,
		    NULL }, true);
		if (run((const char *const[]){ "launchctl", "bootstrap", domain,
		    file, NULL }, false) != 0) {
			ctl_errx("launchctl bootstrap %s %s failed", domain, file);
			return CTL_EXIT_FAILURE;
		}
		printf("loaded %s\n", target);
		return 0;
	}

	snprintf(file, sizeof file, "%s/agent-laned.socket", p.unitdir);
	if ((content = render(tmpl_agent_laned_socket, &p, ESC_SYSTEMD)) == NULL ||
	    write_file(file, content, &changed) == -1) {
		ctl_errx("%s: %s", file, content == NULL ? "a path holds "
		    "characters a unit file cannot carry" : strerror(errno));
		free(content);
		return CTL_EXIT_FAILURE;
	}
	free(content);
	printf("%s %s\n", changed ? "wrote" : "unchanged", file);
	snprintf(file, sizeof file, "%s/agent-laned.service", p.unitdir);
	if ((content = render(tmpl_agent_laned_service, &p, ESC_SYSTEMD)) == NULL ||
	    write_file(file, content, &changed2) == -1) {
		ctl_errx("%s: %s", file, content == NULL ? "a path holds "
		    "characters a unit file cannot carry" : strerror(errno));
		free(content);
		return CTL_EXIT_FAILURE;
	}
	free(content);
	printf("%s %s\n", changed2 ? "wrote" : "unchanged", file);
	if (!load)
		return 0;
	if (run((const char *const[]){ "systemctl", "--user", "daemon-reload",
	    NULL }, false) != 0 ||
	    run((const char *const[]){ "systemctl", "--user", "enable", "--now",
	    "agent-laned.socket", "agent-laned.service", NULL }, false) != 0) {
		ctl_errx("systemctl --user failed (is there a user session? "
		    "`loginctl enable-linger` keeps one)");
		return CTL_EXIT_FAILURE;
	}
	if ((changed || changed2) && run((const char *const[]){ "systemctl",
	    "--user", "try-restart", "agent-laned.service", NULL }, false) != 0)
		ctl_errx("warning: could not restart agent-laned.service");
	printf("enabled agent-laned.socket agent-laned.service\n");
	return 0;
}

static int
remove_file(const char *path)
{
	if (unlink(path) == -1 && errno != ENOENT) {
		ctl_errx("%s: %s", path, strerror(errno));
		return -1;
	}
	printf("removed %s\n", path);
	return 0;
}

static int
daemon_uninstall(struct ctl *ctl, enum platform plat, bool load)
{
	struct paths p;
	char file[PATH_MAX], target[128];
	int rc = 0;

	if (resolve_paths(ctl, plat, false, &p) == -1)
		return CTL_EXIT_FAILURE;
	if (plat == PLAT_LAUNCHD) {
		snprintf(target, sizeof target, "gui/%ld/%s", (long)getuid(),
		    LAUNCHD_LABEL);
		/* Not loaded is fine: uninstall is idempotent. */
		if (load)
			(void)run((const char *const[]){ "launchctl", "bootout",
			    target, NULL }, true);
		snprintf(file, sizeof file, "%s/%s.plist", p.unitdir,
		    LAUNCHD_LABEL);
		return remove_file(file) == 0 ? 0 : CTL_EXIT_FAILURE;
	}
	if (load)
		(void)run((const char *const[]){ "systemctl", "--user", "disable",
		    "--now", "agent-laned.service", "agent-laned.socket", NULL },
		    true);
	snprintf(file, sizeof file, "%s/agent-laned.service", p.unitdir);
	rc |= remove_file(file);
	snprintf(file, sizeof file, "%s/agent-laned.socket", p.unitdir);
	rc |= remove_file(file);
	if (load)
		(void)run((const char *const[]){ "systemctl", "--user",
		    "daemon-reload", NULL }, true);
	return rc == 0 ? 0 : CTL_EXIT_FAILURE;
}

static int
daemon_status(struct ctl *ctl, enum platform plat, bool load)
{
	struct al_daemon_info info;
	struct al_error err;
	struct paths p;
	char file[PATH_MAX], target[128];

	if (resolve_paths(ctl, plat, false, &p) == -1)
		return CTL_EXIT_FAILURE;
	if (plat == PLAT_LAUNCHD) {
		snprintf(file, sizeof file, "%s/%s.plist", p.unitdir,
		    LAUNCHD_LABEL);
		printf("launch agent: %s (%s)\n", file,
		    access(file, F_OK) == 0 ? "installed" : "not installed");
		if (load) {
			snprintf(target, sizeof target, "gui/%ld/%s",
			    (long)getuid(), LAUNCHD_LABEL);
			printf("launchd: %s %s\n", target,
			    run((const char *const[]){ "launchctl", "print",
			    target, NULL }, true) == 0 ? "loaded" : "not loaded");
		}
	} else {
		snprintf(file, sizeof file, "%s/agent-laned.service", p.unitdir);
		printf("systemd unit: %s (%s)\n", file,
		    access(file, F_OK) == 0 ? "installed" : "not installed");
		if (load)
			printf("systemd: agent-laned.service %s\n",
			    run((const char *const[]){ "systemctl", "--user",
			    "is-active", "--quiet", "agent-laned.service", NULL },
			    true) == 0 ? "active" : "not active");
	}
	if (al_hello(ctl->client, &info, &err) != AL_OK) {
		printf("agent-laned: not answering on %s (%s)\n", p.socket,
		    err.message);
		return 3;
	}
	printf("agent-laned: %s answering on %s (protocol %u)\n", info.version,
	    p.socket, info.protocol_version);
	return 0;
}

int
cmd_daemon(struct ctl *ctl, int argc, char **argv)
{
#if defined(__APPLE__)
	enum platform plat = PLAT_LAUNCHD;
#else
	enum platform plat = PLAT_SYSTEMD;
#endif
	const char *verb = NULL, *v;
	bool load = true;
	int r;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--no-load") == 0)
			load = false;
		else if ((r = ctl_opt(argc, argv, &i, "--platform", &v)) != 0) {
			if (r > 0 && strcmp(v, "launchd") == 0)
				plat = PLAT_LAUNCHD;
			else if (r > 0 && strcmp(v, "systemd") == 0)
				plat = PLAT_SYSTEMD;
			else
				return ctl_usage("--platform is launchd or systemd");
		} else if (verb == NULL)
			verb = argv[i];
		else
			return ctl_usage("daemon: unexpected argument %s", argv[i]);
	}
	if (verb != NULL && strcmp(verb, "install") == 0)
		return daemon_install(ctl, plat, load);
	if (verb != NULL && strcmp(verb, "uninstall") == 0)
		return daemon_uninstall(ctl, plat, load);
	if (verb != NULL && strcmp(verb, "status") == 0)
		return daemon_status(ctl, plat, load);
	return ctl_usage("usage: agent-lanectl daemon install|uninstall|status "
	    "[--no-load] [--platform launchd|systemd]");
}
