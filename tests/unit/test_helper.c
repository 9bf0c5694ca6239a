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

/* ---- Channel mode: `perl -e PROGRAM mux` ---- */

#define MUX_EXECS 4

struct mux {
	pid_t pid;
	int in, out;
	uint8_t buf[GUEST_CHAN_HEADER + GUEST_CHAN_MAX_PAYLOAD + 65536];
	size_t len;
	struct guest_chan_parser parser;
	struct {
		uint8_t *data;	/* the exec's one-exec stream, as received */
		size_t len;
		bool ended;
	} x[MUX_EXECS];
};

static struct mux *current_mux;

static int
teardown_mux(void **state)
{
	if (current_mux != NULL) {
		if (current_mux->pid > 0 && kill(current_mux->pid, SIGKILL) == 0)
			(void)waitpid(current_mux->pid, NULL, 0);
		for (int i = 0; i < MUX_EXECS; i++)
			free(current_mux->x[i].data);
		free(current_mux);
		current_mux = NULL;
	}
	return 0;
}

static struct mux *
mux_start(int keep_fd)
{
	struct mux *m = calloc(1, sizeof *m);
	int in[2], out[2];

	assert_non_null(m);
	current_mux = m;
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	m->pid = fork();
	assert_true(m->pid != -1);
	if (m->pid == 0) {
		if (dup2(in[0], 0) == -1 || dup2(out[1], 1) == -1)
			_exit(120);
		for (int fd = 3; fd < 64; fd++)
			if (fd != keep_fd)
				(void)close(fd);
		execlp("perl", "perl", "-e", guest_helper_source, "mux",
		    (char *)NULL);
		_exit(121);
	}
	close(in[0]);
	close(out[1]);
	m->in = in[1];
	m->out = out[0];
	assert_int_equal(fcntl(m->in, F_SETFD, FD_CLOEXEC), 0);
	assert_int_equal(fcntl(m->in, F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(fcntl(m->out, F_SETFD, FD_CLOEXEC), 0);
	guest_chan_parser_init(&m->parser);
	return m;
}

static bool mux_read(struct mux *, int, bool *);

/*
 * Like agent-laned, reads the channel while it writes: the channel helper
 * writes its output blocking, so a writer that does not read would wait on
 * it forever.
 */
static void
mux_write_all(struct mux *m, const void *data, size_t len)
{
	const uint8_t *p = data;
	struct pollfd pfd[2] = { { .fd = m->in, .events = POLLOUT },
	    { .fd = m->out, .events = POLLIN } };
	bool eof;
	ssize_t n;

	while (len > 0) {
		n = write(m->in, p, len);
		if (n == -1 && errno == EAGAIN) {
			assert_true(poll(pfd, 2, WAIT_MS) > 0);
			if (pfd[1].revents != 0)
				(void)mux_read(m, 0, &eof);
			continue;
		}
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

static void
mux_put(struct mux *m, char type, uint32_t id, const void *data, size_t len)
{
	uint8_t hdr[GUEST_CHAN_HEADER];

	guest_chan_header(hdr, type, id, (uint32_t)len);
	mux_write_all(m, hdr, sizeof hdr);
	if (len > 0)
		mux_write_all(m, data, len);
}

static void
mux_put_u32(struct mux *m, char type, uint32_t id, uint32_t v)
{
	uint8_t b[4] = { v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff,
	    v & 0xff };

	mux_put(m, type, id, b, sizeof b);
}

/* One one-exec frame, inside an M frame of exec id. */
static void
mux_put_inner(struct mux *m, uint32_t id, char type, const void *data,
    size_t len)
{
	uint8_t *b = malloc(GUEST_HEADER + len);

	assert_non_null(b);
	guest_header(b, type, (uint32_t)len);
	if (len > 0)
		memcpy(b + GUEST_HEADER, data, len);
	mux_put(m, GUEST_CHAN_DATA, id, b, GUEST_HEADER + len);
	free(b);
}

static void
mux_run(struct mux *m, uint32_t id, uint32_t window, const char *const *argv)
{
	mux_put_u32(m, GUEST_CHAN_NEW, id, window);
	mux_put_inner(m, id, 'C', NULL, 0);
	for (; *argv != NULL; argv++)
		mux_put_inner(m, id, 'A', *argv, strlen(*argv));
	mux_put_inner(m, id, 'R', NULL, 0);
}

/*
 * Reads the channel for up to ms; what each exec sent goes to its stream.
 * False if nothing came in that time; -1 through *eof at the end.
 */
static bool
mux_read(struct mux *m, int ms, bool *eof)
{
	struct pollfd pfd = { .fd = m->out, .events = POLLIN };
	struct guest_chan_frame f;
	enum guest_rc rc;
	size_t used;
	ssize_t n;

	*eof = false;
	if (poll(&pfd, 1, ms) != 1)
		return false;
	n = read(m->out, m->buf + m->len, sizeof m->buf - m->len);
	assert_true(n >= 0);
	if (n == 0) {
		*eof = true;
		return false;
	}
	m->len += (size_t)n;
	for (;;) {
		rc = guest_chan_parse(&m->parser, m->buf, m->len, &f, &used);
		assert_int_not_equal(rc, GUEST_ERROR);
		if (rc == GUEST_FRAME && m->len - used < f.len) {
			used -= GUEST_CHAN_HEADER;
			rc = GUEST_NEED_MORE;
		}
		if (rc == GUEST_FRAME) {
			assert_true(f.id > 0 && f.id < MUX_EXECS);
			assert_false(m->x[f.id].ended);
			if (f.type == GUEST_CHAN_END)
				m->x[f.id].ended = true;
			else {
				m->x[f.id].data = realloc(m->x[f.id].data,
				    m->x[f.id].len + f.len);
				assert_non_null(m->x[f.id].data);
				memcpy(m->x[f.id].data + m->x[f.id].len,
				    m->buf + used, f.len);
				m->x[f.id].len += f.len;
			}
			used += f.len;
		}
		memmove(m->buf, m->buf + used, m->len - used);
		m->len -= used;
		if (rc != GUEST_FRAME)
			return true;
	}
}

/* Reads until exec id's stream ended. */
static void
mux_wait_end(struct mux *m, uint32_t id)
{
	bool eof;

	while (!m->x[id].ended) {
		assert_true(mux_read(m, WAIT_MS, &eof));
		assert_false(eof);
	}
}

/*
 * An exec's stream (so far) through the one-exec parser: its stdout, and
 * its exit code once there (-2 until then).
 */
static void
mux_stream(struct mux *m, uint32_t id, uint8_t **out, size_t *outlen,
    int *code)
{
	struct guest_parser p;
	struct guest_frame f;
	size_t off = 0, used;

	guest_parser_init(&p);
	*out = NULL;
	*outlen = 0;
	*code = -2;
	while (off < m->x[id].len) {
		enum guest_rc rc = guest_parse(&p, m->x[id].data + off,
		    m->x[id].len - off, &f, &used);

		assert_int_not_equal(rc, GUEST_ERROR);
		if (rc == GUEST_NEED_MORE && used == 0)
			break;		/* the rest has yet to come */
		if (rc == GUEST_NEED_MORE) {
			off += used;
			continue;
		}
		if (f.type == GUEST_STDOUT) {
			*out = realloc(*out, *outlen + f.len + 1);
			assert_non_null(*out);
			memcpy(*out + *outlen, f.data, f.len);
			*outlen += f.len;
		} else if (f.type == GUEST_EXIT)
			*code = f.code;
		off += used;
	}
}

/*
 * Two execs at once on one channel, their input interleaved frame by
 * frame: each gets exactly its own bytes back, and its own exit code.
 */
static void
test_mux_execs_apart(void **state)
{
	const char *a1[] = { "sh", "-c", "cat; exit 3", NULL };
	const char *a2[] = { "sh", "-c", "cat; exit 4", NULL };
	static uint8_t in1[300000], in2[300000];
	struct mux *m = mux_start(-1);
	uint8_t *out;
	size_t outlen;
	int code;
	bool eof;

	for (size_t i = 0; i < sizeof in1; i++) {
		in1[i] = (uint8_t)(i * 7 + 1);
		in2[i] = (uint8_t)(i * 13 + 5);
	}
	mux_run(m, 1, 1u << 20, a1);
	mux_run(m, 2, 1u << 20, a2);
	for (size_t off = 0; off < sizeof in1; off += 30000) {
		mux_put_inner(m, 1, 'I', in1 + off, 30000);
		mux_put_inner(m, 2, 'I', in2 + off, 30000);
		while (mux_read(m, 0, &eof))
			;
	}
	mux_put_inner(m, 1, 'Z', NULL, 0);
	mux_put_inner(m, 2, 'Z', NULL, 0);
	mux_wait_end(m, 1);
	mux_wait_end(m, 2);
	mux_stream(m, 1, &out, &outlen, &code);
	assert_int_equal(code, 3);
	assert_int_equal(outlen, sizeof in1);
	assert_memory_equal(out, in1, sizeof in1);
	free(out);
	mux_stream(m, 2, &out, &outlen, &code);
	assert_int_equal(code, 4);
	assert_int_equal(outlen, sizeof in2);
	assert_memory_equal(out, in2, sizeof in2);
	free(out);
	/* The end of the channel's input ends the channel helper. */
	close(m->in);
	while (mux_read(m, WAIT_MS, &eof) || !eof)
		;
	assert_int_equal(waitpid(m->pid, &code, 0), m->pid);
	m->pid = 0;
	assert_true(WIFEXITED(code) && WEXITSTATUS(code) == 0);
}

/* An exec sends no more than its window until agent-laned grants more. */
static void
test_mux_window(void **state)
{
	const char *argv[] = { "head", "-c", "300000", "/dev/zero", NULL };
	struct mux *m = mux_start(-1);
	uint8_t *out;
	size_t outlen;
	int code;
	bool eof;

	mux_run(m, 1, 100000, argv);
	mux_put_inner(m, 1, 'Z', NULL, 0);
	while (mux_read(m, 500, &eof))
		;
	assert_false(eof);
	assert_int_equal(m->x[1].len, 100000);
	assert_false(m->x[1].ended);
	mux_put_u32(m, GUEST_CHAN_GRANT, 1, 1000);
	while (mux_read(m, 500, &eof))
		;
	assert_int_equal(m->x[1].len, 101000);
	mux_put_u32(m, GUEST_CHAN_GRANT, 1, 1u << 20);
	mux_wait_end(m, 1);
	mux_stream(m, 1, &out, &outlen, &code);
	assert_int_equal(code, 0);
	assert_int_equal(outlen, 300000);
	free(out);
}

/* Gone, or a zombie nobody reaped yet: either way no longer running. */
static bool
proc_dead(long pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return true;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (p = strrchr(buf, ')')) == NULL || p[1] == '\0' ||
	    p[2] == 'Z' || p[2] == 'X';
}

/*
 * Q from agent-laned ends one exec (its whole process group goes), and
 * the channel goes on for the others.
 */
static void
test_mux_end_kills_group(void **state)
{
	const char *a1[] = { "sh", "-c",
	    "sleep 1000 & echo started $! $$; sleep 1001", NULL };
	const char *a2[] = { "echo", "after", NULL };
	struct mux *m = mux_start(-1);
	uint8_t *out;
	size_t outlen;
	long bg = 0, sh = 0;
	int code, waited;
	bool eof;

	mux_run(m, 1, 1u << 20, a1);
	for (;;) {
		mux_stream(m, 1, &out, &outlen, &code);
		if (outlen > 0 && out[outlen - 1] == '\n') {
			out[outlen] = '\0';
			assert_int_equal(sscanf((char *)out, "started %ld %ld",
			    &bg, &sh), 2);
			free(out);
			break;
		}
		free(out);
		assert_true(mux_read(m, WAIT_MS, &eof));
	}
	assert_false(proc_dead(bg));
	assert_false(proc_dead(sh));
	mux_put(m, GUEST_CHAN_END, 1, NULL, 0);
	for (waited = 0; waited < WAIT_MS; waited += 10) {
		if (proc_dead(bg) && proc_dead(sh))
			break;
		usleep(10000);
	}
	assert_true(proc_dead(bg) && proc_dead(sh));
	mux_run(m, 2, 1u << 20, a2);
	mux_put_inner(m, 2, 'Z', NULL, 0);
	mux_wait_end(m, 2);
	mux_stream(m, 2, &out, &outlen, &code);
	assert_int_equal(code, 0);
	assert_int_equal(outlen, 6);
	assert_memory_equal(out, "after\n", 6);
	free(out);
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
		cmocka_unit_test_teardown(test_mux_execs_apart, teardown_mux),
		cmocka_unit_test_teardown(test_mux_window, teardown_mux),
		cmocka_unit_test_teardown(test_mux_end_kills_group, teardown_mux),
	};

#if !defined(__linux__)
	printf("ok 1 # SKIP the guest helper targets Linux guests\n");
	return 0;
#endif
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
