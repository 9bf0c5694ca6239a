#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

/* Parses the leading decimal digits; NULL when there are none. */
static const char *
parse_digits(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!isdigit((unsigned char)*s))
		return NULL;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return NULL;
		v = v * 10 + d;
	}
	*out = v;
	return s;
}

static int
mul_checked(uint64_t a, uint64_t b, uint64_t *out)
{
	if (b != 0 && a > UINT64_MAX / b)
		return -1;
	*out = a * b;
	return 0;
}

int
units_parse_duration_ms(const char *s, uint64_t plain_unit_ms, uint64_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 },
	};
	uint64_t v, ms;
	const char *end;

	if (s == NULL || (end = parse_digits(s, &v)) == NULL)
		return -1;
	if (*end == '\0') {
		ms = plain_unit_ms;
	} else {
		ms = 0;
		for (size_t i = 0; i < sizeof units / sizeof *units; i++)
			if (strcmp(end, units[i].suffix) == 0)
				ms = units[i].ms;
		if (ms == 0)
			return -1;
	}
	/* Keep results representable as signed milliseconds. */
	if (mul_checked(v, ms, out) == -1 || *out > (uint64_t)INT64_MAX / 2)
		return -1;
	return 0;
}

int
units_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{ "", 1 }, { "B", 1 },
		{ "K", 1ull << 10 }, { "KiB", 1ull << 10 },
		{ "M", 1ull << 20 }, { "MiB", 1ull << 20 },
		{ "G", 1ull << 30 }, { "GiB", 1ull << 30 },
		{ "T", 1ull << 40 }, { "TiB", 1ull << 40 },
	};
	uint64_t v;
	const char *end;

	if (s == NULL || (end = parse_digits(s, &v)) == NULL)
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof *units; i++)
		if (strcmp(end, units[i].suffix) == 0)
			return mul_checked(v, units[i].mult, out);
	return -1;
}

void
units_format_duration(uint64_t ms, char *buf, size_t len)
{
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = {
		{ "d", 86400000 }, { "h", 3600000 }, { "m", 60000 },
		{ "s", 1000 },
	};

	for (size_t i = 0; i < sizeof units / sizeof *units; i++)
		if (ms > 0 && ms % units[i].ms == 0) {
			snprintf(buf, len, "%llu%s",
			    (unsigned long long)(ms / units[i].ms), units[i].suffix);
			return;
		}
	snprintf(buf, len, ms == 0 ? "0s" : "%llums", (unsigned long long)ms);
}

void
units_format_human(uint64_t ms, char *buf, size_t len)
{
	uint64_t h = ms / 3600000, m = (ms / 60000) % 60, s = (ms / 1000) % 60;

	if (ms % 1000 != 0 && ms < 60000)
		snprintf(buf, len, "%llums", (unsigned long long)ms);
	else if (h > 0 && m == 0 && s == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)h);
	else if (h > 0)
		snprintf(buf, len, "%lluh%02llum%02llus", (unsigned long long)h,
		    (unsigned long long)m, (unsigned long long)s);
	else if (m > 0 && s == 0)
		snprintf(buf, len, "%llum", (unsigned long long)m);
	else if (m > 0)
		snprintf(buf, len, "%llum%02llus", (unsigned long long)m,
		    (unsigned long long)s);
	else
		snprintf(buf, len, "%llus", (unsigned long long)s);
}
