#!/usr/bin/env bash
# User namespaces (issue 18 item 6): a lane's provision script turns them
# off (user.max_user_namespaces=0) unless the lane has Docker, which the
# daemon learns from the image row it is cloned from (built with --docker,
# or on an image that was). The script itself is proved in a real kernel by
# netpolicy.sh and on real guests by tests/lima/netpolicy.sh; here, that each lane
# gets the right one. The simulator cannot install Docker (no Debian
# mirror), so the image rows are marked as a --docker build marks them,
# with the daemon stopped.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
yaml_of() { cat "$(instance_dir "$1")/lima.yaml"; }
NO='echo 0 > /proc/sys/user/max_user_namespaces'
KEPT='# User namespaces are kept: the lane has Docker.'

L=$(ctl create)
check_match "a fresh lane: no user namespaces" "$NO" "$(yaml_of "$L")"
check_match "nor Debian's switch for them" 'echo 0 > /proc/sys/kernel/unprivileged_userns_clone' "$(yaml_of "$L")"
S=$(ctl create --sudo)
check_match "a --sudo lane: none either" "$NO" "$(yaml_of "$S")"
ctl rm "$L" "$S" >/dev/null

printf '#!/bin/sh\ntrue\n' >"$T/p.sh"
ctl image build plain --provision "$T/p.sh" >/dev/null 2>&1
ctl image build dock --provision "$T/p.sh" >/dev/null 2>&1
stop_daemon
python3 - "$STATE/registry.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE images SET docker = 1 WHERE name = 'dock'")
db.commit()
PY
start_daemon || exit 1
check_eq "the Docker image says so" True \
    "$(ctl image show --json dock 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["docker"])')"
P=$(ctl create --image plain)
check_match "a clone of an image without Docker: no user namespaces" "$NO" "$(yaml_of "$P")"
D=$(ctl create --image dock)
check_eq "a clone of an image with Docker: ready" ready "$(lane_state "$D")"
check_match "keeps user namespaces" "^    $KEPT\$" "$(yaml_of "$D")"
check_nomatch "and writes neither limit" 'max_user_namespaces|unprivileged_userns_clone' "$(yaml_of "$D")"
check_match "its policy is loaded all the same" "nft -f -" "$(yaml_of "$D")"
ctl rm "$P" "$D" >/dev/null

printf '#!/bin/sh\necho more\n' >"$T/q.sh"
ctl image build child --from dock --provision "$T/q.sh" >/dev/null 2>&1
check_eq "an image built on the Docker image has Docker too" True \
    "$(ctl image show --json child 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["docker"])')"
C=$(ctl create --image child)
check_match "and its clones keep user namespaces" "^    $KEPT\$" "$(yaml_of "$C")"
ctl rm "$C" >/dev/null
finish
