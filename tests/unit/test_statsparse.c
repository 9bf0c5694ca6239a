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

/* GOOD's lane: 2 CPUs, 4 GiB of memory, a 30 GiB disk. */
static const struct stats_limits lane = { 2, 4ull << 30, 30ull << 30 };

/* A sample: GOOD with one line replaced (key and values). */
static void
sample_with(const char *key, const char *line, struct stats_sample *s)
{
	char buf[1024], err[160];
	const char *at = GOOD, *nl;
	size_t n = 0;

	while (*at != '\0') {
		nl = strchr(at, '\n');
		if (strncmp(at, key, strlen(key)) == 0 && at[strlen(key)] == ' ')
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\n",
			    line);
		else
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%.*s",
			    (int)(nl + 1 - at), at);
		at = nl + 1;
	}
	if (stats_parse(buf, n, s, err, sizeof err) != 0)
		fail_msg("%s: %s", err, buf);
}

static void
test_checked_arithmetic(void **state)
{
	uint64_t v;

	assert_true(stats_mul_u64(0, UINT64_MAX, &v) && v == 0);
	assert_true(stats_mul_u64(UINT64_MAX, 1, &v) && v == UINT64_MAX);
	assert_true(stats_mul_u64(1ull << 32, (1ull << 32) - 1, &v));
	assert_false(stats_mul_u64(1ull << 32, 1ull << 32, &v));
	assert_false(stats_mul_u64(UINT64_MAX, 2, &v));
	assert_true(stats_kib_bytes((1ull << 54) - 1, &v));
	assert_true(v == ((1ull << 54) - 1) * 1024);
	assert_false(stats_kib_bytes(1ull << 54, &v));
	/* The review's figure: kib << 10 made it 7168 bytes. */
	v = 12345;
	assert_false(stats_kib_bytes((1ull << 55) + 7, &v));
	assert_int_equal(v, 12345);
}

static void
test_figures_within(void **state)
{
	struct stats_sample a, b;
	struct stats_figures f;
	char why[256];

	sample_with("ncpu", "ncpu 2", &a);
	b = a;
	b.cpu[0] += 100;
	b.cpu[3] += 100;
	assert_int_equal(stats_figures(&a, &b, &lane, &f, why, sizeof why), 0);
	assert_string_equal(why, "");
	assert_true(f.cpus_known && f.cpus == 2);
	assert_true(f.cpu_known && f.cpu_percent > 99.99 &&
	    f.cpu_percent < 100.01);
	assert_true(f.memory_known);
	assert_true(f.memory_total_bytes == 4000000ull * 1024);
	assert_true(f.memory_used_bytes == 1000000ull * 1024);
	assert_true(f.disk_known && f.disk_total_bytes == 30000000ull * 1024 &&
	    f.disk_used_bytes == 1000000ull * 1024);
	assert_true(f.procs_known && f.procs == 12);
	assert_int_equal(f.uptime_ms, 1224560);
	/* The first sample: CPU not known yet, the rest is. */
	assert_int_equal(stats_figures(NULL, &b, &lane, &f, why, sizeof why), 0);
	assert_false(f.cpu_known);
	assert_true(f.cpus_known && f.memory_known);
	/* Exactly at the limits: a real guest can be there. */
	sample_with("mem", "mem 4194304 0", &a);
	assert_int_equal(stats_figures(NULL, &a, &lane, &f, why, sizeof why), 0);
	assert_true(f.memory_known && f.memory_total_bytes == 4ull << 30);
}

/* cur's figures against GOOD's lane: exactly the refused bits. */
static void
expect_figures(const struct stats_sample *prev, const struct stats_sample *cur,
    const struct stats_limits *lim, unsigned refused, const char *why_has)
{
	struct stats_figures f;
	char why[256];

	assert_int_equal(stats_figures(prev, cur, lim, &f, why, sizeof why),
	    refused);
	if (strstr(why, why_has) == NULL)
		fail_msg("why: \"%s\" lacks \"%s\"", why, why_has);
	/* What is refused reads as unknown, and as nothing. */
	if (refused & STATS_REFUSED_CPUS)
		assert_true(!f.cpus_known && f.cpus == 0 && !f.cpu_known);
	if (refused & (STATS_REFUSED_CPUS | STATS_REFUSED_CPU))
		assert_true(!f.cpu_known && f.cpu_percent == 0);
	if (refused & STATS_REFUSED_MEMORY)
		assert_true(!f.memory_known && f.memory_total_bytes == 0 &&
		    f.memory_used_bytes == 0);
	if (refused & STATS_REFUSED_DISK)
		assert_true(!f.disk_known && f.disk_total_bytes == 0 &&
		    f.disk_used_bytes == 0);
	if (refused & STATS_REFUSED_PROCS)
		assert_true(!f.procs_known && f.procs == 0);
	/* What is not refused is still there. */
	assert_true(f.memory_known == !(refused & STATS_REFUSED_MEMORY));
	assert_true(f.disk_known == !(refused & STATS_REFUSED_DISK));
	assert_true(f.procs_known == !(refused & STATS_REFUSED_PROCS));
	assert_true(f.cpus_known == !(refused & STATS_REFUSED_CPUS));
}

static void
test_figures_impossible(void **state)
{
	struct stats_sample a, b;
	const struct stats_limits host = { 2, UINT64_MAX, UINT64_MAX };
	const struct stats_limits many = { 65536, 4ull << 30, 30ull << 30 };

	/* 2^55+7 KiB: past the lane's memory, and past 64 bits in bytes. */
	sample_with("mem", "mem 36028797018963975 0", &a);
	expect_figures(NULL, &a, &lane, STATS_REFUSED_MEMORY,
	    "36028797018963975 KiB of memory");
	/* Even where no memory limit is known (the simulator's host). */
	expect_figures(NULL, &a, &host, STATS_REFUSED_MEMORY, "KiB of memory");
	/* One KiB more than the lane has. */
	sample_with("mem", "mem 4194305 0", &a);
	expect_figures(NULL, &a, &lane, STATS_REFUSED_MEMORY, "memory");
	/* A disk past the lane's, and one past 64 bits in bytes. */
	sample_with("disk", "disk 31457281 5", &a);
	expect_figures(NULL, &a, &lane, STATS_REFUSED_DISK, "a disk of 31457281");
	sample_with("disk", "disk 36028797018963975 7", &a);
	expect_figures(NULL, &a, &host, STATS_REFUSED_DISK, "a disk of");
	/* 65,536 CPUs on a lane of 2, and the 6,488,712 % they made. */
	sample_with("ncpu", "ncpu 65536", &a);
	b = a;
	b.cpu[0] += 99;
	b.cpu[3] += 1;
	expect_figures(&a, &b, &lane, STATS_REFUSED_CPUS, "65536 CPUs, the "
	    "lane has 2");
	/* 3 on a lane of 2. */
	sample_with("ncpu", "ncpu 3", &a);
	expect_figures(NULL, &a, &lane, STATS_REFUSED_CPUS, "3 CPUs");
	/* Percent past 100 per CPU cannot come from stats_cpu_percent... */
	sample_with("ncpu", "ncpu 65536", &a);
	b = a;
	b.cpu[0] += 99;
	b.cpu[3] += 1;
	expect_figures(&a, &b, &many, 0, "");
	/* ...and the processes Linux cannot have. */
	sample_with("procs", "procs 4194305", &a);
	expect_figures(NULL, &a, &lane, STATS_REFUSED_PROCS, "4194305 processes");
	sample_with("procs", "procs 4194304", &a);
	expect_figures(NULL, &a, &lane, 0, "");
	/* Several at once: each refused, each said. */
	sample_with("mem", "mem 36028797018963975 0", &a);
	a.ncpu = 9;
	a.procs = 1u << 23;
	expect_figures(NULL, &a, &lane, STATS_REFUSED_CPUS |
	    STATS_REFUSED_MEMORY | STATS_REFUSED_PROCS, "9 CPUs");
}

/* Figures a guest cannot even write: the whole sample is refused. */
static void
test_figures_unparsable(void **state)
{
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem -4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "negative memory");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu -2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "negative CPUs");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs -1\nuptime 1\ninit 1 100\n", "negative processes");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\n"
	    "mem 184467440737095516160000 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "memory past 2^64, in digits");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 4 3\n"
	    "disk 000000000000000000000000003 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "zeros past 17 digits");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 72057594037927936 3\n"
	    "disk 3 1\nprocs 1\nuptime 1\ninit 1 100\n", "2^56 KiB");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 65537\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1\ninit 1 100\n", "65537 CPUs");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 4294967298\nmem 4 3\n"
	    "disk 3 1\nprocs 1\nuptime 1\ninit 1 100\n", "2^32+2 CPUs");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 4294967297\nuptime 1\ninit 1 100\n", "2^32+1 processes");
	expect_refused("cpu 1 0 5 8 5 0 0 0\nncpu 2\nmem 4 3\ndisk 3 1\n"
	    "procs 1\nuptime 1e9\ninit 1 100\n", "an exponent");
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
		cmocka_unit_test(test_checked_arithmetic),
		cmocka_unit_test(test_figures_within),
		cmocka_unit_test(test_figures_impossible),
		cmocka_unit_test(test_figures_unparsable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
