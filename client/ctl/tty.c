/*
 * The local terminal for exec -t and shell: raw mode while a guest command
 * owns the terminal, restored on every way out (return, error, a signal
 * that ends us, exit), and SIGWINCH turned into a readable descriptor for
 * the library's loop, which then sends the new window size.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "ctl.h"

static struct termios saved;
static int saved_fd = -1;
static int winch_pipe[2] = { -1, -1 };

void
ctl_tty_restore(void)
{
	if (saved_fd == -1)
		return;
	/* TCSAFLUSH would drop what the user typed after the command. */
	while (tcsetattr(saved_fd, TCSADRAIN, &saved) == -1 && errno == EINTR)
		;
	saved_fd = -1;
}

static void
ctl_tty_atexit(void)
{
	ctl_tty_restore();
}

int
ctl_tty_raw(int fd)
{
	static bool registered;
	struct termios t;

	if (saved_fd != -1)
		return 0;
	if (tcgetattr(fd, &saved) == -1)
		return -1;
	if (!registered) {
		if (atexit(ctl_tty_atexit) != 0)
			return -1;
		registered = true;
	}
	/*
	 * Raw, as ssh -t and docker -t do: no echo, no line editing, and no
	 * signals from ^C or ^Z, which travel as bytes to the guest's
	 * terminal, whose line discipline turns them into signals there.
	 */
	t = saved;
	cfmakeraw(&t);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(fd, TCSADRAIN, &t) == -1)
		return -1;
	saved_fd = fd;
	return 0;
}

static void
winch_cb(int sig)
{
	int saved_errno = errno;

	(void)sig;
	/* Full pipe: a resize is already pending, which is all we say. */
	(void)write(winch_pipe[1], "w", 1);
	errno = saved_errno;
}

int
ctl_tty_winch_fd(void)
{
	struct sigaction sa;

	if (winch_pipe[0] != -1)
		return winch_pipe[0];
	if (pipe(winch_pipe) == -1)
		return -1;
	for (int i = 0; i < 2; i++)
		if (fcntl(winch_pipe[i], F_SETFD, FD_CLOEXEC) == -1 ||
		    fcntl(winch_pipe[i], F_SETFL, O_NONBLOCK) == -1)
			return -1;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = winch_cb;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGWINCH, &sa, NULL) == -1)
		return -1;
	return winch_pipe[0];
}
