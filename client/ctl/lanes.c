/* Lane commands: create, ls, show, rm, extend, events, reap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "units.h"

static void
progress_cb(const char *phase, const char *message, void *arg)
{
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "agent-lanectl: %s%s%s\n", phase,
		    message[0] ? ": " : "", message);
}

int
cmd_create(struct ctl *ctl, int argc, char **argv)
{
	struct al_create_opts o = { .progress = progress_cb };
	struct al_label labels[AL_LABELS_MAX];
	const char *paths[AL_IMAGE_SCRIPTS_MAX];
	size_t npaths = 0;
	struct al_image im;
	struct al_lane lane;
	struct al_error err;
	const char *v;
	uint64_t n;
	int r;

	for (int i = 1; i < argc; i++) {
		if ((r = ctl_opt(argc, argv, &i, "--cpus", &v)) != 0) {
			if (r < 0 || !ctl_uint(v, 1024, &n) || n == 0)
				return ctl_usage("--cpus needs a positive number");
			o.cpus = (uint32_t)n;
		} else if ((r = ctl_opt(argc, argv, &i, "--memory", &v)) != 0) {
			char *end;
			double gib = r > 0 ? strtod(v, &end) : 0;

			if (r < 0 || *end != '\0' || gib < 0.25 || gib > 4096)
				return ctl_usage("--memory needs GiB, e.g. 4 or 0.5");
			o.memory_mib = (uint32_t)(gib * 1024 + 0.5);
		} else if ((r = ctl_opt(argc, argv, &i, "--disk", &v)) != 0) {
			if (r < 0 || !ctl_uint(v, 65536, &n) || n == 0)
				return ctl_usage("--disk needs GiB, e.g. 30");
			o.disk_gib = (uint32_t)n;
		} else if ((r = ctl_opt(argc, argv, &i, "--timeout", &v)) != 0) {
			if (r < 0 || !ctl_duration(v, UNITS_MS_PER_MIN, &n) ||
			    n < 1000)
				return ctl_usage("--timeout needs a duration: 90 "
				    "(minutes), 30s, 90m, 2h");
			o.timeout_s = n / 1000;
		} else if ((r = ctl_opt(argc, argv, &i, "--idle-timeout",
		    &v)) != 0) {
			if (r < 0 || !ctl_duration(v, UNITS_MS_PER_MIN, &n) ||
			    n < 1000)
				return ctl_usage("--idle-timeout needs a duration");
			o.idle_timeout_s = n / 1000;
		} else if ((r = ctl_opt(argc, argv, &i, "--label", &v)) != 0) {
			const char *eq = r > 0 ? strchr(v, '=') : NULL;

			if (eq == NULL || eq == v)
				return ctl_usage("--label needs KEY=VALUE");
			if (o.nlabels == AL_LABELS_MAX)
				return ctl_usage("at most %d labels", AL_LABELS_MAX);
			if ((size_t)(eq - v) >= sizeof labels[0].key ||
			    strlen(eq + 1) >= sizeof labels[0].value)
				return ctl_usage("label too long");
			memcpy(labels[o.nlabels].key, v, (size_t)(eq - v));
			labels[o.nlabels].key[eq - v] = '\0';
			snprintf(labels[o.nlabels].value,
			    sizeof labels[o.nlabels].value, "%s", eq + 1);
			o.nlabels++;
		} else if ((r = ctl_opt(argc, argv, &i, "--image", &v)) != 0) {
			if (r < 0)
				return ctl_usage("--image needs an IMAGE");
			o.image = v;
		} else if ((r = ctl_opt(argc, argv, &i, "--provision",
		    &v)) != 0) {
			if (r < 0)
				return ctl_usage("--provision needs a FILE");
			if (npaths == AL_IMAGE_SCRIPTS_MAX)
				return ctl_usage("at most %d provision scripts",
				    AL_IMAGE_SCRIPTS_MAX);
			paths[npaths++] = v;
		} else
			return ctl_usage("create: unexpected argument %s", argv[i]);
	}
	if (npaths > 0 && o.image != NULL)
		return ctl_usage("create: --image and --provision exclude each "
		    "other");
	if (npaths > 0) {
		/* The image is named by its content: same scripts, same image. */
		struct al_image_build_opts bo;

		memset(&bo, 0, sizeof bo);
		if ((r = ctl_build_image(ctl, &bo, paths, npaths, &im)) != 0)
			return r;
		o.image = im.name;
	}
	o.labels = labels;
	if (al_create(ctl->client, &o, &lane, &err) == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	printf("%s\n", lane.name);
	return 0;
}

static void
relative(int64_t ms, char *buf, size_t len)
{
	struct timespec ts;
	int64_t now, d;
	char dur[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	d = ms - now;
	units_format_human((uint64_t)(d < 0 ? -d : d) / 1000 * 1000, dur,
	    sizeof dur);
	snprintf(buf, len, d >= 0 ? "in %s" : "%s ago", dur);
}

int
cmd_ls(struct ctl *ctl, int argc, char **argv)
{
	struct al_lane *lanes;
	struct al_error err;
	bool json = false, all = false;
	size_t n;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--all") == 0 ||
		    strcmp(argv[i], "-a") == 0)
			all = true;
		else
			return ctl_usage("ls: unexpected argument %s", argv[i]);
	}
	if (al_list(ctl->client, all, &lanes, &n, &err) == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (json) {
		fputc('[', stdout);
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				fputc(',', stdout);
			ctl_lane_json(stdout, &lanes[i]);
		}
		fputs("]\n", stdout);
	} else {
		printf("%-20s %-10s %4s %8s %6s  %-20s  %s\n", "NAME", "STATE",
		    "CPUS", "MEMORY", "DISK", "CREATED", "DEADLINE");
		for (size_t i = 0; i < n; i++) {
			char created[32], deadline[48], mem[16];

			ctl_time(lanes[i].created_at_ms, created, sizeof created);
			if (lanes[i].ended_at_ms != 0)
				snprintf(deadline, sizeof deadline, "ended");
			else
				relative(lanes[i].deadline_ms, deadline,
				    sizeof deadline);
			snprintf(mem, sizeof mem, "%gGiB",
			    lanes[i].memory_mib / 1024.0);
			printf("%-20s %-10s %4u %8s %4uGiB  %-20s  %s\n",
			    lanes[i].name, al_state_name(lanes[i].state),
			    lanes[i].cpus, mem, lanes[i].disk_gib, created,
			    deadline);
		}
	}
	free(lanes);
	return 0;
}

int
cmd_show(struct ctl *ctl, int argc, char **argv)
{
	struct al_lane l;
	struct al_error err;
	const char *name = NULL;
	bool json = false;
	char t[32], rel[48];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (name == NULL)
			name = argv[i];
		else
			return ctl_usage("show: unexpected argument %s", argv[i]);
	}
	if (name == NULL)
		return ctl_usage("usage: agent-lanectl show LANE [--json]");
	if (al_get(ctl->client, name, &l, &err) == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (json) {
		ctl_lane_json(stdout, &l);
		fputc('\n', stdout);
		return 0;
	}
	printf("name:         %s\n", l.name);
	printf("state:        %s\n", al_state_name(l.state));
	printf("cpus:         %u\n", l.cpus);
	printf("memory:       %g GiB\n", l.memory_mib / 1024.0);
	printf("disk:         %u GiB\n", l.disk_gib);
	ctl_time(l.created_at_ms, t, sizeof t);
	printf("created:      %s\n", t);
	ctl_time(l.deadline_ms, t, sizeof t);
	relative(l.deadline_ms, rel, sizeof rel);
	printf("deadline:     %s (%s)\n", t, rel);
	if (l.idle_timeout_s > 0)
		printf("idle timeout: %llus\n", (unsigned long long)l.idle_timeout_s);
	printf("workspace:    %s\n", l.workspace[0] ? l.workspace : "-");
	if (l.ended_at_ms != 0) {
		ctl_time(l.ended_at_ms, t, sizeof t);
		printf("ended:        %s\n", t);
	}
	if (l.error[0])
		printf("error:        %s\n", l.error);
	for (size_t i = 0; i < l.nlabels; i++)
		printf("label:        %s=%s\n", l.labels[i].key, l.labels[i].value);
	return 0;
}

int
cmd_rm(struct ctl *ctl, int argc, char **argv)
{
	struct al_lane l;
	struct al_error err;
	int rc = 0;

	if (argc < 2)
		return ctl_usage("usage: agent-lanectl rm LANE...");
	for (int i = 1; i < argc; i++) {
		if (al_destroy(ctl->client, argv[i], &l, &err) == -1) {
			fprintf(stderr, "agent-lanectl: %s: %s: %s\n", argv[i],
			    al_code_name(err.code), err.message);
			rc = CTL_EXIT_FAILURE;
		}
	}
	return rc;
}

int
cmd_extend(struct ctl *ctl, int argc, char **argv)
{
	struct al_lane l;
	struct al_error err;
	uint64_t ms;
	bool capped;
	char t[32];

	if (argc != 3)
		return ctl_usage("usage: agent-lanectl extend LANE DURATION");
	if (!ctl_duration(argv[2], UNITS_MS_PER_MIN, &ms) || ms < 1000)
		return ctl_usage("extend: bad duration \"%s\"", argv[2]);
	if (al_extend(ctl->client, argv[1], ms / 1000, &l, &capped, &err) == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	ctl_time(l.deadline_ms, t, sizeof t);
	printf("%s deadline %s%s\n", l.name, t,
	    capped ? " (capped by max_lifetime)" : "");
	return 0;
}

int
cmd_events(struct ctl *ctl, int argc, char **argv)
{
	struct al_event *ev;
	struct al_error err;
	const char *name = NULL;
	bool json = false;
	size_t n;
	char t[32];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (name == NULL)
			name = argv[i];
		else
			return ctl_usage("events: unexpected argument %s", argv[i]);
	}
	if (name == NULL)
		return ctl_usage("usage: agent-lanectl events LANE [--json]");
	if (al_events(ctl->client, name, &ev, &n, &err) == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (json)
		fputc('[', stdout);
	for (size_t i = 0; i < n; i++) {
		ctl_time(ev[i].time_ms, t, sizeof t);
		if (json) {
			if (i > 0)
				fputc(',', stdout);
			fprintf(stdout, "{\"time_ms\":%lld,\"time\":",
			    (long long)ev[i].time_ms);
			ctl_json_string(stdout, t);
			fputs(",\"event\":", stdout);
			ctl_json_string(stdout, ev[i].event);
			fputs(",\"detail\":", stdout);
			ctl_json_string(stdout, ev[i].detail);
			fputc('}', stdout);
		} else
			printf("%s  %-18s %s\n", t, ev[i].event, ev[i].detail);
	}
	if (json)
		fputs("]\n", stdout);
	free(ev);
	return 0;
}

static void
print_names(const char *what, char (*names)[AL_NAME_MAX], size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%s %s\n", what, names[i]);
}

int
cmd_reap(struct ctl *ctl, int argc, char **argv)
{
	struct al_reap_report rep;
	struct al_error err;
	bool orphans = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--orphans") == 0)
			orphans = true;
		else
			return ctl_usage("reap: unexpected argument %s", argv[i]);
	}
	if (al_reap(ctl->client, orphans, &rep, &err) == -1)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	print_names("destroyed", rep.destroyed, rep.ndestroyed);
	print_names("pending", rep.pending, rep.npending);
	for (size_t i = 0; i < rep.norphans; i++) {
		bool deleted = false;

		for (size_t j = 0; j < rep.ndeleted_orphans; j++)
			if (strcmp(rep.orphans[i], rep.deleted_orphans[j]) == 0)
				deleted = true;
		printf("orphan %s%s\n", rep.orphans[i], deleted ? " deleted" :
		    orphans ? " NOT deleted" : "");
	}
	if (rep.norphans > 0 && !orphans)
		fprintf(stderr, "agent-lanectl: %zu orphaned VM%s; "
		    "`agent-lanectl reap --orphans` deletes them\n", rep.norphans,
		    rep.norphans == 1 ? "" : "s");
	al_reap_report_free(&rep);
	return 0;
}
