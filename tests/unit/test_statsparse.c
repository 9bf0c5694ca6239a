/*
 * daemon/statsparse.c: what a guest prints for `stats`, read strictly. A
 * real guest's output (the script run by /bin/sh here, on this host's
 * /proc) parses; every way a hostile guest could bend a line is refused;
 * the CPU and uptime arithmetic cannot overflow or divide by zero.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statsparse.h"

#define GOOD \
	"cpu 100 0 50 800 50 0 0 0\n" \
	"ncpu 2\n" \
	"mem 4000000 3000000\n" \
	"disk 30000000 1000000\n" \
	"procs 12\n" \
	"uptime 1234.56\n" \
	"init 1000 100\n"

static int
parse(const char *s, struct stats_sample *out, char *err)
{
	return stats_parse(s, strlen(s), out, err, 160);
}

static void
test_good(void **state)
{
	struct stats_sample s;
	char err[160];

	assert_int_equal(parse(GOOD, &s, err), 0);
	assert_int_equal(s.cpu[0], 100);
	assert_int_equal(s.cpu[3], 800);
	assert_int_equal(s.ncpu, 2);
	assert_int_equal(s.mem_total_kib, 4000000);
	assert_int_equal(s.mem_avail_kib, 3000000);
	assert_int_equal(s.disk_size_kib, 30000000);
	assert_int_equal(s.disk_used_kib, 1000000);
	assert_int_equal(s.procs, 12);
	assert_int_equal(s.uptime_ms, 1234560);
	/* init started 10 s after boot: it has run 1224.56 s. */
	assert_int_equal(stats_init_uptime_ms(&s), 1224560);
}

/* The script itself, on this host: what a Linux guest prints parses. */
static void
test_script_here(void **state)
{
	struct stats_sample s;
	char buf[STATS_OUTPUT_MAX + 2], err[160];
	size_t n;
	FILE *p = popen(stats_script, "r");

	assert_non_null(p);
	n = fread(buf, 1, sizeof buf, p);
	assert_int_equal(pclose(p), 0);
	assert_true(n <= STATS_OUTPUT_MAX);
	if (stats_parse(buf, n, &s, err, sizeof err) != 0)
		fail_msg("the script's own output: %s: %.*s", err, (int)n, buf);
	assert_true(s.procs > 0 && s.ncpu > 0 && s.mem_total_kib > 0);
}

static void
expect_refused(const char *s, const char *why)
{
	struct stats_sample out;
	char err[160] = "";

	if (parse(s, &out, err) == 0)
		fail_msg("accepted (%s): %s", why, s);
	assert_true(err[0] != '\0');
}

static void
test_refused(void **state)
{
	char big[STATS_OUTPUT_MAX + 100];

	expect_refused("", "nothing");
	expect_refused(GOOD "procs 3\n", "a line twice");
	expect_refused(GOOD "extra 1\n", "an unknown line");
	expect_refused("cpu 100 0 50 800 50 0 0\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "seven cpu fields");
	expect_refused("cpu 100 0 50 800 50 0 0 0 9\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "nine cpu fields");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100", "no newline at the end");
	expect_refused("cpu  1 0 5 8 5 0 0 0\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "two spaces");
	expect_refused("cpu 1 0 5 8 5 0 0 -1\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "a sign");
	expect_refused("cpu 1 0 5 8 5 0 0 99999999999999999999\nncpu 2\n"
	    "mem 4 3\ndisk 3 1\nprocs 1\nuptime 1\ninit 1 100\n", "overflow");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 4 5\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "more memory available than "
	    "there is");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 4 3\ndisk 3 4\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "more disk used than there is");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 0\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "no CPU");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 0\n", "a clock of 0 ticks");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1.\ninit 1 100\n", "a dot without decimals");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n\n", "an empty line");
	expect_refused("cpu 1 0 5 8 5 0 0 0\r\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "a carriage return");
	/* A NUL inside the bytes must not end the parse early. */
	{
		struct stats_sample out;
		char err[160];
		char nul[] = "cpu 1 0 5 8 5 0 0 0\nncpu 2\0\nmem 4 3\ndisk 3 1\n"
		    "procs 1\nuptime 1\ninit 1 100\n";

		assert_int_equal(stats_parse(nul, sizeof nul - 1, &out, err,
		    sizeof err), -1);
	}
	memset(big, '1', sizeof big);
	memcpy(big, GOOD, strlen(GOOD));
	{
		struct stats_sample out;
		char err[160];

		assert_int_equal(stats_parse(big, sizeof big, &out, err,
		    sizeof err), -1);
		assert_non_null(strstr(err, "more than"));
	}
}

static void
test_cpu(void **state)
{
	struct stats_sample a, b;
	char err[160];
	double pct;

	assert_int_equal(parse(GOOD, &a, err), 0);
	b = a;
	/* 100 more busy ticks of 200: half of two CPUs, 100%. */
	b.cpu[0] += 100;
	b.cpu[3] += 100;
	assert_true(stats_cpu_percent(&a, &b, &pct));
	assert_true(pct > 99.99 && pct < 100.01);
	/* No time passed, or counters went back: not known. */
	assert_false(stats_cpu_percent(&a, &a, &pct));
	assert_false(stats_cpu_percent(&b, &a, &pct));
	/* Busy rising faster than the total: a lie, not known. */
	b = a;
	b.cpu[0] += 100;
	b.cpu[3] -= 50;
	assert_false(stats_cpu_percent(&a, &b, &pct));
}

static void
test_uptime_edges(void **state)
{
	struct stats_sample s;
	char err[160];

	assert_int_equal(parse(GOOD, &s, err), 0);
	s.init_start_ticks = 999999999999ull;	/* init from the future */
	assert_int_equal(stats_init_uptime_ms(&s), 0);
	s.clk_tck = 1;
	s.init_start_ticks = (1ull << 56) - 1;
	assert_int_equal(stats_init_uptime_ms(&s), 0);
	s.clk_tck = 0;
	assert_int_equal(stats_init_uptime_ms(&s), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_script_here),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_cpu),
		cmocka_unit_test(test_uptime_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
