/*
 * A lane's secret set (see secret.h): checked on the way in, so that the
 * proxy can put a value into a header as it is and find a placeholder with
 * no ambiguity about which secret it names.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hostrule.h"
#include "proxyreq.h"
#include "secmem.h"
#include "secret.h"
#include "util.h"
#include "wire.h"

struct secret_set *
secret_set_new(size_t cap)
{
	struct secret_set *set;

	if (cap > SECRET_MAX)
		cap = SECRET_MAX;
	set = xcalloc(1, sizeof(*set));
	set->cap = cap;
	set->v = xcalloc(cap > 0 ? cap : 1, sizeof(*set->v));
	return set;
}

static bool
env_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SECRET_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' &&
		    s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

static bool
placeholder_valid(const char *s, size_t n)
{
	if (n < SECRET_PLACEHOLDER_MIN || n > SECRET_PLACEHOLDER_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' &&
		    s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* A value goes into a header as it is: nothing that ends or splits one. */
static bool
value_valid(const uint8_t *v, size_t n)
{
	if (n == 0 || n > SECRET_VALUE_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((v[i] < 0x20 && v[i] != '\t') || v[i] == 0x7f)
			return false;
	return true;
}

static int
check_new(const struct secret_set *set, const char *name, const char *ph,
    size_t phlen, char *err, size_t errlen)
{
	if (set->n >= set->cap) {
		snprintf(err, errlen, "a lane holds at most %zu secrets",
		    set->cap);
		return -1;
	}
	if (!env_name_valid(name)) {
		snprintf(err, errlen, "secret name is not an environment "
		    "variable name");
		return -1;
	}
	if (!placeholder_valid(ph, phlen)) {
		snprintf(err, errlen, "secret %s: bad placeholder", name);
		return -1;
	}
	for (size_t i = 0; i < set->n; i++) {
		const struct secret *o = &set->v[i];
		if (strcmp(o->name, name) == 0) {
			snprintf(err, errlen, "secret %s given twice", name);
			return -1;
		}
		if (strstr(o->placeholder, ph) != NULL ||
		    strstr(ph, o->placeholder) != NULL) {
			snprintf(err, errlen, "secret %s: its placeholder "
			    "overlaps that of %s", name, o->name);
			return -1;
		}
	}
	return 0;
}

int
secret_set_add(struct secret_set *set, const char *name,
    const char *placeholder, const void *value, size_t value_len,
    const char *const *hosts, size_t nhosts, char *err, size_t errlen)
{
	size_t phlen = strlen(placeholder);
	struct secret *s;

	if (check_new(set, name, placeholder, phlen, err, errlen) == -1)
		return -1;
	if (!value_valid(value, value_len)) {
		snprintf(err, errlen, "secret %s: the value is empty, over %d "
		    "bytes, or holds a control character", name,
		    SECRET_VALUE_MAX);
		return -1;
	}
	if (nhosts == 0 || nhosts > SECRET_HOSTS_MAX) {
		snprintf(err, errlen, "secret %s: 1 to %d hosts", name,
		    SECRET_HOSTS_MAX);
		return -1;
	}
	s = &set->v[set->n];
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < nhosts; i++) {
		char pat[HOSTRULE_PATTERN_MAX + 1], why[HOSTRULE_WHY_MAX];

		if (!hostrule_check(hosts[i], HOSTRULE_SECRET, pat, why,
		    sizeof why)) {
			snprintf(err, errlen, "secret %s: %s", name, why);
			for (size_t j = 0; j < s->nhosts; j++)
				free(s->hosts[j]);
			memset(s, 0, sizeof(*s));
			return -1;
		}
		s->hosts[s->nhosts++] = xstrdup(pat);
	}
	str_copy(s->name, name, sizeof(s->name));
	memcpy(s->placeholder, placeholder, phlen + 1);
	s->placeholder_len = phlen;
	s->value = secmem_alloc(value_len);
	memcpy(s->value, value, value_len);
	s->value_len = value_len;
	if (phlen > set->placeholder_max)
		set->placeholder_max = phlen;
	set->n++;
	return 0;
}

const char *const secret_default_headers[] = {
	"authorization", "x-api-key", "api-key", "x-goog-api-key",
	"private-token", "x-auth-token", NULL,
};

/* Never a credential header: the proxy frames, routes or drops these. */
static const char *const forbidden_headers[] = {
	"host", "connection", "proxy-connection", "keep-alive", "te",
	"trailer", "transfer-encoding", "content-length", "upgrade", "expect",
	"proxy-authorization", "proxy-authenticate", "cookie", "set-cookie",
	NULL,
};

static bool
header_token_valid(const char *s, size_t n)
{
	if (n == 0 || n > SECRET_HEADER_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || (c != 0 &&
		    strchr("!#$%&'*+-.^_`|~", c) != NULL)))
			return false;
	}
	return true;
}

static bool
name_in(const char *const *list, const char *name, size_t n)
{
	for (size_t i = 0; list[i] != NULL; i++)
		if (strlen(list[i]) == n && strncasecmp(list[i], name, n) == 0)
			return true;
	return false;
}

int
secret_set_headers(struct secret_set *set, size_t i,
    const char *const *headers, size_t n, char *err, size_t errlen)
{
	struct secret *s;

	if (i >= set->n) {
		snprintf(err, errlen, "no such secret");
		return -1;
	}
	s = &set->v[i];
	if (n > SECRET_HEADERS_MAX) {
		snprintf(err, errlen, "secret %s: at most %d headers", s->name,
		    SECRET_HEADERS_MAX);
		return -1;
	}
	for (size_t k = 0; k < n; k++) {
		size_t hl = strlen(headers[k]);
		if (!header_token_valid(headers[k], hl) ||
		    name_in(forbidden_headers, headers[k], hl)) {
			snprintf(err, errlen, "secret %s: \"%.80s\" cannot carry "
			    "a credential", s->name, headers[k]);
			str_sanitize(err);
			return -1;
		}
	}
	s->nheaders = 0;
	for (size_t k = 0; k < n; k++) {
		size_t hl = strlen(headers[k]);
		for (size_t j = 0; j <= hl; j++)
			s->headers[k][j] = (char)tolower(
			    (unsigned char)headers[k][j]);
		s->nheaders++;
	}
	return 0;
}

bool
secret_header_is_credential(const struct secret *s, const char *name,
    size_t n)
{
	if (name_in(secret_default_headers, name, n))
		return true;
	for (size_t i = 0; i < s->nheaders; i++)
		if (strlen(s->headers[i]) == n &&
		    strncasecmp(s->headers[i], name, n) == 0)
			return true;
	return false;
}

bool
secret_host_match(const struct secret *s, const char *host)
{
	for (size_t i = 0; i < s->nhosts; i++)
		if (proxyreq_host_match(s->hosts[i], host))
			return true;
	return false;
}

bool
secret_set_any_host(const struct secret_set *set, const char *host)
{
	if (set == NULL)
		return false;
	for (size_t i = 0; i < set->n; i++)
		if (secret_host_match(&set->v[i], host))
			return true;
	return false;
}

void
secret_set_free(struct secret_set *set)
{
	if (set == NULL)
		return;
	for (size_t i = 0; i < set->n; i++) {
		struct secret *s = &set->v[i];
		secmem_free(s->value, s->value_len);
		for (size_t j = 0; j < s->nhosts; j++)
			free(s->hosts[j]);
	}
	wire_wipe(set->v, set->cap * sizeof(*set->v));
	free(set->v);
	free(set);
}
