#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "units.h"

/*
 * At most this many digits after a decimal point: enough for any unit down
 * to a millisecond or a byte, and small enough that 10^digits times the
 * largest unit (a day, a tebibyte) cannot overflow 64 bits.
 */
#define FRACTION_DIGITS_MAX 6

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

static int
add_checked(uint64_t a, uint64_t b, uint64_t *out)
{
	if (a > UINT64_MAX - b)
		return -1;
	*out = a + b;
	return 0;
}

/*
 * A decimal number, "12" or "1.5": the integer part, then the fraction as
 * digits over 10^*scale. NULL when s does not start with one.
 */
static const char *
parse_decimal(const char *s, uint64_t *whole, uint64_t *frac, uint64_t *scale)
{
	const char *p;

	if ((p = parse_digits(s, whole)) == NULL)
		return NULL;
	*frac = 0;
	*scale = 1;
	if (*p != '.')
		return p;
	p++;
	if (!isdigit((unsigned char)*p))
		return NULL;	/* "1." */
	for (int n = 0; isdigit((unsigned char)*p); p++, n++) {
		if (n == FRACTION_DIGITS_MAX)
			return NULL;
		*frac = *frac * 10 + (uint64_t)(*p - '0');
		*scale *= 10;
	}
	return p;
}

/*
 * whole.frac times unit, which must come out whole: "1.5h" is 5400000 ms,
 * "0.5ms" is refused rather than rounded.
 */
static int
scale_decimal(uint64_t whole, uint64_t frac, uint64_t scale, uint64_t unit,
    uint64_t *out)
{
	uint64_t a, b;

	if (mul_checked(whole, unit, &a) == -1)
		return -1;
	/* frac < scale <= 10^6 and unit < 2^41: no overflow. */
	b = frac * unit;
	if (b % scale != 0)
		return -1;
	return add_checked(a, b / scale, out);
}

/* A plain number where the unit is required: only zero is taken. */
static int
plain_zero(uint64_t whole, uint64_t frac, uint64_t *out)
{
	if (whole != 0 || frac != 0)
		return UNITS_NO_UNIT;
	*out = 0;
	return 0;
}

int
units_parse_duration_ms(const char *s, uint64_t plain_unit_ms, uint64_t *out)
{
	/* Largest first: a compound duration names each unit once, in order. */
	static const struct {
		const char *suffix;
		uint64_t ms;
	} units[] = {
		{ "d", 86400000 }, { "h", 3600000 }, { "ms", 1 },
		{ "m", 60000 }, { "s", 1000 },
	};
	static const int rank[] = { 0, 1, 4, 2, 3 };	/* d h m s ms */
	uint64_t whole, frac, scale, v, total = 0;
	const char *p;
	int last = -1;

	if (s == NULL || (p = parse_decimal(s, &whole, &frac, &scale)) == NULL)
		return -1;
	if (*p == '\0') {
		if (plain_unit_ms == UNITS_UNIT_REQUIRED)
			return plain_zero(whole, frac, out);
		if (scale_decimal(whole, frac, scale, plain_unit_ms, &total) == -1)
			return -1;
		goto done;
	}
	for (;;) {
		size_t i, n = sizeof units / sizeof *units;

		/* "ms" is tried before "m" so that "250ms" is not "250m" + "s". */
		for (i = 0; i < n; i++)
			if (strncmp(p, units[i].suffix, strlen(units[i].suffix)) == 0)
				break;
		if (i == n || rank[i] <= last)
			return -1;
		last = rank[i];
		p += strlen(units[i].suffix);
		if (scale_decimal(whole, frac, scale, units[i].ms, &v) == -1 ||
		    add_checked(total, v, &total) == -1)
			return -1;
		if (*p == '\0')
			break;
		/* Only the last component may have a fraction: "1.5h30m" is odd. */
		if (scale != 1)
			return -1;
		if ((p = parse_decimal(p, &whole, &frac, &scale)) == NULL ||
		    *p == '\0')
			return -1;	/* "1h30": a bare number after a unit */
	}
done:
	/* Keep results representable as signed milliseconds. */
	if (total > (uint64_t)INT64_MAX / 2)
		return -1;
	*out = total;
	return 0;
}

int
units_parse_size_unit(const char *s, uint64_t plain_unit, uint64_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{ "B", 1 },
		{ "K", 1ull << 10 }, { "KB", 1ull << 10 }, { "KiB", 1ull << 10 },
		{ "M", 1ull << 20 }, { "MB", 1ull << 20 }, { "MiB", 1ull << 20 },
		{ "G", 1ull << 30 }, { "GB", 1ull << 30 }, { "GiB", 1ull << 30 },
		{ "T", 1ull << 40 }, { "TB", 1ull << 40 }, { "TiB", 1ull << 40 },
	};
	uint64_t whole, frac, scale;
	const char *end;

	if (s == NULL || (end = parse_decimal(s, &whole, &frac, &scale)) == NULL)
		return -1;
	if (*end == '\0' && plain_unit == UNITS_UNIT_REQUIRED)
		return plain_zero(whole, frac, out);
	if (*end == '\0')
		return scale_decimal(whole, frac, scale, plain_unit, out);
	/*
	 * The letter may be either case ("8g", as docker takes it); the "i"
	 * and the "B" of "GiB" must be as written. All multiples are binary.
	 */
	for (size_t i = 0; i < sizeof units / sizeof *units; i++)
		if (strcasecmp(end, units[i].suffix) == 0 &&
		    strcmp(end + 1, units[i].suffix + 1) == 0)
			return scale_decimal(whole, frac, scale, units[i].mult, out);
	return -1;
}

int
units_parse_size(const char *s, uint64_t *out)
{
	return units_parse_size_unit(s, 1, out);
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

void
units_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const suffix[] = { "B", "KiB", "MiB", "GiB", "TiB",
	    "PiB", "EiB" };
	uint64_t whole = bytes, rem, frac, scale;
	size_t i = 0;
	int digits;

	while (whole >= 1024 && i + 1 < sizeof suffix / sizeof *suffix) {
		whole >>= 10;
		i++;
	}
	/* Three figures, rounded down: never more than the value. */
	digits = i == 0 || whole >= 100 ? 0 : whole >= 10 ? 1 : 2;
	rem = i == 0 ? 0 : bytes & ((UINT64_C(1) << (10 * i)) - 1);
	scale = digits == 2 ? 100 : digits == 1 ? 10 : 1;
	/* rem < 2^(10i) <= 2^60: times 100 it fits once shifted down by 10. */
	frac = i == 0 ? 0 : ((rem >> (10 * (i - 1))) * scale) >> 10;
	while (digits > 0 && frac % 10 == 0) {
		frac /= 10;
		digits--;
	}
	if (digits == 0)
		snprintf(buf, len, "%llu%s", (unsigned long long)whole,
		    suffix[i]);
	else
		snprintf(buf, len, "%llu.%0*llu%s", (unsigned long long)whole,
		    digits, (unsigned long long)frac, suffix[i]);
}
