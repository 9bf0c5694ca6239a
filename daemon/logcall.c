#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "conn.h"
#include "lane.h"
#include "laned.h"
#include "lanelog.h"
#include "lima.h"
#include "log.h"
#include "logcall.h"
#include "names.h"
#include "registry.h"
#include "util.h"

/* How often a followed file is looked at again. */
#define LOGCALL_POLL_MS 250
/* The lane files, and the daemon's own log. */
#define LOGCALL_SOURCES 8

struct logsrc {
	const char *name;	/* shown to the client: the file's name */
	char path[PATH_MAX];
	int fd;			/* -1 until it exists */
	dev_t dev;
	ino_t ino;
	bool skip_line;		/* opened mid-file: drop the partial line */
	off_t pos;		/* the next byte to read */
	off_t end;		/* without follow: its size when opened */
	bool eof;		/* read to its end in this pass */
};

struct logcall {
	struct laned *d;
	struct conn *c;
	char lane[NAMES_LANE_LEN + 1];	/* empty: the daemon's log */
	bool follow;
	uint64_t cap;		/* bytes of each file's end at the start */
	size_t chunk;		/* data per frame */
	struct logsrc src[LOGCALL_SOURCES];
	size_t nsrc;
	struct event *timer;
	bool waiting;		/* for the client to drain its output */
};

static void
logcall_free(struct logcall *lc)
{
	for (size_t i = 0; i < lc->nsrc; i++)
		if (lc->src[i].fd != -1)
			close(lc->src[i].fd);
	if (lc->timer != NULL)
		event_free(lc->timer);
	free(lc);
}

static void
logcall_closed(struct conn *c, void *arg)
{
	logcall_free(arg);
}

static void logcall_pump(struct logcall *);

static void
logcall_drained(struct conn *c, void *arg)
{
	struct logcall *lc = arg;

	if (lc->waiting) {
		lc->waiting = false;
		logcall_pump(lc);
	}
}

static const struct conn_handler logcall_handler = {
	.drained = logcall_drained,
	.closed = logcall_closed,
};

/*
 * Opens a source that has appeared: at its last cap bytes the first time
 * (from_start later: a file that appears or replaces one while followed is
 * read whole). Not a regular file, or ours to read: skipped.
 */
static void
src_open(struct logcall *lc, struct logsrc *s, bool from_start)
{
	struct stat sb;
	off_t off;
	int fd;

	if ((fd = open(s->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return;
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return;
	}
	off = !from_start && (uint64_t)sb.st_size > lc->cap ?
	    sb.st_size - (off_t)lc->cap : 0;
	if (off > 0 && lseek(fd, off, SEEK_SET) == -1) {
		close(fd);
		return;
	}
	s->fd = fd;
	s->dev = sb.st_dev;
	s->ino = sb.st_ino;
	s->skip_line = off > 0;
	s->pos = off;
	/* A snapshot unless following: lines logged meanwhile (this call's
	 * own, with --debug) must not stretch it past the cap. */
	s->end = lc->follow ? -1 : sb.st_size;
}

/*
 * Between passes: files that appeared are opened; a file replaced under
 * its name (the daemon's log rotated, a restarted hostagent's) is read
 * from the start of the new one; a truncated one from its new start.
 */
static void
src_recheck(struct logcall *lc, struct logsrc *s)
{
	struct stat sb;
	off_t pos;

	if (s->fd == -1) {
		src_open(lc, s, true);
		return;
	}
	if (stat(s->path, &sb) == -1)
		return;		/* deleted: what is open stays readable */
	if (sb.st_dev != s->dev || sb.st_ino != s->ino) {
		close(s->fd);
		s->fd = -1;
		src_open(lc, s, true);
		return;
	}
	if ((pos = lseek(s->fd, 0, SEEK_CUR)) != -1 && sb.st_size < pos &&
	    lseek(s->fd, 0, SEEK_SET) == 0)
		s->pos = 0;
}

/* The last line end in p[0..len), or NULL (memrchr is not portable). */
static char *
last_newline(char *p, size_t len)
{
	while (len > 0)
		if (p[--len] == '\n')
			return p + len;
	return NULL;
}

static int
send_chunk(struct logcall *lc, const char *source, const char *data,
    size_t len, bool eof)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__LogChunk ch = AGENTLANE__V1__LOG_CHUNK__INIT;

	ch.source = (char *)source;
	ch.data.data = (uint8_t *)data;
	ch.data.len = len;
	ch.eof = eof;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_LOG_CHUNK;
	resp.log_chunk = &ch;
	return conn_send(lc->c, &resp);
}

static void
logcall_end(struct logcall *lc)
{
	struct conn *c = lc->c;

	conn_set_handler(c, NULL, NULL);
	(void)send_chunk(lc, "", NULL, 0, true);
	conn_finish(c);
	logcall_free(lc);
}

/*
 * Reads one frame's worth of s: 1 sent, 0 at its end, -1 the connection
 * is gone. A full read is cut after its last line end (the rest is read
 * again next time), so that frames end at lines where they can.
 */
static int
src_read(struct logcall *lc, struct logsrc *s)
{
	char buf[WIRE_CHUNK];
	char *p = buf, *nl;
	size_t len, want = lc->chunk;
	ssize_t n;

	if (s->end >= 0 && s->pos >= s->end)
		return 0;
	if (s->end >= 0 && (uint64_t)(s->end - s->pos) < want)
		want = (size_t)(s->end - s->pos);
	for (;;) {
		n = read(s->fd, buf, want);
		if (n == -1 && errno == EINTR)
			continue;
		break;
	}
	if (n == -1)
		log_warn("logs: %s", s->path);
	if (n <= 0)
		return 0;
	len = (size_t)n;
	s->pos += n;
	if (s->skip_line) {
		if ((nl = memchr(buf, '\n', len)) == NULL)
			return 1;	/* still in the cut line */
		s->skip_line = false;
		len -= (size_t)(nl + 1 - buf);
		p = nl + 1;
	}
	if ((size_t)n == lc->chunk && (nl = last_newline(p, len)) != NULL &&
	    nl + 1 < p + len) {
		size_t back = (size_t)(p + len - (nl + 1));

		if (lseek(s->fd, -(off_t)back, SEEK_CUR) != -1) {
			len -= back;
			s->pos -= (off_t)back;
		}
	}
	if (len == 0)
		return 1;
	return send_chunk(lc, s->name, p, len, false) == -1 ? -1 : 1;
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct logcall *lc = arg;

	for (size_t i = 0; i < lc->nsrc; i++)
		src_recheck(lc, &lc->src[i]);
	logcall_pump(lc);
}

/*
 * Sends what the files hold beyond what was sent, in file order, until
 * the client's output passes the high-water mark (then drained resumes).
 * At the end of every file: the stream ends, or with follow a timer looks
 * again; a followed lane that is no longer live ends it too.
 */
static void
logcall_pump(struct logcall *lc)
{
	struct timeval tv = tv_from_ms(LOGCALL_POLL_MS);
	bool more = true;

	while (more) {
		more = false;
		for (size_t i = 0; i < lc->nsrc; i++) {
			struct logsrc *s = &lc->src[i];
			int r;

			if (conn_output_len(lc->c) >= CONN_OUTPUT_HIGH) {
				lc->waiting = true;
				return;
			}
			if (s->fd == -1)
				continue;
			/* A file at a time: its lines stay together. */
			while ((r = src_read(lc, s)) == 1 &&
			    conn_output_len(lc->c) < CONN_OUTPUT_HIGH)
				more = true;
			if (r == -1)
				return;	/* closed: the handler frees us */
			if (r == 1) {
				lc->waiting = true;
				return;
			}
		}
	}
	if (!lc->follow ||
	    (lc->lane[0] != '\0' && lane_find(lc->d, lc->lane) == NULL)) {
		logcall_end(lc);
		return;
	}
	if (evtimer_add(lc->timer, &tv) != 0)
		fatalx("evtimer_add");
}

static void
add_source(struct logcall *lc, const char *dir, const char *name)
{
	struct logsrc *s = &lc->src[lc->nsrc++];

	s->name = name;
	s->fd = -1;
	snprintf(s->path, sizeof s->path, "%s/%s", dir, name);
}

void
logcall_handle(struct laned *d, struct conn *c,
    const Agentlane__V1__GetLogs *req)
{
	struct lane_record rec;
	struct logcall *lc;
	struct stat sb;
	char dir[PATH_MAX], lane[LANE_NAME_SIZE] = "";
	bool live, kept;
	uint64_t cap;
	size_t max_data;

	/* No lane: the daemon's own log. */
	if (req->lane != NULL && req->lane[0] != '\0' &&
	    !lane_resolve(d, c, req->lane, lane))
		return;
	if (lane[0] != '\0') {
		switch (registry_lane_get(d->reg, lane, &rec)) {
		case REG_OK:
			break;
		case REG_NOT_FOUND:
			conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
			    "no lane %s", lane);
			return;
		default:
			conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
			    "registry error reading lane %s", lane);
			return;
		}
		live = lane_find(d, lane) != NULL &&
		    lima_instance_dir(d->lima, lane, dir, sizeof dir);
		kept = !live && lanelog_kept_dir(d, lane, dir, sizeof dir) &&
		    lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
		if (!live && !kept) {
			conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
			    "lane %s has no logs: they went with its VM (only a "
			    "failed start keeps them, until rm)", lane);
			return;
		}
		cap = d->cfg.max_lane_log_bytes;
	} else {
		snprintf(dir, sizeof dir, "%s/log", d->cfg.state_dir);
		cap = d->cfg.max_log_bytes / 2;
	}
	if (req->max_bytes != 0 && req->max_bytes < cap)
		cap = req->max_bytes;

	lc = xcalloc(1, sizeof *lc);
	lc->d = d;
	lc->c = c;
	str_copy(lc->lane, lane, sizeof lc->lane);
	lc->follow = req->follow;
	lc->cap = cap;
	max_data = d->cfg.max_frame_bytes - WIRE_CHUNK_OVERHEAD - 64;
	lc->chunk = max_data < WIRE_CHUNK ? max_data : WIRE_CHUNK;
	if (lane[0] == '\0')
		add_source(lc, dir, "agent-laned.log");
	else
		for (size_t i = 0; lanelog_files[i] != NULL &&
		    lc->nsrc < LOGCALL_SOURCES; i++)
			add_source(lc, dir, lanelog_files[i]);
	for (size_t i = 0; i < lc->nsrc; i++)
		src_open(lc, &lc->src[i], false);
	if ((lc->timer = evtimer_new(d->base, timer_cb, lc)) == NULL)
		fatalx("evtimer_new");
	log_debug("logs: %s%s", lane[0] != '\0' ? lane : "the daemon's log",
	    lc->follow ? " (following)" : "");
	conn_set_handler(c, &logcall_handler, lc);
	logcall_pump(lc);
}
