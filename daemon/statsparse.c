#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "statsparse.h"

/*
 * POSIX sh with the guest's own tools (grep, df, getconf): one line per
 * fact, numbers only, so that the daemon parses no /proc file itself. The
 * fields after init's command name are counted from the last ") ", since
 * the name may hold spaces and parentheses.
 */
const char stats_script[] =
    "read -r c u n s i w q x t r </proc/stat || exit 3\n"
    "echo \"cpu $u $n $s $i $w $q $x $t\"\n"
    "echo \"ncpu $(grep -c '^cpu[0-9]' /proc/stat)\"\n"
    "mt= ma=\n"
    "while read -r k v r; do case $k in MemTotal:) mt=$v;; "
    "MemAvailable:) ma=$v;; esac; done </proc/meminfo\n"
    "echo \"mem $mt $ma\"\n"
    "df -kP . | { read -r h; read -r f sz us r; echo \"disk $sz $us\"; }\n"
    "set -- /proc/[0-9]*; echo \"procs $#\"\n"
    "read -r up r </proc/uptime; echo \"uptime $up\"\n"
    "p=$(cat /proc/1/stat) || exit 3; p=${p##*) }; set -- $p\n"
    "echo \"init ${20} $(getconf CLK_TCK)\"\n";

enum stats_key {
	K_CPU, K_NCPU, K_MEM, K_DISK, K_PROCS, K_UPTIME, K_INIT, K_COUNT
};

/*
 * max, when set, bounds each value, checked before a value is narrowed
 * to 32 bits (a guest's 2^32 + 2 CPUs must not read as 2).
 */
static const struct {
	const char *name;
	size_t nnums;
	uint64_t max;
} keys[K_COUNT] = {
	[K_CPU] = { "cpu", 8, 0 },
	[K_NCPU] = { "ncpu", 1, 65536 },
	[K_MEM] = { "mem", 2, 0 },
	[K_DISK] = { "disk", 2, 0 },
	[K_PROCS] = { "procs", 1, 1u << 24 },
	[K_UPTIME] = { "uptime", 1, 0 },
	[K_INIT] = { "init", 2, 0 },
};

/*
 * Counters a guest reports are kept below 2^56, so that sums of eight of
 * them, and products by 1000, stay inside 64 bits.
 */
#define STATS_NUM_MAX (1ull << 56)

/* Plain decimal digits, 1 to 17 of them, below STATS_NUM_MAX. */
static bool
parse_num(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 17)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v >= STATS_NUM_MAX)
		return false;
	*out = v;
	return true;
}

/* /proc/uptime's "12345.67": whole seconds and up to 9 decimals, in ms. */
static bool
parse_seconds(const char *s, size_t len, uint64_t *ms)
{
	const char *dot = memchr(s, '.', len);
	size_t ilen = dot != NULL ? (size_t)(dot - s) : len;
	uint64_t whole, frac = 0;
	size_t flen = 0;

	if (!parse_num(s, ilen, &whole) || whole > STATS_NUM_MAX / 1000)
		return false;
	if (dot != NULL) {
		flen = len - ilen - 1;
		if (flen == 0 || flen > 9 || !parse_num(dot + 1, flen, &frac))
			return false;
		/* The first three decimals are the milliseconds. */
		while (flen > 3) {
			frac /= 10;
			flen--;
		}
		while (flen < 3) {
			frac *= 10;
			flen++;
		}
	}
	*ms = whole * 1000 + frac;
	return true;
}

static void
store(struct stats_sample *s, enum stats_key k, const uint64_t *v)
{
	switch (k) {
	case K_CPU:
		memcpy(s->cpu, v, sizeof s->cpu);
		break;
	case K_NCPU:
		s->ncpu = (uint32_t)v[0];
		break;
	case K_MEM:
		s->mem_total_kib = v[0];
		s->mem_avail_kib = v[1];
		break;
	case K_DISK:
		s->disk_size_kib = v[0];
		s->disk_used_kib = v[1];
		break;
	case K_PROCS:
		s->procs = (uint32_t)v[0];
		break;
	case K_UPTIME:
		s->uptime_ms = v[0];
		break;
	case K_INIT:
		s->init_start_ticks = v[0];
		s->clk_tck = v[1];
		break;
	case K_COUNT:
		break;
	}
}

/* One line without its newline: "key n n ...", single spaces. */
static int
parse_line(const char *line, size_t len, struct stats_sample *s, bool *seen,
    char *err, size_t errlen)
{
	uint64_t v[8];
	size_t klen = 0, k, n = 0, at;

	while (klen < len && line[klen] != ' ')
		klen++;
	for (k = 0; k < K_COUNT; k++)
		if (strlen(keys[k].name) == klen &&
		    memcmp(keys[k].name, line, klen) == 0)
			break;
	if (k == K_COUNT) {
		snprintf(err, errlen, "an unexpected line (%zu bytes)", len);
		return -1;
	}
	if (seen[k]) {
		snprintf(err, errlen, "\"%s\" twice", keys[k].name);
		return -1;
	}
	seen[k] = true;
	for (at = klen; at < len; ) {
		size_t start = ++at, end = start;
		bool ok;

		while (end < len && line[end] != ' ')
			end++;
		if (n == keys[k].nnums) {
			n++;
			break;
		}
		ok = k == K_UPTIME ? parse_seconds(line + start, end - start,
		    &v[n]) : parse_num(line + start, end - start, &v[n]);
		if (!ok || (keys[k].max != 0 && v[n] > keys[k].max)) {
			snprintf(err, errlen, "\"%s\": value %zu is not a "
			    "plain number in range", keys[k].name, n + 1);
			return -1;
		}
		n++;
		at = end;
	}
	if (n != keys[k].nnums) {
		snprintf(err, errlen, "\"%s\": %zu values, not %zu",
		    keys[k].name, n, keys[k].nnums);
		return -1;
	}
	store(s, (enum stats_key)k, v);
	return 0;
}

/* What no Linux guest reports: checked once every line is in. */
static int
stats_check(const struct stats_sample *s, char *err, size_t errlen)
{
	if (s->ncpu == 0 || s->ncpu > 65536)
		snprintf(err, errlen, "%u CPUs", s->ncpu);
	else if (s->mem_total_kib == 0 || s->mem_avail_kib > s->mem_total_kib)
		snprintf(err, errlen, "memory available above the total");
	else if (s->disk_size_kib == 0 || s->disk_used_kib > s->disk_size_kib)
		snprintf(err, errlen, "disk used above its size");
	else if (s->procs == 0 || s->procs > 1u << 24)
		snprintf(err, errlen, "%u processes", s->procs);
	else if (s->clk_tck == 0 || s->clk_tck > 1000000)
		snprintf(err, errlen, "a clock tick of 1/%llu s",
		    (unsigned long long)s->clk_tck);
	else
		return 0;
	return -1;
}

int
stats_parse(const char *buf, size_t len, struct stats_sample *s, char *err,
    size_t errlen)
{
	bool seen[K_COUNT] = { false };
	size_t at = 0;

	memset(s, 0, sizeof *s);
	if (len > STATS_OUTPUT_MAX) {
		snprintf(err, errlen, "more than %u bytes", STATS_OUTPUT_MAX);
		return -1;
	}
	while (at < len) {
		const char *nl = memchr(buf + at, '\n', len - at);

		if (nl == NULL) {
			snprintf(err, errlen, "a line without its end");
			return -1;
		}
		if (parse_line(buf + at, (size_t)(nl - (buf + at)), s, seen, err,
		    errlen) == -1)
			return -1;
		at = (size_t)(nl - buf) + 1;
	}
	for (size_t k = 0; k < K_COUNT; k++)
		if (!seen[k]) {
			snprintf(err, errlen, "no \"%s\" line", keys[k].name);
			return -1;
		}
	return stats_check(s, err, errlen);
}

static void
cpu_times(const struct stats_sample *s, uint64_t *busy, uint64_t *total)
{
	/* user nice system irq softirq steal; then idle and iowait. */
	*busy = s->cpu[0] + s->cpu[1] + s->cpu[2] + s->cpu[5] + s->cpu[6] +
	    s->cpu[7];
	*total = *busy + s->cpu[3] + s->cpu[4];
}

bool
stats_cpu_percent(const struct stats_sample *prev,
    const struct stats_sample *cur, double *percent)
{
	uint64_t pb, pt, cb, ct;

	cpu_times(prev, &pb, &pt);
	cpu_times(cur, &cb, &ct);
	if (ct <= pt || cb < pb || cb - pb > ct - pt)
		return false;
	*percent = (double)(cb - pb) / (double)(ct - pt) * cur->ncpu * 100.0;
	return true;
}

uint64_t
stats_init_uptime_ms(const struct stats_sample *s)
{
	uint64_t secs, started;

	if (s->clk_tck == 0)
		return 0;
	secs = s->init_start_ticks / s->clk_tck;
	if (secs > s->uptime_ms / 1000)
		return 0;
	started = secs * 1000 + s->init_start_ticks % s->clk_tck * 1000 /
	    s->clk_tck;
	return s->uptime_ms > started ? s->uptime_ms - started : 0;
}

bool
stats_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	if (a != 0 && b > UINT64_MAX / a)
		return false;
	*out = a * b;
	return true;
}

bool
stats_kib_bytes(uint64_t kib, uint64_t *bytes)
{
	return stats_mul_u64(kib, 1024, bytes);
}

static void
why_add(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends one reason to why, "; " between them; cut at whylen. */
static void
why_add(char *why, size_t whylen, const char *fmt, ...)
{
	size_t at = strnlen(why, whylen);
	va_list ap;

	if (whylen == 0 || at + 1 >= whylen)
		return;
	if (at > 0) {
		snprintf(why + at, whylen - at, "; ");
		at = strnlen(why, whylen);
	}
	va_start(ap, fmt);
	vsnprintf(why + at, whylen - at, fmt, ap);
	va_end(ap);
}

/* used of total KiB in bytes, if total fits within limit bytes. */
static bool
kib_within(uint64_t total_kib, uint64_t used_kib, uint64_t limit,
    uint64_t *total, uint64_t *used)
{
	return stats_kib_bytes(total_kib, total) && *total <= limit &&
	    used_kib <= total_kib && stats_kib_bytes(used_kib, used);
}

/* CPUs and CPU percent: see stats_figures. */
static unsigned
figures_cpu(const struct stats_sample *prev, const struct stats_sample *cur,
    const struct stats_limits *lim, struct stats_figures *f, char *why,
    size_t whylen)
{
	double pct;

	if (cur->ncpu > lim->cpus) {
		why_add(why, whylen, "%u CPUs, the lane has %u", cur->ncpu,
		    lim->cpus);
		return STATS_REFUSED_CPUS;
	}
	f->cpus_known = true;
	f->cpus = cur->ncpu;
	if (prev == NULL || !stats_cpu_percent(prev, cur, &pct))
		return 0;
	/*
	 * No tolerance for sampling: the percent is the guest's busy ticks
	 * over all its ticks between two samples (at most 1, or not known)
	 * times its CPUs, so it passes 100 per lane CPU only if the CPU
	 * count does. Checked all the same, in case that ever changes.
	 */
	if (!(pct >= 0 && pct <= 100.0 * lim->cpus)) {
		why_add(why, whylen, "%.0f%% CPU, the lane has %u CPUs", pct,
		    lim->cpus);
		return STATS_REFUSED_CPU;
	}
	f->cpu_known = true;
	f->cpu_percent = pct;
	return 0;
}

unsigned
stats_figures(const struct stats_sample *prev, const struct stats_sample *cur,
    const struct stats_limits *lim, struct stats_figures *f, char *why,
    size_t whylen)
{
	uint64_t mem_used_kib;
	unsigned refused;

	memset(f, 0, sizeof *f);
	if (whylen > 0)
		why[0] = '\0';
	refused = figures_cpu(prev, cur, lim, f, why, whylen);
	/* Available above the total (never from stats_parse): refused. */
	mem_used_kib = cur->mem_avail_kib <= cur->mem_total_kib ?
	    cur->mem_total_kib - cur->mem_avail_kib : UINT64_MAX;
	f->memory_known = kib_within(cur->mem_total_kib, mem_used_kib,
	    lim->memory_bytes, &f->memory_total_bytes, &f->memory_used_bytes);
	if (!f->memory_known) {
		f->memory_total_bytes = f->memory_used_bytes = 0;
		refused |= STATS_REFUSED_MEMORY;
		why_add(why, whylen, "%llu KiB of memory, the lane has %llu "
		    "bytes", (unsigned long long)cur->mem_total_kib,
		    (unsigned long long)lim->memory_bytes);
	}
	f->disk_known = kib_within(cur->disk_size_kib, cur->disk_used_kib,
	    lim->disk_bytes, &f->disk_total_bytes, &f->disk_used_bytes);
	if (!f->disk_known) {
		f->disk_total_bytes = f->disk_used_bytes = 0;
		refused |= STATS_REFUSED_DISK;
		why_add(why, whylen, "a disk of %llu KiB, the lane has %llu "
		    "bytes", (unsigned long long)cur->disk_size_kib,
		    (unsigned long long)lim->disk_bytes);
	}
	if (cur->procs <= STATS_PROCS_MAX) {
		f->procs_known = true;
		f->procs = cur->procs;
	} else {
		refused |= STATS_REFUSED_PROCS;
		why_add(why, whylen, "%u processes, Linux has at most %u",
		    cur->procs, STATS_PROCS_MAX);
	}
	f->uptime_ms = stats_init_uptime_ms(cur);
	return refused;
}
