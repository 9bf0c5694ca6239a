/* agent-lanectl info: the daemon this command reaches, and how. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "units.h"
#include "wire.h"

static void
kv(const char *k, const char *v)
{
	printf(" %-18s ", k);
	ctl_put_safe(stdout, v);
	putchar('\n');
}

static const char *
dur(uint64_t s, char *buf, size_t len)
{
	if (s == 0)
		snprintf(buf, len, "none");
	else
		units_format_human(s * 1000, buf, len);
	return buf;
}

static void
info_text(const struct ctl *ctl, const struct al_info *in)
{
	const struct al_daemon_info *d = &in->daemon;
	char a[64], b[64], line[1400];

	printf("Client:\n");
	snprintf(line, sizeof line, "%s (%s)", ctl->target_name,
	    ctl->target_from != NULL ? ctl->target_from : "the local socket");
	kv("Context:", line);
	kv("Host:", al_client_host(ctl->client));
	snprintf(line, sizeof line, "%s (protocol %u)", AGENT_LANE_VERSION,
	    WIRE_PROTOCOL_VERSION);
	kv("Version:", line);
	printf("Daemon:\n");
	snprintf(line, sizeof line, "%s (protocol %u)", d->version,
	    d->protocol_version);
	kv("Version:", line);
	snprintf(line, sizeof line, "%s (%s, %s)", in->hostname, in->os,
	    in->arch);
	kv("Host:", line);
	units_format_human(in->uptime_ms / 1000 * 1000, a, sizeof a);
	snprintf(line, sizeof line, "%s (pid %u)", a, d->pid);
	kv("Uptime:", line);
	kv("State dir:", d->state_dir);
	kv("Socket:", in->socket_path);
	if (in->limactl_version[0] != '\0')
		snprintf(line, sizeof line, "%s, version %s, driver %s",
		    in->limactl, in->limactl_version, in->limactl_driver[0] ?
		    in->limactl_driver : "unknown");
	else
		snprintf(line, sizeof line, "%s, version not known yet%s%s",
		    in->limactl, in->limactl_error[0] ? ": " : "",
		    in->limactl_error);
	kv("limactl:", line);
	snprintf(line, sizeof line, "%s%s", in->network_enforceable ?
	    "enforceable: " : "", in->network_note);
	kv("Network policies:", line);
	kv("Default network:", in->network_default);
	printf("Caps:\n");
	snprintf(line, sizeof line, "%u live (%u ready), at most %u",
	    in->lanes_live, in->lanes_ready, d->max_lanes);
	kv("Lanes:", line);
	snprintf(line, sizeof line, "default %u, at most %u", d->default_cpus,
	    d->max_cpus);
	kv("CPUs:", line);
	ctl_bytes((uint64_t)d->default_memory_mib << 20, a, sizeof a);
	ctl_bytes((uint64_t)d->max_memory_mib << 20, b, sizeof b);
	snprintf(line, sizeof line, "default %s, at most %s", a, b);
	kv("Memory:", line);
	ctl_bytes((uint64_t)d->default_disk_gib << 30, a, sizeof a);
	ctl_bytes((uint64_t)d->max_disk_gib << 30, b, sizeof b);
	snprintf(line, sizeof line, "default %s, at most %s", a, b);
	kv("Disk:", line);
	snprintf(line, sizeof line, "default %s, at most %s",
	    dur(d->default_lifetime_s, a, sizeof a), dur(d->max_lifetime_s, b,
	    sizeof b));
	kv("Lifetime:", line);
	kv("Idle timeout:", dur(d->default_idle_timeout_s, a, sizeof a));
	kv("Exec timeout:", dur(d->max_exec_timeout_s, a, sizeof a));
	ctl_bytes(d->max_copy_out_bytes, a, sizeof a);
	snprintf(line, sizeof line, "at most %s (copies in: the guest's disk)",
	    a);
	kv("Copy out:", line);
	ctl_bytes(d->max_frame_bytes, a, sizeof a);
	kv("Frame:", a);
	snprintf(line, sizeof line, "%u open, at most %u", in->connections,
	    in->max_connections);
	kv("Connections:", line);
	snprintf(line, sizeof line, "at most %u execs and copies at once",
	    in->max_execs_per_lane);
	kv("Per lane:", line);
	snprintf(line, sizeof line, "%u, at most %u", in->images,
	    in->max_images);
	kv("Images:", line);
	ctl_bytes(in->max_env_bytes, a, sizeof a);
	kv("Exec environment:", a);
	printf("Pool:\n");
	if (in->pool_size == 0)
		kv("State:", "off");
	else {
		snprintf(line, sizeof line, "%s: %u ready, %u booting, of %u in "
		    "%u shape%s%s%s", in->pool_state, in->pool_ready,
		    in->pool_booting, in->pool_size, in->pool_shapes,
		    in->pool_shapes == 1 ? "" : "s", in->pool_note[0] ? "; " : "",
		    in->pool_note);
		kv("State:", line);
	}
	printf("Disk (the daemon's host):\n");
	ctl_bytes(in->lanes_disk_bytes, a, sizeof a);
	kv("Lanes:", a);
	ctl_bytes(in->images_disk_bytes, a, sizeof a);
	kv("Images:", a);
	ctl_bytes(in->disk_free_bytes, a, sizeof a);
	kv("Free:", a);
}

static void
jstr(const char *k, const char *v, bool comma)
{
	printf("%s\"%s\":", comma ? "," : "", k);
	ctl_json_string(stdout, v);
}

static void
jnum(const char *k, uint64_t v)
{
	printf(",\"%s\":%llu", k, (unsigned long long)v);
}

static void
info_json(const struct ctl *ctl, const struct al_info *in)
{
	const struct al_daemon_info *d = &in->daemon;

	printf("{\"client\":{");
	jstr("version", AGENT_LANE_VERSION, false);
	jnum("protocol", WIRE_PROTOCOL_VERSION);
	jstr("context", ctl->target_name, true);
	jstr("context_from", ctl->target_from != NULL ? ctl->target_from :
	    "the local socket", true);
	jstr("host", al_client_host(ctl->client), true);
	printf("},\"daemon\":{");
	jstr("version", d->version, false);
	jnum("protocol", d->protocol_version);
	jnum("pid", d->pid);
	printf(",\"started_at_ms\":%lld", (long long)d->started_at_ms);
	jnum("uptime_ms", in->uptime_ms);
	jstr("state_dir", d->state_dir, true);
	jstr("socket", in->socket_path, true);
	jstr("hostname", in->hostname, true);
	jstr("os", in->os, true);
	jstr("arch", in->arch, true);
	printf("},\"limactl\":{");
	jstr("path", in->limactl, false);
	jstr("version", in->limactl_version, true);
	jstr("driver", in->limactl_driver, true);
	jstr("error", in->limactl_error, true);
	printf("},\"network\":{\"enforceable\":%s",
	    in->network_enforceable ? "true" : "false");
	jstr("note", in->network_note, true);
	jstr("default", in->network_default, true);
	printf("},\"caps\":{\"max_lanes\":%u", d->max_lanes);
	jnum("default_cpus", d->default_cpus);
	jnum("max_cpus", d->max_cpus);
	jnum("default_memory_mib", d->default_memory_mib);
	jnum("max_memory_mib", d->max_memory_mib);
	jnum("default_disk_gib", d->default_disk_gib);
	jnum("max_disk_gib", d->max_disk_gib);
	jnum("default_lifetime_s", d->default_lifetime_s);
	jnum("max_lifetime_s", d->max_lifetime_s);
	jnum("default_idle_timeout_s", d->default_idle_timeout_s);
	jnum("max_exec_timeout_s", d->max_exec_timeout_s);
	jnum("max_copy_out_bytes", d->max_copy_out_bytes);
	jnum("max_frame_bytes", d->max_frame_bytes);
	jnum("max_connections", in->max_connections);
	jnum("max_execs_per_lane", in->max_execs_per_lane);
	jnum("max_images", in->max_images);
	jnum("max_env_bytes", in->max_env_bytes);
	printf("},\"pool\":{\"size\":%u", in->pool_size);
	jnum("shapes", in->pool_shapes);
	jnum("ready", in->pool_ready);
	jnum("booting", in->pool_booting);
	jstr("state", in->pool_state, true);
	jstr("note", in->pool_note, true);
	printf("},\"lanes\":{\"live\":%u", in->lanes_live);
	jnum("ready", in->lanes_ready);
	jnum("disk_bytes", in->lanes_disk_bytes);
	printf("},\"images\":{\"count\":%u", in->images);
	jnum("disk_bytes", in->images_disk_bytes);
	printf("},\"disk_free_bytes\":%llu",
	    (unsigned long long)in->disk_free_bytes);
	jnum("connections", in->connections);
	printf("}\n");
}

int
cmd_info(struct ctl *ctl, int argc, char **argv)
{
	struct al_info in = AL_INFO_INIT;
	struct ctl_parsed p;
	struct al_error err;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands > 0)
		return ctl_usage("info takes no arguments");
	if (al_info(ctl->client, &in, &err) != AL_OK)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (ctl->json)
		info_json(ctl, &in);
	else
		info_text(ctl, &in);
	return 0;
}
