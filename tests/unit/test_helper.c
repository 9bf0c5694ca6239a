/*
 * The guest helper exactly as it is embedded (guest_helper_source, the
 * stripped program), run locally as `perl -e PROGRAM` and driven with
 * frames from the daemon's own encoder (guest_header); its answers go
 * through the daemon's parser (guest_parse). The helper is written for
 * Linux guests (its errno and fcntl constants are Linux's), so this runs on
 * Linux hosts only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guestproto.h"

extern const char guest_helper_source[];

#define WAIT_MS 10000

struct helper {
	pid_t pid;
	int in;			/* its stdin: our frames */
	int out;		/* its stdout: its frames */
	uint8_t buf[GUEST_MAX_PAYLOAD + 4096];
	size_t len;
	struct guest_parser parser;
	/* What it said. */
	char stdout_data[65536];
	size_t stdout_len;
	char stderr_data[4096];
	size_t stderr_len;
	uint64_t acked;
	long started_pid;
	struct guest_frame last;
	char last_data[1024];
};

/* The helper of the running test, for the teardown. */
static struct helper *current;

/*
 * A failed test must not leave the helper or its command behind (they hold
 * our stderr): kill both, the command by its process group.
 */
static int
teardown_helper(void **state)
{
	if (current != NULL) {
		if (current->started_pid > 1)
			(void)kill(-(pid_t)current->started_pid, SIGKILL);
		if (current->pid > 0 && kill(current->pid, SIGKILL) == 0)
			(void)waitpid(current->pid, NULL, 0);
		current = NULL;
	}
	return 0;
}

/* Starts `perl -e PROGRAM`; keep_fd, if not -1, is left open for it. */
static void
helper_start(struct helper *h, int keep_fd)
{
	int in[2], out[2];

	memset(h, 0, sizeof *h);
	current = h;
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	h->pid = fork();
	assert_true(h->pid != -1);
	if (h->pid == 0) {
		if (dup2(in[0], 0) == -1 || dup2(out[1], 1) == -1)
			_exit(120);
		for (int fd = 3; fd < 64; fd++)
			if (fd != keep_fd)
				(void)close(fd);
		execlp("perl", "perl", "-e", guest_helper_source, (char *)NULL);
		_exit(121);
	}
	close(in[0]);
	close(out[1]);
	h->in = in[1];
	h->out = out[0];
	assert_int_equal(fcntl(h->in, F_SETFD, FD_CLOEXEC), 0);
	/* A helper that stops reading fails the test instead of hanging it. */
	assert_int_equal(fcntl(h->in, F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(fcntl(h->out, F_SETFD, FD_CLOEXEC), 0);
	guest_parser_init(&h->parser);
}

static void
write_all(int fd, const void *data, size_t len)
{
	const uint8_t *p = data;
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1 && errno == EAGAIN) {
			/* Fails if the helper takes nothing for WAIT_MS. */
			assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
			continue;
		}
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

static void
helper_put(struct helper *h, char type, const void *data, size_t len)
{
	uint8_t hdr[GUEST_HEADER];

	guest_header(hdr, type, (uint32_t)len);
	write_all(h->in, hdr, sizeof hdr);
	if (len > 0)
		write_all(h->in, data, len);
}

static void
helper_put_str(struct helper *h, char type, const char *s)
{
	helper_put(h, type, s, strlen(s));
}

/*
 * The next frame, other than output and acknowledgements (which are
 * collected into h; with any_output, output ends the wait too); false at
 * the end of the stream.
 */
static bool
helper_next_frame(struct helper *h, bool any_output)
{
	struct guest_frame f;
	size_t used;
	enum guest_rc rc;
	ssize_t n;

	for (;;) {
		rc = guest_parse(&h->parser, h->buf, h->len, &f, &used);
		assert_int_not_equal(rc, GUEST_ERROR);
		if (rc == GUEST_FRAME) {
			bool other = false;

			switch (f.type) {
			case GUEST_STDOUT:
				assert_true(h->stdout_len + f.len <=
				    sizeof h->stdout_data);
				memcpy(h->stdout_data + h->stdout_len, f.data,
				    f.len);
				h->stdout_len += f.len;
				break;
			case GUEST_STDERR:
				if (h->stderr_len + f.len < sizeof h->stderr_data) {
					memcpy(h->stderr_data + h->stderr_len,
					    f.data, f.len);
					h->stderr_len += f.len;
				}
				break;
			case GUEST_ACK:
				h->acked += f.acked;
				break;
			case GUEST_STARTED:
				h->started_pid = strtol((const char *)f.data,
				    NULL, 10);
				other = true;
				break;
			default:
				other = true;
				break;
			}
			if (other) {
				size_t dl = f.len < sizeof h->last_data - 1 ?
				    f.len : sizeof h->last_data - 1;

				h->last = f;
				memcpy(h->last_data, f.data, dl);
				h->last_data[dl] = '\0';
				h->last.data = NULL;
			}
			memmove(h->buf, h->buf + used, h->len - used);
			h->len -= used;
			if (other || (any_output && (f.type == GUEST_STDOUT ||
			    f.type == GUEST_STDERR)))
				return true;
			continue;
		}
		memmove(h->buf, h->buf + used, h->len - used);
		h->len -= used;
		{
			struct pollfd pfd = { .fd = h->out, .events = POLLIN };

			assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
		}
		assert_true(h->len < sizeof h->buf);
		n = read(h->out, h->buf + h->len, sizeof h->buf - h->len);
		assert_true(n >= 0);
		if (n == 0)
			return false;
		h->len += (size_t)n;
	}
}

static bool
helper_next(struct helper *h)
{
	return helper_next_frame(h, false);
}

/* Waits for the helper process itself; its exit status. */
static int
helper_wait(struct helper *h)
{
	int st;

	close(h->in);
	close(h->out);
	assert_int_equal(waitpid(h->pid, &st, 0), h->pid);
	h->pid = 0;
	return st;
}

/* Runs argv with the setup frames; returns at the X (or F) frame. */
static void
helper_run(struct helper *h, const char *cwd, const char *const *env,
    const char *const *argv, const char *input, bool close_input)
{
	helper_start(h, -1);
	helper_put_str(h, 'C', cwd != NULL ? cwd : "");
	for (; env != NULL && *env != NULL; env++)
		helper_put_str(h, 'E', *env);
	for (; *argv != NULL; argv++)
		helper_put_str(h, 'A', *argv);
	helper_put(h, 'R', NULL, 0);
	if (input != NULL)
		helper_put_str(h, 'I', input);
	if (close_input)
		helper_put(h, 'Z', NULL, 0);
	assert_true(helper_next(h));
	if (h->last.type == GUEST_FAILED)
		return;
	assert_int_equal(h->last.type, GUEST_STARTED);
	assert_true(h->started_pid > 1);
	assert_true(helper_next(h));
	assert_int_equal(h->last.type, GUEST_EXIT);
}

static void
test_exit_code(void **state)
{
	const char *argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3",
	    NULL };
	struct helper h;

	helper_run(&h, NULL, NULL, argv, NULL, true);
	assert_int_equal(h.last.code, 3);
	assert_int_equal(h.last.sig, 0);
	assert_int_equal(h.stdout_len, 4);
	assert_memory_equal(h.stdout_data, "out\n", 4);
	assert_int_equal(h.stderr_len, 4);
	assert_memory_equal(h.stderr_data, "err\n", 4);
	assert_false(helper_next(&h));	/* nothing after X */
	assert_int_equal(helper_wait(&h), 0);
}

static void
test_signal(void **state)
{
	const char *argv[] = { "sh", "-c", "kill -TERM $$", NULL };
	struct helper h;

	helper_run(&h, NULL, NULL, argv, NULL, true);
	assert_int_equal(h.last.sig, SIGTERM);
	assert_int_equal(helper_wait(&h), 0);
}

static void
test_not_found(void **state)
{
	const char *argv[] = { "agent-lane-no-such-command", NULL };
	struct helper h;

	helper_run(&h, NULL, NULL, argv, NULL, true);
	assert_int_equal(h.last.code, 127);
	assert_non_null(strstr(h.stderr_data, "agent-lane-no-such-command"));
	assert_int_equal(helper_wait(&h), 0);
}

/* Stdin bytes arrive exactly, Z closes them, and every byte is acked. */
static void
test_stdin(void **state)
{
	const char *argv[] = { "cat", NULL };
	struct helper h;

	helper_run(&h, NULL, NULL, argv, "hello\0stdin", true);
	assert_int_equal(h.last.code, 0);
	assert_int_equal(h.stdout_len, 5);	/* helper_put_str: up to NUL */
	assert_memory_equal(h.stdout_data, "hello", 5);
	assert_int_equal(h.acked, 5);
	assert_int_equal(helper_wait(&h), 0);
}

/* Input the command never reads is still acknowledged once dropped. */
static void
test_stdin_dropped(void **state)
{
	const char *argv[] = { "sh", "-c", "exec 0<&-; sleep 0.3; echo done",
	    NULL };
	struct helper h;
	char big[65536];

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	helper_start(&h, -1);
	helper_put_str(&h, 'C', "");
	for (int i = 0; argv[i] != NULL; i++)
		helper_put_str(&h, 'A', argv[i]);
	helper_put(&h, 'R', NULL, 0);
	assert_true(helper_next(&h));
	assert_int_equal(h.last.type, GUEST_STARTED);
	usleep(100000);		/* the command has closed its stdin */
	helper_put_str(&h, 'I', big);
	helper_put(&h, 'Z', NULL, 0);
	assert_true(helper_next(&h));
	assert_int_equal(h.last.type, GUEST_EXIT);
	assert_int_equal(h.last.code, 0);
	assert_int_equal(h.acked, sizeof big - 1);
	assert_int_equal(helper_wait(&h), 0);
}

/* The environment comes only from E frames, values kept byte for byte. */
static void
test_env_and_cwd(void **state)
{
	const char *env[] = { "AL_A=a=b c", "AL_B=", NULL };
	const char *argv[] = { "sh", "-c",
	    "printf '%s|%s|%s|' \"$AL_A\" \"${AL_B-unset}\" \"$(pwd)\"", NULL };
	struct helper h;

	helper_run(&h, "/tmp", env, argv, NULL, true);
	assert_int_equal(h.last.code, 0);
	h.stdout_data[h.stdout_len] = '\0';
	assert_string_equal(h.stdout_data, "a=b c||/tmp|");
	assert_int_equal(helper_wait(&h), 0);
}

static void
test_bad_cwd(void **state)
{
	const char *argv[] = { "true", NULL };
	struct helper h;

	helper_run(&h, "/agent-lane/no/such/dir", NULL, argv, NULL, true);
	assert_int_equal(h.last.type, GUEST_FAILED);
	assert_string_equal(h.last.what, "cwd");
	assert_int_equal(h.last.err_no, ENOENT);
	assert_int_equal(helper_wait(&h), 0);
}

/* An unknown setup frame: the helper refuses (exit 2) and runs nothing. */
static void
test_bad_frame(void **state)
{
	struct helper h;
	int st;

	helper_start(&h, -1);
	helper_put_str(&h, 'Q', "x");
	assert_false(helper_next(&h));
	st = helper_wait(&h);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 2);
}

/*
 * The channel closing (the daemon or client gone) kills the command's
 * whole process group, background children included, even while the
 * command leaves its stdin unread with input pending. Every process of
 * the group holds the write end of a pipe; its read end sees EOF only
 * when all of them are dead.
 */
static void
test_channel_close_kills_group(void **state)
{
	const char *argv[] = { "sh", "-c",
	    "sleep 1000 & echo started; sleep 1001", NULL };
	static char chunk[60000];
	struct helper h;
	struct pollfd pfd;
	int alive[2], st;
	char c;

	memset(chunk, 'y', sizeof chunk - 1);
	chunk[sizeof chunk - 1] = '\0';
	assert_int_equal(pipe(alive), 0);
	assert_int_equal(fcntl(alive[0], F_SETFD, FD_CLOEXEC), 0);
	helper_start(&h, alive[1]);
	close(alive[1]);
	helper_put_str(&h, 'C', "");
	for (int i = 0; argv[i] != NULL; i++)
		helper_put_str(&h, 'A', argv[i]);
	helper_put(&h, 'R', NULL, 0);
	assert_true(helper_next(&h));
	assert_int_equal(h.last.type, GUEST_STARTED);
	while (h.stdout_len < 8)
		assert_true(helper_next_frame(&h, true));
	assert_memory_equal(h.stdout_data, "started\n", 8);
	/*
	 * 3 MB for a command that never reads its stdin: more than its pipe
	 * holds. The helper keeps reading (the daemon's window is what bounds
	 * it), so it can see its channel close.
	 */
	for (int i = 0; i < 50; i++)
		helper_put_str(&h, 'I', chunk);
	close(h.in);
	pfd.fd = alive[0];
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
	assert_int_equal(read(alive[0], &c, 1), 0);	/* all of them gone */
	close(alive[0]);
	close(h.out);
	assert_int_equal(waitpid(h.pid, &st, 0), h.pid);
	h.pid = 0;
	assert_true(WIFEXITED(st));
}

/*
 * T gives the command a terminal of that size, W resizes it, and Z types
 * ^D. The acknowledgements count the I bytes only: the ^D is the helper's
 * own, and acknowledging it would be more than the daemon sent (which it
 * treats as a broken helper).
 */
static void
test_tty(void **state)
{
	const char *argv[] = { "sh", "-c",
	    "stty size; read l; stty size; cat", NULL };
	const uint8_t size[4] = { 0, 24, 0, 80 }, resize[4] = { 0, 30, 0, 100 };
	struct helper h;
	char out[sizeof h.stdout_data + 1];

	helper_start(&h, -1);
	helper_put_str(&h, 'C', "");
	for (int i = 0; argv[i] != NULL; i++)
		helper_put_str(&h, 'A', argv[i]);
	helper_put(&h, 'T', size, sizeof size);
	helper_put(&h, 'R', NULL, 0);
	assert_true(helper_next(&h));
	if (h.last.type == GUEST_FAILED &&
	    strncmp(h.last_data, "tty", 3) == 0) {
		(void)helper_wait(&h);
		skip();		/* no pseudo-terminals here */
	}
	assert_int_equal(h.last.type, GUEST_STARTED);
	/* The first size is out before the resize. */
	do {
		assert_true(helper_next_frame(&h, true));
		memcpy(out, h.stdout_data, h.stdout_len);
		out[h.stdout_len] = '\0';
	} while (strstr(out, "24 80") == NULL);
	helper_put(&h, 'W', resize, sizeof resize);
	helper_put_str(&h, 'I', "x\nabc\n");
	helper_put(&h, 'Z', NULL, 0);
	assert_true(helper_next(&h));
	assert_int_equal(h.last.type, GUEST_EXIT);
	assert_int_equal(h.last.code, 0);
	memcpy(out, h.stdout_data, h.stdout_len);
	out[h.stdout_len] = '\0';
	assert_non_null(strstr(out, "24 80"));
	assert_non_null(strstr(out, "30 100"));
	assert_non_null(strstr(out, "abc"));
	assert_int_equal(h.acked, 6);
	assert_int_equal(helper_wait(&h), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_exit_code, teardown_helper),
		cmocka_unit_test_teardown(test_signal, teardown_helper),
		cmocka_unit_test_teardown(test_not_found, teardown_helper),
		cmocka_unit_test_teardown(test_stdin, teardown_helper),
		cmocka_unit_test_teardown(test_stdin_dropped, teardown_helper),
		cmocka_unit_test_teardown(test_env_and_cwd, teardown_helper),
		cmocka_unit_test_teardown(test_bad_cwd, teardown_helper),
		cmocka_unit_test_teardown(test_bad_frame, teardown_helper),
		cmocka_unit_test_teardown(test_channel_close_kills_group, teardown_helper),
		cmocka_unit_test_teardown(test_tty, teardown_helper),
	};

#if !defined(__linux__)
	printf("ok 1 # SKIP the guest helper targets Linux guests\n");
	return 0;
#endif
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
