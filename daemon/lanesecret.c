#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "hostrule.h"
#include "lanesecret.h"
#include "secmem.h"
#include "secret.h"
#include "util.h"

static const char hexdigits[] = "0123456789abcdef";

/* ---- Hosts ---- */

/* Appends one host pattern to s (normalised; a duplicate adds nothing). */
static int
hosts_add(struct lanesecret *s, const char *pattern, char *err, size_t errlen)
{
	char pat[HOSTRULE_PATTERN_MAX + 1], why[HOSTRULE_WHY_MAX];
	size_t pl, len = strlen(s->hosts);
	const char *p;

	if (!hostrule_check(pattern, HOSTRULE_SECRET, pat, why, sizeof why)) {
		snprintf(err, errlen, "secret %s: %s", s->name, why);
		return -1;
	}
	pl = strlen(pat);
	for (p = s->hosts; *p != '\0';) {
		size_t n = strcspn(p, "\n");

		if (n == pl && memcmp(p, pat, pl) == 0)
			return 0;
		p += n + (p[n] == '\n');
	}
	if (s->nhosts == LANESECRET_HOSTS_MAX ||
	    len + (len > 0) + pl + 1 > sizeof s->hosts) {
		snprintf(err, errlen, "secret %s: at most %d hosts (%d bytes)",
		    s->name, LANESECRET_HOSTS_MAX, LANESECRET_HOSTS_TEXT_MAX);
		return -1;
	}
	if (len > 0)
		s->hosts[len++] = '\n';
	memcpy(s->hosts + len, pat, pl + 1);
	s->nhosts++;
	return 0;
}

/* Hosts separated by any of sep (configuration and registry texts). */
static int
hosts_add_list(struct lanesecret *s, const char *list, const char *sep,
    char *err, size_t errlen)
{
	char buf[LANESECRET_TEXT_MAX + 1], *save = NULL, *tok;

	if (strlen(list) >= sizeof buf) {
		snprintf(err, errlen, "secret %s: the host list is too long",
		    s->name);
		return -1;
	}
	str_copy(buf, list, sizeof buf);
	for (tok = strtok_r(buf, sep, &save); tok != NULL;
	    tok = strtok_r(NULL, sep, &save))
		if (hosts_add(s, tok, err, errlen) == -1)
			return -1;
	return 0;
}

/* ---- Headers ---- */

/* Appends one header name to s, lower case (a duplicate adds nothing). */
static int
headers_add(struct lanesecret *s, const char *h, char *err, size_t errlen)
{
	char low[TEXT_SECRET_HEADER_MAX + 1];
	size_t n;

	if (!text_secret_header_valid(h)) {
		snprintf(err, errlen, "secret %s: header \"%.80s\" cannot "
		    "carry a credential: a header name is an HTTP token of 1-%d "
		    "characters, and not Host, Connection, Content-Length, "
		    "Transfer-Encoding, another framing or hop-by-hop header, "
		    "or Cookie", s->name, h, TEXT_SECRET_HEADER_MAX);
		str_sanitize(err);
		return -1;
	}
	n = strlen(h);
	for (size_t i = 0; i <= n; i++)
		low[i] = (char)tolower((unsigned char)h[i]);
	for (size_t i = 0; i < s->nheaders; i++)
		if (strcmp(s->headers[i], low) == 0)
			return 0;
	if (s->nheaders == LANESECRET_HEADERS_MAX) {
		snprintf(err, errlen, "secret %s: at most %d headers", s->name,
		    LANESECRET_HEADERS_MAX);
		return -1;
	}
	memcpy(s->headers[s->nheaders++], low, n + 1);
	return 0;
}

/*
 * The tokens of a configured or registry line after its name into s:
 * hosts (when hosts) and ':'-prefixed headers (when headers).
 */
static int
entry_add(struct lanesecret *s, const char *line, bool hosts, bool headers,
    char *err, size_t errlen)
{
	char buf[LANESECRET_TEXT_MAX + 1], *save = NULL, *tok;

	if (strlen(line) >= sizeof buf) {
		snprintf(err, errlen, "secret %s: the line is too long",
		    s->name);
		return -1;
	}
	str_copy(buf, line, sizeof buf);
	for (tok = strtok_r(buf, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save)) {
		if (tok[0] == ':') {
			if (headers && headers_add(s, tok + 1, err,
			    errlen) == -1)
				return -1;
		} else if (hosts && hosts_add(s, tok, err, errlen) == -1)
			return -1;
	}
	return 0;
}

/* ---- The configured secrets ---- */

/* The configured line of name (its length into *len), or NULL. */
static const char *
conf_line(const char *conf, const char *name, size_t *len)
{
	size_t nl = strlen(name);

	for (const char *p = conf; *p != '\0';) {
		size_t n = strcspn(p, "\n");

		if (n > nl && strncmp(p, name, nl) == 0 && p[nl] == ' ') {
			*len = n;
			return p;
		}
		p += n + (p[n] == '\n');
	}
	return NULL;
}

/* The configured line for name: what follows the name into buf. */
static bool
conf_hosts(const char *conf, const char *name, char *buf, size_t len)
{
	size_t n, nl = strlen(name);
	const char *p = conf_line(conf, name, &n);

	if (p == NULL)
		return false;
	snprintf(buf, len, "%.*s", (int)(n - nl - 1), p + nl + 1);
	return true;
}

int
lanesecret_config_add(char **conf, const char *spec, char *err, size_t errlen)
{
	struct lanesecret s;
	char name[TEXT_SECRET_NAME_MAX + 1], hosts[LANESECRET_TEXT_MAX];
	const char *list;
	size_t n = 0;
	char *next;

	memset(&s, 0, sizeof s);
	if (!text_secret_spec(spec, name, &list) || list == NULL) {
		snprintf(err, errlen, "secret: \"%.80s\" is not NAME@HOST[,HOST...]"
		    " (NAME: [A-Za-z_][A-Za-z0-9_], up to %d)", spec,
		    TEXT_SECRET_NAME_MAX);
		str_sanitize(err);
		return -1;
	}
	str_copy(s.name, name, sizeof s.name);
	if (hosts_add_list(&s, list, ",", err, errlen) == -1)
		return -1;
	if (conf_hosts(*conf, name, hosts, sizeof hosts)) {
		snprintf(err, errlen, "secret: %s is named twice", name);
		return -1;
	}
	for (const char *p = *conf; *p != '\0'; p++)
		if (p == *conf || p[-1] == '\n')
			n++;
	if (n == LANESECRET_MAX) {
		snprintf(err, errlen, "secret: at most %d", LANESECRET_MAX);
		return -1;
	}
	for (char *h = s.hosts; *h != '\0'; h++)
		if (*h == '\n')
			*h = ' ';
	xasprintf(&next, "%s%s%s %s", *conf, (*conf)[0] != '\0' ? "\n" : "",
	    name, s.hosts);
	if (strlen(next) > LANESECRET_TEXT_MAX) {
		free(next);
		snprintf(err, errlen, "secret: the lines are longer than %d "
		    "bytes together", LANESECRET_TEXT_MAX);
		return -1;
	}
	free(*conf);
	*conf = next;
	return 0;
}

/* The headers of spec's list (',' between) into s; how many in *n. */
static int
headers_add_list(struct lanesecret *s, const char *list, size_t *n,
    char *err, size_t errlen)
{
	char buf[LANESECRET_TEXT_MAX + 1], *save = NULL, *tok;

	*n = 0;
	if (strlen(list) >= sizeof buf) {
		snprintf(err, errlen, "secret %s: the header list is too long",
		    s->name);
		return -1;
	}
	str_copy(buf, list, sizeof buf);
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save), (*n)++)
		if (headers_add(s, tok, err, errlen) == -1)
			return -1;
	return 0;
}

int
lanesecret_config_header(char **conf, const char *spec, char *err,
    size_t errlen)
{
	struct lanesecret s;
	char name[TEXT_SECRET_NAME_MAX + 1], rest[LANESECRET_TEXT_MAX];
	char add[LANESECRET_HEADERS_MAX * (TEXT_SECRET_HEADER_MAX + 2) + 1];
	const char *list, *line;
	size_t len, had, n, off = 0;
	char *next;

	memset(&s, 0, sizeof s);
	if (!text_secret_header_spec(spec, name, &list)) {
		snprintf(err, errlen, "secret_header: \"%.80s\" is not "
		    "NAME=HEADER[,HEADER...]", spec);
		str_sanitize(err);
		return -1;
	}
	str_copy(s.name, name, sizeof s.name);
	if ((line = conf_line(*conf, name, &len)) == NULL ||
	    !conf_hosts(*conf, name, rest, sizeof rest)) {
		snprintf(err, errlen, "secret_header: %s has no `secret` line "
		    "before it", name);
		return -1;
	}
	if (entry_add(&s, rest, false, true, err, errlen) == -1)
		return -1;
	had = s.nheaders;
	if (headers_add_list(&s, list, &n, err, errlen) == -1)
		return -1;
	if (n == 0) {
		snprintf(err, errlen, "secret_header: %s names no header",
		    name);
		return -1;
	}
	add[0] = '\0';
	for (size_t i = had; i < s.nheaders; i++)
		off += (size_t)snprintf(add + off, sizeof add - off, " :%s",
		    s.headers[i]);
	xasprintf(&next, "%.*s%s%s", (int)(line - *conf + len), *conf, add,
	    line + len);
	if (strlen(next) > LANESECRET_TEXT_MAX) {
		free(next);
		snprintf(err, errlen, "secret: the lines are longer than %d "
		    "bytes together", LANESECRET_TEXT_MAX);
		return -1;
	}
	free(*conf);
	*conf = next;
	return 0;
}

/* ---- A create's secrets ---- */

/* One requested secret into s: name, hosts (or the configured), value. */
static int
plan_one(const char *conf, const Agentlane__V1__Secret *r,
    struct lanesecret *s, char *err, size_t errlen)
{
	char hosts[LANESECRET_TEXT_MAX];

	if (r->name == NULL || !text_secret_name_valid(r->name)) {
		snprintf(err, errlen, "a secret's name is [A-Za-z_][A-Za-z0-9_], "
		    "up to %d characters", TEXT_SECRET_NAME_MAX);
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	str_copy(s->name, r->name, sizeof s->name);
	if (!text_secret_value_valid(r->value.data, r->value.len)) {
		/* Never the value itself: only what is wrong with it. */
		snprintf(err, errlen, "secret %s: the value must be 1-%d bytes "
		    "of printable ASCII without a space at either end%s",
		    s->name, TEXT_SECRET_VALUE_MAX, r->value.len == 0 ?
		    " (it is empty: is the variable set?)" : "");
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	if (r->n_hosts > LANESECRET_HOSTS_MAX) {
		snprintf(err, errlen, "secret %s: at most %d hosts", s->name,
		    LANESECRET_HOSTS_MAX);
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	for (size_t i = 0; i < r->n_hosts; i++)
		if (hosts_add(s, r->hosts[i] != NULL ? r->hosts[i] : "", err,
		    errlen) == -1)
			return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	if (r->n_headers > LANESECRET_HEADERS_MAX) {
		snprintf(err, errlen, "secret %s: at most %d headers", s->name,
		    LANESECRET_HEADERS_MAX);
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	for (size_t i = 0; i < r->n_headers; i++)
		if (headers_add(s, r->headers[i] != NULL ? r->headers[i] : "",
		    err, errlen) == -1)
			return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	if (!conf_hosts(conf, s->name, hosts, sizeof hosts)) {
		if (r->n_hosts == 0) {
			snprintf(err, errlen, "secret %s names no host (NAME@HOST"
			    "[,HOST...]), and agent-laned.conf has no `secret` "
			    "line for it", s->name);
			return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
		}
	} else if (entry_add(s, hosts, r->n_hosts == 0, r->n_headers == 0,
	    err, errlen) == -1)
		/* Checked when the configuration was read. */
		return AGENTLANE__V1__ERROR_CODE__INTERNAL;
	s->value = secmem_alloc(r->value.len);
	memcpy(s->value, r->value.data, r->value.len);
	s->value_len = r->value.len;
	return 0;
}

/* Every configured name is among the set's: a create must bring them. */
static int
plan_configured(const char *conf, const struct lanesecret_set *set,
    char *err, size_t errlen)
{
	for (const char *p = conf; *p != '\0';) {
		size_t n = strcspn(p, " \n");
		char name[TEXT_SECRET_NAME_MAX + 1];

		snprintf(name, sizeof name, "%.*s", (int)n, p);
		if (lanesecret_find(set, name) == NULL) {
			snprintf(err, errlen, "agent-laned.conf names secret %s: "
			    "a create must bring its value (--secret %s)", name,
			    name);
			return AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION;
		}
		p += strcspn(p, "\n");
		p += *p == '\n';
	}
	return 0;
}

int
lanesecret_plan(const char *conf, Agentlane__V1__Secret *const *req,
    size_t nreq, struct lanesecret_set **out, char *err, size_t errlen)
{
	struct lanesecret_set *set;
	char text[LANESECRET_TEXT_MAX + 1];
	int rc = 0;

	*out = NULL;
	if (nreq > LANESECRET_MAX) {
		snprintf(err, errlen, "at most %d secrets", LANESECRET_MAX);
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	if (nreq == 0 && (conf == NULL || conf[0] == '\0'))
		return 0;
	set = xcalloc(1, sizeof *set);
	for (size_t i = 0; i < nreq && rc == 0; i++) {
		if ((rc = plan_one(conf, req[i], &set->s[i], err, errlen)) != 0)
			break;
		set->n++;
		if (lanesecret_find(set, set->s[i].name) != &set->s[i]) {
			snprintf(err, errlen, "secret %s is given twice",
			    set->s[i].name);
			rc = AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
		}
	}
	if (rc == 0)
		rc = plan_configured(conf != NULL ? conf : "", set, err,
		    errlen);
	if (rc == 0 && lanesecret_text(set, text, sizeof text) == -1) {
		snprintf(err, errlen, "the secrets' names, hosts and headers are "
		    "longer than %d bytes together", LANESECRET_TEXT_MAX);
		rc = AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	if (rc != 0) {
		lanesecret_set_free(set);
		return rc;
	}
	*out = set;
	return 0;
}

const struct lanesecret *
lanesecret_find(const struct lanesecret_set *set, const char *name)
{
	for (size_t i = 0; set != NULL && i < set->n; i++)
		if (strcmp(set->s[i].name, name) == 0)
			return &set->s[i];
	return NULL;
}

/* ---- Placeholders ---- */

int
lanesecret_placeholder_make(char *buf, size_t len)
{
	static const char prefix[] = LANESECRET_PH_PREFIX;
	unsigned char rnd[LANESECRET_PH_RANDOM];
	size_t o = sizeof prefix - 1;

	if (len < LANESECRET_PH_LEN + 1 || compat_random(rnd, sizeof rnd) == -1)
		return -1;
	memcpy(buf, prefix, o);
	for (size_t i = 0; i < sizeof rnd; i++) {
		buf[o++] = hexdigits[rnd[i] >> 4];
		buf[o++] = hexdigits[rnd[i] & 0xf];
	}
	buf[o] = '\0';
	return 0;
}

struct secret_set *
lanesecret_seal(struct lanesecret_set *set, char *err, size_t errlen)
{
	struct secret_set *sealed = secret_set_new(set->n);
	char ph[LANESECRET_PH_LEN + 1];

	for (size_t i = 0; i < set->n; i++) {
		const struct lanesecret *s = &set->s[i];
		char hosts[LANESECRET_HOSTS_TEXT_MAX + 1], *save = NULL;
		const char *hv[LANESECRET_HOSTS_MAX];
		const char *hdv[LANESECRET_HEADERS_MAX];
		size_t nh = 0;
		bool drawn = false;
		int rc = -1;

		str_copy(hosts, s->hosts, sizeof hosts);
		for (char *h = strtok_r(hosts, "\n", &save); h != NULL &&
		    nh < LANESECRET_HOSTS_MAX; h = strtok_r(NULL, "\n", &save))
			hv[nh++] = h;
		/*
		 * All of one length, so one can be part of another only by
		 * being equal, which 192 random bits make a formality; a
		 * repeat is drawn again (and the set would refuse it).
		 */
		while (!drawn) {
			if (lanesecret_placeholder_make(ph, sizeof ph) == -1)
				break;
			drawn = true;
			for (size_t j = 0; j < sealed->n; j++)
				drawn &= strcmp(sealed->v[j].placeholder, ph) != 0;
		}
		if (!drawn)
			snprintf(err, errlen, "cannot read the OS random source "
			    "for the secrets' placeholders");
		else
			rc = secret_set_add(sealed, s->name, ph, s->value,
			    s->value_len, hv, nh, err, errlen);
		for (size_t k = 0; k < s->nheaders; k++)
			hdv[k] = s->headers[k];
		if (rc == 0 && s->nheaders > 0)
			rc = secret_set_headers(sealed, sealed->n - 1, hdv,
			    s->nheaders, err, errlen);
		if (rc == -1) {
			secret_set_free(sealed);
			sealed = NULL;
			break;
		}
	}
	lanesecret_set_free(set);
	return sealed;
}

void
lanesecret_set_free(struct lanesecret_set *set)
{
	if (set == NULL)
		return;
	for (size_t i = 0; i < set->n; i++)
		secmem_free(set->s[i].value, set->s[i].value_len);
	wire_wipe(set, sizeof *set);
	free(set);
}

/* ---- The registry's text ---- */

int
lanesecret_text(const struct lanesecret_set *set, char *buf, size_t len)
{
	size_t off = 0;

	if (len == 0)
		return -1;
	buf[0] = '\0';
	for (size_t i = 0; set != NULL && i < set->n; i++) {
		const struct lanesecret *s = &set->s[i];
		int n = snprintf(buf + off, len - off, "%s%s %s", i > 0 ? "\n" :
		    "", s->name, s->hosts);

		if (n < 0 || (size_t)n >= len - off)
			return -1;
		/* The patterns are '\n'-separated in memory, ' ' here. */
		for (size_t k = off + (i > 0) + strlen(s->name) + 1;
		    k < off + (size_t)n; k++)
			if (buf[k] == '\n')
				buf[k] = ' ';
		off += (size_t)n;
		for (size_t k = 0; k < s->nheaders; k++) {
			n = snprintf(buf + off, len - off, " :%s",
			    s->headers[k]);
			if (n < 0 || (size_t)n >= len - off)
				return -1;
			off += (size_t)n;
		}
	}
	return (int)off;
}

size_t
lanesecret_text_split(char *text, struct lanesecret_info *v, size_t max)
{
	char *line = text, *save = NULL, *tok;
	size_t n = 0;

	while (line != NULL && *line != '\0' && n < max) {
		char *nl = strchr(line, '\n');

		if (nl != NULL)
			*nl = '\0';
		memset(&v[n], 0, sizeof v[n]);
		if ((tok = strtok_r(line, " ", &save)) != NULL) {
			v[n].name = tok;
			while ((tok = strtok_r(NULL, " ", &save)) != NULL) {
				if (tok[0] == ':' && tok[1] != '\0' &&
				    v[n].nheaders < LANESECRET_HEADERS_MAX)
					v[n].headers[v[n].nheaders++] = tok + 1;
				else if (tok[0] != ':' &&
				    v[n].nhosts < LANESECRET_HOSTS_MAX)
					v[n].hosts[v[n].nhosts++] = tok;
			}
			n++;
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	return n;
}

void
lanesecret_wipe_request(Agentlane__V1__CreateLane *req)
{
	for (size_t i = 0; i < req->n_secrets; i++)
		if (req->secrets[i] != NULL)
			wire_wipe(req->secrets[i]->value.data,
			    req->secrets[i]->value.len);
}
