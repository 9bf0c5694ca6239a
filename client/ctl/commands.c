/*
 * agent-lanectl's commands: the one table of them. Each entry carries its
 * handler and everything the help (help.c), the parser (options.c), the
 * completion scripts (completion.c) and the man page test
 * (tests/regress/cli-help.sh) know of the command, so that they cannot
 * disagree. Adding a command is one entry here, its handler in a file of
 * its own and its declaration in ctl.h; keep the wording in step with
 * docs/agent-lanectl.1.
 */
#include <stddef.h>

#include "ctl.h"

/* The options of the lane a command creates: create's and run's. */
#define LANE_OPTIONS_RESOURCES \
	{ 0, "cpus", "N", "virtual CPUs" }, \
	{ 0, "memory", "SIZE", "memory (4G, 0.5G, 512M)" }, \
	{ 0, "disk", "SIZE", "disk, whole GiB (30G)" }, \
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
	    "is then advisory)" }, \
	{ 0, "secret", "NAME[@HOST,...]", "a credential the lane uses but " \
	    "never holds: $NAME's value, put in by the proxy for HOST only; " \
	    "repeatable" }, \
	{ 0, "secret-header", "NAME=HEADER[,...]", "a header --secret NAME's " \
	    "value may go in besides Authorization and the API-key ones; " \
	    "repeatable" }

static const struct ctl_option create_options[] = {
	LANE_OPTIONS_RESOURCES,
	{ 'd', "detach", NULL, "keep creating if we are interrupted or die" },
	{ 0, "no-wait", NULL, "print the name once the lane is registered and "
	    "exit; it keeps creating (see wait)" },
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
	{ 0, "no-replace", NULL, "build: refuse, rather than replace, an image "
	    "of this name built from other inputs" },
	{ 0, "cpus", "N", "build: virtual CPUs of the build VM" },
	{ 0, "memory", "SIZE", "build: memory (4G, 512M)" },
	{ 0, "disk", "SIZE", "build: disk, whole GiB (30G; lanes get at least "
	    "this)" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option commit_options[] = {
	{ 0, "no-workspace", NULL, "leave the lane's workspace out of the "
	    "image" },
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

static const struct ctl_option wait_options[] = {
	{ 0, "timeout", "DURATION", "give up after DURATION (exit 124)" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option reap_options[] = {
	{ 0, "orphans", NULL, "delete orphaned VMs instead of listing them" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option context_options[] = {
	{ 0, "description", "TEXT", "create, update: what the context is" },
	{ 0, "remote-command", "PATH", "create, update: the agent-lanectl to "
	    "run on an ssh host (default: agent-lanectl on its PATH)" },
	{ 'f', "force", NULL, "rm: remove the current context too (default "
	    "becomes current)" },
	{ 0, NULL, NULL, NULL },
};

static const struct ctl_option stats_options[] = {
	{ 0, "no-stream", NULL, "print one sample and exit" },
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
	{
		.name = "create",
		.run = cmd_create,
		.operands = "",
		.summary = "create a lane, wait until ready, print its name",
		.text =
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
		    "guest root, so the rules hold (Lima 2.2 or later).\n"
		    "--secret NAME@HOST gives the lane a credential it never holds: the\n"
		    "value is our $NAME; every exec sees NAME set to a placeholder, and\n"
		    "the lane's proxy puts the value in its place only in requests to\n"
		    "HOST (HTTPS intercepted with a CA the guest trusts). The daemon\n"
		    "keeps it in memory for the lane's life; a restart destroys the lane.\n"
		    "The value goes only in credential headers: Authorization,\n"
		    "x-api-key, api-key, x-goog-api-key, private-token, x-auth-token,\n"
		    "and those --secret-header NAME=HEADER names for it.\n",
		.options = create_options,
		.json = true,
		.units = true,
	},
	{
		.name = "run",
		.run = cmd_run,
		.operands = "[--] CMD [ARG...]",
		.summary = "run one command in a new lane, then destroy it",
		.text =
		    "Creates a lane (the create options), copies each --cp in, runs\n"
		    "the command as exec does, copies each --out out and destroys the\n"
		    "lane. --cp splits at its last colon, --out at its first. Exit\n"
		    "status: the command's (128+N if killed by signal N), 125 if Agent\n"
		    "Lane failed (a copy, the create), 2 for a usage error. A failed\n"
		    "--out fails run only when the command succeeded. The lane belongs\n"
		    "to run's connection: on ^C, on a failure, or if run is killed, the\n"
		    "daemon destroys it. --keep keeps it instead.\n",
		.options = run_options,
		.operands_then_command = CTL_COMMAND_AT_ONCE,
		.units = true,
	},
	{
		.name = "ls",
		.run = cmd_ls,
		.alias = "list ps",
		.operands = "",
		.summary = "list live lanes",
		.text =
		    "The table shows NAME, ALIAS, STATE, CPUS, MEMORY, DISK, CREATED\n"
		    "(UTC), DEADLINE and LABELS. STATE is creating, ready, destroying,\n"
		    "destroyed or failed. -q prints names only, so that\n"
		    "`agent-lanectl rm $(agent-lanectl ls -q)` works.\n",
		.options = ls_options,
		.json = true,
	},
	{
		.name = "show",
		.run = cmd_show,
		.operands = "LANE",
		.summary = "show one lane",
		.text =
		    "Wherever a command takes a LANE, its al- name, its alias (create\n"
		    "--name) or a prefix of its name that only one lane has will do,\n"
		    "with or without \"al-\". A prefix that fits several lanes is an\n"
		    "AMBIGUOUS error that lists them.\n",
		.options = no_options,
		.json = true,
		.complete = CTL_COMPLETE_LANES,
	},
	{
		.name = "rm",
		.run = cmd_rm,
		.operands = "LANE... | --all",
		.summary = "destroy lanes; prints each one destroyed",
		.text =
		    "Waits until each VM is deleted and prints the lane's name. Removing\n"
		    "a lane that has already ended succeeds. --json prints the array of\n"
		    "names destroyed.\n",
		.options = rm_options,
		.json = true,
		.complete = CTL_COMPLETE_LANES,
	},
	{
		.name = "wait",
		.run = cmd_wait,
		.operands = "LANE...",
		.summary = "wait until lanes are ready; prints each name",
		.text =
		    "For lanes started with `create --no-wait`, several at once:\n"
		    "  for i in 1 2 3; do agent-lanectl create --no-wait; done > lanes\n"
		    "  agent-lanectl wait $(cat lanes)\n"
		    "Exit status: 0 once every lane is ready; 1 if one failed or ended\n"
		    "(the error says why; `logs LANE` has its boot logs); 124 if\n"
		    "--timeout ran out first, as timeout(1).\n",
		.options = wait_options,
		.complete = CTL_COMPLETE_LANES,
		.units = true,
	},
	{
		.name = "extend",
		.run = cmd_extend,
		.operands = "LANE DURATION",
		.summary = "move a lane's deadline later",
		.text =
		    "The new deadline is capped at creation plus the daemon's\n"
		    "max_lifetime; the output says so when it was.\n",
		.options = no_options,
		.json = true,
		.complete = CTL_COMPLETE_LANE,
		.units = true,
	},
	{
		.name = "exec",
		.run = cmd_exec,
		.operands = "LANE [--] CMD [ARG...]",
		.summary = "run a command in a lane; exits with its status",
		.text =
		    "The command runs directly, not through a shell, with pipes for its\n"
		    "standard streams. Exit status: the command's, 128+N if killed by\n"
		    "signal N, 125 if Agent Lane failed the exec, 2 for a usage error.\n"
		    "Options come before the command; everything from the command on is\n"
		    "the command's own. With -t the command gets a terminal in the\n"
		    "guest instead (its output all on standard output, its size kept\n"
		    "in step with ours); -t reads no input unless -i is given too, and\n"
		    "then our terminal is raw until the command ends, so that ^C and ^Z\n"
		    "reach it. TERM is passed on.\n",
		.options = exec_options,
		.operands_then_command = 1,
		.complete = CTL_COMPLETE_LANE,
		.units = true,
	},
	{
		.name = "shell",
		.run = cmd_shell,
		.operands = "LANE",
		.summary = "an interactive login shell in a lane",
		.text =
		    "As `exec -t -i LANE -- SHELL -l` with the guest user's shell\n"
		    "(bash or sh when it has none). Exits with the shell's status.\n",
		.options = shell_options,
		.complete = CTL_COMPLETE_LANE,
	},
	{
		.name = "cp",
		.run = cmd_cp,
		.operands = "SRC DST",
		.summary = "copy files into or out of a lane",
		.text =
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
		.options = cp_options,
		.complete = CTL_COMPLETE_FILES,
		.units = true,
	},
	{
		.name = "events",
		.run = cmd_events,
		.operands = "LANE",
		.summary = "show a lane's audit trail",
		.text =
		    "Lifecycle events, every exec (argv[0] and how it ended; never\n"
		    "its arguments or environment) and every copy (direction, guest\n"
		    "path, bytes). -f prints new events as they come until the lane\n"
		    "has ended; --json then prints one object a line.\n",
		.options = events_options,
		.json = true,
		.complete = CTL_COMPLETE_LANE,
	},
	{
		.name = "logs",
		.run = cmd_logs,
		.operands = "[LANE]",
		.summary = "show the daemon's log, or a lane's boot "
	    "and hostagent logs",
		.text =
		    "Without LANE: the daemon's log (its last 4 MiB at most), kept in\n"
		    "STATE_DIR/log/agent-laned.log on every host (~/.agent-lane/log/).\n"
		    "With LANE: its Lima logs, each file's last MiB under a header:\n"
		    "serial.log (the boot console), ha.stderr.log and ha.stdout.log\n"
		    "(the hostagent). A lane whose start failed keeps them, with what\n"
		    "limactl said (limactl.log), until `rm`; other lanes' logs go with\n"
		    "their VM. Control characters are shown as ? on a terminal.\n"
		    "--json prints one object a line: {\"source\": FILE, \"line\": TEXT}.\n",
		.options = logs_options,
		.json = true,
		.complete = CTL_COMPLETE_LANE,
	},
	{
		.name = "reap",
		.run = cmd_reap,
		.operands = "",
		.summary = "reconcile now: destroy lanes whose VM is gone",
		.text =
		    "Lists orphaned VMs (directories no live lane owns); --orphans\n"
		    "deletes them.\n",
		.options = reap_options,
		.json = true,
	},
	{
		.name = "image",
		.run = ctl_subcommand_run,
		.subcommands = ctl_image_subcommands,
		.operands = "build NAME | ls | show IMAGE | rm IMAGE...",
		.summary = "build, list, show and remove lane images",
		.text =
		    "IMAGE is a name, or the id image ls shows or a prefix of it, as in\n"
		    "docker. Lanes from an image get the lane template, never the\n"
		    "image's own Lima settings.\n",
		.options = image_options,
		.json = true,
		.complete = CTL_COMPLETE_WORDS,
		.units = true,
	},
	{
		.name = "commit",
		.run = cmd_commit,
		.operands = "LANE IMAGE",
		.summary = "save a ready lane's disk as an image (docker commit)",
		.text =
		    "Lanes and pool shapes can then start from IMAGE (create --image).\n"
		    "Lima clones only a stopped VM: the lane stays ready, but its VM\n"
		    "is stopped, cloned and started again, and its execs and copies\n"
		    "meanwhile fail (UNAVAILABLE, committing); its deadline runs on.\n"
		    "The copy is booted once to scrub it: the image never holds the\n"
		    "lane's CA (secrets), ssh host keys, machine id, cloud-init data,\n"
		    "logs or audit; --no-workspace drops the workspace too. Prints\n"
		    "the name; image ls and image show say where an image came from.\n"
		    "Ctrl-C stops waiting, not the commit.\n",
		.options = commit_options,
		.json = true,
		.complete = CTL_COMPLETE_LANE,
	},
	{
		.name = "daemon",
		.run = ctl_subcommand_run,
		.subcommands = ctl_daemon_subcommands,
		.operands = "install|uninstall|status|start|stop|restart",
		.summary = "manage agent-laned as a per-user service",
		.text =
		    "Without a service manager, run the daemon in the foreground:\n"
		    "  agent-laned --socket ~/.agent-lane/run/agent-laned.sock\n",
		.options = daemon_options,
		.json = true,
		.complete = CTL_COMPLETE_WORDS,
		.reach = CTL_REACH_LOCAL,
	},
	{
		.name = "info",
		.run = cmd_info,
		.operands = "",
		.summary = "show the daemon: versions, limactl, caps, pool, disk",
		.text =
		    "What the daemon this command reaches says of itself: its version,\n"
		    "uptime, host and state directory; limactl's version and the VM\n"
		    "driver of lanes; whether network policies can be enforced there,\n"
		    "and why not; its caps; the warm pool; lanes and images and the\n"
		    "disk they take on its host. Client: the context in use and why.\n",
		.options = no_options,
		.json = true,
	},
	{
		.name = "stats",
		.run = cmd_stats,
		.operands = "[LANE...]",
		.summary = "show live lanes' CPU, memory, disk, processes, uptime",
		.text =
		    "Read in each guest (its /proc and df, through the lane's exec\n"
		    "channel) every second; without LANE, every live lane. CPU % is\n"
		    "100 per busy CPU over the last second; MEM against the lane's\n"
		    "memory; DISK the workspace's file system; UPTIME how long the\n"
		    "guest's init has run. On a terminal the table is redrawn until ^C;\n"
		    "--no-stream prints one sample (a second after the call). --json:\n"
		    "one object a sample. Reading stats is not lane activity. Under the\n"
		    "limactl simulator guests share the host's kernel: CPU, memory and\n"
		    "disk are the host's there.\n",
		.options = stats_options,
		.json = true,
		.complete = CTL_COMPLETE_LANES,
	},
	{
		.name = "context",
		.run = ctl_subcommand_run,
		.subcommands = ctl_context_subcommands,
		.operands = "create|update|ls|use|rm|show [NAME]",
		.summary = "name daemons on other hosts and pick one, as docker "
		    "context",
		.text =
		    "URL is ssh://[USER@]HOST[:PORT] (the daemon of USER on HOST,\n"
		    "through the user's own ssh: `agent-lanectl system dial-stdio` runs\n"
		    "there) or unix:///PATH. Which daemon a command reaches: --host or\n"
		    "--socket, else --context, else $AGENT_LANE_HOST or\n"
		    "$AGENT_LANE_SOCKET, else $AGENT_LANE_CONTEXT, else the current\n"
		    "context, else ~/.agent-lane/run/agent-laned.sock. Contexts are\n"
		    "files in ~/.agent-lane/contexts/ (0600).\n",
		.options = context_options,
		.json = true,
		.complete = CTL_COMPLETE_WORDS,
		.reach = CTL_REACH_NONE,
	},
	{
		.name = "system",
		.run = ctl_subcommand_run,
		.subcommands = ctl_system_subcommands,
		.operands = "dial-stdio",
		.summary = "relay standard input and output to this host's "
		    "daemon (for ssh)",
		.text =
		    "What an ssh:// host runs on the far side: connects to this host's\n"
		    "socket (--socket, $AGENT_LANE_SOCKET or the default; never a\n"
		    "context) and copies bytes both ways until either side closes. A\n"
		    "client of another protocol version gets FAILED_PRECONDITION naming\n"
		    "both.\n",
		.options = no_options,
		.complete = CTL_COMPLETE_WORDS,
		.reach = CTL_REACH_LOCAL,
	},
	{
		.name = "version",
		.run = cmd_version,
		.operands = "",
		.summary = "show the client's and the daemon's versions",
		.text =
		    "agent-lanectl -V prints the client's version alone, without\n"
		    "asking the daemon.\n",
		.options = no_options,
		.json = true,
	},
	{
		.name = "help",
		.run = cmd_help,
		.operands = "[COMMAND]",
		.summary = "show help for a command",
		.options = no_options,
		.complete = CTL_COMPLETE_WORDS,
		.reach = CTL_REACH_NONE,
	},
	{
		.name = "completion",
		.run = cmd_completion,
		.operands = "bash|zsh|fish",
		.summary = "print a shell completion script",
		.text =
		    "  bash: source <(agent-lanectl completion bash)\n"
		    "  zsh:  agent-lanectl completion zsh > \"${fpath[1]}/_agent-lanectl\"\n"
		    "  fish: agent-lanectl completion fish > "
		    "~/.config/fish/completions/agent-lanectl.fish\n"
		    "`make install` installs all three.\n",
		.options = no_options,
		.complete = CTL_COMPLETE_WORDS,
		.words = "bash zsh fish",
		.reach = CTL_REACH_NONE,
	},
	{
		/* Completion's live lane names and aliases, one a line. */
		.name = "__lanes",
		.run = cmd_complete_lanes,
		.operands = "",
		.summary = "the live lanes' names and aliases, for completion",
		.options = no_options,
		.hidden = true,
	},
};
const size_t ctl_ncommands = sizeof ctl_commands / sizeof *ctl_commands;
