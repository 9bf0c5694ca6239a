/*
 * agent-lanectl's commands and options, and the help made from them. The
 * parser (options.c) and the completion scripts (completion.c) read the
 * same tables; tests/regress/cli-help.sh checks them against the man page,
 * docs/agent-lanectl.1, both ways. Keep the wording in step with it.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

#define UNITS_TEXT \
	"Durations: 30s, 90m, 2h, 1h30m, 1.5h, 1d; a plain number is seconds.\n" \
	"Sizes: 512M, 8G, 8GiB, 8GB, 1.5G (binary multiples); a plain number\n" \
	"is GiB for --memory and --disk and bytes for --max-bytes.\n"

const struct ctl_option ctl_global_options[] = {
	{ 0, "socket", "PATH", "the daemon's socket (default: $AGENT_LANE_SOCKET, "
	    "else ~/.agent-lane/run/agent-laned.sock)" },
	{ 0, "json", NULL, "print JSON (every command that prints something)" },
	{ 'h', "help", NULL, "show help and exit" },
	{ 0, NULL, NULL, NULL },
};

/* The options of the lane a command creates: create's and run's. */
#define LANE_OPTIONS_RESOURCES \
	{ 0, "cpus", "N", "virtual CPUs" }, \
	{ 0, "memory", "SIZE", "memory; a plain number is GiB (4, 0.5, 512M)" }, \
	{ 0, "disk", "SIZE", "disk, whole GiB; a plain number is GiB" }, \
	{ 0, "timeout", "DURATION", "hard lifetime from creation" }, \
	{ 0, "idle-timeout", "DURATION", "destroy after this long unused" }, \
	{ 0, "name", "ALIAS", "a second name for the lane, unique among live " \
	    "lanes: [a-z0-9][a-z0-9._-], up to 63" }, \
	{ 0, "label", "KEY=VALUE", "attach a label (up to 16)" }
#define LANE_OPTIONS_CONTENT \
	{ 'q', "quiet", NULL, "no progress line (there is none without a " \
	    "terminal)" }, \
	{ 0, "image", "IMAGE", "clone the lane from a built image" }, \
	{ 0, "provision", "FILE", "build (or reuse, by content) the image of " \
	    "these scripts first; repeatable" }, \
	{ 0, "network", "none|internet|allow", "the lane's egress policy " \
	    "(default: the daemon's)" }, \
	{ 0, "allow", "HOST", "with --network allow: a host or *.domain the " \
	    "lane reaches through its proxy; repeatable" }, \
	{ 0, "sudo", NULL, "keep passwordless root in the guest (the policy " \
	    "is then advisory)" }

static const struct ctl_option create_options[] = {
	LANE_OPTIONS_RESOURCES,
	{ 'd', "detach", NULL, "keep creating if we are interrupted or die" },
	LANE_OPTIONS_CONTENT,
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option run_options[] = {
	LANE_OPTIONS_RESOURCES,
	LANE_OPTIONS_CONTENT,
	{ 0, "cp", "HOST:LANEPATH", "copy into the lane before the command; "
	    "repeatable" },
	{ 0, "out", "LANEPATH:HOST", "copy out of the lane after it; "
	    "repeatable" },
	{ 0, "keep", NULL, "keep the lane afterwards (its name goes to "
	    "standard error)" },
	{ 'n', "no-stdin", NULL, "give the command no standard input" },
	{ 'w', "workdir", "DIR", "run in DIR; relative to the workspace unless "
	    "absolute" },
	{ 'e', "env", "NAME[=VALUE]", "set a variable; NAME alone takes our "
	    "value (for secrets)" },
	{ 't', "tty", NULL, "give the command a terminal in the guest" },
	{ 'i', "interactive", NULL, "with -t: send it standard input (our "
	    "terminal goes raw)" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option image_options[] = {
	{ 0, "provision", "FILE", "build: a script run as root; repeatable, "
	    "in order" },
	{ 0, "from", "IMAGE", "build: start from this image" },
	{ 0, "docker", NULL, "build: install rootless Docker Engine for the "
	    "lane user" },
	{ 0, "cpus", "N", "build: virtual CPUs of the build VM" },
	{ 0, "memory", "SIZE", "build: memory; a plain number is GiB" },
	{ 0, "disk", "SIZE", "build: disk, whole GiB (lanes get at least this)" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option ls_options[] = {
	{ 'a', "all", NULL, "ended lanes too" },
	{ 'q', "quiet", NULL, "lane names only, one a line" },
	{ 0, "filter", "FILTER", "label=KEY=VALUE, state=STATE, name=PREFIX "
	    "(of the name or alias) or alias=ALIAS; repeatable, all must match" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option no_options[] = {
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option rm_options[] = {
	{ 'a', "all", NULL, "destroy every live lane" },
	{ 'f', "force", NULL, "a lane that does not exist is not an error" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option exec_options[] = {
	{ 'n', "no-stdin", NULL, "give the command no standard input" },
	{ 'w', "workdir", "DIR", "run in DIR; relative to the workspace unless "
	    "absolute" },
	{ 'e', "env", "NAME[=VALUE]", "set a variable; NAME alone takes our "
	    "value (for secrets)" },
	{ 0, "timeout", "DURATION", "kill the command after DURATION" },
	{ 't', "tty", NULL, "give the command a terminal in the guest" },
	{ 'i', "interactive", NULL, "with -t: send it standard input (our "
	    "terminal goes raw)" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option shell_options[] = {
	{ 'w', "workdir", "DIR", "start in DIR; relative to the workspace "
	    "unless absolute" },
	{ 'e', "env", "NAME[=VALUE]", "set a variable; NAME alone takes our "
	    "value (for secrets)" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option cp_options[] = {
	{ 0, "max-bytes", "SIZE", "copies out: refuse more than SIZE bytes" },
	{ 0, "max-entries", "N", "copies out: most archive members (100000)" },
	{ 'q', "quiet", NULL, "no progress line (there is none without a "
	    "terminal)" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option events_options[] = {
	{ 'f', "follow", NULL, "keep printing new events until the lane ends" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option logs_options[] = {
	{ 'f', "follow", NULL, "keep printing what is appended (a lane's: "
	    "until it is gone)" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option reap_options[] = {
	{ 0, "orphans", NULL, "delete orphaned VMs instead of listing them" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option daemon_options[] = {
	{ 0, "no-load", NULL, "install, uninstall, status: files only, no "
	    "launchctl or systemctl" },
	{ 0, "platform", "launchd|systemd", "the service manager (default: "
	    "launchd on macOS, systemd elsewhere)" },
	{ 0, NULL, NULL, NULL },
};

const struct ctl_command ctl_commands[] = {
	{ "create", NULL, "", "create a lane, wait until ready, print its name",
	    "An option left out takes the daemon's default; values above its\n"
	    "caps are refused. --timeout and --idle-timeout take at least 1s.\n"
	    "Label values are valid UTF-8 without control characters.\n"
	    "--json prints the lane as `show --json` does.\n"
	    "--image clones a built image (see image); --provision FILE builds\n"
	    "the image of those scripts, or reuses the one with the same\n"
	    "content, then clones it. --name gives the lane an alias that every\n"
	    "command takes in place of its name while it lives; the VM keeps\n"
	    "its al- name.\n"
	    "--network internet reaches the internet but nothing on the host\n"
	    "or a private range; none reaches nothing; allow reaches only the\n"
	    "--allow hosts, over HTTP(S) through a proxy of the daemon (execs\n"
	    "get HTTP_PROXY and HTTPS_PROXY). Without --sudo the lane has no\n"
	    "guest root, so the rules hold (Lima 2.2 or later).\n",
	    create_options, 0, true, CTL_COMPLETE_NONE, NULL },
	{ "run", NULL, "[--] CMD [ARG...]",
	    "run one command in a new lane, then destroy it",
	    "Creates a lane (the create options), copies each --cp in, runs\n"
	    "the command as exec does, copies each --out out and destroys the\n"
	    "lane. --cp splits at its last colon, --out at its first. Exit\n"
	    "status: the command's (128+N if killed by signal N), 125 if Agent\n"
	    "Lane failed (a copy, the create), 2 for a usage error. A failed\n"
	    "--out fails run only when the command succeeded. The lane belongs\n"
	    "to run's connection: on ^C, on a failure, or if run is killed, the\n"
	    "daemon destroys it. --keep keeps it instead.\n",
	    run_options, CTL_COMMAND_AT_ONCE, false, CTL_COMPLETE_NONE, NULL },
	{ "ls", "list", "", "list live lanes",
	    "The table shows NAME, ALIAS, STATE, CPUS, MEMORY, DISK, CREATED\n"
	    "(UTC), DEADLINE and LABELS. STATE is creating, ready, destroying,\n"
	    "destroyed or failed. -q prints names only, so that\n"
	    "`agent-lanectl rm $(agent-lanectl ls -q)` works.\n",
	    ls_options, 0, true, CTL_COMPLETE_NONE, NULL },
	{ "show", NULL, "LANE", "show one lane",
	    "Wherever a command takes a LANE, its al- name, its alias (create\n"
	    "--name) or a prefix of its name that only one lane has will do,\n"
	    "with or without \"al-\". A prefix that fits several lanes is an\n"
	    "AMBIGUOUS error that lists them.\n",
	    no_options, 0, true, CTL_COMPLETE_LANES, NULL },
	{ "rm", NULL, "LANE... | --all", "destroy lanes; prints each one destroyed",
	    "Waits until each VM is deleted and prints the lane's name. Removing\n"
	    "a lane that has already ended succeeds. --json prints the array of\n"
	    "names destroyed.\n",
	    rm_options, 0, true, CTL_COMPLETE_LANES, NULL },
	{ "extend", NULL, "LANE DURATION", "move a lane's deadline later",
	    "The new deadline is capped at creation plus the daemon's\n"
	    "max_lifetime; the output says so when it was.\n",
	    no_options, 0, true, CTL_COMPLETE_LANE, NULL },
	{ "exec", NULL, "LANE [--] CMD [ARG...]",
	    "run a command in a lane; exits with its status",
	    "The command runs directly, not through a shell, with pipes for its\n"
	    "standard streams. Exit status: the command's, 128+N if killed by\n"
	    "signal N, 125 if Agent Lane failed the exec, 2 for a usage error.\n"
	    "Options come before the command; everything from the command on is\n"
	    "the command's own. With -t the command gets a terminal in the\n"
	    "guest instead (its output all on standard output, its size kept\n"
	    "in step with ours); -t reads no input unless -i is given too, and\n"
	    "then our terminal is raw until the command ends, so that ^C and ^Z\n"
	    "reach it. TERM is passed on.\n",
	    exec_options, 1, false, CTL_COMPLETE_LANE, NULL },
	{ "shell", NULL, "LANE", "an interactive login shell in a lane",
	    "As `exec -t -i LANE -- SHELL -l` with the guest user's shell\n"
	    "(bash or sh when it has none). Exits with the shell's status.\n",
	    shell_options, 0, false, CTL_COMPLETE_LANE, NULL },
	{ "cp", NULL, "SRC DST", "copy files into or out of a lane",
	    "One of SRC and DST is LANE:PATH, the other a host path or \"-\".\n"
	    "A relative guest PATH is in the lane's workspace. As docker cp, both\n"
	    "ways: into DST if it is a directory, under SRC's name, else at DST;\n"
	    "DST/ must be a directory; SRC/. is SRC's contents; a directory\n"
	    "merges into one already there; a file keeps its mode.\n"
	    "  cp HOSTPATH LANE:PATH    copy into the lane\n"
	    "  cp LANE:PATH HOSTPATH    copy out of it (--max-bytes: at most\n"
	    "                           that, and no more than the daemon's cap)\n"
	    "  cp - LANE:DIR            extract a tar stream from standard input\n"
	    "                           into DIR\n"
	    "  cp LANE:PATH -           write PATH as a tar stream to standard\n"
	    "                           output\n",
	    cp_options, 0, false, CTL_COMPLETE_FILES, NULL },
	{ "events", NULL, "LANE", "show a lane's audit trail",
	    "Lifecycle events, every exec (argv[0] and how it ended; never\n"
	    "its arguments or environment) and every copy (direction, guest\n"
	    "path, bytes). -f prints new events as they come until the lane\n"
	    "has ended; --json then prints one object a line.\n",
	    events_options, 0, true, CTL_COMPLETE_LANE, NULL },
	{ "logs", NULL, "[LANE]", "show the daemon's log, or a lane's boot "
	    "and hostagent logs",
	    "Without LANE: the daemon's log (its last 4 MiB at most), kept in\n"
	    "STATE_DIR/log/agent-laned.log on every host (~/.agent-lane/log/).\n"
	    "With LANE: its Lima logs, each file's last MiB under a header:\n"
	    "serial.log (the boot console), ha.stderr.log and ha.stdout.log\n"
	    "(the hostagent). A lane whose start failed keeps them, with what\n"
	    "limactl said (limactl.log), until `rm`; other lanes' logs go with\n"
	    "their VM. Control characters are shown as ? on a terminal.\n"
	    "--json prints one object a line: {\"source\": FILE, \"line\": TEXT}.\n",
	    logs_options, 0, true, CTL_COMPLETE_LANE, NULL },
	{ "reap", NULL, "", "reconcile now: destroy lanes whose VM is gone",
	    "Lists orphaned VMs (directories no live lane owns); --orphans\n"
	    "deletes them.\n",
	    reap_options, 0, true, CTL_COMPLETE_NONE, NULL },
	{ "image", NULL, "build NAME | ls | show NAME | rm NAME...",
	    "build, list, show and remove lane images",
	    "  build NAME  make a stopped, provisioned VM from the lane template:\n"
	    "              each --provision script runs as root (a #! line picks\n"
	    "              the interpreter), its output on standard error;\n"
	    "              identical inputs build nothing; prints the name.\n"
	    "              Ctrl-C cancels and deletes the half-built VM\n"
	    "  ls          the images\n"
	    "  show NAME   one image\n"
	    "  rm NAME...  remove images (refused while a lane is being cloned\n"
	    "              from one)\n"
	    "Lanes from an image get the lane template, never the image's own\n"
	    "Lima settings.\n",
	    image_options, 0, true, CTL_COMPLETE_WORDS, "build ls show rm" },
	{ "daemon", NULL, "install|uninstall|status|start|stop|restart",
	    "manage agent-laned as a per-user service",
	    "  install     write the LaunchAgent (macOS) or systemd user units\n"
	    "              and load them\n"
	    "  uninstall   unload them and remove the files\n"
	    "  status      the service's state and the daemon's; exits 3 when\n"
	    "              the daemon does not answer\n"
	    "  start, stop, restart\n"
	    "              through launchctl or systemctl --user\n"
	    "Without a service manager, run the daemon in the foreground:\n"
	    "  agent-laned --socket ~/.agent-lane/run/agent-laned.sock\n",
	    daemon_options, 0, true, CTL_COMPLETE_WORDS,
	    "install uninstall status start stop restart" },
	{ "version", NULL, "", "show the client's and the daemon's versions",
	    "agent-lanectl -V prints the client's version alone, without\n"
	    "asking the daemon.\n",
	    no_options, 0, true, CTL_COMPLETE_NONE, NULL },
	{ "help", NULL, "[COMMAND]", "show help for a command", NULL,
	    no_options, 0, false, CTL_COMPLETE_WORDS, NULL },
	{ "completion", NULL, "bash|zsh|fish", "print a shell completion script",
	    "  bash: source <(agent-lanectl completion bash)\n"
	    "  zsh:  agent-lanectl completion zsh > \"${fpath[1]}/_agent-lanectl\"\n"
	    "  fish: agent-lanectl completion fish > "
	    "~/.config/fish/completions/agent-lanectl.fish\n"
	    "`make install` installs all three.\n",
	    no_options, 0, false, CTL_COMPLETE_WORDS, "bash zsh fish" },
};
const size_t ctl_ncommands = sizeof ctl_commands / sizeof *ctl_commands;

const struct ctl_command *
ctl_command_find(const char *name)
{
	for (size_t i = 0; i < ctl_ncommands; i++)
		if (strcmp(ctl_commands[i].name, name) == 0 ||
		    (ctl_commands[i].alias != NULL &&
		    strcmp(ctl_commands[i].alias, name) == 0))
			return &ctl_commands[i];
	return NULL;
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

void
ctl_help(FILE *f, const struct ctl_command *c)
{
	if (c == NULL) {
		fprintf(f, "usage: agent-lanectl [--socket PATH] [--json] COMMAND "
		    "[OPTIONS] [ARGS]\n"
		    "       agent-lanectl -h | --help | -V | --version\n\n"
		    "Commands:\n");
		for (size_t i = 0; i < ctl_ncommands; i++)
			fprintf(f, "  %-12s%s\n", ctl_commands[i].name,
			    ctl_commands[i].summary);
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
	fprintf(f, "usage: agent-lanectl %s%s%s%s\n", c->name,
	    c->options[0].name != NULL ? " [OPTIONS]" : "",
	    c->operands[0] != '\0' ? " " : "", c->operands);
	if (c->alias != NULL)
		fprintf(f, "       agent-lanectl %s ...\n", c->alias);
	fprintf(f, "\n%c%s.\n", toupper((unsigned char)c->summary[0]),
	    c->summary + 1);
	if (c->text != NULL)
		fprintf(f, "\n%s", c->text);
	if (c->options[0].name != NULL) {
		fprintf(f, "\nOptions:\n");
		print_options(f, c->options);
	}
	fprintf(f, "\nGlobal options:\n");
	print_options(f, ctl_global_options);
	if (strcmp(c->name, "create") == 0 || strcmp(c->name, "extend") == 0 ||
	    strcmp(c->name, "exec") == 0 || strcmp(c->name, "cp") == 0)
		fprintf(f, "\n" UNITS_TEXT);
}

int
cmd_help(struct ctl *ctl, int argc, char **argv)
{
	const struct ctl_command *c;
	struct ctl_parsed p;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.noperands == 0) {
		ctl_help(stdout, NULL);
		return 0;
	}
	if (p.noperands > 1)
		return ctl_usage("usage: agent-lanectl help [COMMAND]");
	if ((c = ctl_command_find(p.operands[0])) == NULL)
		return ctl_usage("help: no such command \"%s\" (see "
		    "agent-lanectl help)", p.operands[0]);
	ctl_help(stdout, c);
	return 0;
}
