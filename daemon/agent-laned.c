/*
 * agent-laned: the per-user Agent Lane daemon. It runs in the foreground
 * under launchd or systemd --user (or by hand), owns the lane registry and
 * every limactl child, enforces lane lifetimes and serves the control
 * protocol on a private Unix socket. See agent-laned(8).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "audit.h"
#include "compat.h"
#include "conn.h"
#include "dispatch.h"
#include "image.h"
#include "imagebuild.h"
#include "lanecommit.h"
#include "laned.h"
#include "lane.h"
#include "lanenet.h"
#include "laneproxy.h"
#include "lima.h"
#include "listener.h"
#include "log.h"
#include "names.h"
#include "pool.h"
#include "proc.h"
#include "reaper.h"
#include "registry.h"
#include "secmem.h"
#include "tls.h"
#include "util.h"
#include "wipe.h"
#ifdef LANED_TEST_HOOKS
#include "testhooks.h"
#endif

extern char **environ;

/* Longest instance-socket suffix Lima creates: "/" + name + "/ssh.sock.1234567890123456". */
#define LIMA_SOCK_SUFFIX (1 + NAMES_LANE_LEN + 26)

static void __attribute__((noreturn))
usage(int status)
{
	FILE *f = status == 0 ? stdout : stderr;

	fprintf(f,
	    "usage: agent-laned [-d] [--config FILE] [--socket PATH] "
	    "[--state-dir DIR]\n"
	    "                   [--limactl PATH] [--check-config] [--KEY VALUE ...]\n"
	    "\n"
	    "Runs in the foreground; launchd or systemd --user keep it alive.\n"
	    "\n"
	    "  -d, --debug               debug logging\n"
	    "  --config FILE             configuration file (default "
	    "~/.agent-lane/agent-laned.conf,\n"
	    "                            or $AGENT_LANE_CONFIG)\n"
	    "  --socket PATH             control socket (default "
	    "~/.agent-lane/run/agent-laned.sock,\n"
	    "                            or $AGENT_LANE_SOCKET)\n"
	    "  --state-dir DIR           registry, lock and Lima home "
	    "(default ~/.agent-lane,\n"
	    "                            or $AGENT_LANE_STATE_DIR)\n"
	    "  --limactl PATH            limactl to run (default: PATH, "
	    "/opt/homebrew/bin,\n"
	    "                            /usr/local/bin; or $AGENT_LANE_LIMACTL)\n"
	    "  --check-config            print the effective configuration "
	    "and exit\n"
	    "  --version                 print the version and exit\n"
	    "\n"
	    "Every configuration key is also a flag (--KEY VALUE or --KEY=VALUE).\n"
	    "Durations and sizes carry their unit (90s, 30m, 1h30m; 512M, 8G): a\n"
	    "plain number is taken only where the name says its unit (the keys\n"
	    "ending in bytes) or it counts things (cpus), and 0 is zero in any unit:\n");
	config_usage(f);
	exit(status);
}

/* 0, 1 and 2 must be open, or a pipe to limactl could land on them. */
static void
sanitize_stdio(void)
{
	struct stat sb;
	int fd;

	for (fd = 0; fd < 3; fd++)
		if (fstat(fd, &sb) == -1 && errno == EBADF &&
		    open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
			exit(1);
}

/* "--key value" or "--key=value"; returns how many argv entries it used. */
static int
flag_value(int argc, char **argv, int i, const char **key, const char **value,
    char *keybuf, size_t keylen)
{
	const char *arg = argv[i] + 2, *eq = strchr(arg, '=');

	if (eq != NULL) {
		if ((size_t)(eq - arg) >= keylen)
			return -1;
		memcpy(keybuf, arg, (size_t)(eq - arg));
		keybuf[eq - arg] = '\0';
		*key = keybuf;
		*value = eq + 1;
		return 1;
	}
	*key = arg;
	if (i + 1 >= argc)
		return -1;
	*value = argv[i + 1];
	return 2;
}

/*
 * Exits 2 unless arg (after "--", up to any '=') is a flag: an unknown
 * option, with the flag it is likely a typo of, as agent-lanectl says it.
 */
static void
flag_known(const char *arg)
{
	static const char *const own[] = { "config", "check-config", "debug",
	    "help", "version" };
	char key[64], near[64];
	size_t len = strcspn(arg, "=");

	if (len < sizeof key) {
		memcpy(key, arg, len);
		key[len] = '\0';
		if (strcmp(key, "config") == 0 || config_is_key(key))
			return;
	} else
		str_copy(key, arg, sizeof key);
	str_sanitize(key);
	if (config_nearest_flag(key, own, sizeof own / sizeof *own, near,
	    sizeof near) != NULL)
		fprintf(stderr, "agent-laned: unknown option --%s; did you mean "
		    "--%s? (see agent-laned --help)\n", key, near);
	else
		fprintf(stderr, "agent-laned: unknown option --%s (see "
		    "agent-laned --help)\n", key);
	exit(2);
}

/*
 * No limactl: where it was looked for and what to set, since the daemon
 * can do nothing without one.
 */
static void __attribute__((noreturn))
limactl_missing(const char *spec)
{
	const char *path = getenv("PATH");
	static const char hint[] = "install Lima, or name its limactl with "
	    "--limactl PATH, the limactl key or $AGENT_LANE_LIMACTL (in a "
	    "source checkout, eval \"$(make -s lima-env)\" sets it to the Lima "
	    "`make setup` installed)";

	if (strchr(spec, '/') != NULL)
		fatalx("limactl %s is not an executable file; %s", spec, hint);
	fatalx("limactl not found: no executable \"%s\" in PATH (%s), "
	    "/opt/homebrew/bin or /usr/local/bin; %s", spec,
	    path != NULL ? path : "unset: /usr/bin:/bin", hint);
}

static void
parse_args(struct config *cfg, int argc, char **argv, bool *check_only)
{
	char err[512], keybuf[64];
	const char *key, *value;
	int i, n;

	/* Pass 1: options that decide what the rest means. */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			usage(0);
		if (strcmp(argv[i], "--version") == 0) {
			printf("agent-laned %s (protocol %u)\n", AGENT_LANE_VERSION,
			    WIRE_PROTOCOL_VERSION);
			exit(0);
		}
		if (strncmp(argv[i], "--config", 8) == 0 &&
		    (argv[i][8] == '\0' || argv[i][8] == '=')) {
			if ((n = flag_value(argc, argv, i, &key, &value, keybuf,
			    sizeof keybuf)) < 0)
				usage(2);
			free(cfg->config_path);
			cfg->config_path = xstrdup(value);
			cfg->config_explicit = true;
			i += n - 1;
		}
	}
	/* A file named explicitly must exist; the default one may not. */
	if (config_load_file(cfg, cfg->config_path, cfg->config_explicit, err,
	    sizeof err) == -1) {
		fprintf(stderr, "agent-laned: %s\n", err);
		exit(2);
	}
	/* Pass 2: flags override the file. */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-d") == 0 || strcmp(argv[i], "--debug") == 0) {
			cfg->debug = true;
			continue;
		}
		if (strcmp(argv[i], "--check-config") == 0) {
			*check_only = true;
			continue;
		}
		if (strncmp(argv[i], "--", 2) != 0) {
			fprintf(stderr, "agent-laned: unexpected argument %s\n",
			    argv[i]);
			usage(2);
		}
		/* What it is before what it needs: --bogus is unknown. */
		flag_known(argv[i] + 2);
		if (strchr(argv[i], '=') == NULL && config_is_flag(argv[i] + 2)) {
			/* A yes/no key as a bare flag. */
			key = argv[i] + 2;
			value = "yes";
			n = 1;
		} else if ((n = flag_value(argc, argv, i, &key, &value, keybuf,
		    sizeof keybuf)) < 0) {
			fprintf(stderr, "agent-laned: %s needs a value\n", argv[i]);
			usage(2);
		}
		i += n - 1;
		if (strcmp(key, "config") == 0)
			continue;
		if (config_set(cfg, key, value, err, sizeof err) == -1) {
			fprintf(stderr, "agent-laned: %s\n", err);
			exit(2);
		}
	}
	if (config_finalize(cfg, err, sizeof err) == -1) {
		fprintf(stderr, "agent-laned: %s\n", err);
		exit(2);
	}
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct laned *d = arg;

	switch (sig) {
	case SIGCHLD:
		proc_reap(&d->procs);
		break;
	case SIGHUP:
		log_info("SIGHUP ignored: restart agent-laned to change its "
		    "configuration");
		break;
	default:
		if (d->shutting_down)
			break;
		log_info("%s: shutting down", strsignal((int)sig));
		d->shutting_down = true;
		event_base_loopexit(d->base, NULL);
		break;
	}
}

static void
make_dir(const char *path, uid_t uid)
{
	char err[512];

	if (listener_private_dir(path, uid, true, err, sizeof err) == -1)
		fatalx("%s", err);
}

int
main(int argc, char **argv)
{
	struct laned d;
	struct event_config *evcfg;
	struct sockaddr_un sun;
	char err[512], limactl[PATH_MAX], path[PATH_MAX];
	bool check_only = false;

	sanitize_stdio();
	/*
	 * First of all: a core of this process would hold secret values and
	 * lane CA keys. Not a configuration choice.
	 */
	if (compat_nocore() == -1) {
		fprintf(stderr, "agent-laned: cannot disable core dumps: %s\n",
		    strerror(errno));
		return 1;
	}
	/* Before OpenSSL allocates anything: its buffers held secret values. */
	if (!tls_wipe_on_free()) {
		fprintf(stderr, "agent-laned: cannot set OpenSSL's allocator\n");
		return 1;
	}
	compat_cloexec_from(3);
	umask(077);
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return 1;

	memset(&d, 0, sizeof d);
	d.listen_fd = d.lock_fd = d.socket_lock_fd = -1;
	d.uid = geteuid();
	d.started_at_ms = time_now_ms();
	d.pid = getpid();
	TAILQ_INIT(&d.procs);
	TAILQ_INIT(&d.conns);
	TAILQ_INIT(&d.lanes);
	d.dispatch = dispatch_request;
	config_defaults(&d.cfg);
	parse_args(&d.cfg, argc, argv, &check_only);
	/*
	 * Every proxied connection is two descriptors: a configuration that
	 * cannot have them all open would fail later, lane by lane, with
	 * EMFILE. Refused now, --check-config included.
	 */
	if (config_check_nofile(&d.cfg, compat_nofile_raise(), err,
	    sizeof err) == -1) {
		fprintf(stderr, "agent-laned: %s\n", err);
		config_free(&d.cfg);
		return 2;
	}
	if (!lima_template_acceptable(d.cfg.lima_template)) {
		fprintf(stderr, "agent-laned: lima_template \"%s\" is refused: "
		    "only template:_images/NAME or an absolute file path can "
		    "be a lane's base (other templates mount the home "
		    "directory)\n", d.cfg.lima_template);
		return 2;
	}
	if (check_only) {
		config_print(&d.cfg, stdout);
		config_free(&d.cfg);
		return 0;
	}
	log_init("agent-laned", d.cfg.debug);

	if (lima_resolve_limactl(d.cfg.limactl, limactl, sizeof limactl) == -1)
		limactl_missing(d.cfg.limactl);
	if (chdir("/") == -1)
		fatal("chdir /");

	/* The state directory holds the registry and Lima's SSH keys. */
	make_dir(d.cfg.state_dir, d.uid);
	snprintf(path, sizeof path, "%s/agent-laned.lock", d.cfg.state_dir);
	if ((d.lock_fd = listener_lock(path, err, sizeof err)) == -1) {
		fprintf(stderr, "agent-laned: %s\n", err);
		log_warnx("%s", err);
		return 1;
	}
	/*
	 * Our own log file, bounded, where `agent-lanectl logs` reads it on
	 * every host (the journal and launchd's files differ). After the
	 * lock: a second daemon must not rotate the first one's log.
	 */
	snprintf(path, sizeof path, "%s/log", d.cfg.state_dir);
	make_dir(path, d.uid);
	snprintf(path, sizeof path, "%s/log/agent-laned.log", d.cfg.state_dir);
	if (log_open_file(path, d.cfg.max_log_bytes, err, sizeof err) == -1)
		log_warnx("log file: %s; logging to stderr only", err);
	else
		log_file_only(d.cfg.log_file_only);
	/* Before any lane: the values and CA keys go to its arena. */
#ifdef LANED_TEST_HOOKS
	if (testhooks_secmem())
#endif
		(void)secmem_init();
	snprintf(path, sizeof path, "%s/log/lanes", d.cfg.state_dir);
	make_dir(path, d.uid);
	make_dir(d.cfg.lima_home, d.uid);
	snprintf(path, sizeof path, "%s/lanes", d.cfg.state_dir);
	make_dir(path, d.uid);
	/* Lima puts sockets in each instance directory; they must fit. */
	if (strlen(d.cfg.lima_home) + LIMA_SOCK_SUFFIX >= sizeof sun.sun_path)
		fatalx("Lima home %s is too long: instance socket paths would "
		    "exceed %zu bytes; use a shorter --state-dir",
		    d.cfg.lima_home, sizeof sun.sun_path - 1);

	snprintf(path, sizeof path, "%s/registry.db", d.cfg.state_dir);
	if (registry_open(path, &d.reg, err, sizeof err) != REG_OK)
		fatalx("registry: %s", err);
	/* Before any call: what the last run left in flight is said first. */
	audit_recover(&d);

	/* Before libevent allocates anything: buffers held secrets. */
	wipe_libevent_on_free();
	/*
	 * The changelist folds the several epoll_ctl calls a connection's
	 * interest changes make within one loop turn (enable write, disable,
	 * re-enable read) into one: it was a quarter of a small call's
	 * system time. Its caveat, dup()ed descriptors registered twice, does
	 * not arise: the daemon never dups a descriptor it watches.
	 */
	if ((evcfg = event_config_new()) == NULL ||
	    event_config_set_flag(evcfg,
	    EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST) != 0 ||
	    (d.base = event_base_new_with_config(evcfg)) == NULL)
		fatalx("event_base_new");
	event_config_free(evcfg);
	d.sig_chld = evsignal_new(d.base, SIGCHLD, signal_cb, &d);
	d.sig_term = evsignal_new(d.base, SIGTERM, signal_cb, &d);
	d.sig_int = evsignal_new(d.base, SIGINT, signal_cb, &d);
	d.sig_hup = evsignal_new(d.base, SIGHUP, signal_cb, &d);
	if (d.sig_chld == NULL || d.sig_term == NULL || d.sig_int == NULL ||
	    d.sig_hup == NULL || evsignal_add(d.sig_chld, NULL) != 0 ||
	    evsignal_add(d.sig_term, NULL) != 0 ||
	    evsignal_add(d.sig_int, NULL) != 0 ||
	    evsignal_add(d.sig_hup, NULL) != 0)
		fatalx("signal events");

	/* Before lima_new: socket activation strips LISTEN_* from environ. */
	if (listener_start(&d, err, sizeof err) == -1) {
		fprintf(stderr, "agent-laned: %s\n", err);
		log_warnx("%s", err);
		return 1;
	}
	d.lima = lima_new(limactl, d.cfg.lima_home, d.cfg.lima_template, environ);
	log_info("agent-laned %s: state %s, limactl %s, uid %ld",
	    AGENT_LANE_VERSION, d.cfg.state_dir, limactl, (long)d.uid);

	lanenet_init(&d);
#ifdef LANED_TEST_HOOKS
	testhooks_init(&d);
#endif
	/* What limactl can do, learned before the first create needs it. */
	lanenet_probe(&d);
	reaper_init(&d);
	image_init(&d);
	image_build_init(&d);
	lanecommit_init(&d);
	pool_init(&d);
	reaper_start(&d);
	/* Before image_recover deletes a half-made commit's clone. */
	lanecommit_recover(&d);
	image_recover(&d);
	/* After recovery: pool lanes kept from the last run count. */
	pool_start(&d);
	if (event_base_dispatch(d.base) == -1)
		fatalx("event_base_dispatch");

	/*
	 * Running lanes stay up: they belong to the registry, which the next
	 * start reconciles. Calls in flight end; their guest commands are
	 * killed when their channels close.
	 */
	listener_stop(&d);
	lane_persist_activity(&d);
	lanecommit_free_all(&d);
	lane_free_all(&d);
	image_build_free_all(&d);
	image_free_all(&d);
	conn_close_all(&d);
	proc_shutdown(&d.procs);
	reaper_stop(&d);
	pool_stop(&d);
	lanenet_free(&d);
	laneproxy_free(&d);
	/* Let deferred frees and the kills run once. */
	(void)event_base_loop(d.base, EVLOOP_NONBLOCK);
	registry_close(d.reg);
	lima_free(d.lima);
	event_free(d.sig_chld);
	event_free(d.sig_term);
	event_free(d.sig_int);
	event_free(d.sig_hup);
	event_base_free(d.base);
	config_free(&d.cfg);
	log_info("stopped");
	log_close_file();
	return 0;
}
