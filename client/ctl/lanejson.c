/*
 * A lane as JSON: one renderer for every command that prints a lane
 * (create, show, ls and extend --json) and one list of its keys, LANE_KEYS.
 * tests/regress/lane-schema.sh checks every command's keys against each
 * other, against the man page (agent-lanectl(1), "Lanes in JSON") and
 * against the provider's Lane type (client/sandcastle/src/client.ts).
 * Adding a key is one line in LANE_KEYS (and its entry in those two).
 */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

/*
 * Each key: its name, how it is written (a put_* below) and the value, an
 * expression of the lane l, its network policy n and its secrets s (names,
 * hosts and headers). In output order.
 */
#define LANE_KEYS(K) \
	K("name", str, l->name) \
	K("state", str, al_state_name(l->state)) \
	K("cpus", uint, l->cpus) \
	K("memory_mib", uint, l->memory_mib) \
	K("memory_gib", gib, l->memory_mib) \
	K("disk_gib", uint, l->disk_gib) \
	K("created_at", time, l->created_at_ms) \
	K("deadline", time, l->deadline_ms) \
	K("created_at_ms", int, l->created_at_ms) \
	K("deadline_ms", int, l->deadline_ms) \
	K("idle_timeout_s", uint, l->idle_timeout_s) \
	K("last_activity_ms", int, l->last_activity_ms) \
	K("ended_at_ms", int, l->ended_at_ms) \
	K("workspace", str, l->workspace) \
	K("error", str, l->error) \
	K("alias", str_or_null, l->alias) \
	K("owned", bool, l->owned) \
	K("labels", labels, l) \
	K("network", str, n->network) \
	K("allow", allow, n) \
	K("sudo", bool, n->sudo) \
	K("network_policy", str, n->policy) \
	K("network_note", str, n->note) \
	K("proxy_port", uint, n->proxy_port) \
	K("secrets", secrets, s)

/* The separator and the key; every put_* starts with it. */
static void
key(FILE *f, bool *first, const char *k)
{
	fputc(*first ? '{' : ',', f);
	*first = false;
	ctl_json_string(f, k);
	fputc(':', f);
}

static void
put_str(FILE *f, bool *first, const char *k, const char *v)
{
	key(f, first, k);
	ctl_json_string(f, v);
}

static void
put_str_or_null(FILE *f, bool *first, const char *k, const char *v)
{
	key(f, first, k);
	if (v[0] != '\0')
		ctl_json_string(f, v);
	else
		fputs("null", f);
}

static void
put_uint(FILE *f, bool *first, const char *k, uint64_t v)
{
	key(f, first, k);
	fprintf(f, "%llu", (unsigned long long)v);
}

static void
put_int(FILE *f, bool *first, const char *k, int64_t v)
{
	key(f, first, k);
	fprintf(f, "%lld", (long long)v);
}

static void
put_bool(FILE *f, bool *first, const char *k, bool v)
{
	key(f, first, k);
	fputs(v ? "true" : "false", f);
}

/* Memory in GiB, as a number: 0.5, 4. */
static void
put_gib(FILE *f, bool *first, const char *k, uint32_t mib)
{
	key(f, first, k);
	fprintf(f, "%g", mib / 1024.0);
}

/* RFC 3339 UTC, "-" for none (ctl_time). */
static void
put_time(FILE *f, bool *first, const char *k, int64_t ms)
{
	char t[32];

	ctl_time(ms, t, sizeof t);
	put_str(f, first, k, t);
}

static void
put_labels(FILE *f, bool *first, const char *k, const struct al_lane *l)
{
	key(f, first, k);
	fputc('{', f);
	for (size_t i = 0; i < l->nlabels; i++) {
		if (i > 0)
			fputc(',', f);
		ctl_json_string(f, l->labels[i].key);
		fputc(':', f);
		ctl_json_string(f, l->labels[i].value);
	}
	fputc('}', f);
}

/* The first n lines of a '\n'-separated text, as a JSON array. */
static void
put_lines(FILE *f, const char *p, size_t n)
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

/* The allow patterns, '\n'-separated in the library's struct. */
static void
put_allow(FILE *f, bool *first, const char *k, const struct al_lane_net *n)
{
	key(f, first, k);
	put_lines(f, n->allow, n->nallow);
}

/*
 * [{"name": NAME, "hosts": [HOST...], "headers": [HEADER...]}...]: never
 * a value. headers: the secret's own, besides the default credential
 * headers, which are implied.
 */
static void
put_secrets(FILE *f, bool *first, const char *k,
    const struct al_lane_secrets *s)
{
	key(f, first, k);
	fputc('[', f);
	for (size_t i = 0; s != NULL && i < s->n; i++) {
		const char *hdrs;
		size_t nh = 0;

		fputs(i > 0 ? ",{\"name\":" : "{\"name\":", f);
		ctl_json_string(f, s->v[i].name);
		fputs(",\"hosts\":", f);
		put_lines(f, s->v[i].hosts, s->v[i].nhosts);
		fputs(",\"headers\":", f);
		hdrs = al_lane_secret_headers(s, i, &nh);
		put_lines(f, hdrs != NULL ? hdrs : "", hdrs != NULL ? nh : 0);
		fputc('}', f);
	}
	fputc(']', f);
}

void
ctl_lane_json(FILE *f, const struct al_lane *l, const struct al_lane_net *n,
    const struct al_lane_secrets *s)
{
	bool first = true;

#define PUT(k, kind, v) put_##kind(f, &first, k, v);
	LANE_KEYS(PUT)
#undef PUT
	fputc('}', f);
}
