#!/usr/bin/env bash
# Lane-shaped instances without a live row are orphans: reported by
# `reap`, deleted only by `reap --orphans`; nothing else is ever touched.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
KEEP=$(ctl create --timeout 10m)
GONE=$(ctl create --timeout 10m)
ctl rm "$GONE" >/dev/null

# An orphan: a VM with a lane-shaped name made behind the daemon's back.
ORPHAN=al-0123456789abcdef
printf 'cpus: 1\nplain: true\n' > "$T/orphan.yaml"
sim create --name="$ORPHAN" "$T/orphan.yaml" >/dev/null 2>&1
sim start "$ORPHAN" >/dev/null 2>&1
check "the orphan VM runs" test -e "$(instance_dir "$ORPHAN")/ha.pid"
# And things that are not lanes at all: never touched.
sim create --name=notalane "$T/orphan.yaml" >/dev/null 2>&1
mkdir -p "$STATE/lima/al-XYZ" "$STATE/lima/al-0123456789abcdef0"
echo keep > "$STATE/lima/al-XYZ/file"

OUT=$(ctl reap 2>&1); RC=$?
check_eq "reap succeeds" 0 "$RC"
check_match "reap reports the orphan" "orphan $ORPHAN" "$OUT"
check "without deleting it" test -d "$(instance_dir "$ORPHAN")"
check_nomatch "a live lane is no orphan" "orphan $KEEP" "$OUT"
check_nomatch "a non-lane instance is not reported" 'notalane' "$OUT"
check_nomatch "a lane-like but invalid name is not reported" 'al-XYZ|al-0123456789abcdef0' "$OUT"
check_match "the daemon logs the orphan" "orphan instance $ORPHAN" "$(cat "$LOG")"

OUT=$(ctl reap --orphans 2>&1); RC=$?
check_eq "reap --orphans succeeds" 0 "$RC"
check_match "it reports the deletion" "orphan $ORPHAN deleted" "$OUT"
check "the orphan is gone" test ! -e "$(instance_dir "$ORPHAN")"
check "the live lane is untouched" test -d "$(instance_dir "$KEEP")"
check_eq "and still ready" ready "$(lane_state "$KEEP")"
check "the non-lane instance is untouched" test -f "$STATE/lima/notalane/lima.yaml"
check_eq "the invalid lane-like directory is untouched" keep "$(cat "$STATE/lima/al-XYZ/file")"
check "the other one too" test -d "$STATE/lima/al-0123456789abcdef0"
check_match "the deletion is in the orphan's audit trail" 'orphan-deleted' \
    "$(ctl events "$ORPHAN")"

# reap also reconciles: a lane whose VM died is destroyed.
sim stop --force "$KEEP" >/dev/null 2>&1
OUT=$(ctl reap 2>&1)
check_match "reap destroys a lane whose VM stopped" "destroyed $KEEP" "$OUT"
state_is() { [ "$(lane_state "$1")" = "$2" ]; }
check "which ends destroyed" wait_for 5 state_is "$KEEP" destroyed

sim delete --force notalane >/dev/null 2>&1
rm -rf "$STATE/lima/al-XYZ" "$STATE/lima/al-0123456789abcdef0"
