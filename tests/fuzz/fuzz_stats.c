/*
 * What a guest prints for `stats`, any bytes: stats_parse never reads past
 * them, and what it accepts holds together (memory available within the
 * total, disk used within its size), so that the figures derived from two
 * samples stay finite and within 100 per CPU. Every figure stats_figures
 * accepts is within the lane's limits (some finite, some none known, as
 * under the simulator) and is the guest's KiB in bytes exactly, unwrapped.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "statsparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A known figure in bytes that is not kib * 1024 exactly has wrapped. */
static bool
bytes_of(uint64_t bytes, uint64_t kib)
{
	return bytes % 1024 == 0 && bytes / 1024 == kib;
}

/* What stats_figures accepted from cur is within lim, and unwrapped. */
static void
check_figures(const struct stats_sample *prev, const struct stats_sample *cur,
    const struct stats_limits *lim)
{
	struct stats_figures f;
	char why[256];
	unsigned refused;

	refused = stats_figures(prev, cur, lim, &f, why, sizeof why);
	if (strlen(why) >= sizeof why || (refused != 0) != (why[0] != '\0'))
		abort();
	if (f.cpus_known && (f.cpus > lim->cpus || f.cpus != cur->ncpu))
		abort();
	if (f.cpu_known && (!f.cpus_known || !isfinite(f.cpu_percent) ||
	    f.cpu_percent < 0 || f.cpu_percent > 100.0 * lim->cpus))
		abort();
	if (f.memory_known && (f.memory_total_bytes > lim->memory_bytes ||
	    f.memory_used_bytes > f.memory_total_bytes ||
	    !bytes_of(f.memory_total_bytes, cur->mem_total_kib) ||
	    !bytes_of(f.memory_used_bytes, cur->mem_total_kib -
	    cur->mem_avail_kib)))
		abort();
	if (f.disk_known && (f.disk_total_bytes > lim->disk_bytes ||
	    f.disk_used_bytes > f.disk_total_bytes ||
	    !bytes_of(f.disk_total_bytes, cur->disk_size_kib) ||
	    !bytes_of(f.disk_used_bytes, cur->disk_used_kib)))
		abort();
	if (f.procs_known && (f.procs > STATS_PROCS_MAX || f.procs != cur->procs))
		abort();
	if (!f.memory_known && (f.memory_total_bytes | f.memory_used_bytes))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stats_sample a, b;
	char err[160], *buf;
	size_t half = size / 2;
	double pct;
	/* A lane of 1 to 8 CPUs, 4 GiB and 30 GiB, or the host's (none). */
	const struct stats_limits lane = { 1 + size % 8, 4ull << 30,
	    30ull << 30 };
	const struct stats_limits host = { 1 + size % 8, UINT64_MAX,
	    UINT64_MAX };

	/* An exact-size copy: ASan sees any read past the guest's bytes. */
	if ((buf = malloc(size > 0 ? size : 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	if (stats_parse(buf, size, &a, err, sizeof err) == 0) {
		if (a.mem_avail_kib > a.mem_total_kib ||
		    a.disk_used_kib > a.disk_size_kib || a.ncpu == 0 ||
		    a.clk_tck == 0)
			abort();
		if (stats_init_uptime_ms(&a) > a.uptime_ms)
			abort();
		check_figures(NULL, &a, &lane);
		check_figures(NULL, &a, &host);
	}
	if (strlen(err) >= sizeof err)
		abort();
	/* Two samples from the two halves: CPU between them is sane. */
	if (stats_parse(buf, half, &a, err, sizeof err) == 0 &&
	    stats_parse(buf + half, size - half, &b, err, sizeof err) == 0) {
		if (stats_cpu_percent(&a, &b, &pct) &&
		    (!isfinite(pct) || pct < 0 || pct > b.ncpu * 100.0 + 1e-6))
			abort();
		check_figures(&a, &b, &lane);
		check_figures(&a, &b, &host);
	}
	free(buf);
	return 0;
}
