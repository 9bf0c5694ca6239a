/*
 * agent-lanectl: the command-line client of agent-laned. A thin layer over
 * libagentlane; see agent-lanectl(1).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const struct {
	const char *name;
	int (*fn)(struct ctl *, int, char **);
} commands[] = {
	{ "create", cmd_create },
	{ "ls", cmd_ls },
	{ "list", cmd_ls },
	{ "show", cmd_show },
	{ "rm", cmd_rm },
	{ "extend", cmd_extend },
	{ "events", cmd_events },
	{ "reap", cmd_reap },
	{ "exec", cmd_exec },
	{ "cp", cmd_cp },
	{ "daemon", cmd_daemon },
	{ "image", cmd_image },
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: agent-lanectl [--socket PATH] COMMAND [ARGS]\n"
	    "\n"
	    "  create [--cpus N] [--memory GIB] [--disk GIB] [--timeout DURATION]\n"
	    "         [--idle-timeout DURATION] [--label KEY=VALUE]...\n"
	    "         [--image IMAGE | --provision FILE...]\n"
	    "                       create a lane; prints its name. --image clones a\n"
	    "                       built image; --provision builds (or reuses) the\n"
	    "                       image of those scripts first\n"
	    "  ls [--all] [--json]  live lanes (--all: ended ones too)\n"
	    "  show LANE [--json]   one lane\n"
	    "  rm LANE...           destroy lanes\n"
	    "  extend LANE DURATION move a lane's deadline (capped by the daemon)\n"
	    "  exec [-n] [--workdir DIR] [--env NAME[=VALUE]]... [--timeout DURATION]\n"
	    "       LANE -- CMD [ARG...]\n"
	    "                       run a command in a lane; exits with its status\n"
	    "                       (128+N if killed by signal N, 125 if Agent Lane\n"
	    "                       failed); --env NAME takes the value from the\n"
	    "                       environment; -n: no stdin\n"
	    "  cp [--max-bytes N] [--max-entries N] SRC DST\n"
	    "                       copy HOSTPATH LANE:GUESTPATH or LANE:GUESTPATH HOSTPATH;\n"
	    "                       a relative GUESTPATH is in the lane's workspace\n"
	    "  events LANE [--json] the lane's audit trail\n"
	    "  reap [--orphans]     reconcile; --orphans deletes orphaned VMs\n"
	    "  image build NAME [--provision FILE]... [--from IMAGE] [--docker]\n"
	    "        [--cpus N] [--memory GIB] [--disk GIB]\n"
	    "                       build a provisioned image (scripts run as root);\n"
	    "                       identical inputs do nothing; prints its name\n"
	    "  image ls [--json] | image show NAME [--json] | image rm NAME...\n"
	    "  daemon install|uninstall|status [--no-load] [--platform launchd|systemd]\n"
	    "                       manage the launchd agent or systemd --user units\n"
	    "                       (status exits 3 when the daemon does not answer)\n"
	    "  version              client and daemon versions\n"
	    "\n"
	    "Durations: 30s, 90m, 2h; a plain number is minutes for create and extend,\n"
	    "seconds for exec. The socket defaults to $AGENT_LANE_SOCKET, then\n"
	    "~/.agent-lane/run/agent-laned.sock.\n");
}

static int
cmd_version(struct ctl *ctl, int argc, char **argv)
{
	struct al_daemon_info info;
	struct al_error err;

	if (argc != 1)
		return ctl_usage("version takes no arguments");
	printf("agent-lanectl %s (protocol %u)\n", AGENT_LANE_VERSION,
	    WIRE_PROTOCOL_VERSION);
	if (al_hello(ctl->client, &info, &err) == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	printf("agent-laned %s (protocol %u)\n", info.version,
	    info.protocol_version);
	return 0;
}

int
main(int argc, char **argv)
{
	struct ctl ctl = { .prog = "agent-lanectl" };
	const char *socket = NULL;
	int i = 1, rc;

	/* A closed output pipe is an error to report, not a reason to die. */
	signal(SIGPIPE, SIG_IGN);
	catch_interrupts();
	while (i < argc && argv[i][0] == '-') {
		if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
			socket = argv[i + 1];
			i += 2;
		} else if (strncmp(argv[i], "--socket=", 9) == 0) {
			socket = argv[i] + 9;
			i++;
		} else if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("agent-lanectl %s\n", AGENT_LANE_VERSION);
			return 0;
		} else
			return ctl_usage("unknown option %s", argv[i]);
	}
	if (i >= argc) {
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	if (strcmp(argv[i], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if ((ctl.client = al_client_new(socket, "agent-lanectl/"
	    AGENT_LANE_VERSION)) == NULL) {
		ctl_errx("out of memory");
		return CTL_EXIT_FAILURE;
	}
	if (strcmp(argv[i], "version") == 0)
		rc = cmd_version(&ctl, argc - i, argv + i);
	else {
		rc = -1;
		for (size_t j = 0; j < sizeof commands / sizeof *commands; j++)
			if (strcmp(argv[i], commands[j].name) == 0) {
				rc = commands[j].fn(&ctl, argc - i, argv + i);
				break;
			}
		if (rc == -1)
			rc = ctl_usage("unknown command \"%s\" (see "
			    "agent-lanectl --help)", argv[i]);
	}
	al_client_free(ctl.client);
	if (caught != 0) {
		/* Cleaned up; now die of the signal, as the caller expects. */
		signal(caught, SIG_DFL);
		raise(caught);
	}
	if (fflush(stdout) == EOF && rc == 0)
		rc = CTL_EXIT_FAILURE;
	return rc;
}
