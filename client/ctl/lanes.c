/* Lane commands: create, ls, show, rm, extend, events, reap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "text.h"
#include "units.h"


void
ctl_create_progress(const char *phase, const char *message, void *arg)
{
	struct ctl_create_state *cs = arg;

	if (strcmp(phase, "registered") == 0) {
		snprintf(cs->name, sizeof cs->name, "%s", message);
		/*
		 * --no-wait: the registry holds the lane now, so its name is
		 * good. Ending the call (as ^C would: the lane is detached, so
		 * the daemon carries on) is how a caller lets go of a create.
		 */
		if (cs->no_wait)
			al_interrupt();
	}
	ctl_progress_phase(phase, message);
}

int
ctl_create_failed(struct ctl *ctl, const struct ctl_create_state *cs,
    const struct al_error *err, bool detach, int status)
{
	const char *cmd = ctl->cmd->name;
	char msg[256], hint[256];

	/* Ended with a newline before anything else is said. */
	ctl_progress_end(ctl_interrupted() ? "interrupted" : "failed");
	if (ctl_interrupted()) {
		/*
		 * Our connection is closed: the daemon destroys a lane whose
		 * creator left before ready. Say which, since main dies of
		 * the signal next and nothing else will.
		 */
		if (cs->name[0] != '\0')
			snprintf(msg, sizeof msg, "%s interrupted; lane %s %s",
			    cmd, cs->name, detach ? "carries on (--detach)" :
			    "is being destroyed");
		else
			snprintf(msg, sizeof msg, "%s interrupted; %s", cmd,
			    detach ? "the lane carries on (--detach)" :
			    "any lane it began is being destroyed");
		/* The message names the lane already. */
		ctl_report(ctl, CTL_CODE_INTERRUPTED, NULL, NULL, msg, NULL);
		return status;
	}
	/* A cancelled creation (rm by another client) keeps no logs. */
	if (cs->name[0] == '\0' || err->code == AL_CANCELLED)
		return ctl_fail(ctl, err, status);
	/* A lane that failed keeps its Lima logs until rm: say where. */
	snprintf(hint, sizeof hint, "lane %s failed; `agent-lanectl logs %s` "
	    "shows its boot and hostagent logs (kept until `agent-lanectl rm "
	    "%s`)", cs->name, cs->name, cs->name);
	ctl_report(ctl, al_code_name(err->code), NULL, NULL, err->message, hint);
	return ctl_exit_status(err, status);
}

/* --label KEY=VALUE into labels[*n]. */
static int
parse_label(const char *v, struct al_label *labels, size_t *n)
{
	const char *eq = strchr(v, '=');

	if (eq == NULL || eq == v)
		return ctl_usage("--label needs KEY=VALUE");
	if (*n == AL_LABELS_MAX)
		return ctl_usage("at most %d labels", AL_LABELS_MAX);
	if ((size_t)(eq - v) >= sizeof labels[0].key ||
	    strlen(eq + 1) >= sizeof labels[0].value)
		return ctl_usage("--label %.*s: too long (keys up to %zu bytes, "
		    "values up to %zu)", (int)(eq - v), v,
		    sizeof labels[0].key - 1, sizeof labels[0].value - 1);
	/* JSON output carries label values: they must be text. */
	if (!ctl_utf8_text(eq + 1))
		return ctl_usage("--label %.*s: the value must be valid UTF-8 "
		    "without control characters", (int)(eq - v), v);
	memcpy(labels[*n].key, v, (size_t)(eq - v));
	labels[*n].key[eq - v] = '\0';
	snprintf(labels[*n].value, sizeof labels[*n].value, "%s", eq + 1);
	(*n)++;
	return 0;
}

/*
 * --secret NAME[@HOST[,HOST...]] into a->secrets[*n]: the value is ours,
 * $NAME, as with exec --env NAME, so that it is never on a command line.
 * Hosts are checked by the daemon, the one place that decides.
 */
static int
parse_secret(const char *v, struct ctl_create_args *a, size_t *n)
{
	char name[TEXT_SECRET_NAME_MAX + 1], *save = NULL, *h;
	const char *hosts, *value;
	struct al_secret *s = &a->secrets[*n];

	if (!text_secret_spec(v, name, &hosts))
		return ctl_usage("--secret needs NAME[@HOST[,HOST...]], NAME a "
		    "variable name ([A-Za-z_][A-Za-z0-9_], up to %d)",
		    TEXT_SECRET_NAME_MAX);
	if (*n == AL_SECRETS_MAX)
		return ctl_usage("at most %d --secret", AL_SECRETS_MAX);
	for (size_t i = 0; i < *n; i++)
		if (strcmp(a->secrets[i].name, name) == 0)
			return ctl_usage("--secret %s is given twice", name);
	if ((value = getenv(name)) == NULL)
		return ctl_usage("--secret %s: $%s is not set (the value comes "
		    "from our environment, never from the command line)", name,
		    name);
	if (!text_secret_value_valid(value, strlen(value)))
		return ctl_usage("--secret %s: $%s must be 1-%d bytes of "
		    "printable ASCII without a space at either end", name, name,
		    TEXT_SECRET_VALUE_MAX);
	snprintf(a->secret_names[*n], sizeof a->secret_names[*n], "%s", name);
	s->name = a->secret_names[*n];
	s->value = value;
	s->hosts = a->secret_hostv[*n];
	s->nhosts = 0;
	if (hosts != NULL) {
		if (strlen(hosts) >= sizeof a->secret_hosts[*n])
			return ctl_usage("--secret %s: the host list is longer "
			    "than %d bytes", name, AL_SECRET_HOSTS_TEXT_MAX);
		snprintf(a->secret_hosts[*n], sizeof a->secret_hosts[*n], "%s",
		    hosts);
		for (h = strtok_r(a->secret_hosts[*n], ",", &save); h != NULL;
		    h = strtok_r(NULL, ",", &save)) {
			if (s->nhosts == AL_SECRET_HOSTS_MAX)
				return ctl_usage("--secret %s: at most %d hosts",
				    name, AL_SECRET_HOSTS_MAX);
			a->secret_hostv[*n][s->nhosts++] = h;
		}
		if (s->nhosts == 0)
			return ctl_usage("--secret %s@: no host", name);
	}
	(*n)++;
	return 0;
}

/*
 * One --secret-header NAME=HEADER[,HEADER...] into a->secret_headers;
 * NAME is one of the --secret names, given before or after. The headers
 * are checked here as the daemon checks them, so that a bad one is a
 * usage error before any value travels.
 */
static int
parse_secret_header(const char *v, struct al_create_opts *o,
    struct ctl_create_args *a)
{
	char name[TEXT_SECRET_NAME_MAX + 1], list[AL_SECRET_HEADERS_TEXT_MAX];
	char *save = NULL, *h;
	const char *hl;
	size_t k = 0, added = 0;

	if (!text_secret_header_spec(v, name, &hl))
		return ctl_usage("--secret-header needs NAME=HEADER"
		    "[,HEADER...], NAME one of the --secret names");
	while (k < o->nsecrets && strcmp(a->secrets[k].name, name) != 0)
		k++;
	if (k == o->nsecrets)
		return ctl_usage("--secret-header %s: no --secret %s", name,
		    name);
	if (strlen(hl) >= sizeof list)
		return ctl_usage("--secret-header %s: the header list is "
		    "longer than %zu bytes", name, sizeof list - 1);
	snprintf(list, sizeof list, "%s", hl);
	for (h = strtok_r(list, ",", &save); h != NULL;
	    h = strtok_r(NULL, ",", &save), added++) {
		size_t n = 0;
		bool dup = false;
		char *d;

		if (!text_secret_header_valid(h))
			return ctl_usage("--secret-header %s: \"%.80s\" "
			    "cannot carry a credential: a header name is an "
			    "HTTP token of 1-%d characters, and not Host, "
			    "Connection, Content-Length, Transfer-Encoding, "
			    "another framing or hop-by-hop header, or Cookie",
			    name, h, AL_SECRET_HEADER_MAX);
		for (size_t j = 0; j < o->nsecret_headers; j++) {
			if (strcmp(a->secret_headers[j].secret, name) != 0)
				continue;
			n++;
			dup |= strcasecmp(a->secret_headers[j].header, h) == 0;
		}
		if (dup)
			continue;	/* named already */
		if (n == AL_SECRET_HEADERS_MAX)
			return ctl_usage("--secret-header %s: at most %d "
			    "headers", name, AL_SECRET_HEADERS_MAX);
		d = a->secret_header_names[o->nsecret_headers];
		snprintf(d, AL_SECRET_HEADER_MAX + 1, "%s", h);
		a->secret_headers[o->nsecret_headers].secret =
		    a->secrets[k].name;
		a->secret_headers[o->nsecret_headers++].header = d;
	}
	if (added == 0)
		return ctl_usage("--secret-header %s: no header", name);
	return 0;
}

/* Every --secret-header, once every --secret is known. */
static int
parse_secret_headers(const struct ctl_parsed *p, struct al_create_opts *o,
    struct ctl_create_args *a)
{
	int rc;

	o->secret_headers = a->secret_headers;
	for (size_t i = 0; i < p->nopts; i++)
		if (ctl_is(&p->opts[i], "secret-header") &&
		    (rc = parse_secret_header(p->opts[i].value, o, a)) != 0)
			return rc;
	return 0;
}

int
ctl_create_prepare(struct ctl *ctl, const struct ctl_parsed *p,
    struct al_create_opts *o, struct ctl_create_args *a)
{
	const char *paths[AL_IMAGE_SCRIPTS_MAX];
	size_t npaths = 0;
	const char *v;
	uint64_t n;
	int rc;

	for (size_t i = 0; i < p->nopts; i++) {
		v = p->opts[i].value;
		if (ctl_is(&p->opts[i], "cpus")) {
			if (!ctl_uint(v, 1024, &n) || n == 0)
				return ctl_usage("--cpus needs a positive number");
			o->cpus = (uint32_t)n;
		} else if (ctl_is(&p->opts[i], "memory")) {
			if ((rc = ctl_opt_memory("--memory", v,
			    &o->memory_mib)) != 0)
				return rc;
		} else if (ctl_is(&p->opts[i], "disk")) {
			if ((rc = ctl_opt_disk("--disk", v, &o->disk_gib)) != 0)
				return rc;
		} else if (ctl_is(&p->opts[i], "timeout")) {
			if ((rc = ctl_opt_duration("--timeout", v, 1000,
			    &n)) != 0)
				return rc;
			o->timeout_s = n / 1000;
		} else if (ctl_is(&p->opts[i], "idle-timeout")) {
			if ((rc = ctl_opt_duration("--idle-timeout", v, 1000,
			    &n)) != 0)
				return rc;
			o->idle_timeout_s = n / 1000;
		} else if (ctl_is(&p->opts[i], "detach"))
			o->detach = true;
		else if (ctl_is(&p->opts[i], "name")) {
			/* "" would be no alias at all: say so, not ignore it. */
			if (v[0] == '\0')
				return ctl_usage("%s: --name needs an alias "
				    "([a-z0-9][a-z0-9._-], up to 63)",
				    p->cmd->name);
			/* Checked by the daemon, the one place that decides. */
			o->alias = v;
		}
		else if (ctl_is(&p->opts[i], "label")) {
			if ((rc = parse_label(v, a->labels, &o->nlabels)) != 0)
				return rc;
		} else if (ctl_is(&p->opts[i], "image")) {
			if (v[0] == '\0')
				return ctl_usage("%s: --image needs an image name",
				    p->cmd->name);
			o->image = v;
		}
		else if (ctl_is(&p->opts[i], "quiet"))
			a->quiet = true;
		else if (ctl_is(&p->opts[i], "provision")) {
			if (npaths == AL_IMAGE_SCRIPTS_MAX)
				return ctl_usage("at most %d provision scripts",
				    AL_IMAGE_SCRIPTS_MAX);
			paths[npaths++] = v;
		} else if (ctl_is(&p->opts[i], "network")) {
			if (strcmp(v, "none") != 0 && strcmp(v, "internet") != 0 &&
			    strcmp(v, "allow") != 0)
				return ctl_usage("--network is none, internet or "
				    "allow");
			o->network = v;
		} else if (ctl_is(&p->opts[i], "allow")) {
			if (v[0] == '\0')
				return ctl_usage("%s: --allow needs a host or "
				    "*.domain", p->cmd->name);
			if (o->nallow == AL_ALLOW_MAX)
				return ctl_usage("at most %d --allow hosts",
				    AL_ALLOW_MAX);
			a->allow[o->nallow++] = v;
		} else if (ctl_is(&p->opts[i], "sudo"))
			o->sudo = true;
		else if (ctl_is(&p->opts[i], "secret")) {
			if ((rc = parse_secret(v, a, &o->nsecrets)) != 0)
				return rc;
		}
	}
	o->secrets = a->secrets;
	if ((rc = parse_secret_headers(p, o, a)) != 0)
		return rc;
	/* The daemon's default may be allow: only it can tell. */
	if (o->nallow > 0 && o->network != NULL &&
	    strcmp(o->network, "allow") != 0)
		return ctl_usage("%s: --allow needs --network allow",
		    p->cmd->name);
	o->allow = a->allow;
	if (npaths > 0 && o->image != NULL)
		return ctl_usage("%s: --image and --provision exclude each "
		    "other", p->cmd->name);
	if (npaths > 0) {
		/* Named by content: the same scripts give the same image. */
		struct al_image_build_opts bo = AL_IMAGE_BUILD_OPTS_INIT;

		if ((rc = ctl_build_image(ctl, &bo, paths, npaths, &a->im)) != 0)
			return rc;
		o->image = a->im.name;
	}
	o->labels = a->labels;
	return 0;
}

/*
 * --no-wait, once registered: the name, or with --json the little that is
 * known yet (the call was ended, so no other call can be made).
 */
static int
created_no_wait(struct ctl *ctl, const struct ctl_create_state *cs)
{
	ctl_progress_end("creating");
	if (ctl->json) {
		fputs("{\"name\":", stdout);
		ctl_json_string(stdout, cs->name);
		fputs(",\"state\":\"creating\"}\n", stdout);
	} else
		printf("%s\n", cs->name);
	return 0;
}

int
cmd_create(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_create_state cs = { .name = "" };
	struct al_create_opts o = AL_CREATE_OPTS_INIT;
	struct ctl_create_args a = { .quiet = false };
	struct ctl_parsed p;
	struct al_lane lane;
	struct al_error err;
	int rc;

	o.progress = ctl_create_progress;
	o.arg = &cs;
	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands > 0)
		return ctl_usage("create: unexpected argument %s (see "
		    "agent-lanectl help create)", p.operands[0]);
	if ((rc = ctl_create_prepare(ctl, &p, &o, &a)) != 0)
		return rc;
	for (size_t i = 0; i < p.nopts; i++)
		if (ctl_is(&p.opts[i], "no-wait"))
			cs.no_wait = o.detach = true;
	ctl_progress_start("create", a.quiet);
	ctl_progress_phase("connecting", "");
	if (al_create(ctl->client, &o, &lane, &err) != AL_OK) {
		if (cs.no_wait && cs.name[0] != '\0' && !ctl_interrupted())
			return created_no_wait(ctl, &cs);
		return ctl_create_failed(ctl, &cs, &err, o.detach,
		    CTL_EXIT_FAILURE);
	}
	ctl_progress_end("ready");
	if (ctl->json) {
		struct al_lane_secrets *sec;
		struct al_lane_net net;

		/* As show --json prints it: with its policy and secrets. */
		if (al_get_secrets(ctl->client, lane.name, &lane, &net, &sec,
		    &err) != AL_OK)
			return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
		ctl_lane_json(stdout, &lane, &net, sec);
		fputc('\n', stdout);
		al_lane_secrets_free(sec, 1);
	} else
		printf("%s\n", lane.name);
	return 0;
}

/* Destroyed or failed: its deadline no longer applies. */
static bool
lane_ended(const struct al_lane *l)
{
	return l->ended_at_ms != 0 || l->state == AL_LANE_DESTROYED ||
	    l->state == AL_LANE_FAILED;
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

/*
 * One --filter: label=KEY=VALUE (or label=KEY), state=STATE, name=PREFIX
 * (of the al- name or the alias), alias=ALIAS.
 */
struct filter {
	enum { F_LABEL, F_STATE, F_NAME, F_ALIAS } kind;
	const char *key;	/* F_LABEL */
	size_t keylen;
	const char *value;	/* F_LABEL: NULL for any value; else the word */
	int state;
};

static const int states[] = {
	AL_LANE_CREATING, AL_LANE_READY, AL_LANE_DESTROYING, AL_LANE_DESTROYED,
	AL_LANE_FAILED, AL_LANE_POOLED, AL_LANE_BOOTING,
};

static int
parse_filter(const char *v, struct filter *f)
{
	const char *eq;

	memset(f, 0, sizeof *f);
	if (strncmp(v, "label=", 6) == 0 && v[6] != '\0' && v[6] != '=') {
		f->kind = F_LABEL;
		f->key = v + 6;
		eq = strchr(f->key, '=');
		f->keylen = eq != NULL ? (size_t)(eq - f->key) : strlen(f->key);
		f->value = eq != NULL ? eq + 1 : NULL;
		return 0;
	}
	if (strncmp(v, "state=", 6) == 0) {
		f->kind = F_STATE;
		for (size_t i = 0; i < sizeof states / sizeof *states; i++)
			if (strcmp(v + 6, al_state_name(states[i])) == 0) {
				f->state = states[i];
				return 0;
			}
		return ctl_usage("--filter %s: the states are creating, ready, "
		    "destroying, destroyed, failed, pooled and booting", v);
	}
	if (strncmp(v, "name=", 5) == 0) {
		f->kind = F_NAME;
		f->value = v + 5;
		return 0;
	}
	if (strncmp(v, "alias=", 6) == 0) {
		f->kind = F_ALIAS;
		f->value = v + 6;
		return 0;
	}
	return ctl_usage("--filter %s: use label=KEY=VALUE, label=KEY, "
	    "state=STATE, name=PREFIX or alias=ALIAS", v);
}

static bool
filter_match(const struct filter *f, const struct al_lane *l)
{
	switch (f->kind) {
	case F_STATE:
		return l->state == f->state;
	case F_NAME:
		return strncmp(l->name, f->value, strlen(f->value)) == 0 ||
		    (l->alias[0] != '\0' && strncmp(l->alias, f->value,
		    strlen(f->value)) == 0);
	case F_ALIAS:
		return strcmp(l->alias, f->value) == 0;
	case F_LABEL:
		for (size_t i = 0; i < l->nlabels; i++)
			if (strlen(l->labels[i].key) == f->keylen &&
			    strncmp(l->labels[i].key, f->key, f->keylen) == 0)
				return f->value == NULL ||
				    strcmp(l->labels[i].value, f->value) == 0;
		return false;
	}
	return false;
}

/*
 * "k=v,k2=v2", or "-" for none; cut to the buffer. A value with a comma
 * or a double quote in it is quoted ("a=\"x,y\"", with \" and \\), so
 * that the commas between labels stay the only bare ones.
 */
static void
labels_text(const struct al_lane *l, char *buf, size_t len)
{
	size_t off = 0;

	snprintf(buf, len, "-");
	for (size_t i = 0; i < l->nlabels && off + 1 < len; i++) {
		const char *v = l->labels[i].value;
		bool quote = strpbrk(v, ",\"") != NULL;
		int n = snprintf(buf + off, len - off, "%s%s=%s", i ? "," : "",
		    l->labels[i].key, quote ? "\"" : v);

		if (n < 0)
			break;
		off += (size_t)n;
		for (; quote && *v != '\0' && off + 2 < len; v++) {
			if (*v == '"' || *v == '\\')
				buf[off++] = '\\';
			buf[off++] = *v;
		}
		if (quote && off + 1 < len) {
			buf[off++] = '"';
			buf[off] = '\0';
		}
	}
}

/* As docker's tables: the ALIAS column as wide as its longest shown. */
static int
alias_width(const struct al_lane *lanes, size_t n,
    const struct filter *filters, size_t nfilters)
{
	int w = 12;

	for (size_t i = 0; i < n; i++) {
		bool match = true;

		for (size_t k = 0; k < nfilters && match; k++)
			match = filter_match(&filters[k], &lanes[i]);
		if (match && (int)strlen(lanes[i].alias) > w)
			w = (int)strlen(lanes[i].alias);
	}
	return w;
}

int
cmd_ls(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_parsed p;
	struct al_lane *lanes;
	struct al_lane_net *nets;
	struct al_lane_secrets *secs;
	struct al_error err;
	struct filter *filters;
	bool all = false, quiet = false, first = true;
	size_t n, nfilters = 0;
	int aliasw;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands > 0)
		return ctl_usage("ls: unexpected argument %s (see agent-lanectl "
		    "help ls)", p.operands[0]);
	if ((filters = calloc(p.nopts + 1, sizeof *filters)) == NULL) {
		ctl_errx("out of memory");
		return CTL_EXIT_FAILURE;
	}
	for (size_t i = 0; i < p.nopts; i++) {
		if (ctl_is(&p.opts[i], "all"))
			all = true;
		else if (ctl_is(&p.opts[i], "quiet"))
			quiet = true;
		else if (ctl_is(&p.opts[i], "filter")) {
			if ((rc = parse_filter(p.opts[i].value,
			    &filters[nfilters])) != 0) {
				free(filters);
				return rc;
			}
			/*
			 * Asking for ended or warm-pool lanes by state
			 * implies --all.
			 */
			if (filters[nfilters].kind == F_STATE &&
			    (filters[nfilters].state == AL_LANE_DESTROYED ||
			    filters[nfilters].state == AL_LANE_FAILED ||
			    filters[nfilters].state == AL_LANE_POOLED))
				all = true;
			nfilters++;
		}
	}
	if (quiet && ctl->json) {
		free(filters);
		return ctl_usage("ls: -q and --json are alternatives");
	}
	if (al_list_secrets(ctl->client, all, &lanes, &nets, &secs, &n,
	    &err) != AL_OK) {
		free(filters);
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	}
	aliasw = alias_width(lanes, n, filters, nfilters);
	if (ctl->json)
		fputc('[', stdout);
	else if (!quiet)
		printf("%-20s %-*s %-10s %4s %8s %7s  %-20s  %-16s %s\n",
		    "NAME", aliasw, "ALIAS", "STATE", "CPUS", "MEMORY", "DISK",
		    "CREATED", "DEADLINE", "LABELS");
	for (size_t i = 0; i < n; i++) {
		char created[32], deadline[48], mem[16], disk[16], lab[256];
		bool match = true;

		for (size_t k = 0; k < nfilters && match; k++)
			match = filter_match(&filters[k], &lanes[i]);
		if (!match)
			continue;
		if (ctl->json) {
			if (!first)
				fputc(',', stdout);
			ctl_lane_json(stdout, &lanes[i], &nets[i], &secs[i]);
		} else if (quiet)
			printf("%s\n", lanes[i].name);
		else {
			ctl_time(lanes[i].created_at_ms, created, sizeof created);
			if (lane_ended(&lanes[i]))
				snprintf(deadline, sizeof deadline, "ended");
			else
				relative(lanes[i].deadline_ms, deadline,
				    sizeof deadline);
			ctl_bytes((uint64_t)lanes[i].memory_mib << 20, mem,
			    sizeof mem);
			ctl_bytes((uint64_t)lanes[i].disk_gib << 30, disk,
			    sizeof disk);
			labels_text(&lanes[i], lab, sizeof lab);
			printf("%-20s %-*s %-10s %4u %8s %7s  %-20s  "
			    "%-16s %s\n", lanes[i].name, aliasw,
			    lanes[i].alias[0] ? lanes[i].alias : "-",
			    al_state_name(lanes[i].state),
			    lanes[i].cpus, mem, disk, created,
			    deadline, lab);
		}
		first = false;
	}
	if (ctl->json)
		fputs("]\n", stdout);
	al_lanes_free(lanes);
	al_lane_nets_free(nets);
	al_lane_secrets_free(secs, n);
	free(filters);
	return 0;
}

/* The network policy lines of show. */
static void
show_net(const struct al_lane_net *net)
{
	if (net->network[0] == '\0') {
		printf("network:      - (made before network policies)\n");
		return;
	}
	printf("network:      %s%s\n", net->network, net->sudo ?
	    " (--sudo: guest root kept)" : "");
	if (strcmp(net->network, "allow") == 0) {
		printf("allow:        ");
		for (const char *p = net->allow; *p != '\0'; p++)
			putchar(*p == '\n' ? ' ' : *p);
		printf("%s\n", net->nallow == 0 ? "- (nothing)" : "");
	}
	/* allow lanes, and internet lanes with secrets. */
	if (net->proxy_port != 0)
		printf("proxy:        127.0.0.1:%u (guest: 192.168.5.2:%u)\n",
		    (unsigned)net->proxy_port, (unsigned)net->proxy_port);
	printf("policy:       %s\n", net->policy[0] != '\0' ? net->policy :
	    "- (decided before ready)");
	if (net->note[0] != '\0')
		printf("policy note:  %s\n", net->note);
}

/*
 * The secrets lines of show: names, hosts and the secret's own headers
 * (the values are not ours; the default credential headers are implied).
 */
static void
show_secrets(const struct al_lane_secrets *sec)
{
	for (size_t i = 0; i < sec->n; i++) {
		const char *h = al_lane_secret_headers(sec, i, NULL);

		printf("secret:       %s for ", sec->v[i].name);
		for (const char *p = sec->v[i].hosts; *p != '\0'; p++)
			putchar(*p == '\n' ? ' ' : *p);
		if (h != NULL && *h != '\0') {
			fputs(", also in headers ", stdout);
			for (const char *p = h; *p != '\0'; p++)
				putchar(*p == '\n' ? ',' : *p);
		}
		putchar('\n');
	}
}

int
cmd_show(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_parsed p;
	struct al_lane l;
	struct al_lane_net net;
	struct al_lane_secrets *sec;
	struct al_error err;
	char t[32], rel[48], size[16];
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands != 1)
		return ctl_usage("usage: agent-lanectl show [--json] LANE");
	if (al_get_secrets(ctl->client, p.operands[0], &l, &net, &sec,
	    &err) != AL_OK)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (ctl->json) {
		ctl_lane_json(stdout, &l, &net, sec);
		fputc('\n', stdout);
		al_lane_secrets_free(sec, 1);
		return 0;
	}
	printf("name:         %s\n", l.name);
	printf("alias:        %s\n", l.alias[0] ? l.alias : "-");
	printf("state:        %s\n", al_state_name(l.state));
	printf("cpus:         %u\n", l.cpus);
	ctl_bytes((uint64_t)l.memory_mib << 20, size, sizeof size);
	printf("memory:       %s\n", size);
	ctl_bytes((uint64_t)l.disk_gib << 30, size, sizeof size);
	printf("disk:         %s\n", size);
	ctl_time(l.created_at_ms, t, sizeof t);
	printf("created:      %s\n", t);
	ctl_time(l.deadline_ms, t, sizeof t);
	/* An ended lane has no deadline left to count down to. */
	if (lane_ended(&l))
		snprintf(rel, sizeof rel, "lane %s", al_state_name(l.state));
	else
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
	show_net(&net);
	show_secrets(sec);
	al_lane_secrets_free(sec, 1);
	return 0;
}

int
cmd_rm(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_parsed p;
	struct al_lane l, *lanes = NULL;
	struct al_error err;
	char (*names)[AL_NAME_MAX];
	size_t n = 0, ndone = 0;
	bool all = false, force = false;
	int rc = 0;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	rc = 0;
	for (size_t i = 0; i < p.nopts; i++) {
		if (ctl_is(&p.opts[i], "all"))
			all = true;
		else if (ctl_is(&p.opts[i], "force"))
			force = true;
	}
	if (all && p.noperands > 0)
		return ctl_usage("rm: --all or lane names, not both");
	/* "rm $(ls -q)" with no lanes: nothing to do, but only with -f. */
	if (!all && p.noperands == 0 && !force)
		return ctl_usage("usage: agent-lanectl rm [-f] LANE... | "
		    "rm --all");
	if (all && al_list(ctl->client, false, &lanes, &n, &err) != AL_OK)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (!all)
		n = p.noperands;
	if ((names = calloc(n + 1, sizeof *names)) == NULL) {
		al_lanes_free(lanes);
		ctl_errx("out of memory");
		return CTL_EXIT_FAILURE;
	}
	for (size_t i = 0; i < n && !ctl_interrupted(); i++) {
		const char *name = all ? lanes[i].name : p.operands[i];

		if (al_destroy(ctl->client, name, &l, &err) != AL_OK) {
			/* -f: gone already, or never was, is what was asked. */
			if (force && err.code == AL_NOT_FOUND)
				continue;
			if (!ctl_interrupted())
				ctl_report(ctl, al_code_name(err.code), NULL,
				    name, err.message, NULL);
			if (rc != CTL_EXIT_USAGE)
				rc = ctl_exit_status(&err, CTL_EXIT_FAILURE);
			/* No daemon: the next lanes would say the same. */
			if (err.code == AL_CONNECT)
				break;
			continue;
		}
		snprintf(names[ndone], sizeof names[ndone], "%s", l.name);
		/* As each one is done, so that an interrupted rm tells. */
		if (!ctl->json) {
			printf("%s\n", names[ndone]);
			fflush(stdout);
		}
		ndone++;
	}
	if (ctl->json) {
		ctl_json_names(stdout, names, ndone);
		fputc('\n', stdout);
	}
	free(names);
	al_lanes_free(lanes);
	return rc;
}

int
cmd_extend(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_parsed p;
	struct al_lane l;
	struct al_error err;
	uint64_t ms;
	bool capped;
	char t[32];
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands != 2)
		return ctl_usage("usage: agent-lanectl extend LANE DURATION");
	if ((rc = ctl_opt_duration("extend: DURATION", p.operands[1], 1000,
	    &ms)) != 0)
		return rc;
	if (al_extend(ctl->client, p.operands[0], ms / 1000, &l, &capped,
	    &err) != AL_OK)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (ctl->json) {
		struct al_lane_secrets *sec;
		struct al_lane_net net;

		/* The lane as every command prints it: policy and secrets. */
		if (al_get_secrets(ctl->client, l.name, &l, &net, &sec,
		    &err) != AL_OK)
			return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
		fputs("{\"lane\":", stdout);
		ctl_lane_json(stdout, &l, &net, sec);
		al_lane_secrets_free(sec, 1);
		printf(",\"capped\":%s}\n", capped ? "true" : "false");
		return 0;
	}
	ctl_time(l.deadline_ms, t, sizeof t);
	printf("%s deadline %s%s\n", l.name, t,
	    capped ? " (capped by max_lifetime)" : "");
	return 0;
}

static void
print_event(const struct al_event *e, bool json, bool first)
{
	char t[32];

	ctl_time(e->time_ms, t, sizeof t);
	if (!json) {
		printf("%s  %-18s %s\n", t, e->event, e->detail);
		return;
	}
	if (!first)
		fputc(',', stdout);
	fprintf(stdout, "{\"time_ms\":%lld,\"time\":", (long long)e->time_ms);
	ctl_json_string(stdout, t);
	fputs(",\"event\":", stdout);
	ctl_json_string(stdout, e->event);
	fputs(",\"detail\":", stdout);
	ctl_json_string(stdout, e->detail);
	fputc('}', stdout);
}

static bool
same_event(const struct al_event *a, const struct al_event *b)
{
	return a->time_ms == b->time_ms && strcmp(a->event, b->event) == 0 &&
	    strcmp(a->detail, b->detail) == 0;
}

/*
 * events -f: polls and prints what follows the last event printed (the
 * oldest audit events may be trimmed meanwhile, so not by count), until
 * the lane has ended and its last events are out.
 */
static int
events_follow(struct ctl *ctl, const char *name, bool json)
{
	struct al_event last, *ev;
	struct al_lane l;
	struct al_error err;
	bool have = false, ended = false;
	size_t n, from;

	for (;;) {
		/* The state first: events up to the end are then all listed. */
		if (al_get(ctl->client, name, &l, &err) != AL_OK)
			return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
		ended = l.state == AL_LANE_DESTROYED || l.state == AL_LANE_FAILED;
		if (al_events(ctl->client, name, &ev, &n, &err) != AL_OK)
			return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
		from = 0;
		if (have) {
			from = n;
			for (size_t i = n; i > 0; i--)
				if (same_event(&ev[i - 1], &last)) {
					from = i;
					break;
				}
			if (from == n && n > 0 && !same_event(&ev[n - 1], &last))
				from = 0;	/* all new since (trimmed) */
		}
		for (size_t i = from; i < n; i++) {
			if (json) {
				print_event(&ev[i], true, true);
				fputc('\n', stdout);
			} else
				print_event(&ev[i], false, true);
		}
		if (n > 0) {
			last = ev[n - 1];
			have = true;
		}
		al_events_free(ev);
		if (fflush(stdout) == EOF)
			return CTL_EXIT_FAILURE;
		if (ended)
			return 0;
		usleep(500 * 1000);
		if (ctl_interrupted())
			return 0;
	}
}

int
cmd_events(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_parsed p;
	struct al_event *ev;
	struct al_error err;
	bool follow = false;
	size_t n;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	for (size_t i = 0; i < p.nopts; i++)
		if (ctl_is(&p.opts[i], "follow"))
			follow = true;
	if (p.noperands != 1)
		return ctl_usage("usage: agent-lanectl events [-f] [--json] LANE");
	if (follow)
		return events_follow(ctl, p.operands[0], ctl->json);
	if (al_events(ctl->client, p.operands[0], &ev, &n, &err) != AL_OK)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (ctl->json)
		fputc('[', stdout);
	for (size_t i = 0; i < n; i++)
		print_event(&ev[i], ctl->json, i == 0);
	if (ctl->json)
		fputs("]\n", stdout);
	al_events_free(ev);
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
	struct ctl_parsed p;
	struct al_reap_report rep;
	struct al_error err;
	bool orphans = false;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands > 0)
		return ctl_usage("reap: unexpected argument %s", p.operands[0]);
	for (size_t i = 0; i < p.nopts; i++)
		if (ctl_is(&p.opts[i], "orphans"))
			orphans = true;
	if (al_reap(ctl->client, orphans, &rep, &err) != AL_OK)
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	if (ctl->json) {
		fputs("{\"destroyed\":", stdout);
		ctl_json_names(stdout, rep.destroyed, rep.ndestroyed);
		fputs(",\"pending\":", stdout);
		ctl_json_names(stdout, rep.pending, rep.npending);
		fputs(",\"orphans\":", stdout);
		ctl_json_names(stdout, rep.orphans, rep.norphans);
		fputs(",\"deleted_orphans\":", stdout);
		ctl_json_names(stdout, rep.deleted_orphans, rep.ndeleted_orphans);
		fputs("}\n", stdout);
		al_reap_report_free(&rep);
		return 0;
	}
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
