/*
 * agent-lanectl option parsing, one parser for every command: options and
 * operands in any order, --name VALUE, --name=VALUE, -x VALUE, -xVALUE and
 * grouped short flags (-qa), global options anywhere before "--", and help
 * answered here, never sent to the daemon. The option tables are in the
 * command table (commands.c) and help.c, so that the parser, the help, the
 * man page test and the completion scripts cannot disagree.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* ctl_parse()'s arrays, one allocation freed by main. */
struct parsed_store {
	struct ctl_arg *opts;
	char **operands;
	char **command;
};

void
ctl_free_parsed(struct ctl *ctl)
{
	struct parsed_store *st = ctl->owned;

	if (st != NULL) {
		free(st->opts);
		free(st->operands);
		free(st->command);
		free(st);
	}
	ctl->owned = NULL;
}

bool
ctl_is(const struct ctl_arg *a, const char *name)
{
	return strcmp(a->opt->name, name) == 0;
}

static const struct ctl_option *
find_long(const struct ctl_option *opts, const char *name, size_t len)
{
	for (; opts != NULL && opts->name != NULL; opts++)
		if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
			return opts;
	return NULL;
}

static const struct ctl_option *
find_short(const struct ctl_option *opts, char c)
{
	for (; opts != NULL && opts->name != NULL; opts++)
		if (opts->short_name == c)
			return opts;
	return NULL;
}

/* The first usage error is kept; help asked anywhere still wins. */
static void __attribute__((format(printf, 2, 3)))
usage_error(char *buf, const char *fmt, ...)
{
	va_list ap;

	if (buf[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(buf, 256, fmt, ap);
	va_end(ap);
}

/*
 * docker's options that mean something else here, or nothing: the hint
 * says what does it in Agent Lane. name is the long name, or one letter.
 */
static const struct {
	const char *command, *name, *hint;
} docker_words[] = {
	{ "run", "rm", "run always destroys its lane afterwards (--keep keeps "
	    "it)" },
	{ "run", "d", "run waits for its command; for a lane that stays, "
	    "`create` and then `exec`" },
	{ "run", "detach", "run waits for its command; for a lane that stays, "
	    "`create` and then `exec`" },
};

static const char *
docker_hint(const struct ctl_command *cmd, const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof docker_words / sizeof *docker_words; i++)
		if (strcmp(docker_words[i].command, cmd->name) == 0 &&
		    strlen(docker_words[i].name) == len &&
		    strncmp(docker_words[i].name, name, len) == 0)
			return docker_words[i].hint;
	return NULL;
}

/* "unknown option --cpu; did you mean --cpus?" */
static void
unknown_long(char *err, const struct ctl_command *cmd, const char *name,
    size_t len)
{
	const char *names[128], *near, *hint;
	char word[64];
	size_t n = 0;

	if ((hint = docker_hint(cmd, name, len)) != NULL) {
		usage_error(err, "%s: unknown option --%.*s: %s", cmd->name,
		    (int)len, name, hint);
		return;
	}
	snprintf(word, sizeof word, "%.*s", (int)len, name);
	for (const struct ctl_option *o = cmd->options; o->name != NULL &&
	    n < sizeof names / sizeof *names; o++)
		names[n++] = o->name;
	for (const struct ctl_option *o = ctl_global_options; o->name != NULL &&
	    n < sizeof names / sizeof *names; o++)
		names[n++] = o->name;
	if ((near = ctl_nearest(word, names, n)) != NULL)
		usage_error(err, "%s: unknown option --%.*s; did you mean --%s?",
		    cmd->name, (int)len, name, near);
	else
		usage_error(err, "%s: unknown option --%.*s", cmd->name,
		    (int)len, name);
}

/* Records one option; the globals act on ctl at once. */
static void
take(struct ctl *ctl, struct ctl_parsed *p, const struct ctl_option *o,
    const char *value, bool *help)
{
	if (strcmp(o->name, "help") == 0)
		*help = true;
	else if (strcmp(o->name, "socket") == 0)
		ctl->socket = value;
	else if (strcmp(o->name, "host") == 0)
		ctl->host = value;
	else if (strcmp(o->name, "context") == 0)
		ctl->context = value;
	else if (strcmp(o->name, "json") == 0) {
		ctl->json = true;
		ctl_json_errors(true);
	}
	else {
		p->opts[p->nopts].opt = o;
		p->opts[p->nopts].value = value;
		p->nopts++;
	}
}

int
ctl_parse(struct ctl *ctl, int argc, char **argv, struct ctl_parsed *p)
{
	const struct ctl_command *cmd = ctl->cmd;
	struct parsed_store *st;
	const struct ctl_option *o;
	char err[256] = "";
	bool help = false, operands_only = false;
	int i, rc;

	memset(p, 0, sizeof *p);
	if (cmd == NULL) {
		/* main sets it before a command runs: cannot happen. */
		ctl_errx("%s: no such command", argv[0]);
		return CTL_EXIT_USAGE;
	}
	p->cmd = cmd;
	/* Each word is at most one option or operand: argc bounds them all. */
	if ((st = calloc(1, sizeof *st)) == NULL ||
	    (st->opts = calloc((size_t)argc, sizeof *st->opts)) == NULL ||
	    (st->operands = calloc((size_t)argc, sizeof *st->operands)) == NULL ||
	    (st->command = calloc((size_t)argc + 1, sizeof *st->command)) == NULL) {
		if (st != NULL) {
			free(st->opts);
			free(st->operands);
			free(st);
		}
		ctl_errx("out of memory");
		return CTL_EXIT_FAILURE;
	}
	ctl_free_parsed(ctl);	/* only ever one parse per run */
	ctl->owned = st;
	p->opts = st->opts;
	p->operands = st->operands;
	p->command = st->command;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (((cmd->operands_then_command > 0 &&
		    p->noperands == (size_t)cmd->operands_then_command) ||
		    cmd->operands_then_command == CTL_COMMAND_AT_ONCE) &&
		    (operands_only || a[0] != '-' || strcmp(a, "--") == 0)) {
			/* exec LANE [--] CMD...: the rest is the guest's. */
			if (!operands_only && strcmp(a, "--") == 0)
				i++;
			break;
		}
		if (operands_only || a[0] != '-' || strcmp(a, "-") == 0) {
			p->operands[p->noperands++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			operands_only = true;
			continue;
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);

			if ((o = find_long(cmd->options, name, len)) == NULL &&
			    (o = find_long(ctl_global_options, name, len)) == NULL) {
				unknown_long(err, cmd, name, len);
				continue;
			}
			if (o->arg == NULL && eq != NULL)
				usage_error(err, "%s: --%s takes no value",
				    cmd->name, o->name);
			else if (o->arg != NULL && eq == NULL && i + 1 >= argc)
				usage_error(err, "%s: --%s needs %s", cmd->name,
				    o->name, o->arg);
			else
				take(ctl, p, o, o->arg == NULL ? NULL :
				    eq != NULL ? eq + 1 : argv[++i], &help);
			continue;
		}
		/* -x, -xVALUE, -x VALUE, -qa */
		for (const char *c = a + 1; *c != '\0'; c++) {
			if ((o = find_short(cmd->options, *c)) == NULL &&
			    (o = find_short(ctl_global_options, *c)) == NULL) {
				const char *hint = docker_hint(cmd, c, 1);

				usage_error(err, "%s: unknown option -%c%s%s",
				    cmd->name, *c, hint != NULL ? ": " : "",
				    hint != NULL ? hint : "");
				break;
			}
			if (o->arg == NULL) {
				take(ctl, p, o, NULL, &help);
				continue;
			}
			if (c[1] != '\0')
				take(ctl, p, o, c + 1, &help);
			else if (i + 1 < argc)
				take(ctl, p, o, argv[++i], &help);
			else
				usage_error(err, "%s: -%c needs %s", cmd->name,
				    *c, o->arg);
			break;
		}
	}
	for (; i < argc; i++)
		p->command[p->ncommand++] = argv[i];
	p->command[p->ncommand] = NULL;

	if (help) {
		ctl_help(stdout, ctl, cmd);
		return 0;
	}
	/* A lane named "" is no lane: a usage error, not the daemon's. */
	for (size_t k = 0; err[0] == '\0' && k < p->noperands; k++)
		if (p->operands[k][0] == '\0' &&
		    (cmd->complete == CTL_COMPLETE_LANES ||
		    (cmd->complete == CTL_COMPLETE_LANE && k == 0)))
			usage_error(err, "%s: a lane name is empty", cmd->name);
	if (err[0] == '\0' && ctl->json && !cmd->json)
		usage_error(err, "%s: --json: the command prints nothing to "
		    "format", cmd->name);
	if (err[0] != '\0') {
		return ctl_usage("%s (see agent-lanectl help %s)", err,
		    cmd->name);
	}
	if (cmd->reach != CTL_REACH_NONE && (rc = ctl_client_open(ctl)) != 0)
		return rc;
	return CTL_CONTINUE;
}
