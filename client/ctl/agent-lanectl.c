/*
 * agent-lanectl: the command-line client of agent-laned. A thin layer over
 * libagentlane; see agent-lanectl(1).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "wire.h"

/* The signal that interrupted a call; re-raised once it has cleaned up. */
static volatile sig_atomic_t caught;

bool
ctl_interrupted(void)
{
	return caught != 0;
}

static void
interrupt_cb(int sig)
{
	caught = sig;
	al_interrupt();
}

/*
 * SIGINT, SIGTERM and SIGHUP stop the call in progress (without SA_RESTART,
 * so blocking calls return) and let it clean up: a copy-out removes its
 * temporary file, an exec's connection closes and its command is killed.
 */
static void
catch_interrupts(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = interrupt_cb;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGHUP, &sa, NULL);
}

/*
 * A descriptor 0, 1 or 2 that our caller closed (`2>&-`) would be the next
 * one open(2) or socket(2) returns: the control socket would land there and
 * the guest's output would be written into it. Hold them on /dev/null, as
 * the daemon does. 0 or -1 (and we cannot run safely).
 */
static int
reserve_stdio(void)
{
	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
		int nfd;

		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		if ((nfd = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY :
		    O_WRONLY)) == -1)
			return -1;
		if (nfd != fd) {
			/* Lower descriptors were all open: cannot happen. */
			close(nfd);
			return -1;
		}
	}
	return 0;
}

/* What runs each command; help.c describes them. */
static const struct {
	const char *name;
	int (*fn)(struct ctl *, int, char **);
} commands[] = {
	{ "create", cmd_create },
	{ "run", cmd_run },
	{ "ls", cmd_ls },
	{ "list", cmd_ls },
	{ "show", cmd_show },
	{ "rm", cmd_rm },
	{ "extend", cmd_extend },
	{ "events", cmd_events },
	{ "logs", cmd_logs },
	{ "reap", cmd_reap },
	{ "exec", cmd_exec },
	{ "shell", cmd_shell },
	{ "cp", cmd_cp },
	{ "daemon", cmd_daemon },
	{ "image", cmd_image },
	{ "version", cmd_version },
	{ "help", cmd_help },
	{ "completion", cmd_completion },
	{ "__lanes", cmd_complete_lanes },
};

int
cmd_version(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_parsed p;
	struct al_daemon_info info;
	struct al_error err;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands > 0)
		return ctl_usage("version takes no arguments");
	if (al_hello(ctl->client, &info, &err) != AL_OK) {
		/* The client's version is worth printing all the same. */
		if (ctl->json) {
			printf("{\"client\":{\"version\":");
			ctl_json_string(stdout, AGENT_LANE_VERSION);
			printf(",\"protocol\":%u},\"daemon\":null}\n",
			    WIRE_PROTOCOL_VERSION);
		} else
			printf("agent-lanectl %s (protocol %u)\n",
			    AGENT_LANE_VERSION, WIRE_PROTOCOL_VERSION);
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	}
	if (ctl->json) {
		printf("{\"client\":{\"version\":");
		ctl_json_string(stdout, AGENT_LANE_VERSION);
		printf(",\"protocol\":%u},\"daemon\":{\"version\":",
		    WIRE_PROTOCOL_VERSION);
		ctl_json_string(stdout, info.version);
		printf(",\"protocol\":%u}}\n", info.protocol_version);
		return 0;
	}
	printf("agent-lanectl %s (protocol %u)\n", AGENT_LANE_VERSION,
	    WIRE_PROTOCOL_VERSION);
	printf("agent-laned %s (protocol %u)\n", info.version,
	    info.protocol_version);
	return 0;
}

int
main(int argc, char **argv)
{
	struct ctl ctl = { .prog = "agent-lanectl" };
	int i = 1, rc;

	if (reserve_stdio() == -1)
		return CTL_EXIT_FAILURE;
	/*
	 * No setlocale(3): file names are copied as bytes (libagentlane
	 * writes pax with hdrcharset=BINARY), so the locale could only make
	 * the copy depend on the environment it ran in.
	 */
	/* A closed output pipe is an error to report, not a reason to die. */
	signal(SIGPIPE, SIG_IGN);
	catch_interrupts();
	/* Global options before the command; ctl_parse takes them after. */
	while (i < argc && argv[i][0] == '-') {
		if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
			ctl.socket = argv[i + 1];
			i += 2;
		} else if (strncmp(argv[i], "--socket=", 9) == 0) {
			ctl.socket = argv[i] + 9;
			i++;
		} else if (strcmp(argv[i], "--json") == 0) {
			ctl.json = true;
			i++;
		} else if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			/* "-h create" is the help of create. */
			ctl_help(stdout, i + 1 < argc ?
			    ctl_command_find(argv[i + 1]) : NULL);
			return 0;
		} else if (strcmp(argv[i], "-V") == 0 ||
		    strcmp(argv[i], "--version") == 0) {
			printf("agent-lanectl %s\n", AGENT_LANE_VERSION);
			return 0;
		} else if (strcmp(argv[i], "--socket") == 0)
			return ctl_usage("--socket needs PATH");
		else
			return ctl_usage("unknown option %s (see agent-lanectl "
			    "--help)", argv[i]);
	}
	if (i >= argc) {
		ctl_help(stderr, NULL);
		return CTL_EXIT_USAGE;
	}
	rc = -1;
	for (size_t j = 0; j < sizeof commands / sizeof *commands; j++)
		if (strcmp(argv[i], commands[j].name) == 0) {
			/*
			 * Commands described in help.c open the client in
			 * ctl_parse, after their own --socket; others here.
			 */
			if (ctl_command_find(argv[i]) == NULL &&
			    !ctl_client_open(&ctl))
				rc = CTL_EXIT_FAILURE;
			else
				rc = commands[j].fn(&ctl, argc - i, argv + i);
			break;
		}
	if (rc == -1)
		rc = ctl_usage("unknown command \"%s\" (see agent-lanectl "
		    "--help)", argv[i]);
	/* Whatever ended the command, a progress line ends with a newline. */
	ctl_progress_abort();
	al_client_free(ctl.client);
	ctl_free_parsed(&ctl);
	if (caught != 0) {
		/* Cleaned up; now die of the signal, as the caller expects. */
		signal(caught, SIG_DFL);
		raise(caught);
	}
	if (fflush(stdout) == EOF && rc == 0)
		rc = CTL_EXIT_FAILURE;
	return rc;
}
