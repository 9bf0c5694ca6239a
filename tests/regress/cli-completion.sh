#!/usr/bin/env bash
# agent-lanectl completion bash|zsh|fish (issue 11): commands, options,
# daemon verbs and live lane names (through `ls -q`, with the --socket on
# the line). bash and fish are driven for real; zsh is syntax-checked.
. "$(dirname "$0")/lib.sh"

start_daemon || exit 1
L=$(ctl create --label run=completion)

ctl completion bash > "$T/c.bash"; check_eq "completion bash exits 0" 0 "$?"
ctl completion zsh > "$T/c.zsh"; check_eq "completion zsh exits 0" 0 "$?"
ctl completion fish > "$T/c.fish"; check_eq "completion fish exits 0" 0 "$?"
ctl completion tcsh >/dev/null 2>&1; check_eq "another shell exits 2" 2 "$?"

# comp WORD...: what bash completes for the last word.
comp() {
	bash -c '
		. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_agent_lanectl
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"
	' _ "$T/c.bash" "$@"
}
check "bash: the script parses" bash -n "$T/c.bash"
check_match "bash: commands" '(^| )create( |$).*( |^)exec( |$)' "$(comp "$LANECTL" "")"
check_eq "bash: a command prefix" "daemon" "$(comp "$LANECTL" da)"
check_eq "bash: options of a command" "--filter" "$(comp "$LANECTL" ls --fil)"
check_match "bash: short options too" '(^| )-q( |$)' "$(comp "$LANECTL" ls -)"
check_eq "bash: lane names, live" "$L" "$(comp "$LANECTL" --socket "$SOCK" show al-)"
check_eq "bash: only the first operand of extend is a lane" "" "$(comp "$LANECTL" --socket "$SOCK" extend "$L" al-)"
check_eq "bash: exec's lane" "$L" "$(comp "$LANECTL" --socket "$SOCK" exec -w /tmp al-)"
check_eq "bash: commit's lane" "$L" "$(comp "$LANECTL" --socket "$SOCK" commit al-)"
check_match "bash: cp offers LANE:" "$L:" "$(comp "$LANECTL" --socket "$SOCK" cp al-)"
check_eq "bash: daemon verbs" "start status stop" "$(comp "$LANECTL" daemon s)"
check_eq "bash: help takes commands" "commit completion context cp create" "$(comp "$LANECTL" help c)"
check_eq "bash: completion takes shells" "bash" "$(comp "$LANECTL" completion b)"
check_eq "bash: no lanes from a dead socket" "" "$(comp "$LANECTL" --socket "$T/none" rm al-)"

if command -v zsh >/dev/null 2>&1; then
	check "zsh: the script parses" zsh -n "$T/c.zsh"
	check_match "zsh: it is a #compdef function" '^#compdef agent-lanectl' "$(head -1 "$T/c.zsh")"
else
	not_ok "zsh is not installed (tests/install-deps.sh installs it)"
fi
if command -v fish >/dev/null 2>&1; then
	# fish_comp LINE: fish's completions for LINE (agent-lanectl on PATH).
	fish_comp() {
		PATH=$(dirname "$LANECTL"):$PATH HOME=$T fish --no-config -c \
		    "source $T/c.fish; complete -C '$1'" 2>&1 | cut -f1 | sort | tr '\n' ' ' | sed 's/ $//'
	}
	check "fish: the script parses" fish --no-config -n "$T/c.fish"
	check_match "fish: commands" '(^| )create( |$)' "$(fish_comp 'agent-lanectl cr')"
	check_match "fish: options" '--filter' "$(fish_comp 'agent-lanectl ls --fi')"
	check_eq "fish: lane names, live" "$L" "$(fish_comp "agent-lanectl --socket $SOCK show al-")"
	check_eq "fish: daemon verbs" "start status stop" "$(fish_comp 'agent-lanectl daemon s')"
else
	not_ok "fish is not installed (tests/install-deps.sh installs it)"
fi
ctl rm "$L" >/dev/null
