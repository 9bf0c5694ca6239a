/*
 * A lane's secret set (see secret.h): checked on the way in, so that the
 * proxy can put a value into a header as it is and find a placeholder with
 * no ambiguity about which secret it names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxyreq.h"
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
		char *p = xstrdup(hosts[i]);
		if (strlen(p) > PROXYREQ_HOST_MAX + 2 ||
		    !proxyreq_pattern_valid(p)) {
			snprintf(err, errlen, "secret %s: bad host pattern",
			    name);
			free(p);
			for (size_t j = 0; j < s->nhosts; j++)
				free(s->hosts[j]);
			memset(s, 0, sizeof(*s));
			return -1;
		}
		s->hosts[s->nhosts++] = p;
	}
	str_copy(s->name, name, sizeof(s->name));
	memcpy(s->placeholder, placeholder, phlen + 1);
	s->placeholder_len = phlen;
	s->value = xmalloc(value_len);
	memcpy(s->value, value, value_len);
	s->value_len = value_len;
	if (phlen > set->placeholder_max)
		set->placeholder_max = phlen;
	set->n++;
	return 0;
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
		wire_wipe(s->value, s->value_len);
		free(s->value);
		for (size_t j = 0; j < s->nhosts; j++)
			free(s->hosts[j]);
	}
	wire_wipe(set->v, set->cap * sizeof(*set->v));
	free(set->v);
	free(set);
}
