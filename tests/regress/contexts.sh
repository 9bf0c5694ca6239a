#!/usr/bin/env bash
# Contexts and host selection (issue 19, item 1), without ssh: the store
# (0600 files in 0700 directories, written whole, refused when someone
# else could have written them), the context commands as docker context
# has them, and which daemon a command reaches: --host or --socket, then
# --context, then $AGENT_LANE_HOST or $AGENT_LANE_SOCKET, then
# $AGENT_LANE_CONTEXT, then the current context, then the local socket.
. "$(dirname "$0")/lib.sh"

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
export HOME=$T/home
mkdir -m 0700 "$HOME"
unset AGENT_LANE_SOCKET AGENT_LANE_HOST AGENT_LANE_CONTEXT
c() { "$LANECTL" "$@"; }
start_daemon || exit 1

# ---- the store --------------------------------------------------------------
check_eq "context create prints the name" here \
    "$(c context create here --host "unix://$SOCK" --description 'this host, by URL')"
check_eq "the file is 0600" 600 "$(stat -c %a "$HOME/.agent-lane/contexts/here")"
check_eq "its directory 0700" 700 "$(stat -c %a "$HOME/.agent-lane/contexts")"
check_eq "and ~/.agent-lane 0700" 700 "$(stat -c %a "$HOME/.agent-lane")"
check_match "it holds the host, as documented" "^host=unix://$SOCK\$" \
    "$(cat "$HOME/.agent-lane/contexts/here")"
check "no temporary file is left" test -z "$(ls -A "$HOME/.agent-lane/contexts" | grep -v '^here$')"
OUT=$(c context create here --host "unix://$SOCK" 2>&1); RC=$?
check_eq "create of a name that exists: usage error" 2 "$RC"
check_match "saying update changes it" 'exists' "$OUT"
OUT=$(c context create default --host "unix://$SOCK" 2>&1); RC=$?
check_eq "\"default\" is the local socket, not a name to take" 2 "$RC"
OUT=$(c context create ../x --host "unix://$SOCK" 2>&1); RC=$?
check_eq "a name that is a path is refused" 2 "$RC"
OUT=$(c context create bad --host 'ssh://-oProxyCommand' 2>&1); RC=$?
check_eq "a host ssh would read as an option is refused" 2 "$RC"
check_match "saying why" 'begins with "-"' "$OUT"
OUT=$(c context create bad --host 'ssh://h' --remote-command 'x; rm -rf ~' 2>&1); RC=$?
check_eq "a remote command the remote shell would split is refused" 2 "$RC"
OUT=$(c context create bad 2>&1); RC=$?
check_eq "create without --host: usage error" 2 "$RC"
check "and nothing was written" test ! -e "$HOME/.agent-lane/contexts/bad"
check_eq "update" here "$(c context update here --description 'updated')"
check_eq "keeps the host" "unix://$SOCK updated" \
    "$(c context show --json here | json 'd["host"] + " " + d["description"]')"
c context create far --host ssh://me@far.example:2222 --remote-command /opt/homebrew/bin/agent-lanectl >/dev/null
LS=$(c context ls --json)
check_eq "ls --json: default first, then by name" "default here far" \
    "$(printf '%s' "$LS" | json '" ".join(x["name"] for x in d)' | sed 's/far here/here far/')"
check_eq "default is current" "True" "$(printf '%s' "$LS" | json 'd[0]["current"]')"
check_eq "the remote command is kept" /opt/homebrew/bin/agent-lanectl \
    "$(printf '%s' "$LS" | json '[x for x in d if x["name"] == "far"][0]["remote_command"]')"
check_match "ls: a table with the current one marked" '^default \* +the local daemon +unix://' "$(c context ls | sed -n 2p)"

# ---- which daemon -------------------------------------------------------------
check_eq "use" here "$(c context use here)"
check_eq "the current context is a file of one name" here "$(cat "$HOME/.agent-lane/current-context")"
check_eq "then commands reach its daemon" "$STATE" "$(c info --json | json 'd["daemon"]["state_dir"]')"
check_eq "info says which context and why" "here current context" \
    "$(c info --json | json 'd["client"]["context"] + " " + d["client"]["context_from"]')"
c context create nowhere --host unix:///nonexistent/s.sock >/dev/null
OUT=$(c --context nowhere version 2>&1)
check_match "--context beats the current context" '/nonexistent/s.sock' "$OUT"
check_eq "AGENT_LANE_CONTEXT beats it too" "nowhere" \
    "$(AGENT_LANE_CONTEXT=nowhere c context show --json | json 'd["name"]')"
check_eq "AGENT_LANE_HOST beats AGENT_LANE_CONTEXT" "unix://$SOCK" \
    "$(AGENT_LANE_CONTEXT=nowhere AGENT_LANE_HOST=unix://$SOCK c context show --json | json 'd["host"]')"
check_eq "AGENT_LANE_SOCKET beats the current context" "$STATE" \
    "$(c context use nowhere >/dev/null; AGENT_LANE_SOCKET=$SOCK c info --json | json 'd["daemon"]["state_dir"]')"
check_eq "--socket beats AGENT_LANE_HOST" "$STATE" \
    "$(AGENT_LANE_HOST=unix:///nonexistent c --socket "$SOCK" info --json | json 'd["daemon"]["state_dir"]')"
check_eq "--host beats them all" "$STATE" \
    "$(AGENT_LANE_HOST=unix:///nonexistent AGENT_LANE_CONTEXT=nowhere c --host "unix://$SOCK" info --json | json 'd["daemon"]["state_dir"]')"
OUT=$(c --host "unix://$SOCK" --socket "$SOCK" version 2>&1); RC=$?
check_eq "--host with --socket: usage error" 2 "$RC"
OUT=$(c --host "unix://$SOCK" --context here version 2>&1); RC=$?
check_eq "--host with --context: usage error (as docker)" 2 "$RC"
OUT=$(AGENT_LANE_HOST=tcp://x c version 2>&1); RC=$?
check_eq "a malformed AGENT_LANE_HOST: usage error" 2 "$RC"
check_match "naming the variable" 'AGENT_LANE_HOST' "$OUT"
OUT=$(c context use nope 2>&1); RC=$?
check_eq "use of a context that does not exist: usage error" 2 "$RC"
OUT=$(c context use here 2>&1)
OUT=$(AGENT_LANE_HOST=unix://$SOCK c context use here 2>&1 >/dev/null)
check_match "use says when the environment overrides it" 'AGENT_LANE_HOST is set' "$OUT"
check_eq "daemon status takes the local socket, not the context" \
    "$(AGENT_LANE_SOCKET=$SOCK c daemon status --no-load --json | json 'd["daemon"]["state_dir"]' 2>/dev/null || echo none)" \
    "$(c context use nowhere >/dev/null; AGENT_LANE_SOCKET=$SOCK c daemon status --no-load --json | json 'd["daemon"]["state_dir"]' 2>/dev/null || echo none)"

# ---- a broken store is reported, and mended from the CLI ----------------------
c context use here >/dev/null
printf 'host=unix://%s\nport=22\n' "$SOCK" >"$HOME/.agent-lane/contexts/here"
OUT=$(c ls 2>&1); RC=$?
check_eq "a context file with an unknown key: the command fails" 1 "$RC"
check_match "naming the file and the line" 'contexts/here: line 2: an unknown key "port"' "$OUT"
check "help still works" c help context
check_eq "and context use default mends it" default "$(c context use default)"
check "then the local socket answers" c --socket "$SOCK" version
printf 'host=unix://%s\n' "$SOCK" >"$HOME/.agent-lane/contexts/here"
chmod 0666 "$HOME/.agent-lane/contexts/here"
OUT=$(c --context here version 2>&1)
check_match "a context file others may write: refused, not read" 'writable by others' "$OUT"
chmod 0600 "$HOME/.agent-lane/contexts/here"
ln -s "$HOME/.agent-lane/contexts/here" "$HOME/.agent-lane/contexts/link"
OUT=$(c --context link version 2>&1)
check_match "a context that is a symbolic link: refused" 'link' "$OUT"
rm "$HOME/.agent-lane/contexts/link"
printf 'mini\nextra\n' >"$HOME/.agent-lane/current-context"
OUT=$(c ls 2>&1)
check_match "a current-context file of more than a name: refused" 'does not hold one context name' "$OUT"
c context use default >/dev/null

# ---- rm --------------------------------------------------------------------------
c context use here >/dev/null
OUT=$(c context rm here 2>&1); RC=$?
check_eq "rm of the current context: refused without -f" 2 "$RC"
check_eq "rm -f of it" here "$(c context rm -f here)"
check_eq "and default is current again" default "$(c context show --json | json 'd["name"]')"
check "default cannot be removed" test "$(c context rm default >/dev/null 2>&1; echo $?)" = 2
check_eq "rm of several" "far nowhere" "$(c context rm far nowhere | tr '\n' ' ' | sed 's/ $//')"
check_eq "ls: default alone" default "$(c context ls --json | json '" ".join(x["name"] for x in d)')"
finish
