/*
 * agent-lanectl's help, made from the command table (commands.c) and the
 * global options here; tests/regress/cli-help.sh checks it against the man
 * page, docs/agent-lanectl.1, both ways. Below the parser (options.c),
 * which answers --help with it: this file calls nothing of ours.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

/* The one rule for plain numbers (proto/units.h), as agent-laned says it. */
#define UNITS_TEXT \
	"Durations: 90s, 30m, 2h, 1h30m, 1.5h, 1d. Sizes: 512M, 8G, 8GiB, 8GB,\n" \
	"1.5G (binary multiples). Durations and sizes carry their unit: a plain\n" \
	"number is taken only where the name says its unit (--max-bytes) or it\n" \
	"counts things (--cpus), and 0 is zero in any unit.\n"

const struct ctl_option ctl_global_options[] = {
	{ 0, "host", "URL", "the daemon: ssh://[USER@]HOST[:PORT] (through "
	    "ssh) or unix:///PATH (default: $AGENT_LANE_HOST, else the current "
	    "context)" },
	{ 0, "context", "NAME", "the daemon of this context (default: "
	    "$AGENT_LANE_CONTEXT, else `context use`'s)" },
	{ 0, "socket", "PATH", "the daemon's socket (default: $AGENT_LANE_SOCKET, "
	    "else ~/.agent-lane/run/agent-laned.sock)" },
	{ 0, "json", NULL, "print JSON (every command that prints something)" },
	{ 'h', "help", NULL, "show help and exit" },
	{ 0, NULL, NULL, NULL },
};


const struct ctl_command *
ctl_command_find(const struct ctl *ctl, const char *name)
{
	for (size_t i = 0; i < ctl->ncommands; i++) {
		const struct ctl_command *c = &ctl->commands[i];

		if (strcmp(c->name, name) == 0 || ctl_word_in(c->alias, name))
			return c;
	}
	return NULL;
}

bool
ctl_word_in(const char *words, const char *name)
{
	size_t len = strlen(name);

	while (words != NULL && *words != '\0') {
		size_t w = strcspn(words, " ");

		if (w == len && strncmp(words, name, len) == 0)
			return true;
		words += w;
		words += strspn(words, " ");
	}
	return false;
}

void
ctl_put_words(FILE *f, const char *words, const char *sep, bool lead)
{
	bool first = !lead;

	while (words != NULL && *words != '\0') {
		size_t w = strcspn(words, " ");

		fprintf(f, "%s%.*s", first ? "" : sep, (int)w, words);
		first = false;
		words += w;
		words += strspn(words, " ");
	}
}

/* Prints text from column col on, wrapped before column 79. */
static void
wrap(FILE *f, const char *text, int col)
{
	int at = col;

	while (*text != '\0') {
		size_t w = strcspn(text, " ");

		if (at > col && at + 1 + (int)w > 78) {
			fprintf(f, "\n%*s", col, "");
			at = col;
		} else if (at > col) {
			fputc(' ', f);
			at++;
		}
		fprintf(f, "%.*s", (int)w, text);
		at += (int)w;
		text += w;
		while (*text == ' ')
			text++;
	}
	fputc('\n', f);
}

static void
print_options(FILE *f, const struct ctl_option *o)
{
	for (; o->name != NULL; o++) {
		char left[64];

		if (o->short_name != 0)
			snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name,
			    o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof left, "    --%s%s%s", o->name,
			    o->arg ? " " : "", o->arg ? o->arg : "");
		if (strlen(left) > 24)
			fprintf(f, "  %s\n%28s", left, "");
		else
			fprintf(f, "  %-24s  ", left);
		wrap(f, o->help, 28);
	}
}

/* "  build NAME  summary", the summaries aligned, with their aliases. */
static void
print_subcommands(FILE *f, const struct ctl_subcommand *subs)
{
	fprintf(f, "\nSubcommands:\n");
	for (const struct ctl_subcommand *s = subs; s->name != NULL; s++) {
		char left[128], text[512];

		snprintf(left, sizeof left, "%s%s%s", s->name,
		    s->operands[0] != '\0' ? " " : "", s->operands);
		if (s->alias != NULL)
			snprintf(text, sizeof text, "%s (also: %s)", s->summary,
			    s->alias);
		else
			snprintf(text, sizeof text, "%s", s->summary);
		if (strlen(left) > 16)
			fprintf(f, "  %s\n%20s", left, "");
		else
			fprintf(f, "  %-16s  ", left);
		wrap(f, text, 20);
	}
}

void
ctl_help(FILE *f, const struct ctl *ctl, const struct ctl_command *c)
{
	if (c == NULL) {
		fprintf(f, "usage: agent-lanectl [--host URL | --context NAME | "
		    "--socket PATH] [--json]\n"
		    "                     COMMAND [OPTIONS] [ARGS]\n"
		    "       agent-lanectl -h | --help | -V | --version\n\n"
		    "Commands:\n");
		for (size_t i = 0; i < ctl->ncommands; i++)
			if (!ctl->commands[i].hidden)
				fprintf(f, "  %-12s%s\n", ctl->commands[i].name,
				    ctl->commands[i].summary);
		fprintf(f, "\nGlobal options, accepted anywhere before \"--\":\n");
		print_options(f, ctl_global_options);
		fprintf(f, "  -V, --version             print the client's "
		    "version and exit\n\n"
		    UNITS_TEXT "\n"
		    "`agent-lanectl help COMMAND` or `agent-lanectl COMMAND "
		    "--help` shows a\ncommand's options; agent-lanectl(1) has "
		    "the details. The daemon is\nagent-laned(8): `agent-lanectl "
		    "daemon install` sets it up as a service.\n");
		return;
	}
	if (c->subcommands != NULL) {
		fprintf(f, "usage: agent-lanectl %s%s ", c->name,
		    c->options[0].name != NULL ? " [OPTIONS]" : "");
		for (const struct ctl_subcommand *s = c->subcommands;
		    s->name != NULL; s++)
			fprintf(f, "%s%s", s == c->subcommands ? "" : "|",
			    s->name);
		fprintf(f, " ...\n");
	} else
		fprintf(f, "usage: agent-lanectl %s%s%s%s\n", c->name,
		    c->options[0].name != NULL ? " [OPTIONS]" : "",
		    c->operands[0] != '\0' ? " " : "", c->operands);
	for (const char *a = c->alias; a != NULL && *a != '\0';) {
		size_t w = strcspn(a, " ");

		fprintf(f, "       agent-lanectl %.*s ...\n", (int)w, a);
		a += w;
		a += strspn(a, " ");
	}
	fprintf(f, "\n%c%s.\n", toupper((unsigned char)c->summary[0]),
	    c->summary + 1);
	if (c->subcommands != NULL)
		print_subcommands(f, c->subcommands);
	if (c->text != NULL)
		fprintf(f, "\n%s", c->text);
	if (c->options[0].name != NULL) {
		fprintf(f, "\nOptions:\n");
		print_options(f, c->options);
	}
	fprintf(f, "\nGlobal options:\n");
	print_options(f, ctl_global_options);
	if (c->units)
		fprintf(f, "\n" UNITS_TEXT);
}
