/*
 * agent-lanectl stats [LANE...]: each live lane's resource use, as docker
 * stats shows containers': a table redrawn in place on a terminal, one
 * table after another elsewhere, one JSON object a sample with --json;
 * --no-stream prints one sample and exits.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "units.h"

struct stats_out {
	const struct ctl *ctl;
	bool tty;
	bool failed;		/* standard output failed */
};

/* "used / of", or "-- / of" when the used figure is not known. */
static void
pair(char *buf, size_t len, bool known, uint64_t used, uint64_t of)
{
	char a[32], b[32];

	if (known)
		ctl_bytes(used, a, sizeof a);
	else
		snprintf(a, sizeof a, "--");
	ctl_bytes(of, b, sizeof b);
	snprintf(buf, len, "%s / %s", a, b);
}

static void
pct(char *buf, size_t len, bool known, uint64_t part, uint64_t whole)
{
	if (!known || whole == 0)
		snprintf(buf, len, "--");
	else
		snprintf(buf, len, "%.1f%%", (double)part * 100.0 / (double)whole);
}

/* Pads s (shown safely) to width columns. */
static void
cell(const char *s, int width)
{
	int n = (int)strlen(s);

	ctl_put_safe(stdout, s);
	printf("%*s", n < width ? width - n + 1 : 1, "");
}

static void
table(const struct al_lane_stats *const *v, size_t n, bool tty)
{
	size_t nerr = 0;

	/* Home and clear, as docker stats does, so the table stays put. */
	if (tty)
		fputs("\033[H\033[2J", stdout);
	printf("%-20s %-16s %-8s %-22s %-7s %-22s %-6s %s\n", "NAME", "ALIAS",
	    "CPU %", "MEM USAGE / LIMIT", "MEM %", "DISK USED / SIZE", "PIDS",
	    "UPTIME");
	for (size_t i = 0; i < n; i++) {
		const struct al_lane_stats *s = v[i];
		char cpu[16], mem[64], memp[16], disk[64], pids[16], up[32];

		cell(s->name, 20);
		cell(s->alias[0] != '\0' ? s->alias : "-", 16);
		if (s->error_code != 0) {
			printf("%-8s %-22s %-7s %-22s %-6s %s\n", "--", "--", "--",
			    "--", "--", "--");
			nerr++;
			continue;
		}
		if (s->cpu_known)
			snprintf(cpu, sizeof cpu, "%.2f%%", s->cpu_percent);
		else
			snprintf(cpu, sizeof cpu, "--");
		/* A figure the daemon refused (the guest lied): "--". */
		pair(mem, sizeof mem, s->memory_known, s->memory_used_bytes,
		    s->memory_limit_bytes);
		pct(memp, sizeof memp, s->memory_known, s->memory_used_bytes,
		    s->memory_limit_bytes);
		if (s->disk_known)
			pair(disk, sizeof disk, true, s->disk_used_bytes,
			    s->disk_total_bytes);
		else
			snprintf(disk, sizeof disk, "--");
		if (s->processes_known)
			snprintf(pids, sizeof pids, "%u", s->processes);
		else
			snprintf(pids, sizeof pids, "--");
		/* Whole seconds: a table refreshed each second. */
		units_format_human(s->uptime_ms / 1000 * 1000, up, sizeof up);
		printf("%-8s %-22s %-7s %-22s %-6s %s\n", cpu, mem, memp, disk,
		    pids, up);
	}
	/* Why a lane has no figures, below the table. */
	for (size_t i = 0; i < n && nerr > 0; i++) {
		if (v[i]->error_code == 0)
			continue;
		ctl_put_safe(stdout, v[i]->name);
		printf(": %s: ", al_code_name(v[i]->error_code));
		ctl_put_safe(stdout, v[i]->error);
		putchar('\n');
	}
	if (!tty)
		putchar('\n');
}

/* ,"key":n or ,"key":null */
static void
json_u64(const char *key, bool known, uint64_t n)
{
	if (known)
		printf(",\"%s\":%llu", key, (unsigned long long)n);
	else
		printf(",\"%s\":null", key);
}

static void
lane_json(const struct al_lane_stats *s)
{
	printf("{\"name\":");
	ctl_json_string(stdout, s->name);
	printf(",\"alias\":");
	if (s->alias[0] != '\0')
		ctl_json_string(stdout, s->alias);
	else
		fputs("null", stdout);
	printf(",\"state\":");
	ctl_json_string(stdout, al_state_name(s->state));
	if (s->error_code != 0) {
		printf(",\"error\":{\"code\":");
		ctl_json_string(stdout, al_code_name(s->error_code));
		printf(",\"message\":");
		ctl_json_string(stdout, s->error);
		printf("}}");
		return;
	}
	/* A figure not known (refused by the daemon, or no CPU yet): null. */
	printf(",\"error\":null");
	json_u64("cpus", s->cpus_known, s->cpus);
	printf(",\"cpu_percent\":");
	if (s->cpu_known)
		printf("%.2f", s->cpu_percent);
	else
		fputs("null", stdout);
	json_u64("memory_used_bytes", s->memory_known, s->memory_used_bytes);
	json_u64("memory_total_bytes", s->memory_known, s->memory_total_bytes);
	json_u64("memory_limit_bytes", true, s->memory_limit_bytes);
	json_u64("disk_used_bytes", s->disk_known, s->disk_used_bytes);
	json_u64("disk_total_bytes", s->disk_known, s->disk_total_bytes);
	json_u64("disk_limit_bytes", true, s->disk_limit_bytes);
	json_u64("processes", s->processes_known, s->processes);
	json_u64("uptime_ms", true, s->uptime_ms);
	putchar('}');
}

static bool
on_sample(const struct al_lane_stats *const *v, size_t n, int64_t time_ms,
    void *arg)
{
	struct stats_out *o = arg;

	if (o->ctl->json) {
		printf("{\"time_ms\":%lld,\"lanes\":[", (long long)time_ms);
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				putchar(',');
			lane_json(v[i]);
		}
		puts("]}");
	} else
		table(v, n, o->tty);
	/* A reader that went away (| head) ends the stream. */
	if (fflush(stdout) == EOF || ferror(stdout)) {
		o->failed = true;
		return false;
	}
	return true;
}

int
cmd_stats(struct ctl *ctl, int argc, char **argv)
{
	struct al_stats_opts so = AL_STATS_OPTS_INIT;
	struct stats_out out = { ctl, false, false };
	struct ctl_parsed p;
	struct al_error err;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	so.stream = true;
	for (size_t i = 0; i < p.nopts; i++)
		if (ctl_is(&p.opts[i], "no-stream"))
			so.stream = false;
	if (p.noperands > AL_STATS_LANES_MAX)
		return ctl_usage("stats: at most %d lanes", AL_STATS_LANES_MAX);
	so.lanes = (const char *const *)p.operands;
	so.nlanes = p.noperands;
	so.sample = on_sample;
	so.arg = &out;
	out.tty = !ctl->json && so.stream && isatty(STDOUT_FILENO);
	if (al_stats(ctl->client, &so, &err) != AL_OK)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	return out.failed ? CTL_EXIT_FAILURE : 0;
}
