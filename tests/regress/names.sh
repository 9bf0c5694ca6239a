#!/usr/bin/env bash
# Lane names (issue 11): create --name ALIAS (validated, unique among live
# lanes, also when two creates race), and wherever a lane is taken its
# alias or a unique prefix of its al- name works, resolved by the daemon;
# an ambiguous prefix is a typed error that lists the candidates.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
json_field() { python3 -c 'import json,sys; v=json.load(sys.stdin); print(v'"$1"')'; }

L=$(ctl create --name web --label role=front); RC=$?
check_eq "create --name exits 0" 0 "$RC"
check_match "and prints the lane's al- name (the VM keeps it)" '^al-[0-9a-f]{16}$' "$L"
check "the VM is named after the lane, not the alias" test -d "$(instance_dir "$L")"
check_eq "show ALIAS finds the lane" "$L" "$(ctl show --json web | json_field '["name"]')"
check_eq "show --json has the alias" web "$(ctl show --json "$L" | json_field '["alias"]')"
check_match "show prints it" '^alias: +web$' "$(ctl show web)"
check_eq "ls --json has the alias" web "$(ctl ls --json | json_field '[0]["alias"]')"
check_match "ls shows it" "$L +web " "$(ctl ls)"
check_eq "--filter alias=web" "$L" "$(ctl ls -q --filter alias=web)"
check_eq "--filter name= matches aliases by prefix too" "$L" "$(ctl ls -q --filter name=we)"
check_eq "--filter alias=other matches nothing" "" "$(ctl ls -q --filter alias=other)"

# ---- Every command takes the alias -----------------------------------------
check_eq "exec ALIAS" hi "$(ctl exec web -- echo hi)"
echo data > "$T/f.txt"
check "cp into ALIAS:PATH" ctl cp "$T/f.txt" web:f.txt
check "cp out of ALIAS:PATH" ctl cp web:f.txt "$T/back.txt"
check_eq "the file made the round trip" data "$(cat "$T/back.txt")"
check_eq "cp ALIAS:PATH - streams a tar" f.txt "$(ctl cp web:f.txt - | tar -tf -)"
check_match "extend ALIAS" "^$L deadline" "$(ctl extend web 1m)"
check_match "events ALIAS" 'copy-in' "$(ctl events web)"
# shell in a pty that tests/regress/term.py opens (as tty.sh does).
guest_ptys web
case $? in
0)	check_eq "shell ALIAS" "True True True 4 True" \
	    "$(python3 "$(dirname "$0")/term.py" "$LANECTL" "$SOCK" web ctrl-z)" ;;
1)	ok "# SKIP shell ALIAS: $PTY_SKIP" ;;
esac

# ---- Prefixes of the al- name ------------------------------------------------
check_eq "a unique prefix of the name" "$L" "$(ctl show --json "${L:0:6}" | json_field '["name"]')"
check_eq "the hex digits alone" "$L" "$(ctl show --json "${L:3:5}" | json_field '["name"]')"
check_eq "exec by prefix" hi "$(ctl exec "${L:0:8}" -- echo hi)"
L2=$(ctl create)
# Two lanes whose names begin with the same digit: L and L2 if they do,
# else two ended lanes (made and removed until two share a digit that
# neither live lane has; a live match would win over them).
P= C1=$L C2=$L2
if [ "${L:3:1}" = "${L2:3:1}" ]; then
	P=${L:0:4}
else
	declare -A ended=()
	for _ in $(seq 1 48); do
		E=$(ctl create) && ctl rm "$E" >/dev/null || break
		d=${E:3:1}
		if [ "$d" = "${L:3:1}" ] || [ "$d" = "${L2:3:1}" ]; then
			continue
		fi
		if [ -n "${ended[$d]:-}" ]; then
			P=al-$d C1=${ended[$d]} C2=$E
			break
		fi
		ended[$d]=$E
	done
fi
check_match "two lanes share a prefix ($P)" '^al-[0-9a-f]$' "$P"
OUT=$(ctl show "$P" 2>&1); RC=$?
check_eq "an ambiguous prefix fails" 1 "$RC"
check_match "with a typed error" 'AMBIGUOUS' "$OUT"
check_match "that lists the candidates" "$C1" "$OUT"
check_match "all of them" "$C2" "$OUT"
OUT=$(ctl rm "$P" 2>&1); RC=$?
check_eq "rm of an ambiguous prefix destroys nothing" "2 ready ready" \
    "$(ctl ls -q | wc -l) $(lane_state "$L") $(lane_state "$L2")"
OUT=$(ctl show al- 2>&1); RC=$?
check_eq "\"al-\" alone is no prefix: a usage error (issue 31)" "2 INVALID_ARGUMENT" \
    "$RC $(printf '%s\n' "$OUT" | grep -o INVALID_ARGUMENT | head -1)"
OUT=$(ctl show nosuch 2>&1); RC=$?
check_eq "an unknown alias fails" 1 "$RC"
check_match "as NOT_FOUND" 'NOT_FOUND' "$OUT"
OUT=$(ctl show al-ffffffffffffff 2>&1)
check_match "an unknown prefix is NOT_FOUND" 'NOT_FOUND' "$OUT"

# ---- Validation and uniqueness ----------------------------------------------
for bad in Web al-1234 "a b" .x -- "$(printf 'a%.0s' $(seq 64))" "we/b"; do
	OUT=$(ctl create --name "$bad" 2>&1); RC=$?
	check_eq "--name '$bad' is refused by the daemon, exit 2 as a usage error" "2 INVALID_ARGUMENT" "$RC $(echo "$OUT" | grep -o INVALID_ARGUMENT | head -1)"
done
N0=$(ctl ls --all -q | wc -l)
OUT=$(ctl create --name '' 2>&1); RC=$?
check_eq "--name '' is refused (it would make an unnamed lane)" "2" "$RC"
check_match "saying an alias is needed" '--name needs an alias' "$OUT"
check_eq "and makes no lane" "$N0" "$(ctl ls --all -q | wc -l)"
OUT=$(ctl create --name web 2>&1); RC=$?
check_eq "a live lane's alias cannot be taken again" 1 "$RC"
check_match "ALREADY_EXISTS, naming the lane that has it" "ALREADY_EXISTS.*$L" "$OUT"
check_eq "and no lane was made for it" 2 "$(ctl ls -q | wc -l)"

# Two creates race for one alias: the registry lets exactly one win.
PIDS=
for i in 1 2 3 4; do
	( ctl create --name race >"$T/race.$i.out" 2>&1; echo $? >"$T/race.$i.rc" ) &
	PIDS="$PIDS $!"
done
wait $PIDS	# not the daemon
check_eq "racing creates: exactly one gets the alias" 1 "$(grep -l '^0$' "$T"/race.*.rc | wc -l)"
check_eq "the others are told it is taken" 3 "$(grep -l ALREADY_EXISTS "$T"/race.*.out | wc -l)"
check_eq "one live lane has it" 1 "$(ctl ls -q --filter alias=race | wc -l)"
ctl rm race >/dev/null

# ---- An alias outlives a restart and is freed by rm -------------------------
stop_daemon
start_daemon || exit 1
check_eq "the alias survives a restart" "$L" "$(ctl show --json web | json_field '["name"]')"
check_eq "rm ALIAS prints the al- name" "$L" "$(ctl rm web)"
check_eq "show ALIAS of an ended lane shows it" destroyed "$(ctl show --json web | json_field '["state"]')"
L3=$(ctl create --name web)
check_eq "the alias of an ended lane can be taken again" "$L3" \
    "$(ctl show --json web | json_field '["name"]')"

# ---- Completion offers aliases --------------------------------------------
check_match "completion's lane list has names and aliases" "^web$" "$(ctl __lanes)"
check_match "and the al- names" "^$L3$" "$(ctl __lanes)"
ctl rm "$L2" "$L3" >/dev/null
finish
