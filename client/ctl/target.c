/*
 * Which daemon a command talks to, as Docker decides it: --host or
 * --socket, else --context, else $AGENT_LANE_HOST or $AGENT_LANE_SOCKET,
 * else $AGENT_LANE_CONTEXT, else the current context, else the local
 * socket. Commands that act on this host alone (system dial-stdio, daemon)
 * take only a local socket and never follow a context, so that a context
 * cannot make dial-stdio dial itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctxstore.h"
#include "wire.h"

/* The context name into ctl's target; 0 or the exit status (said). */
static int
from_context(struct ctl *ctl, const char *name, const char *from,
    struct ctx *c)
{
	char err[1400];
	int rc;

	if (strcmp(name, CTX_DEFAULT) == 0) {
		c->name[0] = '\0';
		snprintf(ctl->target_name, sizeof ctl->target_name, "%s",
		    CTX_DEFAULT);
		ctl->target_from = from;
		return 0;
	}
	if ((rc = ctx_load(name, c, err, sizeof err)) == 1) {
		ctl_errx("%s: no context \"%s\" (see agent-lanectl context ls%s)",
		    from, name, strcmp(from, "current context") == 0 ?
		    "; agent-lanectl context use default goes back to the local "
		    "socket" : "");
		return CTL_EXIT_USAGE;
	}
	if (rc != 0) {
		ctl_errx("context %s: %s", name, err);
		return CTL_EXIT_FAILURE;
	}
	snprintf(ctl->target_name, sizeof ctl->target_name, "%s", name);
	ctl->target_from = from;
	return 0;
}

/* What the command line and environment choose; 0 or the status. */
static int
choose(struct ctl *ctl, struct ctx *c, const char **host,
    const char **socket)
{
	const char *env;
	char cur[CTX_NAME_MAX + 1], err[1400];
	bool local = ctl->cmd != NULL && ctl->cmd->reach == CTL_REACH_LOCAL;

	*host = *socket = NULL;
	c->name[0] = '\0';
	snprintf(ctl->target_name, sizeof ctl->target_name, "%s", CTX_DEFAULT);
	if (ctl->host != NULL && ctl->socket != NULL)
		return ctl_usage("--host or --socket, not both");
	if (ctl->context != NULL && (ctl->host != NULL || ctl->socket != NULL))
		return ctl_usage("--context or --%s, not both",
		    ctl->host != NULL ? "host" : "socket");
	if (local && (ctl->context != NULL || (ctl->host != NULL &&
	    strncmp(ctl->host, "unix://", 7) != 0)))
		return ctl_usage("%s acts on this host: it takes --socket PATH "
		    "or --host unix:///PATH only", ctl->cmd->name);
	if (ctl->host != NULL) {
		*host = ctl->host;
		ctl->target_from = "--host";
		return 0;
	}
	if (ctl->socket != NULL) {
		*socket = ctl->socket;
		ctl->target_from = "--socket";
		return 0;
	}
	if (ctl->context != NULL)
		return from_context(ctl, ctl->context, "--context", c);
	if (!local && (env = getenv(WIRE_HOST_ENV)) != NULL && env[0] != '\0') {
		*host = env;
		ctl->target_from = "$" WIRE_HOST_ENV;
		return 0;
	}
	if ((env = getenv(WIRE_SOCKET_ENV)) != NULL && env[0] != '\0') {
		ctl->target_from = "$" WIRE_SOCKET_ENV;
		return 0;
	}
	if (local) {
		ctl->target_from = "the local socket";
		return 0;
	}
	if ((env = getenv("AGENT_LANE_CONTEXT")) != NULL && env[0] != '\0')
		return from_context(ctl, env, "$AGENT_LANE_CONTEXT", c);
	if (ctx_current(cur, err, sizeof err) == -1) {
		ctl_errx("the current context: %s", err);
		return CTL_EXIT_FAILURE;
	}
	if (strcmp(cur, CTX_DEFAULT) != 0)
		return from_context(ctl, cur, "current context", c);
	ctl->target_from = "the local socket";
	return 0;
}

int
ctl_client_open(struct ctl *ctl)
{
	struct al_client_opts o = AL_CLIENT_OPTS_INIT;
	const char *host, *socket;
	struct al_error err;
	struct ctx c;
	int rc;

	if (ctl->client != NULL)
		return 0;
	if ((rc = choose(ctl, &c, &host, &socket)) != 0)
		return rc;
	o.name = "agent-lanectl/" AGENT_LANE_VERSION;
	if (c.name[0] != '\0') {
		o.host = c.host;
		o.remote_command = c.remote_command;
	} else
		o.host = host;
	if (o.host == NULL) {
		/* --socket, $AGENT_LANE_SOCKET or the default: a path. */
		if ((ctl->client = al_client_new(socket, o.name)) == NULL) {
			ctl_errx("out of memory");
			return CTL_EXIT_FAILURE;
		}
		return 0;
	}
	if ((ctl->client = al_client_open(&o, &err)) == NULL) {
		char msg[sizeof err.message + 80];

		/* Where the bad URL came from: a context, or a variable. */
		if (c.name[0] != '\0')
			snprintf(msg, sizeof msg, "context %s: ", c.name);
		else if (ctl->target_from != NULL &&
		    ctl->target_from[0] == '$')
			snprintf(msg, sizeof msg, "%s: ", ctl->target_from);
		else
			msg[0] = '\0';
		ctl_errx("%s%s", msg, err.message);
		return err.code == AL_INVALID_ARGUMENT ? CTL_EXIT_USAGE :
		    CTL_EXIT_FAILURE;
	}
	return 0;
}
