#!/usr/bin/env bash
# README.md's shell snippets (issue 18, item 14), each run as written where
# it can run here: a fresh HOME, the build under test on PATH, the limactl
# simulator named the way the README says (AGENT_LANE_LIMACTL), and the
# files a snippet names (./my-repo) made first. A snippet that uses lanes
# gets the daemon the README's previous step would have started; one that
# starts daemons itself starts them. A snippet that cannot run here is a
# SKIP with the true reason; the newcomer's two commands, `make setup` and
# `make check`, are checked as make targets (a dry run: make check is what
# runs this suite).
. "$(dirname "$0")/lib.sh"

README=$REPO/README.md
BIN=$(cd "$(dirname "$LANECTL")" && pwd)
LANED_DIR=$(cd "$(dirname "$LANED")" && pwd)
mkdir -p "$T/snip"
# Each ```sh block to snip/N.sh, and "N LINE HEADING" lines to the index.
python3 - "$README" "$T/snip" <<'PY' >"$T/index"
import sys
lines = open(sys.argv[1]).read().split("\n")
heading, n, i = "", 0, 0
while i < len(lines):
    if lines[i].startswith("#"):
        heading = lines[i].lstrip("#").strip()
    if lines[i].strip() == "```sh":
        start = i + 1
        i += 1
        while lines[i].strip() != "```":
            i += 1
        n += 1
        open("%s/%d.sh" % (sys.argv[2], n), "w").write("\n".join(lines[start:i]) + "\n")
        print(n, start + 1, heading)
    i += 1
PY
check "README.md has shell snippets" test -s "$T/index"

# Why a snippet cannot run here, or nothing when it can.
cannot_run() {
	local f=$1
	if grep -q 'daemon install' "$f"; then
		if [ "$(uname -s)" = Darwin ]; then
			echo "it installs a LaunchAgent into this user's launchd (cli-daemon.sh checks the plist with --no-load)"
		elif systemctl --user show-environment >/dev/null 2>&1; then
			echo "it would install units into this user's systemd session (cli-daemon.sh checks them with --no-load)"
		else
			echo "needs a systemd user session: \`systemctl --user\` finds no user manager here (cli-daemon.sh checks the units with --no-load)"
		fi
	elif grep -q 'ssh://' "$f"; then
		echo "it reaches another machine over ssh (tests/regress/remote.sh does the same against a real sshd on 127.0.0.1)"
	elif grep -qE '^[^#]*brew ' "$f"; then
		echo "needs Homebrew on macOS"
	elif grep -qE 'apt-get|curl |npm install' "$f"; then
		echo "its provision script installs packages from the network (apt-get, curl, npm), and the simulator's guests have no network; tests/lima/docker.sh builds images on real Lima"
	elif grep -qE '^[^#]*(-- |^)claude ' "$f"; then
		echo "it runs Claude Code, which no lane has until an image installs it (Images, below), and the simulator's guests could not reach Anthropic's API"
	elif grep -q 'tests/lima/install.sh' "$f" && ! command -v go >/dev/null 2>&1 &&
	    ! "$REPO/tests/lima/install.sh" --check >/dev/null 2>&1; then
		echo "it builds Lima with Go, and this machine has no go"
	fi
}

# The daemons a snippet left, by process group: their state dirs, then them.
# Their VMs (the simulator's sandboxes) are deleted from those state dirs.
cleanup_group() {
	local pg=$1 home=$2 dirs d p
	dirs=$(ps -o args= -g "$pg" 2>/dev/null | awk '/agent-laned/ { for (i = 1; i < NF; i++) if ($i == "--state-dir") print $(i + 1) }')
	kill -TERM -- "-$pg" 2>/dev/null
	for _ in $(seq 1 100); do
		kill -0 -- "-$pg" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL -- "-$pg" 2>/dev/null
	for d in $dirs "$home/.agent-lane"; do
		for p in "$d"/lima/al-* "$d"/lima/ali-*; do
			[ -d "$p" ] && LIMA_HOME=$d/lima "$SIM" --tty=false delete --force \
			    "$(basename "$p")" >/dev/null 2>&1
		done
		# Only what the snippet made: its mktemp directory under /tmp.
		case $d in /tmp/al.*/state) rm -rf "$(dirname "$d")" ;; esac
	done
}

while read -r N LINE HEADING <&3; do
	f=$T/snip/$N.sh
	what="README.md:$LINE ($HEADING)"
	if grep -q 'make setup' "$f"; then
		# The two newcomer commands: both targets exist and resolve.
		OUT=$(cd "$REPO" && make -n setup check 2>&1); RC=$?
		check_eq "$what: make setup and make check are targets (make -n; make check runs this suite)" 0 "$RC"
		check_match "$what: the README says what make check's last line is" \
		    'N passed, N failed, N skipped' "$(cat "$f")"
		check_match "$what: and tests/check.sh prints it" 'passed, %d failed|passed, \$FAILED failed' \
		    "$(cat "$REPO/tests/check.sh")"
		continue
	fi
	why=$(cannot_run "$f")
	if [ -n "$why" ]; then
		ok "# SKIP $what: $why"
		continue
	fi
	H=$T/h$N
	W=$T/w$N
	mkdir -p "$H" "$W/my-repo"
	printf 'test:\n\techo tests passed | tee out.log\n' >"$W/my-repo/Makefile"
	export_env=(env -i HOME="$H" PATH="$BIN:$LANED_DIR:/usr/local/bin:/usr/bin:/bin"
	    AGENT_LANE_LIMACTL="$SIM" LIMA_SIM_BOOT_MS="$LIMA_SIM_BOOT_MS" TERM=dumb)
	DPID=
	if ! grep -q 'agent-laned' "$f"; then
		# The daemon that `daemon install` (the step before) would run.
		"${export_env[@]}" setsid "$LANED_DIR/$(basename "$LANED")" \
		    </dev/null >"$T/d$N.log" 2>&1 &
		DPID=$!
		wait_for 10 "${export_env[@]}" "$BIN/$(basename "$LANECTL")" version >/dev/null 2>&1
	fi
	# A snippet that names the checkout's own files (tests/...) runs from
	# the checkout, as the README says.
	CWD=$W
	grep -qE '(^|[[:space:];(])tests/' "$f" && CWD=$REPO
	(cd "$CWD" && exec "${export_env[@]}" setsid timeout 300 bash -e -o pipefail "$f") \
	    </dev/null >"$T/o$N.log" 2>&1 &
	SPID=$!
	wait "$SPID"
	RC=$?
	cleanup_group "$SPID" "$H"
	[ -n "$DPID" ] && cleanup_group "$DPID" "$H"
	# Under the sanitizer build, a report from a snippet's daemon fails it.
	if grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/o$N.log" \
	    "$T/d$N.log" 2>/dev/null; then
		not_ok "$what: a sanitizer report: $(grep -Eh -m1 'Sanitizer|runtime error' "$T/o$N.log" "$T/d$N.log" 2>/dev/null)"
	elif [ "$RC" -eq 0 ]; then
		ok "$what: runs as written"
	else
		not_ok "$what: exit $RC: $(tail -n 5 "$T/o$N.log" | tr '\n' '|')"
	fi
done 3<"$T/index"

# The no-daemon snippet when agent-laned exits at start (here: no limactl
# where it is named): each wait stops instead of looping forever, and the
# daemon's own words say why and what to set. Run as typed at a prompt (no
# -e), so that both waits are reached.
N=$(awk '$3 == "When" && $0 ~ /When there is no daemon/ { print $1; exit }' "$T/index")
if [ -z "$N" ]; then
	not_ok "README.md has the \"When there is no daemon\" snippet"
else
	H=$T/nolima
	mkdir -p "$H"
	START=$(date +%s)
	(cd "$H" && exec env -i HOME="$H" PATH="$BIN:$LANED_DIR:/usr/bin:/bin" \
	    AGENT_LANE_LIMACTL="$H/no-such/limactl" TERM=dumb \
	    setsid timeout 60 bash "$T/snip/$N.sh") </dev/null >"$T/nolima.log" 2>&1 &
	SPID=$!
	wait "$SPID"
	RC=$?
	cleanup_group "$SPID" "$H"
	check "no-daemon snippet with an agent-laned that exits at start: it stops (exit $RC, $(( $(date +%s) - START ))s)" \
	    test "$RC" -ne 124
	check_match "... and shows why: the daemon says where it looked and what to set" \
	    "limactl $H/no-such/limactl is not an executable file; install Lima, or name its limactl with --limactl PATH, the limactl key or \\\$AGENT_LANE_LIMACTL" \
	    "$(cat "$T/nolima.log")"
	check_match "... naming make -s lima-env" 'make -s lima-env' "$(cat "$T/nolima.log")"
fi
exit 0
