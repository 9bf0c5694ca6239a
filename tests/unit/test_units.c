/*
 * proto/units.c: the durations and sizes users type in the configuration
 * file, on the daemon's command line and in agent-lanectl.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "units.h"

#define MIN UNITS_MS_PER_MIN
#define SEC UNITS_MS_PER_S

static void
expect_duration(const char *s, uint64_t plain, uint64_t want)
{
	uint64_t v = 0xdeadbeef;

	if (units_parse_duration_ms(s, plain, &v) != 0)
		fail_msg("\"%s\" was refused", s);
	if (v != want)
		fail_msg("\"%s\" gave %llu ms, want %llu", s,
		    (unsigned long long)v, (unsigned long long)want);
}

static void
expect_bad_duration(const char *s)
{
	uint64_t v = 0;

	if (units_parse_duration_ms(s, SEC, &v) != -1)
		fail_msg("\"%s\" was accepted as %llu ms", s,
		    (unsigned long long)v);
}

static void
test_duration_units(void **state)
{
	/* A plain number counts in the caller's unit. */
	expect_duration("0", MIN, 0);
	expect_duration("90", MIN, 90 * MIN);
	expect_duration("45", SEC, 45 * SEC);
	expect_duration("7", 1, 7);

	expect_duration("250ms", MIN, 250);
	expect_duration("30s", MIN, 30 * SEC);
	expect_duration("90m", SEC, 90 * MIN);
	expect_duration("2h", SEC, 2 * 60 * MIN);
	expect_duration("1d", SEC, 24 * 60 * MIN);
	expect_duration("0s", SEC, 0);
	expect_duration("007s", SEC, 7 * SEC);
}

/* Issue 11: compounds and fractions, as Go and systemd users type them. */
static void
test_duration_compound(void **state)
{
	expect_duration("1h30m", SEC, 90 * MIN);
	expect_duration("1d12h", SEC, 36 * 60 * MIN);
	expect_duration("2m30s", SEC, 150 * SEC);
	expect_duration("1h0m5s", SEC, 60 * MIN + 5 * SEC);
	expect_duration("1s500ms", SEC, 1500);
	expect_duration("1d2h3m4s5ms", SEC,
	    86400000ull + 2 * 3600000ull + 3 * MIN + 4 * SEC + 5);
	expect_duration("1.5h", SEC, 90 * MIN);
	expect_duration("0.5m", SEC, 30 * SEC);
	expect_duration("2.25s", SEC, 2250);
	expect_duration("1h0.5m", SEC, 60 * MIN + 30 * SEC);
	expect_duration("0.001s", SEC, 1);
	/* A plain fraction counts in the plain unit too. */
	expect_duration("1.5", SEC, 1500);
	expect_duration("2.5", MIN, 150 * SEC);
}

static void
test_duration_rejects(void **state)
{
	static const char *const bad[] = {
		"", "1x", "-1", "+1", " 1", "1 ", "1 s", "s", "ms",
		"1S", "1H", "1ms5", "1hm", "1sec", "1min", "0x10",
		"1\n", "١",
		/* Compounds: largest unit first, each once, no bare tail. */
		"30m1h", "1h1h", "1m1d", "1h30", "1h 30m", "1h-30m", "1s1ms1s",
		/* Fractions: digits on both sides, only last, whole ms. */
		"1.", ".5h", "1.5h30m", "0.5ms", "1.0001s", "1..5s", "1.5.5s",
		"1.1234567h", "0.0001",
		/* Overflow of the digits, then of the multiplication. */
		"99999999999999999999", "18446744073709551616",
		"99999999999999h", "213503982335d",
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		expect_bad_duration(bad[i]);
	assert_int_equal(units_parse_duration_ms(NULL, SEC, &v), -1);
}

static void
test_duration_range(void **state)
{
	uint64_t v;

	/*
	 * Results stay representable as signed milliseconds (with room to
	 * add a deadline to "now"): at most INT64_MAX / 2.
	 */
	expect_duration("4611686018427387903ms", SEC, 4611686018427387903ull);
	expect_bad_duration("4611686018427387904ms");
	expect_bad_duration("9223372036854775807ms");
	/* A plain number too big once scaled by the plain unit. */
	assert_int_equal(units_parse_duration_ms("9223372036854775", MIN, &v),
	    -1);
}

static void
expect_size(const char *s, uint64_t want)
{
	uint64_t v = 0xdeadbeef;

	if (units_parse_size(s, &v) != 0)
		fail_msg("\"%s\" was refused", s);
	if (v != want)
		fail_msg("\"%s\" gave %llu, want %llu", s,
		    (unsigned long long)v, (unsigned long long)want);
}

static void
test_size_units(void **state)
{
	expect_size("0", 0);
	expect_size("4096", 4096);
	expect_size("8B", 8);
	expect_size("512K", 512ull << 10);
	expect_size("1KiB", 1ull << 10);
	expect_size("64M", 64ull << 20);
	expect_size("64MiB", 64ull << 20);
	expect_size("1G", 1ull << 30);
	expect_size("3GiB", 3ull << 30);
	expect_size("2T", 2ull << 40);
	expect_size("1TiB", 1ull << 40);
	/* The largest multiple of T that fits in 64 bits. */
	expect_size("16777215T", 16777215ull << 40);
	/* Issue 11: "8G", "8GB", "8g" and fractions; binary every way. */
	expect_size("8GB", 8ull << 30);
	expect_size("8g", 8ull << 30);
	expect_size("512m", 512ull << 20);
	expect_size("1KB", 1ull << 10);
	expect_size("1k", 1ull << 10);
	expect_size("1.5G", 3ull << 29);
	expect_size("0.5K", 512);
	expect_size("0.25T", 1ull << 38);
}

static void
test_size_plain_unit(void **state)
{
	uint64_t v;

	/* A plain unit, for a name that says it (the parser allows any). */
	assert_int_equal(units_parse_size_unit("8", 1ull << 30, &v), 0);
	assert_true(v == 8ull << 30);
	assert_int_equal(units_parse_size_unit("0.5", 1ull << 30, &v), 0);
	assert_true(v == 1ull << 29);
	/* A suffix overrides the plain unit. */
	assert_int_equal(units_parse_size_unit("512M", 1ull << 30, &v), 0);
	assert_true(v == 512ull << 20);
	assert_int_equal(units_parse_size_unit("100B", 1ull << 30, &v), 0);
	assert_true(v == 100);
	/* Overflow through the plain unit. */
	assert_int_equal(units_parse_size_unit("17179869184", 1ull << 30, &v),
	    -1);
}

/*
 * The one rule (units.h): where the unit is required, a plain number is
 * refused as UNITS_NO_UNIT, but for 0, and a unit is taken as usual.
 */
static void
test_unit_required(void **state)
{
	static const char *const plain[] = { "8", "0.5", "90", "1.5", "00.1" };
	uint64_t v = 7;

	for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) {
		if (units_parse_size_unit(plain[i], UNITS_UNIT_REQUIRED, &v) !=
		    UNITS_NO_UNIT)
			fail_msg("size \"%s\" was not refused for its unit",
			    plain[i]);
		if (units_parse_duration_ms(plain[i], UNITS_UNIT_REQUIRED, &v) !=
		    UNITS_NO_UNIT)
			fail_msg("duration \"%s\" was not refused for its unit",
			    plain[i]);
	}
	assert_int_equal(units_parse_size_unit("0", UNITS_UNIT_REQUIRED, &v), 0);
	assert_true(v == 0);
	v = 7;
	assert_int_equal(units_parse_duration_ms("0.0", UNITS_UNIT_REQUIRED,
	    &v), 0);
	assert_true(v == 0);
	assert_int_equal(units_parse_size_unit("8G", UNITS_UNIT_REQUIRED, &v), 0);
	assert_true(v == 8ull << 30);
	assert_int_equal(units_parse_duration_ms("90s", UNITS_UNIT_REQUIRED,
	    &v), 0);
	assert_true(v == 90000);
	/* Malformed is still malformed, not "no unit". */
	assert_int_equal(units_parse_size_unit("8X", UNITS_UNIT_REQUIRED, &v), -1);
	assert_int_equal(units_parse_duration_ms("", UNITS_UNIT_REQUIRED, &v),
	    -1);
}

static void
test_size_rejects(void **state)
{
	static const char *const bad[] = {
		"", "k", "1Kb", "1Gi", "1Mi", "1gib", "1GIB", "1Gb",
		"1P", "1PiB", "1E", "1 K", " 1K", "1K ", "-1", "+1",
		"0x10", "1KiBs", "1.", ".5G", "1.5", "0.3B", "1.0000001G",
		"1G1M",
		/* Overflow of the digits, then of the multiplication. */
		"99999999999999999999", "18446744073709551616",
		"16777216T", "17179869184G",
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		if (units_parse_size(bad[i], &v) != -1)
			fail_msg("\"%s\" was accepted as %llu", bad[i],
			    (unsigned long long)v);
	assert_int_equal(units_parse_size(NULL, &v), -1);
	/* UINT64_MAX itself is a valid byte count. */
	expect_size("18446744073709551615", UINT64_MAX);
}

static void
expect_format(uint64_t ms, const char *want)
{
	char buf[64];

	memset(buf, 'x', sizeof buf);
	units_format_duration(ms, buf, sizeof buf);
	if (strcmp(buf, want) != 0)
		fail_msg("%llu ms formatted as \"%s\", want \"%s\"",
		    (unsigned long long)ms, buf, want);
}

static void
test_format_duration(void **state)
{
	expect_format(0, "0s");
	expect_format(1, "1ms");
	expect_format(250, "250ms");
	expect_format(1500, "1500ms");
	expect_format(61500, "61500ms");
	expect_format(45 * SEC, "45s");
	expect_format(59 * SEC, "59s");
	expect_format(MIN, "1m");
	expect_format(90 * SEC, "90s");
	expect_format(61 * SEC, "61s");
	expect_format(90 * MIN, "90m");
	expect_format(60 * MIN, "1h");
	expect_format(24 * 60 * MIN, "1d");
	expect_format(7 * 24 * 60 * MIN, "7d");
	expect_format(25 * 60 * MIN, "25h");
}

/* Whatever units_format_duration writes parses back to the same value. */
static void
test_format_duration_round_trips(void **state)
{
	static const uint64_t samples[] = {
		0, 1, 999, 1000, 1001, 59999, 60000, 61500, 90 * SEC, 3599999,
		3600000, 5400000, 86399000, 86400000, 90061001, 7 * 86400000ull,
	};
	char buf[32];
	uint64_t back;

	for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
		units_format_duration(samples[i], buf, sizeof buf);
		assert_int_equal(units_parse_duration_ms(buf, SEC, &back), 0);
		assert_true(back == samples[i]);
	}
}

static void
expect_human(uint64_t ms, const char *want)
{
	char buf[32];

	units_format_human(ms, buf, sizeof buf);
	if (strcmp(buf, want) != 0)
		fail_msg("%llu ms shown as \"%s\", want \"%s\"",
		    (unsigned long long)ms, buf, want);
}

static void
test_format_human(void **state)
{
	expect_human(250, "250ms");
	expect_human(45 * SEC, "45s");
	expect_human(MIN, "1m");
	expect_human(90 * SEC, "1m30s");
	expect_human(61 * SEC, "1m01s");
	expect_human(60 * MIN, "1h");
	expect_human(90 * MIN, "1h30m00s");
}

static void
test_format_duration_truncates(void **state)
{
	char buf[4];

	/* Bounded by len and always terminated. */
	memset(buf, 'x', sizeof buf);
	units_format_duration(123456, buf, sizeof buf);
	assert_int_equal(buf[3], '\0');
	assert_int_equal(strlen(buf), 3);
}

/* Sizes in messages: binary units, one decimal, never rounded up. */
static void
test_format_bytes(void **state)
{
	static const struct {
		uint64_t v;
		const char *s;
	} cases[] = {
		{ 0, "0B" }, { 1023, "1023B" }, { 1024, "1KiB" },
		{ 65536, "64KiB" }, { 1048575, "1023KiB" },
		{ 512ull << 20, "512MiB" }, { 4096ull << 20, "4GiB" },
		{ 1073741824, "1GiB" }, { 1610612736, "1.5GiB" },
		{ 1288490188, "1.19GiB" }, { 14636698788ull, "13.6GiB" },
		{ UINT64_MAX, "15.9EiB" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		units_format_bytes(cases[i].v, buf, sizeof buf);
		assert_string_equal(buf, cases[i].s);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_units),
		cmocka_unit_test(test_duration_compound),
		cmocka_unit_test(test_duration_rejects),
		cmocka_unit_test(test_duration_range),
		cmocka_unit_test(test_size_units),
		cmocka_unit_test(test_size_plain_unit),
		cmocka_unit_test(test_unit_required),
		cmocka_unit_test(test_size_rejects),
		cmocka_unit_test(test_format_duration),
		cmocka_unit_test(test_format_duration_round_trips),
		cmocka_unit_test(test_format_human),
		cmocka_unit_test(test_format_duration_truncates),
		cmocka_unit_test(test_format_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
