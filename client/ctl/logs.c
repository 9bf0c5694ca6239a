/*
 * agent-lanectl logs [LANE] [-f]: the daemon's log, or a lane's Lima logs,
 * as the daemon streams them (the socket may be forwarded from another
 * host, and a failed lane's kept logs are in the daemon's state directory).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "text.h"

/* --json: one object a line; a longer line is cut into pieces this long. */
#define LOGS_JSON_LINE_MAX 65536

struct logs_out {
	bool json;		/* JSON lines: {"source": ..., "line": ...} */
	char line[LOGS_JSON_LINE_MAX + 1];	/* json: the line so far */
	size_t len;
	bool headers;		/* a lane's: "==> FILE <==" before each file */
	bool safe;		/* a terminal: the daemon's text rule */
	struct text_stream ts;	/* safe: a sequence cut between chunks */
	char source[64];	/* the file last written */
	bool line_open;		/* its last byte was not a line end */
	bool reader_gone;	/* a write met EPIPE: `logs | head` */
};

static bool
put_out(const void *p, size_t len, void *arg)
{
	return fwrite(p, 1, len, arg) == len;
}

/*
 * A guest writes the boot console: on a terminal its bytes must not drive
 * it. The daemon's rule (text_sanitize): well-formed UTF-8 stays, each
 * invalid byte (a raw 0x9b, which 8-bit terminals take as CSI) and each
 * control character (C0, DEL, C1 such as U+009B CSI and U+009D OSC, bidi
 * overrides) becomes '?'; line ends and tabs stay, carriage returns go.
 */
static bool
put_safe(struct logs_out *o, const void *p, size_t len)
{
	o->ts.lines = true;
	return text_stream_put(&o->ts, p, len, put_out, stdout);
}

/* --json: the line collected so far, as one object. */
static bool
json_flush(struct logs_out *o)
{
	if (o->len == 0)
		return true;
	o->line[o->len] = '\0';
	fputs("{\"source\":", stdout);
	ctl_json_string(stdout, o->source);
	fputs(",\"line\":", stdout);
	ctl_json_string(stdout, o->line);
	fputs("}\n", stdout);
	o->len = 0;
	return fflush(stdout) != EOF;
}

static bool
json_chunk(struct logs_out *o, const char *source, const unsigned char *p,
    size_t len)
{
	if (strcmp(source, o->source) != 0) {
		if (!json_flush(o))
			return false;
		snprintf(o->source, sizeof o->source, "%s", source);
	}
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\n') {
			/* An empty line is a line too. */
			if (o->len == 0)
				o->line[o->len++] = '\0';
			if (!json_flush(o))
				return false;
			continue;
		}
		/* A NUL would end the string early: shown as '?'. */
		o->line[o->len++] = p[i] != '\0' ? (char)p[i] : '?';
		if (o->len == LOGS_JSON_LINE_MAX && !json_flush(o))
			return false;
	}
	return true;
}

static bool
chunk_put(struct logs_out *o, const char *source, const void *data,
    size_t len)
{
	if (o->json)
		return json_chunk(o, source, data, len);

	if (o->headers && strcmp(source, o->source) != 0) {
		/* A sequence the last file ended in is not the next one's. */
		if (o->safe && !text_stream_end(&o->ts, put_out, stdout))
			return false;
		/* tail(1)'s look: a blank line between files. */
		printf("%s==> ", o->source[0] != '\0' ?
		    (o->line_open ? "\n\n" : "\n") : "");
		ctl_put_safe(stdout, source);
		printf(" <==\n");
		snprintf(o->source, sizeof o->source, "%s", source);
	}
	if (o->safe ? !put_safe(o, data, len) :
	    fwrite(data, 1, len, stdout) != len)
		return false;
	o->line_open = ((const char *)data)[len - 1] != '\n';
	return fflush(stdout) != EOF;
}

static bool
chunk_cb(const char *source, const void *data, size_t len, void *arg)
{
	struct logs_out *o = arg;

	errno = 0;
	if (chunk_put(o, source, data, len))
		return true;
	o->reader_gone = errno == EPIPE;
	return false;
}

int
cmd_logs(struct ctl *ctl, int argc, char **argv)
{
	struct al_logs_opts lo = AL_LOGS_OPTS_INIT;
	static struct logs_out out;	/* 64 KiB: not on the stack */
	struct ctl_parsed p;
	struct al_lane lane;
	struct al_error err;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	out.json = ctl->json;
	out.safe = !out.json && isatty(STDOUT_FILENO);
	if (p.noperands > 1)
		return ctl_usage("logs: at most one lane (see agent-lanectl "
		    "help logs)");
	for (size_t i = 0; i < p.nopts; i++)
		if (ctl_is(&p.opts[i], "follow"))
			lo.follow = true;
	if (p.noperands == 1) {
		/* The daemon's lookup: whatever names a lane elsewhere. */
		if (al_get(ctl->client, p.operands[0], &lane, &err) != AL_OK)
			return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
		lo.lane = lane.name;
		out.headers = true;
	}
	lo.chunk = chunk_cb;
	lo.arg = &out;
	rc = al_logs(ctl->client, &lo, &err) == AL_OK ? 0 : -1;
	/* What the last file had after its last line end. */
	if (out.json)
		(void)json_flush(&out);
	else if (out.safe)
		(void)text_stream_end(&out.ts, put_out, stdout);
	if (!out.json && out.line_open && !ctl_interrupted())
		putchar('\n');
	/* Our reader went away (`| head`): end quietly, as exec does. */
	if (rc == -1 && out.reader_gone && !ctl_interrupted())
		return 128 + SIGPIPE;
	if (rc == -1) {
		/* Where to read it meanwhile; --json keeps stderr one object. */
		if (err.code == AL_CONNECT && lo.lane == NULL &&
		    !ctl_interrupted() && !ctl->json)
			fprintf(stderr, "agent-lanectl: the daemon's log is "
			    "STATE_DIR/log/agent-laned.log (default "
			    "~/.agent-lane/log/agent-laned.log); under systemd "
			    "also `journalctl --user -u agent-laned`\n");
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	}
	return 0;
}
