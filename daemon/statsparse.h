/*
 * What `stats` reads in a guest: the script the guest runs (through the
 * lane's exec channel, as the guest user) and the strict parser of what it
 * prints. The guest is not trusted: its output is bounded by the caller,
 * every line must be exactly one of the expected ones, each once, every
 * number plain decimal within its bound, and anything else is an error
 * that names the line. The arithmetic (CPU between two samples, uptime of
 * the guest's init) never overflows or divides by zero, whatever the guest
 * claims.
 */
#ifndef LANED_STATSPARSE_H
#define LANED_STATSPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most bytes of output the script may print; more is an error. */
#define STATS_OUTPUT_MAX 4096u

/* The script (/bin/sh -c), run in the lane's workspace. */
extern const char stats_script[];

struct stats_sample {
	/* /proc/stat's cpu line: user nice system idle iowait irq softirq steal */
	uint64_t cpu[8];
	uint32_t ncpu;			/* CPUs online */
	uint64_t mem_total_kib, mem_avail_kib;
	uint64_t disk_size_kib, disk_used_kib;	/* df -kP of the workspace */
	uint32_t procs;
	uint64_t uptime_ms;		/* /proc/uptime */
	uint64_t init_start_ticks;	/* /proc/1/stat's starttime */
	uint64_t clk_tck;
};

/* 0, or -1 with why in err (the guest's words are not repeated raw). */
int stats_parse(const char *buf, size_t len, struct stats_sample *,
    char *err, size_t errlen);
/*
 * CPU use between two samples of one guest, 100 per busy CPU: false when
 * it cannot be known (no time passed, or counters went back: a reboot or
 * a lie).
 */
bool stats_cpu_percent(const struct stats_sample *prev,
    const struct stats_sample *cur, double *percent);
/* How long the guest's init has run, in ms (0 if it claims the future). */
uint64_t stats_init_uptime_ms(const struct stats_sample *);

#endif
