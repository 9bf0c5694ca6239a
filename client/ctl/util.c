#include <stdarg.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "nearest.h"
#include "text.h"
#include "units.h"
#include "wire.h"

/*
 * --json: errors go to standard error as one JSON object a line, so that
 * a program reading our output can read our failures too. Set once the
 * command line says --json (main, ctl_parse).
 */
static bool json_errors;

void
ctl_json_errors(bool on)
{
	json_errors = on;
}

bool
ctl_default_socket(const char *sock)
{
	const char *home = getenv("HOME");
	char def[1024];

	if (home == NULL || home[0] != '/')
		return false;
	snprintf(def, sizeof def, "%s/" WIRE_DEFAULT_SOCKET_REL, home);
	return strcmp(sock, def) == 0;
}

void
ctl_state_dir_for(const char *sock, char *buf, size_t len)
{
	const char *env = getenv("AGENT_LANE_STATE_DIR");
	char dir[1024], *slash;

	if (env != NULL && env[0] == '/') {
		snprintf(buf, len, "%s", env);
		return;
	}
	snprintf(dir, sizeof dir, "%s", sock);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir)
		*slash = '\0';
	/* The default layout: STATE/run/agent-laned.sock. */
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir &&
	    strcmp(slash, "/run") == 0) {
		*slash = '\0';
		snprintf(buf, len, "%s", dir);
	} else
		snprintf(buf, len, "%s/state", dir);
}

/*
 * What agent-laned would need of the socket's directory: it must be a
 * 0700 directory of ours, and it makes only the last level. A command to
 * run first, or "" (none will do: *refused says why).
 */
static void
dir_note(const char *sock, char *buf, size_t len, char *refused,
    size_t rlen)
{
	char dir[1024], *slash;
	struct stat sb;

	buf[0] = refused[0] = '\0';
	snprintf(dir, sizeof dir, "%s", sock);
	if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
		return;
	*slash = '\0';
	if (stat(dir, &sb) == 0) {
		if (S_ISDIR(sb.st_mode) && (sb.st_uid != getuid() ||
		    (sb.st_mode & 077) != 0))
			snprintf(refused, rlen, " (it refuses %s: the socket's "
			    "directory must be yours and mode 0700)", dir);
		return;
	}
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (stat(dir, &sb) == -1) {
			*slash = '/';
			snprintf(buf, len, "(umask 077; mkdir -p %s) && ", dir);
		}
	}
}

/*
 * The hint for CONNECT, one line. The default socket: `daemon status`
 * knows whether the service is installed, so it says what to run. Another
 * socket: the daemon to run there, with a state directory of its own (the
 * default one is the default daemon's).
 */
#define ANOTHER "--socket PATH, or AGENT_LANE_SOCKET=PATH"

static void
hint_text(const struct ctl *ctl, char *buf, size_t len)
{
	const char *sock = al_client_socket(ctl->client);
	char first[1100], refused[1200], state[1024];

	if (ctl_default_socket(sock)) {
		snprintf(buf, len, "no daemon answers on %s: `agent-lanectl "
		    "daemon status` says how to start it; or point at another: "
		    ANOTHER, sock);
		return;
	}
	dir_note(sock, first, sizeof first, refused, sizeof refused);
	ctl_state_dir_for(sock, state, sizeof state);
	snprintf(buf, len, "no daemon answers on %s; run one in the foreground: "
	    "%sagent-laned --socket %s --state-dir %s%s; or point at another: "
	    ANOTHER, sock, first, sock, state, refused);
}

/* The hint goes with CONNECT errors only; the path itself is not wrong. */
static bool
has_hint(const struct ctl *ctl, const char *code)
{
	const char *sock;
	struct stat sb;

	if (ctl == NULL || ctl->client == NULL || strcmp(code, "CONNECT") != 0)
		return false;
	sock = al_client_socket(ctl->client);
	/* A directory or a file is not a daemon that is not running. */
	return stat(sock, &sb) == -1 || S_ISSOCK(sb.st_mode);
}

static void
json_field(const char *k, const char *v)
{
	if (v == NULL)
		return;
	fprintf(stderr, ",\"%s\":", k);
	ctl_json_string(stderr, v);
}

/*
 * The durations as typed (--timeout 48h), so that the daemon's over-cap
 * error can be said again in the unit given: "--timeout 48h is above the
 * cap of 24h (max_lifetime)", never in a unit the user did not use.
 */
static struct {
	const char *opt, *text;
} typed[4];

static void
remember_typed(const char *opt, const char *text)
{
	for (size_t i = 0; i < sizeof typed / sizeof *typed; i++)
		if (typed[i].opt == NULL || strcmp(typed[i].opt, opt) == 0) {
			typed[i].opt = opt;
			typed[i].text = text;
			return;
		}
}

static const char *
typed_text(const char *opt)
{
	for (size_t i = 0; i < sizeof typed / sizeof *typed; i++)
		if (typed[i].opt != NULL && strcmp(typed[i].opt, opt) == 0)
			return typed[i].text;
	return NULL;
}

/* ms in the last unit of text ("1h30m": m), exactly; else its own form. */
static void
in_unit_of(const char *text, uint64_t ms, char *buf, size_t len)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 },
	};
	size_t tl = strlen(text);

	for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
		size_t sl = strlen(units[i].suffix);

		if (tl > sl && strcmp(text + tl - sl, units[i].suffix) == 0 &&
		    (tl - sl == 0 || text[tl - sl - 1] < 'a') &&
		    ms % units[i].ms == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)
			    (ms / units[i].ms), units[i].suffix);
			return;
		}
	}
	units_format_duration(ms, buf, len);
}

/*
 * The daemon's "WHAT DUR is above the cap of DUR (KEY)" for a duration we
 * were given: said with the option and the value as typed, the cap in its
 * unit. false: not such a message, left as it is.
 */
static bool
over_cap_typed(const char *msg, char *out, size_t len)
{
	static const struct {
		const char *what, *opt;
	} whats[] = {
		{ "lifetime ", "--timeout" },
		{ "idle timeout ", "--idle-timeout" },
		{ "exec timeout ", "--timeout" },
	};
	const char *at, *key, *text = NULL;
	char cap[32], capu[32];
	uint64_t cap_ms;
	size_t i, n;

	for (i = 0; i < sizeof whats / sizeof *whats; i++)
		if (strncmp(msg, whats[i].what, strlen(whats[i].what)) == 0)
			break;
	if (i == sizeof whats / sizeof *whats ||
	    (text = typed_text(whats[i].opt)) == NULL ||
	    (at = strstr(msg, " is above the cap of ")) == NULL)
		return false;
	at += strlen(" is above the cap of ");
	if ((key = strchr(at, ' ')) == NULL || (n = (size_t)(key - at)) >=
	    sizeof cap)
		return false;
	memcpy(cap, at, n);
	cap[n] = '\0';
	if (units_parse_duration_ms(cap, UNITS_UNIT_REQUIRED, &cap_ms) != 0)
		return false;
	in_unit_of(text, cap_ms, capu, sizeof capu);
	snprintf(out, len, "%s %s is above the cap of %s%s", whats[i].opt, text,
	    capu, key);
	return true;
}

/* Our own codes say nothing the message does not: the text omits them. */
static bool
code_shown(const char *code)
{
	return strcmp(code, CTL_CODE_USAGE) != 0 &&
	    strcmp(code, CTL_CODE_FAILED) != 0 &&
	    strcmp(code, CTL_CODE_INTERRUPTED) != 0;
}

void
ctl_report(const struct ctl *ctl, const char *code, const char *what,
    const char *lane, const char *message, const char *hint_given)
{
	char hint[2560], said[1024];
	bool hinted = hint_given != NULL || has_hint(ctl, code);

	ctl_progress_abort();	/* the message starts a line of its own */
	if (strcmp(code, "RESOURCE_EXHAUSTED") == 0 &&
	    over_cap_typed(message, said, sizeof said))
		message = said;
	if (hint_given != NULL)
		snprintf(hint, sizeof hint, "%s", hint_given);
	else if (hinted)
		hint_text(ctl, hint, sizeof hint);
	if (json_errors) {
		fputs("{\"error\":{\"code\":", stderr);
		ctl_json_string(stderr, code);
		json_field("command", what);
		json_field("lane", lane);
		json_field("message", message);
		json_field("hint", hinted ? hint : NULL);
		fputs("}}\n", stderr);
		return;
	}
	fputs("agent-lanectl: ", stderr);
	if (what != NULL)
		fprintf(stderr, "%s: ", what);
	if (lane != NULL) {
		ctl_put_safe(stderr, lane);
		fputs(": ", stderr);
	}
	if (code_shown(code))
		fprintf(stderr, "%s: ", code);
	ctl_put_safe(stderr, message);
	fputc('\n', stderr);
	if (hinted)
		fprintf(stderr, "agent-lanectl: %s\n", hint);
}

int
ctl_exit_status(const struct al_error *err, int status)
{
	/* The daemon refusing an argument is a usage error, as ours are. */
	return err->code == AL_INVALID_ARGUMENT ? CTL_EXIT_USAGE : status;
}

int
ctl_fail(const struct ctl *ctl, const struct al_error *err, int status)
{
	if (!ctl_interrupted())
		ctl_report(ctl, al_code_name(err->code), NULL, NULL,
		    err->message, NULL);
	else
		ctl_progress_abort();
	return ctl_exit_status(err, status);
}

/*
 * Writes s by the daemon's rule (text_sanitize): a path the user typed or
 * a guest produced must not drive the terminal it is echoed to, whether by
 * an ESC, a C1 control (U+009B is CSI) or a raw 0x9b byte.
 */
void
ctl_put_safe(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t n;

	while (*p != '\0') {
		n = text_utf8_decode(p, 4, &cp);
		if (n == 0 || text_is_control(cp))
			fputc('?', f);
		else
			fwrite(p, 1, n, f);
		p += n == 0 ? 1 : n;
	}
}

void
ctl_hint(const struct ctl *ctl, const struct al_error *err)
{
	char hint[2560];

	if (ctl_interrupted() || json_errors ||
	    !has_hint(ctl, al_code_name(err->code)))
		return;
	hint_text(ctl, hint, sizeof hint);
	fprintf(stderr, "agent-lanectl: %s\n", hint);
}

static void __attribute__((format(printf, 2, 0)))
ctl_vwarn(const char *code, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof msg, fmt, ap);
	ctl_report(NULL, code, NULL, NULL, msg, NULL);
}

int
ctl_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ctl_vwarn(CTL_CODE_USAGE, fmt, ap);
	va_end(ap);
	return CTL_EXIT_USAGE;
}

void
ctl_errx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ctl_vwarn(CTL_CODE_FAILED, fmt, ap);
	va_end(ap);
}

/* The shared rule (proto/nearest.c), under the CLI's prefix. */
const char *
ctl_nearest(const char *word, const char *const *cands, size_t n)
{
	return nearest_word(word, cands, n);
}

/* A plain number where a unit is needed: say so, and what it could be. */
static int
no_unit(const char *opt, const char *v, const char *u1, const char *u2)
{
	return ctl_usage("%s %s: say its unit (%s%s or %s%s): a plain number is "
	    "taken only where the name says its unit", opt, v, v, u1, v, u2);
}

int
ctl_opt_duration(const char *opt, const char *v, uint64_t min_ms,
    uint64_t *ms)
{
	int rc = units_parse_duration_ms(v, UNITS_UNIT_REQUIRED, ms);

	remember_typed(opt, v);
	if (rc == UNITS_NO_UNIT)
		return no_unit(opt, v, "s", "m");
	if (rc != 0 || *ms < min_ms || *ms == 0)
		return ctl_usage("%s needs a duration of at least %s: 90s, 30m, "
		    "1h30m, 1.5h", opt, min_ms > 1 ? "1s" : "1ms");
	return 0;
}

/* A size with its unit from min to max in whole units: 0 or the status. */
static int
opt_size(const char *opt, const char *v, uint64_t min, uint64_t max,
    uint64_t unit, const char *forms, uint64_t *out)
{
	uint64_t n;
	int rc = units_parse_size_unit(v, UNITS_UNIT_REQUIRED, &n);

	if (rc == UNITS_NO_UNIT)
		return no_unit(opt, v, "G", unit == 1ull << 30 ? "GiB" : "M");
	if (rc != 0 || n < min || n > max || n % unit != 0)
		return ctl_usage("%s needs %s", opt, forms);
	*out = n / unit;
	return 0;
}

int
ctl_opt_memory(const char *opt, const char *v, uint32_t *mib)
{
	uint64_t n = 0;
	int rc;

	if ((rc = opt_size(opt, v, 256ull << 20, 4096ull << 30, 1ull << 20,
	    "a size from 256M to 4096G in whole MiB: 8G, 512M, 0.5G", &n)) == 0)
		*mib = (uint32_t)n;
	return rc;
}

int
ctl_opt_disk(const char *opt, const char *v, uint32_t *gib)
{
	uint64_t n = 0;
	int rc;

	if ((rc = opt_size(opt, v, 1ull << 30, 65536ull << 30, 1ull << 30,
	    "whole GiB from 1G to 65536G: 30G, 30GiB", &n)) == 0)
		*gib = (uint32_t)n;
	return rc;
}

bool
ctl_size(const char *s, uint64_t plain_unit, uint64_t *out)
{
	return units_parse_size_unit(s, plain_unit, out) == 0;
}

bool
ctl_utf8_text(const char *s)
{
	return text_utf8_printable(s);
}

void
ctl_json_names(FILE *f, char (*names)[AL_NAME_MAX], size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			fputc(',', f);
		ctl_json_string(f, names[i]);
	}
	fputc(']', f);
}

bool
ctl_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (units_parse_size(s, &v) == -1 || v > max)
		return false;
	*out = v;
	return true;
}

bool
ctl_lane_name(const char *s)
{
	if (strncmp(s, "al-", 3) != 0 || strlen(s) != 19)
		return false;
	for (size_t i = 3; i < 19; i++)
		if (strchr("0123456789abcdef", s[i]) == NULL)
			return false;
	return true;
}

void
ctl_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else if (*p < 0x80)
				fputc(*p, f);
			else {
				/*
				 * Whatever the daemon sent, the output stays
				 * JSON: a byte that is not well-formed UTF-8
				 * becomes U+FFFD.
				 */
				uint32_t cp;
				size_t n = text_utf8_decode(p, 4, &cp);

				/*
				 * Escaped, a C1 control or a bidi override
				 * cannot steer a terminal that shows the
				 * JSON; it means the same to a parser.
				 */
				if (n == 0)
					fputs("\\ufffd", f);
				else if (text_is_control(cp))
					fprintf(f, "\\u%04x", (unsigned)cp);
				else
					fwrite(p, 1, n, f);
				if (n > 0)
					p += n - 1;
			}
		}
	}
	fputc('"', f);
}

void
ctl_time(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || gmtime_r(&t, &tm) == NULL) {
		snprintf(buf, len, "-");
		return;
	}
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void
ctl_bytes(uint64_t n, char *buf, size_t len)
{
	units_format_bytes(n, buf, len);
}
