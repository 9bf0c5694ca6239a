#!/usr/bin/env bash
# agent-laned(8)'s ENVIRONMENT lists every variable the daemon reads: the
# getenv() calls of daemon/ and proto/ (names given as literals or as a
# macro defined in a header there), each an .Ev entry of that section.
. "$(dirname "$0")/lib.sh"

MAN=$REPO/docs/agent-laned.8
# The ENVIRONMENT section's .It lines, one variable a line.
documented=$(awk '/^\.Sh ENVIRONMENT/ { on = 1; next } /^\.Sh / { on = 0 }
	on && /^\.It / { for (i = 2; i <= NF; i++) if ($i ~ /^[A-Z_][A-Z0-9_]*$/) print $i }' "$MAN")
read_names() {
	grep -ho '\(secure_\)\{0,1\}getenv("[A-Za-z_][A-Za-z0-9_]*")\|getenv([A-Z_][A-Z0-9_]*)' \
	    "$REPO"/daemon/*.c "$REPO"/proto/*.c | while read -r call; do
		call=${call#secure_}
		case $call in
		getenv\(\"*) v=${call#getenv(\"}; echo "${v%\")}" ;;
		*) m=${call#getenv(}; m=${m%)}
		   sed -n "s/^#define $m \"\\([A-Za-z0-9_]*\\)\".*/\\1/p" \
		       "$REPO"/daemon/*.h "$REPO"/proto/*.h ;;
		esac
	done | sort -u
}
names=$(read_names)
check "the daemon's getenv() calls were found" test -n "$names"
for v in $names; do
	check "agent-laned(8) ENVIRONMENT lists $v" \
	    grep -qx "$v" <<<"$documented"
done
