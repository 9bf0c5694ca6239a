#include <stddef.h>

#include "text.h"

/*
 * The length of the well-formed UTF-8 sequence at p (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), or 0.
 */
size_t
text_utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		if (p[0] == 0xe0)
			lo = 0xa0;
		else if (p[0] == 0xed)
			hi = 0x9f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		if (p[0] == 0xf0)
			lo = 0x90;
		else if (p[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

bool
text_utf8_printable(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	while (*p != '\0') {
		if (*p < 0x20 || *p == 0x7f || (n = text_utf8_len(p)) == 0 ||
		    (p[0] == 0xc2 && p[1] < 0xa0))	/* C1 controls */
			return false;
		p += n;
	}
	return true;
}


bool
text_secret_name_valid(const char *s)
{
	size_t n = 0;

	if (s == NULL || !((s[0] >= 'A' && s[0] <= 'Z') ||
	    (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (; s[n] != '\0'; n++)
		if (!((s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= 'a' &&
		    s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') ||
		    s[n] == '_') || n >= TEXT_SECRET_NAME_MAX)
			return false;
	return true;
}

bool
text_secret_value_valid(const void *v, size_t len)
{
	const unsigned char *p = v;

	if (p == NULL || len == 0 || len > TEXT_SECRET_VALUE_MAX ||
	    p[0] == ' ' || p[len - 1] == ' ')
		return false;
	for (size_t i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return false;
	return true;
}

bool
text_secret_spec(const char *spec, char name[TEXT_SECRET_NAME_MAX + 1],
    const char **hosts)
{
	size_t n = 0;

	while (spec[n] != '\0' && spec[n] != '@')
		n++;
	if (n == 0 || n > TEXT_SECRET_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		name[i] = spec[i];
	name[n] = '\0';
	if (!text_secret_name_valid(name))
		return false;
	*hosts = NULL;
	if (spec[n] == '@') {
		if (spec[n + 1] == '\0')
			return false;
		*hosts = spec + n + 1;
	}
	return true;
}
