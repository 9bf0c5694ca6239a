/*
 * Subcommands (image build, context use, system dial-stdio ...): each
 * command that has them carries a table of them, as ctl_commands[] holds
 * the commands, so that dispatch, --json, the help (help.c) and the
 * completion scripts (completion.c) are read from one place. Adding a
 * subcommand (a `port` or a `network` command's) is one entry in its
 * command's table and its handler; nothing here changes.
 */
#include <string.h>

#include "ctl.h"

const struct ctl_subcommand *
ctl_subcommand_find(const struct ctl_command *c, const char *name)
{
	for (const struct ctl_subcommand *s = c->subcommands;
	    s != NULL && s->name != NULL; s++)
		if (strcmp(s->name, name) == 0 || ctl_word_in(s->alias, name))
			return s;
	return NULL;
}

/* "image: no subcommand "biuld"; did you mean "build"? (build, ls, ...)" */
static int
unknown(const struct ctl_command *c, const char *word)
{
	const char *names[32], *near;
	char list[256];
	size_t n = 0, off = 0;

	list[0] = '\0';
	for (const struct ctl_subcommand *s = c->subcommands; s->name != NULL &&
	    n < sizeof names / sizeof *names; s++) {
		names[n++] = s->name;
		off += (size_t)snprintf(list + off, off < sizeof list ?
		    sizeof list - off : 0, "%s%s", n > 1 ? ", " : "", s->name);
	}
	if (word == NULL)
		return ctl_usage("%s: a subcommand is needed (%s; see "
		    "agent-lanectl help %s)", c->name, list, c->name);
	if ((near = ctl_nearest(word, names, n)) != NULL)
		return ctl_usage("%s: no subcommand \"%s\"; did you mean "
		    "\"%s\"? (see agent-lanectl help %s)", c->name, word, near,
		    c->name);
	return ctl_usage("%s: no subcommand \"%s\" (%s; see agent-lanectl "
	    "help %s)", c->name, word, list, c->name);
}

int
ctl_subcommand_run(struct ctl *ctl, int argc, char **argv)
{
	const struct ctl_subcommand *s;
	struct ctl_parsed p;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands == 0)
		return unknown(ctl->cmd, NULL);
	if ((s = ctl_subcommand_find(ctl->cmd, p.operands[0])) == NULL)
		return unknown(ctl->cmd, p.operands[0]);
	if (ctl->json && !s->json)
		return ctl_usage("%s %s: --json: it prints nothing to format",
		    ctl->cmd->name, s->name);
	return s->run(ctl, &p);
}
