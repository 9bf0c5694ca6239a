#!/usr/bin/env bash
# One rule for plain numbers (issue 18, item 17), said the same way
# everywhere it is said: agent-laned --help, agent-lanectl --help, the
# README, both man pages, the example configuration and the provider's
# README; and no old rule ("a plain number is seconds", "minutes for
# lifetimes", "a plain --memory is GiB") is left anywhere. What the rule
# does is tested where it acts: cli.sh (the CLI), daemon-small.sh (flags)
# and test_config/test_units (keys, proto/units.c).
. "$(dirname "$0")/lib.sh"

RULE='a plain number is taken only where the name says its unit'
# Text as a reader sees it: man pages rendered, words on one line.
text() {
	case $1 in
	*.1|*.8) mandoc -T ascii "$1" | col -b ;;
	*) cat "$1" ;;
	esac | tr -s ' \t\n#' ' '
}
for src in "agent-laned --help" "agent-lanectl --help"; do
	case $src in
	agent-laned*) OUT=$("$LANED" --help 2>&1) ;;
	*) OUT=$("$LANECTL" --help 2>&1) ;;
	esac
	check_match "$src states the rule" "$RULE" "$(printf '%s' "$OUT" | tr -s ' \n' ' ')"
done
for f in README.md docs/agent-lanectl.1 docs/agent-laned.8 \
    docs/agent-laned.conf.example client/sandcastle/README.md; do
	check_match "$f states the rule" "$RULE" "$(text "$REPO/$f")"
done
OLD='plain numbers? (is|are) (seconds|minutes|GiB|counted)|plain `--memory`|minutes for lifetimes|\(a plain number|, [0-9.]+ \((seconds|GiB)\)'
STALE=$(cd "$REPO" && grep -nEi "$OLD" README.md SECURITY.md docs/*.md docs/agent-lanectl.1 \
    docs/agent-laned.8 docs/agent-laned.conf.example client/sandcastle/README.md \
    client/ctl/*.c daemon/*.c proto/*.h 2>/dev/null)
check_eq "no old rule left in the docs, the help or the sources" "" "$STALE"
for c in create run exec extend image; do
	check_match "help $c states the rule" "$RULE" "$("$LANECTL" help "$c" | tr -s ' \n' ' ')"
done
exit 0
