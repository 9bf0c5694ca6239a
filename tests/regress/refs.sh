#!/usr/bin/env bash
# Lane references (issue 18, items 3 and 7). Every call that takes a lane
# resolves the reference once, at its top, and acts on that lane only:
# here each of them (GetLane, DestroyLane, ExtendLane, Exec with and
# without a tty, CopyIn, CopyOut, GetEvents, GetLogs) is given an alias,
# an al- prefix and bare hex digits, with a decoy lane beside that a wrong
# resolution would hit. The exec of an allow lane gets its proxy
# environment whatever it was called. Then aliases against prefixes: no
# new alias may be hex digits alone, and where an older row's alias is
# also some lane's prefix, a live lane wins over an ended one and two of
# the same kind are AMBIGUOUS.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
json() {	# json LANE EXPR
	ctl show --json "$1" 2>/dev/null | python3 -c "import json,sys; l=json.load(sys.stdin); print($2)"
}
# A prefix of $1's hex digits that no other lane (of any state) shares.
unique_hex() {
	local all k p
	all=$(ctl ls -a -q | grep -vx "$1")
	for k in $(seq 1 16); do
		p=${1:3:$k}
		if ! printf '%s\n' "$all" | grep -q "^al-$p"; then
			echo "$p"
			return
		fi
	done
}
# Runs agent-lanectl at a pseudo-terminal, typing $TYPE there; prints
# what it wrote to the terminal.
in_pty() {
	TYPE=${TYPE:-} python3 - "$LANECTL" "$SOCK" "$@" <<'PY'
import os, pty, sys
lanectl, sock, args = sys.argv[1], sys.argv[2], sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "vt100"
    os.execv(lanectl, [lanectl, "--socket", sock] + args)
if os.environ["TYPE"]:
    os.write(fd, os.environ["TYPE"].encode())
out = b""
while True:
    try:
        d = os.read(fd, 4096)
    except OSError:
        break
    if not d:
        break
    out += d
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace").replace("\r", ""))
sys.exit(os.waitstatus_to_exitcode(st))
PY
}

A=$(ctl create --name web --network allow --allow example.org)
B=$(ctl create --network allow --allow example.org)	# the decoy
PA=$(json "$A" 'l["proxy_port"]')
PB=$(json "$B" 'l["proxy_port"]')
check "the allow lanes have proxies on different ports" test "$PA" -gt 0 -a "$PB" -gt 0 -a "$PA" != "$PB"
ctl exec "$A" -- sh -c 'echo "I am A" > marker'
ctl exec "$B" -- sh -c 'echo "I am B" > marker'
H=$(unique_hex "$A")
check_match "a prefix of A that B does not share" '^[0-9a-f]+$' "$H"
echo in > "$T/in.txt"

n=0
for ref in web "al-$H" "$H"; do
	n=$((n + 1))
	check_eq "GetLane $ref" "$A" "$(json "$ref" 'l["name"]')"
	check_eq "Exec $ref runs in A" "lima-$A" "$(ctl exec "$ref" -- hostname)"
	ENV=$(ctl exec "$ref" -- env)
	check_match "Exec $ref: A's proxy environment" "^HTTP_PROXY=http://192.168.5.2:$PA\$" "$ENV"
	check_match "Exec $ref: HTTPS_PROXY too" "^HTTPS_PROXY=http://192.168.5.2:$PA\$" "$ENV"
	OUT=$(in_pty exec -t "$ref" -- sh -c 'hostname; printenv HTTP_PROXY; tty')
	check_match "Exec -t $ref: in A" "lima-$A" "$OUT"
	check_match "Exec -t $ref: with A's proxy" "http://192.168.5.2:$PA" "$OUT"
	check_match "Exec -t $ref: at a terminal" '^/dev/pts/' "$OUT"
	OUT=$(TYPE=$'hostname; printenv HTTPS_PROXY; exit 7\n' in_pty shell "$ref"); RC=$?
	check_eq "shell $ref: the shell's status" 7 "$RC"
	# (The typed line is echoed too: it holds neither.)
	check_match "shell $ref: a login shell in A" "lima-$A" "$OUT"
	check_match "shell $ref: with A's proxy" "http://192.168.5.2:$PA" "$OUT"
	check "CopyIn $ref:" ctl cp "$T/in.txt" "$ref:in-$n.txt"
	check_eq "the file landed in A" in "$(ctl exec "$A" -- cat "in-$n.txt")"
	check "and not in B" ctl exec "$B" -- test ! -e "in-$n.txt"
	check "CopyOut $ref:" ctl cp "$ref:marker" "$T/out-$n.txt"
	check_eq "A's file came out" "I am A" "$(cat "$T/out-$n.txt")"
	check_eq "CopyOut $ref: as a tar stream" "I am A" \
	    "$(ctl cp "$ref:marker" - | tar -xOf - marker)"
	check_match "GetEvents $ref: A's events (B has no copy-in)" "copy-in " "$(ctl events "$ref")"
	check_match "GetLogs $ref: A's Lima logs" "/lima/$A/ha.sock" "$(ctl logs "$ref")"
	check_match "ExtendLane $ref" "^$A deadline" "$(ctl extend "$ref" 1m)"
done
check_eq "B saw no copy or extension" "" \
    "$(ctl events "$B" | grep -E 'copy-in|copy-out|extend')"

# DestroyLane: each reference destroys its lane and nothing else.
for how in alias al- hex; do
	case $how in
	alias) L=$(ctl create --name gone); ref=gone ;;
	al-) L=$(ctl create); ref=al-$(unique_hex "$L") ;;
	hex) L=$(ctl create); ref=$(unique_hex "$L") ;;
	esac
	check_eq "DestroyLane $ref prints the lane" "$L" "$(ctl rm "$ref")"
	check_eq "DestroyLane $ref: that lane is destroyed" destroyed "$(lane_state "$L")"
	check_eq "DestroyLane $ref: A and B live on" "ready ready" "$(lane_state "$A") $(lane_state "$B")"
done

# ---- Aliases against prefixes ---------------------------------------------
for bad in 0655 a cafe 0123456789abcdef; do
	OUT=$(ctl create --name "$bad" 2>&1); RC=$?
	check_eq "--name $bad (hex digits alone) is refused (the daemon's INVALID_ARGUMENT exits 2)" "2 INVALID_ARGUMENT" \
	    "$RC $(echo "$OUT" | grep -o INVALID_ARGUMENT | head -1)"
done
check_match "saying why" 'hex digits alone' "$OUT"
check "hex with more is an alias" eval 'ctl rm "$(ctl create --name 0655-x)" >/dev/null'

# Rows from before that rule may hold an all-hex alias: give one to X
# that is also the start of Y's name (the registry is edited with the
# daemon stopped).
X=$(ctl create)
Y=$(ctl create)
HY=$(unique_hex "$Y")
set_alias() {
	stop_daemon
	python3 - "$STATE/registry.db" "$1" "$2" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE lanes SET alias = ? WHERE name = ?", (sys.argv[3], sys.argv[2]))
db.commit()
PY
	start_daemon || exit 1
}
set_alias "$X" "$HY"
OUT=$(ctl show "$HY" 2>&1); RC=$?
check_eq "an alias that is also a live lane's prefix, both live: refused" 1 "$RC"
check_match "as AMBIGUOUS" AMBIGUOUS "$OUT"
check_match "naming the alias's lane" "$X \(by alias\)" "$OUT"
check_match "and the prefix's" "$Y" "$OUT"
OUT=$(ctl rm "$HY" 2>&1)
check_eq "rm of it destroys neither" "ready ready" "$(lane_state "$X") $(lane_state "$Y")"
HX=$(unique_hex "$X")
set_alias "$X" "$HX"
check_eq "an alias that is its own lane's prefix: no conflict" "$X" "$(json "$HX" 'l["name"]')"
set_alias "$X" "$HY"
ctl rm "$X" >/dev/null
check_eq "the aliased lane ended: the live lane with the prefix wins" "$Y" "$(json "$HY" 'l["name"]')"
check_eq "rm of the reference destroys the live lane" "$Y" "$(ctl rm "$HY")"
check_eq "which is destroyed" destroyed "$(lane_state "$Y")"
OUT=$(ctl show "$HY" 2>&1); RC=$?
check_eq "both ended: AMBIGUOUS again" "1" "$RC"
check_match "naming both" "$X \(by alias\), $Y" "$OUT"
Z=$(ctl create)
set_alias "$Z" "$HX"
check_eq "the aliased lane live, the prefix's ended: the alias wins" "$Z" "$(json "$HX" 'l["name"]')"
ctl rm "$A" "$B" "$Z" >/dev/null
finish
