/*
 * GetInfo: what `agent-lanectl info` shows of this daemon. Everything comes
 * from what the daemon already holds (its configuration, the limactl facts
 * lanenet.c learnt once, the pool, the lanes in memory, the registry's
 * images), plus one walk of the VM directories for the disk they take.
 */
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>

#include <fts.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "info.h"
#include "laned.h"
#include "lane.h"
#include "lanenet.h"
#include "lima.h"
#include "log.h"
#include "netpolicy.h"
#include "pool.h"
#include "registry.h"
#include "util.h"

/*
 * Entries the disk walk looks at, all directories together: a simulated
 * guest keeps its files in its instance directory, and an answer must not
 * wait on a tree of any size. Past it the sums are lower bounds.
 */
#define INFO_WALK_MAX 200000u

struct info_walk {
	size_t entries;
	bool partial;
};

/* Allocated bytes under the instance directory of name (0 if none). */
static uint64_t
info_dir_bytes(struct laned *d, const char *name, struct info_walk *w)
{
	char path[PATH_MAX];
	char *paths[2] = { path, NULL };
	uint64_t sum = 0;
	FTSENT *e;
	FTS *fts;

	if (!lima_instance_dir(d->lima, name, path, sizeof path))
		return 0;
	/* Physical, one file system, no chdir: links are not followed. */
	if ((fts = fts_open(paths, FTS_PHYSICAL | FTS_XDEV | FTS_NOCHDIR,
	    NULL)) == NULL)
		return 0;
	while ((e = fts_read(fts)) != NULL) {
		if (e->fts_info == FTS_DP)
			continue;	/* a directory's second visit */
		if (++w->entries > INFO_WALK_MAX) {
			w->partial = true;
			break;
		}
		if (e->fts_statp != NULL && e->fts_info != FTS_NS &&
		    e->fts_info != FTS_NSOK && e->fts_info != FTS_ERR &&
		    e->fts_info != FTS_DNR)
			sum += (uint64_t)e->fts_statp->st_blocks * 512u;
	}
	fts_close(fts);
	return sum;
}

static void
info_pool(struct laned *d, Agentlane__V1__PoolInfo *pi, char *note,
    size_t notelen)
{
	struct pool_status st;
	int64_t now = time_now_ms();

	pool_status(d, &st);
	pi->size = st.size;
	pi->shapes = st.shapes;
	pi->ready = st.ready;
	pi->booting = st.booting;
	note[0] = '\0';
	if (st.size == 0)
		pi->state = (char *)"off";
	else if (st.backoff_ms > 0 && st.retry_at_ms > now) {
		pi->state = (char *)"backing off";
		snprintf(note, notelen, "a pool boot failed; the next in %lld s "
		    "(see agent-lanectl logs)",
		    (long long)((st.retry_at_ms - now + 999) / 1000));
	} else if (st.ready >= st.size)
		pi->state = (char *)"full";
	else
		pi->state = (char *)"filling";
	pi->note = note;
}

/* Lanes in memory by state, and the disk their VMs take. */
static void
info_lanes(struct laned *d, Agentlane__V1__DaemonInfo *di,
    struct info_walk *w)
{
	struct lane *l;

	TAILQ_FOREACH(l, &d->lanes, entry) {
		if (l->state != LANE_POOLED)
			di->lanes_live++;
		if (l->state == LANE_READY)
			di->lanes_ready++;
		/* Pool lanes are lanes on the disk too. */
		di->lanes_disk_bytes += info_dir_bytes(d, l->name, w);
	}
}

static void
info_images(struct laned *d, Agentlane__V1__DaemonInfo *di,
    struct info_walk *w)
{
	struct image_record *imgs = NULL;
	size_t n = 0;

	if (registry_image_list(d->reg, &imgs, &n) != REG_OK) {
		log_warnx("info: cannot list the images");
		return;
	}
	di->images = (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		di->images_disk_bytes += info_dir_bytes(d, imgs[i].instance, w);
	free(imgs);
}

static void
info_answer(struct laned *d, struct conn *c)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__DaemonInfo di = AGENTLANE__V1__DAEMON_INFO__INIT;
	Agentlane__V1__Limits lim = AGENTLANE__V1__LIMITS__INIT;
	Agentlane__V1__PoolInfo pi = AGENTLANE__V1__POOL_INFO__INIT;
	struct lanenet_facts f;
	struct info_walk w = { 0, false };
	struct utsname u;
	struct statvfs vfs;
	char host[256], os[160], arch[64], pool_note[128], note[600];
	int64_t now = time_now_ms();

	if (gethostname(host, sizeof host) == -1)
		host[0] = '\0';
	host[sizeof host - 1] = '\0';
	str_sanitize_ascii(host);
	os[0] = arch[0] = '\0';
	if (uname(&u) == 0) {
		snprintf(os, sizeof os, "%s %s", u.sysname, u.release);
		str_copy(arch, u.machine, sizeof arch);
		str_sanitize_ascii(os);
		str_sanitize_ascii(arch);
	}
	lanenet_facts(d, &f);
	str_copy(note, f.note, sizeof note);
	str_sanitize(note);

	di.version = (char *)AGENT_LANE_VERSION;
	di.protocol_version = WIRE_PROTOCOL_VERSION;
	di.pid = (uint32_t)d->pid;
	di.started_at_ms = d->started_at_ms;
	di.uptime_ms = now > d->started_at_ms ?
	    (uint64_t)(now - d->started_at_ms) : 0;
	di.state_dir = d->cfg.state_dir;
	di.socket_path = d->cfg.socket_path;
	di.hostname = host;
	di.os = os;
	di.arch = arch;
	di.limactl = (char *)lima_limactl(d->lima);
	di.limactl_version = f.version;
	di.limactl_driver = f.driver;
	di.limactl_error = f.error;
	di.network_enforceable = f.enforceable;
	di.network_note = note;
	di.network_default = (char *)netpolicy_mode_name(
	    (enum netpolicy_mode)d->cfg.network);
	conn_limits(&d->cfg, &lim);
	di.limits = &lim;
	info_pool(d, &pi, pool_note, sizeof pool_note);
	di.pool = &pi;
	info_lanes(d, &di, &w);
	info_images(d, &di, &w);
	if (w.partial)
		log_warnx("info: more than %u files under the Lima home; the "
		    "disk sums are lower bounds", INFO_WALK_MAX);
	if (statvfs(lima_home(d->lima), &vfs) == 0)
		di.disk_free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	di.connections = (uint32_t)d->nconns;

	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_DAEMON_INFO;
	resp.daemon_info = &di;
	(void)conn_send(c, &resp);
	conn_finish(c);
}

/*
 * The limactl facts are learnt once, at start-up: a call that comes first
 * waits for them (or for the probe to fail, which info then reports), so
 * that info never says "not known" of what is about to be.
 */
struct info_wait {
	struct conn *c;		/* NULL once the client went */
};

static void
info_closed(struct conn *c, void *ctx)
{
	struct info_wait *w = ctx;

	w->c = NULL;
}

static const struct conn_handler info_conn_handler = {
	.closed = info_closed,
};

static void
info_known(struct laned *d, void *arg)
{
	struct info_wait *w = arg;

	if (w->c != NULL && !d->shutting_down) {
		conn_set_handler(w->c, NULL, NULL);
		info_answer(d, w->c);
	}
	free(w);
}

void
info_handle(struct laned *d, struct conn *c)
{
	struct info_wait *w;

	if (lanenet_known(d)) {
		info_answer(d, c);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->c = c;
	conn_set_handler(c, &info_conn_handler, w);
	lanenet_when_known_call(d, info_known, w);
}
