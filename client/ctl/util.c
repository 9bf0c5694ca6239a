#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "text.h"
#include "units.h"

int
ctl_fail(const struct ctl *ctl, const struct al_error *err, int status)
{
	ctl_progress_abort();	/* the message starts a line of its own */
	if (ctl_interrupted())
		return status;
	fprintf(stderr, "agent-lanectl: %s: %s\n", al_code_name(err->code),
	    err->message);
	ctl_hint(ctl, err);
	return status;
}

/*
 * Writes s with control characters as '?': a path the user typed or a
 * guest produced must not drive the terminal it is echoed to.
 */
void
ctl_put_safe(FILE *f, const char *s)
{
	for (; *s != '\0'; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

void
ctl_hint(const struct ctl *ctl, const struct al_error *err)
{
	if (err->code != AL_CONNECT || ctl_interrupted() || ctl->client == NULL)
		return;
	fprintf(stderr, "agent-lanectl: no daemon answers on %s. Either:\n"
	    "  start the service:        agent-lanectl daemon start "
	    "(once: agent-lanectl daemon install)\n"
	    "  run it in the foreground: agent-laned --socket %s\n"
	    "  or use another socket:    --socket PATH, or "
	    "AGENT_LANE_SOCKET=PATH\n", al_client_socket(ctl->client),
	    al_client_socket(ctl->client));
}

static void __attribute__((format(printf, 1, 0)))
ctl_vwarn(const char *fmt, va_list ap)
{
	ctl_progress_abort();
	fputs("agent-lanectl: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int
ctl_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ctl_vwarn(fmt, ap);
	va_end(ap);
	return CTL_EXIT_USAGE;
}

void
ctl_errx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ctl_vwarn(fmt, ap);
	va_end(ap);
}

bool
ctl_duration(const char *s, uint64_t *ms)
{
	return units_parse_duration_ms(s, UNITS_MS_PER_S, ms) == 0;
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
				size_t n = text_utf8_len(p);

				if (n == 0)
					fputs("\\ufffd", f);
				else {
					fwrite(p, 1, n, f);
					p += n - 1;
				}
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

/* The first n lines of a '\n'-separated text as a JSON array of strings. */
static void
json_lines(FILE *f, const char *p, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n && *p != '\0'; i++) {
		char line[AL_ALLOW_TEXT_MAX + 1];
		size_t len = strcspn(p, "\n");

		if (len >= sizeof line)
			len = sizeof line - 1;
		memcpy(line, p, len);
		line[len] = '\0';
		if (i > 0)
			fputc(',', f);
		ctl_json_string(f, line);
		p += strcspn(p, "\n");
		p += *p == '\n';
	}
	fputc(']', f);
}

/* ,"secrets":[{"name":..,"hosts":[..]},...] */
static void
secrets_json(FILE *f, const struct al_lane_secrets *sec)
{
	fputs(",\"secrets\":[", f);
	for (size_t i = 0; i < sec->n; i++) {
		fputs(i > 0 ? ",{\"name\":" : "{\"name\":", f);
		ctl_json_string(f, sec->v[i].name);
		fputs(",\"hosts\":", f);
		json_lines(f, sec->v[i].hosts, sec->v[i].nhosts);
		fputc('}', f);
	}
	fputc(']', f);
}

void
ctl_lane_json(FILE *f, const struct al_lane *l, const struct al_lane_net *net,
    const struct al_lane_secrets *sec)
{
	char t[32];

	fputs("{\"name\":", f);
	ctl_json_string(f, l->name);
	fputs(",\"state\":", f);
	ctl_json_string(f, al_state_name(l->state));
	fprintf(f, ",\"cpus\":%u,\"memory_mib\":%u,\"memory_gib\":%g,"
	    "\"disk_gib\":%u", l->cpus, l->memory_mib, l->memory_mib / 1024.0,
	    l->disk_gib);
	ctl_time(l->created_at_ms, t, sizeof t);
	fputs(",\"created_at\":", f);
	ctl_json_string(f, t);
	ctl_time(l->deadline_ms, t, sizeof t);
	fputs(",\"deadline\":", f);
	ctl_json_string(f, t);
	fprintf(f, ",\"created_at_ms\":%lld,\"deadline_ms\":%lld,"
	    "\"idle_timeout_s\":%llu,\"last_activity_ms\":%lld,"
	    "\"ended_at_ms\":%lld", (long long)l->created_at_ms,
	    (long long)l->deadline_ms, (unsigned long long)l->idle_timeout_s,
	    (long long)l->last_activity_ms, (long long)l->ended_at_ms);
	fputs(",\"workspace\":", f);
	ctl_json_string(f, l->workspace);
	fputs(",\"error\":", f);
	ctl_json_string(f, l->error);
	fputs(",\"alias\":", f);
	if (l->alias[0] != '\0')
		ctl_json_string(f, l->alias);
	else
		fputs("null", f);
	fprintf(f, ",\"owned\":%s", l->owned ? "true" : "false");
	fputs(",\"labels\":{", f);
	for (size_t i = 0; i < l->nlabels; i++) {
		if (i > 0)
			fputc(',', f);
		ctl_json_string(f, l->labels[i].key);
		fputc(':', f);
		ctl_json_string(f, l->labels[i].value);
	}
	fputc('}', f);
	if (net != NULL) {
		fputs(",\"network\":", f);
		ctl_json_string(f, net->network);
		fputs(",\"allow\":", f);
		json_lines(f, net->allow, net->nallow);
		fprintf(f, ",\"sudo\":%s,\"network_policy\":",
		    net->sudo ? "true" : "false");
		ctl_json_string(f, net->policy);
		fputs(",\"network_note\":", f);
		ctl_json_string(f, net->note);
		fprintf(f, ",\"proxy_port\":%u", (unsigned)net->proxy_port);
	}
	if (sec != NULL)
		secrets_json(f, sec);
	fputc('}', f);
}
