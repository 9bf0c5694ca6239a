#!/usr/bin/env bash
# A connection from another uid is refused by the kernel-reported peer uid,
# even when file permissions would let it through.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "ok 1 - # SKIP needs root to switch to a throwaway user"
	exit 0
fi
USER_NAME=alpeer$$
# As root a throwaway user can always be made: failing to is a failure.
if ! ERR=$(useradd -M -N -s /usr/sbin/nologin "$USER_NAME" 2>&1); then
	not_ok "useradd $USER_NAME (as root): $ERR"
	exit 1
fi
trap 'userdel "$USER_NAME" 2>/dev/null; finish' EXIT
if ! OTHER=$(id -u "$USER_NAME") || [ "$OTHER" -eq 0 ]; then
	not_ok "the throwaway user $USER_NAME has a uid of its own (got '$OTHER')"
	exit 1
fi

start_daemon || exit 1
# Invite trouble, like OpenSSH's agent-getpeereid test: open the directory
# and the socket to everyone, so only the peer check stands in the way.
chmod 0755 "$T" "$T/run"
chmod 0777 "$SOCK"
OUT=$(setpriv --reuid="$OTHER" --regid=65534 --clear-groups \
    "$LANECTL" --socket "$SOCK" version 2>&1); RC=$?
check "another uid's client fails" test "$RC" -ne 0
check_match "its connection was closed" 'CONNECT|closed' "$OUT"
check_match "the daemon logged the refusal with both uids" \
    "peer uid $OTHER is not the daemon's uid 0" "$(cat "$LOG")"
OUT=$(setpriv --reuid="$OTHER" --regid=65534 --clear-groups \
    "$LANECTL" --socket "$SOCK" ls 2>&1); RC=$?
check "another uid cannot list lanes" test "$RC" -ne 0
check "the owner is still served" ctl ls
