/* The commands about agent-lanectl itself: help and version. */
#include <stdio.h>

#include "ctl.h"
#include "wire.h"

int
cmd_help(struct ctl *ctl, int argc, char **argv)
{
	const struct ctl_command *c;
	struct ctl_parsed p;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands == 0) {
		ctl_help(stdout, ctl, NULL);
		return 0;
	}
	if (p.noperands > 1)
		return ctl_usage("usage: agent-lanectl help [COMMAND]");
	if ((c = ctl_command_find(ctl, p.operands[0])) == NULL || c->hidden)
		return ctl_usage("help: no such command \"%s\" (see "
		    "agent-lanectl help)", p.operands[0]);
	ctl_help(stdout, ctl, c);
	return 0;
}

int
cmd_version(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_parsed p;
	struct al_daemon_info info;
	struct al_error err;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands > 0)
		return ctl_usage("version takes no arguments");
	if (al_hello(ctl->client, &info, &err) != AL_OK) {
		/* The client's version is worth printing all the same. */
		if (ctl->json) {
			printf("{\"client\":{\"version\":");
			ctl_json_string(stdout, AGENT_LANE_VERSION);
			printf(",\"protocol\":%u},\"daemon\":null}\n",
			    WIRE_PROTOCOL_VERSION);
		} else
			printf("agent-lanectl %s (protocol %u)\n",
			    AGENT_LANE_VERSION, WIRE_PROTOCOL_VERSION);
		return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	}
	if (ctl->json) {
		printf("{\"client\":{\"version\":");
		ctl_json_string(stdout, AGENT_LANE_VERSION);
		printf(",\"protocol\":%u},\"daemon\":{\"version\":",
		    WIRE_PROTOCOL_VERSION);
		ctl_json_string(stdout, info.version);
		printf(",\"protocol\":%u}}\n", info.protocol_version);
		return 0;
	}
	printf("agent-lanectl %s (protocol %u)\n", AGENT_LANE_VERSION,
	    WIRE_PROTOCOL_VERSION);
	printf("agent-laned %s (protocol %u)\n", info.version,
	    info.protocol_version);
	return 0;
}
