/*
 * The check of a CreateLane request against the configuration's caps and
 * the number of live lanes: no I/O, no clock, no daemon (lanecheck.h).
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "lanecheck.h"
#include "lanesecret.h"
#include "names.h"
#include "netpolicy.h"
#include "text.h"
#include "units.h"
#include "util.h"

/* Name-like keys, printable UTF-8 values: labels end up in logs and JSON. */
static bool
label_ok(const Agentlane__V1__Label *lb, char *err, size_t errlen)
{
	size_t kl = lb->key != NULL ? strlen(lb->key) : 0;
	size_t vl = lb->value != NULL ? strlen(lb->value) : 0;

	if (kl == 0 || kl > LANE_LABEL_KEY_MAX ||
	    strspn(lb->key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._/-") != kl) {
		snprintf(err, errlen, "label keys are 1-%d characters of "
		    "[A-Za-z0-9._/-]", LANE_LABEL_KEY_MAX);
		return false;
	}
	if (vl > LANE_LABEL_VALUE_MAX) {
		snprintf(err, errlen, "label values are at most %d bytes",
		    LANE_LABEL_VALUE_MAX);
		return false;
	}
	if (vl > 0 && !text_utf8_printable(lb->value)) {
		snprintf(err, errlen, "label %s: the value must be valid UTF-8 "
		    "without control characters", lb->key);
		return false;
	}
	return true;
}

int
lanecheck_net_plan(const struct config *cfg,
    const Agentlane__V1__CreateLane *req, struct lane_create_plan *plan,
    char *err, size_t errlen)
{
	enum netpolicy_mode m = (enum netpolicy_mode)cfg->network;
	size_t nallow = req != NULL ? req->n_allow : 0;

	plan->sudo = req != NULL && req->sudo;
	plan->allow[0] = '\0';
	if (req != NULL && req->network != NULL && req->network[0] != '\0' &&
	    !netpolicy_mode_parse(req->network, &m)) {
		snprintf(err, errlen, "network \"%.32s\" is not internet, none "
		    "or allow", req->network);
		str_sanitize(err);
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	plan->net_mode = (uint32_t)m;
	if (nallow > NETPOLICY_ALLOW_MAX) {
		snprintf(err, errlen, "at most %d allow patterns",
		    NETPOLICY_ALLOW_MAX);
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	if (nallow > 0 && m != NETPOLICY_ALLOW) {
		snprintf(err, errlen, "allow patterns need network allow (this "
		    "lane's network is %s)", netpolicy_mode_name(m));
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	if (m != NETPOLICY_ALLOW)
		return 0;
	if (nallow == 0) {
		/* The configured list, checked when it was read. */
		str_copy(plan->allow, cfg->allow, sizeof plan->allow);
		return 0;
	}
	for (size_t i = 0; i < nallow; i++)
		if (!netpolicy_allow_add(plan->allow, sizeof plan->allow,
		    req->allow[i] != NULL ? req->allow[i] : "", err, errlen))
			return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	return 0;
}

/*
 * The request's secrets, last of the checks (the plan owns their values
 * from here). In an allow lane the proxy lets a secret's hosts through as
 * well (proxy.h): they were named by the same creator.
 */
static int
secrets_plan(const struct config *cfg, const Agentlane__V1__CreateLane *req,
    struct lane_create_plan *plan, char *err, size_t errlen)
{
	return lanesecret_plan(cfg->secret, req->secrets, req->n_secrets,
	    &plan->secrets, err, errlen);
}

/*
 * "lifetime 2d is above the cap of 1d (max_lifetime)": both as durations
 * that parse back (agent-lanectl says them again in the unit typed).
 */
static int
over_cap(char *err, size_t errlen, const char *what, uint64_t ms,
    uint64_t cap_ms, const char *key)
{
	char v[32], cap[32];

	units_format_duration(ms, v, sizeof v);
	units_format_duration(cap_ms, cap, sizeof cap);
	snprintf(err, errlen, "%s %s is above the cap of %s (%s)", what, v, cap,
	    key);
	return AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED;
}

/* "memory 100GiB is above the cap of 16GiB (max_memory)" */
static int
size_over_cap(char *err, size_t errlen, const char *what, uint64_t bytes,
    uint64_t cap_bytes, const char *key)
{
	char v[32], cap[32];

	units_format_bytes(bytes, v, sizeof v);
	units_format_bytes(cap_bytes, cap, sizeof cap);
	snprintf(err, errlen, "%s %s is above the cap of %s (%s)", what, v, cap,
	    key);
	return AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED;
}

int
lanecheck_create(const struct config *cfg,
    const Agentlane__V1__CreateLane *req, size_t live,
    struct lane_create_plan *plan, char *err, size_t errlen)
{
	char v[32];
	int rc;

	memset(plan, 0, sizeof *plan);
	plan->cpus = req->cpus != 0 ? req->cpus : cfg->default_cpus;
	plan->memory_mib = req->memory_mib != 0 ? req->memory_mib :
	    cfg->default_memory_mib;
	plan->disk_gib = req->disk_gib != 0 ? req->disk_gib :
	    cfg->default_disk_gib;
	if (plan->cpus > cfg->max_cpus) {
		snprintf(err, errlen, "cpus %u is above the cap of %u "
		    "(max_cpus)", plan->cpus, cfg->max_cpus);
		return AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED;
	}
	if (plan->memory_mib < 256) {
		units_format_bytes((uint64_t)plan->memory_mib << 20, v, sizeof v);
		snprintf(err, errlen, "memory %s is below the floor of 256MiB",
		    v);
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	if (plan->memory_mib > cfg->max_memory_mib)
		return size_over_cap(err, errlen, "memory",
		    (uint64_t)plan->memory_mib << 20,
		    (uint64_t)cfg->max_memory_mib << 20, "max_memory");
	if (plan->disk_gib > cfg->max_disk_gib)
		return size_over_cap(err, errlen, "disk",
		    (uint64_t)plan->disk_gib << 30,
		    (uint64_t)cfg->max_disk_gib << 30, "max_disk");
	plan->lifetime_ms = req->timeout_s != 0 ? req->timeout_s * 1000 :
	    cfg->default_lifetime_ms;
	if (req->timeout_s > cfg->max_lifetime_ms / 1000 ||
	    plan->lifetime_ms > cfg->max_lifetime_ms)
		return over_cap(err, errlen, "lifetime", plan->lifetime_ms,
		    cfg->max_lifetime_ms, "max_lifetime");
	plan->idle_timeout_ms = req->idle_timeout_s != 0 ?
	    req->idle_timeout_s * 1000 : cfg->default_idle_timeout_ms;
	/* The same cap, so the same kind of error as a lifetime's. */
	if (req->idle_timeout_s > cfg->max_lifetime_ms / 1000)
		return over_cap(err, errlen, "idle timeout",
		    req->idle_timeout_s * 1000, cfg->max_lifetime_ms,
		    "max_lifetime");
	if (req->n_labels > LANE_LABELS_MAX) {
		snprintf(err, errlen, "at most %d labels", LANE_LABELS_MAX);
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	for (size_t i = 0; i < req->n_labels; i++) {
		struct lane_label *lb = &plan->labels[i];

		if (!label_ok(req->labels[i], err, errlen))
			return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
		for (size_t j = 0; j < i; j++)
			if (strcmp(req->labels[i]->key, plan->labels[j].key) ==
			    0) {
				snprintf(err, errlen, "duplicate label %s",
				    plan->labels[j].key);
				return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
			}
		str_copy(lb->key, req->labels[i]->key, sizeof lb->key);
		str_copy(lb->value, req->labels[i]->value != NULL ?
		    req->labels[i]->value : "", sizeof lb->value);
	}
	plan->nlabels = req->n_labels;
	plan->detach = req->detach;
	plan->owned = req->owned;
	if (plan->owned && plan->detach) {
		snprintf(err, errlen, "an owned lane cannot be created detached");
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	if (req->alias != NULL && req->alias[0] != '\0') {
		if (!names_alias_valid(req->alias)) {
			snprintf(err, errlen, "a lane name (--name) is 1-%d of "
			    "[a-z0-9._-], beginning with a letter or digit, not "
			    "\"al-\" or \"ali-\" (the VMs' names), and not "
			    "hex digits alone (a name prefix)", LANE_ALIAS_MAX);
			return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
		}
		str_copy(plan->alias, req->alias, sizeof plan->alias);
	}
	if (req->image != NULL && req->image[0] != '\0') {
		if (!names_image_valid(req->image)) {
			snprintf(err, errlen, "invalid image name");
			return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
		}
		str_copy(plan->image, req->image, sizeof plan->image);
	}
	if ((rc = lanecheck_net_plan(cfg, req, plan, err, errlen)) != 0)
		return rc;
	if (live >= cfg->max_lanes) {
		snprintf(err, errlen, "%zu lanes are live; the cap is %u "
		    "(max_lanes)", live, cfg->max_lanes);
		return AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED;
	}
	return secrets_plan(cfg, req, plan, err, errlen);
}

void
lanecheck_plan_clear(struct lane_create_plan *plan)
{
	lanesecret_set_free(plan->secrets);
	plan->secrets = NULL;
}

