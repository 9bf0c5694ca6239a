/*
 * agent-lanectl context: named daemons (ctxstore.c), as `docker context`.
 * create, update, ls, use, rm and show; no daemon is asked, so a broken
 * context can always be mended from here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctxstore.h"
#include "wire.h"

/* The local socket's URL, as the default context stands for it. */
static void
default_url(char *buf, size_t len)
{
	struct al_client *c = al_client_new(NULL, NULL);

	snprintf(buf, len, "%s", c != NULL ? al_client_host(c) : "");
	al_client_free(c);
}

/* A host URL and remote command the library takes: 0 or the status. */
static int
check_target(const char *host, const char *remote)
{
	struct al_client_opts o = AL_CLIENT_OPTS_INIT;
	struct al_client *c;
	struct al_error err;

	o.host = host;
	o.remote_command = remote;
	if ((c = al_client_open(&o, &err)) == NULL)
		return ctl_usage("context: %s", err.message);
	al_client_free(c);
	return 0;
}

/*
 * --description and --remote-command into c; 0 or the status. (--host is
 * a global option: the parser put it in ctl->host.)
 */
static int
take_options(const struct ctl_parsed *p, struct ctx *c)
{
	for (size_t i = 0; i < p->nopts; i++) {
		const char *v = p->opts[i].value;
		char *dst;
		size_t cap;

		if (ctl_is(&p->opts[i], "description")) {
			dst = c->description;
			cap = sizeof c->description;
		} else if (ctl_is(&p->opts[i], "remote-command")) {
			dst = c->remote_command;
			cap = sizeof c->remote_command;
		} else
			continue;
		if (strlen(v) >= cap || !ctl_utf8_text(v))
			return ctl_usage("context: --%s: printable text of at "
			    "most %zu bytes", p->opts[i].opt->name, cap - 1);
		snprintf(dst, cap, "%s", v);
	}
	return 0;
}

static void
print_ctx_json(const struct ctx *c, const char *url, bool current)
{
	printf("{\"name\":");
	ctl_json_string(stdout, c->name);
	printf(",\"current\":%s,\"description\":", current ? "true" : "false");
	ctl_json_string(stdout, c->description);
	printf(",\"host\":");
	ctl_json_string(stdout, url);
	printf(",\"remote_command\":");
	if (c->remote_command[0] != '\0')
		ctl_json_string(stdout, c->remote_command);
	else
		fputs("null", stdout);
	putchar('}');
}

static int
ctx_fail(const char *what, const char *err)
{
	ctl_errx("context %s: %s", what, err);
	return CTL_EXIT_FAILURE;
}

static int
context_write(struct ctl *ctl, const struct ctl_parsed *p, bool create)
{
	struct ctx c;
	char err[1400];
	int rc;

	if (p->noperands != 2)
		return ctl_usage("usage: agent-lanectl context %s NAME%s",
		    create ? "create" : "update", create ? " --host URL "
		    "[--description TEXT] [--remote-command PATH]" : " [--host URL] "
		    "[--description TEXT] [--remote-command PATH]");
	memset(&c, 0, sizeof c);
	if (!ctx_name_valid(p->operands[1]))
		return ctl_usage("context: \"%s\" is not a context name "
		    "([A-Za-z0-9][A-Za-z0-9_.-], up to 63; \"default\" is the "
		    "local socket)", p->operands[1]);
	if (!create && (rc = ctx_load(p->operands[1], &c, err,
	    sizeof err)) != 0)
		return rc == 1 ? ctl_usage("context update: no context \"%s\"",
		    p->operands[1]) : ctx_fail("update", err);
	snprintf(c.name, sizeof c.name, "%s", p->operands[1]);
	if ((rc = take_options(p, &c)) != 0)
		return rc;
	if (ctl->host != NULL) {
		if (strlen(ctl->host) >= sizeof c.host)
			return ctl_usage("context: --host is too long");
		snprintf(c.host, sizeof c.host, "%s", ctl->host);
	} else if (create)
		return ctl_usage("context create: --host URL is needed "
		    "(ssh://[USER@]HOST[:PORT] or unix:///PATH)");
	if ((rc = check_target(c.host, c.remote_command)) != 0)
		return rc;
	if ((rc = ctx_save(&c, create, err, sizeof err)) == 1)
		return ctl_usage("context create: \"%s\" exists (context update "
		    "changes it)", c.name);
	if (rc != 0)
		return ctx_fail(create ? "create" : "update", err);
	printf("%s\n", c.name);
	return 0;
}

static int
context_create(struct ctl *ctl, const struct ctl_parsed *p)
{
	return context_write(ctl, p, true);
}

static int
context_update(struct ctl *ctl, const struct ctl_parsed *p)
{
	return context_write(ctl, p, false);
}

static int
context_ls(struct ctl *ctl, const struct ctl_parsed *p)
{
	struct ctx *v = NULL, def;
	char err[1400], cur[CTX_NAME_MAX + 1], url[1100];
	size_t n = 0;

	if (p->noperands != 1)
		return ctl_usage("usage: agent-lanectl context ls");
	if (ctx_current(cur, err, sizeof err) == -1 ||
	    ctx_list(&v, &n, err, sizeof err) == -1)
		return ctx_fail("ls", err);
	memset(&def, 0, sizeof def);
	snprintf(def.name, sizeof def.name, "%s", CTX_DEFAULT);
	snprintf(def.description, sizeof def.description, "the local daemon");
	default_url(url, sizeof url);
	if (ctl->json) {
		putchar('[');
		print_ctx_json(&def, url, strcmp(cur, CTX_DEFAULT) == 0);
		for (size_t i = 0; i < n; i++) {
			putchar(',');
			print_ctx_json(&v[i], v[i].host, strcmp(cur, v[i].name) == 0);
		}
		puts("]");
	} else {
		printf("%-22s %-34s %s\n", "NAME", "DESCRIPTION", "HOST");
		for (size_t i = 0; i <= n; i++) {
			const struct ctx *c = i == 0 ? &def : &v[i - 1];
			char name[80];

			snprintf(name, sizeof name, "%s%s", c->name,
			    strcmp(cur, c->name) == 0 ? " *" : "");
			ctl_put_safe(stdout, name);
			printf("%*s", (int)(strlen(name) < 22 ? 23 - strlen(name) :
			    1), "");
			ctl_put_safe(stdout, c->description);
			printf("%*s", (int)(strlen(c->description) < 34 ? 35 -
			    strlen(c->description) : 1), "");
			ctl_put_safe(stdout, i == 0 ? url : c->host);
			putchar('\n');
		}
	}
	free(v);
	return 0;
}

static int
context_use(struct ctl *ctl, const struct ctl_parsed *p)
{
	struct ctx c;
	char err[1400];
	int rc;

	if (p->noperands != 2)
		return ctl_usage("usage: agent-lanectl context use NAME");
	if (strcmp(p->operands[1], CTX_DEFAULT) != 0 &&
	    (rc = ctx_load(p->operands[1], &c, err, sizeof err)) != 0)
		return rc == 1 ? ctl_usage("context use: no context \"%s\" (see "
		    "agent-lanectl context ls)", p->operands[1]) :
		    ctx_fail("use", err);
	if (ctx_set_current(p->operands[1], err, sizeof err) != 0)
		return ctx_fail("use", err);
	printf("%s\n", p->operands[1]);
	/* As docker context use: the environment still wins; say so. */
	if (getenv(WIRE_HOST_ENV) != NULL && getenv(WIRE_HOST_ENV)[0] != '\0')
		ctl_errx("note: $" WIRE_HOST_ENV " is set and overrides the "
		    "current context");
	else if (getenv(WIRE_SOCKET_ENV) != NULL &&
	    getenv(WIRE_SOCKET_ENV)[0] != '\0')
		ctl_errx("note: $" WIRE_SOCKET_ENV " is set and overrides the "
		    "current context");
	return 0;
}

static int
context_rm(struct ctl *ctl, const struct ctl_parsed *p)
{
	bool force = false;

	for (size_t i = 0; i < p->nopts; i++)
		if (ctl_is(&p->opts[i], "force"))
			force = true;
	char err[1400], cur[CTX_NAME_MAX + 1];
	int rc, status = 0;

	if (p->noperands < 2)
		return ctl_usage("usage: agent-lanectl context rm [-f] NAME...");
	if (ctx_current(cur, err, sizeof err) == -1)
		return ctx_fail("rm", err);
	for (size_t i = 1; i < p->noperands; i++) {
		const char *name = p->operands[i];

		if (strcmp(name, CTX_DEFAULT) == 0) {
			status = ctl_usage("context rm: \"default\" is the local "
			    "socket; it cannot be removed");
			continue;
		}
		/* As docker: the one in use goes only with -f, and then
		 * the local socket is current again. */
		if (strcmp(name, cur) == 0 && !force) {
			status = ctl_usage("context rm: \"%s\" is the current "
			    "context (-f removes it and goes back to default)",
			    name);
			continue;
		}
		if ((rc = ctx_remove(name, err, sizeof err)) == 1) {
			status = ctl_usage("context rm: no context \"%s\"", name);
			continue;
		}
		if (rc != 0 || (strcmp(name, cur) == 0 &&
		    ctx_set_current(CTX_DEFAULT, err, sizeof err) != 0)) {
			status = ctx_fail("rm", err);
			continue;
		}
		printf("%s\n", name);
	}
	return status;
}

/* The context in use and why: the one this command line would reach. */
static int
context_show(struct ctl *ctl, const struct ctl_parsed *p)
{
	struct ctx c;
	char err[1400], url[1100];
	const char *name;
	int rc;

	if (p->noperands > 2)
		return ctl_usage("usage: agent-lanectl context show [NAME]");
	if (p->noperands == 2)
		name = p->operands[1];
	else {
		if ((rc = ctl_client_open(ctl)) != 0)
			return rc;
		name = ctl->target_name;
	}
	memset(&c, 0, sizeof c);
	if (strcmp(name, CTX_DEFAULT) == 0) {
		snprintf(c.name, sizeof c.name, "%s", CTX_DEFAULT);
		snprintf(c.description, sizeof c.description,
		    "the local daemon");
		default_url(url, sizeof url);
	} else if ((rc = ctx_load(name, &c, err, sizeof err)) != 0)
		return rc == 1 ? ctl_usage("context show: no context \"%s\"",
		    name) : ctx_fail("show", err);
	else
		snprintf(url, sizeof url, "%s", c.host);
	/* Without NAME: what this command line reaches, flags included. */
	if (p->noperands == 1)
		snprintf(url, sizeof url, "%s", al_client_host(ctl->client));
	if (ctl->json) {
		/* current: the one this command line reaches (no NAME). */
		print_ctx_json(&c, url, p->noperands == 1);
		putchar('\n');
		return 0;
	}
	printf("name:           ");
	ctl_put_safe(stdout, c.name);
	printf("\nhost:           ");
	ctl_put_safe(stdout, url);
	printf("\ndescription:    ");
	ctl_put_safe(stdout, c.description);
	printf("\nremote command: ");
	ctl_put_safe(stdout, c.remote_command[0] ? c.remote_command :
	    "agent-lanectl (on the remote PATH)");
	if (p->noperands == 1 && ctl->target_from != NULL)
		printf("\nselected by:    %s", ctl->target_from);
	putchar('\n');
	return 0;
}

const struct ctl_subcommand ctl_context_subcommands[] = {
	{ "create", context_create, NULL, "NAME --host URL [--description TEXT] "
	    "[--remote-command PATH]", "name a daemon", false },
	{ "update", context_update, NULL, "NAME [--host URL] [--description "
	    "TEXT] [--remote-command PATH]", "change what a context says",
	    false },
	{ "ls", context_ls, "list", "", "the contexts (* the current one); "
	    "--json", true },
	{ "use", context_use, NULL, "NAME", "make it current (default: the "
	    "local socket)", false },
	{ "rm", context_rm, "remove", "NAME...", "remove contexts (-f: the "
	    "current one too)", false },
	{ "show", context_show, NULL, "[NAME]", "one context, or the one this "
	    "command line reaches and why; --json", true },
	{ NULL, NULL, NULL, NULL, NULL, false },
};
