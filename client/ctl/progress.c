/*
 * The progress line on standard error: a spinner, what is going on and
 * the time it has taken, redrawn in place by a thread ten times a second
 * while the main thread blocks in a call. Only on a terminal, never with
 * -q. One line at a time per process; it is always finished with a
 * newline, by ctl_progress_end(), or by the next message (util.c) or by
 * main's way out, whatever ended the command: a failure, SIGINT, SIGTERM.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "units.h"
#include "text.h"

/* A phase that lasts this long gets its hint (a first image download). */
#define PROGRESS_HINT_MS 5000
#define PROGRESS_TICK_MS 100

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool active;		/* a line is being drawn */
	bool stop;
	char what[64];
	char phase[64];
	char message[256];
	uint64_t bytes, total;	/* copies; total 0: unknown */
	bool have_bytes;
	bool hint_said;		/* the slow-download line was printed */
	struct timespec start, phase_start;
	unsigned spin;
} pr = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

static int64_t
ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - t->tv_sec) * 1000 +
	    (now.tv_nsec - t->tv_nsec) / 1000000;
}

/* Daemon and limactl text on our terminal: the daemon's rule. */
static void
copy_safe(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
	text_sanitize(dst);
}

static void
elapsed(int64_t ms, char *buf, size_t len)
{
	if (ms < 60000)
		snprintf(buf, len, "%lld.%llds", (long long)(ms / 1000),
		    (long long)(ms % 1000 / 100));
	else
		snprintf(buf, len, "%lldm%02llds", (long long)(ms / 60000),
		    (long long)(ms % 60000 / 1000));
}

static int
columns(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10)
		return ws.ws_col;
	return 80;
}

/* Columns of UTF-8 text: one a character (no wide ones in our lines). */
static int
text_columns(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

/* Cuts s after cols characters, never inside one, and appends more. */
static void
cut_columns(char *s, int cols, const char *more)
{
	char *p = s;

	for (; *p != '\0'; p++)
		if (((unsigned char)*p & 0xc0) != 0x80 && cols-- == 0)
			break;
	strcpy(p, more);
}

/* The line as it is now (pr.mu held); final: no spinner. */
static void
render(char *buf, size_t len, const char *final)
{
	static const char spinner[] = "|/-\\";
	char el[32], detail[160] = "";
	int64_t ms = ms_since(&pr.start);
	int n, keep, width = columns() - 1;

	elapsed(ms, el, sizeof el);
	if (pr.have_bytes) {
		char got[16], of[16], rate[16];

		units_format_bytes(pr.bytes, got, sizeof got);
		units_format_bytes(pr.total, of, sizeof of);
		units_format_bytes(ms > 0 ? pr.bytes * 1000 / (uint64_t)ms : 0, rate,
		    sizeof rate);
		if (pr.total > 0)
			snprintf(detail, sizeof detail, "%3u%% %s of %s, %s/s",
			    (unsigned)(pr.bytes >= pr.total ?
			    (final != NULL ? 100 : 99) :
			    pr.bytes * 100 / pr.total), got, of, rate);
		else
			snprintf(detail, sizeof detail, "%s, %s/s", got, rate);
	}
	/* "| create: starting - booting the VM [2.3s]" */
	n = snprintf(buf, len, "%c %s: %s%s%s%s%s",
	    final != NULL ? ' ' : spinner[pr.spin++ % 4], pr.what,
	    final != NULL ? final : pr.phase,
	    final == NULL && pr.message[0] != '\0' ? " - " : "",
	    final == NULL ? pr.message : "",
	    detail[0] != '\0' && (final != NULL || pr.phase[0] != '\0') ?
	    ", " : "", detail);
	if (n < 0)
		n = 0;
	if ((size_t)n >= len)
		n = (int)len - 1;
	/*
	 * Wider than the terminal would wrap, and \r redraws one row: the
	 * text gives way, never the time, which is how a slow boot is seen
	 * to be alive.
	 */
	keep = width - (int)strlen(el) - 3;
	if (text_columns(buf) > width - (int)strlen(el) - 3 && keep > 3)
		cut_columns(buf, keep - 3, "...");
	n = (int)strlen(buf);
	snprintf(buf + n, len - (size_t)n, " [%s]", el);
}

static void
draw(const char *final)
{
	char line[512];

	/*
	 * A slow download is a first run's: say so once, on a line of its
	 * own above the spinner, whole whatever the terminal's width.
	 */
	if (final == NULL && !pr.hint_said &&
	    strcmp(pr.phase, "downloading") == 0 &&
	    ms_since(&pr.phase_start) >= PROGRESS_HINT_MS) {
		pr.hint_said = true;
		fprintf(stderr, "\r\033[Kagent-lanectl: Lima is downloading "
		    "%s (a first run: several hundred MB, this can take "
		    "minutes; later lanes use Lima's cache)\n",
		    pr.message[0] != '\0' ? pr.message : "the VM image");
	}
	render(line, sizeof line, final);
	fprintf(stderr, "\r\033[K%s%s", line, final != NULL ? "\n" : "");
	fflush(stderr);
}

static void *
progress_thread(void *arg)
{
	struct timespec until;

	pthread_mutex_lock(&pr.mu);
	while (!pr.stop) {
		draw(NULL);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += PROGRESS_TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&pr.cv, &pr.mu, &until);
	}
	pthread_mutex_unlock(&pr.mu);
	return NULL;
}

bool
ctl_progress_start(const char *what, bool quiet)
{
	sigset_t all, old;
	int rc;

	if (pr.active || quiet || !isatty(STDERR_FILENO))
		return false;
	pthread_mutex_lock(&pr.mu);
	copy_safe(pr.what, sizeof pr.what, what);
	pr.phase[0] = pr.message[0] = '\0';
	pr.have_bytes = pr.hint_said = false;
	pr.bytes = pr.total = 0;
	pr.stop = false;
	clock_gettime(CLOCK_MONOTONIC, &pr.start);
	pr.phase_start = pr.start;
	pthread_mutex_unlock(&pr.mu);
	/*
	 * The thread blocks every signal (it inherits the mask): SIGINT and
	 * SIGTERM must interrupt the main thread's blocking call, which is
	 * how a call stops (al_interrupt), not land in the spinner.
	 */
	sigfillset(&all);
	if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0)
		return false;
	rc = pthread_create(&pr.thread, NULL, progress_thread, NULL);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* Without a thread there is no spinner, and no line to finish. */
	if (rc != 0)
		return false;
	pr.active = true;
	return true;
}

void
ctl_progress_phase(const char *phase, const char *message)
{
	bool changed;

	if (!pr.active)
		return;
	pthread_mutex_lock(&pr.mu);
	if ((changed = strcmp(phase, pr.phase) != 0))
		clock_gettime(CLOCK_MONOTONIC, &pr.phase_start);
	copy_safe(pr.phase, sizeof pr.phase, phase);
	copy_safe(pr.message, sizeof pr.message, message);
	/* Drawn now: a phase shorter than a tick is still seen. */
	if (changed)
		draw(NULL);
	pthread_mutex_unlock(&pr.mu);
}

void
ctl_progress_bytes(uint64_t bytes, uint64_t total)
{
	if (!pr.active)
		return;
	pthread_mutex_lock(&pr.mu);
	pr.have_bytes = true;
	pr.bytes = bytes;
	pr.total = total;
	pthread_mutex_unlock(&pr.mu);
}

void
ctl_progress_end(const char *result)
{
	if (!pr.active)
		return;
	pthread_mutex_lock(&pr.mu);
	pr.stop = true;
	pthread_cond_signal(&pr.cv);
	pthread_mutex_unlock(&pr.mu);
	(void)pthread_join(pr.thread, NULL);
	pr.active = false;
	/* The final state on its own line, ended: nothing else draws now. */
	draw(result != NULL ? result : "stopped");
}

void
ctl_progress_abort(void)
{
	ctl_progress_end(ctl_interrupted() ? "interrupted" : "failed");
}
