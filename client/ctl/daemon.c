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
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "units.h"

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

	if (ctl_compat_self_path(path, sizeof path) == -1)
		return -1;
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

/*
 * Whether `systemctl --user` can reach a user manager: not in a container
 * without systemd, nor in an SSH session of a user without lingering.
 */
static bool
systemd_user_available(void)
{
	return run((const char *const[]){ "systemctl", "--user",
	    "show-environment", NULL }, true) == 0;
}

/* Without a service manager: say why, and how to run the daemon instead. */
static void
foreground_advice(const struct paths *p)
{
	fprintf(stderr,
	    "agent-lanectl: no systemd user manager answers `systemctl --user` "
	    "here\n"
	    "  (a container, or a login without a user session; "
	    "`loginctl enable-linger $USER`\n"
	    "  gives a user a manager that outlives logins).\n"
	    "  Run the daemon in the foreground instead:\n"
	    "    %s/agent-laned --socket %s --state-dir %s\n"
	    "  and point clients at it with --socket %s or AGENT_LANE_SOCKET.\n",
	    p->bindir, p->socket, p->statedir, p->socket);
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
	if (!systemd_user_available()) {
		printf("not loaded: no systemd user manager; the units take "
		    "effect once there is one\n");
		foreground_advice(&p);
		return CTL_EXIT_FAILURE;
	}
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

static void
json_kv_string(const char *key, const char *value, bool comma)
{
	printf("%s\"%s\":", comma ? "," : "", key);
	ctl_json_string(stdout, value);
}

/*
 * status, the daemon not answering: what will start it. `daemon start`
 * only where the service is installed; the foreground command always,
 * with a state directory of its own for a socket other than the default.
 */
static void
not_answering(const struct paths *p, const struct al_error *err,
    bool installed)
{
	char state[PATH_MAX];

	printf("agent-laned: not answering (%s)\n", err->message);
	if (installed)
		printf("             start it: agent-lanectl daemon start\n");
	else
		printf("             the service is not installed: "
		    "agent-lanectl daemon install\n");
	printf("             or in the foreground: %s/agent-laned --socket %s",
	    p->bindir, p->socket);
	if (!ctl_default_socket(p->socket)) {
		ctl_state_dir_for(p->socket, state, sizeof state);
		printf(" --state-dir %s", state);
	}
	putchar('\n');
}

static int
daemon_status(struct ctl *ctl, enum platform plat, bool load)
{
	struct al_daemon_info info;
	struct al_lane *lanes = NULL;
	struct al_error err, lerr;
	struct paths p;
	char file[PATH_MAX], target[128];
	const char *svc;
	size_t n = 0, live = 0, count[8] = { 0 };
	bool installed, answering, listed = false;
	int loaded = -1;	/* -1: not asked (--no-load) */

	if (resolve_paths(ctl, plat, false, &p) == -1)
		return CTL_EXIT_FAILURE;
	if (plat == PLAT_LAUNCHD) {
		snprintf(file, sizeof file, "%s/%s.plist", p.unitdir,
		    LAUNCHD_LABEL);
		snprintf(target, sizeof target, "gui/%ld/%s", (long)getuid(),
		    LAUNCHD_LABEL);
		svc = target;
		if (load)
			loaded = run((const char *const[]){ "launchctl", "print",
			    target, NULL }, true) == 0;
	} else {
		snprintf(file, sizeof file, "%s/agent-laned.service", p.unitdir);
		svc = "agent-laned.service";
		if (load)
			loaded = run((const char *const[]){ "systemctl", "--user",
			    "is-active", "--quiet", "agent-laned.service", NULL },
			    true) == 0;
	}
	installed = access(file, F_OK) == 0;
	answering = al_hello(ctl->client, &info, &err) == AL_OK;
	/* --all: the warm pool's lanes are listed only there. */
	if (answering && al_list(ctl->client, true, &lanes, &n, &lerr) ==
	    AL_OK) {
		listed = true;
		for (size_t i = 0; i < n; i++)
			if (lanes[i].state > 0 && lanes[i].state < 8)
				count[lanes[i].state]++;
		live = count[AL_LANE_CREATING] + count[AL_LANE_READY] +
		    count[AL_LANE_DESTROYING];
		al_lanes_free(lanes);
	}
	if (ctl->json) {
		printf("{\"service\":{");
		json_kv_string("manager", plat == PLAT_LAUNCHD ? "launchd" :
		    "systemd", false);
		json_kv_string("name", svc, true);
		json_kv_string("file", file, true);
		printf(",\"installed\":%s,\"%s\":%s}", installed ? "true" :
		    "false", plat == PLAT_LAUNCHD ? "loaded" : "active",
		    loaded < 0 ? "null" : loaded ? "true" : "false");
		json_kv_string("socket", p.socket, true);
		printf(",\"daemon\":");
		if (!answering) {
			printf("{\"answering\":false");
			json_kv_string("error", err.message, true);
			printf("}");
		} else {
			printf("{\"answering\":true");
			json_kv_string("version", info.version, true);
			printf(",\"protocol\":%u,\"max_lanes\":%u,\"pid\":%u,"
			    "\"started_at_ms\":%lld", info.protocol_version,
			    info.max_lanes, info.pid,
			    (long long)info.started_at_ms);
			json_kv_string("state_dir", info.state_dir, true);
			printf("}");
		}
		if (listed)
			printf(",\"lanes\":{\"live\":%zu,\"creating\":%zu,"
			    "\"ready\":%zu,\"destroying\":%zu},"
			    "\"pool\":{\"booted\":%zu,\"booting\":%zu}}\n",
			    live, count[AL_LANE_CREATING], count[AL_LANE_READY],
			    count[AL_LANE_DESTROYING], count[AL_LANE_POOLED],
			    count[AL_LANE_BOOTING]);
		else
			printf(",\"lanes\":null}\n");
		return answering ? 0 : 3;
	}
	printf("service:     %s %s (%s)%s\n", plat == PLAT_LAUNCHD ?
	    "launchd agent" : "systemd user unit", svc, installed ?
	    "installed" : "not installed", loaded < 0 ? "" : plat ==
	    PLAT_LAUNCHD ? (loaded ? ", loaded" : ", not loaded") :
	    (loaded ? ", active" : ", not active"));
	printf("file:        %s\n", file);
	printf("socket:      %s\n", p.socket);
	if (!answering) {
		not_answering(&p, &err, installed);
		return 3;
	}
	printf("agent-laned: %s (protocol %u), answering\n", info.version,
	    info.protocol_version);
	if (info.pid != 0) {
		struct timespec now;
		int64_t up_ms = 0;
		char up[32];

		if (clock_gettime(CLOCK_REALTIME, &now) == 0 &&
		    info.started_at_ms > 0)
			up_ms = (int64_t)now.tv_sec * 1000 +
			    now.tv_nsec / 1000000 - info.started_at_ms;
		units_format_human(up_ms > 0 ? (uint64_t)up_ms : 0, up,
		    sizeof up);
		printf("pid:         %u, up %s\n", info.pid, up);
		printf("state:       %s\n", info.state_dir);
	}
	if (listed)
		printf("lanes:       %zu live of at most %u (%zu creating, %zu "
		    "ready, %zu destroying)\n", live, info.max_lanes,
		    count[AL_LANE_CREATING], count[AL_LANE_READY],
		    count[AL_LANE_DESTROYING]);
	if (listed && count[AL_LANE_POOLED] + count[AL_LANE_BOOTING] > 0)
		printf("warm pool:   %zu booted, %zu booting\n",
		    count[AL_LANE_POOLED], count[AL_LANE_BOOTING]);
	return 0;
}

/* daemon start | stop | restart through the service manager. */
static int
daemon_control(struct ctl *ctl, enum platform plat, const char *verb)
{
	struct paths p;
	char file[PATH_MAX], domain[64], target[128];
	bool loaded;
	int rc;

	if (resolve_paths(ctl, plat, false, &p) == -1)
		return CTL_EXIT_FAILURE;
	if (plat == PLAT_LAUNCHD) {
		snprintf(file, sizeof file, "%s/%s.plist", p.unitdir,
		    LAUNCHD_LABEL);
		snprintf(domain, sizeof domain, "gui/%ld", (long)getuid());
		snprintf(target, sizeof target, "%s/%s", domain, LAUNCHD_LABEL);
		if (access(file, F_OK) == -1) {
			ctl_errx("%s is not installed: run `agent-lanectl daemon "
			    "install`", file);
			return CTL_EXIT_FAILURE;
		}
		loaded = run((const char *const[]){ "launchctl", "print", target,
		    NULL }, true) == 0;
		/*
		 * KeepAlive restarts a killed daemon: stopping unloads the
		 * agent (the plist stays, so it loads again at login).
		 */
		if (strcmp(verb, "stop") == 0)
			rc = !loaded ? 0 : run((const char *const[]){ "launchctl",
			    "bootout", target, NULL }, false);
		else if (!loaded)
			rc = run((const char *const[]){ "launchctl", "bootstrap",
			    domain, file, NULL }, false);
		else
			rc = run((const char *const[]){ "launchctl", "kickstart",
			    strcmp(verb, "restart") == 0 ? "-k" : "-p", target,
			    NULL }, false);
		if (rc != 0) {
			ctl_errx("launchctl failed to %s %s", verb, target);
			return CTL_EXIT_FAILURE;
		}
		printf("%s %s\n", strcmp(verb, "stop") == 0 ? "stopped" :
		    strcmp(verb, "start") == 0 ? "started" : "restarted", target);
		return 0;
	}
	snprintf(file, sizeof file, "%s/agent-laned.service", p.unitdir);
	if (access(file, F_OK) == -1) {
		ctl_errx("%s is not installed: run `agent-lanectl daemon "
		    "install`", file);
		return CTL_EXIT_FAILURE;
	}
	if (!systemd_user_available()) {
		foreground_advice(&p);
		return CTL_EXIT_FAILURE;
	}
	/* The socket unit would start the daemon again on the next client. */
	if (strcmp(verb, "stop") == 0)
		rc = run((const char *const[]){ "systemctl", "--user", "stop",
		    "agent-laned.socket", "agent-laned.service", NULL }, false);
	else if (strcmp(verb, "start") == 0)
		rc = run((const char *const[]){ "systemctl", "--user", "start",
		    "agent-laned.socket", "agent-laned.service", NULL }, false);
	else
		rc = run((const char *const[]){ "systemctl", "--user", "restart",
		    "agent-laned.socket", "agent-laned.service", NULL }, false);
	if (rc != 0) {
		ctl_errx("systemctl --user %s agent-laned failed (see "
		    "`systemctl --user status agent-laned` and `journalctl "
		    "--user -u agent-laned`)", verb);
		return CTL_EXIT_FAILURE;
	}
	printf("%s agent-laned.socket agent-laned.service\n",
	    strcmp(verb, "stop") == 0 ? "stopped" : strcmp(verb, "start") == 0 ?
	    "started" : "restarted");
	return 0;
}

/* --platform and --no-load, for every subcommand: 0 or the status. */
static int
daemon_args(const struct ctl_parsed *p, enum platform *plat, bool *load)
{
	const char *v;

	*plat = strcmp(ctl_compat_service_manager(), "launchd") == 0 ?
	    PLAT_LAUNCHD : PLAT_SYSTEMD;
	*load = true;
	for (size_t i = 0; i < p->nopts; i++) {
		v = p->opts[i].value;
		if (ctl_is(&p->opts[i], "no-load"))
			*load = false;
		else if (ctl_is(&p->opts[i], "platform")) {
			if (strcmp(v, "launchd") == 0)
				*plat = PLAT_LAUNCHD;
			else if (strcmp(v, "systemd") == 0)
				*plat = PLAT_SYSTEMD;
			else
				return ctl_usage("--platform is launchd or systemd");
		}
	}
	if (p->noperands > 1)
		return ctl_usage("daemon: unexpected argument %s", p->operands[1]);
	return 0;
}

static int
d_install(struct ctl *ctl, const struct ctl_parsed *p)
{
	enum platform plat;
	bool load;
	int rc;

	if ((rc = daemon_args(p, &plat, &load)) != 0)
		return rc;
	return daemon_install(ctl, plat, load);
}

static int
d_uninstall(struct ctl *ctl, const struct ctl_parsed *p)
{
	enum platform plat;
	bool load;
	int rc;

	if ((rc = daemon_args(p, &plat, &load)) != 0)
		return rc;
	return daemon_uninstall(ctl, plat, load);
}

static int
d_status(struct ctl *ctl, const struct ctl_parsed *p)
{
	enum platform plat;
	bool load;
	int rc;

	if ((rc = daemon_args(p, &plat, &load)) != 0)
		return rc;
	return daemon_status(ctl, plat, load);
}

/* start, stop, restart: the verb is the subcommand's own word. */
static int
d_control(struct ctl *ctl, const struct ctl_parsed *p)
{
	const struct ctl_subcommand *s = ctl_subcommand_find(ctl->cmd,
	    p->operands[0]);
	enum platform plat;
	bool load;
	int rc;

	if ((rc = daemon_args(p, &plat, &load)) != 0)
		return rc;
	if (!load)
		return ctl_usage("daemon %s: --no-load leaves nothing to do",
		    s->name);
	return daemon_control(ctl, plat, s->name);
}

const struct ctl_subcommand ctl_daemon_subcommands[] = {
	{ "install", d_install, NULL, "", "write the LaunchAgent (macOS) or "
	    "systemd user units and load them", false },
	{ "uninstall", d_uninstall, NULL, "", "unload them and remove the "
	    "files", false },
	{ "status", d_status, NULL, "", "the service's state and the "
	    "daemon's; exits 3 when the daemon does not answer", true },
	{ "start", d_control, NULL, "", "start it through launchctl or "
	    "systemctl --user", false },
	{ "stop", d_control, NULL, "", "stop it the same way", false },
	{ "restart", d_control, NULL, "", "restart it the same way", false },
	{ NULL, NULL, NULL, NULL, NULL, false },
};
