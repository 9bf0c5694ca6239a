#!/usr/bin/env bash
# One lane schema (issue 18, item 12): every command that prints a lane as
# JSON (create, show, ls, extend) prints the same keys, in the same order,
# from one list (client/ctl/lanejson.c, LANE_KEYS); that list is the man
# page's ("Lanes in JSON" in agent-lanectl(1)) and the provider's Lane type
# (client/sandcastle/src/client.ts) has a field for each key, camelCased,
# but for the keys that are another key in another form.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
keys() {
	python3 -c '
import json, sys
v = json.load(sys.stdin)
for p in sys.argv[1:]:
    v = v[int(p)] if p.isdigit() else v[p]
print(" ".join(v.keys()))' "$@"
}
CREATE=$(ctl --json create --name schema --network allow --allow example.org --label k=v)
L=$(printf '%s' "$CREATE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["name"])')
check_match "create --json made a lane" '^al-[0-9a-f]{16}$' "$L"
K_CREATE=$(printf '%s' "$CREATE" | keys)
K_SHOW=$(ctl show --json "$L" | keys)
K_LS=$(ctl ls --json --filter name=schema | keys 0)
EXT=$(ctl extend --json "$L" 1m)
K_EXTEND=$(printf '%s' "$EXT" | keys lane)
check_eq "show --json and create --json print the same keys" "$K_SHOW" "$K_CREATE"
check_eq "ls --json prints them for each lane" "$K_SHOW" "$K_LS"
check_eq "extend --json prints them for its lane" "$K_SHOW" "$K_EXTEND"
for k in network allow sudo network_policy network_note proxy_port; do
	check_match "extend --json has $k" "(^| )$k( |$)" "$K_EXTEND"
done
check_eq "extend --json: the lane's allow list and its capped flag" '["example.org"] False' \
    "$(printf '%s' "$EXT" | python3 -c 'import json,sys; e=json.load(sys.stdin); print(json.dumps(e["lane"]["allow"]), e["capped"])')"

# The man page's list: .It Li KEY in "Lanes in JSON", in order.
MAN=$(awk '/^\.Ss Lanes in JSON/ { on = 1; next } on && /^\.S[sh] / { exit }
    on && /^\.It Li / { print $3 }' "$REPO/docs/agent-lanectl.1" | tr '\n' ' ' | sed 's/ $//')
check_match "the man page has the list" 'name' "$MAN"
check_eq "the man page lists exactly these keys, in this order" "$K_SHOW" "$MAN"

# The provider's type: a camelCased field for each key that is not
# another key in another form (RFC 3339 of *_ms, GiB of MiB).
OUT=$(python3 - "$REPO/client/sandcastle/src/client.ts" "$K_SHOW" <<'PY'
import re, sys
src, keys = open(sys.argv[1]).read(), sys.argv[2].split()
m = re.search(r"export interface Lane \{(.*?)\n\}", src, re.S)
if not m:
    sys.exit("no interface Lane in " + sys.argv[1])
fields = re.findall(r"^\s+(\w+)\??:", m.group(1), re.M)
derived = {"memory_gib": "memory_mib", "created_at": "created_at_ms", "deadline": "deadline_ms"}
camel = lambda k: re.sub(r"_(\w)", lambda x: x.group(1).upper(), k)
want = [camel(k) for k in keys if k not in derived]
errs = [k for k, base in derived.items() if k in keys and base not in keys]
print("missing in Lane: %s; not a key: %s%s" % (
    sorted(set(want) - set(fields)) or "none", sorted(set(fields) - set(want)) or "none",
    "; derived without their key: %s" % errs if errs else ""))
PY
)
check_eq "the provider's Lane type has a field for every key, and no other" \
    "missing in Lane: none; not a key: none" "$OUT"
# toLane fills each field from the daemon's Lane.
TOLANE=$(python3 - "$REPO/client/sandcastle/src/client.ts" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
iface = re.search(r"export interface Lane \{(.*?)\n\}", src, re.S).group(1)
fields = re.findall(r"^\s+(\w+)\??:", iface, re.M)
body = re.search(r"function toLane\(o: any\): Lane \{(.*?)\n\}", src, re.S).group(1)
filled = re.findall(r"^\s+(\w+):", body, re.M)
print(" ".join(sorted(set(fields) - set(filled))) or "all")
PY
)
check_eq "the provider's toLane fills every field" all "$TOLANE"
ctl rm "$L" >/dev/null
exit 0
