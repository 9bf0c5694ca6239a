/*
 * What `stats` reads in a guest: the script the guest runs (through the
 * lane's exec channel, as the guest user) and the strict parser of what it
 * prints. The guest is not trusted: its output is bounded by the caller,
 * every line must be exactly one of the expected ones, each once, every
 * number plain decimal within its bound, and anything else is an error
 * that names the line. The arithmetic (CPU between two samples, uptime of
 * the guest's init) never overflows or divides by zero, whatever the guest
 * claims.
 *
 * A sample that parses may still lie about one figure: stats_figures
 * holds each against what the lane physically has (its CPUs, memory and
 * disk), and a figure past them, or whose bytes do not fit 64 bits, is
 * refused and shown unknown.
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

/* a * b, or false when it does not fit 64 bits. */
bool stats_mul_u64(uint64_t a, uint64_t b, uint64_t *out);
/* KiB in bytes, or false when they do not fit 64 bits. */
bool stats_kib_bytes(uint64_t kib, uint64_t *bytes);

/*
 * Most processes a Linux guest can have: the kernel's PID_MAX_LIMIT
 * (2^22 on 64-bit), which no pid_max setting exceeds.
 */
#define STATS_PROCS_MAX (1u << 22)

/*
 * What is physically possible for a lane: its CPUs, memory and disk (the
 * caller's, from the lane; lanes have no swap, and MemTotal counts none).
 * A figure past them is a guest's lie and is refused.
 */
struct stats_limits {
	uint32_t cpus;
	uint64_t memory_bytes;
	uint64_t disk_bytes;
};

/* The figures stats_figures refused, a bit each. */
#define STATS_REFUSED_CPUS	0x01u	/* so CPU percent is unknown too */
#define STATS_REFUSED_CPU	0x02u	/* percent above 100 per lane CPU */
#define STATS_REFUSED_MEMORY	0x04u
#define STATS_REFUSED_DISK	0x08u
#define STATS_REFUSED_PROCS	0x10u

/*
 * The figures of a lane, each known only when it is within the lane's
 * limits and its arithmetic fits: what a stats answer shows.
 */
struct stats_figures {
	bool cpus_known;
	uint32_t cpus;
	bool cpu_known;			/* also false without prev */
	double cpu_percent;
	bool memory_known;
	uint64_t memory_used_bytes, memory_total_bytes;
	bool disk_known;
	uint64_t disk_used_bytes, disk_total_bytes;
	bool procs_known;
	uint32_t procs;
	uint64_t uptime_ms;
};

/*
 * The figures of cur (a parsed sample; prev, the one before, or NULL)
 * within limits. Returns the STATS_REFUSED_* bits of what was refused,
 * with why (the guest's figures, as numbers) in why.
 */
unsigned stats_figures(const struct stats_sample *prev,
    const struct stats_sample *cur, const struct stats_limits *,
    struct stats_figures *, char *why, size_t whylen);

#endif
