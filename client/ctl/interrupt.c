/*
 * The signals that stop agent-lanectl: SIGINT, SIGTERM and SIGHUP interrupt
 * the call in progress (without SA_RESTART, so blocking calls return) and
 * let it clean up: a copy-out removes its temporary file, an exec's
 * connection closes and its command is killed. main then dies of the
 * signal, as the caller expects. The lowest layer of the CLI: it calls
 * nothing of ours but libagentlane.
 */
#include <signal.h>
#include <string.h>

#include "ctl.h"

/* The signal that interrupted a call; re-raised once it has cleaned up. */
static volatile sig_atomic_t caught;

static void
interrupt_cb(int sig)
{
	caught = sig;
	al_interrupt();
}

void
ctl_interrupt_catch(void)
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

bool
ctl_interrupted(void)
{
	return caught != 0;
}

void
ctl_interrupt_reraise(void)
{
	int sig = caught;

	if (sig == 0)
		return;
	signal(sig, SIG_DFL);
	raise(sig);
}
