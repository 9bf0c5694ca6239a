/*
 * Where the daemon is, and how a connection reaches it: a Unix socket, or
 * the user's own OpenSSH running `agent-lanectl system dial-stdio` on
 * another host (Docker's ssh:// hosts, the same design). Over ssh the
 * protocol is unchanged: ssh's standard input and output are one end of a
 * socket pair whose other end is the connection's descriptor, so every
 * call works as on a local socket. ssh's own authentication, known hosts
 * and configuration are the user's; nothing of ours is on its command
 * line but the host and the remote command, and nothing of the caller's
 * environment but what ssh needs (ssh_environ: never a secret's value).
 * Its standard error is kept (a bounded tail) to say why a connection
 * failed.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "text.h"

extern char **environ;

/* How long a finished ssh may take to exit before it is told to. */
#define SSH_EXIT_WAIT_MS 3000

struct al_ssh {
	pid_t pid;
	int err_fd;			/* its standard error; -1 once at EOF */
	char url[AL_HOST_URL_MAX];	/* for messages */
	char tail[AL_SSH_STDERR_TAIL + 1];
	size_t tail_len;
	int status;			/* wait(2) status once reaped */
	bool reaped;
};

static bool
in_set(char ch, const char *set)
{
	return ch != '\0' && strchr(set, ch) != NULL;
}

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

/* [user@]host[:port], each strictly: nothing ssh could take as an option. */
static int
parse_ssh(const char *s, struct al_host *h, struct al_error *err)
{
	const char *at = strchr(s, '@'), *host = at != NULL ? at + 1 : s;
	const char *end, *colon;
	size_t len;

	if (strchr(s, '/') != NULL || strchr(s, '?') != NULL ||
	    strchr(s, '#') != NULL) {
		al_set_error(err, AL_INVALID_ARGUMENT, "ssh://%s: an ssh host "
		    "takes no path, query or fragment (ssh://[USER@]HOST[:PORT])",
		    s);
		return -1;
	}
	if (at != NULL) {
		len = (size_t)(at - s);
		if (len == 0 || len >= sizeof h->user || s[0] == '-') {
			al_set_error(err, AL_INVALID_ARGUMENT, "ssh://%s: the user "
			    "is empty, too long or begins with \"-\"", s);
			return -1;
		}
		for (size_t i = 0; i < len; i++)
			if (!in_set(s[i], ALNUM "._-")) {
				al_set_error(err, AL_INVALID_ARGUMENT, "ssh://%s: "
				    "a user name is [A-Za-z0-9._-]", s);
				return -1;
			}
		memcpy(h->user, s, len);
		h->user[len] = '\0';
	}
	if (host[0] == '[') {
		/* [IPv6]: what ssh takes as an address, and nothing else. */
		if ((end = strchr(host, ']')) == NULL) {
			al_set_error(err, AL_INVALID_ARGUMENT, "ssh://%s: no \"]\" "
			    "after an IPv6 address", s);
			return -1;
		}
		len = (size_t)(end - host - 1);
		/* An IPv6 address has a colon; anything else has no brackets. */
		if (memchr(host + 1, ':', len) == NULL) {
			al_set_error(err, AL_INVALID_ARGUMENT, "ssh://%s: not an "
			    "IPv6 address in brackets", s);
			return -1;
		}
		for (size_t i = 0; i < len; i++)
			if (!in_set(host[1 + i], "0123456789abcdefABCDEF:.%"
			    ALNUM)) {
				al_set_error(err, AL_INVALID_ARGUMENT, "ssh://%s: "
				    "not an IPv6 address in brackets", s);
				return -1;
			}
		colon = end[1] == ':' ? end + 1 : NULL;
		if (end[1] != '\0' && colon == NULL) {
			al_set_error(err, AL_INVALID_ARGUMENT, "ssh://%s: "
			    "something after the address", s);
			return -1;
		}
		host++;
	} else {
		colon = strchr(host, ':');
		len = colon != NULL ? (size_t)(colon - host) : strlen(host);
		for (size_t i = 0; i < len; i++)
			if (!in_set(host[i], ALNUM "._-")) {
				al_set_error(err, AL_INVALID_ARGUMENT, "ssh://%s: a "
				    "host name is [A-Za-z0-9._-] (or [IPv6])", s);
				return -1;
			}
	}
	if (len == 0 || len >= sizeof h->host || host[0] == '-' ||
	    host[0] == '.') {
		al_set_error(err, AL_INVALID_ARGUMENT, "ssh://%s: the host is "
		    "empty, too long or begins with \"-\" or \".\"", s);
		return -1;
	}
	memcpy(h->host, host, len);
	h->host[len] = '\0';
	if (colon != NULL) {
		unsigned long port = 0;
		const char *p = colon + 1;

		if (*p == '\0' || strlen(p) > 5)
			port = 0;
		else
			for (; *p != '\0' && *p >= '0' && *p <= '9'; p++)
				port = port * 10 + (unsigned long)(*p - '0');
		if (*p != '\0' || port == 0 || port > 65535) {
			al_set_error(err, AL_INVALID_ARGUMENT, "ssh://%s: the "
			    "port is not a number from 1 to 65535", s);
			return -1;
		}
		h->port = (uint16_t)port;
	}
	return 0;
}

int
al_host_parse(const char *url, struct al_host *h, struct al_error *err)
{
	memset(h, 0, sizeof *h);
	if (strlen(url) >= AL_HOST_URL_MAX) {
		al_set_error(err, AL_INVALID_ARGUMENT, "a host URL of %zu bytes "
		    "(at most %d)", strlen(url), AL_HOST_URL_MAX - 1);
		return -1;
	}
	if (!text_utf8_printable(url)) {
		al_set_error(err, AL_INVALID_ARGUMENT, "a host URL holds control "
		    "characters or invalid UTF-8");
		return -1;
	}
	if (strncmp(url, "unix://", 7) == 0) {
		const char *path = url + 7;

		if (path[0] != '/') {
			al_set_error(err, AL_INVALID_ARGUMENT, "%s: a unix host is "
			    "an absolute socket path: unix:///PATH", url);
			return -1;
		}
		h->kind = AL_HOST_UNIX;
		snprintf(h->path, sizeof h->path, "%s", path);
		return 0;
	}
	if (strncmp(url, "ssh://", 6) == 0) {
		h->kind = AL_HOST_SSH;
		return parse_ssh(url + 6, h, err);
	}
	al_set_error(err, AL_INVALID_ARGUMENT, "%s: not a host URL; use "
	    "ssh://[USER@]HOST[:PORT] or unix:///PATH", url);
	return -1;
}

void
al_host_url(const struct al_host *h, char *buf, size_t len)
{
	bool v6 = strchr(h->host, ':') != NULL;
	char port[8] = "";

	if (h->kind == AL_HOST_UNIX) {
		snprintf(buf, len, "unix://%s", h->path);
		return;
	}
	if (h->port != 0)
		snprintf(port, sizeof port, ":%u", (unsigned)h->port);
	snprintf(buf, len, "ssh://%s%s%s%s%s%s", h->user, h->user[0] ? "@" : "",
	    v6 ? "[" : "", h->host, v6 ? "]" : "", port);
}

bool
al_remote_command_valid(const char *cmd)
{
	const char *p = cmd;

	/* It goes through the remote user's shell: no quoting is needed. */
	if (strlen(cmd) == 0 || strlen(cmd) > 255 || cmd[0] == '-')
		return false;
	if (strncmp(p, "~/", 2) == 0)
		p += 2;
	for (; *p != '\0'; p++)
		if (!in_set(*p, ALNUM "._+/-"))
			return false;
	return true;
}

/* ---- the ssh child ---- */

/*
 * The ssh child's environment is an allow list, not the caller's
 * environment minus its secrets. Secret values live in the environment
 * (create --secret NAME@HOST and exec -e NAME read NAME there; a library
 * caller's environment may hold others the library never hears of), and
 * any of them ssh holds, a SendEnv rule in ssh_config forwards to the
 * remote host (Debian's default sends LANG and LC_*; users write
 * `SendEnv *`). A value travels only in the protocol, so ssh gets only
 * what it and the programs it runs need: its user and home, PATH and
 * SHELL (ProxyCommand), the agent, askpass and security-key helpers,
 * X11 for askpass, Kerberos, the temporary and runtime directories, the
 * terminal and the locale. Names are exact (the locale's by category):
 * no pattern such as LC_* lets a secret called LC_TOKEN through.
 * Anything else an ssh configuration needs (a ProxyCommand's
 * AWS_PROFILE, ${VAR} in ssh_config) the user names in
 * AGENT_LANE_SSH_ENV, separated by spaces or commas; never a secret's
 * variable.
 */
static const char *const ssh_env_allowed[] = {
	"HOME", "USER", "LOGNAME", "PATH", "SHELL", "TMPDIR",
	"XDG_RUNTIME_DIR", "TERM", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
	"LC_COLLATE", "LC_MESSAGES", "LC_NUMERIC", "LC_TIME", "LC_MONETARY",
	"LC_ADDRESS", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_NAME",
	"LC_PAPER", "LC_TELEPHONE", "SSH_AUTH_SOCK", "SSH_AGENT_PID",
	"SSH_ASKPASS", "SSH_ASKPASS_REQUIRE", "SSH_SK_PROVIDER", "DISPLAY",
	"XAUTHORITY", "KRB5CCNAME", "KRB5_CONFIG",
};

/* Whether the name (len bytes) is a word of list (spaces or commas). */
static bool
name_in_list(const char *name, size_t len, const char *list)
{
	const char *p = list;

	while (*p != '\0') {
		size_t w;

		p += strspn(p, " ,\t");
		w = strcspn(p, " ,\t");
		if (w == len && w > 0 && memcmp(p, name, len) == 0)
			return true;
		p += w;
	}
	return false;
}

static bool
ssh_env_keeps(const char *entry, const char *extra)
{
	const char *eq = strchr(entry, '=');
	size_t len;

	if (eq == NULL || eq == entry)
		return false;
	len = (size_t)(eq - entry);
	for (size_t i = 0; i < sizeof ssh_env_allowed /
	    sizeof ssh_env_allowed[0]; i++)
		if (strlen(ssh_env_allowed[i]) == len &&
		    memcmp(ssh_env_allowed[i], entry, len) == 0)
			return true;
	return extra != NULL && name_in_list(entry, len, extra);
}

/*
 * The allowed entries of environ (borrowed, not copied): free the array
 * only. NULL when out of memory.
 */
static char **
ssh_environ(void)
{
	const char *extra = getenv("AGENT_LANE_SSH_ENV");
	size_t n = 0, k = 0;
	char **env;

	while (environ != NULL && environ[n] != NULL)
		n++;
	if ((env = calloc(n + 1, sizeof *env)) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (ssh_env_keeps(environ[i], extra))
			env[k++] = environ[i];
	env[k] = NULL;
	return env;
}

static int
spawn_ssh(const struct al_host *h, const char *remote, int child_fd,
    int err_w, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	char port[8];
	const char *argv[16];
	char **env;
	short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
	    POSIX_SPAWN_SETSIGDEF;
	size_t n = 0;
	int rc;

	/*
	 * The user's ssh with the user's configuration, agent and known
	 * hosts. BatchMode: never a prompt (an unknown host key fails, it is
	 * never accepted); -T: no terminal; "--" before the host, which
	 * cannot begin with "-" anyway.
	 */
	argv[n++] = "ssh";
	argv[n++] = "-o";
	argv[n++] = "BatchMode=yes";
	argv[n++] = "-T";
	if (h->port != 0) {
		snprintf(port, sizeof port, "%u", (unsigned)h->port);
		argv[n++] = "-p";
		argv[n++] = port;
	}
	if (h->user[0] != '\0') {
		argv[n++] = "-l";
		argv[n++] = h->user;
	}
	argv[n++] = "--";
	argv[n++] = h->host;
	argv[n++] = remote;
	argv[n++] = "system";
	argv[n++] = "dial-stdio";
	argv[n] = NULL;

	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGCHLD);
	sigaddset(&dfl, SIGHUP);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGQUIT);
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		return rc;
	if ((rc = posix_spawn_file_actions_adddup2(&fa, child_fd, 0)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(&fa, child_fd, 1)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(&fa, err_w, 2)) != 0 ||
	    (rc = al_compat_spawn_only_stdio(&fa, &flags)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	/*
	 * Its own process group: a ^C at the terminal is the caller's to
	 * handle (it ends the call, which closes the connection and so ends
	 * ssh), not ssh's to die of halfway through a frame.
	 */
	if ((rc = posix_spawnattr_init(&attr)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	if ((env = ssh_environ()) == NULL)
		rc = ENOMEM;
	else if ((rc = posix_spawnattr_setflags(&attr, flags)) == 0 &&
	    (rc = posix_spawnattr_setpgroup(&attr, 0)) == 0 &&
	    (rc = posix_spawnattr_setsigmask(&attr, &none)) == 0 &&
	    (rc = posix_spawnattr_setsigdefault(&attr, &dfl)) == 0)
		rc = posix_spawnp(pid, "ssh", &fa, &attr, (char *const *)argv,
		    env);
	free(env);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

int
al_ssh_connect(const struct al_host *h, const char *remote,
    struct al_ssh **out, struct al_error *err)
{
	struct al_ssh *s;
	int pair[2], errp[2], rc, fd;

	*out = NULL;
	if ((s = calloc(1, sizeof *s)) == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	al_host_url(h, s->url, sizeof s->url);
	if (al_compat_socketpair_cloexec(pair) == -1) {
		al_set_errno(err, AL_CONNECT, "socketpair");
		free(s);
		return -1;
	}
	if (al_compat_pipe_cloexec(errp) == -1) {
		al_set_errno(err, AL_CONNECT, "pipe");
		close(pair[0]);
		close(pair[1]);
		free(s);
		return -1;
	}
	rc = spawn_ssh(h, remote, pair[1], errp[1], &s->pid);
	close(pair[1]);
	close(errp[1]);
	if (rc != 0) {
		al_set_error(err, AL_UNAVAILABLE, "%s: cannot run ssh: %s%s",
		    s->url, strerror(rc), rc == ENOENT ? " (is OpenSSH's ssh "
		    "on PATH?)" : "");
		close(pair[0]);
		close(errp[0]);
		free(s);
		return -1;
	}
	s->err_fd = errp[0];
	/* Its stderr is read only when the connection ends: never block. */
	(void)fcntl(s->err_fd, F_SETFL, fcntl(s->err_fd, F_GETFL) | O_NONBLOCK);
	if ((fd = al_fd_above_stdio(pair[0])) == -1) {
		al_set_errno(err, AL_CONNECT, "socketpair");
		al_ssh_finish(s);
		al_ssh_free(s);
		return -1;
	}
	*out = s;
	return fd;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What ssh wrote since the last read; false once it is at EOF. */
static bool
read_stderr(struct al_ssh *s)
{
	char buf[4096];
	ssize_t n;

	while (s->err_fd != -1) {
		n = read(s->err_fd, buf, sizeof buf);
		if (n > 0) {
			size_t k = (size_t)n;

			/* The last bytes are the ones that say why. */
			if (k >= AL_SSH_STDERR_TAIL) {
				memcpy(s->tail, buf + k - AL_SSH_STDERR_TAIL,
				    AL_SSH_STDERR_TAIL);
				s->tail_len = AL_SSH_STDERR_TAIL;
			} else {
				if (s->tail_len + k > AL_SSH_STDERR_TAIL) {
					size_t drop = s->tail_len + k -
					    AL_SSH_STDERR_TAIL;

					memmove(s->tail, s->tail + drop,
					    s->tail_len - drop);
					s->tail_len -= drop;
				}
				memcpy(s->tail + s->tail_len, buf, k);
				s->tail_len += k;
			}
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		close(s->err_fd);
		s->err_fd = -1;
	}
	return false;
}

void
al_ssh_finish(struct al_ssh *s)
{
	int64_t deadline;
	pid_t r;

	if (s == NULL)
		return;
	/*
	 * Our end is closed, so ssh sends EOF and the remote dial-stdio ends:
	 * ssh then exits and its stderr reaches EOF. Bounded: one that does
	 * not is told to go. No SIGCHLD handler of ours: waitpid it is.
	 */
	deadline = mono_ms() + SSH_EXIT_WAIT_MS;
	while (read_stderr(s)) {
		struct pollfd pfd = { .fd = s->err_fd, .events = POLLIN };
		int64_t left = deadline - mono_ms();

		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)left) == -1 && errno != EINTR)
			break;
	}
	while ((r = waitpid(s->pid, &s->status, WNOHANG)) == -1 &&
	    errno == EINTR)
		;
	if (r == 0) {
		(void)kill(s->pid, SIGTERM);
		while ((r = waitpid(s->pid, &s->status, 0)) == -1 &&
		    errno == EINTR)
			;
	}
	/* ECHILD: the program reaps its children itself; nothing to say. */
	s->reaped = r == s->pid;
	if (s->err_fd != -1)
		(void)read_stderr(s);
	if (s->err_fd != -1)
		close(s->err_fd);
	s->err_fd = -1;
}

/* ssh's last lines, one line of text: "a; b". */
static void
stderr_text(const struct al_ssh *s, char *buf, size_t len)
{
	size_t o = 0;
	bool sep = false;

	for (size_t i = 0; i < s->tail_len && o + 3 < len; i++) {
		char ch = s->tail[i];

		if (ch == '\r')
			continue;
		if (ch == '\n') {
			sep = o > 0;
			continue;
		}
		if (sep) {
			buf[o++] = ';';
			buf[o++] = ' ';
			sep = false;
		}
		buf[o++] = ch;
	}
	buf[o] = '\0';
	text_sanitize(buf);
}

void
al_ssh_explain(struct al_ssh *s, struct al_error *err)
{
	char why[sizeof err->message], st[32], was[sizeof err->message];

	if (s == NULL || err == NULL || err->code != AL_CONNECT)
		return;
	snprintf(was, sizeof was, "%s", err->message);
	stderr_text(s, why, sizeof why);
	if (!s->reaped)
		snprintf(st, sizeof st, "ssh ended");
	else
		wire_wait_string(st, sizeof st, s->status);
	/* The remote end's own words when it had any, else what we saw. */
	if (why[0] != '\0')
		al_set_error(err, AL_UNAVAILABLE, "%s: %s", s->url, why);
	else
		al_set_error(err, AL_UNAVAILABLE, "%s: %s (ssh: %s)", s->url,
		    was, st);
}

void
al_ssh_free(struct al_ssh *s)
{
	free(s);
}
