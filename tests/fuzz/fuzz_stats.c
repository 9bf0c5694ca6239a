/*
 * What a guest prints for `stats`, any bytes: stats_parse never reads past
 * them, and what it accepts holds together (memory available within the
 * total, disk used within its size), so that the figures derived from two
 * samples stay finite and within 100 per CPU.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "statsparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stats_sample a, b;
	char err[160], *buf;
	size_t half = size / 2;
	double pct;

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
	}
	if (strlen(err) >= sizeof err)
		abort();
	/* Two samples from the two halves: CPU between them is sane. */
	if (stats_parse(buf, half, &a, err, sizeof err) == 0 &&
	    stats_parse(buf + half, size - half, &b, err, sizeof err) == 0 &&
	    stats_cpu_percent(&a, &b, &pct) &&
	    (!isfinite(pct) || pct < 0 || pct > b.ncpu * 100.0 + 1e-6))
		abort();
	free(buf);
	return 0;
}
