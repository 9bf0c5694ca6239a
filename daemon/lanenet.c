#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <event2/dns.h>
#include <event2/event.h>

#include "audit.h"
#include "laned.h"
#include "lane.h"
#include "lanenet.h"
#include "laneproxy.h"
#include "lanesecret.h"
#include "lima.h"
#include "log.h"
#include "netpolicy.h"
#include "proc.h"
#include "proxy.h"
#include "proxyreq.h"
#include "registry.h"
#include "secret.h"
#include "tlsca.h"
#include "util.h"
#include "wire.h"

/* Every variable a lane gives its execs fits (lanenet_exec_env). */
_Static_assert(LANENET_ENV_MAX >= 8 + 5 + LANESECRET_MAX,
    "a lane's exec environment does not fit");
_Static_assert(LANENET_ENV_LEN > TEXT_SECRET_NAME_MAX + 1 + LANESECRET_PH_LEN &&
    LANENET_ENV_LEN > sizeof("NODE_EXTRA_CA_CERTS=" NETPOLICY_CA_FILE),
    "a lane's exec variable does not fit");

/* `limactl info` prints a few KiB; anything past this is not limactl. */
#define INFO_OUTPUT_MAX (1u << 20)
#define VERSION_OUTPUT_MAX 4096

enum probe_state { PROBE_IDLE, PROBE_VERSION, PROBE_INFO, PROBE_KNOWN };

/* A lane (found again by name) or a call waiting for the facts. */
struct net_waiter {
	char name[LANE_NAME_SIZE];
	void (*go)(struct lane *);
	void (*fn)(struct laned *, void *);
	void *arg;
};

struct lanenet {
	enum probe_state state;
	/* What the last probe learned (valid once KNOWN). */
	bool version_ok;
	char version[64];
	char version_why[512];
	bool guest_net_none;
	char driver[32];		/* `limactl info`: lanes' VM type */
	/* Why the last probe failed, for lanes that waited on it. */
	char probe_error[256];
	struct net_waiter *waiters;
	size_t nwaiters;
};

void
lanenet_init(struct laned *d)
{
	d->net = xcalloc(1, sizeof *d->net);
}

void
lanenet_free(struct laned *d)
{
	if (d->net == NULL)
		return;
	/* Calls still waiting learn of the shutdown (and free themselves). */
	for (size_t i = 0; i < d->net->nwaiters; i++)
		if (d->net->waiters[i].fn != NULL)
			d->net->waiters[i].fn(d, d->net->waiters[i].arg);
	free(d->net->waiters);
	free(d->net);
	d->net = NULL;
}

bool
lanenet_known(const struct laned *d)
{
	return d->net != NULL && d->net->state == PROBE_KNOWN;
}

/* The probe ended (known, or failed): every waiting lane carries on. */
static void
probe_finish(struct laned *d)
{
	struct lanenet *n = d->net;
	struct net_waiter *w = n->waiters;
	size_t nw = n->nwaiters;

	n->waiters = NULL;
	n->nwaiters = 0;
	for (size_t i = 0; i < nw; i++) {
		struct lane *l;

		if (w[i].fn != NULL) {
			w[i].fn(d, w[i].arg);
			continue;
		}
		l = lane_find(d, w[i].name);
		if (l == NULL || !l->net_wait)
			continue;
		l->net_wait = false;
		if ((l->state == LANE_CREATING || l->state == LANE_POOLED) &&
		    !l->destroy_pending && l->step == LANE_STEP_NONE)
			w[i].go(l);
	}
	free(w);
}

static void
probe_failed(struct laned *d, const char *why)
{
	struct lanenet *n = d->net;

	str_copy(n->probe_error, why, sizeof n->probe_error);
	str_sanitize(n->probe_error);
	log_warnx("limactl probe: %s", n->probe_error);
	n->state = PROBE_IDLE;
	probe_finish(d);
}

/* Root with a limactl that refuses it: every lane would fail to start. */
static void
probe_root_warn(struct laned *d)
{
	if (d->uid == 0)
		log_warnx("running as root: the real limactl refuses to run as "
		    "root, so lanes will fail to start; run agent-laned as "
		    "the user who owns the lanes");
}

static struct proc *
probe_spawn(struct laned *d, char **argv, size_t cap, const char *what,
    proc_done_cb done)
{
	struct proc_spec ps;
	struct proc *p;
	char err[256];

	memset(&ps, 0, sizeof ps);
	ps.argv = argv;
	ps.envp = lima_envp(d->lima);
	ps.out = PROC_OUT_CAPTURE;
	ps.out_cap = cap;
	ps.timeout_ms = d->cfg.command_timeout_ms;
	ps.what = what;
	p = proc_spawn(d->base, &d->procs, &ps, done, d, err, sizeof err);
	lima_argv_free(argv);
	if (p == NULL)
		probe_failed(d, err);
	return p;
}

static void
info_done(struct proc *p, int status, void *arg)
{
	struct laned *d = arg;
	struct lanenet *n = d->net;
	const char *out;
	size_t len;
	char err[256];

	if (d->shutting_down)
		return;
	/*
	 * Lima's own `info` has no guestNetwork key: its guests have a
	 * network and the rules are loaded and checked. A limactl whose info
	 * cannot be read is treated the same way (the check then decides).
	 */
	n->guest_net_none = false;
	n->driver[0] = '\0';
	out = proc_stdout(p, &len);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && out != NULL) {
		if (lima_info_guest_network_none(d->lima, out, len,
		    &n->guest_net_none, err, sizeof err) == -1)
			log_warnx("limactl info: %s", err);
		lima_info_driver(d->lima, out, len, n->driver,
		    sizeof n->driver);
	} else
		log_warnx("limactl info failed; guests are taken to have a "
		    "network");
	n->state = PROBE_KNOWN;
	n->probe_error[0] = '\0';
	log_info("limactl %s: %s%s", n->version, n->version_ok ?
	    "lanes can drop guest root" : n->version_why, n->guest_net_none ?
	    "; the driver reports guests without a network (simulator): "
	    "network policies cannot be enforced or checked" : "");
	/*
	 * Only Lima's own limactl refuses root (the simulator, whose guests
	 * have no network, does not): the warning is for it alone.
	 */
	if (!n->guest_net_none)
		probe_root_warn(d);
	probe_finish(d);
}

static void
version_done(struct proc *p, int status, void *arg)
{
	struct laned *d = arg;
	struct lanenet *n = d->net;
	const char *out;
	char line[128], st[32];
	size_t len;

	if (d->shutting_down)
		return;
	out = proc_stdout(p, &len);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || out == NULL) {
		char why[256], msg[160];

		/* limactl's own words (e.g. "must not run as the root user"). */
		lima_error_message(d->lima, proc_stderr(p), msg, sizeof msg);
		proc_status_string(status, st, sizeof st);
		snprintf(why, sizeof why, "limactl --version failed (%s%s%s)",
		    st, msg[0] != '\0' ? ": " : "", msg);
		if (strstr(msg, "root") != NULL)
			probe_root_warn(d);
		probe_failed(d, why);
		return;
	}
	str_copy(line, out, sizeof line);
	line[strcspn(line, "\r\n")] = '\0';
	str_sanitize_ascii(line);
	n->version_ok = netpolicy_lima_version_ok(line, n->version_why,
	    sizeof n->version_why);
	str_copy(n->version, strncmp(line, "limactl version ", 16) == 0 ?
	    line + 16 : line, sizeof n->version);
	n->state = PROBE_INFO;
	(void)probe_spawn(d, lima_argv_info(d->lima), INFO_OUTPUT_MAX,
	    "limactl info", info_done);
}

void
lanenet_probe(struct laned *d)
{
	struct lanenet *n = d->net;

	if (n->state != PROBE_IDLE)
		return;
	n->state = PROBE_VERSION;
	(void)probe_spawn(d, lima_argv_version(d->lima), VERSION_OUTPUT_MAX,
	    "limactl --version", version_done);
}

void
lanenet_when_known(struct lane *l, void (*go)(struct lane *))
{
	struct lanenet *n = l->d->net;

	if (n->state == PROBE_KNOWN) {
		go(l);
		return;
	}
	n->waiters = xreallocarray(n->waiters, n->nwaiters + 1,
	    sizeof *n->waiters);
	memset(&n->waiters[n->nwaiters], 0, sizeof *n->waiters);
	str_copy(n->waiters[n->nwaiters].name, l->name, LANE_NAME_SIZE);
	n->waiters[n->nwaiters++].go = go;
	l->net_wait = true;
	lanenet_probe(l->d);
}

void
lanenet_when_known_call(struct laned *d, void (*fn)(struct laned *, void *),
    void *arg)
{
	struct lanenet *n = d->net;

	if (n->state == PROBE_KNOWN) {
		fn(d, arg);
		return;
	}
	n->waiters = xreallocarray(n->waiters, n->nwaiters + 1,
	    sizeof *n->waiters);
	memset(&n->waiters[n->nwaiters], 0, sizeof *n->waiters);
	n->waiters[n->nwaiters].fn = fn;
	n->waiters[n->nwaiters++].arg = arg;
	lanenet_probe(d);
}

int
lanenet_lima_refusal(const struct laned *d, bool has_policy, bool sudo,
    char *why, size_t whylen)
{
	const struct lanenet *n = d->net;

	if (!has_policy || sudo)
		return 0;
	if (n->state != PROBE_KNOWN) {
		/* Only after a failed probe: lanes never pass unchecked. */
		if (n->probe_error[0] == '\0')
			return 0;
		snprintf(why, whylen, "cannot learn the Lima version (%s); a "
		    "lane without guest root needs Lima " NETPOLICY_LIMA_MIN
		    " or later", n->probe_error);
		return AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION;
	}
	if (n->version_ok)
		return 0;
	str_copy(why, n->version_why, whylen);
	return AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION;
}

bool
lanenet_guest_unenforceable(const struct laned *d, char *note, size_t notelen)
{
	if (d->net->state != PROBE_KNOWN || !d->net->guest_net_none)
		return false;
	snprintf(note, notelen, "not enforced: limactl %s reports guests "
	    "without a network (the test simulator), so no rule was loaded "
	    "or checked", d->net->version);
	return true;
}

void
lanenet_facts(const struct laned *d, struct lanenet_facts *f)
{
	const struct lanenet *n = d->net;

	memset(f, 0, sizeof *f);
	f->known = n->state == PROBE_KNOWN;
	str_copy(f->error, n->probe_error, sizeof f->error);
	if (!f->known) {
		snprintf(f->note, sizeof f->note, "not known yet: %s",
		    n->probe_error[0] != '\0' ? n->probe_error :
		    "limactl has not been asked (the first create asks it)");
		return;
	}
	str_copy(f->version, n->version, sizeof f->version);
	str_copy(f->driver, n->driver, sizeof f->driver);
	if (n->guest_net_none)
		(void)lanenet_guest_unenforceable(d, f->note, sizeof f->note);
	else if (!n->version_ok)
		str_copy(f->note, n->version_why, sizeof f->note);
	else {
		f->enforceable = true;
		snprintf(f->note, sizeof f->note, "rules loaded in each guest "
		    "at boot and checked before ready; a lane made with --sudo "
		    "keeps guest root, so its policy is advisory");
	}
}

/* ---- A lane proxy after a restart, and the exec environment ---- */

bool
lanenet_recover(struct lane *l)
{
	char err[256], why[320];

	/*
	 * An internet lane has one too when it came from the pool, or had
	 * secrets: its rules let the guest reach that port as well.
	 */
	if (!l->net_policy || l->net_mode == NETPOLICY_NONE ||
	    l->px.port == 0 || l->px.proxy != NULL)
		return true;
	/*
	 * Only a lane that lives on needs it: a ready one. A pool lane with
	 * a proxy is destroyed (lane_recover): its CA key is gone.
	 */
	if (l->state != LANE_READY || l->deadline_ms <= time_now_ms())
		return true;
	if (laneproxy_open(&l->px, l->d, l->name, l->allow, l->net_mode,
	    l->state == LANE_POOLED, l->px.port, err, sizeof err) == 0) {
		lane_event(l, "proxy", "bound again after an agent-laned "
		    "restart");
		return true;
	}
	snprintf(why, sizeof why, "its proxy port %u cannot be bound again "
	    "(%s)", (unsigned)l->px.port, err);
	log_warnx("lane %s: %s", l->name, why);
	lane_destroy(l, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE, why);
	return false;
}

/* Appends "NAME=VALUE" to env (the asserts above make room for all). */
static void
env_add(struct lanenet_env *env, bool secret, const char *name,
    const char *value)
{
	if (env->n == LANENET_ENV_MAX)
		fatalx("lane exec environment: more than %d variables",
		    LANENET_ENV_MAX);
	(void)snprintf(env->v[env->n], sizeof env->v[env->n], "%s=%s", name,
	    value);
	env->secret[env->n++] = secret;
}

void
lanenet_exec_env(struct laned *d, const char *name, struct lanenet_env *env)
{
	/*
	 * Tools that replace the trust store are pointed at the whole system
	 * bundle (which holds the lane CA), never at the CA alone: hosts the
	 * proxy tunnels must still verify. Node adds to its own store.
	 */
	static const char *const bundle_vars[] = {
		"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
		"GIT_SSL_CAINFO",
	};
	struct lane *l = name != NULL ? lane_find(d, name) : NULL;
	char pol[8][64];
	size_t np;

	memset(env, 0, sizeof *env);
	if (l == NULL || !l->net_policy)
		return;
	np = netpolicy_proxy_env((enum netpolicy_mode)l->net_mode,
	    l->px.proxy != NULL && laneproxy_in_use(l->net_policy, l->net_mode,
	    l->has_secrets) ? l->px.port : 0, pol);
	for (size_t i = 0; i < np; i++) {
		char *eq = strchr(pol[i], '=');

		*eq = '\0';
		env_add(env, false, pol[i], eq + 1);
	}
	if (l->px.ca != NULL && np > 0) {
		env_add(env, false, "NODE_EXTRA_CA_CERTS", NETPOLICY_CA_FILE);
		for (size_t i = 0; i < 4; i++)
			env_add(env, false, bundle_vars[i],
			    NETPOLICY_CA_BUNDLE);
	}
	for (size_t i = 0; l->px.secrets != NULL && i < l->px.secrets->n; i++)
		env_add(env, true, l->px.secrets->v[i].name,
		    l->px.secrets->v[i].placeholder);
}

bool
lanenet_env_secret(const struct lanenet_env *env, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < env->n; i++)
		if (env->secret[i] && strncmp(env->v[i], name, nl) == 0 &&
		    env->v[i][nl] == '=')
			return true;
	return false;
}
