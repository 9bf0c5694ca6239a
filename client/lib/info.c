/* al_info and al_stats: the daemon's state, and its lanes' resource use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define COPY(dst, src) \
	snprintf((dst), sizeof (dst), "%s", (src) != NULL ? (src) : "")

static void
info_from_proto(struct al_info *in, const Agentlane__V1__DaemonInfo *p)
{
	const Agentlane__V1__Limits *l = p->limits;
	struct al_daemon_info *d = &in->daemon;

	COPY(d->version, p->version);
	d->protocol_version = p->protocol_version;
	d->pid = p->pid;
	d->started_at_ms = p->started_at_ms;
	COPY(d->state_dir, p->state_dir);
	if (l != NULL) {
		d->max_frame_bytes = l->max_frame_bytes;
		d->max_lanes = l->max_lanes;
		d->default_cpus = l->default_cpus;
		d->max_cpus = l->max_cpus;
		d->default_memory_mib = l->default_memory_mib;
		d->max_memory_mib = l->max_memory_mib;
		d->default_disk_gib = l->default_disk_gib;
		d->max_disk_gib = l->max_disk_gib;
		d->default_lifetime_s = l->default_lifetime_s;
		d->max_lifetime_s = l->max_lifetime_s;
		d->default_idle_timeout_s = l->default_idle_timeout_s;
		d->max_exec_timeout_s = l->max_exec_timeout_s;
		d->max_copy_out_bytes = l->max_copy_out_bytes;
		in->max_connections = l->max_connections;
		in->max_execs_per_lane = l->max_execs_per_lane;
		in->max_images = l->max_images;
		in->max_env_bytes = l->max_env_bytes;
	}
	in->uptime_ms = p->uptime_ms;
	COPY(in->socket_path, p->socket_path);
	COPY(in->hostname, p->hostname);
	COPY(in->os, p->os);
	COPY(in->arch, p->arch);
	COPY(in->limactl, p->limactl);
	COPY(in->limactl_version, p->limactl_version);
	COPY(in->limactl_driver, p->limactl_driver);
	COPY(in->limactl_error, p->limactl_error);
	in->network_enforceable = p->network_enforceable;
	COPY(in->network_note, p->network_note);
	COPY(in->network_default, p->network_default);
	if (p->pool != NULL) {
		in->pool_size = p->pool->size;
		in->pool_shapes = p->pool->shapes;
		in->pool_ready = p->pool->ready;
		in->pool_booting = p->pool->booting;
		COPY(in->pool_state, p->pool->state);
		COPY(in->pool_note, p->pool->note);
	}
	in->lanes_live = p->lanes_live;
	in->lanes_ready = p->lanes_ready;
	in->images = p->images;
	in->lanes_disk_bytes = p->lanes_disk_bytes;
	in->images_disk_bytes = p->images_disk_bytes;
	in->disk_free_bytes = p->disk_free_bytes;
	in->connections = p->connections;
}

static int
do_info(struct al_client *c, struct al_info *out, struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__GetInfo gi = AGENTLANE__V1__GET_INFO__INIT;
	struct al_info in;
	struct al_conn conn;
	AlResponse *resp;
	size_t size;
	int rc = -1;

	memcpy(&size, out, sizeof size);
	if (size < sizeof size) {
		al_set_error(err, AL_INVALID_ARGUMENT, "struct al_info without "
		    "its size: initialize it with AL_INFO_INIT");
		return -1;
	}
	req.body_case = AGENTLANE__V1__REQUEST__BODY_GET_INFO;
	req.get_info = &gi;
	if (al_conn_open(c, &conn, &req, err) == -1)
		return -1;
	if ((resp = al_conn_recv(&conn, err)) != NULL) {
		if (resp->body_case == AGENTLANE__V1__RESPONSE__BODY_DAEMON_INFO) {
			memset(&in, 0, sizeof in);
			in.size = sizeof in;
			info_from_proto(&in, resp->daemon_info);
			/* An older caller's struct gets what it has room for. */
			memcpy(out, &in, size < sizeof in ? size : sizeof in);
			memcpy(out, &size, sizeof size);
			rc = 0;
		} else
			al_error_from_response(err, resp);
		al_response_free(resp);
	}
	al_conn_close(&conn);
	return rc;
}

AL_API enum al_code
al_info(struct al_client *c, struct al_info *out, struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	return al_result(do_info(c, out, err), err);
}

/* ---- stats ---- */

static void
lane_stats_from_proto(struct al_lane_stats *s, const Agentlane__V1__LaneStats *p)
{
	memset(s, 0, sizeof *s);
	COPY(s->name, p->name);
	COPY(s->alias, p->alias);
	s->state = (int)p->state;
	s->error_code = (int)p->error_code;
	COPY(s->error, p->error);
	s->cpus = p->cpus;
	s->cpu_known = p->cpu_known;
	s->cpu_percent = p->cpu_percent;
	s->memory_used_bytes = p->memory_used_bytes;
	s->memory_total_bytes = p->memory_total_bytes;
	s->memory_limit_bytes = p->memory_limit_bytes;
	s->disk_used_bytes = p->disk_used_bytes;
	s->disk_total_bytes = p->disk_total_bytes;
	s->disk_limit_bytes = p->disk_limit_bytes;
	s->processes = p->processes;
	s->uptime_ms = p->uptime_ms;
	/* A figure the daemon refused: unknown, and so is CPU for cpus. */
	s->cpus_known = !p->cpus_unknown;
	s->cpu_known = p->cpu_known && s->cpus_known;
	s->memory_known = !p->memory_unknown;
	s->disk_known = !p->disk_unknown;
	s->processes_known = !p->processes_unknown;
}

/* One sample, which may come in several frames (more). */
struct sample {
	struct al_lane_stats *v;
	const struct al_lane_stats **ptrs;
	size_t n;
};

/* 1 with a whole sample in s, 0 at a frame of it, -1 on failure. */
static int
stats_frame(const AlResponse *resp, struct sample *s, int64_t *time_ms,
    struct al_error *err)
{
	const Agentlane__V1__StatsList *l;

	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_STATS_LIST) {
		al_error_from_response(err, resp);
		return -1;
	}
	l = resp->stats_list;
	if (l->n_lanes > AL_STATS_LANES_MAX - s->n) {
		al_set_error(err, AL_PROTOCOL, "a stats sample of more than %d "
		    "lanes", AL_STATS_LANES_MAX);
		return -1;
	}
	for (size_t i = 0; i < l->n_lanes; i++) {
		lane_stats_from_proto(&s->v[s->n], l->lanes[i]);
		s->ptrs[s->n] = &s->v[s->n];
		s->n++;
	}
	*time_ms = l->time_ms;
	return l->more ? 0 : 1;
}

static int
do_stats(struct al_client *c, const struct al_stats_opts *o,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__GetStats gs = AGENTLANE__V1__GET_STATS__INIT;
	struct sample s = { NULL, NULL, 0 };
	struct al_conn conn;
	int64_t t = 0;
	int rc = -1, r;

	if (o->sample == NULL || o->nlanes > AL_STATS_LANES_MAX ||
	    o->interval_ms > UINT32_MAX) {
		al_set_error(err, AL_INVALID_ARGUMENT, o->sample == NULL ?
		    "al_stats needs a sample callback" : "al_stats: at most "
		    "256 lanes, an interval below 2^32 ms");
		return -1;
	}
	if ((s.v = calloc(AL_STATS_LANES_MAX, sizeof *s.v)) == NULL ||
	    (s.ptrs = calloc(AL_STATS_LANES_MAX, sizeof *s.ptrs)) == NULL) {
		free(s.v);
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	gs.lanes = (char **)o->lanes;
	gs.n_lanes = o->nlanes;
	gs.stream = o->stream;
	gs.interval_ms = (uint32_t)o->interval_ms;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_GET_STATS;
	req.get_stats = &gs;
	if (al_conn_open(c, &conn, &req, err) == -1)
		goto out;
	for (;;) {
		AlResponse *resp = al_conn_recv(&conn, err);

		if (resp == NULL)
			break;
		r = stats_frame(resp, &s, &t, err);
		al_response_free(resp);
		if (r == -1)
			break;
		if (r == 0)
			continue;
		if (!o->sample(s.ptrs, s.n, t, o->arg) || !o->stream) {
			rc = 0;
			break;
		}
		s.n = 0;
	}
	al_conn_close(&conn);
out:
	free(s.v);
	free(s.ptrs);
	return rc;
}

AL_API enum al_code
al_stats(struct al_client *c, const struct al_stats_opts *o,
    struct al_error *err)
{
	struct al_stats_opts opts;
	struct al_error local;

	err = al_error_begin(err, &local);
	if (o == NULL) {
		al_set_error(err, AL_INVALID_ARGUMENT, "al_stats needs options");
		return AL_INVALID_ARGUMENT;
	}
	if (al_opts_copy(&opts, sizeof opts, o, err) == -1)
		return al_result(-1, err);
	return al_result(do_stats(c, &opts, err), err);
}
