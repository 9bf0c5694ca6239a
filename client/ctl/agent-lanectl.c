/*
 * agent-lanectl: the command-line client of agent-laned. A thin layer over
 * libagentlane; see agent-lanectl(1).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

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

/* "unknown command "crate"; did you mean "create"?" (names, not aliases) */
static int
unknown_command(const struct ctl *ctl, const char *word)
{
	const char *names[64], *near;
	size_t n = 0;

	for (size_t i = 0; i < ctl->ncommands && n < sizeof names /
	    sizeof *names; i++)
		if (!ctl->commands[i].hidden)
			names[n++] = ctl->commands[i].name;
	if ((near = ctl_nearest(word, names, n)) != NULL)
		return ctl_usage("unknown command \"%s\"; did you mean \"%s\"? "
		    "(see agent-lanectl --help)", word, near);
	return ctl_usage("unknown command \"%s\" (see agent-lanectl --help)",
	    word);
}

int
main(int argc, char **argv)
{
	struct ctl ctl = {
		.prog = "agent-lanectl",
		.commands = ctl_commands,
		.ncommands = ctl_ncommands,
	};
	const struct {
		const char *flag, *arg;
		const char **slot;
	} valued[] = {
		{ "--socket", "PATH", &ctl.socket },
		{ "--host", "URL", &ctl.host },
		{ "--context", "NAME", &ctl.context },
	};
	const struct ctl_command *c;
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
	ctl_interrupt_catch();
	/* Global options before the command; ctl_parse takes them after. */
	while (i < argc && argv[i][0] == '-') {
		const char **slot = NULL;
		size_t k;

		for (k = 0; k < sizeof valued / sizeof *valued; k++) {
			size_t len = strlen(valued[k].flag);

			if (strncmp(argv[i], valued[k].flag, len) != 0 ||
			    (argv[i][len] != '\0' && argv[i][len] != '='))
				continue;
			slot = valued[k].slot;
			if (argv[i][len] == '=') {
				*slot = argv[i] + len + 1;
				i++;
			} else if (i + 1 < argc) {
				*slot = argv[i + 1];
				i += 2;
			} else
				return ctl_usage("%s needs %s", valued[k].flag,
				    valued[k].arg);
			break;
		}
		if (slot != NULL)
			continue;
		if (strcmp(argv[i], "--json") == 0) {
			ctl.json = true;
			ctl_json_errors(true);
			i++;
		} else if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			/* "-h create" is the help of create. */
			c = i + 1 < argc ? ctl_command_find(&ctl, argv[i + 1]) :
			    NULL;
			ctl_help(stdout, &ctl, c != NULL && !c->hidden ? c : NULL);
			return 0;
		} else if (strcmp(argv[i], "-V") == 0 ||
		    strcmp(argv[i], "--version") == 0) {
			printf("agent-lanectl %s\n", AGENT_LANE_VERSION);
			return 0;
		} else
			return ctl_usage("unknown option %s (see agent-lanectl "
			    "--help)", argv[i]);
	}
	/* As docker and gh: the bare command is a request for help. */
	if (i >= argc) {
		ctl_help(stdout, &ctl, NULL);
		return 0;
	}
	if ((c = ctl_command_find(&ctl, argv[i])) != NULL) {
		ctl.cmd = c;
		/* It opens the client in ctl_parse, after its own --socket. */
		rc = c->run(&ctl, argc - i, argv + i);
	} else
		rc = unknown_command(&ctl, argv[i]);
	/* Whatever ended the command, a progress line ends with a newline. */
	ctl_progress_abort();
	al_client_free(ctl.client);
	ctl_free_parsed(&ctl);
	/* Cleaned up; now die of the signal, as the caller expects. */
	ctl_interrupt_reraise();
	if (fflush(stdout) == EOF && rc == 0)
		rc = CTL_EXIT_FAILURE;
	return rc;
}
